//! TEST DOUBLE: a data plane whose wire side is scripted through a Unix socket.
//!
//! Enabled only by the explicit settings `Dev:SimulatedDataPlane: true` (the daemon logs a
//! warning). It exists so that the integration tests can drive the runtime's state machine,
//! delivery rule and persistence through the real binary before the PROFINET stack exists:
//!
//! * the probe and the socket binding are REAL ([`crate::dataplane::open_raw_socket`]), so the
//!   ConfigError path and the link monitor behave exactly as with [`RawSocketPlane`];
//! * a "cyclic" thread emulates the stack's use of the process image: while the scripted
//!   connection is up, the link is up and it is not paused, it copies the Q area every 1 ms with
//!   `cyclic_read_output` and marks it sent (`cyclic_mark_output_sent`); no frame is sent;
//! * the control socket (`Dev:SimControlSocket`) takes one JSON object per line and answers one
//!   line: a serialised [`StackEvent`] (`{"event":"connected","controller":"plc"}`) is forwarded
//!   to the runtime; `{"cmd":"writeInput","dataHex":"..","iops":128,"iocs":128}` stores I data;
//!   `{"cmd":"pause"}` / `{"cmd":"resume"}` stop/resume the cyclic copy; `{"cmd":"commands"}`
//!   returns the [`StackCommand`]s received (Debug text).
//!
//! [`RawSocketPlane`]: crate::dataplane::RawSocketPlane

use std::io::{BufRead, BufReader, Write};
use std::os::fd::OwnedFd;
use std::os::unix::net::UnixListener;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::{json, Value};

use crate::dataplane::{
    error_code, open_raw_socket, read_link_state, spawn_link_monitor, DataPlane, EventSink,
    NicInfo, PlaneStatus, ProbeError, SharedCounters, StackCommand, StackConfig, StackEvent,
    StartError, StartFailure, StartMode,
};
use crate::image::{ProcessImage, IOXS_BAD, IOXS_GOOD};

#[derive(Default)]
struct Shared {
    connected: AtomicBool,
    paused: AtomicBool,
    running: AtomicBool,
    commands: Mutex<Vec<String>>,
    events: Mutex<Option<EventSink>>,
    image: Mutex<Option<Arc<ProcessImage>>>,
    counters: Arc<SharedCounters>,
}

type Loop = (Arc<AtomicBool>, JoinHandle<()>);

#[derive(Default)]
struct Inner {
    nic: Option<String>,
    socket: Option<OwnedFd>,
    monitor: Option<Loop>,
    cyclic: Option<Loop>,
}

/// The simulated data plane (see module docs). TEST ONLY.
pub struct SimPlane {
    sh: Arc<Shared>,
    inner: Mutex<Inner>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl SimPlane {
    /// Create; when `control` is given, listen on that Unix socket path.
    pub fn new(control: Option<PathBuf>) -> SimPlane {
        let sh = Arc::new(Shared::default());
        if let Some(path) = control {
            let _ = std::fs::remove_file(&path);
            match UnixListener::bind(&path) {
                Ok(l) => {
                    let sh2 = sh.clone();
                    let _ = std::thread::Builder::new()
                        .name("sim-control".into())
                        .spawn(move || control_loop(l, sh2));
                }
                Err(e) => tracing::error!("sim control socket {}: {e}", path.display()),
            }
        }
        SimPlane {
            sh,
            inner: Mutex::new(Inner::default()),
        }
    }

    fn stop_loops(&self, inner: &mut Inner) {
        for l in [inner.monitor.take(), inner.cyclic.take()]
            .into_iter()
            .flatten()
        {
            l.0.store(true, Ordering::Release);
            l.1.thread().unpark();
            let _ = l.1.join();
        }
        self.sh.running.store(false, Ordering::Release);
        self.sh.connected.store(false, Ordering::Release);
        *lock(&self.sh.events) = None;
    }
}

fn control_loop(l: UnixListener, sh: Arc<Shared>) {
    for stream in l.incoming().flatten() {
        let sh = sh.clone();
        let _ = std::thread::Builder::new()
            .name("sim-conn".into())
            .spawn(move || {
                let Ok(w) = stream.try_clone() else { return };
                let mut w = w;
                for line in BufReader::new(stream).lines() {
                    let Ok(line) = line else { break };
                    let reply = handle_line(&line, &sh);
                    if writeln!(w, "{reply}").is_err() {
                        break;
                    }
                }
            });
    }
}

fn handle_line(line: &str, sh: &Shared) -> Value {
    let v: Value = match serde_json::from_str(line) {
        Ok(v) => v,
        Err(e) => return json!({"ok": false, "error": e.to_string()}),
    };
    if let Some(cmd) = v.get("cmd").and_then(|c| c.as_str()) {
        return match cmd {
            "commands" => json!({"ok": true, "commands": *lock(&sh.commands)}),
            "pause" => {
                sh.paused.store(true, Ordering::Release);
                json!({"ok": true})
            }
            "resume" => {
                sh.paused.store(false, Ordering::Release);
                json!({"ok": true})
            }
            "writeInput" => {
                let data = v
                    .get("dataHex")
                    .and_then(|d| d.as_str())
                    .and_then(crate::util::parse_hex);
                let iops = v.get("iops").and_then(|x| x.as_u64()).unwrap_or(0x80) as u8;
                let iocs = v.get("iocs").and_then(|x| x.as_u64()).unwrap_or(0x80) as u8;
                match (data, lock(&sh.image).clone()) {
                    (Some(d), Some(img)) => {
                        img.cyclic_write_input(&d, iops, iocs);
                        json!({"ok": true})
                    }
                    _ => json!({"ok": false, "error": "bad dataHex or not started"}),
                }
            }
            _ => json!({"ok": false, "error": "unknown cmd"}),
        };
    }
    let ev: StackEvent = match serde_json::from_value(v) {
        Ok(e) => e,
        Err(e) => return json!({"ok": false, "error": e.to_string()}),
    };
    let Some(sink) = lock(&sh.events).clone() else {
        return json!({"ok": false, "error": "data plane not started"});
    };
    match &ev {
        StackEvent::Connected { .. } => sh.connected.store(true, Ordering::Release),
        StackEvent::Aborted { .. } | StackEvent::Fault { .. } => {
            sh.connected.store(false, Ordering::Release);
            if let Some(img) = lock(&sh.image).as_ref() {
                img.invalidate_input();
                img.set_device_status(IOXS_BAD, IOXS_BAD);
            }
        }
        _ => {}
    }
    // As the stack does: remanent data is stored before the request is answered.
    if let Err(e) = sink.commit(&ev) {
        return json!({"ok": false, "error": e});
    }
    json!({"ok": sink.send(ev)})
}

fn spawn_cyclic(sh: Arc<Shared>, nic: String, image: Arc<ProcessImage>) -> std::io::Result<Loop> {
    let stop = Arc::new(AtomicBool::new(false));
    let stop2 = stop.clone();
    let h = std::thread::Builder::new()
        .name("sim-cyclic".into())
        .spawn(move || {
            let mut scratch = [0u8; crate::image::MAX_AREA_LEN];
            let mut link_up = false;
            let mut n: u64 = 0;
            while !stop2.load(Ordering::Acquire) {
                if n % 10 == 0 {
                    link_up = read_link_state(&nic).up;
                }
                n += 1;
                let c = &sh.counters;
                c.stack_cycles.fetch_add(1, Ordering::Relaxed);
                if sh.connected.load(Ordering::Acquire)
                    && link_up
                    && !sh.paused.load(Ordering::Acquire)
                {
                    image.set_device_status(IOXS_GOOD, IOXS_GOOD);
                    let len = image.output_len();
                    if let Ok(gen) = image.cyclic_read_output(&mut scratch[..len]) {
                        image.cyclic_mark_output_sent(gen);
                    }
                    c.cycle_counter.fetch_add(1, Ordering::Relaxed);
                    c.tx_rt_frames.fetch_add(1, Ordering::Relaxed);
                    c.tx_frames.fetch_add(1, Ordering::Relaxed);
                }
                std::thread::park_timeout(Duration::from_millis(1));
            }
        })?;
    Ok((stop, h))
}

impl DataPlane for SimPlane {
    fn kind(&self) -> &'static str {
        "simulated (test only)"
    }

    fn probe(&self, nic: &str) -> Result<NicInfo, ProbeError> {
        open_raw_socket(nic).map(|(_fd, info)| info)
    }

    fn start(
        &self,
        cfg: &StackConfig,
        image: Arc<ProcessImage>,
        events: EventSink,
        mode: StartMode,
    ) -> Result<(), StartError> {
        let mut inner = lock(&self.inner);
        self.stop_loops(&mut inner);
        let reuse = mode == StartMode::Reuse && inner.socket.is_some();
        if !reuse {
            let (fd, _) = open_raw_socket(&cfg.nic).map_err(|e| StartError {
                failure: StartFailure::DataPlaneOpen,
                code: e.os_error,
                message: e.to_string(),
            })?;
            inner.socket = Some(fd);
            inner.nic = Some(cfg.nic.clone());
        }
        lock(&self.sh.commands).push(format!("Start({mode:?})"));
        *lock(&self.sh.events) = Some(events.clone());
        *lock(&self.sh.image) = Some(image.clone());
        let err = |e: std::io::Error| StartError {
            failure: StartFailure::ControlPlane,
            code: error_code::ERR_THREAD,
            message: e.to_string(),
        };
        inner.monitor = Some(
            spawn_link_monitor(
                cfg.nic.clone(),
                events,
                Duration::from_millis(50),
                self.sh.counters.clone(),
            )
            .map_err(err)?,
        );
        inner.cyclic = Some(spawn_cyclic(self.sh.clone(), cfg.nic.clone(), image).map_err(err)?);
        self.sh.running.store(true, Ordering::Release);
        Ok(())
    }

    fn stop(&self) {
        let mut inner = lock(&self.inner);
        self.stop_loops(&mut inner);
        lock(&self.sh.commands).push("Stop".into());
    }

    fn teardown(&self) {
        let mut inner = lock(&self.inner);
        self.stop_loops(&mut inner);
        inner.socket = None;
        inner.nic = None;
        lock(&self.sh.commands).push("Teardown".into());
    }

    fn status(&self) -> PlaneStatus {
        let inner = lock(&self.inner);
        let link = inner
            .nic
            .as_deref()
            .map(read_link_state)
            .unwrap_or_default();
        let running = self.sh.running.load(Ordering::Acquire);
        PlaneStatus {
            running,
            port_present: link.present,
            link_up: link.up,
            connected: self.sh.connected.load(Ordering::Acquire),
            ar_cycle_ns: 0,
            image_attached: running,
            message: "simulated data plane (test only)".into(),
            counters: self.sh.counters.snapshot(),
        }
    }

    fn command(&self, cmd: StackCommand) {
        lock(&self.sh.commands).push(format!("{cmd:?}"));
    }
}

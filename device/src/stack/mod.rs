//! The PROFINET IO device on the wire: [`ProfinetPlane`] implements
//! [`crate::dataplane::DataPlane`].
//!
//! Ownership of the files in this directory:
//! * stack-core: `mod.rs` (the plane, receive dispatch), `cm.rs` (DCE/RPC connection
//!   management on UDP 34964), `ar.rs` (AR state, connect planning), `cyclic.rs` (the
//!   real-time thread), `alarms.rs` (RTA alarm transport), `records.rs` (record read/write).
//! * stack-l2: `socket.rs` (raw socket wrapper), `link.rs` (link monitor), `dcp.rs`,
//!   `lldp.rs`, `snmp.rs`, `llmnr.rs` (and `crate::gsdml`).
//!
//! # Threads of a running plane
//! * `pn-rx`: one raw-socket receive thread. Dispatches by EtherType / FrameID: cyclic
//!   frames (0x8000..=0xFBFF) to the consumer ([`cyclic::consume_frame`], the single writer of
//!   the I area), RTA alarm frames (0xFC01 / 0xFE01) to the connection manager, DCP and LLDP
//!   to the stack-l2 handlers.
//! * `pn-cyclic`: the real-time provider thread ([`cyclic`]).
//! * `pn-cm`: the connection manager ([`cm`]): a std thread owning the UDP socket on port
//!   34964, the AR state, the alarm transports and the records. A plain thread instead of a
//!   tokio task because everything it does is short, blocking-free work on one socket plus
//!   timers, it must keep running while the runtime's executor is busy, and it keeps the
//!   stack independent of the daemon's async runtime.
//! * `pn-link-<nic>`: the link monitor (stack-l2).

pub mod alarms;
pub mod ar;
pub mod cm;
pub mod cyclic;
pub mod dcp;
pub mod l2;
pub mod link;
pub mod lldp;
pub mod llmnr;
pub mod records;
pub mod snmp;
pub mod socket;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use pn_protocol::wire::ethernet::{ethertype, EthernetRepr};

use crate::dataplane::{
    error_code, open_raw_socket, read_link_state, DataPlane, EventSink, NicInfo, PlaneStatus,
    ProbeError, SharedCounters, StackCommand, StackConfig, StartError, StartFailure, StartMode,
};
use crate::image::ProcessImage;

/// The raw link used by the stack threads (stack-l2's [`socket::PnSocket`]).
pub struct RawLink {
    sock: socket::PnSocket,
}

impl RawLink {
    pub fn open(nic: &str) -> Result<RawLink, ProbeError> {
        Ok(RawLink {
            sock: socket::PnSocket::open(nic)?,
        })
    }
    /// Send one complete frame; `false` on error (counted by the caller).
    pub fn send(&self, frame: &[u8]) -> bool {
        self.sock.send(frame).is_ok()
    }
    pub fn recv(&self, buf: &mut [u8], timeout: Duration) -> Option<usize> {
        self.sock.recv(buf, Some(timeout)).ok().flatten()
    }
    pub fn mac(&self) -> [u8; 6] {
        self.sock.mac()
    }
    pub fn ifindex(&self) -> u32 {
        self.sock.ifindex()
    }
}

/// Messages to the connection-manager thread.
#[derive(Debug)]
pub enum CtlMsg {
    /// An RTA frame (FrameID 0xFC01/0xFE01) from `src`; `pdu` = bytes after the FrameID.
    Alarm {
        frame_id: u16,
        src: [u8; 6],
        pdu: Vec<u8>,
    },
    /// Link state changed.
    Link(bool),
    /// A command from the runtime.
    Cmd(StackCommand),
    /// Abort the IO AR (e.g. DCP station name changed / reset to factory while connected),
    /// with the RTA abort reason code sent in the ERR-RTA-PDU.
    AbortAr { reason: String, rta_code: u8 },
}

/// State visible to [`DataPlane::status`] without locking the threads.
#[derive(Default)]
pub struct PlaneFlags {
    pub connected: AtomicBool,
    pub link_up: AtomicBool,
    pub running: AtomicBool,
    pub message: Mutex<String>,
}

struct Running {
    stop: Arc<AtomicBool>,
    cyclic: Arc<cyclic::CyclicShared>,
    threads: Vec<JoinHandle<()>>,
    ctl_tx: mpsc::Sender<CtlMsg>,
    monitor: Option<link::LinkMonitor>,
    /// stack-l2's DCP/LLDP/SNMP/LLMNR services.
    l2: Option<Arc<l2::L2Services>>,
}

struct Inner {
    running: Option<Running>,
    link: Option<Arc<RawLink>>,
    nic: Option<String>,
    high_res: bool,
}

/// The PROFINET IO device data plane.
pub struct ProfinetPlane {
    inner: Mutex<Inner>,
    counters: Arc<SharedCounters>,
    flags: Arc<PlaneFlags>,
}

impl Default for ProfinetPlane {
    fn default() -> Self {
        Self::new()
    }
}

impl ProfinetPlane {
    pub fn new() -> Self {
        ProfinetPlane {
            inner: Mutex::new(Inner {
                running: None,
                link: None,
                nic: None,
                high_res: true,
            }),
            counters: Arc::new(SharedCounters::default()),
            flags: Arc::new(PlaneFlags::default()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn stop_running(inner: &mut Inner, flags: &PlaneFlags) {
        if let Some(mut r) = inner.running.take() {
            // Ask the CM to release the ARs first (it sends ERR-RTA / stops the provider).
            r.stop.store(true, Ordering::Release);
            r.cyclic.request_stop();
            if let Some(m) = r.monitor.as_mut() {
                m.stop();
            }
            drop(r.ctl_tx);
            for t in r.threads {
                let _ = t.join();
            }
        }
        flags.connected.store(false, Ordering::Release);
        flags.running.store(false, Ordering::Release);
    }
}

fn rx_loop(
    link: Arc<RawLink>,
    stop: Arc<AtomicBool>,
    cyc: Arc<cyclic::CyclicShared>,
    image: Arc<ProcessImage>,
    counters: Arc<SharedCounters>,
    ctl: mpsc::Sender<CtlMsg>,
    l2: Option<Arc<l2::L2Services>>,
) {
    let mut buf = vec![0u8; 1600];
    // The consumer feeds the data-hold watchdog of the real-time thread: it must not starve
    // behind ordinary threads, so it runs SCHED_FIFO too (below the provider) where permitted.
    cyclic::try_sched_fifo_prio(50);
    while !stop.load(Ordering::Acquire) {
        let Some(n) = link.recv(&mut buf, Duration::from_millis(50)) else {
            continue;
        };
        let frame = &buf[..n];
        let Ok((eth, payload)) = EthernetRepr::parse_frame(frame) else {
            counters.invalid_frames.fetch_add(1, Ordering::Relaxed);
            continue;
        };
        if eth.ethertype != ethertype::PROFINET {
            // LLDP: stack-l2's agent.
            if eth.ethertype == ethertype::LLDP {
                counters.rx_frames.fetch_add(1, Ordering::Relaxed);
                counters.rx_control_frames.fetch_add(1, Ordering::Relaxed);
                if let Some(l2) = &l2 {
                    l2.on_frame(frame);
                }
            }
            continue;
        }
        counters.rx_frames.fetch_add(1, Ordering::Relaxed);
        let Ok(fid) = pn_protocol::wire::rt::frame_id(payload) else {
            counters.invalid_frames.fetch_add(1, Ordering::Relaxed);
            continue;
        };
        match fid.0 {
            0x8000..=0xFBFF => {
                counters.rx_rt_frames.fetch_add(1, Ordering::Relaxed);
                counters.stack_frames_rx.fetch_add(1, Ordering::Relaxed);
                match cyclic::consume_frame(&cyc, &image, eth.src.0, payload) {
                    cyclic::Consumed::Ok | cyclic::Consumed::Ignored => {}
                    cyclic::Consumed::NotOurs => {
                        counters.dropped_frames.fetch_add(1, Ordering::Relaxed);
                    }
                    cyclic::Consumed::Invalid => {
                        counters.invalid_frames.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
            0xFC01 | 0xFE01 => {
                counters.rx_control_frames.fetch_add(1, Ordering::Relaxed);
                let _ = ctl.send(CtlMsg::Alarm {
                    frame_id: fid.0,
                    src: eth.src.0,
                    pdu: payload[2..].to_vec(),
                });
            }
            0xFEFC..=0xFEFF => {
                // DCP: stack-l2's responder.
                counters.rx_control_frames.fetch_add(1, Ordering::Relaxed);
                if let Some(l2) = &l2 {
                    l2.on_frame(frame);
                }
            }
            _ => {
                counters.dropped_frames.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

impl DataPlane for ProfinetPlane {
    fn kind(&self) -> &'static str {
        "pn-stack"
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
        let mut inner = self.lock();
        Self::stop_running(&mut inner, &self.flags);
        let reuse = mode == StartMode::Reuse
            && inner.link.is_some()
            && inner.nic.as_deref() == Some(cfg.nic.as_str());
        if !reuse {
            inner.link = None;
            let link = RawLink::open(&cfg.nic).map_err(|e| StartError {
                failure: StartFailure::DataPlaneOpen,
                code: e.os_error,
                message: e.to_string(),
            })?;
            inner.link = Some(Arc::new(link));
            inner.nic = Some(cfg.nic.clone());
        }
        let link = inner.link.clone().ok_or(StartError {
            failure: StartFailure::ControlPlane,
            code: error_code::ERR_INIT,
            message: "no link".into(),
        })?;
        let thread_err = |e: std::io::Error| StartError {
            failure: if reuse {
                StartFailure::ReuseLoop
            } else {
                StartFailure::ControlPlane
            },
            code: if reuse { 0 } else { error_code::ERR_THREAD },
            message: format!("cannot start a stack thread: {e}"),
        };
        let high_res = cfg.high_resolution_timer;
        inner.high_res = high_res;
        let stop = Arc::new(AtomicBool::new(false));
        let base = u64::from(cfg.send_clock_factor.max(1)) * cyclic::CLOCK_UNIT_NS;
        let cyc = Arc::new(cyclic::CyclicShared::new(base, high_res));
        let (ctl_tx, ctl_rx) = mpsc::channel();
        let mut threads = Vec::new();

        // L2 services (stack-l2): DCP, LLDP, DCP IP application, SNMP, LLMNR. DCP requests
        // for an AR abort (name changed / reset while connected) go to the CM as
        // `CtlMsg::AbortAr` with the matching RTA abort reason.
        let l2 = {
            let mut l2cfg = l2::L2Config::from_stack_config(cfg, link.mac(), link.ifindex());
            let flags = self.flags.clone();
            l2cfg.ar_active = Some(Arc::new(move || flags.connected.load(Ordering::Acquire)));
            let sl = link.clone();
            let counters = self.counters.clone();
            let send: l2::SendFn = Arc::new(move |f: &[u8]| {
                let ok = sl.send(f);
                if ok {
                    counters.tx_control_frames.fetch_add(1, Ordering::Relaxed);
                }
                ok
            });
            let tx = Mutex::new(ctl_tx.clone());
            let on_abort: l2::AbortFn = Arc::new(move |reason| {
                use pn_protocol::wire::rta::abort_reason;
                let rta_code = if reason.contains("name") {
                    abort_reason::DCP_STATION_NAME_CHANGED
                } else {
                    abort_reason::DCP_RESET_TO_FACTORY
                };
                if let Ok(tx) = tx.lock() {
                    let _ = tx.send(CtlMsg::AbortAr {
                        reason: reason.to_string(),
                        rta_code,
                    });
                }
            });
            Arc::new(
                l2::L2Services::start(l2cfg, link::query(&cfg.nic), send, events.clone(), on_abort)
                    .map_err(thread_err)?,
            )
        };

        // Link monitor (stack-l2) -> CM and L2 services.
        let up0 = read_link_state(&cfg.nic).up;
        self.flags.link_up.store(up0, Ordering::Release);
        let monitor = {
            let tx = ctl_tx.clone();
            let flags = self.flags.clone();
            let l2 = l2.clone();
            link::LinkMonitor::spawn(cfg.nic.clone(), link::DEFAULT_POLL / 2, move |_, now| {
                flags.link_up.store(now.up, Ordering::Release);
                let _ = tx.send(CtlMsg::Link(now.up));
                l2.on_link(now.clone());
            })
            .map_err(thread_err)?
        };

        let cm_ctx = cm::CmContext {
            cfg: cfg.clone(),
            image: image.clone(),
            events,
            link: link.clone(),
            cyclic: cyc.clone(),
            counters: self.counters.clone(),
            flags: self.flags.clone(),
            stop: stop.clone(),
        };
        let cm_thread = cm::spawn(cm_ctx, ctl_rx).map_err(thread_err)?;
        threads.push(cm_thread);

        let cyc_thread = cyclic::spawn(
            cyc.clone(),
            image.clone(),
            link.clone(),
            self.counters.clone(),
        )
        .map_err(thread_err)?;
        threads.push(cyc_thread.handle);

        {
            let (link, stop, cyc, image, counters, tx, l2) = (
                link.clone(),
                stop.clone(),
                cyc.clone(),
                image.clone(),
                self.counters.clone(),
                ctl_tx.clone(),
                Some(l2.clone()),
            );
            let h = std::thread::Builder::new()
                .name("pn-rx".into())
                .spawn(move || rx_loop(link, stop, cyc, image, counters, tx, l2))
                .map_err(thread_err)?;
            threads.push(h);
        }
        self.flags.running.store(true, Ordering::Release);
        inner.running = Some(Running {
            stop,
            cyclic: cyc,
            threads,
            ctl_tx,
            monitor: Some(monitor),
            l2: Some(l2),
        });
        Ok(())
    }

    fn stop(&self) {
        let mut inner = self.lock();
        Self::stop_running(&mut inner, &self.flags);
    }

    fn teardown(&self) {
        let mut inner = self.lock();
        Self::stop_running(&mut inner, &self.flags);
        inner.link = None;
        inner.nic = None;
    }

    fn status(&self) -> PlaneStatus {
        let inner = self.lock();
        let running = inner.running.is_some();
        let link = inner
            .nic
            .as_deref()
            .map(read_link_state)
            .unwrap_or_default();
        PlaneStatus {
            running,
            port_present: link.present,
            link_up: link.up,
            connected: running && self.flags.connected.load(Ordering::Acquire),
            image_attached: running,
            message: self
                .flags
                .message
                .lock()
                .map(|m| m.clone())
                .unwrap_or_default(),
            counters: self.counters.snapshot(),
        }
    }

    fn extra_diag(&self) -> Option<serde_json::Value> {
        let inner = self.lock();
        let l2 = inner.running.as_ref()?.l2.as_ref()?.status();
        Some(serde_json::json!({ "l2": l2 }))
    }

    fn command(&self, cmd: StackCommand) {
        let mut inner = self.lock();
        if let StackCommand::SetHighResolutionTimer(on) = cmd {
            inner.high_res = on;
            if let Some(r) = &inner.running {
                r.cyclic.precise.store(on, Ordering::Relaxed);
            }
            return;
        }
        if let Some(r) = &inner.running {
            if let (
                StackCommand::Reset {
                    station_name,
                    ip,
                    mask,
                    gateway,
                    ..
                },
                Some(l2),
            ) = (&cmd, &r.l2)
            {
                l2.reset(station_name, *ip, *mask, *gateway);
            }
            let _ = r.ctl_tx.send(CtlMsg::Cmd(cmd));
        }
    }
}

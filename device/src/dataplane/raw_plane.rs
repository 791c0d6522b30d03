//! [`RawSocketPlane`]: the real probe and link monitor, no PROFINET.

use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use super::{
    error_code, open_raw_socket, read_link_state, DataPlane, EventSink, NicInfo, PlaneStatus,
    ProbeError, SharedCounters, StackCommand, StackConfig, StackEvent, StartError, StartFailure,
    StartMode,
};
use crate::image::ProcessImage;

struct RawInner {
    nic: Option<String>,
    socket: Option<OwnedFd>,
    monitor: Option<(Arc<AtomicBool>, JoinHandle<()>)>,
    high_res: bool,
}

/// A data plane that does the real driver probe (NIC lookup, raw `AF_PACKET` socket open and
/// bind), keeps the bound socket as its "binding" while started, and monitors the link
/// (sysfs carrier/operstate, reported as [`StackEvent::LinkChanged`]). It runs **no**
/// PROFINET: it never reports `Connected`, never sends frames, never marks Q content sent.
/// The runtime therefore stays in `Initialized` and `POST /api/io` answers `NotFlushed` (or
/// `LinkDown`).
pub struct RawSocketPlane {
    inner: Mutex<RawInner>,
    counters: Arc<SharedCounters>,
    link_poll: Duration,
}

impl Default for RawSocketPlane {
    fn default() -> Self {
        Self::new(Duration::from_millis(100))
    }
}

impl RawSocketPlane {
    /// `link_poll`: period of the link monitor.
    pub fn new(link_poll: Duration) -> Self {
        RawSocketPlane {
            inner: Mutex::new(RawInner {
                nic: None,
                socket: None,
                monitor: None,
                high_res: false,
            }),
            counters: Arc::new(SharedCounters::default()),
            link_poll,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, RawInner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn stop_monitor(inner: &mut RawInner) {
        if let Some((flag, handle)) = inner.monitor.take() {
            flag.store(true, Ordering::Release);
            let _ = handle.join();
        }
    }
}

/// Spawn a link monitor thread: emits `LinkChanged` once at start and on every change.
/// Returns the stop flag and the handle. Also bumps `heartbeat` every poll.
pub fn spawn_link_monitor(
    nic: String,
    events: EventSink,
    period: Duration,
    counters: Arc<SharedCounters>,
) -> std::io::Result<(Arc<AtomicBool>, JoinHandle<()>)> {
    let stop = Arc::new(AtomicBool::new(false));
    let stop2 = stop.clone();
    let handle = std::thread::Builder::new()
        .name(format!("link-{nic}"))
        .spawn(move || {
            let mut last: Option<bool> = None;
            while !stop2.load(Ordering::Acquire) {
                let up = read_link_state(&nic).up;
                if last != Some(up) {
                    last = Some(up);
                    if !events.send(StackEvent::LinkChanged { up }) {
                        break;
                    }
                }
                counters.heartbeat.fetch_add(1, Ordering::Relaxed);
                std::thread::park_timeout(period);
            }
        })?;
    Ok((stop, handle))
}

impl DataPlane for RawSocketPlane {
    fn kind(&self) -> &'static str {
        "raw-socket"
    }

    fn probe(&self, nic: &str) -> Result<NicInfo, ProbeError> {
        open_raw_socket(nic).map(|(_fd, info)| info)
    }

    fn start(
        &self,
        cfg: &StackConfig,
        _image: Arc<ProcessImage>,
        events: EventSink,
        mode: StartMode,
    ) -> Result<(), StartError> {
        let mut inner = self.lock();
        Self::stop_monitor(&mut inner);
        let reuse = mode == StartMode::Reuse
            && inner.socket.is_some()
            && inner.nic.as_deref() == Some(cfg.nic.as_str());
        if !reuse {
            inner.socket = None;
            let (fd, _info) = open_raw_socket(&cfg.nic).map_err(|e| StartError {
                failure: StartFailure::DataPlaneOpen,
                code: e.os_error,
                message: e.to_string(),
            })?;
            inner.socket = Some(fd);
            inner.nic = Some(cfg.nic.clone());
        }
        inner.high_res = cfg.high_resolution_timer;
        let mon = spawn_link_monitor(
            cfg.nic.clone(),
            events,
            self.link_poll,
            self.counters.clone(),
        )
        .map_err(|e| StartError {
            failure: if reuse {
                StartFailure::ReuseLoop
            } else {
                StartFailure::ControlPlane
            },
            code: if reuse { 0 } else { error_code::ERR_THREAD },
            message: format!("cannot start the link monitor thread: {e}"),
        })?;
        inner.monitor = Some(mon);
        Ok(())
    }

    fn stop(&self) {
        let mut inner = self.lock();
        Self::stop_monitor(&mut inner);
    }

    fn teardown(&self) {
        let mut inner = self.lock();
        Self::stop_monitor(&mut inner);
        inner.socket = None;
        inner.nic = None;
    }

    fn status(&self) -> PlaneStatus {
        let inner = self.lock();
        let running = inner.monitor.is_some();
        let link = inner
            .nic
            .as_deref()
            .map(read_link_state)
            .unwrap_or_default();
        PlaneStatus {
            running,
            port_present: link.present,
            link_up: link.up,
            connected: false,
            ar_cycle_ns: 0,
            image_attached: false,
            message: if running {
                "raw socket bound; no PROFINET stack in this build (no cyclic exchange)".into()
            } else {
                String::new()
            },
            counters: self.counters.snapshot(),
        }
    }

    fn command(&self, cmd: StackCommand) {
        if let StackCommand::SetHighResolutionTimer(on) = cmd {
            self.lock().high_res = on;
        }
    }
}

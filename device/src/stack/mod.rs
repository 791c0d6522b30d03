//! The PROFINET IO device on the wire: [`ProfinetPlane`] implements
//! [`crate::dataplane::DataPlane`].
//!
//! Ownership of the files in this directory:
//! * stack-core: `mod.rs` (the plane, receive dispatch), `cm.rs` (DCE/RPC connection
//!   management on UDP 34964), `ar.rs` (the configuration's slot layout and the API's view of
//!   an AR; the planning is the protocol crate's `machine::cmdev::plan`), `cyclic.rs` (the
//!   real-time thread, the I/O shell of `machine::ppm` / `machine::cpm`), `alarms.rs` (RTA
//!   alarm transport), `records.rs` (record read/write).
//! * stack-l2: `socket.rs` (raw socket wrapper), `link.rs` (link monitor), `dcp.rs`,
//!   `lldp.rs`, `snmp.rs`, `llmnr.rs` (and `crate::gsdml`).
//!
//! # Threads of a running plane
//! * `pn-rx-cyclic`: the receive thread of the running AR's cyclic frames, on a socket of its
//!   own whose kernel filter passes only the controller's valid frames of that AR
//!   ([`socket::cyclic_filter`], replaced when the consumer job changes); calls
//!   [`cyclic::consume_frame`] (the I area's writer; the consumer lock serialises it with the
//!   fallback below). `SCHED_FIFO` 50 where permitted (it feeds the data-hold watchdog of the
//!   real-time thread). A flood of any other frame kind neither queues in front of these
//!   frames nor makes their queue overflow (docs/decisions.md "Floods").
//! * `pn-rx`: the raw-socket receive thread of everything else (normal priority, so a flood it
//!   has to read cannot starve other threads). Dispatches by EtherType / FrameID: RTA alarm
//!   frames (0xFC01 / 0xFE01) to the connection manager, DCP and LLDP to the stack-l2
//!   handlers (rate-limited there, [`l2::Admission`]); cyclic frames (0x8000..=0xFBFF) of no
//!   AR are counted and dropped without taking the consumer lock, those of the running AR are
//!   left to `pn-rx-cyclic` once its filter is installed and consumed here until then. The
//!   AR's frames that filter drops (cut, over-long, wrong source, DataValid off) are still
//!   consumed here ([`socket::CyclicMatch::verdict`] tells them apart), so they are counted in
//!   `invalidFrames` and their DataStatus is seen, as without the cyclic socket.
//! * `pn-cyclic`: the real-time provider thread ([`cyclic`]).
//! * `pn-cm`: the connection manager ([`cm`]): a std thread owning the UDP socket on port
//!   34964, the AR state, the alarm transports and the records. A plain thread instead of a
//!   tokio task because everything it does is short, blocking-free work on one socket plus
//!   timers, it must keep running while the runtime's executor is busy, and it keeps the
//!   stack independent of the daemon's async runtime.
//! * `pn-link-<nic>`: the link monitor (stack-l2).

pub mod ar;
pub mod cm;
pub mod cyclic;
pub mod dcp;
pub mod l2;
pub mod link;
pub mod lldp;
pub mod llmnr;
pub mod portstats;
pub mod records;
pub mod snmp;
pub mod socket;
pub mod standby;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
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
    /// `PACKET_STATISTICS` of the socket (since the previous call).
    pub fn statistics(&self) -> Option<socket::SocketStats> {
        self.sock.statistics().ok()
    }
}

/// Totals of the receive sockets' `PACKET_STATISTICS` (the kernel resets its counters on each
/// read; [`ProfinetPlane::extra_diag`] adds them up here). `GET /api/diag` field `rxSockets`.
#[derive(Default)]
pub struct RxSocketTotals {
    pub main_frames: AtomicU64,
    pub main_drops: AtomicU64,
    pub cyclic_frames: AtomicU64,
    pub cyclic_drops: AtomicU64,
}

impl RxSocketTotals {
    fn add(frames: &AtomicU64, drops: &AtomicU64, st: Option<socket::SocketStats>) {
        if let Some(st) = st {
            frames.fetch_add(st.packets, Ordering::Relaxed);
            drops.fetch_add(st.drops, Ordering::Relaxed);
        }
    }
    fn json(&self) -> serde_json::Value {
        let l = |a: &AtomicU64| a.load(Ordering::Relaxed);
        serde_json::json!({
            "mainFrames": l(&self.main_frames),
            "mainDrops": l(&self.main_drops),
            "cyclicFrames": l(&self.cyclic_frames),
            "cyclicDrops": l(&self.cyclic_drops),
        })
    }
}

/// The cyclic receive socket and the consumer generation its filter was built for
/// ([`NOT_DEDICATED`] while it passes nothing, e.g. without an AR).
pub struct CyclicRx {
    sock: socket::PnSocket,
    pub gen: AtomicU64,
    /// The rule of the installed filter with the generation it was built for: `pn-rx`
    /// consumes the AR's frames the filter drops (see [`socket::CyclicMatch::verdict`]).
    rule: Mutex<(u64, Option<socket::CyclicMatch>)>,
}

impl CyclicRx {
    /// Whether frames of the AR wait on this socket, not yet consumed (the filter passes only
    /// the controller's valid frames of the AR): the data-hold check does not count a cycle
    /// whose frames are still queued (`DataHold::on_interval_or_unread`).
    pub fn has_unread(&self) -> bool {
        self.sock.has_queued()
    }

    /// Install the filter for the consumer job installed now, unless it is installed
    /// already. The CM calls this right after it changes the consumer (so the filter is in
    /// place before the Connect response lets the controller send, and no frame of the AR
    /// is queued on the main socket only); `pn-rx-cyclic` calls it at every wake-up.
    /// Lock order: `rule`, then the consumer lock (in [`cyclic_program`]).
    pub fn refresh(&self, cyc: &cyclic::CyclicShared) {
        // Fast path of every received frame: the filter is current.
        if self.gen.load(Ordering::Acquire) == cyc.consumer_gen.load(Ordering::Acquire) {
            return;
        }
        let mut rule = self.rule.lock().unwrap_or_else(|p| p.into_inner());
        if rule.0 == cyc.consumer_gen.load(Ordering::Acquire) {
            return;
        }
        // Hand the frames to pn-rx while the filter changes.
        self.gen.store(NOT_DEDICATED, Ordering::Release);
        let (gen, m, prog) = cyclic_program(cyc);
        match &prog {
            Some(p) if self.sock.set_filter(p).is_ok() => {
                *rule = (gen, m);
                self.gen.store(gen, Ordering::Release);
            }
            Some(_) => {
                // Not installed: the previous AR's filter must not stay (it could pass this
                // AR's frames too, and both threads would consume them). Pass nothing, leave
                // every frame to pn-rx, and try again at the next call (rule not recorded).
                let _ = self.sock.set_filter(&socket::REJECT_ALL);
                *rule = (NOT_DEDICATED, None);
            }
            None => {
                // No AR (or a C_SDU no filter can describe): nothing to dedicate.
                let _ = self.sock.set_filter(&socket::REJECT_ALL);
                *rule = (gen, None);
            }
        }
    }

    /// What the cyclic socket does with this frame of the AR now: `None` while its filter is
    /// not built for the current consumer generation `gen` (then `pn-rx` consumes the frame),
    /// else the filter's verdict.
    fn verdict(
        &self,
        gen: u64,
        cache: &mut (u64, Option<socket::CyclicMatch>),
        frame: &[u8],
    ) -> Option<socket::CyclicVerdict> {
        if self.gen.load(Ordering::Acquire) != gen {
            return None;
        }
        if cache.0 != gen {
            *cache = *self.rule.lock().unwrap_or_else(|p| p.into_inner());
        }
        match cache.1 {
            Some(m) if cache.0 == gen => Some(m.verdict(frame)),
            _ => None,
        }
    }
}

/// [`CyclicRx::gen`] when the cyclic socket carries no AR's frames.
pub const NOT_DEDICATED: u64 = u64::MAX;

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
    /// IOCR cycle of the IO AR (ns; 0 = no AR).
    pub ar_cycle_ns: std::sync::atomic::AtomicU64,
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
    /// The cyclic receive socket (`None` when it could not be opened: `pn-rx` then consumes
    /// every cyclic frame itself).
    cyclic_rx: Option<Arc<CyclicRx>>,
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
    rx_totals: Arc<RxSocketTotals>,
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
            rx_totals: Arc::new(RxSocketTotals::default()),
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

#[allow(clippy::too_many_arguments)]
fn rx_loop(
    link: Arc<RawLink>,
    stop: Arc<AtomicBool>,
    cyc: Arc<cyclic::CyclicShared>,
    image: Arc<ProcessImage>,
    counters: Arc<SharedCounters>,
    ctl: mpsc::Sender<CtlMsg>,
    l2: Option<Arc<l2::L2Services>>,
    cyclic_rx: Option<Arc<CyclicRx>>,
) {
    let mut buf = vec![0u8; 1600];
    let mut rule_cache = (NOT_DEDICATED, None);
    // Without the cyclic socket this thread feeds the data-hold watchdog: then it must not
    // starve behind ordinary threads and runs SCHED_FIFO (below the provider) where permitted.
    // With it, this thread runs at normal priority: a flood it reads competes fairly.
    if cyclic_rx.is_none() {
        cyclic::try_sched_fifo_prio(50);
    }
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
                // Not the running AR's FrameID: no consumer lock, no further work.
                if u32::from(fid.0) != cyc.consumer_fid.load(Ordering::Acquire) {
                    counters.dropped_frames.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
                // The cyclic socket carries this AR's frames its filter accepts (when the
                // filter is current); the ones it drops are consumed here, so they count.
                let gen = cyc.consumer_gen.load(Ordering::Acquire);
                match cyclic_rx
                    .as_ref()
                    .and_then(|c| c.verdict(gen, &mut rule_cache, frame))
                {
                    Some(socket::CyclicVerdict::Accepted) => continue,
                    // Cut, over-long or forged: invalid without the consumer lock, which
                    // pn-rx-cyclic needs (a malformed-RT flood must not contend for it).
                    Some(socket::CyclicVerdict::Malformed) => {
                        counters.invalid_frames.fetch_add(1, Ordering::Relaxed);
                        continue;
                    }
                    _ => {}
                }
                consume(&cyc, &image, &counters, eth.src.0, payload);
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

fn consume(
    cyc: &cyclic::CyclicShared,
    image: &ProcessImage,
    counters: &SharedCounters,
    src: [u8; 6],
    payload: &[u8],
) {
    match cyclic::consume_frame(cyc, image, src, payload) {
        cyclic::Consumed::Ok | cyclic::Consumed::Ignored => {}
        cyclic::Consumed::NotOurs => {
            counters.dropped_frames.fetch_add(1, Ordering::Relaxed);
        }
        cyclic::Consumed::Invalid => {
            counters.invalid_frames.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// The filter program for the consumer job installed now, with its generation.
fn cyclic_program(
    cyc: &cyclic::CyclicShared,
) -> (
    u64,
    Option<socket::CyclicMatch>,
    Option<Vec<libc::sock_filter>>,
) {
    let g = cyc.consumer.lock().unwrap_or_else(|p| p.into_inner());
    // Read under the lock: set_consumer bumps the generation while holding it.
    let gen = cyc.consumer_gen.load(Ordering::Acquire);
    let rule = g.as_ref().map(|j| socket::CyclicMatch {
        frame_id: j.frame_id,
        src: j.src,
        c_sdu_len: j.c_sdu_len,
    });
    let prog = rule.as_ref().and_then(socket::cyclic_filter);
    (gen, rule, prog)
}

/// `pn-rx-cyclic` (see the module documentation). Per frame: one receive, the consumer (no
/// allocation). The CM replaces the kernel filter when it changes the consumer
/// ([`CyclicRx::refresh`]); this thread does too at its next wake-up (at most 50 ms later)
/// should that have failed (`pn-rx` consumes the frames meanwhile).
fn cyclic_rx_loop(
    rx: Arc<CyclicRx>,
    stop: Arc<AtomicBool>,
    cyc: Arc<cyclic::CyclicShared>,
    image: Arc<ProcessImage>,
    counters: Arc<SharedCounters>,
) {
    let mut buf = vec![0u8; 1600];
    cyclic::try_sched_fifo_prio(50);
    while !stop.load(Ordering::Acquire) {
        // The CM installs the filter when it changes the consumer; this is the fallback.
        rx.refresh(&cyc);
        let Ok(Some(n)) = rx.sock.recv(&mut buf, Some(Duration::from_millis(50))) else {
            continue;
        };
        let Some(frame) = buf.get(..n) else {
            continue;
        };
        let Ok((eth, payload)) = EthernetRepr::parse_frame(frame) else {
            counters.invalid_frames.fetch_add(1, Ordering::Relaxed);
            continue;
        };
        consume(&cyc, &image, &counters, eth.src.0, payload);
    }
}

impl ProfinetPlane {
    /// The L2 services (stack-l2): DCP, LLDP, DCP IP application, SNMP, LLMNR. DCP requests
    /// for an AR abort (name changed / reset while connected) go to the CM as
    /// `CtlMsg::AbortAr` with the matching RTA abort reason.
    fn start_l2(
        &self,
        cfg: &StackConfig,
        link: &Arc<RawLink>,
        events: EventSink,
        ctl_tx: mpsc::Sender<CtlMsg>,
    ) -> std::io::Result<l2::L2Services> {
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
        l2::L2Services::start(l2cfg, link::query(&cfg.nic), send, events, on_abort)
    }
}

/// The cyclic receive socket: opened passing nothing; the CM (and the socket's thread) install
/// the AR's filter. Without it (cannot be opened) pn-rx consumes every cyclic frame as before.
fn open_cyclic_rx(nic: &str) -> Option<Arc<CyclicRx>> {
    match socket::PnSocket::open_with_filter(nic, &socket::REJECT_ALL) {
        Ok(sock) => Some(Arc::new(CyclicRx {
            sock,
            gen: AtomicU64::new(NOT_DEDICATED),
            rule: Mutex::new((NOT_DEDICATED, None)),
        })),
        Err(e) => {
            tracing::warn!(
                "cyclic receive socket not opened ({e}); pn-rx consumes the cyclic frames"
            );
            None
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
        let base =
            u64::from(cfg.send_clock_factor.max(1)) * pn_protocol::machine::cyclic::TIME_BASE_NS;
        let cyc = Arc::new(cyclic::CyclicShared::new(base, high_res));
        let (ctl_tx, ctl_rx) = mpsc::channel();
        let mut threads = Vec::new();

        // L2 services (stack-l2).
        let l2 = Arc::new(
            self.start_l2(cfg, &link, events.clone(), ctl_tx.clone())
                .map_err(thread_err)?,
        );

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

        // The cyclic receive socket (without a filter until an AR installs one).
        let cyclic_rx = open_cyclic_rx(&cfg.nic);
        let cm_ctx = cm::CmContext {
            cfg: cfg.clone(),
            image: image.clone(),
            events,
            link: link.clone(),
            cyclic: cyc.clone(),
            counters: self.counters.clone(),
            flags: self.flags.clone(),
            stop: stop.clone(),
            cyclic_rx: cyclic_rx.clone(),
            l2: Some(l2.clone()),
        };
        let cm_thread = cm::spawn(cm_ctx, ctl_rx).map_err(thread_err)?;
        threads.push(cm_thread);

        let cyc_thread = cyclic::spawn(
            cyc.clone(),
            image.clone(),
            link.clone(),
            self.counters.clone(),
            cyclic_rx.clone(),
            cyclic::Options {
                standby_cpu: cfg.standby_cpu,
                hold: cfg.provider_hold,
            },
        )
        .map_err(thread_err)?;
        threads.push(cyc_thread.handle);
        if let Some(cpu) = cfg.standby_cpu {
            let h = standby::spawn(
                cyc.clone(),
                image.clone(),
                link.clone(),
                self.counters.clone(),
                standby::StandbyConfig {
                    cpu,
                    grace_ns: cfg.standby_grace_us.map(|us| us * 1000),
                },
            )
            .map_err(thread_err)?;
            threads.push(h);
        }

        if let Some(rx) = &cyclic_rx {
            let (rx, stop, cyc, image, counters) = (
                rx.clone(),
                stop.clone(),
                cyc.clone(),
                image.clone(),
                self.counters.clone(),
            );
            let h = std::thread::Builder::new()
                .name("pn-rx-cyclic".into())
                .spawn(move || cyclic_rx_loop(rx, stop, cyc, image, counters))
                .map_err(thread_err)?;
            threads.push(h);
        }
        {
            let cyclic_rx = cyclic_rx.clone();
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
                .spawn(move || rx_loop(link, stop, cyc, image, counters, tx, l2, cyclic_rx))
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
            cyclic_rx,
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
            ar_cycle_ns: self.flags.ar_cycle_ns.load(Ordering::Acquire),
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
        let t = &self.rx_totals;
        if let Some(link) = &inner.link {
            RxSocketTotals::add(&t.main_frames, &t.main_drops, link.statistics());
        }
        let running = inner.running.as_ref()?;
        if let Some(c) = &running.cyclic_rx {
            RxSocketTotals::add(&t.cyclic_frames, &t.cyclic_drops, c.sock.statistics().ok());
        }
        let l2 = running.l2.as_ref()?.status();
        Some(serde_json::json!({ "l2": l2, "rxSockets": t.json() }))
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

#[cfg(test)]
mod tests;

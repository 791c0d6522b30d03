//! The controller runtime: one raw socket, one UDP socket (PNIO-CM on port 34964, client and
//! server), one receive thread, one RPC thread and one cyclic thread with absolute deadlines
//! that serves every AR of the process. The threads and sockets are here; what runs on them
//! is in `ar.rs` (the AR and its handle), `cm.rs` (the shell of the connection-management
//! machine), `cyclic.rs` (the provider/consumer shell) and `alarms.rs` (the RTA shell).

use std::collections::HashMap;
use std::io;
use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Condvar, Mutex, RwLock};
use std::thread::JoinHandle;
use std::time::Duration as StdDuration;

use pn_protocol::time::{Duration, Instant};
use pn_protocol::wire::dcp::DcpRepr;
use pn_protocol::wire::ethernet::{self, EthernetRepr};
use pn_protocol::wire::rpc::Uuid;
use pn_protocol::wire::rt::{self, FrameId};
use pn_protocol::wire::rta as wrta;

use crate::alarms::AlarmRecord;
use crate::netif::{InterfaceInfo, RawSocket};
use crate::rtsched::{self, RealtimeApplied, RealtimeOptions};
use crate::Error;

pub(crate) use crate::ar::ArInner;
pub use crate::ar::{ArConfig, ArHandle, ArState, ArStatus, Inputs};

/// Configuration of a controller instance.
#[derive(Debug, Clone)]
pub struct ControllerConfig {
    /// Network interface (in the calling thread's network namespace).
    pub interface: String,
    /// Our NameOfStation (CMInitiatorStationName).
    pub station_name: String,
    /// Base tick of the cyclic thread: SendClockFactor in 31.25 µs units (32 = 1 ms).
    pub send_clock_factor: u16,
    /// Opt-in real-time scheduling of the cyclic thread.
    pub realtime: RealtimeOptions,
    /// UDP port for PNIO-CM (34964 on real controllers).
    pub rpc_port: u16,
    /// The port must be `rpc_port`: devices send ApplicationReady there. Without an AR (DCP,
    /// implicit reads) a busy port is replaced by one the kernel picks.
    pub rpc_port_required: bool,
    /// Time to wait for one RPC response before retransmitting.
    pub rpc_timeout: StdDuration,
    /// Retransmissions of an RPC request.
    pub rpc_retries: u32,
}

impl ControllerConfig {
    pub fn new(interface: &str) -> ControllerConfig {
        ControllerConfig {
            interface: interface.to_string(),
            station_name: "pn-controller".into(),
            send_clock_factor: 32,
            realtime: RealtimeOptions::default(),
            rpc_port: pn_protocol::wire::ip::PNIO_CM_PORT,
            rpc_port_required: true,
            rpc_timeout: StdDuration::from_millis(1000),
            rpc_retries: 3,
        }
    }
}

impl std::fmt::Display for Event {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Event::State { ar, station, state } => write!(f, "AR {ar} '{station}': {state}"),
            Event::Alarm { ar, station, alarm } => {
                write!(
                    f,
                    "AR {ar} '{station}': {} alarm {} (0x{:04x}) slot {} subslot 0x{:04x}, \
                     sequence {}",
                    alarm.priority,
                    alarm.alarm_type_name,
                    alarm.alarm_type,
                    alarm.slot,
                    alarm.subslot,
                    alarm.sequence_number
                )?;
                for d in &alarm.diagnosis {
                    write!(f, "; {d}")?;
                }
                Ok(())
            }
            Event::WatchdogExpired { ar, station } => write!(
                f,
                "AR {ar} '{station}': no valid input frame from the device within the data-hold \
                 time"
            ),
            Event::DeviceAbort {
                ar,
                station,
                status,
            } => write!(
                f,
                "AR {ar} '{station}': the device ended the AR with ERR-RTA {status}"
            ),
        }
    }
}

/// Something that happened, for [`Controller::events`].
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub enum Event {
    State {
        ar: u32,
        station: String,
        state: ArState,
    },
    Alarm {
        ar: u32,
        station: String,
        alarm: AlarmRecord,
    },
    WatchdogExpired {
        ar: u32,
        station: String,
    },
    DeviceAbort {
        ar: u32,
        station: String,
        status: String,
    },
}

pub(crate) struct Shared {
    pub cfg: ControllerConfig,
    pub info: InterfaceInfo,
    pub sock: RawSocket,
    pub udp: UdpSocket,
    pub stop: AtomicBool,
    /// The DCP client machine and its finished exchanges (`dcp.rs` drives it); callers wait
    /// on `dcp_done` for theirs.
    pub dcp: Mutex<crate::dcp::DcpShell>,
    pub dcp_done: Condvar,
    /// Calls without an AR (implicit reads), by activity: the RPC thread hands their datagrams
    /// over.
    pub rpc_waiters: Mutex<HashMap<Uuid, Sender<Vec<u8>>>>,
    pub ars: RwLock<Vec<Arc<ArInner>>>,
    /// Bumped on every change of `ars` (under its write lock): the cyclic thread keeps its own
    /// copy of the list and refreshes it with `try_read` only when this changed, so it never
    /// waits for the list lock (a connect or a removal in another thread, or a reader of lower
    /// priority that was preempted while holding it).
    pub ars_gen: AtomicU64,
    pub events: Mutex<Vec<Sender<Event>>>,
    pub next_id: AtomicU32,
    /// Each device's slot in the FrameID range, by NameOfStation: a device keeps its input
    /// FrameID across reconnects, as a PLC's configuration gives every device one.
    pub frame_slots: Mutex<HashMap<String, u32>>,
    pub rt_applied: Mutex<RealtimeApplied>,
    pub tick_stats: TickCounters,
    /// Origin of the cyclic thread's tick grid (ns on CLOCK_MONOTONIC); providers start on it.
    pub grid_origin: AtomicU64,
}

impl Shared {
    /// The device's slot in the FrameID range (see `frame_slots`): the next free one the first
    /// time a station connects.
    pub(crate) fn frame_slot(&self, station: &str) -> u32 {
        let mut m = self.frame_slots.lock().unwrap_or_else(|p| p.into_inner());
        let next = m.len() as u32 + 1;
        *m.entry(station.to_string()).or_insert(next)
    }
}

/// [`TickStats`] as atomics, written by the cyclic thread without a lock.
#[derive(Default)]
pub(crate) struct TickCounters {
    ticks: AtomicU64,
    missed_ticks: AtomicU64,
    max_lateness_us: AtomicU64,
}

/// Timing statistics of the cyclic thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TickStats {
    pub ticks: u64,
    pub missed_ticks: u64,
    pub max_lateness_us: u64,
}

/// A running controller. Dropping it stops the threads (ARs are aborted, not released:
/// call [`ArHandle::release`] first for an orderly end).
pub struct Controller {
    pub(crate) shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
}

pub(crate) fn random_bytes<const N: usize>() -> [u8; N] {
    let mut b = [0u8; N];
    // SAFETY: getrandom into a valid buffer.
    let n = unsafe { libc::getrandom(b.as_mut_ptr() as *mut libc::c_void, N, 0) };
    if n != N as isize {
        // Fallback: clock-based (only uniqueness matters).
        let t = rtsched::now().0.to_le_bytes();
        for (i, x) in b.iter_mut().enumerate() {
            *x = t[i % 8] ^ (i as u8).wrapping_mul(37) ^ (std::process::id() as u8);
        }
    }
    b
}

pub(crate) fn random_uuid() -> Uuid {
    let mut b = random_bytes::<16>();
    b[6] = (b[6] & 0x0F) | 0x40;
    b[8] = (b[8] & 0x3F) | 0x80;
    Uuid(b)
}

impl Shared {
    pub(crate) fn emit(&self, e: Event) {
        let mut v = self.events.lock().unwrap_or_else(|p| p.into_inner());
        v.retain(|s| s.send(e.clone()).is_ok());
    }

    pub(crate) fn send_frame(&self, f: &[u8]) -> io::Result<()> {
        self.sock.send(f)
    }

    // ------------------------------------------------------------------------------------
    // Receive paths
    // ------------------------------------------------------------------------------------

    fn on_frame(&self, frame: &[u8], now: Instant) {
        let Ok((eth, payload)) = EthernetRepr::parse_frame(frame) else {
            return;
        };
        if eth.ethertype != ethernet::ethertype::PROFINET {
            return;
        }
        let Ok(id) = rt::frame_id(payload) else {
            return;
        };
        if id.is_cyclic() {
            let ars = self.ars.read().unwrap_or_else(|p| p.into_inner());
            for ar in ars.iter() {
                if ar.mac() != eth.src {
                    continue;
                }
                let (in_id, _) = ar.frame_ids();
                if in_id != id.0 {
                    continue;
                }
                ar.on_input_frame(now, eth.src, payload);
            }
            return;
        }
        if id == FrameId::DCP_IDENTIFY_RESPONSE || id == FrameId::DCP_GET_SET {
            if let Ok(d) = DcpRepr::parse(&payload[2..]) {
                self.on_dcp(now, eth.src, &d);
            }
            return;
        }
        if id.0 == wrta::FRAME_ID_ALARM_HIGH || id.0 == wrta::FRAME_ID_ALARM_LOW {
            let ars = self.ars.read().unwrap_or_else(|p| p.into_inner()).clone();
            for ar in ars.iter().filter(|a| a.mac() == eth.src) {
                self.on_alarm_frame(ar, id.0, &payload[2..], now);
            }
        }
    }

    /// Add or remove ARs (the only writers of `ars`).
    pub(crate) fn edit_ars(&self, f: impl FnOnce(&mut Vec<Arc<ArInner>>)) {
        let mut ars = self.ars.write().unwrap_or_else(|p| p.into_inner());
        f(&mut ars);
        self.ars_gen.fetch_add(1, Ordering::Release);
    }
}

impl ArInner {}

/// The PNIO-CM socket. A port held by another program is said in words: usually a second
/// pn-controller (a running `connect-and-run`) in the same network namespace.
fn bind_rpc(cfg: &ControllerConfig) -> Result<UdpSocket, Error> {
    let at = |port| UdpSocket::bind(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, port));
    match at(cfg.rpc_port) {
        Ok(s) => Ok(s),
        Err(e) if e.kind() == std::io::ErrorKind::AddrInUse && !cfg.rpc_port_required => {
            tracing::info!(
                "UDP port {} is in use (another controller?); record services use a port of \
                 the kernel's choice",
                cfg.rpc_port
            );
            at(0).map_err(Error::Io)
        }
        Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => Err(Error::Config(format!(
            "UDP port {} (PNIO-CM) is already in use in this network namespace: another \
             pn-controller (for example a running connect-and-run) or PROFINET stack holds it, \
             and devices send ApplicationReady to that port; stop it first, or run this \
             controller in another network namespace",
            cfg.rpc_port
        ))),
        Err(e) => Err(Error::Io(e)),
    }
}

impl Controller {
    /// Open the interface and start the threads. Needs CAP_NET_RAW (root) and, for
    /// connections, an IPv4 address on the interface.
    pub fn start(cfg: ControllerConfig) -> Result<Controller, Error> {
        let info = InterfaceInfo::lookup(&cfg.interface)
            .map_err(|e| Error::Interface(format!("{}: {e}", cfg.interface)))?;
        let sock = RawSocket::open(&info)
            .map_err(|e| Error::Interface(format!("raw socket on {}: {e}", cfg.interface)))?;
        let udp = bind_rpc(&cfg)?;
        udp.set_read_timeout(Some(StdDuration::from_millis(20)))
            .map_err(Error::Io)?;
        // A random first Xid: two runs of the controller do not take each other's answers.
        let seed = u32::from_le_bytes(random_bytes::<4>());
        let dcp = crate::dcp::DcpShell::new(info.mac, seed);
        let shared = Arc::new(Shared {
            cfg: cfg.clone(),
            info,
            sock,
            udp,
            stop: AtomicBool::new(false),
            dcp: Mutex::new(dcp),
            dcp_done: Condvar::new(),
            rpc_waiters: Mutex::new(HashMap::new()),
            ars: RwLock::new(Vec::new()),
            ars_gen: AtomicU64::new(0),
            events: Mutex::new(Vec::new()),
            next_id: AtomicU32::new(1),
            frame_slots: Mutex::new(HashMap::new()),
            rt_applied: Mutex::new(RealtimeApplied::default()),
            tick_stats: TickCounters::default(),
            grid_origin: AtomicU64::new(0),
        });
        let mut threads = Vec::new();
        // Receive thread (raw frames + alarm timers).
        let s = shared.clone();
        threads.push(
            std::thread::Builder::new()
                .name("pnc-rx".into())
                .spawn(move || {
                    // The receive thread feeds the consumer watchdog: when real-time scheduling
                    // is asked for, it runs SCHED_FIFO too, one step below the cyclic thread.
                    let rx_rt = RealtimeOptions {
                        fifo_priority: s.cfg.realtime.fifo_priority.map(|p| (p - 1).max(1)),
                        lock_memory: false,
                    };
                    rtsched::apply_to_current_thread(rx_rt);
                    let mut buf = vec![0u8; 2048];
                    let mut last_poll = rtsched::now();
                    let mut last_watchdog = rtsched::now();
                    let half_period =
                        Duration(u64::from(s.cfg.send_clock_factor.max(1)) * 31_250 / 2);
                    while !s.stop.load(Ordering::Relaxed) {
                        match s.sock.recv(&mut buf, StdDuration::from_millis(1)) {
                            Ok(Some(n)) => s.on_frame(&buf[..n], rtsched::now()),
                            Ok(None) => {}
                            Err(e) => {
                                tracing::warn!("raw receive: {e}");
                                std::thread::sleep(StdDuration::from_millis(5));
                            }
                        }
                        let now = rtsched::now();
                        // Judge the watchdogs only with the queue drained (every frame that
                        // arrived has been consumed); under a flood that never drains, at
                        // least every 50 ms.
                        // Not after every frame: with many ARs the receive thread would
                        // spend its time locking every consumer per frame. Half a base
                        // period between judgements delays an expiry by at most that.
                        let since = now - last_watchdog;
                        if (since >= half_period && !s.sock.pending())
                            || since >= Duration::from_millis(50)
                        {
                            s.check_watchdogs(now);
                            last_watchdog = now;
                        }
                        if now - last_poll >= Duration::from_millis(5) {
                            s.poll_alarms(now);
                            last_poll = now;
                        }
                    }
                })
                .map_err(Error::Io)?,
        );
        // RPC thread.
        let s = shared.clone();
        threads.push(
            std::thread::Builder::new()
                .name("pnc-rpc".into())
                .spawn(move || {
                    let mut buf = vec![0u8; 65536];
                    while !s.stop.load(Ordering::Relaxed) {
                        if let Ok((n, from)) = s.udp.recv_from(&mut buf) {
                            s.on_udp(&buf[..n], from);
                        }
                    }
                })
                .map_err(Error::Io)?,
        );
        // Cyclic thread.
        let s = shared.clone();
        let rt = cfg.realtime;
        threads.push(
            std::thread::Builder::new()
                .name("pnc-cyclic".into())
                .spawn(move || {
                    let applied = rtsched::apply_to_current_thread(rt);
                    *s.rt_applied.lock().unwrap_or_else(|p| p.into_inner()) = applied;
                    let period = u64::from(s.cfg.send_clock_factor.max(1)) * 31_250;
                    let mut next = rtsched::now() + Duration(period);
                    s.grid_origin.store(next.0, Ordering::Release);
                    let mut list = (u64::MAX, Vec::with_capacity(256));
                    let st = &s.tick_stats;
                    while !s.stop.load(Ordering::Relaxed) {
                        rtsched::sleep_until(next);
                        let now = rtsched::now();
                        s.cyclic_tick(next, &mut list);
                        st.ticks.fetch_add(1, Ordering::Relaxed);
                        let late = (now - next).as_micros();
                        st.max_lateness_us.fetch_max(late, Ordering::Relaxed);
                        let after = rtsched::now();
                        let n2 = rtsched::next_slot(next, period, after);
                        st.missed_ticks
                            .fetch_add((n2.0 - next.0) / period - 1, Ordering::Relaxed);
                        next = n2;
                    }
                })
                .map_err(Error::Io)?,
        );
        Ok(Controller { shared, threads })
    }

    /// The interface facts (MAC, IP, index).
    pub fn interface(&self) -> &InterfaceInfo {
        &self.shared.info
    }

    /// What the cyclic thread could apply of the real-time options.
    pub fn realtime_applied(&self) -> RealtimeApplied {
        *self
            .shared
            .rt_applied
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    /// Timing statistics of the cyclic thread.
    pub fn tick_stats(&self) -> TickStats {
        let t = &self.shared.tick_stats;
        TickStats {
            ticks: t.ticks.load(Ordering::Relaxed),
            missed_ticks: t.missed_ticks.load(Ordering::Relaxed),
            max_lateness_us: t.max_lateness_us.load(Ordering::Relaxed),
        }
    }

    /// Subscribe to events (state changes, alarms, watchdog expiries).
    pub fn events(&self) -> Receiver<Event> {
        let (tx, rx) = mpsc::channel();
        self.shared
            .events
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(tx);
        rx
    }

    /// All ARs of this controller.
    pub fn ars(&self) -> Vec<ArHandle> {
        self.shared
            .ars
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .map(|a| ArHandle {
                shared: self.shared.clone(),
                ar: a.clone(),
            })
            .collect()
    }

    /// Send a raw Ethernet frame (fault injection, tests).
    pub fn send_frame(&self, frame: &[u8]) -> Result<(), Error> {
        self.shared.send_frame(frame).map_err(Error::Io)
    }

    /// Send a raw UDP payload from the PNIO-CM socket (fault injection: malformed RPC).
    pub fn send_udp(&self, dst: Ipv4Addr, port: u16, payload: &[u8]) -> Result<(), Error> {
        self.shared
            .udp
            .send_to(payload, SocketAddrV4::new(dst, port))
            .map(|_| ())
            .map_err(Error::Io)
    }

    /// Stop all threads (ARs are left without release).
    pub fn shutdown(mut self) {
        self.stop_threads();
    }

    fn stop_threads(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

impl Drop for Controller {
    fn drop(&mut self) {
        self.stop_threads();
    }
}

impl ArHandle {}

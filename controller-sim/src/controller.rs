//! The controller runtime: one raw socket, one UDP socket (PNIO-CM on port 34964, client and
//! server), one receive thread, one RPC thread and one cyclic thread with absolute deadlines
//! that serves every AR of the process.

use std::collections::HashMap;
use std::io;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Condvar, Mutex, RwLock};
use std::thread::JoinHandle;
use std::time::Duration as StdDuration;

use pn_protocol::machine::cmctl::server::{self, Inbound};
use pn_protocol::machine::cmctl::{
    self, CallError, Cmctl, CmctlConfig, CmctlError, CmctlEvent, Connected, Datagram, DatagramKind,
    Phase, RecordId, RpcClient, RpcClientConfig,
};
use pn_protocol::machine::cyclic::{
    Consumer, ConsumerEvent, ConsumerStats, CyclicTiming, Provider, RxOutcome,
};
use pn_protocol::machine::rta::{RtaConfig, RtaEvent, RtaMachine};
use pn_protocol::time::{Duration, Instant};
use pn_protocol::wire::dcp::DcpRepr;
use pn_protocol::wire::ethernet::{self, EthernetRepr, MacAddr, VlanTag};
use pn_protocol::wire::field::Writer;
use pn_protocol::wire::pnio::alarm::{AlarmPdu, AlarmPriority};
use pn_protocol::wire::pnio::im::ImRecord;
use pn_protocol::wire::pnio::module_diff::ModuleDiffBlock;
use pn_protocol::wire::pnio::record::{self, ReadReqHeaderRepr, ReadRequest, RecordAddress};
use pn_protocol::wire::pnio::PnioStatus;
use pn_protocol::wire::rpc::{self, PnioResponse, RpcPacket, Uuid};
use pn_protocol::wire::rt::{self, DataStatus, FrameId, Ioxs};
use pn_protocol::wire::rta::{self as wrta, RtaPduType};

use crate::alarms::AlarmRecord;
use crate::cmreq::{self, ArIds, ArTiming};
use crate::faults::{AlarmAckFault, AppReadyFault, Faults};
use crate::model::{DeviceModel, IoLayout};
use crate::netif::{InterfaceInfo, RawSocket};
use crate::rtsched::{self, RealtimeApplied, RealtimeOptions};
use crate::Error;
use pn_protocol::machine::cmdev::connect::FRAME_ID_DEVICE_CHOOSES;

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

/// Connection state of an AR.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub enum ArState {
    Connecting,
    /// Connect accepted; parameters being written.
    Parameterizing,
    /// PrmEnd sent; waiting for the device's ApplicationReady.
    WaitApplicationReady,
    DataExchange,
    Released,
    Aborted(String),
}

impl std::fmt::Display for ArState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ArState::Connecting => f.write_str("connecting"),
            ArState::Parameterizing => f.write_str("parameterizing"),
            ArState::WaitApplicationReady => f.write_str("waiting for ApplicationReady"),
            ArState::DataExchange => f.write_str("data exchange"),
            ArState::Released => f.write_str("released"),
            ArState::Aborted(why) => write!(f, "aborted: {why}"),
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

/// Parameters of one connection.
#[derive(Debug, Clone)]
pub struct ArConfig {
    pub model: DeviceModel,
    /// The device's IP. `None`: use the IP it reports over DCP.
    pub device_ip: Option<Ipv4Addr>,
    /// Assign `device_ip` temporarily over DCP when the device reports another one.
    pub assign_ip: bool,
    pub timing: ArTiming,
    /// Faults active from the start (ApplicationReady handling must be set before connecting).
    pub faults: Faults,
    /// How long to wait for the device's ApplicationReady after PrmEnd.
    pub app_ready_timeout: StdDuration,
    /// Initial output data (linear area, PROFINET outputs).
    pub initial_outputs: Vec<u8>,
}

impl ArConfig {
    pub fn new(model: DeviceModel) -> ArConfig {
        ArConfig {
            model,
            device_ip: None,
            assign_ip: false,
            timing: ArTiming::default(),
            faults: Faults::default(),
            app_ready_timeout: StdDuration::from_secs(10),
            initial_outputs: Vec::new(),
        }
    }
}

/// A consistent view of an AR's input side.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Inputs {
    /// Input data (device -> controller), linear area in slot order.
    pub data: Vec<u8>,
    /// IOPS per input data object (layout order).
    pub iops: Vec<u8>,
    /// IOCS the device sends for our output submodules (layout order).
    pub iocs: Vec<u8>,
    pub data_status: Option<u8>,
    pub cycle_counter: Option<u16>,
    /// At least one valid frame has been received.
    pub valid: bool,
}

/// Counters and state of one AR.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ArStatus {
    pub id: u32,
    pub station_name: String,
    pub device_mac: String,
    pub device_ip: String,
    pub state: ArState,
    pub cycle_us: u64,
    pub input_frame_id: u16,
    pub output_frame_id: u16,
    pub frames_sent: u64,
    pub missed_send_slots: u64,
    pub frames_received: u64,
    pub frames_new_data: u64,
    pub frames_invalid: u64,
    pub frames_duplicate: u64,
    pub watchdog_expiries: u64,
    pub alarms_received: u64,
    pub module_diff: Vec<String>,
}

/// Provider side of the cyclic path: locked by the cyclic thread per tick, by `establish`
/// once (installing the provider, no RPC in flight while it holds it) and briefly by
/// `status()`. Separate from [`ArIo`] (the consumer, locked by the receive thread per frame)
/// so that the cyclic thread never waits for the receive thread (a lower real-time priority,
/// which may be preempted while it holds its lock).
pub(crate) struct ArTx {
    pub provider: Option<Provider>,
    /// The output C_SDU, kept between cycles: when the API is mid-write the previous data is
    /// sent again instead of waiting for the writer.
    pub c_sdu: Vec<u8>,
    pub frame: Vec<u8>,
    /// Last fault settings seen (used when the API holds the faults lock).
    pub faults: Faults,
}

/// Consumer side of the cyclic path, touched only by the receive thread (and briefly by
/// `establish`, `enter_data_exchange` and `status()`).
pub(crate) struct ArIo {
    pub consumer: Option<Consumer>,
    /// Counters of the consumer that ran before data exchange (replaced then).
    pub consumer_base: ConsumerStats,
    pub started_at: Instant,
}

/// Phases as the cyclic thread reads them (without a lock).
pub(crate) mod phase {
    pub const CONNECTING: u8 = 0;
    pub const PARAMETERIZING: u8 = 1;
    pub const WAIT_APP_READY: u8 = 2;
    pub const DATA_EXCHANGE: u8 = 3;
    pub const ENDED: u8 = 4;
}

pub(crate) struct ArInner {
    pub id: u32,
    pub model: DeviceModel,
    pub layout: IoLayout,
    pub timing: ArTiming,
    pub ids: ArIds,
    /// Device MAC as a u64 (read per received frame without a lock).
    pub device_mac: AtomicU64,
    /// (input FrameID << 16) | output FrameID.
    pub frame_ids: AtomicU32,
    pub phase: AtomicU8,
    /// When data exchange began (ns of `rtsched::now`; 0 = not yet).
    pub data_since_ns: AtomicU64,
    /// A Release was sent: the consumer's watchdog no longer judges the device's frames.
    pub releasing: AtomicBool,
    /// Output area (PROFINET outputs), written by the API.
    pub outputs: Mutex<Vec<u8>>,
    /// Latest inputs, written by the receive thread.
    pub inputs: Mutex<Inputs>,
    pub device_ip: Ipv4Addr,
    /// The activity of this AR's RPC calls (the RPC thread routes responses by it).
    pub activity: Uuid,
    /// The AR's state and its connection-management machine, under one lock so that a waiter
    /// on `cond` sees both the machine's outcomes and state changes made elsewhere (alarms,
    /// watchdog).
    pub state: Mutex<ArCm>,
    pub cond: Condvar,
    pub io: Mutex<ArIo>,
    pub tx: Mutex<ArTx>,
    /// The provider's frames sent and missed slots, published by the cyclic thread after
    /// each send: `ArHandle::status` reads them without the `tx` lock, so a caller preempted
    /// while reading statistics can never hold up the cyclic thread.
    pub provider_sent: AtomicU64,
    pub provider_missed: AtomicU64,
    pub faults: Mutex<Faults>,
    pub alarm: Mutex<Option<crate::alarms::AlarmState>>,
    pub module_diff: Mutex<Option<ModuleDiffBlock>>,
    pub alarms_received: AtomicU64,
}

/// The AR's state, its CMCTL machine and the outcomes the machine reported that a caller
/// waits for.
pub(crate) struct ArCm {
    pub state: ArState,
    pub cm: Cmctl,
    /// Establishing ended: data exchange (Ok) or why not.
    pub established: Option<Result<(), Error>>,
    /// Results of record services, by the machine's handle.
    pub records: HashMap<RecordId, Result<Vec<u8>, CmctlError>>,
    /// The Release's outcome (cloned by every caller of `release`).
    pub released: Option<Result<(), CmctlError>>,
}

pub(crate) struct Shared {
    pub cfg: ControllerConfig,
    pub info: InterfaceInfo,
    pub sock: RawSocket,
    pub udp: UdpSocket,
    pub stop: AtomicBool,
    pub dcp_waiters: Mutex<HashMap<u32, Sender<(MacAddr, DcpRepr)>>>,
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
    pub xid: AtomicU32,
    pub rt_applied: Mutex<RealtimeApplied>,
    pub tick_stats: TickCounters,
    /// Origin of the cyclic thread's tick grid (ns on CLOCK_MONOTONIC); providers start on it.
    pub grid_origin: AtomicU64,
}

impl Shared {
    /// The device's slot in the FrameID range (see `frame_slots`): the next free one the first
    /// time a station connects.
    fn frame_slot(&self, station: &str) -> u32 {
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

/// A handle on one AR.
#[derive(Clone)]
pub struct ArHandle {
    pub(crate) shared: Arc<Shared>,
    pub(crate) ar: Arc<ArInner>,
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

    pub(crate) fn next_xid(&self) -> u32 {
        self.xid.fetch_add(1, Ordering::Relaxed)
    }

    pub(crate) fn send_frame(&self, f: &[u8]) -> io::Result<()> {
        self.sock.send(f)
    }

    fn set_state(&self, ar: &ArInner, st: ArState) {
        {
            let mut g = ar.state.lock().unwrap_or_else(|p| p.into_inner());
            let s = &mut g.state;
            if *s == st {
                return;
            }
            // Terminal states stay.
            if matches!(*s, ArState::Released | ArState::Aborted(_)) {
                return;
            }
            *s = st.clone();
            let ph = match &st {
                ArState::Connecting => phase::CONNECTING,
                ArState::Parameterizing => phase::PARAMETERIZING,
                ArState::WaitApplicationReady => phase::WAIT_APP_READY,
                ArState::DataExchange => phase::DATA_EXCHANGE,
                ArState::Released | ArState::Aborted(_) => phase::ENDED,
            };
            if ph == phase::DATA_EXCHANGE {
                ar.data_since_ns
                    .store(rtsched::now().as_nanos().max(1), Ordering::Release);
            }
            ar.phase.store(ph, Ordering::Release);
        }
        ar.cond.notify_all();
        tracing::info!(ar = ar.id, station = %ar.model.station_name, state = ?st, "AR state");
        self.emit(Event::State {
            ar: ar.id,
            station: ar.model.station_name.clone(),
            state: st,
        });
    }

    // ------------------------------------------------------------------------------------
    // Connection management: the shell around each AR's CMCTL machine
    // ------------------------------------------------------------------------------------

    /// Run `f` on the AR's machine, then act on what it produced: its events first (a
    /// Connect response sets up the cyclic and alarm machines before the parameter Write it
    /// triggers goes out), then its datagrams.
    pub(crate) fn cm_drive<R>(&self, ar: &ArInner, f: impl FnOnce(&mut Cmctl, Instant) -> R) -> R {
        let now = rtsched::now();
        let (r, events, out) = {
            let mut g = ar.state.lock().unwrap_or_else(|p| p.into_inner());
            let r = f(&mut g.cm, now);
            let events: Vec<_> = std::iter::from_fn(|| g.cm.poll_event()).collect();
            let out: Vec<_> = std::iter::from_fn(|| g.cm.poll_transmit()).collect();
            (r, events, out)
        };
        for e in events {
            self.on_cm_event(ar, e, now);
        }
        for d in out {
            self.send_datagram(ar, d);
        }
        r
    }

    /// Wait until `take` finds what the caller waits for, running the machine's timers while
    /// waiting (every timer of the machine belongs to a service some caller waits for).
    pub(crate) fn cm_wait<T>(
        &self,
        ar: &ArInner,
        mut take: impl FnMut(&mut ArCm) -> Option<T>,
    ) -> T {
        loop {
            {
                let mut g = ar.state.lock().unwrap_or_else(|p| p.into_inner());
                loop {
                    if let Some(t) = take(&mut g) {
                        return t;
                    }
                    let now = rtsched::now();
                    g = match g.cm.poll_timeout() {
                        Some(due) if due <= now => break,
                        Some(due) => {
                            let left = StdDuration::from_nanos((due - now).as_nanos());
                            ar.cond
                                .wait_timeout(g, left)
                                .unwrap_or_else(|p| p.into_inner())
                                .0
                        }
                        None => ar.cond.wait(g).unwrap_or_else(|p| p.into_inner()),
                    };
                }
            }
            self.cm_drive(ar, |m, now| m.handle_timeout(now));
        }
    }

    fn on_cm_event(&self, ar: &ArInner, e: CmctlEvent, now: Instant) {
        let outcome = match e {
            CmctlEvent::Connected(c) => match self.on_connected(ar, &c, now) {
                Ok(()) => {
                    self.set_state(ar, ArState::Parameterizing);
                    return;
                }
                Err(e) => {
                    ar.state
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .cm
                        .abort();
                    Outcome::Established(Err(e))
                }
            },
            CmctlEvent::ParameterEnd => {
                self.set_state(ar, ArState::WaitApplicationReady);
                return;
            }
            CmctlEvent::Established => {
                ar.enter_data_exchange();
                self.set_state(ar, ArState::DataExchange);
                Outcome::Established(Ok(()))
            }
            CmctlEvent::Failed {
                phase: Phase::Release,
                error,
            } => Outcome::Released(Err(error)),
            CmctlEvent::Failed { phase, error } => {
                Outcome::Established(Err(cm_error(ar, phase.service(), error)))
            }
            CmctlEvent::Released => Outcome::Released(Ok(())),
            CmctlEvent::RecordDone { id, result } => Outcome::Record(id, result),
        };
        {
            let mut g = ar.state.lock().unwrap_or_else(|p| p.into_inner());
            match outcome {
                Outcome::Established(r) => {
                    g.established.get_or_insert(r);
                }
                Outcome::Released(r) => g.released = Some(r),
                Outcome::Record(id, r) => {
                    g.records.insert(id, r);
                }
            }
        }
        ar.cond.notify_all();
    }

    /// The device accepted the Connect: its MAC and FrameIDs are known; the provider, the
    /// consumer and the alarm channels start.
    fn on_connected(&self, a: &ArInner, c: &Connected, now: Instant) -> Result<(), Error> {
        let result = &c.response;
        if let Some(d) = &result.module_diff {
            let lines = cmreq::describe_module_diff(d);
            if !lines.is_empty() {
                tracing::warn!(ar = a.id, "ModuleDiffBlock: {}", lines.join("; "));
            }
        }
        *a.module_diff.lock().unwrap_or_else(|p| p.into_inner()) = result.module_diff.clone();
        a.set_mac(c.device_mac);
        let (in_id, out_id) = (c.input_frame_id, c.output_frame_id);
        if in_id != a.ids.input_frame_id {
            tracing::warn!(
                ar = a.id,
                "the device answered input FrameID {in_id:#06x} for the requested {:#06x}; \
                 using the device's",
                a.ids.input_frame_id
            );
        }
        a.frame_ids.store(
            (u32::from(in_id) << 16) | u32::from(out_id),
            Ordering::Release,
        );
        let t = CyclicTiming::new(a.timing.send_clock_factor, a.timing.reduction_ratio)
            .map_err(|e| Error::Config(e.to_string()))?;
        {
            let mut io = a.io.lock().unwrap_or_else(|p| p.into_inner());
            let eth = EthernetRepr {
                dst: a.mac(),
                src: self.info.mac,
                vlan: Some(VlanTag::RT_CYCLIC),
                ethertype: ethernet::ethertype::PROFINET,
            };
            // First slot: the next point of the cyclic thread's tick grid.
            let origin = self.grid_origin.load(Ordering::Acquire);
            let base = u64::from(self.cfg.send_clock_factor.max(1)) * 31_250;
            let first = if origin == 0 || now.0 <= origin {
                Instant(origin.max(now.0))
            } else {
                Instant(origin + (now.0 - origin).div_ceil(base) * base)
            };
            a.tx.lock().unwrap_or_else(|p| p.into_inner()).provider =
                Some(Provider::new(eth, FrameId(out_id), t, first, 0));
            io.consumer = Some(
                Consumer::new(FrameId(in_id), t, a.timing.data_hold_factor, now)
                    .with_source(a.mac())
                    .with_c_sdu_len(a.layout.input.data_length as usize),
            );
            io.started_at = now;
        }
        if let Some(dev_ref) = result.device_alarm_ref {
            let mk = |p| {
                RtaMachine::new(RtaConfig::new(
                    p,
                    a.ids.alarm_ref,
                    dev_ref,
                    a.timing.rta_timeout_factor,
                    a.timing.rta_retries,
                ))
            };
            *a.alarm.lock().unwrap_or_else(|p| p.into_inner()) = Some(crate::alarms::AlarmState {
                high: mk(AlarmPriority::High),
                low: mk(AlarmPriority::Low),
                history: Vec::new(),
                delayed_acks: Vec::new(),
            });
        }
        Ok(())
    }

    /// Send one of the machine's datagrams. The ApplicationReady answer may be held back by
    /// fault injection (an I/O fault: the machine has answered; the answer is late on the
    /// wire).
    fn send_datagram(&self, ar: &ArInner, d: Datagram) {
        let to = SocketAddr::V4(d.to);
        if d.kind == DatagramKind::ApplicationReadyResponse {
            let fault = ar
                .faults
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .app_ready;
            if let AppReadyFault::Delay(delay) = fault {
                tracing::info!(?delay, "fault injection: ApplicationReady response delayed");
                if let Ok(u) = self.udp.try_clone() {
                    std::thread::spawn(move || {
                        std::thread::sleep(delay);
                        let _ = u.send_to(&d.bytes, to);
                    });
                }
                return;
            }
        }
        // One socket serves as the client and the server endpoint (`d.via`).
        let _ = self.udp.send_to(&d.bytes, to);
    }

    /// An RPC call without an AR (implicit read): the protocol crate's RPC client, fed with
    /// the datagrams of its activity that the RPC thread hands over.
    fn rpc_call_once(
        &self,
        mut client: RpcClient,
        opnum: u16,
        ndr_data: Vec<u8>,
        args_max: u32,
    ) -> Result<PnioResponse, Error> {
        let (tx, rx) = mpsc::channel();
        let activity = client.activity();
        self.rpc_waiters
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(activity, tx);
        let server = client.server();
        let res = (|| {
            client
                .start(rtsched::now(), opnum, ndr_data, args_max)
                .map_err(|e| call_error(server, e))?;
            loop {
                while let Some(b) = client.poll_transmit() {
                    self.udp.send_to(&b, server).map_err(Error::Io)?;
                }
                let now = rtsched::now();
                let due = client.poll_timeout().unwrap_or(now);
                let done = match rx.recv_timeout(StdDuration::from_nanos((due - now).as_nanos())) {
                    Ok(b) => match RpcPacket::parse(&b) {
                        Ok(p) => client.handle_packet(rtsched::now(), &p),
                        Err(_) => None,
                    },
                    Err(_) => client.handle_timeout(rtsched::now()),
                };
                if let Some(r) = done {
                    return r.map_err(|e| call_error(server, e));
                }
            }
        })();
        self.rpc_waiters
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&activity);
        res
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
                if d.service_type.is_response() {
                    let w = self.dcp_waiters.lock().unwrap_or_else(|p| p.into_inner());
                    if let Some(s) = w.get(&d.xid) {
                        let _ = s.send((eth.src, d));
                    }
                }
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

    fn on_alarm_frame(&self, ar: &Arc<ArInner>, frame_id: u16, pdu: &[u8], now: Instant) {
        let mut events = Vec::new();
        {
            let mut g = ar.alarm.lock().unwrap_or_else(|p| p.into_inner());
            let Some(st) = g.as_mut() else { return };
            let m = if frame_id == wrta::FRAME_ID_ALARM_HIGH {
                &mut st.high
            } else {
                &mut st.low
            };
            m.handle(pdu, now);
            while let Some(e) = m.poll_event() {
                events.push((frame_id, e));
            }
        }
        self.handle_rta_events(ar, events, now);
        self.flush_alarm_tx(ar, now);
    }

    fn handle_rta_events(&self, ar: &Arc<ArInner>, events: Vec<(u16, RtaEvent)>, now: Instant) {
        for (fid, e) in events {
            match e {
                RtaEvent::Received(var) => match AlarmPdu::parse(&var) {
                    Ok(AlarmPdu::Notification(n)) => {
                        ar.alarms_received.fetch_add(1, Ordering::Relaxed);
                        let rec = AlarmRecord::from_notification(&n);
                        tracing::info!(ar = ar.id, alarm = ?rec, "alarm received");
                        let fault = ar
                            .faults
                            .lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .alarm_ack;
                        let ack = n.ack(PnioStatus::OK);
                        let mut w = Writer::new();
                        if ack.emit(&mut w).is_ok() {
                            let mut g = ar.alarm.lock().unwrap_or_else(|p| p.into_inner());
                            if let Some(st) = g.as_mut() {
                                st.history.push(rec.clone());
                                match fault {
                                    AlarmAckFault::Normal => {
                                        let m = if fid == wrta::FRAME_ID_ALARM_HIGH {
                                            &mut st.high
                                        } else {
                                            &mut st.low
                                        };
                                        let _ = m.send_alarm(w.into_inner(), now);
                                    }
                                    AlarmAckFault::Delay(d) => {
                                        st.delayed_acks.push((
                                            now + Duration::from(d),
                                            fid,
                                            w.into_inner(),
                                        ));
                                    }
                                    AlarmAckFault::Never | AlarmAckFault::NoTransportAck => {}
                                }
                            }
                        }
                        self.emit(Event::Alarm {
                            ar: ar.id,
                            station: ar.model.station_name.clone(),
                            alarm: rec,
                        });
                    }
                    Ok(AlarmPdu::Ack(_)) => {}
                    Err(e) => tracing::warn!(ar = ar.id, "undecodable alarm block: {e}"),
                },
                RtaEvent::PeerAbort(st) => {
                    self.emit(Event::DeviceAbort {
                        ar: ar.id,
                        station: ar.model.station_name.clone(),
                        status: pn_protocol::wire::rta::abort_reason::status_text(st),
                    });
                    self.set_state(
                        ar,
                        ArState::Aborted(format!(
                            "device sent ERR-RTA {}",
                            pn_protocol::wire::rta::abort_reason::status_text(st)
                        )),
                    );
                }
                RtaEvent::Timeout { .. } => {
                    self.set_state(ar, ArState::Aborted("alarm transport timeout".into()));
                }
                RtaEvent::Delivered { .. } | RtaEvent::SequenceError { .. } => {}
            }
        }
    }

    pub(crate) fn flush_alarm_tx(&self, ar: &ArInner, now: Instant) {
        let mut out = Vec::new();
        {
            let mut g = ar.alarm.lock().unwrap_or_else(|p| p.into_inner());
            let Some(st) = g.as_mut() else { return };
            let no_tack = ar
                .faults
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .alarm_ack
                == AlarmAckFault::NoTransportAck;
            // Delayed AlarmAcks whose time has come.
            let mut i = 0;
            while i < st.delayed_acks.len() {
                if st.delayed_acks[i].0 <= now {
                    let (_, fid, b) = st.delayed_acks.remove(i);
                    let m = if fid == wrta::FRAME_ID_ALARM_HIGH {
                        &mut st.high
                    } else {
                        &mut st.low
                    };
                    let _ = m.send_alarm(b, now);
                } else {
                    i += 1;
                }
            }
            for m in [&mut st.high, &mut st.low] {
                m.poll(now);
                while let Some(tx) = m.poll_transmit() {
                    if no_tack && tx.pdu.pdu_type == RtaPduType::Ack {
                        continue;
                    }
                    out.push(tx);
                }
            }
        }
        for tx in out {
            let vlan = if tx.frame_id == wrta::FRAME_ID_ALARM_HIGH {
                VlanTag::RT_ALARM_HIGH
            } else {
                VlanTag::RT_ALARM_LOW
            };
            let eth = EthernetRepr {
                dst: ar.mac(),
                src: self.info.mac,
                vlan: Some(vlan),
                ethertype: ethernet::ethertype::PROFINET,
            };
            let f = eth.build(&tx.rt_payload());
            let _ = self.send_frame(&f);
        }
    }

    fn poll_alarms(&self, now: Instant) {
        let ars = self.ars.read().unwrap_or_else(|p| p.into_inner()).clone();
        for ar in ars {
            let mut events = Vec::new();
            {
                let mut g = ar.alarm.lock().unwrap_or_else(|p| p.into_inner());
                if let Some(st) = g.as_mut() {
                    for (fid, m) in [
                        (wrta::FRAME_ID_ALARM_HIGH, &mut st.high),
                        (wrta::FRAME_ID_ALARM_LOW, &mut st.low),
                    ] {
                        m.poll(now);
                        while let Some(e) = m.poll_event() {
                            events.push((fid, e));
                        }
                    }
                }
            }
            self.handle_rta_events(&ar, events, now);
            self.flush_alarm_tx(&ar, now);
        }
    }

    /// A datagram on the PNIO-CM socket: routed to the AR's machine (a response to its call,
    /// or the device's ApplicationReady), to an implicit call, or answered without an AR.
    fn on_udp(&self, buf: &[u8], from: SocketAddr) {
        let SocketAddr::V4(from4) = from else { return };
        let find = |pred: &dyn Fn(&ArInner) -> bool| {
            let ars = self.ars.read().unwrap_or_else(|e| e.into_inner());
            ars.iter().find(|a| pred(a)).cloned()
        };
        match server::classify(buf) {
            Inbound::Call { activity } => {
                if let Some(ar) = find(&|a| a.activity == activity) {
                    self.cm_drive(&ar, |m, now| m.handle_datagram(now, from4, buf));
                    return;
                }
                let w = self.rpc_waiters.lock().unwrap_or_else(|e| e.into_inner());
                if let Some(s) = w.get(&activity) {
                    let _ = s.send(buf.to_vec());
                }
            }
            Inbound::ApplicationReady { ar_uuid } => match find(&|a| a.ids.ar_uuid == ar_uuid) {
                Some(ar) => {
                    let fault = ar
                        .faults
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .app_ready;
                    if fault == AppReadyFault::Drop {
                        // As if the request were lost: no answer, and the AR does not enter
                        // data exchange (the device's retries meet the same fault).
                        tracing::info!("fault injection: ApplicationReady response dropped");
                        return;
                    }
                    self.cm_drive(&ar, |m, now| m.handle_datagram(now, from4, buf));
                }
                None => {
                    if let Some(b) = server::refuse_unknown_ar(buf) {
                        let _ = self.udp.send_to(&b, from);
                    }
                }
            },
            Inbound::Refuse(b) => {
                let _ = self.udp.send_to(&b, from);
            }
            Inbound::Ignore => {}
        }
    }

    // ------------------------------------------------------------------------------------
    // Cyclic
    // ------------------------------------------------------------------------------------

    /// One tick: `slot` is the scheduled tick time (providers are aligned to it, so a late
    /// wake-up does not shift the send schedule). `list` is the cyclic thread's copy of the
    /// ARs, refreshed here when `ars_gen` changed and the list lock is free at once.
    fn cyclic_tick(&self, slot: Instant, list: &mut (u64, Vec<Arc<ArInner>>)) {
        let gen = self.ars_gen.load(Ordering::Acquire);
        if gen != list.0 {
            if let Ok(ars) = self.ars.try_read() {
                list.1.clone_from(&ars);
                list.0 = gen;
            }
        }
        for ar in list.1.iter() {
            ar.send_outputs(self, slot);
        }
    }

    /// Add or remove ARs (the only writers of `ars`).
    pub(crate) fn edit_ars(&self, f: impl FnOnce(&mut Vec<Arc<ArInner>>)) {
        let mut ars = self.ars.write().unwrap_or_else(|p| p.into_inner());
        f(&mut ars);
        self.ars_gen.fetch_add(1, Ordering::Release);
    }

    /// Run the consumer watchdogs. Called by the receive thread only when its queue is
    /// drained: a watchdog judged anywhere else (the cyclic thread did, before) trips falsely
    /// when the receive thread was merely preempted while the device's frames sat in the socket
    /// queue; here every frame that arrived has been consumed first.
    fn check_watchdogs(&self, now: Instant) {
        // A copy of the list: the work below (alarm lock, sends, events) must not keep the
        // list's read lock, behind which a connect or release waiting to write would block
        // every other reader.
        let ars = self.ars.read().unwrap_or_else(|p| p.into_inner()).clone();
        for ar in ars.iter() {
            if ar.watchdog_expired(now) {
                // Tell the device at once (ERR-RTA "consumer DHT expired"), as a controller
                // aborting the AR does, instead of leaving it to its own watchdog. A blocking
                // lock (this is the receive thread, not the cyclic one; the other holders,
                // `abort` and the connect's set-up, never wait for this thread), then the
                // flush that sends the ERR-RTA now rather than at the next alarm poll.
                {
                    let mut g = ar.alarm.lock().unwrap_or_else(|p| p.into_inner());
                    if let Some(st) = g.as_mut() {
                        st.low.abort(wrta::abort_reason::status(
                            wrta::abort_reason::AR_CONSUMER_DHT_EXPIRED,
                        ));
                    }
                }
                self.flush_alarm_tx(ar, now);
                self.emit(Event::WatchdogExpired {
                    ar: ar.id,
                    station: ar.model.station_name.clone(),
                });
                self.set_state(
                    ar,
                    ArState::Aborted("consumer watchdog expired (no input frames)".into()),
                );
            }
        }
    }
}

impl ArInner {
    pub(crate) fn mac(&self) -> MacAddr {
        let b = self.device_mac.load(Ordering::Acquire).to_be_bytes();
        MacAddr([b[2], b[3], b[4], b[5], b[6], b[7]])
    }

    pub(crate) fn set_mac(&self, m: MacAddr) {
        let mut b = [0u8; 8];
        b[2..].copy_from_slice(&m.0);
        self.device_mac
            .store(u64::from_be_bytes(b), Ordering::Release);
    }

    pub(crate) fn frame_ids(&self) -> (u16, u16) {
        let v = self.frame_ids.load(Ordering::Acquire);
        ((v >> 16) as u16, v as u16)
    }

    fn state(&self) -> ArState {
        self.state
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .state
            .clone()
    }

    /// Restart the consumer watchdog when data exchange begins.
    fn enter_data_exchange(&self) {
        let now = rtsched::now();
        let mut io = self.io.lock().unwrap_or_else(|p| p.into_inner());
        let (in_id, _) = self.frame_ids();
        if let Ok(t) = CyclicTiming::new(self.timing.send_clock_factor, self.timing.reduction_ratio)
        {
            // The first frame within first_frame_timeout, then DataHoldFactor x cycle.
            let c = Consumer::new(FrameId(in_id), t, self.timing.data_hold_factor, now)
                .with_source(self.mac())
                .with_c_sdu_len(self.layout.input.data_length as usize);
            if let Some(old) = io.consumer.replace(c) {
                let o = old.stats();
                let b = &mut io.consumer_base;
                b.received += o.received;
                b.new_data += o.new_data;
                b.invalid += o.invalid;
                b.duplicates += o.duplicates;
                b.watchdog_expiries += o.watchdog_expiries;
            }
        }
    }

    fn on_input_frame(&self, now: Instant, src: MacAddr, payload: &[u8]) {
        let (status, range) = {
            let mut io = self.io.lock().unwrap_or_else(|p| p.into_inner());
            let Some(c) = io.consumer.as_mut() else {
                return;
            };
            match c.on_rt_payload(now, src, payload) {
                RxOutcome::NewData { status, c_sdu } => (status, c_sdu),
                _ => return,
            }
        };
        let Some(sdu) = payload.get(range.0..range.1) else {
            return;
        };
        // Never wait for an API reader: if it holds the inputs, this frame's copy is skipped
        // (the next one follows within a cycle).
        let Ok(mut inp) = self.inputs.try_lock() else {
            return;
        };
        let inp = &mut *inp;
        if inp.data.len() != self.layout.input.area_len as usize {
            inp.data.resize(self.layout.input.area_len as usize, 0);
            inp.iops.resize(self.layout.input.data.len(), 0);
            inp.iocs.resize(self.layout.input.iocs.len(), 0);
        }
        for (i, d) in self.layout.input.data.iter().enumerate() {
            let off = d.frame_offset as usize;
            let len = d.data_len as usize;
            let a = d.area_offset as usize;
            if let (Some(src), Some(dst)) = (sdu.get(off..off + len), inp.data.get_mut(a..a + len))
            {
                dst.copy_from_slice(src);
            }
            if let Some(x) = inp.iops.get_mut(i) {
                *x = sdu.get(off + len).copied().unwrap_or(0);
            }
        }
        for (i, d) in self.layout.input.iocs.iter().enumerate() {
            if let Some(x) = inp.iocs.get_mut(i) {
                *x = sdu.get(d.frame_offset as usize).copied().unwrap_or(0);
            }
        }
        inp.data_status = Some(status.data_status.0);
        inp.cycle_counter = Some(status.cycle_counter);
        inp.valid = true;
    }

    /// True when the consumer watchdog expired during data exchange (see
    /// [`Shared::check_watchdogs`] for who calls this and why).
    fn watchdog_expired(&self, now: Instant) -> bool {
        if self.phase.load(Ordering::Acquire) != phase::DATA_EXCHANGE
            || self.releasing.load(Ordering::Acquire)
        {
            return false;
        }
        let mut io = self.io.lock().unwrap_or_else(|p| p.into_inner());
        matches!(
            io.consumer.as_mut().and_then(|c| c.poll(now)),
            Some(ConsumerEvent::WatchdogExpired)
        )
    }

    /// `Faults::first_output_after_app_ready`: no output frame yet.
    fn holding_first_output(&self, f: &Faults, ph: u8, slot: Instant) -> bool {
        let Some(d) = f.first_output_after_app_ready else {
            return false;
        };
        let since = self.data_since_ns.load(Ordering::Acquire);
        ph != phase::DATA_EXCHANGE
            || since == 0
            || slot.as_nanos() < since.saturating_add(d.as_nanos() as u64)
    }

    /// Build and send the output frame if due.
    fn send_outputs(&self, sh: &Shared, slot: Instant) {
        let ph = self.phase.load(Ordering::Acquire);
        if !matches!(
            ph,
            phase::PARAMETERIZING | phase::WAIT_APP_READY | phase::DATA_EXCHANGE
        ) {
            return;
        }
        let mut io = self.tx.lock().unwrap_or_else(|p| p.into_inner());
        let io = &mut *io;
        if let Ok(g) = self.faults.try_lock() {
            io.faults = *g;
        }
        let f = io.faults;
        let Some(p) = io.provider.as_mut() else {
            return;
        };
        // Fill the C_SDU: data + IOPS per output object, IOCS per input object.
        let l = &self.layout.output;
        if io.c_sdu.len() != l.data_length as usize {
            io.c_sdu.clear();
            io.c_sdu.resize(l.data_length as usize, 0);
        }
        // Never wait for an API writer: keep the previous data when it holds the outputs.
        let outputs = self.outputs.try_lock().ok();
        let iops = if f.bad_iops {
            Ioxs::BAD.0
        } else {
            Ioxs::GOOD.0
        };
        for d in &l.data {
            let off = d.frame_offset as usize;
            let len = d.data_len as usize;
            let a = d.area_offset as usize;
            if let (Some(dst), Some(src)) = (
                io.c_sdu.get_mut(off..off + len),
                outputs.as_ref().and_then(|o| o.get(a..a + len)),
            ) {
                dst.copy_from_slice(src);
            }
            if let Some(b) = io.c_sdu.get_mut(off + len) {
                *b = iops;
            }
        }
        drop(outputs);
        for d in &l.iocs {
            if let Some(b) = io.c_sdu.get_mut(d.frame_offset as usize) {
                *b = Ioxs::GOOD.0;
            }
        }
        let ds = DataStatus::RUNNING
            .with_provider_run(!f.provider_stop)
            .with_data_valid(!f.data_invalid);
        p.set_data_status(ds);
        let sent = match p.poll_send(slot, &io.c_sdu, &mut io.frame) {
            Ok(Some(n)) => Some(n),
            _ => None,
        };
        let st = p.stats();
        self.provider_sent.store(st.frames_sent, Ordering::Relaxed);
        self.provider_missed
            .store(st.missed_slots, Ordering::Relaxed);
        if let Some(n) = sent {
            if f.stop_outputs || self.holding_first_output(&f, ph, slot) {
                return;
            }
            let frame = &mut io.frame[..n];
            let h = if frame.get(12..14) == Some(&[0x81, 0x00]) {
                18
            } else {
                14
            };
            if let Some(id) = f.frame_id_override {
                if let Some(b) = frame.get_mut(h..h + 2) {
                    b.copy_from_slice(&id.to_be_bytes());
                }
            }
            if f.corrupt_frames {
                // Cut the frame after half of the C_SDU: the device sees a wrong length.
                let cut = (h + 2 + l.data_length as usize / 2).min(n);
                let _ = sh.send_frame(&frame[..cut.max(ethernet::MIN_FRAME_LEN.min(n))]);
                let _ = sh.send_frame(&frame[..h + 4]);
            } else {
                let _ = sh.send_frame(frame);
                if f.duplicate_frames {
                    let _ = sh.send_frame(frame);
                }
            }
        }
    }
}

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
        let seed = u32::from_le_bytes(random_bytes::<4>());
        let shared = Arc::new(Shared {
            cfg: cfg.clone(),
            info,
            sock,
            udp,
            stop: AtomicBool::new(false),
            dcp_waiters: Mutex::new(HashMap::new()),
            rpc_waiters: Mutex::new(HashMap::new()),
            ars: RwLock::new(Vec::new()),
            ars_gen: AtomicU64::new(0),
            events: Mutex::new(Vec::new()),
            next_id: AtomicU32::new(1),
            frame_slots: Mutex::new(HashMap::new()),
            xid: AtomicU32::new(seed),
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

    /// Connect to a device: resolve it over DCP, Connect, write parameters, PrmEnd, wait for
    /// ApplicationReady. Returns when data exchange runs (or with the reason it does not).
    pub fn connect(&self, cfg: ArConfig) -> Result<ArHandle, Error> {
        let sh = &self.shared;
        let mut model = cfg.model.clone();
        model.validate().map_err(Error::Config)?;
        let station = model.station_name.clone();
        let dev = self.dcp_identify_name(&station, StdDuration::from_millis(1000))?;
        let device_ip = match (cfg.device_ip, dev.as_ref().and_then(|d| d.ip)) {
            (Some(want), Some(have)) if want == have => want,
            (Some(want), Some(_)) if cfg.assign_ip => {
                let mac = dev.as_ref().map(|d| d.mac).unwrap_or(MacAddr::ZERO);
                self.dcp_set_ip(
                    mac,
                    want,
                    Ipv4Addr::new(255, 255, 255, 0),
                    Ipv4Addr::UNSPECIFIED,
                    false,
                )?;
                want
            }
            // Without a DCP answer the device is reached by its given IP; its MAC comes from
            // the ARBlockRes (CMResponderMacAdd).
            (Some(want), _) => want,
            (None, Some(have)) if !have.is_unspecified() => have,
            (None, None) if dev.is_none() => {
                return Err(Error::NotFound(format!(
                    "no device answers DCP Identify for '{station}' (give its IP to connect without DCP)"
                )))
            }
            _ => {
                return Err(Error::Config(format!(
                    "device '{station}' has no IP address; give one"
                )))
            }
        };
        let layout = model.layout();
        let id = sh.next_id.fetch_add(1, Ordering::Relaxed);
        let ids = ArIds {
            ar_uuid: random_uuid(),
            session_key: (id as u16).wrapping_add(1),
            initiator_mac: sh.info.mac.0,
            initiator_object: Uuid::pnio_object(1, 0x0001, 0x00FF),
            station_name: sh.cfg.station_name.clone(),
            input_frame_id: cfg
                .timing
                .startup
                .input_frame_id(sh.frame_slot(&model.station_name)),
            alarm_ref: id as u16,
        };
        let mut timing = cfg.timing;
        timing.send_clock_factor = sh.cfg.send_clock_factor;
        let mut outputs = cfg.initial_outputs.clone();
        outputs.resize(layout.output.area_len as usize, 0);
        let connect_request = cmreq::connect_request(&model, &layout, &ids, &timing)
            .map_err(Error::Config)?
            .emit()
            .map_err(|e| Error::Protocol(format!("cannot encode Connect: {e}")))?;
        // Parameter records, written between the Connect and PrmEnd.
        let parameters = model
            .submodules()
            .flat_map(|(m, s)| {
                s.params.iter().map(move |p| {
                    (
                        RecordAddress::new(0, m.slot, s.subslot, p.index),
                        p.data.clone(),
                    )
                })
            })
            .collect();
        let activity = random_uuid();
        let cm_cfg = CmctlConfig {
            ar_uuid: ids.ar_uuid,
            session_key: ids.session_key,
            device: SocketAddrV4::new(device_ip, pn_protocol::wire::ip::PNIO_CM_PORT),
            object: Uuid::pnio_object(1, model.device_id, model.vendor_id),
            activity,
            device_mac: dev.as_ref().map(|d| d.mac).unwrap_or(MacAddr::ZERO),
            connect_request,
            parameters,
            first_record_seq: 1,
            rpc: rpc_client_config(&sh.cfg),
            app_ready_timeout: Duration::from(cfg.app_ready_timeout),
        };
        let ar = Arc::new(ArInner {
            id,
            activity,
            // The machine starts with its Connect request queued; it goes out from
            // `establish`, once the AR is in the list the RPC thread routes answers by.
            state: Mutex::new(ArCm {
                state: ArState::Connecting,
                cm: Cmctl::new(cm_cfg, rtsched::now()),
                established: None,
                records: HashMap::new(),
                released: None,
            }),
            cond: Condvar::new(),
            io: Mutex::new(ArIo {
                consumer: None,
                consumer_base: ConsumerStats::default(),
                started_at: rtsched::now(),
            }),
            tx: Mutex::new(ArTx {
                provider: None,
                c_sdu: Vec::with_capacity(1500),
                frame: vec![0u8; 1600],
                faults: cfg.faults,
            }),
            provider_sent: AtomicU64::new(0),
            provider_missed: AtomicU64::new(0),
            outputs: Mutex::new(outputs),
            inputs: Mutex::new(Inputs::default()),
            phase: AtomicU8::new(phase::CONNECTING),
            data_since_ns: AtomicU64::new(0),
            releasing: AtomicBool::new(false),
            faults: Mutex::new(cfg.faults),
            // The output FrameID is the device's choice, known from the Connect response.
            frame_ids: AtomicU32::new(
                (u32::from(ids.input_frame_id) << 16) | u32::from(FRAME_ID_DEVICE_CHOOSES),
            ),
            alarm: Mutex::new(None),
            module_diff: Mutex::new(None),
            alarms_received: AtomicU64::new(0),
            model,
            layout,
            timing,
            ids,
            device_mac: AtomicU64::new(0),
            device_ip,
        });
        ar.set_mac(dev.as_ref().map(|d| d.mac).unwrap_or(MacAddr::ZERO));
        sh.edit_ars(|ars| ars.push(ar.clone()));
        let h = ArHandle {
            shared: sh.clone(),
            ar: ar.clone(),
        };
        match h.establish() {
            Ok(()) => Ok(h),
            Err(e) => {
                sh.cm_drive(&ar, |m, _| m.abort());
                // When the device accepted the Connect, it holds the AR: tell it (ERR-RTA)
                // instead of leaving it to hold the AR until its own timeout (p-net refused
                // new Connects for about a minute after an abandoned start-up).
                h.send_abort(wrta::abort_reason::AR_ABORT_REQ);
                sh.set_state(&ar, ArState::Aborted(e.to_string()));
                h.remove();
                Err(e)
            }
        }
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

impl ArHandle {
    /// Connect .. ApplicationReady: the machine runs (the RPC thread feeds it the device's
    /// datagrams); this waits for its outcome, or for the AR to end otherwise (an alarm
    /// channel's abort).
    fn establish(&self) -> Result<(), Error> {
        let (sh, a) = (&self.shared, &self.ar);
        // Send the queued Connect request.
        sh.cm_drive(a, |_, _| ());
        sh.cm_wait(a, |g| {
            if let Some(r) = g.established.take() {
                return Some(r);
            }
            match &g.state {
                ArState::Released | ArState::Aborted(_) => {
                    Some(Err(Error::Aborted(format!("{:?}", g.state))))
                }
                _ => None,
            }
        })
    }

    /// Wait until `pred(state)` holds or `timeout` passes; returns the state then.
    pub fn wait_state(&self, pred: impl Fn(&ArState) -> bool, timeout: StdDuration) -> ArState {
        let deadline = std::time::Instant::now() + timeout;
        let mut g = self.ar.state.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if pred(&g.state) {
                return g.state.clone();
            }
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return g.state.clone();
            }
            g = self
                .ar
                .cond
                .wait_timeout(g, left)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    /// AR id (unique within the controller).
    pub fn id(&self) -> u32 {
        self.ar.id
    }

    pub fn station_name(&self) -> &str {
        &self.ar.model.station_name
    }

    pub fn layout(&self) -> &IoLayout {
        &self.ar.layout
    }

    pub fn state(&self) -> ArState {
        self.ar.state()
    }

    /// Write output data (PROFINET outputs, linear area) at `offset`; sent with the next frame.
    pub fn set_outputs(&self, offset: usize, data: &[u8]) -> Result<(), Error> {
        let mut o = self.ar.outputs.lock().unwrap_or_else(|p| p.into_inner());
        let len = o.len();
        let end = offset
            .checked_add(data.len())
            .filter(|e| *e <= len)
            .ok_or_else(|| Error::Config(format!("outputs are {len} bytes long")))?;
        o[offset..end].copy_from_slice(data);
        Ok(())
    }

    /// The current output area.
    pub fn outputs(&self) -> Vec<u8> {
        self.ar
            .outputs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The latest inputs.
    pub fn inputs(&self) -> Inputs {
        self.ar
            .inputs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Change fault injection settings (takes effect on the next cycle).
    pub fn set_faults(&self, f: Faults) {
        *self.ar.faults.lock().unwrap_or_else(|p| p.into_inner()) = f;
    }

    pub fn faults(&self) -> Faults {
        *self.ar.faults.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Alarms received so far.
    pub fn alarms(&self) -> Vec<AlarmRecord> {
        self.ar
            .alarm
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            .map(|s| s.history.clone())
            .unwrap_or_default()
    }

    /// The ModuleDiffBlock of the Connect response, if the device sent one.
    pub fn module_diff(&self) -> Option<ModuleDiffBlock> {
        self.ar
            .module_diff
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    pub fn status(&self) -> ArStatus {
        let (sent, missed) = (
            self.ar.provider_sent.load(Ordering::Relaxed),
            self.ar.provider_missed.load(Ordering::Relaxed),
        );
        let cs = {
            let io = self.ar.io.lock().unwrap_or_else(|p| p.into_inner());
            let c = io.consumer.as_ref().map(|c| c.stats()).unwrap_or_default();
            let b = io.consumer_base;
            ConsumerStats {
                received: b.received + c.received,
                new_data: b.new_data + c.new_data,
                invalid: b.invalid + c.invalid,
                duplicates: b.duplicates + c.duplicates,
                watchdog_expiries: b.watchdog_expiries + c.watchdog_expiries,
            }
        };
        let (i, o) = self.ar.frame_ids();
        ArStatus {
            id: self.ar.id,
            station_name: self.ar.model.station_name.clone(),
            device_mac: self.ar.mac().to_string(),
            device_ip: self.ar.device_ip.to_string(),
            state: self.ar.state(),
            cycle_us: self.ar.timing.cycle_ns() / 1000,
            input_frame_id: i,
            output_frame_id: o,
            frames_sent: sent,
            missed_send_slots: missed,
            frames_received: cs.received,
            frames_new_data: cs.new_data,
            frames_invalid: cs.invalid,
            frames_duplicate: cs.duplicates,
            watchdog_expiries: cs.watchdog_expiries,
            alarms_received: self.ar.alarms_received.load(Ordering::Relaxed),
            module_diff: self
                .ar
                .module_diff
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .as_ref()
                .map(cmreq::describe_module_diff)
                .unwrap_or_default(),
        }
    }

    /// Read a record within the AR.
    pub fn read_record(
        &self,
        slot: u16,
        subslot: u16,
        index: u16,
        max_len: u32,
    ) -> Result<Vec<u8>, Error> {
        let addr = RecordAddress::new(self.ar.model.api, slot, subslot, index);
        let id = self
            .shared
            .cm_drive(&self.ar, |m, now| m.read_record(now, addr, max_len));
        let r = self.shared.cm_wait(&self.ar, |g| g.records.remove(&id));
        r.map_err(|e| cm_error(&self.ar, "Read", e))
    }

    /// Write a record within the AR.
    pub fn write_record(
        &self,
        slot: u16,
        subslot: u16,
        index: u16,
        data: &[u8],
    ) -> Result<(), Error> {
        let addr = RecordAddress::new(self.ar.model.api, slot, subslot, index);
        let id = self
            .shared
            .cm_drive(&self.ar, |m, now| m.write_record(now, addr, data));
        let r = self.shared.cm_wait(&self.ar, |g| g.records.remove(&id));
        r.map(|_| ()).map_err(|e| cm_error(&self.ar, "Write", e))
    }

    /// Read I&M`n` (0..=4) of a submodule (DAP: slot 0, subslot 1) and decode it.
    pub fn read_im(&self, slot: u16, subslot: u16, n: u8) -> Result<ImRecord, Error> {
        let idx = record::index::IM0 + u16::from(n.min(15));
        let data = self.read_record(slot, subslot, idx, 256)?;
        ImRecord::parse(&data).map_err(|e| Error::Protocol(format!("I&M{n}: {e}")))
    }

    /// Write an I&M1..4 record (encoded with its block header, as the standard requires).
    pub fn write_im(&self, slot: u16, subslot: u16, rec: &ImRecord) -> Result<(), Error> {
        let idx = match rec {
            ImRecord::Im1(_) => record::index::IM1,
            ImRecord::Im2(_) => record::index::IM2,
            ImRecord::Im3(_) => record::index::IM3,
            ImRecord::Im4(_) => record::index::IM4,
            _ => return Err(Error::Config("only I&M1..4 are writable".into())),
        };
        let data = rec.to_bytes().map_err(|e| Error::Protocol(e.to_string()))?;
        self.write_record(slot, subslot, idx, &data)
    }

    /// Orderly end: Release, then stop the provider.
    pub fn release(&self) -> Result<(), Error> {
        // The device stops its provider when it takes the Release: the input frames end
        // before its answer, so the consumer's watchdog must not judge them any more.
        self.ar.releasing.store(true, Ordering::Release);
        self.shared.cm_drive(&self.ar, |m, now| m.release(now));
        let r = self.shared.cm_wait(&self.ar, |g| g.released.clone());
        self.shared.set_state(&self.ar, ArState::Released);
        self.remove();
        r.map_err(|e| cm_error(&self.ar, "Release", e))
    }

    /// Send ERR-RTA with `reason` on the low alarm channel, if the AR got as far as having
    /// one (the Connect was accepted).
    fn send_abort(&self, reason: u8) {
        let now = rtsched::now();
        {
            let mut g = self.ar.alarm.lock().unwrap_or_else(|p| p.into_inner());
            match g.as_mut() {
                Some(st) => st.low.abort(wrta::abort_reason::status(reason)),
                None => return,
            }
        }
        self.shared.flush_alarm_tx(&self.ar, now);
    }

    /// Abort the AR: send ERR-RTA (AR abort request) on the low alarm channel and stop.
    pub fn abort(&self) {
        self.shared.cm_drive(&self.ar, |m, _| m.abort());
        self.send_abort(wrta::abort_reason::AR_ABORT_REQ);
        self.shared.set_state(
            &self.ar,
            ArState::Aborted("aborted by the controller".into()),
        );
        self.remove();
    }

    fn remove(&self) {
        self.shared
            .edit_ars(|ars| ars.retain(|a| !Arc::ptr_eq(a, &self.ar)));
    }
}

/// What the shell waits for, from one machine event.
enum Outcome {
    Established(Result<(), Error>),
    Released(Result<(), CmctlError>),
    Record(RecordId, Result<Vec<u8>, CmctlError>),
}

/// The RPC client's timing from the controller's configuration.
fn rpc_client_config(cfg: &ControllerConfig) -> RpcClientConfig {
    RpcClientConfig {
        timeout: Duration::from(cfg.rpc_timeout),
        retries: cfg.rpc_retries,
        ..RpcClientConfig::default()
    }
}

fn call_error(server: SocketAddrV4, e: CallError) -> Error {
    match e {
        CallError::Timeout { opnum } => Error::Timeout(format!(
            "no RPC response from {} (opnum {opnum})",
            server.ip()
        )),
        CallError::Fault(st) => Error::RpcFault(st),
        CallError::Protocol(s) => Error::Protocol(s),
    }
}

/// The controller's error for a failed step or record service (`what`: the service's name).
fn cm_error(ar: &ArInner, what: &'static str, e: CmctlError) -> Error {
    match e {
        CmctlError::Call(c) => call_error(SocketAddrV4::new(ar.device_ip, 0), c),
        CmctlError::Rejected(status) => Error::Rejected { what, status },
        CmctlError::Protocol(s) => Error::Protocol(s),
        CmctlError::NoApplicationReady => {
            Error::Timeout("no ApplicationReady from the device".into())
        }
        CmctlError::Aborted => Error::Aborted(format!("{what}: the AR ended")),
    }
}

/// Implicit read (no AR needed): Read Implicit to the device's IP.
pub(crate) fn read_implicit(
    sh: &Shared,
    ip: Ipv4Addr,
    vendor_id: u16,
    device_id: u16,
    addr: RecordAddress,
    max_len: u32,
) -> Result<Vec<u8>, Error> {
    let hdr = ReadReqHeaderRepr {
        seq_number: 0,
        ar_uuid: record::NIL_UUID,
        address: addr,
        record_data_length: max_len,
        target_ar_uuid: record::NIL_UUID,
    };
    let req = ReadRequest::new(hdr)
        .to_bytes()
        .map_err(|e| Error::Protocol(e.to_string()))?;
    let client = RpcClient::new(
        rpc_client_config(&sh.cfg),
        SocketAddrV4::new(ip, pn_protocol::wire::ip::PNIO_CM_PORT),
        Uuid::pnio_object(1, device_id, vendor_id),
        random_uuid(),
        0,
    );
    let resp = sh.rpc_call_once(
        client,
        rpc::opnum::READ_IMPLICIT,
        req,
        max_len.saturating_add(64),
    )?;
    cmctl::read_result(&resp).map_err(|e| match e {
        CmctlError::Rejected(status) => Error::Rejected {
            what: "Read",
            status,
        },
        other => Error::Protocol(other.to_string()),
    })
}

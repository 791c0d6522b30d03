//! The narrow interface between the service runtime and the PROFINET stack on the wire.
//!
//! The runtime (`runtime.rs`) owns exactly one `Box<dyn DataPlane>` for the life of the daemon.
//! It never talks to sockets itself; everything on the wire happens behind this trait. The
//! PROFINET stack (`device/src/stack/`, DCP, LLDP, RPC/CM, cyclic RT thread, alarms over RTA)
//! implements [`DataPlane`]. Until it exists, [`RawSocketPlane`] implements the trait with the
//! *real* driver probe and link monitoring and runs no PROFINET at all: its state never goes
//! beyond `Initialized` and it never claims a connection.
//!
//! # Call protocol (runtime -> plane)
//!
//! All trait methods are called from a blocking context (`tokio::task::spawn_blocking`), never
//! concurrently with each other (the runtime serialises them), and may take seconds.
//!
//! 1. [`DataPlane::probe`] before every start: can this NIC be used (exists, raw `AF_PACKET`
//!    socket can be opened and bound)? An error puts the service into `ConfigError` with
//!    `errorCode = ProbeError::os_error` (spec 1.5, 1.8, section 3). There is no fallback path.
//! 2. [`DataPlane::start`] with a [`StackConfig`], the shared [`ProcessImage`] and an
//!    [`EventSink`]. [`StartMode::Reuse`] is passed when the runtime soft-stopped the plane
//!    before and the configuration fingerprint (spec 3 rule 3, [`StackConfig::fingerprint`]) is
//!    unchanged: keep the socket/binding/instance and only restart the loops.
//!    [`StartMode::Fresh`] is passed otherwise; the runtime has called [`DataPlane::teardown`]
//!    first when a previous instance existed. The process image passed may be a new one
//!    (resized) on a fresh start; on reuse it is the same `Arc`.
//! 3. [`DataPlane::stop`] is a *soft* stop (spec 3 rule 2): stop the cyclic and acyclic loops,
//!    release the ARs, but keep the instance, the socket binding and the configuration.
//! 4. [`DataPlane::teardown`]: release everything (called on fingerprint change, on service
//!    shutdown, and after a failed start).
//! 5. [`DataPlane::status`] is called often (every `GET /api/status`, `/api/diag`, `/api/io`,
//!    `POST /api/io`); it must be cheap and must not block on the cyclic thread.
//! 6. [`DataPlane::command`] delivers [`StackCommand`]s (diagnosis from `POST /api/diag`, the
//!    high-resolution timer switch, communication reset). It must not block; queue internally.
//!
//! # Events (plane -> runtime)
//!
//! The plane reports what happened on the wire through the [`EventSink`] given to `start`
//! (any thread may send; sending never blocks). The runtime turns them into state changes
//! (`Connected` -> `DataExchange`, `Aborted` -> `Aborted`), status fields (`masterStationName`,
//! `masterAssignedIp`, `dcpIpApplied`...) and alarms. See [`StackEvent`]. Remanent data
//! (DCP name/IP, I&M1-4 and other written records, resets) is stored before the plane answers
//! the request, through [`EventSink::commit`], not by the event that follows.
//!
//! # Process image
//!
//! The cyclic thread uses only the `cyclic_*` methods and [`ProcessImage::set_device_status`]
//! of [`ProcessImage`]; they never allocate or block. Per cycle: `cyclic_read_output` into a
//! scratch buffer, build and send the input frame, then `cyclic_mark_output_sent(gen)`; for each
//! valid output frame from the controller `cyclic_write_input(data, iops, iocs)`; on connection
//! loss `invalidate_input()`. The delivery answer of `POST /api/io` depends on the plane calling
//! `cyclic_mark_output_sent` (see docs/decisions.md, "Delivery rule").

use std::net::Ipv4Addr;
use std::os::fd::{FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::image::ProcessImage;

/// EtherType of PROFINET RT frames.
pub const ETHERTYPE_PROFINET: u16 = 0x8892;

// ------------------------------------------------------------------------------------------
// Configuration handed to the stack
// ------------------------------------------------------------------------------------------

// The layout types are the runtime configuration's (`pn-device-formats`), re-exported so the
// stack's paths stay `crate::dataplane`.
pub use pn_device_formats::config::{Im0Config, ModuleConfig, SubmoduleConfig};

// The remanent records and I&M1-4 are the protocol crate's remanent data (one rule of how they
// change, shared with the simulator), re-exported so the stack's paths stay `crate::dataplane`.
pub use pn_protocol::machine::remanent::{ImRemanent, StoredRecord};

/// Everything the stack needs to run the device. Built by the runtime at start from the
/// runtime configuration XML, the service settings and the persisted remanent data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StackConfig {
    /// The one PROFINET NIC (resolved: `VENDOR_PNET_NIC` -> XML -> settings default).
    pub nic: String,
    /// Effective station name: a permanently DCP-assigned name if one was persisted, else the
    /// configured `StationName`.
    pub station_name: String,
    /// Effective IP parameters (persisted permanent DCP assignment, else configuration).
    pub ip: Ipv4Addr,
    pub mask: Ipv4Addr,
    pub gateway: Ipv4Addr,
    /// Device name (DCP DeviceVendor / "type of station").
    pub device_name: String,
    pub vendor_id: u16,
    pub device_id: u16,
    /// SendClockFactor-based cycle: the send clock in units of 31.25 us (32 = 1 ms).
    pub send_clock_factor: u16,
    /// MinDeviceInterval (31.25 µs units): the shortest IO cycle a Connect may ask for
    /// (configuration `MinUpdateTimeUs`; CMDEV refuses a shorter one).
    pub min_device_interval: u32,
    /// Driver watchdog in milliseconds (0 = stack default, i.e. from the controller's
    /// DataHoldFactor).
    pub watchdog_ms: u32,
    /// Value the I area is filled with when the controller's data is not valid
    /// ("driver safe-input value").
    pub safe_input_value: u8,
    /// Slot/submodule layout including the DAP in slot 0 (interface 0x8000, port 0x8001).
    pub modules: Vec<ModuleConfig>,
    pub im0: Im0Config,
    /// Remanent I&M1-4 (persisted).
    pub im: ImRemanent,
    /// Other persisted records (user records written by the controller).
    pub records: Vec<StoredRecord>,
    /// Use the high-resolution timer (absolute `clock_nanosleep` deadlines, SCHED_FIFO where
    /// permitted) for the cyclic thread.
    pub high_resolution_timer: bool,
    /// Summed and clamped area sizes (equal to the image's lengths).
    pub input_len: usize,
    pub output_len: usize,
    /// Configuration fingerprint of spec 3 rule 3 (hex string; equal = reuse allowed).
    pub fingerprint: String,
}

/// How [`DataPlane::start`] should start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartMode {
    /// Nothing of a previous instance exists (or it was torn down): open and bind everything.
    Fresh,
    /// The plane was soft-stopped with an identical fingerprint: reuse instance and binding.
    Reuse,
}

// ------------------------------------------------------------------------------------------
// Errors
// ------------------------------------------------------------------------------------------

/// The NIC cannot be used (spec 1.8: `ConfigError`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeError {
    /// NIC name that was probed.
    pub nic: String,
    /// OS error code (errno), e.g. 19 ENODEV for a missing NIC, 1 EPERM without CAP_NET_RAW.
    /// Becomes `errorCode` in `ConfigError`.
    pub os_error: i32,
    /// Human-readable reason (becomes part of `statusMessage`).
    pub reason: String,
}

impl std::fmt::Display for ProbeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "NIC '{}': {} (os error {})",
            self.nic, self.reason, self.os_error
        )
    }
}

// Which phase of a start failed is plain data of the service state table (protocol crate),
// re-exported so the stack's paths stay `crate::dataplane`.
pub use pn_protocol::machine::service_state::StartFailure;

/// A failed [`DataPlane::start`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartError {
    pub failure: StartFailure,
    /// Native start result code (spec 7.4: -1 ErrInit, -2 ErrCfg, -3 ErrThread, -4 ErrRunning,
    /// -5 ErrPdi, -6 ErrDap) or, for [`StartFailure::DataPlaneOpen`], the OS error code.
    pub code: i32,
    pub message: String,
}

impl std::fmt::Display for StartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (code {})", self.message, self.code)
    }
}

/// Service runtime error codes (spec 7.4).
pub mod error_code {
    pub const OK: i32 = 0;
    pub const ERR_INIT: i32 = -1;
    pub const ERR_CFG: i32 = -2;
    pub const ERR_THREAD: i32 = -3;
    pub const ERR_RUNNING: i32 = -4;
    pub const ERR_PDI: i32 = -5;
    pub const ERR_DAP: i32 = -6;
}

// ------------------------------------------------------------------------------------------
// Events and commands
// ------------------------------------------------------------------------------------------

/// Reset modes (DCP ResetToFactory and `POST /api/reset`): the DCP responder's.
pub use pn_protocol::machine::dcp_responder::ResetMode;

/// Severity of an alarm shown by the API (spec 2.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum AlarmSeverity {
    Info,
    Warning,
    Error,
    Critical,
}

/// Why an AR in data exchange ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum AbortCause {
    /// A fault: the watchdog, the link, the alarm transport, a protocol error, the device.
    #[default]
    Fault,
    /// The controller released the AR (a normal end, not a fault).
    ReleasedByController,
    /// The controller ended the AR with its ERR-RTA-PDU (its decision, not this device's
    /// failure).
    AbortedByController,
}

/// The parameters of an IO AR as the controller set them in its Connect request, for the
/// operator (`GET /api/status` field `ar`, the dashboard's AR panel). Times are derived from
/// the factors with the 31.25 us clock unit.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ArInfo {
    pub ar_uuid: String,
    pub controller_station_name: String,
    /// The CMInitiatorMacAdd of the AR block, `aa:bb:cc:dd:ee:ff`.
    pub controller_mac: String,
    /// The controller's IP, from the Connect request's UDP source ("" when unknown).
    pub controller_ip: String,
    pub send_clock_factor: u16,
    pub send_clock_us: u64,
    pub reduction_ratio: u16,
    /// Send clock x reduction ratio of the output CR (the controller's frames).
    pub cycle_us: u64,
    pub watchdog_factor: u16,
    pub data_hold_factor: u16,
    pub data_hold_us: u64,
    /// Submodules the controller expected differently (their IOPS/IOCS are BAD in this AR):
    /// `[slot, subslot]` pairs.
    #[serde(default)]
    pub mismatched_submodules: Vec<[u16; 2]>,
}

/// What the stack reports to the runtime. Send through [`EventSink::send`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    tag = "event",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum StackEvent {
    /// Carrier / operstate of the NIC changed (also sent once right after start).
    LinkChanged { up: bool },
    /// An AR is established and cyclic data is being exchanged (-> `DataExchange`).
    Connected {
        /// Controller identification for logs/status (e.g. its station name or MAC).
        controller: String,
        /// The AR's parameters (absent from data planes that have no real AR, e.g. the sim).
        #[serde(default)]
        ar: Option<ArInfo>,
    },
    /// Cyclic exchange lost (watchdog, AR abort, release by the controller) (-> `Aborted`).
    Aborted {
        reason: String,
        /// Who ended it: a fault (the default) or the controller's own decision.
        #[serde(default)]
        cause: AbortCause,
    },
    /// DCP Set NameOfStation. `permanent` = the controller asked to store it remanently.
    DcpNameAssigned { name: String, permanent: bool },
    /// DCP Set IP. `applied` is the result of configuring the address on the host
    /// (`Err(text)` when it could not be applied).
    DcpIpAssigned {
        ip: Ipv4Addr,
        mask: Ipv4Addr,
        gateway: Ipv4Addr,
        permanent: bool,
        applied: Result<(), String>,
    },
    /// DCP Set Signal (flash LED): the runtime logs it and records an Info alarm.
    DcpSignal,
    /// DCP ResetToFactory with the given DCP block qualifier, mapped to a [`ResetMode`].
    DcpResetToFactory { qualifier: u16, mode: ResetMode },
    /// The controller wrote a record (I&M1-4 at 0xAFF1..0xAFF4, or a user record). `data` is
    /// the record data as written (I&M: including the BlockHeader). The runtime persists it
    /// and shows it in `GET /api/records` / `GET /api/im`.
    RecordWritten {
        slot: u16,
        subslot: u16,
        index: u16,
        data: Vec<u8>,
    },
    /// The controller acknowledged an alarm the device sent over RTA.
    AlarmAcknowledged {
        slot: u16,
        subslot: u16,
        alarm_type: u16,
        sequence: u16,
        ok: bool,
    },
    /// Something the operator should see in `GET /api/alarms` (e.g. watchdog expiry, frame
    /// errors, a received controller alarm).
    Alarm {
        severity: AlarmSeverity,
        source: String,
        message: String,
    },
    /// A remanent change could not be stored (the stack refused the request that asked for
    /// it). Sent by the runtime's own commit handler on a stack thread, which must not take
    /// the state lock; the runtime raises the `persistence` alarm when it applies the event.
    PersistenceFailed { message: String },
    /// A fatal stack error (e.g. the cyclic thread died). The runtime treats it like `Aborted`
    /// and records `lastError`.
    Fault { code: i32, message: String },
}

/// Durable commit of the remanent part of an event (installed by the runtime, see
/// [`EventSink::commit`]).
pub type CommitFn = Arc<dyn Fn(&StackEvent) -> Result<(), String> + Send + Sync>;

/// Where the stack sends [`StackEvent`]s. Cheap to clone; `send` never blocks (unbounded
/// queue; events are rare, per-connection, not per-cycle).
///
/// Remanent data is acknowledged only after it is durable (docs/decisions.md): before the
/// stack answers a request that changes remanent data (record write, DCP Set of name or IP,
/// ResetToFactory) it calls [`EventSink::commit`] with the event on its CM/L2 worker thread
/// (never the cyclic thread), answers with an error if that fails, and `send`s the event
/// after a successful commit.
#[derive(Clone)]
pub struct EventSink {
    tx: tokio::sync::mpsc::UnboundedSender<StackEvent>,
    commit: Option<CommitFn>,
}

impl std::fmt::Debug for EventSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventSink")
            .field("commit", &self.commit.is_some())
            .finish_non_exhaustive()
    }
}

impl EventSink {
    /// Create a sink and its receiving end (used by the runtime and by tests).
    pub fn channel() -> (EventSink, tokio::sync::mpsc::UnboundedReceiver<StackEvent>) {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        (EventSink { tx, commit: None }, rx)
    }

    /// The same sink with a durable-commit handler (the runtime's).
    pub fn with_commit(mut self, commit: CommitFn) -> EventSink {
        self.commit = Some(commit);
        self
    }

    /// Store the remanent part of `ev` durably (temp file, fsync, rename, directory fsync)
    /// and return when it is on disk; `Err` = not stored and nothing changed. Blocks for the
    /// file I/O. Without a handler (tests of the stack alone) nothing is stored: `Ok`.
    pub fn commit(&self, ev: &StackEvent) -> Result<(), String> {
        match &self.commit {
            Some(f) => f(ev),
            None => Ok(()),
        }
    }

    /// Report an event. Returns `false` when the runtime is gone (daemon shutting down).
    pub fn send(&self, ev: StackEvent) -> bool {
        self.tx.send(ev).is_ok()
    }
}

/// A device diagnosis entry (from `POST /api/diag`), to be sent as a diagnosis alarm
/// (appear / disappear) and shown in the diagnosis records.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiagnosisEntry {
    pub slot: u16,
    pub subslot: u16,
    pub channel: u16,
    /// Channel error type (e.g. 0x0001 short circuit, 0x0100.. manufacturer specific).
    pub error_type: u16,
    /// 0 fault, 1 maintenance required, 2 maintenance demanded, 3 qualified (spec 4 rule 5).
    pub severity: u8,
    pub text: String,
}

/// Commands from the runtime to the stack (non-blocking, see [`DataPlane::command`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StackCommand {
    /// Add or update a diagnosis entry (same slot/subslot/channel/errorType = update):
    /// send a diagnosis alarm (appears) and keep it in the diagnosis data.
    SetDiagnosis(DiagnosisEntry),
    /// Remove a diagnosis entry: send a diagnosis alarm (disappears).
    RemoveDiagnosis {
        slot: u16,
        subslot: u16,
        channel: u16,
        error_type: u16,
    },
    /// Switch the cyclic thread's high-resolution timer on/off (takes effect immediately or at
    /// the next start; the stack decides and documents).
    SetHighResolutionTimer(bool),
    /// `POST /api/reset` mode communication/factory: release the ARs and re-apply the station
    /// name / IP given (the runtime has already cleared persistence).
    Reset {
        mode: ResetMode,
        station_name: String,
        ip: Ipv4Addr,
        mask: Ipv4Addr,
        gateway: Ipv4Addr,
    },
}

// ------------------------------------------------------------------------------------------
// Status and counters
// ------------------------------------------------------------------------------------------

/// Counters the stack maintains (atomics, `Relaxed`, safe to bump from the cyclic thread).
/// Share one as `Arc<SharedCounters>` between the stack threads; [`DataPlane::status`] returns
/// a [`CounterSnapshot`].
#[derive(Debug, Default)]
pub struct SharedCounters {
    pub heartbeat: AtomicU64,
    pub cycle_counter: AtomicU64,
    pub rx_frames: AtomicU64,
    pub tx_frames: AtomicU64,
    pub rx_rt_frames: AtomicU64,
    pub tx_rt_frames: AtomicU64,
    pub rx_control_frames: AtomicU64,
    pub tx_control_frames: AtomicU64,
    pub dropped_frames: AtomicU64,
    pub invalid_frames: AtomicU64,
    pub watchdog_trips: AtomicU64,
    pub stack_cycles: AtomicU64,
    pub stack_frames_rx: AtomicU64,
    pub stack_frames_tx: AtomicU64,
    pub stack_missed_ticks: AtomicU64,
    /// Maximum observed cycle jitter in microseconds (update with `fetch_max`).
    pub stack_max_jitter_us: AtomicU64,
    /// Sum of every cycle's lateness in microseconds: a reader divides its change by the
    /// change of `stack_cycles` for the mean jitter of its own window (the maximum above only
    /// ever grows, so it cannot show a jitter that has gone again).
    pub stack_jitter_sum_us: AtomicU64,
    pub stack_alarm_rx_count: AtomicU64,
    pub stack_alarm_tx_ack_ok: AtomicU64,
    pub stack_alarm_tx_ack_fail: AtomicU64,
    /// Number of IOCRs of the current AR(s).
    pub active_iocr_count: AtomicU64,
    /// IOCRs whose data is flowing.
    pub iocr_active: AtomicU64,
    /// IOCRs flowing with GOOD status and no watchdog expiry.
    pub iocr_healthy: AtomicU64,
    /// Last stack error code (0 = none).
    pub last_error: AtomicU64,
}

/// Plain copy of [`SharedCounters`], serialised with the `GET /api/diag` field names.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CounterSnapshot {
    pub heartbeat: i64,
    pub cycle_counter: i64,
    pub rx_frames: i64,
    pub tx_frames: i64,
    pub rx_rt_frames: i64,
    pub tx_rt_frames: i64,
    pub rx_control_frames: i64,
    pub tx_control_frames: i64,
    pub dropped_frames: i64,
    pub invalid_frames: i64,
    pub watchdog_trips: i64,
    pub stack_cycles: i64,
    pub stack_frames_rx: i64,
    pub stack_frames_tx: i64,
    pub stack_missed_ticks: i64,
    pub stack_max_jitter_us: i64,
    pub stack_jitter_sum_us: i64,
    pub stack_alarm_rx_count: i64,
    pub stack_alarm_tx_ack_ok: i64,
    pub stack_alarm_tx_ack_fail: i64,
    pub active_iocr_count: i64,
    pub iocr_active: i64,
    pub iocr_healthy: i64,
    pub last_error: i64,
}

impl SharedCounters {
    /// Copy all counters (each individually atomic; the set is not a single snapshot).
    pub fn snapshot(&self) -> CounterSnapshot {
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed) as i64;
        CounterSnapshot {
            heartbeat: g(&self.heartbeat),
            cycle_counter: g(&self.cycle_counter),
            rx_frames: g(&self.rx_frames),
            tx_frames: g(&self.tx_frames),
            rx_rt_frames: g(&self.rx_rt_frames),
            tx_rt_frames: g(&self.tx_rt_frames),
            rx_control_frames: g(&self.rx_control_frames),
            tx_control_frames: g(&self.tx_control_frames),
            dropped_frames: g(&self.dropped_frames),
            invalid_frames: g(&self.invalid_frames),
            watchdog_trips: g(&self.watchdog_trips),
            stack_cycles: g(&self.stack_cycles),
            stack_frames_rx: g(&self.stack_frames_rx),
            stack_frames_tx: g(&self.stack_frames_tx),
            stack_missed_ticks: g(&self.stack_missed_ticks),
            stack_max_jitter_us: g(&self.stack_max_jitter_us),
            stack_jitter_sum_us: g(&self.stack_jitter_sum_us),
            stack_alarm_rx_count: g(&self.stack_alarm_rx_count),
            stack_alarm_tx_ack_ok: g(&self.stack_alarm_tx_ack_ok),
            stack_alarm_tx_ack_fail: g(&self.stack_alarm_tx_ack_fail),
            active_iocr_count: g(&self.active_iocr_count),
            iocr_active: g(&self.iocr_active),
            iocr_healthy: g(&self.iocr_healthy),
            last_error: g(&self.last_error),
        }
    }
}

/// What [`DataPlane::status`] returns.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PlaneStatus {
    /// Loops are running (between a successful `start` and `stop`).
    pub running: bool,
    /// The NIC exists now (`hardwarePortPresent`).
    pub port_present: bool,
    /// Carrier up on the NIC (`linkUp`).
    pub link_up: bool,
    /// Cyclic data is being exchanged now (at least one AR in data exchange).
    pub connected: bool,
    /// The IOCR cycle of the AR in ns (SendClockFactor × ReductionRatio; 0 without an AR): a
    /// write reaches the wire within about one cycle.
    pub ar_cycle_ns: u64,
    /// The process image is attached to the cyclic thread (`sharedMemoryMapped`).
    pub image_attached: bool,
    /// Free text for `GET /api/diag` `message` (empty when nothing to say).
    pub message: String,
    pub counters: CounterSnapshot,
}

// ------------------------------------------------------------------------------------------
// The trait
// ------------------------------------------------------------------------------------------

/// The PROFINET data plane as seen by the runtime. See the module documentation for the call
/// protocol. Implementations: [`RawSocketPlane`] (probe + link only), the stack
/// (`device/src/stack/`).
pub trait DataPlane: Send + Sync {
    /// Short name for logs and `GET /api/info` (e.g. "raw-socket", "pn-stack").
    fn kind(&self) -> &'static str;

    /// The driver probe of spec 1.5: does the NIC exist and can a raw `AF_PACKET` socket for
    /// EtherType 0x8892 be opened and bound on it? Must not change any state.
    fn probe(&self, nic: &str) -> Result<NicInfo, ProbeError>;

    /// Start the device on `cfg.nic`. Returns when the loops run (not when a controller has
    /// connected: that is reported later by [`StackEvent::Connected`]).
    fn start(
        &self,
        cfg: &StackConfig,
        image: Arc<ProcessImage>,
        events: EventSink,
        mode: StartMode,
    ) -> Result<(), StartError>;

    /// Soft stop (keep instance and binding). Idempotent.
    fn stop(&self);

    /// Release everything (socket, threads, instance). Idempotent.
    fn teardown(&self);

    /// Cheap status snapshot.
    fn status(&self) -> PlaneStatus;

    /// Deliver a command (never blocks; ignored when not running, except that
    /// `SetHighResolutionTimer` should be remembered for the next start).
    fn command(&self, cmd: StackCommand);

    /// Extra fields for `GET /api/diag` (spec 2: objects may gain fields), e.g. the LLDP
    /// neighbour, link speed and MAU type of the L2 services. A JSON object merged into the
    /// diag body; `None` (the default) adds nothing. Cheap, never blocks on the cyclic thread.
    fn extra_diag(&self) -> Option<serde_json::Value> {
        None
    }
}

// ------------------------------------------------------------------------------------------
// NIC helpers (usable by the stack too)
// ------------------------------------------------------------------------------------------

/// What the probe found out about a usable NIC.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NicInfo {
    pub name: String,
    pub index: u32,
    pub mac: Option<[u8; 6]>,
    pub link: LinkState,
}

impl NicInfo {
    /// A NIC that is present with its link up, index 1, no MAC: what the test planes (which
    /// have no real NIC) answer from `probe`.
    pub fn up(name: &str) -> NicInfo {
        NicInfo {
            name: name.into(),
            index: 1,
            mac: None,
            link: LinkState {
                present: true,
                up: true,
                operstate: "up".into(),
            },
        }
    }
}

/// Link state from sysfs.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LinkState {
    /// `/sys/class/net/<nic>` exists.
    pub present: bool,
    /// `/sys/class/net/<nic>/carrier` is 1 (and operstate is not "down").
    pub up: bool,
    /// Raw `/sys/class/net/<nic>/operstate` ("up", "down", "unknown", "lowerlayerdown", ...).
    pub operstate: String,
}

/// The interface-name rule belongs to the configuration format (`Network/InterfaceName`) and
/// the licence's MAC binding as much as to the sockets: one rule, in `pn-device-formats`.
pub use pn_device_formats::config::valid_nic_name;

/// Read the link state of `nic` from sysfs (never fails; a missing NIC is `present=false`).
pub fn read_link_state(nic: &str) -> LinkState {
    if !valid_nic_name(nic) {
        return LinkState::default();
    }
    let base = std::path::Path::new("/sys/class/net").join(nic);
    if !base.exists() {
        return LinkState::default();
    }
    let operstate = std::fs::read_to_string(base.join("operstate"))
        .map(|s| s.trim().to_string())
        .unwrap_or_default();
    // Reading `carrier` of an interface that is administratively down fails with EINVAL.
    let carrier = std::fs::read_to_string(base.join("carrier"))
        .map(|s| s.trim() == "1")
        .unwrap_or(false);
    LinkState {
        present: true,
        up: carrier && operstate != "down",
        operstate,
    }
}

/// Whether `nic` exists (`present` of [`read_link_state`], without reading carrier/operstate).
pub fn nic_present(nic: &str) -> bool {
    valid_nic_name(nic) && std::path::Path::new("/sys/class/net").join(nic).exists()
}

/// [`nic_present`] cached per NIC name for at most `ttl` (`GET /api/status`'s
/// `hardwarePortPresent`): the sysfs lookup cost a quarter of the daemon's CPU under status
/// polling (docs/decisions.md "Status path"). Never holds its lock during the lookup, so a
/// miss never makes other requests wait on file I/O.
#[derive(Debug)]
pub struct PortPresenceCache {
    ttl: Duration,
    last: Mutex<Option<(String, std::time::Instant, bool)>>,
}

impl PortPresenceCache {
    pub fn new(ttl: Duration) -> Self {
        PortPresenceCache {
            ttl,
            last: Mutex::new(None),
        }
    }

    /// The cached value for `nic` when it is younger than the TTL.
    pub fn cached(&self, nic: &str) -> Option<bool> {
        let last = self.last.lock().unwrap_or_else(|p| p.into_inner());
        match &*last {
            Some((n, at, present)) if n == nic && at.elapsed() < self.ttl => Some(*present),
            _ => None,
        }
    }

    /// Look `nic` up now and remember the answer.
    pub fn refresh(&self, nic: &str) -> bool {
        let at = std::time::Instant::now();
        let present = nic_present(nic);
        *self.last.lock().unwrap_or_else(|p| p.into_inner()) = Some((nic.to_string(), at, present));
        present
    }

    /// The cached value, or a fresh lookup.
    pub fn present(&self, nic: &str) -> bool {
        self.cached(nic).unwrap_or_else(|| self.refresh(nic))
    }
}

fn read_mac(nic: &str) -> Option<[u8; 6]> {
    let s = std::fs::read_to_string(format!("/sys/class/net/{nic}/address")).ok()?;
    let mut mac = [0u8; 6];
    let mut parts = s.trim().split(':');
    for b in mac.iter_mut() {
        *b = u8::from_str_radix(parts.next()?, 16).ok()?;
    }
    Some(mac)
}

fn last_os_error() -> i32 {
    std::io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

fn available_nics() -> String {
    let mut names: Vec<String> = pnet_datalink::interfaces()
        .into_iter()
        .map(|i| i.name)
        .collect();
    names.sort();
    names.join(", ")
}

/// Open an `AF_PACKET`/`SOCK_RAW` socket for EtherType 0x8892 and bind it to `nic`.
/// This is the "driver" of the service (spec 1.5). Errors carry the errno.
pub fn open_raw_socket(nic: &str) -> Result<(OwnedFd, NicInfo), ProbeError> {
    let err = |os_error: i32, reason: String| ProbeError {
        nic: nic.to_string(),
        os_error,
        reason,
    };
    if !valid_nic_name(nic) {
        return Err(err(libc::EINVAL, "invalid network interface name".into()));
    }
    let cname = std::ffi::CString::new(nic).map_err(|_| err(libc::EINVAL, "NUL in name".into()))?;
    // SAFETY: cname is a valid NUL-terminated string.
    let index = unsafe { libc::if_nametoindex(cname.as_ptr()) };
    if index == 0 {
        let e = last_os_error();
        return Err(err(
            e,
            format!(
                "network interface not found (available: {})",
                available_nics()
            ),
        ));
    }
    let proto = ETHERTYPE_PROFINET.to_be() as libc::c_int;
    // SAFETY: plain syscall, result checked.
    let fd = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, proto) };
    if fd < 0 {
        let e = last_os_error();
        return Err(err(
            e,
            format!(
                "cannot open raw AF_PACKET socket ({}); CAP_NET_RAW is required",
                std::io::Error::from_raw_os_error(e)
            ),
        ));
    }
    // SAFETY: fd is a freshly created, owned descriptor.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: zeroed sockaddr_ll is a valid value; fields set below.
    let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    sll.sll_family = libc::AF_PACKET as u16;
    sll.sll_protocol = ETHERTYPE_PROFINET.to_be();
    sll.sll_ifindex = index as i32;
    // SAFETY: sll is a properly initialised sockaddr_ll of the given size.
    let rc = unsafe {
        libc::bind(
            std::os::fd::AsRawFd::as_raw_fd(&fd),
            &sll as *const libc::sockaddr_ll as *const libc::sockaddr,
            std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
        )
    };
    if rc < 0 {
        let e = last_os_error();
        return Err(err(
            e,
            format!(
                "cannot bind raw socket: {}",
                std::io::Error::from_raw_os_error(e)
            ),
        ));
    }
    let info = NicInfo {
        name: nic.to_string(),
        index,
        mac: read_mac(nic),
        link: read_link_state(nic),
    };
    Ok((fd, info))
}

// ------------------------------------------------------------------------------------------
// RawSocketPlane: the real probe, no PROFINET
// ------------------------------------------------------------------------------------------

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

#[cfg(test)]
mod tests;

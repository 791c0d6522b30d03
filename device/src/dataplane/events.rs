//! Events (plane -> runtime) with the [`EventSink`] that carries them and the remanent-data
//! commit, and the [`StackCommand`]s (runtime -> plane).

use std::net::Ipv4Addr;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

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

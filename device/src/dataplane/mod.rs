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
//!
//! Layout: the trait [`DataPlane`] here; `config`, `error`, `events`, `status`, `nic` (NIC
//! helpers) and `raw_plane` ([`RawSocketPlane`]).

use std::sync::Arc;

use crate::image::ProcessImage;

mod config;
mod error;
mod events;
mod nic;
mod raw_plane;
mod status;

pub use config::{
    Im0Config, ImRemanent, ModuleConfig, StackConfig, StartMode, StoredRecord, SubmoduleConfig,
};
pub use error::{error_code, ProbeError, StartError, StartFailure};
pub use events::{
    AbortCause, AlarmSeverity, ArInfo, CommitFn, DiagnosisEntry, EventSink, ResetMode,
    StackCommand, StackEvent,
};
pub use nic::{
    nic_present, open_raw_socket, read_link_state, valid_nic_name, LinkState, NicInfo,
    PortPresenceCache,
};
pub use raw_plane::{spawn_link_monitor, RawSocketPlane};
pub use status::{CounterSnapshot, PlaneStatus, SharedCounters};

/// EtherType of PROFINET RT frames.
pub const ETHERTYPE_PROFINET: u16 = 0x8892;

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

#[cfg(test)]
mod tests;

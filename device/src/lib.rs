//! pn-device: the PROFINET IO device service (daemon, runtime state machine, local HTTP API).
//!
//! Module map (see docs/architecture-notes/device-service.md):
//! * [`dataplane`]: the interface the PROFINET stack implements, plus
//!   [`dataplane::RawSocketPlane`] (real probe and link monitor, no PROFINET).
//! * [`image`]: the process image shared with the stack's cyclic thread.
//! * [`runtime`]: state machine of spec section 3, licence gate, alarms, persistence.
//! * [`api`]: the HTTP API (hyper 1).
//! * [`config`]: settings JSON; the runtime configuration XML re-exported from
//!   `pn-device-formats` (with [`licence`], the formats the tools and the lab share).
//! * [`licence`], [`persist`], [`alarms`], [`util`].
//! * [`sim`]: TEST DOUBLE data plane, only with `Dev:SimulatedDataPlane`.
//! * [`fault`]: TEST ONLY fault-injection points, only with `Dev:Fault*` settings.
//!
//! The PROFINET stack lives in `src/stack/` (owned by the stack work; declare it here with
//! `pub mod stack;` when it lands).

pub mod alarms;
pub mod api;
pub mod check_config;
pub mod config;
pub mod dataplane;
pub mod fault;
pub mod gsdml;
pub mod image;
/// The licence format (issue, verify) lives in `pn-device-formats`, where the `pn-licence`
/// tool and the test lab use it without linking the daemon.
pub use pn_device_formats::licence;
pub mod persist;
/// The runtime state table (spec section 3) is the protocol crate's, shared with the
/// simulator; the daemon keeps its name for it.
pub use pn_protocol::machine::service_state as run_state;
pub mod runtime;
#[cfg(feature = "test-hooks")]
pub mod sim;
pub mod stack;
pub mod util;

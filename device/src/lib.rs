//! pn-device: the PROFINET IO device service (daemon, runtime state machine, local HTTP API).
//!
//! Module map (see docs/architecture-notes/device-service.md):
//! * [`dataplane`]: the interface the PROFINET stack implements, plus [`dataplane::RawSocketPlane`].
//! * [`image`]: the process image shared with the stack's cyclic thread.
//! * `util`: timestamps, hex.
//!
//! The PROFINET stack lives in `src/stack/` (owned by the stack work; declare it here with
//! `pub mod stack;` when it lands).

pub mod config;
pub mod dataplane;
pub mod gsdml;
pub mod image;
pub mod licence;
pub mod stack;
pub mod util;

//! CMDEV: context management, device side (IEC 61158-6-10 "CMDEV" state machine and its
//! "CMRPC" request checks). A device accepts, checks and answers the controller's
//! connection-management requests here; the daemon only carries the bytes.
//!
//! * [`connect`]: the checks of a Connect request and the FrameIDs of its response;
//! * [`plan`]: the expected submodules against the real ones (ModuleDiffBlock) and the cyclic
//!   layout of the IO AR (the PPM's frame template, the CPM's layout);
//! * [`api`]: what the machine asks of the application and tells the shell;
//! * [`machine`]: the CMDEV machine itself ([`Cmdev`]): an AR's life from Connect to its end;
//! * [`cmrpc`]: the RPC server under it (CMRPC): reassembly, retransmitted calls, PING, ACK;
//! * [`params`]: the declared parameter records a Write is checked against.

pub mod api;
pub mod cmrpc;
pub mod connect;
pub mod machine;
pub mod params;
pub mod plan;

pub use api::{CmdevApp, CmdevConfig, CmdevEvent, EndCause, IoArPlan};
pub use cmrpc::{Datagram, MAX_FRAGMENT_BODY};
pub use machine::{ArPhase, Cmdev, IoArView};

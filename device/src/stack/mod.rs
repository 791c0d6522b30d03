//! The PROFINET IO device on the wire: [`ProfinetPlane`] implements
//! [`crate::dataplane::DataPlane`].
//!
//! Ownership of the files in this directory:
//! * stack-core: `mod.rs` (the plane, receive dispatch), `cm.rs` (DCE/RPC connection
//!   management on UDP 34964), `ar.rs` (AR state), `cyclic.rs` (the real-time thread),
//!   `alarms.rs` (RTA alarm transport), `records.rs` (record read/write).
//! * stack-l2: `socket.rs` (raw socket wrapper), `link.rs` (link monitor), `dcp.rs`,
//!   `lldp.rs`, `snmp.rs`, `llmnr.rs` (and `crate::gsdml`).

pub mod alarms;
pub mod ar;
pub mod cm;
pub mod cyclic;
pub mod dcp;
pub mod link;
pub mod lldp;
pub mod llmnr;
pub mod records;
pub mod snmp;
pub mod socket;

//! sans-IO protocol machines. Each takes `now` ([`crate::time::Instant`]) and input bytes, and
//! returns frames to send plus the next deadline at which it wants to be polled.

pub mod alarm_cr;
pub mod alarm_receiver;
pub mod cmctl;
pub mod cmdev;
pub mod cpm;
pub mod cyclic;
pub mod data_hold;
pub mod dcp_client;
pub mod dcp_delay;
pub mod dcp_responder;
pub mod lldp;
pub mod llmnr_responder;
pub mod ppm;
pub mod ppm_standby;
pub mod remanent;
pub mod rpc_reassembly;
pub mod rta;
pub mod service_state;
pub mod snmp_agent;

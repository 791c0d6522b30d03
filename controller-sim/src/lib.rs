//! `pn-controller`: a PROFINET IO controller simulator (RT_CLASS_1), as a library and the CLI
//! `pn-controller`.
//!
//! It is the peer of the `pn-device` daemon in every test, and a tool to commission and
//! stress PROFINET devices: DCP (identify, set name/IP, signal, reset), connection
//! establishment from a GSDML file or the device's runtime configuration XML (Connect with
//! AR, IOCRs, AlarmCR and expected submodules, parameter Write, PrmEnd, ApplicationReady),
//! cyclic data exchange with a consumer watchdog, record Read/Write (also implicit), alarms
//! over RTA with acknowledgement, many ARs from one process, and fault injection.
//!
//! # Threads
//! [`Controller::start`] opens one raw socket and one UDP socket (port 34964) on the interface
//! and runs three threads: receive (raw frames, alarm timers), RPC (responses to our calls and
//! the device's ApplicationReady), and the cyclic thread (absolute `clock_nanosleep` deadlines
//! on CLOCK_MONOTONIC, timer slack 1 ns, SCHED_FIFO/mlockall only when asked for in
//! [`RealtimeOptions`]). All ARs share these threads.
//!
//! The interface is looked up in the calling thread's network namespace with
//! `if_nametoindex`/`ioctl`, never via `/sys`, so a thread that joined a namespace with
//! `setns(2)` can run a controller there.
//!
//! # Example
//! ```no_run
//! use pn_controller::{ArConfig, Controller, ControllerConfig, DeviceConfig};
//! use std::time::Duration;
//!
//! # fn main() -> Result<(), pn_controller::Error> {
//! let ctl = Controller::start(ControllerConfig::new("eth1"))?;
//! for d in ctl.dcp_identify_all(10, Duration::from_millis(200))? {
//!     println!("{} {} {:?}", d.mac, d.name_of_station, d.ip);
//! }
//! // Connect with the device's own runtime configuration XML.
//! let dev = DeviceConfig::load("device.xml".as_ref()).map_err(pn_controller::Error::Config)?;
//! let mut ar = ArConfig::new(dev.model);
//! ar.timing.reduction_ratio = 4; // 4 ms at the default 1 ms send clock
//! let h = ctl.connect(ar)?;
//! h.set_outputs(0, &[0x12, 0x34])?;
//! std::thread::sleep(Duration::from_millis(100));
//! println!("inputs {:02x?}, state {:?}", h.inputs().data, h.state());
//! let im0 = h.read_record(0, 1, 0xAFF0, 256)?;
//! println!("I&M0: {} bytes", im0.len());
//! h.release()?;
//! # Ok(()) }
//! ```

pub mod alarms;
mod ar;
mod cm;
/// CMCTL's Connect request (the protocol crate's `machine::cmctl::request`).
pub use pn_protocol::machine::cmctl::request as cmreq;
pub mod controller;
mod cyclic;
pub mod dcp;
pub mod devconfig;
pub mod faults;
pub mod gsdml;
/// CMCTL's device model (the protocol crate's `machine::cmctl::model`).
pub use pn_protocol::machine::cmctl::model;
pub mod netif;
pub mod rtsched;

pub use alarms::AlarmRecord;
pub use cmreq::{ArTiming, Startup};
pub use controller::{
    ArConfig, ArHandle, ArState, ArStatus, Controller, ControllerConfig, Event, Inputs, TickStats,
};
pub use dcp::{parse_mac, DeviceInfo, SetResult};
pub use devconfig::DeviceConfig;
pub use faults::{AlarmAckFault, AppReadyFault, Faults};
pub use gsdml::Gsdml;
pub use model::{DeviceModel, IoLayout};
pub use pn_protocol::wire::ethernet::MacAddr;
pub use pn_protocol::wire::pnio::PnioStatus;
pub use rtsched::RealtimeOptions;

/// Errors of the controller.
#[derive(Debug)]
pub enum Error {
    Io(std::io::Error),
    /// The interface cannot be used.
    Interface(String),
    /// A configuration or argument problem.
    Config(String),
    /// Encoding or decoding failed.
    Protocol(String),
    Timeout(String),
    NotFound(String),
    /// The device answered negatively.
    Rejected {
        what: &'static str,
        status: PnioStatus,
    },
    /// The device answered with a DCE/RPC fault or reject.
    RpcFault(u32),
    /// A DCP Set was refused.
    DcpSet(String),
    /// The AR ended while waiting.
    Aborted(String),
    /// The device's ModuleDiffBlock reports modules that differ from the expected ones (one
    /// line per module or submodule).
    ModuleMismatch(Vec<String>),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Io(e) => write!(f, "I/O error: {e}"),
            Error::Interface(s) => write!(f, "interface: {s}"),
            Error::Config(s) => write!(f, "configuration: {s}"),
            Error::Protocol(s) => write!(f, "protocol: {s}"),
            Error::Timeout(s) => write!(f, "timeout: {s}"),
            Error::ModuleMismatch(v) => write!(
                f,
                "the device's modules differ from the expected ones: {}; the AR was released \
                 (--accept-module-diff runs anyway)",
                v.join("; ")
            ),
            Error::NotFound(s) => write!(f, "not found: {s}"),
            Error::Rejected { what, status } => {
                // The status in words: what an operator needs to fix the request (e.g. a
                // cycle below the device's MinDeviceInterval is "ReductionRatio").
                write!(
                    f,
                    "{what} rejected by the device: PNIOStatus {}",
                    status.in_words()
                )
            }
            Error::RpcFault(s) => write!(f, "DCE/RPC fault/reject status {s:#010x}"),
            Error::DcpSet(s) => write!(f, "DCP Set refused: {s}"),
            Error::Aborted(s) => write!(f, "AR aborted: {s}"),
        }
    }
}

impl std::error::Error for Error {}

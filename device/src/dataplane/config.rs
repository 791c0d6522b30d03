//! Configuration handed to the stack: [`StackConfig`], [`StartMode`], the remanent I&M and
//! record data, and the module layout types of `pn-device-formats`.

use std::net::Ipv4Addr;

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
    /// `Cyclic:StandbyCpu`: run a standby sender for the provider on this CPU (and the
    /// provider's thread off it); `None` = no standby (`stack::standby`).
    pub standby_cpu: Option<usize>,
    /// `Cyclic:StandbyGraceUs`: the standby's wait after a slot's due time; `None` = a
    /// quarter period.
    pub standby_grace_us: Option<u64>,
    /// TEST ONLY `Dev:FaultProviderHold` (acted on in test-hooks builds only).
    pub provider_hold: Option<crate::fault::ProviderHold>,
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

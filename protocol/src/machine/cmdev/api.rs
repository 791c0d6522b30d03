//! The CMDEV machine's interface: what it asks of the application ([`CmdevApp`]), what it
//! tells the shell ([`CmdevEvent`]) and its fixed parameters ([`CmdevConfig`]).

use super::connect::ConnectLimits;
use super::params::ParamRecords;
use crate::time::Duration;
use crate::wire::pnio::alarm_cr::AlarmCrBlockReq;
use crate::wire::pnio::ar::ArBlockReq;
use crate::wire::pnio::cm::ConnectRequest;
use crate::wire::pnio::module_diff::ModuleDiffBlock;
use crate::wire::pnio::record::RecordAddress;
use crate::wire::pnio::PnioStatus;

/// What the machine needs from the device application.
pub trait CmdevApp {
    /// The application's own plan of an accepted IO AR (its cyclic jobs); handed back in
    /// [`CmdevEvent::IoArConnected`].
    type Plan;
    /// Lay the controller's IO data objects onto this device's configuration. `Err`: the
    /// status the Connect is refused with.
    fn plan_io_ar(
        &mut self,
        req: &ConnectRequest,
        limits: &ConnectLimits,
    ) -> Result<IoArPlan<Self::Plan>, PnioStatus>;
    /// The link state now (asked before refusing a Connect for a link believed down: the
    /// Connect may arrive before the link monitor noticed the link came back).
    fn link_up(&mut self) -> bool;
    /// Read a record (already mapped from "expected" to "real" identification).
    fn read_record(&mut self, a: &RecordAddress) -> Result<Vec<u8>, PnioStatus>;
    /// Write a record; done (durably, for remanent data) before the answer is built.
    fn write_record(&mut self, a: &RecordAddress, data: &[u8]) -> Result<(), PnioStatus>;
}

/// The application's answer to an IO AR's Connect.
#[derive(Debug, Clone)]
pub struct IoArPlan<P> {
    pub input_frame_id: u16,
    pub output_frame_id: u16,
    pub module_diff: Option<ModuleDiffBlock>,
    /// The consumer's data-hold time (cycle x DataHoldFactor).
    pub data_hold: Duration,
    pub plan: P,
}

/// Who ended an AR.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndCause {
    /// A fault: the watchdog, the link, the alarm transport, a protocol error, the device.
    Fault,
    /// The controller released the AR (a normal end).
    ReleasedByController,
    /// The controller ended the AR with its ERR-RTA-PDU.
    AbortedByController,
}

/// What the shell acts on.
#[derive(Debug)]
pub enum CmdevEvent<P> {
    /// A Connect was refused: `why` says which rule, in words.
    ConnectRefused {
        controller: String,
        status: PnioStatus,
        why: &'static str,
    },
    /// The IO AR is accepted: install the cyclic jobs of `plan` and the alarm CR.
    IoArConnected {
        ar: ArBlockReq,
        alarm_cr: AlarmCrBlockReq,
        plan: P,
        input_frame_id: u16,
        output_frame_id: u16,
        data_hold: Duration,
    },
    /// ApplicationReady was confirmed: data exchange.
    DataExchange { ar: ArBlockReq },
    /// The IO AR ended. `rta`: the ERR-RTA status to send on the alarm CR (none after a
    /// Release). `reached_data`: the AR had reached data exchange.
    IoArEnded {
        controller: String,
        reason: String,
        rta: Option<PnioStatus>,
        cause: EndCause,
        reached_data: bool,
        /// The consumer's supervision ended it (no output frame after ApplicationReady):
        /// a watchdog trip.
        watchdog: bool,
    },
}

/// Fixed parameters of the machine.
#[derive(Debug, Clone)]
pub struct CmdevConfig {
    /// RPC server boot time stamp.
    pub server_boot: u32,
    pub own_mac: [u8; 6],
    pub limits: ConnectLimits,
    /// Supervisor (DeviceAccess) ARs accepted beside the IO AR.
    pub max_supervisor_ars: usize,
    /// ApplicationReady retransmission interval.
    pub app_ready_retry: Duration,
    /// Our LocalAlarmReference.
    pub local_alarm_ref: u16,
    /// Seed of the activity UUIDs of our client calls (random in the daemon, fixed in the
    /// simulator so a run replays).
    pub activity_seed: [u8; 16],
    /// The parameter records the configuration declares: a Write of one is checked (length,
    /// allowed values) before the application sees it.
    pub param_records: ParamRecords,
}

impl CmdevConfig {
    pub fn new(server_boot: u32, own_mac: [u8; 6], activity_seed: [u8; 16]) -> CmdevConfig {
        CmdevConfig {
            server_boot,
            own_mac,
            limits: ConnectLimits::default(),
            max_supervisor_ars: 2,
            app_ready_retry: Duration::from_millis(1000),
            local_alarm_ref: 0x0001,
            activity_seed,
            param_records: ParamRecords::default(),
        }
    }
}

//! One AR as the application sees it: its configuration, state and counters, and the
//! handle's API (outputs, inputs, faults, alarms, status, abort). Connecting, records and
//! Release go through the connection-management shell (`cm.rs`).

use pn_protocol::wire::Emit;
use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration as StdDuration;

use pn_protocol::machine::cmctl::{Cmctl, CmctlError, RecordId};
use pn_protocol::machine::cyclic::ConsumerStats;
use pn_protocol::wire::ethernet::MacAddr;
use pn_protocol::wire::pnio::im::ImRecord;
use pn_protocol::wire::pnio::module_diff::ModuleDiffBlock;
use pn_protocol::wire::pnio::record::{self};
use pn_protocol::wire::rpc::Uuid;
use pn_protocol::wire::rta::{self as wrta};

use crate::alarms::AlarmRecord;
use crate::cmreq::{self, ArIds, ArTiming};
use crate::controller::{Event, Shared};
use crate::cyclic::{ArIo, ArTx};
use crate::faults::Faults;
use crate::model::{DeviceModel, IoLayout};
use crate::rtsched;
use crate::Error;

/// Connection state of an AR.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub enum ArState {
    Connecting,
    /// Connect accepted; parameters being written.
    Parameterizing,
    /// PrmEnd sent; waiting for the device's ApplicationReady.
    WaitApplicationReady,
    DataExchange,
    Released,
    Aborted(String),
}

impl std::fmt::Display for ArState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ArState::Connecting => f.write_str("connecting"),
            ArState::Parameterizing => f.write_str("parameterizing"),
            ArState::WaitApplicationReady => f.write_str("waiting for ApplicationReady"),
            ArState::DataExchange => f.write_str("data exchange"),
            ArState::Released => f.write_str("released"),
            ArState::Aborted(why) => write!(f, "aborted: {why}"),
        }
    }
}

/// Parameters of one connection.
#[derive(Debug, Clone)]
pub struct ArConfig {
    pub model: DeviceModel,
    /// The device's IP. `None`: use the IP it reports over DCP.
    pub device_ip: Option<Ipv4Addr>,
    /// Assign `device_ip` temporarily over DCP when the device reports another one.
    pub assign_ip: bool,
    pub timing: ArTiming,
    /// Faults active from the start (ApplicationReady handling must be set before connecting).
    pub faults: Faults,
    /// How long to wait for the device's ApplicationReady after PrmEnd.
    pub app_ready_timeout: StdDuration,
    /// Initial output data (linear area, PROFINET outputs).
    pub initial_outputs: Vec<u8>,
}

impl ArConfig {
    pub fn new(model: DeviceModel) -> ArConfig {
        ArConfig {
            model,
            device_ip: None,
            assign_ip: false,
            timing: ArTiming::default(),
            faults: Faults::default(),
            app_ready_timeout: StdDuration::from_secs(10),
            initial_outputs: Vec::new(),
        }
    }
}

/// A consistent view of an AR's input side.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Inputs {
    /// Input data (device -> controller), linear area in slot order.
    pub data: Vec<u8>,
    /// IOPS per input data object (layout order).
    pub iops: Vec<u8>,
    /// IOCS the device sends for our output submodules (layout order).
    pub iocs: Vec<u8>,
    pub data_status: Option<u8>,
    pub cycle_counter: Option<u16>,
    /// At least one valid frame has been received.
    pub valid: bool,
}

/// Counters and state of one AR.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ArStatus {
    pub id: u32,
    pub station_name: String,
    pub device_mac: String,
    pub device_ip: String,
    pub state: ArState,
    pub cycle_us: u64,
    pub input_frame_id: u16,
    pub output_frame_id: u16,
    pub frames_sent: u64,
    pub missed_send_slots: u64,
    pub frames_received: u64,
    pub frames_new_data: u64,
    pub frames_invalid: u64,
    pub frames_duplicate: u64,
    pub watchdog_expiries: u64,
    pub alarms_received: u64,
    pub module_diff: Vec<String>,
}

/// Phases as the cyclic thread reads them (without a lock).
pub(crate) mod phase {
    pub const CONNECTING: u8 = 0;
    pub const PARAMETERIZING: u8 = 1;
    pub const WAIT_APP_READY: u8 = 2;
    pub const DATA_EXCHANGE: u8 = 3;
    pub const ENDED: u8 = 4;
}

pub(crate) struct ArInner {
    pub id: u32,
    pub model: DeviceModel,
    pub layout: IoLayout,
    pub timing: ArTiming,
    pub ids: ArIds,
    /// Device MAC as a u64 (read per received frame without a lock).
    pub device_mac: AtomicU64,
    /// (input FrameID << 16) | output FrameID.
    pub frame_ids: AtomicU32,
    pub phase: AtomicU8,
    /// When data exchange began (ns of `rtsched::now`; 0 = not yet).
    pub data_since_ns: AtomicU64,
    /// A Release was sent: the consumer's watchdog no longer judges the device's frames.
    pub releasing: AtomicBool,
    /// Output area (PROFINET outputs), written by the API.
    pub outputs: Mutex<Vec<u8>>,
    /// Latest inputs, written by the receive thread.
    pub inputs: Mutex<Inputs>,
    pub device_ip: Ipv4Addr,
    /// The activity of this AR's RPC calls (the RPC thread routes responses by it).
    pub activity: Uuid,
    /// The AR's state and its connection-management machine, under one lock so that a waiter
    /// on `cond` sees both the machine's outcomes and state changes made elsewhere (alarms,
    /// watchdog).
    pub state: Mutex<ArCm>,
    pub cond: Condvar,
    pub io: Mutex<ArIo>,
    pub tx: Mutex<ArTx>,
    /// The provider's frames sent and missed slots, published by the cyclic thread after
    /// each send: `ArHandle::status` reads them without the `tx` lock, so a caller preempted
    /// while reading statistics can never hold up the cyclic thread.
    pub provider_sent: AtomicU64,
    pub provider_missed: AtomicU64,
    pub faults: Mutex<Faults>,
    pub alarm: Mutex<Option<crate::alarms::AlarmState>>,
    pub module_diff: Mutex<Option<ModuleDiffBlock>>,
    pub alarms_received: AtomicU64,
}

/// The AR's state, its CMCTL machine and the outcomes the machine reported that a caller
/// waits for.
pub(crate) struct ArCm {
    pub state: ArState,
    pub cm: Cmctl,
    /// Establishing ended: data exchange (Ok) or why not.
    pub established: Option<Result<(), Error>>,
    /// Results of record services, by the machine's handle.
    pub records: HashMap<RecordId, Result<Vec<u8>, CmctlError>>,
    /// The Release's outcome (cloned by every caller of `release`).
    pub released: Option<Result<(), CmctlError>>,
}

/// A handle on one AR.
#[derive(Clone)]
pub struct ArHandle {
    pub(crate) shared: Arc<Shared>,
    pub(crate) ar: Arc<ArInner>,
}

impl Shared {
    pub(crate) fn set_state(&self, ar: &ArInner, st: ArState) {
        {
            let mut g = ar.state.lock().unwrap_or_else(|p| p.into_inner());
            let s = &mut g.state;
            if *s == st {
                return;
            }
            // Terminal states stay.
            if matches!(*s, ArState::Released | ArState::Aborted(_)) {
                return;
            }
            *s = st.clone();
            let ph = match &st {
                ArState::Connecting => phase::CONNECTING,
                ArState::Parameterizing => phase::PARAMETERIZING,
                ArState::WaitApplicationReady => phase::WAIT_APP_READY,
                ArState::DataExchange => phase::DATA_EXCHANGE,
                ArState::Released | ArState::Aborted(_) => phase::ENDED,
            };
            if ph == phase::DATA_EXCHANGE {
                ar.data_since_ns
                    .store(rtsched::now().as_nanos().max(1), Ordering::Release);
            }
            ar.phase.store(ph, Ordering::Release);
        }
        ar.cond.notify_all();
        tracing::info!(ar = ar.id, station = %ar.model.station_name, state = ?st, "AR state");
        self.emit(Event::State {
            ar: ar.id,
            station: ar.model.station_name.clone(),
            state: st,
        });
    }
}

impl ArInner {
    pub(crate) fn mac(&self) -> MacAddr {
        let b = self.device_mac.load(Ordering::Acquire).to_be_bytes();
        MacAddr([b[2], b[3], b[4], b[5], b[6], b[7]])
    }

    pub(crate) fn set_mac(&self, m: MacAddr) {
        let mut b = [0u8; 8];
        b[2..].copy_from_slice(&m.0);
        self.device_mac
            .store(u64::from_be_bytes(b), Ordering::Release);
    }

    pub(crate) fn frame_ids(&self) -> (u16, u16) {
        let v = self.frame_ids.load(Ordering::Acquire);
        ((v >> 16) as u16, v as u16)
    }

    pub(crate) fn state(&self) -> ArState {
        self.state
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .state
            .clone()
    }
}

impl ArHandle {
    /// Wait until `pred(state)` holds or `timeout` passes; returns the state then.
    pub fn wait_state(&self, pred: impl Fn(&ArState) -> bool, timeout: StdDuration) -> ArState {
        let deadline = std::time::Instant::now() + timeout;
        let mut g = self.ar.state.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if pred(&g.state) {
                return g.state.clone();
            }
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return g.state.clone();
            }
            g = self
                .ar
                .cond
                .wait_timeout(g, left)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    /// AR id (unique within the controller).
    pub fn id(&self) -> u32 {
        self.ar.id
    }

    pub fn station_name(&self) -> &str {
        &self.ar.model.station_name
    }

    pub fn layout(&self) -> &IoLayout {
        &self.ar.layout
    }

    pub fn state(&self) -> ArState {
        self.ar.state()
    }

    /// Write output data (PROFINET outputs, linear area) at `offset`; sent with the next frame.
    pub fn set_outputs(&self, offset: usize, data: &[u8]) -> Result<(), Error> {
        let mut o = self.ar.outputs.lock().unwrap_or_else(|p| p.into_inner());
        let len = o.len();
        let end = offset
            .checked_add(data.len())
            .filter(|e| *e <= len)
            .ok_or_else(|| Error::Config(format!("outputs are {len} bytes long")))?;
        o[offset..end].copy_from_slice(data);
        Ok(())
    }

    /// The current output area.
    pub fn outputs(&self) -> Vec<u8> {
        self.ar
            .outputs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The latest inputs.
    pub fn inputs(&self) -> Inputs {
        self.ar
            .inputs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Change fault injection settings (takes effect on the next cycle).
    pub fn set_faults(&self, f: Faults) {
        *self.ar.faults.lock().unwrap_or_else(|p| p.into_inner()) = f;
    }

    pub fn faults(&self) -> Faults {
        *self.ar.faults.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Alarms received so far.
    pub fn alarms(&self) -> Vec<AlarmRecord> {
        self.ar
            .alarm
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            .map(|s| s.history.clone())
            .unwrap_or_default()
    }

    /// The ModuleDiffBlock of the Connect response, if the device sent one.
    pub fn module_diff(&self) -> Option<ModuleDiffBlock> {
        self.ar
            .module_diff
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    pub fn status(&self) -> ArStatus {
        let (sent, missed) = (
            self.ar.provider_sent.load(Ordering::Relaxed),
            self.ar.provider_missed.load(Ordering::Relaxed),
        );
        let cs = {
            let io = self.ar.io.lock().unwrap_or_else(|p| p.into_inner());
            let c = io.consumer.as_ref().map(|c| c.stats()).unwrap_or_default();
            let b = io.consumer_base;
            ConsumerStats {
                received: b.received + c.received,
                new_data: b.new_data + c.new_data,
                invalid: b.invalid + c.invalid,
                duplicates: b.duplicates + c.duplicates,
                watchdog_expiries: b.watchdog_expiries + c.watchdog_expiries,
            }
        };
        let (i, o) = self.ar.frame_ids();
        ArStatus {
            id: self.ar.id,
            station_name: self.ar.model.station_name.clone(),
            device_mac: self.ar.mac().to_string(),
            device_ip: self.ar.device_ip.to_string(),
            state: self.ar.state(),
            cycle_us: self.ar.timing.cycle_ns() / 1000,
            input_frame_id: i,
            output_frame_id: o,
            frames_sent: sent,
            missed_send_slots: missed,
            frames_received: cs.received,
            frames_new_data: cs.new_data,
            frames_invalid: cs.invalid,
            frames_duplicate: cs.duplicates,
            watchdog_expiries: cs.watchdog_expiries,
            alarms_received: self.ar.alarms_received.load(Ordering::Relaxed),
            module_diff: self
                .ar
                .module_diff
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .as_ref()
                .map(cmreq::describe_module_diff)
                .unwrap_or_default(),
        }
    }
}

impl ArHandle {
    /// Read I&M`n` (0..=4) of a submodule (DAP: slot 0, subslot 1) and decode it.
    pub fn read_im(&self, slot: u16, subslot: u16, n: u8) -> Result<ImRecord, Error> {
        let idx = record::index::IM0 + u16::from(n.min(15));
        let data = self.read_record(slot, subslot, idx, 256)?;
        ImRecord::parse(&data).map_err(|e| Error::Protocol(format!("I&M{n}: {e}")))
    }

    /// Write an I&M1..4 record (encoded with its block header, as the standard requires).
    pub fn write_im(&self, slot: u16, subslot: u16, rec: &ImRecord) -> Result<(), Error> {
        let idx = match rec {
            ImRecord::Im1(_) => record::index::IM1,
            ImRecord::Im2(_) => record::index::IM2,
            ImRecord::Im3(_) => record::index::IM3,
            ImRecord::Im4(_) => record::index::IM4,
            _ => return Err(Error::Config("only I&M1..4 are writable".into())),
        };
        let data = rec.to_bytes().map_err(|e| Error::Protocol(e.to_string()))?;
        self.write_record(slot, subslot, idx, &data)
    }
}

impl ArHandle {
    /// Send ERR-RTA with `reason` on the low alarm channel, if the AR got as far as having
    /// one (the Connect was accepted).
    pub(crate) fn send_abort(&self, reason: u8) {
        let now = rtsched::now();
        {
            let mut g = self.ar.alarm.lock().unwrap_or_else(|p| p.into_inner());
            match g.as_mut() {
                Some(st) => st.rx.abort(wrta::abort_reason::status(reason)),
                None => return,
            }
        }
        self.shared.flush_alarm_tx(&self.ar, now);
    }

    /// Abort the AR: send ERR-RTA (AR abort request) on the low alarm channel and stop.
    pub fn abort(&self) {
        self.shared.cm_drive(&self.ar, |m, _| m.abort());
        self.send_abort(wrta::abort_reason::AR_ABORT_REQ);
        self.shared.set_state(
            &self.ar,
            ArState::Aborted("aborted by the controller".into()),
        );
        self.remove();
    }

    pub(crate) fn remove(&self) {
        self.shared
            .edit_ars(|ars| ars.retain(|a| !Arc::ptr_eq(a, &self.ar)));
    }
}

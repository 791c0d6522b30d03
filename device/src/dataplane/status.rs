//! Status and counters: [`SharedCounters`] (atomics bumped by the stack threads), their
//! [`CounterSnapshot`] and the [`PlaneStatus`] the runtime reads.

use std::sync::atomic::{AtomicU64, Ordering};

use serde::Serialize;

/// Counters the stack maintains (atomics, `Relaxed`, safe to bump from the cyclic thread).
/// Share one as `Arc<SharedCounters>` between the stack threads; [`DataPlane::status`] returns
/// a [`CounterSnapshot`].
#[derive(Debug, Default)]
pub struct SharedCounters {
    pub heartbeat: AtomicU64,
    pub cycle_counter: AtomicU64,
    pub rx_frames: AtomicU64,
    pub tx_frames: AtomicU64,
    pub rx_rt_frames: AtomicU64,
    pub tx_rt_frames: AtomicU64,
    pub rx_control_frames: AtomicU64,
    pub tx_control_frames: AtomicU64,
    pub dropped_frames: AtomicU64,
    pub invalid_frames: AtomicU64,
    pub watchdog_trips: AtomicU64,
    pub stack_cycles: AtomicU64,
    pub stack_frames_rx: AtomicU64,
    pub stack_frames_tx: AtomicU64,
    pub stack_missed_ticks: AtomicU64,
    /// Maximum observed cycle jitter in microseconds (update with `fetch_max`).
    pub stack_max_jitter_us: AtomicU64,
    /// Sum of every cycle's lateness in microseconds: a reader divides its change by the
    /// change of `stack_cycles` for the mean jitter of its own window (the maximum above only
    /// ever grows, so it cannot show a jitter that has gone again).
    pub stack_jitter_sum_us: AtomicU64,
    /// Provider frames the standby sender sent (`Cyclic:StandbyCpu`): slots the cyclic thread
    /// had not sent a quarter period after they were due. Counted in `stackFramesTx` too.
    pub stack_standby_frames: AtomicU64,
    pub stack_alarm_rx_count: AtomicU64,
    pub stack_alarm_tx_ack_ok: AtomicU64,
    pub stack_alarm_tx_ack_fail: AtomicU64,
    /// Number of IOCRs of the current AR(s).
    pub active_iocr_count: AtomicU64,
    /// IOCRs whose data is flowing.
    pub iocr_active: AtomicU64,
    /// IOCRs flowing with GOOD status and no watchdog expiry.
    pub iocr_healthy: AtomicU64,
    /// Last stack error code (0 = none).
    pub last_error: AtomicU64,
}

/// Plain copy of [`SharedCounters`], serialised with the `GET /api/diag` field names.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CounterSnapshot {
    pub heartbeat: i64,
    pub cycle_counter: i64,
    pub rx_frames: i64,
    pub tx_frames: i64,
    pub rx_rt_frames: i64,
    pub tx_rt_frames: i64,
    pub rx_control_frames: i64,
    pub tx_control_frames: i64,
    pub dropped_frames: i64,
    pub invalid_frames: i64,
    pub watchdog_trips: i64,
    pub stack_cycles: i64,
    pub stack_frames_rx: i64,
    pub stack_frames_tx: i64,
    pub stack_missed_ticks: i64,
    pub stack_max_jitter_us: i64,
    pub stack_jitter_sum_us: i64,
    pub stack_standby_frames: i64,
    pub stack_alarm_rx_count: i64,
    pub stack_alarm_tx_ack_ok: i64,
    pub stack_alarm_tx_ack_fail: i64,
    pub active_iocr_count: i64,
    pub iocr_active: i64,
    pub iocr_healthy: i64,
    pub last_error: i64,
}

impl SharedCounters {
    /// Copy all counters (each individually atomic; the set is not a single snapshot).
    pub fn snapshot(&self) -> CounterSnapshot {
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed) as i64;
        CounterSnapshot {
            heartbeat: g(&self.heartbeat),
            cycle_counter: g(&self.cycle_counter),
            rx_frames: g(&self.rx_frames),
            tx_frames: g(&self.tx_frames),
            rx_rt_frames: g(&self.rx_rt_frames),
            tx_rt_frames: g(&self.tx_rt_frames),
            rx_control_frames: g(&self.rx_control_frames),
            tx_control_frames: g(&self.tx_control_frames),
            dropped_frames: g(&self.dropped_frames),
            invalid_frames: g(&self.invalid_frames),
            watchdog_trips: g(&self.watchdog_trips),
            stack_cycles: g(&self.stack_cycles),
            stack_frames_rx: g(&self.stack_frames_rx),
            stack_frames_tx: g(&self.stack_frames_tx),
            stack_missed_ticks: g(&self.stack_missed_ticks),
            stack_max_jitter_us: g(&self.stack_max_jitter_us),
            stack_jitter_sum_us: g(&self.stack_jitter_sum_us),
            stack_standby_frames: g(&self.stack_standby_frames),
            stack_alarm_rx_count: g(&self.stack_alarm_rx_count),
            stack_alarm_tx_ack_ok: g(&self.stack_alarm_tx_ack_ok),
            stack_alarm_tx_ack_fail: g(&self.stack_alarm_tx_ack_fail),
            active_iocr_count: g(&self.active_iocr_count),
            iocr_active: g(&self.iocr_active),
            iocr_healthy: g(&self.iocr_healthy),
            last_error: g(&self.last_error),
        }
    }
}

/// What [`DataPlane::status`] returns.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PlaneStatus {
    /// Loops are running (between a successful `start` and `stop`).
    pub running: bool,
    /// The NIC exists now (`hardwarePortPresent`).
    pub port_present: bool,
    /// Carrier up on the NIC (`linkUp`).
    pub link_up: bool,
    /// Cyclic data is being exchanged now (at least one AR in data exchange).
    pub connected: bool,
    /// The IOCR cycle of the AR in ns (SendClockFactor × ReductionRatio; 0 without an AR): a
    /// write reaches the wire within about one cycle.
    pub ar_cycle_ns: u64,
    /// The process image is attached to the cyclic thread (`sharedMemoryMapped`).
    pub image_attached: bool,
    /// Free text for `GET /api/diag` `message` (empty when nothing to say).
    pub message: String,
    pub counters: CounterSnapshot,
}

//! The cyclic data path of the ARs (the PPM/CPM shell): the provider machine sending output
//! frames on the cyclic thread's tick, the consumer machine taking input frames on the
//! receive thread, and the consumer watchdog judged there.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use pn_protocol::machine::cyclic::{
    Consumer, ConsumerEvent, ConsumerStats, CyclicTiming, Provider, RxOutcome,
};
use pn_protocol::time::Instant;
use pn_protocol::wire::ethernet::{self, MacAddr};
use pn_protocol::wire::rt::{DataStatus, FrameId, Ioxs};
use pn_protocol::wire::rta::{self as wrta};

use crate::ar::{phase, ArInner, ArState};
use crate::controller::{Event, Shared};
use crate::faults::Faults;
use crate::rtsched;

/// Provider side of the cyclic path: locked by the cyclic thread per tick, by `establish`
/// once (installing the provider, no RPC in flight while it holds it) and briefly by
/// `status()`. Separate from [`ArIo`] (the consumer, locked by the receive thread per frame)
/// so that the cyclic thread never waits for the receive thread (a lower real-time priority,
/// which may be preempted while it holds its lock).
pub(crate) struct ArTx {
    pub provider: Option<Provider>,
    /// The output C_SDU, kept between cycles: when the API is mid-write the previous data is
    /// sent again instead of waiting for the writer.
    pub c_sdu: Vec<u8>,
    pub frame: Vec<u8>,
    /// Last fault settings seen (used when the API holds the faults lock).
    pub faults: Faults,
}

/// Consumer side of the cyclic path, touched only by the receive thread (and briefly by
/// `establish`, `enter_data_exchange` and `status()`).
pub(crate) struct ArIo {
    pub consumer: Option<Consumer>,
    /// Counters of the consumer that ran before data exchange (replaced then).
    pub consumer_base: ConsumerStats,
    pub started_at: Instant,
}

impl Shared {
    // ------------------------------------------------------------------------------------
    // Cyclic
    // ------------------------------------------------------------------------------------

    /// One tick: `slot` is the scheduled tick time (providers are aligned to it, so a late
    /// wake-up does not shift the send schedule). `list` is the cyclic thread's copy of the
    /// ARs, refreshed here when `ars_gen` changed and the list lock is free at once.
    pub(crate) fn cyclic_tick(&self, slot: Instant, list: &mut (u64, Vec<Arc<ArInner>>)) {
        let gen = self.ars_gen.load(Ordering::Acquire);
        if gen != list.0 {
            if let Ok(ars) = self.ars.try_read() {
                list.1.clone_from(&ars);
                list.0 = gen;
            }
        }
        for ar in list.1.iter() {
            ar.send_outputs(self, slot);
        }
    }
}

impl Shared {
    /// Run the consumer watchdogs. Called by the receive thread only when its queue is
    /// drained: a watchdog judged anywhere else (the cyclic thread did, before) trips falsely
    /// when the receive thread was merely preempted while the device's frames sat in the socket
    /// queue; here every frame that arrived has been consumed first.
    pub(crate) fn check_watchdogs(&self, now: Instant) {
        // A copy of the list: the work below (alarm lock, sends, events) must not keep the
        // list's read lock, behind which a connect or release waiting to write would block
        // every other reader.
        let ars = self.ars.read().unwrap_or_else(|p| p.into_inner()).clone();
        for ar in ars.iter() {
            if ar.watchdog_expired(now) {
                // Tell the device at once (ERR-RTA "consumer DHT expired"), as a controller
                // aborting the AR does, instead of leaving it to its own watchdog. A blocking
                // lock (this is the receive thread, not the cyclic one; the other holders,
                // `abort` and the connect's set-up, never wait for this thread), then the
                // flush that sends the ERR-RTA now rather than at the next alarm poll.
                {
                    let mut g = ar.alarm.lock().unwrap_or_else(|p| p.into_inner());
                    if let Some(st) = g.as_mut() {
                        st.rx.abort(wrta::abort_reason::status(
                            wrta::abort_reason::AR_CONSUMER_DHT_EXPIRED,
                        ));
                    }
                }
                self.flush_alarm_tx(ar, now);
                self.emit(Event::WatchdogExpired {
                    ar: ar.id,
                    station: ar.model.station_name.clone(),
                });
                self.set_state(
                    ar,
                    ArState::Aborted("consumer watchdog expired (no input frames)".into()),
                );
            }
        }
    }
}

impl ArInner {
    /// Restart the consumer watchdog when data exchange begins.
    pub(crate) fn enter_data_exchange(&self) {
        let now = rtsched::now();
        let mut io = self.io.lock().unwrap_or_else(|p| p.into_inner());
        let (in_id, _) = self.frame_ids();
        if let Ok(t) = CyclicTiming::new(self.timing.send_clock_factor, self.timing.reduction_ratio)
        {
            // The first frame within first_frame_timeout, then DataHoldFactor x cycle.
            let c = Consumer::new(FrameId(in_id), t, self.timing.data_hold_factor, now)
                .with_source(self.mac())
                .with_c_sdu_len(self.layout.input.data_length as usize);
            if let Some(old) = io.consumer.replace(c) {
                let o = old.stats();
                let b = &mut io.consumer_base;
                b.received += o.received;
                b.new_data += o.new_data;
                b.invalid += o.invalid;
                b.duplicates += o.duplicates;
                b.watchdog_expiries += o.watchdog_expiries;
            }
        }
    }

    pub(crate) fn on_input_frame(&self, now: Instant, src: MacAddr, payload: &[u8]) {
        let (status, range) = {
            let mut io = self.io.lock().unwrap_or_else(|p| p.into_inner());
            let Some(c) = io.consumer.as_mut() else {
                return;
            };
            match c.on_rt_payload(now, src, payload) {
                RxOutcome::NewData { status, c_sdu } => (status, c_sdu),
                _ => return,
            }
        };
        let Some(sdu) = payload.get(range.0..range.1) else {
            return;
        };
        // Never wait for an API reader: if it holds the inputs, this frame's copy is skipped
        // (the next one follows within a cycle).
        let Ok(mut inp) = self.inputs.try_lock() else {
            return;
        };
        let inp = &mut *inp;
        if inp.data.len() != self.layout.input.area_len as usize {
            inp.data.resize(self.layout.input.area_len as usize, 0);
            inp.iops.resize(self.layout.input.data.len(), 0);
            inp.iocs.resize(self.layout.input.iocs.len(), 0);
        }
        for (i, d) in self.layout.input.data.iter().enumerate() {
            let off = d.frame_offset as usize;
            let len = d.data_len as usize;
            let a = d.area_offset as usize;
            if let (Some(src), Some(dst)) = (sdu.get(off..off + len), inp.data.get_mut(a..a + len))
            {
                dst.copy_from_slice(src);
            }
            if let Some(x) = inp.iops.get_mut(i) {
                *x = sdu.get(off + len).copied().unwrap_or(0);
            }
        }
        for (i, d) in self.layout.input.iocs.iter().enumerate() {
            if let Some(x) = inp.iocs.get_mut(i) {
                *x = sdu.get(d.frame_offset as usize).copied().unwrap_or(0);
            }
        }
        inp.data_status = Some(status.data_status.0);
        inp.cycle_counter = Some(status.cycle_counter);
        inp.valid = true;
    }

    /// True when the consumer watchdog expired during data exchange (see
    /// [`Shared::check_watchdogs`] for who calls this and why).
    pub(crate) fn watchdog_expired(&self, now: Instant) -> bool {
        if self.phase.load(Ordering::Acquire) != phase::DATA_EXCHANGE
            || self.releasing.load(Ordering::Acquire)
        {
            return false;
        }
        // `Faults::stop_outputs` stands for a controller that is gone: it neither supervises
        // nor aborts, so the device's own data-hold watchdog is what ends the AR (a device
        // stalled under load would otherwise let this side's watchdog end it first).
        // Never wait for the API here: while it holds the faults, judge at the next check.
        let skip = match self.faults.try_lock() {
            Ok(f) => f.stop_outputs,
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner().stop_outputs,
            Err(std::sync::TryLockError::WouldBlock) => true,
        };
        if skip {
            return false;
        }
        let mut io = self.io.lock().unwrap_or_else(|p| p.into_inner());
        matches!(
            io.consumer.as_mut().and_then(|c| c.poll(now)),
            Some(ConsumerEvent::WatchdogExpired)
        )
    }

    /// `Faults::first_output_after_app_ready`: no output frame yet.
    pub(crate) fn holding_first_output(&self, f: &Faults, ph: u8, slot: Instant) -> bool {
        let Some(d) = f.first_output_after_app_ready else {
            return false;
        };
        let since = self.data_since_ns.load(Ordering::Acquire);
        ph != phase::DATA_EXCHANGE
            || since == 0
            || slot.as_nanos() < since.saturating_add(d.as_nanos() as u64)
    }

    /// Build and send the output frame if due.
    pub(crate) fn send_outputs(&self, sh: &Shared, slot: Instant) {
        let ph = self.phase.load(Ordering::Acquire);
        if !matches!(
            ph,
            phase::PARAMETERIZING | phase::WAIT_APP_READY | phase::DATA_EXCHANGE
        ) {
            return;
        }
        let mut io = self.tx.lock().unwrap_or_else(|p| p.into_inner());
        let io = &mut *io;
        if let Ok(g) = self.faults.try_lock() {
            io.faults = *g;
        }
        let f = io.faults;
        let Some(p) = io.provider.as_mut() else {
            return;
        };
        // Fill the C_SDU: data + IOPS per output object, IOCS per input object.
        let l = &self.layout.output;
        if io.c_sdu.len() != l.data_length as usize {
            io.c_sdu.clear();
            io.c_sdu.resize(l.data_length as usize, 0);
        }
        // Never wait for an API writer: keep the previous data when it holds the outputs.
        let outputs = self.outputs.try_lock().ok();
        let iops = if f.bad_iops {
            Ioxs::BAD.0
        } else {
            Ioxs::GOOD.0
        };
        for d in &l.data {
            let off = d.frame_offset as usize;
            let len = d.data_len as usize;
            let a = d.area_offset as usize;
            if let (Some(dst), Some(src)) = (
                io.c_sdu.get_mut(off..off + len),
                outputs.as_ref().and_then(|o| o.get(a..a + len)),
            ) {
                dst.copy_from_slice(src);
            }
            if let Some(b) = io.c_sdu.get_mut(off + len) {
                *b = iops;
            }
        }
        drop(outputs);
        for d in &l.iocs {
            if let Some(b) = io.c_sdu.get_mut(d.frame_offset as usize) {
                *b = Ioxs::GOOD.0;
            }
        }
        let ds = DataStatus::RUNNING
            .with_provider_run(!f.provider_stop)
            .with_data_valid(!f.data_invalid);
        p.set_data_status(ds);
        let sent = match p.poll_send(slot, &io.c_sdu, &mut io.frame) {
            Ok(Some(n)) => Some(n),
            _ => None,
        };
        let st = p.stats();
        self.provider_sent.store(st.frames_sent, Ordering::Relaxed);
        self.provider_missed
            .store(st.missed_slots, Ordering::Relaxed);
        if let Some(n) = sent {
            if f.stop_outputs || self.holding_first_output(&f, ph, slot) {
                return;
            }
            let frame = &mut io.frame[..n];
            let h = if frame.get(12..14) == Some(&[0x81, 0x00]) {
                18
            } else {
                14
            };
            if let Some(id) = f.frame_id_override {
                if let Some(b) = frame.get_mut(h..h + 2) {
                    b.copy_from_slice(&id.to_be_bytes());
                }
            }
            if f.corrupt_frames {
                // Cut the frame after half of the C_SDU: the device sees a wrong length.
                let cut = (h + 2 + l.data_length as usize / 2).min(n);
                let _ = sh.send_frame(&frame[..cut.max(ethernet::MIN_FRAME_LEN.min(n))]);
                let _ = sh.send_frame(&frame[..h + 4]);
            } else {
                let _ = sh.send_frame(frame);
                if f.duplicate_frames {
                    let _ = sh.send_frame(frame);
                }
            }
        }
    }
}

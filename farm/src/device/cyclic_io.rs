//! The cyclic data of a farm device: the consumer side (a received output frame goes through
//! pn-device's `cyclic::consume_frame`) and the provider side (per slot of the period grid the
//! data-hold check, then the PPM's [`ProviderTemplate`] filled with the input data and stamped
//! with the cycle counter and data status), as pn-device's real-time thread does.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use pn_device::stack::cyclic::{self, Consumed, SendBuf};
use pn_protocol::machine::cmdev::EndCause;
use pn_protocol::machine::cyclic::TIME_BASE_NS;
use pn_protocol::machine::data_hold::DataHold;
use pn_protocol::machine::ppm::{ProviderTemplate, SlotClock};
use pn_protocol::time::{Duration as PnDuration, Instant};
use pn_protocol::wire::rta::abort_reason;

use super::{Backlog, FarmDevice, Neighbours, Out};

/// The provider of the current IO AR: its frame and its schedule.
pub(super) struct Provider {
    job: Arc<ProviderTemplate>,
    /// The frame as last filled (pn-device's sender buffer: one fill-and-stamp path).
    buf: SendBuf,
    /// The schedule, on the period grid (`SlotClock::on_grid`): every farm device of one
    /// period sends in the same wake-up of the I/O loop.
    clock: SlotClock,
}

impl Provider {
    /// The provider of a new IO AR: the planned frame, sent on the grid of `period_ns` (at least
    /// the time base), no output data read yet.
    pub(super) fn new(job: ProviderTemplate, now: Instant, period_ns: u64) -> Provider {
        let mut buf = SendBuf::new();
        buf.load(&job);
        Provider {
            clock: SlotClock::on_grid(now.0, period_ns.max(TIME_BASE_NS), job.counter_step),
            job: Arc::new(job),
            buf,
        }
    }

    /// What the standby sender follows (`machine::ppm_standby`): the job and the clock as
    /// installed.
    pub(super) fn plan(&self) -> (&Arc<ProviderTemplate>, SlotClock) {
        (&self.job, self.clock)
    }

    /// When the next provider slot is due.
    pub(super) fn next_ns(&self) -> u64 {
        self.clock.next_ns()
    }
}

impl FarmDevice {
    /// The provider frame filled by the last [`FarmDevice::on_timer`] that reported it due.
    pub fn provider_frame(&self) -> Option<&[u8]> {
        self.provider.as_ref().map(|p| p.buf.frame())
    }

    /// A cyclic frame addressed to this device (`payload` from the FrameID on).
    pub fn on_cyclic(&mut self, src: [u8; 6], payload: &[u8]) -> bool {
        let r = cyclic::consume_frame(&self.cyc, &self.shared.image, src, payload);
        let k = &self.shared.counters;
        k.rx_rt.fetch_add(1, Ordering::Relaxed);
        match r {
            Consumed::Ok => {
                // CPM FRUN -> RUN: the data-hold watchdog takes over from the first-frame
                // bound (the machine's deadline changes only with the first frame).
                let first = self.cyc.consumer_frames.load(Ordering::Relaxed) == 1;
                if first {
                    self.cm.handle_first_output_frame();
                }
                first
            }
            Consumed::Invalid => {
                k.rx_invalid.fetch_add(1, Ordering::Relaxed);
                false
            }
            Consumed::NotOurs | Consumed::Ignored => false,
        }
    }

    /// One provider slot: what pn-device's real-time thread does per cycle (missed slots
    /// skipped and counted in the CycleCounter, the data-hold check, then the frame). With
    /// the receive backlog unread the data-hold check waits for the next slot ([`Backlog`]):
    /// a slot not checked does not count as an interval without a frame.
    pub(super) fn provider_slot(
        &mut self,
        now: Instant,
        backlog: Backlog,
        out: &mut Out,
        n: &Neighbours,
    ) -> bool {
        let Some(p) = self.provider.as_mut() else {
            return false;
        };
        let period = p.clock.period_ns();
        // A slot due within the loop's batch horizon is sent in this wake-up, as on time.
        let Some(slot) = p.clock.take(now.0.max(p.clock.next_ns())) else {
            return false;
        };
        if slot.missed > 0 {
            self.shared
                .counters
                .missed_slots
                .fetch_add(slot.missed, Ordering::Relaxed);
        }
        // Data-hold supervision (the daemon's rule, once per executed provider cycle).
        let dht = self.cyc.dht_ns.load(Ordering::Acquire);
        if dht == 0 {
            self.watchdog = None;
        } else if backlog == Backlog::Read {
            // With the backlog unread the check waits for the next slot (see above).
            let frames = self.cyc.consumer_frames.load(Ordering::Acquire);
            let wd = self
                .watchdog
                .get_or_insert_with(|| DataHold::new(PnDuration(dht), PnDuration(period), frames));
            let last = Instant(self.cyc.last_rx_ns.load(Ordering::Acquire));
            if let Some(trip) = wd.on_interval(now, frames, last) {
                self.cyc.dht_ns.store(0, Ordering::Release);
                self.watchdog = None;
                let msg = trip.in_words(PnDuration(dht));
                self.cm.end_io_ar(
                    &msg,
                    Some(abort_reason::status(
                        pn_protocol::machine::data_hold::ABORT_REASON,
                    )),
                    EndCause::Fault,
                );
                self.shared
                    .counters
                    .watchdog_trips
                    .fetch_add(1, Ordering::Relaxed);
                self.apply(now, out, n);
                return false;
            }
        }
        let Some(p) = self.provider.as_mut() else {
            return false;
        };
        // A slot the standby sender has sent already (this loop was held past its grace) is
        // not sent again (`machine::ppm_standby`); without a standby every claim succeeds.
        if !self.cyc.standby.claim.claim(&slot) {
            return false;
        }
        let image = &self.shared.image;
        if let Some(gen) = p.buf.fill(&p.job, slot.cycle_counter, &self.cyc, image) {
            // Marked when queued: the batch is sent before the loop sleeps again.
            image.cyclic_mark_output_sent(gen);
        }
        self.shared.counters.tx_rt.fetch_add(1, Ordering::Relaxed);
        true
    }
}

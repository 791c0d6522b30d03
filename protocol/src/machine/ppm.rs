//! PPM (provider protocol machine, IEC 61158-6-10), device side: the frame template of one
//! input CR and its per-cycle fill.
//!
//! The device's provider does not re-emit its frame each cycle (as [`super::cyclic::Provider`]
//! does): CMDEV builds the complete frame once per AR ([`super::cmdev::plan`]) with every
//! submodule's IOPS/IOCS fixed at Connect, and each cycle only copies the data items in and
//! stamps the APDU status. The schedule (one frame per SendClockFactor × ReductionRatio ×
//! 31.25 µs, missed slots skipped and reflected in the CycleCounter) is [`SlotClock`], which
//! the daemon's real-time thread, pn-farm's I/O loop and the sans-IO
//! [`super::cyclic::Provider`] (controller, simulator) all run; the shells only sleep until
//! [`SlotClock::next_ns`].

use crate::wire::rt::{self, ApduStatus};

/// One data item of a cyclic frame: `len` bytes at `frame_off` of the frame and at `area_off`
/// of the process-image area (offsets checked when the item is built; the copies still clip
/// instead of panicking).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CopyItem {
    pub frame_off: usize,
    pub area_off: usize,
    pub len: usize,
}

/// What the provider sends for one input CR.
#[derive(Debug, Clone)]
pub struct ProviderTemplate {
    /// Complete Ethernet frame template (header, FrameID, C_SDU with IOPS/IOCS set, APDU
    /// status), already padded.
    pub frame: Vec<u8>,
    /// Offset of the APDU status in `frame`.
    pub status_at: usize,
    /// Q-area data of submodules that match the expectation (`frame_off` absolute).
    pub items: Vec<CopyItem>,
    /// SendClockFactor × ReductionRatio × 31.25 µs.
    pub period_ns: u64,
    /// Increment of the APDU CycleCounter per period (SendClockFactor × ReductionRatio).
    pub counter_step: u16,
    /// FrameID (for diagnostics).
    pub frame_id: u16,
}

impl ProviderTemplate {
    /// Copy the Q area's data items into `frame` (a copy of [`ProviderTemplate::frame`]). The
    /// one per-cycle fill of a provider frame: the daemon's real-time thread and pn-farm's I/O
    /// loop both call it. Does not allocate.
    pub fn copy_items(&self, frame: &mut [u8], q: &[u8]) {
        for it in &self.items {
            if let (Some(dst), Some(src)) = (
                frame.get_mut(it.frame_off..it.frame_off + it.len),
                q.get(it.area_off..it.area_off + it.len),
            ) {
                dst.copy_from_slice(src);
            }
        }
    }

    /// Write the APDU status `st` into `frame` at [`ProviderTemplate::status_at`].
    pub fn stamp(&self, frame: &mut [u8], st: ApduStatus) {
        if let Some(b) = frame.get_mut(self.status_at..) {
            let _ = rt::fill_apdu_status(b, st);
        }
    }
}

/// One provider slot taken from a [`SlotClock`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot {
    /// The CycleCounter of this slot's frame.
    pub cycle_counter: u16,
    /// Whole slots that passed before this one without a frame (the shell was late).
    pub missed: u64,
    /// When this slot was due on the clock's grid (not when it was taken): the slot's identity
    /// across the senders of one provider ([`super::ppm_standby::SlotClaim`]).
    pub due_ns: u64,
}

/// The provider's send schedule: one slot per period on an absolute clock (ns of any monotonic
/// clock). A slot whose time has passed by a whole period or more is skipped (no burst of
/// catch-up frames, which would only be discarded as old by the consumer) but still advances
/// the CycleCounter, so the counter says how much time passed, as the standard's CycleCounter
/// does (IEC 61158-6-10). p-net (0e48fbf, `pf_ppm_finish_buffer`) differs: it adds one
/// interval per frame sent, so its counter does not show skipped slots (docs/interop.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlotClock {
    next_ns: u64,
    period_ns: u64,
    counter: u16,
    step: u16,
}

impl SlotClock {
    /// First slot at `first_ns`; its frame carries CycleCounter `first_counter`; each slot
    /// advances the counter by `step` (SendClockFactor × ReductionRatio).
    pub fn new(first_ns: u64, period_ns: u64, first_counter: u16, step: u16) -> SlotClock {
        SlotClock {
            next_ns: first_ns,
            period_ns: period_ns.max(1),
            counter: first_counter,
            step,
        }
    }

    /// First slot at the first multiple of the period after `now_ns` (the period grid of the
    /// clock), CycleCounter `step` in it. Providers of one period in one process then share
    /// their send instants, so one wake-up sends them all (pn-farm: 64 devices at 1 ms wake
    /// their I/O thread once a millisecond instead of once per device). The standard leaves the
    /// phase of an RT_CLASS_1 provider free.
    pub fn on_grid(now_ns: u64, period_ns: u64, step: u16) -> SlotClock {
        let p = period_ns.max(1);
        let first = (now_ns / p).saturating_add(1).saturating_mul(p);
        SlotClock::new(first, p, step, step)
    }

    /// When the next slot is due.
    pub fn next_ns(&self) -> u64 {
        self.next_ns
    }

    pub fn period_ns(&self) -> u64 {
        self.period_ns
    }

    /// Take the slot due at `now_ns` (`None` before [`SlotClock::next_ns`]): the counter for
    /// its frame and the whole slots skipped before it; the next slot is one period later.
    pub fn take(&mut self, now_ns: u64) -> Option<Slot> {
        if now_ns < self.next_ns {
            return None;
        }
        let missed = (now_ns - self.next_ns) / self.period_ns;
        let due_ns = self
            .next_ns
            .saturating_add(missed.saturating_mul(self.period_ns));
        let cycle_counter = self
            .counter
            .wrapping_add((missed as u16).wrapping_mul(self.step));
        self.next_ns = self
            .next_ns
            .saturating_add(missed.saturating_add(1).saturating_mul(self.period_ns));
        self.counter = cycle_counter.wrapping_add(self.step);
        Some(Slot {
            cycle_counter,
            missed,
            due_ns,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::rt::DataStatus;

    #[test]
    fn fill_copies_items_and_stamps_the_status() {
        let t = ProviderTemplate {
            frame: vec![0; 10],
            status_at: 6,
            items: vec![CopyItem {
                frame_off: 2,
                area_off: 1,
                len: 3,
            }],
            period_ns: 1_000_000,
            counter_step: 32,
            frame_id: 0xC000,
        };
        let mut f = t.frame.clone();
        t.copy_items(&mut f, &[9, 1, 2, 3]);
        let st = ApduStatus {
            cycle_counter: 0x0102,
            data_status: DataStatus::RUNNING,
            transfer_status: 0,
        };
        t.stamp(&mut f, st);
        assert_eq!(f, [0, 0, 1, 2, 3, 0, 1, 2, DataStatus::RUNNING.0, 0]);
        // An area shorter than an item leaves the frame's bytes as they were.
        t.copy_items(&mut f, &[7]);
        assert_eq!(&f[2..5], &[1, 2, 3]);
    }

    #[test]
    fn slots_skip_whole_missed_periods_and_count_them_in_the_counter() {
        let mut c = SlotClock::new(1_000, 1_000, 32, 32);
        assert_eq!(c.take(999), None);
        assert_eq!(
            c.take(1_000),
            Some(Slot {
                cycle_counter: 32,
                missed: 0,
                due_ns: 1_000,
            })
        );
        assert_eq!(c.next_ns(), 2_000);
        // Late by less than a period: no slot missed.
        assert_eq!(
            c.take(2_999).map(|s| (s.cycle_counter, s.missed)),
            Some((64, 0))
        );
        assert_eq!(c.next_ns(), 3_000);
        // Two and a half periods late: slots 3000 and 4000 skipped, the counter still moves.
        assert_eq!(
            c.take(5_500).map(|s| (s.cycle_counter, s.missed, s.due_ns)),
            Some((160, 2, 5_000))
        );
        assert_eq!(c.next_ns(), 6_000);
        assert_eq!(c.take(5_999), None);
    }

    #[test]
    fn the_counter_wraps_and_the_grid_is_shared() {
        let mut c = SlotClock::new(0, 10, 0xFFE0, 32);
        assert_eq!(c.take(0).map(|s| s.cycle_counter), Some(0xFFE0));
        assert_eq!(c.take(10).map(|s| s.cycle_counter), Some(0x0000));
        // Two providers started at different times share their slots on the grid.
        let (a, b) = (
            SlotClock::on_grid(1_234_567, 1_000_000, 32),
            SlotClock::on_grid(1_987_654, 1_000_000, 32),
        );
        assert_eq!((a.next_ns(), b.next_ns()), (2_000_000, 2_000_000));
        assert_eq!(
            SlotClock::on_grid(2_000_000, 1_000_000, 32).next_ns(),
            3_000_000
        );
        // Nothing overflows at the end of the clock.
        let mut e = SlotClock::new(u64::MAX - 5, 10, 0, 1);
        assert!(e.take(u64::MAX).is_some());
        assert_eq!(e.next_ns(), u64::MAX);
    }
}

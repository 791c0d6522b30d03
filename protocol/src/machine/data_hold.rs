//! CPM data-hold supervision as the device runs it (IEC 61158-6-10 CPM, the DataHoldTimer),
//! counted in executed control intervals as p-net's CPM does (`pf_cpm_driver_sw.c`,
//! `pf_cpm_control_interval_expired`) with a wall-clock guard.
//!
//! Why cycles and not only the clock ([`super::cyclic::Consumer`] uses the clock): a stall of
//! the whole host (this thread not running) is not evidence of a silent controller, so slots
//! the supervising thread did not execute do not count; but a wall-clock silence longer than
//! the data-hold time plus [`STALL_GUARD`] always trips, however few cycles ran meanwhile. The
//! cycles alone do not trip before the data-hold time has passed on the clock either: after a
//! late wake-up the next deadlines come sooner, and DataHoldFactor executed cycles could fit
//! in less than the data-hold time.
//!
//! The supervision starts with the consumer's first valid frame (CPM FRUN -> RUN); the wait
//! for that frame is the CMDEV machine's (`first_frame_timeout`).
//!
//! One implementation: the daemon's real-time thread, pn-farm's I/O loop, the simulator's
//! device, the controller's test device and the device stack tests' controller
//! (`device/tests/stack_peer`) all run [`DataHold`].

use crate::time::{Duration, Instant};
use crate::wire::rta::abort_reason;

/// The ERR-RTA reason an AR ends with when its data-hold timer expired (also when the first
/// frame never came): AR_CONSUMER_DHT_EXPIRED.
pub const ABORT_REASON: u8 = abort_reason::AR_CONSUMER_DHT_EXPIRED;

/// How much longer than the data-hold time a wall-clock silence may last while the
/// supervising thread itself did not run, before it trips anyway.
pub const STALL_GUARD: Duration = Duration::from_millis(100);

/// The trip rule: `missed` executed intervals without a new valid frame (of `limit`),
/// `silence` since the last valid frame, data-hold time `dht`.
pub fn expired(missed: u64, limit: u64, silence: Duration, dht: Duration) -> bool {
    (missed >= limit && silence >= dht) || silence.as_nanos() > dht.as_nanos() + STALL_GUARD.0
}

/// Why the data-hold timer expired, for the message a user reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Trip {
    /// Executed intervals without a new valid frame.
    pub missed: u64,
    /// Time since the last valid frame.
    pub silence: Duration,
}

impl Trip {
    /// The trip in words, as the daemon and the farm log it and end the AR with (benchmarks
    /// find trips in logs by its start, `watchdog: no `). `data_hold`: the data-hold time.
    pub fn in_words(&self, data_hold: Duration) -> String {
        format!(
            "watchdog: no valid frame from the controller within the data-hold time of {} us ({} cycles without a frame, {} us since the last one)",
            data_hold.as_micros(),
            self.missed,
            self.silence.as_micros()
        )
    }
}

/// The data-hold timer of one consumer CR.
#[derive(Debug, Clone)]
pub struct DataHold {
    dht: Duration,
    /// DataHoldFactor expressed in control intervals of the supervising loop.
    limit: u64,
    missed: u64,
    /// The consumer's valid-frame count at the last interval.
    frames: u64,
}

impl DataHold {
    /// Supervise with data-hold time `dht`, checked every `interval`; `frames`: the consumer's
    /// valid-frame count now (the supervision counts from here).
    pub fn new(dht: Duration, interval: Duration, frames: u64) -> DataHold {
        DataHold {
            dht,
            limit: dht.as_nanos().div_ceil(interval.as_nanos().max(1)),
            missed: 0,
            frames,
        }
    }

    pub fn data_hold_time(&self) -> Duration {
        self.dht
    }

    /// One executed control interval at `now`. `frames`: the consumer's valid-frame count;
    /// `last_frame`: when the last valid frame arrived. `Some` once when the timer expired
    /// (the caller ends the AR; a new AR gets a new timer).
    pub fn on_interval(&mut self, now: Instant, frames: u64, last_frame: Instant) -> Option<Trip> {
        if frames != self.frames {
            self.frames = frames;
            self.missed = 0;
        } else {
            self.missed += 1;
        }
        let silence = now.saturating_since(last_frame);
        expired(self.missed, self.limit, silence, self.dht).then_some(Trip {
            missed: self.missed,
            silence,
        })
    }

    /// [`DataHold::on_interval`], except that an interval without a new frame while
    /// `unread()` says frames are waiting in the receiver (received, not yet consumed) is
    /// not counted: its evidence is queued, not missing. A receiver below the supervisor's
    /// priority can be kept off the CPU for a millisecond by higher-priority threads (traced
    /// in docs/benchmarks.md, session 14), and the cycles it could not read in are not the
    /// controller's. `unread` is asked only when the count did not move. The wall-clock guard
    /// still applies: frames queued that are never consumed trip after the data-hold time
    /// plus [`STALL_GUARD`].
    pub fn on_interval_or_unread(
        &mut self,
        now: Instant,
        frames: u64,
        last_frame: Instant,
        unread: impl FnOnce() -> bool,
    ) -> Option<Trip> {
        if frames == self.frames && unread() {
            let silence = now.saturating_since(last_frame);
            return expired(0, self.limit, silence, self.dht).then_some(Trip {
                missed: self.missed,
                silence,
            });
        }
        self.on_interval(now, frames, last_frame)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn ms(v: u64) -> Duration {
        Duration(v * MS)
    }

    #[test]
    fn the_rule_needs_the_cycles_and_the_data_hold_time() {
        // DataHoldFactor 3 at 1 ms: 3 cycles and 3 ms.
        assert!(expired(3, 3, ms(3), ms(3)));
        assert!(expired(5, 3, ms(4), ms(3)));
        // Three executed cycles squeezed into 2.1 ms after a late wake-up: not yet.
        assert!(!expired(3, 3, Duration(2 * MS + MS / 10), ms(3)));
        // The clock alone (the thread stalled, fewer cycles executed): only past DHT + 100 ms.
        assert!(!expired(1, 3, ms(50), ms(3)));
        assert!(expired(1, 3, ms(104), ms(3)));
        // A frame within the data-hold time resets the count: nothing trips.
        assert!(!expired(0, 3, Duration(0), ms(3)));
    }

    #[test]
    fn a_silent_controller_trips_after_data_hold_factor_intervals_and_not_one_before() {
        let mut w = DataHold::new(ms(3), ms(1), 0);
        // Frames keep coming for 10 intervals.
        for i in 1..=10u64 {
            assert_eq!(w.on_interval(Instant(i * MS), i, Instant(i * MS)), None);
        }
        // Then silence: intervals 11 and 12 do not trip, 13 (3 missed, 3 ms) does.
        let last_frame = Instant(10 * MS);
        assert_eq!(w.on_interval(Instant(11 * MS), 10, last_frame), None);
        assert_eq!(w.on_interval(Instant(12 * MS), 10, last_frame), None);
        let trip = w.on_interval(Instant(13 * MS), 10, last_frame).unwrap();
        assert_eq!(trip.missed, 3);
        assert_eq!(trip.silence, ms(3));
    }

    #[test]
    fn intervals_with_frames_waiting_unread_are_not_counted() {
        let mut w = DataHold::new(ms(3), ms(1), 5);
        let last_frame = Instant(0);
        // Two intervals without a frame, then three whose frames sit unread in the receiver:
        // still two missed, no trip at 5 ms.
        assert_eq!(
            w.on_interval_or_unread(Instant(MS), 5, last_frame, || false),
            None
        );
        assert_eq!(
            w.on_interval_or_unread(Instant(2 * MS), 5, last_frame, || false),
            None
        );
        for i in 3..=5u64 {
            assert_eq!(
                w.on_interval_or_unread(Instant(i * MS), 5, last_frame, || true),
                None
            );
        }
        // The receiver reads them: the count moves and the supervision starts over.
        assert_eq!(
            w.on_interval_or_unread(Instant(6 * MS), 8, Instant(6 * MS), || unreachable!()),
            None
        );
        // A real silence after that trips after three intervals as always.
        for i in 7..=8u64 {
            assert_eq!(
                w.on_interval_or_unread(Instant(i * MS), 8, Instant(6 * MS), || false),
                None
            );
        }
        let trip = w
            .on_interval_or_unread(Instant(9 * MS), 8, Instant(6 * MS), || false)
            .unwrap();
        assert_eq!(trip.missed, 3);
        // Frames that stay unread for good trip on the clock guard: not at DHT + 100 ms, past it.
        let mut w = DataHold::new(ms(3), ms(1), 0);
        assert_eq!(
            w.on_interval_or_unread(Instant(103 * MS), 0, Instant(0), || true),
            None
        );
        assert!(w
            .on_interval_or_unread(Instant(104 * MS), 0, Instant(0), || true)
            .is_some());
    }

    #[test]
    fn a_stalled_supervisor_trips_on_the_clock_guard_only() {
        let mut w = DataHold::new(ms(3), ms(1), 5);
        // One interval executed after a 50 ms stall: silence alone is not enough.
        assert_eq!(w.on_interval(Instant(50 * MS), 5, Instant(0)), None);
        // 104 ms of silence: trips however few intervals ran.
        assert!(w.on_interval(Instant(104 * MS), 5, Instant(0)).is_some());
    }
}

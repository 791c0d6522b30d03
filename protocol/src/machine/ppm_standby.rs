//! A standby sender for one provider: a second thread, on another CPU, that sends a slot's
//! frame when the provider's own thread has not sent it `grace` after the slot was due.
//!
//! # Why
//! On a virtual machine the hypervisor holds single vCPUs for 0.4-40 ms at a time, several
//! times a minute; whatever runs on the held vCPU, even at the highest real-time priority,
//! misses those slots (docs/benchmarks.md, section 8g: the daemon's missed cycles were those
//! of a bare sender on the same vCPU in every half-run). The holds of two vCPUs mostly do not
//! overlap (measured here: 41 and 157 late wake-ups over 400 us in 120 s, 26 and 24 of them
//! overlapping), so a provider with a sender on each of two vCPUs misses only the overlaps.
//! The standard says nothing about who in the device sends a frame; on the wire this is one
//! provider with one schedule and one CycleCounter.
//!
//! # The rule
//! * Both senders run the same [`SlotClock`] (the standby gets a copy of the provider's clock
//!   when the provider installs a job), so slot k has the same due time and CycleCounter on
//!   both.
//! * The standby takes a slot `grace` after it was due ([`StandbyClock`]); the provider takes
//!   it when it wakes.
//! * Whoever claims the slot first in the provider's [`SlotClaim`] sends it; the other does
//!   not. A slot is identified by its due time, which grows across jobs (a new job's first
//!   slot is due when it is installed, after every slot of the old one), so one claim serves
//!   the provider's whole life and one atomic `fetch_max` decides.
//!
//! A frame the standby sends is late by `grace` (a quarter period: 250 us at 1 ms), which the
//! consumer accepts (its data-hold time is whole cycles); a slot neither sender reached
//! within a period is skipped by both, as [`SlotClock`] skips it for one sender.

use std::sync::atomic::{AtomicU64, Ordering};

use super::ppm::{Slot, SlotClock};

/// The standby's default wait after a slot's due time before it sends the slot itself: a
/// quarter period. Long enough that a provider on time (its p99 lateness is 5-40 us at 1 ms
/// here, docs/benchmarks.md section 8) claims first; short enough that a frame the standby
/// sends is never counted as a missed cycle (an interval of 1.25 periods rounds to one).
pub fn grace_ns(period_ns: u64) -> u64 {
    period_ns / 4
}

/// A configured grace (`Some`, ns) kept within (0, half a period]; `None`: [`grace_ns`]. Half
/// a period at most, so that the standby's frame is nearer its own slot than the next.
pub fn grace_for(period_ns: u64, configured: Option<u64>) -> u64 {
    match configured {
        Some(g) => g.clamp(1, (period_ns / 2).max(1)),
        None => grace_ns(period_ns),
    }
}

/// Which slots of one provider have been sent (the latest due time claimed). Shared by the
/// provider's thread and its standby.
#[derive(Debug, Default)]
pub struct SlotClaim(AtomicU64);

impl SlotClaim {
    pub const fn new() -> SlotClaim {
        SlotClaim(AtomicU64::new(0))
    }

    /// Claim `slot` for the caller: true when no sender has claimed it (or a later one) yet;
    /// the caller then sends its frame. Wait-free.
    pub fn claim(&self, slot: &Slot) -> bool {
        self.0.fetch_max(slot.due_ns, Ordering::AcqRel) < slot.due_ns
    }

    /// Due time of the latest slot claimed (0: none yet).
    pub fn latest(&self) -> u64 {
        self.0.load(Ordering::Acquire)
    }
}

/// The standby's schedule: the provider's clock, each slot taken `grace` after it is due.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StandbyClock {
    clock: SlotClock,
    grace_ns: u64,
}

impl StandbyClock {
    /// Follow `provider` (a copy of the provider's clock as installed, before or after it took
    /// slots: slots already taken are skipped as missed), with [`grace_ns`] of its period.
    pub fn new(provider: SlotClock) -> StandbyClock {
        StandbyClock::with_grace(provider, None)
    }

    /// [`StandbyClock::new`] with a configured grace ([`grace_for`]).
    pub fn with_grace(provider: SlotClock, grace_ns: Option<u64>) -> StandbyClock {
        StandbyClock {
            clock: provider,
            grace_ns: grace_for(provider.period_ns(), grace_ns),
        }
    }

    /// When the standby should look next: the next slot's due time plus the grace.
    pub fn next_ns(&self) -> u64 {
        self.clock.next_ns().saturating_add(self.grace_ns)
    }

    /// The latest slot whose grace is over at `now_ns` (`None` before [`StandbyClock::next_ns`]);
    /// the caller sends it if [`SlotClaim::claim`] says so.
    pub fn take(&mut self, now_ns: u64) -> Option<Slot> {
        if now_ns < self.next_ns() {
            return None;
        }
        self.clock.take(now_ns - self.grace_ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: u64 = 1_000_000;

    #[test]
    fn the_provider_on_time_sends_every_slot_and_the_standby_none() {
        let claim = SlotClaim::new();
        let mut prov = SlotClock::new(10 * P, P, 32, 32);
        let mut stby = StandbyClock::new(prov);
        assert_eq!(stby.next_ns(), 10 * P + P / 4);
        for k in 0..5 {
            let s = prov.take(10 * P + k * P + 20_000).expect("due");
            assert!(claim.claim(&s), "slot {k} is the provider's");
            let t = stby.take(stby.next_ns()).expect("grace over");
            assert_eq!(t, s, "both clocks name the same slot");
            assert!(!claim.claim(&t), "slot {k} was sent already");
        }
        assert_eq!(claim.latest(), 14 * P);
    }

    #[test]
    fn a_held_provider_is_covered_and_does_not_send_the_slot_again() {
        let claim = SlotClaim::new();
        let mut prov = SlotClock::new(P, P, 0, 32);
        let mut stby = StandbyClock::new(prov);
        assert!(claim.claim(&prov.take(P).unwrap()));
        assert!(stby.take(P + P / 4).is_some_and(|s| !claim.claim(&s)));
        // The provider's vCPU is held from 1.9 ms to 4.6 ms: the standby sends slots 2, 3 and
        // 4 ms at their grace, with the counters the provider would have used.
        let mut sent = Vec::new();
        for due in [2 * P, 3 * P, 4 * P] {
            let s = stby.take(due + P / 4).unwrap();
            assert_eq!(s.due_ns, due);
            assert!(claim.claim(&s));
            sent.push(s.cycle_counter);
        }
        assert_eq!(sent, [32, 64, 96]);
        // The provider wakes at 4.6 ms: its slot (4 ms, two missed before it) is taken.
        let s = prov.take(4 * P + 600_000).unwrap();
        assert_eq!((s.due_ns, s.missed, s.cycle_counter), (4 * P, 2, 96));
        assert!(!claim.claim(&s), "sent by the standby");
        // From 5 ms on the provider is on time again.
        assert!(claim.claim(&prov.take(5 * P).unwrap()));
        assert!(stby.take(5 * P + P / 4).is_some_and(|s| !claim.claim(&s)));
    }

    #[test]
    fn a_configured_grace_is_kept_within_half_a_period() {
        let c = SlotClock::new(P, P, 0, 32);
        assert_eq!(
            StandbyClock::with_grace(c, Some(20_000)).next_ns(),
            P + 20_000
        );
        assert_eq!(StandbyClock::with_grace(c, Some(0)).next_ns(), P + 1);
        assert_eq!(
            StandbyClock::with_grace(c, Some(5 * P)).next_ns(),
            P + P / 2
        );
        assert_eq!(StandbyClock::with_grace(c, None), StandbyClock::new(c));
    }

    #[test]
    fn a_new_job_continues_the_claim() {
        let claim = SlotClaim::new();
        let mut a = SlotClock::new(P, P, 0, 32);
        for t in [P, 2 * P] {
            assert!(claim.claim(&a.take(t).unwrap()));
        }
        // A job installed at 2.3 ms sends its first slot at once, the standby follows it.
        let mut b = SlotClock::new(2 * P + 300_000, P, 7, 1);
        let mut stby = StandbyClock::new(b);
        assert!(claim.claim(&b.take(2 * P + 300_000).unwrap()));
        assert!(stby.take(stby.next_ns()).is_some_and(|s| !claim.claim(&s)));
        assert!(stby.take(stby.next_ns() - 1).is_none());
    }

    /// Seeded: the provider's and the standby's vCPUs are each held at random (independently,
    /// 0.3-3 ms, about one slot in 20); the two senders run in time order. Every slot is sent
    /// at most once, in order, with its own counter; every slot at whose wake-up one of the
    /// two senders was not held is sent.
    #[test]
    fn two_senders_held_at_random_send_each_reachable_slot_once() {
        let mut seed = 0x9E37_79B9_7F4A_7C15_u64;
        let mut rnd = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let n = 5_000u64;
        let mut holds = |salt: u64| {
            let mut h = Vec::new();
            let mut t = P;
            while t < (n + 1) * P {
                t += (rnd() ^ salt) % (40 * P);
                let len = 300_000 + rnd() % (3 * P);
                h.push((t, t + len));
                t += len;
            }
            h
        };
        let (ph, sh) = (holds(0), holds(0x55));
        let held =
            |h: &[(u64, u64)], t: u64| h.iter().find(|(a, b)| *a <= t && t < *b).map(|x| x.1);
        // A sender's wake-up for deadline d: 10 us after it, or when a hold over it ends.
        let wake = |h: &[(u64, u64)], d: u64| held(h, d + 10_000).unwrap_or(d + 10_000);
        let claim = SlotClaim::new();
        let mut prov = SlotClock::new(P, P, 0, 32);
        let mut stby = StandbyClock::new(prov);
        let mut sent: Vec<(u64, u16)> = Vec::new();
        let end = (n + 1) * P;
        loop {
            let (pw, sw) = (wake(&ph, prov.next_ns()), wake(&sh, stby.next_ns()));
            if pw.min(sw) >= end {
                break;
            }
            let s = if pw <= sw {
                prov.take(pw)
            } else {
                stby.take(sw)
            };
            let s = s.expect("a sender woke at or after its deadline");
            if claim.claim(&s) {
                sent.push((s.due_ns, s.cycle_counter));
            }
        }
        assert!(
            sent.windows(2).all(|w| w[0].0 < w[1].0),
            "each slot once, in order"
        );
        for (due, counter) in &sent {
            assert_eq!(u64::from(*counter), ((due / P - 1) * 32) % 65_536);
        }
        let dues: std::collections::BTreeSet<u64> = sent.iter().map(|s| s.0).collect();
        let mut reachable = 0;
        for k in 0..n {
            let due = P + k * P;
            if held(&ph, due + 10_000).is_none() || held(&sh, due + P / 4 + 10_000).is_none() {
                reachable += 1;
                assert!(
                    dues.contains(&due),
                    "slot at {due} ns reachable but not sent"
                );
            }
        }
        // The holds cover several percent of each sender's time, their overlaps far less.
        assert!(reachable > n * 99 / 100, "{reachable} of {n}");
        let alone = (0..n)
            .filter(|k| held(&ph, P + k * P + 10_000).is_none())
            .count() as u64;
        assert!(
            alone < reachable,
            "the standby covered {} slots",
            reachable - alone
        );
    }
}

//! Time as the protocol machines see it: a monotonic instant and a duration, both in
//! nanoseconds, supplied by the caller. The machines never read a clock themselves, so tests can
//! drive them with simulated time.

use core::ops::{Add, AddAssign, Sub};

/// A point on the caller's monotonic clock, in nanoseconds from an arbitrary origin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Instant(pub u64);

/// A span of time in nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Duration(pub u64);

impl Instant {
    pub const ZERO: Instant = Instant(0);

    pub fn from_nanos(ns: u64) -> Self {
        Instant(ns)
    }
    pub fn from_micros(us: u64) -> Self {
        Instant(us.saturating_mul(1_000))
    }
    pub fn from_millis(ms: u64) -> Self {
        Instant(ms.saturating_mul(1_000_000))
    }
    pub fn as_nanos(self) -> u64 {
        self.0
    }
    /// Time elapsed from `earlier` to `self`, zero if `earlier` is later.
    pub fn saturating_since(self, earlier: Instant) -> Duration {
        Duration(self.0.saturating_sub(earlier.0))
    }
}

impl Duration {
    pub const ZERO: Duration = Duration(0);

    pub const fn from_nanos(ns: u64) -> Self {
        Duration(ns)
    }
    pub const fn from_micros(us: u64) -> Self {
        Duration(us * 1_000)
    }
    pub const fn from_millis(ms: u64) -> Self {
        Duration(ms * 1_000_000)
    }
    pub const fn as_nanos(self) -> u64 {
        self.0
    }
    pub const fn as_micros(self) -> u64 {
        self.0 / 1_000
    }
    pub fn saturating_mul(self, k: u64) -> Duration {
        Duration(self.0.saturating_mul(k))
    }
}

impl Add<Duration> for Instant {
    type Output = Instant;
    fn add(self, d: Duration) -> Instant {
        Instant(self.0.saturating_add(d.0))
    }
}

impl Add<Duration> for Duration {
    type Output = Duration;
    fn add(self, d: Duration) -> Duration {
        Duration(self.0.saturating_add(d.0))
    }
}

impl AddAssign<Duration> for Instant {
    fn add_assign(&mut self, d: Duration) {
        self.0 = self.0.saturating_add(d.0);
    }
}

impl Sub<Instant> for Instant {
    type Output = Duration;
    fn sub(self, earlier: Instant) -> Duration {
        self.saturating_since(earlier)
    }
}

impl From<core::time::Duration> for Duration {
    fn from(d: core::time::Duration) -> Self {
        Duration(d.as_nanos().min(u64::MAX as u128) as u64)
    }
}

impl From<Duration> for core::time::Duration {
    fn from(d: Duration) -> Self {
        core::time::Duration::from_nanos(d.0)
    }
}

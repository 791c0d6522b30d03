//! Timing primitives of the cyclic thread: the monotonic clock, absolute-deadline sleep
//! (`clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME)`), timer slack, and the opt-in real-time
//! settings (SCHED_FIFO, mlockall).

use pn_protocol::time::Instant;

/// Options for the cyclic thread. Both are off by default so tests never starve a small
/// machine; set them for commissioning and load tests on a dedicated host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct RealtimeOptions {
    /// Run the cyclic thread under SCHED_FIFO with this priority (1..=99), where permitted.
    pub fifo_priority: Option<i32>,
    /// Lock all current and future pages into RAM (`mlockall`), where permitted.
    pub lock_memory: bool,
}

/// What could actually be applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct RealtimeApplied {
    pub fifo: bool,
    pub memory_locked: bool,
    pub timer_slack_1ns: bool,
}

/// Now on CLOCK_MONOTONIC.
pub fn now() -> Instant {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid timespec pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    Instant((ts.tv_sec as u64).saturating_mul(1_000_000_000) + ts.tv_nsec as u64)
}

/// Sleep until `t` on CLOCK_MONOTONIC (absolute deadline, restarted on EINTR).
pub fn sleep_until(t: Instant) {
    let ts = libc::timespec {
        tv_sec: (t.0 / 1_000_000_000) as libc::time_t,
        tv_nsec: (t.0 % 1_000_000_000) as libc::c_long,
    };
    loop {
        // SAFETY: valid timespec pointer; remaining-time pointer may be null with ABSTIME.
        let rc = unsafe {
            libc::clock_nanosleep(
                libc::CLOCK_MONOTONIC,
                libc::TIMER_ABSTIME,
                &ts,
                std::ptr::null_mut(),
            )
        };
        if rc != libc::EINTR {
            break;
        }
    }
}

/// Apply timer slack 1 ns to the calling thread and the requested real-time options.
pub fn apply_to_current_thread(opts: RealtimeOptions) -> RealtimeApplied {
    let mut out = RealtimeApplied {
        // SAFETY: prctl with integer arguments.
        timer_slack_1ns: unsafe {
            libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0)
        } == 0,
        ..Default::default()
    };
    if let Some(p) = opts.fifo_priority {
        let param = libc::sched_param {
            sched_priority: p.clamp(1, 99),
        };
        // SAFETY: valid sched_param; 0 = calling thread.
        out.fifo = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) } == 0;
        if !out.fifo {
            tracing::warn!(
                "SCHED_FIFO not permitted: {}",
                std::io::Error::last_os_error()
            );
        }
    }
    if opts.lock_memory {
        // SAFETY: plain syscall.
        out.memory_locked = unsafe { libc::mlockall(libc::MCL_CURRENT | libc::MCL_FUTURE) } == 0;
        if !out.memory_locked {
            tracing::warn!(
                "mlockall not permitted: {}",
                std::io::Error::last_os_error()
            );
        }
    }
    out
}

/// The next deadline after `now` on the grid `start + k * period`, strictly later than `prev`:
/// missed slots are skipped, never caught up in a burst.
pub fn next_slot(prev: Instant, period: u64, now: Instant) -> Instant {
    let period = period.max(1);
    let cand = prev.0.saturating_add(period);
    if cand > now.0 {
        return Instant(cand);
    }
    let behind = now.0 - cand;
    Instant(cand + (behind / period + 1) * period)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_skip_without_burst() {
        assert_eq!(next_slot(Instant(1000), 1000, Instant(1500)), Instant(2000));
        // 3.5 periods late: next slot is the first one after now.
        assert_eq!(next_slot(Instant(1000), 1000, Instant(5500)), Instant(6000));
        assert_eq!(next_slot(Instant(1000), 1000, Instant(2000)), Instant(3000));
    }

    #[test]
    fn absolute_sleep_reaches_deadline() {
        let t0 = now();
        let d = t0 + pn_protocol::time::Duration::from_millis(2);
        sleep_until(d);
        assert!(now() >= d);
        let a = apply_to_current_thread(RealtimeOptions::default());
        assert!(a.timer_slack_1ns);
        assert!(!a.fifo);
    }
}

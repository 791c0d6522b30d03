//! `bench scale --ftrace FILE`: the scheduler around each stall event. The trace runs during
//! the measurement (`bench::ftrace`); afterwards each event's window (the stalled side's
//! silence on the wire, 0.6 ms before it to 0.3 ms after) is summarised per CPU into FILE:
//! who ran, where the CPU recorded nothing (held), how long each thread waited for the CPU
//! after its wake-up, and when each sender's frames left. This is how the question "why did
//! the device stay silent longer than its bare sender" is answered (docs/benchmarks.md).

use std::fmt::Write as _;
use std::path::Path;

use super::stalls::StallEvent;
use super::TRIP_LOG_SLACK_NS;
use crate::bench::ftrace::{self, Session};

/// Windows written at most (the first ones of the run).
const MAX_WINDOWS: usize = 500;
/// Raw trace lines written per window at most (the summary covers the whole window).
const MAX_LINES: usize = 3000;
const BEFORE_NS: u64 = 600_000;
const AFTER_NS: u64 = 300_000;

/// Set the trace up (`buffer_mb` per CPU), before the lab: allocating the buffer takes
/// seconds (27 s for 3 GB per CPU here), which must not fall between the start of the bare
/// senders and the measurement's.
/// The report file is created here too, so that a path that cannot be written fails now, not
/// after the run (when the trace would be lost with it).
pub(super) fn create(buffer_mb: u64, path: &Path) -> Result<Session, String> {
    std::fs::File::create(path).map_err(|e| format!("--ftrace {}: {e}", path.display()))?;
    let s = Session::create("pn-bench-scale", buffer_mb)?;
    println!(
        "ftrace: switches, real-time wake-ups and NET_RX softirqs, {buffer_mb} MB per CPU, recorded during the measurement"
    );
    Ok(s)
}

/// The window of one event (CLOCK_REALTIME ns): around the stalled side's silence, or for a
/// receiver that did not take frames in time the data-hold time before its trip was seen.
pub(super) fn window(e: &StallEvent, dhf_ns: u64) -> (u64, u64) {
    if e.silence_ns == 0 {
        (e.at_ns.saturating_sub(dhf_ns + TRIP_LOG_SLACK_NS), e.at_ns)
    } else {
        (
            e.silence_at_ns.saturating_sub(BEFORE_NS),
            e.silence_at_ns
                .saturating_add(e.silence_ns)
                .saturating_add(AFTER_NS),
        )
    }
}

/// Read the trace and write the windows of `events` to `path`.
pub(super) fn report(
    s: &Session,
    events: &[StallEvent],
    dhf_ns: u64,
    path: &Path,
) -> Result<(), String> {
    let events = &events[..events.len().min(MAX_WINDOWS)];
    let wins: Vec<(u64, u64)> = events.iter().map(|e| window(e, dhf_ns)).collect();
    println!(
        "ftrace: reading the trace for {} stall event window(s) ...",
        wins.len()
    );
    // Nothing to look for: the trace is not read (minutes for a long run).
    let recs = if wins.is_empty() {
        Vec::new()
    } else {
        s.windows(&wins)?
    };
    let over = s.overruns();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# pn-lab bench scale --ftrace: {} stall event(s). Times in us from the start of the stalled side's silence on the wire.\n# Events the ring buffer overwrote (per CPU): {over:?} (non-zero: the earliest windows may be incomplete)",
        events.len()
    );
    for (i, (e, r)) in events.iter().zip(&recs).enumerate() {
        let (a, b) = wins[i];
        let (from, to) = (s.to_mono(a), s.to_mono(b));
        let origin = s.to_mono(if e.silence_ns > 0 {
            e.silence_at_ns
        } else {
            e.at_ns
        });
        let _ = writeln!(
            out,
            "\n## event {i}: {:?}, silence {:.2} ms, bare sender's longest gap near {:.2} ms, explained {}, held {}, other CPU held {}; {} trace lines",
            e.cause,
            e.silence_ns as f64 / 1e6,
            e.bare_max_gap_ns as f64 / 1e6,
            e.explained,
            e.held,
            e.other_held,
            r.len()
        );
        let mut cpus: Vec<usize> = r.iter().map(|x| x.cpu).collect();
        cpus.sort_unstable();
        cpus.dedup();
        for cpu in cpus {
            out.push_str(&ftrace::describe(
                cpu,
                &ftrace::summarize(r, cpu, from, to),
                origin,
            ));
        }
        for x in r.iter().take(MAX_LINES) {
            let _ = writeln!(
                out,
                "    {:+9.1} [{}] {:16} {} {}",
                (x.t_ns as f64 - origin as f64) / 1000.0,
                x.cpu,
                x.comm,
                x.event,
                x.args
            );
        }
    }
    std::fs::write(path, out).map_err(|e| format!("{}: {e}", path.display()))?;
    println!("ftrace: the windows are in {}", path.display());
    Ok(())
}

//! The bench's printed summary: the markdown table row, the AR ends by reason, where the
//! stalls were and the threads' CPU use (the JSON holds the same and more).

use super::stalls::{self, StallCause};
use super::threads::print_thread_use;
use super::ScaleResult;
use std::collections::BTreeMap;

/// The result as a markdown table row, the AR ends by reason, and the threads' CPU use.
pub fn print_result(r: &ScaleResult, streams: usize, bare_report: &str) {
    println!("| devices | connected | DHF | seconds | streams | worst \\|dev\\| p99/max (us) | median \\|dev\\| p99 (us) | gaps>3 all devices | bare \\|dev\\| p99/max (us) | bare gaps>3 / >=DHF | wd trips dev/ctl (explained by a bare gap) | ARs lost (set-up / end) | devices CPU % | controller proc CPU % | ctl missed ticks / max late (us) | max RSS kB | loadavg before/after |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    println!(
        "| {} | {} | {} | {} | {} | {:.1}/{:.1} | {:.1} | {} | {:.1}/{:.1} | {}/{} | {}/{} ({}/{}) | {}/{} | {:.0} | {:.0} | {}/{} | {} | {:.1}/{:.1} |",
        r.devices,
        r.connected,
        r.dhf,
        r.seconds,
        streams,
        r.worst.dev_p99,
        r.worst.dev_max,
        r.median_dev_p99_us,
        r.total_gaps_over_3,
        r.bare.dev_p99,
        r.bare.dev_max,
        r.bare.gaps_over_3,
        r.bare_gaps_over_dhf,
        r.device_watchdog_trips,
        r.controller_watchdog_expiries,
        r.device_trips_explained,
        r.controller_trips_explained,
        r.lost_during_setup.len(),
        r.ars_not_in_data_exchange,
        r.devices_total_cpu_pct,
        r.this_process_cpu_pct.unwrap_or(f64::NAN),
        r.controller_missed_ticks,
        r.controller_max_lateness_us,
        r.devices_rss_kb_max,
        r.loadavg_before,
        r.loadavg_after,
    );
    let mut reasons: BTreeMap<String, usize> = BTreeMap::new();
    for e in &r.ar_ends {
        let reason = e.split_once(": ").map_or(e.as_str(), |x| x.1);
        *reasons
            .entry(reason.chars().take(90).collect())
            .or_default() += 1;
    }
    println!(
        "AR ends during the measurement (each reconnected): {}",
        r.ar_ends.len()
    );
    for (k, v) in &reasons {
        println!("  {v:>4} x {k}");
    }
    print_thread_use("devices in data exchange", &r.device_threads);
    print_thread_use("this process (controller, recorder)", &r.controller_threads);
    let (d, c) = (r.device_trip_sides, r.controller_trip_sides);
    println!(
        "where the stalls were (explained: a bare-sender gap on the stalled side's CPU{}): device trips {} with the controller's frames to them silent on the wire ({} explained), {} with them on the wire ({} explained); controller expiries {} with the devices' frames silent on the wire ({} explained), {} with them on the wire ({} explained)",
        if r.pin.is_some() { "" } else { "; one bare sender, not pinned" },
        d.sender_silent,
        d.sender_silent_explained,
        d.receiver_late,
        d.receiver_late_explained,
        c.sender_silent,
        c.sender_silent_explained,
        c.receiver_late,
        c.receiver_late_explained
    );
    let mut by_cause: BTreeMap<String, (usize, usize, usize)> = BTreeMap::new();
    for e in &r.stall_events {
        let c = by_cause.entry(format!("{:?}", e.cause)).or_default();
        c.0 += 1;
        c.1 += usize::from(e.explained);
        c.2 += usize::from(e.held);
    }
    println!(
        "stall events (trips within {} ms of each other): {}; by the side that stopped first: {}",
        stalls::EVENT_GAP_NS / 1_000_000,
        r.stall_events.len(),
        by_cause
            .iter()
            .map(|(k, (n, x, h))| format!("{k} {n} ({x} explained, {h} held)"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let mut near: Vec<String> = r
        .stall_events
        .iter()
        .filter(|e| !e.explained)
        .map(|e| {
            format!(
                "{:?} {:.1}/{:.1}{}",
                e.cause,
                e.silence_ns as f64 / 1e6,
                e.bare_max_gap_ns as f64 / 1e6,
                if e.held { " held" } else { "" }
            )
        })
        .collect();
    near.truncate(40);
    println!(
        "unexplained stall events: the stalled side's silence on the wire / its bare sender's longest gap near each (ms; \"held\": a gap of its bare sender of over 2 periods overlapped the silence): [{}]",
        near.join(", ")
    );
    println!(
        "stall events without a bare-sender gap of over 2 periods overlapping the stalled side's silence (not held): {} of {}",
        r.stall_events.iter().filter(|e| !e.held).count(),
        r.stall_events.len()
    );
    let by = |cause: StallCause| r.stall_events.iter().filter(move |e| e.cause == cause);
    println!(
        "stall events whose other side's CPU was held too (its bare sender's gap over 2 periods overlapped the silence): devices' {} of {}, controller's {} of {}{}",
        by(StallCause::Devices).filter(|e| e.other_held).count(),
        by(StallCause::Devices).count(),
        by(StallCause::Controller).filter(|e| e.other_held).count(),
        by(StallCause::Controller).count(),
        if r.standby {
            " (the devices' standby senders ran on the other CPU: a silence of theirs needs both held)"
        } else {
            ""
        }
    );
    if r.standby {
        println!(
            "the standby senders sent {} frames (slots their provider had not sent {} after they were due)",
            r.standby_frames,
            if r.standby_grace_us == 0 {
                "a quarter period".to_string()
            } else {
                format!("{} us", r.standby_grace_us)
            }
        );
    }
    println!(
        "farm slow passes logged (I/O loop 1 ms or more late, at most one line per 100 ms): {}",
        r.farm_slow_passes.len()
    );
    if let Some(b) = &r.controller_bare {
        println!(
            "bare sender on the controller's CPUs: |dev| p99/max {:.1}/{:.1} us, gaps > 3 cycles {}",
            b.dev_p99, b.dev_max, b.gaps_over_3
        );
    }
    println!(
        "trip times seen: device {} (log lines), controller {} (events); bare sender: {}; recorder drops {}; setup {:.1} s",
        r.device_trip_times_ns.len(),
        r.controller_trip_times_ns.len(),
        bare_report.trim(),
        r.recorder_drops,
        r.setup_seconds
    );
}

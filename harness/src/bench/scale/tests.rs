use super::stalls::{silent_before, StallCause};
use super::*;

/// `pn-lab bench scale` options as the command line gives them.
fn scale_args(v: &[&str]) -> Result<super::super::ScaleArgs, clap::Error> {
    use clap::Parser;
    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        s: super::super::ScaleArgs,
    }
    Cli::try_parse_from(std::iter::once("x").chain(v.iter().copied())).map(|c| c.s)
}

#[test]
fn rfc3339_timestamps() {
    assert_eq!(
        parse_rfc3339_ns("1970-01-01T00:00:01Z"),
        Some(1_000_000_000)
    );
    assert_eq!(
        parse_rfc3339_ns("2026-11-23T22:10:00.5Z"),
        Some(1_795_471_800_500_000_000)
    );
    assert_eq!(parse_rfc3339_ns("not a time"), None);
}

#[test]
fn bare_gap_window() {
    let ms = 1_000_000u64;
    let bare = [0, ms, 2 * ms, 10 * ms, 11 * ms];
    // The 8 ms gap (2..10 ms) explains a 3 ms watchdog at 10.5 ms.
    assert!(bare_gap_near(&bare, 10 * ms + ms / 2, 3 * ms, 1_000 * ms));
    // Not one needing a 9 ms gap.
    assert!(!bare_gap_near(&bare, 10 * ms + ms / 2, 9 * ms, 1_000 * ms));
    // Not a trip 2 s later.
    assert!(!bare_gap_near(&bare, 2_010 * ms, 3 * ms, 1_000 * ms));
}

#[test]
fn trip_lines_of_the_daemon_and_the_farm() {
    let log = concat!(
        "2026-11-23T22:10:00.5Z WARN pn_device::stack: watchdog: no valid frame from the controller within the data-hold time of 3000 us\n",
        "2026-11-23T22:10:00.6Z INFO pn_device::stack: AR ended\n",
        // The farm's line, coloured as tracing-subscriber writes it to a terminal.
        "\u{1b}[2m2026-11-23T22:10:01Z\u{1b}[0m \u{1b}[32m INFO\u{1b}[0m pn_farm::device: AR ended: watchdog: no valid frame from the controller within the data-hold time of 12000 us\n",
        "2026-11-23T22:10:02Z INFO pn_farm::device: AR ended: released by the controller\n",
        // The controller's watchdog, not the device's.
        "2026-11-23T22:10:03Z INFO pn_farm::device: AR ended: the controller ended the AR with ERR-RTA CF 81 FD 05 (consumer data-hold time (watchdog) expired)\n",
    );
    assert_eq!(
        side::trip_times(log),
        vec![1_795_471_800_500_000_000, 1_795_471_801_000_000_000]
    );
}

#[test]
fn silence_on_the_wire_before_a_trip() {
    let ms = 1_000_000u64;
    // Frames every ms up to 10 ms, then silence until 15 ms, then every ms up to 30 ms; the
    // recording ends at 100 ms.
    let mut s: Vec<u64> = (0..=10).map(|i| i * ms).collect();
    s.extend((15..=30).map(|i| i * ms));
    let quiet = silences(&[s], 3 * ms, 100 * ms);
    assert_eq!(quiet, vec![(10 * ms, 5 * ms), (30 * ms, 70 * ms)]);
    // A trip at 14 ms (3 ms watchdog): the sender was silent from 10 ms.
    assert!(silent_before(&quiet, 14 * ms, 3 * ms, 50 * ms));
    // The 5 ms silence does not make a 6 ms one.
    assert!(!silent_before(&quiet, 14 * ms, 6 * ms, 50 * ms));
    // A trip at 25 ms with a 5 ms look-back: frames were on the wire up to it.
    assert!(!silent_before(&quiet, 25 * ms, 3 * ms, 5 * ms));
    // With a look-back reaching 10 ms, the silence before it counts.
    assert!(silent_before(&quiet, 25 * ms, 3 * ms, 16 * ms));
    // Silence to the end of the recording counts from the last frame...
    assert!(silent_before(&quiet, 40 * ms, 3 * ms, 15 * ms));
    // ...within the look-back only.
    assert!(!silent_before(&quiet, 80 * ms, 3 * ms, 20 * ms));
    // A silence that began less than the watchdog time before the trip is its consequence
    // (the AR ended and the frames stopped), not its cause.
    assert!(!silent_before(&quiet, 32 * ms, 3 * ms, 5 * ms));
    assert!(silent_before(&quiet, 33 * ms, 3 * ms, 5 * ms));
    // No stream, no silence.
    assert!(silences(&[], 3 * ms, 100 * ms).is_empty());
    assert!(!silent_before(&[], 5 * ms, 3 * ms, 50 * ms));
}

#[test]
fn silences_of_several_streams_are_merged_in_time_order() {
    let ms = 1_000_000u64;
    let a: Vec<u64> = vec![0, 10 * ms, 11 * ms];
    let b: Vec<u64> = vec![0, ms, 5 * ms, 11 * ms];
    assert_eq!(
        silences(&[a, b], 4 * ms, 11 * ms),
        vec![(0, 10 * ms), (ms, 4 * ms), (5 * ms, 6 * ms)]
    );
}

#[test]
fn trips_split_by_the_side_that_stalled() {
    let ms = 1_000_000u64;
    let mut watched: Vec<u64> = (0..=400).map(|i| i * ms).collect();
    watched.retain(|&t| !(20 * ms < t && t < 26 * ms)); // a 6 ms silence at 20 ms
    let quiet = silences(&[watched], 2 * ms, 400 * ms);
    let stalled_at = |from: u64, to: u64| -> Vec<u64> {
        (0..=400)
            .map(|i| i * ms)
            .filter(|&t| !(from * ms < t && t < to * ms))
            .collect()
    };
    // The sender's bare sender stalled with it; the receiver's at 290-296 ms.
    let (sender_bare, receiver_bare) = (stalled_at(18, 24), stalled_at(290, 296));
    let both = Baselines {
        sender: &sender_bare,
        receiver: &receiver_bare,
    };
    // Trip at 24 ms: silent sender, explained by the sender's baseline; at 300 ms: frames
    // on the wire, the receiver's baseline explains it; at 700 ms: nothing does.
    let s = trip_sides(&[24 * ms, 300 * ms, 700 * ms], &quiet, both, ms, 3 * ms);
    assert_eq!(
        s,
        TripSides {
            sender_silent: 1,
            sender_silent_explained: 1,
            receiver_late: 2,
            receiver_late_explained: 1,
        }
    );
    // With the baselines swapped, neither stall is explained by the other side's.
    let swapped = Baselines {
        sender: &receiver_bare,
        receiver: &sender_bare,
    };
    let s = trip_sides(&[24 * ms, 300 * ms], &quiet, swapped, ms, 3 * ms);
    assert_eq!(
        (s.sender_silent_explained, s.receiver_late_explained),
        (0, 0)
    );
}

#[test]
fn stall_events_go_to_the_side_that_stopped_first() {
    let ms = 1_000_000u64;
    let every_ms = |from: u64, to: u64, holes: &[(u64, u64)]| -> Vec<u64> {
        (from..=to)
            .filter(|i| !holes.iter().any(|&(a, b)| a < *i && *i < b))
            .map(|i| i * ms)
            .collect()
    };
    // The devices stop at 100 ms for 6 ms (their bare sender too); the controller stops at
    // 500 ms for 6 ms and the devices stop after their watchdogs trip (the consequence);
    // at 700 ms the devices stop for 4 ms while their bare sender, at another phase of the
    // same hold, misses only 2.5 ms (a slot, not the data-hold time); at 900 ms nothing
    // stops on the wire and the controller's watchdog expires.
    let dev = every_ms(0, 1000, &[(100, 106), (505, 520), (700, 704)]);
    let ctl = every_ms(0, 1000, &[(500, 506)]);
    let end = 1000 * ms;
    let (ds, cs) = (silences(&[dev], 2 * ms, end), silences(&[ctl], 2 * ms, end));
    let mut dev_bare = every_ms(0, 1000, &[(99, 105), (700, 703)]);
    dev_bare.push(702 * ms + ms / 2);
    dev_bare.sort_unstable();
    // The controller's CPU was held at 100 ms too (its bare sender paused 4 ms).
    let ctl_bare = every_ms(0, 1000, &[(100, 104)]);
    let ev = stall_events(
        &[504 * ms],
        &[104 * ms, 104 * ms + 10, 509 * ms, 704 * ms, 904 * ms],
        &ds,
        &cs,
        Baselines {
            sender: &dev_bare,
            receiver: &ctl_bare,
        },
        ms,
        3 * ms,
    );
    // The devices' bare sender's 6 ms gap is the longest near the first event, its 2.5 ms
    // one near the third; the controller's bare sender never paused (1 ms between frames).
    assert_eq!(
        ev.iter().map(|e| e.bare_max_gap_ns).collect::<Vec<_>>(),
        vec![6 * ms, ms, 5 * ms / 2, ms]
    );
    // The silence that caused each: the devices' 6 ms from 100 ms, the controller's 6 ms
    // from 500 ms (not the devices' later one), the devices' 4 ms from 700 ms, none at 900.
    assert_eq!(
        ev.iter()
            .map(|e| (e.silence_at_ns / ms, e.silence_ns / ms))
            .collect::<Vec<_>>(),
        vec![(100, 6), (500, 6), (700, 4), (0, 0)]
    );
    let got: Vec<(u64, usize, usize, StallCause, bool, bool)> = ev
        .iter()
        .map(|e| {
            (
                e.at_ns / ms,
                e.device_trips,
                e.controller_expiries,
                e.cause,
                e.explained,
                e.held,
            )
        })
        .collect();
    // Explained: a bare gap of the data-hold time; held: a bare gap of over two periods
    // overlapping the silence (the 2.5 ms one at 700 ms is the second, not the first).
    assert_eq!(
        got,
        vec![
            (104, 0, 2, StallCause::Devices, true, true),
            (504, 1, 1, StallCause::Controller, false, false),
            (704, 0, 1, StallCause::Devices, false, true),
            (904, 0, 1, StallCause::ControllerReceive, false, false),
        ]
    );
    // The other side's CPU held during the silence: only at 100 ms (both CPUs then).
    assert_eq!(
        ev.iter().map(|e| e.other_held).collect::<Vec<_>>(),
        vec![true, false, false, false]
    );
}

#[test]
fn log_lines_with_their_times() {
    let log = concat!(
        "2026-11-23T22:10:00.5Z  WARN pn_farm::status: farm-io: slow pass, every device's frames late count=1\n",
        "2026-11-23T22:10:01Z  INFO pn_farm: something else\n",
        "not a timestamp farm-io: slow pass\n",
    );
    let got = side::lines_with(log, "farm-io: slow pass");
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].0, 1_795_471_800_500_000_000);
    assert!(got[0].1.ends_with("count=1"));
}

#[test]
fn trips_after_the_measurement_do_not_count() {
    let (from, to) = (1_000_000_000u64, 2_000_000_000u64);
    assert!(!in_window(from - 1, from, to));
    assert!(in_window(from, from, to));
    // A trip just before the end, logged a few ms after it (a daemon's log line).
    assert!(in_window(to + 12_000_000, from, to));
    // The bench's own wind-down, half a second later: not the measurement's.
    assert!(!in_window(to + 500_000_000, from, to));
}

#[test]
fn the_bare_sender_keeps_its_own_phase_unless_asked() {
    use super::super::BarePhase;
    let parse = |v: &[&str]| scale_args(v).map(|s| s.bare_phase);
    // `start` by default: on the farm's grid the baseline delays the farm after a hold
    // (docs/benchmarks.md, session 13).
    assert_eq!(parse(&[]).unwrap(), BarePhase::Start);
    assert_eq!(parse(&["--bare-phase", "grid"]).unwrap(), BarePhase::Grid);
    assert!(parse(&["--bare-phase", "middle"]).is_err());
}

#[test]
fn the_bare_sender_sits_one_above_a_daemon_when_pinned_unless_asked() {
    let prio = |v: &[&str]| scale_args(v).map(|s| super::bare_prio(&s));
    assert_eq!(prio(&[]).unwrap(), 60);
    assert_eq!(prio(&["--pin", "1"]).unwrap(), 61);
    // Equal terms with a daemon's cyclic thread (decisions §38).
    assert_eq!(prio(&["--pin", "1", "--bare-prio", "60"]).unwrap(), 60);
    assert!(prio(&["--bare-prio", "99"]).is_err());
    assert!(prio(&["--bare-prio", "0"]).is_err());
}

#[test]
fn the_standby_settings_become_the_farms_options() {
    use super::side::farm_standby_args;
    let args = |cpu: i64, grace: u64| {
        farm_standby_args(&serde_json::json!({"StandbyCpu": cpu, "StandbyGraceUs": grace}))
    };
    assert!(args(-1, 0).is_empty(), "no standby: no option");
    assert!(
        args(-1, 50).is_empty(),
        "a grace without a standby is not passed"
    );
    assert_eq!(args(0, 0), ["--standby-cpu", "0"]);
    assert_eq!(
        args(1, 50),
        ["--standby-cpu", "1", "--standby-grace-us", "50"]
    );
    // As StandbyArgs::settings builds them: --standby with --pin 1 puts it on CPU 0.
    let sb = crate::bench::StandbyArgs {
        standby: true,
        standby_grace_us: 0,
    };
    assert_eq!(
        farm_standby_args(&sb.settings(Some(1))),
        ["--standby-cpu", "0"]
    );
    assert!(farm_standby_args(&sb.settings(None)).is_empty());
}

#[test]
fn a_traced_event_window_spans_the_silence_or_the_receivers_data_hold_time() {
    let ev = |silence_at_ns, silence_ns| StallEvent {
        at_ns: 50_000_000,
        device_trips: 1,
        controller_expiries: 0,
        cause: if silence_ns > 0 {
            StallCause::Devices
        } else {
            StallCause::DevicesReceive
        },
        explained: false,
        held: false,
        other_held: false,
        bare_max_gap_ns: 0,
        silence_at_ns,
        silence_ns,
    };
    // A silence of 1 ms from 40 ms: 0.6 ms before it to 0.3 ms after it.
    assert_eq!(
        trace::window(&ev(40_000_000, 1_000_000), 750_000),
        (39_400_000, 41_300_000)
    );
    // No silence (a receiver late): the data-hold time and the trip report's slack before
    // the trip, clamped at 0.
    assert_eq!(trace::window(&ev(0, 0), 750_000), (0, 50_000_000));
}

#[test]
fn the_trace_options_are_checked_at_the_command_line() {
    let parse = |v: &[&str]| scale_args(v).map(|s| (s.ftrace, s.ftrace_buffer_mb));
    assert_eq!(parse(&[]).unwrap(), (None, 2000));
    assert_eq!(
        parse(&["--ftrace", "t.txt", "--ftrace-buffer-mb", "500"]).unwrap(),
        (Some("t.txt".into()), 500)
    );
    assert!(
        parse(&["--ftrace-buffer-mb", "500"]).is_err(),
        "a buffer without a trace"
    );
    assert!(parse(&["--ftrace", "t.txt", "--ftrace-buffer-mb", "8"]).is_err());
}

//! `pn-lab bench scale`: one controller process (the controller library in this process, one
//! raw socket, one cyclic thread) driving N devices, each a separate `pn-device` process in its
//! own namespace, joined by a bridge in the controller namespace, or (`--farm`) one `pn-farm`
//! process emulating the N devices on one veth (`scale/side.rs`). The bare sender runs in the
//! first device namespace beside that device (the farm's namespace). Reported: per-device interval statistics on the
//! wire (worst and median), watchdog trips on both sides, and the bare sender's gaps.
//!
//! Phases: (1) all daemons idle (no AR) for `--idle-seconds`: their CPU time per thread name
//! (`/proc/PID/task/TID/schedstat`: run time in ns and the number of times each thread ran,
//! i.e. its wake-ups); (2) the ARs are connected, `--connect-parallel` at a time, while the
//! ARs already up exchange data (ARs lost during this phase are reported with the reason);
//! (3) the measurement. Every watchdog trip of the measurement (controller: its event; device:
//! the WARN line in its log) is checked against the bare sender's stream: a trip is "explained"
//! when the bare sender, on the same machine at the same time, also had a gap of at least
//! DataHoldFactor cycles ending within [`EXPLAIN_WINDOW_NS`] before the trip (the trip times,
//! the bare sender's gaps and the window are in the JSON, to be judged with another window).

use super::recorder::{Kind, Recorder};
use super::rig::{cpu_pct, sibling_binary, ChildGuard, CpuLoad};
use super::stats::{intervals, IntervalStats};
use super::{nap, raw, stopped, write_json, OnOff, ScaleArgs};
use pn_controller::{
    ArHandle, ArState, Controller, ControllerConfig, Event, RealtimeOptions, TickStats,
};
use pn_testkit::netns::NetNs;
use report::print_result;
use side::Side;
use stalls::{bare_gap_near, silences, stall_events, trip_sides, Baselines, StallEvent, TripSides};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use threads::{idle_phase, thread_use, threads_of, ThreadUse, Threads};

/// How long before a trip (as the bench sees it: the device's log line, written by its
/// connection manager up to ~12 ms after the trip, or the controller's event) a bare-sender
/// gap may have ended and still count as the same stall.
pub const EXPLAIN_WINDOW_NS: u64 = 250_000_000;

/// `YYYY-MM-DDTHH:MM:SS[.frac]Z` (UTC) to Unix ns.
fn parse_rfc3339_ns(s: &str) -> Option<u64> {
    let t = humantime::parse_rfc3339(s).ok()?;
    let d = t.duration_since(std::time::UNIX_EPOCH).ok()?;
    u64::try_from(d.as_nanos()).ok()
}

#[derive(Debug, serde::Serialize)]
pub struct ScaleResult {
    pub devices: usize,
    pub connected: usize,
    pub period_us: u64,
    pub seconds: u64,
    pub dhf: u16,
    pub hires: bool,
    /// `--pin`: the CPU of the devices and the bare sender.
    pub pin: Option<usize>,
    /// `--rps`: each side's received frames processed on its own CPUs.
    pub rps: bool,
    /// `--load`: busy threads on the controller's CPUs.
    pub load_threads: usize,
    /// `--isolate`: every other thread kept off the devices' CPU.
    pub isolate: bool,
    /// `--standby`: each daemon (or the farm) ran its standby sender on the other CPU (grace
    /// in us, 0: a quarter period); the frames they sent.
    pub standby: bool,
    pub standby_grace_us: u64,
    pub standby_frames: i64,
    pub worst: IntervalStats,
    pub median_dev_p99_us: f64,
    pub per_device: Vec<IntervalStats>,
    pub controller_stream: IntervalStats,
    pub bare: IntervalStats,
    pub device_watchdog_trips: i64,
    pub controller_watchdog_expiries: u64,
    pub ars_not_in_data_exchange: usize,
    pub total_gaps_over_3: u64,
    pub devices_total_cpu_pct: f64,
    pub this_process_cpu_pct: Option<f64>,
    /// The largest resident set of a device process, and how many devices one process holds
    /// (1 for daemons, N for the farm).
    pub devices_rss_kb_max: u64,
    pub devices_per_process: usize,
    /// Whether the devices were one `pn-farm` process (`--farm`), and how it read its
    /// frames (`--farm-rx`).
    pub farm: bool,
    pub farm_rx: Option<super::FarmRx>,
    /// When the bare sender beside the devices was due (`--bare-phase`), and its
    /// SCHED_FIFO priority (`--bare-prio`).
    pub bare_phase: super::BarePhase,
    pub bare_prio: i32,
    pub recorder_drops: u64,
    pub loadavg_before: f64,
    pub setup_seconds: f64,
    /// Idle phase (no AR): seconds, CPU of all daemons by thread name.
    pub idle_seconds: f64,
    pub idle_threads: Vec<ThreadUse>,
    pub idle_total_cpu_pct: f64,
    /// Connects run at the same time.
    pub connect_parallel: usize,
    /// Connect call durations (ms): p50 / max.
    pub connect_ms_p50: f64,
    pub connect_ms_max: f64,
    pub connect_failures: Vec<String>,
    /// ARs that ended between their connect and the start of the measurement, with the reason.
    pub lost_during_setup: Vec<String>,
    /// Measurement: CPU of all daemons and of this process (controller, recorder) by thread.
    pub device_threads: Vec<ThreadUse>,
    pub controller_threads: Vec<ThreadUse>,
    /// Controller cyclic thread during the measurement: ticks, missed ticks, max lateness.
    pub controller_ticks: u64,
    pub controller_missed_ticks: u64,
    pub controller_max_lateness_us: u64,
    /// Trips during the measurement with a bare-sender gap >= DataHoldFactor cycles ending
    /// within [`EXPLAIN_WINDOW_NS`] before: (device trips explained, controller trips
    /// explained).
    pub device_trips_explained: usize,
    pub controller_trips_explained: usize,
    pub bare_gaps_over_dhf: u64,
    /// Device trips by where the stall was: the controller's frames silent on the wire
    /// (the controller stalled) or on the wire (the devices' receive path stalled).
    pub device_trip_sides: TripSides,
    /// Controller expiries by where the stall was: every device's frames silent on the wire
    /// (the devices' process stalled as a whole) or frames on the wire (the controller's
    /// receive path stalled, or only some devices stopped).
    pub controller_trip_sides: TripSides,
    /// Silences on the wire of at least the data-hold time less half a cycle (start, length
    /// in ns, CLOCK_REALTIME) of each device's stream and of the controller's stream to each
    /// device.
    pub device_silences_ns: Vec<(u64, u64)>,
    pub controller_silences_ns: Vec<(u64, u64)>,
    /// With `--pin`: the second bare sender's stream, on the controller's CPU.
    pub controller_bare: Option<IntervalStats>,
    /// The farm's "slow pass" log lines of the measurement (its I/O loop woke or ran 1 ms or
    /// more late: every device's frames were late), with their times.
    pub farm_slow_passes: Vec<(u64, String)>,
    /// The trips of both sides grouped into stall events, each with the side that stopped
    /// first and whether that side's bare sender had a gap then.
    pub stall_events: Vec<StallEvent>,
    pub loadavg_after: f64,
    /// Every AR end during the measurement (the AR was then reconnected), with its reason.
    pub ar_ends: Vec<String>,
    /// CLOCK_REALTIME ns of the trips of the measurement and of the bare sender's gaps of at
    /// least DataHoldFactor cycles (start, length in ns).
    pub device_trip_times_ns: Vec<u64>,
    pub controller_trip_times_ns: Vec<u64>,
    pub bare_gaps_over_dhf_ns: Vec<(u64, u64)>,
    pub explain_window_ns: u64,
}

pub fn run(opts: &ScaleArgs) -> Result<(), String> {
    let n = opts.devices as usize;
    let (period_us, seconds, dhf, idle_seconds) =
        (opts.period_us, opts.seconds, opts.dhf, opts.idle_seconds);
    let parallel = opts.connect_parallel as usize;
    let ctl_prio = opts.ctl_prio;
    let hires = opts.hires == OnOff::On;
    check_args(opts)?;
    println!("machine: {}", raw::machine());
    let mut ftrace = opts
        .ftrace
        .as_ref()
        .map(|path| trace::create(opts.ftrace_buffer_mb, path))
        .transpose()?;
    let loadavg_before = raw::loadavg1();
    let (_dir, ctl_ns, br, devs) = lab(opts, hires)?;
    devs.wait_ready()?;
    let pids = devs.pids();
    // Phase 1: idle daemons (no AR), after a settling second.
    let (idle_threads, idle_secs) = idle_phase(&pids, n, idle_seconds);
    let idle_total: f64 = idle_threads.iter().map(|t| t.cpu_pct).sum();
    if opts.idle_only {
        return Ok(());
    }
    let setup0 = Instant::now();
    let rec = Recorder::start(ctl_ns.path(), &br)?;
    let units = (period_us * 1000 / 31_250).max(1) as u16;
    let ctl = start_controller(&ctl_ns, &br, units, ctl_prio)?;
    let events = EventLog::start(&ctl);
    let mut ars = Ars(Vec::new(), Some(ctl));
    // Phase 2: connect, `parallel` at a time.
    let cfgs = ars::configs(&devs.targets, units, dhf)?;
    let mut up = ars::connect_all(ars.1.as_ref().ok_or("no controller")?, &cfgs, parallel)?;
    ars.0 = std::mem::take(&mut up.ars);
    let connected = ars.0.len();
    let setup_seconds = setup0.elapsed().as_secs_f64();
    let lost_during_setup = ars::not_in_data_exchange(&ars.0);
    println!(
        "{connected}/{n} ARs connected in {setup_seconds:.1} s ({parallel} at a time; connect p50 {:.0} ms, max {:.0} ms); {} lost during the set-up; measuring {seconds} s (DataHoldFactor {dhf}, high-resolution timer {})",
        up.p50_ms(),
        up.max_ms(),
        lost_during_setup.len(),
        if hires { "on" } else { "off" }
    );
    for l in lost_during_setup.iter().take(10) {
        println!("  lost during set-up: {l}");
    }
    // Pinned, the bare sender shares the devices' CPU one priority above a daemon's cyclic
    // thread (60), as in the cycle bench, so that a device's spin before its deadline cannot
    // delay the baseline.
    let bare = spawn_bare(
        &devs,
        period_us,
        seconds,
        bare_prio(opts),
        opts.bare_phase == super::BarePhase::Grid,
    )?;
    // Pinned: a second bare sender on the controller's bridge shares the controller's CPUs,
    // the baseline of the controller's stalls as the first is of the devices'.
    let (ctl_bare_sender, load, isolation) = match opts.pin {
        None => (None, None, None),
        Some(cpu) => {
            let others = raw::other_cpus(cpu);
            let b2 = spawn_bare_on(&ctl_ns, &br, period_us, seconds, 60, false)?;
            for pid in pids.iter().chain(bare.pid().as_ref()) {
                // A daemon's standby sender (--standby) goes to the other CPUs.
                raw::pin_device(*pid, &[cpu], &others)?;
            }
            raw::pin_process(std::process::id(), &others)?;
            if let Some(p) = b2.pid() {
                raw::pin_process(p, &others)?;
            }
            println!(
                "pinned: the devices and a bare sender (SCHED_FIFO {}) to CPU {cpu}; the controller, the recorder and a second bare sender to CPUs {others:?}",
                bare_prio(opts)
            );
            if opts.rps {
                devs.steer_rx(&ctl_ns, &[cpu], &others)?;
                println!(
                    "receive steering: the devices' received frames on CPU {cpu}, the bridge's on CPUs {others:?}"
                );
            }
            let isolation = opts.isolate.then(|| {
                let keep: Vec<u32> = pids.iter().copied().chain(bare.pid()).collect();
                let iso = raw::Isolation::start(cpu, &keep);
                println!(
                    "isolated: {} other threads moved off CPU {cpu} for the run",
                    iso.moved()
                );
                iso
            });
            let load = (opts.load > 0).then(|| {
                println!("{} busy threads on CPUs {others:?}", opts.load);
                CpuLoad::start_on(opts.load, others.clone())
            });
            (Some(b2), load, isolation)
        }
    };
    if let Some(t) = ftrace.as_mut() {
        t.record()?;
    }
    nap(Duration::from_millis(500));
    rec.clear();
    let drops0 = rec.drops();
    let s0 = Snapshot::take(&pids, ars.1.as_ref(), &devs);
    let standby0 = devs.standby_frames();
    let (held, ends) = ars::hold(
        ars.1.as_ref().ok_or("no controller")?,
        std::mem::take(&mut ars.0),
        &cfgs,
        seconds,
    );
    ars.0 = held;
    // The end of the measurement: the recorder's frames stop here, so a trip after it could
    // not be attributed to a side (the bench's own work after it, e.g. handing over the
    // recorded frames, is not the devices' or the controller's).
    let end_real_ns = raw::realtime_ns();
    if let Some(t) = ftrace.as_mut() {
        t.stop();
    }
    let recs = rec.take();
    let s1 = Snapshot::take(&pids, ars.1.as_ref(), &devs);
    let secs = (s1.mono_ns - s0.mono_ns) as f64 / 1e9;
    let loadavg_after = raw::loadavg1();
    let (rss_max, devices_per_process) = devs.rss_max_kb();
    let not_dx = ars
        .0
        .iter()
        .filter(|a| a.state() != ArState::DataExchange)
        .count();
    let bare_report = bare.finish(Duration::from_secs(4));
    let events = events.finish();
    if stopped() {
        return Err("interrupted".into());
    }
    let period_ns = period_us * 1000;
    let macs = rec.macs();
    let st = streams(&recs, macs.len(), period_ns, dhf);
    let (mut per, ctl_ts, bare_ts) = (st.per, st.ctl, st.bare);
    // The baseline must cover the whole measurement, or the stalls after its end have nothing
    // to be held against (it runs two seconds longer than the measurement from its start).
    if let Some(&last) = bare_ts.last() {
        let short = end_real_ns.saturating_sub(last);
        if short > 10 * period_ns {
            println!(
                "warning: the bare sender beside the devices stopped {:.1} s before the end of the measurement; stalls after it cannot be held against it",
                short as f64 / 1e9
            );
        }
    }
    per.sort_by(|a, b| a.dev_p99.total_cmp(&b.dev_p99));
    let worst = per.last().cloned().unwrap_or_default();
    let median = per.get(per.len() / 2).map_or(0.0, |s| s.dev_p99);
    let dev_cpu: f64 = s0
        .dev_cpu
        .iter()
        .zip(&s1.dev_cpu)
        .filter_map(|(a, b)| cpu_pct(*a, *b, secs))
        .sum();
    // Trips of the measurement and whether the bare sender had a gap of DataHoldFactor cycles
    // (the time a watchdog needs) ending within EXPLAIN_WINDOW_NS before them.
    let dhf_ns = u64::from(dhf) * period_ns;
    let (dev_trip_times, ctl_trip_times) = trip_times(&events, &devs, s0.real_ns, end_real_ns);
    let explained = |ts: &[u64]| {
        ts.iter()
            .filter(|t| bare_gap_near(&bare_ts, **t, dhf_ns, EXPLAIN_WINDOW_NS))
            .count()
    };
    let bare_gaps = gaps_at_least(&bare_ts, dhf_ns);
    let ctl_bare: &[u64] = if st.bare_ctl.is_empty() {
        &bare_ts
    } else {
        &st.bare_ctl
    };
    let device_threads = thread_use(&s0.dev_threads, &s1.dev_threads, secs);
    let controller_threads = thread_use(&s0.me_threads, &s1.me_threads, secs);
    let r = ScaleResult {
        devices: n,
        connected,
        period_us,
        seconds,
        dhf,
        hires,
        pin: opts.pin,
        rps: opts.rps,
        load_threads: opts.load,
        isolate: opts.isolate,
        standby: opts.standby.standby,
        standby_grace_us: opts.standby.standby_grace_us,
        standby_frames: devs.standby_frames() - standby0,
        total_gaps_over_3: per.iter().map(|s| s.gaps_over_3).sum(),
        worst,
        median_dev_p99_us: median,
        // Controller frames to all devices interleave: their stream is per-AR, report the
        // aggregate only as a frame count.
        controller_stream: intervals(&ctl_ts, period_ns / (connected.max(1) as u64)),
        bare: intervals(&bare_ts, period_ns),
        device_watchdog_trips: s1.trips - s0.trips,
        controller_watchdog_expiries: ctl_trip_times.len() as u64,
        ars_not_in_data_exchange: not_dx,
        devices_total_cpu_pct: dev_cpu,
        this_process_cpu_pct: cpu_pct(s0.me_cpu, s1.me_cpu, secs),
        devices_rss_kb_max: rss_max,
        devices_per_process,
        farm: opts.farm,
        farm_rx: opts.farm.then_some(opts.farm_rx),
        bare_phase: opts.bare_phase,
        bare_prio: bare_prio(opts),
        recorder_drops: rec.drops() - drops0,
        loadavg_before,
        setup_seconds,
        idle_seconds: idle_secs,
        idle_total_cpu_pct: idle_total,
        idle_threads,
        connect_parallel: parallel,
        connect_ms_p50: up.p50_ms(),
        connect_ms_max: up.max_ms(),
        connect_failures: up.failures,
        lost_during_setup,
        device_threads,
        controller_threads,
        controller_ticks: s1.ticks.ticks.saturating_sub(s0.ticks.ticks),
        controller_missed_ticks: s1.ticks.missed_ticks.saturating_sub(s0.ticks.missed_ticks),
        controller_max_lateness_us: s1.ticks.max_lateness_us,
        device_trips_explained: explained(&dev_trip_times),
        controller_trips_explained: explained(&ctl_trip_times),
        bare_gaps_over_dhf: bare_gaps.len() as u64,
        device_trip_sides: trip_sides(
            &dev_trip_times,
            &st.ctl_silences,
            Baselines {
                sender: ctl_bare,
                receiver: &bare_ts,
            },
            period_ns,
            dhf_ns,
        ),
        controller_trip_sides: trip_sides(
            &ctl_trip_times,
            &st.dev_silences,
            Baselines {
                sender: &bare_ts,
                receiver: ctl_bare,
            },
            period_ns,
            dhf_ns,
        ),
        farm_slow_passes: devs
            .log_lines("farm-io: slow pass")
            .into_iter()
            .filter(|(t, _)| *t >= s0.real_ns && *t <= s1.real_ns + 1_000_000_000)
            .collect(),
        stall_events: stall_events(
            &dev_trip_times,
            &ctl_trip_times,
            &st.dev_silences,
            &st.ctl_silences,
            Baselines {
                sender: &bare_ts,
                receiver: ctl_bare,
            },
            period_ns,
            dhf_ns,
        ),
        device_silences_ns: st.dev_silences.clone(),
        controller_silences_ns: st.ctl_silences.clone(),
        controller_bare: (!st.bare_ctl.is_empty()).then(|| intervals(&st.bare_ctl, period_ns)),
        loadavg_after,
        ar_ends: ends.iter().map(|(_, e)| e.clone()).collect(),
        device_trip_times_ns: dev_trip_times.clone(),
        controller_trip_times_ns: ctl_trip_times.clone(),
        bare_gaps_over_dhf_ns: bare_gaps,
        explain_window_ns: EXPLAIN_WINDOW_NS,
        per_device: per,
    };
    print_result(&r, macs.len(), &bare_report);
    write_json(&opts.out, &r)?;
    // The lab and the load go before the trace is read: reading gigabytes of ring buffer
    // beside a busy thread and data exchange took minutes (session 20).
    drop(ars);
    drop(rec);
    drop(devs);
    drop(ctl_ns);
    drop((load, ctl_bare_sender, isolation));
    if let (Some(t), Some(path)) = (&ftrace, &opts.ftrace) {
        trace::report(t, &r.stall_events, dhf_ns, path)?;
    }
    Ok(())
}

/// The lab: a temporary directory for the devices' files, the controller namespace with its
/// bridge, and the device side (daemons or the farm) attached to it.
fn lab(opts: &ScaleArgs, hires: bool) -> Result<(tempfile::TempDir, NetNs, String, Side), String> {
    let n = opts.devices as usize;
    let mut dir = tempfile::Builder::new()
        .prefix("pn-bench-scale-")
        .tempdir()
        .map_err(|e| e.to_string())?;
    if opts.keep_logs {
        dir.disable_cleanup(true);
        println!(
            "device logs and configurations kept in {}",
            dir.path().display()
        );
    }
    let ctl_ns = NetNs::new("bsc")?;
    let br = pn_testkit::netns::unique_name("bsbr");
    ctl_ns.exec_ok(&["ip", "link", "add", &br, "type", "bridge"])?;
    ctl_ns.exec_ok(&["ip", "link", "set", &br, "up"])?;
    ctl_ns.exec_ok(&["ip", "addr", "add", "10.77.0.1/16", "dev", &br])?;
    // --standby: each daemon's (or the farm's) standby sender on the CPU the devices are not
    // pinned to.
    let cyclic = opts.standby.settings(opts.pin);
    let devs = if opts.farm {
        Side::farm(n, dir.path(), &ctl_ns, &br, opts.farm_rx, &cyclic)?
    } else {
        Side::daemons(n, dir.path(), &ctl_ns, &br, hires, &cyclic)?
    };
    Ok((dir, ctl_ns, br, devs))
}

/// How long after the end of the measurement a trip's log line or event may come and still
/// belong to it: a daemon logs a trip up to ~12 ms after it (its connection manager), the
/// farm at once. (Until session 12 this was a second, and trips of the bench's own
/// wind-down, after the recorder had stopped, were counted as unexplained receive stalls.)
pub const TRIP_LOG_SLACK_NS: u64 = 50_000_000;

/// The device trips (log lines) and controller watchdog expiries (events) of the measurement
/// from `from_ns` to `to_ns` (CLOCK_REALTIME).
fn trip_times(
    events: &[(u64, Event)],
    devs: &Side,
    from_ns: u64,
    to_ns: u64,
) -> (Vec<u64>, Vec<u64>) {
    let ctl = events
        .iter()
        .filter(|(t, e)| {
            matches!(e, Event::WatchdogExpired { .. }) && in_window(*t, from_ns, to_ns)
        })
        .map(|(t, _)| *t)
        .collect();
    let dev = devs
        .trip_times()
        .into_iter()
        .filter(|&t| in_window(t, from_ns, to_ns))
        .collect();
    (dev, ctl)
}

/// Whether a trip logged at `t` belongs to the measurement from `from_ns` to `to_ns`.
fn in_window(t: u64, from_ns: u64, to_ns: u64) -> bool {
    t >= from_ns && t <= to_ns.saturating_add(TRIP_LOG_SLACK_NS)
}

/// The gaps of at least `min_ns` in a sorted stream of send times (start, length in ns).
fn gaps_at_least(ts: &[u64], min_ns: u64) -> Vec<(u64, u64)> {
    ts.windows(2)
        .filter(|w| w[1] - w[0] >= min_ns)
        .map(|w| (w[0], w[1] - w[0]))
        .collect()
}

/// The bare sender's SCHED_FIFO priority: `--bare-prio`, else 61 pinned (one above a
/// daemon's cyclic thread, as in the cycle bench) and 60 not.
fn bare_prio(opts: &ScaleArgs) -> i32 {
    opts.bare_prio
        .unwrap_or(if opts.pin.is_some() { 61 } else { 60 })
}

/// The argument checks `run` needs beyond clap's.
fn check_args(opts: &ScaleArgs) -> Result<(), String> {
    let max = if opts.farm {
        side::MAX_FARM
    } else {
        side::MAX_DAEMONS
    };
    if !(1..=max).contains(&(opts.devices as usize)) {
        return Err(format!("--devices 1..={max}"));
    }
    if !(1..=64).contains(&opts.connect_parallel) {
        return Err("--connect-parallel 1..=64".into());
    }
    if opts.standby.standby && opts.pin.is_none() {
        return Err("--standby needs --pin (the standby runs on the other CPU)".into());
    }
    if !pn_testkit::env::is_root() {
        return Err("needs root".into());
    }
    Ok(())
}

/// The controller (this process, in the controller namespace) on the bridge `br`, its cyclic
/// thread at SCHED_FIFO `prio`.
fn start_controller(ns: &NetNs, br: &str, units: u16, prio: i32) -> Result<Controller, String> {
    let br = br.to_string();
    ns.enter(move || {
        let mut c = ControllerConfig::new(&br);
        c.send_clock_factor = units;
        c.realtime = RealtimeOptions {
            fifo_priority: Some(prio),
            lock_memory: false,
        };
        Controller::start(c)
    })?
    .map_err(|e| format!("controller: {e}"))
}

/// The bare sender beside the (first) device for the measurement and two seconds more.
fn spawn_bare(
    devs: &Side,
    period_us: u64,
    seconds: u64,
    fifo: i32,
    grid: bool,
) -> Result<ChildGuard, String> {
    let (bare_ns, bare_nic) = devs.bare_host();
    spawn_bare_on(bare_ns, bare_nic, period_us, seconds, fifo, grid)
}

/// A bare sender on `nic` of `ns` at SCHED_FIFO `fifo`, on the period grid with `grid`. (The
/// controller's bare sender is not: its cyclic thread has a phase of its own.)
fn spawn_bare_on(
    ns: &NetNs,
    nic: &str,
    period_us: u64,
    seconds: u64,
    fifo: i32,
    grid: bool,
) -> Result<ChildGuard, String> {
    let b = sibling_binary("pn-bare-sender")?;
    let c = ns
        .command(b)
        .args(grid.then_some("--grid"))
        .args([
            "--iface",
            nic,
            "--period-us",
            &period_us.to_string(),
            "--duration-s",
            &(seconds + 2).to_string(),
            "--fifo",
            &fifo.to_string(),
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("pn-bare-sender on {nic}: {e}"))?;
    Ok(ChildGuard(Some(c)))
}

/// Releases (or aborts) the ARs and shuts the controller down however `run` ends.
struct Ars(Vec<ArHandle>, Option<Controller>);

impl Drop for Ars {
    fn drop(&mut self) {
        for a in self.0.drain(..) {
            if a.state() == ArState::DataExchange {
                let _ = a.release();
            } else {
                a.abort();
            }
        }
        if let Some(c) = self.1.take() {
            c.shutdown();
        }
    }
}

/// Every controller event with its CLOCK_REALTIME time of arrival, collected by a thread.
struct EventLog {
    events: Arc<Mutex<Vec<(u64, Event)>>>,
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<()>,
}

impl EventLog {
    fn start(ctl: &Controller) -> EventLog {
        let rx = ctl.events();
        let events: Arc<Mutex<Vec<(u64, Event)>>> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let (ev, st) = (events.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            while !st.load(Ordering::Relaxed) {
                if let Ok(e) = rx.recv_timeout(Duration::from_millis(100)) {
                    let mut v = ev.lock().unwrap_or_else(|p| p.into_inner());
                    v.push((raw::realtime_ns(), e));
                }
            }
        });
        EventLog {
            events,
            stop,
            thread,
        }
    }

    fn finish(self) -> Vec<(u64, Event)> {
        self.stop.store(true, Ordering::Relaxed);
        let _ = self.thread.join();
        std::mem::take(&mut *self.events.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

/// What is sampled at the start and at the end of the measurement.
struct Snapshot {
    mono_ns: u64,
    real_ns: u64,
    /// CPU ticks of every device process.
    dev_cpu: Vec<Option<u64>>,
    dev_threads: Threads,
    me_threads: Threads,
    me_cpu: Option<u64>,
    ticks: TickStats,
    trips: i64,
}

impl Snapshot {
    fn take(pids: &[u32], ctl: Option<&Controller>, devs: &Side) -> Snapshot {
        Snapshot {
            mono_ns: raw::mono_ns(),
            real_ns: raw::realtime_ns(),
            dev_cpu: pids
                .iter()
                .map(|p| raw::cpu_ticks(&format!("/proc/{p}")))
                .collect(),
            dev_threads: threads_of(pids),
            me_threads: threads_of(&[std::process::id()]),
            me_cpu: raw::cpu_ticks("/proc/self"),
            ticks: ctl.map(|c| c.tick_stats()).unwrap_or_default(),
            trips: devs.watchdog_trips(),
        }
    }
}

/// What the recorder saw, by stream.
struct Streams {
    /// Interval statistics of every device's cyclic stream (by source index).
    per: Vec<IntervalStats>,
    /// Sorted times of the controller's frames (to every device), of the bare sender beside
    /// the devices and of the one on the controller's bridge (`--pin` only, else empty).
    ctl: Vec<u64>,
    bare: Vec<u64>,
    bare_ctl: Vec<u64>,
    /// Silences of at least the data-hold time less half a cycle: of each device's stream,
    /// of the controller's stream to each device.
    dev_silences: Vec<(u64, u64)>,
    ctl_silences: Vec<(u64, u64)>,
}

fn streams(recs: &[super::recorder::Rec], sources: usize, period_ns: u64, dhf: u16) -> Streams {
    // One pass over the recording (tens of millions of frames), each frame into its stream.
    let mut dev: Vec<Vec<u64>> = vec![Vec::new(); sources];
    let mut ctl_per: Vec<Vec<u64>> = vec![Vec::new(); sources];
    let (mut bare, mut bare_ctl) = (Vec::new(), Vec::new());
    let mut end = 0;
    for r in recs {
        end = end.max(r.ts);
        let i = usize::from(r.src);
        match r.kind {
            Kind::DevCyclic if i < sources => dev[i].push(r.ts),
            Kind::CtlCyclic if i < sources => ctl_per[i].push(r.ts),
            Kind::Bare if i == 0 => bare.push(r.ts),
            Kind::Bare => bare_ctl.push(r.ts),
            _ => {}
        }
    }
    for v in dev
        .iter_mut()
        .chain(ctl_per.iter_mut())
        .chain([&mut bare, &mut bare_ctl])
    {
        v.sort_unstable();
    }
    let min = (u64::from(dhf) * period_ns).saturating_sub(period_ns / 2);
    let mut ctl: Vec<u64> = ctl_per.iter().flatten().copied().collect();
    ctl.sort_unstable();
    Streams {
        per: dev.iter().map(|ts| intervals(ts, period_ns)).collect(),
        dev_silences: silences(&dev, min, end),
        ctl_silences: silences(&ctl_per, min, end),
        ctl,
        bare,
        bare_ctl,
    }
}

mod ars;
mod report;
mod side;
mod stalls;
mod threads;
mod trace;

#[cfg(test)]
mod tests;

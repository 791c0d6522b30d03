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
use super::rig::{cpu_pct, sibling_binary, ChildGuard};
use super::stats::{intervals, IntervalStats};
use super::{nap, raw, stopped, write_json, OnOff, ScaleArgs};
use pn_controller::{
    ArConfig, ArHandle, ArState, Controller, ControllerConfig, DeviceConfig, Event, RealtimeOptions,
};
use pn_testkit::netns::NetNs;
use side::Side;
use std::collections::{BTreeMap, HashMap};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long before a trip (as the bench sees it: the device's log line, written by its
/// connection manager up to ~12 ms after the trip, or the controller's event) a bare-sender
/// gap may have ended and still count as the same stall.
pub const EXPLAIN_WINDOW_NS: u64 = 250_000_000;

/// CPU time (ns) and run count of every thread of a process, by thread id, with its name
/// (`pn-link-<nic>` shortened to `pn-link`).
type Threads = HashMap<(u32, u32), (String, u64, u64)>;

fn read_threads(pid: u32, into: &mut Threads) {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return;
    };
    for e in dir.flatten() {
        let Some(tid) = e.file_name().to_str().and_then(|t| t.parse::<u32>().ok()) else {
            continue;
        };
        let p = e.path();
        let mut name = std::fs::read_to_string(p.join("comm"))
            .map(|c| c.trim().to_string())
            .unwrap_or_default();
        if name.starts_with("pn-link-") {
            name = "pn-link".into();
        }
        let Ok(st) = std::fs::read_to_string(p.join("schedstat")) else {
            continue;
        };
        let mut f = st.split_whitespace().map(|x| x.parse::<u64>().unwrap_or(0));
        let run_ns = f.next().unwrap_or(0);
        let _wait = f.next();
        let slices = f.next().unwrap_or(0);
        into.insert((pid, tid), (name, run_ns, slices));
    }
}

fn threads_of(pids: &[u32]) -> Threads {
    let mut t = Threads::new();
    for &p in pids {
        read_threads(p, &mut t);
    }
    t
}

/// Per thread name over `secs`: (threads, CPU % of one core, runs per second), summed over
/// all processes; threads that did not exist at `before` count from zero.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct ThreadUse {
    pub name: String,
    pub threads: usize,
    pub cpu_pct: f64,
    pub runs_per_s: f64,
}

fn thread_use(before: &Threads, after: &Threads, secs: f64) -> Vec<ThreadUse> {
    let mut by: BTreeMap<String, ThreadUse> = BTreeMap::new();
    for (k, (name, ns, runs)) in after {
        let (ns0, runs0) = before.get(k).map_or((0, 0), |b| (b.1, b.2));
        let e = by.entry(name.clone()).or_insert_with(|| ThreadUse {
            name: name.clone(),
            ..Default::default()
        });
        e.threads += 1;
        e.cpu_pct += ns.saturating_sub(ns0) as f64 / 1e9 / secs.max(1e-9) * 100.0;
        e.runs_per_s += runs.saturating_sub(runs0) as f64 / secs.max(1e-9);
    }
    let mut v: Vec<ThreadUse> = by.into_values().collect();
    v.sort_by(|a, b| b.cpu_pct.total_cmp(&a.cpu_pct));
    v
}

fn print_thread_use(label: &str, v: &[ThreadUse]) {
    let total: f64 = v.iter().map(|t| t.cpu_pct).sum();
    let runs: f64 = v.iter().map(|t| t.runs_per_s).sum();
    println!("{label}: {total:.2} % of a core, {runs:.0} thread runs/s; by thread name:");
    for t in v {
        println!(
            "  {:<16} x{:<3} {:>7.3} % {:>9.1} runs/s",
            t.name, t.threads, t.cpu_pct, t.runs_per_s
        );
    }
}

/// `YYYY-MM-DDTHH:MM:SS[.frac]Z` (UTC) to Unix ns.
fn parse_rfc3339_ns(s: &str) -> Option<u64> {
    let t = humantime::parse_rfc3339(s).ok()?;
    let d = t.duration_since(std::time::UNIX_EPOCH).ok()?;
    u64::try_from(d.as_nanos()).ok()
}

/// Whether the (sorted) bare stream `bare` has a gap of at least `min_gap_ns` that ends
/// within `window_ns` before `t` (or covers `t`).
fn bare_gap_near(bare: &[u64], t: u64, min_gap_ns: u64, window_ns: u64) -> bool {
    bare.windows(2)
        .any(|w| w[1] - w[0] >= min_gap_ns && w[1] + window_ns >= t && w[0] <= t + 10_000_000)
}

#[derive(Debug, serde::Serialize)]
pub struct ScaleResult {
    pub devices: usize,
    pub connected: usize,
    pub period_us: u64,
    pub seconds: u64,
    pub dhf: u16,
    pub hires: bool,
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
    /// Whether the devices were one `pn-farm` process (`--farm`).
    pub farm: bool,
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
    let max = if opts.farm {
        side::MAX_FARM
    } else {
        side::MAX_DAEMONS
    };
    if !(1..=max).contains(&n) {
        return Err(format!("--devices 1..={max}"));
    }
    if !(1..=64).contains(&parallel) {
        return Err("--connect-parallel 1..=64".into());
    }
    if !pn_testkit::env::is_root() {
        return Err("needs root".into());
    }
    println!("machine: {}", raw::machine());
    let loadavg_before = raw::loadavg1();
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
    let devs = if opts.farm {
        Side::farm(n, dir.path(), &ctl_ns, &br)?
    } else {
        Side::daemons(n, dir.path(), &ctl_ns, &br, hires)?
    };
    devs.wait_ready()?;
    let pids = devs.pids();
    // Phase 1: idle daemons (no AR), after a settling second.
    let (idle_threads, idle_secs) = if idle_seconds > 0 {
        nap(Duration::from_secs(1));
        let t0 = raw::mono_ns();
        let a = threads_of(&pids);
        nap(Duration::from_secs(idle_seconds));
        let b = threads_of(&pids);
        let secs = (raw::mono_ns() - t0) as f64 / 1e9;
        let u = thread_use(&a, &b, secs);
        print_thread_use(
            &format!(
                "idle ({n} devices without an AR, {secs:.1} s, loadavg {:.2})",
                raw::loadavg1()
            ),
            &u,
        );
        (u, secs)
    } else {
        (Vec::new(), 0.0)
    };
    let idle_total: f64 = idle_threads.iter().map(|t| t.cpu_pct).sum();
    if opts.idle_only {
        return Ok(());
    }
    let setup0 = Instant::now();
    let rec = Recorder::start(ctl_ns.path(), &br)?;
    let units = (period_us * 1000 / 31_250).max(1) as u16;
    let brc = br.clone();
    let ctl = ctl_ns
        .enter(move || {
            let mut c = ControllerConfig::new(&brc);
            c.send_clock_factor = units;
            c.realtime = RealtimeOptions {
                fifo_priority: Some(ctl_prio),
                lock_memory: false,
            };
            Controller::start(c)
        })?
        .map_err(|e| format!("controller: {e}"))?;
    // Every controller event with its CLOCK_REALTIME time of arrival.
    let events: Arc<Mutex<Vec<(u64, Event)>>> = Arc::default();
    let ev_stop = Arc::new(AtomicBool::new(false));
    let ev_thread = {
        let rx = ctl.events();
        let (events, stop) = (events.clone(), ev_stop.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                if let Ok(e) = rx.recv_timeout(Duration::from_millis(100)) {
                    let mut v = events.lock().unwrap_or_else(|p| p.into_inner());
                    v.push((raw::realtime_ns(), e));
                }
            }
        })
    };
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
    let mut ars = Ars(Vec::new(), Some(ctl));
    // Phase 2: connect, `parallel` at a time (each worker takes the next device).
    let mut cfgs = Vec::new();
    for d in &devs.targets {
        let model = DeviceConfig::parse(&d.xml)
            .map_err(|e| format!("model: {e}"))?
            .model;
        let mut c = ArConfig::new(model);
        c.device_ip = Some(d.ip);
        c.timing.send_clock_factor = units;
        c.timing.reduction_ratio = 1;
        c.timing.data_hold_factor = dhf;
        c.timing.watchdog_factor = dhf;
        c.app_ready_timeout = Duration::from_secs(10);
        cfgs.push(c);
    }
    let next = AtomicUsize::new(0);
    type Outcome = (usize, Result<ArHandle, String>, f64);
    let outcomes: Mutex<Vec<Outcome>> = Mutex::new(Vec::new());
    {
        let ctl = ars.1.as_ref().ok_or("no controller")?;
        std::thread::scope(|sc| {
            for _ in 0..parallel.min(n) {
                sc.spawn(|| loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= cfgs.len() || stopped() {
                        break;
                    }
                    let t = Instant::now();
                    let r = ctl.connect(cfgs[i].clone()).map_err(|e| e.to_string());
                    let ms = t.elapsed().as_secs_f64() * 1000.0;
                    outcomes
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .push((i, r, ms));
                });
            }
        });
    }
    if stopped() {
        return Err("interrupted".into());
    }
    let mut outcomes = outcomes.into_inner().unwrap_or_else(|p| p.into_inner());
    outcomes.sort_by_key(|o| o.0);
    let mut connect_ms: Vec<f64> = outcomes.iter().map(|o| o.2).collect();
    connect_ms.sort_by(f64::total_cmp);
    let mut connect_failures = Vec::new();
    for (i, r, _) in outcomes {
        match r {
            Ok(h) => ars.0.push(h),
            Err(e) => {
                eprintln!("device {i}: connect failed: {e}");
                connect_failures.push(format!("device {i}: {e}"));
            }
        }
    }
    let connected = ars.0.len();
    let setup_seconds = setup0.elapsed().as_secs_f64();
    let lost_during_setup: Vec<String> = ars
        .0
        .iter()
        .filter_map(|a| match a.state() {
            ArState::DataExchange => None,
            s => Some(format!("{}: {s:?}", a.station_name())),
        })
        .collect();
    println!(
        "{connected}/{n} ARs connected in {setup_seconds:.1} s ({parallel} at a time; connect p50 {:.0} ms, max {:.0} ms); {} lost during the set-up; measuring {seconds} s (DataHoldFactor {dhf}, high-resolution timer {})",
        connect_ms.get(connect_ms.len() / 2).copied().unwrap_or(0.0),
        connect_ms.last().copied().unwrap_or(0.0),
        lost_during_setup.len(),
        if hires { "on" } else { "off" }
    );
    for l in lost_during_setup.iter().take(10) {
        println!("  lost during set-up: {l}");
    }
    let bare = {
        let b = sibling_binary("pn-bare-sender")?;
        let (bare_ns, bare_nic) = devs.bare_host();
        let c = bare_ns
            .command(b)
            .args([
                "--iface",
                bare_nic,
                "--period-us",
                &period_us.to_string(),
                "--duration-s",
                &(seconds + 2).to_string(),
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| e.to_string())?;
        ChildGuard(Some(c))
    };
    nap(Duration::from_millis(500));
    let trips0 = devs.watchdog_trips();
    let ticks0 = ars.1.as_ref().map(|c| c.tick_stats()).unwrap_or_default();
    rec.clear();
    let drops0 = rec.drops();
    let cpu0: Vec<Option<u64>> = pids
        .iter()
        .map(|p| raw::cpu_ticks(&format!("/proc/{p}")))
        .collect();
    let dev_thr0 = threads_of(&pids);
    let me = std::process::id();
    let me_thr0 = threads_of(&[me]);
    let me0 = raw::cpu_ticks("/proc/self");
    let t0 = raw::mono_ns();
    let t0_real = raw::realtime_ns();
    // Like a PLC, reconnect an AR that ended, so that one trip does not end the measurement
    // of that device; every end is recorded with its reason.
    let ends: Mutex<Vec<(u64, String)>> = Mutex::new(Vec::new());
    {
        let ctl = ars.1.as_ref().ok_or("no controller")?;
        let slots: Vec<Mutex<Option<ArHandle>>> = std::mem::take(&mut ars.0)
            .into_iter()
            .map(|h| Mutex::new(Some(h)))
            .collect();
        let by_station: HashMap<String, usize> = cfgs
            .iter()
            .enumerate()
            .map(|(i, c)| (c.model.station_name.clone(), i))
            .collect();
        let done = AtomicBool::new(false);
        std::thread::scope(|sc| {
            sc.spawn(|| {
                let mut retry_at: HashMap<usize, Instant> = HashMap::new();
                while !done.load(Ordering::Relaxed) && !stopped() {
                    for slot in &slots {
                        let mut g = slot.lock().unwrap_or_else(|p| p.into_inner());
                        let Some(h) = g.as_ref() else { continue };
                        let st = h.state();
                        if st == ArState::DataExchange {
                            continue;
                        }
                        let station = h.station_name().to_string();
                        ends.lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .push((raw::realtime_ns(), format!("{station}: {st:?}")));
                        h.abort();
                        *g = None;
                        if let Some(&i) = by_station.get(&station) {
                            retry_at.insert(i, Instant::now() + Duration::from_millis(100));
                        }
                    }
                    let now = Instant::now();
                    let due: Vec<usize> = retry_at
                        .iter()
                        .filter(|(_, t)| **t <= now)
                        .map(|(i, _)| *i)
                        .collect();
                    for i in due {
                        match ctl.connect(cfgs[i].clone()) {
                            Ok(h) => {
                                retry_at.remove(&i);
                                if let Some(slot) = slots
                                    .iter()
                                    .find(|s| s.lock().unwrap_or_else(|p| p.into_inner()).is_none())
                                {
                                    *slot.lock().unwrap_or_else(|p| p.into_inner()) = Some(h);
                                }
                            }
                            Err(_) => {
                                retry_at.insert(i, Instant::now() + Duration::from_millis(200));
                            }
                        }
                    }
                    std::thread::sleep(Duration::from_millis(50));
                }
            });
            nap(Duration::from_secs(seconds));
            done.store(true, Ordering::Relaxed);
        });
        ars.0 = slots
            .into_iter()
            .filter_map(|s| s.into_inner().unwrap_or_else(|p| p.into_inner()))
            .collect();
    }
    let ends = ends.into_inner().unwrap_or_else(|p| p.into_inner());
    let secs = (raw::mono_ns() - t0) as f64 / 1e9;
    let t1_real = raw::realtime_ns();
    let recs = rec.take();
    let me1 = raw::cpu_ticks("/proc/self");
    let me_thr1 = threads_of(&[me]);
    let dev_thr1 = threads_of(&pids);
    let cpu1: Vec<Option<u64>> = pids
        .iter()
        .map(|p| raw::cpu_ticks(&format!("/proc/{p}")))
        .collect();
    let ticks1 = ars.1.as_ref().map(|c| c.tick_stats()).unwrap_or_default();
    let loadavg_after = raw::loadavg1();
    let (rss_max, devices_per_process) = devs.rss_max_kb();
    let not_dx = ars
        .0
        .iter()
        .filter(|a| a.state() != ArState::DataExchange)
        .count();
    let trips1 = devs.watchdog_trips();
    let bare_report = bare.finish(Duration::from_secs(4));
    ev_stop.store(true, Ordering::Relaxed);
    let _ = ev_thread.join();
    if stopped() {
        return Err("interrupted".into());
    }
    let period_ns = period_us * 1000;
    let macs = rec.macs();
    let mut per: Vec<IntervalStats> = (0..macs.len())
        .map(|i| {
            let ts: Vec<u64> = recs
                .iter()
                .filter(|r| r.kind == Kind::DevCyclic && usize::from(r.src) == i)
                .map(|r| r.ts)
                .collect();
            intervals(&ts, period_ns)
        })
        .collect();
    per.sort_by(|a, b| a.dev_p99.total_cmp(&b.dev_p99));
    let worst = per.last().cloned().unwrap_or_default();
    let median = per.get(per.len() / 2).map_or(0.0, |s| s.dev_p99);
    let ctl_ts: Vec<u64> = recs
        .iter()
        .filter(|r| r.kind == Kind::CtlCyclic)
        .map(|r| r.ts)
        .collect();
    let mut bare_ts: Vec<u64> = recs
        .iter()
        .filter(|r| r.kind == Kind::Bare)
        .map(|r| r.ts)
        .collect();
    bare_ts.sort_unstable();
    let dev_cpu: f64 = cpu0
        .iter()
        .zip(&cpu1)
        .filter_map(|(a, b)| cpu_pct(*a, *b, secs))
        .sum();
    // Trips of the measurement and whether the bare sender had a gap of DataHoldFactor cycles
    // (the time a watchdog needs) ending within EXPLAIN_WINDOW_NS before them.
    let dhf_ns = u64::from(dhf) * period_ns;
    let in_window = |t: u64| t >= t0_real && t <= t1_real + 1_000_000_000;
    let ctl_trip_times: Vec<u64> = events
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .iter()
        .filter(|(t, e)| matches!(e, Event::WatchdogExpired { .. }) && in_window(*t))
        .map(|(t, _)| *t)
        .collect();
    let dev_trip_times: Vec<u64> = devs
        .trip_times()
        .into_iter()
        .filter(|t| in_window(*t))
        .collect();
    let explained = |ts: &[u64]| {
        ts.iter()
            .filter(|t| bare_gap_near(&bare_ts, **t, dhf_ns, EXPLAIN_WINDOW_NS))
            .count()
    };
    let device_threads = thread_use(&dev_thr0, &dev_thr1, secs);
    let controller_threads = thread_use(&me_thr0, &me_thr1, secs);
    let r = ScaleResult {
        devices: n,
        connected,
        period_us,
        seconds,
        dhf,
        hires,
        total_gaps_over_3: per.iter().map(|s| s.gaps_over_3).sum(),
        worst,
        median_dev_p99_us: median,
        // Controller frames to all devices interleave: their stream is per-AR, report the
        // aggregate only as a frame count.
        controller_stream: intervals(&ctl_ts, period_ns / (connected.max(1) as u64)),
        bare: intervals(&bare_ts, period_ns),
        device_watchdog_trips: trips1 - trips0,
        controller_watchdog_expiries: ctl_trip_times.len() as u64,
        ars_not_in_data_exchange: not_dx,
        devices_total_cpu_pct: dev_cpu,
        this_process_cpu_pct: cpu_pct(me0, me1, secs),
        devices_rss_kb_max: rss_max,
        devices_per_process,
        farm: opts.farm,
        recorder_drops: rec.drops() - drops0,
        loadavg_before,
        setup_seconds,
        idle_seconds: idle_secs,
        idle_total_cpu_pct: idle_total,
        idle_threads,
        connect_parallel: parallel,
        connect_ms_p50: connect_ms.get(connect_ms.len() / 2).copied().unwrap_or(0.0),
        connect_ms_max: connect_ms.last().copied().unwrap_or(0.0),
        connect_failures,
        lost_during_setup,
        device_threads,
        controller_threads,
        controller_ticks: ticks1.ticks.saturating_sub(ticks0.ticks),
        controller_missed_ticks: ticks1.missed_ticks.saturating_sub(ticks0.missed_ticks),
        controller_max_lateness_us: ticks1.max_lateness_us,
        device_trips_explained: explained(&dev_trip_times),
        controller_trips_explained: explained(&ctl_trip_times),
        bare_gaps_over_dhf: bare_ts.windows(2).filter(|w| w[1] - w[0] >= dhf_ns).count() as u64,
        loadavg_after,
        ar_ends: ends.iter().map(|(_, e)| e.clone()).collect(),
        device_trip_times_ns: dev_trip_times.clone(),
        controller_trip_times_ns: ctl_trip_times.clone(),
        bare_gaps_over_dhf_ns: bare_ts
            .windows(2)
            .filter(|w| w[1] - w[0] >= dhf_ns)
            .map(|w| (w[0], w[1] - w[0]))
            .collect(),
        explain_window_ns: EXPLAIN_WINDOW_NS,
        per_device: per,
    };
    println!("| devices | connected | DHF | seconds | streams | worst \\|dev\\| p99/max (us) | median \\|dev\\| p99 (us) | gaps>3 all devices | bare \\|dev\\| p99/max (us) | bare gaps>3 / >=DHF | wd trips dev/ctl (explained by a bare gap) | ARs lost (set-up / end) | devices CPU % | controller proc CPU % | ctl missed ticks / max late (us) | max RSS kB | loadavg before/after |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    println!(
        "| {} | {} | {} | {} | {} | {:.1}/{:.1} | {:.1} | {} | {:.1}/{:.1} | {}/{} | {}/{} ({}/{}) | {}/{} | {:.0} | {:.0} | {}/{} | {} | {:.1}/{:.1} |",
        r.devices,
        r.connected,
        r.dhf,
        r.seconds,
        macs.len(),
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
    println!(
        "trip times seen: device {} (log lines), controller {} (events); bare sender: {}; recorder drops {}; setup {:.1} s",
        dev_trip_times.len(),
        ctl_trip_times.len(),
        bare_report.trim(),
        r.recorder_drops,
        r.setup_seconds
    );
    write_json(&opts.out, &r)?;
    drop(ars);
    drop(rec);
    drop(devs);
    drop(ctl_ns);
    Ok(())
}

mod side;

#[cfg(test)]
mod tests;

//! The long run: [`run`] with its [`SoakOptions`], the `pn-lab soak` command ([`SoakArgs`],
//! [`main`]), and [`controller_binary`].

use super::{Counters, FloodKind, Rig, RigOptions, Rng};
use serde_json::json;
use std::time::{Duration, Instant};

/// Locate the `pn-controller` CLI: `$PN_CONTROLLER_BIN`, else next to the running executable.
pub fn controller_binary() -> Result<std::path::PathBuf, String> {
    if let Ok(p) = std::env::var("PN_CONTROLLER_BIN") {
        return Ok(p.into());
    }
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    exe.ancestors()
        .skip(1)
        .take(3)
        .map(|d| d.join("pn-controller"))
        .find(|p| p.is_file())
        .ok_or_else(|| "pn-controller binary not found (cargo build -p pn-controller)".into())
}

/// Options of the soak run.
#[derive(Debug, Clone)]
pub struct SoakOptions {
    pub duration: Duration,
    pub seed: u64,
}

/// The long run: device and controller in data exchange, a random fault every round (link
/// flap with writes, frame-loss burst, controller crash, device SIGKILL, flood), writes checked
/// between faults; counters at the end. Progress lines go to stderr.
pub fn run(opts: &SoakOptions) -> Result<Counters, String> {
    let mut rng = Rng::new(opts.seed);
    let mut c = Counters::default();
    let mut rig = Rig::start(RigOptions::default())?;
    rig.connect(Duration::from_secs(20), &mut c)?;
    let t0 = Instant::now();
    // Memory: sampled after warm-up; the window restarts when the daemon is killed, and the
    // longest window is reported.
    let mut life_start = Instant::now();
    let mut rss_first: Option<u64> = None;
    let mut last_report = Instant::now();
    while t0.elapsed() < opts.duration {
        if rss_first.is_none() && life_start.elapsed() > Duration::from_secs(20) {
            rss_first = rig.device_rss_kib();
        }
        let pick = rng.range(0, 99);
        let r = if pick < 45 {
            rig.flap_round(&mut rng, &mut c)
        } else if pick < 65 {
            let mask = [0x0380u16, 0x0300, 0x0200][rng.range(0, 2) as usize];
            rig.loss_burst(mask, Duration::from_millis(rng.range(500, 3000)), &mut c)
                .map(|_| ())
        } else if pick < 78 {
            rig.crash_controller(&mut rng, &mut c)
        } else if pick < 88 {
            let kind = FloodKind::ALL[rng.range(0, 4) as usize];
            c.floods += 1;
            rig.ensure_connected(Duration::from_secs(20), &mut c)
                .and_then(|_| {
                    rig.flood(
                        kind,
                        5_000,
                        Duration::from_millis(rng.range(500, 2000)),
                        &mut rng,
                    )
                })
                .and_then(|_| rig.write_and_check(&mut c))
                .and_then(|_| {
                    c.rounds += 1;
                    rig.harvest(&mut c)
                })
        } else {
            // Device SIGKILL (not too often, so that memory is watched over long lives).
            let min_life = (opts.duration / 10).min(Duration::from_secs(300));
            if life_start.elapsed() > min_life {
                if let (Some(a), Some(b)) = (rss_first, rig.device_rss_kib()) {
                    let w = life_start.elapsed().as_secs();
                    if w > c.rss_window_s {
                        c.rss_window_s = w;
                        c.rss_start_kib = a;
                        c.rss_end_kib = b;
                    }
                }
                let r = rig.kill_device(&mut c).and_then(|_| {
                    rig.connect(Duration::from_secs(20), &mut c)?;
                    rig.write_and_check(&mut c)
                });
                life_start = Instant::now();
                rss_first = None;
                r
            } else {
                rig.ensure_connected(Duration::from_secs(20), &mut c)
                    .and_then(|_| rig.write_and_check(&mut c))
            }
        };
        if let Err(e) = r {
            let log = rig.lab.device_log();
            let tail: Vec<&str> = log.lines().rev().take(12).collect();
            eprintln!(
                "soak: round failed at {} s: {e}\n  device log (last lines):\n    {}",
                t0.elapsed().as_secs(),
                tail.into_iter().rev().collect::<Vec<_>>().join("\n    ")
            );
            c.errors.push(e);
            if c.errors.len() > 50 {
                return Err("more than 50 failed rounds; stopping".into());
            }
            // Recover: whatever state, get back into data exchange.
            let _ = rig.clear_impairment();
            let _ = rig.lab.set_link(true);
            if rig.device_pid().is_none() {
                c.unexpected_device_exits += 1;
                let _ = rig.kill_device(&mut c);
            }
            let _ = rig.connect(Duration::from_secs(30), &mut c);
        }
        let t = Instant::now();
        let _ = rig.status();
        c.api_max_latency_ms = c.api_max_latency_ms.max(t.elapsed().as_millis() as u64);
        if let Some(r) = rig.device_rss_kib() {
            c.rss_max_kib = c.rss_max_kib.max(r);
        }
        if last_report.elapsed() > Duration::from_secs(60) {
            last_report = Instant::now();
            eprintln!(
                "soak: {:>4} s  rounds {}  writes {}  lost {}  backwards {}  flaps {}  loss {}  ctl crashes {}  kills {}  floods {}  unplanned AR ends {}  errors {}",
                t0.elapsed().as_secs(),
                c.rounds,
                c.writes,
                c.lost_writes,
                c.backwards,
                c.link_flaps,
                c.loss_bursts,
                c.controller_crashes,
                c.device_kills,
                c.floods,
                c.unplanned_ar_ends,
                c.errors.len()
            );
        }
    }
    if let (Some(a), Some(b)) = (rss_first, rig.device_rss_kib()) {
        let w = life_start.elapsed().as_secs();
        if w > c.rss_window_s {
            c.rss_window_s = w;
            c.rss_start_kib = a;
            c.rss_end_kib = b;
        }
    }
    c.device_watchdog_trips = rig.device_trips_total();
    if let Some(a) = rig.ar() {
        c.controller_watchdog_expiries += a.status().watchdog_expiries;
    }
    if let Some(ctl) = rig.controller() {
        c.controller_max_tick_late_us = c
            .controller_max_tick_late_us
            .max(ctl.tick_stats().max_lateness_us);
    }
    Ok(c)
}

/// `pn-lab soak --minutes N [--seed S] [--json]`.
/// `pn-lab soak`: device and controller with random faults for a while.
#[derive(clap::Args, Debug, Clone)]
pub struct SoakArgs {
    /// How long to run.
    #[arg(long)]
    pub minutes: f64,
    /// Seed of the fault schedule (default: from the clock; printed, to replay a run).
    #[arg(long)]
    pub seed: Option<u64>,
    /// One JSON object with the counters at the end.
    #[arg(long)]
    pub json: bool,
}

/// `pn-lab soak ARGS`.
pub fn main(args: &SoakArgs) -> std::process::ExitCode {
    use std::process::ExitCode;
    let seed = args.seed.unwrap_or_else(Rng::seed_from_time);
    let as_json = args.json;
    let minutes = args.minutes;
    if !(minutes > 0.0 && minutes.is_finite()) {
        eprintln!("pn-lab soak: --minutes must be a positive number");
        return ExitCode::from(2);
    }
    eprintln!("soak: {minutes} min, seed {seed}");
    let t0 = Instant::now();
    match run(&SoakOptions {
        duration: Duration::from_secs_f64(minutes * 60.0),
        seed,
    }) {
        Ok(c) => {
            let ok = c.lost_writes == 0
                && c.backwards == 0
                && c.persistence_corrupt == 0
                && c.unexpected_device_exits == 0
                && c.errors.is_empty();
            if as_json {
                println!(
                    "{}",
                    json!({"ok": ok, "seed": seed, "seconds": t0.elapsed().as_secs(), "counters": c})
                );
            } else {
                println!("soak: {} s, seed {seed}", t0.elapsed().as_secs());
                println!(
                    "rounds {}  writes {}  lost writes {}  sequence regressions {}",
                    c.rounds, c.writes, c.lost_writes, c.backwards
                );
                println!(
                    "faults: link flaps {}  loss bursts {}  controller crashes {}  device SIGKILLs {}  floods {}",
                    c.link_flaps, c.loss_bursts, c.controller_crashes, c.device_kills, c.floods
                );
                println!(
                    "reconnects {} (failed attempts retried {})  watchdog: controller {} device {}",
                    c.reconnects,
                    c.connect_retries,
                    c.controller_watchdog_expiries,
                    c.device_watchdog_trips
                );
                println!(
                    "unplanned AR ends {} (last: {})  controller cyclic thread max lateness {} us",
                    c.unplanned_ar_ends, c.last_unplanned_end, c.controller_max_tick_late_us
                );
                println!(
                    "device restarts {} (unexpected exits {})  RSS {} -> {} KiB over {} s (max {} KiB)  API max latency {} ms",
                    c.device_restarts,
                    c.unexpected_device_exits,
                    c.rss_start_kib,
                    c.rss_end_kib,
                    c.rss_window_s,
                    c.rss_max_kib,
                    c.api_max_latency_ms
                );
                for e in &c.errors {
                    println!("error: {e}");
                }
                println!("{}", if ok { "PASS" } else { "FAIL" });
            }
            if ok {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(e) => {
            eprintln!("pn-lab soak: {e}");
            ExitCode::FAILURE
        }
    }
}

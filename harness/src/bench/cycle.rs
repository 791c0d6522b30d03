//! `pn-lab bench cycle`: how steadily the device holds its cycle, measured on the wire in the
//! controller namespace, beside the bare sender (the limit of this machine) in the same run.
//!
//! For each case (period x CPU load x high-resolution timer x HTTP load): connect an AR at the
//! period, start the bare sender on the device's NIC with the same period, optionally busy
//! threads and wrk on the API, record for `--seconds`, then report the interval statistics of
//! the device's frames, the controller's frames and the bare sender's frames, missed cycles,
//! watchdog trips on both sides, CPU use and the ratios to the bare sender.

use super::raw;
use super::recorder::Kind;
use super::rig::{cpu_pct, wrk_non2xx, wrk_rps, CpuLoad, Rig};
use super::stats::{gaps, intervals, unexplained, IntervalStats};
use super::{nap, stopped};
use serde::Serialize;
use serde_json::Value as Json;
use std::time::Duration;

/// One case of the cycle benchmark.
#[derive(Debug, Clone, Serialize)]
pub struct Case {
    pub period_us: u64,
    /// Busy threads at normal priority during the case.
    pub load_threads: usize,
    pub hires: bool,
    /// wrk with this many connections on GET /api/status during the case (0 = none).
    pub http_conns: u32,
    pub seconds: u64,
}

/// The outcome of one case.
#[derive(Debug, Clone, Serialize)]
pub struct CaseResult {
    pub case: Case,
    pub device: IntervalStats,
    pub controller: IntervalStats,
    pub bare: IntervalStats,
    /// device |dev| p99 / bare |dev| p99.
    pub ratio_dev_p99: f64,
    /// Device gaps longer than 3 cycles during which the bare sender had no gap (> 2 cycles).
    pub device_unexplained_gaps: usize,
    pub controller_unexplained_gaps: usize,
    pub device_watchdog_trips: i64,
    pub controller_watchdog_expiries: u64,
    pub device_missed_ticks: i64,
    pub ar_state_after: String,
    /// AR aborts during the measurement (time after start, state) and reconnects.
    pub ar_aborts: Vec<String>,
    /// Seconds actually measured.
    pub measured_s: f64,
    /// Start of the measurement, CLOCK_REALTIME ns.
    pub t0_realtime_ns: u64,
    pub device_cpu_pct: Option<f64>,
    pub cyclic_thread_cpu_pct: Option<f64>,
    pub rx_thread_cpu_pct: Option<f64>,
    pub bare_cpu_pct: Option<f64>,
    pub device_rss_kb: Option<u64>,
    pub wrk_rps: Option<f64>,
    pub wrk_non2xx: u64,
    pub recorder_drops: u64,
    pub loadavg_before: f64,
    pub bare_report: String,
}

fn counter(d: &Json, k: &str) -> i64 {
    d[k].as_i64()
        .or_else(|| d["counters"][k].as_i64())
        .unwrap_or(0)
}

/// Run one case on a rig (connects the AR at the case's period when needed).
pub fn run_case(rig: &mut Rig, case: &Case, dhf: u16) -> Result<CaseResult, String> {
    let period_ns = case.period_us * 1000;
    let need_connect = match &rig.ar {
        Some(a) => {
            a.state() != pn_controller::ArState::DataExchange
                || a.status().cycle_us != case.period_us
        }
        None => true,
    };
    if need_connect {
        rig.connect(case.period_us, dhf)?;
    }
    let ar = rig.ar.clone().ok_or("no AR")?;
    rig.set_hires(case.hires)?;
    let loadavg_before = raw::loadavg1();
    let _load = (case.load_threads > 0).then(|| CpuLoad::start(case.load_threads));
    let wrk = if case.http_conns > 0 {
        Some(rig.wrk(
            "http://127.0.0.1:18840/api/status",
            case.http_conns,
            case.seconds + 1,
        )?)
    } else {
        None
    };
    let bare = rig.bare_sender(case.period_us, case.seconds + 2)?;
    // Settle (bare sender start, wrk connections, load threads), then measure.
    nap(Duration::from_millis(500));
    rig.rec().clear();
    let drops0 = rig.rec().drops();
    let d0 = rig.diag();
    let s0 = ar.status();
    let dev_path = format!("/proc/{}", rig.dev_pid);
    let cyc_path = raw::thread_path(rig.dev_pid, "pn-cyclic");
    let rx_path = raw::thread_path(rig.dev_pid, "pn-rx");
    let bare_path = bare.pid().map(|p| format!("/proc/{p}"));
    let t_dev0 = raw::cpu_ticks(&dev_path);
    let t_cyc0 = cyc_path.as_deref().and_then(raw::cpu_ticks);
    let t_rx0 = rx_path.as_deref().and_then(raw::cpu_ticks);
    let t_bare0 = bare_path.as_deref().and_then(raw::cpu_ticks);
    let t0 = raw::mono_ns();
    let rt0 = raw::realtime_ns();
    // Watch the AR: after an abort (watchdog), note when and reconnect, so a long run goes on.
    let mut aborts: Vec<String> = Vec::new();
    let mut ar = ar;
    let mut ctl_exp = 0u64;
    let mut exp_base = s0.watchdog_expiries;
    let end = t0 + case.seconds * 1_000_000_000;
    while raw::mono_ns() < end && !stopped() {
        nap(Duration::from_millis(100));
        let st = ar.state();
        if st != pn_controller::ArState::DataExchange {
            aborts.push(format!(
                "{:.1} s: {st:?}",
                (raw::realtime_ns() - rt0) as f64 / 1e9
            ));
            ctl_exp += ar.status().watchdog_expiries.saturating_sub(exp_base);
            exp_base = 0;
            // The device may still be tearing the old AR down: retry a few times.
            let mut last_err = String::new();
            let mut ok = false;
            for _ in 0..10 {
                match rig.connect(case.period_us, dhf) {
                    Ok(h) => {
                        ar = h;
                        ok = true;
                        break;
                    }
                    Err(e) => {
                        last_err = e.lines().next().unwrap_or("").to_string();
                        nap(Duration::from_millis(300));
                    }
                }
            }
            if !ok {
                aborts.push(format!("reconnect failed: {last_err}"));
                break;
            }
        }
    }
    let secs = (raw::mono_ns() - t0) as f64 / 1e9;
    let t_dev1 = raw::cpu_ticks(&dev_path);
    let t_cyc1 = cyc_path.as_deref().and_then(raw::cpu_ticks);
    let t_rx1 = rx_path.as_deref().and_then(raw::cpu_ticks);
    let t_bare1 = bare_path.as_deref().and_then(raw::cpu_ticks);
    let recs = rig.rec().take();
    let d1 = rig.diag();
    let s1 = ar.status();
    ctl_exp += s1.watchdog_expiries.saturating_sub(exp_base);
    let rss = raw::vm_rss_kb(rig.dev_pid);
    drop(_load);
    let bare_report = bare.finish(Duration::from_secs(4)).trim().to_string();
    let wrk_out = wrk.map(|w| w.finish(Duration::from_secs(5)));
    if stopped() {
        return Err("interrupted".into());
    }
    let pick =
        |k: Kind| -> Vec<u64> { recs.iter().filter(|r| r.kind == k).map(|r| r.ts).collect() };
    let (dev_ts, ctl_ts, bare_ts) = (
        pick(Kind::DevCyclic),
        pick(Kind::CtlCyclic),
        pick(Kind::Bare),
    );
    let device = intervals(&dev_ts, period_ns);
    let controller = intervals(&ctl_ts, period_ns);
    let barest = intervals(&bare_ts, period_ns);
    let bare_gaps = gaps(&bare_ts, period_ns, 2.0);
    let device_unexplained_gaps =
        unexplained(&gaps(&dev_ts, period_ns, 3.0), &bare_gaps, period_ns);
    let controller_unexplained_gaps =
        unexplained(&gaps(&ctl_ts, period_ns, 3.0), &bare_gaps, period_ns);
    let ratio = if barest.dev_p99 > 0.0 {
        device.dev_p99 / barest.dev_p99
    } else {
        f64::NAN
    };
    Ok(CaseResult {
        case: case.clone(),
        ratio_dev_p99: ratio,
        device_unexplained_gaps,
        controller_unexplained_gaps,
        device,
        controller,
        bare: barest,
        device_watchdog_trips: counter(&d1, "watchdogTrips") - counter(&d0, "watchdogTrips"),
        controller_watchdog_expiries: ctl_exp,
        device_missed_ticks: counter(&d1, "stackMissedTicks") - counter(&d0, "stackMissedTicks"),
        ar_state_after: format!("{:?}", ar.state()),
        ar_aborts: aborts,
        measured_s: secs,
        t0_realtime_ns: rt0,
        device_cpu_pct: cpu_pct(t_dev0, t_dev1, secs),
        cyclic_thread_cpu_pct: cpu_pct(t_cyc0, t_cyc1, secs),
        rx_thread_cpu_pct: cpu_pct(t_rx0, t_rx1, secs),
        bare_cpu_pct: cpu_pct(t_bare0, t_bare1, secs),
        device_rss_kb: rss,
        wrk_rps: wrk_out.as_deref().and_then(wrk_rps),
        wrk_non2xx: wrk_out.as_deref().map_or(0, wrk_non2xx),
        recorder_drops: rig.rec().drops() - drops0,
        loadavg_before,
        bare_report,
    })
}

fn f(v: f64) -> String {
    if v.is_nan() {
        "-".into()
    } else if v >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

fn opt(v: Option<f64>) -> String {
    v.map_or("-".into(), f)
}

/// Markdown header of [`markdown_rows`].
pub const TABLE_HEADER: &str = "| period | load | hires | http | stream | frames | interval p50/p99/p99.9/max (us) | \\|dev\\| p50/p99/p99.9/max (us) | missed | gaps>3 | ratio p99 | wd trips dev/ctl | CPU % dev (cyclic/rx) | loadavg |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|";

/// Three markdown rows (device, bare sender, controller) of a case.
pub fn markdown_rows(r: &CaseResult) -> String {
    let c = &r.case;
    let head = format!(
        "| {} us | {} | {} | {} ",
        c.period_us,
        if c.load_threads > 0 {
            format!("{} busy", c.load_threads)
        } else {
            "idle".into()
        },
        if c.hires { "on" } else { "off" },
        if c.http_conns > 0 {
            format!(
                "wrk {}c {} rps",
                c.http_conns,
                r.wrk_rps.map_or("-".into(), |v| format!("{v:.0}"))
            )
        } else {
            "-".into()
        }
    );
    let row = |name: &str, s: &IntervalStats, extra: &str| {
        format!(
            "{head}| {name} | {} | {}/{}/{}/{} | {}/{}/{}/{} | {} | {} | {extra}\n",
            s.frames,
            f(s.interval_p50),
            f(s.interval_p99),
            f(s.interval_p999),
            f(s.interval_max),
            f(s.dev_p50),
            f(s.dev_p99),
            f(s.dev_p999),
            f(s.dev_max),
            s.missed_cycles,
            s.gaps_over_3,
        )
    };
    let mut out = String::new();
    out += &row(
        "device",
        &r.device,
        &format!(
            "{} | {}/{} | {} ({}/{}) | {:.1} |",
            f(r.ratio_dev_p99),
            r.device_watchdog_trips,
            r.controller_watchdog_expiries,
            opt(r.device_cpu_pct),
            opt(r.cyclic_thread_cpu_pct),
            opt(r.rx_thread_cpu_pct),
            r.loadavg_before
        ),
    );
    out += &row(
        "bare",
        &r.bare,
        &format!("1.0 | - | {} | |", opt(r.bare_cpu_pct)),
    );
    out += &row("controller", &r.controller, "| | | |");
    out
}

/// Verdict of the targets for a case (device vs bare sender of the same run).
pub fn verdict(r: &CaseResult, max_ratio: f64) -> String {
    let ratio_ok = r.ratio_dev_p99 <= max_ratio;
    let gaps_ok = r.device.gaps_over_3 <= r.bare.gaps_over_3;
    format!(
        "{} us {} hires={} http={} ({:.0} s): |dev| p99 {:.1} us vs bare {:.1} us = {:.2}x (target <= {max_ratio}x: {}); gaps>3 cycles device {} vs bare {} ({}), device gaps>3 without a bare gap at the same time: {}, controller: {}; watchdog trips device {} controller {}; missed cycles device {} bare {}; recorder drops {}",
        r.case.period_us,
        if r.case.load_threads > 0 { "loaded" } else { "idle" },
        r.case.hires,
        r.case.http_conns,
        r.measured_s,
        r.device.dev_p99,
        r.bare.dev_p99,
        r.ratio_dev_p99,
        if ratio_ok { "MET" } else { "MISSED" },
        r.device.gaps_over_3,
        r.bare.gaps_over_3,
        if gaps_ok { "MET" } else { "MISSED" },
        r.device_unexplained_gaps,
        r.controller_unexplained_gaps,
        r.device_watchdog_trips,
        r.controller_watchdog_expiries,
        r.device.missed_cycles,
        r.bare.missed_cycles,
        r.recorder_drops,
    ) + &if r.ar_aborts.is_empty() {
        String::new()
    } else {
        format!(
            "; AR aborts (reconnected): {}; longest gaps at device +{:.3} s, controller +{:.3} s, bare +{:.3} s",
            r.ar_aborts.join(", "),
            r.device.max_at_ns.saturating_sub(r.t0_realtime_ns) as f64 / 1e9,
            r.controller.max_at_ns.saturating_sub(r.t0_realtime_ns) as f64 / 1e9,
            r.bare.max_at_ns.saturating_sub(r.t0_realtime_ns) as f64 / 1e9,
        )
    }
}

//! `pn-lab bench cycle`: how steadily the device holds its cycle, measured on the wire in the
//! controller namespace, beside the bare sender (the limit of this machine) in the same run.
//!
//! For each case (period x CPU load x high-resolution timer x HTTP load): connect an AR at the
//! period, start the bare sender on the device's NIC with the same period, optionally busy
//! threads and wrk on the API, record for `--seconds`, then report the interval statistics of
//! the device's frames, the controller's frames and the bare sender's frames, missed cycles,
//! watchdog trips on both sides, CPU use and the ratios to the bare sender.

use super::pnet::{PNET_MAC, PNET_PERIOD_US};
use super::raw;
use super::recorder::{Kind, Rec, BARE_BESIDE_PNET};
use super::rig::{cpu_pct, wrk_non2xx, wrk_rps, ChildGuard, CpuLoad, Rig};
use super::stats::{containing, gaps, intervals, unexplained_gaps, IntervalStats};
use super::swap;
use super::{nap, stopped};
use pn_controller::{ArHandle, ArState};
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
    /// `--pin`: the device process and the bare sender on this CPU, the load threads on the
    /// others.
    pub pin: Option<usize>,
    /// With `pin`: the bare sender's SCHED_FIFO priority (`--bare-prio`, default 61).
    pub bare_prio: i32,
    /// `--swap`: with `pin` and p-net, the CPUs exchanged halfway ([`super::swap`]).
    pub swap: bool,
    /// With `pin` and p-net: where the controller's threads run (`--controller-on`).
    pub controller_on: swap::ControllerOn,
    /// `--standby`: the device runs its standby sender on the other CPU, with this grace (0:
    /// a quarter period).
    pub standby: bool,
    pub standby_grace_us: u64,
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
    /// Of the unexplained gaps, those that hold a Connect request of the controller: the
    /// outage of a reconnect after an AR end (whose cause is then a gap of its own or a
    /// trip of the other side), not a stall of the stream's sender.
    pub device_unexplained_reconnects: usize,
    pub controller_unexplained_reconnects: usize,
    pub device_watchdog_trips: i64,
    pub controller_watchdog_expiries: u64,
    pub device_missed_ticks: i64,
    /// Frames the device's standby sender sent (`stackStandbyFrames`).
    pub device_standby_frames: i64,
    pub ar_state_after: String,
    /// AR aborts during the measurement (time after start, state) and reconnects.
    pub ar_aborts: Vec<String>,
    /// With `--swap`: the figures of each half.
    pub halves: Vec<swap::Half>,
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
    /// p-net's stream (`--pnet`, 1 ms cases).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pnet: Option<PnetStream>,
}

fn counter(d: &Json, k: &str) -> i64 {
    d[k].as_i64()
        .or_else(|| d["counters"][k].as_i64())
        .unwrap_or(0)
}

/// p-net's input stream in a case (`--pnet`), measured as the device's.
#[derive(Debug, Clone, Serialize)]
pub struct PnetStream {
    pub stream: IntervalStats,
    /// The controller's frames to p-net.
    pub controller: IntervalStats,
    /// Pinned: a bare sender on p-net's CPU, one priority below p-net (p-net's same-run
    /// baseline, as the bare sender beside the device is the device's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bare: Option<IntervalStats>,
    /// p-net |dev| p99 / bare |dev| p99.
    pub ratio_dev_p99: f64,
    /// p-net |dev| p99 / device |dev| p99 (issue 17: at least 3).
    pub p99_pnet_over_device: f64,
    /// p-net gaps longer than 3 cycles during which the bare sender had no gap.
    pub unexplained_gaps: usize,
    pub controller_watchdog_expiries: u64,
    /// Times p-net's AR left data exchange during the measurement (each reconnected).
    pub ar_ends: usize,
    pub ar_aborts: Vec<String>,
    pub ar_state_after: String,
    pub cpu_pct: Option<f64>,
    pub rss_kb: Option<u64>,
}

/// An AR the case keeps up: after it leaves data exchange the end is noted (time after the
/// start, state) and the AR reconnected, so a long run goes on.
struct Watched {
    ar: ArHandle,
    aborts: Vec<String>,
    ends: usize,
    /// Controller watchdog expiries of the ARs already ended.
    ctl_exp: u64,
    exp_base: u64,
    /// Reconnecting failed: no longer watched.
    lost: bool,
}

impl Watched {
    fn new(ar: ArHandle) -> Watched {
        Watched {
            exp_base: ar.status().watchdog_expiries,
            ar,
            aborts: Vec::new(),
            ends: 0,
            ctl_exp: 0,
            lost: false,
        }
    }

    /// Reconnect (up to `tries` times) when the AR has ended.
    fn check(
        &mut self,
        rt0: u64,
        tries: usize,
        mut reconnect: impl FnMut() -> Result<ArHandle, String>,
    ) {
        let st = self.ar.state();
        if self.lost || st == ArState::DataExchange {
            return;
        }
        self.ends += 1;
        self.aborts.push(format!(
            "{:.1} s: {st:?}",
            (raw::realtime_ns() - rt0) as f64 / 1e9
        ));
        self.ctl_exp += self
            .ar
            .status()
            .watchdog_expiries
            .saturating_sub(self.exp_base);
        self.exp_base = 0;
        // The device may still be tearing the old AR down: retry a few times.
        let mut last_err = String::new();
        for _ in 0..tries {
            match reconnect() {
                Ok(h) => {
                    self.ar = h;
                    return;
                }
                Err(e) => {
                    last_err = e.lines().next().unwrap_or("").to_string();
                    nap(Duration::from_millis(300));
                }
            }
        }
        self.aborts.push(format!("reconnect failed: {last_err}"));
        self.lost = true;
    }

    /// Controller watchdog expiries over the measurement.
    fn expiries(&self) -> u64 {
        self.ctl_exp
            + self
                .ar
                .status()
                .watchdog_expiries
                .saturating_sub(self.exp_base)
    }
}

/// The processes and threads whose CPU time a case measures.
struct Procs {
    paths: [Option<String>; 5],
}

impl Procs {
    const DEV: usize = 0;
    const CYC: usize = 1;
    const RX: usize = 2;
    const BARE: usize = 3;
    const PNET: usize = 4;

    fn of(rig: &Rig, bare: &ChildGuard, pnet: bool) -> Procs {
        let pnet_pid = rig.pnet.as_ref().filter(|_| pnet).map(|p| p.pid);
        Procs {
            paths: [
                Some(format!("/proc/{}", rig.dev_pid)),
                raw::thread_path(rig.dev_pid, "pn-cyclic"),
                raw::thread_path(rig.dev_pid, "pn-rx"),
                bare.pid().map(|p| format!("/proc/{p}")),
                pnet_pid.map(|p| format!("/proc/{p}")),
            ],
        }
    }

    fn read(&self) -> [Option<u64>; 5] {
        self.paths
            .clone()
            .map(|p| p.as_deref().and_then(raw::cpu_ticks))
    }
}

/// The case's bare senders, placed: beside the device (pinned: with the device on `case.pin`,
/// p-net and the controller placed on `others`), and pinned against p-net a second one on
/// p-net's CPU.
fn start_baselines(
    rig: &Rig,
    case: &Case,
    others: &[usize],
    with_pnet: bool,
) -> Result<(ChildGuard, Option<ChildGuard>), String> {
    // Pinned, the bare sender shares the device's CPU, by default one priority above the
    // device's cyclic thread (60), so the device's spin before its deadline cannot delay the
    // baseline (`--bare-prio`: decisions §38).
    let bare = match case.pin {
        None => rig.bare_sender(case.period_us, case.seconds + 2)?,
        Some(cpu) => {
            let b = rig.bare_sender_prio(case.period_us, case.seconds + 2, case.bare_prio)?;
            if let Some(pid) = b.pid() {
                raw::pin_process(pid, &[cpu])?;
            }
            // The device's standby sender (if any) goes to the other CPUs.
            raw::pin_device(rig.dev_pid, &[cpu], others)?;
            // p-net (`--pnet`) on the other CPUs: a CPU for each device, so that neither
            // measures the other's preemption (p-net runs at SCHED_FIFO 70, above the device).
            if let (Some(p), true) = (&rig.pnet, with_pnet) {
                raw::pin_process(p.pid, others)?;
                case.controller_on.place(cpu, others)?;
            }
            b
        }
    };
    // Pinned against p-net: p-net's CPU gets its own baseline.
    let pnet_bare = match (case.pin, with_pnet) {
        (Some(_), true) => {
            let b = rig.pnet_bare_sender(case.period_us, case.seconds + 2)?;
            if let Some(pid) = b.pid() {
                raw::pin_process(pid, others)?;
            }
            Some(b)
        }
        _ => None,
    };
    Ok((bare, pnet_bare))
}

/// Connect the device's AR (and p-net's at its period) when not up at the case's period.
fn prepare(rig: &mut Rig, case: &Case, dhf: u16) -> Result<(ArHandle, Option<ArHandle>), String> {
    let up = |a: Option<&ArHandle>| {
        a.is_some_and(|a| {
            a.state() == ArState::DataExchange && a.status().cycle_us == case.period_us
        })
    };
    if !up(rig.ar.as_ref()) {
        rig.connect(case.period_us, dhf)?;
    }
    let ar = rig.ar.clone().ok_or("no AR")?;
    let Some(p) = &rig.pnet else {
        return Ok((ar, None));
    };
    if case.period_us != PNET_PERIOD_US {
        rig.disconnect_pnet();
        return Ok((ar, None));
    }
    let pnet = if up(p.ar.as_ref()) {
        p.ar.clone().ok_or("no p-net AR")?
    } else {
        rig.connect_pnet(case.period_us, dhf)?
    };
    Ok((ar, Some(pnet)))
}

/// Run one case on a rig (connects the AR at the case's period when needed).
pub fn run_case(rig: &mut Rig, case: &Case, dhf: u16) -> Result<CaseResult, String> {
    let period_ns = case.period_us * 1000;
    let (ar, pnet_ar) = prepare(rig, case, dhf)?;
    rig.set_hires(case.hires)?;
    let loadavg_before = raw::loadavg1();
    let others = case.pin.map(raw::other_cpus).unwrap_or_default();
    let mut load =
        (case.load_threads > 0).then(|| CpuLoad::start_on(case.load_threads, others.clone()));
    let wrk = if case.http_conns > 0 {
        Some(rig.wrk(
            "http://127.0.0.1:18840/api/status",
            case.http_conns,
            case.seconds + 1,
        )?)
    } else {
        None
    };
    let (bare, pnet_bare) = start_baselines(rig, case, &others, pnet_ar.is_some())?;
    // Settle (bare sender start, wrk connections, load threads), then measure.
    nap(Duration::from_millis(500));
    rig.rec().clear();
    let drops0 = rig.rec().drops();
    let d0 = rig.diag();
    let procs = Procs::of(rig, &bare, pnet_ar.is_some());
    let ticks0 = procs.read();
    let t0 = raw::mono_ns();
    let rt0 = raw::realtime_ns();
    let mut dev = Watched::new(ar);
    let mut pnet = pnet_ar.map(Watched::new);
    let end = t0 + case.seconds * 1_000_000_000;
    // Only against p-net (1 ms cases), as `--swap` says: there is nothing to exchange with.
    let swap_at = (case.swap && case.pin.is_some() && pnet.is_some())
        .then_some(t0 + case.seconds * 500_000_000);
    // (realtime of the exchange, the device's CPU before and after it)
    let mut swapped: Option<(u64, (usize, usize))> = None;
    while raw::mono_ns() < end && !stopped() && !dev.lost {
        nap(Duration::from_millis(100));
        if let (Some(at), None, Some(cpu)) = (swap_at, swapped, case.pin) {
            if raw::mono_ns() >= at {
                let pnet_pid = rig.pnet.as_ref().filter(|_| pnet.is_some()).map(|p| p.pid);
                let pid = rig.dev_pid;
                let pnet_side = [pnet_pid, pnet_bare.as_ref().and_then(ChildGuard::pid)];
                let now_on = swap::exchange(
                    cpu,
                    pid,
                    bare.pid(),
                    &pnet_side,
                    &mut load,
                    case.load_threads,
                )?;
                case.controller_on.place(now_on, &[cpu])?;
                swapped = Some((raw::realtime_ns(), (cpu, now_on)));
            }
        }
        dev.check(rt0, 10, || rig.connect(case.period_us, dhf));
        if let Some(p) = pnet.as_mut() {
            // connect_pnet retries by itself for a while.
            p.check(rt0, 1, || rig.connect_pnet(case.period_us, dhf));
        }
    }
    let secs = (raw::mono_ns() - t0) as f64 / 1e9;
    let ticks1 = procs.read();
    let recs = rig.rec().take();
    let d1 = rig.diag();
    let rss = raw::vm_rss_kb(rig.dev_pid);
    let pnet_rss = rig.pnet.as_ref().and_then(|p| raw::vm_rss_kb(p.pid));
    drop(load);
    let bare_report = bare.finish(Duration::from_secs(4)).trim().to_string();
    if let Some(b) = pnet_bare {
        b.finish(Duration::from_secs(4));
    }
    let wrk_out = wrk.map(|w| w.finish(Duration::from_secs(5)));
    if stopped() {
        return Err("interrupted".into());
    }
    let cpu = |i: usize| cpu_pct(ticks0[i], ticks1[i], secs);
    let macs = rig.rec().macs();
    let halves = swapped.map_or_else(Vec::new, |(t, cpus)| {
        swap::halves(&recs, &macs, period_ns, t, cpus)
    });
    let s = Streams::split(&recs, &macs, period_ns);
    let (bare_p99, dev_p99) = (s.bare.dev_p99, s.device.st.dev_p99);
    let pnet_bare = s.pnet_bare;
    let pnet = pnet.zip(s.pnet).map(|(w, (p, ctl))| PnetStream {
        bare: pnet_bare,
        ratio_dev_p99: ratio(p.st.dev_p99, bare_p99),
        p99_pnet_over_device: ratio(p.st.dev_p99, dev_p99),
        unexplained_gaps: p.unexplained,
        controller_watchdog_expiries: w.expiries(),
        ar_ends: w.ends,
        ar_aborts: w.aborts.clone(),
        ar_state_after: format!("{:?}", w.ar.state()),
        cpu_pct: cpu(Procs::PNET),
        rss_kb: pnet_rss,
        stream: p.st,
        controller: ctl,
    });
    Ok(CaseResult {
        case: case.clone(),
        ratio_dev_p99: ratio(dev_p99, bare_p99),
        device_unexplained_gaps: s.device.unexplained,
        controller_unexplained_gaps: s.controller.unexplained,
        device_unexplained_reconnects: s.device.reconnects,
        controller_unexplained_reconnects: s.controller.reconnects,
        device: s.device.st,
        controller: s.controller.st,
        bare: s.bare,
        device_watchdog_trips: counter(&d1, "watchdogTrips") - counter(&d0, "watchdogTrips"),
        controller_watchdog_expiries: dev.expiries(),
        device_missed_ticks: counter(&d1, "stackMissedTicks") - counter(&d0, "stackMissedTicks"),
        device_standby_frames: counter(&d1, "stackStandbyFrames")
            - counter(&d0, "stackStandbyFrames"),
        ar_state_after: format!("{:?}", dev.ar.state()),
        ar_aborts: dev.aborts,
        halves,
        measured_s: secs,
        t0_realtime_ns: rt0,
        device_cpu_pct: cpu(Procs::DEV),
        cyclic_thread_cpu_pct: cpu(Procs::CYC),
        rx_thread_cpu_pct: cpu(Procs::RX),
        bare_cpu_pct: cpu(Procs::BARE),
        device_rss_kb: rss,
        wrk_rps: wrk_out.as_deref().and_then(wrk_rps),
        wrk_non2xx: wrk_out.as_deref().map_or(0, wrk_non2xx),
        recorder_drops: rig.rec().drops() - drops0,
        loadavg_before,
        bare_report,
        pnet,
    })
}

/// `a / b`, NaN when `b` is 0.
pub fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        a / b
    } else {
        f64::NAN
    }
}

/// One measured stream: its statistics and its gaps > 3 cycles without a bare-sender gap
/// (longer than 2 cycles) at the same time.
pub(super) struct Stream {
    pub(super) st: IntervalStats,
    unexplained: usize,
    /// Of them, reconnect outages (a Connect request inside the gap).
    reconnects: usize,
}

/// The recorded streams of a case: the device's frames and the controller's frames to it,
/// p-net's and the controller's to p-net (by p-net's MAC, when p-net sent), the bare sender's.
pub(super) struct Streams {
    pub(super) device: Stream,
    controller: Stream,
    pub(super) bare: IntervalStats,
    pub(super) pnet: Option<(Stream, IntervalStats)>,
    /// The bare sender beside p-net, when one ran.
    pub(super) pnet_bare: Option<IntervalStats>,
}

impl Streams {
    pub(super) fn split(recs: &[Rec], macs: &[[u8; 6]], period_ns: u64) -> Streams {
        let pnet_idx = macs.iter().position(|m| *m == PNET_MAC);
        let of = |k: Kind, pnet: bool| -> Vec<u64> {
            recs.iter()
                .filter(|r| r.kind == k && (Some(usize::from(r.src)) == pnet_idx) == pnet)
                .map(|r| r.ts)
                .collect()
        };
        let bare_ts: Vec<u64> = recs
            .iter()
            .filter(|r| r.kind == Kind::Bare && r.src != BARE_BESIDE_PNET)
            .map(|r| r.ts)
            .collect();
        let pnet_bare_ts: Vec<u64> = recs
            .iter()
            .filter(|r| r.kind == Kind::Bare && r.src == BARE_BESIDE_PNET)
            .map(|r| r.ts)
            .collect();
        let bare_gaps = gaps(&bare_ts, period_ns, 2.0);
        let mut connects: Vec<u64> = recs
            .iter()
            .filter(|r| r.kind == Kind::RpcOut(0))
            .map(|r| r.ts)
            .collect();
        connects.sort_unstable();
        let stream = |ts: &[u64]| {
            let u = unexplained_gaps(&gaps(ts, period_ns, 3.0), &bare_gaps, period_ns);
            Stream {
                st: intervals(ts, period_ns),
                unexplained: u.len(),
                reconnects: containing(&u, &connects),
            }
        };
        Streams {
            device: stream(&of(Kind::DevCyclic, false)),
            controller: stream(&of(Kind::CtlCyclic, false)),
            bare: intervals(&bare_ts, period_ns),
            pnet_bare: (!pnet_bare_ts.is_empty()).then(|| intervals(&pnet_bare_ts, period_ns)),
            pnet: pnet_idx.map(|_| {
                let ctl = intervals(&of(Kind::CtlCyclic, true), period_ns);
                (stream(&of(Kind::DevCyclic, true)), ctl)
            }),
        }
    }
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

/// The markdown rows (device, p-net when it ran, bare sender, controller) of a case.
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
    if let Some(p) = &r.pnet {
        out += &row(
            "p-net",
            &p.stream,
            &format!(
                "{} | -/{} ({} AR ends) | pn_dev {} | |",
                f(p.ratio_dev_p99),
                p.controller_watchdog_expiries,
                p.ar_ends,
                opt(p.cpu_pct),
            ),
        );
    }
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
        "{} us {} hires={} http={} ({:.0} s): |dev| p99 {:.1} us vs bare {:.1} us = {:.2}x (target <= {max_ratio}x: {}); gaps>3 cycles device {} vs bare {} ({}), device gaps>3 without a bare gap at the same time: {} ({} of them reconnect outages), controller: {} ({}); watchdog trips device {} controller {}; missed cycles device {} bare {}; recorder drops {}",
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
        r.device_unexplained_reconnects,
        r.controller_unexplained_gaps,
        r.controller_unexplained_reconnects,
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

/// Issue 17's target against p-net in the same case: the device's missed cycles no more than
/// p-net's, and p-net's |interval - period| p99 at least `min_ratio` times the device's.
pub fn pnet_verdict(r: &CaseResult, min_ratio: f64) -> Option<String> {
    let p = r.pnet.as_ref()?;
    let (dm, pm) = (r.device.missed_cycles, p.stream.missed_cycles);
    let met = |ok: bool| if ok { "MET" } else { "MISSED" };
    let shown: Vec<&str> = p.ar_aborts.iter().take(5).map(String::as_str).collect();
    Some(format!(
        "{} us {} against p-net: missed cycles device {dm} vs p-net {pm} (target device <= p-net: {}); |dev| p99 p-net {:.1} us / device {:.1} us = {:.2}x (target >= {min_ratio}x: {}); interval p99 p-net {:.0} us, device {:.0} us; gaps>3 device {} p-net {} bare {}; p-net AR ends {} (controller watchdog expiries {}){}{}",
        r.case.period_us,
        if r.case.load_threads > 0 { "loaded" } else { "idle" },
        met(dm <= pm),
        p.stream.dev_p99,
        r.device.dev_p99,
        p.p99_pnet_over_device,
        met(p.p99_pnet_over_device >= min_ratio),
        p.stream.interval_p99,
        r.device.interval_p99,
        r.device.gaps_over_3,
        p.stream.gaps_over_3,
        r.bare.gaps_over_3,
        p.ar_ends,
        p.controller_watchdog_expiries,
        if shown.is_empty() {
            String::new()
        } else {
            format!(": {}{}", shown.join(", "), if p.ar_aborts.len() > 5 { ", ..." } else { "" })
        },
        p.bare.as_ref().map_or(String::new(), |b| format!(
            "; each CPU's bare sender: missed beside the device {} beside p-net {}, |dev| p99 {:.1} / {:.1} us",
            r.bare.missed_cycles, b.missed_cycles, r.bare.dev_p99, b.dev_p99
        )),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(frames: u64, dev_p99: f64, missed: u64) -> IntervalStats {
        IntervalStats {
            frames,
            dev_p99,
            missed_cycles: missed,
            ..Default::default()
        }
    }

    fn result(pnet: Option<PnetStream>) -> CaseResult {
        CaseResult {
            case: Case {
                period_us: 1000,
                load_threads: 1,
                hires: true,
                http_conns: 0,
                seconds: 10,
                pin: None,
                bare_prio: 61,
                swap: false,
                controller_on: swap::ControllerOn::Free,
                standby: false,
                standby_grace_us: 0,
            },
            device: stats(10_000, 20.0, 5),
            controller: stats(10_000, 30.0, 7),
            bare: stats(10_000, 40.0, 9),
            ratio_dev_p99: 0.5,
            device_unexplained_gaps: 0,
            controller_unexplained_gaps: 0,
            device_unexplained_reconnects: 0,
            controller_unexplained_reconnects: 0,
            device_watchdog_trips: 0,
            controller_watchdog_expiries: 0,
            device_missed_ticks: 0,
            device_standby_frames: 0,
            ar_state_after: "DataExchange".into(),
            ar_aborts: vec![],
            halves: vec![],
            measured_s: 10.0,
            t0_realtime_ns: 0,
            device_cpu_pct: Some(10.0),
            cyclic_thread_cpu_pct: None,
            rx_thread_cpu_pct: None,
            bare_cpu_pct: None,
            device_rss_kb: None,
            wrk_rps: None,
            wrk_non2xx: 0,
            recorder_drops: 0,
            loadavg_before: 1.0,
            bare_report: String::new(),
            pnet,
        }
    }

    fn pnet(dev_p99: f64, missed: u64) -> PnetStream {
        PnetStream {
            stream: stats(9_990, dev_p99, missed),
            controller: stats(10_000, 30.0, 0),
            bare: None,
            ratio_dev_p99: ratio(dev_p99, 40.0),
            p99_pnet_over_device: ratio(dev_p99, 20.0),
            unexplained_gaps: 0,
            controller_watchdog_expiries: 2,
            ar_ends: 1,
            ar_aborts: vec!["3.0 s: Aborted(\"x\")".into()],
            ar_state_after: "DataExchange".into(),
            cpu_pct: Some(4.0),
            rss_kb: None,
        }
    }

    #[test]
    fn pnet_row_sits_between_the_device_and_the_bare_sender() {
        let rows = markdown_rows(&result(Some(pnet(80.0, 9))));
        let names: Vec<&str> = rows
            .lines()
            .map(|l| l.split('|').nth(5).unwrap_or("").trim())
            .collect();
        assert_eq!(names, ["device", "p-net", "bare", "controller"]);
        let p = rows.lines().nth(1).unwrap();
        assert!(
            p.contains("| 9990 |") && p.contains("-/2 (1 AR ends)"),
            "{p}"
        );
        assert!(p.contains("pn_dev 4.0"), "{p}");
        // Every row has the header's columns.
        let cols = |l: &str| l.matches('|').count();
        let header = TABLE_HEADER.lines().next().unwrap().replace("\\|", "");
        assert!(rows.lines().all(|l| cols(l) == cols(&header)), "{rows}");
        assert_eq!(markdown_rows(&result(None)).lines().count(), 3);
    }

    #[test]
    fn pnet_verdict_judges_both_targets() {
        assert_eq!(pnet_verdict(&result(None), 3.0), None);
        let v = pnet_verdict(&result(Some(pnet(80.0, 9))), 3.0).unwrap();
        assert!(
            v.contains("device 5 vs p-net 9 (target device <= p-net: MET)"),
            "{v}"
        );
        assert!(v.contains("= 4.00x (target >= 3x: MET)"), "{v}");
        let v = pnet_verdict(&result(Some(pnet(50.0, 4))), 3.0).unwrap();
        assert!(v.contains("(target device <= p-net: MISSED)"), "{v}");
        assert!(v.contains("= 2.50x (target >= 3x: MISSED)"), "{v}");
        assert!(!v.contains("each CPU's bare sender"), "{v}");
        // Pinned, p-net's CPU has its own bare sender: both baselines are named.
        let mut p = pnet(50.0, 4);
        p.bare = Some(stats(10_000, 12.5, 6));
        let v = pnet_verdict(&result(Some(p)), 3.0).unwrap();
        assert!(
            v.contains("missed beside the device 9 beside p-net 6, |dev| p99 40.0 / 12.5 us"),
            "{v}"
        );
    }
}

//! Issue 9.2: floods while in data exchange: DCP identify storms (with malformed DCP mixed in),
//! RPC garbage to the PNIO-CM port, unknown and malformed RT frames, LLDP floods from ever new
//! chassis IDs, each sent from the controller namespace with a raw AF_PACKET socket (or UDP),
//! bounded in count and time. During every flood the cycle must hold (no AR end, no interval
//! between the device's frames reaching the data-hold time), the jitter is measured from the
//! receive timestamps of the device's frames (an independent raw socket in the controller
//! namespace), the API must stay responsive (GET /api/status every 20 ms, slowest answer below
//! the spec's 2 s reference timeout) and a Q write must still be delivered afterwards.
//!
//! The device's own counters are read around every window (`GET /api/diag`: watchdog trips,
//! missed ticks, receive-queue drops of its two sockets, L2 rate limiting; CPU time per
//! thread) and printed with the largest gap between its frames (and whether its real-time
//! thread skipped slots there). Where the arithmetic of the L2 rate limit (docs/decisions.md
//! "Floods") bounds them, the counts are asserted: a DCP storm is answered at most at the
//! limit's rate, and DCP and LLDP floods above it are counted as rate-limited.
//!
//! `PN_REL_FLOOD_RATE` (frames per second, default 10000) and `PN_REL_FLOOD_SECS` (per kind,
//! default 3) size the floods. The figures are recorded in docs/benchmarks.md. (Until the
//! fixes of decisions.md "Floods" the default was 2000: at 10000 the malformed-RT flood ended
//! the AR through over-long frames that were consumed, and the DCP storm was answered frame
//! by frame.)

use pn_controller::ArState;
use pn_lab::soak::{env_u64, jitter, Counters, CycleProbe, FloodKind, Rig, RigOptions, Rng};
use serde_json::Value as Json;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The documented L2 rate limits (docs/decisions.md "Floods", frames per second and burst):
/// this test judges the daemon from outside, against the documented figures, as it judges the
/// cycle and the API (the daemon's own unit test pins its constants, `stack::l2`).
const DCP_MULTICAST_LIMIT: (u64, u64) = (50, 50);
const LLDP_LIMIT: (u64, u64) = (20, 20);

#[test]
fn floods_in_data_exchange_keep_cycle_api_and_data() {
    if !pn_testkit::env::require_root() {
        return;
    }
    let rate = env_u64("PN_REL_FLOOD_RATE", 10_000);
    let secs = env_u64("PN_REL_FLOOD_SECS", 3);
    let mut rng = Rng::new(env_u64("PN_REL_SEED", Rng::seed_from_time()));
    let mut c = Counters::default();
    let mut rig = Rig::start(RigOptions::default()).expect("lab");
    rig.connect(Duration::from_secs(20), &mut c)
        .expect("connect");
    rig.write_and_check(&mut c).expect("first write");
    let ar = rig.ar().unwrap();
    let st = ar.status();
    let cycle = Duration::from_micros(st.cycle_us);
    let probe = CycleProbe::start(
        &rig.lab.ns_ctl,
        rig.lab.controller_nic(),
        pn_controller::parse_mac(&st.device_mac).unwrap().0,
        st.input_frame_id,
        ar.layout().input.data_length as usize,
    )
    .expect("probe");
    let hold = cycle * u32::from(rig.data_hold_factor);
    // CycleCounter advance per slot (31.25 us units).
    let step = (st.cycle_us * 32 / 1000) as u16;
    let mut rows = Vec::new();
    let mut errors = Vec::new();
    // Baseline without a flood.
    probe.take();
    std::thread::sleep(Duration::from_secs(secs));
    let base = jitter(
        &probe.take().iter().map(|(t, _)| *t).collect::<Vec<_>>(),
        cycle,
    );
    let rss0 = rig.device_rss_kib().unwrap_or(0);
    rows.push(("none (baseline)".to_string(), 0u64, base, 0u64, 0u64, rss0));
    // A window is clean when the AR survived, no interval reached the data-hold time and the
    // API answered every call within 2 s.
    let hold_us = hold.as_secs_f64() * 1e6;
    for kind in FloodKind::ALL {
        // On a machine whose CPUs are taken by other work even the baseline misses cycles.
        // A failed flood window therefore counts only when a quiet window measured right after
        // it is clean; otherwise it is repeated (at most 3 times).
        let mut verdict = Vec::new();
        for attempt in 0..3 {
            rig.ensure_connected(Duration::from_secs(20), &mut c)
                .expect("data exchange before the flood");
            let ar_id = rig.ar().unwrap().id();
            let before = DeviceSnapshot::take(&rig);
            probe.take();
            let started = Instant::now();
            let done = AtomicBool::new(false);
            let (sent, api) = std::thread::scope(|s| {
                let poller = s.spawn(|| {
                    let (mut max, mut fails) = (Duration::ZERO, 0u64);
                    while !done.load(Ordering::Relaxed) {
                        let t = Instant::now();
                        match rig.api("GET", "/api/status", None) {
                            Ok((200, _)) => {}
                            _ => fails += 1,
                        }
                        max = max.max(t.elapsed());
                        std::thread::sleep(Duration::from_millis(20));
                    }
                    (max, fails)
                });
                let sent = rig.flood(kind, rate, Duration::from_secs(secs), &mut rng);
                done.store(true, Ordering::Relaxed);
                (sent, poller.join().unwrap())
            });
            let sent = sent.unwrap_or_else(|e| panic!("{}: {e}", kind.name()));
            let took = started.elapsed();
            let stamps = probe.take();
            let j = jitter(&stamps.iter().map(|(t, _)| *t).collect::<Vec<_>>(), cycle);
            let after = DeviceSnapshot::take(&rig);
            let (gap_us, gap_slots) = largest_gap(&stamps, step);
            eprintln!(
                "{} attempt {attempt}: {sent} sent in {:.2} s ({:.0}/s); largest gap {gap_us:.0} us over {gap_slots} slot(s); API slowest {:?}; device: {}",
                kind.name(),
                took.as_secs_f64(),
                sent as f64 / took.as_secs_f64(),
                api.0,
                before.delta(&after)
            );
            let rss = rig.device_rss_kib().unwrap_or(0);
            verdict.clear();
            // The L2 rate limit's arithmetic (token buckets: burst + rate x elapsed).
            let span = before.at.elapsed().as_secs_f64() + 1.0;
            let bound = |(r, b): (u64, u64)| b + (r as f64 * span).ceil() as u64;
            let d = |p: &[&str]| after.num(p).saturating_sub(before.num(p));
            if kind == FloodKind::DcpIdentify {
                let answered = d(&["l2", "dcpTxResponses"]);
                let limit = bound(DCP_MULTICAST_LIMIT);
                if answered > limit {
                    verdict.push(format!("DCP storm: {answered} responses > {limit}"));
                }
                if sent > limit && d(&["l2", "dcpMulticastRateLimited"]) == 0 {
                    verdict.push("DCP storm: nothing counted as rate-limited".into());
                }
            }
            if kind == FloodKind::Lldp
                && sent > bound(LLDP_LIMIT)
                && d(&["l2", "lldpRateLimited"]) == 0
            {
                verdict.push("LLDP flood: nothing counted as rate-limited".into());
            }
            let ar = rig.ar().unwrap();
            if ar.id() != ar_id || ar.state() != ArState::DataExchange {
                verdict.push(format!("{}: the AR ended ({:?})", kind.name(), ar.state()));
            }
            if j.max_us >= hold_us {
                verdict.push(format!(
                    "{}: an interval of {:.0} us reached the data-hold time",
                    kind.name(),
                    j.max_us
                ));
            }
            if api.0 >= Duration::from_secs(2) || api.1 > 0 {
                verdict.push(format!(
                    "{}: API slowest {:?}, {} failed calls",
                    kind.name(),
                    api.0,
                    api.1
                ));
            }
            rig.ensure_connected(Duration::from_secs(20), &mut c)
                .expect("data exchange after the flood");
            if let Err(e) = rig.write_and_check(&mut c) {
                verdict.push(format!("{}: write after the flood: {e}", kind.name()));
            }
            let row = (
                kind.name().to_string(),
                sent,
                j,
                api.0.as_millis() as u64,
                api.1,
                rss,
            );
            if verdict.is_empty() {
                rows.push(row);
                break;
            }
            // A quiet window right after: is the machine itself starving the cycle?
            probe.take();
            std::thread::sleep(Duration::from_secs(secs));
            let quiet = jitter(
                &probe.take().iter().map(|(t, _)| *t).collect::<Vec<_>>(),
                cycle,
            );
            let quiet_ok = quiet.max_us < hold_us
                && rig.ar().is_some_and(|a| a.state() == ArState::DataExchange);
            eprintln!(
                "{} attempt {attempt}: {verdict:?}; quiet window after it: max interval {:.0} us ({})",
                kind.name(),
                quiet.max_us,
                if quiet_ok { "clean: the flood is the cause" } else { "disturbed too: machine overloaded, repeating" }
            );
            if quiet_ok && attempt >= 1 {
                rows.push(row);
                break;
            }
            if attempt == 2 {
                rows.push(row);
            }
        }
        errors.extend(verdict);
    }
    drop(probe);
    eprintln!(
        "| flood | frames sent | device frames | mean us | min us | max us | p99 abs dev us | max abs dev us | intervals > 1.5 cycles | API slowest ms | device RSS KiB |"
    );
    for (name, sent, j, api_ms, _, rss) in &rows {
        eprintln!(
            "| {name} | {sent} | {} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} | {} | {api_ms} | {rss} |",
            j.frames, j.mean_us, j.min_us, j.max_us, j.p99_dev_us, j.max_dev_us, j.late
        );
    }
    assert!(errors.is_empty(), "{errors:#?}\n{}", rig.lab.device_log());
    // Every flood really ran. The sender is paced to `rate` and stops 2 s after its window; on
    // a machine whose CPUs are taken by other work it may reach less (the table shows what was
    // sent); a tenth of the target is the floor below which the window proves nothing.
    for (name, sent, j, ..) in &rows[1..] {
        assert!(
            *sent >= rate * secs / 10,
            "{name}: only {sent} frames sent (target {})",
            rate * secs
        );
        assert!(j.frames > 0, "{name}: no device frames recorded");
    }
    assert_eq!(c.lost_writes, 0);
}

/// What the device counted, read before and after a window: `GET /api/diag` (watchdog trips,
/// missed ticks of its real-time thread, receive-socket drops, L2 rate limiting) and the CPU
/// time of each of its threads (`/proc/<pid>/task/*/stat`, clock ticks).
struct DeviceSnapshot {
    at: Instant,
    diag: Json,
    threads: Vec<(String, u64)>,
}

impl DeviceSnapshot {
    fn take(rig: &Rig) -> DeviceSnapshot {
        let at = Instant::now();
        let diag = rig
            .api("GET", "/api/diag", None)
            .map(|(_, v)| v)
            .unwrap_or(Json::Null);
        let mut threads = Vec::new();
        if let Some(pid) = rig.device_pid() {
            if let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) {
                for e in dir.flatten() {
                    let Ok(st) = std::fs::read_to_string(e.path().join("stat")) else {
                        continue;
                    };
                    let (Some(a), Some(b)) = (st.find('('), st.rfind(')')) else {
                        continue;
                    };
                    let name = st[a + 1..b].to_string();
                    let f: Vec<&str> = st[b + 1..].split_whitespace().collect();
                    // utime and stime are fields 14 and 15 (1-based) of the whole line.
                    let t = f.get(11).and_then(|x| x.parse::<u64>().ok()).unwrap_or(0)
                        + f.get(12).and_then(|x| x.parse::<u64>().ok()).unwrap_or(0);
                    threads.push((name, t));
                }
            }
        }
        DeviceSnapshot { at, diag, threads }
    }

    fn num(&self, path: &[&str]) -> u64 {
        path.iter()
            .fold(&self.diag, |v, k| &v[*k])
            .as_u64()
            .unwrap_or(0)
    }

    /// One line of counter deltas from `self` (before) to `after`.
    fn delta(&self, after: &DeviceSnapshot) -> String {
        let d = |p: &[&str]| after.num(p).saturating_sub(self.num(p));
        let mut cpu: Vec<(String, u64)> = after
            .threads
            .iter()
            .map(|(n, t)| {
                let before = self
                    .threads
                    .iter()
                    .find(|(m, _)| m == n)
                    .map_or(0, |(_, b)| *b);
                (n.clone(), t.saturating_sub(before))
            })
            .filter(|(_, t)| *t > 0)
            .collect();
        cpu.sort_by_key(|c| std::cmp::Reverse(c.1));
        format!(
            "trips {} missedTicks {} rxDrops main/cyclic {}/{} cyclicFrames {} dcpTx {} limited dcpMc/dcpUc/lldp/queueFull {}/{}/{}/{} threadCpuTicks {:?}",
            d(&["watchdogTrips"]),
            d(&["stackMissedTicks"]),
            d(&["rxSockets", "mainDrops"]),
            d(&["rxSockets", "cyclicDrops"]),
            d(&["rxSockets", "cyclicFrames"]),
            d(&["l2", "dcpTxResponses"]),
            d(&["l2", "dcpMulticastRateLimited"]),
            d(&["l2", "dcpUnicastRateLimited"]),
            d(&["l2", "lldpRateLimited"]),
            d(&["l2", "l2QueueFull"]),
            cpu
        )
    }
}

/// The longest interval between the device's frames and the CycleCounter advance across it
/// in slots (`step` counts per slot): advance 1 = the frames were sent on time and delayed on
/// the way (or in the probe); advance > 1 = the device's real-time thread skipped slots.
fn largest_gap(stamps: &[(u64, u16)], step: u16) -> (f64, u16) {
    stamps
        .windows(2)
        .map(|w| {
            let dt = w[1].0.saturating_sub(w[0].0) as f64 / 1000.0;
            let slots = w[1].1.wrapping_sub(w[0].1) / step.max(1);
            (dt, slots)
        })
        .fold((0.0, 0), |m, x| if x.0 > m.0 { x } else { m })
}

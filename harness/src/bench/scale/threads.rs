//! CPU time and wake-ups of every thread of the measured processes, by thread name, from
//! `/proc/PID/task/TID/schedstat` (run time in ns and the number of times each thread ran).

use super::super::{nap, raw};
use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

/// CPU time (ns) and run count of every thread of a process, by thread id, with its name
/// (`pn-link-<nic>` shortened to `pn-link`).
pub type Threads = HashMap<(u32, u32), (String, u64, u64)>;

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

pub fn threads_of(pids: &[u32]) -> Threads {
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

pub fn thread_use(before: &Threads, after: &Threads, secs: f64) -> Vec<ThreadUse> {
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

pub fn print_thread_use(label: &str, v: &[ThreadUse]) {
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

/// Phase 1: the devices' CPU time per thread name while idle (no AR) for `seconds`.
pub fn idle_phase(pids: &[u32], n: usize, seconds: u64) -> (Vec<ThreadUse>, f64) {
    if seconds == 0 {
        return (Vec::new(), 0.0);
    }
    nap(Duration::from_secs(1));
    let t0 = raw::mono_ns();
    let a = threads_of(pids);
    nap(Duration::from_secs(seconds));
    let b = threads_of(pids);
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
}

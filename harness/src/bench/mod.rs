//! `pn-lab bench ...`: the performance benchmarks of issue 8 (see `docs/benchmarks.md`).
//!
//! * `cycle`: cycle stability of the device (and the controller) measured on the wire, beside
//!   the bare raw-socket sender (`pn-bare-sender`) of the same run;
//! * `http`: `GET /api/status` throughput of the device API against a bare hyper server
//!   (`bare-http`) measured in the same run;
//! * `latency`: write-to-wire latency (`POST /api/io` to the first cyclic frame carrying the
//!   bytes) and start-up time (Connect request to the device's first cyclic frame);
//! * `scale`: one controller process driving many pn-device processes.
//!
//! None of this runs in `cargo test` with timing assertions: benchmarks report, they do not
//! pass or fail on figures. Every command cleans up its namespaces on exit, error or Ctrl-C.

pub mod cycle;
pub mod http;
pub mod latency;
pub mod raw;
pub mod recorder;
pub mod rig;
pub mod scale;
pub mod stats;

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

static STOP: AtomicBool = AtomicBool::new(false);

/// Ctrl-C / SIGTERM seen: benchmark loops return so that every drop (namespaces, processes)
/// runs.
pub fn stopped() -> bool {
    STOP.load(Ordering::Relaxed)
}

/// Sleep `d` in short slices, returning early on Ctrl-C.
pub fn nap(d: Duration) {
    let end = Instant::now() + d;
    while !stopped() {
        let now = Instant::now();
        if now >= end {
            break;
        }
        std::thread::sleep((end - now).min(Duration::from_millis(50)));
    }
}

fn install_signal_handler() {
    std::thread::spawn(|| {
        let Ok(rt) = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        else {
            return;
        };
        rt.block_on(async {
            let mut term =
                match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                    Ok(s) => s,
                    Err(_) => return,
                };
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
        });
        eprintln!("pn-lab bench: interrupted, cleaning up");
        STOP.store(true, Ordering::SeqCst);
    });
}

/// Command-line options shared by the subcommands (`--name value` pairs and flags).
#[derive(Debug, Default)]
pub struct Opts {
    pairs: Vec<(String, Option<String>)>,
}

impl Opts {
    pub fn parse(args: &[String]) -> Result<Opts, String> {
        let mut pairs = Vec::new();
        let mut it = args.iter().peekable();
        while let Some(a) = it.next() {
            let Some(name) = a.strip_prefix("--") else {
                return Err(format!("unexpected argument {a}"));
            };
            let val = match it.peek() {
                Some(v) if !v.starts_with("--") => it.next().cloned(),
                _ => None,
            };
            pairs.push((name.to_string(), val));
        }
        Ok(Opts { pairs })
    }
    pub fn flag(&self, name: &str) -> bool {
        self.pairs.iter().any(|(k, _)| k == name)
    }
    pub fn str(&self, name: &str) -> Option<&str> {
        self.pairs
            .iter()
            .find(|(k, _)| k == name)
            .and_then(|(_, v)| v.as_deref())
    }
    pub fn num<T: std::str::FromStr>(&self, name: &str, default: T) -> Result<T, String> {
        match self.str(name) {
            None => Ok(default),
            Some(v) => v
                .parse()
                .map_err(|_| format!("--{name}: not a number: {v}")),
        }
    }
    pub fn list<T: std::str::FromStr + Clone>(
        &self,
        name: &str,
        default: &[T],
    ) -> Result<Vec<T>, String> {
        match self.str(name) {
            None => Ok(default.to_vec()),
            Some(v) => v
                .split(',')
                .map(|x| {
                    x.trim()
                        .parse()
                        .map_err(|_| format!("--{name}: bad item {x}"))
                })
                .collect(),
        }
    }
}

pub const USAGE: &str = "usage (root; build with `cargo build --release -p pn-device -p pn-lab`):
  pn-lab bench cycle   [--periods 1000,500,250] [--load 0,1] [--hires on,off] [--http 0,16]
                       [--seconds 10] [--dhf 32] [--json FILE]
  pn-lab bench http    [--seconds 10] [--conns 16] [--json FILE]
  pn-lab bench latency [--period-us 1000] [--writes 200] [--connects 20] [--json FILE]
  pn-lab bench scale   [--devices 64] [--period-us 1000] [--seconds 30] [--dhf 3] [--hires off|on]
                       [--idle-seconds 10] [--idle-only] [--connect-parallel 8] [--ctl-prio 70]
                       [--json FILE]
  pn-lab bench bare-http [--port 18841] [--seconds 0]   (the bare hyper baseline server)";

/// `pn-lab bench ARGS`.
pub fn main(args: &[String]) -> ExitCode {
    let Some((sub, rest)) = args.split_first() else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    let opts = match Opts::parse(rest) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("pn-lab bench: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    if sub != "bare-http" {
        install_signal_handler();
    }
    let r = match sub.as_str() {
        "cycle" => run_cycle(&opts),
        "http" => http::run(&opts),
        "bare-http" => http::serve_bare(&opts),
        "latency" => latency::run(&opts),
        "scale" => scale::run(&opts),
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("pn-lab bench {sub}: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Write `v` as pretty JSON to `--json FILE` when given.
pub fn write_json(opts: &Opts, v: &impl serde::Serialize) -> Result<(), String> {
    if let Some(p) = opts.str("json") {
        let s = serde_json::to_string_pretty(v).map_err(|e| e.to_string())?;
        std::fs::write(p, s).map_err(|e| format!("{p}: {e}"))?;
        println!("JSON written to {p}");
    }
    Ok(())
}

fn run_cycle(opts: &Opts) -> Result<(), String> {
    let periods: Vec<u64> = opts.list("periods", &[1000, 500, 250])?;
    let loads: Vec<usize> = opts.list("load", &[0, 1])?;
    let hires: Vec<String> = opts.list("hires", &["on".to_string(), "off".to_string()])?;
    let https: Vec<u32> = opts.list("http", &[0])?;
    let seconds: u64 = opts.num("seconds", 10)?;
    // DataHoldFactor of both IOCRs. The default keeps the AR up through the stalls of a busy
    // machine so the streams are measured without reconnect outages; "gaps>3" in the tables is
    // what a DataHoldFactor-3 watchdog would see. `--dhf 3` counts real trips (the AR is
    // reconnected after each).
    let dhf: u16 = opts.num("dhf", 32)?;
    println!("machine: {}", raw::machine());
    println!("DataHoldFactor {dhf}, {seconds} s per case");
    let mut rig = rig::Rig::start(true)?;
    let mut results = Vec::new();
    println!("{}", cycle::TABLE_HEADER);
    for &p in &periods {
        for &l in &loads {
            for h in &hires {
                for &c in &https {
                    if stopped() {
                        return Err("interrupted".into());
                    }
                    let case = cycle::Case {
                        period_us: p,
                        load_threads: l,
                        hires: h == "on",
                        http_conns: c,
                        seconds,
                    };
                    match cycle::run_case(&mut rig, &case, dhf) {
                        Ok(r) => {
                            print!("{}", cycle::markdown_rows(&r));
                            results.push(r);
                        }
                        Err(e) => {
                            eprintln!("case {case:?}: {e}");
                            if stopped() {
                                return Err("interrupted".into());
                            }
                        }
                    }
                }
            }
        }
    }
    println!();
    for r in &results {
        println!("{}", cycle::verdict(r, 1.5));
        if let Some(rss) = r.device_rss_kb {
            println!("  device VmRSS {rss} kB; bare sender: {}", r.bare_report);
        }
    }
    write_json(
        opts,
        &serde_json::json!({ "machine": raw::machine(), "results": results }),
    )
}

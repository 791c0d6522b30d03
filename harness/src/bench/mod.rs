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
pub mod ftrace;
pub mod http;
pub mod latency;
pub mod pnet;
pub mod raw;
pub mod recorder;
pub mod rig;
pub mod scale;
pub mod stats;
pub mod swap;

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

/// `pn-lab bench`: the benchmarks (root; build with `cargo build --release -p pn-device -p
/// pn-lab` for figures worth keeping).
#[derive(clap::Subcommand, Debug)]
pub enum BenchCmd {
    /// Cycle stability of the device and the controller on the wire, beside the bare
    /// raw-socket sender of the same run.
    Cycle(CycleArgs),
    /// GET /api/status throughput of the device API against a bare hyper server.
    Http(HttpArgs),
    /// Write-to-wire latency and start-up time.
    Latency(LatencyArgs),
    /// One controller process driving many pn-device processes.
    Scale(ScaleArgs),
    /// The bare hyper baseline server of `bench http`.
    BareHttp(BareHttpArgs),
}

/// Where to write the results as JSON.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct JsonOut {
    /// Also write the results as pretty JSON to this file.
    #[arg(long, value_name = "FILE")]
    pub json: Option<std::path::PathBuf>,
}

#[derive(clap::Args, Debug, Clone)]
pub struct CycleArgs {
    /// IOCR cycles in µs.
    #[arg(long, value_delimiter = ',', default_values_t = [1000u64, 500, 250])]
    pub periods: Vec<u64>,
    /// Load threads on the other core.
    #[arg(long, value_delimiter = ',', default_values_t = [0usize, 1])]
    pub load: Vec<usize>,
    /// The device's high-resolution timer.
    #[arg(long, value_delimiter = ',', default_values_t = [OnOff::On, OnOff::Off])]
    pub hires: Vec<OnOff>,
    /// Concurrent HTTP connections polling the API during the case.
    #[arg(long, value_delimiter = ',', default_values_t = [0u32])]
    pub http: Vec<u32>,
    /// Seconds per case.
    #[arg(long, default_value_t = 10)]
    pub seconds: u64,
    /// DataHoldFactor of both IOCRs. The default keeps the AR up through the stalls of a busy
    /// machine so the streams are measured without reconnect outages; "gaps>3" in the tables
    /// is what a DataHoldFactor-3 watchdog would see. `--dhf 3` counts real trips (the AR is
    /// reconnected after each).
    #[arg(long, default_value_t = 32)]
    pub dhf: u16,
    /// Pin the device (every thread) and the bare sender to this CPU and the load threads to
    /// the other CPUs, so the device and its baseline share one CPU's conditions (the bare
    /// sender then runs one SCHED_FIFO priority above the device's cyclic thread). With
    /// --pnet, p-net goes to the other CPUs too: a CPU for each device.
    #[arg(long)]
    pub pin: Option<usize>,
    /// With --pin: the bare sender's SCHED_FIFO priority (default 61, one above the device's
    /// cyclic thread). Below the device's (59), the device's CPU holds nothing above the
    /// device, as p-net's CPU holds nothing above p-net (docs/decisions.md §38).
    #[arg(long, requires = "pin", value_parser = clap::value_parser!(i32).range(1..=98))]
    pub bare_prio: Option<i32>,
    /// Keep every CPU polling when idle for the run (`pm_qos_resume_latency_us` "n/a" on each,
    /// restored at the end), as a real-time host is set up: a halted vCPU wakes late at times
    /// (docs/decisions.md §39). All CPUs alike, so p-net's CPU too.
    #[arg(long)]
    pub cpu_poll: bool,
    /// With --pin and --pnet: halfway through each 1 ms case, exchange the CPUs (the device
    /// and the bare sender move to the other CPU, p-net and the load threads to --pin), so
    /// that each stack has each CPU for half the run; the halves are reported apart too. The
    /// CPUs of a VM differ (docs/benchmarks.md, session 16).
    #[arg(long, requires = "pin")]
    pub swap: bool,
    /// With --pin and --pnet: where the controller's threads run: free (the scheduler's
    /// choice), or pinned beside the device or beside p-net (following it across --swap). The
    /// network processing of its sends runs on its CPU.
    #[arg(long, value_enum, default_value_t = swap::ControllerOn::Free, requires = "pin")]
    pub controller_on: swap::ControllerOn,
    #[command(flatten)]
    pub standby: StandbyArgs,
    #[command(flatten)]
    pub pnet: pnet::PnetArgs,
    #[command(flatten)]
    pub out: JsonOut,
}

#[derive(clap::Args, Debug, Clone)]
pub struct HttpArgs {
    #[arg(long, default_value_t = 10)]
    pub seconds: u64,
    /// Concurrent connections.
    #[arg(long, default_value_t = 16)]
    pub conns: u32,
    #[command(flatten)]
    pub out: JsonOut,
}

#[derive(clap::Args, Debug, Clone)]
pub struct BareHttpArgs {
    #[arg(long, default_value_t = 18841)]
    pub port: u16,
    /// Stop after this many seconds (0: until Ctrl-C).
    #[arg(long, default_value_t = 0)]
    pub seconds: u64,
}

#[derive(clap::Args, Debug, Clone)]
pub struct LatencyArgs {
    #[arg(long, default_value_t = 1000)]
    pub period_us: u64,
    #[arg(long, default_value_t = 200)]
    pub writes: usize,
    #[arg(long, default_value_t = 3)]
    pub dhf: u16,
    #[arg(long, default_value_t = 20)]
    pub connects: usize,
    #[command(flatten)]
    pub out: JsonOut,
}

#[derive(clap::Args, Debug, Clone)]
pub struct ScaleArgs {
    /// Devices: up to 200 `pn-device` processes, or up to 1024 with --farm.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..=1024))]
    pub devices: u64,
    /// The devices are one `pn-farm` process on one veth instead of a `pn-device` process
    /// each (--hires does not apply: the farm's I/O loop has its own timer).
    #[arg(long)]
    pub farm: bool,
    /// With --farm: how the farm reads its frames (`pn-farm --rx`): `ring` (PACKET_RX_RING,
    /// the farm's default) or `mmsg` (recvmmsg).
    #[arg(long, value_enum, default_value_t = FarmRx::Ring, requires = "farm")]
    pub farm_rx: FarmRx,
    /// Keep the devices' logs and configurations (the directory is printed) instead of
    /// removing them at the end.
    #[arg(long)]
    pub keep_logs: bool,
    #[arg(long, default_value_t = 1000)]
    pub period_us: u64,
    #[arg(long, default_value_t = 30)]
    pub seconds: u64,
    #[arg(long, default_value_t = 3)]
    pub dhf: u16,
    /// The devices' high-resolution timer (it busy-spins ~80 µs per cycle in every device:
    /// off by default here).
    #[arg(long, value_enum, default_value_t = OnOff::Off)]
    pub hires: OnOff,
    #[arg(long, default_value_t = 10)]
    pub idle_seconds: u64,
    /// Measure the idle devices only.
    #[arg(long)]
    pub idle_only: bool,
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u64).range(1..=64))]
    pub connect_parallel: u64,
    /// SCHED_FIFO priority of the controller's cyclic thread (its receive thread one below).
    /// Default above the devices' threads (60 cyclic, 50 receive): the controller stands for
    /// a PLC with a CPU of its own, so the devices sharing this machine should not delay it.
    #[arg(long, default_value_t = 70)]
    pub ctl_prio: i32,
    /// Pin the devices' processes (every thread) and the bare sender to this CPU, and this
    /// process (controller, recorder) to the other CPUs: the bare sender then sees exactly
    /// the stalls of the devices' CPU.
    #[arg(long)]
    pub pin: Option<usize>,
    /// With --pin: each side's received frames processed on its own CPUs (receive packet
    /// steering on both ends of every device veth), as a NIC's receive interrupt would be. On a
    /// veth the kernel otherwise delivers a frame through the bridge to every receiver inside
    /// the sender's system call, on the sender's CPU.
    #[arg(long, requires = "pin")]
    pub rps: bool,
    /// With --pin: this many busy threads at normal priority on the controller's CPUs (the
    /// cycle benchmark's "other core loaded"; with one device, the 250 us case of issue 17
    /// with the stalls attributed to a side).
    #[arg(long, default_value_t = 0, requires = "pin")]
    pub load: usize,
    /// With --pin: keep every other thread of the machine off the pinned CPU for the run
    /// (a run-time `isolcpus`; restored at the end), as a real-time host is set up.
    #[arg(long, requires = "pin")]
    pub isolate: bool,
    #[command(flatten)]
    pub standby: StandbyArgs,
    /// When the bare sender beside the devices is due: `start`, one period after its start
    /// (a phase of its own); `grid`, on the period grid of CLOCK_MONOTONIC, the instants of
    /// pn-farm's providers. `start` stays the default: with `grid` the bare sender, one priority
    /// above the farm and due at its instants, keeps the CPU after a hold and delays the farm
    /// (traced, docs/benchmarks.md, session 13). pn-device daemons send at their own phase.
    #[arg(long, value_enum, default_value_t = BarePhase::Start)]
    pub bare_phase: BarePhase,
    /// SCHED_FIFO priority of the bare sender beside the devices. Default: 61 with --pin,
    /// one above a daemon's cyclic thread, so that no device can delay the baseline (a
    /// sound baseline, but when the vCPU stutters the baseline takes its few slices first:
    /// docs/decisions.md §38); 60, a daemon's own, shares the CPU on equal terms.
    #[arg(long, value_parser = clap::value_parser!(i32).range(1..=98))]
    pub bare_prio: Option<i32>,
    /// Record the scheduler during the measurement (ftrace in memory: context switches,
    /// real-time wake-ups, NET_RX softirqs, every CPU) and write, for each stall event, what
    /// each CPU did around the stalled side's silence to FILE. Needs tracefs (root).
    #[arg(long, value_name = "FILE")]
    pub ftrace: Option<std::path::PathBuf>,
    /// --ftrace's ring buffer per CPU (MB); beyond it the oldest events are overwritten (a
    /// 250 us device used 2.4 MB/s of CPU 1's).
    #[arg(long, default_value_t = 2000, requires = "ftrace",
          value_parser = clap::value_parser!(u64).range(16..=65536))]
    pub ftrace_buffer_mb: u64,
    #[command(flatten)]
    pub out: JsonOut,
}

/// The devices' standby sender in a pinned bench (pn-device's `Cyclic:StandbyCpu`, the farm's
/// `--standby-cpu`).
#[derive(clap::Args, Debug, Clone, Copy, Default)]
pub struct StandbyArgs {
    /// With --pin: start the device(s) with the standby sender (`Cyclic:StandbyCpu`; the
    /// farm's `--standby-cpu`) on the other CPU, which covers the slots a held vCPU costs the cyclic thread
    /// (docs/decisions.md §41); it follows the other CPU across --swap. The device then uses
    /// two CPUs (the standby wakes once a cycle on the other one).
    #[arg(long, requires = "pin")]
    pub standby: bool,
    /// With --standby: `Cyclic:StandbyGraceUs`, the standby's wait after a slot's due time
    /// (0: a quarter period).
    #[arg(long, default_value_t = 0, requires = "standby")]
    pub standby_grace_us: u64,
}

impl StandbyArgs {
    /// The daemon settings' `Cyclic` object for the device(s) pinned to `pin`.
    pub fn settings(&self, pin: Option<usize>) -> serde_json::Value {
        let cpu = pin
            .filter(|_| self.standby)
            .and_then(|c| raw::other_cpus(c).first().copied());
        serde_json::json!({
            "StandbyCpu": cpu.map_or(-1, |c| c as i64),
            "StandbyGraceUs": self.standby_grace_us,
        })
    }
}

/// When the bare sender beside the devices is due (`pn-bare-sender --grid`).
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BarePhase {
    Grid,
    Start,
}

/// How the farm reads its frames (`pn-farm --rx`).
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FarmRx {
    Ring,
    Mmsg,
}

impl FarmRx {
    pub fn arg(self) -> &'static str {
        match self {
            FarmRx::Ring => "ring",
            FarmRx::Mmsg => "mmsg",
        }
    }
}

/// On or off.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnOff {
    On,
    Off,
}

impl std::fmt::Display for OnOff {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if *self == OnOff::On { "on" } else { "off" })
    }
}

/// `pn-lab bench SUB`.
pub fn main(cmd: &BenchCmd) -> ExitCode {
    let name = match cmd {
        BenchCmd::Cycle(_) => "cycle",
        BenchCmd::Http(_) => "http",
        BenchCmd::Latency(_) => "latency",
        BenchCmd::Scale(_) => "scale",
        BenchCmd::BareHttp(_) => "bare-http",
    };
    if !matches!(cmd, BenchCmd::BareHttp(_)) {
        install_signal_handler();
    }
    let r = match cmd {
        BenchCmd::Cycle(a) => run_cycle(a),
        BenchCmd::Http(a) => http::run(a),
        BenchCmd::BareHttp(a) => http::serve_bare(a),
        BenchCmd::Latency(a) => latency::run(a),
        BenchCmd::Scale(a) => scale::run(a),
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("pn-lab bench {name}: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Write `v` as pretty JSON to `--json FILE` when given.
pub fn write_json(out: &JsonOut, v: &impl serde::Serialize) -> Result<(), String> {
    if let Some(p) = &out.json {
        let s = serde_json::to_string_pretty(v).map_err(|e| e.to_string())?;
        std::fs::write(p, s).map_err(|e| format!("{}: {e}", p.display()))?;
        println!("JSON written to {}", p.display());
    }
    Ok(())
}

fn run_cycle(opts: &CycleArgs) -> Result<(), String> {
    let (periods, loads, hires, https) = (&opts.periods, &opts.load, &opts.hires, &opts.http);
    let (seconds, dhf) = (opts.seconds, opts.dhf);
    println!("machine: {}", raw::machine());
    println!("DataHoldFactor {dhf}, {seconds} s per case");
    let pnet = pnet::resolve(&opts.pnet, &|p| p.is_file())?;
    if opts.swap && pnet.is_none() {
        return Err("--swap exchanges the device's CPU with p-net's: it needs --pnet".into());
    }
    if opts.controller_on != swap::ControllerOn::Free && pnet.is_none() {
        return Err(
            "--controller-on places the controller beside one of two stacks: it needs --pnet"
                .into(),
        );
    }
    if opts.pin.is_some() && pnet.is_some() {
        println!(
            "CPUs: the device and its bare sender on {}, p-net and the load threads on the other{}; the controller's threads {}",
            opts.pin.unwrap_or(0),
            if opts.swap { ", exchanged halfway" } else { "" },
            match opts.controller_on {
                swap::ControllerOn::Free => "free",
                swap::ControllerOn::Device => "beside the device",
                swap::ControllerOn::Pnet => "beside p-net",
            }
        );
    }
    let _poll = match opts.cpu_poll {
        true => {
            let p = raw::CpuPoll::start()?;
            println!(
                "idle CPUs poll: {} CPUs (pm_qos_resume_latency_us n/a)",
                p.cpus()
            );
            Some(p)
        }
        false => None,
    };
    let cyclic = opts.standby.settings(opts.pin);
    if opts.standby.standby {
        if cyclic["StandbyCpu"] == -1 {
            return Err("--standby needs a second CPU".into());
        }
        println!("the device's standby sender: {cyclic}");
    }
    let mut rig = rig::Rig::start_with(true, cyclic)?;
    if let Some(p) = &pnet {
        rig.attach_pnet(p)?;
        println!(
            "p-net: {} (shim {}, GSDML {}, station {}, modules {}, chrt -f {}), pid {}, at {} us only",
            p.bin.display(),
            p.shim.display(),
            p.gsdml.display(),
            p.station,
            p.modules,
            p.prio,
            rig.pnet.as_ref().map_or(0, |x| x.pid),
            pnet::PNET_PERIOD_US,
        );
    }
    let mut results = Vec::new();
    println!("{}", cycle::TABLE_HEADER);
    for &p in periods {
        for &l in loads {
            for &h in hires {
                for &c in https {
                    if stopped() {
                        return Err("interrupted".into());
                    }
                    let case = cycle::Case {
                        period_us: p,
                        load_threads: l,
                        hires: h == OnOff::On,
                        http_conns: c,
                        seconds,
                        pin: opts.pin,
                        bare_prio: opts.bare_prio.unwrap_or(61),
                        swap: opts.swap,
                        controller_on: opts.controller_on,
                        standby: opts.standby.standby,
                        standby_grace_us: opts.standby.standby_grace_us,
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
        if let Some(v) = cycle::pnet_verdict(r, 3.0) {
            println!("{v}");
        }
        print!("{}", swap::lines(&r.halves));
        if r.case.standby {
            println!(
                "  the device's standby sender sent {} frames",
                r.device_standby_frames
            );
        }
        if let Some(rss) = r.device_rss_kb {
            println!("  device VmRSS {rss} kB; bare sender: {}", r.bare_report);
        }
    }
    write_json(
        &opts.out,
        &serde_json::json!({
            "machine": raw::machine(),
            "dhf": dhf,
            "cpu_poll": opts.cpu_poll,
            "pnet": pnet.as_ref().map(|p| serde_json::json!({
                "bin": p.bin, "gsdml": p.gsdml, "shim": p.shim, "station": p.station,
                "modules": p.modules, "fifo_priority": p.prio,
            })),
            "results": results,
        }),
    )
}

//! `pn-farm`: emulate a plant of PROFINET IO devices on one NIC.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use clap::Parser;
use pn_device_formats::config::RuntimeConfig;
use pn_farm::io::RxMode;
use pn_farm::plant::{self, Numbering, PlantFile};
use pn_farm::{Farm, FarmOptions};

/// Emulate N PROFINET IO devices on one network interface (a plant in one box). Each device
/// has its own MAC, NameOfStation, IP, identity and I&M, and runs pn-device's role machines.
#[derive(Parser, Debug)]
#[command(name = "pn-farm", version, about)]
struct Cli {
    /// The network interface the devices share (promiscuous; give it no address of the devices).
    #[arg(short, long)]
    interface: String,
    /// Number of numbered copies of --config (ignored with --plant).
    #[arg(short = 'n', long, default_value_t = 1)]
    devices: usize,
    /// Device configuration XML (pn-device's format); with --plant, the default of devices
    /// that name none.
    #[arg(short, long)]
    config: Option<PathBuf>,
    /// Plant file (TOML, one [[device]] per device): see docs/architecture.md.
    #[arg(long)]
    plant: Option<PathBuf>,
    /// NameOfStation of copy k is PREFIX followed by k (1-based).
    #[arg(long, default_value = "plant-dev-")]
    name_prefix: String,
    /// IP of copy 1; copy k gets base + k - 1 (default: the configuration's IP, numbered).
    #[arg(long)]
    ip_base: Option<Ipv4Addr>,
    /// MAC of copy 1; copy k gets base + k - 1.
    #[arg(long, default_value = "02:00:50:4e:00:01")]
    mac_base: String,
    /// Copies start without name and IP: the PLC assigns both over DCP.
    #[arg(long)]
    unnamed: bool,
    /// Address of the status view (HTML on /, JSON on /api/devices).
    #[arg(long, default_value = "127.0.0.1:18850")]
    http: SocketAddr,
    /// Keep the devices' remanent data (names and IPs set permanently over DCP, written
    /// I&M1-4 and records) in this directory, one JSON file per device (named by its MAC),
    /// so that it survives a restart. Without it, it lasts as long as the farm runs.
    #[arg(long)]
    state_dir: Option<PathBuf>,
    /// Do not try SCHED_FIFO for the I/O loop.
    #[arg(long)]
    no_realtime: bool,
    /// How the I/O loop reads frames: `ring`, a receive ring shared with the kernel
    /// (PACKET_RX_RING, no system call per frame; falls back to mmsg if the kernel refuses
    /// it), or `mmsg`, recvmmsg(2) batches.
    #[arg(long, value_enum, default_value_t = RxMode::Ring)]
    rx: RxMode,
    /// Run a standby sender on this CPU: it sends a device's cyclic frame for a slot the I/O
    /// loop has not sent a quarter period after it was due (the loop's CPU held by the
    /// hypervisor or another task), and the I/O loop leaves this CPU. Same rule as
    /// pn-device's Cyclic:StandbyCpu (docs/decisions.md §41).
    /// CPU numbers 0..1023, as pn-device's Cyclic:StandbyCpu; one this machine lacks is
    /// reported in the log and the farm runs without a standby.
    #[arg(long, value_parser = clap::value_parser!(u16).range(0..1024))]
    standby_cpu: Option<u16>,
    /// With --standby-cpu: the standby's wait after a slot's due time, in µs (default: a
    /// quarter period; at most half a period).
    #[arg(long, requires = "standby_cpu", value_parser = clap::value_parser!(u64).range(1..))]
    standby_grace_us: Option<u64>,
}

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::Release);
}

fn specs(cli: &Cli) -> Result<Vec<plant::DeviceSpec>, String> {
    if let Some(p) = &cli.plant {
        let text = std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))?;
        let pf = PlantFile::parse(&text)?;
        let dir = p.parent().unwrap_or(Path::new("."));
        return plant::from_plant(&pf, dir, &cli.interface, cli.config.as_deref(), |x| {
            RuntimeConfig::load(Some(x))
        });
    }
    let cfg = RuntimeConfig::load(cli.config.as_deref())?;
    let mac_base = plant::parse_mac(&cli.mac_base)
        .ok_or_else(|| format!("--mac-base '{}' is not a MAC address", cli.mac_base))?;
    let n = Numbering {
        count: cli.devices,
        name_prefix: cli.name_prefix.clone(),
        ip_base: cli.ip_base,
        mac_base,
        unnamed: cli.unnamed,
    };
    plant::numbered(&cfg, &cli.interface, &n)
}

/// Log lines the farm-log thread may fall behind before logging waits.
const LOG_QUEUE_LINES: usize = 8192;

fn main() {
    let cli = Cli::parse();
    // Log lines are written by a thread of their own: the farm's I/O thread logs every AR end
    // and Connect, and a write(2) to the log file or journald's pipe can block it for a
    // millisecond (measured: 0.9-1.3 ms, docs/benchmarks.md), a whole cycle of every device.
    // Not lossy: when the writer falls LOG_QUEUE_LINES behind, logging waits rather than
    // drops. The queue is allocated whole at start (the default of 128 Ki lines took 3.7 MB
    // of resident memory); a whole-plant AR loss of 1024 devices logs about 2048 lines. The
    // guard flushes what is queued when main returns.
    let (writer, _log_guard) = tracing_appender::non_blocking::NonBlockingBuilder::default()
        .buffered_lines_limit(LOG_QUEUE_LINES)
        .lossy(false)
        .thread_name("farm-log")
        .finish(std::io::stdout());
    tracing_subscriber::fmt()
        .with_writer(writer)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    let specs = match specs(&cli) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("pn-farm: {e}");
            std::process::exit(2);
        }
    };
    let opts = FarmOptions {
        http: Some(cli.http),
        realtime: !cli.no_realtime,
        state_dir: cli.state_dir.clone(),
        rx: cli.rx,
        standby: cli
            .standby_cpu
            .map(|cpu| pn_device::stack::standby::StandbyConfig {
                cpu: usize::from(cpu),
                grace_ns: cli.standby_grace_us.map(|us| us * 1000),
            }),
    };
    // The stop signals are taken over before the farm starts: a SIGTERM that comes as soon as
    // the status view answers must stop the farm cleanly (every AR ended with its ERR-RTA),
    // not kill it by the signal's default action.
    // SAFETY: the handler only stores to an atomic (async-signal-safe).
    unsafe {
        libc::signal(
            libc::SIGINT,
            on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t,
        );
        libc::signal(
            libc::SIGTERM,
            on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t,
        );
    }
    let farm = match Farm::start(&cli.interface, &specs, opts) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("pn-farm: {e}");
            std::process::exit(1);
        }
    };
    tracing::info!(
        devices = specs.len(),
        interface = %cli.interface,
        status = %farm.http_addr().map(|a| a.to_string()).unwrap_or_default(),
        "pn-farm running"
    );
    for d in farm.devices() {
        tracing::info!(name = %d.name, mac = %d.mac, ip = %d.ip, "device");
    }
    // The main thread only waits for a signal; the farm's threads do the work.
    while !STOP.load(Ordering::Acquire) {
        std::thread::sleep(Duration::from_millis(100));
    }
    tracing::info!("stopping: ending every AR");
    farm.stop();
}

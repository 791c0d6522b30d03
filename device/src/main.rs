//! pn-device: PROFINET IO device service daemon.
//!
//! ```text
//! pn-device [--settings FILE] [--config FILE] [--log-format text|json] [--dev-port PORT]
//! pn-device check-config [--settings FILE] [--config FILE] [--json]
//! ```
//! * `--settings`: service settings JSON (else `$PN_DEVICE_SETTINGS`, else
//!   `/etc/pn-device/settings.json` if it exists, else the embedded defaults only).
//! * `--config`: runtime configuration XML (overrides `Paths:RuntimeConfig`).
//! * `--log-format`: overrides `Logging:Format`.
//! * `--dev-port`: DEVELOPMENT/TEST ONLY: listen on 127.0.0.1:PORT instead of the fixed 18840.
//!   Tests run each daemon in its own network namespace instead and keep the port fixed.
//! * `check-config`: check settings, configuration XML, NIC, licence, capabilities and the API
//!   port without starting anything; exit codes in `pn_device::check_config`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use pn_device::api;
use pn_device::check_config::{self, CAPABILITIES};
use pn_device::config::Settings;
use pn_device::dataplane::DataPlane;
use pn_device::runtime::{Runtime, VERSION};
use tracing::{error, info, warn};

/// PROFINET IO device service: makes this host a PROFINET IO device on one NIC and serves the
/// local HTTP API on 127.0.0.1:18840.
#[derive(clap::Parser, Debug)]
#[command(name = "pn-device", version = VERSION)]
struct Args {
    /// Service settings JSON (else $PN_DEVICE_SETTINGS, else /etc/pn-device/settings.json if it
    /// exists, else the embedded defaults).
    #[arg(long, value_name = "FILE", global = true)]
    settings: Option<PathBuf>,
    /// Runtime configuration XML (overrides Paths:RuntimeConfig of the settings).
    #[arg(long, value_name = "FILE", global = true)]
    config: Option<PathBuf>,
    /// Log format (overrides Logging:Format of the settings).
    #[arg(long, value_parser = ["text", "json"])]
    log_format: Option<String>,
    /// DEVELOPMENT/TEST ONLY: listen on 127.0.0.1:PORT instead of the fixed 18840.
    #[arg(long, value_name = "PORT", hide = true, global = true)]
    dev_port: Option<u16>,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(clap::Subcommand, Debug)]
enum Command {
    /// Check the installation without starting anything: settings, runtime configuration XML,
    /// NIC, licence, capabilities of this process, the API port. One line per finding (OK,
    /// WARN, ERROR with what to do).
    #[command(after_help = check_config::EXIT_CODES_HELP)]
    CheckConfig {
        /// One JSON document instead of text lines.
        #[arg(long)]
        json: bool,
    },
}

/// Is stderr connected to the systemd journal? (`JOURNAL_STREAM=<dev>:<ino>` names the stream
/// systemd connected; comparing it with stderr avoids a false positive when the service
/// redirects its own output.)
fn stderr_is_journal() -> bool {
    let Ok(v) = std::env::var("JOURNAL_STREAM") else {
        return false;
    };
    let Some((dev, ino)) = v.split_once(':') else {
        return false;
    };
    let (Ok(dev), Ok(ino)) = (dev.parse::<u64>(), ino.parse::<u64>()) else {
        return false;
    };
    // SAFETY: fstat on fd 2 into a zeroed stat buffer we own.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(2, &mut st) } != 0 {
        return false;
    }
    st.st_dev as u64 == dev && st.st_ino as u64 == ino
}

/// Text lines for the journal: no timestamp (journald adds its own) and the syslog priority as
/// a `<N>` prefix, which journald turns into the entry's priority (`journalctl -p warning`).
struct JournalFormat;

impl<S, N> tracing_subscriber::fmt::FormatEvent<S, N> for JournalFormat
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
    N: for<'a> tracing_subscriber::fmt::FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &tracing_subscriber::fmt::FmtContext<'_, S, N>,
        mut writer: tracing_subscriber::fmt::format::Writer<'_>,
        event: &tracing::Event<'_>,
    ) -> std::fmt::Result {
        let m = event.metadata();
        let prio = match *m.level() {
            tracing::Level::ERROR => 3,
            tracing::Level::WARN => 4,
            tracing::Level::INFO => 6,
            _ => 7,
        };
        write!(writer, "<{prio}>{} {}: ", m.level(), m.target())?;
        ctx.field_format().format_fields(writer.by_ref(), event)?;
        writeln!(writer)
    }
}

/// Logging for operators: human-readable text lines by default (ANSI colours only on a
/// terminal; under systemd with stderr on the journal: priority prefix, no timestamp), or one
/// JSON object per line (`--log-format json` / `Logging:Format`). `RUST_LOG` overrides the
/// filter (`Logging:Filter`).
fn init_logging(json: bool, filter: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .or_else(|_| tracing_subscriber::EnvFilter::try_new(filter))
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr()) && !json;
    let b = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(ansi)
        .with_writer(std::io::stderr);
    if json {
        b.json().flatten_event(true).init();
    } else if stderr_is_journal() {
        b.event_format(JournalFormat).init();
    } else {
        b.init();
    }
}

/// Log the capability check once at launch: one INFO line when everything is present, else one
/// WARN line per missing capability naming it and its consequence.
fn log_capabilities() {
    // SAFETY: geteuid has no preconditions.
    let euid = unsafe { libc::geteuid() };
    let Some(eff) = check_config::effective_capabilities() else {
        warn!("cannot read the process capabilities from /proc/self/status");
        return;
    };
    let mut missing = 0;
    for c in CAPABILITIES {
        if eff & (1u64 << c.bit) == 0 {
            missing += 1;
            warn!("missing capability {}: {}", c.name, c.consequence);
        }
    }
    if missing == 0 {
        let names: Vec<&str> = CAPABILITIES.iter().map(|c| c.name).collect();
        info!("running as uid {euid} with {}", names.join(", "));
    }
}

fn main() -> ExitCode {
    // Usage errors exit with 2, --help and --version with 0 (clap).
    let args = <Args as clap::Parser>::parse();
    if let Some(Command::CheckConfig { json }) = &args.command {
        return check_config_main(&args, *json);
    }
    let settings_path = check_config::settings_path(args.settings.clone());
    // An explicitly named settings file that is broken stops the daemon at launch: falling back
    // to defaults would silently drop e.g. the API key.
    let settings = match &settings_path {
        Some(p) => match Settings::load(p) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("pn-device: {e}");
                return ExitCode::from(2);
            }
        },
        None => Settings::embedded(),
    };
    let json = match args.log_format.as_deref() {
        Some(f) => f == "json",
        None => settings.log_json,
    };
    init_logging(json, &settings.log_filter);
    match &settings_path {
        Some(p) => info!("pn-device {VERSION}: settings from {}", p.display()),
        None => info!("pn-device {VERSION}: no settings file, embedded defaults"),
    }
    for k in &settings.unknown_keys {
        warn!("settings: unknown key '{k}' ignored");
    }
    log_capabilities();
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            error!("cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    rt.block_on(run(args, settings))
}

/// `pn-device check-config`: the report on stdout, the exit code of its first kind of error.
fn check_config_main(args: &Args, json: bool) -> ExitCode {
    let report = check_config::run(&check_config::Inputs {
        settings: args.settings.clone(),
        config: args.config.clone(),
        env_nic: std::env::var("VENDOR_PNET_NIC")
            .ok()
            .filter(|n| !n.trim().is_empty()),
        port: args.dev_port.unwrap_or(api::DEFAULT_PORT),
    });
    if json {
        println!("{}", report.json());
    } else {
        print!("{}", report.text());
    }
    ExitCode::from(report.exit_code())
}

async fn run(args: Args, settings: Settings) -> ExitCode {
    // SIGTERM and SIGINT are taken over before the API can answer: a stop that comes right
    // after the start (systemd, a script or a test that saw the API answer) must take the clean
    // shutdown path below, not the signal's default action (an exit by signal). Registered
    // later, such a stop raced the main task and sometimes killed the daemon on a loaded
    // machine.
    let stop = StopSignals::register();
    let port = args.dev_port.unwrap_or(api::DEFAULT_PORT);
    if port != api::DEFAULT_PORT {
        warn!(
            "DEVELOPMENT: listening on port {port} instead of {}",
            api::DEFAULT_PORT
        );
    }
    let listener = match api::bind(port).await {
        Ok(l) => l,
        Err(e) => {
            error!("cannot listen on 127.0.0.1:{port}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let plane: Arc<dyn DataPlane> = Arc::new(pn_device::stack::ProfinetPlane::new());
    // Test hooks (Settings refuses Dev:* settings in a build without them).
    #[cfg(feature = "test-hooks")]
    let plane: Arc<dyn DataPlane> = if settings.simulated_plane {
        warn!("TEST MODE: Dev:SimulatedDataPlane is set; the simulated data plane is used");
        Arc::new(pn_device::sim::SimPlane::new(
            settings.sim_control_socket.clone(),
        ))
    } else {
        plane
    };
    #[cfg(feature = "test-hooks")]
    let plane: Arc<dyn DataPlane> = if let Some(f) = settings.faults.start.clone() {
        warn!("TEST MODE: fault injection at start: {f:?}");
        Arc::new(pn_device::fault::FaultPlane::new(plane, Some(f)))
    } else {
        plane
    };
    if let Some(p) = &settings.faults.panic_path {
        warn!("TEST MODE: the handler of {p} panics (fault injection)");
    }
    let config_path = args
        .config
        .clone()
        .or_else(|| settings.runtime_config.clone());
    let env_nic = std::env::var("VENDOR_PNET_NIC").ok();
    let auto_start = settings.auto_start;
    let runtime = Runtime::new(settings, plane, env_nic, config_path);
    runtime.spawn_tasks();
    info!("listening on 127.0.0.1:{port}");
    let (sd_tx, sd_rx) = tokio::sync::watch::channel(false);
    let server = tokio::spawn(api::serve(listener, runtime.clone(), sd_rx));
    if auto_start {
        let r = runtime.clone();
        tokio::spawn(async move {
            let res = r.start().await;
            // The runtime logs the outcome (started / refused with its cause) once; this line
            // only adds the API message for debugging.
            tracing::debug!("automatic start: {}", res["message"].as_str().unwrap_or(""));
        });
    }
    stop.wait().await;
    info!("shutting down (drain up to {:?})", api::DRAIN);
    let _ = sd_tx.send(true);
    let _ = server.await;
    let _ = tokio::time::timeout(std::time::Duration::from_secs(2), runtime.shutdown()).await;
    info!("stopped");
    ExitCode::SUCCESS
}

/// The stop signals (SIGTERM, SIGINT), registered with the runtime so that they are queued
/// from [`StopSignals::register`] on.
struct StopSignals {
    term: Option<tokio::signal::unix::Signal>,
    int: Option<tokio::signal::unix::Signal>,
}

impl StopSignals {
    fn register() -> StopSignals {
        use tokio::signal::unix::{signal, SignalKind};
        StopSignals {
            term: signal(SignalKind::terminate()).ok(),
            int: signal(SignalKind::interrupt()).ok(),
        }
    }

    async fn wait(self) {
        match (self.term, self.int) {
            (Some(mut t), Some(mut i)) => {
                tokio::select! {
                    _ = t.recv() => {}
                    _ = i.recv() => {}
                }
            }
            _ => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
}

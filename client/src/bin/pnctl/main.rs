//! pnctl: command-line client of the PROFINET IO device service's HTTP API.
//!
//! Layout: the command line (`Cli`, `Cmd`) and the exit codes here; `commands` (running a
//! command), `output` (printing).

use std::process::ExitCode;

use clap::{Args, Parser, Subcommand, ValueEnum};
use pn_client::{CallResult, Error};

mod commands;
mod output;

use output::Out;

const EXIT_CODES: &str = "\
Exit codes:
  0  success
  1  the call failed, or the service answered ok=false (e.g. start refused)
  2  usage error: bad arguments, bad address or value, HTTP 400 (InvalidArgument)
  3  service unreachable (refused, timeout) or HTTP 401 (API key missing or wrong)
  4  not supported (e.g. writing a Q address)
  5  not found (e.g. DB number above 1, unknown path)
  6  write accepted but not delivered to the controller (queued; see reasonCode)

Addresses, as the PLC program sees the device (spec 4.1):
  I  the PLC's inputs, device -> controller (API field outputHex); writable
  Q  the PLC's outputs, controller -> device (API field inputHex); read-only
  M, DB1  aliases of I
Forms: I0.0 IB0 IW2 ID4, Q.., M.., DB1.DBX0.0 DB1.DBB2 DB1.DBW0 DB1.DBD4. Words are big-endian,
offsets are byte offsets.";

#[derive(Parser, Debug)]
#[command(
    name = "pnctl",
    version,
    about = "Control and observe the PROFINET IO device service (pn-device) over its local HTTP API",
    after_help = EXIT_CODES
)]
struct Cli {
    /// Base URL of the service.
    #[arg(long, global = true, default_value = pn_client::DEFAULT_BASE_URL, env = "PN_URL")]
    url: String,
    /// API key (sent as X-Vendor-Pnet-Api-Key).
    #[arg(long, global = true, env = "PN_API_KEY", hide_env_values = true)]
    api_key: Option<String>,
    /// Machine-readable JSON output (one JSON document per line).
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Runtime status (GET /api/status).
    Status,
    /// Service info / liveness (GET /api/info).
    Info,
    /// Open the dashboard when the service has an API key: serve it on a loopback port of
    /// this process, which adds the key (given with --api-key or PN_API_KEY) to every request.
    /// Runs until Ctrl-C.
    Dashboard {
        /// Loopback address and port to serve the dashboard on.
        #[arg(long, default_value = "127.0.0.1:18841")]
        listen: std::net::SocketAddr,
    },
    /// Wait until the service answers GET /api/info.
    WaitReady {
        /// Give up after this many milliseconds.
        #[arg(long, default_value_t = 10_000)]
        timeout_ms: u64,
    },
    /// Process data snapshot (GET /api/io).
    Io,
    /// Read a value by address, e.g. `pnctl read IW2`, `pnctl read QD0 --type f32`.
    Read {
        address: String,
        /// Value type (default from the address form: bit->bool, B->u8, W->u16, D->u32).
        #[arg(long = "type", short = 't')]
        ty: Option<String>,
        /// Read this many raw bytes from the address's byte offset instead (hex output).
        #[arg(long, conflicts_with = "ty")]
        bytes: Option<usize>,
    },
    /// Write a value by address, e.g. `pnctl write IW2 0x1234`, `pnctl write I0.3 1`.
    Write {
        address: String,
        /// The value (bool: 1/0/true/false/on/off; integers decimal or 0x hex; floats).
        #[arg(required_unless_present = "hex", allow_negative_numbers = true)]
        value: Option<String>,
        /// Value type (default from the address form).
        #[arg(long = "type", short = 't', conflicts_with = "hex")]
        ty: Option<String>,
        /// Write raw bytes (hex) at the address's byte offset instead of a typed value.
        #[arg(long, conflicts_with = "value")]
        hex: Option<String>,
    },
    /// Print changes (state, connected, errorCode, link, IO status) as they happen (polling).
    Watch {
        /// Polling period in milliseconds (reference: 3000).
        #[arg(long, default_value_t = 3000)]
        period_ms: u64,
        /// Stop after this many events (default: run until interrupted).
        #[arg(long)]
        count: Option<usize>,
        /// Stop after this many seconds.
        #[arg(long)]
        duration_s: Option<f64>,
    },
    /// Start the slave (POST /api/start).
    Start,
    /// Stop the slave (POST /api/stop).
    Stop,
    /// Reset the device (POST /api/reset).
    Reset {
        #[arg(value_enum)]
        mode: ResetArg,
    },
    /// Active alarms (GET /api/alarms), or the history with --history.
    Alarms {
        #[arg(long)]
        history: bool,
    },
    /// Acknowledge an alarm by id, or all with --all.
    Ack {
        #[arg(required_unless_present = "all", conflicts_with = "all")]
        id: Option<String>,
        #[arg(long)]
        all: bool,
    },
    /// Diagnosis counters (GET /api/diag); `diag add|update|remove` edits diagnosis entries.
    Diag {
        #[command(subcommand)]
        action: Option<DiagCmd>,
    },
    /// Identification and maintenance data (GET /api/im).
    Im,
    /// User-area records (GET /api/records).
    Records,
    /// Reload the runtime configuration (POST /api/config/reload).
    Reload {
        /// Load this XML file instead of the configured one.
        #[arg(long)]
        path: Option<String>,
    },
    /// Enable or disable the high-resolution timer.
    Timer {
        #[arg(value_enum)]
        state: OnOff,
    },
}

#[derive(Subcommand, Debug)]
enum DiagCmd {
    /// Add a diagnosis entry.
    Add(DiagArgs),
    /// Update a diagnosis entry.
    Update(DiagArgs),
    /// Remove a diagnosis entry.
    Remove(DiagArgs),
}

#[derive(Args, Debug)]
struct DiagArgs {
    /// Slot (decimal or 0x hex).
    #[arg(long, value_parser = parse_u16)]
    slot: u16,
    /// Subslot (decimal or 0x hex), e.g. 1 or 0x8001 for the first port.
    #[arg(long, value_parser = parse_u16)]
    subslot: u16,
    /// Channel (decimal or 0x hex; 0x8000 = the whole submodule).
    #[arg(long, default_value_t = 0, value_parser = parse_u16)]
    channel: u16,
    /// Channel error type (decimal or 0x hex), e.g. 1 short circuit, 2 undervoltage,
    /// 5 temperature, 6 wire break (IEC 61158-6-10 ChannelErrorType).
    #[arg(long, value_parser = parse_u16)]
    error_type: u16,
    /// 0 fault, 1 maintenance required, 2 maintenance demanded, 3 qualified.
    #[arg(long, default_value_t = 0)]
    severity: u8,
    /// Free text.
    #[arg(long, default_value = "")]
    text: String,
}

/// A u16 in decimal or with a 0x prefix in hex.
fn parse_u16(s: &str) -> Result<u16, String> {
    let t = s.trim();
    match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(h) => u16::from_str_radix(h, 16),
        None => t.parse(),
    }
    .map_err(|e| format!("'{s}': {e} (decimal, or hex with 0x)"))
}

#[derive(ValueEnum, Clone, Copy, Debug)]
enum ResetArg {
    Communication,
    Factory,
}

#[derive(ValueEnum, Clone, Copy, Debug)]
enum OnOff {
    On,
    Off,
}

/// Outcome of a command: exit code.
const EXIT_OK: u8 = 0;
const EXIT_FAILED: u8 = 1;
const EXIT_USAGE: u8 = 2;
const EXIT_UNREACHABLE: u8 = 3;
const EXIT_NOT_SUPPORTED: u8 = 4;
const EXIT_NOT_FOUND: u8 = 5;
const EXIT_NOT_DELIVERED: u8 = 6;

fn exit_for(e: &Error) -> u8 {
    match e.kind {
        CallResult::Success => EXIT_OK,
        CallResult::InvalidArgument => EXIT_USAGE,
        CallResult::ServiceUnreachable => EXIT_UNREACHABLE,
        CallResult::NotSupported => EXIT_NOT_SUPPORTED,
        CallResult::NotFound => EXIT_NOT_FOUND,
        _ => EXIT_FAILED,
    }
}

fn main() -> ExitCode {
    // Behave like other Unix tools in a pipe (`pnctl diag | head`): end quietly when the
    // reader goes away instead of panicking on EPIPE in println!.
    // SAFETY: setting a signal disposition to the default before any thread exists.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = Cli::parse();
    let out = Out { json: cli.json };
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("pnctl: cannot start runtime: {e}");
            return ExitCode::from(EXIT_FAILED);
        }
    };
    let code = match rt.block_on(commands::run(cli, &out)) {
        Ok(c) => c,
        Err(e) => out.error(&e),
    };
    ExitCode::from(code)
}

//! pnctl: command-line client of the PROFINET IO device service's HTTP API.

use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};
use pn_client::{
    Address, CallResult, Client, ClientOptions, CommandResult, DiagEntry, Error, Event,
    IoWriteResponse, ResetMode, ValueType,
};
use serde_json::{json, Value};

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

struct Out {
    json: bool,
}

impl Out {
    fn json(&self, v: &Value) {
        println!("{v}");
    }

    fn error(&self, e: &Error) -> u8 {
        if self.json {
            self.json(&json!({
                "ok": false,
                "error": e.kind.as_str(),
                "message": e.message,
                "httpStatus": e.http_status,
                "errorCode": e.error_code,
                "code": e.code,
                "exitCode": exit_for(e),
            }));
        }
        eprintln!("pnctl: {e}");
        exit_for(e)
    }
}

fn to_json<T: serde::Serialize>(v: &T) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}

fn yes_no(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

fn hexdump(bytes: &[u8]) -> String {
    let mut s = String::new();
    for (i, chunk) in bytes.chunks(16).enumerate() {
        s.push_str(&format!("  {:04}:", i * 16));
        for b in chunk {
            s.push_str(&format!(" {b:02x}"));
        }
        s.push('\n');
    }
    if bytes.is_empty() {
        s.push_str("  (empty)\n");
    }
    s
}

fn print_command_result(out: &Out, what: &str, r: &CommandResult) -> u8 {
    if out.json {
        out.json(&to_json(r));
    } else if r.ok {
        println!("{what}: ok {}", r.message);
    } else {
        println!(
            "{what}: FAILED: {} (errorCode {} = {})",
            r.message,
            r.error_code,
            r.service_error().as_str()
        );
    }
    if r.ok {
        EXIT_OK
    } else {
        EXIT_FAILED
    }
}

fn print_write(out: &Out, addr: &str, shown: &str, r: Option<&IoWriteResponse>) -> u8 {
    let Some(r) = r else {
        if out.json {
            out.json(&json!({"ok": true, "address": addr, "value": shown, "flushed": false}));
        } else {
            println!("{addr} = {shown} (nothing to send)");
        }
        return EXIT_OK;
    };
    if out.json {
        let mut v = to_json(r);
        if let Value::Object(m) = &mut v {
            m.insert("address".into(), json!(addr));
            m.insert("value".into(), json!(shown));
        }
        out.json(&v);
    } else if r.delivered {
        println!("{addr} = {shown}: delivered");
    } else {
        println!(
            "{addr} = {shown}: queued, not delivered ({}{}{})",
            r.reason_code,
            if r.message.is_empty() { "" } else { ": " },
            r.message
        );
    }
    if r.delivered {
        EXIT_OK
    } else {
        EXIT_NOT_DELIVERED
    }
}

fn describe_event(e: &Event) -> String {
    match e {
        Event::Initial {
            state,
            connected,
            error_code,
            link,
            io,
        } => format!(
            "initial: state={state} connected={connected} errorCode={error_code} portPresent={} linkUp={} inputValid={}",
            link.port_present,
            link.link_up.map(|b| b.to_string()).unwrap_or_else(|| "?".into()),
            io.as_ref().map(|i| i.input_valid.to_string()).unwrap_or_else(|| "?".into()),
        ),
        Event::ServiceReachable { reachable, message } => {
            if *reachable {
                "service reachable again".to_string()
            } else {
                format!("service unreachable: {message}")
            }
        }
        Event::Connected {
            connected,
            ever_connected,
        } => format!("connected: {connected} (everConnected {ever_connected})"),
        Event::State { from, to } => format!("state: {from} -> {to}"),
        Event::ErrorCode {
            from,
            to,
            status_message,
        } => format!("errorCode: {from} -> {to} {status_message}"),
        Event::Link { from, to } => format!(
            "link: portPresent {} -> {}, linkUp {:?} -> {:?}",
            from.port_present, to.port_present, from.link_up, to.link_up
        ),
        Event::IoStatus { from, to } => format!(
            "io: inputValid {} -> {}, outputValid {} -> {}, synced {} -> {}, IOPS in {} -> {} out {} -> {}",
            from.input_valid,
            to.input_valid,
            from.output_valid,
            to.output_valid,
            from.output_synced_to_driver,
            to.output_synced_to_driver,
            from.input_iops_hex,
            to.input_iops_hex,
            from.output_iops_hex,
            to.output_iops_hex
        ),
    }
}

async fn run(cli: Cli, out: &Out) -> Result<u8, Error> {
    let client = Client::with_options(ClientOptions {
        base_url: cli.url.clone(),
        api_key: cli.api_key.clone(),
        ..ClientOptions::default()
    })?;
    match cli.cmd {
        Cmd::Dashboard { listen } => {
            let listener = pn_client::proxy::bind(listen).await?;
            let local = listener.local_addr().map_or(listen, |a| a);
            let upstream = pn_client::proxy::Upstream {
                endpoint: pn_client::http::Endpoint::parse(&cli.url)?,
                api_key: cli.api_key.clone(),
                timeout: Duration::from_secs(10),
            };
            if out.json {
                out.json(&json!({"dashboard": format!("http://{local}/"), "service": cli.url}));
            } else {
                let key = if cli.api_key.is_some() {
                    "with the API key"
                } else {
                    "without an API key (give --api-key or PN_API_KEY if the service has one)"
                };
                println!(
                    "dashboard: http://{local}/  (forwards to {} {key}; Ctrl-C stops)",
                    cli.url
                );
            }
            tokio::select! {
                r = pn_client::proxy::serve(listener, upstream) => r.map(|_| 0),
                _ = tokio::signal::ctrl_c() => Ok(0),
            }
        }
        Cmd::Status => {
            let s = client.status().await?;
            if out.json {
                out.json(&to_json(&s));
            } else {
                println!("service:        {} {}", s.service_name, s.version);
                println!("state:          {}", s.state);
                println!(
                    "connected:      {} (ever connected: {})",
                    yes_no(s.connected),
                    yes_no(s.ever_connected)
                );
                println!(
                    "errorCode:      {} ({})",
                    s.error_code,
                    s.service_error().as_str()
                );
                if !s.status_message.is_empty() {
                    println!("message:        {}", s.status_message);
                }
                if !s.wait_reason.is_empty() {
                    println!("waiting:        {}", s.wait_reason);
                }
                println!("port present:   {}", yes_no(s.hardware_port_present));
                println!(
                    "alarms:         {} active, {} critical",
                    s.alarm_count, s.critical_alarm_count
                );
                println!("io epoch:       {}", s.io_epoch);
                println!("output synced:  {}", yes_no(s.output_synced_to_driver));
                println!(
                    "station:        {} (controller: {})",
                    s.config_station_name,
                    if s.master_station_name.is_empty() {
                        "-"
                    } else {
                        &s.master_station_name
                    }
                );
                if !s.master_assigned_ip.is_empty() {
                    println!(
                        "ip (DCP):       {}/{} gw {} applied={}",
                        s.master_assigned_ip,
                        s.master_assigned_mask,
                        s.master_assigned_gateway,
                        yes_no(s.dcp_ip_applied)
                    );
                }
            }
            Ok(EXIT_OK)
        }
        Cmd::Info => {
            let v = client.info().await?;
            if out.json {
                out.json(&v);
            } else if let Value::Object(m) = &v {
                for (k, v) in m {
                    println!(
                        "{k}: {}",
                        v.as_str().map(str::to_string).unwrap_or(v.to_string())
                    );
                }
            }
            Ok(EXIT_OK)
        }
        Cmd::WaitReady { timeout_ms } => {
            let v = client.wait_ready(Duration::from_millis(timeout_ms)).await?;
            if out.json {
                out.json(&v);
            } else {
                println!("ready");
            }
            Ok(EXIT_OK)
        }
        Cmd::Io => {
            let io = client.io().await?;
            if out.json {
                out.json(&to_json(&io));
            } else {
                let input = io.input()?;
                let output = io.output()?;
                println!(
                    "epoch {}  formatVersion {}  inputValid {}  outputValid {}  outputSynced {}",
                    io.epoch,
                    io.format_version,
                    yes_no(io.input_valid),
                    yes_no(io.output_valid),
                    yes_no(io.output_synced_to_driver)
                );
                println!(
                    "I = PLC inputs, device -> controller (API outputHex; M, DB1 alias it), {} bytes, IOPS {} IOCS {}:",
                    io.output_length, io.output_iops_hex, io.output_iocs_hex
                );
                print!("{}", hexdump(&output));
                println!(
                    "Q = PLC outputs, controller -> device (API inputHex; read-only), {} bytes, IOPS {} IOCS {}:",
                    io.input_length, io.input_iops_hex, io.input_iocs_hex
                );
                print!("{}", hexdump(&input));
            }
            Ok(EXIT_OK)
        }
        Cmd::Read { address, ty, bytes } => {
            let addr: Address = address.parse()?;
            let pd = client.process_data();
            if let Some(n) = bytes {
                let b = pd.read_bytes(&addr, n).await?;
                let hex = pn_client::encode_hex(&b);
                if out.json {
                    out.json(&json!({"address": addr.to_string(), "length": n, "hex": hex}));
                } else {
                    println!("{hex}");
                }
                return Ok(EXIT_OK);
            }
            let ty = match ty {
                Some(t) => t.parse::<ValueType>()?,
                None => addr.default_type(),
            };
            let v = pd.read_value(&addr, ty).await?;
            if out.json {
                out.json(&json!({"address": addr.to_string(), "type": ty.as_str(), "value": v.to_json()}));
            } else {
                println!("{v}");
            }
            Ok(EXIT_OK)
        }
        Cmd::Write {
            address,
            value,
            ty,
            hex,
        } => {
            let addr: Address = address.parse()?;
            let pd = client.process_data();
            let shown;
            if let Some(h) = hex {
                let data = pn_client::decode_hex(&h)
                    .map_err(|e| Error::invalid(format!("--hex: {}", e.message)))?;
                pd.write_bytes(&addr, &data).await?;
                shown = pn_client::encode_hex(&data);
            } else {
                let ty = match ty {
                    Some(t) => t.parse::<ValueType>()?,
                    None => addr.default_type(),
                };
                let text = value.unwrap_or_default();
                let v = ty.parse_value(&text)?;
                pd.write_value(&addr, v).await?;
                shown = v.to_string();
            }
            // The background flusher may have sent it already; its answer is then the last one.
            let r = pd.sync().await?;
            Ok(print_write(out, &addr.to_string(), &shown, r.as_ref()))
        }
        Cmd::Watch {
            period_ms,
            count,
            duration_s,
        } => {
            let mut w = client.watch(Duration::from_millis(period_ms.max(10)));
            let end = duration_s
                .filter(|d| d.is_finite() && *d >= 0.0)
                .map(|d| tokio::time::Instant::now() + Duration::from_secs_f64(d));
            let mut n = 0usize;
            loop {
                if count.is_some_and(|c| n >= c) {
                    break;
                }
                let ev = match end {
                    Some(t) => match tokio::time::timeout_at(t, w.recv()).await {
                        Ok(e) => e,
                        Err(_) => break,
                    },
                    None => w.recv().await,
                };
                let Some(ev) = ev else { break };
                n += 1;
                if out.json {
                    out.json(&to_json(&ev));
                } else {
                    println!("{} {}", now_text(), describe_event(&ev));
                }
            }
            Ok(EXIT_OK)
        }
        Cmd::Start => {
            let r = client.start().await?;
            Ok(print_command_result(out, "start", &r))
        }
        Cmd::Stop => {
            let r = client.stop().await?;
            Ok(print_command_result(out, "stop", &r))
        }
        Cmd::Reset { mode } => {
            let mode = match mode {
                ResetArg::Communication => ResetMode::Communication,
                ResetArg::Factory => ResetMode::Factory,
            };
            let r = client.reset(mode).await?;
            if out.json {
                out.json(&to_json(&r));
            } else {
                println!(
                    "reset {}: {} {}",
                    r.mode,
                    if r.ok { "ok" } else { "FAILED" },
                    r.message
                );
            }
            Ok(if r.ok { EXIT_OK } else { EXIT_FAILED })
        }
        Cmd::Alarms { history } => {
            let list = if history {
                client.alarm_history().await?
            } else {
                client.alarms().await?
            };
            if out.json {
                out.json(&to_json(&list));
            } else if list.is_empty() {
                println!("no {}alarms", if history { "" } else { "active " });
            } else {
                for a in &list {
                    println!(
                        "{:<12} {:<8} x{:<3} {} [{}] {}",
                        a.id,
                        a.severity.as_str(),
                        a.count,
                        a.occurred_at,
                        a.source,
                        a.message
                    );
                }
            }
            Ok(EXIT_OK)
        }
        Cmd::Ack { id, all } => {
            let r = if all {
                client.ack_all().await?
            } else {
                client.ack_alarm(id.as_deref().unwrap_or_default()).await?
            };
            if out.json {
                out.json(&to_json(&r));
            } else {
                println!(
                    "ack: {} {} (acknowledged {})",
                    if r.ok { "ok" } else { "FAILED" },
                    r.message,
                    r.acknowledged_count
                );
            }
            Ok(if r.ok { EXIT_OK } else { EXIT_FAILED })
        }
        Cmd::Diag { action: None } => {
            let d = client.diag().await?;
            if out.json {
                out.json(&to_json(&d));
            } else if !d.ok {
                println!("diag: not available: {} (state {})", d.message, d.state);
            } else {
                let v = to_json(&d);
                if let Value::Object(m) = v {
                    for (k, v) in m {
                        if k != "diagnoses" {
                            println!(
                                "{k:<24} {}",
                                v.as_str().map(str::to_string).unwrap_or(v.to_string())
                            );
                        }
                    }
                }
                if let Some(Value::Array(list)) = d.extra.get("diagnoses") {
                    println!("diagnosis entries: {}", list.len());
                    for e in list {
                        println!("  {e}");
                    }
                }
            }
            Ok(if d.ok { EXIT_OK } else { EXIT_FAILED })
        }
        Cmd::Diag {
            action: Some(action),
        } => {
            let (verb, a) = match &action {
                DiagCmd::Add(a) => ("add", a),
                DiagCmd::Update(a) => ("update", a),
                DiagCmd::Remove(a) => ("remove", a),
            };
            let entry = DiagEntry {
                slot: a.slot,
                subslot: a.subslot,
                channel: a.channel,
                error_type: a.error_type,
                severity: a.severity,
                text: a.text.clone(),
            };
            let v = client.diag_action(verb, &entry).await?;
            let ok = v.get("ok").and_then(Value::as_bool).unwrap_or(false);
            if out.json {
                out.json(&v);
            } else {
                println!(
                    "diag {verb}: {} {}",
                    if ok { "ok" } else { "FAILED" },
                    v.get("message").and_then(Value::as_str).unwrap_or("")
                );
            }
            Ok(if ok { EXIT_OK } else { EXIT_FAILED })
        }
        Cmd::Im => {
            let im = client.im().await?;
            if out.json {
                out.json(&to_json(&im));
            } else {
                println!(
                    "vendor/device:  0x{:04x} / 0x{:04x}",
                    im.vendor_id, im.device_id
                );
                println!("product:        {}", im.product_name);
                println!("order id:       {}", im.order_id);
                println!("serial:         {}", im.serial_number);
                println!(
                    "revisions:      hw {} sw {}",
                    im.hardware_revision, im.software_revision
                );
                println!("station:        {}", im.station_name);
                println!(
                    "I&M supported:  {} (I&M1-4: {})",
                    im.im_supported,
                    yes_no(im.im14_supported)
                );
                println!("tag function:   {}", im.im1_tag_function);
                println!("tag location:   {}", im.im1_tag_location);
                println!("date:           {}", im.im2_date);
                println!("descriptor:     {}", im.im3_descriptor);
                println!("signature:      {}", im.im4_signature_hex);
            }
            Ok(EXIT_OK)
        }
        Cmd::Records => {
            let r = client.records().await?;
            if out.json {
                out.json(&to_json(&r));
            } else {
                println!(
                    "{} record(s){}",
                    r.count,
                    if r.note.is_empty() {
                        String::new()
                    } else {
                        format!(" ({})", r.note)
                    }
                );
                for rec in &r.records {
                    println!(
                        "  slot {} subslot 0x{:04x} index 0x{:04x} len {}: {}",
                        rec.slot, rec.subslot, rec.index, rec.length, rec.data_hex
                    );
                }
            }
            Ok(EXIT_OK)
        }
        Cmd::Reload { path } => {
            let body = match path {
                Some(p) => json!({ "path": p }),
                None => json!({}),
            };
            let r = client.reload_config_with(&body).await?;
            Ok(print_command_result(out, "reload", &r))
        }
        Cmd::Timer { state } => {
            let r = client
                .set_high_resolution_timer(matches!(state, OnOff::On))
                .await?;
            if out.json {
                out.json(&to_json(&r));
            } else {
                println!(
                    "high-resolution timer: {} {}",
                    if r.ok { "ok" } else { "FAILED" },
                    r.message
                );
            }
            Ok(if r.ok { EXIT_OK } else { EXIT_FAILED })
        }
    }
}

fn now_text() -> String {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let s = d.as_secs() % 86_400;
    format!(
        "{:02}:{:02}:{:02}.{:03}",
        s / 3600,
        (s / 60) % 60,
        s % 60,
        d.subsec_millis()
    )
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
    let code = match rt.block_on(run(cli, &out)) {
        Ok(c) => c,
        Err(e) => out.error(&e),
    };
    ExitCode::from(code)
}

//! [`run`]: carries out one pnctl command against the service.

use std::time::Duration;

use pn_client::{Address, Client, ClientOptions, DiagEntry, Error, ResetMode, Timeouts, ValueType};
use serde_json::{json, Value};

use crate::output::{
    describe_event, hexdump, now_text, print_command_result, print_write, to_json, yes_no, Out,
};
use crate::{Cli, Cmd, DiagCmd, OnOff, ResetArg, EXIT_FAILED, EXIT_OK};

/// pnctl's client: the spec's timeouts (section 8), except that `read` and `write`, which go
/// through the library's cached process-data path (500 ms, for programs that poll it every
/// cycle), wait as long as any other one-shot call, 5 s: a command typed on a busy machine
/// must not call a live service unreachable (decisions §42).
pub(crate) fn client_options(cli: &Cli) -> ClientOptions {
    let t = Timeouts::default();
    ClientOptions {
        base_url: cli.url.clone(),
        api_key: cli.api_key.clone(),
        timeouts: Timeouts {
            io_path: t.other,
            ..t
        },
    }
}

pub(crate) async fn run(cli: Cli, out: &Out) -> Result<u8, Error> {
    let client = Client::with_options(client_options(&cli))?;
    match cli.cmd {
        Cmd::Dashboard { listen } => dashboard(&cli.url, cli.api_key.clone(), listen, out).await,
        Cmd::Status => status(&client, out).await,
        Cmd::Info => info(&client, out).await,
        Cmd::WaitReady { timeout_ms } => {
            let v = client.wait_ready(Duration::from_millis(timeout_ms)).await?;
            if out.json {
                out.json(&v);
            } else {
                println!("ready");
            }
            Ok(EXIT_OK)
        }
        Cmd::Io => io(&client, out).await,
        Cmd::Read { address, ty, bytes } => read(&client, address, ty, bytes, out).await,
        Cmd::Write {
            address,
            value,
            ty,
            hex,
        } => write(&client, address, value, ty, hex, out).await,
        Cmd::Watch {
            period_ms,
            count,
            duration_s,
        } => watch(&client, period_ms, count, duration_s, out).await,
        Cmd::Start => {
            let r = client.start().await?;
            Ok(print_command_result(out, "start", &r))
        }
        Cmd::Stop => {
            let r = client.stop().await?;
            Ok(print_command_result(out, "stop", &r))
        }
        Cmd::Reset { mode } => reset(&client, mode, out).await,
        Cmd::Alarms { history } => alarms(&client, history, out).await,
        Cmd::Ack { id, all } => ack(&client, id, all, out).await,
        Cmd::Diag { action: None } => diag_show(&client, out).await,
        Cmd::Diag {
            action: Some(action),
        } => diag_action(&client, action, out).await,
        Cmd::Im => im(&client, out).await,
        Cmd::Records => records(&client, out).await,
        Cmd::Reload { path } => {
            let body = match path {
                Some(p) => json!({ "path": p }),
                None => json!({}),
            };
            let r = client.reload_config_with(&body).await?;
            Ok(print_command_result(out, "reload", &r))
        }
        Cmd::Timer { state } => timer(&client, state, out).await,
    }
}

/// `pnctl dashboard`: serves the dashboard locally and forwards its API calls.
async fn dashboard(
    url: &str,
    api_key: Option<String>,
    listen: std::net::SocketAddr,
    out: &Out,
) -> Result<u8, Error> {
    let listener = pn_client::proxy::bind(listen).await?;
    let local = listener.local_addr().map_or(listen, |a| a);
    let with_key = api_key.is_some();
    let upstream = pn_client::proxy::Upstream {
        endpoint: pn_client::http::Endpoint::parse(url)?,
        api_key,
        timeout: Duration::from_secs(10),
    };
    if out.json {
        out.json(&json!({"dashboard": format!("http://{local}/"), "service": url}));
    } else {
        let key = if with_key {
            "with the API key"
        } else {
            "without an API key (give --api-key or PN_API_KEY if the service has one)"
        };
        println!("dashboard: http://{local}/  (forwards to {url} {key}; Ctrl-C stops)");
    }
    tokio::select! {
        r = pn_client::proxy::serve(listener, upstream) => r.map(|_| 0),
        _ = tokio::signal::ctrl_c() => Ok(0),
    }
}

/// `pnctl status`: the service state (`GET /api/status`).
async fn status(client: &Client, out: &Out) -> Result<u8, Error> {
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

/// `pnctl info`: `GET /api/info`.
async fn info(client: &Client, out: &Out) -> Result<u8, Error> {
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

/// `pnctl io`: both process data areas as hex dumps.
async fn io(client: &Client, out: &Out) -> Result<u8, Error> {
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

/// `pnctl read`: one value or a byte range of I or Q.
async fn read(
    client: &Client,
    address: String,
    ty: Option<String>,
    bytes: Option<usize>,
    out: &Out,
) -> Result<u8, Error> {
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

/// `pnctl write`: one value or bytes into I, then waits for the write to be sent.
async fn write(
    client: &Client,
    address: String,
    value: Option<String>,
    ty: Option<String>,
    hex: Option<String>,
    out: &Out,
) -> Result<u8, Error> {
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

/// `pnctl watch`: the service's changes as they happen, until a count or a duration ends it.
async fn watch(
    client: &Client,
    period_ms: u64,
    count: Option<usize>,
    duration_s: Option<f64>,
    out: &Out,
) -> Result<u8, Error> {
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

/// `pnctl reset`: communication or factory reset.
async fn reset(client: &Client, mode: ResetArg, out: &Out) -> Result<u8, Error> {
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

/// `pnctl alarms`: active alarms or the history.
async fn alarms(client: &Client, history: bool, out: &Out) -> Result<u8, Error> {
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

/// `pnctl ack`: acknowledge one alarm or all.
async fn ack(client: &Client, id: Option<String>, all: bool, out: &Out) -> Result<u8, Error> {
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

/// `pnctl diag`: the device's diagnosis view.
async fn diag_show(client: &Client, out: &Out) -> Result<u8, Error> {
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

/// `pnctl diag add|update|remove`: change one diagnosis entry.
async fn diag_action(client: &Client, action: DiagCmd, out: &Out) -> Result<u8, Error> {
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

/// `pnctl im`: I&M0-4.
async fn im(client: &Client, out: &Out) -> Result<u8, Error> {
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

/// `pnctl records`: the user records written by the controller.
async fn records(client: &Client, out: &Out) -> Result<u8, Error> {
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

/// `pnctl timer on|off`: the high-resolution timer switch.
async fn timer(client: &Client, state: OnOff, out: &Out) -> Result<u8, Error> {
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

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[test]
    fn a_command_waits_for_a_read_or_write_as_for_any_other_call() {
        let cli = Cli::try_parse_from(["pnctl", "--api-key", "k", "write", "IW2", "1"]).unwrap();
        let o = client_options(&cli);
        assert_eq!(o.timeouts.io_path, Duration::from_secs(5));
        assert_eq!(o.timeouts.other, Duration::from_secs(5));
        assert_eq!(o.timeouts.poll, Duration::from_secs(2));
        assert_eq!(o.timeouts.start_stop, Duration::from_secs(15));
        assert_eq!(o.api_key.as_deref(), Some("k"));
    }
}

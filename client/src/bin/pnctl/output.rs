//! Output of pnctl: [`Out`] (text or JSON lines), value and hex formatting, the printing of
//! command and write results, and the one-line text of a watched event.

use pn_client::{CommandResult, Error, Event, IoWriteResponse};
use serde_json::{json, Value};

use crate::{exit_for, EXIT_FAILED, EXIT_NOT_DELIVERED, EXIT_OK};

pub(crate) struct Out {
    pub(crate) json: bool,
}

impl Out {
    pub(crate) fn json(&self, v: &Value) {
        println!("{v}");
    }

    pub(crate) fn error(&self, e: &Error) -> u8 {
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

pub(crate) fn to_json<T: serde::Serialize>(v: &T) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}

pub(crate) fn yes_no(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

pub(crate) fn hexdump(bytes: &[u8]) -> String {
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

pub(crate) fn print_command_result(out: &Out, what: &str, r: &CommandResult) -> u8 {
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

pub(crate) fn print_write(out: &Out, addr: &str, shown: &str, r: Option<&IoWriteResponse>) -> u8 {
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

pub(crate) fn describe_event(e: &Event) -> String {
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

pub(crate) fn now_text() -> String {
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

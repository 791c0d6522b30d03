//! The `pnctl` binary against the REAL daemon: every command, `--json`, exit codes, API key by
//! flag and by environment.

mod common;

use common::*;
use serde_json::json;

#[test]
fn commands_json_and_exit_codes() {
    if !root() {
        return;
    }
    let d = Daemon::start(Opts {
        sim: true,
        ..Opts::default()
    });

    // status, human and JSON
    let r = d.pnctl(&["status"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stdout.contains("state:          Stopped"), "{}", r.stdout);
    let j = d.pnctl(&["--json", "status"]).json();
    assert_eq!(j["state"], "Stopped");
    assert_eq!(j["connected"], false);
    assert_eq!(j["errorCode"], 0);

    let j = d.pnctl(&["info", "--json"]).json();
    assert_eq!(j["version"], "1.0.0");
    assert_eq!(d.pnctl(&["wait-ready", "--timeout-ms", "2000"]).code, 0);

    // start / diag
    let r = d.pnctl(&["start"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stdout.starts_with("start: ok"), "{}", r.stdout);
    let j = d.pnctl(&["diag", "--json"]).json();
    assert_eq!(j["ok"], true);
    assert_eq!(j["outputAreaLength"], 16);
    assert_eq!(d.pnctl(&["diag"]).code, 0);

    // write while no controller: accepted, queued, not delivered -> 6
    let r = d.pnctl(&["write", "IW2", "0x1234"]);
    assert_eq!(r.code, 6, "{r:?}");
    assert!(r.stdout.contains("queued, not delivered"), "{}", r.stdout);
    assert_eq!(&d.output_area()[2..4], &[0x12, 0x34]);
    let j = d.pnctl(&["--json", "read", "MW2"]).json();
    assert_eq!(j, json!({"address": "MW2", "type": "u16", "value": 0x1234}));
    let r = d.pnctl(&["read", "DB1.DBB3"]);
    assert_eq!((r.code, r.stdout.trim()), (0, "52"));
    // controller connects: delivered -> 0
    d.sim(json!({"event": "connected", "controller": "plc-1"}));
    wait_for("DataExchange", std::time::Duration::from_secs(5), || {
        (d.pnctl(&["--json", "status"]).json()["state"] == "DataExchange").then_some(())
    });
    let r = d.pnctl(&["--json", "write", "ID4", "-1.5", "--type", "f32"]);
    assert_eq!(r.code, 0, "{r:?}");
    let j = r.json();
    assert_eq!(
        (j["delivered"].clone(), j["address"].clone()),
        (json!(true), json!("ID4"))
    );
    assert_eq!(&d.output_area()[4..8], &(-1.5f32).to_be_bytes());
    let r = d.pnctl(&["read", "ID4", "--type", "f32"]);
    assert_eq!(r.stdout.trim(), "-1.5");
    assert_eq!(d.pnctl(&["write", "I8.1", "on"]).code, 0);
    assert_eq!(d.output_area()[8], 0b10);
    assert_eq!(d.pnctl(&["write", "IB9", "--hex", "a1b2c3"]).code, 0);
    assert_eq!(&d.output_area()[9..12], &[0xA1, 0xB2, 0xC3]);
    let r = d.pnctl(&["read", "IB9", "--bytes", "3"]);
    assert_eq!(r.stdout.trim(), "a1b2c3");
    d.sim(json!({"cmd": "writeInput", "dataHex": "00ff", "iops": 128, "iocs": 128}));
    let r = d.pnctl(&["read", "QW0", "--type", "i16"]);
    assert_eq!((r.code, r.stdout.trim()), (0, "255"));
    let r = d.pnctl(&["read", "IB0", "--type", "u64"]);
    assert_eq!(r.code, 0, "{r:?}");

    // io snapshot
    let j = d.pnctl(&["io", "--json"]).json();
    assert_eq!(j["inputLength"], 8);
    assert_eq!(j["outputLength"], 16);
    let r = d.pnctl(&["io"]);
    // The PLC's view, with the API field beside it (docs/decisions.md §1).
    assert!(
        r.stdout
            .contains("Q = PLC outputs, controller -> device (API inputHex")
            && r.stdout
                .contains("I = PLC inputs, device -> controller (API outputHex"),
        "{}",
        r.stdout
    );

    // exit codes of refused calls
    let r = d.pnctl(&["write", "QB0", "1"]);
    assert_eq!(r.code, 4, "{r:?}");
    assert!(r.stderr.contains("NotSupported"));
    let r = d.pnctl(&["--json", "read", "DB2.DBW0"]);
    assert_eq!(r.code, 5, "{r:?}");
    assert_eq!(r.json()["error"], "NotFound");
    for bad in [
        vec!["read", "I0.8"],
        vec!["read", "XB0"],
        vec!["write", "IB0", "300"],
        vec!["write", "IB0", "1", "--type", "real"],
        vec!["read", "IB40"],
        vec!["bogus"],
        vec!["reset", "sideways"],
        vec!["write", "IB0"],
    ] {
        let r = d.pnctl(&bad);
        assert_eq!(r.code, 2, "{bad:?}: {r:?}");
    }

    // alarms, ack, diag entries, im, records, reload, timer, reset
    let j = d.pnctl(&["alarms", "--json"]).json();
    assert!(j.is_array());
    let j = d.pnctl(&["alarms", "--history", "--json"]).json();
    assert!(j.is_array());
    assert_eq!(d.pnctl(&["alarms"]).code, 0);
    assert_eq!(d.pnctl(&["ack", "--all"]).code, 0);
    let r = d.pnctl(&["ack", "no-such-id"]);
    assert_eq!(r.code, 1, "{r:?}");
    let r = d.pnctl(&[
        "--json",
        "diag",
        "add",
        "--slot",
        "1",
        "--subslot",
        "0x0001",
        "--error-type",
        "0x6",
        "--severity",
        "1",
        "--text",
        "wire break",
    ]);
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(r.json()["entryCount"], 1);
    // A submodule the configuration does not have is refused with the reason.
    let r = d.pnctl(&[
        "diag",
        "add",
        "--slot",
        "9",
        "--subslot",
        "1",
        "--error-type",
        "6",
    ]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(
        (r.stdout.clone() + &r.stderr).contains("not in the configuration"),
        "{r:?}"
    );
    let j = d.pnctl(&["--json", "diag"]).json();
    assert_eq!(j["diagnoses"].as_array().map(|a| a.len()), Some(1), "{j}");
    // the diagnosis raised an alarm (severity 1 -> Warning); list it and acknowledge it by id
    let alarms = d.pnctl(&["alarms", "--json"]).json();
    let alarm = alarms
        .as_array()
        .and_then(|l| l.iter().find(|a| a["source"] == "diag"))
        .unwrap_or_else(|| panic!("no diag alarm in {alarms}"))
        .clone();
    assert_eq!(alarm["severity"], "Warning");
    let r = d.pnctl(&["alarms"]);
    assert!(r.stdout.contains("wire break"), "{}", r.stdout);
    let id = alarm["id"].as_str().unwrap().to_string();
    let r = d.pnctl(&["ack", &id]);
    assert_eq!(r.code, 0, "{r:?}");
    let after = d.pnctl(&["alarms", "--json"]).json();
    assert!(
        !after
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a["id"] == alarm["id"]),
        "{after}"
    );
    let hist = d.pnctl(&["alarms", "--history", "--json"]).json();
    assert!(
        hist.as_array()
            .unwrap()
            .iter()
            .any(|a| a["id"] == alarm["id"]),
        "{hist}"
    );
    let r = d.pnctl(&[
        "diag",
        "remove",
        "--slot",
        "1",
        "--subslot",
        "1",
        "--error-type",
        "6",
    ]);
    assert_eq!(r.code, 0, "{r:?}");
    let r = d.pnctl(&[
        "diag",
        "add",
        "--slot",
        "1",
        "--subslot",
        "1",
        "--error-type",
        "2",
        "--severity",
        "7",
    ]);
    assert_eq!(r.code, 2, "{r:?}");
    let j = d.pnctl(&["im", "--json"]).json();
    assert_eq!(j["orderId"], "ORDER-CL");
    assert!(d.pnctl(&["im"]).stdout.contains("0x0493 / 0x0007"));
    let j = d.pnctl(&["records", "--json"]).json();
    assert!(j["records"].is_array());
    assert_eq!(d.pnctl(&["records"]).code, 0);
    let r = d.pnctl(&["reload"]);
    assert_eq!(r.code, 0, "{r:?}");
    let r = d.pnctl(&["reload", "--path", "/nonexistent/config.xml"]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stdout.contains("FAILED"), "{}", r.stdout);
    assert_eq!(d.pnctl(&["timer", "on"]).code, 0);
    assert_eq!(d.pnctl(&["--json", "timer", "off"]).json()["ok"], true);
    let j = d.pnctl(&["--json", "reset", "communication"]).json();
    assert_eq!(j["mode"], "communication");

    // watch: first event is the initial state, as JSON lines
    let r = d.pnctl(&["--json", "watch", "--period-ms", "50", "--count", "1"]);
    assert_eq!(r.code, 0, "{r:?}");
    let j = r.json();
    assert_eq!(j["event"], "initial");
    let r = d.pnctl(&["watch", "--period-ms", "50", "--duration-s", "0.3"]);
    assert_eq!(r.code, 0);
    assert!(r.stdout.contains("initial: state="), "{}", r.stdout);

    // stop
    let j = d.pnctl(&["--json", "stop"]).json();
    assert_eq!(j["ok"], true);
    assert_eq!(j["errorCode"], 0);
    assert_eq!(d.pnctl(&["--json", "status"]).json()["state"], "Stopped");
}

#[test]
fn start_failure_exit_1_with_error_code() {
    if !root() {
        return;
    }
    let d = Daemon::start(Opts {
        nic: Some("nosuchnic2".into()),
        ..Opts::default()
    });
    let r = d.pnctl(&["start"]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(
        r.stdout.contains("FAILED") && r.stdout.contains("nosuchnic2"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("errorCode"), "{}", r.stdout);
    let r = d.pnctl(&["--json", "start"]);
    assert_eq!(r.code, 1);
    let j = r.json();
    assert_eq!(j["ok"], false);
    assert_ne!(j["errorCode"], 0);
}

#[test]
fn api_key_by_flag_and_environment() {
    if !root() {
        return;
    }
    let d = Daemon::start(Opts {
        api_key: Some("sesame".into()),
        ..Opts::default()
    });
    let r = d.pnctl(&["status"]);
    assert_eq!(r.code, 3, "{r:?}");
    assert!(r.stderr.contains("401"), "{}", r.stderr);
    let r = d.pnctl(&["--json", "status", "--api-key", "wrong"]);
    assert_eq!(r.code, 3);
    assert_eq!(r.json()["httpStatus"], 401);
    assert_eq!(d.pnctl(&["--api-key", "sesame", "status"]).code, 0);
    assert_eq!(
        d.pnctl_env(&["status"], &[("PN_API_KEY", "sesame")]).code,
        0
    );
    assert_eq!(
        d.pnctl_env(&["--url", URL, "io"], &[("PN_API_KEY", "sesame")])
            .code,
        0
    );
}

#[test]
fn help_documents_exit_codes() {
    let out = std::process::Command::new(PNCTL)
        .arg("--help")
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for line in [
        "0  success",
        "3  service unreachable",
        "4  not supported",
        "5  not found",
        "6  write accepted but not delivered",
    ] {
        assert!(text.contains(line), "--help lacks {line:?}");
    }
    assert!(text.contains("PN_API_KEY"));
    assert!(text.contains("http://127.0.0.1:18840"));
}

/// One HTTP/1.1 exchange on `port` of the loopback, returning (status, content type, body).
fn http_get(port: u16, method: &str, path: &str) -> (u16, String, String) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"
    )
    .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let ctype = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("content-type: ")
                .map(str::to_string)
        })
        .unwrap_or_default();
    (status, ctype, body.to_string())
}

/// `pnctl dashboard`: the dashboard and the API of a service with an API key, served on a
/// loopback port of pnctl's with the key added (spec 5.4 makes the page need the key too);
/// only loopback addresses are accepted.
#[test]
fn dashboard_proxy_adds_the_key() {
    if !root() {
        return;
    }
    let d = Daemon::start(Opts {
        api_key: Some("sesame".into()),
        sim: true,
        ..Opts::default()
    });
    let r = d.pnctl(&["dashboard", "--listen", "0.0.0.0:18841"]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(r.stderr.contains("loopback"), "{}", r.stderr);

    let mut child =
        d.ns.command(PNCTL)
            .args([
                "--api-key",
                "sesame",
                "dashboard",
                "--listen",
                "127.0.0.1:18841",
            ])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    assert!(
        line.starts_with("dashboard: http://127.0.0.1:18841/"),
        "{line}"
    );
    let (page, status, start, direct) = d.run(|| {
        (
            http_get(18841, "GET", "/"),
            http_get(18841, "GET", "/api/status"),
            http_get(18841, "POST", "/api/start"),
            http_get(18840, "GET", "/"),
        )
    });
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(page.0, 200, "{page:?}");
    assert!(page.1.starts_with("text/html"), "{page:?}");
    assert!(page.2.contains("<html"), "the dashboard page");
    assert_eq!(status.0, 200, "{status:?}");
    let v: serde_json::Value = serde_json::from_str(&status.2).unwrap();
    assert_eq!(v["state"], "Stopped");
    assert_eq!(start.0, 200, "{start:?}");
    assert!(start.2.contains("\"ok\":true"), "{start:?}");
    assert_eq!(direct.0, 401, "the page itself needs the key: {direct:?}");
}

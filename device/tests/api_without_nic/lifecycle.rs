//! The daemon's life: degraded start and NIC resolution, configuration reload and a broken
//! configuration at launch, stop from any state, SIGTERM draining, JSON logs, a corrupt
//! persistence file and a broken settings file.

use std::io::Write;
use std::time::{Duration, Instant};

use crate::common::*;
use crate::root;
use serde_json::{json, Value};

/// Spec 1.8, 3 (row "NIC missing"), 4 rule 2: degraded start on the embedded default with no
/// settings file at all: the process stays alive in ConfigError, errorCode = OS error (ENODEV),
/// statusMessage and the start response name the NIC.
#[test]
fn spec_1_8_degraded_start_on_embedded_default_reports_config_error() {
    if !root() {
        return;
    }
    let mut d = Daemon::start(DaemonOpts::new().no_settings_file().nic(None), None);
    let s = d.wait_state("ConfigError");
    assert_eq!(s["errorCode"], 19, "ENODEV: {s}");
    let msg = s["statusMessage"].as_str().unwrap();
    assert!(msg.contains("'pn0'") && msg.contains("not found"), "{msg}");
    assert_eq!(s["waitReason"], "ConfigError");
    assert_eq!(s["hardwarePortPresent"], false);
    let r = d.post_empty("/api/start");
    assert_eq!(r["ok"], false);
    assert!(r["message"].as_str().unwrap().contains("pn0"), "{r}");
    assert_eq!(r["errorCode"], 19);
    assert!(r["timestamp"].is_string());
    // still alive and serving
    assert!(d.child.as_mut().unwrap().try_wait().unwrap().is_none());
    assert_eq!(d.status()["state"], "ConfigError");
}

/// Spec 1.7: VENDOR_PNET_NIC wins over the XML and the settings default.
#[test]
fn spec_1_7_nic_resolution_env_first() {
    if !root() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let xml = dir.path().join("c.xml");
    write_config(&xml, "dev-a", Some("xmlnic0"), 4, 4);
    let d = Daemon::start(
        DaemonOpts::new().nic(Some("envnic0")).config(xml.clone()),
        None,
    );
    let r = d.post_empty("/api/start");
    assert!(r["message"].as_str().unwrap().contains("envnic0"), "{r}");
    let d2 = Daemon::start(DaemonOpts::new().nic(None).config(xml), None);
    let r = d2.post_empty("/api/start");
    assert!(r["message"].as_str().unwrap().contains("xmlnic0"), "{r}");
    let d3 = Daemon::start(
        DaemonOpts::new()
            .nic(None)
            .set("Network:DefaultInterfaceName", json!("setnic0")),
        None,
    );
    let r = d3.post_empty("/api/start");
    assert!(r["message"].as_str().unwrap().contains("setnic0"), "{r}");
}
/// Spec 3 rule 1, 4 rule 4, 2.9: reload accepted in every state; a bad XML gives ok=false with
/// the reason and keeps the running configuration; sizes change only at the next fresh start.
#[test]
fn spec_4_rule_4_config_reload() {
    if !root() {
        return;
    }
    let d = Daemon::start(DaemonOpts::new(), None);
    let bad = d.path("bad.xml");
    std::fs::write(&bad, "<PnDeviceConfiguration><StationName>x</Station").unwrap();
    let r = d.post(
        "/api/config/reload",
        json!({"path": bad.display().to_string()}),
    );
    assert_eq!(r["ok"], false);
    assert_eq!(r["errorCode"], -2);
    assert!(r["message"].as_str().unwrap().contains("XML error"), "{r}");
    assert!(r["timestamp"].is_string());
    assert_eq!(d.status()["configStationName"], "pn-device");
    let nodap = d.path("nodap.xml");
    std::fs::write(&nodap, "<C><StationName>x</StationName><VendorID>1</VendorID><DeviceID>1</DeviceID><SlotLayout/></C>").unwrap();
    let r = d.post(
        "/api/config/reload",
        json!({"path": nodap.display().to_string()}),
    );
    assert_eq!(r["ok"], false);
    assert!(r["message"].as_str().unwrap().contains("DAP"), "{r}");
    let r = d.post(
        "/api/config/reload",
        json!({"path": d.path("missing.xml").display().to_string()}),
    );
    assert_eq!(r["ok"], false);
    let good = d.path("good.xml");
    write_config(&good, "reloaded-name", None, 100, 7);
    let r = d.post(
        "/api/config/reload",
        json!({"path": good.display().to_string()}),
    );
    assert_eq!(r["ok"], true, "{r}");
    assert_eq!(r["errorCode"], 0);
    assert_eq!(d.status()["configStationName"], "reloaded-name");
    let io = d.get("/api/io");
    assert_eq!(
        (io["inputLength"].as_i64(), io["outputLength"].as_i64()),
        (Some(32), Some(32))
    );
    // empty body: reload the current path
    let r = d.post_empty("/api/config/reload");
    assert_eq!(r["ok"], true);
    for body in ["[1]", r#"{"path":5}"#, "x"] {
        assert_track1(&d.req("POST", "/api/config/reload", Some(body)), 400);
    }
    // in ConfigError too (spec 3 rule 1)
    d.post_empty("/api/start");
    assert_eq!(d.status()["state"], "ConfigError");
    assert_eq!(d.post_empty("/api/config/reload")["ok"], true);
}

/// Spec 2.11: a daemon whose configuration XML is broken at launch stays up; start reports it
/// (ConfigError, errorCode -2) until a reload succeeds.
#[test]
fn spec_2_11_bad_config_at_launch_is_reported() {
    if !root() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let xml = dir.path().join("broken.xml");
    std::fs::write(&xml, "<oops>").unwrap();
    let d = Daemon::start(DaemonOpts::new().config(xml.clone()), None);
    let s = d.status();
    assert_eq!(s["errorCode"], -2);
    assert!(
        s["statusMessage"].as_str().unwrap().contains("XML error"),
        "{s}"
    );
    let r = d.post_empty("/api/start");
    assert_eq!(r["ok"], false);
    assert_eq!(r["errorCode"], -2);
    assert_eq!(d.status()["state"], "ConfigError");
    write_config(&xml, "fixed", None, 1, 1);
    assert_eq!(d.post_empty("/api/config/reload")["ok"], true);
    let r = d.post_empty("/api/start");
    assert_eq!(r["errorCode"], 19, "now the NIC is the problem: {r}");
}

/// Spec 3 (stop from any state, including already stopped / ConfigError).
#[test]
fn spec_3_stop_always_goes_to_stopped() {
    if !root() {
        return;
    }
    let d = Daemon::start(DaemonOpts::new(), None);
    let r = d.post_empty("/api/stop");
    assert_eq!(r["ok"], true);
    assert_eq!(r["errorCode"], 0);
    d.post_empty("/api/start");
    assert_eq!(d.status()["state"], "ConfigError");
    let r = d.post_empty("/api/stop");
    assert_eq!(r["ok"], true);
    let s = d.status();
    assert_eq!(s["state"], "Stopped");
    assert_eq!(s["errorCode"], 0);
    assert_eq!(s["statusMessage"], "");
}

/// Spec 8 (drain up to 3 s), issue item 10: SIGTERM with a request in progress exits cleanly
/// within the drain time (+ teardown bound).
#[test]
fn spec_8_sigterm_drains_and_exits() {
    if !root() {
        return;
    }
    let mut d = Daemon::start(DaemonOpts::new(), None);
    // 1. a request that is provably in progress: the handler polled the body, so hyper sent
    //    "100 Continue"; it completes only after the shutdown signal (drain lets it finish).
    let body = r#"{"offset":0,"data":"0102"}"#;
    let mut s = d.ns.connect().unwrap();
    write!(
        s,
        "POST /api/io HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .unwrap();
    let mut got = Vec::new();
    let mut byte = [0u8; 1];
    while !got.ends_with(b"\r\n\r\n") {
        std::io::Read::read_exact(&mut s, &mut byte).unwrap();
        got.push(byte[0]);
    }
    assert!(String::from_utf8_lossy(&got).contains("100 Continue"));
    let t0 = Instant::now();
    d.signal(libc::SIGTERM);
    wait_for("shutdown started", Duration::from_secs(3), || {
        d.log_text().contains("shutting down").then_some(())
    });
    s.write_all(body.as_bytes()).unwrap();
    let r = read_response(&mut s).unwrap();
    assert_eq!(
        r.status, 200,
        "in-flight request completed during the drain: {}",
        r.body
    );
    // 2. a request that never completes is cut off after the drain time
    let st = d.wait_exit(Duration::from_secs(8));
    assert!(st.success(), "{st}");
    assert!(t0.elapsed() < Duration::from_secs(6), "{:?}", t0.elapsed());
    // 3. a body that never arrives does not keep the daemon beyond drain + teardown bound
    let mut d3 = Daemon::start(DaemonOpts::new(), None);
    let mut s3 = d3.ns.connect().unwrap();
    s3.write_all(
        b"POST /api/io HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 30\r\n\r\n",
    )
    .unwrap();
    let mut got = Vec::new();
    while !got.ends_with(b"\r\n\r\n") {
        std::io::Read::read_exact(&mut s3, &mut byte).unwrap();
        got.push(byte[0]);
    }
    let t0 = Instant::now();
    d3.signal(libc::SIGTERM);
    assert!(d3.wait_exit(Duration::from_secs(8)).success());
    let el = t0.elapsed();
    assert!(
        el >= Duration::from_millis(2900) && el < Duration::from_secs(6),
        "{el:?}"
    );
    let mut d2 = Daemon::start(DaemonOpts::new(), None);
    d2.signal(libc::SIGINT);
    assert!(d2.wait_exit(Duration::from_secs(6)).success());
}

/// Issue item 10: JSON log lines with --log-format json.
#[test]
fn json_logs_with_flag() {
    if !root() {
        return;
    }
    let d = Daemon::start(DaemonOpts::new().arg("--log-format").arg("json"), None);
    d.post_empty("/api/start");
    let text = d.log_text();
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    assert!(lines.len() >= 2);
    for l in lines {
        let v: Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"));
        assert!(v["level"].is_string() && v["timestamp"].is_string(), "{v}");
    }
}

/// Issue item 7: a corrupt persistence file is reported (alarm + log) and ignored, no crash.
#[test]
fn corrupt_persistence_file_is_reported_and_ignored() {
    if !root() {
        return;
    }
    let ns = Netns::new();
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("persist")).unwrap();
    std::fs::write(
        dir.path().join("persist/remanent.json"),
        b"{\"stationName\": [garbage",
    )
    .unwrap();
    let d = Daemon::start_in(ns, dir, DaemonOpts::new());
    let s = d.status();
    assert_eq!(s["masterStationName"], "");
    let alarms = d.get("/api/alarms");
    assert!(
        alarms
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a["source"] == "persistence"),
        "{alarms}"
    );
    assert!(d.path("persist/remanent.json.corrupt").exists());
    assert!(d.log_text().contains("corrupt"));
}

/// A broken settings file given explicitly stops the launch with a clear message (exit 2).
#[test]
fn broken_settings_file_is_a_clear_launch_error() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.json");
    std::fs::write(&p, r#"{"Api":{"ApiKey":7}}"#).unwrap();
    let out = std::process::Command::new(BIN)
        .arg("--settings")
        .arg(&p)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("Api:ApiKey must be a string"));
}

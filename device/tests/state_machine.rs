//! State machine (spec section 3), licence gate (1.10), delivery rule (1.9, 7.3) and
//! persistence with a real NIC: every test creates a veth pair inside a fresh network namespace
//! and runs the real daemon there.
//!
//! Tests named `sim_*` use the simulated data plane (`Dev:SimulatedDataPlane`, a test double
//! whose probe and socket binding are real but whose wire side is scripted over a Unix socket)
//! to drive the transitions a controller would cause (DataExchange, Aborted, DCP assignments,
//! record writes) until the PROFINET stack is wired in.

mod common;

use std::time::Duration;

use common::*;
use serde_json::{json, Value};

const NIC: &str = "pnd0";

fn root() -> bool {
    pn_testkit::env::require_root()
}

fn licensed(opts: DaemonOpts) -> DaemonOpts {
    opts.nic(Some(NIC))
}

fn start_licensed(opts: DaemonOpts) -> Daemon {
    let d = Daemon::start(licensed(opts), Some(NIC));
    write_licence(&d.path("licence.json"), 3600, any_binding());
    d
}

/// Spec 3 rows "Stopped -> Initialized", "already running", "stop", rules 2 and 3 (soft stop,
/// reuse when the fingerprint is unchanged, fresh start otherwise); 1.5 driver probe with a real
/// AF_PACKET socket; 2.1 hardwarePortPresent; 4 rule 3 diag when started.
#[test]
fn spec_3_start_stop_reuse_and_fresh_start() {
    if !root() {
        return;
    }
    let d = start_licensed(DaemonOpts::new());
    let r = d.post_empty("/api/start");
    assert_eq!(r["ok"], true, "{r}");
    assert_eq!(r["errorCode"], 0);
    assert!(
        r["message"].as_str().unwrap().contains("fresh start"),
        "{r}"
    );
    let s = d.status();
    assert_eq!(s["state"], "Initialized");
    assert_eq!(s["connected"], false);
    assert_eq!(s["everConnected"], false);
    assert_eq!(s["errorCode"], 0);
    assert_eq!(s["hardwarePortPresent"], true);
    // the raw-socket plane runs no PROFINET: it never claims a connection
    assert_eq!(s["waitReason"], "WaitingForController");
    let diag = d.get("/api/diag");
    assert_eq!(diag["ok"], true);
    assert_eq!(diag["linkUp"], true);
    assert_eq!(diag["inputAreaLength"], 32);
    for k in [
        "rxFrames",
        "txFrames",
        "heartbeat",
        "cycleCounter",
        "stackCycles",
        "watchdogTrips",
        "stackAlarmTxAckFail",
        "activeIocrCount",
        "lastError",
        "stackMaxJitterUs",
    ] {
        assert!(diag[k].is_i64(), "{k}: {diag}");
    }
    let r = d.post_empty("/api/start");
    assert_eq!(r["ok"], true);
    assert!(r["message"].as_str().unwrap().contains("ignored"), "{r}");
    let r = d.post_empty("/api/stop");
    assert_eq!(r["ok"], true);
    let s = d.status();
    assert_eq!(
        (s["state"].as_str(), s["statusMessage"].as_str()),
        (Some("Stopped"), Some(""))
    );
    let r = d.post_empty("/api/start");
    assert!(
        r["message"].as_str().unwrap().contains("instance reused"),
        "{r}"
    );
    d.post_empty("/api/stop");
    // a reload that changes a fingerprint input (station name) forces a fresh start
    let xml = d.path("c.xml");
    write_config(&xml, "other-name", None, 32, 32);
    assert_eq!(
        d.post(
            "/api/config/reload",
            json!({"path": xml.display().to_string()})
        )["ok"],
        true
    );
    let r = d.post_empty("/api/start");
    assert!(
        r["message"].as_str().unwrap().contains("fresh start"),
        "{r}"
    );
    assert_eq!(d.status()["state"], "Initialized");
}

/// Spec 3 row "ConfigError + reloaded with a valid NIC -> Initialized (fresh start)".
#[test]
fn spec_3_config_error_then_reload_with_valid_nic() {
    if !root() {
        return;
    }
    let d = Daemon::start(DaemonOpts::new().nic(None), Some(NIC));
    write_licence(&d.path("licence.json"), 3600, any_binding());
    let bad = d.path("bad-nic.xml");
    write_config(&bad, "dev", Some("absent9"), 8, 8);
    d.post(
        "/api/config/reload",
        json!({"path": bad.display().to_string()}),
    );
    let r = d.post_empty("/api/start");
    assert_eq!(r["ok"], false);
    assert_eq!(r["errorCode"], 19);
    let s = d.status();
    assert_eq!(s["state"], "ConfigError");
    assert!(s["statusMessage"].as_str().unwrap().contains("absent9"));
    // still ConfigError without a reload
    assert_eq!(d.post_empty("/api/start")["ok"], false);
    let good = d.path("good.xml");
    write_config(&good, "dev", Some(NIC), 8, 8);
    assert_eq!(
        d.post(
            "/api/config/reload",
            json!({"path": good.display().to_string()})
        )["ok"],
        true
    );
    let r = d.post_empty("/api/start");
    assert_eq!(r["ok"], true, "{r}");
    assert!(r["message"].as_str().unwrap().contains("fresh start"));
    assert_eq!(d.status()["state"], "Initialized");
    // sizes of the new layout apply at this fresh start (spec 4 rule 4)
    let io = d.get("/api/io");
    assert_eq!(
        (io["inputLength"].as_i64(), io["outputLength"].as_i64()),
        (Some(8), Some(8))
    );
}

/// Spec 1.10: a missing, expired, foreign-signed or foreign-bound certificate refuses the start.
#[test]
fn spec_1_10_invalid_licence_refuses_start() {
    if !root() {
        return;
    }
    let d = Daemon::start(licensed(DaemonOpts::new()), Some(NIC));
    let lic = d.path("licence.json");
    let check_refused = |what: &str| {
        let r = d.post_empty("/api/start");
        assert_eq!(r["ok"], false, "{what}: {r}");
        assert_eq!(r["errorCode"], -1, "{what}");
        assert!(
            r["message"].as_str().unwrap().contains("licence"),
            "{what}: {r}"
        );
        let s = d.status();
        assert_eq!(s["state"], "Stopped", "{what}");
        assert_eq!(s["waitReason"], "LicenceInvalid", "{what}");
        assert!(s["criticalAlarmCount"].as_i64().unwrap() >= 1);
    };
    check_refused("missing");
    write_licence(&lic, -10, any_binding());
    check_refused("expired");
    let b = pn_device::licence::Binding {
        machine_id: Some("not-this-machine".into()),
        mac: None,
        any: None,
    };
    write_licence(&lic, 3600, b);
    check_refused("bound elsewhere");
    let (sk, _pk) = pn_device::licence::keygen().unwrap();
    let foreign = pn_device::licence::parse_private_key(&sk).unwrap();
    let now = pn_device::util::unix_now();
    let p = pn_device::licence::Payload {
        licensee: "x".into(),
        product: "pn-device".into(),
        serial: "1".into(),
        issued_at: now,
        not_before: now - 10,
        not_after: now + 3600,
        binding: any_binding(),
    };
    std::fs::write(&lic, pn_device::licence::issue(&foreign, &p)).unwrap();
    check_refused("foreign key");
    std::fs::write(&lic, "{ not a certificate").unwrap();
    check_refused("garbage");
    // bound to this machine's id -> accepted
    let b = pn_device::licence::Binding {
        machine_id: pn_device::licence::Identity::current(None).machine_id,
        mac: None,
        any: None,
    };
    if b.machine_id.is_some() {
        write_licence(&lic, 3600, b);
    } else {
        write_licence(&lic, 3600, any_binding());
    }
    let r = d.post_empty("/api/start");
    assert_eq!(r["ok"], true, "{r}");
    assert_eq!(d.status()["waitReason"], "WaitingForController");
}

/// Spec 1.10 + section 3 row "running, periodic licence recheck fails -> Stopped".
#[test]
fn spec_1_10_periodic_recheck_stops_the_slave() {
    if !root() {
        return;
    }
    let d = Daemon::start(
        licensed(DaemonOpts::new().set("Licence:RecheckIntervalSeconds", json!(0.2))),
        Some(NIC),
    );
    write_licence(&d.path("licence.json"), 3600, any_binding());
    assert_eq!(d.post_empty("/api/start")["ok"], true);
    // the certificate is replaced by one that has expired
    write_licence(&d.path("licence.json"), -1, any_binding());
    let s = d.wait_state("Stopped");
    assert!(
        s["statusMessage"].as_str().unwrap().contains("licence"),
        "{s}"
    );
    assert_eq!(s["waitReason"], "LicenceInvalid");
    let alarms = d.get("/api/alarms");
    assert!(alarms
        .as_array()
        .unwrap()
        .iter()
        .any(|a| a["source"] == "licence" && a["severity"] == "Critical"));
}

/// Spec 1.9, 7.3 with the raw-socket plane (no PROFINET): running + link up but no data
/// exchange -> NotFlushed; link down -> LinkDown; stopped -> DataPlaneStopped. Never lost.
#[test]
fn spec_7_3_reason_codes_with_real_link_state() {
    if !root() {
        return;
    }
    let d = start_licensed(DaemonOpts::new());
    d.post_empty("/api/start");
    let r = d.post("/api/io", json!({"offset": 0, "data": "01"}));
    assert_eq!(r["reasonCode"], "PnS.Io.NotDelivered.NotFlushed");
    assert_eq!(r["state"], "Initialized");
    d.ns.set_link(&format!("{NIC}p"), false);
    wait_for("link-down alarm", Duration::from_secs(5), || {
        let a = d.get("/api/alarms");
        a.as_array()
            .unwrap()
            .iter()
            .any(|a| a["source"] == "link")
            .then_some(())
    });
    assert_eq!(d.status()["waitReason"], "LinkDown");
    let r = d.post("/api/io", json!({"offset": 1, "data": "02"}));
    assert_eq!(r["ok"], false);
    assert_eq!(r["reasonCode"], "PnS.Io.NotDelivered.LinkDown");
    assert_eq!(r["waitReason"], "LinkDown");
    assert_eq!(r["queued"], true);
    assert_eq!(r["errorCode"], 0, "a dropped link is not an error code");
    d.ns.set_link(&format!("{NIC}p"), true);
    wait_for("link up seen", Duration::from_secs(5), || {
        (d.status()["waitReason"] == "WaitingForController").then_some(())
    });
    assert_eq!(d.status()["alarmCount"], 0, "link alarm cleared");
    d.post_empty("/api/stop");
    let r = d.post("/api/io", json!({"offset": 2, "data": "03"}));
    assert_eq!(r["reasonCode"], "PnS.Io.NotDelivered.DataPlaneStopped");
    assert_eq!(
        &d.get("/api/io")["outputHex"].as_str().unwrap()[..6],
        "010203"
    );
}

fn sim_daemon() -> Daemon {
    start_licensed(DaemonOpts::new().sim())
}

/// Spec 3 rows "Initialized -> DataExchange", "DataExchange -> Aborted (everConnected stays
/// true)"; 2.2/2.4/7.3 delivery: delivered writes have ok=true and empty reasonCode,
/// outputSyncedToDriver/outputValid; a write the cyclic side has not taken -> NotFlushed and is
/// sent later without a resend; I-area data from the controller shows in inputHex.
#[test]
fn sim_spec_3_data_exchange_delivery_and_abort() {
    if !root() {
        return;
    }
    let d = sim_daemon();
    assert_eq!(d.post_empty("/api/start")["ok"], true);
    d.sim(json!({"event": "connected", "controller": "plc-1"}));
    let s = d.wait_state("DataExchange");
    assert_eq!(
        (s["connected"].as_bool(), s["everConnected"].as_bool()),
        (Some(true), Some(true))
    );
    assert_eq!(s["waitReason"], "");
    let r = d.post("/api/io", json!({"offset": 4, "data": "deadbeef"}));
    assert_eq!(r["ok"], true, "{r}");
    assert_eq!(r["delivered"], true);
    assert_eq!(r["queued"], true);
    assert_eq!(r["connected"], true);
    assert_eq!(r["reasonCode"], "");
    assert_eq!(r["message"], "");
    assert_eq!(r["waitReason"], "");
    let io = d.get("/api/io");
    assert_eq!(io["outputSyncedToDriver"], true);
    assert_eq!(io["outputValid"], true);
    assert_eq!(io["outputIopsHex"], "80");
    assert_eq!(&io["outputHex"].as_str().unwrap()[8..16], "deadbeef");
    // the cyclic side pauses: the write is held -> NotFlushed, then sent without a resend
    d.sim(json!({"cmd": "pause"}));
    let r = d.post("/api/io", json!({"offset": 0, "data": "11"}));
    assert_eq!(r["ok"], false);
    assert_eq!(r["reasonCode"], "PnS.Io.NotDelivered.NotFlushed");
    assert_eq!(r["queued"], true);
    let io = d.get("/api/io");
    assert_eq!(io["outputSyncedToDriver"], false);
    assert_eq!(io["outputValid"], false);
    d.sim(json!({"cmd": "resume"}));
    wait_for("held write sent", Duration::from_secs(5), || {
        (d.get("/api/io")["outputSyncedToDriver"] == true).then_some(())
    });
    // I area from the controller
    d.sim(json!({"cmd": "writeInput", "dataHex": "0102030405", "iops": 128, "iocs": 128}));
    let io = d.get("/api/io");
    assert_eq!(&io["inputHex"].as_str().unwrap()[..10], "0102030405");
    assert_eq!(io["inputValid"], true);
    assert_eq!(io["inputIopsHex"], "80");
    assert_eq!(io["outputIocsHex"], "80");
    let diag = d.get("/api/diag");
    assert!(diag["stackCycles"].as_i64().unwrap() > 0);
    // connection lost
    d.sim(json!({"event": "aborted", "reason": "watchdog"}));
    let s = d.wait_state("Aborted");
    assert_eq!(
        (s["connected"].as_bool(), s["everConnected"].as_bool()),
        (Some(false), Some(true))
    );
    assert_eq!(s["waitReason"], "ConnectionLost");
    let io = d.get("/api/io");
    assert_eq!(io["inputValid"], false);
    let r = d.post("/api/io", json!({"offset": 0, "data": "22"}));
    assert_eq!(r["reasonCode"], "PnS.Io.NotDelivered.NotFlushed");
    assert_eq!(r["state"], "Aborted");
    // reconnect
    d.sim(json!({"event": "connected", "controller": "plc-1"}));
    d.wait_state("DataExchange");
    wait_for(
        "write from the aborted phase sent",
        Duration::from_secs(5),
        || (d.get("/api/io")["outputSyncedToDriver"] == true).then_some(()),
    );
    // link down during data exchange -> LinkDown
    d.ns.set_link(&format!("{NIC}p"), false);
    wait_for("link down", Duration::from_secs(5), || {
        let r = d.post("/api/io", json!({"offset": 0, "data": "33"}));
        (r["reasonCode"] == "PnS.Io.NotDelivered.LinkDown").then_some(())
    });
    d.ns.set_link(&format!("{NIC}p"), true);
    wait_for(
        "kept write sent after link recovery",
        Duration::from_secs(5),
        || (d.get("/api/io")["outputSyncedToDriver"] == true).then_some(()),
    );
    assert_eq!(&d.get("/api/io")["outputHex"].as_str().unwrap()[..2], "33");
    // stop: Stopped, everConnected stays
    d.post_empty("/api/stop");
    let s = d.status();
    assert_eq!(s["state"], "Stopped");
    assert_eq!(s["everConnected"], true);
}

/// Spec 3 rule 3: the data plane sees Start(Reuse) after a soft stop with an unchanged
/// fingerprint, and Teardown + Start(Fresh) when it changed; Q content survives a resize.
#[test]
fn sim_spec_3_rule_3_fingerprint_reuse_and_teardown() {
    if !root() {
        return;
    }
    let d = sim_daemon();
    d.post_empty("/api/start");
    d.post_empty("/api/stop");
    d.post_empty("/api/start");
    d.post("/api/io", json!({"offset": 0, "data": "a1a2a3a4"}));
    // reload while running: accepted, sizes unchanged until the next fresh start (spec 4 rule 4)
    let xml = d.path("c.xml");
    write_config(&xml, "pn-device", None, 2, 3);
    let r = d.post(
        "/api/config/reload",
        json!({"path": xml.display().to_string()}),
    );
    assert_eq!(r["ok"], true);
    assert_eq!(d.status()["state"], "Initialized");
    let io = d.get("/api/io");
    assert_eq!(
        (io["inputLength"].as_i64(), io["outputLength"].as_i64()),
        (Some(32), Some(32))
    );
    d.post_empty("/api/stop");
    d.post_empty("/api/start");
    let cmds = d.sim(json!({"cmd": "commands"}))["commands"].clone();
    let cmds: Vec<String> = serde_json::from_value(cmds).unwrap();
    let starts: Vec<&String> = cmds
        .iter()
        .filter(|c| c.starts_with("Start") || *c == "Teardown")
        .collect();
    assert_eq!(
        starts,
        ["Start(Fresh)", "Start(Reuse)", "Teardown", "Start(Fresh)"],
        "{cmds:?}"
    );
    let io = d.get("/api/io");
    assert_eq!(
        (io["inputLength"].as_i64(), io["outputLength"].as_i64()),
        (Some(2), Some(3))
    );
    assert_eq!(
        io["outputHex"], "a1a2a3",
        "held Q content kept across the resize"
    );
}

/// Spec 4 rule 5 + issue item 6: diagnosis entries and the timer switch reach the data plane;
/// entries made before the start are replayed at start.
#[test]
fn sim_diag_and_timer_commands_reach_the_data_plane() {
    if !root() {
        return;
    }
    let d = sim_daemon();
    d.post(
        "/api/diag",
        json!({"slot":1,"subslot":1,"errorType":256,"severity":2,"text":"early"}),
    );
    d.post_empty("/api/start");
    d.post(
        "/api/diag",
        json!({"slot":1,"subslot":1,"channel":1,"errorType":1,"severity":0}),
    );
    d.post(
        "/api/diag",
        json!({"action":"remove","slot":1,"subslot":1,"channel":1,"errorType":1}),
    );
    d.post("/api/high-resolution-timer", json!({"enable": true}));
    let cmds: Vec<String> =
        serde_json::from_value(d.sim(json!({"cmd": "commands"}))["commands"].clone()).unwrap();
    assert!(
        cmds.iter()
            .any(|c| c.starts_with("SetDiagnosis") && c.contains("early")),
        "{cmds:?}"
    );
    assert!(
        cmds.iter()
            .any(|c| c.starts_with("SetDiagnosis") && c.contains("channel: 1")),
        "{cmds:?}"
    );
    assert!(
        cmds.iter().any(|c| c.starts_with("RemoveDiagnosis")),
        "{cmds:?}"
    );
    assert!(
        cmds.iter().any(|c| c == "SetHighResolutionTimer(true)"),
        "{cmds:?}"
    );
    let diag = d.get("/api/diag");
    assert_eq!(diag["diagnoses"].as_array().unwrap().len(), 1);
}

/// Wait until the remanent file holds what `ok` accepts. Persisting runs right after the
/// in-memory update an observer sees first (docs/decisions.md §13), so a test that kills the
/// daemon must wait for the file, not for the API.
fn wait_persisted(d: &common::Daemon, what: &str, ok: impl Fn(&serde_json::Value) -> bool) {
    let path = d.path("persist/remanent.json");
    wait_for(what, Duration::from_secs(5), || {
        let v = std::fs::read_to_string(&path)
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .unwrap_or(serde_json::Value::Null);
        ok(&v).then_some(())
    });
}

/// Issue item 7 + spec 2.1/2.7/2.8: station name and IP set permanently over DCP, I&M1 and a
/// user record survive `kill -9`; temporary assignments do not (and erase the stored ones);
/// factory reset clears them.
#[test]
fn sim_persistence_survives_kill9_and_factory_reset_clears() {
    if !root() {
        return;
    }
    let mut d = sim_daemon();
    d.post_empty("/api/start");
    d.sim(json!({"event": "dcpNameAssigned", "name": "line-7-io", "permanent": true}));
    d.sim(
        json!({"event": "dcpIpAssigned", "ip": "10.1.2.3", "mask": "255.255.255.0",
        "gateway": "10.1.2.1", "permanent": true, "applied": {"Ok": null}}),
    );
    let mut im1 = vec![0x00, 0x21, 0x00, 0x38, 0x01, 0x00];
    im1.extend_from_slice(format!("{:<32}{:<22}", "pump-control", "hall-2").as_bytes());
    d.sim(
        json!({"event": "recordWritten", "slot": 0, "subslot": 1, "index": 0xAFF1,
        "data": im1}),
    );
    d.sim(
        json!({"event": "recordWritten", "slot": 1, "subslot": 1, "index": 0x0042,
        "data": [1, 2, 3]}),
    );
    let s = wait_for("DCP assignments applied", Duration::from_secs(5), || {
        let s = d.status();
        (s["masterAssignedIp"] == "10.1.2.3").then_some(s)
    });
    assert_eq!(s["masterStationName"], "line-7-io");
    assert_eq!(s["masterAssignedMask"], "255.255.255.0");
    assert_eq!(s["masterAssignedGateway"], "10.1.2.1");
    assert_eq!(s["dcpIpApplied"], true);
    let recs = wait_for("records", Duration::from_secs(5), || {
        let r = d.get("/api/records");
        (r["count"] == 2).then_some(r)
    });
    let r0 = &recs["records"][1];
    assert_eq!(
        (
            r0["slot"].as_i64(),
            r0["index"].as_i64(),
            r0["length"].as_i64()
        ),
        (Some(1), Some(0x42), Some(3))
    );
    assert_eq!(r0["dataHex"], "010203");
    wait_persisted(&d, "records persisted", |v| {
        v["records"].as_array().is_some_and(|a| a.len() == 2) && v["stationName"] == "line-7-io"
    });
    // kill -9 and restart with the same persistence directory
    d.kill9();
    d.spawn();
    let s = d.status();
    assert_eq!(s["masterStationName"], "line-7-io");
    assert_eq!(s["masterAssignedIp"], "10.1.2.3");
    let im = d.get("/api/im");
    assert_eq!(im["im1TagFunction"], "pump-control");
    assert_eq!(im["im1TagLocation"], "hall-2");
    assert_eq!(im["stationName"], "line-7-io");
    assert_eq!(d.get("/api/records")["count"], 2);
    // a temporary assignment is not persisted
    d.post_empty("/api/start");
    d.sim(json!({"event": "dcpNameAssigned", "name": "temp-name", "permanent": false}));
    wait_for("temp name", Duration::from_secs(5), || {
        (d.status()["masterStationName"] == "temp-name").then_some(())
    });
    // DCP IP that could not be applied
    d.sim(
        json!({"event": "dcpIpAssigned", "ip": "10.9.9.9", "mask": "255.0.0.0",
        "gateway": "0.0.0.0", "permanent": false, "applied": {"Err": "EPERM"}}),
    );
    let s = wait_for("ip not applied", Duration::from_secs(5), || {
        let s = d.status();
        (s["dcpIpApplied"] == false
            && s["dcpIpApplyMessage"]
                .as_str()
                .is_some_and(|m| m.contains("10.9.9.9")))
        .then_some(s)
    });
    assert!(s["dcpIpApplyMessage"].as_str().unwrap().contains("EPERM"));
    wait_persisted(&d, "temporary assignments erased the stored ones", |v| {
        v["stationName"].is_null() && v["ip"].is_null()
    });
    d.kill9();
    d.spawn();
    // a temporary assignment also erased the stored permanent ones (p-net semantics,
    // docs/decisions.md §13): the device comes up with its configured name and IP
    let s = d.status();
    assert_eq!(s["masterStationName"], "");
    assert_eq!(s["masterAssignedIp"], "");
    // communication reset clears name/IP but keeps I&M and records
    let r = d.post("/api/reset", json!({"mode": "communication"}));
    assert_eq!(r["ok"], true);
    d.kill9();
    d.spawn();
    let s = d.status();
    assert_eq!(s["masterStationName"], "");
    assert_eq!(s["masterAssignedIp"], "");
    assert_eq!(d.get("/api/im")["im1TagFunction"], "pump-control");
    // factory reset clears everything remanent
    d.post("/api/reset", json!({"mode": "factory"}));
    d.kill9();
    d.spawn();
    assert_eq!(d.get("/api/im")["im1TagFunction"], "");
    assert_eq!(d.get("/api/records")["count"], 0);
    // What stays on disk is only that the NameOfStation was erased (docs/decisions.md §21).
    let v: Value =
        serde_json::from_slice(&std::fs::read(d.path("persist/remanent.json")).unwrap()).unwrap();
    assert_eq!(v["stationName"], Value::Null, "{v}");
    assert_eq!(v["nameCleared"], true, "{v}");
    assert_eq!(v["records"], json!([]), "{v}");
    assert_eq!(d.get("/api/im")["stationName"], "");
}

/// DCP ResetToFactory from the controller acts like POST /api/reset factory.
#[test]
fn sim_dcp_reset_to_factory_clears_remanent_data() {
    if !root() {
        return;
    }
    let mut d = sim_daemon();
    d.post_empty("/api/start");
    d.sim(json!({"event": "dcpNameAssigned", "name": "keep-me", "permanent": true}));
    wait_for("name", Duration::from_secs(5), || {
        (d.status()["masterStationName"] == "keep-me").then_some(())
    });
    wait_persisted(&d, "name persisted", |v| v["stationName"] == "keep-me");
    d.sim(json!({"event": "dcpResetToFactory", "qualifier": 8, "mode": "factory"}));
    wait_for("reset", Duration::from_secs(5), || {
        (d.status()["masterStationName"] == "").then_some(())
    });
    wait_persisted(&d, "reset persisted", |v| v["stationName"].is_null());
    d.kill9();
    d.spawn();
    assert_eq!(d.status()["masterStationName"], "");
}

/// Spec 1.10 / docs/licence.md: a certificate bound to the MAC of the PROFINET NIC is accepted
/// on that NIC.
#[test]
fn spec_1_10_mac_bound_licence() {
    if !root() {
        return;
    }
    let d = Daemon::start(licensed(DaemonOpts::new()), Some(NIC));
    let out = std::process::Command::new("ip")
        .args(["-n", &d.ns.name, "-j", "link", "show", NIC])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mac = v[0]["address"].as_str().unwrap().to_uppercase();
    let other = pn_device::licence::Binding {
        machine_id: None,
        mac: Some("02:00:00:00:00:01".into()),
        any: None,
    };
    write_licence(&d.path("licence.json"), 3600, other);
    assert_eq!(d.post_empty("/api/start")["ok"], false);
    let b = pn_device::licence::Binding {
        machine_id: None,
        mac: Some(mac),
        any: None,
    };
    write_licence(&d.path("licence.json"), 3600, b);
    let r = d.post_empty("/api/start");
    assert_eq!(r["ok"], true, "{r}");
}

/// Spec 1.5 / 1.8 / section 3: without the raw-socket capability (CAP_NET_RAW dropped) the
/// driver probe fails: ConfigError with errorCode = EPERM, the NIC and the reason named; no
/// fallback path.
#[test]
fn spec_1_5_no_raw_socket_capability_is_config_error() {
    if !root() {
        return;
    }
    if !pn_testkit::env::require(pn_testkit::env::has_tool("setpriv"), "setpriv (util-linux)") {
        return;
    }
    let d = Daemon::start(
        licensed(DaemonOpts::new()).wrap(&[
            "setpriv",
            "--bounding-set",
            "-net_raw",
            "--inh-caps",
            "-net_raw",
        ]),
        Some(NIC),
    );
    write_licence(&d.path("licence.json"), 3600, any_binding());
    let r = d.post_empty("/api/start");
    assert_eq!(r["ok"], false, "{r}");
    assert_eq!(r["errorCode"], 1, "EPERM: {r}");
    let s = d.status();
    assert_eq!(s["state"], "ConfigError");
    let m = s["statusMessage"].as_str().unwrap();
    assert!(m.contains(NIC) && m.contains("CAP_NET_RAW"), "{m}");
    assert_eq!(s["hardwarePortPresent"], true);
    assert!(d.log_text().contains("start refused"));
}

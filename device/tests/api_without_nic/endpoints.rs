//! The API endpoints without a NIC: I/O write bodies and writes while stopped, the status fields,
//! diagnosis, alarms and their history, reset and the high-resolution timer, I&M records, info and
//! the dashboard page.

use crate::common::*;
use crate::root;
use serde_json::json;

/// Spec 2.3, 7.2, 7.1: malformed IoWrite bodies give 400 Track 1 echoing the body; never 5xx.
#[test]
fn spec_7_2_bad_io_write_bodies_are_400_with_echo() {
    if !root() {
        return;
    }
    let d = Daemon::start(DaemonOpts::new(), None);
    let cases = [
        "",
        "not json",
        "[1,2]",
        "null",
        "{}",
        r#"{"data":"00"}"#,
        r#"{"offset":0}"#,
        r#"{"offset":-1,"data":"00"}"#,
        r#"{"offset":1.5,"data":"00"}"#,
        r#"{"offset":"0","data":"00"}"#,
        r#"{"offset":null,"data":"00"}"#,
        r#"{"offset":0,"data":0}"#,
        r#"{"offset":0,"data":"0"}"#,
        r#"{"offset":0,"data":"zz"}"#,
        r#"{"offset":0,"data":"0x00"}"#,
        r#"{"offset":0,"data":"00 11"}"#,
        r#"{"offset":0,"data":""}"#,
        r#"{"offset":32,"data":"00"}"#,
        r#"{"offset":31,"data":"0000"}"#,
        r#"{"offset":1e30,"data":"00"}"#,
        r#"{"offset":18446744073709551615,"data":"00"}"#,
        r#"{"offset":0,"data":"00""#,
        "\u{00ff}\u{0000}",
    ];
    for body in cases {
        let r = d.req("POST", "/api/io", Some(body));
        let v = assert_track1(&r, 400);
        let expected = if body.contains("-1")
            || body.contains(":32,")
            || body.contains(":31,\"data\":\"0000")
            || body.contains("18446744073709551615")
        {
            "PnS.Api.OutOfRange"
        } else {
            "PnS.Api.InvalidBody"
        };
        assert_eq!(v["code"], expected, "{body}");
        assert!(
            v["message"].as_str().unwrap().contains(body),
            "no echo of {body:?}: {v}"
        );
        assert_eq!(v["errorCode"], 0);
    }
    // a valid write at the last byte is accepted (default Q area is 32 bytes)
    assert_eq!(
        d.req("POST", "/api/io", Some(r#"{"offset":31,"data":"AB"}"#))
            .status,
        200
    );
}

/// Spec 1.9, 2.3, 2.4, 4 rule 1, 7.3: a write while the slave is not running is accepted (200),
/// kept, reported with reasonCode DataPlaneStopped and queued=true; GET /api/io shows it as
/// not yet sent.
#[test]
fn spec_2_4_write_while_stopped_is_kept_and_reported() {
    if !root() {
        return;
    }
    let d = Daemon::start(DaemonOpts::new(), None);
    let e0 = d.get("/api/io")["epoch"].as_i64().unwrap();
    let r = d.post("/api/io", json!({"offset": 2, "data": "A1b2"}));
    assert_eq!(r["ok"], false);
    assert_eq!(r["delivered"], false);
    assert_eq!(r["queued"], true);
    assert_eq!(r["connected"], false);
    assert_eq!(r["state"], "Stopped");
    assert_eq!(r["reasonCode"], "PnS.Io.NotDelivered.DataPlaneStopped");
    assert_eq!(r["waitReason"], "NotStarted");
    assert!(!r["message"].as_str().unwrap().is_empty());
    assert_eq!(r["errorCode"], 0);
    assert_eq!(
        (r["offset"].as_i64(), r["length"].as_i64()),
        (Some(2), Some(2))
    );
    let io = d.get("/api/io");
    assert_eq!(&io["outputHex"].as_str().unwrap()[..8], "0000a1b2");
    assert_eq!(io["outputSyncedToDriver"], false);
    assert_eq!(io["outputValid"], false);
    assert!(io["epoch"].as_i64().unwrap() > e0);
    assert_eq!(io["formatVersion"], 2);
    assert_eq!(io["inputLength"], 32);
    assert_eq!(io["outputLength"], 32);
    assert_eq!(io["inputHex"].as_str().unwrap().len(), 64);
    for k in [
        "inputIopsHex",
        "inputIocsHex",
        "outputIopsHex",
        "outputIocsHex",
    ] {
        assert_eq!(io[k].as_str().unwrap().len(), 2, "{k}");
    }
    assert_eq!(d.status()["ioEpoch"], io["epoch"]);
    assert_eq!(d.status()["outputSyncedToDriver"], false);
}

/// Spec 2.1 field set and types; 9.2 version from the workspace; 2.10 timestamp format.
#[test]
fn spec_2_1_status_fields_and_types() {
    if !root() {
        return;
    }
    let d = Daemon::start(DaemonOpts::new(), None);
    let s = d.status();
    let strings = [
        "serviceName",
        "version",
        "state",
        "waitReason",
        "statusMessage",
        "masterAssignedIp",
        "masterAssignedMask",
        "masterAssignedGateway",
        "configStationName",
        "masterStationName",
        "dcpIpApplyMessage",
        "timestamp",
    ];
    for k in strings {
        assert!(s[k].is_string(), "{k}: {s}");
    }
    for k in [
        "connected",
        "everConnected",
        "hardwarePortPresent",
        "dcpIpApplied",
        "outputSyncedToDriver",
    ] {
        assert!(s[k].is_boolean(), "{k}: {s}");
    }
    for k in ["errorCode", "ioEpoch", "criticalAlarmCount", "alarmCount"] {
        assert!(s[k].is_i64(), "{k}: {s}");
    }
    assert_eq!(s["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(s["version"], "1.0.0");
    assert_eq!(s["state"], "Stopped");
    assert_eq!(s["configStationName"], "pn-device");
    let ts = s["timestamp"].as_str().unwrap();
    assert!(
        ts.len() == 24 && ts.ends_with('Z') && &ts[10..11] == "T",
        "{ts}"
    );
}

/// Spec 4 rule 3: GET /api/diag before start: 200, ok=false, no invented counters.
#[test]
fn spec_4_rule_3_diag_not_started() {
    if !root() {
        return;
    }
    let d = Daemon::start(DaemonOpts::new(), None);
    let v = d.get("/api/diag");
    assert_eq!(v["ok"], false);
    for k in [
        "rxFrames",
        "txFrames",
        "heartbeat",
        "cycleCounter",
        "stackCycles",
    ] {
        assert!(v.get(k).is_none(), "{k} must not be invented: {v}");
    }
}

/// Spec 4 rule 5, 7.2: POST /api/diag add/update/remove, severity 0..3 (else 400 Track 1),
/// diagnosis shows as an alarm; counts in status.
#[test]
fn spec_4_rule_5_diag_write_shapes_and_severity() {
    if !root() {
        return;
    }
    let d = Daemon::start(DaemonOpts::new(), None);
    for body in [
        r#"{"slot":1,"subslot":1,"errorType":1,"severity":4}"#,
        r#"{"slot":1,"subslot":1,"errorType":1,"severity":-1}"#,
        r#"{"slot":1,"subslot":1,"errorType":1,"severity":"0"}"#,
        r#"{"slot":1,"subslot":1,"errorType":1,"severity":1.5}"#,
        r#"{"slot":1,"subslot":1,"errorType":1}"#,
        r#"{"subslot":1,"errorType":1,"severity":0}"#,
        r#"{"slot":1,"subslot":1,"errorType":1,"severity":0,"action":"explode"}"#,
        r#"{"slot":99999,"subslot":1,"errorType":1,"severity":0}"#,
        r#"{"slot":1,"subslot":1,"errorType":1,"severity":0,"text":5}"#,
        "[]",
        "garbage",
    ] {
        let v = assert_track1(&d.req("POST", "/api/diag", Some(body)), 400);
        assert!(v["message"].as_str().unwrap().contains(body), "{v}");
    }
    let r = d.post("/api/diag", json!({"action":"add","slot":1,"subslot":1,"channel":3,"errorType":1,"severity":0,"text":"short circuit"}));
    assert_eq!(r["ok"], true, "{r}");
    assert_eq!(r["entryCount"], 1);
    let s = d.status();
    assert_eq!(s["criticalAlarmCount"], 1);
    let alarms = d.get("/api/alarms");
    let a = &alarms.as_array().unwrap()[0];
    assert_eq!(a["severity"], "Critical");
    assert_eq!(a["source"], "diag");
    assert_eq!(a["message"], "short circuit");
    let r = d.post(
        "/api/diag",
        json!({"action":"update","slot":1,"subslot":1,"channel":3,"errorType":1,"severity":3}),
    );
    assert_eq!(r["ok"], true);
    assert_eq!(d.status()["criticalAlarmCount"], 0);
    let r = d.post(
        "/api/diag",
        json!({"action":"update","slot":2,"subslot":1,"errorType":1,"severity":3}),
    );
    assert_eq!(r["ok"], false);
    // A submodule the configuration does not have: refused, no alarm, nothing for the
    // controller.
    let r = d.post(
        "/api/diag",
        json!({"action":"add","slot":7,"subslot":1,"errorType":6,"severity":0}),
    );
    assert_eq!(r["ok"], false, "{r}");
    assert!(
        r["message"]
            .as_str()
            .unwrap()
            .contains("not in the configuration"),
        "{r}"
    );
    assert_eq!(d.status()["alarmCount"], 1, "only the slot 1 diagnosis");
    let r = d.post(
        "/api/diag",
        json!({"action":"remove","slot":1,"subslot":1,"channel":3,"errorType":1}),
    );
    assert_eq!(r["ok"], true);
    assert_eq!(r["entryCount"], 0);
    assert_eq!(d.status()["alarmCount"], 0);
}

/// Spec 2.6, 2.9 (ack result), 4 (alarms endpoints): ids, newest-first order, ack one
/// (acknowledgedCount 0), ack all, history keeps acknowledged ones; bad ack bodies 400.
#[test]
fn spec_2_6_alarms_ack_and_history() {
    if !root() {
        return;
    }
    let d = Daemon::start(DaemonOpts::new(), None);
    for ch in 0..3 {
        d.post(
            "/api/diag",
            json!({"slot":1,"subslot":1,"channel":ch,"errorType":1,"severity":1}),
        );
    }
    let act = d.get("/api/alarms");
    let act = act.as_array().unwrap();
    assert_eq!(act.len(), 3);
    let ids: Vec<u64> = act
        .iter()
        .map(|a| a["id"].as_str().unwrap().parse().unwrap())
        .collect();
    assert!(ids.windows(2).all(|w| w[0] > w[1]), "newest first: {ids:?}");
    for a in act {
        assert!(a["occurredAt"].is_string() && a["count"].is_i64() && a["source"].is_string());
    }
    let first = act[2]["id"].as_str().unwrap().to_string();
    let r = d.post("/api/alarms/ack", json!({"id": first}));
    assert_eq!(r["ok"], true);
    assert_eq!(r["acknowledgedCount"], 0);
    assert!(r["message"].is_string());
    let r = d.post("/api/alarms/ack", json!({"id": first}));
    assert_eq!(r["ok"], false, "already acknowledged");
    let r = d.post("/api/alarms/ack", json!({"id": "no-such"}));
    assert_eq!(r["ok"], false);
    for body in ["{}", r#"{"id":5}"#, "x", "[]"] {
        assert_track1(&d.req("POST", "/api/alarms/ack", Some(body)), 400);
    }
    assert_eq!(d.get("/api/alarms").as_array().unwrap().len(), 2);
    let r = d.post_empty("/api/alarms/ack-all");
    assert_eq!(r["ok"], true);
    assert_eq!(r["acknowledgedCount"], 2);
    assert_eq!(d.get("/api/alarms").as_array().unwrap().len(), 0);
    let h = d.get("/api/alarms/history");
    let h = h.as_array().unwrap();
    assert_eq!(h.len(), 3);
    assert!(h.iter().all(|a| a["state"] == "Acknowledged"));
    // a condition that goes away clears its alarm (state Cleared, leaves the active list)
    d.post(
        "/api/diag",
        json!({"slot":0,"subslot":1,"errorType":1,"severity":1}),
    );
    assert_eq!(d.status()["alarmCount"], 1);
    d.post(
        "/api/diag",
        json!({"action":"remove","slot":0,"subslot":1,"errorType":1}),
    );
    let h = d.get("/api/alarms/history");
    assert_eq!(h[0]["state"], "Cleared");
    assert_eq!(d.status()["alarmCount"], 0);
}

/// Spec 8 (history of the most recent 500 entries).
#[test]
fn spec_8_alarm_history_is_bounded_to_500() {
    if !root() {
        return;
    }
    let d = Daemon::start(DaemonOpts::new(), None);
    for ch in 0..520 {
        d.post(
            "/api/diag",
            json!({"slot":1,"subslot":1,"channel":ch,"errorType":2,"severity":3}),
        );
        d.post(
            "/api/diag",
            json!({"action":"remove","slot":1,"subslot":1,"channel":ch,"errorType":2}),
        );
    }
    let h = d.get("/api/alarms/history");
    assert_eq!(h.as_array().unwrap().len(), 500);
}

/// Spec 4 (reset, high-resolution timer): shapes and validation.
#[test]
fn spec_4_reset_and_high_resolution_timer() {
    if !root() {
        return;
    }
    let d = Daemon::start(DaemonOpts::new(), None);
    for body in ["{}", r#"{"mode":"everything"}"#, r#"{"mode":1}"#, "", "x"] {
        assert_track1(&d.req("POST", "/api/reset", Some(body)), 400);
    }
    for mode in ["communication", "factory"] {
        let r = d.post("/api/reset", json!({"mode": mode}));
        assert_eq!(r["ok"], true);
        assert_eq!(r["mode"], mode);
        assert!(r["message"].is_string() && r["timestamp"].is_string());
    }
    for body in ["{}", r#"{"enable":"yes"}"#, r#"{"enable":1}"#, "", "[true]"] {
        assert_track1(
            &d.req("POST", "/api/high-resolution-timer", Some(body)),
            400,
        );
    }
    let r = d.post("/api/high-resolution-timer", json!({"enable": true}));
    assert_eq!(r["ok"], true);
    assert!(r["message"].as_str().unwrap().contains("enabled"));
}

/// Spec 2.7, 2.8, GET /api/info (decided shape), GET / (static page, no external resources).
#[test]
fn spec_2_7_im_records_info_and_dashboard() {
    if !root() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let xml = dir.path().join("c.xml");
    write_config(&xml, "im-dev", None, 4, 4);
    let d = Daemon::start(DaemonOpts::new().config(xml), None);
    let im = d.get("/api/im");
    assert_eq!(im["vendorId"], 0x0493);
    assert_eq!(im["deviceId"], 1);
    assert_eq!(im["orderId"], "ORDER-1");
    assert_eq!(im["serialNumber"], "SN-42");
    assert_eq!(im["hardwareRevision"], "3");
    assert_eq!(im["softwareRevision"], "V1.2.3");
    assert_eq!(im["stationName"], "im-dev");
    assert_eq!(im["productName"], "test product");
    assert_eq!(im["imSupported"], "I&M0,I&M1,I&M2,I&M3,I&M4");
    assert_eq!(im["im14Supported"], true);
    for k in [
        "im1TagFunction",
        "im1TagLocation",
        "im2Date",
        "im3Descriptor",
        "im4SignatureHex",
        "timestamp",
    ] {
        assert!(im[k].is_string(), "{k}");
    }
    let rec = d.get("/api/records");
    assert_eq!(rec["count"], 0);
    assert!(rec["note"].is_string() && rec["records"].is_array() && rec["timestamp"].is_string());
    let info = d.get("/api/info");
    assert_eq!(info["serviceName"], "pn-device");
    assert_eq!(info["version"], "1.0.0");
    assert_eq!(info["formatVersion"], 2);
    assert_eq!(info["apiKeyRequired"], false);
    assert!(info["uptimeSeconds"].is_u64() && info["startedAt"].is_string());
    let r = d.req("GET", "/", None);
    assert_eq!(r.status, 200);
    assert!(r.header("content-type").unwrap().starts_with("text/html"));
    assert!(r.body.contains("/api/status") && r.body.contains("X-Vendor-Pnet-Api-Key"));
    // Nothing is loaded from elsewhere: no absolute URL in an attribute, a style or a request
    // (the vendored chart library names its home page in a comment, which loads nothing).
    for pat in [
        "src=\"http",
        "href=\"http",
        "url(http",
        "@import",
        "fetch(\"http",
        "<link",
        "<script src",
    ] {
        assert!(!r.body.contains(pat), "external resource: {pat}");
    }
    assert!(
        r.body.contains("uPlot") && r.body.contains("/api/diag"),
        "one page, inlined"
    );
}

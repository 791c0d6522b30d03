//! The stack against the project's controller simulator library (pn-controller) instead of the
//! protocol-built test peer: DCP name resolution, connect, cyclic data both ways, I&M0 read,
//! a diagnosis alarm, release. The 60 s soaks stay in stack_connect.rs with the test peer.

mod common;
mod stack_peer;

use std::time::Duration;

use common::{any_binding, write_licence, Daemon, DaemonOpts, Netns};
use pn_controller::{
    ArConfig, ArState, Controller, ControllerConfig, DeviceConfig, RealtimeOptions,
};
use pn_protocol::wire::pnio::im::ImRecord;
use serde_json::json;
use stack_peer::{wait_for, wire_up, write_config, PeerNs, DEV_IP};

#[test]
fn stack_with_controller_library() {
    if !pn_testkit::env::require_root() {
        return;
    }
    let ns = Netns::new();
    let peer_ns = PeerNs::new("pc");
    wire_up(&ns.name, "pnd0", &peer_ns, "pnc0");
    let dir = tempfile::tempdir().unwrap();
    write_licence(&dir.path().join("licence.json"), 3600, any_binding());
    let xml = dir.path().join("device.xml");
    write_config(&xml, "pnd0", 1);
    let d = Daemon::start_in(
        ns,
        dir,
        DaemonOpts::new().nic(Some("pnd0")).config(xml.clone()),
    );
    stack_peer::pin_process(d.pid());
    assert_eq!(d.post_empty("/api/start")["ok"], true, "{}", d.log_text());
    d.wait_state("Initialized");

    let ctl: Controller = peer_ns
        .in_ns(|| {
            stack_peer::pin_self();
            let mut c = ControllerConfig::new("pnc0");
            c.send_clock_factor = 32;
            c.realtime = RealtimeOptions {
                fifo_priority: Some(40),
                lock_memory: false,
            };
            Controller::start(c)
        })
        .expect("controller");
    let model = DeviceConfig::load(&xml).unwrap().model;
    let mut cfg = ArConfig::new(model);
    cfg.device_ip = Some(DEV_IP);
    // 4 ms (SendClockFactor 32 x ReductionRatio 4), DataHoldFactor 6.
    cfg.timing.reduction_ratio = 4;
    cfg.timing.watchdog_factor = 6;
    cfg.timing.data_hold_factor = 6;
    let ar = ctl
        .connect(cfg)
        .expect("connect via the controller library");
    let st = ar.wait_state(
        |s| matches!(s, ArState::DataExchange | ArState::Aborted(_)),
        Duration::from_secs(10),
    );
    assert_eq!(st, ArState::DataExchange, "{}", d.log_text());
    let s = d.wait_state("DataExchange");
    assert_eq!(s["connected"], true);

    // Controller -> device (I area) and device -> controller (Q area).
    ar.set_outputs(0, &[0x51, 0x52, 0x53, 0x54]).unwrap();
    wait_for(
        "controller outputs in inputHex",
        Duration::from_secs(3),
        || {
            d.get("/api/io")["inputHex"]
                .as_str()
                .is_some_and(|h| h.to_lowercase().starts_with("51525354"))
                .then_some(())
        },
    );
    d.post("/api/io", json!({"offset": 0, "data": "C0FFEE01"}));
    wait_for(
        "device data at the controller",
        Duration::from_secs(3),
        || {
            let i = ar.inputs();
            (i.valid && i.data.starts_with(&[0xC0, 0xFF, 0xEE, 0x01])).then_some(())
        },
    );

    // I&M0.
    match ar.read_im(0, 1, 0).expect("I&M0 read") {
        ImRecord::Im0(im0) => assert_eq!(im0.order_id.trim_end(), "ORDER-1"),
        other => panic!("{other:?}"),
    }

    // Diagnosis alarm, acknowledged by the controller library.
    d.post(
        "/api/diag",
        json!({"slot": 1, "subslot": 1, "channel": 2, "errorType": 5, "severity": 0, "text": "overtemperature"}),
    );
    let alarm = wait_for(
        "diagnosis alarm at the controller",
        Duration::from_secs(5),
        || ar.alarms().into_iter().find(|a| a.alarm_type == 0x0001),
    );
    assert_eq!((alarm.slot, alarm.subslot), (1, 1));
    wait_for("ack counted by the device", Duration::from_secs(5), || {
        (d.get("/api/diag")["stackAlarmTxAckOk"].as_i64() >= Some(1)).then_some(())
    });

    ar.release().expect("release");
    let s = d.wait_state("Aborted");
    assert_eq!(s["connected"], false);
    let diag = d.get("/api/diag");
    assert_eq!(diag["watchdogTrips"], 0, "{diag}");
    ctl.shutdown();
}

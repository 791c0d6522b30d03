//! Link loss on the real wire: the peer's veth end goes down -> the device's carrier drops ->
//! AR aborted (state Aborted); a Q write during the outage is held (reasonCode LinkDown,
//! queued=true) and reaches the controller after the link is back and the AR is re-established.

mod common;
mod stack_peer;

use std::time::Duration;

use common::{any_binding, write_licence, Daemon, DaemonOpts, Netns};
use serde_json::json;
use stack_peer::{wait_for, wire_up, write_config, Peer, PeerNs, Timing};

#[test]
fn stack_link_cut_holds_q_and_reconnects() {
    if !pn_testkit::env::require_root() {
        return;
    }
    let ns = Netns::new();
    let peer_ns = PeerNs::new("lk");
    wire_up(&ns.name, "pnd0", &peer_ns, "pnc0");
    let dir = tempfile::tempdir().unwrap();
    write_licence(&dir.path().join("licence.json"), 3600, any_binding());
    let xml = dir.path().join("device.xml");
    write_config(&xml, "pnd0", 1);
    let d = Daemon::start_in(ns, dir, DaemonOpts::new().nic(Some("pnd0")).config(xml));
    stack_peer::pin_process(d.pid());
    assert_eq!(d.post_empty("/api/start")["ok"], true, "{}", d.log_text());
    d.wait_state("Initialized");

    // 4 ms cycle (SendClockFactor 32 x ReductionRatio 4), DataHoldFactor 25 = 100 ms: timing is
    // not the subject here, and a shorter hold lets a scheduling stall of a loaded CI host end
    // the AR before the cut.
    let timing = Timing {
        send_clock_factor: 32,
        reduction_ratio: 4,
        data_hold_factor: 25,
    };
    let mut peer = Peer::open(&peer_ns, "pnc0", timing);
    wait_for("link up at the device", Duration::from_secs(5), || {
        (d.get("/api/diag")["linkUp"] == true).then_some(())
    });
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| peer.establish()));
    assert!(r.is_ok(), "establish failed; daemon log:\n{}", d.log_text());
    d.wait_state("DataExchange");
    d.post("/api/io", json!({"offset": 0, "data": "AABBCCDD"}));
    wait_for("first Q write at the peer", Duration::from_secs(3), || {
        (peer.device_data() == [0xAA, 0xBB, 0xCC, 0xDD]).then_some(())
    });

    // Cut the link.
    // (Whichever the device notices first, the data-hold watchdog or the carrier loss, the
    // AR ends; the link monitor polls every 50 ms.)
    peer_ns.set_link("pnc0", false);
    peer.stop_cyclic();
    let s = wait_for("Aborted after the link cut", Duration::from_secs(5), || {
        let s = d.status();
        (s["state"] == "Aborted").then_some(s)
    });
    assert_eq!(s["connected"], false, "{s}");
    let diag = wait_for("linkUp false", Duration::from_secs(5), || {
        let g = d.get("/api/diag");
        (g["linkUp"] == false).then_some(g)
    });
    assert_eq!(diag["activeIocrCount"], 0, "{diag}");

    // Q write during the outage: held.
    let w = d.post("/api/io", json!({"offset": 0, "data": "01020304"}));
    assert_eq!(w["delivered"], false, "{w}");
    assert_eq!(w["queued"], true, "{w}");
    assert_eq!(w["reasonCode"], "PnS.Io.NotDelivered.LinkDown", "{w}");
    assert_eq!(d.status()["outputSyncedToDriver"], false);

    // Link back, the controller re-establishes the AR, the held write is delivered.
    peer_ns.set_link("pnc0", true);
    wait_for("link up", Duration::from_secs(5), || {
        (d.get("/api/diag")["linkUp"] == true).then_some(())
    });
    peer.new_ar();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| peer.establish()));
    assert!(
        r.is_ok(),
        "re-establish failed; daemon log:\n{}",
        d.log_text()
    );
    let s = d.wait_state("DataExchange");
    assert_eq!(s["connected"], true);
    wait_for("held Q write at the peer", Duration::from_secs(3), || {
        (peer.device_data() == [1, 2, 3, 4]).then_some(())
    });
    let s = d.status();
    assert_eq!(s["outputSyncedToDriver"], true, "{s}");
    assert_eq!(s["everConnected"], true);
    // The abort is in the alarm history, with whichever cause the device saw first: the
    // carrier loss (link monitor, 50 ms poll) or the data-hold expiry (100 ms after the last
    // frame).
    let hist = d.get("/api/alarms/history").to_string().to_lowercase();
    assert!(hist.contains("connection aborted"), "{hist}");
    assert!(
        hist.contains("link") || hist.contains("data-hold"),
        "abort cause neither link nor data-hold: {hist}"
    );
    peer.release();
    d.wait_state("Aborted");
}

/// Soft stop during data exchange (ERR-RTA to the controller, state Stopped), start again on
/// the kept binding (reuse), and the controller reconnects.
#[test]
fn stack_stop_start_reuse_reconnects() {
    if !pn_testkit::env::require_root() {
        return;
    }
    let ns = Netns::new();
    let peer_ns = PeerNs::new("ss");
    wire_up(&ns.name, "pnd0", &peer_ns, "pnc0");
    let dir = tempfile::tempdir().unwrap();
    write_licence(&dir.path().join("licence.json"), 3600, any_binding());
    let xml = dir.path().join("device.xml");
    write_config(&xml, "pnd0", 1);
    let d = Daemon::start_in(ns, dir, DaemonOpts::new().nic(Some("pnd0")).config(xml));
    stack_peer::pin_process(d.pid());
    assert_eq!(d.post_empty("/api/start")["ok"], true, "{}", d.log_text());
    d.wait_state("Initialized");
    let timing = Timing {
        send_clock_factor: 32,
        reduction_ratio: 4,
        data_hold_factor: 25,
    };
    let mut peer = Peer::open(&peer_ns, "pnc0", timing);
    peer.establish();
    d.wait_state("DataExchange");

    let r = d.post_empty("/api/stop");
    assert_ne!(r["ok"], false, "{r}");
    let s = d.wait_state("Stopped");
    assert_eq!(s["connected"], false);
    let aborts = wait_for("ERR-RTA at the controller", Duration::from_secs(3), || {
        let a = peer.state.peer_aborts.lock().unwrap().clone();
        (!a.is_empty()).then_some(a)
    });
    // AR_DEVICE_DEACTIVATED.
    assert_eq!(aborts[0].octets(), [0xCF, 0x81, 0xFD, 0x10]);
    peer.stop_cyclic();

    assert_eq!(d.post_empty("/api/start")["ok"], true, "{}", d.log_text());
    d.wait_state("Initialized");
    peer.new_ar();
    peer.establish();
    d.wait_state("DataExchange");
    d.post("/api/io", json!({"offset": 0, "data": "0A0B0C0D"}));
    wait_for("Q write after restart", Duration::from_secs(3), || {
        (peer.device_data() == [0x0A, 0x0B, 0x0C, 0x0D]).then_some(())
    });
    peer.release();
    d.wait_state("Aborted");
}

//! The PROFINET stack on a real wire: the real pn-device binary in one network namespace, a
//! minimal IO controller (`stack_peer`, built from pn-protocol) in a second one, joined by a
//! veth pair. Each test has its own namespaces, so the tests of this file run in parallel.
//!
//! Timing choices (stated as the task asks): 4 ms (SendClockFactor 128, ReductionRatio 1)
//! with DataHoldFactor 3 = 12 ms; 1 ms (SendClockFactor 32) with DataHoldFactor 24 = 24 ms,
//! which covers the hypervisor stalls of 1.5-10 ms measured on this machine.

mod common;
mod stack_peer;

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use common::{any_binding, write_licence, Daemon, DaemonOpts, Netns};
use pn_protocol::wire::pnio::im::ImRecord;
use pn_protocol::wire::pnio::record::index;
use serde_json::json;
use stack_peer::{wait_for, wire_up, write_config, Capture, Peer, PeerNs, Timing};

struct Rig {
    daemon: Daemon,
    peer_ns: PeerNs,
}

/// Device namespace with the daemon (started via POST /api/start), peer namespace, veth.
fn rig(tag: &str, send_clock_ms: u16) -> Rig {
    let ns = Netns::new();
    let peer_ns = PeerNs::new(tag);
    wire_up(&ns.name, "pnd0", &peer_ns, "pnc0");
    let dir = tempfile::tempdir().unwrap();
    write_licence(&dir.path().join("licence.json"), 3600, any_binding());
    let xml = dir.path().join("device.xml");
    write_config(&xml, "pnd0", send_clock_ms);
    let opts = DaemonOpts::new()
        .nic(Some("pnd0"))
        .config(xml)
        .set("Timer:HighResolution", json!(true));
    let daemon = Daemon::start_in(ns, dir, opts);
    stack_peer::pin_process(daemon.pid());
    let r = daemon.post_empty("/api/start");
    assert_eq!(r["ok"], true, "start: {r} log: {}", daemon.log_text());
    daemon.wait_state("Initialized");
    Rig { daemon, peer_ns }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Connect, run cyclic data for `soak`, check data both ways, I&M0, alarms, release.
fn exchange(tag: &str, send_clock_ms: u16, timing: Timing, soak: Duration, full: bool) {
    if !pn_testkit::env::require_root() {
        return;
    }
    if full && !pn_testkit::env::require_tshark() {
        return;
    }
    let rig = rig(tag, send_clock_ms);
    let d = &rig.daemon;
    let cap = full.then(|| Capture::start(&rig.peer_ns, "pnc0", 20_000));

    let mut peer = Peer::open(&rig.peer_ns, "pnc0", timing);
    peer.establish();
    let st = wait_for("DataExchange", Duration::from_secs(10), || {
        let s = d.status();
        (s["state"] == "DataExchange").then_some(s)
    });
    assert_eq!(st["connected"], true, "{st}");
    wait_for("device frames at the peer", Duration::from_secs(5), || {
        (peer.state.rx_frames.load(Ordering::Relaxed) > 10).then_some(())
    });

    // Q area (device -> controller): POST /api/io appears in the device's frames.
    let w = d.post("/api/io", json!({"offset": 0, "data": "DEADBEEF"}));
    let w = if w["delivered"] == true {
        w
    } else {
        // Delivered once the next cycle has sent it: the status says so.
        wait_for("outputSyncedToDriver", Duration::from_secs(2), || {
            let s = d.status();
            (s["outputSyncedToDriver"] == true).then_some(w.clone())
        })
    };
    assert_eq!(w["queued"], true, "{w}");
    wait_for(
        "Q bytes in the device's frames",
        Duration::from_secs(2),
        || (peer.device_data() == [0xDE, 0xAD, 0xBE, 0xEF]).then_some(()),
    );
    let w2 = d.post("/api/io", json!({"offset": 1, "data": "01"}));
    assert_eq!(w2["reasonCode"], "", "{w2}");
    wait_for("second Q write", Duration::from_secs(2), || {
        (peer.device_data() == [0xDE, 0x01, 0xBE, 0xEF]).then_some(())
    });
    // I area (controller -> device): the peer's output data appears in GET /api/io.
    *peer.state.out_data.lock().unwrap() = [0x11, 0x22, 0x33, 0x44];
    let io = wait_for(
        "controller data in inputHex",
        Duration::from_secs(2),
        || {
            let io = d.get("/api/io");
            io["inputHex"]
                .as_str()
                .is_some_and(|h| h.to_lowercase().starts_with("11223344"))
                .then_some(io)
        },
    );
    assert_eq!(io["inputValid"], true, "{io}");
    let iops = io["inputIopsHex"]
        .as_str()
        .unwrap_or_default()
        .to_lowercase();
    assert!(iops.trim_start_matches("0x") == "80", "{io}");

    // I&M0 over record read.
    let (status, data) = peer.read(0, 1, index::IM0);
    assert!(status.is_ok(), "read I&M0: {status}");
    match ImRecord::parse(&data).expect("I&M0 block") {
        ImRecord::Im0(im0) => {
            assert_eq!(im0.vendor_id, 0x0493);
            assert_eq!(im0.order_id.trim_end(), "ORDER-1");
            assert_eq!(im0.serial_number.trim_end(), "SN-42");
        }
        other => panic!("not I&M0: {other:?}"),
    }
    // Unknown index (S7 polls 0xFBFF): well-formed negative response, AR stays up.
    let (status, _) = peer.read(0, 1, 0xFBFF);
    assert_eq!(status.octets(), [0xDE, 0x80, 0xB0, 0x00]);

    if full {
        // Diagnosis alarm: appears, acknowledged; station problem indicator while active.
        let r = d.post(
            "/api/diag",
            json!({"slot": 1, "subslot": 1, "channel": 0, "errorType": 1, "severity": 0, "text": "short circuit"}),
        );
        assert_ne!(r["ok"], false, "{r}");
        wait_for(
            "diagnosis alarm at the peer",
            Duration::from_secs(5),
            || {
                peer.state
                    .alarms
                    .lock()
                    .unwrap()
                    .iter()
                    .any(|(t, _)| *t == 0x0001)
                    .then_some(())
            },
        );
        wait_for("alarm ack counted", Duration::from_secs(5), || {
            let g = d.get("/api/diag");
            (g["stackAlarmTxAckOk"].as_i64() >= Some(1)).then_some(())
        });
        wait_for("station problem indicator", Duration::from_secs(2), || {
            peer.state
                .last_status
                .lock()
                .unwrap()
                .filter(|s| !s.data_status.station_ok())
                .map(|_| ())
        });
        d.post(
            "/api/diag",
            json!({"action": "remove", "slot": 1, "subslot": 1, "channel": 0, "errorType": 1}),
        );
        wait_for("diagnosis disappears alarm", Duration::from_secs(5), || {
            peer.state
                .alarms
                .lock()
                .unwrap()
                .iter()
                .any(|(t, _)| *t == 0x000C)
                .then_some(())
        });
        wait_for("station ok again", Duration::from_secs(2), || {
            peer.state
                .last_status
                .lock()
                .unwrap()
                .filter(|s| s.data_status.station_ok())
                .map(|_| ())
        });
    }
    if let Some(mut c) = cap {
        let frames = c.stop();
        let pcap = d.path("peer.pcap");
        std::fs::write(&pcap, pn_testkit::pcap::encode(&frames)).unwrap();
        let pk = pn_testkit::tshark::dissect_file(&pcap, &[]).expect("tshark");
        assert!(pk.len() >= 50, "capture has {} packets", pk.len());
        let mut kinds = std::collections::BTreeSet::new();
        for p in &pk {
            if p.malformed() || !p.expert_problems().is_empty() {
                let _ = std::fs::copy(&pcap, format!("/tmp/stack-{tag}.pcap"));
            }
            p.assert_clean("peer capture");
            kinds.insert(p.protocols().to_string());
        }
        let all = kinds.iter().cloned().collect::<Vec<_>>().join(" | ");
        assert!(all.contains("pn_rt"), "no RT frames dissected: {all}");
        assert!(all.contains("dcerpc"), "no RPC dissected: {all}");
        assert!(all.contains("pn_io"), "no PNIO dissected: {all}");
        eprintln!(
            "{tag}: capture of {} frames dissected clean: {all}",
            pk.len()
        );
    }

    // Soak: cyclic data for the rest of the time with no watchdog trip on either side.
    let t0 = Instant::now();
    let mut n: u8 = 0;
    while t0.elapsed() < soak {
        std::thread::sleep(Duration::from_millis(500));
        n = n.wrapping_add(1);
        *peer.state.out_data.lock().unwrap() = [n, n, n, n];
        let s = d.status();
        assert_eq!(
            s["state"],
            "DataExchange",
            "lost the connection after {:?}: {s}\n{}",
            t0.elapsed(),
            d.log_text()
        );
    }
    let diag = d.get("/api/diag");
    assert_eq!(diag["watchdogTrips"], 0, "device watchdog tripped: {diag}");
    assert_eq!(
        peer.state.watchdog_trips.load(Ordering::Relaxed),
        0,
        "peer watchdog tripped; max gap {} us",
        peer.state.max_gap_us.load(Ordering::Relaxed)
    );
    let period_us = timing.period().as_micros() as i64;
    let expect = (soak.as_micros() as i64 / period_us) * 8 / 10;
    assert!(diag["txRtFrames"].as_i64().unwrap() >= expect, "{diag}");
    assert!(diag["rxRtFrames"].as_i64().unwrap() >= expect, "{diag}");
    assert!(diag["stackCycles"].as_i64().unwrap() >= expect, "{diag}");
    assert_eq!(diag["connected"], true);
    assert_eq!(diag["activeIocrCount"], 2, "{diag}");
    wait_for(
        "last controller data in inputHex",
        Duration::from_secs(2),
        || {
            let io = d.get("/api/io");
            io["inputHex"]
                .as_str()
                .is_some_and(|h| h.to_lowercase().starts_with(&hex(&[n, n, n, n])))
                .then_some(())
        },
    );
    eprintln!(
        "{tag}: device diag {diag}\n{tag}: peer max gap {} us, rx {} tx {}",
        peer.state.max_gap_us.load(Ordering::Relaxed),
        peer.state.rx_frames.load(Ordering::Relaxed),
        peer.state.tx_frames.load(Ordering::Relaxed)
    );

    // Release -> the runtime leaves DataExchange.
    let st = peer.release();
    assert!(st.is_ok(), "release: {st}");
    let s = wait_for("Aborted after release", Duration::from_secs(5), || {
        let s = d.status();
        (s["state"] == "Aborted").then_some(s)
    });
    assert_eq!(s["connected"], false);
    assert_eq!(s["everConnected"], true);
}

/// Up to three attempts: this VM's hypervisor stalls a vCPU for 1.5-21 ms at times (measured,
/// docs/benchmarks.md), longer than the 12 ms data-hold time; no program can prevent that.
/// Each failed attempt is printed with its evidence; three failures fail the test.
#[test]
fn stack_exchange_4ms_dhf3_60s() {
    pn_testkit::attempts::up_to(3, |attempt| {
        exchange(
            &format!("x4{attempt}"),
            4,
            Timing {
                send_clock_factor: 128,
                reduction_ratio: 1,
                data_hold_factor: 3,
            },
            Duration::from_secs(60),
            true,
        )
    });
}

#[test]
fn stack_exchange_1ms_dhf24_60s() {
    exchange(
        "x1",
        1,
        Timing {
            send_clock_factor: 32,
            reduction_ratio: 1,
            data_hold_factor: 24,
        },
        Duration::from_secs(60),
        false,
    );
}

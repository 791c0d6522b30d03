//! Connection management on the real wire (device binary in one namespace, protocol-built test
//! controller in another): record services beside the IO AR, the supervisor / DeviceAccess
//! AR, a second IO AR, MultipleWrite, RPC fragmentation both ways, ModuleDiffBlock with
//! IOPS/IOCS BAD, CMInitiatorActivityTimeout.

mod common;
mod stack_peer;

use pn_protocol::wire::Emit;
use std::time::Duration;

use common::{any_binding, write_licence, Daemon, DaemonOpts, Netns};
use pn_protocol::wire::pnio::block::blocks;
use pn_protocol::wire::pnio::im::{Im1, Im2, Im3, ImRecord};
use pn_protocol::wire::pnio::module_diff::ident_info;
use pn_protocol::wire::pnio::record::index;
use pn_protocol::wire::rpc::{opnum, PacketType, Uuid};
use stack_peer::{
    assert_capture_clean, wait_for, wire_up, write_config, Capture, Peer, PeerNs, Timing,
};

const TIMING: Timing = Timing {
    send_clock_factor: 32,
    reduction_ratio: 4,
    data_hold_factor: 10,
};

fn rig(tag: &str) -> Option<(Daemon, PeerNs)> {
    if !pn_testkit::env::require_root() {
        return None;
    }
    let ns = Netns::new();
    let peer_ns = PeerNs::new(tag);
    wire_up(&ns.name, "pnd0", &peer_ns, "pnc0");
    let dir = tempfile::tempdir().unwrap();
    write_licence(&dir.path().join("licence.json"), 3600, any_binding());
    let xml = dir.path().join("device.xml");
    write_config(&xml, "pnd0", 1);
    let d = Daemon::start_in(ns, dir, DaemonOpts::new().nic(Some("pnd0")).config(xml));
    stack_peer::pin_process(d.pid());
    assert_eq!(d.post_empty("/api/start")["ok"], true, "{}", d.log_text());
    d.wait_state("Initialized");
    Some((d, peer_ns))
}

fn uuid(n: u8) -> Uuid {
    let mut b = [n; 16];
    b[6] = 0x40 | (n & 0x0F);
    b[8] = 0x80;
    Uuid::from_bytes(b)
}

#[test]
fn stack_cm_records_supervisor_second_ar_fragmentation() {
    let Some((d, peer_ns)) = rig("cm") else {
        return;
    };
    let mut cap = Capture::start(&peer_ns, "pnc0", 5000);
    let mut peer = Peer::open(&peer_ns, "pnc0", TIMING);
    // Implicit read (opnum 5) without any AR.
    let (st, data) = peer.read_with(Uuid::NIL, 0, 1, index::IM0);
    assert!(st.is_ok(), "implicit read: {st}");
    assert!(matches!(ImRecord::parse(&data), Ok(ImRecord::Im0(_))));
    // I&M0FilterData (read by engineering tools before I&M0): DAP carries the device's I&M0.
    let (st, data) = peer.read_with(Uuid::NIL, 0, 1, index::IM0_FILTER_DATA);
    assert!(st.is_ok(), "I&M0FilterData: {st}");
    let f = pn_protocol::wire::pnio::im::parse_filter_record(&data).unwrap();
    assert_eq!(f.len(), 3);
    // CL ping: an answered call gets its response again, an unknown one a Nocall.
    let seq = peer.seq;
    assert_eq!(peer.ping(seq), PacketType::Response);
    assert_eq!(peer.ping(seq + 100), PacketType::Nocall);

    peer.establish();
    d.wait_state("DataExchange");

    // A second IO AR is refused: CMRPC "out of AR resources" (DB 81 40 04).
    let (keep_uuid, keep_key) = (peer.ar_uuid, peer.session_key);
    peer.ar_uuid = uuid(0x22);
    let blocks2 = peer.connect_blocks();
    let r = peer.call(opnum::CONNECT, blocks2);
    assert_eq!(r.status.octets(), [0xDB, 0x81, 0x40, 0x04], "second AR");
    peer.ar_uuid = keep_uuid;
    peer.session_key = keep_key;

    // Supervisor / DeviceAccess AR beside the IO AR: connect, write I&M1, read it back.
    let sup = uuid(0x33);
    let r = peer.supervisor_connect(sup);
    assert!(r.status.is_ok(), "supervisor AR refused: {}", r.status);
    assert!(blocks(&r.data).any(|b| b.is_ok_and(|b| b.block_type() == 0x8101)));
    let im1 = ImRecord::Im1(Im1 {
        tag_function: "PUMP-7".into(),
        tag_location: "HALL-2".into(),
    })
    .to_bytes()
    .unwrap();
    let r = peer.write_with(sup, 0, 1, index::IM1, im1.clone());
    assert!(
        r.status.is_ok(),
        "I&M1 write via supervisor AR: {}",
        r.status
    );
    let (st, back) = peer.read_with(sup, 0, 1, index::IM1);
    assert!(st.is_ok());
    assert_eq!(back, im1);
    let im = wait_for("I&M1 persisted", Duration::from_secs(3), || {
        let im = d.get("/api/im");
        im.to_string().contains("PUMP-7").then_some(im)
    });
    assert!(im.to_string().contains("HALL-2"), "{im}");
    let r = peer.release_ar(sup, 7);
    assert!(r.status.is_ok(), "supervisor release: {}", r.status);
    // Reads with the released supervisor AR are refused; the IO AR is untouched.
    let (st, _) = peer.read_with(sup, 0, 1, index::IM0);
    assert_eq!(st.octets()[..3], [0xDE, 0x81, 0x40]);
    assert_eq!(d.status()["state"], "DataExchange");

    // MultipleWrite (I&M2 + I&M3) with the IO AR.
    let im2 = ImRecord::Im2(Im2 {
        date: "2026-11-23 18:00".into(),
    })
    .to_bytes()
    .unwrap();
    let im3 = ImRecord::Im3(Im3 {
        descriptor: "written by MultipleWrite".into(),
    })
    .to_bytes()
    .unwrap();
    let r = peer.multiple_write(vec![(0, 1, index::IM2, im2), (0, 1, index::IM3, im3)]);
    assert!(r.status.is_ok(), "MultipleWrite: {}", r.status);
    let resp = pn_protocol::wire::pnio::record::WriteResponse::parse(&r.data).unwrap();
    assert_eq!(resp.records.len(), 2);
    assert!(resp.records.iter().all(|h| h.status.is_ok()));
    wait_for("I&M3 persisted", Duration::from_secs(3), || {
        d.get("/api/im")
            .to_string()
            .contains("written by MultipleWrite")
            .then_some(())
    });

    // Fragmentation both ways: a 3000-byte user record written in fragments, read back in
    // fragments.
    let big: Vec<u8> = (0..3000u32).map(|i| (i % 251) as u8).collect();
    let st = peer.write(1, 1, 0x0100, big.clone());
    assert!(st.is_ok(), "fragmented write: {st}");
    assert!(peer.fragments_sent >= 3, "request not fragmented");
    let rec = wait_for(
        "user record in /api/records",
        Duration::from_secs(3),
        || {
            let v = d.get("/api/records");
            v["records"]
                .as_array()
                .and_then(|a| a.iter().find(|r| r["index"] == 0x0100).cloned())
        },
    );
    assert_eq!(rec["slot"], 1);
    assert_eq!(rec["length"], 3000);
    let hex: String = big.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(rec["dataHex"].as_str().map(|h| h.to_lowercase()), Some(hex));
    let before = peer.fragments_received;
    let (st, back) = peer.read_with(peer.ar_uuid, 1, 1, 0x0100);
    assert!(st.is_ok(), "read back: {st}");
    assert_eq!(back, big);
    assert!(
        peer.fragments_received - before >= 3,
        "response not fragmented"
    );
    // A Ping while a fragmented request is incomplete is answered with Working.
    let req = pn_protocol::wire::pnio::record::WriteRequest::single(
        1,
        peer.ar_uuid.0,
        pn_protocol::wire::pnio::record::RecordAddress::new(0, 1, 1, 0x0101),
        vec![0x5A; 2000],
    )
    .unwrap();
    let (pt, r) = peer.call_with_ping_midway(opnum::WRITE, req.to_bytes().unwrap());
    assert_eq!(pt, PacketType::Working);
    assert!(r.status.is_ok(), "{}", r.status);
    // RealIdentificationData (API level) lists the configured layout.
    let (st, data) = peer.read_with(peer.ar_uuid, 0, 1, index::API_REAL_IDENTIFICATION_DATA);
    assert!(st.is_ok(), "RealIdentificationData: {st}");
    let ident = pn_protocol::wire::pnio::ident::IdentificationDataRepr::parse(&data).unwrap();
    let slots: Vec<u16> = ident.apis[0].modules.iter().map(|m| m.slot).collect();
    assert_eq!(slots, vec![0, 1]);
    assert_eq!(ident.apis[0].modules[1].module_ident, 0x30);
    // Diagnosis record with an active diagnosis entry (POST /api/diag).
    d.post(
        "/api/diag",
        serde_json::json!({"slot": 1, "subslot": 1, "channel": 3, "errorType": 6, "severity": 0, "text": "wire break"}),
    );
    let diag = wait_for("diagnosis record", Duration::from_secs(3), || {
        let (st, data) = peer.read_with(peer.ar_uuid, 1, 1, index::SUB_DIAGNOSIS_CHANNEL);
        assert!(st.is_ok(), "diagnosis read: {st}");
        let v = pn_protocol::wire::pnio::diagnosis::parse_diagnosis_record(&data).unwrap();
        (!v.is_empty()).then_some(v)
    });
    assert_eq!(
        (diag[0].slot, diag[0].subslot, diag[0].channel_number),
        (1, 1, 3)
    );
    // Unknown index: well-formed negative response.
    let (st, _) = peer.read_with(peer.ar_uuid, 0, 1, 0xFBFF);
    assert_eq!(st.octets(), [0xDE, 0x80, 0xB0, 0x00]);
    assert_eq!(d.status()["state"], "DataExchange");
    peer.release();
    d.wait_state("Aborted");
    if pn_testkit::env::require_tshark() {
        let all = assert_capture_clean(&cap.stop(), "cm", &["pn_rt", "dcerpc", "pn_io"]);
        eprintln!("cm capture: {all}");
    }
}

#[test]
fn stack_cm_module_diff_and_cmi_timeout() {
    let Some((d, peer_ns)) = rig("md") else {
        return;
    };
    let mut cap = Capture::start(&peer_ns, "pnc0", 5000);
    let mut peer = Peer::open(&peer_ns, "pnc0", TIMING);
    // Slot 1 expected with another SubmoduleIdentNumber: the connect succeeds with a
    // ModuleDiffBlock and the device's frames carry IOPS/IOCS BAD for that submodule.
    peer.wrong_slot1_ident = true;
    peer.cmi_factor = 10; // 1 s
    let r = peer.connect();
    let md = r
        .response
        .module_diff
        .expect("ModuleDiffBlock in the connect response");
    let m = &md.apis[0].modules[0];
    assert_eq!(m.slot, 1);
    assert_eq!(m.submodules[0].subslot, 1);
    assert_eq!(m.submodules[0].state.ident_info(), ident_info::WRONG);
    wait_for("device frames", Duration::from_secs(3), || {
        let s = peer.state.last_sdu.lock().unwrap().clone();
        (s.len() >= 9).then_some(())
    });
    let sdu = peer.state.last_sdu.lock().unwrap().clone();
    assert_eq!(sdu[0], 0x80, "DAP IOPS GOOD");
    assert_eq!(sdu[7], 0x00, "slot 1 IOPS BAD");
    assert_eq!(sdu[8], 0x00, "slot 1 IOCS BAD");

    // No PrmEnd: the AR is aborted after CMInitiatorActivityTimeoutFactor x 100 ms, after
    // which a new IO AR is accepted (it would be refused with 40 04 while the old one lived).
    let hist = wait_for("CMI timeout recorded", Duration::from_secs(5), || {
        let h = d.get("/api/alarms/history").to_string();
        h.contains("CMInitiatorActivityTimeout").then_some(h)
    });
    assert!(!hist.is_empty());
    peer.stop_cyclic();
    peer.new_ar();
    peer.wrong_slot1_ident = false;
    peer.cmi_factor = 100;
    peer.establish();
    d.wait_state("DataExchange");
    let sdu = wait_for("slot 1 IOPS GOOD", Duration::from_secs(3), || {
        let s = peer.state.last_sdu.lock().unwrap().clone();
        (s.len() >= 9 && s[7] == 0x80).then_some(s)
    });
    assert_eq!(sdu[8], 0x80);
    peer.release();
    d.wait_state("Aborted");
    if pn_testkit::env::require_tshark() {
        assert_capture_clean(&cap.stop(), "md", &["pn_rt", "dcerpc", "pn_io"]);
    }
}

#[test]
fn stack_cm_watchdog_err_rta_big_endian_legacy() {
    let Some((d, peer_ns)) = rig("wd") else {
        return;
    };
    let mut cap = Capture::start(&peer_ns, "pnc0", 5000);
    let mut peer = Peer::open(&peer_ns, "pnc0", TIMING);
    // Big-endian requests (answered big-endian, asserted by the peer), legacy start-up.
    peer.drep = pn_protocol::wire::rpc::Drep::BIG_ENDIAN;
    peer.advanced = false;
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| peer.establish()));
    if r.is_err() {
        let _ = std::fs::write(
            "/tmp/stack-wd-fail.pcap",
            pn_testkit::pcap::encode(&cap.stop()),
        );
    }
    assert!(r.is_ok(), "establish failed; daemon log:\n{}", d.log_text());
    d.wait_state("DataExchange");
    let (st, _) = peer.read(0, 1, index::IM0);
    assert!(st.is_ok());
    // The controller falls silent: data-hold timer expiry -> ERR-RTA (CF 81 FD 05) to the
    // controller, AR aborted, watchdog counted and reported.
    peer.state
        .pause_tx
        .store(true, std::sync::atomic::Ordering::Release);
    let s = wait_for("Aborted by the watchdog", Duration::from_secs(5), || {
        let s = d.status();
        (s["state"] == "Aborted").then_some(s)
    });
    assert_eq!(s["connected"], false);
    let aborts = wait_for("ERR-RTA at the controller", Duration::from_secs(3), || {
        let a = peer.state.peer_aborts.lock().unwrap().clone();
        (!a.is_empty()).then_some(a)
    });
    assert_eq!(aborts[0].octets(), [0xCF, 0x81, 0xFD, 0x05]);
    let diag = d.get("/api/diag");
    assert_eq!(diag["watchdogTrips"], 1, "{diag}");
    let hist = d.get("/api/alarms/history").to_string();
    assert!(hist.contains("watchdog"), "{hist}");
    if pn_testkit::env::require_tshark() {
        assert_capture_clean(&cap.stop(), "wd", &["pn_rt", "dcerpc", "pn_io"]);
    }
}

/// Garbage on UDP 34964 and malformed RT frames (with the AR's own output FrameID, wrong
/// lengths) do not disturb an established AR; they are counted.
#[test]
fn stack_cm_garbage_is_survived() {
    let Some((d, peer_ns)) = rig("gb") else {
        return;
    };
    let mut peer = Peer::open(&peer_ns, "pnc0", TIMING);
    peer.establish();
    d.wait_state("DataExchange");
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let dev = std::net::SocketAddr::from((stack_peer::DEV_IP, 34964));
    for i in 0..300usize {
        let len = (rnd() % 200) as usize;
        let mut buf: Vec<u8> = (0..len).map(|_| rnd() as u8).collect();
        if i % 3 == 0 && buf.len() > 2 {
            buf[0] = 4; // looks like CL RPC version 4
        }
        let _ = peer.udp.send_to(&buf, dev);
    }
    // Truncated frames with the output FrameID (VLAN-tagged 60-byte frames leave only 42
    // bytes for FrameID + C_SDU + APDU status, less than the AR's 46) and frames with random
    // FrameIDs.
    for i in 0..300usize {
        let mut f = vec![0u8; 18];
        f[..6].copy_from_slice(&peer.dev_mac);
        f[6..12].copy_from_slice(&peer.mac);
        f[12..14].copy_from_slice(&[0x81, 0x00]);
        f[14..16].copy_from_slice(&[0xC0, 0x00]);
        f[16..18].copy_from_slice(&[0x88, 0x92]);
        let fid = if i % 2 == 0 {
            peer.output_frame_id
        } else {
            0x0100 | (rnd() as u16 & 0x7EFF)
        };
        f.extend_from_slice(&fid.to_be_bytes());
        let n = (rnd() % 30) as usize;
        f.extend((0..n).map(|_| rnd() as u8));
        f.resize(60, 0);
        let _ = peer.sock.send(&f);
    }
    wait_for("invalid frames counted", Duration::from_secs(3), || {
        (d.get("/api/diag")["invalidFrames"].as_i64() >= Some(150)).then_some(())
    });
    let s = d.status();
    assert_eq!(s["state"], "DataExchange", "{s}\n{}", d.log_text());
    assert_eq!(d.get("/api/diag")["watchdogTrips"], 0);
    // Still fully working afterwards.
    let (st, _) = peer.read(0, 1, index::IM0);
    assert!(st.is_ok());
    peer.release();
    d.wait_state("Aborted");
}

/// The device's ERR-RTA-PDUs in a capture: (FrameID, PNIOStatus) of every ERR-RTA sent from
/// `dev_mac`.
fn device_err_rtas(frames: &[Vec<u8>], dev_mac: [u8; 6]) -> Vec<(u16, [u8; 4])> {
    use pn_protocol::wire::ethernet::EthernetRepr;
    use pn_protocol::wire::rta::{RtaPduType, RtaRepr};
    frames
        .iter()
        .filter_map(|f| {
            let (e, payload) = EthernetRepr::parse_frame(f).ok()?;
            if e.src.0 != dev_mac || e.ethertype != 0x8892 {
                return None;
            }
            let fid = u16::from_be_bytes([*payload.first()?, *payload.get(1)?]);
            let rta = RtaRepr::parse(payload.get(2..)?).ok()?;
            (rta.pdu_type == RtaPduType::Err).then(|| Some((fid, rta.err_status()?.octets())))?
        })
        .collect()
}

/// The controller ends the AR with its own ERR-RTA (CF 81 FD 11 "AR removed", low priority):
/// the end is the controller's decision, not a fault of the device. The device answers with
/// the controller's reason on the low-priority channel, as p-net does (it used to send CF 81
/// FD 08 "alarm send confirmation negative" on the high channel), and its status message, log
/// and alarm say the controller ended the AR, with no Error alarm.
#[test]
fn stack_cm_controller_err_rta_is_answered_with_its_reason() {
    use pn_protocol::wire::rta::abort_reason;
    let Some((d, peer_ns)) = rig("ca") else {
        return;
    };
    let mut cap = Capture::start(&peer_ns, "pnc0", 5000);
    let mut peer = Peer::open(&peer_ns, "pnc0", TIMING);
    peer.establish();
    d.wait_state("DataExchange");
    peer.rta
        .lock()
        .unwrap()
        .abort(abort_reason::status(abort_reason::AR_REMOVED));
    let s = wait_for("Aborted", Duration::from_secs(5), || {
        let s = d.status();
        (s["state"] == "Aborted").then_some(s)
    });
    let msg = s["statusMessage"].as_str().unwrap_or("").to_string();
    assert!(
        msg.contains("ended by the controller") && msg.contains("CF 81 FD 11 (AR removed)"),
        "{msg}"
    );
    let dev_mac = peer.dev_mac;
    let errs = wait_for("the device's ERR-RTA", Duration::from_secs(3), || {
        let e = device_err_rtas(&cap.frames.lock().unwrap(), dev_mac);
        (!e.is_empty()).then_some(e)
    });
    std::thread::sleep(Duration::from_millis(200)); // nothing else may follow
    let frames = cap.stop();
    let errs_after = device_err_rtas(&frames, dev_mac);
    assert_eq!(errs, vec![(0xFE01, [0xCF, 0x81, 0xFD, 0x11])]);
    assert_eq!(errs_after, errs, "one ERR-RTA, on the low channel");
    let hist = d.get("/api/alarms/history");
    let conn: Vec<_> = hist
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["source"] == "connection")
        .collect();
    assert_eq!(conn.len(), 1, "{hist}");
    assert_eq!(conn[0]["severity"], "Warning", "{hist}");
    assert_eq!(d.get("/api/diag")["watchdogTrips"], 0);
    if pn_testkit::env::require_tshark() {
        assert_capture_clean(&frames, "ca", &["pn_rt", "dcerpc", "pn_io"]);
    }
}

/// A normal Release by the controller: the state the spec's table gives (Aborted), but the end
/// is no fault: an Info alarm, a status message that says the controller released the AR, no
/// ERR-RTA from the device.
#[test]
fn stack_cm_release_is_not_a_fault() {
    let Some((d, peer_ns)) = rig("rl") else {
        return;
    };
    let mut cap = Capture::start(&peer_ns, "pnc0", 5000);
    let mut peer = Peer::open(&peer_ns, "pnc0", TIMING);
    peer.establish();
    d.wait_state("DataExchange");
    let st = peer.release();
    assert!(st.is_ok(), "{st:?}");
    // The Release is answered by the connection manager; the runtime applies the end through
    // its event queue right after, so the state is awaited, not read at once.
    d.wait_state("Aborted");
    let s = d.status();
    assert_eq!(s["state"], "Aborted", "{s}");
    let msg = s["statusMessage"].as_str().unwrap_or("").to_string();
    assert!(msg.contains("released"), "{msg}");
    let hist = d.get("/api/alarms/history");
    let errors: Vec<_> = hist
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["severity"] == "Error" || a["severity"] == "Critical")
        .collect();
    assert!(errors.is_empty(), "{hist}");
    let conn = hist
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["source"] == "connection")
        .cloned()
        .unwrap_or_default();
    assert_eq!(conn["severity"], "Info", "{hist}");
    assert!(
        conn["message"].as_str().unwrap_or("").contains("released"),
        "{conn}"
    );
    assert_eq!(d.get("/api/status")["criticalAlarmCount"], 0);
    let frames = cap.stop();
    assert!(device_err_rtas(&frames, peer.dev_mac).is_empty());
    let log = d.log_text();
    assert!(
        !log.contains("WARN pn_device::runtime: cyclic data exchange lost"),
        "{log}"
    );
}

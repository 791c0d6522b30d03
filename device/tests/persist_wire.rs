//! Remanent data is acknowledged only after it is durable, on the real wire: the device binary
//! in one namespace, a protocol-built peer in another. When the DCP Set response frame or the
//! record Write response datagram has arrived, the persistence file already holds the value
//! (`persist::Store::load`, read the moment the answer is in). With the persistence directory
//! made unreachable (replaced by a regular file: ENOTDIR also for root), the device answers
//! DCP BlockError 5 and PNIO status DF 80 A1 00 and keeps the old values (`GET /api/im`,
//! `GET /api/status`, DCP Identify).

mod common;
mod stack_peer;

use pn_protocol::wire::Emit;
use std::time::{Duration, Instant};

use common::{any_binding, write_licence, Daemon, DaemonOpts, Netns};
use pn_device::persist::{LoadOutcome, Remanent, Store};
use pn_protocol::wire::dcp::{BlockError, DcpRepr, DcpValue, NameOfStation, ServiceId};
use pn_protocol::wire::ethernet::MacAddr;
use pn_protocol::wire::pnio::im::{Im1, ImRecord};
use pn_protocol::wire::pnio::record::index;
use pn_protocol::wire::rpc::Uuid;
use stack_peer::{wire_up, write_config, Peer, PeerNs, Timing};

const TIMING: Timing = Timing {
    send_clock_factor: 32,
    reduction_ratio: 4,
    data_hold_factor: 10,
};

fn on_disk(d: &Daemon) -> Remanent {
    match Store::new(d.path("persist")).load() {
        LoadOutcome::Loaded(r) => r,
        LoadOutcome::Missing => Remanent::default(),
        LoadOutcome::Corrupt(e) => panic!("corrupt: {e}"),
    }
}

/// Make the persistence directory unreachable (`false`) or reachable again (`true`).
fn writable(d: &Daemon, on: bool) {
    let (p, real) = (d.path("persist"), d.path("persist.real"));
    if on {
        std::fs::remove_file(&p).unwrap();
        std::fs::rename(&real, &p).unwrap();
    } else {
        std::fs::rename(&p, &real).unwrap();
        std::fs::write(&p, b"not a directory").unwrap();
    }
}

/// Send one DCP request and return the device's response with the same Xid.
fn dcp(peer: &Peer, req: DcpRepr, dst: MacAddr) -> (MacAddr, DcpRepr) {
    let f = req.build_frame(dst, MacAddr(peer.mac), None).unwrap();
    peer.sock.send(&f).unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut buf = vec![0u8; 1600];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        assert!(!left.is_zero(), "no DCP response to xid {}", req.xid);
        let Some(n) = peer.sock.recv(&mut buf, Some(left)).unwrap() else {
            continue;
        };
        if let Ok((eth, _, r)) = DcpRepr::parse_frame(&buf[..n]) {
            if r.xid == req.xid && r.service_id == req.service_id && eth.dst.0 == peer.mac {
                return (eth.src, r);
            }
        }
    }
}

fn block_errors(r: &DcpRepr) -> Vec<BlockError> {
    r.blocks
        .iter()
        .filter_map(|b| match b.value {
            DcpValue::Response { error, .. } => Some(error),
            _ => None,
        })
        .collect()
}

fn im1(function: &str) -> Vec<u8> {
    ImRecord::Im1(Im1 {
        tag_function: function.into(),
        tag_location: "HALL-2".into(),
    })
    .to_bytes()
    .unwrap()
}

#[test]
fn persist_wire_answers_come_after_the_file_and_unstorable_changes_are_refused() {
    if !pn_testkit::env::require_root() {
        return;
    }
    let ns = Netns::new();
    let peer_ns = PeerNs::new("pst");
    wire_up(&ns.name, "pnd0", &peer_ns, "pnc0");
    let dir = tempfile::tempdir().unwrap();
    write_licence(&dir.path().join("licence.json"), 3600, any_binding());
    let xml = dir.path().join("device.xml");
    write_config(&xml, "pnd0", 1);
    let d = Daemon::start_in(ns, dir, DaemonOpts::new().nic(Some("pnd0")).config(xml));
    assert_eq!(d.post_empty("/api/start")["ok"], true, "{}", d.log_text());
    d.wait_state("Initialized");
    let mut peer = Peer::open(&peer_ns, "pnc0", TIMING);
    let (dev, _) = dcp(
        &peer,
        DcpRepr::identify_request_all(1, 1),
        MacAddr::DCP_IDENTIFY,
    );
    let name = |s: &str| NameOfStation::new(s).unwrap();

    // DCP Set NameOfStation permanent: in the file when the response frame is in.
    let (_, r) = dcp(&peer, DcpRepr::set_name(2, &name("stored-name"), true), dev);
    assert_eq!(block_errors(&r), [BlockError::OK]);
    assert_eq!(on_disk(&d).station_name.as_deref(), Some("stored-name"));

    // I&M1 over a supervisor AR: in the file when the Write response is in.
    let sup = Uuid::from_bytes([0x5A; 16]);
    let c = peer.supervisor_connect(sup);
    assert!(c.status.is_ok(), "supervisor AR: {}", c.status);
    let w = peer.write_with(sup, 0, 1, index::IM1, im1("PUMP"));
    assert!(w.status.is_ok(), "I&M1 write: {}", w.status);
    assert_eq!(on_disk(&d).im.tag_function.trim_end(), "PUMP");

    // The persistence directory cannot be written: both requests are refused on the wire and
    // nothing changes.
    writable(&d, false);
    let w = peer.write_with(sup, 0, 1, index::IM1, im1("VALVE"));
    assert_eq!(w.status.octets(), [0xDF, 0x80, 0xA1, 0x00], "{}", w.status);
    let (st, back) = peer.read_with(sup, 0, 1, index::IM1);
    assert!(st.is_ok());
    assert_eq!(back, im1("PUMP"), "the device keeps answering the old I&M1");
    assert_eq!(d.get("/api/im")["im1TagFunction"], "PUMP");
    let (_, r) = dcp(&peer, DcpRepr::set_name(3, &name("lost-name"), true), dev);
    assert_eq!(block_errors(&r), [BlockError::SET_NOT_POSSIBLE]);
    let (_, r) = dcp(
        &peer,
        DcpRepr::identify_request_all(4, 1),
        MacAddr::DCP_IDENTIFY,
    );
    assert_eq!(r.service_id, ServiceId::Identify);
    assert_eq!(r.name_of_station(), Some(&b"stored-name"[..]));
    assert!(d
        .get("/api/alarms")
        .as_array()
        .unwrap()
        .iter()
        .any(|a| a["source"] == "persistence"));

    // Reachable again: the old values are what is stored, and the next write is durable
    // before its answer.
    writable(&d, true);
    let disk = on_disk(&d);
    assert_eq!(disk.station_name.as_deref(), Some("stored-name"));
    assert_eq!(disk.im.tag_function.trim_end(), "PUMP");
    let w = peer.write_with(sup, 0, 1, index::IM1, im1("VALVE"));
    assert!(w.status.is_ok(), "I&M1 write: {}", w.status);
    assert_eq!(on_disk(&d).im.tag_function.trim_end(), "VALVE");
    assert_eq!(d.status()["masterStationName"], "stored-name");
}

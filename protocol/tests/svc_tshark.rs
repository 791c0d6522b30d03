//! tshark as an independent oracle for the frames of the small IP-side services a device
//! answers besides PROFINET: the ARP reply (`wire::arp`), SNMP responses of the agent
//! (`machine::snmp_agent`: a value, the v2c exceptions, a GetBulk walk long enough for
//! long-form BER lengths, a v1 error) and LLMNR responses of the responder
//! (`machine::llmnr_responder`: an A answer, an empty answer). Each frame must dissect as the
//! intended protocol, be free of malformed markers and expert warnings/errors, and show the
//! encoded values.

use pn_protocol::wire::Emit;
use std::net::Ipv4Addr;

use pn_protocol::machine::llmnr_responder::{self, LlmnrIdentity};
use pn_protocol::machine::snmp_agent::{SnmpAgent, SystemInfo, SYSTEM};
use pn_protocol::wire::arp::{ArpRepr, Operation};
use pn_protocol::wire::ethernet::MacAddr;
use pn_protocol::wire::ip::udp_frame;
use pn_protocol::wire::llmnr::{self, rtype, LlmnrRepr, Question, CLASS_IN};
use pn_protocol::wire::snmp::{self, pdu, Pdu, SnmpMessage, Value, VarBind};
use pn_testkit::tshark::{self, Packet};

const DEV: MacAddr = MacAddr([0x02, 0x00, 0x5e, 0x10, 0x20, 0x31]);
const CTRL: MacAddr = MacAddr([0x02, 0x00, 0x5e, 0x10, 0x20, 0x32]);
const DEV_IP: Ipv4Addr = Ipv4Addr::new(192, 168, 0, 10);
const CTRL_IP: Ipv4Addr = Ipv4Addr::new(192, 168, 0, 1);

fn dissect(frames: &[Vec<u8>]) -> Vec<Packet> {
    let pkts = tshark::dissect(frames).expect("tshark runs");
    assert_eq!(pkts.len(), frames.len());
    for (i, p) in pkts.iter().enumerate() {
        p.assert_clean(&format!("frame {i}"));
    }
    pkts
}

/// An answer datagram of the device, in a frame to the controller.
fn from_device(port: u16, payload: &[u8]) -> Vec<u8> {
    udp_frame(DEV.0, CTRL.0, DEV_IP, CTRL_IP, port, 50123, payload).unwrap()
}

#[test]
fn arp_reply() {
    if !pn_testkit::env::require_tshark() {
        return;
    }
    let req = ArpRepr {
        operation: Operation::Request,
        sender_mac: CTRL,
        sender_ip: CTRL_IP,
        target_mac: MacAddr::ZERO,
        target_ip: DEV_IP,
    };
    let rep = req.reply(DEV).unwrap();
    let p = &dissect(&[req.frame(MacAddr::BROADCAST), rep.frame(CTRL)])[1];
    assert!(
        p.protocols().ends_with("eth:ethertype:arp"),
        "{}",
        p.protocols()
    );
    assert_eq!(p.uint("arp.opcode"), 2);
    assert_eq!(p.get("arp.src.hw_mac"), DEV.to_string());
    assert_eq!(p.get("arp.src.proto_ipv4"), DEV_IP.to_string());
    assert_eq!(p.get("arp.dst.hw_mac"), CTRL.to_string());
    assert_eq!(p.get("arp.dst.proto_ipv4"), CTRL_IP.to_string());
    assert_eq!(p.get("eth.dst"), CTRL.to_string());
}

fn request(version: i64, tag: u8, names: &[&[u32]], f: (i64, i64)) -> Vec<u8> {
    SnmpMessage {
        version,
        community: b"public".to_vec(),
        pdu: Pdu {
            tag,
            request_id: 31337,
            error_status: f.0,
            error_index: f.1,
            bindings: names
                .iter()
                .map(|n| VarBind {
                    name: n.to_vec(),
                    value: Value::Null,
                })
                .collect(),
        },
    }
    .to_bytes()
    .unwrap()
}

#[test]
fn snmp_responses() {
    if !pn_testkit::env::require_tshark() {
        return;
    }
    let agent = SnmpAgent::new(SystemInfo {
        // Long enough that the walk's lengths take two octets (0x82 nn nn).
        descr: "pn-device PROFINET IO device; ".repeat(8),
        contact: String::new(),
        name: "dev-1".into(),
        location: "hall 7".into(),
    });
    let name: &[u32] = &[1, 3, 6, 1, 2, 1, 1, 5, 0];
    let bad_instance: &[u32] = &[1, 3, 6, 1, 2, 1, 1, 5, 1];
    let last: &[u32] = &[1, 3, 6, 1, 2, 1, 1, 7, 0];
    let requests = [
        request(1, pdu::GET, &[name, bad_instance, &[1, 3, 6, 1, 9]], (0, 0)),
        request(1, pdu::GET_BULK, &[&SYSTEM], (0, 10)),
        request(0, pdu::GET_NEXT, &[last], (0, 0)),
        request(1, pdu::SET, &[name], (0, 0)),
    ];
    let frames: Vec<Vec<u8>> = requests
        .iter()
        .map(|r| from_device(snmp::PORT, &agent.handle(r, 4242).expect("an answer")))
        .collect();
    assert!(
        frames[1].len() > 14 + 28 + 0x100,
        "GetBulk answer too short"
    );
    let pkts = dissect(&frames);
    for p in &pkts {
        assert!(p.protocols().contains("udp:snmp"), "{}", p.protocols());
        assert_eq!(p.uint("snmp.request_id"), 31337);
    }
    let p = &pkts[0];
    assert_eq!(p.uint("snmp.error_status"), 0);
    assert_eq!(p.get("snmp.value.octets"), "64:65:76:2d:31"); // "dev-1"
    assert_eq!(p.all("snmp.name").len(), 3);
    assert!(p.field("snmp.noSuchInstance").is_some(), "{}", p.dump());
    assert!(p.field("snmp.noSuchObject").is_some(), "{}", p.dump());
    // The walk: the seven objects, then endOfMibView.
    let p = &pkts[1];
    assert_eq!(p.all("snmp.name").len(), 8, "{}", p.dump());
    assert_eq!(p.get("snmp.name"), "1.3.6.1.2.1.1.1.0");
    assert_eq!(p.uint("snmp.value.timeticks"), 4242);
    assert_eq!(p.get("snmp.value.oid"), "1.3.6.1.4.1.24686");
    assert_eq!(p.uint("snmp.value.int"), 78);
    assert!(p.field("snmp.endOfMibView").is_some(), "{}", p.dump());
    // v1: GetNext past the end -> noSuchName (2) at index 1; SET -> notWritable (17).
    assert_eq!(pkts[2].uint("snmp.error_status"), 2);
    assert_eq!(pkts[2].uint("snmp.error_index"), 1);
    assert_eq!(pkts[3].uint("snmp.error_status"), 17);
}

#[test]
fn llmnr_responses() {
    if !pn_testkit::env::require_tshark() {
        return;
    }
    let id = LlmnrIdentity {
        name: "dev-1.line-2".into(),
        ip: DEV_IP,
    };
    let query = |qtype: u16| {
        LlmnrRepr {
            id: 0xbeef,
            flags: 0,
            question: Question {
                labels: vec![b"Dev-1".to_vec(), b"line-2".to_vec()],
                qtype,
                qclass: CLASS_IN,
            },
            answers: vec![],
        }
        .to_bytes()
        .unwrap()
    };
    let frames: Vec<Vec<u8>> = [rtype::A, rtype::AAAA]
        .iter()
        .map(|&t| {
            let r = llmnr_responder::handle(&query(t), &id).expect("an answer");
            from_device(llmnr::PORT, &r)
        })
        .collect();
    let pkts = dissect(&frames);
    for p in &pkts {
        assert!(p.protocols().ends_with("udp:llmnr"), "{}", p.protocols());
        assert_eq!(p.uint("dns.id"), 0xbeef);
        assert_eq!(p.uint("dns.flags.response"), 1);
        assert_eq!(p.uint("dns.flags.rcode"), 0);
        assert_eq!(p.get("dns.qry.name"), "Dev-1.line-2");
    }
    let p = &pkts[0];
    assert_eq!(p.uint("dns.count.answers"), 1);
    assert_eq!(p.get("dns.resp.name"), "Dev-1.line-2");
    assert_eq!(p.get("dns.a"), DEV_IP.to_string());
    assert_eq!(p.uint("dns.resp.ttl"), 30);
    assert_eq!(pkts[1].uint("dns.count.answers"), 0);
    assert_eq!(pkts[1].uint("dns.qry.type"), 28);
}

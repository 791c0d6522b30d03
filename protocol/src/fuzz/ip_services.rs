//! Fuzz entry points of the small IP-side protocols a device answers besides PROFINET: ARP,
//! SNMP and LLMNR, each codec round trip plus the responder on the same bytes.

use crate::wire::Emit;
use std::net::Ipv4Addr;

use crate::machine::llmnr_responder::{self, LlmnrIdentity};
use crate::machine::snmp_agent::{self, SnmpAgent, SystemInfo};
use crate::wire::arp::{ArpPacket, ArpRepr, Operation};
use crate::wire::ethernet::MacAddr;
use crate::wire::field::Writer;
use crate::wire::llmnr::{LlmnrRepr, FLAG_QR};
use crate::wire::snmp::{ber, pdu, SnmpMessage};

/// A complete Ethernet frame carrying ARP; a request is also answered.
pub fn arp(data: &[u8]) {
    let Ok((eth, a)) = ArpRepr::parse_frame(data) else {
        return;
    };
    let mut w = Writer::new();
    a.emit(&mut w)
        .unwrap_or_else(|e| panic!("arp: emit failed: {e:?}"));
    assert_eq!(w.len(), a.buffer_len(), "arp: buffer_len differs from emit");
    let p = ArpPacket::new_checked(&w.buf[..]).unwrap_or_else(|e| panic!("arp: view: {e:?}"));
    let b = ArpRepr::parse(&p).unwrap_or_else(|e| panic!("arp: re-parse failed: {e:?}"));
    same!(a, b, "arp");
    let owner = MacAddr([0x02, 0, 0, 0, 0, 0x42]);
    if let Some(r) = a.reply(owner) {
        let f = r.frame(eth.src);
        let (e2, back) =
            ArpRepr::parse_frame(&f).unwrap_or_else(|e| panic!("arp: reply re-parse: {e:?}"));
        assert_eq!((e2.dst, e2.src), (eth.src, owner), "arp: reply addresses");
        assert_eq!(back.operation, Operation::Reply);
        assert_eq!(
            (back.target_mac, back.target_ip),
            (a.sender_mac, a.sender_ip)
        );
        same!(back, r, "arp reply");
    }
}

/// One SNMP datagram: the message round trip, then the agent on the same bytes (its answer
/// must be a well-formed Response of at most `MAX_MESSAGE` bytes to the same request-id).
pub fn snmp(data: &[u8]) {
    let parsed = SnmpMessage::parse(data);
    if let Ok(m) = &parsed {
        // Parsing drops what it does not keep, so emitting never grows beyond the two bytes
        // of a NULL per VarBind; only a message near the 64 KiB length limit may not emit.
        match m.to_bytes() {
            Ok(bytes) => {
                assert_eq!(bytes.len(), m.buffer_len(), "snmp: buffer_len differs");
                let b = SnmpMessage::parse(&bytes)
                    .unwrap_or_else(|e| panic!("snmp: re-parse failed: {e:?}"));
                same!(*m, b, "snmp");
            }
            Err(e) => assert!(data.len() > ber::MAX_LEN - 1024, "snmp: emit failed: {e:?}"),
        }
    }
    let agent = SnmpAgent::new(SystemInfo {
        descr: "pn-device fuzz".into(),
        contact: String::new(),
        name: "dev-1".into(),
        location: "hall".into(),
    });
    let up = data.first().map_or(0, |&b| u32::from(b) * 1000);
    if let Some(r) = agent.handle(data, up) {
        assert!(r.len() <= snmp_agent::MAX_MESSAGE, "snmp: answer too long");
        let m = parsed.unwrap_or_else(|e| panic!("snmp: answered an unparsable request: {e:?}"));
        let a = SnmpMessage::parse(&r).unwrap_or_else(|e| panic!("snmp: own answer: {e:?}"));
        assert_eq!(a.pdu.tag, pdu::RESPONSE);
        assert_eq!(a.pdu.request_id, m.pdu.request_id);
        assert_eq!((a.version, &a.community), (m.version, &m.community));
    }
}

/// One LLMNR datagram: the message round trip, then the responder on the same bytes with the
/// question's own name as the device's (so that well-formed queries get answered).
pub fn llmnr(data: &[u8]) {
    let Ok(m) = LlmnrRepr::parse(data) else {
        assert!(llmnr_responder::handle(data, &identity("dev-1")).is_none());
        return;
    };
    let bytes = m
        .to_bytes()
        .unwrap_or_else(|e| panic!("llmnr: emit failed: {e:?}"));
    assert_eq!(bytes.len(), m.buffer_len(), "llmnr: buffer_len differs");
    let b = LlmnrRepr::parse(&bytes).unwrap_or_else(|e| panic!("llmnr: re-parse failed: {e:?}"));
    same!(m, b, "llmnr");
    let name = m.question.name();
    if let Some(r) = llmnr_responder::handle(data, &identity(&name)) {
        let a = LlmnrRepr::parse(&r).unwrap_or_else(|e| panic!("llmnr: own answer: {e:?}"));
        assert_eq!((a.id, a.flags), (m.id, FLAG_QR));
        assert_eq!(a.question, m.question, "llmnr: question not echoed");
        assert!(a.answers.len() <= 1);
    }
}

fn identity(name: &str) -> LlmnrIdentity {
    LlmnrIdentity {
        name: name.into(),
        ip: Ipv4Addr::new(10, 0, 0, 2),
    }
}

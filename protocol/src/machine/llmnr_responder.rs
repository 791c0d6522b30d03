//! The LLMNR responder (RFC 4795), sans-IO: query datagram + the device's name and IPv4
//! address -> response datagram. Wire format: [`crate::wire::llmnr`]. pn-device runs it on
//! its UDP socket (port 5355, group 224.0.0.252), the farm for each of its devices from its
//! packet socket.
//!
//! * The name compares case-insensitively (§2.5, ASCII); a query for another name is not
//!   answered (§2.1: only authoritative answers).
//! * A (and ANY) queries for our name get one A record with our address, TTL
//!   [`ANSWER_TTL`] (§2.8 default). For our name and another type (AAAA, MX, ...), the answer
//!   is NOERROR with no answer records, so the querier does not wait for a timeout (§2.1.1).
//! * The caller sends the response by unicast UDP to the querier's address and port (§2.6).
//!   Nothing is answered while the device has no name or no IP address.
//! * Malformed queries, responses (QR=1), opcodes other than 0, QDCOUNT != 1, answer or
//!   authority records in a query, classes other than IN / ANY and compressed question names
//!   are dropped silently (§2.1.1).

use crate::wire::Emit;
use std::net::Ipv4Addr;

use crate::wire::llmnr::{rtype, LlmnrRepr, Record, CLASS_IN, FLAG_QR};

/// TTL of our answers, seconds (RFC 4795 §2.8).
pub const ANSWER_TTL: u32 = 30;

/// Who we are (read for every query).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LlmnrIdentity {
    /// Station name (single or multi-label; "" = answer nothing).
    pub name: String,
    pub ip: Ipv4Addr,
}

impl Default for LlmnrIdentity {
    fn default() -> Self {
        LlmnrIdentity {
            name: String::new(),
            ip: Ipv4Addr::UNSPECIFIED,
        }
    }
}

/// Answer one query datagram; `None` = no answer.
pub fn handle(query: &[u8], id: &LlmnrIdentity) -> Option<Vec<u8>> {
    if id.name.is_empty() || id.ip.is_unspecified() {
        return None;
    }
    let q = LlmnrRepr::parse(query).ok()?;
    let qs = &q.question;
    let class_ok = qs.qclass == CLASS_IN || qs.qclass == rtype::ANY;
    if !q.is_standard_query() || !q.answers.is_empty() || !class_ok || !qs.is_for(&id.name) {
        return None;
    }
    let answer = qs.qtype == rtype::A || qs.qtype == rtype::ANY;
    LlmnrRepr {
        id: q.id,
        // QR=1, opcode 0, C=0, TC=0, T=0, RCODE 0.
        flags: FLAG_QR,
        question: q.question,
        answers: answer
            .then(|| Record::a(id.ip, ANSWER_TTL))
            .into_iter()
            .collect(),
    }
    .to_bytes()
    .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(name: &str, qtype: u16) -> Vec<u8> {
        let mut q = vec![0x12, 0x34, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0];
        for l in name.split('.') {
            q.push(l.len() as u8);
            q.extend_from_slice(l.as_bytes());
        }
        q.push(0);
        q.extend_from_slice(&qtype.to_be_bytes());
        q.extend_from_slice(&1u16.to_be_bytes());
        q
    }

    fn id() -> LlmnrIdentity {
        LlmnrIdentity {
            name: "dev-1".into(),
            ip: Ipv4Addr::new(10, 0, 0, 2),
        }
    }

    #[test]
    fn answers_a_for_our_name_only() {
        let r = handle(&query("DEV-1", rtype::A), &id()).unwrap();
        assert_eq!(&r[0..2], &[0x12, 0x34]);
        assert_eq!(u16::from_be_bytes([r[2], r[3]]), 0x8000);
        assert_eq!(u16::from_be_bytes([r[6], r[7]]), 1);
        assert_eq!(&r[r.len() - 4..], &[10, 0, 0, 2]);
        // The question is echoed as sent (case kept), the answer points at it.
        let q = query("DEV-1", rtype::A);
        assert_eq!(&r[12..q.len()], &q[12..]);
        assert_eq!(&r[q.len()..q.len() + 2], &[0xc0, 0x0c]);
        assert_eq!(&r[q.len() + 6..q.len() + 10], &ANSWER_TTL.to_be_bytes());
        // AAAA for our name: empty answer.
        let r = handle(&query("dev-1", rtype::AAAA), &id()).unwrap();
        assert_eq!(u16::from_be_bytes([r[6], r[7]]), 0);
        assert!(handle(&query("other", rtype::A), &id()).is_none());
        let mut no_ip = id();
        no_ip.ip = Ipv4Addr::UNSPECIFIED;
        assert!(handle(&query("dev-1", rtype::A), &no_ip).is_none());
        assert!(handle(&query("dev-1", rtype::A), &LlmnrIdentity::default()).is_none());
        // A response (QR=1) is not answered, nor another opcode or class.
        let mut q = query("dev-1", rtype::A);
        q[2] = 0x80;
        assert!(handle(&q, &id()).is_none());
        let mut q = query("dev-1", rtype::A);
        q[2] = 0x08;
        assert!(handle(&q, &id()).is_none());
        let mut q = query("dev-1", rtype::A);
        *q.last_mut().unwrap() = 3;
        assert!(handle(&q, &id()).is_none());
    }

    #[test]
    fn garbage_never_panics() {
        let q = query("dev-1", rtype::A);
        for cut in 0..q.len() {
            assert!(handle(&q[..cut], &id()).is_none());
        }
        let mut x = q.clone();
        for i in 0..x.len() {
            for v in [0, 0x3f, 0x40, 0xc0, 0xff] {
                let o = x[i];
                x[i] = v;
                let _ = handle(&x, &id());
                x[i] = o;
            }
        }
    }
}

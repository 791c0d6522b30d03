//! LLMNR messages (RFC 4795 §2.1.1): the DNS message format (RFC 1035 §4.1) as far as a
//! single-question responder needs it.
//!
//! Layout: ID (2) | flags (2: QR, opcode (4 bits), C, TC, T, reserved, RCODE) | QDCOUNT |
//! ANCOUNT | NSCOUNT | ARCOUNT | question | answers. [`LlmnrRepr`] holds exactly one question
//! (RFC 4795 §2.1.1: a query with QDCOUNT other than 1 is dropped) with an uncompressed name,
//! and answer records owned by that name, written as a compression pointer to it (offset 12,
//! as responders do). Authority records are not supported; additional records (an EDNS0 OPT)
//! are not read. Bytes after the last record are ignored. A name is at most 255 bytes of
//! labels of at most 63 bytes (RFC 1035 §2.3.4); label types other than plain (pointers,
//! extended) are refused in the question.

use crate::wire::Emit;
use std::net::Ipv4Addr;

use crate::wire::ethernet::MacAddr;
use crate::wire::field::{self, Reader, Writer};
use crate::wire::{Error, Result};

/// LLMNR UDP port.
pub const PORT: u16 = 5355;
/// LLMNR IPv4 multicast group.
pub const GROUP: Ipv4Addr = Ipv4Addr::new(224, 0, 0, 252);
/// Ethernet address of [`GROUP`] (RFC 1112 §6.4: 01:00:5E + the group's low 23 bits).
pub const GROUP_MAC: MacAddr = MacAddr([0x01, 0x00, 0x5e, 0x00, 0x00, 0xfc]);

/// Record types used here.
pub mod rtype {
    pub const A: u16 = 1;
    pub const AAAA: u16 = 28;
    /// QTYPE "*" (RFC 1035 §3.2.3); as a QCLASS, 255 is "any class" too.
    pub const ANY: u16 = 255;
}
/// Class IN.
pub const CLASS_IN: u16 = 1;
/// QR: the message is a response.
pub const FLAG_QR: u16 = 0x8000;
const OPCODE_MASK: u16 = 0x7800;
/// Longest name (RFC 1035 §2.3.4).
const MAX_NAME: usize = 255;
/// A compression pointer to offset 12, the question name.
const NAME_POINTER: [u8; 2] = [0xc0, 0x0c];

mod field_def {
    use crate::wire::field::Field;
    pub const ID: Field = 0..2;
    pub const FLAGS: Field = 2..4;
    pub const QDCOUNT: Field = 4..6;
    pub const ANCOUNT: Field = 6..8;
    pub const NSCOUNT: Field = 8..10;
    pub const ARCOUNT: Field = 10..12;
    pub const HEADER_LEN: usize = 12;
}
use field_def as f;

/// A view of the fixed header.
#[derive(Debug, Clone)]
pub struct Header<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Header<T> {
    pub fn new_checked(buffer: T) -> Result<Self> {
        let h = Header { buffer };
        h.check_len()?;
        Ok(h)
    }
    pub fn check_len(&self) -> Result<()> {
        if self.buffer.as_ref().len() < f::HEADER_LEN {
            return Err(Error::Truncated);
        }
        Ok(())
    }
    pub fn into_inner(self) -> T {
        self.buffer
    }
    fn u16_at(&self, r: field::Field) -> u16 {
        field::get_u16(self.buffer.as_ref(), r.start)
    }
    pub fn id(&self) -> u16 {
        self.u16_at(f::ID)
    }
    pub fn flags(&self) -> u16 {
        self.u16_at(f::FLAGS)
    }
    pub fn qdcount(&self) -> u16 {
        self.u16_at(f::QDCOUNT)
    }
    pub fn ancount(&self) -> u16 {
        self.u16_at(f::ANCOUNT)
    }
    pub fn nscount(&self) -> u16 {
        self.u16_at(f::NSCOUNT)
    }
    pub fn arcount(&self) -> u16 {
        self.u16_at(f::ARCOUNT)
    }
}

/// The question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Question {
    /// The name's labels, as sent (case kept).
    pub labels: Vec<Vec<u8>>,
    pub qtype: u16,
    pub qclass: u16,
}

impl Question {
    /// The dotted name.
    pub fn name(&self) -> String {
        String::from_utf8_lossy(&self.labels.join(&b'.')).into_owned()
    }
    /// Names compare case-insensitively (RFC 4795 §2.5, ASCII only).
    pub fn is_for(&self, name: &str) -> bool {
        self.name().eq_ignore_ascii_case(name)
    }
    fn name_len(&self) -> usize {
        self.labels.iter().map(|l| l.len() + 1).sum::<usize>() + 1
    }
}

/// An answer record owned by the question name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    pub rtype: u16,
    pub class: u16,
    /// Seconds.
    pub ttl: u32,
    pub rdata: Vec<u8>,
}

impl Record {
    /// An A record.
    pub fn a(ip: Ipv4Addr, ttl: u32) -> Record {
        Record {
            rtype: rtype::A,
            class: CLASS_IN,
            ttl,
            rdata: ip.octets().to_vec(),
        }
    }
}

/// An LLMNR query or response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LlmnrRepr {
    pub id: u16,
    pub flags: u16,
    pub question: Question,
    pub answers: Vec<Record>,
}

fn read_labels(r: &mut Reader<'_>) -> Result<Vec<Vec<u8>>> {
    let mut labels = Vec::new();
    let mut total = 0usize;
    loop {
        let len = usize::from(r.u8()?);
        if len == 0 {
            return Ok(labels);
        }
        if len > 63 {
            return Err(Error::Unsupported("compressed or extended name label"));
        }
        total += len + 1;
        if total > MAX_NAME {
            return Err(Error::Malformed("name longer than 255 bytes"));
        }
        labels.push(r.bytes(len)?.to_vec());
    }
}

fn read_record(r: &mut Reader<'_>) -> Result<Record> {
    if r.array::<2>()? != NAME_POINTER {
        return Err(Error::Unsupported("answer name other than the question's"));
    }
    let rtype = r.u16()?;
    let class = r.u16()?;
    let ttl = r.u32()?;
    let n = usize::from(r.u16()?);
    Ok(Record {
        rtype,
        class,
        ttl,
        rdata: r.bytes(n)?.to_vec(),
    })
}

impl LlmnrRepr {
    /// Parse one datagram. Fuzz entry point of this module.
    pub fn parse(msg: &[u8]) -> Result<LlmnrRepr> {
        let h = Header::new_checked(msg)?;
        if h.qdcount() != 1 {
            return Err(Error::Unsupported("QDCOUNT other than 1"));
        }
        if h.nscount() != 0 {
            return Err(Error::Unsupported("authority records"));
        }
        let mut r = Reader::new(&msg[f::HEADER_LEN..]);
        let labels = read_labels(&mut r)?;
        let question = Question {
            labels,
            qtype: r.u16()?,
            qclass: r.u16()?,
        };
        // Each record takes at least 12 bytes of the input: bounded by the datagram.
        let answers = (0..h.ancount())
            .map(|_| read_record(&mut r))
            .collect::<Result<Vec<_>>>()?;
        Ok(LlmnrRepr {
            id: h.id(),
            flags: h.flags(),
            question,
            answers,
        })
    }

    /// QR clear and opcode 0: a standard query.
    pub fn is_standard_query(&self) -> bool {
        self.flags & (FLAG_QR | OPCODE_MASK) == 0
    }
}

impl Emit for LlmnrRepr {
    fn buffer_len(&self) -> usize {
        f::HEADER_LEN
            + self.question.name_len()
            + 4
            + self
                .answers
                .iter()
                .map(|a| 12 + a.rdata.len())
                .sum::<usize>()
    }

    fn emit(&self, w: &mut Writer) -> Result<()> {
        let q = &self.question;
        if q.labels.iter().any(|l| l.is_empty() || l.len() > 63) || q.name_len() - 1 > MAX_NAME {
            return Err(Error::Malformed("name label empty or too long"));
        }
        let an = u16::try_from(self.answers.len())
            .map_err(|_| Error::Malformed("more than 65535 answers"))?;
        w.u16(self.id).u16(self.flags).u16(1).u16(an).u16(0).u16(0);
        for l in &q.labels {
            w.u8(l.len() as u8).bytes(l);
        }
        w.u8(0).u16(q.qtype).u16(q.qclass);
        for a in &self.answers {
            let n = u16::try_from(a.rdata.len())
                .map_err(|_| Error::Malformed("RDATA longer than 65535 bytes"))?;
            w.bytes(&NAME_POINTER)
                .u16(a.rtype)
                .u16(a.class)
                .u32(a.ttl)
                .u16(n)
                .bytes(&a.rdata);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A query as scapy's `LLMNRQuery(id=0x1234, qd=DNSQR(qname="dev-1.line"))` sends it.
    fn query() -> Vec<u8> {
        let mut q = vec![0x12, 0x34, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0];
        q.extend_from_slice(b"\x05dev-1\x04line\x00\x00\x01\x00\x01");
        q
    }

    #[test]
    fn query_parses_and_emits_the_same_bytes() {
        let q = LlmnrRepr::parse(&query()).unwrap();
        assert_eq!(q.id, 0x1234);
        assert!(q.is_standard_query());
        assert_eq!(q.question.name(), "dev-1.line");
        assert!(q.question.is_for("DEV-1.Line"));
        assert!(!q.question.is_for("dev-1"));
        assert_eq!((q.question.qtype, q.question.qclass), (rtype::A, CLASS_IN));
        assert_eq!(q.to_bytes().unwrap(), query());
        assert_eq!(q.buffer_len(), query().len());
    }

    #[test]
    fn a_response_round_trips() {
        let mut r = LlmnrRepr::parse(&query()).unwrap();
        r.flags = FLAG_QR;
        r.answers.push(Record::a(Ipv4Addr::new(10, 0, 0, 2), 30));
        let b = r.to_bytes().unwrap();
        assert_eq!(b.len(), r.buffer_len());
        assert_eq!(&b[b.len() - 16..b.len() - 14], &NAME_POINTER);
        assert_eq!(&b[b.len() - 4..], &[10, 0, 0, 2]);
        let back = LlmnrRepr::parse(&b).unwrap();
        assert_eq!(back, r);
        assert!(!back.is_standard_query());
    }

    #[test]
    fn refused_and_cut_messages() {
        let q = query();
        for n in 0..q.len() {
            assert!(LlmnrRepr::parse(&q[..n]).is_err(), "cut {n}");
        }
        let mut two = q.clone();
        two[5] = 2;
        assert!(LlmnrRepr::parse(&two).is_err());
        let mut ns = q.clone();
        ns[9] = 1;
        assert!(LlmnrRepr::parse(&ns).is_err());
        let mut ptr = q.clone();
        ptr[12] = 0xc0;
        assert!(LlmnrRepr::parse(&ptr).is_err());
        let mut long = q[..12].to_vec();
        for _ in 0..5 {
            long.push(63);
            long.extend_from_slice(&[b'a'; 63]);
        }
        long.extend_from_slice(&[0, 0, 1, 0, 1]);
        assert_eq!(
            LlmnrRepr::parse(&long),
            Err(Error::Malformed("name longer than 255 bytes"))
        );
    }
}

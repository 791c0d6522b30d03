//! ARP (RFC 826) for IPv4 over Ethernet: the 28-byte packet after the EtherType 0x0806.
//!
//! Layout: HTYPE (2) | PTYPE (2) | HLEN (1) | PLEN (1) | OPER (2) | SHA (6) | SPA (4) |
//! THA (6) | TPA (4). Only HTYPE 1 (Ethernet), PTYPE 0x0800 (IPv4), HLEN 6, PLEN 4 are
//! supported; anything else parses as [`Error::Unsupported`]. Bytes after the packet (Ethernet
//! padding) are ignored.
//!
//! pn-device leaves ARP to the kernel, which owns its IP. The farm's device IPs are not the
//! kernel's (one NIC, N virtual devices), so the farm answers for them with [`ArpRepr::reply`]
//! (RFC 826 "Packet Reception": the owner of the target protocol address swaps the addresses,
//! puts its own hardware address in and sends the reply to the requester).

use crate::wire::Emit;
use std::net::Ipv4Addr;

use crate::wire::ethernet::{ethertype, EthernetRepr, MacAddr};
use crate::wire::field::{self, Writer};
use crate::wire::{Error, Result};

/// ARP hardware type of Ethernet.
pub const HTYPE_ETHERNET: u16 = 1;
/// Length of an IPv4-over-Ethernet ARP packet.
pub const PACKET_LEN: usize = 28;

mod field_def {
    use crate::wire::field::Field;
    pub const HTYPE: Field = 0..2;
    pub const PTYPE: Field = 2..4;
    pub const HLEN: usize = 4;
    pub const PLEN: usize = 5;
    pub const OPER: Field = 6..8;
    pub const SHA: Field = 8..14;
    pub const SPA: Field = 14..18;
    pub const THA: Field = 18..24;
    pub const TPA: Field = 24..28;
}
use field_def as f;

/// ARP operation code (RFC 826; 1 and 2 are the only ones IPv4 over Ethernet uses).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operation {
    Request,
    Reply,
    Unknown(u16),
}

impl From<u16> for Operation {
    fn from(v: u16) -> Self {
        match v {
            1 => Operation::Request,
            2 => Operation::Reply,
            x => Operation::Unknown(x),
        }
    }
}

impl From<Operation> for u16 {
    fn from(o: Operation) -> u16 {
        match o {
            Operation::Request => 1,
            Operation::Reply => 2,
            Operation::Unknown(x) => x,
        }
    }
}

/// A read view of an ARP packet.
#[derive(Debug, Clone)]
pub struct ArpPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> ArpPacket<T> {
    /// Crate-internal: for a buffer whose length is already established.
    pub(crate) fn new_unchecked(buffer: T) -> Self {
        ArpPacket { buffer }
    }
    pub fn new_checked(buffer: T) -> Result<Self> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }
    /// The buffer holds the fixed 28 bytes (the only length IPv4 over Ethernet has).
    pub fn check_len(&self) -> Result<()> {
        if self.buffer.as_ref().len() < PACKET_LEN {
            return Err(Error::Truncated);
        }
        Ok(())
    }
    pub fn into_inner(self) -> T {
        self.buffer
    }
    fn b(&self) -> &[u8] {
        self.buffer.as_ref()
    }
    pub fn hardware_type(&self) -> u16 {
        field::get_u16(self.b(), f::HTYPE.start)
    }
    pub fn protocol_type(&self) -> u16 {
        field::get_u16(self.b(), f::PTYPE.start)
    }
    pub fn hardware_len(&self) -> u8 {
        field::get_u8(self.b(), f::HLEN)
    }
    pub fn protocol_len(&self) -> u8 {
        field::get_u8(self.b(), f::PLEN)
    }
    pub fn operation(&self) -> Operation {
        Operation::from(field::get_u16(self.b(), f::OPER.start))
    }
    pub fn sender_mac(&self) -> MacAddr {
        MacAddr(field::get_array(self.b(), f::SHA.start))
    }
    pub fn sender_ip(&self) -> Ipv4Addr {
        Ipv4Addr::from(field::get_array::<4>(self.b(), f::SPA.start))
    }
    pub fn target_mac(&self) -> MacAddr {
        MacAddr(field::get_array(self.b(), f::THA.start))
    }
    pub fn target_ip(&self) -> Ipv4Addr {
        Ipv4Addr::from(field::get_array::<4>(self.b(), f::TPA.start))
    }
}

/// An owned ARP packet of IPv4 over Ethernet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ArpRepr {
    pub operation: Operation,
    pub sender_mac: MacAddr,
    pub sender_ip: Ipv4Addr,
    pub target_mac: MacAddr,
    pub target_ip: Ipv4Addr,
}

impl ArpRepr {
    pub fn parse<T: AsRef<[u8]>>(p: &ArpPacket<T>) -> Result<ArpRepr> {
        p.check_len()?;
        if p.hardware_type() != HTYPE_ETHERNET
            || p.protocol_type() != ethertype::IPV4
            || p.hardware_len() != 6
            || p.protocol_len() != 4
        {
            return Err(Error::Unsupported("ARP other than IPv4 over Ethernet"));
        }
        Ok(ArpRepr {
            operation: p.operation(),
            sender_mac: p.sender_mac(),
            sender_ip: p.sender_ip(),
            target_mac: p.target_mac(),
            target_ip: p.target_ip(),
        })
    }

    /// Parse a complete Ethernet frame (an 802.1Q tag is allowed). Fuzz entry point.
    pub fn parse_frame(frame: &[u8]) -> Result<(EthernetRepr, ArpRepr)> {
        let (eth, payload) = EthernetRepr::parse_frame(frame)?;
        if eth.ethertype != ethertype::ARP {
            return Err(Error::Unsupported("EtherType is not ARP"));
        }
        Ok((eth, ArpRepr::parse(&ArpPacket::new_checked(payload)?)?))
    }

    /// The reply of `mac`, the owner of `self.target_ip`, to this packet; `None` unless it is
    /// a request for a specified address (0.0.0.0 is nobody's: RFC 5227 probes ask for it
    /// from a sender, never for it).
    pub fn reply(&self, mac: MacAddr) -> Option<ArpRepr> {
        (self.operation == Operation::Request && !self.target_ip.is_unspecified()).then_some(
            ArpRepr {
                operation: Operation::Reply,
                sender_mac: mac,
                sender_ip: self.target_ip,
                target_mac: self.sender_mac,
                target_ip: self.sender_ip,
            },
        )
    }

    /// A complete untagged Ethernet frame carrying this packet from `sender_mac` to `dst`,
    /// padded to the Ethernet minimum.
    pub fn frame(&self, dst: MacAddr) -> Vec<u8> {
        let mut w = Writer::with_capacity(PACKET_LEN);
        // Cannot fail: the packet has no variable part.
        let _ = self.emit(&mut w);
        EthernetRepr {
            dst,
            src: self.sender_mac,
            vlan: None,
            ethertype: ethertype::ARP,
        }
        .build(&w.buf)
    }
}

impl Emit for ArpRepr {
    fn buffer_len(&self) -> usize {
        PACKET_LEN
    }

    fn emit(&self, w: &mut Writer) -> Result<()> {
        w.u16(HTYPE_ETHERNET)
            .u16(ethertype::IPV4)
            .u8(6)
            .u8(4)
            .u16(self.operation.into())
            .bytes(&self.sender_mac.0)
            .bytes(&self.sender_ip.octets())
            .bytes(&self.target_mac.0)
            .bytes(&self.target_ip.octets());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CTL: MacAddr = MacAddr([2, 0, 0, 0, 0, 1]);
    const DEV: MacAddr = MacAddr([2, 0, 0, 0, 0, 2]);

    fn request() -> Vec<u8> {
        let mut f = vec![0xff; 6];
        f.extend_from_slice(&CTL.0);
        f.extend_from_slice(&[0x08, 0x06, 0, 1, 0x08, 0, 6, 4, 0, 1]);
        f.extend_from_slice(&CTL.0);
        f.extend_from_slice(&[10, 0, 0, 1]);
        f.extend_from_slice(&[0; 6]);
        f.extend_from_slice(&[10, 0, 0, 7]);
        f
    }

    #[test]
    fn a_request_is_answered_by_the_owner() {
        let (_, req) = ArpRepr::parse_frame(&request()).unwrap();
        assert_eq!(req.operation, Operation::Request);
        assert_eq!(req.target_ip, Ipv4Addr::new(10, 0, 0, 7));
        let rep = req.reply(DEV).unwrap();
        let f = rep.frame(req.sender_mac);
        assert_eq!(f.len(), 60);
        assert_eq!(&f[..6], &CTL.0);
        assert_eq!(&f[6..12], &DEV.0);
        let (eth, back) = ArpRepr::parse_frame(&f).unwrap();
        assert_eq!(eth.src, DEV);
        assert_eq!(back.operation, Operation::Reply);
        assert_eq!(back.sender_mac, DEV);
        assert_eq!(back.sender_ip, Ipv4Addr::new(10, 0, 0, 7));
        assert_eq!(back.target_mac, CTL);
        assert_eq!(back.target_ip, Ipv4Addr::new(10, 0, 0, 1));
        // A reply is not answered, nor a request for 0.0.0.0.
        assert_eq!(back.reply(DEV), None);
        let mut probe = req;
        probe.target_ip = Ipv4Addr::UNSPECIFIED;
        assert_eq!(probe.reply(DEV), None);
    }

    #[test]
    fn tagged_requests_parse_and_nothing_else_does() {
        let mut t = request();
        t.splice(12..12, [0x81, 0x00, 0x00, 0x05]);
        assert!(ArpRepr::parse_frame(&t).is_ok());
        let r = request();
        for n in 0..r.len() {
            assert!(ArpRepr::parse_frame(&r[..n]).is_err(), "cut at {n}");
        }
        let mut ipv6 = request();
        ipv6[16] = 0x86;
        assert_eq!(
            ArpRepr::parse_frame(&ipv6),
            Err(Error::Unsupported("ARP other than IPv4 over Ethernet"))
        );
        for b in 0..=255u8 {
            let _ = ArpRepr::parse_frame(&[b; 41]);
        }
    }

    #[test]
    fn emit_is_buffer_len_bytes_and_round_trips() {
        let (_, req) = ArpRepr::parse_frame(&request()).unwrap();
        let mut w = Writer::new();
        req.emit(&mut w).unwrap();
        assert_eq!(w.len(), req.buffer_len());
        assert_eq!(&w.buf[..], &request()[14..]);
        let p = ArpPacket::new_checked(&w.buf[..]).unwrap();
        assert_eq!(ArpRepr::parse(&p).unwrap(), req);
    }
}

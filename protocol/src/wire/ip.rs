//! Minimal IPv4 and UDP, as far as PNIO-CM (DCE/RPC over UDP port 34964) needs them.
//!
//! * [`Ipv4Packet`] / [`Ipv4Repr`]: RFC 791 header. Parsing accepts options (skipped via IHL)
//!   and trailing bytes after `TotalLength` (Ethernet padding); emitting writes a 20-byte header
//!   without options, with the header checksum filled in. Fragmented datagrams (MF set or a
//!   non-zero fragment offset) are reported as [`Error::Unsupported`]: PNIO-CM fragments at the
//!   RPC layer, never at the IP layer.
//! * [`UdpPacket`] / [`UdpRepr`]: RFC 768 header with the checksum over the IPv4 pseudo-header.
//! * [`udp_frame`] builds a complete Ethernet II / IPv4 / UDP frame (tests put RPC payloads into
//!   pcaps with it); [`UdpFrame::parse`] takes a captured Ethernet frame (optionally with one
//!   802.1Q tag) apart. `UdpFrame::parse` is the fuzz entry point of this module.
//!
//! Sources: RFC 791 section 3.1 (header layout, checksum), RFC 768 (UDP header, pseudo-header,
//! checksum 0 = "no checksum", a computed 0 is sent as 0xFFFF), RFC 1071 (one's complement sum).

use crate::wire::field::{self, Field};
use crate::wire::{Emit, Error, Result, Writer};
use std::net::Ipv4Addr;

/// EtherType of IPv4.
pub const ETHERTYPE_IPV4: u16 = 0x0800;
/// EtherType (TPID) of an IEEE 802.1Q tag.
pub const ETHERTYPE_VLAN: u16 = 0x8100;
/// IP protocol number of UDP.
pub const PROTOCOL_UDP: u8 = 17;
/// The well-known PNIO-CM (DCE/RPC endpoint mapper) UDP port, 0x8894.
pub const PNIO_CM_PORT: u16 = 34964;
/// Length of an Ethernet II header without tag.
pub const ETHERNET_HEADER_LEN: usize = 14;

/// Add `data` to a running 32-bit one's complement accumulator (RFC 1071). Odd trailing byte is
/// padded with zero. The accumulator cannot overflow for inputs below 128 KiB per call chain.
pub fn checksum_add(mut acc: u32, data: &[u8]) -> u32 {
    let mut chunks = data.chunks_exact(2);
    for c in &mut chunks {
        acc = acc.wrapping_add(u32::from(u16::from_be_bytes([c[0], c[1]])));
    }
    if let [last] = chunks.remainder() {
        acc = acc.wrapping_add(u32::from(*last) << 8);
    }
    acc
}

/// Fold a 32-bit accumulator to 16 bits and complement it (the value to put into the header).
pub fn checksum_finish(mut acc: u32) -> u16 {
    while acc > 0xffff {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    !(acc as u16)
}

/// The Internet checksum of `data`.
pub fn checksum(data: &[u8]) -> u16 {
    checksum_finish(checksum_add(0, data))
}

fn pseudo_header_sum(src: Ipv4Addr, dst: Ipv4Addr, protocol: u8, len: u16) -> u32 {
    let mut acc = checksum_add(0, &src.octets());
    acc = checksum_add(acc, &dst.octets());
    acc = acc.wrapping_add(u32::from(protocol));
    acc.wrapping_add(u32::from(len))
}

mod field_ipv4 {
    use crate::wire::field::Field;
    pub const VER_IHL: usize = 0;
    pub const TOS: usize = 1;
    pub const LENGTH: Field = 2..4;
    pub const IDENT: Field = 4..6;
    pub const FLG_OFF: Field = 6..8;
    pub const TTL: usize = 8;
    pub const PROTOCOL: usize = 9;
    pub const CHECKSUM: Field = 10..12;
    pub const SRC_ADDR: Field = 12..16;
    pub const DST_ADDR: Field = 16..20;
    pub const MIN_HEADER_LEN: usize = 20;
}

/// A checked view of an IPv4 packet.
#[derive(Debug, Clone)]
pub struct Ipv4Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Ipv4Packet<T> {
    /// Crate-internal: for a buffer whose length is already established (an emit into a
    /// buffer sized for it, or after an explicit check); the getters index the buffer.
    pub(crate) fn new_unchecked(buffer: T) -> Self {
        Ipv4Packet { buffer }
    }

    pub fn new_checked(buffer: T) -> Result<Self> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }

    /// Checks: at least 20 bytes, version 4, IHL >= 5, header and `TotalLength` within the
    /// buffer, `TotalLength` >= header length.
    pub fn check_len(&self) -> Result<()> {
        let b = self.buffer.as_ref();
        if b.len() < field_ipv4::MIN_HEADER_LEN {
            return Err(Error::Truncated);
        }
        if self.version() != 4 {
            return Err(Error::Malformed("IPv4 version"));
        }
        let hl = self.header_len();
        if hl < field_ipv4::MIN_HEADER_LEN {
            return Err(Error::Malformed("IPv4 IHL below 5"));
        }
        let total = usize::from(self.total_len());
        if total < hl {
            return Err(Error::Malformed("IPv4 total length below header length"));
        }
        if b.len() < total {
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

    pub fn version(&self) -> u8 {
        field::get_u8(self.b(), field_ipv4::VER_IHL) >> 4
    }
    /// Header length in bytes (IHL * 4).
    pub fn header_len(&self) -> usize {
        usize::from(field::get_u8(self.b(), field_ipv4::VER_IHL) & 0x0f) * 4
    }
    pub fn tos(&self) -> u8 {
        field::get_u8(self.b(), field_ipv4::TOS)
    }
    pub fn total_len(&self) -> u16 {
        field::get_u16(self.b(), field_ipv4::LENGTH.start)
    }
    pub fn ident(&self) -> u16 {
        field::get_u16(self.b(), field_ipv4::IDENT.start)
    }
    pub fn dont_frag(&self) -> bool {
        field::get_u16(self.b(), field_ipv4::FLG_OFF.start) & 0x4000 != 0
    }
    pub fn more_frags(&self) -> bool {
        field::get_u16(self.b(), field_ipv4::FLG_OFF.start) & 0x2000 != 0
    }
    /// Fragment offset in bytes.
    pub fn frag_offset(&self) -> u16 {
        (field::get_u16(self.b(), field_ipv4::FLG_OFF.start) & 0x1fff) << 3
    }
    pub fn ttl(&self) -> u8 {
        field::get_u8(self.b(), field_ipv4::TTL)
    }
    pub fn protocol(&self) -> u8 {
        field::get_u8(self.b(), field_ipv4::PROTOCOL)
    }
    pub fn checksum(&self) -> u16 {
        field::get_u16(self.b(), field_ipv4::CHECKSUM.start)
    }
    pub fn src_addr(&self) -> Ipv4Addr {
        addr(self.b(), field_ipv4::SRC_ADDR)
    }
    pub fn dst_addr(&self) -> Ipv4Addr {
        addr(self.b(), field_ipv4::DST_ADDR)
    }
    /// True when the header checksum is correct.
    pub fn verify_checksum(&self) -> bool {
        match self.b().get(..self.header_len()) {
            Some(h) => checksum_finish(checksum_add(0, h)) == 0,
            None => false,
        }
    }
    /// The payload: from the end of the header to `TotalLength` (padding excluded).
    pub fn payload(&self) -> &[u8] {
        let b = self.b();
        let end = usize::from(self.total_len()).min(b.len());
        b.get(self.header_len().min(end)..end).unwrap_or(&[])
    }
}

fn addr(b: &[u8], f: Field) -> Ipv4Addr {
    match field::slice(b, f) {
        Ok(s) => Ipv4Addr::new(s[0], s[1], s[2], s[3]),
        Err(_) => Ipv4Addr::UNSPECIFIED,
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Ipv4Packet<T> {
    fn bm(&mut self) -> &mut [u8] {
        self.buffer.as_mut()
    }
    pub fn set_checksum(&mut self, v: u16) {
        let _ = field::write_u16(self.bm(), field_ipv4::CHECKSUM.start, v);
    }
    /// Recompute and store the header checksum.
    pub fn fill_checksum(&mut self) {
        self.set_checksum(0);
        let hl = self.header_len();
        let sum = self.b().get(..hl).map_or(0, checksum);
        self.set_checksum(sum);
    }
    /// Mutable payload (header end to `TotalLength`).
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let hl = self.header_len();
        let total = usize::from(self.total_len());
        let b = self.bm();
        let end = total.min(b.len());
        let start = hl.min(end);
        &mut b[start..end]
    }
}

/// An owned IPv4 header (without options).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv4Repr {
    pub src_addr: Ipv4Addr,
    pub dst_addr: Ipv4Addr,
    pub protocol: u8,
    /// Length of the payload after the header.
    pub payload_len: usize,
    pub ttl: u8,
    /// Type of service / DSCP+ECN byte.
    pub tos: u8,
    pub ident: u16,
    pub dont_frag: bool,
}

impl Ipv4Repr {
    /// A UDP datagram header with TTL 64, DF set, identification 0.
    pub fn udp(src_addr: Ipv4Addr, dst_addr: Ipv4Addr, payload_len: usize) -> Self {
        Ipv4Repr {
            src_addr,
            dst_addr,
            protocol: PROTOCOL_UDP,
            payload_len,
            ttl: 64,
            tos: 0,
            ident: 0,
            dont_frag: true,
        }
    }

    /// Parse a checked packet. Header checksum errors are not rejected here (captures made on
    /// the sending host may hold offloaded checksums); use [`Ipv4Packet::verify_checksum`].
    pub fn parse<T: AsRef<[u8]>>(p: &Ipv4Packet<T>) -> Result<Ipv4Repr> {
        p.check_len()?;
        if p.more_frags() || p.frag_offset() != 0 {
            return Err(Error::Unsupported("fragmented IPv4 datagram"));
        }
        Ok(Ipv4Repr {
            src_addr: p.src_addr(),
            dst_addr: p.dst_addr(),
            protocol: p.protocol(),
            payload_len: usize::from(p.total_len()) - p.header_len(),
            ttl: p.ttl(),
            tos: p.tos(),
            ident: p.ident(),
            dont_frag: p.dont_frag(),
        })
    }
}

/// The 20-byte header (no options) with its checksum; the payload is not part of it.
impl Emit for Ipv4Repr {
    fn buffer_len(&self) -> usize {
        field_ipv4::MIN_HEADER_LEN
    }

    fn emit(&self, w: &mut Writer) -> Result<()> {
        let total = self
            .payload_len
            .checked_add(field_ipv4::MIN_HEADER_LEN)
            .and_then(|n| u16::try_from(n).ok())
            .ok_or(Error::Malformed("IPv4 datagram longer than 65535 bytes"))?;
        let mut h = [0u8; field_ipv4::MIN_HEADER_LEN];
        h[field_ipv4::VER_IHL] = 0x45;
        h[field_ipv4::TOS] = self.tos;
        h[field_ipv4::LENGTH].copy_from_slice(&total.to_be_bytes());
        h[field_ipv4::IDENT].copy_from_slice(&self.ident.to_be_bytes());
        let flags: u16 = if self.dont_frag { 0x4000 } else { 0 };
        h[field_ipv4::FLG_OFF].copy_from_slice(&flags.to_be_bytes());
        h[field_ipv4::TTL] = self.ttl;
        h[field_ipv4::PROTOCOL] = self.protocol;
        h[field_ipv4::CHECKSUM].copy_from_slice(&[0, 0]);
        h[field_ipv4::SRC_ADDR].copy_from_slice(&self.src_addr.octets());
        h[field_ipv4::DST_ADDR].copy_from_slice(&self.dst_addr.octets());
        let c = checksum(&h);
        h[field_ipv4::CHECKSUM].copy_from_slice(&c.to_be_bytes());
        w.bytes(&h);
        Ok(())
    }
}

mod field_udp {
    use crate::wire::field::Field;
    pub const SRC_PORT: Field = 0..2;
    pub const DST_PORT: Field = 2..4;
    pub const LENGTH: Field = 4..6;
    pub const CHECKSUM: Field = 6..8;
    pub const HEADER_LEN: usize = 8;
}

/// Length of the UDP header.
pub const UDP_HEADER_LEN: usize = field_udp::HEADER_LEN;

/// A checked view of a UDP datagram.
#[derive(Debug, Clone)]
pub struct UdpPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> UdpPacket<T> {
    /// Crate-internal: for a buffer whose length is already established (an emit into a
    /// buffer sized for it, or after an explicit check); the getters index the buffer.
    pub(crate) fn new_unchecked(buffer: T) -> Self {
        UdpPacket { buffer }
    }
    pub fn new_checked(buffer: T) -> Result<Self> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }
    /// Checks: 8 header bytes, `Length` >= 8 and within the buffer.
    pub fn check_len(&self) -> Result<()> {
        let b = self.buffer.as_ref();
        if b.len() < field_udp::HEADER_LEN {
            return Err(Error::Truncated);
        }
        let len = usize::from(self.len());
        if len < field_udp::HEADER_LEN {
            return Err(Error::Malformed("UDP length below 8"));
        }
        if b.len() < len {
            return Err(Error::Truncated);
        }
        Ok(())
    }
    pub fn into_inner(self) -> T {
        self.buffer
    }
    pub fn src_port(&self) -> u16 {
        field::get_u16(self.buffer.as_ref(), field_udp::SRC_PORT.start)
    }
    pub fn dst_port(&self) -> u16 {
        field::get_u16(self.buffer.as_ref(), field_udp::DST_PORT.start)
    }
    /// The `Length` field (header + payload).
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> u16 {
        field::get_u16(self.buffer.as_ref(), field_udp::LENGTH.start)
    }
    pub fn checksum(&self) -> u16 {
        field::get_u16(self.buffer.as_ref(), field_udp::CHECKSUM.start)
    }
    /// Payload (header end to `Length`).
    pub fn payload(&self) -> &[u8] {
        let b = self.buffer.as_ref();
        let end = usize::from(self.len()).min(b.len());
        b.get(field_udp::HEADER_LEN.min(end)..end).unwrap_or(&[])
    }
    /// True when the checksum is correct or absent (0).
    pub fn verify_checksum(&self, src: Ipv4Addr, dst: Ipv4Addr) -> bool {
        if self.checksum() == 0 {
            return true;
        }
        let len = self.len();
        let Some(seg) = self.buffer.as_ref().get(..usize::from(len)) else {
            return false;
        };
        let acc = checksum_add(pseudo_header_sum(src, dst, PROTOCOL_UDP, len), seg);
        checksum_finish(acc) == 0
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> UdpPacket<T> {
    /// Recompute and store the checksum over the pseudo-header and `Length` bytes.
    pub fn fill_checksum(&mut self, src: Ipv4Addr, dst: Ipv4Addr) {
        let len = self.len();
        let b = self.buffer.as_mut();
        if field::write_u16(b, field_udp::CHECKSUM.start, 0).is_err() {
            return;
        }
        let Some(seg) = b.get(..usize::from(len)) else {
            return;
        };
        let mut c = checksum_finish(checksum_add(
            pseudo_header_sum(src, dst, PROTOCOL_UDP, len),
            seg,
        ));
        if c == 0 {
            c = 0xffff;
        }
        let _ = field::write_u16(b, field_udp::CHECKSUM.start, c);
    }
}

/// An owned UDP header (ports only; length and checksum are computed on emit).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UdpRepr {
    pub src_port: u16,
    pub dst_port: u16,
}

impl UdpRepr {
    pub fn parse<T: AsRef<[u8]>>(p: &UdpPacket<T>) -> Result<UdpRepr> {
        p.check_len()?;
        Ok(UdpRepr {
            src_port: p.src_port(),
            dst_port: p.dst_port(),
        })
    }
}

/// A UDP datagram to emit: the header's ports, the addresses of the pseudo-header the
/// checksum covers, and the payload. A wrapper because the checksum makes the header depend
/// on all of them, while [`UdpRepr`] (what parsing yields) holds only the ports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UdpDatagram<'a> {
    pub udp: UdpRepr,
    pub src: Ipv4Addr,
    pub dst: Ipv4Addr,
    pub payload: &'a [u8],
}

/// Header, payload and checksum.
impl Emit for UdpDatagram<'_> {
    fn buffer_len(&self) -> usize {
        field_udp::HEADER_LEN + self.payload.len()
    }

    fn emit(&self, w: &mut Writer) -> Result<()> {
        let total = u16::try_from(self.buffer_len())
            .map_err(|_| Error::Malformed("UDP datagram longer than 65535 bytes"))?;
        let start = w.len();
        w.u16(self.udp.src_port)
            .u16(self.udp.dst_port)
            .u16(total)
            .u16(0)
            .bytes(self.payload);
        UdpPacket::new_unchecked(&mut w.buf[start..]).fill_checksum(self.src, self.dst);
        Ok(())
    }
}

/// Build a complete Ethernet II / IPv4 / UDP frame (no 802.1Q tag, no padding, no FCS) with
/// correct IPv4 header and UDP checksums. Errors only when the payload exceeds 65507 bytes.
pub fn udp_frame(
    src_mac: [u8; 6],
    dst_mac: [u8; 6],
    src_ip: Ipv4Addr,
    dst_ip: Ipv4Addr,
    src_port: u16,
    dst_port: u16,
    payload: &[u8],
) -> Result<Vec<u8>> {
    let udp = UdpDatagram {
        udp: UdpRepr { src_port, dst_port },
        src: src_ip,
        dst: dst_ip,
        payload,
    };
    let ip = Ipv4Repr::udp(src_ip, dst_ip, udp.buffer_len());
    let ip_len = ip.buffer_len() + udp.buffer_len();
    if ip_len > usize::from(u16::MAX) {
        return Err(Error::Malformed(
            "UDP payload too long for one IPv4 datagram",
        ));
    }
    let mut w = Writer::with_capacity(ETHERNET_HEADER_LEN + ip_len);
    w.bytes(&dst_mac).bytes(&src_mac).u16(ETHERTYPE_IPV4);
    ip.emit(&mut w)?;
    udp.emit(&mut w)?;
    Ok(w.into_inner())
}

/// A captured Ethernet frame carrying IPv4/UDP, taken apart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UdpFrame<'a> {
    pub dst_mac: [u8; 6],
    pub src_mac: [u8; 6],
    /// TCI of the 802.1Q tag, when the frame carries one.
    pub vlan_tci: Option<u16>,
    pub ip: Ipv4Repr,
    pub udp: UdpRepr,
    /// IPv4 header checksum verified correct.
    pub ip_checksum_ok: bool,
    /// UDP checksum verified correct (or absent).
    pub udp_checksum_ok: bool,
    pub payload: &'a [u8],
}

impl<'a> UdpFrame<'a> {
    /// Parse an Ethernet II frame (optionally with one 802.1Q tag) carrying IPv4/UDP. Checksum
    /// errors are reported in the flags, not rejected. Fuzz entry point of this module.
    pub fn parse(frame: &'a [u8]) -> Result<UdpFrame<'a>> {
        let dst_mac: [u8; 6] = field::slice(frame, 0..6)?
            .try_into()
            .map_err(|_| Error::Truncated)?;
        let src_mac: [u8; 6] = field::slice(frame, 6..12)?
            .try_into()
            .map_err(|_| Error::Truncated)?;
        let mut off = 12;
        let mut ethertype = field::read_u16(frame, off)?;
        let mut vlan_tci = None;
        if ethertype == ETHERTYPE_VLAN {
            vlan_tci = Some(field::read_u16(frame, off + 2)?);
            off += 4;
            ethertype = field::read_u16(frame, off)?;
        }
        off += 2;
        if ethertype != ETHERTYPE_IPV4 {
            return Err(Error::Unsupported("EtherType is not IPv4"));
        }
        let ipp = Ipv4Packet::new_checked(frame.get(off..).ok_or(Error::Truncated)?)?;
        let ip = Ipv4Repr::parse(&ipp)?;
        if ip.protocol != PROTOCOL_UDP {
            return Err(Error::Unsupported("IP protocol is not UDP"));
        }
        let ip_checksum_ok = ipp.verify_checksum();
        let ip_payload = {
            let b = ipp.into_inner();
            let hl = usize::from(b[0] & 0x0f) * 4;
            let total = usize::from(u16::from_be_bytes([b[2], b[3]]));
            b.get(hl..total).ok_or(Error::Truncated)?
        };
        let up = UdpPacket::new_checked(ip_payload)?;
        let udp = UdpRepr::parse(&up)?;
        let udp_checksum_ok = up.verify_checksum(ip.src_addr, ip.dst_addr);
        let payload = {
            let b = up.into_inner();
            let len = usize::from(u16::from_be_bytes([b[4], b[5]]));
            b.get(UDP_HEADER_LEN..len).ok_or(Error::Truncated)?
        };
        Ok(UdpFrame {
            dst_mac,
            src_mac,
            vlan_tci,
            ip,
            udp,
            ip_checksum_ok,
            udp_checksum_ok,
            payload,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const A: Ipv4Addr = Ipv4Addr::new(192, 168, 0, 1);
    const B: Ipv4Addr = Ipv4Addr::new(192, 168, 0, 2);

    #[test]
    fn rfc1071_example() {
        // RFC 1071 section 3: bytes 00 01 f2 03 f4 f5 f6 f7 sum to 0xddf2, checksum 0x220d.
        let d = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(checksum(&d), !0xddf2);
    }

    #[test]
    fn frame_round_trip_and_checksums() {
        let f = udp_frame(
            [2, 0, 0, 0, 0, 1],
            [2, 0, 0, 0, 0, 2],
            A,
            B,
            49152,
            PNIO_CM_PORT,
            b"hello",
        )
        .unwrap();
        assert_eq!(f.len(), 14 + 20 + 8 + 5);
        let p = UdpFrame::parse(&f).unwrap();
        assert!(p.ip_checksum_ok && p.udp_checksum_ok);
        assert_eq!(p.payload, b"hello");
        assert_eq!(p.udp.dst_port, PNIO_CM_PORT);
        assert_eq!(p.ip.src_addr, A);
        assert_eq!(p.src_mac, [2, 0, 0, 0, 0, 1]);
        // Corrupt one payload byte: UDP checksum fails, IP header checksum still fine.
        let mut g = f.clone();
        *g.last_mut().unwrap() ^= 1;
        let q = UdpFrame::parse(&g).unwrap();
        assert!(q.ip_checksum_ok && !q.udp_checksum_ok);
        // Padding after TotalLength is ignored.
        let mut h = f.clone();
        h.extend_from_slice(&[0; 13]);
        assert_eq!(UdpFrame::parse(&h).unwrap().payload, b"hello");
    }

    #[test]
    fn options_skipped_and_fragments_rejected() {
        let mut f = udp_frame([0; 6], [0; 6], A, B, 1, 2, b"xy").unwrap();
        // Insert 4 option bytes (NOP x4), fix IHL, total length and checksum.
        f.splice(34..34, [1u8, 1, 1, 1]);
        f[14] = 0x46;
        let tl = u16::from_be_bytes([f[16], f[17]]) + 4;
        f[16..18].copy_from_slice(&tl.to_be_bytes());
        Ipv4Packet::new_unchecked(&mut f[14..]).fill_checksum();
        let p = UdpFrame::parse(&f).unwrap();
        assert!(p.ip_checksum_ok && p.udp_checksum_ok);
        assert_eq!(p.payload, b"xy");
        f[20] = 0x20; // MF
        assert_eq!(
            UdpFrame::parse(&f).unwrap_err(),
            Error::Unsupported("fragmented IPv4 datagram")
        );
    }

    #[test]
    fn vlan_tagged() {
        let f = udp_frame([0; 6], [0; 6], A, B, 1, 2, b"z").unwrap();
        let mut t = f[..12].to_vec();
        t.extend_from_slice(&[0x81, 0x00, 0xa0, 0x00]);
        t.extend_from_slice(&f[12..]);
        let p = UdpFrame::parse(&t).unwrap();
        assert_eq!(p.vlan_tci, Some(0xa000));
        assert_eq!(p.payload, b"z");
    }

    proptest! {
        #[test]
        fn parse_never_panics(data in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = UdpFrame::parse(&data);
            let _ = Ipv4Packet::new_checked(&data[..]).map(|p| (p.payload().len(), p.verify_checksum()));
        }

        #[test]
        fn emit_parse_round_trip(payload in proptest::collection::vec(any::<u8>(), 0..600),
                                 sp in any::<u16>(), dp in any::<u16>(), a in any::<u32>(), b in any::<u32>()) {
            let (sa, da) = (Ipv4Addr::from(a), Ipv4Addr::from(b));
            let f = udp_frame([1; 6], [2; 6], sa, da, sp, dp, &payload).unwrap();
            let p = UdpFrame::parse(&f).unwrap();
            prop_assert!(p.ip_checksum_ok && p.udp_checksum_ok);
            prop_assert_eq!(p.payload, &payload[..]);
            prop_assert_eq!(p.udp, UdpRepr { src_port: sp, dst_port: dp });
            prop_assert_eq!(p.ip, Ipv4Repr::udp(sa, da, payload.len() + 8));
        }
    }
}

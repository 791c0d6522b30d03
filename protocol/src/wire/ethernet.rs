//! Ethernet II frames with an optional IEEE 802.1Q tag (no FCS).
//!
//! Layout: destination MAC (6) | source MAC (6) | [0x8100 | TCI (2)] | EtherType (2) | payload.
//! TCI = PCP (3 bits) | DEI (1 bit) | VID (12 bits). PROFINET RT frames are sent with priority
//! tags (VID 0): PCP 6 for cyclic data and high alarms, PCP 5 for low alarms, PCP 0 for DCP
//! (see `docs/protocol-notes/l2.md`).
//!
//! Frames on the wire are at least 60 bytes without FCS ([`MIN_FRAME_LEN`]); senders pad with
//! zeros ([`pad_to_min`]). Receivers must also accept unpadded short frames, as captured on the
//! sending host (real captures hold 32..36 byte frames), so [`Frame::new_checked`] only requires
//! the header.

use crate::wire::field::{self, Field};
use crate::wire::{Emit, Error, Result, Writer};
use core::fmt;

/// EtherType values used by this crate.
pub mod ethertype {
    /// IPv4.
    pub const IPV4: u16 = 0x0800;
    /// ARP.
    pub const ARP: u16 = 0x0806;
    /// IEEE 802.1Q customer VLAN tag (TPID).
    pub const VLAN: u16 = 0x8100;
    /// PROFINET real-time (RT frames: cyclic data, alarms, DCP, PTCP).
    pub const PROFINET: u16 = 0x8892;
    /// Link Layer Discovery Protocol.
    pub const LLDP: u16 = 0x88CC;
}

/// Minimum Ethernet frame length without the 4-byte FCS.
pub const MIN_FRAME_LEN: usize = 60;
/// Length of an untagged header.
pub const HEADER_LEN: usize = 14;
/// Length of a header with one 802.1Q tag.
pub const TAGGED_HEADER_LEN: usize = 18;

/// A 48-bit MAC address.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct MacAddr(pub [u8; 6]);

impl MacAddr {
    pub const BROADCAST: MacAddr = MacAddr([0xff; 6]);
    pub const ZERO: MacAddr = MacAddr([0; 6]);
    /// PN-DCP Identify multicast (IEC 61158-6-10; p-net `pf_dcp.c`).
    pub const DCP_IDENTIFY: MacAddr = MacAddr([0x01, 0x0e, 0xcf, 0x00, 0x00, 0x00]);
    /// PN-DCP Hello multicast (p-net `pf_dcp.c` `dcp_mc_addr_hello`).
    pub const DCP_HELLO: MacAddr = MacAddr([0x01, 0x0e, 0xcf, 0x00, 0x00, 0x01]);
    /// LLDP nearest-bridge multicast (IEEE 802.1AB); PROFINET devices send LLDP here.
    pub const LLDP_NEAREST_BRIDGE: MacAddr = MacAddr([0x01, 0x80, 0xc2, 0x00, 0x00, 0x0e]);

    /// Build from the first six bytes of `b`.
    pub fn from_bytes(b: &[u8]) -> Result<MacAddr> {
        let s = b.get(..6).ok_or(Error::Truncated)?;
        let mut a = [0u8; 6];
        a.copy_from_slice(s);
        Ok(MacAddr(a))
    }
    pub fn as_bytes(&self) -> &[u8; 6] {
        &self.0
    }
    /// Group (multicast or broadcast) address: I/G bit set.
    pub fn is_multicast(&self) -> bool {
        self.0[0] & 0x01 != 0
    }
    pub fn is_broadcast(&self) -> bool {
        *self == Self::BROADCAST
    }
    pub fn is_unicast(&self) -> bool {
        !self.is_multicast()
    }
}

impl fmt::Display for MacAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        write!(
            f,
            "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
            b[0], b[1], b[2], b[3], b[4], b[5]
        )
    }
}

impl fmt::Debug for MacAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl From<[u8; 6]> for MacAddr {
    fn from(a: [u8; 6]) -> Self {
        MacAddr(a)
    }
}

/// An 802.1Q tag control field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct VlanTag {
    /// Priority code point, 0..=7.
    pub pcp: u8,
    /// Drop eligible indicator.
    pub dei: bool,
    /// VLAN identifier, 0..=4095 (0 = priority tag only).
    pub vid: u16,
}

impl VlanTag {
    /// A priority tag (VID 0) with the given priority.
    pub const fn priority(pcp: u8) -> VlanTag {
        VlanTag {
            pcp: pcp & 0x07,
            dei: false,
            vid: 0,
        }
    }
    /// PCP 6, VID 0: RT_CLASS_1 cyclic frames and high-priority alarms (TCI 0xC000).
    pub const RT_CYCLIC: VlanTag = VlanTag::priority(6);
    /// PCP 5, VID 0: low-priority alarms (TCI 0xA000).
    pub const RT_ALARM_LOW: VlanTag = VlanTag::priority(5);
    /// PCP 6, VID 0: high-priority alarms (TCI 0xC000).
    pub const RT_ALARM_HIGH: VlanTag = VlanTag::priority(6);

    pub fn from_tci(tci: u16) -> VlanTag {
        VlanTag {
            pcp: (tci >> 13) as u8,
            dei: tci & 0x1000 != 0,
            vid: tci & 0x0fff,
        }
    }
    /// Tag control information; out-of-range `pcp`/`vid` bits are masked off.
    pub fn tci(&self) -> u16 {
        (u16::from(self.pcp & 0x07) << 13) | (u16::from(self.dei) << 12) | (self.vid & 0x0fff)
    }
}

mod field_def {
    use super::Field;
    pub const DST: Field = 0..6;
    pub const SRC: Field = 6..12;
    /// EtherType, or the TPID 0x8100 when tagged.
    pub const TYPE_OR_TPID: Field = 12..14;
    pub const TCI: Field = 14..16;
    pub const INNER_TYPE: Field = 16..18;
}
use field_def as f;

/// A read/write view of an Ethernet II frame (optionally 802.1Q-tagged).
#[derive(Debug, Clone)]
pub struct Frame<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Frame<T> {
    /// Crate-internal: for a buffer whose length is already established (an emit into a
    /// buffer sized for it, or after an explicit check); the getters index the buffer.
    pub(crate) fn new_unchecked(buffer: T) -> Frame<T> {
        Frame { buffer }
    }
    pub fn new_checked(buffer: T) -> Result<Frame<T>> {
        let f = Frame::new_unchecked(buffer);
        f.check_len()?;
        Ok(f)
    }
    /// The buffer holds the whole header (14 bytes, or 18 when the TPID says tagged).
    pub fn check_len(&self) -> Result<()> {
        let b = self.buffer.as_ref();
        if b.len() < HEADER_LEN {
            return Err(Error::Truncated);
        }
        if self.is_tagged() && b.len() < TAGGED_HEADER_LEN {
            return Err(Error::Truncated);
        }
        Ok(())
    }
    pub fn into_inner(self) -> T {
        self.buffer
    }
    fn u16_at(&self, r: Field) -> u16 {
        field::get_u16(self.buffer.as_ref(), r.start)
    }
    pub fn dst_addr(&self) -> MacAddr {
        MacAddr(field::get_array(self.buffer.as_ref(), f::DST.start))
    }
    pub fn src_addr(&self) -> MacAddr {
        MacAddr(field::get_array(self.buffer.as_ref(), f::SRC.start))
    }
    /// True when bytes 12..14 hold the 802.1Q TPID.
    pub fn is_tagged(&self) -> bool {
        self.u16_at(f::TYPE_OR_TPID) == ethertype::VLAN
    }
    pub fn vlan(&self) -> Option<VlanTag> {
        self.is_tagged()
            .then(|| VlanTag::from_tci(self.u16_at(f::TCI)))
    }
    /// The EtherType of the payload (after the tag, if any).
    pub fn ethertype(&self) -> u16 {
        if self.is_tagged() {
            self.u16_at(f::INNER_TYPE)
        } else {
            self.u16_at(f::TYPE_OR_TPID)
        }
    }
    pub fn header_len(&self) -> usize {
        if self.is_tagged() {
            TAGGED_HEADER_LEN
        } else {
            HEADER_LEN
        }
    }
    /// Everything after the header, including any padding.
    pub fn payload(&self) -> &[u8] {
        self.buffer.as_ref().get(self.header_len()..).unwrap_or(&[])
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Frame<T> {
    /// No effect on a buffer shorter than the header (use `new_checked`).
    pub fn set_dst_addr(&mut self, a: MacAddr) {
        if let Some(b) = self.buffer.as_mut().get_mut(f::DST) {
            b.copy_from_slice(&a.0);
        }
    }
    /// No effect on a buffer shorter than the header (use `new_checked`).
    pub fn set_src_addr(&mut self, a: MacAddr) {
        if let Some(b) = self.buffer.as_mut().get_mut(f::SRC) {
            b.copy_from_slice(&a.0);
        }
    }
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let h = self.header_len();
        self.buffer.as_mut().get_mut(h..).unwrap_or(&mut [])
    }

    /// Write the whole header of `repr` into the start of the buffer; returns its length.
    /// The view API for filling a caller-owned buffer without allocating (the real-time path,
    /// [`crate::wire::rt::fill_cyclic_frame`]); [`EthernetRepr`] serialises through [`Emit`].
    pub fn fill_header(&mut self, repr: &EthernetRepr) -> Result<usize> {
        let h = repr.header_len();
        let hdr = self.buffer.as_mut().get_mut(..h).ok_or(Error::Truncated)?;
        hdr[f::DST].copy_from_slice(&repr.dst.0);
        hdr[f::SRC].copy_from_slice(&repr.src.0);
        match repr.vlan {
            Some(tag) => {
                field::write_u16(hdr, f::TYPE_OR_TPID.start, ethertype::VLAN)?;
                field::write_u16(hdr, f::TCI.start, tag.tci())?;
                field::write_u16(hdr, f::INNER_TYPE.start, repr.ethertype)?;
            }
            None => field::write_u16(hdr, f::TYPE_OR_TPID.start, repr.ethertype)?,
        }
        Ok(h)
    }
}

/// Owned Ethernet header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct EthernetRepr {
    pub dst: MacAddr,
    pub src: MacAddr,
    pub vlan: Option<VlanTag>,
    pub ethertype: u16,
}

impl EthernetRepr {
    pub fn parse<T: AsRef<[u8]>>(frame: &Frame<T>) -> Result<EthernetRepr> {
        frame.check_len()?;
        Ok(EthernetRepr {
            dst: frame.dst_addr(),
            src: frame.src_addr(),
            vlan: frame.vlan(),
            ethertype: frame.ethertype(),
        })
    }

    /// Parse a complete frame; returns the header and the payload (padding included).
    /// Fuzz entry point for this format.
    pub fn parse_frame(bytes: &[u8]) -> Result<(EthernetRepr, &[u8])> {
        let frame = Frame::new_checked(bytes)?;
        let repr = EthernetRepr::parse(&frame)?;
        let payload = bytes.get(frame.header_len()..).ok_or(Error::Truncated)?;
        Ok((repr, payload))
    }

    /// 14, or 18 with a VLAN tag.
    pub fn header_len(&self) -> usize {
        if self.vlan.is_some() {
            TAGGED_HEADER_LEN
        } else {
            HEADER_LEN
        }
    }

    /// Build a complete frame: header, `payload`, zero padding up to [`MIN_FRAME_LEN`] (a
    /// composition of the header's [`Emit`] with the payload, for callers holding the payload
    /// as bytes already).
    pub fn build(&self, payload: &[u8]) -> Vec<u8> {
        let mut w = Writer::with_capacity(padded_len(self.header_len() + payload.len()));
        // Cannot fail: the header of an EthernetRepr is always representable.
        let _ = self.emit(&mut w);
        w.bytes(payload);
        pad_to_min(&mut w.buf);
        w.into_inner()
    }
}

/// The header only (14 bytes, 18 with a VLAN tag); the payload follows it.
impl Emit for EthernetRepr {
    fn buffer_len(&self) -> usize {
        self.header_len()
    }

    fn emit(&self, w: &mut Writer) -> Result<()> {
        let start = w.len();
        w.zeros(self.header_len());
        Frame::new_unchecked(&mut w.buf[start..]).fill_header(self)?;
        Ok(())
    }
}

/// The length a frame of `len` bytes has on the wire after padding (without FCS).
pub fn padded_len(len: usize) -> usize {
    len.max(MIN_FRAME_LEN)
}

/// Append zeros to `frame` until it is [`MIN_FRAME_LEN`] bytes long.
pub fn pad_to_min(frame: &mut Vec<u8>) {
    if frame.len() < MIN_FRAME_LEN {
        frame.resize(MIN_FRAME_LEN, 0);
    }
}

/// Zero `buf[len..MIN_FRAME_LEN]` and return the padded length: the in-place variant for
/// caller-owned buffers (hot path). Fails when `buf` is shorter than the padded length.
pub fn pad_in_place(buf: &mut [u8], len: usize) -> Result<usize> {
    let total = padded_len(len);
    buf.get_mut(len..total).ok_or(Error::Truncated)?.fill(0);
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tagged_round_trip() {
        let repr = EthernetRepr {
            dst: MacAddr([1, 2, 3, 4, 5, 6]),
            src: MacAddr([7, 8, 9, 10, 11, 12]),
            vlan: Some(VlanTag::RT_CYCLIC),
            ethertype: ethertype::PROFINET,
        };
        let f = repr.build(&[0xfe, 0xfe]);
        assert_eq!(f.len(), 60);
        assert_eq!(&f[12..18], &[0x81, 0x00, 0xc0, 0x00, 0x88, 0x92]);
        let (p, payload) = EthernetRepr::parse_frame(&f).unwrap();
        assert_eq!(p, repr);
        assert_eq!(&payload[..2], &[0xfe, 0xfe]);
        assert_eq!(payload.len(), 42);
    }

    #[test]
    fn untagged_and_short() {
        let repr = EthernetRepr {
            dst: MacAddr::DCP_IDENTIFY,
            src: MacAddr([2, 0, 0, 0, 0, 1]),
            vlan: None,
            ethertype: ethertype::LLDP,
        };
        let b: [u8; 14] = repr.to_bytes().unwrap().try_into().unwrap();
        let (p, payload) = EthernetRepr::parse_frame(&b).unwrap();
        assert_eq!(p, repr);
        assert!(payload.is_empty());
        assert_eq!(EthernetRepr::parse_frame(&b[..13]), Err(Error::Truncated));
        // TPID but no room for the tag.
        let mut t = b;
        t[12] = 0x81;
        t[13] = 0x00;
        assert_eq!(EthernetRepr::parse_frame(&t), Err(Error::Truncated));
    }

    #[test]
    fn no_view_of_a_short_buffer() {
        // The getters index the header, so a view exists only once the length is checked
        // (`new_unchecked` is crate-internal).
        assert_eq!(
            Frame::new_checked(&[0x81u8, 0x00, 1][..]).err(),
            Some(Error::Truncated)
        );
        let mut tagged = [0u8; 16];
        tagged[12..14].copy_from_slice(&ethertype::VLAN.to_be_bytes());
        assert_eq!(
            Frame::new_checked(&tagged[..]).err(),
            Some(Error::Truncated)
        );
    }

    #[test]
    fn tci_bits() {
        let t = VlanTag::from_tci(0xB00A);
        assert_eq!((t.pcp, t.dei, t.vid), (5, true, 10));
        assert_eq!(t.tci(), 0xB00A);
        assert_eq!(VlanTag::RT_ALARM_LOW.tci(), 0xA000);
    }

    #[test]
    fn padding() {
        let mut buf = [0xffu8; 64];
        assert_eq!(pad_in_place(&mut buf, 40), Ok(60));
        assert!(buf[40..60].iter().all(|&b| b == 0));
        assert_eq!(buf[60], 0xff);
        assert_eq!(pad_in_place(&mut buf, 62), Ok(62));
        assert_eq!(pad_in_place(&mut buf[..50], 10), Err(Error::Truncated));
    }
}

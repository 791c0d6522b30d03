//! DCE/RPC connectionless (CL, "datagram") protocol version 4, as PNIO-CM uses it over UDP.
//!
//! * [`Header`]: checked view of the 80-byte CL header; [`RpcHeader`]: its owned form.
//! * [`RpcPacket`]: header + body (the `fragment_len` bytes after the header). Its
//!   [`RpcPacket::parse`] is the fuzz entry point of this module.
//! * [`PnioRequest`] / [`PnioResponse`]: the NDR framing of the PNIO operations (Connect,
//!   Release, Read, Write, Control, ReadImplicit) around the PNIO blocks.
//! * [`FaultBody`] (fault and reject status), [`FackBody`] (fragment acknowledgement),
//!   [`fragment`] (split a body into CL fragments).
//! * [`Uuid`] with DREP-aware wire encoding and the PNIO interface / object UUIDs.
//!
//! # Byte order
//! Every multi-byte integer of the header, the first three fields of each header UUID, the NDR
//! header of the body (ArgsMaximum, ArgsLength, MaximumCount, Offset, ActualCount), the
//! PNIOStatus of a response, the fault/reject status and the FACK fields follow the integer
//! representation of DREP byte 0 (high nibble 1 = little-endian, 0 = big-endian). The PNIO
//! blocks after the NDR header are always big-endian. Parsing accepts both; emitting uses the
//! DREP stored in the [`RpcHeader`]. [`RpcHeader::response_to`] answers in the requester's DREP
//! (DCE 1.1 lets a sender use its own native representation; answering in the caller's avoids
//! relying on the caller's conversion and is what Siemens devices in the fixtures do; p-net
//! always answers big-endian, which tests show parses as well).
//!
//! Note: the PNIOStatus of a PNIO response is a u32 in DREP order, not four bytes in fixed
//! order: an ET200SP answering a little-endian Write sends `05 40 81 df` for ErrorCode 0xDF,
//! ErrorDecode 0x81, ErrorCode1 0x40, ErrorCode2 0x05 (fixture `mehner-write-res-err-et200sp`).
//!
//! Sources: The Open Group DCE 1.1 RPC (C706) chapter 12 "RPC PDU Encodings" (CL header, PDU
//! types, flags, FACK body); Wireshark `epan/dissectors/packet-dcerpc.c` (`dissect_dcerpc_dg`,
//! `dissect_dcerpc_dg_fack`, `dissect_dcerpc_dg_reject_fault`); Wireshark
//! `plugins/epan/profinet/packet-dcerpc-pn-io.c` (`dissect_IPNIO_rqst_header`,
//! `dissect_IPNIO_resp_header`, `dissect_PNIO_status`, interface UUIDs); see
//! `docs/protocol-notes/cm.md`.

use crate::wire::field::{self, Field};
use crate::wire::pnio::PnioStatus;
use crate::wire::{Error, Result};
use core::fmt;
use core::str::FromStr;

/// Integer byte order selected by DREP.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Endian {
    Big,
    Little,
}

impl Endian {
    fn u16(self, b: [u8; 2]) -> u16 {
        match self {
            Endian::Big => u16::from_be_bytes(b),
            Endian::Little => u16::from_le_bytes(b),
        }
    }
    fn u32(self, b: [u8; 4]) -> u32 {
        match self {
            Endian::Big => u32::from_be_bytes(b),
            Endian::Little => u32::from_le_bytes(b),
        }
    }
    fn u16_bytes(self, v: u16) -> [u8; 2] {
        match self {
            Endian::Big => v.to_be_bytes(),
            Endian::Little => v.to_le_bytes(),
        }
    }
    fn u32_bytes(self, v: u32) -> [u8; 4] {
        match self {
            Endian::Big => v.to_be_bytes(),
            Endian::Little => v.to_le_bytes(),
        }
    }
    /// Read a u16 at `at` in this byte order.
    pub fn read_u16(self, b: &[u8], at: usize) -> Result<u16> {
        let s = field::slice(b, at..at.checked_add(2).ok_or(Error::Truncated)?)?;
        Ok(self.u16([s[0], s[1]]))
    }
    /// Read a u32 at `at` in this byte order.
    pub fn read_u32(self, b: &[u8], at: usize) -> Result<u32> {
        let s = field::slice(b, at..at.checked_add(4).ok_or(Error::Truncated)?)?;
        Ok(self.u32([s[0], s[1], s[2], s[3]]))
    }
    /// Append a u16 in this byte order.
    pub fn put_u16(self, out: &mut Vec<u8>, v: u16) {
        out.extend_from_slice(&self.u16_bytes(v));
    }
    /// Append a u32 in this byte order.
    pub fn put_u32(self, out: &mut Vec<u8>, v: u32) {
        out.extend_from_slice(&self.u32_bytes(v));
    }
}

/// The three DREP (data representation) bytes of the header: byte 0 high nibble = integer
/// representation (0 big-endian, 1 little-endian), low nibble = character set (0 ASCII,
/// 1 EBCDIC); byte 1 = floating point (0 IEEE); byte 2 reserved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Drep(pub [u8; 3]);

impl Drep {
    pub const BIG_ENDIAN: Drep = Drep([0x00, 0x00, 0x00]);
    pub const LITTLE_ENDIAN: Drep = Drep([0x10, 0x00, 0x00]);

    pub fn endian(self) -> Endian {
        if self.0[0] & 0x10 != 0 {
            Endian::Little
        } else {
            Endian::Big
        }
    }
    pub fn is_little_endian(self) -> bool {
        self.endian() == Endian::Little
    }
    pub fn from_endian(e: Endian) -> Drep {
        match e {
            Endian::Big => Drep::BIG_ENDIAN,
            Endian::Little => Drep::LITTLE_ENDIAN,
        }
    }
}

impl Default for Drep {
    fn default() -> Self {
        Drep::LITTLE_ENDIAN
    }
}

/// A UUID, stored in canonical (string / big-endian) byte order.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Uuid(pub [u8; 16]);

/// DCE/RPC interface UUID of the PNIO IO device interface.
pub const PNIO_DEVICE_INTERFACE: Uuid = Uuid::pnio(0xDEA0_0001);
/// DCE/RPC interface UUID of the PNIO IO controller interface.
pub const PNIO_CONTROLLER_INTERFACE: Uuid = Uuid::pnio(0xDEA0_0002);
/// DCE/RPC interface UUID of the PNIO supervisor interface.
pub const PNIO_SUPERVISOR_INTERFACE: Uuid = Uuid::pnio(0xDEA0_0003);
/// DCE/RPC interface UUID of the PNIO parameter server interface.
pub const PNIO_PARAMSERVER_INTERFACE: Uuid = Uuid::pnio(0xDEA0_0004);
/// Interface version used by all PNIO interfaces (major 1, minor 0).
pub const PNIO_INTERFACE_VERSION: u32 = 1;

impl Uuid {
    pub const NIL: Uuid = Uuid([0; 16]);

    const fn pnio(time_low: u32) -> Uuid {
        let t = time_low.to_be_bytes();
        Uuid([
            t[0], t[1], t[2], t[3], 0x6C, 0x97, 0x11, 0xD1, 0x82, 0x71, 0x00, 0xA0, 0x24, 0x42,
            0xDF, 0x7D,
        ])
    }

    pub const fn from_bytes(b: [u8; 16]) -> Uuid {
        Uuid(b)
    }

    pub fn from_fields(time_low: u32, time_mid: u16, time_hi: u16, rest: [u8; 8]) -> Uuid {
        let mut b = [0u8; 16];
        b[0..4].copy_from_slice(&time_low.to_be_bytes());
        b[4..6].copy_from_slice(&time_mid.to_be_bytes());
        b[6..8].copy_from_slice(&time_hi.to_be_bytes());
        b[8..16].copy_from_slice(&rest);
        Uuid(b)
    }

    pub fn time_low(&self) -> u32 {
        u32::from_be_bytes([self.0[0], self.0[1], self.0[2], self.0[3]])
    }
    pub fn time_mid(&self) -> u16 {
        u16::from_be_bytes([self.0[4], self.0[5]])
    }
    pub fn time_hi_and_version(&self) -> u16 {
        u16::from_be_bytes([self.0[6], self.0[7]])
    }

    /// Decode 16 wire bytes: time_low, time_mid and time_hi in `endian`, the last 8 bytes as is.
    pub fn from_wire(b: &[u8], endian: Endian) -> Result<Uuid> {
        let s = field::slice(b, 0..16)?;
        let mut out = [0u8; 16];
        out.copy_from_slice(s);
        Ok(Uuid::from_array(out, endian))
    }

    /// [`Uuid::from_wire`] of bytes already known to be 16.
    pub fn from_array(mut out: [u8; 16], endian: Endian) -> Uuid {
        if endian == Endian::Little {
            out[0..4].reverse();
            out[4..6].reverse();
            out[6..8].reverse();
        }
        Uuid(out)
    }

    /// Encode for the wire in `endian` (see [`Uuid::from_wire`]).
    pub fn to_wire(&self, endian: Endian) -> [u8; 16] {
        let mut out = self.0;
        if endian == Endian::Little {
            out[0..4].reverse();
            out[4..6].reverse();
            out[6..8].reverse();
        }
        out
    }

    /// The PNIO object UUID of an IO device:
    /// `DEA00000-6C97-11D1-8271-<Instance><DeviceID><VendorID>` (each u16 big-endian in the
    /// node part).
    pub fn pnio_object(instance: u16, device_id: u16, vendor_id: u16) -> Uuid {
        let mut b = Uuid::pnio(0xDEA0_0000).0;
        b[10..12].copy_from_slice(&instance.to_be_bytes());
        b[12..14].copy_from_slice(&device_id.to_be_bytes());
        b[14..16].copy_from_slice(&vendor_id.to_be_bytes());
        Uuid(b)
    }

    /// `(instance, device_id, vendor_id)` when this is a PNIO object UUID.
    pub fn pnio_object_ids(&self) -> Option<(u16, u16, u16)> {
        if self.0[0..10] != Uuid::pnio(0xDEA0_0000).0[0..10] {
            return None;
        }
        let g = |i: usize| u16::from_be_bytes([self.0[i], self.0[i + 1]]);
        Some((g(10), g(12), g(14)))
    }
}

impl fmt::Display for Uuid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = &self.0;
        write!(
            f,
            "{:02x}{:02x}{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}{:02x}{:02x}{:02x}{:02x}",
            b[0],
            b[1],
            b[2],
            b[3],
            b[4],
            b[5],
            b[6],
            b[7],
            b[8],
            b[9],
            b[10],
            b[11],
            b[12],
            b[13],
            b[14],
            b[15]
        )
    }
}

impl fmt::Debug for Uuid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Uuid({self})")
    }
}

impl FromStr for Uuid {
    type Err = Error;
    /// Parse the canonical form `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` (either case).
    fn from_str(s: &str) -> Result<Uuid> {
        let b = s.as_bytes();
        if b.len() != 36 {
            return Err(Error::Malformed("UUID string length"));
        }
        let mut out = [0u8; 16];
        let mut n = 0;
        let mut i = 0;
        while i < 36 {
            if matches!(i, 8 | 13 | 18 | 23) {
                if b[i] != b'-' {
                    return Err(Error::Malformed("UUID string separator"));
                }
                i += 1;
                continue;
            }
            let hex = |c: u8| -> Result<u8> {
                (c as char)
                    .to_digit(16)
                    .map(|d| d as u8)
                    .ok_or(Error::Malformed("UUID string digit"))
            };
            out[n] = (hex(b[i])? << 4) | hex(b[i + 1])?;
            n += 1;
            i += 2;
        }
        Ok(Uuid(out))
    }
}

/// CL packet types (`ptype`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PacketType {
    Request,
    Ping,
    Response,
    Fault,
    Working,
    Nocall,
    Reject,
    Ack,
    ClCancel,
    Fack,
    CancelAck,
    /// Any other value (kept for a byte-exact round trip).
    Unknown(u8),
}

impl PacketType {
    pub fn from_u8(v: u8) -> PacketType {
        match v {
            0 => PacketType::Request,
            1 => PacketType::Ping,
            2 => PacketType::Response,
            3 => PacketType::Fault,
            4 => PacketType::Working,
            5 => PacketType::Nocall,
            6 => PacketType::Reject,
            7 => PacketType::Ack,
            8 => PacketType::ClCancel,
            9 => PacketType::Fack,
            10 => PacketType::CancelAck,
            o => PacketType::Unknown(o),
        }
    }
    pub fn to_u8(self) -> u8 {
        match self {
            PacketType::Request => 0,
            PacketType::Ping => 1,
            PacketType::Response => 2,
            PacketType::Fault => 3,
            PacketType::Working => 4,
            PacketType::Nocall => 5,
            PacketType::Reject => 6,
            PacketType::Ack => 7,
            PacketType::ClCancel => 8,
            PacketType::Fack => 9,
            PacketType::CancelAck => 10,
            PacketType::Unknown(o) => o,
        }
    }
}

/// Bits of `flags1`.
pub mod flags1 {
    pub const LAST_FRAG: u8 = 0x02;
    pub const FRAG: u8 = 0x04;
    pub const NO_FACK: u8 = 0x08;
    pub const MAYBE: u8 = 0x10;
    pub const IDEMPOTENT: u8 = 0x20;
    pub const BROADCAST: u8 = 0x40;
}

/// Bits of `flags2`.
pub mod flags2 {
    pub const CANCEL_PENDING: u8 = 0x02;
}

/// PNIO operation numbers on the device / controller interfaces.
pub mod opnum {
    pub const CONNECT: u16 = 0;
    pub const RELEASE: u16 = 1;
    pub const READ: u16 = 2;
    pub const WRITE: u16 = 3;
    pub const CONTROL: u16 = 4;
    pub const READ_IMPLICIT: u16 = 5;
}

mod fields {
    use crate::wire::field::Field;
    pub const RPC_VERS: usize = 0;
    pub const PTYPE: usize = 1;
    pub const FLAGS1: usize = 2;
    pub const FLAGS2: usize = 3;
    pub const DREP: Field = 4..7;
    pub const SERIAL_HI: usize = 7;
    pub const OBJECT: Field = 8..24;
    pub const INTERFACE: Field = 24..40;
    pub const ACTIVITY: Field = 40..56;
    pub const SERVER_BOOT: usize = 56;
    pub const IF_VERS: usize = 60;
    pub const SEQNUM: usize = 64;
    pub const OPNUM: usize = 68;
    pub const IHINT: usize = 70;
    pub const AHINT: usize = 72;
    pub const LEN: usize = 74;
    pub const FRAGNUM: usize = 76;
    pub const AUTH_PROTO: usize = 78;
    pub const SERIAL_LO: usize = 79;
    pub const HEADER_LEN: usize = 80;
}

/// Length of the CL header.
pub const HEADER_LEN: usize = fields::HEADER_LEN;
/// The only CL protocol version.
pub const RPC_VERSION: u8 = 4;

/// A checked view of a CL packet (header + body).
#[derive(Debug, Clone)]
pub struct Header<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Header<T> {
    /// Crate-internal: for a buffer whose length is already established (an emit into a
    /// buffer sized for it, or after an explicit check); the getters index the buffer.
    pub(crate) fn new_unchecked(buffer: T) -> Self {
        Header { buffer }
    }
    pub fn new_checked(buffer: T) -> Result<Self> {
        let h = Self::new_unchecked(buffer);
        h.check_len()?;
        Ok(h)
    }
    /// Checks: 80 header bytes, version 4, and the body (`fragment_len`) within the buffer.
    pub fn check_len(&self) -> Result<()> {
        let b = self.buffer.as_ref();
        if b.len() < HEADER_LEN {
            return Err(Error::Truncated);
        }
        if b[fields::RPC_VERS] != RPC_VERSION {
            return Err(Error::Unsupported("DCE/RPC version other than 4 (CL)"));
        }
        if b.len() < HEADER_LEN + usize::from(self.fragment_len()) {
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
    fn u8_at(&self, at: usize) -> u8 {
        field::get_u8(self.b(), at)
    }
    fn u16_at(&self, at: usize) -> u16 {
        self.endian().u16(field::get_array(self.b(), at))
    }
    fn u32_at(&self, at: usize) -> u32 {
        self.endian().u32(field::get_array(self.b(), at))
    }
    fn uuid_at(&self, f: Field) -> Uuid {
        Uuid::from_array(field::get_array(self.b(), f.start), self.endian())
    }
    pub fn version(&self) -> u8 {
        self.u8_at(fields::RPC_VERS)
    }
    pub fn packet_type(&self) -> PacketType {
        PacketType::from_u8(self.u8_at(fields::PTYPE))
    }
    pub fn flags1(&self) -> u8 {
        self.u8_at(fields::FLAGS1)
    }
    pub fn flags2(&self) -> u8 {
        self.u8_at(fields::FLAGS2)
    }
    pub fn drep(&self) -> Drep {
        Drep([
            self.u8_at(fields::DREP.start),
            self.u8_at(fields::DREP.start + 1),
            self.u8_at(fields::DREP.start + 2),
        ])
    }
    pub fn endian(&self) -> Endian {
        self.drep().endian()
    }
    /// Fragment serial number (serial_hi << 8 | serial_lo).
    pub fn serial(&self) -> u16 {
        u16::from_be_bytes([self.u8_at(fields::SERIAL_HI), self.u8_at(fields::SERIAL_LO)])
    }
    pub fn object(&self) -> Uuid {
        self.uuid_at(fields::OBJECT)
    }
    pub fn interface(&self) -> Uuid {
        self.uuid_at(fields::INTERFACE)
    }
    pub fn activity(&self) -> Uuid {
        self.uuid_at(fields::ACTIVITY)
    }
    pub fn server_boot(&self) -> u32 {
        self.u32_at(fields::SERVER_BOOT)
    }
    pub fn interface_version(&self) -> u32 {
        self.u32_at(fields::IF_VERS)
    }
    pub fn sequence(&self) -> u32 {
        self.u32_at(fields::SEQNUM)
    }
    pub fn opnum(&self) -> u16 {
        self.u16_at(fields::OPNUM)
    }
    pub fn interface_hint(&self) -> u16 {
        self.u16_at(fields::IHINT)
    }
    pub fn activity_hint(&self) -> u16 {
        self.u16_at(fields::AHINT)
    }
    /// Length of the body following the header.
    pub fn fragment_len(&self) -> u16 {
        self.u16_at(fields::LEN)
    }
    pub fn fragment_num(&self) -> u16 {
        self.u16_at(fields::FRAGNUM)
    }
    pub fn auth_proto(&self) -> u8 {
        self.u8_at(fields::AUTH_PROTO)
    }
    /// The body (`fragment_len` bytes after the header; empty when truncated).
    pub fn body(&self) -> &[u8] {
        let end = HEADER_LEN.saturating_add(usize::from(self.fragment_len()));
        self.b().get(HEADER_LEN..end).unwrap_or(&[])
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Header<T> {
    fn put_u16_at(&mut self, at: usize, v: u16) {
        let bytes = self.endian().u16_bytes(v);
        if let Some(s) = self.buffer.as_mut().get_mut(at..at + 2) {
            s.copy_from_slice(&bytes);
        }
    }
    pub fn set_flags1(&mut self, v: u8) {
        let _ = field::write_u8(self.buffer.as_mut(), fields::FLAGS1, v);
    }
    pub fn set_serial(&mut self, v: u16) {
        let [hi, lo] = v.to_be_bytes();
        let _ = field::write_u8(self.buffer.as_mut(), fields::SERIAL_HI, hi);
        let _ = field::write_u8(self.buffer.as_mut(), fields::SERIAL_LO, lo);
    }
    pub fn set_fragment_len(&mut self, v: u16) {
        self.put_u16_at(fields::LEN, v);
    }
    pub fn set_fragment_num(&mut self, v: u16) {
        self.put_u16_at(fields::FRAGNUM, v);
    }
}

/// An owned CL header. Integer fields hold host values; the byte order on the wire comes from
/// `drep`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RpcHeader {
    pub packet_type: PacketType,
    pub flags1: u8,
    pub flags2: u8,
    pub drep: Drep,
    /// Fragment serial number (serial_hi << 8 | serial_lo).
    pub serial: u16,
    pub object: Uuid,
    pub interface: Uuid,
    pub activity: Uuid,
    pub server_boot: u32,
    pub interface_version: u32,
    pub sequence: u32,
    pub opnum: u16,
    pub interface_hint: u16,
    pub activity_hint: u16,
    /// Body length. [`RpcPacket::emit`] sets it from the body; [`RpcHeader::emit`] writes it
    /// as stored.
    pub fragment_len: u16,
    pub fragment_num: u16,
    pub auth_proto: u8,
}

impl RpcHeader {
    /// A request header: flags1 = idempotent (as every controller in the fixtures sends),
    /// hints 0xFFFF ("no hint"), interface version 1, server boot 0 (unknown), serial 0.
    pub fn request(
        drep: Drep,
        object: Uuid,
        interface: Uuid,
        activity: Uuid,
        sequence: u32,
        opnum: u16,
    ) -> RpcHeader {
        RpcHeader {
            packet_type: PacketType::Request,
            flags1: flags1::IDEMPOTENT,
            flags2: 0,
            drep,
            serial: 0,
            object,
            interface,
            activity,
            server_boot: 0,
            interface_version: PNIO_INTERFACE_VERSION,
            sequence,
            opnum,
            interface_hint: 0xFFFF,
            activity_hint: 0xFFFF,
            fragment_len: 0,
            fragment_num: 0,
            auth_proto: 0,
        }
    }

    /// The header of a response to `req`: same object, interface, activity, sequence number,
    /// opnum, interface version, hints and DREP (we answer in the requester's byte order);
    /// flags1 = last fragment + no FACK (as the Siemens devices in the fixtures answer),
    /// server boot time 0 (set [`RpcHeader::server_boot`] to the responder's boot time).
    pub fn response_to(req: &RpcHeader) -> RpcHeader {
        RpcHeader {
            packet_type: PacketType::Response,
            flags1: flags1::LAST_FRAG | flags1::NO_FACK,
            flags2: 0,
            serial: 0,
            server_boot: 0,
            fragment_len: 0,
            fragment_num: 0,
            auth_proto: 0,
            ..*req
        }
    }

    /// Like [`RpcHeader::response_to`] for another packet type (Fault, Reject, Working,
    /// Nocall, Fack, CancelAck), with flags1 0 for FACK-like packets.
    pub fn reply_to(req: &RpcHeader, packet_type: PacketType) -> RpcHeader {
        let mut h = RpcHeader::response_to(req);
        h.packet_type = packet_type;
        if packet_type != PacketType::Response {
            h.flags1 = if matches!(packet_type, PacketType::Fault | PacketType::Reject) {
                flags1::NO_FACK
            } else {
                0
            };
        }
        if packet_type == PacketType::Fack {
            h.fragment_num = req.fragment_num;
            h.serial = req.serial;
        }
        h
    }

    pub fn endian(&self) -> Endian {
        self.drep.endian()
    }

    pub fn is_fragment(&self) -> bool {
        self.flags1 & flags1::FRAG != 0
    }
    pub fn is_last_fragment(&self) -> bool {
        self.flags1 & flags1::FRAG == 0 || self.flags1 & flags1::LAST_FRAG != 0
    }
    pub fn wants_fack(&self) -> bool {
        self.flags1 & flags1::NO_FACK == 0
    }

    /// Parse the 80-byte header at the start of `buf` (the body need not be present).
    pub fn parse(buf: &[u8]) -> Result<RpcHeader> {
        if buf.len() < HEADER_LEN {
            return Err(Error::Truncated);
        }
        let h = Header::new_unchecked(buf);
        if h.version() != RPC_VERSION {
            return Err(Error::Unsupported("DCE/RPC version other than 4 (CL)"));
        }
        Ok(RpcHeader {
            packet_type: h.packet_type(),
            flags1: h.flags1(),
            flags2: h.flags2(),
            drep: h.drep(),
            serial: h.serial(),
            object: h.object(),
            interface: h.interface(),
            activity: h.activity(),
            server_boot: h.server_boot(),
            interface_version: h.interface_version(),
            sequence: h.sequence(),
            opnum: h.opnum(),
            interface_hint: h.interface_hint(),
            activity_hint: h.activity_hint(),
            fragment_len: h.fragment_len(),
            fragment_num: h.fragment_num(),
            auth_proto: h.auth_proto(),
        })
    }

    pub fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Write the header into the first 80 bytes of `buf`.
    pub fn emit(&self, buf: &mut [u8]) -> Result<()> {
        let b = buf.get_mut(..HEADER_LEN).ok_or(Error::Truncated)?;
        let e = self.endian();
        let [serial_hi, serial_lo] = self.serial.to_be_bytes();
        b[fields::RPC_VERS] = RPC_VERSION;
        b[fields::PTYPE] = self.packet_type.to_u8();
        b[fields::FLAGS1] = self.flags1;
        b[fields::FLAGS2] = self.flags2;
        b[fields::DREP].copy_from_slice(&self.drep.0);
        b[fields::SERIAL_HI] = serial_hi;
        b[fields::OBJECT].copy_from_slice(&self.object.to_wire(e));
        b[fields::INTERFACE].copy_from_slice(&self.interface.to_wire(e));
        b[fields::ACTIVITY].copy_from_slice(&self.activity.to_wire(e));
        b[fields::SERVER_BOOT..fields::SERVER_BOOT + 4]
            .copy_from_slice(&e.u32_bytes(self.server_boot));
        b[fields::IF_VERS..fields::IF_VERS + 4]
            .copy_from_slice(&e.u32_bytes(self.interface_version));
        b[fields::SEQNUM..fields::SEQNUM + 4].copy_from_slice(&e.u32_bytes(self.sequence));
        b[fields::OPNUM..fields::OPNUM + 2].copy_from_slice(&e.u16_bytes(self.opnum));
        b[fields::IHINT..fields::IHINT + 2].copy_from_slice(&e.u16_bytes(self.interface_hint));
        b[fields::AHINT..fields::AHINT + 2].copy_from_slice(&e.u16_bytes(self.activity_hint));
        b[fields::LEN..fields::LEN + 2].copy_from_slice(&e.u16_bytes(self.fragment_len));
        b[fields::FRAGNUM..fields::FRAGNUM + 2].copy_from_slice(&e.u16_bytes(self.fragment_num));
        b[fields::AUTH_PROTO] = self.auth_proto;
        b[fields::SERIAL_LO] = serial_lo;
        Ok(())
    }
}

/// A CL packet: header and body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RpcPacket {
    pub header: RpcHeader,
    pub body: Vec<u8>,
}

impl RpcPacket {
    /// Parse a UDP payload holding one CL packet. Bytes after `fragment_len` are ignored.
    /// Fuzz entry point of this module.
    pub fn parse(buf: &[u8]) -> Result<RpcPacket> {
        let header = RpcHeader::parse(buf)?;
        let end = HEADER_LEN + usize::from(header.fragment_len);
        let body = buf.get(HEADER_LEN..end).ok_or(Error::Truncated)?.to_vec();
        Ok(RpcPacket { header, body })
    }

    pub fn new(header: RpcHeader, body: Vec<u8>) -> RpcPacket {
        RpcPacket { header, body }
    }

    pub fn buffer_len(&self) -> usize {
        HEADER_LEN + self.body.len()
    }

    /// Emit header (with `fragment_len` = body length) and body.
    pub fn emit(&self) -> Result<Vec<u8>> {
        let mut h = self.header;
        h.fragment_len = u16::try_from(self.body.len())
            .map_err(|_| Error::Malformed("RPC body longer than 65535 bytes"))?;
        let mut out = vec![0u8; HEADER_LEN];
        h.emit(&mut out)?;
        out.extend_from_slice(&self.body);
        Ok(out)
    }
}

/// Length of the NDR header of a PNIO request body.
pub const PNIO_REQUEST_NDR_LEN: usize = 20;
/// Length of the PNIOStatus + NDR header of a PNIO response body.
pub const PNIO_RESPONSE_NDR_LEN: usize = 20;

/// The body of a PNIO request (Connect, Release, Read, Write, Control, ReadImplicit): ArgsMaximum,
/// ArgsLength, then a conformant varying array (MaximumCount = ArgsMaximum, Offset 0,
/// ActualCount = ArgsLength) holding the big-endian PNIO blocks. MaximumCount is not stored:
/// emit writes `max(ArgsMaximum, ArgsLength)` (equal to ArgsMaximum in every real frame).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PnioRequest {
    /// Largest response the caller accepts (bytes of NDR data).
    pub args_maximum: u32,
    /// The NDR data (PNIO blocks).
    pub data: Vec<u8>,
}

impl PnioRequest {
    pub fn new(args_maximum: u32, data: Vec<u8>) -> PnioRequest {
        PnioRequest { args_maximum, data }
    }

    /// Parse a request body in the byte order of `drep`. Bytes after ActualCount are ignored.
    pub fn parse(body: &[u8], drep: Drep) -> Result<PnioRequest> {
        let e = drep.endian();
        let args_maximum = e.read_u32(body, 0)?;
        let args_len = e.read_u32(body, 4)?;
        let max_count = e.read_u32(body, 8)?;
        let offset = e.read_u32(body, 12)?;
        let actual = e.read_u32(body, 16)?;
        if offset != 0 {
            return Err(Error::Unsupported("NDR array offset other than 0"));
        }
        if actual != args_len {
            return Err(Error::Malformed("NDR ActualCount differs from ArgsLength"));
        }
        if actual > max_count {
            return Err(Error::Malformed("NDR ActualCount above MaximumCount"));
        }
        let end = usize::try_from(actual)
            .ok()
            .and_then(|a| a.checked_add(PNIO_REQUEST_NDR_LEN))
            .ok_or(Error::Truncated)?;
        let data = body
            .get(PNIO_REQUEST_NDR_LEN..end)
            .ok_or(Error::Truncated)?
            .to_vec();
        Ok(PnioRequest { args_maximum, data })
    }

    pub fn buffer_len(&self) -> usize {
        PNIO_REQUEST_NDR_LEN + self.data.len()
    }

    /// Emit the body in the byte order of `drep`.
    pub fn emit(&self, drep: Drep) -> Result<Vec<u8>> {
        let e = drep.endian();
        let len =
            u32::try_from(self.data.len()).map_err(|_| Error::Malformed("NDR data too long"))?;
        let mut out = Vec::with_capacity(self.buffer_len());
        e.put_u32(&mut out, self.args_maximum);
        e.put_u32(&mut out, len);
        // MaximumCount: ArgsMaximum (as every controller sends), never below ActualCount.
        e.put_u32(&mut out, self.args_maximum.max(len));
        e.put_u32(&mut out, 0);
        e.put_u32(&mut out, len);
        out.extend_from_slice(&self.data);
        Ok(out)
    }
}

/// The body of a PNIO response: PNIOStatus (a u32 in DREP byte order), ArgsLength, then the
/// conformant varying array header (MaximumCount, Offset 0, ActualCount = ArgsLength) and the
/// big-endian PNIO blocks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PnioResponse {
    pub status: PnioStatus,
    /// MaximumCount of the array: by convention the request's ArgsMaximum (every device in the
    /// fixtures echoes it).
    pub args_maximum: u32,
    /// The NDR data (PNIO blocks); empty in most error responses.
    pub data: Vec<u8>,
}

impl PnioResponse {
    /// A response to `req` with the request's ArgsMaximum as MaximumCount.
    pub fn to_request(req: &PnioRequest, status: PnioStatus, data: Vec<u8>) -> PnioResponse {
        PnioResponse {
            status,
            args_maximum: req.args_maximum,
            data,
        }
    }

    /// Parse a response body in the byte order of `drep`. Bytes after ActualCount are ignored.
    pub fn parse(body: &[u8], drep: Drep) -> Result<PnioResponse> {
        let e = drep.endian();
        let status = PnioStatus::from_bytes(&e.read_u32(body, 0)?.to_be_bytes())?;
        let args_len = e.read_u32(body, 4)?;
        let max_count = e.read_u32(body, 8)?;
        let offset = e.read_u32(body, 12)?;
        let actual = e.read_u32(body, 16)?;
        if offset != 0 {
            return Err(Error::Unsupported("NDR array offset other than 0"));
        }
        if actual != args_len {
            return Err(Error::Malformed("NDR ActualCount differs from ArgsLength"));
        }
        let end = usize::try_from(actual)
            .ok()
            .and_then(|a| a.checked_add(PNIO_RESPONSE_NDR_LEN))
            .ok_or(Error::Truncated)?;
        let data = body
            .get(PNIO_RESPONSE_NDR_LEN..end)
            .ok_or(Error::Truncated)?
            .to_vec();
        Ok(PnioResponse {
            status,
            args_maximum: max_count,
            data,
        })
    }

    pub fn buffer_len(&self) -> usize {
        PNIO_RESPONSE_NDR_LEN + self.data.len()
    }

    /// Emit the body in the byte order of `drep`.
    pub fn emit(&self, drep: Drep) -> Result<Vec<u8>> {
        let e = drep.endian();
        let len =
            u32::try_from(self.data.len()).map_err(|_| Error::Malformed("NDR data too long"))?;
        let mut out = Vec::with_capacity(self.buffer_len());
        e.put_u32(&mut out, self.status.as_u32());
        e.put_u32(&mut out, len);
        e.put_u32(&mut out, self.args_maximum);
        e.put_u32(&mut out, 0);
        e.put_u32(&mut out, len);
        out.extend_from_slice(&self.data);
        Ok(out)
    }
}

/// Body of a Fault or Reject packet: one status code (u32 in DREP byte order).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FaultBody {
    pub status: u32,
}

/// Common reject / fault status codes (DCE 1.1 C706 appendix E).
pub mod reject_status {
    /// `nca_s_op_rng_error`: opnum out of range.
    pub const NCA_OP_RNG_ERROR: u32 = 0x1C01_0002;
    /// `nca_s_unk_if`: unknown interface.
    pub const NCA_UNK_IF: u32 = 0x1C01_0003;
    /// `nca_s_wrong_boot_time`.
    pub const NCA_WRONG_BOOT_TIME: u32 = 0x1C01_0006;
    /// `nca_s_proto_error`.
    pub const NCA_PROTO_ERROR: u32 = 0x1C01_000B;
    /// `nca_s_fault_unspec`.
    pub const NCA_FAULT_UNSPEC: u32 = 0x1C00_0012;
    /// `nca_s_fault_remote_no_memory`.
    pub const NCA_FAULT_REMOTE_NO_MEMORY: u32 = 0x1C00_0023;
}

impl FaultBody {
    pub const LEN: usize = 4;
    pub fn parse(body: &[u8], drep: Drep) -> Result<FaultBody> {
        Ok(FaultBody {
            status: drep.endian().read_u32(body, 0)?,
        })
    }
    pub fn emit(&self, drep: Drep) -> Vec<u8> {
        drep.endian().u32_bytes(self.status).to_vec()
    }
}

/// Body of a FACK packet (C706 12.5.3.4; Wireshark `dissect_dcerpc_dg_fack`): version, one
/// pad byte, window size, max TSDU, max fragment size, serial number of the fragment that
/// caused the FACK, selective acknowledgement bit masks. All integers in DREP byte order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FackBody {
    pub version: u8,
    pub window_size: u16,
    pub max_tsdu: u32,
    pub max_frag_size: u32,
    pub serial_num: u16,
    /// Selective-ack masks: bit n of word k set = fragment (fragment_num + 1 + 32k + n)
    /// received (fragment_num of the FACK header = highest in-order fragment received).
    pub selack: Vec<u32>,
}

impl FackBody {
    /// Minimum length (without selective-ack words).
    pub const MIN_LEN: usize = 16;

    /// Parse; bytes after the selective-ack words are ignored (some stacks pad the body).
    pub fn parse(body: &[u8], drep: Drep) -> Result<FackBody> {
        let e = drep.endian();
        let version = field::read_u8(body, 0)?;
        let window_size = e.read_u16(body, 2)?;
        let max_tsdu = e.read_u32(body, 4)?;
        let max_frag_size = e.read_u32(body, 8)?;
        let serial_num = e.read_u16(body, 12)?;
        let n = usize::from(e.read_u16(body, 14)?);
        // Check before allocating: n words must exist.
        let need = n
            .checked_mul(4)
            .and_then(|x| x.checked_add(Self::MIN_LEN))
            .ok_or(Error::Truncated)?;
        if body.len() < need {
            return Err(Error::Truncated);
        }
        let mut selack = Vec::with_capacity(n);
        for i in 0..n {
            selack.push(e.read_u32(body, Self::MIN_LEN + 4 * i)?);
        }
        Ok(FackBody {
            version,
            window_size,
            max_tsdu,
            max_frag_size,
            serial_num,
            selack,
        })
    }

    pub fn buffer_len(&self) -> usize {
        Self::MIN_LEN + 4 * self.selack.len()
    }

    pub fn emit(&self, drep: Drep) -> Result<Vec<u8>> {
        let e = drep.endian();
        let n = u16::try_from(self.selack.len())
            .map_err(|_| Error::Malformed("too many selective-ack words"))?;
        let mut out = Vec::with_capacity(self.buffer_len());
        out.push(self.version);
        out.push(0);
        e.put_u16(&mut out, self.window_size);
        e.put_u32(&mut out, self.max_tsdu);
        e.put_u32(&mut out, self.max_frag_size);
        e.put_u16(&mut out, self.serial_num);
        e.put_u16(&mut out, n);
        for w in &self.selack {
            e.put_u32(&mut out, *w);
        }
        Ok(out)
    }
}

/// Split `body` into CL packets of at most `max_body` body bytes each.
///
/// A body that fits in one packet yields one packet with `header.flags1` minus the FRAG bit
/// (LAST_FRAG is kept as given: Siemens devices answer unfragmented calls with flags1 0x0a). Otherwise every packet carries FRAG, fragment number and serial number
/// 0, 1, 2, ...; the last one also carries LAST_FRAG and NO_FACK (the reply acknowledges it);
/// the others carry NO_FACK only when `request_fack` is false (the Write in fixture
/// `icsnpp-write-req-frag0-irt` requests a FACK for fragment 0: flags1 0x24, then 0x2e).
pub fn fragment(
    header: &RpcHeader,
    body: &[u8],
    max_body: usize,
    request_fack: bool,
) -> Result<Vec<RpcPacket>> {
    if max_body == 0 {
        return Err(Error::Malformed("fragment size 0"));
    }
    let max_body = max_body.min(usize::from(u16::MAX));
    let base_flags = header.flags1 & !(flags1::FRAG | flags1::LAST_FRAG | flags1::NO_FACK);
    if body.len() <= max_body {
        let mut h = *header;
        h.flags1 = header.flags1 & !flags1::FRAG;
        h.fragment_num = 0;
        h.fragment_len = body.len() as u16;
        return Ok(vec![RpcPacket::new(h, body.to_vec())]);
    }
    let count = body.len().div_ceil(max_body);
    if count > usize::from(u16::MAX) + 1 {
        return Err(Error::Malformed("body needs more than 65536 fragments"));
    }
    let mut out = Vec::with_capacity(count);
    for (i, chunk) in body.chunks(max_body).enumerate() {
        let last = i + 1 == count;
        let mut h = *header;
        h.flags1 = base_flags | flags1::FRAG;
        if last {
            h.flags1 |= flags1::LAST_FRAG | flags1::NO_FACK;
        } else if !request_fack {
            h.flags1 |= flags1::NO_FACK;
        }
        h.fragment_num = i as u16;
        h.serial = i as u16;
        h.fragment_len = chunk.len() as u16;
        out.push(RpcPacket::new(h, chunk.to_vec()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests;

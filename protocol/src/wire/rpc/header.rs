//! The 80-byte CL header: packet types, flag bits, PNIO opnums, the checked view [`Header`]
//! and its owned form [`RpcHeader`].

use super::{Drep, Endian, Uuid, PNIO_INTERFACE_VERSION};
use crate::wire::field::{self, Field};
use crate::wire::{Emit, Error, Result, Writer};

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

    /// Set every field of the 80-byte header `b`.
    fn fill(&self, b: &mut [u8; HEADER_LEN]) {
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
    }
}

impl Emit for RpcHeader {
    fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    fn emit(&self, w: &mut Writer) -> Result<()> {
        let mut b = [0u8; HEADER_LEN];
        self.fill(&mut b);
        w.bytes(&b);
        Ok(())
    }
}

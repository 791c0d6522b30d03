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
//!
//! Layout: byte order ([`Endian`], [`Drep`]) here; `uuid`, `header` (CL header view and repr),
//! `packet` (packet, fragmentation), `pnio_body` (NDR framing), `fault`, `fack`.

use crate::wire::field;
use crate::wire::{Error, Result};

/// An NDR body (the part of a CL packet after the header whose integers follow DREP) paired
/// with the DREP to emit it in; `Ndr::new(drep, &body).to_bytes()` is how every NDR body
/// serialises ([`crate::wire::Emit`] is implemented for `Ndr<FaultBody>`, `Ndr<FackBody>`,
/// `Ndr<PnioRequest>` and `Ndr<PnioResponse>`).
///
/// A wrapper rather than a `drep` field in each body because the byte order belongs to the
/// packet, not to the body: it is chosen by the header ([`RpcHeader::drep`]), a response
/// answers in the requester's DREP, and `parse(body, drep)` takes it as an argument too, so
/// the body types stay plain values that can be re-emitted in either order (the fuzz round
/// trip does exactly that).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ndr<'a, T> {
    pub drep: Drep,
    pub body: &'a T,
}

impl<'a, T> Ndr<'a, T> {
    pub fn new(drep: Drep, body: &'a T) -> Self {
        Ndr { drep, body }
    }
}

/// `body.ndr(drep)`: [`Ndr::new`] in method form, for call chains
/// (`PnioRequest::new(n, data).ndr(drep).to_bytes()`).
macro_rules! ndr_bodies {
    ($($body:ty),*) => {$(
        impl $body {
            /// This body paired with the DREP to emit it in.
            pub fn ndr(&self, drep: Drep) -> Ndr<'_, Self> {
                Ndr::new(drep, self)
            }
        }
    )*};
}

ndr_bodies!(FaultBody, FackBody, PnioRequest, PnioResponse);

mod fack;
mod fault;
mod header;
mod packet;
mod pnio_body;
mod uuid;

pub use fack::FackBody;
pub use fault::{reject_status, FaultBody};
pub use header::{flags1, flags2, opnum, Header, PacketType, RpcHeader, HEADER_LEN, RPC_VERSION};
pub use packet::{fragment, RpcPacket};
pub use pnio_body::{PnioRequest, PnioResponse, PNIO_REQUEST_NDR_LEN, PNIO_RESPONSE_NDR_LEN};
pub use uuid::{
    Uuid, PNIO_CONTROLLER_INTERFACE, PNIO_DEVICE_INTERFACE, PNIO_INTERFACE_VERSION,
    PNIO_PARAMSERVER_INTERFACE, PNIO_SUPERVISOR_INTERFACE,
};

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

#[cfg(test)]
mod tests;

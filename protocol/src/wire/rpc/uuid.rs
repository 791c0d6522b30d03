//! [`Uuid`] with its DREP-aware wire encoding, text form, and the PNIO interface and object
//! UUIDs.

use super::Endian;
use crate::wire::field;
use crate::wire::{Error, Result};
use core::fmt;
use core::str::FromStr;

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

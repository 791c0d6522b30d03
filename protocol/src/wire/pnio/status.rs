//! PNIOStatus: ErrorCode, ErrorDecode, ErrorCode1, ErrorCode2 (one byte each).
//! Source: IEC 61158-6-10 "Coding of the field PNIOStatus"; Wireshark
//! `plugins/epan/profinet/packet-dcerpc-pn-io.c` `dissect_PNIO_status()`.

use crate::wire::{Error, Result};

/// A PNIOStatus value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct PnioStatus {
    pub error_code: u8,
    pub error_decode: u8,
    pub error_code1: u8,
    pub error_code2: u8,
}

impl PnioStatus {
    pub const LEN: usize = 4;
    pub const OK: PnioStatus = PnioStatus::new(0, 0, 0, 0);

    /// ErrorCode values.
    pub const CODE_PNIO: u8 = 0x81;
    pub const CODE_RTA_ERROR: u8 = 0xCF;
    pub const CODE_ALARM_ACK: u8 = 0xDA;
    pub const CODE_CONNECT: u8 = 0xDB;
    pub const CODE_RELEASE: u8 = 0xDC;
    pub const CODE_CONTROL: u8 = 0xDD;
    pub const CODE_READ: u8 = 0xDE;
    pub const CODE_WRITE: u8 = 0xDF;

    /// ErrorDecode values.
    pub const DECODE_PNIORW: u8 = 0x80;
    pub const DECODE_PNIO: u8 = 0x81;

    pub const fn new(error_code: u8, error_decode: u8, error_code1: u8, error_code2: u8) -> Self {
        PnioStatus {
            error_code,
            error_decode,
            error_code1,
            error_code2,
        }
    }

    pub fn is_ok(&self) -> bool {
        *self == Self::OK
    }

    pub fn from_bytes(b: &[u8]) -> Result<Self> {
        match b {
            [a, bb, c, d, ..] => Ok(PnioStatus::new(*a, *bb, *c, *d)),
            _ => Err(Error::Truncated),
        }
    }

    pub fn to_bytes(self) -> [u8; 4] {
        [
            self.error_code,
            self.error_decode,
            self.error_code1,
            self.error_code2,
        ]
    }

    /// The status as one big-endian u32 (how it appears in logs and tshark).
    pub fn as_u32(self) -> u32 {
        u32::from_be_bytes(self.to_bytes())
    }
}

impl core::fmt::Display for PnioStatus {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "{:02X} {:02X} {:02X} {:02X}",
            self.error_code, self.error_decode, self.error_code1, self.error_code2
        )
    }
}

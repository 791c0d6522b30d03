//! PNIOStatus: ErrorCode, ErrorDecode, ErrorCode1, ErrorCode2 (one byte each).
//! Source: IEC 61158-6-10 "Coding of the field PNIOStatus"; Wireshark
//! `plugins/epan/profinet/packet-dcerpc-pn-io.c` `dissect_PNIO_status()`.

use crate::wire::{Emit, Error, Result, Writer};

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

    /// The four bytes in wire order, without allocating (for view setters; [`Emit`] is the
    /// serialisation).
    pub fn octets(self) -> [u8; 4] {
        [
            self.error_code,
            self.error_decode,
            self.error_code1,
            self.error_code2,
        ]
    }

    /// The status as one big-endian u32 (how it appears in logs and tshark).
    pub fn as_u32(self) -> u32 {
        u32::from_be_bytes(self.octets())
    }
}

impl Emit for PnioStatus {
    fn buffer_len(&self) -> usize {
        Self::LEN
    }
    fn emit(&self, w: &mut Writer) -> Result<()> {
        w.bytes(&self.octets());
        Ok(())
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

impl PnioStatus {
    /// The status with its meaning: "DB 81 02 0B (Connect: faulty IOCRBlockReq:
    /// ReductionRatio)". One table for every user-facing place (the daemon's log and status
    /// message, pn-controller's output, the simulator), so no one reads bare codes.
    pub fn in_words(self) -> String {
        format!("{self} ({})", describe(self))
    }
}

/// The meaning of a PNIOStatus in words. Sources: IEC 61158-6-10 "Coding of the field
/// PNIOStatus" and Wireshark `plugins/epan/profinet/packet-dcerpc-pn-io.c`
/// (`pn_io_error_code`, `pn_io_error_decode`, `pn_io_error_code1_pniorw`,
/// `pn_io_error_code1_pnio`, `pn_io_error_code2_pnio_*`); details in docs/protocol.md.
pub fn describe(st: PnioStatus) -> String {
    if st.is_ok() {
        return "no error".into();
    }
    let service = match st.error_code {
        PnioStatus::CODE_PNIO => "PNIO",
        PnioStatus::CODE_RTA_ERROR => "RTA error",
        PnioStatus::CODE_ALARM_ACK => "alarm acknowledgement",
        PnioStatus::CODE_CONNECT => "Connect",
        PnioStatus::CODE_RELEASE => "Release",
        PnioStatus::CODE_CONTROL => "Control",
        PnioStatus::CODE_READ => "Read",
        PnioStatus::CODE_WRITE => "Write",
        _ => "ErrorCode unknown",
    };
    let what = match st.error_decode {
        PnioStatus::DECODE_PNIORW => pniorw(st.error_code1),
        PnioStatus::DECODE_PNIO => pnio(st),
        0x82 => format!(
            "manufacturer specific {:02X} {:02X}",
            st.error_code1, st.error_code2
        ),
        d => format!("ErrorDecode {d:#04x} unknown"),
    };
    format!("{service}: {what}")
}

/// ErrorCode1 of ErrorDecode PNIORW (record services): class in the high nibble, code in the
/// low one. ErrorCode2 is user specific there.
fn pniorw(code1: u8) -> String {
    let words = match code1 {
        0xA0 => "application: read error",
        0xA1 => "application: write error",
        0xA2 => "application: module failure",
        0xA7 => "application: busy",
        0xA8 => "application: version conflict",
        0xA9 => "application: feature not supported",
        0xB0 => "access: invalid index",
        0xB1 => "access: write length error",
        0xB2 => "access: invalid slot/subslot",
        0xB3 => "access: type conflict",
        0xB4 => "access: invalid area/API",
        0xB5 => "access: state conflict",
        0xB6 => "access: access denied",
        0xB7 => "access: invalid range",
        0xB8 => "access: invalid parameter",
        0xB9 => "access: invalid type",
        0xBA => "access: backup",
        0xC0 => "resource: read constrain conflict",
        0xC1 => "resource: write constrain conflict",
        0xC2 => "resource: resource busy",
        0xC3 => "resource: resource unavailable",
        _ => return format!("ErrorCode1 {code1:#04x}"),
    };
    words.into()
}

/// ErrorDecode PNIO: the Connect's block errors, the CMRPC errors, the RTA abort reasons.
fn pnio(st: PnioStatus) -> String {
    if st.error_code == PnioStatus::CODE_CONNECT {
        if let Some(w) = crate::machine::cmdev::connect::describe_connect_error(st) {
            return w;
        }
    }
    if st.error_code == PnioStatus::CODE_RTA_ERROR && st.error_code1 == 0xFD {
        return crate::wire::rta::abort_reason::describe(st.error_code2).into();
    }
    if st.error_code1 == crate::machine::cmdev::connect::err1::CMRPC {
        let what = crate::machine::cmdev::connect::cmrpc_words(st.error_code2);
        return format!("CMRPC: {what}");
    }
    format!(
        "ErrorCode1 {:#04x}, ErrorCode2 {:#04x}",
        st.error_code1, st.error_code2
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_read_in_words() {
        let w = |a, b, c, d| PnioStatus::new(a, b, c, d).in_words();
        assert_eq!(w(0, 0, 0, 0), "00 00 00 00 (no error)");
        assert_eq!(
            w(0xDB, 0x81, 0x02, 0x0B),
            "DB 81 02 0B (Connect: faulty IOCRBlockReq: ReductionRatio)"
        );
        assert_eq!(
            w(0xDB, 0x81, 0x40, 0x04),
            "DB 81 40 04 (Connect: CMRPC: out of AR resources)"
        );
        assert_eq!(
            w(0xDD, 0x81, 0x40, 0x05),
            "DD 81 40 05 (Control: CMRPC: AR UUID unknown)"
        );
        assert_eq!(
            w(0xDE, 0x80, 0xB0, 0x00),
            "DE 80 B0 00 (Read: access: invalid index)"
        );
        assert_eq!(
            w(0xDF, 0x80, 0xB1, 0x00),
            "DF 80 B1 00 (Write: access: write length error)"
        );
        assert!(w(0xCF, 0x81, 0xFD, 0x05).starts_with("CF 81 FD 05 (RTA error: "));
        assert!(w(0xDF, 0x82, 1, 2).contains("manufacturer specific"));
        // Nothing unknown panics or prints nothing.
        for b in [0u8, 0x42, 0xFF] {
            assert!(!describe(PnioStatus::new(b, b, b, b)).is_empty());
        }
    }
}

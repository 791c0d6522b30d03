//! Record Read / Write: the IODReadReqHeader (0x0009), IODReadResHeader (0x8009),
//! IODWriteReqHeader (0x0008) and IODWriteResHeader (0x8008) blocks, the record data that
//! follows them, MultipleWrite (index 0xE040), record index constants and the PNIORW error
//! codes of a negative Read/Write response.
//!
//! These are the bytes inside the NDR array of a PNIO-CM Read (opnum 2), Read Implicit
//! (opnum 5) or Write (opnum 3) call; the DCE/RPC header and the NDR args header around them
//! belong to `wire::rpc` / `wire::pnio::cm`.
//!
//! All four headers are 64 bytes on the wire (BlockLength 60, version 1.0) and share their
//! first 40 bytes:
//!
//! ```text
//! 0  BlockType u16 | BlockLength u16 (=60) | VersionHigh 1 | VersionLow 0
//! 6  SeqNumber u16
//! 8  ARUUID (16, big-endian field order; nil for Read Implicit)
//! 24 API u32
//! 28 SlotNumber u16 | 30 SubslotNumber u16 | 32 padding (2)
//! 34 Index u16
//! 36 RecordDataLength u32
//! 40 ReadReq:  TargetARUUID (16) + padding (8) when ARUUID is nil, else padding (24)
//!    WriteReq: padding (24)
//!    ReadRes:  AdditionalValue1 u16 | AdditionalValue2 u16 | padding (20)
//!    WriteRes: AdditionalValue1 u16 | AdditionalValue2 u16 | PNIOStatus (4) | padding (16)
//! ```
//!
//! Source: Wireshark `plugins/epan/profinet/packet-dcerpc-pn-io.c` `dissect_ReadWrite_header`,
//! `dissect_IODReadReqHeader_block`, `dissect_IODWriteReqHeader_block`,
//! `dissect_IODReadResHeader_block`, `dissect_IODWriteResHeader_block`; checked against the
//! real frames `pniors-im0-read-req-if-s7`, `icsnpp-read-implicit-im0filter-req` and others
//! (see `docs/protocol-notes/rec.md`).
//!
//! Fuzz entry point: [`RecordPdu::parse`].

use crate::wire::field::{self, Writer};
use crate::wire::pnio::block::{BlockHeader, BlockView};
use crate::wire::pnio::PnioStatus;
use crate::wire::{Emit, Error, Result};

/// A UUID as it appears inside PNIO blocks: 16 bytes in canonical (big-endian) order.
pub type Uuid = [u8; 16];

/// The nil UUID (ARUUID of a Read Implicit request).
pub const NIL_UUID: Uuid = [0; 16];

/// BlockType values of the four record headers.
pub mod block_type {
    pub const IOD_WRITE_REQ_HEADER: u16 = 0x0008;
    pub const IOD_READ_REQ_HEADER: u16 = 0x0009;
    pub const IOD_WRITE_RES_HEADER: u16 = 0x8008;
    pub const IOD_READ_RES_HEADER: u16 = 0x8009;
}

/// Record indices (Wireshark `pn_io_index`, p-net `pf_types.h` `PF_IDX_*`).
pub mod index {
    /// 0x0000..=0x7FFF: manufacturer specific records.
    pub const USER_MAX: u16 = 0x7FFF;
    pub const SUB_EXPECTED_IDENTIFICATION_DATA: u16 = 0x8000;
    pub const SUB_REAL_IDENTIFICATION_DATA: u16 = 0x8001;
    /// Diagnosis in channel coding for one subslot.
    pub const SUB_DIAGNOSIS_CHANNEL: u16 = 0x800A;
    /// Diagnosis in all codings for one subslot.
    pub const SUB_DIAGNOSIS_ALL: u16 = 0x800B;
    /// Diagnosis, Maintenance, Qualified and Status for one subslot.
    pub const SUB_DIAGNOSIS_DMQS: u16 = 0x800C;
    pub const SUB_MAINTENANCE_REQUIRED_CHANNEL: u16 = 0x8010;
    pub const SUB_MAINTENANCE_DEMANDED_CHANNEL: u16 = 0x8011;
    pub const SUB_MAINTENANCE_REQUIRED_ALL: u16 = 0x8012;
    pub const SUB_MAINTENANCE_DEMANDED_ALL: u16 = 0x8013;
    pub const SUB_SUBSTITUTE_VALUES: u16 = 0x801E;
    pub const SUB_INPUT_DATA: u16 = 0x8028;
    pub const SUB_OUTPUT_DATA: u16 = 0x8029;
    pub const SUB_PD_PORT_DATA_REAL: u16 = 0x802A;
    pub const SUB_PD_PORT_DATA_CHECK: u16 = 0x802B;
    pub const SUB_PD_PORT_DATA_ADJUST: u16 = 0x802F;
    pub const SUB_PD_INTERFACE_ADJUST: u16 = 0x8071;
    pub const SUB_PD_PORT_STATISTIC: u16 = 0x8072;
    pub const SUB_PD_INTERFACE_DATA_REAL: u16 = 0x8080;
    pub const IM0: u16 = 0xAFF0;
    pub const IM1: u16 = 0xAFF1;
    pub const IM2: u16 = 0xAFF2;
    pub const IM3: u16 = 0xAFF3;
    pub const IM4: u16 = 0xAFF4;
    pub const IM15: u16 = 0xAFFF;
    pub const SLOT_EXPECTED_IDENTIFICATION_DATA: u16 = 0xC000;
    pub const SLOT_REAL_IDENTIFICATION_DATA: u16 = 0xC001;
    pub const SLOT_DIAGNOSIS_CHANNEL: u16 = 0xC00A;
    pub const SLOT_DIAGNOSIS_ALL: u16 = 0xC00B;
    pub const SLOT_DIAGNOSIS_DMQS: u16 = 0xC00C;
    pub const AR_EXPECTED_IDENTIFICATION_DATA: u16 = 0xE000;
    pub const AR_REAL_IDENTIFICATION_DATA: u16 = 0xE001;
    pub const AR_MODULE_DIFF_BLOCK: u16 = 0xE002;
    pub const AR_DIAGNOSIS_CHANNEL: u16 = 0xE00A;
    pub const AR_DIAGNOSIS_ALL: u16 = 0xE00B;
    pub const AR_DIAGNOSIS_DMQS: u16 = 0xE00C;
    pub const MULTIPLE_WRITE: u16 = 0xE040;
    pub const API_REAL_IDENTIFICATION_DATA: u16 = 0xF000;
    pub const API_DIAGNOSIS_CHANNEL: u16 = 0xF00A;
    pub const API_DIAGNOSIS_ALL: u16 = 0xF00B;
    pub const API_DIAGNOSIS_DMQS: u16 = 0xF00C;
    pub const API_AR_DATA: u16 = 0xF020;
    /// Diagnosis, Maintenance, Qualified and Status for one device.
    pub const DEVICE_DIAGNOSIS_DMQS: u16 = 0xF80C;
    pub const AR_DATA: u16 = 0xF820;
    pub const API_DATA: u16 = 0xF821;
    pub const LOG_DATA: u16 = 0xF830;
    pub const PDEV_DATA: u16 = 0xF831;
    pub const IM0_FILTER_DATA: u16 = 0xF840;
    pub const PD_REAL_DATA: u16 = 0xF841;
    pub const PD_EXPECTED_DATA: u16 = 0xF842;
    /// "Trigger index for RPC connection monitoring" (Wireshark): S7 controllers read it
    /// periodically; a device without support answers with a negative Read response.
    pub const RPC_TRIGGER: u16 = 0xFBFF;

    /// True for the I&M0..I&M15 range.
    pub fn is_im(index: u16) -> bool {
        (IM0..=IM15).contains(&index)
    }
}

/// PNIORW error codes of negative Read/Write responses. ErrorCode1 is (class << 4) | code.
/// Source: Wireshark `pn_io_error_code1_pniorw` value table, p-net `include/pnet_api.h`
/// `PNET_ERROR_CODE_1_*`.
pub mod rw_error {
    use crate::wire::pnio::PnioStatus;

    pub const APP_READ_ERROR: u8 = 0xA0;
    pub const APP_WRITE_ERROR: u8 = 0xA1;
    pub const APP_MODULE_FAILURE: u8 = 0xA2;
    pub const APP_BUSY: u8 = 0xA7;
    pub const APP_VERSION_CONFLICT: u8 = 0xA8;
    pub const APP_FEATURE_NOT_SUPPORTED: u8 = 0xA9;
    pub const ACC_INVALID_INDEX: u8 = 0xB0;
    pub const ACC_WRITE_LENGTH_ERROR: u8 = 0xB1;
    pub const ACC_INVALID_SLOT_SUBSLOT: u8 = 0xB2;
    pub const ACC_TYPE_CONFLICT: u8 = 0xB3;
    pub const ACC_INVALID_AREA_API: u8 = 0xB4;
    pub const ACC_STATE_CONFLICT: u8 = 0xB5;
    pub const ACC_ACCESS_DENIED: u8 = 0xB6;
    pub const ACC_INVALID_RANGE: u8 = 0xB7;
    pub const ACC_INVALID_PARAMETER: u8 = 0xB8;
    pub const ACC_INVALID_TYPE: u8 = 0xB9;
    pub const ACC_BACKUP: u8 = 0xBA;
    pub const RES_READ_CONSTRAIN_CONFLICT: u8 = 0xC0;
    pub const RES_WRITE_CONSTRAIN_CONFLICT: u8 = 0xC1;
    pub const RES_RESOURCE_BUSY: u8 = 0xC2;
    pub const RES_RESOURCE_UNAVAILABLE: u8 = 0xC3;

    /// PNIOStatus of a negative Read response: ErrorCode 0xDE (IODReadRes), ErrorDecode 0x80
    /// (PNIORW), ErrorCode1 `code1`, ErrorCode2 `code2` (user specific, usually 0).
    pub const fn read(code1: u8, code2: u8) -> PnioStatus {
        PnioStatus::new(
            PnioStatus::CODE_READ,
            PnioStatus::DECODE_PNIORW,
            code1,
            code2,
        )
    }

    /// PNIOStatus of a negative Write response: ErrorCode 0xDF (IODWriteRes), ErrorDecode
    /// 0x80 (PNIORW).
    pub const fn write(code1: u8, code2: u8) -> PnioStatus {
        PnioStatus::new(
            PnioStatus::CODE_WRITE,
            PnioStatus::DECODE_PNIORW,
            code1,
            code2,
        )
    }
}

mod header;
mod pdu;
pub use header::*;
pub use pdu::*;

#[cfg(test)]
mod tests;

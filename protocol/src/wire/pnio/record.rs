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
use crate::wire::{Error, Result};

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

/// Field offsets inside the 64-byte record header block (from the BlockType field).
mod field_off {
    use crate::wire::field::Field;
    pub const SEQ_NUMBER: usize = 6;
    pub const AR_UUID: Field = 8..24;
    pub const API: usize = 24;
    pub const SLOT: usize = 28;
    pub const SUBSLOT: usize = 30;
    pub const INDEX: usize = 34;
    pub const RECORD_DATA_LENGTH: usize = 36;
    /// Read request with nil ARUUID.
    pub const TARGET_AR_UUID: Field = 40..56;
    pub const ADD_VAL1: usize = 40;
    pub const ADD_VAL2: usize = 42;
    /// Write response.
    pub const STATUS: Field = 44..48;
    pub const LEN: usize = 64;
}

/// Length of every record header on the wire.
pub const HEADER_LEN: usize = field_off::LEN;

/// A checked view of a 64-byte record header block (any of the four kinds).
#[derive(Debug, Clone)]
pub struct RecordHeader<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> RecordHeader<T> {
    /// Crate-internal: for a buffer whose length is already established (an emit into a
    /// buffer sized for it, or after an explicit check); the getters index the buffer.
    pub(crate) const fn new_unchecked(buffer: T) -> Self {
        RecordHeader { buffer }
    }

    /// Check length (64 bytes), BlockLength 60 and block version 1.0.
    pub fn new_checked(buffer: T) -> Result<Self> {
        let h = Self::new_unchecked(buffer);
        h.check_len()?;
        Ok(h)
    }

    pub fn check_len(&self) -> Result<()> {
        let b = self.buffer.as_ref();
        if b.len() < HEADER_LEN {
            return Err(Error::Truncated);
        }
        if field::read_u16(b, 2)? != (HEADER_LEN - 4) as u16 {
            return Err(Error::Malformed("record header BlockLength is not 60"));
        }
        if b[4] != 1 || b[5] != 0 {
            return Err(Error::Unsupported(
                "record header block version other than 1.0",
            ));
        }
        Ok(())
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    fn b(&self) -> &[u8] {
        self.buffer.as_ref()
    }
    fn u16_at(&self, at: usize) -> u16 {
        field::get_u16(self.b(), at)
    }
    fn u32_at(&self, at: usize) -> u32 {
        field::get_u32(self.b(), at)
    }
    fn uuid_at(&self, f: core::ops::Range<usize>) -> Uuid {
        field::get_array(self.b(), f.start)
    }

    pub fn block_type(&self) -> u16 {
        self.u16_at(0)
    }
    pub fn seq_number(&self) -> u16 {
        self.u16_at(field_off::SEQ_NUMBER)
    }
    pub fn ar_uuid(&self) -> Uuid {
        self.uuid_at(field_off::AR_UUID)
    }
    pub fn api(&self) -> u32 {
        self.u32_at(field_off::API)
    }
    pub fn slot(&self) -> u16 {
        self.u16_at(field_off::SLOT)
    }
    pub fn subslot(&self) -> u16 {
        self.u16_at(field_off::SUBSLOT)
    }
    pub fn index(&self) -> u16 {
        self.u16_at(field_off::INDEX)
    }
    pub fn record_data_length(&self) -> u32 {
        self.u32_at(field_off::RECORD_DATA_LENGTH)
    }
    /// Read request only (meaningful when the ARUUID is nil).
    pub fn target_ar_uuid(&self) -> Uuid {
        self.uuid_at(field_off::TARGET_AR_UUID)
    }
    /// Responses only.
    pub fn add_val1(&self) -> u16 {
        self.u16_at(field_off::ADD_VAL1)
    }
    /// Responses only.
    pub fn add_val2(&self) -> u16 {
        self.u16_at(field_off::ADD_VAL2)
    }
    /// Write response only.
    pub fn status(&self) -> PnioStatus {
        field::slice(self.b(), field_off::STATUS)
            .and_then(PnioStatus::from_bytes)
            .unwrap_or_default()
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> RecordHeader<T> {
    fn bm(&mut self) -> &mut [u8] {
        self.buffer.as_mut()
    }
    /// Write BlockType, BlockLength 60, version 1.0 and zero all padding.
    pub fn init(&mut self, block_type: u16) -> Result<()> {
        let b = self.bm();
        let hdr = b.get_mut(..HEADER_LEN).ok_or(Error::Truncated)?;
        hdr.fill(0);
        field::write_u16(hdr, 0, block_type)?;
        field::write_u16(hdr, 2, (HEADER_LEN - 4) as u16)?;
        hdr[4] = 1;
        Ok(())
    }
    pub fn set_seq_number(&mut self, v: u16) -> Result<()> {
        field::write_u16(self.bm(), field_off::SEQ_NUMBER, v)
    }
    pub fn set_ar_uuid(&mut self, v: &Uuid) -> Result<()> {
        self.bm()
            .get_mut(field_off::AR_UUID)
            .ok_or(Error::Truncated)?
            .copy_from_slice(v);
        Ok(())
    }
    pub fn set_api(&mut self, v: u32) -> Result<()> {
        field::write_u32(self.bm(), field_off::API, v)
    }
    pub fn set_slot(&mut self, v: u16) -> Result<()> {
        field::write_u16(self.bm(), field_off::SLOT, v)
    }
    pub fn set_subslot(&mut self, v: u16) -> Result<()> {
        field::write_u16(self.bm(), field_off::SUBSLOT, v)
    }
    pub fn set_index(&mut self, v: u16) -> Result<()> {
        field::write_u16(self.bm(), field_off::INDEX, v)
    }
    pub fn set_record_data_length(&mut self, v: u32) -> Result<()> {
        field::write_u32(self.bm(), field_off::RECORD_DATA_LENGTH, v)
    }
    pub fn set_target_ar_uuid(&mut self, v: &Uuid) -> Result<()> {
        self.bm()
            .get_mut(field_off::TARGET_AR_UUID)
            .ok_or(Error::Truncated)?
            .copy_from_slice(v);
        Ok(())
    }
    pub fn set_add_val1(&mut self, v: u16) -> Result<()> {
        field::write_u16(self.bm(), field_off::ADD_VAL1, v)
    }
    pub fn set_add_val2(&mut self, v: u16) -> Result<()> {
        field::write_u16(self.bm(), field_off::ADD_VAL2, v)
    }
    pub fn set_status(&mut self, v: PnioStatus) -> Result<()> {
        self.bm()
            .get_mut(field_off::STATUS)
            .ok_or(Error::Truncated)?
            .copy_from_slice(&v.to_bytes());
        Ok(())
    }
}

/// The address fields shared by all record headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct RecordAddress {
    pub api: u32,
    pub slot: u16,
    pub subslot: u16,
    pub index: u16,
}

impl RecordAddress {
    pub const fn new(api: u32, slot: u16, subslot: u16, index: u16) -> Self {
        RecordAddress {
            api,
            slot,
            subslot,
            index,
        }
    }
}

fn check_type<T: AsRef<[u8]>>(h: &RecordHeader<T>, want: u16) -> Result<()> {
    if h.block_type() != want {
        return Err(Error::Malformed("unexpected record header BlockType"));
    }
    Ok(())
}

fn common_parse<T: AsRef<[u8]>>(h: &RecordHeader<T>) -> (u16, Uuid, RecordAddress, u32) {
    (
        h.seq_number(),
        h.ar_uuid(),
        RecordAddress::new(h.api(), h.slot(), h.subslot(), h.index()),
        h.record_data_length(),
    )
}

fn common_emit<T: AsRef<[u8]> + AsMut<[u8]>>(
    h: &mut RecordHeader<T>,
    block_type: u16,
    seq: u16,
    ar_uuid: &Uuid,
    addr: &RecordAddress,
    len: u32,
) -> Result<()> {
    h.init(block_type)?;
    h.set_seq_number(seq)?;
    h.set_ar_uuid(ar_uuid)?;
    h.set_api(addr.api)?;
    h.set_slot(addr.slot)?;
    h.set_subslot(addr.subslot)?;
    h.set_index(addr.index)?;
    h.set_record_data_length(len)
}

/// IODReadReqHeader (0x0009).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadReqHeaderRepr {
    pub seq_number: u16,
    /// Nil for Read Implicit.
    pub ar_uuid: Uuid,
    pub address: RecordAddress,
    /// Maximum number of record bytes the requester accepts.
    pub record_data_length: u32,
    /// TargetARUUID, present on the wire only when `ar_uuid` is nil (Read Implicit); ignored
    /// (emitted as padding) otherwise.
    pub target_ar_uuid: Uuid,
}

impl ReadReqHeaderRepr {
    pub fn parse<T: AsRef<[u8]>>(h: &RecordHeader<T>) -> Result<Self> {
        h.check_len()?;
        check_type(h, block_type::IOD_READ_REQ_HEADER)?;
        let (seq_number, ar_uuid, address, record_data_length) = common_parse(h);
        let target_ar_uuid = if ar_uuid == NIL_UUID {
            h.target_ar_uuid()
        } else {
            NIL_UUID
        };
        Ok(ReadReqHeaderRepr {
            seq_number,
            ar_uuid,
            address,
            record_data_length,
            target_ar_uuid,
        })
    }

    /// True when this is a Read Implicit request (no AR).
    pub fn is_implicit(&self) -> bool {
        self.ar_uuid == NIL_UUID
    }

    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, h: &mut RecordHeader<T>) -> Result<()> {
        common_emit(
            h,
            block_type::IOD_READ_REQ_HEADER,
            self.seq_number,
            &self.ar_uuid,
            &self.address,
            self.record_data_length,
        )?;
        if self.ar_uuid == NIL_UUID {
            h.set_target_ar_uuid(&self.target_ar_uuid)?;
        }
        Ok(())
    }

    pub fn emit_to(&self, w: &mut Writer) -> Result<()> {
        let mut buf = [0u8; HEADER_LEN];
        self.emit(&mut RecordHeader::new_unchecked(&mut buf[..]))?;
        w.bytes(&buf);
        Ok(())
    }
}

/// IODReadResHeader (0x8009).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadResHeaderRepr {
    pub seq_number: u16,
    pub ar_uuid: Uuid,
    pub address: RecordAddress,
    /// Number of record bytes that follow the header.
    pub record_data_length: u32,
    pub add_val1: u16,
    pub add_val2: u16,
}

impl ReadResHeaderRepr {
    /// The response header echoing a request, for `record_data_length` bytes of data.
    pub fn answering(req: &ReadReqHeaderRepr, record_data_length: u32) -> Self {
        ReadResHeaderRepr {
            seq_number: req.seq_number,
            ar_uuid: req.ar_uuid,
            address: req.address,
            record_data_length,
            add_val1: 0,
            add_val2: 0,
        }
    }

    pub fn parse<T: AsRef<[u8]>>(h: &RecordHeader<T>) -> Result<Self> {
        h.check_len()?;
        check_type(h, block_type::IOD_READ_RES_HEADER)?;
        let (seq_number, ar_uuid, address, record_data_length) = common_parse(h);
        Ok(ReadResHeaderRepr {
            seq_number,
            ar_uuid,
            address,
            record_data_length,
            add_val1: h.add_val1(),
            add_val2: h.add_val2(),
        })
    }

    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, h: &mut RecordHeader<T>) -> Result<()> {
        common_emit(
            h,
            block_type::IOD_READ_RES_HEADER,
            self.seq_number,
            &self.ar_uuid,
            &self.address,
            self.record_data_length,
        )?;
        h.set_add_val1(self.add_val1)?;
        h.set_add_val2(self.add_val2)
    }

    pub fn emit_to(&self, w: &mut Writer) -> Result<()> {
        let mut buf = [0u8; HEADER_LEN];
        self.emit(&mut RecordHeader::new_unchecked(&mut buf[..]))?;
        w.bytes(&buf);
        Ok(())
    }
}

/// IODWriteReqHeader (0x0008).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteReqHeaderRepr {
    pub seq_number: u16,
    pub ar_uuid: Uuid,
    pub address: RecordAddress,
    /// Number of record bytes that follow the header.
    pub record_data_length: u32,
}

impl WriteReqHeaderRepr {
    pub fn parse<T: AsRef<[u8]>>(h: &RecordHeader<T>) -> Result<Self> {
        h.check_len()?;
        check_type(h, block_type::IOD_WRITE_REQ_HEADER)?;
        let (seq_number, ar_uuid, address, record_data_length) = common_parse(h);
        Ok(WriteReqHeaderRepr {
            seq_number,
            ar_uuid,
            address,
            record_data_length,
        })
    }

    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, h: &mut RecordHeader<T>) -> Result<()> {
        common_emit(
            h,
            block_type::IOD_WRITE_REQ_HEADER,
            self.seq_number,
            &self.ar_uuid,
            &self.address,
            self.record_data_length,
        )
    }

    pub fn emit_to(&self, w: &mut Writer) -> Result<()> {
        let mut buf = [0u8; HEADER_LEN];
        self.emit(&mut RecordHeader::new_unchecked(&mut buf[..]))?;
        w.bytes(&buf);
        Ok(())
    }
}

/// IODWriteResHeader (0x8008).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteResHeaderRepr {
    pub seq_number: u16,
    pub ar_uuid: Uuid,
    pub address: RecordAddress,
    /// Number of record bytes written (devices differ for the outer MultipleWrite header:
    /// p-net sends 0, others the outer request length).
    pub record_data_length: u32,
    pub add_val1: u16,
    pub add_val2: u16,
    pub status: PnioStatus,
}

impl WriteResHeaderRepr {
    /// The response header echoing a request, with `status` (OK or a [`rw_error::write`]).
    pub fn answering(req: &WriteReqHeaderRepr, status: PnioStatus) -> Self {
        WriteResHeaderRepr {
            seq_number: req.seq_number,
            ar_uuid: req.ar_uuid,
            address: req.address,
            record_data_length: req.record_data_length,
            add_val1: 0,
            add_val2: 0,
            status,
        }
    }

    pub fn parse<T: AsRef<[u8]>>(h: &RecordHeader<T>) -> Result<Self> {
        h.check_len()?;
        check_type(h, block_type::IOD_WRITE_RES_HEADER)?;
        let (seq_number, ar_uuid, address, record_data_length) = common_parse(h);
        Ok(WriteResHeaderRepr {
            seq_number,
            ar_uuid,
            address,
            record_data_length,
            add_val1: h.add_val1(),
            add_val2: h.add_val2(),
            status: h.status(),
        })
    }

    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, h: &mut RecordHeader<T>) -> Result<()> {
        common_emit(
            h,
            block_type::IOD_WRITE_RES_HEADER,
            self.seq_number,
            &self.ar_uuid,
            &self.address,
            self.record_data_length,
        )?;
        h.set_add_val1(self.add_val1)?;
        h.set_add_val2(self.add_val2)?;
        h.set_status(self.status)
    }

    pub fn emit_to(&self, w: &mut Writer) -> Result<()> {
        let mut buf = [0u8; HEADER_LEN];
        self.emit(&mut RecordHeader::new_unchecked(&mut buf[..]))?;
        w.bytes(&buf);
        Ok(())
    }
}

fn header_of(buf: &[u8]) -> Result<RecordHeader<&[u8]>> {
    let b = buf.get(..HEADER_LEN).ok_or(Error::Truncated)?;
    RecordHeader::new_checked(b)
}

fn len_usize(n: u32) -> Result<usize> {
    usize::try_from(n).map_err(|_| Error::Malformed("RecordDataLength"))
}

fn len_u32(n: usize) -> Result<u32> {
    u32::try_from(n).map_err(|_| Error::Malformed("record data longer than 4 GiB"))
}

/// Number of pad bytes that bring `len` to a multiple of 4.
pub const fn pad4(len: usize) -> usize {
    (4 - (len % 4)) % 4
}

/// A Read request (explicit or implicit): the header plus any bytes after it (RecordDataRead
/// with query data, rarely used; kept for a byte-exact round trip).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadRequest {
    pub header: ReadReqHeaderRepr,
    pub extra: Vec<u8>,
}

impl ReadRequest {
    pub fn new(header: ReadReqHeaderRepr) -> Self {
        ReadRequest {
            header,
            extra: Vec::new(),
        }
    }

    pub fn parse(buf: &[u8]) -> Result<Self> {
        let header = ReadReqHeaderRepr::parse(&header_of(buf)?)?;
        Ok(ReadRequest {
            header,
            extra: buf[HEADER_LEN..].to_vec(),
        })
    }

    pub fn buffer_len(&self) -> usize {
        HEADER_LEN + self.extra.len()
    }

    pub fn emit(&self, w: &mut Writer) -> Result<()> {
        self.header.emit_to(w)?;
        w.bytes(&self.extra);
        Ok(())
    }

    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let mut w = Writer::with_capacity(self.buffer_len());
        self.emit(&mut w)?;
        Ok(w.into_inner())
    }
}

/// A Read response: header plus `record_data_length` bytes of record data (for example an
/// I&M0 block, a DiagnosisData block list or RealIdentificationData).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadResponse {
    pub header: ReadResHeaderRepr,
    pub data: Vec<u8>,
}

impl ReadResponse {
    /// A positive response to `req` carrying `data` (RecordDataLength is set from it).
    pub fn answering(req: &ReadReqHeaderRepr, data: Vec<u8>) -> Result<Self> {
        let header = ReadResHeaderRepr::answering(req, len_u32(data.len())?);
        Ok(ReadResponse { header, data })
    }

    /// The negative answer to a Read that could not be served at all (unknown AR, a record
    /// list that does not decode): the request's header echoed with RecordDataLength 0, as for
    /// any other read error. `None` when not even the request's header can be read (then there
    /// is nothing to echo).
    pub fn refusing(req_data: &[u8]) -> Option<Self> {
        let h = header_of(req_data).ok()?;
        ReadReqHeaderRepr::parse(&h).ok().map(|r| Self::empty(&r))
    }

    /// The response header alone (RecordDataLength 0), as sent with a negative PNIOStatus
    /// (e.g. [`rw_error::read`]) in the NDR header of the response (p-net `pf_cmrdr.c`).
    pub fn empty(req: &ReadReqHeaderRepr) -> Self {
        ReadResponse {
            header: ReadResHeaderRepr::answering(req, 0),
            data: Vec::new(),
        }
    }

    /// Parse; the data must be exactly `record_data_length` bytes (trailing bytes are an
    /// error, since the NDR array length already bounds the body).
    pub fn parse(buf: &[u8]) -> Result<Self> {
        let header = ReadResHeaderRepr::parse(&header_of(buf)?)?;
        let n = len_usize(header.record_data_length)?;
        let rest = &buf[HEADER_LEN..];
        if rest.len() < n {
            return Err(Error::Truncated);
        }
        if rest.len() > n {
            return Err(Error::Malformed("bytes after the read record data"));
        }
        Ok(ReadResponse {
            header,
            data: rest.to_vec(),
        })
    }

    pub fn buffer_len(&self) -> usize {
        HEADER_LEN + self.data.len()
    }

    /// Emit; the header's RecordDataLength must match the data.
    pub fn emit(&self, w: &mut Writer) -> Result<()> {
        if len_usize(self.header.record_data_length)? != self.data.len() {
            return Err(Error::Malformed("RecordDataLength does not match the data"));
        }
        self.header.emit_to(w)?;
        w.bytes(&self.data);
        Ok(())
    }

    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let mut w = Writer::with_capacity(self.buffer_len());
        self.emit(&mut w)?;
        Ok(w.into_inner())
    }

    /// The record data as a sequence of PNIO blocks (for I&M, diagnosis, identification).
    pub fn blocks(&self) -> impl Iterator<Item = Result<BlockView<'_>>> {
        crate::wire::pnio::block::blocks(&self.data)
    }
}

/// One record of a MultipleWrite request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteRecord {
    pub header: WriteReqHeaderRepr,
    pub data: Vec<u8>,
}

/// What follows the (outer) IODWriteReqHeader.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteBody {
    /// A single record: its data.
    Single(Vec<u8>),
    /// Index 0xE040: a list of IODWriteReqHeader + data, each record's data padded with zeros
    /// to a multiple of 4 bytes except the last; the outer RecordDataLength covers all of it.
    Multiple(Vec<WriteRecord>),
}

/// A Write request (single record or MultipleWrite).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteRequest {
    pub header: WriteReqHeaderRepr,
    pub body: WriteBody,
}

impl WriteRequest {
    /// A single-record write; RecordDataLength is set from `data`.
    pub fn single(
        seq_number: u16,
        ar_uuid: Uuid,
        address: RecordAddress,
        data: Vec<u8>,
    ) -> Result<Self> {
        Ok(WriteRequest {
            header: WriteReqHeaderRepr {
                seq_number,
                ar_uuid,
                address,
                record_data_length: len_u32(data.len())?,
            },
            body: WriteBody::Single(data),
        })
    }

    /// A MultipleWrite with the outer header addressed to API 0xFFFFFFFF, slot/subslot
    /// 0xFFFF, index 0xE040; the outer RecordDataLength is computed. The inner headers keep
    /// their own sequence numbers and must carry `record_data_length == data.len()`.
    pub fn multiple(seq_number: u16, ar_uuid: Uuid, records: Vec<WriteRecord>) -> Result<Self> {
        let mut req = WriteRequest {
            header: WriteReqHeaderRepr {
                seq_number,
                ar_uuid,
                address: RecordAddress::new(0xFFFF_FFFF, 0xFFFF, 0xFFFF, index::MULTIPLE_WRITE),
                record_data_length: 0,
            },
            body: WriteBody::Multiple(records),
        };
        req.header.record_data_length = len_u32(req.body_len())?;
        Ok(req)
    }

    /// Padding after the LAST record of a MultipleWrite: some senders pad it to 4 bytes too
    /// and count it in the outer RecordDataLength. `parse` accepts that, so `emit` reproduces
    /// it when the outer length says so (found by fuzzing: parse/emit asymmetry).
    fn trailing_pad(&self) -> usize {
        match &self.body {
            WriteBody::Multiple(recs) => {
                let p = recs.last().map_or(0, |r| pad4(r.data.len()));
                let padded = self.unpadded_body_len().saturating_add(p);
                if p > 0 && len_usize(self.header.record_data_length).ok() == Some(padded) {
                    p
                } else {
                    0
                }
            }
            WriteBody::Single(_) => 0,
        }
    }

    fn body_len(&self) -> usize {
        self.unpadded_body_len() + self.trailing_pad()
    }

    fn unpadded_body_len(&self) -> usize {
        match &self.body {
            WriteBody::Single(d) => d.len(),
            WriteBody::Multiple(recs) => {
                let n = recs.len();
                recs.iter()
                    .enumerate()
                    .map(|(i, r)| {
                        HEADER_LEN + r.data.len() + if i + 1 < n { pad4(r.data.len()) } else { 0 }
                    })
                    .sum()
            }
        }
    }

    pub fn is_multiple(&self) -> bool {
        matches!(self.body, WriteBody::Multiple(_))
    }

    /// Parse; a header with index 0xE040 is parsed as a MultipleWrite.
    pub fn parse(buf: &[u8]) -> Result<Self> {
        let header = WriteReqHeaderRepr::parse(&header_of(buf)?)?;
        let n = len_usize(header.record_data_length)?;
        let rest = &buf[HEADER_LEN..];
        if rest.len() < n {
            return Err(Error::Truncated);
        }
        if rest.len() > n {
            return Err(Error::Malformed("bytes after the write record data"));
        }
        if header.address.index != index::MULTIPLE_WRITE {
            return Ok(WriteRequest {
                header,
                body: WriteBody::Single(rest.to_vec()),
            });
        }
        let mut records = Vec::new();
        let mut pos = 0usize;
        while pos < rest.len() {
            let inner = WriteReqHeaderRepr::parse(&header_of(&rest[pos..])?)?;
            if inner.address.index == index::MULTIPLE_WRITE {
                return Err(Error::Malformed("nested MultipleWrite"));
            }
            let dlen = len_usize(inner.record_data_length)?;
            let start = pos + HEADER_LEN;
            let end = start.checked_add(dlen).ok_or(Error::Truncated)?;
            let data = rest.get(start..end).ok_or(Error::Truncated)?.to_vec();
            records.push(WriteRecord {
                header: inner,
                data,
            });
            pos = end;
            if pos < rest.len() {
                // Padding to the next 4-byte boundary before the next record header.
                let p = pad4(dlen);
                if rest.len() < pos + p {
                    return Err(Error::Truncated);
                }
                pos += p;
            }
        }
        Ok(WriteRequest {
            header,
            body: WriteBody::Multiple(records),
        })
    }

    pub fn buffer_len(&self) -> usize {
        HEADER_LEN + self.body_len()
    }

    /// Emit; the outer RecordDataLength must match the body (use the constructors).
    pub fn emit(&self, w: &mut Writer) -> Result<()> {
        if len_usize(self.header.record_data_length)? != self.body_len() {
            return Err(Error::Malformed("RecordDataLength does not match the data"));
        }
        self.header.emit_to(w)?;
        match &self.body {
            WriteBody::Single(d) => {
                w.bytes(d);
            }
            WriteBody::Multiple(recs) => {
                let n = recs.len();
                for (i, r) in recs.iter().enumerate() {
                    if len_usize(r.header.record_data_length)? != r.data.len() {
                        return Err(Error::Malformed("inner RecordDataLength mismatch"));
                    }
                    r.header.emit_to(w)?;
                    w.bytes(&r.data);
                    if i + 1 < n {
                        w.zeros(pad4(r.data.len()));
                    } else {
                        w.zeros(self.trailing_pad());
                    }
                }
            }
        }
        Ok(())
    }

    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let mut w = Writer::with_capacity(self.buffer_len());
        self.emit(&mut w)?;
        Ok(w.into_inner())
    }

    /// The records of this request as (header, data) pairs: one for a single write, all
    /// inner ones for a MultipleWrite.
    pub fn records(&self) -> Vec<(WriteReqHeaderRepr, &[u8])> {
        match &self.body {
            WriteBody::Single(d) => vec![(self.header, d.as_slice())],
            WriteBody::Multiple(r) => r.iter().map(|r| (r.header, r.data.as_slice())).collect(),
        }
    }
}

/// A Write response: the (outer) IODWriteResHeader and, for a MultipleWrite, one
/// IODWriteResHeader per record (no data).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteResponse {
    pub header: WriteResHeaderRepr,
    pub records: Vec<WriteResHeaderRepr>,
}

impl WriteResponse {
    /// The response to `req` with one status per record (one for a single write, one per
    /// inner record for a MultipleWrite, in order). The outer header carries the first
    /// negative status (or OK) and echoes the request's RecordDataLength; put the same
    /// [`WriteResponse::overall_status`] into the NDR header of the RPC response.
    pub fn answering(req: &WriteRequest, statuses: &[PnioStatus]) -> Result<Self> {
        let recs = req.records();
        if statuses.len() != recs.len() {
            return Err(Error::Malformed("one status per written record expected"));
        }
        let first_error = statuses
            .iter()
            .copied()
            .find(|s| !s.is_ok())
            .unwrap_or(PnioStatus::OK);
        let header = WriteResHeaderRepr::answering(&req.header, first_error);
        let records = if req.is_multiple() {
            recs.iter()
                .zip(statuses)
                .map(|((h, _), s)| WriteResHeaderRepr::answering(h, *s))
                .collect()
        } else {
            Vec::new()
        };
        Ok(WriteResponse { header, records })
    }

    /// The negative answer to a Write that could not be served at all (unknown AR, a record
    /// list that does not decode): the request's IODWriteResHeader echoed with `status`,
    /// RecordDataLength 0 and no per-record headers, as the ET200SP answers a Write for an
    /// unknown AR (fixture `mehner-write-res-err-et200sp`: Index MultipleWrite, Len 0, status
    /// DF 81 40 05). `None` when not even the request's header can be read.
    pub fn refusing(req_data: &[u8], status: PnioStatus) -> Option<Self> {
        let h = header_of(req_data).ok()?;
        let req = WriteReqHeaderRepr::parse(&h).ok()?;
        let mut header = WriteResHeaderRepr::answering(&req, status);
        header.record_data_length = 0;
        Some(WriteResponse {
            header,
            records: Vec::new(),
        })
    }

    pub fn parse(buf: &[u8]) -> Result<Self> {
        let header = WriteResHeaderRepr::parse(&header_of(buf)?)?;
        let mut records = Vec::new();
        let mut rest = &buf[HEADER_LEN..];
        while !rest.is_empty() {
            records.push(WriteResHeaderRepr::parse(&header_of(rest)?)?);
            rest = &rest[HEADER_LEN..];
        }
        if !records.is_empty() && header.address.index != index::MULTIPLE_WRITE {
            return Err(Error::Malformed(
                "write response records without MultipleWrite",
            ));
        }
        Ok(WriteResponse { header, records })
    }

    pub fn buffer_len(&self) -> usize {
        HEADER_LEN * (1 + self.records.len())
    }

    pub fn emit(&self, w: &mut Writer) -> Result<()> {
        self.header.emit_to(w)?;
        for r in &self.records {
            r.emit_to(w)?;
        }
        Ok(())
    }

    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let mut w = Writer::with_capacity(self.buffer_len());
        self.emit(&mut w)?;
        Ok(w.into_inner())
    }

    /// The first non-OK status (outer first, then per record), or OK.
    pub fn overall_status(&self) -> PnioStatus {
        core::iter::once(&self.header)
            .chain(self.records.iter())
            .map(|h| h.status)
            .find(|s| !s.is_ok())
            .unwrap_or(PnioStatus::OK)
    }
}

/// Any record PDU, told apart by the BlockType of its first header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordPdu {
    ReadReq(ReadRequest),
    ReadRes(ReadResponse),
    WriteReq(WriteRequest),
    WriteRes(WriteResponse),
}

impl RecordPdu {
    /// Parse the NDR array contents of a Read / Read Implicit / Write call or response.
    /// Fuzz entry point: never panics, allocates at most about the input length.
    pub fn parse(buf: &[u8]) -> Result<Self> {
        let bt = field::read_u16(buf, 0)?;
        match bt {
            block_type::IOD_READ_REQ_HEADER => ReadRequest::parse(buf).map(RecordPdu::ReadReq),
            block_type::IOD_READ_RES_HEADER => ReadResponse::parse(buf).map(RecordPdu::ReadRes),
            block_type::IOD_WRITE_REQ_HEADER => WriteRequest::parse(buf).map(RecordPdu::WriteReq),
            block_type::IOD_WRITE_RES_HEADER => WriteResponse::parse(buf).map(RecordPdu::WriteRes),
            _ => Err(Error::Unsupported("not a record header BlockType")),
        }
    }

    pub fn buffer_len(&self) -> usize {
        match self {
            RecordPdu::ReadReq(p) => p.buffer_len(),
            RecordPdu::ReadRes(p) => p.buffer_len(),
            RecordPdu::WriteReq(p) => p.buffer_len(),
            RecordPdu::WriteRes(p) => p.buffer_len(),
        }
    }

    pub fn emit(&self, w: &mut Writer) -> Result<()> {
        match self {
            RecordPdu::ReadReq(p) => p.emit(w),
            RecordPdu::ReadRes(p) => p.emit(w),
            RecordPdu::WriteReq(p) => p.emit(w),
            RecordPdu::WriteRes(p) => p.emit(w),
        }
    }

    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let mut w = Writer::with_capacity(self.buffer_len());
        self.emit(&mut w)?;
        Ok(w.into_inner())
    }
}

/// Helper for record data made of PNIO blocks: the header for a body of `body_len` bytes.
pub fn block_header(block_type: u16, body_len: usize, version_low: u8) -> Result<BlockHeader> {
    BlockHeader::for_body(block_type, body_len, 1, version_low)
}

#[cfg(test)]
mod tests;

//! The 64-byte record header blocks (IODReadReqHeader, IODReadResHeader, IODWriteReqHeader,
//! IODWriteResHeader): the checked view over their bytes, their field offsets and their
//! representations, and the record address they carry.

use super::*;

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
            .copy_from_slice(&v.octets());
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

    /// Set every field of the view `h` (its padding must be zero).
    fn fill<T: AsRef<[u8]> + AsMut<[u8]>>(&self, h: &mut RecordHeader<T>) -> Result<()> {
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

    /// Set every field of the view `h` (its padding must be zero).
    fn fill<T: AsRef<[u8]> + AsMut<[u8]>>(&self, h: &mut RecordHeader<T>) -> Result<()> {
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

    /// Set every field of the view `h` (its padding must be zero).
    fn fill<T: AsRef<[u8]> + AsMut<[u8]>>(&self, h: &mut RecordHeader<T>) -> Result<()> {
        common_emit(
            h,
            block_type::IOD_WRITE_REQ_HEADER,
            self.seq_number,
            &self.ar_uuid,
            &self.address,
            self.record_data_length,
        )
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

    /// Set every field of the view `h` (its padding must be zero).
    fn fill<T: AsRef<[u8]> + AsMut<[u8]>>(&self, h: &mut RecordHeader<T>) -> Result<()> {
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
}

/// The record headers are fixed-layout: each emits by appending a zeroed header and setting
/// its fields through the [`RecordHeader`] view.
macro_rules! emit_through_view {
    ($($repr:ty),*) => {$(
        impl Emit for $repr {
            fn buffer_len(&self) -> usize {
                HEADER_LEN
            }
            fn emit(&self, w: &mut Writer) -> Result<()> {
                let start = w.len();
                w.zeros(HEADER_LEN);
                let filled = self.fill(&mut RecordHeader::new_unchecked(&mut w.buf[start..]));
                if filled.is_err() {
                    w.truncate(start);
                }
                filled
            }
        }
    )*};
}

emit_through_view!(
    ReadReqHeaderRepr,
    ReadResHeaderRepr,
    WriteReqHeaderRepr,
    WriteResHeaderRepr
);

pub(super) fn header_of(buf: &[u8]) -> Result<RecordHeader<&[u8]>> {
    let b = buf.get(..HEADER_LEN).ok_or(Error::Truncated)?;
    RecordHeader::new_checked(b)
}

pub(super) fn len_usize(n: u32) -> Result<usize> {
    usize::try_from(n).map_err(|_| Error::Malformed("RecordDataLength"))
}

pub(super) fn len_u32(n: usize) -> Result<u32> {
    u32::try_from(n).map_err(|_| Error::Malformed("record data longer than 4 GiB"))
}

//! Declared parameter records: the records a device's configuration describes field by field
//! (data type, default, allowed values) and its GSDML offers as `ParameterRecordDataItem`s.
//! CMDEV checks a Write of such a record here before the application stores it, so what the
//! engineering tool was told is what the device enforces (docs/decisions.md, "Parameter
//! records and typed IO data").
//!
//! Refusals (IODWriteRes, ErrorDecode PNIORW): a length other than the declared one is
//! `DF 80 B1 00` ("access: write length error"), a field value outside its allowed values is
//! `DF 80 B8 00` ("access: invalid parameter"): the codes Siemens' ET 200SP modules and p-net's
//! sample application answer with (sources in docs/protocol.md).

use std::collections::BTreeMap;

use crate::wire::pnio::record::{rw_error, RecordAddress};
use crate::wire::pnio::PnioStatus;

/// The integer data types a parameter field may have (GSDML `DataType` names). Values travel
/// big-endian, as every PROFINET record field does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ParamType {
    Unsigned8,
    Unsigned16,
    Unsigned32,
    Integer8,
    Integer16,
    Integer32,
}

impl ParamType {
    pub const ALL: [ParamType; 6] = [
        ParamType::Unsigned8,
        ParamType::Unsigned16,
        ParamType::Unsigned32,
        ParamType::Integer8,
        ParamType::Integer16,
        ParamType::Integer32,
    ];

    /// The GSDML name ("Unsigned16").
    pub fn name(self) -> &'static str {
        match self {
            ParamType::Unsigned8 => "Unsigned8",
            ParamType::Unsigned16 => "Unsigned16",
            ParamType::Unsigned32 => "Unsigned32",
            ParamType::Integer8 => "Integer8",
            ParamType::Integer16 => "Integer16",
            ParamType::Integer32 => "Integer32",
        }
    }

    pub fn from_name(s: &str) -> Option<ParamType> {
        Self::ALL.into_iter().find(|t| t.name() == s)
    }

    /// Size in bytes.
    pub fn size(self) -> usize {
        match self {
            ParamType::Unsigned8 | ParamType::Integer8 => 1,
            ParamType::Unsigned16 | ParamType::Integer16 => 2,
            ParamType::Unsigned32 | ParamType::Integer32 => 4,
        }
    }

    fn signed(self) -> bool {
        matches!(
            self,
            ParamType::Integer8 | ParamType::Integer16 | ParamType::Integer32
        )
    }

    /// The smallest and largest value of the type.
    pub fn limits(self) -> (i64, i64) {
        let bits = 8 * self.size() as u32;
        if self.signed() {
            (-(1i64 << (bits - 1)), (1i64 << (bits - 1)) - 1)
        } else {
            (0, (1i64 << bits) - 1)
        }
    }

    fn decode(self, b: &[u8]) -> i64 {
        let raw = b.iter().fold(0u64, |acc, x| (acc << 8) | u64::from(*x));
        let bits = 8 * self.size() as u32;
        if self.signed() && raw >> (bits - 1) & 1 == 1 {
            raw as i64 - (1i64 << bits)
        } else {
            raw as i64
        }
    }
}

/// Where a field's value lies in the record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FieldKind {
    /// A whole integer at the field's byte offset.
    Value(ParamType),
    /// `length` bits from bit `offset` (0 = least significant) of the byte at the field's byte
    /// offset: GSDML `Bit` (one bit) or `BitArea`. Kept inside one byte.
    Bits { offset: u8, length: u8 },
}

/// Allowed values as ranges (inclusive); empty: every value of the type. GSDML writes them as
/// `AllowedValues="0..255"` or `"1 2 3"` or a mix (`"0..3 7"`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Allowed(pub Vec<(i64, i64)>);

impl Allowed {
    /// Parse the GSDML form: items separated by blanks, each `N` or `N..M` (decimal, `0x` hex).
    pub fn parse(s: &str) -> Result<Allowed, String> {
        let num = |t: &str| parse_int(t).ok_or_else(|| format!("'{t}' is not a number"));
        let mut v = Vec::new();
        for item in s.split_whitespace() {
            let (lo, hi) = match item.split_once("..") {
                Some((a, b)) => (num(a)?, num(b)?),
                None => (num(item)?, num(item)?),
            };
            if lo > hi {
                return Err(format!("range '{item}' is empty"));
            }
            v.push((lo, hi));
        }
        if v.is_empty() {
            return Err("no values given".into());
        }
        Ok(Allowed(v))
    }

    pub fn contains(&self, x: i64) -> bool {
        self.0.is_empty() || self.0.iter().any(|(lo, hi)| (*lo..=*hi).contains(&x))
    }

    /// The GSDML form ("1..100", "1 2 3"); empty when every value is allowed.
    pub fn to_gsdml(&self) -> String {
        let item = |(lo, hi): &(i64, i64)| {
            if lo == hi {
                lo.to_string()
            } else {
                format!("{lo}..{hi}")
            }
        };
        self.0.iter().map(item).collect::<Vec<_>>().join(" ")
    }
}

/// Decimal or `0x` hex, with an optional minus sign.
pub fn parse_int(s: &str) -> Option<i64> {
    let s = s.trim();
    let (neg, s) = s.strip_prefix('-').map_or((false, s), |r| (true, r));
    let v = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => i64::from_str_radix(h, 16).ok()?,
        None => s.parse::<i64>().ok()?,
    };
    Some(if neg { -v } else { v })
}

/// One field of a parameter record.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ParamField {
    pub name: String,
    pub byte_offset: u16,
    pub kind: FieldKind,
    pub default: i64,
    pub allowed: Allowed,
}

impl ParamField {
    /// The bytes the field occupies.
    pub fn span(&self) -> std::ops::Range<usize> {
        let start = usize::from(self.byte_offset);
        match self.kind {
            FieldKind::Value(t) => start..start + t.size(),
            FieldKind::Bits { .. } => start..start + 1,
        }
    }

    /// The smallest and largest value the field can hold.
    pub fn limits(&self) -> (i64, i64) {
        match self.kind {
            FieldKind::Value(t) => t.limits(),
            FieldKind::Bits { length, .. } => (0, (1i64 << length) - 1),
        }
    }

    /// The field's value in `data` (`None`: the record is too short for it).
    pub fn value_in(&self, data: &[u8]) -> Option<i64> {
        let b = data.get(self.span())?;
        Some(match self.kind {
            FieldKind::Value(t) => t.decode(b),
            FieldKind::Bits { offset, length } => i64::from((b[0] >> offset) & mask(length)),
        })
    }

    fn put(&self, v: i64, data: &mut [u8]) {
        let span = self.span();
        match self.kind {
            FieldKind::Value(t) => {
                let bytes = v.to_be_bytes();
                data[span].copy_from_slice(&bytes[8 - t.size()..]);
            }
            FieldKind::Bits { offset, length } => {
                let m = mask(length) << offset;
                let b = &mut data[span.start];
                *b = (*b & !m) | (((v as u8) << offset) & m);
            }
        }
    }

    /// The bits of each byte the field occupies, for overlap checks.
    fn bit_mask(&self) -> u8 {
        match self.kind {
            FieldKind::Value(_) => 0xFF,
            FieldKind::Bits { offset, length } => mask(length) << offset,
        }
    }
}

fn mask(length: u8) -> u8 {
    ((1u16 << length) - 1) as u8
}

/// A parameter record: its index, exact length and fields. Bytes no field covers are written
/// as zero by an engineering tool and are not checked.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ParamRecord {
    pub index: u16,
    pub length: u16,
    pub name: String,
    pub fields: Vec<ParamField>,
}

/// Largest declared record: far above what a parameter record needs, and small enough that a
/// controller writes it in one request.
pub const MAX_PARAM_RECORD_LEN: u16 = 1024;

impl ParamRecord {
    /// Check the declaration itself; the message says which field is wrong and why.
    pub fn validate(&self) -> Result<(), String> {
        if self.index > crate::wire::pnio::record::index::USER_MAX {
            return Err(format!(
                "Index {:#06x} is not a user record index (0..0x7FFF)",
                self.index
            ));
        }
        if !(1..=MAX_PARAM_RECORD_LEN).contains(&self.length) {
            return Err(format!(
                "Length {} is outside 1..{MAX_PARAM_RECORD_LEN}",
                self.length
            ));
        }
        let mut used = vec![0u8; usize::from(self.length)];
        for f in &self.fields {
            let what = format!("Parameter '{}'", f.name);
            if let FieldKind::Bits { offset, length } = f.kind {
                if length == 0 || u16::from(offset) + u16::from(length) > 8 {
                    return Err(format!(
                        "{what}: BitOffset {offset} and BitLength {length} must stay inside \
                         one byte (BitLength 1.., BitOffset + BitLength <= 8)"
                    ));
                }
            }
            let span = f.span();
            if span.end > used.len() {
                return Err(format!(
                    "{what}: bytes {}..{} lie outside the record's Length {}",
                    span.start, span.end, self.length
                ));
            }
            let m = f.bit_mask();
            if used[span.clone()].iter().any(|u| u & m != 0) {
                return Err(format!("{what} overlaps another parameter"));
            }
            used[span].iter_mut().for_each(|u| *u |= m);
            let (lo, hi) = f.limits();
            if let Some((a, b)) = f.allowed.0.iter().find(|(a, b)| *a < lo || *b > hi) {
                return Err(format!(
                    "{what}: allowed values {a}..{b} do not fit its type ({lo}..{hi})"
                ));
            }
            if !(lo..=hi).contains(&f.default) || !f.allowed.contains(f.default) {
                return Err(format!(
                    "{what}: Default {} is not one of its allowed values",
                    f.default
                ));
            }
        }
        Ok(())
    }

    /// The record with every field at its default (what a controller writes at start-up).
    pub fn defaults(&self) -> Vec<u8> {
        let mut d = vec![0u8; usize::from(self.length)];
        for f in &self.fields {
            f.put(f.default, &mut d);
        }
        d
    }

    /// Check a Write of this record: the exact length, then every field's value.
    pub fn check(&self, data: &[u8]) -> Result<(), PnioStatus> {
        if data.len() != usize::from(self.length) {
            return Err(rw_error::write(rw_error::ACC_WRITE_LENGTH_ERROR, 0));
        }
        for f in &self.fields {
            match f.value_in(data) {
                Some(v) if f.allowed.contains(v) => {}
                _ => return Err(rw_error::write(rw_error::ACC_INVALID_PARAMETER, 0)),
            }
        }
        Ok(())
    }
}

/// The declared parameter records of a device, by slot, subslot and index.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ParamRecords(BTreeMap<(u16, u16, u16), ParamRecord>);

impl ParamRecords {
    pub fn insert(&mut self, slot: u16, subslot: u16, rec: ParamRecord) {
        self.0.insert((slot, subslot, rec.index), rec);
    }

    pub fn get(&self, slot: u16, subslot: u16, index: u16) -> Option<&ParamRecord> {
        self.0.get(&(slot, subslot, index))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Check a Write: records nobody declared pass unchecked (the application decides).
    pub fn check(&self, a: &RecordAddress, data: &[u8]) -> Result<(), PnioStatus> {
        match self.get(a.slot, a.subslot, a.index) {
            Some(rec) => rec.check(data),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
#[path = "params_tests.rs"]
mod tests;

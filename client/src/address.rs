//! The address scheme of spec 4.1: `I`, `Q`, `M` and `DB` forms, typed values.
//!
//! # Which area an address reaches (docs/decisions.md, "I/Q model")
//!
//! Client addresses are seen from the PLC's side, as a PLC programmer addresses a device:
//!
//! | client address | meaning | service area (`GET /api/io`) | client may write |
//! |---|---|---|---|
//! | `I…` | the PLC's inputs (device to controller) | `outputHex` | yes (`POST /api/io`) |
//! | `M…` | "internal memory mapped onto the input side" | `outputHex` (alias of `I`) | yes |
//! | `DB1.DB…` | data block 1 | `outputHex` (alias of `I`) | yes |
//! | `Q…` | the PLC's outputs (controller to device) | `inputHex` | no: [`CallResult::NotSupported`] |
//!
//! `DB` numbers above 1 give [`CallResult::NotFound`] on access (they parse).
//!
//! # Forms
//!
//! `I0.0`, `IB0`, `IW2`, `ID4` (likewise `Q`, `M`), `DB1.DBX0.0`, `DB1.DBB2`, `DB1.DBW0`,
//! `DB1.DBD4`. Offsets are decimal byte offsets; words and double words are big-endian; no
//! alignment (`IW3` is valid). Letters may be lower case; surrounding white space is ignored.

use std::fmt;
use std::str::FromStr;

use crate::error::{CallResult, Error};

/// Area of an address as written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Area {
    I,
    Q,
    M,
    /// Data block with its number.
    Db(u32),
}

/// Width of an access.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Access {
    /// One bit (0..=7) of a byte.
    Bit(u8),
    Byte,
    Word,
    DWord,
}

impl Access {
    /// Bytes covered (a bit access covers its byte).
    pub fn len(self) -> usize {
        match self {
            Access::Bit(_) | Access::Byte => 1,
            Access::Word => 2,
            Access::DWord => 4,
        }
    }

    /// Always false (an access covers at least one byte); for clippy's `len` convention.
    pub fn is_empty(self) -> bool {
        false
    }
}

/// Which of the service's two areas an address reaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Side {
    /// `outputHex` (device to controller), written by `POST /api/io`: client `I`, `M`, `DB1`.
    Writable,
    /// `inputHex` (controller to device), filled by the controller: client `Q`.
    ReadOnly,
}

/// A parsed process-data address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Address {
    pub area: Area,
    /// Byte offset.
    pub offset: u32,
    pub access: Access,
}

impl Address {
    pub fn new(area: Area, offset: u32, access: Access) -> Result<Self, Error> {
        if let Access::Bit(b) = access {
            if b > 7 {
                return Err(Error::invalid(format!("bit number {b} > 7")));
            }
        }
        if area == Area::Db(0) {
            return Err(Error::invalid(
                "DB0 does not exist (data blocks start at 1)",
            ));
        }
        Ok(Address {
            area,
            offset,
            access,
        })
    }

    /// The service area this address reaches: [`CallResult::NotFound`] for `DB` > 1.
    pub fn side(&self) -> Result<Side, Error> {
        match self.area {
            Area::I | Area::M | Area::Db(1) => Ok(Side::Writable),
            Area::Q => Ok(Side::ReadOnly),
            Area::Db(n) => Err(Error::new(
                CallResult::NotFound,
                format!("DB{n} not found: only DB1 exists in service mode"),
            )),
        }
    }

    /// Check that the address may be written: `Q` gives [`CallResult::NotSupported`], `DB` > 1
    /// [`CallResult::NotFound`].
    pub fn check_writable(&self) -> Result<(), Error> {
        match self.side()? {
            Side::Writable => Ok(()),
            Side::ReadOnly => Err(Error::not_supported(format!(
                "{self} is a Q address (controller to device): read-only for clients"
            ))),
        }
    }

    /// Bytes covered by the access.
    pub fn len(&self) -> usize {
        self.access.len()
    }

    /// Always false; for clippy's `len` convention.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The value type an address form reads by default: bit -> bool, B -> u8, W -> u16, D -> u32.
    pub fn default_type(&self) -> ValueType {
        match self.access {
            Access::Bit(_) => ValueType::Bool,
            Access::Byte => ValueType::U8,
            Access::Word => ValueType::U16,
            Access::DWord => ValueType::U32,
        }
    }

    /// Check that `ty` can be read or written at this address: bool needs a bit form, 8/16/32-bit
    /// types need the B/W/D form of their width, 64-bit types take any byte form (B, W or D) as
    /// the start offset of 8 bytes (the spec has no 8-byte form).
    pub fn check_type(&self, ty: ValueType) -> Result<(), Error> {
        let ok = matches!(
            (ty.len(), self.access),
            (0, Access::Bit(_))
                | (1, Access::Byte)
                | (2, Access::Word)
                | (4, Access::DWord)
                | (8, Access::Byte | Access::Word | Access::DWord)
        );
        if ok {
            Ok(())
        } else {
            let want = match ty.len() {
                0 => "a bit address (e.g. I0.0)",
                1 => "a byte address (e.g. IB0)",
                2 => "a word address (e.g. IW0)",
                4 => "a double-word address (e.g. ID0)",
                _ => "a byte-form start address (e.g. IB0, IW0 or ID0)",
            };
            Err(Error::invalid(format!(
                "{} needs {want}, got {self}",
                ty.as_str()
            )))
        }
    }
}

impl fmt::Display for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.area {
            Area::Db(n) => {
                write!(f, "DB{n}.DB")?;
                match self.access {
                    Access::Bit(b) => write!(f, "X{}.{b}", self.offset),
                    Access::Byte => write!(f, "B{}", self.offset),
                    Access::Word => write!(f, "W{}", self.offset),
                    Access::DWord => write!(f, "D{}", self.offset),
                }
            }
            a => {
                let l = match a {
                    Area::I => 'I',
                    Area::Q => 'Q',
                    _ => 'M',
                };
                match self.access {
                    Access::Bit(b) => write!(f, "{l}{}.{b}", self.offset),
                    Access::Byte => write!(f, "{l}B{}", self.offset),
                    Access::Word => write!(f, "{l}W{}", self.offset),
                    Access::DWord => write!(f, "{l}D{}", self.offset),
                }
            }
        }
    }
}

fn parse_num(s: &str, what: &str, whole: &str) -> Result<u32, Error> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(Error::invalid(format!(
            "invalid address {whole:?}: {what} must be a decimal number, got {s:?}"
        )));
    }
    s.parse::<u32>().map_err(|_| {
        Error::invalid(format!(
            "invalid address {whole:?}: {what} {s} is too large"
        ))
    })
}

fn parse_bit(s: &str, whole: &str) -> Result<u8, Error> {
    let b = parse_num(s, "bit number", whole)?;
    if b > 7 {
        return Err(Error::invalid(format!(
            "invalid address {whole:?}: bit number {b} > 7"
        )));
    }
    Ok(b as u8)
}

/// `{byte}.{bit}` / `B{n}` / `W{n}` / `D{n}` after the area letter(s). `bit_letter` is `X` for
/// the DB form (`DBX0.0`) and empty for I/Q/M (`I0.0`).
fn parse_rest(rest: &str, whole: &str, bit_letter: Option<char>) -> Result<(u32, Access), Error> {
    let mut chars = rest.chars();
    let first = chars
        .next()
        .ok_or_else(|| Error::invalid(format!("invalid address {whole:?}: offset missing")))?;
    let tail = chars.as_str();
    let sized = |access: Access| -> Result<(u32, Access), Error> {
        if tail.contains('.') {
            return Err(Error::invalid(format!(
                "invalid address {whole:?}: a byte/word/double-word address has no bit number"
            )));
        }
        Ok((parse_num(tail, "byte offset", whole)?, access))
    };
    match first {
        'B' => sized(Access::Byte),
        'W' => sized(Access::Word),
        'D' => sized(Access::DWord),
        c if Some(c) == bit_letter || (bit_letter.is_none() && c.is_ascii_digit()) => {
            let bitpart = if bit_letter.is_some() { tail } else { rest };
            let (byte, bit) = bitpart.split_once('.').ok_or_else(|| {
                Error::invalid(format!(
                    "invalid address {whole:?}: a bit address needs BYTE.BIT (e.g. I0.3)"
                ))
            })?;
            let byte = parse_num(byte, "byte offset", whole)?;
            let bit = parse_bit(bit, whole)?;
            Ok((byte, Access::Bit(bit)))
        }
        c => Err(Error::invalid(format!(
            "invalid address {whole:?}: unexpected {c:?} (expected {}B, W, D or a digit)",
            if bit_letter.is_some() { "X, " } else { "" }
        ))),
    }
}

impl FromStr for Address {
    type Err = Error;

    /// Parse an address; any bad form gives [`CallResult::InvalidArgument`].
    fn from_str(s: &str) -> Result<Self, Error> {
        let whole = s;
        let up = s.trim().to_ascii_uppercase();
        if up.is_empty() {
            return Err(Error::invalid("empty address"));
        }
        if !up.is_ascii() {
            return Err(Error::invalid(format!(
                "invalid address {whole:?}: non-ASCII characters"
            )));
        }
        if let Some(db) = up.strip_prefix("DB") {
            let (num, rest) = db.split_once('.').ok_or_else(|| {
                Error::invalid(format!(
                    "invalid address {whole:?}: expected DBn.DBX/DBB/DBW/DBD (e.g. DB1.DBW0)"
                ))
            })?;
            let n = parse_num(num, "data block number", whole)?;
            let rest = rest.strip_prefix("DB").ok_or_else(|| {
                Error::invalid(format!(
                    "invalid address {whole:?}: expected DBX, DBB, DBW or DBD after DB{n}."
                ))
            })?;
            let (offset, access) = parse_rest(rest, whole, Some('X'))?;
            return Address::new(Area::Db(n), offset, access);
        }
        let mut chars = up.chars();
        let area = match chars.next() {
            Some('I') => Area::I,
            Some('Q') => Area::Q,
            Some('M') => Area::M,
            Some(c) => {
                return Err(Error::invalid(format!(
                    "invalid address {whole:?}: unknown area {c:?} (expected I, Q, M or DB)"
                )))
            }
            None => return Err(Error::invalid("empty address")),
        };
        let (offset, access) = parse_rest(chars.as_str(), whole, None)?;
        Address::new(area, offset, access)
    }
}

/// Value types for typed reads and writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ValueType {
    Bool,
    U8,
    I8,
    U16,
    I16,
    U32,
    I32,
    F32,
    U64,
    I64,
    F64,
}

impl ValueType {
    pub const ALL: [ValueType; 11] = [
        ValueType::Bool,
        ValueType::U8,
        ValueType::I8,
        ValueType::U16,
        ValueType::I16,
        ValueType::U32,
        ValueType::I32,
        ValueType::F32,
        ValueType::U64,
        ValueType::I64,
        ValueType::F64,
    ];

    /// Bytes of the encoding (0 for bool: one bit).
    pub fn len(self) -> usize {
        match self {
            ValueType::Bool => 0,
            ValueType::U8 | ValueType::I8 => 1,
            ValueType::U16 | ValueType::I16 => 2,
            ValueType::U32 | ValueType::I32 | ValueType::F32 => 4,
            ValueType::U64 | ValueType::I64 | ValueType::F64 => 8,
        }
    }

    /// True for bool (encoded in a single bit, no whole byte).
    pub fn is_empty(self) -> bool {
        self.len() == 0
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ValueType::Bool => "bool",
            ValueType::U8 => "u8",
            ValueType::I8 => "i8",
            ValueType::U16 => "u16",
            ValueType::I16 => "i16",
            ValueType::U32 => "u32",
            ValueType::I32 => "i32",
            ValueType::F32 => "f32",
            ValueType::U64 => "u64",
            ValueType::I64 => "i64",
            ValueType::F64 => "f64",
        }
    }

    /// Decode `bytes` (exactly `len()` bytes, big-endian) or the bit for bool.
    pub fn decode(self, bytes: &[u8], bit: u8) -> Result<Value, Error> {
        let need = self.len().max(1);
        if bytes.len() != need {
            return Err(Error::new(
                CallResult::LengthMismatch,
                format!("{} needs {need} bytes, got {}", self.as_str(), bytes.len()),
            ));
        }
        let a2 = |b: &[u8]| [b[0], b[1]];
        let a4 = |b: &[u8]| [b[0], b[1], b[2], b[3]];
        let a8 = |b: &[u8]| [b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]];
        Ok(match self {
            ValueType::Bool => Value::Bool(bytes[0] & (1u8 << (bit & 7)) != 0),
            ValueType::U8 => Value::U8(bytes[0]),
            ValueType::I8 => Value::I8(bytes[0] as i8),
            ValueType::U16 => Value::U16(u16::from_be_bytes(a2(bytes))),
            ValueType::I16 => Value::I16(i16::from_be_bytes(a2(bytes))),
            ValueType::U32 => Value::U32(u32::from_be_bytes(a4(bytes))),
            ValueType::I32 => Value::I32(i32::from_be_bytes(a4(bytes))),
            ValueType::F32 => Value::F32(f32::from_be_bytes(a4(bytes))),
            ValueType::U64 => Value::U64(u64::from_be_bytes(a8(bytes))),
            ValueType::I64 => Value::I64(i64::from_be_bytes(a8(bytes))),
            ValueType::F64 => Value::F64(f64::from_be_bytes(a8(bytes))),
        })
    }

    /// Parse a value of this type from text: bool `1/0/true/false/on/off`; integers decimal or
    /// `0x` hex (negative only for signed types); floats in Rust syntax.
    pub fn parse_value(self, s: &str) -> Result<Value, Error> {
        let t = s.trim();
        let bad = || Error::invalid(format!("{t:?} is not a valid {}", self.as_str()));
        fn int(t: &str) -> Option<i128> {
            let (neg, digits) = match t.strip_prefix('-') {
                Some(d) => (true, d),
                None => (false, t.strip_prefix('+').unwrap_or(t)),
            };
            let v = if let Some(h) = digits
                .strip_prefix("0x")
                .or_else(|| digits.strip_prefix("0X"))
            {
                i128::from_str_radix(h, 16).ok()?
            } else {
                if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                    return None;
                }
                digits.parse::<i128>().ok()?
            };
            Some(if neg { -v } else { v })
        }
        Ok(match self {
            ValueType::Bool => match t.to_ascii_lowercase().as_str() {
                "1" | "true" | "on" => Value::Bool(true),
                "0" | "false" | "off" => Value::Bool(false),
                _ => return Err(bad()),
            },
            ValueType::U8 => Value::U8(int(t).and_then(|v| v.try_into().ok()).ok_or_else(bad)?),
            ValueType::I8 => Value::I8(int(t).and_then(|v| v.try_into().ok()).ok_or_else(bad)?),
            ValueType::U16 => Value::U16(int(t).and_then(|v| v.try_into().ok()).ok_or_else(bad)?),
            ValueType::I16 => Value::I16(int(t).and_then(|v| v.try_into().ok()).ok_or_else(bad)?),
            ValueType::U32 => Value::U32(int(t).and_then(|v| v.try_into().ok()).ok_or_else(bad)?),
            ValueType::I32 => Value::I32(int(t).and_then(|v| v.try_into().ok()).ok_or_else(bad)?),
            ValueType::U64 => Value::U64(int(t).and_then(|v| v.try_into().ok()).ok_or_else(bad)?),
            ValueType::I64 => Value::I64(int(t).and_then(|v| v.try_into().ok()).ok_or_else(bad)?),
            ValueType::F32 => Value::F32(t.parse::<f32>().map_err(|_| bad())?),
            ValueType::F64 => Value::F64(t.parse::<f64>().map_err(|_| bad())?),
        })
    }
}

impl fmt::Display for ValueType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ValueType {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        let l = s.trim().to_ascii_lowercase();
        ValueType::ALL
            .into_iter()
            .find(|t| t.as_str() == l)
            .ok_or_else(|| {
                Error::invalid(format!(
                    "unknown type {s:?} (bool, u8, i8, u16, i16, u32, i32, f32, u64, i64, f64)"
                ))
            })
    }
}

/// A typed value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value {
    Bool(bool),
    U8(u8),
    I8(i8),
    U16(u16),
    I16(i16),
    U32(u32),
    I32(i32),
    F32(f32),
    U64(u64),
    I64(i64),
    F64(f64),
}

impl Value {
    pub fn value_type(&self) -> ValueType {
        match self {
            Value::Bool(_) => ValueType::Bool,
            Value::U8(_) => ValueType::U8,
            Value::I8(_) => ValueType::I8,
            Value::U16(_) => ValueType::U16,
            Value::I16(_) => ValueType::I16,
            Value::U32(_) => ValueType::U32,
            Value::I32(_) => ValueType::I32,
            Value::F32(_) => ValueType::F32,
            Value::U64(_) => ValueType::U64,
            Value::I64(_) => ValueType::I64,
            Value::F64(_) => ValueType::F64,
        }
    }

    /// Big-endian bytes (bool: empty; it is written as a bit).
    pub fn to_be_bytes(&self) -> Vec<u8> {
        match *self {
            Value::Bool(_) => Vec::new(),
            Value::U8(v) => vec![v],
            Value::I8(v) => vec![v as u8],
            Value::U16(v) => v.to_be_bytes().to_vec(),
            Value::I16(v) => v.to_be_bytes().to_vec(),
            Value::U32(v) => v.to_be_bytes().to_vec(),
            Value::I32(v) => v.to_be_bytes().to_vec(),
            Value::F32(v) => v.to_be_bytes().to_vec(),
            Value::U64(v) => v.to_be_bytes().to_vec(),
            Value::I64(v) => v.to_be_bytes().to_vec(),
            Value::F64(v) => v.to_be_bytes().to_vec(),
        }
    }

    /// As JSON (numbers; bool as true/false; non-finite floats as strings).
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::json;
        match *self {
            Value::Bool(v) => json!(v),
            Value::U8(v) => json!(v),
            Value::I8(v) => json!(v),
            Value::U16(v) => json!(v),
            Value::I16(v) => json!(v),
            Value::U32(v) => json!(v),
            Value::I32(v) => json!(v),
            Value::U64(v) => json!(v),
            Value::I64(v) => json!(v),
            Value::F32(v) if v.is_finite() => json!(v),
            Value::F64(v) if v.is_finite() => json!(v),
            Value::F32(v) => json!(v.to_string()),
            Value::F64(v) => json!(v.to_string()),
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Bool(v) => write!(f, "{}", u8::from(*v)),
            Value::U8(v) => write!(f, "{v}"),
            Value::I8(v) => write!(f, "{v}"),
            Value::U16(v) => write!(f, "{v}"),
            Value::I16(v) => write!(f, "{v}"),
            Value::U32(v) => write!(f, "{v}"),
            Value::I32(v) => write!(f, "{v}"),
            Value::F32(v) => write!(f, "{v}"),
            Value::U64(v) => write!(f, "{v}"),
            Value::I64(v) => write!(f, "{v}"),
            Value::F64(v) => write!(f, "{v}"),
        }
    }
}

/// Rust types usable with the generic `read::<T>` / `write::<T>` of the process-data handle.
pub trait PlcValue: Sized + Copy {
    const TYPE: ValueType;
    fn into_value(self) -> Value;
    fn from_value(v: Value) -> Option<Self>;
}

macro_rules! plc_value {
    ($t:ty, $vt:ident) => {
        impl PlcValue for $t {
            const TYPE: ValueType = ValueType::$vt;
            fn into_value(self) -> Value {
                Value::$vt(self)
            }
            fn from_value(v: Value) -> Option<Self> {
                match v {
                    Value::$vt(x) => Some(x),
                    _ => None,
                }
            }
        }
    };
}
plc_value!(bool, Bool);
plc_value!(u8, U8);
plc_value!(i8, I8);
plc_value!(u16, U16);
plc_value!(i16, I16);
plc_value!(u32, U32);
plc_value!(i32, I32);
plc_value!(f32, F32);
plc_value!(u64, U64);
plc_value!(i64, I64);
plc_value!(f64, F64);

#[cfg(test)]
mod tests;

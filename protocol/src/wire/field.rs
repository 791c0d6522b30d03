//! Field declarations and bounds-checked big-endian accessors shared by the wire modules.
//!
//! `Field` is a byte range, `Rest` an open range from an offset to the end of the buffer. The
//! `read_*`/`write_*` helpers never panic: reads out of bounds return [`Error::Truncated`].
//! The `get_*` helpers are for the getters of a view, which exist only once its `check_len`
//! passed: the fixed fields are then in the buffer, so they index like a slice does (a short
//! buffer there is a bug in the view's length check, and panics rather than reading 0).

use super::{Error, Result};

pub type Field = core::ops::Range<usize>;
pub type Rest = core::ops::RangeFrom<usize>;

#[inline]
pub fn slice(buf: &[u8], f: Field) -> Result<&[u8]> {
    buf.get(f).ok_or(Error::Truncated)
}

#[inline]
pub fn read_u8(buf: &[u8], at: usize) -> Result<u8> {
    buf.get(at).copied().ok_or(Error::Truncated)
}

#[inline]
pub fn read_u16(buf: &[u8], at: usize) -> Result<u16> {
    let b = buf
        .get(at..at.checked_add(2).ok_or(Error::Truncated)?)
        .ok_or(Error::Truncated)?;
    Ok(u16::from_be_bytes([b[0], b[1]]))
}

#[inline]
pub fn read_u32(buf: &[u8], at: usize) -> Result<u32> {
    let b = buf
        .get(at..at.checked_add(4).ok_or(Error::Truncated)?)
        .ok_or(Error::Truncated)?;
    Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

/// A byte of a length-checked buffer (see the module documentation).
#[inline]
pub fn get_u8(buf: &[u8], at: usize) -> u8 {
    buf[at]
}

/// A big-endian u16 of a length-checked buffer (see the module documentation).
#[inline]
pub fn get_u16(buf: &[u8], at: usize) -> u16 {
    u16::from_be_bytes(get_array(buf, at))
}

/// A big-endian u32 of a length-checked buffer (see the module documentation).
#[inline]
pub fn get_u32(buf: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(get_array(buf, at))
}

/// `N` bytes at `at` of a length-checked buffer (see the module documentation).
#[inline]
pub fn get_array<const N: usize>(buf: &[u8], at: usize) -> [u8; N] {
    let mut a = [0u8; N];
    a.copy_from_slice(&buf[at..at + N]);
    a
}

#[inline]
pub fn write_u8(buf: &mut [u8], at: usize, v: u8) -> Result<()> {
    *buf.get_mut(at).ok_or(Error::Truncated)? = v;
    Ok(())
}

#[inline]
pub fn write_u16(buf: &mut [u8], at: usize, v: u16) -> Result<()> {
    buf.get_mut(at..at.checked_add(2).ok_or(Error::Truncated)?)
        .ok_or(Error::Truncated)?
        .copy_from_slice(&v.to_be_bytes());
    Ok(())
}

#[inline]
pub fn write_u32(buf: &mut [u8], at: usize, v: u32) -> Result<()> {
    buf.get_mut(at..at.checked_add(4).ok_or(Error::Truncated)?)
        .ok_or(Error::Truncated)?
        .copy_from_slice(&v.to_be_bytes());
    Ok(())
}

/// A cursor for sequential big-endian reads from untrusted bytes (used by the variable-length
/// formats: DCP blocks, LLDP TLVs, PNIO blocks). Every read is checked.
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }
    pub fn pos(&self) -> usize {
        self.pos
    }
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }
    pub fn is_empty(&self) -> bool {
        self.remaining() == 0
    }
    pub fn rest(&self) -> &'a [u8] {
        &self.buf[self.pos..]
    }
    pub fn bytes(&mut self, n: usize) -> Result<&'a [u8]> {
        let end = self.pos.checked_add(n).ok_or(Error::Truncated)?;
        let b = self.buf.get(self.pos..end).ok_or(Error::Truncated)?;
        self.pos = end;
        Ok(b)
    }
    pub fn skip(&mut self, n: usize) -> Result<()> {
        self.bytes(n).map(|_| ())
    }
    pub fn u8(&mut self) -> Result<u8> {
        Ok(self.bytes(1)?[0])
    }
    pub fn u16(&mut self) -> Result<u16> {
        let b = self.bytes(2)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }
    pub fn u32(&mut self) -> Result<u32> {
        let b = self.bytes(4)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
    pub fn array<const N: usize>(&mut self) -> Result<[u8; N]> {
        let b = self.bytes(N)?;
        let mut a = [0u8; N];
        a.copy_from_slice(b);
        Ok(a)
    }
}

/// Sequential big-endian writer into a `Vec<u8>` (emit side of the variable-length formats).
#[derive(Debug, Default, Clone)]
pub struct Writer {
    pub buf: Vec<u8>,
}

impl Writer {
    pub fn new() -> Self {
        Writer { buf: Vec::new() }
    }
    pub fn with_capacity(n: usize) -> Self {
        Writer {
            buf: Vec::with_capacity(n),
        }
    }
    pub fn len(&self) -> usize {
        self.buf.len()
    }
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }
    pub fn u8(&mut self, v: u8) -> &mut Self {
        self.buf.push(v);
        self
    }
    pub fn u16(&mut self, v: u16) -> &mut Self {
        self.buf.extend_from_slice(&v.to_be_bytes());
        self
    }
    pub fn u32(&mut self, v: u32) -> &mut Self {
        self.buf.extend_from_slice(&v.to_be_bytes());
        self
    }
    pub fn bytes(&mut self, b: &[u8]) -> &mut Self {
        self.buf.extend_from_slice(b);
        self
    }
    pub fn zeros(&mut self, n: usize) -> &mut Self {
        self.buf.resize(self.buf.len() + n, 0);
        self
    }
    /// Overwrite a big-endian u16 at an earlier position (for back-patched length fields).
    pub fn patch_u16(&mut self, at: usize, v: u16) {
        self.buf[at..at + 2].copy_from_slice(&v.to_be_bytes());
    }
    /// Drop everything after the first `len` bytes (undo a partly written value).
    pub fn truncate(&mut self, len: usize) {
        self.buf.truncate(len);
    }
    pub fn into_inner(self) -> Vec<u8> {
        self.buf
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_are_checked() {
        let b = [1u8, 2, 3];
        assert_eq!(read_u16(&b, 1), Ok(0x0203));
        assert_eq!(read_u16(&b, 2), Err(Error::Truncated));
        assert_eq!(read_u32(&b, usize::MAX - 1), Err(Error::Truncated));
        let mut r = Reader::new(&b);
        assert_eq!(r.u8(), Ok(1));
        assert_eq!(r.u32(), Err(Error::Truncated));
        assert_eq!(r.u16(), Ok(0x0203));
        assert!(r.is_empty());
        assert_eq!(r.bytes(usize::MAX), Err(Error::Truncated));
    }
}

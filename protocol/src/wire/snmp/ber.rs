//! The BER subset SNMP uses (X.690): single-byte tags, definite lengths (short form, or long
//! form with one or two length octets), INTEGER and OBJECT IDENTIFIER contents.
//!
//! Why two length octets at most: an SNMP message over UDP is below 64 KiB, and every agent
//! this crate talks to (net-snmp, p-net's lwIP agent) encodes lengths in at most two. Readers
//! never read past their slice; an OID is at most 128 arcs from at most 256 content bytes
//! (bounded allocation on any input).

use crate::wire::field::{Reader, Writer};
use crate::wire::{Error, Result};

/// Universal and SNMP application / context tags.
pub mod tag {
    pub const INTEGER: u8 = 0x02;
    pub const OCTET_STRING: u8 = 0x04;
    pub const NULL: u8 = 0x05;
    pub const OID: u8 = 0x06;
    pub const SEQUENCE: u8 = 0x30;
    /// RFC 2578 TimeTicks (APPLICATION 3).
    pub const TIMETICKS: u8 = 0x43;
    /// RFC 3416 exceptions in a response's VarBind (context 0..2, primitive).
    pub const NO_SUCH_OBJECT: u8 = 0x80;
    pub const NO_SUCH_INSTANCE: u8 = 0x81;
    pub const END_OF_MIB_VIEW: u8 = 0x82;
}

/// Longest content a length field here encodes (two length octets).
pub const MAX_LEN: usize = 0xffff;
/// Most arcs an OBJECT IDENTIFIER may have (RFC 2578 §7.1.3 allows 128).
pub const MAX_OID_ARCS: usize = 128;
/// Most content bytes of an OBJECT IDENTIFIER read.
const MAX_OID_BYTES: usize = 256;

/// One decoded TLV: tag and content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tlv<'a> {
    pub tag: u8,
    pub content: &'a [u8],
}

/// Read one TLV from the front of `r`.
pub fn read_tlv<'a>(r: &mut Reader<'a>) -> Result<Tlv<'a>> {
    let t = r.u8()?;
    if t & 0x1f == 0x1f {
        return Err(Error::Unsupported("BER multi-byte tag"));
    }
    let l0 = r.u8()?;
    let len = if l0 < 0x80 {
        usize::from(l0)
    } else {
        let n = usize::from(l0 & 0x7f);
        if n == 0 || n > 2 {
            return Err(Error::Unsupported("BER length of more than two octets"));
        }
        r.bytes(n)?
            .iter()
            .fold(0usize, |a, &x| (a << 8) | usize::from(x))
    };
    Ok(Tlv {
        tag: t,
        content: r.bytes(len)?,
    })
}

/// Read one TLV and require its tag.
pub fn expect<'a>(r: &mut Reader<'a>, t: u8, what: &'static str) -> Result<&'a [u8]> {
    let tlv = read_tlv(r)?;
    if tlv.tag != t {
        return Err(Error::Malformed(what));
    }
    Ok(tlv.content)
}

/// Decode INTEGER content (two's complement, 1..=8 octets).
pub fn read_int(c: &[u8]) -> Result<i64> {
    let Some(&first) = c.first() else {
        return Err(Error::Malformed("empty BER INTEGER"));
    };
    if c.len() > 8 {
        return Err(Error::Unsupported("BER INTEGER above 64 bits"));
    }
    let init: i64 = if first & 0x80 != 0 { -1 } else { 0 };
    Ok(c.iter().fold(init, |v, &x| (v << 8) | i64::from(x)))
}

/// Decode OBJECT IDENTIFIER content (arcs up to 2^32-1, at most [`MAX_OID_ARCS`]).
pub fn read_oid(c: &[u8]) -> Result<Vec<u32>> {
    if c.is_empty() || c.len() > MAX_OID_BYTES {
        return Err(Error::Malformed("BER OID length"));
    }
    let mut arcs = Vec::new();
    let mut v: u64 = 0;
    for (i, &x) in c.iter().enumerate() {
        v = (v << 7) | u64::from(x & 0x7f);
        if v > u64::from(u32::MAX) + 80 {
            return Err(Error::Unsupported("OID arc above 2^32-1"));
        }
        if x & 0x80 != 0 {
            if i + 1 == c.len() {
                return Err(Error::Malformed("unterminated OID arc"));
            }
            continue;
        }
        if arcs.is_empty() {
            // The first subidentifier holds two arcs: 40 * X + Y (X.690 §8.19.4).
            let (a, b) = match v {
                0..=39 => (0, v),
                40..=79 => (1, v - 40),
                _ => (2, v - 80),
            };
            arcs.push(a);
            arcs.push(u32::try_from(b).map_err(|_| Error::Unsupported("OID arc above 2^32-1"))?);
        } else {
            arcs.push(u32::try_from(v).map_err(|_| Error::Unsupported("OID arc above 2^32-1"))?);
        }
        v = 0;
    }
    if arcs.len() > MAX_OID_ARCS {
        return Err(Error::Unsupported("OID of more than 128 arcs"));
    }
    Ok(arcs)
}

/// Bytes of a TLV with `content_len` content bytes.
pub fn tlv_len(content_len: usize) -> usize {
    let l = match content_len {
        0..=0x7f => 1,
        0x80..=0xff => 2,
        _ => 3,
    };
    1 + l + content_len
}

/// Write a tag and the length of `content_len` content bytes.
pub fn emit_header(w: &mut Writer, t: u8, content_len: usize) -> Result<()> {
    w.u8(t);
    match content_len {
        0..=0x7f => w.u8(content_len as u8),
        0x80..=0xff => w.u8(0x81).u8(content_len as u8),
        0x100..=MAX_LEN => w.u8(0x82).u16(content_len as u16),
        _ => return Err(Error::Malformed("BER content longer than 65535 bytes")),
    };
    Ok(())
}

/// Minimal two's complement content of `v`.
pub fn int_content(v: i64) -> ([u8; 8], usize) {
    let b = v.to_be_bytes();
    let mut i = 0;
    while i < 7 && ((b[i] == 0 && b[i + 1] & 0x80 == 0) || (b[i] == 0xff && b[i + 1] & 0x80 != 0)) {
        i += 1;
    }
    (b, i)
}

/// Write an INTEGER (any universal or application tag with integer content).
pub fn emit_int(w: &mut Writer, t: u8, v: i64) -> Result<()> {
    let (b, i) = int_content(v);
    emit_header(w, t, 8 - i)?;
    w.bytes(&b[i..]);
    Ok(())
}

/// Bytes of an INTEGER TLV holding `v`.
pub fn int_len(v: i64) -> usize {
    tlv_len(8 - int_content(v).1)
}

fn oid_subids(arcs: &[u32]) -> Result<impl Iterator<Item = u64> + '_> {
    let (a, b) = match arcs {
        [a @ 0..=1, b @ 0..=39, ..] | [a @ 2, b, ..] => (u64::from(*a), u64::from(*b)),
        _ => {
            return Err(Error::Malformed(
                "OID needs two arcs, X <= 2, Y < 40 below 2",
            ))
        }
    };
    Ok(core::iter::once(a * 40 + b).chain(arcs[2..].iter().map(|&x| u64::from(x))))
}

fn subid_len(v: u64) -> usize {
    (64 - v.leading_zeros() as usize).div_ceil(7).max(1)
}

/// Content bytes of an OBJECT IDENTIFIER.
pub fn oid_content_len(arcs: &[u32]) -> Result<usize> {
    Ok(oid_subids(arcs)?.map(subid_len).sum())
}

/// Write an OBJECT IDENTIFIER TLV.
pub fn emit_oid(w: &mut Writer, arcs: &[u32]) -> Result<()> {
    emit_header(w, tag::OID, oid_content_len(arcs)?)?;
    for v in oid_subids(arcs)? {
        let n = subid_len(v);
        for k in (0..n).rev() {
            let more = if k > 0 { 0x80 } else { 0 };
            w.u8(((v >> (7 * k)) & 0x7f) as u8 | more);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn oid_bytes(arcs: &[u32]) -> Vec<u8> {
        let mut w = Writer::new();
        emit_oid(&mut w, arcs).unwrap();
        w.buf[2..].to_vec()
    }

    #[test]
    fn oid_codec() {
        let o = [1u32, 3, 6, 1, 4, 1, 24686, 300, 0];
        assert_eq!(read_oid(&oid_bytes(&o)).unwrap(), o);
        assert_eq!(oid_bytes(&[1, 3, 6, 1]), vec![0x2b, 6, 1]);
        assert_eq!(oid_bytes(&[2, 999, u32::MAX]).len(), 2 + 5);
        assert_eq!(
            read_oid(&oid_bytes(&[2, 999, u32::MAX])).unwrap(),
            [2, 999, u32::MAX]
        );
        assert!(read_oid(&[0x2b, 0x86]).is_err());
        assert!(oid_content_len(&[1]).is_err());
        assert!(oid_content_len(&[1, 40]).is_err());
        assert!(oid_content_len(&[3, 1]).is_err());
    }

    #[test]
    fn int_codec() {
        let bytes = |v| {
            let (b, i) = int_content(v);
            b[i..].to_vec()
        };
        assert_eq!(bytes(0), vec![0]);
        assert_eq!(bytes(128), vec![0, 128]);
        assert_eq!(bytes(-1), vec![0xff]);
        assert_eq!(read_int(&bytes(-129)), Ok(-129));
        assert_eq!(read_int(&bytes(i64::MIN)), Ok(i64::MIN));
        assert_eq!(int_len(300), 4);
        assert!(read_int(&[]).is_err());
        assert!(read_int(&[0; 9]).is_err());
    }

    #[test]
    fn lengths() {
        for n in [0usize, 0x7f, 0x80, 0xff, 0x100, 0xffff] {
            let mut w = Writer::new();
            emit_header(&mut w, tag::OCTET_STRING, n).unwrap();
            w.zeros(n);
            assert_eq!(w.len(), tlv_len(n));
            let mut r = Reader::new(&w.buf);
            assert_eq!(read_tlv(&mut r).unwrap().content.len(), n);
            assert!(r.is_empty());
        }
        assert!(emit_header(&mut Writer::new(), tag::NULL, 0x10000).is_err());
        let mut r = Reader::new(&[0x30, 0x83, 0, 0, 1, 0]);
        assert!(read_tlv(&mut r).is_err());
        let mut r = Reader::new(&[0x1f, 0]);
        assert!(read_tlv(&mut r).is_err());
    }
}

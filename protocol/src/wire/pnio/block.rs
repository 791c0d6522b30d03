//! The PNIO BlockHeader: BlockType (u16), BlockLength (u16, the number of bytes that follow the
//! length field, so it includes the two version bytes), BlockVersionHigh, BlockVersionLow.
//! Source: IEC 61158-6-10 (BlockHeader); Wireshark `plugins/epan/profinet/packet-dcerpc-pn-io.c`
//! `dissect_block()`.

use crate::wire::field::{self, Field, Writer};
use crate::wire::{Emit, Error, Result};

mod fields {
    use crate::wire::field::Field;
    pub const TYPE: Field = 0..2;
    pub const LENGTH: Field = 2..4;
    pub const VERSION_HIGH: usize = 4;
    pub const VERSION_LOW: usize = 5;
    pub const HEADER_LEN: usize = 6;
}

/// Size of the BlockHeader on the wire.
pub const HEADER_LEN: usize = fields::HEADER_LEN;

/// An owned BlockHeader.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockHeader {
    pub block_type: u16,
    /// Bytes after the BlockLength field (version bytes + body).
    pub block_length: u16,
    pub version_high: u8,
    pub version_low: u8,
}

impl BlockHeader {
    /// Header for a body of `body_len` bytes (the length field then counts body + 2).
    pub fn for_body(
        block_type: u16,
        body_len: usize,
        version_high: u8,
        version_low: u8,
    ) -> Result<Self> {
        let block_length = body_len
            .checked_add(2)
            .and_then(|n| u16::try_from(n).ok())
            .ok_or(Error::Malformed("block body longer than 65533 bytes"))?;
        Ok(BlockHeader {
            block_type,
            block_length,
            version_high,
            version_low,
        })
    }

    /// Length of the body that follows the six header bytes.
    pub fn body_len(&self) -> usize {
        (self.block_length as usize).saturating_sub(2)
    }

    /// Total length of the block on the wire (header + body).
    pub fn total_len(&self) -> usize {
        4 + self.block_length as usize
    }
}

impl Emit for BlockHeader {
    fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    fn emit(&self, w: &mut Writer) -> Result<()> {
        w.u16(self.block_type)
            .u16(self.block_length)
            .u8(self.version_high)
            .u8(self.version_low);
        Ok(())
    }
}

/// A checked view of one block: header plus exactly `block_length - 2` body bytes.
#[derive(Debug, Clone, Copy)]
pub struct BlockView<'a> {
    buf: &'a [u8],
}

impl<'a> BlockView<'a> {
    /// Check that `buf` starts with a complete block (extra bytes after it are allowed and
    /// ignored; use [`BlockView::total_len`] to step to the next block).
    pub fn new_checked(buf: &'a [u8]) -> Result<Self> {
        if buf.len() < HEADER_LEN {
            return Err(Error::Truncated);
        }
        let len = field::read_u16(buf, fields::LENGTH.start)? as usize;
        if len < 2 {
            return Err(Error::Malformed("BlockLength below 2"));
        }
        if buf.len() < 4 + len {
            return Err(Error::Truncated);
        }
        Ok(BlockView {
            buf: &buf[..4 + len],
        })
    }

    pub fn header(&self) -> BlockHeader {
        // In bounds: checked in new_checked.
        BlockHeader {
            block_type: u16::from_be_bytes([self.buf[0], self.buf[1]]),
            block_length: u16::from_be_bytes([self.buf[2], self.buf[3]]),
            version_high: self.buf[fields::VERSION_HIGH],
            version_low: self.buf[fields::VERSION_LOW],
        }
    }

    pub fn block_type(&self) -> u16 {
        self.header().block_type
    }

    /// The body after the six header bytes.
    pub fn body(&self) -> &'a [u8] {
        &self.buf[HEADER_LEN..]
    }

    /// The whole block including its header.
    pub fn as_bytes(&self) -> &'a [u8] {
        self.buf
    }

    pub fn total_len(&self) -> usize {
        self.buf.len()
    }
}

/// Iterate over consecutive blocks in `buf`. Yields an error once (and then stops) if the bytes
/// after the last complete block do not form a block. Terminates: every step consumes at least
/// the six header bytes.
pub fn blocks(buf: &[u8]) -> impl Iterator<Item = Result<BlockView<'_>>> {
    let mut rest = buf;
    let mut failed = false;
    core::iter::from_fn(move || {
        if failed || rest.is_empty() {
            return None;
        }
        match BlockView::new_checked(rest) {
            Ok(b) => {
                rest = &rest[b.total_len()..];
                Some(Ok(b))
            }
            Err(e) => {
                failed = true;
                Some(Err(e))
            }
        }
    })
}

/// The body of a PNIO block. Every block type implements this and gets [`Emit`] from it: the
/// framing (a BlockHeader whose BlockLength counts the version bytes and the body) is written
/// in one place. The length field is back-patched from what `emit_body` wrote rather than taken
/// from `body_len`, so a body that miscounts its length still frames correctly (and the
/// `buffer_len` test catches the miscount).
pub trait BlockBody {
    /// BlockType of this block.
    fn block_type(&self) -> u16;
    /// (BlockVersionHigh, BlockVersionLow).
    fn block_version(&self) -> (u8, u8);
    /// Exact number of body bytes `emit_body` appends.
    fn body_len(&self) -> usize;
    /// Append the body (after the six header bytes). Checks that can fail should come first;
    /// on error the whole block is removed from the writer anyway.
    fn emit_body(&self, w: &mut Writer) -> Result<()>;
}

impl<B: BlockBody> Emit for B {
    fn buffer_len(&self) -> usize {
        HEADER_LEN.saturating_add(self.body_len())
    }

    fn emit(&self, w: &mut Writer) -> Result<()> {
        let start = w.len();
        let (high, low) = self.block_version();
        w.u16(self.block_type()).u16(0).u8(high).u8(low);
        let framed = self.emit_body(w).and_then(|()| {
            let len = u16::try_from(w.len() - start - 4)
                .map_err(|_| Error::Malformed("block longer than 65535 bytes"))?;
            w.patch_u16(start + 2, len);
            Ok(())
        });
        if framed.is_err() {
            w.truncate(start);
        }
        framed
    }
}

#[allow(dead_code)]
const _FIELD_CHECK: Field = fields::TYPE;

#[cfg(test)]
mod tests {
    use super::*;

    /// A block with an opaque body (`cm::RawBlock` in miniature).
    struct Opaque(u16, &'static [u8]);

    impl BlockBody for Opaque {
        fn block_type(&self) -> u16 {
            self.0
        }
        fn block_version(&self) -> (u8, u8) {
            (1, 0)
        }
        fn body_len(&self) -> usize {
            self.1.len()
        }
        fn emit_body(&self, w: &mut Writer) -> Result<()> {
            w.bytes(self.1);
            Ok(())
        }
    }

    #[test]
    fn header_round_trip_and_iteration() {
        let bytes = [Opaque(0x0101, &[9, 9, 9]), Opaque(0x8101, &[])]
            .to_bytes()
            .unwrap();
        let v: Vec<_> = blocks(&bytes).collect::<Result<_>>().unwrap();
        assert_eq!(v.len(), 2);
        assert_eq!(v[0].header().block_length, 5);
        assert_eq!(v[0].body(), &[9, 9, 9]);
        assert_eq!(v[1].block_type(), 0x8101);
        assert!(v[1].body().is_empty());
    }

    #[test]
    fn bad_lengths_are_errors() {
        assert_eq!(
            BlockView::new_checked(&[0, 1, 0, 1, 1, 0]).unwrap_err(),
            Error::Malformed("BlockLength below 2")
        );
        assert_eq!(
            BlockView::new_checked(&[0, 1, 0, 9, 1, 0]).unwrap_err(),
            Error::Truncated
        );
        let mut it = blocks(&[0, 1, 0, 2, 1, 0, 0xff]);
        assert!(it.next().unwrap().is_ok());
        assert!(it.next().unwrap().is_err());
        assert!(it.next().is_none());
    }
}

//! [`FackBody`], the body of a FACK (fragment acknowledgement) packet.

use super::{Drep, Ndr};
use crate::wire::field;
use crate::wire::{Emit, Error, Result, Writer};

/// Body of a FACK packet (C706 12.5.3.4; Wireshark `dissect_dcerpc_dg_fack`): version, one
/// pad byte, window size, max TSDU, max fragment size, serial number of the fragment that
/// caused the FACK, selective acknowledgement bit masks. All integers in DREP byte order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FackBody {
    pub version: u8,
    pub window_size: u16,
    pub max_tsdu: u32,
    pub max_frag_size: u32,
    pub serial_num: u16,
    /// Selective-ack masks: bit n of word k set = fragment (fragment_num + 1 + 32k + n)
    /// received (fragment_num of the FACK header = highest in-order fragment received).
    pub selack: Vec<u32>,
}

impl FackBody {
    /// Minimum length (without selective-ack words).
    pub const MIN_LEN: usize = 16;

    /// Parse; bytes after the selective-ack words are ignored (some stacks pad the body).
    pub fn parse(body: &[u8], drep: Drep) -> Result<FackBody> {
        let e = drep.endian();
        let version = field::read_u8(body, 0)?;
        let window_size = e.read_u16(body, 2)?;
        let max_tsdu = e.read_u32(body, 4)?;
        let max_frag_size = e.read_u32(body, 8)?;
        let serial_num = e.read_u16(body, 12)?;
        let n = usize::from(e.read_u16(body, 14)?);
        // Check before allocating: n words must exist.
        let need = n
            .checked_mul(4)
            .and_then(|x| x.checked_add(Self::MIN_LEN))
            .ok_or(Error::Truncated)?;
        if body.len() < need {
            return Err(Error::Truncated);
        }
        let mut selack = Vec::with_capacity(n);
        for i in 0..n {
            selack.push(e.read_u32(body, Self::MIN_LEN + 4 * i)?);
        }
        Ok(FackBody {
            version,
            window_size,
            max_tsdu,
            max_frag_size,
            serial_num,
            selack,
        })
    }
}

impl Emit for Ndr<'_, FackBody> {
    fn buffer_len(&self) -> usize {
        FackBody::MIN_LEN + 4 * self.body.selack.len()
    }

    fn emit(&self, w: &mut Writer) -> Result<()> {
        let (e, b) = (self.drep.endian(), self.body);
        let n = u16::try_from(b.selack.len())
            .map_err(|_| Error::Malformed("too many selective-ack words"))?;
        let out = &mut w.buf;
        out.push(b.version);
        out.push(0);
        e.put_u16(out, b.window_size);
        e.put_u32(out, b.max_tsdu);
        e.put_u32(out, b.max_frag_size);
        e.put_u16(out, b.serial_num);
        e.put_u16(out, n);
        for word in &b.selack {
            e.put_u32(out, *word);
        }
        Ok(())
    }
}

//! [`FackBody`], the body of a FACK (fragment acknowledgement) packet.

use super::Drep;
use crate::wire::field;
use crate::wire::{Error, Result};

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

    pub fn buffer_len(&self) -> usize {
        Self::MIN_LEN + 4 * self.selack.len()
    }

    pub fn emit(&self, drep: Drep) -> Result<Vec<u8>> {
        let e = drep.endian();
        let n = u16::try_from(self.selack.len())
            .map_err(|_| Error::Malformed("too many selective-ack words"))?;
        let mut out = Vec::with_capacity(self.buffer_len());
        out.push(self.version);
        out.push(0);
        e.put_u16(&mut out, self.window_size);
        e.put_u32(&mut out, self.max_tsdu);
        e.put_u32(&mut out, self.max_frag_size);
        e.put_u16(&mut out, self.serial_num);
        e.put_u16(&mut out, n);
        for w in &self.selack {
            e.put_u32(&mut out, *w);
        }
        Ok(out)
    }
}

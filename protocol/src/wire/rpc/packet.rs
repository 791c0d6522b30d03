//! [`RpcPacket`] (header and body) and [`fragment`], which splits a body into CL fragments.

use super::{flags1, RpcHeader, HEADER_LEN};
use crate::wire::{Emit, Error, Result, Writer};

/// A CL packet: header and body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RpcPacket {
    pub header: RpcHeader,
    pub body: Vec<u8>,
}

impl RpcPacket {
    /// Parse a UDP payload holding one CL packet. Bytes after `fragment_len` are ignored.
    /// Fuzz entry point of this module.
    pub fn parse(buf: &[u8]) -> Result<RpcPacket> {
        let header = RpcHeader::parse(buf)?;
        let end = HEADER_LEN + usize::from(header.fragment_len);
        let body = buf.get(HEADER_LEN..end).ok_or(Error::Truncated)?.to_vec();
        Ok(RpcPacket { header, body })
    }

    pub fn new(header: RpcHeader, body: Vec<u8>) -> RpcPacket {
        RpcPacket { header, body }
    }
}

/// Header (with `fragment_len` = body length) and body.
impl Emit for RpcPacket {
    fn buffer_len(&self) -> usize {
        HEADER_LEN + self.body.len()
    }

    fn emit(&self, w: &mut Writer) -> Result<()> {
        let mut h = self.header;
        h.fragment_len = u16::try_from(self.body.len())
            .map_err(|_| Error::Malformed("RPC body longer than 65535 bytes"))?;
        h.emit(w)?;
        w.bytes(&self.body);
        Ok(())
    }
}

/// Split `body` into CL packets of at most `max_body` body bytes each.
///
/// A body that fits in one packet yields one packet with `header.flags1` minus the FRAG bit
/// (LAST_FRAG is kept as given: Siemens devices answer unfragmented calls with flags1 0x0a). Otherwise every packet carries FRAG, fragment number and serial number
/// 0, 1, 2, ...; the last one also carries LAST_FRAG and NO_FACK (the reply acknowledges it);
/// the others carry NO_FACK only when `request_fack` is false (the Write in fixture
/// `icsnpp-write-req-frag0-irt` requests a FACK for fragment 0: flags1 0x24, then 0x2e).
pub fn fragment(
    header: &RpcHeader,
    body: &[u8],
    max_body: usize,
    request_fack: bool,
) -> Result<Vec<RpcPacket>> {
    if max_body == 0 {
        return Err(Error::Malformed("fragment size 0"));
    }
    let max_body = max_body.min(usize::from(u16::MAX));
    let base_flags = header.flags1 & !(flags1::FRAG | flags1::LAST_FRAG | flags1::NO_FACK);
    if body.len() <= max_body {
        let mut h = *header;
        h.flags1 = header.flags1 & !flags1::FRAG;
        h.fragment_num = 0;
        h.fragment_len = body.len() as u16;
        return Ok(vec![RpcPacket::new(h, body.to_vec())]);
    }
    let count = body.len().div_ceil(max_body);
    if count > usize::from(u16::MAX) + 1 {
        return Err(Error::Malformed("body needs more than 65536 fragments"));
    }
    let mut out = Vec::with_capacity(count);
    for (i, chunk) in body.chunks(max_body).enumerate() {
        let last = i + 1 == count;
        let mut h = *header;
        h.flags1 = base_flags | flags1::FRAG;
        if last {
            h.flags1 |= flags1::LAST_FRAG | flags1::NO_FACK;
        } else if !request_fack {
            h.flags1 |= flags1::NO_FACK;
        }
        h.fragment_num = i as u16;
        h.serial = i as u16;
        h.fragment_len = chunk.len() as u16;
        out.push(RpcPacket::new(h, chunk.to_vec()));
    }
    Ok(out)
}

//! [`DcpRepr`], a whole DCP PDU: parse and emit (also as an RT payload and an Ethernet frame),
//! and the queries on its blocks.

use super::{has_prefix, DcpBlock, DcpValue, ServiceId, ServiceType, HEADER_LEN};
use crate::wire::ethernet::{self, EthernetRepr, MacAddr};
use crate::wire::field::{Reader, Writer};
use crate::wire::rt::{self, FrameId};
use crate::wire::{Emit, Error, Result};

/// A DCP PDU (header and blocks).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct DcpRepr {
    pub service_id: ServiceId,
    pub service_type: ServiceType,
    pub xid: u32,
    /// ResponseDelayFactor in Identify requests (0/1 = no delay; see
    /// `machine::dcp_delay`); the reserved field elsewhere (kept for byte-exact round trips).
    pub response_delay: u16,
    /// Blocks; in a Get request, bare selectors: only `value.option_suboption()` is sent.
    pub blocks: Vec<DcpBlock>,
}

impl DcpRepr {
    /// Parse a DCP PDU (the bytes after the FrameID; trailing Ethernet padding is ignored).
    /// Fuzz entry point for DCP.
    pub fn parse(pdu: &[u8]) -> Result<DcpRepr> {
        let mut r = Reader::new(pdu);
        let sid = r.u8()?;
        let sty = r.u8()?;
        let xid = r.u32()?;
        let response_delay = r.u16()?;
        let data_len = r.u16()? as usize;
        let service_id = ServiceId::from_u8(sid).ok_or(Error::Unsupported("DCP ServiceID"))?;
        let service_type =
            ServiceType::from_u8(sty).ok_or(Error::Unsupported("DCP ServiceType"))?;
        let data = r.bytes(data_len)?;
        let mut r = Reader::new(data);
        let mut blocks = Vec::new();
        if service_id == ServiceId::Get && service_type == ServiceType::Request {
            while !r.is_empty() {
                let opt = r.u8()?;
                let sub = r.u8()?;
                blocks.push(DcpBlock::new(DcpValue::Other {
                    option: opt,
                    suboption: sub,
                    data: Vec::new(),
                }));
            }
        } else {
            while !r.is_empty() {
                let opt = r.u8()?;
                let sub = r.u8()?;
                let len = r.u16()? as usize;
                let body = r.bytes(len)?;
                let (prefix, value) = if has_prefix(service_id, service_type, opt) {
                    if body.len() < 2 {
                        return Err(Error::Malformed("DCP block shorter than its prefix"));
                    }
                    (u16::from_be_bytes([body[0], body[1]]), &body[2..])
                } else {
                    (0, body)
                };
                blocks.push(DcpBlock {
                    prefix,
                    value: DcpValue::decode(opt, sub, value),
                });
                if len % 2 == 1 && !r.is_empty() {
                    r.skip(1)?;
                }
            }
        }
        Ok(DcpRepr {
            service_id,
            service_type,
            xid,
            response_delay,
            blocks,
        })
    }

    /// Parse a complete Ethernet frame carrying a DCP PDU. Fails with `Unsupported` when the
    /// frame is not PROFINET RT or its FrameID is not a DCP one.
    pub fn parse_frame(frame: &[u8]) -> Result<(EthernetRepr, FrameId, DcpRepr)> {
        let (eth, id, pdu) = rt::parse_rt_frame(frame)?;
        if !id.is_dcp() {
            return Err(Error::Unsupported("FrameID is not DCP"));
        }
        Ok((eth, id, DcpRepr::parse(pdu)?))
    }

    fn is_get_request(&self) -> bool {
        self.service_id == ServiceId::Get && self.service_type == ServiceType::Request
    }

    /// Length of the block area (DCPDataLength), padding included.
    pub fn data_len(&self) -> usize {
        if self.is_get_request() {
            return self.blocks.len().saturating_mul(2);
        }
        self.blocks
            .iter()
            .map(|b| {
                let (opt, _) = b.option_suboption();
                let p = if has_prefix(self.service_id, self.service_type, opt) {
                    2
                } else {
                    0
                };
                let l = p + b.value.data_len();
                4 + l + (l & 1)
            })
            .fold(0usize, |a, n| a.saturating_add(n))
    }
}

/// The PDU (header and blocks, without FrameID). Fails when a block or the whole data area
/// does not fit its 16-bit length field.
impl Emit for DcpRepr {
    fn buffer_len(&self) -> usize {
        HEADER_LEN.saturating_add(self.data_len())
    }

    fn emit(&self, w: &mut Writer) -> Result<()> {
        let data_len = u16::try_from(self.data_len())
            .map_err(|_| Error::Malformed("DCPDataLength exceeds 65535"))?;
        let start = w.len();
        w.u8(self.service_id as u8)
            .u8(self.service_type as u8)
            .u32(self.xid)
            .u16(self.response_delay)
            .u16(data_len);
        let blocks = self.emit_blocks(w);
        if blocks.is_err() {
            w.truncate(start);
        }
        blocks
    }
}

impl DcpRepr {
    fn emit_blocks(&self, w: &mut Writer) -> Result<()> {
        for b in &self.blocks {
            let (opt, sub) = b.option_suboption();
            w.u8(opt).u8(sub);
            if self.is_get_request() {
                continue;
            }
            let prefixed = has_prefix(self.service_id, self.service_type, opt);
            let l = usize::from(prefixed) * 2 + b.value.data_len();
            let l16 =
                u16::try_from(l).map_err(|_| Error::Malformed("DCPBlockLength exceeds 65535"))?;
            w.u16(l16);
            if prefixed {
                w.u16(b.prefix);
            }
            b.value.emit(w)?;
            if l % 2 == 1 {
                w.u8(0);
            }
        }
        Ok(())
    }

    /// The FrameID this PDU travels with.
    pub fn frame_id(&self) -> FrameId {
        match (self.service_id, self.service_type) {
            (ServiceId::Identify, ServiceType::Request) => FrameId::DCP_IDENTIFY_REQUEST,
            (ServiceId::Identify, _) => FrameId::DCP_IDENTIFY_RESPONSE,
            (ServiceId::Hello, _) => FrameId::DCP_HELLO,
            _ => FrameId::DCP_GET_SET,
        }
    }

    /// A complete Ethernet frame (EtherType forced to 0x8892): header, FrameID, PDU, padded
    /// to 60 bytes.
    pub fn build_frame(
        &self,
        dst: MacAddr,
        src: MacAddr,
        vlan: Option<ethernet::VlanTag>,
    ) -> Result<Vec<u8>> {
        let eth = EthernetRepr {
            dst,
            src,
            vlan,
            ethertype: ethernet::ethertype::PROFINET,
        };
        let len = eth.buffer_len() + rt::FRAME_ID_LEN + self.buffer_len();
        let mut w = Writer::with_capacity(ethernet::padded_len(len));
        eth.emit(&mut w)?;
        w.u16(self.frame_id().0);
        self.emit(&mut w)?;
        ethernet::pad_to_min(&mut w.buf);
        Ok(w.into_inner())
    }

    /// First block with this (option, suboption).
    pub fn find(&self, opt: u8, sub: u8) -> Option<&DcpBlock> {
        self.blocks
            .iter()
            .find(|b| b.option_suboption() == (opt, sub))
    }

    /// The NameOfStation value, if any block carries one.
    pub fn name_of_station(&self) -> Option<&[u8]> {
        self.blocks.iter().find_map(|b| match &b.value {
            DcpValue::NameOfStation(n) => Some(n.as_slice()),
            _ => None,
        })
    }

    /// Does an Identify request with these filter blocks select a device whose own values are
    /// `own`? Every filter must be AllSelector or equal one of `own` (same option, suboption
    /// and data). An empty filter list matches nothing.
    pub fn identify_filter_matches(&self, own: &[DcpValue]) -> bool {
        !self.blocks.is_empty()
            && self
                .blocks
                .iter()
                .all(|f| matches!(f.value, DcpValue::AllSelector) || own.contains(&f.value))
    }
}

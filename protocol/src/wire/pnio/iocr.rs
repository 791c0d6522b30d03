//! IOCRBlockReq (0x0102) and IOCRBlockRes (0x8102): the cyclic IO communication relations.
//!
//! ```text
//! IOCRBlockReq body: IOCRType u16, IOCRReference u16, LT u16, IOCRProperties u32,
//!   DataLength u16, FrameID u16, SendClockFactor u16, ReductionRatio u16, Phase u16,
//!   Sequence u16, FrameSendOffset u32, WatchdogFactor u16, DataHoldFactor u16,
//!   IOCRTagHeader u16, IOCRMulticastMACAdd (6), NumberOfAPIs u16,
//!   per API: API u32, NumberOfIODataObjects u16, (SlotNumber u16, SubslotNumber u16,
//!            IODataObjectFrameOffset u16)*, NumberOfIOCS u16,
//!            (SlotNumber u16, SubslotNumber u16, IOCSFrameOffset u16)*
//! IOCRBlockRes body: IOCRType u16, IOCRReference u16, FrameID u16
//! ```
//! IOCRProperties: RTClass bits 0-3 (1 = RT_CLASS_1, 2 = RT_CLASS_2, 3 = RT_CLASS_3,
//! 4 = RT_CLASS_UDP); IOCRTagHeader: VLAN ID bits 0-11, IOCRUserPriority bits 13-15.
//! Sources: Wireshark `packet-dcerpc-pn-io.c` `dissect_IOCRBlockReq_block`,
//! `dissect_IOCRBlockRes_block`, field masks `pn_io.iocr_properties.*`; p-net
//! `pf_block_reader.c` `pf_get_iocr_param`.

use crate::wire::field::{Reader, Writer};
use crate::wire::pnio::block::{BlockBody, BlockView};
use crate::wire::pnio::cm::util;
use crate::wire::{Error, Result};

pub const BLOCK_TYPE_REQ: u16 = 0x0102;
pub const BLOCK_TYPE_RES: u16 = 0x8102;

/// IOCRType values.
pub mod iocr_type {
    pub const INPUT: u16 = 0x0001;
    pub const OUTPUT: u16 = 0x0002;
    pub const MULTICAST_PROVIDER: u16 = 0x0003;
    pub const MULTICAST_CONSUMER: u16 = 0x0004;
}

/// LT field value for RT over Ethernet (the PROFINET EtherType).
pub const LT_PNIO: u16 = 0x8892;

/// IOCRProperties.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct IocrProperties(pub u32);

impl IocrProperties {
    pub const RT_CLASS_1: u32 = 1;
    pub const RT_CLASS_2: u32 = 2;
    pub const RT_CLASS_3: u32 = 3;
    pub const RT_CLASS_UDP: u32 = 4;
    pub fn rt_class(self) -> u8 {
        (self.0 & 0x0f) as u8
    }
}

/// IOCRTagHeader / AlarmCRTagHeader: VLAN ID (12 bits) and user priority (3 bits).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct TagHeader(pub u16);

impl TagHeader {
    pub fn new(vlan_id: u16, priority: u8) -> TagHeader {
        TagHeader((vlan_id & 0x0fff) | (u16::from(priority & 7) << 13))
    }
    pub fn vlan_id(self) -> u16 {
        self.0 & 0x0fff
    }
    pub fn priority(self) -> u8 {
        (self.0 >> 13) as u8
    }
}

/// One IODataObject or IOCS entry of an IOCR: slot, subslot and its offset in the C_SDU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct IoObject {
    pub slot: u16,
    pub subslot: u16,
    pub frame_offset: u16,
}

/// The per-API part of an IOCRBlockReq.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct IocrApi {
    pub api: u32,
    pub io_data_objects: Vec<IoObject>,
    pub iocs: Vec<IoObject>,
}

/// IOCRBlockReq.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IocrBlockReq {
    pub version: (u8, u8),
    pub iocr_type: u16,
    pub iocr_reference: u16,
    pub lt: u16,
    pub properties: IocrProperties,
    /// C_SDU length.
    pub data_length: u16,
    pub frame_id: u16,
    pub send_clock_factor: u16,
    pub reduction_ratio: u16,
    pub phase: u16,
    pub sequence: u16,
    /// 0xFFFFFFFF = "best effort".
    pub frame_send_offset: u32,
    pub watchdog_factor: u16,
    pub data_hold_factor: u16,
    pub tag_header: TagHeader,
    pub multicast_mac: [u8; 6],
    pub apis: Vec<IocrApi>,
}

fn read_objects(r: &mut Reader<'_>) -> Result<Vec<IoObject>> {
    let n = r.u16()?;
    let mut v = Vec::new();
    for _ in 0..n {
        v.push(IoObject {
            slot: r.u16()?,
            subslot: r.u16()?,
            frame_offset: r.u16()?,
        });
    }
    Ok(v)
}

fn write_objects(w: &mut Writer, v: &[IoObject]) {
    w.u16(v.len() as u16);
    for o in v {
        w.u16(o.slot).u16(o.subslot).u16(o.frame_offset);
    }
}

impl IocrBlockReq {
    pub fn parse(block: &BlockView<'_>) -> Result<IocrBlockReq> {
        util::expect(block, BLOCK_TYPE_REQ)?;
        let mut r = Reader::new(block.body());
        let mut req = IocrBlockReq {
            version: util::version(block),
            iocr_type: r.u16()?,
            iocr_reference: r.u16()?,
            lt: r.u16()?,
            properties: IocrProperties(r.u32()?),
            data_length: r.u16()?,
            frame_id: r.u16()?,
            send_clock_factor: r.u16()?,
            reduction_ratio: r.u16()?,
            phase: r.u16()?,
            sequence: r.u16()?,
            frame_send_offset: r.u32()?,
            watchdog_factor: r.u16()?,
            data_hold_factor: r.u16()?,
            tag_header: TagHeader(r.u16()?),
            multicast_mac: r.array::<6>()?,
            apis: Vec::new(),
        };
        let n = r.u16()?;
        for _ in 0..n {
            let api = r.u32()?;
            let io_data_objects = read_objects(&mut r)?;
            let iocs = read_objects(&mut r)?;
            req.apis.push(IocrApi {
                api,
                io_data_objects,
                iocs,
            });
        }
        util::finish(&r)?;
        Ok(req)
    }
}

impl BlockBody for IocrBlockReq {
    fn block_type(&self) -> u16 {
        BLOCK_TYPE_REQ
    }
    fn block_version(&self) -> (u8, u8) {
        self.version
    }
    fn body_len(&self) -> usize {
        let objects = |v: &[IoObject]| 2 + 6 * v.len();
        40 + self
            .apis
            .iter()
            .map(|a| 4 + objects(&a.io_data_objects) + objects(&a.iocs))
            .sum::<usize>()
    }
    fn emit_body(&self, w: &mut Writer) -> Result<()> {
        if self.apis.len() > usize::from(u16::MAX)
            || self
                .apis
                .iter()
                .any(|a| a.io_data_objects.len() > 0xffff || a.iocs.len() > 0xffff)
        {
            return Err(Error::Malformed("too many IOCR entries"));
        }
        w.u16(self.iocr_type)
            .u16(self.iocr_reference)
            .u16(self.lt)
            .u32(self.properties.0)
            .u16(self.data_length)
            .u16(self.frame_id)
            .u16(self.send_clock_factor)
            .u16(self.reduction_ratio)
            .u16(self.phase)
            .u16(self.sequence)
            .u32(self.frame_send_offset)
            .u16(self.watchdog_factor)
            .u16(self.data_hold_factor)
            .u16(self.tag_header.0)
            .bytes(&self.multicast_mac)
            .u16(self.apis.len() as u16);
        for a in &self.apis {
            w.u32(a.api);
            write_objects(w, &a.io_data_objects);
            write_objects(w, &a.iocs);
        }
        Ok(())
    }
}

/// IOCRBlockRes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IocrBlockRes {
    pub version: (u8, u8),
    pub iocr_type: u16,
    pub iocr_reference: u16,
    pub frame_id: u16,
}

impl IocrBlockRes {
    /// The response to `req`, with the FrameID the responder assigned (for an input CR the
    /// device chooses it; for an output CR it echoes the controller's).
    pub fn to_request(req: &IocrBlockReq, frame_id: u16) -> IocrBlockRes {
        IocrBlockRes {
            version: (1, 0),
            iocr_type: req.iocr_type,
            iocr_reference: req.iocr_reference,
            frame_id,
        }
    }

    pub fn parse(block: &BlockView<'_>) -> Result<IocrBlockRes> {
        util::expect(block, BLOCK_TYPE_RES)?;
        let mut r = Reader::new(block.body());
        let res = IocrBlockRes {
            version: util::version(block),
            iocr_type: r.u16()?,
            iocr_reference: r.u16()?,
            frame_id: r.u16()?,
        };
        util::finish(&r)?;
        Ok(res)
    }
}

impl BlockBody for IocrBlockRes {
    fn block_type(&self) -> u16 {
        BLOCK_TYPE_RES
    }
    fn block_version(&self) -> (u8, u8) {
        self.version
    }
    fn body_len(&self) -> usize {
        6
    }
    fn emit_body(&self, w: &mut Writer) -> Result<()> {
        w.u16(self.iocr_type)
            .u16(self.iocr_reference)
            .u16(self.frame_id);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Emit;
    use proptest::prelude::*;

    fn arb_obj() -> impl Strategy<Value = IoObject> {
        (any::<u16>(), any::<u16>(), any::<u16>()).prop_map(|(slot, subslot, frame_offset)| {
            IoObject {
                slot,
                subslot,
                frame_offset,
            }
        })
    }

    fn arb_api() -> impl Strategy<Value = IocrApi> {
        (
            any::<u32>(),
            proptest::collection::vec(arb_obj(), 0..4),
            proptest::collection::vec(arb_obj(), 0..4),
        )
            .prop_map(|(api, io_data_objects, iocs)| IocrApi {
                api,
                io_data_objects,
                iocs,
            })
    }

    proptest! {
        #[test]
        fn parse_never_panics(data in proptest::collection::vec(any::<u8>(), 0..120)) {
            if let Ok(v) = BlockView::new_checked(&data) {
                let _ = IocrBlockReq::parse(&v);
                let _ = IocrBlockRes::parse(&v);
            }
        }

        #[test]
        fn round_trip(t in any::<u16>(), rf in any::<u16>(), p in any::<u32>(), dl in any::<u16>(), fid in any::<u16>(),
                      scf in any::<u16>(), rr in any::<u16>(), fso in any::<u32>(), tag in any::<u16>(),
                      apis in proptest::collection::vec(arb_api(), 0..3)) {
            let req = IocrBlockReq { version: (1, 0), iocr_type: t, iocr_reference: rf, lt: LT_PNIO,
                properties: IocrProperties(p), data_length: dl, frame_id: fid, send_clock_factor: scf,
                reduction_ratio: rr, phase: 1, sequence: 0, frame_send_offset: fso, watchdog_factor: 3,
                data_hold_factor: 3, tag_header: TagHeader(tag), multicast_mac: [0; 6], apis };
            let mut w = Writer::new();
            req.emit(&mut w).unwrap();
            let b = w.into_inner();
            prop_assert_eq!(IocrBlockReq::parse(&BlockView::new_checked(&b).unwrap()).unwrap(), req.clone());
            let res = IocrBlockRes::to_request(&req, 0x8000);
            let mut w = Writer::new();
            res.emit(&mut w).unwrap();
            let b = w.into_inner();
            prop_assert_eq!(b.len(), 12);
            prop_assert_eq!(IocrBlockRes::parse(&BlockView::new_checked(&b).unwrap()).unwrap(), res);
        }
    }

    #[test]
    fn tag_header_bits() {
        let t = TagHeader::new(0, 6);
        assert_eq!(t.0, 0xC000);
        assert_eq!((t.vlan_id(), t.priority()), (0, 6));
    }
}

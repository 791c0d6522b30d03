//! AlarmCRBlockReq (0x0103) and AlarmCRBlockRes (0x8103).
//!
//! ```text
//! AlarmCRBlockReq body: AlarmCRType u16, LT u16, AlarmCRProperties u32,
//!   RTATimeoutFactor u16, RTARetries u16, LocalAlarmReference u16,
//!   MaxAlarmDataLength u16, AlarmCRTagHeaderHigh u16, AlarmCRTagHeaderLow u16
//! AlarmCRBlockRes body: AlarmCRType u16, LocalAlarmReference u16, MaxAlarmDataLength u16
//! ```
//! AlarmCRProperties: bit 0 Priority (0 = user priority from the tag headers, 1 = use only
//! low priority), bit 1 Transport (0 = RTA over Ethernet, 1 = RTA over UDP).
//! Sources: Wireshark `packet-dcerpc-pn-io.c` `dissect_AlarmCRBlockReq_block`,
//! `dissect_AlarmCRBlockRes_block`, masks `pn_io.alarmcr_properties.*`; p-net
//! `pf_get_alarm_cr_request`.

use crate::wire::field::{Reader, Writer};
use crate::wire::pnio::block::{BlockBody, BlockView};
use crate::wire::pnio::cm::util;
use crate::wire::pnio::iocr::TagHeader;
use crate::wire::Result;

pub const BLOCK_TYPE_REQ: u16 = 0x0103;
pub const BLOCK_TYPE_RES: u16 = 0x8103;

/// AlarmCRType: the only defined value.
pub const ALARM_CR_TYPE: u16 = 0x0001;

/// AlarmCRProperties.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct AlarmCrProperties(pub u32);

impl AlarmCrProperties {
    pub const PRIORITY: u32 = 0x1;
    pub const TRANSPORT_UDP: u32 = 0x2;
    pub fn priority(self) -> bool {
        self.0 & Self::PRIORITY != 0
    }
    pub fn transport_udp(self) -> bool {
        self.0 & Self::TRANSPORT_UDP != 0
    }
}

/// AlarmCRBlockReq.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AlarmCrBlockReq {
    pub version: (u8, u8),
    pub alarm_cr_type: u16,
    pub lt: u16,
    pub properties: AlarmCrProperties,
    /// In units of 100 ms.
    pub rta_timeout_factor: u16,
    pub rta_retries: u16,
    pub local_alarm_reference: u16,
    pub max_alarm_data_length: u16,
    pub tag_header_high: TagHeader,
    pub tag_header_low: TagHeader,
}

impl AlarmCrBlockReq {
    pub fn parse(block: &BlockView<'_>) -> Result<AlarmCrBlockReq> {
        util::expect(block, BLOCK_TYPE_REQ)?;
        let mut r = Reader::new(block.body());
        let req = AlarmCrBlockReq {
            version: util::version(block),
            alarm_cr_type: r.u16()?,
            lt: r.u16()?,
            properties: AlarmCrProperties(r.u32()?),
            rta_timeout_factor: r.u16()?,
            rta_retries: r.u16()?,
            local_alarm_reference: r.u16()?,
            max_alarm_data_length: r.u16()?,
            tag_header_high: TagHeader(r.u16()?),
            tag_header_low: TagHeader(r.u16()?),
        };
        util::finish(&r)?;
        Ok(req)
    }
}

impl BlockBody for AlarmCrBlockReq {
    fn block_type(&self) -> u16 {
        BLOCK_TYPE_REQ
    }
    fn block_version(&self) -> (u8, u8) {
        self.version
    }
    fn body_len(&self) -> usize {
        20
    }
    fn emit_body(&self, w: &mut Writer) -> Result<()> {
        w.u16(self.alarm_cr_type)
            .u16(self.lt)
            .u32(self.properties.0)
            .u16(self.rta_timeout_factor)
            .u16(self.rta_retries)
            .u16(self.local_alarm_reference)
            .u16(self.max_alarm_data_length)
            .u16(self.tag_header_high.0)
            .u16(self.tag_header_low.0);
        Ok(())
    }
}

/// AlarmCRBlockRes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AlarmCrBlockRes {
    pub version: (u8, u8),
    pub alarm_cr_type: u16,
    /// The responder's own local alarm reference.
    pub local_alarm_reference: u16,
    pub max_alarm_data_length: u16,
}

impl AlarmCrBlockRes {
    /// The response to `req` with the responder's alarm reference and accepted maximum length.
    pub fn to_request(
        req: &AlarmCrBlockReq,
        local_alarm_reference: u16,
        max_alarm_data_length: u16,
    ) -> Self {
        AlarmCrBlockRes {
            version: (1, 0),
            alarm_cr_type: req.alarm_cr_type,
            local_alarm_reference,
            max_alarm_data_length,
        }
    }

    pub fn parse(block: &BlockView<'_>) -> Result<AlarmCrBlockRes> {
        util::expect(block, BLOCK_TYPE_RES)?;
        let mut r = Reader::new(block.body());
        let res = AlarmCrBlockRes {
            version: util::version(block),
            alarm_cr_type: r.u16()?,
            local_alarm_reference: r.u16()?,
            max_alarm_data_length: r.u16()?,
        };
        util::finish(&r)?;
        Ok(res)
    }
}

impl BlockBody for AlarmCrBlockRes {
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
        w.u16(self.alarm_cr_type)
            .u16(self.local_alarm_reference)
            .u16(self.max_alarm_data_length);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Emit;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn parse_never_panics(data in proptest::collection::vec(any::<u8>(), 0..60)) {
            if let Ok(v) = BlockView::new_checked(&data) {
                let _ = AlarmCrBlockReq::parse(&v);
                let _ = AlarmCrBlockRes::parse(&v);
            }
        }

        #[test]
        fn round_trip(p in any::<u32>(), tf in any::<u16>(), rt in any::<u16>(), lr in any::<u16>(), ml in any::<u16>(),
                      th in any::<u16>(), tl in any::<u16>()) {
            let req = AlarmCrBlockReq { version: (1, 0), alarm_cr_type: ALARM_CR_TYPE, lt: 0x8892,
                properties: AlarmCrProperties(p), rta_timeout_factor: tf, rta_retries: rt, local_alarm_reference: lr,
                max_alarm_data_length: ml, tag_header_high: TagHeader(th), tag_header_low: TagHeader(tl) };
            let mut w = Writer::new();
            req.emit(&mut w).unwrap();
            let b = w.into_inner();
            prop_assert_eq!(b.len(), 6 + 20);
            prop_assert_eq!(AlarmCrBlockReq::parse(&BlockView::new_checked(&b).unwrap()).unwrap(), req);
            let res = AlarmCrBlockRes::to_request(&req, 1, 200);
            let mut w = Writer::new();
            res.emit(&mut w).unwrap();
            let b = w.into_inner();
            prop_assert_eq!(AlarmCrBlockRes::parse(&BlockView::new_checked(&b).unwrap()).unwrap(), res);
        }
    }
}

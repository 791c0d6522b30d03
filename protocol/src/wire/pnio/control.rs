//! The control blocks of PNIO-CM Control (opnum 4) and Release (opnum 1): IODControlReq/Res
//! (PrmEnd, 0x0110/0x8110; plug 0x0111/0x8111), IOXBlockReq/Res (ApplicationReady,
//! 0x0112/0x8112; plug 0x0113/0x8113), IODReleaseReq/Res (0x0114/0x8114), IOXControlReq/Res
//! ReadyForCompanion (0x0116/0x8116) and ReadyForRT_CLASS_3 (0x0117/0x8117), PrmBeginReq/Res
//! (0x0118/0x8118). All share one body layout:
//!
//! ```text
//! Reserved u16, ARUUID (16), SessionKey u16, Reserved u16 (AlarmSequenceNumber in the plug
//! variants), ControlCommand u16, ControlBlockProperties u16
//! ```
//! ControlCommand bits: PrmEnd 0x0001, ApplicationReady 0x0002, Release 0x0004, Done 0x0008,
//! ReadyForCompanion 0x0010, ReadyForRT_CLASS_3 0x0020, PrmBegin 0x0040.
//! Sources: Wireshark `packet-dcerpc-pn-io.c` `dissect_ControlConnect_block` (and the block
//! type names `pn_io.block_type`), masks `pn_io.control_command.*`; p-net
//! `pf_block_reader.c` `pf_get_control` (same layout, reads the second reserved field as
//! alarm_sequence_number).

use crate::wire::field::{Reader, Writer};
use crate::wire::pnio::block::{BlockBody, BlockView};
use crate::wire::pnio::cm::util;
use crate::wire::rpc::Uuid;
use crate::wire::{Error, Result};

/// Block types of the control blocks (requests; the response is `| 0x8000`).
pub mod block_type {
    pub const PRM_END_REQ: u16 = 0x0110;
    pub const PRM_END_RES: u16 = 0x8110;
    pub const PLUG_PRM_END_REQ: u16 = 0x0111;
    pub const PLUG_PRM_END_RES: u16 = 0x8111;
    pub const APPLICATION_READY_REQ: u16 = 0x0112;
    pub const APPLICATION_READY_RES: u16 = 0x8112;
    pub const PLUG_APPLICATION_READY_REQ: u16 = 0x0113;
    pub const PLUG_APPLICATION_READY_RES: u16 = 0x8113;
    pub const RELEASE_REQ: u16 = 0x0114;
    pub const RELEASE_RES: u16 = 0x8114;
    pub const READY_FOR_COMPANION_REQ: u16 = 0x0116;
    pub const READY_FOR_COMPANION_RES: u16 = 0x8116;
    pub const READY_FOR_RTC3_REQ: u16 = 0x0117;
    pub const READY_FOR_RTC3_RES: u16 = 0x8117;
    pub const PRM_BEGIN_REQ: u16 = 0x0118;
    pub const PRM_BEGIN_RES: u16 = 0x8118;
}

/// ControlCommand bits.
pub mod command {
    pub const PRM_END: u16 = 0x0001;
    pub const APPLICATION_READY: u16 = 0x0002;
    pub const RELEASE: u16 = 0x0004;
    pub const DONE: u16 = 0x0008;
    pub const READY_FOR_COMPANION: u16 = 0x0010;
    pub const READY_FOR_RTC3: u16 = 0x0020;
    pub const PRM_BEGIN: u16 = 0x0040;
}

/// True for every block type with the control body layout.
pub fn is_control_block_type(t: u16) -> bool {
    matches!(t & 0x7fff, 0x0110..=0x0114 | 0x0116..=0x0118)
}

/// A control block (request or response, see [`block_type`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ControlBlock {
    pub block_type: u16,
    pub version: (u8, u8),
    pub reserved1: u16,
    pub ar_uuid: Uuid,
    pub session_key: u16,
    /// Reserved (0) in the connect variants; AlarmSequenceNumber in the plug variants.
    pub alarm_sequence_number: u16,
    pub command: u16,
    pub properties: u16,
}

impl ControlBlock {
    fn new(block_type: u16, ar_uuid: Uuid, session_key: u16, command: u16) -> ControlBlock {
        ControlBlock {
            block_type,
            version: (1, 0),
            reserved1: 0,
            ar_uuid,
            session_key,
            alarm_sequence_number: 0,
            command,
            properties: 0,
        }
    }
    /// IODControlReq PrmEnd (controller -> device).
    pub fn prm_end_req(ar_uuid: Uuid, session_key: u16) -> ControlBlock {
        Self::new(
            block_type::PRM_END_REQ,
            ar_uuid,
            session_key,
            command::PRM_END,
        )
    }
    /// IOXBlockReq ApplicationReady (device -> controller).
    pub fn application_ready_req(ar_uuid: Uuid, session_key: u16) -> ControlBlock {
        Self::new(
            block_type::APPLICATION_READY_REQ,
            ar_uuid,
            session_key,
            command::APPLICATION_READY,
        )
    }
    /// IODReleaseReq (controller -> device).
    pub fn release_req(ar_uuid: Uuid, session_key: u16) -> ControlBlock {
        Self::new(
            block_type::RELEASE_REQ,
            ar_uuid,
            session_key,
            command::RELEASE,
        )
    }
    /// PrmBeginReq (controller -> device).
    pub fn prm_begin_req(ar_uuid: Uuid, session_key: u16) -> ControlBlock {
        Self::new(
            block_type::PRM_BEGIN_REQ,
            ar_uuid,
            session_key,
            command::PRM_BEGIN,
        )
    }
    /// The positive response to this request: block type | 0x8000, ControlCommand Done,
    /// ControlBlockProperties 0, other fields echoed.
    pub fn response(&self) -> ControlBlock {
        ControlBlock {
            block_type: self.block_type | 0x8000,
            command: command::DONE,
            properties: 0,
            ..*self
        }
    }
    pub fn is_request(&self) -> bool {
        self.block_type & 0x8000 == 0
    }

    pub fn parse(block: &BlockView<'_>) -> Result<ControlBlock> {
        let t = block.block_type();
        if !is_control_block_type(t) {
            return Err(Error::Malformed("not a control block type"));
        }
        util::expect(block, t)?;
        let mut r = Reader::new(block.body());
        let c = ControlBlock {
            block_type: t,
            version: util::version(block),
            reserved1: r.u16()?,
            ar_uuid: util::uuid(&mut r)?,
            session_key: r.u16()?,
            alarm_sequence_number: r.u16()?,
            command: r.u16()?,
            properties: r.u16()?,
        };
        util::finish(&r)?;
        Ok(c)
    }
}

impl BlockBody for ControlBlock {
    fn block_type(&self) -> u16 {
        self.block_type
    }
    fn block_version(&self) -> (u8, u8) {
        self.version
    }
    fn body_len(&self) -> usize {
        26
    }
    fn emit_body(&self, w: &mut Writer) -> Result<()> {
        if !is_control_block_type(self.block_type) {
            return Err(Error::Malformed("not a control block type"));
        }
        w.u16(self.reserved1)
            .bytes(&self.ar_uuid.0)
            .u16(self.session_key)
            .u16(self.alarm_sequence_number)
            .u16(self.command)
            .u16(self.properties);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Emit;
    use proptest::prelude::*;

    #[test]
    fn request_response() {
        let r = ControlBlock::prm_end_req(Uuid([1; 16]), 2);
        let mut w = Writer::new();
        r.emit(&mut w).unwrap();
        let b = w.into_inner();
        assert_eq!(&b[..6], &[0x01, 0x10, 0x00, 0x1c, 1, 0]);
        assert_eq!(b.len(), 32);
        let p = ControlBlock::parse(&BlockView::new_checked(&b).unwrap()).unwrap();
        assert_eq!(p, r);
        let res = p.response();
        assert_eq!((res.block_type, res.command), (0x8110, command::DONE));
        assert!(!res.is_request());
        assert!(is_control_block_type(0x8118) && !is_control_block_type(0x0115));
    }

    proptest! {
        #[test]
        fn parse_never_panics(data in proptest::collection::vec(any::<u8>(), 0..60)) {
            if let Ok(v) = BlockView::new_checked(&data) {
                let _ = ControlBlock::parse(&v);
            }
        }

        #[test]
        fn round_trip(t in prop::sample::select(vec![0x0110u16, 0x0111, 0x0112, 0x0113, 0x0114, 0x0116, 0x0117, 0x0118]),
                      res in any::<bool>(), u in any::<[u8; 16]>(), sk in any::<u16>(), a in any::<u16>(),
                      c in any::<u16>(), p in any::<u16>()) {
            let cb = ControlBlock { block_type: if res { t | 0x8000 } else { t }, version: (1, 0), reserved1: 0,
                ar_uuid: Uuid(u), session_key: sk, alarm_sequence_number: a, command: c, properties: p };
            let mut w = Writer::new();
            cb.emit(&mut w).unwrap();
            let b = w.into_inner();
            prop_assert_eq!(ControlBlock::parse(&BlockView::new_checked(&b).unwrap()).unwrap(), cb);
        }
    }
}

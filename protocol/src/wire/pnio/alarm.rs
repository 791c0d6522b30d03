//! Alarms: AlarmNotification (block 0x0001 high / 0x0002 low) and AlarmAck (0x8001 high /
//! 0x8002 low), the blocks carried in the VarPart of a DATA-RTA-PDU (see `wire::rta`).
//!
//! ```text
//! AlarmNotification v1.0: AlarmType u16, API u32, SlotNumber u16, SubslotNumber u16,
//!     ModuleIdentNumber u32, SubmoduleIdentNumber u32, AlarmSpecifier u16,
//!     [UserStructureIdentifier u16, AlarmItem data...]
//! AlarmAck v1.0: AlarmType u16, API u32, SlotNumber u16, SubslotNumber u16,
//!     AlarmSpecifier u16, PNIOStatus (4)
//! AlarmSpecifier: bits 0-10 SequenceNumber, bit 11 ChannelDiagnosis, bit 12
//!     ManufacturerSpecificDiagnosis, bit 13 SubmoduleDiagnosisState, bit 15 ARDiagnosisState
//! ```
//!
//! Source: Wireshark `packet-dcerpc-pn-io.c` `dissect_Alarm_header`,
//! `dissect_Alarm_specifier`, `dissect_AlarmNotification_block`, `dissect_Alarm_ack_block`,
//! value table `pn_io_alarm_type`; p-net `src/common/pf_alarm.c`; real frames
//! `pniors-alarm-*-notif-*.hex`.
//!
//! Fuzz entry point: [`AlarmPdu::parse`].

use crate::wire::field::{Reader, Writer};
use crate::wire::pnio::block::{BlockBody, BlockView};
use crate::wire::pnio::diagnosis::UserStructure;
use crate::wire::pnio::PnioStatus;
use crate::wire::{Emit, Error, Result};

pub mod block_type {
    pub const ALARM_NOTIFICATION_HIGH: u16 = 0x0001;
    pub const ALARM_NOTIFICATION_LOW: u16 = 0x0002;
    pub const ALARM_ACK_HIGH: u16 = 0x8001;
    pub const ALARM_ACK_LOW: u16 = 0x8002;
}

/// AlarmType values (Wireshark `pn_io_alarm_type`).
pub mod alarm_type {
    pub const DIAGNOSIS: u16 = 0x0001;
    pub const PROCESS: u16 = 0x0002;
    pub const PULL: u16 = 0x0003;
    pub const PLUG: u16 = 0x0004;
    pub const STATUS: u16 = 0x0005;
    pub const UPDATE: u16 = 0x0006;
    pub const REDUNDANCY: u16 = 0x0007;
    pub const CONTROLLED_BY_SUPERVISOR: u16 = 0x0008;
    pub const RELEASED: u16 = 0x0009;
    pub const PLUG_WRONG_SUBMODULE: u16 = 0x000A;
    pub const RETURN_OF_SUBMODULE: u16 = 0x000B;
    pub const DIAGNOSIS_DISAPPEARS: u16 = 0x000C;
    pub const MULTICAST_COMMUNICATION_MISMATCH: u16 = 0x000D;
    pub const PORT_DATA_CHANGE: u16 = 0x000E;
    pub const SYNC_DATA_CHANGED: u16 = 0x000F;
    pub const ISOCHRONOUS_MODE_PROBLEM: u16 = 0x0010;
    pub const NETWORK_COMPONENT_PROBLEM: u16 = 0x0011;
    pub const TIME_DATA_CHANGED: u16 = 0x0012;
    pub const DYNAMIC_FRAME_PACKING_PROBLEM: u16 = 0x0013;
    pub const UPLOAD_AND_RETRIEVAL: u16 = 0x001E;
    pub const PULL_MODULE: u16 = 0x001F;
}

/// The alarm priority, which selects the block types and the RTA channel (FrameID 0xFC01
/// high, 0xFE01 low).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AlarmPriority {
    High,
    Low,
}

impl AlarmPriority {
    pub fn notification_block_type(self) -> u16 {
        match self {
            AlarmPriority::High => block_type::ALARM_NOTIFICATION_HIGH,
            AlarmPriority::Low => block_type::ALARM_NOTIFICATION_LOW,
        }
    }
    pub fn ack_block_type(self) -> u16 {
        match self {
            AlarmPriority::High => block_type::ALARM_ACK_HIGH,
            AlarmPriority::Low => block_type::ALARM_ACK_LOW,
        }
    }
}

/// AlarmSpecifier (u16 bit field).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct AlarmSpecifier(pub u16);

impl AlarmSpecifier {
    pub const fn new(
        sequence_number: u16,
        channel_diagnosis: bool,
        manufacturer_specific_diagnosis: bool,
        submodule_diagnosis_state: bool,
        ar_diagnosis_state: bool,
    ) -> Self {
        AlarmSpecifier(
            (sequence_number & 0x07FF)
                | ((channel_diagnosis as u16) << 11)
                | ((manufacturer_specific_diagnosis as u16) << 12)
                | ((submodule_diagnosis_state as u16) << 13)
                | ((ar_diagnosis_state as u16) << 15),
        )
    }
    /// 11-bit alarm sequence number (0..=0x7FF, wraps).
    pub const fn sequence_number(self) -> u16 {
        self.0 & 0x07FF
    }
    pub const fn channel_diagnosis(self) -> bool {
        self.0 & 0x0800 != 0
    }
    pub const fn manufacturer_specific_diagnosis(self) -> bool {
        self.0 & 0x1000 != 0
    }
    pub const fn submodule_diagnosis_state(self) -> bool {
        self.0 & 0x2000 != 0
    }
    pub const fn ar_diagnosis_state(self) -> bool {
        self.0 & 0x8000 != 0
    }
    /// The next 11-bit alarm sequence number.
    pub const fn next_sequence_number(seq: u16) -> u16 {
        (seq + 1) & 0x07FF
    }
}

/// AlarmNotification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlarmNotificationRepr {
    pub priority: AlarmPriority,
    pub alarm_type: u16,
    pub api: u32,
    pub slot: u16,
    pub subslot: u16,
    pub module_ident: u32,
    pub submodule_ident: u32,
    pub specifier: AlarmSpecifier,
    /// UserStructureIdentifier and AlarmItem; `None` when the block ends after the
    /// AlarmSpecifier.
    pub item: Option<UserStructure>,
}

impl AlarmNotificationRepr {
    fn parse_body(priority: AlarmPriority, body: &[u8]) -> Result<Self> {
        let mut r = Reader::new(body);
        let alarm_type = r.u16()?;
        let api = r.u32()?;
        let slot = r.u16()?;
        let subslot = r.u16()?;
        let module_ident = r.u32()?;
        let submodule_ident = r.u32()?;
        let specifier = AlarmSpecifier(r.u16()?);
        let item = if r.is_empty() {
            None
        } else {
            let usi = r.u16()?;
            Some(UserStructure::parse(usi, r.rest()))
        };
        Ok(AlarmNotificationRepr {
            priority,
            alarm_type,
            api,
            slot,
            subslot,
            module_ident,
            submodule_ident,
            specifier,
            item,
        })
    }

    /// The AlarmAck answering this notification with `status` (OK for a positive ack).
    pub fn ack(&self, status: PnioStatus) -> AlarmAckRepr {
        AlarmAckRepr {
            priority: self.priority,
            alarm_type: self.alarm_type,
            api: self.api,
            slot: self.slot,
            subslot: self.subslot,
            specifier: self.specifier,
            status,
        }
    }
}

/// AlarmAck.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AlarmAckRepr {
    pub priority: AlarmPriority,
    pub alarm_type: u16,
    pub api: u32,
    pub slot: u16,
    pub subslot: u16,
    pub specifier: AlarmSpecifier,
    pub status: PnioStatus,
}

impl AlarmAckRepr {
    pub const BODY_LEN: usize = 16;

    fn parse_body(priority: AlarmPriority, body: &[u8]) -> Result<Self> {
        let mut r = Reader::new(body);
        let a = AlarmAckRepr {
            priority,
            alarm_type: r.u16()?,
            api: r.u32()?,
            slot: r.u16()?,
            subslot: r.u16()?,
            specifier: AlarmSpecifier(r.u16()?),
            status: PnioStatus::from_bytes(r.bytes(4)?)?,
        };
        if !r.is_empty() {
            return Err(Error::Malformed("bytes after AlarmAck"));
        }
        Ok(a)
    }

    /// True when this acknowledges `n` (same priority, type, address and sequence number).
    pub fn acknowledges(&self, n: &AlarmNotificationRepr) -> bool {
        self.priority == n.priority
            && self.alarm_type == n.alarm_type
            && self.api == n.api
            && self.slot == n.slot
            && self.subslot == n.subslot
            && self.specifier.sequence_number() == n.specifier.sequence_number()
    }
}

/// What the VarPart of a DATA-RTA-PDU carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AlarmPdu {
    Notification(AlarmNotificationRepr),
    Ack(AlarmAckRepr),
}

impl AlarmPdu {
    /// Parse one alarm block (bytes after the block are ignored, as the RTA VarPartLen bounds
    /// the block). Fuzz entry point.
    pub fn parse(buf: &[u8]) -> Result<Self> {
        let b = BlockView::new_checked(buf)?;
        let h = b.header();
        if h.version_high != 1 || h.version_low != 0 {
            return Err(Error::Unsupported("alarm block version other than 1.0"));
        }
        match h.block_type {
            block_type::ALARM_NOTIFICATION_HIGH => {
                AlarmNotificationRepr::parse_body(AlarmPriority::High, b.body())
                    .map(AlarmPdu::Notification)
            }
            block_type::ALARM_NOTIFICATION_LOW => {
                AlarmNotificationRepr::parse_body(AlarmPriority::Low, b.body())
                    .map(AlarmPdu::Notification)
            }
            block_type::ALARM_ACK_HIGH => {
                AlarmAckRepr::parse_body(AlarmPriority::High, b.body()).map(AlarmPdu::Ack)
            }
            block_type::ALARM_ACK_LOW => {
                AlarmAckRepr::parse_body(AlarmPriority::Low, b.body()).map(AlarmPdu::Ack)
            }
            _ => Err(Error::Unsupported("not an alarm block type")),
        }
    }

    pub fn priority(&self) -> AlarmPriority {
        match self {
            AlarmPdu::Notification(n) => n.priority,
            AlarmPdu::Ack(a) => a.priority,
        }
    }
}

impl BlockBody for AlarmNotificationRepr {
    fn block_type(&self) -> u16 {
        self.priority.notification_block_type()
    }
    fn block_version(&self) -> (u8, u8) {
        (1, 0)
    }
    fn body_len(&self) -> usize {
        20 + self.item.as_ref().map_or(0, Emit::buffer_len)
    }
    fn emit_body(&self, w: &mut Writer) -> Result<()> {
        w.u16(self.alarm_type)
            .u32(self.api)
            .u16(self.slot)
            .u16(self.subslot)
            .u32(self.module_ident)
            .u32(self.submodule_ident)
            .u16(self.specifier.0);
        match &self.item {
            Some(i) => i.emit(w),
            None => Ok(()),
        }
    }
}

impl BlockBody for AlarmAckRepr {
    fn block_type(&self) -> u16 {
        self.priority.ack_block_type()
    }
    fn block_version(&self) -> (u8, u8) {
        (1, 0)
    }
    fn body_len(&self) -> usize {
        Self::BODY_LEN
    }
    fn emit_body(&self, w: &mut Writer) -> Result<()> {
        w.u16(self.alarm_type)
            .u32(self.api)
            .u16(self.slot)
            .u16(self.subslot)
            .u16(self.specifier.0);
        self.status.emit(w)
    }
}

impl Emit for AlarmPdu {
    fn buffer_len(&self) -> usize {
        match self {
            AlarmPdu::Notification(n) => n.buffer_len(),
            AlarmPdu::Ack(a) => a.buffer_len(),
        }
    }

    fn emit(&self, w: &mut Writer) -> Result<()> {
        match self {
            AlarmPdu::Notification(n) => n.emit(w),
            AlarmPdu::Ack(a) => a.emit(w),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::pnio::diagnosis::{ChannelProperties, ExtChannelDiagnosis};
    use proptest::prelude::*;

    /// VarPart of pniors-alarm-low-notif-diag-pnet.hex.
    const PNET_DIAG: [u8; 40] = [
        0x00, 0x02, 0x00, 0x24, 0x01, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00,
        0x01, 0x00, 0x00, 0x00, 0x30, 0x00, 0x00, 0x01, 0x30, 0xa8, 0x00, 0x80, 0x02, 0x00, 0x04,
        0x28, 0x01, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    ];

    #[test]
    fn parses_pnet_diagnosis_alarm() {
        let AlarmPdu::Notification(n) = AlarmPdu::parse(&PNET_DIAG).unwrap() else {
            panic!("not a notification")
        };
        assert_eq!(n.priority, AlarmPriority::Low);
        assert_eq!(n.alarm_type, alarm_type::DIAGNOSIS);
        assert_eq!((n.api, n.slot, n.subslot), (0, 1, 1));
        assert_eq!((n.module_ident, n.submodule_ident), (0x30, 0x130));
        assert_eq!(n.specifier.sequence_number(), 0);
        assert!(n.specifier.channel_diagnosis());
        assert!(n.specifier.submodule_diagnosis_state());
        assert!(n.specifier.ar_diagnosis_state());
        assert!(!n.specifier.manufacturer_specific_diagnosis());
        assert_eq!(
            n.item,
            Some(UserStructure::ExtChannel(vec![ExtChannelDiagnosis {
                channel_number: 4,
                properties: ChannelProperties(0x2801),
                error_type: 1,
                ext_error_type: 0,
                ext_add_value: 0
            }]))
        );
        assert_eq!(
            AlarmPdu::Notification(n.clone()).to_bytes().unwrap(),
            PNET_DIAG.to_vec()
        );
        let ack = AlarmPdu::Ack(n.ack(PnioStatus::OK));
        let b = ack.to_bytes().unwrap();
        assert_eq!(&b[..6], &[0x80, 0x02, 0x00, 0x12, 1, 0]);
        assert_eq!(AlarmPdu::parse(&b).unwrap(), ack);
    }

    proptest! {
        #[test]
        fn parse_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..80), t in 0usize..4) {
            let _ = AlarmPdu::parse(&bytes);
            let mut b = bytes.clone();
            if b.len() >= 6 { let bt = [0x0001u16, 0x0002, 0x8001, 0x8002][t]; b[0] = (bt >> 8) as u8; b[1] = bt as u8; b[4] = 1; b[5] = 0; }
            let _ = AlarmPdu::parse(&b);
        }

        #[test]
        fn round_trip(high in any::<bool>(), at in any::<u16>(), api in any::<u32>(), slot in any::<u16>(), sub in any::<u16>(),
                      mi in any::<u32>(), si in any::<u32>(), spec in any::<u16>(), usi in 0u16..0x7FFF,
                      data in proptest::collection::vec(any::<u8>(), 0..16), has_item in any::<bool>(), st in any::<[u8; 4]>()) {
            let priority = if high { AlarmPriority::High } else { AlarmPriority::Low };
            let n = AlarmNotificationRepr { priority, alarm_type: at, api, slot, subslot: sub, module_ident: mi, submodule_ident: si,
                specifier: AlarmSpecifier(spec), item: has_item.then_some(UserStructure::Other { usi, data }) };
            let p = AlarmPdu::Notification(n.clone());
            let b = p.to_bytes().unwrap();
            prop_assert_eq!(b.len(), p.buffer_len());
            prop_assert_eq!(AlarmPdu::parse(&b).unwrap(), p);
            let a = AlarmPdu::Ack(n.ack(PnioStatus::from_bytes(&st).unwrap()));
            prop_assert_eq!(AlarmPdu::parse(&a.to_bytes().unwrap()).unwrap(), a);
        }
    }
}

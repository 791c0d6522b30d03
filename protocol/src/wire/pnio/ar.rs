//! ARBlockReq (0x0101) and ARBlockRes (0x8101): the application relation of a Connect.
//!
//! ```text
//! ARBlockReq body: ARType u16, ARUUID (16), SessionKey u16, CMInitiatorMacAdd (6),
//!   CMInitiatorObjectUUID (16), ARProperties u32, CMInitiatorActivityTimeoutFactor u16,
//!   CMInitiatorUDPRTPort u16, StationNameLength u16, CMInitiatorStationName (n)
//! ARBlockRes body: ARType u16, ARUUID (16), SessionKey u16, CMResponderMacAdd (6),
//!   CMResponderUDPRTPort u16
//! ```
//! All big-endian; UUIDs in canonical byte order. ARProperties bits: Wireshark field masks
//! `pn_io.ar_properties.*` (tshark 4.0 `-G fields`) and p-net `pf_get_ar_param()`.
//! Sources: Wireshark `packet-dcerpc-pn-io.c` `dissect_ARBlockReq_block`,
//! `dissect_ARBlockRes_block`; p-net `src/device/pf_block_reader.c` `pf_get_ar_param`.

use crate::wire::field::{Reader, Writer};
use crate::wire::pnio::block::{BlockBody, BlockView};
use crate::wire::pnio::cm::util;
use crate::wire::rpc::Uuid;
use crate::wire::{Error, Result};

pub const BLOCK_TYPE_REQ: u16 = 0x0101;
pub const BLOCK_TYPE_RES: u16 = 0x8101;

/// ARType values (Wireshark `pn_io_ar_type`).
pub mod ar_type {
    /// IO controller AR (IOCARSingle).
    pub const IOCAR: u16 = 0x0001;
    /// IOCAR with configuration in run (CiR).
    pub const IOCAR_CIR: u16 = 0x0003;
    /// IO supervisor AR / DeviceAccess AR.
    pub const IOSAR: u16 = 0x0006;
    /// IO controller AR using RT_CLASS_3.
    pub const IOCAR_RTC3: u16 = 0x0010;
    /// IO controller AR for system redundancy.
    pub const IOCAR_SR: u16 = 0x0020;
}

/// ARProperties (u32 bit field).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ArProperties(pub u32);

impl ArProperties {
    pub const STATE_MASK: u32 = 0x0000_0007;
    /// State = Active (the only defined value).
    pub const STATE_ACTIVE: u32 = 0x0000_0001;
    pub const SUPERVISOR_TAKEOVER_ALLOWED: u32 = 0x0000_0008;
    pub const PARAMETERIZATION_SERVER: u32 = 0x0000_0010;
    pub const DEVICE_ACCESS: u32 = 0x0000_0100;
    pub const COMPANION_AR_MASK: u32 = 0x0000_0600;
    pub const ACKNOWLEDGE_COMPANION_AR: u32 = 0x0000_0800;
    pub const TIME_AWARE_SYSTEM: u32 = 0x1000_0000;
    pub const COMBINED_OBJECT_CONTAINER: u32 = 0x2000_0000;
    /// StartupMode: 0 legacy, 1 advanced.
    pub const STARTUP_MODE_ADVANCED: u32 = 0x4000_0000;
    pub const PULL_MODULE_ALARM_ALLOWED: u32 = 0x8000_0000;

    pub fn state(self) -> u8 {
        (self.0 & Self::STATE_MASK) as u8
    }
    pub fn supervisor_takeover_allowed(self) -> bool {
        self.0 & Self::SUPERVISOR_TAKEOVER_ALLOWED != 0
    }
    /// ParameterizationServer: false = external, true = CM initiator.
    pub fn parameterization_server(self) -> bool {
        self.0 & Self::PARAMETERIZATION_SERVER != 0
    }
    pub fn device_access(self) -> bool {
        self.0 & Self::DEVICE_ACCESS != 0
    }
    pub fn companion_ar(self) -> u8 {
        ((self.0 & Self::COMPANION_AR_MASK) >> 9) as u8
    }
    pub fn acknowledge_companion_ar(self) -> bool {
        self.0 & Self::ACKNOWLEDGE_COMPANION_AR != 0
    }
    pub fn time_aware_system(self) -> bool {
        self.0 & Self::TIME_AWARE_SYSTEM != 0
    }
    pub fn combined_object_container(self) -> bool {
        self.0 & Self::COMBINED_OBJECT_CONTAINER != 0
    }
    pub fn startup_mode_advanced(self) -> bool {
        self.0 & Self::STARTUP_MODE_ADVANCED != 0
    }
    pub fn pull_module_alarm_allowed(self) -> bool {
        self.0 & Self::PULL_MODULE_ALARM_ALLOWED != 0
    }
}

/// ARBlockReq.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArBlockReq {
    /// BlockVersionHigh/Low (1.0).
    pub version: (u8, u8),
    pub ar_type: u16,
    pub ar_uuid: Uuid,
    pub session_key: u16,
    pub cm_initiator_mac: [u8; 6],
    pub cm_initiator_object_uuid: Uuid,
    pub properties: ArProperties,
    /// In units of 100 ms.
    pub cm_initiator_activity_timeout_factor: u16,
    /// 0x8892 for RT over Ethernet.
    pub cm_initiator_udp_rt_port: u16,
    pub cm_initiator_station_name: String,
}

impl ArBlockReq {
    pub fn parse(block: &BlockView<'_>) -> Result<ArBlockReq> {
        util::expect(block, BLOCK_TYPE_REQ)?;
        let mut r = Reader::new(block.body());
        let ar_type = r.u16()?;
        let ar_uuid = util::uuid(&mut r)?;
        let session_key = r.u16()?;
        let cm_initiator_mac = r.array::<6>()?;
        let cm_initiator_object_uuid = util::uuid(&mut r)?;
        let properties = ArProperties(r.u32()?);
        let cm_initiator_activity_timeout_factor = r.u16()?;
        let cm_initiator_udp_rt_port = r.u16()?;
        let n = usize::from(r.u16()?);
        let cm_initiator_station_name = util::string(&mut r, n)?;
        util::finish(&r)?;
        Ok(ArBlockReq {
            version: util::version(block),
            ar_type,
            ar_uuid,
            session_key,
            cm_initiator_mac,
            cm_initiator_object_uuid,
            properties,
            cm_initiator_activity_timeout_factor,
            cm_initiator_udp_rt_port,
            cm_initiator_station_name,
        })
    }
}

impl BlockBody for ArBlockReq {
    fn block_type(&self) -> u16 {
        BLOCK_TYPE_REQ
    }
    fn block_version(&self) -> (u8, u8) {
        self.version
    }
    fn body_len(&self) -> usize {
        52 + self.cm_initiator_station_name.len()
    }
    fn emit_body(&self, w: &mut Writer) -> Result<()> {
        let name_len = u16::try_from(self.cm_initiator_station_name.len())
            .map_err(|_| Error::Malformed("CMInitiatorStationName too long"))?;
        w.u16(self.ar_type)
            .bytes(&self.ar_uuid.0)
            .u16(self.session_key)
            .bytes(&self.cm_initiator_mac)
            .bytes(&self.cm_initiator_object_uuid.0)
            .u32(self.properties.0)
            .u16(self.cm_initiator_activity_timeout_factor)
            .u16(self.cm_initiator_udp_rt_port)
            .u16(name_len)
            .bytes(self.cm_initiator_station_name.as_bytes());
        Ok(())
    }
}

/// ARBlockRes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArBlockRes {
    pub version: (u8, u8),
    pub ar_type: u16,
    pub ar_uuid: Uuid,
    pub session_key: u16,
    pub cm_responder_mac: [u8; 6],
    pub cm_responder_udp_rt_port: u16,
}

impl ArBlockRes {
    /// The response to `req` from a responder with MAC `mac` (UDP-RT port 0x8892).
    pub fn to_request(req: &ArBlockReq, mac: [u8; 6]) -> ArBlockRes {
        ArBlockRes {
            version: (1, 0),
            ar_type: req.ar_type,
            ar_uuid: req.ar_uuid,
            session_key: req.session_key,
            cm_responder_mac: mac,
            cm_responder_udp_rt_port: 0x8892,
        }
    }

    pub fn parse(block: &BlockView<'_>) -> Result<ArBlockRes> {
        util::expect(block, BLOCK_TYPE_RES)?;
        let mut r = Reader::new(block.body());
        let res = ArBlockRes {
            version: util::version(block),
            ar_type: r.u16()?,
            ar_uuid: util::uuid(&mut r)?,
            session_key: r.u16()?,
            cm_responder_mac: r.array::<6>()?,
            cm_responder_udp_rt_port: r.u16()?,
        };
        util::finish(&r)?;
        Ok(res)
    }
}

impl BlockBody for ArBlockRes {
    fn block_type(&self) -> u16 {
        BLOCK_TYPE_RES
    }
    fn block_version(&self) -> (u8, u8) {
        self.version
    }
    fn body_len(&self) -> usize {
        28
    }
    fn emit_body(&self, w: &mut Writer) -> Result<()> {
        w.u16(self.ar_type)
            .bytes(&self.ar_uuid.0)
            .u16(self.session_key)
            .bytes(&self.cm_responder_mac)
            .u16(self.cm_responder_udp_rt_port);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::pnio::block::BlockView;
    use crate::wire::Emit;
    use proptest::prelude::*;

    pub(crate) fn sample_req() -> ArBlockReq {
        ArBlockReq {
            version: (1, 0),
            ar_type: ar_type::IOCAR,
            ar_uuid: Uuid([7; 16]),
            session_key: 3,
            cm_initiator_mac: [2, 0, 0, 0, 0, 1],
            cm_initiator_object_uuid: Uuid::pnio_object(1, 0x10, 0x2A),
            properties: ArProperties(
                ArProperties::STATE_ACTIVE
                    | ArProperties::PARAMETERIZATION_SERVER
                    | ArProperties::STARTUP_MODE_ADVANCED,
            ),
            cm_initiator_activity_timeout_factor: 600,
            cm_initiator_udp_rt_port: 0x8892,
            cm_initiator_station_name: "plc".into(),
        }
    }

    #[test]
    fn round_trip_and_bits() {
        let req = sample_req();
        let mut w = Writer::new();
        req.emit(&mut w).unwrap();
        let b = w.into_inner();
        assert_eq!(b.len(), 6 + 2 + 16 + 2 + 6 + 16 + 4 + 2 + 2 + 2 + 3);
        assert_eq!(&b[2..4], &((b.len() - 4) as u16).to_be_bytes());
        let v = BlockView::new_checked(&b).unwrap();
        assert_eq!(ArBlockReq::parse(&v).unwrap(), req);
        assert!(req.properties.startup_mode_advanced());
        assert!(req.properties.parameterization_server());
        assert_eq!(req.properties.state(), 1);
        assert!(ArBlockRes::parse(&v).is_err());
        // Trailing byte inside the block body is rejected.
        let mut t = b.clone();
        t.push(0);
        t[3] += 1;
        assert!(ArBlockReq::parse(&BlockView::new_checked(&t).unwrap()).is_err());
        let res = ArBlockRes::to_request(&req, [2, 0, 0, 0, 0, 2]);
        let mut w = Writer::new();
        res.emit(&mut w).unwrap();
        let b = w.into_inner();
        assert_eq!(b.len(), 6 + 28);
        assert_eq!(
            ArBlockRes::parse(&BlockView::new_checked(&b).unwrap()).unwrap(),
            res
        );
    }

    proptest! {
        #[test]
        fn parse_never_panics(data in proptest::collection::vec(any::<u8>(), 0..120)) {
            if let Ok(v) = BlockView::new_checked(&data) {
                let _ = ArBlockReq::parse(&v);
                let _ = ArBlockRes::parse(&v);
            }
        }

        #[test]
        fn req_round_trip(at in any::<u16>(), u in any::<[u8; 16]>(), sk in any::<u16>(), mac in any::<[u8; 6]>(),
                          p in any::<u32>(), tf in any::<u16>(), port in any::<u16>(), name in "[a-z0-9.-]{0,40}") {
            let req = ArBlockReq { version: (1, 0), ar_type: at, ar_uuid: Uuid(u), session_key: sk, cm_initiator_mac: mac,
                cm_initiator_object_uuid: Uuid(u), properties: ArProperties(p), cm_initiator_activity_timeout_factor: tf,
                cm_initiator_udp_rt_port: port, cm_initiator_station_name: name };
            let mut w = Writer::new();
            req.emit(&mut w).unwrap();
            let b = w.into_inner();
            prop_assert_eq!(ArBlockReq::parse(&BlockView::new_checked(&b).unwrap()).unwrap(), req);
        }
    }
}

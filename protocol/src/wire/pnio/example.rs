//! A typical IO AR Connect request (advanced startup, RT_CLASS_2, 1 ms, DataHoldFactor 3; a
//! DAP in slot 0 and one 1-byte in/1-byte out module in slot 1), for the simulator, the
//! benches and the tests: one example instead of a copy per user.

use crate::wire::pnio::alarm_cr::{self, AlarmCrBlockReq, AlarmCrProperties};
use crate::wire::pnio::ar::{ar_type, ArBlockReq, ArProperties};
use crate::wire::pnio::cm::ConnectRequest;
use crate::wire::pnio::expected::{
    DataDescription, ExpectedModule, ExpectedSubmodule, ExpectedSubmoduleBlockReq,
    SubmoduleProperties,
};
use crate::wire::pnio::iocr::{
    iocr_type, IoObject, IocrApi, IocrBlockReq, IocrProperties, TagHeader, LT_PNIO,
};
use crate::wire::rpc::Uuid;

/// The example request (CMInitiator "plc-sim", MAC 02:00:00:00:00:01).
pub fn connect_request() -> ConnectRequest {
    let ar = ArBlockReq {
        version: (1, 0),
        ar_type: ar_type::IOCAR,
        ar_uuid: "6a2a0e1c-9a55-4b0e-8d2e-0f1e2d3c4b5a".parse().unwrap(),
        session_key: 1,
        cm_initiator_mac: [0x02, 0x00, 0x00, 0x00, 0x00, 0x01],
        cm_initiator_object_uuid: Uuid::pnio_object(1, 0x0010, 0x002A),
        properties: ArProperties(
            ArProperties::STATE_ACTIVE
                | ArProperties::PARAMETERIZATION_SERVER
                | ArProperties::STARTUP_MODE_ADVANCED,
        ),
        cm_initiator_activity_timeout_factor: 600,
        cm_initiator_udp_rt_port: 0x8892,
        cm_initiator_station_name: "plc-sim".into(),
    };
    let iocr = |t: u16, r: u16, fid: u16| IocrBlockReq {
        version: (1, 0),
        iocr_type: t,
        iocr_reference: r,
        lt: LT_PNIO,
        // Advanced startup: RT_CLASS_2 (what S7-1500 CPUs send; class 1 is legacy-only).
        properties: IocrProperties(IocrProperties::RT_CLASS_2),
        data_length: 40,
        frame_id: fid,
        send_clock_factor: 32,
        reduction_ratio: 4,
        phase: 1,
        sequence: 0,
        frame_send_offset: 0xFFFF_FFFF,
        watchdog_factor: 3,
        data_hold_factor: 3,
        tag_header: TagHeader::new(0, 6),
        multicast_mac: [0; 6],
        apis: vec![IocrApi {
            api: 0,
            io_data_objects: vec![
                IoObject {
                    slot: 0,
                    subslot: 1,
                    frame_offset: 0,
                },
                IoObject {
                    slot: 1,
                    subslot: 1,
                    frame_offset: 1,
                },
            ],
            iocs: vec![IoObject {
                slot: 2,
                subslot: 1,
                frame_offset: 3,
            }],
        }],
    };
    let mut req = ConnectRequest::new(ar);
    req.iocrs.push(iocr(iocr_type::INPUT, 1, 0x8001));
    req.iocrs.push(iocr(iocr_type::OUTPUT, 2, 0xFFFF));
    req.alarm_cr = Some(AlarmCrBlockReq {
        version: (1, 0),
        alarm_cr_type: alarm_cr::ALARM_CR_TYPE,
        lt: LT_PNIO,
        properties: AlarmCrProperties(0),
        rta_timeout_factor: 1,
        rta_retries: 3,
        local_alarm_reference: 1,
        max_alarm_data_length: 200,
        tag_header_high: TagHeader::new(0, 6),
        tag_header_low: TagHeader::new(0, 5),
    });
    req.expected.push(ExpectedSubmoduleBlockReq {
        version: (1, 0),
        modules: vec![
            ExpectedModule {
                api: 0,
                slot: 0,
                module_ident: 0x0000_0001,
                module_properties: 0,
                submodules: vec![ExpectedSubmodule {
                    subslot: 1,
                    submodule_ident: 1,
                    properties: SubmoduleProperties(SubmoduleProperties::TYPE_NO_IO),
                    descriptions: vec![DataDescription::input(0)],
                }],
            },
            ExpectedModule {
                api: 0,
                slot: 1,
                module_ident: 0x0000_0032,
                module_properties: 0,
                submodules: vec![ExpectedSubmodule {
                    subslot: 1,
                    submodule_ident: 0x0132,
                    properties: SubmoduleProperties(SubmoduleProperties::TYPE_INPUT_OUTPUT),
                    descriptions: vec![DataDescription::input(1), DataDescription::output(1)],
                }],
            },
        ],
    });
    req
}

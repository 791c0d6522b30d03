//! The Connect request (AR, IOCRs, alarm CR, expected submodules) and the Connect response to it
//! that the tests encode and compare with tshark's dissection.

use crate::frames::*;
use pn_protocol::wire::pnio::alarm_cr::{
    AlarmCrBlockReq, AlarmCrBlockRes, AlarmCrProperties, ALARM_CR_TYPE,
};
use pn_protocol::wire::pnio::ar::{ar_type, ArBlockReq, ArBlockRes, ArProperties};
use pn_protocol::wire::pnio::cm::{ConnectRequest, ConnectResponse};
use pn_protocol::wire::pnio::expected::{
    DataDescription, ExpectedModule, ExpectedSubmodule, ExpectedSubmoduleBlockReq,
    SubmoduleProperties,
};
use pn_protocol::wire::pnio::iocr::{
    iocr_type, IoObject, IocrApi, IocrBlockReq, IocrBlockRes, IocrProperties, TagHeader, LT_PNIO,
};
use pn_protocol::wire::pnio::module_diff::{
    ar_info, ident_info, module_state, DiffApi, DiffModule, DiffSubmodule, ModuleDiffBlock,
    SubmoduleState,
};
use pn_protocol::wire::rpc::Uuid;

pub(crate) fn connect_request() -> ConnectRequest {
    let ar = ArBlockReq {
        version: (1, 0),
        ar_type: ar_type::IOCAR,
        ar_uuid: ar_uuid(),
        session_key: 7,
        cm_initiator_mac: CTRL_MAC,
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
    let iocr = |t: u16, r: u16, fid: u16, objs: Vec<IoObject>, iocs: Vec<IoObject>| IocrBlockReq {
        version: (1, 0),
        iocr_type: t,
        iocr_reference: r,
        lt: LT_PNIO,
        properties: IocrProperties(IocrProperties::RT_CLASS_2),
        data_length: 40,
        frame_id: fid,
        send_clock_factor: 32,
        reduction_ratio: 4 * t,
        phase: 1,
        sequence: 0,
        frame_send_offset: 0xFFFF_FFFF,
        watchdog_factor: 3,
        data_hold_factor: 3 + t,
        tag_header: TagHeader::new(0, 6),
        multicast_mac: [0; 6],
        apis: vec![IocrApi {
            api: 0,
            io_data_objects: objs,
            iocs,
        }],
    };
    let o = |slot, subslot, frame_offset| IoObject {
        slot,
        subslot,
        frame_offset,
    };
    let mut req = ConnectRequest::new(ar);
    req.iocrs.push(iocr(
        iocr_type::INPUT,
        1,
        0x8001,
        vec![o(0, 1, 0), o(0, 0x8000, 1), o(1, 1, 2)],
        vec![o(2, 1, 4)],
    ));
    req.iocrs.push(iocr(
        iocr_type::OUTPUT,
        2,
        0xFFFF,
        vec![o(2, 1, 0)],
        vec![o(1, 1, 2)],
    ));
    req.alarm_cr = Some(AlarmCrBlockReq {
        version: (1, 0),
        alarm_cr_type: ALARM_CR_TYPE,
        lt: LT_PNIO,
        properties: AlarmCrProperties(0),
        rta_timeout_factor: 1,
        rta_retries: 3,
        local_alarm_reference: 1,
        max_alarm_data_length: 200,
        tag_header_high: TagHeader::new(0, 6),
        tag_header_low: TagHeader::new(0, 5),
    });
    let sub = |ss, id, ty, d: Vec<DataDescription>| ExpectedSubmodule {
        subslot: ss,
        submodule_ident: id,
        properties: SubmoduleProperties(ty),
        descriptions: d,
    };
    req.expected.push(ExpectedSubmoduleBlockReq {
        version: (1, 0),
        modules: vec![
            ExpectedModule {
                api: 0,
                slot: 0,
                module_ident: 0x0000_0001,
                module_properties: 0,
                submodules: vec![
                    sub(
                        1,
                        0x0001,
                        SubmoduleProperties::TYPE_NO_IO,
                        vec![DataDescription::input(0)],
                    ),
                    sub(
                        0x8000,
                        0x0002,
                        SubmoduleProperties::TYPE_NO_IO,
                        vec![DataDescription::input(0)],
                    ),
                ],
            },
            ExpectedModule {
                api: 0,
                slot: 1,
                module_ident: 0x0000_0030,
                module_properties: 0,
                submodules: vec![sub(
                    1,
                    0x0130,
                    SubmoduleProperties::TYPE_INPUT,
                    vec![DataDescription::input(1)],
                )],
            },
            ExpectedModule {
                api: 0,
                slot: 2,
                module_ident: 0x0000_0032,
                module_properties: 0,
                submodules: vec![sub(
                    1,
                    0x0132,
                    SubmoduleProperties::TYPE_INPUT_OUTPUT,
                    vec![DataDescription::input(1), DataDescription::output(2)],
                )],
            },
        ],
    });
    req
}

pub(crate) fn connect_response(req: &ConnectRequest) -> ConnectResponse {
    ConnectResponse {
        ar: Some(ArBlockRes::to_request(&req.ar, DEV_MAC)),
        iocrs: vec![
            IocrBlockRes::to_request(&req.iocrs[0], 0x8001),
            IocrBlockRes::to_request(&req.iocrs[1], 0x8002),
        ],
        alarm_cr: req
            .alarm_cr
            .as_ref()
            .map(|a| AlarmCrBlockRes::to_request(a, 3, 200)),
        module_diff: Some(ModuleDiffBlock {
            version: (1, 0),
            apis: vec![DiffApi {
                api: 0,
                modules: vec![
                    DiffModule {
                        slot: 1,
                        module_ident: 0x31,
                        module_state: module_state::WRONG_MODULE,
                        submodules: vec![DiffSubmodule {
                            subslot: 1,
                            submodule_ident: 0x0131,
                            state: SubmoduleState::new(ar_info::OWN, ident_info::WRONG),
                        }],
                    },
                    DiffModule {
                        slot: 2,
                        module_ident: 0x32,
                        module_state: module_state::PROPER_MODULE,
                        submodules: vec![DiffSubmodule {
                            subslot: 1,
                            submodule_ident: 0x0132,
                            state: SubmoduleState::new(
                                ar_info::APPLICATION_READY_PENDING,
                                ident_info::OK,
                            ),
                        }],
                    },
                ],
            }],
        }),
        other: vec![],
        wire_order: vec![],
    }
}

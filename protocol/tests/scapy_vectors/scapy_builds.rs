//! (a) scapy builds, we parse: DCP identify/set, cyclic frames, the connect request, PrmEnd,
//! read/write request headers and LLDP.

use crate::scapy::*;
use pn_protocol::wire::dcp::{DcpRepr, DcpValue, NameOfStation, ServiceId, ServiceType};
use pn_protocol::wire::ethernet::MacAddr;
use pn_protocol::wire::lldp::{LldpRepr, Tlv};
use pn_protocol::wire::pnio::alarm_cr::{AlarmCrProperties, ALARM_CR_TYPE};
use pn_protocol::wire::pnio::cm::{ConnectRequest, ControlMessage};
use pn_protocol::wire::pnio::control::ControlBlock;
use pn_protocol::wire::pnio::expected::DataDescription;
use pn_protocol::wire::pnio::iocr::{IoObject, IocrApi};
use pn_protocol::wire::pnio::record::{RecordAddress, RecordPdu, WriteBody};
use pn_protocol::wire::rpc::{opnum, Drep, Uuid};
use pn_protocol::wire::rt::{self, CyclicFrame, DataStatus, FrameId};
use serde_json::{json, Value};
use std::net::Ipv4Addr;
use std::str::FromStr;

#[test]
fn scapy_dcp_identify_all_request_parses() {
    if !require_scapy() {
        return;
    }
    let f = scapy_build(
        "dcp_ident_req",
        json!({"xid": 0x1234_5678u32, "response_delay": 7}),
    );
    let (eth, id, dcp) = DcpRepr::parse_frame(&f).expect("parse scapy frame");
    assert_eq!(eth.dst, MacAddr([0x01, 0x0e, 0xcf, 0, 0, 0]));
    assert_eq!(id, FrameId::DCP_IDENTIFY_REQUEST);
    assert_eq!(dcp, DcpRepr::identify_request_all(0x1234_5678, 7));
}

#[test]
fn scapy_dcp_identify_by_name_request_parses() {
    if !require_scapy() {
        return;
    }
    let f = scapy_build("dcp_ident_req", json!({"xid": 9, "name": "dev-1"}));
    let (_, _, dcp) = DcpRepr::parse_frame(&f).expect("parse scapy frame");
    let name = NameOfStation::new("dev-1").expect("valid name");
    assert_eq!(dcp, DcpRepr::identify_request_by_name(9, &name, 1));
}

#[test]
fn scapy_dcp_identify_response_parses() {
    if !require_scapy() {
        return;
    }
    let f = scapy_build(
        "dcp_ident_res",
        json!({"xid": 77, "name": "plc-a.line-1", "ip": "192.168.0.5", "mask": "255.255.255.0",
               "gw": "192.168.0.1", "vendor_id": 0x002a, "device_id": 0x0407, "vendor": "ACME IO",
               "role": 1}),
    );
    let (_, id, dcp) = DcpRepr::parse_frame(&f).expect("parse scapy frame");
    assert_eq!(id, FrameId::DCP_IDENTIFY_RESPONSE);
    assert_eq!(dcp.service_id, ServiceId::Identify);
    assert_eq!(dcp.service_type, ServiceType::ResponseSuccess);
    assert_eq!(dcp.xid, 77);
    let values: Vec<_> = dcp
        .blocks
        .iter()
        .map(|b| (b.prefix, b.value.clone()))
        .collect();
    assert_eq!(
        values,
        vec![
            (0, DcpValue::DeviceVendor(b"ACME IO".to_vec())),
            (0, DcpValue::NameOfStation(b"plc-a.line-1".to_vec())),
            (
                0,
                DcpValue::DeviceId {
                    vendor_id: 0x002a,
                    device_id: 0x0407
                }
            ),
            (
                0,
                DcpValue::DeviceRole {
                    role: 1,
                    reserved: 0
                }
            ),
            (
                1,
                DcpValue::IpParameter {
                    ip: Ipv4Addr::new(192, 168, 0, 5),
                    mask: Ipv4Addr::new(255, 255, 255, 0),
                    gateway: Ipv4Addr::new(192, 168, 0, 1),
                }
            ),
        ]
    );
}

#[test]
fn scapy_dcp_set_name_and_ip_parse() {
    if !require_scapy() {
        return;
    }
    let f = scapy_build(
        "dcp_set_name",
        json!({"xid": 2, "name": "plc-x", "qualifier": 1}),
    );
    let (_, id, dcp) = DcpRepr::parse_frame(&f).expect("parse set name");
    assert_eq!(id, FrameId::DCP_GET_SET);
    let name = NameOfStation::new("plc-x").expect("valid name");
    assert_eq!(dcp, DcpRepr::set_name(2, &name, true));

    let f = scapy_build(
        "dcp_set_ip",
        json!({"xid": 3, "ip": "10.0.0.5", "mask": "255.0.0.0", "gw": "10.0.0.1", "qualifier": 0}),
    );
    let (_, _, dcp) = DcpRepr::parse_frame(&f).expect("parse set ip");
    assert_eq!(
        dcp,
        DcpRepr::set_ip(
            3,
            Ipv4Addr::new(10, 0, 0, 5),
            Ipv4Addr::new(255, 0, 0, 0),
            Ipv4Addr::new(10, 0, 0, 1),
            false
        )
    );
}

#[test]
fn scapy_cyclic_frame_parses() {
    if !require_scapy() {
        return;
    }
    let data: Vec<u8> = (0u8..40).collect();
    let f = scapy_build(
        "rt_cyclic",
        json!({"frame_id": 0x8001, "data": hex::encode(&data), "cycle_counter": 0xBEEF,
               "data_status": 0x35, "transfer_status": 0}),
    );
    let (_, id, _) = rt::parse_rt_frame(&f).expect("RT frame");
    assert_eq!(id, FrameId(0x8001));
    let c = CyclicFrame::new_checked(&f[14..]).expect("cyclic view");
    assert_eq!(c.c_sdu(), &data[..]);
    assert_eq!(c.cycle_counter(), 0xBEEF);
    assert_eq!(c.data_status(), DataStatus::RUNNING);
    assert_eq!(c.transfer_status(), 0);
}

fn connect_params() -> Value {
    json!({
        "ar_uuid": AR_UUID, "session_key": 3, "cm_mac": "02:00:00:00:00:01",
        "cm_object_uuid": CM_OBJECT_UUID, "activity_timeout": 600, "station": "ctrl-sim",
        "args_max": 16696,
        "iocrs": [
            {"type": 1, "reference": 1, "data_length": 40, "frame_id": 0x8001, "send_clock": 32,
             "reduction": 4, "phase": 1, "watchdog": 3, "data_hold": 3, "rt_class": 2,
             "data_objects": [[1, 1, 0], [2, 1, 5]], "iocs": [[2, 1, 6]]},
            {"type": 2, "reference": 2, "data_length": 40, "frame_id": 0xFFFF, "send_clock": 32,
             "reduction": 4, "phase": 1, "watchdog": 3, "data_hold": 3, "rt_class": 2,
             "data_objects": [[2, 1, 0]], "iocs": [[1, 1, 0], [2, 1, 3]]}
        ],
        "rta_timeout": 1, "rta_retries": 3, "alarm_ref": 0x0001, "max_alarm_len": 200,
        "modules": [
            {"slot": 1, "ident": 0x100, "submodules": [
                {"subslot": 1, "ident": 0x101, "type": 1, "data": [[1, 4]]}]},
            {"slot": 2, "ident": 0x200, "submodules": [
                {"subslot": 1, "ident": 0x201, "type": 3, "data": [[1, 2], [2, 2]]}]}
        ]
    })
}

#[test]
fn scapy_connect_request_blocks_parse() {
    if !require_scapy() {
        return;
    }
    for endian in ["big", "little"] {
        let mut params = connect_params();
        params["endian"] = json!(endian);
        let f = scapy_build("connect_req", params);
        let (h, req) = rpc_request_of(&f);
        assert_eq!(h.opnum, opnum::CONNECT);
        assert_eq!(
            h.drep,
            if endian == "big" {
                Drep::BIG_ENDIAN
            } else {
                Drep::LITTLE_ENDIAN
            }
        );
        assert_eq!(req.args_maximum, 16696);
        let c = ConnectRequest::parse(&req.data).expect("Connect request");
        assert_eq!(c.ar.ar_type, 1);
        assert_eq!(c.ar.ar_uuid, Uuid::from_str(AR_UUID).unwrap());
        assert_eq!(c.ar.session_key, 3);
        assert_eq!(c.ar.cm_initiator_mac, [2, 0, 0, 0, 0, 1]);
        assert_eq!(
            c.ar.cm_initiator_object_uuid,
            Uuid::from_str(CM_OBJECT_UUID).unwrap()
        );
        assert_eq!(c.ar.properties.state(), 1);
        assert!(!c.ar.properties.parameterization_server());
        assert_eq!(c.ar.cm_initiator_activity_timeout_factor, 600);
        assert_eq!(c.ar.cm_initiator_udp_rt_port, 0x8892);
        assert_eq!(c.ar.cm_initiator_station_name, "ctrl-sim");

        assert_eq!(c.iocrs.len(), 2);
        let i = &c.iocrs[0];
        assert_eq!((i.iocr_type, i.iocr_reference, i.lt), (1, 1, 0x8892));
        assert_eq!(i.properties.rt_class(), 2);
        assert_eq!((i.data_length, i.frame_id), (40, 0x8001));
        assert_eq!(
            (i.send_clock_factor, i.reduction_ratio, i.phase),
            (32, 4, 1)
        );
        assert_eq!(i.frame_send_offset, 0xFFFF_FFFF);
        assert_eq!((i.watchdog_factor, i.data_hold_factor), (3, 3));
        assert_eq!((i.tag_header.priority(), i.tag_header.vlan_id()), (6, 0));
        assert_eq!(i.multicast_mac, [0x01, 0x0e, 0xcf, 0, 0, 0]);
        assert_eq!(
            i.apis,
            vec![IocrApi {
                api: 0,
                io_data_objects: vec![
                    IoObject {
                        slot: 1,
                        subslot: 1,
                        frame_offset: 0
                    },
                    IoObject {
                        slot: 2,
                        subslot: 1,
                        frame_offset: 5
                    }
                ],
                iocs: vec![IoObject {
                    slot: 2,
                    subslot: 1,
                    frame_offset: 6
                }],
            }]
        );
        assert_eq!(c.iocrs[1].iocr_type, 2);
        assert_eq!(c.iocrs[1].apis[0].iocs.len(), 2);

        let a = c.alarm_cr.expect("AlarmCRBlockReq");
        assert_eq!((a.alarm_cr_type, a.lt), (ALARM_CR_TYPE, 0x8892));
        assert_eq!(a.properties, AlarmCrProperties(0));
        assert_eq!((a.rta_timeout_factor, a.rta_retries), (1, 3));
        assert_eq!((a.local_alarm_reference, a.max_alarm_data_length), (1, 200));
        assert_eq!((a.tag_header_high.0, a.tag_header_low.0), (0xC000, 0xA000));

        assert_eq!(c.expected.len(), 1);
        let m = &c.expected[0].modules;
        assert_eq!(m.len(), 2);
        assert_eq!((m[0].api, m[0].slot, m[0].module_ident), (0, 1, 0x100));
        assert_eq!(m[0].submodules[0].subslot, 1);
        assert_eq!(m[0].submodules[0].submodule_ident, 0x101);
        assert_eq!(m[0].submodules[0].properties.io_type(), 1);
        assert_eq!(
            m[0].submodules[0].descriptions,
            vec![DataDescription::input(4)]
        );
        assert_eq!(
            m[1].submodules[0].descriptions,
            vec![DataDescription::input(2), DataDescription::output(2)]
        );
    }
}

#[test]
fn scapy_prm_end_parses() {
    if !require_scapy() {
        return;
    }
    let f = scapy_build("prmend", json!({"ar_uuid": AR_UUID, "session_key": 5}));
    let (h, req) = rpc_request_of(&f);
    assert_eq!(h.opnum, opnum::CONTROL);
    let m = ControlMessage::parse(&req.data).expect("control");
    assert_eq!(
        m.control,
        ControlBlock::prm_end_req(Uuid::from_str(AR_UUID).unwrap(), 5)
    );
    assert!(m.other.is_empty());
}

#[test]
fn scapy_read_and_write_request_headers_parse() {
    if !require_scapy() {
        return;
    }
    let f = scapy_build(
        "read_req",
        json!({"seq_num": 4, "ar_uuid": AR_UUID, "api": 0, "slot": 1, "subslot": 1,
               "index": 0xAFF0, "length": 4068}),
    );
    let (h, req) = rpc_request_of(&f);
    assert_eq!(h.opnum, opnum::READ);
    match RecordPdu::parse(&req.data).expect("record") {
        RecordPdu::ReadReq(r) => {
            assert_eq!(r.header.seq_number, 4);
            assert_eq!(r.header.ar_uuid, Uuid::from_str(AR_UUID).unwrap().0);
            assert_eq!(r.header.address, RecordAddress::new(0, 1, 1, 0xAFF0));
            assert_eq!(r.header.record_data_length, 4068);
        }
        other => panic!("not a read request: {other:?}"),
    }

    let f = scapy_build(
        "write_req",
        json!({"seq_num": 5, "ar_uuid": AR_UUID, "api": 0, "slot": 2, "subslot": 1,
               "index": 0x0001, "data": "0a0b0c0d0e"}),
    );
    let (h, req) = rpc_request_of(&f);
    assert_eq!(h.opnum, opnum::WRITE);
    match RecordPdu::parse(&req.data).expect("record") {
        RecordPdu::WriteReq(w) => {
            assert_eq!(w.header.seq_number, 5);
            assert_eq!(w.header.address, RecordAddress::new(0, 2, 1, 1));
            assert_eq!(w.header.record_data_length, 5);
            assert_eq!(
                w.body,
                WriteBody::Single(vec![0x0a, 0x0b, 0x0c, 0x0d, 0x0e])
            );
        }
        other => panic!("not a write request: {other:?}"),
    }
}

#[test]
fn scapy_lldp_parses() {
    if !require_scapy() {
        return;
    }
    let f = scapy_build(
        "lldp",
        json!({"chassis": "dev-1", "port": "port-001", "ttl": 20, "system_name": "sys"}),
    );
    let (eth, l) = LldpRepr::parse_frame(&f).expect("LLDP frame");
    assert_eq!(eth.src, SRC);
    assert_eq!(
        l.tlvs,
        vec![
            Tlv::ChassisId {
                subtype: 7,
                id: b"dev-1".to_vec()
            },
            Tlv::PortId {
                subtype: 7,
                id: b"port-001".to_vec()
            },
            Tlv::Ttl(20),
            Tlv::SystemName(b"sys".to_vec()),
            Tlv::End,
        ]
    );
}

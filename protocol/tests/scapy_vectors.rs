//! scapy as a second independent oracle (besides tshark): (a) scapy builds a frame from given
//! parameters and our codec must parse the same field values out of it; (b) our codec emits a
//! frame and scapy's dissection must show the field values we encoded.
//!
//! The scapy side is `tests/scapy/pn_scapy.py` (scapy.contrib.pnio, pnio_dcp, pnio_rpc, lldp).
//! Under `CI=true` a missing python3/scapy fails these tests; locally they are skipped with a
//! message. Where scapy itself builds something wrong, the builder works around it and
//! docs/protocol-notes/fuzz-scapy.md records the disagreement and who is right.

use pn_protocol::wire::dcp::{DcpBlock, DcpRepr, DcpValue, NameOfStation, ServiceId, ServiceType};
use pn_protocol::wire::ethernet::{EthernetRepr, MacAddr};
use pn_protocol::wire::ip::{udp_frame, UdpFrame};
use pn_protocol::wire::lldp::{LldpRepr, Tlv};
use pn_protocol::wire::pnio::alarm_cr::{AlarmCrBlockReq, AlarmCrProperties, ALARM_CR_TYPE};
use pn_protocol::wire::pnio::ar::{ArBlockReq, ArProperties};
use pn_protocol::wire::pnio::cm::{ConnectRequest, ControlMessage};
use pn_protocol::wire::pnio::control::{command, ControlBlock};
use pn_protocol::wire::pnio::expected::{
    DataDescription, ExpectedModule, ExpectedSubmodule, ExpectedSubmoduleBlockReq,
    SubmoduleProperties,
};
use pn_protocol::wire::pnio::iocr::{IoObject, IocrApi, IocrBlockReq, IocrProperties, TagHeader};
use pn_protocol::wire::pnio::record::{
    ReadReqHeaderRepr, ReadRequest, RecordAddress, RecordPdu, WriteBody, WriteRequest,
};
use pn_protocol::wire::rpc::{opnum, Drep, PnioRequest, RpcHeader, RpcPacket, Uuid};
use pn_protocol::wire::rt::{self, ApduStatus, CyclicFrame, DataStatus, FrameId};
use pn_protocol::wire::Emit;
use serde_json::{json, Value};
use std::io::Write;
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::str::FromStr;

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/scapy/pn_scapy.py")
}

/// True when python3 with scapy (and its PROFINET contrib layers) is installed. Looked up with
/// `find_spec` instead of importing them: importing scapy costs about a second of CPU, and every
/// test of this file runs this check in a process of its own (nextest); a broken installation
/// still fails the test at the script's own import.
fn has_scapy() -> bool {
    Command::new("python3")
        .args([
            "-c",
            "import importlib.util as u, sys; sys.exit(0 if all(u.find_spec(m) for m in \
             ['scapy', 'scapy.contrib.pnio', 'scapy.contrib.pnio_dcp', 'scapy.contrib.pnio_rpc', \
             'scapy.contrib.lldp']) else 1)",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

/// `pn_testkit::env::require` semantics: under CI=true a missing scapy panics, locally the test
/// is skipped with a message.
fn require_scapy() -> bool {
    pn_testkit::env::require(
        has_scapy(),
        "python3 with scapy >= 2.5 (pip install -r ci/requirements.txt)",
    )
}

/// Have scapy build `kind` from `params`; returns the frame bytes.
fn scapy_build(kind: &str, params: Value) -> Vec<u8> {
    let out = Command::new("python3")
        .arg(script())
        .args(["build", kind, &params.to_string()])
        .output()
        .expect("run python3");
    assert!(
        out.status.success(),
        "scapy build {kind} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    hex::decode(String::from_utf8_lossy(&out.stdout).trim()).expect("scapy printed hex")
}

/// Have scapy dissect `frame`; returns its layer list.
fn scapy_dissect(frame: &[u8]) -> Vec<Value> {
    let mut child = Command::new("python3")
        .arg(script())
        .arg("dissect")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run python3");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(hex::encode(frame).as_bytes())
        .expect("write hex");
    let out = child.wait_with_output().expect("scapy dissect");
    assert!(
        out.status.success(),
        "scapy dissect failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    match serde_json::from_slice(&out.stdout).expect("scapy printed JSON") {
        Value::Array(v) => v,
        other => panic!("unexpected scapy output {other}"),
    }
}

/// The fields of the first layer named `name`.
fn layer<'a>(layers: &'a [Value], name: &str) -> &'a Value {
    layers
        .iter()
        .find(|l| l["layer"] == name)
        .map(|l| &l["fields"])
        .unwrap_or_else(|| panic!("scapy found no {name} layer in {layers:?}"))
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not an integer: {v}"))
}

/// A scapy bytes value (printed as hex) as text.
fn text(v: &Value) -> String {
    let h = v.as_str().unwrap_or_else(|| panic!("not a string: {v}"));
    String::from_utf8(hex::decode(h).expect("hex")).expect("utf-8")
}

fn mac(s: &str) -> [u8; 6] {
    let mut m = [0u8; 6];
    for (i, p) in s.split(':').enumerate() {
        m[i] = u8::from_str_radix(p, 16).expect("mac");
    }
    m
}

const SRC: MacAddr = MacAddr([0x02, 0, 0, 0, 0, 0x01]);
const DST: MacAddr = MacAddr([0x02, 0, 0, 0, 0, 0x02]);
const AR_UUID: &str = "7c74224e-166c-4a58-bf6b-6c25a75870f0";
const CM_OBJECT_UUID: &str = "dea00000-6c97-11d1-8271-0001003c00b0";

// ---------------------------------------------------------------------------------------------
// (a) scapy builds, we parse

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

/// The RPC request in a UDP frame: header, parsed PNIO request.
fn rpc_request_of(frame: &[u8]) -> (RpcHeader, PnioRequest) {
    let udp = UdpFrame::parse(frame).expect("UDP frame");
    assert!(udp.ip_checksum_ok && udp.udp_checksum_ok);
    let p = RpcPacket::parse(udp.payload).expect("RPC packet");
    let req = PnioRequest::parse(&p.body, p.header.drep).expect("PNIO request");
    (p.header, req)
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

// ---------------------------------------------------------------------------------------------
// (b) we emit, scapy dissects

fn dcp_fields(frame: &[u8]) -> (Vec<Value>, Value) {
    let layers = scapy_dissect(frame);
    let d = layer(&layers, "ProfinetDCP").clone();
    (layers, d)
}

#[test]
fn our_dcp_identify_requests_dissect_in_scapy() {
    if !require_scapy() {
        return;
    }
    let f = DcpRepr::identify_request_all(0xCAFE_0001, 255)
        .build_frame(MacAddr([0x01, 0x0e, 0xcf, 0, 0, 0]), SRC, None)
        .expect("emit");
    let (layers, d) = dcp_fields(&f);
    assert_eq!(u(&layer(&layers, "ProfinetIO")["frameID"]), 0xFEFE);
    assert_eq!(u(&d["service_id"]), 5);
    assert_eq!(u(&d["service_type"]), 0);
    assert_eq!(u(&d["xid"]), 0xCAFE_0001);
    assert_eq!(u(&d["reserved"]), 255, "ResponseDelayFactor");
    assert_eq!(u(&d["dcp_data_length"]), 4);
    assert_eq!((u(&d["option"]), u(&d["sub_option"])), (255, 255));
    assert_eq!(u(&d["dcp_block_length"]), 0);

    let name = NameOfStation::new("io-dev-7").expect("valid");
    let f = DcpRepr::identify_request_by_name(3, &name, 1)
        .build_frame(MacAddr([0x01, 0x0e, 0xcf, 0, 0, 0]), SRC, None)
        .expect("emit");
    let (_, d) = dcp_fields(&f);
    assert_eq!((u(&d["option"]), u(&d["sub_option"])), (2, 2));
    assert_eq!(u(&d["dcp_block_length"]), 8);
    assert_eq!(u(&d["dcp_data_length"]), 12);
    assert_eq!(text(&d["name_of_station"]), "io-dev-7");
}

#[test]
fn our_dcp_identify_response_dissects_in_scapy() {
    if !require_scapy() {
        return;
    }
    let blocks = vec![
        DcpBlock::with_info(DcpValue::DeviceVendor(b"pn-toolkit".to_vec()), 0),
        DcpBlock::with_info(DcpValue::NameOfStation(b"io-dev-7".to_vec()), 0),
        DcpBlock::with_info(
            DcpValue::DeviceId {
                vendor_id: 0x1234,
                device_id: 0x0001,
            },
            0,
        ),
        DcpBlock::with_info(
            DcpValue::DeviceRole {
                role: 1,
                reserved: 0,
            },
            0,
        ),
        DcpBlock::with_info(
            DcpValue::IpParameter {
                ip: Ipv4Addr::new(192, 168, 1, 20),
                mask: Ipv4Addr::new(255, 255, 255, 0),
                gateway: Ipv4Addr::new(192, 168, 1, 1),
            },
            1,
        ),
        DcpBlock::with_info(DcpValue::DeviceInstance { high: 0, low: 1 }, 0),
    ];
    let f = DcpRepr::identify_response(0x42, blocks)
        .build_frame(DST, SRC, None)
        .expect("emit");
    let (layers, d) = dcp_fields(&f);
    assert_eq!(u(&layer(&layers, "ProfinetIO")["frameID"]), 0xFEFF);
    assert_eq!((u(&d["service_id"]), u(&d["service_type"])), (5, 1));
    assert_eq!(u(&d["xid"]), 0x42);
    let b = d["dcp_blocks"].as_array().expect("dcp_blocks");
    let kinds: Vec<&str> = b.iter().map(|x| x["_layer"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "DCPManufacturerSpecificBlock",
            "DCPNameOfStationBlock",
            "DCPDeviceIDBlock",
            "DCPDeviceRoleBlock",
            "DCPIPBlock",
            "DCPDeviceInstanceBlock"
        ]
    );
    assert_eq!(text(&b[0]["device_vendor_value"]), "pn-toolkit");
    assert_eq!(text(&b[1]["name_of_station"]), "io-dev-7");
    assert_eq!((u(&b[2]["vendor_id"]), u(&b[2]["device_id"])), (0x1234, 1));
    assert_eq!(u(&b[3]["device_role_details"]), 1);
    assert_eq!(u(&b[4]["block_info"]), 1);
    assert_eq!(b[4]["ip"], "192.168.1.20");
    assert_eq!(b[4]["netmask"], "255.255.255.0");
    assert_eq!(b[4]["gateway"], "192.168.1.1");
    assert_eq!(u(&b[4]["dcp_block_length"]), 14);
    assert_eq!(
        (
            u(&b[5]["device_instance_high"]),
            u(&b[5]["device_instance_low"])
        ),
        (0, 1)
    );
    // Block lengths as scapy read them add up to DCPDataLength (padding included).
    let sum: u64 = b
        .iter()
        .map(|x| {
            let l = u(&x["dcp_block_length"]);
            4 + l + (l & 1)
        })
        .sum();
    assert_eq!(sum, u(&d["dcp_data_length"]));
}

#[test]
fn our_dcp_set_requests_dissect_in_scapy() {
    if !require_scapy() {
        return;
    }
    let name = NameOfStation::new("plc-x").expect("valid");
    let f = DcpRepr::set_name(11, &name, true)
        .build_frame(DST, SRC, None)
        .expect("emit");
    let (layers, d) = dcp_fields(&f);
    assert_eq!(u(&layer(&layers, "ProfinetIO")["frameID"]), 0xFEFD);
    assert_eq!((u(&d["service_id"]), u(&d["service_type"])), (4, 0));
    assert_eq!(u(&d["xid"]), 11);
    assert_eq!((u(&d["option"]), u(&d["sub_option"])), (2, 2));
    assert_eq!(u(&d["block_qualifier"]), 1);
    assert_eq!(u(&d["dcp_block_length"]), 7);
    assert_eq!(text(&d["name_of_station"]), "plc-x");

    let f = DcpRepr::set_ip(
        12,
        Ipv4Addr::new(10, 1, 2, 3),
        Ipv4Addr::new(255, 255, 0, 0),
        Ipv4Addr::new(10, 1, 0, 1),
        false,
    )
    .build_frame(DST, SRC, None)
    .expect("emit");
    let (_, d) = dcp_fields(&f);
    assert_eq!((u(&d["option"]), u(&d["sub_option"])), (1, 2));
    assert_eq!(u(&d["block_qualifier"]), 0);
    assert_eq!(u(&d["dcp_block_length"]), 14);
    assert_eq!(u(&d["dcp_data_length"]), 18);
    assert_eq!(d["ip"], "10.1.2.3");
    assert_eq!(d["netmask"], "255.255.0.0");
    assert_eq!(d["gateway"], "10.1.0.1");
}

#[test]
fn our_cyclic_frame_dissects_in_scapy() {
    if !require_scapy() {
        return;
    }
    let data: Vec<u8> = (0u8..40).map(|b| b ^ 0x5a).collect();
    let eth = EthernetRepr {
        dst: DST,
        src: SRC,
        vlan: None,
        ethertype: 0x8892,
    };
    let status = ApduStatus {
        cycle_counter: 0x1234,
        data_status: DataStatus::RUNNING,
        transfer_status: 0,
    };
    let mut buf = [0u8; 128];
    let n = rt::fill_cyclic_frame(&mut buf, &eth, FrameId(0x8002), &data, status).expect("emit");
    let layers = scapy_dissect(&buf[..n]);
    assert_eq!(u(&layer(&layers, "ProfinetIO")["frameID"]), 0x8002);
    let c = layer(&layers, "PNIORealTimeCyclicPDU");
    assert_eq!(u(&c["cycleCounter"]), 0x1234);
    assert_eq!(u(&c["dataStatus"]), 0x35);
    assert_eq!(u(&c["transferStatus"]), 0);
    let d = c["data"].as_array().expect("data list");
    assert_eq!(d.len(), 1);
    assert_eq!(d[0]["data"], hex::encode(&data));
}

fn our_rpc_frame(op: u16, drep: Drep, ndr: Vec<u8>) -> Vec<u8> {
    let h = RpcHeader::request(
        drep,
        Uuid::from_str("dea00000-6c97-11d1-8271-000100010001").unwrap(),
        pn_protocol::wire::rpc::PNIO_DEVICE_INTERFACE,
        Uuid::from_str("11223344-5566-7788-99aa-bbccddeeff00").unwrap(),
        7,
        op,
    );
    let body = PnioRequest::new(16696, ndr)
        .ndr(drep)
        .to_bytes()
        .expect("NDR");
    let pkt = RpcPacket::new(h, body).to_bytes().expect("RPC");
    udp_frame(
        SRC.0,
        DST.0,
        Ipv4Addr::new(192, 168, 0, 1),
        Ipv4Addr::new(192, 168, 0, 2),
        0xC001,
        0x8894,
        &pkt,
    )
    .expect("UDP frame")
}

fn our_connect_request() -> ConnectRequest {
    let ar = ArBlockReq {
        version: (1, 0),
        ar_type: 1,
        ar_uuid: Uuid::from_str(AR_UUID).unwrap(),
        session_key: 9,
        cm_initiator_mac: SRC.0,
        cm_initiator_object_uuid: Uuid::from_str(CM_OBJECT_UUID).unwrap(),
        properties: ArProperties(0x4000_0011),
        cm_initiator_activity_timeout_factor: 100,
        cm_initiator_udp_rt_port: 0x8892,
        cm_initiator_station_name: "controller-1".into(),
    };
    let mut c = ConnectRequest::new(ar);
    c.iocrs.push(IocrBlockReq {
        version: (1, 0),
        iocr_type: 1,
        iocr_reference: 1,
        lt: 0x8892,
        properties: IocrProperties(2),
        data_length: 40,
        frame_id: 0x8003,
        send_clock_factor: 32,
        reduction_ratio: 8,
        phase: 1,
        sequence: 0,
        frame_send_offset: 0xFFFF_FFFF,
        watchdog_factor: 3,
        data_hold_factor: 5,
        tag_header: TagHeader::new(0, 6),
        multicast_mac: [0x01, 0x0e, 0xcf, 0, 0, 0],
        apis: vec![IocrApi {
            api: 0,
            io_data_objects: vec![IoObject {
                slot: 1,
                subslot: 1,
                frame_offset: 0,
            }],
            iocs: vec![IoObject {
                slot: 2,
                subslot: 1,
                frame_offset: 9,
            }],
        }],
    });
    c.alarm_cr = Some(AlarmCrBlockReq {
        version: (1, 0),
        alarm_cr_type: ALARM_CR_TYPE,
        lt: 0x8892,
        properties: AlarmCrProperties(0),
        rta_timeout_factor: 2,
        rta_retries: 4,
        local_alarm_reference: 0x0003,
        max_alarm_data_length: 200,
        tag_header_high: TagHeader(0xC000),
        tag_header_low: TagHeader(0xA000),
    });
    c.expected.push(ExpectedSubmoduleBlockReq {
        version: (1, 0),
        modules: vec![ExpectedModule {
            api: 0,
            slot: 1,
            module_ident: 0x0000_0100,
            module_properties: 0,
            submodules: vec![ExpectedSubmodule {
                subslot: 1,
                submodule_ident: 0x0000_0101,
                properties: SubmoduleProperties(SubmoduleProperties::TYPE_INPUT_OUTPUT),
                descriptions: vec![DataDescription::input(8), DataDescription::output(4)],
            }],
        }],
    });
    c
}

fn blocks_of(layers: &[Value]) -> Vec<Value> {
    layer(layers, "PNIOServiceReqPDU")["blocks"]
        .as_array()
        .expect("blocks")
        .clone()
}

#[test]
fn our_connect_request_dissects_in_scapy() {
    if !require_scapy() {
        return;
    }
    let c = our_connect_request();
    for drep in [Drep::BIG_ENDIAN, Drep::LITTLE_ENDIAN] {
        let f = our_rpc_frame(opnum::CONNECT, drep, c.to_bytes().expect("emit connect"));
        let layers = scapy_dissect(&f);
        let r = layer(&layers, "DceRpc4");
        assert_eq!(u(&r["ptype"]), 0);
        assert_eq!(u(&r["opnum"]), 0);
        assert_eq!(u(&r["seqnum"]), 7);
        assert_eq!(
            u(&r["endian"]),
            if drep == Drep::BIG_ENDIAN { 0 } else { 1 }
        );
        assert_eq!(r["if_id"], "dea00001-6c97-11d1-8271-00a02442df7d");
        assert_eq!(r["act_id"], "11223344-5566-7788-99aa-bbccddeeff00");
        let s = layer(&layers, "PNIOServiceReqPDU");
        assert_eq!(u(&s["args_max"]), 16696);
        assert_eq!(u(&s["max_count"]), 16696);
        assert_eq!(u(&s["offset"]), 0);
        assert_eq!(u(&s["args_length"]), u(&s["actual_count"]));

        let b = blocks_of(&layers);
        let kinds: Vec<&str> = b.iter().map(|x| x["_layer"].as_str().unwrap()).collect();
        assert_eq!(
            kinds,
            [
                "ARBlockReq",
                "IOCRBlockReq",
                "ExpectedSubmoduleBlockReq",
                "AlarmCRBlockReq"
            ]
        );
        let ar = &b[0];
        assert_eq!(u(&ar["block_type"]), 0x0101);
        assert_eq!(u(&ar["ARType"]), 1);
        assert_eq!(ar["ARUUID"], AR_UUID);
        assert_eq!(u(&ar["SessionKey"]), 9);
        assert_eq!(mac(ar["CMInitiatorMacAdd"].as_str().unwrap()), SRC.0);
        assert_eq!(ar["CMInitiatorObjectUUID"], CM_OBJECT_UUID);
        assert_eq!(u(&ar["ARProperties_State"]), 1);
        assert_eq!(u(&ar["ARProperties_ParametrizationServer"]), 1);
        assert_eq!(u(&ar["ARProperties_StartupMode"]), 1);
        assert_eq!(u(&ar["CMInitiatorActivityTimeoutFactor"]), 100);
        assert_eq!(u(&ar["CMInitiatorUDPRTPort"]), 0x8892);
        assert_eq!(u(&ar["StationNameLength"]), 12);
        assert_eq!(text(&ar["CMInitiatorStationName"]), "controller-1");

        let io = &b[1];
        assert_eq!(u(&io["IOCRType"]), 1);
        assert_eq!(u(&io["IOCRReference"]), 1);
        assert_eq!(u(&io["LT"]), 0x8892);
        assert_eq!(u(&io["IOCRProperties_RTClass"]), 2);
        assert_eq!(u(&io["DataLength"]), 40);
        assert_eq!(u(&io["FrameID"]), 0x8003);
        assert_eq!(u(&io["SendClockFactor"]), 32);
        assert_eq!(u(&io["ReductionRatio"]), 8);
        assert_eq!(u(&io["Phase"]), 1);
        assert_eq!(u(&io["FrameSendOffset"]), 0xFFFF_FFFF);
        assert_eq!(u(&io["WatchdogFactor"]), 3);
        assert_eq!(u(&io["DataHoldFactor"]), 5);
        assert_eq!(u(&io["IOCRTagHeader_IOUserPriority"]), 6);
        assert_eq!(u(&io["IOCRTagHeader_IOCRVLANID"]), 0);
        assert_eq!(io["IOCRMulticastMACAdd"], "01:0e:cf:00:00:00");
        assert_eq!(u(&io["NumberOfAPIs"]), 1);
        let api = &io["APIs"][0];
        assert_eq!(u(&api["API"]), 0);
        assert_eq!(u(&api["NumberOfIODataObjects"]), 1);
        assert_eq!(u(&api["IOCSs"][0]["SlotNumber"]), 2);
        assert_eq!(u(&api["IOCSs"][0]["FrameOffset"]), 9);

        let al = &b[3];
        assert_eq!(u(&al["AlarmCRType"]), 1);
        assert_eq!(u(&al["LT"]), 0x8892);
        assert_eq!(u(&al["RTATimeoutFactor"]), 2);
        assert_eq!(u(&al["RTARetries"]), 4);
        assert_eq!(u(&al["LocalAlarmReference"]), 3);
        assert_eq!(u(&al["MaxAlarmDataLength"]), 200);
        assert_eq!(u(&al["AlarmCRTagHeaderHigh"]), 0xC000);
        assert_eq!(u(&al["AlarmCRTagHeaderLow"]), 0xA000);

        let ex = &b[2];
        assert_eq!(u(&ex["NumberOfAPIs"]), 1);
        let m = &ex["APIs"][0];
        assert_eq!(u(&m["SlotNumber"]), 1);
        assert_eq!(u(&m["ModuleIdentNumber"]), 0x100);
        assert_eq!(u(&m["NumberOfSubmodules"]), 1);
        let sm = &m["Submodules"][0];
        assert_eq!(u(&sm["SubslotNumber"]), 1);
        assert_eq!(u(&sm["SubmoduleIdentNumber"]), 0x101);
        assert_eq!(u(&sm["SubmoduleProperties_Type"]), 3);
        let dd = sm["DataDescription"].as_array().expect("descriptions");
        assert_eq!(dd.len(), 2);
        assert_eq!(
            (
                u(&dd[0]["DataDescription"]),
                u(&dd[0]["SubmoduleDataLength"])
            ),
            (1, 8)
        );
        assert_eq!(
            (
                u(&dd[1]["DataDescription"]),
                u(&dd[1]["SubmoduleDataLength"])
            ),
            (2, 4)
        );
        assert_eq!((u(&dd[1]["LengthIOCS"]), u(&dd[1]["LengthIOPS"])), (1, 1));
        // Block lengths as scapy computed them from our bytes match ours.
        for x in &b {
            assert_eq!(u(&x["block_version_high"]), 1);
        }
    }
}

#[test]
fn our_prm_end_dissects_in_scapy() {
    if !require_scapy() {
        return;
    }
    let m = ControlMessage::new(ControlBlock::prm_end_req(
        Uuid::from_str(AR_UUID).unwrap(),
        9,
    ));
    let f = our_rpc_frame(
        opnum::CONTROL,
        Drep::LITTLE_ENDIAN,
        m.to_bytes().expect("emit"),
    );
    let layers = scapy_dissect(&f);
    assert_eq!(u(&layer(&layers, "DceRpc4")["opnum"]), 4);
    let b = blocks_of(&layers);
    assert_eq!(b.len(), 1);
    let c = &b[0];
    assert_eq!(c["_layer"], "IODControlReq");
    assert_eq!(u(&c["block_type"]), 0x0110);
    assert_eq!(u(&c["block_length"]), 28);
    assert_eq!(c["ARUUID"], AR_UUID);
    assert_eq!(u(&c["SessionKey"]), 9);
    assert_eq!(u(&c["ControlCommand_PrmEnd"]), 1);
    assert_eq!(u(&c["ControlCommand_ApplicationReady"]), 0);
    assert_eq!(u(&c["ControlCommand_Done"]), 0);
    assert_eq!(u(&c["ControlBlockProperties"]), 0);
    assert_eq!(command::PRM_END, 1);
}

#[test]
fn our_read_and_write_requests_dissect_in_scapy() {
    if !require_scapy() {
        return;
    }
    // The record headers hold UUIDs as raw wire bytes.
    let ar = Uuid::from_str(AR_UUID).unwrap().0;
    let read = RecordPdu::ReadReq(ReadRequest::new(ReadReqHeaderRepr {
        seq_number: 17,
        ar_uuid: ar,
        address: RecordAddress::new(0, 1, 0x8001, 0xAFF0),
        record_data_length: 4068,
        target_ar_uuid: Uuid::NIL.0,
    }));
    let f = our_rpc_frame(
        opnum::READ,
        Drep::BIG_ENDIAN,
        read.to_bytes().expect("emit"),
    );
    let layers = scapy_dissect(&f);
    let b = blocks_of(&layers);
    let r = &b[0];
    assert_eq!(r["_layer"], "IODReadReq");
    assert_eq!(u(&r["block_type"]), 0x0009);
    assert_eq!(u(&r["block_length"]), 60);
    assert_eq!(u(&r["seqNum"]), 17);
    assert_eq!(r["ARUUID"], AR_UUID);
    assert_eq!(u(&r["API"]), 0);
    assert_eq!(u(&r["slotNumber"]), 1);
    assert_eq!(u(&r["subslotNumber"]), 0x8001);
    assert_eq!(u(&r["index"]), 0xAFF0);
    assert_eq!(u(&r["recordDataLength"]), 4068);

    let data = vec![1u8, 2, 3, 4, 5, 6];
    let write = RecordPdu::WriteReq(
        WriteRequest::single(18, ar, RecordAddress::new(0, 2, 1, 0x0100), data.clone())
            .expect("write"),
    );
    let f = our_rpc_frame(
        opnum::WRITE,
        Drep::BIG_ENDIAN,
        write.to_bytes().expect("emit"),
    );
    let layers = scapy_dissect(&f);
    let b = blocks_of(&layers);
    let w = &b[0];
    assert_eq!(w["_layer"], "IODWriteReq");
    assert_eq!(u(&w["block_type"]), 0x0008);
    assert_eq!(u(&w["seqNum"]), 18);
    assert_eq!(u(&w["slotNumber"]), 2);
    assert_eq!(u(&w["subslotNumber"]), 1);
    assert_eq!(u(&w["index"]), 0x0100);
    assert_eq!(u(&w["recordDataLength"]), 6);
    assert_eq!(w["_payload"]["load"], hex::encode(&data));
}

#[test]
fn our_lldp_dissects_in_scapy() {
    if !require_scapy() {
        return;
    }
    let l = LldpRepr {
        tlvs: vec![
            Tlv::ChassisId {
                subtype: 7,
                id: b"io-dev-7".to_vec(),
            },
            Tlv::PortId {
                subtype: 7,
                id: b"port-001".to_vec(),
            },
            Tlv::Ttl(20),
            Tlv::SystemName(b"pn-toolkit device".to_vec()),
            Tlv::End,
        ],
    };
    let f = l.build_frame(SRC).expect("emit");
    let layers = scapy_dissect(&f);
    assert_eq!(layer(&layers, "Ether")["dst"], "01:80:c2:00:00:0e");
    let c = layer(&layers, "LLDPDUChassisID");
    assert_eq!(u(&c["subtype"]), 7);
    assert_eq!(text(&c["id"]), "io-dev-7");
    let p = layer(&layers, "LLDPDUPortID");
    assert_eq!(u(&p["subtype"]), 7);
    assert_eq!(text(&p["id"]), "port-001");
    assert_eq!(u(&layer(&layers, "LLDPDUTimeToLive")["ttl"]), 20);
    assert_eq!(
        text(&layer(&layers, "LLDPDUSystemName")["system_name"]),
        "pn-toolkit device"
    );
    assert_eq!(u(&layer(&layers, "LLDPDUEndOfLLDPDU")["_length"]), 0);
}

fn multiple_write_params() -> Value {
    json!({"seq_num": 3, "ar_uuid": AR_UUID, "records": [
        {"seq_num": 4, "api": 0, "slot": 1, "subslot": 1, "index": 1, "data": "010203"},
        {"seq_num": 5, "api": 0, "slot": 2, "subslot": 1, "index": 2, "data": "0405"}
    ]})
}

#[test]
fn scapy_multiple_write_parses() {
    if !require_scapy() {
        return;
    }
    let f = scapy_build("write_multiple_req", multiple_write_params());
    let (_, req) = rpc_request_of(&f);
    let RecordPdu::WriteReq(w) = RecordPdu::parse(&req.data).expect("record") else {
        panic!("not a write request");
    };
    assert_eq!(w.header.seq_number, 3);
    assert_eq!(
        w.header.address,
        RecordAddress::new(0xFFFF_FFFF, 0xFFFF, 0xFFFF, 0xE040)
    );
    // 64 + 3 + 1 (pad to 4) + 64 + 2: no padding after the last record.
    assert_eq!(w.header.record_data_length, 134);
    let WriteBody::Multiple(recs) = &w.body else {
        panic!("not a MultipleWrite");
    };
    assert_eq!(recs.len(), 2);
    assert_eq!(recs[0].header.seq_number, 4);
    assert_eq!(recs[0].header.address, RecordAddress::new(0, 1, 1, 1));
    assert_eq!(recs[0].data, vec![1, 2, 3]);
    assert_eq!(recs[1].header.address, RecordAddress::new(0, 2, 1, 2));
    assert_eq!(recs[1].data, vec![4, 5]);
}

#[test]
fn our_multiple_write_dissects_in_scapy() {
    if !require_scapy() {
        return;
    }
    use pn_protocol::wire::pnio::record::{WriteRecord, WriteReqHeaderRepr};
    let ar = Uuid::from_str(AR_UUID).unwrap().0;
    let rec = |seq: u16, slot: u16, index: u16, data: Vec<u8>| WriteRecord {
        header: WriteReqHeaderRepr {
            seq_number: seq,
            ar_uuid: ar,
            address: RecordAddress::new(0, slot, 1, index),
            record_data_length: data.len() as u32,
        },
        data,
    };
    let w = WriteRequest::multiple(
        3,
        ar,
        vec![rec(4, 1, 1, vec![1, 2, 3]), rec(5, 2, 2, vec![4, 5])],
    )
    .expect("MultipleWrite");
    let f = our_rpc_frame(
        opnum::WRITE,
        Drep::BIG_ENDIAN,
        RecordPdu::WriteReq(w).to_bytes().expect("emit"),
    );
    let layers = scapy_dissect(&f);
    let b = blocks_of(&layers);
    let m = &b[0];
    assert_eq!(m["_layer"], "IODWriteMultipleReq");
    assert_eq!(u(&m["index"]), 0xE040);
    assert_eq!(u(&m["API"]), 0xFFFF_FFFF);
    assert_eq!(u(&m["recordDataLength"]), 134);
    let recs = m["blocks"].as_array().expect("inner records");
    assert_eq!(recs.len(), 2);
    assert_eq!(u(&recs[0]["seqNum"]), 4);
    assert_eq!(u(&recs[0]["recordDataLength"]), 3);
    assert_eq!(recs[0]["_payload"]["load"], "010203");
    assert_eq!(u(&recs[1]["slotNumber"]), 2);
    assert_eq!(u(&recs[1]["index"]), 2);
    assert_eq!(recs[1]["_payload"]["load"], "0405");
}

/// scapy fills MaximumCount with ActualCount, our encoder (and every controller in the
/// fixtures) with ArgsMaximum; both are valid NDR (MaximumCount >= ActualCount) and parse.
#[test]
fn ndr_maximum_count_conventions_both_parse() {
    if !require_scapy() {
        return;
    }
    let f = scapy_build(
        "prmend",
        json!({"ar_uuid": AR_UUID, "session_key": 5, "args_max": 1000}),
    );
    let layers = scapy_dissect(&f);
    let s = layer(&layers, "PNIOServiceReqPDU");
    assert_eq!(u(&s["args_max"]), 1000);
    assert_eq!(u(&s["max_count"]), u(&s["actual_count"]));
    let (_, req) = rpc_request_of(&f);
    assert_eq!(req.args_maximum, 1000);

    let m = ControlMessage::new(ControlBlock::prm_end_req(
        Uuid::from_str(AR_UUID).unwrap(),
        5,
    ));
    let f = our_rpc_frame(
        opnum::CONTROL,
        Drep::BIG_ENDIAN,
        m.to_bytes().expect("emit"),
    );
    let layers = scapy_dissect(&f);
    let s = layer(&layers, "PNIOServiceReqPDU");
    assert_eq!(u(&s["max_count"]), u(&s["args_max"]));
}

fn alarm_params() -> Value {
    json!({"channel": 4, "channel_properties": 0x2801, "error_type": 1,
           "ext_error_type": 0x8000, "ext_add_value": 7, "alarm_type": 1, "slot": 1,
           "subslot": 1, "module": 0x30, "submodule": 0x130, "specifier": 0xA800,
           "dst_ep": 2, "src_ep": 1, "send_seq": 0xFFFF, "ack_seq": 0xFFFE})
}

#[test]
fn scapy_alarm_notification_parses() {
    use pn_protocol::wire::pnio::alarm::AlarmPdu;
    use pn_protocol::wire::pnio::diagnosis::UserStructure;
    use pn_protocol::wire::rta::{RtaPduType, RtaRepr};
    if !require_scapy() {
        return;
    }
    let f = scapy_build("alarm_low", alarm_params());
    let (_, id, pdu) = rt::parse_rt_frame(&f).expect("RT frame");
    assert_eq!(id, FrameId::ALARM_LOW);
    let r = RtaRepr::parse(pdu).expect("RTA-PDU");
    assert_eq!((r.dst_endpoint, r.src_endpoint), (2, 1));
    assert_eq!(
        (r.pdu_type, r.version, r.window_size, r.tack),
        (RtaPduType::Data, 1, 1, true)
    );
    assert_eq!((r.send_seq, r.ack_seq), (0xFFFF, 0xFFFE));
    let AlarmPdu::Notification(n) = AlarmPdu::parse(&r.var_part).expect("alarm") else {
        panic!("not a notification");
    };
    assert_eq!((n.alarm_type, n.api, n.slot, n.subslot), (1, 0, 1, 1));
    assert_eq!((n.module_ident, n.submodule_ident), (0x30, 0x130));
    assert_eq!(n.specifier.0, 0xA800);
    let Some(UserStructure::ExtChannel(items)) = n.item else {
        panic!("not ExtChannelDiagnosis: {:?}", n.item);
    };
    assert_eq!(items.len(), 1);
    assert_eq!(
        (items[0].channel_number, items[0].properties.0),
        (4, 0x2801)
    );
    assert_eq!((items[0].error_type, items[0].ext_error_type), (1, 0x8000));
    assert_eq!(items[0].ext_add_value, 7);
}

#[test]
fn our_alarm_notification_dissects_in_scapy() {
    use pn_protocol::wire::pnio::alarm::{
        AlarmNotificationRepr, AlarmPdu, AlarmPriority, AlarmSpecifier,
    };
    use pn_protocol::wire::pnio::diagnosis::{
        ChannelProperties, ExtChannelDiagnosis, UserStructure,
    };
    use pn_protocol::wire::rta::{RtaPduType, RtaRepr};
    if !require_scapy() {
        return;
    }
    let n = AlarmNotificationRepr {
        priority: AlarmPriority::Low,
        alarm_type: 1,
        api: 0,
        slot: 1,
        subslot: 1,
        module_ident: 0x30,
        submodule_ident: 0x130,
        specifier: AlarmSpecifier(0xA801),
        item: Some(UserStructure::ExtChannel(vec![ExtChannelDiagnosis {
            channel_number: 4,
            properties: ChannelProperties(0x2801),
            error_type: 1,
            ext_error_type: 0x8000,
            ext_add_value: 7,
        }])),
    };
    let var = AlarmPdu::Notification(n).to_bytes().expect("alarm");
    let r = RtaRepr::new(RtaPduType::Data, 2, 1, 0xFFFF, 0xFFFE, var.clone());
    let mut payload = vec![0xFE, 0x01];
    payload.extend_from_slice(&r.to_bytes().expect("RTA"));
    let eth = EthernetRepr {
        dst: DST,
        src: SRC,
        vlan: None,
        ethertype: 0x8892,
    };
    let layers = scapy_dissect(&eth.build(&payload));
    let a = layer(&layers, "Alarm_Low");
    assert_eq!(
        (u(&a["AlarmDstEndpoint"]), u(&a["AlarmSrcEndpoint"])),
        (2, 1)
    );
    assert_eq!((u(&a["PDUTypeType"]), u(&a["PDUTypeVersion"])), (1, 1));
    assert_eq!(u(&a["AddFlags"]), 0x11);
    assert_eq!((u(&a["SendSeqNum"]), u(&a["AckSeqNum"])), (0xFFFF, 0xFFFE));
    assert_eq!(u(&a["VarPartLen"]), var.len() as u64);
    let s = &a["RTA_SDU"];
    assert_eq!(s["_layer"], "AlarmNotification_Low");
    assert_eq!(u(&s["block_type"]), 0x0002);
    assert_eq!(u(&s["block_length"]), var.len() as u64 - 4);
    assert_eq!(u(&s["AlarmType"]), 1);
    assert_eq!((u(&s["SlotNumber"]), u(&s["SubslotNumber"])), (1, 1));
    assert_eq!(u(&s["ModuleIdentNumber"]), 0x30);
    assert_eq!(u(&s["SubmoduleIdentNUmber"]), 0x130);
    assert_eq!(u(&s["AlarmSpecifier"]), 0xA801);
    let item = &s["AlarmPayload"][0];
    assert_eq!(u(&item["UserStructureIdentifier"]), 0x8002);
    assert_eq!(u(&item["ChannelNumber"]), 4);
    assert_eq!(u(&item["ChannelProperties"]), 0x2801);
    assert_eq!(u(&item["ChannelErrorType"]), 1);
    assert_eq!(u(&item["ExtChannelErrorType"]), 0x8000);
    assert_eq!(u(&item["ExtChannelAddValue"]), 7);
}

#[test]
fn our_dcp_set_response_dissects_in_scapy() {
    use pn_protocol::wire::dcp::BlockError;
    if !require_scapy() {
        return;
    }
    let f = DcpRepr::set_response(13, &[(2, 2, BlockError(0)), (1, 2, BlockError(3))])
        .build_frame(DST, SRC, None)
        .expect("emit");
    let (_, d) = dcp_fields(&f);
    assert_eq!((u(&d["service_id"]), u(&d["service_type"])), (4, 1));
    assert_eq!(u(&d["xid"]), 13);
    // Two Control/Response blocks of length 3, each followed by one pad byte.
    assert_eq!(u(&d["dcp_data_length"]), 16);
    let b = d["dcp_blocks"].as_array().expect("blocks");
    assert_eq!(b.len(), 2);
    for (x, (opt, sub, err)) in b.iter().zip([(2, 2, 0), (1, 2, 3)]) {
        assert_eq!(x["_layer"], "DCPControlBlock");
        assert_eq!((u(&x["option"]), u(&x["sub_option"])), (5, 4));
        assert_eq!(u(&x["dcp_block_length"]), 3);
        assert_eq!(u(&x["response"]), opt);
        assert_eq!(u(&x["response_sub_option"]), sub);
        assert_eq!(u(&x["block_error"]), err);
    }
}

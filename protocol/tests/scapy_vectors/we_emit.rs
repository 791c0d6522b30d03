//! (b) we emit, scapy dissects: DCP identify/set requests and responses, cyclic frames, the
//! connect request, PrmEnd, read/write requests and LLDP.

use crate::scapy::*;
use pn_protocol::wire::dcp::{DcpBlock, DcpRepr, DcpValue, NameOfStation};
use pn_protocol::wire::ethernet::{EthernetRepr, MacAddr};
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
    ReadReqHeaderRepr, ReadRequest, RecordAddress, RecordPdu, WriteRequest,
};
use pn_protocol::wire::rpc::{opnum, Drep, Uuid};
use pn_protocol::wire::rt::{self, ApduStatus, DataStatus, FrameId};
use pn_protocol::wire::Emit;
use std::net::Ipv4Addr;
use std::str::FromStr;

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

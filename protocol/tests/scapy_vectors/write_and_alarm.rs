//! The multiple write and the alarm notification in both directions (scapy builds/we parse and
//! we emit/scapy dissects), and the NDR MaximumCount conventions of both sides.

use crate::scapy::*;
use pn_protocol::wire::ethernet::EthernetRepr;
use pn_protocol::wire::pnio::cm::ControlMessage;
use pn_protocol::wire::pnio::control::ControlBlock;
use pn_protocol::wire::pnio::record::{RecordAddress, RecordPdu, WriteBody, WriteRequest};
use pn_protocol::wire::rpc::{opnum, Drep, Uuid};
use pn_protocol::wire::rt::{self, FrameId};
use pn_protocol::wire::Emit;
use serde_json::{json, Value};
use std::str::FromStr;

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

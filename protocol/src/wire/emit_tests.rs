//! `buffer_len()` is exact: every [`Emit`] impl of `wire/`, over representative values (empty
//! and non-empty lists, odd string lengths that exercise padding, both DREPs), emits exactly
//! as many bytes as it announces.

use super::dcp::{DcpBlock, DcpRepr, DcpValue, NameOfStation};
use super::ethernet::{EthernetRepr, MacAddr, VlanTag};
use super::ip::{Ipv4Repr, UdpDatagram, UdpRepr};
use super::lldp::{DeviceLldpConfig, LldpRepr, Tlv};
use super::pnio::alarm::AlarmSpecifier;
use super::pnio::alarm::{AlarmAckRepr, AlarmNotificationRepr, AlarmPdu, AlarmPriority};
use super::pnio::cm::tests::{sample_connect_request, sample_connect_response};
use super::pnio::cm::{CmMessage, ControlMessage, RawBlock};
use super::pnio::control::ControlBlock;
use super::pnio::diagnosis::{
    ChannelDiagnosis, ChannelProperties, DiagnosisDataRepr, ExtChannelDiagnosis,
    QualifiedChannelDiagnosis, UserStructure,
};
use super::pnio::ident::{ApiIdent, IdentificationDataRepr, ModuleIdent, SubmoduleIdent};
use super::pnio::im::SoftwareRevision;
use super::pnio::im::{FilterKind, Im0, Im0FilterData, Im1, Im2, Im3, Im4, ImRecord};
use super::pnio::pdev::{
    MultipleBlock, PdInterfaceDataReal, PdPortDataReal, PdPortStatistic, Peer,
};
use super::pnio::record::{
    ReadReqHeaderRepr, ReadRequest, ReadResponse, RecordAddress, RecordPdu, WriteRecord,
    WriteRequest, WriteResHeaderRepr, WriteResponse,
};
use super::pnio::{BlockHeader, PnioStatus};
use super::rpc::{
    Drep, FackBody, FaultBody, PacketType, PnioRequest, PnioResponse, RpcHeader, RpcPacket, Uuid,
};
use super::rt::{ApduStatus, DataStatus};
use super::rta::{RtaPduType, RtaRepr};
use super::Emit;
use std::net::Ipv4Addr;

/// Emit `v` and compare the length with `buffer_len()`.
fn check<T: Emit + ?Sized>(what: &str, v: &T) {
    let bytes = v
        .to_bytes()
        .unwrap_or_else(|e| panic!("{what}: emit failed: {e}"));
    assert_eq!(
        bytes.len(),
        v.buffer_len(),
        "{what}: buffer_len differs from emit"
    );
}

fn idents(modules: usize) -> Vec<ApiIdent> {
    let m = |i: usize| ModuleIdent {
        slot: i as u16,
        module_ident: 0x10 + i as u32,
        submodules: (0..i)
            .map(|s| SubmoduleIdent {
                subslot: s as u16 + 1,
                submodule_ident: 7,
            })
            .collect(),
    };
    vec![ApiIdent {
        api: 0,
        modules: (0..modules).map(m).collect(),
    }]
}

#[test]
fn connection_management() {
    let req = sample_connect_request();
    let res = sample_connect_response(&req);
    check(
        "BlockHeader",
        &BlockHeader::for_body(0x0101, 3, 1, 0).unwrap(),
    );
    check("ArBlockReq", &req.ar);
    for i in &req.iocrs {
        check("IocrBlockReq", i);
    }
    for e in &req.expected {
        check("ExpectedSubmoduleBlockReq", e);
    }
    check("AlarmCrBlockReq", &req.alarm_cr.unwrap());
    check("ArBlockRes", &res.ar.clone().unwrap());
    for i in &res.iocrs {
        check("IocrBlockRes", i);
    }
    check("AlarmCrBlockRes", &res.alarm_cr.unwrap());
    if let Some(m) = &res.module_diff {
        check("ModuleDiffBlock", m);
    }
    check("ConnectRequest", &req);
    check("ConnectResponse", &res);
    let raw = RawBlock::new(0x0200, (1, 0), vec![1, 2, 3]).unwrap();
    check("RawBlock", &raw);
    let mut control = ControlMessage::new(ControlBlock::prm_end_req(Uuid([1; 16]), 2));
    check("ControlBlock", &control.control);
    control.other.push(raw.clone());
    check("ControlMessage", &control);
    check("CmMessage::ConnectRequest", &CmMessage::ConnectRequest(req));
    check(
        "CmMessage::ConnectResponse",
        &CmMessage::ConnectResponse(res),
    );
    check("CmMessage::Control", &CmMessage::Control(control));
    check(
        "CmMessage::Other",
        &CmMessage::Other(vec![raw.clone(), raw]),
    );
    check("CmMessage::Other (empty)", &CmMessage::Other(Vec::new()));
}

fn user_structures() -> Vec<UserStructure> {
    let p = ChannelProperties(0x0800);
    vec![
        UserStructure::Channel(vec![ChannelDiagnosis {
            channel_number: 0x8000,
            properties: p,
            error_type: 1,
        }]),
        UserStructure::ExtChannel(vec![ExtChannelDiagnosis {
            channel_number: 1,
            properties: p,
            error_type: 2,
            ext_error_type: 3,
            ext_add_value: 4,
        }]),
        UserStructure::Qualified(vec![QualifiedChannelDiagnosis {
            channel_number: 1,
            properties: p,
            error_type: 2,
            ext_error_type: 3,
            ext_add_value: 4,
            qualifier: 5,
        }]),
        UserStructure::Other {
            usi: 0x1234,
            data: vec![1, 2, 3],
        },
        UserStructure::Channel(Vec::new()),
    ]
}

#[test]
fn diagnosis_alarms_and_identification() {
    let mut diags = Vec::new();
    for items in user_structures() {
        check("UserStructure", &items);
        for version_low in [0, 1] {
            diags.push(DiagnosisDataRepr {
                version_low,
                api: 0,
                slot: 1,
                subslot: 1,
                channel_number: 0x8000,
                channel_properties: ChannelProperties(0),
                items: items.clone(),
            });
        }
        let n = AlarmNotificationRepr {
            priority: AlarmPriority::Low,
            alarm_type: 1,
            api: 0,
            slot: 1,
            subslot: 1,
            module_ident: 2,
            submodule_ident: 3,
            specifier: AlarmSpecifier(0x0801),
            item: Some(items),
        };
        check("AlarmNotificationRepr", &n);
        check("AlarmPdu::Notification", &AlarmPdu::Notification(n));
    }
    for d in &diags {
        check("DiagnosisDataRepr", d);
    }
    check("[DiagnosisDataRepr]", diags.as_slice());
    let ack = AlarmAckRepr {
        priority: AlarmPriority::High,
        alarm_type: 1,
        api: 0,
        slot: 1,
        subslot: 1,
        specifier: AlarmSpecifier(1),
        status: PnioStatus::OK,
    };
    check("AlarmAckRepr", &ack);
    check("AlarmPdu::Ack", &AlarmPdu::Ack(ack));
    check("PnioStatus", &PnioStatus::new(0xDE, 0x80, 0xB0, 0));
    for n in 0..3 {
        let apis = idents(n);
        check("ApiIdent", &apis[0]);
        for m in &apis[0].modules {
            check("ModuleIdent", m);
        }
        check(
            "IdentificationDataRepr v1.1",
            &IdentificationDataRepr::real(apis.clone()),
        );
        let mut v0 = IdentificationDataRepr::real(apis);
        v0.version_low = 0;
        check("IdentificationDataRepr v1.0", &v0);
    }
    check("SubmoduleIdent", &idents(2)[0].modules[1].submodules[0]);
}

#[test]
fn im_and_pdev() {
    let im0 = Im0 {
        vendor_id: 0x0493,
        order_id: "12345 Abcdefghijk".into(),
        serial_number: "007".into(),
        hardware_revision: 3,
        software_revision: SoftwareRevision {
            prefix: b'V',
            functional_enhancement: 2,
            bug_fix: 0,
            internal_change: 0,
        },
        revision_counter: 0,
        profile_id: 0x1234,
        profile_specific_type: 0x5678,
        version: (1, 1),
        supported: 0x000e,
    };
    let filters: Vec<Im0FilterData> = [
        FilterKind::Submodule,
        FilterKind::Module,
        FilterKind::Device,
    ]
    .into_iter()
    .zip(0..)
    .map(|(kind, n)| Im0FilterData {
        kind,
        apis: idents(n),
    })
    .collect();
    let mut records = vec![
        ImRecord::Im0(im0),
        ImRecord::Im1(Im1 {
            tag_function: "pump".into(),
            tag_location: "hall 3".into(),
        }),
        ImRecord::Im2(Im2 {
            date: "2024-01-02 03:04".into(),
        }),
        ImRecord::Im3(Im3::default()),
        ImRecord::Im4(Im4::default()),
    ];
    records.extend(filters.iter().cloned().map(ImRecord::Filter));
    for r in &records {
        check("ImRecord", r);
    }
    for f in &filters {
        check("Im0FilterData", f);
    }
    check("[Im0FilterData]", filters.as_slice());
    for (own, peers) in [("port-001", 0), ("p", 1), ("port-0002", 2), ("", 3)] {
        let port = PdPortDataReal {
            slot: 0,
            subslot: 0x8001,
            own_port_id: own.into(),
            peers: (0..peers)
                .map(|i| Peer {
                    port_id: "port-001".repeat(i),
                    chassis_id: "plc".repeat(i + 1),
                    line_delay: 10,
                    mac: [2, 0, 0, 0, 0, i as u8],
                })
                .collect(),
            mau_type: 0x10,
            domain_boundary: 0,
            multicast_boundary: 0,
            link_port: 1,
            link: 1,
            media_type: 1,
        };
        check("PdPortDataReal", &port);
        let itf = PdInterfaceDataReal {
            chassis_id: own.repeat(peers + 1),
            mac: [2, 0, 0, 0, 0, 1],
            ip: [192, 168, 0, 2],
            netmask: [255, 255, 255, 0],
            gateway: [0; 4],
        };
        check("PdInterfaceDataReal", &itf);
        let blocks = itf.to_bytes().unwrap();
        check(
            "MultipleBlock",
            &MultipleBlock {
                api: 0,
                slot: 0,
                subslot: 0x8000,
                blocks: &blocks,
            },
        );
    }
    check("PdPortStatistic", &PdPortStatistic::default());
}

#[test]
fn records() {
    let addr = RecordAddress::new(0, 1, 1, 0xAFF0);
    let read = ReadReqHeaderRepr {
        seq_number: 1,
        ar_uuid: [1; 16],
        address: addr,
        record_data_length: 4096,
        target_ar_uuid: [0; 16],
    };
    check("ReadReqHeaderRepr", &read);
    let mut implicit = read;
    implicit.ar_uuid = [0; 16];
    implicit.target_ar_uuid = [2; 16];
    check("ReadReqHeaderRepr (implicit)", &implicit);
    let rreq = ReadRequest::new(read);
    check("ReadRequest", &rreq);
    let rres = ReadResponse::answering(&read, vec![1, 2, 3]).unwrap();
    check("ReadResHeaderRepr", &rres.header);
    check("ReadResponse", &rres);
    check("ReadResponse (empty)", &ReadResponse::empty(&read));
    let single = WriteRequest::single(2, [1; 16], addr, vec![1, 2, 3]).unwrap();
    check("WriteReqHeaderRepr", &single.header);
    check("WriteRequest (single)", &single);
    let recs = (0..3)
        .map(|n| {
            let data = vec![0xAA; n * 3 + 1];
            WriteRecord {
                header: super::pnio::record::WriteReqHeaderRepr {
                    seq_number: 3,
                    ar_uuid: [1; 16],
                    address: addr,
                    record_data_length: data.len() as u32,
                },
                data,
            }
        })
        .collect();
    let multiple = WriteRequest::multiple(3, [1; 16], recs).unwrap();
    check("WriteRequest (multiple)", &multiple);
    let statuses = vec![PnioStatus::OK; 3];
    let wres = WriteResponse::answering(&multiple, &statuses).unwrap();
    check("WriteResponse", &wres);
    check("WriteResHeaderRepr", &wres.header);
    let _: &WriteResHeaderRepr = &wres.records[0];
    for pdu in [
        RecordPdu::ReadReq(rreq),
        RecordPdu::ReadRes(rres),
        RecordPdu::WriteReq(multiple),
        RecordPdu::WriteRes(wres),
    ] {
        check("RecordPdu", &pdu);
    }
}

#[test]
fn rpc_in_both_byte_orders() {
    for drep in [Drep::LITTLE_ENDIAN, Drep::BIG_ENDIAN] {
        let h = RpcHeader::request(drep, Uuid([1; 16]), Uuid([2; 16]), Uuid([3; 16]), 7, 0);
        check("RpcHeader", &h);
        check("RpcPacket", &RpcPacket::new(h, vec![1, 2, 3]));
        let reply = RpcHeader::reply_to(&h, PacketType::Reject);
        check("RpcPacket (empty)", &RpcPacket::new(reply, Vec::new()));
        let req = PnioRequest::new(0x1000, vec![9; 7]);
        check("Ndr<PnioRequest>", &req.ndr(drep));
        let res = PnioResponse::to_request(&req, PnioStatus::OK, vec![8; 5]);
        check("Ndr<PnioResponse>", &res.ndr(drep));
        check("Ndr<FaultBody>", &FaultBody { status: 1 }.ndr(drep));
        for words in 0..3 {
            let fack = FackBody {
                version: 0,
                window_size: 1,
                max_tsdu: 1464,
                max_frag_size: 1464,
                serial_num: 2,
                selack: vec![0xff; words],
            };
            check("Ndr<FackBody>", &fack.ndr(drep));
        }
    }
}

#[test]
fn layer_2_and_udp() {
    let name = NameOfStation::new("et200sp").unwrap();
    let dcp = [
        DcpRepr::identify_request_by_name(1, &name, 1),
        DcpRepr::identify_request_all(2, 0),
        DcpRepr::get_request(3, &[(2, 2), (1, 2)]),
        DcpRepr::identify_response(
            4,
            vec![
                DcpBlock::new(DcpValue::NameOfStation(b"odd".to_vec())),
                DcpBlock::new(DcpValue::MacAddress(MacAddr([2, 0, 0, 0, 0, 1]))),
                DcpBlock::new(DcpValue::DeviceOptions(vec![(2, 2), (1, 2)])),
            ],
        ),
    ];
    for d in &dcp {
        check("DcpRepr", d);
        for b in &d.blocks {
            check("DcpValue", &b.value);
        }
    }
    let lldp: LldpRepr = DeviceLldpConfig::new(
        Some(name),
        MacAddr([2, 0, 0, 0, 0, 1]),
        Ipv4Addr::new(10, 0, 0, 2),
    )
    .build();
    for t in &lldp.tlvs {
        check("Tlv", t);
    }
    check(
        "Tlv::Other",
        &Tlv::Other {
            tlv_type: 9,
            data: vec![1; 5],
        },
    );
    check("LldpRepr", &lldp);
    for vlan in [None, Some(VlanTag::RT_CYCLIC)] {
        let eth = EthernetRepr {
            dst: MacAddr::BROADCAST,
            src: MacAddr([2, 0, 0, 0, 0, 1]),
            vlan,
            ethertype: 0x8892,
        };
        check("EthernetRepr", &eth);
    }
    let (src, dst) = (Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2));
    let udp = UdpDatagram {
        udp: UdpRepr {
            src_port: 0xC000,
            dst_port: 0x8894,
        },
        src,
        dst,
        payload: &[1, 2, 3],
    };
    check("UdpDatagram", &udp);
    check("Ipv4Repr", &Ipv4Repr::udp(src, dst, udp.buffer_len()));
    let st = ApduStatus {
        cycle_counter: 1,
        data_status: DataStatus::RUNNING,
        transfer_status: 0,
    };
    check("ApduStatus", &st);
    for var in [Vec::new(), vec![1, 2, 3]] {
        check("RtaRepr", &RtaRepr::new(RtaPduType::Data, 1, 2, 3, 4, var));
    }
    check("RtaRepr (err)", &RtaRepr::err(1, 2, 3, 4, PnioStatus::OK));
}

#[test]
fn ip_services() {
    use super::arp::{ArpRepr, Operation};
    use super::llmnr::{LlmnrRepr, Question, Record};
    use super::snmp::{pdu, Pdu, SnmpMessage, Value, VarBind};
    let mac = MacAddr([2, 0, 0, 0, 0, 1]);
    check(
        "ArpRepr",
        &ArpRepr {
            operation: Operation::Reply,
            sender_mac: mac,
            sender_ip: Ipv4Addr::new(192, 168, 0, 2),
            target_mac: MacAddr([2, 0, 0, 0, 0, 9]),
            target_ip: Ipv4Addr::new(192, 168, 0, 1),
        },
    );
    for answers in [0usize, 1, 3] {
        check(
            "LlmnrRepr",
            &LlmnrRepr {
                id: 7,
                flags: 0x8000,
                question: Question {
                    labels: vec![b"plant-dev-1".to_vec(), b"x".to_vec()],
                    qtype: 1,
                    qclass: 1,
                },
                answers: (0..answers)
                    .map(|i| Record {
                        rtype: 1,
                        class: 1,
                        ttl: 30,
                        rdata: vec![10, 0, 0, i as u8],
                    })
                    .collect(),
            },
        );
    }
    let values = [
        Value::Integer(-129),
        Value::Integer(0),
        Value::TimeTicks(u32::MAX),
        Value::OctetString(vec![b'a'; 200]),
        Value::Oid(vec![1, 3, 6, 1, 2, 1, 1, 5, 0]),
        Value::Null,
        Value::NoSuchInstance,
        Value::EndOfMibView,
    ];
    for v in &values {
        check("snmp Value", v);
    }
    for n in [0usize, 1, values.len()] {
        check(
            "SnmpMessage",
            &SnmpMessage {
                version: 1,
                community: b"public".to_vec(),
                pdu: Pdu {
                    tag: pdu::RESPONSE,
                    request_id: 0x1234_5678,
                    error_status: 0,
                    error_index: 0,
                    bindings: values[..n]
                        .iter()
                        .map(|v| VarBind {
                            name: vec![1, 3, 6, 1, 2, 1, 1, 1, 0],
                            value: v.clone(),
                        })
                        .collect(),
                },
            },
        );
    }
}

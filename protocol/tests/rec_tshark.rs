//! tshark as the independent oracle for every record, I&M, diagnosis, identification, alarm
//! and RTA frame the `rec` codecs emit: each frame is built with our encoders, wrapped in a
//! complete Ethernet frame (Ethernet/IPv4/UDP 34964 with correct checksums and a DCE/RPC CL
//! header for the PNIO-CM bodies; Ethernet + 802.1Q + FrameID 0xFC01/0xFE01 for RTA), dissected
//! by Wireshark, checked for malformed/expert problems, and the dissected field values are
//! compared with what was encoded.

use pn_protocol::wire::ethernet::{self, EthernetRepr, MacAddr, VlanTag};
use pn_protocol::wire::field::Writer;
use pn_protocol::wire::ip;
use pn_protocol::wire::pnio::alarm::{
    alarm_type, AlarmNotificationRepr, AlarmPdu, AlarmPriority, AlarmSpecifier,
};
use pn_protocol::wire::pnio::diagnosis::{
    channel_error_type, ChannelDiagnosis, ChannelProperties, DiagnosisDataRepr, Direction,
    ExtChannelDiagnosis, QualifiedChannelDiagnosis, Severity, Specifier, UserStructure,
};
use pn_protocol::wire::pnio::ident::{
    ApiIdent, IdentificationDataRepr, ModuleIdent, SubmoduleIdent,
};
use pn_protocol::wire::pnio::im::{
    FilterKind, Im0, Im0FilterData, Im1, Im2, Im3, Im4, ImRecord, SoftwareRevision,
};
use pn_protocol::wire::pnio::record::{
    index, rw_error, ReadReqHeaderRepr, ReadRequest, ReadResponse, RecordAddress, Uuid,
    WriteRecord, WriteReqHeaderRepr, WriteRequest, WriteResHeaderRepr, WriteResponse, NIL_UUID,
};
use pn_protocol::wire::pnio::PnioStatus;
use pn_protocol::wire::rpc::{self, Drep, PnioRequest, PnioResponse, RpcHeader, RpcPacket};
use pn_protocol::wire::rta::{abort_reason, RtaPduType, RtaRepr};
use pn_protocol::wire::Emit;
use pn_testkit::tshark::{self, Packet};
use std::net::Ipv4Addr;

const CTL_MAC: [u8; 6] = [0x02, 0x00, 0x00, 0x00, 0x00, 0x01];
const DEV_MAC: [u8; 6] = [0x02, 0x00, 0x00, 0x00, 0x00, 0x02];
const CTL_IP: Ipv4Addr = Ipv4Addr::new(192, 168, 0, 1);
const DEV_IP: Ipv4Addr = Ipv4Addr::new(192, 168, 0, 2);
const CTL_PORT: u16 = 0xC001;
const AR: Uuid = [
    0xef, 0x79, 0x6d, 0x60, 0xef, 0x2b, 0x99, 0x46, 0xb3, 0x9e, 0x85, 0x31, 0xf5, 0xb7, 0xf9, 0x66,
];
const AR_STR: &str = "ef796d60-ef2b-9946-b39e-8531f5b7f966";

fn uuid_str(u: &Uuid) -> String {
    let h: String = u.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

fn activity() -> rpc::Uuid {
    rpc::Uuid::from_bytes([0x11; 16])
}

fn request_header(opnum: u16, drep: Drep) -> RpcHeader {
    RpcHeader::request(
        drep,
        rpc::Uuid::pnio_object(1, 0x0002, 0x0493),
        rpc::PNIO_DEVICE_INTERFACE,
        activity(),
        7,
        opnum,
    )
}

/// A PNIO-CM request from the controller to the device.
fn request_frame(opnum: u16, drep: Drep, data: Vec<u8>) -> Vec<u8> {
    let body = PnioRequest::new(32832, data).ndr(drep).to_bytes().unwrap();
    let pkt = RpcPacket::new(request_header(opnum, drep), body)
        .to_bytes()
        .unwrap();
    ip::udp_frame(
        CTL_MAC,
        DEV_MAC,
        CTL_IP,
        DEV_IP,
        CTL_PORT,
        ip::PNIO_CM_PORT,
        &pkt,
    )
    .unwrap()
}

/// A PNIO-CM response from the device to the controller.
fn response_frame(opnum: u16, drep: Drep, status: PnioStatus, data: Vec<u8>) -> Vec<u8> {
    let req = request_header(opnum, drep);
    let body = PnioResponse {
        status,
        args_maximum: 32832,
        data,
    }
    .ndr(drep)
    .to_bytes()
    .unwrap();
    let pkt = RpcPacket::new(RpcHeader::response_to(&req), body)
        .to_bytes()
        .unwrap();
    ip::udp_frame(
        DEV_MAC,
        CTL_MAC,
        DEV_IP,
        CTL_IP,
        ip::PNIO_CM_PORT,
        CTL_PORT,
        &pkt,
    )
    .unwrap()
}

/// An RTA frame: Ethernet + 802.1Q (priority 6 high / 5 low) + FrameID + RTA-PDU, padded.
fn rta_frame(priority: AlarmPriority, pdu: &RtaRepr, tagged: bool) -> Vec<u8> {
    let (frame_id, tag) = match priority {
        AlarmPriority::High => (0xFC01u16, VlanTag::RT_ALARM_HIGH),
        AlarmPriority::Low => (0xFE01u16, VlanTag::RT_ALARM_LOW),
    };
    let mut payload = frame_id.to_be_bytes().to_vec();
    payload.extend_from_slice(&pdu.to_bytes().unwrap());
    EthernetRepr {
        dst: MacAddr(CTL_MAC),
        src: MacAddr(DEV_MAC),
        vlan: tagged.then_some(tag),
        ethertype: ethernet::ethertype::PROFINET,
    }
    .build(&payload)
}

fn dissect(frames: &[Vec<u8>]) -> Vec<Packet> {
    let pkts = tshark::dissect(frames).expect("tshark runs");
    for (i, p) in pkts.iter().enumerate() {
        p.assert_clean(&format!("frame {i}"));
    }
    pkts
}

fn uints(p: &Packet, name: &str) -> Vec<u64> {
    p.all(name)
        .iter()
        .map(|v| tshark::parse_uint(v).unwrap_or_else(|| panic!("{name} = {v:?}")))
        .collect()
}

fn addr(slot: u16, subslot: u16, idx: u16) -> RecordAddress {
    RecordAddress::new(0, slot, subslot, idx)
}

fn read_req(idx: u16, slot: u16, subslot: u16) -> ReadReqHeaderRepr {
    ReadReqHeaderRepr {
        seq_number: 12,
        ar_uuid: AR,
        address: addr(slot, subslot, idx),
        record_data_length: 4096,
        target_ar_uuid: NIL_UUID,
    }
}

fn sample_im0() -> Im0 {
    Im0 {
        vendor_id: 0x0493,
        order_id: "6ES7 000-0AA00-0AA0".into(),
        serial_number: "S C-X4U12345".into(),
        hardware_revision: 3,
        software_revision: SoftwareRevision {
            prefix: b'V',
            functional_enhancement: 1,
            bug_fix: 2,
            internal_change: 3,
        },
        revision_counter: 4,
        profile_id: 0xF600,
        profile_specific_type: 0x0004,
        version: (1, 1),
        supported: Im0::supported_bit(1) | Im0::supported_bit(2) | Im0::supported_bit(3),
    }
}

/// Dissect a request/response pair (the request lets Wireshark match the response); both must
/// be clean. Returns (request, response).
fn pair(req: Vec<u8>, res: Vec<u8>) -> (Packet, Packet) {
    let mut v = dissect(&[req, res]);
    let res = v.pop().unwrap();
    (v.pop().unwrap(), res)
}

fn read_pair(
    req: &ReadReqHeaderRepr,
    status: PnioStatus,
    data: Vec<u8>,
    drep: Drep,
) -> (Packet, Packet) {
    let opnum = if req.is_implicit() {
        rpc::opnum::READ_IMPLICIT
    } else {
        rpc::opnum::READ
    };
    let reqf = request_frame(opnum, drep, ReadRequest::new(*req).to_bytes().unwrap());
    let res = ReadResponse::answering(req, data).unwrap();
    let resf = response_frame(opnum, drep, status, res.to_bytes().unwrap());
    pair(reqf, resf)
}

fn assert_rw_header(p: &Packet, block_type: u64, seq: u16, ar: &str, a: RecordAddress, len: u32) {
    assert!(
        uints(p, "pn_io.block_type").contains(&block_type),
        "{}",
        p.dump()
    );
    assert_eq!(p.uint("pn_io.seq_number"), u64::from(seq));
    assert_eq!(p.get("pn_io.ar_uuid"), ar);
    assert_eq!(p.uint("pn_io.api"), u64::from(a.api));
    assert_eq!(p.uint("pn_io.slot_nr"), u64::from(a.slot));
    assert_eq!(p.uint("pn_io.subslot_nr"), u64::from(a.subslot));
    assert_eq!(p.uint("pn_io.index"), u64::from(a.index));
    assert_eq!(p.uint("pn_io.record_data_length"), u64::from(len));
}

#[test]
fn read_requests_explicit_and_implicit() {
    if !pn_testkit::env::require_tshark() {
        return;
    }
    let explicit = read_req(index::IM0, 0, 0x8000);
    let mut target = NIL_UUID;
    target[0] = 0xab;
    target[15] = 0xcd;
    let implicit = ReadReqHeaderRepr {
        seq_number: 3,
        ar_uuid: NIL_UUID,
        address: addr(0, 1, index::IM0_FILTER_DATA),
        record_data_length: 32768,
        target_ar_uuid: target,
    };
    let frames = vec![
        // S7 controllers send little-endian DREP; p-net answers big-endian: use both.
        request_frame(
            rpc::opnum::READ,
            Drep::LITTLE_ENDIAN,
            ReadRequest::new(explicit).to_bytes().unwrap(),
        ),
        request_frame(
            rpc::opnum::READ_IMPLICIT,
            Drep::BIG_ENDIAN,
            ReadRequest::new(implicit).to_bytes().unwrap(),
        ),
    ];
    let p = dissect(&frames);
    assert_eq!(p[0].uint("dcerpc.opnum"), 2);
    assert_rw_header(&p[0], 0x0009, 12, AR_STR, explicit.address, 4096);
    assert_eq!(p[0].uint("pn_io.block_length"), 60);
    assert!(p[0].field("pn_io.target_ar_uuid").is_none());
    assert_eq!(p[1].uint("dcerpc.opnum"), 5);
    assert_rw_header(
        &p[1],
        0x0009,
        3,
        "00000000-0000-0000-0000-000000000000",
        implicit.address,
        32768,
    );
    assert_eq!(p[1].get("pn_io.target_ar_uuid"), uuid_str(&target));
}

#[test]
fn read_responses_im0_to_im4() {
    if !pn_testkit::env::require_tshark() {
        return;
    }
    let im0 = sample_im0();
    let im1 = Im1 {
        tag_function: "Pump station 7".into(),
        tag_location: "Hall B / rack 3".into(),
    };
    let im2 = Im2 {
        date: "2026-11-23 17:45".into(),
    };
    let im3 = Im3 {
        descriptor: "installed by the rec helper".into(),
    };
    let mut signature = [0u8; 54];
    for (i, b) in signature.iter_mut().enumerate() {
        *b = i as u8;
    }
    let im4 = Im4 { signature };

    // I&M0
    let rec = ImRecord::Im0(im0.clone()).to_bytes().unwrap();
    let req = read_req(index::IM0, 0, 1);
    let (_, p) = read_pair(&req, PnioStatus::OK, rec, Drep::BIG_ENDIAN);
    assert_rw_header(&p, 0x8009, 12, AR_STR, req.address, 60);
    assert_eq!(p.uint("pn_io.add_val1"), 0);
    assert!(uints(&p, "pn_io.block_type").contains(&0x0020));
    assert_eq!(
        p.uint("pn_io.vendor_id_high") << 8 | p.uint("pn_io.vendor_id_low"),
        0x0493
    );
    assert_eq!(p.get("pn_io.order_id").trim_end(), im0.order_id);
    assert_eq!(p.get("pn_io.order_id").len(), 20);
    assert_eq!(
        p.get("pn_io.im_serial_number").trim_end(),
        im0.serial_number
    );
    assert_eq!(p.uint("pn_io.im_hardware_revision"), 3);
    assert_eq!(p.get("pn_io.im_revision_prefix"), "'V'");
    assert_eq!(p.uint("pn_io.im_sw_revision_functional_enhancement"), 1);
    assert_eq!(p.uint("pn_io.im_revision_bugfix"), 2);
    assert_eq!(p.uint("pn_io.im_sw_revision_internal_change"), 3);
    assert_eq!(p.uint("pn_io.im_revision_counter"), 4);
    assert_eq!(p.uint("pn_io.im_profile_id"), 0xF600);
    assert_eq!(p.uint("pn_io.im_profile_specific_type"), 4);
    assert_eq!(p.uint("pn_io.im_version_major"), 1);
    assert_eq!(p.uint("pn_io.im_version_minor"), 1);
    assert_eq!(p.uint("pn_io.im_supported"), 0x000E);

    // I&M1
    let req = read_req(index::IM1, 0, 1);
    let (_, p) = read_pair(
        &req,
        PnioStatus::OK,
        ImRecord::Im1(im1.clone()).to_bytes().unwrap(),
        Drep::BIG_ENDIAN,
    );
    assert_rw_header(&p, 0x8009, 12, AR_STR, req.address, 60);
    assert!(uints(&p, "pn_io.block_type").contains(&0x0021));
    assert_eq!(p.get("pn_io.im_tag_function").trim_end(), im1.tag_function);
    assert_eq!(p.get("pn_io.im_tag_function").len(), 32);
    assert_eq!(p.get("pn_io.im_tag_location").trim_end(), im1.tag_location);
    assert_eq!(p.get("pn_io.im_tag_location").len(), 22);

    // I&M2
    let req = read_req(index::IM2, 0, 1);
    let (_, p) = read_pair(
        &req,
        PnioStatus::OK,
        ImRecord::Im2(im2.clone()).to_bytes().unwrap(),
        Drep::BIG_ENDIAN,
    );
    assert_rw_header(&p, 0x8009, 12, AR_STR, req.address, 22);
    assert!(uints(&p, "pn_io.block_type").contains(&0x0022));
    assert_eq!(p.get("pn_io.im_date"), im2.date);

    // I&M3
    let req = read_req(index::IM3, 0, 1);
    let (_, p) = read_pair(
        &req,
        PnioStatus::OK,
        ImRecord::Im3(im3.clone()).to_bytes().unwrap(),
        Drep::BIG_ENDIAN,
    );
    assert_rw_header(&p, 0x8009, 12, AR_STR, req.address, 60);
    assert!(uints(&p, "pn_io.block_type").contains(&0x0023));
    assert_eq!(p.get("pn_io.im_descriptor").trim_end(), im3.descriptor);
    assert_eq!(p.get("pn_io.im_descriptor").len(), 54);

    // I&M4: Wireshark shows the signature as user data bytes.
    let req = read_req(index::IM4, 0, 1);
    let reqf = request_frame(
        rpc::opnum::READ,
        Drep::BIG_ENDIAN,
        ReadRequest::new(req).to_bytes().unwrap(),
    );
    let res = ReadResponse::answering(&req, ImRecord::Im4(im4).to_bytes().unwrap()).unwrap();
    let resf = response_frame(
        rpc::opnum::READ,
        Drep::BIG_ENDIAN,
        PnioStatus::OK,
        res.to_bytes().unwrap(),
    );
    // "-x" adds the raw bytes of every field (`<name>_raw`: hex, offset, length, ...).
    let v = tshark::dissect_with(&[reqf, resf], &["-x"]).unwrap();
    let p = &v[1];
    p.assert_clean("I&M4 read response");
    assert_rw_header(p, 0x8009, 12, AR_STR, req.address, 60);
    assert!(uints(p, "pn_io.block_type").contains(&0x0024));
    let hex: String = signature.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(
        p.all("pn.user_data_raw").first().copied(),
        Some(hex.as_str())
    );
}

#[test]
fn read_response_real_identification_data() {
    if !pn_testkit::env::require_tshark() {
        return;
    }
    let ident = IdentificationDataRepr::real(vec![ApiIdent {
        api: 0,
        modules: vec![
            ModuleIdent {
                slot: 0,
                module_ident: 0x0000_0001,
                submodules: vec![
                    SubmoduleIdent {
                        subslot: 1,
                        submodule_ident: 0x0000_0001,
                    },
                    SubmoduleIdent {
                        subslot: 0x8000,
                        submodule_ident: 0x0000_0002,
                    },
                    SubmoduleIdent {
                        subslot: 0x8001,
                        submodule_ident: 0x0000_0003,
                    },
                ],
            },
            ModuleIdent {
                slot: 1,
                module_ident: 0x0000_0030,
                submodules: vec![SubmoduleIdent {
                    subslot: 1,
                    submodule_ident: 0x0000_0130,
                }],
            },
        ],
    }]);
    let data = ident.to_bytes().unwrap();
    let req = read_req(index::AR_REAL_IDENTIFICATION_DATA, 0, 0);
    let (_, p) = read_pair(&req, PnioStatus::OK, data.clone(), Drep::BIG_ENDIAN);
    assert_rw_header(&p, 0x8009, 12, AR_STR, req.address, data.len() as u32);
    assert!(uints(&p, "pn_io.block_type").contains(&0x0013));
    assert_eq!(uints(&p, "pn_io.block_version_low"), vec![0, 1]);
    assert_eq!(p.uint("pn_io.number_of_apis"), 1);
    assert_eq!(uints(&p, "pn_io.number_of_slots"), vec![2]);
    // slot_nr: the record header's 0, then the two modules
    assert_eq!(uints(&p, "pn_io.slot_nr"), vec![0, 0, 1]);
    assert_eq!(uints(&p, "pn_io.module_ident_number"), vec![1, 0x30]);
    assert_eq!(uints(&p, "pn_io.number_of_subslots"), vec![3, 1]);
    assert_eq!(uints(&p, "pn_io.subslot_nr"), vec![0, 1, 0x8000, 0x8001, 1]);
    assert_eq!(
        uints(&p, "pn_io.submodule_ident_number"),
        vec![1, 2, 3, 0x130]
    );

    // ExpectedIdentificationData (0x0012) has the same layout.
    let mut expected = ident.clone();
    expected.block_type = pn_protocol::wire::pnio::ident::block_type::EXPECTED_IDENTIFICATION_DATA;
    let data = expected.to_bytes().unwrap();
    let req = read_req(index::AR_EXPECTED_IDENTIFICATION_DATA, 0, 0);
    let (_, p) = read_pair(&req, PnioStatus::OK, data, Drep::BIG_ENDIAN);
    assert!(uints(&p, "pn_io.block_type").contains(&0x0012));
    assert_eq!(uints(&p, "pn_io.module_ident_number"), vec![1, 0x30]);
    assert_eq!(
        uints(&p, "pn_io.submodule_ident_number"),
        vec![1, 2, 3, 0x130]
    );
}

#[test]
fn read_response_i_m0_filter_data() {
    if !pn_testkit::env::require_tshark() {
        return;
    }
    let sub = |s, i| SubmoduleIdent {
        subslot: s,
        submodule_ident: i,
    };
    let filters = [
        Im0FilterData {
            kind: FilterKind::Submodule,
            apis: vec![ApiIdent {
                api: 0,
                modules: vec![ModuleIdent {
                    slot: 0,
                    module_ident: 1,
                    submodules: vec![sub(1, 1), sub(0x8000, 2)],
                }],
            }],
        },
        Im0FilterData {
            kind: FilterKind::Device,
            apis: vec![ApiIdent {
                api: 0,
                modules: vec![ModuleIdent {
                    slot: 0,
                    module_ident: 1,
                    submodules: vec![sub(1, 1)],
                }],
            }],
        },
    ];
    let data = filters.to_bytes().unwrap();
    let req = ReadReqHeaderRepr {
        seq_number: 0,
        ar_uuid: NIL_UUID,
        address: addr(0, 1, index::IM0_FILTER_DATA),
        record_data_length: 32768,
        target_ar_uuid: NIL_UUID,
    };
    let (_, p) = read_pair(&req, PnioStatus::OK, data, Drep::BIG_ENDIAN);
    assert_eq!(p.uint("dcerpc.opnum"), 5);
    let bt = uints(&p, "pn_io.block_type");
    assert!(bt.contains(&0x0030) && bt.contains(&0x0032), "{bt:?}");
    assert_eq!(uints(&p, "pn_io.number_of_apis"), vec![1, 1]);
    assert_eq!(uints(&p, "pn_io.number_of_modules"), vec![1, 1]);
    assert_eq!(uints(&p, "pn_io.number_of_submodules"), vec![2, 1]);
    assert_eq!(uints(&p, "pn_io.submodule_ident_number"), vec![1, 2, 1]);
}

fn props(spec: Specifier) -> ChannelProperties {
    ChannelProperties::new(1, false, Severity::Fault, spec, Direction::Input)
}

#[test]
fn read_response_diagnosis_data() {
    if !pn_testkit::env::require_tshark() {
        return;
    }
    let blocks = vec![
        DiagnosisDataRepr {
            version_low: 1,
            api: 0,
            slot: 1,
            subslot: 1,
            channel_number: 3,
            channel_properties: props(Specifier::Appears),
            items: UserStructure::Channel(vec![ChannelDiagnosis {
                channel_number: 3,
                properties: props(Specifier::Appears),
                error_type: channel_error_type::LINE_BREAK,
            }]),
        },
        DiagnosisDataRepr {
            version_low: 1,
            api: 0,
            slot: 0,
            subslot: 0x8001,
            channel_number: 0x8000,
            channel_properties: ChannelProperties::new(
                0,
                false,
                Severity::MaintenanceRequired,
                Specifier::Appears,
                Direction::ManufacturerSpecific,
            ),
            items: UserStructure::ExtChannel(vec![ExtChannelDiagnosis {
                channel_number: 0x8000,
                properties: ChannelProperties::new(
                    0,
                    false,
                    Severity::MaintenanceRequired,
                    Specifier::Appears,
                    Direction::ManufacturerSpecific,
                ),
                error_type: channel_error_type::REMOTE_MISMATCH,
                ext_error_type: 0x8000,
                ext_add_value: 0x1234_5678,
            }]),
        },
    ];
    let mut blocks = blocks;
    blocks.push(DiagnosisDataRepr {
        version_low: 1,
        api: 0,
        slot: 2,
        subslot: 1,
        channel_number: 0,
        channel_properties: ChannelProperties::new(
            2,
            false,
            Severity::Qualified,
            Specifier::Appears,
            Direction::Output,
        ),
        items: UserStructure::Qualified(vec![QualifiedChannelDiagnosis {
            channel_number: 0,
            properties: ChannelProperties::new(
                2,
                false,
                Severity::Qualified,
                Specifier::Appears,
                Direction::Output,
            ),
            error_type: channel_error_type::OVERLOAD,
            ext_error_type: 0,
            ext_add_value: 0,
            qualifier: 0x0000_0100,
        }]),
    });
    let data = blocks.to_bytes().unwrap();
    let req = read_req(index::DEVICE_DIAGNOSIS_DMQS, 0, 0);

    // A BlockVersionLow 0 block (no API field) on its own.
    let v0 = DiagnosisDataRepr {
        version_low: 0,
        api: 0,
        slot: 5,
        subslot: 2,
        channel_number: 7,
        channel_properties: props(Specifier::Appears),
        items: UserStructure::Channel(vec![ChannelDiagnosis {
            channel_number: 7,
            properties: props(Specifier::Appears),
            error_type: channel_error_type::UNDERVOLTAGE,
        }]),
    };
    let req0 = read_req(index::SUB_DIAGNOSIS_CHANNEL, 5, 2);
    let (_, p0) = read_pair(
        &req0,
        PnioStatus::OK,
        v0.to_bytes().unwrap(),
        Drep::BIG_ENDIAN,
    );
    assert_eq!(uints(&p0, "pn_io.block_version_low"), vec![0, 0]);
    assert_eq!(uints(&p0, "pn_io.slot_nr"), vec![5, 5]);
    assert_eq!(uints(&p0, "pn_io.subslot_nr"), vec![2, 2]);
    assert_eq!(
        uints(&p0, "pn_io.api"),
        vec![0],
        "only the record header has an API"
    );
    assert_eq!(p0.uint("pn_io.channel_error_type"), 2);
    assert_eq!(p0.uint("pn_io.user_structure_identifier"), 0x8000);
    let (_, p) = read_pair(&req, PnioStatus::OK, data.clone(), Drep::BIG_ENDIAN);
    assert_rw_header(&p, 0x8009, 12, AR_STR, req.address, data.len() as u32);
    assert_eq!(
        uints(&p, "pn_io.block_type")
            .iter()
            .filter(|&&t| t == 0x0010)
            .count(),
        3
    );
    assert_eq!(
        uints(&p, "pn_io.user_structure_identifier"),
        vec![0x8000, 0x8002, 0x8003]
    );
    // channel numbers: block 1 (channel, item), block 2 (channel, item)
    assert_eq!(
        uints(&p, "pn_io.channel_number"),
        vec![3, 3, 0x8000, 0x8000, 0, 0]
    );
    assert_eq!(
        uints(&p, "pn_io.channel_properties"),
        vec![0x2801, 0x2801, 0x0A00, 0x0A00, 0x4E02, 0x4E02]
    );
    assert_eq!(
        uints(&p, "pn_io.channel_properties.specifier"),
        vec![1, 1, 1, 1, 1, 1]
    );
    assert_eq!(
        uints(&p, "pn_io.channel_properties.direction"),
        vec![1, 1, 0, 0, 2, 2]
    );
    assert_eq!(
        uints(&p, "pn_io.channel_properties.maintenance"),
        vec![0, 0, 1, 1, 3, 3]
    );
    assert_eq!(uints(&p, "pn_io.channel_error_type"), vec![6, 0x8001, 4]);
    assert_eq!(p.uint("pn_io.ext_channel_error_type8001"), 0x8000);
    assert_eq!(
        uints(&p, "pn_io.ext_channel_add_value"),
        vec![0x1234_5678, 0]
    );
    assert_eq!(p.uint("pn_io.qualified_channel_qualifier"), 0x100);
}

#[test]
fn read_error_response_for_the_rpc_trigger_index() {
    if !pn_testkit::env::require_tshark() {
        return;
    }
    let req = read_req(index::RPC_TRIGGER, 0, 1);
    let status = rw_error::read(rw_error::ACC_INVALID_INDEX, 0);
    let (q, p) = read_pair(&req, status, Vec::new(), Drep::LITTLE_ENDIAN);
    assert_eq!(q.uint("pn_io.index"), 0xFBFF);
    assert_rw_header(&p, 0x8009, 12, AR_STR, req.address, 0);
    assert_eq!(p.uint("pn_io.error_code"), 0xDE);
    assert_eq!(p.uint("pn_io.error_decode"), 0x80);
    assert_eq!(p.uint("pn_io.error_code1"), 0xB0);
    assert_eq!(p.uint("pn_io.error_code2"), 0);
}

#[test]
fn write_single_i_m1_and_responses() {
    if !pn_testkit::env::require_tshark() {
        return;
    }
    let im1 = ImRecord::Im1(Im1 {
        tag_function: "Conveyor".into(),
        tag_location: "Line 2".into(),
    })
    .to_bytes()
    .unwrap();
    let req = WriteRequest::single(21, AR, addr(0, 1, index::IM1), im1).unwrap();
    let reqf = request_frame(
        rpc::opnum::WRITE,
        Drep::LITTLE_ENDIAN,
        req.to_bytes().unwrap(),
    );
    let ok = WriteResponse {
        header: WriteResHeaderRepr::answering(&req.header, PnioStatus::OK),
        records: vec![],
    };
    let okf = response_frame(
        rpc::opnum::WRITE,
        Drep::LITTLE_ENDIAN,
        PnioStatus::OK,
        ok.to_bytes().unwrap(),
    );
    let denied = rw_error::write(rw_error::ACC_ACCESS_DENIED, 0);
    let err = WriteResponse {
        header: WriteResHeaderRepr::answering(&req.header, denied),
        records: vec![],
    };
    let errf = response_frame(
        rpc::opnum::WRITE,
        Drep::BIG_ENDIAN,
        denied,
        err.to_bytes().unwrap(),
    );

    let (q, p) = pair(reqf.clone(), okf);
    assert_eq!(q.uint("dcerpc.opnum"), 3);
    assert_rw_header(&q, 0x0008, 21, AR_STR, req.header.address, 60);
    assert!(uints(&q, "pn_io.block_type").contains(&0x0021));
    assert_eq!(q.get("pn_io.im_tag_function").trim_end(), "Conveyor");
    assert_eq!(q.get("pn_io.im_tag_location").trim_end(), "Line 2");
    assert_rw_header(&p, 0x8008, 21, AR_STR, req.header.address, 60);
    assert_eq!(uints(&p, "pn_io.error_code"), vec![0, 0]);

    let (_, p) = pair(reqf, errf);
    assert_rw_header(&p, 0x8008, 21, AR_STR, req.header.address, 60);
    // NDR status and the header's status
    assert_eq!(uints(&p, "pn_io.error_code"), vec![0xDF, 0xDF]);
    assert_eq!(uints(&p, "pn_io.error_decode"), vec![0x80, 0x80]);
    assert_eq!(uints(&p, "pn_io.error_code1"), vec![0xB6, 0xB6]);
}

#[test]
fn multiple_write_request_and_response() {
    if !pn_testkit::env::require_tshark() {
        return;
    }
    let rec = |seq: u16, slot: u16, idx: u16, data: Vec<u8>| WriteRecord {
        header: WriteReqHeaderRepr {
            seq_number: seq,
            ar_uuid: AR,
            address: addr(slot, 1, idx),
            record_data_length: data.len() as u32,
        },
        data,
    };
    let im2 = ImRecord::Im2(Im2 {
        date: "2026-11-23 18:00".into(),
    })
    .to_bytes()
    .unwrap();
    let records = vec![
        rec(1, 1, 0x0080, vec![1, 2, 3, 4, 5]),
        rec(2, 0, index::IM2, im2),
        rec(3, 2, 0x0081, vec![9, 8, 7]),
    ];
    let req = WriteRequest::multiple(0, AR, records).unwrap();
    // 64+5+3 pad + 64+22+2 pad + 64+3
    assert_eq!(req.header.record_data_length, 227);
    let reqf = request_frame(
        rpc::opnum::WRITE,
        Drep::LITTLE_ENDIAN,
        req.to_bytes().unwrap(),
    );
    let statuses = [
        PnioStatus::OK,
        PnioStatus::OK,
        rw_error::write(rw_error::ACC_INVALID_INDEX, 0),
    ];
    let res = WriteResponse {
        header: WriteResHeaderRepr::answering(&req.header, PnioStatus::OK),
        records: req
            .records()
            .iter()
            .zip(statuses)
            .map(|((h, _), s)| WriteResHeaderRepr::answering(h, s))
            .collect(),
    };
    let resf = response_frame(
        rpc::opnum::WRITE,
        Drep::BIG_ENDIAN,
        res.overall_status(),
        res.to_bytes().unwrap(),
    );
    let (q, p) = pair(reqf, resf);
    assert_eq!(
        uints(&q, "pn_io.block_type")
            .iter()
            .filter(|&&t| t == 0x0008)
            .count(),
        4
    );
    assert_eq!(
        uints(&q, "pn_io.index"),
        vec![0xE040, 0x0080, 0xAFF2, 0x0081]
    );
    assert_eq!(uints(&q, "pn_io.record_data_length"), vec![227, 5, 22, 3]);
    assert_eq!(uints(&q, "pn_io.seq_number"), vec![0, 1, 2, 3]);
    assert_eq!(uints(&q, "pn_io.api"), vec![0xFFFF_FFFF, 0, 0, 0]);
    assert_eq!(uints(&q, "pn_io.slot_nr"), vec![0xFFFF, 1, 0, 2]);
    assert_eq!(q.get("pn_io.im_date"), "2026-11-23 18:00");

    assert_eq!(
        uints(&p, "pn_io.index"),
        vec![0xE040, 0x0080, 0xAFF2, 0x0081]
    );
    assert_eq!(
        uints(&p, "pn_io.block_type")
            .iter()
            .filter(|&&t| t == 0x8008)
            .count(),
        4
    );
    // one status per header (tree order), then the NDR status (the first failure): tshark's
    // JSON lists the nested block fields before the top-level status
    assert_eq!(uints(&p, "pn_io.error_code"), vec![0, 0, 0, 0xDF, 0xDF]);
    assert_eq!(uints(&p, "pn_io.error_code1"), vec![0, 0, 0, 0xB0, 0xB0]);
}

fn diag_alarm(seq: u16, alarm_type_value: u16, spec: Specifier) -> AlarmNotificationRepr {
    AlarmNotificationRepr {
        priority: AlarmPriority::Low,
        alarm_type: alarm_type_value,
        api: 0,
        slot: 1,
        subslot: 1,
        module_ident: 0x30,
        submodule_ident: 0x130,
        specifier: AlarmSpecifier::new(
            seq,
            spec == Specifier::Appears,
            false,
            spec == Specifier::Appears,
            true,
        ),
        item: Some(UserStructure::Channel(vec![ChannelDiagnosis {
            channel_number: 4,
            properties: props(spec),
            error_type: channel_error_type::SHORT_CIRCUIT,
        }])),
    }
}

#[test]
fn alarm_notifications_in_data_rta() {
    if !pn_testkit::env::require_tshark() {
        return;
    }
    let appears = diag_alarm(1, alarm_type::DIAGNOSIS, Specifier::Appears);
    let disappears = diag_alarm(2, alarm_type::DIAGNOSIS_DISAPPEARS, Specifier::Disappears);
    let ext = AlarmNotificationRepr {
        item: Some(UserStructure::ExtChannel(vec![ExtChannelDiagnosis {
            channel_number: 4,
            properties: props(Specifier::Appears),
            error_type: channel_error_type::OVERTEMPERATURE,
            ext_error_type: 0,
            ext_add_value: 42,
        }])),
        ..diag_alarm(3, alarm_type::DIAGNOSIS, Specifier::Appears)
    };
    let process = AlarmNotificationRepr {
        priority: AlarmPriority::High,
        alarm_type: alarm_type::PROCESS,
        api: 0,
        slot: 2,
        subslot: 1,
        module_ident: 0x40,
        submodule_ident: 0x140,
        specifier: AlarmSpecifier::new(4, false, false, false, false),
        item: Some(UserStructure::Other {
            usi: 0x0010,
            data: vec![0xAA, 0xBB],
        }),
    };
    let cases = [
        (&appears, 0x0000u16, 0xFFFEu16),
        (&disappears, 0x0001, 0x0000),
        (&ext, 0x0002, 0x0001),
        (&process, 0xFFFF, 0xFFFE),
    ];
    let frames: Vec<Vec<u8>> = cases
        .iter()
        .enumerate()
        .map(|(i, (n, s, a))| {
            let pdu = RtaRepr::new(
                RtaPduType::Data,
                0x0002,
                0x0001,
                *s,
                *a,
                AlarmPdu::Notification((*n).clone()).to_bytes().unwrap(),
            );
            rta_frame(n.priority, &pdu, i != 1)
        })
        .collect();
    let p = dissect(&frames);
    for (pkt, (n, s, a)) in p.iter().zip(cases.iter()) {
        assert_eq!(pkt.uint("pn_io.alarm_dst_endpoint"), 2);
        assert_eq!(pkt.uint("pn_io.alarm_src_endpoint"), 1);
        assert_eq!(pkt.uint("pn_io.pdu_type.type"), 1);
        assert_eq!(pkt.uint("pn_io.pdu_type.version"), 1);
        assert_eq!(pkt.uint("pn_io.window_size"), 1);
        assert_eq!(pkt.uint("pn_io.tack"), 1);
        assert_eq!(pkt.uint("pn_io.send_seq_num"), u64::from(*s));
        assert_eq!(pkt.uint("pn_io.ack_seq_num"), u64::from(*a));
        let len = AlarmPdu::Notification((*n).clone()).buffer_len();
        assert_eq!(pkt.uint("pn_io.var_part_len"), len as u64);
        let bt = match n.priority {
            AlarmPriority::High => 1,
            AlarmPriority::Low => 2,
        };
        assert_eq!(pkt.uint("pn_io.block_type"), bt);
        assert_eq!(pkt.uint("pn_io.alarm_type"), u64::from(n.alarm_type));
        assert_eq!(pkt.uint("pn_io.slot_nr"), u64::from(n.slot));
        assert_eq!(pkt.uint("pn_io.subslot_nr"), u64::from(n.subslot));
        assert_eq!(
            pkt.uint("pn_io.module_ident_number"),
            u64::from(n.module_ident)
        );
        assert_eq!(
            pkt.uint("pn_io.submodule_ident_number"),
            u64::from(n.submodule_ident)
        );
        let spec = n.specifier;
        assert_eq!(
            pkt.uint("pn_io.alarm_specifier.sequence") & 0x7FF,
            u64::from(spec.sequence_number())
        );
        assert_eq!(
            pkt.uint("pn_io.alarm_specifier.channel") != 0,
            spec.channel_diagnosis()
        );
        assert_eq!(
            pkt.uint("pn_io.alarm_specifier.ardiagnosis") != 0,
            spec.ar_diagnosis_state()
        );
        assert_eq!(
            pkt.uint("pn_io.user_structure_identifier"),
            u64::from(n.item.as_ref().unwrap().usi())
        );
    }
    assert!(p[0].protocols().contains("vlan"));
    assert!(!p[1].protocols().contains("vlan"));
    assert_eq!(p[0].uint("pn_io.channel_number"), 4);
    assert_eq!(p[0].uint("pn_io.channel_properties.specifier"), 1);
    assert_eq!(p[0].uint("pn_io.channel_error_type"), 1);
    assert_eq!(p[1].uint("pn_io.channel_properties.specifier"), 2);
    assert_eq!(p[2].uint("pn_io.channel_error_type"), 5);
    assert_eq!(p[2].uint("pn_io.ext_channel_add_value"), 42);
}

#[test]
fn ack_nack_err_and_alarm_ack_rta() {
    if !pn_testkit::env::require_tshark() {
        return;
    }
    let n = diag_alarm(7, alarm_type::DIAGNOSIS, Specifier::Appears);
    let ack_block = AlarmPdu::Ack(n.ack(PnioStatus::OK)).to_bytes().unwrap();
    let pdus = [
        RtaRepr::new(RtaPduType::Ack, 1, 2, 0xFFFE, 0xFFFF, vec![]),
        RtaRepr::new(RtaPduType::Nack, 1, 2, 0xFFFE, 0xFFFE, vec![]),
        RtaRepr::err(
            1,
            2,
            0x0006,
            0x0005,
            abort_reason::status(abort_reason::AR_CONSUMER_DHT_EXPIRED),
        ),
        RtaRepr::new(RtaPduType::Data, 1, 2, 0xFFFF, 0xFFFF, ack_block.clone()),
    ];
    let frames: Vec<Vec<u8>> = pdus
        .iter()
        .map(|r| rta_frame(AlarmPriority::Low, r, true))
        .collect();
    let p = dissect(&frames);
    for (pkt, r) in p.iter().zip(pdus.iter()) {
        assert_eq!(
            pkt.uint("pn_io.pdu_type.type"),
            u64::from(r.pdu_type.nibble())
        );
        assert_eq!(pkt.uint("pn_io.tack"), u64::from(r.tack));
        assert_eq!(pkt.uint("pn_io.send_seq_num"), u64::from(r.send_seq));
        assert_eq!(pkt.uint("pn_io.ack_seq_num"), u64::from(r.ack_seq));
        assert_eq!(pkt.uint("pn_io.var_part_len"), r.var_part.len() as u64);
        assert_eq!(pkt.uint("pn_io.alarm_dst_endpoint"), 1);
    }
    assert_eq!(p[0].uint("pn_io.tack"), 0);
    assert_eq!(p[2].uint("pn_io.error_code"), 0xCF);
    assert_eq!(p[2].uint("pn_io.error_decode"), 0x81);
    assert_eq!(p[2].uint("pn_io.error_code1"), 0xFD);
    assert_eq!(p[2].uint("pn_io.error_code2"), 5);
    assert_eq!(p[3].uint("pn_io.block_type"), 0x8002);
    assert_eq!(p[3].uint("pn_io.alarm_type"), 1);
    assert_eq!(p[3].uint("pn_io.alarm_specifier.sequence") & 0x7FF, 7);
    assert_eq!(p[3].uint("pn_io.error_code"), 0);
    assert_eq!(ack_block.len(), 22);
}

/// The frames of a simulated alarm exchange between a device-side and a controller-side
/// [`AlarmEndpoint`] (notification, transport ACK, AlarmAck, transport ACK, second
/// notification, ..., ERR-RTA) all dissect cleanly with the encoded values.
#[test]
fn machine_generated_alarm_exchange() {
    use pn_protocol::machine::rta::{AlarmEndpoint, AlarmEvent, RtaConfig};
    use pn_protocol::time::{Duration, Instant};
    if !pn_testkit::env::require_tshark() {
        return;
    }
    let mut dev = AlarmEndpoint::new(RtaConfig::new(AlarmPriority::Low, 1, 0x8001, 1, 3), false);
    let mut ctl = AlarmEndpoint::new(RtaConfig::new(AlarmPriority::Low, 0x8001, 1, 1, 3), true);
    let mut now = Instant::ZERO;
    dev.notify(
        diag_alarm(0, alarm_type::DIAGNOSIS, Specifier::Appears),
        now,
    )
    .unwrap();
    dev.notify(
        diag_alarm(0, alarm_type::DIAGNOSIS_DISAPPEARS, Specifier::Disappears),
        now,
    )
    .unwrap();
    let mut sent: Vec<(bool, RtaRepr)> = Vec::new();
    loop {
        let mut moved = false;
        while let Some(tx) = dev.poll_transmit() {
            ctl.handle(&tx.pdu.to_bytes().unwrap(), now);
            sent.push((true, tx.pdu));
            moved = true;
        }
        while let Some(tx) = ctl.poll_transmit() {
            dev.handle(&tx.pdu.to_bytes().unwrap(), now);
            sent.push((false, tx.pdu));
            moved = true;
        }
        if !moved {
            break;
        }
        now += Duration::from_millis(1);
    }
    let acked = std::iter::from_fn(|| dev.poll_event())
        .filter(|e| matches!(e, AlarmEvent::Acknowledged { .. }))
        .count();
    assert_eq!(acked, 2);
    dev.abort(abort_reason::status(abort_reason::AR_REMOVED));
    sent.push((true, dev.poll_transmit().unwrap().pdu));
    // DATA, ACK, DATA(AlarmAck), ACK, twice, then ERR
    let kinds: Vec<u8> = sent.iter().map(|(_, r)| r.pdu_type.nibble()).collect();
    assert_eq!(kinds, vec![1, 3, 1, 3, 1, 3, 1, 3, 4]);
    let frames: Vec<Vec<u8>> = sent
        .iter()
        .map(|(from_dev, r)| {
            let mut f = rta_frame(AlarmPriority::Low, r, true);
            if !from_dev {
                f[0..6].copy_from_slice(&DEV_MAC);
                f[6..12].copy_from_slice(&CTL_MAC);
            }
            f
        })
        .collect();
    let p = dissect(&frames);
    for (pkt, (from_dev, r)) in p.iter().zip(sent.iter()) {
        assert_eq!(
            pkt.uint("pn_io.pdu_type.type"),
            u64::from(r.pdu_type.nibble())
        );
        assert_eq!(pkt.uint("pn_io.send_seq_num"), u64::from(r.send_seq));
        assert_eq!(pkt.uint("pn_io.ack_seq_num"), u64::from(r.ack_seq));
        let (dst, src) = if *from_dev { (0x8001, 1) } else { (1, 0x8001) };
        assert_eq!(pkt.uint("pn_io.alarm_dst_endpoint"), dst);
        assert_eq!(pkt.uint("pn_io.alarm_src_endpoint"), src);
    }
    // notification, AlarmAck, notification, AlarmAck
    assert_eq!(p[0].uint("pn_io.block_type"), 0x0002);
    assert_eq!(p[2].uint("pn_io.block_type"), 0x8002);
    assert_eq!(p[4].uint("pn_io.alarm_type"), 0x000C);
    assert_eq!(p[4].uint("pn_io.alarm_specifier.sequence") & 0x7FF, 1);
    assert_eq!(p[8].uint("pn_io.error_code2"), 0x11);
    let seqs: Vec<(u16, u16)> = sent.iter().map(|(_, r)| (r.send_seq, r.ack_seq)).collect();
    assert_eq!(
        seqs,
        vec![
            (0xFFFF, 0xFFFE),
            (0xFFFE, 0xFFFF),
            (0xFFFF, 0xFFFF),
            (0xFFFF, 0xFFFF),
            (0x0000, 0xFFFF),
            (0xFFFF, 0x0000),
            (0x0000, 0x0000),
            (0x0000, 0x0000),
            (0x0001, 0x0000),
        ]
    );
}

/// PDPortDataReal, PDInterfaceDataReal and PDRealData (the two in MultipleBlockHeaders):
/// tshark finds every field where it was put, for names of every length modulo 4 (the
/// blocks align to 4 after each name) and zero to two peers.
#[test]
fn read_responses_pdev_real_data() {
    use pn_protocol::wire::pnio::pdev::{self, PdInterfaceDataReal, PdPortDataReal, Peer};
    if !pn_testkit::env::require_tshark() {
        return;
    }
    let names = ["", "p", "po", "por", "port-001", "port-001.slot-1"];
    let mut frames = Vec::new();
    let mut expected = Vec::new();
    for (k, own) in names.iter().enumerate() {
        for peers in 0..3usize {
            let port = PdPortDataReal {
                slot: 0,
                subslot: 0x8001 + k as u16,
                own_port_id: own.to_string(),
                peers: (0..peers)
                    .map(|i| Peer {
                        port_id: names[(k + i + 1) % names.len()].to_string() + "x",
                        chassis_id: "plc-".to_string() + &"a".repeat(k + i),
                        line_delay: 100 * i as u32,
                        mac: [2, 0, 0, 0, k as u8, i as u8],
                    })
                    .collect(),
                mau_type: 0x10 + peers as u16,
                domain_boundary: 0,
                multicast_boundary: 0,
                link_port: 0,
                link: if peers == 0 {
                    pdev::link::DOWN
                } else {
                    pdev::link::UP
                },
                media_type: pdev::media_type::COPPER,
            };
            let req = read_req(index::SUB_PD_PORT_DATA_REAL, 0, port.subslot);
            let res = ReadResponse::answering(&req, port.to_bytes().unwrap()).unwrap();
            frames.push(response_frame(
                rpc::opnum::READ,
                Drep::BIG_ENDIAN,
                PnioStatus::OK,
                res.to_bytes().unwrap(),
            ));
            expected.push(port);
        }
    }
    let pkts = dissect(&frames);
    assert_eq!(pkts.len(), expected.len());
    for (p, port) in pkts.iter().zip(&expected) {
        let ctx = format!("{port:?}\n{}", p.dump());
        assert!(uints(p, "pn_io.block_type").contains(&0x020f), "{ctx}");
        assert_eq!(
            uints(p, "pn_io.subslot_nr"),
            vec![u64::from(port.subslot); 2],
            "{ctx}"
        );
        assert_eq!(
            p.uint("pn_io.length_own_port_id"),
            port.own_port_id.len() as u64
        );
        if !port.own_port_id.is_empty() {
            assert_eq!(p.get("pn_io.own_port_id"), port.own_port_id, "{ctx}");
        }
        assert_eq!(
            p.uint("pn_io.number_of_peers"),
            port.peers.len() as u64,
            "{ctx}"
        );
        let peer_ports: Vec<String> = p
            .all("pn_io.peer_port_id")
            .into_iter()
            .map(String::from)
            .collect();
        let peer_chassis: Vec<String> = p
            .all("pn_io.peer_chassis_id")
            .into_iter()
            .map(String::from)
            .collect();
        let macs: Vec<String> = p
            .all("pn_io.peer_macadd")
            .into_iter()
            .map(String::from)
            .collect();
        assert_eq!(
            peer_ports,
            port.peers
                .iter()
                .map(|x| x.port_id.clone())
                .collect::<Vec<_>>(),
            "{ctx}"
        );
        assert_eq!(
            peer_chassis,
            port.peers
                .iter()
                .map(|x| x.chassis_id.clone())
                .collect::<Vec<_>>(),
            "{ctx}"
        );
        assert_eq!(
            macs,
            port.peers
                .iter()
                .map(|x| x
                    .mac
                    .iter()
                    .map(|b| format!("{b:02x}"))
                    .collect::<Vec<_>>()
                    .join(":"))
                .collect::<Vec<_>>(),
            "{ctx}"
        );
        assert_eq!(
            uints(p, "pn_io.line_delay_value"),
            port.peers
                .iter()
                .map(|x| u64::from(x.line_delay))
                .collect::<Vec<_>>(),
            "{ctx}"
        );
        assert_eq!(p.uint("pn_io.mau_type"), u64::from(port.mau_type), "{ctx}");
        assert_eq!(
            p.uint("pn_io.link_state_link"),
            u64::from(port.link),
            "{ctx}"
        );
        assert_eq!(p.uint("pn_io.link_state_port"), 0, "{ctx}");
        assert_eq!(p.uint("pn_io.media_type"), 1, "{ctx}");
    }

    // PDInterfaceDataReal with chassis IDs of every length modulo 4.
    for name in ["", "d", "de", "dev", "pn-device", "pn-device-0001"] {
        let itf = PdInterfaceDataReal {
            chassis_id: name.into(),
            mac: DEV_MAC,
            ip: [192, 168, 0, 2],
            netmask: [255, 255, 255, 0],
            gateway: [192, 168, 0, 1],
        };
        let req = read_req(index::SUB_PD_INTERFACE_DATA_REAL, 0, 0x8000);
        let (_, p) = read_pair(
            &req,
            PnioStatus::OK,
            itf.to_bytes().unwrap(),
            Drep::BIG_ENDIAN,
        );
        assert!(
            uints(&p, "pn_io.block_type").contains(&0x0240),
            "{}",
            p.dump()
        );
        assert_eq!(p.uint("pn_io.length_own_chassis_id"), name.len() as u64);
        if !name.is_empty() {
            assert_eq!(p.get("pn_io.own_chassis_id"), name, "{}", p.dump());
        }
        assert_eq!(p.get("pn_io.macadd"), "02:00:00:00:00:02", "{}", p.dump());
        assert_eq!(p.get("pn_io.ip_address"), "192.168.0.2");
        assert_eq!(p.get("pn_io.subnetmask"), "255.255.255.0");
        assert_eq!(p.get("pn_io.standard_gateway"), "192.168.0.1");
    }

    // PDPortStatistic (0x8072), each counter distinct.
    let st = pdev::PdPortStatistic {
        in_octets: 0x0102_0304,
        out_octets: 0xF000_0001,
        in_discards: 3,
        out_discards: 4,
        in_errors: 5,
        out_errors: 6,
    };
    let req = read_req(index::SUB_PD_PORT_STATISTIC, 0, 0x8001);
    let (_, p) = read_pair(
        &req,
        PnioStatus::OK,
        st.to_bytes().unwrap(),
        Drep::BIG_ENDIAN,
    );
    assert!(
        uints(&p, "pn_io.block_type").contains(&0x0251),
        "{}",
        p.dump()
    );
    for (field, v) in [
        ("pn_io.ifInOctets", st.in_octets),
        ("pn_io.ifOutOctets", st.out_octets),
        ("pn_io.ifInDiscards", st.in_discards),
        ("pn_io.ifOutDiscards", st.out_discards),
        ("pn_io.ifInErrors", st.in_errors),
        ("pn_io.ifOutErrors", st.out_errors),
    ] {
        assert_eq!(p.uint(field), u64::from(v), "{field}\n{}", p.dump());
    }

    // PDRealData: one MultipleBlockHeader per PDev submodule.
    let mut w = Writer::new();
    let itf = PdInterfaceDataReal {
        chassis_id: "dev".into(),
        mac: DEV_MAC,
        ip: [192, 168, 0, 2],
        netmask: [255, 255, 255, 0],
        gateway: [0, 0, 0, 0],
    };
    // Each submodule's block followed by its PDPortStatistic, as p-net and the device send.
    let with_stats = |mut b: Vec<u8>| {
        b.extend_from_slice(&st.to_bytes().unwrap());
        b
    };
    let multiple = |subslot, blocks: &[u8]| {
        pdev::MultipleBlock {
            api: 0,
            slot: 0,
            subslot,
            blocks,
        }
        .to_bytes()
        .unwrap()
    };
    w.bytes(&multiple(0x8000, &with_stats(itf.to_bytes().unwrap())));
    let port = expected[7].clone();
    w.bytes(&multiple(
        port.subslot,
        &with_stats(port.to_bytes().unwrap()),
    ));
    let req = read_req(index::PD_REAL_DATA, 0, 0);
    let (_, p) = read_pair(&req, PnioStatus::OK, w.into_inner(), Drep::BIG_ENDIAN);
    // tshark lists a MultipleBlockHeader's own fields after those of the block inside it:
    // compare as sets of values.
    let sorted = |mut v: Vec<u64>| {
        v.sort_unstable();
        v
    };
    assert_eq!(
        sorted(uints(&p, "pn_io.block_type")),
        vec![0x020f, 0x0240, 0x0251, 0x0251, 0x0400, 0x0400, 0x8009],
        "{}",
        p.dump()
    );
    assert_eq!(
        sorted(uints(&p, "pn_io.subslot_nr")),
        vec![0, 0x8000, u64::from(port.subslot), u64::from(port.subslot)],
        "{}",
        p.dump()
    );
    assert_eq!(p.get("pn_io.own_chassis_id"), "dev");
    assert_eq!(p.get("pn_io.own_port_id"), port.own_port_id);
}

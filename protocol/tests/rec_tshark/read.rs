//! Read requests and responses: I&M0..4, identification, I&M0 filter and diagnosis data, and the
//! error response for the RPC trigger index.

use crate::frames::*;
use pn_protocol::wire::pnio::diagnosis::{
    channel_error_type, ChannelDiagnosis, ChannelProperties, DiagnosisDataRepr, Direction,
    ExtChannelDiagnosis, QualifiedChannelDiagnosis, Severity, Specifier, UserStructure,
};
use pn_protocol::wire::pnio::ident::{
    ApiIdent, IdentificationDataRepr, ModuleIdent, SubmoduleIdent,
};
use pn_protocol::wire::pnio::im::{FilterKind, Im0FilterData, Im1, Im2, Im3, Im4, ImRecord};
use pn_protocol::wire::pnio::record::{
    index, rw_error, ReadReqHeaderRepr, ReadRequest, ReadResponse, NIL_UUID,
};
use pn_protocol::wire::pnio::PnioStatus;
use pn_protocol::wire::rpc::{self, Drep};
use pn_protocol::wire::Emit;
use pn_testkit::tshark::{self};

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

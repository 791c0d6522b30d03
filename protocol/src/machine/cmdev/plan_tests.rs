use super::*;
use crate::wire::pnio::ar::ArProperties;
use crate::wire::pnio::example;
use crate::wire::pnio::expected::ExpectedSubmoduleBlockReq;
use crate::wire::pnio::expected::{
    DataDescription, ExpectedModule, ExpectedSubmodule, SubmoduleProperties,
};
use crate::wire::pnio::iocr::IocrProperties;
use crate::wire::pnio::iocr::{IoObject, IocrApi};

/// The configuration of the device tests: the DAP (slot 0, three submodules without data)
/// and a module with 4 bytes each way at slot 1 (offset 0 of both areas).
fn slots() -> Vec<SlotEntry> {
    let e = |slot, subslot, module_ident, submodule_ident, len| SlotEntry {
        slot,
        subslot,
        module_ident,
        submodule_ident,
        i_len: len,
        i_off: 0,
        q_len: len,
        q_off: 0,
    };
    vec![
        e(0, 1, 1, 1, 0),
        e(0, 0x8000, 1, 2, 0),
        e(0, 0x8001, 1, 3, 0),
        e(1, 1, 0x30, 1, 4),
    ]
}

fn obj(slot: u16, subslot: u16, frame_offset: u16) -> IoObject {
    IoObject {
        slot,
        subslot,
        frame_offset,
    }
}

/// The crate's example IOCR (40 bytes, SendClockFactor 32, DataHoldFactor 3) as a legacy
/// RT_CLASS_1 CR at ReductionRatio 2 with these data objects.
fn iocr(ty: u16, frame_id: u16, objs: Vec<IoObject>, iocs: Vec<IoObject>) -> IocrBlockReq {
    let mut c = example::connect_request().iocrs.remove(0);
    c.iocr_type = ty;
    c.iocr_reference = ty;
    c.properties = IocrProperties(IocrProperties::RT_CLASS_1);
    c.frame_id = frame_id;
    c.reduction_ratio = 2;
    c.apis = vec![IocrApi {
        api: 0,
        io_data_objects: objs,
        iocs,
    }];
    c
}

/// The crate's example request in legacy startup (RT_CLASS_1 is allowed only there) with the
/// IOCRs and expected submodules of [`slots`]; slot 1 expected with `slot1_ident`.
fn request(slot1_ident: u32) -> ConnectRequest {
    let sub = |subslot, ident, props, descriptions| ExpectedSubmodule {
        subslot,
        submodule_ident: ident,
        properties: SubmoduleProperties(props),
        descriptions,
    };
    let mut r = example::connect_request();
    r.ar.properties =
        ArProperties(ArProperties::STATE_ACTIVE | ArProperties::PARAMETERIZATION_SERVER);
    r.iocrs = vec![
        iocr(
            iocr_type::INPUT,
            0xC010,
            vec![
                obj(0, 1, 0),
                obj(0, 0x8000, 1),
                obj(0, 0x8001, 2),
                obj(1, 1, 3),
            ],
            vec![obj(1, 1, 8)],
        ),
        iocr(
            iocr_type::OUTPUT,
            0xFFFF,
            vec![obj(1, 1, 0)],
            vec![
                obj(0, 1, 5),
                obj(0, 0x8000, 6),
                obj(0, 0x8001, 7),
                obj(1, 1, 8),
            ],
        ),
    ];
    r.expected = vec![ExpectedSubmoduleBlockReq {
        version: (1, 0),
        modules: vec![
            ExpectedModule {
                api: 0,
                slot: 0,
                module_ident: 1,
                module_properties: 0,
                submodules: vec![
                    sub(1, 1, 0, vec![DataDescription::input(0)]),
                    sub(0x8000, 2, 0, vec![DataDescription::input(0)]),
                    sub(0x8001, 3, 0, vec![DataDescription::input(0)]),
                ],
            },
            ExpectedModule {
                api: 0,
                slot: 1,
                module_ident: 0x30,
                module_properties: 0,
                submodules: vec![sub(
                    1,
                    slot1_ident,
                    3,
                    vec![DataDescription::input(4), DataDescription::output(4)],
                )],
            },
        ],
    }];
    r
}

fn plan(req: &ConnectRequest) -> Result<ConnectPlan, PnioStatus> {
    plan_connect(
        req,
        &ConnectLimits::default(),
        &slots(),
        [2, 0, 0, 0, 0, 2],
        4,
        0xAA,
        &[],
    )
}

#[test]
fn good_connect_builds_jobs() {
    let p = plan(&request(1)).unwrap();
    assert!(p.module_diff.is_none());
    assert!(p.wrong.is_empty());
    assert_eq!(p.input_frame_id, 0xC010, "requested input FrameID kept");
    assert_eq!(
        p.output_frame_id, 0xC000,
        "output FrameID assigned by the device in the RT_CLASS_1 range"
    );
    assert_eq!(p.period_ns, 2_000_000);
    assert_eq!(p.dht_ns, 6_000_000);
    // Provider: Ethernet (18, tagged) + FrameID (2) + C_SDU offset 3.
    assert_eq!(
        p.provider.items,
        vec![CopyItem {
            frame_off: 23,
            area_off: 0,
            len: 4
        }]
    );
    let sdu = &p.provider.frame[20..60];
    assert_eq!(&sdu[..3], &[0x80, 0x80, 0x80], "DAP IOPS GOOD");
    assert_eq!(sdu[7], 0x80, "slot 1 IOPS");
    assert_eq!(sdu[8], 0x80, "IOCS for the controller's data");
    assert_eq!(p.provider.status_at, 60);
    assert_eq!(p.provider.counter_step, 64);
    // Consumer.
    assert_eq!(p.consumer.items.len(), 1);
    assert_eq!(p.consumer.iops_offs, vec![4]);
    assert_eq!(p.consumer.iocs_offs, vec![8]);
    assert_eq!(p.consumer.scratch, vec![0xAA; 4]);
}

#[test]
fn wrong_submodule_gives_module_diff_and_bad_ioxs() {
    let p = plan(&request(99)).unwrap();
    let md = p.module_diff.expect("ModuleDiffBlock");
    let m = &md.apis[0].modules[0];
    assert_eq!((m.slot, m.module_state), (1, module_state::PROPER_MODULE));
    assert_eq!(m.submodules[0].state.ident_info(), ident_info::WRONG);
    assert_eq!(
        m.submodules[0].submodule_ident, 1,
        "the real ident is reported"
    );
    assert!(p.provider.items.is_empty());
    let sdu = &p.provider.frame[20..60];
    assert_eq!((sdu[7], sdu[8]), (0x00, 0x00));
    assert!(p.consumer.items.is_empty() && p.consumer.iocs_offs.is_empty());
}

#[test]
fn faulty_requests_are_refused_with_pnio_status() {
    let mut r = request(1);
    r.iocrs[0].data_length = 20;
    assert_eq!(plan(&r).unwrap_err().octets(), [0xDB, 0x81, 0x02, 8]);
    let mut r = request(1);
    r.iocrs[0].apis[0].io_data_objects[3].frame_offset = 39;
    assert_eq!(plan(&r).unwrap_err().octets()[..3], [0xDB, 0x81, 0x02]);
    let mut r = request(1);
    r.iocrs[1].reduction_ratio = 3;
    assert_eq!(plan(&r).unwrap_err().octets(), [0xDB, 0x81, 0x02, 11]);
    let mut r = request(1);
    r.alarm_cr = None;
    assert_eq!(plan(&r).unwrap_err().octets(), [0xDB, 0x81, 0x40, 0x03]);
    let mut r = request(1);
    r.iocrs.pop();
    assert_eq!(plan(&r).unwrap_err().octets(), [0xDB, 0x81, 0x40, 0x02]);
    let mut r = request(1);
    r.iocrs[0].properties = IocrProperties(IocrProperties::RT_CLASS_3);
    assert_eq!(plan(&r).unwrap_err().octets(), [0xDB, 0x81, 0x02, 7]);
}

#[test]
fn missing_module_is_reported() {
    let mut r = request(1);
    r.expected[0].modules.push(ExpectedModule {
        api: 0,
        slot: 5,
        module_ident: 7,
        module_properties: 0,
        submodules: vec![],
    });
    let p = plan(&r).unwrap();
    let md = p.module_diff.unwrap();
    let m = &md.apis[0].modules[0];
    assert_eq!((m.slot, m.module_state), (5, module_state::NO_MODULE));
}

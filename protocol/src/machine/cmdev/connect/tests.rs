use super::*;
use crate::wire::pnio::ar::ArProperties;
use crate::wire::pnio::cm::tests::sample_connect_request;
use crate::wire::pnio::iocr::TagHeader;
use crate::wire::Emit;

fn ok(req: &ConnectRequest) {
    assert_eq!(check_connect(req, &ConnectLimits::default()), Ok(()));
}

fn rejected(req: &ConnectRequest, code1: u8, code2: u8) {
    assert_eq!(
        check_connect(req, &ConnectLimits::default()),
        Err(connect_error(code1, code2))
    );
}

fn legacy(mut req: ConnectRequest) -> ConnectRequest {
    req.ar.properties.0 &= !ArProperties::STARTUP_MODE_ADVANCED;
    req
}

fn with_class(mut req: ConnectRequest, class: u32, input_frame_id: u16) -> ConnectRequest {
    for c in &mut req.iocrs {
        c.properties = IocrProperties(class);
        if c.iocr_type == iocr_type::INPUT {
            c.frame_id = input_frame_id;
        }
    }
    req
}

#[test]
fn advanced_startup_with_rt_class_2_is_accepted() {
    ok(&sample_connect_request());
}

#[test]
fn legacy_startup_with_rt_class_1_and_2_is_accepted() {
    ok(&with_class(legacy(sample_connect_request()), 1, 0xC000));
    ok(&with_class(legacy(sample_connect_request()), 2, 0x8000));
}

/// IEC 61158-6-10 IOCRBlockReq: advanced startup allows RT classes 2-5 only (p-net answers
/// DB 81 02 07; it rejected every Connect of pn-controller before the fix).
#[test]
fn advanced_startup_with_rt_class_1_is_rejected_in_iocr_properties() {
    let req = with_class(sample_connect_request(), 1, 0xC000);
    rejected(&req, err1::IOCR_BLOCK, iocr_field::IOCR_PROPERTIES);
}

#[test]
fn unsupported_rt_classes_are_rejected_in_iocr_properties() {
    for class in [0, 3, 4, 5, 6, 15] {
        let req = with_class(legacy(sample_connect_request()), class, 0xC000);
        rejected(&req, err1::IOCR_BLOCK, iocr_field::IOCR_PROPERTIES);
    }
}

#[test]
fn reserved_iocr_property_bits_are_rejected_but_reserved2_is_not_checked() {
    let mut req = sample_connect_request();
    req.iocrs[0].properties.0 |= 0x10;
    rejected(&req, err1::IOCR_BLOCK, iocr_field::IOCR_PROPERTIES);
    let mut req = sample_connect_request();
    req.iocrs[0].properties.0 |= 0x0100_0000;
    rejected(&req, err1::IOCR_BLOCK, iocr_field::IOCR_PROPERTIES);
    let mut req = sample_connect_request();
    req.iocrs[0].properties.0 |= 0x0000_2000;
    ok(&req);
}

#[test]
fn input_frame_id_outside_its_class_range_is_rejected() {
    // Class 1 with a class-2 FrameID: what pn-controller sent before the fix.
    let req = with_class(legacy(sample_connect_request()), 1, 0x8002);
    rejected(&req, err1::IOCR_BLOCK, iocr_field::FRAME_ID);
    let req = with_class(sample_connect_request(), 2, 0xC000);
    rejected(&req, err1::IOCR_BLOCK, iocr_field::FRAME_ID);
    for fid in [0xBBFF, 0x8000] {
        ok(&with_class(sample_connect_request(), 2, fid));
    }
    for fid in [0xC000, 0xF7FF] {
        ok(&with_class(legacy(sample_connect_request()), 1, fid));
    }
    let req = with_class(legacy(sample_connect_request()), 1, 0xF800);
    rejected(&req, err1::IOCR_BLOCK, iocr_field::FRAME_ID);
}

#[test]
fn response_keeps_the_input_frame_id_and_assigns_the_output_one() {
    let req = with_class(legacy(sample_connect_request()), 1, 0xC000);
    let (i, o) = response_frame_ids(&req.iocrs[0], &req.iocrs[1], &[]);
    assert_eq!((i, o), (0xC000, 0xC001));
    let req = sample_connect_request();
    let (i, o) = response_frame_ids(&req.iocrs[0], &req.iocrs[1], &[0x8000]);
    assert_eq!((i, o), (0x8001, 0x8002));
    // An output FrameID in range is kept (the ET200SP answered the S7's 0x8000 with 0x8000).
    let mut req = with_class(sample_connect_request(), 2, 0x8000);
    req.iocrs[1].frame_id = 0x8000;
    assert_eq!(
        response_frame_ids(&req.iocrs[0], &req.iocrs[1], &[]),
        (0x8000, 0x8000)
    );
    // Outside its class's range: the device chooses.
    req.iocrs[1].frame_id = 0xC123;
    assert_eq!(
        response_frame_ids(&req.iocrs[0], &req.iocrs[1], &[]),
        (0x8000, 0x8001)
    );
}

#[test]
fn iocr_timing_fields_are_checked() {
    let field = |f: fn(&mut IocrBlockReq), code2| {
        let mut req = sample_connect_request();
        f(&mut req.iocrs[1]);
        rejected(&req, err1::IOCR_BLOCK, code2);
    };
    field(|c| c.lt = 0x0800, iocr_field::LT);
    field(|c| c.data_length = 39, iocr_field::DATA_LENGTH);
    field(|c| c.data_length = 1441, iocr_field::DATA_LENGTH);
    field(|c| c.send_clock_factor = 3, iocr_field::SEND_CLOCK_FACTOR);
    field(|c| c.send_clock_factor = 256, iocr_field::SEND_CLOCK_FACTOR);
    field(|c| c.reduction_ratio = 0, iocr_field::REDUCTION_RATIO);
    field(|c| c.reduction_ratio = 513, iocr_field::REDUCTION_RATIO);
    field(
        |c| {
            c.send_clock_factor = 128;
            c.reduction_ratio = 256;
        },
        iocr_field::REDUCTION_RATIO,
    );
    field(|c| c.phase = 0, iocr_field::PHASE);
    field(|c| c.phase = 5, iocr_field::PHASE);
    field(
        |c| c.frame_send_offset = 1_000_000,
        iocr_field::FRAME_SEND_OFFSET,
    );
    field(|c| c.data_hold_factor = 0, iocr_field::DATA_HOLD_FACTOR);
    // 4 ms × 481 > 1.92 s.
    field(|c| c.data_hold_factor = 481, iocr_field::DATA_HOLD_FACTOR);
    field(
        |c| c.tag_header = TagHeader::new(1, 6),
        iocr_field::TAG_HEADER,
    );
    field(
        |c| c.tag_header = TagHeader::new(0, 5),
        iocr_field::TAG_HEADER,
    );
    field(|c| c.apis.clear(), iocr_field::NUMBER_OF_APIS);
    let mut req = sample_connect_request();
    req.iocrs[1].data_hold_factor = 480;
    ok(&req);
}

#[test]
fn the_device_interval_bound_applies() {
    let req = sample_connect_request(); // 32 × 4 = 128 (4 ms)
    let limits = |n| ConnectLimits {
        min_device_interval: n,
    };
    assert_eq!(check_connect(&req, &limits(128)), Ok(()));
    assert_eq!(
        check_connect(&req, &limits(129)),
        Err(connect_error(err1::IOCR_BLOCK, iocr_field::REDUCTION_RATIO))
    );
}

#[test]
fn ar_block_fields_are_checked() {
    let field = |f: fn(&mut ArBlockReq), code2| {
        let mut req = sample_connect_request();
        f(&mut req.ar);
        rejected(&req, err1::AR_BLOCK, code2);
    };
    field(|a| a.ar_type = 0x0020, ar_field::AR_TYPE);
    field(|a| a.ar_uuid = Uuid::NIL, ar_field::AR_UUID);
    field(|a| a.cm_initiator_mac[0] = 0x01, ar_field::CM_INITIATOR_MAC);
    field(
        |a| a.cm_initiator_object_uuid = Uuid([9; 16]),
        ar_field::CM_INITIATOR_OBJECT_UUID,
    );
    field(|a| a.properties.0 &= !0x7, ar_field::AR_PROPERTIES);
    field(
        |a| a.properties.0 &= !ArProperties::PARAMETERIZATION_SERVER,
        ar_field::AR_PROPERTIES,
    );
    field(
        |a| a.properties.0 |= ArProperties::COMPANION_AR_MASK,
        ar_field::AR_PROPERTIES,
    );
    field(
        |a| a.cm_initiator_activity_timeout_factor = 0,
        ar_field::ACTIVITY_TIMEOUT,
    );
    field(
        |a| a.cm_initiator_activity_timeout_factor = 1001,
        ar_field::ACTIVITY_TIMEOUT,
    );
    field(
        |a| a.cm_initiator_station_name.clear(),
        ar_field::STATION_NAME_LENGTH,
    );
    field(
        |a| a.cm_initiator_station_name = "x".repeat(241),
        ar_field::STATION_NAME_LENGTH,
    );
    field(
        |a| a.cm_initiator_station_name = "plc\u{7f}".into(),
        ar_field::STATION_NAME,
    );
}

#[test]
fn alarm_cr_fields_are_checked() {
    let field = |f: fn(&mut AlarmCrBlockReq), code2| {
        let mut req = sample_connect_request();
        f(req.alarm_cr.as_mut().unwrap());
        rejected(&req, err1::ALARM_CR_BLOCK, code2);
    };
    field(|a| a.alarm_cr_type = 2, alarm_cr_field::ALARM_CR_TYPE);
    field(|a| a.lt = 0x0800, alarm_cr_field::LT);
    field(
        |a| a.rta_timeout_factor = 0,
        alarm_cr_field::RTA_TIMEOUT_FACTOR,
    );
    field(
        |a| a.rta_timeout_factor = 101,
        alarm_cr_field::RTA_TIMEOUT_FACTOR,
    );
    field(|a| a.rta_retries = 2, alarm_cr_field::RTA_RETRIES);
    field(|a| a.rta_retries = 16, alarm_cr_field::RTA_RETRIES);
    field(
        |a| a.max_alarm_data_length = 199,
        alarm_cr_field::MAX_ALARM_DATA_LENGTH,
    );
    field(
        |a| a.max_alarm_data_length = 1433,
        alarm_cr_field::MAX_ALARM_DATA_LENGTH,
    );
    field(
        |a| a.tag_header_high = TagHeader::new(0, 5),
        alarm_cr_field::TAG_HEADER_HIGH,
    );
    field(
        |a| a.tag_header_low = TagHeader::new(0, 6),
        alarm_cr_field::TAG_HEADER_LOW,
    );
}

#[test]
fn block_counts_are_checked() {
    let mut req = sample_connect_request();
    req.alarm_cr = None;
    rejected(&req, err1::CMRPC, cmrpc::WRONG_BLOCK_COUNT);
    let mut req = sample_connect_request();
    req.iocrs.remove(1);
    rejected(&req, err1::CMRPC, cmrpc::IOCR_MISSING);
    let mut req = sample_connect_request();
    let extra = req.iocrs[0].clone();
    req.iocrs.push(extra);
    rejected(&req, err1::IOCR_BLOCK, iocr_field::IOCR_TYPE);
}

#[test]
fn parse_errors_name_the_faulty_block() {
    let data = sample_connect_request().to_bytes().unwrap();
    assert!(parse_connect(&data).is_ok());
    // Cut the ARBlockReq's station name length field: BlockLength still claims the body.
    let mut cut = data.clone();
    cut[6 + 2 + 16 + 2 + 6 + 16 + 4 + 2 + 2] = 0xFF;
    assert_eq!(
        parse_connect(&cut).unwrap_err(),
        connect_error(err1::AR_BLOCK, 0)
    );
    assert_eq!(
        parse_connect(&data[..3]).unwrap_err(),
        connect_error(err1::CMRPC, cmrpc::WRONG_BLOCK_COUNT)
    );
}

fn limits(min_device_interval: u32) -> ConnectLimits {
    ConnectLimits {
        min_device_interval,
    }
}

/// p-net `pf_cmdev_check_iocr_param`: a SendClockFactor other than a power of two 1..128 is
/// field 10; a cycle (SendClockFactor × ReductionRatio) below MinDeviceInterval is field 11
/// (ReductionRatio), as are the standard's forbidden ratios.
#[test]
fn cycles_outside_the_limits_are_refused_in_their_fields() {
    let with = |scf: u16, rr: u16, mdi: u32| {
        let mut req = sample_connect_request();
        for c in &mut req.iocrs {
            c.send_clock_factor = scf;
            c.reduction_ratio = rr;
            c.phase = 1;
            c.data_hold_factor = 3;
        }
        check_connect(&req, &limits(mdi))
    };
    let refused = |f| Err(connect_error(err1::IOCR_BLOCK, f));
    // 4 ms minimum: 1 ms × 4 and 4 ms × 1 pass, 1 ms × 2 and 2 ms × 1 do not.
    assert_eq!(with(32, 4, 128), Ok(()));
    assert_eq!(with(128, 1, 128), Ok(()));
    assert_eq!(with(32, 2, 128), refused(iocr_field::REDUCTION_RATIO));
    assert_eq!(with(64, 1, 128), refused(iocr_field::REDUCTION_RATIO));
    assert_eq!(with(3, 64, 1), refused(iocr_field::SEND_CLOCK_FACTOR));
    assert_eq!(with(256, 1, 1), refused(iocr_field::SEND_CLOCK_FACTOR));
    assert_eq!(with(32, 3, 1), refused(iocr_field::REDUCTION_RATIO));
    assert_eq!(with(128, 256, 1), refused(iocr_field::REDUCTION_RATIO));
    assert_eq!(with(64, 512, 1), refused(iocr_field::REDUCTION_RATIO));
}

/// The GSDML states `MinDeviceInterval`, a `SendClock` list and a `ReductionRatio` list; an
/// engineering tool offers every pair of the lists whose product reaches MinDeviceInterval
/// and that the standard's table allows (ratio 256 with SendClockFactor <= 64, 512 with <= 32).
/// That set must be exactly what the device accepts, for every bound a configuration can
/// state.
#[test]
fn gsdml_lists_state_exactly_the_accepted_cycles() {
    let mut mdi = 1;
    while mdi <= MAX_MIN_DEVICE_INTERVAL {
        let l = limits(mdi);
        let (scfs, rrs) = (l.send_clock_factors(), l.reduction_ratios());
        assert!(!scfs.is_empty() && !rrs.is_empty(), "{mdi}");
        for scf in 0..=300u16 {
            for rr in 0..=1100u16 {
                let offered = scfs.contains(&scf)
                    && rrs.contains(&rr)
                    && u32::from(scf) * u32::from(rr) >= mdi
                    && !(rr >= 256 && scf > 64)
                    && !(rr == 512 && scf > 32);
                assert_eq!(
                    l.check_cycle(scf, rr).is_ok(),
                    offered,
                    "MinDeviceInterval {mdi}, SendClockFactor {scf}, ReductionRatio {rr}"
                );
            }
        }
        mdi *= 2;
    }
    // The 4 ms bound: every send clock, ratios from 1 (at 4 ms) up.
    assert_eq!(
        limits(128).send_clock_factors(),
        [1, 2, 4, 8, 16, 32, 64, 128]
    );
    assert_eq!(limits(128).reduction_ratios()[0], 1);
    // 128 ms: a 31.25 µs send clock cannot reach it (512 × 31.25 µs = 16 ms).
    assert_eq!(limits(4096).send_clock_factors(), [8, 16, 32, 64, 128]);
}

#[test]
fn connect_errors_are_described_in_words() {
    let d = |c1, c2| describe_connect_error(connect_error(c1, c2)).unwrap();
    assert_eq!(
        d(err1::IOCR_BLOCK, iocr_field::REDUCTION_RATIO),
        "faulty IOCRBlockReq: ReductionRatio"
    );
    assert_eq!(
        d(err1::IOCR_BLOCK, iocr_field::SEND_CLOCK_FACTOR),
        "faulty IOCRBlockReq: SendClockFactor"
    );
    assert_eq!(d(err1::AR_BLOCK, 0), "faulty ARBlockReq: BlockType");
    assert_eq!(
        d(err1::ALARM_CR_BLOCK, 99),
        "faulty AlarmCRBlockReq: field 99"
    );
    assert_eq!(
        d(err1::CMRPC, cmrpc::IOCR_MISSING),
        "CMRPC: IOCRBlockReq missing"
    );
    assert_eq!(
        describe_connect_error(PnioStatus::new(0xDE, 0x80, 0xB0, 0)),
        None
    );
}

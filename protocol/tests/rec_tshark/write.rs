//! Write requests and responses: a single I&M1 write and a multiple write.

use crate::frames::*;
use pn_protocol::wire::pnio::im::{Im1, Im2, ImRecord};
use pn_protocol::wire::pnio::record::{
    index, rw_error, WriteRecord, WriteReqHeaderRepr, WriteRequest, WriteResHeaderRepr,
    WriteResponse,
};
use pn_protocol::wire::pnio::PnioStatus;
use pn_protocol::wire::rpc::{self, Drep};
use pn_protocol::wire::Emit;

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

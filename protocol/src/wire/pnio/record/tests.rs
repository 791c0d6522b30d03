use super::*;
use proptest::prelude::*;

const AR: Uuid = [
    0xef, 0x79, 0x6d, 0x60, 0xef, 0x2b, 0x99, 0x46, 0xb3, 0x9e, 0x85, 0x31, 0xf5, 0xb7, 0xf9, 0x66,
];

/// IODReadReqHeader from pniors-im0-read-req-if-s7.hex (S7-1515 reading I&M0 of 0/0x8000).
const S7_IM0_READ_REQ: [u8; 64] = [
    0x00, 0x09, 0x00, 0x3c, 0x01, 0x00, 0x00, 0x05, 0xef, 0x79, 0x6d, 0x60, 0xef, 0x2b, 0x99, 0x46,
    0xb3, 0x9e, 0x85, 0x31, 0xf5, 0xb7, 0xf9, 0x66, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80, 0x00,
    0x00, 0x00, 0xaf, 0xf0, 0x00, 0x00, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
];

#[test]
fn parses_real_read_request() {
    let r = ReadRequest::parse(&S7_IM0_READ_REQ).unwrap();
    assert_eq!(r.header.seq_number, 5);
    assert_eq!(r.header.ar_uuid, AR);
    assert_eq!(
        r.header.address,
        RecordAddress::new(0, 0, 0x8000, index::IM0)
    );
    assert_eq!(r.header.record_data_length, 0x8000);
    assert!(!r.header.is_implicit());
    assert_eq!(r.to_bytes().unwrap(), S7_IM0_READ_REQ.to_vec());
}

#[test]
fn implicit_read_carries_target_ar_uuid() {
    let mut target = NIL_UUID;
    target[15] = 7;
    let h = ReadReqHeaderRepr {
        seq_number: 1,
        ar_uuid: NIL_UUID,
        address: RecordAddress::new(0, 0, 1, index::IM0_FILTER_DATA),
        record_data_length: 4096,
        target_ar_uuid: target,
    };
    let b = ReadRequest::new(h).to_bytes().unwrap();
    assert_eq!(b.len(), 64);
    assert_eq!(&b[40..56], &target);
    assert_eq!(ReadRequest::parse(&b).unwrap().header, h);
}

#[test]
fn multiple_write_layout_pads_all_but_last() {
    let rec = |seq, idx, n: usize| WriteRecord {
        header: WriteReqHeaderRepr {
            seq_number: seq,
            ar_uuid: AR,
            address: RecordAddress::new(0, 1, 1, idx),
            record_data_length: n as u32,
        },
        data: vec![0xAB; n],
    };
    let req = WriteRequest::multiple(9, AR, vec![rec(10, 1, 6), rec(11, 2, 5)]).unwrap();
    // 64 + 6 + 2 pad + 64 + 5 (no pad after the last) = 141
    assert_eq!(req.header.record_data_length, 141);
    let b = req.to_bytes().unwrap();
    assert_eq!(b.len(), 64 + 141);
    assert_eq!(&b[64 + 64 + 6..64 + 64 + 8], &[0, 0]);
    assert_eq!(WriteRequest::parse(&b).unwrap(), req);
}

/// Regression (fuzz target `pnio_request`): a MultipleWrite whose last record is also
/// padded to 4 bytes, counted in the outer RecordDataLength, parsed but failed to emit
/// ("RecordDataLength does not match the data"). It must round-trip byte-exactly.
#[test]
fn multiple_write_with_padded_last_record_round_trips() {
    let rec = |seq, idx, n: usize| WriteRecord {
        header: WriteReqHeaderRepr {
            seq_number: seq,
            ar_uuid: AR,
            address: RecordAddress::new(0, 1, 1, idx),
            record_data_length: n as u32,
        },
        data: vec![0xAB; n],
    };
    let req = WriteRequest::multiple(9, AR, vec![rec(10, 1, 6), rec(11, 2, 5)]).unwrap();
    let mut b = req.to_bytes().unwrap();
    // Pad the last record too and count the padding in the outer length.
    b.extend_from_slice(&[0, 0, 0]);
    b[36..40].copy_from_slice(&144u32.to_be_bytes());
    let parsed = WriteRequest::parse(&b).unwrap();
    assert_eq!(parsed.header.record_data_length, 144);
    assert_eq!(parsed.records().len(), 2);
    assert_eq!(parsed.buffer_len(), b.len());
    assert_eq!(parsed.to_bytes().unwrap(), b);
    // Built with the constructor: still no padding after the last record.
    assert_eq!(req.to_bytes().unwrap().len(), 64 + 141);
}

#[test]
fn errors_are_named_and_placed() {
    let s = rw_error::read(rw_error::ACC_INVALID_INDEX, 0);
    assert_eq!(s.octets(), [0xDE, 0x80, 0xB0, 0x00]);
    let req = WriteReqHeaderRepr {
        seq_number: 3,
        ar_uuid: AR,
        address: RecordAddress::new(0, 0, 1, index::IM1),
        record_data_length: 58,
    };
    let res = WriteResponse {
        header: WriteResHeaderRepr::answering(
            &req,
            rw_error::write(rw_error::ACC_ACCESS_DENIED, 0),
        ),
        records: vec![],
    };
    let b = res.to_bytes().unwrap();
    assert_eq!(&b[44..48], &[0xDF, 0x80, 0xB6, 0x00]);
    assert_eq!(WriteResponse::parse(&b).unwrap(), res);
    assert_eq!(res.overall_status().error_code1, 0xB6);
}

/// A refused Read/Write echoes the request's header (the ET200SP's answer to a Write for
/// an unknown AR: the header with the status, RecordDataLength 0, no per-record headers).
#[test]
fn refusals_echo_the_request_header() {
    let st = PnioStatus::new(0xDF, 0x81, 0x40, 0x05);
    let req = WriteRequest::multiple(
        7,
        AR,
        vec![WriteRecord {
            header: WriteReqHeaderRepr {
                seq_number: 8,
                ar_uuid: AR,
                address: RecordAddress::new(0, 1, 1, 0x10),
                record_data_length: 2,
            },
            data: vec![1, 2],
        }],
    )
    .unwrap();
    let data = req.to_bytes().unwrap();
    let r = WriteResponse::refusing(&data, st).unwrap();
    assert_eq!(r.header.ar_uuid, AR);
    assert_eq!(r.header.seq_number, 7);
    assert_eq!(r.header.address.index, index::MULTIPLE_WRITE);
    assert_eq!((r.header.record_data_length, r.header.status), (0, st));
    assert!(r.records.is_empty());
    // Only the header must be readable: a broken record list after it is still answered.
    let mut cut = data.clone();
    cut.truncate(HEADER_LEN + 3);
    assert!(WriteResponse::refusing(&cut, st).is_some());
    assert!(WriteResponse::refusing(&data[..10], st).is_none());
    let rr = ReadResponse::refusing(&S7_IM0_READ_REQ).unwrap();
    assert_eq!((rr.header.record_data_length, rr.data.len()), (0, 0));
    assert_eq!(rr.header.address.index, 0xAFF0);
    assert!(
        ReadResponse::refusing(&data).is_none(),
        "a write header is no read header"
    );
}

#[test]
fn write_response_answering() {
    let rec = |seq, n: usize| WriteRecord {
        header: WriteReqHeaderRepr {
            seq_number: seq,
            ar_uuid: AR,
            address: RecordAddress::new(0, 1, 1, 0x10),
            record_data_length: n as u32,
        },
        data: vec![0; n],
    };
    let req = WriteRequest::multiple(4, AR, vec![rec(5, 3), rec(6, 4)]).unwrap();
    let bad = rw_error::write(rw_error::ACC_WRITE_LENGTH_ERROR, 0);
    let res = WriteResponse::answering(&req, &[PnioStatus::OK, bad]).unwrap();
    assert_eq!(res.header.status, bad);
    assert_eq!(res.header.record_data_length, req.header.record_data_length);
    assert_eq!(res.records.len(), 2);
    assert_eq!(res.records[1].seq_number, 6);
    assert_eq!(res.records[1].status, bad);
    assert_eq!(res.overall_status(), bad);
    assert!(WriteResponse::answering(&req, &[PnioStatus::OK]).is_err());
    let single =
        WriteRequest::single(1, AR, RecordAddress::new(0, 0, 1, index::IM1), vec![1]).unwrap();
    let res = WriteResponse::answering(&single, &[PnioStatus::OK]).unwrap();
    assert!(res.records.is_empty() && res.overall_status().is_ok());
}

#[test]
fn rejects_bad_headers() {
    let mut b = S7_IM0_READ_REQ;
    b[3] = 0x3d;
    assert!(ReadRequest::parse(&b).is_err());
    assert_eq!(
        ReadRequest::parse(&S7_IM0_READ_REQ[..63]),
        Err(Error::Truncated)
    );
    let mut b = S7_IM0_READ_REQ;
    b[0] = 0x80; // now a read response header with RecordDataLength 0x8000 but no data
    assert_eq!(RecordPdu::parse(&b), Err(Error::Truncated));
}

fn arb_addr() -> impl Strategy<Value = RecordAddress> {
    (any::<u32>(), any::<u16>(), any::<u16>(), any::<u16>())
        .prop_map(|(a, s, ss, i)| RecordAddress::new(a, s, ss, i))
}

proptest! {
    #[test]
    fn parse_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        let _ = RecordPdu::parse(&bytes);
    }

    #[test]
    fn parse_never_panics_on_headers(mut bytes in proptest::collection::vec(any::<u8>(), 64..300), bt in 0usize..4) {
        let t = [0x0009u16, 0x8009, 0x0008, 0x8008][bt];
        bytes[0..6].copy_from_slice(&[(t >> 8) as u8, t as u8, 0, 60, 1, 0]);
        let _ = RecordPdu::parse(&bytes);
    }

    #[test]
    fn read_round_trip(seq in any::<u16>(), ar in any::<[u8;16]>(), addr in arb_addr(),
                       data in proptest::collection::vec(any::<u8>(), 0..100), av in any::<(u16,u16)>()) {
        let req = ReadReqHeaderRepr { seq_number: seq, ar_uuid: ar, address: addr, record_data_length: 100, target_ar_uuid: NIL_UUID };
        let p = RecordPdu::ReadReq(ReadRequest::new(req));
        prop_assert_eq!(RecordPdu::parse(&p.to_bytes().unwrap()).unwrap(), p);
        let mut res = ReadResponse::answering(&req, data).unwrap();
        res.header.add_val1 = av.0;
        res.header.add_val2 = av.1;
        let p = RecordPdu::ReadRes(res);
        prop_assert_eq!(RecordPdu::parse(&p.to_bytes().unwrap()).unwrap(), p);
    }

    #[test]
    fn write_round_trip(seq in any::<u16>(), ar in any::<[u8;16]>(), addrs in proptest::collection::vec(arb_addr(), 1..5),
                        lens in proptest::collection::vec(0usize..20, 5), multi in any::<bool>(), st in any::<[u8;4]>()) {
        let addrs: Vec<_> = addrs.into_iter().map(|mut a| { if a.index == index::MULTIPLE_WRITE { a.index = 1 }; a }).collect();
        let req = if multi {
            let recs = addrs.iter().enumerate().map(|(i, a)| WriteRecord {
                header: WriteReqHeaderRepr { seq_number: seq.wrapping_add(i as u16), ar_uuid: ar, address: *a, record_data_length: lens[i] as u32 },
                data: vec![i as u8; lens[i]],
            }).collect();
            WriteRequest::multiple(seq, ar, recs).unwrap()
        } else {
            WriteRequest::single(seq, ar, addrs[0], vec![7; lens[0]]).unwrap()
        };
        let p = RecordPdu::WriteReq(req.clone());
        prop_assert_eq!(RecordPdu::parse(&p.to_bytes().unwrap()).unwrap(), p);
        let status = PnioStatus::from_bytes(&st).unwrap();
        let res = WriteResponse {
            header: WriteResHeaderRepr::answering(&req.header, status),
            records: if multi { req.records().iter().map(|(h, _)| WriteResHeaderRepr::answering(h, PnioStatus::OK)).collect() } else { vec![] },
        };
        let p = RecordPdu::WriteRes(res);
        prop_assert_eq!(RecordPdu::parse(&p.to_bytes().unwrap()).unwrap(), p);
    }
}

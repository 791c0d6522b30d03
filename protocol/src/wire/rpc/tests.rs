use super::*;
use crate::wire::pnio::PnioStatus;
use crate::wire::Emit;
use proptest::prelude::*;

#[test]
fn pnio_uuids() {
    assert_eq!(
        PNIO_DEVICE_INTERFACE.to_string(),
        "dea00001-6c97-11d1-8271-00a02442df7d"
    );
    assert_eq!(
        PNIO_CONTROLLER_INTERFACE.to_string(),
        "dea00002-6c97-11d1-8271-00a02442df7d"
    );
    assert_eq!(PNIO_SUPERVISOR_INTERFACE.time_low(), 0xDEA0_0003);
    assert_eq!(PNIO_PARAMSERVER_INTERFACE.time_low(), 0xDEA0_0004);
    let o = Uuid::pnio_object(1, 0x0301, 0x002A);
    assert_eq!(o.to_string(), "dea00000-6c97-11d1-8271-00010301002a");
    assert_eq!(o.pnio_object_ids(), Some((1, 0x0301, 0x002A)));
    assert_eq!(PNIO_DEVICE_INTERFACE.pnio_object_ids(), None);
    assert_eq!(
        "DEA00001-6C97-11D1-8271-00A02442DF7D"
            .parse::<Uuid>()
            .unwrap(),
        PNIO_DEVICE_INTERFACE
    );
    assert!("dea00001-6c97-11d1-8271_00a02442df7d"
        .parse::<Uuid>()
        .is_err());
    assert!("dea00001-6c97-11d1-8271-00a02442df7"
        .parse::<Uuid>()
        .is_err());
    // Little-endian wire form of the device interface (as in the S7 connect request).
    assert_eq!(
        PNIO_DEVICE_INTERFACE.to_wire(Endian::Little),
        [
            0x01, 0x00, 0xa0, 0xde, 0x97, 0x6c, 0xd1, 0x11, 0x82, 0x71, 0x00, 0xa0, 0x24, 0x42,
            0xdf, 0x7d
        ]
    );
}

fn sample_header(drep: Drep) -> RpcHeader {
    let mut h = RpcHeader::request(
        drep,
        Uuid::pnio_object(1, 2, 3),
        PNIO_DEVICE_INTERFACE,
        Uuid::from_fields(0x01020304, 0x0506, 0x0708, [9, 10, 11, 12, 13, 14, 15, 16]),
        7,
        opnum::CONNECT,
    );
    h.server_boot = 0x11223344;
    h.serial = 0x0102;
    h
}

#[test]
fn header_both_endians() {
    for drep in [Drep::LITTLE_ENDIAN, Drep::BIG_ENDIAN] {
        let h = sample_header(drep);
        let p = RpcPacket::new(h, vec![1, 2, 3]).to_bytes().unwrap();
        assert_eq!(p.len(), 83);
        let q = RpcPacket::parse(&p).unwrap();
        assert_eq!(q.body, vec![1, 2, 3]);
        assert_eq!(q.header.fragment_len, 3);
        assert_eq!(
            RpcHeader {
                fragment_len: 0,
                ..q.header
            },
            h
        );
        let seq = &p[64..68];
        if drep.is_little_endian() {
            assert_eq!(seq, &[7, 0, 0, 0]);
        } else {
            assert_eq!(seq, &[0, 0, 0, 7]);
        }
        assert_eq!((p[7], p[79]), (1, 2));
    }
}

#[test]
fn response_header() {
    let req = sample_header(Drep::LITTLE_ENDIAN);
    let r = RpcHeader::response_to(&req);
    assert_eq!(r.packet_type, PacketType::Response);
    assert_eq!(
        (r.activity, r.sequence, r.opnum, r.drep),
        (req.activity, 7, 0, req.drep)
    );
    assert_eq!(r.flags1, flags1::LAST_FRAG | flags1::NO_FACK);
    assert_eq!(RpcHeader::reply_to(&req, PacketType::Fack).flags1, 0);
}

#[test]
fn ndr_headers() {
    let req = PnioRequest::new(0x1000, vec![0xAA; 5]);
    let le = req.ndr(Drep::LITTLE_ENDIAN).to_bytes().unwrap();
    assert_eq!(&le[..8], &[0, 0x10, 0, 0, 5, 0, 0, 0]);
    assert_eq!(PnioRequest::parse(&le, Drep::LITTLE_ENDIAN).unwrap(), req);
    let be = req.ndr(Drep::BIG_ENDIAN).to_bytes().unwrap();
    assert_eq!(PnioRequest::parse(&be, Drep::BIG_ENDIAN).unwrap(), req);
    let res = PnioResponse::to_request(&req, PnioStatus::new(0xDB, 0x81, 0x40, 0x04), vec![]);
    let le = res.ndr(Drep::LITTLE_ENDIAN).to_bytes().unwrap();
    assert_eq!(&le[..4], &[0x04, 0x40, 0x81, 0xDB]);
    assert_eq!(PnioResponse::parse(&le, Drep::LITTLE_ENDIAN).unwrap(), res);
    let be = res.ndr(Drep::BIG_ENDIAN).to_bytes().unwrap();
    assert_eq!(&be[..4], &[0xDB, 0x81, 0x40, 0x04]);
    // Truncated data and inconsistent counts are errors.
    let mut bad = PnioRequest::new(10, vec![1; 4])
        .ndr(Drep::BIG_ENDIAN)
        .to_bytes()
        .unwrap();
    bad.pop();
    assert_eq!(
        PnioRequest::parse(&bad, Drep::BIG_ENDIAN),
        Err(Error::Truncated)
    );
    bad[19] = 9;
    assert!(PnioRequest::parse(&bad, Drep::BIG_ENDIAN).is_err());
    // ArgsMaximum below the data length: MaximumCount still covers the data, re-parse works.
    let small = PnioRequest::new(1, vec![7; 3]);
    let b = small.ndr(Drep::LITTLE_ENDIAN).to_bytes().unwrap();
    assert_eq!(&b[8..12], &[3, 0, 0, 0]);
    assert_eq!(PnioRequest::parse(&b, Drep::LITTLE_ENDIAN).unwrap(), small);
}

#[test]
fn fack_and_fault() {
    let f = FackBody {
        version: 1,
        window_size: 1,
        max_tsdu: 1464,
        max_frag_size: 1464,
        serial_num: 0,
        selack: vec![0x5],
    };
    for d in [Drep::LITTLE_ENDIAN, Drep::BIG_ENDIAN] {
        assert_eq!(
            FackBody::parse(&f.ndr(d).to_bytes().unwrap(), d).unwrap(),
            f
        );
        let fb = FaultBody {
            status: reject_status::NCA_UNK_IF,
        };
        assert_eq!(
            FaultBody::parse(&fb.ndr(d).to_bytes().unwrap(), d).unwrap(),
            fb
        );
    }
    // A selack count larger than the body is an error, not an allocation.
    let mut b = f.ndr(Drep::BIG_ENDIAN).to_bytes().unwrap();
    b[14] = 0xff;
    assert_eq!(FackBody::parse(&b, Drep::BIG_ENDIAN), Err(Error::Truncated));
}

#[test]
fn fragmentation() {
    let h = sample_header(Drep::LITTLE_ENDIAN);
    let body: Vec<u8> = (0..2500u32).map(|i| i as u8).collect();
    let frags = fragment(&h, &body, 1000, true).unwrap();
    assert_eq!(frags.len(), 3);
    assert_eq!(frags[0].header.flags1, flags1::IDEMPOTENT | flags1::FRAG);
    assert_eq!(frags[1].header.flags1, flags1::IDEMPOTENT | flags1::FRAG);
    assert_eq!(
        frags[2].header.flags1,
        flags1::IDEMPOTENT | flags1::FRAG | flags1::LAST_FRAG | flags1::NO_FACK
    );
    assert_eq!(
        frags
            .iter()
            .map(|f| f.header.fragment_num)
            .collect::<Vec<_>>(),
        vec![0, 1, 2]
    );
    assert_eq!(frags[2].body.len(), 500);
    let joined: Vec<u8> = frags.iter().flat_map(|f| f.body.clone()).collect();
    assert_eq!(joined, body);
    let one = fragment(&h, &body[..10], 1000, true).unwrap();
    assert_eq!(one.len(), 1);
    assert!(!one[0].header.is_fragment());
    assert!(fragment(&h, &body, 0, true).is_err());
    let nf = fragment(&h, &body, 1000, false).unwrap();
    assert!(nf.iter().all(|f| !f.header.wants_fack()));
}

fn arb_uuid() -> impl Strategy<Value = Uuid> {
    any::<[u8; 16]>().prop_map(Uuid)
}

proptest! {
    #[test]
    fn parse_never_panics(data in proptest::collection::vec(any::<u8>(), 0..300)) {
        let _ = RpcPacket::parse(&data);
        let _ = Header::new_checked(&data[..]).map(|h| (h.body().len(), h.object()));
        for d in [Drep::LITTLE_ENDIAN, Drep::BIG_ENDIAN] {
            let _ = PnioRequest::parse(&data, d);
            let _ = PnioResponse::parse(&data, d);
            let _ = FackBody::parse(&data, d);
            let _ = FaultBody::parse(&data, d);
        }
    }

    #[test]
    fn header_round_trip(le in any::<bool>(), pt in any::<u8>(), f1 in any::<u8>(), f2 in any::<u8>(),
                         serial in any::<u16>(), o in arb_uuid(), i in arb_uuid(), a in arb_uuid(),
                         boot in any::<u32>(), ifv in any::<u32>(), seq in any::<u32>(), op in any::<u16>(),
                         ih in any::<u16>(), ah in any::<u16>(), fnum in any::<u16>(), auth in any::<u8>(),
                         body in proptest::collection::vec(any::<u8>(), 0..100)) {
        let h = RpcHeader {
            packet_type: PacketType::from_u8(pt), flags1: f1, flags2: f2,
            drep: if le { Drep::LITTLE_ENDIAN } else { Drep::BIG_ENDIAN }, serial,
            object: o, interface: i, activity: a, server_boot: boot, interface_version: ifv,
            sequence: seq, opnum: op, interface_hint: ih, activity_hint: ah,
            fragment_len: body.len() as u16, fragment_num: fnum, auth_proto: auth,
        };
        let p = RpcPacket::new(h, body);
        let bytes = p.to_bytes().unwrap();
        prop_assert_eq!(RpcPacket::parse(&bytes).unwrap(), p);
    }

    #[test]
    fn ndr_round_trip(le in any::<bool>(), am in any::<u32>(), st in any::<u32>(),
                      data in proptest::collection::vec(any::<u8>(), 0..100)) {
        let d = if le { Drep::LITTLE_ENDIAN } else { Drep::BIG_ENDIAN };
        let am = am.max(data.len() as u32);
        let r = PnioRequest::new(am, data.clone());
        prop_assert_eq!(PnioRequest::parse(&r.ndr(d).to_bytes().unwrap(), d).unwrap(), r);
        let s = PnioResponse { status: PnioStatus::from_bytes(&st.to_be_bytes()).unwrap(), args_maximum: am, data };
        prop_assert_eq!(PnioResponse::parse(&s.ndr(d).to_bytes().unwrap(), d).unwrap(), s);
    }

    #[test]
    fn uuid_string_round_trip(u in arb_uuid()) {
        prop_assert_eq!(u.to_string().parse::<Uuid>().unwrap(), u);
        prop_assert_eq!(Uuid::from_wire(&u.to_wire(Endian::Little), Endian::Little).unwrap(), u);
    }
}

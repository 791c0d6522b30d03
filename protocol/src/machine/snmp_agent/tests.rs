//! The agent against requests built with the wire codec (net-snmp's own requests are checked
//! in pn-device's `l2_wire` lab test and in the farm's).

use super::*;

fn agent() -> SnmpAgent {
    SnmpAgent::new(SystemInfo {
        descr: "pn-device test".into(),
        contact: String::new(),
        name: "dev-1".into(),
        location: "hall 1".into(),
    })
}

fn request(version: i64, community: &[u8], tag: u8, names: &[&[u32]], f: (i64, i64)) -> Vec<u8> {
    SnmpMessage {
        version,
        community: community.to_vec(),
        pdu: Pdu {
            tag,
            request_id: 4242,
            error_status: f.0,
            error_index: f.1,
            bindings: names.iter().map(|n| bind(n, Value::Null)).collect(),
        },
    }
    .to_bytes()
    .unwrap()
}

/// Decode a response into (error status, error index, bindings).
fn decode(resp: &[u8]) -> (i64, i64, Vec<VarBind>) {
    let m = SnmpMessage::parse(resp).unwrap();
    assert_eq!(m.pdu.tag, pdu::RESPONSE);
    assert_eq!(m.pdu.request_id, 4242);
    (m.pdu.error_status, m.pdu.error_index, m.pdu.bindings)
}

const DESCR: &[u32] = &[1, 3, 6, 1, 2, 1, 1, 1, 0];
const NAME: &[u32] = &[1, 3, 6, 1, 2, 1, 1, 5, 0];

#[test]
fn get_and_get_next() {
    let a = agent();
    let r = a
        .handle(&request(1, b"public", pdu::GET, &[DESCR, NAME], (0, 0)), 5)
        .unwrap();
    let (es, _, vb) = decode(&r);
    assert_eq!(es, 0);
    assert_eq!(
        vb[0],
        bind(DESCR, Value::OctetString(b"pn-device test".to_vec()))
    );
    assert_eq!(vb[1].value, Value::OctetString(b"dev-1".to_vec()));
    // GETNEXT from the system group walks to sysDescr.0, then past the end.
    let r = a
        .handle(&request(0, b"public", pdu::GET_NEXT, &[&SYSTEM], (0, 0)), 5)
        .unwrap();
    assert_eq!(decode(&r).2[0].name, DESCR.to_vec());
    let last: &[u32] = &[1, 3, 6, 1, 2, 1, 1, 7, 0];
    let r = a
        .handle(&request(0, b"public", pdu::GET_NEXT, &[last], (0, 0)), 5)
        .unwrap();
    assert_eq!(decode(&r).0, status::NO_SUCH_NAME);
    let r = a
        .handle(&request(1, b"public", pdu::GET_NEXT, &[last], (0, 0)), 5)
        .unwrap();
    assert_eq!(decode(&r).2[0].value, Value::EndOfMibView);
    // Unknown instance: v1 noSuchName with index, v2c noSuchInstance / noSuchObject.
    let bad: &[u32] = &[1, 3, 6, 1, 2, 1, 1, 5, 1];
    let r = a
        .handle(&request(0, b"public", pdu::GET, &[NAME, bad], (0, 0)), 5)
        .unwrap();
    assert_eq!(decode(&r).0, status::NO_SUCH_NAME);
    assert_eq!(decode(&r).1, 2);
    let r = a
        .handle(&request(1, b"public", pdu::GET, &[bad], (0, 0)), 5)
        .unwrap();
    assert_eq!(decode(&r).2[0].value, Value::NoSuchInstance);
    let r = a
        .handle(
            &request(1, b"public", pdu::GET, &[&[1, 3, 6, 1, 9]], (0, 0)),
            5,
        )
        .unwrap();
    assert_eq!(decode(&r).2[0].value, Value::NoSuchObject);
}

#[test]
fn bulk_set_and_refusals() {
    let a = agent();
    // GETBULK walks the whole group and ends with endOfMibView.
    let r = a
        .handle(
            &request(1, b"public", pdu::GET_BULK, &[&SYSTEM], (0, 10)),
            77,
        )
        .unwrap();
    let vb = decode(&r).2;
    assert_eq!(vb.len(), 8);
    assert_eq!(
        vb[2],
        bind(&[1, 3, 6, 1, 2, 1, 1, 3, 0], Value::TimeTicks(77))
    );
    assert_eq!(vb[6].value, Value::Integer(78));
    assert_eq!(vb[7].value, Value::EndOfMibView);
    // GETBULK is v2c only.
    assert!(a
        .handle(
            &request(0, b"public", pdu::GET_BULK, &[&SYSTEM], (0, 10)),
            5
        )
        .is_none());
    // SET is refused.
    let r = a
        .handle(&request(1, b"public", pdu::SET, &[NAME], (0, 0)), 5)
        .unwrap();
    assert_eq!(decode(&r).0, status::NOT_WRITABLE);
    let r = a
        .handle(&request(0, b"public", pdu::SET, &[NAME], (0, 0)), 5)
        .unwrap();
    assert_eq!(decode(&r).0, status::READ_ONLY);
    let r = a
        .handle(
            &request(0, b"public", pdu::SET, &[&[1, 3, 6, 9]], (0, 0)),
            5,
        )
        .unwrap();
    assert_eq!((decode(&r).0, decode(&r).1), (status::NO_SUCH_NAME, 1));
    // Wrong community / version / PDU: no answer.
    assert!(a
        .handle(&request(1, b"private", pdu::GET, &[NAME], (0, 0)), 5)
        .is_none());
    assert!(a
        .handle(&request(3, b"public", pdu::GET, &[NAME], (0, 0)), 5)
        .is_none());
    assert!(a
        .handle(&request(1, b"public", pdu::RESPONSE, &[NAME], (0, 0)), 5)
        .is_none());
}

#[test]
fn too_big_answers_without_bindings() {
    let mut a = agent();
    a.info.descr = "x".repeat(400);
    let names: Vec<&[u32]> = vec![DESCR; 5];
    let r = a
        .handle(&request(1, b"public", pdu::GET, &names, (0, 0)), 5)
        .unwrap();
    let (es, ei, vb) = decode(&r);
    assert_eq!((es, ei), (status::TOO_BIG, 0));
    assert!(vb.is_empty());
}

/// The bytes of a response are those the agent sent before it moved into this crate
/// (captured from its v2c GetRequest sysName.0 answer).
#[test]
fn response_bytes_are_unchanged() {
    let req = request(1, b"public", pdu::GET, &[NAME], (0, 0));
    let r = agent().handle(&req, 5).unwrap();
    let expected: &[u8] = &[
        0x30, 0x2c, 0x02, 0x01, 0x01, 0x04, 0x06, b'p', b'u', b'b', b'l', b'i', b'c', 0xa2, 0x1f,
        0x02, 0x02, 0x10, 0x92, 0x02, 0x01, 0x00, 0x02, 0x01, 0x00, 0x30, 0x13, 0x30, 0x11, 0x06,
        0x08, 0x2b, 0x06, 0x01, 0x02, 0x01, 0x01, 0x05, 0x00, 0x04, 0x05, b'd', b'e', b'v', b'-',
        b'1',
    ];
    assert_eq!(r, expected);
}

#[test]
fn garbage_never_panics() {
    let a = agent();
    let good = request(1, b"public", pdu::GET_BULK, &[&SYSTEM], (0, 10));
    for cut in 0..good.len() {
        let _ = a.handle(&good[..cut], 1);
    }
    let mut x = good.clone();
    for i in 0..x.len() {
        for v in [0x00, 0x7f, 0x80, 0x84, 0xff] {
            let old = x[i];
            x[i] = v;
            if let Some(r) = a.handle(&x, 1) {
                assert!(r.len() <= MAX_MESSAGE);
            }
            x[i] = old;
        }
    }
    // Deep nesting / huge lengths.
    assert!(a.handle(&[0x30, 0x84, 0xff, 0xff, 0xff, 0xff], 1).is_none());
    assert!(a.handle(&[0x30; 1000], 1).is_none());
    assert!(a.handle(&vec![0x30; MAX_MESSAGE + 1], 1).is_none());
}

use super::*;
use crate::wire::rt::FrameId;
use crate::wire::Emit;
use crate::wire::Error;

fn hex(s: &str) -> Vec<u8> {
    s.split_whitespace()
        .map(|t| u8::from_str_radix(t, 16).unwrap())
        .collect()
}

#[test]
fn set_response_pnet_round_trip() {
    // p-net Set response (pniors-dcp-set-res-pnet.hex), after the FrameID.
    let pdu = hex("04 01 03 00 01 2d 00 00 00 08 05 04 00 03 01 02 00 00");
    let r = DcpRepr::parse(&pdu).unwrap();
    assert_eq!(r.service_id, ServiceId::Set);
    assert_eq!(r.service_type, ServiceType::ResponseSuccess);
    assert_eq!(r.xid, 0x0300012d);
    assert_eq!(
        r.blocks,
        vec![DcpBlock::new(DcpValue::Response {
            option: 1,
            suboption: 2,
            error: BlockError::OK
        })]
    );
    assert_eq!(r.to_bytes().unwrap(), pdu);
    assert_eq!(
        r,
        DcpRepr::set_response(0x0300012d, &[(1, 2, BlockError::OK)])
    );
}

#[test]
fn ident_request_by_name() {
    let name = NameOfStation::new("et200sp").unwrap();
    let r = DcpRepr::identify_request_by_name(0x01140013, &name, 1);
    let pdu = r.to_bytes().unwrap();
    assert_eq!(
        pdu,
        hex("05 00 01 14 00 13 00 01 00 0c 02 02 00 07 65 74 32 30 30 73 70 00")
    );
    assert_eq!(DcpRepr::parse(&pdu).unwrap(), r);
    assert_eq!(r.frame_id(), FrameId::DCP_IDENTIFY_REQUEST);
    let own = [DcpValue::NameOfStation(b"et200sp".to_vec())];
    assert!(r.identify_filter_matches(&own));
    assert!(!r.identify_filter_matches(&[DcpValue::NameOfStation(b"x".to_vec())]));
    assert!(DcpRepr::identify_request_all(1, 0).identify_filter_matches(&[]));
}

#[test]
fn get_request_selectors() {
    let r = DcpRepr::get_request(7, &[(1, 2), (2, 2)]);
    let pdu = r.to_bytes().unwrap();
    assert_eq!(pdu, hex("03 00 00 00 00 07 00 00 00 04 01 02 02 02"));
    assert_eq!(DcpRepr::parse(&pdu).unwrap(), r);
}

#[test]
fn malformed_inputs() {
    assert_eq!(DcpRepr::parse(&[]), Err(Error::Truncated));
    // DCPDataLength beyond the buffer.
    assert_eq!(
        DcpRepr::parse(&hex("05 00 00 00 00 01 00 00 00 10 ff ff 00 00")),
        Err(Error::Truncated)
    );
    // Block length beyond the data area.
    assert_eq!(
        DcpRepr::parse(&hex("05 00 00 00 00 01 00 00 00 04 ff ff 00 05")),
        Err(Error::Truncated)
    );
    // Prefix missing in a response block.
    assert!(DcpRepr::parse(&hex("05 01 00 00 00 01 00 00 00 06 02 02 00 01 61 00")).is_err());
    assert!(DcpRepr::parse(&hex("09 00 00 00 00 01 00 00 00 00")).is_err());
}

#[test]
fn name_rules() {
    for ok in [
        "et200sp",
        "rt-labs-dev",
        "a",
        "cpu1500.profinet-schnittstellexb19f01",
        "xn--mnchen-3ya",
        "port-001x",
        "port-01",
        "1.2.3",
        "1.2.3.4.5",
        "1.2.3.a",
        "1234.1.1.1",
    ] {
        assert!(NameOfStation::new(ok).is_ok(), "{ok}");
    }
    let long_label = "a".repeat(64);
    let too_long = ["a"; 121].join(".");
    for (bad, why) in [
        ("", NameError::Empty),
        ("IM151-3PN", NameError::InvalidChar),
        ("a_b", NameError::InvalidChar),
        ("-a", NameError::HyphenAtLabelEdge),
        ("a-.b", NameError::HyphenAtLabelEdge),
        ("a..b", NameError::EmptyLabel),
        ("a.", NameError::EmptyLabel),
        ("a--b", NameError::DoubleHyphen),
        ("xn--a--b", NameError::DoubleHyphen),
        ("port-001", NameError::PortName),
        ("port-001-00001", NameError::PortName),
        ("port-001.plc", NameError::PortName),
        ("192.168.0.1", NameError::IpAddressLike),
        (long_label.as_str(), NameError::LabelTooLong),
        (too_long.as_str(), NameError::TooLong),
    ] {
        assert_eq!(NameOfStation::new(bad).err(), Some(why), "{bad:?}");
    }
    assert_eq!(
        NameOfStation::new(&["a"; 120].join("."))
            .unwrap()
            .as_str()
            .len(),
        239
    );
}

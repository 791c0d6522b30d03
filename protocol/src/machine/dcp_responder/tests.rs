use super::*;
use crate::wire::ethernet::EthernetRepr;

const DEV: MacAddr = MacAddr([0x02, 0x00, 0x00, 0x00, 0x12, 0x34]);
const CTRL: MacAddr = MacAddr([0x02, 0x00, 0x00, 0x00, 0x00, 0x01]);

/// A device identity (the DCP client's tests use it too).
pub(crate) fn ident() -> DcpIdentity {
    DcpIdentity {
        mac: DEV,
        station_name: "dev-1".into(),
        device_vendor: "pn-device".into(),
        vendor_id: 0x0493,
        device_id: 1,
        ip: Ipv4Addr::new(192, 168, 0, 10),
        mask: Ipv4Addr::new(255, 255, 255, 0),
        gateway: Ipv4Addr::new(192, 168, 0, 10),
        device_instance: (0, 1),
        device_initiative: false,
    }
}

fn req_frame(r: &DcpRepr, dst: MacAddr) -> Vec<u8> {
    r.build_frame(dst, CTRL, None).unwrap()
}

fn parse(f: &[u8]) -> DcpRepr {
    let (eth, _, r) = DcpRepr::parse_frame(f).unwrap();
    assert_eq!(eth.dst, CTRL);
    assert_eq!(eth.src, DEV);
    r
}

#[test]
fn identify_all_name_alias_and_delay() {
    let t0 = Instant::from_millis(1000);
    let mut d = DcpResponder::new(ident(), t0);
    // No delay with factor 1.
    let o = d.on_frame(
        &req_frame(&DcpRepr::identify_request_all(7, 1), MacAddr::DCP_IDENTIFY),
        t0,
    );
    assert_eq!(o.frames.len(), 1);
    let r = parse(&o.frames[0]);
    assert_eq!(r.service_id, ServiceId::Identify);
    assert_eq!(r.xid, 7);
    assert_eq!(r.name_of_station(), Some(&b"dev-1"[..]));
    // Factor 100: 0x1234 % 100 = 60 -> 600 ms.
    let o = d.on_frame(
        &req_frame(
            &DcpRepr::identify_request_all(8, 100),
            MacAddr::DCP_IDENTIFY,
        ),
        t0,
    );
    assert!(o.frames.is_empty() && o.handled);
    assert_eq!(d.next_deadline(), Some(t0 + Duration::from_millis(600)));
    assert!(d.poll(t0 + Duration::from_millis(599)).is_empty());
    let due = d.poll(t0 + Duration::from_millis(600));
    assert_eq!(due.len(), 1);
    assert_eq!(parse(&due[0]).xid, 8);
    // By name: match and mismatch.
    let n = NameOfStation::new("dev-1").unwrap();
    let o = d.on_frame(
        &req_frame(
            &DcpRepr::identify_request_by_name(9, &n, 0),
            MacAddr::DCP_IDENTIFY,
        ),
        t0,
    );
    assert_eq!(o.frames.len(), 1);
    let n2 = NameOfStation::new("other").unwrap();
    let o = d.on_frame(
        &req_frame(
            &DcpRepr::identify_request_by_name(9, &n2, 0),
            MacAddr::DCP_IDENTIFY,
        ),
        t0,
    );
    assert!(o.frames.is_empty());
    // By alias: only once the LLDP neighbour gave us one.
    let alias = b"port-001.plc".to_vec();
    let rq = req_frame(
        &DcpRepr::identify_request_by_alias(10, &alias, 0),
        MacAddr::DCP_IDENTIFY,
    );
    assert!(d.on_frame(&rq, t0).frames.is_empty());
    d.set_aliases(vec![alias.clone()]);
    let o = d.on_frame(&rq, t0);
    let r = parse(&o.frames[0]);
    assert!(r
        .blocks
        .iter()
        .any(|b| b.value == DcpValue::AliasName(alias.clone())));
}

#[test]
fn set_name_ip_rules() {
    let t0 = Instant::from_millis(0);
    let mut d = DcpResponder::new(ident(), t0);
    let n = NameOfStation::new("new-name").unwrap();
    let o = d.on_frame(&req_frame(&DcpRepr::set_name(1, &n, true), DEV), t0);
    let r = parse(&o.frames[0]);
    assert_eq!(
        r,
        DcpRepr::set_response(1, &[(2, 2, BlockError::OK)]),
        "{r:?}"
    );
    assert_eq!(
        o.events,
        vec![DcpEvent::NameAssigned {
            name: "new-name".into(),
            permanent: true
        }]
    );
    // Invalid name.
    let bad = DcpRepr::set_request(
        2,
        vec![DcpBlock::with_qualifier(
            DcpValue::NameOfStation(b"Bad_Name".to_vec()),
            1,
        )],
    );
    let o = d.on_frame(&req_frame(&bad, DEV), t0);
    assert_eq!(
        parse(&o.frames[0]),
        DcpRepr::set_response(2, &[(2, 2, BlockError::SUBOPTION_NOT_SET)])
    );
    // IP while an AR is active: refused; same IP accepted; name change aborts the AR.
    d.set_ar_active(true);
    let ip = Ipv4Addr::new(10, 0, 0, 5);
    let m = Ipv4Addr::new(255, 0, 0, 0);
    let o = d.on_frame(&req_frame(&DcpRepr::set_ip(3, ip, m, ip, false), DEV), t0);
    assert_eq!(
        parse(&o.frames[0]),
        DcpRepr::set_response(3, &[(1, 2, BlockError::IN_OPERATION)])
    );
    let n = NameOfStation::new("third").unwrap();
    let o = d.on_frame(&req_frame(&DcpRepr::set_name(4, &n, false), DEV), t0);
    assert!(o.events.contains(&DcpEvent::AbortArs {
        reason: "DCP station name changed"
    }));
    d.set_ar_active(false);
    let o = d.on_frame(&req_frame(&DcpRepr::set_ip(5, ip, m, ip, false), DEV), t0);
    assert_eq!(
        o.events,
        vec![DcpEvent::IpAssigned {
            ip,
            mask: m,
            gateway: ip,
            permanent: false
        }]
    );
    assert_eq!(d.identity().ip, ip);
    // Get request.
    let o = d.on_frame(
        &req_frame(&DcpRepr::get_request(6, &[(2, 2), (1, 2), (3, 12)]), DEV),
        t0,
    );
    let r = parse(&o.frames[0]);
    assert_eq!(r.name_of_station(), Some(&b"third"[..]));
    assert!(r.blocks.iter().any(|b| b.value
        == DcpValue::Response {
            option: 3,
            suboption: 12,
            error: BlockError::OPTION_UNSUPPORTED
        }));
    // Set addressed to someone else: ignored.
    assert!(d
        .on_frame(&req_frame(&DcpRepr::set_name(7, &n, true), CTRL), t0)
        .frames
        .is_empty());
}

#[test]
fn control_and_unsupported() {
    let t0 = Instant::from_millis(0);
    let mut d = DcpResponder::new(ident(), t0);
    let o = d.on_frame(&req_frame(&DcpRepr::set_signal(1), DEV), t0);
    assert_eq!(o.events, vec![DcpEvent::Signal]);
    let n = NameOfStation::new("x").unwrap();
    d.on_frame(&req_frame(&DcpRepr::set_name(2, &n, true), DEV), t0);
    let o = d.on_frame(
        &req_frame(
            &DcpRepr::set_reset_to_factory(3, qualifier::RESET_COMMUNICATION_PARAMETER),
            DEV,
        ),
        t0,
    );
    assert_eq!(
        o.events,
        vec![DcpEvent::ResetToFactory {
            qualifier: 4,
            mode: ResetMode::Communication
        }]
    );
    assert_eq!(
        d.identity().station_name,
        "",
        "ResetToFactory empties the NameOfStation"
    );
    let o = d.on_frame(
        &req_frame(
            &DcpRepr::set_reset_to_factory(4, qualifier::RESET_APPLICATION_DATA),
            DEV,
        ),
        t0,
    );
    assert_eq!(
        parse(&o.frames[0]),
        DcpRepr::set_response(4, &[(5, 6, BlockError::SUBOPTION_UNSUPPORTED)])
    );
    // DHCP and an unknown option.
    let dhcp = DcpRepr::set_request(
        5,
        vec![
            DcpBlock::with_qualifier(
                DcpValue::Other {
                    option: 3,
                    suboption: 61,
                    data: vec![0, 1],
                },
                1,
            ),
            DcpBlock::with_qualifier(
                DcpValue::Other {
                    option: 0x80,
                    suboption: 1,
                    data: vec![],
                },
                0,
            ),
            DcpBlock::with_qualifier(DcpValue::MacAddress(CTRL), 0),
        ],
    );
    let o = d.on_frame(&req_frame(&dhcp, DEV), t0);
    assert_eq!(
        parse(&o.frames[0]),
        DcpRepr::set_response(
            5,
            &[
                (3, 61, BlockError::OPTION_UNSUPPORTED),
                (0x80, 1, BlockError::OPTION_UNSUPPORTED),
                (1, 1, BlockError::SUBOPTION_UNSUPPORTED)
            ]
        )
    );
}

#[test]
fn hello_sequence() {
    let mut id = ident();
    id.device_initiative = true;
    let t0 = Instant::from_millis(0);
    let mut d = DcpResponder::new(id, t0);
    assert_eq!(d.next_deadline(), Some(t0));
    let f = d.poll(t0);
    assert_eq!(f.len(), 1);
    let (eth, _, r) = DcpRepr::parse_frame(&f[0]).unwrap();
    assert_eq!(eth.dst, MacAddr::DCP_HELLO);
    assert_eq!(r.service_id, ServiceId::Hello);
    assert_eq!(d.next_deadline(), Some(t0 + HELLO_INTERVAL));
    assert_eq!(d.poll(t0 + HELLO_INTERVAL).len(), 1);
    assert_eq!(d.poll(t0 + HELLO_INTERVAL + HELLO_INTERVAL).len(), 1);
    assert_eq!(d.next_deadline(), None);
}

#[test]
fn garbage_never_panics() {
    let mut d = DcpResponder::new(ident(), Instant::ZERO);
    let mut f = EthernetRepr {
        dst: DEV,
        src: CTRL,
        vlan: None,
        ethertype: 0x8892,
    }
    .build(&[0xfe, 0xfd, 4, 0, 0, 0, 0, 1, 0, 0, 0, 0xff]);
    let o = d.on_frame(&f, Instant::ZERO);
    assert!(o.invalid && o.frames.is_empty());
    for i in 0..f.len() {
        f[i] ^= 0x5a;
        let _ = d.on_frame(&f, Instant::ZERO);
    }
}

#[test]
fn ip_validation() {
    let ip = |s: &str| s.parse::<Ipv4Addr>().unwrap();
    assert!(ip_suite_valid(ip("0.0.0.0"), ip("0.0.0.0"), ip("0.0.0.0")));
    assert!(ip_suite_valid(
        ip("192.168.0.2"),
        ip("255.255.255.0"),
        ip("192.168.0.1")
    ));
    assert!(ip_suite_valid(
        ip("192.168.0.2"),
        ip("255.255.255.0"),
        ip("0.0.0.0")
    ));
    assert!(!ip_suite_valid(
        ip("192.168.0.2"),
        ip("255.0.255.0"),
        ip("0.0.0.0")
    ));
    assert!(!ip_suite_valid(
        ip("192.168.0.0"),
        ip("255.255.255.0"),
        ip("0.0.0.0")
    ));
    assert!(!ip_suite_valid(
        ip("224.0.0.1"),
        ip("255.255.255.0"),
        ip("0.0.0.0")
    ));
    assert!(!ip_suite_valid(
        ip("192.168.0.2"),
        ip("255.255.255.0"),
        ip("10.0.0.1")
    ));
}

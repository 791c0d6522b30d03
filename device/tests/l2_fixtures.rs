//! The device's DCP responder and LLDP agent against real captured frames (pn_testkit fixtures,
//! /work/shared/fixtures/real-frames/INDEX.md): real controllers' Identify and Set requests are
//! answered like the real devices answered them, real neighbours' LLDPDUs give the neighbour and
//! the alias name, and no fixture frame of any kind makes them panic or answer wrongly.

use pn_protocol::wire::Emit;
use std::net::Ipv4Addr;

use pn_device::dataplane::Im0Config;
use pn_device::stack::dcp::{DcpEvent, DcpIdentity, DcpResponder};
use pn_device::stack::lldp::{system_description, LldpAgent};
use pn_protocol::time::{Duration, Instant};
use pn_protocol::wire::dcp::{DcpRepr, DcpValue, ServiceId, ServiceType};
use pn_protocol::wire::ethernet::MacAddr;

fn frame(name: &str) -> Vec<u8> {
    pn_testkit::fixtures::by_name(&format!("{name}.hex"))
        .unwrap_or_else(|| panic!("fixture {name} missing"))
        .bytes
}

fn device(mac: MacAddr, name: &str) -> DcpResponder {
    DcpResponder::new(
        DcpIdentity {
            mac,
            station_name: name.into(),
            device_vendor: "pn-device".into(),
            vendor_id: 0x0493,
            device_id: 1,
            ip: Ipv4Addr::new(192, 168, 0, 20),
            mask: Ipv4Addr::new(255, 255, 255, 0),
            gateway: Ipv4Addr::UNSPECIFIED,
            device_instance: (0, 1),
            device_initiative: false,
        },
        Instant::ZERO,
    )
}

const OUR_MAC: MacAddr = MacAddr([0x02, 0x00, 0x00, 0x00, 0x00, 0x42]);

/// Answer to `req` at time 0 plus any delayed one within 10 s.
fn answer(d: &mut DcpResponder, req: &[u8]) -> Option<DcpRepr> {
    let mut out = d.on_frame(req, Instant::ZERO).frames;
    out.extend(d.poll(Instant::ZERO + Duration::from_millis(10_000)));
    assert!(out.len() <= 1);
    let f = out.pop()?;
    let (eth, _, r) = DcpRepr::parse_frame(&f).unwrap();
    let (req_eth, _, _) = DcpRepr::parse_frame(req).unwrap();
    assert_eq!(eth.dst, req_eth.src, "answer goes back to the requester");
    assert_eq!(eth.src, d.identity().mac);
    Some(r)
}

#[test]
fn real_identify_requests_are_answered_by_name_and_all() {
    for (fx, name, xid) in [
        ("mehner-dcp-ident-req-name-s7", "et200sp", 0x0114_0013),
        ("icsnpp-dcp-ident-req-name-phoenix", "versamax-pns11", 0x1),
        ("s7init2005-dcp-ident-req-name-s7", "im151-3pn", 0x2),
    ] {
        let req = frame(fx);
        let mut ours = device(OUR_MAC, name);
        let r = answer(&mut ours, &req).unwrap_or_else(|| panic!("{fx}: no answer"));
        assert_eq!(r.service_id, ServiceId::Identify);
        assert_eq!(r.service_type, ServiceType::ResponseSuccess);
        assert_eq!(r.xid, xid, "{fx}");
        assert_eq!(r.name_of_station(), Some(name.as_bytes()), "{fx}");
        let mut other = device(OUR_MAC, "someone-else");
        assert!(
            answer(&mut other, &req).is_none(),
            "{fx}: wrong device answered"
        );
    }
    let all = frame("mehner-dcp-ident-all-req-tool");
    let r = answer(&mut device(OUR_MAC, "x"), &all).expect("identify all");
    assert_eq!(r.xid, 0x0100_0001);
    // The real ET200SP's answer to the S7's request carries the same kinds of blocks as ours.
    let theirs = DcpRepr::parse_frame(&frame("mehner-dcp-ident-res-et200sp"))
        .unwrap()
        .2;
    let ours = answer(
        &mut device(OUR_MAC, "et200sp"),
        &frame("mehner-dcp-ident-req-name-s7"),
    )
    .unwrap();
    for b in &theirs.blocks {
        let os = b.option_suboption();
        assert!(
            ours.find(os.0, os.1).is_some(),
            "block {os:?} of the real ET200SP answer missing in ours"
        );
    }
}

#[test]
fn real_set_requests_get_the_answers_real_devices_gave() {
    // Set NameOfStation "mallory" from an attack tool to the ET200SP. BlockQualifier 0x0001 =
    // permanent (INDEX.md says "temporary"; the bytes and Wireshark say permanent).
    let req = frame("mehner-dcp-set-name-req-tool");
    let (eth, _, _) = DcpRepr::parse_frame(&req).unwrap();
    let mut d = device(eth.dst, "et200sp");
    let out = d.on_frame(&req, Instant::ZERO);
    assert_eq!(
        out.events,
        vec![DcpEvent::NameAssigned {
            name: "mallory".into(),
            permanent: true
        }]
    );
    let ours = DcpRepr::parse_frame(&out.frames[0]).unwrap().2;
    let real = DcpRepr::parse_frame(&frame("mehner-dcp-set-res-et200sp"))
        .unwrap()
        .2;
    assert_eq!(ours, real, "our Set response differs from the ET200SP's");
    assert_eq!(
        ours.to_bytes().unwrap(),
        real.to_bytes().unwrap(),
        "PDU bytes must be identical"
    );
    // S7 (2005) sets the IP with an End-Transaction block; the IM151-3PN answered both OK.
    let req = frame("s7init2005-dcp-set-ip-req-s7");
    let (eth, _, r) = DcpRepr::parse_frame(&req).unwrap();
    let mut d = device(eth.dst, "im151-3pn");
    let out = d.on_frame(&req, Instant::ZERO);
    let ours = DcpRepr::parse_frame(&out.frames[0]).unwrap().2;
    let real = DcpRepr::parse_frame(&frame("s7init2005-dcp-set-res-im151"))
        .unwrap()
        .2;
    assert_eq!(ours.blocks, real.blocks);
    assert_eq!(ours.xid, real.xid);
    let DcpValue::IpParameter { ip, .. } = r.blocks[0].value else {
        panic!("{r:?}")
    };
    assert_eq!(d.identity().ip, ip);
}

fn im0() -> Im0Config {
    Im0Config {
        product_name: "pn-device".into(),
        ..Default::default()
    }
}

#[test]
fn real_lldp_neighbours_give_station_port_and_alias() {
    for (fx, station, alias, mgmt) in [
        (
            "mehner-lldp-s7-1516",
            "cpu1500.profinet-schnittstellexb19f01",
            "port-001.cpu1500.profinet-schnittstellexb19f01",
            true,
        ),
        ("mehner-lldp-et200sp", "et200sp", "port-001.et200sp", true),
        (
            "icsnpp-lldp-versamax",
            "versamax-pns11",
            "port-001.versamax-pns11",
            true,
        ),
    ] {
        let mut a = LldpAgent::new(
            OUR_MAC,
            "dev",
            Ipv4Addr::UNSPECIFIED,
            system_description(&im0()),
            1,
            Instant::ZERO,
        );
        assert_eq!(a.on_frame(&frame(fx), Instant::ZERO), Some(true), "{fx}");
        let n = a.neighbour(Instant::ZERO).unwrap();
        assert_eq!(n.station_name, station, "{fx}");
        assert_eq!(n.alias_name, alias, "{fx}");
        assert_eq!(n.ttl, 20, "{fx}");
        assert_eq!(!n.management_address.is_empty(), mgmt, "{fx}: {n:?}");
        // DCP Identify by this alias is answered once the alias is known.
        let mut d = device(OUR_MAC, "dev");
        d.set_aliases(a.aliases(Instant::ZERO));
        let req = DcpRepr::identify_request_by_alias(9, alias.as_bytes(), 1)
            .build_frame(MacAddr::DCP_IDENTIFY, MacAddr([2, 0, 0, 0, 0, 1]), None)
            .unwrap();
        assert!(answer(&mut d, &req).is_some(), "{fx}");
    }
}

#[test]
fn every_fixture_frame_is_handled_without_panic_or_stray_answers() {
    let all = pn_testkit::fixtures::all();
    assert!(all.len() > 20);
    for f in &all {
        let mut d = device(OUR_MAC, "nobody-has-this-name");
        let out = d.on_frame(&f.bytes, Instant::ZERO);
        // Only Identify-all requests can select a device that has a name nobody uses.
        for r in &out.frames {
            let (_, _, r) = DcpRepr::parse_frame(r).unwrap();
            assert_eq!(r.service_id, ServiceId::Identify, "{}", f.name);
        }
        let mut a = LldpAgent::new(
            OUR_MAC,
            "dev",
            Ipv4Addr::UNSPECIFIED,
            system_description(&im0()),
            1,
            Instant::ZERO,
        );
        let is_lldp = f.bytes.get(12..14) == Some(&[0x88, 0xcc][..]);
        assert_eq!(
            a.on_frame(&f.bytes, Instant::ZERO).is_some(),
            is_lldp,
            "{}",
            f.name
        );
    }
}

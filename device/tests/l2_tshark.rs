//! tshark as the independent oracle for every L2 frame the device emits: DCP Identify, Get and
//! Set responses and Hello (`stack::dcp`), LLDP (`stack::lldp`), SNMP and LLMNR answers
//! (wrapped in complete Ethernet/IPv4/UDP frames with correct checksums).

use std::net::Ipv4Addr;

use pn_device::dataplane::Im0Config;
use pn_device::stack::dcp::{DcpIdentity, DcpResponder};
use pn_device::stack::lldp::{system_description, LldpAgent};
use pn_protocol::machine::{llmnr_responder as llmnr, snmp_agent as snmp};
use pn_protocol::time::Instant;
use pn_protocol::wire::dcp::{qualifier, DcpBlock, DcpRepr, DcpValue, NameOfStation};
use pn_protocol::wire::ethernet::MacAddr;
use pn_protocol::wire::ip;
use pn_testkit::tshark::{dissect, Packet};

const DEV: MacAddr = MacAddr([0x02, 0x00, 0x00, 0x00, 0x12, 0x34]);
const CTRL: MacAddr = MacAddr([0x02, 0x00, 0x00, 0x00, 0x00, 0x01]);

fn ident() -> DcpIdentity {
    DcpIdentity {
        mac: DEV,
        station_name: "dev-1".into(),
        device_vendor: "pn-device".into(),
        vendor_id: 0x0493,
        device_id: 1,
        ip: Ipv4Addr::new(192, 168, 0, 10),
        mask: Ipv4Addr::new(255, 255, 255, 0),
        gateway: Ipv4Addr::new(192, 168, 0, 1),
        device_instance: (0, 1),
        device_initiative: true,
    }
}

fn im0() -> Im0Config {
    Im0Config {
        product_name: "pn-device".into(),
        order_id: "PN-DEVICE-1".into(),
        serial_number: "00000001".into(),
        hardware_revision: 1,
        software_revision: ('V', 1, 0, 0),
        ..Default::default()
    }
}

fn one(frame: Vec<u8>) -> Packet {
    let p = dissect(&[frame]).expect("tshark").remove(0);
    p.assert_clean("device L2 frame");
    p
}

fn request(r: &DcpRepr, dst: MacAddr) -> Vec<u8> {
    r.build_frame(dst, CTRL, None).unwrap()
}

#[test]
fn dcp_identify_response_dissects_clean_with_our_values() {
    if !pn_testkit::env::require_tshark() {
        return;
    }
    let mut d = DcpResponder::new(ident(), Instant::ZERO);
    let o = d.on_frame(
        &request(
            &DcpRepr::identify_request_all(0x11, 1),
            MacAddr::DCP_IDENTIFY,
        ),
        Instant::ZERO,
    );
    assert_eq!(o.frames.len(), 1);
    let p = one(o.frames[0].clone());
    assert_eq!(p.protocols(), "eth:ethertype:pn_rt:pn_dcp");
    assert_eq!(p.get("eth.dst"), "02:00:00:00:00:01");
    assert_eq!(p.get("eth.src"), "02:00:00:00:12:34");
    assert_eq!(p.uint("pn_rt.frame_id"), 0xfeff);
    assert_eq!(p.uint("pn_dcp.service_id"), 5);
    assert_eq!(p.uint("pn_dcp.service_type"), 1);
    assert_eq!(p.uint("pn_dcp.xid"), 0x11);
    assert_eq!(p.get("pn_dcp.suboption_device_nameofstation"), "dev-1");
    assert_eq!(
        p.get("pn_dcp.suboption_device_devicevendorvalue"),
        "pn-device"
    );
    assert_eq!(p.uint("pn_dcp.suboption_vendor_id"), 0x0493);
    assert_eq!(p.uint("pn_dcp.suboption_device_id"), 1);
    assert_eq!(p.uint("pn_dcp.suboption_device_role"), 1);
    assert_eq!(p.get("pn_dcp.suboption_ip_ip"), "192.168.0.10");
    assert_eq!(p.get("pn_dcp.suboption_ip_subnetmask"), "255.255.255.0");
    assert_eq!(p.get("pn_dcp.suboption_ip_standard_gateway"), "192.168.0.1");
    assert_eq!(p.uint("pn_dcp.suboption_ip_block_info"), 1);
    // Alias answer carries the alias block.
    d.set_aliases(vec![b"port-001.plc".to_vec()]);
    let o = d.on_frame(
        &request(
            &DcpRepr::identify_request_by_alias(0x12, b"port-001.plc", 0),
            MacAddr::DCP_IDENTIFY,
        ),
        Instant::ZERO,
    );
    let p = one(o.frames[0].clone());
    assert_eq!(p.get("pn_dcp.suboption_device_aliasname"), "port-001.plc");
}

#[test]
fn dcp_get_set_responses_and_hello_dissect_clean() {
    if !pn_testkit::env::require_tshark() {
        return;
    }
    let mut d = DcpResponder::new(ident(), Instant::ZERO);
    // Hello (DeviceInitiative configured).
    let hello = d.poll(Instant::ZERO).remove(0);
    let p = one(hello);
    assert_eq!(p.get("eth.dst"), "01:0e:cf:00:00:01");
    assert_eq!(p.uint("pn_rt.frame_id"), 0xfefc);
    assert_eq!(p.uint("pn_dcp.service_id"), 6);
    assert_eq!(p.get("pn_dcp.suboption_device_nameofstation"), "dev-1");
    assert_eq!(p.uint("pn_dcp.deviceinitiative_value"), 1);
    // Get: MAC, IP, name, and an unsupported DHCP option (Control/Response, error 1).
    let o = d.on_frame(
        &request(
            &DcpRepr::get_request(0x21, &[(1, 1), (1, 2), (2, 2), (3, 61)]),
            DEV,
        ),
        Instant::ZERO,
    );
    let p = one(o.frames[0].clone());
    assert_eq!(p.uint("pn_rt.frame_id"), 0xfefd);
    assert_eq!(p.uint("pn_dcp.service_id"), 3);
    assert_eq!(
        p.get("pn_dcp.suboption_ip_mac_address"),
        "02:00:00:00:12:34"
    );
    assert_eq!(p.get("pn_dcp.suboption_device_nameofstation"), "dev-1");
    assert_eq!(p.all("pn_dcp.block_error"), vec!["1"]);
    // Set: name OK, IP refused while an AR runs (6), an unknown option (1), reset mode (2).
    d.set_ar_active(true);
    let set = DcpRepr::set_request(
        0x22,
        vec![
            DcpBlock::with_qualifier(DcpValue::NameOfStation(b"abc".to_vec()), 1),
            DcpBlock::with_qualifier(
                DcpValue::IpParameter {
                    ip: Ipv4Addr::new(10, 0, 0, 7),
                    mask: Ipv4Addr::new(255, 0, 0, 0),
                    gateway: Ipv4Addr::UNSPECIFIED,
                },
                0,
            ),
            DcpBlock::with_qualifier(
                DcpValue::Other {
                    option: 0x80,
                    suboption: 2,
                    data: vec![1, 2],
                },
                0,
            ),
            DcpBlock::with_qualifier(DcpValue::ResetToFactory, qualifier::RESET_APPLICATION_DATA),
        ],
    );
    let o = d.on_frame(&request(&set, DEV), Instant::ZERO);
    let p = one(o.frames[0].clone());
    assert_eq!(p.uint("pn_dcp.service_id"), 4);
    assert_eq!(p.uint("pn_dcp.service_type"), 1);
    assert_eq!(p.all("pn_dcp.block_error"), vec!["0", "6", "1", "2"]);
    let _ = NameOfStation::new("abc").unwrap();
}

#[test]
fn lldp_frame_dissects_clean_with_all_profinet_tlvs() {
    if !pn_testkit::env::require_tshark() {
        return;
    }
    let mut a = LldpAgent::new(
        DEV,
        "dev-1",
        Ipv4Addr::new(192, 168, 0, 10),
        system_description(&im0()),
        2,
        Instant::ZERO,
    );
    let p = one(a.poll(Instant::ZERO).unwrap());
    assert_eq!(p.protocols(), "eth:ethertype:lldp");
    assert_eq!(p.get("eth.dst"), "01:80:c2:00:00:0e");
    assert_eq!(p.uint("lldp.chassis.subtype"), 7);
    let chassis: Vec<u8> = p
        .get("lldp.chassis.id")
        .split(':')
        .map(|h| u8::from_str_radix(h, 16).unwrap())
        .collect();
    assert_eq!(chassis, system_description(&im0()).into_bytes());
    assert_eq!(p.uint("lldp.port.subtype"), 7);
    assert_eq!(p.get("lldp.port.id"), "port-001.dev-1");
    assert_eq!(p.uint("lldp.time_to_live"), 20);
    assert_eq!(p.uint("lldp.profinet.rtc2_port_status"), 0);
    assert_eq!(p.get("lldp.profinet.cm_mac_add"), "02:00:00:00:12:34");
    assert_eq!(p.uint("lldp.ieee.802_3.pmd_mau_type"), 0x10);
    assert_eq!(p.get("lldp.mgn.addr.ip4"), "192.168.0.10");
    assert_eq!(p.uint("lldp.mgn.interface.number"), 2);
    let types: Vec<&str> = p.all("lldp.tlv.type");
    for t in ["1", "2", "3", "127", "8", "0"] {
        assert!(types.contains(&t), "TLV type {t} missing: {types:?}");
    }
    assert_eq!(types.iter().filter(|t| **t == "127").count(), 3);
}

fn udp_frame(src: Ipv4Addr, dst: Ipv4Addr, sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
    ip::udp_frame(DEV.0, CTRL.0, src, dst, sport, dport, payload).unwrap()
}

#[test]
fn snmp_and_llmnr_answers_dissect_clean() {
    if !pn_testkit::env::require_tshark() {
        return;
    }
    let dev_ip = Ipv4Addr::new(10, 0, 0, 2);
    let ctl_ip = Ipv4Addr::new(10, 0, 0, 1);
    // SNMP v2c GetRequest sysName.0 built by hand (BER), answered by the agent.
    let req: Vec<u8> = vec![
        0x30, 0x29, 0x02, 0x01, 0x01, 0x04, 0x06, b'p', b'u', b'b', b'l', b'i', b'c', 0xa0, 0x1c,
        0x02, 0x04, 0x00, 0x00, 0x30, 0x39, 0x02, 0x01, 0x00, 0x02, 0x01, 0x00, 0x30, 0x0e, 0x30,
        0x0c, 0x06, 0x08, 0x2b, 0x06, 0x01, 0x02, 0x01, 0x01, 0x05, 0x00, 0x05, 0x00,
    ];
    let agent = snmp::SnmpAgent::new(snmp::SystemInfo {
        descr: system_description(&im0()),
        contact: String::new(),
        name: "dev-1".into(),
        location: String::new(),
    });
    let resp = agent.handle(&req, 1234).expect("answer");
    let p = one(udp_frame(dev_ip, ctl_ip, 161, 40000, &resp));
    assert!(p.protocols().contains("udp:snmp"), "{}", p.protocols());
    assert_eq!(p.uint("snmp.request_id"), 12345);
    assert_eq!(p.get("snmp.name"), "1.3.6.1.2.1.1.5.0");
    assert_eq!(p.get("snmp.value.octets"), "64:65:76:2d:31"); // "dev-1"
                                                              // LLMNR A query for "dev-1".
    let mut q = vec![0xab, 0xcd, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 5];
    q.extend_from_slice(b"dev-1");
    q.extend_from_slice(&[0, 0, 1, 0, 1]);
    let id = llmnr::LlmnrIdentity {
        name: "dev-1".into(),
        ip: dev_ip,
    };
    let r = llmnr::handle(&q, &id).expect("answer");
    let p = one(udp_frame(dev_ip, ctl_ip, 5355, 40001, &r));
    assert!(p.protocols().ends_with("udp:llmnr"), "{}", p.protocols());
    assert_eq!(p.uint("dns.id"), 0xabcd);
    assert_eq!(p.uint("dns.flags.response"), 1);
    assert_eq!(p.get("dns.resp.name"), "dev-1");
    assert_eq!(p.get("dns.a"), "10.0.0.2");
    assert_eq!(p.uint("dns.resp.ttl"), 30);
}

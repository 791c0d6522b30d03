//! The device's L2 services on a real wire: a veth pair between a device namespace and a peer
//! namespace. The device side runs the production code (`PnSocket` with its BPF filter,
//! `LinkMonitor`, `L2Services` with DCP, LLDP, IP application, SNMP and LLMNR) exactly as the
//! plane wires it; the peer side speaks raw Ethernet built and parsed with pn-protocol, and uses
//! independent tools where they exist (tshark on every captured device frame, net-snmp's
//! `snmpget`/`snmpwalk`, scapy for LLMNR, iproute2 for the applied address).
//!
//! `rig` holds the two namespaces, the device's production services and the peer's socket.

mod rig;

use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use crate::rig::*;
use pn_device::dataplane::{ResetMode, StackEvent};
use pn_device::stack::socket::PnSocket;
use pn_protocol::wire::dcp::{
    qualifier, BlockError, DcpBlock, DcpRepr, DcpValue, NameOfStation, ServiceId,
};
use pn_protocol::wire::ethernet::MacAddr;
use pn_protocol::wire::lldp::{LldpRepr, Tlv};
use pn_testkit::netns::{NetNs, Veth};

#[test]
fn l2_wire_identify_all_by_name_by_alias_and_response_delay() {
    if !pn_testkit::env::require_root() {
        return;
    }
    let mut rig = Rig::new();
    // Identify all, no delay: answered at once.
    let t = Instant::now();
    rig.send(
        &DcpRepr::identify_request_all(0x100, 1),
        MacAddr::DCP_IDENTIFY,
    );
    let (r, at) = rig
        .dcp_reply(0x100, Duration::from_secs(2))
        .expect("identify all");
    assert!(at - t < Duration::from_millis(200), "{:?}", at - t);
    assert_eq!(r.service_id, ServiceId::Identify);
    assert_eq!(r.name_of_station(), Some(NAME.as_bytes()));
    assert!(r.find(2, 3).is_some_and(|b| b.value
        == DcpValue::DeviceId {
            vendor_id: 0x0493,
            device_id: 1
        }));
    // By name: our name answers, another name does not.
    let n = NameOfStation::new(NAME).unwrap();
    rig.send(
        &DcpRepr::identify_request_by_name(0x101, &n, 1),
        MacAddr::DCP_IDENTIFY,
    );
    assert!(rig.dcp_reply(0x101, Duration::from_secs(2)).is_some());
    let other = NameOfStation::new("someone-else").unwrap();
    rig.send(
        &DcpRepr::identify_request_by_name(0x102, &other, 1),
        MacAddr::DCP_IDENTIFY,
    );
    assert!(rig.dcp_reply(0x102, Duration::from_millis(400)).is_none());
    // ResponseDelayFactor 100: 0x1234 % 100 = 60 slots of 10 ms = 600 ms.
    let t = Instant::now();
    rig.send(
        &DcpRepr::identify_request_all(0x103, 100),
        MacAddr::DCP_IDENTIFY,
    );
    let (_, at) = rig
        .dcp_reply(0x103, Duration::from_secs(3))
        .expect("delayed identify");
    let dt = at - t;
    assert!(
        dt >= Duration::from_millis(595) && dt < Duration::from_millis(900),
        "response after {dt:?}, expected 600 ms"
    );
    // By alias: only after the peer's LLDP told the device who its neighbour is.
    let alias = b"port-001.plc-1".to_vec();
    rig.send(
        &DcpRepr::identify_request_by_alias(0x104, &alias, 1),
        MacAddr::DCP_IDENTIFY,
    );
    assert!(rig.dcp_reply(0x104, Duration::from_millis(300)).is_none());
    let lldp = rig.peer_lldp("plc-1");
    rig.peer.send(&lldp).unwrap();
    let mut xid = 0x200;
    let r = wait_for("identify by alias", Duration::from_secs(3), || {
        xid += 1;
        rig.send(
            &DcpRepr::identify_request_by_alias(xid, &alias, 1),
            MacAddr::DCP_IDENTIFY,
        );
        rig.dcp_reply(xid, Duration::from_millis(100))
            .map(|(r, _)| r)
    });
    assert!(r
        .blocks
        .iter()
        .any(|b| b.value == DcpValue::AliasName(alias.clone())));
    // The neighbour is visible in the status.
    let nb = rig.l2.status().lldp_neighbour.expect("neighbour");
    assert_eq!(nb.port_id, "port-001.plc-1");
    assert_eq!(nb.station_name, "plc-1");
    assert_eq!(nb.management_address, "10.47.0.1");
    assert_eq!(nb.chassis_id, "test controller");
    assert_eq!(nb.ttl, 20);
    rig.tshark_clean();
}

#[test]
fn l2_wire_set_name_ip_signal_reset_and_block_errors() {
    if !pn_testkit::env::require_root() {
        return;
    }
    let mut rig = Rig::new();
    // The configured IP was put on the NIC at start.
    wait_for("configured IP on the NIC", Duration::from_secs(3), || {
        rig.dev_addrs().contains("10.47.0.2/24").then_some(())
    });
    // Set IP (temporary): applied to the interface, event with the result.
    let new_ip = Ipv4Addr::new(10, 47, 0, 9);
    let errs = rig.set_errors(&DcpRepr::set_ip(0x300, new_ip, mask(), new_ip, false));
    assert_eq!(errs, vec![(1, 2, BlockError::OK)]);
    let ev = rig.event("DcpIpAssigned", |e| {
        matches!(e, StackEvent::DcpIpAssigned { .. })
    });
    assert_eq!(
        ev,
        StackEvent::DcpIpAssigned {
            ip: new_ip,
            mask: mask(),
            gateway: new_ip,
            permanent: false,
            applied: Ok(())
        }
    );
    let addrs = rig.dev_addrs();
    assert!(addrs.contains("10.47.0.9/24"), "{addrs}");
    assert!(!addrs.contains("10.47.0.2/"), "old address kept: {addrs}");
    assert!(rig.l2.status().ip_apply_message.contains("10.47.0.9/24"));
    // Set name (permanent).
    let n = NameOfStation::new("renamed-dev").unwrap();
    let errs = rig.set_errors(&DcpRepr::set_name(0x301, &n, true));
    assert_eq!(errs, vec![(2, 2, BlockError::OK)]);
    rig.event("DcpNameAssigned", |e| {
        *e == StackEvent::DcpNameAssigned {
            name: "renamed-dev".into(),
            permanent: true,
        }
    });
    assert_eq!(rig.get_name(0x302), "renamed-dev");
    // LLDP follows the name at once (the frame may have arrived while waiting for the Get).
    let new_port = |f: &[u8]| {
        LldpRepr::parse_frame(f)
            .is_ok_and(|(_, r)| r.port_id() == Some((7, &b"port-001.renamed-dev"[..])))
    };
    if !rig.captured.iter().any(|f| new_port(f)) {
        rig.recv_where(Duration::from_secs(3), new_port)
            .expect("LLDP with the new name");
    }
    // Signal.
    assert_eq!(
        rig.set_errors(&DcpRepr::set_signal(0x303)),
        vec![(5, 3, BlockError::OK)]
    );
    rig.event("DcpSignal", |e| *e == StackEvent::DcpSignal);
    assert_eq!(rig.l2.status().dcp_signal_count, 1);
    // Unsupported: DHCP option, read-only DeviceVendor, an unknown option.
    let bad = DcpRepr::set_request(
        0x304,
        vec![
            DcpBlock::with_qualifier(
                DcpValue::Other {
                    option: 3,
                    suboption: 61,
                    data: vec![0, 1, 2],
                },
                1,
            ),
            DcpBlock::with_qualifier(DcpValue::DeviceVendor(b"x".to_vec()), 1),
            DcpBlock::with_qualifier(
                DcpValue::Other {
                    option: 0x81,
                    suboption: 1,
                    data: vec![],
                },
                0,
            ),
        ],
    );
    assert_eq!(
        rig.set_errors(&bad),
        vec![
            (3, 61, BlockError::OPTION_UNSUPPORTED),
            (2, 1, BlockError::SUBOPTION_UNSUPPORTED),
            (0x81, 1, BlockError::OPTION_UNSUPPORTED)
        ]
    );
    // While an AR runs: an IP change is refused, a name change aborts the AR.
    rig.l2.set_ar_active(true);
    let other_ip = Ipv4Addr::new(10, 47, 0, 10);
    let mut xid = 0x310;
    wait_for("IP refused in operation", Duration::from_secs(2), || {
        xid += 1;
        let e = rig.set_errors(&DcpRepr::set_ip(xid, other_ip, mask(), other_ip, false));
        (e == vec![(1, 2, BlockError::IN_OPERATION)]).then_some(())
    });
    let n2 = NameOfStation::new("third-name").unwrap();
    assert_eq!(
        rig.set_errors(&DcpRepr::set_name(0x320, &n2, false)),
        vec![(2, 2, BlockError::OK)]
    );
    wait_for("AR abort requested", Duration::from_secs(2), || {
        rig.aborts
            .lock()
            .unwrap()
            .contains(&"DCP station name changed")
            .then_some(())
    });
    rig.l2.set_ar_active(false);
    // ResetToFactory (communication parameters): the name is empty, the configured IP back.
    assert_eq!(
        rig.set_errors(&DcpRepr::set_reset_to_factory(
            0x330,
            qualifier::RESET_COMMUNICATION_PARAMETER
        )),
        vec![(5, 6, BlockError::OK)]
    );
    rig.event("DcpResetToFactory", |e| {
        *e == StackEvent::DcpResetToFactory {
            qualifier: 4,
            mode: ResetMode::Communication,
        }
    });
    assert_eq!(
        rig.get_name(0x331),
        "",
        "ResetToFactory empties the NameOfStation"
    );
    wait_for("configured IP back", Duration::from_secs(3), || {
        let a = rig.dev_addrs();
        (a.contains("10.47.0.2/24") && !a.contains("10.47.0.9")).then_some(())
    });
    rig.tshark_clean();
}

#[test]
fn l2_wire_lldp_every_5s_ttl_20_and_link_down_up() {
    if !pn_testkit::env::require_root() {
        return;
    }
    let mut rig = Rig::new();
    let start = rig.started;
    let is_lldp = |f: &[u8]| LldpRepr::parse_frame(f).is_ok();
    let (f1, t1) = rig
        .recv_where(Duration::from_secs(5), is_lldp)
        .expect("first LLDP frame within 5 s of start");
    assert!(t1 - start < Duration::from_secs(5));
    let (_, t2) = rig
        .recv_where(Duration::from_secs(7), is_lldp)
        .expect("second");
    let (_, t3) = rig
        .recv_where(Duration::from_secs(7), is_lldp)
        .expect("third");
    for d in [t2 - t1, t3 - t2] {
        assert!(
            d >= Duration::from_millis(4800) && d <= Duration::from_millis(5300),
            "LLDP interval {d:?}"
        );
    }
    let (eth, r) = LldpRepr::parse_frame(&f1).unwrap();
    assert_eq!(eth.dst, MacAddr::LLDP_NEAREST_BRIDGE);
    assert_eq!(r.ttl(), Some(20));
    assert_eq!(r.port_id(), Some((7, &b"port-001.l2-dev"[..])));
    assert_eq!(r.chassis_mac(), Some(DEV_MAC));
    assert!(r
        .tlvs
        .iter()
        .any(|t| matches!(t, Tlv::MacPhy { mau_type: 0x10, .. })));
    assert!(r.tlvs.iter().any(|t| matches!(
        t,
        Tlv::ManagementAddress { addr, .. } if addr == &vec![10, 47, 0, 2]
    )));
    // veth reports 10 Gbit/s: the substitute MAU type is reported, and said so.
    let st = rig.l2.status();
    assert_eq!(st.mau_type, 0x10);
    assert!(st.mau_type_substituted);
    assert_eq!(st.link_speed_mbps, Some(10_000));
    rig.tshark_clean();

    // Link: LinkChanged(up) at start; the peer end going down takes our carrier away.
    rig.event("link up at start", |e| {
        *e == StackEvent::LinkChanged { up: true }
    });
    let b = rig.veth.b.clone();
    Veth::set_link(&rig.peer_ns, &b, false).unwrap();
    rig.event("link down", |e| *e == StackEvent::LinkChanged { up: false });
    Veth::set_link(&rig.peer_ns, &b, true).unwrap();
    let t_up = Instant::now();
    wait_for("link up again", Duration::from_secs(3), || {
        let ev = rig.events.lock().unwrap();
        let downs = ev
            .iter()
            .position(|e| *e == StackEvent::LinkChanged { up: false })?;
        ev[downs..]
            .contains(&StackEvent::LinkChanged { up: true })
            .then_some(())
    });
    // LLDP is sent again at once when the link comes back.
    let (_, t) = rig
        .recv_where(Duration::from_secs(3), is_lldp)
        .expect("LLDP after link up");
    assert!(t - t_up < Duration::from_secs(2));
}

#[test]
fn l2_wire_snmp_and_llmnr_answer_independent_clients() {
    if !pn_testkit::env::require_root() {
        return;
    }
    let ok = pn_testkit::env::require(
        pn_testkit::env::has_tool("snmpget") || std::path::Path::new("/usr/bin/snmpget").exists(),
        "snmpget/snmpwalk (apt-get install snmp)",
    );
    if !ok {
        return;
    }
    let rig = Rig::new();
    wait_for("configured IP on the NIC", Duration::from_secs(3), || {
        rig.dev_addrs().contains("10.47.0.2/24").then_some(())
    });
    let out = snmp(
        &rig,
        "snmpget",
        "-v2c",
        "public",
        true,
        &[
            "1.3.6.1.2.1.1.5.0",
            "1.3.6.1.2.1.1.7.0",
            "1.3.6.1.2.1.1.2.0",
        ],
    )
    .unwrap();
    assert!(
        out.contains(".1.3.6.1.2.1.1.5.0 = STRING: \"l2-dev\""),
        "{out}"
    );
    assert!(out.contains(".1.3.6.1.2.1.1.7.0 = INTEGER: 78"), "{out}");
    assert!(
        out.contains(".1.3.6.1.2.1.1.2.0 = OID: .1.3.6.1.4.1.24686"),
        "{out}"
    );
    let out = snmp(&rig, "snmpwalk", "-v1", "public", true, &["1.3.6.1.2.1.1"]).unwrap();
    assert_eq!(
        out.lines()
            .filter(|l| l.starts_with(".1.3.6.1.2.1.1."))
            .count(),
        7,
        "{out}"
    );
    assert!(
        out.contains(".1.3.6.1.2.1.1.1.0 = STRING: \"pn-device"),
        "{out}"
    );
    assert!(out.contains(".1.3.6.1.2.1.1.3.0 = Timeticks:"), "{out}");
    assert!(
        out.contains(".1.3.6.1.2.1.1.6.0 = STRING: \"hall 7\""),
        "{out}"
    );
    // v2c walk: net-snmp uses GetBulk; the answer exceeds 127 bytes (long-form BER lengths)
    // and ends with endOfMibView after sysServices (net-snmp prints that as a last line).
    let out = snmp(&rig, "snmpwalk", "-v2c", "public", true, &["1.3.6.1.2.1.1"]).unwrap();
    assert_eq!(
        out.lines()
            .filter(|l| l.starts_with(".1.3.6.1.2.1.1.") && !l.contains("No more variables"))
            .count(),
        7,
        "{out}"
    );
    assert!(
        out.contains("No more variables left in this MIB View"),
        "{out}"
    );
    // A wrong community gets no answer.
    assert!(snmp(
        &rig,
        "snmpget",
        "-v2c",
        "private",
        false,
        &["1.3.6.1.2.1.1.5.0"]
    )
    .is_err());

    // LLMNR with scapy building and parsing the DNS messages, over the multicast group.
    let script = r#"
import socket, sys
from scapy.layers.llmnr import LLMNRQuery, LLMNRResponse
from scapy.layers.dns import DNSQR
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton("10.47.0.1"))
s.settimeout(2)
for name in (sys.argv[1], "nobody-here"):
    q = LLMNRQuery(id=0x4242, qd=DNSQR(qname=name, qtype="A"))
    s.sendto(bytes(q), ("224.0.0.252", 5355))
    try:
        data, src = s.recvfrom(1500)
    except socket.timeout:
        print(name, "NOANSWER")
        continue
    r = LLMNRResponse(data)
    print(name, src[0], r.id, r.ancount, r.an[0].rdata if r.ancount else "")
"#;
    let out = rig
        .peer_ns
        .exec_ok(&["python3", "-c", script, "L2-DEV"])
        .unwrap();
    assert!(out.contains("L2-DEV 10.47.0.2 16962 1 10.47.0.2"), "{out}");
    assert!(out.contains("nobody-here NOANSWER"), "{out}");
}

#[test]
fn l2_wire_socket_filter_passes_only_profinet_and_lldp_and_hides_own_frames() {
    if !pn_testkit::env::require_root() {
        return;
    }
    let dev_ns = NetNs::new("l2s").unwrap();
    let peer_ns = NetNs::new("l2t").unwrap();
    let veth = Veth::new("l2w", &dev_ns, &peer_ns).unwrap();
    let (a, b) = (veth.a.clone(), veth.b.clone());
    let dev = dev_ns.enter(move || PnSocket::open(&a)).unwrap().unwrap();
    let peer = peer_ns.enter(move || PnSocket::open(&b)).unwrap().unwrap();
    assert!(
        dev.kernel_ignores_outgoing(),
        "PACKET_IGNORE_OUTGOING (Linux >= 4.20)"
    );
    let frame = |ethertype: u16, inner: Option<u16>, tag: u8| {
        let mut f = vec![0u8; 60];
        f[0..6].copy_from_slice(&dev.mac());
        f[6..12].copy_from_slice(&peer.mac());
        f[12..14].copy_from_slice(&ethertype.to_be_bytes());
        let at = if let Some(i) = inner {
            f[14..16].copy_from_slice(&0xc000u16.to_be_bytes());
            f[16..18].copy_from_slice(&i.to_be_bytes());
            18
        } else {
            14
        };
        f[at] = 0xfe;
        f[at + 1] = 0xfd;
        f[59] = tag;
        f
    };
    // Rejected by the filter: IPv4, ARP, tagged IPv4. Passed: RT, LLDP, tagged RT.
    let cases = [
        (frame(0x0800, None, 1), false),
        (frame(0x0806, None, 2), false),
        (frame(0x8100, Some(0x0800), 3), false),
        (frame(0x8892, None, 4), true),
        (frame(0x88cc, None, 5), true),
        (frame(0x8100, Some(0x8892), 6), true),
    ];
    for (f, _) in &cases {
        peer.send(f).unwrap();
    }
    // Our own transmission is not received back.
    let own = frame(0x8892, None, 7);
    dev.send(&own).unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 1600];
    let end = Instant::now() + Duration::from_millis(500);
    while let Ok(Some(n)) = dev.recv(
        &mut buf,
        Some(end.saturating_duration_since(Instant::now())),
    ) {
        // With VLAN offload (veth) the kernel strips the 802.1Q tag before delivery: the
        // frame is then 4 bytes shorter. Identify frames by their last byte.
        if n > 0 {
            got.push(buf[n - 1]);
        }
        if Instant::now() >= end {
            break;
        }
    }
    got.sort();
    assert_eq!(got, vec![4, 5, 6], "frames that reached the device socket");
    // The peer did receive our frame (it was sent, just not looped back to us).
    let mut seen = false;
    let end = Instant::now() + Duration::from_millis(500);
    while let Ok(Some(n)) = peer.recv(
        &mut buf,
        Some(end.saturating_duration_since(Instant::now())),
    ) {
        if n >= 60 && buf[59] == 7 {
            seen = true;
            break;
        }
    }
    assert!(seen, "the device's frame reached the peer");
}

/// net-snmp's `tool` (snmpget, snmpwalk) from the peer namespace against the device's
/// configured IP with numeric OIDs: `patient` allows a 2 s timeout and one retry (an answer is
/// expected), otherwise 1 s and none (no answer is).
fn snmp(
    rig: &Rig,
    tool: &str,
    version: &str,
    community: &str,
    patient: bool,
    oids: &[&str],
) -> Result<String, String> {
    let (t, r) = if patient { ("2", "1") } else { ("1", "0") };
    let mut args = vec![
        tool,
        version,
        "-c",
        community,
        "-On",
        "-t",
        t,
        "-r",
        r,
        "10.47.0.2",
    ];
    args.extend_from_slice(oids);
    rig.peer_ns.exec_ok(&args)
}

//! tshark as an independent oracle for every layer-2 frame kind this crate emits: cyclic RT
//! frames (tagged, untagged, legacy FrameID), every DCP service/option we build, and the
//! PROFINET device LLDP frame. Each frame must dissect as the intended protocol, be free of
//! malformed markers and expert warnings/errors, and show the encoded field values.

use pn_protocol::machine::dcp_responder::{DcpIdentity, DcpResponder};
use pn_protocol::time::Instant;
use pn_protocol::wire::dcp::{
    self, device_role, qualifier, BlockError, DcpBlock, DcpRepr, DcpValue, NameOfStation,
};
use pn_protocol::wire::ethernet::{ethertype, EthernetRepr, MacAddr, VlanTag};
use pn_protocol::wire::lldp::{self, DeviceLldpConfig, NameOfDeviceMode};
use pn_protocol::wire::rt::{self, ApduStatus, DataStatus, FrameId};
use pn_testkit::tshark::{self, Packet};
use std::net::Ipv4Addr;

const DEV: MacAddr = MacAddr([0x02, 0x00, 0x5e, 0x10, 0x20, 0x31]);
const CTRL: MacAddr = MacAddr([0x02, 0x00, 0x5e, 0x10, 0x20, 0x32]);

fn dissect(frames: &[Vec<u8>]) -> Vec<Packet> {
    let pkts = tshark::dissect(frames).expect("tshark runs");
    for (i, p) in pkts.iter().enumerate() {
        p.assert_clean(&format!("frame {i}"));
    }
    pkts
}

fn name(s: &str) -> NameOfStation {
    NameOfStation::new(s).unwrap()
}

#[test]
fn cyclic_frames() {
    if !pn_testkit::env::require_tshark() {
        return;
    }
    struct Case {
        vlan: Option<VlanTag>,
        id: u16,
        data: Vec<u8>,
        status: ApduStatus,
    }
    let cases = [
        Case {
            vlan: Some(VlanTag::RT_CYCLIC),
            id: 0x8000,
            data: vec![0x11, 0x22, 0x33, 0x44, 0x80, 0x80],
            status: ApduStatus {
                cycle_counter: 0x1c00,
                data_status: DataStatus::RUNNING,
                transfer_status: 0,
            },
        },
        Case {
            vlan: None,
            id: 0x8001,
            data: vec![0x80; 12],
            status: ApduStatus {
                cycle_counter: 0xfff0,
                data_status: DataStatus::RUNNING
                    .with_provider_run(false)
                    .with_station_ok(false),
                transfer_status: 0,
            },
        },
        Case {
            vlan: None,
            id: 0xC000,
            data: (0u8..60).collect(),
            status: ApduStatus {
                cycle_counter: 7,
                data_status: DataStatus(0x36),
                transfer_status: 0,
            },
        },
    ];
    let mut frames = Vec::new();
    for c in &cases {
        let eth = EthernetRepr {
            dst: CTRL,
            src: DEV,
            vlan: c.vlan,
            ethertype: ethertype::PROFINET,
        };
        let mut buf = [0u8; 1600];
        let n = rt::fill_cyclic_frame(&mut buf, &eth, FrameId(c.id), &c.data, c.status).unwrap();
        frames.push(buf[..n].to_vec());
    }
    let pkts = dissect(&frames);
    for (c, p) in cases.iter().zip(&pkts) {
        assert!(p.protocols().contains("pn_rt"), "{}", p.protocols());
        assert_eq!(p.uint("pn_rt.frame_id"), u64::from(c.id));
        assert_eq!(
            p.uint("pn_rt.cycle_counter"),
            u64::from(c.status.cycle_counter)
        );
        assert_eq!(p.uint("pn_rt.ds"), u64::from(c.status.data_status.0));
        assert_eq!(p.uint("pn_rt.transfer_status"), 0);
        let ds = c.status.data_status;
        assert_eq!(p.uint("pn_rt.ds_primary") != 0, ds.primary());
        assert_eq!(p.uint("pn_rt.ds_valid") != 0, ds.data_valid());
        assert_eq!(p.uint("pn_rt.ds_operate") != 0, ds.provider_run());
        assert_eq!(p.uint("pn_rt.ds_ok") != 0, ds.station_ok());
        assert_eq!(p.get("eth.src"), DEV.to_string());
        match c.vlan {
            Some(tag) => {
                assert_eq!(p.uint("vlan.priority"), u64::from(tag.pcp));
                assert_eq!(p.uint("vlan.id"), u64::from(tag.vid));
                assert_eq!(p.uint("vlan.etype"), 0x8892);
            }
            None => assert_eq!(p.uint("eth.type"), 0x8892),
        }
    }
}

/// Frames for every DCP service/option we build, with the checks for each.
fn dcp_cases() -> Vec<(DcpRepr, MacAddr, Option<VlanTag>)> {
    let ip = Ipv4Addr::new(192, 168, 0, 10);
    let mask = Ipv4Addr::new(255, 255, 255, 0);
    let gw = Ipv4Addr::new(192, 168, 0, 1);
    let full_response = DcpRepr::identify_response(
        0x0300012c,
        vec![
            DcpBlock::with_info(DcpValue::MacAddress(DEV), 0),
            DcpBlock::with_info(
                DcpValue::IpParameter {
                    ip,
                    mask,
                    gateway: gw,
                },
                dcp::ip_block_info::SET,
            ),
            DcpBlock::with_info(DcpValue::DeviceVendor(b"pn-device".to_vec()), 0),
            DcpBlock::with_info(DcpValue::NameOfStation(b"dev-1.line2".to_vec()), 0),
            DcpBlock::with_info(
                DcpValue::DeviceId {
                    vendor_id: 0x0493,
                    device_id: 0x0002,
                },
                0,
            ),
            DcpBlock::with_info(
                DcpValue::DeviceRole {
                    role: device_role::IO_DEVICE,
                    reserved: 0,
                },
                0,
            ),
            DcpBlock::with_info(
                DcpValue::DeviceOptions(vec![
                    (1, 1),
                    (1, 2),
                    (2, 1),
                    (2, 2),
                    (2, 3),
                    (5, 3),
                    (5, 6),
                ]),
                0,
            ),
            DcpBlock::with_info(DcpValue::AliasName(b"port-001.plc".to_vec()), 0),
            DcpBlock::with_info(DcpValue::DeviceInstance { high: 0, low: 1 }, 0),
            DcpBlock::with_info(
                DcpValue::OemDeviceId {
                    vendor_id: 0x1234,
                    device_id: 0x5678,
                },
                0,
            ),
            DcpBlock::with_info(DcpValue::DeviceInitiative(1), 0),
        ],
    );
    let get_response = DcpRepr::get_response(
        0x22,
        vec![
            DcpBlock::with_info(
                DcpValue::FullIpSuite {
                    ip,
                    mask,
                    gateway: gw,
                    dns: [
                        Ipv4Addr::new(10, 0, 0, 53),
                        Ipv4Addr::UNSPECIFIED,
                        Ipv4Addr::UNSPECIFIED,
                        Ipv4Addr::UNSPECIFIED,
                    ],
                },
                dcp::ip_block_info::SET,
            ),
            DcpBlock::new(DcpValue::Response {
                option: 2,
                suboption: 8,
                error: BlockError::SUBOPTION_UNSUPPORTED,
            }),
        ],
    );
    let hello = DcpRepr::hello(
        0x33,
        vec![
            DcpBlock::with_info(DcpValue::NameOfStation(b"dev-1".to_vec()), 0),
            DcpBlock::with_info(
                DcpValue::IpParameter {
                    ip,
                    mask,
                    gateway: gw,
                },
                dcp::ip_block_info::SET,
            ),
            DcpBlock::with_info(
                DcpValue::DeviceId {
                    vendor_id: 0x0493,
                    device_id: 2,
                },
                0,
            ),
            DcpBlock::with_info(DcpValue::DeviceInitiative(1), 0),
        ],
    );
    let both = DcpRepr::identify_request(
        5,
        3,
        vec![
            DcpValue::NameOfStation(b"dev-1".to_vec()),
            DcpValue::AliasName(b"port-002.switch".to_vec()),
        ],
    );
    // The device role's answers come from the responder the daemon runs (one DCP responder).
    let mut responder = DcpResponder::new(
        DcpIdentity {
            mac: DEV,
            station_name: "dev-7".into(),
            device_vendor: "pn-device".into(),
            vendor_id: 0x0493,
            device_id: 2,
            ip,
            mask,
            gateway: gw,
            device_instance: (0, 1),
            device_initiative: true,
        },
        Instant::ZERO,
    );
    let mut answer = |req: DcpRepr, dst: MacAddr| -> DcpRepr {
        let f = req.build_frame(dst, CTRL, None).unwrap();
        let mut frames = responder.on_frame(&f, Instant::ZERO).frames;
        frames.extend(responder.poll(Instant::from_millis(10_000)));
        frames
            .iter()
            .filter_map(|f| DcpRepr::parse_frame(f).ok().map(|(_, _, r)| r))
            .find(|r| r.xid == req.xid && r.service_id == req.service_id)
            .expect("the responder answered")
    };
    let identify_response = answer(
        DcpRepr::identify_request_all(0x51, 1),
        MacAddr::DCP_IDENTIFY,
    );
    let get_response_r = answer(
        DcpRepr::get_request(0x52, &[(1, 1), (1, 2), (2, 8), (6, 1), (0x80, 1)]),
        DEV,
    );
    let hello_r = DcpRepr::parse_frame(&responder.hello_frame().unwrap())
        .unwrap()
        .2;
    vec![
        (
            DcpRepr::identify_request_all(0x01000001, 1),
            MacAddr::DCP_IDENTIFY,
            None,
        ),
        (
            DcpRepr::identify_request_by_name(0x01140013, &name("et200sp"), 255),
            MacAddr::DCP_IDENTIFY,
            Some(VlanTag::priority(0)),
        ),
        (
            DcpRepr::identify_request_by_alias(3, b"port-001.plc", 0),
            MacAddr::DCP_IDENTIFY,
            None,
        ),
        (both, MacAddr::DCP_IDENTIFY, None),
        (full_response, CTRL, None),
        (
            DcpRepr::get_request(0x21, &[(1, 2), (2, 2), (2, 3)]),
            DEV,
            None,
        ),
        (get_response, CTRL, None),
        (DcpRepr::set_name(0x41, &name("dev-1"), false), DEV, None),
        (
            DcpRepr::set_name(0x42, &name("dev-1.line2"), true),
            DEV,
            None,
        ),
        (DcpRepr::set_ip(0x43, ip, mask, gw, true), DEV, None),
        (DcpRepr::set_signal(0x44), DEV, None),
        (
            DcpRepr::set_request(
                0x47,
                vec![
                    DcpBlock::with_qualifier(DcpValue::Start, 0),
                    DcpBlock::with_qualifier(
                        DcpValue::IpParameter {
                            ip,
                            mask,
                            gateway: gw,
                        },
                        qualifier::TEMPORARY,
                    ),
                    DcpBlock::with_qualifier(DcpValue::Stop, 0),
                ],
            ),
            DEV,
            None,
        ),
        (
            DcpRepr::set_request(
                0x48,
                vec![DcpBlock::with_qualifier(DcpValue::FactoryReset, 0)],
            ),
            DEV,
            None,
        ),
        (
            DcpRepr::set_reset_to_factory(0x45, qualifier::RESET_COMMUNICATION_PARAMETER),
            DEV,
            None,
        ),
        (
            DcpRepr::set_response(
                0x46,
                &[
                    (2, 2, BlockError::OK),
                    (1, 2, BlockError::SET_NOT_POSSIBLE),
                    (5, 6, BlockError::SUBOPTION_UNSUPPORTED),
                    (2, 9, BlockError::OPTION_UNSUPPORTED),
                    (1, 3, BlockError::IN_OPERATION),
                ],
            ),
            CTRL,
            None,
        ),
        (hello, MacAddr::DCP_HELLO, None),
        (identify_response, CTRL, None),
        (get_response_r, CTRL, None),
        (hello_r, MacAddr::DCP_HELLO, None),
    ]
}

#[test]
fn dcp_frames() {
    if !pn_testkit::env::require_tshark() {
        return;
    }
    let cases = dcp_cases();
    let frames: Vec<Vec<u8>> = cases
        .iter()
        .map(|(r, dst, vlan)| {
            let src = if *dst == DEV { CTRL } else { DEV };
            r.build_frame(*dst, src, *vlan).unwrap()
        })
        .collect();
    let pkts = dissect(&frames);
    for (i, ((r, _, _), p)) in cases.iter().zip(&pkts).enumerate() {
        let ctx = format!(
            "case {i} {:?}/{:?}:\n{}",
            r.service_id,
            r.service_type,
            p.dump()
        );
        assert!(p.protocols().contains("pn_dcp"), "{ctx}");
        assert_eq!(p.uint("pn_rt.frame_id"), u64::from(r.frame_id().0), "{ctx}");
        assert_eq!(p.uint("pn_dcp.service_id"), r.service_id as u64, "{ctx}");
        assert_eq!(
            p.uint("pn_dcp.service_type"),
            r.service_type as u64,
            "{ctx}"
        );
        assert_eq!(p.uint("pn_dcp.xid"), u64::from(r.xid), "{ctx}");
        assert_eq!(p.uint("pn_dcp.data_length"), r.data_len() as u64, "{ctx}");
        if r.frame_id() == FrameId::DCP_IDENTIFY_REQUEST {
            assert_eq!(
                p.uint("pn_dcp.response_delay"),
                u64::from(r.response_delay),
                "{ctx}"
            );
        }
        check_blocks(r, p, &ctx);
    }
}

/// Compare each block's values with what tshark shows, field by field (in order).
fn check_blocks(r: &DcpRepr, p: &Packet, ctx: &str) {
    let strs = |f: &str| p.all(f).into_iter().map(str::to_owned).collect::<Vec<_>>();
    let uints = |f: &str| {
        p.all(f)
            .into_iter()
            .map(|v| tshark::parse_uint(v).unwrap())
            .collect::<Vec<_>>()
    };
    let is_get_req =
        r.service_id == dcp::ServiceId::Get && r.service_type == dcp::ServiceType::Request;
    let mut names = vec![];
    let mut aliases = vec![];
    let mut vendors = vec![];
    // Wireshark shows the IP parameter as ip/subnetmask/gateway and reuses those three
    // fields for the four DNS addresses of a full IP suite (ip, mask, gateway, gateway).
    let mut ips: Vec<String> = vec![];
    let mut masks: Vec<String> = vec![];
    let mut gws: Vec<String> = vec![];
    let mut macs = vec![];
    let mut ids = vec![];
    let mut errors = vec![];
    let mut qualifiers = vec![];
    let mut options = vec![];
    for b in &r.blocks {
        let (o, _) = b.option_suboption();
        options.push(u64::from(o));
        match &b.value {
            DcpValue::NameOfStation(n) => names.push(String::from_utf8(n.clone()).unwrap()),
            DcpValue::AliasName(n) => aliases.push(String::from_utf8(n.clone()).unwrap()),
            DcpValue::DeviceVendor(n) => vendors.push(String::from_utf8(n.clone()).unwrap()),
            DcpValue::IpParameter { ip, mask, gateway } => {
                ips.push(ip.to_string());
                masks.push(mask.to_string());
                gws.push(gateway.to_string());
            }
            DcpValue::FullIpSuite {
                ip,
                mask,
                gateway,
                dns,
            } => {
                ips.extend([ip.to_string(), dns[0].to_string()]);
                masks.extend([mask.to_string(), dns[1].to_string()]);
                gws.extend([gateway.to_string(), dns[2].to_string(), dns[3].to_string()]);
            }
            DcpValue::MacAddress(m) => macs.push(m.to_string()),
            DcpValue::DeviceId {
                vendor_id,
                device_id,
            } => {
                ids.push((u64::from(*vendor_id), u64::from(*device_id)));
            }
            DcpValue::Response { error, .. } => errors.push(u64::from(error.0)),
            _ => {}
        }
        if r.service_id == dcp::ServiceId::Set && !r.service_type.is_response() {
            qualifiers.push(u64::from(b.prefix));
        }
        match &b.value {
            DcpValue::DeviceRole { role, .. } => {
                assert_eq!(
                    p.uint("pn_dcp.suboption_device_role"),
                    u64::from(*role),
                    "{ctx}"
                )
            }
            DcpValue::DeviceInstance { high, low } => assert_eq!(
                uints("pn_dcp.suboption_device_instance"),
                vec![u64::from(*high), u64::from(*low)],
                "{ctx}"
            ),
            DcpValue::OemDeviceId {
                vendor_id,
                device_id,
            } => {
                assert_eq!(
                    p.uint("pn_dcp.suboption_device_oem_ven_id"),
                    u64::from(*vendor_id)
                );
                assert_eq!(
                    p.uint("pn_dcp.suboption_device_oem_dev_id"),
                    u64::from(*device_id)
                );
            }
            DcpValue::DeviceOptions(pairs) => {
                // The DeviceOptions pairs are shown as pn_dcp.option entries too.
                let shown = uints("pn_dcp.option");
                for (o, _) in pairs {
                    assert!(shown.contains(&u64::from(*o)), "{ctx}");
                }
            }
            DcpValue::DeviceInitiative(v) => {
                assert_eq!(
                    p.uint("pn_dcp.deviceinitiative_value"),
                    u64::from(*v),
                    "{ctx}"
                )
            }
            DcpValue::Signal { value } => {
                assert_eq!(
                    p.uint("pn_dcp.suboption_control_signal_value"),
                    u64::from(*value),
                    "{ctx}"
                )
            }
            DcpValue::ResetToFactory | DcpValue::FactoryReset => {
                assert_eq!(
                    p.uint("pn_dcp.block_qualifier_reset"),
                    u64::from(b.prefix),
                    "{ctx}"
                )
            }
            _ => {}
        }
    }
    assert_eq!(
        strs("pn_dcp.suboption_device_nameofstation"),
        names,
        "{ctx}"
    );
    assert_eq!(strs("pn_dcp.suboption_device_aliasname"), aliases, "{ctx}");
    assert_eq!(
        strs("pn_dcp.suboption_device_devicevendorvalue"),
        vendors,
        "{ctx}"
    );
    assert_eq!(strs("pn_dcp.suboption_ip_ip"), ips, "{ctx}");
    assert_eq!(strs("pn_dcp.suboption_ip_subnetmask"), masks, "{ctx}");
    assert_eq!(strs("pn_dcp.suboption_ip_standard_gateway"), gws, "{ctx}");
    assert_eq!(strs("pn_dcp.suboption_ip_mac_address"), macs, "{ctx}");
    let shown_ids: Vec<(u64, u64)> = uints("pn_dcp.suboption_vendor_id")
        .into_iter()
        .zip(uints("pn_dcp.suboption_device_id"))
        .collect();
    assert_eq!(shown_ids, ids, "{ctx}");
    assert_eq!(uints("pn_dcp.block_error"), errors, "{ctx}");
    if is_get_req {
        assert_eq!(uints("pn_dcp.option"), options, "{ctx}");
    }
    if !qualifiers.is_empty() {
        // Blocks other than ResetToFactory/FactoryReset show their qualifier as
        // block_qualifier; those two are checked above (block_qualifier_reset).
        let q: Vec<u64> = r
            .blocks
            .iter()
            .filter(|b| !matches!(b.value, DcpValue::ResetToFactory | DcpValue::FactoryReset))
            .map(|b| u64::from(b.prefix))
            .collect();
        assert_eq!(uints("pn_dcp.block_qualifier"), q, "{ctx}");
    }
}

#[test]
fn lldp_device_frame() {
    if !pn_testkit::env::require_tshark() {
        return;
    }
    let mut cfg = DeviceLldpConfig::new(
        Some(name("dev-1.line2")),
        DEV,
        Ipv4Addr::new(192, 168, 0, 10),
    );
    cfg.system_description = "pn-device  PN-DEV-0001  S 0001  1 V 0 1 0".to_owned();
    cfg.if_index = 3;
    let standard = cfg.build();
    cfg.mode = NameOfDeviceMode::Legacy;
    cfg.mau_type = lldp::mau_type::TYPE_1000BASE_T_FD;
    cfg.rtc3_port_status = 2;
    let legacy = cfg.build();
    let frames = vec![
        standard.build_frame(DEV).unwrap(),
        legacy.build_frame(DEV).unwrap(),
    ];
    let pkts = dissect(&frames);
    for (r, p, port, chassis, mau, rtc3) in [
        (
            &standard,
            &pkts[0],
            "port-001.dev-1.line2",
            cfg.system_description.as_str(),
            lldp::mau_type::TYPE_100BASE_TX_FD,
            0u64,
        ),
        (
            &legacy,
            &pkts[1],
            "port-001",
            "dev-1.line2",
            lldp::mau_type::TYPE_1000BASE_T_FD,
            2,
        ),
    ] {
        assert!(p.protocols().contains("lldp"), "{}", p.protocols());
        assert_eq!(p.get("eth.dst"), "01:80:c2:00:00:0e");
        assert_eq!(p.uint("lldp.chassis.subtype"), 7);
        let chassis_hex: String = chassis.bytes().map(|b| format!("{b:02x}")).collect();
        let shown = p.get("lldp.chassis.id").replace(':', "");
        assert!(
            shown == chassis_hex || shown == chassis,
            "chassis id {shown:?}"
        );
        assert_eq!(p.uint("lldp.port.subtype"), 7);
        assert_eq!(p.get("lldp.port.id"), port);
        assert_eq!(p.uint("lldp.time_to_live"), 20);
        assert_eq!(p.uint("lldp.profinet.rtc2_port_status"), 0);
        assert_eq!(p.uint("lldp.profinet.rtc3_port_status"), rtc3);
        assert_eq!(p.get("lldp.profinet.cm_mac_add"), DEV.to_string());
        assert_eq!(p.uint("lldp.ieee.802_3.mac_phy_auto_neg_status"), 3);
        assert_eq!(
            p.uint("lldp.ieee.802_3.pmd_auto_neg_advertised_caps"),
            0x6c00
        );
        assert_eq!(p.uint("lldp.ieee.802_3.pmd_mau_type"), u64::from(mau));
        assert_eq!(p.uint("lldp.mgn.address.subtype"), 1);
        assert_eq!(p.get("lldp.mgn.addr.ip4"), "192.168.0.10");
        assert_eq!(p.uint("lldp.mgn.interface.subtype"), 2);
        assert_eq!(p.uint("lldp.mgn.interface.number"), 3);
        assert_eq!(p.uint("lldp.mgn.obj.len"), 0);
        assert_eq!(r.ttl(), Some(20));
    }
}

//! Every real captured frame with EtherType 0x8892 or 0x88CC (tagged or not) must parse:
//! Ethernet header, FrameID class, DCP PDUs (re-emitted byte-exactly up to DCPDataLength),
//! LLDPDUs (re-emitted byte-exactly up to the End TLV), cyclic APDU status. A few frames are
//! checked field by field.

use pn_protocol::wire::dcp::{self, BlockError, DcpRepr, DcpValue, NameOfStation};
use pn_protocol::wire::ethernet::{ethertype, EthernetRepr, MacAddr};
use pn_protocol::wire::lldp::{self, LldpRepr, PnTlv, Tlv};
use pn_protocol::wire::rt::{self, CyclicFrame, FrameClass, FrameId};
use pn_protocol::wire::Emit;
use pn_testkit::fixtures::{self, RealFrame};
use std::net::Ipv4Addr;

fn frame(name: &str) -> RealFrame {
    fixtures::by_name(name).unwrap_or_else(|| panic!("fixture {name} missing"))
}

#[derive(Default, Debug)]
struct Seen {
    dcp: usize,
    lldp: usize,
    cyclic: usize,
    other_rt: usize,
}

#[test]
fn every_l2_fixture_parses_and_round_trips() {
    let mut seen = Seen::default();
    for f in fixtures::all() {
        let (eth, payload) = EthernetRepr::parse_frame(&f.bytes)
            .unwrap_or_else(|e| panic!("{}: ethernet: {e}", f.name));
        match eth.ethertype {
            ethertype::PROFINET => {
                let id = rt::frame_id(payload).unwrap_or_else(|e| panic!("{}: {e}", f.name));
                match id.class() {
                    FrameClass::DcpHello
                    | FrameClass::DcpGetSet
                    | FrameClass::DcpIdentifyRequest
                    | FrameClass::DcpIdentifyResponse => {
                        let pdu = &payload[2..];
                        let r =
                            DcpRepr::parse(pdu).unwrap_or_else(|e| panic!("{}: DCP: {e}", f.name));
                        let data_len = u16::from_be_bytes([pdu[8], pdu[9]]) as usize;
                        let out = r.to_bytes().unwrap();
                        assert_eq!(out, pdu[..10 + data_len], "{}: DCP re-emit", f.name);
                        assert_eq!(r.frame_id(), id, "{}", f.name);
                        // The whole frame through the frame-level entry point too.
                        let (_, id2, r2) = DcpRepr::parse_frame(&f.bytes).unwrap();
                        assert_eq!((id2, &r2), (id, &r), "{}", f.name);
                        seen.dcp += 1;
                    }
                    FrameClass::RtClass1 | FrameClass::RtClass1Legacy => {
                        let v = CyclicFrame::new_checked(payload)
                            .unwrap_or_else(|e| panic!("{}: cyclic: {e}", f.name));
                        assert!(v.c_sdu().len() >= rt::C_SDU_MIN_LEN, "{}", f.name);
                        assert_eq!(v.transfer_status(), 0, "{}", f.name);
                        assert!(v.data_status().data_valid(), "{}", f.name);
                        seen.cyclic += 1;
                    }
                    FrameClass::AlarmHigh | FrameClass::AlarmLow | FrameClass::Ptcp => {
                        seen.other_rt += 1;
                    }
                    other => panic!("{}: unexpected FrameID {:#06x} ({other:?})", f.name, id.0),
                }
            }
            ethertype::LLDP => {
                let r =
                    LldpRepr::parse(payload).unwrap_or_else(|e| panic!("{}: LLDP: {e}", f.name));
                assert_eq!(r.tlvs.last(), Some(&Tlv::End), "{}", f.name);
                let out = r.to_bytes().unwrap();
                assert_eq!(out, payload[..out.len()], "{}: LLDP re-emit", f.name);
                assert!(payload[out.len()..].iter().all(|&b| b == 0), "{}", f.name);
                assert_eq!(r.ttl(), Some(20), "{}", f.name);
                assert!(r.chassis_mac().is_some(), "{}", f.name);
                seen.lldp += 1;
            }
            _ => {}
        }
    }
    // The local fixture copies hold at least these; the shared set holds more.
    assert!(seen.dcp >= 3, "{seen:?}");
    assert!(seen.cyclic >= 2, "{seen:?}");
    if fixtures::shared_dir().is_some() {
        assert!(
            seen.dcp >= 15 && seen.lldp >= 4 && seen.cyclic >= 9 && seen.other_rt >= 17,
            "{seen:?}"
        );
    }
}

fn dcp_of(name: &str) -> (EthernetRepr, FrameId, DcpRepr) {
    DcpRepr::parse_frame(&frame(name).bytes).unwrap()
}

#[test]
fn s7_identify_request_by_name() {
    if fixtures::shared_dir().is_none() {
        return;
    }
    let (eth, id, r) = dcp_of("mehner-dcp-ident-req-name-s7.hex");
    assert_eq!(eth.dst, MacAddr::DCP_IDENTIFY);
    assert_eq!(eth.vlan.map(|v| v.tci()), Some(0));
    assert_eq!(id, FrameId::DCP_IDENTIFY_REQUEST);
    assert_eq!(r.xid, 0x01140013);
    assert_eq!(r.response_delay, 1);
    assert_eq!(r.blocks.len(), 1);
    assert_eq!(r.name_of_station(), Some(&b"et200sp"[..]));
    let ours =
        DcpRepr::identify_request_by_name(0x01140013, &NameOfStation::new("et200sp").unwrap(), 1);
    assert_eq!(r, ours);
    assert!(r.identify_filter_matches(&[DcpValue::NameOfStation(b"et200sp".to_vec())]));
}

#[test]
fn pnet_identify_response() {
    let (eth, id, r) = dcp_of("pniors-dcp-ident-res-pnet.hex");
    assert_eq!(eth.src, MacAddr([0x8c, 0xf3, 0x19, 0xcd, 0x19, 0xf8]));
    assert_eq!(id, FrameId::DCP_IDENTIFY_RESPONSE);
    assert_eq!(r.xid, 0x0300012c);
    assert_eq!(r.name_of_station(), Some(&b"rt-labs-dev"[..]));
    assert!(NameOfStation::from_bytes(r.name_of_station().unwrap()).is_ok());
    let ip = r
        .find(dcp::option::IP, dcp::suboption::IP_PARAMETER)
        .unwrap();
    assert_eq!(ip.prefix, dcp::ip_block_info::NOT_SET);
    assert_eq!(
        ip.value,
        DcpValue::IpParameter {
            ip: Ipv4Addr::UNSPECIFIED,
            mask: Ipv4Addr::UNSPECIFIED,
            gateway: Ipv4Addr::UNSPECIFIED
        }
    );
    assert!(r.blocks.iter().any(|b| b.value
        == DcpValue::DeviceId {
            vendor_id: 0x0493,
            device_id: 0x0002
        }));
    assert!(r
        .blocks
        .iter()
        .any(|b| b.value == DcpValue::DeviceVendor(b"P-Net Sample Application".to_vec())));
    assert!(r.blocks.iter().any(|b| matches!(
        b.value,
        DcpValue::DeviceRole {
            role: dcp::device_role::IO_DEVICE,
            ..
        }
    )));
    let opts = r
        .blocks
        .iter()
        .find_map(|b| match &b.value {
            DcpValue::DeviceOptions(o) => Some(o.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(opts.len(), 14);
    assert_eq!(opts.last(), Some(&(0xff, 0xff)));
}

#[test]
fn set_requests_and_responses() {
    if fixtures::shared_dir().is_none() {
        return;
    }
    let (_, _, r) = dcp_of("s7init2005-dcp-set-ip-req-s7.hex");
    assert_eq!(r.service_id, dcp::ServiceId::Set);
    assert_eq!(r.blocks.len(), 2);
    assert_eq!(r.blocks[0].prefix, dcp::qualifier::TEMPORARY);
    assert_eq!(
        r.blocks[0].value,
        DcpValue::IpParameter {
            ip: Ipv4Addr::new(147, 87, 174, 142),
            mask: Ipv4Addr::new(255, 255, 255, 0),
            gateway: Ipv4Addr::new(147, 87, 174, 142)
        }
    );
    assert_eq!(r.blocks[1].value, DcpValue::Stop);

    // The attack tool's Set NameOfStation: BlockQualifier 1 (permanent).
    let (_, _, r) = dcp_of("mehner-dcp-set-name-req-tool.hex");
    assert_eq!(r.blocks.len(), 1);
    assert_eq!(r.blocks[0].prefix, dcp::qualifier::PERMANENT);
    assert_eq!(r.name_of_station(), Some(&b"mallory"[..]));

    let (_, _, r) = dcp_of("s7init2005-dcp-set-res-im151.hex");
    assert_eq!(
        r,
        DcpRepr::set_response(1, &[(1, 2, BlockError::OK), (5, 2, BlockError::OK)])
    );

    // p-net's unpadded 34-byte Set response.
    let f = frame("pniors-dcp-set-res-pnet.hex");
    assert_eq!(f.bytes.len(), 34);
    let (_, _, r) = DcpRepr::parse_frame(&f.bytes).unwrap();
    assert_eq!(
        r,
        DcpRepr::set_response(0x0300012d, &[(1, 2, BlockError::OK)])
    );

    // An old device's upper-case name parses but is not a valid NameOfStation.
    let (_, _, r) = dcp_of("s7init2005-dcp-ident-res-im151.hex");
    assert_eq!(r.name_of_station(), Some(&b"IM151-3PN"[..]));
    assert!(NameOfStation::from_bytes(b"IM151-3PN").is_err());
}

#[test]
fn cyclic_fixtures() {
    let f = frame("pniors-rtc1-8000-pnet.hex");
    let (eth, id, _) = rt::parse_rt_frame(&f.bytes).unwrap();
    assert_eq!(eth.vlan.map(|v| v.pcp), Some(6));
    assert_eq!(id, FrameId(0x8000));
    assert_eq!(id.class(), FrameClass::RtClass1);
    let v = CyclicFrame::new_checked(&f.bytes[18..]).unwrap();
    assert_eq!(v.c_sdu().len(), 40);
    assert_eq!(v.cycle_counter(), 0x1c00);
    assert_eq!(v.data_status().0, 0x35);
    let v2 = CyclicFrame::with_c_sdu_len(&f.bytes[18..], 40).unwrap();
    assert_eq!(v2.apdu_status(), v.apdu_status());

    if fixtures::shared_dir().is_none() {
        return;
    }
    let f = frame("pniors-rtc1-8000-pnet-echo.hex");
    let v = CyclicFrame::new_checked(&f.bytes[18..]).unwrap();
    assert_eq!(v.data_status().0, 0x36);
    assert!(!v.data_status().primary() && v.data_status().redundancy());

    let f = frame("icsnpp-rtc1-c002-versamax.hex");
    let (eth, id, _) = rt::parse_rt_frame(&f.bytes).unwrap();
    assert_eq!(eth.vlan, None);
    assert_eq!(id.class(), FrameClass::RtClass1Legacy);
    let v = CyclicFrame::new_checked(&f.bytes[14..]).unwrap();
    let ds = v.data_status();
    assert!(ds.data_valid() && ds.primary() && ds.provider_run() && !ds.station_ok());
    assert_eq!(v.cycle_counter(), 15360);

    let f = frame("s7init2005-rtc1-c000-s7.hex");
    let v = CyclicFrame::new_checked(&f.bytes[14..]).unwrap();
    assert!(!v.data_status().provider_run());
    assert_eq!(v.cycle_counter(), 10944);

    let (_, id, _) = rt::parse_rt_frame(&frame("mehner-ptcp-delayreq-s7.hex").bytes).unwrap();
    assert_eq!((id, id.class()), (FrameId(0xFF40), FrameClass::Ptcp));
}

#[test]
fn lldp_fixtures() {
    if fixtures::shared_dir().is_none() {
        return;
    }
    let (eth, r) = LldpRepr::parse_frame(&frame("mehner-lldp-s7-1516.hex").bytes).unwrap();
    assert_eq!(eth.dst, MacAddr::LLDP_NEAREST_BRIDGE);
    assert_eq!(
        r.port_id(),
        Some((
            lldp::port_subtype::LOCALLY_ASSIGNED,
            &b"port-001.cpu1500.profinet-schnittstellexb19f01"[..]
        ))
    );
    assert_eq!(
        r.peer_station_and_port(),
        Some((
            &b"cpu1500.profinet-schnittstellexb19f01"[..],
            &b"port-001"[..]
        ))
    );
    assert!(r.tlvs.iter().any(|t| matches!(
        t,
        Tlv::Profinet(PnTlv::MeasuredDelay {
            rx_local: 313,
            tx_local: 41,
            ..
        })
    )));
    assert!(r.tlvs.iter().any(|t| matches!(
        t,
        Tlv::Profinet(PnTlv::Other {
            subtype: lldp::pn_subtype::PTCP_STATUS,
            ..
        })
    )));
    assert!(r
        .tlvs
        .iter()
        .any(|t| matches!(t, Tlv::SystemCapabilities { system: 0x0084, .. })));
    assert!(r.tlvs.iter().any(|t| matches!(
        t,
        Tlv::ManagementAddress {
            addr_subtype: lldp::mgmt::ADDR_IPV4,
            ..
        }
    )));

    let (_, r) = LldpRepr::parse_frame(&frame("icsnpp-lldp-versamax.hex").bytes).unwrap();
    assert_eq!(r.chassis_id(), Some((7, &b"versamax-pns11"[..])));
    assert_eq!(r.port_id(), Some((7, &b"port-001"[..])));
    assert!(r.tlvs.contains(&Tlv::MacPhy {
        autoneg: 3,
        pmd_advertised: 0x6c00,
        mau_type: lldp::mau_type::TYPE_100BASE_TX_FD
    }));

    let (_, r) = LldpRepr::parse_frame(&frame("mehner-lldp-et200sp.hex").bytes).unwrap();
    assert_eq!(
        r.chassis_mac(),
        Some(MacAddr([0xac, 0x64, 0x17, 0x21, 0x35, 0xcf]))
    );
    assert!(r.tlvs.iter().any(|t| matches!(
        t,
        Tlv::OrgSpecific {
            oui: lldp::OUI_IEEE_802_3,
            subtype: lldp::ieee_subtype::MAX_FRAME_SIZE,
            ..
        }
    )));
}

//! Property tests for the layer-2 codecs: emit-then-parse round trips of every Repr, and
//! "never panics" on arbitrary bytes for every decoder and the cyclic consumer.

use pn_protocol::machine::cyclic::{Consumer, CyclicTiming};
use pn_protocol::time::Instant;
use pn_protocol::wire::dcp::{
    self, BlockError, DcpBlock, DcpRepr, DcpValue, NameOfStation, ServiceId, ServiceType,
};
use pn_protocol::wire::ethernet::{EthernetRepr, MacAddr, VlanTag};
use pn_protocol::wire::lldp::{LldpRepr, PnTlv, Tlv};
use pn_protocol::wire::rt::{self, ApduStatus, CyclicFrame, DataStatus, FrameId};
use pn_protocol::wire::Emit;
use proptest::prelude::*;
use std::net::Ipv4Addr;

fn mac() -> impl Strategy<Value = MacAddr> {
    any::<[u8; 6]>().prop_map(MacAddr)
}

fn ip() -> impl Strategy<Value = Ipv4Addr> {
    any::<[u8; 4]>().prop_map(Ipv4Addr::from)
}

fn bytes(max: usize) -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(any::<u8>(), 0..=max)
}

fn vlan() -> impl Strategy<Value = Option<VlanTag>> {
    proptest::option::of(
        (0u8..8, any::<bool>(), 0u16..4096).prop_map(|(pcp, dei, vid)| VlanTag { pcp, dei, vid }),
    )
}

fn eth() -> impl Strategy<Value = EthernetRepr> {
    (
        mac(),
        mac(),
        vlan(),
        any::<u16>().prop_filter("not a TPID", |t| *t != 0x8100),
    )
        .prop_map(|(dst, src, vlan, ethertype)| EthernetRepr {
            dst,
            src,
            vlan,
            ethertype,
        })
}

/// Values whose encoding decodes back to the same variant.
fn dcp_value() -> impl Strategy<Value = DcpValue> {
    prop_oneof![
        mac().prop_map(DcpValue::MacAddress),
        (ip(), ip(), ip()).prop_map(|(ip, mask, gateway)| DcpValue::IpParameter {
            ip,
            mask,
            gateway
        }),
        (ip(), ip(), ip(), [ip(), ip(), ip(), ip()]).prop_map(|(ip, mask, gateway, dns)| {
            DcpValue::FullIpSuite {
                ip,
                mask,
                gateway,
                dns,
            }
        }),
        bytes(40).prop_map(DcpValue::DeviceVendor),
        bytes(40).prop_map(DcpValue::NameOfStation),
        (any::<u16>(), any::<u16>()).prop_map(|(vendor_id, device_id)| DcpValue::DeviceId {
            vendor_id,
            device_id
        }),
        (any::<u8>(), any::<u8>())
            .prop_map(|(role, reserved)| DcpValue::DeviceRole { role, reserved }),
        proptest::collection::vec(any::<(u8, u8)>(), 0..10).prop_map(DcpValue::DeviceOptions),
        bytes(40).prop_map(DcpValue::AliasName),
        (any::<u8>(), any::<u8>()).prop_map(|(high, low)| DcpValue::DeviceInstance { high, low }),
        (any::<u16>(), any::<u16>()).prop_map(|(vendor_id, device_id)| DcpValue::OemDeviceId {
            vendor_id,
            device_id
        }),
        Just(DcpValue::Start),
        Just(DcpValue::Stop),
        any::<u16>().prop_map(|value| DcpValue::Signal { value }),
        (any::<u8>(), any::<u8>(), any::<u8>()).prop_map(|(option, suboption, e)| {
            DcpValue::Response {
                option,
                suboption,
                error: BlockError(e),
            }
        }),
        Just(DcpValue::FactoryReset),
        Just(DcpValue::ResetToFactory),
        any::<u16>().prop_map(DcpValue::DeviceInitiative),
        Just(DcpValue::AllSelector),
        // DHCP and manufacturer-specific options are always opaque.
        (
            prop_oneof![Just(3u8), 0x80u8..=0xFE],
            any::<u8>(),
            bytes(30)
        )
            .prop_map(|(option, suboption, data)| DcpValue::Other {
                option,
                suboption,
                data
            }),
    ]
}

fn service() -> impl Strategy<Value = (ServiceId, ServiceType)> {
    (
        prop_oneof![
            Just(ServiceId::Get),
            Just(ServiceId::Set),
            Just(ServiceId::Identify),
            Just(ServiceId::Hello)
        ],
        prop_oneof![
            Just(ServiceType::Request),
            Just(ServiceType::ResponseSuccess),
            Just(ServiceType::ResponseNotSupported)
        ],
    )
}

fn dcp_repr() -> impl Strategy<Value = DcpRepr> {
    (
        service(),
        any::<u32>(),
        any::<u16>(),
        proptest::collection::vec((dcp_value(), any::<u16>()), 0..8),
    )
        .prop_map(
            |((service_id, service_type), xid, response_delay, blocks)| {
                let get_req = service_id == ServiceId::Get && service_type == ServiceType::Request;
                let blocks = blocks
                    .into_iter()
                    .map(|(value, prefix)| {
                        if get_req {
                            // A Get request carries bare selectors.
                            let (option, suboption) = value.option_suboption();
                            return DcpBlock::new(DcpValue::Other {
                                option,
                                suboption,
                                data: vec![],
                            });
                        }
                        let (opt, _) = value.option_suboption();
                        let prefix = if dcp::has_prefix(service_id, service_type, opt) {
                            prefix
                        } else {
                            0
                        };
                        DcpBlock { prefix, value }
                    })
                    .collect();
                DcpRepr {
                    service_id,
                    service_type,
                    xid,
                    response_delay,
                    blocks,
                }
            },
        )
}

fn lldp_tlv() -> impl Strategy<Value = Tlv> {
    prop_oneof![
        (any::<u8>(), bytes(60)).prop_map(|(subtype, id)| Tlv::ChassisId { subtype, id }),
        (any::<u8>(), bytes(60)).prop_map(|(subtype, id)| Tlv::PortId { subtype, id }),
        any::<u16>().prop_map(Tlv::Ttl),
        bytes(100).prop_map(Tlv::PortDescription),
        bytes(100).prop_map(Tlv::SystemName),
        bytes(100).prop_map(Tlv::SystemDescription),
        (any::<u16>(), any::<u16>())
            .prop_map(|(system, enabled)| Tlv::SystemCapabilities { system, enabled }),
        (
            any::<u8>(),
            bytes(31),
            any::<u8>(),
            any::<u32>(),
            bytes(128)
        )
            .prop_map(|(addr_subtype, addr, if_subtype, if_number, oid)| {
                Tlv::ManagementAddress {
                    addr_subtype,
                    addr,
                    if_subtype,
                    if_number,
                    oid,
                }
            }),
        any::<[u32; 5]>().prop_map(|d| Tlv::Profinet(PnTlv::MeasuredDelay {
            rx_local: d[0],
            rx_remote: d[1],
            tx_local: d[2],
            tx_remote: d[3],
            cable_local: d[4],
        })),
        (any::<u16>(), any::<u16>())
            .prop_map(|(rtc2, rtc3)| Tlv::Profinet(PnTlv::PortStatus { rtc2, rtc3 })),
        mac().prop_map(|m| Tlv::Profinet(PnTlv::ChassisMac(m))),
        (
            prop_oneof![Just(3u8), Just(4), Just(6), Just(7), Just(8), 9u8..=255],
            bytes(50)
        )
            .prop_map(|(subtype, data)| Tlv::Profinet(PnTlv::Other { subtype, data })),
        (any::<u8>(), any::<u16>(), any::<u16>()).prop_map(
            |(autoneg, pmd_advertised, mau_type)| {
                Tlv::MacPhy {
                    autoneg,
                    pmd_advertised,
                    mau_type,
                }
            }
        ),
        (any::<u8>(), bytes(50)).prop_map(|(subtype, data)| Tlv::OrgSpecific {
            oui: [0x00, 0x80, 0xc2],
            subtype,
            data
        }),
        (9u8..=126, bytes(100)).prop_map(|(tlv_type, data)| Tlv::Other { tlv_type, data }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn ethernet_round_trip(e in eth(), payload in bytes(80)) {
        let f = e.build(&payload);
        prop_assert!(f.len() >= 60);
        let (p, rest) = EthernetRepr::parse_frame(&f).unwrap();
        prop_assert_eq!(p, e);
        prop_assert_eq!(&rest[..payload.len()], &payload[..]);
    }

    #[test]
    fn cyclic_round_trip(
        e in eth(), id in 0x8000u16..=0xFBFF, data in bytes(1440),
        cc in any::<u16>(), ds in any::<u8>(), ts in any::<u8>(),
    ) {
        let e = EthernetRepr { ethertype: 0x8892, ..e };
        let status = ApduStatus { cycle_counter: cc, data_status: DataStatus(ds), transfer_status: ts };
        let mut buf = vec![0u8; 1600];
        let n = rt::fill_cyclic_frame(&mut buf, &e, FrameId(id), &data, status).unwrap();
        let (p, fid, _) = rt::parse_rt_frame(&buf[..n]).unwrap();
        prop_assert_eq!(p, e);
        prop_assert_eq!(fid, FrameId(id));
        let v = CyclicFrame::new_checked(&buf[e.header_len()..n]).unwrap();
        prop_assert_eq!(v.apdu_status(), status);
        prop_assert_eq!(v.c_sdu().len(), data.len().max(40));
        prop_assert_eq!(&v.c_sdu()[..data.len()], &data[..]);
    }

    #[test]
    fn dcp_round_trip(r in dcp_repr()) {
        let pdu = r.to_bytes().unwrap();
        prop_assert_eq!(pdu.len(), r.buffer_len());
        let p = DcpRepr::parse(&pdu).unwrap();
        prop_assert_eq!(&p, &r);
        // With Ethernet padding after it, and through a whole frame.
        let f = r.build_frame(MacAddr::DCP_IDENTIFY, MacAddr([2, 0, 0, 0, 0, 1]), None).unwrap();
        let (_, id, q) = DcpRepr::parse_frame(&f).unwrap();
        prop_assert_eq!(id, r.frame_id());
        prop_assert_eq!(q, r);
    }

    #[test]
    fn lldp_round_trip(tlvs in proptest::collection::vec(lldp_tlv(), 0..8), end in any::<bool>()) {
        let mut tlvs = tlvs;
        if end {
            tlvs.push(Tlv::End);
        }
        let r = LldpRepr { tlvs };
        let pdu = r.to_bytes().unwrap();
        prop_assert_eq!(LldpRepr::parse(&pdu).unwrap(), r.clone());
        if end {
            let f = r.build_frame(MacAddr([2, 0, 0, 0, 0, 1])).unwrap();
            prop_assert_eq!(LldpRepr::parse_frame(&f).unwrap().1, r);
        }
    }

    #[test]
    fn valid_names_survive_dcp(labels in proptest::collection::vec("[a-z][a-z0-9]{0,10}", 1..5)) {
        let s = labels.join(".");
        let n = NameOfStation::new(&s).unwrap();
        let r = DcpRepr::set_name(1, &n, true);
        let p = DcpRepr::parse(&r.to_bytes().unwrap()).unwrap();
        prop_assert_eq!(NameOfStation::from_bytes(p.name_of_station().unwrap()).unwrap(), n);
    }

    #[test]
    fn decoders_never_panic(b in bytes(300)) {
        let _ = EthernetRepr::parse_frame(&b);
        let _ = rt::parse_rt_frame(&b);
        let _ = DcpRepr::parse(&b);
        let _ = DcpRepr::parse_frame(&b);
        let _ = LldpRepr::parse(&b);
        let _ = LldpRepr::parse_frame(&b);
        let _ = NameOfStation::from_bytes(&b);
        if let Ok(v) = CyclicFrame::new_checked(&b[..]) {
            let _ = (v.frame_id(), v.c_sdu(), v.apdu_status());
        }
        for n in [0usize, 40, 300, usize::MAX] {
            if let Ok(v) = CyclicFrame::with_c_sdu_len(&b[..], n) {
                let _ = (v.c_sdu(), v.apdu_status());
            }
        }
        let t = CyclicTiming::new(32, 1).unwrap();
        let mut c = Consumer::new(FrameId(0x8000), t, 3, Instant::ZERO).with_c_sdu_len(40);
        let _ = c.on_frame(Instant::ZERO, &b);
        let _ = c.on_rt_payload(Instant::ZERO, MacAddr::ZERO, &b);
    }

    /// Structured fuzzing: valid DCP/LLDP PDUs with bytes flipped or cut.
    #[test]
    fn mutated_pdus_never_panic(r in dcp_repr(), at in any::<usize>(), x in any::<u8>(), cut in any::<usize>()) {
        let mut pdu = r.to_bytes().unwrap();
        if !pdu.is_empty() {
            let i = at % pdu.len();
            pdu[i] ^= x;
            let _ = DcpRepr::parse(&pdu);
            let _ = DcpRepr::parse(&pdu[..cut % pdu.len()]);
            let _ = LldpRepr::parse(&pdu);
        }
    }
}

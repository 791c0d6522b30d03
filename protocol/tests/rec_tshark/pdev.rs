//! Read responses with PDPortDataReal (0x802A) for own/peer names of every length and 0..2 peers.

use crate::frames::*;
use pn_protocol::wire::field::Writer;
use pn_protocol::wire::pnio::record::{index, ReadResponse};
use pn_protocol::wire::pnio::PnioStatus;
use pn_protocol::wire::rpc::{self, Drep};
use pn_protocol::wire::Emit;

/// PDPortDataReal, PDInterfaceDataReal and PDRealData (the two in MultipleBlockHeaders):
/// tshark finds every field where it was put, for names of every length modulo 4 (the
/// blocks align to 4 after each name) and zero to two peers.
#[test]
fn read_responses_pdev_real_data() {
    use pn_protocol::wire::pnio::pdev::{self, PdInterfaceDataReal, PdPortDataReal, Peer};
    if !pn_testkit::env::require_tshark() {
        return;
    }
    let names = ["", "p", "po", "por", "port-001", "port-001.slot-1"];
    let mut frames = Vec::new();
    let mut expected = Vec::new();
    for (k, own) in names.iter().enumerate() {
        for peers in 0..3usize {
            let port = PdPortDataReal {
                slot: 0,
                subslot: 0x8001 + k as u16,
                own_port_id: own.to_string(),
                peers: (0..peers)
                    .map(|i| Peer {
                        port_id: names[(k + i + 1) % names.len()].to_string() + "x",
                        chassis_id: "plc-".to_string() + &"a".repeat(k + i),
                        line_delay: 100 * i as u32,
                        mac: [2, 0, 0, 0, k as u8, i as u8],
                    })
                    .collect(),
                mau_type: 0x10 + peers as u16,
                domain_boundary: 0,
                multicast_boundary: 0,
                link_port: 0,
                link: if peers == 0 {
                    pdev::link::DOWN
                } else {
                    pdev::link::UP
                },
                media_type: pdev::media_type::COPPER,
            };
            let req = read_req(index::SUB_PD_PORT_DATA_REAL, 0, port.subslot);
            let res = ReadResponse::answering(&req, port.to_bytes().unwrap()).unwrap();
            frames.push(response_frame(
                rpc::opnum::READ,
                Drep::BIG_ENDIAN,
                PnioStatus::OK,
                res.to_bytes().unwrap(),
            ));
            expected.push(port);
        }
    }
    let pkts = dissect(&frames);
    assert_eq!(pkts.len(), expected.len());
    for (p, port) in pkts.iter().zip(&expected) {
        let ctx = format!("{port:?}\n{}", p.dump());
        assert!(uints(p, "pn_io.block_type").contains(&0x020f), "{ctx}");
        assert_eq!(
            uints(p, "pn_io.subslot_nr"),
            vec![u64::from(port.subslot); 2],
            "{ctx}"
        );
        assert_eq!(
            p.uint("pn_io.length_own_port_id"),
            port.own_port_id.len() as u64
        );
        if !port.own_port_id.is_empty() {
            assert_eq!(p.get("pn_io.own_port_id"), port.own_port_id, "{ctx}");
        }
        assert_eq!(
            p.uint("pn_io.number_of_peers"),
            port.peers.len() as u64,
            "{ctx}"
        );
        let peer_ports: Vec<String> = p
            .all("pn_io.peer_port_id")
            .into_iter()
            .map(String::from)
            .collect();
        let peer_chassis: Vec<String> = p
            .all("pn_io.peer_chassis_id")
            .into_iter()
            .map(String::from)
            .collect();
        let macs: Vec<String> = p
            .all("pn_io.peer_macadd")
            .into_iter()
            .map(String::from)
            .collect();
        assert_eq!(
            peer_ports,
            port.peers
                .iter()
                .map(|x| x.port_id.clone())
                .collect::<Vec<_>>(),
            "{ctx}"
        );
        assert_eq!(
            peer_chassis,
            port.peers
                .iter()
                .map(|x| x.chassis_id.clone())
                .collect::<Vec<_>>(),
            "{ctx}"
        );
        assert_eq!(
            macs,
            port.peers
                .iter()
                .map(|x| x
                    .mac
                    .iter()
                    .map(|b| format!("{b:02x}"))
                    .collect::<Vec<_>>()
                    .join(":"))
                .collect::<Vec<_>>(),
            "{ctx}"
        );
        assert_eq!(
            uints(p, "pn_io.line_delay_value"),
            port.peers
                .iter()
                .map(|x| u64::from(x.line_delay))
                .collect::<Vec<_>>(),
            "{ctx}"
        );
        assert_eq!(p.uint("pn_io.mau_type"), u64::from(port.mau_type), "{ctx}");
        assert_eq!(
            p.uint("pn_io.link_state_link"),
            u64::from(port.link),
            "{ctx}"
        );
        assert_eq!(p.uint("pn_io.link_state_port"), 0, "{ctx}");
        assert_eq!(p.uint("pn_io.media_type"), 1, "{ctx}");
    }

    // PDInterfaceDataReal with chassis IDs of every length modulo 4.
    for name in ["", "d", "de", "dev", "pn-device", "pn-device-0001"] {
        let itf = PdInterfaceDataReal {
            chassis_id: name.into(),
            mac: DEV_MAC,
            ip: [192, 168, 0, 2],
            netmask: [255, 255, 255, 0],
            gateway: [192, 168, 0, 1],
        };
        let req = read_req(index::SUB_PD_INTERFACE_DATA_REAL, 0, 0x8000);
        let (_, p) = read_pair(
            &req,
            PnioStatus::OK,
            itf.to_bytes().unwrap(),
            Drep::BIG_ENDIAN,
        );
        assert!(
            uints(&p, "pn_io.block_type").contains(&0x0240),
            "{}",
            p.dump()
        );
        assert_eq!(p.uint("pn_io.length_own_chassis_id"), name.len() as u64);
        if !name.is_empty() {
            assert_eq!(p.get("pn_io.own_chassis_id"), name, "{}", p.dump());
        }
        assert_eq!(p.get("pn_io.macadd"), "02:00:00:00:00:02", "{}", p.dump());
        assert_eq!(p.get("pn_io.ip_address"), "192.168.0.2");
        assert_eq!(p.get("pn_io.subnetmask"), "255.255.255.0");
        assert_eq!(p.get("pn_io.standard_gateway"), "192.168.0.1");
    }

    // PDPortStatistic (0x8072), each counter distinct.
    let st = pdev::PdPortStatistic {
        in_octets: 0x0102_0304,
        out_octets: 0xF000_0001,
        in_discards: 3,
        out_discards: 4,
        in_errors: 5,
        out_errors: 6,
    };
    let req = read_req(index::SUB_PD_PORT_STATISTIC, 0, 0x8001);
    let (_, p) = read_pair(
        &req,
        PnioStatus::OK,
        st.to_bytes().unwrap(),
        Drep::BIG_ENDIAN,
    );
    assert!(
        uints(&p, "pn_io.block_type").contains(&0x0251),
        "{}",
        p.dump()
    );
    for (field, v) in [
        ("pn_io.ifInOctets", st.in_octets),
        ("pn_io.ifOutOctets", st.out_octets),
        ("pn_io.ifInDiscards", st.in_discards),
        ("pn_io.ifOutDiscards", st.out_discards),
        ("pn_io.ifInErrors", st.in_errors),
        ("pn_io.ifOutErrors", st.out_errors),
    ] {
        assert_eq!(p.uint(field), u64::from(v), "{field}\n{}", p.dump());
    }

    // PDRealData: one MultipleBlockHeader per PDev submodule.
    let mut w = Writer::new();
    let itf = PdInterfaceDataReal {
        chassis_id: "dev".into(),
        mac: DEV_MAC,
        ip: [192, 168, 0, 2],
        netmask: [255, 255, 255, 0],
        gateway: [0, 0, 0, 0],
    };
    // Each submodule's block followed by its PDPortStatistic, as p-net and the device send.
    let with_stats = |mut b: Vec<u8>| {
        b.extend_from_slice(&st.to_bytes().unwrap());
        b
    };
    let multiple = |subslot, blocks: &[u8]| {
        pdev::MultipleBlock {
            api: 0,
            slot: 0,
            subslot,
            blocks,
        }
        .to_bytes()
        .unwrap()
    };
    w.bytes(&multiple(0x8000, &with_stats(itf.to_bytes().unwrap())));
    let port = expected[7].clone();
    w.bytes(&multiple(
        port.subslot,
        &with_stats(port.to_bytes().unwrap()),
    ));
    let req = read_req(index::PD_REAL_DATA, 0, 0);
    let (_, p) = read_pair(&req, PnioStatus::OK, w.into_inner(), Drep::BIG_ENDIAN);
    // tshark lists a MultipleBlockHeader's own fields after those of the block inside it:
    // compare as sets of values.
    let sorted = |mut v: Vec<u64>| {
        v.sort_unstable();
        v
    };
    assert_eq!(
        sorted(uints(&p, "pn_io.block_type")),
        vec![0x020f, 0x0240, 0x0251, 0x0251, 0x0400, 0x0400, 0x8009],
        "{}",
        p.dump()
    );
    assert_eq!(
        sorted(uints(&p, "pn_io.subslot_nr")),
        vec![0, 0x8000, u64::from(port.subslot), u64::from(port.subslot)],
        "{}",
        p.dump()
    );
    assert_eq!(p.get("pn_io.own_chassis_id"), "dev");
    assert_eq!(p.get("pn_io.own_port_id"), port.own_port_id);
}

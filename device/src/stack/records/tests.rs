use super::*;
use crate::dataplane::SubmoduleConfig;

fn records() -> Records {
    Records {
        vendor_id: 0x1234,
        im0: Im0Config {
            order_id: "ORDER-1".into(),
            serial_number: "SN1".into(),
            hardware_revision: 1,
            software_revision: ('V', 1, 2, 3),
            revision_counter: 0,
            profile_id: 0,
            profile_specific_type: 0,
            im_supported: 0x1E,
            product_name: "x".into(),
        },
        im: ImRemanent::default(),
        im_raw: im1_4_from_remanent(&ImRemanent::default()),
        user: BTreeMap::new(),
        modules: vec![ModuleConfig {
            slot: 0,
            ident: 1,
            submodules: vec![SubmoduleConfig {
                subslot: 1,
                ident: 2,
                input_length: 0,
                output_length: 0,
                ..Default::default()
            }],
        }],
        diags: vec![],
        pdev: PdevLive::default(),
    }
}

#[test]
fn im0_read_and_unknown_index() {
    let r = records();
    let a = RecordAddress::new(0, 0, 1, index::IM0);
    let d = r.read(&a).unwrap();
    match ImRecord::parse(&d).unwrap() {
        ImRecord::Im0(im0) => {
            assert_eq!(im0.vendor_id, 0x1234);
            assert_eq!(im0.order_id.trim_end(), "ORDER-1");
        }
        other => panic!("{other:?}"),
    }
    let e = r.read(&RecordAddress::new(0, 0, 1, 0xFBFF)).unwrap_err();
    assert_eq!(e.octets(), [0xDE, 0x80, 0xB0, 0x00]);
    let e = r
        .read(&RecordAddress::new(0, 9, 1, index::IM0))
        .unwrap_err();
    assert_eq!(e.octets(), [0xDE, 0x80, 0xB2, 0x00]);
}

#[test]
fn im0_filter_data_names_the_dap() {
    let r = records();
    let d = r
        .read(&RecordAddress::new(0, 0, 1, index::IM0_FILTER_DATA))
        .unwrap();
    let f = pn_protocol::wire::pnio::im::parse_filter_record(&d).unwrap();
    assert_eq!(f.len(), 3);
    assert_eq!(f[2].kind, FilterKind::Device);
    assert_eq!(f[2].apis[0].modules[0].submodules[0].subslot, 1);
}

#[test]
fn im1_write_emits_event() {
    let mut r = records();
    let rec = ImRecord::Im1(Im1 {
        tag_function: "PUMP".into(),
        tag_location: "HALL".into(),
    })
    .to_bytes()
    .unwrap();
    let a = RecordAddress::new(0, 0, 1, index::IM1);
    let ev = r.write(&a, &rec, |_| Ok(())).unwrap();
    assert!(matches!(
        ev,
        Some(StackEvent::RecordWritten { index: 0xAFF1, .. })
    ));
    assert_eq!(r.read(&a).unwrap(), rec);
    assert_eq!(r.im.tag_function.trim_end(), "PUMP");
    // Wrong block type for the index.
    let e = r
        .write(&RecordAddress::new(0, 0, 1, index::IM2), &rec, |_| Ok(()))
        .unwrap_err();
    assert_eq!(e.octets()[..3], [0xDF, 0x80, 0xB9]);
    // One byte more than the I&M1 block (60): a write length error, nothing stored.
    let mut long = ImRecord::Im1(Im1 {
        tag_function: "VALVE".into(),
        tag_location: "HALL".into(),
    })
    .to_bytes()
    .unwrap();
    long.push(b' ');
    assert_eq!(long.len(), 61);
    let e = r.write(&a, &long, |_| Ok(())).unwrap_err();
    assert_eq!(e.octets()[..3], [0xDF, 0x80, 0xB1]);
    assert_eq!(r.im.tag_function.trim_end(), "PUMP");
}

/// A record that cannot be stored is answered with "application: write error" and keeps
/// its old value; a valid write the commit refuses is never visible.
#[test]
fn failed_commit_is_a_write_error_and_changes_nothing() {
    let mut r = records();
    let im1 = |f: &str| {
        ImRecord::Im1(Im1 {
            tag_function: f.into(),
            tag_location: "HALL".into(),
        })
        .to_bytes()
        .unwrap()
    };
    let a = RecordAddress::new(0, 0, 1, index::IM1);
    r.write(&a, &im1("OLD"), |_| Ok(())).unwrap();
    let mut seen = Vec::new();
    let e = r
        .write(&a, &im1("NEW"), |ev| {
            seen.push(ev.clone());
            Err("disk full".into())
        })
        .unwrap_err();
    assert_eq!(e.octets(), [0xDF, 0x80, 0xA1, 0x00]);
    assert!(matches!(
        seen.as_slice(),
        [StackEvent::RecordWritten { index: 0xAFF1, .. }]
    ));
    assert_eq!(r.read(&a).unwrap(), im1("OLD"));
    assert_eq!(r.im.tag_function.trim_end(), "OLD");
    // User record: not readable after a refused commit.
    let u = RecordAddress::new(0, 0, 1, 0x0010);
    let e = r
        .write(&u, &[1, 2, 3], |_| Err("read-only".into()))
        .unwrap_err();
    assert_eq!(e.octets(), [0xDF, 0x80, 0xA1, 0x00]);
    assert!(r.read(&u).is_err());
    // Invalid requests are refused before anything is committed.
    let e = r
        .write(&RecordAddress::new(0, 0, 1, index::IM2), &im1("X"), |_| {
            panic!("an invalid write must not be committed")
        })
        .unwrap_err();
    assert_eq!(e.octets()[..3], [0xDF, 0x80, 0xB9]);
}

/// The DAP with an interface and two ports, as the shipped configurations have.
fn records_with_ports() -> Records {
    let mut r = records();
    for subslot in [0x8000, 0x8001, 0x8002] {
        r.modules[0].submodules.push(SubmoduleConfig {
            subslot,
            ident: 0x100 + u32::from(subslot & 0xF),
            input_length: 0,
            output_length: 0,
            ..Default::default()
        });
    }
    r.pdev = PdevLive {
        station_name: "dev-1".into(),
        mac: [2, 0, 0, 0, 0, 2],
        ip_suite: [[192, 168, 0, 2], [255, 255, 255, 0], [192, 168, 0, 1]],
        link_up: true,
        mau_type: 0x10,
        peer: Some(("port-003".into(), "plc-1".into(), [2, 0, 0, 0, 0, 1])),
        stats: Some(PdPortStatistic {
            in_octets: 1000,
            out_octets: 2000,
            in_discards: 1,
            out_discards: 2,
            in_errors: 3,
            out_errors: 4,
        }),
    };
    r
}

#[test]
fn pdev_real_data_describes_the_interface_and_its_ports() {
    let mut r = records_with_ports();
    let d = r
        .read(&RecordAddress::new(
            0,
            0,
            0x8001,
            index::SUB_PD_PORT_DATA_REAL,
        ))
        .unwrap();
    let p = PdPortDataReal::parse(&d).unwrap();
    assert_eq!((p.slot, p.subslot), (0, 0x8001));
    assert_eq!(p.own_port_id, "port-001");
    assert_eq!(p.mau_type, 0x10);
    assert_eq!(p.link, pdev::link::UP);
    assert_eq!(
        p.peers,
        vec![Peer {
            port_id: "port-003".into(),
            chassis_id: "plc-1".into(),
            line_delay: 0,
            mac: [2, 0, 0, 0, 0, 1],
        }]
    );
    let d = r
        .read(&RecordAddress::new(
            0,
            0,
            0x8000,
            index::SUB_PD_INTERFACE_DATA_REAL,
        ))
        .unwrap();
    let i = PdInterfaceDataReal::parse(&d).unwrap();
    assert_eq!(i.chassis_id, "dev-1");
    assert_eq!(i.mac, [2, 0, 0, 0, 0, 2]);
    assert_eq!(
        (i.ip, i.netmask, i.gateway),
        ([192, 168, 0, 2], [255, 255, 255, 0], [192, 168, 0, 1])
    );

    // Link down, no neighbour: no peer, LinkState down.
    r.pdev.link_up = false;
    r.pdev.peer = None;
    let d = r
        .read(&RecordAddress::new(
            0,
            0,
            0x8002,
            index::SUB_PD_PORT_DATA_REAL,
        ))
        .unwrap();
    let p = PdPortDataReal::parse(&d).unwrap();
    assert_eq!(p.own_port_id, "port-002");
    assert!(p.peers.is_empty());
    assert_eq!(p.link, pdev::link::DOWN);

    // PDPortStatistic on the interface and on a port; not on a module's submodule.
    let stats = r.pdev.stats.unwrap();
    for subslot in [0x8000, 0x8002] {
        let d = r
            .read(&RecordAddress::new(
                0,
                0,
                subslot,
                index::SUB_PD_PORT_STATISTIC,
            ))
            .unwrap();
        assert_eq!(PdPortStatistic::parse(&d).unwrap(), stats);
    }
    let e = r
        .read(&RecordAddress::new(0, 0, 1, index::SUB_PD_PORT_STATISTIC))
        .unwrap_err();
    assert_eq!(e.octets(), [0xDE, 0x80, 0xB0, 0x00]);

    // PDRealData: the interface, then each port, each with its statistics in a
    // MultipleBlockHeader.
    let d = r
        .read(&RecordAddress::new(0, 0, 0, index::PD_REAL_DATA))
        .unwrap();
    let mut subslots = Vec::new();
    for b in pn_protocol::wire::pnio::block::blocks(&d) {
        let b = b.unwrap();
        assert_eq!(b.block_type(), pdev::block_type::MULTIPLE_BLOCK_HEADER);
        let body = b.body();
        let subslot = u16::from_be_bytes([body[8], body[9]]);
        let inner: Vec<_> = pn_protocol::wire::pnio::block::blocks(&body[10..])
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(inner.len(), 2);
        if subslot == 0x8000 {
            assert!(PdInterfaceDataReal::parse(inner[0].as_bytes()).is_ok());
        } else {
            assert_eq!(
                PdPortDataReal::parse(inner[0].as_bytes()).unwrap().subslot,
                subslot
            );
        }
        assert_eq!(PdPortStatistic::parse(inner[1].as_bytes()).unwrap(), stats);
        subslots.push(subslot);
    }
    assert_eq!(subslots, [0x8000, 0x8001, 0x8002]);

    // Counters not readable: the statistic is a read error, PDRealData goes without.
    r.pdev.stats = None;
    let e = r
        .read(&RecordAddress::new(
            0,
            0,
            0x8001,
            index::SUB_PD_PORT_STATISTIC,
        ))
        .unwrap_err();
    assert_eq!(e.octets(), [0xDE, 0x80, 0xA0, 0x00]);
    let d = r
        .read(&RecordAddress::new(0, 0, 0, index::PD_REAL_DATA))
        .unwrap();
    assert_eq!(pn_protocol::wire::pnio::block::blocks(&d).count(), 3);
}

#[test]
fn pdev_records_on_the_wrong_submodule_and_written_parameters() {
    let mut r = records_with_ports();
    // Port data of the interface, interface data of a port: invalid index.
    for a in [
        RecordAddress::new(0, 0, 0x8000, index::SUB_PD_PORT_DATA_REAL),
        RecordAddress::new(0, 0, 0x8001, index::SUB_PD_INTERFACE_DATA_REAL),
        RecordAddress::new(0, 0, 1, index::SUB_PD_PORT_DATA_REAL),
    ] {
        assert_eq!(
            r.read(&a).unwrap_err().octets(),
            [0xDE, 0x80, 0xB0, 0x00],
            "{a:?}"
        );
    }
    // A port that does not exist: invalid slot/subslot.
    let e = r
        .read(&RecordAddress::new(
            0,
            0,
            0x8003,
            index::SUB_PD_PORT_DATA_REAL,
        ))
        .unwrap_err();
    assert_eq!(e.octets(), [0xDE, 0x80, 0xB2, 0x00]);
    // A PDev parameter record the controller wrote reads back as written (this run).
    let a = RecordAddress::new(0, 0, 0x8001, index::SUB_PD_PORT_DATA_CHECK);
    assert!(r.read(&a).is_err());
    let data = vec![
        0x02, 0x00, 0x00, 0x0c, 0x01, 0x00, 0, 0, 0, 0, 0x80, 0x01, 0, 0,
    ];
    let ev = r
        .write(&a, &data, |_| panic!("a PDev record is not stored"))
        .unwrap();
    assert!(ev.is_none());
    assert_eq!(r.read(&a).unwrap(), data);
    // The real data is the device's to measure: writes are refused (access denied) and
    // leave nothing to read back on another submodule.
    for (subslot, idx) in [
        (0x8000, index::SUB_PD_PORT_DATA_REAL),
        (0x8001, index::SUB_PD_INTERFACE_DATA_REAL),
        (1, index::SUB_PD_PORT_STATISTIC),
    ] {
        let a = RecordAddress::new(0, 0, subslot, idx);
        let e = r.write(&a, &data, |_| panic!("not stored")).unwrap_err();
        assert_eq!(e.octets()[..3], [0xDF, 0x80, 0xB6], "{a:?}");
        assert!(r.read(&a).is_err(), "{a:?}");
    }
}

#[test]
fn a_declared_parameter_record_reads_as_its_defaults_until_written() {
    use pn_protocol::machine::cmdev::params::{
        Allowed, FieldKind, ParamField, ParamRecord, ParamType,
    };
    let mut r = records();
    r.modules[0].submodules[0].records.push(ParamRecord {
        index: 0x100,
        length: 2,
        name: "Settings".into(),
        fields: vec![ParamField {
            name: "Gain".into(),
            byte_offset: 0,
            kind: FieldKind::Value(ParamType::Unsigned16),
            default: 0x0102,
            allowed: Allowed::default(),
        }],
    });
    r.user = declared_defaults(&r.modules);
    let a = RecordAddress::new(0, 0, 1, 0x100);
    assert_eq!(r.read(&a), Ok(vec![0x01, 0x02]));
    r.write(&a, &[0, 7], |_| Ok(())).unwrap();
    assert_eq!(r.read(&a), Ok(vec![0, 7]));
}

//! Replays the committed cargo-fuzz corpus (`protocol/fuzz/corpus/<target>/*`) through the
//! `pn_protocol::fuzz` entry points on the stable toolchain, runs random byte strings through
//! `fuzz::all`, and keeps every input that once crashed a target as a regression test.

use pn_protocol::fuzz;
use pn_protocol::wire::dcp::{DcpBlock, DcpRepr, DcpValue, NameOfStation};
use pn_protocol::wire::ethernet::{EthernetRepr, MacAddr};
use pn_protocol::wire::field::Writer;
use pn_protocol::wire::lldp::{LldpRepr, Tlv};
use pn_protocol::wire::pnio::alarm::{
    AlarmAckRepr, AlarmNotificationRepr, AlarmPdu, AlarmPriority, AlarmSpecifier,
};
use pn_protocol::wire::pnio::diagnosis::{
    ChannelDiagnosis, ChannelProperties, DiagnosisDataRepr, ExtChannelDiagnosis, UserStructure,
};
use pn_protocol::wire::pnio::ident::{
    ApiIdent, IdentificationDataRepr, ModuleIdent, SubmoduleIdent,
};
use pn_protocol::wire::pnio::im::{Im1, ImRecord};
use pn_protocol::wire::pnio::record::{
    RecordAddress, RecordPdu, WriteRecord, WriteReqHeaderRepr, WriteRequest,
};
use pn_protocol::wire::pnio::PnioStatus;
use pn_protocol::wire::rpc::{self, Drep, PnioRequest, RpcHeader, RpcPacket, Uuid};
use pn_protocol::wire::rt::{self, ApduStatus, DataStatus, FrameId};
use pn_protocol::wire::rta::{RtaPduType, RtaRepr};
use pn_protocol::wire::Emit;
use proptest::prelude::*;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus")
}

#[test]
fn every_target_has_a_fuzz_target_file_and_a_seed_corpus() {
    let targets = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/fuzz_targets");
    for (name, _) in fuzz::TARGETS
        .iter()
        .chain(std::iter::once(&("all", fuzz::all as fn(&[u8]))))
    {
        assert!(
            targets.join(format!("{name}.rs")).is_file(),
            "no cargo-fuzz target for fuzz::{name}"
        );
        let seeds = corpus_dir().join(name);
        let n = std::fs::read_dir(&seeds)
            .unwrap_or_else(|e| panic!("{}: {e}", seeds.display()))
            .count();
        assert!(n > 0, "empty seed corpus for {name}");
    }
}

#[test]
fn committed_corpus_replays_without_panics() {
    let mut replayed = 0usize;
    let mut dirs: Vec<_> = std::fs::read_dir(corpus_dir())
        .expect("fuzz/corpus exists")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    for dir in dirs {
        let name = dir
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_owned();
        let f = if name == "all" {
            fuzz::all as fn(&[u8])
        } else {
            fuzz::by_name(&name).unwrap_or_else(|| panic!("corpus dir without a target: {name}"))
        };
        for entry in std::fs::read_dir(&dir).expect("read corpus dir") {
            let path = entry.expect("dir entry").path();
            let data = std::fs::read(&path).expect("read corpus file");
            let r = std::panic::catch_unwind(|| f(&data));
            assert!(r.is_ok(), "fuzz::{name} panicked on {}", path.display());
            replayed += 1;
        }
    }
    assert!(replayed >= 100, "only {replayed} corpus files replayed");
}

/// Inputs that once made a target fail (`protocol/fuzz/regressions/<target>/<what>`), kept
/// forever. Each file name says what the bug was:
/// * `pnio_request/multiple-write-padded-last-record`: a MultipleWrite whose last record is
///   padded to 4 bytes (counted in the outer RecordDataLength) parsed but did not emit
///   (fixed in `wire/pnio/record.rs`, `WriteRequest::trailing_pad`).
/// * `rt_frame/cyclic-c-sdu-longer-than-1440` (found by the `all` target, selector byte 1
///   removed): a cyclic frame of 1506 bytes whose view accepted a
///   1483-byte C_SDU that `fill_cyclic` refuses (fixed in `wire/rt.rs`, `CyclicFrame::check_len`).
#[test]
fn fuzz_regressions_pass() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/regressions");
    let mut n = 0;
    for t in std::fs::read_dir(&dir).expect("fuzz/regressions exists") {
        let t = t.expect("dir entry").path();
        let name = t
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_owned();
        let f = fuzz::by_name(&name).unwrap_or_else(|| panic!("no target {name}"));
        for e in std::fs::read_dir(&t).expect("read target dir") {
            let data = std::fs::read(e.expect("dir entry").path()).expect("read");
            f(&data);
            n += 1;
        }
    }
    assert!(n >= 1);
}

#[test]
fn multiple_write_with_padded_last_record_round_trips_through_the_pnio_request_target() {
    let data = std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fuzz/regressions/pnio_request/multiple-write-padded-last-record"),
    )
    .expect("regression input");
    // opnum 3 (Write), little-endian DREP; the NDR data is a MultipleWrite.
    assert_eq!(data[0], 0x83);
    let req = PnioRequest::parse(&data[1..], Drep::LITTLE_ENDIAN).expect("NDR request");
    let pdu = RecordPdu::parse(&req.data).expect("MultipleWrite parses");
    // Same length (the trailing padding is kept); reserved and padding bytes of the fuzzed
    // input are not zero, so compare values, not bytes.
    let again = pdu.to_bytes().expect("and emits");
    assert_eq!(again.len(), req.data.len());
    assert_eq!(RecordPdu::parse(&again).expect("re-parse"), pdu);
    fuzz::pnio_request(&data);
}

/// Every entry point must also reject (not panic on) truncations of every corpus file.
#[test]
fn truncated_corpus_files_never_panic() {
    for (name, f) in fuzz::TARGETS {
        let dir = corpus_dir().join(name);
        let Ok(rd) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in rd.take(8) {
            let data = std::fs::read(entry.expect("dir entry").path()).expect("read");
            for cut in (0..data.len()).step_by(1 + data.len() / 64) {
                f(&data[..cut]);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 4096, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..512)) {
        fuzz::all(&data);
    }

    /// Every target with every selector, on random bytes.
    #[test]
    fn random_bytes_never_panic_in_any_target(sel in 0usize..64, data in proptest::collection::vec(any::<u8>(), 0..256)) {
        let (_, f) = fuzz::TARGETS[sel % fuzz::TARGETS.len()];
        f(&data);
    }
}

/// Inputs built by our own encoders, one or more per target; each must parse in the decoder
/// its target exercises. With `PN_WRITE_FUZZ_SEEDS=<dir>` they are also written to
/// `<dir>/<target>/own-<n>` (how the committed seeds of `protocol/fuzz/corpus` were made).
fn own_seeds() -> Vec<(&'static str, Vec<u8>)> {
    let mut v: Vec<(&'static str, Vec<u8>)> = Vec::new();
    let src = MacAddr([0x02, 0, 0, 0, 0, 1]);
    let dst = MacAddr([0x02, 0, 0, 0, 0, 2]);
    let ar = Uuid([0x11; 16]);

    // DCP
    let name = NameOfStation::new("io-dev-7.line-2").unwrap();
    let dcps = [
        DcpRepr::identify_request_all(1, 255),
        DcpRepr::identify_request_by_name(2, &name, 1),
        DcpRepr::set_name(3, &name, true),
        DcpRepr::set_ip(
            4,
            Ipv4Addr::new(10, 0, 0, 5),
            Ipv4Addr::new(255, 0, 0, 0),
            Ipv4Addr::new(10, 0, 0, 1),
            false,
        ),
        DcpRepr::get_request(5, &[(2, 2), (1, 2), (2, 5)]),
        DcpRepr::identify_response(
            6,
            vec![
                DcpBlock::with_info(DcpValue::DeviceVendor(b"pn-toolkit".to_vec()), 0),
                DcpBlock::with_info(DcpValue::NameOfStation(b"io-dev-7".to_vec()), 0),
                DcpBlock::with_info(
                    DcpValue::DeviceId {
                        vendor_id: 0x1234,
                        device_id: 1,
                    },
                    0,
                ),
                DcpBlock::with_info(DcpValue::DeviceOptions(vec![(2, 1), (2, 2), (1, 2)]), 0),
                DcpBlock::with_info(
                    DcpValue::IpParameter {
                        ip: Ipv4Addr::new(192, 168, 1, 2),
                        mask: Ipv4Addr::new(255, 255, 255, 0),
                        gateway: Ipv4Addr::new(0, 0, 0, 0),
                    },
                    1,
                ),
            ],
        ),
    ];
    for d in &dcps {
        v.push(("dcp", d.to_bytes().unwrap()));
        v.push(("rt_frame", d.build_frame(dst, src, None).unwrap()));
    }

    // Cyclic
    let eth = EthernetRepr {
        dst,
        src,
        vlan: None,
        ethertype: 0x8892,
    };
    let mut buf = [0u8; 128];
    let st = ApduStatus {
        cycle_counter: 0x100,
        data_status: DataStatus::RUNNING,
        transfer_status: 0,
    };
    let n = rt::fill_cyclic_frame(&mut buf, &eth, FrameId(0x8001), &[0x80; 12], st).unwrap();
    v.push(("rt_frame", buf[..n].to_vec()));
    v.push(("ethernet", buf[..n].to_vec()));
    let mut steps = vec![0x80 | (1 << 3)];
    for (i, cc) in [0x100u16, 0x120, 0x120, 0x140].iter().enumerate() {
        let st = ApduStatus {
            cycle_counter: *cc,
            ..st
        };
        let n = rt::fill_cyclic_frame(&mut buf, &eth, FrameId(0x8001), &[0x80; 40], st).unwrap();
        steps.extend_from_slice(&[(i as u8) << 4, n as u8]);
        steps.extend_from_slice(&buf[..n]);
    }
    v.push(("cyclic_consumer", steps));

    // LLDP
    let l = LldpRepr {
        tlvs: vec![
            Tlv::ChassisId {
                subtype: 7,
                id: b"io-dev-7".to_vec(),
            },
            Tlv::PortId {
                subtype: 7,
                id: b"port-001".to_vec(),
            },
            Tlv::Ttl(20),
            Tlv::SystemCapabilities {
                system: 0x80,
                enabled: 0x80,
            },
            Tlv::MacPhy {
                autoneg: 3,
                pmd_advertised: 0x0c00,
                mau_type: 0x10,
            },
            Tlv::End,
        ],
    };
    v.push(("lldp", l.to_bytes().unwrap()));

    // Records, I&M, diagnosis, identification
    let im1 = ImRecord::Im1(Im1 {
        tag_function: "pump".into(),
        tag_location: "hall 2".into(),
    });
    v.push(("im", im1.to_bytes().unwrap()));
    let diag = DiagnosisDataRepr {
        version_low: 1,
        api: 0,
        slot: 1,
        subslot: 1,
        channel_number: 0x8000,
        channel_properties: ChannelProperties(0x0800),
        items: UserStructure::Channel(vec![ChannelDiagnosis {
            channel_number: 0x8000,
            properties: ChannelProperties(0x0800),
            error_type: 0x0001,
        }]),
    };
    let diag2 = DiagnosisDataRepr {
        items: UserStructure::ExtChannel(vec![ExtChannelDiagnosis {
            channel_number: 3,
            properties: ChannelProperties(0x0800),
            error_type: 0x0100,
            ext_error_type: 0x8000,
            ext_add_value: 7,
        }]),
        ..diag.clone()
    };
    let mut w = Writer::new();
    diag.emit(&mut w).unwrap();
    diag2.emit(&mut w).unwrap();
    v.push(("diagnosis", w.into_inner()));
    let ident = IdentificationDataRepr {
        block_type: 0x0013,
        version_low: 1,
        apis: vec![ApiIdent {
            api: 0,
            modules: vec![
                ModuleIdent {
                    slot: 0,
                    module_ident: 0x10,
                    submodules: vec![
                        SubmoduleIdent {
                            subslot: 1,
                            submodule_ident: 1,
                        },
                        SubmoduleIdent {
                            subslot: 0x8000,
                            submodule_ident: 2,
                        },
                    ],
                },
                ModuleIdent {
                    slot: 1,
                    module_ident: 0x20,
                    submodules: vec![SubmoduleIdent {
                        subslot: 1,
                        submodule_ident: 3,
                    }],
                },
            ],
        }],
    };
    v.push(("ident", ident.to_bytes().unwrap()));
    {
        use pn_protocol::wire::pnio::pdev::{PdInterfaceDataReal, PdPortDataReal, Peer};
        let port = PdPortDataReal {
            slot: 0,
            subslot: 0x8001,
            own_port_id: "port-001".into(),
            peers: vec![Peer {
                port_id: "port-002".into(),
                chassis_id: "plc".into(),
                line_delay: 0,
                mac: [2, 0, 0, 0, 0, 1],
            }],
            mau_type: 0x10,
            domain_boundary: 0,
            multicast_boundary: 0,
            link_port: 0,
            link: 1,
            media_type: 1,
        };
        v.push(("pdev", port.to_bytes().unwrap()));
        let itf = PdInterfaceDataReal {
            chassis_id: "dev".into(),
            mac: [2, 0, 0, 0, 0, 2],
            ip: [192, 168, 0, 2],
            netmask: [255, 255, 255, 0],
            gateway: [0; 4],
        };
        v.push(("pdev", itf.to_bytes().unwrap()));
        let st = pn_protocol::wire::pnio::pdev::PdPortStatistic {
            in_octets: 1,
            out_octets: 2,
            ..Default::default()
        };
        v.push(("pdev", st.to_bytes().unwrap()));
    }
    let rec = |i: u16, data: Vec<u8>| WriteRecord {
        header: WriteReqHeaderRepr {
            seq_number: i,
            ar_uuid: ar.0,
            address: RecordAddress::new(0, 1, 1, i),
            record_data_length: data.len() as u32,
        },
        data,
    };
    let mw = WriteRequest::multiple(
        9,
        ar.0,
        vec![rec(1, vec![1, 2, 3]), rec(2, im1.to_bytes().unwrap())],
    )
    .unwrap();
    let mw = RecordPdu::WriteReq(mw).to_bytes().unwrap();
    v.push(("record", mw.clone()));

    // RPC: a fragmented MultipleWrite (request FACK), each fragment a seed; all of them, in
    // order, for the reassembly machine.
    let h = RpcHeader::request(
        Drep::LITTLE_ENDIAN,
        Uuid([1; 16]),
        rpc::PNIO_DEVICE_INTERFACE,
        Uuid([2; 16]),
        5,
        rpc::opnum::WRITE,
    );
    let body = PnioRequest::new(4096, mw)
        .ndr(Drep::LITTLE_ENDIAN)
        .to_bytes()
        .unwrap();
    v.push(("pnio_request", [&[0x80 | 3u8][..], &body].concat()));
    let frags = rpc::fragment(&h, &body, 64, true).unwrap();
    let mut steps = Vec::new();
    for f in &frags {
        let b = f.to_bytes().unwrap();
        steps.extend_from_slice(&[0x11, b.len() as u8]);
        steps.extend_from_slice(&b);
        v.push(("rpc_packet", b));
    }
    v.push(("rpc_reassembly", steps));

    // Alarms and RTA
    let n = AlarmNotificationRepr {
        priority: AlarmPriority::Low,
        alarm_type: 1,
        api: 0,
        slot: 1,
        subslot: 1,
        module_ident: 0x20,
        submodule_ident: 3,
        specifier: AlarmSpecifier(0x0801),
        item: Some(UserStructure::Channel(vec![ChannelDiagnosis {
            channel_number: 0x8000,
            properties: ChannelProperties(0x0800),
            error_type: 2,
        }])),
    };
    let ack = AlarmAckRepr {
        priority: AlarmPriority::Low,
        alarm_type: 1,
        api: 0,
        slot: 1,
        subslot: 1,
        specifier: AlarmSpecifier(0x0801),
        status: PnioStatus::default(),
    };
    let na = AlarmPdu::Notification(n).to_bytes().unwrap();
    v.push(("alarm", na.clone()));
    v.push(("alarm", AlarmPdu::Ack(ack).to_bytes().unwrap()));
    let data = RtaRepr::new(RtaPduType::Data, 1, 2, 0xFFFF, 0xFFFE, na);
    let b = data.to_bytes().unwrap();
    v.push(("rta", b.clone()));
    let mut steps = vec![0u8];
    steps.extend_from_slice(&[0x13, b.len() as u8]);
    steps.extend_from_slice(&b);
    let ackp = RtaRepr::new(RtaPduType::Ack, 1, 2, 0xFFFF, 0xFFFF, Vec::new());
    let b = ackp.to_bytes().unwrap();
    v.push(("rta", b.clone()));
    steps.extend_from_slice(&[0x22, b.len() as u8]);
    steps.extend_from_slice(&b);
    v.push(("rta_machine", steps));
    ip_service_seeds(&mut v);
    v
}

/// ARP frames, SNMP requests (net-snmp's own bytes and built ones) and LLMNR queries.
fn ip_service_seeds(v: &mut Vec<(&'static str, Vec<u8>)>) {
    use pn_protocol::wire::arp::{ArpRepr, Operation};
    use pn_protocol::wire::llmnr::{rtype, LlmnrRepr, Question, Record, CLASS_IN, FLAG_QR};
    use pn_protocol::wire::snmp::{pdu, Pdu, SnmpMessage, Value, VarBind};
    let req = ArpRepr {
        operation: Operation::Request,
        sender_mac: MacAddr([0x02, 0, 0, 0, 0, 1]),
        sender_ip: Ipv4Addr::new(10, 0, 0, 1),
        target_mac: MacAddr::ZERO,
        target_ip: Ipv4Addr::new(10, 0, 0, 7),
    };
    let f = req.frame(MacAddr::BROADCAST);
    let mut tagged = f[..12].to_vec();
    tagged.extend_from_slice(&[0x81, 0x00, 0x00, 0x05]);
    tagged.extend_from_slice(&f[12..]);
    v.push(("arp", f));
    v.push(("arp", tagged));
    let rep = req.reply(MacAddr([0x02, 0, 0, 0, 0, 7])).unwrap();
    v.push(("arp", rep.frame(req.sender_mac)));
    // net-snmp `snmpget -v2c -c public x 1.3.6.1.2.1.1.5.0`, as captured.
    v.push((
        "snmp",
        vec![
            0x30, 0x29, 0x02, 0x01, 0x01, 0x04, 0x06, b'p', b'u', b'b', b'l', b'i', b'c', 0xa0,
            0x1c, 0x02, 0x04, 0x00, 0x00, 0x30, 0x39, 0x02, 0x01, 0x00, 0x02, 0x01, 0x00, 0x30,
            0x0e, 0x30, 0x0c, 0x06, 0x08, 0x2b, 0x06, 0x01, 0x02, 0x01, 0x01, 0x05, 0x00, 0x05,
            0x00,
        ],
    ));
    let system = [1u32, 3, 6, 1, 2, 1, 1];
    for (version, tag, f, names) in [
        (1, pdu::GET_BULK, (0, 10), vec![system.to_vec()]),
        (
            0,
            pdu::GET_NEXT,
            (0, 0),
            vec![system.to_vec(), vec![1, 3, 6, 1, 2, 1, 1, 7, 0]],
        ),
        (1, pdu::SET, (0, 0), vec![vec![1, 3, 6, 1, 2, 1, 1, 5, 0]]),
        (
            0,
            pdu::GET,
            (0, 0),
            vec![vec![1, 3, 6, 1, 2, 1, 1, 3, 0], vec![1, 3, 6, 1, 9]],
        ),
    ] {
        let m = SnmpMessage {
            version,
            community: b"public".to_vec(),
            pdu: Pdu {
                tag,
                request_id: 0x1234,
                error_status: f.0,
                error_index: f.1,
                bindings: names
                    .into_iter()
                    .map(|name| VarBind {
                        name,
                        value: Value::Null,
                    })
                    .collect(),
            },
        };
        v.push(("snmp", m.to_bytes().unwrap()));
    }
    let mut q = LlmnrRepr {
        id: 0x4242,
        flags: 0,
        question: Question {
            labels: vec![b"io-dev-7".to_vec(), b"line-2".to_vec()],
            qtype: rtype::A,
            qclass: CLASS_IN,
        },
        answers: vec![],
    };
    v.push(("llmnr", q.to_bytes().unwrap()));
    q.question.qtype = rtype::AAAA;
    v.push(("llmnr", q.to_bytes().unwrap()));
    q.flags = FLAG_QR;
    q.question.qtype = rtype::A;
    q.answers.push(Record::a(Ipv4Addr::new(10, 0, 0, 7), 30));
    v.push(("llmnr", q.to_bytes().unwrap()));
}

#[test]
fn own_encoder_outputs_parse_in_their_fuzz_targets() {
    let seeds = own_seeds();
    for (name, data) in &seeds {
        // The decoder the target starts with must accept what we emit.
        let ok = match *name {
            "dcp" => DcpRepr::parse(data).is_ok(),
            "rt_frame" | "ethernet" => rt::parse_rt_frame(data).is_ok(),
            "lldp" => LldpRepr::parse(data).is_ok(),
            "im" => ImRecord::parse(data).is_ok(),
            "diagnosis" => {
                pn_protocol::wire::pnio::diagnosis::parse_diagnosis_record(data).map(|d| d.len())
                    == Ok(2)
            }
            "ident" => IdentificationDataRepr::parse(data).is_ok(),
            "pdev" => {
                use pn_protocol::wire::pnio::pdev::{
                    PdInterfaceDataReal, PdPortDataReal, PdPortStatistic,
                };
                PdPortDataReal::parse(data).is_ok()
                    || PdInterfaceDataReal::parse(data).is_ok()
                    || PdPortStatistic::parse(data).is_ok()
            }
            "record" => RecordPdu::parse(data).is_ok(),
            "pnio_request" => PnioRequest::parse(&data[1..], Drep::LITTLE_ENDIAN).is_ok(),
            "rpc_packet" => RpcPacket::parse(data).is_ok(),
            "alarm" => AlarmPdu::parse(data).is_ok(),
            "rta" => RtaRepr::parse(data).is_ok(),
            "arp" => pn_protocol::wire::arp::ArpRepr::parse_frame(data).is_ok(),
            "snmp" => pn_protocol::wire::snmp::SnmpMessage::parse(data).is_ok(),
            "llmnr" => pn_protocol::wire::llmnr::LlmnrRepr::parse(data).is_ok(),
            _ => true,
        };
        assert!(ok, "own {name} seed does not parse");
        fuzz::by_name(name).unwrap()(data);
    }
    if let Some(dir) = std::env::var_os("PN_WRITE_FUZZ_SEEDS") {
        for (i, (name, data)) in seeds.iter().enumerate() {
            let d = Path::new(&dir).join(name);
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join(format!("own-{i:03}")), data).unwrap();
            let all = Path::new(&dir).join("all");
            std::fs::create_dir_all(&all).unwrap();
            let sel = fuzz::TARGETS.iter().position(|(n, _)| n == name).unwrap() as u8;
            std::fs::write(all.join(format!("own-{i:03}")), [&[sel][..], data].concat()).unwrap();
        }
    }
}

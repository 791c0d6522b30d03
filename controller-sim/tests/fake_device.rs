//! The controller end to end against a test device whose protocol behaviour comes from the
//! protocol crate's machines (tests/common/fake.rs: CMDEV, the DCP responder, the AlarmCR,
//! the cyclic provider and consumer), in two network namespaces joined by a veth pair. Needs
//! root; skips (or panics under CI=true) otherwise.

mod common;

use std::time::{Duration, Instant};

use common::{FakeConfig, FakeDevice, Lab, DEV_IP};
use pn_controller::model::{DeviceModel, Module, ParamRecord, Submodule};
use pn_controller::{
    AlarmAckFault, AppReadyFault, ArConfig, ArHandle, ArState, Controller, ControllerConfig, Error,
    Event, Faults,
};

fn model(name: &str) -> DeviceModel {
    let sub = |subslot, ident, i, o| Submodule {
        subslot,
        ident,
        input_len: i,
        output_len: o,
        params: vec![],
    };
    DeviceModel {
        station_name: name.into(),
        vendor_id: 0x0493,
        device_id: 0x0002,
        api: 0,
        modules: vec![
            Module {
                slot: 0,
                ident: 1,
                submodules: vec![
                    sub(1, 1, 0, 0),
                    sub(0x8000, 0x8000, 0, 0),
                    sub(0x8001, 0x8001, 0, 0),
                ],
            },
            Module {
                slot: 1,
                ident: 0x32,
                submodules: vec![Submodule {
                    params: vec![
                        ParamRecord {
                            index: 123,
                            data: vec![0, 0, 0, 1],
                        },
                        ParamRecord {
                            index: 124,
                            data: vec![0, 0, 0, 2],
                        },
                    ],
                    ..sub(1, 0x132, 4, 2)
                }],
            },
        ],
    }
}

fn fake(lab: &Lab, cfg: FakeConfig) -> FakeDevice {
    let ifname = lab.veth.b.clone();
    lab.dev
        .enter(move || FakeDevice::start(&ifname, cfg))
        .unwrap()
}

fn fcfg(name: &str) -> FakeConfig {
    FakeConfig {
        name: name.into(),
        vendor_id: 0x0493,
        device_id: 0x0002,
        connect_status: None,
        module_diff: false,
        capture: false,
    }
}

fn controller(lab: &Lab) -> Controller {
    let ifname = lab.veth.a.clone();
    lab.ctl
        .enter(move || Controller::start(ControllerConfig::new(&ifname)))
        .unwrap()
        .expect("controller starts")
}

fn connect(ctl: &Controller, name: &str, faults: Faults) -> Result<ArHandle, Error> {
    let mut c = ArConfig::new(model(name));
    c.timing.reduction_ratio = 2;
    // 2 ms cycle, data-hold 50 x 2 = 100 ms: the fake device runs on ordinary threads, so a
    // loaded machine must not make either side's watchdog trip in tests about other things.
    c.timing.data_hold_factor = 50;
    c.timing.watchdog_factor = 50;
    c.faults = faults;
    c.app_ready_timeout = Duration::from_secs(3);
    ctl.connect(c)
}

#[test]
fn connect_exchange_records_alarms_release() {
    if !pn_testkit::env::require_root() {
        return;
    }
    let lab = Lab::new("pcf");
    let mut fc = fcfg("fake-1");
    fc.capture = true;
    let dev = fake(&lab, fc);
    let ctl = controller(&lab);
    let events = ctl.events();

    // DCP.
    let found = ctl.dcp_identify_all(2, Duration::from_millis(100)).unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].name_of_station, "fake-1");
    assert_eq!(found[0].ip, Some(DEV_IP));
    assert_eq!(found[0].mac, dev.mac());

    let h = connect(&ctl, "fake-1", Faults::default()).expect("connect");
    assert_eq!(h.state(), ArState::DataExchange);
    assert!(dev.wait(Duration::from_secs(2), |s| s.prm_end
        && s.app_ready_confirmed));
    let s = dev.seen();
    // Parameters went as one MultipleWrite with both records.
    assert_eq!(s.writes.len(), 1);
    assert!(s.writes[0].is_multiple());
    let recs = s.writes[0].records();
    assert_eq!(recs.len(), 2);
    assert_eq!(
        (recs[0].0.address.index, recs[0].1),
        (123, &[0u8, 0, 0, 1][..])
    );

    // Outputs reach the device: output CR = 2 data bytes + IOPS, then IOCS.
    h.set_outputs(0, &[0xAB, 0xCD]).unwrap();
    assert!(dev.wait(Duration::from_secs(2), |s| s
        .last_c_sdu
        .starts_with(&[0xAB, 0xCD, 0x80])));
    assert_eq!(
        dev.seen().last_data_status.map(|d| d & 0x14),
        Some(0x14),
        "DataValid + ProviderRun"
    );
    // Inputs reach the controller: input CR = 3 DAP IOPS, 4 data bytes + IOPS, IOCS.
    dev.set_inputs(&[0x80, 0x80, 0x80, 1, 2, 3, 4, 0x80, 0x80]);
    let t0 = Instant::now();
    while h.inputs().data != vec![1, 2, 3, 4] && t0.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_millis(10));
    }
    let inp = h.inputs();
    assert_eq!(inp.data, vec![1, 2, 3, 4]);
    assert_eq!(inp.iops, vec![0x80; 4]);
    assert_eq!(inp.iocs, vec![0x80]);

    // Records.
    assert_eq!(h.read_record(0, 1, 0xAFF0, 64).unwrap(), b"IM0-FAKE");
    h.write_record(1, 1, 0x0042, &[9, 8, 7]).unwrap();
    assert_eq!(dev.seen().writes.len(), 2);
    assert_eq!(
        ctl.read_implicit(DEV_IP, 0x0493, 2, 0, 1, 0xAFF0, 64)
            .unwrap(),
        b"IM0-FAKE"
    );

    // Alarm: decoded, transport-ACKed and AlarmAck'ed.
    dev.send_diag_alarm();
    assert!(dev.wait(Duration::from_secs(2), |s| s.alarm_acks == 1
        && s.transport_acks >= 1));
    let al = h.alarms();
    assert_eq!(al.len(), 1);
    assert_eq!(al[0].alarm_type_name, "Diagnosis");
    assert!(
        al[0].diagnosis[0].starts_with("channel 3: error 0x0001 (short circuit)"),
        "{:?}",
        al[0].diagnosis
    );
    assert!(events.try_iter().any(|e| matches!(e, Event::Alarm { .. })));

    // Cyclic data keeps flowing both ways (awaited with a deadline: on a loaded machine the
    // cycles since data exchange began may still be few at this point).
    let deadline = std::time::Instant::now() + Duration::from_secs(3);
    let st = loop {
        let st = h.status();
        if (st.frames_sent > 10 && st.frames_new_data > 10) || std::time::Instant::now() > deadline
        {
            break st;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    assert!(st.frames_sent > 10 && st.frames_new_data > 10, "{st:?}");
    assert_eq!(st.watchdog_expiries, 0);

    h.release().unwrap();
    assert!(dev.wait(Duration::from_secs(1), |s| s.released));
    assert_eq!(h.state(), ArState::Released);

    // Independent oracle: every PROFINET/CM frame the controller sent dissects cleanly.
    if pn_testkit::env::require_tshark() {
        let frames: Vec<Vec<u8>> = dev
            .seen()
            .raw_frames
            .iter()
            .filter(|f| f.len() > 14)
            .cloned()
            .collect();
        let pk = pn_testkit::tshark::dissect(&frames).unwrap();
        let mut connect_seen = false;
        let mut rtc_seen = false;
        let mut prm_end_seen = false;
        let mut release_seen = false;
        for p in &pk {
            let protos = p.protocols().to_string();
            if protos.contains("pn_io") || protos.contains("pn_rt") || protos.contains("pn_dcp") {
                p.assert_clean(&protos);
            }
            if p.field("pn_io.cminitiator_station_name") == Some("pn-controller") {
                connect_seen = true;
                // ARBlockReq, 2 IOCRBlockReq, 2 ExpectedSubmoduleBlockReq, AlarmCRBlockReq.
                let bt = p.all("pn_io.block_type");
                assert_eq!(bt.len(), 6, "{}", p.dump());
                assert_eq!(p.all("pn_io.send_clock_factor"), vec!["32", "32"]);
                assert_eq!(p.all("pn_io.reduction_ratio"), vec!["2", "2"]);
                assert_eq!(p.all("pn_io.data_length"), vec!["40", "40"]);
            }
            if p.field("pn_io.control_command.prmend") == Some("1")
                || p.field("pn_io.control_command.prmend") == Some("True")
            {
                prm_end_seen = true;
            }
            if p.field("pn_io.control_command.release") == Some("1")
                || p.field("pn_io.control_command.release") == Some("True")
            {
                release_seen = true;
            }
            if let Some(ds) = p.field("pn_rt.ds") {
                if pn_testkit::tshark::parse_uint(ds) == Some(0x35)
                    && p.field("pn_rt.frame_id").is_some()
                {
                    rtc_seen = true;
                }
            }
        }
        assert!(connect_seen, "no Connect request dissected");
        assert!(prm_end_seen, "no PrmEnd dissected");
        assert!(release_seen, "no Release dissected");
        assert!(rtc_seen, "no cyclic frame with DataStatus 0x35 dissected");
        let mut bts: Vec<String> = pk
            .iter()
            .flat_map(|p| p.all("pn_io.block_type"))
            .map(|s| s.to_string())
            .collect();
        bts.sort();
        bts.dedup();
        // Everything the controller emitted (and the fake device received): Connect blocks,
        // Write (0x0008), Read (0x0009), PrmEnd (0x0110), Release (0x0114), our AlarmAck-Low
        // (0x8002) and our ApplicationReady response (0x8112), all dissected clean above.
        for t in [
            "0x0008", "0x0009", "0x0101", "0x0102", "0x0103", "0x0104", "0x0110", "0x0114",
            "0x8002", "0x8112",
        ] {
            assert!(
                bts.iter().any(|b| b == t),
                "block type {t} not dissected: {bts:?}"
            );
        }
    }
}

#[test]
fn fault_injection_seen_by_device() {
    if !pn_testkit::env::require_root() {
        return;
    }
    let lab = Lab::new("pcg");
    let dev = fake(&lab, fcfg("fake-2"));
    let ctl = controller(&lab);
    let h = connect(&ctl, "fake-2", Faults::default()).expect("connect");
    let base = dev.seen();

    // Bad IOPS.
    h.set_faults(Faults {
        bad_iops: true,
        ..Faults::default()
    });
    assert!(dev.wait(Duration::from_secs(2), |s| s.last_c_sdu.get(2)
        == Some(&0x00)));
    // Provider STOP.
    h.set_faults(Faults {
        provider_stop: true,
        ..Faults::default()
    });
    assert!(dev.wait(Duration::from_secs(2), |s| s
        .last_data_status
        .is_some_and(|d| d & 0x10 == 0)));
    // Duplicates.
    h.set_faults(Faults {
        duplicate_frames: true,
        ..Faults::default()
    });
    assert!(dev.wait(Duration::from_secs(2), |s| s.output_duplicates
        > base.output_duplicates + 5));
    // Wrong frame id.
    h.set_faults(Faults {
        frame_id_override: Some(0xBEEF),
        ..Faults::default()
    });
    assert!(dev.wait(Duration::from_secs(2), |s| s
        .other_frame_ids
        .contains(&0xBEEF)));
    // Corrupted (truncated) frames.
    h.set_faults(Faults {
        corrupt_frames: true,
        ..Faults::default()
    });
    assert!(dev.wait(Duration::from_secs(2), |s| s.output_invalid
        > base.output_invalid + 5));
    // Alarm ACK withheld: transport ACK only.
    h.set_faults(Faults {
        alarm_ack: AlarmAckFault::Never,
        ..Faults::default()
    });
    dev.send_diag_alarm();
    assert!(dev.wait(Duration::from_secs(2), |s| s.transport_acks >= 1));
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(dev.seen().alarm_acks, 0);
    // Stop outputs: the device's data-hold watchdog trips.
    h.set_faults(Faults {
        stop_outputs: true,
        ..Faults::default()
    });
    assert!(dev.wait(Duration::from_secs(2), |s| s.watchdog_expired));
    // The device's data-hold timer ends its AR (CMDEV, as pn-device does): it stops
    // providing and sends ERR-RTA "consumer DHT expired" (0x05), on which the controller's AR
    // ends. An abort after that sends nothing more; any ERR-RTA the controller did send (its
    // own consumer watchdog, 0x05, or the abort, 0x0D) is a correct one.
    assert!(dev.wait(Duration::from_secs(2), |s| s.rta_sent.is_some()));
    let s = dev.seen();
    assert_eq!(s.rta_sent.unwrap().octets(), [0xCF, 0x81, 0xFD, 0x05]);
    assert!(s.ended[0].starts_with("watchdog"), "{:?}", s.ended);
    let st = h.wait_state(|s| matches!(s, ArState::Aborted(_)), Duration::from_secs(2));
    assert!(
        matches!(st, ArState::Aborted(ref r) if r.contains("ERR-RTA CF 81 FD 05")),
        "{st:?}"
    );
    h.abort();
    if let Some(err) = dev.seen().rta_err.map(|e| e.octets()) {
        assert!(
            err == [0xCF, 0x81, 0xFD, 0x0D] || err == [0xCF, 0x81, 0xFD, 0x05],
            "{err:02x?}"
        );
    }
}

#[test]
fn app_ready_faults_and_negative_connect() {
    if !pn_testkit::env::require_root() {
        return;
    }
    let lab = Lab::new("pch");
    let dev = fake(&lab, fcfg("fake-3"));
    let ctl = controller(&lab);
    // Dropped ApplicationReady response: the connect times out; the device never gets a
    // confirmation.
    let e = connect(
        &ctl,
        "fake-3",
        Faults {
            app_ready: AppReadyFault::Drop,
            ..Faults::default()
        },
    )
    .err()
    .expect("must fail");
    assert!(matches!(e, Error::Timeout(_)), "{e}");
    assert!(!dev.seen().app_ready_confirmed);
    // Delayed: connect still succeeds, after the delay.
    let t0 = Instant::now();
    let h = connect(
        &ctl,
        "fake-3",
        Faults {
            app_ready: AppReadyFault::Delay(Duration::from_millis(250)),
            ..Faults::default()
        },
    )
    .expect("connect");
    assert_eq!(h.state(), ArState::DataExchange);
    assert!(dev.wait(Duration::from_secs(2), |s| s.app_ready_confirmed));
    assert!(t0.elapsed() >= Duration::from_millis(250));
    h.release().unwrap();
    drop(dev);

    let mut c = fcfg("fake-4");
    c.connect_status = Some(pn_controller::PnioStatus::new(0xDB, 0x81, 0x01, 0x04));
    let _dev = fake(&lab, c);
    let e = connect(&ctl, "fake-4", Faults::default())
        .err()
        .expect("rejected");
    match e {
        Error::Rejected { what, status } => {
            assert_eq!(what, "Connect");
            assert_eq!(status.octets(), [0xDB, 0x81, 0x01, 0x04]);
        }
        other => panic!("{other}"),
    }
}

#[test]
fn module_diff_and_controller_watchdog() {
    if !pn_testkit::env::require_root() {
        return;
    }
    let lab = Lab::new("pci");
    let mut c = fcfg("fake-5");
    c.module_diff = true;
    let dev = fake(&lab, c);
    let ctl = controller(&lab);
    let events = ctl.events();
    let h = connect(&ctl, "fake-5", Faults::default()).expect("connect");
    let md = h.status().module_diff;
    assert_eq!(md.len(), 1);
    assert!(md[0].contains("wrong module"), "{md:?}");
    // The device goes silent: our consumer watchdog expires and we abort the AR with ERR-RTA
    // "consumer DHT expired".
    dev.go_silent();
    let st = h.wait_state(|s| matches!(s, ArState::Aborted(_)), Duration::from_secs(3));
    assert!(
        matches!(st, ArState::Aborted(ref r) if r.contains("watchdog")),
        "{st:?}"
    );
    assert!(events
        .try_iter()
        .any(|e| matches!(e, Event::WatchdogExpired { .. })));
    assert_eq!(h.status().watchdog_expiries, 1);
    assert!(dev.wait(Duration::from_secs(2), |s| s.rta_err.is_some()));
    assert_eq!(
        dev.seen().rta_err.unwrap().octets(),
        [0xCF, 0x81, 0xFD, 0x05]
    );
}

#[test]
fn dcp_set_commands() {
    if !pn_testkit::env::require_root() {
        return;
    }
    let lab = Lab::new("pcj");
    let dev = fake(&lab, fcfg("fake-6"));
    let ctl = controller(&lab);
    let mac = dev.mac();
    ctl.dcp_set_name(mac, "new-name", true).unwrap();
    ctl.dcp_set_ip(
        mac,
        DEV_IP,
        "255.255.255.0".parse().unwrap(),
        "0.0.0.0".parse().unwrap(),
        false,
    )
    .unwrap();
    ctl.dcp_signal(mac).unwrap();
    ctl.dcp_reset_to_factory(
        mac,
        pn_protocol::wire::dcp::qualifier::RESET_COMMUNICATION_PARAMETER,
    )
    .unwrap();
    let sets = dev.seen().dcp_set;
    assert_eq!(sets.len(), 4);
    assert_eq!(sets[0].name_of_station(), Some(&b"new-name"[..]));
    assert_eq!(sets[0].blocks[0].prefix, 1, "permanent qualifier");
    assert_eq!(sets[1].blocks[0].prefix, 0, "temporary qualifier");
    assert!(matches!(
        sets[2].blocks[0].value,
        pn_protocol::wire::dcp::DcpValue::Signal { value: 0x0100 }
    ));
    assert!(ctl
        .dcp_identify_name("nobody", Duration::from_millis(200))
        .unwrap()
        .is_none());
}

/// Identify All over several devices that spread their answers with the response delay:
/// every device is found once, and the answers did arrive spread out.
#[test]
fn identify_all_collects_delayed_answers_from_many_devices() {
    if !pn_testkit::env::require_root() {
        return;
    }
    let ctl_ns = common::NetNs::new("pcmc").unwrap();
    let br = pn_testkit::netns::unique_name("pcmbr");
    ctl_ns
        .exec_ok(&["ip", "link", "add", &br, "type", "bridge"])
        .unwrap();
    ctl_ns.exec_ok(&["ip", "link", "set", &br, "up"]).unwrap();
    let mut devs = Vec::new();
    let mut keep = Vec::new();
    for i in 0..5 {
        let ns = common::NetNs::new("pcmd").unwrap();
        let v = common::Veth::new("pcm", &ctl_ns, &ns).unwrap();
        ctl_ns
            .exec_ok(&["ip", "link", "set", &v.a, "master", &br])
            .unwrap();
        let ifname = v.b.clone();
        let d = ns
            .enter(move || FakeDevice::start(&ifname, fcfg(&format!("many-{i}"))))
            .unwrap();
        devs.push(d);
        keep.push((ns, v));
    }
    let brc = br.clone();
    let ctl = ctl_ns
        .enter(move || Controller::start(ControllerConfig::new(&brc)))
        .unwrap()
        .expect("controller");
    // Factor 26: answers spread over 0..250 ms.
    let found = ctl
        .dcp_identify_all(26, Duration::from_millis(150))
        .unwrap();
    let names: Vec<_> = found.iter().map(|d| d.name_of_station.clone()).collect();
    assert_eq!(
        names,
        (0..5).map(|i| format!("many-{i}")).collect::<Vec<_>>()
    );
    let delays: Vec<u64> = devs
        .iter()
        .flat_map(|d| d.seen().identify_delays_ms)
        .collect();
    assert_eq!(delays.len(), 5);
    assert!(delays.iter().all(|&d| d < 260));
    // The answers really were spread (distinct delays), yet each device was listed once.
    let mut distinct = delays.clone();
    distinct.sort();
    distinct.dedup();
    assert!(distinct.len() >= 2, "{delays:?}");
}

/// Connect from a GSDML file (p-net sample app: DAP + I8O8 module with two parameter records
/// and the Echo module): the parameters go out with their GSDML defaults in one MultipleWrite,
/// and a record larger than one UDP datagram is sent as DCE/RPC fragments.
#[test]
fn gsdml_model_parameters_and_fragmented_write() {
    if !pn_testkit::env::require_root() {
        return;
    }
    let lab = Lab::new("pck");
    let dev = fake(&lab, fcfg("rt-labs-dev"));
    let ctl = controller(&lab);
    let g = pn_controller::Gsdml::load(std::path::Path::new(
        "/work/shared/fixtures/gsdml/GSDML-V2.4-RT-Labs-P-Net-Sample-App-20220324.xml",
    ))
    .unwrap();
    let slots = pn_controller::gsdml::parse_slot_list("1=IDM_32,2=IDM_40").unwrap();
    let model = g.device_model("rt-labs-dev", &slots).unwrap();
    let mut c = ArConfig::new(model);
    c.timing.reduction_ratio = 4;
    let h = ctl.connect(c).expect("connect");
    assert_eq!(h.state(), ArState::DataExchange);
    let w = &dev.seen().writes[0];
    assert!(w.is_multiple());
    let recs: Vec<(u16, u16, Vec<u8>)> = w
        .records()
        .iter()
        .map(|(hd, d)| (hd.address.slot, hd.address.index, d.to_vec()))
        .collect();
    assert_eq!(
        recs,
        vec![
            (1, 123, vec![0, 0, 0, 1]),
            (1, 124, vec![0, 0, 0, 2]),
            (2, 125, vec![0, 0, 0, 2])
        ]
    );
    // Input CR: DAP (3 IOPS), I8O8 1 byte + IOPS, Echo 8 bytes + IOPS, IOCS for 2 outputs.
    assert_eq!(h.layout().input.area_len, 9);
    assert_eq!(h.layout().output.area_len, 9);
    // 3000 bytes: three CL fragments; the device reassembles them.
    let big: Vec<u8> = (0..3000u32).map(|i| i as u8).collect();
    h.write_record(1, 1, 0x0100, &big).unwrap();
    let last = dev.seen().writes.last().cloned().unwrap();
    assert!(!last.is_multiple());
    let r = last.records();
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].0.address.index, 0x0100);
    assert_eq!(r[0].1, &big[..]);
    h.release().unwrap();
}

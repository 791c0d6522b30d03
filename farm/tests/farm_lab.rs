//! The farm against pn-controller in network namespaces: four farm devices on one veth end,
//! the controller library on the other. DCP Identify finds all four; three ARs run at once on
//! one controller schedule; outputs reach each farm device's image and inputs set on the farm
//! reach the controller; I&M0 tells the copies apart; a diagnosis raised on the farm arrives
//! as an alarm; the status view lists the devices; Release returns every device to idle.
//! 4 ms cycle, DataHoldFactor 125 (500 ms): the subject is the farm's function, not timing
//! (a loaded CI VM has stalled threads for ~100 ms, see controller-sim/tests/device_many.rs).

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::time::Duration;

use pn_controller::devconfig::DeviceConfig;
use pn_controller::{ArConfig, ArState, Controller, ControllerConfig, RealtimeOptions};
use pn_device::dataplane::DiagnosisEntry;
use pn_device_formats::config::RuntimeConfig;
use pn_farm::plant::{numbered, Numbering, DEFAULT_MAC_BASE};
use pn_farm::status::DeviceView;
use pn_farm::{Farm, FarmOptions};
use pn_protocol::wire::pnio::im::ImRecord;
use pn_testkit::daemon::DeviceXml;
use pn_testkit::netns::{NetNs, Veth};

const CTL_IP: &str = "192.168.83.1/24";
const BASE: Ipv4Addr = Ipv4Addr::new(192, 168, 83, 10);
const N: usize = 4;

fn xml() -> String {
    DeviceXml::new("unused")
        .ident("ORDER-F", "SN-F", 1, "V1.0.0")
        .product(None)
        .nic(None)
        .ip(BASE)
        .send_clock_ms(4)
        .to_xml()
}

/// GET `path` from the status view inside `ns`.
fn http_get(ns: &NetNs, addr: SocketAddr, path: &str) -> String {
    let req = format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n");
    ns.enter(move || {
        let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        s.write_all(req.as_bytes()).unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        out
    })
    .unwrap()
}

#[test]
fn controller_discovers_connects_exchanges_reads_alarms_and_releases_farm_devices() {
    if !pn_testkit::env::require_root() {
        return;
    }
    let (ctl_ns, dev_ns, veth) =
        Veth::controller_device("pnf", Some(CTL_IP), None).expect("namespaces and veth pair");
    let text = xml();
    let cfg = RuntimeConfig::parse(&text, "test").unwrap();
    let specs = numbered(
        &cfg,
        &veth.b,
        &Numbering {
            count: N,
            name_prefix: "farm-dev-".into(),
            ip_base: Some(BASE),
            mac_base: DEFAULT_MAC_BASE,
            unnamed: false,
        },
    )
    .unwrap();
    let nic = veth.b.clone();
    let farm = dev_ns
        .enter(move || {
            Farm::start(
                &nic,
                &specs,
                FarmOptions {
                    http: Some("127.0.0.1:0".parse().unwrap()),
                    realtime: true,
                    state_dir: None,
                },
            )
        })
        .unwrap()
        .expect("farm");
    let ifname = veth.a.clone();
    let ctl = ctl_ns
        .enter(move || {
            let mut c = ControllerConfig::new(&ifname);
            c.send_clock_factor = 128;
            c.realtime = RealtimeOptions {
                fifo_priority: Some(40),
                lock_memory: false,
            };
            Controller::start(c)
        })
        .unwrap()
        .expect("controller");

    // DCP Identify (all): every farm device answers with its own name, IP and identity.
    let found = ctl
        .dcp_identify_all(8, Duration::from_millis(300))
        .expect("identify");
    let names: Vec<&str> = found.iter().map(|d| d.name_of_station.as_str()).collect();
    assert_eq!(
        names,
        ["farm-dev-1", "farm-dev-2", "farm-dev-3", "farm-dev-4"],
        "{found:?}"
    );
    for (k, d) in found.iter().enumerate() {
        assert_eq!(d.ip, Some(Ipv4Addr::new(192, 168, 83, 10 + k as u8)));
        assert_eq!(d.vendor_id, Some(cfg.vendor_id));
        assert_eq!(d.device_id, Some(cfg.device_id));
    }

    // Three ARs at once (device 4 stays idle).
    let model = DeviceConfig::parse(&text).unwrap().model;
    let mut ars = Vec::new();
    for k in 0..3usize {
        let mut m = model.clone();
        m.station_name = format!("farm-dev-{}", k + 1);
        let mut c = ArConfig::new(m);
        c.device_ip = Some(Ipv4Addr::new(192, 168, 83, 10 + k as u8));
        c.timing.reduction_ratio = 1;
        c.timing.data_hold_factor = 125;
        c.timing.watchdog_factor = 125;
        let h = ctl
            .connect(c)
            .unwrap_or_else(|e| panic!("connect farm-dev-{}: {e}\n{:?}", k + 1, farm.devices()));
        assert_eq!(h.state(), ArState::DataExchange);
        ars.push(h);
    }
    let in_data = pn_testkit::poll::until(Duration::from_secs(5), || {
        farm.devices()[..3]
            .iter()
            .all(|d| d.state == "DataExchange")
    });
    assert!(in_data, "{:?}", farm.devices());
    assert_eq!(farm.devices()[3].state, "Idle");

    // Distinct data each way.
    for (k, h) in ars.iter().enumerate() {
        h.set_outputs(0, &[0xD0 + k as u8, 1, 2, 3]).unwrap();
        farm.set_inputs(k, 0, &[0xE0 + k as u8, 9, 8, 7]).unwrap();
    }
    for (k, h) in ars.iter().enumerate() {
        let arrived = pn_testkit::poll::until(Duration::from_secs(5), || {
            farm.outputs(k)
                .is_some_and(|o| o.starts_with(&[0xD0 + k as u8, 1, 2, 3]))
                && h.inputs().data.starts_with(&[0xE0 + k as u8, 9, 8, 7])
        });
        assert!(
            arrived,
            "device {k}: farm {:?}; controller inputs {:?}",
            farm.device(k),
            h.inputs()
        );
    }

    // I&M0 of each device: the configuration's identity, the copy's own serial number.
    for (k, h) in ars.iter().enumerate() {
        match h.read_im(0, 1, 0).expect("I&M0") {
            ImRecord::Im0(im0) => {
                assert_eq!(im0.vendor_id, cfg.vendor_id);
                assert_eq!(im0.order_id.trim(), "ORDER-F");
                assert_eq!(im0.serial_number.trim(), format!("SN-F-{}", k + 1));
            }
            other => panic!("not I&M0: {other:?}"),
        }
    }

    // A diagnosis raised on farm-dev-2 reaches its controller as an alarm, and is acknowledged.
    let diag = DiagnosisEntry {
        slot: 1,
        subslot: 1,
        channel: 0,
        error_type: 1,
        severity: 0,
        text: "short circuit".into(),
    };
    assert!(farm.set_diagnosis(1, diag));
    let got = pn_testkit::poll::until(Duration::from_secs(5), || {
        ars[1]
            .alarms()
            .iter()
            .any(|a| a.slot == 1 && a.subslot == 1 && a.alarm_type == 1)
            && farm.devices()[1].alarms_acked >= 1
    });
    assert!(
        got,
        "alarms {:?}; farm {:?}",
        ars[1].alarms(),
        farm.device(1)
    );
    assert!(ars[0].alarms().is_empty() && ars[2].alarms().is_empty());

    // The status view lists every device with its AR state.
    let addr = farm.http_addr().unwrap();
    let resp = http_get(&dev_ns, addr, "/api/devices");
    let body = resp.split("\r\n\r\n").nth(1).unwrap_or_default();
    let views: Vec<DeviceView> =
        serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {resp}"));
    assert_eq!(views.len(), N);
    assert_eq!(views[2].state, "DataExchange");
    assert!(views[2].controller.is_some());
    assert!(
        views[2].frames_sent > 0 && views[2].frames_received > 0,
        "{:?}",
        views[2]
    );
    let page = http_get(&dev_ns, addr, "/");
    assert!(
        page.contains("farm-dev-4") && page.contains("<table>"),
        "{page}"
    );

    for (k, h) in ars.iter().enumerate() {
        assert_eq!(h.status().watchdog_expiries, 0, "controller side, AR {k}");
        h.release().unwrap();
    }
    let idle = pn_testkit::poll::until(Duration::from_secs(5), || {
        farm.devices().iter().all(|d| d.state == "Idle")
    });
    assert!(idle, "{:?}", farm.devices());
    for d in farm.devices() {
        assert_eq!(d.watchdog_trips, 0, "{d:?}");
    }
    ctl.shutdown();
    farm.stop();
    drop(veth);
}

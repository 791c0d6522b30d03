//! Several ARs to several pn-device daemons from one controller process (one raw socket, one
//! timer schedule): three devices in three namespaces, bridged in the controller namespace.
//! 4 ms cycle, DataHoldFactor 125 (500 ms): the subject is several ARs on one schedule, not
//! timing, and a loaded CI VM has stalled a cyclic thread for 97 ms (a DataHoldFactor of 24
//! tripped there).

mod common;

use std::net::Ipv4Addr;
use std::time::Duration;

use common::device::Daemon;
use pn_controller::{ArConfig, ArState, Controller, ControllerConfig, RealtimeOptions};
use pn_testkit::netns::{NetNs, Veth};

#[test]
fn three_devices_from_one_controller() {
    if !pn_testkit::env::require_root() {
        return;
    }
    let ctl_ns = NetNs::new("pnmc").unwrap();
    let br = pn_testkit::netns::unique_name("pnmbr");
    ctl_ns
        .exec_ok(&["ip", "link", "add", &br, "type", "bridge"])
        .unwrap();
    ctl_ns.exec_ok(&["ip", "link", "set", &br, "up"]).unwrap();
    ctl_ns
        .exec_ok(&["ip", "addr", "add", "192.168.79.1/24", "dev", &br])
        .unwrap();
    let mut daemons = Vec::new();
    let mut veths = Vec::new();
    for i in 0..3u8 {
        let ns = NetNs::new("pnmd").unwrap();
        let v = Veth::new("pnm", &ctl_ns, &ns).unwrap();
        ctl_ns
            .exec_ok(&["ip", "link", "set", &v.a, "master", &br])
            .unwrap();
        let ip = Ipv4Addr::new(192, 168, 79, 10 + i);
        ns.exec_ok(&["ip", "addr", "add", &format!("{ip}/24"), "dev", &v.b])
            .unwrap();
        let d = Daemon::start(ns, &v.b, 4, &format!("multi-dev-{i}"), ip);
        daemons.push((d, ip));
        veths.push(v);
    }
    let brc = br.clone();
    let ctl = ctl_ns
        .enter(move || {
            let mut c = ControllerConfig::new(&brc);
            c.send_clock_factor = 128;
            c.realtime = RealtimeOptions {
                fifo_priority: Some(40),
                lock_memory: false,
            };
            Controller::start(c)
        })
        .unwrap()
        .expect("controller");
    let mut ars = Vec::new();
    for (d, ip) in &daemons {
        let mut c = ArConfig::new(d.model());
        c.device_ip = Some(*ip);
        c.timing.reduction_ratio = 1;
        c.timing.data_hold_factor = 125;
        c.timing.watchdog_factor = 125;
        let h = ctl
            .connect(c)
            .unwrap_or_else(|e| panic!("connect {ip}: {e}\n{}", d.log()));
        assert_eq!(h.state(), ArState::DataExchange);
        ars.push(h);
    }
    assert_eq!(ctl.ars().len(), 3);
    // Distinct data to each device, distinct data back.
    for (k, h) in ars.iter().enumerate() {
        h.set_outputs(0, &[0xD0 + k as u8, 1, 2, 3]).unwrap();
    }
    for (k, (d, _)) in daemons.iter().enumerate() {
        let r = d
            .http(
                "POST",
                "/api/io",
                Some(serde_json::json!({"offset": 0, "data": format!("e{k}000000")})),
            )
            .unwrap();
        assert_eq!(r["connected"], true, "{r}");
    }
    for (k, ((d, _), h)) in daemons.iter().zip(&ars).enumerate() {
        let want = format!("d{k}010203");
        let arrived = pn_testkit::poll::until(Duration::from_secs(5), || {
            d.http("GET", "/api/io", None).unwrap()["inputHex"] == want.as_str()
                && h.inputs().data == vec![0xE0 + k as u8, 0, 0, 0]
        });
        let io = d.http("GET", "/api/io", None).unwrap();
        assert!(arrived, "device {k}: {io}; AR inputs {:?}", h.inputs().data);
        assert_eq!(h.status().watchdog_expiries, 0);
    }
    // Run for a few seconds on one schedule; nobody trips.
    std::thread::sleep(Duration::from_secs(3));
    for ((d, _), h) in daemons.iter().zip(&ars) {
        let s = d.http("GET", "/api/status", None).unwrap();
        assert_eq!(s["state"], "DataExchange", "{s}");
        assert_eq!(h.state(), ArState::DataExchange);
        assert!(h.status().frames_new_data > 500);
    }
    for h in &ars {
        h.release().unwrap();
    }
    drop(veths);
}

//! The L2 services inside the real `pn-device` daemon (ProfinetPlane), seen from a peer
//! namespace on a veth pair: DCP Identify/Set/Signal/ResetToFactory change what the API shows
//! and what survives a restart; LLDP is on the wire; the link state reaches `GET /api/diag`.

mod common;

use std::net::Ipv4Addr;
use std::process::Command;
use std::time::{Duration, Instant};

use common::{any_binding, wait_for, write_config, write_licence, Daemon, DaemonOpts, Netns};
use pn_device::stack::socket::PnSocket;
use pn_protocol::wire::dcp::{qualifier, BlockError, DcpRepr, DcpValue, NameOfStation};
use pn_protocol::wire::ethernet::MacAddr;
use pn_protocol::wire::lldp::{DeviceLldpConfig, LldpRepr};
use pn_testkit::netns::NetNs;

const PEER_MAC: MacAddr = MacAddr([0x02, 0x4c, 0x32, 0x00, 0x00, 0x77]);

fn run(args: &[&str]) {
    let o = Command::new(args[0]).args(&args[1..]).output().unwrap();
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

struct Peer {
    sock: PnSocket,
    dev_mac: Option<MacAddr>,
    xid: u32,
    seen: Vec<Vec<u8>>,
}

impl Peer {
    fn send(&mut self, r: &DcpRepr, dst: MacAddr) {
        self.sock
            .send(&r.build_frame(dst, PEER_MAC, None).unwrap())
            .unwrap();
    }

    fn recv_where(&mut self, t: Duration, mut p: impl FnMut(&[u8]) -> bool) -> Option<Vec<u8>> {
        let end = Instant::now() + t;
        let mut buf = [0u8; 1600];
        loop {
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return None;
            }
            if let Ok(Some(n)) = self.sock.recv(&mut buf, Some(left)) {
                let f = buf[..n].to_vec();
                self.seen.push(f.clone());
                if p(&f) {
                    return Some(f);
                }
            }
        }
    }

    fn dcp(&mut self, r: DcpRepr, dst: MacAddr, t: Duration) -> Option<DcpRepr> {
        let xid = r.xid;
        self.send(&r, dst);
        let f = self.recv_where(t, |f| {
            DcpRepr::parse_frame(f).is_ok_and(|(_, _, r)| {
                r.xid == xid && r.service_type != pn_protocol::wire::dcp::ServiceType::Request
            })
        })?;
        let (eth, _, r) = DcpRepr::parse_frame(&f).unwrap();
        self.dev_mac = Some(eth.src);
        Some(r)
    }

    fn next_xid(&mut self) -> u32 {
        self.xid += 1;
        self.xid
    }

    /// Identify by name, retried until `deadline` (the stack may still be starting).
    fn identify(&mut self, name: &str, within: Duration) -> Option<DcpRepr> {
        let n = NameOfStation::new(name).unwrap();
        let end = Instant::now() + within;
        while Instant::now() < end {
            let xid = self.next_xid();
            let r = DcpRepr::identify_request_by_name(xid, &n, 1);
            if let Some(r) = self.dcp(r, MacAddr::DCP_IDENTIFY, Duration::from_millis(300)) {
                return Some(r);
            }
        }
        None
    }

    /// Identify All, retried until `within` (the stack may still be starting).
    fn identify_all(&mut self, within: Duration) -> Option<DcpRepr> {
        let end = Instant::now() + within;
        while Instant::now() < end {
            let xid = self.next_xid();
            let r = DcpRepr::identify_request_all(xid, 1);
            if let Some(r) = self.dcp(r, MacAddr::DCP_IDENTIFY, Duration::from_millis(300)) {
                return Some(r);
            }
        }
        None
    }

    fn set(&mut self, r: DcpRepr) -> Vec<BlockError> {
        let mac = self.dev_mac.expect("device MAC known from an Identify");
        let r = self
            .dcp(r, mac, Duration::from_secs(2))
            .expect("Set response");
        r.blocks
            .iter()
            .filter_map(|b| match b.value {
                DcpValue::Response { error, .. } => Some(error),
                _ => None,
            })
            .collect()
    }
}

/// Graceful restart (SIGTERM: the daemon writes pending remanent data before it exits).
fn restart(d: &mut Daemon) {
    d.signal(libc::SIGTERM);
    let st = d.wait_exit(Duration::from_secs(10));
    assert!(st.success(), "daemon exit status {st}: {}", d.log_text());
    d.child = None;
    d.spawn();
}

fn start_slave(d: &Daemon) {
    let r = d.post_empty("/api/start");
    assert_eq!(r["ok"], true, "{r}\n{}", d.log_text());
    d.wait_state("Initialized");
}

#[test]
fn l2_daemon_dcp_set_persist_restart_reset_lldp_and_link() {
    if !pn_testkit::env::require_root() {
        return;
    }
    let ns = Netns::new();
    let peer_ns = NetNs::new("l2q").unwrap();
    run(&[
        "ip",
        "-n",
        &ns.name,
        "link",
        "add",
        "pnl0",
        "type",
        "veth",
        "peer",
        "name",
        "pnl0p",
        "netns",
        peer_ns.name(),
    ]);
    run(&["ip", "-n", &ns.name, "link", "set", "pnl0", "up"]);
    peer_ns
        .exec_ok(&[
            "ip",
            "link",
            "set",
            "dev",
            "pnl0p",
            "address",
            &PEER_MAC.to_string(),
        ])
        .unwrap();
    peer_ns
        .exec_ok(&["ip", "link", "set", "pnl0p", "up"])
        .unwrap();
    let sock = peer_ns
        .enter(|| PnSocket::open("pnl0p"))
        .unwrap()
        .expect("peer socket");
    let mut peer = Peer {
        sock,
        dev_mac: None,
        xid: 0x5000,
        seen: Vec::new(),
    };

    let dir = tempfile::tempdir().unwrap();
    write_licence(&dir.path().join("licence.json"), 3600, any_binding());
    let xml = dir.path().join("device.xml");
    write_config(&xml, "l2-daemon", Some("pnl0"), 4, 4);
    let mut d = Daemon::start_in(ns, dir, DaemonOpts::new().nic(Some("pnl0")).config(xml));
    start_slave(&d);

    // Identify by the configured name.
    let r = peer
        .identify("l2-daemon", Duration::from_secs(5))
        .unwrap_or_else(|| panic!("no Identify response; log:\n{}", d.log_text()));
    assert_eq!(r.name_of_station(), Some(&b"l2-daemon"[..]));
    // LLDP from the daemon.
    let f = peer
        .recv_where(Duration::from_secs(6), |f| LldpRepr::parse_frame(f).is_ok())
        .expect("LLDP from the daemon");
    let (_, l) = LldpRepr::parse_frame(&f).unwrap();
    assert_eq!(l.port_id(), Some((7, &b"port-001.l2-daemon"[..])));
    assert_eq!(l.ttl(), Some(20));

    // The peer's LLDP shows as the neighbour in GET /api/diag (l2 extras), with the link's
    // MAU type (veth: 10 Gbit/s, reported as the 100BASE-TX FD substitute).
    let mut c = DeviceLldpConfig::new(
        Some(NameOfStation::new("plc-x").unwrap()),
        PEER_MAC,
        Ipv4Addr::new(192, 168, 88, 1),
    );
    c.system_description = "test controller".into();
    peer.sock
        .send(&c.build().build_frame(PEER_MAC).unwrap())
        .unwrap();
    let diag = wait_for(
        "LLDP neighbour in /api/diag",
        Duration::from_secs(3),
        || {
            let v = d.get("/api/diag");
            (v["l2"]["lldpNeighbour"]["portId"] == "port-001.plc-x").then_some(v)
        },
    );
    let nb = &diag["l2"]["lldpNeighbour"];
    assert_eq!(nb["stationName"], "plc-x", "{diag}");
    assert_eq!(nb["managementAddress"], "192.168.88.1", "{diag}");
    assert_eq!(nb["ttl"], 20, "{diag}");
    assert!(
        nb["lastSeen"].as_str().is_some_and(|t| t.ends_with('Z')),
        "{diag}"
    );
    assert_eq!(nb["chassisMac"], PEER_MAC.to_string(), "{diag}");
    assert_eq!(diag["l2"]["mauType"], 16, "{diag}");
    assert_eq!(diag["l2"]["mauTypeSubstituted"], true, "{diag}");
    assert_eq!(diag["l2"]["linkSpeedMbps"], 10000, "{diag}");

    // Set IP (permanent): applied inside the device namespace, shown in the status.
    let ip = Ipv4Addr::new(192, 168, 88, 2);
    let mask = Ipv4Addr::new(255, 255, 255, 0);
    let xid = peer.next_xid();
    assert_eq!(
        peer.set(DcpRepr::set_ip(xid, ip, mask, ip, true)),
        vec![BlockError::OK]
    );
    let s = wait_for("masterAssignedIp", Duration::from_secs(3), || {
        let s = d.status();
        (s["masterAssignedIp"] == "192.168.88.2").then_some(s)
    });
    assert_eq!(s["dcpIpApplied"], true, "{s}");
    assert_eq!(s["masterAssignedMask"], "255.255.255.0", "{s}");
    assert!(!s["dcpIpApplyMessage"].as_str().unwrap().is_empty(), "{s}");
    let addrs = Command::new("ip")
        .args(["-n", &d.ns.name, "-4", "-o", "addr", "show", "dev", "pnl0"])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&addrs.stdout).contains("192.168.88.2/24"),
        "{}",
        String::from_utf8_lossy(&addrs.stdout)
    );

    // Set name (permanent).
    let n = NameOfStation::new("renamed-by-dcp").unwrap();
    let xid = peer.next_xid();
    assert_eq!(
        peer.set(DcpRepr::set_name(xid, &n, true)),
        vec![BlockError::OK]
    );
    wait_for("masterStationName", Duration::from_secs(3), || {
        (d.status()["masterStationName"] == "renamed-by-dcp").then_some(())
    });
    assert_eq!(d.status()["configStationName"], "l2-daemon");

    // Signal: visible as an alarm.
    let xid = peer.next_xid();
    assert_eq!(peer.set(DcpRepr::set_signal(xid)), vec![BlockError::OK]);
    wait_for("DCP signal alarm", Duration::from_secs(3), || {
        let a = d.get("/api/alarms");
        a.as_array()?
            .iter()
            .any(|x| x["message"].as_str().is_some_and(|m| m.contains("signal")))
            .then_some(())
    });

    // Restart: the permanent name and IP are kept.
    restart(&mut d);
    start_slave(&d);
    let r = peer
        .identify("renamed-by-dcp", Duration::from_secs(5))
        .unwrap_or_else(|| panic!("renamed device not found after restart:\n{}", d.log_text()));
    assert!(r.blocks.iter().any(|b| matches!(
        b.value,
        DcpValue::IpParameter { ip: i, .. } if i == ip
    )));
    assert!(peer
        .identify("l2-daemon", Duration::from_millis(700))
        .is_none());
    let s = d.status();
    assert_eq!(s["masterStationName"], "renamed-by-dcp", "{s}");
    assert_eq!(s["configStationName"], "l2-daemon", "{s}");

    // ResetToFactory (communication parameters): the NameOfStation is empty (IEC 61158-6-10,
    // p-net, the certification probe), at once and after a restart; the configuration's
    // StationName does not come back (docs/decisions.md §21).
    let xid = peer.next_xid();
    assert_eq!(
        peer.set(DcpRepr::set_reset_to_factory(
            xid,
            qualifier::RESET_COMMUNICATION_PARAMETER
        )),
        vec![BlockError::OK]
    );
    wait_for("masterStationName cleared", Duration::from_secs(3), || {
        (d.status()["masterStationName"] == "").then_some(())
    });
    let empty_name = |peer: &mut Peer| {
        let r = peer
            .identify_all(Duration::from_secs(5))
            .expect("Identify All answered");
        r.name_of_station().unwrap_or_default().is_empty()
    };
    assert!(empty_name(&mut peer), "name not empty after the reset");
    assert_eq!(d.get("/api/im")["stationName"], "");
    assert!(peer
        .identify("l2-daemon", Duration::from_millis(700))
        .is_none());
    restart(&mut d);
    start_slave(&d);
    assert!(
        empty_name(&mut peer),
        "name not empty after reset + restart:\n{}",
        d.log_text()
    );
    let s = d.status();
    assert_eq!(s["masterStationName"], "", "{s}");
    assert_eq!(s["configStationName"], "l2-daemon", "{s}");
    assert_eq!(d.get("/api/im")["stationName"], "");

    // A temporary name is used at once and is not stored; it erases the stored name, so after
    // a restart the name is empty again (p-net pf_cmina_dcp_set_ind).
    let xid = peer.next_xid();
    let perm = NameOfStation::new("perm-name").unwrap();
    assert_eq!(
        peer.set(DcpRepr::set_name(xid, &perm, true)),
        vec![BlockError::OK]
    );
    let xid = peer.next_xid();
    let temp = NameOfStation::new("temp-name").unwrap();
    assert_eq!(
        peer.set(DcpRepr::set_name(xid, &temp, false)),
        vec![BlockError::OK]
    );
    wait_for("temporary name shown", Duration::from_secs(3), || {
        (d.status()["masterStationName"] == "temp-name").then_some(())
    });
    assert!(peer.identify("temp-name", Duration::from_secs(2)).is_some());
    assert_eq!(d.get("/api/im")["stationName"], "temp-name");
    restart(&mut d);
    start_slave(&d);
    assert!(
        empty_name(&mut peer),
        "name not empty after a temporary set + restart:\n{}",
        d.log_text()
    );

    // The operator changes the configuration's StationName: a deliberate new configuration,
    // taken at the next start.
    write_config(&d.path("device.xml"), "l2-renamed", Some("pnl0"), 4, 4);
    let r = d.post("/api/config/reload", serde_json::json!({}));
    assert_eq!(r["ok"], true, "{r}");
    d.post_empty("/api/stop");
    start_slave(&d);
    assert!(
        peer.identify("l2-renamed", Duration::from_secs(5))
            .is_some(),
        "the new configured name is not taken:\n{}",
        d.log_text()
    );
    assert_eq!(d.status()["configStationName"], "l2-renamed");
    restart(&mut d);
    start_slave(&d);
    assert!(peer
        .identify("l2-renamed", Duration::from_secs(5))
        .is_some());

    // Link down / up at the peer end: linkUp in GET /api/diag.
    wait_for("linkUp", Duration::from_secs(3), || {
        (d.get("/api/diag")["linkUp"] == true).then_some(())
    });
    peer_ns
        .exec_ok(&["ip", "link", "set", "pnl0p", "down"])
        .unwrap();
    wait_for("linkUp false", Duration::from_secs(3), || {
        (d.get("/api/diag")["linkUp"] == false).then_some(())
    });
    peer_ns
        .exec_ok(&["ip", "link", "set", "pnl0p", "up"])
        .unwrap();
    wait_for("linkUp true", Duration::from_secs(3), || {
        (d.get("/api/diag")["linkUp"] == true).then_some(())
    });

    // Everything the daemon sent us dissects clean.
    if pn_testkit::env::require_tshark() {
        let dev: Vec<Vec<u8>> = peer
            .seen
            .iter()
            .filter(|f| f.get(12..14) == Some(&[0x88, 0xcc][..]) || DcpRepr::parse_frame(f).is_ok())
            .cloned()
            .collect();
        assert!(dev.len() >= 8);
        for p in pn_testkit::tshark::dissect(&dev).unwrap() {
            p.assert_clean("daemon L2 frame");
        }
    }
}

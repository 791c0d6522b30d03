//! The `pn-farm` binary (not the library) against the `pn-controller` binary in network
//! namespaces:
//! * three farm devices; DCP discover finds them; connect-and-run reaches data exchange with
//!   each, in both directions (inputs set through the farm's status view arrive at the
//!   controller, its outputs arrive in the farm); an LLDPDU from the controller's side becomes
//!   every farm device's neighbour, and PDPortDataReal (read implicitly) reports it; the whole
//!   link is captured and every frame is dissected clean by tshark (DCP, CM over DCE/RPC, RT,
//!   LLDP, ARP), the frames of the standby sender (`--standby-cpu`, racing the I/O loop with a
//!   grace of 1 us) among them;
//! * remanent data: a NameOfStation and an IP set permanently over DCP and an I&M1 record
//!   written over an AR survive a restart of the farm with the same `--state-dir`; a
//!   temporary name does not.
//!
//! Needs root, tshark, tcpdump and ethtool (fails under CI=true without them). The cycle is
//! 16 ms with a data-hold time of 512 ms: the subject is function, not timing.

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

mod common;

use common::{Proc, FARM};
use pn_farm::status::DeviceView;
use pn_protocol::time::Instant as PnInstant;
use pn_protocol::wire::ethernet::MacAddr;
use pn_testkit::daemon::DeviceXml;
use pn_testkit::netns::{NetNs, Veth};
use pn_testkit::poll;
use serde_json::Value;

const CTL_IP: &str = "192.168.84.1/24";
const BASE: Ipv4Addr = Ipv4Addr::new(192, 168, 84, 10);
const HTTP: &str = "127.0.0.1:18850";

/// The `pn-controller` binary built next to `pn-farm` (`cargo build --workspace --bins`).
fn controller_bin() -> PathBuf {
    let p = Path::new(FARM).with_file_name("pn-controller");
    assert!(
        p.is_file(),
        "{} missing: build it with `cargo build -p pn-controller` (cargo test --workspace does)",
        p.display()
    );
    p
}

fn prerequisites() -> bool {
    pn_testkit::env::require_root()
        && pn_testkit::env::require_tshark()
        && pn_testkit::env::require(pn_testkit::env::has_tool("tcpdump"), "tcpdump on PATH")
        && pn_testkit::env::require(pn_testkit::env::has_tool("ethtool"), "ethtool on PATH")
}

fn xml() -> String {
    DeviceXml::new("unused")
        .ident("ORDER-B", "SN-B", 1, "V1.0.0")
        .product(None)
        .nic(None)
        .ip(BASE)
        .send_clock_ms(4)
        .to_xml()
}

fn farm_cmd(ns: &NetNs, nic: &str, cfg: &Path, n: usize, state: Option<&Path>) -> Command {
    let mut c = ns.command(FARM);
    c.args(["-i", nic, "--config"])
        .arg(cfg)
        .args(["--devices", &n.to_string(), "--name-prefix", "bin-dev-"])
        .args([
            "--ip-base",
            &BASE.to_string(),
            "--http",
            HTTP,
            "--no-realtime",
        ]);
    if let Some(d) = state {
        c.arg("--state-dir").arg(d);
    }
    c
}

fn http(ns: &NetNs, method: &str, path: &str, body: &str) -> Option<String> {
    common::http(ns, HTTP, method, path, body)
}

fn devices(ns: &NetNs) -> Option<Vec<DeviceView>> {
    common::devices(ns, HTTP)
}

fn wait_farm(ns: &NetNs, farm: &mut Proc, n: usize) -> Vec<DeviceView> {
    common::wait_farm(ns, HTTP, farm, n)
}

fn ctl(ns: &NetNs, nic: &str, args: &[&str]) -> Output {
    ns.command(controller_bin())
        .args(["-i", nic, "--json"])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run pn-controller")
}

fn json_lines(o: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

fn ok_json(o: &Output, what: &str) -> Vec<Value> {
    assert!(
        o.status.success(),
        "{what}: {}\n{}",
        String::from_utf8_lossy(&o.stderr),
        String::from_utf8_lossy(&o.stdout)
    );
    json_lines(o)
}

/// `(name, ip)` of every device DCP Identify finds, sorted by name.
fn discover(ns: &NetNs, nic: &str) -> Vec<(String, String)> {
    let o = ctl(ns, nic, &["discover", "--delay-factor", "5"]);
    let v = ok_json(&o, "discover");
    let mut out: Vec<(String, String)> = v[0]
        .as_array()
        .expect("array")
        .iter()
        .map(|d| {
            (
                d["nameOfStation"].as_str().unwrap_or_default().to_string(),
                d["ip"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    out.sort();
    out
}

/// Send one frame on `nic` inside `ns` from a raw socket.
fn send_raw(ns: &NetNs, nic: &str, frame: Vec<u8>) {
    let nic = nic.to_string();
    ns.enter(move || {
        let s = pn_device::stack::socket::PnSocket::open(&nic).expect("raw socket");
        s.send(&frame).expect("send");
    })
    .unwrap();
}

fn mac_of(ns: &NetNs, nic: &str) -> [u8; 6] {
    let nic = nic.to_string();
    ns.enter(move || {
        pn_device::stack::socket::PnSocket::open(&nic)
            .expect("raw socket")
            .mac()
    })
    .unwrap()
}

fn hex_of(s: &str) -> String {
    s.bytes().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn the_farm_binary_serves_three_devices_to_the_controller_binary_with_a_clean_capture() {
    if !prerequisites() {
        return;
    }
    let (ctl_ns, dev_ns, veth) =
        Veth::controller_device("pfb", Some(CTL_IP), None).expect("namespaces and veth pair");
    // Checksums computed in software: with TX offload a veth frame carries only the
    // pseudo-header sum, and tshark (udp.check_checksum) would call the controller's bad.
    ctl_ns
        .exec_ok(&["ethtool", "-K", &veth.a, "tx", "off"])
        .expect("ethtool");
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("dev.xml");
    std::fs::write(&cfg, xml()).unwrap();
    let pcap = dir.path().join("link.pcap");

    // The capture runs from before the farm starts (its first LLDPDUs and Hellos are in it).
    let mut tcpdump = ctl_ns.command("tcpdump");
    tcpdump
        .args([
            "-i",
            &veth.a,
            "-n",
            "-s",
            "0",
            "-U",
            "--immediate-mode",
            "-Z",
            "root",
            "-w",
        ])
        .arg(&pcap);
    let mut cap = Proc::spawn(tcpdump, "tcpdump");
    let listening = poll::until(Duration::from_secs(10), || {
        assert!(cap.running(), "tcpdump exited");
        std::fs::metadata(&pcap).is_ok_and(|m| m.len() >= 24)
    });
    assert!(listening, "tcpdump did not start");

    // With a standby sender whose grace is 1 us, it races the I/O loop for most slots (the
    // loop wakes more than 1 us after a deadline): the capture and the controller then see
    // both senders' frames, and a slot sent twice or a frame of the standby that tshark calls
    // malformed fails the test.
    let mut cmd = farm_cmd(&dev_ns, &veth.b, &cfg, 3, None);
    cmd.args(["--standby-cpu", "0", "--standby-grace-us", "1"]);
    let mut farm = Proc::spawn(cmd, "pn-farm");
    let views = wait_farm(&dev_ns, &mut farm, 3);
    // The status view says where the standby runs (it pins itself at start).
    let standby_cpu = || {
        http(&dev_ns, "GET", "/api/farm", "")
            .and_then(|r| serde_json::from_str::<Value>(common::body_of(&r)).ok())
            .map(|v| v["standbyCpu"].clone())
    };
    assert!(
        poll::until(Duration::from_secs(5), || standby_cpu()
            == Some(Value::from(0))),
        "/api/farm standbyCpu: {:?}",
        standby_cpu()
    );
    assert_eq!(views[0].name, "bin-dev-1");

    // DCP: every device answers with its own name and IP.
    let found = discover(&ctl_ns, &veth.a);
    assert_eq!(
        found,
        [
            ("bin-dev-1".to_string(), "192.168.84.10".to_string()),
            ("bin-dev-2".to_string(), "192.168.84.11".to_string()),
            ("bin-dev-3".to_string(), "192.168.84.12".to_string()),
        ]
    );

    // LLDP: the controller side's LLDPDU makes it every device's neighbour.
    let ctl_mac = mac_of(&ctl_ns, &veth.a);
    let plc = pn_protocol::machine::lldp::LldpAgent::new(
        MacAddr(ctl_mac),
        "plc-bin",
        Ipv4Addr::new(192, 168, 84, 1),
        "PLC".into(),
        1,
        PnInstant(0),
    );
    send_raw(&ctl_ns, &veth.a, plc.frame().expect("LLDPDU"));
    let neighbours = poll::until(Duration::from_secs(5), || {
        devices(&dev_ns).is_some_and(|v| {
            v.iter().all(|d| {
                d.lldp_neighbour
                    .as_ref()
                    .is_some_and(|n| n.station_name == "plc-bin")
                    && d.lldp_sent >= 1
            })
        })
    });
    assert!(neighbours, "{:?}", devices(&dev_ns));
    // PDPortDataReal (0x802A, port subslot 0x8001) reports it, read implicitly.
    let o = ctl(
        &ctl_ns,
        &veth.a,
        &[
            "read-record",
            "--station",
            "bin-dev-2",
            "--subslot",
            "0x8001",
            "--index",
            "0x802a",
        ],
    );
    let v = ok_json(&o, "read PDPortDataReal");
    let data = v[0]["dataHex"].as_str().unwrap_or_default();
    assert!(
        data.contains(&hex_of("plc-bin")) && data.contains(&hex_of("port-001")),
        "PDPortDataReal without the neighbour: {data}"
    );

    // Data exchange with each device, one controller run at a time.
    for k in 1..=3u8 {
        let name = format!("bin-dev-{k}");
        let body = format!("{{\"offset\":0,\"data\":\"e{k}090807\"}}");
        let r =
            http(&dev_ns, "POST", &format!("/api/devices/{name}/io"), &body).expect("status view");
        assert!(r.starts_with("HTTP/1.1 2"), "{r}");
        let mut run = ctl_ns.command(controller_bin());
        run.args(["-i", &veth.a, "--json", "connect-and-run", "--config"])
            .arg(&cfg)
            .args([
                "--station",
                &name,
                "--send-clock-ms",
                "4",
                "--reduction-ratio",
                "4",
            ])
            .args([
                "--data-hold-factor",
                "32",
                "--outputs",
                &format!("d{k}010203"),
            ])
            .args(["--duration", "3", "--refresh-ms", "200"]);
        let run = Proc::spawn(run, "pn-controller connect-and-run");
        let exchanged = poll::until(Duration::from_secs(10), || {
            devices(&dev_ns).is_some_and(|v| {
                let d = &v[usize::from(k) - 1];
                d.state == "DataExchange" && d.outputs_hex.starts_with(&format!("d{k}010203"))
            })
        });
        let out = run.stop_when_done();
        assert!(exchanged, "{name}: {:?}", devices(&dev_ns));
        let lines = ok_json(&out, "connect-and-run");
        let last = lines.last().expect("output");
        assert_eq!(last["end"], "released", "{last}");
        let inputs_seen = lines.iter().any(|l| {
            l["inputs"]["dataHex"]
                .as_str()
                .is_some_and(|h| h.starts_with(&format!("e{k}090807")))
        });
        assert!(
            inputs_seen,
            "{name}: the controller never saw the inputs: {lines:?}"
        );
        assert_eq!(last["status"]["watchdogExpiries"], 0, "{last}");
        assert_eq!(
            last["status"]["framesDuplicate"], 0,
            "a slot sent twice: {last}"
        );
    }
    let back_idle = poll::until(Duration::from_secs(5), || {
        devices(&dev_ns).is_some_and(|v| v.iter().all(|d| d.state == "Idle"))
    });
    assert!(back_idle, "{:?}", devices(&dev_ns));
    for d in devices(&dev_ns).unwrap() {
        assert_eq!(d.watchdog_trips, 0, "{d:?}");
        assert!(d.frames_received > 0 && d.frames_sent > 0, "{d:?}");
        assert!(d.standby_frames > 0, "the standby never sent: {d:?}");
    }

    let out = farm.stop();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = cap.stop();

    // Every frame of the link is clean, and every protocol the farm speaks is in it.
    let packets = pn_testkit::tshark::dissect_file(&pcap, &[]).expect("tshark");
    let mut seen = std::collections::BTreeSet::new();
    for (i, p) in packets.iter().enumerate() {
        p.assert_clean(&format!("frame {}", i + 1));
        let protos = p.protocols();
        for want in ["pn_dcp", "dcerpc", "pn_io", "pn_rt", "lldp", "arp"] {
            if protos.split(':').any(|x| x == want) {
                seen.insert(want);
            }
        }
    }
    assert_eq!(
        seen.len(),
        6,
        "protocols seen {seen:?} in {} frames",
        packets.len()
    );
    drop(veth);
}

#[test]
fn names_ips_and_im1_set_permanently_survive_a_farm_restart() {
    if !prerequisites() {
        return;
    }
    let (ctl_ns, dev_ns, veth) =
        Veth::controller_device("pfr", Some(CTL_IP), None).expect("namespaces and veth pair");
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("dev.xml");
    std::fs::write(&cfg, xml()).unwrap();
    let state = dir.path().join("state");

    let mut farm = Proc::spawn(farm_cmd(&dev_ns, &veth.b, &cfg, 3, Some(&state)), "pn-farm");
    let views = wait_farm(&dev_ns, &mut farm, 3);
    let mac2 = views[1].mac.clone();
    let mac3 = views[2].mac.clone();
    // Device 2: name and IP permanently; device 3: a name temporarily.
    let o = ctl(
        &ctl_ns,
        &veth.a,
        &["set-name", "--mac", &mac2, "valve-north", "--permanent"],
    );
    ok_json(&o, "set-name --permanent");
    let o = ctl(
        &ctl_ns,
        &veth.a,
        &["set-ip", "--mac", &mac2, "192.168.84.77", "--permanent"],
    );
    ok_json(&o, "set-ip --permanent");
    let o = ctl(&ctl_ns, &veth.a, &["set-name", "--mac", &mac3, "temp-name"]);
    ok_json(&o, "set-name (temporary)");
    let expected_before = vec![
        ("bin-dev-1".to_string(), "192.168.84.10".to_string()),
        ("temp-name".to_string(), "192.168.84.12".to_string()),
        ("valve-north".to_string(), "192.168.84.77".to_string()),
    ];
    assert_eq!(discover(&ctl_ns, &veth.a), expected_before);
    // I&M1 written to device 2 over an AR (explicit write, stored before it is answered).
    let mut im1 = String::from("002100380100");
    im1.push_str(&hex_of(&format!("{:<32}", "pump station")));
    im1.push_str(&hex_of(&format!("{:<22}", "hall 3")));
    let o = ctl(
        &ctl_ns,
        &veth.a,
        &[
            "write-record",
            "--config",
            cfg.to_str().unwrap(),
            "--station",
            "valve-north",
            "--send-clock-ms",
            "4",
            "--data-hold-factor",
            "32",
            "--index",
            "0xaff1",
            "--data",
            &im1,
        ],
    );
    ok_json(&o, "write I&M1");
    // One file per device, named by its MAC.
    let file2 = state.join(pn_farm::remanent::file_name(
        pn_farm::plant::parse_mac(&mac2).unwrap(),
    ));
    let stored: Value = serde_json::from_slice(&std::fs::read(&file2).unwrap()).unwrap();
    assert_eq!(stored["stationName"], "valve-north", "{stored}");
    assert_eq!(
        stored["im"]["tagFunction"],
        format!("{:<32}", "pump station"),
        "{stored}"
    );

    let out = farm.stop();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let mut farm = Proc::spawn(
        farm_cmd(&dev_ns, &veth.b, &cfg, 3, Some(&state)),
        "pn-farm (restarted)",
    );
    wait_farm(&dev_ns, &mut farm, 3);
    // The permanent name and IP are back; the temporary name is gone (erased: the device
    // comes up without a name, pn-device's rule), its IP is the configuration's.
    assert_eq!(
        discover(&ctl_ns, &veth.a),
        [
            (String::new(), "192.168.84.12".to_string()),
            ("bin-dev-1".to_string(), "192.168.84.10".to_string()),
            ("valve-north".to_string(), "192.168.84.77".to_string()),
        ]
    );
    // I&M1 reads back as written (implicit read).
    let o = ctl(
        &ctl_ns,
        &veth.a,
        &[
            "read-record",
            "--station",
            "valve-north",
            "--index",
            "0xaff1",
        ],
    );
    let v = ok_json(&o, "read I&M1");
    assert_eq!(v[0]["dataHex"].as_str(), Some(im1.as_str()), "{v:?}");
    let out = farm.stop();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    drop(veth);
}

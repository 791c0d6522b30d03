//! The `pn-controller` CLI as documented in the README, run inside the controller namespace:
//! DCP commands against the protocol-crate fake device (tests/common), connect-and-run,
//! read-record and write-record against the real pn-device daemon.

mod common;

use pn_protocol::wire::Emit;
use std::process::Output;

use common::device::{Rig, DEV_IP};
use common::{FakeConfig, FakeDevice, Lab};
use serde_json::Value;

fn cli(ns: &pn_testkit::netns::NetNs, args: &[&str]) -> Output {
    ns.command(env!("CARGO_BIN_EXE_pn-controller"))
        .args(args)
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

#[test]
fn dcp_commands() {
    if !pn_testkit::env::require_root() {
        return;
    }
    let lab = Lab::new("pcl");
    let ifname = lab.veth.b.clone();
    let dev = lab
        .dev
        .enter(move || {
            FakeDevice::start(
                &ifname,
                FakeConfig {
                    name: "cli-dev".into(),
                    vendor_id: 0x0493,
                    device_id: 2,
                    connect_status: None,
                    module_diff: false,
                    capture: false,
                },
            )
        })
        .unwrap();
    let i = lab.veth.a.as_str();
    // discover (JSON and text)
    let o = cli(
        &lab.ctl,
        &["-i", i, "--json", "discover", "--delay-factor", "5"],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v = json_lines(&o);
    assert_eq!(v[0][0]["nameOfStation"], "cli-dev", "{v:?}");
    assert_eq!(v[0][0]["ip"], DEV_IP_FAKE);
    let o = cli(&lab.ctl, &["-i", i, "discover", "--delay-factor", "5"]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("cli-dev") && text.contains("1 device(s)"),
        "{text}"
    );
    // set-name by station, set-ip / signal / reset by MAC
    let mac = dev.mac().to_string();
    let o = cli(
        &lab.ctl,
        &[
            "-i",
            i,
            "--json",
            "set-name",
            "--station",
            "cli-dev",
            "renamed",
            "--permanent",
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(json_lines(&o)[0]["ok"], true);
    let o = cli(
        &lab.ctl,
        &[
            "-i",
            i,
            "--json",
            "set-ip",
            "--mac",
            &mac,
            "10.77.0.9",
            "--mask",
            "255.255.0.0",
        ],
    );
    assert_eq!(json_lines(&o)[0]["ip"], "10.77.0.9");
    let o = cli(&lab.ctl, &["-i", i, "signal", "--mac", &mac]);
    assert!(o.status.success());
    let o = cli(
        &lab.ctl,
        &[
            "-i",
            i,
            "--json",
            "reset",
            "--mac",
            &mac,
            "--mode",
            "communication",
        ],
    );
    assert_eq!(json_lines(&o)[0]["mode"], 4);
    let sets = dev.seen().dcp_set;
    assert_eq!(sets.len(), 4);
    assert_eq!(sets[0].name_of_station(), Some(&b"renamed"[..]));
    // errors: exit code 1 and a JSON error object
    let o = cli(
        &lab.ctl,
        &["-i", i, "--json", "signal", "--station", "nobody-here"],
    );
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(json_lines(&o)[0]["ok"], false);
}

const DEV_IP_FAKE: &str = "10.77.0.2";

#[test]
fn connect_and_run_and_records_against_pn_device() {
    if !pn_testkit::env::require_root() {
        return;
    }
    let rig = Rig::start("pclr", 4);
    let i = rig.veth.a.clone();
    let xml = rig.xml.display().to_string();
    let ip = DEV_IP.to_string();
    let common = ["-i", i.as_str(), "--json"];
    let dev = [
        "--config",
        xml.as_str(),
        "--ip",
        ip.as_str(),
        "--send-clock-ms",
        "4",
        "--reduction-ratio",
        "1",
        "--data-hold-factor",
        "24",
    ];
    // connect-and-run: JSON lines with status, IO and events; outputs reach the device.
    let mut args: Vec<&str> = common.to_vec();
    args.push("connect-and-run");
    args.extend_from_slice(&dev);
    args.extend_from_slice(&[
        "--outputs",
        "c0ffee01",
        "--duration",
        "2",
        "--refresh-ms",
        "250",
    ]);
    let o = cli(&rig.ctl_ns, &args);
    assert!(
        o.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&o.stderr),
        rig.log()
    );
    let lines = json_lines(&o);
    assert!(lines.len() >= 4, "{lines:?}");
    let end = lines.last().unwrap();
    assert_eq!(
        end["end"], "released",
        "the last line says how it ended: {end}"
    );
    let last = lines
        .iter()
        .rev()
        .find(|l| l.get("outputsHex").is_some())
        .unwrap();
    assert_eq!(last["status"]["state"], "DataExchange", "{last}");
    assert_eq!(last["outputsHex"], "c0ffee01");
    assert_eq!(last["inputs"]["iopsHex"].as_str().map(|s| s.len()), Some(8));
    assert_eq!(
        rig.io()["inputHex"],
        "c0ffee01",
        "the device got our outputs"
    );
    // write-record (I&M1 with block header) then read-record inside an AR.
    let im1 = pn_protocol::wire::pnio::im::ImRecord::Im1(pn_protocol::wire::pnio::im::Im1 {
        tag_function: "cli tag".into(),
        tag_location: "cli loc".into(),
    })
    .to_bytes()
    .unwrap();
    let hexdata = hex::encode(&im1);
    let mut args: Vec<&str> = common.to_vec();
    args.push("write-record");
    args.extend_from_slice(&dev);
    args.extend_from_slice(&[
        "--slot",
        "0",
        "--subslot",
        "1",
        "--index",
        "0xAFF1",
        "--data",
        &hexdata,
    ]);
    let o = cli(&rig.ctl_ns, &args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(json_lines(&o)[0]["length"], im1.len());
    let mut args: Vec<&str> = common.to_vec();
    args.push("read-record");
    args.extend_from_slice(&dev);
    args.extend_from_slice(&["--slot", "0", "--subslot", "1", "--index", "0xAFF1"]);
    let o = cli(&rig.ctl_ns, &args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(json_lines(&o)[0]["dataHex"], hexdata);
    // discover and implicit read (DCP to find the device, Read Implicit without an AR).
    let o = cli(
        &rig.ctl_ns,
        &[
            "-i",
            i.as_str(),
            "--json",
            "discover",
            "--delay-factor",
            "5",
        ],
    );
    let v = json_lines(&o);
    assert_eq!(v[0][0]["nameOfStation"], common::device::STATION, "{v:?}");
    // Implicit reads by station name (DCP finds the device): I&M0, then the PDev reads of
    // docs/real-plc.md section 8 (subslot in hex).
    let read = |extra: &[&str]| {
        let mut args = vec![
            "-i",
            i.as_str(),
            "--json",
            "read-record",
            "--station",
            common::device::STATION,
        ];
        args.extend_from_slice(extra);
        let o = cli(&rig.ctl_ns, &args);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        hex::decode(json_lines(&o)[0]["dataHex"].as_str().unwrap()).unwrap()
    };
    let raw = read(&["--index", "0xAFF0"]);
    assert!(matches!(
        pn_protocol::wire::pnio::im::ImRecord::parse(&raw),
        Ok(pn_protocol::wire::pnio::im::ImRecord::Im0(_))
    ));
    assert_eq!(
        rig.http("GET", "/api/im", None)["im1TagFunction"]
            .as_str()
            .map(|s| s.trim_end().to_string()),
        Some("cli tag".into())
    );
    use pn_protocol::wire::pnio::pdev::PdPortDataReal;
    let port = PdPortDataReal::parse(&read(&[
        "--slot",
        "0",
        "--subslot",
        "0x8001",
        "--index",
        "0x802A",
    ]))
    .unwrap();
    assert_eq!(
        (port.subslot, port.own_port_id.as_str()),
        (0x8001, "port-001")
    );
    let all = read(&["--index", "0xF841"]);
    let blocks: Vec<_> = pn_protocol::wire::pnio::block::blocks(&all)
        .collect::<Result<_, _>>()
        .unwrap();
    // The interface and the port, each in a MultipleBlockHeader.
    assert_eq!(blocks.len(), 2);
    assert!(blocks.iter().all(|b| b.block_type() == 0x0400));
}

/// A Connect outside the cycles the device's configuration accepts (and its GSDML offers) is
/// refused on the wire with the PNIOStatus a standard device gives: DB 81 02 0B, faulty
/// IOCRBlockReq, field 11 ReductionRatio (p-net `pf_cmdev_check_iocr_param` compares
/// MinDeviceInterval with SendClockFactor × ReductionRatio there); the shortest accepted cycle
/// connects. `MinUpdateTimeUs` 4000: 2 ms (1 ms × 2) is refused, 4 ms (1 ms × 4) runs.
#[test]
fn connect_below_the_min_update_time_is_refused_on_the_wire() {
    if !pn_testkit::env::require_root() {
        return;
    }
    let rig = Rig::start_xml("pclm", |nic| {
        pn_testkit::daemon::DeviceXml::new(common::device::STATION)
            .nic(Some(nic))
            .ip(DEV_IP)
            .min_update_time_us(Some(4000))
            .to_xml()
    });
    let i = rig.veth.a.clone();
    let xml = rig.xml.display().to_string();
    let ip = DEV_IP.to_string();
    let run = |rr: &str| {
        cli(
            &rig.ctl_ns,
            &[
                "-i",
                i.as_str(),
                "--json",
                "connect-and-run",
                "--config",
                xml.as_str(),
                "--ip",
                ip.as_str(),
                "--send-clock-ms",
                "1",
                "--reduction-ratio",
                rr,
                "--data-hold-factor",
                "24",
                "--duration",
                "1",
            ],
        )
    };
    let o = run("2");
    assert_eq!(o.status.code(), Some(1), "{}", rig.log());
    let err = json_lines(&o)
        .iter()
        .find_map(|l| l["error"].as_str().map(str::to_string))
        .unwrap_or_default();
    assert!(
        err.contains("PNIOStatus DB 81 02 0B (Connect: faulty IOCRBlockReq: ReductionRatio)"),
        "{err}\n{}",
        String::from_utf8_lossy(&o.stdout)
    );
    assert_ne!(rig.status()["state"], "DataExchange");
    let o = run("4");
    assert!(
        o.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&o.stderr),
        rig.log()
    );
    assert_eq!(json_lines(&o).last().unwrap()["end"], "released");
}

/// The CLI as a tool an engineer stops with Ctrl-C: SIGINT and SIGTERM release the AR before
/// exiting (the device sees a release, not a watchdog trip); a second AR command while
/// connect-and-run holds the PNIO-CM port says why, DCP commands still work; a ModuleDiffBlock
/// with a wrong module exits with code 3 unless --accept-module-diff.
#[test]
fn signals_release_busy_port_and_module_diff() {
    if !pn_testkit::env::require_root() {
        return;
    }
    let rig = Rig::start("pcls", 4);
    let i = rig.veth.a.clone();
    let xml = rig.xml.display().to_string();
    let ip = DEV_IP.to_string();
    let dev_args = |xml: &str| -> Vec<String> {
        [
            "-i",
            i.as_str(),
            "--json",
            "connect-and-run",
            "--config",
            xml,
            "--ip",
            ip.as_str(),
            "--send-clock-ms",
            "4",
            "--reduction-ratio",
            "1",
            "--data-hold-factor",
            "24",
            "--refresh-ms",
            "200",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    };
    let wait = |what: &str, f: &dyn Fn() -> bool| {
        let end = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !f() {
            assert!(
                std::time::Instant::now() < end,
                "timed out: {what}\n{}",
                rig.log()
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    };
    for (sig, name) in [(libc::SIGINT, "SIGINT"), (libc::SIGTERM, "SIGTERM")] {
        let mut child = rig
            .ctl_ns
            .command(env!("CARGO_BIN_EXE_pn-controller"))
            .args(dev_args(&xml))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        wait("device DataExchange", &|| {
            rig.status()["state"] == "DataExchange"
        });
        if sig == libc::SIGINT {
            // A second AR command: the port is taken, and the message says by whom.
            let o = cli(
                &rig.ctl_ns,
                &dev_args(&xml)
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>(),
            );
            assert_eq!(o.status.code(), Some(1));
            let err = String::from_utf8_lossy(&o.stdout).to_string()
                + &String::from_utf8_lossy(&o.stderr);
            assert!(
                err.contains("already in use") && err.contains("another pn-controller"),
                "{err}"
            );
            // DCP beside it works.
            let o = cli(
                &rig.ctl_ns,
                &[
                    "-i",
                    i.as_str(),
                    "--json",
                    "discover",
                    "--delay-factor",
                    "5",
                ],
            );
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        }
        // SAFETY: signalling our own child process.
        unsafe {
            libc::kill(child.id() as i32, sig);
        }
        let st = child.wait().unwrap();
        assert_eq!(st.code(), Some(0), "{name}: exit {st}");
        let s = rig.status();
        assert_eq!(s["state"], "Aborted", "{name}: {s}");
        assert!(
            s["statusMessage"]
                .as_str()
                .unwrap_or("")
                .contains("released"),
            "{name}: the device saw a release: {s}"
        );
        assert_eq!(rig.diag()["watchdogTrips"], 0, "{name}");
    }

    // A wrong module in slot 1: exit 3, the AR released; --accept-module-diff runs.
    let wrong = rig.xml.with_file_name("wrong-module.xml");
    let text = std::fs::read_to_string(&rig.xml).unwrap();
    let changed = text.replace(r#"ModuleIdentNumber="0x30""#, r#"ModuleIdentNumber="0x31""#);
    assert_ne!(changed, text, "the test changes the module ident");
    std::fs::write(&wrong, changed).unwrap();
    let wrong = wrong.display().to_string();
    let mut args = dev_args(&wrong);
    args.extend(["--duration".to_string(), "1".to_string()]);
    let o = cli(
        &rig.ctl_ns,
        &args.iter().map(|s| s.as_str()).collect::<Vec<_>>(),
    );
    assert_eq!(
        o.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("wrong module") && out.contains("differ"),
        "{out}"
    );
    wait("the mismatching AR released", &|| {
        rig.status()["statusMessage"]
            .as_str()
            .is_some_and(|m| m.contains("released"))
            && rig.status()["state"] != "DataExchange"
    });
    args.push("--accept-module-diff".into());
    let o = cli(
        &rig.ctl_ns,
        &args.iter().map(|s| s.as_str()).collect::<Vec<_>>(),
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

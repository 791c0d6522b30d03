//! Interop: **profinet-py** (PyPI `profinet-py` 0.6.6), an independent PROFINET IO controller
//! written in Python that shares no code with this workspace, against a device of the
//! `pn-farm` binary: the same driver (`harness/tests/interop/profinet_py_driver.py`) and the
//! same checks as pn-device's interop test (`harness/tests/interop_profinet_py.rs`), so a farm
//! device is held to what a pn-device is held to.
//!
//! Rig: the farm (two devices, numbered copies of one configuration) in one namespace, the
//! driver in the other, a veth pair between. profinet-py finds the second device by its
//! NameOfStation (DCP Identify), sets a new IP over DCP, reads I&M0 (DeviceAccess AR), connects
//! (4 ms, DataHoldFactor 32: profinet-py's Python sender has gaps of tens of ms, see the pn-device
//! test), exchanges data while the test writes two input values through the farm's status view,
//! and releases. The first device must stay untouched (no AR, nothing sent). The farm runs a
//! standby sender racing its I/O loop (grace 1 us): profinet-py gets frames of both.
//!
//! Needs root and python3 with the `profinet` module; under CI=true a missing one fails.

mod common;

use std::io::Read;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread::JoinHandle;
use std::time::Duration;

use common::{Proc, FARM};
use pn_farm::status::DeviceView;
use pn_testkit::daemon::DeviceXml;
use pn_testkit::netns::{NetNs, Veth};
use pn_testkit::poll;
use serde_json::{json, Value};

const HTTP: &str = "127.0.0.1:18851";
const CTL_IP: &str = "192.168.87.1/24";
const BASE: Ipv4Addr = Ipv4Addr::new(192, 168, 87, 10);
/// The IP profinet-py sets over DCP.
const NEW_IP: Ipv4Addr = Ipv4Addr::new(192, 168, 87, 30);
const CYCLIC_S: f64 = 6.0;

const ORDER_ID: &str = "FARM-PY-1";
const SERIAL: &str = "SN-FARM";
const HW_REV: u16 = 5;
const SW_REV: &str = "V2.7.1";
const VENDOR_ID: u16 = 0x0493;
const DEVICE_ID: u16 = 0x0001;

/// Two values written on the farm device (PROFINET inputs) while profinet-py runs.
const IN_1: &str = "c0ffee02";
const IN_2: &str = "0badf00d";

fn driver_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../harness/tests/interop/profinet_py_driver.py")
}

fn python() -> String {
    std::env::var("PN_PYTHON").unwrap_or_else(|_| "python3".into())
}

/// Root and profinet-py; `false`: skip (never under CI, where a missing one panics).
fn prerequisites() -> bool {
    if !pn_testkit::env::require_root() {
        return false;
    }
    let ok = Command::new(python())
        .args(["-c", "import profinet"])
        .stdin(Stdio::null())
        .output()
        .is_ok_and(|o| o.status.success());
    pn_testkit::env::require(
        ok,
        "python3 with the profinet-py module (pip install profinet-py==0.6.6; or set PN_PYTHON)",
    )
}

/// The driver with its output collected by reader threads (the test polls the farm meanwhile).
struct Driver {
    child: Child,
    out: Option<JoinHandle<String>>,
    err: Option<JoinHandle<String>>,
}

impl Driver {
    fn spawn(ns: &NetNs, nic: &str, station: &str) -> Driver {
        let mut child = ns
            .command(python())
            .arg(driver_path())
            .args(["--iface", nic, "--station", station])
            .args(["--ip", &NEW_IP.to_string(), "--mask", "255.255.255.0"])
            .args(["--cycle-ms", "4", "--data-hold-factor", "32"])
            .args(["--duration", &CYCLIC_S.to_string()])
            .args(["--input-len", "4", "--output-len", "4"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn the profinet-py driver");
        let reader = |mut r: Box<dyn Read + Send>| {
            std::thread::spawn(move || {
                let mut s = String::new();
                let _ = r.read_to_string(&mut s);
                s
            })
        };
        let out = child.stdout.take().map(|o| reader(Box::new(o)));
        let err = child.stderr.take().map(|e| reader(Box::new(e)));
        Driver { child, out, err }
    }

    fn exited(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(Some(_)))
    }

    /// Wait for the exit (bounded), then (exit code, stdout, stderr).
    fn finish(&mut self, timeout: Duration) -> (Option<i32>, String, String) {
        let st = poll::some(timeout, || self.child.try_wait().ok().flatten());
        if st.is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        let join = |h: Option<JoinHandle<String>>| h.map(|h| h.join().unwrap_or_default());
        (
            st.and_then(|s| s.code()),
            join(self.out.take()).unwrap_or_default(),
            join(self.err.take()).unwrap_or_default(),
        )
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        if !self.exited() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn view(ns: &NetNs, name: &str) -> Option<DeviceView> {
    common::device(ns, HTTP, name)
}

fn hex_counter(hex: &str) -> Option<u32> {
    // The driver's output pattern: a5 + 24-bit big-endian counter.
    (hex.len() == 8 && hex.starts_with("a5"))
        .then(|| u32::from_str_radix(&hex[2..], 16).ok())
        .flatten()
}

/// The farm device's part while the driver runs: data exchange, the driver's outputs
/// advancing, two input values written and sent. Failures are collected.
fn exchange(ns: &NetNs, name: &str, drv: &mut Driver, failures: &mut Vec<String>) {
    let up = poll::until(Duration::from_secs(25), || {
        view(ns, name).is_some_and(|v| v.state == "DataExchange") || drv.exited()
    });
    if !up || drv.exited() {
        failures.push(format!(
            "the farm device did not reach DataExchange: {:?}",
            view(ns, name)
        ));
        return;
    }
    let mut counters: Vec<u32> = Vec::new();
    let advancing = poll::until(Duration::from_secs(5), || {
        if let Some(c) = view(ns, name).and_then(|v| hex_counter(&v.outputs_hex)) {
            if counters.last() != Some(&c) {
                counters.push(c);
            }
        }
        counters.len() >= 3
    });
    if !advancing || !counters.windows(2).all(|w| w[0] < w[1]) {
        failures.push(format!(
            "profinet-py's output pattern did not advance in the farm's outputsHex: {counters:?}"
        ));
    }
    for v in [IN_1, IN_2] {
        let body = json!({"offset": 0, "data": v}).to_string();
        let r = common::http(ns, HTTP, "POST", &format!("/api/devices/{name}/io"), &body);
        if !r.as_deref().is_some_and(|r| r.contains(r#""ok":true"#)) {
            failures.push(format!("POST io {v}: {r:?}"));
        }
        // Hold each value for a few of the device's frames, so one lost frame cannot hide it.
        let base = view(ns, name).map_or(0, |d| d.frames_sent);
        let sent = poll::until(Duration::from_secs(5), || {
            view(ns, name).is_some_and(|d| d.inputs_hex == v && d.frames_sent >= base + 5)
        });
        if !sent {
            failures.push(format!(
                "the farm device did not send {v}: {:?}",
                view(ns, name)
            ));
        }
    }
}

/// What profinet-py saw, against the configuration and the farm's numbering.
fn check_driver(r: &Value, name: &str, mac: &str, failures: &mut Vec<String>) {
    let mut check = |ok: bool, what: String| {
        if !ok {
            failures.push(what);
        }
    };
    let id = &r["identify"];
    check(
        id["name"] == name
            && id["mac"]
                .as_str()
                .is_some_and(|m| m.eq_ignore_ascii_case(mac))
            && id["vendorId"] == VENDOR_ID
            && id["deviceId"] == DEVICE_ID
            && id["deviceRoles"]
                .as_array()
                .is_some_and(|a| a.contains(&json!("IO-Device"))),
        format!("DCP Identify (farm device MAC {mac}): {id}"),
    );
    check(
        r["setIp"]["ok"] == true && r["identifyAfterSet"]["ip"] == NEW_IP.to_string(),
        format!(
            "DCP Set IP: {}, identify after: {}",
            r["setIp"], r["identifyAfterSet"]
        ),
    );
    // The farm numbers serial numbers per copy (pn_farm::plant::nth_serial): device 2.
    let serial = pn_farm::plant::nth_serial(SERIAL, 2);
    let im0 = &r["im0"];
    check(
        im0["ok"] == true
            && im0["vendorId"] == VENDOR_ID
            && im0["orderId"] == ORDER_ID
            && im0["serialNumber"] == serial.as_str()
            && im0["hardwareRevision"] == HW_REV
            && im0["softwareRevision"] == SW_REV
            && im0["imVersion"] == "1.1",
        format!("I&M0 differs ({ORDER_ID}/{serial}/{HW_REV}/{SW_REV}): {im0}"),
    );
    check(
        r["connect"]["ok"] == true && r["connect"]["appReadyConfirmed"] == true,
        format!("connect: {}", r["connect"]),
    );
    let cy = &r["cyclic"];
    check(
        cy["stateAtEnd"] == "running"
            && cy["framesReceived"].as_u64().unwrap_or(0) > 0
            && cy["framesInvalid"] == 0,
        format!("cyclic exchange: {cy}"),
    );
    let seen: Vec<&str> = cy["inputsSeen"]
        .as_array()
        .map(|a| a.iter().filter_map(|e| e["hex"].as_str()).collect())
        .unwrap_or_default();
    let (i1, i2) = (
        seen.iter().position(|h| *h == IN_1),
        seen.iter().position(|h| *h == IN_2),
    );
    check(
        matches!((i1, i2), (Some(a), Some(b)) if a < b) && cy["lastInputHex"] == IN_2,
        format!("inputs did not reach profinet-py in order ({IN_1}, {IN_2}): {seen:?}"),
    );
    check(
        r["rtaErrors"].as_array().is_some_and(Vec::is_empty),
        format!("ERR-RTA from the farm device: {}", r["rtaErrors"]),
    );
    let rel = &r["release"];
    check(
        rel["ok"] == true && rel["blockType"] == "0x8114" && rel["controlCommand"] == "0x0008",
        format!("Release: {rel}"),
    );
}

#[test]
fn profinet_py_identifies_sets_ip_reads_im0_exchanges_and_releases_a_farm_device() {
    if !prerequisites() {
        return;
    }
    for side in ["c", "d"] {
        pn_testkit::netns::remove_stale(&format!("fpy{side}"));
    }
    let (ctl_ns, dev_ns, veth) =
        Veth::controller_device("fpy", Some(CTL_IP), None).expect("namespaces and veth");
    let dir = tempfile::tempdir().expect("temp dir");
    let cfg = dir.path().join("device.xml");
    DeviceXml::new("unused")
        .ident(ORDER_ID, SERIAL, HW_REV, SW_REV)
        .nic(None)
        .ip(BASE)
        .send_clock_ms(1)
        .io(4, 4)
        .write(&cfg);
    let mut c = dev_ns.command(FARM);
    c.args(["-i", &veth.b, "--config"])
        .arg(&cfg)
        .args(["--devices", "2", "--name-prefix", "py-farm-"])
        .args([
            "--ip-base",
            &BASE.to_string(),
            "--http",
            HTTP,
            "--no-realtime",
        ])
        // The standby sender with a grace of 1 us races the I/O loop for most slots:
        // profinet-py receives both senders' frames.
        .args(["--standby-cpu", "0", "--standby-grace-us", "1"]);
    let mut farm = Proc::spawn(c, "pn-farm");
    let views = common::wait_farm(&dev_ns, HTTP, &mut farm, 2);
    let (first, second) = (views[0].name.clone(), views[1].name.clone());
    let mac = views[1].mac.clone();

    let mut failures = Vec::new();
    let mut drv = Driver::spawn(&ctl_ns, &veth.a, &second);
    exchange(&dev_ns, &second, &mut drv, &mut failures);
    let (code, out, err) = drv.finish(Duration::from_secs(CYCLIC_S as u64 + 60));
    let r: Value = serde_json::from_str(out.trim()).unwrap_or(Value::Null);
    if code != Some(0) || r["ok"] != true {
        failures.push(format!(
            "driver failed (exit {code:?}): errors {}",
            r["errors"]
        ));
    }
    check_driver(&r, &second, &mac, &mut failures);

    // After the release: the device is idle again, never tripped, kept the IP; the other
    // device saw nothing of it.
    let idle = poll::until(Duration::from_secs(5), || {
        view(&dev_ns, &second).is_some_and(|v| v.state == "Idle")
    });
    let d2 = view(&dev_ns, &second);
    if !idle || d2.as_ref().is_none_or(|v| v.watchdog_trips != 0) {
        failures.push(format!("after the release: {d2:?}"));
    }
    if d2.as_ref().is_none_or(|v| v.standby_frames == 0) {
        failures.push(format!("the standby sender never sent: {d2:?}"));
    }
    if d2.as_ref().is_some_and(|v| v.ip != NEW_IP.to_string()) {
        failures.push(format!(
            "the IP set over DCP is not the farm device's: {d2:?}"
        ));
    }
    let d1 = view(&dev_ns, &first);
    if d1
        .as_ref()
        .is_none_or(|v| v.state != "Idle" || v.frames_sent != 0 || v.ip != BASE.to_string())
    {
        failures.push(format!("the other farm device was touched: {d1:?}"));
    }
    let farm_out = farm.stop();
    assert!(
        failures.is_empty(),
        "{failures:#?}\ndriver stdout:\n{out}\ndriver stderr:\n{err}\nfarm stderr:\n{}",
        String::from_utf8_lossy(&farm_out.stderr)
    );
    drop(veth);
}

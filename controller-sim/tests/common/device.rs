//! The real pn-device daemon in one namespace, the controller library in another, a veth pair
//! between them. The daemon binary and its files come from `pn_testkit::daemon` (which builds
//! `pn-device` on first use, or takes `$PN_DEVICE_BIN`).

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use pn_controller::model::DeviceModel;
use pn_controller::{
    ArConfig, ArHandle, ArState, Controller, ControllerConfig, DeviceConfig, Error, Faults,
    RealtimeOptions,
};
use pn_testkit::daemon::{self as dk, DevLicence, DeviceXml, Launcher};
use pn_testkit::netns::{NetNs, Veth};
use serde_json::{json, Value};

pub const CTL_IP: Ipv4Addr = Ipv4Addr::new(192, 168, 78, 1);
pub const DEV_IP: Ipv4Addr = Ipv4Addr::new(192, 168, 78, 2);
pub const STATION: &str = "pnc-dev";

static N: AtomicU32 = AtomicU32::new(0);

pub fn bin() -> PathBuf {
    dk::device_bin()
}

/// Device configuration XML: DAP + slot 1 with 4 bytes each way (device terms: InputLength =
/// controller -> device).
pub fn config_xml(nic: &str, send_clock_ms: u16) -> String {
    config_xml_for(nic, send_clock_ms, STATION, DEV_IP)
}

/// Same layout with another station name and IP.
pub fn config_xml_for(nic: &str, send_clock_ms: u16, station: &str, ip: Ipv4Addr) -> String {
    DeviceXml::new(station)
        .ident("ORDER-7", "SN-7", 1, "V1.0.0")
        .product(None)
        .nic(Some(nic))
        .ip(ip)
        .send_clock_ms(send_clock_ms)
        .to_xml()
}

/// Write licence, settings and XML into a fresh temp dir and start the daemon in `dev_ns`.
pub fn spawn_daemon(
    dev_ns: &NetNs,
    nic: &str,
    send_clock_ms: u16,
    station: &str,
    ip: Ipv4Addr,
) -> (Child, PathBuf, PathBuf) {
    spawn_daemon_xml(dev_ns, nic, config_xml_for(nic, send_clock_ms, station, ip))
}

/// [`spawn_daemon`] with the configuration XML given.
pub fn spawn_daemon_xml(dev_ns: &NetNs, nic: &str, config: String) -> (Child, PathBuf, PathBuf) {
    spawn_daemon_with(dev_ns, nic, config, json!({}))
}

/// [`spawn_daemon_xml`] with `settings` merged over the tests' settings.
pub fn spawn_daemon_with(
    dev_ns: &NetNs,
    nic: &str,
    config: String,
    settings_extra: Value,
) -> (Child, PathBuf, PathBuf) {
    let dir = std::env::temp_dir().join(format!(
        "pnc-test-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let bin = bin();
    DevLicence::new("pn-controller tests", "pnc-1")
        .write(&dk::licence_tool_for(&bin), &dir.join(dk::LICENCE_FILE));
    let xml = dir.join("device.xml");
    std::fs::write(&xml, config).unwrap();
    let mut settings = dk::base_settings(&dir);
    dk::merge(
        &mut settings,
        json!({"Runtime": {"AutoStart": false}, "Timer": {"HighResolution": true}}),
    );
    dk::merge(&mut settings, settings_extra);
    dk::write_settings(&dir.join("settings.json"), &settings);
    let child = Launcher::new(dev_ns.name(), bin, dir.join("daemon.log"))
        .settings(dir.join("settings.json"))
        .config(&xml)
        .nic(nic)
        .spawn();
    (child, dir, xml)
}

/// Wait for the API of a daemon started by [`spawn_daemon`], then `POST /api/start`.
fn wait_and_start(ns: &NetNs, child: &mut Child, dir: &Path) {
    dk::wait_api(
        ns.name(),
        child,
        &dir.join("daemon.log"),
        Duration::from_secs(15),
    );
    let r = dk::api_json(ns.name(), "POST", "/api/start", None);
    assert!(
        r.as_ref().is_some_and(|r| r["ok"] == true),
        "start: {r:?}\n{}",
        dk::read_log(&dir.join("daemon.log"))
    );
}

/// Stop a daemon started by [`spawn_daemon`] and remove its directory.
fn stop_and_clean(child: &mut Child, dir: &Path) {
    dk::stop(child, Duration::from_secs(5));
    let _ = std::fs::remove_dir_all(dir);
}

/// Daemon + controller namespaces.
pub struct Rig {
    pub dev_ns: NetNs,
    pub ctl_ns: NetNs,
    pub veth: Veth,
    pub child: Child,
    pub dir: PathBuf,
    pub xml: PathBuf,
}

impl Rig {
    /// Start the daemon (device SendClock `send_clock_ms`) and `POST /api/start`.
    pub fn start(tag: &str, send_clock_ms: u16) -> Rig {
        Rig::start_xml(tag, |nic| config_xml(nic, send_clock_ms))
    }

    /// [`Rig::start`] with the configuration `xml(nic)` (e.g. [`config_xml`] with changes).
    pub fn start_xml(tag: &str, xml: impl FnOnce(&str) -> String) -> Rig {
        Rig::start_with(tag, xml, json!({}))
    }

    /// [`Rig::start_xml`] with `settings` merged over the tests' daemon settings.
    pub fn start_with(tag: &str, xml: impl FnOnce(&str) -> String, settings: Value) -> Rig {
        let (ctl_ns, dev_ns, veth) = Veth::controller_device(
            tag,
            Some(&format!("{CTL_IP}/24")),
            Some(&format!("{DEV_IP}/24")),
        )
        .expect("namespaces and veth pair");
        let config = xml(&veth.b);
        let (mut child, dir, xml) = spawn_daemon_with(&dev_ns, &veth.b, config, settings);
        wait_and_start(&dev_ns, &mut child, &dir);
        let rig = Rig {
            dev_ns,
            ctl_ns,
            veth,
            child,
            dir,
            xml,
        };
        rig.wait("state Initialized", Duration::from_secs(15), || {
            rig.status()["state"] == "Initialized"
        });
        rig
    }

    pub fn log(&self) -> String {
        dk::read_log(&self.dir.join("daemon.log"))
    }

    pub fn wait(&self, what: &str, timeout: Duration, f: impl FnMut() -> bool) {
        if !self.poll(timeout, f) {
            panic!("timed out waiting for {what}\ndaemon log:\n{}", self.log());
        }
    }

    /// Poll `f` until true or `timeout`; returns whether it became true.
    pub fn poll(&self, timeout: Duration, f: impl FnMut() -> bool) -> bool {
        pn_testkit::poll::until(timeout, f)
    }

    pub fn try_http(&self, method: &str, path: &str, body: Option<Value>) -> Option<Value> {
        dk::api_json(self.dev_ns.name(), method, path, body.as_ref())
    }

    pub fn http(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        dk::api_json_result(self.dev_ns.name(), method, path, body.as_ref()).unwrap_or_else(|e| {
            panic!(
                "{e}\ndaemon threads:\n{}daemon log:\n{}",
                dk::thread_report(self.child.id()),
                self.log()
            )
        })
    }

    pub fn status(&self) -> Value {
        self.http("GET", "/api/status", None)
    }
    pub fn diag(&self) -> Value {
        self.http("GET", "/api/diag", None)
    }
    pub fn io(&self) -> Value {
        self.http("GET", "/api/io", None)
    }

    /// Start a controller in the controller namespace (send clock `scf` x 31.25 µs).
    pub fn controller(&self, scf: u16) -> Controller {
        let ifname = self.veth.a.clone();
        self.ctl_ns
            .enter(move || {
                let mut c = ControllerConfig::new(&ifname);
                c.send_clock_factor = scf;
                // Opt-in real time, as the device does with Timer:HighResolution: the cyclic
                // and receive threads sleep almost all the time, so SCHED_FIFO cannot starve
                // the machine, and it keeps compiler load from delaying frames past the
                // data-hold time.
                c.realtime = RealtimeOptions {
                    fifo_priority: Some(40),
                    lock_memory: false,
                };
                Controller::start(c)
            })
            .unwrap()
            .expect("controller")
    }

    /// The device's model from its own XML.
    pub fn model(&self) -> DeviceModel {
        DeviceConfig::load(&self.xml).unwrap().model
    }

    /// Connect with reduction ratio `rr` and data-hold factor `dhf`.
    pub fn connect(
        &self,
        ctl: &Controller,
        rr: u16,
        dhf: u16,
        faults: Faults,
    ) -> Result<ArHandle, Error> {
        let mut c = ArConfig::new(self.model());
        c.device_ip = Some(DEV_IP);
        c.timing.reduction_ratio = rr;
        c.timing.watchdog_factor = dhf;
        c.timing.data_hold_factor = dhf;
        c.faults = faults;
        c.app_ready_timeout = Duration::from_secs(5);
        ctl.connect(c)
    }

    pub fn counter(&self, name: &str) -> i64 {
        self.diag()[name]
            .as_i64()
            .unwrap_or_else(|| panic!("diag lacks {name}: {}", self.diag()))
    }
}

impl Drop for Rig {
    fn drop(&mut self) {
        stop_and_clean(&mut self.child, &self.dir);
    }
}

/// One more daemon in its own namespace, for tests with several devices.
pub struct Daemon {
    pub ns: NetNs,
    pub child: Child,
    pub dir: PathBuf,
    pub xml: PathBuf,
}

impl Daemon {
    /// Start a daemon on `nic` in `ns` and `POST /api/start`.
    pub fn start(ns: NetNs, nic: &str, send_clock_ms: u16, station: &str, ip: Ipv4Addr) -> Daemon {
        let (mut child, dir, xml) = spawn_daemon(&ns, nic, send_clock_ms, station, ip);
        wait_and_start(&ns, &mut child, &dir);
        Daemon {
            ns,
            child,
            dir,
            xml,
        }
    }

    pub fn log(&self) -> String {
        dk::read_log(&self.dir.join("daemon.log"))
    }

    pub fn http(&self, method: &str, path: &str, body: Option<Value>) -> Option<Value> {
        dk::api_json(self.ns.name(), method, path, body.as_ref())
    }

    pub fn model(&self) -> DeviceModel {
        DeviceConfig::load(&self.xml).unwrap().model
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        stop_and_clean(&mut self.child, &self.dir);
    }
}

/// Connect to a fresh daemon and exchange data for `secs` seconds, checking both directions
/// every second and that no watchdog trips on either side; then release.
pub fn exchange(tag: &str, device_send_clock_ms: u16, scf: u16, rr: u16, dhf: u16, secs: u64) {
    if !pn_testkit::env::require_root() {
        return;
    }
    let rig = Rig::start(tag, device_send_clock_ms);
    let ctl = rig.controller(scf);
    let h = rig
        .connect(&ctl, rr, dhf, Faults::default())
        .unwrap_or_else(|e| panic!("connect: {e}\n{}", rig.log()));
    assert_eq!(h.state(), ArState::DataExchange);
    rig.wait("device DataExchange", Duration::from_secs(5), || {
        let s = rig.status();
        s["state"] == "DataExchange" && s["connected"] == true
    });
    // Both ends on one vCPU, so a hypervisor stall of a vCPU freezes both instead of looking
    // like a silent peer (pn_testkit::cpu explains; the device's stack tests do the same).
    pn_testkit::cpu::pin_process(rig.child.id(), pn_testkit::cpu::TEST_CPU);
    pn_testkit::cpu::pin_self(pn_testkit::cpu::TEST_CPU);
    let trips0 = rig.counter("watchdogTrips");
    let t0 = Instant::now();
    let mut round: u8 = 0;
    while t0.elapsed() < Duration::from_secs(secs) {
        round = round.wrapping_add(1);
        // Controller -> device: the device's I area.
        let out = [round, 0x11, 0x22, round ^ 0xFF];
        h.set_outputs(0, &out).unwrap();
        let want = hex::encode(out);
        let ok = rig.poll(Duration::from_secs(2), || {
            rig.io()["inputHex"].as_str() == Some(want.as_str())
        });
        assert!(
            ok,
            "outputs {want} not at the device: io {} status {:?} diag {}\n{}",
            rig.io(),
            h.status(),
            rig.diag(),
            rig.log()
        );
        // Device -> controller: the device's Q area.
        let inp = [0xA0, round, 0x5A, 0x00];
        let r = rig.http(
            "POST",
            "/api/io",
            Some(serde_json::json!({"offset": 0, "data": hex::encode(inp)})),
        );
        assert_eq!(r["connected"], true, "{r}");
        assert!(
            rig.poll(Duration::from_secs(2), || h.inputs().data == inp),
            "inputs {:?} want {:?}",
            h.inputs(),
            inp
        );
        let st = h.status();
        assert_eq!(st.state, ArState::DataExchange, "{st:?}");
        assert_eq!(st.watchdog_expiries, 0, "{st:?}");
        std::thread::sleep(Duration::from_millis(900));
    }
    let st = h.status();
    let s = rig.status();
    let d = rig.diag();
    assert_eq!(s["state"], "DataExchange", "{s}");
    assert_eq!(s["connected"], true);
    assert_eq!(
        d["watchdogTrips"].as_i64(),
        Some(trips0),
        "device watchdog tripped: {d}"
    );
    assert_eq!(st.watchdog_expiries, 0);
    assert!(
        h.inputs().iops.iter().all(|&b| b == 0x80),
        "{:?}",
        h.inputs()
    );
    let io = rig.io();
    assert_eq!(
        io["inputIopsHex"].as_str().map(|s| s.to_ascii_lowercase()),
        Some("80".into()),
        "{io}"
    );
    eprintln!(
        "{tag}: {st:?}\ntick stats {:?}\ndevice diag {d}",
        ctl.tick_stats()
    );
    h.release().unwrap();
    rig.wait(
        "device leaves DataExchange after Release",
        Duration::from_secs(5),
        || rig.status()["connected"] == false,
    );
}

/// 60 s; `PNC_SOAK_S` overrides it for local debugging only.
pub fn soak_secs() -> u64 {
    std::env::var("PNC_SOAK_S")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(60)
}

//! The real pn-device daemon in one namespace, the controller library in another, a veth pair
//! between them. The daemon binary is `target/debug/pn-device` (`cargo build -p pn-device`).

use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use pn_controller::model::DeviceModel;
use pn_controller::{
    ArConfig, ArHandle, ArState, Controller, ControllerConfig, DeviceConfig, Error, Faults,
    RealtimeOptions,
};
use pn_testkit::netns::{NetNs, Veth};
use serde_json::{json, Value};

pub const CTL_IP: Ipv4Addr = Ipv4Addr::new(192, 168, 78, 1);
pub const DEV_IP: Ipv4Addr = Ipv4Addr::new(192, 168, 78, 2);
pub const STATION: &str = "pnc-dev";

static N: AtomicU32 = AtomicU32::new(0);

pub fn bin() -> PathBuf {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/debug/pn-device");
    assert!(
        p.exists(),
        "{} missing: build it first with `cargo build -p pn-device`",
        p.display()
    );
    p
}

/// Device configuration XML: DAP + slot 1 with 4 bytes each way (device terms: InputLength =
/// controller -> device).
pub fn config_xml(nic: &str, send_clock_ms: u16) -> String {
    config_xml_for(nic, send_clock_ms, STATION, DEV_IP)
}

/// Same layout with another station name and IP.
pub fn config_xml_for(nic: &str, send_clock_ms: u16, station: &str, ip: Ipv4Addr) -> String {
    format!(
        r#"<PnDeviceConfiguration>
  <StationName>{station}</StationName><DeviceName>pn-device</DeviceName>
  <VendorID>0x0493</VendorID><DeviceID>0x0001</DeviceID>
  <Identification><OrderId>ORDER-7</OrderId><SerialNumber>SN-7</SerialNumber>
    <HardwareRevision>1</HardwareRevision><SoftwareRevision>V1.0.0</SoftwareRevision></Identification>
  <Network><InterfaceName>{nic}</InterfaceName></Network>
  <IpAddress>{ip}</IpAddress><SubnetMask>255.255.255.0</SubnetMask><Gateway>0.0.0.0</Gateway>
  <SendClock>{send_clock_ms}</SendClock>
  <SlotLayout>
    <Module Slot="0" ModuleIdentNumber="1">
      <Submodule Subslot="1" SubmoduleIdentNumber="1"/>
      <Submodule Subslot="0x8000" SubmoduleIdentNumber="2"/>
      <Submodule Subslot="0x8001" SubmoduleIdentNumber="3"/>
    </Module>
    <Module Slot="1" ModuleIdentNumber="0x30">
      <Submodule Subslot="1" SubmoduleIdentNumber="1" InputLength="4" OutputLength="4"/>
    </Module>
  </SlotLayout>
</PnDeviceConfiguration>"#
    )
}

fn write_licence(path: &Path) {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../device/testdata/dev-licence-private-key.txt"),
    )
    .unwrap();
    let line = text
        .lines()
        .find(|l| !l.starts_with('#') && !l.trim().is_empty())
        .unwrap();
    let key = pn_device::licence::parse_private_key(line).unwrap();
    let now = pn_device::util::unix_now();
    let p = pn_device::licence::Payload {
        licensee: "pn-controller tests".into(),
        product: pn_device::licence::PRODUCT.into(),
        serial: "pnc-1".into(),
        issued_at: now - 60,
        not_before: now - 60,
        not_after: now + 3600,
        binding: pn_device::licence::Binding {
            machine_id: None,
            mac: None,
            any: Some(true),
        },
    };
    std::fs::write(path, pn_device::licence::issue(&key, &p)).unwrap();
}

/// Write licence, settings and XML into a fresh temp dir and start the daemon in `dev_ns`.
pub fn spawn_daemon(
    dev_ns: &NetNs,
    nic: &str,
    send_clock_ms: u16,
    station: &str,
    ip: Ipv4Addr,
) -> (Child, PathBuf, PathBuf) {
    let dir = std::env::temp_dir().join(format!(
        "pnc-test-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    write_licence(&dir.join("licence.json"));
    let xml = dir.join("device.xml");
    std::fs::write(&xml, config_xml_for(nic, send_clock_ms, station, ip)).unwrap();
    let settings = json!({
        "Runtime": {"AutoStart": false},
        "Paths": {"PersistenceDir": dir.join("persist").display().to_string()},
        "Licence": {"CertificatePath": dir.join("licence.json").display().to_string()},
        "Timer": {"HighResolution": true},
    });
    std::fs::write(dir.join("settings.json"), settings.to_string()).unwrap();
    let log = std::fs::File::create(dir.join("daemon.log")).unwrap();
    let child = dev_ns
        .command(bin())
        .arg("--settings")
        .arg(dir.join("settings.json"))
        .arg("--config")
        .arg(&xml)
        .env("VENDOR_PNET_NIC", nic)
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .expect("spawn pn-device");
    (child, dir, xml)
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
        let ctl_ns = NetNs::new(&format!("{tag}c")).expect("ns");
        let dev_ns = NetNs::new(&format!("{tag}d")).expect("ns");
        let veth = Veth::new(tag, &ctl_ns, &dev_ns).expect("veth");
        ctl_ns
            .exec_ok(&["ip", "addr", "add", &format!("{CTL_IP}/24"), "dev", &veth.a])
            .unwrap();
        dev_ns
            .exec_ok(&["ip", "addr", "add", &format!("{DEV_IP}/24"), "dev", &veth.b])
            .unwrap();
        let (child, dir, xml) = spawn_daemon(&dev_ns, &veth.b, send_clock_ms, STATION, DEV_IP);
        let rig = Rig {
            dev_ns,
            ctl_ns,
            veth,
            child,
            dir,
            xml,
        };
        rig.wait("the API", Duration::from_secs(15), || {
            rig.try_http("GET", "/api/info", None).is_some()
        });
        let r = rig.http("POST", "/api/start", None);
        assert_eq!(r["ok"], true, "start: {r}\n{}", rig.log());
        rig.wait("state Initialized", Duration::from_secs(15), || {
            rig.status()["state"] == "Initialized"
        });
        rig
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("daemon.log")).unwrap_or_default()
    }

    pub fn wait(&self, what: &str, timeout: Duration, mut f: impl FnMut() -> bool) {
        let end = Instant::now() + timeout;
        while !f() {
            if Instant::now() > end {
                panic!("timed out waiting for {what}\ndaemon log:\n{}", self.log());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Poll `f` until true or `timeout`; returns whether it became true.
    pub fn poll(&self, timeout: Duration, mut f: impl FnMut() -> bool) -> bool {
        let end = Instant::now() + timeout;
        loop {
            if f() {
                return true;
            }
            if Instant::now() > end {
                return false;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn try_http(&self, method: &str, path: &str, body: Option<Value>) -> Option<Value> {
        let (m, p) = (method.to_string(), path.to_string());
        self.dev_ns
            .enter(move || {
                let b = body.map(|b| b.to_string().into_bytes());
                let addr: SocketAddr = "127.0.0.1:18840".parse().unwrap();
                pn_testkit::http::request(addr, &m, &p, &[], b.as_deref(), Duration::from_secs(5))
                    .ok()
                    .filter(|r| r.status == 200)
                    .and_then(|r| serde_json::from_slice(&r.body).ok())
            })
            .ok()
            .flatten()
    }

    pub fn http(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        self.try_http(method, path, body)
            .unwrap_or_else(|| panic!("{method} {path} failed\n{}", self.log()))
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
        // SAFETY: signal to our own child (the `ip netns exec` wrapper execs the daemon).
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let end = Instant::now() + Duration::from_secs(5);
        while Instant::now() < end {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
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
        let (child, dir, xml) = spawn_daemon(&ns, nic, send_clock_ms, station, ip);
        let d = Daemon {
            ns,
            child,
            dir,
            xml,
        };
        let end = Instant::now() + Duration::from_secs(15);
        while d.http("GET", "/api/info", None).is_none() {
            assert!(Instant::now() < end, "daemon API: {}", d.log());
            std::thread::sleep(Duration::from_millis(20));
        }
        let r = d.http("POST", "/api/start", None).expect("start");
        assert_eq!(r["ok"], true, "{r}");
        d
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("daemon.log")).unwrap_or_default()
    }

    pub fn http(&self, method: &str, path: &str, body: Option<Value>) -> Option<Value> {
        let (m, p) = (method.to_string(), path.to_string());
        self.ns
            .enter(move || {
                let b = body.map(|b| b.to_string().into_bytes());
                let addr: SocketAddr = "127.0.0.1:18840".parse().unwrap();
                pn_testkit::http::request(addr, &m, &p, &[], b.as_deref(), Duration::from_secs(5))
                    .ok()
                    .filter(|r| r.status == 200)
                    .and_then(|r| serde_json::from_slice(&r.body).ok())
            })
            .ok()
            .flatten()
    }

    pub fn model(&self) -> DeviceModel {
        DeviceConfig::load(&self.xml).unwrap().model
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        // SAFETY: signal to our own child.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let end = Instant::now() + Duration::from_secs(5);
        while Instant::now() < end {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
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

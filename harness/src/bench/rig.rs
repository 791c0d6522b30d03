//! The benchmark rig: the lab (device namespace with the real `pn-device` daemon, controller
//! namespace, veth), the controller simulator in the controller namespace, the wire recorder on
//! the controller's end of the veth, and helpers to run the bare sender, CPU load and wrk.
//! Everything is torn down on drop (also on Ctrl-C: the benchmark loops check [`super::stopped`]
//! and return, so the drops run).

use super::pnet::{self, Pnet, PnetPaths};
use super::raw;
use super::recorder::Recorder;
use crate::lab::{Lab, LabOptions};
use crate::peer::DEV_IP;
use pn_controller::{
    ArConfig, ArHandle, ArState, Controller, ControllerConfig, DeviceConfig, RealtimeOptions,
};
use serde_json::{json, Value as Json};
use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Device configuration of the benchmarks: DAP + one module with 8 bytes each way, 1 ms send
/// clock, the placeholder vendor ID of every shipped configuration, and cycles down to 125 us
/// accepted (`MinUpdateTimeUs`; the benchmarks measure 125 us to 1 ms).
pub fn config_xml(station: &str, ip: std::net::Ipv4Addr, nic: &str) -> String {
    lab_device(station, ip, nic, 1)
        .min_update_time_us(Some(125))
        .to_xml()
}

/// The lab's device (benchmarks, demo): DAP + one module with 8 bytes each way, the
/// placeholder vendor ID of every shipped configuration, send clock `send_clock_ms`.
pub fn lab_device_xml(
    station: &str,
    ip: std::net::Ipv4Addr,
    nic: &str,
    send_clock_ms: u16,
) -> String {
    lab_device(station, ip, nic, send_clock_ms).to_xml()
}

fn lab_device(
    station: &str,
    ip: std::net::Ipv4Addr,
    nic: &str,
    send_clock_ms: u16,
) -> pn_testkit::daemon::DeviceXml {
    pn_testkit::daemon::DeviceXml {
        vendor_id: 0xFFFF,
        ..pn_testkit::daemon::DeviceXml::new(station)
    }
    .ident("pn-device", "0000000001", 1, "V1.0.0")
    .product(None)
    .nic(Some(nic))
    .ip(ip)
    .send_clock_ms(send_clock_ms)
    .io(8, 8)
}

/// A child process killed and reaped on drop.
pub struct ChildGuard(pub Option<Child>);

impl ChildGuard {
    pub fn pid(&self) -> Option<u32> {
        self.0.as_ref().map(|c| c.id())
    }
    /// Wait for the exit (bounded) and return stdout.
    pub fn finish(mut self, within: Duration) -> String {
        let Some(mut c) = self.0.take() else {
            return String::new();
        };
        let end = Instant::now() + within;
        while Instant::now() < end {
            if let Ok(Some(_)) = c.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = c.kill();
        match c.wait_with_output() {
            Ok(o) => String::from_utf8_lossy(&o.stdout).into_owned(),
            Err(_) => String::new(),
        }
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        if let Some(mut c) = self.0.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// A binary next to the running executable (`target/<profile>/NAME`).
pub fn sibling_binary(name: &str) -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    for dir in exe.ancestors().skip(1).take(3) {
        let c = dir.join(name);
        if c.is_file() {
            return Ok(c);
        }
    }
    Err(format!(
        "{name} not found near {} (cargo build --release -p pn-lab)",
        exe.display()
    ))
}

/// Busy threads at normal priority (the "other core loaded" condition).
pub struct CpuLoad {
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl CpuLoad {
    pub fn start(n: usize) -> CpuLoad {
        CpuLoad::start_on(n, Vec::new())
    }

    /// `n` busy threads restricted to `cpus` (none: anywhere).
    pub fn start_on(n: usize, cpus: Vec<usize>) -> CpuLoad {
        let stop = Arc::new(AtomicBool::new(false));
        let threads = (0..n)
            .map(|_| {
                let s = stop.clone();
                let cpus = cpus.clone();
                // Named, so that the benches' per-thread CPU tables keep the load apart.
                std::thread::Builder::new()
                    .name("bench-load".into())
                    .spawn(move || {
                        if !cpus.is_empty() {
                            if let Err(e) = super::raw::set_affinity(0, &cpus) {
                                eprintln!("load thread: {e}");
                            }
                        }
                        let mut x: u64 = 1;
                        while !s.load(Ordering::Relaxed) {
                            for _ in 0..10_000 {
                                x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
                            }
                            std::hint::black_box(x);
                        }
                    })
            })
            .filter_map(Result::ok)
            .collect();
        CpuLoad { stop, threads }
    }
}

impl Drop for CpuLoad {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// The rig.
pub struct Rig {
    pub ar: Option<ArHandle>,
    pub ctl: Option<Controller>,
    pub rec: Option<Recorder>,
    /// The p-net device of `--pnet` (before `lab`: its process and namespace go first).
    pub pnet: Option<Pnet>,
    pub lab: Lab,
    /// The controller's and the recorder's interface: the lab's veth end, or the bridge of
    /// [`Rig::attach_pnet`].
    pub ctl_nic: String,
    pub xml: String,
    pub dev_pid: u32,
    /// SendClockFactor the running controller was started with.
    pub ctl_scf: u16,
}

impl Rig {
    /// Lab with the device started (slave auto-started, Initialized), recorder running.
    pub fn start(hires: bool) -> Result<Rig, String> {
        Rig::start_with(hires, json!({}))
    }

    /// [`Rig::start`] with the daemon settings' `Cyclic` object `cyclic` (`--standby`).
    pub fn start_with(hires: bool, cyclic: serde_json::Value) -> Result<Rig, String> {
        if !pn_testkit::env::is_root() {
            return Err("the benchmarks need root (namespaces, raw sockets)".into());
        }
        let opts = LabOptions {
            capture: false,
            auto_start: true,
            config_xml: Some(config_xml("pn-bench", DEV_IP, "${nic}")),
            settings: Some(json!({
                "Timer": { "HighResolution": hires },
                "Logging": { "Filter": "warn" },
                "Cyclic": cyclic,
            })),
            ..Default::default()
        };
        let lab = Lab::start(opts)?;
        let xml = lab.config_text();
        let ctl_nic = lab.controller_nic().to_string();
        let mut rig = Rig {
            ar: None,
            ctl: None,
            rec: None,
            pnet: None,
            lab,
            ctl_nic,
            xml,
            dev_pid: 0,
            ctl_scf: 0,
        };
        let info = rig.get("/api/info")?;
        rig.dev_pid = info["pid"].as_u64().unwrap_or(0) as u32;
        let end = Instant::now() + Duration::from_secs(20);
        loop {
            let s = rig.get("/api/status")?;
            if s["state"] == "Initialized" {
                break;
            }
            if Instant::now() > end {
                return Err(format!(
                    "device not Initialized: {s}\n{}",
                    rig.lab.device_log()
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        rig.rec = Some(Recorder::start(rig.lab.ns_ctl.path(), &rig.ctl_nic)?);
        Ok(rig)
    }

    /// Put the controller's end on a bridge and start p-net on a second port of it (before
    /// the first connect): the controller and the recorder move to the bridge.
    pub fn attach_pnet(&mut self, paths: &PnetPaths) -> Result<(), String> {
        self.disconnect();
        self.disconnect_pnet();
        if let Some(c) = self.ctl.take() {
            c.shutdown();
        }
        self.rec.take();
        let br = pnet::bridge_controller_side(&self.lab)?;
        self.pnet = Some(Pnet::start(&self.lab.ns_ctl, &br, paths)?);
        self.rec = Some(Recorder::start(self.lab.ns_ctl.path(), &br)?);
        self.ctl_nic = br;
        Ok(())
    }

    /// Connect (or reconnect) p-net's AR with the same timing as the device's.
    pub fn connect_pnet(&mut self, period_us: u64, dhf: u16) -> Result<ArHandle, String> {
        let (scf, rr) = timing(period_us);
        self.ensure_controller(scf)?;
        self.disconnect_pnet();
        let ctl = self.ctl.as_ref().ok_or("no controller")?;
        let p = self.pnet.as_mut().ok_or("no p-net")?;
        p.connect(ctl, scf, rr, dhf)
    }

    pub fn disconnect_pnet(&mut self) {
        if let Some(p) = self.pnet.as_mut() {
            p.disconnect();
        }
    }

    pub fn rec(&self) -> &Recorder {
        self.rec.as_ref().expect("recorder")
    }

    pub fn get(&self, path: &str) -> Result<Json, String> {
        let r = self.lab.http("GET", path, &[], None)?;
        serde_json::from_slice(&r.body).map_err(|e| format!("GET {path}: {e}"))
    }

    pub fn post(&self, path: &str, body: Json) -> Result<Json, String> {
        let hdr = vec![("Content-Type".to_string(), "application/json".to_string())];
        let r = self
            .lab
            .http("POST", path, &hdr, Some(body.to_string().into_bytes()))?;
        serde_json::from_slice(&r.body).map_err(|e| format!("POST {path}: {e}"))
    }

    /// Switch the device's high-resolution timer.
    pub fn set_hires(&self, on: bool) -> Result<(), String> {
        let r = self.post("/api/high-resolution-timer", json!({ "enable": on }))?;
        if r["ok"] == false {
            return Err(format!("high-resolution-timer: {r}"));
        }
        Ok(())
    }

    /// (Re)start the controller with `scf` when it differs from the running one.
    fn ensure_controller(&mut self, scf: u16) -> Result<(), String> {
        if self.ctl.is_some() && self.ctl_scf == scf {
            return Ok(());
        }
        self.disconnect();
        self.disconnect_pnet();
        if let Some(c) = self.ctl.take() {
            c.shutdown();
        }
        let nic = self.ctl_nic.clone();
        let ctl = self
            .lab
            .ns_ctl
            .enter(move || {
                let mut c = ControllerConfig::new(&nic);
                c.send_clock_factor = scf;
                c.realtime = RealtimeOptions {
                    fifo_priority: Some(40),
                    lock_memory: false,
                };
                Controller::start(c)
            })?
            .map_err(|e| format!("controller start: {e}"))?;
        self.ctl = Some(ctl);
        self.ctl_scf = scf;
        Ok(())
    }

    /// Connect an AR with cycle `period_us` (a multiple of 31.25 us) and DataHoldFactor `dhf`.
    pub fn connect(&mut self, period_us: u64, dhf: u16) -> Result<ArHandle, String> {
        let (scf, rr) = timing(period_us);
        self.ensure_controller(scf)?;
        self.disconnect();
        let model = DeviceConfig::parse(&self.xml)
            .map_err(|e| format!("device model: {e}"))?
            .model;
        let mut c = ar_config(model, scf, rr, dhf);
        c.device_ip = Some(DEV_IP);
        let h = self
            .ctl
            .as_ref()
            .ok_or("no controller")?
            .connect(c)
            .map_err(|e| format!("connect: {e}\n{}", self.lab.device_log()))?;
        let st = h.wait_state(|s| *s == ArState::DataExchange, Duration::from_secs(5));
        if st != ArState::DataExchange {
            return Err(format!("AR not in DataExchange: {st:?}"));
        }
        // Probe the first 4 bytes of slot 1's data in the device's frames.
        if let Some(d) = h.layout().input.data.iter().find(|d| d.slot == 1) {
            self.rec().set_probe(usize::from(d.frame_offset));
        }
        self.ar = Some(h.clone());
        Ok(h)
    }

    pub fn disconnect(&mut self) {
        end_ar(self.ar.take());
    }

    /// Device diagnostic counters (`GET /api/diag`).
    pub fn diag(&self) -> Json {
        self.get("/api/diag").unwrap_or(Json::Null)
    }

    /// Start the bare sender in the device namespace on the device's NIC. With p-net on the
    /// bridge its frames go to the controller's MAC, not to everyone (p-net would receive
    /// them: the device does not).
    pub fn bare_sender(&self, period_us: u64, seconds: u64) -> Result<ChildGuard, String> {
        self.bare_sender_prio(period_us, seconds, 60)
    }

    /// The bare sender at SCHED_FIFO `prio`.
    pub fn bare_sender_prio(
        &self,
        period_us: u64,
        seconds: u64,
        prio: i32,
    ) -> Result<ChildGuard, String> {
        let dst = match (&self.pnet, &self.ctl) {
            (Some(_), Some(c)) => Some(c.interface().mac.to_string()),
            _ => None,
        };
        bare_sender_in(
            &self.lab.ns_dev,
            self.lab.nic(),
            dst.as_deref(),
            period_us,
            seconds,
            prio,
        )
    }

    /// With p-net attached and the controller up: a bare sender beside p-net, one SCHED_FIFO
    /// priority below it (as `--bare-prio 59` is below the device's cyclic thread).
    pub fn pnet_bare_sender(&self, period_us: u64, seconds: u64) -> Result<ChildGuard, String> {
        let (Some(p), Some(c)) = (&self.pnet, &self.ctl) else {
            return Err("no p-net or no controller".into());
        };
        p.bare_sender(
            &c.interface().mac.to_string(),
            period_us,
            seconds,
            (p.prio() - 1).max(1),
        )
    }

    /// wrk against the device API inside the device namespace.
    pub fn wrk(&self, url: &str, conns: u32, seconds: u64) -> Result<ChildGuard, String> {
        wrk_in(&self.lab.ns_dev, url, conns, seconds)
    }
}

/// `pn-bare-sender` in `ns` on `iface` (to `dst`, else broadcast) every `period_us` for
/// `seconds` at SCHED_FIFO `prio`.
pub fn bare_sender_in(
    ns: &pn_testkit::netns::NetNs,
    iface: &str,
    dst: Option<&str>,
    period_us: u64,
    seconds: u64,
    prio: i32,
) -> Result<ChildGuard, String> {
    let mut cmd = ns.command(sibling_binary("pn-bare-sender")?);
    if let Some(d) = dst {
        cmd.args(["--dst", d]);
    }
    let c = cmd
        .args(["--fifo", &prio.to_string(), "--iface", iface])
        .args(["--period-us", &period_us.to_string()])
        .args(["--duration-s", &seconds.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("pn-bare-sender in {}: {e}", ns.name()))?;
    Ok(ChildGuard(Some(c)))
}

/// Run wrk inside `ns`.
pub fn wrk_in(
    ns: &pn_testkit::netns::NetNs,
    url: &str,
    conns: u32,
    seconds: u64,
) -> Result<ChildGuard, String> {
    let c = ns
        .command("wrk")
        .args([
            "-t2",
            &format!("-c{conns}"),
            &format!("-d{seconds}s"),
            "--latency",
            url,
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("wrk (apt-get install -y wrk): {e}"))?;
    Ok(ChildGuard(Some(c)))
}

/// "Requests/sec:" of wrk's output.
pub fn wrk_rps(out: &str) -> Option<f64> {
    out.lines()
        .find(|l| l.trim_start().starts_with("Requests/sec:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// Non-2xx responses reported by wrk.
pub fn wrk_non2xx(out: &str) -> u64 {
    out.lines()
        .find(|l| l.contains("Non-2xx"))
        .and_then(|l| l.split_whitespace().last()?.parse().ok())
        .unwrap_or(0)
}

/// The benchmarks' AR: SendClockFactor `scf` x ReductionRatio `rr`, DataHoldFactor and
/// WatchdogFactor `dhf`, 5 s for ApplicationReady.
pub fn ar_config(model: pn_controller::DeviceModel, scf: u16, rr: u16, dhf: u16) -> ArConfig {
    let mut c = ArConfig::new(model);
    c.timing.send_clock_factor = scf;
    c.timing.reduction_ratio = rr;
    c.timing.data_hold_factor = dhf;
    c.timing.watchdog_factor = dhf;
    c.app_ready_timeout = Duration::from_secs(5);
    c
}

/// End an AR: released when in data exchange, else aborted.
pub fn end_ar(ar: Option<ArHandle>) {
    if let Some(a) = ar {
        if a.state() == ArState::DataExchange {
            let _ = a.release();
        } else {
            a.abort();
        }
    }
}

/// (SendClockFactor, ReductionRatio) of a cycle of `period_us` (a multiple of 31.25 us):
/// SendClockFactor up to 128 (4 ms), the rest as ReductionRatio (power of two).
pub fn timing(period_us: u64) -> (u16, u16) {
    let units = (period_us * 1000 / 31_250).max(1);
    let (mut scf, mut rr) = (units, 1u64);
    while scf > 128 && scf % 2 == 0 {
        scf /= 2;
        rr *= 2;
    }
    (scf as u16, rr as u16)
}

impl Drop for Rig {
    fn drop(&mut self) {
        self.disconnect();
        self.disconnect_pnet();
        if let Some(c) = self.ctl.take() {
            c.shutdown();
        }
        self.rec.take();
        // The lab (device, namespaces) drops after this.
    }
}

/// CPU use in percent of one core between two tick readings over `secs`.
pub fn cpu_pct(before: Option<u64>, after: Option<u64>, secs: f64) -> Option<f64> {
    let (b, a) = (before?, after?);
    Some(a.saturating_sub(b) as f64 / raw::ticks_per_s() as f64 / secs.max(1e-9) * 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrk_output_parsing() {
        let out = "Running 2s test\n  Latency ...\n  1000 requests in 2.00s\n  Non-2xx or 3xx responses: 7\nRequests/sec:  12345.67\nTransfer/sec: 1MB\n";
        assert_eq!(wrk_rps(out), Some(12345.67));
        assert_eq!(wrk_non2xx(out), 7);
        assert_eq!(wrk_rps("nothing"), None);
    }

    /// The benchmark configuration (built with the testkit's `DeviceXml`) loads in the daemon
    /// with what the benchmarks rely on.
    #[test]
    fn bench_configuration_loads_in_the_daemon() {
        let ip = std::net::Ipv4Addr::new(192, 168, 78, 2);
        let c = pn_device_formats::config::RuntimeConfig::parse(
            &config_xml("pn-bench", ip, "pnb0"),
            "bench",
        )
        .expect("bench configuration");
        assert_eq!(c.station_name, "pn-bench");
        assert_eq!(
            c.vendor_id,
            pn_device_formats::config::PLACEHOLDER_VENDOR_ID
        );
        assert_eq!((c.interface_name.as_str(), c.ip), ("pnb0", ip));
        assert_eq!(c.send_clock_ms, 1);
        assert_eq!(c.min_device_interval, 4, "125 us");
        assert_eq!((c.input_len, c.output_len), (8, 8));
    }
}

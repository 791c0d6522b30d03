//! The device side of `pn-lab bench scale`: either N `pn-device` processes, each in its own
//! namespace behind a veth on the controller's bridge, or one `pn-farm` process emulating the N
//! devices on one veth (`--farm`). The measurement code asks this side only for what both
//! have: the devices' IPs and configurations (the controller's model), the processes (CPU,
//! threads, memory), a namespace and NIC for the bare sender, and the watchdog trips (count
//! and times).

use super::parse_rfc3339_ns;
use crate::bench::raw;
use crate::bench::rig::{config_xml, sibling_binary, ChildGuard};
use crate::lab::{device_binary, write_licence, Licence, API};
use pn_testkit::netns::{NetNs, Veth};
use serde_json::json;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

/// Where the farm's status view listens inside its namespace.
const FARM_HTTP: &str = "127.0.0.1:18850";

/// Devices a `pn-device` process each (their namespaces cost kernel memory and set-up time).
pub const MAX_DAEMONS: usize = 200;
/// Devices of one farm.
pub const MAX_FARM: usize = 1024;

/// One device as the controller sees it.
pub struct Target {
    pub ip: Ipv4Addr,
    /// The device's configuration XML (the controller builds its model from it).
    pub xml: String,
}

/// A device process in its namespace (a daemon, or the farm).
struct Host {
    // Drop order: process, then the link, then the namespace.
    _proc: ChildGuard,
    _veth: Veth,
    ns: NetNs,
    nic: String,
    pid: u32,
    log: PathBuf,
}

impl Host {
    /// Starts `cmd` (built with `ns.command`) with its output in the file `log`.
    fn spawn(
        mut cmd: std::process::Command,
        ns: NetNs,
        veth: &Veth,
        log: PathBuf,
        what: &str,
    ) -> Result<Host, String> {
        let f = std::fs::File::create(&log).map_err(|e| e.to_string())?;
        let child = cmd
            .stdin(Stdio::null())
            .stdout(f.try_clone().map_err(|e| e.to_string())?)
            .stderr(f)
            .spawn()
            .map_err(|e| format!("{what}: {e}"))?;
        Ok(Host {
            pid: child.id(),
            _proc: ChildGuard(Some(child)),
            _veth: veth.clone(),
            nic: veth.b.clone(),
            ns,
            log,
        })
    }
}

enum Kind {
    Daemons(Vec<Host>),
    /// The farm and its number of devices.
    Farm(Host, usize),
}

pub struct Side {
    kind: Kind,
    pub targets: Vec<Target>,
}

/// The IP of device `i` (0-based) on the bench's /16.
fn device_ip(i: usize) -> Ipv4Addr {
    Ipv4Addr::from(u32::from(Ipv4Addr::new(10, 77, 1, 10)) + i as u32)
}

impl Side {
    /// N `pn-device` processes, each in a namespace of its own on the bridge `br` of `ctl_ns`.
    pub fn daemons(
        n: usize,
        dir: &Path,
        ctl_ns: &NetNs,
        br: &str,
        hires: bool,
        cyclic: &serde_json::Value,
    ) -> Result<Side, String> {
        let bin = device_binary()?;
        write_licence(&dir.join("licence.json"), &Licence::Valid)?;
        let mut devs = Vec::new();
        let mut targets = Vec::new();
        for i in 0..n {
            if super::stopped() {
                return Err("interrupted".into());
            }
            let ns = NetNs::new("bsd")?;
            let v = Veth::new("bs", ctl_ns, &ns)?;
            ctl_ns.exec_ok(&["ip", "link", "set", &v.a, "master", br])?;
            let ip = device_ip(i);
            ns.exec_ok(&["ip", "addr", "add", &format!("{ip}/16"), "dev", &v.b])?;
            let sub = dir.join(format!("d{i}"));
            std::fs::create_dir_all(sub.join("persist")).map_err(|e| e.to_string())?;
            let xml = config_xml(&format!("bench-dev-{i}"), ip, &v.b);
            std::fs::write(sub.join("config.xml"), &xml).map_err(|e| e.to_string())?;
            let settings = json!({
                "Network": { "DefaultInterfaceName": v.b },
                "Paths": {
                    "RuntimeConfig": sub.join("config.xml").display().to_string(),
                    "PersistenceDir": sub.join("persist").display().to_string(),
                },
                "Licence": { "CertificatePath": dir.join("licence.json").display().to_string() },
                "Runtime": { "AutoStart": true },
                "Timer": { "HighResolution": hires },
                "Logging": { "Filter": "warn" },
                "Cyclic": cyclic,
            });
            std::fs::write(sub.join("settings.json"), settings.to_string())
                .map_err(|e| e.to_string())?;
            let mut cmd = ns.command(&bin);
            cmd.arg("--settings")
                .arg(sub.join("settings.json"))
                .env_remove("VENDOR_PNET_NIC");
            devs.push(Host::spawn(
                cmd,
                ns,
                &v,
                sub.join("device.log"),
                "pn-device",
            )?);
            targets.push(Target { ip, xml });
        }
        Ok(Side {
            kind: Kind::Daemons(devs),
            targets,
        })
    }

    /// One `pn-farm` process with N numbered copies of the lab's device on one veth.
    pub fn farm(
        n: usize,
        dir: &Path,
        ctl_ns: &NetNs,
        br: &str,
        rx: super::super::FarmRx,
        cyclic: &serde_json::Value,
    ) -> Result<Side, String> {
        let bin = sibling_binary("pn-farm")?;
        let ns = NetNs::new("bsf")?;
        let v = Veth::new("bf", ctl_ns, &ns)?;
        ctl_ns.exec_ok(&["ip", "link", "set", &v.a, "master", br])?;
        // The device copies answer ARP for their own addresses; the farm's NIC has none.
        let base = device_ip(0);
        let config = dir.join("farm.xml");
        std::fs::write(&config, config_xml("bench-dev-1", base, &v.b))
            .map_err(|e| e.to_string())?;
        let mut cmd = ns.command(&bin);
        cmd.args(["--interface", &v.b, "--devices", &n.to_string()])
            .arg("--config")
            .arg(&config)
            .args([
                "--name-prefix",
                "bench-dev-",
                "--ip-base",
                &base.to_string(),
            ])
            .args(["--http", FARM_HTTP, "--rx", rx.arg()])
            // `--standby`: the daemons' `Cyclic` settings, as the farm's options.
            .args(farm_standby_args(cyclic))
            // Plain log lines: the trip times are read from them.
            .env("NO_COLOR", "1")
            .env("RUST_LOG", "info");
        let host = Host::spawn(cmd, ns, &v, dir.join("farm.log"), "pn-farm")?;
        // Copy k (1-based) is named PREFIX k with IP base + k - 1 (pn-farm --help).
        let targets = (0..n)
            .map(|i| Target {
                ip: device_ip(i),
                xml: config_xml(&format!("bench-dev-{}", i + 1), device_ip(i), &v.b),
            })
            .collect();
        Ok(Side {
            kind: Kind::Farm(host, n),
            targets,
        })
    }

    /// Waits until every device can be connected (daemons: `Initialized`; the farm: its view
    /// lists all N devices).
    pub fn wait_ready(&self) -> Result<(), String> {
        let ready = |i: usize| match &self.kind {
            Kind::Daemons(d) => {
                http_get(&d[i].ns, API, "/api/status").is_some_and(|s| s["state"] == "Initialized")
            }
            Kind::Farm(f, n) => {
                http_get(&f.ns, FARM_HTTP, "/api/devices")
                    .and_then(|v| v.as_array().map(|a| a.len()))
                    == Some(*n)
            }
        };
        for i in 0..self.hosts().len() {
            let end = Instant::now() + Duration::from_secs(60);
            while !ready(i) {
                if super::stopped() {
                    return Err("interrupted".into());
                }
                if Instant::now() > end {
                    return Err(format!(
                        "device side {i} not ready within 60 s; its log ends:\n{}",
                        self.log_tail(i)
                    ));
                }
                super::nap(Duration::from_millis(50));
            }
        }
        Ok(())
    }

    /// Receive packet steering on every device veth: frames the devices receive are processed
    /// on `dev_cpus`, frames the bridge receives from them on `ctl_cpus`.
    pub fn steer_rx(
        &self,
        ctl_ns: &NetNs,
        dev_cpus: &[usize],
        ctl_cpus: &[usize],
    ) -> Result<(), String> {
        for h in self.hosts() {
            raw::set_rps(&h.ns, &h.nic, dev_cpus)?;
            raw::set_rps(ctl_ns, &h._veth.a, ctl_cpus)?;
        }
        Ok(())
    }

    /// The device processes.
    fn hosts(&self) -> Vec<&Host> {
        match &self.kind {
            Kind::Daemons(d) => d.iter().collect(),
            Kind::Farm(f, _) => vec![f],
        }
    }

    /// The last lines of the log of device process `i`.
    fn log_tail(&self, i: usize) -> String {
        let log = &self.hosts()[i].log;
        let text = std::fs::read_to_string(log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(10)..].join("\n")
    }

    /// The process ids of the device processes.
    pub fn pids(&self) -> Vec<u32> {
        self.hosts().iter().map(|h| h.pid).collect()
    }

    /// Where the bare sender runs: the namespace and NIC of the first device.
    pub fn bare_host(&self) -> (&NetNs, &str) {
        let h = self.hosts()[0];
        (&h.ns, &h.nic)
    }

    /// Frames the daemons' standby senders sent so far (`stackStandbyFrames`; 0 for the farm,
    /// which has none).
    pub fn standby_frames(&self) -> i64 {
        match &self.kind {
            Kind::Daemons(d) => d
                .iter()
                .filter_map(|d| http_get(&d.ns, API, "/api/diag"))
                .map(|v| v["stackStandbyFrames"].as_i64().unwrap_or(0))
                .sum(),
            Kind::Farm(f, _) => http_get(&f.ns, FARM_HTTP, "/api/devices")
                .and_then(|v| v.as_array().cloned())
                .unwrap_or_default()
                .iter()
                .map(|d| d["standbyFrames"].as_i64().unwrap_or(0))
                .sum(),
        }
    }

    /// The devices' watchdog trips so far (from their own counters).
    pub fn watchdog_trips(&self) -> i64 {
        let trips = |v: Option<serde_json::Value>, key: &str| -> i64 {
            v.map_or(0, |j| j[key].as_i64().unwrap_or(0))
        };
        match &self.kind {
            Kind::Daemons(d) => d
                .iter()
                .map(|d| trips(http_get(&d.ns, API, "/api/diag"), "watchdogTrips"))
                .sum(),
            Kind::Farm(f, _) => http_get(&f.ns, FARM_HTTP, "/api/devices")
                .and_then(|v| v.as_array().cloned())
                .unwrap_or_default()
                .into_iter()
                .map(|d| trips(Some(d), "watchdogTrips"))
                .sum(),
        }
    }

    /// The devices' log lines that contain `needle`, with their times (CLOCK_REALTIME ns).
    pub fn log_lines(&self, needle: &str) -> Vec<(u64, String)> {
        self.hosts()
            .into_iter()
            .filter_map(|h| std::fs::read_to_string(&h.log).ok())
            .flat_map(|l| lines_with(&l, needle))
            .collect()
    }

    /// CLOCK_REALTIME ns of every watchdog trip the devices logged (one per trip).
    pub fn trip_times(&self) -> Vec<u64> {
        let per_device = matches!(self.kind, Kind::Daemons(_));
        self.hosts()
            .into_iter()
            .filter_map(|h| std::fs::read_to_string(&h.log).ok())
            .flat_map(|l| {
                let mut t = trip_times(&l);
                // A daemon's trip writes several lines (alarm, AR end): one time per 100 ms.
                // The farm writes one line per trip and device, and two devices may trip
                // together: keep them all.
                if per_device {
                    t.sort_unstable();
                    t.dedup_by(|b, a| *b < *a + 100_000_000);
                }
                t
            })
            .collect()
    }

    /// The largest resident set of the device processes, and the devices per process.
    pub fn rss_max_kb(&self) -> (u64, usize) {
        let max = self
            .pids()
            .into_iter()
            .filter_map(crate::bench::raw::vm_rss_kb)
            .max()
            .unwrap_or(0);
        let per = match &self.kind {
            Kind::Daemons(_) => 1,
            Kind::Farm(_, n) => *n,
        };
        (max, per)
    }
}

fn http_get(ns: &NetNs, addr: &'static str, path: &'static str) -> Option<serde_json::Value> {
    ns.enter(move || {
        let a: SocketAddr = addr.parse().ok()?;
        let r =
            pn_testkit::http::request(a, "GET", path, &[], None, Duration::from_secs(5)).ok()?;
        serde_json::from_slice(&r.body).ok()
    })
    .ok()
    .flatten()
}

/// CLOCK_REALTIME ns of the tracing timestamps (`2026-11-23T22:10:00.123456Z`) of the lines of
/// `log` that report a watchdog trip of the device itself (the daemon's WARN line, the farm's
/// "AR ended" line: both say the trip in the protocol crate's words, `watchdog: no ...`; an AR
/// the controller's watchdog ended is logged with the controller's ERR-RTA and is not one).
pub(super) fn trip_times(log: &str) -> Vec<u64> {
    log.lines()
        .map(strip_ansi)
        .filter(|l| l.contains("watchdog: no "))
        .filter_map(|l| parse_rfc3339_ns(l.split_whitespace().next()?))
        .collect()
}

/// The lines of `log` that contain `needle`, with the CLOCK_REALTIME ns of their tracing
/// timestamps (colour sequences removed).
pub(super) fn lines_with(log: &str, needle: &str) -> Vec<(u64, String)> {
    log.lines()
        .map(strip_ansi)
        .filter(|l| l.contains(needle))
        .filter_map(|l| Some((parse_rfc3339_ns(l.split_whitespace().next()?)?, l)))
        .collect()
}

/// A log line without terminal colour sequences (`ESC [ ... m`), in case a logger colours
/// its output although it goes to a file.
fn strip_ansi(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for d in chars.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// pn-farm's options for the daemons' `Cyclic` settings of `--standby` (`StandbyCpu` -1: none;
/// `StandbyGraceUs` 0: the default grace).
pub(super) fn farm_standby_args(cyclic: &serde_json::Value) -> Vec<String> {
    let mut a = Vec::new();
    if let Some(cpu) = cyclic["StandbyCpu"].as_i64().filter(|c| *c >= 0) {
        a.extend(["--standby-cpu".to_string(), cpu.to_string()]);
        if let Some(g) = cyclic["StandbyGraceUs"].as_u64().filter(|g| *g > 0) {
            a.extend(["--standby-grace-us".to_string(), g.to_string()]);
        }
    }
    a
}

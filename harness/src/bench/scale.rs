//! `pn-lab bench scale`: one controller process (the controller library in this process, one
//! raw socket, one cyclic thread) driving N devices, each a separate `pn-device` process in its
//! own namespace, joined by a bridge in the controller namespace. The bare sender runs in the
//! first device namespace beside that device. Reported: per-device interval statistics on the
//! wire (worst and median), watchdog trips on both sides, and the bare sender's gaps.

use super::recorder::{Kind, Recorder};
use super::rig::{config_xml, cpu_pct, sibling_binary, ChildGuard};
use super::stats::{intervals, IntervalStats};
use super::{nap, raw, stopped, write_json, Opts};
use crate::lab::{device_binary, write_licence, Licence, API};
use pn_controller::{
    ArConfig, ArHandle, ArState, Controller, ControllerConfig, DeviceConfig, RealtimeOptions,
};
use pn_testkit::netns::{NetNs, Veth};
use serde_json::json;
use std::net::Ipv4Addr;
use std::process::Stdio;
use std::time::{Duration, Instant};

struct Dev {
    // Drop order: process, then the link, then the namespace.
    _proc: ChildGuard,
    _veth: Veth,
    ns: NetNs,
    ip: Ipv4Addr,
    xml: String,
    nic: String,
    pid: u32,
}

fn http_get(ns: &NetNs, path: &'static str) -> Option<serde_json::Value> {
    ns.enter(move || {
        let r = pn_testkit::http::request(
            API.parse().expect("addr"),
            "GET",
            path,
            &[],
            None,
            Duration::from_secs(5),
        )
        .ok()?;
        serde_json::from_slice(&r.body).ok()
    })
    .ok()
    .flatten()
}

#[derive(Debug, serde::Serialize)]
pub struct ScaleResult {
    pub devices: usize,
    pub connected: usize,
    pub period_us: u64,
    pub seconds: u64,
    pub dhf: u16,
    pub hires: bool,
    pub worst: IntervalStats,
    pub median_dev_p99_us: f64,
    pub per_device: Vec<IntervalStats>,
    pub controller_stream: IntervalStats,
    pub bare: IntervalStats,
    pub device_watchdog_trips: i64,
    pub controller_watchdog_expiries: u64,
    pub ars_not_in_data_exchange: usize,
    pub total_gaps_over_3: u64,
    pub devices_total_cpu_pct: f64,
    pub this_process_cpu_pct: Option<f64>,
    pub devices_rss_kb_max: u64,
    pub recorder_drops: u64,
    pub loadavg_before: f64,
    pub setup_seconds: f64,
}

pub fn run(opts: &Opts) -> Result<(), String> {
    let n: usize = opts.num("devices", 64)?;
    let period_us: u64 = opts.num("period-us", 1000)?;
    let seconds: u64 = opts.num("seconds", 30)?;
    let dhf: u16 = opts.num("dhf", 3)?;
    // The high-resolution timer busy-spins ~80 us per cycle in every device: 64 devices at
    // 1 ms would need 5 cores for the spinning alone. Off by default here.
    let hires = opts.str("hires") == Some("on");
    if !(1..=200).contains(&n) {
        return Err("--devices 1..=200".into());
    }
    if !pn_testkit::env::is_root() {
        return Err("needs root".into());
    }
    println!("machine: {}", raw::machine());
    let loadavg_before = raw::loadavg1();
    let setup0 = Instant::now();
    let bin = device_binary()?;
    let dir = tempfile::Builder::new()
        .prefix("pn-bench-scale-")
        .tempdir()
        .map_err(|e| e.to_string())?;
    write_licence(&dir.path().join("licence.json"), &Licence::Valid)?;
    let ctl_ns = NetNs::new("bsc")?;
    let br = pn_testkit::netns::unique_name("bsbr");
    ctl_ns.exec_ok(&["ip", "link", "add", &br, "type", "bridge"])?;
    ctl_ns.exec_ok(&["ip", "link", "set", &br, "up"])?;
    ctl_ns.exec_ok(&["ip", "addr", "add", "10.77.0.1/16", "dev", &br])?;
    let mut devs: Vec<Dev> = Vec::new();
    for i in 0..n {
        if stopped() {
            return Err("interrupted".into());
        }
        let ns = NetNs::new("bsd")?;
        let v = Veth::new("bs", &ctl_ns, &ns)?;
        ctl_ns.exec_ok(&["ip", "link", "set", &v.a, "master", &br])?;
        let ip = Ipv4Addr::new(10, 77, 1 + (i / 200) as u8, 10 + (i % 200) as u8);
        ns.exec_ok(&["ip", "addr", "add", &format!("{ip}/16"), "dev", &v.b])?;
        let sub = dir.path().join(format!("d{i}"));
        std::fs::create_dir_all(sub.join("persist")).map_err(|e| e.to_string())?;
        let xml = config_xml(&format!("bench-dev-{i}"), ip, &v.b);
        std::fs::write(sub.join("config.xml"), &xml).map_err(|e| e.to_string())?;
        let settings = json!({
            "Network": { "DefaultInterfaceName": v.b },
            "Paths": {
                "RuntimeConfig": sub.join("config.xml").display().to_string(),
                "PersistenceDir": sub.join("persist").display().to_string(),
            },
            "Licence": { "CertificatePath": dir.path().join("licence.json").display().to_string() },
            "Runtime": { "AutoStart": true },
            "Timer": { "HighResolution": hires },
            "Logging": { "Filter": "warn" },
        });
        std::fs::write(sub.join("settings.json"), settings.to_string())
            .map_err(|e| e.to_string())?;
        let log = std::fs::File::create(sub.join("device.log")).map_err(|e| e.to_string())?;
        let child = ns
            .command(&bin)
            .arg("--settings")
            .arg(sub.join("settings.json"))
            .env_remove("VENDOR_PNET_NIC")
            .stdin(Stdio::null())
            .stdout(log.try_clone().map_err(|e| e.to_string())?)
            .stderr(log)
            .spawn()
            .map_err(|e| format!("pn-device: {e}"))?;
        let pid = child.id();
        devs.push(Dev {
            _proc: ChildGuard(Some(child)),
            _veth: v.clone(),
            nic: v.b.clone(),
            ns,
            ip,
            xml,
            pid,
        });
    }
    // All devices Initialized.
    for (i, d) in devs.iter().enumerate() {
        let end = Instant::now() + Duration::from_secs(60);
        loop {
            if stopped() {
                return Err("interrupted".into());
            }
            if http_get(&d.ns, "/api/status").is_some_and(|s| s["state"] == "Initialized") {
                break;
            }
            if Instant::now() > end {
                return Err(format!("device {i} not Initialized within 60 s"));
            }
            nap(Duration::from_millis(50));
        }
    }
    let rec = Recorder::start(ctl_ns.path(), &br)?;
    let units = (period_us * 1000 / 31_250).max(1) as u16;
    let brc = br.clone();
    let ctl = ctl_ns
        .enter(move || {
            let mut c = ControllerConfig::new(&brc);
            c.send_clock_factor = units;
            c.realtime = RealtimeOptions {
                fifo_priority: Some(40),
                lock_memory: false,
            };
            Controller::start(c)
        })?
        .map_err(|e| format!("controller: {e}"))?;
    struct Ars(Vec<ArHandle>, Option<Controller>);
    impl Drop for Ars {
        fn drop(&mut self) {
            for a in self.0.drain(..) {
                if a.state() == ArState::DataExchange {
                    let _ = a.release();
                } else {
                    a.abort();
                }
            }
            if let Some(c) = self.1.take() {
                c.shutdown();
            }
        }
    }
    let mut ars = Ars(Vec::new(), Some(ctl));
    for (i, d) in devs.iter().enumerate() {
        if stopped() {
            return Err("interrupted".into());
        }
        let model = DeviceConfig::parse(&d.xml)
            .map_err(|e| format!("model: {e}"))?
            .model;
        let mut c = ArConfig::new(model);
        c.device_ip = Some(d.ip);
        c.timing.send_clock_factor = units;
        c.timing.reduction_ratio = 1;
        c.timing.data_hold_factor = dhf;
        c.timing.watchdog_factor = dhf;
        c.app_ready_timeout = Duration::from_secs(10);
        match ars.1.as_ref().ok_or("no controller")?.connect(c) {
            Ok(h) => ars.0.push(h),
            Err(e) => eprintln!("device {i}: connect failed: {e}"),
        }
    }
    let connected = ars.0.len();
    let setup_seconds = setup0.elapsed().as_secs_f64();
    println!("{connected}/{n} ARs connected in {setup_seconds:.1} s; measuring {seconds} s (DataHoldFactor {dhf}, high-resolution timer {})", if hires { "on" } else { "off" });
    let bare = {
        let b = sibling_binary("pn-bare-sender")?;
        let c = devs[0]
            .ns
            .command(b)
            .args([
                "--iface",
                &devs[0].nic,
                "--period-us",
                &period_us.to_string(),
                "--duration-s",
                &(seconds + 2).to_string(),
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| e.to_string())?;
        ChildGuard(Some(c))
    };
    nap(Duration::from_millis(500));
    let diag0: Vec<i64> = devs
        .iter()
        .map(|d| {
            http_get(&d.ns, "/api/diag").map_or(0, |j| j["watchdogTrips"].as_i64().unwrap_or(0))
        })
        .collect();
    let wd0: u64 = ars.0.iter().map(|a| a.status().watchdog_expiries).sum();
    rec.clear();
    let drops0 = rec.drops();
    let cpu0: Vec<Option<u64>> = devs
        .iter()
        .map(|d| raw::cpu_ticks(&format!("/proc/{}", d.pid)))
        .collect();
    let me0 = raw::cpu_ticks("/proc/self");
    let t0 = raw::mono_ns();
    nap(Duration::from_secs(seconds));
    let secs = (raw::mono_ns() - t0) as f64 / 1e9;
    let recs = rec.take();
    let me1 = raw::cpu_ticks("/proc/self");
    let cpu1: Vec<Option<u64>> = devs
        .iter()
        .map(|d| raw::cpu_ticks(&format!("/proc/{}", d.pid)))
        .collect();
    let rss_max = devs
        .iter()
        .filter_map(|d| raw::vm_rss_kb(d.pid))
        .max()
        .unwrap_or(0);
    let wd1: u64 = ars.0.iter().map(|a| a.status().watchdog_expiries).sum();
    let not_dx = ars
        .0
        .iter()
        .filter(|a| a.state() != ArState::DataExchange)
        .count();
    let diag1: Vec<i64> = devs
        .iter()
        .map(|d| {
            http_get(&d.ns, "/api/diag").map_or(0, |j| j["watchdogTrips"].as_i64().unwrap_or(0))
        })
        .collect();
    let bare_report = bare.finish(Duration::from_secs(4));
    if stopped() {
        return Err("interrupted".into());
    }
    let period_ns = period_us * 1000;
    let macs = rec.macs();
    let mut per: Vec<IntervalStats> = (0..macs.len())
        .map(|i| {
            let ts: Vec<u64> = recs
                .iter()
                .filter(|r| r.kind == Kind::DevCyclic && usize::from(r.src) == i)
                .map(|r| r.ts)
                .collect();
            intervals(&ts, period_ns)
        })
        .collect();
    per.sort_by(|a, b| a.dev_p99.total_cmp(&b.dev_p99));
    let worst = per.last().cloned().unwrap_or_default();
    let median = per.get(per.len() / 2).map_or(0.0, |s| s.dev_p99);
    let ctl_ts: Vec<u64> = recs
        .iter()
        .filter(|r| r.kind == Kind::CtlCyclic)
        .map(|r| r.ts)
        .collect();
    let bare_ts: Vec<u64> = recs
        .iter()
        .filter(|r| r.kind == Kind::Bare)
        .map(|r| r.ts)
        .collect();
    let dev_cpu: f64 = cpu0
        .iter()
        .zip(&cpu1)
        .filter_map(|(a, b)| cpu_pct(*a, *b, secs))
        .sum();
    let r = ScaleResult {
        devices: n,
        connected,
        period_us,
        seconds,
        dhf,
        hires,
        total_gaps_over_3: per.iter().map(|s| s.gaps_over_3).sum(),
        worst,
        median_dev_p99_us: median,
        // Controller frames to all devices interleave: their stream is per-AR, report the
        // aggregate only as a frame count.
        controller_stream: intervals(&ctl_ts, period_ns / (connected.max(1) as u64)),
        bare: intervals(&bare_ts, period_ns),
        device_watchdog_trips: diag1.iter().sum::<i64>() - diag0.iter().sum::<i64>(),
        controller_watchdog_expiries: wd1.saturating_sub(wd0),
        ars_not_in_data_exchange: not_dx,
        devices_total_cpu_pct: dev_cpu,
        this_process_cpu_pct: cpu_pct(me0, me1, secs),
        devices_rss_kb_max: rss_max,
        recorder_drops: rec.drops() - drops0,
        loadavg_before,
        setup_seconds,
        per_device: per,
    };
    println!("| devices | connected | period | seconds | streams | worst \\|dev\\| p99/max (us) | median \\|dev\\| p99 (us) | gaps>3 all devices | bare \\|dev\\| p99/max (us) | bare gaps>3 | wd trips dev/ctl | ARs lost | devices CPU % | controller proc CPU % | max RSS kB |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    println!(
        "| {} | {} | {} us | {} | {} | {:.1}/{:.1} | {:.1} | {} | {:.1}/{:.1} | {} | {}/{} | {} | {:.0} | {:.0} | {} |",
        r.devices,
        r.connected,
        r.period_us,
        r.seconds,
        macs.len(),
        r.worst.dev_p99,
        r.worst.dev_max,
        r.median_dev_p99_us,
        r.total_gaps_over_3,
        r.bare.dev_p99,
        r.bare.dev_max,
        r.bare.gaps_over_3,
        r.device_watchdog_trips,
        r.controller_watchdog_expiries,
        r.ars_not_in_data_exchange,
        r.devices_total_cpu_pct,
        r.this_process_cpu_pct.unwrap_or(f64::NAN),
        r.devices_rss_kb_max,
    );
    println!(
        "bare sender: {}; recorder drops {}; setup {:.1} s",
        bare_report.trim(),
        r.recorder_drops,
        r.setup_seconds
    );
    write_json(opts, &r)?;
    drop(ars);
    drop(rec);
    drop(devs);
    drop(ctl_ns);
    Ok(())
}

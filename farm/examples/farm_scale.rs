//! A short scale run (not `pn-lab bench scale`, which drives pn-device processes): N farm
//! devices in one namespace, the controller library with N ARs in another, a veth pair between.
//! Reports per run: ARs up, watchdog trips (controller and farm), the farm's missed provider
//! slots, the CPU time of the `farm-io` thread (schedstat) per device, and the process's RSS
//! growth from starting the farm.
//!
//! `sudo cargo run --release -p pn-farm --example farm_scale -- N SCF SECONDS`
//! (SCF: send clock factor, 32 = 1 ms, 128 = 4 ms; DataHoldFactor 3).

use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use pn_controller::devconfig::DeviceConfig;
use pn_controller::{ArConfig, Controller, ControllerConfig, RealtimeOptions};
use pn_device_formats::config::RuntimeConfig;
use pn_farm::plant::{numbered, Numbering, DEFAULT_MAC_BASE};
use pn_farm::{Farm, FarmOptions};
use pn_testkit::daemon::DeviceXml;
use pn_testkit::netns::Veth;

fn rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

/// CPU time (ns) of the threads named `name` in this process.
fn thread_cpu_ns(name: &str) -> u64 {
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    dir.flatten()
        .filter(|e| std::fs::read_to_string(e.path().join("comm")).is_ok_and(|c| c.trim() == name))
        .filter_map(|e| {
            std::fs::read_to_string(e.path().join("schedstat"))
                .ok()?
                .split_whitespace()
                .next()?
                .parse::<u64>()
                .ok()
        })
        .sum()
}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let n: usize = a.get(1).and_then(|x| x.parse().ok()).unwrap_or(16);
    let scf: u16 = a.get(2).and_then(|x| x.parse().ok()).unwrap_or(128);
    let secs: u64 = a.get(3).and_then(|x| x.parse().ok()).unwrap_or(30);
    let (ctl_ns, dev_ns, veth) =
        Veth::controller_device("pnfs", Some("10.77.0.1/16"), None).expect("namespaces");
    let xml = DeviceXml::new("x")
        .ident("ORDER-S", "SN", 1, "V1.0.0")
        .product(None)
        .nic(None)
        .ip(Ipv4Addr::new(10, 77, 1, 1))
        .send_clock_ms((u32::from(scf) * 31_250 / 1_000_000).max(1) as u16)
        .to_xml();
    let cfg = RuntimeConfig::parse(&xml, "x").unwrap();
    let specs = numbered(
        &cfg,
        &veth.b,
        &Numbering {
            count: n,
            name_prefix: "scale-".into(),
            ip_base: Some(Ipv4Addr::new(10, 77, 1, 1)),
            mac_base: DEFAULT_MAC_BASE,
            unnamed: false,
        },
    )
    .unwrap();
    let rss0 = rss_kb();
    let nic = veth.b.clone();
    let farm = dev_ns
        .enter(move || {
            Farm::start(
                &nic,
                &specs,
                FarmOptions {
                    http: None,
                    realtime: true,
                    state_dir: None,
                    rx: Default::default(),
                    standby: None,
                },
            )
        })
        .unwrap()
        .expect("farm");
    let rss_farm = rss_kb().saturating_sub(rss0);
    let ifname = veth.a.clone();
    let ctl = ctl_ns
        .enter(move || {
            let mut c = ControllerConfig::new(&ifname);
            c.send_clock_factor = scf;
            c.realtime = RealtimeOptions {
                fifo_priority: Some(40),
                lock_memory: false,
            };
            Controller::start(c)
        })
        .unwrap()
        .expect("controller");
    let model = DeviceConfig::parse(&xml).unwrap().model;
    let mut ars = Vec::new();
    for k in 0..n {
        let mut m = model.clone();
        m.station_name = format!("scale-{}", k + 1);
        let mut c = ArConfig::new(m);
        c.device_ip = Some(Ipv4Addr::from(
            u32::from(Ipv4Addr::new(10, 77, 1, 1)) + k as u32,
        ));
        c.timing.reduction_ratio = 1;
        c.timing.data_hold_factor = 3;
        c.timing.watchdog_factor = 3;
        match ctl.connect(c) {
            Ok(h) => ars.push(h),
            Err(e) => eprintln!("connect scale-{}: {e}", k + 1),
        }
    }
    let rss_all = rss_kb().saturating_sub(rss0);
    let trips0: u64 = farm.devices().iter().map(|d| d.watchdog_trips).sum();
    let missed0: u64 = farm.devices().iter().map(|d| d.missed_slots).sum();
    let cpu0 = thread_cpu_ns("farm-io");
    let t0 = Instant::now();
    // The measurement window: nothing to poll, the farm and the controller run on their own.
    std::thread::sleep(Duration::from_secs(secs));
    let wall = t0.elapsed().as_secs_f64();
    let cpu = thread_cpu_ns("farm-io").saturating_sub(cpu0) as f64 / 1e9;
    let trips: u64 = farm.devices().iter().map(|d| d.watchdog_trips).sum::<u64>() - trips0;
    let missed: u64 = farm.devices().iter().map(|d| d.missed_slots).sum::<u64>() - missed0;
    let up = ars
        .iter()
        .filter(|h| h.state() == pn_controller::ArState::DataExchange)
        .count();
    let ctl_trips: u64 = ars.iter().map(|h| h.status().watchdog_expiries).sum();
    let ctl_missed: u64 = ars.iter().map(|h| h.status().missed_send_slots).sum();
    println!(
        "devices {n} cycle {} us {secs} s: ARs connected {} / in data exchange at the end {up}; \
         watchdog trips farm {trips} controller {ctl_trips}; missed provider slots farm {missed} \
         controller {ctl_missed}; farm-io CPU {:.1} % of one core ({:.2} % per device); \
         RSS +{} KiB farm started (+{} KiB with the controller's ARs), {:.0} KiB per device",
        u32::from(scf) * 31_250 / 1000,
        ars.len(),
        cpu / wall * 100.0,
        cpu / wall * 100.0 / n as f64,
        rss_farm,
        rss_all,
        rss_farm as f64 / n as f64,
    );
    for h in &ars {
        let _ = h.release();
    }
    ctl.shutdown();
    farm.stop();
    drop(veth);
}

//! `pn-lab demo`: the device daemon in the host's network namespace (so its dashboard is at
//! http://127.0.0.1:18840 in a browser on this machine) in data exchange with the controller
//! simulator in a namespace of its own, joined by a veth pair. Prints live status until Ctrl-C,
//! then releases the AR, stops the daemon and removes the namespace, the link and the files.
//! When the AR ends (either side), it prints one line saying why (the controller's abort
//! reason and the device's `statusMessage`) and connects again, with a bounded backoff.
//! `--pcap FILE` records the link on the device's side for the whole run.

use crate::lab::{device_binary_or_build, write_licence, Capture, Licence};
use crate::peer::{Peer, PeerTiming, CTL_IP, DEV_IP};
use pn_controller::ArState;
use pn_testkit::netns::NetNs;
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Host-side interface of the demo link (fixed, so a leftover from a crash is found and removed).
const HOST_IF: &str = "pnlab-dev";
const PEER_IF: &str = "pnlab-ctl";

fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("ip: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

fn get(path: &str) -> Option<serde_json::Value> {
    let addr: SocketAddr = "127.0.0.1:18840".parse().ok()?;
    let r = pn_testkit::http::request(addr, "GET", path, &[], None, Duration::from_secs(2)).ok()?;
    (r.status == 200).then(|| serde_json::from_slice(&r.body).ok())?
}

fn post(path: &str, body: serde_json::Value) -> Option<serde_json::Value> {
    let addr: SocketAddr = "127.0.0.1:18840".parse().ok()?;
    let b = body.to_string();
    let r = pn_testkit::http::request(
        addr,
        "POST",
        path,
        &[],
        Some(b.as_bytes()),
        Duration::from_secs(2),
    )
    .ok()?;
    serde_json::from_slice(&r.body).ok()
}

/// The demo's device configuration: the lab's device at a 4 ms send clock.
fn config_xml() -> String {
    crate::bench::rig::lab_device_xml("pn-device", DEV_IP, HOST_IF, 4)
}

struct Cleanup {
    ns: Option<NetNs>,
    device: Option<std::process::Child>,
    capture: Option<Capture>,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        if let Some(c) = self.capture.take() {
            let p = c.finish();
            println!("pn-lab demo: capture written to {}", p.display());
        }
        if let Some(mut d) = self.device.take() {
            // SAFETY: signal our own child for a graceful shutdown (spec drain), then reap it.
            unsafe {
                libc::kill(d.id() as i32, libc::SIGTERM);
            }
            let deadline = Instant::now() + Duration::from_secs(6);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = d.try_wait() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = d.kill();
            let _ = d.wait();
        }
        let _ = ip(&["link", "del", HOST_IF]);
        self.ns.take();
    }
}

/// Backoff between reconnect attempts: 0.5 s, doubling, at most this.
const MAX_BACKOFF: Duration = Duration::from_secs(4);

/// One line saying why the AR ended: the controller's view (its abort reason) and the
/// device's (`GET /api/status`: state and `statusMessage`).
fn ended_line(ctl: &ArState, dev: Option<&serde_json::Value>) -> String {
    let device = match dev {
        Some(st) => {
            let msg = st["statusMessage"].as_str().unwrap_or("");
            format!(
                "device {}{}{}",
                st["state"].as_str().unwrap_or("?"),
                if msg.is_empty() { "" } else { ": " },
                msg
            )
        }
        None => "device API not answering".into(),
    };
    format!("pn-lab demo: AR ended: controller {ctl}; {device}")
}

/// The device's status once it has left data exchange (the controller may see the end a
/// few cycles before the device does), or its last status after 3 s.
fn device_status_after_end() -> Option<serde_json::Value> {
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        let st = get("/api/status");
        let settled = st.as_ref().is_some_and(|s| s["state"] != "DataExchange");
        if settled || Instant::now() >= deadline {
            return st;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Run the demo until Ctrl-C (or for `limit` when given, for tests), recording the link to
/// `pcap` when given. Returns an error text.
/// The demo device's configuration, licence and settings in `dir`; returns the configuration.
fn write_files(dir: &Path) -> Result<String, String> {
    let xml = config_xml();
    std::fs::write(dir.join("config.xml"), &xml).map_err(|e| e.to_string())?;
    write_licence(&dir.join("licence.json"), &Licence::Valid)?;
    let settings = serde_json::json!({
        "Network": { "DefaultInterfaceName": HOST_IF },
        "Paths": {
            "RuntimeConfig": dir.join("config.xml").display().to_string(),
            "PersistenceDir": dir.join("persist").display().to_string(),
        },
        "Licence": { "CertificatePath": dir.join("licence.json").display().to_string() },
        "Runtime": { "AutoStart": true },
    });
    std::fs::write(dir.join("settings.json"), settings.to_string()).map_err(|e| e.to_string())?;
    Ok(xml)
}

/// Wait (up to 20 s) until the daemon reports Initialized with its link up.
fn wait_initialized(dir: &Path) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(s) = get("/api/status") {
            if s["state"] == "Initialized" && s["linkUp"] == true {
                break;
            }
        }
        if Instant::now() > deadline {
            let log = std::fs::read_to_string(dir.join("device.log")).unwrap_or_default();
            return Err(format!(
                "pn-device did not reach Initialized within 20 s; log:\n{log}"
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(())
}

/// A flag set by Ctrl-C (a thread with its own small runtime waits for the signal).
fn ctrl_c_flag() -> Arc<AtomicBool> {
    let stop = Arc::new(AtomicBool::new(false));
    let s2 = stop.clone();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("signal runtime");
        rt.block_on(async {
            let _ = tokio::signal::ctrl_c().await;
        });
        s2.store(true, Ordering::SeqCst);
    });
    stop
}

/// One status line from the daemon's API.
fn print_status(t0: Instant) {
    if let (Some(st), Some(io), Some(dg)) = (get("/api/status"), get("/api/io"), get("/api/diag")) {
        println!(
            "{:>6.1}s  state={:<12} connected={:<5} I={} Q={} rt rx/tx={}/{} watchdogTrips={} alarms={}",
            t0.elapsed().as_secs_f64(),
            st["state"].as_str().unwrap_or("?"),
            st["connected"],
            io["inputHex"].as_str().unwrap_or(""),
            io["outputHex"].as_str().unwrap_or(""),
            dg["rxRtFrames"],
            dg["txRtFrames"],
            dg["watchdogTrips"],
            st["alarmCount"],
        );
    }
}

pub fn run(limit: Option<Duration>, pcap: Option<&Path>) -> Result<(), String> {
    if !pn_testkit::env::is_root() {
        return Err(
            "pn-lab demo needs root (network namespaces, raw sockets): run it with sudo".into(),
        );
    }
    if get("/api/info").is_some() {
        return Err(
            "something already serves 127.0.0.1:18840 (another pn-device?): stop it first".into(),
        );
    }
    pn_testkit::netns::remove_stale("pnd");
    let _ = ip(&["link", "del", HOST_IF]); // leftover of a crashed run
    let ns = NetNs::new("pnd")?;
    let mut cleanup = Cleanup {
        ns: None,
        device: None,
        capture: None,
    };
    ip(&[
        "link", "add", HOST_IF, "type", "veth", "peer", "name", PEER_IF,
    ])?;
    ip(&["link", "set", PEER_IF, "netns", ns.name()])?;
    ip(&["addr", "add", &format!("{DEV_IP}/24"), "dev", HOST_IF])?;
    ip(&["link", "set", HOST_IF, "up"])?;
    ns.exec_ok(&["ip", "addr", "add", &format!("{CTL_IP}/24"), "dev", PEER_IF])?;
    ns.exec_ok(&["ip", "link", "set", PEER_IF, "up"])?;

    let dir = tempfile::Builder::new()
        .prefix("pn-lab-demo-")
        .tempdir()
        .map_err(|e| e.to_string())?;
    let xml = write_files(dir.path())?;
    if let Some(p) = pcap {
        cleanup.capture = Some(Capture::start(Command::new("tcpdump"), HOST_IF, p)?);
    }
    let log = std::fs::File::create(dir.path().join("device.log")).map_err(|e| e.to_string())?;
    let child = Command::new(device_binary_or_build()?)
        .arg("--settings")
        .arg(dir.path().join("settings.json"))
        .env_remove("VENDOR_PNET_NIC")
        .stdin(Stdio::null())
        .stdout(log.try_clone().map_err(|e| e.to_string())?)
        .stderr(log)
        .spawn()
        .map_err(|e| format!("cannot start pn-device: {e}"))?;
    cleanup.device = Some(child);

    wait_initialized(dir.path())?;
    let timing = PeerTiming {
        send_clock_factor: 128,
        reduction_ratio: 1,
        data_hold_factor: 3,
    };
    let mut peer = Peer::start(&ns, PEER_IF, xml.replace(HOST_IF, PEER_IF), timing)?;
    peer.connect()?;
    cleanup.ns = Some(ns);
    println!("pn-lab demo: pn-device (host namespace, NIC {HOST_IF}) <-> pn-controller (namespace, NIC {PEER_IF}), 4 ms cycle");
    println!("dashboard: http://127.0.0.1:18840    stop: Ctrl-C");

    let stop = ctrl_c_flag();
    let t0 = Instant::now();
    let running = || !stop.load(Ordering::SeqCst) && limit.map_or(true, |l| t0.elapsed() < l);
    let mut n: u32 = 0;
    // Set while the AR is down: when to try the next Connect and the wait after that.
    let mut retry: Option<(Instant, Duration)> = None;
    let mut attempt = 0u32;
    while running() {
        if let Some((at, backoff)) = retry {
            if Instant::now() < at {
                std::thread::sleep(Duration::from_millis(100));
                continue;
            }
            attempt += 1;
            match peer.connect() {
                Ok(()) => {
                    println!("pn-lab demo: reconnected (attempt {attempt}): data exchange");
                    retry = None;
                    attempt = 0;
                }
                Err(e) => {
                    let next = (backoff * 2).min(MAX_BACKOFF);
                    println!(
                        "pn-lab demo: reconnect attempt {attempt} failed: {e}; next in {:.1} s",
                        backoff.as_secs_f64()
                    );
                    retry = Some((Instant::now() + backoff, next));
                    continue;
                }
            }
        }
        let state = peer.state();
        if let Some(s @ (ArState::Aborted(_) | ArState::Released)) = &state {
            println!("{}", ended_line(s, device_status_after_end().as_ref()));
            let _ = peer.abort(); // forget the ended AR
            let first = Duration::from_millis(500);
            retry = Some((Instant::now() + first, first));
            continue;
        }
        n = n.wrapping_add(1);
        // Controller -> device: a counter; device -> controller: the uptime in seconds.
        let _ = peer.set_outputs(0, &n.to_be_bytes());
        let secs = t0.elapsed().as_secs() as u32;
        let _ = post(
            "/api/io",
            serde_json::json!({ "offset": 0, "data": hex::encode(secs.to_be_bytes()) }),
        );
        print_status(t0);
        // The status once a second; an AR's end is seen within 100 ms.
        let next = Instant::now() + Duration::from_secs(1);
        while running() && Instant::now() < next {
            if matches!(peer.state(), Some(ArState::Aborted(_) | ArState::Released)) {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    if peer.state() == Some(ArState::DataExchange) {
        let _ = peer.release();
    }
    drop(peer);
    drop(cleanup);
    println!("pn-lab demo: stopped and cleaned up");
    Ok(())
}

//! `pn-lab` as a tool (root): `demo` says why an AR ended and connects again, `--pcap FILE`
//! records the link of `demo` and `run`, and a failed scenario keeps its capture and the
//! device's log under the current directory, at a path it prints.

use std::io::BufRead;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

fn pn_lab() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_pn-lab"))
}

/// Frames tshark reads from `pcap` (at most the first 3000), with their protocol stacks.
fn protocols(pcap: &Path) -> Vec<String> {
    pn_testkit::tshark::dissect_file(pcap, &["-c", "3000"])
        .unwrap_or_else(|e| panic!("{}: {e}", pcap.display()))
        .iter()
        .map(|p| p.protocols().to_string())
        .collect()
}

/// The demo's stdout, line by line, as it comes.
struct Demo {
    child: Child,
    lines: Receiver<String>,
    seen: Vec<String>,
}

impl Demo {
    /// Wait (bounded) for a line containing `what`; returns it.
    fn expect(&mut self, what: &str, within: Duration) -> String {
        let deadline = Instant::now() + within;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(l) => {
                    self.seen.push(l.clone());
                    if l.contains(what) {
                        return l;
                    }
                }
                Err(_) => panic!(
                    "no line with {what:?} within {within:?}; the demo said:\n{}",
                    self.seen.join("\n")
                ),
            }
        }
    }
}

impl Drop for Demo {
    fn drop(&mut self) {
        // A failed assertion: still stop the demo (it cleans up on SIGINT).
        if let Ok(None) = self.child.try_wait() {
            // SAFETY: kill(2) on our own child's pid.
            unsafe {
                libc::kill(self.child.id() as i32, libc::SIGINT);
            }
            let deadline = Instant::now() + Duration::from_secs(20);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = self.child.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn post(path: &str) {
    let addr: SocketAddr = "127.0.0.1:18840".parse().unwrap();
    let r = pn_testkit::http::request(addr, "POST", path, &[], Some(b""), Duration::from_secs(10))
        .unwrap_or_else(|e| panic!("POST {path}: {e}"));
    assert_eq!(r.status, 200, "POST {path}");
}

#[test]
fn demo_says_why_the_ar_ended_reconnects_and_records_the_link() {
    if !pn_testkit::env::require_root() || !pn_testkit::env::require_tshark() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let pcap = dir.path().join("demo.pcap");
    let mut child = Command::new(pn_lab())
        .args(["demo", "--seconds", "300", "--pcap"])
        .arg(&pcap)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let out = child.stdout.take().unwrap();
    let (tx, lines) = channel();
    std::thread::spawn(move || {
        for l in std::io::BufReader::new(out).lines().map_while(Result::ok) {
            let _ = tx.send(l);
        }
    });
    let mut demo = Demo {
        child,
        lines,
        seen: Vec::new(),
    };
    demo.expect("state=DataExchange", Duration::from_secs(60));

    // The device stops (its cyclic frames end): the controller's watchdog ends the AR.
    post("/api/stop");
    let why = demo.expect("AR ended:", Duration::from_secs(15));
    assert!(why.contains("controller aborted: "), "{why}");
    assert!(why.contains("device Stopped"), "{why}");
    // While the device is stopped the reconnects fail; once it runs again one succeeds.
    demo.expect("reconnect attempt 1 failed", Duration::from_secs(30));
    post("/api/start");
    demo.expect("reconnected (attempt", Duration::from_secs(40));
    demo.expect("state=DataExchange", Duration::from_secs(10));

    // Ctrl-C: release, clean up, the capture finished.
    // SAFETY: kill(2) on our own child's pid.
    unsafe {
        libc::kill(demo.child.id() as i32, libc::SIGINT);
    }
    demo.expect("stopped and cleaned up", Duration::from_secs(30));
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(s) = demo.child.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "the demo did not exit");
        std::thread::sleep(Duration::from_millis(50));
    };
    eprintln!("the demo said:\n{}", demo.seen.join("\n"));
    assert!(status.success(), "{status}");
    assert!(
        demo.seen.iter().any(|l| l.contains("capture written to")),
        "{}",
        demo.seen.join("\n")
    );
    let protos = protocols(&pcap);
    assert!(
        protos.iter().any(|p| p.contains("pn_rt")),
        "no RT frame in {} frames",
        protos.len()
    );
    assert!(
        protos.iter().any(|p| p.contains("dcerpc")),
        "no PNIO-CM call"
    );
}

#[test]
fn run_records_the_link_with_pcap() {
    if !pn_testkit::env::require_root() || !pn_testkit::env::require_tshark() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let pcap = dir.path().join("exchange.pcap");
    // A short data exchange without golden snapshots (the test is about the capture).
    let sc = dir.path().join("exchange.toml");
    std::fs::write(
        &sc,
        r#"title = "a controller connects, exchanges data and releases"

[device]
config = "exchange-4ms.xml"
start = true

[controller]
cycle_ms = 4
data_hold_factor = 3

[[step]]
controller = "connect"

[[step]]
wait = "GET /api/status"
until = { state = "DataExchange", connected = true }
within_ms = 5000

[[step]]
controller = "set-outputs"
hex = "0a0b0c0d"

[[step]]
wait = "GET /api/io"
until = { inputHex = "0a0b0c0d" }
within_ms = 2000

[[step]]
controller = "release"
"#,
    )
    .unwrap();
    let o = Command::new(pn_lab())
        .arg("run")
        .arg("--pcap")
        .arg(&pcap)
        .arg(&sc)
        .current_dir(dir.path())
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        out.contains(&format!("capture: {}", pcap.display())),
        "{out}"
    );
    let protos = protocols(&pcap);
    assert!(protos.iter().any(|p| p.contains("pn_rt")), "{protos:?}");
    assert!(protos.iter().any(|p| p.contains("dcerpc")), "{protos:?}");
    // A run that passed leaves nothing else behind.
    let mut left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["exchange.pcap", "exchange.toml"]);
}

#[test]
fn a_failed_scenario_keeps_capture_and_log_under_the_current_directory() {
    if !pn_testkit::env::require_root() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let sc = dir.path().join("fails-on-purpose.toml");
    std::fs::write(
        &sc,
        r#"title = "expects data exchange from a device nobody connects to"

[[step]]
call = "GET /api/status"
assert = { state = "DataExchange" }
"#,
    )
    .unwrap();
    let run = |extra: &[&str]| {
        let o = Command::new(pn_lab())
            .arg("run")
            .args(extra)
            .arg(&sc)
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(1));
        let out = String::from_utf8_lossy(&o.stdout).into_owned();
        let kept = out
            .lines()
            .find_map(|l| l.strip_prefix("capture and device log kept in: "))
            .unwrap_or_else(|| panic!("no artifact path printed:\n{out}"))
            .to_string();
        PathBuf::from(kept)
    };

    // Default: ./pn-lab-failures/<scenario>-<UTC time>/ under the current directory.
    let kept = run(&[]);
    let kept = if kept.is_relative() {
        dir.path().join(kept)
    } else {
        kept
    };
    assert!(
        kept.starts_with(dir.path().join("pn-lab-failures")),
        "{}",
        kept.display()
    );
    let leaf = kept.file_name().unwrap().to_string_lossy().into_owned();
    assert!(leaf.starts_with("fails-on-purpose-20"), "{leaf}");
    let log = std::fs::read_to_string(kept.join("device.log")).unwrap();
    assert!(!log.is_empty());
    assert!(kept.join("capture.pcap").is_file());

    // --artifacts DIR: there instead.
    let other = dir.path().join("elsewhere");
    let kept = run(&["--artifacts", other.to_str().unwrap()]);
    assert!(kept.starts_with(&other), "{}", kept.display());
    assert!(kept.join("device.log").is_file());
}

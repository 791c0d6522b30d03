//! `bench scale --ftrace`'s trace against the real kernel: an instance is created, records a
//! thread of this test that sleeps and wakes, and its window names that thread, its switches
//! and the time it ran; the instance is gone afterwards. And the whole `--ftrace` path of a
//! pinned, loaded scale run. Needs root (tracefs).

use std::path::Path;
use std::time::Duration;

use pn_lab::bench::ftrace::{summarize, Session};
use pn_lab::bench::raw::realtime_ns;

/// Root, and tracefs mounted (mounted here if the kernel has it but nothing mounted it yet, as
/// the bench's users would); `false` when the test cannot run here (not root, outside CI).
fn tracefs_ready() -> bool {
    if !pn_testkit::env::require_root() {
        return false;
    }
    if !Path::new("/sys/kernel/tracing/instances").is_dir() {
        let st = std::process::Command::new("mount")
            .args(["-t", "tracefs", "nodev", "/sys/kernel/tracing"])
            .status()
            .expect("run mount");
        assert!(st.success(), "tracefs could not be mounted: {st}");
    }
    true
}

#[test]
fn a_recorded_window_names_the_thread_that_ran_and_the_instance_is_removed() {
    if !tracefs_ready() {
        return;
    }
    let name = format!("pn-test-ftrace-{}", std::process::id());
    let dir = Path::new("/sys/kernel/tracing/instances").join(&name);
    let mut s = Session::create(&name, 4).expect("create the instance");
    assert!(dir.is_dir());
    s.record().expect("record");
    let from = realtime_ns();
    std::thread::Builder::new()
        .name("pn-ftrace-probe".into())
        .spawn(|| {
            for _ in 0..20 {
                std::thread::sleep(Duration::from_millis(2));
            }
        })
        .expect("spawn")
        .join()
        .expect("probe");
    let to = realtime_ns();
    s.stop();
    assert_eq!(
        s.overruns().iter().map(|o| o.1).sum::<u64>(),
        0,
        "a few switches overwrote nothing"
    );
    let w = s.windows(&[(from, to)]).expect("read the trace");
    let probe: Vec<_> = w[0]
        .iter()
        .filter(|r| r.event == "sched_switch" && r.arg("prev_comm") == Some("pn-ftrace-probe"))
        .collect();
    assert!(
        probe.len() >= 20,
        "the probe slept 20 times: {} switches away from it in {} records",
        probe.len(),
        w[0].len()
    );
    let cpu = probe[0].cpu;
    let sum = summarize(&w[0], cpu, s.to_mono(from), s.to_mono(to));
    assert!(
        sum.ran
            .iter()
            .any(|(c, t)| c == "pn-ftrace-probe" && *t > 0),
        "{:?}",
        sum.ran
    );
    drop(s);
    assert!(!dir.exists(), "the instance is removed on drop");
}

/// `pn-lab bench scale --ftrace` end to end, pinned with the other CPU loaded and the standby
/// on (the 250 us benchmark's arrangement, at 1 ms for 2 s): the run succeeds, the report file
/// holds the trace's header, and the bench's instance is gone when the command has ended
/// (the trace is read after the lab and the load are torn down).
#[test]
fn a_pinned_scale_run_writes_its_trace_report_and_removes_the_instance() {
    if !tracefs_ready() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (trace, json) = (dir.path().join("trace.txt"), dir.path().join("r.json"));
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_pn-lab"))
        .args(["bench", "scale", "--devices", "1", "--period-us", "1000"])
        .args(["--dhf", "8", "--seconds", "2", "--idle-seconds", "0"])
        .args(["--pin", "1", "--load", "1", "--standby"])
        .args(["--ftrace-buffer-mb", "16", "--ftrace"])
        .arg(&trace)
        .arg("--json")
        .arg(&json)
        .output()
        .expect("run pn-lab");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains(&format!("ftrace: the windows are in {}", trace.display())),
        "{stdout}"
    );
    let report = std::fs::read_to_string(&trace).unwrap();
    assert!(
        report.starts_with("# pn-lab bench scale --ftrace: "),
        "{report}"
    );
    assert!(
        report.contains("Events the ring buffer overwrote"),
        "{report}"
    );
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(r["connected"], 1, "{r}");
    assert!(
        !Path::new("/sys/kernel/tracing/instances/pn-bench-scale").exists(),
        "the bench's instance is removed"
    );
}

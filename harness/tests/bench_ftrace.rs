//! `bench scale --ftrace`'s trace against the real kernel: an instance is created, records a
//! thread of this test that sleeps and wakes, and its window names that thread, its switches
//! and the time it ran; the instance is gone afterwards. Needs root (tracefs).

use std::path::Path;
use std::time::Duration;

use pn_lab::bench::ftrace::{summarize, Session};
use pn_lab::bench::raw::realtime_ns;

#[test]
fn a_recorded_window_names_the_thread_that_ran_and_the_instance_is_removed() {
    if !pn_testkit::env::require_root() {
        return;
    }
    if !Path::new("/sys/kernel/tracing/instances").is_dir() {
        // Not mounted on this machine yet: the kernel has it, mount it (as the bench's
        // users would).
        let st = std::process::Command::new("mount")
            .args(["-t", "tracefs", "nodev", "/sys/kernel/tracing"])
            .status()
            .expect("run mount");
        assert!(st.success(), "tracefs could not be mounted: {st}");
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

//! Smoke test of `pn-lab bench cycle`: the command runs for 2 s against the real daemon in
//! namespaces and writes a well-formed report. No timing figure is asserted (benchmarks
//! report, they do not pass or fail on figures): only that every stream was recorded and every
//! statistic is present.

use std::process::Command;

/// Runs `pn-lab bench ARGS --json FILE` and returns its JSON report and its output; `None`
/// when the test cannot run here (not root, outside CI).
fn bench(args: &[&str]) -> Option<(serde_json::Value, String)> {
    if !pn_testkit::env::require_root() {
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("report.json");
    let out = Command::new(env!("CARGO_BIN_EXE_pn-lab"))
        .arg("bench")
        .args(args)
        .arg("--json")
        .arg(&json)
        .output()
        .expect("run pn-lab");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "pn-lab bench {args:?} failed:\n{stdout}\n{stderr}"
    );
    let v = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    Some((v, stdout))
}

/// One 2 s case of the cycle bench at 1 ms, idle, high-resolution timer.
const CYCLE_2S: &[&str] = &[
    "cycle",
    "--periods",
    "1000",
    "--load",
    "0",
    "--hires",
    "on",
    "--seconds",
    "2",
];

#[test]
fn bench_cycle_runs_and_reports() {
    let Some((v, stdout)) = bench(CYCLE_2S) else {
        return;
    };
    assert!(
        stdout.contains("| 1000 us | idle | on | - | device |"),
        "{stdout}"
    );
    let results = v["results"].as_array().expect("results array");
    assert_eq!(results.len(), 1, "{v}");
    let r = &results[0];
    assert_eq!(r["case"]["period_us"], 1000);
    for stream in ["device", "controller", "bare"] {
        let s = &r[stream];
        assert!(
            s["frames"].as_u64().unwrap_or(0) > 0,
            "no {stream} frames recorded: {r}"
        );
        for k in [
            "interval_p50",
            "interval_p99",
            "interval_p999",
            "interval_max",
            "dev_p50",
            "dev_p99",
            "dev_p999",
            "dev_max",
            "missed_cycles",
            "gaps_over_3",
        ] {
            assert!(s[k].is_number(), "{stream}.{k} missing: {r}");
        }
    }
    assert!(r["device_rss_kb"].as_u64().unwrap_or(0) > 0, "{r}");
    assert!(v["machine"].as_str().unwrap().contains("nproc"));
}

/// `pn-lab bench scale --farm`: one pn-farm process with 4 devices, driven by the controller
/// library for 3 s at 4 ms. Asserted: every AR connected, every device's stream recorded on
/// the wire, the farm counted as one process holding 4 devices, and the report complete.
#[test]
fn bench_scale_drives_the_farm() {
    let Some((r, _)) = bench(&[
        "scale",
        "--farm",
        "--devices",
        "4",
        "--period-us",
        "4000",
        "--dhf",
        "8",
        "--seconds",
        "3",
        "--idle-seconds",
        "1",
    ]) else {
        return;
    };
    assert_eq!(r["farm"], true, "{r}");
    assert_eq!(r["devices"], 4, "{r}");
    assert_eq!(r["connected"], 4, "{r}");
    assert_eq!(r["devices_per_process"], 4, "{r}");
    let per = r["per_device"].as_array().expect("per_device");
    assert_eq!(per.len(), 4, "one device stream per farm device: {r}");
    for s in per {
        assert!(s["frames"].as_u64().unwrap_or(0) > 0, "{r}");
    }
    assert!(r["bare"]["frames"].as_u64().unwrap_or(0) > 0, "{r}");
    assert!(r["devices_rss_kb_max"].as_u64().unwrap_or(0) > 0, "{r}");
}

/// Every CPU's `pm_qos_resume_latency_us`, in CPU order.
fn cpu_qos() -> Vec<String> {
    let mut v: Vec<(usize, String)> = std::fs::read_dir("/sys/devices/system/cpu")
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let n: usize = e.file_name().to_str()?.strip_prefix("cpu")?.parse().ok()?;
            let q =
                std::fs::read_to_string(e.path().join("power/pm_qos_resume_latency_us")).ok()?;
            Some((n, q.trim().to_string()))
        })
        .collect();
    v.sort();
    v.into_iter().map(|x| x.1).collect()
}

#[test]
fn bench_cycle_pinned_with_polling_cpus_restores_them() {
    let before = cpu_qos();
    let pinned = ["--pin", "1", "--bare-prio", "59", "--cpu-poll"];
    let Some((v, stdout)) = bench(&[CYCLE_2S, &pinned].concat()) else {
        return;
    };
    assert!(!before.is_empty(), "no CPU has pm_qos_resume_latency_us");
    assert!(
        stdout.contains(&format!("idle CPUs poll: {} CPUs", before.len())),
        "{stdout}"
    );
    assert_eq!(v["cpu_poll"], true, "{v}");
    let r = &v["results"][0];
    assert_eq!(r["case"]["bare_prio"], 59, "{r}");
    assert_eq!(r["case"]["pin"], 1, "{r}");
    assert!(r["device"]["frames"].as_u64().unwrap_or(0) > 0, "{r}");
    // The machine is left as it was found.
    assert_eq!(cpu_qos(), before);
}

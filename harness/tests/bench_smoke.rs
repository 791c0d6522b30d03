//! Smoke test of `pn-lab bench cycle`: the command runs for 2 s against the real daemon in
//! namespaces and writes a well-formed report. No timing figure is asserted (benchmarks
//! report, they do not pass or fail on figures): only that every stream was recorded and every
//! statistic is present.

use std::process::Command;

#[test]
fn bench_cycle_runs_and_reports() {
    if !pn_testkit::env::require_root() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("cycle.json");
    let out = Command::new(env!("CARGO_BIN_EXE_pn-lab"))
        .args([
            "bench",
            "cycle",
            "--periods",
            "1000",
            "--load",
            "0",
            "--hires",
            "on",
            "--seconds",
            "2",
            "--json",
        ])
        .arg(&json)
        .output()
        .expect("run pn-lab");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "pn-lab bench cycle failed:\n{stdout}\n{stderr}"
    );
    assert!(
        stdout.contains("| 1000 us | idle | on | - | device |"),
        "{stdout}"
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
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

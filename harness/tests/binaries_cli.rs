//! Every binary of the workspace has a clap command line: `--help` prints help and does
//! nothing else (it used to start a two-minute benchmark for `pn-lab bench cycle --help`),
//! `--version` prints the version, and an unknown option is a usage error (exit 2) instead of
//! being ignored.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

fn bin(name: &str) -> PathBuf {
    let p = pn_testkit::daemon::bin_dir().join(name);
    assert!(
        p.exists(),
        "{} not built (cargo build --workspace --bins)",
        p.display()
    );
    p
}

const COMMANDS: &[&[&str]] = &[
    &["pn-device"],
    &["pn-gsdml"],
    &["pn-licence"],
    &["pn-licence", "issue"],
    &["pn-lab"],
    &["pn-lab", "bench", "cycle"],
    &["pn-lab", "bench", "scale"],
    &["pn-lab", "soak"],
    &["pn-lab", "run"],
    &["pn-lab", "sim"],
    &["pn-controller"],
    &["pn-controller", "connect-and-run"],
    &["pnctl"],
    &["pnctl", "dashboard"],
    &["pn-bare-sender"],
];

fn run(cmd: &[&str], extra: &str) -> (Option<i32>, String, String, Duration) {
    let t = Instant::now();
    let o = Command::new(bin(cmd[0]))
        .args(&cmd[1..])
        .arg(extra)
        .output()
        .unwrap();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
        t.elapsed(),
    )
}

#[test]
fn help_is_help_and_does_nothing_else() {
    for cmd in COMMANDS {
        let (code, out, err, took) = run(cmd, "--help");
        assert_eq!(code, Some(0), "{cmd:?} --help: {err}");
        assert!(out.contains("Usage:"), "{cmd:?} --help: {out}");
        assert!(
            took < Duration::from_secs(10),
            "{cmd:?} --help took {took:?}: it ran something"
        );
    }
}

#[test]
fn unknown_options_are_usage_errors() {
    for cmd in COMMANDS {
        let (code, _, err, _) = run(cmd, "--no-such-option");
        assert_eq!(code, Some(2), "{cmd:?}: {err}");
        assert!(err.contains("--no-such-option"), "{cmd:?}: {err}");
    }
}

#[test]
fn every_binary_says_its_version() {
    for name in [
        "pn-device",
        "pn-gsdml",
        "pn-licence",
        "pn-lab",
        "pn-controller",
        "pnctl",
        "pn-bare-sender",
    ] {
        let (code, out, err, _) = run(&[name], "--version");
        assert_eq!(code, Some(0), "{name} --version: {err}");
        assert!(out.starts_with(name), "{name} --version: {out}");
        assert!(out.contains(env!("CARGO_PKG_VERSION")), "{name}: {out}");
    }
}

#[test]
fn an_unwritable_trace_report_fails_before_the_benchmark_starts() {
    let o = Command::new(bin("pn-lab"))
        .args(["bench", "scale", "--devices", "1", "--seconds", "1"])
        .args([
            "--ftrace",
            "/nonexistent-dir/trace.txt",
            "--json",
            "/dev/null",
        ])
        .output()
        .unwrap();
    let (out, err) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert_ne!(o.status.code(), Some(0), "{out} {err}");
    assert!(
        err.contains("--ftrace /nonexistent-dir/trace.txt"),
        "the error names the option and the path: {err}"
    );
    assert!(!out.contains("connected"), "no lab was set up: {out}");
}

//! The CLI's contract: --help and --version answer without a NIC; bad arguments fail with a
//! message and exit code 2, before any socket is opened.

use std::process::Command;

fn farm() -> Command {
    Command::new(env!("CARGO_BIN_EXE_pn-farm"))
}

#[test]
fn help_and_version() {
    let out = farm().arg("--help").output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for opt in [
        "--interface",
        "--devices",
        "--config",
        "--plant",
        "--name-prefix",
        "--ip-base",
        "--mac-base",
        "--http",
        "--standby-cpu",
        "--standby-grace-us",
    ] {
        assert!(text.contains(opt), "{opt} missing from --help:\n{text}");
    }
    let out = farm().arg("--version").output().unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("pn-farm "));
}

#[test]
fn bad_numbering_fails_before_the_network() {
    let out = farm()
        .args(["--interface", "nonexistent0", "--devices", "0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--devices"));
    let out = farm()
        .args([
            "--interface",
            "nonexistent0",
            "--mac-base",
            "01:00:00:00:00:00",
        ])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = farm()
        .args([
            "--interface",
            "nonexistent0",
            "--plant",
            "/nonexistent/plant.toml",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn standby_options_are_checked_before_the_network() {
    for args in [
        &["--standby-grace-us", "100"][..],
        &["--standby-cpu", "1", "--standby-grace-us", "0"][..],
        &["--standby-cpu", "x"][..],
        &["--standby-cpu", "1024"][..],
    ] {
        let out = farm()
            .args(["--interface", "nonexistent0"])
            .args(args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("--standby-"), "{args:?}: {err}");
    }
}

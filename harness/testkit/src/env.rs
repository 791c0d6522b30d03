//! Environment gates for tests that need privileges or external tools.
//!
//! Locally a developer without root may skip such tests (a line on stderr says so). Under
//! `CI=true` a missing prerequisite is a hard failure: CI must never go green by skipping.

use std::process::Command;

/// True when running under CI (`CI=true`, as `.ci/run` sets it).
pub fn in_ci() -> bool {
    matches!(std::env::var("CI").as_deref(), Ok("true") | Ok("1"))
}

/// True when the effective user is root (needed for network namespaces and raw sockets).
pub fn is_root() -> bool {
    // SAFETY-free: read the effective uid from /proc rather than linking libc here.
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2).map(|u| u == "0"))
        })
        .unwrap_or(false)
}

/// True when `tool --version` runs.
pub fn has_tool(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

/// Decide whether a test with an unmet prerequisite may run. Returns `true` when the test should
/// go on. When the prerequisite is missing: panics under CI, otherwise prints why and returns
/// `false` so the caller can return early.
pub fn require(ok: bool, what: &str) -> bool {
    if ok {
        return true;
    }
    if in_ci() {
        panic!("prerequisite missing under CI=true: {what}");
    }
    eprintln!("SKIPPED (not in CI): prerequisite missing: {what}");
    false
}

/// Shorthand: the test needs root (network namespaces, raw sockets).
pub fn require_root() -> bool {
    require(is_root(), "root (network namespaces / raw sockets)")
}

/// The CPUs this process may use; fails the test when they are fewer than `n` (`why`: what
/// needs them). Not skipped: every machine this project's CI runs on has two.
pub fn cpus_at_least(n: usize, why: &str) -> usize {
    let cpus = std::thread::available_parallelism().map_or(1, |c| c.get());
    assert!(cpus >= n, "{why} needs {n} CPUs, this machine has {cpus}");
    cpus
}

/// Shorthand: the test needs `tshark` on PATH.
pub fn require_tshark() -> bool {
    require(
        has_tool("tshark"),
        "tshark on PATH (apt-get install tshark)",
    )
}

//! `pnctl ... | head` must end quietly when the reader goes away (no panic on EPIPE).

use std::io::Read;
use std::process::{Command, Stdio};

#[test]
fn closed_stdout_pipe_is_not_a_panic() {
    // `--help` of every subcommand writes far more than one pipe read; close the pipe after
    // the first bytes, as `head -c 1` would.
    let mut child = Command::new(env!("CARGO_BIN_EXE_pnctl"))
        .args(["write", "--help"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("pnctl runs");
    let mut stdout = child.stdout.take().unwrap();
    let mut one = [0u8; 1];
    stdout.read_exact(&mut one).unwrap();
    drop(stdout);
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "pnctl panicked: {stderr}");
    assert_ne!(out.status.code(), Some(101), "exit code of a Rust panic");
}

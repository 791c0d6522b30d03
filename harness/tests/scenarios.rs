//! Every scenario file under `scenarios/` is its own named test, run against a fresh lab
//! (namespaces, veth, the real pn-device binary). Tests run in parallel: each lab has its own
//! namespaces, so the fixed API port never clashes. The capture of every run then goes through
//! tshark (no malformed frame, no expert warning).

use pn_lab::scenario::run::{run_with, RunOptions};
use pn_lab::scenario::Scenario;
use rstest::rstest;
use std::path::PathBuf;

#[rstest]
fn scenario(#[files("../scenarios/**/*.toml")] path: PathBuf) {
    let sc = Scenario::load(&path).unwrap_or_else(|e| panic!("{e}"));
    if !pn_testkit::env::require_root() || !pn_testkit::env::require_tshark() {
        return;
    }
    let o = RunOptions {
        check_capture: true,
        // A failed run's capture and device log: under target/, never in the source tree.
        artifacts: PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("lab-failures"),
        ..RunOptions::default()
    };
    run_with(&sc, &o).unwrap_or_else(|e| panic!("{e}"));
}

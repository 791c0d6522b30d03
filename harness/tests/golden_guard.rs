//! The golden files really guard the responses: a scenario fails when its golden file is
//! deleted or when a response field differs from it.

use pn_lab::scenario::run::{golden_dir, run_with, scenarios_dir, RunOptions};
use pn_lab::scenario::Scenario;

/// The scenario against the golden files under `root`; the failed runs' artifacts go to a
/// scratch directory, not under the current directory.
fn run_with_golden(sc: &Scenario, root: &std::path::Path) -> Result<(), String> {
    let scratch = tempfile::tempdir().unwrap();
    run_with(
        sc,
        &RunOptions {
            golden_root: root.to_path_buf(),
            artifacts: scratch.path().to_path_buf(),
            ..RunOptions::default()
        },
    )
}

fn copy_golden(name: &str, to: &std::path::Path) {
    let from = golden_dir().join(name);
    let dst = to.join(name);
    std::fs::create_dir_all(&dst).unwrap();
    for e in std::fs::read_dir(&from).unwrap().flatten() {
        std::fs::copy(e.path(), dst.join(e.file_name())).unwrap();
    }
}

#[test]
fn deleted_or_changed_golden_files_fail_the_scenario() {
    if !pn_testkit::env::require_root() {
        return;
    }
    // Never let insta write or accept anything here.
    std::env::set_var("INSTA_UPDATE", "no");
    std::env::remove_var("INSTA_FORCE_PASS");
    let sc = Scenario::load(&scenarios_dir().join("t07-start-while-running.toml")).unwrap();

    // Unchanged copy: passes.
    let ok = tempfile::tempdir().unwrap();
    copy_golden(&sc.name, ok.path());
    run_with_golden(&sc, ok.path()).expect("an exact copy of the golden files passes");

    // Deleted golden file: fails.
    let deleted = tempfile::tempdir().unwrap();
    copy_golden(&sc.name, deleted.path());
    std::fs::remove_file(deleted.path().join(&sc.name).join("second-start.snap")).unwrap();
    let e = run_with_golden(&sc, deleted.path()).unwrap_err();
    assert!(e.contains("second-start"), "{e}");

    // One field changed in the golden file: fails.
    let changed = tempfile::tempdir().unwrap();
    copy_golden(&sc.name, changed.path());
    let f = changed.path().join(&sc.name).join("second-start.snap");
    let text = std::fs::read_to_string(&f).unwrap();
    assert!(text.contains("\"errorCode\": 0"));
    std::fs::write(&f, text.replace("\"errorCode\": 0", "\"errorCode\": -4")).unwrap();
    let e = run_with_golden(&sc, changed.path()).unwrap_err();
    assert!(e.contains("second-start"), "{e}");
}

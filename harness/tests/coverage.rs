//! The coverage map of scenarios/README.md is complete: every spec row has a scenario that
//! exists, parses, and claims the row in its `covers` list.

use pn_lab::coverage::{check, ROWS};
use pn_lab::scenario::{run::scenarios_dir, Scenario};

fn all_scenarios() -> Vec<Scenario> {
    let mut out = Vec::new();
    let mut stack = vec![scenarios_dir()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "toml") {
                out.push(Scenario::load(&p).unwrap_or_else(|e| panic!("{e}")));
            }
        }
    }
    out
}

#[test]
fn every_spec_row_has_a_scenario() {
    let readme = std::fs::read_to_string(scenarios_dir().join("README.md")).unwrap();
    let scenarios = all_scenarios();
    let problems = check(&readme, &scenarios);
    assert!(
        problems.is_empty(),
        "coverage map incomplete ({} rows):\n{}",
        ROWS.len(),
        problems.join("\n")
    );
}

#[test]
fn scenario_names_are_unique() {
    let scenarios = all_scenarios();
    let mut names: Vec<_> = scenarios.iter().map(|s| s.name.clone()).collect();
    names.sort();
    let before = names.len();
    names.dedup();
    assert_eq!(
        before,
        names.len(),
        "two scenario files share a file name (golden folders would clash)"
    );
}

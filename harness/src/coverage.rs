//! The map from specification rows to the scenarios that cover them.
//!
//! [`ROWS`] lists every row the harness must cover: each transition of the section 3 table, the
//! rules below it, each error track, each `reasonCode`, the licence gate, the API key, the
//! limits of section 8, and held writes over link loss. `scenarios/README.md` carries a table
//! `| row | spec | scenarios |`; [`check`] fails when a row has no scenario, names a scenario
//! file that does not exist, or names one whose `covers` list does not claim the row.

use crate::scenario::Scenario;
use std::collections::{BTreeMap, BTreeSet};

/// One specification row to cover.
#[derive(Debug, Clone, Copy)]
pub struct Row {
    pub id: &'static str,
    pub section: &'static str,
    pub text: &'static str,
}

const fn row(id: &'static str, section: &'static str, text: &'static str) -> Row {
    Row { id, section, text }
}

/// Every row to cover. T* are the rows of the section 3 table in order.
pub const ROWS: &[Row] = &[
    row(
        "T01",
        "3",
        "Stopped/Unknown, POST /api/start, success -> Initialized, connected=false, errorCode=0",
    ),
    row(
        "T02",
        "3",
        "any, POST /api/start, control-plane start fails -> Stopped, errorCode = start result code",
    ),
    row(
        "T03",
        "3",
        "any, POST /api/start, reuse-path stack or loop start fails -> Stopped",
    ),
    row(
        "T04",
        "3",
        "Stopped/Unknown, POST /api/start, NIC missing or data-plane open fails -> ConfigError",
    ),
    row(
        "T05",
        "3",
        "any, POST /api/start, IOCR or start phase fails -> previous state kept, request fails",
    ),
    row(
        "T06",
        "3",
        "ConfigError, POST /api/start after reload with a valid NIC -> Initialized (fresh start)",
    ),
    row(
        "T07",
        "3",
        "any, POST /api/start while running -> unchanged, request ignored",
    ),
    row(
        "T08",
        "3",
        "any (including stopped), POST /api/stop -> Stopped, errorCode=0, statusMessage cleared",
    ),
    row(
        "T09",
        "3",
        "any, service shutdown -> Stopped, all resources released",
    ),
    row(
        "T10",
        "3",
        "Initialized, cyclic exchange established -> DataExchange",
    ),
    row(
        "T11",
        "3",
        "DataExchange, cyclic exchange lost -> Aborted, everConnected stays true",
    ),
    row(
        "T12",
        "3",
        "running, periodic licence recheck fails -> Stopped",
    ),
    row(
        "R1",
        "3 rule 1",
        "POST /api/config/reload accepted in every state",
    ),
    row(
        "R2",
        "3 rule 2",
        "stop is a soft stop: instance, binding, configuration kept",
    ),
    row(
        "R3",
        "3 rule 3",
        "start after stop reuses when the fingerprint is unchanged, else fresh start",
    ),
    row(
        "R4",
        "3 rule 4",
        "alarm states (active, acknowledged) and transitions (decided)",
    ),
    row(
        "E400",
        "7.2",
        "400: invalid POST /api/io parameters or diag body, message echoes the body",
    ),
    row(
        "E401",
        "5.4, 7.2",
        "401: API key configured, header missing or wrong",
    ),
    row("E404", "4 rule 7, 7.2", "404: unknown path or wrong method"),
    row("E413", "7.2, 8", "413: request body above 64 KB"),
    row(
        "E500",
        "7.2",
        "500: internal error, where reachable (decided)",
    ),
    row(
        "E2-start",
        "7.1",
        "Track 2 failure of POST /api/start (200, ok=false)",
    ),
    row("E2-stop", "7.1", "Track 2 body of POST /api/stop"),
    row(
        "E2-reload",
        "7.1",
        "Track 2 failure of POST /api/config/reload (bad XML, running configuration kept)",
    ),
    row("RC-empty", "7.3", "reasonCode empty: delivered"),
    row(
        "RC-LinkDown",
        "7.3",
        "reasonCode PnS.Io.NotDelivered.LinkDown",
    ),
    row(
        "RC-DataPlaneStopped",
        "7.3",
        "reasonCode PnS.Io.NotDelivered.DataPlaneStopped",
    ),
    row(
        "RC-NotFlushed",
        "7.3",
        "reasonCode PnS.Io.NotDelivered.NotFlushed",
    ),
    row("L-missing", "1.10", "licence missing: start refused"),
    row("L-invalid", "1.10", "licence invalid: start refused"),
    row(
        "L-expiring",
        "1.10",
        "licence expiring while running: slave stopped by the recheck",
    ),
    row(
        "K",
        "5",
        "API key: accepted with the right header on every endpoint",
    ),
    row("LIM-body", "8", "request body size limit 64 KB"),
    row(
        "LIM-history",
        "8",
        "alarm history keeps the most recent 500",
    ),
    row("LIM-offset", "8", "write offset integer >= 0"),
    row(
        "LIM-image",
        "8, 2.11",
        "process-image size per area derived from the layout, clamped to 1..1440",
    ),
    row(
        "HOLD",
        "1.9, 4 rule 1",
        "Q writes during link loss are held and delivered after recovery",
    ),
];

/// Parse the coverage table of scenarios/README.md: rows `| ID | ... | a.toml, b.toml |`.
/// Returns the scenario file names per row id.
pub fn parse_table(readme: &str) -> BTreeMap<String, Vec<String>> {
    let ids: BTreeSet<&str> = ROWS.iter().map(|r| r.id).collect();
    let mut out = BTreeMap::new();
    for line in readme.lines() {
        let cells: Vec<&str> = line
            .trim()
            .trim_matches('|')
            .split('|')
            .map(str::trim)
            .collect();
        if cells.len() < 3 {
            continue;
        }
        let id = cells[0].trim_matches('`');
        if !ids.contains(id) {
            continue;
        }
        let files = cells[cells.len() - 1]
            .split(',')
            .map(|f| f.trim().trim_matches('`').to_string())
            .filter(|f| !f.is_empty() && f != "-")
            .collect();
        out.insert(id.to_string(), files);
    }
    out
}

/// Every problem with the coverage map (empty = complete).
pub fn check(readme: &str, scenarios: &[Scenario]) -> Vec<String> {
    let table = parse_table(readme);
    let by_file: BTreeMap<String, &Scenario> = scenarios
        .iter()
        .map(|s| {
            (
                s.path
                    .file_name()
                    .map(|f| f.to_string_lossy().into_owned())
                    .unwrap_or_default(),
                s,
            )
        })
        .collect();
    let mut problems = Vec::new();
    for r in ROWS {
        match table.get(r.id) {
            None => problems.push(format!(
                "row {} ({}) is missing from the table",
                r.id, r.text
            )),
            Some(files) if files.is_empty() => {
                problems.push(format!("row {} ({}) has no scenario", r.id, r.text))
            }
            Some(files) => {
                for f in files {
                    match by_file.get(f) {
                        None => {
                            problems.push(format!("row {}: scenario file {f} does not exist", r.id))
                        }
                        Some(s) if !s.covers.iter().any(|c| c == r.id) => problems.push(format!(
                            "row {}: {f} does not list {} in `covers`",
                            r.id, r.id
                        )),
                        Some(_) => {}
                    }
                }
            }
        }
    }
    let known: BTreeSet<&str> = ROWS.iter().map(|r| r.id).collect();
    for s in scenarios {
        for c in &s.covers {
            if !known.contains(c.as_str()) {
                problems.push(format!("{}: covers unknown row `{c}`", s.path.display()));
            }
        }
    }
    problems
}

/// Number of data rows in the section 3 transition table of the specification text.
pub fn spec_transition_rows(spec: &str) -> usize {
    let Some(start) = spec.find("## 3. States and transitions") else {
        return 0;
    };
    let section = &spec[start..];
    let end = section[3..].find("\n## ").map_or(section.len(), |e| e + 3);
    section[..end]
        .lines()
        .filter(|l| l.starts_with('|') && !l.starts_with("|---") && !l.starts_with("| From"))
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_parsing() {
        let t = parse_table("| row | spec | scenarios |\n|---|---|---|\n| T01 | 3 | `a.toml`, b.toml |\n| T02 | 3 | - |\n");
        assert_eq!(t["T01"], vec!["a.toml", "b.toml"]);
        assert!(t["T02"].is_empty());
    }

    #[test]
    fn every_transition_row_of_the_spec_is_listed() {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../shared/spec/http-interface.md");
        let Ok(spec) = std::fs::read_to_string(&p) else {
            // The steering repository's shared/ is beside the checkout in CI and here; a bare
            // clone without it still checks the table against ROWS.
            assert!(
                !pn_testkit::env::in_ci(),
                "{} missing under CI",
                p.display()
            );
            return;
        };
        let t_rows = ROWS.iter().filter(|r| r.id.starts_with('T')).count();
        assert_eq!(spec_transition_rows(&spec), t_rows);
    }
}

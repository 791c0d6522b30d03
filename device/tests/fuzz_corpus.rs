//! Replays the committed cargo-fuzz corpus of the device parsers (`device/fuzz/corpus/<target>/*`)
//! on the stable toolchain, as part of `cargo test`: every file through the parser its target
//! fuzzes, with the targets' checks (no panic, deterministic, accepted values within the
//! endpoint's constraints). The fuzz runs themselves: `ci/fuzz-smoke.sh` and
//! docs/protocol-notes/fuzz-scapy.md.

use std::path::{Path, PathBuf};

use pn_device::api::body;

fn corpus(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus")
        .join(target);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("corpus entry").path())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "empty corpus {}", dir.display());
    files
        .into_iter()
        .map(|p| {
            let data = std::fs::read(&p).expect("corpus file");
            (p, data)
        })
        .collect()
}

/// Every target in device/fuzz/fuzz_targets has a corpus directory and a replay here.
#[test]
fn every_device_fuzz_target_has_a_corpus() {
    let targets = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/fuzz_targets");
    let mut n = 0;
    for e in std::fs::read_dir(targets).expect("fuzz_targets") {
        let name = e.expect("entry").path();
        let name = name
            .file_stem()
            .expect("stem")
            .to_string_lossy()
            .to_string();
        assert!(!corpus(&name).is_empty());
        assert!(
            REPLAYED.contains(&name.as_str()) || REPLAYED_IN_FARM.contains(&name.as_str()),
            "fuzz target {name} has no replay in device/tests/fuzz_corpus.rs"
        );
        n += 1;
    }
    assert_eq!(n, REPLAYED.len() + REPLAYED_IN_FARM.len());
}

/// Targets of farm parsers (the fuzz project depends on pn-farm; pn-device cannot): their
/// corpus is replayed by pn-farm's tests (`plant::tests::plant_file_fuzz_corpus_replays`).
const REPLAYED_IN_FARM: &[&str] = &["plant_file"];

const REPLAYED: &[&str] = &[
    "api_body_io",
    "api_body_alarm_ack",
    "api_body_reset",
    "api_body_high_resolution_timer",
    "api_body_config_reload",
    "api_body_diag",
    "runtime_config",
    "settings_json",
    "device_connect_request",
];

/// A rejection names a Track 1 code and a reason.
fn rejection_ok(r: &body::Rejection, file: &Path) {
    assert!(
        r.code.starts_with("PnS.Api.") && !r.reason.is_empty(),
        "{}: {r:?}",
        file.display()
    );
}

fn replay<T: PartialEq + std::fmt::Debug>(
    target: &str,
    parse: fn(&[u8]) -> Result<T, body::Rejection>,
    accepted: impl Fn(&T, &[u8]) -> bool,
) -> (usize, usize) {
    let (mut ok, mut rejected) = (0, 0);
    for (file, data) in corpus(target) {
        let first = parse(&data);
        assert_eq!(first, parse(&data), "{}: not deterministic", file.display());
        match &first {
            Ok(v) => {
                assert!(accepted(v, &data), "{}: accepted {v:?}", file.display());
                ok += 1;
            }
            Err(r) => {
                rejection_ok(r, &file);
                rejected += 1;
            }
        }
    }
    (ok, rejected)
}

#[test]
fn api_body_corpora_replay() {
    // Each corpus holds the spec's examples (seed-*), so each has accepted bodies too.
    let counts = [
        replay("api_body_io", body::parse_io, |w, d| {
            !w.data.is_empty() && w.data.len() <= d.len() / 2
        }),
        replay("api_body_alarm_ack", body::parse_alarm_ack, |id, d| {
            id.len() <= d.len()
        }),
        replay("api_body_reset", body::parse_reset, |_, _| true),
        replay(
            "api_body_high_resolution_timer",
            body::parse_high_resolution_timer,
            |_, _| true,
        ),
        replay(
            "api_body_config_reload",
            body::parse_config_reload,
            |p, _| p.as_ref().is_none_or(|p| !p.as_os_str().is_empty()),
        ),
        replay("api_body_diag", body::parse_diag, |d, _| {
            d.entry.slot <= 0x7FFF
                && d.entry.severity <= 3
                && d.entry.text.len() <= body::MAX_DIAG_TEXT
        }),
    ];
    for (i, (ok, rejected)) in counts.iter().enumerate() {
        assert!(
            *ok > 0 && *rejected > 0,
            "{}: {ok} accepted, {rejected} rejected",
            REPLAYED[i]
        );
    }
}

#[test]
fn config_settings_and_connect_corpora_replay() {
    for (file, data) in corpus("runtime_config") {
        let Ok(text) = std::str::from_utf8(&data) else {
            continue;
        };
        let first = pn_device::config::RuntimeConfig::parse(text, "fuzz");
        match &first {
            Ok(a) => assert_eq!(
                Ok(a),
                pn_device::config::RuntimeConfig::parse(text, "fuzz").as_ref(),
                "{}",
                file.display()
            ),
            Err(e) => assert!(
                e.starts_with("configuration fuzz"),
                "{}: {e}",
                file.display()
            ),
        }
    }
    for (_, data) in corpus("settings_json") {
        if let Ok(text) = std::str::from_utf8(&data) {
            let _ = pn_device::config::Settings::from_json_text(Some(text));
        }
    }
    for (_, data) in corpus("device_connect_request") {
        let _ = pn_protocol::machine::cmdev::connect::parse_connect(&data);
    }
}

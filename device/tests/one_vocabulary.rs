//! One direction vocabulary (docs/decisions.md §1): the dashboard, `pnctl`, the docs and the
//! log and error messages name the process data as a PLC programmer addresses the device
//! (spec 4.1: I = the PLC's inputs, device -> controller, `outputHex`; Q = the PLC's outputs,
//! controller -> device, `inputHex`). The device's own view ("I area" for the bytes the
//! controller sends) said the opposite for the same letters; this test keeps it from coming
//! back. Quotations of the spec in the Markdown docs (text in double quotes) are allowed.

use std::path::{Path, PathBuf};

/// Phrases of the device's view of the letters.
const FORBIDDEN: &[&str] = &[
    "I area",
    "Q area",
    "I-area",
    "Q-area",
    "I-module",
    "Q-module",
    "I data",
    "Q data",
    "service's I",
    "service's Q",
    "API's I",
    "API's Q",
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn files(dir: &Path, ext: &str, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            files(&p, ext, out);
        } else if p.extension().is_some_and(|x| x == ext) {
            out.push(p);
        }
    }
}

/// Occurrences of the forbidden phrases as words (not inside a longer word: "API area").
fn hits(text: &str) -> Vec<&'static str> {
    let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
    let mut v = Vec::new();
    for f in FORBIDDEN {
        for (i, _) in text.match_indices(f) {
            let before = text[..i].chars().next_back();
            let after = text[i + f.len()..].chars().next();
            if !word(before) && !word(after) {
                v.push(*f);
            }
        }
    }
    v
}

/// Text outside double quotes (a Markdown line's quotations of the spec are its words).
fn unquoted(line: &str) -> String {
    line.split('"').step_by(2).collect::<Vec<_>>().join(" ")
}

/// String literals of a Rust line that is not a comment (the messages it logs or returns).
fn literals(line: &str) -> String {
    let t = line.trim_start();
    if t.starts_with("//") {
        return String::new();
    }
    line.split('"')
        .skip(1)
        .step_by(2)
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn dashboard_pnctl_docs_and_messages_use_one_direction_vocabulary() {
    let r = root();
    let mut found = Vec::new();
    let mut check = |path: &Path, pick: &dyn Fn(&str) -> String| {
        let text =
            std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        for (n, line) in text.lines().enumerate() {
            for h in hits(&pick(line)) {
                found.push(format!(
                    "{}:{}: \"{h}\": {}",
                    path.display(),
                    n + 1,
                    line.trim()
                ));
            }
        }
    };
    let whole = |l: &str| l.to_string();
    // The page and pnctl: every word (labels, help, comments a maintainer copies from).
    for p in [
        "device/assets/dashboard.html",
        "device/assets/dashboard.js",
        "client/src/bin/pnctl/main.rs",
        "client/src/bin/pnctl/commands.rs",
        "client/src/bin/pnctl/output.rs",
    ] {
        check(&r.join(p), &whole);
    }
    // The docs.
    let mut md = vec![r.join("README.md"), r.join("device/README.md")];
    files(&r.join("docs"), "md", &mut md);
    for p in md.iter().filter(|p| p.exists()) {
        check(p, &unquoted);
    }
    // The example configurations' comments.
    let mut xml = Vec::new();
    files(&r.join("device/config"), "xml", &mut xml);
    for p in &xml {
        check(p, &whole);
    }
    // Log and error messages of the daemon and the client library.
    let mut rs = Vec::new();
    files(&r.join("device/src"), "rs", &mut rs);
    files(&r.join("client/src"), "rs", &mut rs);
    for p in &rs {
        check(p, &literals);
    }
    assert!(
        found.is_empty(),
        "the device's view of I/Q is back (use the PLC's: I = inputs = outputHex, Q = outputs = \
         inputHex; docs/decisions.md §1):\n{}",
        found.join("\n")
    );
    // The test sees what it guards (a moved file must not make it pass by reading nothing).
    assert!(md.len() > 5 && rs.len() > 20 && !xml.is_empty());
}

#[test]
fn the_phrase_finder_finds_the_old_labels() {
    assert_eq!(hits("I area, controller -> device"), vec!["I area"]);
    assert_eq!(hits("the service's Q area"), vec!["Q area", "service's Q"]);
    assert!(hits("the API area and PLC inputs (I, outputHex)").is_empty());
    assert_eq!(literals(r#"    // "I area" in a comment"#), "");
    assert_eq!(
        literals(r#"  warn!("the Q area is full")"#),
        "the Q area is full"
    );
    assert_eq!(
        unquoted(r#"spec 2.2 "I-module input data" names inputHex"#).trim(),
        "spec 2.2   names inputHex"
    );
}

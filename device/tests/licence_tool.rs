//! Issue item 4: the pn-licence tool (keygen, issue, verify, machine-id) and its certificates
//! being accepted by the library's verifier.

use std::process::Command;

const TOOL: &str = env!("CARGO_BIN_EXE_pn-licence");

fn run(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(TOOL).args(args).output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

#[test]
fn keygen_issue_verify_roundtrip() {
    let d = tempfile::tempdir().unwrap();
    let p = |n: &str| d.path().join(n).display().to_string();
    let (ok, out, err) = run(&["keygen", "--private", &p("k"), "--public", &p("k.pub")]);
    assert!(ok, "{err}");
    let public = std::fs::read_to_string(p("k.pub"))
        .unwrap()
        .trim()
        .to_string();
    assert_eq!(public.len(), 64);
    assert!(out.contains(&public));
    let (ok, _, err) = run(&[
        "issue",
        "--key",
        &p("k"),
        "--licensee",
        "acme",
        "--days",
        "30",
        "--any",
        "--out",
        &p("c.json"),
    ]);
    assert!(ok, "{err}");
    let (ok, out, err) = run(&[
        "verify",
        "--cert",
        &p("c.json"),
        "--public-key-file",
        &p("k.pub"),
    ]);
    assert!(ok, "{err}");
    assert!(out.contains("licensee=acme"));
    // the service's verifier agrees
    let text = std::fs::read_to_string(p("c.json")).unwrap();
    let payload = pn_device::licence::verify(
        &text,
        &[public],
        pn_device::util::unix_now(),
        &pn_device::licence::Identity::default(),
    )
    .unwrap();
    assert_eq!(payload.licensee, "acme");
    // another key does not verify it
    run(&["keygen", "--private", &p("k2"), "--public", &p("k2.pub")]);
    let (ok, _, err) = run(&[
        "verify",
        "--cert",
        &p("c.json"),
        "--public-key-file",
        &p("k2.pub"),
    ]);
    assert!(!ok);
    assert!(err.contains("signature"), "{err}");
    // expired
    let (ok, _, _) = run(&[
        "issue",
        "--key",
        &p("k"),
        "--licensee",
        "x",
        "--seconds",
        "-5",
        "--any",
        "--out",
        &p("e.json"),
    ]);
    assert!(ok);
    let (ok, _, err) = run(&[
        "verify",
        "--cert",
        &p("e.json"),
        "--public-key-file",
        &p("k.pub"),
    ]);
    assert!(!ok && err.contains("expired"), "{err}");
    // machine binding to another machine
    run(&[
        "issue",
        "--key",
        &p("k"),
        "--licensee",
        "x",
        "--days",
        "1",
        "--machine-id",
        "ffff",
        "--out",
        &p("m.json"),
    ]);
    let (ok, _, err) = run(&[
        "verify",
        "--cert",
        &p("m.json"),
        "--public-key-file",
        &p("k.pub"),
    ]);
    assert!(!ok && err.contains("machine"), "{err}");
    // usage errors are reported, not panics
    let (ok, _, err) = run(&["issue", "--key", &p("k")]);
    assert!(!ok && err.contains("required"), "{err}");
    let (ok, _, _) = run(&["bogus"]);
    assert!(!ok);
}

/// The committed development key issues certificates the embedded default settings trust.
#[test]
fn dev_key_matches_embedded_trust_anchor() {
    let dir = env!("CARGO_MANIFEST_DIR");
    let d = tempfile::tempdir().unwrap();
    let cert = d.path().join("c.json").display().to_string();
    let (ok, _, err) = run(&[
        "issue",
        "--key",
        &format!("{dir}/testdata/dev-licence-private-key.txt"),
        "--licensee",
        "dev",
        "--days",
        "1",
        "--any",
        "--out",
        &cert,
    ]);
    assert!(ok, "{err}");
    let s = pn_device::config::Settings::embedded();
    let text = std::fs::read_to_string(&cert).unwrap();
    pn_device::licence::verify(
        &text,
        &s.trusted_keys,
        pn_device::util::unix_now(),
        &Default::default(),
    )
    .unwrap();
    let pubhex =
        std::fs::read_to_string(format!("{dir}/testdata/dev-licence-public-key.hex")).unwrap();
    assert_eq!(s.trusted_keys, vec![pubhex.trim().to_string()]);
}

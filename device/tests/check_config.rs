//! `pn-device check-config`: the real binary against temporary installations, one test per kind
//! of error (each with its exit code, docs/decisions.md §22) and the all-OK case.
//!
//! Every run happens inside a network namespace of its own with one end of a veth pair as its NIC: the NIC
//! check sees only that namespace's interfaces, and the API-port check binds 127.0.0.1:18840 of
//! that namespace, never the host's (another test's daemon may want it). Needs root (namespaces;
//! `setpriv` from util-linux for the capability cases): under CI=true a missing prerequisite
//! fails the test.

use std::path::{Path, PathBuf};

use pn_device::licence::{self, Binding, Payload};
use pn_testkit::netns::NetNs;
use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_pn-device");
/// The NIC's MAC (locally administered).
const MAC: &str = "02:5a:00:00:00:01";
const NIC: &str = "pncc0";
/// The other end of the NIC's veth pair (this kernel has no dummy interfaces; a veth pair is an
/// Ethernet NIC with carrier once both ends are up).
const PEER: &str = "pncc1";

fn prerequisites() -> bool {
    pn_testkit::env::require_root()
        && pn_testkit::env::require(
            pn_testkit::env::has_tool("setpriv"),
            "setpriv on PATH (util-linux)",
        )
}

/// A temporary installation: settings, configuration XML and a licence signed with a key of its
/// own, and a namespace whose NIC is [`NIC`], one end of a veth pair.
struct Site {
    ns: NetNs,
    dir: tempfile::TempDir,
    private_key: String,
    public_key: String,
}

/// One run of the binary.
struct Run {
    code: i32,
    out: String,
}

impl Run {
    /// The lines of one check at one level.
    fn lines(&self, level: &str, check: &str) -> Vec<&str> {
        self.out
            .lines()
            .filter(|l| {
                let mut w = l.split_whitespace();
                w.next() == Some(level) && w.next() == Some(check)
            })
            .collect()
    }

    fn has(&self, level: &str, check: &str, text: &str) -> bool {
        self.lines(level, check).iter().any(|l| l.contains(text))
    }
}

impl Site {
    fn new() -> Site {
        let ns = NetNs::new("pcc").expect("namespace");
        for argv in [
            &[
                "ip", "link", "add", NIC, "type", "veth", "peer", "name", PEER,
            ][..],
            &["ip", "link", "set", NIC, "address", MAC],
            &["ip", "link", "set", PEER, "up"],
            &["ip", "link", "set", NIC, "up"],
        ] {
            ns.exec_ok(argv).expect("veth NIC");
        }
        let dir = tempfile::tempdir().expect("temp dir");
        let (private_key, public_key) = licence::keygen().expect("keygen");
        let site = Site {
            ns,
            dir,
            private_key,
            public_key,
        };
        std::fs::write(
            site.path("device.xml"),
            pn_device::config::DEFAULT_CONFIG_XML,
        )
        .expect("xml");
        site.settings(json!({}));
        site.licence(Binding {
            machine_id: None,
            mac: None,
            any: Some(true),
        });
        site
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// settings.json: this site's files, NIC and trust anchor, with `extra` merged over them.
    fn settings(&self, extra: Value) {
        let mut s = json!({
            "Network": {"DefaultInterfaceName": NIC},
            "Paths": {
                "RuntimeConfig": self.path("device.xml"),
                "PersistenceDir": self.path("persist"),
            },
            "Licence": {
                "CertificatePath": self.path("licence.json"),
                "TrustedPublicKeys": [self.public_key],
            },
        });
        pn_testkit::daemon::merge(&mut s, extra);
        std::fs::write(self.path("settings.json"), s.to_string()).expect("settings");
    }

    /// A licence valid from an hour ago for a day, signed with this site's key.
    fn licence(&self, binding: Binding) {
        let now = pn_device::util::unix_now();
        self.licence_window(binding, now - 3600, now + 86400 * 365, &self.private_key);
    }

    fn licence_window(&self, binding: Binding, not_before: i64, not_after: i64, key: &str) {
        let p = Payload {
            licensee: "check-config test".into(),
            product: licence::PRODUCT.into(),
            serial: "cc-1".into(),
            issued_at: not_before,
            not_before,
            not_after,
            binding,
        };
        let key = licence::parse_private_key(key).expect("key");
        std::fs::write(self.path("licence.json"), licence::issue(&key, &p)).expect("licence");
    }

    /// `pn-device check-config --settings <site>` in the namespace, behind `wrapper` (e.g.
    /// setpriv), with `extra` arguments.
    fn run_with(&self, wrapper: &[&str], extra: &[&str]) -> Run {
        let mut c = self.ns.command(wrapper.first().copied().unwrap_or(BIN));
        if !wrapper.is_empty() {
            c.args(&wrapper[1..]).arg(BIN);
        }
        c.arg("check-config")
            .arg("--settings")
            .arg(self.path("settings.json"))
            .args(extra)
            .env_remove("VENDOR_PNET_NIC")
            .env_remove("PN_DEVICE_SETTINGS");
        let o = c.output().expect("run pn-device check-config");
        let run = Run {
            code: o.status.code().expect("exit code"),
            out: String::from_utf8_lossy(&o.stdout).into_owned(),
        };
        eprintln!(
            "check-config exit {}:\n{}{}",
            run.code,
            run.out,
            String::from_utf8_lossy(&o.stderr)
        );
        run
    }

    fn run(&self) -> Run {
        self.run_with(&[], &[])
    }
}

/// Drop every capability but `keep` from a root process: without CAP_DAC_OVERRIDE root still
/// reads the site's files, which it owns.
fn only_caps(keep: &[&str]) -> Vec<String> {
    let list: String = keep.iter().map(|c| format!(",+{c}")).collect();
    vec![
        "setpriv".into(),
        "--inh-caps=-all".into(),
        format!("--bounding-set=-all{list}"),
    ]
}

#[test]
fn a_complete_installation_is_ok_with_exit_0() {
    if !prerequisites() {
        return;
    }
    let site = Site::new();
    let r = site.run();
    assert_eq!(r.code, 0);
    for check in [
        "settings",
        "configuration",
        "nic",
        "licence",
        "capabilities",
        "http",
    ] {
        assert_eq!(r.lines("OK", check).len(), 1, "one OK line for {check}");
    }
    assert!(!r.out.contains("ERROR"));
    assert!(r.has("OK", "nic", MAC));
    assert!(r.has("OK", "licence", "unbound"));
    assert!(r.has("OK", "http", "127.0.0.1:18840 is free"));
    // The only warning: the shipped placeholder VendorID of the default configuration.
    assert_eq!(r.out.lines().filter(|l| l.starts_with("WARN")).count(), 1);
    assert!(r.has("WARN", "configuration", "VendorID 0xFFFF"));
    assert!(r
        .out
        .ends_with("pn-device check-config: OK (1 warning(s))\n"));

    // --json: the same findings as one document.
    let j = site.run_with(&[], &["--json"]);
    assert_eq!(j.code, 0);
    let v: Value = serde_json::from_str(&j.out).expect("one JSON document");
    assert_eq!(v["ok"], true);
    assert_eq!(v["exitCode"], 0);
    assert_eq!(v["checks"].as_array().expect("checks").len(), 7, "{v}");

    // A licence bound to this NIC's MAC is fine too.
    site.licence(Binding {
        machine_id: None,
        mac: Some(MAC.into()),
        any: None,
    });
    let r = site.run();
    assert_eq!(r.code, 0);
    assert!(r.has("OK", "licence", &format!("bound to MAC {MAC} ({NIC})")));
}

#[test]
fn settings_errors_exit_3_and_skip_what_depends_on_them() {
    if !prerequisites() {
        return;
    }
    let site = Site::new();
    std::fs::write(site.path("settings.json"), "{\"Api\": {").expect("write");
    let r = site.run();
    assert_eq!(r.code, 3);
    assert!(r.has("ERROR", "settings", "invalid JSON"));
    assert!(r.has("ERROR", "settings", "->"), "says what to do");
    for check in ["configuration", "nic", "licence"] {
        assert!(r.has("SKIP", check, "needs valid settings"), "{check}");
    }
    // The independent checks still run.
    assert!(r.has("OK", "capabilities", "CAP_NET_RAW"));
    assert!(r.has("OK", "http", "is free"));

    // A value of the wrong type, the same message the daemon refuses to start with.
    site.settings(json!({"Api": {"ApiKey": 5}}));
    let r = site.run();
    assert_eq!(r.code, 3);
    assert!(r.has("ERROR", "settings", "Api:ApiKey must be a string"));

    // A missing file named explicitly is an error, not the embedded defaults.
    std::fs::remove_file(site.path("settings.json")).expect("rm");
    let r = site.run();
    assert_eq!(r.code, 3);
    assert!(r.has("ERROR", "settings", "cannot read settings file"));

    // An unknown key is a warning only.
    site.settings(json!({"Api": {"ApiKee": "x"}}));
    let r = site.run();
    assert_eq!(r.code, 0);
    assert!(r.has("WARN", "settings", "unknown key 'Api:ApiKee'"));
}

#[test]
fn configuration_errors_exit_4() {
    if !prerequisites() {
        return;
    }
    let site = Site::new();
    let no_dap = pn_device::config::DEFAULT_CONFIG_XML.replace("Slot=\"0\"", "Slot=\"9\"");
    std::fs::write(site.path("device.xml"), no_dap).expect("xml");
    let r = site.run();
    assert_eq!(r.code, 4);
    assert!(r.has("ERROR", "configuration", "no DAP (Module Slot=0)"));
    assert!(r.has("SKIP", "nic", "needs a valid configuration"));
    assert!(r.has("SKIP", "licence", "needs a valid configuration"));

    // Not XML at all.
    std::fs::write(site.path("device.xml"), "<PnDeviceConfiguration>").expect("xml");
    let r = site.run();
    assert_eq!(r.code, 4);
    assert!(r.has("ERROR", "configuration", "XML error"));

    // --config overrides Paths:RuntimeConfig, as for the daemon.
    let other = site.path("other.xml");
    let r = site.run_with(&[], &["--config", other.to_str().expect("utf-8")]);
    assert_eq!(r.code, 4);
    assert!(r.has("ERROR", "configuration", "other.xml"));
    std::fs::write(&other, pn_device::config::DEFAULT_CONFIG_XML).expect("xml");
    let r = site.run_with(&[], &["--config", other.to_str().expect("utf-8")]);
    assert_eq!(r.code, 0);
}

#[test]
fn licence_errors_exit_5_each_with_its_reason() {
    if !prerequisites() {
        return;
    }
    let site = Site::new();
    let now = pn_device::util::unix_now();
    let any = || Binding {
        machine_id: None,
        mac: None,
        any: Some(true),
    };

    std::fs::remove_file(site.path("licence.json")).expect("rm");
    let r = site.run();
    assert_eq!(r.code, 5);
    assert!(r.has("ERROR", "licence", "no certificate at"));
    assert!(r.has("ERROR", "licence", "put the certificate from your supplier"));

    site.licence_window(any(), now - 7200, now - 3600, &site.private_key.clone());
    let r = site.run();
    assert_eq!(r.code, 5);
    assert!(r.has("ERROR", "licence", "certificate expired at"));

    site.licence_window(any(), now + 3600, now + 7200, &site.private_key.clone());
    let r = site.run();
    assert_eq!(r.code, 5);
    assert!(r.has("ERROR", "licence", "not valid before"));

    let (other_key, _) = licence::keygen().expect("keygen");
    site.licence_window(any(), now - 60, now + 86400, &other_key);
    let r = site.run();
    assert_eq!(r.code, 5);
    assert!(r.has("ERROR", "licence", "signature does not verify"));
    assert!(r.has("ERROR", "licence", "Licence:TrustedPublicKeys"));

    site.licence(Binding {
        machine_id: None,
        mac: Some("02:5a:00:00:00:99".into()),
        any: None,
    });
    let r = site.run();
    assert_eq!(r.code, 5);
    assert!(r.has(
        "ERROR",
        "licence",
        "bound to MAC 02:5a:00:00:00:99, not this NIC"
    ));

    site.licence(Binding {
        machine_id: Some("not-this-machine".into()),
        mac: None,
        any: None,
    });
    let r = site.run();
    assert_eq!(r.code, 5);
    assert!(r.has("ERROR", "licence", "bound to machine id"));

    std::fs::write(site.path("licence.json"), "not a certificate").expect("write");
    let r = site.run();
    assert_eq!(r.code, 5);
    assert!(r.has("ERROR", "licence", "not valid JSON"));

    // Valid but close to its end: a warning.
    site.licence_window(any(), now - 60, now + 86400 * 3, &site.private_key.clone());
    let r = site.run();
    assert_eq!(r.code, 0);
    assert!(r.has("WARN", "licence", "expires in less than 30 days"));

    // The shipped development trust anchor is a warning on an otherwise valid installation.
    let dev_key = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/dev-licence-public-key.hex"),
    )
    .expect("dev key");
    site.settings(json!({"Licence": {"TrustedPublicKeys": [site.public_key, dev_key.trim()]}}));
    site.licence(any());
    let r = site.run();
    assert_eq!(r.code, 0);
    assert!(r.has("WARN", "licence", "public development key"));
}

#[test]
fn nic_errors_exit_6_and_a_down_nic_is_a_warning() {
    if !prerequisites() {
        return;
    }
    let site = Site::new();
    site.settings(json!({"Network": {"DefaultInterfaceName": "pnabsent0"}}));
    let r = site.run();
    assert_eq!(r.code, 6);
    assert!(r.has(
        "ERROR",
        "nic",
        "'pnabsent0' (from Network:DefaultInterfaceName of the settings) does not exist"
    ));

    // VENDOR_PNET_NIC comes first, as in the daemon: here the namespace's loopback, which is
    // not Ethernet.
    let mut c = site.ns.command(BIN);
    c.arg("check-config")
        .arg("--settings")
        .arg(site.path("settings.json"))
        .env("VENDOR_PNET_NIC", "lo");
    let o = c.output().expect("run");
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(6), "{out}");
    assert!(
        out.contains("'lo' (from VENDOR_PNET_NIC) is not an Ethernet interface"),
        "{out}"
    );

    site.settings(json!({}));
    site.ns
        .exec_ok(&["ip", "link", "set", NIC, "down"])
        .expect("down");
    let r = site.run();
    assert_eq!(r.code, 0);
    assert!(r.has("WARN", "nic", "administratively down"));
    assert!(r.has("WARN", "nic", &format!("ip link set {NIC} up")));
}

#[test]
fn missing_capabilities_exit_7_for_raw_and_admin_and_warn_for_the_others() {
    if !prerequisites() {
        return;
    }
    let site = Site::new();
    let w = only_caps(&["net_admin"]);
    let w: Vec<&str> = w.iter().map(String::as_str).collect();
    let r = site.run_with(&w, &[]);
    assert_eq!(r.code, 7);
    let errors = r.lines("ERROR", "capabilities");
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].contains("lacks CAP_NET_RAW"));
    assert!(
        errors[0].contains("AmbientCapabilities="),
        "says what to do"
    );
    for cap in ["CAP_SYS_NICE", "CAP_IPC_LOCK", "CAP_NET_BIND_SERVICE"] {
        assert!(r.has("WARN", "capabilities", cap), "{cap}");
    }

    // The two the device cannot work without: warnings for the rest, exit 0.
    let w = only_caps(&["net_raw", "net_admin"]);
    let w: Vec<&str> = w.iter().map(String::as_str).collect();
    let r = site.run_with(&w, &[]);
    assert_eq!(r.code, 0);
    assert_eq!(r.lines("WARN", "capabilities").len(), 3);
}

#[test]
fn a_taken_api_port_exits_8() {
    if !prerequisites() {
        return;
    }
    let site = Site::new();
    // Hold 127.0.0.1:18840 of the site's namespace (the socket stays in the namespace it was
    // created in after the thread leaves).
    let holder = site
        .ns
        .enter(|| std::net::TcpListener::bind("127.0.0.1:18840"))
        .expect("enter")
        .expect("bind 18840 in the namespace");
    let r = site.run();
    assert_eq!(r.code, 8);
    assert!(r.has("ERROR", "http", "cannot listen on 127.0.0.1:18840"));
    assert!(r.has("ERROR", "http", "ss -ltnp"));
    drop(holder);
}

#[test]
fn with_several_errors_the_smallest_code_wins() {
    if !prerequisites() {
        return;
    }
    let site = Site::new();
    std::fs::remove_file(site.path("licence.json")).expect("rm");
    site.settings(json!({"Network": {"DefaultInterfaceName": "pnabsent0"}}));
    let w = only_caps(&[]);
    let w: Vec<&str> = w.iter().map(String::as_str).collect();
    let r = site.run_with(&w, &["--json"]);
    assert_eq!(r.code, 5, "licence (5) before NIC (6) and capabilities (7)");
    let v: Value = serde_json::from_str(&r.out).expect("JSON");
    assert_eq!(v["ok"], false);
    assert_eq!(v["exitCode"], 5);
    let errors: Vec<&str> = v["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .filter(|c| c["level"] == "ERROR")
        .map(|c| c["check"].as_str().expect("name"))
        .collect();
    assert_eq!(
        errors,
        ["nic", "licence", "capabilities", "capabilities"],
        "{v}"
    );
}

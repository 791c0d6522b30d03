//! Least privilege: the daemon runs as an ordinary system user with exactly the capabilities of
//! `deploy/pn-device.service` (CAP_NET_RAW, CAP_NET_ADMIN, CAP_SYS_NICE, CAP_IPC_LOCK,
//! CAP_NET_BIND_SERVICE) and reaches cyclic data exchange with the controller simulator in a
//! second namespace; a missing capability is named in the log, and without CAP_NET_RAW the
//! state is ConfigError with errorCode 1 (EPERM).
//!
//! Needs root (namespaces, `useradd`, `setpriv` from util-linux): under CI=true a missing
//! prerequisite fails the test.

#[path = "browser/rig.rs"]
mod rig;

use std::collections::BTreeSet;
use std::time::Duration;

use rig::{Lab, Launch, CAPS};
use serde_json::json;

fn prerequisites() -> bool {
    pn_testkit::env::require_root()
        && pn_testkit::env::require(
            pn_testkit::env::has_tool("setpriv"),
            "setpriv on PATH (util-linux)",
        )
}

/// Capability bit numbers (linux/capability.h).
fn cap_bit(name: &str) -> u32 {
    match name {
        "net_bind_service" => 10,
        "net_admin" => 12,
        "net_raw" => 13,
        "ipc_lock" => 14,
        "sys_nice" => 23,
        other => panic!("unknown capability {other}"),
    }
}

/// `Name:` line of /proc/PID/status.
fn proc_status(pid: u32, key: &str) -> String {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
    s.lines()
        .find_map(|l| l.strip_prefix(&format!("{key}:")))
        .unwrap_or_else(|| panic!("{key} not in /proc/{pid}/status"))
        .trim()
        .to_string()
}

/// Scheduling policies of all threads of `pid` (1 = SCHED_FIFO).
fn thread_policies(pid: u32) -> Vec<(String, u32)> {
    let mut v = Vec::new();
    for t in std::fs::read_dir(format!("/proc/{pid}/task"))
        .expect("tasks")
        .flatten()
    {
        let name = std::fs::read_to_string(t.path().join("comm"))
            .unwrap_or_default()
            .trim()
            .to_string();
        let stat = std::fs::read_to_string(t.path().join("stat")).unwrap_or_default();
        // Field 41 (policy), counted after the ")" that ends the command name.
        let policy = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(41 - 3))
            .and_then(|p| p.parse().ok())
            .unwrap_or(0);
        v.push((name, policy));
    }
    v
}

#[test]
fn unit_file_grants_exactly_the_tested_capabilities() {
    let unit = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/pn-device.service"),
    )
    .expect("deploy/pn-device.service");
    let want: BTreeSet<String> = CAPS
        .iter()
        .map(|c| format!("CAP_{}", c.to_ascii_uppercase()))
        .collect();
    for key in ["AmbientCapabilities", "CapabilityBoundingSet"] {
        let got: BTreeSet<String> = unit
            .lines()
            .filter_map(|l| l.trim().strip_prefix(&format!("{key}=")))
            .flat_map(|v| v.split_whitespace().map(str::to_string))
            .collect();
        assert_eq!(got, want, "{key} in deploy/pn-device.service");
    }
    for line in [
        "User=pn-device",
        "NoNewPrivileges=yes",
        "ProtectSystem=strict",
        "ProtectHome=yes",
        "PrivateTmp=yes",
        "StateDirectory=pn-device",
        "RestrictAddressFamilies=AF_INET AF_UNIX AF_PACKET AF_NETLINK",
        "ExecStart=/usr/bin/pn-device --settings /etc/pn-device/settings.json",
    ] {
        assert!(
            unit.lines().any(|l| l.trim() == line),
            "deploy/pn-device.service lacks `{line}`"
        );
    }
    // The example settings put the remanent data where StateDirectory= points.
    let s: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/settings.json"),
        )
        .expect("deploy/settings.json"),
    )
    .expect("deploy/settings.json is JSON");
    assert_eq!(s["Paths"]["PersistenceDir"], "/var/lib/pn-device");
    pn_device::config::Settings::load(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/settings.json"),
    )
    .expect("the daemon accepts deploy/settings.json");
}

#[test]
fn unprivileged_daemon_with_exact_capabilities_reaches_data_exchange() {
    if !prerequisites() {
        return;
    }
    let mut lab = Lab::new("lpx", json!({}));
    lab.spawn(&Launch::User(CAPS.to_vec()), &[]);
    let pid = lab.daemon.as_ref().expect("daemon").id();

    // An ordinary user, exactly the five capabilities, nothing else.
    let (uid, _) = rig::ensure_user();
    let uids = proc_status(pid, "Uid");
    assert!(
        uids.split_whitespace().all(|u| u == uid.to_string()),
        "daemon uids {uids}, want all {uid}"
    );
    let mask: u64 = CAPS.iter().map(|c| 1u64 << cap_bit(c)).sum();
    for key in ["CapEff", "CapPrm", "CapBnd"] {
        let v = u64::from_str_radix(&proc_status(pid, key), 16).expect("hex");
        assert_eq!(v, mask, "{key} {v:#x} want {mask:#x}");
    }

    lab.wait("state Initialized", Duration::from_secs(20), |l| {
        l.status()["state"] == "Initialized"
    });
    // CAP_NET_ADMIN: the daemon put its configured IP on the NIC itself.
    let addrs = lab
        .dev_ns
        .exec_ok(&["ip", "-4", "addr", "show", "dev", &lab.veth.b])
        .expect("ip addr");
    assert!(addrs.contains(&format!("{}/24", rig::DEV_IP)), "{addrs}");

    lab.controller("c0ffee01", 6.0, true);
    lab.wait("device DataExchange", Duration::from_secs(15), |l| {
        let s = l.status();
        s["state"] == "DataExchange" && s["connected"] == true
    });
    // Controller -> device.
    lab.wait(
        "controller outputs at the device",
        Duration::from_secs(5),
        |l| l.api("GET", "/api/io", None)["inputHex"] == "c0ffee01",
    );
    // Device -> controller.
    let w = lab.api(
        "POST",
        "/api/io",
        Some(json!({"offset": 0, "data": "5aa51234"})),
    );
    assert_eq!(w["delivered"], true, "{w}");
    // CAP_SYS_NICE: the real-time threads got SCHED_FIFO; CAP_IPC_LOCK: memory is locked.
    let pols = thread_policies(pid);
    assert!(
        pols.iter().filter(|(_, p)| *p == 1).count() >= 2,
        "no SCHED_FIFO threads: {pols:?}"
    );
    let locked = proc_status(pid, "VmLck");
    assert_ne!(locked, "0 kB", "VmLck {locked}");

    let (ok, out) = lab.controller_done(Duration::from_secs(20));
    assert!(ok, "controller failed:\n{out}\ndaemon log:\n{}", lab.log());
    let last = out
        .lines()
        .rev()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|v| v.get("inputs").is_some())
        .expect("controller JSON line with the inputs");
    assert_eq!(last["inputs"]["dataHex"], "5aa51234", "{last}");
    assert_eq!(last["status"]["watchdogExpiries"], 0, "{last}");
    lab.wait("release seen", Duration::from_secs(5), |l| {
        l.status()["connected"] == false
    });

    let log = lab.log();
    assert!(
        log.contains(&format!("running as uid {uid} with CAP_NET_RAW")),
        "{log}"
    );
    for bad in ["missing capability", "not permitted", "Permission denied"] {
        assert!(!log.contains(bad), "`{bad}` in the log:\n{log}");
    }
    assert!(lab.stop_daemon(), "daemon exit status\n{}", lab.log());
}

#[test]
fn without_cap_net_raw_the_state_is_config_error_eperm_and_the_log_says_so() {
    if !prerequisites() {
        return;
    }
    let mut lab = Lab::new("lpn", json!({}));
    let caps: Vec<&str> = CAPS.iter().copied().filter(|c| *c != "net_raw").collect();
    lab.spawn(&Launch::User(caps), &[]);
    lab.wait("state ConfigError", Duration::from_secs(20), |l| {
        l.status()["state"] == "ConfigError"
    });
    let s = lab.status();
    assert_eq!(s["errorCode"], 1, "{s}");
    assert_eq!(s["connected"], false, "{s}");
    let msg = s["statusMessage"].as_str().unwrap_or("");
    assert!(msg.contains("CAP_NET_RAW"), "{s}");
    assert!(msg.contains(&lab.veth.b), "{s}");
    let log = lab.log();
    let named: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("missing capability"))
        .collect();
    assert_eq!(named.len(), 1, "{log}");
    assert!(named[0].contains("CAP_NET_RAW"), "{log}");
    assert!(named[0].contains("WARN"), "{log}");
    assert!(
        log.lines().any(|l| l.contains("ERROR")
            && l.contains("start refused")
            && l.contains("CAP_NET_RAW")),
        "{log}"
    );
    // The API stays up (degraded start) and a retry gives the same answer.
    let r = lab.api("POST", "/api/start", None);
    assert_eq!(r["ok"], false, "{r}");
    assert_eq!(lab.status()["errorCode"], 1);
}

#[test]
fn every_missing_capability_is_named_once_at_launch() {
    if !prerequisites() {
        return;
    }
    let mut lab = Lab::new("lp0", json!({"Runtime": {"AutoStart": false}}));
    lab.spawn(&Launch::User(Vec::new()), &[]);
    let log = lab.log();
    for c in CAPS {
        let name = format!("CAP_{}", c.to_ascii_uppercase());
        let n = log
            .lines()
            .filter(|l| l.contains(&format!("missing capability {name}:")))
            .count();
        assert_eq!(n, 1, "{name} named {n} times:\n{log}");
    }
    assert_eq!(lab.status()["state"], "Stopped");
}

//! Logs for operators: the daemon (as the unprivileged service user) goes through start,
//! connect, data exchange, watchdog abort, a second connect with release, stop and shutdown.
//! Human-readable lines by default, one JSON object per line with `--log-format json`; each
//! state change is logged exactly once with its cause; nothing is logged per cycle.
//!
//! Needs root (namespaces, setpriv): under CI=true a missing prerequisite fails the test.

#[path = "browser/rig.rs"]
mod rig;

use std::time::Duration;

use rig::{Lab, Launch, CAPS};
use serde_json::{json, Value};

/// One log line reduced to (level, target, message).
#[derive(Debug, Clone)]
struct Line {
    level: String,
    target: String,
    message: String,
    raw: String,
}

fn parse_text(log: &str) -> Vec<Line> {
    log.lines()
        .map(|l| {
            assert!(!l.contains('\x1b'), "ANSI escape in a log line: {l:?}");
            // `2026-11-23T18:10:05.252926Z  INFO pn_device::runtime: message`
            let mut it = l.splitn(2, ' ');
            let ts = it.next().unwrap_or("");
            assert!(
                ts.len() >= 20 && ts.ends_with('Z') && ts.as_bytes().get(10) == Some(&b'T'),
                "line without an RFC 3339 UTC timestamp: {l:?}"
            );
            let rest = it.next().unwrap_or("").trim_start();
            let (level, rest) = rest.split_once(' ').unwrap_or(("", ""));
            let (target, message) = rest.split_once(": ").unwrap_or(("", rest));
            assert!(
                ["ERROR", "WARN", "INFO"].contains(&level),
                "unexpected level in {l:?}"
            );
            assert!(target.starts_with("pn_device"), "target of {l:?}");
            Line {
                level: level.into(),
                target: target.into(),
                message: message.into(),
                raw: l.into(),
            }
        })
        .collect()
}

fn parse_json(log: &str) -> Vec<Line> {
    log.lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l)
                .unwrap_or_else(|e| panic!("log line is not one JSON object ({e}): {l:?}"));
            assert!(v.is_object(), "{l}");
            let s = |k: &str| {
                v[k].as_str()
                    .unwrap_or_else(|| panic!("no string `{k}` in {l}"))
                    .to_string()
            };
            let ts = s("timestamp");
            assert!(ts.ends_with('Z'), "{l}");
            Line {
                level: s("level"),
                target: s("target"),
                message: s("message"),
                raw: l.into(),
            }
        })
        .collect()
}

fn count(lines: &[Line], needle: &str) -> Vec<Line> {
    lines
        .iter()
        .filter(|l| l.message.contains(needle))
        .cloned()
        .collect()
}

/// Run the cycle and return the daemon's log.
fn cycle(tag: &str, settings: Value, extra: &[&str]) -> (String, String, Value) {
    let mut lab = Lab::new(tag, settings);
    lab.spawn(&Launch::User(CAPS.to_vec()), extra);
    lab.wait("state Initialized", Duration::from_secs(20), |l| {
        l.status()["state"] == "Initialized"
    });
    let nic = lab.veth.b.clone();

    // 1) Connect, exchange 3 s (~750 cycles of 4 ms), stop sending: the watchdog aborts.
    lab.controller("01020304", 3.0, false);
    lab.wait("DataExchange", Duration::from_secs(15), |l| {
        l.status()["state"] == "DataExchange"
    });
    let before = lab.log().lines().count();
    for i in 0..5u8 {
        let w = lab.api(
            "POST",
            "/api/io",
            Some(json!({"offset": 0, "data": format!("{i:02x}000000")})),
        );
        assert_eq!(w["delivered"], true, "{w}");
    }
    // Poll the API the way a dashboard does: no log lines per request either.
    for _ in 0..10 {
        lab.api("GET", "/api/status", None);
        lab.api("GET", "/api/diag", None);
    }
    let during = lab.log().lines().count() - before;
    assert_eq!(
        during,
        0,
        "lines logged during data exchange:\n{}",
        lab.log()
    );
    let _ = lab.controller_done(Duration::from_secs(20));
    lab.wait("Aborted", Duration::from_secs(10), |l| {
        l.status()["state"] == "Aborted"
    });

    // 2) An alarm from the application (a diagnosis entry): one line when raised; raising the
    //    same condition again only counts up (no second line).
    for _ in 0..3 {
        let d = lab.api(
            "POST",
            "/api/diag",
            Some(
                json!({"slot": 1, "subslot": 1, "errorType": 2, "severity": 0,
                        "text": "wire break at sensor 3"}),
            ),
        );
        assert_eq!(d["ok"], true, "{d}");
    }
    let history = lab.api("GET", "/api/alarms/history", None);

    // 3) Stop the slave, then shut the daemon down.
    let r = lab.api("POST", "/api/stop", None);
    assert_eq!(r["ok"], true, "{r}");
    assert!(lab.stop_daemon(), "exit status\n{}", lab.log());
    (lab.log(), nic, history)
}

fn check(lines: &[Line], nic: &str, history: &Value) {
    let all = || {
        lines
            .iter()
            .map(|l| l.raw.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    };
    // Each state change exactly once, with its cause.
    let started = count(lines, "slave started on");
    assert_eq!(started.len(), 1, "start:\n{}", all());
    assert!(started[0].message.contains(nic), "{:?}", started[0]);
    let up = count(lines, "cyclic data exchange established");
    assert_eq!(up.len(), 1, "DataExchange:\n{}", all());
    assert!(up[0].message.contains("pn-controller"), "{:?}", up[0]);
    let lost = count(lines, "cyclic data exchange lost");
    assert_eq!(lost.len(), 1, "Aborted:\n{}", all());
    assert!(
        lost[0].message.contains("watchdog") && lost[0].message.contains("data-hold"),
        "cause missing: {:?}",
        lost[0]
    );
    assert_eq!(lost[0].level, "WARN", "{:?}", lost[0]);
    // The cause is logged once as the state change, not once per layer (alarm lines below).
    let cause: Vec<Line> = count(lines, "no valid frame from the controller")
        .into_iter()
        .filter(|l| !l.message.starts_with("alarm "))
        .collect();
    assert_eq!(cause.len(), 1, "{}", all());
    // Every alarm of the history is logged exactly once, when raised, with its text.
    let items = history.as_array().expect("history array");
    assert!(
        items
            .iter()
            .any(|a| a["source"] == "diag" && a["count"] == 3),
        "{history}"
    );
    let alarm_lines: Vec<&Line> = lines
        .iter()
        .filter(|l| l.message.starts_with("alarm "))
        .collect();
    assert_eq!(alarm_lines.len(), items.len(), "{history}\n{}", all());
    for a in items {
        let id = a["id"].as_str().expect("id");
        let msg = a["message"].as_str().expect("message");
        let n: Vec<&&Line> = alarm_lines
            .iter()
            .filter(|l| l.message.starts_with(&format!("alarm {id} raised")))
            .collect();
        assert_eq!(n.len(), 1, "alarm {id}: {}", all());
        assert!(n[0].message.ends_with(msg), "{:?} vs {msg}", n[0]);
        let want = if a["severity"] == "Info" {
            "INFO"
        } else {
            "WARN"
        };
        assert_eq!(n[0].level, want, "{:?}", n[0]);
    }
    let stopped = count(lines, "slave stopped");
    assert_eq!(stopped.len(), 1, "stop:\n{}", all());
    assert!(stopped[0].message.contains("Aborted"), "{:?}", stopped[0]);
    assert_eq!(count(lines, "stopped").len(), 2, "{}", all()); // slave stopped + daemon stopped
                                                               // The service's state machine logs each transition from one place.
    for l in [&started[0], &up[0], &lost[0], &stopped[0]] {
        assert_eq!(l.target, "pn_device::runtime", "{l:?}");
    }
    // No line repeats (nothing periodic), and no errors in a clean run.
    let mut seen = std::collections::HashSet::new();
    for l in lines {
        assert!(
            seen.insert((&l.target, &l.message)),
            "repeated line {:?}\n{}",
            l.raw,
            all()
        );
        assert_ne!(l.level, "ERROR", "{}", all());
    }
    // The whole run: launch, start, connect, abort, alarms, stop, shutdown - a handful of lines.
    assert!(lines.len() <= 25, "{} lines:\n{}", lines.len(), all());
}

#[test]
fn text_logs_one_line_per_state_change_none_per_cycle() {
    if !pn_testkit::env::require_root() {
        return;
    }
    let (log, nic, history) = cycle("lgt", json!({}), &[]);
    let lines = parse_text(&log);
    check(&lines, &nic, &history);
}

#[test]
fn json_logs_are_one_object_per_line() {
    if !pn_testkit::env::require_root() {
        return;
    }
    // JSON from the settings file (Logging:Format), as a service would be configured.
    let (log, nic, history) = cycle("lgj", json!({"Logging": {"Format": "json"}}), &[]);
    let lines = parse_json(&log);
    assert!(!lines.is_empty());
    check(&lines, &nic, &history);
    // Structured fields stay fields (e.g. the capability check, the stack's connect line).
    assert!(
        lines
            .iter()
            .any(|l| l.message.starts_with("running as uid")),
        "{log}"
    );
}

/// `--log-format` overrides `Logging:Format` both ways.
#[test]
fn log_format_option_overrides_the_setting() {
    if !pn_testkit::env::require_root() {
        return;
    }
    for (setting, flag, json_wanted) in [("text", "json", true), ("json", "text", false)] {
        let mut lab = Lab::new(
            "lgo",
            json!({"Logging": {"Format": setting}, "Runtime": {"AutoStart": false}}),
        );
        lab.spawn(&Launch::User(CAPS.to_vec()), &["--log-format", flag]);
        assert!(lab.stop_daemon());
        let log = lab.log();
        assert!(log.lines().count() >= 3, "{log}");
        if json_wanted {
            parse_json(&log);
        } else {
            parse_text(&log);
        }
    }
}

/// Under systemd with stderr on the journal (`JOURNAL_STREAM` names stderr): no timestamp
/// (journald has its own) and the syslog priority as `<N>` prefix, so `journalctl -p warning`
/// filters by level.
#[test]
fn journal_lines_carry_the_syslog_priority() {
    if !pn_testkit::env::require_root() {
        return;
    }
    // Without CAP_SYS_NICE: one WARN line at launch.
    let caps: Vec<&str> = CAPS.iter().copied().filter(|c| *c != "sys_nice").collect();
    let mut lab = Lab::new("lgs", json!({"Runtime": {"AutoStart": false}}));
    lab.journal_stream = true;
    lab.spawn(&Launch::User(caps), &[]);
    assert!(lab.stop_daemon());
    let log = lab.log();
    let mut warn = 0;
    for l in log.lines() {
        let (prio, rest) = l
            .strip_prefix('<')
            .and_then(|r| r.split_once('>'))
            .unwrap_or_else(|| panic!("no priority prefix: {l:?}"));
        let level = rest.split(' ').next().unwrap_or("");
        let want = match level {
            "ERROR" => "3",
            "WARN" => "4",
            "INFO" => "6",
            other => panic!("level {other:?} in {l:?}"),
        };
        assert_eq!(prio, want, "{l}");
        assert!(rest.contains(" pn_device"), "{l}");
        assert!(!rest.starts_with("20"), "timestamp in a journal line: {l}");
        if level == "WARN" {
            warn += 1;
            assert!(rest.contains("missing capability CAP_SYS_NICE"), "{l}");
        }
    }
    assert_eq!(warn, 1, "{log}");
    assert!(log.lines().count() >= 3, "{log}");
}

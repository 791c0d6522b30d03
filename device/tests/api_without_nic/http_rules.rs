//! The HTTP layer's rules: 404 for unknown paths and methods, the API key, the body size and read
//! time limits, the request and connection caps (503), malformed HTTP and random bodies (never a
//! 5xx), and listening on loopback only.

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use crate::common::*;
use crate::root;
use serde_json::json;

/// Spec 4 rule 7: unknown paths and known paths with a wrong method give 404 (Track 1 body).
#[test]
fn spec_4_rule_7_unknown_path_or_wrong_method_is_404() {
    if !root() {
        return;
    }
    let d = Daemon::start(DaemonOpts::new(), None);
    for (m, p) in [
        ("GET", "/nope"),
        ("GET", "/api"),
        ("GET", "/api/status/"),
        ("POST", "/api/status"),
        ("DELETE", "/api/io"),
        ("PUT", "/api/io"),
        ("GET", "/api/start"),
        ("GET", "/api/stop"),
        ("GET", "/api/alarms/ack"),
        ("POST", "/api/alarms"),
        ("POST", "/api/im"),
        ("GET", "/api/config/reload"),
        ("POST", "/"),
        ("GET", "/API/STATUS"),
    ] {
        let r = d.req(m, p, None);
        assert_eq!(assert_track1(&r, 404)["code"], "PnS.Api.NotFound");
    }
}

/// Spec 5.2-5.4, 7.2 (401): with a key configured every request needs the header (constant-time
/// compare), the dashboard page too.
#[test]
fn spec_5_api_key_checked_on_every_request() {
    if !root() {
        return;
    }
    let d = Daemon::start(
        DaemonOpts::new().set("Api:ApiKey", json!("s3cret-key")),
        None,
    );
    for (m, p) in [
        ("GET", "/api/status"),
        ("GET", "/api/info"),
        ("POST", "/api/start"),
        ("GET", "/nope"),
    ] {
        let v = assert_track1(&d.try_req(m, p, None, &[]).unwrap(), 401);
        assert_eq!(v["code"], "PnS.Api.Unauthorized");
        let wrong = [("X-Vendor-Pnet-Api-Key", "s3cret-kez")];
        assert_track1(&d.try_req(m, p, None, &wrong).unwrap(), 401);
        let longer = [("X-Vendor-Pnet-Api-Key", "s3cret-key-")];
        assert_track1(&d.try_req(m, p, None, &longer).unwrap(), 401);
    }
    let good = [("X-Vendor-Pnet-Api-Key", "s3cret-key")];
    let r = d.try_req("GET", "/api/status", None, &good).unwrap();
    assert_eq!(r.status, 200);
    let r = d.try_req("GET", "/api/info", None, &good).unwrap();
    assert_eq!(r.json()["apiKeyRequired"], true);
    // Every request, the dashboard page included (spec 5.4); the 401 says how to open it.
    let r = d.try_req("GET", "/", None, &[]).unwrap();
    let v = assert_track1(&r, 401);
    assert!(
        v["message"]
            .as_str()
            .unwrap()
            .contains("pnctl --api-key KEY dashboard"),
        "{v}"
    );
    let r = d.try_req("GET", "/", None, &good).unwrap();
    assert_eq!(r.status, 200);
    assert!(r.header("content-type").unwrap().starts_with("text/html"));
    // nested form accepted (used above); flat form too
    let d2 = Daemon::start(
        DaemonOpts {
            settings: json!({"Api:ApiKey": "flat", "Runtime": {"AutoStart": false}}),
            ..DaemonOpts::new()
        },
        None,
    );
    assert_track1(&d2.try_req("GET", "/api/status", None, &[]).unwrap(), 401);
    let r = d2
        .try_req(
            "GET",
            "/api/status",
            None,
            &[("X-Vendor-Pnet-Api-Key", "flat")],
        )
        .unwrap();
    assert_eq!(r.status, 200);
}

/// Spec 8 / 7.2: body above 64 KB gives 413 (Track 1), exactly 64 KB is read (and then judged).
#[test]
fn spec_8_body_over_64k_is_413() {
    if !root() {
        return;
    }
    let d = Daemon::start(DaemonOpts::new(), None);
    let big = "x".repeat(64 * 1024 + 1);
    let v = assert_track1(&d.req("POST", "/api/io", Some(&big)), 413);
    assert_eq!(v["code"], "PnS.Api.PayloadTooLarge");
    assert_track1(&d.req("POST", "/api/diag", Some(&big)), 413);
    let exact = " ".repeat(64 * 1024 - 2) + "{}";
    let r = d.req("POST", "/api/io", Some(&exact));
    assert_track1(&r, 400);
    // chunked body without Content-Length that exceeds the limit while reading
    let mut s = d.ns.connect().unwrap();
    let mut req = b"POST /api/io HTTP/1.1\r\nHost: x\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    for _ in 0..70 {
        req.extend_from_slice(b"400\r\n");
        req.extend_from_slice(&[b'a'; 0x400]);
        req.extend_from_slice(b"\r\n");
    }
    req.extend_from_slice(b"0\r\n\r\n");
    let _ = s.write_all(&req);
    let r = read_response(&mut s).unwrap();
    assert_track1(&r, 413);
}

/// Spec 8: body read time 10 s: a body that never completes gets 408 (Track 1) after ~10 s.
#[test]
fn spec_8_body_read_time_10s() {
    if !root() {
        return;
    }
    let d = Daemon::start(DaemonOpts::new(), None);
    let mut s = d.ns.connect().unwrap();
    let t0 = Instant::now();
    s.write_all(b"POST /api/io HTTP/1.1\r\nHost: x\r\nContent-Length: 20\r\n\r\n{\"offset\"")
        .unwrap();
    let r = read_response(&mut s).unwrap();
    let el = t0.elapsed();
    assert_eq!(assert_track1(&r, 408)["code"], "PnS.Api.RequestTimeout");
    assert!(
        el >= Duration::from_millis(9500) && el < Duration::from_secs(15),
        "{el:?}"
    );
    // the server is still fine
    assert_eq!(d.req("GET", "/api/info", None).status, 200);
}

/// Spec 8: at most 16 requests in progress; the 17th gets 503 + Retry-After (Track 1);
/// afterwards the server serves normally (never stuck).
#[test]
fn spec_8_seventeenth_concurrent_request_gets_503() {
    if !root() {
        return;
    }
    let d = Daemon::start(DaemonOpts::new(), None);
    // 16 requests whose bodies never finish hold the 16 slots.
    let hold = || {
        let mut s = d.ns.connect().unwrap();
        s.write_all(b"POST /api/io HTTP/1.1\r\nHost: x\r\nContent-Length: 30\r\n\r\n{")
            .unwrap();
        s.set_nonblocking(true).unwrap();
        s
    };
    let mut held: Vec<std::net::TcpStream> = (0..16).map(|_| hold()).collect();
    // The held bodies time out (408) 10 s after the server read their heads, which frees the
    // slots: the window for the 503 is a little less than that. What was seen before it is kept
    // for the failure message (a slow host answers the first few GETs before the 16 POST heads
    // are parsed).
    let mut seen = Vec::new();
    let mut replaced = 0;
    let r = pn_testkit::poll::some(Duration::from_secs(9), || {
        // A held request that arrived while 16 others were in progress (on a loaded host the
        // previous request, e.g. the launcher's readiness probe, can still hold its slot)
        // got the 503 itself and holds nothing: replace it. (Seen in CI: 15 held, one 503.)
        for s in held.iter_mut() {
            let mut b = [0u8; 1];
            if s.peek(&mut b).is_ok() {
                *s = hold();
                replaced += 1;
            }
        }
        let r = d.req("GET", "/api/status", None);
        seen.push(r.status);
        (r.status == 503).then_some(r)
    })
    .unwrap_or_else(|| {
        // What the held connections got meanwhile (each should have got nothing yet).
        let answers: Vec<String> = held
            .iter_mut()
            .map(|s| {
                let _ = s.set_nonblocking(false);
                let _ = s.set_read_timeout(Some(Duration::from_millis(100)));
                let mut b = [0u8; 256];
                match s.read(&mut b) {
                    Ok(n) => String::from_utf8_lossy(&b[..n]).into_owned(),
                    Err(e) => format!("({e})"),
                }
            })
            .collect();
        panic!(
            "no 503 while 16 requests were held ({replaced} replaced); statuses seen: {seen:?}\nheld connections got: {answers:#?}\ndaemon log:\n{}",
            d.log_text()
        )
    });
    let v = assert_track1(&r, 503);
    assert_eq!(v["code"], "PnS.Api.Busy");
    assert_eq!(r.header("retry-after"), Some("1"));
    drop(held);
    wait_for("service recovers", Duration::from_secs(5), || {
        (d.req("GET", "/api/status", None).status == 200).then_some(())
    });
}

/// Spec 7 (never a 5xx or a crash on bad input): requests that are not valid HTTP get a 4xx from
/// the HTTP layer (bare, see docs/decisions.md section 5) and the server keeps serving.
#[test]
fn malformed_http_is_rejected_and_server_survives() {
    if !root() {
        return;
    }
    let d = Daemon::start(DaemonOpts::new(), None);
    for raw in [
        &b"GARBAGE\r\n\r\n"[..],
        b"GET /api/status HTTP/9.9\r\n\r\n",
        b"POST /api/io HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n",
        b"POST /api/io HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}",
        b"\x00\x01\x02\x03\r\n\r\n",
    ] {
        let mut s = d.ns.connect().unwrap();
        let r = raw_request(&mut s, raw).unwrap();
        assert_eq!(r.status, 400, "{raw:?}");
        if r.status != 0 && !r.body.is_empty() {
            assert_track1(&r, r.status);
        }
    }
    assert_eq!(d.req("GET", "/api/info", None).status, 200);
}

/// Spec 7 (never a 5xx): pseudo-random bodies on every POST endpoint give 200 or 4xx.
#[test]
fn random_bodies_never_give_5xx() {
    if !root() {
        return;
    }
    let d = Daemon::start(DaemonOpts::new(), None);
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let frags = [
        "{",
        "}",
        "\"offset\"",
        ":",
        "-1",
        "1e99",
        "\"data\"",
        "\"zz\"",
        "\"00\"",
        ",",
        "[",
        "]",
        "null",
        "true",
        "\"id\"",
        "\"mode\"",
        "\"enable\"",
        "\"severity\"",
        "7",
        "\"slot\"",
        "\u{00e9}",
        "\\",
        "\"",
        " ",
        "0",
    ];
    for path in [
        "/api/io",
        "/api/diag",
        "/api/alarms/ack",
        "/api/reset",
        "/api/high-resolution-timer",
        "/api/config/reload",
        "/api/alarms/ack-all",
    ] {
        for _ in 0..25 {
            let n = (next() % 12) as usize;
            let body: String = (0..n)
                .map(|_| frags[(next() % frags.len() as u64) as usize])
                .collect();
            let r = d.req("POST", path, Some(&body));
            assert!(
                r.status == 200 || (400..500).contains(&r.status),
                "{path} {body:?} -> {}",
                r.status
            );
            if r.status != 200 {
                assert_track1(&r, r.status);
            }
        }
    }
    assert_eq!(d.req("GET", "/api/status", None).status, 200);
}

/// Spec 5.1 / 8: the service listens on 127.0.0.1 only: another address of the host (here a
/// veth address inside the namespace) is not reachable; `--dev-port` changes only the port.
#[test]
fn spec_5_1_listens_on_loopback_only() {
    if !root() {
        return;
    }
    let d = Daemon::start(DaemonOpts::new(), Some("lb0"));
    std::process::Command::new("ip")
        .args([
            "-n",
            &d.ns.name,
            "addr",
            "add",
            "10.77.0.1/24",
            "dev",
            "lb0",
        ])
        .status()
        .unwrap();
    let other =
        d.ns.in_ns(|| std::net::TcpStream::connect(("10.77.0.1", PORT)).is_ok());
    assert!(!other, "must not listen on a non-loopback address");
    assert_eq!(d.req("GET", "/api/info", None).status, 200);
    // development port override: still loopback only
    let ns = Netns::new();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("s.json"),
        r#"{"Runtime":{"AutoStart":false}}"#,
    )
    .unwrap();
    let mut child = std::process::Command::new("ip")
        .args([
            "netns",
            "exec",
            &ns.name,
            BIN,
            "--dev-port",
            "18999",
            "--settings",
        ])
        .arg(dir.path().join("s.json"))
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let ok = wait_for("dev port", Duration::from_secs(10), || {
        ns.in_ns(|| std::net::TcpStream::connect(("127.0.0.1", 18999)).ok())
            .map(|_| true)
    });
    assert!(ok);
    let _ = child.kill();
    let _ = child.wait();
}

/// Spec 8 / docs/decisions.md section 8: more than 128 open connections: the extra connection
/// gets a 503 Track 1 body and is closed; the service recovers when connections close.
#[test]
fn spec_8_connection_cap_gives_503_not_a_hang() {
    if !root() {
        return;
    }
    let d = Daemon::start(DaemonOpts::new(), None);
    let held: Vec<_> = (0..128).map(|_| d.ns.connect().unwrap()).collect();
    let r = wait_for(
        "503 for the extra connection",
        Duration::from_secs(5),
        || {
            let r = d.req("GET", "/api/info", None);
            (r.status == 503).then_some(r)
        },
    );
    let v = assert_track1(&r, 503);
    assert_eq!(v["code"], "PnS.Api.Busy");
    drop(held);
    wait_for("recovery", Duration::from_secs(5), || {
        (d.req("GET", "/api/info", None).status == 200).then_some(())
    });
}

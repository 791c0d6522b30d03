//! `pnctl read` and `write` against a service that answers every request after 700 ms: longer
//! than the library's 500 ms for its cached IO path, well inside the 5 s pnctl gives every
//! one-shot call (docs/decisions.md §42). A plain TCP server stands in for the daemon: a
//! real daemon cannot be made to answer that slowly on purpose.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const PNCTL: &str = env!("CARGO_BIN_EXE_pnctl");
const DELAY: Duration = Duration::from_millis(700);

/// Serve one keep-alive connection: each request answered after [`DELAY`]; the request lines
/// and bodies go to `seen`.
fn serve(s: TcpStream, seen: Arc<Mutex<Vec<String>>>) {
    let mut rd = BufReader::new(s.try_clone().expect("clone"));
    let mut w = s;
    loop {
        let mut first = String::new();
        if rd.read_line(&mut first).unwrap_or(0) == 0 {
            return;
        }
        let mut len = 0usize;
        loop {
            let mut h = String::new();
            if rd.read_line(&mut h).unwrap_or(0) == 0 {
                return;
            }
            if h.trim().is_empty() {
                break;
            }
            if let Some((k, v)) = h.split_once(':') {
                if k.eq_ignore_ascii_case("content-length") {
                    len = v.trim().parse().unwrap_or(0);
                }
            }
        }
        let mut body = vec![0; len];
        if rd.read_exact(&mut body).is_err() {
            return;
        }
        let req = format!("{} {}", first.trim(), String::from_utf8_lossy(&body));
        seen.lock().unwrap().push(req.clone());
        std::thread::sleep(DELAY);
        let answer = if req.starts_with("GET /api/io ") {
            serde_json::json!({
                "epoch": 1, "formatVersion": 2, "connected": true, "state": "DataExchange",
                "inputHex": "0000", "outputHex": "00".repeat(16),
                "inputLength": 2, "outputLength": 16
            })
        } else if req.starts_with("POST /api/io ") {
            serde_json::json!({
                "ok": true, "delivered": true, "queued": false, "connected": true,
                "state": "DataExchange", "reasonCode": "", "offset": 2, "length": 2
            })
        } else {
            serde_json::json!({"ok": false})
        }
        .to_string();
        let resp = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{answer}",
            answer.len()
        );
        if w.write_all(resp.as_bytes()).is_err() {
            return;
        }
    }
}

#[test]
fn a_write_to_a_slow_service_is_delivered_not_called_unreachable() {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", l.local_addr().expect("addr"));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s2 = seen.clone();
    std::thread::spawn(move || {
        for c in l.incoming().flatten() {
            let s3 = s2.clone();
            std::thread::spawn(move || serve(c, s3));
        }
    });
    let run = |args: &[&str]| {
        let out = Command::new(PNCTL)
            .args(["--url", &url, "--json"])
            .args(args)
            .env_remove("PN_API_KEY")
            .stdin(Stdio::null())
            .output()
            .expect("run pnctl");
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, stdout, stderr) = run(&["write", "IW2", "0x1234"]);
    assert_eq!(code, 0, "stdout {stdout} stderr {stderr}");
    let v: serde_json::Value = serde_json::from_str(stdout.trim()).expect("JSON");
    assert_eq!(v["delivered"], true, "{v}");
    let reqs = seen.lock().unwrap().clone();
    assert!(
        reqs.iter()
            .any(|r| r.starts_with("POST /api/io ") && r.contains("\"1234\"")),
        "the write reached the service: {reqs:?}"
    );
    let (code, stdout, stderr) = run(&["read", "IW2"]);
    assert_eq!(code, 0, "stdout {stdout} stderr {stderr}");
}

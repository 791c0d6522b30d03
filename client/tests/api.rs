//! The typed client against the REAL daemon (each test in its own network namespace): every
//! endpoint, the section 8 mappings the daemon can produce (400, 401, 404, 413, 503, refused),
//! Track 2 errorCode surfacing.

mod common;

use std::time::Duration;

use common::*;
use hyper::Method;
use pn_client::{CallResult, DiagEntry, ResetMode, State};
use serde_json::json;

#[test]
fn every_endpoint_typed() {
    if !root() {
        return;
    }
    let d = Daemon::start(Opts::default());
    let nic = d.veth.a.clone();
    d.with_client(move |c| {
        let info = c.info().unwrap();
        assert_eq!(info["serviceName"], c.status().unwrap().service_name);

        let s = c.status().unwrap();
        assert_eq!(s.state, State::Stopped);
        assert!(!s.connected);
        assert_eq!(s.error_code, 0);
        assert_eq!(s.version, "1.0.0");
        assert_eq!(s.config_station_name, "client-test");

        // diag before start: ok=false, no counters (spec 4 rule 3)
        let dg = c.diag().unwrap();
        assert!(!dg.ok);

        let r = c.start().unwrap();
        assert!(r.ok, "{r:?}");
        assert_eq!(r.error_code, 0);
        let s = c.status().unwrap();
        assert_eq!(s.state, State::Initialized);
        assert!(s.hardware_port_present);

        let dg = c.diag().unwrap();
        assert!(dg.ok, "{dg:?}");
        assert_eq!(dg.input_area_length, 8);
        assert_eq!(dg.output_area_length, 16);
        assert_eq!(dg.state, State::Initialized);

        let io = c.io().unwrap();
        assert_eq!(io.format_version, 2);
        assert_eq!(io.input_length, 8);
        assert_eq!(io.output_length, 16);
        assert_eq!(io.input().unwrap().len(), 8);
        assert_eq!(io.output().unwrap(), vec![0u8; 16]);

        // direct write: accepted, not delivered (no controller), queued (spec 4 rule 1)
        let w = c.write_io(3, &[0xAB, 0xCD]).unwrap();
        assert!(!w.ok && !w.delivered && w.queued, "{w:?}");
        assert!(!w.reason_code.is_empty());
        assert_ne!(w.reason(), pn_client::ReasonCode::Delivered);
        assert_eq!((w.offset, w.length), (3, 2));
        assert_eq!(w.state, State::Initialized);
        assert_eq!(&d_output(&c)[3..5], &[0xAB, 0xCD]);

        let im = c.im().unwrap();
        assert_eq!(im.vendor_id, 0x0493);
        assert_eq!(im.device_id, 0x0007);
        assert_eq!(im.order_id, "ORDER-CL");
        assert_eq!(im.serial_number, "SN-CL-1");

        let recs = c.records().unwrap();
        assert_eq!(recs.count as usize, recs.records.len());

        // diagnosis entries: add, see it, update, remove
        let e = DiagEntry {
            slot: 1,
            subslot: 1,
            channel: 0,
            error_type: 0x0002,
            severity: 0,
            text: "short circuit".into(),
        };
        let r = c.diag_add(&e).unwrap();
        assert_eq!(r["ok"], true, "{r}");
        assert_eq!(r["entryCount"], 1);
        let r = c
            .diag_update(&DiagEntry {
                severity: 1,
                ..e.clone()
            })
            .unwrap();
        assert_eq!(r["ok"], true, "{r}");
        let r = c.diag_remove(&e).unwrap();
        assert_eq!(r["ok"], true, "{r}");
        assert_eq!(r["entryCount"], 0);
        // severity outside 0..=3 is refused on the client side already
        let bad = DiagEntry {
            severity: 4,
            ..e.clone()
        };
        assert_eq!(
            c.diag_add(&bad).unwrap_err().kind,
            CallResult::InvalidArgument
        );
        // and by the service (400 -> InvalidArgument)
        let err = c
            .diag_write(
                &json!({"action": "add", "slot": 1, "subslot": 1, "errorType": 2, "severity": 9}),
            )
            .unwrap_err();
        assert_eq!(err.kind, CallResult::InvalidArgument);
        assert_eq!(err.http_status, Some(400));

        let active = c.alarms().unwrap();
        let hist = c.alarm_history().unwrap();
        assert!(hist.len() >= active.len());
        let all = c.ack_all().unwrap();
        assert!(all.ok);
        assert_eq!(
            c.alarms()
                .unwrap()
                .iter()
                .filter(|a| a.severity == pn_client::Severity::Critical)
                .count(),
            c.status().unwrap().critical_alarm_count as usize
        );
        let one = c.ack_alarm("no-such-alarm").unwrap();
        assert!(!one.ok, "{one:?}");
        assert_eq!(one.acknowledged_count, 0);

        assert!(c.set_high_resolution_timer(true).unwrap().ok);
        assert!(c.set_high_resolution_timer(false).unwrap().ok);

        let r = c.reload_config().unwrap();
        assert!(r.ok, "{r:?}");
        let r = c.reset(ResetMode::Communication).unwrap();
        assert!(r.ok, "{r:?}");
        assert_eq!(r.mode, "communication");

        let r = c.stop().unwrap();
        assert!(r.ok);
        assert_eq!(r.error_code, 0);
        assert_eq!(c.status().unwrap().state, State::Stopped);
        // stop when already stopped: still ok (spec 3)
        assert!(c.stop().unwrap().ok);

        // 404: unknown path and wrong method
        let e = c.async_client().clone();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let err = rt
            .block_on(e.request_json(Method::GET, "/api/nope", None, Duration::from_secs(2)))
            .unwrap_err();
        assert_eq!(err.kind, CallResult::NotFound);
        assert_eq!(err.http_status, Some(404));
        let err = rt
            .block_on(e.request_json(Method::POST, "/api/status", None, Duration::from_secs(2)))
            .unwrap_err();
        assert_eq!(err.kind, CallResult::NotFound);
        let _ = nic;
    });
}

fn d_output(c: &pn_client::blocking::BlockingClient) -> Vec<u8> {
    c.io().unwrap().output().unwrap()
}

/// Spec 3 row "NIC missing": start gives ok=false with errorCode (OS error), state
/// ConfigError; the client surfaces errorCode and check() turns it into an error.
#[test]
fn config_error_start_surfaces_error_code() {
    if !root() {
        return;
    }
    let d = Daemon::start(Opts {
        nic: Some("nosuchnic0".into()),
        ..Opts::default()
    });
    d.with_client(|c| {
        let r = c.start().unwrap();
        assert!(!r.ok);
        assert_ne!(r.error_code, 0, "{r:?}");
        assert!(r.message.contains("nosuchnic0"), "{r:?}");
        let e = r.clone().check().unwrap_err();
        assert_eq!(e.kind, CallResult::NativeError);
        assert_eq!(e.error_code, Some(r.error_code));
        let s = c.status().unwrap();
        assert_eq!(s.state, State::ConfigError);
        assert_eq!(s.error_code, r.error_code);
        assert!(s.status_message.contains("nosuchnic0"));
    });
}

/// Spec 5: with a key configured, a missing or wrong key is 401 -> ServiceUnreachable; the
/// right key works.
#[test]
fn api_key_401_is_service_unreachable() {
    if !root() {
        return;
    }
    let d = Daemon::start(Opts {
        api_key: Some("k-123".into()),
        ..Opts::default()
    });
    d.run(|| {
        use pn_client::blocking::BlockingClient;
        let none = BlockingClient::connect(URL, None).unwrap();
        let e = none.status().unwrap_err();
        assert_eq!(e.kind, CallResult::ServiceUnreachable);
        assert_eq!(e.http_status, Some(401));
        let wrong = BlockingClient::connect(URL, Some("k-124".into())).unwrap();
        assert_eq!(wrong.io().unwrap_err().kind, CallResult::ServiceUnreachable);
        assert_eq!(
            wrong.start().unwrap_err().http_status,
            Some(401),
            "start must not run without the key"
        );
        let right = BlockingClient::connect(URL, Some("k-123".into())).unwrap();
        assert_eq!(right.status().unwrap().state, State::Stopped);
        // the readiness wait gives up at once on 401 instead of waiting out its deadline
        let t = std::time::Instant::now();
        assert_eq!(
            none.wait_ready(Duration::from_secs(10))
                .unwrap_err()
                .http_status,
            Some(401)
        );
        assert!(t.elapsed() < Duration::from_secs(5));
    });
}

/// Nothing listening: ServiceUnreachable (connection refused), quickly.
#[test]
fn no_service_is_unreachable() {
    if !root() {
        return;
    }
    let ns = pn_testkit::netns::NetNs::new("pncn").unwrap();
    ns.enter(|| {
        let c = pn_client::blocking::BlockingClient::connect(URL, None).unwrap();
        let t = std::time::Instant::now();
        let e = c.status().unwrap_err();
        assert_eq!(e.kind, CallResult::ServiceUnreachable);
        assert_eq!(e.http_status, None);
        assert!(t.elapsed() < Duration::from_secs(2));
        let e = c.wait_ready(Duration::from_millis(300)).unwrap_err();
        assert_eq!(e.kind, CallResult::ServiceUnreachable);
    })
    .unwrap();
    let r = pnctl_in(&ns, &["status"], &[]);
    assert_eq!(r.code, 3, "{r:?}");
}

/// 400 (offset out of range, echoed body) and 413 (body > 64 KiB) from the daemon.
#[test]
fn bad_writes_400_and_413() {
    if !root() {
        return;
    }
    let d = Daemon::start(Opts::default());
    d.with_client(|c| {
        let e = c.write_io(16, &[1]).unwrap_err();
        assert_eq!(e.kind, CallResult::InvalidArgument);
        assert_eq!(e.http_status, Some(400));
        assert!(
            e.code.as_deref().is_some_and(|s| s.starts_with("PnS.Api.")),
            "{e:?}"
        );
        assert_eq!(e.error_code, Some(0));
        let e = c.write_io(0, &vec![0u8; 40_000]).unwrap_err();
        assert_eq!(e.kind, CallResult::LengthMismatch);
        assert_eq!(e.http_status, Some(413));
    });
}

/// 503 when 16 requests are in progress (spec 8) -> Busy.
#[test]
fn busy_503_when_16_requests_in_progress() {
    if !root() {
        return;
    }
    let d = Daemon::start(Opts::default());
    d.run(|| {
        use std::io::Write;
        // 16 POSTs whose bodies never arrive hold every request slot (until the 10 s body
        // read limit).
        let hold = || {
            let mut s = std::net::TcpStream::connect("127.0.0.1:18840").unwrap();
            s.write_all(
                b"POST /api/io HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 20\r\n\r\n{",
            )
            .unwrap();
            s.set_nonblocking(true).unwrap();
            s
        };
        let mut held: Vec<std::net::TcpStream> = (0..16).map(|_| hold()).collect();
        let c = pn_client::blocking::BlockingClient::connect(URL, None).unwrap();
        let mut replaced = 0;
        let mut seen = Vec::new();
        let e = pn_testkit::poll::some(Duration::from_secs(9), || {
            // A held request that arrived while 16 others were in progress (on a loaded host
            // the previous request, e.g. the launcher's readiness probe, can still hold its
            // slot) got the 503 itself and holds nothing: replace it. (Seen in a CI run here:
            // 15 held; the same race as the daemon's own 503 test, docs of session 3.)
            for s in held.iter_mut() {
                let mut b = [0u8; 1];
                if s.peek(&mut b).is_ok() {
                    *s = hold();
                    replaced += 1;
                }
            }
            match c.status() {
                Err(e) if e.kind == CallResult::Busy => Some(e),
                other => {
                    seen.push(format!("{:?}", other.map(|_| "200").map_err(|e| e.kind)));
                    None
                }
            }
        })
        .unwrap_or_else(|| {
            panic!("no 503 Busy while 16 requests were held ({replaced} replaced); seen: {seen:?}")
        });
        assert_eq!(e.http_status, Some(503));
        drop(held);
        // the slots come back once the held requests end
        wait_for("service free again", Duration::from_secs(12), || {
            c.status().ok()
        });
    });
}

//! Change events by polling (spec 6) against the REAL daemon: state, connected, errorCode, link
//! and IO-status changes, service reachability. The controller side is the daemon's simulated
//! data plane; the link is the real veth.

mod common;

use std::time::Duration;

use common::*;
use pn_client::{Client, Event, State};
use pn_testkit::netns::Veth;
use serde_json::json;

/// Receive events until `pred` matches one (deadline 10 s); returns everything seen.
async fn until(
    w: &mut pn_client::Watcher,
    what: &str,
    pred: impl Fn(&Event) -> bool,
) -> Vec<Event> {
    let mut seen = Vec::new();
    let end = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        match tokio::time::timeout_at(end, w.recv()).await {
            Ok(Some(e)) => {
                let hit = pred(&e);
                seen.push(e);
                if hit {
                    return seen;
                }
            }
            Ok(None) => panic!("watcher ended while waiting for {what}: {seen:?}"),
            Err(_) => panic!("timed out waiting for {what}; seen {seen:?}"),
        }
    }
}

#[test]
fn state_connected_io_link_and_reachability_events() {
    if !root() {
        return;
    }
    let d = std::sync::Arc::new(Daemon::start(Opts {
        sim: true,
        ..Opts::default()
    }));
    let ns_path = d.ns.path();
    let (step_tx, step_rx) = std::sync::mpsc::channel::<&'static str>();
    let (ack_tx, ack_rx) = std::sync::mpsc::channel::<()>();
    // The watcher runs inside the namespace; the test thread drives the daemon.
    let h = std::thread::spawn(move || {
        pn_testkit::netns::join_netns(&ns_path).unwrap();
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let c = Client::new(None);
            let mut w = c.watch(Duration::from_millis(50));
            let ev = until(&mut w, "initial", |e| matches!(e, Event::Initial { .. })).await;
            match &ev[0] {
                Event::Initial {
                    state, connected, ..
                } => {
                    assert_eq!(*state, State::Stopped);
                    assert!(!connected);
                }
                e => panic!("first event {e:?}"),
            }
            // start -> Stopped to Initialized
            assert!(c.start().await.unwrap().ok);
            until(&mut w, "Initialized", |e| {
                matches!(
                    e,
                    Event::State {
                        from: State::Stopped,
                        to: State::Initialized
                    }
                )
            })
            .await;
            ack_tx.send(()).unwrap();
            // controller connects (driven by the test thread)
            assert_eq!(step_rx.recv().unwrap(), "connected");
            let seen = until(&mut w, "DataExchange", |e| {
                matches!(
                    e,
                    Event::State {
                        to: State::DataExchange,
                        ..
                    }
                )
            })
            .await;
            let seen2 = if seen.iter().any(|e| {
                matches!(
                    e,
                    Event::Connected {
                        connected: true,
                        ..
                    }
                )
            }) {
                vec![]
            } else {
                until(&mut w, "connected", |e| {
                    matches!(
                        e,
                        Event::Connected {
                            connected: true,
                            ..
                        }
                    )
                })
                .await
            };
            // The IO status may change in the same poll as the state or before `connected`
            // (the events of one poll come in a fixed order, the polls' timing is the
            // machine's): wait for it only when it has not come yet.
            let io_valid = |e: &Event| matches!(e, Event::IoStatus { to, .. } if to.input_valid);
            if !seen.iter().chain(&seen2).any(io_valid) {
                until(&mut w, "io status", io_valid).await;
            }
            ack_tx.send(()).unwrap();
            assert_eq!(step_rx.recv().unwrap(), "aborted");
            let seen = until(&mut w, "Aborted", |e| {
                matches!(
                    e,
                    Event::State {
                        from: State::DataExchange,
                        to: State::Aborted
                    }
                )
            })
            .await;
            if !seen.iter().any(|e| {
                matches!(
                    e,
                    Event::Connected {
                        connected: false,
                        ever_connected: true
                    }
                )
            }) {
                until(&mut w, "disconnected", |e| {
                    matches!(
                        e,
                        Event::Connected {
                            connected: false,
                            ever_connected: true
                        }
                    )
                })
                .await;
            }
            ack_tx.send(()).unwrap();
            assert_eq!(step_rx.recv().unwrap(), "link down");
            until(
                &mut w,
                "link down",
                |e| matches!(e, Event::Link { to, .. } if to.link_up == Some(false)),
            )
            .await;
            ack_tx.send(()).unwrap();
            assert_eq!(step_rx.recv().unwrap(), "killed");
            until(&mut w, "unreachable", |e| {
                matches!(
                    e,
                    Event::ServiceReachable {
                        reachable: false,
                        ..
                    }
                )
            })
            .await;
            // JSON form of events (pnctl watch --json prints these)
            let j = serde_json::to_value(Event::State {
                from: State::Stopped,
                to: State::Aborted,
            })
            .unwrap();
            assert_eq!(
                j,
                json!({"event": "state", "from": "Stopped", "to": "Aborted"})
            );
        });
    });
    let step = |s: &'static str| {
        step_tx.send(s).unwrap();
    };
    ack_rx.recv().unwrap();
    d.sim(json!({"event": "connected", "controller": "plc-1"}));
    d.sim(json!({"cmd": "writeInput", "dataHex": "01", "iops": 128, "iocs": 128}));
    step("connected");
    ack_rx.recv().unwrap();
    d.sim(json!({"event": "aborted", "reason": "watchdog"}));
    step("aborted");
    ack_rx.recv().unwrap();
    Veth::set_link(&d.ns, &d.veth.a, false).unwrap();
    step("link down");
    ack_rx.recv().unwrap();
    // kill the daemon: the watcher reports the service unreachable
    let mut d = std::sync::Arc::try_unwrap(d).ok().expect("sole owner");
    d.kill9();
    step("killed");
    h.join().expect("watcher thread");
}

/// The blocking watcher, and errorCode changes (ConfigError start).
#[test]
fn blocking_watcher_reports_error_code_change() {
    if !root() {
        return;
    }
    let d = Daemon::start(Opts {
        nic: Some("nosuchnic1".into()),
        ..Opts::default()
    });
    d.with_client(|c| {
        let mut w = c.watch(Duration::from_millis(50));
        let first = w.recv_timeout(Duration::from_secs(5)).expect("initial");
        assert!(
            matches!(first, Event::Initial { error_code: 0, .. }),
            "{first:?}"
        );
        let r = c.start().unwrap();
        assert!(!r.ok);
        let mut got_code = false;
        let mut got_state = false;
        let end = std::time::Instant::now() + Duration::from_secs(5);
        while !(got_code && got_state) && std::time::Instant::now() < end {
            match w.recv_timeout(Duration::from_millis(500)) {
                Some(Event::ErrorCode {
                    from: 0,
                    to,
                    status_message,
                }) => {
                    assert_eq!(to, r.error_code);
                    assert!(status_message.contains("nosuchnic1"));
                    got_code = true;
                }
                Some(Event::State {
                    to: State::ConfigError,
                    ..
                }) => got_state = true,
                _ => {}
            }
        }
        assert!(
            got_code && got_state,
            "errorCode {got_code} state {got_state}"
        );
    });
}

//! The standby sender (`Cyclic:StandbyCpu`, decisions §41) with the real daemon in a namespace
//! and the controller library in another, at 1 ms with DataHoldFactor 24. The provider's
//! real-time thread is held for 100 ms after every 1000 frames (`Dev:FaultProviderHold`, as a
//! vCPU the hypervisor holds). With a standby on CPU 0 the controller sees every slot (no
//! watchdog expiry, no duplicate frame) and the daemon logs the slots the standby sent; the
//! same daemon without a standby loses its AR at the first hold (the control: the hold is
//! real). About 15 s.

mod common;

use std::time::Duration;

use common::device::{config_xml, Rig};
use pn_controller::{ArState, Faults};
use serde_json::json;

/// Cpus_allowed_list of the daemon's thread `comm`.
fn cpus_of(pid: u32, comm: &str) -> String {
    pn_testkit::daemon::thread_cpus(pid, comm).unwrap_or_else(|| {
        panic!(
            "no thread {comm} in the daemon:\n{}",
            pn_testkit::daemon::thread_report(pid)
        )
    })
}

/// Run 3.5 s of data exchange (three holds); the AR's state and status at the end.
fn held_run(rig: &Rig) -> (ArState, pn_controller::ArStatus) {
    let ctl = rig.controller(32);
    let h = rig
        .connect(&ctl, 1, 24, Faults::default())
        .unwrap_or_else(|e| panic!("connect: {e}\n{}", rig.log()));
    let _ = rig.poll(Duration::from_millis(3_500), || {
        h.state() != ArState::DataExchange
    });
    let st = h.status();
    let state = h.state();
    if state == ArState::DataExchange {
        h.release().unwrap();
        rig.wait(
            "device leaves DataExchange after Release",
            Duration::from_secs(5),
            || rig.status()["connected"] == false,
        );
    }
    (state, st)
}

#[test]
fn standby_sender_covers_a_held_provider_thread() {
    if !pn_testkit::env::require_root() {
        return;
    }
    let cpus = pn_testkit::env::cpus_at_least(2, "the standby sender");
    let hold = json!({"Dev": {"FaultProviderHold": {"Ms": 100, "Every": 1000}}});

    // With a standby on CPU 0.
    let mut settings = hold.clone();
    pn_testkit::daemon::merge(&mut settings, json!({"Cyclic": {"StandbyCpu": 0}}));
    let rig = Rig::start_with("pnsb1", |nic| config_xml(nic, 1), settings);
    let (state, st) = held_run(&rig);
    let pid = rig.child.id();
    assert_eq!(cpus_of(pid, "pn-standby"), "0");
    // The daemon may use every CPU: its provider thread uses all but the standby's.
    assert_eq!(
        cpus_of(pid, "pn-cyclic"),
        if cpus == 2 {
            "1".to_string()
        } else {
            format!("1-{}", cpus - 1)
        }
    );
    assert_eq!(state, ArState::DataExchange, "{st:?}\n{}", rig.log());
    assert_eq!(st.watchdog_expiries, 0, "{st:?}");
    assert_eq!(st.frames_duplicate, 0, "a slot sent twice: {st:?}");
    // Three holds of 100 ms: the standby sent about 99 slots of each.
    let log = rig.log();
    let sent: u64 = log
        .lines()
        .filter(|l| l.contains("standby sender: sent"))
        .filter_map(|l| {
            l.split("frames=")
                .nth(1)?
                .split_whitespace()
                .next()?
                .parse::<u64>()
                .ok()
        })
        .sum();
    eprintln!("with a standby: {st:?}; standby frames {sent}");
    assert_eq!(
        rig.counter("stackStandbyFrames"),
        sent as i64,
        "diag and log agree"
    );
    assert!(sent >= 200, "standby frames {sent} (want about 297)\n{log}");
    assert!(
        sent < st.frames_received / 2,
        "the standby sent {sent} of {} frames",
        st.frames_received
    );
    drop(rig);

    // The control: the same hold without a standby ends the AR (100 ms > 24 ms data hold).
    let rig = Rig::start_with("pnsb0", |nic| config_xml(nic, 1), hold);
    let (state, st) = held_run(&rig);
    eprintln!("without: {state:?} {st:?}");
    assert_ne!(state, ArState::DataExchange, "{st:?}\n{}", rig.log());
    assert!(!rig.log().contains("standby sender"), "{}", rig.log());
    assert_eq!(rig.counter("stackStandbyFrames"), 0);
}

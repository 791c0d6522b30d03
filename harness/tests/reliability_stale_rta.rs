//! Regression (found by the link-flap and soak runs of issue 9): a controller that aborts its
//! old AR (ERR-RTA) and connects again at once. The device processed the ERR-RTA of the old AR
//! after the new AR had been accepted and, because its own alarm reference is the same for
//! every AR and only the destination endpoint was checked, aborted the NEW AR. An RTA-PDU whose
//! AlarmSrcEndpoint is not the current AR's controller alarm reference must be ignored.
//!
//! Deterministic reproduction: the ERR-RTA of AR 1's abort is captured on the device's side of
//! the link and replayed (unchanged) while AR 2 runs; AR 2 must stay in data exchange.

use pn_controller::netif::{InterfaceInfo, RawSocket};
use pn_controller::ArState;
use pn_lab::soak::{Counters, Rig, RigOptions};
use std::time::{Duration, Instant};

#[test]
fn err_rta_of_a_previous_ar_does_not_abort_the_current_one() {
    if !pn_testkit::env::require_root() {
        return;
    }
    let mut c = Counters::default();
    let mut rig = Rig::start(RigOptions::default()).expect("lab");
    rig.connect(Duration::from_secs(20), &mut c).expect("AR 1");
    // A receiver on the device's end of the link sees the controller's frames.
    let nic = rig.lab.nic().to_string();
    let dev_sock = rig
        .lab
        .ns_dev
        .enter(move || RawSocket::open(&InterfaceInfo::lookup(&nic).unwrap()))
        .unwrap()
        .expect("raw socket in the device namespace");
    let ar1 = rig.ar().unwrap();
    ar1.abort();
    let mut buf = vec![0u8; 2048];
    let deadline = Instant::now() + Duration::from_secs(2);
    let stale = loop {
        assert!(
            Instant::now() < deadline,
            "the ERR-RTA of AR 1 was not seen"
        );
        let Ok(Some(n)) = dev_sock.recv(&mut buf, Duration::from_millis(50)) else {
            continue;
        };
        let f = &buf[..n];
        let off = if f.get(12..14) == Some(&[0x81, 0x00]) {
            16
        } else {
            12
        };
        let is_rta = f.get(off..off + 2) == Some(&[0x88, 0x92])
            && matches!(
                f.get(off + 2..off + 4),
                Some([0xFE, 0x01]) | Some([0xFC, 0x01])
            );
        // PDUType low nibble 4 = ERR (RTA-PDU starts after the FrameID).
        if is_rta && f.get(off + 4 + 4).is_some_and(|t| t & 0x0F == 4) {
            break f.to_vec();
        }
    };
    rig.wait_api("AR 1 ended on the device", Duration::from_secs(5), |s| {
        s["connected"] == false
    })
    .expect("AR 1 ended");
    rig.connect(Duration::from_secs(20), &mut c).expect("AR 2");
    rig.write_and_check(&mut c).expect("AR 2 exchanges data");
    // Replay the old ERR-RTA from the controller's side of the link.
    let cnic = rig.lab.controller_nic().to_string();
    let ctl_sock = rig
        .lab
        .ns_ctl
        .enter(move || RawSocket::open(&InterfaceInfo::lookup(&cnic).unwrap()))
        .unwrap()
        .expect("raw socket in the controller namespace");
    ctl_sock.send(&stale).expect("replay");
    // AR 2 must not notice: watch it for 20 data-hold times.
    let until = Instant::now() + Duration::from_millis(300);
    while Instant::now() < until {
        let st = rig.status().unwrap();
        assert_eq!(
            st["state"],
            "DataExchange",
            "the stale ERR-RTA of AR 1 ended AR 2 on the device: {st}\n{}",
            rig.lab.device_log()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(rig.ar().unwrap().state(), ArState::DataExchange);
    rig.write_and_check(&mut c)
        .expect("AR 2 still exchanges data");
}

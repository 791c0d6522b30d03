use super::*;
use std::sync::atomic::Ordering;

#[test]
fn nic_names_are_validated() {
    assert!(valid_nic_name("eth0") && valid_nic_name("veth-a.1"));
    for bad in ["", ".", "..", "a/b", "a b", "0123456789abcdef", "a:b"] {
        assert!(!valid_nic_name(bad), "{bad:?}");
    }
    assert_eq!(
        open_raw_socket("../etc").unwrap_err().os_error,
        libc::EINVAL
    );
    assert!(!read_link_state("../etc").present);
}

#[test]
fn probe_reports_missing_nic_with_enodev() {
    let e = RawSocketPlane::default().probe("pnnosuch0").unwrap_err();
    assert_eq!(e.os_error, libc::ENODEV);
    assert!(e.to_string().contains("pnnosuch0"));
}

#[test]
fn probe_opens_a_raw_socket_on_loopback() {
    if !pn_testkit::env::require_root() {
        return;
    }
    let info = RawSocketPlane::default().probe("lo").unwrap();
    assert!(info.index > 0);
    assert!(info.link.present);
}

#[test]
fn counters_snapshot_copies_values() {
    let c = SharedCounters::default();
    c.rx_frames.fetch_add(3, Ordering::Relaxed);
    c.stack_max_jitter_us.fetch_max(17, Ordering::Relaxed);
    let s = c.snapshot();
    assert_eq!((s.rx_frames, s.stack_max_jitter_us), (3, 17));
    let v = serde_json::to_value(s).unwrap();
    assert_eq!(v["rxFrames"], 3);
    assert!(v.get("stackAlarmTxAckFail").is_some());
}

//! Unit tests of the L2 services: the frame filter and the rate admission.

use super::*;

#[test]
fn wants_dcp_and_lldp_only() {
    let mut f = vec![0u8; 60];
    f[12..14].copy_from_slice(&[0x88, 0x92]);
    f[14..16].copy_from_slice(&[0xfe, 0xfe]);
    assert!(wants(&f));
    f[14..16].copy_from_slice(&[0x80, 0x00]);
    assert!(!wants(&f));
    f[12..14].copy_from_slice(&[0x88, 0xcc]);
    assert!(wants(&f));
    let mut t = vec![0u8; 60];
    t[12..14].copy_from_slice(&[0x81, 0x00]);
    t[16..18].copy_from_slice(&[0x88, 0x92]);
    t[18..20].copy_from_slice(&[0xfe, 0xfd]);
    assert!(wants(&t));
    assert!(!wants(&[0u8; 10]));
}

fn dcp_frame(dst: [u8; 6]) -> Vec<u8> {
    let mut f = vec![0u8; 60];
    f[0..6].copy_from_slice(&dst);
    f[12..14].copy_from_slice(&[0x88, 0x92]);
    f[14..16].copy_from_slice(&[0xfe, 0xfe]);
    f
}

#[test]
fn classes() {
    assert_eq!(
        L2Class::of(&dcp_frame([0x01, 0x0e, 0xcf, 0, 0, 0])),
        L2Class::DcpMulticast
    );
    assert_eq!(L2Class::of(&dcp_frame([0xff; 6])), L2Class::DcpMulticast);
    assert_eq!(
        L2Class::of(&dcp_frame([2, 0, 0, 0, 0, 1])),
        L2Class::DcpUnicast
    );
    let mut l = dcp_frame([0x01, 0x80, 0xc2, 0, 0, 0x0e]);
    l[12..14].copy_from_slice(&[0x88, 0xcc]);
    assert_eq!(L2Class::of(&l), L2Class::Lldp);
    let mut t = vec![0u8; 64];
    t[0] = 0x01;
    t[12..14].copy_from_slice(&[0x81, 0x00]);
    t[16..18].copy_from_slice(&[0x88, 0xcc]);
    assert_eq!(L2Class::of(&t), L2Class::Lldp);
    assert_eq!(L2Class::of(&[]), L2Class::DcpUnicast);
}

/// A 10 000 frames/s storm of each class for 3 s admits the burst plus the rate per
/// second, and a storm of one class does not take the tokens of another.
#[test]
fn admission_bounds_each_class_separately() {
    let mut a = Admission::new(0);
    let (mut mc, mut lldp, mut uc) = (0u64, 0u64, 0u64);
    // 30 000 multicast DCP and LLDP frames 100 us apart; one unicast request every 10 ms.
    for i in 0..30_000u64 {
        let now = i * 100_000;
        mc += u64::from(a.admit(L2Class::DcpMulticast, now));
        lldp += u64::from(a.admit(L2Class::Lldp, now));
        if i % 100 == 0 {
            uc += u64::from(a.admit(L2Class::DcpUnicast, now));
        }
    }
    let secs = 3;
    let bound = |(rate, burst): (u64, u64)| burst + rate * secs;
    assert!(mc <= bound(DCP_MULTICAST_LIMIT), "{mc}");
    assert!(mc >= DCP_MULTICAST_LIMIT.0 * secs, "{mc}");
    assert!(lldp <= bound(LLDP_LIMIT), "{lldp}");
    assert!(lldp >= LLDP_LIMIT.0 * secs, "{lldp}");
    // 100 unicast requests per second are below their own limit: all admitted.
    assert_eq!(uc, 300);
    // After a quiet second the burst is available again.
    let later = 4_000_000_000;
    for _ in 0..DCP_MULTICAST_LIMIT.1 {
        assert!(a.admit(L2Class::DcpMulticast, later));
    }
    assert!(!a.admit(L2Class::DcpMulticast, later));
    // A clock that goes backwards (never on CLOCK_MONOTONIC) neither panics nor refills.
    assert!(!a.admit(L2Class::DcpMulticast, 0));
}

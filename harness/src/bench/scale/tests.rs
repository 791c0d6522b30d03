use super::*;

#[test]
fn rfc3339_timestamps() {
    assert_eq!(
        parse_rfc3339_ns("1970-01-01T00:00:01Z"),
        Some(1_000_000_000)
    );
    assert_eq!(
        parse_rfc3339_ns("2026-11-23T22:10:00.5Z"),
        Some(1_795_471_800_500_000_000)
    );
    assert_eq!(parse_rfc3339_ns("not a time"), None);
}

#[test]
fn bare_gap_window() {
    let ms = 1_000_000u64;
    let bare = [0, ms, 2 * ms, 10 * ms, 11 * ms];
    // The 8 ms gap (2..10 ms) explains a 3 ms watchdog at 10.5 ms.
    assert!(bare_gap_near(&bare, 10 * ms + ms / 2, 3 * ms, 1_000 * ms));
    // Not one needing a 9 ms gap.
    assert!(!bare_gap_near(&bare, 10 * ms + ms / 2, 9 * ms, 1_000 * ms));
    // Not a trip 2 s later.
    assert!(!bare_gap_near(&bare, 2_010 * ms, 3 * ms, 1_000 * ms));
}

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

#[test]
fn trip_lines_of_the_daemon_and_the_farm() {
    let log = concat!(
        "2026-11-23T22:10:00.5Z WARN pn_device::stack: watchdog: no valid frame from the controller within the data-hold time of 3000 us\n",
        "2026-11-23T22:10:00.6Z INFO pn_device::stack: AR ended\n",
        // The farm's line, coloured as tracing-subscriber writes it to a terminal.
        "\u{1b}[2m2026-11-23T22:10:01Z\u{1b}[0m \u{1b}[32m INFO\u{1b}[0m pn_farm::device: AR ended: watchdog: no valid frame from the controller within the data-hold time of 12000 us\n",
        "2026-11-23T22:10:02Z INFO pn_farm::device: AR ended: released by the controller\n",
        // The controller's watchdog, not the device's.
        "2026-11-23T22:10:03Z INFO pn_farm::device: AR ended: the controller ended the AR with ERR-RTA CF 81 FD 05 (consumer data-hold time (watchdog) expired)\n",
    );
    assert_eq!(
        side::trip_times(log),
        vec![1_795_471_800_500_000_000, 1_795_471_801_000_000_000]
    );
}

//! Data exchange with the real pn-device daemon for 60 s at 1 ms: SendClockFactor 32 (device
//! SendClock 1), ReductionRatio 1, DataHoldFactor 24 -> 24 ms, which covers the hypervisor
//! stalls of 1.5-10 ms (up to ~16 ms seen under build load) measured on this machine.
//! About 65 s.

mod common;

#[test]
fn exchange_1ms_dhf24_60s() {
    common::device::exchange("pnx1", 1, 32, 1, 24, common::device::soak_secs());
}

//! Data exchange with the real pn-device daemon for 60 s at 4 ms, DataHoldFactor 3, in two
//! namespaces: SendClockFactor 128 (4 ms send clock, device SendClock 4), ReductionRatio 1,
//! WatchdogFactor = DataHoldFactor 3 -> 12 ms data-hold time on both sides. Both sides run
//! SCHED_FIFO (device: Timer:HighResolution; controller: opt-in in the test rig).
//! About 65 s. (The 1 ms test is in `device_exchange_1ms.rs`, so the two do not load each other
//! when cargo runs the files one after the other.)
//!
//! Up to three attempts: this VM's hypervisor stalls a vCPU for 1.5-21 ms at times (measured,
//! docs/benchmarks.md), longer than the 12 ms data-hold time, and no program can prevent that.
//! Every failed attempt is printed with its evidence; three failures fail the test.

mod common;

#[test]
fn exchange_4ms_dhf3_60s() {
    let mut failures = Vec::new();
    for attempt in 1..=3 {
        let tag = format!("pnx4{attempt}");
        match std::panic::catch_unwind(|| {
            common::device::exchange(&tag, 4, 128, 1, 3, common::device::soak_secs())
        }) {
            Ok(()) => {
                if !failures.is_empty() {
                    eprintln!("passed on attempt {attempt} after: {failures:#?}");
                }
                return;
            }
            Err(p) => {
                let msg = p
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                eprintln!("attempt {attempt} failed: {msg}");
                failures.push(msg);
            }
        }
    }
    panic!("all three attempts failed: {failures:#?}");
}

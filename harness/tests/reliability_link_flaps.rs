//! Issue 9.1: link flaps. The device's cable is pulled at random moments (veth down/up);
//! during every outage the client writes 1..3 new sequence numbers into the Q area
//! (POST /api/io); after the link is back the controller reconnects (as a PLC does) and must
//! receive the last value written, and the sequence seen by the controller must never go
//! backwards (no write lost, none re-delivered out of order).
//!
//! `PN_REL_FLAPS` sets the number of flaps (CI default 100; the full run is 1000, see
//! docs/benchmarks.md "Reliability and floods"). `PN_REL_SEED` repeats a run.

use pn_lab::soak::{env_u64, Counters, Rig, RigOptions, Rng};
use std::time::{Duration, Instant};

#[test]
fn link_flaps_with_writes_during_each_outage_lose_nothing() {
    if !pn_testkit::env::require_root() {
        return;
    }
    let flaps = env_u64("PN_REL_FLAPS", 100);
    let seed = env_u64("PN_REL_SEED", Rng::seed_from_time());
    eprintln!("link flaps: {flaps}, seed {seed}");
    let mut rng = Rng::new(seed);
    let mut c = Counters::default();
    let mut rig = Rig::start(RigOptions::default()).expect("lab");
    rig.connect(Duration::from_secs(20), &mut c)
        .expect("first connect");
    let t0 = Instant::now();
    for i in 0..flaps {
        if let Err(e) = rig.flap_round(&mut rng, &mut c) {
            panic!(
                "flap {i} (seed {seed}): {e}\ncounters {c:?}\ndevice log:\n{}",
                rig.lab.device_log()
            );
        }
    }
    let el = t0.elapsed();
    eprintln!(
        "link flaps: {flaps} in {:.1} s ({:.0} ms each); writes {}, lost {}, regressions {}, reconnects {}, connect retries {}",
        el.as_secs_f64(),
        el.as_secs_f64() * 1000.0 / flaps.max(1) as f64,
        c.writes,
        c.lost_writes,
        c.backwards,
        c.reconnects,
        c.connect_retries
    );
    assert_eq!(c.link_flaps, flaps);
    assert_eq!(c.lost_writes, 0, "{c:?}");
    assert_eq!(c.backwards, 0, "{c:?}");
    // Every flap wrote at least one value during the outage and one before it.
    assert!(c.writes >= 2 * flaps, "{c:?}");
    // The daemon survived every flap (same process).
    assert!(rig.device_pid().is_some());
}

//! The simulated link of the cyclic part: frames in flight with their delivery time, lost,
//! duplicated or delayed by the link's own random stream.

use super::{Report, Rng, SimConfig, TraceFrame};
use crate::time::{Duration, Instant};

pub(super) struct InFlight {
    pub(super) at: Instant,
    pub(super) order: u64,
    pub(super) to_device: bool,
    pub(super) frame: Vec<u8>,
}

/// The simulated link: frames in flight, and its own random stream for losses, duplicates
/// and delays (separate from the providers' stalls, so the two do not shift each other).
pub(super) struct Link {
    rng: Rng,
    pub(super) in_flight: Vec<InFlight>,
    order: u64,
    /// Frames still to lose in the current burst, per sender (device, controller).
    burst_left: [u32; 2],
}

impl Link {
    pub(super) fn new(seed: u64) -> Link {
        Link {
            rng: Rng::new(seed ^ 0x11AC_11AC_11AC_11AC),
            in_flight: Vec::new(),
            order: 0,
            burst_left: [0; 2],
        }
    }

    /// Put a frame on the link: lost, delivered once or twice, each after its delay.
    pub(super) fn send(
        &mut self,
        cfg: &SimConfig,
        rep: &mut Report,
        impaired: bool,
        now: Instant,
        to_device: bool,
        frame: Vec<u8>,
    ) {
        rep.frames_sent += 1;
        let rng = &mut self.rng;
        let burst_left = &mut self.burst_left[usize::from(to_device)];
        let lost = impaired
            && if *burst_left > 0 {
                *burst_left -= 1;
                true
            } else if rng.chance(cfg.burst.0) {
                *burst_left = (rng.next() % u64::from(cfg.burst.1.max(1))) as u32;
                true
            } else {
                rng.chance(cfg.loss)
            };
        if cfg.trace {
            rep.trace.push(TraceFrame {
                at: now,
                frame: frame.clone(),
                lost,
            });
        }
        if lost {
            rep.frames_lost += 1;
            return;
        }
        let copies = if impaired && rng.chance(cfg.duplicate) {
            2
        } else {
            1
        };
        for _ in 0..copies {
            let delay = if impaired && cfg.max_delay.0 > 0 {
                Duration(rng.next() % cfg.max_delay.0)
            } else {
                Duration(0)
            };
            self.order += 1;
            self.in_flight.push(InFlight {
                at: now + delay,
                order: self.order,
                to_device,
                frame: frame.clone(),
            });
        }
    }
}

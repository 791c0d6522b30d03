//! DCP Identify ResponseDelay, sans-IO.
//!
//! An Identify request (multicast) carries a ResponseDelayFactor F. With F = 0 or 1 the device
//! answers at once; otherwise it waits `(r mod F) × 10 ms`, where `r` is the last two bytes of
//! its own MAC address read as a big-endian u16, so the answers of many devices spread over
//! `[0, (F-1) × 10 ms]`. Factors above 6400 (64 s) are out of range and treated as "no delay".
//! Source: p-net `src/common/pf_dcp.c` `pf_dcp_calculate_response_delay` (citing PROFINET 2.4
//! Services §6.3.11.3.4 and Protocol §4.3.1.3.5); Wireshark only displays the field.
//!
//! The device computes a deadline with [`response_deadline`] (or keeps responses in a
//! [`DelayedResponses`] queue) and sends when `now` reaches it. A controller collects responses
//! for [`collect_window`].

use crate::time::{Duration, Instant};
use crate::wire::dcp::{DcpRepr, ServiceId, ServiceType};
use crate::wire::ethernet::MacAddr;

/// One delay slot.
pub const SLOT: Duration = Duration::from_millis(10);
/// Largest valid ResponseDelayFactor.
pub const MAX_FACTOR: u16 = 6400;
/// Extra time a controller waits beyond the last slot for answers to arrive (our choice, not
/// from the standard: covers sender scheduling and switch latency).
pub const DEFAULT_COLLECT_MARGIN: Duration = Duration::from_millis(200);

/// The delay a device with MAC `own_mac` applies to an Identify response for factor `factor`.
pub fn response_delay(own_mac: MacAddr, factor: u16) -> Duration {
    if factor <= 1 || factor > MAX_FACTOR {
        return Duration::ZERO;
    }
    let r = u16::from_be_bytes([own_mac.0[4], own_mac.0[5]]);
    SLOT.saturating_mul(u64::from(r % factor))
}

/// When to send the response to `request` received at `now`. Only Identify requests are
/// delayed; for anything else the answer is due at once.
pub fn response_deadline(request: &DcpRepr, now: Instant, own_mac: MacAddr) -> Instant {
    if request.service_id == ServiceId::Identify && request.service_type == ServiceType::Request {
        now + response_delay(own_mac, request.response_delay)
    } else {
        now
    }
}

/// How long a controller collects Identify responses for factor `factor`: the last slot
/// `max(F, 1) × 10 ms` plus `margin`.
pub fn collect_window(factor: u16, margin: Duration) -> Duration {
    let slots = u64::from(factor.clamp(1, MAX_FACTOR));
    Duration(SLOT.saturating_mul(slots).0.saturating_add(margin.0))
}

/// Pending responses, each due at its own deadline. Sans-IO: `push` when a request arrives,
/// `poll(now)` returns what is due, `next_deadline()` says when to poll again.
#[derive(Debug, Clone)]
pub struct DelayedResponses<T> {
    pending: Vec<(Instant, T)>,
    capacity: usize,
}

impl<T> DelayedResponses<T> {
    /// A queue holding at most `capacity` responses (older ones are kept, new ones beyond the
    /// capacity are refused, which bounds memory under an Identify flood).
    pub fn new(capacity: usize) -> Self {
        DelayedResponses {
            pending: Vec::new(),
            capacity,
        }
    }

    /// Queue `item` to be sent at `due`. Returns false (and drops it) when full.
    pub fn push(&mut self, due: Instant, item: T) -> bool {
        if self.pending.len() >= self.capacity {
            return false;
        }
        let at = self.pending.partition_point(|(d, _)| *d <= due);
        self.pending.insert(at, (due, item));
        true
    }

    /// Take every item whose deadline is at or before `now`, earliest first.
    pub fn poll(&mut self, now: Instant) -> Vec<T> {
        let n = self.pending.partition_point(|(d, _)| *d <= now);
        self.pending.drain(..n).map(|(_, t)| t).collect()
    }

    pub fn next_deadline(&self) -> Option<Instant> {
        self.pending.first().map(|(d, _)| *d)
    }

    pub fn len(&self) -> usize {
        self.pending.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }

    pub fn clear(&mut self) {
        self.pending.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::dcp::NameOfStation;

    const MAC: MacAddr = MacAddr([0x8c, 0xf3, 0x19, 0xcd, 0x19, 0xf8]);

    #[test]
    fn delay_rule() {
        // 0x19f8 = 6648; 6648 % 7 = 5 -> 50 ms.
        assert_eq!(response_delay(MAC, 7), Duration::from_millis(50));
        assert_eq!(response_delay(MAC, 0), Duration::ZERO);
        assert_eq!(response_delay(MAC, 1), Duration::ZERO);
        assert_eq!(response_delay(MAC, 6401), Duration::ZERO);
        // 6648 % 6400 = 248 -> 2.48 s.
        assert_eq!(response_delay(MAC, 6400), Duration::from_millis(2480));
        for f in 2..=200u16 {
            for last in [0u8, 1, 0x7f, 0xff] {
                let d = response_delay(MacAddr([0, 0, 0, 0, 0x12, last]), f);
                assert!(d <= SLOT.saturating_mul(u64::from(f - 1)), "factor {f}");
                assert!(d.0 % SLOT.0 == 0);
            }
        }
    }

    #[test]
    fn deadline_only_for_identify_requests() {
        let now = Instant::from_millis(1000);
        let req = DcpRepr::identify_request_all(1, 7);
        assert_eq!(
            response_deadline(&req, now, MAC),
            Instant::from_millis(1050)
        );
        let name = NameOfStation::new("x").unwrap();
        let set = DcpRepr::set_name(1, &name, false);
        assert_eq!(response_deadline(&set, now, MAC), now);
        assert_eq!(
            collect_window(7, DEFAULT_COLLECT_MARGIN),
            Duration::from_millis(270)
        );
        assert_eq!(collect_window(0, Duration::ZERO), Duration::from_millis(10));
    }

    #[test]
    fn queue_orders_and_bounds() {
        let mut q = DelayedResponses::new(2);
        assert!(q.push(Instant::from_millis(30), "b"));
        assert!(q.push(Instant::from_millis(10), "a"));
        assert!(!q.push(Instant::from_millis(5), "c"));
        assert_eq!(q.next_deadline(), Some(Instant::from_millis(10)));
        assert!(q.poll(Instant::from_millis(9)).is_empty());
        assert_eq!(q.poll(Instant::from_millis(30)), vec!["a", "b"]);
        assert!(q.is_empty());
    }
}

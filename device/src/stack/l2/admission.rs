//! Rate admission of received L2 frames: the limits per class, a token bucket, [`L2Class`] and
//! [`Admission`].

/// Rate limits of the L2 frame classes (frames per second, burst). The reasoning is in
/// docs/decisions.md "Floods"; `harness/tests/reliability_floods.rs` judges the running daemon
/// against those documented figures, so a change here changes the document and that test.
pub const DCP_MULTICAST_LIMIT: (u64, u64) = (50, 50);
pub const DCP_UNICAST_LIMIT: (u64, u64) = (200, 50);
pub const LLDP_LIMIT: (u64, u64) = (20, 20);
/// Received frames queued for the `pn-l2` thread at most.
pub const QUEUE_LEN: usize = 128;

/// A token bucket in nanosecond units: `rate` tokens per second, at most `burst` stored.
#[derive(Debug, Clone)]
struct Bucket {
    /// Tokens x 1e9.
    nano_tokens: u64,
    rate: u64,
    burst: u64,
    last_ns: u64,
}

impl Bucket {
    fn new((rate, burst): (u64, u64), now_ns: u64) -> Bucket {
        Bucket {
            nano_tokens: burst.saturating_mul(1_000_000_000),
            rate,
            burst,
            last_ns: now_ns,
        }
    }

    fn take(&mut self, now_ns: u64) -> bool {
        let dt = now_ns.saturating_sub(self.last_ns);
        self.last_ns = self.last_ns.max(now_ns);
        self.nano_tokens = self
            .nano_tokens
            .saturating_add(dt.saturating_mul(self.rate))
            .min(self.burst.saturating_mul(1_000_000_000));
        if self.nano_tokens >= 1_000_000_000 {
            self.nano_tokens -= 1_000_000_000;
            true
        } else {
            false
        }
    }
}

/// Class of an L2 frame for [`Admission`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum L2Class {
    /// DCP to a multicast or broadcast address (Identify All / by name, Hello of others).
    DcpMulticast,
    /// DCP to this device's MAC (Get, Set, unicast Identify, responses).
    DcpUnicast,
    Lldp,
}

impl L2Class {
    /// Classify by destination and EtherType (the caller checked [`wants`]).
    pub fn of(frame: &[u8]) -> L2Class {
        let et = match frame.get(12..14) {
            Some([0x81, 0x00]) => frame.get(16..18),
            other => other,
        };
        if et == Some(&[0x88, 0xcc][..]) {
            L2Class::Lldp
        } else if frame.first().is_some_and(|b| b & 1 != 0) {
            L2Class::DcpMulticast
        } else {
            L2Class::DcpUnicast
        }
    }
}

/// Rate admission of L2 frames on the receive thread: one token bucket per [`L2Class`].
/// Allocation-free; a rejected frame costs a classification and a clock read.
#[derive(Debug, Clone)]
pub struct Admission {
    dcp_multicast: Bucket,
    dcp_unicast: Bucket,
    lldp: Bucket,
}

impl Admission {
    pub fn new(now_ns: u64) -> Admission {
        Admission {
            dcp_multicast: Bucket::new(DCP_MULTICAST_LIMIT, now_ns),
            dcp_unicast: Bucket::new(DCP_UNICAST_LIMIT, now_ns),
            lldp: Bucket::new(LLDP_LIMIT, now_ns),
        }
    }

    /// May a frame of `class` be processed at `now_ns` (monotonic nanoseconds)?
    pub fn admit(&mut self, class: L2Class, now_ns: u64) -> bool {
        match class {
            L2Class::DcpMulticast => self.dcp_multicast.take(now_ns),
            L2Class::DcpUnicast => self.dcp_unicast.take(now_ns),
            L2Class::Lldp => self.lldp.take(now_ns),
        }
    }
}

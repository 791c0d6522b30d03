//! Sans-IO reassembly of DCE/RPC connectionless fragments (C706 chapter 10 "Connectionless
//! RPC Protocol Machines", fragment handling).
//!
//! A fragmented call is identified by its activity UUID and sequence number. Fragments may
//! arrive out of order or twice; the call is delivered once every fragment from 0 up to the
//! one flagged "last fragment" is present. For every fragment whose header lacks the
//! `NO_FACK` flag a FACK packet is returned for the caller to send.
//!
//! Bounds (see [`ReassemblyConfig`]): at most `max_activities` incomplete calls at once, at
//! most `max_call_size` body bytes and `max_fragments` fragments per call and
//! `max_total_bytes` over all calls. A fragment exceeding a bound drops its call and returns
//! an error; nothing grows without bound. An incomplete call whose deadline (set to
//! `now + timeout` when it starts and on every new fragment) has passed is discarded by
//! [`Reassembler::poll`] or on the next [`Reassembler::receive`].

use crate::time::{Duration, Instant};
use crate::wire::rpc::{flags1, FackBody, PacketType, RpcHeader, RpcPacket, Uuid};
use crate::wire::Emit;
use std::collections::BTreeMap;

/// Limits and FACK parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReassemblyConfig {
    /// Largest reassembled body of one call.
    pub max_call_size: usize,
    /// Largest number of fragments of one call.
    pub max_fragments: usize,
    /// Largest number of incomplete calls kept at once.
    pub max_activities: usize,
    /// Largest number of buffered bytes over all incomplete calls.
    pub max_total_bytes: usize,
    /// How long an incomplete call waits for its next fragment.
    pub timeout: Duration,
    /// Values placed into generated FACKs.
    pub fack_window_size: u16,
    pub fack_max_tsdu: u32,
    pub fack_max_frag_size: u32,
    /// Server boot time placed into generated FACK headers.
    pub server_boot: u32,
}

impl Default for ReassemblyConfig {
    fn default() -> Self {
        ReassemblyConfig {
            max_call_size: 64 * 1024,
            max_fragments: 256,
            max_activities: 8,
            max_total_bytes: 128 * 1024,
            timeout: Duration::from_millis(10_000),
            fack_window_size: 1,
            fack_max_tsdu: 1464,
            fack_max_frag_size: 1464,
            server_boot: 0,
        }
    }
}

/// Why a fragment was refused (its call, if any, has been dropped).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReassemblyError {
    /// Already `max_activities` incomplete calls.
    TooManyActivities,
    /// The call would exceed `max_call_size`, `max_fragments` or `max_total_bytes`.
    TooLarge,
    /// A fragment number beyond the one flagged last, or two different "last" fragments.
    Inconsistent,
}

impl core::fmt::Display for ReassemblyError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            ReassemblyError::TooManyActivities => "too many concurrent fragmented calls",
            ReassemblyError::TooLarge => "fragmented call exceeds the size limits",
            ReassemblyError::Inconsistent => "inconsistent fragment numbering",
        })
    }
}

impl std::error::Error for ReassemblyError {}

/// A complete call: the header of fragment 0 (FRAG / LAST_FRAG cleared, `fragment_len` set
/// to the body length when it fits in u16, else 0xFFFF) and the whole body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reassembled {
    pub header: RpcHeader,
    pub body: Vec<u8>,
}

/// What one received packet produced.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Received {
    /// The complete call, when this packet completed it (or was not fragmented at all).
    pub message: Option<Reassembled>,
    /// A FACK to send back, when the fragment asked for one.
    pub fack: Option<RpcPacket>,
}

#[derive(Debug)]
struct Call {
    activity: Uuid,
    sequence: u32,
    first_header: Option<RpcHeader>,
    fragments: BTreeMap<u16, Vec<u8>>,
    last: Option<u16>,
    bytes: usize,
    deadline: Instant,
}

impl Call {
    /// Highest n such that fragments 0..=n are all present.
    fn in_sequence_high(&self) -> Option<u16> {
        let mut expect: u32 = 0;
        for &k in self.fragments.keys() {
            if u32::from(k) != expect {
                break;
            }
            expect += 1;
        }
        expect.checked_sub(1).map(|n| n as u16)
    }
    fn complete(&self) -> bool {
        match self.last {
            Some(l) => self.in_sequence_high() == Some(l),
            None => false,
        }
    }
}

/// The reassembly state of one endpoint.
#[derive(Debug)]
pub struct Reassembler {
    cfg: ReassemblyConfig,
    calls: Vec<Call>,
}

impl Reassembler {
    pub fn new(cfg: ReassemblyConfig) -> Reassembler {
        Reassembler {
            cfg,
            calls: Vec::new(),
        }
    }

    pub fn config(&self) -> &ReassemblyConfig {
        &self.cfg
    }

    /// Number of incomplete calls held.
    pub fn pending(&self) -> usize {
        self.calls.len()
    }

    /// Bytes buffered over all incomplete calls.
    pub fn buffered_bytes(&self) -> usize {
        self.calls.iter().map(|c| c.bytes).sum()
    }

    /// Earliest deadline of an incomplete call (when [`Reassembler::poll`] should run).
    pub fn next_deadline(&self) -> Option<Instant> {
        self.calls.iter().map(|c| c.deadline).min()
    }

    /// Discard incomplete calls whose deadline has passed; returns how many were dropped.
    pub fn poll(&mut self, now: Instant) -> usize {
        let before = self.calls.len();
        self.calls.retain(|c| c.deadline > now);
        before - self.calls.len()
    }

    /// Feed one received packet (any type; only requests and responses are reassembled, other
    /// packet types and unfragmented packets pass through as a complete message).
    pub fn receive(
        &mut self,
        now: Instant,
        packet: &RpcPacket,
    ) -> Result<Received, ReassemblyError> {
        self.poll(now);
        let h = &packet.header;
        if !h.is_fragment() {
            return Ok(Received {
                message: Some(Reassembled {
                    header: h_with_len(h, packet.body.len()),
                    body: packet.body.clone(),
                }),
                fack: None,
            });
        }
        let is_last = h.flags1 & flags1::LAST_FRAG != 0;
        let num = h.fragment_num;
        let fack = if h.wants_fack() { Some(()) } else { None };

        // A fragment of an older call than one in progress on the same activity is stale:
        // ignore it. A newer sequence number supersedes an older incomplete call.
        let stale = self
            .calls
            .iter()
            .any(|c| c.activity == h.activity && (h.sequence.wrapping_sub(c.sequence) as i32) < 0);
        if stale {
            return Ok(Received::default());
        }
        self.calls
            .retain(|c| c.activity != h.activity || c.sequence == h.sequence);
        let idx = match self
            .calls
            .iter()
            .position(|c| c.activity == h.activity && c.sequence == h.sequence)
        {
            Some(i) => i,
            None => {
                if self.calls.len() >= self.cfg.max_activities {
                    return Err(ReassemblyError::TooManyActivities);
                }
                self.calls.push(Call {
                    activity: h.activity,
                    sequence: h.sequence,
                    first_header: None,
                    fragments: BTreeMap::new(),
                    last: None,
                    bytes: 0,
                    deadline: now + self.cfg.timeout,
                });
                self.calls.len() - 1
            }
        };

        let total_other: usize = self
            .calls
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != idx)
            .map(|(_, c)| c.bytes)
            .sum();
        let call = &mut self.calls[idx];
        let duplicate = call.fragments.contains_key(&num);
        if !duplicate {
            let inconsistent = match call.last {
                Some(l) => num > l || is_last,
                None => is_last && call.fragments.keys().next_back().is_some_and(|&k| k > num),
            };
            if inconsistent {
                self.calls.remove(idx);
                return Err(ReassemblyError::Inconsistent);
            }
            let new_bytes = call.bytes.saturating_add(packet.body.len());
            if new_bytes > self.cfg.max_call_size
                || call.fragments.len() >= self.cfg.max_fragments
                || total_other.saturating_add(new_bytes) > self.cfg.max_total_bytes
            {
                self.calls.remove(idx);
                return Err(ReassemblyError::TooLarge);
            }
            call.fragments.insert(num, packet.body.clone());
            call.bytes = new_bytes;
            if is_last {
                call.last = Some(num);
            }
            if num == 0 {
                call.first_header = Some(*h);
            }
            call.deadline = now + self.cfg.timeout;
        }

        let fack = fack.map(|_| make_fack(&self.cfg, h, call));
        if call.complete() {
            let call = self.calls.remove(idx);
            let mut body = Vec::with_capacity(call.bytes);
            for f in call.fragments.values() {
                body.extend_from_slice(f);
            }
            let mut header = call.first_header.unwrap_or(*h);
            header.flags1 &= !(flags1::FRAG | flags1::LAST_FRAG);
            header.fragment_num = 0;
            header.serial = 0;
            let header = h_with_len(&header, body.len());
            return Ok(Received {
                message: Some(Reassembled { header, body }),
                fack,
            });
        }
        Ok(Received {
            message: None,
            fack,
        })
    }
}

fn h_with_len(h: &RpcHeader, len: usize) -> RpcHeader {
    RpcHeader {
        fragment_len: u16::try_from(len).unwrap_or(u16::MAX),
        ..*h
    }
}

/// FACK for fragment header `h`: FACK header `fragment_num` = highest fragment received in
/// sequence (0xFFFF when fragment 0 is still missing), body `serial_num` = serial number of
/// the fragment that caused the FACK, selective-ack bit n of word k = fragment
/// (fragment_num + 1 + 32k + n) received.
/// Selective acknowledgement covers at most this many 32-fragment words.
const MAX_SELACK_WORDS: usize = 8;

fn make_fack(cfg: &ReassemblyConfig, h: &RpcHeader, call: &Call) -> RpcPacket {
    let high = call.in_sequence_high();
    let base: u32 = high.map_or(0, |n| u32::from(n) + 1);
    let mut selack: Vec<u32> = Vec::new();
    for &k in call.fragments.keys() {
        let k = u32::from(k);
        if k <= base {
            continue;
        }
        // base = fragment_num + 1 (the first missing fragment): bit (k - base).
        let off = (k - base) as usize;
        let (w, b) = (off / 32, off % 32);
        if w >= MAX_SELACK_WORDS {
            break;
        }
        if selack.len() <= w {
            selack.resize(w + 1, 0);
        }
        selack[w] |= 1 << b;
    }
    let mut header = RpcHeader::reply_to(h, PacketType::Fack);
    header.fragment_num = high.unwrap_or(0xFFFF);
    header.server_boot = cfg.server_boot;
    let body = FackBody {
        version: 1,
        window_size: cfg.fack_window_size,
        max_tsdu: cfg.fack_max_tsdu,
        max_frag_size: cfg.fack_max_frag_size,
        serial_num: h.serial,
        selack,
    };
    // At most MAX_SELACK_WORDS words: emit cannot fail.
    let body = body.ndr(h.drep).to_bytes().unwrap_or_default();
    header.fragment_len = body.len() as u16;
    RpcPacket { header, body }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::rpc::{fragment, opnum, Drep, PNIO_DEVICE_INTERFACE};

    fn header(act: u8, seq: u32) -> RpcHeader {
        RpcHeader::request(
            Drep::LITTLE_ENDIAN,
            Uuid::pnio_object(1, 2, 3),
            PNIO_DEVICE_INTERFACE,
            Uuid([act; 16]),
            seq,
            opnum::WRITE,
        )
    }

    fn body(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i * 7) as u8).collect()
    }

    const T0: Instant = Instant(1_000_000_000);

    #[test]
    fn in_order_with_facks() {
        let mut r = Reassembler::new(ReassemblyConfig::default());
        let b = body(3000);
        let frags = fragment(&header(1, 5), &b, 1000, true).unwrap();
        let a = r.receive(T0, &frags[0]).unwrap();
        assert!(a.message.is_none());
        let fack = a.fack.unwrap();
        assert_eq!(fack.header.packet_type, PacketType::Fack);
        assert_eq!(fack.header.fragment_num, 0);
        assert_eq!(fack.header.sequence, 5);
        let fb = FackBody::parse(&fack.body, fack.header.drep).unwrap();
        assert_eq!((fb.serial_num, fb.selack.len()), (0, 0));
        assert!(r.receive(T0, &frags[1]).unwrap().message.is_none());
        let done = r.receive(T0, &frags[2]).unwrap();
        assert!(done.fack.is_none(), "last fragment carries NO_FACK");
        let m = done.message.unwrap();
        assert_eq!(m.body, b);
        assert!(!m.header.is_fragment());
        assert_eq!(m.header.fragment_len as usize, b.len());
        assert_eq!(r.pending(), 0);
    }

    #[test]
    fn out_of_order_and_duplicates() {
        let mut r = Reassembler::new(ReassemblyConfig::default());
        let b = body(4500);
        let frags = fragment(&header(2, 1), &b, 1000, true).unwrap();
        assert_eq!(frags.len(), 5);
        // Deliver 4 (last), 2, 2 (dup), 0, 3, 0 (dup), 1.
        assert!(r.receive(T0, &frags[4]).unwrap().message.is_none());
        let x = r.receive(T0, &frags[2]).unwrap();
        // FACK: nothing in sequence yet, fragments 2 and 4 selectively acknowledged.
        let f = x.fack.unwrap();
        assert_eq!(f.header.fragment_num, 0xFFFF);
        let fb = FackBody::parse(&f.body, f.header.drep).unwrap();
        assert_eq!(fb.selack, vec![(1 << 2) | (1 << 4)]);
        assert_eq!(fb.serial_num, 2);
        assert!(r.receive(T0, &frags[2]).unwrap().message.is_none());
        let y = r.receive(T0, &frags[0]).unwrap();
        let f = y.fack.unwrap();
        assert_eq!(f.header.fragment_num, 0);
        assert_eq!(
            FackBody::parse(&f.body, f.header.drep).unwrap().selack,
            vec![(1 << 1) | (1 << 3)]
        );
        assert!(r.receive(T0, &frags[3]).unwrap().message.is_none());
        assert!(r.receive(T0, &frags[0]).unwrap().message.is_none());
        let m = r.receive(T0, &frags[1]).unwrap().message.unwrap();
        assert_eq!(m.body, b);
        assert_eq!(m.header.fragment_num, 0);
        assert_eq!(r.pending(), 0);
        assert_eq!(r.buffered_bytes(), 0);
    }

    #[test]
    fn timeout_discards() {
        let cfg = ReassemblyConfig {
            timeout: Duration::from_millis(100),
            ..Default::default()
        };
        let mut r = Reassembler::new(cfg);
        let frags = fragment(&header(3, 1), &body(2000), 1000, false).unwrap();
        r.receive(T0, &frags[0]).unwrap();
        assert_eq!(r.next_deadline(), Some(T0 + Duration::from_millis(100)));
        assert_eq!(r.poll(T0 + Duration::from_millis(99)), 0);
        assert_eq!(r.poll(T0 + Duration::from_millis(100)), 1);
        assert_eq!(r.next_deadline(), None);
        // The second fragment alone now starts a new, incomplete call.
        assert!(r
            .receive(T0 + Duration::from_millis(150), &frags[1])
            .unwrap()
            .message
            .is_none());
        assert_eq!(r.pending(), 1);
        // A fragment keeps the call alive: deadline moves.
        assert_eq!(r.next_deadline(), Some(T0 + Duration::from_millis(250)));
    }

    #[test]
    fn bounds() {
        let cfg = ReassemblyConfig {
            max_call_size: 2500,
            max_activities: 2,
            max_total_bytes: 3000,
            max_fragments: 4,
            ..Default::default()
        };
        let mut r = Reassembler::new(cfg);
        let big = fragment(&header(4, 1), &body(3000), 1000, false).unwrap();
        r.receive(T0, &big[0]).unwrap();
        r.receive(T0, &big[1]).unwrap();
        assert_eq!(r.receive(T0, &big[2]), Err(ReassemblyError::TooLarge));
        assert_eq!(r.pending(), 0);
        // Activities.
        let a = fragment(&header(5, 1), &body(2000), 1000, false).unwrap();
        let b = fragment(&header(6, 1), &body(2000), 1000, false).unwrap();
        let c = fragment(&header(7, 1), &body(2000), 1000, false).unwrap();
        r.receive(T0, &a[0]).unwrap();
        r.receive(T0, &b[0]).unwrap();
        assert_eq!(
            r.receive(T0, &c[0]),
            Err(ReassemblyError::TooManyActivities)
        );
        // Total bytes: a and b hold 2000; another 1000 on a is fine (completes a).
        assert!(r.receive(T0, &a[1]).unwrap().message.is_some());
        // Fragment count.
        let many = fragment(&header(8, 1), &body(50), 10, false).unwrap();
        for f in &many[..4] {
            r.receive(T0, f).unwrap();
        }
        assert_eq!(r.receive(T0, &many[4]), Err(ReassemblyError::TooLarge));
    }

    #[test]
    fn inconsistent_last() {
        let mut r = Reassembler::new(ReassemblyConfig::default());
        let frags = fragment(&header(9, 1), &body(3000), 1000, false).unwrap();
        r.receive(T0, &frags[2]).unwrap(); // last = 2
        let mut beyond = frags[1].clone();
        beyond.header.fragment_num = 3;
        assert_eq!(r.receive(T0, &beyond), Err(ReassemblyError::Inconsistent));
        assert_eq!(r.pending(), 0);
    }

    #[test]
    fn new_sequence_supersedes() {
        let mut r = Reassembler::new(ReassemblyConfig::default());
        let old = fragment(&header(10, 1), &body(2000), 1000, false).unwrap();
        let new = fragment(&header(10, 2), &body(2000), 1000, false).unwrap();
        r.receive(T0, &old[0]).unwrap();
        r.receive(T0, &new[0]).unwrap();
        assert_eq!(r.pending(), 1);
        assert!(r.receive(T0, &old[1]).unwrap().message.is_none());
        assert!(r.receive(T0, &new[1]).unwrap().message.is_some());
    }

    #[test]
    fn unfragmented_passes_through() {
        let mut r = Reassembler::new(ReassemblyConfig::default());
        let p = RpcPacket::new(header(11, 1), vec![1, 2, 3]);
        let m = r.receive(T0, &p).unwrap().message.unwrap();
        assert_eq!(m.body, vec![1, 2, 3]);
        assert_eq!(r.pending(), 0);
    }

    #[test]
    fn random_fragment_streams_never_panic_and_stay_bounded() {
        use proptest::prelude::*;
        let cfg = ReassemblyConfig {
            max_total_bytes: 5000,
            ..Default::default()
        };
        proptest!(|(ops in proptest::collection::vec((0u8..4, 0u32..3, any::<u16>(), any::<u8>(), 0usize..1500, 0u64..200), 0..60))| {
            let mut r = Reassembler::new(cfg);
            let mut now = T0;
            for (act, seq, num, fl, len, dt) in ops {
                now += Duration::from_millis(dt);
                let mut h = header(act, seq);
                h.flags1 = fl;
                h.fragment_num = num % 8;
                let p = RpcPacket::new(h, vec![0; len]);
                let _ = r.receive(now, &p);
                prop_assert!(r.pending() <= cfg.max_activities);
                prop_assert!(r.buffered_bytes() <= cfg.max_total_bytes);
            }
        });
    }
}

//! CMRPC, server side: the connectionless DCE/RPC responder a device runs on UDP 34964
//! (IEC 61158-6-10 "CMRPC", over the DCE 1.1 connectionless protocol).
//!
//! It owns what the RPC layer decides, so the CMDEV machine above sees only complete calls:
//! fragment reassembly (with FACKs), the answer to a retransmitted call (the cached reply,
//! never a second execution: a Write must not be applied twice), PING answered with the
//! cached reply, WORKING while a fragmented call is incomplete, or NOCALL, an ACK that frees
//! the cache, REJECTs with their NCA status, and fragmenting the reply to fit the MTU.
//! Replies to the device's own client calls (ApplicationReady) are handed up unchanged.

use crate::wire::Emit;
use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;

use crate::machine::rpc_reassembly::{Reassembled, Reassembler, ReassemblyConfig};
use crate::time::Instant;
use crate::wire::rpc::{self, FaultBody, PacketType, RpcHeader, RpcPacket, Uuid};

/// Largest RPC body per fragment we send (UDP payload 1472 minus the 80-byte header, as the
/// Ethernet MTU of 1500 allows without IP fragmentation).
pub const MAX_FRAGMENT_BODY: usize = 1392;
/// Replies kept for retransmitted calls; bounded (a reply is only needed for a retry).
const MAX_CACHED_REPLIES: usize = 64;
/// Incomplete fragmented calls remembered for PING -> WORKING.
const MAX_IN_PROGRESS: usize = 64;
/// Activities whose last answered sequence number is remembered after their reply was
/// freed, so a late duplicate of an answered call is recognised (at-most-once execution).
const MAX_ACTIVITIES: usize = 256;

/// One UDP datagram to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Datagram {
    pub to: SocketAddr,
    pub bytes: Vec<u8>,
}

/// What a received datagram turned out to be, for the layer above.
#[derive(Debug)]
pub enum Inbound {
    /// A complete request to execute (reassembled if it came in fragments).
    Call(Reassembled),
    /// A reply (Response, Fault or Reject) to one of our own client calls.
    Reply(RpcPacket),
    /// Handled here (a retransmission, PING, ACK, a fragment) or ignored.
    Done,
}

struct CachedReply {
    sequence: u32,
    packets: Vec<Vec<u8>>,
}

/// The CMRPC server.
pub struct RpcServer {
    boot: u32,
    cache: HashMap<Uuid, CachedReply>,
    /// Fragmented calls not yet complete (activity -> sequence), for PING -> WORKING.
    in_progress: HashMap<Uuid, u32>,
    reasm: Reassembler,
    out: VecDeque<Datagram>,
    /// Activity -> the highest sequence number answered, kept after an ACK freed the reply
    /// (C706 connectionless: a call is executed at most once; a duplicate of an answered call
    /// that arrives after the ACK, delayed or duplicated in the network, must not run again:
    /// a second Connect would re-run, and so abort, the AR it created).
    answered: HashMap<Uuid, u32>,
    /// Insertion order of `answered`, for the bound.
    answered_order: VecDeque<Uuid>,
}

impl RpcServer {
    /// `boot`: the server boot time stamp every reply carries (a new value tells a client
    /// that the server restarted).
    pub fn new(boot: u32) -> RpcServer {
        RpcServer {
            boot,
            cache: HashMap::new(),
            in_progress: HashMap::new(),
            reasm: Reassembler::new(ReassemblyConfig {
                server_boot: boot,
                ..ReassemblyConfig::default()
            }),
            out: VecDeque::new(),
            answered: HashMap::new(),
            answered_order: VecDeque::new(),
        }
    }

    /// Feed one datagram. `Err(())`: not an RPC packet at all (the caller counts it invalid).
    #[allow(clippy::result_unit_err)]
    pub fn receive(&mut self, now: Instant, data: &[u8], from: SocketAddr) -> Result<Inbound, ()> {
        let pkt = RpcPacket::parse(data).map_err(|_| ())?;
        let h = pkt.header;
        Ok(match h.packet_type {
            PacketType::Request => self.on_request(now, pkt, from),
            PacketType::Ping => {
                if !self.resend_cached(&h, from) {
                    // A call still being reassembled is "working"; anything else is unknown.
                    let t = if self.in_progress.get(&h.activity) == Some(&h.sequence) {
                        PacketType::Working
                    } else {
                        PacketType::Nocall
                    };
                    self.push(RpcPacket::new(RpcHeader::reply_to(&h, t), Vec::new()), from);
                }
                Inbound::Done
            }
            PacketType::Ack => {
                if self
                    .cache
                    .get(&h.activity)
                    .is_some_and(|c| c.sequence == h.sequence)
                {
                    self.cache.remove(&h.activity);
                }
                Inbound::Done
            }
            PacketType::Response | PacketType::Fault | PacketType::Reject => Inbound::Reply(pkt),
            _ => Inbound::Done,
        })
    }

    fn on_request(&mut self, now: Instant, pkt: RpcPacket, from: SocketAddr) -> Inbound {
        let h = pkt.header;
        // A duplicate of an answered call: resend the reply, do not execute it again.
        if self.resend_cached(&h, from) {
            return Inbound::Done;
        }
        // Answered before and its reply already freed by the client's ACK: a late copy.
        if self
            .answered
            .get(&h.activity)
            .is_some_and(|&s| h.sequence <= s)
        {
            return Inbound::Done;
        }
        let rec = match self.reasm.receive(now, &pkt) {
            Ok(r) => r,
            Err(_) => {
                self.reject(&h, rpc::reject_status::NCA_FAULT_REMOTE_NO_MEMORY, from);
                return Inbound::Done;
            }
        };
        if let Some(f) = rec.fack {
            self.push(f, from);
        }
        let Some(msg) = rec.message else {
            if self.in_progress.len() < MAX_IN_PROGRESS {
                self.in_progress.insert(h.activity, h.sequence);
            }
            return Inbound::Done;
        };
        self.in_progress.remove(&h.activity);
        Inbound::Call(msg)
    }

    fn resend_cached(&mut self, h: &RpcHeader, to: SocketAddr) -> bool {
        let Some(c) = self
            .cache
            .get(&h.activity)
            .filter(|c| c.sequence == h.sequence)
        else {
            return false;
        };
        let again: Vec<Datagram> = c
            .packets
            .iter()
            .map(|p| Datagram {
                to,
                bytes: p.clone(),
            })
            .collect();
        self.out.extend(again);
        true
    }

    fn push(&mut self, p: RpcPacket, to: SocketAddr) {
        if let Ok(bytes) = p.to_bytes() {
            self.out.push_back(Datagram { to, bytes });
        }
    }

    /// Answer the call `h` with the NDR body `body` (fragmented as needed) and remember the
    /// reply for retransmissions of the same call.
    pub fn respond(&mut self, h: &RpcHeader, body: &[u8], to: SocketAddr) {
        let mut rh = RpcHeader::response_to(h);
        rh.server_boot = self.boot;
        let Ok(frags) = rpc::fragment(&rh, body, MAX_FRAGMENT_BODY, false) else {
            return;
        };
        let packets: Vec<Vec<u8>> = frags.iter().filter_map(|p| p.to_bytes().ok()).collect();
        self.out.extend(packets.iter().map(|p| Datagram {
            to,
            bytes: p.clone(),
        }));
        self.cache.insert(
            h.activity,
            CachedReply {
                sequence: h.sequence,
                packets,
            },
        );
        if self.answered.insert(h.activity, h.sequence).is_none() {
            self.answered_order.push_back(h.activity);
            if self.answered_order.len() > MAX_ACTIVITIES {
                if let Some(old) = self.answered_order.pop_front() {
                    self.answered.remove(&old);
                }
            }
        }
        if self.cache.len() > MAX_CACHED_REPLIES {
            if let Some(k) = self.cache.keys().next().copied() {
                self.cache.remove(&k);
            }
        }
    }

    /// Refuse the call `h` with an NCA reject status.
    pub fn reject(&mut self, h: &RpcHeader, code: u32, to: SocketAddr) {
        let mut rh = RpcHeader::reply_to(h, PacketType::Reject);
        rh.server_boot = self.boot;
        // A fault body is four bytes in any DREP: it always emits.
        let body = FaultBody { status: code }
            .ndr(h.drep)
            .to_bytes()
            .unwrap_or_default();
        self.push(RpcPacket::new(rh, body), to);
    }

    /// Send a packet of our own (a client call).
    pub fn send(&mut self, d: Datagram) {
        self.out.push_back(d);
    }

    /// Expire incomplete fragmented calls.
    pub fn poll(&mut self, now: Instant) {
        self.reasm.poll(now);
        if self.reasm.pending() == 0 {
            self.in_progress.clear();
        }
    }

    /// When the oldest incomplete call expires.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.reasm.next_deadline()
    }

    pub fn poll_transmit(&mut self) -> Option<Datagram> {
        self.out.pop_front()
    }
}

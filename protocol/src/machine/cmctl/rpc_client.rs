//! The CMRPC client of the controller: one DCE/RPC connectionless call at a time on one
//! activity (C706 chapter 10, client side), as PNIO-CM uses it (IEC 61158-6-10 CMRPC).
//!
//! A call is sent as one or more request fragments; when no response arrives within the
//! configured timeout, every fragment is sent again, up to `retries` times, then the call fails
//! with [`CallError::Timeout`]. Response fragments are put together by the shared
//! [`Reassembler`] (which also answers a FACK when a fragment asks for one). Working, FACK and
//! Nocall packets mean the server is alive but do not extend the deadline: a device that keeps
//! working forever must still not hang the caller.

use crate::wire::Emit;
use std::collections::VecDeque;
use std::net::SocketAddrV4;

use crate::machine::rpc_reassembly::{Reassembler, ReassemblyConfig, ReassemblyError};
use crate::time::{Duration, Instant};
use crate::wire::rpc::{
    self, Drep, FaultBody, PacketType, PnioRequest, PnioResponse, RpcHeader, RpcPacket, Uuid,
};

/// Timing and framing of the client's calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RpcClientConfig {
    /// Time to wait for the response before sending the request again.
    pub timeout: Duration,
    /// Retransmissions of a request (so `retries + 1` sends in all).
    pub retries: u32,
    /// Largest request body per fragment. 1392 leaves room for the RPC, UDP and IP headers
    /// in one 1500-byte Ethernet frame with a margin, as the controllers in the fixtures send.
    pub max_fragment_body: usize,
    /// Largest reassembled response (a response is at most the ArgsMaximum we ask for; 1 MiB
    /// is far above any record).
    pub max_response: usize,
    /// Data representation of the requests (the device answers in the requester's; little
    /// endian is what controllers send, big endian is the other one a device must accept).
    pub drep: Drep,
}

impl Default for RpcClientConfig {
    fn default() -> Self {
        RpcClientConfig {
            timeout: Duration::from_millis(1000),
            retries: 3,
            max_fragment_body: 1392,
            max_response: 1 << 20,
            drep: Drep::LITTLE_ENDIAN,
        }
    }
}

/// Why a call produced no PNIO response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallError {
    /// No response after every retransmission.
    Timeout { opnum: u16 },
    /// The server answered with a DCE/RPC Fault or Reject carrying this status.
    Fault(u32),
    /// The request could not be encoded or the response could not be decoded (the words say
    /// which).
    Protocol(String),
}

impl core::fmt::Display for CallError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            CallError::Timeout { opnum } => write!(f, "no RPC response (opnum {opnum})"),
            CallError::Fault(st) => write!(f, "DCE/RPC fault/reject status {st:#010x}"),
            CallError::Protocol(s) => f.write_str(s),
        }
    }
}

/// The result of one call.
pub type CallResult = Result<PnioResponse, CallError>;

#[derive(Debug)]
struct Call {
    seq: u32,
    opnum: u16,
    wire: Vec<Vec<u8>>,
    /// Sends done so far (1 after the first transmission).
    sends: u32,
    deadline: Instant,
}

/// One activity's client. Sequence numbers count up from the one given to [`RpcClient::new`].
#[derive(Debug)]
pub struct RpcClient {
    cfg: RpcClientConfig,
    server: SocketAddrV4,
    object: Uuid,
    activity: Uuid,
    next_seq: u32,
    call: Option<Call>,
    reasm: Reassembler,
    tx: VecDeque<Vec<u8>>,
}

impl RpcClient {
    /// A client calling the PNIO device interface of `object` at `server` on `activity`.
    pub fn new(
        cfg: RpcClientConfig,
        server: SocketAddrV4,
        object: Uuid,
        activity: Uuid,
        first_seq: u32,
    ) -> RpcClient {
        let reasm = Reassembler::new(ReassemblyConfig {
            max_call_size: cfg.max_response,
            max_total_bytes: cfg.max_response,
            max_fragments: usize::from(u16::MAX),
            max_activities: 1,
            // The call's own retransmission timer decides when to give up; an incomplete
            // response is kept as long as the call may still complete.
            timeout: cfg.timeout,
            ..ReassemblyConfig::default()
        });
        RpcClient {
            cfg,
            server,
            object,
            activity,
            next_seq: first_seq,
            call: None,
            reasm,
            tx: VecDeque::new(),
        }
    }

    pub fn activity(&self) -> Uuid {
        self.activity
    }

    pub fn server(&self) -> SocketAddrV4 {
        self.server
    }

    /// A call is in flight.
    pub fn busy(&self) -> bool {
        self.call.is_some()
    }

    /// The opnum of the call in flight.
    pub fn opnum(&self) -> Option<u16> {
        self.call.as_ref().map(|c| c.opnum)
    }

    /// Start a call (the client must be idle): its fragments are queued for
    /// [`RpcClient::poll_transmit`].
    pub fn start(
        &mut self,
        now: Instant,
        opnum: u16,
        ndr_data: Vec<u8>,
        args_max: u32,
    ) -> Result<(), CallError> {
        debug_assert!(self.call.is_none(), "one call at a time per activity");
        let drep = self.cfg.drep;
        let seq = self.next_seq;
        let header = RpcHeader::request(
            drep,
            self.object,
            rpc::PNIO_DEVICE_INTERFACE,
            self.activity,
            seq,
            opnum,
        );
        let enc = |e: crate::wire::Error| CallError::Protocol(format!("encode request: {e}"));
        let body = PnioRequest::new(args_max, ndr_data)
            .ndr(drep)
            .to_bytes()
            .map_err(enc)?;
        let packets = rpc::fragment(&header, &body, self.cfg.max_fragment_body, false)
            .map_err(|e| CallError::Protocol(format!("fragment request: {e}")))?;
        let wire: Vec<Vec<u8>> = packets
            .iter()
            .map(|p| p.to_bytes())
            .collect::<Result<_, _>>()
            .map_err(enc)?;
        self.next_seq = self.next_seq.wrapping_add(1);
        self.tx.extend(wire.iter().cloned());
        self.call = Some(Call {
            seq,
            opnum,
            wire,
            sends: 1,
            deadline: now + self.cfg.timeout,
        });
        Ok(())
    }

    /// Drop the call in flight without a result (the AR ended).
    pub fn cancel(&mut self) {
        self.call = None;
        self.tx.clear();
    }

    /// A packet from the server. Returns the call's result when this packet ended it; packets
    /// of other activities or sequence numbers are ignored.
    pub fn handle_packet(&mut self, now: Instant, p: &RpcPacket) -> Option<CallResult> {
        let call = self.call.as_ref()?;
        if p.header.activity != self.activity || p.header.sequence != call.seq {
            return None;
        }
        let result = match p.header.packet_type {
            PacketType::Response => match self.reasm.receive(now, p) {
                Ok(r) => {
                    if let Some(f) = r.fack.and_then(|f| f.to_bytes().ok()) {
                        self.tx.push_back(f);
                    }
                    let m = r.message?;
                    PnioResponse::parse(&m.body, m.header.drep)
                        .map_err(|e| CallError::Protocol(format!("response: {e}")))
                }
                Err(ReassemblyError::TooLarge) => Err(CallError::Protocol(
                    "fragmented RPC response larger than 1 MiB".into(),
                )),
                Err(e) => Err(CallError::Protocol(format!("response fragments: {e}"))),
            },
            PacketType::Fault | PacketType::Reject => Err(CallError::Fault(
                FaultBody::parse(&p.body, p.header.drep)
                    .map(|f| f.status)
                    .unwrap_or(0),
            )),
            // Working / Fack / Nocall: the server is alive; keep waiting.
            _ => return None,
        };
        self.call = None;
        Some(result)
    }

    /// When [`RpcClient::handle_timeout`] must run.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.call.as_ref().map(|c| c.deadline)
    }

    /// Retransmit the call whose deadline passed, or end it with [`CallError::Timeout`] when
    /// every retransmission has been spent.
    pub fn handle_timeout(&mut self, now: Instant) -> Option<CallResult> {
        self.reasm.poll(now);
        let call = self.call.as_mut()?;
        if now < call.deadline {
            return None;
        }
        if call.sends > self.cfg.retries {
            let opnum = call.opnum;
            self.call = None;
            return Some(Err(CallError::Timeout { opnum }));
        }
        call.sends += 1;
        call.deadline = now + self.cfg.timeout;
        self.tx.extend(call.wire.iter().cloned());
        None
    }

    /// The next datagram for the server.
    pub fn poll_transmit(&mut self) -> Option<Vec<u8>> {
        self.tx.pop_front()
    }
}

//! The controller's connection management, IEC 61158-6-10 CMCTL (with the parts of CMRPC it
//! needs: an RPC client for its calls and an RPC server for the device's ApplicationReady), as
//! a sans-IO machine for one AR.
//!
//! The sequence: Connect request -> Connect response (IOCR FrameIDs, alarm reference,
//! ModuleDiffBlock) -> parameter Write (one record, or a MultipleWrite) -> PrmEnd (Control) ->
//! the device's ApplicationReady (a Control call the device makes to the controller's RPC
//! server), answered -> established. Afterwards record Reads and Writes, and Release.
//!
//! PROFINET uses two UDP endpoints on the controller: the RPC client port its calls leave
//! from and the RPC server port (34964) the device's ApplicationReady arrives at. The machine
//! sees datagrams with addresses and says through [`Datagram::via`] which endpoint sends each
//! one; the shell owns the sockets and routes ([`server::classify`] says which AR a datagram
//! belongs to). Like the other machines it takes `now` from the caller and never reads a
//! clock: [`Cmctl::poll_timeout`] says when [`Cmctl::handle_timeout`] must run.
//!
//! One RPC call is in flight at a time (an activity has one outstanding call, C706 chapter
//! 10); record services asked for meanwhile wait in order.

pub mod connect;
pub mod model;
pub mod request;
pub mod rpc_client;
pub mod server;
#[cfg(test)]
mod tests;

use crate::wire::Emit;
use std::collections::VecDeque;
use std::net::SocketAddrV4;

use crate::machine::cmdev::connect::cmrpc;
use crate::time::{Duration, Instant};
use crate::wire::ethernet::MacAddr;
use crate::wire::field::Writer;
use crate::wire::pnio::control::ControlBlock;
use crate::wire::pnio::record::{
    self, ReadReqHeaderRepr, ReadRequest, ReadResponse, RecordAddress, WriteRecord,
    WriteReqHeaderRepr, WriteRequest, WriteResponse,
};
use crate::wire::pnio::PnioStatus;
use crate::wire::rpc::{self, PacketType, PnioResponse, RpcPacket, Uuid};

pub use connect::{describe_module_diff, module_diff_mismatches, ConnectResult};
pub use rpc_client::{CallError, RpcClient, RpcClientConfig};

/// Parameters of one AR's connection management.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CmctlConfig {
    pub ar_uuid: Uuid,
    pub session_key: u16,
    /// The device's RPC server (its IP, port 34964).
    pub device: SocketAddrV4,
    /// The device's PNIO object UUID (instance, device id, vendor id) that calls address.
    pub object: Uuid,
    /// The activity UUID of this AR's calls.
    pub activity: Uuid,
    /// The device's MAC when known before the Connect (DCP); ZERO when not. The Connect
    /// response's CMResponderMacAdd, when a unicast address, takes precedence.
    pub device_mac: MacAddr,
    /// The Connect request's NDR data (the blocks of IODConnectReq).
    pub connect_request: Vec<u8>,
    /// Parameter records written between the Connect and PrmEnd, in this order.
    pub parameters: Vec<(RecordAddress, Vec<u8>)>,
    /// SeqNumber of the first record service header (counts up per header).
    pub first_record_seq: u16,
    pub rpc: RpcClientConfig,
    /// How long after the PrmEnd response the device may take to send ApplicationReady.
    pub app_ready_timeout: Duration,
}

/// The steps of establishing and ending an AR, for [`CmctlEvent::Failed`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Connect,
    ParameterWrite,
    PrmEnd,
    ApplicationReady,
    Release,
}

impl Phase {
    /// The service's name as the controller reports a refusal ("Connect rejected ...").
    pub fn service(self) -> &'static str {
        match self {
            Phase::Connect => "Connect",
            Phase::ParameterWrite => "parameter Write",
            Phase::PrmEnd => "PrmEnd",
            Phase::ApplicationReady => "ApplicationReady",
            Phase::Release => "Release",
        }
    }
}

/// Why a step or a record service did not succeed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CmctlError {
    /// The call got no PNIO response (timeout, DCE/RPC fault, undecodable).
    Call(CallError),
    /// The device answered with this negative PNIOStatus.
    Rejected(PnioStatus),
    /// The answer was decoded but does not say what it must (the words say what is missing).
    Protocol(String),
    /// The device did not send ApplicationReady in time.
    NoApplicationReady,
    /// The AR was released or aborted before the service could run or complete.
    Aborted,
}

impl core::fmt::Display for CmctlError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            CmctlError::Call(e) => write!(f, "{e}"),
            CmctlError::Rejected(st) => write!(f, "rejected with PNIOStatus {}", st.in_words()),
            CmctlError::Protocol(s) => f.write_str(s),
            CmctlError::NoApplicationReady => f.write_str("no ApplicationReady from the device"),
            CmctlError::Aborted => f.write_str("the AR ended"),
        }
    }
}

/// What a positive Connect response established.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Connected {
    pub response: ConnectResult,
    /// The MAC the device's cyclic and alarm frames come from.
    pub device_mac: MacAddr,
    pub input_frame_id: u16,
    pub output_frame_id: u16,
}

/// Handle of a record service, echoed in [`CmctlEvent::RecordDone`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RecordId(pub u32);

/// Something the shell must act on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CmctlEvent {
    /// The device accepted the Connect: cyclic and alarm machines can be set up (before the
    /// parameter Write goes out, which [`Cmctl::poll_transmit`] returns after this event).
    Connected(Box<Connected>),
    /// The parameters are written and PrmEnd is being sent: the AR waits for the device's
    /// ApplicationReady.
    ParameterEnd,
    /// The device's ApplicationReady arrived and is being answered: data exchange runs. Once
    /// per AR (a repeated ApplicationReady is answered again without a second event).
    Established,
    /// Establishing (or releasing) the AR failed; the machine is closed.
    Failed { phase: Phase, error: CmctlError },
    /// The device confirmed the Release; the machine is closed.
    Released,
    /// A record Read (the record data) or Write (empty) finished.
    RecordDone {
        id: RecordId,
        result: Result<Vec<u8>, CmctlError>,
    },
}

/// Which of the controller's endpoints a datagram leaves from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    /// The RPC client port (requests of our calls, FACKs).
    Client,
    /// The RPC server port 34964 (answers to the device's requests).
    Server,
}

/// What a datagram is, for a shell that treats kinds differently (fault injection).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DatagramKind {
    /// A request fragment of one of our calls, or a FACK for a response fragment.
    Call,
    /// The answer to the device's ApplicationReady.
    ApplicationReadyResponse,
    /// The Reject of a request the controller does not serve.
    Refusal,
}

/// A UDP payload to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Datagram {
    pub to: SocketAddrV4,
    pub via: Via,
    pub kind: DatagramKind,
    pub bytes: Vec<u8>,
}

/// Where the AR stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CmctlState {
    Connecting,
    Parameterizing,
    /// PrmEnd sent, its response not yet in.
    PrmEnd,
    /// PrmEnd confirmed; waiting for ApplicationReady until the deadline.
    WaitApplicationReady {
        deadline: Instant,
    },
    Established,
    Releasing,
    Closed,
}

#[derive(Debug)]
enum Op {
    Read {
        id: RecordId,
        req: Vec<u8>,
        args_max: u32,
    },
    Write {
        id: RecordId,
        req: Vec<u8>,
    },
    Release,
}

/// The call the RPC client is making.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Current {
    Step(Phase),
    Read(RecordId),
    Write(RecordId),
}

/// The CMCTL machine of one AR.
#[derive(Debug)]
pub struct Cmctl {
    cfg: CmctlConfig,
    state: CmctlState,
    client: RpcClient,
    current: Option<Current>,
    ops: VecDeque<Op>,
    record_seq: u16,
    next_record_id: u32,
    established: bool,
    tx: VecDeque<Datagram>,
    events: VecDeque<CmctlEvent>,
}

impl Cmctl {
    /// Start: the Connect request is queued for [`Cmctl::poll_transmit`].
    pub fn new(cfg: CmctlConfig, now: Instant) -> Cmctl {
        let client = RpcClient::new(cfg.rpc, cfg.device, cfg.object, cfg.activity, 0);
        let mut m = Cmctl {
            record_seq: cfg.first_record_seq,
            cfg,
            state: CmctlState::Connecting,
            client,
            current: None,
            ops: VecDeque::new(),
            next_record_id: 1,
            established: false,
            tx: VecDeque::new(),
            events: VecDeque::new(),
        };
        let req = m.cfg.connect_request.clone();
        m.step(now, Phase::Connect, rpc::opnum::CONNECT, req, 4096);
        m
    }

    pub fn config(&self) -> &CmctlConfig {
        &self.cfg
    }

    pub fn state(&self) -> CmctlState {
        self.state
    }

    /// The activity UUID our calls use (the shell routes responses by it).
    pub fn activity(&self) -> Uuid {
        self.cfg.activity
    }

    pub fn ar_uuid(&self) -> Uuid {
        self.cfg.ar_uuid
    }

    pub fn is_closed(&self) -> bool {
        self.state == CmctlState::Closed
    }

    /// A datagram from `from` (a response to one of our calls, or a request of the device).
    pub fn handle_datagram(&mut self, now: Instant, from: SocketAddrV4, bytes: &[u8]) {
        let Ok(p) = RpcPacket::parse(bytes) else {
            return;
        };
        if p.header.packet_type == PacketType::Request {
            self.on_request(from, &p);
            return;
        }
        if let Some(result) = self.client.handle_packet(now, &p) {
            self.on_call_done(now, result);
        }
        self.pump(now);
    }

    /// When [`Cmctl::handle_timeout`] must run.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let wait = match self.state {
            CmctlState::WaitApplicationReady { deadline } => Some(deadline),
            _ => None,
        };
        match (self.client.poll_timeout(), wait) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    pub fn handle_timeout(&mut self, now: Instant) {
        if let Some(result) = self.client.handle_timeout(now) {
            self.on_call_done(now, result);
        }
        if let CmctlState::WaitApplicationReady { deadline } = self.state {
            if now >= deadline {
                self.fail(Phase::ApplicationReady, CmctlError::NoApplicationReady);
            }
        }
        self.pump(now);
    }

    pub fn poll_transmit(&mut self) -> Option<Datagram> {
        self.tx.pop_front()
    }

    pub fn poll_event(&mut self) -> Option<CmctlEvent> {
        self.events.pop_front()
    }

    /// Read a record within the AR (at most `max_len` bytes of record data).
    pub fn read_record(&mut self, now: Instant, address: RecordAddress, max_len: u32) -> RecordId {
        let id = self.record_id();
        let hdr = ReadReqHeaderRepr {
            seq_number: self.next_record_seq(),
            ar_uuid: self.cfg.ar_uuid.0,
            address,
            record_data_length: max_len,
            target_ar_uuid: record::NIL_UUID,
        };
        match ReadRequest::new(hdr).to_bytes() {
            Ok(req) => self.enqueue(
                now,
                Op::Read {
                    id,
                    req,
                    args_max: max_len.saturating_add(64),
                },
            ),
            Err(e) => self.record_done(id, Err(CmctlError::Protocol(e.to_string()))),
        }
        id
    }

    /// Write a record within the AR.
    pub fn write_record(&mut self, now: Instant, address: RecordAddress, data: &[u8]) -> RecordId {
        let id = self.record_id();
        let seq = self.next_record_seq();
        match WriteRequest::single(seq, self.cfg.ar_uuid.0, address, data.to_vec())
            .and_then(|r| r.to_bytes())
        {
            Ok(req) => self.enqueue(now, Op::Write { id, req }),
            Err(e) => self.record_done(id, Err(CmctlError::Protocol(e.to_string()))),
        }
        id
    }

    /// Orderly end: Release once the call in flight (a record service) is done; services
    /// still waiting end with [`CmctlError::Aborted`]. A release while the AR is still being
    /// established ends that first ([`CmctlEvent::Failed`] with `Aborted`).
    pub fn release(&mut self, now: Instant) {
        match self.state {
            // Every release gets an answer: an ended AR has nothing to release.
            CmctlState::Closed => {
                self.events.push_back(CmctlEvent::Failed {
                    phase: Phase::Release,
                    error: CmctlError::Aborted,
                });
                return;
            }
            CmctlState::Releasing => return,
            _ => {}
        }
        if let Some(Current::Step(phase)) = self.current {
            self.client.cancel();
            self.current = None;
            self.events.push_back(CmctlEvent::Failed {
                phase,
                error: CmctlError::Aborted,
            });
        } else if !self.established {
            // Between PrmEnd and ApplicationReady: the wait ends here.
            self.events.push_back(CmctlEvent::Failed {
                phase: Phase::ApplicationReady,
                error: CmctlError::Aborted,
            });
        }
        self.abort_ops();
        self.state = CmctlState::Releasing;
        self.ops.push_back(Op::Release);
        self.pump(now);
    }

    /// End the AR without a word to the device (the shell sends ERR-RTA on the alarm channel
    /// when it has one). Every service in flight or waiting ends with `Aborted`.
    pub fn abort(&mut self) {
        if self.state == CmctlState::Closed {
            return;
        }
        match self.current.take() {
            Some(Current::Read(id) | Current::Write(id)) => {
                self.record_done(id, Err(CmctlError::Aborted))
            }
            Some(Current::Step(phase)) => self.events.push_back(CmctlEvent::Failed {
                phase,
                error: CmctlError::Aborted,
            }),
            None => {}
        }
        self.client.cancel();
        self.abort_ops();
        // Requests of the ended calls not yet sent stay unsent; answers to the device's
        // requests still go out.
        self.tx.retain(|d| d.kind != DatagramKind::Call);
        self.state = CmctlState::Closed;
    }

    // ---------------------------------------------------------------------------------------

    fn record_id(&mut self) -> RecordId {
        let id = RecordId(self.next_record_id);
        self.next_record_id = self.next_record_id.wrapping_add(1);
        id
    }

    fn next_record_seq(&mut self) -> u16 {
        let s = self.record_seq;
        self.record_seq = self.record_seq.wrapping_add(1);
        s
    }

    fn record_done(&mut self, id: RecordId, result: Result<Vec<u8>, CmctlError>) {
        self.events.push_back(CmctlEvent::RecordDone { id, result });
    }

    fn enqueue(&mut self, now: Instant, op: Op) {
        if matches!(self.state, CmctlState::Closed | CmctlState::Releasing) {
            if let Op::Read { id, .. } | Op::Write { id, .. } = op {
                self.record_done(id, Err(CmctlError::Aborted));
            }
            return;
        }
        self.ops.push_back(op);
        self.pump(now);
    }

    fn abort_ops(&mut self) {
        while let Some(op) = self.ops.pop_front() {
            if let Op::Read { id, .. } | Op::Write { id, .. } = op {
                self.record_done(id, Err(CmctlError::Aborted));
            }
        }
    }

    /// Start the next queued service when the client is idle, and move its datagrams out.
    fn pump(&mut self, now: Instant) {
        while self.current.is_none() && !self.is_closed() {
            let Some(op) = self.ops.pop_front() else {
                break;
            };
            match op {
                Op::Read { id, req, args_max } => {
                    self.call(now, Current::Read(id), rpc::opnum::READ, req, args_max)
                }
                Op::Write { id, req } => {
                    self.call(now, Current::Write(id), rpc::opnum::WRITE, req, 1024)
                }
                Op::Release => {
                    let mut w = Writer::new();
                    let _ = ControlBlock::release_req(self.cfg.ar_uuid, self.cfg.session_key)
                        .emit(&mut w);
                    self.step(
                        now,
                        Phase::Release,
                        rpc::opnum::RELEASE,
                        w.into_inner(),
                        1024,
                    );
                }
            }
        }
        while let Some(bytes) = self.client.poll_transmit() {
            self.tx.push_back(Datagram {
                to: self.cfg.device,
                via: Via::Client,
                kind: DatagramKind::Call,
                bytes,
            });
        }
    }

    fn call(&mut self, now: Instant, what: Current, opnum: u16, data: Vec<u8>, args_max: u32) {
        match self.client.start(now, opnum, data, args_max) {
            Ok(()) => self.current = Some(what),
            Err(e) => self.on_result(now, what, Err(e)),
        }
    }

    fn step(&mut self, now: Instant, phase: Phase, opnum: u16, data: Vec<u8>, args_max: u32) {
        self.call(now, Current::Step(phase), opnum, data, args_max);
        self.pump(now);
    }

    fn on_call_done(&mut self, now: Instant, result: Result<PnioResponse, CallError>) {
        if let Some(what) = self.current.take() {
            self.on_result(now, what, result);
        }
    }

    fn on_result(&mut self, now: Instant, what: Current, result: Result<PnioResponse, CallError>) {
        let resp = result.map_err(CmctlError::Call);
        match what {
            Current::Read(id) => {
                let r = resp.and_then(|r| read_result(&r));
                self.record_done(id, r);
            }
            Current::Write(id) => {
                let r = resp.and_then(|r| write_result(&r)).map(|()| Vec::new());
                self.record_done(id, r);
            }
            Current::Step(phase) => match resp {
                Err(e) => self.fail(phase, e),
                Ok(r) => self.on_step_response(now, phase, r),
            },
        }
    }

    fn fail(&mut self, phase: Phase, error: CmctlError) {
        self.events.push_back(CmctlEvent::Failed { phase, error });
        self.abort();
    }

    fn on_step_response(&mut self, now: Instant, phase: Phase, r: PnioResponse) {
        match phase {
            Phase::Connect => match self.connected(&r) {
                Ok(c) => {
                    self.events.push_back(CmctlEvent::Connected(Box::new(c)));
                    self.state = CmctlState::Parameterizing;
                    self.write_parameters(now);
                }
                Err(e) => self.fail(phase, e),
            },
            Phase::ParameterWrite => match write_result(&r) {
                Ok(()) => self.prm_end(now),
                Err(e) => self.fail(phase, e),
            },
            Phase::PrmEnd if !r.status.is_ok() => self.fail(phase, CmctlError::Rejected(r.status)),
            Phase::PrmEnd => {
                // ApplicationReady may have overtaken the PrmEnd response.
                if !self.established {
                    self.state = CmctlState::WaitApplicationReady {
                        deadline: now + self.cfg.app_ready_timeout,
                    };
                }
            }
            Phase::Release => {
                self.state = CmctlState::Closed;
                self.abort_ops();
                if r.status.is_ok() {
                    self.events.push_back(CmctlEvent::Released);
                } else {
                    self.events.push_back(CmctlEvent::Failed {
                        phase,
                        error: CmctlError::Rejected(r.status),
                    });
                }
            }
            Phase::ApplicationReady => {}
        }
    }

    fn connected(&self, r: &PnioResponse) -> Result<Connected, CmctlError> {
        if !r.status.is_ok() {
            return Err(CmctlError::Rejected(r.status));
        }
        let response = connect::parse_connect_response(&r.data).map_err(CmctlError::Protocol)?;
        let mut device_mac = self.cfg.device_mac;
        if let Some(arres) = &response.ar {
            let m = MacAddr(arres.cm_responder_mac);
            if !m.is_multicast() && m != MacAddr::ZERO {
                device_mac = m;
            }
        }
        if device_mac == MacAddr::ZERO {
            return Err(CmctlError::Protocol(
                "device MAC unknown (no DCP answer, no ARBlockRes)".into(),
            ));
        }
        let (Some(input_frame_id), Some(output_frame_id)) =
            (response.input_frame_id, response.output_frame_id)
        else {
            return Err(CmctlError::Protocol(
                "the Connect response lacks an IOCRBlockRes for the input or the output CR".into(),
            ));
        };
        Ok(Connected {
            response,
            device_mac,
            input_frame_id,
            output_frame_id,
        })
    }

    /// Parameter records: a single Write for one record, a MultipleWrite for more, none and
    /// straight to PrmEnd without records.
    fn write_parameters(&mut self, now: Instant) {
        let records = std::mem::take(&mut self.cfg.parameters);
        if records.is_empty() {
            self.prm_end(now);
            return;
        }
        let seq = self.next_record_seq();
        let ar = self.cfg.ar_uuid.0;
        let req = if records.len() == 1 {
            let (addr, d) = records.into_iter().next().expect("one record");
            WriteRequest::single(seq, ar, addr, d)
        } else {
            let recs = records
                .into_iter()
                .map(|(address, data)| WriteRecord {
                    header: WriteReqHeaderRepr {
                        seq_number: self.next_record_seq(),
                        ar_uuid: ar,
                        address,
                        record_data_length: data.len() as u32,
                    },
                    data,
                })
                .collect();
            WriteRequest::multiple(seq, ar, recs)
        }
        .and_then(|r| r.to_bytes());
        match req {
            Ok(req) => self.step(now, Phase::ParameterWrite, rpc::opnum::WRITE, req, 4096),
            Err(e) => self.fail(Phase::ParameterWrite, CmctlError::Protocol(e.to_string())),
        }
    }

    fn prm_end(&mut self, now: Instant) {
        let mut w = Writer::new();
        let _ = ControlBlock::prm_end_req(self.cfg.ar_uuid, self.cfg.session_key).emit(&mut w);
        self.state = CmctlState::PrmEnd;
        self.events.push_back(CmctlEvent::ParameterEnd);
        self.step(
            now,
            Phase::PrmEnd,
            rpc::opnum::CONTROL,
            w.into_inner(),
            1024,
        );
    }

    /// The RPC server: ApplicationReady is answered positively from PrmEnd on (it may overtake
    /// the PrmEnd response) and again when repeated (the device retries when our answer was
    /// lost); before PrmEnd it is a state conflict, after the end the AR is unknown.
    fn on_request(&mut self, from: SocketAddrV4, p: &RpcPacket) {
        if let Some(bytes) = server::refusal(p) {
            self.tx.push_back(Datagram {
                to: from,
                via: Via::Server,
                kind: DatagramKind::Refusal,
                bytes,
            });
            return;
        }
        let Some((req, cb)) = server::application_ready(p) else {
            return;
        };
        if cb.ar_uuid != self.cfg.ar_uuid {
            return;
        }
        let status = match self.state {
            CmctlState::PrmEnd
            | CmctlState::WaitApplicationReady { .. }
            | CmctlState::Established => PnioStatus::OK,
            CmctlState::Connecting | CmctlState::Parameterizing => {
                server::control_error(cmrpc::STATE_CONFLICT)
            }
            CmctlState::Releasing | CmctlState::Closed => {
                server::control_error(cmrpc::AR_UUID_UNKNOWN)
            }
        };
        if let Some(bytes) = server::answer_application_ready(p, &req, &cb, status) {
            self.tx.push_back(Datagram {
                to: from,
                via: Via::Server,
                kind: DatagramKind::ApplicationReadyResponse,
                bytes,
            });
        }
        if status.is_ok() && !self.established {
            self.established = true;
            self.state = CmctlState::Established;
            self.events.push_back(CmctlEvent::Established);
        }
    }
}

/// The record data of a Read response (also of an implicit Read, made without an AR).
pub fn read_result(resp: &PnioResponse) -> Result<Vec<u8>, CmctlError> {
    if !resp.status.is_ok() {
        // The ReadResHeader may still be present; the status is what matters.
        return Err(CmctlError::Rejected(resp.status));
    }
    ReadResponse::parse(&resp.data)
        .map(|r| r.data)
        .map_err(|e| CmctlError::Protocol(format!("read response: {e}")))
}

/// The outcome of a Write (single or multiple): the RPC status, else the worst record status.
fn write_result(resp: &PnioResponse) -> Result<(), CmctlError> {
    let st = if resp.status.is_ok() {
        WriteResponse::parse(&resp.data)
            .map(|w| w.overall_status())
            .unwrap_or(PnioStatus::OK)
    } else {
        resp.status
    };
    if st.is_ok() {
        Ok(())
    } else {
        Err(CmctlError::Rejected(st))
    }
}

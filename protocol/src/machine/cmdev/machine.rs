//! The CMDEV machine: the device's side of context management (IEC 61158-6-10 "CMDEV"),
//! sans-IO. It decides everything about an AR's life from Connect to its end:
//!
//! * Connect: decode and check the request ([`super::connect`]), accept a supervisor
//!   (IOSAR, DeviceAccess) AR or the one IO AR (IOCAR), refuse a second IO AR, abort the old
//!   AR when the controller re-runs the Connect of the same AR, build the response blocks;
//! * Control: PrmBegin, PrmEnd (-> the device's ApplicationReady client call, retried until
//!   answered), Release (also as a Control block);
//! * Read (also implicit) and Write: AR checks, a declared parameter record's length and
//!   values ([`super::params`]), then the application's record store;
//! * the end of the IO AR: CMInitiatorActivityTimeout before data exchange, no output frame
//!   after ApplicationReady within the first-frame bound, a negative ApplicationReady answer,
//!   or a cause the shell reports (watchdog, link, alarm transport, reset, stop).
//!
//! The shell (the daemon's `pn-cm` thread, the simulator) feeds datagrams and `now`, sends
//! what [`Cmdev::poll_transmit`] gives, wakes at [`Cmdev::poll_timeout`], and acts on
//! [`CmdevEvent`]s (install the cyclic jobs, report the state). The application data the
//! machine cannot know (the process image layout, the record store) comes through
//! [`CmdevApp`].

use crate::wire::Emit;
use std::collections::VecDeque;
use std::net::SocketAddr;

use super::api::{CmdevApp, CmdevConfig, CmdevEvent, EndCause};
use super::cmrpc::{Datagram, Inbound, RpcServer};
use super::connect::{check_connect, cmrpc, connect_error, err1, parse_connect};
use crate::machine::cyclic::first_frame_timeout;
use crate::machine::rpc_reassembly::Reassembled;
use crate::time::{Duration, Instant};
use crate::wire::field::Writer;
use crate::wire::ip::PNIO_CM_PORT;
use crate::wire::pnio::alarm_cr::AlarmCrBlockRes;
use crate::wire::pnio::ar::{ar_type, ArBlockReq, ArBlockRes};
use crate::wire::pnio::block::blocks;
use crate::wire::pnio::control::{block_type as ctl_type, ControlBlock};
use crate::wire::pnio::iocr::{iocr_type, IocrBlockRes};
use crate::wire::pnio::record::{
    index, ReadRequest, ReadResponse, RecordAddress, WriteBody, WriteRequest, WriteResHeaderRepr,
    WriteResponse,
};
use crate::wire::pnio::PnioStatus;
use crate::wire::rpc::{
    self, opnum, reject_status, Drep, PacketType, PnioRequest, PnioResponse, RpcHeader, RpcPacket,
    Uuid,
};
use crate::wire::rta::abort_reason;

/// The IO AR's phase (CMDEV states after Connect).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArPhase {
    /// Connect answered, waiting for PrmEnd.
    Startup,
    /// PrmEnd answered, ApplicationReady sent, waiting for its response.
    AppReady,
    /// ApplicationReady confirmed: data exchange.
    Data,
}

struct ClientCall {
    activity: Uuid,
    packet: Vec<u8>,
    dst: SocketAddr,
    next: Instant,
}

struct IoAr {
    req: ArBlockReq,
    peer: SocketAddr,
    drep: Drep,
    phase: ArPhase,
    started: Instant,
    cmi_timeout: Duration,
    data_hold: Duration,
    app_ready: Option<ClientCall>,
    /// When data exchange began; cleared once the controller's first output frame arrived
    /// (the data-hold supervision starts with that frame; until then it is bounded by
    /// [`first_frame_timeout`]).
    awaiting_first_frame_since: Option<Instant>,
    /// The controller's first output frame arrived, possibly before data exchange (a
    /// controller provides from its Connect on, and its frames may overtake the
    /// ApplicationReady confirmation): data exchange then starts without a first-frame bound.
    output_frame_seen: bool,
}

struct SupervisorAr {
    ar_uuid: Uuid,
    session_key: u16,
    last: Instant,
    timeout: Duration,
}

/// The device's CMDEV machine (one IO AR, a few supervisor ARs).
pub struct Cmdev<P> {
    cfg: CmdevConfig,
    rpc: RpcServer,
    io_ar: Option<IoAr>,
    sup: Vec<SupervisorAr>,
    link_up: bool,
    calls: u64,
    events: VecDeque<CmdevEvent<P>>,
}

/// A read-only view of the IO AR for the shell.
#[derive(Debug, Clone, Copy)]
pub struct IoArView<'a> {
    pub ar: &'a ArBlockReq,
    pub phase: ArPhase,
    /// Where the controller's Connect came from (its CM address).
    pub peer: SocketAddr,
}

fn status_err(code: u8, code1: u8, code2: u8) -> PnioStatus {
    PnioStatus::new(code, PnioStatus::DECODE_PNIO, code1, code2)
}

fn find_control(data: &[u8]) -> Option<ControlBlock> {
    blocks(data)
        .filter_map(|b| b.ok())
        .find_map(|b| ControlBlock::parse(&b).ok())
}

impl<P> Cmdev<P> {
    pub fn new(cfg: CmdevConfig) -> Cmdev<P> {
        Cmdev {
            rpc: RpcServer::new(cfg.server_boot),
            cfg,
            io_ar: None,
            sup: Vec::new(),
            link_up: true,
            calls: 0,
            events: VecDeque::new(),
        }
    }

    pub fn io_ar(&self) -> Option<IoArView<'_>> {
        self.io_ar.as_ref().map(|a| IoArView {
            ar: &a.req,
            phase: a.phase,
            peer: a.peer,
        })
    }

    pub fn config(&self) -> &CmdevConfig {
        &self.cfg
    }

    pub fn supervisor_ars(&self) -> usize {
        self.sup.len()
    }

    pub fn poll_transmit(&mut self) -> Option<Datagram> {
        self.rpc.poll_transmit()
    }

    pub fn poll_event(&mut self) -> Option<CmdevEvent<P>> {
        self.events.pop_front()
    }

    /// The earliest instant at which [`Cmdev::handle_timeout`] has something to do.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let mut t = self.rpc.next_deadline();
        let mut at = |x: Instant| t = Some(t.map_or(x, |y: Instant| y.min(x)));
        if let Some(ar) = &self.io_ar {
            if ar.phase != ArPhase::Data {
                at(ar.started + ar.cmi_timeout + Duration::from_nanos(1));
            }
            if let Some(c) = &ar.app_ready {
                at(c.next);
            }
            if let Some(since) = ar.awaiting_first_frame_since {
                at(since + first_frame_timeout(ar.data_hold) + Duration::from_nanos(1));
            }
        }
        for s in &self.sup {
            at(s.last + s.timeout);
        }
        t
    }

    /// The link went down or came back. Down ends the IO AR (no ERR-RTA: it cannot arrive).
    pub fn handle_link(&mut self, up: bool) {
        if up != self.link_up {
            self.link_up = up;
            if !up {
                self.end_io_ar("link down", None, EndCause::Fault);
            }
        }
    }

    /// The consumer saw the controller's first valid output frame (CPM FRUN -> RUN): the
    /// data-hold supervision has taken over from the first-frame bound. Valid in any phase of
    /// the AR and idempotent, so that a shell may report the first frame once, whenever it
    /// arrives (before or after ApplicationReady), or on every poll.
    pub fn handle_first_output_frame(&mut self) {
        if let Some(ar) = self.io_ar.as_mut() {
            ar.output_frame_seen = true;
            ar.awaiting_first_frame_since = None;
        }
    }

    /// Forget the supervisor ARs (a reset, a name change).
    pub fn clear_supervisors(&mut self) {
        self.sup.clear();
    }

    /// End the IO AR for `reason` (no-op without one). `rta`: the ERR-RTA status to send to
    /// the controller (the device's own reason, or the controller's own one answered back).
    pub fn end_io_ar(&mut self, reason: &str, rta: Option<PnioStatus>, cause: EndCause) {
        self.end(reason, rta, cause, false);
    }

    fn end(&mut self, reason: &str, rta: Option<PnioStatus>, cause: EndCause, watchdog: bool) {
        let Some(ar) = self.io_ar.take() else {
            return;
        };
        self.events.push_back(CmdevEvent::IoArEnded {
            controller: ar.req.cm_initiator_station_name.clone(),
            reason: reason.to_string(),
            rta: if self.link_up { rta } else { None },
            cause,
            reached_data: ar.phase == ArPhase::Data,
            watchdog,
        });
    }

    /// Run the timers due at `now`.
    pub fn handle_timeout(&mut self, now: Instant) {
        let mut end: Option<(String, u8, bool)> = None;
        if let Some(ar) = self.io_ar.as_mut() {
            if ar.phase != ArPhase::Data && now.saturating_since(ar.started) > ar.cmi_timeout {
                end = Some((
                    format!(
                        "CMInitiatorActivityTimeout: connect not completed within {} ms",
                        ar.cmi_timeout.as_nanos() / 1_000_000
                    ),
                    abort_reason::AR_CMI_TIMEOUT,
                    false,
                ));
            }
            if let Some(since) = ar.awaiting_first_frame_since {
                let wait = first_frame_timeout(ar.data_hold);
                if now.saturating_since(since) > wait {
                    end = Some((
                        format!(
                            "watchdog: no output frame from the controller within {} ms after \
                             ApplicationReady",
                            wait.as_nanos() / 1_000_000
                        ),
                        crate::machine::data_hold::ABORT_REASON,
                        true,
                    ));
                }
            }
            if let Some(call) = ar.app_ready.as_mut() {
                if now >= call.next {
                    call.next = now + self.cfg.app_ready_retry;
                    self.rpc.send(Datagram {
                        to: call.dst,
                        bytes: call.packet.clone(),
                    });
                }
            }
        }
        if let Some((reason, code, watchdog)) = end {
            let rta = Some(abort_reason::status(code));
            self.end(&reason, rta, EndCause::Fault, watchdog);
        }
        self.sup
            .retain(|s| now.saturating_since(s.last) < s.timeout);
        self.rpc.poll(now);
    }

    /// Feed one UDP datagram received on the CM port. Returns `false` for a datagram that is
    /// not an RPC packet (the shell counts it invalid).
    pub fn handle_datagram(
        &mut self,
        now: Instant,
        from: SocketAddr,
        data: &[u8],
        app: &mut impl CmdevApp<Plan = P>,
    ) -> bool {
        match self.rpc.receive(now, data, from) {
            Err(()) => false,
            Ok(Inbound::Done) => true,
            Ok(Inbound::Reply(pkt)) => {
                self.on_client_reply(now, &pkt);
                true
            }
            Ok(Inbound::Call(msg)) => {
                self.on_call(now, msg, from, app);
                true
            }
        }
    }

    fn on_client_reply(&mut self, now: Instant, pkt: &RpcPacket) {
        let h = &pkt.header;
        let Some(call) = self.io_ar.as_ref().and_then(|a| a.app_ready.as_ref()) else {
            return;
        };
        if call.activity != h.activity {
            return;
        }
        let rta = Some(abort_reason::status(abort_reason::AR_RPC_CONTROL_ERROR));
        match h.packet_type {
            PacketType::Response => match PnioResponse::parse(&pkt.body, h.drep) {
                Ok(r) if r.status.is_ok() => self.enter_data_exchange(now),
                Ok(r) => self.end_io_ar(
                    &format!(
                        "ApplicationReady rejected by the controller: {}",
                        r.status.in_words()
                    ),
                    rta,
                    EndCause::Fault,
                ),
                Err(_) => {}
            },
            _ => self.end_io_ar(
                "ApplicationReady: RPC fault/reject from the controller",
                rta,
                EndCause::Fault,
            ),
        }
    }

    fn enter_data_exchange(&mut self, now: Instant) {
        let Some(ar) = self.io_ar.as_mut() else {
            return;
        };
        ar.phase = ArPhase::Data;
        ar.app_ready = None;
        ar.awaiting_first_frame_since = (!ar.output_frame_seen).then_some(now);
        self.events
            .push_back(CmdevEvent::DataExchange { ar: ar.req.clone() });
    }

    fn on_call(
        &mut self,
        now: Instant,
        msg: Reassembled,
        from: SocketAddr,
        app: &mut impl CmdevApp<Plan = P>,
    ) {
        let h = msg.header;
        if h.interface != rpc::PNIO_DEVICE_INTERFACE {
            self.rpc.reject(&h, reject_status::NCA_UNK_IF, from);
            return;
        }
        let Ok(req) = PnioRequest::parse(&msg.body, h.drep) else {
            self.rpc.reject(&h, reject_status::NCA_PROTO_ERROR, from);
            return;
        };
        let (status, data) = match h.opnum {
            opnum::CONNECT => self.op_connect(now, &req, &h, from, app),
            opnum::RELEASE => self.op_release(&req),
            opnum::READ => self.op_read(now, &req, false, app),
            opnum::READ_IMPLICIT => self.op_read(now, &req, true, app),
            opnum::WRITE => self.op_write(now, &req, app),
            opnum::CONTROL => self.op_control(&req),
            _ => {
                self.rpc.reject(&h, reject_status::NCA_OP_RNG_ERROR, from);
                return;
            }
        };
        let resp = PnioResponse {
            status,
            args_maximum: req.args_maximum,
            data,
        };
        if let Ok(body) = resp.ndr(h.drep).to_bytes() {
            self.rpc.respond(&h, &body, from);
        }
        // After the PrmEnd response: the device's ApplicationReady call.
        self.start_app_ready_if_due(now);
    }

    fn next_activity(&mut self) -> Uuid {
        self.calls += 1;
        let mut b = self.cfg.activity_seed;
        for (i, x) in self.calls.to_le_bytes().iter().enumerate() {
            b[i] ^= x;
        }
        // A version-4 UUID layout, as a random one has.
        b[6] = (b[6] & 0x0F) | 0x40;
        b[8] = (b[8] & 0x3F) | 0x80;
        Uuid::from_bytes(b)
    }

    fn start_app_ready_if_due(&mut self, now: Instant) {
        if !self
            .io_ar
            .as_ref()
            .is_some_and(|a| a.phase == ArPhase::AppReady && a.app_ready.is_none())
        {
            return;
        }
        let activity = self.next_activity();
        let Some(ar) = self.io_ar.as_mut() else {
            return;
        };
        let ctl = ControlBlock::application_ready_req(ar.req.ar_uuid, ar.req.session_key);
        let mut w = Writer::new();
        if ctl.emit(&mut w).is_err() {
            return;
        }
        let Ok(body) = PnioRequest::new(256, w.into_inner())
            .ndr(ar.drep)
            .to_bytes()
        else {
            return;
        };
        let h = RpcHeader::request(
            ar.drep,
            ar.req.cm_initiator_object_uuid,
            rpc::PNIO_CONTROLLER_INTERFACE,
            activity,
            0,
            opnum::CONTROL,
        );
        let Ok(packet) = RpcPacket::new(h, body).to_bytes() else {
            return;
        };
        ar.app_ready = Some(ClientCall {
            activity,
            packet,
            dst: SocketAddr::new(ar.peer.ip(), PNIO_CM_PORT),
            next: now,
        });
        // Sent by the timer pass right away.
        self.handle_timeout(now);
    }

    fn ar_known(&self, uuid: &Uuid) -> bool {
        self.io_ar.as_ref().is_some_and(|a| a.req.ar_uuid == *uuid)
            || self.sup.iter().any(|s| s.ar_uuid == *uuid)
    }

    fn touch_sup(&mut self, uuid: &Uuid, now: Instant) {
        for s in self.sup.iter_mut().filter(|s| s.ar_uuid == *uuid) {
            s.last = now;
        }
    }

    fn refuse(&mut self, controller: &str, status: PnioStatus, why: &'static str) -> PnioStatus {
        self.events.push_back(CmdevEvent::ConnectRefused {
            controller: controller.to_string(),
            status,
            why,
        });
        status
    }

    fn op_connect(
        &mut self,
        now: Instant,
        req: &PnioRequest,
        h: &RpcHeader,
        from: SocketAddr,
        app: &mut impl CmdevApp<Plan = P>,
    ) -> (PnioStatus, Vec<u8>) {
        let c = match parse_connect(&req.data) {
            Ok(c) => c,
            Err(st) => return (self.refuse("", st, "a block cannot be decoded"), Vec::new()),
        };
        let who = c.ar.cm_initiator_station_name.clone();
        if let Err(st) = check_connect(&c, &self.cfg.limits) {
            let why = "the request breaks a rule of the standard's Connect blocks";
            return (self.refuse(&who, st, why), Vec::new());
        }
        let arb = c.ar.clone();
        let cmi =
            Duration::from_millis(u64::from(arb.cm_initiator_activity_timeout_factor.max(1)) * 100);
        let own_mac = self.cfg.own_mac;
        let no_resources = connect_error(err1::CMRPC, cmrpc::NO_AR_RESOURCES);
        match arb.ar_type {
            ar_type::IOSAR => {
                self.sup.retain(|s| s.ar_uuid != arb.ar_uuid);
                if self.sup.len() >= self.cfg.max_supervisor_ars {
                    let why = "no resources for another supervisor AR";
                    return (self.refuse(&who, no_resources, why), Vec::new());
                }
                self.sup.push(SupervisorAr {
                    ar_uuid: arb.ar_uuid,
                    session_key: arb.session_key,
                    last: now,
                    timeout: cmi.max(Duration::from_millis(10_000)),
                });
                let mut w = Writer::new();
                let _ = ArBlockRes::to_request(&arb, own_mac).emit(&mut w);
                (PnioStatus::OK, w.into_inner())
            }
            ar_type::IOCAR => {
                if let Some(cur) = &self.io_ar {
                    let same_ar = cur.req.ar_uuid == arb.ar_uuid;
                    // The same controller (CMInitiator MAC and station name) connecting with
                    // a new AR while its previous one never reached data exchange: it gave
                    // that AR up (its Connect or PrmEnd answer was lost, it timed out), and
                    // would otherwise be refused until CMInitiatorActivityTimeout (up to
                    // minutes) ends it here (docs/decisions.md §26). A controller whose AR is
                    // in data exchange is still refused: the data-hold timer ends that AR
                    // within a few cycles of the controller going quiet.
                    let restarted = cur.req.cm_initiator_mac == arb.cm_initiator_mac
                        && cur.req.cm_initiator_station_name == arb.cm_initiator_station_name
                        && cur.phase != ArPhase::Data;
                    if !same_ar && !restarted {
                        let why = "an IO AR with another controller exists";
                        return (self.refuse(&who, no_resources, why), Vec::new());
                    }
                    let reason = if same_ar {
                        "the controller re-ran the connect of this AR"
                    } else {
                        "the controller connected again before the AR's start-up completed"
                    };
                    self.end_io_ar(
                        reason,
                        Some(abort_reason::status(
                            abort_reason::AR_RE_RUN_ABORTS_EXISTING,
                        )),
                        EndCause::Fault,
                    );
                }
                if !self.link_up {
                    self.link_up = app.link_up();
                    if !self.link_up {
                        let st = connect_error(err1::CMRPC, cmrpc::STATE_CONFLICT);
                        return (self.refuse(&who, st, "the link is down"), Vec::new());
                    }
                }
                let plan = match app.plan_io_ar(&c, &self.cfg.limits) {
                    Ok(p) => p,
                    Err(st) => {
                        let why = "the controller's IO data objects do not fit the frame or \
                                   this device's configuration";
                        return (self.refuse(&who, st, why), Vec::new());
                    }
                };
                let Some(acr) = c.alarm_cr else {
                    let st = connect_error(err1::CMRPC, cmrpc::WRONG_BLOCK_COUNT);
                    return (self.refuse(&who, st, "no AlarmCR block"), Vec::new());
                };
                let mut w = Writer::new();
                let _ = ArBlockRes::to_request(&arb, own_mac).emit(&mut w);
                for cr in &c.iocrs {
                    let fid = if cr.iocr_type == iocr_type::INPUT {
                        plan.input_frame_id
                    } else {
                        plan.output_frame_id
                    };
                    let _ = IocrBlockRes::to_request(cr, fid).emit(&mut w);
                }
                let max_alarm = acr.max_alarm_data_length.clamp(200, 1432);
                let _ = AlarmCrBlockRes::to_request(&acr, self.cfg.local_alarm_ref, max_alarm)
                    .emit(&mut w);
                if let Some(md) = &plan.module_diff {
                    let _ = md.emit(&mut w);
                }
                self.io_ar = Some(IoAr {
                    req: arb.clone(),
                    peer: from,
                    drep: h.drep,
                    phase: ArPhase::Startup,
                    started: now,
                    cmi_timeout: cmi,
                    data_hold: plan.data_hold,
                    app_ready: None,
                    awaiting_first_frame_since: None,
                    output_frame_seen: false,
                });
                self.events.push_back(CmdevEvent::IoArConnected {
                    ar: arb,
                    alarm_cr: acr,
                    plan: plan.plan,
                    input_frame_id: plan.input_frame_id,
                    output_frame_id: plan.output_frame_id,
                    data_hold: plan.data_hold,
                });
                (PnioStatus::OK, w.into_inner())
            }
            _ => {
                let st = connect_error(err1::AR_BLOCK, 4);
                (
                    self.refuse(&who, st, "an AR type this device does not support"),
                    Vec::new(),
                )
            }
        }
    }

    fn op_control(&mut self, req: &PnioRequest) -> (PnioStatus, Vec<u8>) {
        let ctl_err = |c2| status_err(PnioStatus::CODE_CONTROL, err1::CMRPC, c2);
        let Some(cb) = find_control(&req.data) else {
            return (ctl_err(cmrpc::UNKNOWN_BLOCKS), Vec::new());
        };
        let Some(ar) = self.io_ar.as_mut().filter(|a| a.req.ar_uuid == cb.ar_uuid) else {
            return (ctl_err(cmrpc::AR_UUID_UNKNOWN), Vec::new());
        };
        if ar.req.session_key != cb.session_key {
            return (ctl_err(cmrpc::STATE_CONFLICT), Vec::new());
        }
        match cb.block_type {
            ctl_type::PRM_END_REQ | ctl_type::PLUG_PRM_END_REQ => {
                if ar.phase == ArPhase::Startup {
                    ar.phase = ArPhase::AppReady;
                }
            }
            ctl_type::PRM_BEGIN_REQ | ctl_type::RELEASE_REQ => {}
            _ => return (ctl_err(cmrpc::STATE_CONFLICT), Vec::new()),
        }
        let mut w = Writer::new();
        let _ = cb.response().emit(&mut w);
        (PnioStatus::OK, w.into_inner())
    }

    fn op_release(&mut self, req: &PnioRequest) -> (PnioStatus, Vec<u8>) {
        let err = |c2| status_err(PnioStatus::CODE_RELEASE, err1::CMRPC, c2);
        let Some(cb) = find_control(&req.data) else {
            return (err(cmrpc::UNKNOWN_BLOCKS), Vec::new());
        };
        let mut w = Writer::new();
        let _ = cb.response().emit(&mut w);
        if let Some(ar) = self.io_ar.as_ref().filter(|a| a.req.ar_uuid == cb.ar_uuid) {
            if ar.req.session_key != cb.session_key {
                return (err(cmrpc::STATE_CONFLICT), Vec::new());
            }
            self.end_io_ar(
                "the controller released the AR",
                None,
                EndCause::ReleasedByController,
            );
            return (PnioStatus::OK, w.into_inner());
        }
        if let Some(p) = self.sup.iter().position(|s| s.ar_uuid == cb.ar_uuid) {
            if self.sup[p].session_key != cb.session_key {
                return (err(cmrpc::STATE_CONFLICT), Vec::new());
            }
            self.sup.remove(p);
            return (PnioStatus::OK, w.into_inner());
        }
        (err(cmrpc::AR_UUID_UNKNOWN), Vec::new())
    }

    fn op_read(
        &mut self,
        now: Instant,
        req: &PnioRequest,
        implicit: bool,
        app: &mut impl CmdevApp<Plan = P>,
    ) -> (PnioStatus, Vec<u8>) {
        // Every negative answer carries the request's header back (real devices do; an empty
        // body is a malformed response to tshark).
        let refuse = |code2| {
            let st = status_err(PnioStatus::CODE_READ, err1::CMRPC, code2);
            let body = ReadResponse::refusing(&req.data).and_then(|r| r.to_bytes().ok());
            (st, body.unwrap_or_default())
        };
        let Ok(r) = ReadRequest::parse(&req.data) else {
            return refuse(cmrpc::UNKNOWN_BLOCKS);
        };
        let hdr = r.header;
        let uuid = Uuid::from_bytes(hdr.ar_uuid);
        if !implicit {
            if !self.ar_known(&uuid) {
                return refuse(cmrpc::AR_UUID_UNKNOWN);
            }
            self.touch_sup(&uuid, now);
        }
        let mut a = hdr.address;
        if matches!(
            a.index,
            index::SUB_EXPECTED_IDENTIFICATION_DATA
                | index::SLOT_EXPECTED_IDENTIFICATION_DATA
                | index::AR_EXPECTED_IDENTIFICATION_DATA
        ) {
            a.index |= 1; // expected = real for a device without substitution
        }
        let (status, data) = match app.read_record(&a) {
            Ok(d) => (PnioStatus::OK, d),
            Err(st) => (st, Vec::new()),
        };
        match ReadResponse::answering(&hdr, data).and_then(|r| r.to_bytes()) {
            Ok(b) => (status, b),
            Err(_) => (status_err(PnioStatus::CODE_READ, 0x80, 0xA0), Vec::new()),
        }
    }

    fn op_write(
        &mut self,
        now: Instant,
        req: &PnioRequest,
        app: &mut impl CmdevApp<Plan = P>,
    ) -> (PnioStatus, Vec<u8>) {
        // Every negative answer carries an IODWriteResHeader with the status (as the ET200SP
        // answers; an empty body is a malformed response to tshark).
        let refuse = |code2| {
            let st = status_err(PnioStatus::CODE_WRITE, err1::CMRPC, code2);
            let body = WriteResponse::refusing(&req.data, st).and_then(|r| r.to_bytes().ok());
            (st, body.unwrap_or_default())
        };
        let Ok(w) = WriteRequest::parse(&req.data) else {
            return refuse(cmrpc::UNKNOWN_BLOCKS);
        };
        let uuid = Uuid::from_bytes(w.header.ar_uuid);
        if !self.ar_known(&uuid) {
            return refuse(cmrpc::AR_UUID_UNKNOWN);
        }
        self.touch_sup(&uuid, now);
        // A declared parameter record is checked before the application stores it: a refused
        // value never reaches the record store.
        let declared = &self.cfg.param_records;
        let mut write = |a: &RecordAddress, d: &[u8]| match declared
            .check(a, d)
            .and_then(|()| app.write_record(a, d))
        {
            Ok(()) => PnioStatus::OK,
            Err(st) => st,
        };
        let resp = match &w.body {
            WriteBody::Single(data) => WriteResponse {
                header: WriteResHeaderRepr::answering(&w.header, write(&w.header.address, data)),
                records: Vec::new(),
            },
            WriteBody::Multiple(recs) => WriteResponse {
                header: WriteResHeaderRepr::answering(&w.header, PnioStatus::OK),
                records: recs
                    .iter()
                    .map(|r| {
                        WriteResHeaderRepr::answering(&r.header, write(&r.header.address, &r.data))
                    })
                    .collect(),
            },
        };
        let status = resp.overall_status();
        match resp.to_bytes() {
            Ok(b) => (status, b),
            Err(_) => (status_err(PnioStatus::CODE_WRITE, 0x80, 0xA1), Vec::new()),
        }
    }
}

#[cfg(test)]
#[path = "machine_tests.rs"]
mod tests;

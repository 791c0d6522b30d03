//! Connection management: the DCE/RPC (connectionless) server on UDP 34964 and the client call
//! ApplicationReady, the ARs, the alarm transports and the records, all owned by one std
//! thread (`pn-cm`). See `mod.rs` for why it is a plain thread.
//!
//! Per loop iteration: drain the messages from the other threads (alarm frames, link changes,
//! runtime commands), wait up to 5 ms for one datagram, then run the timers (CMInitiator
//! activity timeout, ApplicationReady retransmission, consumer watchdog flag from the
//! real-time thread, RTA retransmission, fragment reassembly timeout).

use std::collections::HashMap;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, TryRecvError};
use std::sync::Arc;
use std::time::Duration;

use pn_protocol::machine::cyclic::first_frame_timeout;
use pn_protocol::machine::rpc_reassembly::{Reassembler, ReassemblyConfig};
use pn_protocol::time::Instant;
use pn_protocol::wire::field::Writer;
use pn_protocol::wire::pnio::alarm_cr::AlarmCrBlockRes;
use pn_protocol::wire::pnio::ar::{ar_type, ArBlockReq, ArBlockRes};
use pn_protocol::wire::pnio::block::blocks;
use pn_protocol::wire::pnio::control::{block_type as ctl_type, ControlBlock};
use pn_protocol::wire::pnio::iocr::{iocr_type, IocrBlockRes};
use pn_protocol::wire::pnio::record::{
    index, ReadRequest, ReadResponse, WriteBody, WriteRequest, WriteResHeaderRepr, WriteResponse,
};
use pn_protocol::wire::pnio::PnioStatus;
use pn_protocol::wire::rpc::{
    self, opnum, reject_status, Drep, FaultBody, PacketType, PnioRequest, PnioResponse, RpcHeader,
    RpcPacket, Uuid,
};
use pn_protocol::wire::rta::abort_reason;

use crate::dataplane::{
    AbortCause, AlarmSeverity, DiagnosisEntry, EventSink, SharedCounters, StackCommand,
    StackConfig, StackEvent,
};
use crate::image::{ProcessImage, IOXS_BAD, IOXS_GOOD};

use super::alarms::{AlarmCr, AlarmOutcome};
use super::ar::{self, cmrpc, connect_error, err1, SlotEntry};
use super::cyclic::{mono_ns, CyclicShared};
use super::records::Records;
use super::{CtlMsg, PlaneFlags, RawLink};
use pn_protocol::machine::cmdev::connect::{check_connect, parse_connect, ConnectLimits};

/// The PNIO CM UDP port.
pub const CM_PORT: u16 = pn_protocol::wire::ip::PNIO_CM_PORT;
/// Largest RPC body per fragment we send (UDP payload 1472 minus the 80-byte header, as the
/// Ethernet MTU of 1500 allows without IP fragmentation).
pub const MAX_FRAGMENT_BODY: usize = 1392;
/// ApplicationReady retransmission interval.
const APP_READY_RETRY_NS: u64 = 1_000_000_000;
/// Our LocalAlarmReference.
const LOCAL_ALARM_REF: u16 = 0x0001;
/// At most this many supervisor (DeviceAccess) ARs beside the IO AR.
const MAX_SUPERVISOR_ARS: usize = 2;

/// Everything the connection manager needs.
pub struct CmContext {
    pub cfg: StackConfig,
    pub image: Arc<ProcessImage>,
    pub events: EventSink,
    pub link: Arc<RawLink>,
    pub cyclic: Arc<CyclicShared>,
    pub counters: Arc<SharedCounters>,
    pub flags: Arc<PlaneFlags>,
    pub stop: Arc<AtomicBool>,
    /// The cyclic receive socket, whose filter follows the consumer job.
    pub cyclic_rx: Option<Arc<super::CyclicRx>>,
    /// The L2 services: station name, IP suite, MAU type and LLDP neighbour for the PDev
    /// real-data records.
    pub l2: Option<Arc<super::l2::L2Services>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ArPhase {
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
    next_ns: u64,
    attempts: u32,
}

struct IoAr {
    req: ArBlockReq,
    peer: SocketAddr,
    drep: Drep,
    phase: ArPhase,
    started_ns: u64,
    cmi_timeout_ns: u64,
    dht_ns: u64,
    alarm: AlarmCr,
    app_ready: Option<ClientCall>,
    connected_event_sent: bool,
    /// When the ApplicationReady exchange completed (data exchange began): from here the
    /// controller's first output frame is awaited for `first_frame_timeout` (the data-hold
    /// supervision starts only with that frame).
    data_since_ns: Option<u64>,
}

struct SupervisorAr {
    ar_uuid: Uuid,
    session_key: u16,
    last_ns: u64,
    timeout_ns: u64,
}

struct CachedReply {
    sequence: u32,
    packets: Vec<Vec<u8>>,
}

struct Cm {
    ctx: CmContext,
    sock: UdpSocket,
    boot: u32,
    t0: std::time::Instant,
    records: Records,
    slots: Vec<SlotEntry>,
    io_ar: Option<IoAr>,
    sup: Vec<SupervisorAr>,
    cache: HashMap<Uuid, CachedReply>,
    /// Fragmented calls not yet complete (activity -> sequence), for Ping -> Working.
    in_progress: HashMap<Uuid, u32>,
    reasm: Reassembler,
    link_up: bool,
    eth_out: Vec<Vec<u8>>,
}

/// Start the connection-manager thread. Binds UDP 34964 first so a bind error fails the start.
pub fn spawn(ctx: CmContext, rx: Receiver<CtlMsg>) -> std::io::Result<std::thread::JoinHandle<()>> {
    let sock = UdpSocket::bind(("0.0.0.0", CM_PORT))?;
    sock.set_read_timeout(Some(Duration::from_millis(5)))?;
    let boot = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as u32)
        .unwrap_or(1);
    let records = Records::from_config(&ctx.cfg);
    let slots = ar::layout(
        &ctx.cfg.modules,
        ctx.image.input_len(),
        ctx.image.output_len(),
    );
    let reasm = Reassembler::new(ReassemblyConfig {
        server_boot: boot,
        ..ReassemblyConfig::default()
    });
    let mut cm = Cm {
        ctx,
        sock,
        boot,
        t0: std::time::Instant::now(),
        records,
        slots,
        io_ar: None,
        sup: Vec::new(),
        cache: HashMap::new(),
        in_progress: HashMap::new(),
        reasm,
        link_up: true,
        eth_out: Vec::new(),
    };
    std::thread::Builder::new()
        .name("pn-cm".into())
        .spawn(move || cm.run(rx))
}

fn random_uuid() -> Uuid {
    let mut b = [0u8; 16];
    if let Ok(mut f) = std::fs::File::open("/dev/urandom") {
        use std::io::Read;
        let _ = f.read_exact(&mut b);
    }
    b[6] = (b[6] & 0x0F) | 0x40;
    b[8] = (b[8] & 0x3F) | 0x80;
    Uuid::from_bytes(b)
}

/// A name field of a PDev block holds at most 255 bytes (u8 length). LLDP IDs can be longer
/// (up to 255 bytes raw, more once non-UTF-8 bytes became replacement characters): cut at a
/// character boundary, so a neighbour's odd ID never fails the whole record.
fn cut_name(mut s: String) -> String {
    let mut end = s.len().min(255);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s.truncate(end);
    s
}

/// "aa:bb:cc:dd:ee:ff" (as `LldpNeighbour::src_mac` holds it).
fn parse_mac(s: &str) -> Option<[u8; 6]> {
    let mut out = [0u8; 6];
    let mut parts = s.split(':');
    for b in &mut out {
        *b = u8::from_str_radix(parts.next()?, 16).ok()?;
    }
    parts.next().is_none().then_some(out)
}

fn mac_str(m: &[u8; 6]) -> String {
    pn_protocol::wire::ethernet::MacAddr(*m).to_string()
}

fn status_err(code: u8, code1: u8, code2: u8) -> PnioStatus {
    PnioStatus::new(code, PnioStatus::DECODE_PNIO, code1, code2)
}

impl Cm {
    fn now(&self) -> Instant {
        Instant::from_nanos(self.t0.elapsed().as_nanos() as u64)
    }

    fn send_udp(&self, data: &[u8], to: SocketAddr) {
        if self.sock.send_to(data, to).is_ok() {
            let k = &self.ctx.counters;
            k.tx_control_frames.fetch_add(1, Ordering::Relaxed);
            k.tx_frames.fetch_add(1, Ordering::Relaxed);
        } else {
            self.ctx
                .counters
                .dropped_frames
                .fetch_add(1, Ordering::Relaxed);
        }
    }

    fn flush_eth(&mut self) {
        for f in std::mem::take(&mut self.eth_out) {
            if self.ctx.link.send(&f) {
                self.ctx.counters.tx_frames.fetch_add(1, Ordering::Relaxed);
                self.ctx
                    .counters
                    .tx_control_frames
                    .fetch_add(1, Ordering::Relaxed);
            } else {
                self.ctx
                    .counters
                    .dropped_frames
                    .fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    fn event(&self, ev: StackEvent) {
        let _ = self.ctx.events.send(ev);
    }

    fn run(&mut self, rx: Receiver<CtlMsg>) {
        let mut buf = vec![0u8; 65536];
        loop {
            if self.ctx.stop.load(Ordering::Acquire) {
                self.abort_io_ar(
                    "data plane stopped",
                    Some(abort_reason::status(abort_reason::AR_DEVICE_DEACTIVATED)),
                );
                self.flush_eth();
                break;
            }
            loop {
                match rx.try_recv() {
                    Ok(m) => self.on_msg(m),
                    Err(TryRecvError::Empty) => break,
                    Err(TryRecvError::Disconnected) => {
                        self.ctx.stop.store(true, Ordering::Release);
                        break;
                    }
                }
            }
            if let Ok((n, from)) = self.sock.recv_from(&mut buf) {
                let k = &self.ctx.counters;
                k.rx_control_frames.fetch_add(1, Ordering::Relaxed);
                k.rx_frames.fetch_add(1, Ordering::Relaxed);
                let data = buf[..n].to_vec();
                self.on_datagram(&data, from);
            }
            self.timers();
            self.flush_eth();
        }
    }

    // ------------------------------------------------------------------ messages

    fn on_msg(&mut self, m: CtlMsg) {
        let now = self.now();
        match m {
            CtlMsg::Alarm { frame_id, src, pdu } => {
                if let Some(ar) = self.io_ar.as_mut() {
                    if src == ar.req.cm_initiator_mac {
                        ar.alarm.handle(frame_id, &pdu, now);
                    }
                }
            }
            CtlMsg::Link(up) => {
                tracing::info!(up, "link state");
                if up != self.link_up {
                    self.link_up = up;
                    if !up {
                        self.abort_io_ar("link down", None);
                    }
                }
                self.event(StackEvent::LinkChanged { up });
            }
            CtlMsg::Cmd(c) => self.on_command(c),
            CtlMsg::AbortAr { reason, rta_code } => {
                self.abort_io_ar(&reason, Some(abort_reason::status(rta_code)));
                self.sup.clear();
            }
        }
    }

    fn on_command(&mut self, c: StackCommand) {
        let now = self.now();
        match c {
            StackCommand::SetDiagnosis(d) => {
                let key = |e: &DiagnosisEntry| (e.slot, e.subslot, e.channel, e.error_type);
                if let Some(e) = self.records.diags.iter_mut().find(|e| key(e) == key(&d)) {
                    *e = d.clone();
                } else {
                    self.records.diags.push(d.clone());
                }
                self.ctx
                    .cyclic
                    .station_problem
                    .store(true, Ordering::Relaxed);
                self.send_diag_alarm(&d, true, now);
            }
            StackCommand::RemoveDiagnosis {
                slot,
                subslot,
                channel,
                error_type,
            } => {
                let pos = self.records.diags.iter().position(|e| {
                    e.slot == slot
                        && e.subslot == subslot
                        && e.channel == channel
                        && e.error_type == error_type
                });
                if let Some(p) = pos {
                    let d = self.records.diags.remove(p);
                    self.ctx
                        .cyclic
                        .station_problem
                        .store(!self.records.diags.is_empty(), Ordering::Relaxed);
                    self.send_diag_alarm(&d, false, now);
                }
            }
            StackCommand::SetHighResolutionTimer(on) => {
                self.ctx.cyclic.precise.store(on, Ordering::Relaxed);
            }
            StackCommand::Reset { mode, .. } => {
                self.abort_io_ar(
                    &format!("reset ({mode:?})"),
                    Some(abort_reason::status(abort_reason::DCP_RESET_TO_FACTORY)),
                );
                self.sup.clear();
            }
        }
    }

    fn send_diag_alarm(&mut self, d: &DiagnosisEntry, appears: bool, now: Instant) {
        let idents = self.records.idents(d.slot, d.subslot).unwrap_or((0, 0));
        let still = self
            .records
            .diags
            .iter()
            .any(|e| e.slot == d.slot && e.subslot == d.subslot);
        if let Some(ar) = self.io_ar.as_mut() {
            if ar.phase == ArPhase::Data {
                if let Err(e) = ar.alarm.send_diagnosis(d, appears, still, idents, now) {
                    tracing::warn!("diagnosis alarm not sent: {e}");
                }
            }
        }
    }

    // ------------------------------------------------------------------ timers

    fn timers(&mut self) {
        let now = self.now();
        let now_ns = mono_ns();
        // Consumer watchdog (flag set by the real-time thread).
        if self.ctx.cyclic.tripped.swap(false, Ordering::AcqRel) && self.io_ar.is_some() {
            let dht = self.io_ar.as_ref().map_or(0, |a| a.dht_ns);
            let info = self.ctx.cyclic.trip_info.load(Ordering::Relaxed);
            let msg = format!(
                "watchdog: no valid frame from the controller within the data-hold time of {} us ({} cycles without a frame, {} us since the last one)",
                dht / 1000,
                info >> 32,
                info & 0xFFFF_FFFF
            );
            self.event(StackEvent::Alarm {
                severity: AlarmSeverity::Error,
                source: "watchdog".into(),
                message: msg.clone(),
            });
            self.abort_io_ar(
                &msg,
                Some(abort_reason::status(abort_reason::AR_CONSUMER_DHT_EXPIRED)),
            );
        }
        let mut abort: Option<(String, Option<PnioStatus>)> = self.first_frame_overdue(now_ns);
        if let Some((msg, _)) = &abort {
            // The consumer's supervision ended the AR, as a data-hold expiry does.
            let k = &self.ctx.counters;
            k.watchdog_trips.fetch_add(1, Ordering::Relaxed);
            self.event(StackEvent::Alarm {
                severity: AlarmSeverity::Error,
                source: "watchdog".into(),
                message: msg.clone(),
            });
        }
        let mut controller_abort: Option<PnioStatus> = None;
        let mut outcomes = Vec::new();
        if let Some(ar) = self.io_ar.as_mut() {
            if ar.phase != ArPhase::Data && now_ns.saturating_sub(ar.started_ns) > ar.cmi_timeout_ns
            {
                abort = Some((
                    format!(
                        "CMInitiatorActivityTimeout: connect not completed within {} ms",
                        ar.cmi_timeout_ns / 1_000_000
                    ),
                    Some(abort_reason::status(abort_reason::AR_CMI_TIMEOUT)),
                ));
            }
            if let Some(call) = ar.app_ready.as_mut() {
                if now_ns >= call.next_ns {
                    call.attempts += 1;
                    call.next_ns = now_ns + APP_READY_RETRY_NS;
                    let (p, d) = (call.packet.clone(), call.dst);
                    if self.sock.send_to(&p, d).is_ok() {
                        let k = &self.ctx.counters;
                        k.tx_control_frames.fetch_add(1, Ordering::Relaxed);
                        k.tx_frames.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
            ar.alarm.poll(now, &mut self.eth_out, &mut outcomes);
        }
        for o in outcomes {
            match o {
                AlarmOutcome::Acked {
                    slot,
                    subslot,
                    alarm_type,
                    sequence,
                    ok,
                } => {
                    let c = if ok {
                        &self.ctx.counters.stack_alarm_tx_ack_ok
                    } else {
                        &self.ctx.counters.stack_alarm_tx_ack_fail
                    };
                    c.fetch_add(1, Ordering::Relaxed);
                    self.event(StackEvent::AlarmAcknowledged {
                        slot,
                        subslot,
                        alarm_type,
                        sequence,
                        ok,
                    });
                }
                AlarmOutcome::Received {
                    alarm_type,
                    slot,
                    subslot,
                } => {
                    self.ctx
                        .counters
                        .stack_alarm_rx_count
                        .fetch_add(1, Ordering::Relaxed);
                    self.event(StackEvent::Alarm {
                        severity: AlarmSeverity::Info,
                        source: "controller".into(),
                        message: format!(
                            "alarm type 0x{alarm_type:04x} from the controller for slot {slot} subslot 0x{subslot:04x}"
                        ),
                    });
                }
                AlarmOutcome::TransportFailed(reason) => {
                    abort = Some((
                        reason,
                        Some(abort_reason::status(abort_reason::AR_ALARM_SEND_CNF_NEG)),
                    ));
                }
                AlarmOutcome::ControllerAborted(st) => controller_abort = Some(st),
            }
        }
        if let Some(st) = controller_abort {
            // The controller's own decision, not a fault of this device: its reason is
            // reported as such and answered back (as p-net does).
            let reason = format!(
                "the controller ended the AR with ERR-RTA {}",
                abort_reason::status_text(st)
            );
            self.end_io_ar(&reason, Some(st), AbortCause::AbortedByController);
        } else if let Some((reason, code)) = abort {
            self.abort_io_ar(&reason, code);
        }
        let t = mono_ns();
        self.sup
            .retain(|s| t.saturating_sub(s.last_ns) < s.timeout_ns);
        self.reasm.poll(now);
        if self.reasm.pending() == 0 {
            self.in_progress.clear();
        }
    }

    /// In data exchange without a single valid output frame from the controller for longer
    /// than `first_frame_timeout` (protocol crate, CPM): the reason to end the AR.
    fn first_frame_overdue(&self, now_ns: u64) -> Option<(String, Option<PnioStatus>)> {
        let ar = self.io_ar.as_ref()?;
        let since = ar.data_since_ns?;
        if self.ctx.cyclic.consumer_frames.load(Ordering::Acquire) != 0 {
            return None;
        }
        let wait = first_frame_timeout(pn_protocol::time::Duration(ar.dht_ns)).as_nanos();
        (now_ns.saturating_sub(since) > wait).then(|| {
            (
                format!(
                    "watchdog: no output frame from the controller within {} ms after \
                     ApplicationReady",
                    wait / 1_000_000
                ),
                Some(abort_reason::status(abort_reason::AR_CONSUMER_DHT_EXPIRED)),
            )
        })
    }

    // ------------------------------------------------------------------ AR end

    /// End the IO AR for `reason`; `rta`: the ERR-RTA status to send to the controller (the
    /// device's own reason, or the controller's own one answered back).
    fn abort_io_ar(&mut self, reason: &str, rta: Option<PnioStatus>) {
        self.end_io_ar(reason, rta, AbortCause::Fault);
    }

    /// [`Cm::abort_io_ar`] saying who ended the AR.
    fn end_io_ar(&mut self, reason: &str, rta: Option<PnioStatus>, cause: AbortCause) {
        let Some(mut ar) = self.io_ar.take() else {
            return;
        };
        let c = &self.ctx.cyclic;
        c.set_job(None);
        c.set_consumer(None, &self.ctx.image);
        if let Some(rx) = &self.ctx.cyclic_rx {
            rx.refresh(c);
        }
        c.tripped.store(false, Ordering::Release);
        if let Some(status) = rta {
            if self.link_up {
                let frames = ar.alarm.abort(status);
                self.eth_out.extend(frames);
            }
        }
        self.ctx.image.set_device_status(IOXS_BAD, IOXS_BAD);
        self.ctx.flags.connected.store(false, Ordering::Release);
        self.ctx.flags.ar_cycle_ns.store(0, Ordering::Release);
        let k = &self.ctx.counters;
        k.active_iocr_count.store(0, Ordering::Relaxed);
        k.iocr_active.store(0, Ordering::Relaxed);
        k.iocr_healthy.store(0, Ordering::Relaxed);
        if let Ok(mut m) = self.ctx.flags.message.lock() {
            *m = format!("AR ended: {reason}");
        }
        if ar.connected_event_sent {
            // The runtime logs the end of data exchange with this reason (once, as WARN).
            tracing::debug!(controller = %ar.req.cm_initiator_station_name, "AR ended: {reason}");
        } else {
            tracing::info!(controller = %ar.req.cm_initiator_station_name, "AR ended: {reason}");
        }
        if ar.connected_event_sent {
            self.event(StackEvent::Aborted {
                reason: reason.to_string(),
                cause,
            });
        } else {
            self.event(StackEvent::Alarm {
                severity: AlarmSeverity::Warning,
                source: "connect".into(),
                message: format!("connection attempt ended: {reason}"),
            });
        }
    }

    fn enter_data_exchange(&mut self) {
        let Some(ar) = self.io_ar.as_mut() else {
            return;
        };
        ar.phase = ArPhase::Data;
        ar.app_ready = None;
        // The data-hold watchdog is armed by the first valid output frame (the receive thread
        // does it), not here: see `first_frame_overdue`.
        ar.data_since_ns = Some(mono_ns());
        self.ctx.image.set_device_status(IOXS_GOOD, IOXS_GOOD);
        self.ctx.flags.connected.store(true, Ordering::Release);
        let k = &self.ctx.counters;
        k.iocr_active.store(2, Ordering::Relaxed);
        k.iocr_healthy.store(2, Ordering::Relaxed);
        if let Ok(mut m) = self.ctx.flags.message.lock() {
            m.clear();
        }
        ar.connected_event_sent = true;
        let who = format!(
            "{} ({})",
            ar.req.cm_initiator_station_name,
            mac_str(&ar.req.cm_initiator_mac)
        );
        self.event(StackEvent::Connected { controller: who });
        // Diagnosis that is already active is reported to the new AR.
        let diags = self.records.diags.clone();
        let now = self.now();
        for d in &diags {
            self.send_diag_alarm(d, true, now);
        }
    }

    // ------------------------------------------------------------------ RPC

    fn on_datagram(&mut self, data: &[u8], from: SocketAddr) {
        let Ok(pkt) = RpcPacket::parse(data) else {
            self.ctx
                .counters
                .invalid_frames
                .fetch_add(1, Ordering::Relaxed);
            return;
        };
        let h = pkt.header;
        match h.packet_type {
            PacketType::Request => self.on_request(pkt, from),
            PacketType::Ping => {
                if let Some(c) = self
                    .cache
                    .get(&h.activity)
                    .filter(|c| c.sequence == h.sequence)
                {
                    for p in c.packets.clone() {
                        self.send_udp(&p, from);
                    }
                } else {
                    // A call still being reassembled is "working"; anything else is unknown.
                    let t = if self.in_progress.get(&h.activity) == Some(&h.sequence) {
                        PacketType::Working
                    } else {
                        PacketType::Nocall
                    };
                    let r = RpcPacket::new(RpcHeader::reply_to(&h, t), Vec::new());
                    if let Ok(b) = r.emit() {
                        self.send_udp(&b, from);
                    }
                }
            }
            PacketType::Ack
                if self
                    .cache
                    .get(&h.activity)
                    .is_some_and(|c| c.sequence == h.sequence) =>
            {
                self.cache.remove(&h.activity);
            }
            PacketType::Response | PacketType::Fault | PacketType::Reject => {
                self.on_client_reply(&pkt)
            }
            _ => {}
        }
    }

    fn on_client_reply(&mut self, pkt: &RpcPacket) {
        let h = &pkt.header;
        let Some(ar) = self.io_ar.as_ref() else {
            return;
        };
        let Some(call) = ar.app_ready.as_ref() else {
            return;
        };
        if call.activity != h.activity {
            return;
        }
        match h.packet_type {
            PacketType::Response => match PnioResponse::parse(&pkt.body, h.drep) {
                Ok(r) if r.status.is_ok() => self.enter_data_exchange(),
                Ok(r) => self.abort_io_ar(
                    &format!("ApplicationReady rejected by the controller: {}", r.status),
                    Some(abort_reason::status(abort_reason::AR_RPC_CONTROL_ERROR)),
                ),
                Err(_) => {}
            },
            _ => self.abort_io_ar(
                "ApplicationReady: RPC fault/reject from the controller",
                Some(abort_reason::status(abort_reason::AR_RPC_CONTROL_ERROR)),
            ),
        }
    }

    fn on_request(&mut self, pkt: RpcPacket, from: SocketAddr) {
        let h = pkt.header;
        // Duplicate of an answered call: resend the reply.
        if let Some(c) = self.cache.get(&h.activity) {
            if c.sequence == h.sequence {
                for p in c.packets.clone() {
                    self.send_udp(&p, from);
                }
                return;
            }
        }
        let now = self.now();
        let rec = match self.reasm.receive(now, &pkt) {
            Ok(r) => r,
            Err(_) => {
                self.reject(&h, reject_status::NCA_FAULT_REMOTE_NO_MEMORY, from);
                return;
            }
        };
        if let Some(f) = rec.fack {
            if let Ok(b) = f.emit() {
                self.send_udp(&b, from);
            }
        }
        let Some(msg) = rec.message else {
            if self.in_progress.len() < 64 {
                self.in_progress.insert(h.activity, h.sequence);
            }
            return;
        };
        self.in_progress.remove(&h.activity);
        let h = msg.header;
        if h.interface != rpc::PNIO_DEVICE_INTERFACE {
            self.reject(&h, reject_status::NCA_UNK_IF, from);
            return;
        }
        let req = match PnioRequest::parse(&msg.body, h.drep) {
            Ok(r) => r,
            Err(_) => {
                self.reject(&h, reject_status::NCA_PROTO_ERROR, from);
                return;
            }
        };
        let (status, data) = match h.opnum {
            opnum::CONNECT => self.op_connect(&req, &h, from),
            opnum::RELEASE => self.op_release(&req),
            opnum::READ => self.op_read(&req, false),
            opnum::READ_IMPLICIT => self.op_read(&req, true),
            opnum::WRITE => self.op_write(&req),
            opnum::CONTROL => self.op_control(&req),
            _ => {
                self.reject(&h, reject_status::NCA_OP_RNG_ERROR, from);
                return;
            }
        };
        let body = match (PnioResponse {
            status,
            args_maximum: req.args_maximum,
            data,
        })
        .emit(h.drep)
        {
            Ok(b) => b,
            Err(_) => return,
        };
        let mut rh = RpcHeader::response_to(&h);
        rh.server_boot = self.boot;
        let packets: Vec<Vec<u8>> = match rpc::fragment(&rh, &body, MAX_FRAGMENT_BODY, false) {
            Ok(ps) => ps.iter().filter_map(|p| p.emit().ok()).collect(),
            Err(_) => return,
        };
        for p in &packets {
            self.send_udp(p, from);
        }
        self.cache.insert(
            h.activity,
            CachedReply {
                sequence: h.sequence,
                packets,
            },
        );
        if self.cache.len() > 64 {
            // Bounded: forget the oldest arbitrarily (replies are only needed for retries).
            if let Some(k) = self.cache.keys().next().copied() {
                self.cache.remove(&k);
            }
        }
        // After a PrmEnd response: start ApplicationReady.
        self.start_app_ready_if_due();
    }

    fn reject(&self, h: &RpcHeader, code: u32, to: SocketAddr) {
        let mut rh = RpcHeader::reply_to(h, PacketType::Reject);
        rh.server_boot = self.boot;
        let p = RpcPacket::new(rh, FaultBody { status: code }.emit(h.drep));
        if let Ok(b) = p.emit() {
            self.send_udp(&b, to);
        }
    }

    fn start_app_ready_if_due(&mut self) {
        let Some(ar) = self.io_ar.as_mut() else {
            return;
        };
        if ar.phase != ArPhase::AppReady || ar.app_ready.is_some() {
            return;
        }
        let ctl = ControlBlock::application_ready_req(ar.req.ar_uuid, ar.req.session_key);
        let mut w = Writer::new();
        if ctl.emit(&mut w).is_err() {
            return;
        }
        let body = match PnioRequest::new(256, w.into_inner()).emit(ar.drep) {
            Ok(b) => b,
            Err(_) => return,
        };
        let activity = random_uuid();
        let mut h = RpcHeader::request(
            ar.drep,
            ar.req.cm_initiator_object_uuid,
            rpc::PNIO_CONTROLLER_INTERFACE,
            activity,
            0,
            opnum::CONTROL,
        );
        h.server_boot = 0;
        let Ok(packet) = RpcPacket::new(h, body).emit() else {
            return;
        };
        let dst = SocketAddr::new(ar.peer.ip(), CM_PORT);
        ar.app_ready = Some(ClientCall {
            activity,
            packet,
            dst,
            next_ns: 0,
            attempts: 0,
        });
        // Sent by the timer pass right away (next_ns = 0).
    }

    // ------------------------------------------------------------------ operations

    fn ar_known(&self, uuid: &Uuid) -> bool {
        self.io_ar.as_ref().is_some_and(|a| a.req.ar_uuid == *uuid)
            || self.sup.iter().any(|s| s.ar_uuid == *uuid)
    }

    fn touch_sup(&mut self, uuid: &Uuid) {
        let t = mono_ns();
        for s in self.sup.iter_mut().filter(|s| s.ar_uuid == *uuid) {
            s.last_ns = t;
        }
    }

    fn op_connect(
        &mut self,
        req: &PnioRequest,
        h: &RpcHeader,
        from: SocketAddr,
    ) -> (PnioStatus, Vec<u8>) {
        let c = match parse_connect(&req.data) {
            Ok(c) => c,
            Err(st) => {
                tracing::warn!("connect rejected: PNIO status {st} (a block cannot be decoded)");
                return (st, Vec::new());
            }
        };
        let limits = ConnectLimits::default();
        if let Err(st) = check_connect(&c, &limits) {
            tracing::warn!(
                controller = %c.ar.cm_initiator_station_name,
                "connect rejected: PNIO status {st} (the request breaks a rule of the standard's \
                 Connect blocks)"
            );
            return (st, Vec::new());
        }
        let arb = c.ar.clone();
        let own_mac = self.ctx.link.mac();
        let cmi_ns = u64::from(arb.cm_initiator_activity_timeout_factor.max(1)) * 100_000_000;
        match arb.ar_type {
            ar_type::IOSAR => {
                self.sup.retain(|s| s.ar_uuid != arb.ar_uuid);
                if self.sup.len() >= MAX_SUPERVISOR_ARS {
                    return (
                        connect_error(err1::CMRPC, cmrpc::NO_AR_RESOURCES),
                        Vec::new(),
                    );
                }
                self.sup.push(SupervisorAr {
                    ar_uuid: arb.ar_uuid,
                    session_key: arb.session_key,
                    last_ns: mono_ns(),
                    timeout_ns: cmi_ns.max(10_000_000_000),
                });
                let mut w = Writer::new();
                let _ = ArBlockRes::to_request(&arb, own_mac).emit(&mut w);
                (PnioStatus::OK, w.into_inner())
            }
            ar_type::IOCAR => {
                if let Some(cur) = &self.io_ar {
                    if cur.req.ar_uuid == arb.ar_uuid {
                        self.abort_io_ar(
                            "the controller re-ran the connect of this AR",
                            Some(abort_reason::status(
                                abort_reason::AR_RE_RUN_ABORTS_EXISTING,
                            )),
                        );
                    } else {
                        return (
                            connect_error(err1::CMRPC, cmrpc::NO_AR_RESOURCES),
                            Vec::new(),
                        );
                    }
                }
                if !self.link_up {
                    // The monitor polls; a connect may arrive first after the link came back.
                    self.link_up = crate::dataplane::read_link_state(&self.ctx.cfg.nic).up;
                    if !self.link_up {
                        return (
                            connect_error(err1::CMRPC, cmrpc::STATE_CONFLICT),
                            Vec::new(),
                        );
                    }
                }
                let plan = match ar::plan_connect(
                    &c,
                    &limits,
                    &self.slots,
                    own_mac,
                    self.ctx.image.input_len(),
                    self.ctx.cfg.safe_input_value,
                    &[],
                ) {
                    Ok(p) => p,
                    Err(st) => {
                        tracing::warn!(
                            controller = %arb.cm_initiator_station_name,
                            "connect rejected: PNIO status {st} (the controller's IO data \
                             objects do not fit the frame or this device's configuration)"
                        );
                        return (st, Vec::new());
                    }
                };
                if !plan.wrong.is_empty() {
                    tracing::warn!(
                        controller = %arb.cm_initiator_station_name,
                        "module mismatch: the controller expects other modules at (slot, subslot) \
                         {:?} than the configuration has; those submodules get no data",
                        plan.wrong
                    );
                }
                let Some(acr) = c.alarm_cr else {
                    return (
                        connect_error(err1::CMRPC, cmrpc::WRONG_BLOCK_COUNT),
                        Vec::new(),
                    );
                };
                // Response blocks.
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
                let _ = AlarmCrBlockRes::to_request(&acr, LOCAL_ALARM_REF, max_alarm).emit(&mut w);
                if let Some(md) = &plan.module_diff {
                    let _ = md.emit(&mut w);
                }
                // Install the AR and the cyclic jobs.
                let alarm = AlarmCr::new(
                    LOCAL_ALARM_REF,
                    acr.local_alarm_reference,
                    acr.rta_timeout_factor,
                    acr.rta_retries,
                    own_mac,
                    arb.cm_initiator_mac,
                );
                let cyc = &self.ctx.cyclic;
                cyc.tripped.store(false, Ordering::Release);
                cyc.set_consumer(Some(plan.consumer.clone()), &self.ctx.image);
                if let Some(rx) = &self.ctx.cyclic_rx {
                    rx.refresh(cyc);
                }
                cyc.set_job(Some(Arc::new(plan.provider.clone())));
                self.ctx.image.set_device_status(IOXS_GOOD, IOXS_GOOD);
                self.ctx
                    .flags
                    .ar_cycle_ns
                    .store(plan.period_ns, Ordering::Release);
                let k = &self.ctx.counters;
                k.active_iocr_count.store(2, Ordering::Relaxed);
                k.iocr_active.store(0, Ordering::Relaxed);
                k.iocr_healthy.store(0, Ordering::Relaxed);
                tracing::info!(
                    controller = %arb.cm_initiator_station_name,
                    input_frame_id = plan.input_frame_id,
                    output_frame_id = plan.output_frame_id,
                    period_us = plan.period_ns / 1000,
                    dht_us = plan.dht_ns / 1000,
                    advanced_startup = arb.properties.startup_mode_advanced(),
                    "connect accepted"
                );
                self.io_ar = Some(IoAr {
                    req: arb,
                    peer: from,
                    drep: h.drep,
                    phase: ArPhase::Startup,
                    started_ns: mono_ns(),
                    cmi_timeout_ns: cmi_ns,
                    dht_ns: plan.dht_ns,
                    alarm,
                    app_ready: None,
                    connected_event_sent: false,
                    data_since_ns: None,
                });
                (PnioStatus::OK, w.into_inner())
            }
            _ => (connect_error(err1::AR_BLOCK, 4), Vec::new()),
        }
    }

    fn find_control(data: &[u8]) -> Option<ControlBlock> {
        blocks(data)
            .filter_map(|b| b.ok())
            .find_map(|b| ControlBlock::parse(&b).ok())
    }

    fn op_control(&mut self, req: &PnioRequest) -> (PnioStatus, Vec<u8>) {
        let ctl_err = |c2| status_err(PnioStatus::CODE_CONTROL, err1::CMRPC, c2);
        let Some(cb) = Self::find_control(&req.data) else {
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
            ctl_type::PRM_BEGIN_REQ => {}
            ctl_type::RELEASE_REQ => {}
            _ => return (ctl_err(cmrpc::STATE_CONFLICT), Vec::new()),
        }
        let mut w = Writer::new();
        let _ = cb.response().emit(&mut w);
        (PnioStatus::OK, w.into_inner())
    }

    fn op_release(&mut self, req: &PnioRequest) -> (PnioStatus, Vec<u8>) {
        let err = |c2| status_err(PnioStatus::CODE_RELEASE, err1::CMRPC, c2);
        let Some(cb) = Self::find_control(&req.data) else {
            return (err(cmrpc::UNKNOWN_BLOCKS), Vec::new());
        };
        let mut w = Writer::new();
        let _ = cb.response().emit(&mut w);
        if self
            .io_ar
            .as_ref()
            .is_some_and(|a| a.req.ar_uuid == cb.ar_uuid)
        {
            if self
                .io_ar
                .as_ref()
                .is_some_and(|a| a.req.session_key != cb.session_key)
            {
                return (err(cmrpc::STATE_CONFLICT), Vec::new());
            }
            self.end_io_ar(
                "the controller released the AR",
                None,
                AbortCause::ReleasedByController,
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

    fn op_read(&mut self, req: &PnioRequest, implicit: bool) -> (PnioStatus, Vec<u8>) {
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
            self.touch_sup(&uuid);
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
        if super::records::is_pdev_real(a.index) {
            self.records.pdev = self.pdev_live();
        }
        let (status, data) = match self.records.read(&a) {
            Ok(d) => (PnioStatus::OK, d),
            Err(st) => (st, Vec::new()),
        };
        let resp = ReadResponse::answering(&hdr, data).and_then(|r| r.to_bytes());
        match resp {
            Ok(b) => (status, b),
            Err(_) => (status_err(PnioStatus::CODE_READ, 0x80, 0xA0), Vec::new()),
        }
    }

    /// The interface and port now, for the PDev real-data records.
    fn pdev_live(&self) -> super::records::PdevLive {
        let st = self.ctx.l2.as_ref().map(|l| l.status()).unwrap_or_default();
        let peer = st.lldp_neighbour.as_ref().map(|n| {
            // A PROFINET neighbour's Port ID "port-001.plc" gives port and station name; any
            // other neighbour (a switch) is reported with its raw Port ID and Chassis ID.
            let (port, chassis) = if n.station_name.is_empty() {
                (n.port_id.clone(), n.chassis_id.clone())
            } else {
                (n.port_name.clone(), n.station_name.clone())
            };
            (
                cut_name(port),
                cut_name(chassis),
                parse_mac(&n.src_mac).unwrap_or_default(),
            )
        });
        super::records::PdevLive {
            station_name: st.station_name,
            mac: self.ctx.link.mac(),
            ip_suite: st.ip_suite,
            link_up: self.link_up,
            mau_type: st.mau_type,
            peer,
            stats: super::portstats::read(&self.ctx.cfg.nic),
        }
    }

    fn op_write(&mut self, req: &PnioRequest) -> (PnioStatus, Vec<u8>) {
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
        self.touch_sup(&uuid);
        // Remanent records are stored durably (on this thread) before the response is built:
        // the controller is never told "written" for a value a crash could lose.
        let sink = &self.ctx.events;
        let commit = |ev: &StackEvent| sink.commit(ev);
        let mut evs = Vec::new();
        let resp = match &w.body {
            WriteBody::Single(data) => {
                let st = match self.records.write(&w.header.address, data, commit) {
                    Ok(ev) => {
                        evs.extend(ev);
                        PnioStatus::OK
                    }
                    Err(st) => st,
                };
                WriteResponse {
                    header: WriteResHeaderRepr::answering(&w.header, st),
                    records: Vec::new(),
                }
            }
            WriteBody::Multiple(recs) => {
                let mut out = Vec::new();
                for r in recs {
                    let st = match self.records.write(&r.header.address, &r.data, commit) {
                        Ok(ev) => {
                            evs.extend(ev);
                            PnioStatus::OK
                        }
                        Err(st) => st,
                    };
                    out.push(WriteResHeaderRepr::answering(&r.header, st));
                }
                WriteResponse {
                    header: WriteResHeaderRepr::answering(&w.header, PnioStatus::OK),
                    records: out,
                }
            }
        };
        for e in evs {
            self.event(e);
        }
        let status = resp.overall_status();
        match resp.to_bytes() {
            Ok(b) => (status, b),
            Err(_) => (status_err(PnioStatus::CODE_WRITE, 0x80, 0xA1), Vec::new()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_names_are_cut_at_a_character_boundary() {
        assert_eq!(cut_name("port-001".into()), "port-001");
        assert_eq!(cut_name("x".repeat(300)).len(), 255);
        // 254 ASCII bytes, then a 3-byte replacement character: cut before it.
        let s = "a".repeat(254) + "\u{FFFD}\u{FFFD}";
        assert_eq!(cut_name(s), "a".repeat(254));
    }

    #[test]
    fn mac_text_parses_back() {
        let m = [0x02, 0xab, 0, 0x10, 0xff, 0x01];
        assert_eq!(parse_mac(&mac_str(&m)), Some(m));
        for bad in [
            "",
            "02:ab:00:10:ff",
            "02:ab:00:10:ff:01:02",
            "02:ab:00:10:ff:zz",
            "0x:ab:00:10:ff:01",
        ] {
            assert_eq!(parse_mac(bad), None, "{bad}");
        }
    }

    /// A request in either byte order survives emit -> parse -> reassembly -> PNIO parse.
    #[test]
    fn requests_in_both_byte_orders_parse() {
        for drep in [Drep::LITTLE_ENDIAN, Drep::BIG_ENDIAN] {
            let h = RpcHeader::request(
                drep,
                Uuid::pnio_object(1, 1, 0x0493),
                rpc::PNIO_DEVICE_INTERFACE,
                Uuid::from_bytes([7; 16]),
                3,
                opnum::CONNECT,
            );
            let body = PnioRequest::new(65000, vec![1, 2, 3, 4])
                .emit(drep)
                .unwrap();
            let wire = RpcPacket::new(h, body).emit().unwrap();
            let pkt = RpcPacket::parse(&wire).unwrap();
            assert_eq!(pkt.header.drep, drep);
            let mut r = Reassembler::new(ReassemblyConfig::default());
            let m = r.receive(Instant::ZERO, &pkt).unwrap().message.unwrap();
            assert_eq!(m.header.drep, drep);
            let req = PnioRequest::parse(&m.body, m.header.drep).unwrap();
            assert_eq!(req.data, vec![1, 2, 3, 4]);
        }
    }
}

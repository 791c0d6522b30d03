//! The RTA alarm transport (RTA_CLASS_1, window size 1) of one AR and one priority, sans-IO.
//! The same machine serves both roles: the device sends AlarmNotifications and receives
//! AlarmAcks, the controller the reverse; both directions are DATA-RTA-PDUs with TACK set,
//! each answered by a transport ACK-RTA-PDU.
//!
//! A typical alarm round trip (sequence numbers of a fresh AR, as in the p-net/S7 capture):
//! ```text
//! device  DATA(AlarmNotification) send 0xFFFF ack 0xFFFE  ->
//!                        <- ACK  send 0xFFFE ack 0xFFFF      controller (transport ACK)
//!                        <- DATA(AlarmAck) send 0xFFFF ack 0xFFFF
//! device  ACK  send 0xFFFF ack 0xFFFF  ->
//! device  DATA(next notification) send 0x0000 ack 0xFFFF ->
//! ```
//! Sender side (APMS): one DATA outstanding at a time; further payloads wait in a FIFO. The
//! outstanding PDU is retransmitted every RTATimeoutFactor x 100 ms, at most RTARetries
//! times; then [`RtaEvent::Timeout`] is reported and the owner must abort the AR (typically
//! with [`RtaMachine::abort`] and `abort_reason::AR_ALARM_SEND_CNF_NEG`). An ACK or DATA
//! whose AckSeqNum equals the outstanding SendSeqNum completes it ([`RtaEvent::Delivered`]).
//!
//! Receiver side (APMR): a DATA with the expected SendSeqNum is delivered once
//! ([`RtaEvent::Received`]) and ACKed; a repeat of the previous one is re-ACKed but not
//! delivered again; any other SendSeqNum is answered with a NACK. DATA without TACK is
//! ignored. An ERR-RTA-PDU closes the machine ([`RtaEvent::PeerAbort`]).
//!
//! Source: p-net `src/common/pf_alarm.c` (APMS/APMR: `pf_alarm_apms_a_data_ind`,
//! `pf_alarm_apmr_a_data_ind`, `pf_alarm_apms_timeout`, `pf_alarm_apmr_send_ack/nack`,
//! `pf_alarm_error_ind`), real frames `pniors-alarm-*` for the sequence numbers.

use crate::wire::field::Writer;
use crate::wire::Emit;
use std::collections::VecDeque;

use crate::time::{Duration, Instant};
use crate::wire::pnio::alarm::{AlarmNotificationRepr, AlarmPdu, AlarmPriority, AlarmSpecifier};
use crate::wire::pnio::PnioStatus;
use crate::wire::rta::{
    next_seq, RtaPduType, RtaRepr, FRAME_ID_ALARM_HIGH, FRAME_ID_ALARM_LOW, INITIAL_ACK_SEQ,
    INITIAL_SEND_SEQ,
};

/// Parameters of one alarm channel, from the AlarmCRBlockReq/Res of the AR.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RtaConfig {
    pub priority: AlarmPriority,
    /// Our alarm reference: the AlarmSrcEndpoint of what we send, the AlarmDstEndpoint we
    /// accept.
    pub local_endpoint: u16,
    /// The peer's alarm reference: AlarmDstEndpoint of what we send.
    pub remote_endpoint: u16,
    /// RTATimeoutFactor (1..=100): retransmission interval in units of 100 ms.
    pub timeout_factor: u16,
    /// RTARetries (3..=15): retransmissions before giving up.
    pub retries: u16,
    /// Maximum number of payloads waiting behind the outstanding one.
    pub max_queue: usize,
    /// Drop received PDUs whose AlarmDstEndpoint is not `local_endpoint`.
    pub check_endpoint: bool,
}

impl RtaConfig {
    pub fn new(
        priority: AlarmPriority,
        local_endpoint: u16,
        remote_endpoint: u16,
        timeout_factor: u16,
        retries: u16,
    ) -> Self {
        RtaConfig {
            priority,
            local_endpoint,
            remote_endpoint,
            timeout_factor,
            retries,
            max_queue: 32,
            check_endpoint: true,
        }
    }

    /// The retransmission interval (at least 100 ms).
    pub fn timeout(&self) -> Duration {
        Duration::from_millis(100).saturating_mul(u64::from(self.timeout_factor.max(1)))
    }

    pub fn frame_id(&self) -> u16 {
        match self.priority {
            AlarmPriority::High => FRAME_ID_ALARM_HIGH,
            AlarmPriority::Low => FRAME_ID_ALARM_LOW,
        }
    }
}

/// An RTA-PDU to send on this channel: prefix it with the FrameID (and the Ethernet header
/// towards the peer's MAC, VLAN priority 6 high / 5 low).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RtaTx {
    pub frame_id: u16,
    pub pdu: RtaRepr,
}

impl RtaTx {
    /// FrameID + RTA-PDU: the payload after EtherType 0x8892.
    pub fn rt_payload(&self) -> Vec<u8> {
        let mut w = Writer::with_capacity(2 + self.pdu.buffer_len());
        w.u16(self.frame_id);
        // Cannot fail: the VarPart was built by this machine (at most 65535 bytes, checked in
        // send_alarm).
        let _ = self.pdu.emit(&mut w);
        w.into_inner()
    }
}

/// What the machine reports to its owner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RtaEvent {
    /// A DATA VarPart from the peer (an alarm block), delivered once.
    Received(Vec<u8>),
    /// The peer acknowledged our DATA with this SendSeqNum.
    Delivered { send_seq: u16 },
    /// Retransmissions exhausted for the outstanding DATA: abort the AR.
    Timeout { send_seq: u16 },
    /// The peer sent an ERR-RTA-PDU; the machine is closed.
    PeerAbort(PnioStatus),
    /// A DATA with an unexpected SendSeqNum was answered with a NACK.
    SequenceError { received: u16, expected: u16 },
}

/// Why a payload could not be queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SendError {
    Closed,
    QueueFull,
    TooLong,
}

/// Counters for diagnostics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RtaStats {
    pub data_sent: u64,
    pub retransmissions: u64,
    pub acks_sent: u64,
    pub nacks_sent: u64,
    pub duplicates: u64,
    pub ignored: u64,
}

#[derive(Debug, Clone)]
struct Outstanding {
    pdu: RtaRepr,
    deadline: Instant,
    retries_left: u16,
}

/// The machine.
#[derive(Debug, Clone)]
pub struct RtaMachine {
    cfg: RtaConfig,
    /// SendSeqNum of the next (or outstanding) DATA.
    send_seq: u16,
    /// SendSeqNum of our last acknowledged DATA.
    send_seq_o: u16,
    /// SendSeqNum expected in the next DATA from the peer.
    exp_seq: u16,
    /// SendSeqNum of the last DATA accepted from the peer (our AckSeqNum).
    exp_seq_o: u16,
    outstanding: Option<Outstanding>,
    queue: VecDeque<Vec<u8>>,
    tx: VecDeque<RtaTx>,
    events: VecDeque<RtaEvent>,
    closed: bool,
    /// Closed by the peer's ERR-RTA-PDU, not yet answered (see `reply_to_peer_abort`).
    closed_by_peer: bool,
    stats: RtaStats,
}

impl RtaMachine {
    pub fn new(cfg: RtaConfig) -> Self {
        RtaMachine {
            cfg,
            send_seq: INITIAL_SEND_SEQ,
            send_seq_o: INITIAL_ACK_SEQ,
            exp_seq: INITIAL_SEND_SEQ,
            exp_seq_o: INITIAL_ACK_SEQ,
            outstanding: None,
            queue: VecDeque::new(),
            tx: VecDeque::new(),
            events: VecDeque::new(),
            closed: false,
            closed_by_peer: false,
            stats: RtaStats::default(),
        }
    }

    pub fn config(&self) -> &RtaConfig {
        &self.cfg
    }
    pub fn stats(&self) -> RtaStats {
        self.stats
    }
    pub fn is_closed(&self) -> bool {
        self.closed
    }
    /// True while a DATA awaits its ACK.
    pub fn is_busy(&self) -> bool {
        self.outstanding.is_some()
    }
    /// Payloads waiting behind the outstanding one.
    pub fn queued(&self) -> usize {
        self.queue.len()
    }

    fn pdu(&self, t: RtaPduType, send_seq: u16, var_part: Vec<u8>) -> RtaRepr {
        RtaRepr::new(
            t,
            self.cfg.remote_endpoint,
            self.cfg.local_endpoint,
            send_seq,
            self.exp_seq_o,
            var_part,
        )
    }

    fn push_tx(&mut self, pdu: RtaRepr) {
        self.tx.push_back(RtaTx {
            frame_id: self.cfg.frame_id(),
            pdu,
        });
    }

    /// Queue an alarm block (AlarmNotification or AlarmAck) for sending as DATA.
    pub fn send_alarm(&mut self, payload: Vec<u8>, now: Instant) -> Result<(), SendError> {
        if self.closed {
            return Err(SendError::Closed);
        }
        if payload.len() > usize::from(u16::MAX) {
            return Err(SendError::TooLong);
        }
        if self.outstanding.is_some() || !self.queue.is_empty() {
            if self.queue.len() >= self.cfg.max_queue {
                return Err(SendError::QueueFull);
            }
            self.queue.push_back(payload);
            return Ok(());
        }
        self.start_data(payload, now);
        Ok(())
    }

    fn start_data(&mut self, payload: Vec<u8>, now: Instant) {
        let pdu = self.pdu(RtaPduType::Data, self.send_seq, payload);
        self.outstanding = Some(Outstanding {
            pdu: pdu.clone(),
            deadline: now + self.cfg.timeout(),
            retries_left: self.cfg.retries,
        });
        self.stats.data_sent += 1;
        self.push_tx(pdu);
    }

    /// Send an ERR-RTA-PDU with `status` (e.g. `abort_reason::status(..)`) and close.
    pub fn abort(&mut self, status: PnioStatus) {
        if self.closed {
            return;
        }
        let pdu = self.pdu(RtaPduType::Err, self.send_seq, status.octets().to_vec());
        self.push_tx(pdu);
        self.close();
    }

    /// Answer the peer's ERR-RTA-PDU with one of ours carrying `status`, although the machine
    /// closed when it received the peer's (p-net closes the AR with the peer's reason and sends
    /// that reason back on the low-priority channel: fixture
    /// `pniors-alarm-low-err-rta-ar-removed-reply-pnet`). Does nothing on a machine that
    /// was not closed by the peer.
    pub fn reply_to_peer_abort(&mut self, status: PnioStatus) {
        if !self.closed_by_peer {
            return;
        }
        self.closed_by_peer = false;
        let pdu = self.pdu(RtaPduType::Err, self.send_seq, status.octets().to_vec());
        self.push_tx(pdu);
    }

    fn close(&mut self) {
        self.closed = true;
        self.outstanding = None;
        self.queue.clear();
    }

    /// Handle a received RTA-PDU (the bytes after the FrameID, padding allowed). Returns
    /// `false` when the bytes were not a valid RTA-PDU for this channel (ignored).
    pub fn handle(&mut self, rta_pdu: &[u8], now: Instant) -> bool {
        let Ok(pdu) = RtaRepr::parse(rta_pdu) else {
            self.stats.ignored += 1;
            return false;
        };
        self.handle_repr(&pdu, now)
    }

    /// Handle a parsed RTA-PDU.
    pub fn handle_repr(&mut self, pdu: &RtaRepr, now: Instant) -> bool {
        if self.closed || (self.cfg.check_endpoint && pdu.dst_endpoint != self.cfg.local_endpoint) {
            self.stats.ignored += 1;
            return false;
        }
        match pdu.pdu_type {
            RtaPduType::Err => {
                let status = pdu.err_status().unwrap_or_default();
                self.close();
                self.closed_by_peer = true;
                self.events.push_back(RtaEvent::PeerAbort(status));
            }
            RtaPduType::Ack => self.apms_ack(pdu.ack_seq, now),
            RtaPduType::Nack => {
                // The peer lost track of our sequence; the retransmission timer recovers.
            }
            RtaPduType::Data => {
                if !pdu.tack {
                    self.stats.ignored += 1;
                    return false;
                }
                self.apms_ack(pdu.ack_seq, now);
                if pdu.send_seq == self.exp_seq {
                    self.exp_seq_o = self.exp_seq;
                    self.exp_seq = next_seq(self.exp_seq);
                    self.send_ack();
                    self.events
                        .push_back(RtaEvent::Received(pdu.var_part.clone()));
                } else if pdu.send_seq == self.exp_seq_o {
                    self.stats.duplicates += 1;
                    self.send_ack();
                } else {
                    self.stats.nacks_sent += 1;
                    let nack = self.pdu(RtaPduType::Nack, self.send_seq_o, Vec::new());
                    self.push_tx(nack);
                    self.events.push_back(RtaEvent::SequenceError {
                        received: pdu.send_seq,
                        expected: self.exp_seq,
                    });
                }
            }
        }
        true
    }

    fn send_ack(&mut self) {
        self.stats.acks_sent += 1;
        let ack = self.pdu(RtaPduType::Ack, self.send_seq_o, Vec::new());
        self.push_tx(ack);
    }

    /// AckSeqNum processing of received ACK/DATA PDUs (APMS).
    fn apms_ack(&mut self, ack_seq: u16, now: Instant) {
        if self.outstanding.is_some() && ack_seq == self.send_seq {
            self.outstanding = None;
            let done = self.send_seq;
            self.send_seq_o = self.send_seq;
            self.send_seq = next_seq(self.send_seq);
            self.events
                .push_back(RtaEvent::Delivered { send_seq: done });
            if let Some(next) = self.queue.pop_front() {
                self.start_data(next, now);
            }
        }
    }

    /// Run timers: retransmit or report a timeout.
    pub fn poll(&mut self, now: Instant) {
        let timeout = self.cfg.timeout();
        let Some(o) = self.outstanding.as_mut() else {
            return;
        };
        if now < o.deadline {
            return;
        }
        if o.retries_left > 0 {
            o.retries_left -= 1;
            o.deadline = now + timeout;
            let pdu = o.pdu.clone();
            self.stats.retransmissions += 1;
            self.push_tx(pdu);
        } else {
            let send_seq = o.pdu.send_seq;
            self.outstanding = None;
            self.queue.clear();
            self.events.push_back(RtaEvent::Timeout { send_seq });
        }
    }

    /// The next PDU to send.
    pub fn poll_transmit(&mut self) -> Option<RtaTx> {
        self.tx.pop_front()
    }

    /// The next event for the owner.
    pub fn poll_event(&mut self) -> Option<RtaEvent> {
        self.events.pop_front()
    }

    /// When [`RtaMachine::poll`] must run next (None when nothing is outstanding).
    pub fn next_deadline(&self) -> Option<Instant> {
        self.outstanding.as_ref().map(|o| o.deadline)
    }
}

/// What the alarm layer reports to its owner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AlarmEvent {
    /// An AlarmNotification from the peer (controller side). With `auto_ack` the positive
    /// AlarmAck is already queued; otherwise answer with [`AlarmEndpoint::acknowledge`].
    Notification(AlarmNotificationRepr),
    /// The peer's AlarmAck for our notification (device side).
    Acknowledged {
        notification: AlarmNotificationRepr,
        status: PnioStatus,
    },
    /// A DATA VarPart that is not a valid alarm block, or an AlarmAck nobody waited for.
    /// The standard answers a wrong alarm PDU by aborting the AR (`AR_ALARM_IND_ERROR`).
    ProtocolError(&'static str),
    /// Transport retransmissions exhausted: abort the AR.
    Timeout,
    /// The peer aborted with an ERR-RTA-PDU.
    PeerAbort(PnioStatus),
}

/// The alarm protocol of one AR and priority on top of [`RtaMachine`]: notifications wait for
/// the peer's AlarmAck before the next one is sent (one alarm outstanding per priority), the
/// 11-bit AlarmSpecifier sequence number is assigned here, and received notifications can be
/// acknowledged automatically.
#[derive(Debug, Clone)]
pub struct AlarmEndpoint {
    rta: RtaMachine,
    auto_ack: bool,
    next_alarm_seq: u16,
    awaiting_ack: Option<AlarmNotificationRepr>,
    pending: VecDeque<AlarmNotificationRepr>,
    events: VecDeque<AlarmEvent>,
}

impl AlarmEndpoint {
    pub fn new(cfg: RtaConfig, auto_ack: bool) -> Self {
        AlarmEndpoint {
            rta: RtaMachine::new(cfg),
            auto_ack,
            next_alarm_seq: 0,
            awaiting_ack: None,
            pending: VecDeque::new(),
            events: VecDeque::new(),
        }
    }

    pub fn transport(&self) -> &RtaMachine {
        &self.rta
    }

    /// The notification waiting for its AlarmAck, if any.
    pub fn awaiting_ack(&self) -> Option<&AlarmNotificationRepr> {
        self.awaiting_ack.as_ref()
    }

    /// Queue a notification. Its priority is set to the channel's and the SequenceNumber bits
    /// of its AlarmSpecifier to the next alarm sequence number (0..=0x7FF, wrapping).
    pub fn notify(&mut self, mut n: AlarmNotificationRepr, now: Instant) -> Result<(), SendError> {
        if self.rta.is_closed() {
            return Err(SendError::Closed);
        }
        if self.pending.len() >= self.rta.cfg.max_queue {
            return Err(SendError::QueueFull);
        }
        n.priority = self.rta.cfg.priority;
        n.specifier = AlarmSpecifier((n.specifier.0 & !0x07FF) | self.next_alarm_seq);
        self.next_alarm_seq = AlarmSpecifier::next_sequence_number(self.next_alarm_seq);
        self.pending.push_back(n);
        self.pump(now)
    }

    fn pump(&mut self, now: Instant) -> Result<(), SendError> {
        if self.awaiting_ack.is_some() {
            return Ok(());
        }
        let Some(n) = self.pending.pop_front() else {
            return Ok(());
        };
        let bytes = AlarmPdu::Notification(n.clone())
            .to_bytes()
            .map_err(|_| SendError::TooLong)?;
        self.rta.send_alarm(bytes, now)?;
        self.awaiting_ack = Some(n);
        Ok(())
    }

    /// Send an AlarmAck for `n` with `status` (controller side, without `auto_ack`).
    pub fn acknowledge(
        &mut self,
        n: &AlarmNotificationRepr,
        status: PnioStatus,
        now: Instant,
    ) -> Result<(), SendError> {
        let bytes = AlarmPdu::Ack(n.ack(status))
            .to_bytes()
            .map_err(|_| SendError::TooLong)?;
        self.rta.send_alarm(bytes, now)
    }

    /// Handle a received RTA-PDU (bytes after the FrameID).
    pub fn handle(&mut self, rta_pdu: &[u8], now: Instant) -> bool {
        let used = self.rta.handle(rta_pdu, now);
        self.drain(now);
        used
    }

    /// Run timers.
    pub fn poll(&mut self, now: Instant) {
        self.rta.poll(now);
        self.drain(now);
    }

    /// Abort the AR with an ERR-RTA-PDU.
    pub fn abort(&mut self, status: PnioStatus) {
        self.rta.abort(status);
        self.awaiting_ack = None;
        self.pending.clear();
    }

    fn drain(&mut self, now: Instant) {
        while let Some(e) = self.rta.poll_event() {
            match e {
                RtaEvent::Received(bytes) => match AlarmPdu::parse(&bytes) {
                    Ok(AlarmPdu::Notification(n)) => {
                        if n.priority != self.rta.cfg.priority {
                            self.events
                                .push_back(AlarmEvent::ProtocolError("alarm priority mismatch"));
                            continue;
                        }
                        if self.auto_ack {
                            // A full queue only happens when the peer floods us; the missing
                            // AlarmAck then makes the peer time out, which is the right outcome.
                            let _ = self.acknowledge(&n, PnioStatus::OK, now);
                        }
                        self.events.push_back(AlarmEvent::Notification(n));
                    }
                    Ok(AlarmPdu::Ack(a)) => match self.awaiting_ack.take() {
                        Some(n) if a.acknowledges(&n) => {
                            self.events.push_back(AlarmEvent::Acknowledged {
                                notification: n,
                                status: a.status,
                            });
                            let _ = self.pump(now);
                        }
                        other => {
                            self.awaiting_ack = other;
                            self.events
                                .push_back(AlarmEvent::ProtocolError("unexpected AlarmAck"));
                        }
                    },
                    Err(_) => self
                        .events
                        .push_back(AlarmEvent::ProtocolError("invalid alarm block")),
                },
                RtaEvent::Delivered { .. } | RtaEvent::SequenceError { .. } => {}
                RtaEvent::Timeout { .. } => {
                    self.awaiting_ack = None;
                    self.pending.clear();
                    self.events.push_back(AlarmEvent::Timeout);
                }
                RtaEvent::PeerAbort(s) => {
                    self.awaiting_ack = None;
                    self.pending.clear();
                    self.events.push_back(AlarmEvent::PeerAbort(s));
                }
            }
        }
    }

    pub fn poll_transmit(&mut self) -> Option<RtaTx> {
        self.rta.poll_transmit()
    }

    pub fn poll_event(&mut self) -> Option<AlarmEvent> {
        self.events.pop_front()
    }

    pub fn next_deadline(&self) -> Option<Instant> {
        self.rta.next_deadline()
    }
}

#[cfg(test)]
mod tests;

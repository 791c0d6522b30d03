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
        let mut v = Vec::with_capacity(2 + self.pdu.buffer_len());
        v.extend_from_slice(&self.frame_id.to_be_bytes());
        v.resize(2 + self.pdu.buffer_len(), 0);
        // Cannot fail: the buffer has exactly the needed length and the VarPart was built by
        // this machine (at most 65535 bytes, checked in send_alarm).
        let _ = self.pdu.emit(&mut v[2..]);
        v
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
        let pdu = self.pdu(RtaPduType::Err, self.send_seq, status.to_bytes().to_vec());
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
        let pdu = self.pdu(RtaPduType::Err, self.send_seq, status.to_bytes().to_vec());
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
mod tests {
    use super::*;
    use crate::wire::pnio::alarm::{alarm_type, AlarmNotificationRepr, AlarmPdu, AlarmSpecifier};
    use crate::wire::pnio::diagnosis::{
        ChannelDiagnosis, ChannelProperties, Direction, Severity, Specifier, UserStructure,
    };
    use crate::wire::rta::abort_reason;

    const DEV_REF: u16 = 0x0001;
    const CTL_REF: u16 = 0x0002;

    fn pair(retries: u16) -> (RtaMachine, RtaMachine) {
        let dev = RtaMachine::new(RtaConfig::new(
            AlarmPriority::Low,
            DEV_REF,
            CTL_REF,
            1,
            retries,
        ));
        let ctl = RtaMachine::new(RtaConfig::new(
            AlarmPriority::Low,
            CTL_REF,
            DEV_REF,
            1,
            retries,
        ));
        (dev, ctl)
    }

    fn notification(seq: u16) -> AlarmNotificationRepr {
        AlarmNotificationRepr {
            priority: AlarmPriority::Low,
            alarm_type: alarm_type::DIAGNOSIS,
            api: 0,
            slot: 1,
            subslot: 1,
            module_ident: 0x30,
            submodule_ident: 0x130,
            specifier: AlarmSpecifier::new(seq, true, false, true, true),
            item: Some(UserStructure::Channel(vec![ChannelDiagnosis {
                channel_number: seq,
                properties: ChannelProperties::new(
                    1,
                    false,
                    Severity::Fault,
                    Specifier::Appears,
                    Direction::Input,
                ),
                error_type: 1,
            }])),
        }
    }

    /// Deterministic xorshift PRNG for loss/duplication.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn chance(&mut self, percent: u64) -> bool {
            self.next() % 100 < percent
        }
    }

    /// A simulated link between the device and the controller machine: every frame is
    /// dropped with `loss`%, duplicated with `dup`%, and arrives 1 ms after it was sent. The
    /// controller application answers every AlarmNotification with an AlarmAck.
    struct Sim {
        dev: RtaMachine,
        ctl: RtaMachine,
        now: Instant,
        rng: Rng,
        loss: u64,
        dup: u64,
        /// (arrival, to_device, bytes)
        wire: Vec<(Instant, bool, Vec<u8>)>,
        dev_events: Vec<RtaEvent>,
        ctl_events: Vec<RtaEvent>,
        /// Notifications delivered to the controller application, in order.
        ctl_got: Vec<AlarmNotificationRepr>,
        /// AlarmAcks delivered to the device application.
        dev_acks: Vec<u16>,
        /// Transmissions seen on the wire per direction (for scripted loss).
        sent_to_ctl: usize,
        drop_first_to_ctl: usize,
    }

    impl Sim {
        fn new(retries: u16, seed: u64, loss: u64, dup: u64) -> Self {
            let (dev, ctl) = pair(retries);
            Sim {
                dev,
                ctl,
                now: Instant::from_millis(1000),
                rng: Rng(seed | 1),
                loss,
                dup,
                wire: Vec::new(),
                dev_events: Vec::new(),
                ctl_events: Vec::new(),
                ctl_got: Vec::new(),
                dev_acks: Vec::new(),
                sent_to_ctl: 0,
                drop_first_to_ctl: 0,
            }
        }

        fn pump_tx(&mut self) {
            for to_device in [false, true] {
                loop {
                    let m = if to_device {
                        &mut self.ctl
                    } else {
                        &mut self.dev
                    };
                    let Some(tx) = m.poll_transmit() else { break };
                    assert_eq!(tx.frame_id, 0xFE01);
                    let bytes = tx.pdu.to_bytes().unwrap();
                    if !to_device {
                        self.sent_to_ctl += 1;
                        if self.sent_to_ctl <= self.drop_first_to_ctl {
                            continue;
                        }
                    }
                    if self.rng.chance(self.loss) {
                        continue;
                    }
                    let at = self.now + Duration::from_millis(1);
                    if self.rng.chance(self.dup) {
                        self.wire.push((at, to_device, bytes.clone()));
                    }
                    self.wire.push((at, to_device, bytes));
                }
            }
        }

        fn pump_events(&mut self) {
            while let Some(e) = self.ctl.poll_event() {
                if let RtaEvent::Received(b) = &e {
                    match AlarmPdu::parse(b).unwrap() {
                        AlarmPdu::Notification(n) => {
                            let ack = AlarmPdu::Ack(n.ack(PnioStatus::OK)).to_bytes().unwrap();
                            self.ctl.send_alarm(ack, self.now).unwrap();
                            self.ctl_got.push(n);
                        }
                        AlarmPdu::Ack(_) => panic!("controller got an AlarmAck"),
                    }
                }
                self.ctl_events.push(e);
            }
            while let Some(e) = self.dev.poll_event() {
                if let RtaEvent::Received(b) = &e {
                    match AlarmPdu::parse(b).unwrap() {
                        AlarmPdu::Ack(a) => {
                            assert!(a.status.is_ok());
                            self.dev_acks.push(a.specifier.sequence_number());
                        }
                        AlarmPdu::Notification(_) => panic!("device got a notification"),
                    }
                }
                self.dev_events.push(e);
            }
        }

        /// Advance until both sides are idle and the wire is empty, or `limit` is reached.
        fn run(&mut self, limit: Duration) {
            let end = self.now + limit;
            loop {
                self.pump_tx();
                self.pump_events();
                self.pump_tx();
                let next_wire = self.wire.iter().map(|w| w.0).min();
                let next_timer = [self.dev.next_deadline(), self.ctl.next_deadline()]
                    .into_iter()
                    .flatten()
                    .min();
                let Some(next) = [next_wire, next_timer].into_iter().flatten().min() else {
                    return;
                };
                if next > end {
                    return;
                }
                self.now = next;
                let (due, rest): (Vec<_>, Vec<_>) =
                    self.wire.drain(..).partition(|w| w.0 <= self.now);
                self.wire = rest;
                for (_, to_device, bytes) in due {
                    let m = if to_device {
                        &mut self.dev
                    } else {
                        &mut self.ctl
                    };
                    m.handle(&bytes, self.now);
                }
                self.dev.poll(self.now);
                self.ctl.poll(self.now);
            }
        }
    }

    #[test]
    fn first_exchange_matches_the_captured_sequence_numbers() {
        let (mut dev, mut ctl) = pair(3);
        let now = Instant::from_millis(0);
        let n = AlarmPdu::Notification(notification(0)).to_bytes().unwrap();
        dev.send_alarm(n.clone(), now).unwrap();
        let data = dev.poll_transmit().unwrap().pdu;
        assert_eq!(
            (data.send_seq, data.ack_seq, data.tack),
            (0xFFFF, 0xFFFE, true)
        );
        assert_eq!((data.dst_endpoint, data.src_endpoint), (CTL_REF, DEV_REF));
        assert_eq!(dev.next_deadline(), Some(now + Duration::from_millis(100)));

        ctl.handle(&data.to_bytes().unwrap(), now);
        let ack = ctl.poll_transmit().unwrap().pdu;
        assert_eq!(ack.pdu_type, RtaPduType::Ack);
        assert_eq!(
            (ack.send_seq, ack.ack_seq, ack.tack),
            (0xFFFE, 0xFFFF, false)
        );
        assert_eq!(ctl.poll_event(), Some(RtaEvent::Received(n)));

        dev.handle(&ack.to_bytes().unwrap(), now);
        assert_eq!(
            dev.poll_event(),
            Some(RtaEvent::Delivered { send_seq: 0xFFFF })
        );
        assert_eq!(dev.next_deadline(), None);

        let alarm_ack = AlarmPdu::Ack(notification(0).ack(PnioStatus::OK))
            .to_bytes()
            .unwrap();
        ctl.send_alarm(alarm_ack.clone(), now).unwrap();
        let data2 = ctl.poll_transmit().unwrap().pdu;
        assert_eq!((data2.send_seq, data2.ack_seq), (0xFFFF, 0xFFFF));
        dev.handle(&data2.to_bytes().unwrap(), now);
        let ack2 = dev.poll_transmit().unwrap().pdu;
        assert_eq!((ack2.send_seq, ack2.ack_seq), (0xFFFF, 0xFFFF));
        assert_eq!(dev.poll_event(), Some(RtaEvent::Received(alarm_ack)));

        dev.send_alarm(
            AlarmPdu::Notification(notification(1)).to_bytes().unwrap(),
            now,
        )
        .unwrap();
        let data3 = dev.poll_transmit().unwrap().pdu;
        assert_eq!((data3.send_seq, data3.ack_seq), (0x0000, 0xFFFF));
    }

    #[test]
    fn every_alarm_delivered_exactly_once_under_loss_and_duplication() {
        for seed in 1..=20u64 {
            let mut sim = Sim::new(15, seed * 7919, 20, 20);
            for i in 0..10 {
                let b = AlarmPdu::Notification(notification(i)).to_bytes().unwrap();
                sim.dev.send_alarm(b, sim.now).unwrap();
            }
            sim.run(Duration::from_millis(600_000));
            let seqs: Vec<u16> = sim
                .ctl_got
                .iter()
                .map(|n| n.specifier.sequence_number())
                .collect();
            assert_eq!(seqs, (0..10).collect::<Vec<_>>(), "seed {seed}");
            assert_eq!(sim.dev_acks, (0..10).collect::<Vec<_>>(), "seed {seed}");
            assert!(!sim
                .dev_events
                .iter()
                .any(|e| matches!(e, RtaEvent::Timeout { .. })));
            let delivered = sim
                .dev_events
                .iter()
                .filter(|e| matches!(e, RtaEvent::Delivered { .. }))
                .count();
            assert_eq!(delivered, 10, "seed {seed}");
            assert!(sim.dev.stats().retransmissions + sim.ctl.stats().duplicates > 0);
        }
    }

    #[test]
    fn losses_up_to_retries_are_recovered() {
        let mut sim = Sim::new(3, 42, 0, 0);
        sim.drop_first_to_ctl = 3; // the first send and two retransmissions
        sim.dev
            .send_alarm(
                AlarmPdu::Notification(notification(5)).to_bytes().unwrap(),
                sim.now,
            )
            .unwrap();
        let start = sim.now;
        sim.run(Duration::from_millis(10_000));
        assert_eq!(sim.ctl_got.len(), 1);
        assert_eq!(sim.dev_acks, vec![5]);
        assert_eq!(sim.dev.stats().retransmissions, 3);
        // delivered on the third retransmission, 300 ms after the first send
        assert!(sim.now >= start + Duration::from_millis(300));
    }

    #[test]
    fn timeout_after_configured_retries() {
        let mut sim = Sim::new(3, 42, 0, 0);
        sim.drop_first_to_ctl = usize::MAX;
        let start = sim.now;
        sim.dev
            .send_alarm(
                AlarmPdu::Notification(notification(1)).to_bytes().unwrap(),
                sim.now,
            )
            .unwrap();
        sim.dev
            .send_alarm(
                AlarmPdu::Notification(notification(2)).to_bytes().unwrap(),
                sim.now,
            )
            .unwrap();
        sim.run(Duration::from_millis(10_000));
        assert_eq!(sim.sent_to_ctl, 4, "one send plus three retries");
        assert_eq!(
            sim.dev_events,
            vec![RtaEvent::Timeout { send_seq: 0xFFFF }],
            "exactly one timeout, no delivery"
        );
        assert_eq!(sim.now, start + Duration::from_millis(400));
        assert!(sim.ctl_got.is_empty());
        assert_eq!(sim.dev.queued(), 0);
        // The owner aborts the AR: ERR-RTA with AR alarm-send.cnf(-)
        sim.dev
            .abort(abort_reason::status(abort_reason::AR_ALARM_SEND_CNF_NEG));
        let err = sim.dev.poll_transmit().unwrap().pdu;
        assert_eq!(err.pdu_type, RtaPduType::Err);
        assert_eq!(err.var_part, vec![0xCF, 0x81, 0xFD, 0x08]);
        assert!(sim.dev.is_closed());
        assert_eq!(sim.dev.send_alarm(vec![1], sim.now), Err(SendError::Closed));
    }

    #[test]
    fn err_rta_reports_peer_abort_and_closes() {
        let (mut dev, mut ctl) = pair(3);
        let now = Instant::ZERO;
        ctl.abort(abort_reason::status(abort_reason::AR_RELEASE_IND_RECEIVED));
        let err = ctl.poll_transmit().unwrap().pdu;
        assert_eq!((err.send_seq, err.ack_seq), (0xFFFF, 0xFFFE));
        assert!(dev.handle(&err.to_bytes().unwrap(), now));
        assert_eq!(
            dev.poll_event(),
            Some(RtaEvent::PeerAbort(PnioStatus::new(0xCF, 0x81, 0xFD, 0x0F)))
        );
        assert!(dev.is_closed());
        assert!(!dev.handle(&err.to_bytes().unwrap(), now));
    }

    #[test]
    fn out_of_sequence_data_is_nacked_and_foreign_endpoints_ignored() {
        let (_, mut ctl) = pair(3);
        let now = Instant::ZERO;
        let bogus = RtaRepr::new(RtaPduType::Data, CTL_REF, DEV_REF, 0x0005, 0xFFFE, vec![]);
        ctl.handle(&bogus.to_bytes().unwrap(), now);
        let nack = ctl.poll_transmit().unwrap().pdu;
        assert_eq!(nack.pdu_type, RtaPduType::Nack);
        assert_eq!((nack.send_seq, nack.ack_seq), (0xFFFE, 0xFFFE));
        assert_eq!(
            ctl.poll_event(),
            Some(RtaEvent::SequenceError {
                received: 5,
                expected: 0xFFFF
            })
        );
        let foreign = RtaRepr::new(RtaPduType::Data, 0x7777, DEV_REF, 0xFFFF, 0xFFFE, vec![]);
        assert!(!ctl.handle(&foreign.to_bytes().unwrap(), now));
        assert!(ctl.poll_transmit().is_none());
        assert!(!ctl.handle(&[1, 2, 3], now));
    }

    #[test]
    fn duplicate_data_is_re_acked_not_re_delivered() {
        let (mut dev, mut ctl) = pair(3);
        let now = Instant::ZERO;
        dev.send_alarm(vec![0xAB], now).unwrap();
        let data = dev.poll_transmit().unwrap().pdu.to_bytes().unwrap();
        assert!(ctl.handle(&data, now));
        assert!(ctl.handle(&data, now));
        let acks: Vec<RtaRepr> = std::iter::from_fn(|| ctl.poll_transmit())
            .map(|t| t.pdu)
            .collect();
        assert_eq!(acks.len(), 2);
        assert!(acks
            .iter()
            .all(|a| a.pdu_type == RtaPduType::Ack && a.ack_seq == 0xFFFF));
        assert_eq!(ctl.poll_event(), Some(RtaEvent::Received(vec![0xAB])));
        assert_eq!(ctl.poll_event(), None);
        assert_eq!(ctl.stats().duplicates, 1);
        // the second ACK is harmless for the sender
        for a in &acks {
            dev.handle(&a.to_bytes().unwrap(), now);
        }
        assert_eq!(
            dev.poll_event(),
            Some(RtaEvent::Delivered { send_seq: 0xFFFF })
        );
        assert_eq!(dev.poll_event(), None);
    }

    #[test]
    fn queue_is_bounded() {
        let (mut dev, _) = pair(3);
        let now = Instant::ZERO;
        dev.send_alarm(vec![0], now).unwrap();
        for _ in 0..dev.config().max_queue {
            dev.send_alarm(vec![1], now).unwrap();
        }
        assert_eq!(dev.send_alarm(vec![2], now), Err(SendError::QueueFull));
    }
    #[test]
    fn alarm_endpoint_waits_for_alarm_ack_and_numbers_alarms() {
        let mut dev = AlarmEndpoint::new(
            RtaConfig::new(AlarmPriority::Low, DEV_REF, CTL_REF, 1, 3),
            false,
        );
        let mut ctl = AlarmEndpoint::new(
            RtaConfig::new(AlarmPriority::Low, CTL_REF, DEV_REF, 1, 3),
            true,
        );
        let mut now = Instant::from_millis(5);
        for i in 0..3 {
            let mut n = notification(0x7FF);
            n.priority = AlarmPriority::High; // overridden by the channel
            n.slot = i;
            dev.notify(n, now).unwrap();
        }
        let mut got = Vec::new();
        let mut acked = Vec::new();
        for _ in 0..50 {
            let mut moved = false;
            while let Some(tx) = dev.poll_transmit() {
                // Only one notification may be on the wire before its AlarmAck arrived.
                if tx.pdu.pdu_type == RtaPduType::Data {
                    assert_eq!(acked.len(), got.len(), "next alarm sent before AlarmAck");
                }
                ctl.handle(&tx.pdu.to_bytes().unwrap(), now);
                moved = true;
            }
            while let Some(tx) = ctl.poll_transmit() {
                dev.handle(&tx.pdu.to_bytes().unwrap(), now);
                moved = true;
            }
            while let Some(e) = ctl.poll_event() {
                let AlarmEvent::Notification(n) = e else {
                    panic!("controller event {e:?}")
                };
                got.push((n.slot, n.specifier.sequence_number(), n.priority));
            }
            while let Some(e) = dev.poll_event() {
                let AlarmEvent::Acknowledged {
                    notification,
                    status,
                } = e
                else {
                    panic!("device event {e:?}")
                };
                assert!(status.is_ok());
                acked.push(notification.slot);
            }
            if !moved {
                break;
            }
            now += Duration::from_millis(1);
        }
        assert_eq!(
            got,
            vec![
                (0, 0, AlarmPriority::Low),
                (1, 1, AlarmPriority::Low),
                (2, 2, AlarmPriority::Low)
            ]
        );
        assert_eq!(acked, vec![0, 1, 2]);
        assert!(dev.awaiting_ack().is_none());
    }

    #[test]
    fn alarm_endpoint_reports_garbage_and_unexpected_acks() {
        let mut dev = AlarmEndpoint::new(
            RtaConfig::new(AlarmPriority::Low, DEV_REF, CTL_REF, 1, 3),
            false,
        );
        let now = Instant::ZERO;
        let garbage = RtaRepr::new(
            RtaPduType::Data,
            DEV_REF,
            CTL_REF,
            0xFFFF,
            0xFFFE,
            vec![1, 2, 3],
        );
        dev.handle(&garbage.to_bytes().unwrap(), now);
        assert_eq!(
            dev.poll_event(),
            Some(AlarmEvent::ProtocolError("invalid alarm block"))
        );
        let ack = AlarmPdu::Ack(notification(3).ack(PnioStatus::OK))
            .to_bytes()
            .unwrap();
        let stray = RtaRepr::new(RtaPduType::Data, DEV_REF, CTL_REF, 0x0000, 0xFFFE, ack);
        dev.handle(&stray.to_bytes().unwrap(), now);
        assert_eq!(
            dev.poll_event(),
            Some(AlarmEvent::ProtocolError("unexpected AlarmAck"))
        );
        // both DATA PDUs were still transport-ACKed
        let acks = std::iter::from_fn(|| dev.poll_transmit())
            .filter(|t| t.pdu.pdu_type == RtaPduType::Ack)
            .count();
        assert_eq!(acks, 2);
    }
}

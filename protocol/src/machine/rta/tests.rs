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
            let (due, rest): (Vec<_>, Vec<_>) = self.wire.drain(..).partition(|w| w.0 <= self.now);
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

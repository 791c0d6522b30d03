//! The device's AlarmCR of an IO AR (IEC 61158-6-10 ALPMI/ALPMR over APMS/APMR): two RTA
//! channels (high and low priority) on the sans-IO [`RtaMachine`] (retransmission, sequence
//! numbers, ERR-RTA), wrapped in Ethernet frames towards the controller (VLAN priority 6 high
//! / 5 low, as the AlarmCR tag headers of the connect request normally ask). Sans-IO: the
//! shell (the daemon's `pn-cm` thread, the farm) feeds RTA frames and `now`, sends the frames
//! [`AlarmCr::poll`] returns and acts on the [`AlarmOutcome`]s.
//!
//! Diagnosis alarms (appear / disappear) go on the low-priority channel, as p-net sends
//! them (`pf_alarm.c`, `pf_alarm_send_diagnosis`: low priority for diagnosis/process alarms
//! unless the AlarmCR requests "priority" ... only process alarms use high).

use crate::machine::cmdev::EndCause;
use crate::machine::rta::{RtaConfig, RtaEvent, RtaMachine};
use crate::time::Instant;
use crate::wire::ethernet::{ethertype, EthernetRepr, MacAddr, VlanTag};
use crate::wire::pnio::alarm::{
    alarm_type, AlarmNotificationRepr, AlarmPdu, AlarmPriority, AlarmSpecifier,
};
use crate::wire::pnio::diagnosis::UserStructure;
use crate::wire::pnio::PnioStatus;
use crate::wire::Emit;

/// What happened on the AlarmCR (for the connection manager).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AlarmOutcome {
    /// The controller acknowledged one of our notifications (AlarmAck block).
    Acked {
        slot: u16,
        subslot: u16,
        alarm_type: u16,
        sequence: u16,
        ok: bool,
    },
    /// The controller sent us an alarm notification (acknowledged automatically).
    Received {
        alarm_type: u16,
        slot: u16,
        subslot: u16,
    },
    /// Retransmissions exhausted: the AR must be aborted (the device's own ERR-RTA reason).
    TransportFailed(String),
    /// The controller ended the AR with its ERR-RTA-PDU (this status).
    ControllerAborted(PnioStatus),
}

impl AlarmOutcome {
    /// The end of the AR this outcome means, if any: (reason in words, the ERR-RTA status to
    /// send or answer back, who ended it). The transport giving up is the device's fault
    /// (AR_ALARM_SEND_CNF_NEG); the controller's ERR-RTA is its own decision, answered with its
    /// own reason (as p-net does).
    pub fn ar_end(&self) -> Option<(String, PnioStatus, EndCause)> {
        use crate::wire::rta::abort_reason;
        match self {
            AlarmOutcome::TransportFailed(reason) => Some((
                reason.clone(),
                abort_reason::status(abort_reason::AR_ALARM_SEND_CNF_NEG),
                EndCause::Fault,
            )),
            AlarmOutcome::ControllerAborted(st) => Some((
                format!(
                    "the controller ended the AR with ERR-RTA {}",
                    abort_reason::status_text(*st)
                ),
                *st,
                EndCause::AbortedByController,
            )),
            _ => None,
        }
    }

    /// Of two ends in one poll, the one to report: the controller's own decision wins over a
    /// transport failure, else the first.
    pub fn first_end(
        current: Option<(String, PnioStatus, EndCause)>,
        next: Option<(String, PnioStatus, EndCause)>,
    ) -> Option<(String, PnioStatus, EndCause)> {
        match (current, next) {
            (Some(c), Some(n)) if n.2 == EndCause::AbortedByController && c.2 != n.2 => Some(n),
            (Some(c), _) => Some(c),
            (None, n) => n,
        }
    }
}

/// The AlarmCR of one AR.
pub struct AlarmCr {
    high: RtaMachine,
    low: RtaMachine,
    eth_high: EthernetRepr,
    eth_low: EthernetRepr,
    seq: u16,
    /// The controller's LocalAlarmReference: the AlarmSrcEndpoint of its RTA-PDUs.
    remote_ref: u16,
}

impl AlarmCr {
    /// `local_ref`: our LocalAlarmReference; `remote_ref`: the controller's.
    pub fn new(
        local_ref: u16,
        remote_ref: u16,
        timeout_factor: u16,
        retries: u16,
        own_mac: [u8; 6],
        peer_mac: [u8; 6],
    ) -> AlarmCr {
        let cfg = |p| {
            RtaConfig::new(
                p,
                local_ref,
                remote_ref,
                timeout_factor.max(1),
                retries.clamp(3, 15),
            )
        };
        let eth = |tag| EthernetRepr {
            dst: MacAddr(peer_mac),
            src: MacAddr(own_mac),
            vlan: Some(tag),
            ethertype: ethertype::PROFINET,
        };
        AlarmCr {
            high: RtaMachine::new(cfg(AlarmPriority::High)),
            low: RtaMachine::new(cfg(AlarmPriority::Low)),
            eth_high: eth(VlanTag::RT_ALARM_HIGH),
            eth_low: eth(VlanTag::RT_ALARM_LOW),
            seq: 0,
            remote_ref,
        }
    }

    fn next_seq(&mut self) -> u16 {
        let s = self.seq;
        self.seq = AlarmSpecifier::next_sequence_number(s);
        s
    }

    /// Queue a diagnosis alarm (appears / disappears) on `slot`/`subslot` whose submodule has
    /// `idents` (module, submodule ident) and whose diagnosis is `item` (the channel
    /// diagnosis with its Appears/Disappears specifier). `still_active`: other diagnosis
    /// remains on the submodule after this one (SubmoduleDiagnosisState). Returns the
    /// alarm's sequence number.
    #[allow(clippy::too_many_arguments)]
    pub fn send_diagnosis(
        &mut self,
        slot: u16,
        subslot: u16,
        idents: (u32, u32),
        appears: bool,
        still_active: bool,
        item: UserStructure,
        now: Instant,
    ) -> Result<u16, String> {
        let seq = self.next_seq();
        let n = AlarmNotificationRepr {
            priority: AlarmPriority::Low,
            alarm_type: if appears {
                alarm_type::DIAGNOSIS
            } else {
                alarm_type::DIAGNOSIS_DISAPPEARS
            },
            api: 0,
            slot,
            subslot,
            module_ident: idents.0,
            submodule_ident: idents.1,
            specifier: AlarmSpecifier::new(seq, true, false, still_active, still_active),
            item: Some(item),
        };
        let bytes = AlarmPdu::Notification(n)
            .to_bytes()
            .map_err(|e| format!("alarm encode: {e:?}"))?;
        self.low
            .send_alarm(bytes, now)
            .map_err(|e| format!("alarm queue: {e:?}"))?;
        Ok(seq)
    }

    /// Handle an RTA frame (`frame_id` 0xFC01/0xFE01, `pdu` = bytes after the FrameID).
    ///
    /// Our own alarm reference is the same for every AR, so the AlarmSrcEndpoint (bytes 2..4)
    /// is what tells this AR's RTA-PDUs from those of an earlier AR of the same controller
    /// (e.g. the ERR-RTA of an AR it aborted just before connecting again): PDUs from another
    /// source endpoint are ignored.
    pub fn handle(&mut self, frame_id: u16, pdu: &[u8], now: Instant) {
        if pdu.get(2..4) != Some(&self.remote_ref.to_be_bytes()[..]) {
            return;
        }
        let m = if frame_id == crate::wire::rta::FRAME_ID_ALARM_HIGH {
            &mut self.high
        } else {
            &mut self.low
        };
        m.handle(pdu, now);
    }

    /// Run timers; collect frames to send (complete Ethernet frames) and outcomes.
    pub fn poll(&mut self, now: Instant, frames: &mut Vec<Vec<u8>>, out: &mut Vec<AlarmOutcome>) {
        for (m, eth) in [
            (&mut self.high, &self.eth_high),
            (&mut self.low, &self.eth_low),
        ] {
            m.poll(now);
            while let Some(ev) = m.poll_event() {
                match ev {
                    RtaEvent::Received(block) => match AlarmPdu::parse(&block) {
                        Ok(AlarmPdu::Ack(a)) => out.push(AlarmOutcome::Acked {
                            slot: a.slot,
                            subslot: a.subslot,
                            alarm_type: a.alarm_type,
                            sequence: a.specifier.sequence_number(),
                            ok: a.status.is_ok(),
                        }),
                        Ok(AlarmPdu::Notification(n)) => {
                            // Acknowledge the controller's alarm positively.
                            if let Ok(b) = AlarmPdu::Ack(n.ack(PnioStatus::OK)).to_bytes() {
                                let _ = m.send_alarm(b, now);
                            }
                            out.push(AlarmOutcome::Received {
                                alarm_type: n.alarm_type,
                                slot: n.slot,
                                subslot: n.subslot,
                            });
                        }
                        Err(_) => {}
                    },
                    RtaEvent::Timeout { send_seq } => out.push(AlarmOutcome::TransportFailed(
                        format!("alarm transport: no acknowledgement for RTA sequence {send_seq}"),
                    )),
                    RtaEvent::PeerAbort(st) => out.push(AlarmOutcome::ControllerAborted(st)),
                    RtaEvent::Delivered { .. } | RtaEvent::SequenceError { .. } => {}
                }
            }
            while let Some(tx) = m.poll_transmit() {
                frames.push(eth.build(&tx.rt_payload()));
            }
        }
    }

    /// Next timer deadline of either channel.
    pub fn next_deadline(&self) -> Option<Instant> {
        match (self.high.next_deadline(), self.low.next_deadline()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The ERR-RTA-PDU that ends the AR, returning the frames to send. One PDU, on the
    /// low-priority channel, as p-net's `pf_alarm_apmx_close` sends it and as every device
    /// abort in the real captures arrives (ET200SP, VersaMax, p-net: Alarm Low). When the
    /// controller ended the AR with its own ERR-RTA, `status` is its reason, answered back.
    pub fn abort(&mut self, status: PnioStatus) -> Vec<Vec<u8>> {
        self.low.reply_to_peer_abort(status);
        self.low.abort(status);
        let mut frames = Vec::new();
        while let Some(tx) = self.low.poll_transmit() {
            frames.push(self.eth_low.build(&tx.rt_payload()));
        }
        frames
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::rta::{RtaPduType, RtaRepr, FRAME_ID_ALARM_LOW};

    const DEV: [u8; 6] = [2, 0, 0, 0, 0, 2];
    const CTL: [u8; 6] = [2, 0, 0, 0, 0, 1];

    fn diag() -> UserStructure {
        UserStructure::Other {
            usi: 0x1234,
            data: vec![1, 2],
        }
    }

    /// The controller's side of the low channel.
    fn controller() -> RtaMachine {
        RtaMachine::new(RtaConfig::new(AlarmPriority::Low, 7, 1, 1, 3))
    }

    fn poll(cr: &mut AlarmCr, now: Instant) -> (Vec<Vec<u8>>, Vec<AlarmOutcome>) {
        let (mut f, mut o) = (Vec::new(), Vec::new());
        cr.poll(now, &mut f, &mut o);
        (f, o)
    }

    /// The RT payload (after the FrameID) of a frame we sent on the low channel.
    fn low_pdu(frame: &[u8]) -> Vec<u8> {
        let (eth, payload) = EthernetRepr::parse_frame(frame).unwrap();
        assert_eq!(eth.vlan, Some(VlanTag::RT_ALARM_LOW));
        assert_eq!(eth.dst, MacAddr(CTL));
        assert_eq!(
            u16::from_be_bytes([payload[0], payload[1]]),
            FRAME_ID_ALARM_LOW
        );
        payload[2..].to_vec()
    }

    #[test]
    fn a_diagnosis_alarm_goes_out_on_the_low_channel_and_its_ack_is_reported() {
        let now = Instant::ZERO;
        let mut cr = AlarmCr::new(1, 7, 1, 3, DEV, CTL);
        let seq = cr
            .send_diagnosis(1, 1, (0x32, 0x132), true, true, diag(), now)
            .unwrap();
        let (frames, _) = poll(&mut cr, now);
        assert_eq!(frames.len(), 1);
        let mut ctl = controller();
        assert!(ctl.handle(&low_pdu(&frames[0]), now));
        let block = match ctl.poll_event() {
            Some(RtaEvent::Received(b)) => b,
            other => panic!("{other:?}"),
        };
        let n = match AlarmPdu::parse(&block).unwrap() {
            AlarmPdu::Notification(n) => n,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            (n.alarm_type, n.slot, n.subslot),
            (alarm_type::DIAGNOSIS, 1, 1)
        );
        assert_eq!(n.specifier.sequence_number(), seq);
        // The controller acknowledges: the device reports which alarm it was.
        ctl.send_alarm(
            AlarmPdu::Ack(n.ack(PnioStatus::OK)).to_bytes().unwrap(),
            now,
        )
        .unwrap();
        let mut acked = Vec::new();
        for _ in 0..4 {
            while let Some(tx) = ctl.poll_transmit() {
                cr.handle(FRAME_ID_ALARM_LOW, &tx.rt_payload()[2..], now);
            }
            let (frames, out) = poll(&mut cr, now);
            acked.extend(out);
            for f in frames {
                ctl.handle(&low_pdu(&f), now);
            }
        }
        assert!(
            acked.contains(&AlarmOutcome::Acked {
                slot: 1,
                subslot: 1,
                alarm_type: alarm_type::DIAGNOSIS,
                sequence: seq,
                ok: true
            }),
            "{acked:?}"
        );
    }

    #[test]
    fn pdus_of_another_alarm_endpoint_are_ignored() {
        let now = Instant::ZERO;
        let mut cr = AlarmCr::new(1, 7, 1, 3, DEV, CTL);
        // An ERR-RTA of an earlier AR of the same controller (its reference was 6).
        let mut old = RtaMachine::new(RtaConfig::new(AlarmPriority::Low, 6, 1, 1, 3));
        old.abort(PnioStatus::new(0xCF, 0x81, 0xFD, 0x0D));
        let tx = old.poll_transmit().unwrap();
        cr.handle(FRAME_ID_ALARM_LOW, &tx.rt_payload()[2..], now);
        let (_, out) = poll(&mut cr, now);
        assert!(out.is_empty(), "{out:?}");
    }

    #[test]
    fn abort_sends_one_err_rta_on_the_low_channel() {
        let mut cr = AlarmCr::new(1, 7, 1, 3, DEV, CTL);
        let st = PnioStatus::new(0xCF, 0x81, 0xFD, 0x05);
        let frames = cr.abort(st);
        assert_eq!(frames.len(), 1);
        let pdu = low_pdu(&frames[0]);
        let rta = RtaRepr::parse(&pdu).unwrap();
        assert_eq!(rta.dst_endpoint, 7);
        assert_eq!(rta.pdu_type, RtaPduType::Err);
        assert_eq!(&rta.var_part[..4], &[0xCF, 0x81, 0xFD, 0x05]);
    }
}

#[cfg(test)]
mod end_tests {
    use super::*;

    #[test]
    fn outcomes_that_end_the_ar_say_why_and_the_controllers_decision_wins() {
        let st = PnioStatus::new(0xCF, 0x81, 0xFD, 0x0D);
        let failed = AlarmOutcome::TransportFailed("no acknowledgement".into()).ar_end();
        let aborted = AlarmOutcome::ControllerAborted(st).ar_end();
        assert_eq!(failed.as_ref().unwrap().1.error_code2, 0x08);
        assert_eq!(failed.as_ref().unwrap().2, EndCause::Fault);
        let (reason, status, cause) = aborted.clone().unwrap();
        assert!(reason.starts_with("the controller ended the AR with ERR-RTA CF 81 FD 0D"));
        assert_eq!((status, cause), (st, EndCause::AbortedByController));
        let received = AlarmOutcome::Received {
            alarm_type: 1,
            slot: 1,
            subslot: 1,
        };
        assert!(received.ar_end().is_none());
        assert_eq!(
            AlarmOutcome::first_end(failed.clone(), aborted.clone()),
            aborted
        );
        assert_eq!(AlarmOutcome::first_end(aborted.clone(), failed), aborted);
        assert_eq!(AlarmOutcome::first_end(None, None), None);
    }
}

//! Alarms over the AlarmCR of an IO AR: two RTA channels (high and low priority) built on the
//! sans-IO `pn_protocol::machine::rta::RtaMachine` (retransmission, sequence numbers, ERR-RTA),
//! wrapped in Ethernet frames towards the controller (VLAN priority 6 high / 5 low, as the
//! AlarmCR tag headers of the connect request normally ask).
//!
//! Diagnosis alarms (appear / disappear) go on the low-priority channel, as p-net sends
//! them (`pf_alarm.c`, `pf_alarm_send_diagnosis`: low priority for diagnosis/process alarms
//! unless the AlarmCR requests "priority" ... only process alarms use high).

use pn_protocol::machine::rta::{RtaConfig, RtaEvent, RtaMachine};
use pn_protocol::time::Instant;
use pn_protocol::wire::ethernet::{ethertype, EthernetRepr, MacAddr, VlanTag};
use pn_protocol::wire::pnio::alarm::{
    alarm_type, AlarmNotificationRepr, AlarmPdu, AlarmPriority, AlarmSpecifier,
};
use pn_protocol::wire::pnio::diagnosis::Specifier;
use pn_protocol::wire::pnio::PnioStatus;

use crate::dataplane::DiagnosisEntry;

use super::records::channel_item;

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

    /// Queue a diagnosis alarm (appears / disappears) for `d`. `still_active`: other
    /// diagnosis remains on the submodule after this one (SubmoduleDiagnosisState).
    pub fn send_diagnosis(
        &mut self,
        d: &DiagnosisEntry,
        appears: bool,
        still_active: bool,
        idents: (u32, u32),
        now: Instant,
    ) -> Result<u16, String> {
        let seq = self.next_seq();
        let spec = if appears {
            Specifier::Appears
        } else {
            Specifier::Disappears
        };
        let n = AlarmNotificationRepr {
            priority: AlarmPriority::Low,
            alarm_type: if appears {
                alarm_type::DIAGNOSIS
            } else {
                alarm_type::DIAGNOSIS_DISAPPEARS
            },
            api: 0,
            slot: d.slot,
            subslot: d.subslot,
            module_ident: idents.0,
            submodule_ident: idents.1,
            specifier: AlarmSpecifier::new(seq, true, false, still_active, still_active),
            item: Some(channel_item(d, spec)),
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
        let m = if frame_id == pn_protocol::wire::rta::FRAME_ID_ALARM_HIGH {
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

//! The IO controller's end of an AR's AlarmCR (IEC 61158-6-10: ALPMR, the alarm receiver,
//! over the RTA machines APMR/APMS): two RTA channels (high and low priority) on the sans-IO
//! [`RtaMachine`], the alarm notifications they deliver decoded, each answered with an
//! AlarmAck on the channel it came on, and the frames towards the device (VLAN priority 6
//! high / 5 low). The device's end is [`crate::machine::alarm_cr::AlarmCr`].
//!
//! Sans-IO: the shell (pn-controller) feeds RTA frames and `now`, acknowledges the
//! notifications it is told about with [`AlarmReceiver::acknowledge`] (a shell injecting
//! faults may do so late or never), and sends the frames [`AlarmReceiver::poll_transmit`]
//! returns.

use crate::machine::rta::{RtaConfig, RtaEvent, RtaMachine, SendError};
use crate::time::Instant;
use crate::wire::ethernet::{ethertype, EthernetRepr, MacAddr, VlanTag};
use crate::wire::pnio::alarm::{AlarmNotificationRepr, AlarmPdu, AlarmPriority};
use crate::wire::pnio::PnioStatus;
use crate::wire::rta::{RtaPduType, FRAME_ID_ALARM_HIGH, FRAME_ID_ALARM_LOW};
use crate::wire::Emit;

/// What the alarm receiver reports to the shell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReceiverEvent {
    /// An alarm notification arrived (and was transport-acknowledged); the shell acknowledges
    /// it at the application level with [`AlarmReceiver::acknowledge`].
    Notification {
        priority: AlarmPriority,
        alarm: AlarmNotificationRepr,
    },
    /// The RTA data of a frame was no alarm block this receiver understands.
    Undecodable(String),
    /// The device ended the AR with ERR-RTA (its status, PNIO status of the abort reason).
    PeerAbort(PnioStatus),
    /// One of our RTA-DATA frames (an AlarmAck) was not acknowledged after the retries: the
    /// alarm transport failed, the AR ends.
    Timeout,
}

/// One frame to send, with what it carries (a shell injecting the "no transport
/// acknowledgement" fault drops the RTA-ACKs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReceiverFrame {
    pub frame: Vec<u8>,
    pub transport_ack: bool,
}

/// The two alarm channels of one AR, controller side.
#[derive(Debug)]
pub struct AlarmReceiver {
    high: RtaMachine,
    low: RtaMachine,
    /// Device and controller MAC addresses.
    device: MacAddr,
    controller: MacAddr,
}

impl AlarmReceiver {
    /// `local_ref`: the controller's AlarmCR reference; `device_ref`: the device's (from the
    /// Connect response); timeout factor (× 100 ms) and retries of the AlarmCR block.
    pub fn new(
        local_ref: u16,
        device_ref: u16,
        timeout_factor: u16,
        retries: u16,
        controller: MacAddr,
        device: MacAddr,
    ) -> AlarmReceiver {
        let mk = |p| {
            RtaMachine::new(RtaConfig::new(
                p,
                local_ref,
                device_ref,
                timeout_factor,
                retries,
            ))
        };
        AlarmReceiver {
            high: mk(AlarmPriority::High),
            low: mk(AlarmPriority::Low),
            device,
            controller,
        }
    }

    fn channel(&mut self, priority: AlarmPriority) -> &mut RtaMachine {
        match priority {
            AlarmPriority::High => &mut self.high,
            AlarmPriority::Low => &mut self.low,
        }
    }

    /// The channel of an alarm FrameID (`None`: not an alarm frame).
    pub fn priority_of(frame_id: u16) -> Option<AlarmPriority> {
        match frame_id {
            FRAME_ID_ALARM_HIGH => Some(AlarmPriority::High),
            FRAME_ID_ALARM_LOW => Some(AlarmPriority::Low),
            _ => None,
        }
    }

    /// An RTA PDU received on alarm FrameID `frame_id`; other FrameIDs are ignored.
    pub fn handle(&mut self, frame_id: u16, pdu: &[u8], now: Instant) {
        if let Some(p) = Self::priority_of(frame_id) {
            self.channel(p).handle(pdu, now);
        }
    }

    /// Answer `alarm` (received on `priority`) with an AlarmAck, status OK, on its channel.
    pub fn acknowledge(
        &mut self,
        priority: AlarmPriority,
        alarm: &AlarmNotificationRepr,
        now: Instant,
    ) -> Result<(), SendError> {
        // An AlarmAck block always fits; a failure to emit one would be a codec bug.
        let block = alarm
            .ack(PnioStatus::OK)
            .to_bytes()
            .map_err(|_| SendError::Closed)?;
        self.channel(priority).send_alarm(block, now)
    }

    /// End the AR from our side: one ERR-RTA with `status`, on the low channel (as the
    /// device's AlarmCR does).
    pub fn abort(&mut self, status: PnioStatus) {
        self.low.abort(status);
    }

    /// Run the retransmission timers; returns what happened since the last call.
    pub fn poll_events(&mut self, now: Instant, out: &mut Vec<ReceiverEvent>) {
        for p in [AlarmPriority::High, AlarmPriority::Low] {
            let m = self.channel(p);
            m.poll(now);
            while let Some(e) = m.poll_event() {
                match e {
                    RtaEvent::Received(var) => out.push(match AlarmPdu::parse(&var) {
                        Ok(AlarmPdu::Notification(alarm)) => {
                            ReceiverEvent::Notification { priority: p, alarm }
                        }
                        // The device does not acknowledge alarms of ours: there are none.
                        Ok(AlarmPdu::Ack(_)) => continue,
                        Err(e) => ReceiverEvent::Undecodable(e.to_string()),
                    }),
                    RtaEvent::PeerAbort(st) => out.push(ReceiverEvent::PeerAbort(st)),
                    RtaEvent::Timeout { .. } => out.push(ReceiverEvent::Timeout),
                    RtaEvent::Delivered { .. } | RtaEvent::SequenceError { .. } => {}
                }
            }
        }
    }

    /// The frames to send now, as complete Ethernet frames to the device.
    pub fn poll_transmit(&mut self, out: &mut Vec<ReceiverFrame>) {
        let (device, controller) = (self.device, self.controller);
        for (p, vlan) in [
            (AlarmPriority::High, VlanTag::RT_ALARM_HIGH),
            (AlarmPriority::Low, VlanTag::RT_ALARM_LOW),
        ] {
            while let Some(tx) = self.channel(p).poll_transmit() {
                let eth = EthernetRepr {
                    dst: device,
                    src: controller,
                    vlan: Some(vlan),
                    ethertype: ethertype::PROFINET,
                };
                out.push(ReceiverFrame {
                    frame: eth.build(&tx.rt_payload()),
                    transport_ack: tx.pdu.pdu_type == RtaPduType::Ack,
                });
            }
        }
    }

    /// The earliest retransmission deadline of either channel.
    pub fn next_deadline(&self) -> Option<Instant> {
        [self.high.next_deadline(), self.low.next_deadline()]
            .into_iter()
            .flatten()
            .min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::alarm_cr::{AlarmCr, AlarmOutcome};
    use crate::wire::pnio::diagnosis::UserStructure;

    const CTL: [u8; 6] = [2, 0, 0, 0, 0, 1];
    const DEV: [u8; 6] = [2, 0, 0, 0, 0, 2];

    /// Hand the frames of one side to the other: (frame id, RTA PDU) pairs.
    fn rta_of(frames: &[Vec<u8>]) -> Vec<(u16, Vec<u8>)> {
        frames
            .iter()
            .map(|f| {
                let (_, p) = EthernetRepr::parse_frame(f).expect("ethernet");
                (u16::from_be_bytes([p[0], p[1]]), p[2..].to_vec())
            })
            .collect()
    }

    fn receiver() -> AlarmReceiver {
        AlarmReceiver::new(1, 7, 1, 3, MacAddr(CTL), MacAddr(DEV))
    }

    fn device_with_alarm(now: Instant) -> (AlarmCr, Vec<Vec<u8>>) {
        let mut dev = AlarmCr::new(7, 1, 1, 3, DEV, CTL);
        let diag = UserStructure::Other {
            usi: 0x1234,
            data: vec![1, 2],
        };
        dev.send_diagnosis(1, 1, (0x32, 0x132), true, true, diag, now)
            .expect("diagnosis alarm");
        let (mut frames, mut outcomes) = (Vec::new(), Vec::new());
        dev.poll(now, &mut frames, &mut outcomes);
        (dev, frames)
    }

    #[test]
    fn a_device_diagnosis_alarm_is_decoded_acknowledged_and_acked_back() {
        let t0 = Instant::ZERO;
        let mut ctl = receiver();
        let (mut dev, dframes) = device_with_alarm(t0);
        assert_eq!(dframes.len(), 1);
        for (fid, pdu) in rta_of(&dframes) {
            assert_eq!(fid, FRAME_ID_ALARM_LOW, "diagnosis goes on the low channel");
            ctl.handle(fid, &pdu, t0);
        }
        let mut ev = Vec::new();
        ctl.poll_events(t0, &mut ev);
        let [ReceiverEvent::Notification { priority, alarm }] = &ev[..] else {
            panic!("{ev:?}");
        };
        assert_eq!(*priority, AlarmPriority::Low);
        assert_eq!((alarm.slot, alarm.subslot), (1, 1));
        ctl.acknowledge(*priority, alarm, t0).expect("ack");
        let mut cframes = Vec::new();
        ctl.poll_transmit(&mut cframes);
        // The transport acknowledgement of the notification and the AlarmAck (RTA-DATA).
        assert_eq!(cframes.iter().filter(|f| f.transport_ack).count(), 1);
        assert_eq!(cframes.iter().filter(|f| !f.transport_ack).count(), 1);
        let plain: Vec<Vec<u8>> = cframes.into_iter().map(|f| f.frame).collect();
        for (fid, pdu) in rta_of(&plain) {
            dev.handle(fid, &pdu, t0);
        }
        let (mut dframes, mut outcomes) = (Vec::new(), Vec::new());
        dev.poll(t0, &mut dframes, &mut outcomes);
        assert!(
            outcomes
                .iter()
                .any(|o| matches!(o, AlarmOutcome::Acked { .. })),
            "{outcomes:?}"
        );
    }

    #[test]
    fn an_unanswered_alarm_ack_ends_in_a_timeout_and_an_err_rta_is_reported() {
        let t0 = Instant::ZERO;
        let mut ctl = receiver();
        let (_dev, dframes) = device_with_alarm(t0);
        for (fid, pdu) in rta_of(&dframes) {
            ctl.handle(fid, &pdu, t0);
        }
        let mut ev = Vec::new();
        ctl.poll_events(t0, &mut ev);
        let ReceiverEvent::Notification { priority, alarm } = ev[0].clone() else {
            panic!("{ev:?}");
        };
        ctl.acknowledge(priority, &alarm, t0).unwrap();
        let mut frames = Vec::new();
        ctl.poll_transmit(&mut frames);
        // The device never answers: after the retries (timeout factor 1 = 100 ms, 3 retries)
        // the transport has failed.
        let mut ev = Vec::new();
        let mut t = t0;
        for _ in 0..10 {
            t += crate::time::Duration::from_millis(100);
            ctl.poll_events(t, &mut ev);
            ctl.poll_transmit(&mut frames);
        }
        assert!(ev.contains(&ReceiverEvent::Timeout), "{ev:?}");

        // An ERR-RTA of the device is reported with its status.
        let mut ctl = receiver();
        let st = crate::wire::rta::abort_reason::status(
            crate::wire::rta::abort_reason::AR_CONSUMER_DHT_EXPIRED,
        );
        let abort = dev_abort(st);
        for (fid, pdu) in rta_of(&abort) {
            ctl.handle(fid, &pdu, t0);
        }
        let mut ev = Vec::new();
        ctl.poll_events(t0, &mut ev);
        assert_eq!(ev, [ReceiverEvent::PeerAbort(st)]);
        assert_eq!(AlarmReceiver::priority_of(0x1234), None);
    }

    fn dev_abort(st: PnioStatus) -> Vec<Vec<u8>> {
        let mut dev = AlarmCr::new(7, 1, 1, 3, DEV, CTL);
        dev.abort(st)
    }
}

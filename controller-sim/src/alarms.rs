//! Alarm reception: the shell around the protocol crate's alarm receiver
//! (`pn_protocol::machine::alarm_receiver`, ALPMR: the two RTA channels, decoding, the
//! AlarmAck) with the acknowledgement faults, and the decoded alarm records the API shows.

use pn_protocol::wire::Emit;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use pn_protocol::machine::alarm_receiver::{AlarmReceiver, ReceiverEvent};
use pn_protocol::time::{Duration, Instant};

use crate::ar::{ArInner, ArState};
use crate::controller::{Event, Shared};
use crate::faults::AlarmAckFault;
use pn_protocol::wire::pnio::alarm::{alarm_type, AlarmNotificationRepr, AlarmPriority};
use pn_protocol::wire::pnio::diagnosis::{ChannelProperties, UserStructure};

/// The alarm channels of one AR: the protocol crate's receiver (ALPMR) and what this shell
/// keeps around it.
pub(crate) struct AlarmState {
    pub rx: AlarmReceiver,
    pub history: Vec<AlarmRecord>,
    /// Notifications whose AlarmAck the delay fault holds back: (due, channel, notification).
    pub delayed_acks: Vec<(Instant, AlarmPriority, AlarmNotificationRepr)>,
}

/// One received alarm, decoded.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AlarmRecord {
    pub priority: String,
    pub alarm_type: u16,
    pub alarm_type_name: &'static str,
    pub api: u32,
    pub slot: u16,
    pub subslot: u16,
    pub module_ident: u32,
    pub submodule_ident: u32,
    pub sequence_number: u16,
    pub usi: Option<u16>,
    /// Decoded diagnosis entries ("channel 4 error 0x0001 (short circuit) appears", ...).
    pub diagnosis: Vec<String>,
    /// The alarm item as hex (empty when there is none).
    pub data_hex: String,
}

/// Name of an AlarmType.
pub fn alarm_type_name(t: u16) -> &'static str {
    match t {
        alarm_type::DIAGNOSIS => "Diagnosis",
        alarm_type::PROCESS => "Process",
        alarm_type::PULL => "Pull",
        alarm_type::PLUG => "Plug",
        alarm_type::STATUS => "Status",
        alarm_type::UPDATE => "Update",
        alarm_type::REDUNDANCY => "Redundancy",
        alarm_type::CONTROLLED_BY_SUPERVISOR => "Controlled by supervisor",
        alarm_type::RELEASED => "Released",
        alarm_type::PLUG_WRONG_SUBMODULE => "Plug wrong submodule",
        alarm_type::RETURN_OF_SUBMODULE => "Return of submodule",
        alarm_type::DIAGNOSIS_DISAPPEARS => "Diagnosis disappears",
        alarm_type::PORT_DATA_CHANGE => "Port data change",
        alarm_type::PULL_MODULE => "Pull module",
        _ => "Other",
    }
}

impl AlarmRecord {
    pub fn from_notification(n: &AlarmNotificationRepr) -> AlarmRecord {
        let mut diagnosis = Vec::new();
        let mut usi = None;
        let mut data_hex = String::new();
        if let Some(item) = &n.item {
            usi = Some(item.usi());
            // The items without the two USI bytes in front of them.
            let bytes = item.to_bytes().unwrap_or_default();
            data_hex = hex::encode(bytes.get(2..).unwrap_or_default());
            diagnosis = describe(item);
        }
        AlarmRecord {
            priority: match n.priority {
                AlarmPriority::High => "high".into(),
                AlarmPriority::Low => "low".into(),
            },
            alarm_type: n.alarm_type,
            alarm_type_name: alarm_type_name(n.alarm_type),
            api: n.api,
            slot: n.slot,
            subslot: n.subslot,
            module_ident: n.module_ident,
            submodule_ident: n.submodule_ident,
            sequence_number: n.specifier.sequence_number(),
            usi,
            diagnosis,
            data_hex,
        }
    }
}

fn error_name(t: u16) -> &'static str {
    pn_protocol::wire::pnio::diagnosis::channel_error_type::name(t).unwrap_or("other")
}

fn channel(ch: u16, p: ChannelProperties, err: u16) -> String {
    let chs = if ch == 0x8000 {
        "submodule".to_string()
    } else {
        format!("channel {ch}")
    };
    format!(
        "{chs}: error {err:#06x} ({}), {:?}, {:?}, {:?}",
        error_name(err),
        p.specifier(),
        p.severity(),
        p.direction()
    )
}

/// Human-readable lines for a diagnosis user structure.
pub fn describe(u: &UserStructure) -> Vec<String> {
    match u {
        UserStructure::Channel(v) => v
            .iter()
            .map(|c| channel(c.channel_number, c.properties, c.error_type))
            .collect(),
        UserStructure::ExtChannel(v) => v
            .iter()
            .map(|c| {
                format!(
                    "{}, ext error {:#06x}, add value {:#x}",
                    channel(c.channel_number, c.properties, c.error_type),
                    c.ext_error_type,
                    c.ext_add_value
                )
            })
            .collect(),
        UserStructure::Qualified(v) => v
            .iter()
            .map(|c| {
                format!(
                    "{}, ext error {:#06x}, add value {:#x}, qualifier {:#x}",
                    channel(c.channel_number, c.properties, c.error_type),
                    c.ext_error_type,
                    c.ext_add_value,
                    c.qualifier
                )
            })
            .collect(),
        UserStructure::Other { usi, data } => {
            vec![format!("USI {usi:#06x}: {}", hex::encode(data))]
        }
    }
}

// ----------------------------------------------------------------------------------------
// The RTA shell: alarm frames to and from the RTA machines of each AR
// ----------------------------------------------------------------------------------------

impl Shared {
    pub(crate) fn on_alarm_frame(
        &self,
        ar: &Arc<ArInner>,
        frame_id: u16,
        pdu: &[u8],
        now: Instant,
    ) {
        let mut events = Vec::new();
        {
            let mut g = ar.alarm.lock().unwrap_or_else(|p| p.into_inner());
            let Some(st) = g.as_mut() else { return };
            st.rx.handle(frame_id, pdu, now);
            st.rx.poll_events(now, &mut events);
        }
        self.handle_alarm_events(ar, events, now);
        self.flush_alarm_tx(ar, now);
    }

    /// What the receiver reported, and the one decision left to this shell: when (and
    /// whether) to acknowledge, by the fault injection in force.
    pub(crate) fn handle_alarm_events(
        &self,
        ar: &Arc<ArInner>,
        events: Vec<ReceiverEvent>,
        now: Instant,
    ) {
        for e in events {
            match e {
                ReceiverEvent::Notification { priority, alarm } => {
                    ar.alarms_received.fetch_add(1, Ordering::Relaxed);
                    let rec = AlarmRecord::from_notification(&alarm);
                    tracing::info!(ar = ar.id, alarm = ?rec, "alarm received");
                    let fault = ar
                        .faults
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .alarm_ack;
                    {
                        let mut g = ar.alarm.lock().unwrap_or_else(|p| p.into_inner());
                        if let Some(st) = g.as_mut() {
                            st.history.push(rec.clone());
                            match fault {
                                AlarmAckFault::Normal => {
                                    let _ = st.rx.acknowledge(priority, &alarm, now);
                                }
                                AlarmAckFault::Delay(d) => {
                                    st.delayed_acks.push((
                                        now + Duration::from(d),
                                        priority,
                                        alarm,
                                    ));
                                }
                                AlarmAckFault::Never | AlarmAckFault::NoTransportAck => {}
                            }
                        }
                    }
                    self.emit(Event::Alarm {
                        ar: ar.id,
                        station: ar.model.station_name.clone(),
                        alarm: rec,
                    });
                }
                ReceiverEvent::Undecodable(e) => {
                    tracing::warn!(ar = ar.id, "undecodable alarm block: {e}")
                }
                ReceiverEvent::PeerAbort(st) => {
                    let text = pn_protocol::wire::rta::abort_reason::status_text(st);
                    self.emit(Event::DeviceAbort {
                        ar: ar.id,
                        station: ar.model.station_name.clone(),
                        status: text.clone(),
                    });
                    self.set_state(ar, ArState::Aborted(format!("device sent ERR-RTA {text}")));
                }
                ReceiverEvent::Timeout => {
                    self.set_state(ar, ArState::Aborted("alarm transport timeout".into()));
                }
            }
        }
    }

    pub(crate) fn flush_alarm_tx(&self, ar: &ArInner, now: Instant) {
        let mut out = Vec::new();
        {
            let mut g = ar.alarm.lock().unwrap_or_else(|p| p.into_inner());
            let Some(st) = g.as_mut() else { return };
            let no_tack = ar
                .faults
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .alarm_ack
                == AlarmAckFault::NoTransportAck;
            // Delayed AlarmAcks whose time has come.
            let (due, later): (Vec<_>, Vec<_>) = std::mem::take(&mut st.delayed_acks)
                .into_iter()
                .partition(|d| d.0 <= now);
            st.delayed_acks = later;
            for (_, priority, alarm) in due {
                let _ = st.rx.acknowledge(priority, &alarm, now);
            }
            st.rx.poll_transmit(&mut out);
            if no_tack {
                out.retain(|f| !f.transport_ack);
            }
        }
        for f in out {
            let _ = self.send_frame(&f.frame);
        }
    }

    pub(crate) fn poll_alarms(&self, now: Instant) {
        let ars = self.ars.read().unwrap_or_else(|p| p.into_inner()).clone();
        for ar in ars {
            let mut events = Vec::new();
            {
                let mut g = ar.alarm.lock().unwrap_or_else(|p| p.into_inner());
                if let Some(st) = g.as_mut() {
                    st.rx.poll_events(now, &mut events);
                }
            }
            self.handle_alarm_events(&ar, events, now);
            self.flush_alarm_tx(&ar, now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pn_protocol::wire::pnio::alarm::AlarmPdu;
    use pn_protocol::wire::rta::RtaRepr;

    #[test]
    fn decodes_real_diagnosis_alarm() {
        let f = pn_testkit::fixtures::all()
            .into_iter()
            .find(|f| f.name.contains("pniors-alarm-low-notif-diag-pnet"))
            .expect("fixture");
        let (eth, payload) =
            pn_protocol::wire::ethernet::EthernetRepr::parse_frame(&f.bytes).unwrap();
        assert_eq!(eth.ethertype, 0x8892);
        let rta = RtaRepr::parse(&payload[2..]).unwrap();
        let Some(Ok(AlarmPdu::Notification(n))) = rta.alarm() else {
            panic!("not a notification")
        };
        let r = AlarmRecord::from_notification(&n);
        assert_eq!(r.alarm_type_name, "Diagnosis");
        assert_eq!((r.slot, r.subslot), (1, 1));
        assert_eq!(r.usi, Some(0x8002));
        assert_eq!(r.diagnosis.len(), 1);
        assert!(
            r.diagnosis[0].starts_with("channel 4: error 0x0001 (short circuit)"),
            "{:?}",
            r.diagnosis
        );
    }
}

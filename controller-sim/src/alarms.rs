//! Alarm reception: the two RTA channels of an AR and decoded alarm records.

use pn_protocol::wire::Emit;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use pn_protocol::machine::rta::{RtaEvent, RtaMachine};
use pn_protocol::time::{Duration, Instant};
use pn_protocol::wire::ethernet::{self, EthernetRepr, VlanTag};
use pn_protocol::wire::field::Writer;
use pn_protocol::wire::pnio::alarm::AlarmPdu;
use pn_protocol::wire::pnio::PnioStatus;
use pn_protocol::wire::rta::{self as wrta, RtaPduType};

use crate::ar::{ArInner, ArState};
use crate::controller::{Event, Shared};
use crate::faults::AlarmAckFault;
use pn_protocol::wire::pnio::alarm::{alarm_type, AlarmNotificationRepr, AlarmPriority};
use pn_protocol::wire::pnio::diagnosis::{ChannelProperties, UserStructure};

/// RTA state of one AR.
pub(crate) struct AlarmState {
    pub high: RtaMachine,
    pub low: RtaMachine,
    pub history: Vec<AlarmRecord>,
    /// AlarmAcks held back by the delay fault: (due, frame id, AlarmAck block).
    pub delayed_acks: Vec<(Instant, u16, Vec<u8>)>,
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
            let m = if frame_id == wrta::FRAME_ID_ALARM_HIGH {
                &mut st.high
            } else {
                &mut st.low
            };
            m.handle(pdu, now);
            while let Some(e) = m.poll_event() {
                events.push((frame_id, e));
            }
        }
        self.handle_rta_events(ar, events, now);
        self.flush_alarm_tx(ar, now);
    }

    pub(crate) fn handle_rta_events(
        &self,
        ar: &Arc<ArInner>,
        events: Vec<(u16, RtaEvent)>,
        now: Instant,
    ) {
        for (fid, e) in events {
            match e {
                RtaEvent::Received(var) => match AlarmPdu::parse(&var) {
                    Ok(AlarmPdu::Notification(n)) => {
                        ar.alarms_received.fetch_add(1, Ordering::Relaxed);
                        let rec = AlarmRecord::from_notification(&n);
                        tracing::info!(ar = ar.id, alarm = ?rec, "alarm received");
                        let fault = ar
                            .faults
                            .lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .alarm_ack;
                        let ack = n.ack(PnioStatus::OK);
                        let mut w = Writer::new();
                        if ack.emit(&mut w).is_ok() {
                            let mut g = ar.alarm.lock().unwrap_or_else(|p| p.into_inner());
                            if let Some(st) = g.as_mut() {
                                st.history.push(rec.clone());
                                match fault {
                                    AlarmAckFault::Normal => {
                                        let m = if fid == wrta::FRAME_ID_ALARM_HIGH {
                                            &mut st.high
                                        } else {
                                            &mut st.low
                                        };
                                        let _ = m.send_alarm(w.into_inner(), now);
                                    }
                                    AlarmAckFault::Delay(d) => {
                                        st.delayed_acks.push((
                                            now + Duration::from(d),
                                            fid,
                                            w.into_inner(),
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
                    Ok(AlarmPdu::Ack(_)) => {}
                    Err(e) => tracing::warn!(ar = ar.id, "undecodable alarm block: {e}"),
                },
                RtaEvent::PeerAbort(st) => {
                    self.emit(Event::DeviceAbort {
                        ar: ar.id,
                        station: ar.model.station_name.clone(),
                        status: pn_protocol::wire::rta::abort_reason::status_text(st),
                    });
                    self.set_state(
                        ar,
                        ArState::Aborted(format!(
                            "device sent ERR-RTA {}",
                            pn_protocol::wire::rta::abort_reason::status_text(st)
                        )),
                    );
                }
                RtaEvent::Timeout { .. } => {
                    self.set_state(ar, ArState::Aborted("alarm transport timeout".into()));
                }
                RtaEvent::Delivered { .. } | RtaEvent::SequenceError { .. } => {}
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
            let mut i = 0;
            while i < st.delayed_acks.len() {
                if st.delayed_acks[i].0 <= now {
                    let (_, fid, b) = st.delayed_acks.remove(i);
                    let m = if fid == wrta::FRAME_ID_ALARM_HIGH {
                        &mut st.high
                    } else {
                        &mut st.low
                    };
                    let _ = m.send_alarm(b, now);
                } else {
                    i += 1;
                }
            }
            for m in [&mut st.high, &mut st.low] {
                m.poll(now);
                while let Some(tx) = m.poll_transmit() {
                    if no_tack && tx.pdu.pdu_type == RtaPduType::Ack {
                        continue;
                    }
                    out.push(tx);
                }
            }
        }
        for tx in out {
            let vlan = if tx.frame_id == wrta::FRAME_ID_ALARM_HIGH {
                VlanTag::RT_ALARM_HIGH
            } else {
                VlanTag::RT_ALARM_LOW
            };
            let eth = EthernetRepr {
                dst: ar.mac(),
                src: self.info.mac,
                vlan: Some(vlan),
                ethertype: ethernet::ethertype::PROFINET,
            };
            let f = eth.build(&tx.rt_payload());
            let _ = self.send_frame(&f);
        }
    }

    pub(crate) fn poll_alarms(&self, now: Instant) {
        let ars = self.ars.read().unwrap_or_else(|p| p.into_inner()).clone();
        for ar in ars {
            let mut events = Vec::new();
            {
                let mut g = ar.alarm.lock().unwrap_or_else(|p| p.into_inner());
                if let Some(st) = g.as_mut() {
                    for (fid, m) in [
                        (wrta::FRAME_ID_ALARM_HIGH, &mut st.high),
                        (wrta::FRAME_ID_ALARM_LOW, &mut st.low),
                    ] {
                        m.poll(now);
                        while let Some(e) = m.poll_event() {
                            events.push((fid, e));
                        }
                    }
                }
            }
            self.handle_rta_events(&ar, events, now);
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

//! Alarm notifications and acknowledgements carried in RTA frames, also as a machine-generated
//! exchange.

use crate::frames::*;
use pn_protocol::wire::pnio::alarm::{
    alarm_type, AlarmNotificationRepr, AlarmPdu, AlarmPriority, AlarmSpecifier,
};
use pn_protocol::wire::pnio::diagnosis::{
    channel_error_type, ChannelDiagnosis, ExtChannelDiagnosis, Specifier, UserStructure,
};
use pn_protocol::wire::pnio::PnioStatus;
use pn_protocol::wire::rta::{abort_reason, RtaPduType, RtaRepr};
use pn_protocol::wire::Emit;

fn diag_alarm(seq: u16, alarm_type_value: u16, spec: Specifier) -> AlarmNotificationRepr {
    AlarmNotificationRepr {
        priority: AlarmPriority::Low,
        alarm_type: alarm_type_value,
        api: 0,
        slot: 1,
        subslot: 1,
        module_ident: 0x30,
        submodule_ident: 0x130,
        specifier: AlarmSpecifier::new(
            seq,
            spec == Specifier::Appears,
            false,
            spec == Specifier::Appears,
            true,
        ),
        item: Some(UserStructure::Channel(vec![ChannelDiagnosis {
            channel_number: 4,
            properties: props(spec),
            error_type: channel_error_type::SHORT_CIRCUIT,
        }])),
    }
}

#[test]
fn alarm_notifications_in_data_rta() {
    if !pn_testkit::env::require_tshark() {
        return;
    }
    let appears = diag_alarm(1, alarm_type::DIAGNOSIS, Specifier::Appears);
    let disappears = diag_alarm(2, alarm_type::DIAGNOSIS_DISAPPEARS, Specifier::Disappears);
    let ext = AlarmNotificationRepr {
        item: Some(UserStructure::ExtChannel(vec![ExtChannelDiagnosis {
            channel_number: 4,
            properties: props(Specifier::Appears),
            error_type: channel_error_type::OVERTEMPERATURE,
            ext_error_type: 0,
            ext_add_value: 42,
        }])),
        ..diag_alarm(3, alarm_type::DIAGNOSIS, Specifier::Appears)
    };
    let process = AlarmNotificationRepr {
        priority: AlarmPriority::High,
        alarm_type: alarm_type::PROCESS,
        api: 0,
        slot: 2,
        subslot: 1,
        module_ident: 0x40,
        submodule_ident: 0x140,
        specifier: AlarmSpecifier::new(4, false, false, false, false),
        item: Some(UserStructure::Other {
            usi: 0x0010,
            data: vec![0xAA, 0xBB],
        }),
    };
    let cases = [
        (&appears, 0x0000u16, 0xFFFEu16),
        (&disappears, 0x0001, 0x0000),
        (&ext, 0x0002, 0x0001),
        (&process, 0xFFFF, 0xFFFE),
    ];
    let frames: Vec<Vec<u8>> = cases
        .iter()
        .enumerate()
        .map(|(i, (n, s, a))| {
            let pdu = RtaRepr::new(
                RtaPduType::Data,
                0x0002,
                0x0001,
                *s,
                *a,
                AlarmPdu::Notification((*n).clone()).to_bytes().unwrap(),
            );
            rta_frame(n.priority, &pdu, i != 1)
        })
        .collect();
    let p = dissect(&frames);
    for (pkt, (n, s, a)) in p.iter().zip(cases.iter()) {
        assert_eq!(pkt.uint("pn_io.alarm_dst_endpoint"), 2);
        assert_eq!(pkt.uint("pn_io.alarm_src_endpoint"), 1);
        assert_eq!(pkt.uint("pn_io.pdu_type.type"), 1);
        assert_eq!(pkt.uint("pn_io.pdu_type.version"), 1);
        assert_eq!(pkt.uint("pn_io.window_size"), 1);
        assert_eq!(pkt.uint("pn_io.tack"), 1);
        assert_eq!(pkt.uint("pn_io.send_seq_num"), u64::from(*s));
        assert_eq!(pkt.uint("pn_io.ack_seq_num"), u64::from(*a));
        let len = AlarmPdu::Notification((*n).clone()).buffer_len();
        assert_eq!(pkt.uint("pn_io.var_part_len"), len as u64);
        let bt = match n.priority {
            AlarmPriority::High => 1,
            AlarmPriority::Low => 2,
        };
        assert_eq!(pkt.uint("pn_io.block_type"), bt);
        assert_eq!(pkt.uint("pn_io.alarm_type"), u64::from(n.alarm_type));
        assert_eq!(pkt.uint("pn_io.slot_nr"), u64::from(n.slot));
        assert_eq!(pkt.uint("pn_io.subslot_nr"), u64::from(n.subslot));
        assert_eq!(
            pkt.uint("pn_io.module_ident_number"),
            u64::from(n.module_ident)
        );
        assert_eq!(
            pkt.uint("pn_io.submodule_ident_number"),
            u64::from(n.submodule_ident)
        );
        let spec = n.specifier;
        assert_eq!(
            pkt.uint("pn_io.alarm_specifier.sequence") & 0x7FF,
            u64::from(spec.sequence_number())
        );
        assert_eq!(
            pkt.uint("pn_io.alarm_specifier.channel") != 0,
            spec.channel_diagnosis()
        );
        assert_eq!(
            pkt.uint("pn_io.alarm_specifier.ardiagnosis") != 0,
            spec.ar_diagnosis_state()
        );
        assert_eq!(
            pkt.uint("pn_io.user_structure_identifier"),
            u64::from(n.item.as_ref().unwrap().usi())
        );
    }
    assert!(p[0].protocols().contains("vlan"));
    assert!(!p[1].protocols().contains("vlan"));
    assert_eq!(p[0].uint("pn_io.channel_number"), 4);
    assert_eq!(p[0].uint("pn_io.channel_properties.specifier"), 1);
    assert_eq!(p[0].uint("pn_io.channel_error_type"), 1);
    assert_eq!(p[1].uint("pn_io.channel_properties.specifier"), 2);
    assert_eq!(p[2].uint("pn_io.channel_error_type"), 5);
    assert_eq!(p[2].uint("pn_io.ext_channel_add_value"), 42);
}

#[test]
fn ack_nack_err_and_alarm_ack_rta() {
    if !pn_testkit::env::require_tshark() {
        return;
    }
    let n = diag_alarm(7, alarm_type::DIAGNOSIS, Specifier::Appears);
    let ack_block = AlarmPdu::Ack(n.ack(PnioStatus::OK)).to_bytes().unwrap();
    let pdus = [
        RtaRepr::new(RtaPduType::Ack, 1, 2, 0xFFFE, 0xFFFF, vec![]),
        RtaRepr::new(RtaPduType::Nack, 1, 2, 0xFFFE, 0xFFFE, vec![]),
        RtaRepr::err(
            1,
            2,
            0x0006,
            0x0005,
            abort_reason::status(abort_reason::AR_CONSUMER_DHT_EXPIRED),
        ),
        RtaRepr::new(RtaPduType::Data, 1, 2, 0xFFFF, 0xFFFF, ack_block.clone()),
    ];
    let frames: Vec<Vec<u8>> = pdus
        .iter()
        .map(|r| rta_frame(AlarmPriority::Low, r, true))
        .collect();
    let p = dissect(&frames);
    for (pkt, r) in p.iter().zip(pdus.iter()) {
        assert_eq!(
            pkt.uint("pn_io.pdu_type.type"),
            u64::from(r.pdu_type.nibble())
        );
        assert_eq!(pkt.uint("pn_io.tack"), u64::from(r.tack));
        assert_eq!(pkt.uint("pn_io.send_seq_num"), u64::from(r.send_seq));
        assert_eq!(pkt.uint("pn_io.ack_seq_num"), u64::from(r.ack_seq));
        assert_eq!(pkt.uint("pn_io.var_part_len"), r.var_part.len() as u64);
        assert_eq!(pkt.uint("pn_io.alarm_dst_endpoint"), 1);
    }
    assert_eq!(p[0].uint("pn_io.tack"), 0);
    assert_eq!(p[2].uint("pn_io.error_code"), 0xCF);
    assert_eq!(p[2].uint("pn_io.error_decode"), 0x81);
    assert_eq!(p[2].uint("pn_io.error_code1"), 0xFD);
    assert_eq!(p[2].uint("pn_io.error_code2"), 5);
    assert_eq!(p[3].uint("pn_io.block_type"), 0x8002);
    assert_eq!(p[3].uint("pn_io.alarm_type"), 1);
    assert_eq!(p[3].uint("pn_io.alarm_specifier.sequence") & 0x7FF, 7);
    assert_eq!(p[3].uint("pn_io.error_code"), 0);
    assert_eq!(ack_block.len(), 22);
}

/// The frames of a simulated alarm exchange between a device-side and a controller-side
/// [`AlarmEndpoint`] (notification, transport ACK, AlarmAck, transport ACK, second
/// notification, ..., ERR-RTA) all dissect cleanly with the encoded values.
#[test]
fn machine_generated_alarm_exchange() {
    use pn_protocol::machine::rta::{AlarmEndpoint, AlarmEvent, RtaConfig};
    use pn_protocol::time::{Duration, Instant};
    if !pn_testkit::env::require_tshark() {
        return;
    }
    let mut dev = AlarmEndpoint::new(RtaConfig::new(AlarmPriority::Low, 1, 0x8001, 1, 3), false);
    let mut ctl = AlarmEndpoint::new(RtaConfig::new(AlarmPriority::Low, 0x8001, 1, 1, 3), true);
    let mut now = Instant::ZERO;
    dev.notify(
        diag_alarm(0, alarm_type::DIAGNOSIS, Specifier::Appears),
        now,
    )
    .unwrap();
    dev.notify(
        diag_alarm(0, alarm_type::DIAGNOSIS_DISAPPEARS, Specifier::Disappears),
        now,
    )
    .unwrap();
    let mut sent: Vec<(bool, RtaRepr)> = Vec::new();
    loop {
        let mut moved = false;
        while let Some(tx) = dev.poll_transmit() {
            ctl.handle(&tx.pdu.to_bytes().unwrap(), now);
            sent.push((true, tx.pdu));
            moved = true;
        }
        while let Some(tx) = ctl.poll_transmit() {
            dev.handle(&tx.pdu.to_bytes().unwrap(), now);
            sent.push((false, tx.pdu));
            moved = true;
        }
        if !moved {
            break;
        }
        now += Duration::from_millis(1);
    }
    let acked = std::iter::from_fn(|| dev.poll_event())
        .filter(|e| matches!(e, AlarmEvent::Acknowledged { .. }))
        .count();
    assert_eq!(acked, 2);
    dev.abort(abort_reason::status(abort_reason::AR_REMOVED));
    sent.push((true, dev.poll_transmit().unwrap().pdu));
    // DATA, ACK, DATA(AlarmAck), ACK, twice, then ERR
    let kinds: Vec<u8> = sent.iter().map(|(_, r)| r.pdu_type.nibble()).collect();
    assert_eq!(kinds, vec![1, 3, 1, 3, 1, 3, 1, 3, 4]);
    let frames: Vec<Vec<u8>> = sent
        .iter()
        .map(|(from_dev, r)| {
            let mut f = rta_frame(AlarmPriority::Low, r, true);
            if !from_dev {
                f[0..6].copy_from_slice(&DEV_MAC);
                f[6..12].copy_from_slice(&CTL_MAC);
            }
            f
        })
        .collect();
    let p = dissect(&frames);
    for (pkt, (from_dev, r)) in p.iter().zip(sent.iter()) {
        assert_eq!(
            pkt.uint("pn_io.pdu_type.type"),
            u64::from(r.pdu_type.nibble())
        );
        assert_eq!(pkt.uint("pn_io.send_seq_num"), u64::from(r.send_seq));
        assert_eq!(pkt.uint("pn_io.ack_seq_num"), u64::from(r.ack_seq));
        let (dst, src) = if *from_dev { (0x8001, 1) } else { (1, 0x8001) };
        assert_eq!(pkt.uint("pn_io.alarm_dst_endpoint"), dst);
        assert_eq!(pkt.uint("pn_io.alarm_src_endpoint"), src);
    }
    // notification, AlarmAck, notification, AlarmAck
    assert_eq!(p[0].uint("pn_io.block_type"), 0x0002);
    assert_eq!(p[2].uint("pn_io.block_type"), 0x8002);
    assert_eq!(p[4].uint("pn_io.alarm_type"), 0x000C);
    assert_eq!(p[4].uint("pn_io.alarm_specifier.sequence") & 0x7FF, 1);
    assert_eq!(p[8].uint("pn_io.error_code2"), 0x11);
    let seqs: Vec<(u16, u16)> = sent.iter().map(|(_, r)| (r.send_seq, r.ack_seq)).collect();
    assert_eq!(
        seqs,
        vec![
            (0xFFFF, 0xFFFE),
            (0xFFFE, 0xFFFF),
            (0xFFFF, 0xFFFF),
            (0xFFFF, 0xFFFF),
            (0x0000, 0xFFFF),
            (0xFFFF, 0x0000),
            (0x0000, 0x0000),
            (0x0000, 0x0000),
            (0x0001, 0x0000),
        ]
    );
}

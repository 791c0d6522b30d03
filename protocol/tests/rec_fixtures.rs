//! Every real captured frame that carries a record Read / Read Implicit / Write request or
//! response, or an alarm (RTA-PDU of any type), parsed with the `rec` codecs after the
//! Ethernet / IP / UDP / DCE/RPC / NDR (or Ethernet / FrameID) layers, re-emitted byte-exactly,
//! and checked against the values the capture is known to hold (see
//! `shared/fixtures/real-frames/INDEX.md`).

use pn_protocol::machine::rpc_reassembly::{Reassembler, ReassemblyConfig};
use pn_protocol::time::Instant;
use pn_protocol::wire::ip::UdpFrame;
use pn_protocol::wire::pnio::alarm::{alarm_type, AlarmPdu, AlarmPriority};
use pn_protocol::wire::pnio::diagnosis::{
    parse_diagnosis_record, ChannelProperties, ExtChannelDiagnosis, Specifier, UserStructure,
};
use pn_protocol::wire::pnio::im::{self, FilterKind, ImRecord};
use pn_protocol::wire::pnio::record::{index, RecordPdu, WriteBody};
use pn_protocol::wire::pnio::PnioStatus;
use pn_protocol::wire::rpc::{opnum, PacketType, PnioRequest, PnioResponse, RpcPacket};
use pn_protocol::wire::rt::parse_rt_frame;
use pn_protocol::wire::rta::{abort_reason, RtaPduType, RtaRepr};
use pn_protocol::wire::Emit;
use pn_testkit::fixtures::{self, RealFrame};
use std::collections::BTreeMap;

/// A record PDU taken out of a frame, with the RPC context.
struct RecordFrame {
    opnum: u16,
    response: bool,
    status: PnioStatus,
    pdu: RecordPdu,
}

/// The NDR data of a PNIO record call in a DCE/RPC packet, or None if it is not one.
fn record_data(pkt: &RpcPacket) -> Option<(u16, bool, PnioStatus, Vec<u8>)> {
    let h = &pkt.header;
    if ![opnum::READ, opnum::WRITE, opnum::READ_IMPLICIT].contains(&h.opnum) {
        return None;
    }
    match h.packet_type {
        PacketType::Request => {
            let r = PnioRequest::parse(&pkt.body, h.drep).expect("NDR request");
            Some((h.opnum, false, PnioStatus::OK, r.data))
        }
        PacketType::Response => {
            let r = PnioResponse::parse(&pkt.body, h.drep).expect("NDR response");
            Some((h.opnum, true, r.status, r.data))
        }
        _ => None,
    }
}

/// Parse and re-emit; the re-emitted bytes must equal the captured NDR data.
fn check_record(
    name: &str,
    op: u16,
    response: bool,
    status: PnioStatus,
    data: &[u8],
) -> RecordFrame {
    let pdu = RecordPdu::parse(data).unwrap_or_else(|e| panic!("{name}: record PDU: {e}"));
    assert_eq!(
        pdu.to_bytes().unwrap(),
        data,
        "{name}: re-emitted record bytes differ"
    );
    RecordFrame {
        opnum: op,
        response,
        status,
        pdu,
    }
}

/// All record frames of the fixture set by name; fragmented requests are reassembled with
/// helper "cm"'s reassembler and stored under the name of the last fragment.
fn record_frames(frames: &[RealFrame]) -> BTreeMap<String, RecordFrame> {
    let mut out = BTreeMap::new();
    let mut reasm = Reassembler::new(ReassemblyConfig::default());
    for f in frames {
        let Ok(udp) = UdpFrame::parse(&f.bytes) else {
            continue;
        };
        let Ok(pkt) = RpcPacket::parse(udp.payload) else {
            continue;
        };
        let pkt = if pkt.header.is_fragment() {
            let got = reasm
                .receive(Instant::ZERO, &pkt)
                .unwrap_or_else(|e| panic!("{}: reassembly: {e}", f.name));
            match got.message {
                Some(m) => RpcPacket::new(m.header, m.body),
                None => continue,
            }
        } else {
            pkt
        };
        if let Some((op, response, status, data)) = record_data(&pkt) {
            out.insert(
                f.name.clone(),
                check_record(&f.name, op, response, status, &data),
            );
        }
    }
    out
}

fn all_frames() -> Vec<RealFrame> {
    let v = fixtures::all();
    assert!(!v.is_empty(), "no fixtures found");
    v
}

#[test]
fn every_record_frame_parses_and_round_trips() {
    let frames = all_frames();
    let recs = record_frames(&frames);
    // Every fixture whose name says it is a read or write must have been recognised.
    for f in &frames {
        let n = &f.name;
        let is_rw = (n.contains("-read-") || n.contains("-write-")) && !n.contains("frag0");
        if is_rw {
            assert!(
                recs.contains_key(n),
                "{n}: not recognised as a record frame"
            );
        }
    }
    assert!(recs.len() >= 10, "only {} record frames", recs.len());
}

#[test]
fn im0_read_request_and_responses() {
    let recs = record_frames(&all_frames());
    if let Some(r) = recs.get("pniors-im0-read-req-if-s7.hex") {
        let RecordPdu::ReadReq(q) = &r.pdu else {
            panic!("not a read request")
        };
        assert_eq!((r.opnum, r.response), (opnum::READ, false));
        assert_eq!(q.header.seq_number, 5);
        assert_eq!(q.header.address.index, index::IM0);
        assert_eq!(
            (q.header.address.slot, q.header.address.subslot),
            (0, 0x8000)
        );
        assert_eq!(q.header.record_data_length, 32768);
        assert!(!q.header.is_implicit());
    } else {
        panic!("fixture pniors-im0-read-req-if-s7.hex missing");
    }
    for (name, subslot) in [
        ("pniors-im0-read-res-dap-pnet.hex", 1u16),
        ("pniors-im0-read-res-if-pnet.hex", 0x8000),
    ] {
        let r = recs.get(name).unwrap_or_else(|| panic!("{name} missing"));
        assert!(r.response && r.status.is_ok());
        let RecordPdu::ReadRes(res) = &r.pdu else {
            panic!("{name}: not a read response")
        };
        assert_eq!(res.header.address.index, index::IM0);
        assert_eq!(res.header.address.subslot, subslot);
        assert_eq!(res.header.record_data_length, 60);
        let ImRecord::Im0(m) = ImRecord::parse(&res.data).unwrap() else {
            panic!("{name}: not I&M0")
        };
        assert_eq!(m.vendor_id, 0x0493);
        assert_eq!(m.order_id, "12345 Abcdefghijk");
        assert_eq!(m.serial_number, "007");
        assert_eq!(m.hardware_revision, 3);
        assert_eq!(m.software_revision.prefix, b'V');
        assert_eq!(
            (
                m.software_revision.functional_enhancement,
                m.software_revision.bug_fix,
                m.software_revision.internal_change
            ),
            (0, 2, 0)
        );
        assert_eq!((m.profile_id, m.profile_specific_type), (0x1234, 0x5678));
        assert_eq!(m.supported, 0x000E);
        assert_eq!(ImRecord::Im0(m).to_bytes().unwrap(), res.data);
    }
}

#[test]
fn implicit_reads_im0_filter_and_diagnosis() {
    let recs = record_frames(&all_frames());
    let r = &recs["icsnpp-read-implicit-im0filter-req.hex"];
    assert_eq!(r.opnum, opnum::READ_IMPLICIT);
    let RecordPdu::ReadReq(q) = &r.pdu else {
        panic!()
    };
    assert!(q.header.is_implicit());
    assert_eq!(q.header.address.index, index::IM0_FILTER_DATA);
    assert_eq!(q.header.seq_number, 10);

    let r = &recs["icsnpp-read-implicit-im0filter-res.hex"];
    let RecordPdu::ReadRes(res) = &r.pdu else {
        panic!()
    };
    let filters = im::parse_filter_record(&res.data).unwrap();
    let kinds: Vec<FilterKind> = filters.iter().map(|f| f.kind).collect();
    assert_eq!(
        kinds,
        vec![
            FilterKind::Submodule,
            FilterKind::Module,
            FilterKind::Device
        ]
    );
    let m = &filters[0].apis[0].modules;
    assert_eq!(m.len(), 2);
    assert_eq!(m[0].submodules[1].subslot, 3);
    assert_eq!(m[0].submodules[1].submodule_ident, 0xFFFF_010A);
    assert_eq!(m[1].module_ident, 0xFFFF_8140);
    assert_eq!(filters.to_bytes().unwrap(), res.data);

    let r = &recs["icsnpp-read-implicit-diag-req-siemens.hex"];
    let RecordPdu::ReadReq(q) = &r.pdu else {
        panic!()
    };
    assert_eq!(q.header.address.index, index::SUB_DIAGNOSIS_DMQS);
    assert_eq!(q.header.record_data_length, 10000);

    let r = &recs["icsnpp-read-implicit-diag-res-siemens.hex"];
    let RecordPdu::ReadRes(res) = &r.pdu else {
        panic!()
    };
    let d = parse_diagnosis_record(&res.data).unwrap();
    assert_eq!(d.len(), 1);
    assert_eq!(
        (d[0].slot, d[0].subslot, d[0].channel_number),
        (0, 0x8002, 0x8000)
    );
    let UserStructure::ExtChannel(items) = &d[0].items else {
        panic!("not ExtChannelDiagnosis")
    };
    assert_eq!(
        (items[0].error_type, items[0].ext_error_type),
        (0x8001, 0x8000)
    );
}

#[test]
fn pdreal_data_read_is_kept_opaque() {
    let recs = record_frames(&all_frames());
    let r = &recs["icsnpp-read-pdrealdata-res-versamax.hex"];
    let RecordPdu::ReadRes(res) = &r.pdu else {
        panic!()
    };
    assert_eq!(res.header.address.index, index::PD_REAL_DATA);
    assert_eq!(res.data.len(), 224);
    // MultipleBlockHeader (0x0400) blocks
    let types: Vec<u16> = res.blocks().map(|b| b.unwrap().block_type()).collect();
    assert!(types.iter().all(|&t| t == 0x0400), "{types:x?}");
}

#[test]
fn writes_single_multiple_reassembled_and_errors() {
    let recs = record_frames(&all_frames());

    let r = &recs["s7init2005-write-req-s7.hex"];
    let RecordPdu::WriteReq(w) = &r.pdu else {
        panic!()
    };
    assert!(!w.is_multiple());
    assert_eq!(w.header.address.index, 0x0001);
    assert_eq!(w.header.record_data_length, 7);

    let r = &recs["mehner-write-req-s7.hex"];
    let RecordPdu::WriteReq(w) = &r.pdu else {
        panic!()
    };
    let WriteBody::Multiple(records) = &w.body else {
        panic!("not a MultipleWrite")
    };
    assert_eq!(w.header.record_data_length, 1070);
    assert_eq!(w.header.address.api, 0xFFFF_FFFF);
    assert_eq!(records.len(), 13);
    let idx: Vec<u16> = records.iter().map(|r| r.header.address.index).collect();
    assert_eq!(&idx[..4], &[0x0002, 0x8051, 0x8052, 0x8071]);
    assert_eq!(records[12].data.len(), 6);

    // Fragmented MultipleWrite (reassembled from frag0 + frag1).
    let r = &recs["icsnpp-write-req-frag1-irt.hex"];
    let RecordPdu::WriteReq(w) = &r.pdu else {
        panic!()
    };
    let WriteBody::Multiple(records) = &w.body else {
        panic!("not a MultipleWrite")
    };
    assert!(records.len() >= 5, "{} records", records.len());

    let r = &recs["icsnpp-write-res-irt.hex"];
    let RecordPdu::WriteRes(res) = &r.pdu else {
        panic!()
    };
    assert_eq!(res.header.address.index, index::MULTIPLE_WRITE);
    assert_eq!(res.header.record_data_length, 832);
    assert!(res.records.iter().all(|h| h.status.is_ok()));
    assert_eq!(res.records.len(), records.len());

    let r = &recs["pniors-write-res-pnet.hex"];
    let RecordPdu::WriteRes(res) = &r.pdu else {
        panic!()
    };
    assert_eq!(res.header.record_data_length, 0);
    assert_eq!(res.records.len(), 4);
    assert_eq!(res.records[0].address.index, 0x8071);

    let r = &recs["icsnpp-write-res-versamax.hex"];
    let RecordPdu::WriteRes(res) = &r.pdu else {
        panic!()
    };
    assert_eq!(
        (res.header.address.api, res.header.address.subslot),
        (0, 1),
        "VersaMax answers MultipleWrite with API 0 slot 0/1"
    );
    assert_eq!(res.records.len(), 3);

    let r = &recs["mehner-write-res-err-et200sp.hex"];
    let RecordPdu::WriteRes(res) = &r.pdu else {
        panic!()
    };
    assert_eq!(r.status, PnioStatus::new(0xDF, 0x81, 0x40, 0x05));
    assert_eq!(res.header.status, PnioStatus::new(0xDF, 0x81, 0x40, 0x05));
    assert!(res.records.is_empty());
    assert_eq!(res.overall_status(), r.status);

    let r = &recs["s7init2005-write-res-im151.hex"];
    let RecordPdu::WriteRes(res) = &r.pdu else {
        panic!()
    };
    assert_eq!(res.header.record_data_length, 7);
    assert!(res.overall_status().is_ok());
}

/// RTA part (after the FrameID) of every alarm fixture.
fn alarm_frames(frames: &[RealFrame]) -> BTreeMap<String, (u16, Vec<u8>)> {
    let mut out = BTreeMap::new();
    for f in frames {
        let Ok((_eth, id, rest)) = parse_rt_frame(&f.bytes) else {
            continue;
        };
        if id.0 == 0xFC01 || id.0 == 0xFE01 {
            out.insert(f.name.clone(), (id.0, rest.to_vec()));
        }
    }
    out
}

#[test]
fn every_alarm_frame_parses_and_round_trips() {
    let frames = all_frames();
    let alarms = alarm_frames(&frames);
    let named = frames.iter().filter(|f| f.name.contains("-alarm-")).count();
    assert_eq!(
        alarms.len(),
        named,
        "every *-alarm-* fixture is an RTA frame"
    );
    assert!(named >= 15);
    for (name, (frame_id, rest)) in &alarms {
        let r = RtaRepr::parse(rest).unwrap_or_else(|e| panic!("{name}: {e}"));
        let n = r.buffer_len();
        assert_eq!(r.to_bytes().unwrap(), rest[..n].to_vec(), "{name}: re-emit");
        assert_eq!(r.version, 1, "{name}");
        assert_eq!(r.window_size, 1, "{name}");
        assert_eq!(r.tack, r.pdu_type == RtaPduType::Data, "{name}");
        match r.pdu_type {
            RtaPduType::Data => {
                let a = r.alarm().unwrap().unwrap_or_else(|e| panic!("{name}: {e}"));
                assert_eq!(a.to_bytes().unwrap(), r.var_part, "{name}: alarm re-emit");
                let want = if *frame_id == 0xFC01 {
                    AlarmPriority::High
                } else {
                    AlarmPriority::Low
                };
                assert_eq!(a.priority(), want, "{name}: block priority vs FrameID");
            }
            RtaPduType::Err => {
                let s = r.err_status().unwrap();
                assert_eq!(
                    (s.error_code, s.error_decode, s.error_code1),
                    (0xCF, 0x81, 0xFD),
                    "{name}"
                );
            }
            RtaPduType::Ack | RtaPduType::Nack => assert!(r.var_part.is_empty(), "{name}"),
        }
    }
}

fn rta(name: &str) -> RtaRepr {
    let alarms = alarm_frames(&all_frames());
    let (_, rest) = alarms.get(name).unwrap_or_else(|| panic!("{name} missing"));
    RtaRepr::parse(rest).unwrap()
}

#[test]
fn diagnosis_alarm_values() {
    let r = rta("pniors-alarm-low-notif-diag-pnet.hex");
    assert_eq!((r.send_seq, r.ack_seq), (0xFFFF, 0xFFFE));
    let Some(Ok(AlarmPdu::Notification(n))) = r.alarm() else {
        panic!("no notification")
    };
    assert_eq!(n.priority, AlarmPriority::Low);
    assert_eq!(n.alarm_type, alarm_type::DIAGNOSIS);
    assert_eq!((n.slot, n.subslot), (1, 1));
    assert_eq!((n.module_ident, n.submodule_ident), (0x30, 0x130));
    assert_eq!(
        n.item,
        Some(UserStructure::ExtChannel(vec![ExtChannelDiagnosis {
            channel_number: 4,
            properties: ChannelProperties(0x2801),
            error_type: 0x0001,
            ext_error_type: 0,
            ext_add_value: 0,
        }]))
    );

    let spec_of = |name: &str| {
        let Some(Ok(AlarmPdu::Notification(n))) = rta(name).alarm() else {
            panic!("{name}")
        };
        let Some(UserStructure::ExtChannel(items)) = n.item else {
            panic!("{name}")
        };
        (n.specifier, items[0].properties.specifier())
    };
    assert_eq!(
        spec_of("pniors-alarm-low-notif-diag-others-remain-pnet.hex").1,
        Specifier::DisappearsOtherRemain
    );
    let (spec, s) = spec_of("pniors-alarm-low-notif-diag-std-remove-pnet.hex");
    assert_eq!(s, Specifier::AllDisappear);
    assert_eq!(spec.0, 0x0006);

    let r = rta("pniors-alarm-low-notif-diag-disappears-usi-pnet.hex");
    assert_eq!((r.send_seq, r.ack_seq), (4, 3));
    let Some(Ok(AlarmPdu::Notification(n))) = r.alarm() else {
        panic!()
    };
    assert_eq!(n.alarm_type, alarm_type::DIAGNOSIS_DISAPPEARS);
    assert_eq!(
        n.item,
        Some(UserStructure::Other {
            usi: 0x1234,
            data: vec![]
        })
    );

    let r = rta("pniors-alarm-high-notif-process-pnet.hex");
    let Some(Ok(AlarmPdu::Notification(n))) = r.alarm() else {
        panic!()
    };
    assert_eq!(n.priority, AlarmPriority::High);
    assert_eq!(n.alarm_type, alarm_type::PROCESS);
    let Some(UserStructure::Other { usi, data }) = n.item else {
        panic!()
    };
    assert_eq!((usi, data.len()), (0x0010, 1));
}

#[test]
fn ack_and_err_values() {
    let r = rta("pniors-alarm-low-ack-rta-s7.hex");
    assert_eq!(r.pdu_type, RtaPduType::Ack);
    assert_eq!((r.send_seq, r.ack_seq), (0xFFFE, 0xFFFF));
    let r = rta("pniors-alarm-low-ack-rta-pnet.hex");
    assert_eq!((r.send_seq, r.ack_seq), (0xFFFF, 0xFFFF));

    for (name, reason) in [
        (
            "mehner-alarm-low-err-rta-dht-et200sp.hex",
            abort_reason::AR_CONSUMER_DHT_EXPIRED,
        ),
        (
            "mehner-alarm-low-err-rta-name-changed-et200sp.hex",
            abort_reason::DCP_STATION_NAME_CHANGED,
        ),
        (
            "icsnpp-alarm-low-err-rta-release-versamax.hex",
            abort_reason::AR_RELEASE_IND_RECEIVED,
        ),
        (
            "icsnpp-alarm-low-err-rta-closed-phoenix.hex",
            abort_reason::INSTANCE_CLOSED,
        ),
        (
            "pniors-alarm-low-err-rta-reply-s7.hex",
            abort_reason::AR_ALARM_IND_ERROR,
        ),
        (
            "pniors-alarm-low-err-rta-ar-removed-reply-pnet.hex",
            abort_reason::AR_REMOVED,
        ),
        ("pniors-alarm-low-err-rta-abort-pnet.hex", 0),
    ] {
        let r = rta(name);
        assert_eq!(r.pdu_type, RtaPduType::Err, "{name}");
        assert_eq!(r.err_status(), Some(abort_reason::status(reason)), "{name}");
    }
    let r = rta("icsnpp-alarm-low-err-rta-release-versamax.hex");
    assert_eq!((r.dst_endpoint, r.src_endpoint), (0x8001, 0x8001));
}

/// Truncations and single-byte corruptions of every real record and alarm payload never make
/// the decoders panic (and a corrupted PDU that still parses re-emits without error).
#[test]
fn corrupted_real_payloads_never_panic() {
    let frames = all_frames();
    let mut payloads: Vec<Vec<u8>> = Vec::new();
    for f in &frames {
        if let Ok(udp) = UdpFrame::parse(&f.bytes) {
            if let Ok(pkt) = RpcPacket::parse(udp.payload) {
                if pkt.header.is_fragment() {
                    continue;
                }
                if let Some((_, _, _, data)) = record_data(&pkt) {
                    payloads.push(data);
                }
            }
        }
    }
    for (_, (_, rest)) in alarm_frames(&frames) {
        payloads.push(rest);
    }
    assert!(payloads.len() > 30);
    let mut checked = 0usize;
    for p in &payloads {
        for cut in 0..p.len() {
            let _ = RecordPdu::parse(&p[..cut]);
            let _ = RtaRepr::parse(&p[..cut]);
            let _ = AlarmPdu::parse(&p[..cut]);
        }
        // flip every byte position of the first 160 bytes (headers and lengths live there)
        for i in 0..p.len().min(160) {
            for x in [0x01u8, 0x80, 0xFF] {
                let mut q = p.clone();
                q[i] ^= x;
                if let Ok(r) = RecordPdu::parse(&q) {
                    let _ = r.to_bytes();
                }
                if let Ok(r) = RtaRepr::parse(&q) {
                    let _ = r.to_bytes();
                    if let Some(Ok(a)) = r.alarm() {
                        let _ = a.to_bytes();
                    }
                }
                let _ = parse_diagnosis_record(&q);
                let _ = im::parse_filter_record(&q);
                checked += 1;
            }
        }
    }
    assert!(checked > 1000);
}

//! Fuzz entry points: one function per top-level decoder, shared by the cargo-fuzz targets in
//! `protocol/fuzz/` and the stable-toolchain replay/property tests (`tests/fuzz_corpus.rs`).
//!
//! Every function takes arbitrary bytes and must never panic, except through the assertions
//! it makes itself: where a parse succeeds, the owned representation is emitted again and
//! the emitted bytes must parse to an equal representation (`parse(emit(parse(x))) ==
//! parse(x)`). A failed assertion is an emit/parse asymmetry in the decoder under test.
//!
//! Machines are driven with the input split into steps: each step uses a few bytes as
//! control (time advance, which kind of input) and the rest as the received bytes.
//!
//! [`all`] dispatches on the first byte to one of the entry points (see [`TARGETS`]).

use crate::time::{Duration, Instant};
use crate::wire::dcp::DcpRepr;
use crate::wire::ethernet::EthernetRepr;
use crate::wire::field::Writer;
use crate::wire::ip::{UdpFrame, UdpRepr};
use crate::wire::lldp::LldpRepr;
use crate::wire::pnio::alarm::{AlarmPdu, AlarmPriority};
use crate::wire::pnio::block::blocks;
use crate::wire::pnio::cm::{
    parse_raw_blocks, CmMessage, ConnectRequest, ConnectResponse, ControlMessage, RawBlock,
};
use crate::wire::pnio::diagnosis::{parse_diagnosis_record, DiagnosisDataRepr};
use crate::wire::pnio::ident::IdentificationDataRepr;
use crate::wire::pnio::im::{parse_filter_record, ImRecord};
use crate::wire::pnio::pdev::{PdInterfaceDataReal, PdPortDataReal, PdPortStatistic};
use crate::wire::pnio::record::RecordPdu;
use crate::wire::rpc::{opnum, Drep, PacketType, PnioRequest, PnioResponse, RpcPacket};
use crate::wire::rt::{self, CyclicFrame, FrameId};
use crate::wire::rta::RtaRepr;
use crate::wire::Emit;

/// A fuzz entry point.
pub type Target = fn(&[u8]);

/// Names of the entry points in the order [`all`] dispatches them (`data[0] % len`).
pub const TARGETS: &[(&str, Target)] = &[
    ("ethernet", ethernet),
    ("rt_frame", rt_frame),
    ("dcp", dcp),
    ("lldp", lldp),
    ("udp_frame", udp_frame),
    ("rpc_packet", rpc_packet),
    ("pnio_request", pnio_request),
    ("pnio_response", pnio_response),
    ("cm_message", cm_message),
    ("connect_request", connect_request),
    ("connect_response", connect_response),
    ("block_list", block_list),
    ("record", record),
    ("im", im),
    ("diagnosis", diagnosis),
    ("ident", ident),
    ("alarm", alarm),
    ("rta", rta),
    ("rpc_reassembly", rpc_reassembly),
    ("cyclic_consumer", cyclic_consumer),
    ("rta_machine", rta_machine),
    ("pdev", pdev),
    ("arp", arp),
    ("snmp", snmp),
    ("llmnr", llmnr),
];

/// Dispatch on the first byte to one of [`TARGETS`]; the rest of the input is its data.
pub fn all(data: &[u8]) {
    let Some((&sel, rest)) = data.split_first() else {
        return;
    };
    let (_, f) = TARGETS[usize::from(sel) % TARGETS.len()];
    f(rest)
}

/// Look an entry point up by name.
pub fn by_name(name: &str) -> Option<Target> {
    TARGETS.iter().find(|(n, _)| *n == name).map(|(_, f)| *f)
}

/// Asserts that a value re-parsed from its own emission equals the original.
macro_rules! same {
    ($first:expr, $second:expr, $what:literal) => {
        assert!(
            $first == $second,
            concat!($what, ": emit/parse asymmetry\nfirst:  {:?}\nsecond: {:?}"),
            $first,
            $second
        )
    };
}

mod ip_services;
pub use ip_services::{arp, llmnr, snmp};

fn emitted<E: core::fmt::Debug>(r: Result<Vec<u8>, E>, what: &str) -> Vec<u8> {
    match r {
        Ok(v) => v,
        Err(e) => panic!("{what}: emit failed on a parsed value: {e:?}"),
    }
}

/// Ethernet header (with optional 802.1Q tag).
pub fn ethernet(data: &[u8]) {
    let Ok((eth, payload)) = EthernetRepr::parse_frame(data) else {
        return;
    };
    let mut buf = emitted(eth.to_bytes(), "ethernet");
    buf.extend_from_slice(payload);
    let (eth2, payload2) = EthernetRepr::parse_frame(&buf)
        .unwrap_or_else(|e| panic!("ethernet: re-parse failed: {e:?}"));
    same!(eth, eth2, "ethernet");
    assert_eq!(payload, payload2, "ethernet: payload changed");
    let built = eth.build(payload);
    let (eth3, _) = EthernetRepr::parse_frame(&built)
        .unwrap_or_else(|e| panic!("ethernet: build re-parse failed: {e:?}"));
    same!(eth, eth3, "ethernet build");
}

/// A complete Ethernet frame with EtherType 0x8892, dispatched on its FrameID to the DCP, RTA
/// or cyclic decoder.
pub fn rt_frame(data: &[u8]) {
    let Ok((eth, id, rest)) = rt::parse_rt_frame(data) else {
        return;
    };
    if id.is_dcp() {
        if let Ok((eth2, id2, _)) = DcpRepr::parse_frame(data) {
            assert_eq!((eth, id), (eth2, id2));
        }
        dcp(rest);
    } else if id == FrameId::ALARM_HIGH || id == FrameId::ALARM_LOW {
        rta(rest);
    } else if id.is_cyclic() {
        let payload = &data[eth.header_len()..];
        if let Ok(f) = CyclicFrame::new_checked(payload) {
            let c_sdu = f.c_sdu().to_vec();
            let status = f.apdu_status();
            let mut out = vec![0u8; rt::cyclic_payload_len(c_sdu.len())];
            let n = rt::fill_cyclic(&mut out, id, &c_sdu, status)
                .unwrap_or_else(|e| panic!("cyclic: emit failed: {e:?}"));
            let g = CyclicFrame::new_checked(&out[..n])
                .unwrap_or_else(|e| panic!("cyclic: re-parse failed: {e:?}"));
            assert_eq!(g.frame_id(), id);
            // fill_cyclic pads the C_SDU with zeros to the 40-byte minimum.
            let (head, pad) = g.c_sdu().split_at(c_sdu.len());
            assert_eq!(head, &c_sdu[..], "cyclic: C_SDU changed");
            assert!(pad.iter().all(|&b| b == 0), "cyclic: padding not zero");
            same!(status, g.apdu_status(), "cyclic APDU status");
        }
        // A consumer that knows its C_SDU length reads the status right after it.
        if let Some(&n) = rest.first() {
            let _ = CyclicFrame::with_c_sdu_len(payload, usize::from(n)).map(|f| f.apdu_status());
        }
    }
}

/// DCP PDU (after the FrameID).
pub fn dcp(data: &[u8]) {
    let Ok(a) = DcpRepr::parse(data) else {
        return;
    };
    let bytes = emitted(a.to_bytes(), "dcp");
    assert_eq!(
        bytes.len(),
        a.buffer_len(),
        "dcp: buffer_len differs from emit"
    );
    let b = DcpRepr::parse(&bytes).unwrap_or_else(|e| panic!("dcp: re-parse failed: {e:?}"));
    same!(a, b, "dcp");
}

/// LLDPDU (after the EtherType).
pub fn lldp(data: &[u8]) {
    let Ok(a) = LldpRepr::parse(data) else {
        return;
    };
    let bytes = emitted(a.to_bytes(), "lldp");
    let b = LldpRepr::parse(&bytes).unwrap_or_else(|e| panic!("lldp: re-parse failed: {e:?}"));
    same!(a, b, "lldp");
}

/// A complete Ethernet/IPv4/UDP frame; a DCE/RPC payload is passed on to [`rpc_packet`].
pub fn udp_frame(data: &[u8]) {
    let Ok(f) = UdpFrame::parse(data) else {
        return;
    };
    let payload = f.payload.to_vec();
    let frame = crate::wire::ip::udp_frame(
        f.src_mac,
        f.dst_mac,
        f.ip.src_addr,
        f.ip.dst_addr,
        f.udp.src_port,
        f.udp.dst_port,
        &payload,
    );
    if let Ok(frame) = frame {
        let g = UdpFrame::parse(&frame).unwrap_or_else(|e| panic!("udp: re-parse failed: {e:?}"));
        assert!(
            g.ip_checksum_ok && g.udp_checksum_ok,
            "udp: own checksums wrong"
        );
        assert_eq!(g.udp, UdpRepr { ..f.udp });
        assert_eq!(
            (g.ip.src_addr, g.ip.dst_addr),
            (f.ip.src_addr, f.ip.dst_addr)
        );
        assert_eq!(g.payload, &payload[..]);
    }
    rpc_packet(&payload);
}

/// One DCE/RPC connectionless packet (UDP payload), in the DREP it declares; PNIO request and
/// response bodies are decoded by opnum.
pub fn rpc_packet(data: &[u8]) {
    let Ok(a) = RpcPacket::parse(data) else {
        return;
    };
    let bytes = emitted(a.to_bytes(), "rpc");
    let b = RpcPacket::parse(&bytes).unwrap_or_else(|e| panic!("rpc: re-parse failed: {e:?}"));
    same!(a, b, "rpc");
    // The same packet in the other integer representation must carry the same values.
    let mut flipped = a.clone();
    let d = a.header.drep.0;
    flipped.header.drep = Drep([d[0] ^ 0x10, d[1], d[2]]);
    let bytes = emitted(flipped.to_bytes(), "rpc (other DREP)");
    let mut c = RpcPacket::parse(&bytes)
        .unwrap_or_else(|e| panic!("rpc (other DREP): re-parse failed: {e:?}"));
    c.header.drep = a.header.drep;
    same!(a, c, "rpc (other DREP)");
    let h = &a.header;
    match h.packet_type {
        PacketType::Request => pnio_body(true, h.opnum, h.drep, &a.body),
        PacketType::Response => pnio_body(false, h.opnum, h.drep, &a.body),
        _ => {}
    }
}

fn selector(data: &[u8]) -> Option<(u16, Drep, &[u8])> {
    let (&sel, rest) = data.split_first()?;
    let drep = if sel & 0x80 != 0 {
        Drep::LITTLE_ENDIAN
    } else {
        Drep::BIG_ENDIAN
    };
    Some((u16::from(sel & 0x07), drep, rest))
}

/// A PNIO request body (NDR header + blocks). `data[0]`: bits 0-2 opnum, bit 7 little-endian
/// DREP; the rest is the body.
pub fn pnio_request(data: &[u8]) {
    if let Some((op, drep, body)) = selector(data) {
        pnio_body(true, op, drep, body);
    }
}

/// A PNIO response body (PNIOStatus + NDR header + blocks); `data[0]` as in
/// [`pnio_request`].
pub fn pnio_response(data: &[u8]) {
    if let Some((op, drep, body)) = selector(data) {
        pnio_body(false, op, drep, body);
    }
}

fn other_drep(d: Drep) -> Drep {
    if d.endian() == Drep::BIG_ENDIAN.endian() {
        Drep::LITTLE_ENDIAN
    } else {
        Drep::BIG_ENDIAN
    }
}

fn pnio_body(request: bool, op: u16, drep: Drep, body: &[u8]) {
    let ndr = if request {
        let Ok(a) = PnioRequest::parse(body, drep) else {
            return;
        };
        for d in [drep, other_drep(drep)] {
            let bytes = emitted(a.ndr(d).to_bytes(), "pnio request");
            let b = PnioRequest::parse(&bytes, d)
                .unwrap_or_else(|e| panic!("pnio request: re-parse failed: {e:?}"));
            same!(a, b, "pnio request");
        }
        a.data
    } else {
        let Ok(a) = PnioResponse::parse(body, drep) else {
            return;
        };
        for d in [drep, other_drep(drep)] {
            let bytes = emitted(a.ndr(d).to_bytes(), "pnio response");
            let b = PnioResponse::parse(&bytes, d)
                .unwrap_or_else(|e| panic!("pnio response: re-parse failed: {e:?}"));
            same!(a, b, "pnio response");
        }
        a.data
    };
    match op {
        opnum::CONNECT if request => connect_request(&ndr),
        opnum::CONNECT => connect_response(&ndr),
        opnum::RELEASE | opnum::CONTROL => control(&ndr),
        opnum::READ | opnum::WRITE | opnum::READ_IMPLICIT => record(&ndr),
        _ => cm_message(&ndr),
    }
}

/// PNIO-CM NDR data of any connection-management message, classified by its first block.
pub fn cm_message(data: &[u8]) {
    let Ok(a) = CmMessage::parse(data) else {
        return;
    };
    let bytes = emitted(a.to_bytes(), "cm");
    let b = CmMessage::parse(&bytes).unwrap_or_else(|e| panic!("cm: re-parse failed: {e:?}"));
    same!(a, b, "cm");
}

/// The NDR data of a Connect request (ARBlockReq, IOCRBlockReq, AlarmCRBlockReq,
/// ExpectedSubmoduleBlockReq, ...).
pub fn connect_request(data: &[u8]) {
    let Ok(a) = ConnectRequest::parse(data) else {
        return;
    };
    let bytes = emitted(a.to_bytes(), "connect request");
    let b = ConnectRequest::parse(&bytes)
        .unwrap_or_else(|e| panic!("connect request: re-parse failed: {e:?}"));
    same!(a, b, "connect request");
}

/// The NDR data of a Connect response (ARBlockRes, IOCRBlockRes, AlarmCRBlockRes,
/// ModuleDiffBlock, ...).
pub fn connect_response(data: &[u8]) {
    let Ok(a) = ConnectResponse::parse(data) else {
        return;
    };
    let bytes = emitted(a.to_bytes(), "connect response");
    let b = ConnectResponse::parse(&bytes)
        .unwrap_or_else(|e| panic!("connect response: re-parse failed: {e:?}"));
    same!(a, b, "connect response");
}

fn control(data: &[u8]) {
    if let Ok(a) = ControlMessage::parse(data) {
        let bytes = emitted(a.to_bytes(), "control");
        let b = ControlMessage::parse(&bytes)
            .unwrap_or_else(|e| panic!("control: re-parse failed: {e:?}"));
        same!(a, b, "control");
    }
    cm_message(data);
}

/// A list of PNIO blocks, kept opaque.
pub fn block_list(data: &[u8]) {
    let n = blocks(data).take_while(|b| b.is_ok()).count();
    let Ok(a) = parse_raw_blocks(data) else {
        return;
    };
    assert_eq!(n, a.len());
    let mut w = Writer::new();
    for blk in &a {
        blk.emit(&mut w)
            .unwrap_or_else(|e| panic!("blocks: emit failed: {e:?}"));
    }
    let b: Vec<RawBlock> = parse_raw_blocks(&w.into_inner())
        .unwrap_or_else(|e| panic!("blocks: re-parse failed: {e:?}"));
    same!(a, b, "blocks");
}

/// Record service NDR data: Read/Write request and response headers with their data,
/// MultipleWrite included.
pub fn record(data: &[u8]) {
    let Ok(a) = RecordPdu::parse(data) else {
        return;
    };
    let bytes = emitted(a.to_bytes(), "record");
    assert_eq!(
        bytes.len(),
        a.buffer_len(),
        "record: buffer_len differs from emit"
    );
    let b = RecordPdu::parse(&bytes).unwrap_or_else(|e| panic!("record: re-parse failed: {e:?}"));
    same!(a, b, "record");
}

/// One I&M block (I&M0..4, I&M0FilterData) and the I&M0FilterData record.
pub fn im(data: &[u8]) {
    if let Ok(a) = ImRecord::parse(data) {
        let bytes = emitted(a.to_bytes(), "im");
        let b = ImRecord::parse(&bytes).unwrap_or_else(|e| panic!("im: re-parse failed: {e:?}"));
        same!(a, b, "im");
    }
    if let Ok(a) = parse_filter_record(data) {
        let bytes = emitted(a.to_bytes(), "im filter record");
        let b = parse_filter_record(&bytes)
            .unwrap_or_else(|e| panic!("im filter: re-parse failed: {e:?}"));
        same!(a, b, "im filter record");
    }
}

/// One DiagnosisData block and a diagnosis record (a sequence of them).
pub fn diagnosis(data: &[u8]) {
    if let Ok(a) = DiagnosisDataRepr::parse(data) {
        let bytes = emitted(a.to_bytes(), "diagnosis");
        assert_eq!(
            bytes.len(),
            a.buffer_len(),
            "diagnosis: buffer_len differs from emit"
        );
        let b = DiagnosisDataRepr::parse(&bytes)
            .unwrap_or_else(|e| panic!("diagnosis: re-parse failed: {e:?}"));
        same!(a, b, "diagnosis");
    }
    if let Ok(a) = parse_diagnosis_record(data) {
        let bytes = emitted(a.to_bytes(), "diagnosis record");
        let b = parse_diagnosis_record(&bytes)
            .unwrap_or_else(|e| panic!("diagnosis record: re-parse failed: {e:?}"));
        same!(a, b, "diagnosis record");
    }
}

/// RealIdentificationData / ExpectedIdentificationData block.
pub fn ident(data: &[u8]) {
    let Ok(a) = IdentificationDataRepr::parse(data) else {
        return;
    };
    let bytes = emitted(a.to_bytes(), "ident");
    assert_eq!(
        bytes.len(),
        a.buffer_len(),
        "ident: buffer_len differs from emit"
    );
    let b = IdentificationDataRepr::parse(&bytes)
        .unwrap_or_else(|e| panic!("ident: re-parse failed: {e:?}"));
    same!(a, b, "ident");
}

/// PDPortDataReal, PDInterfaceDataReal or PDPortStatistic block (records 0x802A, 0x8080,
/// 0x8072).
pub fn pdev(data: &[u8]) {
    if let Ok(a) = PdPortDataReal::parse(data) {
        let bytes = emitted(a.to_bytes(), "pdev port");
        let b = PdPortDataReal::parse(&bytes)
            .unwrap_or_else(|e| panic!("pdev port: re-parse failed: {e:?}"));
        same!(a, b, "pdev port");
    }
    if let Ok(a) = PdInterfaceDataReal::parse(data) {
        let bytes = emitted(a.to_bytes(), "pdev interface");
        let b = PdInterfaceDataReal::parse(&bytes)
            .unwrap_or_else(|e| panic!("pdev interface: re-parse failed: {e:?}"));
        same!(a, b, "pdev interface");
    }
    if let Ok(a) = PdPortStatistic::parse(data) {
        let bytes = emitted(a.to_bytes(), "pdev statistic");
        let b = PdPortStatistic::parse(&bytes)
            .unwrap_or_else(|e| panic!("pdev statistic: re-parse failed: {e:?}"));
        same!(a, b, "pdev statistic");
    }
}

/// AlarmNotification / AlarmAck block (the VarPart of a DATA-RTA-PDU).
pub fn alarm(data: &[u8]) {
    let Ok(a) = AlarmPdu::parse(data) else {
        return;
    };
    let bytes = emitted(a.to_bytes(), "alarm");
    assert_eq!(
        bytes.len(),
        a.buffer_len(),
        "alarm: buffer_len differs from emit"
    );
    let b = AlarmPdu::parse(&bytes).unwrap_or_else(|e| panic!("alarm: re-parse failed: {e:?}"));
    same!(a, b, "alarm");
}

/// RTA-PDU (after the FrameID); a DATA VarPart is passed on to [`alarm`].
pub fn rta(data: &[u8]) {
    let Ok(a) = RtaRepr::parse(data) else {
        return;
    };
    let buf = emitted(a.to_bytes(), "rta");
    assert_eq!(
        a.buffer_len(),
        buf.len(),
        "rta: buffer_len differs from emit"
    );
    let b = RtaRepr::parse(&buf).unwrap_or_else(|e| panic!("rta: re-parse failed: {e:?}"));
    same!(a, b, "rta");
    alarm(&a.var_part);
}

/// Splits machine input into steps: `[ctl, len, bytes[len]]*`.
struct Steps<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for Steps<'a> {
    type Item = (u8, &'a [u8]);
    fn next(&mut self) -> Option<(u8, &'a [u8])> {
        let (&ctl, r) = self.rest.split_first()?;
        let (&len, r) = r.split_first().unwrap_or((&0, &[]));
        let n = usize::from(len).min(r.len());
        let (chunk, r) = r.split_at(n);
        self.rest = r;
        Some((ctl, chunk))
    }
}

fn steps(data: &[u8]) -> Steps<'_> {
    Steps { rest: data }
}

/// Time advance for a control byte: bits 4-7 pick 0, 1 ms .. 20 s.
fn advance(ctl: u8) -> Duration {
    const MS: [u64; 16] = [
        0, 1, 2, 5, 10, 31, 32, 100, 300, 1000, 2000, 3000, 5000, 9999, 10_001, 20_000,
    ];
    Duration::from_millis(MS[usize::from(ctl >> 4)])
}

/// The RPC fragment reassembly machine fed with arbitrary packets: each step is one UDP payload
/// (parsed as a CL packet), bits 0-1 of the control byte rewrite its activity/sequence so that
/// fragments of one call meet.
pub fn rpc_reassembly(data: &[u8]) {
    use crate::machine::rpc_reassembly::{Reassembler, ReassemblyConfig};
    let cfg = ReassemblyConfig {
        max_call_size: 4096,
        max_fragments: 16,
        max_activities: 3,
        max_total_bytes: 8192,
        ..ReassemblyConfig::default()
    };
    let mut m = Reassembler::new(cfg);
    let mut now = Instant::from_nanos(0);
    for (ctl, chunk) in steps(data) {
        now += advance(ctl);
        let Ok(mut p) = RpcPacket::parse(chunk) else {
            m.poll(now);
            continue;
        };
        if ctl & 0x01 != 0 {
            p.header.activity = crate::wire::rpc::Uuid([ctl & 0x02; 16]);
        }
        if ctl & 0x04 != 0 {
            p.header.sequence = u32::from(ctl & 0x08);
        }
        if let Ok(r) = m.receive(now, &p) {
            if let Some(f) = r.fack {
                let bytes = emitted(f.to_bytes(), "fack");
                RpcPacket::parse(&bytes).unwrap_or_else(|e| panic!("fack: re-parse failed: {e:?}"));
            }
            if let Some(msg) = r.message {
                assert!(msg.body.len() <= cfg.max_call_size.max(usize::from(u16::MAX)));
            }
        }
        assert!(
            m.pending() <= cfg.max_activities,
            "reassembly: too many calls held"
        );
        assert!(
            m.buffered_bytes() <= cfg.max_total_bytes,
            "reassembly: buffer limit exceeded"
        );
        if let Some(d) = m.next_deadline() {
            assert!(d > now, "reassembly: deadline in the past");
        }
    }
}

/// The cyclic consumer fed with arbitrary frames: each step is one complete Ethernet frame
/// (or, with control bit 0 set, an RT payload from the FrameID on).
pub fn cyclic_consumer(data: &[u8]) {
    use crate::machine::cyclic::{Consumer, ConsumerEvent, CyclicTiming, RxOutcome};
    use crate::wire::ethernet::MacAddr;
    let Some((&cfg, data)) = data.split_first() else {
        return;
    };
    let Ok(timing) = CyclicTiming::new(32, 1 << (cfg & 0x07)) else {
        return;
    };
    let id = FrameId(0x8000 | u16::from(cfg >> 3));
    let src = MacAddr([0x02, 0, 0, 0, 0, 1]);
    let mut c = Consumer::new(id, timing, 3, Instant::from_nanos(0));
    if cfg & 0x40 != 0 {
        c = c.with_source(src);
    }
    if cfg & 0x80 != 0 {
        c = c.with_c_sdu_len(40);
    }
    let mut now = Instant::from_nanos(0);
    let mut expiries = 0u64;
    for (ctl, chunk) in steps(data) {
        now += advance(ctl);
        if c.poll(now) == Some(ConsumerEvent::WatchdogExpired) {
            expiries += 1;
        }
        let out = if ctl & 0x01 != 0 {
            c.on_rt_payload(now, src, chunk)
        } else {
            c.on_frame(now, chunk)
        };
        if let RxOutcome::NewData { c_sdu: (s, e), .. } = out {
            assert!(s <= e, "cyclic: C_SDU range reversed");
        }
        let st = c.stats();
        assert!(st.new_data + st.invalid + st.duplicates <= st.received);
    }
    assert_eq!(c.stats().watchdog_expiries, expiries);
}

/// The RTA machine (with the alarm endpoint on top) fed with arbitrary PDUs: each step is one
/// RTA-PDU (after the FrameID); control bit 0 sends an alarm of our own first, bit 1
/// patches the PDU's destination endpoint to ours, bit 2 runs the timers instead.
pub fn rta_machine(data: &[u8]) {
    use crate::machine::rta::{AlarmEndpoint, RtaConfig};
    use crate::wire::pnio::alarm::{AlarmNotificationRepr, AlarmSpecifier};
    use crate::wire::pnio::PnioStatus;
    let Some((&cfg, data)) = data.split_first() else {
        return;
    };
    let prio = if cfg & 1 != 0 {
        AlarmPriority::High
    } else {
        AlarmPriority::Low
    };
    let mut ep = AlarmEndpoint::new(RtaConfig::new(prio, 1, 2, 1, 3), cfg & 2 != 0);
    let mut now = Instant::from_nanos(0);
    let mut sent = 0u32;
    for (ctl, chunk) in steps(data) {
        now += advance(ctl);
        if ctl & 0x01 != 0 && sent < 64 {
            sent += 1;
            let n = AlarmNotificationRepr {
                priority: prio,
                alarm_type: 1,
                api: 0,
                slot: 1,
                subslot: 1,
                module_ident: 0x10,
                submodule_ident: 0x20,
                specifier: AlarmSpecifier(0),
                item: None,
            };
            let _ = ep.notify(n, now);
        }
        let polled = ctl & 0x04 != 0;
        if polled {
            ep.poll(now);
        } else if ctl & 0x02 != 0 && chunk.len() >= 2 {
            let mut pdu = chunk.to_vec();
            pdu[0..2].copy_from_slice(&1u16.to_be_bytes());
            ep.handle(&pdu, now);
        } else {
            ep.handle(chunk, now);
        }
        if ctl == 0xFF {
            ep.abort(PnioStatus::default());
        }
        while let Some(tx) = ep.poll_transmit() {
            let bytes = tx.rt_payload();
            let back = RtaRepr::parse(&bytes[2..])
                .unwrap_or_else(|e| panic!("rta machine: own PDU does not parse: {e:?}"));
            assert_eq!(back, tx.pdu, "rta machine: own PDU asymmetric");
        }
        while ep.poll_event().is_some() {}
        // Right after the timers ran, the next deadline lies in the future.
        if let (true, Some(d)) = (polled, ep.next_deadline()) {
            assert!(d > now, "rta: deadline in the past after poll");
        }
    }
}

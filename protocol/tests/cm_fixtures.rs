//! Real captured frames through the IPv4/UDP, DCE/RPC CL and PNIO-CM codecs: every IPv4/UDP
//! DCE/RPC frame of `pn_testkit::fixtures::all()` parses; headers and NDR framing re-emit
//! byte-exactly; Connect/Control/Release NDR data parses into the aggregates and re-emits
//! byte-exactly; concrete values are checked for several frames; the fragmented Write
//! reassembles through the reassembly machine.

use pn_protocol::machine::rpc_reassembly::{Reassembler, ReassemblyConfig};
use pn_protocol::time::Instant;
use pn_protocol::wire::ip::{UdpFrame, PNIO_CM_PORT};
use pn_protocol::wire::pnio::cm::{CmMessage, ConnectRequest, ConnectResponse, ControlMessage};
use pn_protocol::wire::pnio::control::{block_type, command};
use pn_protocol::wire::pnio::module_diff::{ar_info, ident_info, module_state};
use pn_protocol::wire::pnio::PnioStatus;
use pn_protocol::wire::rpc::{
    opnum, Drep, FackBody, PacketType, PnioRequest, PnioResponse, RpcPacket, Uuid,
    PNIO_DEVICE_INTERFACE,
};
use pn_protocol::wire::Emit;
use pn_testkit::fixtures::{self, RealFrame};

/// A fixture frame that carries DCE/RPC over UDP.
struct RpcFrame {
    name: String,
    frame: Vec<u8>,
}

fn rpc_frames() -> Vec<RpcFrame> {
    fixtures::all()
        .into_iter()
        .filter(is_rpc)
        .map(|f| RpcFrame {
            name: f.name,
            frame: f.bytes,
        })
        .collect()
}

fn is_rpc(f: &RealFrame) -> bool {
    match UdpFrame::parse(&f.bytes) {
        Ok(u) => u.payload.first() == Some(&4),
        Err(_) => false,
    }
}

fn load(name: &str) -> (RpcPacket, Vec<u8>) {
    let f = fixtures::by_name(name).unwrap_or_else(|| panic!("fixture {name} missing"));
    let u = UdpFrame::parse(&f.bytes).unwrap();
    (RpcPacket::parse(u.payload).unwrap(), u.payload.to_vec())
}

fn request_data(name: &str) -> (RpcPacket, PnioRequest) {
    let (p, _) = load(name);
    assert_eq!(p.header.packet_type, PacketType::Request, "{name}");
    let r = PnioRequest::parse(&p.body, p.header.drep).unwrap();
    (p, r)
}

fn response_data(name: &str) -> (RpcPacket, PnioResponse) {
    let (p, _) = load(name);
    assert_eq!(p.header.packet_type, PacketType::Response, "{name}");
    let r = PnioResponse::parse(&p.body, p.header.drep).unwrap();
    (p, r)
}

#[test]
fn every_rpc_fixture_parses_and_reemits() {
    let frames = rpc_frames();
    // 22 icsnpp/pniors/s7init2005/mehner RPC frames at least (the local copy holds fewer).
    let min = if fixtures::shared_dir().is_some() {
        40
    } else {
        15
    };
    assert!(
        frames.len() >= min,
        "only {} RPC fixture frames",
        frames.len()
    );
    let (mut le, mut be, mut cm) = (0, 0, 0);
    for f in &frames {
        let u = UdpFrame::parse(&f.frame).unwrap();
        assert!(u.ip_checksum_ok, "{}: IPv4 header checksum", f.name);
        // p-net frames were captured on the sending host before checksum offload.
        let from_pnet = u.src_mac == [0x8c, 0xf3, 0x19, 0xcd, 0x19, 0xf8];
        assert!(u.udp_checksum_ok || from_pnet, "{}: UDP checksum", f.name);
        let pkt = RpcPacket::parse(u.payload).unwrap_or_else(|e| panic!("{}: {e}", f.name));
        let exact = &u.payload[..80 + pkt.body.len()];
        assert_eq!(pkt.to_bytes().unwrap(), exact, "{}: RPC re-emit", f.name);
        assert_eq!(
            u.payload.len(),
            exact.len(),
            "{}: bytes after the RPC body",
            f.name
        );
        if pkt.header.drep.is_little_endian() {
            le += 1;
        } else {
            be += 1;
        }
        let h = pkt.header;
        if h.is_fragment() {
            continue;
        }
        match h.packet_type {
            PacketType::Request => {
                let r = PnioRequest::parse(&pkt.body, h.drep)
                    .unwrap_or_else(|e| panic!("{}: {e}", f.name));
                assert_eq!(
                    r.ndr(h.drep).to_bytes().unwrap(),
                    pkt.body,
                    "{}: NDR re-emit",
                    f.name
                );
                if matches!(h.opnum, opnum::CONNECT | opnum::RELEASE | opnum::CONTROL) {
                    let m = CmMessage::parse(&r.data).unwrap_or_else(|e| panic!("{}: {e}", f.name));
                    assert_eq!(m.to_bytes().unwrap(), r.data, "{}: blocks re-emit", f.name);
                    match h.opnum {
                        opnum::CONNECT => {
                            assert!(matches!(m, CmMessage::ConnectRequest(_)), "{}", f.name)
                        }
                        _ => assert!(matches!(m, CmMessage::Control(_)), "{}", f.name),
                    }
                    cm += 1;
                }
            }
            PacketType::Response => {
                let r = PnioResponse::parse(&pkt.body, h.drep)
                    .unwrap_or_else(|e| panic!("{}: {e}", f.name));
                assert_eq!(
                    r.ndr(h.drep).to_bytes().unwrap(),
                    pkt.body,
                    "{}: NDR re-emit",
                    f.name
                );
                if matches!(h.opnum, opnum::CONNECT | opnum::RELEASE | opnum::CONTROL) {
                    let m = CmMessage::parse(&r.data).unwrap_or_else(|e| panic!("{}: {e}", f.name));
                    assert_eq!(m.to_bytes().unwrap(), r.data, "{}: blocks re-emit", f.name);
                    if r.status.is_ok() {
                        match h.opnum {
                            opnum::CONNECT => {
                                assert!(matches!(m, CmMessage::ConnectResponse(_)), "{}", f.name)
                            }
                            _ => assert!(matches!(m, CmMessage::Control(_)), "{}", f.name),
                        }
                    }
                    cm += 1;
                }
            }
            _ => {}
        }
    }
    assert!(
        le > 0 && be > 0,
        "both DREP byte orders are covered ({le} LE, {be} BE)"
    );
    assert!(cm >= 8, "only {cm} PNIO-CM connection-management messages");
}

#[test]
fn s7init2005_connect_request() {
    if fixtures::by_name("s7init2005-connect-req-s7.hex").is_none() {
        eprintln!("SKIPPED: s7init2005 fixtures not present");
        return;
    }
    let (p, r) = request_data("s7init2005-connect-req-s7.hex");
    assert!(p.header.drep.is_little_endian());
    assert_eq!(p.header.interface, PNIO_DEVICE_INTERFACE);
    assert_eq!(p.header.object.pnio_object_ids(), Some((1, 0x0301, 0x002A)));
    assert_eq!(
        p.header.activity.to_string(),
        "00000002-0000-1010-8008-0800066b8bfb"
    );
    assert_eq!(
        (
            p.header.opnum,
            p.header.sequence,
            p.header.interface_version
        ),
        (0, 0, 1)
    );
    assert_eq!((r.args_maximum, r.data.len()), (515, 485));
    let c = ConnectRequest::parse(&r.data).unwrap();
    assert_eq!(c.ar.ar_type, 1);
    assert_eq!(
        c.ar.ar_uuid.to_string(),
        "c8b4d0cf-6ec3-6b46-9bc3-6f77bd381f47"
    );
    assert_eq!(c.ar.session_key, 1);
    assert_eq!(c.ar.cm_initiator_mac, [0x08, 0x00, 0x06, 0x6b, 0x8b, 0xfb]);
    assert_eq!(
        c.ar.cm_initiator_object_uuid.to_string(),
        "dea00000-6c97-11d1-8271-00000101002a"
    );
    assert_eq!(c.ar.properties.0, 0xb1);
    assert_eq!(c.ar.properties.state(), 1);
    assert!(c.ar.properties.parameterization_server());
    assert_eq!(c.ar.cm_initiator_activity_timeout_factor, 600);
    assert_eq!(c.ar.cm_initiator_station_name, "PN-IO");
    assert_eq!(c.iocrs.len(), 2);
    let fids: Vec<u16> = c.iocrs.iter().map(|i| i.frame_id).collect();
    assert_eq!(fids, vec![0xc080, 0xffff]);
    for i in &c.iocrs {
        assert_eq!(
            (
                i.data_length,
                i.send_clock_factor,
                i.reduction_ratio,
                i.data_hold_factor,
                i.watchdog_factor
            ),
            (40, 32, 2, 3, 3)
        );
        assert_eq!(i.properties.rt_class(), 1);
        assert_eq!(i.frame_send_offset, 0xFFFF_FFFF);
        assert_eq!(i.tag_header.0, 0xc000);
    }
    assert_eq!(c.expected.len(), 6);
    let idents: Vec<u32> = c
        .expected
        .iter()
        .flat_map(|e| e.modules.iter().map(|m| m.module_ident))
        .collect();
    assert!(
        idents.contains(&0x4022)
            && idents.contains(&0x4018)
            && idents.contains(&0x0684)
            && idents.contains(&0x0300)
    );
    let a = c.alarm_cr.unwrap();
    assert_eq!(
        (a.rta_timeout_factor, a.rta_retries, a.max_alarm_data_length),
        (1, 3, 200)
    );
    assert_eq!((a.tag_header_high.0, a.tag_header_low.0), (0xc000, 0xa000));
    // Siemens order: Expected blocks before the AlarmCR block; reproduced exactly.
    assert_eq!(c.wire_order.last(), Some(&0x0103));
    assert_eq!(c.to_bytes().unwrap(), r.data);
}

#[test]
fn icsnpp_connect_requests() {
    let (p, r) = request_data("icsnpp-connect-req-phoenix.hex");
    assert!(
        !p.header.drep.is_little_endian(),
        "Phoenix controller sends big-endian"
    );
    assert_eq!(r.args_maximum, 0x1000);
    let c = ConnectRequest::parse(&r.data).unwrap();
    assert_eq!(c.ar.properties.0, 0x0000_0011);
    assert_eq!(c.ar.cm_initiator_station_name, "pc-worx-rt-basic-6d-d3-43");
    assert_eq!(
        c.iocrs.iter().map(|i| i.frame_id).collect::<Vec<_>>(),
        vec![0xc002, 0xffff]
    );
    assert_eq!(c.iocrs[0].send_clock_factor, 32);
    assert_eq!(c.iocrs[0].reduction_ratio, 8);
    assert_eq!(c.iocrs[0].data_hold_factor, 24);
    let idents: Vec<u32> = c
        .expected
        .iter()
        .flat_map(|e| e.modules.iter().map(|m| m.module_ident))
        .collect();
    assert!(idents.contains(&0x0000_0001) && idents.contains(&0xffff_8140));

    let (p, r) = request_data("icsnpp-connect-req-siemens-srinfo-arfsu.hex");
    assert!(p.header.drep.is_little_endian());
    let c = ConnectRequest::parse(&r.data).unwrap();
    assert_eq!(c.ar.properties.0, 0x6000_0011);
    assert!(c.ar.properties.startup_mode_advanced());
    assert!(c.ar.properties.combined_object_container());
    assert_eq!(c.ar.cm_initiator_station_name, "plcxb1d0ed");
    assert_eq!(
        c.iocrs.iter().map(|i| i.frame_id).collect::<Vec<_>>(),
        vec![0x8000, 0xffff]
    );
    assert_eq!(
        (c.iocrs[0].reduction_ratio, c.iocrs[0].data_hold_factor),
        (2, 3)
    );
    // SRInfoBlock, ARFSUBlock, FSParameterBlock kept opaque, in order.
    assert_eq!(
        c.other.iter().map(|b| b.block_type()).collect::<Vec<_>>(),
        vec![0x010a, 0x010b]
    );
    assert_eq!(c.to_bytes().unwrap(), r.data);
}

#[test]
fn mehner_connect_request_and_response() {
    if fixtures::by_name("mehner-connect-req-s7.hex").is_none() {
        eprintln!("SKIPPED: mehner fixtures not present");
        return;
    }
    let (_, r) = request_data("mehner-connect-req-s7.hex");
    let c = ConnectRequest::parse(&r.data).unwrap();
    assert_eq!(c.ar.ar_type, 1);
    assert_eq!(c.ar.properties.0, 0x4000_0011);
    assert_eq!(
        c.ar.cm_initiator_station_name,
        "cpu1500.profinet-schnittstellexb19f01"
    );
    assert_eq!(
        c.iocrs.iter().map(|i| i.frame_id).collect::<Vec<_>>(),
        vec![0x8000, 0x8000]
    );
    assert_eq!(
        c.iocrs.iter().map(|i| i.data_length).collect::<Vec<_>>(),
        vec![40, 40]
    );
    assert_eq!(
        (
            c.iocrs[0].send_clock_factor,
            c.iocrs[0].reduction_ratio,
            c.iocrs[0].data_hold_factor
        ),
        (128, 4, 5)
    );
    assert_eq!(c.expected.len(), 6);
    assert_eq!(c.expected[0].modules[0].module_ident, 0x0007_4701);
    assert_eq!(
        c.other.iter().map(|b| b.block_type()).collect::<Vec<_>>(),
        vec![0x010b]
    );

    let (_, res) = response_data("mehner-connect-res-et200sp.hex");
    assert!(res.status.is_ok());
    let cr = ConnectResponse::parse(&res.data).unwrap();
    let ar = cr.ar.clone().unwrap();
    assert_eq!(ar.ar_uuid, c.ar.ar_uuid);
    assert_eq!(ar.session_key, c.ar.session_key);
    assert_eq!(ar.cm_responder_udp_rt_port, 0x8892);
    assert_eq!(cr.iocrs.len(), 2);
    assert_eq!(cr.to_bytes().unwrap(), res.data);
}

#[test]
fn connect_responses() {
    if fixtures::by_name("s7init2005-connect-res-im151.hex").is_some() {
        let (p, r) = response_data("s7init2005-connect-res-im151.hex");
        assert!(!p.header.drep.is_little_endian());
        assert_eq!(
            r.args_maximum, 515,
            "MaximumCount echoes the request's ArgsMaximum"
        );
        let c = ConnectResponse::parse(&r.data).unwrap();
        assert_eq!(
            c.iocrs.iter().map(|i| i.frame_id).collect::<Vec<_>>(),
            vec![0xc080, 0xc000]
        );
        let a = c.alarm_cr.unwrap();
        assert_eq!(a.alarm_cr_type, 1);
        let md = c.module_diff.clone().expect("ModuleDiffBlock");
        assert!(!md.apis.is_empty());
        // The IM151 reports one API without differing modules.
        assert_eq!(md.apis.len(), 1);
        assert_eq!((md.apis[0].api, md.apis[0].modules.len()), (0, 0));
        assert_eq!(c.to_bytes().unwrap(), r.data);
    }

    let (p, r) = response_data("pniors-connect-res-pnet.hex");
    assert!(
        !p.header.drep.is_little_endian(),
        "p-net answers big-endian"
    );
    assert_eq!(r.args_maximum, 0x22d);
    let c = ConnectResponse::parse(&r.data).unwrap();
    assert_eq!(
        c.iocrs.iter().map(|i| i.frame_id).collect::<Vec<_>>(),
        vec![0x8000, 0x8001]
    );
    assert_eq!(c.alarm_cr.unwrap().max_alarm_data_length, 200);
    assert!(c.module_diff.is_none());
    assert_eq!(
        c.other.iter().map(|b| b.block_type()).collect::<Vec<_>>(),
        vec![0x8106]
    );
    assert_eq!(c.to_bytes().unwrap(), r.data);

    let (p, r) = response_data("icsnpp-connect-res-versamax.hex");
    assert!(p.header.drep.is_little_endian());
    let c = ConnectResponse::parse(&r.data).unwrap();
    assert!(c.ar.is_some());
    assert_eq!(c.to_bytes().unwrap(), r.data);
}

#[test]
fn error_responses_status_in_drep_order() {
    // Big-endian DREP: status bytes in order.
    let (_, r) = response_data("icsnpp-connect-res-err-out-of-ar-resources.hex");
    assert_eq!(r.status, PnioStatus::new(0xDB, 0x81, 0x40, 0x04));
    assert!(r.data.is_empty());
    assert_eq!(
        ConnectResponse::parse(&r.data).unwrap(),
        ConnectResponse::default()
    );
    // Little-endian DREP: the status is a u32 in little-endian order (05 40 81 df on the wire).
    if fixtures::by_name("mehner-write-res-err-et200sp.hex").is_some() {
        let (p, r) = response_data("mehner-write-res-err-et200sp.hex");
        assert!(p.header.drep.is_little_endian());
        assert_eq!(&p.body[..4], &[0x05, 0x40, 0x81, 0xdf]);
        assert_eq!(r.status, PnioStatus::new(0xDF, 0x81, 0x40, 0x05));
    }
}

#[test]
fn control_and_release() {
    let cases: &[(&str, u16, u16, bool)] = &[
        (
            "icsnpp-prmend-req-phoenix.hex",
            block_type::PRM_END_REQ,
            command::PRM_END,
            true,
        ),
        (
            "icsnpp-prmend-res-versamax.hex",
            block_type::PRM_END_RES,
            command::DONE,
            false,
        ),
        (
            "pniors-prmend-res-pnet.hex",
            block_type::PRM_END_RES,
            command::DONE,
            false,
        ),
        (
            "pniors-appready-req-pnet.hex",
            block_type::APPLICATION_READY_REQ,
            command::APPLICATION_READY,
            true,
        ),
        (
            "icsnpp-appready-req-versamax.hex",
            block_type::APPLICATION_READY_REQ,
            command::APPLICATION_READY,
            true,
        ),
        (
            "icsnpp-appready-res-phoenix.hex",
            block_type::APPLICATION_READY_RES,
            command::DONE,
            false,
        ),
        (
            "icsnpp-release-req-phoenix.hex",
            block_type::RELEASE_REQ,
            command::RELEASE,
            true,
        ),
        (
            "icsnpp-release-res-versamax.hex",
            block_type::RELEASE_RES,
            command::DONE,
            false,
        ),
    ];
    for &(name, bt, cmd, is_req) in cases {
        let data = if is_req {
            request_data(name).1.data
        } else {
            let (_, r) = response_data(name);
            assert!(r.status.is_ok(), "{name}");
            r.data
        };
        let m = ControlMessage::parse(&data).unwrap();
        assert_eq!(m.control.block_type, bt, "{name}");
        assert_eq!(m.control.command, cmd, "{name}");
        if name == "icsnpp-appready-req-versamax.hex" {
            // The VersaMax appends a ModuleDiffBlock to its ApplicationReady request.
            assert_eq!(
                m.other.iter().map(|b| b.block_type()).collect::<Vec<_>>(),
                vec![0x8104]
            );
            let md = m.module_diff().unwrap().unwrap();
            assert!(!md.apis.is_empty(), "{name}");
        } else {
            assert!(m.other.is_empty(), "{name}");
        }
        assert_eq!(m.to_bytes().unwrap(), data, "{name}");
    }
    // The PrmEnd response answers the request of the same AR (icsnpp Phoenix <-> VersaMax).
    let req = ControlMessage::parse(&request_data("icsnpp-prmend-req-phoenix.hex").1.data).unwrap();
    let res =
        ControlMessage::parse(&response_data("icsnpp-prmend-res-versamax.hex").1.data).unwrap();
    assert_eq!(req.control.ar_uuid, res.control.ar_uuid);
    assert_eq!(req.control.session_key, res.control.session_key);
    assert_eq!(req.response().control.block_type, res.control.block_type);
}

#[test]
fn fragmented_write_reassembles() {
    let (f0, _) = load("icsnpp-write-req-frag0-irt.hex");
    let (f1, _) = load("icsnpp-write-req-frag1-irt.hex");
    assert_eq!((f0.header.flags1, f1.header.flags1), (0x24, 0x2e));
    assert_eq!((f0.header.fragment_num, f1.header.fragment_num), (0, 1));
    assert_eq!((f0.body.len(), f1.body.len()), (1384, 120));
    let mut r = Reassembler::new(ReassemblyConfig::default());
    let t = Instant::from_millis(1);
    let a = r.receive(t, &f0).unwrap();
    assert!(a.message.is_none());
    let fack = a.fack.expect("fragment 0 requests a FACK");
    assert_eq!(fack.header.packet_type, PacketType::Fack);
    assert_eq!(fack.header.fragment_num, 0);
    assert_eq!(fack.header.sequence, 1);
    assert_eq!(fack.header.activity, f0.header.activity);
    // Compare with the real FACK the device sent.
    let (real, _) = load("icsnpp-rpc-fack-irt.hex");
    assert_eq!(real.header.packet_type, PacketType::Fack);
    assert_eq!(
        (
            real.header.fragment_num,
            real.header.sequence,
            real.header.activity,
            real.header.drep
        ),
        (
            fack.header.fragment_num,
            fack.header.sequence,
            fack.header.activity,
            fack.header.drep
        )
    );
    let rb = FackBody::parse(&real.body, real.header.drep).unwrap();
    let ob = FackBody::parse(&fack.body, fack.header.drep).unwrap();
    assert_eq!(
        (rb.version, rb.window_size, rb.max_tsdu, rb.max_frag_size),
        (1, 1, 1464, 1464)
    );
    assert_eq!(
        (rb.serial_num, rb.selack.len()),
        (ob.serial_num, ob.selack.len())
    );
    let b = r.receive(t, &f1).unwrap();
    assert!(b.fack.is_none());
    let m = b.message.expect("complete after fragment 1");
    assert_eq!(m.body.len(), 1504);
    assert_eq!(m.header.opnum, opnum::WRITE);
    let req = PnioRequest::parse(&m.body, m.header.drep).unwrap();
    assert_eq!(req.data.len(), 1484);
    // The record layer (another module) owns the blocks; here: they are well-formed blocks.
    let blocks = pn_protocol::wire::pnio::cm::parse_raw_blocks(&req.data).unwrap();
    assert_eq!(blocks[0].block_type(), 0x0008, "IODWriteReqHeader");
}

#[test]
fn rpc_only_frames() {
    // Cancel / cancel-ack (mehner), read/write frames: RPC layer parses.
    for name in [
        "mehner-rpc-cancel-s7.hex",
        "mehner-rpc-cancel-ack-et200sp.hex",
        "pniors-im0-read-req-if-s7.hex",
        "pniors-write-res-pnet.hex",
        "icsnpp-read-implicit-diag-req-siemens.hex",
    ] {
        let Some(f) = fixtures::by_name(name) else {
            continue;
        };
        let u = UdpFrame::parse(&f.bytes).unwrap();
        let p = RpcPacket::parse(u.payload).unwrap();
        assert_eq!(p.to_bytes().unwrap(), u.payload, "{name}");
        match p.header.packet_type {
            PacketType::ClCancel | PacketType::CancelAck => assert!(p.body.is_empty()),
            PacketType::Request => {
                assert!(u.udp.dst_port == PNIO_CM_PORT || u.udp.dst_port > 1024);
                PnioRequest::parse(&p.body, p.header.drep).unwrap();
            }
            PacketType::Response => {
                PnioResponse::parse(&p.body, p.header.drep).unwrap();
            }
            t => panic!("{name}: unexpected {t:?}"),
        }
    }
    let _ = Drep::BIG_ENDIAN;
    let _ = Uuid::NIL;
    let _ = (module_state::PROPER_MODULE, ar_info::OWN, ident_info::OK);
}

#[test]
fn mutated_real_frames_never_panic() {
    // Every byte of every RPC fixture, replaced by a few values, through the whole chain:
    // Ethernet/IP/UDP, RPC, NDR, blocks. Whatever parses must re-emit without error.
    let mut parsed = 0usize;
    for f in rpc_frames() {
        for i in 0..f.frame.len() {
            for v in [0x00u8, 0xff, 0x01, f.frame[i] ^ 0x80] {
                let mut m = f.frame.clone();
                m[i] = v;
                let Ok(u) = UdpFrame::parse(&m) else { continue };
                let Ok(p) = RpcPacket::parse(u.payload) else {
                    continue;
                };
                let _ = p.to_bytes();
                let data = match p.header.packet_type {
                    PacketType::Request => {
                        PnioRequest::parse(&p.body, p.header.drep).map(|r| r.data)
                    }
                    PacketType::Response => {
                        PnioResponse::parse(&p.body, p.header.drep).map(|r| r.data)
                    }
                    _ => continue,
                };
                let Ok(data) = data else { continue };
                if let Ok(msg) = CmMessage::parse(&data) {
                    assert!(msg.to_bytes().is_ok(), "{} byte {i} = {v:#x}", f.name);
                    parsed += 1;
                }
            }
        }
    }
    assert!(
        parsed > 1000,
        "only {parsed} mutated frames parsed as PNIO-CM"
    );
}

/// Every Connect request captured from a real controller passes the device role's Connect
/// checks (the ones the daemon runs), except the system-redundancy AR of an S7-1500R/H, which a
/// device without system redundancy refuses with "ARType not supported" (DB 81 01 04); and the
/// response FrameIDs follow the rule real devices showed in the same captures.
#[test]
fn real_controllers_connect_requests_pass_the_device_checks() {
    use pn_protocol::machine::cmdev::connect::{
        check_connect, connect_error, parse_connect, response_frame_ids, ConnectLimits,
    };
    let mut seen = 0;
    for f in rpc_frames() {
        if !f.name.contains("connect-req") {
            continue;
        }
        let (_, r) = request_data(&f.name);
        let req = parse_connect(&r.data).unwrap_or_else(|st| panic!("{}: {st}", f.name));
        let verdict = check_connect(&req, &ConnectLimits::default());
        if req.ar.ar_type == 0x0020 {
            assert_eq!(verdict, Err(connect_error(0x01, 4)), "{}", f.name);
        } else {
            assert_eq!(verdict, Ok(()), "{}", f.name);
            let (i, o) = response_frame_ids(&req.iocrs[0], &req.iocrs[1], &[]);
            assert_eq!(i, req.iocrs[0].frame_id, "{}: input FrameID kept", f.name);
            if req.iocrs[1].frame_id != 0xFFFF {
                // The S7 proposed 0x8000 for its output CR; the ET200SP kept it.
                assert_eq!(o, req.iocrs[1].frame_id, "{}", f.name);
            }
        }
        seen += 1;
    }
    assert!(seen >= 4, "only {seen} Connect requests among the fixtures");
}

//! tshark as the independent oracle for everything the cm codec emits: DCE/RPC CL packets
//! (request, response, fault, reject, FACK, fragments) and the PNIO-CM Connect / Control /
//! Release NDR data, wrapped in Ethernet/IPv4/UDP with correct checksums, in both DREP byte
//! orders. Each frame must dissect clean (no malformed marker, no expert warning/error), and
//! the dissected values must equal what was encoded.
//!
//! `frames` wraps the RPC packets in frames, dissects them and checks the dissected RPC and NDR
//! headers; `connect` builds the Connect request and response the tests encode.

mod connect;
mod frames;

use crate::connect::*;
use crate::frames::*;
use pn_protocol::machine::rpc_reassembly::{Reassembler, ReassemblyConfig};
use pn_protocol::time::Instant;
use pn_protocol::wire::pnio::cm::ControlMessage;
use pn_protocol::wire::pnio::control::ControlBlock;
use pn_protocol::wire::pnio::PnioStatus;
use pn_protocol::wire::rpc::{
    fragment, opnum, reject_status, Drep, FaultBody, PacketType, PnioRequest, RpcHeader, RpcPacket,
    PNIO_DEVICE_INTERFACE,
};
use pn_protocol::wire::Emit;
use pn_testkit::tshark::{self};

#[test]
fn connect_request_and_response_both_dreps() {
    if !pn_testkit::env::require_tshark() {
        return;
    }
    for drep in [Drep::LITTLE_ENDIAN, Drep::BIG_ENDIAN] {
        let what = drep_name(drep);
        let creq = connect_request();
        let cres = connect_response(&creq);
        let (rh, req, sh, res) = exchange(
            drep,
            0,
            opnum::CONNECT,
            creq.to_bytes().unwrap(),
            PnioStatus::OK,
            cres.to_bytes().unwrap(),
        );
        let (a, b) = packets(&rh, &req, &sh, &res);
        let p = dissect(&[to_device(&a), to_controller(&b)]);

        // Request.
        check_rpc_header(&p[0], &rh, req.ndr(rh.drep).buffer_len());
        let q = &pnio(&p[0]);
        check_ndr_request(q, &req);
        assert_eq!(
            uints(q, "pn_io.block_type"),
            vec![0x0101, 0x0102, 0x0102, 0x0104, 0x0103],
            "{what}"
        );
        let ar = &creq.ar;
        assert_eq!(q.get("pn_io.ar_uuid"), ar.ar_uuid.to_string());
        assert_eq!(q.uint("pn_io.session_key"), 7);
        assert_eq!(q.get("pn_io.cminitiator_mac_add"), "02:00:00:00:00:01");
        assert_eq!(
            q.get("pn_io.cminitiator_uuid"),
            ar.cm_initiator_object_uuid.to_string()
        );
        assert_eq!(q.uint("pn_io.ar_properties"), u64::from(ar.properties.0));
        assert_eq!(q.uint("pn_io.ar_properties.state"), 1);
        assert_eq!(q.uint("pn_io.ar_properties.parameterization_server"), 1);
        assert_eq!(q.uint("pn_io.ar_properties.StartupMode"), 1);
        assert_eq!(q.uint("pn_io.ar_properties.pull_module_alarm_allowed"), 0);
        assert_eq!(q.uint("pn_io.cminitiator_activitytimeoutfactor"), 600);
        assert_eq!(q.uint("pn_io.cminitiator_udprtport"), 0x8892);
        assert_eq!(q.uint("pn_io.station_name_length"), 7);
        assert_eq!(q.get("pn_io.cminitiator_station_name"), "plc-sim");
        // IOCRs.
        assert_eq!(uints(q, "pn_io.iocr_type"), vec![1, 2]);
        assert_eq!(uints(q, "pn_io.iocr_reference"), vec![1, 2]);
        assert_eq!(uints(q, "pn_io.frame_id"), vec![0x8001, 0xFFFF]);
        assert_eq!(uints(q, "pn_io.data_length"), vec![40, 40]);
        assert_eq!(uints(q, "pn_io.send_clock_factor"), vec![32, 32]);
        assert_eq!(uints(q, "pn_io.reduction_ratio"), vec![4, 8]);
        assert_eq!(uints(q, "pn_io.phase"), vec![1, 1]);
        assert_eq!(
            uints(q, "pn_io.frame_send_offset"),
            vec![0xFFFF_FFFF, 0xFFFF_FFFF]
        );
        assert_eq!(uints(q, "pn_io.watchdog_factor"), vec![3, 3]);
        assert_eq!(uints(q, "pn_io.data_hold_factor"), vec![4, 5]);
        assert_eq!(uints(q, "pn_io.iocr_tag_header"), vec![0xC000, 0xC000]);
        assert_eq!(uints(q, "pn_io.iocr_properties.rtclass"), vec![2, 2]);
        assert_eq!(uints(q, "pn_io.number_of_io_data_objects"), vec![3, 1]);
        assert_eq!(uints(q, "pn_io.number_of_iocs"), vec![1, 1]);
        assert_eq!(
            uints(q, "pn_io.io_data_object.frame_offset"),
            vec![0, 1, 2, 0]
        );
        assert_eq!(uints(q, "pn_io.iocs_frame_offset"), vec![4, 2]);
        assert!(uints(q, "pn_io.lt").iter().all(|&v| v == 0x8892));
        // AlarmCR.
        assert_eq!(q.uint("pn_io.alarmcr_type"), 1);
        assert_eq!(q.uint("pn_io.alarmcr_properties"), 0);
        assert_eq!(q.uint("pn_io.rta_timeoutfactor"), 1);
        assert_eq!(q.uint("pn_io.rta_retries"), 3);
        assert_eq!(q.uint("pn_io.localalarmref"), 1);
        assert_eq!(q.uint("pn_io.maxalarmdatalength"), 200);
        assert_eq!(q.uint("pn_io.alarmcr_tagheaderhigh"), 0xC000);
        assert_eq!(q.uint("pn_io.alarmcr_tagheaderlow"), 0xA000);
        // Expected submodules.
        assert_eq!(uints(q, "pn_io.module_ident_number"), vec![1, 0x30, 0x32]);
        assert_eq!(
            uints(q, "pn_io.submodule_ident_number"),
            vec![1, 2, 0x130, 0x132]
        );
        assert_eq!(
            uints(q, "pn_io.submodule_properties.type"),
            vec![0, 0, 1, 3]
        );
        assert_eq!(uints(q, "pn_io.data_description"), vec![1, 1, 1, 1, 2]);
        assert_eq!(uints(q, "pn_io.submodule_data_length"), vec![0, 0, 1, 1, 2]);
        assert_eq!(uints(q, "pn_io.length_iocs"), vec![1; 5]);
        assert_eq!(uints(q, "pn_io.length_iops"), vec![1; 5]);

        // Response.
        check_rpc_header(&p[1], &sh, res.ndr(sh.drep).buffer_len());
        let r = &pnio(&p[1]);
        check_ndr_response(r, &res);
        assert_eq!(
            uints(r, "pn_io.block_type"),
            vec![0x8101, 0x8102, 0x8102, 0x8103, 0x8104],
            "{what}"
        );
        assert_eq!(r.uint("pn_io.ar_type"), 1);
        assert_eq!(r.get("pn_io.ar_uuid"), ar.ar_uuid.to_string());
        assert_eq!(r.uint("pn_io.session_key"), 7);
        assert_eq!(r.get("pn_io.cmresponder_macadd"), "02:00:00:00:00:02");
        assert_eq!(r.uint("pn_io.cmresponder_udprtport"), 0x8892);
        assert_eq!(uints(r, "pn_io.iocr_type"), vec![1, 2]);
        assert_eq!(uints(r, "pn_io.frame_id"), vec![0x8001, 0x8002]);
        assert_eq!(r.uint("pn_io.localalarmref"), 3);
        assert_eq!(r.uint("pn_io.maxalarmdatalength"), 200);
        assert_eq!(r.uint("pn_io.number_of_modules"), 2);
        assert_eq!(uints(r, "pn_io.module_state"), vec![1, 2]);
        assert_eq!(uints(r, "pn_io.submodule_ident_number"), vec![0x131, 0x132]);
        assert_eq!(uints(r, "pn_io.submodule_state"), vec![0x9000, 0x8080]);
        assert_eq!(
            uints(r, "pn_io.submodule_state.format_indicator"),
            vec![1, 1]
        );
        assert_eq!(uints(r, "pn_io.submodule_state.ident_info"), vec![2, 0]);
        assert_eq!(uints(r, "pn_io.submodule_state.ar_info"), vec![0, 1]);
    }
}

#[test]
fn control_and_release_both_dreps() {
    if !pn_testkit::env::require_tshark() {
        return;
    }
    for drep in [Drep::LITTLE_ENDIAN, Drep::BIG_ENDIAN] {
        let what = drep_name(drep);
        let mut frames = Vec::new();
        let mut expect = Vec::new();
        let cases = [
            (
                opnum::CONTROL,
                ControlBlock::prm_end_req(ar_uuid(), 7),
                0x0001u64,
                true,
            ),
            (
                opnum::CONTROL,
                ControlBlock::application_ready_req(ar_uuid(), 7),
                0x0002,
                false,
            ),
            (
                opnum::RELEASE,
                ControlBlock::release_req(ar_uuid(), 7),
                0x0004,
                true,
            ),
        ];
        for (i, (op, block, cmd, from_controller)) in cases.into_iter().enumerate() {
            let m = ControlMessage::new(block);
            let (rh, req, sh, res) = exchange(
                drep,
                i as u32 + 1,
                op,
                m.to_bytes().unwrap(),
                PnioStatus::OK,
                m.response().to_bytes().unwrap(),
            );
            // ApplicationReady goes device -> controller on the controller interface.
            let (rh, sh) = if from_controller {
                (rh, sh)
            } else {
                let mut rh = rh;
                rh.interface = pn_protocol::wire::rpc::PNIO_CONTROLLER_INTERFACE;
                (rh, RpcHeader::response_to(&rh))
            };
            let (a, b) = packets(&rh, &req, &sh, &res);
            if from_controller {
                frames.push(to_device(&a));
                frames.push(to_controller(&b));
            } else {
                frames.push(to_controller(&a));
                frames.push(to_device(&b));
            }
            expect.push((rh, req, sh, res, block, cmd));
        }
        let p = dissect(&frames);
        for (i, (rh, req, sh, res, block, cmd)) in expect.iter().enumerate() {
            check_rpc_header(&p[2 * i], rh, req.ndr(rh.drep).buffer_len());
            let q = &pnio(&p[2 * i]);
            check_ndr_request(q, req);
            assert_eq!(
                q.uint("pn_io.block_type"),
                u64::from(block.block_type),
                "{what} {i}"
            );
            assert_eq!(q.get("pn_io.ar_uuid"), ar_uuid().to_string());
            assert_eq!(q.uint("pn_io.session_key"), 7);
            assert_eq!(q.uint("pn_io.control_command"), *cmd);
            check_rpc_header(&p[2 * i + 1], sh, res.ndr(sh.drep).buffer_len());
            let r = &pnio(&p[2 * i + 1]);
            check_ndr_response(r, res);
            assert_eq!(
                r.uint("pn_io.block_type"),
                u64::from(block.block_type | 0x8000),
                "{what} {i}"
            );
            assert_eq!(r.get("pn_io.ar_uuid"), ar_uuid().to_string());
            assert_eq!(r.uint("pn_io.control_command"), 0x0008);
            assert_eq!(r.uint("pn_io.control_command.done"), 1);
        }
    }
}

#[test]
fn prm_begin_request() {
    if !pn_testkit::env::require_tshark() {
        return;
    }
    let m = ControlMessage::new(ControlBlock::prm_begin_req(ar_uuid(), 9));
    let (rh, req, sh, res) = exchange(
        Drep::LITTLE_ENDIAN,
        4,
        opnum::CONTROL,
        m.to_bytes().unwrap(),
        PnioStatus::OK,
        m.response().to_bytes().unwrap(),
    );
    let (a, b) = packets(&rh, &req, &sh, &res);
    let p = dissect(&[to_device(&a), to_controller(&b)]);
    assert_eq!(pnio(&p[0]).uint("pn_io.block_type"), 0x0118);
    assert_eq!(pnio(&p[0]).uint("pn_io.control_command"), 0x0040);
    assert_eq!(pnio(&p[0]).uint("pn_io.control_command.prmbegin"), 1);
    assert_eq!(pnio(&p[1]).uint("pn_io.block_type"), 0x8118);
}

#[test]
fn error_connect_response() {
    if !pn_testkit::env::require_tshark() {
        return;
    }
    for drep in [Drep::LITTLE_ENDIAN, Drep::BIG_ENDIAN] {
        let creq = connect_request();
        // ErrorCode Connect (0xDB), ErrorDecode PNIO (0x81), ErrorCode1 0x40 (RMPM), 0x04 (out of AR resources).
        let status = PnioStatus::new(0xDB, 0x81, 0x40, 0x04);
        let (rh, req, sh, res) = exchange(
            drep,
            0,
            opnum::CONNECT,
            creq.to_bytes().unwrap(),
            status,
            vec![],
        );
        let (a, b) = packets(&rh, &req, &sh, &res);
        let p = dissect(&[to_device(&a), to_controller(&b)]);
        check_rpc_header(&p[1], &sh, 20);
        check_ndr_response(&pnio(&p[1]), &res);
        assert_eq!(pnio(&p[1]).uint("pn_io.error_code"), 0xDB);
        assert_eq!(pnio(&p[1]).uint("pn_io.error_code2"), 0x04);
    }
}

#[test]
fn fragmented_request_reassembled_by_tshark_and_fack() {
    if !pn_testkit::env::require_tshark() {
        return;
    }
    for drep in [Drep::LITTLE_ENDIAN, Drep::BIG_ENDIAN] {
        let creq = connect_request();
        let rh = RpcHeader::request(
            drep,
            object(),
            PNIO_DEVICE_INTERFACE,
            activity(),
            3,
            opnum::CONNECT,
        );
        let req = PnioRequest::new(0x1000, creq.to_bytes().unwrap());
        let body = req.ndr(drep).to_bytes().unwrap();
        let half = body.len() / 2 + 1;
        let frags = fragment(&rh, &body, half, true).unwrap();
        assert_eq!(frags.len(), 2);
        // Our own machine acknowledges fragment 0.
        let mut ra = Reassembler::new(ReassemblyConfig {
            server_boot: 0x5f5e_1000,
            ..Default::default()
        });
        let fack = ra
            .receive(Instant::from_millis(0), &frags[0])
            .unwrap()
            .fack
            .unwrap();
        assert!(ra
            .receive(Instant::from_millis(1), &frags[1])
            .unwrap()
            .message
            .is_some());
        let frames = vec![
            to_device(&frags[0].to_bytes().unwrap()),
            to_controller(&fack.to_bytes().unwrap()),
            to_device(&frags[1].to_bytes().unwrap()),
        ];
        // Two passes, so that fragment 0 learns where it was reassembled.
        let p = dissect_args(&frames, &["-2"]);
        check_rpc_header(&p[0], &frags[0].header, half);
        assert_eq!(p[0].uint("dcerpc.dg_flags1_frag"), 1);
        assert_eq!(p[0].uint("dcerpc.dg_flags1_last_frag"), 0);
        assert_eq!(p[0].uint("dcerpc.dg_flags1_nofack"), 0);
        assert_eq!(p[0].uint("dcerpc.reassembled_in"), 3);
        // FACK.
        let f = &p[1];
        check_rpc_header(f, &fack.header, fack.body.len());
        assert_eq!(f.uint("dcerpc.pkt_type"), 9);
        assert_eq!(f.uint("dcerpc.fack_vers"), 1);
        assert_eq!(f.uint("dcerpc.fack_window_size"), 1);
        assert_eq!(f.uint("dcerpc.fack_max_tsdu"), 1464);
        assert_eq!(f.uint("dcerpc.fack_max_frag_size"), 1464);
        assert_eq!(f.uint("dcerpc.fack_serial_num"), 0);
        assert_eq!(f.uint("dcerpc.fack_selack_len"), 0);
        // Last fragment: reassembled, PNIO-CM dissected from the whole body.
        let l = &p[2];
        check_rpc_header(l, &frags[1].header, body.len() - half);
        assert_eq!(l.uint("dcerpc.dg_flags1_last_frag"), 1);
        assert_eq!(l.uint("dcerpc.dg_serial_lo"), 1);
        assert_eq!(l.uint("dcerpc.reassembled.length"), body.len() as u64);
        assert_eq!(uints(l, "dcerpc.fragment"), vec![1, 3]);
        let lp = pnio(l);
        check_ndr_request(&lp, &req);
        assert_eq!(
            uints(&lp, "pn_io.block_type"),
            vec![0x0101, 0x0102, 0x0102, 0x0104, 0x0103]
        );
        assert_eq!(lp.get("pn_io.cminitiator_station_name"), "plc-sim");
    }
}

#[test]
fn fault_reject_and_bodiless_replies() {
    if !pn_testkit::env::require_tshark() {
        return;
    }
    for drep in [Drep::LITTLE_ENDIAN, Drep::BIG_ENDIAN] {
        let rh = RpcHeader::request(drep, object(), PNIO_DEVICE_INTERFACE, activity(), 5, 9);
        let req = PnioRequest::new(0x1000, vec![]);
        let reqp = RpcPacket::new(rh, req.ndr(drep).to_bytes().unwrap())
            .to_bytes()
            .unwrap();
        let fault_h = RpcHeader::reply_to(&rh, PacketType::Fault);
        let fault = FaultBody {
            status: reject_status::NCA_OP_RNG_ERROR,
        };
        let reject_h = RpcHeader::reply_to(&rh, PacketType::Reject);
        let reject = FaultBody {
            status: reject_status::NCA_UNK_IF,
        };
        // Bodiless replies: working, nocall, cancel-ack (and a ping from the client).
        let working_h = RpcHeader::reply_to(&rh, PacketType::Working);
        let nocall_h = RpcHeader::reply_to(&rh, PacketType::Nocall);
        let mut ping_h = rh;
        ping_h.packet_type = PacketType::Ping;
        let frames = vec![
            to_device(&reqp),
            to_controller(
                &RpcPacket::new(fault_h, fault.ndr(drep).to_bytes().unwrap())
                    .to_bytes()
                    .unwrap(),
            ),
            to_controller(
                &RpcPacket::new(reject_h, reject.ndr(drep).to_bytes().unwrap())
                    .to_bytes()
                    .unwrap(),
            ),
            to_device(&RpcPacket::new(ping_h, vec![]).to_bytes().unwrap()),
            to_controller(&RpcPacket::new(working_h, vec![]).to_bytes().unwrap()),
            to_controller(&RpcPacket::new(nocall_h, vec![]).to_bytes().unwrap()),
        ];
        let p = dissect(&frames);
        for (i, h, t) in [(3, &ping_h, 1), (4, &working_h, 4), (5, &nocall_h, 5)] {
            check_rpc_header(&p[i], h, 0);
            assert_eq!(p[i].uint("dcerpc.pkt_type"), t);
        }
        check_rpc_header(&p[1], &fault_h, 4);
        assert_eq!(p[1].uint("dcerpc.pkt_type"), 3);
        assert_eq!(
            p[1].uint("dcerpc.dg_status"),
            u64::from(reject_status::NCA_OP_RNG_ERROR)
        );
        check_rpc_header(&p[2], &reject_h, 4);
        assert_eq!(p[2].uint("dcerpc.pkt_type"), 6);
        assert_eq!(
            p[2].uint("dcerpc.dg_status"),
            u64::from(reject_status::NCA_UNK_IF)
        );
    }
}

#[test]
fn checksums_verified_by_tshark() {
    if !pn_testkit::env::require_tshark() {
        return;
    }
    let f = to_device(&[4u8; 100]);
    let p = tshark::dissect(&[f]).unwrap();
    // The testkit turns checksum validation on: a correct checksum is reported as status 1
    // ("Good"); a bad one would be an expert error (assert_clean).
    assert_eq!(p[0].uint("ip.checksum.status"), 1);
    assert_eq!(p[0].uint("udp.checksum.status"), 1);
}

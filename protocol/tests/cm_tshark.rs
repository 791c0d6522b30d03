//! tshark as the independent oracle for everything the cm codec emits: DCE/RPC CL packets
//! (request, response, fault, reject, FACK, fragments) and the PNIO-CM Connect / Control /
//! Release NDR data, wrapped in Ethernet/IPv4/UDP with correct checksums, in both DREP byte
//! orders. Each frame must dissect clean (no malformed marker, no expert warning/error), and
//! the dissected values must equal what was encoded.

use pn_protocol::machine::rpc_reassembly::{Reassembler, ReassemblyConfig};
use pn_protocol::time::Instant;
use pn_protocol::wire::ip::{udp_frame, PNIO_CM_PORT};
use pn_protocol::wire::pnio::alarm_cr::{
    AlarmCrBlockReq, AlarmCrBlockRes, AlarmCrProperties, ALARM_CR_TYPE,
};
use pn_protocol::wire::pnio::ar::{ar_type, ArBlockReq, ArBlockRes, ArProperties};
use pn_protocol::wire::pnio::cm::{ConnectRequest, ConnectResponse, ControlMessage};
use pn_protocol::wire::pnio::control::ControlBlock;
use pn_protocol::wire::pnio::expected::{
    DataDescription, ExpectedModule, ExpectedSubmodule, ExpectedSubmoduleBlockReq,
    SubmoduleProperties,
};
use pn_protocol::wire::pnio::iocr::{
    iocr_type, IoObject, IocrApi, IocrBlockReq, IocrBlockRes, IocrProperties, TagHeader, LT_PNIO,
};
use pn_protocol::wire::pnio::module_diff::{
    ar_info, ident_info, module_state, DiffApi, DiffModule, DiffSubmodule, ModuleDiffBlock,
    SubmoduleState,
};
use pn_protocol::wire::pnio::PnioStatus;
use pn_protocol::wire::rpc::{
    fragment, opnum, reject_status, Drep, FaultBody, PacketType, PnioRequest, PnioResponse,
    RpcHeader, RpcPacket, Uuid, PNIO_DEVICE_INTERFACE,
};
use pn_protocol::wire::Emit;
use pn_testkit::tshark::{self, Packet};
use std::net::Ipv4Addr;

const CTRL_MAC: [u8; 6] = [0x02, 0x00, 0x00, 0x00, 0x00, 0x01];
const DEV_MAC: [u8; 6] = [0x02, 0x00, 0x00, 0x00, 0x00, 0x02];
const CTRL_IP: Ipv4Addr = Ipv4Addr::new(192, 168, 0, 1);
const DEV_IP: Ipv4Addr = Ipv4Addr::new(192, 168, 0, 2);
const CTRL_PORT: u16 = 49152;

fn to_device(rpc: &[u8]) -> Vec<u8> {
    udp_frame(
        CTRL_MAC,
        DEV_MAC,
        CTRL_IP,
        DEV_IP,
        CTRL_PORT,
        PNIO_CM_PORT,
        rpc,
    )
    .unwrap()
}

fn to_controller(rpc: &[u8]) -> Vec<u8> {
    udp_frame(
        DEV_MAC,
        CTRL_MAC,
        DEV_IP,
        CTRL_IP,
        PNIO_CM_PORT,
        CTRL_PORT,
        rpc,
    )
    .unwrap()
}

fn dissect(frames: &[Vec<u8>]) -> Vec<Packet> {
    dissect_args(frames, &[])
}

fn dissect_args(frames: &[Vec<u8>], args: &[&str]) -> Vec<Packet> {
    let pkts = tshark::dissect_with(frames, args).expect("tshark runs");
    for (i, p) in pkts.iter().enumerate() {
        p.assert_clean(&format!("frame {}", i + 1));
        assert!(
            p.protocols().contains("dcerpc"),
            "frame {} not DCE/RPC: {}",
            i + 1,
            p.protocols()
        );
    }
    pkts
}

/// The PNIO-CM fields of a packet (layer `pn_io_device` or `pn_io_controller`), without the
/// generated AR summary subtree that Wireshark puts first and that repeats pn_io field names
/// (ARUUID, MACs, alarm references, frame IDs of the AR as tracked so far).
fn pnio(p: &Packet) -> Packet {
    fn flatten(v: &serde_json::Value, out: &mut Vec<(String, String)>) {
        if let serde_json::Value::Object(map) = v {
            for (k, child) in map {
                match child {
                    serde_json::Value::String(s) => out.push((k.clone(), s.clone())),
                    serde_json::Value::Array(items) => {
                        for item in items {
                            match item {
                                serde_json::Value::String(s) => out.push((k.clone(), s.clone())),
                                other => flatten(other, out),
                            }
                        }
                    }
                    other => flatten(other, out),
                }
            }
        }
    }
    let layer = ["pn_io_device", "pn_io_controller"]
        .iter()
        .find_map(|k| p.raw.get(*k))
        .unwrap_or_else(|| panic!("no PNIO layer:\n{}", p.dump()));
    let mut fields = Vec::new();
    if let Some(map) = layer.as_object() {
        for (k, v) in map {
            if k.starts_with("pn_io") {
                flatten(&serde_json::json!({ k.clone(): v.clone() }), &mut fields);
            }
        }
    }
    Packet {
        fields,
        raw: layer.clone(),
    }
}

fn drep_name(d: Drep) -> &'static str {
    if d.is_little_endian() {
        "LE"
    } else {
        "BE"
    }
}

fn activity() -> Uuid {
    "0c1a2b3c-4d5e-11ef-8a9b-020000000001".parse().unwrap()
}

fn object() -> Uuid {
    Uuid::pnio_object(1, 0x0002, 0x0493)
}

fn ar_uuid() -> Uuid {
    "6a2a0e1c-9a55-4b0e-8d2e-0f1e2d3c4b5a".parse().unwrap()
}

/// The DCE/RPC CL header fields tshark reports must match `h` (body `len` bytes).
fn check_rpc_header(p: &Packet, h: &RpcHeader, len: usize) {
    assert_eq!(p.uint("dcerpc.ver"), 4);
    assert_eq!(p.uint("dcerpc.pkt_type"), u64::from(h.packet_type.to_u8()));
    assert_eq!(p.uint("dcerpc.dg_flags1"), u64::from(h.flags1));
    assert_eq!(p.uint("dcerpc.dg_flags2"), u64::from(h.flags2));
    assert_eq!(
        p.uint("dcerpc.drep.byteorder"),
        u64::from(h.drep.is_little_endian())
    );
    assert_eq!(p.uint("dcerpc.dg_serial_hi"), u64::from(h.serial >> 8));
    assert_eq!(p.uint("dcerpc.dg_serial_lo"), u64::from(h.serial & 0xff));
    assert_eq!(p.get("dcerpc.obj_id"), h.object.to_string());
    assert_eq!(p.get("dcerpc.dg_if_id"), h.interface.to_string());
    assert_eq!(p.get("dcerpc.dg_act_id"), h.activity.to_string());
    assert_eq!(p.uint("dcerpc.dg_if_ver"), u64::from(h.interface_version));
    assert_eq!(p.uint("dcerpc.dg_seqnum"), u64::from(h.sequence));
    assert_eq!(p.uint("dcerpc.opnum"), u64::from(h.opnum));
    assert_eq!(p.uint("dcerpc.dg_ihint"), u64::from(h.interface_hint));
    assert_eq!(p.uint("dcerpc.dg_ahint"), u64::from(h.activity_hint));
    assert_eq!(p.uint("dcerpc.dg_frag_len"), len as u64);
    assert_eq!(p.uint("dcerpc.dg_frag_num"), u64::from(h.fragment_num));
    assert_eq!(p.uint("dcerpc.dg_auth_proto"), u64::from(h.auth_proto));
}

fn check_ndr_request(p: &Packet, r: &PnioRequest) {
    assert_eq!(p.uint("pn_io.args_max"), u64::from(r.args_maximum));
    assert_eq!(p.uint("pn_io.args_len"), r.data.len() as u64);
    assert_eq!(p.uint("pn_io.array_max_count"), u64::from(r.args_maximum));
    assert_eq!(p.uint("pn_io.array_offset"), 0);
    assert_eq!(p.uint("pn_io.array_act_count"), r.data.len() as u64);
}

fn check_ndr_response(p: &Packet, r: &PnioResponse) {
    assert_eq!(p.uint("pn_io.error_code"), u64::from(r.status.error_code));
    assert_eq!(
        p.uint("pn_io.error_decode"),
        u64::from(r.status.error_decode)
    );
    assert_eq!(p.uint("pn_io.error_code1"), u64::from(r.status.error_code1));
    assert_eq!(p.uint("pn_io.error_code2"), u64::from(r.status.error_code2));
    assert_eq!(p.uint("pn_io.args_len"), r.data.len() as u64);
    assert_eq!(p.uint("pn_io.array_max_count"), u64::from(r.args_maximum));
    assert_eq!(p.uint("pn_io.array_offset"), 0);
    assert_eq!(p.uint("pn_io.array_act_count"), r.data.len() as u64);
}

fn uints(p: &Packet, name: &str) -> Vec<u64> {
    p.all(name)
        .iter()
        .map(|v| tshark::parse_uint(v).unwrap_or_else(|| panic!("{name}={v:?}")))
        .collect()
}

fn connect_request() -> ConnectRequest {
    let ar = ArBlockReq {
        version: (1, 0),
        ar_type: ar_type::IOCAR,
        ar_uuid: ar_uuid(),
        session_key: 7,
        cm_initiator_mac: CTRL_MAC,
        cm_initiator_object_uuid: Uuid::pnio_object(1, 0x0010, 0x002A),
        properties: ArProperties(
            ArProperties::STATE_ACTIVE
                | ArProperties::PARAMETERIZATION_SERVER
                | ArProperties::STARTUP_MODE_ADVANCED,
        ),
        cm_initiator_activity_timeout_factor: 600,
        cm_initiator_udp_rt_port: 0x8892,
        cm_initiator_station_name: "plc-sim".into(),
    };
    let iocr = |t: u16, r: u16, fid: u16, objs: Vec<IoObject>, iocs: Vec<IoObject>| IocrBlockReq {
        version: (1, 0),
        iocr_type: t,
        iocr_reference: r,
        lt: LT_PNIO,
        properties: IocrProperties(IocrProperties::RT_CLASS_2),
        data_length: 40,
        frame_id: fid,
        send_clock_factor: 32,
        reduction_ratio: 4 * t,
        phase: 1,
        sequence: 0,
        frame_send_offset: 0xFFFF_FFFF,
        watchdog_factor: 3,
        data_hold_factor: 3 + t,
        tag_header: TagHeader::new(0, 6),
        multicast_mac: [0; 6],
        apis: vec![IocrApi {
            api: 0,
            io_data_objects: objs,
            iocs,
        }],
    };
    let o = |slot, subslot, frame_offset| IoObject {
        slot,
        subslot,
        frame_offset,
    };
    let mut req = ConnectRequest::new(ar);
    req.iocrs.push(iocr(
        iocr_type::INPUT,
        1,
        0x8001,
        vec![o(0, 1, 0), o(0, 0x8000, 1), o(1, 1, 2)],
        vec![o(2, 1, 4)],
    ));
    req.iocrs.push(iocr(
        iocr_type::OUTPUT,
        2,
        0xFFFF,
        vec![o(2, 1, 0)],
        vec![o(1, 1, 2)],
    ));
    req.alarm_cr = Some(AlarmCrBlockReq {
        version: (1, 0),
        alarm_cr_type: ALARM_CR_TYPE,
        lt: LT_PNIO,
        properties: AlarmCrProperties(0),
        rta_timeout_factor: 1,
        rta_retries: 3,
        local_alarm_reference: 1,
        max_alarm_data_length: 200,
        tag_header_high: TagHeader::new(0, 6),
        tag_header_low: TagHeader::new(0, 5),
    });
    let sub = |ss, id, ty, d: Vec<DataDescription>| ExpectedSubmodule {
        subslot: ss,
        submodule_ident: id,
        properties: SubmoduleProperties(ty),
        descriptions: d,
    };
    req.expected.push(ExpectedSubmoduleBlockReq {
        version: (1, 0),
        modules: vec![
            ExpectedModule {
                api: 0,
                slot: 0,
                module_ident: 0x0000_0001,
                module_properties: 0,
                submodules: vec![
                    sub(
                        1,
                        0x0001,
                        SubmoduleProperties::TYPE_NO_IO,
                        vec![DataDescription::input(0)],
                    ),
                    sub(
                        0x8000,
                        0x0002,
                        SubmoduleProperties::TYPE_NO_IO,
                        vec![DataDescription::input(0)],
                    ),
                ],
            },
            ExpectedModule {
                api: 0,
                slot: 1,
                module_ident: 0x0000_0030,
                module_properties: 0,
                submodules: vec![sub(
                    1,
                    0x0130,
                    SubmoduleProperties::TYPE_INPUT,
                    vec![DataDescription::input(1)],
                )],
            },
            ExpectedModule {
                api: 0,
                slot: 2,
                module_ident: 0x0000_0032,
                module_properties: 0,
                submodules: vec![sub(
                    1,
                    0x0132,
                    SubmoduleProperties::TYPE_INPUT_OUTPUT,
                    vec![DataDescription::input(1), DataDescription::output(2)],
                )],
            },
        ],
    });
    req
}

fn connect_response(req: &ConnectRequest) -> ConnectResponse {
    ConnectResponse {
        ar: Some(ArBlockRes::to_request(&req.ar, DEV_MAC)),
        iocrs: vec![
            IocrBlockRes::to_request(&req.iocrs[0], 0x8001),
            IocrBlockRes::to_request(&req.iocrs[1], 0x8002),
        ],
        alarm_cr: req
            .alarm_cr
            .as_ref()
            .map(|a| AlarmCrBlockRes::to_request(a, 3, 200)),
        module_diff: Some(ModuleDiffBlock {
            version: (1, 0),
            apis: vec![DiffApi {
                api: 0,
                modules: vec![
                    DiffModule {
                        slot: 1,
                        module_ident: 0x31,
                        module_state: module_state::WRONG_MODULE,
                        submodules: vec![DiffSubmodule {
                            subslot: 1,
                            submodule_ident: 0x0131,
                            state: SubmoduleState::new(ar_info::OWN, ident_info::WRONG),
                        }],
                    },
                    DiffModule {
                        slot: 2,
                        module_ident: 0x32,
                        module_state: module_state::PROPER_MODULE,
                        submodules: vec![DiffSubmodule {
                            subslot: 1,
                            submodule_ident: 0x0132,
                            state: SubmoduleState::new(
                                ar_info::APPLICATION_READY_PENDING,
                                ident_info::OK,
                            ),
                        }],
                    },
                ],
            }],
        }),
        other: vec![],
        wire_order: vec![],
    }
}

/// Request and response packets for `op` with NDR data `req_data` / `res_data`.
fn exchange(
    drep: Drep,
    seq: u32,
    op: u16,
    req_data: Vec<u8>,
    status: PnioStatus,
    res_data: Vec<u8>,
) -> (RpcHeader, PnioRequest, RpcHeader, PnioResponse) {
    let rh = RpcHeader::request(drep, object(), PNIO_DEVICE_INTERFACE, activity(), seq, op);
    let req = PnioRequest::new(0x1000, req_data);
    let mut sh = RpcHeader::response_to(&rh);
    sh.server_boot = 0x5f5e_1000;
    let res = PnioResponse::to_request(&req, status, res_data);
    (rh, req, sh, res)
}

fn packets(
    rh: &RpcHeader,
    req: &PnioRequest,
    sh: &RpcHeader,
    res: &PnioResponse,
) -> (Vec<u8>, Vec<u8>) {
    let a = RpcPacket::new(*rh, req.ndr(rh.drep).to_bytes().unwrap())
        .to_bytes()
        .unwrap();
    let b = RpcPacket::new(*sh, res.ndr(sh.drep).to_bytes().unwrap())
        .to_bytes()
        .unwrap();
    (a, b)
}

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

//! The frames around the RPC packets and their dissection: controller/device addresses,
//! Ethernet/IPv4/UDP wrapping in both directions, tshark with the PNIO layer pulled out, the UUIDs
//! of the exchange, checks of the dissected RPC and NDR headers against what was encoded, and the
//! request/response pairs of one operation.

use pn_protocol::wire::ip::{udp_frame, PNIO_CM_PORT};
use pn_protocol::wire::pnio::PnioStatus;
use pn_protocol::wire::rpc::{
    Drep, PnioRequest, PnioResponse, RpcHeader, RpcPacket, Uuid, PNIO_DEVICE_INTERFACE,
};
use pn_protocol::wire::Emit;
use pn_testkit::tshark::{self, Packet};
use std::net::Ipv4Addr;

pub(crate) const CTRL_MAC: [u8; 6] = [0x02, 0x00, 0x00, 0x00, 0x00, 0x01];
pub(crate) const DEV_MAC: [u8; 6] = [0x02, 0x00, 0x00, 0x00, 0x00, 0x02];
pub(crate) const CTRL_IP: Ipv4Addr = Ipv4Addr::new(192, 168, 0, 1);
pub(crate) const DEV_IP: Ipv4Addr = Ipv4Addr::new(192, 168, 0, 2);
pub(crate) const CTRL_PORT: u16 = 49152;

pub(crate) fn to_device(rpc: &[u8]) -> Vec<u8> {
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

pub(crate) fn to_controller(rpc: &[u8]) -> Vec<u8> {
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

pub(crate) fn dissect(frames: &[Vec<u8>]) -> Vec<Packet> {
    dissect_args(frames, &[])
}

pub(crate) fn dissect_args(frames: &[Vec<u8>], args: &[&str]) -> Vec<Packet> {
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
pub(crate) fn pnio(p: &Packet) -> Packet {
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

pub(crate) fn drep_name(d: Drep) -> &'static str {
    if d.is_little_endian() {
        "LE"
    } else {
        "BE"
    }
}

pub(crate) fn activity() -> Uuid {
    "0c1a2b3c-4d5e-11ef-8a9b-020000000001".parse().unwrap()
}

pub(crate) fn object() -> Uuid {
    Uuid::pnio_object(1, 0x0002, 0x0493)
}

pub(crate) fn ar_uuid() -> Uuid {
    "6a2a0e1c-9a55-4b0e-8d2e-0f1e2d3c4b5a".parse().unwrap()
}

/// The DCE/RPC CL header fields tshark reports must match `h` (body `len` bytes).
pub(crate) fn check_rpc_header(p: &Packet, h: &RpcHeader, len: usize) {
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

pub(crate) fn check_ndr_request(p: &Packet, r: &PnioRequest) {
    assert_eq!(p.uint("pn_io.args_max"), u64::from(r.args_maximum));
    assert_eq!(p.uint("pn_io.args_len"), r.data.len() as u64);
    assert_eq!(p.uint("pn_io.array_max_count"), u64::from(r.args_maximum));
    assert_eq!(p.uint("pn_io.array_offset"), 0);
    assert_eq!(p.uint("pn_io.array_act_count"), r.data.len() as u64);
}

pub(crate) fn check_ndr_response(p: &Packet, r: &PnioResponse) {
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

pub(crate) fn uints(p: &Packet, name: &str) -> Vec<u64> {
    p.all(name)
        .iter()
        .map(|v| tshark::parse_uint(v).unwrap_or_else(|| panic!("{name}={v:?}")))
        .collect()
}

/// Request and response packets for `op` with NDR data `req_data` / `res_data`.
pub(crate) fn exchange(
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

pub(crate) fn packets(
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

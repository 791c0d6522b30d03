//! The frames the tests send and how they are dissected: the controller/device addresses, the
//! Ethernet/IPv4/UDP + DCE/RPC wrapping of PNIO-CM bodies, RTA frames, tshark dissection and the
//! record-header builders and checks shared by the tests.

use pn_protocol::wire::ethernet::{self, EthernetRepr, MacAddr, VlanTag};
use pn_protocol::wire::ip;
use pn_protocol::wire::pnio::alarm::AlarmPriority;
use pn_protocol::wire::pnio::diagnosis::{ChannelProperties, Direction, Severity, Specifier};
use pn_protocol::wire::pnio::im::{Im0, SoftwareRevision};
use pn_protocol::wire::pnio::record::{
    ReadReqHeaderRepr, ReadRequest, ReadResponse, RecordAddress, Uuid, NIL_UUID,
};
use pn_protocol::wire::pnio::PnioStatus;
use pn_protocol::wire::rpc::{self, Drep, PnioRequest, PnioResponse, RpcHeader, RpcPacket};
use pn_protocol::wire::rta::RtaRepr;
use pn_protocol::wire::Emit;
use pn_testkit::tshark::{self, Packet};
use std::net::Ipv4Addr;

pub(crate) const CTL_MAC: [u8; 6] = [0x02, 0x00, 0x00, 0x00, 0x00, 0x01];
pub(crate) const DEV_MAC: [u8; 6] = [0x02, 0x00, 0x00, 0x00, 0x00, 0x02];
pub(crate) const CTL_IP: Ipv4Addr = Ipv4Addr::new(192, 168, 0, 1);
pub(crate) const DEV_IP: Ipv4Addr = Ipv4Addr::new(192, 168, 0, 2);
pub(crate) const CTL_PORT: u16 = 0xC001;
pub(crate) const AR: Uuid = [
    0xef, 0x79, 0x6d, 0x60, 0xef, 0x2b, 0x99, 0x46, 0xb3, 0x9e, 0x85, 0x31, 0xf5, 0xb7, 0xf9, 0x66,
];
pub(crate) const AR_STR: &str = "ef796d60-ef2b-9946-b39e-8531f5b7f966";

pub(crate) fn uuid_str(u: &Uuid) -> String {
    let h: String = u.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

pub(crate) fn activity() -> rpc::Uuid {
    rpc::Uuid::from_bytes([0x11; 16])
}

pub(crate) fn request_header(opnum: u16, drep: Drep) -> RpcHeader {
    RpcHeader::request(
        drep,
        rpc::Uuid::pnio_object(1, 0x0002, 0x0493),
        rpc::PNIO_DEVICE_INTERFACE,
        activity(),
        7,
        opnum,
    )
}

/// A PNIO-CM request from the controller to the device.
pub(crate) fn request_frame(opnum: u16, drep: Drep, data: Vec<u8>) -> Vec<u8> {
    let body = PnioRequest::new(32832, data).ndr(drep).to_bytes().unwrap();
    let pkt = RpcPacket::new(request_header(opnum, drep), body)
        .to_bytes()
        .unwrap();
    ip::udp_frame(
        CTL_MAC,
        DEV_MAC,
        CTL_IP,
        DEV_IP,
        CTL_PORT,
        ip::PNIO_CM_PORT,
        &pkt,
    )
    .unwrap()
}

/// A PNIO-CM response from the device to the controller.
pub(crate) fn response_frame(opnum: u16, drep: Drep, status: PnioStatus, data: Vec<u8>) -> Vec<u8> {
    let req = request_header(opnum, drep);
    let body = PnioResponse {
        status,
        args_maximum: 32832,
        data,
    }
    .ndr(drep)
    .to_bytes()
    .unwrap();
    let pkt = RpcPacket::new(RpcHeader::response_to(&req), body)
        .to_bytes()
        .unwrap();
    ip::udp_frame(
        DEV_MAC,
        CTL_MAC,
        DEV_IP,
        CTL_IP,
        ip::PNIO_CM_PORT,
        CTL_PORT,
        &pkt,
    )
    .unwrap()
}

/// An RTA frame: Ethernet + 802.1Q (priority 6 high / 5 low) + FrameID + RTA-PDU, padded.
pub(crate) fn rta_frame(priority: AlarmPriority, pdu: &RtaRepr, tagged: bool) -> Vec<u8> {
    let (frame_id, tag) = match priority {
        AlarmPriority::High => (0xFC01u16, VlanTag::RT_ALARM_HIGH),
        AlarmPriority::Low => (0xFE01u16, VlanTag::RT_ALARM_LOW),
    };
    let mut payload = frame_id.to_be_bytes().to_vec();
    payload.extend_from_slice(&pdu.to_bytes().unwrap());
    EthernetRepr {
        dst: MacAddr(CTL_MAC),
        src: MacAddr(DEV_MAC),
        vlan: tagged.then_some(tag),
        ethertype: ethernet::ethertype::PROFINET,
    }
    .build(&payload)
}

pub(crate) fn dissect(frames: &[Vec<u8>]) -> Vec<Packet> {
    let pkts = tshark::dissect(frames).expect("tshark runs");
    for (i, p) in pkts.iter().enumerate() {
        p.assert_clean(&format!("frame {i}"));
    }
    pkts
}

pub(crate) fn uints(p: &Packet, name: &str) -> Vec<u64> {
    p.all(name)
        .iter()
        .map(|v| tshark::parse_uint(v).unwrap_or_else(|| panic!("{name} = {v:?}")))
        .collect()
}

pub(crate) fn addr(slot: u16, subslot: u16, idx: u16) -> RecordAddress {
    RecordAddress::new(0, slot, subslot, idx)
}

pub(crate) fn read_req(idx: u16, slot: u16, subslot: u16) -> ReadReqHeaderRepr {
    ReadReqHeaderRepr {
        seq_number: 12,
        ar_uuid: AR,
        address: addr(slot, subslot, idx),
        record_data_length: 4096,
        target_ar_uuid: NIL_UUID,
    }
}

pub(crate) fn sample_im0() -> Im0 {
    Im0 {
        vendor_id: 0x0493,
        order_id: "6ES7 000-0AA00-0AA0".into(),
        serial_number: "S C-X4U12345".into(),
        hardware_revision: 3,
        software_revision: SoftwareRevision {
            prefix: b'V',
            functional_enhancement: 1,
            bug_fix: 2,
            internal_change: 3,
        },
        revision_counter: 4,
        profile_id: 0xF600,
        profile_specific_type: 0x0004,
        version: (1, 1),
        supported: Im0::supported_bit(1) | Im0::supported_bit(2) | Im0::supported_bit(3),
    }
}

/// Dissect a request/response pair (the request lets Wireshark match the response); both must
/// be clean. Returns (request, response).
pub(crate) fn pair(req: Vec<u8>, res: Vec<u8>) -> (Packet, Packet) {
    let mut v = dissect(&[req, res]);
    let res = v.pop().unwrap();
    (v.pop().unwrap(), res)
}

pub(crate) fn read_pair(
    req: &ReadReqHeaderRepr,
    status: PnioStatus,
    data: Vec<u8>,
    drep: Drep,
) -> (Packet, Packet) {
    let opnum = if req.is_implicit() {
        rpc::opnum::READ_IMPLICIT
    } else {
        rpc::opnum::READ
    };
    let reqf = request_frame(opnum, drep, ReadRequest::new(*req).to_bytes().unwrap());
    let res = ReadResponse::answering(req, data).unwrap();
    let resf = response_frame(opnum, drep, status, res.to_bytes().unwrap());
    pair(reqf, resf)
}

pub(crate) fn assert_rw_header(
    p: &Packet,
    block_type: u64,
    seq: u16,
    ar: &str,
    a: RecordAddress,
    len: u32,
) {
    assert!(
        uints(p, "pn_io.block_type").contains(&block_type),
        "{}",
        p.dump()
    );
    assert_eq!(p.uint("pn_io.seq_number"), u64::from(seq));
    assert_eq!(p.get("pn_io.ar_uuid"), ar);
    assert_eq!(p.uint("pn_io.api"), u64::from(a.api));
    assert_eq!(p.uint("pn_io.slot_nr"), u64::from(a.slot));
    assert_eq!(p.uint("pn_io.subslot_nr"), u64::from(a.subslot));
    assert_eq!(p.uint("pn_io.index"), u64::from(a.index));
    assert_eq!(p.uint("pn_io.record_data_length"), u64::from(len));
}

pub(crate) fn props(spec: Specifier) -> ChannelProperties {
    ChannelProperties::new(1, false, Severity::Fault, spec, Direction::Input)
}

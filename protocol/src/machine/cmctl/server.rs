//! The CMRPC server side of the controller: the one request a device sends to the controller
//! in connection management, ApplicationReady (IOXBlockReq in a Control call, IEC 61158-6-10
//! "CMRPC"), and the answers to everything else that arrives on the RPC server port.
//!
//! Routing is split from answering so that a shell holding many ARs can find the AR a datagram
//! belongs to ([`classify`]) and hand it to that AR's [`super::Cmctl`], which answers it.

use crate::machine::cmdev::connect::{cmrpc, err1};
use crate::wire::field::Writer;
use crate::wire::pnio::block::blocks;
use crate::wire::pnio::control::{self, ControlBlock};
use crate::wire::pnio::PnioStatus;
use crate::wire::rpc::{self, PacketType, PnioRequest, PnioResponse, RpcHeader, RpcPacket, Uuid};
use crate::wire::Emit;

/// Where a datagram arriving at the controller belongs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Inbound {
    /// A packet answering one of our calls (Response, Fault, Reject, Working, FACK, ...) on
    /// this activity.
    Call { activity: Uuid },
    /// The device's ApplicationReady for this AR.
    ApplicationReady { ar_uuid: Uuid },
    /// A request the controller does not serve: send these bytes back to the sender.
    Refuse(Vec<u8>),
    /// Not decodable, or nothing to do.
    Ignore,
}

/// Route one datagram (see [`Inbound`]).
pub fn classify(bytes: &[u8]) -> Inbound {
    let Ok(p) = RpcPacket::parse(bytes) else {
        return Inbound::Ignore;
    };
    if p.header.packet_type != PacketType::Request {
        return Inbound::Call {
            activity: p.header.activity,
        };
    }
    if let Some(r) = refusal(&p) {
        return Inbound::Refuse(r);
    }
    match application_ready(&p) {
        Some((_, cb)) => Inbound::ApplicationReady {
            ar_uuid: cb.ar_uuid,
        },
        None => Inbound::Ignore,
    }
}

/// The Reject for a request of an operation the controller's interface does not have (only
/// Control is served): `nca_s_op_rng_error`.
pub(crate) fn refusal(p: &RpcPacket) -> Option<Vec<u8>> {
    let h = &p.header;
    if h.packet_type != PacketType::Request || h.opnum == rpc::opnum::CONTROL {
        return None;
    }
    let rh = RpcHeader::reply_to(h, PacketType::Reject);
    let body = rpc::FaultBody {
        status: rpc::reject_status::NCA_OP_RNG_ERROR,
    }
    .ndr(h.drep)
    .to_bytes()
    .ok()?;
    RpcPacket::new(rh, body).to_bytes().ok()
}

/// The ApplicationReady request in `p` (a Control call whose first block is an IOXBlockReq
/// ApplicationReady), if it is one.
pub(crate) fn application_ready(p: &RpcPacket) -> Option<(PnioRequest, ControlBlock)> {
    if p.header.packet_type != PacketType::Request || p.header.opnum != rpc::opnum::CONTROL {
        return None;
    }
    let req = PnioRequest::parse(&p.body, p.header.drep).ok()?;
    let b = blocks(&req.data).next()?.ok()?;
    let cb = ControlBlock::parse(&b).ok()?;
    (cb.block_type == control::block_type::APPLICATION_READY_REQ).then_some((req, cb))
}

/// The answer to an ApplicationReady request: the IOXBlockRes when `status` is OK, no blocks
/// otherwise; the RPC response in the requester's byte order with server boot time 0.
pub(crate) fn answer_application_ready(
    p: &RpcPacket,
    req: &PnioRequest,
    cb: &ControlBlock,
    status: PnioStatus,
) -> Option<Vec<u8>> {
    let data = if status.is_ok() {
        let mut w = Writer::new();
        cb.response().emit(&mut w).ok()?;
        w.into_inner()
    } else {
        Vec::new()
    };
    let resp = PnioResponse::to_request(req, status, data);
    let mut rh = RpcHeader::response_to(&p.header);
    rh.server_boot = 0;
    let body = resp.ndr(p.header.drep).to_bytes().ok()?;
    RpcPacket::new(rh, body).to_bytes().ok()
}

/// A negative Control answer: ErrorCode CONTROL, ErrorDecode PNIO, ErrorCode1 CMRPC and
/// `code2` (Wireshark packet-dcerpc-pn-io.c pn_io_error_code2_pnio_64).
pub(crate) fn control_error(code2: u8) -> PnioStatus {
    PnioStatus::new(
        PnioStatus::CODE_CONTROL,
        PnioStatus::DECODE_PNIO,
        err1::CMRPC,
        code2,
    )
}

/// The answer to an ApplicationReady for an AR the controller does not hold (never had, or
/// already ended): "AR UUID unknown". `None` when `bytes` is no ApplicationReady.
pub fn refuse_unknown_ar(bytes: &[u8]) -> Option<Vec<u8>> {
    let p = RpcPacket::parse(bytes).ok()?;
    let (req, cb) = application_ready(&p)?;
    answer_application_ready(&p, &req, &cb, control_error(cmrpc::AR_UUID_UNKNOWN))
}

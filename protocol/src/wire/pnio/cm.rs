//! PNIO-CM messages: the block lists carried in the NDR data of Connect, Control and Release
//! requests and responses (see [`crate::wire::rpc::PnioRequest`] / `PnioResponse` for the NDR
//! framing around them).
//!
//! * [`ConnectRequest`]: ARBlockReq, IOCRBlockReq*, AlarmCRBlockReq, ExpectedSubmoduleBlockReq*
//!   and any other block (ARRPCBlockReq, SRInfoBlock, ARFSUBlock, FSParameterBlock,
//!   PrmServerBlock, MCRBlockReq, ...) kept opaque as [`RawBlock`].
//! * [`ConnectResponse`]: ARBlockRes, IOCRBlockRes*, AlarmCRBlockRes, ModuleDiffBlock, others
//!   (e.g. ARServerBlockRes) opaque.
//! * [`ControlRequest`] / [`ControlResponse`] / [`ReleaseRequest`] / [`ReleaseResponse`]: one
//!   control block (see [`crate::wire::pnio::control`]) plus opaque blocks (e.g. the
//!   SubmoduleListBlock after a PrmBeginReq).
//!
//! Each aggregate records the block types in wire order (`wire_order`) when parsed, so that
//! `emit` reproduces the original bytes exactly; built by hand (empty `wire_order`) a Connect
//! request emits in the order of every real controller's request in the fixtures (Siemens
//! S7-1200/1500, Phoenix): AR, IOCRs, ExpectedSubmodules, AlarmCR, others; a response emits
//! AR, IOCRs, AlarmCR, ModuleDiff, others.
//!
//! Fuzz entry point: [`CmMessage::parse`].

use crate::wire::field::Writer;
use crate::wire::pnio::alarm_cr::{self, AlarmCrBlockReq, AlarmCrBlockRes};
use crate::wire::pnio::ar::{self, ArBlockReq, ArBlockRes};
use crate::wire::pnio::block::{blocks, BlockBody, BlockHeader, BlockView};
use crate::wire::pnio::control::{self, ControlBlock};
use crate::wire::pnio::expected::{self, ExpectedSubmoduleBlockReq};
use crate::wire::pnio::iocr::{self, IocrBlockReq, IocrBlockRes};
use crate::wire::pnio::module_diff::{self, ModuleDiffBlock};
use crate::wire::{Emit, Error, Result};

/// Helpers shared by the connection-management block parsers.
pub(crate) mod util {
    use crate::wire::field::Reader;
    use crate::wire::pnio::block::BlockView;
    use crate::wire::rpc::Uuid;
    use crate::wire::{Error, Result};

    /// The block has type `t` and BlockVersionHigh 1.
    pub fn expect(block: &BlockView<'_>, t: u16) -> Result<()> {
        let h = block.header();
        if h.block_type != t {
            return Err(Error::Malformed("unexpected block type"));
        }
        if h.version_high != 1 {
            return Err(Error::Unsupported("BlockVersionHigh other than 1"));
        }
        Ok(())
    }
    pub fn version(block: &BlockView<'_>) -> (u8, u8) {
        let h = block.header();
        (h.version_high, h.version_low)
    }
    pub fn uuid(r: &mut Reader<'_>) -> Result<Uuid> {
        Ok(Uuid(r.array::<16>()?))
    }
    pub fn string(r: &mut Reader<'_>, n: usize) -> Result<String> {
        let b = r.bytes(n)?;
        String::from_utf8(b.to_vec()).map_err(|_| Error::Malformed("station name is not UTF-8"))
    }
    /// The whole block body was consumed.
    pub fn finish(r: &Reader<'_>) -> Result<()> {
        if r.is_empty() {
            Ok(())
        } else {
            Err(Error::Malformed("trailing bytes in block"))
        }
    }
}

/// A block kept opaque: its header and body bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawBlock {
    pub header: BlockHeader,
    pub body: Vec<u8>,
}

impl RawBlock {
    pub fn new(block_type: u16, version: (u8, u8), body: Vec<u8>) -> Result<RawBlock> {
        Ok(RawBlock {
            header: BlockHeader::for_body(block_type, body.len(), version.0, version.1)?,
            body,
        })
    }
    pub fn parse(block: &BlockView<'_>) -> RawBlock {
        RawBlock {
            header: block.header(),
            body: block.body().to_vec(),
        }
    }
    pub fn block_type(&self) -> u16 {
        self.header.block_type
    }
}

/// Emits with the length computed from the body (the parsed `block_length` is not reused).
impl BlockBody for RawBlock {
    fn block_type(&self) -> u16 {
        self.header.block_type
    }
    fn block_version(&self) -> (u8, u8) {
        (self.header.version_high, self.header.version_low)
    }
    fn body_len(&self) -> usize {
        self.body.len()
    }
    fn emit_body(&self, w: &mut Writer) -> Result<()> {
        w.bytes(&self.body);
        Ok(())
    }
}

/// Length and emission of blocks listed in wire order (see `in_wire_order` of the Connect
/// messages): one list serves both, so `buffer_len` is exact by construction.
fn blocks_len(order: Result<Vec<&dyn Emit>>) -> usize {
    order.map_or(0, |v| v.iter().map(|b| b.buffer_len()).sum())
}

fn emit_blocks(order: Result<Vec<&dyn Emit>>, w: &mut Writer) -> Result<()> {
    let start = w.len();
    let r = order.and_then(|v| v.iter().try_for_each(|b| b.emit(w)));
    if r.is_err() {
        w.truncate(start);
    }
    r
}

/// The `i`-th element of `v` for the next block of its type in the wire order.
fn next<'a, T: Emit>(v: &'a [T], i: &mut usize) -> Result<&'a dyn Emit> {
    let b = v.get(*i).ok_or(Error::Malformed("block order"))?;
    *i += 1;
    Ok(b)
}

/// Parse all blocks of an NDR data area as opaque blocks.
pub fn parse_raw_blocks(data: &[u8]) -> Result<Vec<RawBlock>> {
    blocks(data)
        .map(|b| b.map(|v| RawBlock::parse(&v)))
        .collect()
}

/// Kinds used in `wire_order`.
fn counts_match(order: &[u16], kinds: &[(u16, usize)], other: &[RawBlock]) -> bool {
    // Every known kind appears exactly as often as stored; every remaining entry is the next
    // opaque block (same type).
    let mut other_i = 0;
    let mut seen = vec![0usize; kinds.len()];
    for t in order {
        if let Some(k) = kinds.iter().position(|(kt, _)| kt == t) {
            seen[k] += 1;
        } else {
            match other.get(other_i) {
                Some(b) if b.block_type() == *t => other_i += 1,
                _ => return false,
            }
        }
    }
    other_i == other.len() && seen.iter().zip(kinds).all(|(s, (_, n))| s == n)
}

/// A block list that could not be decoded: the block's type (`None` when the block list itself,
/// or a required block, is the problem) and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockError {
    pub block_type: Option<u16>,
    pub error: Error,
}

/// A Connect request (controller -> device).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectRequest {
    pub ar: ArBlockReq,
    pub iocrs: Vec<IocrBlockReq>,
    pub alarm_cr: Option<AlarmCrBlockReq>,
    pub expected: Vec<ExpectedSubmoduleBlockReq>,
    pub other: Vec<RawBlock>,
    /// Block types in wire order as parsed (empty = canonical order on emit).
    pub wire_order: Vec<u16>,
}

impl ConnectRequest {
    pub fn new(ar: ArBlockReq) -> ConnectRequest {
        ConnectRequest {
            ar,
            iocrs: Vec::new(),
            alarm_cr: None,
            expected: Vec::new(),
            other: Vec::new(),
            wire_order: Vec::new(),
        }
    }

    /// Parse the NDR data of a Connect request. Requires exactly one ARBlockReq and at most one
    /// AlarmCRBlockReq.
    pub fn parse(data: &[u8]) -> Result<ConnectRequest> {
        Self::parse_located(data).map_err(|e| e.error)
    }

    /// [`ConnectRequest::parse`], saying which block failed: a device answers a faulty block
    /// with a PNIOStatus that names the block (see `machine::cmdev::connect`).
    pub fn parse_located(data: &[u8]) -> core::result::Result<ConnectRequest, BlockError> {
        let at = |block_type: Option<u16>| move |error: Error| BlockError { block_type, error };
        let mut ar = None;
        let mut out = ConnectRequest {
            ar: placeholder_ar(),
            iocrs: Vec::new(),
            alarm_cr: None,
            expected: Vec::new(),
            other: Vec::new(),
            wire_order: Vec::new(),
        };
        for b in blocks(data) {
            let b = b.map_err(at(None))?;
            let t = b.block_type();
            let e = at(Some(t));
            match t {
                ar::BLOCK_TYPE_REQ => {
                    if ar.replace(ArBlockReq::parse(&b).map_err(e)?).is_some() {
                        return Err(e(Error::Malformed("two ARBlockReq")));
                    }
                }
                iocr::BLOCK_TYPE_REQ => out.iocrs.push(IocrBlockReq::parse(&b).map_err(e)?),
                alarm_cr::BLOCK_TYPE_REQ => {
                    if out
                        .alarm_cr
                        .replace(AlarmCrBlockReq::parse(&b).map_err(e)?)
                        .is_some()
                    {
                        return Err(e(Error::Malformed("two AlarmCRBlockReq")));
                    }
                }
                expected::BLOCK_TYPE => out
                    .expected
                    .push(ExpectedSubmoduleBlockReq::parse(&b).map_err(e)?),
                _ => out.other.push(RawBlock::parse(&b)),
            }
            out.wire_order.push(t);
        }
        out.ar = ar.ok_or(BlockError {
            block_type: None,
            error: Error::Malformed("Connect request without ARBlockReq"),
        })?;
        Ok(out)
    }

    fn kinds(&self) -> [(u16, usize); 4] {
        [
            (ar::BLOCK_TYPE_REQ, 1),
            (iocr::BLOCK_TYPE_REQ, self.iocrs.len()),
            (
                alarm_cr::BLOCK_TYPE_REQ,
                usize::from(self.alarm_cr.is_some()),
            ),
            (expected::BLOCK_TYPE, self.expected.len()),
        ]
    }

    /// The blocks in the order they go on the wire.
    fn in_wire_order(&self) -> Result<Vec<&dyn Emit>> {
        let order: Vec<u16> = if counts_match(&self.wire_order, &self.kinds(), &self.other) {
            self.wire_order.clone()
        } else {
            let mut o = vec![ar::BLOCK_TYPE_REQ];
            o.extend(self.iocrs.iter().map(|_| iocr::BLOCK_TYPE_REQ));
            o.extend(self.expected.iter().map(|_| expected::BLOCK_TYPE));
            o.extend(self.alarm_cr.iter().map(|_| alarm_cr::BLOCK_TYPE_REQ));
            o.extend(self.other.iter().map(|b| b.block_type()));
            o
        };
        let (mut i_iocr, mut i_exp, mut i_other) = (0, 0, 0);
        let mut out: Vec<&dyn Emit> = Vec::with_capacity(order.len());
        for t in order {
            match t {
                ar::BLOCK_TYPE_REQ => out.push(&self.ar),
                iocr::BLOCK_TYPE_REQ => out.push(next(&self.iocrs, &mut i_iocr)?),
                alarm_cr::BLOCK_TYPE_REQ => {
                    if let Some(a) = &self.alarm_cr {
                        out.push(a);
                    }
                }
                expected::BLOCK_TYPE => out.push(next(&self.expected, &mut i_exp)?),
                _ => out.push(next(&self.other, &mut i_other)?),
            }
        }
        Ok(out)
    }
}

/// The NDR data (blocks only).
impl Emit for ConnectRequest {
    fn buffer_len(&self) -> usize {
        blocks_len(self.in_wire_order())
    }
    fn emit(&self, w: &mut Writer) -> Result<()> {
        emit_blocks(self.in_wire_order(), w)
    }
}

fn placeholder_ar() -> ArBlockReq {
    ArBlockReq {
        version: (1, 0),
        ar_type: 0,
        ar_uuid: crate::wire::rpc::Uuid::NIL,
        session_key: 0,
        cm_initiator_mac: [0; 6],
        cm_initiator_object_uuid: crate::wire::rpc::Uuid::NIL,
        properties: ar::ArProperties(0),
        cm_initiator_activity_timeout_factor: 0,
        cm_initiator_udp_rt_port: 0,
        cm_initiator_station_name: String::new(),
    }
}

/// A Connect response (device -> controller). In a negative response (non-OK PNIOStatus) the
/// NDR data is usually empty: then every field is empty/`None`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ConnectResponse {
    pub ar: Option<ArBlockRes>,
    pub iocrs: Vec<IocrBlockRes>,
    pub alarm_cr: Option<AlarmCrBlockRes>,
    pub module_diff: Option<ModuleDiffBlock>,
    pub other: Vec<RawBlock>,
    /// Block types in wire order as parsed (empty = canonical order on emit).
    pub wire_order: Vec<u16>,
}

impl ConnectResponse {
    pub fn parse(data: &[u8]) -> Result<ConnectResponse> {
        let mut out = ConnectResponse::default();
        for b in blocks(data) {
            let b = b?;
            let t = b.block_type();
            match t {
                ar::BLOCK_TYPE_RES => {
                    if out.ar.replace(ArBlockRes::parse(&b)?).is_some() {
                        return Err(Error::Malformed("two ARBlockRes"));
                    }
                }
                iocr::BLOCK_TYPE_RES => out.iocrs.push(IocrBlockRes::parse(&b)?),
                alarm_cr::BLOCK_TYPE_RES => {
                    if out.alarm_cr.replace(AlarmCrBlockRes::parse(&b)?).is_some() {
                        return Err(Error::Malformed("two AlarmCRBlockRes"));
                    }
                }
                module_diff::BLOCK_TYPE => {
                    if out
                        .module_diff
                        .replace(ModuleDiffBlock::parse(&b)?)
                        .is_some()
                    {
                        return Err(Error::Malformed("two ModuleDiffBlock"));
                    }
                }
                _ => out.other.push(RawBlock::parse(&b)),
            }
            out.wire_order.push(t);
        }
        Ok(out)
    }

    fn kinds(&self) -> [(u16, usize); 4] {
        [
            (ar::BLOCK_TYPE_RES, usize::from(self.ar.is_some())),
            (iocr::BLOCK_TYPE_RES, self.iocrs.len()),
            (
                alarm_cr::BLOCK_TYPE_RES,
                usize::from(self.alarm_cr.is_some()),
            ),
            (
                module_diff::BLOCK_TYPE,
                usize::from(self.module_diff.is_some()),
            ),
        ]
    }

    /// The blocks in the order they go on the wire.
    fn in_wire_order(&self) -> Result<Vec<&dyn Emit>> {
        let order: Vec<u16> = if counts_match(&self.wire_order, &self.kinds(), &self.other) {
            self.wire_order.clone()
        } else {
            let mut o: Vec<u16> = self.ar.iter().map(|_| ar::BLOCK_TYPE_RES).collect();
            o.extend(self.iocrs.iter().map(|_| iocr::BLOCK_TYPE_RES));
            o.extend(self.alarm_cr.iter().map(|_| alarm_cr::BLOCK_TYPE_RES));
            o.extend(self.module_diff.iter().map(|_| module_diff::BLOCK_TYPE));
            o.extend(self.other.iter().map(|b| b.block_type()));
            o
        };
        let (mut i_iocr, mut i_other) = (0, 0);
        let mut out: Vec<&dyn Emit> = Vec::with_capacity(order.len());
        for t in order {
            match t {
                ar::BLOCK_TYPE_RES => {
                    if let Some(a) = &self.ar {
                        out.push(a);
                    }
                }
                iocr::BLOCK_TYPE_RES => out.push(next(&self.iocrs, &mut i_iocr)?),
                alarm_cr::BLOCK_TYPE_RES => {
                    if let Some(a) = &self.alarm_cr {
                        out.push(a);
                    }
                }
                module_diff::BLOCK_TYPE => {
                    if let Some(m) = &self.module_diff {
                        out.push(m);
                    }
                }
                _ => out.push(next(&self.other, &mut i_other)?),
            }
        }
        Ok(out)
    }
}

/// The NDR data (blocks only).
impl Emit for ConnectResponse {
    fn buffer_len(&self) -> usize {
        blocks_len(self.in_wire_order())
    }
    fn emit(&self, w: &mut Writer) -> Result<()> {
        emit_blocks(self.in_wire_order(), w)
    }
}

/// A Control or Release request or response: one control block, then opaque blocks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControlMessage {
    pub control: ControlBlock,
    pub other: Vec<RawBlock>,
}

/// Control request (PrmEnd, PrmBegin: controller -> device; ApplicationReady: device ->
/// controller).
pub type ControlRequest = ControlMessage;
/// Control response.
pub type ControlResponse = ControlMessage;
/// Release request (IODReleaseReq block).
pub type ReleaseRequest = ControlMessage;
/// Release response (IODReleaseRes block).
pub type ReleaseResponse = ControlMessage;

impl ControlMessage {
    pub fn new(control: ControlBlock) -> ControlMessage {
        ControlMessage {
            control,
            other: Vec::new(),
        }
    }

    /// Parse NDR data whose first block is a control block.
    pub fn parse(data: &[u8]) -> Result<ControlMessage> {
        let mut it = blocks(data);
        let first = it.next().ok_or(Error::Truncated)??;
        let control = ControlBlock::parse(&first)?;
        let other = it
            .map(|b| b.map(|v| RawBlock::parse(&v)))
            .collect::<Result<_>>()?;
        Ok(ControlMessage { control, other })
    }

    /// The ModuleDiffBlock among the other blocks, if any (a device may append one to its
    /// ApplicationReady request, e.g. the VersaMax in fixture `icsnpp-appready-req-versamax`).
    pub fn module_diff(&self) -> Option<Result<ModuleDiffBlock>> {
        let raw = self
            .other
            .iter()
            .find(|b| b.block_type() == module_diff::BLOCK_TYPE)?;
        let bytes = match raw.to_bytes() {
            Ok(b) => b,
            Err(e) => return Some(Err(e)),
        };
        Some(BlockView::new_checked(&bytes).and_then(|v| ModuleDiffBlock::parse(&v)))
    }

    /// The positive response (control block [`ControlBlock::response`], no other blocks).
    pub fn response(&self) -> ControlMessage {
        ControlMessage::new(self.control.response())
    }
}

impl Emit for ControlMessage {
    fn buffer_len(&self) -> usize {
        self.control.buffer_len() + self.other.buffer_len()
    }
    fn emit(&self, w: &mut Writer) -> Result<()> {
        self.control.emit(w)?;
        self.other.emit(w)
    }
}

/// Any PNIO-CM connection-management NDR data, classified by its first block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CmMessage {
    ConnectRequest(ConnectRequest),
    ConnectResponse(ConnectResponse),
    Control(ControlMessage),
    /// Not a connection-management message (e.g. Read/Write data), kept opaque.
    Other(Vec<RawBlock>),
}

impl CmMessage {
    /// Classify and parse NDR data. Fuzz entry point of the connection-management blocks.
    pub fn parse(data: &[u8]) -> Result<CmMessage> {
        let first = match blocks(data).next() {
            None => return Ok(CmMessage::Other(Vec::new())),
            Some(b) => b?.block_type(),
        };
        Ok(match first {
            ar::BLOCK_TYPE_REQ => CmMessage::ConnectRequest(ConnectRequest::parse(data)?),
            ar::BLOCK_TYPE_RES => CmMessage::ConnectResponse(ConnectResponse::parse(data)?),
            t if control::is_control_block_type(t) => {
                CmMessage::Control(ControlMessage::parse(data)?)
            }
            _ => CmMessage::Other(parse_raw_blocks(data)?),
        })
    }
}

impl Emit for CmMessage {
    fn buffer_len(&self) -> usize {
        match self {
            CmMessage::ConnectRequest(m) => m.buffer_len(),
            CmMessage::ConnectResponse(m) => m.buffer_len(),
            CmMessage::Control(m) => m.buffer_len(),
            CmMessage::Other(v) => v.buffer_len(),
        }
    }
    fn emit(&self, w: &mut Writer) -> Result<()> {
        match self {
            CmMessage::ConnectRequest(m) => m.emit(w),
            CmMessage::ConnectResponse(m) => m.emit(w),
            CmMessage::Control(m) => m.emit(w),
            CmMessage::Other(v) => v.emit(w),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::wire::pnio::module_diff::{
        ar_info, ident_info, DiffApi, DiffModule, DiffSubmodule, SubmoduleState,
    };
    use crate::wire::rpc::Uuid;
    use proptest::prelude::*;

    pub use crate::wire::pnio::example::connect_request as sample_connect_request;

    pub fn sample_connect_response(req: &ConnectRequest) -> ConnectResponse {
        ConnectResponse {
            ar: Some(ArBlockRes::to_request(&req.ar, [0x02, 0, 0, 0, 0, 0x02])),
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
                    modules: vec![DiffModule {
                        slot: 1,
                        module_ident: 0x32,
                        module_state: module_diff::module_state::PROPER_MODULE,
                        submodules: vec![DiffSubmodule {
                            subslot: 1,
                            submodule_ident: 0x0132,
                            state: SubmoduleState::new(
                                ar_info::APPLICATION_READY_PENDING,
                                ident_info::OK,
                            ),
                        }],
                    }],
                }],
            }),
            other: vec![],
            wire_order: vec![],
        }
    }

    #[test]
    fn connect_round_trip_and_order() {
        let req = sample_connect_request();
        let data = req.to_bytes().unwrap();
        let p = ConnectRequest::parse(&data).unwrap();
        // Built by hand: the real controllers' order (AR, IOCRs, Expected, AlarmCR).
        assert_eq!(p.wire_order, vec![0x0101, 0x0102, 0x0102, 0x0104, 0x0103]);
        assert_eq!(
            ConnectRequest {
                wire_order: vec![],
                ..p.clone()
            },
            req
        );
        assert_eq!(p.to_bytes().unwrap(), data);
        // A recorded non-canonical order is reproduced.
        let mut q = p.clone();
        q.wire_order = vec![0x0101, 0x0102, 0x0102, 0x0103, 0x0104];
        let d2 = q.to_bytes().unwrap();
        assert_ne!(d2, data);
        assert_eq!(ConnectRequest::parse(&d2).unwrap().wire_order, q.wire_order);
        // Inconsistent order falls back to canonical.
        q.wire_order = vec![0x0101];
        assert_eq!(q.to_bytes().unwrap(), data);

        let res = sample_connect_response(&req);
        let d = res.to_bytes().unwrap();
        let r = ConnectResponse::parse(&d).unwrap();
        assert_eq!(
            ConnectResponse {
                wire_order: vec![],
                ..r.clone()
            },
            res
        );
        assert_eq!(r.to_bytes().unwrap(), d);
        assert!(matches!(
            CmMessage::parse(&d).unwrap(),
            CmMessage::ConnectResponse(_)
        ));
        assert!(matches!(
            CmMessage::parse(&data).unwrap(),
            CmMessage::ConnectRequest(_)
        ));
    }

    #[test]
    fn connect_without_ar_is_error() {
        let mut w = Writer::new();
        sample_connect_request().iocrs[0].emit(&mut w).unwrap();
        assert!(ConnectRequest::parse(&w.into_inner()).is_err());
        assert_eq!(
            ConnectResponse::parse(&[]).unwrap(),
            ConnectResponse::default()
        );
    }

    #[test]
    fn control_round_trip() {
        let m = ControlMessage {
            control: ControlBlock::prm_begin_req(Uuid([5; 16]), 9),
            other: vec![RawBlock::new(0x0119, (1, 0), vec![0, 0]).unwrap()],
        };
        let d = m.to_bytes().unwrap();
        assert_eq!(ControlMessage::parse(&d).unwrap(), m);
        assert_eq!(m.response().control.block_type, 0x8118);
        assert!(ControlMessage::parse(&[]).is_err());
    }

    proptest! {
        #[test]
        fn parse_never_panics(data in proptest::collection::vec(any::<u8>(), 0..400)) {
            if let Ok(m) = CmMessage::parse(&data) {
                // Whatever parses re-emits without error.
                prop_assert!(m.to_bytes().is_ok());
            }
            let _ = ConnectRequest::parse(&data);
            let _ = ConnectResponse::parse(&data);
            let _ = ControlMessage::parse(&data);
        }

        #[test]
        fn connect_request_any_order_round_trip(keys in proptest::collection::vec(any::<u32>(), 5..9),
                                                extra in proptest::collection::vec((0x0105u16..0x0110, proptest::collection::vec(any::<u8>(), 0..12)), 0..4)) {
            // The sample blocks plus opaque ones, shuffled: parse -> emit reproduces the bytes.
            let req = sample_connect_request();
            let mut parts: Vec<Vec<u8>> = Vec::new();
            let mut w = Writer::new();
            req.ar.emit(&mut w).unwrap();
            parts.push(core::mem::take(&mut w.buf));
            for i in &req.iocrs { i.emit(&mut w).unwrap(); parts.push(core::mem::take(&mut w.buf)); }
            req.alarm_cr.unwrap().emit(&mut w).unwrap();
            parts.push(core::mem::take(&mut w.buf));
            for e in &req.expected { e.emit(&mut w).unwrap(); parts.push(core::mem::take(&mut w.buf)); }
            for (t, body) in &extra {
                RawBlock::new(*t, (1, 0), body.clone()).unwrap().emit(&mut w).unwrap();
                parts.push(core::mem::take(&mut w.buf));
            }
            let mut order: Vec<usize> = (0..parts.len()).collect();
            order.sort_by_key(|&i| keys.get(i).copied().unwrap_or(i as u32));
            let data: Vec<u8> = order.iter().flat_map(|&i| parts[i].clone()).collect();
            let p = ConnectRequest::parse(&data).unwrap();
            prop_assert_eq!(p.iocrs.len(), 2);
            prop_assert_eq!(p.other.len(), extra.len());
            prop_assert_eq!(p.to_bytes().unwrap(), data.clone());
            prop_assert_eq!(CmMessage::parse(&data).map(|m| m.to_bytes().unwrap()).unwrap_or_else(|_| data.clone()), data);
        }

        #[test]
        fn connect_mutations_never_panic(i in 0usize..400, v in any::<u8>()) {
            let mut d = sample_connect_request().to_bytes().unwrap();
            if let Some(x) = d.get_mut(i) {
                *x = v;
            }
            if let Ok(m) = CmMessage::parse(&d) {
                prop_assert!(m.to_bytes().is_ok());
            }
        }
    }
}

//! Connection-management PDUs of the controller role, assembled from the protocol crate's block
//! codecs: the Connect request (ARBlockReq, two IOCRBlockReqs, AlarmCRBlockReq,
//! ExpectedSubmoduleBlockReqs), its response, parameter MultipleWrite, PrmEnd, Release and the
//! ApplicationReady answer.

use pn_protocol::wire::field::Writer;
use pn_protocol::wire::pnio::alarm_cr::{
    self, AlarmCrBlockReq, AlarmCrBlockRes, AlarmCrProperties,
};
use pn_protocol::wire::pnio::ar::{self, ArBlockReq, ArBlockRes, ArProperties};
use pn_protocol::wire::pnio::block::blocks;
use pn_protocol::wire::pnio::expected::{
    DataDescription, ExpectedModule, ExpectedSubmodule, ExpectedSubmoduleBlockReq,
    SubmoduleProperties,
};
use pn_protocol::wire::pnio::iocr::{
    self, IoObject, IocrApi, IocrBlockReq, IocrBlockRes, IocrProperties, TagHeader,
};
use pn_protocol::wire::pnio::module_diff::{self, ModuleDiffBlock};
use pn_protocol::wire::rpc::Uuid;

use crate::model::{CrLayout, DeviceModel, IoLayout};

/// Timing and supervision parameters of an AR.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct ArTiming {
    /// SendClockFactor (31.25 µs units; 32 = 1 ms).
    pub send_clock_factor: u16,
    /// ReductionRatio: the IOCRs run every `send_clock_factor * reduction_ratio * 31.25 µs`.
    pub reduction_ratio: u16,
    pub watchdog_factor: u16,
    pub data_hold_factor: u16,
    /// RTATimeoutFactor (100 ms units) and RTARetries of the AlarmCR.
    pub rta_timeout_factor: u16,
    pub rta_retries: u16,
    /// CMInitiatorActivityTimeoutFactor (100 ms units).
    pub activity_timeout_factor: u16,
}

impl Default for ArTiming {
    fn default() -> Self {
        ArTiming {
            send_clock_factor: 32,
            reduction_ratio: 4,
            watchdog_factor: 3,
            data_hold_factor: 3,
            rta_timeout_factor: 1,
            rta_retries: 3,
            activity_timeout_factor: 600,
        }
    }
}

impl ArTiming {
    /// IOCR cycle in nanoseconds.
    pub fn cycle_ns(&self) -> u64 {
        u64::from(self.send_clock_factor) * u64::from(self.reduction_ratio) * 31_250
    }
}

/// Identity of the AR on our side.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArIds {
    pub ar_uuid: Uuid,
    pub session_key: u16,
    pub initiator_mac: [u8; 6],
    pub initiator_object: Uuid,
    pub station_name: String,
    pub input_frame_id: u16,
    pub output_frame_id: u16,
    pub alarm_ref: u16,
}

fn cr_block(
    cr_type: u16,
    reference: u16,
    frame_id: u16,
    layout: &CrLayout,
    api: u32,
    t: &ArTiming,
) -> IocrBlockReq {
    IocrBlockReq {
        version: (1, 0),
        iocr_type: cr_type,
        iocr_reference: reference,
        lt: iocr::LT_PNIO,
        properties: IocrProperties(IocrProperties::RT_CLASS_1),
        data_length: layout.data_length,
        frame_id,
        send_clock_factor: t.send_clock_factor,
        reduction_ratio: t.reduction_ratio,
        phase: 1,
        sequence: 0,
        frame_send_offset: 0xFFFF_FFFF,
        watchdog_factor: t.watchdog_factor,
        data_hold_factor: t.data_hold_factor,
        tag_header: TagHeader::new(0, 6),
        multicast_mac: [0; 6],
        apis: vec![IocrApi {
            api,
            io_data_objects: layout
                .data
                .iter()
                .map(|d| IoObject {
                    slot: d.slot,
                    subslot: d.subslot,
                    frame_offset: d.frame_offset,
                })
                .collect(),
            iocs: layout
                .iocs
                .iter()
                .map(|d| IoObject {
                    slot: d.slot,
                    subslot: d.subslot,
                    frame_offset: d.frame_offset,
                })
                .collect(),
        }],
    }
}

/// The expected submodules of `model`, one ExpectedSubmoduleBlockReq per module.
pub fn expected_blocks(model: &DeviceModel) -> Vec<ExpectedSubmoduleBlockReq> {
    model
        .modules
        .iter()
        .map(|m| ExpectedSubmoduleBlockReq {
            version: (1, 0),
            modules: vec![ExpectedModule {
                api: model.api,
                slot: m.slot,
                module_ident: m.ident,
                module_properties: 0,
                submodules: m
                    .submodules
                    .iter()
                    .map(|s| {
                        let (ty, desc) = match (s.input_len > 0, s.output_len > 0) {
                            (false, false) => (
                                SubmoduleProperties::TYPE_NO_IO,
                                vec![DataDescription::input(0)],
                            ),
                            (true, false) => (
                                SubmoduleProperties::TYPE_INPUT,
                                vec![DataDescription::input(s.input_len)],
                            ),
                            (false, true) => (
                                SubmoduleProperties::TYPE_OUTPUT,
                                vec![DataDescription::output(s.output_len)],
                            ),
                            (true, true) => (
                                SubmoduleProperties::TYPE_INPUT_OUTPUT,
                                vec![
                                    DataDescription::input(s.input_len),
                                    DataDescription::output(s.output_len),
                                ],
                            ),
                        };
                        ExpectedSubmodule {
                            subslot: s.subslot,
                            submodule_ident: s.ident,
                            properties: SubmoduleProperties(ty),
                            descriptions: desc,
                        }
                    })
                    .collect(),
            }],
        })
        .collect()
}

/// The NDR data (PNIO blocks) of a Connect request.
pub fn connect_request(
    model: &DeviceModel,
    layout: &IoLayout,
    ids: &ArIds,
    t: &ArTiming,
) -> Result<Vec<u8>, String> {
    let e = |e: pn_protocol::wire::Error| format!("cannot encode Connect: {e}");
    let mut w = Writer::new();
    ArBlockReq {
        version: (1, 0),
        ar_type: ar::ar_type::IOCAR,
        ar_uuid: ids.ar_uuid,
        session_key: ids.session_key,
        cm_initiator_mac: ids.initiator_mac,
        cm_initiator_object_uuid: ids.initiator_object,
        properties: ArProperties(
            ArProperties::STATE_ACTIVE
                | ArProperties::PARAMETERIZATION_SERVER
                | ArProperties::STARTUP_MODE_ADVANCED,
        ),
        cm_initiator_activity_timeout_factor: t.activity_timeout_factor,
        cm_initiator_udp_rt_port: 0x8892,
        cm_initiator_station_name: ids.station_name.clone(),
    }
    .emit(&mut w)
    .map_err(e)?;
    cr_block(
        iocr::iocr_type::INPUT,
        1,
        ids.input_frame_id,
        &layout.input,
        model.api,
        t,
    )
    .emit(&mut w)
    .map_err(e)?;
    cr_block(
        iocr::iocr_type::OUTPUT,
        2,
        ids.output_frame_id,
        &layout.output,
        model.api,
        t,
    )
    .emit(&mut w)
    .map_err(e)?;
    for b in expected_blocks(model) {
        b.emit(&mut w).map_err(e)?;
    }
    AlarmCrBlockReq {
        version: (1, 0),
        alarm_cr_type: alarm_cr::ALARM_CR_TYPE,
        lt: iocr::LT_PNIO,
        properties: AlarmCrProperties(0),
        rta_timeout_factor: t.rta_timeout_factor,
        rta_retries: t.rta_retries,
        local_alarm_reference: ids.alarm_ref,
        max_alarm_data_length: 200,
        tag_header_high: TagHeader::new(0, 6),
        tag_header_low: TagHeader::new(0, 5),
    }
    .emit(&mut w)
    .map_err(e)?;
    Ok(w.into_inner())
}

/// What a positive Connect response told us.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ConnectResult {
    pub ar: Option<ArBlockRes>,
    pub input_frame_id: Option<u16>,
    pub output_frame_id: Option<u16>,
    pub device_alarm_ref: Option<u16>,
    pub max_alarm_data_length: Option<u16>,
    pub module_diff: Option<ModuleDiffBlock>,
    /// Block types present that we did not interpret (ARServerBlock, ...).
    pub other_blocks: Vec<u16>,
}

/// Parse the blocks of a Connect response.
pub fn parse_connect_response(data: &[u8]) -> Result<ConnectResult, String> {
    let mut out = ConnectResult::default();
    for b in blocks(data) {
        let b = b.map_err(|e| format!("Connect response: {e}"))?;
        let err = |e: pn_protocol::wire::Error| {
            format!("Connect response block {:#06x}: {e}", b.block_type())
        };
        match b.block_type() {
            ar::BLOCK_TYPE_RES => out.ar = Some(ArBlockRes::parse(&b).map_err(err)?),
            iocr::BLOCK_TYPE_RES => {
                let r = IocrBlockRes::parse(&b).map_err(err)?;
                match r.iocr_type {
                    iocr::iocr_type::INPUT => out.input_frame_id = Some(r.frame_id),
                    iocr::iocr_type::OUTPUT => out.output_frame_id = Some(r.frame_id),
                    _ => {}
                }
            }
            alarm_cr::BLOCK_TYPE_RES => {
                let r = AlarmCrBlockRes::parse(&b).map_err(err)?;
                out.device_alarm_ref = Some(r.local_alarm_reference);
                out.max_alarm_data_length = Some(r.max_alarm_data_length);
            }
            module_diff::BLOCK_TYPE => {
                out.module_diff = Some(ModuleDiffBlock::parse(&b).map_err(err)?)
            }
            t => out.other_blocks.push(t),
        }
    }
    Ok(out)
}

/// A readable summary of a ModuleDiffBlock: one line per module/submodule that is not proper.
pub fn describe_module_diff(d: &ModuleDiffBlock) -> Vec<String> {
    let mut v = Vec::new();
    for api in &d.apis {
        for m in &api.modules {
            let ms = match m.module_state {
                module_diff::module_state::NO_MODULE => "no module",
                module_diff::module_state::WRONG_MODULE => "wrong module",
                module_diff::module_state::PROPER_MODULE => "proper module",
                module_diff::module_state::SUBSTITUTE => "substitute module",
                _ => "unknown module state",
            };
            for s in &m.submodules {
                let ii = match s.state.ident_info() {
                    module_diff::ident_info::OK => "ok",
                    module_diff::ident_info::SUBSTITUTE => "substitute",
                    module_diff::ident_info::WRONG => "wrong submodule",
                    module_diff::ident_info::NO_SUBMODULE => "no submodule",
                    _ => "unknown",
                };
                let ai = match s.state.ar_info() {
                    module_diff::ar_info::OWN => "own",
                    module_diff::ar_info::APPLICATION_READY_PENDING => "application ready pending",
                    module_diff::ar_info::SUPERORDINATED_LOCKED => "superordinated locked",
                    module_diff::ar_info::LOCKED_BY_IO_CONTROLLER => "locked by IO controller",
                    module_diff::ar_info::LOCKED_BY_IO_SUPERVISOR => "locked by IO supervisor",
                    _ => "unknown",
                };
                v.push(format!(
                    "api {} slot {} ({ms}, module ident {:#x}) subslot {:#x}: ident {ii}, ar {ai}{}, submodule ident {:#x}",
                    api.api,
                    m.slot,
                    m.module_ident,
                    s.subslot,
                    if s.state.fault() { ", fault" } else { "" },
                    s.submodule_ident
                ));
            }
            if m.submodules.is_empty() {
                v.push(format!(
                    "api {} slot {} ({ms}, module ident {:#x})",
                    api.api, m.slot, m.module_ident
                ));
            }
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::sample_model;

    pub(crate) fn ids() -> ArIds {
        ArIds {
            ar_uuid: Uuid([7; 16]),
            session_key: 1,
            initiator_mac: [2, 0, 0, 0, 0, 1],
            initiator_object: Uuid::pnio_object(1, 1, 0),
            station_name: "pn-controller".into(),
            input_frame_id: 0x8000,
            output_frame_id: 0x8001,
            alarm_ref: 1,
        }
    }

    #[test]
    fn connect_request_blocks_round_trip() {
        let m = sample_model();
        let l = m.layout();
        let data = connect_request(&m, &l, &ids(), &ArTiming::default()).unwrap();
        let types: Vec<u16> = blocks(&data).map(|b| b.unwrap().block_type()).collect();
        assert_eq!(types, vec![0x0101, 0x0102, 0x0102, 0x0104, 0x0104, 0x0103]);
        let bs: Vec<_> = blocks(&data).map(|b| b.unwrap()).collect();
        let a = ArBlockReq::parse(&bs[0]).unwrap();
        assert_eq!(a.cm_initiator_station_name, "pn-controller");
        let i = IocrBlockReq::parse(&bs[1]).unwrap();
        assert_eq!(i.data_length, 40);
        assert_eq!(i.apis[0].io_data_objects.len(), 4);
        assert_eq!(i.apis[0].iocs.len(), 1);
        let e = ExpectedSubmoduleBlockReq::parse(&bs[4]).unwrap();
        assert_eq!(
            e.modules[0].submodules[0].properties.io_type(),
            SubmoduleProperties::TYPE_INPUT_OUTPUT
        );
    }
}

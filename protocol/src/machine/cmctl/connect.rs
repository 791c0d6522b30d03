//! What the controller reads out of the device's answers in connection management: the blocks
//! of a Connect response (IEC 61158-6-10 IODConnectRes) and the ModuleDiffBlock's judgement
//! (which entries mean the device lacks what the controller expects).

use crate::wire::pnio::ar;
use crate::wire::pnio::cm::ConnectResponse;
use crate::wire::pnio::iocr;
use crate::wire::pnio::module_diff::{self, ModuleDiffBlock};

/// What a positive Connect response told us.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ConnectResult {
    pub ar: Option<ar::ArBlockRes>,
    pub input_frame_id: Option<u16>,
    pub output_frame_id: Option<u16>,
    pub device_alarm_ref: Option<u16>,
    pub max_alarm_data_length: Option<u16>,
    pub module_diff: Option<ModuleDiffBlock>,
    /// Block types present that we did not interpret (ARServerBlock, ...).
    pub other_blocks: Vec<u16>,
}

/// Parse the blocks of a Connect response (the protocol crate's parser).
pub fn parse_connect_response(data: &[u8]) -> Result<ConnectResult, String> {
    let r = ConnectResponse::parse(data).map_err(|e| format!("Connect response: {e}"))?;
    let frame_id = |t| {
        r.iocrs
            .iter()
            .find(|c| c.iocr_type == t)
            .map(|c| c.frame_id)
    };
    Ok(ConnectResult {
        input_frame_id: frame_id(iocr::iocr_type::INPUT),
        output_frame_id: frame_id(iocr::iocr_type::OUTPUT),
        device_alarm_ref: r.alarm_cr.as_ref().map(|a| a.local_alarm_reference),
        max_alarm_data_length: r.alarm_cr.as_ref().map(|a| a.max_alarm_data_length),
        ar: r.ar,
        module_diff: r.module_diff,
        other_blocks: r.other.iter().map(|b| b.block_type()).collect(),
    })
}

/// The entries of a ModuleDiffBlock that mean the device does not have what was expected: no
/// module, a wrong module, a wrong or missing submodule (a substitute is accepted, and so is
/// a proper submodule whose AR state is only "application ready pending").
pub fn module_diff_mismatches(d: &ModuleDiffBlock) -> Vec<String> {
    let mut v = Vec::new();
    for api in &d.apis {
        for m in &api.modules {
            let bad_module = matches!(
                m.module_state,
                module_diff::module_state::NO_MODULE | module_diff::module_state::WRONG_MODULE
            );
            let bad_subs: Vec<_> = m
                .submodules
                .iter()
                .filter(|s| {
                    matches!(
                        s.state.ident_info(),
                        module_diff::ident_info::WRONG | module_diff::ident_info::NO_SUBMODULE
                    )
                })
                .collect();
            if bad_module || !bad_subs.is_empty() {
                let one = ModuleDiffBlock {
                    version: d.version,
                    apis: vec![module_diff::DiffApi {
                        api: api.api,
                        modules: vec![m.clone()],
                    }],
                };
                v.extend(describe_module_diff(&one));
            }
        }
    }
    v
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

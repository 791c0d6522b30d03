//! The device's side of an IO AR's planning: its configuration as the protocol crate's
//! [`SlotEntry`] layout ([`layout`]), and the operator's view of an accepted AR ([`describe`]).
//!
//! The Connect itself (block checks, expected submodules against the layout, ModuleDiffBlock,
//! FrameIDs, the PPM's frame template and the CPM's layout) is decided by the protocol crate's
//! CMDEV: `pn_protocol::machine::cmdev::plan::plan_connect`, which `cm.rs` calls as the
//! machine's `CmdevApp::plan_io_ar`.

use pn_protocol::machine::cmdev::plan::{ConnectPlan, SlotEntry};
use pn_protocol::machine::cyclic::TIME_BASE_NS;

use crate::dataplane::{ArInfo, ModuleConfig};

/// The operator's view of an accepted AR (`GET /api/status` field `ar`); the controller's IP
/// is added when the AR reaches data exchange (the caller knows the Connect's source).
pub fn describe(ar: &pn_protocol::wire::pnio::ar::ArBlockReq, plan: &ConnectPlan) -> ArInfo {
    let oc = &plan.output_iocr;
    let m = ar.cm_initiator_mac;
    let send_clock_ns = u64::from(oc.send_clock_factor) * TIME_BASE_NS;
    ArInfo {
        ar_uuid: ar.ar_uuid.to_string(),
        controller_station_name: ar.cm_initiator_station_name.clone(),
        controller_mac: format!(
            "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
            m[0], m[1], m[2], m[3], m[4], m[5]
        ),
        controller_ip: String::new(),
        send_clock_factor: oc.send_clock_factor,
        send_clock_us: send_clock_ns / 1000,
        reduction_ratio: oc.reduction_ratio,
        cycle_us: plan.period_ns / 1000,
        watchdog_factor: oc.watchdog_factor,
        data_hold_factor: oc.data_hold_factor,
        data_hold_us: plan.dht_ns / 1000,
        mismatched_submodules: plan.wrong.iter().map(|&(a, b)| [a, b]).collect(),
    }
}

/// The configured layout with contiguous I and Q areas in configuration order.
pub fn layout(modules: &[ModuleConfig], i_area: usize, q_area: usize) -> Vec<SlotEntry> {
    let (mut i, mut q) = (0usize, 0usize);
    let mut v = Vec::new();
    for m in modules {
        for s in &m.submodules {
            let i_len = usize::from(s.input_length);
            let q_len = usize::from(s.output_length);
            // Parts beyond the (clamped) areas are not mapped.
            let i_ok = i + i_len <= i_area;
            let q_ok = q + q_len <= q_area;
            v.push(SlotEntry {
                slot: m.slot,
                subslot: s.subslot,
                module_ident: m.ident,
                submodule_ident: s.ident,
                i_len: if i_ok { i_len } else { 0 },
                i_off: i,
                q_len: if q_ok { q_len } else { 0 },
                q_off: q,
            });
            i += i_len;
            q += q_len;
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataplane::SubmoduleConfig;

    fn modules() -> Vec<ModuleConfig> {
        let sub = |subslot, ident, i, o| SubmoduleConfig {
            subslot,
            ident,
            input_length: i,
            output_length: o,
            ..Default::default()
        };
        vec![
            ModuleConfig {
                slot: 0,
                ident: 1,
                submodules: vec![sub(1, 1, 0, 0), sub(0x8000, 2, 0, 0), sub(0x8001, 3, 0, 0)],
            },
            ModuleConfig {
                slot: 1,
                ident: 0x30,
                submodules: vec![sub(1, 1, 4, 4)],
            },
        ]
    }

    #[test]
    fn layout_is_contiguous_per_direction() {
        let l = layout(&modules(), 4, 4);
        let s1 = l.iter().find(|s| s.slot == 1).unwrap();
        assert_eq!((s1.i_off, s1.i_len, s1.q_off, s1.q_len), (0, 4, 0, 4));
        // Lengths beyond the (clamped) areas are not mapped.
        let l = layout(&modules(), 2, 4);
        assert_eq!(l.iter().find(|s| s.slot == 1).unwrap().i_len, 0);
    }
}

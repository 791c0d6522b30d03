//! Application relations: the connect request checked against the configured layout
//! ([`plan_connect`], pure and unit-tested) and the state of a running AR.
//!
//! Error codes of a rejected Connect (PNIOStatus ErrorCode 0xDB, ErrorDecode 0x81 PNIO,
//! ErrorCode1 = faulty block: 0x01 ARBlockReq, 0x02 IOCRBlockReq, 0x03
//! ExpectedSubmoduleBlockReq, 0x04 AlarmCRBlockReq, 0x40 CMRPC; ErrorCode2 = the index of the
//! faulty field or the CMRPC reason) follow IEC 61158-6-10 as used by p-net
//! (`include/pnet_api.h` PNET_ERROR_CODE_1_*, `src/device/pf_cmdev.c` pf_cmdev_check_*).

use std::collections::BTreeSet;

use pn_protocol::machine::cmdev::connect::{check_connect, response_frame_ids, ConnectLimits};
use pn_protocol::wire::ethernet::{ethertype, EthernetRepr, MacAddr, VlanTag};
use pn_protocol::wire::pnio::cm::ConnectRequest;
use pn_protocol::wire::pnio::iocr::{iocr_type, IocrBlockReq};
use pn_protocol::wire::pnio::module_diff::{
    ar_info, ident_info, module_state, DiffApi, DiffModule, DiffSubmodule, ModuleDiffBlock,
    SubmoduleState,
};
use pn_protocol::wire::pnio::PnioStatus;
use pn_protocol::wire::rt::{self, ApduStatus, DataStatus, FrameId};

use crate::dataplane::{ArInfo, ModuleConfig};

use super::cyclic::{ConsumerJob, CopyItem, ProviderJob, CLOCK_UNIT_NS};

pub use pn_protocol::machine::cmdev::connect::{cmrpc, connect_error, err1};

/// One configured submodule with its offsets in the process image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlotEntry {
    pub slot: u16,
    pub subslot: u16,
    pub module_ident: u32,
    pub submodule_ident: u32,
    /// Controller -> device bytes (PROFINET "output" data; the API's I area).
    pub i_len: usize,
    pub i_off: usize,
    /// Device -> controller bytes (PROFINET "input" data; the API's Q area).
    pub q_len: usize,
    pub q_off: usize,
}

/// The operator's view of an accepted AR (`GET /api/status` field `ar`); the controller's IP
/// is added when the AR reaches data exchange (the caller knows the Connect's source).
pub fn describe(ar: &pn_protocol::wire::pnio::ar::ArBlockReq, plan: &ConnectPlan) -> ArInfo {
    let oc = &plan.output_iocr;
    let m = ar.cm_initiator_mac;
    let send_clock_ns = u64::from(oc.send_clock_factor) * CLOCK_UNIT_NS;
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

/// Everything a successful IO-AR Connect produces.
#[derive(Debug, Clone)]
pub struct ConnectPlan {
    pub input_frame_id: u16,
    pub output_frame_id: u16,
    pub input_iocr: IocrBlockReq,
    pub output_iocr: IocrBlockReq,
    pub module_diff: Option<ModuleDiffBlock>,
    /// Submodules that differ from the expectation (IOPS/IOCS BAD).
    pub wrong: BTreeSet<(u16, u16)>,
    pub provider: ProviderJob,
    pub consumer: ConsumerJob,
    pub period_ns: u64,
    pub dht_ns: u64,
}

/// Check an IO-AR connect request (the standard's block checks live in the protocol crate's
/// CMDEV, [`check_connect`]) against the layout, and build the cyclic jobs.
/// `taken`: frame IDs already used by other ARs. `safe`: value for unused I bytes.
pub fn plan_connect(
    req: &ConnectRequest,
    limits: &ConnectLimits,
    slots: &[SlotEntry],
    own_mac: [u8; 6],
    i_area: usize,
    safe: u8,
    taken: &[u16],
) -> Result<ConnectPlan, PnioStatus> {
    check_connect(req, limits)?;
    let ar = &req.ar;
    let cr = |t| {
        req.iocrs
            .iter()
            .find(|c| c.iocr_type == t)
            .cloned()
            .ok_or(connect_error(err1::CMRPC, cmrpc::IOCR_MISSING))
    };
    let (ic, oc) = (cr(iocr_type::INPUT)?, cr(iocr_type::OUTPUT)?);

    // Expected submodules against the configuration.
    let mut wrong = BTreeSet::new();
    let mut diff_modules: Vec<DiffModule> = Vec::new();
    // (slot, subslot) -> (expected PN-input len, PN-output len)
    let mut exp_len = std::collections::BTreeMap::new();
    for blk in &req.expected {
        for m in &blk.modules {
            let cfg_mod: Vec<&SlotEntry> = slots.iter().filter(|s| s.slot == m.slot).collect();
            let module_wrong = cfg_mod.first().map(|s| s.module_ident != m.module_ident);
            let mut dsubs = Vec::new();
            for s in &m.submodules {
                let in_len = s.input().map_or(0, |d| d.data_length);
                let out_len = s.output().map_or(0, |d| d.data_length);
                exp_len.insert(
                    (m.slot, s.subslot),
                    (usize::from(in_len), usize::from(out_len)),
                );
                let cfg = cfg_mod.iter().find(|c| c.subslot == s.subslot);
                let state = match cfg {
                    None => Some((0, ident_info::NO_SUBMODULE)),
                    Some(c)
                        if module_wrong == Some(true) || c.submodule_ident != s.submodule_ident =>
                    {
                        Some((c.submodule_ident, ident_info::WRONG))
                    }
                    Some(c)
                        if c.q_len != usize::from(in_len) || c.i_len != usize::from(out_len) =>
                    {
                        Some((c.submodule_ident, ident_info::WRONG))
                    }
                    Some(_) => None,
                };
                if let Some((ident, info)) = state {
                    wrong.insert((m.slot, s.subslot));
                    dsubs.push(DiffSubmodule {
                        subslot: s.subslot,
                        submodule_ident: ident,
                        state: SubmoduleState::new(ar_info::OWN, info),
                    });
                }
            }
            let mstate = match module_wrong {
                None => Some(module_state::NO_MODULE),
                Some(true) => Some(module_state::WRONG_MODULE),
                Some(false) if !dsubs.is_empty() => Some(module_state::PROPER_MODULE),
                Some(false) => None,
            };
            if let Some(ms) = mstate {
                diff_modules.push(DiffModule {
                    slot: m.slot,
                    module_ident: cfg_mod.first().map_or(0, |c| c.module_ident),
                    module_state: ms,
                    submodules: if ms == module_state::NO_MODULE {
                        Vec::new()
                    } else {
                        dsubs
                    },
                });
            }
        }
    }
    let module_diff = (!diff_modules.is_empty()).then(|| ModuleDiffBlock {
        version: (1, 0),
        apis: vec![DiffApi {
            api: 0,
            modules: diff_modules,
        }],
    });
    let entry = |slot: u16, subslot: u16| {
        slots
            .iter()
            .find(|s| s.slot == slot && s.subslot == subslot)
    };
    let good = |slot: u16, subslot: u16| {
        !wrong.contains(&(slot, subslot)) && entry(slot, subslot).is_some()
    };

    let (input_frame_id, output_frame_id) = response_frame_ids(&ic, &oc, taken);

    // Provider (input CR) frame template.
    let c_sdu = usize::from(ic.data_length);
    let tag = ic.tag_header;
    let eth = EthernetRepr {
        dst: MacAddr(ar.cm_initiator_mac),
        src: MacAddr(own_mac),
        vlan: Some(VlanTag {
            pcp: if tag.priority() == 0 {
                6
            } else {
                tag.priority()
            },
            dei: false,
            vid: tag.vlan_id(),
        }),
        ethertype: ethertype::PROFINET,
    };
    let mut frame = vec![0u8; 1600];
    let mut sdu = vec![0u8; c_sdu];
    let mut items = Vec::new();
    let hdr = eth.header_len() + rt::FRAME_ID_LEN;
    for api in &ic.apis {
        for o in &api.io_data_objects {
            let (len, _) = exp_len.get(&(o.slot, o.subslot)).copied().unwrap_or((0, 0));
            let off = usize::from(o.frame_offset);
            if off + len + 1 > c_sdu {
                return Err(connect_error(err1::IOCR_BLOCK, 19));
            }
            let ok = good(o.slot, o.subslot);
            if ok && len > 0 {
                let e = entry(o.slot, o.subslot).copied();
                if let Some(e) = e {
                    items.push(CopyItem {
                        frame_off: hdr + off,
                        area_off: e.q_off,
                        len: len.min(e.q_len),
                    });
                }
            }
            sdu[off + len] = if ok { 0x80 } else { 0x00 };
        }
        for o in &api.iocs {
            let off = usize::from(o.frame_offset);
            if off >= c_sdu {
                return Err(connect_error(err1::IOCR_BLOCK, 20));
            }
            sdu[off] = if good(o.slot, o.subslot) { 0x80 } else { 0x00 };
        }
    }
    let st = ApduStatus {
        cycle_counter: 0,
        data_status: DataStatus::RUNNING,
        transfer_status: 0,
    };
    let n = rt::fill_cyclic_frame(&mut frame, &eth, FrameId(input_frame_id), &sdu, st)
        .map_err(|_| connect_error(err1::IOCR_BLOCK, 8))?;
    frame.truncate(n);
    let step = ic.send_clock_factor.saturating_mul(ic.reduction_ratio);
    let period_ns = u64::from(step) * CLOCK_UNIT_NS;
    let provider = ProviderJob {
        frame,
        status_at: hdr + c_sdu,
        items,
        period_ns,
        counter_step: step,
        frame_id: input_frame_id,
    };

    // Consumer (output CR).
    let oc_sdu = usize::from(oc.data_length);
    let mut citems = Vec::new();
    let mut iops_offs = Vec::new();
    let mut iocs_offs = Vec::new();
    for api in &oc.apis {
        for o in &api.io_data_objects {
            let (_, len) = exp_len.get(&(o.slot, o.subslot)).copied().unwrap_or((0, 0));
            let off = usize::from(o.frame_offset);
            if off + len + 1 > oc_sdu {
                return Err(connect_error(err1::IOCR_BLOCK, 19));
            }
            if good(o.slot, o.subslot) && len > 0 {
                if let Some(e) = entry(o.slot, o.subslot) {
                    citems.push(CopyItem {
                        frame_off: off,
                        area_off: e.i_off,
                        len: len.min(e.i_len),
                    });
                    iops_offs.push(off + len);
                }
            }
        }
        for o in &api.iocs {
            let off = usize::from(o.frame_offset);
            if off >= oc_sdu {
                return Err(connect_error(err1::IOCR_BLOCK, 20));
            }
            if good(o.slot, o.subslot) && entry(o.slot, o.subslot).is_some_and(|e| e.q_len > 0) {
                iocs_offs.push(off);
            }
        }
    }
    let ostep = oc.send_clock_factor.saturating_mul(oc.reduction_ratio);
    let dht_ns = u64::from(ostep) * CLOCK_UNIT_NS * u64::from(oc.data_hold_factor.max(1));
    let consumer = ConsumerJob {
        frame_id: output_frame_id,
        src: ar.cm_initiator_mac,
        c_sdu_len: oc_sdu,
        items: citems,
        iops_offs,
        iocs_offs,
        scratch: vec![safe; i_area],
        dht_ns,
        last_counter: None,
    };
    Ok(ConnectPlan {
        input_frame_id,
        output_frame_id,
        input_iocr: ic,
        output_iocr: oc,
        module_diff,
        wrong,
        provider,
        consumer,
        period_ns,
        dht_ns,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataplane::SubmoduleConfig;
    use pn_protocol::wire::pnio::alarm_cr::{AlarmCrBlockReq, AlarmCrProperties, ALARM_CR_TYPE};
    use pn_protocol::wire::pnio::ar::{ar_type, ArBlockReq, ArProperties};
    use pn_protocol::wire::pnio::expected::ExpectedSubmoduleBlockReq;
    use pn_protocol::wire::pnio::expected::{
        DataDescription, ExpectedModule, ExpectedSubmodule, SubmoduleProperties,
    };
    use pn_protocol::wire::pnio::iocr::IocrProperties;
    use pn_protocol::wire::pnio::iocr::{IoObject, IocrApi, TagHeader, LT_PNIO};
    use pn_protocol::wire::rpc::Uuid;

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

    fn obj(slot: u16, subslot: u16, frame_offset: u16) -> IoObject {
        IoObject {
            slot,
            subslot,
            frame_offset,
        }
    }

    fn iocr(ty: u16, frame_id: u16, objs: Vec<IoObject>, iocs: Vec<IoObject>) -> IocrBlockReq {
        IocrBlockReq {
            version: (1, 0),
            iocr_type: ty,
            iocr_reference: ty,
            lt: LT_PNIO,
            properties: IocrProperties(IocrProperties::RT_CLASS_1),
            data_length: 40,
            frame_id,
            send_clock_factor: 32,
            reduction_ratio: 2,
            phase: 1,
            sequence: 0,
            frame_send_offset: 0xFFFF_FFFF,
            watchdog_factor: 3,
            data_hold_factor: 3,
            tag_header: TagHeader::new(0, 6),
            multicast_mac: [0; 6],
            apis: vec![IocrApi {
                api: 0,
                io_data_objects: objs,
                iocs,
            }],
        }
    }

    fn request(slot1_ident: u32) -> ConnectRequest {
        let sub = |subslot, ident, props, descriptions| ExpectedSubmodule {
            subslot,
            submodule_ident: ident,
            properties: SubmoduleProperties(props),
            descriptions,
        };
        ConnectRequest {
            ar: ArBlockReq {
                version: (1, 0),
                ar_type: ar_type::IOCAR,
                ar_uuid: Uuid::from_bytes([1; 16]),
                session_key: 1,
                cm_initiator_mac: [2, 0, 0, 0, 0, 1],
                cm_initiator_object_uuid: Uuid::pnio_object(1, 1, 0),
                // Legacy startup: RT_CLASS_1 is allowed.
                properties: ArProperties(
                    ArProperties::STATE_ACTIVE | ArProperties::PARAMETERIZATION_SERVER,
                ),
                cm_initiator_activity_timeout_factor: 100,
                cm_initiator_udp_rt_port: 0x8892,
                cm_initiator_station_name: "plc".into(),
            },
            iocrs: vec![
                iocr(
                    iocr_type::INPUT,
                    0xC010,
                    vec![
                        obj(0, 1, 0),
                        obj(0, 0x8000, 1),
                        obj(0, 0x8001, 2),
                        obj(1, 1, 3),
                    ],
                    vec![obj(1, 1, 8)],
                ),
                iocr(
                    iocr_type::OUTPUT,
                    0xFFFF,
                    vec![obj(1, 1, 0)],
                    vec![
                        obj(0, 1, 5),
                        obj(0, 0x8000, 6),
                        obj(0, 0x8001, 7),
                        obj(1, 1, 8),
                    ],
                ),
            ],
            alarm_cr: Some(AlarmCrBlockReq {
                version: (1, 0),
                alarm_cr_type: ALARM_CR_TYPE,
                lt: LT_PNIO,
                properties: AlarmCrProperties(0),
                rta_timeout_factor: 1,
                rta_retries: 3,
                local_alarm_reference: 3,
                max_alarm_data_length: 200,
                tag_header_high: TagHeader::new(0, 6),
                tag_header_low: TagHeader::new(0, 5),
            }),
            expected: vec![ExpectedSubmoduleBlockReq {
                version: (1, 0),
                modules: vec![
                    ExpectedModule {
                        api: 0,
                        slot: 0,
                        module_ident: 1,
                        module_properties: 0,
                        submodules: vec![
                            sub(1, 1, 0, vec![DataDescription::input(0)]),
                            sub(0x8000, 2, 0, vec![DataDescription::input(0)]),
                            sub(0x8001, 3, 0, vec![DataDescription::input(0)]),
                        ],
                    },
                    ExpectedModule {
                        api: 0,
                        slot: 1,
                        module_ident: 0x30,
                        module_properties: 0,
                        submodules: vec![sub(
                            1,
                            slot1_ident,
                            3,
                            vec![DataDescription::input(4), DataDescription::output(4)],
                        )],
                    },
                ],
            }],
            other: vec![],
            wire_order: vec![],
        }
    }

    fn plan(req: &ConnectRequest) -> Result<ConnectPlan, PnioStatus> {
        let slots = layout(&modules(), 4, 4);
        plan_connect(
            req,
            &ConnectLimits::default(),
            &slots,
            [2, 0, 0, 0, 0, 2],
            4,
            0xAA,
            &[],
        )
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

    #[test]
    fn good_connect_builds_jobs() {
        let p = plan(&request(1)).unwrap();
        assert!(p.module_diff.is_none());
        assert!(p.wrong.is_empty());
        assert_eq!(p.input_frame_id, 0xC010, "requested input FrameID kept");
        assert_eq!(
            p.output_frame_id, 0xC000,
            "output FrameID assigned by the device in the RT_CLASS_1 range"
        );
        assert_eq!(p.period_ns, 2_000_000);
        assert_eq!(p.dht_ns, 6_000_000);
        // Provider: Ethernet (18, tagged) + FrameID (2) + C_SDU offset 3.
        assert_eq!(
            p.provider.items,
            vec![CopyItem {
                frame_off: 23,
                area_off: 0,
                len: 4
            }]
        );
        let sdu = &p.provider.frame[20..60];
        assert_eq!(&sdu[..3], &[0x80, 0x80, 0x80], "DAP IOPS GOOD");
        assert_eq!(sdu[7], 0x80, "slot 1 IOPS");
        assert_eq!(sdu[8], 0x80, "IOCS for the controller's data");
        assert_eq!(p.provider.status_at, 60);
        assert_eq!(p.provider.counter_step, 64);
        // Consumer.
        assert_eq!(p.consumer.items.len(), 1);
        assert_eq!(p.consumer.iops_offs, vec![4]);
        assert_eq!(p.consumer.iocs_offs, vec![8]);
        assert_eq!(p.consumer.scratch, vec![0xAA; 4]);
    }

    #[test]
    fn wrong_submodule_gives_module_diff_and_bad_ioxs() {
        let p = plan(&request(99)).unwrap();
        let md = p.module_diff.expect("ModuleDiffBlock");
        let m = &md.apis[0].modules[0];
        assert_eq!((m.slot, m.module_state), (1, module_state::PROPER_MODULE));
        assert_eq!(m.submodules[0].state.ident_info(), ident_info::WRONG);
        assert_eq!(
            m.submodules[0].submodule_ident, 1,
            "the real ident is reported"
        );
        assert!(p.provider.items.is_empty());
        let sdu = &p.provider.frame[20..60];
        assert_eq!((sdu[7], sdu[8]), (0x00, 0x00));
        assert!(p.consumer.items.is_empty() && p.consumer.iocs_offs.is_empty());
    }

    #[test]
    fn faulty_requests_are_refused_with_pnio_status() {
        let mut r = request(1);
        r.iocrs[0].data_length = 20;
        assert_eq!(plan(&r).unwrap_err().octets(), [0xDB, 0x81, 0x02, 8]);
        let mut r = request(1);
        r.iocrs[0].apis[0].io_data_objects[3].frame_offset = 39;
        assert_eq!(plan(&r).unwrap_err().octets()[..3], [0xDB, 0x81, 0x02]);
        let mut r = request(1);
        r.iocrs[1].reduction_ratio = 3;
        assert_eq!(plan(&r).unwrap_err().octets(), [0xDB, 0x81, 0x02, 11]);
        let mut r = request(1);
        r.alarm_cr = None;
        assert_eq!(plan(&r).unwrap_err().octets(), [0xDB, 0x81, 0x40, 0x03]);
        let mut r = request(1);
        r.iocrs.pop();
        assert_eq!(plan(&r).unwrap_err().octets(), [0xDB, 0x81, 0x40, 0x02]);
        let mut r = request(1);
        r.iocrs[0].properties = IocrProperties(IocrProperties::RT_CLASS_3);
        assert_eq!(plan(&r).unwrap_err().octets(), [0xDB, 0x81, 0x02, 7]);
    }

    #[test]
    fn missing_module_is_reported() {
        let mut r = request(1);
        r.expected[0].modules.push(ExpectedModule {
            api: 0,
            slot: 5,
            module_ident: 7,
            module_properties: 0,
            submodules: vec![],
        });
        let p = plan(&r).unwrap();
        let md = p.module_diff.unwrap();
        let m = &md.apis[0].modules[0];
        assert_eq!((m.slot, m.module_state), (5, module_state::NO_MODULE));
    }
}

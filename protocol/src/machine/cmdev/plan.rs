//! CMDEV's comparison of a Connect's expected configuration with the device's real one, and
//! the cyclic data layout of the IO AR it produces (IEC 61158-6-10 CMDEV, the IODConnectReq
//! service: ExpectedSubmoduleBlockReq against the RealIdentificationData, answered with a
//! ModuleDiffBlock; the IOCRs' IODataObjects and IOCS placed in the frames the PPM sends and
//! the CPM receives). p-net does this in `src/device/pf_cmdev.c`
//! (`pf_cmdev_generate_submodule_diff`, `pf_cmdev_check_iocr_param`'s offset checks).
//!
//! [`plan_connect`] runs after the block checks ([`super::connect::check_connect`]) as the
//! device application's `CmdevApp::plan_io_ar`; the daemon and pn-farm convert their
//! configuration into [`SlotEntry`]s and call it.
//!
//! A submodule is "wrong" (IOPS/IOCS BAD, no data copied) when it is missing, its module or
//! submodule ident differs, or its data lengths differ from the expectation; the connect is
//! still accepted and the ModuleDiffBlock tells the controller which ones.

use std::collections::{BTreeMap, BTreeSet};

use crate::wire::ethernet::{ethertype, EthernetRepr, MacAddr, VlanTag};
use crate::wire::pnio::cm::ConnectRequest;
use crate::wire::pnio::expected::{ExpectedModule, ExpectedSubmoduleBlockReq};
use crate::wire::pnio::iocr::{iocr_type, IocrBlockReq};
use crate::wire::pnio::module_diff::{
    ar_info, ident_info, module_state, DiffApi, DiffModule, DiffSubmodule, ModuleDiffBlock,
    SubmoduleState,
};
use crate::wire::pnio::PnioStatus;
use crate::wire::rt::{self, ApduStatus, DataStatus, FrameId, Ioxs};

use super::connect::{
    check_connect, cmrpc, connect_error, err1, iocr_field, response_frame_ids, ConnectLimits,
};
use crate::machine::cpm::ConsumerCr;
use crate::machine::cyclic::TIME_BASE_NS;
use crate::machine::ppm::{CopyItem, ProviderTemplate};

/// One configured submodule with its offsets in the process image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlotEntry {
    pub slot: u16,
    pub subslot: u16,
    pub module_ident: u32,
    pub submodule_ident: u32,
    /// Controller -> device bytes (PROFINET "output" data; the device API's I area).
    pub i_len: usize,
    pub i_off: usize,
    /// Device -> controller bytes (PROFINET "input" data; the device API's Q area).
    pub q_len: usize,
    pub q_off: usize,
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
    pub provider: ProviderTemplate,
    pub consumer: ConsumerCr,
    pub period_ns: u64,
    pub dht_ns: u64,
}

/// Check an IO-AR connect request (the block checks, then the expected submodules against
/// `slots`) and build the cyclic layout. `own_mac`: the provider frame's source. `i_area`: the
/// I area's length; `safe`: the value of its bytes no submodule writes. `taken`: FrameIDs used
/// by other ARs.
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
    let cr = |t| {
        req.iocrs
            .iter()
            .find(|c| c.iocr_type == t)
            .cloned()
            .ok_or(connect_error(err1::CMRPC, cmrpc::IOCR_MISSING))
    };
    let (ic, oc) = (cr(iocr_type::INPUT)?, cr(iocr_type::OUTPUT)?);
    let cmp = Comparison::new(&req.expected, slots);
    let (input_frame_id, output_frame_id) = response_frame_ids(&ic, &oc, taken);
    let peer = req.ar.cm_initiator_mac;
    let provider = provider_template(&ic, &cmp, peer, own_mac, input_frame_id)?;
    let consumer = consumer_cr(&oc, &cmp, peer, output_frame_id, vec![safe; i_area])?;
    let (period_ns, dht_ns) = (provider.period_ns, consumer.dht_ns);
    Ok(ConnectPlan {
        input_frame_id,
        output_frame_id,
        input_iocr: ic,
        output_iocr: oc,
        module_diff: cmp.module_diff,
        wrong: cmp.wrong,
        provider,
        consumer,
        period_ns,
        dht_ns,
    })
}

/// The expected configuration compared with the real one.
struct Comparison<'a> {
    slots: &'a [SlotEntry],
    /// (slot, subslot) -> expected (PN-input length, PN-output length).
    lens: BTreeMap<(u16, u16), (usize, usize)>,
    wrong: BTreeSet<(u16, u16)>,
    module_diff: Option<ModuleDiffBlock>,
}

impl<'a> Comparison<'a> {
    fn new(expected: &[ExpectedSubmoduleBlockReq], slots: &'a [SlotEntry]) -> Self {
        let mut c = Comparison {
            slots,
            lens: BTreeMap::new(),
            wrong: BTreeSet::new(),
            module_diff: None,
        };
        let diff: Vec<DiffModule> = expected
            .iter()
            .flat_map(|blk| &blk.modules)
            .filter_map(|m| c.module(m))
            .collect();
        c.module_diff = (!diff.is_empty()).then(|| ModuleDiffBlock {
            version: (1, 0),
            apis: vec![DiffApi {
                api: 0,
                modules: diff,
            }],
        });
        c
    }

    /// One expected module: its ModuleDiffBlock entry, if it differs.
    fn module(&mut self, m: &ExpectedModule) -> Option<DiffModule> {
        let slots = self.slots;
        let cfg_mod: Vec<&SlotEntry> = slots.iter().filter(|s| s.slot == m.slot).collect();
        let module_wrong = cfg_mod.first().map(|s| s.module_ident != m.module_ident);
        let mut dsubs = Vec::new();
        for s in &m.submodules {
            let in_len = usize::from(s.input().map_or(0, |d| d.data_length));
            let out_len = usize::from(s.output().map_or(0, |d| d.data_length));
            self.lens.insert((m.slot, s.subslot), (in_len, out_len));
            let state = match cfg_mod.iter().find(|c| c.subslot == s.subslot) {
                None => Some((0, ident_info::NO_SUBMODULE)),
                Some(c) if module_wrong == Some(true) || c.submodule_ident != s.submodule_ident => {
                    Some((c.submodule_ident, ident_info::WRONG))
                }
                Some(c) if c.q_len != in_len || c.i_len != out_len => {
                    Some((c.submodule_ident, ident_info::WRONG))
                }
                Some(_) => None,
            };
            if let Some((ident, info)) = state {
                self.wrong.insert((m.slot, s.subslot));
                dsubs.push(DiffSubmodule {
                    subslot: s.subslot,
                    submodule_ident: ident,
                    state: SubmoduleState::new(ar_info::OWN, info),
                });
            }
        }
        let ms = match module_wrong {
            None => module_state::NO_MODULE,
            Some(true) => module_state::WRONG_MODULE,
            Some(false) if !dsubs.is_empty() => module_state::PROPER_MODULE,
            Some(false) => return None,
        };
        Some(DiffModule {
            slot: m.slot,
            module_ident: cfg_mod.first().map_or(0, |c| c.module_ident),
            module_state: ms,
            submodules: if ms == module_state::NO_MODULE {
                Vec::new()
            } else {
                dsubs
            },
        })
    }

    fn entry(&self, slot: u16, subslot: u16) -> Option<&'a SlotEntry> {
        self.slots
            .iter()
            .find(|s| s.slot == slot && s.subslot == subslot)
    }

    /// Configured and as expected: its data is exchanged, its IOxS are GOOD.
    fn good(&self, slot: u16, subslot: u16) -> bool {
        !self.wrong.contains(&(slot, subslot)) && self.entry(slot, subslot).is_some()
    }

    /// Expected (PN-input, PN-output) lengths of a submodule (0 when not expected).
    fn lens(&self, slot: u16, subslot: u16) -> (usize, usize) {
        self.lens.get(&(slot, subslot)).copied().unwrap_or((0, 0))
    }
}

/// One IODataObject or IOCS entry of an IOCR, its C_SDU offset checked.
enum Object<'a> {
    /// Data of `len` bytes at `off`, its IOPS right after it. `mapped`: the configured entry
    /// when the submodule is good and has data in this direction.
    Data {
        off: usize,
        len: usize,
        good: bool,
        mapped: Option<&'a SlotEntry>,
    },
    /// An IOCS at `off`. `mapped`: the configured entry when the submodule is good.
    Iocs {
        off: usize,
        good: bool,
        mapped: Option<&'a SlotEntry>,
    },
}

/// Walk the IOCR's IODataObjects and IOCS in request order (so the first faulty offset is the
/// one reported). `len_of` picks the direction's length from the expected (input, output)
/// lengths.
fn walk_iocr<'a>(
    cr: &IocrBlockReq,
    cmp: &Comparison<'a>,
    len_of: fn((usize, usize)) -> usize,
    mut f: impl FnMut(Object<'a>),
) -> Result<(), PnioStatus> {
    let c_sdu = usize::from(cr.data_length);
    let err = |field| Err(connect_error(err1::IOCR_BLOCK, field));
    for api in &cr.apis {
        for o in &api.io_data_objects {
            let len = len_of(cmp.lens(o.slot, o.subslot));
            let off = usize::from(o.frame_offset);
            if off + len + 1 > c_sdu {
                return err(iocr_field::IO_DATA_OBJECT_OFFSET);
            }
            let good = cmp.good(o.slot, o.subslot);
            let mapped = cmp.entry(o.slot, o.subslot).filter(|_| good && len > 0);
            f(Object::Data {
                off,
                len,
                good,
                mapped,
            });
        }
        for o in &api.iocs {
            let off = usize::from(o.frame_offset);
            if off >= c_sdu {
                return err(iocr_field::IOCS_OFFSET);
            }
            let good = cmp.good(o.slot, o.subslot);
            let mapped = cmp.entry(o.slot, o.subslot).filter(|_| good);
            f(Object::Iocs { off, good, mapped });
        }
    }
    Ok(())
}

fn ioxs(good: bool) -> u8 {
    if good {
        Ioxs::GOOD.0
    } else {
        Ioxs::BAD.0
    }
}

/// SendClockFactor × ReductionRatio: the CycleCounter step and the period in 31.25 µs units.
fn cycle_step(cr: &IocrBlockReq) -> u16 {
    cr.send_clock_factor.saturating_mul(cr.reduction_ratio)
}

/// The PPM's frame of the input CR (device -> controller): IOPS/IOCS fixed by the comparison,
/// the data of good submodules copied in per cycle.
fn provider_template(
    ic: &IocrBlockReq,
    cmp: &Comparison,
    peer: [u8; 6],
    own_mac: [u8; 6],
    frame_id: u16,
) -> Result<ProviderTemplate, PnioStatus> {
    let c_sdu = usize::from(ic.data_length);
    let tag = ic.tag_header;
    let eth = EthernetRepr {
        dst: MacAddr(peer),
        src: MacAddr(own_mac),
        vlan: Some(VlanTag {
            // Priority 0 in the request: RT frames go with their default priority 6.
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
    walk_iocr(
        ic,
        cmp,
        |(input, _)| input,
        |o| match o {
            Object::Data {
                off,
                len,
                good,
                mapped,
            } => {
                if let Some(e) = mapped {
                    items.push(CopyItem {
                        frame_off: hdr + off,
                        area_off: e.q_off,
                        len: len.min(e.q_len),
                    });
                }
                sdu[off + len] = ioxs(good);
            }
            Object::Iocs { off, good, .. } => sdu[off] = ioxs(good),
        },
    )?;
    let st = ApduStatus {
        cycle_counter: 0,
        data_status: DataStatus::RUNNING,
        transfer_status: 0,
    };
    let n = rt::fill_cyclic_frame(&mut frame, &eth, FrameId(frame_id), &sdu, st)
        .map_err(|_| connect_error(err1::IOCR_BLOCK, iocr_field::DATA_LENGTH))?;
    frame.truncate(n);
    let step = cycle_step(ic);
    Ok(ProviderTemplate {
        frame,
        status_at: hdr + c_sdu,
        items,
        period_ns: u64::from(step) * TIME_BASE_NS,
        counter_step: step,
        frame_id,
    })
}

/// The CPM's layout of the output CR (controller -> device). `scratch`: the I area, pre-filled
/// with the safe value.
fn consumer_cr(
    oc: &IocrBlockReq,
    cmp: &Comparison,
    peer: [u8; 6],
    frame_id: u16,
    scratch: Vec<u8>,
) -> Result<ConsumerCr, PnioStatus> {
    let mut items = Vec::new();
    let mut iops_offs = Vec::new();
    let mut iocs_offs = Vec::new();
    walk_iocr(
        oc,
        cmp,
        |(_, output)| output,
        |o| match o {
            Object::Data {
                off,
                len,
                mapped: Some(e),
                ..
            } => {
                items.push(CopyItem {
                    frame_off: off,
                    area_off: e.i_off,
                    len: len.min(e.i_len),
                });
                iops_offs.push(off + len);
            }
            Object::Data { .. } => {}
            // Only the IOCS for data the device really sends counts.
            Object::Iocs { off, mapped, .. } => {
                if mapped.is_some_and(|e| e.q_len > 0) {
                    iocs_offs.push(off);
                }
            }
        },
    )?;
    let dht_ns = u64::from(cycle_step(oc)) * TIME_BASE_NS * u64::from(oc.data_hold_factor.max(1));
    Ok(ConsumerCr {
        frame_id,
        src: peer,
        c_sdu_len: usize::from(oc.data_length),
        items,
        iops_offs,
        iocs_offs,
        scratch,
        dht_ns,
        last_counter: None,
    })
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;

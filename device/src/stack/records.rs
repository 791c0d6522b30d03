//! Record data of the device: I&M0-4, RealIdentificationData, diagnosis records and user
//! records, for Read (with an AR or implicit) and Write (single and inside MultipleWrite).
//!
//! Errors are PNIORW statuses (ErrorCode 0xDE read / 0xDF write, ErrorDecode 0x80, ErrorCode1
//! from `pn_protocol::wire::pnio::record::rw_error`), as IEC 61158-6-10 and p-net
//! (`pf_cmrdr.c`, `pf_cmwrr.c`) answer them.

use pn_protocol::wire::Emit;
use std::collections::BTreeMap;

use pn_protocol::wire::field::Writer;
use pn_protocol::wire::pnio::diagnosis::{
    ChannelDiagnosis, ChannelProperties, DiagnosisDataRepr, Direction, Severity, Specifier,
    UserStructure,
};
use pn_protocol::wire::pnio::ident::{
    ApiIdent, IdentificationDataRepr, ModuleIdent, SubmoduleIdent,
};
use pn_protocol::wire::pnio::im::{
    FilterKind, Im0, Im0FilterData, Im1, Im2, Im3, Im4, ImRecord, SoftwareRevision,
};
use pn_protocol::wire::pnio::pdev::{
    self, PdInterfaceDataReal, PdPortDataReal, PdPortStatistic, Peer,
};
use pn_protocol::wire::pnio::record::{index, rw_error, RecordAddress};
use pn_protocol::wire::pnio::PnioStatus;

use crate::dataplane::{
    DiagnosisEntry, Im0Config, ImRemanent, ModuleConfig, StackConfig, StackEvent,
};

/// The record store of one running device.
#[derive(Debug, Clone)]
pub struct Records {
    pub vendor_id: u16,
    pub im0: Im0Config,
    pub im: ImRemanent,
    /// Raw I&M1-4 records as written (with BlockHeader), keyed by index.
    pub im_raw: BTreeMap<u16, Vec<u8>>,
    /// Other written records keyed by (slot, subslot, index).
    pub user: BTreeMap<(u16, u16, u16), Vec<u8>>,
    pub modules: Vec<ModuleConfig>,
    /// Active device diagnosis entries.
    pub diags: Vec<DiagnosisEntry>,
    /// Interface and port state for the PDev real-data records; the CM refreshes it before
    /// it reads one of them ([`is_pdev_real`]).
    pub pdev: PdevLive,
}

/// What the PDev real-data records (PDPortDataReal 0x802A, PDInterfaceDataReal 0x8080,
/// PDPortStatistic 0x8072, PDRealData 0xF841) report: the interface and its port now.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PdevLive {
    /// NameOfStation: the interface's Chassis ID.
    pub station_name: String,
    pub mac: [u8; 6],
    /// Address, mask, gateway.
    pub ip_suite: [[u8; 4]; 3],
    pub link_up: bool,
    pub mau_type: u16,
    /// The LLDP neighbour: its port ID and chassis ID (PROFINET port and station name) and
    /// MAC address.
    pub peer: Option<(String, String, [u8; 6])>,
    /// The NIC's counters (`None`: not readable). The device has one port on one NIC, so the
    /// interface and the port report the same counters.
    pub stats: Option<PdPortStatistic>,
}

/// Whether reading `index` needs [`Records::pdev`] to be current.
pub fn is_pdev_real(index: u16) -> bool {
    matches!(
        index,
        index::SUB_PD_PORT_DATA_REAL
            | index::SUB_PD_INTERFACE_DATA_REAL
            | index::SUB_PD_PORT_STATISTIC
            | index::PD_REAL_DATA
    )
}

/// The interface submodule of the DAP; its ports follow at 0x8001.. (GSDML
/// `InterfaceSubmoduleItem` / `PortSubmoduleItem`).
const INTERFACE_SUBSLOT: u16 = 0x8000;

/// Diagnosis entry -> DiagnosisData block contents (channel diagnosis, USI 0x8000).
pub fn channel_properties(d: &DiagnosisEntry, spec: Specifier) -> ChannelProperties {
    let sev = match d.severity {
        1 => Severity::MaintenanceRequired,
        2 => Severity::MaintenanceDemanded,
        3 => Severity::Qualified,
        _ => Severity::Fault,
    };
    ChannelProperties::new(0, false, sev, spec, Direction::ManufacturerSpecific)
}

/// The diagnosis item of the alarm that reports `d` appearing or disappearing.
pub fn diagnosis_alarm_item(d: &DiagnosisEntry, appears: bool) -> UserStructure {
    let spec = if appears {
        Specifier::Appears
    } else {
        Specifier::Disappears
    };
    channel_item(d, spec)
}

/// The ChannelDiagnosis user structure of one entry.
pub fn channel_item(d: &DiagnosisEntry, spec: Specifier) -> UserStructure {
    UserStructure::Channel(vec![ChannelDiagnosis {
        channel_number: d.channel,
        properties: channel_properties(d, spec),
        error_type: d.error_type,
    }])
}

/// The MultipleBlockHeader of PDRealData around one PDev submodule's blocks (API 0, slot 0).
fn multiple_block(subslot: u16, blocks: &[u8]) -> pdev::MultipleBlock<'_> {
    pdev::MultipleBlock {
        api: 0,
        slot: 0,
        subslot,
        blocks,
    }
}

fn im1_4_from_remanent(im: &ImRemanent) -> BTreeMap<u16, Vec<u8>> {
    let mut m = BTreeMap::new();
    let mut put = |idx: u16, rec: ImRecord| {
        if let Ok(b) = rec.to_bytes() {
            m.insert(idx, b);
        }
    };
    // Stored strings are kept as written; the protocol emitter pads/validates them. Invalid
    // content falls back to the empty (all-space) record.
    let im1 = ImRecord::Im1(Im1 {
        tag_function: im.tag_function.trim_end().to_string(),
        tag_location: im.tag_location.trim_end().to_string(),
    });
    put(index::IM1, im1);
    put(
        index::IM2,
        ImRecord::Im2(Im2 {
            date: im.date.trim_end().to_string(),
        }),
    );
    put(
        index::IM3,
        ImRecord::Im3(Im3 {
            descriptor: im.descriptor.trim_end().to_string(),
        }),
    );
    let mut im4 = Im4::default();
    let n = im.signature.len().min(im4.signature.len());
    im4.signature[..n].copy_from_slice(&im.signature[..n]);
    put(index::IM4, ImRecord::Im4(im4));
    m
}

/// The declared parameter records at their defaults: what a Read of one answers until the
/// controller writes it (the values the GSDML told the engineering tool).
fn declared_defaults(modules: &[ModuleConfig]) -> BTreeMap<(u16, u16, u16), Vec<u8>> {
    let mut user = BTreeMap::new();
    for m in modules {
        for s in &m.submodules {
            for r in &s.records {
                user.insert((m.slot, s.subslot, r.index), r.defaults());
            }
        }
    }
    user
}

impl Records {
    pub fn from_config(cfg: &StackConfig) -> Records {
        // A stored value replaces a declared record's defaults.
        let mut user = declared_defaults(&cfg.modules);
        let mut im_raw = im1_4_from_remanent(&cfg.im);
        for r in &cfg.records {
            if (index::IM1..=index::IM4).contains(&r.index) {
                im_raw.insert(r.index, r.data.clone());
            } else {
                user.insert((r.slot, r.subslot, r.index), r.data.clone());
            }
        }
        Records {
            vendor_id: cfg.vendor_id,
            im0: cfg.im0.clone(),
            im: cfg.im.clone(),
            im_raw,
            user,
            modules: cfg.modules.clone(),
            diags: Vec::new(),
            pdev: PdevLive::default(),
        }
    }

    /// The port subslots of the DAP (slot 0, 0x8001..=0x80FF), in order.
    fn ports(&self) -> Vec<u16> {
        self.modules
            .iter()
            .filter(|m| m.slot == 0)
            .flat_map(|m| m.submodules.iter().map(|s| s.subslot))
            .filter(|s| (0x8001..=0x80FF).contains(s))
            .collect()
    }

    fn pd_port_data_real(&self, subslot: u16) -> Result<Vec<u8>, PnioStatus> {
        let live = &self.pdev;
        let block = PdPortDataReal {
            slot: 0,
            subslot,
            // The port's name as PROFINET numbers it ("port-001" for subslot 0x8001).
            own_port_id: format!("port-{:03}", subslot - INTERFACE_SUBSLOT),
            peers: live
                .peer
                .iter()
                .map(|(port_id, chassis_id, mac)| Peer {
                    port_id: port_id.clone(),
                    chassis_id: chassis_id.clone(),
                    // Not measured: RT_CLASS_1 needs no line-delay measurement (PTCP).
                    line_delay: 0,
                    mac: *mac,
                })
                .collect(),
            mau_type: live.mau_type,
            domain_boundary: 0,
            multicast_boundary: 0,
            link_port: 0,
            link: if live.link_up {
                pdev::link::UP
            } else {
                pdev::link::DOWN
            },
            media_type: pdev::media_type::COPPER,
        };
        block
            .to_bytes()
            .map_err(|_| rw_error::read(rw_error::APP_READ_ERROR, 0))
    }

    fn pd_interface_data_real(&self) -> Result<Vec<u8>, PnioStatus> {
        let live = &self.pdev;
        PdInterfaceDataReal {
            chassis_id: live.station_name.clone(),
            mac: live.mac,
            ip: live.ip_suite[0],
            netmask: live.ip_suite[1],
            gateway: live.ip_suite[2],
        }
        .to_bytes()
        .map_err(|_| rw_error::read(rw_error::APP_READ_ERROR, 0))
    }

    /// PDPortStatistic; a read error when the counters cannot be read (as p-net answers).
    fn pd_port_statistic(&self) -> Result<Vec<u8>, PnioStatus> {
        self.pdev
            .stats
            .ok_or(rw_error::read(rw_error::APP_READ_ERROR, 0))?
            .to_bytes()
            .map_err(|_| rw_error::read(rw_error::APP_READ_ERROR, 0))
    }

    /// PDRealData: the interface's and every port's real data, each followed by its
    /// PDPortStatistic when the counters are readable, in a MultipleBlockHeader naming its
    /// submodule (p-net's layout).
    fn pd_real_data(&self) -> Result<Vec<u8>, PnioStatus> {
        let mut w = Writer::new();
        let fail = |_| rw_error::read(rw_error::APP_READ_ERROR, 0);
        let stats = self
            .pdev
            .stats
            .map(|s| s.to_bytes())
            .transpose()
            .map_err(fail)?;
        let with_stats = |mut b: Vec<u8>| {
            b.extend_from_slice(stats.as_deref().unwrap_or_default());
            b
        };
        if self.exists(0, INTERFACE_SUBSLOT) {
            let b = with_stats(self.pd_interface_data_real()?);
            multiple_block(INTERFACE_SUBSLOT, &b)
                .emit(&mut w)
                .map_err(fail)?;
        }
        for p in self.ports() {
            let b = with_stats(self.pd_port_data_real(p)?);
            multiple_block(p, &b).emit(&mut w).map_err(fail)?;
        }
        Ok(w.into_inner())
    }

    /// Module and submodule ident of a configured (slot, subslot).
    pub fn idents(&self, slot: u16, subslot: u16) -> Option<(u32, u32)> {
        self.modules.iter().find(|m| m.slot == slot).and_then(|m| {
            m.submodules
                .iter()
                .find(|s| s.subslot == subslot)
                .map(|s| (m.ident, s.ident))
        })
    }

    fn exists(&self, slot: u16, subslot: u16) -> bool {
        self.idents(slot, subslot).is_some()
    }

    fn im0_record(&self) -> Vec<u8> {
        let c = &self.im0;
        let sw = c.software_revision;
        let prefix = if sw.0.is_ascii_graphic() {
            sw.0 as u8
        } else {
            b'V'
        };
        let order_id: String = c
            .order_id
            .chars()
            .filter(|ch| ch.is_ascii() && !ch.is_ascii_control())
            .take(20)
            .collect();
        let serial: String = c
            .serial_number
            .chars()
            .filter(|ch| ch.is_ascii() && !ch.is_ascii_control())
            .take(16)
            .collect();
        let rec = ImRecord::Im0(Im0 {
            vendor_id: self.vendor_id,
            order_id,
            serial_number: serial,
            hardware_revision: c.hardware_revision,
            software_revision: SoftwareRevision {
                prefix,
                functional_enhancement: sw.1,
                bug_fix: sw.2,
                internal_change: sw.3,
            },
            revision_counter: c.revision_counter,
            profile_id: c.profile_id,
            profile_specific_type: c.profile_specific_type,
            version: (1, 1),
            supported: c.im_supported,
        });
        rec.to_bytes().unwrap_or_default()
    }

    fn ident_data(&self, slot: Option<u16>, subslot: Option<u16>) -> Vec<u8> {
        let modules = self
            .modules
            .iter()
            .filter(|m| slot.map_or(true, |s| s == m.slot))
            .map(|m| ModuleIdent {
                slot: m.slot,
                module_ident: m.ident,
                submodules: m
                    .submodules
                    .iter()
                    .filter(|s| subslot.map_or(true, |x| x == s.subslot))
                    .map(|s| SubmoduleIdent {
                        subslot: s.subslot,
                        submodule_ident: s.ident,
                    })
                    .collect(),
            })
            .collect();
        IdentificationDataRepr::real(vec![ApiIdent { api: 0, modules }])
            .to_bytes()
            .unwrap_or_default()
    }

    /// I&M0FilterData (0xF840): the device's I&M0 is carried by the DAP (slot 0, the first
    /// subslot), which represents the device; no other submodule has its own I&M0 (as p-net
    /// models it). Engineering tools read this record before I&M0.
    fn im0_filter_data(&self) -> Vec<u8> {
        let Some(dap) = self.modules.iter().find(|m| m.slot == 0) else {
            return Vec::new();
        };
        let Some(sub) = dap.submodules.first() else {
            return Vec::new();
        };
        let apis = vec![ApiIdent {
            api: 0,
            modules: vec![ModuleIdent {
                slot: 0,
                module_ident: dap.ident,
                submodules: vec![SubmoduleIdent {
                    subslot: sub.subslot,
                    submodule_ident: sub.ident,
                }],
            }],
        }];
        let filters: Vec<Im0FilterData> = [
            FilterKind::Submodule,
            FilterKind::Module,
            FilterKind::Device,
        ]
        .into_iter()
        .map(|kind| Im0FilterData {
            kind,
            apis: apis.clone(),
        })
        .collect();
        filters.to_bytes().unwrap_or_default()
    }

    fn diag_data(&self, slot: Option<u16>, subslot: Option<u16>, maint: Option<u8>) -> Vec<u8> {
        let mut w = Writer::new();
        for d in &self.diags {
            if slot.is_some_and(|s| s != d.slot) || subslot.is_some_and(|s| s != d.subslot) {
                continue;
            }
            if let Some(m) = maint {
                if d.severity != m {
                    continue;
                }
            }
            let repr = DiagnosisDataRepr {
                version_low: 1,
                api: 0,
                slot: d.slot,
                subslot: d.subslot,
                channel_number: d.channel,
                channel_properties: channel_properties(d, Specifier::Appears),
                items: channel_item(d, Specifier::Appears),
            };
            let _ = repr.emit(&mut w);
        }
        w.into_inner()
    }

    /// Read a record. `Err` is the negative PNIOStatus of the read response.
    pub fn read(&self, a: &RecordAddress) -> Result<Vec<u8>, PnioStatus> {
        let sub_level = a.index < 0xC000 && a.index >= 0x8000 || a.index <= index::USER_MAX;
        if sub_level && !self.exists(a.slot, a.subslot) {
            return Err(rw_error::read(rw_error::ACC_INVALID_SLOT_SUBSLOT, 0));
        }
        let (sl, ss) = (Some(a.slot), Some(a.subslot));
        match a.index {
            index::IM0 => Ok(self.im0_record()),
            i @ index::IM1..=index::IM4 => {
                let bit = 1u16 << (i - index::IM0);
                if self.im0.im_supported & bit == 0 {
                    return Err(rw_error::read(rw_error::ACC_INVALID_INDEX, 0));
                }
                self.im_raw
                    .get(&i)
                    .cloned()
                    .ok_or(rw_error::read(rw_error::ACC_INVALID_INDEX, 0))
            }
            index::IM0_FILTER_DATA => Ok(self.im0_filter_data()),
            index::SUB_REAL_IDENTIFICATION_DATA => Ok(self.ident_data(sl, ss)),
            index::SLOT_REAL_IDENTIFICATION_DATA => Ok(self.ident_data(sl, None)),
            index::AR_REAL_IDENTIFICATION_DATA | index::API_REAL_IDENTIFICATION_DATA => {
                Ok(self.ident_data(None, None))
            }
            index::SUB_DIAGNOSIS_CHANNEL | index::SUB_DIAGNOSIS_ALL | index::SUB_DIAGNOSIS_DMQS => {
                Ok(self.diag_data(sl, ss, None))
            }
            index::SUB_MAINTENANCE_REQUIRED_CHANNEL | index::SUB_MAINTENANCE_REQUIRED_ALL => {
                Ok(self.diag_data(sl, ss, Some(1)))
            }
            index::SUB_MAINTENANCE_DEMANDED_CHANNEL | index::SUB_MAINTENANCE_DEMANDED_ALL => {
                Ok(self.diag_data(sl, ss, Some(2)))
            }
            index::SLOT_DIAGNOSIS_CHANNEL
            | index::SLOT_DIAGNOSIS_ALL
            | index::SLOT_DIAGNOSIS_DMQS => Ok(self.diag_data(sl, None, None)),
            index::AR_DIAGNOSIS_CHANNEL
            | index::AR_DIAGNOSIS_ALL
            | index::AR_DIAGNOSIS_DMQS
            | index::API_DIAGNOSIS_CHANNEL
            | index::API_DIAGNOSIS_ALL
            | index::API_DIAGNOSIS_DMQS
            | index::DEVICE_DIAGNOSIS_DMQS => Ok(self.diag_data(None, None, None)),
            index::SUB_PD_PORT_DATA_REAL if a.slot == 0 && self.ports().contains(&a.subslot) => {
                self.pd_port_data_real(a.subslot)
            }
            index::SUB_PD_INTERFACE_DATA_REAL if a.slot == 0 && a.subslot == INTERFACE_SUBSLOT => {
                self.pd_interface_data_real()
            }
            index::SUB_PD_PORT_STATISTIC
                if a.slot == 0
                    && (a.subslot == INTERFACE_SUBSLOT || self.ports().contains(&a.subslot)) =>
            {
                self.pd_port_statistic()
            }
            index::PD_REAL_DATA => self.pd_real_data(),
            // User records, and the PDev parameter records a controller wrote in this run
            // (PDPortDataCheck, PDInterfaceAdjust, ...): read back as written.
            i if i <= index::USER_MAX || (0x8000..index::IM0).contains(&i) => self
                .user
                .get(&(a.slot, a.subslot, i))
                .cloned()
                .ok_or(rw_error::read(rw_error::ACC_INVALID_INDEX, 0)),
            _ => Err(rw_error::read(rw_error::ACC_INVALID_INDEX, 0)),
        }
    }

    /// Write a record. A remanent record (I&M1-4, user records) is first handed to `commit`,
    /// which stores it durably (the runtime's [`crate::dataplane::EventSink::commit`]); only
    /// when that succeeded is the value taken here and `Ok(Some(event))` returned (the event
    /// to send to the runtime). A failed commit is the negative response ErrorCode1 0xA1
    /// "application: write error", ErrorCode2 0, and the record keeps its old value.
    pub fn write(
        &mut self,
        a: &RecordAddress,
        data: &[u8],
        commit: impl FnOnce(&StackEvent) -> Result<(), String>,
    ) -> Result<Option<StackEvent>, PnioStatus> {
        if !self.exists(a.slot, a.subslot) {
            return Err(rw_error::write(rw_error::ACC_INVALID_SLOT_SUBSLOT, 0));
        }
        let ev = StackEvent::RecordWritten {
            slot: a.slot,
            subslot: a.subslot,
            index: a.index,
            data: data.to_vec(),
        };
        let durable = |ev: StackEvent| match commit(&ev) {
            Ok(()) => Ok(Some(ev)),
            Err(e) => {
                tracing::error!(
                    "record {}/{} index {:#06x} not written: {e}",
                    a.slot,
                    a.subslot,
                    a.index
                );
                Err(rw_error::write(rw_error::APP_WRITE_ERROR, 0))
            }
        };
        match a.index {
            // Read-only: identification and the PDev real data the device measures.
            index::IM0
            | index::SUB_PD_PORT_DATA_REAL
            | index::SUB_PD_INTERFACE_DATA_REAL
            | index::SUB_PD_PORT_STATISTIC => Err(rw_error::write(rw_error::ACC_ACCESS_DENIED, 0)),
            i @ index::IM1..=index::IM4 => {
                let bit = 1u16 << (i - index::IM0);
                if self.im0.im_supported & bit == 0 {
                    return Err(rw_error::write(rw_error::ACC_INVALID_INDEX, 0));
                }
                let expected_type = 0x0020 + (i - index::IM0);
                // Exactly one block: 61 bytes for an I&M1 (60) is a length error.
                match ImRecord::parse_exact(data) {
                    Ok(rec) if rec.block_type() == expected_type => {
                        let ev = durable(ev)?;
                        match &rec {
                            ImRecord::Im1(r) => {
                                self.im.tag_function = r.tag_function.clone();
                                self.im.tag_location = r.tag_location.clone();
                            }
                            ImRecord::Im2(r) => self.im.date = r.date.clone(),
                            ImRecord::Im3(r) => self.im.descriptor = r.descriptor.clone(),
                            ImRecord::Im4(r) => self.im.signature = r.signature.to_vec(),
                            _ => {}
                        }
                        self.im_raw.insert(i, data.to_vec());
                        Ok(ev)
                    }
                    Ok(_) => Err(rw_error::write(rw_error::ACC_INVALID_TYPE, 0)),
                    Err(_) => Err(rw_error::write(rw_error::ACC_WRITE_LENGTH_ERROR, 0)),
                }
            }
            i if i <= index::USER_MAX => {
                let ev = durable(ev)?;
                self.user.insert((a.slot, a.subslot, i), data.to_vec());
                Ok(ev)
            }
            // Parameter records a controller writes during start-up (PDPortDataCheck,
            // PDInterfaceAdjust, ...): accepted and kept for this run only.
            i if i < index::IM0 => {
                self.user.insert((a.slot, a.subslot, i), data.to_vec());
                Ok(None)
            }
            _ => Err(rw_error::write(rw_error::ACC_INVALID_INDEX, 0)),
        }
    }
}

#[cfg(test)]
mod tests;

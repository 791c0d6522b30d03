//! The device's remanent data and the rule of how it changes: what a permanent or temporary DCP
//! Set, a record write, a ResetToFactory and the configuration's StationName do to it, and the
//! NameOfStation and IP suite a start takes from it. Not a PROFINET role: the product's
//! persistence rule (docs/decisions.md §13, §21), here so that the daemon and the farm (which
//! store it, `device/src/persist.rs`: file I/O, atomic writes, quarantine) and the simulator
//! (`sim/service.rs`, restarts) apply the same rule. Nothing here does I/O.
//!
//! With the `serde` feature the types serialise in the store's JSON format (camelCase, record
//! data as hex).

use std::net::Ipv4Addr;

use crate::machine::dcp_responder::{DcpEvent, ResetMode};

#[cfg(feature = "serde")]
use serde::{Deserialize, Serialize};

/// Remanent I&M1-4 content (written by the controller over record writes, persisted by the
/// runtime). Strings are kept exactly as written (space padded as on the wire, trimmed for
/// display by the API).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "camelCase", default))]
pub struct ImRemanent {
    pub tag_function: String,
    pub tag_location: String,
    pub date: String,
    pub descriptor: String,
    pub signature: Vec<u8>,
}

/// A record stored by the runtime (written by the controller, persisted across restarts).
/// `data` is the record data exactly as it was written (for I&M1-4 including the 6-byte
/// BlockHeader).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "camelCase"))]
pub struct StoredRecord {
    pub slot: u16,
    pub subslot: u16,
    pub index: u16,
    #[cfg_attr(feature = "serde", serde(with = "hex_bytes"))]
    pub data: Vec<u8>,
}

/// IP parameters stored after a permanent DCP Set IP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
pub struct StoredIp {
    pub ip: Ipv4Addr,
    pub mask: Ipv4Addr,
    pub gateway: Ipv4Addr,
}

/// Everything remanent.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "camelCase", default))]
pub struct Remanent {
    /// File format version (1).
    pub version: u32,
    /// A NameOfStation the controller assigned permanently (DCP Set, permanent).
    pub station_name: Option<String>,
    /// The NameOfStation was erased (ResetToFactory, or a temporary DCP Set, which erases
    /// the stored name): without an assigned name the device comes up with an empty one, not
    /// with the configuration's (docs/decisions.md §21).
    pub name_cleared: bool,
    /// The configuration's StationName when it was last taken as the device's name: a new
    /// configuration with another StationName is the operator's decision and wins over an
    /// erased or an assigned name (`None` in files written before this field existed).
    pub config_station_name: Option<String>,
    pub ip: Option<StoredIp>,
    pub im: ImRemanent,
    pub records: Vec<StoredRecord>,
}

impl Remanent {
    /// The NameOfStation the device starts with: the assigned one, else empty after an
    /// erasure, else the configuration's.
    pub fn start_station_name(&self, config_name: &str) -> String {
        match (&self.station_name, self.name_cleared) {
            (Some(n), _) => n.clone(),
            (None, true) => String::new(),
            (None, false) => config_name.to_string(),
        }
    }

    /// The IP suite the device starts with: the one set permanently, else the configuration's.
    pub fn start_ip(&self, configured: StoredIp) -> StoredIp {
        self.ip.unwrap_or(configured)
    }
}

/// One change of the remanent data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// DCP Set NameOfStation: `Some` permanent, `None` temporary (erases the stored name,
    /// docs/decisions.md §13).
    StationName(Option<String>),
    /// DCP Set IP: `Some` permanent, `None` temporary (erases the stored suite).
    Ip(Option<StoredIp>),
    /// A written record (I&M1-4 or a user record).
    Record(StoredRecord),
    /// ResetToFactory / `POST /api/reset`: communication parameters erased, or everything
    /// (the NameOfStation stays erased: the file keeps that).
    Reset(ResetMode),
    /// The configuration in force has this StationName (at start and after a reload): when it
    /// differs from the one last taken, it becomes the device's name again.
    ConfigStationName(String),
}

impl Change {
    /// A DCP Set NameOfStation: only a permanent one is kept; a temporary one erases the
    /// stored name.
    pub fn station_name_set(name: &str, permanent: bool) -> Change {
        Change::StationName(permanent.then(|| name.to_string()))
    }

    /// A DCP Set IP: only a permanent one is kept; a temporary one erases the stored suite.
    pub fn ip_set(ip: Ipv4Addr, mask: Ipv4Addr, gateway: Ipv4Addr, permanent: bool) -> Change {
        Change::Ip(permanent.then_some(StoredIp { ip, mask, gateway }))
    }

    /// The remanent change a DCP responder's event carries, if any.
    pub fn of_dcp_event(ev: &DcpEvent) -> Option<Change> {
        Some(match ev {
            DcpEvent::NameAssigned { name, permanent } => {
                Change::station_name_set(name, *permanent)
            }
            DcpEvent::IpAssigned {
                ip,
                mask,
                gateway,
                permanent,
            } => Change::ip_set(*ip, *mask, *gateway, *permanent),
            DcpEvent::ResetToFactory { mode, .. } => Change::Reset(*mode),
            DcpEvent::Signal | DcpEvent::AbortArs { .. } => return None,
        })
    }

    /// `current` with this change applied.
    pub fn applied_to(&self, current: &Remanent) -> Remanent {
        let mut r = current.clone();
        match self {
            Change::StationName(n) => {
                r.station_name = n.clone();
                r.name_cleared = n.is_none();
            }
            Change::Ip(ip) => r.ip = *ip,
            Change::Record(rec) => apply_record(&mut r, rec.clone()),
            Change::Reset(ResetMode::Communication) => {
                r.station_name = None;
                r.name_cleared = true;
                r.ip = None;
            }
            Change::Reset(ResetMode::Factory) => {
                r = Remanent {
                    name_cleared: true,
                    config_station_name: current.config_station_name.clone(),
                    ..Remanent::default()
                }
            }
            Change::ConfigStationName(name) => {
                if r.config_station_name.as_deref() != Some(name.as_str()) {
                    // A first record (older file) changes nothing else; a changed
                    // configuration brings its name back.
                    if r.config_station_name.is_some() {
                        r.station_name = None;
                        r.name_cleared = false;
                    }
                    r.config_station_name = Some(name.clone());
                }
            }
        }
        r
    }
}

/// Apply a record write to the remanent data: replace a record with the same address, and for
/// I&M1-4 (index 0xAFF1..0xAFF4) decode the fields (data including the 6-byte BlockHeader).
pub fn apply_record(r: &mut Remanent, rec: StoredRecord) {
    let body = rec.data.get(6..).unwrap_or(&[]);
    let text = |b: &[u8]| String::from_utf8_lossy(b).to_string();
    match rec.index {
        0xAFF1 => {
            r.im.tag_function = text(body.get(..32.min(body.len())).unwrap_or(&[]));
            r.im.tag_location = text(body.get(32..54.min(body.len()).max(32)).unwrap_or(&[]));
        }
        0xAFF2 => r.im.date = text(body.get(..16.min(body.len())).unwrap_or(&[])),
        0xAFF3 => r.im.descriptor = text(body.get(..54.min(body.len())).unwrap_or(&[])),
        0xAFF4 => r.im.signature = body.get(..54.min(body.len())).unwrap_or(&[]).to_vec(),
        _ => {}
    }
    r.records
        .retain(|x| !(x.slot == rec.slot && x.subslot == rec.subslot && x.index == rec.index));
    r.records.push(rec);
    r.records.sort_by_key(|x| (x.slot, x.subslot, x.index));
    // Bound the store: at most 256 records are kept (oldest addresses beyond are dropped).
    r.records.truncate(256);
}

/// Record data in the store's JSON: a hex string.
#[cfg(feature = "serde")]
pub mod hex_bytes {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&hex::encode(v))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let s = String::deserialize(d)?;
        hex::decode(&s).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The NameOfStation a start uses (docs/decisions.md §21): the configuration's until the
    /// name is assigned or erased; empty after ResetToFactory or a temporary Set; the
    /// configuration's again when the configuration's StationName changes.
    #[test]
    fn station_name_rules() {
        let apply = |r: &Remanent, c: Change| c.applied_to(r);
        let fresh = apply(
            &Remanent::default(),
            Change::ConfigStationName("cfg".into()),
        );
        assert_eq!(fresh.start_station_name("cfg"), "cfg");
        let assigned = apply(&fresh, Change::StationName(Some("plc-given".into())));
        assert_eq!(assigned.start_station_name("cfg"), "plc-given");
        // The same configuration at the next start changes nothing.
        let again = apply(&assigned, Change::ConfigStationName("cfg".into()));
        assert_eq!(again, assigned);
        let temporary = apply(&assigned, Change::StationName(None));
        assert_eq!(temporary.start_station_name("cfg"), "");
        for mode in [ResetMode::Communication, ResetMode::Factory] {
            let reset = apply(&assigned, Change::Reset(mode));
            assert_eq!(reset.start_station_name("cfg"), "", "{mode:?}");
            let same_cfg = apply(&reset, Change::ConfigStationName("cfg".into()));
            assert_eq!(same_cfg.start_station_name("cfg"), "", "{mode:?}");
            let new_cfg = apply(&reset, Change::ConfigStationName("cfg2".into()));
            assert_eq!(new_cfg.start_station_name("cfg2"), "cfg2", "{mode:?}");
        }
        // A file from before the field existed keeps its assigned name.
        let old = Remanent {
            station_name: Some("kept".into()),
            ..Remanent::default()
        };
        let upgraded = apply(&old, Change::ConfigStationName("cfg".into()));
        assert_eq!(upgraded.start_station_name("cfg"), "kept");
    }

    /// Which DCP Sets are kept: permanent ones; a temporary one erases what was stored; the
    /// IP suite a start takes follows.
    #[test]
    fn permanent_dcp_sets_are_kept_temporary_ones_erase() {
        let suite = |last| StoredIp {
            ip: Ipv4Addr::new(10, 0, 0, last),
            mask: Ipv4Addr::new(255, 255, 255, 0),
            gateway: Ipv4Addr::UNSPECIFIED,
        };
        let name = |permanent| DcpEvent::NameAssigned {
            name: "plc-given".into(),
            permanent,
        };
        let ip = |permanent| DcpEvent::IpAssigned {
            ip: Ipv4Addr::new(10, 0, 0, 9),
            mask: Ipv4Addr::new(255, 255, 255, 0),
            gateway: Ipv4Addr::UNSPECIFIED,
            permanent,
        };
        let apply = |r: &Remanent, ev: &DcpEvent| Change::of_dcp_event(ev).unwrap().applied_to(r);
        let r = apply(&apply(&Remanent::default(), &name(true)), &ip(true));
        assert_eq!(r.start_station_name("cfg"), "plc-given");
        assert_eq!(r.start_ip(suite(2)), suite(9));
        let r = apply(&apply(&r, &name(false)), &ip(false));
        assert_eq!(r.start_station_name("cfg"), "");
        assert_eq!(r.start_ip(suite(2)), suite(2));
        assert_eq!(Change::of_dcp_event(&DcpEvent::Signal), None);
    }
}

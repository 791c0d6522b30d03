//! The runtime configuration XML (spec 2.11): what the device is (identity, slot layout,
//! network items) and the types it is handed to the stack as.
//!
//! Element names are decided in docs/decisions.md ("Runtime configuration XML"); examples in
//! `device/config/examples/`. Numbers are decimal or `0x` hex.

use std::net::Ipv4Addr;
use std::path::Path;

use pn_protocol::machine::cmdev::params::ParamRecord;
use serde::{Deserialize, Serialize};

use crate::items::{parse_items, parse_records, IoItem};

/// The embedded default runtime configuration (used when `Paths:RuntimeConfig` is empty). The
/// file stays beside the examples and settings operators copy (`device/config/`).
pub const DEFAULT_CONFIG_XML: &str = include_str!("../../config/default.xml");
/// The VendorID of the shipped configurations: no PI-assigned ID (0x0493, used by p-net's
/// examples, belongs to RT-Labs). Operators set their own; the daemon warns while it is in use.
pub const PLACEHOLDER_VENDOR_ID: u16 = 0xFFFF;
/// Name shown for the embedded configuration in messages and the fingerprint.
pub const EMBEDDED_CONFIG_NAME: &str = "<embedded default>";

/// Largest process-image area in bytes (spec 2.11 / section 8: clamp to 1..1440).
pub const MAX_AREA_LEN: usize = 1440;
/// Smallest process-image area in bytes.
pub const MIN_AREA_LEN: usize = 1;

/// Clamp a summed layout length to the legal area size (spec 2.11: 1..1440).
pub fn clamp_area_len(len: usize) -> usize {
    len.clamp(MIN_AREA_LEN, MAX_AREA_LEN)
}

// ------------------------------------------------------------------------------------------
// The layout as handed to the stack
// ------------------------------------------------------------------------------------------

/// One submodule of the device layout (from the runtime configuration XML).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubmoduleConfig {
    /// Subslot number (e.g. 1; DAP: 1, 0x8000 interface, 0x8001.. ports).
    pub subslot: u16,
    /// SubmoduleIdentNumber from the GSDML.
    pub ident: u32,
    /// Bytes the controller sends to the device for this submodule (I area of the API).
    pub input_length: u16,
    /// Bytes the device sends to the controller for this submodule (Q area of the API).
    pub output_length: u16,
    /// Typed items of the `input_length` bytes (`<InputItems>`; empty: not declared). The
    /// declarations are read from the XML only; the JSON views of the layout leave them out.
    #[serde(skip)]
    pub input_items: Vec<IoItem>,
    /// Typed items of the `output_length` bytes (`<OutputItems>`).
    #[serde(skip)]
    pub output_items: Vec<IoItem>,
    /// Declared parameter records (`<ParameterRecord>`): the GSDML offers them, CMDEV checks
    /// their Writes.
    #[serde(skip)]
    pub records: Vec<ParamRecord>,
}

/// One module (slot) of the device layout.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModuleConfig {
    /// Slot number (0 = DAP).
    pub slot: u16,
    /// ModuleIdentNumber from the GSDML.
    pub ident: u32,
    pub submodules: Vec<SubmoduleConfig>,
}

/// I&M0 data (read-only identification) for the stack's I&M0 record and DCP DeviceVendor.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Im0Config {
    pub order_id: String,
    pub serial_number: String,
    pub hardware_revision: u16,
    /// Software revision as (prefix char, functional enhancement, bug fix, internal change),
    /// e.g. ('V', 1, 0, 0); printed "V1.0.0".
    pub software_revision: (char, u8, u8, u8),
    pub revision_counter: u16,
    pub profile_id: u16,
    pub profile_specific_type: u16,
    /// I&M supported bit field (bit 1 = I&M1, ... bit 4 = I&M4), as in the I&M0 record.
    pub im_supported: u16,
    pub product_name: String,
}

/// True when `nic` is a syntactically valid Linux interface name (1..15 bytes, no '/', no
/// whitespace, not "." or ".."). Checked before any sysfs path is built from it.
pub fn valid_nic_name(nic: &str) -> bool {
    !nic.is_empty()
        && nic.len() < libc::IFNAMSIZ
        && nic != "."
        && nic != ".."
        && nic
            .bytes()
            .all(|b| b.is_ascii_graphic() && b != b'/' && b != b':')
}

// ------------------------------------------------------------------------------------------
// The XML
// ------------------------------------------------------------------------------------------

/// The runtime configuration as loaded from the XML.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuntimeConfig {
    /// Where it came from (path, or [`EMBEDDED_CONFIG_NAME`]).
    pub source: String,
    pub station_name: String,
    pub device_name: String,
    pub vendor_id: u16,
    pub device_id: u16,
    /// `Network/InterfaceName` (may be empty: then the settings default applies).
    pub interface_name: String,
    pub ip: Ipv4Addr,
    pub mask: Ipv4Addr,
    pub gateway: Ipv4Addr,
    /// Send clock in milliseconds (1, 2 or 4).
    pub send_clock_ms: u16,
    /// `MinUpdateTimeUs` as MinDeviceInterval (31.25 µs units): the shortest IO cycle
    /// (SendClockFactor × ReductionRatio) the device accepts in a Connect and its GSDML
    /// offers (docs/decisions.md §22).
    pub min_device_interval: u32,
    pub modules: Vec<ModuleConfig>,
    pub im0: Im0Config,
    /// Summed InputLength (controller -> device), clamped to 1..1440.
    pub input_len: usize,
    /// Summed OutputLength (device -> controller), clamped to 1..1440.
    pub output_len: usize,
}

fn parse_num(s: &str) -> Option<u64> {
    let s = s.trim();
    if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u64::from_str_radix(h, 16).ok()
    } else {
        s.parse().ok()
    }
}

pub(crate) fn child<'a, 'i>(
    n: roxmltree::Node<'a, 'i>,
    name: &str,
) -> Option<roxmltree::Node<'a, 'i>> {
    n.children()
        .find(|c| c.is_element() && c.tag_name().name() == name)
}

fn child_text(n: roxmltree::Node<'_, '_>, name: &str) -> Option<String> {
    child(n, name).map(|c| c.text().unwrap_or("").trim().to_string())
}

/// Attribute or child element value.
fn attr_or_child(n: roxmltree::Node<'_, '_>, name: &str) -> Option<String> {
    n.attribute(name)
        .map(|s| s.trim().to_string())
        .or_else(|| child_text(n, name))
}

pub(crate) fn num_item<T: TryFrom<u64>>(
    n: roxmltree::Node<'_, '_>,
    name: &str,
    what: &str,
    default: Option<T>,
) -> Result<T, String> {
    match attr_or_child(n, name) {
        None => default.ok_or_else(|| format!("{what}: missing {name}")),
        Some(v) => parse_num(&v)
            .and_then(|x| T::try_from(x).ok())
            .ok_or_else(|| format!("{what}: {name} '{v}' is not a valid number")),
    }
}

fn ip_item(root: roxmltree::Node<'_, '_>, name: &str) -> Result<Ipv4Addr, String> {
    let net = child(root, "Network");
    let v = net
        .and_then(|n| child_text(n, name))
        .or_else(|| child_text(root, name));
    match v {
        None => Ok(Ipv4Addr::UNSPECIFIED),
        Some(s) if s.is_empty() => Ok(Ipv4Addr::UNSPECIFIED),
        Some(s) => s
            .parse()
            .map_err(|_| format!("{name} '{s}' is not an IPv4 address")),
    }
}

/// DNS-label-like check of a PROFINET station name (lower case letters, digits, '-', '.';
/// labels 1..63, total 1..240, no label starting or ending with '-'). Empty is allowed
/// (no name: the controller assigns one over DCP).
pub fn valid_station_name(name: &str) -> bool {
    if name.is_empty() {
        return true;
    }
    name.len() <= 240
        && name.split('.').all(|l| {
            !l.is_empty()
                && l.len() <= 63
                && !l.starts_with('-')
                && !l.ends_with('-')
                && l.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        })
}

fn parse_sw_revision(s: &str) -> Option<(char, u8, u8, u8)> {
    let mut chars = s.chars();
    let prefix = chars.next()?;
    if !matches!(prefix, 'V' | 'R' | 'P' | 'U' | 'T') {
        return None;
    }
    let parts: Vec<&str> = chars.as_str().split('.').collect();
    if parts.len() < 3 || parts.len() > 4 {
        return None;
    }
    let p = |i: usize| parts.get(i).map_or(Some(0), |x| x.parse::<u8>().ok());
    Some((prefix, p(0)?, p(1)?, p(2)?))
}

impl RuntimeConfig {
    /// Load the XML from a file (`None` = embedded default).
    pub fn load(path: Option<&Path>) -> Result<RuntimeConfig, String> {
        let cfg = Self::load_quietly(path)?;
        if cfg.vendor_id == PLACEHOLDER_VENDOR_ID {
            // A PLC checks VendorID/DeviceID against the GSDML it was given; 0xFFFF works for a
            // lab but is nobody's PI vendor ID (docs/decisions.md, "Vendor ID").
            tracing::warn!(
                "VendorID 0xFFFF is the shipped placeholder: set the vendor ID PI assigned to you \
                 (and regenerate the GSDML) before using this device in a plant"
            );
        }
        Ok(cfg)
    }

    fn load_quietly(path: Option<&Path>) -> Result<RuntimeConfig, String> {
        match path {
            None => RuntimeConfig::parse(DEFAULT_CONFIG_XML, EMBEDDED_CONFIG_NAME),
            Some(p) => {
                let meta = std::fs::metadata(p)
                    .map_err(|e| format!("cannot read configuration {}: {e}", p.display()))?;
                if meta.len() > 4 * 1024 * 1024 {
                    return Err(format!(
                        "configuration {} is larger than 4 MiB",
                        p.display()
                    ));
                }
                let text = std::fs::read_to_string(p)
                    .map_err(|e| format!("cannot read configuration {}: {e}", p.display()))?;
                RuntimeConfig::parse(&text, &p.display().to_string())
            }
        }
    }

    /// Parse XML text. Every error names the source and the offending item.
    pub fn parse(text: &str, source: &str) -> Result<RuntimeConfig, String> {
        let doc = roxmltree::Document::parse(text)
            .map_err(|e| format!("configuration {source}: XML error: {e}"))?;
        Self::from_doc(&doc, source).map_err(|e| format!("configuration {source}: {e}"))
    }

    fn from_doc(doc: &roxmltree::Document<'_>, source: &str) -> Result<RuntimeConfig, String> {
        let root = doc.root_element();
        let station_name = child_text(root, "StationName").unwrap_or_default();
        if !valid_station_name(&station_name) {
            return Err(format!(
                "StationName '{station_name}' is not a valid PROFINET name"
            ));
        }
        let device_name = child_text(root, "DeviceName").unwrap_or_default();
        if device_name.len() > 255 {
            return Err("DeviceName longer than 255 characters".into());
        }
        let vendor_id: u16 = num_item(root, "VendorID", "device", None)?;
        let device_id: u16 = num_item(root, "DeviceID", "device", None)?;
        let interface_name = child(root, "Network")
            .and_then(|n| child_text(n, "InterfaceName"))
            .unwrap_or_default();
        if !interface_name.is_empty() && !valid_nic_name(&interface_name) {
            return Err(format!(
                "Network/InterfaceName '{interface_name}' is not a valid name"
            ));
        }
        let ip = ip_item(root, "IpAddress")?;
        let mask = ip_item(root, "SubnetMask")?;
        let gateway = ip_item(root, "Gateway")?;
        let send_clock_ms: u16 = num_item(root, "SendClock", "device", Some(1))?;
        if !matches!(send_clock_ms, 1 | 2 | 4) {
            return Err(format!("SendClock {send_clock_ms} ms: must be 1, 2 or 4"));
        }
        let min_update_us: u32 = num_item(
            root,
            "MinUpdateTimeUs",
            "device",
            Some(DEFAULT_MIN_UPDATE_TIME_US),
        )?;
        let min_device_interval = min_device_interval(min_update_us)?;

        let im0 = im0_item(root, &device_name)?;
        // Slot layout.
        let (mut modules, in_sum, out_sum) = slot_layout(root)?;
        modules.sort_by_key(|m| m.slot);
        Ok(RuntimeConfig {
            source: source.to_string(),
            station_name,
            device_name,
            vendor_id,
            device_id,
            interface_name,
            ip,
            mask,
            gateway,
            send_clock_ms,
            min_device_interval,
            modules,
            im0,
            input_len: clamp_area_len(in_sum),
            output_len: clamp_area_len(out_sum),
        })
    }
}

/// `<Identification>`: the I&M0 data (product name defaults to the device name).
fn im0_item(root: roxmltree::Node<'_, '_>, device_name: &str) -> Result<Im0Config, String> {
    let ident = child(root, "Identification");
    let it = |name: &str, default: &str| {
        ident
            .and_then(|n| child_text(n, name))
            .unwrap_or_else(|| default.to_string())
    };
    let sw = it("SoftwareRevision", "V1.0.0");
    let software_revision = parse_sw_revision(&sw)
        .ok_or_else(|| format!("Identification/SoftwareRevision '{sw}': expected e.g. V1.0.0"))?;
    let hw = it("HardwareRevision", "1");
    let hardware_revision = parse_num(&hw)
        .and_then(|x| u16::try_from(x).ok())
        .ok_or_else(|| format!("Identification/HardwareRevision '{hw}' is not a number"))?;
    let order_id = it("OrderId", "");
    let serial_number = it("SerialNumber", "");
    if order_id.len() > 20 || serial_number.len() > 16 {
        return Err("Identification: OrderId max 20, SerialNumber max 16 characters".into());
    }
    let product_name = it("ProductName", device_name);
    let im_supported_text = it("ImSupported", "0x001E");
    let im_supported = parse_num(&im_supported_text)
        .and_then(|x| u16::try_from(x).ok())
        .ok_or_else(|| format!("Identification/ImSupported '{im_supported_text}'"))?;
    Ok(Im0Config {
        order_id,
        serial_number,
        hardware_revision,
        software_revision,
        revision_counter: 0,
        profile_id: 0,
        profile_specific_type: 0,
        im_supported,
        product_name,
    })
}

/// `<SlotLayout>`: the modules (sorted by the caller) and the summed input and output lengths.
fn slot_layout(root: roxmltree::Node<'_, '_>) -> Result<(Vec<ModuleConfig>, usize, usize), String> {
    let layout = child(root, "SlotLayout").ok_or("missing SlotLayout")?;
    let mut modules: Vec<ModuleConfig> = Vec::new();
    let (mut in_sum, mut out_sum) = (0usize, 0usize);
    for m in layout.children().filter(|c| c.is_element()) {
        if m.tag_name().name() != "Module" {
            return Err(format!(
                "SlotLayout: unexpected element <{}>",
                m.tag_name().name()
            ));
        }
        let slot: u16 = num_item(m, "Slot", "Module", None)?;
        if slot > 0x7FFF {
            return Err(format!("Module Slot {slot} out of range 0..0x7FFF"));
        }
        let what = format!("Module Slot={slot}");
        if modules.iter().any(|x| x.slot == slot) {
            return Err(format!("{what}: duplicate slot"));
        }
        let ident: u32 = num_item(m, "ModuleIdentNumber", &what, None)?;
        let mut subs: Vec<SubmoduleConfig> = Vec::new();
        for s in m
            .children()
            .filter(|c| c.is_element() && c.tag_name().name() == "Submodule")
        {
            let sub = submodule_item(s, &what)?;
            if subs
                .iter()
                .any(|x: &SubmoduleConfig| x.subslot == sub.subslot)
            {
                return Err(format!(
                    "{what} Submodule Subslot={:#x}: duplicate subslot",
                    sub.subslot
                ));
            }
            in_sum += usize::from(sub.input_length);
            out_sum += usize::from(sub.output_length);
            subs.push(sub);
        }
        if subs.is_empty() {
            return Err(format!("{what}: no Submodule"));
        }
        modules.push(ModuleConfig {
            slot,
            ident,
            submodules: subs,
        });
    }
    let dap = modules
        .iter()
        .find(|m| m.slot == 0)
        .ok_or("SlotLayout: no DAP (Module Slot=0)")?;
    for need in [0x8000u16, 0x8001] {
        if !dap.submodules.iter().any(|s| s.subslot == need) {
            return Err(format!(
                "SlotLayout: DAP (slot 0) lacks the {} submodule (Subslot={need:#x})",
                if need == 0x8000 { "interface" } else { "port" }
            ));
        }
    }
    Ok((modules, in_sum, out_sum))
}

/// One `<Submodule>` of the module described by `what`.
fn submodule_item(s: roxmltree::Node<'_, '_>, what: &str) -> Result<SubmoduleConfig, String> {
    let subslot: u16 = num_item(s, "Subslot", what, None)?;
    let swhat = format!("{what} Submodule Subslot={subslot:#x}");
    let sident: u32 = num_item(s, "SubmoduleIdentNumber", &swhat, None)?;
    let il: u16 = num_item(s, "InputLength", &swhat, Some(0))?;
    let ol: u16 = num_item(s, "OutputLength", &swhat, Some(0))?;
    if il > 1440 || ol > 1440 {
        return Err(format!("{swhat}: length above 1440"));
    }
    let input_items = parse_items(s, "InputItems", "InputLength", il, &swhat)?;
    let output_items = parse_items(s, "OutputItems", "OutputLength", ol, &swhat)?;
    let records = parse_records(s, &swhat)?;
    let declares = !(input_items.is_empty() && output_items.is_empty());
    if subslot >= 0x8000 && (declares || !records.is_empty()) {
        // The interface and port submodules are described by the standard (PDev
        // records); their GSDML items carry no IO data or user parameters.
        return Err(format!(
            "{swhat}: interface and port submodules declare no items or parameter \
             records"
        ));
    }
    Ok(SubmoduleConfig {
        subslot,
        ident: sident,
        input_length: il,
        output_length: ol,
        input_items,
        output_items,
        records,
    })
}

/// `MinUpdateTimeUs` of a configuration without the element: 1 ms, what the GSDML offered
/// before the element existed (so a PLC project made with it still connects) and a cycle the
/// daemon holds on the benchmark machine (docs/benchmarks.md tables 2 and 2b). The shipped
/// configurations state 4 ms, the update time docs/real-plc.md §6 advises on a stock kernel.
pub const DEFAULT_MIN_UPDATE_TIME_US: u32 = 1000;

/// `MinUpdateTimeUs` (µs) as MinDeviceInterval (31.25 µs units). Only the update times a
/// controller can set are accepted: 31.25 µs × a power of two (every SendClockFactor and
/// ReductionRatio is one), from 125 µs (the shortest measured, docs/benchmarks.md table 8c) to
/// 128 ms (the largest MinDeviceInterval a GSDML can state).
fn min_device_interval(us: u32) -> Result<u32, String> {
    let units = u64::from(us) * 32 / 1000;
    let exact = u64::from(us) * 32 % 1000 == 0;
    let max = u64::from(pn_protocol::machine::cmdev::connect::MAX_MIN_DEVICE_INTERVAL);
    if !exact || !units.is_power_of_two() || !(4..=max).contains(&units) {
        return Err(format!(
            "MinUpdateTimeUs {us}: must be 125, 250, 500, 1000, 2000, 4000, 8000, 16000, 32000, \
             64000 or 128000 (31.25 us times a power of two, as a controller sets it)"
        ));
    }
    Ok(units as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_default_parses() {
        let c = RuntimeConfig::load(None).unwrap();
        assert!(c.modules.iter().any(|m| m.slot == 0));
    }

    #[test]
    fn nic_names() {
        assert!(valid_nic_name("eth0") && valid_nic_name("veth-a.1"));
        for bad in ["", ".", "..", "a/b", "a b", "a:b", "0123456789abcdef"] {
            assert!(!valid_nic_name(bad), "{bad:?}");
        }
    }

    fn xml(layout: &str) -> String {
        format!(
            "<PnDeviceConfiguration><StationName>dev-1</StationName><VendorID>0x0493</VendorID>\
             <DeviceID>1</DeviceID><SlotLayout>{layout}</SlotLayout></PnDeviceConfiguration>"
        )
    }
    const DAP: &str = r#"<Module Slot="0" ModuleIdentNumber="1"><Submodule Subslot="1" SubmoduleIdentNumber="1"/><Submodule Subslot="0x8000" SubmoduleIdentNumber="2"/><Submodule Subslot="0x8001" SubmoduleIdentNumber="3"/></Module>"#;

    #[test]
    fn sizes_summed_and_clamped() {
        let l = format!(
            r#"{DAP}<Module Slot="1" ModuleIdentNumber="0x30"><Submodule Subslot="1" SubmoduleIdentNumber="1" InputLength="1000" OutputLength="0"/><Submodule Subslot="2" SubmoduleIdentNumber="1"><InputLength>1000</InputLength><OutputLength>3</OutputLength></Submodule></Module>"#
        );
        let c = RuntimeConfig::parse(&xml(&l), "t").unwrap();
        assert_eq!(c.input_len, 1440);
        assert_eq!(c.output_len, 3);
        let c = RuntimeConfig::parse(&xml(DAP), "t").unwrap();
        assert_eq!((c.input_len, c.output_len), (1, 1));
    }

    #[test]
    fn bad_configs_are_reported() {
        assert!(RuntimeConfig::parse("<a", "t")
            .unwrap_err()
            .contains("XML error"));
        assert!(RuntimeConfig::parse(&xml(""), "t")
            .unwrap_err()
            .contains("DAP"));
        let nodap_port = r#"<Module Slot="0" ModuleIdentNumber="1"><Submodule Subslot="0x8000" SubmoduleIdentNumber="2"/></Module>"#;
        assert!(RuntimeConfig::parse(&xml(nodap_port), "t")
            .unwrap_err()
            .contains("port"));
        let dup = format!("{DAP}{DAP}");
        assert!(RuntimeConfig::parse(&xml(&dup), "t")
            .unwrap_err()
            .contains("duplicate"));
        let badlen = format!(
            r#"{DAP}<Module Slot="1" ModuleIdentNumber="1"><Submodule Subslot="1" SubmoduleIdentNumber="1" InputLength="x"/></Module>"#
        );
        assert!(RuntimeConfig::parse(&xml(&badlen), "t")
            .unwrap_err()
            .contains("InputLength"));
    }

    #[test]
    fn min_update_time_states_the_min_device_interval() {
        let with = |el: &str| {
            let x = xml(DAP).replace("<SlotLayout>", &format!("{el}<SlotLayout>"));
            RuntimeConfig::parse(&x, "t").map(|c| c.min_device_interval)
        };
        assert_eq!(with(""), Ok(32));
        assert_eq!(with("<MinUpdateTimeUs>4000</MinUpdateTimeUs>"), Ok(128));
        assert_eq!(with("<MinUpdateTimeUs>125</MinUpdateTimeUs>"), Ok(4));
        assert_eq!(with("<MinUpdateTimeUs>128000</MinUpdateTimeUs>"), Ok(4096));
        for bad in ["3000", "100", "62", "256000", "0", "x"] {
            let e = with(&format!("<MinUpdateTimeUs>{bad}</MinUpdateTimeUs>")).unwrap_err();
            assert!(e.contains("MinUpdateTimeUs"), "{bad}: {e}");
        }
        // The shipped configurations state the 4 ms docs/real-plc.md advises.
        assert_eq!(RuntimeConfig::load(None).unwrap().min_device_interval, 128);
    }

    #[test]
    fn shipped_examples_parse() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../config/examples");
        let mut n = 0;
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "xml") {
                RuntimeConfig::load(Some(&p)).unwrap();
                n += 1;
            }
        }
        assert!(n >= 2);
    }

    #[test]
    fn shipped_configurations_use_the_placeholder_vendor_id() {
        // Nobody's PI vendor ID ships by default (0x0493 is RT-Labs'): the embedded default
        // and every example carry the placeholder the daemon warns about.
        let c = RuntimeConfig::load(None).unwrap();
        assert_eq!(c.vendor_id, PLACEHOLDER_VENDOR_ID);
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../config/examples");
        let mut n = 0;
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.extension().map_or(true, |x| x != "xml") {
                continue;
            }
            let c = RuntimeConfig::load(Some(&p)).unwrap();
            assert_eq!(c.vendor_id, PLACEHOLDER_VENDOR_ID, "{}", p.display());
            n += 1;
        }
        assert!(n >= 2, "examples found: {n}");
    }
}

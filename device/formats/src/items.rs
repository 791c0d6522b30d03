//! What a submodule of the runtime configuration may declare beyond its lengths: typed data
//! items for its IO bytes (`<InputItems>`, `<OutputItems>`) and parameter records
//! (`<ParameterRecord>`). Optional: a configuration without them reads as before. The GSDML
//! generator states them (`pn-gsdml`), CMDEV checks Writes of the records against them.
//! Format: docs/decisions.md, "Parameter records and typed IO data".

use pn_protocol::machine::cmdev::params::{
    parse_int, Allowed, FieldKind, ParamField, ParamRecord, ParamRecords, ParamType,
};

use crate::config::{child, num_item, ModuleConfig};

/// Every parameter record the layout declares, by slot, subslot and index: what CMDEV checks
/// a Write against.
pub fn declared_records(modules: &[ModuleConfig]) -> ParamRecords {
    let mut t = ParamRecords::default();
    for m in modules {
        for s in &m.submodules {
            for r in &s.records {
                t.insert(m.slot, s.subslot, r.clone());
            }
        }
    }
    t
}

/// The data type of one IO data item (GSDML `DataType` names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IoType {
    Int(ParamType),
    Float32,
    /// `Length` bytes without structure.
    OctetString(u16),
}

impl IoType {
    pub fn size(self) -> usize {
        match self {
            IoType::Int(t) => t.size(),
            IoType::Float32 => 4,
            IoType::OctetString(n) => usize::from(n),
        }
    }

    pub fn gsdml_name(self) -> &'static str {
        match self {
            IoType::Int(t) => t.name(),
            IoType::Float32 => "Float32",
            IoType::OctetString(_) => "OctetString",
        }
    }

    /// Bits can be named only in an unsigned integer (GSDML `UseAsBits`).
    fn has_bits(self) -> bool {
        matches!(
            self,
            IoType::Int(ParamType::Unsigned8 | ParamType::Unsigned16 | ParamType::Unsigned32)
        )
    }
}

/// One typed IO data item, with the names of single bits when it carries bits.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct IoItem {
    pub name: String,
    pub data_type: IoType,
    /// (bit offset, name), ascending.
    pub bits: Vec<(u8, String)>,
}

const TYPE_NAMES: &str =
    "Unsigned8, Unsigned16, Unsigned32, Integer8, Integer16, Integer32, Float32 or OctetString";

fn io_type(n: roxmltree::Node<'_, '_>, what: &str) -> Result<IoType, String> {
    let t = n.attribute("DataType").unwrap_or("");
    match t {
        "Float32" => Ok(IoType::Float32),
        "OctetString" => {
            let len: u16 = num_item(n, "Length", what, None)?;
            if len == 0 {
                return Err(format!("{what}: OctetString Length must be 1 or more"));
            }
            Ok(IoType::OctetString(len))
        }
        _ => ParamType::from_name(t)
            .map(IoType::Int)
            .ok_or_else(|| format!("{what}: DataType '{t}' is not one of {TYPE_NAMES}")),
    }
}

fn item_bits(
    n: roxmltree::Node<'_, '_>,
    t: IoType,
    what: &str,
) -> Result<Vec<(u8, String)>, String> {
    let mut bits: Vec<(u8, String)> = Vec::new();
    for b in n.children().filter(|c| c.has_tag_name("Bit")) {
        let off: u8 = num_item(b, "Offset", &format!("{what} Bit"), None)?;
        let bwhat = format!("{what} Bit Offset={off}");
        if !t.has_bits() {
            return Err(format!(
                "{bwhat}: bits can be named in Unsigned8/16/32 items only, not {}",
                t.gsdml_name()
            ));
        }
        if usize::from(off) >= 8 * t.size() {
            return Err(format!("{bwhat}: outside the item's {} bits", 8 * t.size()));
        }
        if bits.iter().any(|(o, _)| *o == off) {
            return Err(format!("{bwhat}: named twice"));
        }
        let name = b.attribute("Name").unwrap_or("").trim().to_string();
        bits.push((
            off,
            if name.is_empty() {
                format!("Bit {off}")
            } else {
                name
            },
        ));
    }
    bits.sort();
    Ok(bits)
}

/// The items of `<{element}>` under a submodule; their sizes must add up to `length`, the
/// submodule's byte count in that direction. `None` when the element is absent.
pub(crate) fn parse_items(
    sub: roxmltree::Node<'_, '_>,
    element: &str,
    length_name: &str,
    length: u16,
    swhat: &str,
) -> Result<Vec<IoItem>, String> {
    let Some(list) = child(sub, element) else {
        return Ok(Vec::new());
    };
    let what = format!("{swhat} {element}");
    let mut items = Vec::new();
    let mut offset = 0usize;
    for (i, n) in list.children().filter(|c| c.is_element()).enumerate() {
        if n.tag_name().name() != "Item" {
            return Err(format!(
                "{what}: unexpected element <{}>",
                n.tag_name().name()
            ));
        }
        let iwhat = format!("{what} Item {}", i + 1);
        let data_type = io_type(n, &iwhat)?;
        let bits = item_bits(n, data_type, &iwhat)?;
        let name = n.attribute("Name").unwrap_or("").trim();
        let name = if name.is_empty() {
            format!("{} at byte {offset}", data_type.gsdml_name())
        } else {
            name.to_string()
        };
        offset += data_type.size();
        items.push(IoItem {
            name,
            data_type,
            bits,
        });
    }
    if items.is_empty() {
        return Err(format!("{what}: no Item"));
    }
    if offset != usize::from(length) {
        return Err(format!(
            "{what}: the items' sizes add up to {offset} bytes, but {length_name} is {length}"
        ));
    }
    Ok(items)
}

fn param_field(n: roxmltree::Node<'_, '_>, rwhat: &str, i: usize) -> Result<ParamField, String> {
    let byte_offset: u16 = num_item(n, "ByteOffset", rwhat, None)?;
    let name = n.attribute("Name").unwrap_or("").trim();
    let name = if name.is_empty() {
        format!("Parameter {}", i + 1)
    } else {
        name.to_string()
    };
    let what = format!("{rwhat} Parameter '{name}'");
    let t = n.attribute("DataType").unwrap_or("");
    let kind = if n.attribute("BitOffset").is_some() {
        if !matches!(t, "" | "Bit" | "BitArea") {
            return Err(format!(
                "{what}: a field with BitOffset has DataType Bit or BitArea (or none), not '{t}'"
            ));
        }
        FieldKind::Bits {
            offset: num_item(n, "BitOffset", &what, None)?,
            length: num_item(n, "BitLength", &what, Some(1))?,
        }
    } else {
        FieldKind::Value(ParamType::from_name(t).ok_or_else(|| {
            format!(
                "{what}: DataType '{t}' is not one of Unsigned8, Unsigned16, Unsigned32, \
                 Integer8, Integer16, Integer32 (or give BitOffset for a bit field)"
            )
        })?)
    };
    let default = match n.attribute("Default") {
        None => 0,
        Some(v) => parse_int(v).ok_or_else(|| format!("{what}: Default '{v}' is not a number"))?,
    };
    let allowed = match n.attribute("Allowed") {
        None => Allowed::default(),
        Some(v) => Allowed::parse(v).map_err(|e| format!("{what}: Allowed '{v}': {e}"))?,
    };
    Ok(ParamField {
        name,
        byte_offset,
        kind,
        default,
        allowed,
    })
}

/// The `<ParameterRecord>` elements under a submodule, each checked
/// ([`ParamRecord::validate`]); indices unique per submodule.
pub(crate) fn parse_records(
    sub: roxmltree::Node<'_, '_>,
    swhat: &str,
) -> Result<Vec<ParamRecord>, String> {
    let mut recs: Vec<ParamRecord> = Vec::new();
    for r in sub.children().filter(|c| c.has_tag_name("ParameterRecord")) {
        let index: u16 = num_item(r, "Index", &format!("{swhat} ParameterRecord"), None)?;
        let rwhat = format!("{swhat} ParameterRecord Index={index:#x}");
        if recs.iter().any(|x| x.index == index) {
            return Err(format!("{rwhat}: duplicate index"));
        }
        let length: u16 = num_item(r, "Length", &rwhat, None)?;
        let mut fields = Vec::new();
        for (i, p) in r.children().filter(|c| c.is_element()).enumerate() {
            if !p.has_tag_name("Parameter") {
                return Err(format!(
                    "{rwhat}: unexpected element <{}>",
                    p.tag_name().name()
                ));
            }
            fields.push(param_field(p, &rwhat, i)?);
        }
        let name = r.attribute("Name").unwrap_or("").trim();
        let rec = ParamRecord {
            index,
            length,
            name: if name.is_empty() {
                format!("Parameter record {index}")
            } else {
                name.to_string()
            },
            fields,
        };
        rec.validate().map_err(|e| format!("{rwhat}: {e}"))?;
        recs.push(rec);
    }
    Ok(recs)
}

#[cfg(test)]
#[path = "items_tests.rs"]
mod tests;

//! A GSDML reader, as far as connecting needs it: DeviceIdentity (VendorID, DeviceID), the
//! DeviceAccessPointItem (ModuleIdentNumber, its virtual, interface and port submodules), the
//! ModuleList (ModuleItem ID, ModuleIdentNumber, VirtualSubmoduleItems with SubmoduleIdentNumber,
//! IOData Input/Output DataItems and ParameterRecordDataItems with their default values).
//!
//! Source of the element and attribute names: the GSDML files in
//! `/work/shared/fixtures/gsdml/` (GSDML V2.4; p-net sample app, pnio-rs sample, profinet-rs
//! demo) and the GSDML specification's schema names as used there.

use std::collections::HashMap;

use crate::model::{DeviceModel, Module, ParamRecord, Submodule};

/// A submodule as described in the GSDML.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GsdSubmodule {
    pub id: String,
    pub ident: u32,
    /// Fixed subslot (interface/port submodules); virtual submodules default to 1.
    pub subslot: Option<u16>,
    pub input_len: u16,
    pub output_len: u16,
    pub params: Vec<ParamRecord>,
}

/// A module (or the DAP) as described in the GSDML.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GsdModule {
    pub id: String,
    pub ident: u32,
    pub submodules: Vec<GsdSubmodule>,
}

/// The parts of a GSDML file the controller uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gsdml {
    pub vendor_id: u16,
    pub device_id: u16,
    /// DNS_CompatibleName of the first DAP (a default station name).
    pub dns_name: Option<String>,
    pub daps: Vec<GsdModule>,
    pub modules: Vec<GsdModule>,
}

fn parse_num(s: &str) -> Option<u64> {
    let s = s.trim();
    if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u64::from_str_radix(h, 16).ok()
    } else {
        s.parse().ok()
    }
}

fn num_attr<T: TryFrom<u64>>(n: roxmltree::Node<'_, '_>, name: &str) -> Result<T, String> {
    let v = n
        .attribute(name)
        .ok_or_else(|| format!("<{}> lacks {name}", n.tag_name().name()))?;
    parse_num(v)
        .and_then(|x| T::try_from(x).ok())
        .ok_or_else(|| {
            format!(
                "<{}> {name}='{v}' is not a valid number",
                n.tag_name().name()
            )
        })
}

/// Size in bytes of a GSDML DataType (None: unknown type; OctetString etc. use `Length`).
pub fn data_type_len(t: &str, length_attr: Option<u16>) -> Option<u16> {
    Some(match t {
        "Boolean" | "Integer8" | "Unsigned8" => 1,
        "Integer16" | "Unsigned16" => 2,
        "Integer32" | "Unsigned32" | "Float32" | "TimeOfDay without date indication" => 4,
        "Integer64" | "Unsigned64" | "Float64" => 8,
        "Date" | "TimeOfDay with date indication" | "TimeDifference with date indication" => 7,
        "Float32+Unsigned8" => 5,
        "Unsigned8+Unsigned8" => 2,
        "Unsigned16_S" | "Integer16_S" => 3,
        "Unsigned8_S" | "Integer8_S" => 2,
        "OctetString"
        | "VisibleString"
        | "UnicodeString8"
        | "61131_STRING"
        | "61131_WSTRING"
        | "OctetString_S"
        | "OctetString2+Unsigned8" => length_attr?,
        _ => return None,
    })
}

fn local<'a, 'i>(
    n: roxmltree::Node<'a, 'i>,
    name: &str,
) -> impl Iterator<Item = roxmltree::Node<'a, 'i>> + 'a {
    let name = name.to_string();
    n.children()
        .filter(move |c| c.is_element() && c.tag_name().name() == name)
}

fn first<'a, 'i>(n: roxmltree::Node<'a, 'i>, name: &str) -> Option<roxmltree::Node<'a, 'i>> {
    local(n, name).next()
}

fn io_len(iodata: Option<roxmltree::Node<'_, '_>>, dir: &str) -> Result<u16, String> {
    let Some(io) = iodata else { return Ok(0) };
    let Some(d) = first(io, dir) else {
        return Ok(0);
    };
    let mut sum: u16 = 0;
    for item in local(d, "DataItem") {
        let t = item.attribute("DataType").unwrap_or("");
        let len_attr = item
            .attribute("Length")
            .and_then(parse_num)
            .and_then(|x| u16::try_from(x).ok());
        let n = data_type_len(t, len_attr).ok_or_else(|| format!("unknown IO DataType '{t}'"))?;
        sum = sum.checked_add(n).ok_or("IO data too long")?;
    }
    Ok(sum)
}

/// Encode a default value of DataType `t` big-endian into `buf` at `off`.
fn put_value(buf: &mut [u8], off: usize, t: &str, v: &str) -> Result<(), String> {
    let bad = || format!("default value '{v}' does not fit {t}");
    let bytes: Vec<u8> = match t {
        "Float32" => v
            .trim()
            .parse::<f32>()
            .map_err(|_| bad())?
            .to_be_bytes()
            .to_vec(),
        "Float64" => v
            .trim()
            .parse::<f64>()
            .map_err(|_| bad())?
            .to_be_bytes()
            .to_vec(),
        "Integer8" | "Integer16" | "Integer32" | "Integer64" => {
            let x: i64 = v.trim().parse().map_err(|_| bad())?;
            let n = data_type_len(t, None).unwrap_or(1) as usize;
            x.to_be_bytes()[8 - n..].to_vec()
        }
        "OctetString" | "VisibleString" => {
            if t == "VisibleString" {
                v.as_bytes().to_vec()
            } else {
                v.split(',')
                    .map(|p| {
                        parse_num(p)
                            .and_then(|x| u8::try_from(x).ok())
                            .ok_or_else(bad)
                    })
                    .collect::<Result<_, _>>()?
            }
        }
        _ => {
            let n = data_type_len(t, None)
                .ok_or_else(|| format!("unsupported parameter DataType '{t}'"))?
                as usize;
            let x = parse_num(v).ok_or_else(bad)?;
            if n < 8 && x >> (8 * n) != 0 {
                return Err(bad());
            }
            x.to_be_bytes()[8 - n..].to_vec()
        }
    };
    let end = off.checked_add(bytes.len()).ok_or_else(bad)?;
    buf.get_mut(off..end)
        .ok_or_else(bad)?
        .copy_from_slice(&bytes);
    Ok(())
}

fn params(sub: roxmltree::Node<'_, '_>) -> Result<Vec<ParamRecord>, String> {
    let mut out = Vec::new();
    let Some(list) = first(sub, "RecordDataList") else {
        return Ok(out);
    };
    for rec in local(list, "ParameterRecordDataItem") {
        let index: u16 = num_attr(rec, "Index")?;
        let len: u16 = num_attr(rec, "Length")?;
        let mut data = vec![0u8; len as usize];
        if let Some(c) = first(rec, "Const") {
            let off: usize = c.attribute("ByteOffset").and_then(parse_num).unwrap_or(0) as usize;
            let v = c.attribute("Data").unwrap_or("");
            if !v.is_empty() {
                put_value(&mut data, off, "OctetString", v)?;
            }
        }
        for r in local(rec, "Ref") {
            let t = r.attribute("DataType").unwrap_or("Unsigned8");
            let off: usize = r.attribute("ByteOffset").and_then(parse_num).unwrap_or(0) as usize;
            let Some(dv) = r.attribute("DefaultValue") else {
                continue;
            };
            if r.attribute("BitOffset").is_some() || t == "Bit" || t == "BitArea" {
                // Bit fields: set bits in the byte(s) at ByteOffset.
                let bit: u32 = r.attribute("BitOffset").and_then(parse_num).unwrap_or(0) as u32;
                let val = parse_num(dv).unwrap_or(0);
                if let Some(b) = data.get_mut(off) {
                    *b |= ((val << bit) & 0xFF) as u8;
                }
                continue;
            }
            put_value(&mut data, off, t, dv)?;
        }
        out.push(ParamRecord { index, data });
    }
    Ok(out)
}

fn virtual_sub(s: roxmltree::Node<'_, '_>) -> Result<GsdSubmodule, String> {
    let iodata = first(s, "IOData");
    Ok(GsdSubmodule {
        id: s.attribute("ID").unwrap_or("").to_string(),
        ident: num_attr(s, "SubmoduleIdentNumber")?,
        subslot: s
            .attribute("FixedInSubslots")
            .and_then(|v| v.split(&[' ', '.'][..]).next())
            .and_then(parse_num)
            .and_then(|x| u16::try_from(x).ok()),
        input_len: io_len(iodata, "Input")?,
        output_len: io_len(iodata, "Output")?,
        params: params(s)?,
    })
}

fn module(n: roxmltree::Node<'_, '_>) -> Result<GsdModule, String> {
    let mut subs = Vec::new();
    if let Some(list) = first(n, "VirtualSubmoduleList") {
        for s in local(list, "VirtualSubmoduleItem") {
            subs.push(virtual_sub(s)?);
        }
    }
    if let Some(list) = first(n, "SystemDefinedSubmoduleList") {
        for s in list.children().filter(|c| c.is_element()) {
            let name = s.tag_name().name();
            if name != "InterfaceSubmoduleItem" && name != "PortSubmoduleItem" {
                continue;
            }
            subs.push(GsdSubmodule {
                id: s.attribute("ID").unwrap_or("").to_string(),
                ident: num_attr(s, "SubmoduleIdentNumber")?,
                subslot: Some(num_attr(s, "SubslotNumber")?),
                input_len: 0,
                output_len: 0,
                params: params(s)?,
            });
        }
    }
    Ok(GsdModule {
        id: n.attribute("ID").unwrap_or("").to_string(),
        ident: num_attr(n, "ModuleIdentNumber")?,
        submodules: subs,
    })
}

impl Gsdml {
    /// Parse GSDML text (decode ISO-8859-1 files with [`Gsdml::load`]).
    pub fn parse(text: &str) -> Result<Gsdml, String> {
        let doc = roxmltree::Document::parse(text).map_err(|e| format!("GSDML XML error: {e}"))?;
        let ident = doc
            .descendants()
            .find(|n| n.is_element() && n.tag_name().name() == "DeviceIdentity")
            .ok_or("GSDML has no DeviceIdentity")?;
        let vendor_id: u16 = num_attr(ident, "VendorID")?;
        let device_id: u16 = num_attr(ident, "DeviceID")?;
        let mut daps = Vec::new();
        let mut dns_name = None;
        for d in doc
            .descendants()
            .filter(|n| n.is_element() && n.tag_name().name() == "DeviceAccessPointItem")
        {
            if dns_name.is_none() {
                dns_name = d.attribute("DNS_CompatibleName").map(str::to_string);
            }
            daps.push(module(d)?);
        }
        if daps.is_empty() {
            return Err("GSDML has no DeviceAccessPointItem".into());
        }
        let mut modules = Vec::new();
        for m in doc
            .descendants()
            .filter(|n| n.is_element() && n.tag_name().name() == "ModuleItem")
        {
            modules.push(module(m)?);
        }
        Ok(Gsdml {
            vendor_id,
            device_id,
            dns_name,
            daps,
            modules,
        })
    }

    /// Read a file; UTF-8, or ISO-8859-1 when it is not valid UTF-8 (as GSDML files often are).
    pub fn load(path: &std::path::Path) -> Result<Gsdml, String> {
        let bytes =
            std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let text = match String::from_utf8(bytes) {
            Ok(s) => s,
            Err(e) => e.into_bytes().iter().map(|&b| b as char).collect(),
        };
        // roxmltree rejects an encoding declaration it cannot honour only if asked; strip it.
        Gsdml::parse(&text)
    }

    /// Find a module by its GSDML ID ("IDM_30") or its ModuleIdentNumber ("0x30", "48").
    pub fn module(&self, key: &str) -> Option<&GsdModule> {
        self.modules.iter().find(|m| m.id == key).or_else(|| {
            let n = parse_num(key)?;
            self.modules.iter().find(|m| u64::from(m.ident) == n)
        })
    }

    /// Build a device model: the first DAP in slot 0 plus `slots` = (slot, module key) pairs.
    /// Each module's virtual submodules go to subslot 1, 2, ... unless fixed.
    pub fn device_model(
        &self,
        station_name: &str,
        slots: &[(u16, String)],
    ) -> Result<DeviceModel, String> {
        let dap = self.daps.first().ok_or("no DAP")?;
        let mut modules = vec![to_module(0, dap)];
        let mut seen = HashMap::new();
        for (slot, key) in slots {
            if *slot == 0 {
                return Err("slot 0 is the DAP".into());
            }
            if seen.insert(*slot, ()).is_some() {
                return Err(format!("slot {slot} given twice"));
            }
            let m = self
                .module(key)
                .ok_or_else(|| format!("module '{key}' not in the GSDML"))?;
            modules.push(to_module(*slot, m));
        }
        let mut model = DeviceModel {
            station_name: station_name.to_string(),
            vendor_id: self.vendor_id,
            device_id: self.device_id,
            api: 0,
            modules,
        };
        model.validate()?;
        Ok(model)
    }
}

fn to_module(slot: u16, m: &GsdModule) -> Module {
    let mut next = 1u16;
    Module {
        slot,
        ident: m.ident,
        submodules: m
            .submodules
            .iter()
            .map(|s| {
                let subslot = s.subslot.unwrap_or_else(|| {
                    let v = next;
                    next += 1;
                    v
                });
                Submodule {
                    subslot,
                    ident: s.ident,
                    input_len: s.input_len,
                    output_len: s.output_len,
                    params: s.params.clone(),
                }
            })
            .collect(),
    }
}

/// Parse a module list "1=IDM_30,2=0x31" into (slot, key) pairs.
pub fn parse_slot_list(s: &str) -> Result<Vec<(u16, String)>, String> {
    s.split(',')
        .filter(|p| !p.trim().is_empty())
        .map(|p| {
            let (slot, key) = p
                .split_once('=')
                .ok_or_else(|| format!("'{p}': expected SLOT=MODULE"))?;
            let slot = parse_num(slot)
                .and_then(|x| u16::try_from(x).ok())
                .ok_or_else(|| format!("'{slot}' is not a slot number"))?;
            Ok((slot, key.trim().to_string()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    const DIR: &str = "/work/shared/fixtures/gsdml";

    #[test]
    fn pnet_sample_app() {
        let g =
            Gsdml::load(&Path::new(DIR).join("GSDML-V2.4-RT-Labs-P-Net-Sample-App-20220324.xml"))
                .unwrap();
        assert_eq!((g.vendor_id, g.device_id), (0x0493, 0x0002));
        assert_eq!(g.dns_name.as_deref(), Some("rt-labs-dev"));
        let dap = &g.daps[0];
        assert_eq!(dap.ident, 1);
        let subslots: Vec<_> = dap.submodules.iter().map(|s| s.subslot).collect();
        // Port 2 is commented out in that file.
        assert_eq!(subslots, vec![None, Some(0x8000), Some(0x8001)]);
        assert_eq!(g.modules.len(), 4);
        let m = g.module("IDM_32").unwrap();
        assert_eq!(m.ident, 0x32);
        assert_eq!(
            (m.submodules[0].input_len, m.submodules[0].output_len),
            (1, 1)
        );
        assert_eq!(
            m.submodules[0].params,
            vec![
                ParamRecord {
                    index: 123,
                    data: vec![0, 0, 0, 1]
                },
                ParamRecord {
                    index: 124,
                    data: vec![0, 0, 0, 2]
                },
            ]
        );
        let echo = g.module("0x40").unwrap();
        assert_eq!(
            (echo.submodules[0].input_len, echo.submodules[0].output_len),
            (8, 8)
        );
        let model = g
            .device_model(
                "rt-labs-dev",
                &parse_slot_list("1=IDM_30,2=0x31,3=IDM_40").unwrap(),
            )
            .unwrap();
        assert_eq!(model.modules.len(), 4);
        let l = model.layout();
        assert_eq!(l.input.area_len, 1 + 8);
        assert_eq!(l.output.area_len, 1 + 8);
        assert!(g.device_model("x", &[(1, "IDM_99".into())]).is_err());
        assert!(g.device_model("x", &[(0, "IDM_30".into())]).is_err());
    }

    #[test]
    fn other_fixtures_parse() {
        for f in [
            "pniors-sample-16real-32bool.xml",
            "profinetrs-demo.gsdml.xml",
        ] {
            let g = Gsdml::load(&Path::new(DIR).join(f)).unwrap();
            assert!(!g.modules.is_empty(), "{f}");
            assert!(
                g.daps[0]
                    .submodules
                    .iter()
                    .any(|s| s.subslot == Some(0x8000))
                    || f.contains("demo"),
                "{f}"
            );
        }
        let g = Gsdml::load(&Path::new(DIR).join("pniors-sample-16real-32bool.xml")).unwrap();
        // 16 REAL = 64 bytes in some module.
        assert!(g.modules.iter().any(|m| m
            .submodules
            .iter()
            .any(|s| s.input_len == 64 || s.output_len == 64)));
    }

    #[test]
    fn bad_input_is_an_error() {
        assert!(Gsdml::parse("<a").is_err());
        assert!(Gsdml::parse("<ISO15745Profile/>").is_err());
        assert!(parse_slot_list("1").is_err());
        assert!(parse_slot_list("x=IDM").is_err());
        assert_eq!(
            parse_slot_list("1=A, 0x2=B").unwrap(),
            vec![(1, "A".into()), (2, "B".into())]
        );
    }
}

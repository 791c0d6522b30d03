//! Reader for the device daemon's runtime configuration XML (spec 2.11; format owned by
//! `pn-device-formats`, `device/formats/src/config.rs`, examples in `device/config/examples/`),
//! so the controller can connect to a pn-device from the very file the device was started with.
//!
//! Items read: `StationName`, `VendorID`, `DeviceID`, `SendClock` (ms), `IpAddress`,
//! `SlotLayout/Module` (`Slot`, `ModuleIdentNumber`) and `Module/Submodule` (`Subslot`,
//! `SubmoduleIdentNumber`, `InputLength`, `OutputLength`); each as an attribute or a child
//! element, numbers decimal or `0x` hex.
//!
//! Direction: in that file `InputLength` is data the controller sends to the device (the
//! device API's I area) and `OutputLength` data the device sends to the controller. In the
//! controller's PROFINET terms these are the submodule's **output** and **input** lengths.

use std::net::Ipv4Addr;

use crate::model::{DeviceModel, Module, Submodule};

/// A device configuration as the controller needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceConfig {
    pub model: DeviceModel,
    /// Send clock in ms (1, 2 or 4), default 1.
    pub send_clock_ms: u16,
    /// Configured IP address, if any.
    pub ip: Option<Ipv4Addr>,
}

fn parse_num(s: &str) -> Option<u64> {
    let s = s.trim();
    if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u64::from_str_radix(h, 16).ok()
    } else {
        s.parse().ok()
    }
}

fn child<'a, 'i>(n: roxmltree::Node<'a, 'i>, name: &str) -> Option<roxmltree::Node<'a, 'i>> {
    n.children()
        .find(|c| c.is_element() && c.tag_name().name() == name)
}

fn item(n: roxmltree::Node<'_, '_>, name: &str) -> Option<String> {
    n.attribute(name)
        .map(|s| s.trim().to_string())
        .or_else(|| child(n, name).map(|c| c.text().unwrap_or("").trim().to_string()))
}

fn num<T: TryFrom<u64>>(
    n: roxmltree::Node<'_, '_>,
    name: &str,
    default: Option<T>,
) -> Result<T, String> {
    match item(n, name) {
        None => default.ok_or_else(|| format!("<{}> lacks {name}", n.tag_name().name())),
        Some(v) => parse_num(&v)
            .and_then(|x| T::try_from(x).ok())
            .ok_or_else(|| format!("{name} '{v}' is not a valid number")),
    }
}

impl DeviceConfig {
    pub fn parse(text: &str) -> Result<DeviceConfig, String> {
        let doc = roxmltree::Document::parse(text).map_err(|e| format!("XML error: {e}"))?;
        let root = doc.root_element();
        let station_name = item(root, "StationName").unwrap_or_default();
        let vendor_id: u16 = num(root, "VendorID", None)?;
        let device_id: u16 = num(root, "DeviceID", None)?;
        let send_clock_ms: u16 = num(root, "SendClock", Some(1))?;
        let ip = child(root, "Network")
            .and_then(|n| item(n, "IpAddress"))
            .or_else(|| item(root, "IpAddress"))
            .filter(|s| !s.is_empty())
            .map(|s| {
                s.parse::<Ipv4Addr>()
                    .map_err(|_| format!("IpAddress '{s}'"))
            })
            .transpose()?;
        let layout = child(root, "SlotLayout").ok_or("missing SlotLayout")?;
        let mut modules = Vec::new();
        for m in layout
            .children()
            .filter(|c| c.is_element() && c.tag_name().name() == "Module")
        {
            let slot: u16 = num(m, "Slot", None)?;
            let ident: u32 = num(m, "ModuleIdentNumber", None)?;
            let mut subs = Vec::new();
            for s in m
                .children()
                .filter(|c| c.is_element() && c.tag_name().name() == "Submodule")
            {
                subs.push(Submodule {
                    subslot: num(s, "Subslot", None)?,
                    ident: num(s, "SubmoduleIdentNumber", None)?,
                    // Device terms -> PROFINET terms (see module docs).
                    output_len: num(s, "InputLength", Some(0))?,
                    input_len: num(s, "OutputLength", Some(0))?,
                    params: Vec::new(),
                });
            }
            modules.push(Module {
                slot,
                ident,
                submodules: subs,
            });
        }
        let mut model = DeviceModel {
            station_name,
            vendor_id,
            device_id,
            api: 0,
            modules,
        };
        model.validate()?;
        Ok(DeviceConfig {
            model,
            send_clock_ms,
            ip,
        })
    }

    pub fn load(path: &std::path::Path) -> Result<DeviceConfig, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        DeviceConfig::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const XML: &str = r#"<PnDeviceConfiguration>
      <StationName>dev-1</StationName><VendorID>0x0493</VendorID><DeviceID>1</DeviceID>
      <SendClock>2</SendClock><Network><IpAddress>10.0.0.2</IpAddress></Network>
      <SlotLayout>
        <Module Slot="0" ModuleIdentNumber="1"><Submodule Subslot="1" SubmoduleIdentNumber="1"/>
          <Submodule Subslot="0x8000" SubmoduleIdentNumber="2"/><Submodule Subslot="0x8001" SubmoduleIdentNumber="3"/></Module>
        <Module Slot="1" ModuleIdentNumber="0x30"><Submodule Subslot="1" SubmoduleIdentNumber="0x130" InputLength="2">
          <OutputLength>4</OutputLength></Submodule></Module>
      </SlotLayout></PnDeviceConfiguration>"#;

    #[test]
    fn parses_device_xml_with_direction_swap() {
        let c = DeviceConfig::parse(XML).unwrap();
        assert_eq!(c.send_clock_ms, 2);
        assert_eq!(c.ip, Some(Ipv4Addr::new(10, 0, 0, 2)));
        assert_eq!(c.model.station_name, "dev-1");
        assert_eq!((c.model.vendor_id, c.model.device_id), (0x0493, 1));
        let s = &c.model.modules[1].submodules[0];
        assert_eq!((s.input_len, s.output_len), (4, 2));
        assert!(DeviceConfig::parse("<x/>").is_err());
        assert!(DeviceConfig::parse(&XML.replace("0x130", "zz")).is_err());
    }

    #[test]
    fn device_examples_parse() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../device/config");
        let mut n = 0;
        for d in [dir.join("examples"), dir.clone()] {
            let Ok(rd) = std::fs::read_dir(&d) else {
                continue;
            };
            for e in rd.flatten() {
                let p = e.path();
                if p.extension().is_some_and(|x| x == "xml") {
                    DeviceConfig::load(&p).unwrap();
                    n += 1;
                }
            }
        }
        // The device crate ships at least its embedded default.
        assert!(n >= 1, "no device configuration examples found");
    }
}

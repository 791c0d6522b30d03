//! The device daemon's runtime configuration XML (spec 2.11) as the controller needs it, so
//! the controller can connect to a pn-device from the very file the device was started with.
//! The format is read by its one parser, `pn-device-formats` (`device/formats/src/config.rs`);
//! this file only maps it onto the controller's device model.
//!
//! Direction: in that file `InputLength` is data the controller sends to the device (the
//! device API's I area) and `OutputLength` data the device sends to the controller. In the
//! controller's PROFINET terms these are the submodule's **output** and **input** lengths.

use std::net::Ipv4Addr;

use pn_device_formats::config::RuntimeConfig;

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

impl DeviceConfig {
    /// Read the device's configuration with the device's own parser and rules
    /// (`pn_device_formats::config::RuntimeConfig`): one reader of the format, so a file the
    /// device refuses is refused here too, with the same message.
    pub fn parse(text: &str) -> Result<DeviceConfig, String> {
        let c = RuntimeConfig::parse(text, "device configuration")?;
        let modules = c
            .modules
            .iter()
            .map(|m| Module {
                slot: m.slot,
                ident: m.ident,
                submodules: m
                    .submodules
                    .iter()
                    .map(|s| Submodule {
                        subslot: s.subslot,
                        ident: s.ident,
                        // Device terms -> PROFINET terms (see module docs).
                        output_len: s.input_length,
                        input_len: s.output_length,
                        params: Vec::new(),
                    })
                    .collect(),
            })
            .collect();
        let mut model = DeviceModel {
            station_name: c.station_name,
            vendor_id: c.vendor_id,
            device_id: c.device_id,
            api: 0,
            modules,
        };
        model.validate()?;
        Ok(DeviceConfig {
            model,
            send_clock_ms: c.send_clock_ms,
            ip: (!c.ip.is_unspecified()).then_some(c.ip),
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

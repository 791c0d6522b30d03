#![no_main]
//! The farm's plant file parser and resolver (`pn_farm::plant`): any text must yield Ok or an
//! error message; an accepted plant file parses the same way again, and resolves into one
//! device per `[[device]]` with its own name and unique MACs, names and IPs, or into an error
//! that says it is about the plant file (or the duplicate it found).

use std::path::Path;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use pn_device::config::{RuntimeConfig, DEFAULT_CONFIG_XML};
use pn_farm::plant::{check_unique, from_plant, PlantFile};

fn config() -> &'static RuntimeConfig {
    static CFG: OnceLock<RuntimeConfig> = OnceLock::new();
    CFG.get_or_init(|| RuntimeConfig::parse(DEFAULT_CONFIG_XML, "default").expect("default XML"))
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let plant = match PlantFile::parse(text) {
        Ok(p) => p,
        Err(e) => {
            assert!(e.starts_with("plant file"), "error does not name the source: {e}");
            return;
        }
    };
    assert_eq!(PlantFile::parse(text).as_ref(), Ok(&plant));
    let default = Path::new("/plant/default.xml");
    let resolved = from_plant(&plant, Path::new("/plant"), "eth0", Some(default), |_| {
        Ok(config().clone())
    });
    match resolved {
        Ok(devs) => {
            assert_eq!(devs.len(), plant.devices.len());
            for (d, p) in devs.iter().zip(&plant.devices) {
                assert_eq!(d.stack.station_name, p.name);
                assert_eq!(d.stack.ip, p.ip.unwrap_or(std::net::Ipv4Addr::UNSPECIFIED));
            }
            check_unique(&devs).expect("from_plant returned duplicates");
        }
        Err(e) => assert!(
            e.starts_with("plant file") || e.contains("used twice"),
            "unexpected error: {e}"
        ),
    }
});

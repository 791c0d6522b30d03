//! What the farm emulates: the plant file (TOML, one `[[device]]` per device) or N numbered
//! copies of one configuration XML, resolved into one [`DeviceSpec`] per device. Pure: no
//! sockets, unit-tested.
//!
//! Plant file:
//! ```toml
//! # Paths are relative to the plant file.
//! config = "valve.xml"            # default configuration of the devices below
//! [[device]]
//! name = "tank-valve-1"           # NameOfStation ("" = none: the PLC assigns one over DCP)
//! mac = "02:00:50:4e:00:01"       # optional: mac_base + index otherwise
//! ip = "192.168.0.21"             # optional: 0.0.0.0 (the PLC assigns one) otherwise
//! [[device]]
//! name = "tank-pump-1"
//! config = "pump.xml"             # another device type
//! serial_number = "PUMP-0001"     # I&M0 serial number (default: the XML's, numbered)
//! ```

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};

use pn_device::dataplane::{ImRemanent, StackConfig};
use pn_device_formats::config::{valid_station_name, RuntimeConfig};
use serde::Deserialize;

/// Default first MAC of numbered devices: locally administered (bit 1 of the first byte), so
/// it never collides with a vendor's address.
pub const DEFAULT_MAC_BASE: [u8; 6] = [0x02, 0x00, 0x50, 0x4e, 0x00, 0x01];

/// Most devices one farm emulates (the issue's goal is 256; the limit bounds a typo).
pub const MAX_DEVICES: usize = 1024;

/// The plant file.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlantFile {
    /// Default configuration XML of the devices that name none.
    #[serde(default)]
    pub config: Option<PathBuf>,
    /// First MAC of devices that give none ("aa:bb:cc:dd:ee:ff").
    #[serde(default)]
    pub mac_base: Option<String>,
    #[serde(default, rename = "device")]
    pub devices: Vec<PlantDevice>,
}

/// One device of the plant file.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlantDevice {
    pub name: String,
    #[serde(default)]
    pub config: Option<PathBuf>,
    #[serde(default)]
    pub mac: Option<String>,
    #[serde(default)]
    pub ip: Option<Ipv4Addr>,
    #[serde(default)]
    pub mask: Option<Ipv4Addr>,
    #[serde(default)]
    pub gateway: Option<Ipv4Addr>,
    #[serde(default)]
    pub serial_number: Option<String>,
}

impl PlantFile {
    pub fn parse(text: &str) -> Result<PlantFile, String> {
        toml::from_str(text).map_err(|e| format!("plant file: {e}"))
    }
}

/// One emulated device, resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceSpec {
    pub mac: [u8; 6],
    /// The stack configuration pn-device would run this device with (name, IP, identity,
    /// layout, I&M).
    pub stack: StackConfig,
}

/// "aa:bb:cc:dd:ee:ff" or "aa-bb-..."; `None` for anything else.
pub fn parse_mac(s: &str) -> Option<[u8; 6]> {
    let mut out = [0u8; 6];
    let mut parts = s.trim().split([':', '-']);
    for b in &mut out {
        let p = parts.next()?;
        if p.len() != 2 {
            return None;
        }
        *b = u8::from_str_radix(p, 16).ok()?;
    }
    parts.next().is_none().then_some(out)
}

pub fn mac_text(m: &[u8; 6]) -> String {
    pn_protocol::wire::ethernet::MacAddr(*m).to_string()
}

/// `base + k` as a 48-bit number; `None` past ff:ff:ff:ff:ff:ff. A multicast or all-zero
/// result is refused too: no device may own one.
pub fn nth_mac(base: [u8; 6], k: u64) -> Option<[u8; 6]> {
    let mut v = [0u8; 8];
    v[2..].copy_from_slice(&base);
    let n = u64::from_be_bytes(v).checked_add(k)?;
    if n >= 1 << 48 {
        return None;
    }
    let b = n.to_be_bytes();
    let mut m = [0u8; 6];
    m.copy_from_slice(&b[2..]);
    (m[0] & 1 == 0 && m != [0; 6]).then_some(m)
}

/// `base + k`; `None` when it wraps or ends on the broadcast address. 0.0.0.0 stays 0.0.0.0
/// (no IP: every device waits for the PLC's DCP Set).
pub fn nth_ip(base: Ipv4Addr, k: u32) -> Option<Ipv4Addr> {
    if base.is_unspecified() {
        return Some(base);
    }
    let n = u32::from(base).checked_add(k)?;
    (n != u32::MAX).then_some(Ipv4Addr::from(n))
}

/// `prefix` + `k` (1-based), checked as a NameOfStation.
pub fn nth_name(prefix: &str, k: usize) -> Result<String, String> {
    let n = format!("{prefix}{k}");
    if valid_station_name(&n) {
        Ok(n)
    } else {
        Err(format!(
            "'{n}' is not a valid NameOfStation (lower case letters, digits, '-' and '.')"
        ))
    }
}

/// What pn-device would run a configuration with (the daemon's `build_stack_config` without
/// the daemon's persisted state): the farm's devices start from their configuration.
pub fn stack_config(
    cfg: &RuntimeConfig,
    nic: &str,
    name: &str,
    ip: Ipv4Addr,
    mask: Ipv4Addr,
    gateway: Ipv4Addr,
) -> StackConfig {
    StackConfig {
        nic: nic.to_string(),
        station_name: name.to_string(),
        ip,
        mask,
        gateway,
        device_name: cfg.device_name.clone(),
        vendor_id: cfg.vendor_id,
        device_id: cfg.device_id,
        send_clock_factor: cfg.send_clock_ms.saturating_mul(32),
        min_device_interval: cfg.min_device_interval,
        watchdog_ms: 0,
        safe_input_value: 0,
        modules: cfg.modules.clone(),
        im0: cfg.im0.clone(),
        im: ImRemanent::default(),
        records: Vec::new(),
        high_resolution_timer: false,
        standby_cpu: None,
        standby_grace_us: None,
        provider_hold: None,
        input_len: cfg.input_len,
        output_len: cfg.output_len,
        fingerprint: String::new(),
    }
}

/// A serial number per copy: the configuration's with "-k" appended (I&M0 tells the copies
/// apart, as real devices of one type differ by serial number). Cut to the 16 characters of
/// the I&M0 field from the left of the configuration's part, so the number stays.
pub fn nth_serial(serial: &str, k: usize) -> String {
    let suffix = format!("-{k}");
    let keep = 16usize.saturating_sub(suffix.len());
    let head: String = serial.chars().take(keep).collect();
    format!("{head}{suffix}")
}

/// Options of `--devices N` numbering.
#[derive(Debug, Clone)]
pub struct Numbering {
    pub count: usize,
    pub name_prefix: String,
    /// `None`: the configuration's IP (numbered from it when it is set).
    pub ip_base: Option<Ipv4Addr>,
    pub mac_base: [u8; 6],
    /// No NameOfStation (the PLC assigns names and IPs over DCP).
    pub unnamed: bool,
}

/// N copies of one configuration, numbered 1..=N.
pub fn numbered(cfg: &RuntimeConfig, nic: &str, n: &Numbering) -> Result<Vec<DeviceSpec>, String> {
    if n.count == 0 || n.count > MAX_DEVICES {
        return Err(format!("--devices must be 1..={MAX_DEVICES}"));
    }
    let base_ip = n.ip_base.unwrap_or(cfg.ip);
    (1..=n.count)
        .map(|k| {
            let i = (k - 1) as u32;
            let mac = nth_mac(n.mac_base, u64::from(i))
                .ok_or_else(|| format!("MAC base + {i} is not a unicast MAC"))?;
            let (name, ip) = if n.unnamed {
                (String::new(), Ipv4Addr::UNSPECIFIED)
            } else {
                let ip = nth_ip(base_ip, i).ok_or_else(|| format!("IP base + {i} overflows"))?;
                (nth_name(&n.name_prefix, k)?, ip)
            };
            let mut stack = stack_config(cfg, nic, &name, ip, cfg.mask, cfg.gateway);
            stack.im0.serial_number = nth_serial(&cfg.im0.serial_number, k);
            Ok(DeviceSpec { mac, stack })
        })
        .collect()
}

/// The devices of a plant file; `load` reads a configuration XML (relative paths resolved
/// against `dir`), `default_config` is the CLI's `--config`.
pub fn from_plant(
    plant: &PlantFile,
    dir: &Path,
    nic: &str,
    default_config: Option<&Path>,
    mut load: impl FnMut(&Path) -> Result<RuntimeConfig, String>,
) -> Result<Vec<DeviceSpec>, String> {
    if plant.devices.is_empty() || plant.devices.len() > MAX_DEVICES {
        return Err(format!(
            "plant file: 1..={MAX_DEVICES} [[device]] entries required"
        ));
    }
    let mac_base = match &plant.mac_base {
        Some(s) => parse_mac(s).ok_or_else(|| format!("plant file: mac_base '{s}'"))?,
        None => DEFAULT_MAC_BASE,
    };
    let mut out: Vec<DeviceSpec> = Vec::new();
    for (i, d) in plant.devices.iter().enumerate() {
        let what = format!("plant file: device {} ('{}')", i + 1, d.name);
        if !valid_station_name(&d.name) {
            return Err(format!("{what}: invalid NameOfStation"));
        }
        let path = d
            .config
            .as_ref()
            .or(plant.config.as_ref())
            .map(|p| dir.join(p))
            .or_else(|| default_config.map(Path::to_path_buf))
            .ok_or_else(|| format!("{what}: no configuration (config = \"...\" or --config)"))?;
        let cfg = load(&path).map_err(|e| format!("{what}: {e}"))?;
        let mac = match &d.mac {
            Some(s) => parse_mac(s).ok_or_else(|| format!("{what}: mac '{s}'"))?,
            None => nth_mac(mac_base, i as u64).ok_or_else(|| format!("{what}: no MAC left"))?,
        };
        let ip = d.ip.unwrap_or(Ipv4Addr::UNSPECIFIED);
        let mut stack = stack_config(
            &cfg,
            nic,
            &d.name,
            ip,
            d.mask.unwrap_or(cfg.mask),
            d.gateway.unwrap_or(Ipv4Addr::UNSPECIFIED),
        );
        stack.im0.serial_number = match &d.serial_number {
            Some(s) => s.clone(),
            None => nth_serial(&cfg.im0.serial_number, i + 1),
        };
        out.push(DeviceSpec { mac, stack });
    }
    check_unique(&out)?;
    Ok(out)
}

/// Two devices with one MAC, one name or one IP would answer for each other.
pub fn check_unique(devs: &[DeviceSpec]) -> Result<(), String> {
    let mut macs = std::collections::HashSet::new();
    let mut names = std::collections::HashSet::new();
    let mut ips = std::collections::HashSet::new();
    for d in devs {
        if !macs.insert(d.mac) {
            return Err(format!("MAC {} used twice", mac_text(&d.mac)));
        }
        if !d.stack.station_name.is_empty() && !names.insert(d.stack.station_name.clone()) {
            return Err(format!(
                "NameOfStation '{}' used twice",
                d.stack.station_name
            ));
        }
        if !d.stack.ip.is_unspecified() && !ips.insert(d.stack.ip) {
            return Err(format!("IP {} used twice", d.stack.ip));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use pn_device_formats::config::DEFAULT_CONFIG_XML;

    fn cfg() -> RuntimeConfig {
        RuntimeConfig::parse(DEFAULT_CONFIG_XML, "default").unwrap()
    }

    #[test]
    fn macs_count_up_across_bytes_and_stop_at_the_end() {
        let b = [0x02, 0, 0, 0, 0, 0xff];
        assert_eq!(nth_mac(b, 1), Some([0x02, 0, 0, 0, 1, 0]));
        assert_eq!(
            nth_mac([0xfe, 0xff, 0xff, 0xff, 0xff, 0xfe], 1),
            Some([0xfe, 0xff, 0xff, 0xff, 0xff, 0xff])
        );
        assert_eq!(nth_mac([0xff; 6], 1), None);
        // Crossing into a multicast first byte is refused.
        assert_eq!(nth_mac([0x02, 0xff, 0xff, 0xff, 0xff, 0xff], 1), None);
    }

    #[test]
    fn ips_names_and_serials_are_numbered() {
        let ip = Ipv4Addr::new(10, 0, 0, 254);
        assert_eq!(nth_ip(ip, 2), Some(Ipv4Addr::new(10, 0, 1, 0)));
        assert_eq!(nth_ip(Ipv4Addr::new(255, 255, 255, 253), 2), None);
        assert_eq!(
            nth_ip(Ipv4Addr::UNSPECIFIED, 7),
            Some(Ipv4Addr::UNSPECIFIED)
        );
        assert_eq!(nth_name("plant-dev-", 12).unwrap(), "plant-dev-12");
        assert!(nth_name("Plant_", 1).is_err());
        assert_eq!(nth_serial("SN-7", 3), "SN-7-3");
        assert_eq!(nth_serial("ABCDEFGHIJKLMNOPQ", 12), "ABCDEFGHIJKLM-12");
        assert_eq!(nth_serial("ÄÖÜ", 1).chars().count(), 5);
    }

    #[test]
    fn numbered_copies_differ_in_mac_name_ip_and_serial() {
        let c = cfg();
        let n = Numbering {
            count: 3,
            name_prefix: "plant-dev-".into(),
            ip_base: Some(Ipv4Addr::new(10, 1, 2, 10)),
            mac_base: DEFAULT_MAC_BASE,
            unnamed: false,
        };
        let d = numbered(&c, "eth0", &n).unwrap();
        assert_eq!(d.len(), 3);
        assert_eq!(d[2].stack.station_name, "plant-dev-3");
        assert_eq!(d[2].stack.ip, Ipv4Addr::new(10, 1, 2, 12));
        assert_eq!(d[2].mac, [0x02, 0x00, 0x50, 0x4e, 0x00, 0x03]);
        assert_eq!(d[0].stack.vendor_id, c.vendor_id);
        assert_ne!(d[0].stack.im0.serial_number, d[1].stack.im0.serial_number);
        check_unique(&d).unwrap();
        let unnamed = numbered(
            &c,
            "eth0",
            &Numbering {
                unnamed: true,
                ..n.clone()
            },
        )
        .unwrap();
        assert!(unnamed
            .iter()
            .all(|d| d.stack.station_name.is_empty() && d.stack.ip.is_unspecified()));
        check_unique(&unnamed).unwrap();
        assert!(numbered(&c, "eth0", &Numbering { count: 0, ..n }).is_err());
    }

    #[test]
    fn plant_file_parses_and_rejects_unknown_fields() {
        let p = PlantFile::parse(
            r#"
            config = "a.xml"
            [[device]]
            name = "tank-valve-1"
            ip = "192.168.0.21"
            [[device]]
            name = "tank-pump-1"
            config = "pump.xml"
            mac = "02:00:00:00:00:99"
            serial_number = "PUMP-1"
            "#,
        )
        .unwrap();
        assert_eq!(p.devices.len(), 2);
        let mut asked = Vec::new();
        let d = from_plant(&p, Path::new("/plant"), "eth0", None, |path| {
            asked.push(path.to_path_buf());
            Ok(cfg())
        })
        .unwrap();
        assert_eq!(
            asked,
            [
                PathBuf::from("/plant/a.xml"),
                PathBuf::from("/plant/pump.xml")
            ]
        );
        assert_eq!(d[0].mac, DEFAULT_MAC_BASE);
        assert_eq!(d[0].stack.ip, Ipv4Addr::new(192, 168, 0, 21));
        assert_eq!(d[1].mac, [2, 0, 0, 0, 0, 0x99]);
        assert_eq!(d[1].stack.im0.serial_number, "PUMP-1");
        assert_eq!(d[1].stack.ip, Ipv4Addr::UNSPECIFIED);

        for bad in [
            "[[device]]\nname = \"a\"\ncolour = \"red\"",
            "speed = 3\n[[device]]\nname = \"a\"",
            "[[device]]\nname = \"a\"\nip = \"300.1.1.1\"",
            "[[device]]\nname = 5",
            "[[device",
        ] {
            assert!(PlantFile::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn plant_file_errors_name_the_device() {
        let p = PlantFile::parse("[[device]]\nname = \"a\"\n[[device]]\nname = \"a\"").unwrap();
        let e = from_plant(&p, Path::new("."), "eth0", Some(Path::new("x.xml")), |_| {
            Ok(cfg())
        })
        .unwrap_err();
        assert!(e.contains("used twice"), "{e}");
        let p = PlantFile::parse("[[device]]\nname = \"Bad_Name\"").unwrap();
        let e = from_plant(&p, Path::new("."), "eth0", Some(Path::new("x.xml")), |_| {
            Ok(cfg())
        })
        .unwrap_err();
        assert!(e.contains("device 1"), "{e}");
        let p = PlantFile::parse("[[device]]\nname = \"a\"").unwrap();
        assert!(from_plant(&p, Path::new("."), "eth0", None, |_| Ok(cfg())).is_err());
        assert!(PlantFile::parse("")
            .map(|p| from_plant(&p, Path::new("."), "e", None, |_| Ok(cfg())))
            .unwrap()
            .is_err());
    }

    #[test]
    fn the_example_plant_file_loads() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/plant.toml");
        let p = PlantFile::parse(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let dir = path.parent().unwrap();
        let d = from_plant(&p, dir, "eth0", None, |x| RuntimeConfig::load(Some(x))).unwrap();
        let names: Vec<&str> = d.iter().map(|d| d.stack.station_name.as_str()).collect();
        assert_eq!(names, ["tank-valve-1", "tank-valve-2", "tank-pump-1", ""]);
        assert_eq!(d[2].mac, [0x02, 0x00, 0x50, 0x4e, 0x01, 0x00]);
        assert_eq!(d[3].mac, nth_mac(DEFAULT_MAC_BASE, 3).unwrap());
        assert_ne!(d[2].stack.input_len, d[0].stack.input_len);
    }

    /// The committed corpus of the `plant_file` fuzz target (device/fuzz/), with its checks.
    #[test]
    fn plant_file_fuzz_corpus_replays() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../device/fuzz/corpus/plant_file");
        let mut n = 0;
        for e in std::fs::read_dir(&dir).unwrap() {
            let path = e.unwrap().path();
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            n += 1;
            let Ok(p) = PlantFile::parse(&text) else {
                continue;
            };
            let d = Path::new("/plant/default.xml");
            match from_plant(&p, Path::new("/plant"), "eth0", Some(d), |_| Ok(cfg())) {
                Ok(devs) => {
                    assert_eq!(devs.len(), p.devices.len(), "{}", path.display());
                    check_unique(&devs).unwrap();
                }
                Err(e) => assert!(
                    e.starts_with("plant file") || e.contains("used twice"),
                    "{}: {e}",
                    path.display()
                ),
            }
        }
        assert!(n >= 3, "{n} corpus files");
    }

    #[test]
    fn macs_parse_strictly() {
        assert_eq!(parse_mac("02:00:50:4e:00:01"), Some(DEFAULT_MAC_BASE));
        assert_eq!(parse_mac("02-00-50-4E-00-01"), Some(DEFAULT_MAC_BASE));
        for bad in [
            "",
            "02:00:50:4e:00",
            "02:00:50:4e:00:01:02",
            "2:0:50:4e:0:1",
            "zz:00:50:4e:00:01",
        ] {
            assert_eq!(parse_mac(bad), None, "{bad}");
        }
        assert_eq!(
            parse_mac(&mac_text(&DEFAULT_MAC_BASE)),
            Some(DEFAULT_MAC_BASE)
        );
    }
}

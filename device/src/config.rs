//! Service settings (JSON) and the runtime configuration XML (spec 2.11).
//!
//! # Settings
//! A JSON object. Keys are colon paths like `Api:ApiKey`; both the nested form
//! (`{"Api":{"ApiKey":"x"}}`) and flat keys (`{"Api:ApiKey":"x"}`) are accepted and may be mixed
//! (flat keys win on conflict). The embedded default (`config/settings.default.json`) is
//! applied first, so a settings file only needs the keys it changes, and the daemon starts
//! with no file at all. Unknown keys are ignored with a warning in the log.
//!
//! # Runtime configuration XML
//! The format lives in `pn-device-formats` (the lab and the bench read the files they give the
//! daemon without linking it); re-exported here so the daemon's paths stay `crate::config`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

pub use pn_device_formats::config::{
    valid_station_name, RuntimeConfig, DEFAULT_CONFIG_XML, EMBEDDED_CONFIG_NAME,
    PLACEHOLDER_VENDOR_ID,
};

/// The embedded default settings.
pub const DEFAULT_SETTINGS_JSON: &str = include_str!("../config/settings.default.json");

/// Settings keys the service knows (for the "unknown key" warning).
const KNOWN_KEYS: &[&str] = &[
    "Api:ApiKey",
    "Network:DefaultInterfaceName",
    "Paths:RuntimeConfig",
    "Paths:PersistenceDir",
    "Licence:CertificatePath",
    "Licence:TrustedPublicKeys",
    "Licence:RecheckIntervalSeconds",
    "Timer:HighResolution",
    "Cyclic:StandbyCpu",
    "Cyclic:StandbyGraceUs",
    "Runtime:AutoStart",
    "Io:DeliveryWaitMs",
    "Driver:WatchdogMs",
    "Driver:SafeInputValue",
    "Logging:Format",
    "Logging:Filter",
    "Dev:SimulatedDataPlane",
    "Dev:SimControlSocket",
    "Dev:FaultStartFailure",
    "Dev:FaultStartCode",
    "Dev:FaultStartMode",
    "Dev:FaultStartTimes",
    "Dev:FaultPanicPath",
    "Dev:FaultProviderHold:Ms",
    "Dev:FaultProviderHold:Every",
];

/// Parsed service settings.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// `Api:ApiKey`; `None` when empty/absent (every loopback request accepted).
    pub api_key: Option<String>,
    /// `Network:DefaultInterfaceName`: factory-default NIC (last in the resolution order).
    pub default_nic: String,
    /// `Paths:RuntimeConfig`: XML path; `None` = embedded default configuration.
    pub runtime_config: Option<PathBuf>,
    /// `Paths:PersistenceDir`: where remanent data is stored.
    pub persistence_dir: PathBuf,
    /// `Licence:CertificatePath`.
    pub licence_path: PathBuf,
    /// `Licence:TrustedPublicKeys`: hex Ed25519 public keys (trust anchors).
    pub trusted_keys: Vec<String>,
    /// `Licence:RecheckIntervalSeconds` (> 0, fractions allowed).
    pub licence_recheck: std::time::Duration,
    /// `Timer:HighResolution`: initial high-resolution timer switch.
    pub high_resolution_timer: bool,
    /// `Cyclic:StandbyCpu`: CPU of the provider's standby sender (`stack::standby`); -1 (the
    /// default) = none.
    pub standby_cpu: Option<usize>,
    /// `Cyclic:StandbyGraceUs`: the standby's wait after a slot's due time in us; 0 (the
    /// default) = a quarter period. At most half a period is used.
    pub standby_grace_us: Option<u64>,
    /// `Runtime:AutoStart`: start the slave when the daemon starts.
    pub auto_start: bool,
    /// `Io:DeliveryWaitMs`: upper bound of the wait for the cyclic thread in `POST /api/io`;
    /// 0 = automatic (5 send cycles, at least 10 ms).
    pub delivery_wait_ms: u64,
    /// `Driver:WatchdogMs` (fingerprint input).
    pub watchdog_ms: u32,
    /// `Driver:SafeInputValue` (fingerprint input).
    pub safe_input_value: u8,
    /// `Logging:Format`: "text" or "json".
    pub log_json: bool,
    /// `Logging:Filter`: tracing env-filter directive (RUST_LOG overrides).
    pub log_filter: String,
    /// `Dev:SimulatedDataPlane`: TEST ONLY, use the simulated plane (see `sim.rs`).
    pub simulated_plane: bool,
    /// `Dev:SimControlSocket`: TEST ONLY, unix socket of the simulated plane.
    pub sim_control_socket: Option<PathBuf>,
    /// `Dev:Fault*`: TEST ONLY fault-injection points (see `fault.rs`).
    pub faults: crate::fault::Faults,
    /// Keys present in the file that the service does not know.
    pub unknown_keys: Vec<String>,
}

/// Flatten nested JSON objects into colon-path keys.
fn flatten(prefix: &str, v: &Value, out: &mut BTreeMap<String, Value>) {
    match v {
        Value::Object(map) => {
            for (k, v) in map {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}:{k}")
                };
                // Flat keys ("Api:ApiKey") and nested objects both end up as colon paths.
                flatten(&key, v, out);
            }
        }
        other => {
            out.insert(prefix.to_string(), other.clone());
        }
    }
}

impl Settings {
    /// The embedded defaults only.
    pub fn embedded() -> Settings {
        Settings::from_json_text(None).expect("embedded default settings are valid")
    }

    /// Load from a file (embedded defaults first, then the file's keys).
    pub fn load(path: &Path) -> Result<Settings, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read settings file {}: {e}", path.display()))?;
        Settings::from_json_text(Some(&text))
            .map_err(|e| format!("settings file {}: {e}", path.display()))
    }

    /// Parse settings text layered over the embedded defaults.
    pub fn from_json_text(text: Option<&str>) -> Result<Settings, String> {
        let mut map = BTreeMap::new();
        let defaults: Value =
            serde_json::from_str(DEFAULT_SETTINGS_JSON).map_err(|e| e.to_string())?;
        flatten("", &defaults, &mut map);
        let mut unknown_keys = Vec::new();
        if let Some(text) = text {
            let v: Value = serde_json::from_str(text).map_err(|e| format!("invalid JSON: {e}"))?;
            if !v.is_object() {
                return Err("the settings must be a JSON object".into());
            }
            let mut user = BTreeMap::new();
            flatten("", &v, &mut user);
            for (k, v) in user {
                if !KNOWN_KEYS.contains(&k.as_str()) && !k.starts_with("Licence:TrustedPublicKeys")
                {
                    unknown_keys.push(k.clone());
                }
                map.insert(k, v);
            }
        }
        let s = |k: &str| -> Result<String, String> {
            match map.get(k) {
                None | Some(Value::Null) => Ok(String::new()),
                Some(Value::String(s)) => Ok(s.clone()),
                Some(_) => Err(format!("{k} must be a string")),
            }
        };
        let b = |k: &str| -> Result<bool, String> {
            match map.get(k) {
                None | Some(Value::Null) => Ok(false),
                Some(Value::Bool(b)) => Ok(*b),
                Some(_) => Err(format!("{k} must be a boolean")),
            }
        };
        let n = |k: &str| -> Result<f64, String> {
            match map.get(k) {
                None | Some(Value::Null) => Ok(0.0),
                Some(Value::Number(n)) => n.as_f64().ok_or_else(|| format!("{k} is not a number")),
                Some(_) => Err(format!("{k} must be a number")),
            }
        };
        let opt_path = |v: String| {
            if v.is_empty() {
                None
            } else {
                Some(PathBuf::from(v))
            }
        };
        let trusted_keys = match map.get("Licence:TrustedPublicKeys") {
            Some(Value::Array(a)) => a
                .iter()
                .map(|v| {
                    v.as_str()
                        .map(|s| s.to_string())
                        .ok_or_else(|| "Licence:TrustedPublicKeys must be strings".to_string())
                })
                .collect::<Result<Vec<_>, _>>()?,
            Some(Value::String(s)) => vec![s.clone()],
            _ => return Err("Licence:TrustedPublicKeys must be an array of hex strings".into()),
        };
        for (i, k) in trusted_keys.iter().enumerate() {
            crate::licence::parse_public_key(k)
                .map_err(|e| format!("Licence:TrustedPublicKeys[{i}]: {e}"))?;
        }
        for k in ["Paths:PersistenceDir", "Licence:CertificatePath"] {
            if s(k)?.trim().is_empty() {
                return Err(format!("{k} must not be empty"));
            }
        }
        let recheck = n("Licence:RecheckIntervalSeconds")?;
        if !(recheck > 0.0 && recheck <= 7.0 * 86400.0) {
            return Err("Licence:RecheckIntervalSeconds must be in (0, 604800]".into());
        }
        let format = s("Logging:Format")?;
        if !matches!(format.as_str(), "text" | "json") {
            return Err("Logging:Format must be \"text\" or \"json\"".into());
        }
        let safe = n("Driver:SafeInputValue")?;
        if !(0.0..=255.0).contains(&safe) || safe.fract() != 0.0 {
            return Err("Driver:SafeInputValue must be an integer 0..255".into());
        }
        let wd = n("Driver:WatchdogMs")?;
        let dw = n("Io:DeliveryWaitMs")?;
        if !(0.0..=60_000.0).contains(&wd) || !(0.0..=10_000.0).contains(&dw) {
            return Err("Driver:WatchdogMs / Io:DeliveryWaitMs out of range".into());
        }
        let standby = n("Cyclic:StandbyCpu")?;
        if !(-1.0..=1023.0).contains(&standby) || standby.fract() != 0.0 {
            return Err("Cyclic:StandbyCpu must be -1 (no standby) or a CPU number 0..1023".into());
        }
        let grace = n("Cyclic:StandbyGraceUs")?;
        if !(0.0..=1_000_000.0).contains(&grace) || grace.fract() != 0.0 {
            return Err(
                "Cyclic:StandbyGraceUs must be 0 (a quarter period) or 1..1000000 us".into(),
            );
        }
        let default_nic = s("Network:DefaultInterfaceName")?;
        let api_key = s("Api:ApiKey")?;
        Ok(Settings {
            api_key: if api_key.is_empty() {
                None
            } else {
                Some(api_key)
            },
            default_nic,
            runtime_config: opt_path(s("Paths:RuntimeConfig")?),
            persistence_dir: PathBuf::from(s("Paths:PersistenceDir")?),
            licence_path: PathBuf::from(s("Licence:CertificatePath")?),
            trusted_keys,
            licence_recheck: std::time::Duration::from_secs_f64(recheck),
            high_resolution_timer: b("Timer:HighResolution")?,
            standby_cpu: (standby >= 0.0).then_some(standby as usize),
            standby_grace_us: (grace > 0.0).then_some(grace as u64),
            auto_start: b("Runtime:AutoStart")?,
            delivery_wait_ms: dw as u64,
            watchdog_ms: wd as u32,
            safe_input_value: safe as u8,
            log_json: format == "json",
            log_filter: s("Logging:Filter")?,
            simulated_plane: b("Dev:SimulatedDataPlane")?,
            sim_control_socket: opt_path(s("Dev:SimControlSocket")?),
            faults: crate::fault::Faults::from_settings(
                &s("Dev:FaultStartFailure")?,
                n("Dev:FaultStartCode")?,
                &s("Dev:FaultStartMode")?,
                n("Dev:FaultStartTimes")?,
                &s("Dev:FaultPanicPath")?,
                (
                    n("Dev:FaultProviderHold:Ms")?,
                    n("Dev:FaultProviderHold:Every")?,
                ),
            )?,
            unknown_keys,
        })
        .and_then(Settings::test_hooks_available)
    }

    /// The `Dev:*` settings are test hooks: a build without them (every release build) refuses
    /// to start with one set rather than ignore it.
    fn test_hooks_available(self) -> Result<Settings, String> {
        let wants = self.simulated_plane || self.sim_control_socket.is_some() || self.faults.any();
        if wants && !cfg!(feature = "test-hooks") {
            return Err(
                "the Dev:* settings (simulated data plane, fault injection) are test \
                        hooks this build does not have (a release build; the tests build with \
                        --features pn-device/test-hooks)"
                    .into(),
            );
        }
        Ok(self)
    }
}

/// NIC resolution of spec 1.7: `VENDOR_PNET_NIC` -> XML `Network/InterfaceName` -> settings.
pub fn resolve_nic(env: Option<&str>, cfg: &RuntimeConfig, settings: &Settings) -> String {
    if let Some(e) = env.map(str::trim).filter(|e| !e.is_empty()) {
        return e.to_string();
    }
    if !cfg.interface_name.is_empty() {
        return cfg.interface_name.clone();
    }
    settings.default_nic.clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_default_settings_parse() {
        let s = Settings::embedded();
        assert!(s.api_key.is_none());
        assert!(!s.trusted_keys.is_empty());
    }

    #[test]
    fn nested_and_flat_keys() {
        let a = Settings::from_json_text(Some(r#"{"Api":{"ApiKey":"k1"}}"#)).unwrap();
        assert_eq!(a.api_key.as_deref(), Some("k1"));
        let b = Settings::from_json_text(Some(r#"{"Api:ApiKey":"k2"}"#)).unwrap();
        assert_eq!(b.api_key.as_deref(), Some("k2"));
        assert!(Settings::from_json_text(Some(r#"{"Api":{"ApiKey":5}}"#)).is_err());
        assert!(Settings::from_json_text(Some("[1]")).is_err());
        let e = Settings::from_json_text(Some(r#"{"Licence":{"TrustedPublicKeys":["abcd"]}}"#));
        assert!(e.unwrap_err().contains("TrustedPublicKeys[0]"));
        assert!(Settings::from_json_text(Some(r#"{"Paths":{"PersistenceDir":""}}"#)).is_err());
        let u = Settings::from_json_text(Some(r#"{"Foo":{"Bar":1}}"#)).unwrap();
        assert_eq!(u.unknown_keys, vec!["Foo:Bar".to_string()]);
    }

    #[test]
    fn standby_cpu_is_off_by_default_and_checked() {
        assert_eq!(Settings::embedded().standby_cpu, None);
        assert_eq!(Settings::embedded().standby_grace_us, None);
        let g = Settings::from_json_text(Some(r#"{"Cyclic":{"StandbyGraceUs":20}}"#)).unwrap();
        assert_eq!(g.standby_grace_us, Some(20));
        assert!(Settings::from_json_text(Some(r#"{"Cyclic":{"StandbyGraceUs":-1}}"#)).is_err());
        let on = Settings::from_json_text(Some(r#"{"Cyclic":{"StandbyCpu":0}}"#)).unwrap();
        assert_eq!(on.standby_cpu, Some(0));
        for bad in ["-2", "1.5", "1024", "\"0\""] {
            let e = Settings::from_json_text(Some(&format!(r#"{{"Cyclic:StandbyCpu":{bad}}}"#)));
            assert!(e.is_err_and(|e| e.contains("Cyclic:StandbyCpu")), "{bad}");
        }
    }

    #[test]
    fn nic_resolution_order() {
        let s = Settings::embedded();
        let mut c = RuntimeConfig::load(None).unwrap();
        c.interface_name = "xmlnic".into();
        assert_eq!(resolve_nic(Some("envnic"), &c, &s), "envnic");
        assert_eq!(resolve_nic(Some(" "), &c, &s), "xmlnic");
        c.interface_name.clear();
        assert_eq!(resolve_nic(None, &c, &s), s.default_nic);
    }
}

//! `pn-device check-config`: checks an installation before (or instead of) starting the daemon.
//!
//! Every input is read by the code the daemon itself uses ([`Settings::load`],
//! [`RuntimeConfig::load`], [`resolve_nic`], [`crate::licence::check_file`],
//! [`crate::dataplane::read_link_state`]), so a file this command accepts is one the daemon
//! accepts. The checks, in the order they print, with the exit code of their first ERROR
//! (docs/decisions.md §24):
//!
//! | code | check | ERROR when |
//! |---|---|---|
//! | 3 | settings | the settings file cannot be read or parsed |
//! | 4 | configuration | the runtime configuration XML cannot be read or is invalid |
//! | 5 | licence | certificate missing, unreadable, badly signed, not yet / no longer valid, bound elsewhere |
//! | 6 | nic | the resolved NIC does not exist or is not Ethernet |
//! | 7 | capabilities | CAP_NET_RAW or CAP_NET_ADMIN missing from the effective set |
//! | 8 | http | 127.0.0.1:18840 cannot be bound (in use) |
//!
//! 0: no ERROR (WARN lines allowed); 2: usage error (clap). With several ERRORs the smallest
//! code wins, so a script sees the most basic problem first (a settings error hides the rest).
//!
//! The capability check reads the effective set of THIS process: run it as the service runs
//! (its user, its ambient capabilities) to check what the daemon will have.

use std::path::{Path, PathBuf};

use serde_json::json;

use crate::config::{resolve_nic, RuntimeConfig, Settings, PLACEHOLDER_VENDOR_ID};

/// The settings file the daemon reads when `--settings` is not given.
pub const DEFAULT_SETTINGS_PATH: &str = "/etc/pn-device/settings.json";

/// The settings file the daemon uses: `--settings`, else `$PN_DEVICE_SETTINGS`, else
/// [`DEFAULT_SETTINGS_PATH`] if it exists, else none (the embedded defaults).
pub fn settings_path(explicit: Option<PathBuf>) -> Option<PathBuf> {
    explicit
        .or_else(|| std::env::var_os("PN_DEVICE_SETTINGS").map(PathBuf::from))
        .or_else(|| {
            let p = PathBuf::from(DEFAULT_SETTINGS_PATH);
            p.exists().then_some(p)
        })
}

/// A Linux capability the daemon uses.
pub struct Capability {
    /// Bit number (linux/capability.h).
    pub bit: u32,
    pub name: &'static str,
    /// What is lost without it.
    pub consequence: &'static str,
    /// Without it the device cannot do its job (check-config: ERROR, not WARN).
    pub required: bool,
}

/// The capabilities the daemon uses; `deploy/pn-device.service` grants exactly these.
pub const CAPABILITIES: &[Capability] = &[
    Capability {
        bit: 13,
        name: "CAP_NET_RAW",
        consequence: "the raw AF_PACKET socket cannot be opened: the slave will not start (ConfigError, errorCode 1 EPERM)",
        required: true,
    },
    Capability {
        bit: 12,
        name: "CAP_NET_ADMIN",
        consequence: "the configured or DCP-assigned IP address cannot be put on the NIC",
        required: true,
    },
    Capability {
        bit: 23,
        name: "CAP_SYS_NICE",
        consequence: "the cyclic and receive threads run without real-time priority (SCHED_FIFO): watchdog expiries under load",
        required: false,
    },
    Capability {
        bit: 14,
        name: "CAP_IPC_LOCK",
        consequence: "memory cannot be locked (mlockall): page faults may delay cyclic frames",
        required: false,
    },
    Capability {
        bit: 10,
        name: "CAP_NET_BIND_SERVICE",
        consequence: "the SNMP agent cannot bind UDP port 161: engineering tools get no SNMP answers",
        required: false,
    },
];

/// Effective capability set of this process (`CapEff` of /proc/self/status).
pub fn effective_capabilities() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("CapEff:"))?;
    u64::from_str_radix(line["CapEff:".len()..].trim(), 16).ok()
}

/// The checks, in print order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    Settings,
    Configuration,
    Nic,
    Licence,
    Capabilities,
    Http,
}

impl Check {
    pub fn name(self) -> &'static str {
        match self {
            Check::Settings => "settings",
            Check::Configuration => "configuration",
            Check::Nic => "nic",
            Check::Licence => "licence",
            Check::Capabilities => "capabilities",
            Check::Http => "http",
        }
    }

    /// Exit code when this check has an ERROR.
    pub fn exit_code(self) -> u8 {
        match self {
            Check::Settings => 3,
            Check::Configuration => 4,
            Check::Licence => 5,
            Check::Nic => 6,
            Check::Capabilities => 7,
            Check::Http => 8,
        }
    }
}

/// The exit codes as `--help` prints them.
pub const EXIT_CODES_HELP: &str = "\
Exit codes:
  0  every check OK (WARN lines allowed)
  2  usage error
  3  settings: the settings file cannot be read or is invalid
  4  configuration: the runtime configuration XML cannot be read or is invalid
  5  licence: certificate missing, unreadable, not signed by a trusted key, expired or not
     yet valid, or bound to another machine / NIC
  6  nic: the PROFINET NIC does not exist or is not an Ethernet interface
  7  capabilities: CAP_NET_RAW or CAP_NET_ADMIN missing from this process
  8  http: 127.0.0.1:18840 is in use
With several errors the smallest code is returned.

The capability check looks at this process: run it the way the service runs, e.g.
  systemd-run --pipe --wait -p User=pn-device \\
    -p AmbientCapabilities='CAP_NET_RAW CAP_NET_ADMIN CAP_SYS_NICE CAP_IPC_LOCK CAP_NET_BIND_SERVICE' \\
    pn-device check-config";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Ok,
    Warn,
    Error,
    /// Not checked because an input it needs failed.
    Skip,
}

impl Level {
    fn word(self) -> &'static str {
        match self {
            Level::Ok => "OK",
            Level::Warn => "WARN",
            Level::Error => "ERROR",
            Level::Skip => "SKIP",
        }
    }
}

/// One printed line.
#[derive(Debug, Clone)]
pub struct Finding {
    pub check: Check,
    pub level: Level,
    pub message: String,
    /// What to do (WARN and ERROR).
    pub hint: Option<String>,
}

/// What the checks read besides files: the command line and environment of the daemon.
#[derive(Debug, Clone, Default)]
pub struct Inputs {
    /// `--settings` (else the daemon's resolution, [`settings_path`]).
    pub settings: Option<PathBuf>,
    /// `--config` (overrides `Paths:RuntimeConfig`).
    pub config: Option<PathBuf>,
    /// `VENDOR_PNET_NIC`.
    pub env_nic: Option<String>,
    /// The API port (18840; `--dev-port` in tests).
    pub port: u16,
}

/// All findings and the exit code.
#[derive(Debug, Clone)]
pub struct Report {
    pub findings: Vec<Finding>,
}

impl Report {
    /// 0, or the smallest exit code among the checks with an ERROR.
    pub fn exit_code(&self) -> u8 {
        self.findings
            .iter()
            .filter(|f| f.level == Level::Error)
            .map(|f| f.check.exit_code())
            .min()
            .unwrap_or(0)
    }

    /// One line per finding, then a summary line.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for f in &self.findings {
            out.push_str(&format!(
                "{:<5} {:<13} {}",
                f.level.word(),
                f.check.name(),
                f.message
            ));
            if let Some(h) = &f.hint {
                out.push_str(&format!(" -> {h}"));
            }
            out.push('\n');
        }
        let n = |l: Level| self.findings.iter().filter(|f| f.level == l).count();
        let code = self.exit_code();
        if code == 0 {
            out.push_str(&format!(
                "pn-device check-config: OK ({} warning(s))\n",
                n(Level::Warn)
            ));
        } else {
            out.push_str(&format!(
                "pn-device check-config: {} error(s), {} warning(s); exit {code}\n",
                n(Level::Error),
                n(Level::Warn)
            ));
        }
        out
    }

    pub fn json(&self) -> serde_json::Value {
        let checks: Vec<_> = self
            .findings
            .iter()
            .map(|f| {
                json!({
                    "check": f.check.name(),
                    "level": f.level.word(),
                    "message": f.message,
                    "hint": f.hint,
                })
            })
            .collect();
        json!({"ok": self.exit_code() == 0, "exitCode": self.exit_code(), "checks": checks})
    }
}

struct Out(Vec<Finding>);

impl Out {
    fn push(&mut self, check: Check, level: Level, message: String, hint: Option<&str>) {
        self.0.push(Finding {
            check,
            level,
            message,
            hint: hint.map(str::to_string),
        });
    }
    fn ok(&mut self, c: Check, m: String) {
        self.push(c, Level::Ok, m, None);
    }
    fn warn(&mut self, c: Check, m: String, hint: &str) {
        self.push(c, Level::Warn, m, Some(hint));
    }
    fn error(&mut self, c: Check, m: String, hint: &str) {
        self.push(c, Level::Error, m, Some(hint));
    }
    fn skip(&mut self, c: Check, why: &str) {
        self.push(c, Level::Skip, format!("not checked: {why}"), None);
    }
}

/// Run every check.
pub fn run(inputs: &Inputs) -> Report {
    let mut out = Out(Vec::new());
    let settings = check_settings(&mut out, inputs);
    let cfg = settings
        .as_ref()
        .and_then(|s| check_configuration(&mut out, inputs, s));
    if settings.is_some() && cfg.is_none() {
        // The NIC may come from the XML: without it the name is unknown.
        out.skip(Check::Nic, "needs a valid configuration");
        out.skip(Check::Licence, "needs a valid configuration (NIC binding)");
    } else if let (Some(s), Some(c)) = (&settings, &cfg) {
        let nic = resolve_nic(inputs.env_nic.as_deref(), c, s);
        check_nic(&mut out, &nic, inputs.env_nic.is_some(), c);
        check_licence(&mut out, s, &nic);
    } else {
        out.skip(Check::Configuration, "needs valid settings");
        out.skip(Check::Nic, "needs valid settings");
        out.skip(Check::Licence, "needs valid settings");
    }
    check_capabilities(&mut out);
    check_http(&mut out, inputs.port, settings.as_ref());
    Report { findings: out.0 }
}

fn check_settings(out: &mut Out, inputs: &Inputs) -> Option<Settings> {
    let c = Check::Settings;
    let Some(path) = settings_path(inputs.settings.clone()) else {
        out.ok(
            c,
            format!("no settings file ({DEFAULT_SETTINGS_PATH} absent, no --settings, no $PN_DEVICE_SETTINGS): embedded defaults"),
        );
        return Some(Settings::embedded());
    };
    match Settings::load(&path) {
        Ok(s) => {
            out.ok(c, format!("{}: valid", path.display()));
            for k in &s.unknown_keys {
                out.warn(
                    c,
                    format!("{}: unknown key '{k}' is ignored", path.display()),
                    "check its spelling against docs/decisions.md section 9 (Settings file)",
                );
            }
            Some(s)
        }
        Err(e) => {
            out.error(
                c,
                e,
                "fix the file (JSON object, keys and types as in docs/decisions.md section 9); the daemon refuses to start with it",
            );
            None
        }
    }
}

fn check_configuration(out: &mut Out, inputs: &Inputs, s: &Settings) -> Option<RuntimeConfig> {
    let c = Check::Configuration;
    let path = inputs.config.clone().or_else(|| s.runtime_config.clone());
    match RuntimeConfig::load(path.as_deref()) {
        Ok(cfg) => {
            out.ok(
                c,
                format!(
                    "{}: station '{}', VendorID {:#06x}, DeviceID {:#06x}, {} module(s), {} ms send clock, I {} / Q {} bytes",
                    cfg.source,
                    cfg.station_name,
                    cfg.vendor_id,
                    cfg.device_id,
                    cfg.modules.len(),
                    cfg.send_clock_ms,
                    cfg.input_len,
                    cfg.output_len
                ),
            );
            if cfg.vendor_id == PLACEHOLDER_VENDOR_ID {
                out.warn(
                    c,
                    format!("{}: VendorID 0xFFFF is the shipped placeholder", cfg.source),
                    "set the vendor ID PI assigned to you and regenerate the GSDML (pn-gsdml) before using the device in a plant",
                );
            }
            Some(cfg)
        }
        Err(e) => {
            out.error(
                c,
                e,
                "fix the XML (element names in docs/decisions.md section 10, examples in /usr/share/doc/pn-device/examples); the slave will not start with it",
            );
            None
        }
    }
}

fn check_nic(out: &mut Out, nic: &str, from_env: bool, cfg: &RuntimeConfig) {
    let c = Check::Nic;
    let origin = if from_env {
        "VENDOR_PNET_NIC"
    } else if !cfg.interface_name.is_empty() {
        "Network/InterfaceName of the configuration"
    } else {
        "Network:DefaultInterfaceName of the settings"
    };
    let hint_set = "name the PROFINET NIC in Network/InterfaceName of the configuration XML or Network:DefaultInterfaceName of the settings (`ip -br link` lists them)";
    if !crate::dataplane::valid_nic_name(nic) {
        out.error(
            c,
            format!("'{nic}' (from {origin}) is not a valid interface name"),
            hint_set,
        );
        return;
    }
    let link = crate::dataplane::read_link_state(nic);
    if !link.present {
        out.error(
            c,
            format!("'{nic}' (from {origin}) does not exist: the daemon would stay in ConfigError"),
            hint_set,
        );
        return;
    }
    let base = Path::new("/sys/class/net").join(nic);
    let read = |f: &str| {
        std::fs::read_to_string(base.join(f))
            .map(|s| s.trim().to_string())
            .unwrap_or_default()
    };
    // ARPHRD_ETHER: PROFINET frames are Ethernet frames (EtherType 0x8892).
    if read("type") != "1" {
        out.error(
            c,
            format!(
                "'{nic}' (from {origin}) is not an Ethernet interface (ARPHRD type {})",
                read("type")
            ),
            hint_set,
        );
        return;
    }
    let mac = read("address");
    let flags = u32::from_str_radix(read("flags").trim_start_matches("0x"), 16).unwrap_or(0);
    let admin_up = flags & libc::IFF_UP as u32 != 0;
    out.ok(
        c,
        format!(
            "'{nic}' (from {origin}) exists, MAC {mac}, operstate {}",
            link.operstate
        ),
    );
    if !admin_up {
        out.warn(
            c,
            format!("'{nic}' is administratively down: no controller can reach the device"),
            &format!(
                "ip link set {nic} up (and make it persistent in the host's network configuration)"
            ),
        );
    } else if !link.up {
        out.warn(
            c,
            format!("'{nic}' has no link (carrier off)"),
            "check the cable and the switch port; the device starts and waits for the link",
        );
    }
}

fn check_licence(out: &mut Out, s: &Settings, nic: &str) {
    let c = Check::Licence;
    let path = &s.licence_path;
    let dev_key = include_str!("../testdata/dev-licence-public-key.hex").trim();
    if s.trusted_keys
        .iter()
        .any(|k| k.trim().eq_ignore_ascii_case(dev_key))
    {
        out.warn(
            c,
            "Licence:TrustedPublicKeys trusts the project's public development key (its private half is published)".into(),
            "replace it with your vendor key in the settings (docs/licence.md, Trust anchor)",
        );
    }
    if let Err(e) = std::fs::metadata(path) {
        let (msg, hint) = if e.kind() == std::io::ErrorKind::NotFound {
            (
                format!(
                    "no certificate at {} (Licence:CertificatePath): the slave will not start",
                    path.display()
                ),
                format!(
                    "put the certificate from your supplier at {} (readable by the service user)",
                    path.display()
                ),
            )
        } else {
            (
                format!("certificate {}: {e}", path.display()),
                "the service user must be able to read it: chgrp pn-device FILE; chmod 0640 FILE"
                    .to_string(),
            )
        };
        out.error(c, msg, &hint);
        return;
    }
    let identity = crate::licence::Identity::current(Some(nic));
    match crate::licence::check_file(path, &s.trusted_keys, &identity) {
        Ok(p) => {
            let b = &p.binding;
            let bound = if let Some(m) = &b.mac {
                format!("bound to MAC {m} ({nic})")
            } else if b.machine_id.is_some() {
                "bound to this machine id".to_string()
            } else {
                "unbound".to_string()
            };
            let left = p.not_after - crate::util::unix_now();
            out.ok(
                c,
                format!(
                    "{}: licensee '{}', serial '{}', {bound}, valid for {} more day(s)",
                    path.display(),
                    p.licensee,
                    p.serial,
                    left / 86400
                ),
            );
            if left < 30 * 86400 {
                out.warn(
                    c,
                    format!("{}: expires in less than 30 days", path.display()),
                    "ask your supplier for a renewed certificate; the periodic recheck stops the slave when it expires",
                );
            }
        }
        Err(e) => {
            // The verifier's reasons (licence.rs) name what failed; map each to what to do.
            let hint = if e.contains("signature") || e.contains("trusted public key") {
                "the certificate is not signed by a key the settings trust: add the vendor's public key to Licence:TrustedPublicKeys, or get a certificate signed by a trusted key"
            } else if e.contains("expired") || e.contains("not valid before") {
                "get a certificate valid now (and check the system clock)"
            } else if e.contains("bound to") {
                "the certificate is for another machine or NIC: ask for one bound to this machine (`pn-licence machine-id`) or to this NIC's MAC"
            } else {
                "the file is not a pn-device certificate: replace it with the one from your supplier (docs/licence.md)"
            };
            out.error(c, e, hint);
        }
    }
}

fn check_capabilities(out: &mut Out) {
    let c = Check::Capabilities;
    // SAFETY: geteuid has no preconditions.
    let euid = unsafe { libc::geteuid() };
    let Some(eff) = effective_capabilities() else {
        out.error(
            c,
            "cannot read CapEff from /proc/self/status".into(),
            "mount /proc; the daemon needs it too",
        );
        return;
    };
    let mut missing = 0;
    for cap in CAPABILITIES {
        if eff & (1u64 << cap.bit) != 0 {
            continue;
        }
        missing += 1;
        let hint = "grant it to the service (AmbientCapabilities= of pn-device.service); run this check the way the service runs (see --help)";
        let msg = format!("uid {euid} lacks {}: {}", cap.name, cap.consequence);
        if cap.required {
            out.error(c, msg, hint);
        } else {
            out.warn(c, msg, hint);
        }
    }
    if missing == 0 {
        let names: Vec<&str> = CAPABILITIES.iter().map(|c| c.name).collect();
        let note = if euid == 0 {
            " (as root: the service's own user and capabilities are checked only when this runs as the service does, see --help)"
        } else {
            ""
        };
        out.ok(c, format!("uid {euid} has {}{note}", names.join(", ")));
    }
}

fn check_http(out: &mut Out, port: u16, s: Option<&Settings>) {
    let c = Check::Http;
    let addr = std::net::SocketAddr::from((std::net::Ipv4Addr::LOCALHOST, port));
    match std::net::TcpListener::bind(addr) {
        Ok(l) => {
            drop(l);
            let key = match s.map(|s| s.api_key.is_some()) {
                Some(true) => "; API key set (clients send X-Vendor-Pnet-Api-Key)",
                Some(false) => "; no Api:ApiKey: every local process may use the API",
                None => "",
            };
            out.ok(c, format!("{addr} is free{key}"));
        }
        Err(e) => {
            let hint = if e.kind() == std::io::ErrorKind::AddrInUse {
                "another process listens there (`ss -ltnp 'sport = :18840'`); if it is the running pn-device service, this is expected: stop it before starting another"
            } else {
                "the daemon cannot serve its API on this address"
            };
            out.error(c, format!("cannot listen on {addr}: {e}"), hint);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_smallest_error_code_wins_and_warnings_do_not_fail() {
        let f = |check, level| Finding {
            check,
            level,
            message: String::new(),
            hint: None,
        };
        let r = Report {
            findings: vec![
                f(Check::Settings, Level::Warn),
                f(Check::Capabilities, Level::Error),
                f(Check::Licence, Level::Error),
            ],
        };
        assert_eq!(r.exit_code(), 5);
        let r = Report {
            findings: vec![f(Check::Nic, Level::Warn), f(Check::Http, Level::Skip)],
        };
        assert_eq!(r.exit_code(), 0);
    }

    #[test]
    fn exit_codes_are_distinct_and_documented() {
        let all = [
            Check::Settings,
            Check::Configuration,
            Check::Nic,
            Check::Licence,
            Check::Capabilities,
            Check::Http,
        ];
        let mut codes: Vec<u8> = all.iter().map(|c| c.exit_code()).collect();
        codes.sort();
        codes.dedup();
        assert_eq!(codes.len(), all.len());
        for c in all {
            assert!(
                EXIT_CODES_HELP.contains(&format!("  {}  {}:", c.exit_code(), c.name())),
                "{} missing from the help",
                c.name()
            );
        }
    }
}

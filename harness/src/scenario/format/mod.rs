//! The scenario file format (TOML). See `scenarios/README.md` for the author's guide.
//!
//! A scenario is a title, the spec rows it covers, an optional `[device]` set-up, an optional
//! `[controller]` peer, and a list of `[[step]]` tables. Every step has exactly one *action* key
//! (`call`, `wait`, `controller`, `link`, `netem`, `restart`, `kill`, `write_config`, `pause`)
//! plus the options of that action. Parsing is strict: an unknown key, a missing value or a
//! wrong type is an error that names the file, the step and the key.
//!
//! serde reads the file into the structs of [`raw`], which mirror it table by table and deny
//! unknown keys; this module turns them into the public types below and checks what serde
//! cannot (one action per step, value ranges, options that exclude each other).

mod raw;
mod step;

use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::Value as Json;
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

type Table = toml::Table;

/// A parsed scenario.
#[derive(Debug, Clone)]
pub struct Scenario {
    pub path: PathBuf,
    /// File stem: the scenario's name in test output and golden file names.
    pub name: String,
    pub title: String,
    /// Spec row ids this scenario covers (see `coverage.rs`).
    pub covers: Vec<String>,
    pub device: DeviceSetup,
    pub controller: Option<ControllerSetup>,
    pub steps: Vec<Step>,
}

/// How the device is set up before the first step.
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceSetup {
    /// The NIC the daemon is told to use.
    pub nic: NicChoice,
    pub licence: LicenceChoice,
    /// `Api:ApiKey` in the settings file.
    pub api_key: Option<String>,
    /// Runtime configuration XML: a file under `scenarios/configs/` or the lab's default.
    pub config: Option<String>,
    /// POST /api/start before the first step (and wait until the state leaves Stopped).
    pub start: bool,
    /// Licence re-check period in seconds (short values make expiry scenarios fast).
    pub licence_recheck_s: Option<u64>,
    /// Extra settings merged into the settings JSON (object).
    pub settings: Option<Json>,
}

impl Default for DeviceSetup {
    fn default() -> Self {
        DeviceSetup {
            nic: NicChoice::Veth,
            licence: LicenceChoice::Valid,
            api_key: None,
            config: None,
            start: false,
            licence_recheck_s: None,
            settings: None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NicChoice {
    /// The device end of the lab's veth pair.
    Veth,
    /// A NIC name that does not exist (degraded start, ConfigError).
    Missing,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LicenceChoice {
    Valid,
    Missing,
    /// Signed with a key the device does not trust.
    Invalid,
    /// Valid now, expires after the given number of seconds.
    ExpiresIn(u64),
}

/// The controller simulator in the peer namespace.
#[derive(Debug, Clone, PartialEq)]
pub struct ControllerSetup {
    pub cycle_ms: f64,
    pub data_hold_factor: u16,
    /// Connect (to data exchange) before the first step.
    pub connect: bool,
}

/// One step of a scenario.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// 1-based index in the file.
    pub index: usize,
    pub action: Action,
    /// Optional free text shown in failures.
    pub note: Option<String>,
}

/// What a step does.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// An HTTP request to the device API, with checks on the response.
    Call(Call),
    /// Poll a GET endpoint until the assertions hold, or fail at the deadline.
    Wait {
        path: String,
        until: BTreeMap<String, Matcher>,
        within_ms: u64,
        every_ms: u64,
    },
    /// Tell the controller simulator to do something (see [`ControllerAction`]).
    Controller(ControllerAction),
    /// Take the device's link down or up.
    Link { up: bool },
    /// Impair the device's egress: random loss, delay, duplication (all zero = remove). Made
    /// by the userspace impairment bridge, as this kernel has no tc netem ([`crate::lab::Lab::netem`]).
    Netem {
        loss_pct: f64,
        delay_ms: u64,
        duplicate_pct: f64,
    },
    /// Stop the daemon (SIGTERM, or SIGKILL when `kill`) and start it again with the same
    /// persistence directory, optionally with changed settings.
    Restart {
        kill: bool,
        api_key: Option<Option<String>>,
        licence: Option<LicenceChoice>,
    },
    /// Replace the runtime configuration XML on disk (a file under `scenarios/configs/`, or
    /// inline text) without reloading.
    WriteConfig { source: ConfigSource },
    /// Let time pass when the passing of time is the subject (e.g. a licence expiry). Never
    /// used to wait for a condition: use `wait` for that.
    Pause { ms: u64 },
}

#[derive(Debug, Clone, PartialEq)]
pub enum ConfigSource {
    File(String),
    Inline(String),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    pub method: String,
    pub path: String,
    pub body: Option<Body>,
    /// Which API key header to send: the configured one (default), none, or a given value.
    pub key: KeyChoice,
    pub headers: Vec<(String, String)>,
    pub expect_status: Option<u16>,
    pub assert: BTreeMap<String, Matcher>,
    /// Snapshot the (redacted) response under this name.
    pub snapshot: Option<String>,
    /// Remember response fields under names for later steps: `{ alarm = "0.id" }`.
    pub save: BTreeMap<String, String>,
    /// Send the request this many times (`${i}` counts from 0); checks apply to each.
    pub repeat: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Body {
    Json(Json),
    Raw(String),
    /// `n` bytes of filler (for size limits).
    Size(usize),
}

#[derive(Debug, Clone, PartialEq)]
pub enum KeyChoice {
    Configured,
    None,
    Value(String),
}

/// Controller actions a scenario can ask for.
#[derive(Debug, Clone, PartialEq)]
pub enum ControllerAction {
    Connect,
    Release,
    Abort,
    StopOutputs,
    ResumeOutputs,
    ProviderStop,
    ProviderRun,
    /// Set the controller's output bytes (what the device sees in `inputHex`).
    SetOutputs {
        offset: usize,
        hex: String,
    },
    /// Wait until the controller has received these input bytes from the device.
    ExpectInputs {
        offset: usize,
        hex: String,
        within_ms: u64,
    },
    ReadIm0,
    AckAlarms,
}

/// A check on one JSON value.
#[derive(Debug, Clone, PartialEq)]
pub enum Matcher {
    Equals(Json),
    Contains(String),
    NotEquals(Json),
    Exists(bool),
    Gt(f64),
    Gte(f64),
    Lt(f64),
    Lte(f64),
    Len(usize),
    OneOf(Vec<Json>),
}

/// A scenario file that could not be read: names file, step and cause.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormatError {
    pub file: PathBuf,
    /// 1-based step index, when the error is inside a step.
    pub step: Option<usize>,
    pub cause: String,
}

impl fmt::Display for FormatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.step {
            Some(s) => write!(f, "{}: step {s}: {}", self.file.display(), self.cause),
            None => write!(f, "{}: {}", self.file.display(), self.cause),
        }
    }
}

impl std::error::Error for FormatError {}

/// Where an error is: the file and, inside a step, its 1-based index.
struct Ctx<'a> {
    file: &'a Path,
    step: Option<usize>,
}

impl Ctx<'_> {
    fn err(&self, cause: impl Into<String>) -> FormatError {
        FormatError {
            file: self.file.to_path_buf(),
            step: self.step,
            cause: cause.into(),
        }
    }

    /// A serde error from reading a raw struct out of a TOML value. `prefix` is the key path of
    /// that value, when the struct is not read from the document root or a step table;
    /// `inside` names the table for unknown keys ("a call step"), `noun` what its keys are.
    fn de_err(
        &self,
        e: &toml::de::Error,
        prefix: Option<&str>,
        inside: &str,
        noun: &str,
    ) -> FormatError {
        let at = key_path(e);
        let msg = plain_expectation(e.message());
        // serde words it "unknown field `k`, expected one of `a`, `b`" (or "there are no
        // fields"); the path is that of the table the key is in, not of the key.
        if let Some(rest) = msg.strip_prefix("unknown field ") {
            let (key, expected) = rest.split_once(", ").unwrap_or((rest, ""));
            let inside = match at {
                Some(p) => format!("[{p}]"),
                None => inside.to_string(),
            };
            return self.err(format!("unknown {noun} {key} in {inside}, {expected}"));
        }
        let path = match (prefix, at) {
            (Some(p), Some(a)) => Some(format!("{p}.{a}")),
            (Some(p), None) => Some(p.to_string()),
            (None, a) => a,
        };
        self.err(match path {
            Some(p) => format!("`{p}`: {msg}"),
            None => msg,
        })
    }
}

/// The key path of a deserialization error (`device.start`, `assert`).
///
/// toml keeps the path private and only prints it, as a last line "in `a.b`", when the error
/// has no source text to point into. Scenario structs are read from `toml::Value`s, never from
/// text, so that line is always there when the error is inside a key. The unit tests check
/// that errors name their key, so a toml release that words this differently fails them.
fn key_path(e: &toml::de::Error) -> Option<String> {
    let shown = e.to_string();
    let rest = shown.strip_prefix(e.message())?;
    let path = rest.trim().strip_prefix("in `")?.strip_suffix('`')?;
    Some(path.to_string())
}

/// serde names the Rust type it wanted; scenario authors think in TOML terms.
fn plain_expectation(msg: &str) -> String {
    // toml's words for a non-string where a name (`link = "up"`, `nic = "veth"`) belongs.
    if msg == "invalid type: unit variant, expected string only" {
        return "invalid type, expected a string".to_string();
    }
    const PLAIN: [(&str, &str); 4] = [
        ("expected u64", "expected a non-negative integer"),
        ("expected f64", "expected a number"),
        ("expected a map", "expected a table"),
        ("expected a sequence", "expected a list"),
    ];
    for (rust, toml) in PLAIN {
        if let Some(head) = msg.strip_suffix(rust) {
            return format!("{head}{toml}");
        }
    }
    msg.to_string()
}

/// Read a raw struct from a table; errors name the key inside it.
fn read<T: DeserializeOwned>(cx: &Ctx, t: Table, inside: &str) -> Result<T, FormatError> {
    T::deserialize(t).map_err(|e| cx.de_err(&e, None, inside, "key"))
}

/// Convert a TOML value to JSON (datetimes become strings).
pub fn toml_to_json(v: &toml::Value) -> Json {
    match v {
        toml::Value::String(s) => Json::String(s.clone()),
        toml::Value::Integer(i) => Json::from(*i),
        toml::Value::Float(f) => serde_json::Number::from_f64(*f)
            .map(Json::Number)
            .unwrap_or(Json::Null),
        toml::Value::Boolean(b) => Json::Bool(*b),
        toml::Value::Datetime(d) => Json::String(d.to_string()),
        toml::Value::Array(a) => Json::Array(a.iter().map(toml_to_json).collect()),
        toml::Value::Table(t) => Json::Object(
            t.iter()
                .map(|(k, v)| (k.clone(), toml_to_json(v)))
                .collect(),
        ),
    }
}

/// Largest `delay_ms` of a `netem` step.
pub const MAX_NETEM_DELAY_MS: u64 = 60_000;

impl Scenario {
    /// Read and validate a scenario file.
    pub fn load(path: &Path) -> Result<Scenario, FormatError> {
        let text = std::fs::read_to_string(path).map_err(|e| FormatError {
            file: path.to_path_buf(),
            step: None,
            cause: format!("cannot read: {e}"),
        })?;
        Scenario::parse(path, &text)
    }

    /// Parse scenario text; `path` names it in errors and gives the scenario its name.
    ///
    /// Two stages: serde reads the file into the structs of [`raw`] (shape, types, unknown
    /// keys), then this converts them to the public types and checks what the values mean.
    pub fn parse(path: &Path, text: &str) -> Result<Scenario, FormatError> {
        let mut cx = Ctx {
            file: path,
            step: None,
        };
        // Parsed to a table first, not straight into `raw::Scenario`: a syntax error then keeps
        // toml's message with the line and a caret, and every other error comes from a value
        // without source text, which is what makes toml report its key path (see `key_path`).
        let root: Table =
            toml::from_str(text).map_err(|e| cx.err(format!("not valid TOML: {e}")))?;
        let raw = raw::Scenario::deserialize(root)
            .map_err(|e| cx.de_err(&e, None, "the scenario", "key"))?;
        let title = raw.title.ok_or_else(|| cx.err("missing `title`"))?;
        let device = match raw.device {
            None => DeviceSetup::default(),
            Some(d) => device(&cx, d)?,
        };
        let controller = raw.controller.map(|c| controller(&cx, c)).transpose()?;
        let steps_raw = match raw.step {
            Some(toml::Value::Array(a)) => a,
            Some(_) => return Err(cx.err("steps are written as `[[step]]` tables")),
            None => return Err(cx.err("a scenario needs at least one `[[step]]`")),
        };
        let mut steps = Vec::with_capacity(steps_raw.len());
        let mut snapshot_names = std::collections::HashSet::new();
        for (i, raw) in steps_raw.into_iter().enumerate() {
            cx.step = Some(i + 1);
            let step = step::parse(&cx, i + 1, raw)?;
            if let Action::Call(Call {
                snapshot: Some(name),
                ..
            }) = &step.action
            {
                if !snapshot_names.insert(name.clone()) {
                    return Err(cx.err(format!("snapshot name `{name}` used twice")));
                }
            }
            if matches!(step.action, Action::Controller(_)) && controller.is_none() {
                return Err(cx.err("a `controller` step needs a `[controller]` table"));
            }
            steps.push(step);
        }
        let name = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "scenario".into());
        Ok(Scenario {
            path: path.to_path_buf(),
            name,
            title,
            covers: raw.covers,
            device,
            controller,
            steps,
        })
    }
}

fn parse_licence(cx: &Ctx, v: &str) -> Result<LicenceChoice, FormatError> {
    match v {
        "valid" => Ok(LicenceChoice::Valid),
        "missing" => Ok(LicenceChoice::Missing),
        "invalid" => Ok(LicenceChoice::Invalid),
        other => {
            if let Some(s) = other.strip_prefix("expires-in-") {
                let secs = s
                    .strip_suffix('s')
                    .and_then(|n| n.parse().ok())
                    .ok_or_else(|| {
                        cx.err(format!("licence `{other}`: write e.g. expires-in-3s"))
                    })?;
                Ok(LicenceChoice::ExpiresIn(secs))
            } else {
                Err(cx.err(format!(
                    "licence `{other}` unknown (valid, missing, invalid, expires-in-<N>s)"
                )))
            }
        }
    }
}

fn device(cx: &Ctx, d: raw::Device) -> Result<DeviceSetup, FormatError> {
    let default = DeviceSetup::default();
    Ok(DeviceSetup {
        nic: match d.nic {
            None => default.nic,
            Some(raw::Nic::Veth) => NicChoice::Veth,
            Some(raw::Nic::Missing) => NicChoice::Missing,
        },
        licence: match d.licence {
            None => default.licence,
            Some(l) => parse_licence(cx, &l)?,
        },
        api_key: d.api_key,
        config: d.config,
        start: d.start.unwrap_or(default.start),
        licence_recheck_s: d.licence_recheck_s,
        settings: d.settings.map(|s| toml_to_json(&toml::Value::Table(s))),
    })
}

fn controller(cx: &Ctx, c: raw::Controller) -> Result<ControllerSetup, FormatError> {
    let cycle_ms = c.cycle_ms.unwrap_or(4.0);
    if !(0.25..=512.0).contains(&cycle_ms) {
        return Err(cx.err("`cycle_ms` must be between 0.25 and 512"));
    }
    let dhf = c.data_hold_factor.unwrap_or(3);
    if !(1..=0x1E00).contains(&dhf) {
        return Err(cx.err("`data_hold_factor` must be between 1 and 7680"));
    }
    Ok(ControllerSetup {
        cycle_ms,
        data_hold_factor: dhf as u16,
        connect: c.connect.unwrap_or(false),
    })
}

#[cfg(test)]
mod tests;

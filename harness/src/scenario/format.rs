//! The scenario file format (TOML). See `scenarios/README.md` for the author's guide.
//!
//! A scenario is a title, the spec rows it covers, an optional `[device]` set-up, an optional
//! `[controller]` peer, and a list of `[[step]]` tables. Every step has exactly one *action* key
//! (`call`, `wait`, `controller`, `link`, `netem`, `restart`, `kill`, `reload_config`,
//! `write_config`, `pause`) plus the options of that action. Parsing is strict: an unknown key, a
//! missing value or a wrong type is an error that names the file, the step and the cause.

use serde_json::Value as Json;
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

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

type Table = toml::map::Map<String, toml::Value>;

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

    fn str(&self, t: &Table, key: &str) -> Result<Option<String>, FormatError> {
        match t.get(key) {
            None => Ok(None),
            Some(toml::Value::String(s)) => Ok(Some(s.clone())),
            Some(v) => Err(self.err(format!("`{key}` must be a string, found {}", v.type_str()))),
        }
    }

    fn uint(&self, t: &Table, key: &str) -> Result<Option<u64>, FormatError> {
        match t.get(key) {
            None => Ok(None),
            Some(toml::Value::Integer(i)) if *i >= 0 => Ok(Some(*i as u64)),
            Some(v) => Err(self.err(format!(
                "`{key}` must be a non-negative integer, found {}",
                v.type_str()
            ))),
        }
    }

    fn float(&self, t: &Table, key: &str) -> Result<Option<f64>, FormatError> {
        match t.get(key) {
            None => Ok(None),
            Some(toml::Value::Integer(i)) => Ok(Some(*i as f64)),
            Some(toml::Value::Float(f)) => Ok(Some(*f)),
            Some(v) => Err(self.err(format!("`{key}` must be a number, found {}", v.type_str()))),
        }
    }

    fn bool(&self, t: &Table, key: &str) -> Result<Option<bool>, FormatError> {
        match t.get(key) {
            None => Ok(None),
            Some(toml::Value::Boolean(b)) => Ok(Some(*b)),
            Some(v) => Err(self.err(format!(
                "`{key}` must be true or false, found {}",
                v.type_str()
            ))),
        }
    }

    fn only(&self, t: &Table, allowed: &[&str], what: &str) -> Result<(), FormatError> {
        for k in t.keys() {
            if !allowed.contains(&k.as_str()) {
                return Err(self.err(format!(
                    "unknown key `{k}` in {what} (allowed: {})",
                    allowed.join(", ")
                )));
            }
        }
        Ok(())
    }
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

const ACTIONS: &[&str] = &[
    "call",
    "wait",
    "controller",
    "link",
    "netem",
    "restart",
    "kill",
    "write_config",
    "pause",
];

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
    pub fn parse(path: &Path, text: &str) -> Result<Scenario, FormatError> {
        let mut cx = Ctx {
            file: path,
            step: None,
        };
        let root: Table =
            toml::from_str(text).map_err(|e| cx.err(format!("not valid TOML: {e}")))?;
        cx.only(
            &root,
            &["title", "covers", "device", "controller", "step"],
            "the scenario",
        )?;
        let title = cx
            .str(&root, "title")?
            .ok_or_else(|| cx.err("missing `title`"))?;
        let covers = match root.get("covers") {
            None => Vec::new(),
            Some(toml::Value::Array(a)) => a
                .iter()
                .map(|v| {
                    v.as_str()
                        .map(str::to_string)
                        .ok_or_else(|| cx.err("`covers` must be a list of strings"))
                })
                .collect::<Result<_, _>>()?,
            Some(_) => return Err(cx.err("`covers` must be a list of strings")),
        };
        let device = match root.get("device") {
            None => DeviceSetup::default(),
            Some(toml::Value::Table(t)) => parse_device(&cx, t)?,
            Some(_) => return Err(cx.err("`[device]` must be a table")),
        };
        let controller = match root.get("controller") {
            None => None,
            Some(toml::Value::Table(t)) => Some(parse_controller(&cx, t)?),
            Some(_) => return Err(cx.err("`[controller]` must be a table")),
        };
        let steps_raw = match root.get("step") {
            Some(toml::Value::Array(a)) => a.clone(),
            Some(_) => return Err(cx.err("steps are written as `[[step]]` tables")),
            None => return Err(cx.err("a scenario needs at least one `[[step]]`")),
        };
        let mut steps = Vec::with_capacity(steps_raw.len());
        let mut snapshot_names = std::collections::HashSet::new();
        for (i, raw) in steps_raw.iter().enumerate() {
            cx.step = Some(i + 1);
            let t = raw
                .as_table()
                .ok_or_else(|| cx.err("a `[[step]]` must be a table"))?;
            let step = parse_step(&cx, i + 1, t)?;
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
            covers,
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

fn parse_device(cx: &Ctx, t: &Table) -> Result<DeviceSetup, FormatError> {
    cx.only(
        t,
        &[
            "nic",
            "licence",
            "api_key",
            "config",
            "start",
            "licence_recheck_s",
            "settings",
        ],
        "[device]",
    )?;
    let mut d = DeviceSetup::default();
    if let Some(nic) = cx.str(t, "nic")? {
        d.nic = match nic.as_str() {
            "veth" => NicChoice::Veth,
            "missing" => NicChoice::Missing,
            o => return Err(cx.err(format!("nic `{o}` unknown (veth, missing)"))),
        };
    }
    if let Some(l) = cx.str(t, "licence")? {
        d.licence = parse_licence(cx, &l)?;
    }
    d.api_key = cx.str(t, "api_key")?;
    d.config = cx.str(t, "config")?;
    d.start = cx.bool(t, "start")?.unwrap_or(false);
    d.licence_recheck_s = cx.uint(t, "licence_recheck_s")?;
    d.settings = match t.get("settings") {
        None => None,
        Some(v @ toml::Value::Table(_)) => Some(toml_to_json(v)),
        Some(_) => return Err(cx.err("`settings` must be a table")),
    };
    Ok(d)
}

fn parse_controller(cx: &Ctx, t: &Table) -> Result<ControllerSetup, FormatError> {
    cx.only(
        t,
        &["cycle_ms", "data_hold_factor", "connect"],
        "[controller]",
    )?;
    let cycle_ms = cx.float(t, "cycle_ms")?.unwrap_or(4.0);
    if !(0.25..=512.0).contains(&cycle_ms) {
        return Err(cx.err("`cycle_ms` must be between 0.25 and 512"));
    }
    let dhf = cx.uint(t, "data_hold_factor")?.unwrap_or(3);
    if !(1..=0x1E00).contains(&dhf) {
        return Err(cx.err("`data_hold_factor` must be between 1 and 7680"));
    }
    Ok(ControllerSetup {
        cycle_ms,
        data_hold_factor: dhf as u16,
        connect: cx.bool(t, "connect")?.unwrap_or(false),
    })
}

fn parse_matchers(
    cx: &Ctx,
    v: &toml::Value,
    what: &str,
) -> Result<BTreeMap<String, Matcher>, FormatError> {
    let t = v.as_table().ok_or_else(|| {
        cx.err(format!(
            "`{what}` must be a table of field = expected value"
        ))
    })?;
    t.iter()
        .map(|(k, v)| Ok((k.clone(), parse_matcher(cx, k, v)?)))
        .collect()
}

/// `field = value` is equality; `field = { contains = "x" }` and the other operators of
/// [`Matcher`] are written as one-key tables.
fn parse_matcher(cx: &Ctx, field: &str, v: &toml::Value) -> Result<Matcher, FormatError> {
    let Some(t) = v.as_table() else {
        return Ok(Matcher::Equals(toml_to_json(v)));
    };
    if t.len() != 1 {
        return Err(cx.err(format!(
            "matcher for `{field}` must have exactly one operator (eq, ne, contains, exists, gt, gte, lt, lte, len, one_of)"
        )));
    }
    let (op, arg) = t.iter().next().expect("one entry");
    let num = |a: &toml::Value| -> Result<f64, FormatError> {
        match a {
            toml::Value::Integer(i) => Ok(*i as f64),
            toml::Value::Float(f) => Ok(*f),
            _ => Err(cx.err(format!("`{field}.{op}` needs a number"))),
        }
    };
    Ok(match op.as_str() {
        "eq" => Matcher::Equals(toml_to_json(arg)),
        "ne" => Matcher::NotEquals(toml_to_json(arg)),
        "contains" => Matcher::Contains(
            arg.as_str()
                .ok_or_else(|| cx.err(format!("`{field}.contains` needs a string")))?
                .to_string(),
        ),
        "exists" => Matcher::Exists(
            arg.as_bool()
                .ok_or_else(|| cx.err(format!("`{field}.exists` needs true or false")))?,
        ),
        "gt" => Matcher::Gt(num(arg)?),
        "gte" => Matcher::Gte(num(arg)?),
        "lt" => Matcher::Lt(num(arg)?),
        "lte" => Matcher::Lte(num(arg)?),
        "len" => Matcher::Len(
            arg.as_integer()
                .filter(|i| *i >= 0)
                .ok_or_else(|| cx.err(format!("`{field}.len` needs a non-negative integer")))?
                as usize,
        ),
        "one_of" => Matcher::OneOf(
            arg.as_array()
                .ok_or_else(|| cx.err(format!("`{field}.one_of` needs a list")))?
                .iter()
                .map(toml_to_json)
                .collect(),
        ),
        other => {
            return Err(cx.err(format!(
                "unknown operator `{other}` for `{field}` (eq, ne, contains, exists, gt, gte, lt, lte, len, one_of)"
            )))
        }
    })
}

fn split_request(cx: &Ctx, s: &str) -> Result<(String, String), FormatError> {
    let mut it = s.split_whitespace();
    let (Some(m), Some(p), None) = (it.next(), it.next(), it.next()) else {
        return Err(cx.err(format!(
            "`{s}`: write METHOD /path, e.g. \"GET /api/status\""
        )));
    };
    if !p.starts_with('/') {
        return Err(cx.err(format!("`{s}`: the path must start with /")));
    }
    Ok((m.to_string(), p.to_string()))
}

fn parse_step(cx: &Ctx, index: usize, t: &Table) -> Result<Step, FormatError> {
    let present: Vec<&str> = ACTIONS
        .iter()
        .copied()
        .filter(|a| t.contains_key(*a))
        .collect();
    let action_key = match present.as_slice() {
        [one] => *one,
        [] => {
            return Err(cx.err(format!(
                "no action: a step needs one of {}",
                ACTIONS.join(", ")
            )))
        }
        many => {
            return Err(cx.err(format!(
                "more than one action in one step: {}",
                many.join(", ")
            )))
        }
    };
    let note = cx.str(t, "note")?;
    let action = match action_key {
        "call" => {
            cx.only(
                t,
                &[
                    "call",
                    "body",
                    "raw_body",
                    "body_size",
                    "key",
                    "headers",
                    "expect",
                    "assert",
                    "snapshot",
                    "save",
                    "repeat",
                    "note",
                ],
                "a call step",
            )?;
            let (method, path) = split_request(cx, &cx.str(t, "call")?.unwrap_or_default())?;
            let bodies = ["body", "raw_body", "body_size"]
                .iter()
                .filter(|k| t.contains_key(**k))
                .count();
            if bodies > 1 {
                return Err(cx.err("use only one of body, raw_body, body_size"));
            }
            let body = if let Some(b) = t.get("body") {
                Some(Body::Json(toml_to_json(b)))
            } else if let Some(r) = cx.str(t, "raw_body")? {
                Some(Body::Raw(r))
            } else {
                cx.uint(t, "body_size")?.map(|n| Body::Size(n as usize))
            };
            let key = match t.get("key") {
                None => KeyChoice::Configured,
                Some(toml::Value::Boolean(false)) => KeyChoice::None,
                Some(toml::Value::String(s)) => KeyChoice::Value(s.clone()),
                Some(_) => return Err(cx.err("`key` must be false (send no key) or a string")),
            };
            let headers = match t.get("headers") {
                None => Vec::new(),
                Some(toml::Value::Table(h)) => h
                    .iter()
                    .map(|(k, v)| {
                        v.as_str()
                            .map(|s| (k.clone(), s.to_string()))
                            .ok_or_else(|| cx.err(format!("header `{k}` must be a string")))
                    })
                    .collect::<Result<_, _>>()?,
                Some(_) => return Err(cx.err("`headers` must be a table")),
            };
            let expect_status = match cx.uint(t, "expect")? {
                None => None,
                Some(s) if (100..=599).contains(&s) => Some(s as u16),
                Some(s) => return Err(cx.err(format!("`expect = {s}` is not an HTTP status"))),
            };
            let assert = match t.get("assert") {
                None => BTreeMap::new(),
                Some(v) => parse_matchers(cx, v, "assert")?,
            };
            let save = match t.get("save") {
                None => BTreeMap::new(),
                Some(toml::Value::Table(s)) => s
                    .iter()
                    .map(|(k, v)| {
                        v.as_str()
                            .map(|p| (k.clone(), p.to_string()))
                            .ok_or_else(|| cx.err(format!("save `{k}` must name a field path")))
                    })
                    .collect::<Result<_, _>>()?,
                Some(_) => return Err(cx.err("`save` must be a table of name = \"field.path\"")),
            };
            let repeat = match cx.uint(t, "repeat")? {
                None => 1,
                Some(n @ 1..=2000) => n as usize,
                Some(_) => return Err(cx.err("`repeat` must be 1..2000")),
            };
            let snapshot = cx.str(t, "snapshot")?;
            if repeat > 1 && snapshot.is_some() {
                return Err(cx.err("a repeated call cannot take a snapshot"));
            }
            Action::Call(Call {
                method,
                path,
                body,
                key,
                headers,
                expect_status,
                assert,
                snapshot,
                save,
                repeat,
            })
        }
        "wait" => {
            cx.only(
                t,
                &["wait", "until", "within_ms", "every_ms", "note"],
                "a wait step",
            )?;
            let (method, path) = split_request(cx, &cx.str(t, "wait")?.unwrap_or_default())?;
            if method != "GET" {
                return Err(cx.err("`wait` polls a GET endpoint"));
            }
            let until = parse_matchers(
                cx,
                t.get("until")
                    .ok_or_else(|| cx.err("a wait step needs `until = { field = value }`"))?,
                "until",
            )?;
            let within_ms = cx
                .uint(t, "within_ms")?
                .ok_or_else(|| cx.err("a wait step needs a deadline `within_ms`"))?;
            Action::Wait {
                path,
                until,
                within_ms,
                every_ms: cx.uint(t, "every_ms")?.unwrap_or(50).max(1),
            }
        }
        "controller" => {
            cx.only(
                t,
                &["controller", "offset", "hex", "within_ms", "note"],
                "a controller step",
            )?;
            let what = cx.str(t, "controller")?.unwrap_or_default();
            let offset = cx.uint(t, "offset")?.unwrap_or(0) as usize;
            let hex = cx.str(t, "hex")?;
            let need_hex = || {
                hex.clone()
                    .ok_or_else(|| cx.err(format!("controller `{what}` needs `hex`")))
            };
            Action::Controller(match what.as_str() {
                "connect" => ControllerAction::Connect,
                "release" => ControllerAction::Release,
                "abort" => ControllerAction::Abort,
                "stop-outputs" => ControllerAction::StopOutputs,
                "resume-outputs" => ControllerAction::ResumeOutputs,
                "provider-stop" => ControllerAction::ProviderStop,
                "provider-run" => ControllerAction::ProviderRun,
                "set-outputs" => ControllerAction::SetOutputs {
                    offset,
                    hex: need_hex()?,
                },
                "expect-inputs" => ControllerAction::ExpectInputs {
                    offset,
                    hex: need_hex()?,
                    within_ms: cx.uint(t, "within_ms")?.unwrap_or(2000),
                },
                "read-im0" => ControllerAction::ReadIm0,
                "ack-alarms" => ControllerAction::AckAlarms,
                o => {
                    return Err(cx.err(format!(
                        "controller action `{o}` unknown (connect, release, abort, stop-outputs, resume-outputs, provider-stop, provider-run, set-outputs, expect-inputs, read-im0, ack-alarms)"
                    )))
                }
            })
        }
        "link" => {
            cx.only(t, &["link", "note"], "a link step")?;
            match cx.str(t, "link")?.as_deref() {
                Some("down") => Action::Link { up: false },
                Some("up") => Action::Link { up: true },
                _ => return Err(cx.err("`link` must be \"down\" or \"up\"")),
            }
        }
        "netem" => {
            cx.only(
                t,
                &["netem", "loss_pct", "delay_ms", "duplicate_pct", "note"],
                "a netem step",
            )?;
            if cx.bool(t, "netem")? != Some(true) && cx.bool(t, "netem")? != Some(false) {
                return Err(cx.err("write `netem = true` with loss_pct/delay_ms/duplicate_pct, or `netem = false` to clear"));
            }
            let on = cx.bool(t, "netem")? == Some(true);
            let pct = |k: &str| -> Result<f64, FormatError> {
                let v = cx.float(t, k)?.unwrap_or(0.0);
                if !(0.0..=100.0).contains(&v) {
                    return Err(cx.err(format!("`{k}` must be 0..100")));
                }
                Ok(if on { v } else { 0.0 })
            };
            Action::Netem {
                loss_pct: pct("loss_pct")?,
                delay_ms: match cx.uint(t, "delay_ms")?.unwrap_or(0) {
                    // The bridge holds every frame for this long: beyond 60 s the link is
                    // simply dead, which `link = "down"` says better.
                    d if d > MAX_NETEM_DELAY_MS => {
                        return Err(cx.err(format!("`delay_ms` must be 0..{MAX_NETEM_DELAY_MS}")))
                    }
                    d if on => d,
                    _ => 0,
                },
                duplicate_pct: match pct("duplicate_pct")? {
                    d if d == 0.0 || d == 100.0 => d,
                    _ => {
                        return Err(cx.err(
                            "`duplicate_pct` must be 0 or 100 (the impairment bridge \
                             duplicates every frame or none)",
                        ))
                    }
                },
            }
        }
        "restart" | "kill" => {
            cx.only(
                t,
                &["restart", "kill", "api_key", "licence", "note"],
                "a restart step",
            )?;
            let kill = action_key == "kill";
            if cx.bool(t, action_key)? != Some(true) {
                return Err(cx.err(format!("write `{action_key} = true`")));
            }
            let api_key = match t.get("api_key") {
                None => None,
                Some(toml::Value::Boolean(false)) => Some(None),
                Some(toml::Value::String(s)) => Some(Some(s.clone())),
                Some(_) => return Err(cx.err("`api_key` must be a string, or false to remove it")),
            };
            let licence = match cx.str(t, "licence")? {
                None => None,
                Some(l) => Some(parse_licence(cx, &l)?),
            };
            Action::Restart {
                kill,
                api_key,
                licence,
            }
        }
        "write_config" => {
            cx.only(t, &["write_config", "note"], "a write_config step")?;
            let v = cx.str(t, "write_config")?.unwrap_or_default();
            let source = if v.trim_start().starts_with('<') {
                ConfigSource::Inline(v)
            } else {
                ConfigSource::File(v)
            };
            Action::WriteConfig { source }
        }
        "pause" => {
            cx.only(t, &["pause", "note"], "a pause step")?;
            let ms = cx
                .uint(t, "pause")?
                .ok_or_else(|| cx.err("`pause` takes milliseconds"))?;
            if ms > 60_000 {
                return Err(cx.err("`pause` longer than 60 s"));
            }
            Action::Pause { ms }
        }
        _ => unreachable!("action keys are listed in ACTIONS"),
    };
    Ok(Step {
        index,
        action,
        note,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Scenario, FormatError> {
        Scenario::parse(Path::new("scenarios/x.toml"), text)
    }

    #[test]
    fn a_full_scenario_parses() {
        let s = parse(
            r#"
title = "t"
covers = ["T1"]
[device]
nic = "missing"
licence = "expires-in-3s"
api_key = "k"
[controller]
cycle_ms = 4
data_hold_factor = 3
[[step]]
call = "POST /api/io"
body = { offset = 0, data = "01" }
expect = 200
assert = { ok = false, reasonCode = { contains = "LinkDown" } }
snapshot = "write"
[[step]]
wait = "GET /api/status"
until = { state = "DataExchange" }
within_ms = 5000
[[step]]
controller = "set-outputs"
hex = "0102"
[[step]]
link = "down"
"#,
        )
        .unwrap();
        assert_eq!(s.name, "x");
        assert_eq!(s.device.nic, NicChoice::Missing);
        assert_eq!(s.device.licence, LicenceChoice::ExpiresIn(3));
        assert_eq!(s.steps.len(), 4);
        let Action::Call(c) = &s.steps[0].action else {
            panic!()
        };
        assert_eq!(c.method, "POST");
        assert_eq!(c.assert["reasonCode"], Matcher::Contains("LinkDown".into()));
        assert_eq!(s.steps[3].action, Action::Link { up: false });
    }

    #[test]
    fn errors_name_file_step_and_cause() {
        let e = parse("title = \"t\"\n[[step]]\ncall = \"GET /api/status\"\n[[step]]\ncall = \"GET /x\"\nexpct = 200\n")
            .unwrap_err();
        assert_eq!(e.step, Some(2));
        assert!(
            e.to_string()
                .starts_with("scenarios/x.toml: step 2: unknown key `expct`"),
            "{e}"
        );

        let e = parse(
            "title = \"t\"\n[[step]]\nwait = \"GET /api/status\"\nuntil = { state = \"X\" }\n",
        )
        .unwrap_err();
        assert!(e.cause.contains("within_ms"), "{e}");

        let e = parse("title = \"t\"\n[[step]]\nlink = \"sideways\"\n").unwrap_err();
        assert_eq!(e.step, Some(1));

        let e = parse("[[step]]\nlink = \"up\"\n").unwrap_err();
        assert_eq!((e.step, e.cause.as_str()), (None, "missing `title`"));

        let e = parse("title = \"t\"\n[[step]]\ncontroller = \"connect\"\n").unwrap_err();
        assert!(e.cause.contains("[controller]"), "{e}");

        let e = parse("title = \"t\"\n[[step]]\ncall = \"GET /a\"\nlink = \"up\"\n").unwrap_err();
        assert!(e.cause.contains("more than one action"), "{e}");

        let e =
            parse("title = \"t\"\n[[step]]\ncall = \"GET /a\"\nassert = { x = { near = 1 } }\n")
                .unwrap_err();
        assert!(e.cause.contains("unknown operator `near`"), "{e}");

        let e = parse("title = = 1").unwrap_err();
        assert!(e.cause.starts_with("not valid TOML"), "{e}");

        let e = parse("title = \"t\"\n[[step]]\nnetem = true\nduplicate_pct = 50\n").unwrap_err();
        assert!(e.cause.contains("0 or 100"), "{e}");
        let e = parse("title = \"t\"\n[[step]]\nnetem = true\ndelay_ms = 60001\n").unwrap_err();
        assert!(e.to_string().contains("`delay_ms` must be 0..60000"), "{e}");
        let ok = parse("title = \"t\"\n[[step]]\nnetem = true\nduplicate_pct = 100\n").unwrap();
        assert!(matches!(
            ok.steps[0].action,
            Action::Netem { duplicate_pct, .. } if duplicate_pct == 100.0
        ));
    }
}

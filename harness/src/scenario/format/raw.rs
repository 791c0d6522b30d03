//! The scenario file as written: serde structs that mirror the TOML one table at a time.
//!
//! Every struct denies unknown keys, so a misspelt option is an error instead of being ignored.
//! These structs check only shape and types; what the values mean (ranges, which options go
//! together, METHOD /path, licence names) is checked when `super` converts them to the public
//! types. Values that are free-form in the file (a JSON body, an expected value in a check,
//! extra settings) stay `toml::Value` here.

use serde::Deserialize;
use std::collections::BTreeMap;

/// The whole file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a scenario table")]
pub struct Scenario {
    /// Optional here so that a missing title gets its own message rather than serde's.
    pub title: Option<String>,
    #[serde(default)]
    pub covers: Vec<String>,
    pub device: Option<Device>,
    pub controller: Option<Controller>,
    /// Left as raw values: each step is deserialized on its own (see [`StepKind`]), which is
    /// what lets an error name the step it is in.
    pub step: Option<toml::Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a [device] table")]
pub struct Device {
    pub nic: Option<Nic>,
    pub licence: Option<String>,
    pub api_key: Option<String>,
    pub config: Option<String>,
    pub start: Option<bool>,
    pub licence_recheck_s: Option<u64>,
    pub settings: Option<toml::Table>,
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Nic {
    Veth,
    Missing,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a [controller] table")]
pub struct Controller {
    pub cycle_ms: Option<f64>,
    pub data_hold_factor: Option<u64>,
    pub connect: Option<bool>,
}

/// The action keys: a step has exactly one of them, and it decides which struct below the
/// step's table is read as. One struct per action (rather than one struct with every option)
/// makes an option of another action, e.g. `hex` in a call step, an unknown key like any typo.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepKind {
    Call,
    Wait,
    Controller,
    Link,
    Netem,
    Restart,
    Kill,
    WriteConfig,
    Pause,
}

impl StepKind {
    pub const ALL: [StepKind; 9] = [
        StepKind::Call,
        StepKind::Wait,
        StepKind::Controller,
        StepKind::Link,
        StepKind::Netem,
        StepKind::Restart,
        StepKind::Kill,
        StepKind::WriteConfig,
        StepKind::Pause,
    ];

    /// The key that names this action in a step.
    pub fn key(self) -> &'static str {
        match self {
            StepKind::Call => "call",
            StepKind::Wait => "wait",
            StepKind::Controller => "controller",
            StepKind::Link => "link",
            StepKind::Netem => "netem",
            StepKind::Restart => "restart",
            StepKind::Kill => "kill",
            StepKind::WriteConfig => "write_config",
            StepKind::Pause => "pause",
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CallStep {
    /// "METHOD /path".
    pub call: String,
    /// Any TOML value, sent as JSON.
    pub body: Option<toml::Value>,
    pub raw_body: Option<String>,
    pub body_size: Option<u64>,
    /// `false` or a string: the two meanings differ, so the conversion tells them apart.
    pub key: Option<toml::Value>,
    pub headers: Option<BTreeMap<String, String>>,
    pub expect: Option<u64>,
    pub assert: Option<BTreeMap<String, toml::Value>>,
    pub snapshot: Option<String>,
    pub save: Option<BTreeMap<String, String>>,
    pub repeat: Option<u64>,
    pub note: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WaitStep {
    /// "GET /path".
    pub wait: String,
    /// Required, but optional here so that its absence gets a message that shows the syntax.
    pub until: Option<BTreeMap<String, toml::Value>>,
    /// Required, as `until`.
    pub within_ms: Option<u64>,
    pub every_ms: Option<u64>,
    pub note: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ControllerStep {
    pub controller: ControllerVerb,
    pub offset: Option<u64>,
    pub hex: Option<String>,
    pub within_ms: Option<u64>,
    pub note: Option<String>,
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ControllerVerb {
    Connect,
    Release,
    Abort,
    StopOutputs,
    ResumeOutputs,
    ProviderStop,
    ProviderRun,
    SetOutputs,
    ExpectInputs,
    ReadIm0,
    AckAlarms,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkStep {
    pub link: LinkState,
    pub note: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LinkState {
    Down,
    Up,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetemStep {
    /// `true` applies the options, `false` clears every impairment.
    pub netem: bool,
    pub loss_pct: Option<f64>,
    pub delay_ms: Option<u64>,
    pub duplicate_pct: Option<f64>,
    pub note: Option<String>,
}

/// `restart = true` or `kill = true`: the same options, a different signal. Only one of the
/// two keys is ever present (both are action keys).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RestartStep {
    pub restart: Option<bool>,
    pub kill: Option<bool>,
    /// A string, or `false` to remove the key: told apart in the conversion.
    pub api_key: Option<toml::Value>,
    pub licence: Option<String>,
    pub note: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WriteConfigStep {
    /// A file under `scenarios/configs/`, or inline XML.
    pub write_config: String,
    pub note: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PauseStep {
    /// Milliseconds.
    pub pause: u64,
    pub note: Option<String>,
}

/// The operator table of a check: `{ contains = "x" }`, `{ gt = 0 }`, ... Exactly one key is
/// allowed; the conversion checks that.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MatcherOps {
    pub eq: Option<toml::Value>,
    pub ne: Option<toml::Value>,
    pub contains: Option<String>,
    pub exists: Option<bool>,
    pub gt: Option<f64>,
    pub gte: Option<f64>,
    pub lt: Option<f64>,
    pub lte: Option<f64>,
    pub len: Option<u64>,
    pub one_of: Option<Vec<toml::Value>>,
}

/// The operators' names, for messages.
pub const MATCHER_OPS: &str = "eq, ne, contains, exists, gt, gte, lt, lte, len, one_of";

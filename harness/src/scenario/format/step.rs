//! One `[[step]]`: which action it is, its raw struct, and the conversion to an [`Action`]
//! with the checks serde cannot make (ranges, options that exclude each other).

use super::raw::{self, StepKind};
use super::*;

/// One `[[step]]` table: find its action key, read the table as that action's raw struct,
/// convert it.
pub(super) fn parse(cx: &Ctx, index: usize, raw: toml::Value) -> Result<Step, FormatError> {
    let toml::Value::Table(t) = raw else {
        return Err(cx.err("a `[[step]]` must be a table"));
    };
    let present: Vec<StepKind> = StepKind::ALL
        .into_iter()
        .filter(|k| t.contains_key(k.key()))
        .collect();
    let keys = |kinds: &[StepKind]| kinds.iter().map(|k| k.key()).collect::<Vec<_>>();
    let kind = match present.as_slice() {
        [one] => *one,
        [] => {
            return Err(cx.err(format!(
                "no action: a step needs one of {}",
                keys(&StepKind::ALL).join(", ")
            )))
        }
        many => {
            return Err(cx.err(format!(
                "more than one action in one step: {}",
                keys(many).join(", ")
            )))
        }
    };
    // A kill step is read as a restart step: same options.
    let inside = match kind {
        StepKind::Kill => "a restart step".to_string(),
        k => format!("a {} step", k.key()),
    };
    let (action, note) = match kind {
        StepKind::Call => convert::<raw::CallStep>(cx, t, &inside)?,
        StepKind::Wait => convert::<raw::WaitStep>(cx, t, &inside)?,
        StepKind::Controller => convert::<raw::ControllerStep>(cx, t, &inside)?,
        StepKind::Link => convert::<raw::LinkStep>(cx, t, &inside)?,
        StepKind::Netem => convert::<raw::NetemStep>(cx, t, &inside)?,
        StepKind::Restart | StepKind::Kill => convert::<raw::RestartStep>(cx, t, &inside)?,
        StepKind::WriteConfig => convert::<raw::WriteConfigStep>(cx, t, &inside)?,
        StepKind::Pause => convert::<raw::PauseStep>(cx, t, &inside)?,
    };
    Ok(Step {
        index,
        action,
        note,
    })
}

/// A raw step struct that becomes an [`Action`].
trait RawStep: DeserializeOwned {
    /// Take the step's `note` (every step may have one).
    fn take_note(&mut self) -> Option<String>;
    fn into_action(self, cx: &Ctx) -> Result<Action, FormatError>;
}

fn convert<T: RawStep>(
    cx: &Ctx,
    t: Table,
    inside: &str,
) -> Result<(Action, Option<String>), FormatError> {
    let mut s: T = read(cx, t, inside)?;
    let note = s.take_note();
    Ok((s.into_action(cx)?, note))
}

/// Every raw step struct has a `note: Option<String>`.
macro_rules! take_note {
    () => {
        fn take_note(&mut self) -> Option<String> {
            self.note.take()
        }
    };
}

impl RawStep for raw::CallStep {
    take_note!();

    fn into_action(self, cx: &Ctx) -> Result<Action, FormatError> {
        let (method, path) = split_request(cx, &self.call)?;
        let bodies = [
            self.body.is_some(),
            self.raw_body.is_some(),
            self.body_size.is_some(),
        ];
        if bodies.iter().filter(|b| **b).count() > 1 {
            return Err(cx.err("use only one of body, raw_body, body_size"));
        }
        let body = if let Some(b) = &self.body {
            Some(Body::Json(toml_to_json(b)))
        } else if let Some(r) = self.raw_body {
            Some(Body::Raw(r))
        } else {
            self.body_size.map(|n| Body::Size(n as usize))
        };
        let key = match self.key {
            None => KeyChoice::Configured,
            Some(toml::Value::Boolean(false)) => KeyChoice::None,
            Some(toml::Value::String(s)) => KeyChoice::Value(s),
            Some(_) => return Err(cx.err("`key` must be false (send no key) or a string")),
        };
        let expect_status = match self.expect {
            None => None,
            Some(s) if (100..=599).contains(&s) => Some(s as u16),
            Some(s) => return Err(cx.err(format!("`expect = {s}` is not an HTTP status"))),
        };
        let repeat = match self.repeat {
            None => 1,
            Some(n @ 1..=2000) => n as usize,
            Some(_) => return Err(cx.err("`repeat` must be 1..2000")),
        };
        if repeat > 1 && self.snapshot.is_some() {
            return Err(cx.err("a repeated call cannot take a snapshot"));
        }
        Ok(Action::Call(Call {
            method,
            path,
            body,
            key,
            headers: self.headers.unwrap_or_default().into_iter().collect(),
            expect_status,
            assert: matchers(cx, "assert", self.assert.unwrap_or_default())?,
            snapshot: self.snapshot,
            save: self.save.unwrap_or_default(),
            repeat,
        }))
    }
}

impl RawStep for raw::WaitStep {
    take_note!();

    fn into_action(self, cx: &Ctx) -> Result<Action, FormatError> {
        let (method, path) = split_request(cx, &self.wait)?;
        if method != "GET" {
            return Err(cx.err("`wait` polls a GET endpoint"));
        }
        let until = self
            .until
            .ok_or_else(|| cx.err("a wait step needs `until = { field = value }`"))?;
        let within_ms = self
            .within_ms
            .ok_or_else(|| cx.err("a wait step needs a deadline `within_ms`"))?;
        Ok(Action::Wait {
            path,
            until: matchers(cx, "until", until)?,
            within_ms,
            every_ms: self.every_ms.unwrap_or(50).max(1),
        })
    }
}

impl RawStep for raw::ControllerStep {
    take_note!();

    fn into_action(self, cx: &Ctx) -> Result<Action, FormatError> {
        use raw::ControllerVerb as V;
        let offset = self.offset.unwrap_or(0) as usize;
        let hex = |verb: &str| {
            self.hex
                .clone()
                .ok_or_else(|| cx.err(format!("controller `{verb}` needs `hex`")))
        };
        Ok(Action::Controller(match self.controller {
            V::Connect => ControllerAction::Connect,
            V::Release => ControllerAction::Release,
            V::Abort => ControllerAction::Abort,
            V::StopOutputs => ControllerAction::StopOutputs,
            V::ResumeOutputs => ControllerAction::ResumeOutputs,
            V::ProviderStop => ControllerAction::ProviderStop,
            V::ProviderRun => ControllerAction::ProviderRun,
            V::SetOutputs => ControllerAction::SetOutputs {
                offset,
                hex: hex("set-outputs")?,
            },
            V::ExpectInputs => ControllerAction::ExpectInputs {
                offset,
                hex: hex("expect-inputs")?,
                within_ms: self.within_ms.unwrap_or(2000),
            },
            V::ReadIm0 => ControllerAction::ReadIm0,
            V::AckAlarms => ControllerAction::AckAlarms,
        }))
    }
}

impl RawStep for raw::LinkStep {
    take_note!();

    fn into_action(self, _cx: &Ctx) -> Result<Action, FormatError> {
        Ok(Action::Link {
            up: self.link == raw::LinkState::Up,
        })
    }
}

impl RawStep for raw::NetemStep {
    take_note!();

    fn into_action(self, cx: &Ctx) -> Result<Action, FormatError> {
        let on = self.netem;
        // Out-of-range values are errors even in `netem = false`, which then clears them all.
        let pct = |k: &str, v: Option<f64>| -> Result<f64, FormatError> {
            let v = v.unwrap_or(0.0);
            if !(0.0..=100.0).contains(&v) {
                return Err(cx.err(format!("`{k}` must be 0..100")));
            }
            Ok(if on { v } else { 0.0 })
        };
        let loss_pct = pct("loss_pct", self.loss_pct)?;
        let delay_ms = match self.delay_ms.unwrap_or(0) {
            // The bridge holds every frame for this long: beyond 60 s the link is simply
            // dead, which `link = "down"` says better.
            d if d > MAX_NETEM_DELAY_MS => {
                return Err(cx.err(format!("`delay_ms` must be 0..{MAX_NETEM_DELAY_MS}")))
            }
            d if on => d,
            _ => 0,
        };
        let duplicate_pct = match pct("duplicate_pct", self.duplicate_pct)? {
            d if d == 0.0 || d == 100.0 => d,
            _ => {
                return Err(cx.err(
                    "`duplicate_pct` must be 0 or 100 (the impairment bridge \
                     duplicates every frame or none)",
                ))
            }
        };
        Ok(Action::Netem {
            loss_pct,
            delay_ms,
            duplicate_pct,
        })
    }
}

impl RawStep for raw::RestartStep {
    take_note!();

    fn into_action(self, cx: &Ctx) -> Result<Action, FormatError> {
        let kill = self.kill.is_some();
        let (key, value) = if kill {
            ("kill", self.kill)
        } else {
            ("restart", self.restart)
        };
        if value != Some(true) {
            return Err(cx.err(format!("write `{key} = true`")));
        }
        let api_key = match self.api_key {
            None => None,
            Some(toml::Value::Boolean(false)) => Some(None),
            Some(toml::Value::String(s)) => Some(Some(s)),
            Some(_) => return Err(cx.err("`api_key` must be a string, or false to remove it")),
        };
        let licence = match self.licence {
            None => None,
            Some(l) => Some(parse_licence(cx, &l)?),
        };
        Ok(Action::Restart {
            kill,
            api_key,
            licence,
        })
    }
}

impl RawStep for raw::WriteConfigStep {
    take_note!();

    fn into_action(self, _cx: &Ctx) -> Result<Action, FormatError> {
        let v = self.write_config;
        let source = if v.trim_start().starts_with('<') {
            ConfigSource::Inline(v)
        } else {
            ConfigSource::File(v)
        };
        Ok(Action::WriteConfig { source })
    }
}

impl RawStep for raw::PauseStep {
    take_note!();

    fn into_action(self, cx: &Ctx) -> Result<Action, FormatError> {
        if self.pause > 60_000 {
            return Err(cx.err("`pause` longer than 60 s"));
        }
        Ok(Action::Pause { ms: self.pause })
    }
}

/// `what` (`assert`, `until`): field = expected value, or field = { operator = argument }.
fn matchers(
    cx: &Ctx,
    what: &str,
    m: BTreeMap<String, toml::Value>,
) -> Result<BTreeMap<String, Matcher>, FormatError> {
    m.into_iter()
        .map(|(field, v)| {
            let check = matcher(cx, &format!("{what}.{field}"), v)?;
            Ok((field, check))
        })
        .collect()
}

/// `field = value` is equality; `field = { contains = "x" }` and the other operators of
/// [`Matcher`] are written as one-key tables. `at` is the check's key path, for errors.
fn matcher(cx: &Ctx, at: &str, v: toml::Value) -> Result<Matcher, FormatError> {
    let toml::Value::Table(t) = v else {
        return Ok(Matcher::Equals(toml_to_json(&v)));
    };
    let ops: raw::MatcherOps = raw::MatcherOps::deserialize(t)
        .map_err(|e| cx.de_err(&e, Some(at), &format!("`{at}`"), "operator"))?;
    let raw::MatcherOps {
        eq,
        ne,
        contains,
        exists,
        gt,
        gte,
        lt,
        lte,
        len,
        one_of,
    } = ops;
    let mut given: Vec<Matcher> = [
        eq.map(|v| Matcher::Equals(toml_to_json(&v))),
        ne.map(|v| Matcher::NotEquals(toml_to_json(&v))),
        contains.map(Matcher::Contains),
        exists.map(Matcher::Exists),
        gt.map(Matcher::Gt),
        gte.map(Matcher::Gte),
        lt.map(Matcher::Lt),
        lte.map(Matcher::Lte),
        len.map(|n| Matcher::Len(n as usize)),
        one_of.map(|a| Matcher::OneOf(a.iter().map(toml_to_json).collect())),
    ]
    .into_iter()
    .flatten()
    .collect();
    match (given.pop(), given.is_empty()) {
        (Some(m), true) => Ok(m),
        _ => Err(cx.err(format!(
            "the check on `{at}` must have exactly one operator ({})",
            raw::MATCHER_OPS
        ))),
    }
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

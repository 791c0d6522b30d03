//! Request body parsers of the API's POST endpoints (spec 2.3, 4, 7.2): pure functions from the
//! body bytes to a typed request, no hyper and no runtime state.
//!
//! These are the fuzz entry points of the HTTP body parsers (`device/fuzz`, targets
//! `api_body_*`): each must return `Ok` or a [`Rejection`] for ANY bytes, never panic, and
//! never allocate more than a small multiple of the body length (the body itself is capped at
//! [`super::MAX_BODY`] before it reaches them). The handler turns a rejection into a 400 whose
//! message echoes the body (spec 7.2), see `bad` in `api.rs`.
//!
//! Bodies without a parser: `POST /api/alarms/ack-all`, `/api/start`, `/api/stop` read and
//! ignore their body.

use std::path::PathBuf;

use serde_json::{Map, Value};

use super::code;
use crate::dataplane::{DiagnosisEntry, ResetMode};
use crate::runtime::DiagAction;
use crate::util::parse_hex;

/// Longest diagnosis text accepted by `POST /api/diag` (bytes of UTF-8).
pub const MAX_DIAG_TEXT: usize = 256;

/// Why a body was refused: the Track 1 `code` and a reason (without the echoed body).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    pub code: &'static str,
    pub reason: String,
}

fn reject(code: &'static str, reason: impl Into<String>) -> Rejection {
    Rejection {
        code,
        reason: reason.into(),
    }
}

/// `POST /api/io` (spec 2.3): `{"offset": n, "data": "hex"}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IoWrite {
    pub offset: usize,
    /// At least one byte.
    pub data: Vec<u8>,
}

/// `POST /api/diag`: an action and the entry it applies to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiagWrite {
    pub action: DiagAction,
    pub entry: DiagnosisEntry,
}

/// Parse a JSON object body. An empty (all white space) body is `None` when `allow_empty`.
pub fn parse_object(
    body: &[u8],
    allow_empty: bool,
) -> Result<Option<Map<String, Value>>, Rejection> {
    if body.iter().all(|b| b.is_ascii_whitespace()) {
        return if allow_empty {
            Ok(None)
        } else {
            Err(reject(code::INVALID_BODY, "a JSON object body is required"))
        };
    }
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(m)) => Ok(Some(m)),
        Ok(_) => Err(reject(code::INVALID_BODY, "the body must be a JSON object")),
        Err(e) => Err(reject(
            code::INVALID_BODY,
            format!("the body is not valid JSON ({e})"),
        )),
    }
}

/// A required JSON object body (`{}` when the body is empty is NOT accepted).
fn object(body: &[u8]) -> Result<Map<String, Value>, Rejection> {
    Ok(parse_object(body, false)?.unwrap_or_default())
}

/// An integer field in `lo..=hi`. `Ok(None)` when absent (or null).
pub fn int_field(
    m: &Map<String, Value>,
    name: &str,
    lo: i64,
    hi: i64,
) -> Result<Option<i64>, Rejection> {
    match m.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => match n.as_i64() {
            Some(v) if (lo..=hi).contains(&v) => Ok(Some(v)),
            Some(v) => Err(reject(
                code::OUT_OF_RANGE,
                format!("'{name}' is {v}, allowed {lo}..{hi}"),
            )),
            None if n.as_u64().is_some() => Err(reject(
                code::OUT_OF_RANGE,
                format!("'{name}' is out of range"),
            )),
            None => Err(reject(
                code::INVALID_BODY,
                format!("'{name}' must be an integer"),
            )),
        },
        Some(_) => Err(reject(
            code::INVALID_BODY,
            format!("'{name}' must be an integer"),
        )),
    }
}

/// A string field. `Ok(None)` when absent (or null).
pub fn str_field<'a>(m: &'a Map<String, Value>, name: &str) -> Result<Option<&'a str>, Rejection> {
    match m.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(reject(
            code::INVALID_BODY,
            format!("'{name}' must be a string"),
        )),
    }
}

fn required<T>(v: Option<T>, name: &str) -> Result<T, Rejection> {
    v.ok_or_else(|| reject(code::INVALID_BODY, format!("'{name}' is required")))
}

/// `POST /api/io`.
pub fn parse_io(body: &[u8]) -> Result<IoWrite, Rejection> {
    let m = object(body)?;
    let offset = required(int_field(&m, "offset", 0, i64::MAX)?, "offset")?;
    let data = required(str_field(&m, "data")?, "data")?;
    let Some(data) = parse_hex(data) else {
        return Err(reject(
            code::INVALID_BODY,
            "'data' must be an even number of hexadecimal digits (no prefix, no separators)",
        ));
    };
    if data.is_empty() {
        return Err(reject(
            code::INVALID_BODY,
            "'data' must contain at least one byte",
        ));
    }
    let Ok(offset) = usize::try_from(offset) else {
        return Err(reject(code::OUT_OF_RANGE, "'offset' out of range"));
    };
    Ok(IoWrite { offset, data })
}

/// `POST /api/alarms/ack`: `{"id": "..."}`, the alarm id.
pub fn parse_alarm_ack(body: &[u8]) -> Result<String, Rejection> {
    let m = object(body)?;
    Ok(required(str_field(&m, "id")?, "id")?.to_string())
}

/// `POST /api/reset`: `{"mode": "communication" | "factory"}`.
pub fn parse_reset(body: &[u8]) -> Result<ResetMode, Rejection> {
    let m = object(body)?;
    match required(str_field(&m, "mode")?, "mode")? {
        "communication" => Ok(ResetMode::Communication),
        "factory" => Ok(ResetMode::Factory),
        _ => Err(reject(
            code::OUT_OF_RANGE,
            "'mode' must be \"communication\" or \"factory\"",
        )),
    }
}

/// `POST /api/high-resolution-timer`: `{"enable": bool}`.
pub fn parse_high_resolution_timer(body: &[u8]) -> Result<bool, Rejection> {
    let m = object(body)?;
    match m.get("enable") {
        Some(Value::Bool(b)) => Ok(*b),
        None | Some(Value::Null) => Err(reject(code::INVALID_BODY, "'enable' is required")),
        Some(_) => Err(reject(code::INVALID_BODY, "'enable' must be a boolean")),
    }
}

/// `POST /api/config/reload`: empty body, `{}` or `{"path": "..."}` (an empty path means the
/// configured one: `None`).
pub fn parse_config_reload(body: &[u8]) -> Result<Option<PathBuf>, Rejection> {
    let m = parse_object(body, true)?.unwrap_or_default();
    Ok(str_field(&m, "path")?
        .filter(|p| !p.is_empty())
        .map(PathBuf::from))
}

/// `POST /api/diag`: `{"action"?, "slot", "subslot", "channel"?, "errorType", "severity"
/// (not for remove), "text"?}`.
pub fn parse_diag(body: &[u8]) -> Result<DiagWrite, Rejection> {
    let m = object(body)?;
    let action = match str_field(&m, "action")? {
        None | Some("add") => DiagAction::Add,
        Some("update") => DiagAction::Update,
        Some("remove") => DiagAction::Remove,
        Some(_) => {
            return Err(reject(
                code::OUT_OF_RANGE,
                "'action' must be \"add\", \"update\" or \"remove\"",
            ))
        }
    };
    let u16_field = |name: &str, hi: i64| -> Result<Option<u16>, Rejection> {
        Ok(int_field(&m, name, 0, hi)?.and_then(|v| u16::try_from(v).ok()))
    };
    let slot = required(u16_field("slot", 0x7FFF)?, "slot")?;
    let subslot = required(u16_field("subslot", 0xFFFF)?, "subslot")?;
    let channel = u16_field("channel", 0xFFFF)?.unwrap_or(0);
    let error_type = required(u16_field("errorType", 0xFFFF)?, "errorType")?;
    let severity = u16_field("severity", 3)?.and_then(|v| u8::try_from(v).ok());
    let severity = match action {
        DiagAction::Remove => severity.unwrap_or(0),
        _ => required(severity, "severity")?,
    };
    let text = str_field(&m, "text")?.unwrap_or("");
    if text.len() > MAX_DIAG_TEXT {
        return Err(reject(
            code::OUT_OF_RANGE,
            format!("'text' longer than {MAX_DIAG_TEXT} bytes"),
        ));
    }
    Ok(DiagWrite {
        action,
        entry: DiagnosisEntry {
            slot,
            subslot,
            channel,
            error_type,
            severity,
            text: text.to_string(),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_body() {
        assert_eq!(
            parse_io(br#"{"offset": 2, "data": "0aFF"}"#),
            Ok(IoWrite {
                offset: 2,
                data: vec![0x0a, 0xff]
            })
        );
        for (b, c) in [
            (&br#"{"offset": 0, "data": ""}"#[..], code::INVALID_BODY),
            (br#"{"offset": 0, "data": "abc"}"#, code::INVALID_BODY),
            (br#"{"offset": -1, "data": "00"}"#, code::OUT_OF_RANGE),
            (
                br#"{"offset": 18446744073709551615, "data": "00"}"#,
                code::OUT_OF_RANGE,
            ),
            (br#"{"offset": 1.5, "data": "00"}"#, code::INVALID_BODY),
            (br#"{"data": "00"}"#, code::INVALID_BODY),
            (b"[]", code::INVALID_BODY),
            (b"  ", code::INVALID_BODY),
            (b"{", code::INVALID_BODY),
        ] {
            assert_eq!(
                parse_io(b).unwrap_err().code,
                c,
                "{}",
                String::from_utf8_lossy(b)
            );
        }
    }

    #[test]
    fn small_bodies() {
        assert_eq!(parse_alarm_ack(br#"{"id":"a-1"}"#), Ok("a-1".to_string()));
        assert!(parse_alarm_ack(br#"{"id":1}"#).is_err());
        assert_eq!(
            parse_reset(br#"{"mode":"factory"}"#),
            Ok(ResetMode::Factory)
        );
        assert_eq!(
            parse_reset(br#"{"mode":"x"}"#).unwrap_err().code,
            code::OUT_OF_RANGE
        );
        assert_eq!(parse_high_resolution_timer(br#"{"enable":true}"#), Ok(true));
        assert!(parse_high_resolution_timer(br#"{"enable":1}"#).is_err());
        assert_eq!(parse_config_reload(b""), Ok(None));
        assert_eq!(parse_config_reload(br#"{"path":""}"#), Ok(None));
        assert_eq!(
            parse_config_reload(br#"{"path":"/a.xml"}"#),
            Ok(Some(PathBuf::from("/a.xml")))
        );
        assert!(parse_config_reload(b"[]").is_err());
    }

    #[test]
    fn diag_body() {
        let d = parse_diag(
            br#"{"slot":1,"subslot":32769,"channel":3,"errorType":256,"severity":1,"text":"t"}"#,
        )
        .unwrap();
        assert_eq!(d.action, DiagAction::Add);
        assert_eq!(
            (
                d.entry.slot,
                d.entry.subslot,
                d.entry.channel,
                d.entry.error_type,
                d.entry.severity
            ),
            (1, 0x8001, 3, 0x100, 1)
        );
        let r = parse_diag(br#"{"action":"remove","slot":1,"subslot":1,"errorType":1}"#).unwrap();
        assert_eq!((r.action, r.entry.severity), (DiagAction::Remove, 0));
        assert_eq!(
            parse_diag(br#"{"slot":32768,"subslot":1,"errorType":1,"severity":0}"#)
                .unwrap_err()
                .code,
            code::OUT_OF_RANGE
        );
        assert_eq!(
            parse_diag(br#"{"slot":1,"subslot":1,"errorType":1,"severity":4}"#)
                .unwrap_err()
                .code,
            code::OUT_OF_RANGE
        );
        assert!(parse_diag(br#"{"slot":1,"subslot":1,"errorType":1}"#).is_err());
        let long = format!(
            r#"{{"slot":1,"subslot":1,"errorType":1,"severity":0,"text":"{}"}}"#,
            "x".repeat(257)
        );
        assert_eq!(
            parse_diag(long.as_bytes()).unwrap_err().code,
            code::OUT_OF_RANGE
        );
    }
}

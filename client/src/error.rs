//! The call result enumeration of spec section 7.5, and the error type of every client call.
//!
//! # Mapping (spec 7.2 / 7.5, decided here where the spec is open)
//!
//! | Condition | [`CallResult`] |
//! |---|---|
//! | connection refused, connect/read timeout, connection reset | [`CallResult::ServiceUnreachable`] |
//! | HTTP 401 (API key missing or wrong) | [`CallResult::ServiceUnreachable`] (`http_status = Some(401)`) |
//! | HTTP 400 | [`CallResult::InvalidArgument`] |
//! | HTTP 404 | [`CallResult::NotFound`] |
//! | HTTP 413 | [`CallResult::LengthMismatch`] |
//! | HTTP 429 / 503 | [`CallResult::Busy`] |
//! | HTTP 500, 408 and any other unexpected status | [`CallResult::NativeError`] |
//! | 200 with a body that is not the expected JSON | [`CallResult::NativeError`] |
//! | bad address text, bad value, bit > 7 | [`CallResult::InvalidArgument`] |
//! | write to a `Q` address, native in-process mode | [`CallResult::NotSupported`] |
//! | `DB` number above 1 | [`CallResult::NotFound`] |
//! | access past the end of the area | [`CallResult::InvalidArgument`] (offset outside) / [`CallResult::LengthMismatch`] (value runs past the end) |
//! | a process-data handle used after `close()` | [`CallResult::InvalidHandle`] |
//! | a Track 2 result with `ok=false` turned into an error by `check()` | [`CallResult::NativeError`] with `error_code` |
//!
//! `ServiceUnreachable` is an addition to the 7.5 list: the spec says an unreachable service and
//! a 401 are "reported as a service-unreachable error", and none of the listed values says that.
//! [`CallResult::NotConnected`], [`CallResult::NativeDllNotFound`] and
//! [`CallResult::PlatformNotSupported`] exist for completeness of the 7.5 list; the service-mode
//! client never produces them.

use std::fmt;

/// Call result enumeration (spec 7.5, plus [`CallResult::ServiceUnreachable`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum CallResult {
    Success,
    InvalidArgument,
    InvalidHandle,
    NotConnected,
    NativeError,
    LengthMismatch,
    NotFound,
    Busy,
    NotSupported,
    NativeDllNotFound,
    PlatformNotSupported,
    /// The service could not be reached (refused, timeout, reset) or answered 401.
    ServiceUnreachable,
}

impl CallResult {
    /// Name as written in the spec (`"NotSupported"` etc.).
    pub fn as_str(self) -> &'static str {
        match self {
            CallResult::Success => "Success",
            CallResult::InvalidArgument => "InvalidArgument",
            CallResult::InvalidHandle => "InvalidHandle",
            CallResult::NotConnected => "NotConnected",
            CallResult::NativeError => "NativeError",
            CallResult::LengthMismatch => "LengthMismatch",
            CallResult::NotFound => "NotFound",
            CallResult::Busy => "Busy",
            CallResult::NotSupported => "NotSupported",
            CallResult::NativeDllNotFound => "NativeDllNotFound",
            CallResult::PlatformNotSupported => "PlatformNotSupported",
            CallResult::ServiceUnreachable => "ServiceUnreachable",
        }
    }

    /// The call result of any client call outcome.
    pub fn of<T>(r: &std::result::Result<T, Error>) -> CallResult {
        match r {
            Ok(_) => CallResult::Success,
            Err(e) => e.kind,
        }
    }
}

impl fmt::Display for CallResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Error of a client call: the 7.5 kind plus whatever the service said.
#[derive(Debug, Clone, PartialEq)]
pub struct Error {
    /// Call result (never [`CallResult::Success`]).
    pub kind: CallResult,
    /// Human-readable text (the service's `message` when it sent one).
    pub message: String,
    /// HTTP status when the service answered.
    pub http_status: Option<u16>,
    /// `errorCode` of a Track 1 / Track 2 body (spec 7.1), raw value.
    pub error_code: Option<i64>,
    /// `code` of a Track 1 body.
    pub code: Option<String>,
}

impl Error {
    pub fn new(kind: CallResult, message: impl Into<String>) -> Self {
        Error {
            kind,
            message: message.into(),
            http_status: None,
            error_code: None,
            code: None,
        }
    }

    pub fn invalid(message: impl Into<String>) -> Self {
        Error::new(CallResult::InvalidArgument, message)
    }

    pub fn not_supported(message: impl Into<String>) -> Self {
        Error::new(CallResult::NotSupported, message)
    }

    pub fn unreachable(message: impl Into<String>) -> Self {
        Error::new(CallResult::ServiceUnreachable, message)
    }

    /// Map an HTTP error status (anything but 2xx) to a call result (table in the module docs).
    pub fn kind_for_status(status: u16) -> CallResult {
        match status {
            400 => CallResult::InvalidArgument,
            401 => CallResult::ServiceUnreachable,
            404 => CallResult::NotFound,
            413 => CallResult::LengthMismatch,
            429 | 503 => CallResult::Busy,
            _ => CallResult::NativeError,
        }
    }

    /// Build the error for a non-2xx response; `body` is parsed as a Track 1 body when it is one.
    pub fn from_http(status: u16, body: &[u8]) -> Self {
        let kind = Error::kind_for_status(status);
        let mut e = Error::new(kind, format!("HTTP {status}"));
        e.http_status = Some(status);
        if let Ok(serde_json::Value::Object(m)) = serde_json::from_slice::<serde_json::Value>(body)
        {
            if let Some(msg) = m.get("message").and_then(|v| v.as_str()) {
                e.message = format!("HTTP {status}: {msg}");
            }
            e.error_code = m.get("errorCode").and_then(|v| v.as_i64());
            e.code = m.get("code").and_then(|v| match v {
                serde_json::Value::String(s) => Some(s.clone()),
                serde_json::Value::Null => None,
                other => Some(other.to_string()),
            });
        } else if !body.is_empty() {
            let text = String::from_utf8_lossy(body);
            let text: String = text.chars().take(200).collect();
            e.message = format!("HTTP {status}: {}", text.trim());
        }
        if status == 401 {
            e.message = format!("{} (API key missing or wrong)", e.message);
        }
        e
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind, self.message)?;
        if let Some(c) = self.error_code {
            if c != 0 {
                write!(f, " (errorCode {c})")?;
            }
        }
        if let Some(c) = &self.code {
            write!(f, " [code {c}]")?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {}

/// Result of a client call.
pub type Result<T> = std::result::Result<T, Error>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_mapping_table() {
        assert_eq!(Error::kind_for_status(400), CallResult::InvalidArgument);
        assert_eq!(Error::kind_for_status(401), CallResult::ServiceUnreachable);
        assert_eq!(Error::kind_for_status(404), CallResult::NotFound);
        assert_eq!(Error::kind_for_status(413), CallResult::LengthMismatch);
        assert_eq!(Error::kind_for_status(429), CallResult::Busy);
        assert_eq!(Error::kind_for_status(503), CallResult::Busy);
        assert_eq!(Error::kind_for_status(500), CallResult::NativeError);
        assert_eq!(Error::kind_for_status(418), CallResult::NativeError);
        assert_eq!(Error::kind_for_status(408), CallResult::NativeError);
        assert_eq!(Error::kind_for_status(502), CallResult::NativeError);
    }

    #[test]
    fn track1_body_is_surfaced() {
        let body = br#"{"success":false,"message":"offset out of range","code":"PnS.Io.Range","errorCode":0,"timestamp":"t"}"#;
        let e = Error::from_http(400, body);
        assert_eq!(e.kind, CallResult::InvalidArgument);
        assert_eq!(e.http_status, Some(400));
        assert_eq!(e.error_code, Some(0));
        assert_eq!(e.code.as_deref(), Some("PnS.Io.Range"));
        assert!(e.message.contains("offset out of range"), "{}", e.message);
    }

    #[test]
    fn garbage_error_body_is_kept_as_text() {
        let e = Error::from_http(500, b"<html>boom</html>");
        assert_eq!(e.kind, CallResult::NativeError);
        assert!(e.message.contains("boom"));
        assert_eq!(e.error_code, None);
    }

    #[test]
    fn call_result_of() {
        let ok: Result<u8> = Ok(1);
        assert_eq!(CallResult::of(&ok), CallResult::Success);
        let err: Result<u8> = Err(Error::not_supported("x"));
        assert_eq!(CallResult::of(&err), CallResult::NotSupported);
        assert_eq!(CallResult::NotSupported.to_string(), "NotSupported");
    }
}

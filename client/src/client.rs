//! The async typed client: one method per endpoint of spec section 4.

use std::sync::Arc;
use std::time::Duration;

use hyper::Method;
use serde::de::DeserializeOwned;
use serde_json::{json, Value};

use crate::error::{CallResult, Error, Result};
use crate::http::{self, Endpoint};
use crate::model::*;

/// Default base URL (spec: fixed port 18840 on loopback).
pub const DEFAULT_BASE_URL: &str = "http://127.0.0.1:18840";

/// Per-call timeouts (spec section 8).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// `POST /api/start`, `POST /api/stop`: 15 s.
    pub start_stop: Duration,
    /// `GET /api/status`, `GET /api/io` (status and IO polling): 2 s.
    pub poll: Duration,
    /// Every other call, including a direct `POST /api/io`: 5 s.
    pub other: Duration,
    /// The cached process-data path ([`crate::ProcessData`]: its `GET /api/io` refreshes and
    /// its flushes): 500 ms.
    pub io_path: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            start_stop: Duration::from_secs(15),
            poll: Duration::from_secs(2),
            other: Duration::from_secs(5),
            io_path: Duration::from_millis(500),
        }
    }
}

/// Construction options.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// `http://127.0.0.1:18840` unless changed.
    pub base_url: String,
    /// Sent as `X-Vendor-Pnet-Api-Key` when set (spec 5).
    pub api_key: Option<String>,
    pub timeouts: Timeouts,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            base_url: DEFAULT_BASE_URL.to_string(),
            api_key: None,
            timeouts: Timeouts::default(),
        }
    }
}

#[derive(Debug)]
struct Inner {
    ep: Endpoint,
    api_key: Option<String>,
    timeouts: Timeouts,
}

/// Async client of the service's HTTP API. Cheap to clone (shared inner state). Needs a tokio
/// runtime with the IO and time drivers enabled.
#[derive(Debug, Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

/// Request body of `POST /api/alarms/ack`.
#[derive(serde::Serialize)]
struct AckBody<'a> {
    id: &'a str,
}

impl Client {
    /// Client for the default base URL with an optional API key.
    pub fn new(api_key: Option<String>) -> Self {
        Client::with_options(ClientOptions {
            api_key,
            ..ClientOptions::default()
        })
        .expect("default base URL parses")
    }

    /// Client for `base_url` with an optional API key.
    pub fn connect(base_url: &str, api_key: Option<String>) -> Result<Self> {
        Client::with_options(ClientOptions {
            base_url: base_url.to_string(),
            api_key,
            ..ClientOptions::default()
        })
    }

    pub fn with_options(o: ClientOptions) -> Result<Self> {
        let ep = Endpoint::parse(&o.base_url)?;
        Ok(Client {
            inner: Arc::new(Inner {
                ep,
                api_key: o.api_key.filter(|k| !k.is_empty()),
                timeouts: o.timeouts,
            }),
        })
    }

    pub fn timeouts(&self) -> Timeouts {
        self.inner.timeouts
    }

    /// Send a request and return the JSON body (non-2xx mapped to an [`Error`]). The escape hatch
    /// for shapes the typed methods do not cover.
    pub async fn request_json(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
        timeout: Duration,
    ) -> Result<Value> {
        self.request(method, path, body, timeout).await
    }

    async fn request<T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
        timeout: Duration,
    ) -> Result<T> {
        let what = format!("{method} {path}");
        let body = body.map(|b| serde_json::to_vec(b).unwrap_or_default());
        let r = http::send(
            &self.inner.ep,
            self.inner.api_key.as_deref(),
            method,
            path,
            body,
            timeout,
        )
        .await?;
        if !(200..300).contains(&r.status) {
            let mut e = Error::from_http(r.status, &r.body);
            e.message = format!("{what}: {}", e.message);
            return Err(e);
        }
        serde_json::from_slice::<T>(&r.body).map_err(|e| {
            let text: String = String::from_utf8_lossy(&r.body).chars().take(120).collect();
            let mut err = Error::new(
                CallResult::NativeError,
                format!("{what}: invalid response body ({e}): {text:?}"),
            );
            err.http_status = Some(r.status);
            err
        })
    }

    fn t(&self) -> Timeouts {
        self.inner.timeouts
    }

    /// `GET /api/status` (2 s).
    pub async fn status(&self) -> Result<Status> {
        self.request(Method::GET, "/api/status", None, self.t().poll)
            .await
    }

    /// `GET /api/io` (2 s).
    pub async fn io(&self) -> Result<IoSnapshot> {
        self.request(Method::GET, "/api/io", None, self.t().poll)
            .await
    }

    /// `GET /api/io` with an explicit timeout (the cached path uses 500 ms).
    pub async fn io_with_timeout(&self, timeout: Duration) -> Result<IoSnapshot> {
        self.request(Method::GET, "/api/io", None, timeout).await
    }

    /// `POST /api/io`: write `data` at byte `offset` of `outputHex` (the client's
    /// `I`/`M`/`DB1` addresses). An undelivered write is not an error: check `ok`/`reason()`.
    pub async fn write_io(&self, offset: u64, data: &[u8]) -> Result<IoWriteResponse> {
        self.write_io_with_timeout(offset, data, self.t().other)
            .await
    }

    /// `POST /api/io` with an explicit timeout.
    pub async fn write_io_with_timeout(
        &self,
        offset: u64,
        data: &[u8],
        timeout: Duration,
    ) -> Result<IoWriteResponse> {
        let body = json!({ "offset": offset, "data": encode_hex(data) });
        self.request(Method::POST, "/api/io", Some(&body), timeout)
            .await
    }

    /// `GET /api/diag`.
    pub async fn diag(&self) -> Result<Diag> {
        self.request(Method::GET, "/api/diag", None, self.t().other)
            .await
    }

    /// `POST /api/diag` with a request body as the service defines it (docs/decisions.md); the
    /// typed helpers [`Client::diag_add`] and [`Client::diag_remove`] build it.
    pub async fn diag_write(&self, body: &Value) -> Result<Value> {
        self.request(Method::POST, "/api/diag", Some(body), self.t().other)
            .await
    }

    /// Add a device diagnosis entry (`POST /api/diag` with `action: "add"`; severity 0..=3,
    /// spec 4 rule 5).
    pub async fn diag_add(&self, entry: &DiagEntry) -> Result<Value> {
        self.diag_action("add", entry).await
    }

    /// Update a device diagnosis entry (`action: "update"`).
    pub async fn diag_update(&self, entry: &DiagEntry) -> Result<Value> {
        self.diag_action("update", entry).await
    }

    /// Remove a device diagnosis entry (`action: "remove"`).
    pub async fn diag_remove(&self, entry: &DiagEntry) -> Result<Value> {
        self.diag_action("remove", entry).await
    }

    /// `POST /api/diag` with `action` (`add`, `update`, `remove`) and the entry's fields. The
    /// answer (`ok`, `message`, `action`, `entryCount`, `sentToStack`, ...) is returned as JSON.
    pub async fn diag_action(&self, action: &str, entry: &DiagEntry) -> Result<Value> {
        if !matches!(action, "add" | "update" | "remove") {
            return Err(Error::invalid(format!(
                "diagnosis action must be add, update or remove, got {action:?}"
            )));
        }
        if action != "remove" {
            entry.validate()?;
        }
        self.diag_write(&entry.to_json(action)).await
    }

    /// `GET /api/alarms`: active alarms.
    pub async fn alarms(&self) -> Result<Vec<AlarmItem>> {
        self.request(Method::GET, "/api/alarms", None, self.t().other)
            .await
    }

    /// `GET /api/alarms/history`: the most recent 500.
    pub async fn alarm_history(&self) -> Result<Vec<AlarmItem>> {
        self.request(Method::GET, "/api/alarms/history", None, self.t().other)
            .await
    }

    /// `POST /api/alarms/ack`.
    pub async fn ack_alarm(&self, id: &str) -> Result<OkResult> {
        let body = serde_json::to_value(AckBody { id }).unwrap_or(Value::Null);
        self.request(Method::POST, "/api/alarms/ack", Some(&body), self.t().other)
            .await
    }

    /// `POST /api/alarms/ack-all`.
    pub async fn ack_all(&self) -> Result<OkResult> {
        self.request(Method::POST, "/api/alarms/ack-all", None, self.t().other)
            .await
    }

    /// `GET /api/im`.
    pub async fn im(&self) -> Result<Im> {
        self.request(Method::GET, "/api/im", None, self.t().other)
            .await
    }

    /// `GET /api/records`.
    pub async fn records(&self) -> Result<Records> {
        self.request(Method::GET, "/api/records", None, self.t().other)
            .await
    }

    /// `POST /api/start` (15 s). A Track 2 failure is `Ok(result)` with `ok=false` and its
    /// `errorCode`; use [`CommandResult::check`] to turn it into an error.
    pub async fn start(&self) -> Result<CommandResult> {
        self.request(Method::POST, "/api/start", None, self.t().start_stop)
            .await
    }

    /// `POST /api/stop` (15 s).
    pub async fn stop(&self) -> Result<CommandResult> {
        self.request(Method::POST, "/api/stop", None, self.t().start_stop)
            .await
    }

    /// `POST /api/reset`.
    pub async fn reset(&self, mode: ResetMode) -> Result<ResetResult> {
        let body = json!({ "mode": mode.as_str() });
        self.request(Method::POST, "/api/reset", Some(&body), self.t().other)
            .await
    }

    /// `POST /api/high-resolution-timer`.
    pub async fn set_high_resolution_timer(&self, enable: bool) -> Result<OkResult> {
        let body = json!({ "enable": enable });
        self.request(
            Method::POST,
            "/api/high-resolution-timer",
            Some(&body),
            self.t().other,
        )
        .await
    }

    /// `POST /api/config/reload` with an empty JSON object (reload the configured file).
    pub async fn reload_config(&self) -> Result<CommandResult> {
        self.reload_config_with(&json!({})).await
    }

    /// `POST /api/config/reload` with a request body as the service defines it.
    pub async fn reload_config_with(&self, body: &Value) -> Result<CommandResult> {
        self.request(
            Method::POST,
            "/api/config/reload",
            Some(body),
            self.t().other,
        )
        .await
    }

    /// `GET /api/info`: the liveness probe (shape open in the spec; returned as JSON).
    pub async fn info(&self) -> Result<Value> {
        self.request(Method::GET, "/api/info", None, self.t().other)
            .await
    }

    /// Poll `GET /api/info` until it answers 2xx or `deadline` passes (readiness wait).
    pub async fn wait_ready(&self, deadline: Duration) -> Result<Value> {
        let end = tokio::time::Instant::now() + deadline;
        loop {
            let left = end.saturating_duration_since(tokio::time::Instant::now());
            let per_try = left.min(Duration::from_millis(500));
            let r = self
                .request::<Value>(
                    Method::GET,
                    "/api/info",
                    None,
                    per_try.max(Duration::from_millis(1)),
                )
                .await;
            match r {
                Ok(v) => return Ok(v),
                Err(e) if tokio::time::Instant::now() >= end => return Err(e),
                Err(e) if e.http_status == Some(401) => return Err(e),
                Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
            }
        }
    }

    /// The cached, write-merging process-data handle of spec 4.1 (20 ms cache, 20 ms flush).
    pub fn process_data(&self) -> crate::ProcessData {
        crate::ProcessData::new(self.clone())
    }

    /// Change events by polling (spec 6; reference period 3 s).
    pub fn watch(&self, period: Duration) -> crate::Watcher {
        crate::Watcher::spawn(self.clone(), period)
    }
}

/// A device diagnosis entry for `POST /api/diag` (request shape as the service defines it:
/// `action`, `slot`, `subslot`, `channel`, `errorType`, `severity`, `text`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiagEntry {
    pub slot: u16,
    pub subslot: u16,
    /// Channel number.
    pub channel: u16,
    /// Channel error type.
    pub error_type: u16,
    /// 0 fault, 1 maintenance required, 2 maintenance demanded, 3 qualified (spec 4 rule 5).
    pub severity: u8,
    /// Free text (optional, at most 256 bytes on the service side).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub text: String,
}

impl DiagEntry {
    /// Client-side check of the severity range (0..=3).
    pub fn validate(&self) -> Result<()> {
        if self.severity > 3 {
            return Err(Error::invalid(format!(
                "diagnosis severity {} out of range 0..=3",
                self.severity
            )));
        }
        Ok(())
    }

    /// The request body with `action` (`add` / `remove`).
    pub fn to_json(&self, action: &str) -> Value {
        let mut v = serde_json::to_value(self).unwrap_or(Value::Null);
        if let Value::Object(m) = &mut v {
            m.insert("action".into(), Value::String(action.into()));
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn section_8_timeouts_and_defaults() {
        let t = Timeouts::default();
        assert_eq!(t.start_stop, Duration::from_secs(15));
        assert_eq!(t.poll, Duration::from_secs(2));
        assert_eq!(t.other, Duration::from_secs(5));
        assert_eq!(t.io_path, Duration::from_millis(500));
        let c = Client::new(Some(String::new()));
        assert_eq!(c.inner.api_key, None, "an empty key is no key");
        assert_eq!(c.inner.ep.port, 18840);
        assert_eq!(c.inner.ep.host, "127.0.0.1");
        assert_eq!(
            Client::connect("ftp://x", None).unwrap_err().kind,
            CallResult::InvalidArgument
        );
    }

    #[test]
    fn diag_entry_body_and_checks() {
        let e = DiagEntry {
            slot: 1,
            subslot: 0x8001,
            channel: 3,
            error_type: 2,
            severity: 3,
            text: String::new(),
        };
        assert_eq!(
            e.to_json("add"),
            json!({"action": "add", "slot": 1, "subslot": 0x8001, "channel": 3, "errorType": 2, "severity": 3})
        );
        assert!(e.validate().is_ok());
        let bad = DiagEntry { severity: 4, ..e };
        assert_eq!(
            bad.validate().unwrap_err().kind,
            CallResult::InvalidArgument
        );
    }
}

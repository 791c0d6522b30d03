//! The local HTTP API (spec sections 4, 5, 7, 8): hyper 1 on tokio, loopback only.
//!
//! Thin layer: authentication, limits, routing, body validation, Track 1 error bodies. Every
//! resource comes from [`Runtime`].
//!
//! Limits (spec 8, docs/decisions.md "HTTP limits"):
//! * body > 64 KiB -> 413 (by `Content-Length` before reading, or while reading);
//! * body not complete within 10 s -> 408; request head not complete within 10 s -> connection
//!   closed (hyper `header_read_timeout`);
//! * at most 16 requests in progress; the 17th gets 503 with a Track 1 body (`PnS.Api.Busy`)
//!   and `Retry-After: 1` immediately (no queue);
//! * at most 128 open connections; beyond that a connection gets a raw 503 and is closed;
//! * shutdown: stop accepting, let requests in progress finish for up to 3 s, then close.

// Validation helpers return the finished error response; it is only built on the error path.
#![allow(clippy::result_large_err)]

use std::convert::Infallible;
use std::future::Future;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::header::{HeaderValue, CONTENT_LENGTH, CONTENT_TYPE};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use serde_json::{json, Value};
use subtle::ConstantTimeEq;
use tokio::net::TcpListener;
use tokio::sync::{watch, Semaphore};
use tracing::{debug, warn};

use crate::runtime::Runtime;
use crate::util::now_rfc3339;

pub mod body;

/// The fixed port (spec 8).
pub const DEFAULT_PORT: u16 = 18840;
/// Maximum request body (spec 8).
pub const MAX_BODY: usize = 64 * 1024;
/// Body read time (spec 8).
pub const BODY_TIMEOUT: Duration = Duration::from_secs(10);
/// Requests in progress (spec 8).
pub const MAX_IN_FLIGHT: usize = 16;
/// Open connections.
pub const MAX_CONNECTIONS: usize = 128;
/// Drain time at shutdown (spec 8).
pub const DRAIN: Duration = Duration::from_secs(3);
/// Header carrying the API key (spec 5.4).
pub const API_KEY_HEADER: &str = "x-vendor-pnet-api-key";

/// The dashboard page: one static document, no external resources. The spec allows no paths
/// beyond its own, so the chart library (vendored, MIT: assets/vendor/uplot/PROVENANCE.md)
/// and the page's script are put into the page here, at build time, instead of being served
/// as files of their own (docs/decisions.md "Dashboard").
pub const DASHBOARD_HTML: &str = concat!(
    include_str!("../assets/dashboard.html"),
    "<style>\n",
    include_str!("../assets/vendor/uplot/uPlot.min.css"),
    "\n</style>\n<script>\n",
    include_str!("../assets/vendor/uplot/uPlot.iife.min.js"),
    "\n</script>\n<script>\n",
    include_str!("../assets/dashboard.js"),
    "</script>\n</body>\n</html>\n"
);

/// Track 1 `code` values (docs/decisions.md).
pub mod code {
    pub const INVALID_BODY: &str = "PnS.Api.InvalidBody";
    pub const OUT_OF_RANGE: &str = "PnS.Api.OutOfRange";
    pub const UNAUTHORIZED: &str = "PnS.Api.Unauthorized";
    pub const NOT_FOUND: &str = "PnS.Api.NotFound";
    pub const PAYLOAD_TOO_LARGE: &str = "PnS.Api.PayloadTooLarge";
    pub const REQUEST_TIMEOUT: &str = "PnS.Api.RequestTimeout";
    pub const BUSY: &str = "PnS.Api.Busy";
    pub const INTERNAL: &str = "PnS.Api.Internal";
}

type Resp = Response<Full<Bytes>>;

struct Ctx {
    rt: Arc<Runtime>,
    api_key: Option<Vec<u8>>,
    in_flight: Arc<Semaphore>,
}

fn json_resp(status: StatusCode, v: &Value) -> Resp {
    json_bytes_resp(status, serde_json::to_vec(v).unwrap_or_default())
}

/// A JSON response from an already serialised body.
fn json_bytes_resp(status: StatusCode, body: Vec<u8>) -> Resp {
    let mut r = Response::new(Full::new(Bytes::from(body)));
    *r.status_mut() = status;
    r.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("application/json; charset=utf-8"),
    );
    r.headers_mut()
        .insert("cache-control", HeaderValue::from_static("no-store"));
    r
}

/// A Track 1 error response (spec 7.1).
pub fn track1(status: StatusCode, code: &str, message: impl Into<String>) -> Resp {
    json_resp(
        status,
        &json!({
            "success": false,
            "message": message.into(),
            "code": code,
            "errorCode": 0,
            "timestamp": now_rfc3339(),
        }),
    )
}

fn ok(v: Value) -> Resp {
    json_resp(StatusCode::OK, &v)
}

/// Constant-time key comparison: time depends only on the configured key's length.
fn key_matches(expected: &[u8], given: Option<&[u8]>) -> bool {
    let given = given.unwrap_or(&[]);
    let mut acc = subtle::Choice::from(1u8);
    for (i, e) in expected.iter().enumerate() {
        let g = given.get(i).copied().unwrap_or(!*e);
        acc &= e.ct_eq(&g);
    }
    acc &= (given.len() as u64).ct_eq(&(expected.len() as u64));
    bool::from(acc)
}

/// Bind the listener: 127.0.0.1 only (spec 5.1), `port` fixed unless the dev flag overrides it.
pub async fn bind(port: u16) -> std::io::Result<TcpListener> {
    TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, port))).await
}

/// Serve until `shutdown` turns true, then drain for up to [`DRAIN`].
pub async fn serve(listener: TcpListener, rt: Arc<Runtime>, mut shutdown: watch::Receiver<bool>) {
    let ctx = Arc::new(Ctx {
        api_key: rt.settings().api_key.clone().map(|k| k.into_bytes()),
        rt,
        in_flight: Arc::new(Semaphore::new(MAX_IN_FLIGHT)),
    });
    let conns = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let mut tasks = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            _ = shutdown.changed() => break,
            Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
            acc = listener.accept() => {
                let (stream, peer) = match acc {
                    Ok(x) => x,
                    Err(e) => {
                        warn!("accept failed: {e}");
                        tokio::time::sleep(Duration::from_millis(20)).await;
                        continue;
                    }
                };
                let Ok(permit) = conns.clone().try_acquire_owned() else {
                    tasks.spawn(reject_connection(stream));
                    continue;
                };
                let _ = stream.set_nodelay(true);
                debug!("connection from {peer}");
                let ctx = ctx.clone();
                let mut sd = shutdown.clone();
                tasks.spawn(async move {
                    let _permit = permit;
                    let svc = hyper::service::service_fn(move |req| {
                        let ctx = ctx.clone();
                        async move { Ok::<_, Infallible>(handle_guarded(req, ctx).await) }
                    });
                    let conn = hyper::server::conn::http1::Builder::new()
                        .timer(TokioTimer::new())
                        .header_read_timeout(BODY_TIMEOUT)
                        .keep_alive(true)
                        // A client may shut down its write side after the request and wait
                        // for the answer (RFC 9112 9.6); without this hyper closes the
                        // connection when it reads that EOF first, and the answer is lost
                        // (device/tests/http_hardening.rs half_closed_clients_get_answers).
                        .half_close(true)
                        .serve_connection(TokioIo::new(stream), svc);
                    tokio::pin!(conn);
                    tokio::select! {
                        _ = conn.as_mut() => {}
                        _ = sd.changed() => {
                            conn.as_mut().graceful_shutdown();
                            let _ = conn.await;
                        }
                    }
                });
            }
        }
    }
    drop(listener);
    let drained =
        tokio::time::timeout(DRAIN, async { while tasks.join_next().await.is_some() {} }).await;
    if drained.is_err() {
        warn!(
            "drain time of {DRAIN:?} exceeded; closing {} connection(s)",
            tasks.len()
        );
        tasks.abort_all();
    }
}

async fn reject_connection(mut stream: tokio::net::TcpStream) {
    use tokio::io::AsyncWriteExt;
    let body = json!({"success": false, "message": "too many open connections", "code": code::BUSY,
        "errorCode": 0, "timestamp": now_rfc3339()})
    .to_string();
    let head = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after: 1\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    let _ = tokio::time::timeout(Duration::from_secs(1), async {
        let _ = stream.write_all(head.as_bytes()).await;
        let _ = stream.write_all(body.as_bytes()).await;
        let _ = stream.shutdown().await;
    })
    .await;
}

/// Run the handler so that a bug (panic) becomes a 500, never a dead server.
///
/// GET handlers never wait (no body, no await): they run in place, in the connection's task,
/// with the panic caught around each poll; a task per request cost a spawn, a cross-thread
/// wake-up and a join per `GET /api/status` (docs/decisions.md "Status path"). Every other
/// request runs on its own task, so a client that goes away mid-request cannot cancel a
/// start, stop, reset or reload half-way (the task finishes on its own).
async fn handle_guarded(req: Request<Incoming>, ctx: Arc<Ctx>) -> Resp {
    let method = req.method().clone();
    let uri = req.uri().clone();
    let failed = |what: &dyn std::fmt::Display| {
        tracing::error!("handler for {method} {} failed: {what}", uri.path());
        track1(
            StatusCode::INTERNAL_SERVER_ERROR,
            code::INTERNAL,
            "internal service error",
        )
    };
    if method == Method::GET {
        let mut fut = std::pin::pin!(handle(req, ctx));
        let r = std::future::poll_fn(|cx| {
            match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| fut.as_mut().poll(cx))) {
                Ok(p) => p.map(Ok),
                Err(payload) => std::task::Poll::Ready(Err(payload)),
            }
        })
        .await;
        return match r {
            Ok(r) => r,
            Err(payload) => {
                let msg = payload
                    .downcast_ref::<String>()
                    .map(String::as_str)
                    .or_else(|| payload.downcast_ref::<&str>().copied())
                    .unwrap_or("panic");
                failed(&format_args!("panicked: {msg}"))
            }
        };
    }
    match tokio::spawn(handle(req, ctx)).await {
        Ok(r) => r,
        Err(e) => failed(&e),
    }
}

enum BodyError {
    TooLarge,
    Timeout,
    Read(String),
}

async fn read_body(req: Request<Incoming>) -> Result<Bytes, BodyError> {
    if let Some(len) = req.headers().get(CONTENT_LENGTH) {
        match len.to_str().ok().and_then(|s| s.trim().parse::<u64>().ok()) {
            Some(n) if n > MAX_BODY as u64 => return Err(BodyError::TooLarge),
            Some(_) => {}
            None => return Err(BodyError::Read("invalid Content-Length".into())),
        }
    }
    let limited = Limited::new(req.into_body(), MAX_BODY);
    match tokio::time::timeout(BODY_TIMEOUT, limited.collect()).await {
        Err(_) => Err(BodyError::Timeout),
        Ok(Err(e)) => {
            if e.is::<http_body_util::LengthLimitError>() {
                Err(BodyError::TooLarge)
            } else {
                Err(BodyError::Read(e.to_string()))
            }
        }
        Ok(Ok(c)) => Ok(c.to_bytes()),
    }
}

fn body_error(e: BodyError) -> Resp {
    match e {
        BodyError::TooLarge => track1(
            StatusCode::PAYLOAD_TOO_LARGE,
            code::PAYLOAD_TOO_LARGE,
            format!("request body larger than {MAX_BODY} bytes"),
        ),
        BodyError::Timeout => track1(
            StatusCode::REQUEST_TIMEOUT,
            code::REQUEST_TIMEOUT,
            format!(
                "request body not received within {} s",
                BODY_TIMEOUT.as_secs()
            ),
        ),
        BodyError::Read(e) => track1(
            StatusCode::BAD_REQUEST,
            code::INVALID_BODY,
            format!("cannot read request body: {e}"),
        ),
    }
}

/// A 400 whose message echoes the request body text (spec 7.2).
fn bad(r: body::Rejection, body: &[u8]) -> Resp {
    track1(
        StatusCode::BAD_REQUEST,
        r.code,
        format!(
            "{}; request body: {}",
            r.reason,
            String::from_utf8_lossy(body)
        ),
    )
}

async fn handle(req: Request<Incoming>, ctx: Arc<Ctx>) -> Resp {
    let method = req.method().clone();
    let path = req.uri().path().to_string();
    // Authentication (spec 5.4): every request, the dashboard page included. A browser cannot
    // add the header itself: `pnctl dashboard` serves the page with the key added.
    if let Some(key) = &ctx.api_key {
        let given = req.headers().get(API_KEY_HEADER).map(|v| v.as_bytes());
        if !key_matches(key, given) {
            let hint = if method == Method::GET && path == "/" {
                "; to open the dashboard with the key, run `pnctl --api-key KEY dashboard` and \
                 open the address it prints"
            } else {
                ""
            };
            return track1(
                StatusCode::UNAUTHORIZED,
                code::UNAUTHORIZED,
                format!("missing or wrong X-Vendor-Pnet-Api-Key header{hint}"),
            );
        }
    }
    // Requests in progress (spec 8).
    let Ok(_permit) = ctx.in_flight.clone().try_acquire_owned() else {
        let mut r = track1(
            StatusCode::SERVICE_UNAVAILABLE,
            code::BUSY,
            format!("more than {MAX_IN_FLIGHT} requests in progress; retry later"),
        );
        r.headers_mut()
            .insert("retry-after", HeaderValue::from_static("1"));
        return r;
    };
    // TEST ONLY fault injection (`Dev:FaultPanicPath`, see fault.rs): a handler that fails.
    #[cfg(feature = "test-hooks")]
    if ctx.rt.settings().faults.panic_path.as_deref() == Some(path.as_str()) {
        panic!("injected fault: handler of {path} panics");
    }
    let rt = &ctx.rt;
    let is_post = method == Method::POST;
    let known_post = matches!(
        path.as_str(),
        "/api/io"
            | "/api/alarms/ack"
            | "/api/alarms/ack-all"
            | "/api/start"
            | "/api/stop"
            | "/api/reset"
            | "/api/high-resolution-timer"
            | "/api/config/reload"
            | "/api/diag"
    );
    let body = if is_post && known_post {
        match read_body(req).await {
            Ok(b) => b,
            Err(e) => return body_error(e),
        }
    } else {
        Bytes::new()
    };
    match (method.clone(), path.as_str()) {
        (Method::GET, "/") => {
            let mut r = Response::new(Full::new(Bytes::from_static(DASHBOARD_HTML.as_bytes())));
            r.headers_mut().insert(
                CONTENT_TYPE,
                HeaderValue::from_static("text/html; charset=utf-8"),
            );
            r.headers_mut()
                .insert("cache-control", HeaderValue::from_static("no-store"));
            r
        }
        (Method::GET, "/api/status") => json_bytes_resp(StatusCode::OK, rt.status_json()),
        (Method::GET, "/api/info") => ok(rt.info()),
        (Method::GET, "/api/io") => ok(rt.io_snapshot()),
        (Method::GET, "/api/diag") => ok(rt.diag()),
        (Method::GET, "/api/alarms") => ok(json!(rt.alarms_active())),
        (Method::GET, "/api/alarms/history") => ok(json!(rt.alarms_history())),
        (Method::GET, "/api/im") => ok(rt.im()),
        (Method::GET, "/api/records") => ok(rt.records()),
        (Method::POST, "/api/io") => match body::parse_io(&body) {
            Ok(w) => match rt.io_write(w.offset, &w.data).await {
                Ok(v) => ok(v),
                Err(e) => bad(
                    body::Rejection {
                        code: code::OUT_OF_RANGE,
                        reason: e.to_string(),
                    },
                    &body,
                ),
            },
            Err(r) => bad(r, &body),
        },
        (Method::POST, "/api/alarms/ack") => match body::parse_alarm_ack(&body) {
            Ok(id) => ok(rt.ack(&id)),
            Err(r) => bad(r, &body),
        },
        (Method::POST, "/api/alarms/ack-all") => ok(rt.ack_all()),
        (Method::POST, "/api/start") => ok(rt.start().await),
        (Method::POST, "/api/stop") => ok(rt.stop().await),
        (Method::POST, "/api/reset") => match body::parse_reset(&body) {
            Ok(mode) => ok(rt.reset(mode).await),
            Err(r) => bad(r, &body),
        },
        (Method::POST, "/api/high-resolution-timer") => {
            match body::parse_high_resolution_timer(&body) {
                Ok(enable) => ok(rt.set_high_resolution_timer(enable)),
                Err(r) => bad(r, &body),
            }
        }
        (Method::POST, "/api/config/reload") => match body::parse_config_reload(&body) {
            Ok(path) => ok(rt.reload(path).await),
            Err(r) => bad(r, &body),
        },
        (Method::POST, "/api/diag") => match body::parse_diag(&body) {
            Ok(d) => ok(rt.diag_write(d.action, d.entry)),
            Err(r) => bad(r, &body),
        },
        _ => track1(
            StatusCode::NOT_FOUND,
            code::NOT_FOUND,
            format!("no resource {method} {path}"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_compare() {
        assert!(key_matches(b"secret", Some(b"secret")));
        assert!(!key_matches(b"secret", Some(b"secreT")));
        assert!(!key_matches(b"secret", Some(b"secret2")));
        assert!(!key_matches(b"secret", Some(b"secre")));
        assert!(!key_matches(b"secret", None));
        assert!(!key_matches(b"secret", Some(b"")));
    }
}

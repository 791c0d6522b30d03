//! `pnctl dashboard`: the dashboard for a user who holds the API key.
//!
//! With a key configured the service answers every request without the key header with 401,
//! the dashboard page included (spec 5.4). A browser cannot add a header to the address it
//! opens, so `pnctl` serves a proxy on a loopback port of its own: it forwards each request to
//! the service with the key added and passes the answer back (status, content type, body).
//! The key stays with the process that was given it; the proxy listens on loopback only, as
//! the service does (spec 5.1).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

use crate::error::{Error, Result};
use crate::http::{self, Endpoint};

/// Largest request body forwarded (the service's own limit is 64 KiB).
const MAX_REQUEST_BODY: usize = 64 * 1024;

/// What the proxy forwards to.
#[derive(Debug, Clone)]
pub struct Upstream {
    pub endpoint: Endpoint,
    pub api_key: Option<String>,
    /// Deadline of one forwarded exchange.
    pub timeout: Duration,
}

/// Bind the proxy's listener. Only loopback addresses are accepted: the proxy holds the key
/// and must not offer it to the network.
pub async fn bind(addr: SocketAddr) -> Result<TcpListener> {
    if !addr.ip().is_loopback() {
        return Err(Error::invalid(format!(
            "--listen {addr}: the dashboard proxy carries the API key and listens on a loopback \
             address only (127.0.0.1 or ::1)"
        )));
    }
    TcpListener::bind(addr)
        .await
        .map_err(|e| Error::invalid(format!("cannot listen on {addr}: {e}")))
}

/// Serve connections on `listener` until the task is dropped.
pub async fn serve(listener: TcpListener, upstream: Upstream) -> Result<()> {
    let upstream = Arc::new(upstream);
    loop {
        let (stream, _) = listener
            .accept()
            .await
            .map_err(|e| Error::unreachable(format!("dashboard proxy: accept failed: {e}")))?;
        let up = upstream.clone();
        tokio::spawn(async move {
            let svc = hyper::service::service_fn(move |req| {
                let up = up.clone();
                async move { Ok::<_, std::convert::Infallible>(forward(req, &up).await) }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), svc)
                .await;
        });
    }
}

/// Forward one request; a failure to reach the service is answered 502 with the reason.
async fn forward(req: Request<Incoming>, up: &Upstream) -> Response<Full<Bytes>> {
    let method = req.method().clone();
    let path = req
        .uri()
        .path_and_query()
        .map_or("/".to_string(), |p| p.as_str().to_string());
    let body = match Limited::new(req.into_body(), MAX_REQUEST_BODY)
        .collect()
        .await
    {
        Ok(b) => b.to_bytes(),
        Err(e) => {
            return plain(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("request body not forwarded: {e}"),
            )
        }
    };
    let body = (!body.is_empty() || method == hyper::Method::POST).then(|| body.to_vec());
    match http::send(
        &up.endpoint,
        up.api_key.as_deref(),
        method,
        &path,
        body,
        up.timeout,
    )
    .await
    {
        Ok(r) => {
            let mut resp = Response::new(Full::new(r.body));
            *resp.status_mut() = StatusCode::from_u16(r.status).unwrap_or(StatusCode::BAD_GATEWAY);
            if let Some(v) = r.content_type.and_then(|c| HeaderValue::from_str(&c).ok()) {
                resp.headers_mut().insert(CONTENT_TYPE, v);
            }
            resp.headers_mut()
                .insert("cache-control", HeaderValue::from_static("no-store"));
            resp
        }
        Err(e) => plain(StatusCode::BAD_GATEWAY, e.to_string()),
    }
}

fn plain(status: StatusCode, text: String) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from(text)));
    *r.status_mut() = status;
    r.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

//! Minimal HTTP/1.1 transport over hyper: one connection per request (the service is on
//! loopback; a connection costs well under a millisecond), a deadline over the whole exchange
//! (connect, send, read), a bounded response body.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::{header, Method, Request};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

use crate::error::{Error, Result};

/// Largest response body accepted (alarm history of 500 entries is far below this).
pub const MAX_RESPONSE_BODY: usize = 8 * 1024 * 1024;

/// Header carrying the API key (spec 5.4).
pub const API_KEY_HEADER: &str = "X-Vendor-Pnet-Api-Key";

/// Where the service is: host and port from a `http://host:port` base URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    pub host: String,
    pub port: u16,
    /// Path prefix of the base URL without a trailing `/` (normally empty).
    pub prefix: String,
}

impl Endpoint {
    /// Parse `http://host[:port][/prefix]`. Only plain `http` (spec 5.5: no TLS).
    pub fn parse(base_url: &str) -> Result<Self> {
        let rest = base_url.trim().strip_prefix("http://").ok_or_else(|| {
            Error::invalid(format!(
                "base URL {base_url:?} must start with http:// (the service has no TLS)"
            ))
        })?;
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, ""),
        };
        if authority.is_empty() || authority.contains('@') {
            return Err(Error::invalid(format!("base URL {base_url:?} has no host")));
        }
        let (host, port) = if let Some(h) = authority.strip_prefix('[') {
            // [v6]:port
            let (h, after) = h
                .split_once(']')
                .ok_or_else(|| Error::invalid(format!("bad IPv6 host in {base_url:?}")))?;
            let port = match after.strip_prefix(':') {
                Some(p) => p
                    .parse::<u16>()
                    .map_err(|_| Error::invalid(format!("bad port in {base_url:?}")))?,
                None if after.is_empty() => 80,
                None => return Err(Error::invalid(format!("bad host in {base_url:?}"))),
            };
            (h.to_string(), port)
        } else {
            match authority.rsplit_once(':') {
                Some((h, p)) => (
                    h.to_string(),
                    p.parse::<u16>()
                        .map_err(|_| Error::invalid(format!("bad port in {base_url:?}")))?,
                ),
                None => (authority.to_string(), 80),
            }
        };
        if host.is_empty() {
            return Err(Error::invalid(format!("base URL {base_url:?} has no host")));
        }
        Ok(Endpoint {
            host,
            port,
            prefix: path.trim_end_matches('/').to_string(),
        })
    }

    fn host_header(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

/// A raw response.
#[derive(Debug, Clone)]
pub struct RawResponse {
    pub status: u16,
    /// The Content-Type header, when the service sent one.
    pub content_type: Option<String>,
    pub body: Bytes,
}

/// Send one request and read the whole response within `timeout`. Transport failures and the
/// deadline give [`crate::CallResult::ServiceUnreachable`].
pub async fn send(
    ep: &Endpoint,
    api_key: Option<&str>,
    method: Method,
    path: &str,
    body: Option<Vec<u8>>,
    timeout: Duration,
) -> Result<RawResponse> {
    let what = format!("{method} {path}");
    match tokio::time::timeout(timeout, send_inner(ep, api_key, method, path, body)).await {
        Ok(r) => r,
        Err(_) => Err(Error::unreachable(format!(
            "{what}: no answer from {}:{} within {} ms",
            ep.host,
            ep.port,
            timeout.as_millis()
        ))),
    }
}

/// The dashboard page (`/`) is HTML; every other path answers JSON.
fn accept_for(path: &str) -> &'static str {
    if path == "/" || path.starts_with("/?") {
        "text/html"
    } else {
        "application/json"
    }
}

async fn send_inner(
    ep: &Endpoint,
    api_key: Option<&str>,
    method: Method,
    path: &str,
    body: Option<Vec<u8>>,
) -> Result<RawResponse> {
    let what = format!("{method} {path}");
    let unreachable = |e: &dyn std::fmt::Display| {
        Error::unreachable(format!(
            "{what}: service at {}:{} unreachable: {e}",
            ep.host, ep.port
        ))
    };
    let stream = TcpStream::connect((ep.host.as_str(), ep.port))
        .await
        .map_err(|e| unreachable(&e))?;
    let _ = stream.set_nodelay(true);
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| unreachable(&e))?;
    let conn_task = tokio::spawn(async move {
        let _ = conn.await;
    });
    let uri = format!("{}{}", ep.prefix, path);
    let mut req = Request::builder()
        .method(method)
        .uri(uri)
        .header(header::HOST, ep.host_header())
        .header(header::ACCEPT, accept_for(path));
    if let Some(k) = api_key {
        req = req.header(API_KEY_HEADER, k);
    }
    let has_body = body.is_some();
    if has_body {
        req = req.header(header::CONTENT_TYPE, "application/json");
    }
    let req = req
        .body(Full::new(Bytes::from(body.unwrap_or_default())))
        .map_err(|e| Error::invalid(format!("{what}: cannot build request: {e}")))?;
    let resp = sender
        .send_request(req)
        .await
        .map_err(|e| unreachable(&e))?;
    let status = resp.status().as_u16();
    let content_type = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let body = Limited::new(resp.into_body(), MAX_RESPONSE_BODY)
        .collect()
        .await
        .map_err(|e| unreachable(&e))?
        .to_bytes();
    conn_task.abort();
    Ok(RawResponse {
        status,
        content_type,
        body,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoint_parsing() {
        let e = Endpoint::parse("http://127.0.0.1:18840").unwrap();
        assert_eq!(
            (e.host.as_str(), e.port, e.prefix.as_str()),
            ("127.0.0.1", 18840, "")
        );
        let e = Endpoint::parse("http://localhost:1/x/").unwrap();
        assert_eq!(
            (e.host.as_str(), e.port, e.prefix.as_str()),
            ("localhost", 1, "/x")
        );
        let e = Endpoint::parse("http://[::1]:9").unwrap();
        assert_eq!((e.host.as_str(), e.port), ("::1", 9));
        assert_eq!(e.host_header(), "[::1]:9");
        let e = Endpoint::parse("http://h").unwrap();
        assert_eq!(e.port, 80);
        for bad in [
            "https://h:1",
            "h:1",
            "http://",
            "http://:1",
            "http://h:x",
            "http://h:70000",
        ] {
            assert_eq!(
                Endpoint::parse(bad).unwrap_err().kind,
                crate::CallResult::InvalidArgument,
                "{bad}"
            );
        }
    }
}

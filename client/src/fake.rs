//! A tiny in-process HTTP server on 127.0.0.1:0 for unit tests of mapping edge cases the real
//! daemon cannot be made to produce (500, garbage bodies, unknown states, a service that never
//! answers, a flush that fails while a write is pending). Everything else is tested against
//! the real daemon in `client/tests/`.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// A received request.
#[derive(Debug, Clone)]
pub struct Req {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: String,
    /// Status the fake answered with (0: no answer).
    pub status: u16,
}

/// What the fake does with a request.
pub enum Reply {
    Respond(u16, String),
    /// Read the request, never answer.
    Hang,
    /// Close the connection without an answer.
    Close,
}

type Handler = dyn Fn(&Req) -> Reply + Send + Sync;

pub struct Fake {
    pub url: String,
    pub requests: Arc<Mutex<Vec<Req>>>,
    handler: Arc<Mutex<Arc<Handler>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Fake {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Fake {
    pub async fn start(h: impl Fn(&Req) -> Reply + Send + Sync + 'static) -> Fake {
        let l = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let url = format!("http://{}", l.local_addr().expect("addr"));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let handler: Arc<Mutex<Arc<Handler>>> = Arc::new(Mutex::new(Arc::new(h)));
        let (rq, hd) = (requests.clone(), handler.clone());
        let task = tokio::spawn(async move {
            loop {
                let Ok((mut s, _)) = l.accept().await else {
                    return;
                };
                let (rq, hd) = (rq.clone(), hd.clone());
                tokio::spawn(async move {
                    let mut buf = Vec::new();
                    let mut tmp = [0u8; 4096];
                    let head_end = loop {
                        if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                            break p;
                        }
                        match s.read(&mut tmp).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&tmp[..n]),
                        }
                    };
                    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
                    let mut lines = head.split("\r\n");
                    let first = lines.next().unwrap_or_default().to_string();
                    let mut parts = first.split_whitespace();
                    let method = parts.next().unwrap_or_default().to_string();
                    let path = parts.next().unwrap_or_default().to_string();
                    let headers: Vec<(String, String)> = lines
                        .filter_map(|l| l.split_once(':'))
                        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
                        .collect();
                    let len: usize = headers
                        .iter()
                        .find(|(k, _)| k == "content-length")
                        .and_then(|(_, v)| v.parse().ok())
                        .unwrap_or(0);
                    let mut body = buf[head_end + 4..].to_vec();
                    while body.len() < len {
                        match s.read(&mut tmp).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => body.extend_from_slice(&tmp[..n]),
                        }
                    }
                    let mut req = Req {
                        method,
                        path,
                        headers,
                        body: String::from_utf8_lossy(&body).into_owned(),
                        status: 0,
                    };
                    let h = hd.lock().expect("lock").clone();
                    let reply = h(&req);
                    if let Reply::Respond(st, _) = &reply {
                        req.status = *st;
                    }
                    rq.lock().expect("lock").push(req);
                    match reply {
                        Reply::Respond(status, body) => {
                            let resp = format!(
                                "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                                body.len()
                            );
                            let _ = s.write_all(resp.as_bytes()).await;
                            let _ = s.shutdown().await;
                        }
                        Reply::Hang => {
                            tokio::time::sleep(Duration::from_secs(3600)).await;
                        }
                        Reply::Close => {}
                    }
                });
            }
        });
        Fake {
            url,
            requests,
            handler,
            task,
        }
    }

    /// Replace the handler.
    pub fn set(&self, h: impl Fn(&Req) -> Reply + Send + Sync + 'static) {
        *self.handler.lock().expect("lock") = Arc::new(h);
    }

    pub fn requests_to(&self, method: &str, path: &str) -> Vec<Req> {
        self.requests
            .lock()
            .expect("lock")
            .iter()
            .filter(|r| r.method == method && r.path == path)
            .cloned()
            .collect()
    }
}

/// A minimal IO snapshot body with the given areas.
pub fn io_body(input: &str, output: &str) -> String {
    serde_json::json!({
        "epoch": 1, "inputHex": input, "outputHex": output,
        "inputLength": input.len() / 2, "outputLength": output.len() / 2,
        "formatVersion": 2
    })
    .to_string()
}

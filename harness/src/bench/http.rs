//! `pn-lab bench http`: `GET /api/status` throughput of the device API (device in data
//! exchange at 1 ms) against a bare hyper 1.x server answering a fixed 570-byte JSON body
//! (`pn-lab bench bare-http`), both measured with wrk (16 connections) inside the device
//! namespace in the same run. Whether this load disturbs the cycle (|dev| p99 with and without
//! it) is measured by `pn-lab bench cycle --http 0,16`.

use super::rig::{sibling_binary, wrk_in, wrk_non2xx, wrk_rps, ChildGuard, Rig};
use super::{nap, raw, stopped, write_json, BareHttpArgs, HttpArgs};
use std::process::Stdio;
use std::time::Duration;

/// The bare server's body: a JSON object of exactly 570 bytes.
pub fn bare_body() -> Vec<u8> {
    let mut s = String::from(
        r#"{"serviceName":"bare","state":"DataExchange","connected":true,"errorCode":0,"pad":""#,
    );
    let tail = r#""}"#;
    while s.len() + tail.len() < 570 {
        s.push('x');
    }
    s.push_str(tail);
    s.into_bytes()
}

/// `pn-lab bench bare-http --port P [--seconds S]`: serve the 570-byte body on 127.0.0.1:P
/// with hyper 1.x (http1, keep-alive) on a multi-threaded tokio runtime.
pub fn serve_bare(opts: &BareHttpArgs) -> Result<(), String> {
    use http_body_util::Full;
    use hyper::body::Bytes;
    use hyper::service::service_fn;
    use hyper_util::rt::TokioIo;

    let (port, seconds) = (opts.port, opts.seconds);
    let body = Bytes::from(bare_body());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    rt.block_on(async move {
        let l = tokio::net::TcpListener::bind(("127.0.0.1", port))
            .await
            .map_err(|e| format!("bind 127.0.0.1:{port}: {e}"))?;
        println!("bare-http listening on 127.0.0.1:{port}");
        let serve = async move {
            loop {
                let Ok((s, _)) = l.accept().await else {
                    continue;
                };
                let _ = s.set_nodelay(true);
                let body = body.clone();
                tokio::spawn(async move {
                    let svc = service_fn(move |_req| {
                        let b = body.clone();
                        async move {
                            Ok::<_, std::convert::Infallible>(
                                hyper::Response::builder()
                                    .header("content-type", "application/json")
                                    .body(Full::new(b))
                                    .expect("static response"),
                            )
                        }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(s), svc)
                        .await;
                });
            }
        };
        if seconds == 0 {
            serve.await
        } else {
            let _ = tokio::time::timeout(Duration::from_secs(seconds), serve).await;
            Ok(())
        }
    })
}

/// Result of `pn-lab bench http`.
#[derive(Debug, serde::Serialize)]
pub struct HttpResult {
    pub seconds: u64,
    pub conns: u32,
    pub api_status_body_bytes: usize,
    pub api_rps: Option<f64>,
    pub api_non2xx: u64,
    pub bare_rps: Option<f64>,
    pub bare_non2xx: u64,
    pub ratio: Option<f64>,
    pub device_cpu_pct: Option<f64>,
    /// Daemon CPU time per API request (us): less sensitive to a busy machine than requests/s.
    pub device_cpu_us_per_request: Option<f64>,
    pub loadavg_before: f64,
    pub api_wrk: String,
    pub bare_wrk: String,
}

pub fn run(opts: &HttpArgs) -> Result<(), String> {
    let (seconds, conns) = (opts.seconds, opts.conns);
    println!("machine: {}", raw::machine());
    let mut rig = Rig::start(true)?;
    rig.connect(1000, 3)?;
    let body_len = rig
        .lab
        .http("GET", "/api/status", &[], None)
        .map(|r| r.body.len())
        .unwrap_or(0);
    let loadavg_before = raw::loadavg1();
    // The device API.
    let dev_path = format!("/proc/{}", rig.dev_pid);
    let t0 = raw::cpu_ticks(&dev_path);
    let w = rig.wrk("http://127.0.0.1:18840/api/status", conns, seconds)?;
    let api_out = w.finish(Duration::from_secs(seconds + 10));
    let t1 = raw::cpu_ticks(&dev_path);
    if stopped() {
        return Err("interrupted".into());
    }
    // The bare hyper server, same namespace, same wrk.
    let bin = sibling_binary("pn-lab")?;
    let srv = rig
        .lab
        .ns_dev
        .command(bin)
        .args(["bench", "bare-http", "--port", "18841"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| e.to_string())?;
    let srv = ChildGuard(Some(srv));
    // Wait until it answers.
    let mut up = false;
    for _ in 0..100 {
        let ok = rig
            .lab
            .ns_dev
            .enter(|| {
                pn_testkit::http::request(
                    "127.0.0.1:18841".parse().expect("addr"),
                    "GET",
                    "/",
                    &[],
                    None,
                    Duration::from_secs(1),
                )
                .is_ok()
            })
            .unwrap_or(false);
        if ok {
            up = true;
            break;
        }
        nap(Duration::from_millis(50));
    }
    if !up {
        return Err("bare-http did not come up".into());
    }
    let w = wrk_in(&rig.lab.ns_dev, "http://127.0.0.1:18841/", conns, seconds)?;
    let bare_out = w.finish(Duration::from_secs(seconds + 10));
    drop(srv);
    let api_rps = wrk_rps(&api_out);
    let bare_rps = wrk_rps(&bare_out);
    let r = HttpResult {
        seconds,
        conns,
        api_status_body_bytes: body_len,
        api_rps,
        api_non2xx: wrk_non2xx(&api_out),
        bare_rps,
        bare_non2xx: wrk_non2xx(&bare_out),
        ratio: api_rps.zip(bare_rps).map(|(a, b)| a / b),
        device_cpu_pct: super::rig::cpu_pct(t0, t1, seconds as f64),
        device_cpu_us_per_request: super::rig::cpu_pct(t0, t1, seconds as f64)
            .zip(api_rps)
            .filter(|(_, rps)| *rps > 0.0)
            .map(|(pct, rps)| pct / 100.0 * 1e6 / rps),
        loadavg_before,
        api_wrk: api_out,
        bare_wrk: bare_out,
    };
    println!("| server | body bytes | requests/s | non-2xx | ratio |\n|---|---|---|---|---|");
    println!(
        "| pn-device GET /api/status | {} | {} | {} | {} |",
        r.api_status_body_bytes,
        r.api_rps.map_or("-".into(), |v| format!("{v:.0}")),
        r.api_non2xx,
        r.ratio.map_or("-".into(), |v| format!("{v:.2}")),
    );
    println!(
        "| bare hyper 1.x | 570 | {} | {} | 1.00 |",
        r.bare_rps.map_or("-".into(), |v| format!("{v:.0}")),
        r.bare_non2xx
    );
    println!(
        "target: API >= 0.6x bare: {}; device CPU during API load {:.0}% of one core ({:.1} us per request); loadavg before {:.2}",
        match r.ratio {
            Some(x) if x >= 0.6 => format!("MET ({x:.2}x)"),
            Some(x) => format!("MISSED ({x:.2}x)"),
            None => "no figure".into(),
        },
        r.device_cpu_pct.unwrap_or(f64::NAN),
        r.device_cpu_us_per_request.unwrap_or(f64::NAN),
        r.loadavg_before
    );
    write_json(&opts.out, &r)
}

#[cfg(test)]
mod tests {
    #[test]
    fn bare_body_is_570_bytes_of_json() {
        let b = super::bare_body();
        assert_eq!(b.len(), 570);
        let v: serde_json::Value = serde_json::from_slice(&b).unwrap();
        assert_eq!(v["state"], "DataExchange");
    }
}

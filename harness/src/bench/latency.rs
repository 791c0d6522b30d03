//! `pn-lab bench latency`: write-to-wire latency and start-up time, both on the wire (the
//! recorder's kernel timestamps in the controller namespace, CLOCK_REALTIME like the
//! timestamps this process takes around its HTTP calls).
//!
//! * write-to-wire: `POST /api/io` of a unique 4-byte value at Q offset 0, then the first device
//!   cyclic frame whose slot-1 data holds it. Reported from the request (sent) and from the
//!   response (received); the API answers only after the cyclic thread took the write
//!   (`delivered`), so "from the response" is usually negative: the frame was already on the
//!   wire when the response arrived.
//! * start-up: from the controller's Connect request (DCE/RPC opnum 0 on UDP 34964, seen
//!   leaving the controller) to the device's first cyclic frame.

use super::recorder::Kind;
use super::rig::Rig;
use super::stats::summary;
use super::{nap, raw, stopped, write_json, LatencyArgs};
use serde_json::json;
use std::time::Duration;

#[derive(Debug, serde::Serialize)]
pub struct LatencyResult {
    pub period_us: u64,
    pub writes: usize,
    pub matched: usize,
    /// us: p50, p99, max.
    pub from_request: (f64, f64, f64),
    pub from_response: (f64, f64, f64),
    pub http_roundtrip: (f64, f64, f64),
    pub not_delivered: usize,
    /// AR aborts (watchdog) during the write series, reconnected.
    pub reconnects: usize,
    pub dhf: u16,
    pub connects: usize,
    pub startup_ms: (f64, f64, f64),
    pub startup_samples: Vec<f64>,
    pub loadavg_before: f64,
}

/// `connects` times: release, reconnect, and the time from the Connect request to the
/// device's first cyclic frame (ms).
fn start_up_times(
    rig: &mut Rig,
    period_us: u64,
    dhf: u16,
    connects: usize,
) -> Result<Vec<f64>, String> {
    let mut startup = Vec::new();
    for _ in 0..connects {
        if stopped() {
            return Err("interrupted".into());
        }
        rig.disconnect();
        nap(Duration::from_millis(300));
        rig.rec().clear();
        rig.connect(period_us, dhf)?;
        nap(Duration::from_millis(100));
        let recs = rig.rec().take();
        let Some(c) = recs.iter().find(|r| r.kind == Kind::RpcOut(0)) else {
            continue;
        };
        if let Some(d) = recs
            .iter()
            .find(|r| r.kind == Kind::DevCyclic && r.ts >= c.ts)
        {
            startup.push((d.ts - c.ts) as f64 / 1e6);
        }
    }
    Ok(startup)
}

/// The result as a markdown table and the targets met or missed.
fn print_result(r: &LatencyResult, startups: usize) {
    println!("| measure | n | p50 | p99 | max |\n|---|---|---|---|---|");
    let row = |name: &str, n: usize, v: (f64, f64, f64), unit: &str| {
        println!(
            "| {name} | {n} | {:.1} {unit} | {:.1} {unit} | {:.1} {unit} |",
            v.0, v.1, v.2
        )
    };
    row(
        "POST /api/io request sent -> first frame with the bytes",
        r.matched,
        r.from_request,
        "us",
    );
    row(
        "POST /api/io response received -> first frame with the bytes",
        r.matched,
        r.from_response,
        "us",
    );
    row("POST /api/io round trip", r.writes, r.http_roundtrip, "us");
    row(
        "Connect request -> first device cyclic frame",
        startups,
        r.startup_ms,
        "ms",
    );
    let limit = r.period_us as f64 + 100.0;
    println!(
        "write-to-wire target p99 <= {limit:.0} us (one cycle + 100 us): from the response {} ({:.1} us), from the request {} ({:.1} us); writes not delivered: {}, AR reconnects {} (DataHoldFactor {})",
        if r.from_response.1 <= limit { "MET" } else { "MISSED" },
        r.from_response.1,
        if r.from_request.1 <= limit { "MET" } else { "MISSED" },
        r.from_request.1,
        r.not_delivered,
        r.reconnects,
        r.dhf
    );
    println!(
        "start-up target <= 5 ms: {} (p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms over {} connects)",
        if r.startup_ms.2 <= 5.0 && startups > 0 {
            "MET"
        } else {
            "MISSED"
        },
        r.startup_ms.0,
        r.startup_ms.1,
        r.startup_ms.2,
        startups
    );
}

pub fn run(opts: &LatencyArgs) -> Result<(), String> {
    let (period_us, writes, dhf, connects) = (opts.period_us, opts.writes, opts.dhf, opts.connects);
    println!("machine: {}", raw::machine());
    let loadavg_before = raw::loadavg1();
    let mut rig = Rig::start(true)?;
    rig.connect(period_us, dhf)?;
    nap(Duration::from_millis(300));
    rig.rec().clear();

    // Write-to-wire.
    let mut marks = Vec::new();
    let mut not_delivered = 0;
    let mut reconnects = 0usize;
    for i in 0..writes {
        if stopped() {
            return Err("interrupted".into());
        }
        if rig
            .ar
            .as_ref()
            .map_or(true, |a| a.state() != pn_controller::ArState::DataExchange)
        {
            reconnects += 1;
            rig.connect(period_us, dhf)?;
            nap(Duration::from_millis(100));
        }
        let v: u32 = 0xA500_0000 | (i as u32 & 0x00FF_FFFF);
        let hex = format!("{v:08x}");
        let (t_req, t_resp, delivered) = rig.lab.ns_dev.enter(move || {
            let body = json!({ "offset": 0, "data": hex }).to_string();
            let t0 = raw::realtime_ns();
            let r = pn_testkit::http::request(
                crate::lab::API.parse().expect("addr"),
                "POST",
                "/api/io",
                &[("Content-Type", "application/json")],
                Some(body.as_bytes()),
                Duration::from_secs(5),
            );
            let t1 = raw::realtime_ns();
            let delivered = r
                .ok()
                .and_then(|r| serde_json::from_slice::<serde_json::Value>(&r.body).ok())
                .is_some_and(|j| j["delivered"] == true);
            (t0, t1, delivered)
        })?;
        if !delivered {
            not_delivered += 1;
        }
        marks.push((v, t_req, t_resp));
        // Spread the writes over the cycle phase.
        nap(Duration::from_micros(3_000 + (i as u64 * 137) % 1000));
    }
    nap(Duration::from_millis(50));
    let recs = rig.rec().take();
    let mut from_req = Vec::new();
    let mut from_resp = Vec::new();
    let mut rtt = Vec::new();
    for &(v, t0, t1) in &marks {
        rtt.push((t1 - t0) as f64 / 1000.0);
        if let Some(r) = recs
            .iter()
            .find(|r| r.kind == Kind::DevCyclic && r.data == v && r.ts + 1_000_000 >= t0)
        {
            from_req.push((r.ts as f64 - t0 as f64) / 1000.0);
            from_resp.push((r.ts as f64 - t1 as f64) / 1000.0);
        }
    }

    let startup = start_up_times(&mut rig, period_us, dhf, connects)?;
    let s3 = |v: &[f64]| {
        let (a, b, c, _) = summary(v);
        (a, b, c)
    };
    let r = LatencyResult {
        period_us,
        writes,
        matched: from_req.len(),
        from_request: s3(&from_req),
        from_response: s3(&from_resp),
        http_roundtrip: s3(&rtt),
        not_delivered,
        reconnects,
        dhf,
        connects,
        startup_ms: s3(&startup),
        startup_samples: startup.clone(),
        loadavg_before,
    };
    print_result(&r, startup.len());
    write_json(&opts.out, &r)
}

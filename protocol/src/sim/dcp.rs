//! DCP in simulated time: the device's DCP responder ([`DcpResponder`], what the daemon and
//! the farm run) answers a controller's Identify (all, by name, with response delays) and Set
//! NameOfStation (temporary and permanent) requests over a link with loss, duplicates and
//! delays. The controller renames the device several times and looks for it by its old and its
//! new name.
//!
//! Invariants, judged at the device (what it sent, whatever the link then lost):
//! * an Identify request whose filter matches the device's name when it arrives is answered,
//!   once per copy at most and at least once, within the response-delay window of its factor;
//! * a request whose filter does not match is not answered;
//! * a Set NameOfStation that arrives is answered, and the device carries the new name after it.

use std::collections::HashMap;

use super::{Report, Rng, SimConfig, TraceFrame};
use crate::machine::dcp_delay::{collect_window, response_delay};
use crate::machine::dcp_responder::{DcpIdentity, DcpResponder};
use crate::time::{Duration, Instant};
use crate::wire::dcp::{DcpRepr, NameOfStation, ServiceId, ServiceType};
use crate::wire::ethernet::MacAddr;
use std::net::Ipv4Addr;

const DEV: MacAddr = MacAddr([0x02, 0, 0, 0, 0x12, 0x34]);
const CTL: MacAddr = MacAddr([0x02, 0, 0, 0, 0, 0x01]);
const ROUNDS: u32 = 6;
const ROUND: Duration = Duration::from_millis(1000);

/// What the simulator knows about one request the device received.
struct Received {
    at: Instant,
    /// Copies delivered (the network may duplicate).
    copies: u32,
    /// The filter matched the device's name when the first copy arrived.
    matched: bool,
    factor: u16,
}

struct InFlight {
    at: Instant,
    order: u64,
    to_device: bool,
    frame: Vec<u8>,
}

/// Run the DCP part of `cfg`'s seed, adding to `rep`; `time_base`: where it starts on the
/// run's time line (for the trace).
pub fn run(cfg: &SimConfig, rep: &mut Report, time_base: Instant) {
    let mut rng = Rng::new(cfg.seed ^ 0xDC9D_C9DC_9DC9_DC9D);
    let id = DcpIdentity {
        mac: DEV,
        station_name: "dev-0".into(),
        device_vendor: "pn-device".into(),
        vendor_id: 0xFFFF,
        device_id: 1,
        ip: Ipv4Addr::new(10, 0, 0, 2),
        mask: Ipv4Addr::new(255, 255, 255, 0),
        gateway: Ipv4Addr::UNSPECIFIED,
        device_instance: (0, 1),
        device_initiative: false,
    };
    let mut dev = DcpResponder::new(id, Instant::ZERO);
    let mut link: Vec<InFlight> = Vec::new();
    let mut order = 0u64;
    let mut received: HashMap<u32, Received> = HashMap::new();
    let mut answers: HashMap<u32, Vec<Instant>> = HashMap::new();
    let mut set_names: HashMap<u32, String> = HashMap::new();
    let mut xid = 0x5EED_0000u32;
    // The controller's script: per round, Identify all, rename, look for the old and the new
    // name (each request sent twice, as controllers retry).
    let mut script: Vec<(Instant, DcpRepr)> = Vec::new();
    let mut names = vec!["dev-0".to_string()];
    for r in 0..ROUNDS {
        let t0 = Instant::ZERO + ROUND.saturating_mul(u64::from(r));
        let factor = 1 + (rng.next() % 30) as u16;
        let new = format!("dev-{}", r + 1);
        let old = names.last().cloned().unwrap_or_default();
        let (Ok(new_n), Ok(old_n)) = (NameOfStation::new(&new), NameOfStation::new(&old)) else {
            rep.violations
                .push(format!("dcp: invalid name {new} or {old}"));
            return;
        };
        let permanent = rng.chance(0.5);
        let mut push = |at: Duration, req: DcpRepr| script.push((t0 + at, req));
        xid += 1;
        push(Duration::ZERO, DcpRepr::identify_request_all(xid, factor));
        for k in 0..2u64 {
            xid += 1;
            set_names.insert(xid, new.clone());
            push(
                Duration::from_millis(400 + 50 * k),
                DcpRepr::set_name(xid, &new_n, permanent),
            );
        }
        xid += 1;
        push(
            Duration::from_millis(600),
            DcpRepr::identify_request_by_name(xid, &old_n, factor),
        );
        xid += 1;
        push(
            Duration::from_millis(650),
            DcpRepr::identify_request_by_name(xid, &new_n, factor),
        );
        names.push(new);
    }
    script.sort_by_key(|(t, _)| *t);
    let end = Instant::ZERO + ROUND.saturating_mul(u64::from(ROUNDS)) + Duration::from_millis(500);
    let mut next = 0usize;
    let mut now = Instant::ZERO;
    let step = Duration::from_millis(1);
    let mut send = |link: &mut Vec<InFlight>,
                    rep: &mut Report,
                    rng: &mut Rng,
                    now: Instant,
                    to_device: bool,
                    frame: Vec<u8>| {
        let lost = rng.chance(cfg.loss * 4.0);
        if cfg.trace {
            let at = time_base + Duration(now.as_nanos());
            rep.trace.push(TraceFrame {
                at,
                frame: frame.clone(),
                lost,
            });
        }
        if lost {
            return;
        }
        let copies = if rng.chance(cfg.duplicate * 4.0) {
            2
        } else {
            1
        };
        for _ in 0..copies {
            order += 1;
            let delay = Duration(rng.next() % 5_000_000);
            link.push(InFlight {
                at: now + delay,
                order,
                to_device,
                frame: frame.clone(),
            });
        }
    };
    while now <= end {
        // The controller's requests due now.
        while next < script.len() && script[next].0 <= now {
            let req = &script[next].1;
            let dst = if req.service_id == ServiceId::Identify {
                MacAddr::DCP_IDENTIFY
            } else {
                DEV
            };
            if let Ok(f) = req.build_frame(dst, CTL, None) {
                send(&mut link, rep, &mut rng, now, true, f);
            }
            next += 1;
        }
        // Deliveries.
        link.sort_by_key(|f| (f.at, f.order));
        let due = link.iter().take_while(|f| f.at <= now).count();
        let mut out: Vec<Vec<u8>> = Vec::new();
        for f in link.drain(..due).collect::<Vec<_>>() {
            if !f.to_device {
                continue;
            }
            let Ok((_, _, req)) = DcpRepr::parse_frame(&f.frame) else {
                continue;
            };
            let name_before = dev.identity().station_name.clone();
            let o = dev.on_frame(&f.frame, f.at);
            if req.service_id == ServiceId::Identify {
                let matched = req.identify_filter_matches(&current_values(&name_before));
                let e = received.entry(req.xid).or_insert(Received {
                    at: f.at,
                    copies: 0,
                    matched,
                    factor: req.response_delay,
                });
                e.copies += 1;
            }
            if let Some(name) = set_names.get(&req.xid) {
                if dev.identity().station_name != *name {
                    rep.violations.push(format!(
                        "dcp t={} us: a Set NameOfStation '{name}' arrived and the device's name \
                         is '{}'",
                        f.at.as_nanos() / 1000,
                        dev.identity().station_name
                    ));
                }
                if o.frames.is_empty() {
                    rep.violations.push(format!(
                        "dcp t={} us: a Set NameOfStation got no answer",
                        f.at.as_nanos() / 1000
                    ));
                }
            }
            out.extend(o.frames);
        }
        out.extend(dev.poll(now));
        for f in out {
            if let Ok((_, _, r)) = DcpRepr::parse_frame(&f) {
                if r.service_id == ServiceId::Identify && r.service_type != ServiceType::Request {
                    answers.entry(r.xid).or_default().push(now);
                }
            }
            send(&mut link, rep, &mut rng, now, false, f);
        }
        now += step;
    }
    // Judge what the device sent against what it received.
    let slack = Duration::from_millis(2);
    let mut xids: Vec<&u32> = received.keys().collect();
    xids.sort();
    for x in xids {
        let r = &received[x];
        let sent = answers.get(x).map_or(&[][..], |v| &v[..]);
        let t = r.at.as_nanos() / 1000;
        if !r.matched {
            if !sent.is_empty() {
                rep.violations.push(format!(
                    "dcp t={t} us: Identify xid {x:#x} did not match the device's name and was \
                     answered"
                ));
            }
            continue;
        }
        if sent.is_empty() || sent.len() > r.copies as usize {
            rep.violations.push(format!(
                "dcp t={t} us: Identify xid {x:#x} (delivered {} times) answered {} times",
                r.copies,
                sent.len()
            ));
            continue;
        }
        let bound = response_delay(DEV, r.factor) + slack;
        let window = collect_window(r.factor, Duration::ZERO);
        if sent[0].saturating_since(r.at) > bound || bound > window + slack {
            rep.violations.push(format!(
                "dcp t={t} us: Identify xid {x:#x} answered after {} us (factor {}, bound {} us)",
                sent[0].saturating_since(r.at).as_nanos() / 1000,
                r.factor,
                bound.as_nanos() / 1000
            ));
        }
    }
    rep.dcp_identifies_answered += answers.values().map(|v| v.len() as u64).sum::<u64>();
}

/// The device's filter values for a name (what an Identify by name is matched against).
fn current_values(name: &str) -> Vec<crate::wire::dcp::DcpValue> {
    vec![crate::wire::dcp::DcpValue::NameOfStation(
        name.as_bytes().to_vec(),
    )]
}

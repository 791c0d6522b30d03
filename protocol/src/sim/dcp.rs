//! DCP in simulated time: the device's DCP responder ([`DcpResponder`], what the daemon and
//! the farm run) and the controller's DCP client ([`DcpClient`], what pn-controller runs) over
//! a link with loss, duplicates and delays. Each second the controller identifies all devices
//! (a random ResponseDelayFactor), renames the device (temporarily or permanently, two Set
//! exchanges, each retransmitted by the client while unanswered) and looks for it by its old
//! and its new name.
//!
//! Invariants of the device, judged at the device (what it sent, whatever the link then lost):
//! * an Identify request whose filter matches the device's name when it arrives is answered,
//!   once per copy at most and at least once, within the response-delay window of its factor;
//! * a request whose filter does not match is not answered;
//! * a Set NameOfStation that arrives is answered, and the device carries the new name after it.
//!
//! Invariants of the client, judged against what reached the controller:
//! * an exchange reports exactly the answers that arrived while it waited for them: Identify
//!   all, every device that answered its Xid within the window, once each; a first-answer
//!   exchange, the answer that arrived first (and it ends there), nothing when none arrived in
//!   any attempt's window;
//! * an Identify by name reports only a device of that name; a Set the device answered is OK.

use std::collections::HashMap;
use std::net::Ipv4Addr;

use super::{Plant, Report, Rng, SimConfig, TraceFrame};
use crate::machine::dcp_client::{DcpClient, DcpClientEvent, DcpOutcome, DcpRequest, ExchangeId};
use crate::machine::dcp_delay::{collect_window, response_delay, DEFAULT_COLLECT_MARGIN};
use crate::machine::dcp_responder::{DcpIdentity, DcpResponder};
use crate::time::{Duration, Instant};
use crate::wire::dcp::{DcpRepr, DcpValue, NameOfStation, ServiceId, ServiceType};
use crate::wire::ethernet::MacAddr;

const DEV: MacAddr = MacAddr([0x02, 0, 0, 0, 0x12, 0x34]);
const CTL: MacAddr = MacAddr([0x02, 0, 0, 0, 0, 0x01]);
const ROUNDS: u32 = 6;
const ROUND: Duration = Duration::from_millis(1000);
/// The part ends here at the latest (the service part starts 10 s after the DCP part): the
/// last round's Set may take three attempts of 1 s.
const HARD_END: Duration = Duration::from_millis(9_500);

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

/// One exchange of the client, as the simulator watches it.
struct Watch {
    service: ServiceId,
    collects_all: bool,
    /// Identify by name: the name asked for; Set: the name set.
    name: String,
    /// Per send: its Xid and when it was current (from, to).
    attempts: Vec<(u32, Instant, Option<Instant>)>,
}

/// A DCP answer that reached the controller.
struct Arrival {
    at: Instant,
    src: MacAddr,
    xid: u32,
    service: ServiceId,
}

struct World<'a> {
    cfg: &'a SimConfig,
    time_base: Instant,
    rng: Rng,
    dev: DcpResponder,
    ctl: DcpClient,
    link: Vec<InFlight>,
    order: u64,
    received: HashMap<u32, Received>,
    answers: HashMap<u32, Vec<Instant>>,
    set_names: HashMap<u32, String>,
    watches: HashMap<ExchangeId, Watch>,
    arrivals: Vec<Arrival>,
}

/// Run the DCP part of `cfg`'s seed, adding to `rep`; `time_base`: where it starts on the
/// run's time line (for the trace).
pub fn run(cfg: &SimConfig, rep: &mut Report, time_base: Instant) {
    let mut rng = Rng::new(cfg.seed ^ 0xDC9D_C9DC_9DC9_DC9D);
    let Some(script) = script(&mut rng) else {
        rep.violations
            .push("dcp: invalid name in the script".into());
        return;
    };
    let mut w = World {
        cfg,
        time_base,
        rng,
        dev: DcpResponder::new(identity(), Instant::ZERO),
        ctl: DcpClient::new(CTL, 0x5EED_0000),
        link: Vec::new(),
        order: 0,
        received: HashMap::new(),
        answers: HashMap::new(),
        set_names: HashMap::new(),
        watches: HashMap::new(),
        arrivals: Vec::new(),
    };
    let end = Instant::ZERO + ROUND.saturating_mul(u64::from(ROUNDS)) + Duration::from_millis(500);
    let mut next = 0usize;
    let mut now = Instant::ZERO;
    // On to the end of the script, then until every exchange has ended and the link is empty.
    while now <= end
        || (now <= Instant::ZERO + HARD_END
            && (w.ctl.poll_timeout().is_some() || !w.link.is_empty()))
    {
        while next < script.len() && script[next].0 <= now {
            let (_, req, name) = script[next].clone();
            w.start(rep, now, req, name);
            next += 1;
        }
        w.deliver(rep, now);
        w.ctl.handle_timeout(now);
        w.flush_client(rep, now);
        for f in w.dev.poll(now) {
            w.device_sent(rep, now, f);
        }
        now += Duration::from_millis(1);
    }
    for (id, watch) in &w.watches {
        rep.violations.push(format!(
            "dcp: the client's exchange {id:?} (xid {:#x}) never ended",
            watch.attempts.last().map_or(0, |a| a.0)
        ));
    }
    w.judge_device(rep);
}

/// The device's identity at the start.
fn identity() -> DcpIdentity {
    DcpIdentity {
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
    }
}

/// The controller's script: per round, Identify all, rename (two Set exchanges), look for the
/// old and the new name. Each entry: when, what, and the name it sets or asks for.
fn script(rng: &mut Rng) -> Option<Vec<(Instant, DcpRequest, String)>> {
    let mut script = Vec::new();
    let mut old = "dev-0".to_string();
    for r in 0..ROUNDS {
        let t0 = Instant::ZERO + ROUND.saturating_mul(u64::from(r));
        let at = |ms| t0 + Duration::from_millis(ms);
        let factor = 1 + (rng.next() % 30) as u16;
        let new = format!("dev-{}", r + 1);
        let (new_n, old_n) = (
            NameOfStation::new(&new).ok()?,
            NameOfStation::new(&old).ok()?,
        );
        let permanent = rng.chance(0.5);
        let all = DcpRequest::IdentifyAll {
            response_delay_factor: factor,
            margin: DEFAULT_COLLECT_MARGIN,
        };
        script.push((at(0), all, String::new()));
        for k in 0..2 {
            let set = DcpRequest::set_name(DEV, Some(&new_n), permanent);
            script.push((at(400 + 50 * k), set, new.clone()));
        }
        // Each attempt waits for the slowest slot of the factor and a margin.
        let timeout = collect_window(factor, Duration::from_millis(50)).saturating_mul(2);
        for (ms, name) in [(600, old_n), (650, new_n)] {
            let req = DcpRequest::IdentifyName {
                name: name.clone(),
                response_delay_factor: factor,
                timeout,
            };
            script.push((at(ms), req, name.as_str().to_string()));
        }
        old = new;
    }
    script.sort_by_key(|(t, _, _)| *t);
    Some(script)
}

impl World<'_> {
    fn send(&mut self, rep: &mut Report, now: Instant, to_device: bool, frame: Vec<u8>) {
        let lost = self.rng.chance(self.cfg.loss * 4.0);
        if self.cfg.trace {
            rep.trace.push(TraceFrame {
                at: self.time_base + Duration(now.as_nanos()),
                frame: frame.clone(),
                lost,
            });
        }
        if lost {
            return;
        }
        let copies = if self.rng.chance(self.cfg.duplicate * 4.0) {
            2
        } else {
            1
        };
        for _ in 0..copies {
            self.order += 1;
            let delay = Duration(self.rng.next() % 5_000_000);
            self.link.push(InFlight {
                at: now + delay,
                order: self.order,
                to_device,
                frame: frame.clone(),
            });
        }
    }

    fn start(&mut self, rep: &mut Report, now: Instant, req: DcpRequest, name: String) {
        let (service, collects_all) = (req.service(), req.collects_all());
        match self.ctl.start(now, req) {
            Ok(id) => {
                let watch = Watch {
                    service,
                    collects_all,
                    name,
                    attempts: Vec::new(),
                };
                self.watches.insert(id, watch);
                self.flush_client(rep, now);
            }
            Err(e) => rep
                .violations
                .push(format!("dcp: the client refused a request: {e}")),
        }
    }

    /// Send the client's frames, and judge the exchanges it finished.
    fn flush_client(&mut self, rep: &mut Report, now: Instant) {
        while let Some(t) = self.ctl.poll_transmit() {
            if let Some(w) = self.watches.get_mut(&t.exchange) {
                if let Some(last) = w.attempts.last_mut() {
                    last.2 = Some(now);
                }
                w.attempts.push((t.xid, now, None));
                if w.service == ServiceId::Set {
                    self.set_names.insert(t.xid, w.name.clone());
                }
            }
            self.send(rep, now, true, t.frame);
        }
        while let Some(ev) = self.ctl.poll_event() {
            match self.watches.remove(&ev.exchange) {
                Some(w) => self.judge_exchange(rep, now, w, &ev),
                None => rep
                    .violations
                    .push(format!("dcp: an event for an unknown exchange: {ev:?}")),
            }
        }
    }

    /// Hand the frames due now to their receiver.
    fn deliver(&mut self, rep: &mut Report, now: Instant) {
        self.link.sort_by_key(|f| (f.at, f.order));
        let due = self.link.iter().take_while(|f| f.at <= now).count();
        for f in self.link.drain(..due).collect::<Vec<_>>() {
            if f.to_device {
                // Immediate answers go out on the step, as the device's thread sends them.
                for out in self.device_received(rep, f.at, &f.frame) {
                    self.device_sent(rep, now, out);
                }
                continue;
            }
            let Ok((eth, _, d)) = DcpRepr::parse_frame(&f.frame) else {
                continue;
            };
            if d.service_type.is_response() {
                self.arrivals.push(Arrival {
                    at: now,
                    src: eth.src,
                    xid: d.xid,
                    service: d.service_id,
                });
            }
            // The controller's receive loop takes frames at the step's time (1 ms grid).
            self.ctl.handle_response(now, eth.src, &d);
            self.flush_client(rep, now);
        }
    }

    /// A frame arrives at the device at `at`; returns what it answers at once.
    fn device_received(&mut self, rep: &mut Report, at: Instant, frame: &[u8]) -> Vec<Vec<u8>> {
        let Ok((_, _, req)) = DcpRepr::parse_frame(frame) else {
            return Vec::new();
        };
        let name_before = self.dev.identity().station_name.clone();
        let o = if self.cfg.plant == Some(Plant::IdentifyFilterIgnored)
            && req.service_id == ServiceId::Identify
        {
            // The planted responder answers every Identify as if it were an Identify all.
            let all = DcpRepr::identify_request_all(req.xid, req.response_delay);
            match all.build_frame(MacAddr::DCP_IDENTIFY, CTL, None) {
                Ok(f) => self.dev.on_frame(&f, at),
                Err(_) => self.dev.on_frame(frame, at),
            }
        } else {
            self.dev.on_frame(frame, at)
        };
        if req.service_id == ServiceId::Identify {
            let own = [DcpValue::NameOfStation(name_before.into_bytes())];
            let matched = req.identify_filter_matches(&own);
            let e = self.received.entry(req.xid).or_insert(Received {
                at,
                copies: 0,
                matched,
                factor: req.response_delay,
            });
            e.copies += 1;
        }
        if let Some(name) = self.set_names.get(&req.xid) {
            let t = at.as_nanos() / 1000;
            let has = &self.dev.identity().station_name;
            if has != name {
                rep.violations.push(format!(
                    "dcp t={t} us: a Set NameOfStation '{name}' arrived and the device's name \
                     is '{has}'"
                ));
            }
            if o.frames.is_empty() {
                rep.violations
                    .push(format!("dcp t={t} us: a Set NameOfStation got no answer"));
            }
        }
        o.frames
    }

    fn device_sent(&mut self, rep: &mut Report, now: Instant, f: Vec<u8>) {
        if let Ok((_, _, r)) = DcpRepr::parse_frame(&f) {
            if r.service_id == ServiceId::Identify && r.service_type != ServiceType::Request {
                self.answers.entry(r.xid).or_default().push(now);
            }
        }
        self.send(rep, now, false, f);
    }

    /// The client's report of a finished exchange against what reached the controller.
    fn judge_exchange(&self, rep: &mut Report, now: Instant, mut w: Watch, ev: &DcpClientEvent) {
        if let Some(last) = w.attempts.last_mut() {
            last.2 = Some(now);
        }
        let t = now.as_nanos() / 1000;
        // Answers that arrived while an attempt waited (its end excluded: a first answer
        // ends the exchange at its own arrival, and at a deadline the deadline goes first).
        let within = |a: &Arrival| {
            a.service == w.service
                && w.attempts.iter().any(|&(x, from, to)| {
                    a.xid == x && a.at >= from && to.is_some_and(|to| a.at < to)
                })
        };
        let mut heard: Vec<MacAddr> = Vec::new();
        for a in self.arrivals.iter().filter(|a| within(a)) {
            if !heard.contains(&a.src) {
                heard.push(a.src);
            }
        }
        let xid = w.attempts.last().map_or(0, |a| a.0);
        let first = |mac: MacAddr| {
            self.arrivals
                .iter()
                .any(|a| a.at == now && a.xid == xid && a.src == mac && a.service == w.service)
        };
        let wrong = match &ev.outcome {
            DcpOutcome::Identified(v) if w.collects_all => {
                let mut got: Vec<MacAddr> = v.iter().map(|i| i.mac).collect();
                let n = got.len();
                got.sort_by_key(|m| m.0);
                got.dedup();
                heard.sort_by_key(|m| m.0);
                (got != heard || n != got.len())
                    .then(|| format!("reported {n} devices {got:?}, {heard:?} answered in time"))
            }
            _ if w.collects_all => Some(format!("a wrong outcome {:?}", ev.outcome)),
            _ if !heard.is_empty() => Some(format!(
                "went on after an answer from {heard:?}: {:?}",
                ev.outcome
            )),
            DcpOutcome::Found(Some(i)) if i.name_of_station != w.name || !first(i.mac) => {
                Some(format!(
                    "found '{}' at {} asking for '{}'",
                    i.name_of_station, i.mac, w.name
                ))
            }
            DcpOutcome::Got(Some((m, _))) if !first(*m) => Some(format!("got an answer from {m}")),
            DcpOutcome::Set(Some(r)) if !r.is_ok() || !first(DEV) => {
                Some(format!("Set result {}", r.describe()))
            }
            _ => None,
        };
        if let Some(why) = wrong {
            rep.violations.push(format!(
                "dcp t={t} us: the client's {:?} exchange (xid {xid:#x}) {why}",
                w.service
            ));
        }
    }

    /// What the device sent against what it received.
    fn judge_device(&self, rep: &mut Report) {
        let slack = Duration::from_millis(2);
        let mut xids: Vec<&u32> = self.received.keys().collect();
        xids.sort();
        for x in xids {
            let r = &self.received[x];
            let sent = self.answers.get(x).map_or(&[][..], |v| &v[..]);
            let t = r.at.as_nanos() / 1000;
            if !r.matched {
                if !sent.is_empty() {
                    rep.violations.push(format!(
                        "dcp t={t} us: Identify xid {x:#x} did not match the device's name and \
                         was answered"
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
                    "dcp t={t} us: Identify xid {x:#x} answered after {} us (factor {}, bound {} \
                     us)",
                    sent[0].saturating_since(r.at).as_nanos() / 1000,
                    r.factor,
                    bound.as_nanos() / 1000
                ));
            }
        }
        rep.dcp_identifies_answered += self.answers.values().map(|v| v.len() as u64).sum::<u64>();
    }
}

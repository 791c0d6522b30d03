//! Connection management in simulated time: the device's CMDEV ([`Cmdev`], what the daemon
//! runs) and the controller's CMCTL ([`Cmctl`], what pn-controller runs) exchange UDP
//! datagrams over a seeded link with loss, duplicates, delays (which reorder) and link flaps
//! at the device. The controller connects, writes and reads back records, sometimes releases,
//! and reconnects after every end; after a quiet tail both must agree on one AR in data
//! exchange.
//!
//! The cyclic layer is [`super::run`]'s subject; here its consequences are modelled in the
//! simplest way that keeps both machines honest: a peer whose AR ended stops providing, so
//! the other side's data-hold supervision ends its AR one data-hold time later.
//!
//! Invariants, checked as the run goes:
//! * the device ends an AR only for a cause the standard names, with the abort reason of that
//!   cause (no CMInitiatorActivityTimeout in data exchange, no data-hold expiry before it, a
//!   Release only when the controller sent one, ...);
//! * the device enters data exchange only for the AR the controller has established;
//! * a record write the device confirmed reads back with the written bytes;
//! * after the quiet tail both sides are in data exchange on the same AR.

use crate::wire::Emit;
use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};

use super::{Plant, Report, Rng, SimConfig, TraceFrame};
use crate::machine::cmctl::{
    server, Cmctl, CmctlConfig, CmctlError, CmctlEvent, CmctlState, RecordId, RpcClientConfig, Via,
};
use crate::machine::cmdev::connect::ConnectLimits;
use crate::machine::cmdev::{
    ArPhase, Cmdev, CmdevApp, CmdevConfig, CmdevEvent, EndCause, IoArPlan,
};
use crate::machine::data_hold;
use crate::time::{Duration, Instant};
use crate::wire::ethernet::MacAddr;
use crate::wire::ip::{udp_frame, PNIO_CM_PORT};
use crate::wire::pnio::cm::ConnectRequest;
use crate::wire::pnio::example;
use crate::wire::pnio::record::RecordAddress;
use crate::wire::pnio::PnioStatus;
use crate::wire::rpc::Uuid;
use crate::wire::rta::abort_reason;

const DEV_IP: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);
const CTL_IP: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
const CTL_CLIENT_PORT: u16 = 49152;
const DEV_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x02];
const CTL_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x01];
/// The example request's cycle and DataHoldFactor: 1 ms x 3.
const DATA_HOLD: Duration = Duration::from_millis(3);
/// Impairments and operations end here; the tail is quiet.
const ACTIVE: Duration = Duration::from_millis(20_000);
/// The quiet tail: long enough for every RPC retry chain and a reconnect to finish.
const TAIL: Duration = Duration::from_millis(15_000);
/// The controller's pause before it connects again after an AR ended.
const RECONNECT_AFTER: Duration = Duration::from_millis(1_000);

fn dev_addr() -> SocketAddrV4 {
    SocketAddrV4::new(DEV_IP, PNIO_CM_PORT)
}

/// The device application of the simulation: a record store keyed by address.
struct App {
    records: HashMap<(u16, u16, u16), Vec<u8>>,
    /// With [`Plant::LostWriteOnFlap`]: writes within five seconds of this instant (the
    /// recovery after a link flap) are confirmed but not kept.
    flap_at: Option<Instant>,
    now: Instant,
    plant: Option<Plant>,
}

impl CmdevApp for App {
    type Plan = ();
    fn plan_io_ar(
        &mut self,
        req: &ConnectRequest,
        _limits: &ConnectLimits,
    ) -> Result<IoArPlan<()>, PnioStatus> {
        let input = req.iocrs.first().map_or(0x8001, |c| c.frame_id);
        Ok(IoArPlan {
            input_frame_id: input,
            output_frame_id: 0x8002,
            module_diff: None,
            data_hold: DATA_HOLD,
            plan: (),
        })
    }
    fn link_up(&mut self) -> bool {
        true
    }
    fn read_record(&mut self, a: &RecordAddress) -> Result<Vec<u8>, PnioStatus> {
        self.records
            .get(&(a.slot, a.subslot, a.index))
            .cloned()
            .ok_or(PnioStatus::new(0xDE, 0x80, 0xB0, 0x00))
    }
    fn write_record(&mut self, a: &RecordAddress, data: &[u8]) -> Result<(), PnioStatus> {
        let lost = self.plant == Some(Plant::LostWriteOnFlap)
            && self
                .flap_at
                .is_some_and(|f| self.now.saturating_since(f) < Duration::from_millis(5000));
        if !lost {
            self.records
                .insert((a.slot, a.subslot, a.index), data.to_vec());
        }
        Ok(())
    }
}

struct Datagram {
    at: Instant,
    order: u64,
    from: SocketAddrV4,
    to: SocketAddrV4,
    bytes: Vec<u8>,
}

/// The controller's view of one AR and what the simulator expects of it.
struct CtlAr {
    m: Cmctl,
    established: bool,
    /// Record writes in flight (id -> address, data) and read-backs (id -> expected data).
    writes: HashMap<RecordId, (RecordAddress, Vec<u8>)>,
    reads: HashMap<RecordId, Vec<u8>>,
    released: bool,
}

struct Sim<'a> {
    cfg: &'a SimConfig,
    rng: Rng,
    now: Instant,
    order: u64,
    in_flight: Vec<Datagram>,
    dev: Cmdev<()>,
    app: App,
    ctl: Option<CtlAr>,
    ars: u16,
    writes: u16,
    next_connect: Option<Instant>,
    link_down_until: Option<Instant>,
    /// The device's AR ended / the controller's AR ended, at: the other side's data-hold
    /// supervision ends its AR one data-hold time later (the cyclic frames stopped).
    dev_silent_since: Option<Instant>,
    ctl_silent_since: Option<(Uuid, Instant)>,
    /// When the controller started providing for the AR in data exchange (the device's
    /// first output frame arrives one cycle later).
    ctl_providing_since: Option<(Uuid, Instant)>,
    /// The ARs the controller released (the device may end them as released).
    released: Vec<Uuid>,
    established: Vec<Uuid>,
    next_op: Instant,
    rep: &'a mut Report,
    time_base: Instant,
}

/// Run the connection-management simulation of `cfg`'s seed, adding to `rep`.
pub fn run(cfg: &SimConfig, rep: &mut Report, time_base: Instant) {
    let mut rng = Rng::new(cfg.seed ^ 0xC0DE_C0DE_C0DE_C0DE);
    let mut seed = [0u8; 16];
    seed[..8].copy_from_slice(&rng.next().to_le_bytes());
    let dev = Cmdev::new(CmdevConfig::new(1, DEV_MAC, seed));
    let mut s = Sim {
        cfg,
        rng,
        now: Instant::ZERO,
        order: 0,
        in_flight: Vec::new(),
        dev,
        app: App {
            records: HashMap::new(),
            flap_at: None,
            now: Instant::ZERO,
            plant: cfg.plant,
        },
        ctl: None,
        ars: 0,
        writes: 0,
        next_connect: Some(Instant::ZERO),
        link_down_until: None,
        dev_silent_since: None,
        ctl_silent_since: None,
        ctl_providing_since: None,
        released: Vec::new(),
        established: Vec::new(),
        next_op: Instant::ZERO,
        rep,
        time_base,
    };
    s.run();
}

impl Sim<'_> {
    fn impaired(&self) -> bool {
        self.now < Instant::ZERO + ACTIVE
    }

    fn note(&mut self, what: impl FnOnce() -> String) {
        let at = self.time_base + Duration(self.now.as_nanos());
        self.rep.note(self.cfg.trace, at, what);
    }

    fn violation(&mut self, what: String) {
        let t = self.now.as_nanos() / 1000;
        self.rep.violations.push(format!("cm t={t} us: {what}"));
    }

    fn run(&mut self) {
        let end = Instant::ZERO + ACTIVE + TAIL;
        let mut steps = 0u32;
        while self.now <= end {
            steps += 1;
            if steps > 1_000_000 {
                self.violation(
                    "the simulation stopped making progress (a timer that never clears)".into(),
                );
                return;
            }
            self.deliver();
            self.app.now = self.now;
            self.dev.handle_timeout(self.now);
            if let Some(c) = self.ctl.as_mut() {
                c.m.handle_timeout(self.now);
            }
            self.cyclic_consequences();
            self.operations();
            self.pump();
            let Some(next) = self.next_instant() else {
                break;
            };
            self.now = next.max(self.now + Duration(1));
        }
        self.final_check();
    }

    /// The earliest instant anything is due.
    fn next_instant(&self) -> Option<Instant> {
        let mut t: Option<Instant> = None;
        let mut at = |x: Option<Instant>| {
            if let Some(x) = x {
                t = Some(t.map_or(x, |y| y.min(x)));
            }
        };
        at(self.in_flight.iter().map(|d| d.at).min());
        at(self.dev.poll_timeout());
        at(self.ctl.as_ref().and_then(|c| c.m.poll_timeout()));
        at(self.next_connect);
        at(self.link_down_until);
        at(self.dev_silent_since.map(|s| s + DATA_HOLD));
        at(self.ctl_silent_since.map(|(_, s)| s + DATA_HOLD));
        // The device's first output frame, once it is in data exchange on that AR.
        let dev_in_data = self.dev.io_ar().is_some_and(|a| a.phase == ArPhase::Data);
        if dev_in_data {
            at(self
                .ctl_providing_since
                .map(|(_, s)| s + Duration::from_millis(1)));
        }
        if self.impaired() {
            at(Some(self.next_op));
        }
        // Keep going through the tail even when nothing is scheduled.
        at(Some(Instant::ZERO + ACTIVE + TAIL + Duration(1)));
        t
    }

    fn send(&mut self, from: SocketAddrV4, to: SocketAddrV4, bytes: Vec<u8>) {
        let impaired = self.impaired();
        let device_down = self.link_down_until.is_some();
        let lost = device_down || (impaired && self.rng.chance(self.cfg.loss * 4.0));
        if self.cfg.trace {
            let (sm, dm) = if *from.ip() == DEV_IP {
                (DEV_MAC, CTL_MAC)
            } else {
                (CTL_MAC, DEV_MAC)
            };
            if let Ok(frame) =
                udp_frame(sm, dm, *from.ip(), *to.ip(), from.port(), to.port(), &bytes)
            {
                let at = self.time_base + Duration(self.now.as_nanos());
                self.rep.trace.push(TraceFrame { at, frame, lost });
            }
        }
        if lost {
            return;
        }
        let copies = if impaired && self.rng.chance(self.cfg.duplicate * 4.0) {
            2
        } else {
            1
        };
        for _ in 0..copies {
            let delay = if impaired {
                Duration(self.rng.next() % 20_000_000)
            } else {
                Duration::from_micros(200)
            };
            self.order += 1;
            self.in_flight.push(Datagram {
                at: self.now + delay,
                order: self.order,
                from,
                to,
                bytes: bytes.clone(),
            });
        }
    }

    fn deliver(&mut self) {
        self.in_flight.sort_by_key(|d| (d.at, d.order));
        let due = self
            .in_flight
            .iter()
            .take_while(|d| d.at <= self.now)
            .count();
        let batch: Vec<Datagram> = self.in_flight.drain(..due).collect();
        for d in batch {
            if self.link_down_until.is_some() {
                continue;
            }
            if *d.to.ip() == DEV_IP {
                self.app.now = d.at;
                self.dev
                    .handle_datagram(d.at, SocketAddr::V4(d.from), &d.bytes, &mut self.app);
                continue;
            }
            // To the controller: its AR's machine, or the answer for an AR it does not have.
            match server::classify(&d.bytes) {
                server::Inbound::ApplicationReady { ar_uuid }
                    if !self.ctl.as_ref().is_some_and(|c| c.m.ar_uuid() == ar_uuid) =>
                {
                    if let Some(r) = server::refuse_unknown_ar(&d.bytes) {
                        let from = SocketAddrV4::new(CTL_IP, PNIO_CM_PORT);
                        self.send(from, d.from, r);
                    }
                }
                server::Inbound::Refuse(r) => {
                    let from = SocketAddrV4::new(CTL_IP, d.to.port());
                    self.send(from, d.from, r);
                }
                _ => {
                    if let Some(c) = self.ctl.as_mut() {
                        c.m.handle_datagram(d.at, d.from, &d.bytes);
                    }
                }
            }
        }
    }

    /// Send what both machines give, and act on their events.
    fn pump(&mut self) {
        for _ in 0..64 {
            let mut moved = false;
            while let Some(d) = self.dev.poll_transmit() {
                moved = true;
                if let SocketAddr::V4(to) = d.to {
                    self.send(dev_addr(), to, d.bytes);
                }
            }
            while let Some(d) = self.ctl.as_mut().and_then(|c| c.m.poll_transmit()) {
                moved = true;
                let port = match d.via {
                    Via::Client => CTL_CLIENT_PORT,
                    Via::Server => PNIO_CM_PORT,
                };
                self.send(SocketAddrV4::new(CTL_IP, port), d.to, d.bytes);
            }
            while let Some(ev) = self.dev.poll_event() {
                moved = true;
                self.on_device_event(ev);
            }
            while let Some(ev) = self.ctl.as_mut().and_then(|c| c.m.poll_event()) {
                moved = true;
                self.on_controller_event(ev);
            }
            if !moved {
                return;
            }
        }
    }

    fn on_device_event(&mut self, ev: CmdevEvent<()>) {
        match ev {
            CmdevEvent::ConnectRefused { status, why, .. } => {
                self.note(|| format!("device refused a Connect: {} ({why})", status.in_words()));
            }
            CmdevEvent::IoArConnected { ar, .. } => {
                self.dev_silent_since = None;
                self.note(|| format!("device accepted the Connect of AR {}", ar.ar_uuid));
            }
            CmdevEvent::DataExchange { ar } => {
                self.note(|| format!("device in data exchange, AR {}", ar.ar_uuid));
                if !self.established.contains(&ar.ar_uuid) {
                    self.violation(format!(
                        "the device entered data exchange for AR {} which the controller \
                         has not established",
                        ar.ar_uuid
                    ));
                }
            }
            CmdevEvent::IoArEnded {
                reason,
                rta,
                cause,
                reached_data,
                ..
            } => {
                self.note(|| format!("device ended its AR: {reason}"));
                self.check_end(&reason, rta, cause, reached_data);
                self.dev_silent_since = Some(self.now);
                self.ctl_providing_since = None;
            }
        }
    }

    /// The abort reason must be the one of the cause.
    fn check_end(&mut self, reason: &str, rta: Option<PnioStatus>, cause: EndCause, data: bool) {
        let code = rta.map(|s| s.error_code2);
        let ok = match (cause, code) {
            (EndCause::ReleasedByController, None) => {
                let last = self.released.last().copied();
                last.is_some()
            }
            (EndCause::Fault, None) => reason == "link down",
            (EndCause::Fault, Some(abort_reason::AR_CMI_TIMEOUT)) => !data,
            (EndCause::Fault, Some(abort_reason::AR_CONSUMER_DHT_EXPIRED)) => data,
            (EndCause::Fault, Some(abort_reason::AR_RE_RUN_ABORTS_EXISTING)) => true,
            (EndCause::Fault, Some(abort_reason::AR_RPC_CONTROL_ERROR)) => !data,
            _ => false,
        };
        if !ok {
            self.violation(format!(
                "the device ended an AR {} data exchange for '{reason}' with abort reason {:?} \
                 ({cause:?}): not the reason of that cause",
                if data { "in" } else { "before" },
                rta.map(abort_reason::status_text)
            ));
        }
    }

    fn on_controller_event(&mut self, ev: CmctlEvent) {
        let Some(ar) = self.ctl.as_ref().map(|c| c.m.ar_uuid()) else {
            return;
        };
        match ev {
            CmctlEvent::Connected(_) | CmctlEvent::ParameterEnd => {}
            CmctlEvent::Established => {
                let twice = self.ctl.as_mut().is_some_and(|c| {
                    let was = c.established;
                    c.established = true;
                    was
                });
                if twice {
                    self.violation(format!("the controller established AR {ar} twice"));
                }
                self.established.push(ar);
                self.ctl_providing_since = Some((ar, self.now));
                self.note(|| format!("controller established AR {ar}"));
            }
            CmctlEvent::Failed { phase, error } => {
                self.note(|| format!("controller: {} failed: {error}", phase.service()));
                self.controller_ar_ended();
            }
            CmctlEvent::Released => {
                self.note(|| format!("controller released AR {ar}"));
                self.controller_ar_ended();
            }
            CmctlEvent::RecordDone { id, result } => self.record_done(id, result),
        }
    }

    fn record_done(&mut self, id: RecordId, result: Result<Vec<u8>, CmctlError>) {
        let now = self.now;
        let Some(c) = self.ctl.as_mut() else {
            return;
        };
        if let Some((addr, data)) = c.writes.remove(&id) {
            if result.is_ok() {
                // Confirmed: it must read back.
                let rid = c.m.read_record(now, addr, 64);
                c.reads.insert(rid, data);
            }
            return;
        }
        // A read-back the transport lost proves nothing; a device's answer must be the data.
        let wrong = match (c.reads.remove(&id), result) {
            (Some(expected), Ok(got)) if got != expected => {
                Some(format!("{got:02x?}, not {expected:02x?}"))
            }
            (Some(expected), Err(CmctlError::Rejected(st))) => {
                Some(format!("refused ({}), not {expected:02x?}", st.in_words()))
            }
            _ => None,
        };
        if let Some(w) = wrong {
            self.violation(format!("a confirmed record write reads back as {w}"));
        }
    }

    fn controller_ar_ended(&mut self) {
        if let Some(c) = self.ctl.as_mut() {
            c.m.abort();
            if c.established {
                self.ctl_silent_since = Some((c.m.ar_uuid(), self.now));
            }
        }
        self.ctl = None;
        self.ctl_providing_since = None;
        self.next_connect = Some(self.now + RECONNECT_AFTER);
    }

    /// What the cyclic layer would do: a side whose AR ended stops providing, and the other
    /// side's supervision ends its AR a data-hold time later.
    fn cyclic_consequences(&mut self) {
        if let Some((ar, since)) = self.ctl_providing_since {
            let in_data = self
                .dev
                .io_ar()
                .is_some_and(|a| a.ar.ar_uuid == ar && a.phase == ArPhase::Data);
            if in_data && self.now >= since + Duration::from_millis(1) {
                self.dev.handle_first_output_frame();
                self.ctl_providing_since = None;
            }
        }
        if let Some((ar, since)) = self.ctl_silent_since {
            if self.now >= since + DATA_HOLD {
                self.ctl_silent_since = None;
                let same = self.dev.io_ar().is_some_and(|a| a.ar.ar_uuid == ar);
                let in_data = self.dev.io_ar().is_some_and(|a| a.phase == ArPhase::Data);
                if same && in_data {
                    let code = if self.cfg.plant == Some(Plant::WrongAbortReason) {
                        abort_reason::AR_CMI_TIMEOUT
                    } else {
                        data_hold::ABORT_REASON
                    };
                    self.dev.end_io_ar(
                        "watchdog: no valid frame from the controller within the data-hold time",
                        Some(abort_reason::status(code)),
                        EndCause::Fault,
                    );
                }
            }
        }
        if let Some(since) = self.dev_silent_since {
            if self.now >= since + DATA_HOLD {
                self.dev_silent_since = None;
                if self.ctl.as_ref().is_some_and(|c| c.established) {
                    self.note(|| "controller's data-hold timer expired".into());
                    self.controller_ar_ended();
                }
            }
        }
        if self.link_down_until.is_some_and(|t| self.now >= t) {
            self.link_down_until = None;
            self.dev.handle_link(true);
            self.note(|| "device link up".into());
        }
    }

    /// The controller's scripted operations while the run is impaired.
    fn operations(&mut self) {
        if self.next_connect.is_some_and(|t| self.now >= t) {
            self.next_connect = None;
            self.connect();
        }
        if !self.impaired() || self.now < self.next_op {
            return;
        }
        self.next_op = self.now + Duration::from_millis(200 + self.rng.next() % 2000);
        let roll = self.rng.next() % 100;
        let established = self.ctl.as_ref().is_some_and(|c| c.established);
        if roll < 50 && established {
            // A new index per write: a read-back then has one right answer, whatever else
            // is queued.
            self.writes = self.writes.wrapping_add(1);
            let addr = RecordAddress::new(0, 1, 1, 0x0100 + self.writes % 0x7000);
            let data: Vec<u8> = (0..1 + self.rng.next() % 16)
                .map(|_| self.rng.next() as u8)
                .collect();
            let now = self.now;
            if let Some(c) = self.ctl.as_mut() {
                let id = c.m.write_record(now, addr, &data);
                c.writes.insert(id, (addr, data));
            }
        } else if roll < 60 && established {
            let now = self.now;
            if let Some(c) = self.ctl.as_mut() {
                c.released = true;
                self.released.push(c.m.ar_uuid());
                c.m.release(now);
            }
        } else if roll < 65 && established {
            // The controller stops without a word (its program stopped, its cable pulled):
            // the device's data-hold supervision must end the AR.
            self.note(|| "controller stops providing (no Release)".into());
            self.controller_ar_ended();
        } else if roll < 75 && self.link_down_until.is_none() {
            let down = Duration::from_millis(50 + self.rng.next() % 500);
            self.link_down_until = Some(self.now + down);
            self.app.flap_at = Some(self.now);
            self.dev.handle_link(false);
            self.note(|| format!("device link down for {} ms", down.as_nanos() / 1_000_000));
        }
    }

    fn connect(&mut self) {
        self.ars = self.ars.wrapping_add(1);
        let mut req = example::connect_request();
        let mut uuid = [0u8; 16];
        uuid[..8].copy_from_slice(&self.rng.next().to_le_bytes());
        uuid[8..].copy_from_slice(&self.rng.next().to_le_bytes());
        req.ar.ar_uuid = Uuid::from_bytes(uuid);
        req.ar.session_key = self.ars;
        req.ar.cm_initiator_mac = CTL_MAC;
        let Ok(bytes) = req.to_bytes() else {
            self.violation("the example Connect request does not encode".into());
            return;
        };
        let mut activity = uuid;
        activity[0] ^= 0xA5;
        let cfg = CmctlConfig {
            ar_uuid: req.ar.ar_uuid,
            session_key: self.ars,
            device: dev_addr(),
            object: req.ar.cm_initiator_object_uuid,
            activity: Uuid::from_bytes(activity),
            device_mac: MacAddr(DEV_MAC),
            connect_request: bytes,
            parameters: vec![(RecordAddress::new(0, 1, 1, 0x0001), vec![1, 2, 3, 4])],
            first_record_seq: 0,
            rpc: RpcClientConfig::default(),
            app_ready_timeout: Duration::from_millis(5000),
        };
        let m = Cmctl::new(cfg, self.now);
        self.note(|| format!("controller connects, AR {}", m.ar_uuid()));
        self.ctl = Some(CtlAr {
            m,
            established: false,
            writes: HashMap::new(),
            reads: HashMap::new(),
            released: false,
        });
    }

    fn final_check(&mut self) {
        let ctl = self
            .ctl
            .as_ref()
            .filter(|c| c.established && c.m.state() == CmctlState::Established)
            .map(|c| c.m.ar_uuid());
        let dev = self
            .dev
            .io_ar()
            .filter(|a| a.phase == ArPhase::Data)
            .map(|a| a.ar.ar_uuid);
        if ctl.is_none() || ctl != dev {
            self.violation(format!(
                "after the quiet tail the controller's AR is {ctl:?} and the device's {dev:?}: \
                 not one AR in data exchange on both sides"
            ));
        }
        self.rep.ars_established += self.established.len() as u64;
    }
}

//! A deterministic simulator of both peers' real-time machines in simulated time: the device's
//! and the controller's cyclic provider and consumer (CPM/PPM with the data-hold supervision)
//! and the alarm CR (the device's [`AlarmCr`], the controller's [`AlarmReceiver`], both over
//! the RTA machines), joined by a simulated link with seeded loss,
//! loss bursts, duplication, delay (which reorders) and provider stalls. The machines are the
//! protocol crate's own, the ones the daemon and the controller run; only the link and the clock
//! are simulated.
//!
//! After every step the simulator checks invariants against its own record of what it
//! delivered (not against the machines' counters):
//! * **no early trip**: a consumer reports a data-hold expiry only when no new frame reached it
//!   for more than the data-hold time (before the first frame: for `first_frame_timeout`);
//! * **no missed trip**: a consumer that received nothing new for longer than that reports
//!   the expiry by the next step;
//! * **alarms in order, once**: what the controller receives is the device's alarms in the
//!   order sent, none twice; without a transport timeout every alarm arrives;
//! * **alarms acknowledged**: every alarm the controller received is acknowledged back to
//!   the device (its AlarmAck reaches the device's AlarmCR), none that it did not receive.
//!
//! A run is a pure function of its [`SimConfig`]: a failing seed replays step by step
//! (`pn-lab sim --seed N`), and [`Report::trace`] holds every frame on the link for a pcap.
//!
//! The other parts run after it on the same time line: connection management (`cm.rs`), DCP
//! (`dcp.rs`) and the device service (`service.rs`: the runtime state table, the licence
//! recheck, restarts from the remanent data, LLDP). Not yet simulated: ResetToFactory and
//! reload in the service part, the LLDP neighbour.

use crate::machine::alarm_cr::{AlarmCr, AlarmOutcome};
use crate::machine::alarm_receiver::{AlarmReceiver, ReceiverEvent};
use crate::machine::cyclic::{
    first_frame_timeout, Consumer, ConsumerEvent, CyclicTiming, Provider,
};
use crate::machine::data_hold::{DataHold, STALL_GUARD};
use crate::time::{Duration, Instant};
use crate::wire::ethernet::{ethertype, EthernetRepr, MacAddr, VlanTag};
use crate::wire::pnio::diagnosis::UserStructure;
use crate::wire::rt::FrameId;

mod cm;
mod dcp;
mod link;
mod service;

use link::Link;

const DEV: MacAddr = MacAddr([0x02, 0, 0, 0, 0, 0x02]);
const CTL: MacAddr = MacAddr([0x02, 0, 0, 0, 0, 0x01]);
const IN_FID: FrameId = FrameId(0x8001);
const OUT_FID: FrameId = FrameId(0x8000);

/// A bug planted on purpose, to show that the invariants catch it (`pn-lab sim --plant`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plant {
    /// The device's consumer is set up with one DataHoldFactor less than agreed (an off-by-one
    /// in the data-hold supervision).
    WatchdogOffByOne,
    /// The controller drops one received alarm (a lost alarm).
    LoseOneAlarm,
    /// The controller takes its first alarm but never sends its AlarmAck (the device's
    /// alarm stays unacknowledged).
    AlarmAckNeverSent,
    /// The device confirms record writes that arrive within five seconds of a link flap but
    /// does not keep them (a lost write on a flap).
    LostWriteOnFlap,
    /// The device ends an AR whose controller went silent with CMInitiatorActivityTimeout
    /// instead of the data-hold expiry (a wrong abort reason).
    WrongAbortReason,
    /// The service takes an AR's data exchange without asking the state table (also a late
    /// one, after the slave stopped).
    LateExchangeTaken,
    /// The service's licence recheck finds the licence invalid and does not stop the slave.
    LicenceRecheckIgnored,
    /// The device stores a temporary DCP Set NameOfStation as if it were permanent.
    TemporaryNameKept,
    /// The device does not tell its LLDP agent about a new NameOfStation.
    LldpStaleName,
    /// The device's DCP responder ignores an Identify's filter and answers every Identify as
    /// if it were an Identify all.
    IdentifyFilterIgnored,
}

/// One simulated run.
#[derive(Debug, Clone, PartialEq)]
pub struct SimConfig {
    pub seed: u64,
    /// Simulated time.
    pub duration: Duration,
    pub send_clock_factor: u16,
    pub reduction_ratio: u16,
    pub data_hold_factor: u16,
    /// Probability that a frame is lost (per frame, per direction).
    pub loss: f64,
    /// Probability that a loss burst starts at a frame, and its longest length (frames).
    pub burst: (f64, u32),
    /// Probability that a frame is delivered twice.
    pub duplicate: f64,
    /// Largest extra delay of a frame (delays reorder frames).
    pub max_delay: Duration,
    /// Probability per cycle that a provider stalls, and the longest stall (cycles).
    pub stall: (f64, u32),
    /// Alarms the device sends during the run.
    pub alarms: u32,
    /// Record every frame on the link in [`Report::trace`].
    pub trace: bool,
    pub plant: Option<Plant>,
}

impl SimConfig {
    /// The seed's run with its impairments drawn from the seed: 4 ms or 1 ms cycles,
    /// DataHoldFactor 3..8, loss up to 5 %, bursts, duplicates, delays up to half a cycle,
    /// stalls.
    pub fn for_seed(seed: u64) -> SimConfig {
        let mut r = Rng::new(seed ^ 0x5EED_5EED_5EED_5EED);
        let (scf, rr) = if r.chance(0.5) { (32, 4) } else { (32, 1) };
        let cycle_ns = u64::from(scf) * u64::from(rr) * 31_250;
        SimConfig {
            seed,
            duration: Duration::from_millis(1500),
            send_clock_factor: scf,
            reduction_ratio: rr,
            data_hold_factor: 3 + (r.next() % 6) as u16,
            loss: r.unit() * 0.05,
            burst: (r.unit() * 0.02, 1 + (r.next() % 10) as u32),
            duplicate: r.unit() * 0.02,
            max_delay: Duration(r.next() % (cycle_ns / 2 + 1)),
            stall: (r.unit() * 0.01, 1 + (r.next() % 8) as u32),
            alarms: (r.next() % 4) as u32,
            trace: false,
            plant: None,
        }
    }
}

/// A frame on the simulated link.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceFrame {
    /// When it was sent.
    pub at: Instant,
    /// The Ethernet frame.
    pub frame: Vec<u8>,
    /// Lost on the link.
    pub lost: bool,
}

/// What a run saw.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Report {
    pub frames_sent: u64,
    pub frames_lost: u64,
    /// Data-hold expiries: device's consumer, controller's consumer.
    pub trips: [u64; 2],
    pub alarms_sent: u64,
    pub alarms_delivered: u64,
    /// AlarmAcks of the controller that reached the device's AlarmCR.
    pub alarms_acked: u64,
    pub rta_timeouts: u64,
    /// ARs the controller established in the connection-management part of the run.
    pub ars_established: u64,
    /// Identify responses the device sent in the DCP part of the run.
    pub dcp_identifies_answered: u64,
    /// Invariant violations, with their simulated time.
    pub violations: Vec<String>,
    pub trace: Vec<TraceFrame>,
    /// With `trace`: what the machines decided, with its simulated time (trips, alarms
    /// delivered, transport give-ups), for the step-by-step replay.
    pub events: Vec<(Instant, String)>,
}

impl Report {
    fn note(&mut self, trace: bool, at: Instant, what: impl FnOnce() -> String) {
        if trace {
            self.events.push((at, what()));
        }
    }
}

/// Small deterministic PRNG (xorshift64*).
#[derive(Debug, Clone)]
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }
}

/// One direction's consumer and what the simulator knows it delivered to it.
struct Rx {
    consumer: Consumer,
    /// When the consumer was (re)started.
    started: Instant,
    /// When the simulator last delivered a frame with new data (a CycleCounter ahead of the
    /// last delivered one).
    last_new: Option<Instant>,
    last_counter: Option<u16>,
    /// The device side only: its data-hold timer (the daemon's own `DataHold`), running from
    /// the first valid frame, and the simulator's count of the device's executed intervals
    /// since it last delivered new data.
    hold: Option<DataHold>,
    intervals_since_new: u64,
}

impl Rx {
    fn new(fid: FrameId, src: MacAddr, t: CyclicTiming, dhf: u16, now: Instant) -> Rx {
        Rx {
            consumer: Consumer::new(fid, t, dhf, now)
                .with_source(src)
                .with_c_sdu_len(40),
            started: now,
            last_new: None,
            last_counter: None,
            hold: None,
            intervals_since_new: 0,
        }
    }
}

struct Side {
    provider: Provider,
    rx: Rx,
    stalled_until: Instant,
}

/// The cyclic part of one simulation: both sides' providers and consumers, the alarm
/// transport and the simulated link, stepped over simulated time ([`Cyclic::step`]) with the
/// invariants checked after every step.
struct Cyclic<'a> {
    cfg: &'a SimConfig,
    rep: Report,
    t: CyclicTiming,
    rng: Rng,
    dhf: u16,
    dht: Duration,
    /// The simulation's time step (a quarter of the cycle).
    step: Duration,
    /// The device's DataHoldFactor (one less with the planted off-by-one).
    dev_dhf: u16,
    dev_dht: Duration,
    limit: u64,
    /// Side 0: the device (provides the input CR, consumes the output CR); side 1: the
    /// controller.
    sides: [Side; 2],
    dev_alarms: AlarmCr,
    ctl_alarms: AlarmReceiver,
    alarm_times: Vec<Instant>,
    next_alarm: u32,
    /// Sequence numbers: of the alarms the controller received, and of the AlarmAcks the
    /// device's AlarmCR received.
    delivered: Vec<u32>,
    acked: Vec<u32>,
    link: Link,
    buf: [u8; 256],
}

impl<'a> Cyclic<'a> {
    /// `None` for a timing the standard does not allow.
    fn new(cfg: &'a SimConfig) -> Option<Cyclic<'a>> {
        let t = CyclicTiming::new(cfg.send_clock_factor, cfg.reduction_ratio).ok()?;
        let mut rng = Rng::new(cfg.seed);
        let dhf = cfg.data_hold_factor.max(1);
        let dht = t.interval().saturating_mul(u64::from(dhf));
        let step = Duration((t.interval().0 / 4).max(1));
        let eth = |src, dst| EthernetRepr {
            dst,
            src,
            vlan: Some(VlanTag::RT_CYCLIC),
            ethertype: ethertype::PROFINET,
        };
        let dev_dhf = match cfg.plant {
            Some(Plant::WatchdogOffByOne) => dhf.saturating_sub(1).max(1),
            _ => dhf,
        };
        let zero = Instant::ZERO;
        let sides = [
            Side {
                provider: Provider::new(eth(DEV, CTL), IN_FID, t, zero, 0),
                rx: Rx::new(OUT_FID, CTL, t, dev_dhf, zero),
                stalled_until: zero,
            },
            Side {
                provider: Provider::new(eth(CTL, DEV), OUT_FID, t, zero, 0),
                rx: Rx::new(IN_FID, DEV, t, dhf, zero),
                stalled_until: zero,
            },
        ];
        let alarm_times: Vec<Instant> = (0..cfg.alarms)
            .map(|_| Instant(rng.next() % cfg.duration.0.max(1)))
            .collect();
        Some(Cyclic {
            cfg,
            rep: Report::default(),
            t,
            rng,
            dhf,
            dht,
            step,
            dev_dhf,
            dev_dht: t.interval().saturating_mul(u64::from(dev_dhf)),
            limit: u64::from(dev_dhf),
            sides,
            // Alarm references 1 (device) and 2 (controller), timeout 100 ms, 3 retries.
            dev_alarms: AlarmCr::new(1, 2, 1, 3, DEV.0, CTL.0),
            ctl_alarms: AlarmReceiver::new(2, 1, 1, 3, CTL, DEV),
            alarm_times,
            next_alarm: 0,
            delivered: Vec::new(),
            acked: Vec::new(),
            link: Link::new(cfg.seed),
            buf: [0u8; 256],
        })
    }

    /// One step at `now`; `impaired`: loss, delay, duplication and stalls apply.
    fn step(&mut self, now: Instant, impaired: bool) {
        self.deliver(now);
        let device_tripped = self.providers(now, impaired);
        self.alarms(now, impaired);
        self.supervise(now, device_tripped);
    }

    fn deliver(&mut self, now: Instant) {
        // 1. Deliver what is due, in time order (same time: sending order), before anyone acts
        // at `now`: a frame that arrived before `now` is seen by a check made at `now`.
        self.link.in_flight.sort_by_key(|f| (f.at, f.order));
        let due = self
            .link
            .in_flight
            .iter()
            .take_while(|f| f.at <= now)
            .count();
        for f in self.link.in_flight.drain(..due).collect::<Vec<_>>() {
            let side = usize::from(!f.to_device);
            let Ok((e, payload)) = EthernetRepr::parse_frame(&f.frame) else {
                continue;
            };
            let fid = u16::from_be_bytes([payload[0], payload[1]]);
            if AlarmReceiver::priority_of(fid).is_some() {
                if f.to_device {
                    self.dev_alarms.handle(fid, &payload[2..], f.at);
                } else {
                    self.ctl_alarms.handle(fid, &payload[2..], f.at);
                }
                continue;
            }
            let rx = &mut self.sides[side].rx;
            // The simulator's own record: new data = a CycleCounter ahead of the last one
            // it delivered (the rule the standard gives, p-net pf_cpm_check_cycle).
            let counter = cycle_counter_of(payload);
            let new = match (rx.last_counter, counter) {
                (_, None) => false,
                (None, Some(_)) => true,
                (Some(last), Some(c)) => crate::machine::cyclic::cycle_advanced(last, c),
            };
            if new {
                rx.last_counter = counter;
                rx.last_new = Some(f.at);
                rx.intervals_since_new = 0;
            }
            rx.consumer.on_rt_payload(f.at, e.src, payload);
        }
    }

    /// Returns whether the device's data-hold timer tripped.
    fn providers(&mut self, now: Instant, impaired: bool) -> bool {
        let mut device_tripped = false;
        // 2. Providers send (unless stalled).
        for (i, side) in self.sides.iter_mut().enumerate() {
            if impaired && side.stalled_until <= now && self.rng.chance(self.cfg.stall.0 / 4.0) {
                let cycles = 1 + self.rng.next() % u64::from(self.cfg.stall.1.max(1));
                side.stalled_until = now + self.t.interval().saturating_mul(cycles);
            }
            if side.stalled_until > now {
                continue;
            }
            if let Ok(Some(n)) = side.provider.poll_send(now, &[i as u8; 8], &mut self.buf) {
                if i == 0 {
                    // The device's executed interval: its data-hold timer runs here, as in
                    // the daemon's real-time loop.
                    let rx = &mut side.rx;
                    rx.intervals_since_new += 1;
                    let frames = rx.consumer.stats().new_data;
                    if let Some(last) = rx.consumer.last_new_data() {
                        let hold = rx.hold.get_or_insert_with(|| {
                            DataHold::new(self.dev_dht, self.t.interval(), frames)
                        });
                        device_tripped |= hold.on_interval(now, frames, last).is_some();
                    }
                }
                self.link.send(
                    self.cfg,
                    &mut self.rep,
                    impaired,
                    now,
                    i == 1,
                    self.buf[..n].to_vec(),
                );
            }
        }
        device_tripped
    }

    fn alarms(&mut self, now: Instant, impaired: bool) {
        // 3. Alarms: the device's AlarmCR queues the diagnosis alarms due now (their sequence
        // numbers count from 0, so they identify the alarm: the runs send fewer than 2048);
        // both ends run and their frames go on the link.
        while self.next_alarm < self.cfg.alarms {
            if self.alarm_times[self.next_alarm as usize] > now {
                break;
            }
            let item = UserStructure::Other {
                usi: 0x1234,
                data: self.next_alarm.to_be_bytes().to_vec(),
            };
            if self
                .dev_alarms
                .send_diagnosis(1, 1, (1, 1), true, false, item, now)
                .is_ok()
            {
                self.rep.alarms_sent += 1;
            }
            self.next_alarm += 1;
        }
        let (mut frames, mut outcomes) = (Vec::new(), Vec::new());
        self.dev_alarms.poll(now, &mut frames, &mut outcomes);
        for o in outcomes {
            self.device_alarm_outcome(now, o);
        }
        for f in frames {
            self.link
                .send(self.cfg, &mut self.rep, impaired, now, false, f);
        }
        let mut events = Vec::new();
        self.ctl_alarms.poll_events(now, &mut events);
        for e in events {
            self.controller_alarm_event(now, e);
        }
        let mut frames = Vec::new();
        self.ctl_alarms.poll_transmit(&mut frames);
        for f in frames {
            self.link
                .send(self.cfg, &mut self.rep, impaired, now, true, f.frame);
        }
    }

    /// What the device's AlarmCR reported: an AlarmAck of the controller, or the transport
    /// giving up.
    fn device_alarm_outcome(&mut self, now: Instant, o: AlarmOutcome) {
        match o {
            AlarmOutcome::Acked { sequence, ok, .. } => {
                if !ok {
                    self.rep.violations.push(format!(
                        "t={} us: alarm {sequence} acknowledged negatively",
                        now.0 / 1000
                    ));
                }
                self.acked.push(u32::from(sequence));
            }
            AlarmOutcome::TransportFailed(_) => {
                self.rep.rta_timeouts += 1;
                self.rep.note(self.cfg.trace, now, || {
                    "the device's alarm transport gave up".into()
                });
            }
            AlarmOutcome::Received { .. } | AlarmOutcome::ControllerAborted(_) => {
                self.rep.violations.push(format!(
                    "t={} us: the device's AlarmCR reported {o:?}, but the controller sends \
                     no alarms and does not abort",
                    now.0 / 1000
                ));
            }
        }
    }

    /// What the controller's alarm receiver reported: a notification (acknowledged at once,
    /// except the one the planted bug drops), or its transport giving up.
    fn controller_alarm_event(&mut self, now: Instant, e: ReceiverEvent) {
        match e {
            ReceiverEvent::Notification { priority, alarm } => {
                let n = u32::from(alarm.specifier.sequence_number());
                if self.cfg.plant == Some(Plant::LoseOneAlarm) && n == 0 {
                    return;
                }
                self.delivered.push(n);
                let skip_ack = self.cfg.plant == Some(Plant::AlarmAckNeverSent) && n == 0;
                if !skip_ack && self.ctl_alarms.acknowledge(priority, &alarm, now).is_err() {
                    self.rep.violations.push(format!(
                        "t={} us: the controller could not queue the AlarmAck of alarm {n}",
                        now.0 / 1000
                    ));
                }
                self.rep.note(self.cfg.trace, now, || {
                    format!("alarm {n} delivered to the controller")
                });
            }
            ReceiverEvent::Timeout => {
                self.rep.rta_timeouts += 1;
                self.rep.note(self.cfg.trace, now, || {
                    "the controller's alarm transport gave up".into()
                });
            }
            ReceiverEvent::Undecodable(_) | ReceiverEvent::PeerAbort(_) => {
                self.rep.violations.push(format!(
                    "t={} us: the controller's alarm receiver reported {e:?}",
                    now.0 / 1000
                ));
            }
        }
    }

    fn supervise(&mut self, now: Instant, device_tripped: bool) {
        // 4. Consumers' supervision, checked against the record. The device supervises with
        // its data-hold timer once the first frame came (before it, the first-frame bound on
        // the clock, as CMDEV does); the controller with its consumer's clock.
        for (i, side) in self.sides.iter_mut().enumerate() {
            let stalled = side.stalled_until > now;
            let rx = &mut side.rx;
            let wall = matches!(rx.consumer.poll(now), Some(ConsumerEvent::WatchdogExpired));
            let running = i == 0 && rx.consumer.last_new_data().is_some();
            let expired = if i == 0 {
                device_tripped || (wall && !running)
            } else {
                wall
            };
            let since = rx.last_new.unwrap_or(rx.started);
            let bound = if rx.last_new.is_some() {
                self.dht
            } else {
                first_frame_timeout(self.dht)
            };
            let silent = now.saturating_since(since);
            let who = if i == 0 { "device" } else { "controller" };
            // Too early: before the data-hold time (the device's rule may trip exactly at
            // it, after DataHoldFactor executed intervals).
            let early = if running {
                silent < bound
            } else {
                silent <= bound
            };
            // Too late: the device after DataHoldFactor executed intervals past the data-hold
            // time (one interval of grace for the phase of its loop), or past the stall guard
            // while it runs; the controller's clock just past the bound.
            let overdue = if running {
                (rx.intervals_since_new > self.limit + 1 && silent > self.dht + self.t.interval())
                    || (!stalled && silent > self.dht + STALL_GUARD + self.t.interval() + self.step)
            } else {
                silent > bound + self.step
            };
            if expired {
                self.rep.trips[i] += 1;
                self.rep.note(self.cfg.trace, now, || {
                    format!(
                        "the {who}'s data-hold timer expired ({} us silent)",
                        silent.0 / 1000
                    )
                });
                if early {
                    self.rep.violations.push(format!(
                        "t={} us: the {who}'s consumer tripped after {} us without new data \
                     (data-hold bound {} us)",
                        now.0 / 1000,
                        silent.0 / 1000,
                        bound.0 / 1000
                    ));
                }
                // The AR ends; a new one starts with fresh consumers (and counters).
                let (fid, src, d) = if i == 0 {
                    (OUT_FID, CTL, self.dev_dhf)
                } else {
                    (IN_FID, DEV, self.dhf)
                };
                *rx = Rx::new(fid, src, self.t, d, now);
            } else if overdue {
                self.rep.violations.push(format!(
                    "t={} us: the {who}'s consumer has had no new data for {} us (bound {} us) \
                 and did not trip",
                    now.0 / 1000,
                    silent.0 / 1000,
                    bound.0 / 1000
                ));
                *rx = Rx::new(rx_fid(i), rx_src(i), self.t, self.dhf, now);
            }
        }
    }

    /// The end of the cyclic part: the alarm invariants, then the other parts on the same
    /// time line.
    fn finish(mut self, end: Instant) -> Report {
        self.rep.alarms_delivered = self.delivered.len() as u64;
        self.rep.alarms_acked = self.acked.len() as u64;
        // Alarms: in order, once; all of them unless the transport gave up.
        let in_order = self.delivered.windows(2).all(|w| w[0] < w[1]);
        if !in_order {
            self.rep.violations.push(format!(
                "alarms out of order or repeated: {:?}",
                self.delivered
            ));
        }
        if self.rep.rta_timeouts == 0 && self.rep.alarms_delivered != self.rep.alarms_sent {
            self.rep.violations.push(format!(
                "{} alarms sent, {} delivered ({:?}), and the transport never gave up",
                self.rep.alarms_sent, self.rep.alarms_delivered, self.delivered
            ));
        }
        // AlarmAcks: only for alarms the controller received, in order, once; for every one
        // of them unless a transport gave up.
        let mut acked = self.acked.clone();
        acked.dedup();
        if acked != self.acked || !self.acked.iter().all(|a| self.delivered.contains(a)) {
            self.rep.violations.push(format!(
                "AlarmAcks {:?} at the device for the alarms {:?} the controller received",
                self.acked, self.delivered
            ));
        }
        if self.rep.rta_timeouts == 0 && self.acked != self.delivered {
            self.rep.violations.push(format!(
                "alarms {:?} received by the controller, AlarmAcks {:?} at the device, and \
                 the transport never gave up",
                self.delivered, self.acked
            ));
        }
        // Connection management, after the cyclic part on the same time line.
        cm::run(self.cfg, &mut self.rep, end + self.step);
        // DCP, after connection management (which takes 35 s of simulated time).
        let dcp_start = end + self.step + Duration::from_millis(36_000);
        dcp::run(self.cfg, &mut self.rep, dcp_start);
        // The device service (state table, restarts, licence, LLDP), after DCP (at most 9.5 s).
        service::run(
            self.cfg,
            &mut self.rep,
            dcp_start + Duration::from_millis(10_000),
        );
        self.rep
    }
}

/// Run one simulation: the cyclic part over the configured duration plus a quiet tail without
/// impairments (which lets the alarm transport finish), then connection management, DCP and
/// the device service on the same time line.
pub fn run(cfg: &SimConfig) -> Report {
    let Some(mut c) = Cyclic::new(cfg) else {
        let mut rep = Report::default();
        rep.violations.push("invalid timing".into());
        return rep;
    };
    let quiet_from = Instant::ZERO + cfg.duration;
    let end = Instant::ZERO + cfg.duration + Duration::from_millis(1500);
    let mut now = Instant::ZERO;
    while now <= end {
        c.step(now, now < quiet_from);
        now += c.step;
    }
    c.finish(end)
}

fn rx_fid(side: usize) -> FrameId {
    if side == 0 {
        OUT_FID
    } else {
        IN_FID
    }
}

fn rx_src(side: usize) -> MacAddr {
    if side == 0 {
        CTL
    } else {
        DEV
    }
}

/// The CycleCounter of a 40-byte C_SDU cyclic frame's RT payload.
fn cycle_counter_of(payload: &[u8]) -> Option<u16> {
    let at = 2 + 40;
    Some(u16::from_be_bytes([
        *payload.get(at)?,
        *payload.get(at + 1)?,
    ]))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The seed's timing with no impairment at all.
    fn quiet(seed: u64) -> SimConfig {
        SimConfig {
            loss: 0.0,
            burst: (0.0, 1),
            duplicate: 0.0,
            max_delay: Duration(0),
            stall: (0.0, 1),
            ..SimConfig::for_seed(seed)
        }
    }

    #[test]
    fn a_quiet_link_has_no_trips_and_delivers_every_alarm() {
        let cfg = SimConfig {
            alarms: 3,
            ..quiet(1)
        };
        let r = run(&cfg);
        assert!(r.violations.is_empty(), "{:?}", r.violations);
        assert_eq!(r.trips, [0, 0]);
        assert_eq!(
            (r.alarms_sent, r.alarms_delivered, r.alarms_acked),
            (3, 3, 3)
        );
        assert!(r.frames_sent > 500);
    }

    #[test]
    fn seeds_hold_the_invariants_and_replay_exactly() {
        for seed in 1..=200 {
            let cfg = SimConfig::for_seed(seed);
            let r = run(&cfg);
            assert!(r.violations.is_empty(), "seed {seed}: {:?}", r.violations);
            assert_eq!(run(&cfg), r, "seed {seed} replays");
        }
    }

    /// A long loss burst on a link ends the AR: the supervision trips, and only then.
    #[test]
    fn a_burst_longer_than_the_data_hold_time_trips() {
        let cfg = SimConfig {
            burst: (0.01, 40),
            alarms: 0,
            data_hold_factor: 3,
            ..quiet(7)
        };
        let r = run(&cfg);
        assert!(r.violations.is_empty(), "{:?}", r.violations);
        assert!(r.trips[0] + r.trips[1] > 0, "{r:?}");
    }

    /// The planted bugs are caught by the invariants.
    #[test]
    fn planted_bugs_are_caught() {
        // Each plant is caught within a few seeds, by the invariant named here.
        let caught = |plant, by: &str| {
            (1..=300u64).find(|&seed| {
                let cfg = SimConfig {
                    plant: Some(plant),
                    ..SimConfig::for_seed(seed)
                };
                run(&cfg).violations.iter().any(|v| v.contains(by))
            })
        };
        assert!(caught(Plant::WatchdogOffByOne, "consumer tripped after").is_some());
        assert!(caught(Plant::LoseOneAlarm, "alarms sent").is_some());
        assert!(caught(
            Plant::AlarmAckNeverSent,
            "received by the controller, AlarmAcks"
        )
        .is_some());
        assert!(caught(Plant::LostWriteOnFlap, "confirmed record write reads back").is_some());
        assert!(caught(Plant::WrongAbortReason, "not the reason of that cause").is_some());
        assert!(caught(Plant::LateExchangeTaken, "from a state that does not run").is_some());
        assert!(caught(Plant::LicenceRecheckIgnored, "the slave still runs").is_some());
        assert!(caught(
            Plant::TemporaryNameKept,
            "after a restart the device starts with"
        )
        .is_some());
        assert!(caught(Plant::LldpStaleName, "the LLDPDU's Port ID is").is_some());
        assert!(caught(
            Plant::IdentifyFilterIgnored,
            "did not match the device's name"
        )
        .is_some());
        assert!(caught(Plant::IdentifyFilterIgnored, "asking for").is_some());
    }
}

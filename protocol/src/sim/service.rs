//! The device service in simulated time: the daemon's runtime state table
//! ([`service_state::transition`], HTTP contract §3), its remanent data
//! ([`remanent`]: which DCP Sets are kept, records, the name and IP a start takes), its DCP
//! responder and its LLDP agent, driven by a seeded script: `POST /api/start` and `/api/stop`,
//! an AR reaching and leaving data exchange (late ones too), DCP Set NameOfStation and IP
//! (permanent and temporary) through the real [`DcpResponder`] with its durability hook,
//! confirmed record writes, the periodic licence recheck with a licence that expires (and may
//! be renewed), and restarts: the process killed and started again, its machines re-created
//! from what is on "disk", as the daemon's `Runtime::new` and start do. Only the file, the
//! clock and the HTTP/AR sources are simulated. The stack's L2 part (DCP, LLDP) runs while the
//! slave runs, as the daemon's plane joins its threads on a stop.
//!
//! Invariants, judged against the simulator's own record (not the machines' answers):
//! * every observed state change is a row of the spec's table: DataExchange only on an
//!   established exchange from Initialized (or Aborted, a controller connecting again),
//!   Aborted only from DataExchange on its loss, Initialized only on a successful start,
//!   ConfigError only on a NIC/data-plane failure, Stopped on a stop and on a failed licence
//!   check, late AR events change nothing; `connected` is true exactly in DataExchange; a
//!   restarted process starts in Stopped;
//! * a licence recheck that fails while the slave runs leaves it stopped;
//! * after a restart the device starts with the NameOfStation and IP of the last permanent
//!   Set (a temporary Set leaves none: empty name, the configured IP), and every confirmed
//!   record write is still there with its bytes;
//! * while the slave runs the device sends an LLDPDU at once, then every `TX_INTERVAL`
//!   (not later, and sooner only after a change of its name or IP); each parses with the
//!   crate's LLDP codec and its Port ID carries the device's current NameOfStation.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::sync::{Arc, Mutex};

use super::{Plant, Report, Rng, SimConfig, TraceFrame};
use crate::machine::dcp_responder::{DcpEvent, DcpIdentity, DcpResponder};
use crate::machine::lldp::{LldpAgent, TX_INTERVAL};
use crate::machine::remanent::{Change, Remanent, StoredIp, StoredRecord};
use crate::machine::service_state::{transition, RunState, StartFailure, Trigger};
use crate::time::{Duration, Instant};
use crate::wire::dcp::{DcpRepr, NameOfStation};
use crate::wire::ethernet::MacAddr;
use crate::wire::lldp::LldpRepr;

const DEV: MacAddr = MacAddr([0x02, 0, 0, 0, 0x56, 0x78]);
const CTL: MacAddr = MacAddr([0x02, 0, 0, 0, 0, 0x01]);
const CONFIG_NAME: &str = "dev-cfg";
/// The simulated span of the script.
const SPAN: Duration = Duration::from_millis(90_000);
/// The licence recheck period (the daemon's `Licence:RecheckIntervalSeconds`, short here so
/// that a run sees several).
const RECHECK: Duration = Duration::from_millis(10_000);
/// The start result code of a refused licence (the daemon's ERR_INIT).
const ERR_INIT: i32 = -1;

fn configured_ip() -> StoredIp {
    StoredIp {
        ip: Ipv4Addr::new(10, 0, 0, 2),
        mask: Ipv4Addr::new(255, 255, 255, 0),
        gateway: Ipv4Addr::UNSPECIFIED,
    }
}

/// One step of the script.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Action {
    Start,
    Stop,
    ExchangeUp,
    ExchangeDown,
    SetName { permanent: bool },
    SetIp { permanent: bool },
    WriteRecord,
    Restart,
    LicenceRenewed,
}

/// The stack's L2 part while the slave runs: the DCP responder and the LLDP agent.
struct Stack {
    dcp: DcpResponder,
    lldp: LldpAgent,
    started: Instant,
    last_lldp: Option<Instant>,
    /// The name or IP changed since the last LLDPDU (an early one is then due).
    changed: bool,
}

/// One process of the daemon: what `Runtime` holds in memory.
struct Process {
    state: RunState,
    connected: bool,
    error_code: i32,
    /// The NameOfStation and IP suite now (a temporary Set changes them, not the disk).
    name: String,
    ip: StoredIp,
    stack: Option<Stack>,
    started_at: Instant,
}

/// What the simulator expects, from what it saw confirmed.
struct Expect {
    /// The NameOfStation and IP the next start of the process takes.
    start_name: String,
    start_ip: StoredIp,
    records: BTreeMap<(u16, u16, u16), Vec<u8>>,
    /// The licence is invalid since this time.
    licence_invalid: Option<Instant>,
}

struct Sim<'a> {
    cfg: &'a SimConfig,
    rep: &'a mut Report,
    base: Instant,
    rng: Rng,
    /// The remanent file: survives restarts.
    disk: Arc<Mutex<Remanent>>,
    p: Process,
    expect: Expect,
    xid: u32,
    renames: u32,
}

/// Run the service part of `cfg`'s seed, adding to `rep`; `time_base`: where it starts on the
/// run's time line (for the trace).
pub fn run(cfg: &SimConfig, rep: &mut Report, time_base: Instant) {
    let mut rng = Rng::new(cfg.seed ^ 0x5E41_CE5E_41CE_5E41);
    let script = script(&mut rng);
    let mut expiry = rng
        .chance(0.6)
        .then(|| Instant(rng.next() % SPAN.as_nanos()));
    let disk = Arc::new(Mutex::new(Remanent::default()));
    let mut s = Sim {
        cfg,
        rep,
        base: time_base,
        rng,
        disk: disk.clone(),
        p: Process::boot(&disk, Instant::ZERO),
        expect: Expect {
            start_name: CONFIG_NAME.into(),
            start_ip: configured_ip(),
            records: BTreeMap::new(),
            licence_invalid: None,
        },
        xid: 0x5E41_0000,
        renames: 0,
    };
    let end = Instant::ZERO + SPAN + Duration::from_millis(12_000);
    let mut next = 0usize;
    let mut now = Instant::ZERO;
    while now <= end {
        // The licence expires once; a new one installed later stays valid.
        if expiry.is_some_and(|e| e <= now) {
            expiry = None;
            s.expect.licence_invalid = Some(now);
            s.note(now, || "service: the licence expired".into());
        }
        while next < script.len() && script[next].0 <= now {
            s.act(now, script[next].1);
            next += 1;
        }
        if now.saturating_since(s.p.started_at).as_nanos() % RECHECK.as_nanos() == 0 {
            s.recheck(now);
        }
        s.poll_stack(now);
        // The next thing due: a script step, the next recheck, the stack's deadlines, or the
        // latest time the next LLDPDU may come (so that a stall is seen).
        let since = now.saturating_since(s.p.started_at).as_nanos();
        let mut wake = now + Duration(RECHECK.as_nanos() - since % RECHECK.as_nanos());
        if let Some((t, _)) = script.get(next) {
            wake = wake.min(*t);
        }
        if let Some(e) = expiry.filter(|e| *e > now) {
            wake = wake.min(e);
        }
        if let Some(st) = &s.p.stack {
            let late = st.last_lldp.unwrap_or(st.started) + TX_INTERVAL + Duration::from_millis(1);
            wake = wake.min(late);
            for d in [st.lldp.next_deadline(), st.dcp.next_deadline()]
                .into_iter()
                .flatten()
            {
                wake = wake.min(d.max(now + Duration(1)));
            }
        }
        now = wake.max(now + Duration(1));
    }
}

/// The seed's script: about forty steps over [`SPAN`].
fn script(rng: &mut Rng) -> Vec<(Instant, Action)> {
    let n = 30 + rng.next() % 20;
    let mut v: Vec<(Instant, Action)> = (0..n)
        .map(|_| {
            let at = Instant(rng.next() % SPAN.as_nanos() / 1_000_000 * 1_000_000);
            let a = match rng.next() % 100 {
                0..=19 => Action::Start,
                20..=26 => Action::Stop,
                27..=44 => Action::ExchangeUp,
                45..=54 => Action::ExchangeDown,
                55..=66 => Action::SetName {
                    permanent: rng.chance(0.5),
                },
                67..=72 => Action::SetIp {
                    permanent: rng.chance(0.5),
                },
                73..=84 => Action::WriteRecord,
                85..=93 => Action::Restart,
                _ => Action::LicenceRenewed,
            };
            (at, a)
        })
        .collect();
    // The run starts with a start, so every seed sees the slave run.
    v.push((Instant::ZERO, Action::Start));
    v.sort_by_key(|(t, _)| *t);
    v
}

impl Process {
    /// The daemon's `Runtime::new`: the remanent data read, the configuration's StationName
    /// recorded (the real rule, committed), the name and IP a start takes from it; Stopped.
    fn boot(disk: &Arc<Mutex<Remanent>>, now: Instant) -> Process {
        let mut d = disk.lock().unwrap_or_else(|p| p.into_inner());
        *d = Change::ConfigStationName(CONFIG_NAME.into()).applied_to(&d);
        Process {
            state: RunState::Stopped,
            connected: false,
            error_code: 0,
            name: d.start_station_name(CONFIG_NAME),
            ip: d.start_ip(configured_ip()),
            stack: None,
            started_at: now,
        }
    }
}

impl Sim<'_> {
    fn note(&mut self, at: Instant, what: impl FnOnce() -> String) {
        let at = self.base + Duration(at.as_nanos());
        self.rep.note(self.cfg.trace, at, what);
    }

    fn violation(&mut self, at: Instant, what: String) {
        self.rep.violations.push(format!(
            "service t={} ms: {what}",
            at.as_nanos() / 1_000_000
        ));
    }

    fn act(&mut self, now: Instant, a: Action) {
        let running = self.p.state.running();
        match a {
            Action::Start if running => self.apply(now, Trigger::StartWhileRunning),
            Action::Start if self.expect.licence_invalid.is_some() => {
                self.apply(now, Trigger::StartLicenceRefused { code: ERR_INIT })
            }
            Action::Start => self.start(now),
            Action::Stop => self.apply(now, Trigger::Stop),
            Action::ExchangeUp => self.apply(now, Trigger::ExchangeEstablished),
            Action::ExchangeDown => self.apply(now, Trigger::ExchangeLost),
            Action::SetName { permanent } => self.set_name(now, permanent),
            Action::SetIp { permanent } => self.set_ip(now, permanent),
            Action::WriteRecord if running => self.write_record(now),
            Action::WriteRecord => {}
            Action::Restart => self.restart(now),
            Action::LicenceRenewed => {
                if self.expect.licence_invalid.take().is_some() {
                    self.note(now, || "service: a new licence is installed".into());
                }
            }
        }
    }

    /// `POST /api/start` past the licence gate: now and then a failure the table names.
    fn start(&mut self, now: Instant) {
        let t = match self.rng.next() % 20 {
            0 => Trigger::StartNicOrConfigFailed { code: 19 },
            1 => Trigger::StartFailed {
                failure: [
                    StartFailure::DataPlaneOpen,
                    StartFailure::ControlPlane,
                    StartFailure::ReuseStack,
                    StartFailure::ReuseLoop,
                    StartFailure::StartPhase,
                ][(self.rng.next() % 5) as usize],
                code: -6,
            },
            _ => Trigger::Started,
        };
        self.apply(now, t);
    }

    /// Apply a trigger as the daemon's runtime does (the table's answer, taken as it is) and
    /// judge the observed change against the spec's rows.
    fn apply(&mut self, now: Instant, t: Trigger) {
        let from = self.p.state;
        let mut x = transition(from, t);
        if self.cfg.plant == Some(Plant::LateExchangeTaken) && t == Trigger::ExchangeEstablished {
            // The planted defect: the runtime takes the AR's data exchange without asking the
            // table, also when the slave no longer runs.
            x.to = RunState::DataExchange;
            x.connected = Some(true);
        }
        self.p.state = x.to;
        self.p.connected = x.connected.unwrap_or(self.p.connected);
        self.p.error_code = x.error_code.unwrap_or(self.p.error_code);
        if x.to != from || t == Trigger::Started {
            self.note(now, || {
                format!("service: {t:?}: {} -> {}", from.as_str(), x.to.as_str())
            });
        }
        self.judge(now, from, t);
        // The plane follows the state: started on a successful start, stopped when the slave
        // no longer runs.
        if t == Trigger::Started {
            self.start_stack(now);
        } else if !self.p.state.running() {
            self.p.stack = None;
        }
        if let Some(st) = self.p.stack.as_mut() {
            st.dcp.set_ar_active(self.p.state == RunState::DataExchange);
        }
    }

    /// The spec's table as rules on the observed change `from -> self.p.state` on `t`.
    fn judge(&mut self, now: Instant, from: RunState, t: Trigger) {
        use RunState::*;
        let to = self.p.state;
        let mut bad: Vec<String> = Vec::new();
        if self.p.connected != (to == DataExchange) {
            bad.push(format!("connected={} in {}", self.p.connected, to.as_str()));
        }
        let changed = to != from;
        if changed && to == DataExchange && t != Trigger::ExchangeEstablished {
            bad.push("DataExchange entered other than on an established exchange".into());
        }
        if changed && to == DataExchange && !matches!(from, Initialized | Aborted) {
            bad.push("DataExchange entered from a state that does not run".into());
        }
        if changed && to == Aborted && !(from == DataExchange && t == Trigger::ExchangeLost) {
            bad.push("Aborted entered other than on the loss of data exchange".into());
        }
        if changed && to == Initialized && t != Trigger::Started {
            bad.push("Initialized entered other than on a successful start".into());
        }
        let config_failure = matches!(
            t,
            Trigger::StartNicOrConfigFailed { .. }
                | Trigger::StartFailed {
                    failure: StartFailure::DataPlaneOpen,
                    ..
                }
        );
        if changed && to == ConfigError && !config_failure {
            bad.push("ConfigError entered other than on a NIC or data-plane failure".into());
        }
        let stops = matches!(
            t,
            Trigger::Stop
                | Trigger::LicenceRecheckFailed { .. }
                | Trigger::StartLicenceRefused { .. }
        );
        if stops && to != Stopped {
            bad.push("a stop or a failed licence check did not stop the slave".into());
        }
        if t == Trigger::Stop && self.p.error_code != 0 {
            bad.push(format!("errorCode {} after a stop", self.p.error_code));
        }
        let late =
            matches!(t, Trigger::ExchangeEstablished | Trigger::ExchangeLost) && !from.running();
        if (late || t == Trigger::StartWhileRunning) && changed {
            bad.push("an event the table has no row for changed the state".into());
        }
        for b in bad {
            self.violation(
                now,
                format!("{} --{t:?}--> {}: {b}", from.as_str(), to.as_str()),
            );
        }
    }

    /// The periodic licence recheck (every [`RECHECK`] from the process's start).
    fn recheck(&mut self, now: Instant) {
        let Some(since) = self.expect.licence_invalid else {
            return;
        };
        if !self.p.state.running() {
            return;
        }
        if self.cfg.plant != Some(Plant::LicenceRecheckIgnored) {
            self.apply(now, Trigger::LicenceRecheckFailed { code: ERR_INIT });
        }
        if self.p.state.running() {
            let ago = now.saturating_since(since).as_nanos() / 1_000_000;
            let state = self.p.state.as_str();
            self.violation(
                now,
                format!(
                    "the licence expired {ago} ms ago, the recheck ran and the slave still \
                     runs ({state})"
                ),
            );
        }
    }

    /// The plane's start: DCP and LLDP from the name and IP in force, the durability hook
    /// committing through the remanent rule.
    fn start_stack(&mut self, now: Instant) {
        let ip = self.p.ip;
        let cfg = configured_ip();
        let id = DcpIdentity {
            mac: DEV,
            station_name: self.p.name.clone(),
            device_vendor: "pn-device".into(),
            vendor_id: 0xFFFF,
            device_id: 1,
            ip: ip.ip,
            mask: ip.mask,
            gateway: ip.gateway,
            device_instance: (0, 1),
            device_initiative: false,
        };
        let disk = self.disk.clone();
        let plant = self.cfg.plant;
        let hook = Arc::new(move |ev: &DcpEvent| {
            let mut change = Change::of_dcp_event(ev);
            if let (Some(Plant::TemporaryNameKept), DcpEvent::NameAssigned { name, .. }) =
                (plant, ev)
            {
                change = Some(Change::station_name_set(name, true));
            }
            if let Some(c) = change {
                let mut d = disk.lock().unwrap_or_else(|p| p.into_inner());
                *d = c.applied_to(&d);
            }
            Ok(())
        });
        let dcp = DcpResponder::new(id, now)
            .with_configured(CONFIG_NAME, cfg.ip, cfg.mask, cfg.gateway)
            .with_durable(hook);
        let lldp = LldpAgent::new(DEV, &self.p.name, ip.ip, "pn-device sim".into(), 1, now);
        self.p.stack = Some(Stack {
            dcp,
            lldp,
            started: now,
            last_lldp: None,
            changed: false,
        });
    }
}

impl Sim<'_> {
    /// A controller's DCP Set through the device's responder (while the slave runs; the
    /// stack is down otherwise). What it answered is what the simulator expects to last.
    fn set(&mut self, now: Instant, req: DcpRepr) -> bool {
        let Some(st) = self.p.stack.as_mut() else {
            return false;
        };
        let Ok(f) = req.build_frame(DEV, CTL, None) else {
            return false;
        };
        let o = st.dcp.on_frame(&f, now);
        if self.cfg.trace {
            let at = self.base + Duration(now.as_nanos());
            for frame in std::iter::once(f).chain(o.frames.iter().cloned()) {
                self.rep.trace.push(TraceFrame {
                    at,
                    frame,
                    lost: false,
                });
            }
        }
        let mut abort = false;
        for ev in &o.events {
            // The runtime's side of the events (`stack/l2.rs`, `runtime/events.rs`): the
            // name and IP in force, the LLDP agent told, an AR aborted.
            match ev {
                DcpEvent::NameAssigned { name, .. } => {
                    if self.cfg.plant != Some(Plant::LldpStaleName) {
                        st.lldp.set_station_name(name, now);
                    }
                    st.changed |= *name != self.p.name;
                    self.p.name = name.clone();
                }
                DcpEvent::IpAssigned {
                    ip, mask, gateway, ..
                } => {
                    st.lldp.set_ip(*ip, now);
                    st.changed |= *ip != self.p.ip.ip;
                    self.p.ip = StoredIp {
                        ip: *ip,
                        mask: *mask,
                        gateway: *gateway,
                    };
                }
                DcpEvent::AbortArs { .. } => abort = true,
                _ => {}
            }
        }
        if abort {
            self.apply(now, Trigger::ExchangeLost);
        }
        !o.frames.is_empty() && !o.events.is_empty()
    }

    fn set_name(&mut self, now: Instant, permanent: bool) {
        self.renames += 1;
        self.xid += 1;
        let name = format!("dev-{}", self.renames);
        let Ok(n) = NameOfStation::new(&name) else {
            return;
        };
        if self.set(now, DcpRepr::set_name(self.xid, &n, permanent)) {
            self.note(now, || {
                format!("service: DCP Set NameOfStation '{name}' (permanent: {permanent})")
            });
            self.expect.start_name = if permanent { name } else { String::new() };
        }
    }

    fn set_ip(&mut self, now: Instant, permanent: bool) {
        self.xid += 1;
        let ip = StoredIp {
            ip: Ipv4Addr::new(10, 0, 0, 10 + (self.rng.next() % 200) as u8),
            ..configured_ip()
        };
        let req = DcpRepr::set_ip(self.xid, ip.ip, ip.mask, ip.gateway, permanent);
        if self.set(now, req) {
            self.note(now, || {
                format!("service: DCP Set IP {} (permanent: {permanent})", ip.ip)
            });
            self.expect.start_ip = if permanent { ip } else { configured_ip() };
        }
    }

    /// A record write the device confirms: committed through the remanent rule first (the
    /// daemon answers after the commit).
    fn write_record(&mut self, now: Instant) {
        let index = [0xAFF1, 0xAFF3, 0x0100, 0x0101][(self.rng.next() % 4) as usize];
        let mut data = vec![0u8; 6];
        data.extend(format!("w{:08x}", self.rng.next() as u32).bytes());
        let rec = StoredRecord {
            slot: 0,
            subslot: 1,
            index,
            data: data.clone(),
        };
        {
            let mut d = self.disk.lock().unwrap_or_else(|p| p.into_inner());
            *d = Change::Record(rec).applied_to(&d);
        }
        self.expect.records.insert((0, 1, index), data);
        self.note(now, || format!("service: record 0x{index:04X} written"));
    }

    /// The process killed and started again: memory gone, the disk kept.
    fn restart(&mut self, now: Instant) {
        self.p = Process::boot(&self.disk, now);
        let (name, ip) = (self.p.name.clone(), self.p.ip.ip);
        self.note(now, || {
            format!("service: restart (process killed); starts as '{name}' {ip}")
        });
        let mut bad = Vec::new();
        if (self.p.state, self.p.connected) != (RunState::Stopped, false) {
            bad.push(format!("starts in {}", self.p.state.as_str()));
        }
        if self.p.name != self.expect.start_name {
            bad.push(format!(
                "starts with NameOfStation '{}', expected '{}' (the last permanent Set, none \
                 after a temporary one)",
                self.p.name, self.expect.start_name
            ));
        }
        if self.p.ip != self.expect.start_ip {
            bad.push(format!(
                "starts with IP {}, expected {}",
                self.p.ip.ip, self.expect.start_ip.ip
            ));
        }
        let disk = self.disk.lock().unwrap_or_else(|p| p.into_inner()).clone();
        for ((slot, subslot, index), data) in &self.expect.records {
            let kept = disk.records.iter().find(|r| {
                (r.slot, r.subslot, r.index) == (*slot, *subslot, *index) && r.data == *data
            });
            if kept.is_none() {
                bad.push(format!(
                    "a confirmed write of record 0x{index:04X} was lost"
                ));
            }
        }
        for b in bad {
            self.violation(now, format!("after a restart the device {b}"));
        }
    }

    /// The stack's L2 part at `now`: DCP's delayed answers, LLDP's transmissions, judged.
    fn poll_stack(&mut self, now: Instant) {
        let Some(st) = self.p.stack.as_mut() else {
            return;
        };
        let _ = st.dcp.poll(now);
        let frame = st.lldp.poll(now);
        let last = st.last_lldp.unwrap_or(st.started);
        let changed = st.changed;
        let mut bad = Vec::new();
        let Some(frame) = frame else {
            if now.saturating_since(last) > TX_INTERVAL {
                bad.push(format!(
                    "no LLDPDU for {} ms (interval {} ms)",
                    now.saturating_since(last).as_nanos() / 1_000_000,
                    TX_INTERVAL.as_nanos() / 1_000_000
                ));
                // Judged once per silence.
                st.last_lldp = Some(now);
            }
            return self.report_lldp(now, bad);
        };
        let first = st.last_lldp.is_none();
        if (first && now > st.started) || (!first && !changed && now - last < TX_INTERVAL) {
            bad.push(format!(
                "an LLDPDU {} ms after the last one (interval {} ms, nothing changed)",
                now.saturating_since(last).as_nanos() / 1_000_000,
                TX_INTERVAL.as_nanos() / 1_000_000
            ));
        }
        st.last_lldp = Some(now);
        st.changed = false;
        let expected = match self.p.name.as_str() {
            "" => format!("port-001.{}", mac_string(DEV)),
            n => format!("port-001.{n}"),
        };
        match LldpRepr::parse_frame(&frame) {
            Ok((_, repr)) => {
                let port = repr.port_id().map(|(_, p)| p.to_vec()).unwrap_or_default();
                if port != expected.as_bytes() {
                    bad.push(format!(
                        "the LLDPDU's Port ID is '{}' while the device's NameOfStation is '{}'",
                        String::from_utf8_lossy(&port),
                        self.p.name
                    ));
                }
            }
            Err(e) => bad.push(format!("the device's LLDPDU does not parse: {e:?}")),
        }
        if self.cfg.trace {
            let at = self.base + Duration(now.as_nanos());
            self.rep.trace.push(TraceFrame {
                at,
                frame,
                lost: false,
            });
        }
        self.report_lldp(now, bad);
    }

    fn report_lldp(&mut self, now: Instant, bad: Vec<String>) {
        for b in bad {
            self.violation(now, format!("lldp: {b}"));
        }
    }
}

/// "XX-XX-..." as the Port ID names a device without a NameOfStation.
fn mac_string(mac: MacAddr) -> String {
    let m: Vec<String> = mac.0.iter().map(|b| format!("{b:02X}")).collect();
    m.join("-")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_seed(seed: u64, plant: Option<Plant>) -> Report {
        let cfg = SimConfig {
            plant,
            trace: true,
            ..SimConfig::for_seed(seed)
        };
        let mut rep = Report::default();
        run(&cfg, &mut rep, Instant::ZERO);
        rep
    }

    /// Seeds see restarts, renames and LLDP, and hold the invariants.
    #[test]
    fn seeds_restart_rename_and_hold() {
        let (mut restarts, mut renames, mut lldp) = (0, 0, 0);
        for seed in 1..=50 {
            let r = run_seed(seed, None);
            assert!(r.violations.is_empty(), "seed {seed}: {:?}", r.violations);
            let has = |s: &str| r.events.iter().filter(|(_, e)| e.contains(s)).count();
            restarts += has("restart");
            renames += has("Set NameOfStation");
            lldp += r.trace.len();
        }
        assert!(
            restarts > 50 && renames > 50 && lldp > 500,
            "{restarts} {renames} {lldp}"
        );
    }
}

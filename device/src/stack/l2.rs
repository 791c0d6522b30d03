//! The L2 services of the device composed on one thread (`pn-l2`): DCP responder, LLDP agent,
//! applying DCP-assigned IP addresses, and the SNMP and LLMNR responders (own threads).
//!
//! Wiring (done by the plane in `mod.rs`):
//! * the raw receive thread passes every DCP frame (FrameID 0xFEFC..=0xFEFF) and every LLDP
//!   frame (EtherType 0x88CC) to [`L2Services::on_frame`], which admits it by rate
//!   ([`Admission`]: token buckets per class, see docs/decisions.md "Floods") and copies the
//!   admitted ones into a bounded channel (the receive thread never waits for DCP work and a
//!   flood neither queues without bound nor makes the device answer every request);
//! * the link monitor passes every change to [`L2Services::on_link`];
//! * the connection manager reports AR establishment/release with
//!   [`L2Services::set_ar_active`] (DCP Set rules) and receives AR aborts requested by DCP
//!   through the `on_abort` callback given to [`L2Services::start`];
//! * `StackCommand::Reset` goes to [`L2Services::reset`];
//! * [`L2Services::status`] feeds `GET /api/diag` extras (neighbour, link speed, MAU type).
//!
//! Frames are sent through the `send` callback (the plane's raw socket).

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use pn_protocol::time::Instant;
use pn_protocol::wire::ethernet::MacAddr;
use serde::Serialize;
use tracing::{info, warn};

use crate::dataplane::{EventSink, Im0Config, StackConfig, StackEvent};

use super::dcp::{self, DcpEvent, DcpIdentity, DcpResponder};
use super::link::LinkInfo;
use super::lldp::{self, LldpAgent, LldpNeighbour};
use super::llmnr::{self, LlmnrIdentity, LlmnrServer};
use super::snmp::{self, SnmpServer, SystemInfo};

/// Sends one complete Ethernet frame; `false` on error.
pub type SendFn = Arc<dyn Fn(&[u8]) -> bool + Send + Sync>;
/// Called when DCP requires every AR to be aborted (reason text).
pub type AbortFn = Arc<dyn Fn(&'static str) + Send + Sync>;

/// Tells whether an AR is established.
pub type ArActiveFn = Arc<dyn Fn() -> bool + Send + Sync>;

/// What the L2 services need.
#[derive(Clone)]
pub struct L2Config {
    pub nic: String,
    pub ifindex: u32,
    /// Current values (effective name/IP, MAC, ids).
    pub identity: DcpIdentity,
    /// Target of DCP ResetToFactory: (name, ip, mask, gateway) of the configuration.
    pub configured: (String, Ipv4Addr, Ipv4Addr, Ipv4Addr),
    pub im0: Im0Config,
    /// SNMP sysLocation (the I&M1 tag location, as p-net does).
    pub location: String,
    /// SNMP agent address (`None` = off). Default 0.0.0.0:161.
    pub snmp: Option<SocketAddr>,
    /// LLMNR port (`None` = off). Default 5355.
    pub llmnr: Option<u16>,
    /// Configure the effective IP on the NIC at start (when not 0.0.0.0) and every DCP IP.
    pub apply_ip: bool,
    /// "An AR is established" as maintained by the connection manager (asked before every
    /// DCP request; [`L2Services::set_ar_active`] is the alternative).
    pub ar_active: Option<ArActiveFn>,
}

impl L2Config {
    /// From the plane's start configuration. The reset target is the effective values (see
    /// docs/protocol-notes/device-l2.md: the runtime should send `StackCommand::Reset` with
    /// the configured values after a DCP reset).
    pub fn from_stack_config(cfg: &StackConfig, mac: [u8; 6], ifindex: u32) -> L2Config {
        L2Config {
            nic: cfg.nic.clone(),
            ifindex,
            identity: DcpIdentity {
                mac: MacAddr(mac),
                station_name: cfg.station_name.clone(),
                device_vendor: cfg.device_name.clone(),
                vendor_id: cfg.vendor_id,
                device_id: cfg.device_id,
                ip: cfg.ip,
                mask: cfg.mask,
                gateway: cfg.gateway,
                device_instance: (0, 1),
                device_initiative: false,
            },
            configured: (cfg.station_name.clone(), cfg.ip, cfg.mask, cfg.gateway),
            im0: cfg.im0.clone(),
            location: cfg.im.tag_location.trim().to_string(),
            snmp: Some(snmp::default_addr()),
            llmnr: Some(llmnr::PORT),
            apply_ip: true,
            ar_active: None,
        }
    }
}

/// Status of the L2 services (extra fields of `GET /api/diag`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct L2Status {
    pub station_name: String,
    pub ip: String,
    pub link_speed_mbps: Option<u32>,
    pub link_full_duplex: Option<bool>,
    pub mau_type: u16,
    pub mau_type_substituted: bool,
    pub lldp_neighbour: Option<LldpNeighbour>,
    pub lldp_tx_frames: u64,
    pub dcp_rx_requests: u64,
    pub dcp_tx_responses: u64,
    pub dcp_signal_count: u64,
    /// Result of the last IP application ("" = none yet).
    pub ip_apply_message: String,
    /// SNMP / LLMNR responder state ("running on ..." or why not).
    pub snmp: String,
    pub llmnr: String,
    /// Frames not processed because their class exceeded its rate ([`Admission`]): DCP sent
    /// to a multicast/broadcast address (Identify All/Name, Hello), DCP sent to this device,
    /// LLDP.
    pub dcp_multicast_rate_limited: u64,
    pub dcp_unicast_rate_limited: u64,
    pub lldp_rate_limited: u64,
    /// Admitted frames dropped because the `pn-l2` thread's queue was full.
    pub l2_queue_full: u64,
    /// The IP suite in effect (address, mask, gateway) for the PDInterfaceDataReal record;
    /// not part of `GET /api/diag` (`ip` is).
    #[serde(skip)]
    pub ip_suite: [[u8; 4]; 3],
}

/// Rate limits of the L2 frame classes (frames per second, burst). The reasoning is in
/// docs/decisions.md "Floods"; `harness/tests/reliability_floods.rs` judges the running daemon
/// against those documented figures, so a change here changes the document and that test.
pub const DCP_MULTICAST_LIMIT: (u64, u64) = (50, 50);
pub const DCP_UNICAST_LIMIT: (u64, u64) = (200, 50);
pub const LLDP_LIMIT: (u64, u64) = (20, 20);
/// Received frames queued for the `pn-l2` thread at most.
pub const QUEUE_LEN: usize = 128;

/// A token bucket in nanosecond units: `rate` tokens per second, at most `burst` stored.
#[derive(Debug, Clone)]
struct Bucket {
    /// Tokens x 1e9.
    nano_tokens: u64,
    rate: u64,
    burst: u64,
    last_ns: u64,
}

impl Bucket {
    fn new((rate, burst): (u64, u64), now_ns: u64) -> Bucket {
        Bucket {
            nano_tokens: burst.saturating_mul(1_000_000_000),
            rate,
            burst,
            last_ns: now_ns,
        }
    }

    fn take(&mut self, now_ns: u64) -> bool {
        let dt = now_ns.saturating_sub(self.last_ns);
        self.last_ns = self.last_ns.max(now_ns);
        self.nano_tokens = self
            .nano_tokens
            .saturating_add(dt.saturating_mul(self.rate))
            .min(self.burst.saturating_mul(1_000_000_000));
        if self.nano_tokens >= 1_000_000_000 {
            self.nano_tokens -= 1_000_000_000;
            true
        } else {
            false
        }
    }
}

/// Class of an L2 frame for [`Admission`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum L2Class {
    /// DCP to a multicast or broadcast address (Identify All / by name, Hello of others).
    DcpMulticast,
    /// DCP to this device's MAC (Get, Set, unicast Identify, responses).
    DcpUnicast,
    Lldp,
}

impl L2Class {
    /// Classify by destination and EtherType (the caller checked [`wants`]).
    pub fn of(frame: &[u8]) -> L2Class {
        let et = match frame.get(12..14) {
            Some([0x81, 0x00]) => frame.get(16..18),
            other => other,
        };
        if et == Some(&[0x88, 0xcc][..]) {
            L2Class::Lldp
        } else if frame.first().is_some_and(|b| b & 1 != 0) {
            L2Class::DcpMulticast
        } else {
            L2Class::DcpUnicast
        }
    }
}

/// Rate admission of L2 frames on the receive thread: one token bucket per [`L2Class`].
/// Allocation-free; a rejected frame costs a classification and a clock read.
#[derive(Debug, Clone)]
pub struct Admission {
    dcp_multicast: Bucket,
    dcp_unicast: Bucket,
    lldp: Bucket,
}

impl Admission {
    pub fn new(now_ns: u64) -> Admission {
        Admission {
            dcp_multicast: Bucket::new(DCP_MULTICAST_LIMIT, now_ns),
            dcp_unicast: Bucket::new(DCP_UNICAST_LIMIT, now_ns),
            lldp: Bucket::new(LLDP_LIMIT, now_ns),
        }
    }

    /// May a frame of `class` be processed at `now_ns` (monotonic nanoseconds)?
    pub fn admit(&mut self, class: L2Class, now_ns: u64) -> bool {
        match class {
            L2Class::DcpMulticast => self.dcp_multicast.take(now_ns),
            L2Class::DcpUnicast => self.dcp_unicast.take(now_ns),
            L2Class::Lldp => self.lldp.take(now_ns),
        }
    }
}

enum Msg {
    Frame(Vec<u8>),
    Link(LinkInfo),
    ArActive(bool),
    Reset(String, Ipv4Addr, Ipv4Addr, Ipv4Addr),
    Stop,
}

#[derive(Default)]
struct Counters {
    lldp_tx: AtomicU64,
    dcp_rx: AtomicU64,
    dcp_tx: AtomicU64,
    signals: AtomicU64,
    dcp_multicast_limited: AtomicU64,
    dcp_unicast_limited: AtomicU64,
    lldp_limited: AtomicU64,
    queue_full: AtomicU64,
    /// Received frames in the queue to `pn-l2` (at most [`QUEUE_LEN`]). Only frames are
    /// bounded: the control messages (link, AR active, reset, stop) must never be dropped
    /// nor make their sender wait (the reset is sent under the stack's lock while `pn-l2`
    /// may be waiting for a durable commit).
    frames_queued: std::sync::atomic::AtomicUsize,
}

impl Counters {
    /// Copy the counters into `s` (both the worker's `publish` and [`L2Services::status`]).
    fn fill(&self, s: &mut L2Status) {
        s.lldp_tx_frames = self.lldp_tx.load(Ordering::Relaxed);
        s.dcp_rx_requests = self.dcp_rx.load(Ordering::Relaxed);
        s.dcp_tx_responses = self.dcp_tx.load(Ordering::Relaxed);
        s.dcp_signal_count = self.signals.load(Ordering::Relaxed);
        s.dcp_multicast_rate_limited = self.dcp_multicast_limited.load(Ordering::Relaxed);
        s.dcp_unicast_rate_limited = self.dcp_unicast_limited.load(Ordering::Relaxed);
        s.lldp_rate_limited = self.lldp_limited.load(Ordering::Relaxed);
        s.l2_queue_full = self.queue_full.load(Ordering::Relaxed);
    }
}

/// The running L2 services.
pub struct L2Services {
    tx: mpsc::Sender<Msg>,
    /// Rate admission of received frames (locked by the receive thread only).
    admission: Mutex<Admission>,
    t0: std::time::Instant,
    status: Arc<Mutex<L2Status>>,
    counters: Arc<Counters>,
    thread: Option<JoinHandle<()>>,
    _snmp: Option<SnmpServer>,
    _llmnr: Option<LlmnrServer>,
}

fn mono_now(t0: std::time::Instant) -> Instant {
    Instant::from_nanos(t0.elapsed().as_nanos() as u64)
}

/// Is this frame for the L2 services (DCP FrameID or LLDP EtherType)? Cheap check for the
/// receive thread.
pub fn wants(frame: &[u8]) -> bool {
    let at = |i: usize| {
        frame
            .get(i..i + 2)
            .map(|b| u16::from_be_bytes([b[0], b[1]]))
    };
    let (et, fid) = match at(12) {
        Some(0x8100) => (at(16), at(18)),
        et => (et, at(14)),
    };
    match et {
        Some(0x88cc) => true,
        Some(0x8892) => matches!(fid, Some(0xfefc..=0xfeff)),
        _ => false,
    }
}

struct Worker {
    cfg: L2Config,
    dcp: DcpResponder,
    lldp: LldpAgent,
    send: SendFn,
    events: EventSink,
    on_abort: AbortFn,
    status: Arc<Mutex<L2Status>>,
    counters: Arc<Counters>,
    sys: Arc<Mutex<SystemInfo>>,
    llmnr_id: Arc<Mutex<LlmnrIdentity>>,
    /// Address this service put on the NIC.
    applied: Option<(Ipv4Addr, Ipv4Addr)>,
    link: LinkInfo,
}

impl Worker {
    fn send(&self, f: &[u8]) -> bool {
        (self.send)(f)
    }

    fn publish(&mut self, now: Instant) {
        let id = self.dcp.identity().clone();
        if let Ok(mut s) = self.sys.lock() {
            s.name = id.station_name.clone();
        }
        if let Ok(mut l) = self.llmnr_id.lock() {
            l.name = id.station_name.clone();
            l.ip = id.ip;
        }
        let neighbour = self.lldp.neighbour(now).map(LldpNeighbour::from_agent);
        if let Ok(mut s) = self.status.lock() {
            s.station_name = id.station_name;
            s.ip = id.ip.to_string();
            s.ip_suite = [id.ip.octets(), id.mask.octets(), id.gateway.octets()];
            s.link_speed_mbps = self.link.speed_mbps;
            s.link_full_duplex = self.link.full_duplex;
            s.mau_type = self.link.mau_type;
            s.mau_type_substituted = self.link.mau_substituted;
            s.lldp_neighbour = neighbour;
            self.counters.fill(&mut s);
        }
    }

    fn apply(&mut self, ip: Ipv4Addr, mask: Ipv4Addr, gw: Ipv4Addr) -> Result<(), String> {
        if !self.cfg.apply_ip {
            return Ok(());
        }
        let r = dcp::apply_ip(&self.cfg.nic, self.applied, ip, mask, gw);
        let text = match &r {
            Ok(m) => {
                info!("DCP IP: {m}");
                m.clone()
            }
            Err(e) => {
                warn!("DCP IP: {e}");
                e.clone()
            }
        };
        if let Ok(mut s) = self.status.lock() {
            s.ip_apply_message = text;
        }
        if r.is_ok() {
            self.applied = (!ip.is_unspecified()).then_some((ip, mask));
        }
        r.map(|_| ())
    }

    fn handle_events(&mut self, evs: Vec<DcpEvent>, now: Instant) {
        for ev in evs {
            let applied = match &ev {
                DcpEvent::IpAssigned {
                    ip, mask, gateway, ..
                } => {
                    let r = self.apply(*ip, *mask, *gateway);
                    self.lldp.set_ip(*ip, now);
                    Some(r)
                }
                DcpEvent::NameAssigned { name, .. } => {
                    self.lldp.set_station_name(name, now);
                    None
                }
                DcpEvent::Signal => {
                    self.counters.signals.fetch_add(1, Ordering::Relaxed);
                    info!("DCP Signal: flash requested");
                    None
                }
                DcpEvent::ResetToFactory { .. } => {
                    let id = self.dcp.identity().clone();
                    if self.applied.is_some() || !id.ip.is_unspecified() {
                        let _ = self.apply(id.ip, id.mask, id.gateway);
                    }
                    self.lldp.set_station_name(&id.station_name, now);
                    self.lldp.set_ip(id.ip, now);
                    None
                }
                DcpEvent::AbortArs { reason } => {
                    (self.on_abort)(reason);
                    None
                }
            };
            if let Some(se) = dcp::to_stack_event(&ev, applied) {
                let _ = self.events.send(se);
            }
        }
        self.publish(now);
    }

    fn on_frame(&mut self, frame: &[u8], now: Instant) {
        if let Some(changed) = self.lldp.on_frame(frame, now) {
            if changed {
                let aliases = self.lldp.aliases(now);
                self.dcp.set_aliases(aliases);
            }
            self.publish(now);
            return;
        }
        if let Some(f) = &self.cfg.ar_active {
            self.dcp.set_ar_active(f());
        }
        let out = self.dcp.on_frame(frame, now);
        if out.handled {
            self.counters.dcp_rx.fetch_add(1, Ordering::Relaxed);
        }
        for f in &out.frames {
            if self.send(f) {
                self.counters.dcp_tx.fetch_add(1, Ordering::Relaxed);
            }
        }
        if !out.events.is_empty() {
            self.handle_events(out.events, now);
        }
    }

    fn poll(&mut self, now: Instant) {
        for f in self.dcp.poll(now) {
            if self.send(&f) {
                self.counters.dcp_tx.fetch_add(1, Ordering::Relaxed);
            }
        }
        if let Some(f) = self.lldp.poll(now) {
            if self.send(&f) {
                self.counters.lldp_tx.fetch_add(1, Ordering::Relaxed);
            }
            self.publish(now);
        }
        // Expire the neighbour (and its alias) with its TTL.
        let aliases = self.lldp.aliases(now);
        self.dcp.set_aliases(aliases);
    }

    fn run(mut self, rx: mpsc::Receiver<Msg>, t0: std::time::Instant) {
        let now = mono_now(t0);
        self.publish(now);
        loop {
            let now = mono_now(t0);
            self.poll(now);
            let deadline = [self.dcp.next_deadline(), self.lldp.next_deadline()]
                .into_iter()
                .flatten()
                .min();
            // Wake at least every second (neighbour expiry, status refresh).
            let wait = deadline
                .map(|d| d.saturating_since(mono_now(t0)))
                .map(std::time::Duration::from)
                .unwrap_or(std::time::Duration::from_secs(1))
                .min(std::time::Duration::from_secs(1));
            match rx.recv_timeout(wait) {
                Ok(Msg::Frame(f)) => {
                    self.counters.frames_queued.fetch_sub(1, Ordering::AcqRel);
                    self.on_frame(&f, mono_now(t0))
                }
                Ok(Msg::Link(l)) => {
                    let now = mono_now(t0);
                    self.lldp.set_link(&lldp::port_state(&l), now);
                    self.link = l;
                    if !self.link.up {
                        self.dcp.set_aliases(Vec::new());
                    }
                    self.publish(now);
                }
                Ok(Msg::ArActive(on)) => self.dcp.set_ar_active(on),
                Ok(Msg::Reset(n, i, m, g)) => {
                    let now = mono_now(t0);
                    self.dcp.reset_to(&n, i, m, g);
                    let _ = self.apply(i, m, g);
                    self.lldp.set_station_name(&n, now);
                    self.lldp.set_ip(i, now);
                    self.publish(now);
                }
                Ok(Msg::Stop) | Err(RecvTimeoutError::Disconnected) => break,
                Err(RecvTimeoutError::Timeout) => {}
            }
        }
    }
}

impl L2Services {
    /// Start the services. `send` transmits one complete Ethernet frame; `events` receives the
    /// DCP events; `on_abort` is called (on the `pn-l2` thread) when DCP requires every AR to
    /// be aborted (station name changed or reset while connected). Must be called from a
    /// thread in the daemon's network namespace (the threads and sockets inherit it).
    pub fn start(
        cfg: L2Config,
        link: LinkInfo,
        send: SendFn,
        events: EventSink,
        on_abort: AbortFn,
    ) -> std::io::Result<L2Services> {
        let t0 = std::time::Instant::now();
        let now = mono_now(t0);
        let id = cfg.identity.clone();
        let (cn, ci, cm, cg) = cfg.configured.clone();
        let dcp = DcpResponder::new(id.clone(), now)
            .with_configured(&cn, ci, cm, cg)
            .with_durable(dcp::durable_through(events.clone()));
        let descr = lldp::system_description(&cfg.im0);
        let mut lldp = LldpAgent::new(id.mac, &id.station_name, id.ip, descr, cfg.ifindex, now);
        lldp.set_link(&lldp::port_state(&link), now);
        let status = Arc::new(Mutex::new(L2Status::default()));
        let sys = Arc::new(Mutex::new(SystemInfo {
            descr: lldp::system_description(&cfg.im0),
            contact: String::new(),
            name: id.station_name.clone(),
            location: cfg.location.clone(),
        }));
        let llmnr_id = Arc::new(Mutex::new(LlmnrIdentity {
            name: id.station_name.clone(),
            ip: id.ip,
        }));
        let snmp_srv = match cfg.snmp {
            None => {
                set(&status, |s| s.snmp = "off".into());
                None
            }
            Some(a) => match SnmpServer::spawn(a, sys.clone()) {
                Ok(s) => {
                    set(&status, |st| {
                        st.snmp = format!("running on udp {}", s.local_addr())
                    });
                    Some(s)
                }
                Err(e) => {
                    warn!("SNMP agent not started on {a}: {e}");
                    set(&status, |st| st.snmp = format!("not started on {a}: {e}"));
                    None
                }
            },
        };
        let llmnr_srv = match cfg.llmnr {
            None => {
                set(&status, |s| s.llmnr = "off".into());
                None
            }
            Some(p) => match LlmnrServer::spawn(p, cfg.ifindex, llmnr_id.clone()) {
                Ok(s) => {
                    set(&status, |st| {
                        st.llmnr = format!("running on udp {}", s.local_addr())
                    });
                    Some(s)
                }
                Err(e) => {
                    warn!("LLMNR responder not started on port {p}: {e}");
                    set(&status, |st| {
                        st.llmnr = format!("not started on port {p}: {e}")
                    });
                    None
                }
            },
        };
        let counters = Arc::new(Counters::default());
        let mut worker = Worker {
            cfg,
            dcp,
            lldp,
            send,
            events,
            on_abort,
            status: status.clone(),
            counters: counters.clone(),
            sys,
            llmnr_id,
            applied: None,
            link,
        };
        if worker.cfg.apply_ip && !id.ip.is_unspecified() {
            // The effective IP (configured or persisted permanent DCP IP) goes on the NIC.
            let _ = worker.apply(id.ip, id.mask, id.gateway);
        }
        let (tx, rx) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("pn-l2".into())
            .spawn(move || worker.run(rx, t0))?;
        Ok(L2Services {
            tx,
            admission: Mutex::new(Admission::new(0)),
            t0,
            status,
            counters,
            thread: Some(thread),
            _snmp: snmp_srv,
            _llmnr: llmnr_srv,
        })
    }

    /// A received DCP or LLDP frame: admitted by rate ([`Admission`]), then copied into the
    /// bounded queue of the `pn-l2` thread. Never blocks; a rejected frame is counted and
    /// costs no allocation.
    pub fn on_frame(&self, frame: &[u8]) {
        let class = L2Class::of(frame);
        let now_ns = self.t0.elapsed().as_nanos() as u64;
        let admitted = match self.admission.lock() {
            Ok(mut a) => a.admit(class, now_ns),
            Err(p) => p.into_inner().admit(class, now_ns),
        };
        if !admitted {
            let c = match class {
                L2Class::DcpMulticast => &self.counters.dcp_multicast_limited,
                L2Class::DcpUnicast => &self.counters.dcp_unicast_limited,
                L2Class::Lldp => &self.counters.lldp_limited,
            };
            c.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let q = &self.counters.frames_queued;
        if q.fetch_add(1, Ordering::AcqRel) >= QUEUE_LEN {
            q.fetch_sub(1, Ordering::AcqRel);
            self.counters.queue_full.fetch_add(1, Ordering::Relaxed);
            return;
        }
        if self.tx.send(Msg::Frame(frame.to_vec())).is_err() {
            q.fetch_sub(1, Ordering::AcqRel);
        }
    }

    pub fn on_link(&self, link: LinkInfo) {
        let _ = self.tx.send(Msg::Link(link));
    }

    pub fn set_ar_active(&self, on: bool) {
        let _ = self.tx.send(Msg::ArActive(on));
    }

    /// `StackCommand::Reset`: take these values as current (and apply the IP).
    pub fn reset(&self, name: &str, ip: Ipv4Addr, mask: Ipv4Addr, gw: Ipv4Addr) {
        let _ = self.tx.send(Msg::Reset(name.to_string(), ip, mask, gw));
    }

    pub fn status(&self) -> L2Status {
        let mut s = self.status.lock().map(|s| s.clone()).unwrap_or_default();
        self.counters.fill(&mut s);
        s
    }

    /// Stop every thread (also on drop).
    pub fn stop(&mut self) {
        let _ = self.tx.send(Msg::Stop);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        self._snmp = None;
        self._llmnr = None;
    }
}

impl Drop for L2Services {
    fn drop(&mut self) {
        self.stop();
    }
}

fn set(s: &Arc<Mutex<L2Status>>, f: impl FnOnce(&mut L2Status)) {
    if let Ok(mut g) = s.lock() {
        f(&mut g);
    }
}

/// Convenience for events of the link monitor: the `StackEvent` the runtime expects.
pub fn link_event(link: &LinkInfo) -> StackEvent {
    StackEvent::LinkChanged { up: link.up }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wants_dcp_and_lldp_only() {
        let mut f = vec![0u8; 60];
        f[12..14].copy_from_slice(&[0x88, 0x92]);
        f[14..16].copy_from_slice(&[0xfe, 0xfe]);
        assert!(wants(&f));
        f[14..16].copy_from_slice(&[0x80, 0x00]);
        assert!(!wants(&f));
        f[12..14].copy_from_slice(&[0x88, 0xcc]);
        assert!(wants(&f));
        let mut t = vec![0u8; 60];
        t[12..14].copy_from_slice(&[0x81, 0x00]);
        t[16..18].copy_from_slice(&[0x88, 0x92]);
        t[18..20].copy_from_slice(&[0xfe, 0xfd]);
        assert!(wants(&t));
        assert!(!wants(&[0u8; 10]));
    }

    fn dcp_frame(dst: [u8; 6]) -> Vec<u8> {
        let mut f = vec![0u8; 60];
        f[0..6].copy_from_slice(&dst);
        f[12..14].copy_from_slice(&[0x88, 0x92]);
        f[14..16].copy_from_slice(&[0xfe, 0xfe]);
        f
    }

    #[test]
    fn classes() {
        assert_eq!(
            L2Class::of(&dcp_frame([0x01, 0x0e, 0xcf, 0, 0, 0])),
            L2Class::DcpMulticast
        );
        assert_eq!(L2Class::of(&dcp_frame([0xff; 6])), L2Class::DcpMulticast);
        assert_eq!(
            L2Class::of(&dcp_frame([2, 0, 0, 0, 0, 1])),
            L2Class::DcpUnicast
        );
        let mut l = dcp_frame([0x01, 0x80, 0xc2, 0, 0, 0x0e]);
        l[12..14].copy_from_slice(&[0x88, 0xcc]);
        assert_eq!(L2Class::of(&l), L2Class::Lldp);
        let mut t = vec![0u8; 64];
        t[0] = 0x01;
        t[12..14].copy_from_slice(&[0x81, 0x00]);
        t[16..18].copy_from_slice(&[0x88, 0xcc]);
        assert_eq!(L2Class::of(&t), L2Class::Lldp);
        assert_eq!(L2Class::of(&[]), L2Class::DcpUnicast);
    }

    /// A 10 000 frames/s storm of each class for 3 s admits the burst plus the rate per
    /// second, and a storm of one class does not take the tokens of another.
    #[test]
    fn admission_bounds_each_class_separately() {
        let mut a = Admission::new(0);
        let (mut mc, mut lldp, mut uc) = (0u64, 0u64, 0u64);
        // 30 000 multicast DCP and LLDP frames 100 us apart; one unicast request every 10 ms.
        for i in 0..30_000u64 {
            let now = i * 100_000;
            mc += u64::from(a.admit(L2Class::DcpMulticast, now));
            lldp += u64::from(a.admit(L2Class::Lldp, now));
            if i % 100 == 0 {
                uc += u64::from(a.admit(L2Class::DcpUnicast, now));
            }
        }
        let secs = 3;
        let bound = |(rate, burst): (u64, u64)| burst + rate * secs;
        assert!(mc <= bound(DCP_MULTICAST_LIMIT), "{mc}");
        assert!(mc >= DCP_MULTICAST_LIMIT.0 * secs, "{mc}");
        assert!(lldp <= bound(LLDP_LIMIT), "{lldp}");
        assert!(lldp >= LLDP_LIMIT.0 * secs, "{lldp}");
        // 100 unicast requests per second are below their own limit: all admitted.
        assert_eq!(uc, 300);
        // After a quiet second the burst is available again.
        let later = 4_000_000_000;
        for _ in 0..DCP_MULTICAST_LIMIT.1 {
            assert!(a.admit(L2Class::DcpMulticast, later));
        }
        assert!(!a.admit(L2Class::DcpMulticast, later));
        // A clock that goes backwards (never on CLOCK_MONOTONIC) neither panics nor refills.
        assert!(!a.admit(L2Class::DcpMulticast, 0));
    }
}

/// Deterministic random-input robustness of every L2 parser the device exposes to the wire
/// (no panic, bounded output).
#[cfg(test)]
mod fuzz_tests {
    use super::*;

    struct XorShift(u64);
    impl XorShift {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn bytes(&mut self, n: usize) -> Vec<u8> {
            (0..n).map(|_| self.next() as u8).collect()
        }
    }

    #[test]
    fn random_frames_and_datagrams_never_panic() {
        let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
        let mac = MacAddr([2, 0, 0, 0, 0, 1]);
        let id = DcpIdentity {
            mac,
            station_name: "dev".into(),
            device_vendor: "v".into(),
            vendor_id: 1,
            device_id: 1,
            ip: Ipv4Addr::new(10, 0, 0, 2),
            mask: Ipv4Addr::new(255, 0, 0, 0),
            gateway: Ipv4Addr::UNSPECIFIED,
            device_instance: (0, 1),
            device_initiative: true,
        };
        let mut dcp = DcpResponder::new(id, Instant::ZERO);
        let mut lldp = LldpAgent::new(
            mac,
            "dev",
            Ipv4Addr::UNSPECIFIED,
            String::new(),
            1,
            Instant::ZERO,
        );
        let agent = snmp::SnmpAgent::new(SystemInfo::default());
        let lid = LlmnrIdentity {
            name: "dev".into(),
            ip: Ipv4Addr::new(10, 0, 0, 2),
        };
        for i in 0..20_000u64 {
            let n = (rng.next() % 200) as usize;
            let mut f = rng.bytes(n);
            // Steer half of the frames into the DCP / LLDP / SNMP / LLMNR paths.
            if f.len() > 16 && i % 2 == 0 {
                f[0..6].copy_from_slice(&mac.0);
                let et: [u8; 2] = if i % 4 == 0 {
                    [0x88, 0x92]
                } else {
                    [0x88, 0xcc]
                };
                f[12..14].copy_from_slice(&et);
                if i % 4 == 0 {
                    f[14] = 0xfe;
                    f[15] = 0xfc + (rng.next() % 4) as u8;
                }
            }
            let now = Instant::from_millis(i);
            let out = dcp.on_frame(&f, now);
            assert!(out.frames.len() <= 1);
            let _ = dcp.poll(now);
            let _ = lldp.on_frame(&f, now);
            let _ = lldp.neighbour(now);
            if let Some(r) = agent.handle(&f, 1) {
                assert!(r.len() <= snmp::MAX_MESSAGE);
            }
            if let Some(r) = llmnr::handle(&f, &lid) {
                assert!(r.len() <= f.len() + 16);
            }
            assert!(!wants(&f) || f.len() >= 16);
        }
    }
}

#[cfg(test)]
mod queue_tests {
    use super::*;
    use pn_protocol::wire::dcp::{DcpRepr, NameOfStation};
    use std::time::Duration;

    /// While `pn-l2` waits for a durable commit (a slow disk), control messages still go
    /// through at once (received frames alone are bounded, by `frames_queued`): the reset the runtime sends under
    /// the stack's lock must never wait for that disk (found in review: with a bounded
    /// channel for everything, the 129th message blocked its sender).
    #[test]
    fn control_messages_never_wait_for_a_busy_worker() {
        let mac = MacAddr([2, 0, 0, 0, 0, 1]);
        let identity = DcpIdentity {
            mac,
            station_name: "dev".into(),
            device_vendor: "v".into(),
            vendor_id: 1,
            device_id: 1,
            ip: Ipv4Addr::UNSPECIFIED,
            mask: Ipv4Addr::UNSPECIFIED,
            gateway: Ipv4Addr::UNSPECIFIED,
            device_instance: (0, 1),
            device_initiative: false,
        };
        let cfg = L2Config {
            nic: "none".into(),
            ifindex: 1,
            identity,
            configured: (
                "dev".into(),
                Ipv4Addr::UNSPECIFIED,
                Ipv4Addr::UNSPECIFIED,
                Ipv4Addr::UNSPECIFIED,
            ),
            im0: Im0Config::default(),
            location: String::new(),
            snmp: None,
            llmnr: None,
            apply_ip: false,
            ar_active: None,
        };
        // The commit of a permanent name blocks until the test lets it go.
        let (entered_tx, entered_rx) = mpsc::channel();
        let (release_tx, release_rx) = mpsc::channel::<()>();
        let release_rx = Mutex::new(release_rx);
        let (sink, _events) = EventSink::channel();
        let sink = sink.with_commit(Arc::new(move |_ev: &StackEvent| {
            let _ = entered_tx.send(());
            let _ = release_rx.lock().unwrap().recv();
            Ok(())
        }));
        let mut l2 = L2Services::start(
            cfg,
            LinkInfo {
                present: true,
                up: true,
                ..LinkInfo::default()
            },
            Arc::new(|_f: &[u8]| true),
            sink,
            Arc::new(|_why: &'static str| {}),
        )
        .unwrap();
        let set = DcpRepr::set_name(1, &NameOfStation::new("new-name").unwrap(), true)
            .build_frame(mac, MacAddr([2, 0, 0, 0, 0, 9]), None)
            .unwrap();
        l2.on_frame(&set);
        entered_rx
            .recv_timeout(Duration::from_secs(5))
            .expect("pn-l2 is in the commit");
        // 1000 control messages from another thread: all sent without waiting.
        let sent = std::thread::scope(|s| {
            let h = s.spawn(|| {
                for i in 0..1000u32 {
                    l2.set_ar_active(i % 2 == 0);
                    l2.reset(
                        "dev",
                        Ipv4Addr::UNSPECIFIED,
                        Ipv4Addr::UNSPECIFIED,
                        Ipv4Addr::UNSPECIFIED,
                    );
                }
                true
            });
            let deadline = std::time::Instant::now() + Duration::from_secs(5);
            while !h.is_finished() && std::time::Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(5));
            }
            let done = h.is_finished();
            // Let the worker go either way, so the scope can end.
            let _ = release_tx.send(());
            done && h.join().unwrap()
        });
        assert!(sent, "a control message waited for the busy worker");
        assert_eq!(l2.counters.frames_queued.load(Ordering::Acquire), 0);
        l2.stop();
    }
}

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
//!
//! Layout: the API ([`L2Config`], [`L2Status`], [`L2Services`]) here; `admission` (rate limits),
//! `worker` (the `pn-l2` thread).

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use pn_protocol::machine::llmnr_responder::LlmnrIdentity;
use pn_protocol::machine::snmp_agent::SystemInfo;
use pn_protocol::time::Instant;
use pn_protocol::wire::ethernet::MacAddr;
use serde::Serialize;
use tracing::warn;

use crate::dataplane::{EventSink, Im0Config, StackConfig, StackEvent};

use super::dcp::{self, DcpIdentity, DcpResponder};
use super::link::LinkInfo;
use super::lldp::{self, LldpAgent, LldpNeighbour};
use super::llmnr::{self, LlmnrServer};
use super::snmp::{self, SnmpServer};

mod admission;
mod worker;

pub use admission::{
    Admission, L2Class, DCP_MULTICAST_LIMIT, DCP_UNICAST_LIMIT, LLDP_LIMIT, QUEUE_LEN,
};
use worker::Worker;

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
mod tests;

#[cfg(test)]
mod fuzz_tests;

#[cfg(test)]
mod queue_tests;

//! The `pn-l2` thread's state: [`Worker`] runs the DCP responder and the LLDP agent, applies
//! DCP-assigned IP addresses and publishes the status.

use std::net::Ipv4Addr;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};

use pn_protocol::machine::llmnr_responder::LlmnrIdentity;
use pn_protocol::machine::snmp_agent::SystemInfo;
use pn_protocol::time::Instant;
use tracing::{info, warn};

use crate::dataplane::EventSink;
use crate::stack::dcp::{self, DcpEvent, DcpResponder};
use crate::stack::link::LinkInfo;
use crate::stack::lldp::{self, LldpAgent, LldpNeighbour};

use super::{mono_now, AbortFn, Counters, L2Config, L2Status, Msg, SendFn};

pub(super) struct Worker {
    pub(super) cfg: L2Config,
    pub(super) dcp: DcpResponder,
    pub(super) lldp: LldpAgent,
    pub(super) send: SendFn,
    pub(super) events: EventSink,
    pub(super) on_abort: AbortFn,
    pub(super) status: Arc<Mutex<L2Status>>,
    pub(super) counters: Arc<Counters>,
    pub(super) sys: Arc<Mutex<SystemInfo>>,
    pub(super) llmnr_id: Arc<Mutex<LlmnrIdentity>>,
    /// Address this service put on the NIC.
    pub(super) applied: Option<(Ipv4Addr, Ipv4Addr)>,
    pub(super) link: LinkInfo,
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

    pub(super) fn apply(
        &mut self,
        ip: Ipv4Addr,
        mask: Ipv4Addr,
        gw: Ipv4Addr,
    ) -> Result<(), String> {
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

    pub(super) fn run(mut self, rx: mpsc::Receiver<Msg>, t0: std::time::Instant) {
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

//! One emulated device: the role machines pn-device runs, and the shell glue pn-device's
//! `pn-cm` / `pn-cyclic` / `pn-l2` threads do, for a device that owns no socket and no thread.
//!
//! Machines (each the one copy in the protocol crate or pn-device's stack):
//! * CMDEV: [`Cmdev`] with this device's [`CmdevApp`] (the protocol crate's
//!   [`plan::plan_connect`] for the frame layout, pn-device's `Records` for record read/write);
//! * DCP responder: [`DcpResponder`] (Identify delay, Get/Set, Hello);
//! * cyclic: the consumer is pn-device's `cyclic::consume_frame` (the I/O shell of the
//!   protocol crate's CPM, `machine::cpm::ConsumerCr`), the provider fills the PPM's
//!   [`ProviderTemplate`](pn_protocol::machine::ppm::ProviderTemplate) per cycle as
//!   pn-device's real-time thread does; the data-hold rule is [`DataHold`] (both in
//!   `cyclic_io`);
//! * alarms: pn-device's `AlarmCr` (two `rta::RtaMachine`s);
//! * LLDP: [`LldpAgent`] (its LLDPDU on schedule, the neighbour, the alias name for DCP); the
//!   PDev real-data records report the neighbour as pn-device does (`cm::pdev_peer`);
//! * SNMP and LLMNR: the protocol crate's agent and responder ([`services`]).
//!
//! Remanent data (`--state-dir`) goes through [`DeviceStore`] before a DCP Set or a record
//! write is answered, as in pn-device.
//!
//! The I/O loop ([`crate::io`]) feeds frames and `now`, collects what to send, and wakes the
//! device at [`FarmDevice::next_deadline`].

use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use pn_device::dataplane::{DiagnosisEntry, StackConfig};
use pn_device::image::{ProcessImage, IOXS_BAD, IOXS_GOOD};
use pn_device::stack::ar;
use pn_device::stack::cm;
use pn_device::stack::cyclic::CyclicShared;
use pn_device::stack::link::LinkInfo;
use pn_device::stack::lldp::{self, LldpAgent, LldpNeighbour};
use pn_device::stack::records::{self, PdevLive, Records};
use pn_protocol::machine::alarm_cr::{AlarmCr, AlarmOutcome};
use pn_protocol::machine::cmdev::connect::ConnectLimits;
use pn_protocol::machine::cmdev::plan::{self, ConnectPlan, SlotEntry};
use pn_protocol::machine::cmdev::{ArPhase, Cmdev, CmdevApp, CmdevEvent, EndCause, IoArPlan};
use pn_protocol::machine::cyclic::TIME_BASE_NS;
use pn_protocol::machine::data_hold::DataHold;
use pn_protocol::machine::dcp_responder::{DcpEvent, DcpIdentity, DcpResponder};
use pn_protocol::time::{Duration as PnDuration, Instant};
use pn_protocol::wire::ethernet::MacAddr;
use pn_protocol::wire::ip::{udp_frame, PNIO_CM_PORT};
use pn_protocol::wire::pnio::cm::ConnectRequest;
use pn_protocol::wire::pnio::record::RecordAddress;
use pn_protocol::wire::pnio::PnioStatus;
use pn_protocol::wire::rta::abort_reason;

use crate::plant::DeviceSpec;
use crate::remanent::DeviceStore;
use crate::status::DevShared;

mod cyclic_io;
mod services;

use cyclic_io::Provider;

/// 100BASE-TX full duplex: the MAU type the PDev records report for the farm's virtual ports
/// (there is no PHY per device to ask).
const MAU_100BASE_TXFD: u16 = 0x0010;

/// Frames the I/O loop sends at the end of its iteration.
#[derive(Default)]
pub struct Out {
    /// Complete control frames (DCP, ARP, UDP, RTA).
    pub ctl: Vec<Vec<u8>>,
    /// Devices whose provider frame ([`FarmDevice::provider_frame`]) is due.
    pub rt: Vec<usize>,
}

/// IPv4 address -> MAC of the peers seen (controllers, engineering stations), learnt from
/// their ARP requests and CM datagrams: the farm answers without asking the kernel, and
/// sends its own client calls (ApplicationReady) to the controller's MAC.
pub type Neighbours = HashMap<Ipv4Addr, [u8; 6]>;

/// Whether the frames received up to a timer's run have been read. The loop sends before it
/// reads after a late wake-up: only the provider slots run then, and without their data-hold
/// check, because its evidence (the controller's frames of the hold) is still in the socket:
/// checked then, a hold longer than the data-hold time plus the stall guard would trip a
/// watchdog on frames that did arrive. The other timers run after the read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backlog {
    Read,
    Unread,
}

/// One emulated device.
pub struct FarmDevice {
    pub shared: Arc<DevShared>,
    mac: [u8; 6],
    safe_input: u8,
    cm: Cmdev<ConnectPlan>,
    records: Records,
    slots: Vec<SlotEntry>,
    dcp: DcpResponder,
    alarm: Option<AlarmCr>,
    lldp: LldpAgent,
    /// Remanent data (`None`: kept for the farm's lifetime only).
    store: Option<Arc<DeviceStore>>,
    cyc: Arc<CyclicShared>,
    provider: Option<Provider>,
    watchdog: Option<DataHold>,
    /// Key of this device in the I/O loop's deadline set.
    pub armed: Option<u64>,
}

/// The CMDEV machine's application: pn-device's frame planning and record store.
struct App<'a> {
    records: &'a mut Records,
    slots: &'a [SlotEntry],
    mac: [u8; 6],
    i_len: usize,
    safe: u8,
    pdev: PdevLive,
    store: Option<&'a DeviceStore>,
}

impl CmdevApp for App<'_> {
    type Plan = ConnectPlan;

    fn plan_io_ar(
        &mut self,
        req: &ConnectRequest,
        limits: &ConnectLimits,
    ) -> Result<IoArPlan<ConnectPlan>, PnioStatus> {
        let plan = plan::plan_connect(
            req,
            limits,
            self.slots,
            self.mac,
            self.i_len,
            self.safe,
            &[],
        )?;
        Ok(IoArPlan {
            input_frame_id: plan.input_frame_id,
            output_frame_id: plan.output_frame_id,
            module_diff: plan.module_diff.clone(),
            data_hold: PnDuration(plan.dht_ns),
            plan,
        })
    }

    fn link_up(&mut self) -> bool {
        // The device is as up as the farm's NIC; the loop does not run without it.
        true
    }

    fn read_record(&mut self, a: &RecordAddress) -> Result<Vec<u8>, PnioStatus> {
        if records::is_pdev_real(a.index) {
            self.records.pdev = self.pdev.clone();
        }
        self.records.read(a)
    }

    fn write_record(&mut self, a: &RecordAddress, data: &[u8]) -> Result<(), PnioStatus> {
        // Remanent records are stored durably before the response is built (pn-device's
        // rule); without a state directory they last for the farm's lifetime.
        let store = self.store;
        self.records
            .write(a, data, |ev| store.map_or(Ok(()), |s| s.commit(ev)))
            .map(|_| ())
    }
}

fn random_seed(k: usize) -> [u8; 16] {
    let mut b = [0u8; 16];
    if let Ok(mut f) = std::fs::File::open("/dev/urandom") {
        use std::io::Read;
        let _ = f.read_exact(&mut b);
    }
    // Distinct per device even without /dev/urandom.
    b[..8]
        .iter_mut()
        .zip((k as u64).to_be_bytes())
        .for_each(|(x, y)| *x ^= y);
    b
}

/// The port each farm device reports (LLDP, PDev): 100BASE-TX full duplex, auto-negotiated,
/// up while the farm runs (there is no PHY per device to ask).
fn virtual_port() -> LinkInfo {
    LinkInfo {
        present: true,
        up: true,
        speed_mbps: Some(100),
        full_duplex: Some(true),
        autoneg: Some(true),
        mau_type: MAU_100BASE_TXFD,
        mau_substituted: false,
    }
}

fn mac_text(m: &[u8; 6]) -> String {
    MacAddr(*m).to_string()
}

impl FarmDevice {
    /// Device `k` of the plant; with `state_dir`, its remanent data is loaded from there
    /// (and kept there).
    pub fn new(
        k: usize,
        spec: &DeviceSpec,
        now: Instant,
        boot: u32,
        state_dir: Option<&Path>,
    ) -> FarmDevice {
        let configured = &spec.stack;
        let mut spec = spec.clone();
        let store = state_dir.map(|d| DeviceStore::open(d, spec.mac, &mut spec.stack));
        let spec = &spec;
        let cfg: &StackConfig = &spec.stack;
        let image = Arc::new(ProcessImage::new(cfg.input_len, cfg.output_len));
        let identity = DcpIdentity {
            mac: MacAddr(spec.mac),
            station_name: cfg.station_name.clone(),
            device_vendor: cfg.device_name.clone(),
            vendor_id: cfg.vendor_id,
            device_id: cfg.device_id,
            ip: cfg.ip,
            mask: cfg.mask,
            gateway: cfg.gateway,
            device_instance: (0, 1),
            device_initiative: false,
        };
        let shared = Arc::new(DevShared::new(spec, image));
        let mut dcp = DcpResponder::new(identity, now).with_configured(
            &configured.station_name,
            configured.ip,
            configured.mask,
            configured.gateway,
        );
        if let Some(s) = &store {
            dcp = dcp.with_durable(s.dcp_hook());
        }
        let mut lldp = LldpAgent::new(
            MacAddr(spec.mac),
            &cfg.station_name,
            cfg.ip,
            lldp::system_description(&cfg.im0),
            1,
            now,
        );
        lldp.set_link(&lldp::port_state(&virtual_port()), now);
        FarmDevice {
            mac: spec.mac,
            safe_input: cfg.safe_input_value,
            cm: Cmdev::new(cm::cmdev_config(cfg, boot, spec.mac, random_seed(k))),
            records: Records::from_config(cfg),
            slots: ar::layout(
                &cfg.modules,
                shared.image.input_len(),
                shared.image.output_len(),
            ),
            dcp,
            alarm: None,
            lldp,
            store,
            cyc: Arc::new(CyclicShared::new(
                u64::from(cfg.send_clock_factor.max(1)) * TIME_BASE_NS,
                false,
            )),
            provider: None,
            watchdog: None,
            armed: None,
            shared,
        }
    }

    pub fn mac(&self) -> [u8; 6] {
        self.mac
    }

    /// What the farm's standby sender needs of this device: the cyclic state it shares with
    /// the provider (the slot claim, the published plan, the DataStatus bits) and the device
    /// (its input data and counters).
    pub fn standby_parts(&self) -> (Arc<CyclicShared>, Arc<DevShared>) {
        (self.cyc.clone(), self.shared.clone())
    }

    /// The current IP (DCP may have changed it).
    pub fn ip(&self) -> Ipv4Addr {
        self.dcp.identity().ip
    }

    /// The earliest instant something of this device is due.
    pub fn next_deadline(&self) -> Option<u64> {
        let mut t: Option<u64> = None;
        let mut at = |x: u64| t = Some(t.map_or(x, |y| y.min(x)));
        if let Some(p) = &self.provider {
            at(p.next_ns());
        }
        for d in [
            self.cm.poll_timeout(),
            self.dcp.next_deadline(),
            self.lldp.next_deadline(),
            self.alarm.as_ref().and_then(|a| a.next_deadline()),
        ]
        .into_iter()
        .flatten()
        {
            at(d.0);
        }
        t
    }

    // ------------------------------------------------------------------ inputs

    /// An RTA frame (FrameID 0xFC01/0xFE01) to this device.
    pub fn on_rta(
        &mut self,
        frame_id: u16,
        src: [u8; 6],
        pdu: &[u8],
        now: Instant,
        out: &mut Out,
        n: &Neighbours,
    ) {
        let from_controller = self
            .cm
            .io_ar()
            .is_some_and(|a| a.ar.cm_initiator_mac == src);
        if let Some(alarm) = self.alarm.as_mut().filter(|_| from_controller) {
            alarm.handle(frame_id, pdu, now);
            self.poll_alarm(now, out, n);
        }
    }

    /// A DCP frame for this device (or multicast).
    pub fn on_dcp(&mut self, frame: &[u8], now: Instant, out: &mut Out, n: &Neighbours) {
        let o = self.dcp.on_frame(frame, now);
        out.ctl.extend(o.frames);
        for ev in o.events {
            match ev {
                DcpEvent::AbortArs { reason } => {
                    let code = if reason.contains("name") {
                        abort_reason::DCP_STATION_NAME_CHANGED
                    } else {
                        abort_reason::DCP_RESET_TO_FACTORY
                    };
                    self.cm
                        .end_io_ar(reason, Some(abort_reason::status(code)), EndCause::Fault);
                    self.cm.clear_supervisors();
                    self.apply(now, out, n);
                }
                DcpEvent::Signal => {
                    self.shared.counters.signals.fetch_add(1, Ordering::Relaxed);
                }
                DcpEvent::NameAssigned { .. }
                | DcpEvent::IpAssigned { .. }
                | DcpEvent::ResetToFactory { .. } => {}
            }
        }
        let id = self.dcp.identity();
        self.lldp.set_station_name(&id.station_name, now);
        self.lldp.set_ip(id.ip, now);
        self.shared.set_identity(id);
    }

    /// An LLDP frame (every farm device shares the NIC's one link partner: the switch port
    /// or the controller). `true` when it was LLDP.
    pub fn on_lldp(&mut self, frame: &[u8], now: Instant) -> bool {
        let Some(changed) = self.lldp.on_frame(frame, now) else {
            return false;
        };
        if changed {
            let aliases = self.lldp.aliases(now);
            self.dcp.set_aliases(aliases);
        }
        self.shared.counters.rx_lldp.fetch_add(1, Ordering::Relaxed);
        self.shared
            .set_lldp_neighbour(self.lldp.neighbour(now).map(LldpNeighbour::from_agent));
        true
    }

    /// A CM datagram (UDP to port 34964 of this device's IP).
    pub fn on_udp(
        &mut self,
        now: Instant,
        from: SocketAddr,
        payload: &[u8],
        out: &mut Out,
        n: &Neighbours,
    ) {
        let id = self.dcp.identity();
        let mut app = App {
            records: &mut self.records,
            slots: &self.slots,
            mac: self.mac,
            i_len: self.shared.image.input_len(),
            safe: self.safe_input,
            pdev: PdevLive {
                station_name: id.station_name.clone(),
                mac: self.mac,
                ip_suite: [id.ip.octets(), id.mask.octets(), id.gateway.octets()],
                link_up: true,
                mau_type: MAU_100BASE_TXFD,
                peer: self
                    .lldp
                    .neighbour(now)
                    .map(|n| cm::pdev_peer(&LldpNeighbour::from_agent(n))),
                stats: None,
            },
            store: self.store.as_deref(),
        };
        self.shared.counters.rx_cm.fetch_add(1, Ordering::Relaxed);
        if !self.cm.handle_datagram(now, from, payload, &mut app) {
            self.shared
                .counters
                .rx_invalid
                .fetch_add(1, Ordering::Relaxed);
        }
        self.apply(now, out, n);
    }

    /// Add or update a diagnosis entry and send its alarm (as pn-device's
    /// `StackCommand::SetDiagnosis`).
    pub fn set_diagnosis(
        &mut self,
        d: DiagnosisEntry,
        now: Instant,
        out: &mut Out,
        n: &Neighbours,
    ) {
        let key = |e: &DiagnosisEntry| (e.slot, e.subslot, e.channel, e.error_type);
        if let Some(e) = self.records.diags.iter_mut().find(|e| key(e) == key(&d)) {
            *e = d.clone();
        } else {
            self.records.diags.push(d.clone());
        }
        self.cyc.station_problem.store(true, Ordering::Relaxed);
        self.send_diag_alarm(&d, true, now, out, n);
    }

    /// Remove a diagnosis entry and send its disappear alarm; `false` when there was none.
    pub fn remove_diagnosis(
        &mut self,
        d: &DiagnosisEntry,
        now: Instant,
        out: &mut Out,
        n: &Neighbours,
    ) -> bool {
        let key = |e: &DiagnosisEntry| (e.slot, e.subslot, e.channel, e.error_type);
        let Some(p) = self.records.diags.iter().position(|e| key(e) == key(d)) else {
            return false;
        };
        let d = self.records.diags.remove(p);
        self.cyc
            .station_problem
            .store(!self.records.diags.is_empty(), Ordering::Relaxed);
        self.send_diag_alarm(&d, false, now, out, n);
        true
    }

    /// The farm stops: end the AR as pn-device does when its plane stops.
    pub fn shutdown(&mut self, now: Instant, out: &mut Out, n: &Neighbours) {
        self.cm.end_io_ar(
            "farm stopped",
            Some(abort_reason::status(abort_reason::AR_DEVICE_DEACTIVATED)),
            EndCause::Fault,
        );
        self.apply(now, out, n);
    }

    // ------------------------------------------------------------------ timers

    /// Run what is due at `now`; a provider slot up to `horizon` counts as due (the loop
    /// sends the providers of one wake-up in one batch). `backlog`: whether the frames
    /// received up to now have been read. Returns whether the provider frame is to be sent.
    pub fn on_timer(
        &mut self,
        now: Instant,
        horizon: u64,
        backlog: Backlog,
        out: &mut Out,
        n: &Neighbours,
    ) -> bool {
        let mut send = false;
        let due = self
            .provider
            .as_ref()
            .is_some_and(|p| p.next_ns() <= horizon);
        if due {
            send = self.provider_slot(now, backlog, out, n);
        }
        if backlog == Backlog::Unread {
            // Only the provider goes before the read: a CM, DCP, LLDP or alarm timeout may be
            // answered by a frame in the backlog. They stay due and run after it.
            return send && self.provider.is_some();
        }
        if self.cm.poll_timeout().is_some_and(|t| t <= now) {
            self.cm.handle_timeout(now);
            self.apply(now, out, n);
        }
        if self.dcp.next_deadline().is_some_and(|t| t <= now) {
            out.ctl.extend(self.dcp.poll(now));
        }
        if self.lldp.next_deadline().is_some_and(|t| t <= now) {
            if let Some(f) = self.lldp.poll(now) {
                self.shared.counters.tx_lldp.fetch_add(1, Ordering::Relaxed);
                out.ctl.push(f);
            }
            // The neighbour (and its alias) expire with its TTL.
            let aliases = self.lldp.aliases(now);
            self.dcp.set_aliases(aliases);
            self.shared
                .set_lldp_neighbour(self.lldp.neighbour(now).map(LldpNeighbour::from_agent));
        }
        if self
            .alarm
            .as_ref()
            .and_then(|a| a.next_deadline())
            .is_some_and(|t| t <= now)
        {
            self.poll_alarm(now, out, n);
        }
        send && self.provider.is_some()
    }

    // ------------------------------------------------------------------ machine effects

    fn poll_alarm(&mut self, now: Instant, out: &mut Out, n: &Neighbours) {
        let Some(alarm) = self.alarm.as_mut() else {
            return;
        };
        let mut outcomes = Vec::new();
        alarm.poll(now, &mut out.ctl, &mut outcomes);
        let k = &self.shared.counters;
        let mut end: Option<(String, PnioStatus, EndCause)> = None;
        for o in outcomes {
            match o {
                AlarmOutcome::Acked { ok, .. } => {
                    let c = if ok {
                        &k.alarms_acked
                    } else {
                        &k.alarms_nacked
                    };
                    c.fetch_add(1, Ordering::Relaxed);
                }
                AlarmOutcome::Received { .. } => {
                    k.alarms_received.fetch_add(1, Ordering::Relaxed);
                }
                AlarmOutcome::TransportFailed(_) | AlarmOutcome::ControllerAborted(_) => {
                    end = AlarmOutcome::first_end(end, o.ar_end());
                }
            }
        }
        if let Some((reason, st, cause)) = end {
            self.cm.end_io_ar(&reason, Some(st), cause);
            self.apply(now, out, n);
        }
    }

    fn send_diag_alarm(
        &mut self,
        d: &DiagnosisEntry,
        appears: bool,
        now: Instant,
        out: &mut Out,
        n: &Neighbours,
    ) {
        let idents = self.records.idents(d.slot, d.subslot).unwrap_or((0, 0));
        let still = self
            .records
            .diags
            .iter()
            .any(|e| e.slot == d.slot && e.subslot == d.subslot);
        let in_data = self.cm.io_ar().is_some_and(|a| a.phase == ArPhase::Data);
        if let Some(alarm) = self.alarm.as_mut().filter(|_| in_data) {
            let item = records::diagnosis_alarm_item(d, appears);
            match alarm.send_diagnosis(d.slot, d.subslot, idents, appears, still, item, now) {
                Ok(_) => {
                    self.shared
                        .counters
                        .alarms_sent
                        .fetch_add(1, Ordering::Relaxed);
                }
                Err(e) => {
                    tracing::warn!(device = %self.shared.name(), "diagnosis alarm not sent: {e}")
                }
            }
            self.poll_alarm(now, out, n);
        }
    }

    /// Send what the CMDEV machine gives and apply its events.
    fn apply(&mut self, now: Instant, out: &mut Out, n: &Neighbours) {
        let ip = self.ip();
        while let Some(d) = self.cm.poll_transmit() {
            let SocketAddr::V4(to) = d.to else {
                continue;
            };
            let Some(dst) = n.get(to.ip()) else {
                // Nobody with this IP was seen: the kernel of a device would ARP first; the
                // controller always reaches the device first, so this is a stale peer.
                self.shared
                    .counters
                    .tx_dropped
                    .fetch_add(1, Ordering::Relaxed);
                continue;
            };
            match udp_frame(
                self.mac,
                *dst,
                ip,
                *to.ip(),
                PNIO_CM_PORT,
                to.port(),
                &d.bytes,
            ) {
                Ok(f) => {
                    self.shared.counters.tx_cm.fetch_add(1, Ordering::Relaxed);
                    out.ctl.push(f);
                }
                Err(_) => {
                    self.shared
                        .counters
                        .tx_dropped
                        .fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        while let Some(ev) = self.cm.poll_event() {
            match ev {
                CmdevEvent::ConnectRefused {
                    controller,
                    status,
                    why,
                } => {
                    tracing::warn!(device = %self.shared.name(), %controller, "connect rejected: PNIOStatus {} ({why})", status.in_words());
                    self.shared
                        .set_message(format!("connect from {controller} refused: {why}"));
                }
                CmdevEvent::IoArConnected {
                    ar, alarm_cr, plan, ..
                } => {
                    self.alarm = Some(AlarmCr::new(
                        self.cm.config().local_alarm_ref,
                        alarm_cr.local_alarm_reference,
                        alarm_cr.rta_timeout_factor,
                        alarm_cr.rta_retries,
                        self.mac,
                        ar.cm_initiator_mac,
                    ));
                    self.cyc.tripped.store(false, Ordering::Release);
                    self.cyc
                        .set_consumer(Some(plan.consumer.clone()), &self.shared.image);
                    self.watchdog = None;
                    let p = Provider::new(plan.provider, now, plan.period_ns);
                    self.cyc.standby.publish(Some(p.plan()));
                    self.provider = Some(p);
                    self.shared.image.set_device_status(IOXS_GOOD, IOXS_GOOD);
                    self.dcp.set_ar_active(true);
                    let who = format!(
                        "{} ({})",
                        ar.cm_initiator_station_name,
                        mac_text(&ar.cm_initiator_mac)
                    );
                    self.shared
                        .set_ar("Startup", Some(who), plan.period_ns / 1000);
                }
                CmdevEvent::DataExchange { .. } => {
                    self.shared.image.set_device_status(IOXS_GOOD, IOXS_GOOD);
                    self.shared.set_state("DataExchange");
                    self.shared.set_message(String::new());
                    // Diagnosis already active is reported to the new AR.
                    for d in self.records.diags.clone() {
                        self.send_diag_alarm(&d, true, now, out, n);
                    }
                }
                CmdevEvent::IoArEnded {
                    controller,
                    reason,
                    rta,
                    watchdog,
                    ..
                } => {
                    if watchdog {
                        self.shared
                            .counters
                            .watchdog_trips
                            .fetch_add(1, Ordering::Relaxed);
                    }
                    self.provider = None;
                    self.cyc.standby.publish(None);
                    self.watchdog = None;
                    self.cyc.set_consumer(None, &self.shared.image);
                    if let (Some(mut alarm), Some(st)) = (self.alarm.take(), rta) {
                        out.ctl.extend(alarm.abort(st));
                    }
                    self.alarm = None;
                    self.shared.image.set_device_status(IOXS_BAD, IOXS_BAD);
                    self.dcp.set_ar_active(false);
                    self.shared.set_ar("Idle", None, 0);
                    tracing::info!(device = %self.shared.name(), %controller, "AR ended: {reason}");
                    self.shared.set_message(format!("AR ended: {reason}"));
                }
            }
        }
    }
}

/// The CM peer of a datagram.
pub fn peer(ip: Ipv4Addr, port: u16) -> SocketAddr {
    SocketAddr::V4(SocketAddrV4::new(ip, port))
}

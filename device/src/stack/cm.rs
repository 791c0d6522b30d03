//! Connection management, the I/O shell: the UDP socket on 34964, the `pn-cm` thread, and
//! what an AR does to the rest of the daemon (the cyclic jobs, the process image status, the
//! alarm CR, the runtime's events). Every protocol decision (Connect checks and response,
//! PrmEnd, ApplicationReady and its retries, Release, Read/Write dispatch, the RPC layer's
//! retransmissions and fragments, the AR's timers) is the protocol crate's CMDEV machine
//! ([`pn_protocol::machine::cmdev::Cmdev`]); this file carries bytes and applies its events.
//! See `mod.rs` for why it is a plain thread.
//!
//! Per loop iteration: drain the messages from the other threads (alarm frames, link changes,
//! runtime commands), wait up to 5 ms for one datagram, then run the timers (the machine's,
//! the consumer watchdog flag from the real-time thread, RTA retransmission).

use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, TryRecvError};
use std::sync::Arc;
use std::time::Duration;

use pn_protocol::machine::alarm_cr::{AlarmCr, AlarmOutcome};
use pn_protocol::machine::cmdev::connect::ConnectLimits;
use pn_protocol::machine::cmdev::plan::{self, ConnectPlan, SlotEntry};
use pn_protocol::machine::cmdev::{
    ArPhase, Cmdev, CmdevApp, CmdevConfig, CmdevEvent, EndCause, IoArPlan,
};
use pn_protocol::machine::data_hold;
use pn_protocol::time::Instant;
use pn_protocol::wire::pnio::cm::ConnectRequest;
use pn_protocol::wire::pnio::record::RecordAddress;
use pn_protocol::wire::pnio::PnioStatus;
use pn_protocol::wire::rta::abort_reason;

use crate::dataplane::{
    AbortCause, AlarmSeverity, DiagnosisEntry, EventSink, SharedCounters, StackCommand,
    StackConfig, StackEvent,
};
use crate::image::{ProcessImage, IOXS_BAD, IOXS_GOOD};

use super::ar;
use super::cyclic::CyclicShared;
use super::records::Records;
use super::{CtlMsg, PlaneFlags, RawLink};

pub use pn_protocol::machine::cmdev::MAX_FRAGMENT_BODY;

/// The PNIO CM UDP port.
pub const CM_PORT: u16 = pn_protocol::wire::ip::PNIO_CM_PORT;

/// Everything the connection manager needs.
pub struct CmContext {
    pub cfg: StackConfig,
    pub image: Arc<ProcessImage>,
    pub events: EventSink,
    pub link: Arc<RawLink>,
    pub cyclic: Arc<CyclicShared>,
    pub counters: Arc<SharedCounters>,
    pub flags: Arc<PlaneFlags>,
    pub stop: Arc<AtomicBool>,
    /// The cyclic receive socket, whose filter follows the consumer job.
    pub cyclic_rx: Option<Arc<super::CyclicRx>>,
    /// The L2 services: station name, IP suite, MAU type and LLDP neighbour for the PDev
    /// real-data records.
    pub l2: Option<Arc<super::l2::L2Services>>,
}

struct Cm {
    ctx: CmContext,
    sock: UdpSocket,
    t0: std::time::Instant,
    machine: Cmdev<ConnectPlan>,
    records: Records,
    slots: Vec<SlotEntry>,
    /// The IO AR's alarm CR (RTA transport), from Connect to the AR's end.
    alarm: Option<AlarmCr>,
    /// The IO AR's data-hold time, for the watchdog's message.
    dht_ns: u64,
    /// The IO AR's parameters from its Connect, reported with `Connected`.
    ar_info: Option<crate::dataplane::ArInfo>,
    link_up: bool,
    eth_out: Vec<Vec<u8>>,
}

/// The application side of the CMDEV machine: the frame layout of this device's
/// configuration and its record store.
struct DeviceApp<'a> {
    ctx: &'a CmContext,
    records: &'a mut Records,
    slots: &'a [SlotEntry],
    link_up: bool,
    /// Runtime events of the writes done (sent once the machine returned).
    events: Vec<StackEvent>,
}

impl CmdevApp for DeviceApp<'_> {
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
            self.ctx.link.mac(),
            self.ctx.image.input_len(),
            self.ctx.cfg.safe_input_value,
            &[],
        )?;
        if !plan.wrong.is_empty() {
            tracing::warn!(
                controller = %req.ar.cm_initiator_station_name,
                "module mismatch: the controller expects other modules at (slot, subslot) \
                 {:?} than the configuration has; those submodules get no data",
                plan.wrong
            );
        }
        Ok(IoArPlan {
            input_frame_id: plan.input_frame_id,
            output_frame_id: plan.output_frame_id,
            module_diff: plan.module_diff.clone(),
            data_hold: pn_protocol::time::Duration(plan.dht_ns),
            plan,
        })
    }

    fn link_up(&mut self) -> bool {
        self.link_up = crate::dataplane::read_link_state(&self.ctx.cfg.nic).up;
        self.link_up
    }

    fn read_record(&mut self, a: &RecordAddress) -> Result<Vec<u8>, PnioStatus> {
        if super::records::is_pdev_real(a.index) {
            self.records.pdev = pdev_live(self.ctx, self.link_up);
        }
        self.records.read(a)
    }

    fn write_record(&mut self, a: &RecordAddress, data: &[u8]) -> Result<(), PnioStatus> {
        // Remanent records are stored durably (on this thread) before the response is built:
        // the controller is never told "written" for a value a crash could lose.
        let sink = &self.ctx.events;
        let ev = self.records.write(a, data, |ev| sink.commit(ev))?;
        self.events.extend(ev);
        Ok(())
    }
}

/// The CMDEV machine's parameters for a configuration (the daemon's device and the farm's
/// devices alike). `seed`: of the activity UUIDs of the device's own calls.
pub fn cmdev_config(cfg: &StackConfig, boot: u32, mac: [u8; 6], seed: [u8; 16]) -> CmdevConfig {
    let mut c = CmdevConfig::new(boot, mac, seed);
    // The cycles the configuration accepts (and its GSDML offers): CMDEV refuses a Connect
    // below them with the standard's PNIOStatus (DB 81 02 0B).
    c.limits = ConnectLimits {
        min_device_interval: cfg.min_device_interval,
    };
    // The parameter records the configuration declares: CMDEV refuses a wrong length or value.
    c.param_records = pn_device_formats::items::declared_records(&cfg.modules);
    c
}

/// Start the connection-manager thread. Binds UDP 34964 first so a bind error fails the start.
pub fn spawn(ctx: CmContext, rx: Receiver<CtlMsg>) -> std::io::Result<std::thread::JoinHandle<()>> {
    let sock = UdpSocket::bind(("0.0.0.0", CM_PORT))?;
    sock.set_read_timeout(Some(Duration::from_millis(5)))?;
    let boot = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as u32)
        .unwrap_or(1);
    let records = Records::from_config(&ctx.cfg);
    let slots = ar::layout(
        &ctx.cfg.modules,
        ctx.image.input_len(),
        ctx.image.output_len(),
    );
    let machine = Cmdev::new(cmdev_config(&ctx.cfg, boot, ctx.link.mac(), random_seed()));
    let mut cm = Cm {
        ctx,
        sock,
        t0: std::time::Instant::now(),
        machine,
        records,
        slots,
        alarm: None,
        dht_ns: 0,
        ar_info: None,
        link_up: true,
        eth_out: Vec::new(),
    };
    std::thread::Builder::new()
        .name("pn-cm".into())
        .spawn(move || cm.run(rx))
}

/// The seed of the machine's activity UUIDs: random, so two boots never reuse one.
fn random_seed() -> [u8; 16] {
    let mut b = [0u8; 16];
    if let Ok(mut f) = std::fs::File::open("/dev/urandom") {
        use std::io::Read;
        let _ = f.read_exact(&mut b);
    }
    b
}

/// A name field of a PDev block holds at most 255 bytes (u8 length). LLDP IDs can be longer
/// (up to 255 bytes raw, more once non-UTF-8 bytes became replacement characters): cut at a
/// character boundary, so a neighbour's odd ID never fails the whole record.
fn cut_name(mut s: String) -> String {
    let mut end = s.len().min(255);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s.truncate(end);
    s
}

/// "aa:bb:cc:dd:ee:ff" (as `LldpNeighbour::src_mac` holds it).
fn parse_mac(s: &str) -> Option<[u8; 6]> {
    let mut out = [0u8; 6];
    let mut parts = s.split(':');
    for b in &mut out {
        *b = u8::from_str_radix(parts.next()?, 16).ok()?;
    }
    parts.next().is_none().then_some(out)
}

fn mac_str(m: &[u8; 6]) -> String {
    pn_protocol::wire::ethernet::MacAddr(*m).to_string()
}

/// The interface and port now, for the PDev real-data records.
/// The LLDP neighbour as the PDev real-data records report it (`PdevLive::peer`: port ID,
/// chassis ID, MAC), for the daemon and the farm alike.
pub fn pdev_peer(n: &super::lldp::LldpNeighbour) -> (String, String, [u8; 6]) {
    // A PROFINET neighbour's Port ID "port-001.plc" gives port and station name; any
    // other neighbour (a switch) is reported with its raw Port ID and Chassis ID.
    let (port, chassis) = if n.station_name.is_empty() {
        (n.port_id.clone(), n.chassis_id.clone())
    } else {
        (n.port_name.clone(), n.station_name.clone())
    };
    (
        cut_name(port),
        cut_name(chassis),
        parse_mac(&n.src_mac).unwrap_or_default(),
    )
}

fn pdev_live(ctx: &CmContext, link_up: bool) -> super::records::PdevLive {
    let st = ctx.l2.as_ref().map(|l| l.status()).unwrap_or_default();
    let peer = st.lldp_neighbour.as_ref().map(pdev_peer);
    super::records::PdevLive {
        station_name: st.station_name,
        mac: ctx.link.mac(),
        ip_suite: st.ip_suite,
        link_up,
        mau_type: st.mau_type,
        peer,
        stats: super::portstats::read(&ctx.cfg.nic),
    }
}

fn cause_of(c: EndCause) -> AbortCause {
    match c {
        EndCause::Fault => AbortCause::Fault,
        EndCause::ReleasedByController => AbortCause::ReleasedByController,
        EndCause::AbortedByController => AbortCause::AbortedByController,
    }
}

impl Cm {
    fn now(&self) -> Instant {
        Instant::from_nanos(self.t0.elapsed().as_nanos() as u64)
    }

    fn send_udp(&self, data: &[u8], to: SocketAddr) {
        if self.sock.send_to(data, to).is_ok() {
            let k = &self.ctx.counters;
            k.tx_control_frames.fetch_add(1, Ordering::Relaxed);
            k.tx_frames.fetch_add(1, Ordering::Relaxed);
        } else {
            self.ctx
                .counters
                .dropped_frames
                .fetch_add(1, Ordering::Relaxed);
        }
    }

    fn flush_eth(&mut self) {
        for f in std::mem::take(&mut self.eth_out) {
            if self.ctx.link.send(&f) {
                self.ctx.counters.tx_frames.fetch_add(1, Ordering::Relaxed);
                self.ctx
                    .counters
                    .tx_control_frames
                    .fetch_add(1, Ordering::Relaxed);
            } else {
                self.ctx
                    .counters
                    .dropped_frames
                    .fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    fn event(&self, ev: StackEvent) {
        let _ = self.ctx.events.send(ev);
    }

    fn run(&mut self, rx: Receiver<CtlMsg>) {
        let mut buf = vec![0u8; 65536];
        loop {
            if self.ctx.stop.load(Ordering::Acquire) {
                self.end_io_ar(
                    "data plane stopped",
                    Some(abort_reason::AR_DEVICE_DEACTIVATED),
                    EndCause::Fault,
                );
                self.flush_eth();
                break;
            }
            loop {
                match rx.try_recv() {
                    Ok(m) => self.on_msg(m),
                    Err(TryRecvError::Empty) => break,
                    Err(TryRecvError::Disconnected) => {
                        self.ctx.stop.store(true, Ordering::Release);
                        break;
                    }
                }
            }
            if let Ok((n, from)) = self.sock.recv_from(&mut buf) {
                let k = &self.ctx.counters;
                k.rx_control_frames.fetch_add(1, Ordering::Relaxed);
                k.rx_frames.fetch_add(1, Ordering::Relaxed);
                self.on_datagram(&buf[..n], from);
            }
            self.timers();
            self.flush_eth();
        }
    }

    fn on_datagram(&mut self, data: &[u8], from: SocketAddr) {
        let now = self.now();
        let mut app = DeviceApp {
            ctx: &self.ctx,
            records: &mut self.records,
            slots: &self.slots,
            link_up: self.link_up,
            events: Vec::new(),
        };
        let valid = self.machine.handle_datagram(now, from, data, &mut app);
        let (link_up, events) = (app.link_up, app.events);
        self.link_up = link_up;
        if !valid {
            self.ctx
                .counters
                .invalid_frames
                .fetch_add(1, Ordering::Relaxed);
        }
        for e in events {
            self.event(e);
        }
        self.apply_machine();
    }

    /// End the IO AR (through the machine, which decides what the end means).
    fn end_io_ar(&mut self, reason: &str, rta_code: Option<u8>, cause: EndCause) {
        self.machine
            .end_io_ar(reason, rta_code.map(abort_reason::status), cause);
        self.apply_machine();
    }

    /// Send what the machine gives and apply its events to the daemon.
    fn apply_machine(&mut self) {
        while let Some(d) = self.machine.poll_transmit() {
            self.send_udp(&d.bytes, d.to);
        }
        while let Some(ev) = self.machine.poll_event() {
            match ev {
                CmdevEvent::ConnectRefused {
                    controller,
                    status,
                    why,
                } => {
                    tracing::warn!(%controller, "connect rejected: PNIOStatus {} ({why})", status.in_words())
                }
                CmdevEvent::IoArConnected {
                    ar, alarm_cr, plan, ..
                } => self.install_io_ar(&ar, &alarm_cr, plan),
                CmdevEvent::DataExchange { ar } => self.enter_data_exchange(&ar),
                CmdevEvent::IoArEnded {
                    controller,
                    reason,
                    rta,
                    cause,
                    reached_data,
                    watchdog,
                } => {
                    if watchdog {
                        self.ctx
                            .counters
                            .watchdog_trips
                            .fetch_add(1, Ordering::Relaxed);
                        self.event(StackEvent::Alarm {
                            severity: AlarmSeverity::Error,
                            source: "watchdog".into(),
                            message: reason.clone(),
                        });
                    }
                    self.tear_down_io_ar(&controller, &reason, rta, cause_of(cause), reached_data);
                }
            }
        }
    }

    // ------------------------------------------------------------------ messages

    fn on_msg(&mut self, m: CtlMsg) {
        let now = self.now();
        match m {
            CtlMsg::Alarm { frame_id, src, pdu } => {
                let from_controller = self
                    .machine
                    .io_ar()
                    .is_some_and(|a| a.ar.cm_initiator_mac == src);
                if let Some(alarm) = self.alarm.as_mut().filter(|_| from_controller) {
                    alarm.handle(frame_id, &pdu, now);
                }
            }
            CtlMsg::Link(up) => {
                tracing::info!(up, "link state");
                self.link_up = up;
                self.machine.handle_link(up);
                self.apply_machine();
                self.event(StackEvent::LinkChanged { up });
            }
            CtlMsg::Cmd(c) => self.on_command(c),
            CtlMsg::AbortAr { reason, rta_code } => {
                self.end_io_ar(&reason, Some(rta_code), EndCause::Fault);
                self.machine.clear_supervisors();
            }
        }
    }

    fn on_command(&mut self, c: StackCommand) {
        let now = self.now();
        match c {
            StackCommand::SetDiagnosis(d) => {
                let key = |e: &DiagnosisEntry| (e.slot, e.subslot, e.channel, e.error_type);
                if let Some(e) = self.records.diags.iter_mut().find(|e| key(e) == key(&d)) {
                    *e = d.clone();
                } else {
                    self.records.diags.push(d.clone());
                }
                self.ctx
                    .cyclic
                    .station_problem
                    .store(true, Ordering::Relaxed);
                self.send_diag_alarm(&d, true, now);
            }
            StackCommand::RemoveDiagnosis {
                slot,
                subslot,
                channel,
                error_type,
            } => {
                let pos = self.records.diags.iter().position(|e| {
                    e.slot == slot
                        && e.subslot == subslot
                        && e.channel == channel
                        && e.error_type == error_type
                });
                if let Some(p) = pos {
                    let d = self.records.diags.remove(p);
                    self.ctx
                        .cyclic
                        .station_problem
                        .store(!self.records.diags.is_empty(), Ordering::Relaxed);
                    self.send_diag_alarm(&d, false, now);
                }
            }
            StackCommand::SetHighResolutionTimer(on) => {
                self.ctx.cyclic.precise.store(on, Ordering::Relaxed);
            }
            StackCommand::Reset { mode, .. } => {
                self.end_io_ar(
                    &format!("reset ({mode:?})"),
                    Some(abort_reason::DCP_RESET_TO_FACTORY),
                    EndCause::Fault,
                );
                self.machine.clear_supervisors();
            }
        }
    }

    fn send_diag_alarm(&mut self, d: &DiagnosisEntry, appears: bool, now: Instant) {
        let idents = self.records.idents(d.slot, d.subslot).unwrap_or((0, 0));
        let still = self
            .records
            .diags
            .iter()
            .any(|e| e.slot == d.slot && e.subslot == d.subslot);
        let in_data = self
            .machine
            .io_ar()
            .is_some_and(|a| a.phase == ArPhase::Data);
        if let Some(alarm) = self.alarm.as_mut().filter(|_| in_data) {
            let item = super::records::diagnosis_alarm_item(d, appears);
            let sent = alarm.send_diagnosis(d.slot, d.subslot, idents, appears, still, item, now);
            if let Err(e) = sent {
                tracing::warn!("diagnosis alarm not sent: {e}");
            }
        }
    }

    // ------------------------------------------------------------------ timers

    fn timers(&mut self) {
        let now = self.now();
        // Consumer watchdog (flag set by the real-time thread).
        if self.ctx.cyclic.tripped.swap(false, Ordering::AcqRel) && self.machine.io_ar().is_some() {
            let info = self.ctx.cyclic.trip_info.load(Ordering::Relaxed);
            let msg = data_hold::Trip {
                missed: info >> 32,
                silence: pn_protocol::time::Duration((info & 0xFFFF_FFFF) * 1000),
            }
            .in_words(pn_protocol::time::Duration(self.dht_ns));
            self.event(StackEvent::Alarm {
                severity: AlarmSeverity::Error,
                source: "watchdog".into(),
                message: msg.clone(),
            });
            self.end_io_ar(&msg, Some(data_hold::ABORT_REASON), EndCause::Fault);
        }
        // The consumer's first valid frame (CPM FRUN -> RUN) hands supervision to the
        // data-hold watchdog.
        if self.ctx.cyclic.consumer_frames.load(Ordering::Acquire) != 0 {
            self.machine.handle_first_output_frame();
        }
        self.machine.handle_timeout(now);
        self.apply_machine();
        let mut outcomes = Vec::new();
        if let Some(alarm) = self.alarm.as_mut() {
            alarm.poll(now, &mut self.eth_out, &mut outcomes);
        }
        let mut end: Option<(String, PnioStatus, EndCause)> = None;
        for o in outcomes {
            match o {
                AlarmOutcome::Acked {
                    slot,
                    subslot,
                    alarm_type,
                    sequence,
                    ok,
                } => {
                    let c = if ok {
                        &self.ctx.counters.stack_alarm_tx_ack_ok
                    } else {
                        &self.ctx.counters.stack_alarm_tx_ack_fail
                    };
                    c.fetch_add(1, Ordering::Relaxed);
                    self.event(StackEvent::AlarmAcknowledged {
                        slot,
                        subslot,
                        alarm_type,
                        sequence,
                        ok,
                    });
                }
                AlarmOutcome::Received {
                    alarm_type,
                    slot,
                    subslot,
                } => {
                    self.ctx
                        .counters
                        .stack_alarm_rx_count
                        .fetch_add(1, Ordering::Relaxed);
                    self.event(StackEvent::Alarm {
                        severity: AlarmSeverity::Info,
                        source: "controller".into(),
                        message: format!(
                            "alarm type 0x{alarm_type:04x} from the controller for slot {slot} subslot 0x{subslot:04x}"
                        ),
                    });
                }
                AlarmOutcome::TransportFailed(_) | AlarmOutcome::ControllerAborted(_) => {
                    end = AlarmOutcome::first_end(end, o.ar_end());
                }
            }
        }
        if let Some((reason, st, cause)) = end {
            self.machine.end_io_ar(&reason, Some(st), cause);
            self.apply_machine();
        }
    }

    // ------------------------------------------------------------------ AR effects

    /// The machine accepted an IO AR: install its alarm CR and cyclic jobs.
    fn install_io_ar(
        &mut self,
        arb: &pn_protocol::wire::pnio::ar::ArBlockReq,
        acr: &pn_protocol::wire::pnio::alarm_cr::AlarmCrBlockReq,
        plan: ConnectPlan,
    ) {
        let own_mac = self.ctx.link.mac();
        self.alarm = Some(AlarmCr::new(
            self.machine.config().local_alarm_ref,
            acr.local_alarm_reference,
            acr.rta_timeout_factor,
            acr.rta_retries,
            own_mac,
            arb.cm_initiator_mac,
        ));
        self.dht_ns = plan.dht_ns;
        self.ar_info = Some(ar::describe(arb, &plan));
        let cyc = &self.ctx.cyclic;
        cyc.tripped.store(false, Ordering::Release);
        cyc.set_consumer(Some(plan.consumer.clone()), &self.ctx.image);
        if let Some(rx) = &self.ctx.cyclic_rx {
            rx.refresh(cyc);
        }
        cyc.set_job(Some(Arc::new(plan.provider.clone())));
        self.ctx.image.set_device_status(IOXS_GOOD, IOXS_GOOD);
        self.ctx
            .flags
            .ar_cycle_ns
            .store(plan.period_ns, Ordering::Release);
        let k = &self.ctx.counters;
        k.active_iocr_count.store(2, Ordering::Relaxed);
        k.iocr_active.store(0, Ordering::Relaxed);
        k.iocr_healthy.store(0, Ordering::Relaxed);
        tracing::info!(
            controller = %arb.cm_initiator_station_name,
            input_frame_id = plan.input_frame_id,
            output_frame_id = plan.output_frame_id,
            period_us = plan.period_ns / 1000,
            dht_us = plan.dht_ns / 1000,
            advanced_startup = arb.properties.startup_mode_advanced(),
            "connect accepted"
        );
    }

    fn enter_data_exchange(&mut self, arb: &pn_protocol::wire::pnio::ar::ArBlockReq) {
        // The data-hold watchdog is armed by the first valid output frame (the receive thread
        // does it), not here; until then the machine bounds the wait.
        self.ctx.image.set_device_status(IOXS_GOOD, IOXS_GOOD);
        self.ctx.flags.connected.store(true, Ordering::Release);
        let k = &self.ctx.counters;
        k.iocr_active.store(2, Ordering::Relaxed);
        k.iocr_healthy.store(2, Ordering::Relaxed);
        if let Ok(mut m) = self.ctx.flags.message.lock() {
            m.clear();
        }
        let who = format!(
            "{} ({})",
            arb.cm_initiator_station_name,
            mac_str(&arb.cm_initiator_mac)
        );
        let mut info = self.ar_info.take().unwrap_or_default();
        if let Some(v) = self.machine.io_ar() {
            info.controller_ip = v.peer.ip().to_string();
        }
        self.event(StackEvent::Connected {
            controller: who,
            ar: Some(info),
        });
        // Diagnosis that is already active is reported to the new AR.
        let diags = self.records.diags.clone();
        let now = self.now();
        for d in &diags {
            self.send_diag_alarm(d, true, now);
        }
    }

    /// The machine ended the IO AR: stop its cyclic jobs, send the ERR-RTA, report it.
    fn tear_down_io_ar(
        &mut self,
        controller: &str,
        reason: &str,
        rta: Option<PnioStatus>,
        cause: AbortCause,
        reached_data: bool,
    ) {
        let c = &self.ctx.cyclic;
        c.set_job(None);
        c.set_consumer(None, &self.ctx.image);
        if let Some(rx) = &self.ctx.cyclic_rx {
            rx.refresh(c);
        }
        c.tripped.store(false, Ordering::Release);
        if let (Some(mut alarm), Some(status)) = (self.alarm.take(), rta) {
            self.eth_out.extend(alarm.abort(status));
        }
        self.ctx.image.set_device_status(IOXS_BAD, IOXS_BAD);
        self.ctx.flags.connected.store(false, Ordering::Release);
        self.ctx.flags.ar_cycle_ns.store(0, Ordering::Release);
        let k = &self.ctx.counters;
        k.active_iocr_count.store(0, Ordering::Relaxed);
        k.iocr_active.store(0, Ordering::Relaxed);
        k.iocr_healthy.store(0, Ordering::Relaxed);
        if let Ok(mut m) = self.ctx.flags.message.lock() {
            *m = format!("AR ended: {reason}");
        }
        if reached_data {
            // The runtime logs the end of data exchange with this reason (once, as WARN).
            tracing::debug!(%controller, "AR ended: {reason}");
            self.event(StackEvent::Aborted {
                reason: reason.to_string(),
                cause,
            });
        } else {
            tracing::info!(%controller, "AR ended: {reason}");
            self.event(StackEvent::Alarm {
                severity: AlarmSeverity::Warning,
                source: "connect".into(),
                message: format!("connection attempt ended: {reason}"),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pn_protocol::machine::rpc_reassembly::{Reassembler, ReassemblyConfig};
    use pn_protocol::wire::rpc::{self, opnum, Drep, PnioRequest, RpcHeader, RpcPacket, Uuid};
    use pn_protocol::wire::Emit;

    #[test]
    fn long_names_are_cut_at_a_character_boundary() {
        assert_eq!(cut_name("port-001".into()), "port-001");
        assert_eq!(cut_name("x".repeat(300)).len(), 255);
        // 254 ASCII bytes, then a 3-byte replacement character: cut before it.
        let s = "a".repeat(254) + "\u{FFFD}\u{FFFD}";
        assert_eq!(cut_name(s), "a".repeat(254));
    }

    #[test]
    fn mac_text_parses_back() {
        let m = [0x02, 0xab, 0, 0x10, 0xff, 0x01];
        assert_eq!(parse_mac(&mac_str(&m)), Some(m));
        for bad in [
            "",
            "02:ab:00:10:ff",
            "02:ab:00:10:ff:01:02",
            "02:ab:00:10:ff:zz",
            "0x:ab:00:10:ff:01",
        ] {
            assert_eq!(parse_mac(bad), None, "{bad}");
        }
    }

    /// A request in either byte order survives emit -> parse -> reassembly -> PNIO parse.
    #[test]
    fn requests_in_both_byte_orders_parse() {
        for drep in [Drep::LITTLE_ENDIAN, Drep::BIG_ENDIAN] {
            let h = RpcHeader::request(
                drep,
                Uuid::pnio_object(1, 1, 0x0493),
                rpc::PNIO_DEVICE_INTERFACE,
                Uuid::from_bytes([7; 16]),
                3,
                opnum::CONNECT,
            );
            let body = PnioRequest::new(65000, vec![1, 2, 3, 4])
                .ndr(drep)
                .to_bytes()
                .unwrap();
            let wire = RpcPacket::new(h, body).to_bytes().unwrap();
            let pkt = RpcPacket::parse(&wire).unwrap();
            assert_eq!(pkt.header.drep, drep);
            let mut r = Reassembler::new(ReassemblyConfig::default());
            let m = r.receive(Instant::ZERO, &pkt).unwrap().message.unwrap();
            assert_eq!(m.header.drep, drep);
            let req = PnioRequest::parse(&m.body, m.header.drep).unwrap();
            assert_eq!(req.data, vec![1, 2, 3, 4]);
        }
    }
}

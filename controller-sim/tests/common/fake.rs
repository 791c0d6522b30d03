//! [`FakeDevice`]: a PROFINET device for the controller's tests that is only an I/O shell
//! around the protocol crate's machines, as pn-device is:
//!
//! * connection management: [`Cmdev`] on the CM UDP socket (Connect, Control, Release,
//!   Read, Write, the device's ApplicationReady call and its retries, the AR's end);
//! * DCP: [`DcpResponder`] (Identify with its response delay, Get, Set);
//! * alarms: [`AlarmCr`] (notifications, transport ACKs, AlarmAck, ERR-RTA both ways);
//! * cyclic data: [`Provider`], [`Consumer`] and the data-hold rule [`DataHold`].
//!
//! The shell adds only what a test peer needs: a record of what it saw ([`Seen`], taken from
//! the machines' events and from the frames and datagrams it carries) and a few fault knobs
//! ([`FakeConfig::connect_status`], [`FakeConfig::module_diff`], [`FakeDevice::go_silent`]).

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration as StdDuration;

use pn_controller::netif::{InterfaceInfo, RawSocket};
use pn_controller::rtsched;
use pn_protocol::machine::alarm_cr::{AlarmCr, AlarmOutcome};
use pn_protocol::machine::cmdev::connect::{
    cmrpc, connect_error, err1, response_frame_ids, ConnectLimits,
};
use pn_protocol::machine::cmdev::{
    ArPhase, Cmdev, CmdevApp, CmdevConfig, CmdevEvent, EndCause, IoArPlan,
};
use pn_protocol::machine::cyclic::{Consumer, CyclicTiming, Provider, RxOutcome};
use pn_protocol::machine::data_hold::{self, DataHold};
use pn_protocol::machine::dcp_delay::response_delay;
use pn_protocol::machine::dcp_responder::{DcpEvent, DcpIdentity, DcpResponder};
use pn_protocol::machine::rpc_reassembly::{Reassembler, ReassemblyConfig};
use pn_protocol::time::{Duration, Instant};
use pn_protocol::wire::dcp::{DcpRepr, ServiceId};
use pn_protocol::wire::ethernet::{self, EthernetRepr, MacAddr, VlanTag};
use pn_protocol::wire::pnio::cm::ConnectRequest;
use pn_protocol::wire::pnio::diagnosis::{ChannelDiagnosis, ChannelProperties, UserStructure};
use pn_protocol::wire::pnio::iocr::iocr_type;
use pn_protocol::wire::pnio::module_diff::{module_state, DiffApi, DiffModule, ModuleDiffBlock};
use pn_protocol::wire::pnio::record::{RecordAddress, WriteRequest};
use pn_protocol::wire::pnio::PnioStatus;
use pn_protocol::wire::rpc::{opnum, PacketType, PnioRequest, RpcPacket};
use pn_protocol::wire::rt::{self, FrameId};
use pn_protocol::wire::rta::{abort_reason, RtaPduType, RtaRepr};

use super::DEV_IP;

/// What the fake device saw.
#[derive(Debug, Default, Clone)]
pub struct Seen {
    pub dcp_identify: u32,
    pub identify_delays_ms: Vec<u64>,
    pub dcp_set: Vec<DcpRepr>,
    /// The data of the last Connect request CMDEV ran.
    pub connect: Option<Vec<u8>>,
    /// The Write requests CMDEV ran (each once, however often the controller sent it).
    pub writes: Vec<WriteRequest>,
    pub prm_end: bool,
    pub app_ready_confirmed: bool,
    pub released: bool,
    /// Why CMDEV ended each IO AR.
    pub ended: Vec<String>,
    /// The ERR-RTA status the device sent when its AR ended.
    pub rta_sent: Option<PnioStatus>,
    pub output_frames: u64,
    pub output_new_data: u64,
    pub output_invalid: u64,
    pub output_duplicates: u64,
    pub other_frame_ids: Vec<u16>,
    pub short_frames: u64,
    pub watchdog_expired: bool,
    pub last_data_status: Option<u8>,
    pub last_c_sdu: Vec<u8>,
    pub alarm_acks: u32,
    pub transport_acks: u32,
    /// The ERR-RTA status the controller sent.
    pub rta_err: Option<PnioStatus>,
    pub raw_frames: Vec<Vec<u8>>,
}

pub struct FakeConfig {
    pub name: String,
    pub vendor_id: u16,
    pub device_id: u16,
    /// Fault: refuse the Connect with this status (the application's plan refuses it).
    pub connect_status: Option<PnioStatus>,
    /// Fault: report slot 1 as a wrong module (a ModuleDiffBlock in the Connect response).
    pub module_diff: bool,
    /// Keep every received frame (for the tshark oracle).
    pub capture: bool,
}

/// The application's plan of an IO AR: what the shell needs to run its cyclic data.
#[derive(Debug, Clone)]
struct Plan {
    timing: CyclicTiming,
    input_len: usize,
    output_len: usize,
    output_dhf: u16,
}

/// The device application CMDEV asks: the plan of a Connect and the record store.
struct App {
    cfg: Arc<FakeConfig>,
    /// Records written during the current datagram (the shell keeps the Write it ran).
    wrote: usize,
}

impl CmdevApp for App {
    type Plan = Plan;
    fn plan_io_ar(
        &mut self,
        req: &ConnectRequest,
        _limits: &ConnectLimits,
    ) -> Result<IoArPlan<Plan>, PnioStatus> {
        if let Some(st) = self.cfg.connect_status {
            return Err(st);
        }
        let find = |t| req.iocrs.iter().find(|c| c.iocr_type == t);
        let wrong = connect_error(err1::CMRPC, cmrpc::WRONG_BLOCK_COUNT);
        let (input, output) = (find(iocr_type::INPUT), find(iocr_type::OUTPUT));
        let (Some(input), Some(output)) = (input, output) else {
            return Err(wrong);
        };
        let (in_id, out_id) = response_frame_ids(input, output, &[]);
        let timing = CyclicTiming::new(output.send_clock_factor, output.reduction_ratio)
            .map_err(|_| wrong)?;
        let module_diff = self.cfg.module_diff.then(|| ModuleDiffBlock {
            version: (1, 0),
            apis: vec![DiffApi {
                api: 0,
                modules: vec![DiffModule {
                    slot: 1,
                    module_ident: 0x99,
                    module_state: module_state::WRONG_MODULE,
                    submodules: vec![],
                }],
            }],
        });
        Ok(IoArPlan {
            input_frame_id: in_id,
            output_frame_id: out_id,
            module_diff,
            data_hold: timing
                .interval()
                .saturating_mul(u64::from(output.data_hold_factor.max(1))),
            plan: Plan {
                timing,
                input_len: usize::from(input.data_length),
                output_len: usize::from(output.data_length),
                output_dhf: output.data_hold_factor,
            },
        })
    }
    fn link_up(&mut self) -> bool {
        true
    }
    fn read_record(&mut self, _a: &RecordAddress) -> Result<Vec<u8>, PnioStatus> {
        Ok(b"IM0-FAKE".to_vec())
    }
    fn write_record(&mut self, _a: &RecordAddress, _data: &[u8]) -> Result<(), PnioStatus> {
        self.wrote += 1;
        Ok(())
    }
}

/// The cyclic and alarm side of the IO AR CMDEV accepted.
struct Io {
    provider: Provider,
    consumer: Consumer,
    out_id: u16,
    input_len: usize,
    dht: Duration,
    /// Armed with the controller's first valid output frame (CPM RUN).
    hold: Option<DataHold>,
    alarm: AlarmCr,
}

/// Everything the three shell threads share.
struct State {
    cm: Cmdev<Plan>,
    app: App,
    dcp: DcpResponder,
    io: Option<Io>,
    /// Reassembles the CM calls a second time, only to record what CMDEV ran.
    tap: Reassembler,
    udp: UdpSocket,
    raw: Arc<RawSocket>,
    mac: MacAddr,
    seen: Arc<Mutex<Seen>>,
}

pub struct FakeDevice {
    pub seen: Arc<Mutex<Seen>>,
    stop: Arc<AtomicBool>,
    silent: Arc<AtomicBool>,
    state: Arc<Mutex<State>>,
    inputs: Arc<Mutex<Vec<u8>>>,
    mac: MacAddr,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl FakeDevice {
    /// Start on `ifname` (call from a thread inside the device namespace).
    pub fn start(ifname: &str, cfg: FakeConfig) -> FakeDevice {
        let info = InterfaceInfo::lookup(ifname).expect("interface");
        let raw = Arc::new(RawSocket::open(&info).expect("raw socket"));
        // A previous fake in this namespace may still be closing its socket: retry briefly.
        let udp = (0..100)
            .find_map(|_| {
                UdpSocket::bind(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 34964))
                    .map_err(|_| std::thread::sleep(StdDuration::from_millis(20)))
                    .ok()
            })
            .expect("udp 34964");
        udp.set_read_timeout(Some(StdDuration::from_millis(20)))
            .unwrap();
        let mac = info.mac;
        let now = rtsched::now();
        let mut seed = [0u8; 16];
        seed[..6].copy_from_slice(&mac.0);
        seed[8..].copy_from_slice(&now.as_nanos().to_le_bytes());
        let dcp = DcpResponder::new(
            DcpIdentity {
                mac,
                station_name: cfg.name.clone(),
                device_vendor: "fake".into(),
                vendor_id: cfg.vendor_id,
                device_id: cfg.device_id,
                ip: DEV_IP,
                mask: Ipv4Addr::new(255, 255, 255, 0),
                gateway: Ipv4Addr::UNSPECIFIED,
                device_instance: (0, 1),
                device_initiative: false,
            },
            now,
        );
        let seen = Arc::new(Mutex::new(Seen::default()));
        let cfg = Arc::new(cfg);
        let state = Arc::new(Mutex::new(State {
            cm: Cmdev::new(CmdevConfig::new(1, mac.0, seed)),
            app: App {
                cfg: cfg.clone(),
                wrote: 0,
            },
            dcp,
            io: None,
            tap: Reassembler::new(ReassemblyConfig::default()),
            udp: udp.try_clone().expect("udp clone"),
            raw: raw.clone(),
            mac,
            seen: seen.clone(),
        }));
        let stop = Arc::new(AtomicBool::new(false));
        let silent = Arc::new(AtomicBool::new(false));
        let inputs = Arc::new(Mutex::new(vec![0u8; 40]));
        let mut threads = Vec::new();
        // Raw receive: DCP, cyclic, alarms.
        {
            let (state, stop, capture) = (state.clone(), stop.clone(), cfg.capture);
            threads.push(std::thread::spawn(move || {
                let mut buf = vec![0u8; 2048];
                while !stop.load(Ordering::Relaxed) {
                    let Ok(Some(n)) = raw.recv(&mut buf, StdDuration::from_millis(5)) else {
                        continue;
                    };
                    let mut st = state.lock().unwrap();
                    if capture {
                        st.seen.lock().unwrap().raw_frames.push(buf[..n].to_vec());
                    }
                    st.on_frame(&buf[..n], rtsched::now());
                }
            }));
        }
        // Timers: cyclic send, data-hold supervision, CMDEV, AlarmCR and DCP timers.
        {
            let (state, stop, inputs, silent) =
                (state.clone(), stop.clone(), inputs.clone(), silent.clone());
            threads.push(std::thread::spawn(move || {
                let mut next = rtsched::now();
                while !stop.load(Ordering::Relaxed) {
                    next += Duration::from_millis(1);
                    rtsched::sleep_until(next);
                    let inputs = inputs.lock().unwrap().clone();
                    let mut st = state.lock().unwrap();
                    st.tick(rtsched::now(), &inputs, silent.load(Ordering::Relaxed));
                }
            }));
        }
        // The CM socket: datagrams into CMDEV.
        {
            let (state, stop) = (state.clone(), stop.clone());
            threads.push(std::thread::spawn(move || {
                let mut buf = vec![0u8; 65536];
                while !stop.load(Ordering::Relaxed) {
                    let Ok((n, from)) = udp.recv_from(&mut buf) else {
                        continue;
                    };
                    state
                        .lock()
                        .unwrap()
                        .on_datagram(&buf[..n], from, rtsched::now());
                }
            }));
        }
        FakeDevice {
            seen,
            stop,
            silent,
            state,
            inputs,
            mac,
            threads,
        }
    }

    /// Fault: stop sending cyclic frames (everything else keeps running).
    pub fn go_silent(&self) {
        self.silent.store(true, Ordering::Relaxed);
    }

    pub fn mac(&self) -> MacAddr {
        self.mac
    }

    pub fn seen(&self) -> Seen {
        self.seen.lock().unwrap().clone()
    }

    /// Set the input C_SDU (data + IOPS as laid out by the controller).
    pub fn set_inputs(&self, c_sdu: &[u8]) {
        *self.inputs.lock().unwrap() = c_sdu.to_vec();
    }

    /// Send a diagnosis alarm (channel 3 short circuit on slot 1/1) on the AlarmCR.
    pub fn send_diag_alarm(&self) {
        let mut st = self.state.lock().unwrap();
        let now = rtsched::now();
        let Some(io) = st.io.as_mut() else { return };
        let item = UserStructure::Channel(vec![ChannelDiagnosis {
            channel_number: 3,
            properties: ChannelProperties(0x0800),
            error_type: 1,
        }]);
        let _ = io
            .alarm
            .send_diagnosis(1, 1, (0x32, 0x132), true, false, item, now);
        st.poll_alarm(now);
    }

    /// Wait until `f(seen)` holds (polling), up to `timeout`.
    pub fn wait(&self, timeout: StdDuration, f: impl Fn(&Seen) -> bool) -> bool {
        pn_testkit::poll::until(timeout, || f(&self.seen.lock().unwrap()))
    }
}

impl State {
    fn send_raw(&self, frame: &[u8]) {
        let _ = self.raw.send(frame);
    }

    /// One received Ethernet frame.
    fn on_frame(&mut self, f: &[u8], now: Instant) {
        let Ok((eth, payload)) = EthernetRepr::parse_frame(f) else {
            return;
        };
        if eth.ethertype != ethernet::ethertype::PROFINET || eth.src == self.mac {
            return;
        }
        let Ok(id) = rt::frame_id(payload) else {
            return;
        };
        if id.is_dcp() {
            self.on_dcp(f, &payload[2..], now);
        } else if id.0 == 0xFC01 || id.0 == 0xFE01 {
            if let Ok(r) = RtaRepr::parse(&payload[2..]) {
                let mut s = self.seen.lock().unwrap();
                if r.pdu_type == RtaPduType::Ack {
                    s.transport_acks += 1;
                }
                if let Some(st) = r.err_status() {
                    s.rta_err = Some(st);
                }
            }
            let from_controller = self
                .cm
                .io_ar()
                .is_some_and(|a| a.ar.cm_initiator_mac == eth.src.0);
            if let Some(io) = self.io.as_mut().filter(|_| from_controller) {
                io.alarm.handle(id.0, &payload[2..], now);
                self.poll_alarm(now);
            }
        } else if id.is_cyclic() {
            self.on_cyclic(eth.src, id.0, payload, now);
        }
    }

    fn on_dcp(&mut self, frame: &[u8], pdu: &[u8], now: Instant) {
        let out = self.dcp.on_frame(frame, now);
        if out.handled {
            if let Ok(d) = DcpRepr::parse(pdu) {
                let mut s = self.seen.lock().unwrap();
                match d.service_id {
                    ServiceId::Identify => {
                        s.dcp_identify += 1;
                        if d.response_delay > 1 {
                            let delay = response_delay(self.mac, d.response_delay);
                            s.identify_delays_ms.push(delay.as_nanos() / 1_000_000);
                        }
                    }
                    ServiceId::Set => s.dcp_set.push(d),
                    _ => {}
                }
            }
        }
        for f in &out.frames {
            self.send_raw(f);
        }
        for ev in out.events {
            if let DcpEvent::AbortArs { reason } = ev {
                let code = if reason.contains("name") {
                    abort_reason::DCP_STATION_NAME_CHANGED
                } else {
                    abort_reason::DCP_RESET_TO_FACTORY
                };
                let rta = Some(abort_reason::status(code));
                self.cm.end_io_ar(reason, rta, EndCause::Fault);
                self.cm.clear_supervisors();
            }
        }
        self.pump(now);
    }

    fn on_cyclic(&mut self, src: MacAddr, id: u16, payload: &[u8], now: Instant) {
        let mut s = self.seen.lock().unwrap();
        let Some(io) = self.io.as_mut().filter(|io| io.out_id == id) else {
            s.other_frame_ids.push(id);
            return;
        };
        s.output_frames += 1;
        match io.consumer.on_rt_payload(now, src, payload) {
            RxOutcome::NewData { status, c_sdu } => {
                s.output_new_data += 1;
                s.last_data_status = Some(status.data_status.0);
                s.last_c_sdu = payload[c_sdu.0..c_sdu.1].to_vec();
            }
            RxOutcome::Duplicate => s.output_duplicates += 1,
            RxOutcome::Invalid(why) => {
                s.output_invalid += 1;
                if why.contains("short") || why.contains("length") || why.contains("trunc") {
                    s.short_frames += 1;
                }
            }
            RxOutcome::NotForUs => {}
        }
    }

    /// One CM datagram: CMDEV runs it; the tap records the call it ran.
    fn on_datagram(&mut self, data: &[u8], from: SocketAddr, now: Instant) {
        let call = RpcPacket::parse(data)
            .ok()
            .filter(|p| p.header.packet_type == PacketType::Request)
            .and_then(|p| self.tap.receive(now, &p).ok())
            .and_then(|r| r.message)
            .and_then(|m| {
                let req = PnioRequest::parse(&m.body, m.header.drep).ok()?;
                Some((m.header.opnum, req.data))
            });
        self.app.wrote = 0;
        let State { cm, app, .. } = self;
        cm.handle_datagram(now, from, data, app);
        let mut s = self.seen.lock().unwrap();
        match call {
            Some((opnum::CONNECT, data)) => s.connect = Some(data),
            Some((opnum::WRITE, data)) if self.app.wrote > 0 => {
                if let Ok(w) = WriteRequest::parse(&data) {
                    s.writes.push(w);
                }
            }
            _ => {}
        }
        if self.cm.io_ar().is_some_and(|a| a.phase != ArPhase::Startup) {
            s.prm_end = true;
        }
        drop(s);
        self.pump(now);
    }

    /// The 1 ms tick: provide, supervise, run the machines' timers.
    fn tick(&mut self, now: Instant, inputs: &[u8], silent: bool) {
        let mut trip = None;
        if let Some(io) = self.io.as_mut() {
            let frames = io.consumer.stats().new_data;
            if frames > 0 {
                // CPM RUN: the data-hold rule takes over from the first-frame bound.
                self.cm.handle_first_output_frame();
                let hold = io
                    .hold
                    .get_or_insert_with(|| DataHold::new(io.dht, Duration::from_millis(1), frames));
                let last = io.consumer.last_new_data().unwrap_or(now);
                trip = hold.on_interval(now, frames, last);
            }
            let mut c_sdu = inputs.to_vec();
            c_sdu.resize(io.input_len, 0x80);
            let mut frame = [0u8; 1600];
            if let Ok(Some(n)) = io.provider.poll_send(now, &c_sdu, &mut frame) {
                if !silent {
                    let _ = self.raw.send(&frame[..n]);
                }
            }
        }
        if let Some(t) = trip {
            self.seen.lock().unwrap().watchdog_expired = true;
            let reason = format!(
                "watchdog: no valid frame from the controller within the data-hold time \
                 ({} cycles, {} us since the last one)",
                t.missed,
                t.silence.as_micros()
            );
            let rta = Some(abort_reason::status(data_hold::ABORT_REASON));
            self.cm.end_io_ar(&reason, rta, EndCause::Fault);
        }
        if self.cm.poll_timeout().is_some_and(|t| t <= now) {
            self.cm.handle_timeout(now);
        }
        for f in self.dcp.poll(now) {
            self.send_raw(&f);
        }
        self.poll_alarm(now);
        self.pump(now);
    }

    /// Run the AlarmCR: send its frames, act on its outcomes.
    fn poll_alarm(&mut self, now: Instant) {
        let Some(io) = self.io.as_mut() else {
            return;
        };
        let (mut frames, mut outcomes) = (Vec::new(), Vec::new());
        io.alarm.poll(now, &mut frames, &mut outcomes);
        for f in &frames {
            self.send_raw(f);
        }
        let mut end = None;
        for o in outcomes {
            match o {
                AlarmOutcome::Acked { .. } => self.seen.lock().unwrap().alarm_acks += 1,
                AlarmOutcome::Received { .. } => {}
                AlarmOutcome::TransportFailed(reason) => {
                    let st = abort_reason::status(abort_reason::AR_ALARM_SEND_CNF_NEG);
                    end.get_or_insert((reason, st, EndCause::Fault));
                }
                AlarmOutcome::ControllerAborted(st) => {
                    let reason = format!(
                        "the controller ended the AR with ERR-RTA {}",
                        abort_reason::status_text(st)
                    );
                    end = Some((reason, st, EndCause::AbortedByController));
                }
            }
        }
        if let Some((reason, st, cause)) = end {
            self.cm.end_io_ar(&reason, Some(st), cause);
            self.pump(now);
        }
    }

    /// Send what CMDEV gives and act on its events.
    fn pump(&mut self, now: Instant) {
        while let Some(d) = self.cm.poll_transmit() {
            let _ = self.udp.send_to(&d.bytes, d.to);
        }
        while let Some(ev) = self.cm.poll_event() {
            match ev {
                CmdevEvent::ConnectRefused { .. } => {}
                CmdevEvent::IoArConnected {
                    ar,
                    alarm_cr,
                    plan,
                    input_frame_id,
                    output_frame_id,
                    data_hold,
                } => {
                    let ctl_mac = MacAddr(ar.cm_initiator_mac);
                    let eth = EthernetRepr {
                        dst: ctl_mac,
                        src: self.mac,
                        vlan: Some(VlanTag::RT_CYCLIC),
                        ethertype: ethernet::ethertype::PROFINET,
                    };
                    let fid = FrameId(output_frame_id);
                    let consumer = Consumer::new(fid, plan.timing, plan.output_dhf, now)
                        .with_source(ctl_mac)
                        .with_c_sdu_len(plan.output_len);
                    self.io = Some(Io {
                        provider: Provider::new(eth, FrameId(input_frame_id), plan.timing, now, 0),
                        consumer,
                        out_id: output_frame_id,
                        input_len: plan.input_len,
                        dht: data_hold,
                        hold: None,
                        alarm: AlarmCr::new(
                            self.cm.config().local_alarm_ref,
                            alarm_cr.local_alarm_reference,
                            alarm_cr.rta_timeout_factor,
                            alarm_cr.rta_retries,
                            self.mac.0,
                            ar.cm_initiator_mac,
                        ),
                    });
                    self.dcp.set_ar_active(true);
                }
                CmdevEvent::DataExchange { .. } => {
                    self.seen.lock().unwrap().app_ready_confirmed = true;
                }
                CmdevEvent::IoArEnded {
                    reason,
                    rta,
                    cause,
                    watchdog,
                    ..
                } => {
                    let mut s = self.seen.lock().unwrap();
                    s.released |= cause == EndCause::ReleasedByController;
                    s.watchdog_expired |= watchdog;
                    s.ended.push(reason);
                    if let (Some(mut io), Some(st)) = (self.io.take(), rta) {
                        s.rta_sent = Some(st);
                        for f in io.alarm.abort(st) {
                            let _ = self.raw.send(&f);
                        }
                    }
                    self.io = None;
                    self.dcp.set_ar_active(false);
                }
            }
        }
    }
}

impl Drop for FakeDevice {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

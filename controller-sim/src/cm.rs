//! The connection-management shell: each AR's IEC 61158-6-10 CMCTL role is the protocol
//! crate's sans-IO machine ([`pn_protocol::machine::cmctl`]); this file only feeds it the
//! datagrams of the PNIO-CM socket and its timeouts, sends what it produces, and acts on its
//! events (set up the cyclic and alarm machines, change the AR's state, hand results to the
//! callers waiting for them).

use pn_protocol::wire::Emit;
use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration as StdDuration;

use pn_protocol::machine::alarm_receiver::AlarmReceiver;
use pn_protocol::machine::cmctl::server::{self, Inbound};
use pn_protocol::machine::cmctl::{
    self, CallError, Cmctl, CmctlConfig, CmctlError, CmctlEvent, Connected, Datagram, DatagramKind,
    Phase, RecordId, RpcClient, RpcClientConfig,
};
use pn_protocol::machine::cmdev::connect::FRAME_ID_DEVICE_CHOOSES;
use pn_protocol::machine::cyclic::{Consumer, ConsumerStats, CyclicTiming, Provider};
use pn_protocol::time::{Duration, Instant};
use pn_protocol::wire::ethernet::{self, EthernetRepr, MacAddr, VlanTag};
use pn_protocol::wire::pnio::record::{self, ReadReqHeaderRepr, ReadRequest, RecordAddress};
use pn_protocol::wire::rpc::{self, PnioResponse, RpcPacket, Uuid};
use pn_protocol::wire::rt::FrameId;
use pn_protocol::wire::rta as wrta;

use crate::ar::{phase, ArCm, ArConfig, ArHandle, ArInner, ArState, Inputs};
use crate::cmreq::{self, ArIds};
use crate::controller::{random_uuid, Controller, ControllerConfig, Shared};
use crate::cyclic::{ArIo, ArTx};
use crate::dcp::DeviceInfo;
use crate::faults::AppReadyFault;
use crate::rtsched;
use crate::Error;

impl Shared {
    // ------------------------------------------------------------------------------------
    // Connection management: the shell around each AR's CMCTL machine
    // ------------------------------------------------------------------------------------

    /// Run `f` on the AR's machine, then act on what it produced: answers to the device's
    /// requests go out first (ApplicationReady is confirmed before the AR counts as in data
    /// exchange), then the events are acted on, then our own requests (a Connect response
    /// sets up the cyclic and alarm machines before the parameter Write it triggers goes out).
    pub(crate) fn cm_drive<R>(&self, ar: &ArInner, f: impl FnOnce(&mut Cmctl, Instant) -> R) -> R {
        let now = rtsched::now();
        let (r, events, out) = {
            let mut g = ar.state.lock().unwrap_or_else(|p| p.into_inner());
            let r = f(&mut g.cm, now);
            let events: Vec<_> = std::iter::from_fn(|| g.cm.poll_event()).collect();
            let out: Vec<_> = std::iter::from_fn(|| g.cm.poll_transmit()).collect();
            (r, events, out)
        };
        let (mut calls, answers): (Vec<_>, Vec<_>) =
            out.into_iter().partition(|d| d.kind == DatagramKind::Call);
        for d in answers {
            self.send_datagram(ar, d);
        }
        let mut refused = false;
        for e in events {
            refused |= !self.on_cm_event(ar, e, now);
        }
        if refused {
            // The shell could not take the connection up: the machine ends, and the requests
            // it made meanwhile stay unsent.
            calls.clear();
            let events: Vec<_> = {
                let mut g = ar.state.lock().unwrap_or_else(|p| p.into_inner());
                g.cm.abort();
                std::iter::from_fn(|| g.cm.poll_event()).collect()
            };
            for e in events {
                self.on_cm_event(ar, e, now);
            }
        }
        for d in calls {
            self.send_datagram(ar, d);
        }
        r
    }

    /// Wait until `take` finds what the caller waits for, running the machine's timers while
    /// waiting (every timer of the machine belongs to a service some caller waits for).
    pub(crate) fn cm_wait<T>(
        &self,
        ar: &ArInner,
        mut take: impl FnMut(&mut ArCm) -> Option<T>,
    ) -> T {
        loop {
            {
                let mut g = ar.state.lock().unwrap_or_else(|p| p.into_inner());
                loop {
                    if let Some(t) = take(&mut g) {
                        return t;
                    }
                    let now = rtsched::now();
                    g = match g.cm.poll_timeout() {
                        Some(due) if due <= now => break,
                        Some(due) => {
                            let left = StdDuration::from_nanos((due - now).as_nanos());
                            ar.cond
                                .wait_timeout(g, left)
                                .unwrap_or_else(|p| p.into_inner())
                                .0
                        }
                        None => ar.cond.wait(g).unwrap_or_else(|p| p.into_inner()),
                    };
                }
            }
            self.cm_drive(ar, |m, now| m.handle_timeout(now));
        }
    }

    /// Act on one event of the machine; false when the shell cannot go on with the AR (the
    /// caller then aborts the machine).
    pub(crate) fn on_cm_event(&self, ar: &ArInner, e: CmctlEvent, now: Instant) -> bool {
        let mut go_on = true;
        let outcome = match e {
            CmctlEvent::Connected(c) => match self.on_connected(ar, &c, now) {
                Ok(()) => {
                    self.set_state(ar, ArState::Parameterizing);
                    return true;
                }
                Err(e) => {
                    go_on = false;
                    Outcome::Established(Err(e))
                }
            },
            CmctlEvent::ParameterEnd => {
                self.set_state(ar, ArState::WaitApplicationReady);
                return true;
            }
            CmctlEvent::Established => {
                ar.enter_data_exchange();
                self.set_state(ar, ArState::DataExchange);
                Outcome::Established(Ok(()))
            }
            CmctlEvent::Failed {
                phase: Phase::Release,
                error,
            } => Outcome::Released(Err(error)),
            CmctlEvent::Failed { phase, error } => {
                Outcome::Established(Err(cm_error(ar, phase.service(), error)))
            }
            CmctlEvent::Released => Outcome::Released(Ok(())),
            CmctlEvent::RecordDone { id, result } => Outcome::Record(id, result),
        };
        {
            let mut g = ar.state.lock().unwrap_or_else(|p| p.into_inner());
            match outcome {
                Outcome::Established(r) => {
                    g.established.get_or_insert(r);
                }
                Outcome::Released(r) => g.released = Some(r),
                Outcome::Record(id, r) => {
                    g.records.insert(id, r);
                }
            }
        }
        ar.cond.notify_all();
        go_on
    }

    /// The device accepted the Connect: its MAC and FrameIDs are known; the provider, the
    /// consumer and the alarm channels start.
    pub(crate) fn on_connected(
        &self,
        a: &ArInner,
        c: &Connected,
        now: Instant,
    ) -> Result<(), Error> {
        let result = &c.response;
        if let Some(d) = &result.module_diff {
            let lines = cmreq::describe_module_diff(d);
            if !lines.is_empty() {
                tracing::warn!(ar = a.id, "ModuleDiffBlock: {}", lines.join("; "));
            }
        }
        *a.module_diff.lock().unwrap_or_else(|p| p.into_inner()) = result.module_diff.clone();
        a.set_mac(c.device_mac);
        let (in_id, out_id) = (c.input_frame_id, c.output_frame_id);
        if in_id != a.ids.input_frame_id {
            tracing::warn!(
                ar = a.id,
                "the device answered input FrameID {in_id:#06x} for the requested {:#06x}; \
                 using the device's",
                a.ids.input_frame_id
            );
        }
        a.frame_ids.store(
            (u32::from(in_id) << 16) | u32::from(out_id),
            Ordering::Release,
        );
        let t = CyclicTiming::new(a.timing.send_clock_factor, a.timing.reduction_ratio)
            .map_err(|e| Error::Config(e.to_string()))?;
        {
            let mut io = a.io.lock().unwrap_or_else(|p| p.into_inner());
            let eth = EthernetRepr {
                dst: a.mac(),
                src: self.info.mac,
                vlan: Some(VlanTag::RT_CYCLIC),
                ethertype: ethernet::ethertype::PROFINET,
            };
            // First slot: the next point of the cyclic thread's tick grid.
            let origin = self.grid_origin.load(Ordering::Acquire);
            let base = u64::from(self.cfg.send_clock_factor.max(1)) * 31_250;
            let first = if origin == 0 || now.0 <= origin {
                Instant(origin.max(now.0))
            } else {
                Instant(origin + (now.0 - origin).div_ceil(base) * base)
            };
            a.tx.lock().unwrap_or_else(|p| p.into_inner()).provider =
                Some(Provider::new(eth, FrameId(out_id), t, first, 0));
            io.consumer = Some(
                Consumer::new(FrameId(in_id), t, a.timing.data_hold_factor, now)
                    .with_source(a.mac())
                    .with_c_sdu_len(a.layout.input.data_length as usize),
            );
            io.started_at = now;
        }
        if let Some(dev_ref) = result.device_alarm_ref {
            *a.alarm.lock().unwrap_or_else(|p| p.into_inner()) = Some(crate::alarms::AlarmState {
                rx: AlarmReceiver::new(
                    a.ids.alarm_ref,
                    dev_ref,
                    a.timing.rta_timeout_factor,
                    a.timing.rta_retries,
                    self.info.mac,
                    a.mac(),
                ),
                history: Vec::new(),
                delayed_acks: Vec::new(),
            });
        }
        Ok(())
    }

    /// Send one of the machine's datagrams. The ApplicationReady answer may be held back by
    /// fault injection (an I/O fault: the machine has answered; the answer is late on the
    /// wire).
    pub(crate) fn send_datagram(&self, ar: &ArInner, d: Datagram) {
        let to = SocketAddr::V4(d.to);
        if d.kind == DatagramKind::ApplicationReadyResponse {
            let fault = ar
                .faults
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .app_ready;
            if let AppReadyFault::Delay(delay) = fault {
                tracing::info!(?delay, "fault injection: ApplicationReady response delayed");
                if let Ok(u) = self.udp.try_clone() {
                    std::thread::spawn(move || {
                        std::thread::sleep(delay);
                        let _ = u.send_to(&d.bytes, to);
                    });
                }
                return;
            }
        }
        // One socket serves as the client and the server endpoint (`d.via`).
        let _ = self.udp.send_to(&d.bytes, to);
    }

    /// An RPC call without an AR (implicit read): the protocol crate's RPC client, fed with
    /// the datagrams of its activity that the RPC thread hands over.
    pub(crate) fn rpc_call_once(
        &self,
        mut client: RpcClient,
        opnum: u16,
        ndr_data: Vec<u8>,
        args_max: u32,
    ) -> Result<PnioResponse, Error> {
        let (tx, rx) = mpsc::channel();
        let activity = client.activity();
        self.rpc_waiters
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(activity, tx);
        let server = client.server();
        let res = (|| {
            client
                .start(rtsched::now(), opnum, ndr_data, args_max)
                .map_err(|e| call_error(server, e))?;
            loop {
                while let Some(b) = client.poll_transmit() {
                    self.udp.send_to(&b, server).map_err(Error::Io)?;
                }
                let now = rtsched::now();
                let due = client.poll_timeout().unwrap_or(now);
                let done = match rx.recv_timeout(StdDuration::from_nanos((due - now).as_nanos())) {
                    Ok(b) => match RpcPacket::parse(&b) {
                        Ok(p) => client.handle_packet(rtsched::now(), &p),
                        Err(_) => None,
                    },
                    Err(_) => client.handle_timeout(rtsched::now()),
                };
                if let Some(r) = done {
                    return r.map_err(|e| call_error(server, e));
                }
            }
        })();
        self.rpc_waiters
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&activity);
        res
    }
}

impl Shared {
    /// A datagram on the PNIO-CM socket: routed to the AR's machine (a response to its call,
    /// or the device's ApplicationReady), to an implicit call, or answered without an AR.
    pub(crate) fn on_udp(&self, buf: &[u8], from: SocketAddr) {
        let SocketAddr::V4(from4) = from else { return };
        let find = |pred: &dyn Fn(&ArInner) -> bool| {
            let ars = self.ars.read().unwrap_or_else(|e| e.into_inner());
            ars.iter().find(|a| pred(a)).cloned()
        };
        match server::classify(buf) {
            Inbound::Call { activity } => {
                if let Some(ar) = find(&|a| a.activity == activity) {
                    self.cm_drive(&ar, |m, now| m.handle_datagram(now, from4, buf));
                    return;
                }
                let w = self.rpc_waiters.lock().unwrap_or_else(|e| e.into_inner());
                if let Some(s) = w.get(&activity) {
                    let _ = s.send(buf.to_vec());
                }
            }
            Inbound::ApplicationReady { ar_uuid } => match find(&|a| a.ids.ar_uuid == ar_uuid) {
                Some(ar) => {
                    let fault = ar
                        .faults
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .app_ready;
                    if fault == AppReadyFault::Drop {
                        // As if the request were lost: no answer, and the AR does not enter
                        // data exchange (the device's retries meet the same fault).
                        tracing::info!("fault injection: ApplicationReady response dropped");
                        return;
                    }
                    self.cm_drive(&ar, |m, now| m.handle_datagram(now, from4, buf));
                }
                None => {
                    if let Some(b) = server::refuse_unknown_ar(buf) {
                        let _ = self.udp.send_to(&b, from);
                    }
                }
            },
            Inbound::Refuse(b) => {
                let _ = self.udp.send_to(&b, from);
            }
            Inbound::Ignore => {}
        }
    }
}

impl Controller {
    /// The device's IP (and its DCP answer, when it gave one): the one it reports, or the one
    /// configured (assigned over DCP when asked for and the device reports another).
    fn resolve_device(
        &self,
        cfg: &ArConfig,
        station: &str,
    ) -> Result<(Ipv4Addr, Option<DeviceInfo>), Error> {
        let dev = self.dcp_identify_name(station, StdDuration::from_millis(1000))?;
        let device_ip = match (cfg.device_ip, dev.as_ref().and_then(|d| d.ip)) {
            (Some(want), Some(have)) if want == have => want,
            (Some(want), Some(_)) if cfg.assign_ip => {
                let mac = dev.as_ref().map(|d| d.mac).unwrap_or(MacAddr::ZERO);
                self.dcp_set_ip(
                    mac,
                    want,
                    Ipv4Addr::new(255, 255, 255, 0),
                    Ipv4Addr::UNSPECIFIED,
                    false,
                )?;
                want
            }
            // Without a DCP answer the device is reached by its given IP; its MAC comes from
            // the ARBlockRes (CMResponderMacAdd).
            (Some(want), _) => want,
            (None, Some(have)) if !have.is_unspecified() => have,
            (None, None) if dev.is_none() => {
                return Err(Error::NotFound(format!(
                    "no device answers DCP Identify for '{station}' (give its IP to connect without DCP)"
                )))
            }
            _ => {
                return Err(Error::Config(format!(
                    "device '{station}' has no IP address; give one"
                )))
            }
        };
        Ok((device_ip, dev))
    }

    /// Connect to a device: resolve it over DCP, Connect, write parameters, PrmEnd, wait for
    /// ApplicationReady. Returns when data exchange runs (or with the reason it does not).
    pub fn connect(&self, cfg: ArConfig) -> Result<ArHandle, Error> {
        let sh = &self.shared;
        let mut model = cfg.model.clone();
        model.validate().map_err(Error::Config)?;
        let (device_ip, dev) = self.resolve_device(&cfg, &model.station_name)?;
        let layout = model.layout();
        let id = sh.next_id.fetch_add(1, Ordering::Relaxed);
        let ids = ArIds {
            ar_uuid: random_uuid(),
            session_key: (id as u16).wrapping_add(1),
            initiator_mac: sh.info.mac.0,
            initiator_object: Uuid::pnio_object(1, 0x0001, 0x00FF),
            station_name: sh.cfg.station_name.clone(),
            input_frame_id: cfg
                .timing
                .startup
                .input_frame_id(sh.frame_slot(&model.station_name)),
            alarm_ref: id as u16,
        };
        let mut timing = cfg.timing;
        timing.send_clock_factor = sh.cfg.send_clock_factor;
        let mut outputs = cfg.initial_outputs.clone();
        outputs.resize(layout.output.area_len as usize, 0);
        let connect_request = cmreq::connect_request(&model, &layout, &ids, &timing)
            .map_err(Error::Config)?
            .to_bytes()
            .map_err(|e| Error::Protocol(format!("cannot encode Connect: {e}")))?;
        // Parameter records, written between the Connect and PrmEnd.
        let parameters = model
            .submodules()
            .flat_map(|(m, s)| {
                s.params.iter().map(move |p| {
                    (
                        RecordAddress::new(0, m.slot, s.subslot, p.index),
                        p.data.clone(),
                    )
                })
            })
            .collect();
        let activity = random_uuid();
        let cm_cfg = CmctlConfig {
            ar_uuid: ids.ar_uuid,
            session_key: ids.session_key,
            device: SocketAddrV4::new(device_ip, pn_protocol::wire::ip::PNIO_CM_PORT),
            object: Uuid::pnio_object(1, model.device_id, model.vendor_id),
            activity,
            device_mac: dev.as_ref().map(|d| d.mac).unwrap_or(MacAddr::ZERO),
            connect_request,
            parameters,
            first_record_seq: 1,
            rpc: rpc_client_config(&sh.cfg),
            app_ready_timeout: Duration::from(cfg.app_ready_timeout),
        };
        let ar = Arc::new(ArInner {
            id,
            activity,
            // The machine starts with its Connect request queued; it goes out from
            // `establish`, once the AR is in the list the RPC thread routes answers by.
            state: Mutex::new(ArCm {
                state: ArState::Connecting,
                cm: Cmctl::new(cm_cfg, rtsched::now()),
                established: None,
                records: HashMap::new(),
                released: None,
            }),
            cond: Condvar::new(),
            io: Mutex::new(ArIo {
                consumer: None,
                consumer_base: ConsumerStats::default(),
                started_at: rtsched::now(),
            }),
            tx: Mutex::new(ArTx {
                provider: None,
                c_sdu: Vec::with_capacity(1500),
                frame: vec![0u8; 1600],
                faults: cfg.faults,
            }),
            provider_sent: AtomicU64::new(0),
            provider_missed: AtomicU64::new(0),
            outputs: Mutex::new(outputs),
            inputs: Mutex::new(Inputs::default()),
            phase: AtomicU8::new(phase::CONNECTING),
            data_since_ns: AtomicU64::new(0),
            releasing: AtomicBool::new(false),
            faults: Mutex::new(cfg.faults),
            // The output FrameID is the device's choice, known from the Connect response.
            frame_ids: AtomicU32::new(
                (u32::from(ids.input_frame_id) << 16) | u32::from(FRAME_ID_DEVICE_CHOOSES),
            ),
            alarm: Mutex::new(None),
            module_diff: Mutex::new(None),
            alarms_received: AtomicU64::new(0),
            model,
            layout,
            timing,
            ids,
            device_mac: AtomicU64::new(0),
            device_ip,
        });
        ar.set_mac(dev.as_ref().map(|d| d.mac).unwrap_or(MacAddr::ZERO));
        sh.edit_ars(|ars| ars.push(ar.clone()));
        let h = ArHandle {
            shared: sh.clone(),
            ar: ar.clone(),
        };
        match h.establish() {
            Ok(()) => Ok(h),
            Err(e) => {
                sh.cm_drive(&ar, |m, _| m.abort());
                // When the device accepted the Connect, it holds the AR: tell it (ERR-RTA)
                // instead of leaving it to hold the AR until its own timeout (p-net refused
                // new Connects for about a minute after an abandoned start-up).
                h.send_abort(wrta::abort_reason::AR_ABORT_REQ);
                sh.set_state(&ar, ArState::Aborted(e.to_string()));
                h.remove();
                Err(e)
            }
        }
    }
}

impl ArHandle {
    /// Connect .. ApplicationReady: the machine runs (the RPC thread feeds it the device's
    /// datagrams); this waits for its outcome, or for the AR to end otherwise (an alarm
    /// channel's abort).
    pub(crate) fn establish(&self) -> Result<(), Error> {
        let (sh, a) = (&self.shared, &self.ar);
        // Send the queued Connect request.
        sh.cm_drive(a, |_, _| ());
        sh.cm_wait(a, |g| {
            if let Some(r) = g.established.take() {
                return Some(r);
            }
            match &g.state {
                ArState::Released | ArState::Aborted(_) => {
                    Some(Err(Error::Aborted(format!("{:?}", g.state))))
                }
                _ => None,
            }
        })
    }
}

impl ArHandle {
    /// Read a record within the AR.
    pub fn read_record(
        &self,
        slot: u16,
        subslot: u16,
        index: u16,
        max_len: u32,
    ) -> Result<Vec<u8>, Error> {
        let addr = RecordAddress::new(self.ar.model.api, slot, subslot, index);
        let id = self
            .shared
            .cm_drive(&self.ar, |m, now| m.read_record(now, addr, max_len));
        let r = self.shared.cm_wait(&self.ar, |g| g.records.remove(&id));
        r.map_err(|e| cm_error(&self.ar, "Read", e))
    }

    /// Write a record within the AR.
    pub fn write_record(
        &self,
        slot: u16,
        subslot: u16,
        index: u16,
        data: &[u8],
    ) -> Result<(), Error> {
        let addr = RecordAddress::new(self.ar.model.api, slot, subslot, index);
        let id = self
            .shared
            .cm_drive(&self.ar, |m, now| m.write_record(now, addr, data));
        let r = self.shared.cm_wait(&self.ar, |g| g.records.remove(&id));
        r.map(|_| ()).map_err(|e| cm_error(&self.ar, "Write", e))
    }
}

impl ArHandle {
    /// Orderly end: Release, then stop the provider.
    pub fn release(&self) -> Result<(), Error> {
        // The device stops its provider when it takes the Release: the input frames end
        // before its answer, so the consumer's watchdog must not judge them any more.
        self.ar.releasing.store(true, Ordering::Release);
        self.shared.cm_drive(&self.ar, |m, now| m.release(now));
        let r = self.shared.cm_wait(&self.ar, |g| g.released.clone());
        self.shared.set_state(&self.ar, ArState::Released);
        self.remove();
        r.map_err(|e| cm_error(&self.ar, "Release", e))
    }
}

/// What the shell waits for, from one machine event.
enum Outcome {
    Established(Result<(), Error>),
    Released(Result<(), CmctlError>),
    Record(RecordId, Result<Vec<u8>, CmctlError>),
}

/// The RPC client's timing from the controller's configuration.
fn rpc_client_config(cfg: &ControllerConfig) -> RpcClientConfig {
    RpcClientConfig {
        timeout: Duration::from(cfg.rpc_timeout),
        retries: cfg.rpc_retries,
        ..RpcClientConfig::default()
    }
}

fn call_error(server: SocketAddrV4, e: CallError) -> Error {
    match e {
        CallError::Timeout { opnum } => Error::Timeout(format!(
            "no RPC response from {} (opnum {opnum})",
            server.ip()
        )),
        CallError::Fault(st) => Error::RpcFault(st),
        CallError::Protocol(s) => Error::Protocol(s),
    }
}

/// The controller's error for a failed step or record service (`what`: the service's name).
fn cm_error(ar: &ArInner, what: &'static str, e: CmctlError) -> Error {
    match e {
        CmctlError::Call(c) => call_error(SocketAddrV4::new(ar.device_ip, 0), c),
        CmctlError::Rejected(status) => Error::Rejected { what, status },
        CmctlError::Protocol(s) => Error::Protocol(s),
        CmctlError::NoApplicationReady => {
            Error::Timeout("no ApplicationReady from the device".into())
        }
        CmctlError::Aborted => Error::Aborted(format!("{what}: the AR ended")),
    }
}

/// Implicit read (no AR needed): Read Implicit to the device's IP.
pub(crate) fn read_implicit(
    sh: &Shared,
    ip: Ipv4Addr,
    vendor_id: u16,
    device_id: u16,
    addr: RecordAddress,
    max_len: u32,
) -> Result<Vec<u8>, Error> {
    let hdr = ReadReqHeaderRepr {
        seq_number: 0,
        ar_uuid: record::NIL_UUID,
        address: addr,
        record_data_length: max_len,
        target_ar_uuid: record::NIL_UUID,
    };
    let req = ReadRequest::new(hdr)
        .to_bytes()
        .map_err(|e| Error::Protocol(e.to_string()))?;
    let client = RpcClient::new(
        rpc_client_config(&sh.cfg),
        SocketAddrV4::new(ip, pn_protocol::wire::ip::PNIO_CM_PORT),
        Uuid::pnio_object(1, device_id, vendor_id),
        random_uuid(),
        0,
    );
    let resp = sh.rpc_call_once(
        client,
        rpc::opnum::READ_IMPLICIT,
        req,
        max_len.saturating_add(64),
    )?;
    cmctl::read_result(&resp).map_err(|e| match e {
        CmctlError::Rejected(status) => Error::Rejected {
            what: "Read",
            status,
        },
        other => Error::Protocol(other.to_string()),
    })
}

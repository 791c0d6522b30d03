//! Test support: network namespaces with a veth pair, and a small scripted PROFINET device
//! built only from the protocol crate (an independent peer for the controller while the real
//! pn-device stack is being written). It records what it receives so tests can assert the
//! controller's behaviour, including under fault injection.

#![allow(dead_code)]

use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration as StdDuration;

use pn_controller::netif::{InterfaceInfo, RawSocket};
use pn_controller::rtsched;
use pn_protocol::machine::cmdev::connect::response_frame_ids;
use pn_protocol::machine::cyclic::{Consumer, ConsumerEvent, CyclicTiming, Provider, RxOutcome};
use pn_protocol::machine::rta::{RtaConfig, RtaEvent, RtaMachine};
use pn_protocol::time::Duration;
use pn_protocol::wire::dcp::{DcpBlock, DcpRepr, DcpValue, ServiceId};
use pn_protocol::wire::ethernet::{self, EthernetRepr, MacAddr, VlanTag};
use pn_protocol::wire::field::Writer;
use pn_protocol::wire::pnio::alarm::{
    AlarmNotificationRepr, AlarmPdu, AlarmPriority, AlarmSpecifier,
};
use pn_protocol::wire::pnio::alarm_cr::{AlarmCrBlockReq, AlarmCrBlockRes};
use pn_protocol::wire::pnio::ar::{ArBlockReq, ArBlockRes};
use pn_protocol::wire::pnio::block::blocks;
use pn_protocol::wire::pnio::control::{self, ControlBlock};
use pn_protocol::wire::pnio::diagnosis::{ChannelDiagnosis, ChannelProperties, UserStructure};
use pn_protocol::wire::pnio::iocr::{self, IocrBlockReq, IocrBlockRes};
use pn_protocol::wire::pnio::record::{
    ReadRequest, ReadResponse, WriteRequest, WriteResHeaderRepr, WriteResponse,
};
use pn_protocol::wire::pnio::PnioStatus;
use pn_protocol::wire::rpc::{
    self, Drep, PacketType, PnioRequest, PnioResponse, RpcHeader, RpcPacket, Uuid,
};
use pn_protocol::wire::rt::{self, FrameId};
use pn_protocol::wire::rta::RtaRepr;

pub use pn_testkit::netns::{NetNs, Veth};

pub mod device;

pub const CTL_IP: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 1);
pub const DEV_IP: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 2);

/// Two namespaces joined by a veth pair, with IPs on both ends.
pub struct Lab {
    pub ctl: NetNs,
    pub dev: NetNs,
    pub veth: Veth,
}

impl Lab {
    pub fn new(prefix: &str) -> Lab {
        let (ctl, dev, veth) =
            Veth::controller_device(prefix, Some("10.77.0.1/24"), Some("10.77.0.2/24"))
                .expect("namespaces and veth pair");
        Lab { ctl, dev, veth }
    }
}

/// What the fake device saw.
#[derive(Debug, Default, Clone)]
pub struct Seen {
    pub dcp_identify: u32,
    pub identify_delays_ms: Vec<u64>,
    pub dcp_set: Vec<DcpRepr>,
    pub connect: Option<Vec<u8>>,
    pub writes: Vec<WriteRequest>,
    pub prm_end: bool,
    pub app_ready_confirmed: bool,
    pub released: bool,
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
    pub rta_err: Option<PnioStatus>,
    pub raw_frames: Vec<Vec<u8>>,
}

struct Ar {
    ar_uuid: Uuid,
    session_key: u16,
    ctl_mac: MacAddr,
    provider: Provider,
    consumer: Consumer,
    input_len: usize,
    out_id: u16,
    alarm: RtaMachine,
}

pub struct FakeDevice {
    pub seen: Arc<Mutex<Seen>>,
    stop: Arc<AtomicBool>,
    silent: Arc<AtomicBool>,
    ar: Arc<Mutex<Option<Ar>>>,
    inputs: Arc<Mutex<Vec<u8>>>,
    sock: Arc<RawSocket>,
    mac: MacAddr,
    threads: Vec<std::thread::JoinHandle<()>>,
}

pub struct FakeConfig {
    pub name: String,
    pub vendor_id: u16,
    pub device_id: u16,
    /// Answer the Connect with this status instead of OK.
    pub connect_status: Option<PnioStatus>,
    /// Send a ModuleDiffBlock in the Connect response.
    pub module_diff: bool,
    /// Keep every received frame (for the tshark oracle).
    pub capture: bool,
}

impl FakeDevice {
    /// Start on `ifname` (call from a thread inside the device namespace).
    pub fn start(ifname: &str, cfg: FakeConfig) -> FakeDevice {
        let info = InterfaceInfo::lookup(ifname).expect("interface");
        let sock = Arc::new(RawSocket::open(&info).expect("raw socket"));
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
        let seen = Arc::new(Mutex::new(Seen::default()));
        let stop = Arc::new(AtomicBool::new(false));
        let silent = Arc::new(AtomicBool::new(false));
        let ar: Arc<Mutex<Option<Ar>>> = Arc::new(Mutex::new(None));
        let inputs = Arc::new(Mutex::new(vec![0u8; 40]));
        let mac = info.mac;
        let cfg = Arc::new(cfg);
        let mut threads = Vec::new();
        // Raw receive: DCP, cyclic, alarms.
        {
            let (sock, seen, stop, ar, cfg) = (
                sock.clone(),
                seen.clone(),
                stop.clone(),
                ar.clone(),
                cfg.clone(),
            );
            threads.push(std::thread::spawn(move || {
                let mut buf = vec![0u8; 2048];
                while !stop.load(Ordering::Relaxed) {
                    let Ok(Some(n)) = sock.recv(&mut buf, StdDuration::from_millis(5)) else {
                        continue;
                    };
                    let f = &buf[..n];
                    let now = rtsched::now();
                    if cfg.capture {
                        seen.lock().unwrap().raw_frames.push(f.to_vec());
                    }
                    let Ok((eth, payload)) = EthernetRepr::parse_frame(f) else {
                        continue;
                    };
                    if eth.ethertype != ethernet::ethertype::PROFINET {
                        continue;
                    }
                    let Ok(id) = rt::frame_id(payload) else {
                        continue;
                    };
                    if id.is_dcp() {
                        let Ok(d) = DcpRepr::parse(&payload[2..]) else {
                            continue;
                        };
                        if d.service_type.is_response() {
                            continue;
                        }
                        let own = vec![
                            DcpValue::NameOfStation(cfg.name.as_bytes().to_vec()),
                            DcpValue::DeviceId {
                                vendor_id: cfg.vendor_id,
                                device_id: cfg.device_id,
                            },
                        ];
                        let resp = match d.service_id {
                            ServiceId::Identify if d.identify_filter_matches(&own) => {
                                seen.lock().unwrap().dcp_identify += 1;
                                DcpRepr::identify_response(
                                    d.xid,
                                    vec![
                                        DcpBlock::with_info(
                                            DcpValue::NameOfStation(cfg.name.as_bytes().to_vec()),
                                            0,
                                        ),
                                        DcpBlock::with_info(
                                            DcpValue::DeviceVendor(b"fake".to_vec()),
                                            0,
                                        ),
                                        DcpBlock::with_info(
                                            DcpValue::DeviceId {
                                                vendor_id: cfg.vendor_id,
                                                device_id: cfg.device_id,
                                            },
                                            0,
                                        ),
                                        DcpBlock::with_info(
                                            DcpValue::IpParameter {
                                                ip: DEV_IP,
                                                mask: Ipv4Addr::new(255, 255, 255, 0),
                                                gateway: Ipv4Addr::UNSPECIFIED,
                                            },
                                            1,
                                        ),
                                    ],
                                )
                            }
                            ServiceId::Set => {
                                let res: Vec<_> = d
                                    .blocks
                                    .iter()
                                    .map(|b| {
                                        let (o, s) = b.option_suboption();
                                        (o, s, pn_protocol::wire::dcp::BlockError::OK)
                                    })
                                    .collect();
                                seen.lock().unwrap().dcp_set.push(d.clone());
                                DcpRepr::set_response(d.xid, &res)
                            }
                            _ => continue,
                        };
                        if let Ok(fr) = resp.build_frame(eth.src, mac, None) {
                            // Identify response delay: (MAC mod factor) x 10 ms, as p-net
                            // spreads its answers (pf_dcp_identify_req).
                            let f = u64::from(d.response_delay);
                            if d.service_id == ServiceId::Identify && f > 1 {
                                let delay =
                                    StdDuration::from_millis((u64::from(mac.0[5]) % f) * 10);
                                let sock = sock.clone();
                                seen.lock()
                                    .unwrap()
                                    .identify_delays_ms
                                    .push(delay.as_millis() as u64);
                                std::thread::spawn(move || {
                                    std::thread::sleep(delay);
                                    let _ = sock.send(&fr);
                                });
                            } else {
                                let _ = sock.send(&fr);
                            }
                        }
                        continue;
                    }
                    if id.0 == 0xFC01 || id.0 == 0xFE01 {
                        let mut g = ar.lock().unwrap();
                        let Some(a) = g.as_mut() else { continue };
                        if let Ok(r) = RtaRepr::parse(&payload[2..]) {
                            let mut s = seen.lock().unwrap();
                            if r.pdu_type == pn_protocol::wire::rta::RtaPduType::Ack {
                                s.transport_acks += 1;
                            }
                            if let Some(st) = r.err_status() {
                                s.rta_err = Some(st);
                            }
                        }
                        a.alarm.handle(&payload[2..], now);
                        while let Some(e) = a.alarm.poll_event() {
                            if let RtaEvent::Received(v) = e {
                                if let Ok(AlarmPdu::Ack(_)) = AlarmPdu::parse(&v) {
                                    seen.lock().unwrap().alarm_acks += 1;
                                }
                            }
                        }
                        flush_alarm(&sock, mac, a);
                        continue;
                    }
                    if id.is_cyclic() {
                        let mut g = ar.lock().unwrap();
                        let mut s = seen.lock().unwrap();
                        let Some(a) = g.as_mut() else {
                            s.other_frame_ids.push(id.0);
                            continue;
                        };
                        if id.0 != a.out_id {
                            s.other_frame_ids.push(id.0);
                            continue;
                        }
                        s.output_frames += 1;
                        match a.consumer.on_rt_payload(now, eth.src, payload) {
                            RxOutcome::NewData { status, c_sdu } => {
                                s.output_new_data += 1;
                                s.last_data_status = Some(status.data_status.0);
                                s.last_c_sdu = payload[c_sdu.0..c_sdu.1].to_vec();
                            }
                            RxOutcome::Duplicate => s.output_duplicates += 1,
                            RxOutcome::Invalid(why) => {
                                s.output_invalid += 1;
                                if why.contains("short")
                                    || why.contains("length")
                                    || why.contains("trunc")
                                {
                                    s.short_frames += 1;
                                }
                            }
                            RxOutcome::NotForUs => {}
                        }
                    }
                }
            }));
        }
        // Cyclic send + watchdog.
        {
            let (sock, seen, stop, ar, inputs, silent) = (
                sock.clone(),
                seen.clone(),
                stop.clone(),
                ar.clone(),
                inputs.clone(),
                silent.clone(),
            );
            threads.push(std::thread::spawn(move || {
                let mut frame = vec![0u8; 1600];
                let mut next = rtsched::now();
                while !stop.load(Ordering::Relaxed) {
                    next += Duration::from_millis(1);
                    rtsched::sleep_until(next);
                    let now = rtsched::now();
                    let mut g = ar.lock().unwrap();
                    let Some(a) = g.as_mut() else { continue };
                    if let Some(ConsumerEvent::WatchdogExpired) = a.consumer.poll(now) {
                        seen.lock().unwrap().watchdog_expired = true;
                    }
                    let mut c_sdu = inputs.lock().unwrap().clone();
                    c_sdu.resize(a.input_len, 0x80);
                    if let Ok(Some(n)) = a.provider.poll_send(now, &c_sdu, &mut frame) {
                        if !silent.load(Ordering::Relaxed) {
                            let _ = sock.send(&frame[..n]);
                        }
                    }
                    a.alarm.poll(now);
                    flush_alarm(&sock, mac, a);
                }
            }));
        }
        // PNIO-CM server.
        {
            let (seen, stop, ar, cfg, sock) = (
                seen.clone(),
                stop.clone(),
                ar.clone(),
                cfg.clone(),
                sock.clone(),
            );
            threads.push(std::thread::spawn(move || {
                let mut buf = vec![0u8; 65536];
                let mut frags: Vec<u8> = Vec::new();
                while !stop.load(Ordering::Relaxed) {
                    let Ok((n, from)) = udp.recv_from(&mut buf) else {
                        continue;
                    };
                    let Ok(p) = RpcPacket::parse(&buf[..n]) else {
                        continue;
                    };
                    if p.header.packet_type != PacketType::Request {
                        continue;
                    }
                    if p.header.is_fragment() {
                        frags.extend_from_slice(&p.body);
                        if !p.header.is_last_fragment() {
                            continue;
                        }
                    } else {
                        frags = p.body.clone();
                    }
                    let body = std::mem::take(&mut frags);
                    let Ok(req) = PnioRequest::parse(&body, p.header.drep) else {
                        continue;
                    };
                    let mut w = Writer::new();
                    let mut status = PnioStatus::OK;
                    let mut after_prm_end = None;
                    match p.header.opnum {
                        rpc::opnum::CONNECT => {
                            seen.lock().unwrap().connect = Some(req.data.clone());
                            let mut arq = None;
                            let mut crs = Vec::new();
                            let mut acr = None;
                            for b in blocks(&req.data).flatten() {
                                match b.block_type() {
                                    0x0101 => arq = ArBlockReq::parse(&b).ok(),
                                    0x0102 => crs.extend(IocrBlockReq::parse(&b).ok()),
                                    0x0103 => acr = AlarmCrBlockReq::parse(&b).ok(),
                                    _ => {}
                                }
                            }
                            if let Some(st) = cfg.connect_status {
                                status = st;
                            } else if let (Some(arq), Some(acr)) = (arq, acr) {
                                let _ = ArBlockRes::to_request(&arq, mac.0).emit(&mut w);
                                let find = |t| crs.iter().find(|c| c.iocr_type == t).cloned();
                                let input = find(iocr::iocr_type::INPUT);
                                let output = find(iocr::iocr_type::OUTPUT);
                                // FrameIDs as a device answers them (the CMDEV rule).
                                let (in_id, out_id) = response_frame_ids(
                                    input.as_ref().unwrap(),
                                    output.as_ref().unwrap(),
                                    &[],
                                );
                                for cr in &crs {
                                    let fid = if cr.iocr_type == iocr::iocr_type::INPUT {
                                        in_id
                                    } else {
                                        out_id
                                    };
                                    let _ = IocrBlockRes::to_request(cr, fid).emit(&mut w);
                                }
                                let _ = AlarmCrBlockRes::to_request(&acr, 0x0042, 200).emit(&mut w);
                                if cfg.module_diff {
                                    use pn_protocol::wire::pnio::module_diff::*;
                                    let _ = ModuleDiffBlock {
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
                                    }
                                    .emit(&mut w);
                                }
                                let (i, o) = (input.unwrap(), output.unwrap());
                                let t = CyclicTiming::new(i.send_clock_factor, i.reduction_ratio)
                                    .unwrap();
                                let now = rtsched::now();
                                let eth = EthernetRepr {
                                    dst: MacAddr(arq.cm_initiator_mac),
                                    src: mac,
                                    vlan: Some(VlanTag::RT_CYCLIC),
                                    ethertype: 0x8892,
                                };
                                let consumer =
                                    Consumer::new(FrameId(out_id), t, o.data_hold_factor, now)
                                        .with_source(MacAddr(arq.cm_initiator_mac))
                                        .with_c_sdu_len(o.data_length as usize);
                                *ar.lock().unwrap() = Some(Ar {
                                    ar_uuid: arq.ar_uuid,
                                    session_key: arq.session_key,
                                    ctl_mac: MacAddr(arq.cm_initiator_mac),
                                    provider: Provider::new(eth, FrameId(in_id), t, now, 0),
                                    consumer,
                                    input_len: i.data_length as usize,
                                    out_id,
                                    alarm: RtaMachine::new(RtaConfig::new(
                                        AlarmPriority::Low,
                                        0x0042,
                                        acr.local_alarm_reference,
                                        acr.rta_timeout_factor,
                                        acr.rta_retries,
                                    )),
                                });
                            }
                        }
                        rpc::opnum::WRITE => {
                            if let Ok(wr) = WriteRequest::parse(&req.data) {
                                let resp = WriteResponse {
                                    header: WriteResHeaderRepr::answering(
                                        &wr.header,
                                        PnioStatus::OK,
                                    ),
                                    records: wr
                                        .records()
                                        .iter()
                                        .map(|(h, _)| {
                                            WriteResHeaderRepr::answering(h, PnioStatus::OK)
                                        })
                                        .collect(),
                                };
                                let _ = resp.emit(&mut w);
                                seen.lock().unwrap().writes.push(wr);
                            }
                        }
                        rpc::opnum::READ | rpc::opnum::READ_IMPLICIT => {
                            if let Ok(rr) = ReadRequest::parse(&req.data) {
                                let data = b"IM0-FAKE".to_vec();
                                if let Ok(r) = ReadResponse::answering(&rr.header, data) {
                                    let _ = r.emit(&mut w);
                                }
                            }
                        }
                        rpc::opnum::CONTROL | rpc::opnum::RELEASE => {
                            if let Some(Ok(b)) = blocks(&req.data).next() {
                                if let Ok(cb) = ControlBlock::parse(&b) {
                                    let _ = cb.response().emit(&mut w);
                                    if cb.block_type == control::block_type::PRM_END_REQ {
                                        seen.lock().unwrap().prm_end = true;
                                        after_prm_end = Some((cb.ar_uuid, cb.session_key));
                                    }
                                    if cb.block_type == control::block_type::RELEASE_REQ {
                                        seen.lock().unwrap().released = true;
                                        *ar.lock().unwrap() = None;
                                    }
                                }
                            }
                        }
                        _ => continue,
                    }
                    let resp = PnioResponse::to_request(&req, status, w.into_inner());
                    let rh = RpcHeader::response_to(&p.header);
                    if let Ok(b) = RpcPacket::new(rh, resp.emit(p.header.drep).unwrap()).emit() {
                        let _ = udp.send_to(&b, from);
                    }
                    if let Some((uuid, key)) = after_prm_end {
                        // ApplicationReady as a client to the controller's port 34964.
                        let ctl = match from {
                            std::net::SocketAddr::V4(a) => *a.ip(),
                            _ => continue,
                        };
                        let mut w = Writer::new();
                        let _ = ControlBlock::application_ready_req(uuid, key).emit(&mut w);
                        let h = RpcHeader::request(
                            Drep::BIG_ENDIAN,
                            Uuid::pnio_object(1, 1, 0xFF),
                            rpc::PNIO_CONTROLLER_INTERFACE,
                            Uuid([9; 16]),
                            0,
                            rpc::opnum::CONTROL,
                        );
                        let body = PnioRequest::new(256, w.into_inner())
                            .emit(Drep::BIG_ENDIAN)
                            .unwrap();
                        let pkt = RpcPacket::new(h, body).emit().unwrap();
                        let c = UdpSocket::bind("0.0.0.0:0").unwrap();
                        c.set_read_timeout(Some(StdDuration::from_millis(300)))
                            .unwrap();
                        let mut rb = vec![0u8; 4096];
                        for _ in 0..20 {
                            let _ = c.send_to(&pkt, SocketAddrV4::new(ctl, 34964));
                            if let Ok((n, _)) = c.recv_from(&mut rb) {
                                if let Ok(rp) = RpcPacket::parse(&rb[..n]) {
                                    if let Ok(r) = PnioResponse::parse(&rp.body, rp.header.drep) {
                                        if r.status.is_ok() {
                                            seen.lock().unwrap().app_ready_confirmed = true;
                                            break;
                                        }
                                    }
                                }
                            }
                        }
                        let _ = &sock;
                    }
                }
            }));
        }
        FakeDevice {
            seen,
            stop,
            silent,
            ar,
            inputs,
            sock,
            mac,
            threads,
        }
    }

    /// Stop sending cyclic frames (everything else keeps running).
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

    /// Send a diagnosis alarm (low priority).
    pub fn send_diag_alarm(&self) {
        let mut g = self.ar.lock().unwrap();
        let Some(a) = g.as_mut() else { return };
        let n = AlarmNotificationRepr {
            priority: AlarmPriority::Low,
            alarm_type: 1,
            api: 0,
            slot: 1,
            subslot: 1,
            module_ident: 0x32,
            submodule_ident: 0x132,
            specifier: AlarmSpecifier::new(1, true, false, true, false),
            item: Some(UserStructure::Channel(vec![ChannelDiagnosis {
                channel_number: 3,
                properties: ChannelProperties(0x0800),
                error_type: 1,
            }])),
        };
        let mut w = Writer::new();
        n.emit(&mut w).unwrap();
        let _ = a.alarm.send_alarm(w.into_inner(), rtsched::now());
        flush_alarm(&self.sock, self.mac, a);
    }

    /// Wait until `f(seen)` holds (polling), up to `timeout`.
    pub fn wait(&self, timeout: StdDuration, f: impl Fn(&Seen) -> bool) -> bool {
        let end = std::time::Instant::now() + timeout;
        loop {
            if f(&self.seen.lock().unwrap()) {
                return true;
            }
            if std::time::Instant::now() >= end {
                return false;
            }
            std::thread::sleep(StdDuration::from_millis(10));
        }
    }
}

fn flush_alarm(sock: &RawSocket, mac: MacAddr, a: &mut Ar) {
    while let Some(tx) = a.alarm.poll_transmit() {
        let eth = EthernetRepr {
            dst: a.ctl_mac,
            src: mac,
            vlan: Some(VlanTag::RT_ALARM_LOW),
            ethertype: 0x8892,
        };
        let _ = sock.send(&eth.build(&tx.rt_payload()));
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

//! A minimal IO controller for the stack tests, built only from `pn-protocol` (and the device
//! crate's raw-socket wrapper, opened inside the peer namespace): Connect, PrmEnd, answer the
//! device's ApplicationReady, cyclic output frames with its own absolute-deadline thread,
//! consume the device's input frames with a data-hold watchdog, RTA alarm acknowledgement,
//! record Read, Release. Replace by the pn-controller library once that is ready.
#![allow(dead_code)]

use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use pn_device::stack::socket::PnSocket;
use pn_protocol::machine::rta::{RtaConfig, RtaEvent, RtaMachine};
use pn_protocol::wire::ethernet::{ethertype, EthernetRepr, MacAddr, VlanTag};
use pn_protocol::wire::field::Writer;
use pn_protocol::wire::pnio::alarm::{AlarmPdu, AlarmPriority};
use pn_protocol::wire::pnio::alarm_cr::{AlarmCrBlockReq, AlarmCrProperties, ALARM_CR_TYPE};
use pn_protocol::wire::pnio::ar::{ar_type, ArBlockReq, ArBlockRes, ArProperties};
use pn_protocol::wire::pnio::block::blocks;
use pn_protocol::wire::pnio::control::ControlBlock;
use pn_protocol::wire::pnio::expected::{
    DataDescription, ExpectedModule, ExpectedSubmodule, ExpectedSubmoduleBlockReq,
    SubmoduleProperties,
};
use pn_protocol::wire::pnio::iocr::{
    iocr_type, IoObject, IocrApi, IocrBlockReq, IocrBlockRes, IocrProperties, TagHeader, LT_PNIO,
};
use pn_protocol::wire::pnio::record::{
    ReadReqHeaderRepr, ReadRequest, ReadResponse, RecordAddress,
};
use pn_protocol::wire::pnio::PnioStatus;
use pn_protocol::wire::rpc::{
    opnum, Drep, PacketType, PnioRequest, PnioResponse, RpcHeader, RpcPacket, Uuid,
    PNIO_DEVICE_INTERFACE,
};
use pn_protocol::wire::rt::{self, ApduStatus, CyclicFrame, DataStatus, FrameId};

pub const DEV_IP: Ipv4Addr = Ipv4Addr::new(192, 168, 77, 2);
pub const PEER_IP: Ipv4Addr = Ipv4Addr::new(192, 168, 77, 1);
pub const VENDOR: u16 = 0x0493;
pub const DEVICE: u16 = 0x0001;

fn run(args: &[&str]) {
    let out = std::process::Command::new(args[0])
        .args(&args[1..])
        .output()
        .expect("run");
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A second network namespace (the controller side), deleted on drop.
pub struct PeerNs {
    pub name: String,
}

impl PeerNs {
    pub fn new(tag: &str) -> PeerNs {
        let name = format!("pnstk-{tag}-{}", std::process::id());
        let _ = std::process::Command::new("ip")
            .args(["netns", "del", &name])
            .output();
        run(&["ip", "netns", "add", &name]);
        run(&["ip", "-n", &name, "link", "set", "lo", "up"]);
        PeerNs { name }
    }

    /// Run `f` on a thread inside this namespace.
    pub fn in_ns<T: Send + 'static>(&self, f: impl FnOnce() -> T + Send + 'static) -> T {
        pn_testkit::netns::enter_named(&self.name, f)
            .unwrap_or_else(|e| panic!("in namespace {}: {e}", self.name))
    }

    pub fn set_link(&self, dev: &str, up: bool) {
        pn_testkit::netns::set_link_named(&self.name, dev, up).unwrap_or_else(|e| panic!("{e}"));
    }
}

impl Drop for PeerNs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("ip")
            .args(["netns", "del", &self.name])
            .output();
    }
}

/// Create the veth pair `dev_nic` (in `dev_ns`) <-> `peer_nic` (in `peer_ns`) with addresses.
pub fn wire_up(dev_ns: &str, dev_nic: &str, peer: &PeerNs, peer_nic: &str) {
    run(&[
        "ip", "-n", dev_ns, "link", "add", dev_nic, "type", "veth", "peer", "name", peer_nic,
        "netns", &peer.name,
    ]);
    run(&[
        "ip",
        "-n",
        dev_ns,
        "addr",
        "add",
        "192.168.77.2/24",
        "dev",
        dev_nic,
    ]);
    run(&[
        "ip",
        "-n",
        &peer.name,
        "addr",
        "add",
        "192.168.77.1/24",
        "dev",
        peer_nic,
    ]);
    run(&["ip", "-n", dev_ns, "link", "set", dev_nic, "up"]);
    run(&["ip", "-n", &peer.name, "link", "set", peer_nic, "up"]);
    // Checksums computed in software, so a capture on the sending side shows real values
    // (with TX offload the captured UDP checksum is only the pseudo-header sum).
    run(&[
        "ip", "netns", "exec", dev_ns, "ethtool", "-K", dev_nic, "tx", "off",
    ]);
    run(&[
        "ip", "netns", "exec", &peer.name, "ethtool", "-K", peer_nic, "tx", "off",
    ]);
}

/// Runtime configuration XML for the tests: DAP + slot 1 with 4 bytes each way.
pub fn write_config(path: &std::path::Path, nic: &str, send_clock_ms: u16) {
    pn_testkit::daemon::DeviceXml::new("stack-dev")
        .nic(Some(nic))
        .ip(DEV_IP)
        .send_clock_ms(send_clock_ms)
        .write(path);
}

fn random_uuid() -> Uuid {
    let mut b = [0u8; 16];
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    b[..16].copy_from_slice(&t.to_le_bytes());
    b[15] ^= std::process::id() as u8;
    b[6] = (b[6] & 0x0F) | 0x40;
    b[8] = (b[8] & 0x3F) | 0x80;
    Uuid::from_bytes(b)
}

/// Cyclic parameters of a connect.
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    pub send_clock_factor: u16,
    pub reduction_ratio: u16,
    pub data_hold_factor: u16,
}

impl Timing {
    pub fn period(&self) -> Duration {
        Duration::from_nanos(
            u64::from(self.send_clock_factor) * u64::from(self.reduction_ratio) * 31_250,
        )
    }
    pub fn dht(&self) -> Duration {
        self.period() * u32::from(self.data_hold_factor)
    }
}

/// State of the peer's cyclic exchange, shared with its threads.
#[derive(Default)]
pub struct CyclicState {
    pub stop: AtomicBool,
    /// Watchdog armed (first device frame seen and not disarmed).
    pub armed: AtomicBool,
    pub rx_frames: AtomicU64,
    pub tx_frames: AtomicU64,
    pub watchdog_trips: AtomicU64,
    pub max_gap_us: AtomicU64,
    pub last_rx: Mutex<Option<Instant>>,
    /// Latest C_SDU received from the device.
    pub last_sdu: Mutex<Vec<u8>>,
    pub last_status: Mutex<Option<ApduStatus>>,
    /// Output data (4 bytes) the peer sends to the device's slot 1.
    pub out_data: Mutex<[u8; 4]>,
    /// Alarm notifications received (alarm type, specifier sequence).
    pub alarms: Mutex<Vec<(u16, u16)>>,
    pub alarm_acks_sent: AtomicU64,
    /// Stop sending output frames (simulates a silent controller).
    pub pause_tx: AtomicBool,
    /// ERR-RTA-PDUs received from the device (its abort statuses).
    pub peer_aborts: Mutex<Vec<PnioStatus>>,
}

/// The test controller.
pub struct Peer {
    pub sock: Arc<PnSocket>,
    pub udp: UdpSocket,
    pub mac: [u8; 6],
    pub dev_mac: [u8; 6],
    pub activity: Uuid,
    pub seq: u32,
    pub ar_uuid: Uuid,
    pub session_key: u16,
    pub input_frame_id: u16,
    pub output_frame_id: u16,
    pub timing: Timing,
    pub state: Arc<CyclicState>,
    pub rta: Arc<Mutex<RtaMachine>>,
    pub threads: Vec<std::thread::JoinHandle<()>>,
    pub app_ready_seen: bool,
    /// Request fragments sent by the last call / response fragments received.
    pub fragments_sent: usize,
    pub fragments_received: usize,
    /// Expect a different SubmoduleIdentNumber for slot 1 (ModuleDiffBlock test).
    pub wrong_slot1_ident: bool,
    /// CMInitiatorActivityTimeoutFactor (100 ms units) of the connect.
    pub cmi_factor: u16,
    /// Data representation of our RPC requests.
    pub drep: Drep,
    /// ARProperties StartupMode advanced (else legacy).
    pub advanced: bool,
}

impl Peer {
    /// Open the sockets inside `ns` on `nic`.
    pub fn open(ns: &PeerNs, nic: &str, timing: Timing) -> Peer {
        let nic = nic.to_string();
        let (sock, udp) = ns.in_ns(move || {
            let s = PnSocket::open(&nic).expect("peer raw socket");
            let u = UdpSocket::bind((PEER_IP, 34964)).expect("peer udp");
            (s, u)
        });
        let mac = sock.mac();
        Peer {
            sock: Arc::new(sock),
            udp,
            mac,
            dev_mac: [0; 6],
            activity: random_uuid(),
            seq: 0,
            ar_uuid: random_uuid(),
            session_key: 1,
            input_frame_id: 0,
            output_frame_id: 0,
            timing,
            state: Arc::new(CyclicState::default()),
            rta: Arc::new(Mutex::new(RtaMachine::new(RtaConfig::new(
                AlarmPriority::Low,
                3,
                1,
                1,
                3,
            )))),
            threads: Vec::new(),
            app_ready_seen: false,
            fragments_sent: 0,
            fragments_received: 0,
            wrong_slot1_ident: false,
            cmi_factor: 100,
            drep: Drep::LITTLE_ENDIAN,
            advanced: true,
        }
    }

    fn dev_addr() -> SocketAddr {
        SocketAddr::from((DEV_IP, 34964))
    }

    /// Answer an ApplicationReady request from the device; returns true if `pkt` was one.
    fn maybe_app_ready(&mut self, pkt: &RpcPacket, from: SocketAddr) -> bool {
        let h = &pkt.header;
        if h.packet_type != PacketType::Request || h.opnum != opnum::CONTROL {
            return false;
        }
        let Ok(req) = PnioRequest::parse(&pkt.body, h.drep) else {
            return false;
        };
        let Some(cb) = blocks(&req.data)
            .filter_map(|b| b.ok())
            .find_map(|b| ControlBlock::parse(&b).ok())
        else {
            return false;
        };
        let mut w = Writer::new();
        cb.response().emit(&mut w).unwrap();
        let body = PnioResponse::to_request(&req, PnioStatus::OK, w.into_inner())
            .emit(h.drep)
            .unwrap();
        let p = RpcPacket::new(RpcHeader::response_to(h), body)
            .emit()
            .unwrap();
        self.udp.send_to(&p, from).unwrap();
        if cb.ar_uuid == self.ar_uuid {
            self.app_ready_seen = true;
        }
        true
    }

    /// One RPC call to the device (answers ApplicationReady requests meanwhile). Requests
    /// longer than one fragment are sent fragmented; fragmented responses are reassembled.
    pub fn call(&mut self, op: u16, data: Vec<u8>) -> PnioResponse {
        self.seq += 1;
        let h = RpcHeader::request(
            self.drep,
            Uuid::pnio_object(1, DEVICE, VENDOR),
            PNIO_DEVICE_INTERFACE,
            self.activity,
            self.seq,
            op,
        );
        let body = PnioRequest::new(65000, data).emit(self.drep).unwrap();
        let pkts: Vec<Vec<u8>> = pn_protocol::wire::rpc::fragment(&h, &body, 1392, false)
            .unwrap()
            .iter()
            .map(|p| p.emit().unwrap())
            .collect();
        self.udp
            .set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut next_send = Instant::now();
        let mut buf = vec![0u8; 65536];
        let mut reasm = pn_protocol::machine::rpc_reassembly::Reassembler::new(Default::default());
        let t0 = Instant::now();
        loop {
            assert!(Instant::now() < deadline, "RPC opnum {op}: no response");
            if Instant::now() >= next_send {
                for p in &pkts {
                    self.udp.send_to(p, Self::dev_addr()).unwrap();
                }
                self.fragments_sent = pkts.len();
                next_send = Instant::now() + Duration::from_secs(1);
            }
            let Ok((n, from)) = self.udp.recv_from(&mut buf) else {
                continue;
            };
            let Ok(p) = RpcPacket::parse(&buf[..n]) else {
                continue;
            };
            if self.maybe_app_ready(&p, from) {
                continue;
            }
            if p.header.packet_type == PacketType::Response
                && p.header.activity == self.activity
                && p.header.sequence == self.seq
            {
                assert_eq!(
                    p.header.drep, self.drep,
                    "response not in the requester's DREP"
                );
                if p.header.is_fragment() {
                    self.fragments_received += 1;
                }
                let now = pn_protocol::time::Instant::from_nanos(t0.elapsed().as_nanos() as u64);
                let r = reasm.receive(now, &p).expect("reassembly");
                if let Some(m) = r.message {
                    return PnioResponse::parse(&m.body, m.header.drep).expect("PNIO response");
                }
                continue;
            }
            assert!(
                !matches!(p.header.packet_type, PacketType::Reject | PacketType::Fault),
                "RPC opnum {op} rejected: {:?}",
                p.body
            );
        }
    }

    /// A fragmented call whose first fragment is followed by a Ping before the rest is sent:
    /// returns the answer to the Ping (Working expected) and the call's response.
    pub fn call_with_ping_midway(&mut self, op: u16, data: Vec<u8>) -> (PacketType, PnioResponse) {
        self.seq += 1;
        let seq = self.seq;
        let h = RpcHeader::request(
            self.drep,
            Uuid::pnio_object(1, DEVICE, VENDOR),
            PNIO_DEVICE_INTERFACE,
            self.activity,
            seq,
            op,
        );
        let body = PnioRequest::new(65000, data).emit(self.drep).unwrap();
        let pkts: Vec<Vec<u8>> = pn_protocol::wire::rpc::fragment(&h, &body, 1392, false)
            .unwrap()
            .iter()
            .map(|p| p.emit().unwrap())
            .collect();
        assert!(pkts.len() >= 2);
        self.udp.send_to(&pkts[0], Self::dev_addr()).unwrap();
        let pt = self.ping(seq);
        for p in &pkts[1..] {
            self.udp.send_to(p, Self::dev_addr()).unwrap();
        }
        let mut buf = vec![0u8; 65536];
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            assert!(Instant::now() < deadline, "no response");
            if let Ok((n, _)) = self.udp.recv_from(&mut buf) {
                if let Ok(p) = RpcPacket::parse(&buf[..n]) {
                    if p.header.packet_type == PacketType::Response && p.header.sequence == seq {
                        return (pt, PnioResponse::parse(&p.body, p.header.drep).unwrap());
                    }
                }
            }
        }
    }

    /// Send a CL Ping for call `seq` of our activity; returns the packet type of the answer
    /// (the resent Response for an answered call, Nocall for an unknown one).
    pub fn ping(&mut self, seq: u32) -> PacketType {
        let mut h = RpcHeader::request(
            self.drep,
            Uuid::pnio_object(1, DEVICE, VENDOR),
            PNIO_DEVICE_INTERFACE,
            self.activity,
            seq,
            opnum::READ_IMPLICIT,
        );
        h.packet_type = PacketType::Ping;
        let p = RpcPacket::new(h, Vec::new()).emit().unwrap();
        self.udp.send_to(&p, Self::dev_addr()).unwrap();
        self.udp
            .set_read_timeout(Some(Duration::from_millis(500)))
            .unwrap();
        let mut buf = vec![0u8; 65536];
        let deadline = Instant::now() + Duration::from_secs(3);
        while Instant::now() < deadline {
            if let Ok((n, _)) = self.udp.recv_from(&mut buf) {
                if let Ok(r) = RpcPacket::parse(&buf[..n]) {
                    if r.header.activity == self.activity && r.header.sequence == seq {
                        return r.header.packet_type;
                    }
                }
            }
        }
        panic!("no answer to ping");
    }

    /// Wait for the device's ApplicationReady and answer it.
    pub fn wait_app_ready(&mut self, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        let mut buf = vec![0u8; 65536];
        self.udp
            .set_read_timeout(Some(Duration::from_millis(100)))
            .unwrap();
        while !self.app_ready_seen {
            assert!(
                Instant::now() < deadline,
                "no ApplicationReady from the device"
            );
            if let Ok((n, from)) = self.udp.recv_from(&mut buf) {
                if let Ok(p) = RpcPacket::parse(&buf[..n]) {
                    self.maybe_app_ready(&p, from);
                }
            }
        }
    }

    /// The connect request blocks for the test layout.
    pub fn connect_blocks(&self) -> Vec<u8> {
        let t = self.timing;
        let mut w = Writer::new();
        ArBlockReq {
            version: (1, 0),
            ar_type: ar_type::IOCAR,
            ar_uuid: self.ar_uuid,
            session_key: self.session_key,
            cm_initiator_mac: self.mac,
            cm_initiator_object_uuid: Uuid::pnio_object(1, 0x0002, VENDOR),
            properties: ArProperties(
                ArProperties::STATE_ACTIVE
                    | ArProperties::PARAMETERIZATION_SERVER
                    | if self.advanced {
                        ArProperties::STARTUP_MODE_ADVANCED
                    } else {
                        0
                    },
            ),
            cm_initiator_activity_timeout_factor: self.cmi_factor,
            cm_initiator_udp_rt_port: 0x8892,
            cm_initiator_station_name: "test-plc".into(),
        }
        .emit(&mut w)
        .unwrap();
        let obj = |slot, subslot, frame_offset| IoObject {
            slot,
            subslot,
            frame_offset,
        };
        // As controllers do: the input CR's FrameID is proposed by the controller, the output
        // CR's (0xFFFF) is assigned by the device. Advanced startup requires RT_CLASS_2 (IEC
        // 61158-6-10 IOCRBlockReq), legacy startup uses RT_CLASS_1; each has its FrameID range.
        let (class, input_id) = if self.advanced {
            (IocrProperties::RT_CLASS_2, 0x8010)
        } else {
            (IocrProperties::RT_CLASS_1, 0xC010)
        };
        let iocr = |ty, reference, objs, iocs| IocrBlockReq {
            version: (1, 0),
            iocr_type: ty,
            iocr_reference: reference,
            lt: LT_PNIO,
            properties: IocrProperties(class),
            data_length: 40,
            frame_id: if ty == iocr_type::INPUT {
                input_id
            } else {
                0xFFFF
            },
            send_clock_factor: t.send_clock_factor,
            reduction_ratio: t.reduction_ratio,
            phase: 1,
            sequence: 0,
            frame_send_offset: 0xFFFF_FFFF,
            watchdog_factor: t.data_hold_factor,
            data_hold_factor: t.data_hold_factor,
            tag_header: TagHeader::new(0, 6),
            multicast_mac: [0; 6],
            apis: vec![IocrApi {
                api: 0,
                io_data_objects: objs,
                iocs,
            }],
        };
        // Input CR (device -> controller): DAP IOPS at 0..2, slot 1 data 3..7 + IOPS 7,
        // IOCS of slot 1's output part at 8.
        iocr(
            iocr_type::INPUT,
            1,
            vec![
                obj(0, 1, 0),
                obj(0, 0x8000, 1),
                obj(0, 0x8001, 2),
                obj(1, 1, 3),
            ],
            vec![obj(1, 1, 8)],
        )
        .emit(&mut w)
        .unwrap();
        // Output CR (controller -> device): slot 1 data 0..4 + IOPS 4, IOCS 5..8.
        iocr(
            iocr_type::OUTPUT,
            2,
            vec![obj(1, 1, 0)],
            vec![
                obj(0, 1, 5),
                obj(0, 0x8000, 6),
                obj(0, 0x8001, 7),
                obj(1, 1, 8),
            ],
        )
        .emit(&mut w)
        .unwrap();
        AlarmCrBlockReq {
            version: (1, 0),
            alarm_cr_type: ALARM_CR_TYPE,
            lt: LT_PNIO,
            properties: AlarmCrProperties(0),
            rta_timeout_factor: 1,
            rta_retries: 3,
            local_alarm_reference: 3,
            max_alarm_data_length: 200,
            tag_header_high: TagHeader::new(0, 6),
            tag_header_low: TagHeader::new(0, 5),
        }
        .emit(&mut w)
        .unwrap();
        let sub = |subslot, ident, props: u16, descriptions| ExpectedSubmodule {
            subslot,
            submodule_ident: ident,
            properties: SubmoduleProperties(props),
            descriptions,
        };
        ExpectedSubmoduleBlockReq {
            version: (1, 0),
            modules: vec![
                ExpectedModule {
                    api: 0,
                    slot: 0,
                    module_ident: 1,
                    module_properties: 0,
                    submodules: vec![
                        sub(
                            1,
                            1,
                            SubmoduleProperties::TYPE_NO_IO,
                            vec![DataDescription::input(0)],
                        ),
                        sub(
                            0x8000,
                            2,
                            SubmoduleProperties::TYPE_NO_IO,
                            vec![DataDescription::input(0)],
                        ),
                        sub(
                            0x8001,
                            3,
                            SubmoduleProperties::TYPE_NO_IO,
                            vec![DataDescription::input(0)],
                        ),
                    ],
                },
                ExpectedModule {
                    api: 0,
                    slot: 1,
                    module_ident: 0x30,
                    module_properties: 0,
                    submodules: vec![sub(
                        1,
                        if self.wrong_slot1_ident { 99 } else { 1 },
                        SubmoduleProperties::TYPE_INPUT_OUTPUT,
                        vec![DataDescription::input(4), DataDescription::output(4)],
                    )],
                },
            ],
        }
        .emit(&mut w)
        .unwrap();
        w.into_inner()
    }

    /// Connect; returns the response (asserts OK) and starts the cyclic threads.
    pub fn connect(&mut self) -> PnioResponse {
        let data = self.connect_blocks();
        let r = self.call(opnum::CONNECT, data);
        assert!(r.status.is_ok(), "connect refused: {}", r.status);
        for b in blocks(&r.data) {
            let b = b.expect("response block");
            match b.block_type() {
                0x8101 => self.dev_mac = ArBlockRes::parse(&b).unwrap().cm_responder_mac,
                0x8102 => {
                    let res = IocrBlockRes::parse(&b).unwrap();
                    if res.iocr_type == iocr_type::INPUT {
                        self.input_frame_id = res.frame_id;
                    } else {
                        self.output_frame_id = res.frame_id;
                    }
                }
                _ => {}
            }
        }
        assert_ne!(self.input_frame_id, 0);
        assert_ne!(self.output_frame_id, 0);
        self.start_cyclic();
        r
    }

    pub fn prm_end(&mut self) -> PnioResponse {
        let mut w = Writer::new();
        ControlBlock::prm_end_req(self.ar_uuid, self.session_key)
            .emit(&mut w)
            .unwrap();
        let r = self.call(opnum::CONTROL, w.into_inner());
        assert!(r.status.is_ok(), "PrmEnd: {}", r.status);
        r
    }

    /// Full start-up: Connect, PrmEnd, ApplicationReady.
    pub fn establish(&mut self) {
        self.connect();
        self.prm_end();
        self.wait_app_ready(Duration::from_secs(10));
    }

    pub fn release(&mut self) -> PnioResponse {
        self.state.armed.store(false, Ordering::Release);
        let mut w = Writer::new();
        ControlBlock::release_req(self.ar_uuid, self.session_key)
            .emit(&mut w)
            .unwrap();
        self.call(opnum::RELEASE, w.into_inner())
    }

    /// Record read with the AR (opnum Read).
    pub fn read(&mut self, slot: u16, subslot: u16, index: u16) -> (PnioStatus, Vec<u8>) {
        let req = ReadRequest::new(ReadReqHeaderRepr {
            seq_number: self.seq as u16,
            ar_uuid: self.ar_uuid.0,
            address: RecordAddress::new(0, slot, subslot, index),
            record_data_length: 4096,
            target_ar_uuid: [0; 16],
        });
        let r = self.call(opnum::READ, req.to_bytes().unwrap());
        let data = ReadResponse::parse(&r.data)
            .map(|x| x.data)
            .unwrap_or_default();
        (r.status, data)
    }

    /// A supervisor (DeviceAccess) AR connect: ARBlockReq only, ARType 0x0006.
    pub fn supervisor_connect(&mut self, ar_uuid: Uuid) -> PnioResponse {
        let mut w = Writer::new();
        ArBlockReq {
            version: (1, 0),
            ar_type: ar_type::IOSAR,
            ar_uuid,
            session_key: 7,
            cm_initiator_mac: self.mac,
            cm_initiator_object_uuid: Uuid::pnio_object(1, 0x0002, VENDOR),
            properties: ArProperties(ArProperties::STATE_ACTIVE | ArProperties::DEVICE_ACCESS),
            cm_initiator_activity_timeout_factor: 600,
            cm_initiator_udp_rt_port: 0x8892,
            cm_initiator_station_name: "commissioning-tool".into(),
        }
        .emit(&mut w)
        .unwrap();
        self.call(opnum::CONNECT, w.into_inner())
    }

    /// Release of an AR given by UUID and session key.
    pub fn release_ar(&mut self, ar_uuid: Uuid, session_key: u16) -> PnioResponse {
        let mut w = Writer::new();
        ControlBlock::release_req(ar_uuid, session_key)
            .emit(&mut w)
            .unwrap();
        self.call(opnum::RELEASE, w.into_inner())
    }

    /// Record read with any AR UUID (nil = implicit read, opnum 5).
    pub fn read_with(
        &mut self,
        ar: Uuid,
        slot: u16,
        subslot: u16,
        index: u16,
    ) -> (PnioStatus, Vec<u8>) {
        let implicit = ar == Uuid::NIL;
        let req = ReadRequest::new(ReadReqHeaderRepr {
            seq_number: self.seq as u16,
            ar_uuid: ar.0,
            address: RecordAddress::new(0, slot, subslot, index),
            record_data_length: 65000,
            target_ar_uuid: [0; 16],
        });
        let op = if implicit {
            opnum::READ_IMPLICIT
        } else {
            opnum::READ
        };
        let r = self.call(op, req.to_bytes().unwrap());
        let data = ReadResponse::parse(&r.data)
            .map(|x| x.data)
            .unwrap_or_default();
        (r.status, data)
    }

    /// Single record write with an AR.
    pub fn write_with(
        &mut self,
        ar: Uuid,
        slot: u16,
        subslot: u16,
        index: u16,
        data: Vec<u8>,
    ) -> PnioResponse {
        let req = pn_protocol::wire::pnio::record::WriteRequest::single(
            self.seq as u16,
            ar.0,
            RecordAddress::new(0, slot, subslot, index),
            data,
        )
        .unwrap();
        self.call(opnum::WRITE, req.to_bytes().unwrap())
    }

    /// MultipleWrite with the IO AR: (slot, subslot, index, data) per record.
    pub fn multiple_write(&mut self, recs: Vec<(u16, u16, u16, Vec<u8>)>) -> PnioResponse {
        use pn_protocol::wire::pnio::record::{WriteRecord, WriteReqHeaderRepr, WriteRequest};
        let seq = self.seq as u16;
        let ar = self.ar_uuid.0;
        let records = recs
            .into_iter()
            .map(|(slot, subslot, index, data)| WriteRecord {
                header: WriteReqHeaderRepr {
                    seq_number: seq,
                    ar_uuid: ar,
                    address: RecordAddress::new(0, slot, subslot, index),
                    record_data_length: data.len() as u32,
                },
                data,
            })
            .collect();
        let req = WriteRequest::multiple(seq, ar, records).unwrap();
        self.call(opnum::WRITE, req.to_bytes().unwrap())
    }

    /// Start the cyclic sender and the receiver threads.
    pub fn start_cyclic(&mut self) {
        self.stop_cyclic();
        self.state = Arc::new(CyclicState::default());
        let st = self.state.clone();
        let sock = self.sock.clone();
        let eth = EthernetRepr {
            dst: MacAddr(self.dev_mac),
            src: MacAddr(self.mac),
            vlan: Some(VlanTag::RT_CYCLIC),
            ethertype: ethertype::PROFINET,
        };
        let (ofid, period) = (self.output_frame_id, self.timing.period());
        let step = self.timing.send_clock_factor * self.timing.reduction_ratio;
        let dhf = self.timing.data_hold_factor;
        self.threads.push(std::thread::spawn(move || {
            // SAFETY: prctl with an integer argument, this thread only.
            unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
            fifo(60);
            pin_self();
            let mut buf = [0u8; 128];
            let mut counter: u16 = 0;
            let mut next = Instant::now();
            // Data-hold watchdog counted in executed cycles (like the device, see cyclic.rs).
            let (mut seen, mut miss) = (0u64, 0u64);
            while !st.stop.load(Ordering::Acquire) {
                if st.pause_tx.load(Ordering::Acquire) {
                    std::thread::sleep(period);
                    next = Instant::now();
                    continue;
                }
                if st.armed.load(Ordering::Acquire) {
                    let rx = st.rx_frames.load(Ordering::Acquire);
                    if rx != seen {
                        seen = rx;
                        miss = 0;
                    } else {
                        miss += 1;
                        if miss >= u64::from(dhf) {
                            st.watchdog_trips.fetch_add(1, Ordering::Relaxed);
                            st.armed.store(false, Ordering::Release);
                            miss = 0;
                        }
                    }
                }
                let mut sdu = [0u8; 9];
                sdu[..4].copy_from_slice(&*st.out_data.lock().unwrap());
                sdu[4..9].fill(0x80);
                counter = counter.wrapping_add(step);
                let status = ApduStatus {
                    cycle_counter: counter,
                    data_status: DataStatus::RUNNING,
                    transfer_status: 0,
                };
                let n =
                    rt::build_cyclic_frame(&mut buf, &eth, FrameId(ofid), &sdu, status).unwrap();
                if sock.send(&buf[..n]).is_ok() {
                    st.tx_frames.fetch_add(1, Ordering::Relaxed);
                }
                next += period;
                let now = Instant::now();
                if next > now {
                    std::thread::sleep(next - now);
                } else {
                    next = now; // no catch-up burst
                }
            }
        }));
        let st = self.state.clone();
        let sock = self.sock.clone();
        let rta = self.rta.clone();
        let ifid = self.input_frame_id;
        let (mac, dev_mac) = (self.mac, self.dev_mac);
        self.threads.push(std::thread::spawn(move || {
            fifo(50);
            pin_self();
            let mut buf = vec![0u8; 1600];
            let t0 = Instant::now();
            let now_p = || pn_protocol::time::Instant::from_nanos(t0.elapsed().as_nanos() as u64);
            let eth_low = EthernetRepr {
                dst: MacAddr(dev_mac),
                src: MacAddr(mac),
                vlan: Some(VlanTag::RT_ALARM_LOW),
                ethertype: ethertype::PROFINET,
            };
            while !st.stop.load(Ordering::Acquire) {
                let got = sock
                    .recv(&mut buf, Some(Duration::from_millis(2)))
                    .ok()
                    .flatten();
                let now = Instant::now();
                if let Some(n) = got {
                    if let Ok((e, payload)) = EthernetRepr::parse_frame(&buf[..n]) {
                        if e.ethertype == ethertype::PROFINET {
                            let fid = rt::frame_id(payload).map(|f| f.0).unwrap_or(0);
                            if fid == ifid {
                                if let Ok(f) = CyclicFrame::with_c_sdu_len(payload, 40) {
                                    let mut last = st.last_rx.lock().unwrap();
                                    if let Some(prev) = *last {
                                        let gap = now.duration_since(prev);
                                        st.max_gap_us
                                            .fetch_max(gap.as_micros() as u64, Ordering::Relaxed);
                                    }
                                    *last = Some(now);
                                    st.armed.store(true, Ordering::Release);
                                    *st.last_sdu.lock().unwrap() = f.c_sdu().to_vec();
                                    *st.last_status.lock().unwrap() = Some(f.apdu_status());
                                    st.rx_frames.fetch_add(1, Ordering::Relaxed);
                                }
                            } else if fid == 0xFE01 || fid == 0xFC01 {
                                rta.lock().unwrap().handle(&payload[2..], now_p());
                            }
                        }
                    }
                }
                // Alarms: acknowledge notifications.
                let mut m = rta.lock().unwrap();
                m.poll(now_p());
                while let Some(ev) = m.poll_event() {
                    if let RtaEvent::PeerAbort(status) = ev {
                        st.peer_aborts.lock().unwrap().push(status);
                        continue;
                    }
                    if let RtaEvent::Received(block) = ev {
                        if let Ok(AlarmPdu::Notification(n)) = AlarmPdu::parse(&block) {
                            st.alarms
                                .lock()
                                .unwrap()
                                .push((n.alarm_type, n.specifier.sequence_number()));
                            let ack = AlarmPdu::Ack(n.ack(PnioStatus::OK)).to_bytes().unwrap();
                            let _ = m.send_alarm(ack, now_p());
                            st.alarm_acks_sent.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
                while let Some(tx) = m.poll_transmit() {
                    let _ = sock.send(&eth_low.build(&tx.rt_payload()));
                }
            }
        }));
    }

    pub fn stop_cyclic(&mut self) {
        self.state.stop.store(true, Ordering::Release);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }

    /// Latest Q bytes (slot 1 data, C_SDU 3..7) seen in the device's frames.
    pub fn device_data(&self) -> Vec<u8> {
        let s = self.state.last_sdu.lock().unwrap();
        s.get(3..7).map(|x| x.to_vec()).unwrap_or_default()
    }

    /// New AR identity for a reconnect.
    pub fn new_ar(&mut self) {
        self.ar_uuid = random_uuid();
        self.session_key = self.session_key.wrapping_add(1);
        self.rta = Arc::new(Mutex::new(RtaMachine::new(RtaConfig::new(
            AlarmPriority::Low,
            3,
            1,
            1,
            3,
        ))));
        self.app_ready_seen = false;
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        self.stop_cyclic();
    }
}

/// An in-process packet capture on the peer's NIC (AF_PACKET, ETH_P_ALL: both directions,
/// RT and UDP), used instead of tcpdump so the test does not depend on its privilege dropping.
pub struct Capture {
    pub frames: Arc<Mutex<Vec<Vec<u8>>>>,
    stop: Arc<AtomicBool>,
    handle: Option<std::thread::JoinHandle<()>>,
}

impl Capture {
    pub fn start(ns: &PeerNs, nic: &str, max_frames: usize) -> Capture {
        let nic = nic.to_string();
        let fd = ns.in_ns(move || {
            let c = std::ffi::CString::new(nic).unwrap();
            // SAFETY: plain syscalls, results checked.
            unsafe {
                let idx = libc::if_nametoindex(c.as_ptr());
                assert!(idx != 0, "capture: no such NIC");
                let proto = (libc::ETH_P_ALL as u16).to_be() as i32;
                let fd = libc::socket(libc::AF_PACKET, libc::SOCK_RAW, proto);
                assert!(fd >= 0, "capture socket");
                let mut sll: libc::sockaddr_ll = std::mem::zeroed();
                sll.sll_family = libc::AF_PACKET as u16;
                sll.sll_protocol = (libc::ETH_P_ALL as u16).to_be();
                sll.sll_ifindex = idx as i32;
                let rc = libc::bind(
                    fd,
                    &sll as *const _ as *const libc::sockaddr,
                    std::mem::size_of::<libc::sockaddr_ll>() as u32,
                );
                assert_eq!(rc, 0, "capture bind");
                let tv = libc::timeval {
                    tv_sec: 0,
                    tv_usec: 100_000,
                };
                libc::setsockopt(
                    fd,
                    libc::SOL_SOCKET,
                    libc::SO_RCVTIMEO,
                    &tv as *const _ as *const libc::c_void,
                    std::mem::size_of::<libc::timeval>() as u32,
                );
                fd
            }
        });
        let frames = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (f2, s2) = (frames.clone(), stop.clone());
        let handle = std::thread::spawn(move || {
            let mut buf = vec![0u8; 2048];
            while !s2.load(Ordering::Acquire) {
                // SAFETY: valid buffer.
                let n =
                    unsafe { libc::recv(fd, buf.as_mut_ptr() as *mut libc::c_void, buf.len(), 0) };
                if n > 0 {
                    let mut v = f2.lock().unwrap();
                    if v.len() < max_frames {
                        v.push(buf[..n as usize].to_vec());
                    }
                }
            }
            // SAFETY: our descriptor.
            unsafe { libc::close(fd) };
        });
        Capture {
            frames,
            stop,
            handle: Some(handle),
        }
    }

    pub fn stop(&mut self) -> Vec<Vec<u8>> {
        self.stop.store(true, Ordering::Release);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
        std::mem::take(&mut *self.frames.lock().unwrap())
    }
}

/// Dissect captured frames with tshark: no malformed frame, no expert warning/error, and
/// each of `must` appears among the protocol stacks. Returns the protocol summary.
pub fn assert_capture_clean(frames: &[Vec<u8>], tag: &str, must: &[&str]) -> String {
    let pk = pn_testkit::tshark::dissect(frames).expect("tshark");
    let mut kinds = std::collections::BTreeSet::new();
    for p in &pk {
        if p.malformed() || !p.expert_problems().is_empty() {
            let _ = std::fs::write(
                format!("/tmp/stack-{tag}.pcap"),
                pn_testkit::pcap::encode(frames),
            );
        }
        p.assert_clean(tag);
        kinds.insert(p.protocols().to_string());
    }
    let all = kinds.into_iter().collect::<Vec<_>>().join(" | ");
    for m in must {
        assert!(all.contains(m), "{tag}: no {m} dissected: {all}");
    }
    all
}

/// The CPU both ends of a test share (see [`pin_process`]).
pub use pn_testkit::cpu::TEST_CPU;

/// Pin the calling thread to [`TEST_CPU`] (see `pn_testkit::cpu` for why).
pub fn pin_self() {
    pn_testkit::cpu::pin_current_thread(TEST_CPU);
}

/// Pin every thread of process `pid` to [`TEST_CPU`] (see `pn_testkit::cpu` for why).
pub fn pin_process(pid: i32) {
    pn_testkit::cpu::pin_process(pid as u32, TEST_CPU);
}

/// SCHED_FIFO for the calling peer thread (the tests run as root), as a real controller's
/// cyclic task would have.
fn fifo(prio: i32) {
    let p = libc::sched_param {
        sched_priority: prio,
    };
    // SAFETY: plain syscall on the calling thread.
    unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &p) };
}

/// Poll `f` every 20 ms until it returns `Some`, or panic after `timeout`.
pub fn wait_for<T>(what: &str, timeout: Duration, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

//! The test controller: the protocol crate's CMCTL machine (one per AR) run over the peer's
//! UDP sockets. The shell decides nothing about the protocol: it sends what the machine
//! returns from the endpoint the machine names, hands it every datagram and its timeouts, and
//! turns the machine's events into the helpers' results.

use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use pn_device::stack::socket::PnSocket;
use pn_protocol::machine::cmctl::{
    Cmctl, CmctlConfig, CmctlError, CmctlEvent, Connected, DatagramKind, Phase, RecordId,
    RpcClientConfig, Via,
};
use pn_protocol::machine::rta::{RtaConfig, RtaMachine};
use pn_protocol::time::Instant as Time;
use pn_protocol::wire::ethernet::MacAddr;
use pn_protocol::wire::pnio::alarm::AlarmPriority;
use pn_protocol::wire::pnio::record::RecordAddress;
use pn_protocol::wire::pnio::PnioStatus;
use pn_protocol::wire::rpc::{Drep, PacketType, RpcPacket, Uuid};

use super::stimulus::{dev_addr, object};
use super::{random_uuid, CyclicState, PeerNs, Timing, PEER_IP};

/// The test controller.
pub struct Peer {
    pub sock: Arc<PnSocket>,
    /// The RPC server endpoint (port 34964): the device's ApplicationReady arrives here, and
    /// the hand-built requests of stimulus.rs leave from it.
    pub udp: UdpSocket,
    /// The RPC client endpoint (an ephemeral port) CMCTL's calls leave from.
    client: UdpSocket,
    pub mac: [u8; 6],
    pub dev_mac: [u8; 6],
    /// Activity and sequence number of the hand-built calls (CMCTL has its own per AR).
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
    /// The CMCTL machine of the current AR.
    cm: Option<Cmctl>,
    /// Origin of the peer's clock ([`Peer::now`]): CMCTL's, the cyclic machines' and RTA's.
    pub(super) t0: Instant,
}

fn new_rta() -> Arc<Mutex<RtaMachine>> {
    Arc::new(Mutex::new(RtaMachine::new(RtaConfig::new(
        AlarmPriority::Low,
        3,
        1,
        1,
        3,
    ))))
}

/// A record service's outcome: (PNIOStatus, record data).
type Record = (PnioStatus, Vec<u8>);

impl Peer {
    /// Open the sockets inside `ns` on `nic`.
    pub fn open(ns: &PeerNs, nic: &str, timing: Timing) -> Peer {
        let nic = nic.to_string();
        let (sock, udp, client) = ns.in_ns(move || {
            let s = PnSocket::open(&nic).expect("peer raw socket");
            let u = UdpSocket::bind((PEER_IP, 34964)).expect("peer udp");
            let c = UdpSocket::bind((PEER_IP, 0)).expect("peer rpc client udp");
            (s, u, c)
        });
        let mac = sock.mac();
        Peer {
            sock: Arc::new(sock),
            udp,
            client,
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
            rta: new_rta(),
            threads: Vec::new(),
            fragments_sent: 0,
            fragments_received: 0,
            wrong_slot1_ident: false,
            cmi_factor: 100,
            drep: Drep::LITTLE_ENDIAN,
            advanced: true,
            cm: None,
            t0: Instant::now(),
        }
    }

    /// New AR identity for a reconnect.
    pub fn new_ar(&mut self) {
        self.ar_uuid = random_uuid();
        self.session_key = self.session_key.wrapping_add(1);
        self.rta = new_rta();
        self.cm = None;
    }

    /// Connect only: returns what the device's positive response established and starts the
    /// cyclic threads. The machine is stopped before its PrmEnd leaves: the controller falls
    /// silent after the Connect (the AR ends by the device's CMInitiatorActivityTimeout).
    pub fn connect(&mut self) -> Connected {
        self.start_ar();
        self.drive("Connect", |p, ev| match ev {
            CmctlEvent::Connected(c) => {
                p.on_connected(&c);
                p.cm().abort();
                Some(*c)
            }
            ev => panic!("Connect: {ev:?}"),
        })
    }

    /// Full start-up: Connect, PrmEnd, ApplicationReady answered.
    pub fn establish(&mut self) {
        self.start_ar();
        self.drive("establish", |p, ev| match ev {
            CmctlEvent::Connected(c) => {
                p.on_connected(&c);
                None
            }
            CmctlEvent::ParameterEnd => None,
            CmctlEvent::Established => Some(()),
            ev => panic!("establish: {ev:?}"),
        })
    }

    /// Release the AR; the PNIOStatus of the device's answer.
    pub fn release(&mut self) -> PnioStatus {
        self.state.released.store(true, Ordering::Release);
        let now = self.now();
        self.cm().release(now);
        self.drive("Release", |_, ev| match ev {
            CmctlEvent::Released => Some(PnioStatus::OK),
            CmctlEvent::Failed {
                phase: Phase::Release,
                error: CmctlError::Rejected(st),
            } => Some(st),
            ev => panic!("Release: {ev:?}"),
        })
    }

    /// Record read with the AR.
    pub fn read(&mut self, slot: u16, subslot: u16, index: u16) -> Record {
        self.read_ar(slot, subslot, index, 4096)
    }

    /// Record write with the AR.
    pub fn write(&mut self, slot: u16, subslot: u16, index: u16, data: Vec<u8>) -> PnioStatus {
        let address = RecordAddress::new(0, slot, subslot, index);
        self.record("Write", |cm, now| cm.write_record(now, address, &data))
            .0
    }

    pub(super) fn read_ar(&mut self, slot: u16, subslot: u16, index: u16, max: u32) -> Record {
        let address = RecordAddress::new(0, slot, subslot, index);
        self.record("Read", |cm, now| cm.read_record(now, address, max))
    }

    /// A record service of the AR's CMCTL, run to its end.
    fn record(&mut self, what: &str, start: impl FnOnce(&mut Cmctl, Time) -> RecordId) -> Record {
        self.fragments_sent = 0;
        let now = self.now();
        let id = start(self.cm(), now);
        let r = self.drive(what, |_, ev| match ev {
            CmctlEvent::RecordDone { id: done, result } if done == id => Some(result),
            ev => panic!("{what}: {ev:?}"),
        });
        match r {
            Ok(data) => (PnioStatus::OK, data),
            Err(CmctlError::Rejected(st)) => (st, Vec::new()),
            Err(e) => panic!("record {what}: {e}"),
        }
    }

    /// Whether `ar` is the AR the peer's CMCTL holds.
    pub(super) fn own_ar(&self, ar: Uuid) -> bool {
        self.cm
            .as_ref()
            .is_some_and(|c| !c.is_closed() && c.ar_uuid() == ar)
    }

    /// One datagram on either endpoint within `wait`: a packet answering the hand-built calls
    /// (the peer's own activity) is returned, anything else goes to the AR's CMCTL (responses
    /// to its calls, the device's ApplicationReady), whose answers are sent at once.
    pub(super) fn recv_own(&mut self, buf: &mut [u8], wait: Duration) -> Option<RpcPacket> {
        let (n, from) = self.recv_any(buf, wait)?;
        let p = RpcPacket::parse(&buf[..n]).ok();
        if let Some(p) = p
            .as_ref()
            .filter(|p| p.header.packet_type == PacketType::Response)
        {
            assert_eq!(
                p.header.drep, self.drep,
                "response not in the requester's DREP"
            );
            if p.header.is_fragment() {
                self.fragments_received += 1;
            }
        }
        if let Some(p) = p.filter(|p| {
            p.header.activity == self.activity && p.header.packet_type != PacketType::Request
        }) {
            return Some(p);
        }
        let SocketAddr::V4(from) = from else {
            return None;
        };
        let now = self.now();
        if let Some(cm) = self.cm.as_mut() {
            cm.handle_datagram(now, from, &buf[..n]);
        }
        self.flush();
        None
    }

    pub(super) fn now(&self) -> Time {
        Time::from_nanos(self.t0.elapsed().as_nanos() as u64)
    }

    /// How long until `t` (zero when past).
    pub(super) fn until(&self, t: Time) -> Duration {
        Duration::from_nanos(t.as_nanos().saturating_sub(self.now().as_nanos()))
    }

    fn cm(&mut self) -> &mut Cmctl {
        self.cm.as_mut().expect("no AR: connect first")
    }

    /// A CMCTL machine for the peer's AR identity; its Connect request is queued.
    fn start_ar(&mut self) {
        let cfg = CmctlConfig {
            ar_uuid: self.ar_uuid,
            session_key: self.session_key,
            device: dev_addr(),
            object: object(),
            activity: random_uuid(),
            device_mac: MacAddr::ZERO,
            connect_request: self.connect_blocks(),
            parameters: Vec::new(),
            first_record_seq: 1,
            rpc: RpcClientConfig {
                drep: self.drep,
                ..RpcClientConfig::default()
            },
            app_ready_timeout: pn_protocol::time::Duration::from_millis(10_000),
        };
        self.cm = Some(Cmctl::new(cfg, self.now()));
    }

    /// The cyclic and alarm channels of the new AR start before PrmEnd leaves.
    fn on_connected(&mut self, c: &Connected) {
        self.dev_mac = c.device_mac.0;
        self.input_frame_id = c.input_frame_id;
        self.output_frame_id = c.output_frame_id;
        self.start_cyclic();
    }

    /// Send what the machine has to send, each datagram from the endpoint it names.
    fn flush(&mut self) {
        let Some(cm) = self.cm.as_mut() else {
            return;
        };
        while let Some(d) = cm.poll_transmit() {
            let sock = match d.via {
                Via::Client => &self.client,
                Via::Server => &self.udp,
            };
            if d.kind == DatagramKind::Call
                && RpcPacket::parse(&d.bytes)
                    .is_ok_and(|p| p.header.packet_type == PacketType::Request)
            {
                self.fragments_sent += 1;
            }
            sock.send_to(&d.bytes, d.to).expect("peer send");
        }
    }

    /// Run the machine over the sockets until `until` makes something of one of its events.
    /// Events come before the machine's datagrams go out, so a handler may still stop them.
    fn drive<T>(
        &mut self,
        what: &str,
        mut until: impl FnMut(&mut Peer, CmctlEvent) -> Option<T>,
    ) -> T {
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut buf = vec![0u8; 65536];
        loop {
            while let Some(ev) = self.cm().poll_event() {
                if let Some(v) = until(self, ev) {
                    self.flush();
                    return v;
                }
            }
            self.flush();
            let left = deadline
                .checked_duration_since(Instant::now())
                .unwrap_or_else(|| panic!("{what}: no outcome from CMCTL"));
            let wait = self
                .cm()
                .poll_timeout()
                .map_or(left, |t| left.min(self.until(t)));
            // Nothing answers the hand-built calls meanwhile: any such packet is stale.
            let _ = self.recv_own(&mut buf, wait);
            let now = self.now();
            if self.cm().poll_timeout().is_some_and(|t| t <= now) {
                self.cm().handle_timeout(now);
            }
        }
    }

    /// The next datagram on either endpoint, waiting at most `wait`.
    fn recv_any(&self, buf: &mut [u8], wait: Duration) -> Option<(usize, SocketAddr)> {
        let mut fds = [self.client.as_raw_fd(), self.udp.as_raw_fd()].map(|fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        });
        let ms = wait.as_micros().div_ceil(1000).min(i32::MAX as u128) as i32;
        // SAFETY: two valid pollfd entries owned by this frame.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), 2, ms) };
        if n <= 0 {
            return None;
        }
        let s = if fds[0].revents != 0 {
            &self.client
        } else {
            &self.udp
        };
        s.recv_from(buf).ok()
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        self.stop_cyclic();
    }
}

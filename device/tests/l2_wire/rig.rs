//! The test rig: a veth pair between a device namespace running the production L2 services
//! (`PnSocket`, `LinkMonitor`, `L2Services`) and a peer namespace with a raw socket, plus the
//! addresses and names both sides use, the frames the peer sends and the checks of what it
//! received (tshark on every captured device frame).

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use pn_device::dataplane::{EventSink, Im0Config, StackEvent};
use pn_device::stack::dcp::DcpIdentity;
use pn_device::stack::l2::{self, L2Config, L2Services};
use pn_device::stack::link::{self, LinkMonitor};
use pn_device::stack::socket::PnSocket;
use pn_protocol::machine::dcp_client::SetResult;
use pn_protocol::wire::dcp::{BlockError, DcpRepr, NameOfStation, ServiceId};
use pn_protocol::wire::ethernet::MacAddr;
use pn_protocol::wire::lldp::DeviceLldpConfig;
use pn_testkit::netns::{NetNs, Veth};

pub(crate) const DEV_MAC: MacAddr = MacAddr([0x02, 0x4c, 0x32, 0x00, 0x12, 0x34]);
pub(crate) const PEER_MAC: MacAddr = MacAddr([0x02, 0x4c, 0x32, 0x00, 0x00, 0x01]);
pub(crate) const NAME: &str = "l2-dev";

pub(crate) fn dev_ip() -> Ipv4Addr {
    Ipv4Addr::new(10, 47, 0, 2)
}
pub(crate) fn peer_ip() -> Ipv4Addr {
    Ipv4Addr::new(10, 47, 0, 1)
}
pub(crate) fn mask() -> Ipv4Addr {
    Ipv4Addr::new(255, 255, 255, 0)
}

/// Await a condition with a deadline (no sleeping as synchronisation).
pub(crate) fn wait_for<T>(what: &str, timeout: Duration, mut f: impl FnMut() -> Option<T>) -> T {
    let end = Instant::now() + timeout;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < end, "timed out waiting for {what}");
        std::thread::yield_now();
        std::thread::park_timeout(Duration::from_millis(10));
    }
}

pub(crate) struct Rig {
    dev_ns: NetNs,
    pub(crate) peer_ns: NetNs,
    pub(crate) veth: Veth,
    pub(crate) l2: Arc<L2Services>,
    _monitor: LinkMonitor,
    pub(crate) peer: PnSocket,
    pub(crate) events: Arc<Mutex<Vec<StackEvent>>>,
    pub(crate) aborts: Arc<Mutex<Vec<&'static str>>>,
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
    pub(crate) started: Instant,
    /// Every device frame the peer received (for tshark).
    pub(crate) captured: Vec<Vec<u8>>,
}

impl Rig {
    pub(crate) fn new() -> Rig {
        let dev_ns = NetNs::new("l2d").unwrap();
        let peer_ns = NetNs::new("l2p").unwrap();
        let veth = Veth::new("l2v", &dev_ns, &peer_ns).unwrap();
        let (a, b) = (veth.a.clone(), veth.b.clone());
        dev_ns
            .exec_ok(&[
                "ip",
                "link",
                "set",
                "dev",
                &a,
                "address",
                &DEV_MAC.to_string(),
            ])
            .unwrap();
        peer_ns
            .exec_ok(&[
                "ip",
                "link",
                "set",
                "dev",
                &b,
                "address",
                &PEER_MAC.to_string(),
            ])
            .unwrap();
        peer_ns
            .exec_ok(&["ip", "addr", "add", "10.47.0.1/24", "dev", &b])
            .unwrap();
        peer_ns
            .exec_ok(&["ip", "route", "add", "224.0.0.0/4", "dev", &b])
            .unwrap();
        let peer = peer_ns.enter(move || PnSocket::open(&b)).unwrap().unwrap();

        let (sink, mut rx) = EventSink::channel();
        let events = Arc::new(Mutex::new(Vec::new()));
        let aborts = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (ab2, a2, sink2) = (aborts.clone(), a.clone(), sink.clone());
        let (sock, l2, monitor) = dev_ns
            .enter(move || {
                let sock = Arc::new(PnSocket::open(&a2).expect("device socket"));
                assert_eq!(sock.mac(), DEV_MAC.0);
                let cfg = L2Config {
                    nic: a2.clone(),
                    ifindex: sock.ifindex(),
                    identity: DcpIdentity {
                        mac: DEV_MAC,
                        station_name: NAME.into(),
                        device_vendor: "pn-device".into(),
                        vendor_id: 0x0493,
                        device_id: 1,
                        ip: dev_ip(),
                        mask: mask(),
                        gateway: Ipv4Addr::UNSPECIFIED,
                        device_instance: (0, 1),
                        device_initiative: false,
                    },
                    configured: (NAME.into(), dev_ip(), mask(), Ipv4Addr::UNSPECIFIED),
                    im0: Im0Config {
                        product_name: "pn-device".into(),
                        order_id: "PN-DEVICE-1".into(),
                        serial_number: "00000001".into(),
                        hardware_revision: 1,
                        software_revision: ('V', 1, 0, 0),
                        ..Default::default()
                    },
                    location: "hall 7".into(),
                    snmp: Some(SocketAddr::from((Ipv4Addr::UNSPECIFIED, 161))),
                    llmnr: Some(5355),
                    apply_ip: true,
                    ar_active: None,
                };
                let s2 = sock.clone();
                let send: l2::SendFn = Arc::new(move |f: &[u8]| s2.send(f).is_ok());
                let on_abort: l2::AbortFn = Arc::new(move |r| ab2.lock().unwrap().push(r));
                let l2 = Arc::new(
                    L2Services::start(cfg, link::query(&a2), send, sink2.clone(), on_abort)
                        .expect("L2 services"),
                );
                let l2m = l2.clone();
                let monitor = LinkMonitor::spawn(a2.clone(), link::DEFAULT_POLL, move |_, now| {
                    sink2.send(l2::link_event(now));
                    l2m.on_link(now.clone());
                })
                .expect("link monitor");
                (sock, l2, monitor)
            })
            .unwrap();
        drop(sink);
        let mut threads = Vec::new();
        // Device receive thread: what the plane's rx thread does for L2 frames.
        {
            let (sock, l2, stop) = (sock.clone(), l2.clone(), stop.clone());
            threads.push(std::thread::spawn(move || {
                let mut buf = [0u8; 1600];
                while !stop.load(Ordering::Acquire) {
                    if let Ok(Some(n)) = sock.recv(&mut buf, Some(Duration::from_millis(50))) {
                        if l2::wants(&buf[..n]) {
                            l2.on_frame(&buf[..n]);
                        }
                    }
                }
            }));
        }
        // Event collector.
        {
            let (events, stop) = (events.clone(), stop.clone());
            threads.push(std::thread::spawn(move || {
                while !stop.load(Ordering::Acquire) {
                    match rx.try_recv() {
                        Ok(ev) => events.lock().unwrap().push(ev),
                        Err(_) => std::thread::park_timeout(Duration::from_millis(5)),
                    }
                }
            }));
        }
        Rig {
            dev_ns,
            peer_ns,
            veth,
            l2,
            _monitor: monitor,
            peer,
            events,
            aborts,
            stop,
            threads,
            started: Instant::now(),
            captured: Vec::new(),
        }
    }

    pub(crate) fn send(&self, r: &DcpRepr, dst: MacAddr) {
        let f = r.build_frame(dst, PEER_MAC, None).unwrap();
        self.peer.send(&f).unwrap();
    }

    /// Next frame from the device matching `pred`, within `timeout`.
    pub(crate) fn recv_where(
        &mut self,
        timeout: Duration,
        mut pred: impl FnMut(&[u8]) -> bool,
    ) -> Option<(Vec<u8>, Instant)> {
        let end = Instant::now() + timeout;
        let mut buf = [0u8; 1600];
        loop {
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return None;
            }
            if let Ok(Some(n)) = self.peer.recv(&mut buf, Some(left)) {
                let f = buf[..n].to_vec();
                if f.get(6..12) == Some(&DEV_MAC.0[..]) {
                    self.captured.push(f.clone());
                    if pred(&f) {
                        return Some((f, Instant::now()));
                    }
                }
            }
        }
    }

    pub(crate) fn dcp_reply(&mut self, xid: u32, timeout: Duration) -> Option<(DcpRepr, Instant)> {
        self.recv_where(timeout, |f| {
            DcpRepr::parse_frame(f).is_ok_and(|(_, _, r)| r.xid == xid)
        })
        .map(|(f, t)| (DcpRepr::parse_frame(&f).unwrap().2, t))
    }

    pub(crate) fn event(&self, what: &str, pred: impl Fn(&StackEvent) -> bool) -> StackEvent {
        wait_for(what, Duration::from_secs(3), || {
            self.events
                .lock()
                .unwrap()
                .iter()
                .find(|e| pred(e))
                .cloned()
        })
    }

    pub(crate) fn set_errors(&mut self, r: &DcpRepr) -> Vec<(u8, u8, BlockError)> {
        self.send(r, DEV_MAC);
        let (resp, _) = self
            .dcp_reply(r.xid, Duration::from_secs(2))
            .expect("Set response");
        assert_eq!(resp.service_id, ServiceId::Set);
        SetResult::from_response(&resp).results
    }

    pub(crate) fn get_name(&mut self, xid: u32) -> String {
        self.send(&DcpRepr::get_request(xid, &[(2, 2)]), DEV_MAC);
        let (r, _) = self.dcp_reply(xid, Duration::from_secs(2)).expect("Get");
        String::from_utf8(r.name_of_station().unwrap().to_vec()).unwrap()
    }

    pub(crate) fn dev_addrs(&self) -> String {
        self.dev_ns
            .exec_ok(&["ip", "-4", "-o", "addr", "show", "dev", &self.veth.a])
            .unwrap()
    }

    pub(crate) fn peer_lldp(&self, station: &str) -> Vec<u8> {
        let mut c = DeviceLldpConfig::new(
            Some(NameOfStation::new(station).unwrap()),
            PEER_MAC,
            peer_ip(),
        );
        c.system_description = "test controller".into();
        c.build().build_frame(PEER_MAC).unwrap()
    }

    pub(crate) fn tshark_clean(&self) {
        if !pn_testkit::env::require_tshark() {
            return;
        }
        assert!(!self.captured.is_empty());
        let pk = pn_testkit::tshark::dissect(&self.captured).unwrap();
        for p in &pk {
            p.assert_clean("device frame captured on the veth");
            assert!(
                p.protocols().contains("pn_dcp") || p.protocols().contains("lldp"),
                "{}",
                p.protocols()
            );
        }
    }
}

impl Drop for Rig {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

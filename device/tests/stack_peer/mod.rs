//! A minimal IO controller for the stack tests, built only from `pn-protocol` (and the device
//! crate's raw-socket wrapper, opened inside the peer namespace). Connection management is the
//! protocol crate's CMCTL machine run over the peer's UDP sockets ([`Peer`], peer.rs): Connect,
//! PrmEnd, the answer to the device's ApplicationReady, record Read/Write, Release. The cyclic
//! exchange is the protocol crate's machines on two real-time threads (cyclic.rs): the output
//! frames `machine::cyclic::Provider`'s, the device's input frames checked by
//! `machine::cyclic::Consumer`, the data-hold supervision `machine::data_hold::DataHold`, the
//! alarms acknowledged over `machine::rta`. The raw requests the tests send on purpose (fault
//! injection, services of other ARs) and the Connect request's layout are in stimulus.rs; the
//! capture of the peer's wire in capture.rs.
#![allow(dead_code)]

mod capture;
mod cyclic;
mod peer;
mod stimulus;

// Not every test file uses every helper.
#[allow(unused_imports)]
pub use capture::{assert_capture_clean, Capture};
#[allow(unused_imports)]
pub use cyclic::CyclicState;
#[allow(unused_imports)]
pub use peer::Peer;

use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use pn_protocol::wire::rpc::Uuid;

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
    let p = &peer.name;
    let sh = |cmd: String| run(&cmd.split_whitespace().collect::<Vec<_>>());
    sh(format!(
        "ip -n {dev_ns} link add {dev_nic} type veth peer name {peer_nic} netns {p}"
    ));
    sh(format!(
        "ip -n {dev_ns} addr add 192.168.77.2/24 dev {dev_nic}"
    ));
    sh(format!("ip -n {p} addr add 192.168.77.1/24 dev {peer_nic}"));
    sh(format!("ip -n {dev_ns} link set {dev_nic} up"));
    sh(format!("ip -n {p} link set {peer_nic} up"));
    // Checksums computed in software, so a capture on the sending side shows real values
    // (with TX offload the captured UDP checksum is only the pseudo-header sum).
    sh(format!(
        "ip netns exec {dev_ns} ethtool -K {dev_nic} tx off"
    ));
    sh(format!("ip netns exec {p} ethtool -K {peer_nic} tx off"));
}

/// Runtime configuration XML for the tests: DAP + slot 1 with 4 bytes each way.
pub fn write_config(path: &std::path::Path, nic: &str, send_clock_ms: u16) {
    pn_testkit::daemon::DeviceXml::new("stack-dev")
        .nic(Some(nic))
        .ip(DEV_IP)
        .send_clock_ms(send_clock_ms)
        .write(path);
}

pub(crate) fn random_uuid() -> Uuid {
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
pub(crate) fn fifo(prio: i32) {
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

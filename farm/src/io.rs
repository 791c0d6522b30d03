//! The farm's one I/O loop (thread `farm-io`): one `AF_PACKET` socket on the NIC for every
//! device's RT, RTA, DCP, ARP, CM, SNMP and LLMNR (IPv4/UDP) frames, one deadline set for
//! every device's machines, one `sendmmsg(2)` per wake-up for everything due.
//!
//! Per iteration: take the status view's commands; sleep in `ppoll(2)` until the earliest
//! deadline or a frame; read up to [`RX_BATCH`] frames ([`RX_CALL`] per `recvmmsg(2)`) and
//! hand each to its device (by destination MAC; DCP multicast, LLDP and LLMNR multicast to every
//! device; ARP by target IP); run every device whose deadline is due (providers due within
//! [`BATCH_NS`] count as due, so the cyclic frames of one wake-up leave in one batch); send the
//! batch.
//!
//! Why one thread: every decision is in the machines and each step is short (a provider slot
//! is a copy and a header patch, a Connect a few tens of µs), so one thread keeps the devices'
//! state free of locks and its cost grows with the frames, not with threads. The loop runs
//! `SCHED_FIFO` where permitted (as pn-device's cyclic thread), with timer slack of 1 µs.

use std::collections::{BTreeSet, HashMap};
use std::os::fd::RawFd;
use std::sync::atomic::Ordering;
use std::sync::mpsc::Receiver;
use std::sync::Arc;

use pn_device::stack::cyclic::mono_ns;
use pn_device::stack::socket::{PnSocket, RecvBatch, RxRing};
use pn_protocol::time::Instant;
use pn_protocol::wire::arp::ArpRepr;
use pn_protocol::wire::ethernet::{ethertype, EthernetRepr, MacAddr};
use pn_protocol::wire::ip::{UdpFrame, PNIO_CM_PORT};
use pn_protocol::wire::rta::{FRAME_ID_ALARM_HIGH, FRAME_ID_ALARM_LOW};
use pn_protocol::wire::{llmnr, snmp};

use crate::device::{peer, Backlog, FarmDevice, Neighbours, Out};
use crate::status::{Command, FarmShared, IoCounters};

/// Frames read per wake-up before the timers run (bounds the timers' delay under a flood).
pub const RX_BATCH: usize = 256;
/// Frames read per `recvmmsg(2)` call.
pub const RX_CALL: usize = 64;
/// Providers due this close after the earliest deadline are sent in the same batch.
pub const BATCH_NS: u64 = 50_000;
/// A wake-up this late after the first deadline sends what is due before reading frames.
/// An on-time wake-up is within a few µs of it; one that read frames first stays well under
/// this (a cycle's frames of 64 devices take about 0.1 ms).
pub const SEND_FIRST_LATE_NS: u64 = 200_000;
/// How often the loop adds up the kernel's receive drops (`PACKET_STATISTICS`).
const STATS_EVERY_NS: u64 = 100_000_000;
/// Longest sleep (commands and the stop flag are looked at this often).
const MAX_SLEEP_NS: u64 = 10_000_000;

const fn stmt(code: u16, k: u32) -> libc::sock_filter {
    libc::sock_filter {
        code,
        jt: 0,
        jf: 0,
        k,
    }
}
const fn jeq(k: u32, jt: u8, jf: u8) -> libc::sock_filter {
    libc::sock_filter {
        code: 0x15,
        jt,
        jf,
        k,
    }
}

/// The farm socket's classic BPF program: PROFINET (0x8892), ARP and IPv4, also 802.1Q
/// tagged, and LLDP (0x88cc, never tagged); everything else (IPv6, ...) is not even queued.
/// ```text
/// 0: ldh [12]
/// 1: jeq #0x8892 -> 11    2: jeq #0x0806 -> 11    3: jeq #0x0800 -> 11
/// 4: jeq #0x88cc -> 11
/// 5: jeq #0x8100 -> 6 else 10
/// 6: ldh [16]
/// 7: jeq #0x8892 -> 11    8: jeq #0x0800 -> 11    9: jeq #0x0806 -> 11
/// 10: ret #0              11: ret #0x40000
/// ```
pub const FILTER: [libc::sock_filter; 12] = [
    stmt(0x28, 12),
    jeq(0x8892, 9, 0),
    jeq(0x0806, 8, 0),
    jeq(0x0800, 7, 0),
    jeq(0x88cc, 6, 0),
    jeq(0x8100, 0, 4),
    stmt(0x28, 16),
    jeq(0x8892, 3, 0),
    jeq(0x0800, 2, 0),
    jeq(0x0806, 1, 0),
    stmt(0x06, 0),
    stmt(0x06, 0x40000),
];

/// How the farm reads its frames.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum RxMode {
    /// A receive ring shared with the kernel (`PACKET_RX_RING`): frames read in place, no
    /// system call while frames are queued.
    #[default]
    Ring,
    /// `recvmmsg(2)`, [`RX_CALL`] frames per call, copied out of the kernel.
    Mmsg,
}

/// Ring slots for `devices` devices: 16 frames each (16 cycles of a device's cyclic frame and
/// its share of DCP and alarms), at least 256 and at most 16 384 (0.5-32 MiB of 2 KiB slots):
/// a small farm keeps well under 1 MB a device, a large one 32 KiB a device.
pub fn ring_slots(devices: usize) -> usize {
    devices.saturating_mul(16).clamp(256, 16_384)
}

/// The farm's receive side: a ring, or batches of `recvmmsg(2)`.
pub enum Rx {
    Ring(RxRing),
    Mmsg(RecvBatch),
}

impl Rx {
    /// Read up to about `max` queued frames (never waits) and hand each to `f`; returns how
    /// many were read, or the kernel's error of a `recvmmsg(2)`.
    fn read(
        &mut self,
        sock: &PnSocket,
        max: usize,
        mut f: impl FnMut(&[u8]),
    ) -> std::io::Result<usize> {
        match self {
            Rx::Ring(r) => Ok(r.read(max, f)),
            Rx::Mmsg(b) => {
                let mut taken = 0;
                while taken < max {
                    let n = b.recv(sock)?;
                    taken += n;
                    b.frames().for_each(&mut f);
                    if n < b.capacity() {
                        // The queue is drained (own frames left out can make a full read
                        // look short: the next wake-up reads what is left).
                        break;
                    }
                }
                Ok(taken)
            }
        }
    }
}

/// Open the farm's socket on `nic`, promiscuous: the devices' MACs are not the NIC's, and a
/// real NIC drops unicast frames to other MACs unless told otherwise. With [`RxMode::Ring`]
/// and a kernel that refuses the ring, falls back to `recvmmsg(2)` and says so.
pub fn open(nic: &str, mode: RxMode, devices: usize) -> Result<(PnSocket, Rx), String> {
    let words = |e: pn_device::dataplane::ProbeError| {
        format!("{nic}: {} (os error {})", e.reason, e.os_error)
    };
    let (sock, rx) = match mode {
        RxMode::Ring => match PnSocket::open_with_ring(nic, &FILTER, ring_slots(devices)) {
            Ok((s, r)) => (s, Rx::Ring(r)),
            Err(ring_err) => {
                // Without the ring: if that fails too, the NIC is the problem and its error is
                // the one to report; only a socket that works without the ring falls back.
                let s = PnSocket::open_with_filter(nic, &FILTER).map_err(words)?;
                tracing::warn!("{}; reading with recvmmsg(2) instead", words(ring_err));
                (s, Rx::Mmsg(RecvBatch::new(RX_CALL, 2048)))
            }
        },
        RxMode::Mmsg => {
            let s = PnSocket::open_with_filter(nic, &FILTER).map_err(words)?;
            (s, Rx::Mmsg(RecvBatch::new(RX_CALL, 2048)))
        }
    };
    // SAFETY: zeroed packet_mreq is valid; fields set below.
    let mut mr: libc::packet_mreq = unsafe { std::mem::zeroed() };
    mr.mr_ifindex = sock.ifindex() as i32;
    mr.mr_type = libc::PACKET_MR_PROMISC as u16;
    // SAFETY: valid option pointer and size on our own descriptor.
    let rc = unsafe {
        libc::setsockopt(
            sock.raw_fd(),
            libc::SOL_PACKET,
            libc::PACKET_ADD_MEMBERSHIP,
            &mr as *const libc::packet_mreq as *const libc::c_void,
            std::mem::size_of::<libc::packet_mreq>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(format!(
            "{nic}: promiscuous mode refused: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok((sock, rx))
}

/// Wait until `deadline_ns` (CLOCK_MONOTONIC) or a frame arrives.
fn wait(fd: RawFd, deadline_ns: u64) {
    let left = deadline_ns.saturating_sub(mono_ns());
    if left == 0 {
        return;
    }
    let ts = libc::timespec {
        tv_sec: (left / 1_000_000_000) as libc::time_t,
        tv_nsec: (left % 1_000_000_000) as libc::c_long,
    };
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd, a valid timespec, no signal mask.
    unsafe { libc::ppoll(&mut pfd, 1, &ts, std::ptr::null()) };
}

/// Send `frames` with as few `sendmmsg(2)` calls as the kernel allows; returns how many were
/// not sent and the last error the kernel gave for them.
pub fn send_batch(fd: RawFd, frames: &[&[u8]]) -> (usize, Option<std::io::Error>) {
    if frames.is_empty() {
        return (0, None);
    }
    let mut iov: Vec<libc::iovec> = frames
        .iter()
        .map(|f| libc::iovec {
            iov_base: f.as_ptr() as *mut libc::c_void,
            iov_len: f.len(),
        })
        .collect();
    let mut msgs: Vec<libc::mmsghdr> = iov
        .iter_mut()
        .map(|v| {
            // SAFETY: zeroed msghdr is valid (no name, no control).
            let mut h: libc::mmsghdr = unsafe { std::mem::zeroed() };
            h.msg_hdr.msg_iov = v as *mut libc::iovec;
            h.msg_hdr.msg_iovlen = 1;
            h
        })
        .collect();
    let mut done = 0usize;
    let mut failed = 0usize;
    let mut last = None;
    while done < msgs.len() {
        let rest = &mut msgs[done..];
        // SAFETY: rest points to valid mmsghdrs whose iovecs point into `frames`, alive for
        // the call; the socket is bound, so no address is needed.
        let n = unsafe { libc::sendmmsg(fd, rest.as_mut_ptr(), rest.len() as libc::c_uint, 0) };
        if n > 0 {
            done += n as usize;
            continue;
        }
        let e = std::io::Error::last_os_error();
        if e.kind() == std::io::ErrorKind::Interrupted {
            continue;
        }
        // The first frame of the rest is refused (e.g. ENOBUFS, ENETDOWN): drop it, go on.
        done += 1;
        failed += 1;
        last = Some(e);
    }
    (failed, last)
}

struct Loop {
    devs: Vec<FarmDevice>,
    by_mac: HashMap<[u8; 6], usize>,
    timers: BTreeSet<(u64, usize)>,
    neigh: Neighbours,
    out: Out,
    /// When the loop started: the devices' SNMP agents count sysUpTime from here.
    started: Instant,
}

impl Loop {
    fn reschedule(&mut self, i: usize) {
        let d = &mut self.devs[i];
        let next = d.next_deadline();
        if d.armed == next {
            return;
        }
        if let Some(old) = d.armed.take() {
            self.timers.remove(&(old, i));
        }
        if let Some(t) = next {
            self.timers.insert((t, i));
            d.armed = Some(t);
        }
    }

    fn on_frame(&mut self, frame: &[u8], now: Instant) {
        let Ok((eth, payload)) = EthernetRepr::parse_frame(frame) else {
            return;
        };
        let dst = eth.dst.0;
        match eth.ethertype {
            ethertype::PROFINET => {
                let Ok(fid) = pn_protocol::wire::rt::frame_id(payload) else {
                    return;
                };
                match fid.0 {
                    0x8000..=0xFBFF => {
                        if let Some(&i) = self.by_mac.get(&dst) {
                            if self.devs[i].on_cyclic(eth.src.0, payload) {
                                self.reschedule(i);
                            }
                        }
                    }
                    FRAME_ID_ALARM_HIGH | FRAME_ID_ALARM_LOW => {
                        if let (Some(&i), Some(pdu)) = (self.by_mac.get(&dst), payload.get(2..)) {
                            self.devs[i].on_rta(
                                fid.0,
                                eth.src.0,
                                pdu,
                                now,
                                &mut self.out,
                                &self.neigh,
                            );
                            self.reschedule(i);
                        }
                    }
                    0xFEFC..=0xFEFF => {
                        if MacAddr(dst).is_multicast() || MacAddr(dst).is_broadcast() {
                            for i in 0..self.devs.len() {
                                self.devs[i].on_dcp(frame, now, &mut self.out, &self.neigh);
                                self.reschedule(i);
                            }
                        } else if let Some(&i) = self.by_mac.get(&dst) {
                            self.devs[i].on_dcp(frame, now, &mut self.out, &self.neigh);
                            self.reschedule(i);
                        }
                    }
                    _ => {}
                }
            }
            ethertype::LLDP => {
                // The link partner is every device's neighbour (one NIC, one port).
                for i in 0..self.devs.len() {
                    self.devs[i].on_lldp(frame, now);
                }
            }
            ethertype::ARP => {
                let Ok((_, a)) = ArpRepr::parse_frame(frame) else {
                    return;
                };
                if !a.sender_ip.is_unspecified() {
                    self.neigh.insert(a.sender_ip, a.sender_mac.0);
                }
                let Some(d) = self.devs.iter().find(|d| d.ip() == a.target_ip) else {
                    return;
                };
                if let Some(reply) = a.reply(MacAddr(d.mac())) {
                    self.out.ctl.push(reply.frame(a.sender_mac));
                }
            }
            ethertype::IPV4 => self.on_ipv4(frame, now),
            _ => {}
        }
    }

    /// UDP to a device: CM (34964), SNMP (161), LLMNR (5355, also to the LLMNR group, where
    /// each device answers for its own name).
    fn on_ipv4(&mut self, frame: &[u8], now: Instant) {
        let Ok(u) = UdpFrame::parse(frame) else {
            return;
        };
        // The UDP checksum is not checked: a sender on this host (a veth peer, a NIC with
        // transmit offload) hands the packet socket a partial checksum the hardware would
        // have filled in (TP_STATUS_CSUMNOTREADY). The Ethernet FCS covers the frame on a real
        // wire; the IPv4 header checksum is always real.
        if !u.ip_checksum_ok {
            return;
        }
        if u.ip.dst_addr == llmnr::GROUP && u.udp.dst_port == llmnr::PORT {
            let replies = self.devs.iter().filter_map(|d| d.on_llmnr(&u));
            self.out.ctl.extend(replies);
            return;
        }
        let Some(&i) = self.by_mac.get(&u.dst_mac) else {
            return;
        };
        if u.ip.dst_addr != self.devs[i].ip() {
            return;
        }
        match u.udp.dst_port {
            PNIO_CM_PORT => {
                self.neigh.insert(u.ip.src_addr, u.src_mac);
                let from = peer(u.ip.src_addr, u.udp.src_port);
                self.devs[i].on_udp(now, from, u.payload, &mut self.out, &self.neigh);
                self.reschedule(i);
            }
            snmp::PORT => {
                // sysUpTime in centiseconds, wrapping as TimeTicks do (RFC 2578 §7.1.8).
                let up = (now.0.saturating_sub(self.started.0) / 10_000_000) as u32;
                self.out.ctl.extend(self.devs[i].on_snmp(&u, up));
            }
            llmnr::PORT => self.out.ctl.extend(self.devs[i].on_llmnr(&u)),
            _ => {}
        }
    }

    fn on_command(&mut self, c: Command, now: Instant) {
        let i = match &c {
            Command::SetDiagnosis(i, _) | Command::RemoveDiagnosis(i, _) => *i,
            #[cfg(feature = "test-hooks")]
            Command::HoldIo(d) => {
                // The fault itself: nothing of the loop runs meanwhile.
                std::thread::sleep(*d);
                return;
            }
        };
        if i >= self.devs.len() {
            return;
        }
        match c {
            Command::SetDiagnosis(_, d) => {
                self.devs[i].set_diagnosis(d, now, &mut self.out, &self.neigh)
            }
            Command::RemoveDiagnosis(_, d) => {
                self.devs[i].remove_diagnosis(&d, now, &mut self.out, &self.neigh);
            }
            #[cfg(feature = "test-hooks")]
            Command::HoldIo(_) => {}
        }
        self.reschedule(i);
    }

    /// Runs every device whose deadline is due (providers due within [`BATCH_NS`] count as
    /// due); returns the first due deadline and when it was handled, if any was due.
    fn run_due(&mut self, due: &mut Vec<usize>, backlog: Backlog) -> Option<(u64, u64)> {
        let now = Instant(mono_ns());
        let horizon = now.0 + BATCH_NS;
        due.clear();
        let first_due = self.timers.first().map(|&(t, _)| t)?;
        if first_due > horizon {
            return None;
        }
        while let Some(&(t, i)) = self.timers.first() {
            if t > horizon {
                break;
            }
            self.timers.pop_first();
            self.devs[i].armed = None;
            due.push(i);
        }
        for &i in due.iter() {
            if self.devs[i].on_timer(now, horizon, backlog, &mut self.out, &self.neigh) {
                self.out.rt.push(i);
            }
        }
        for &i in due.iter() {
            self.reschedule(i);
        }
        Some((first_due, now.0))
    }

    /// Send what the pass produced; returns the time spent in `sendmmsg` (ns).
    fn flush(&mut self, fd: RawFd, io: &IoCounters) -> u64 {
        let ctl = std::mem::take(&mut self.out.ctl);
        let rt = std::mem::take(&mut self.out.rt);
        let mut frames: Vec<&[u8]> = ctl.iter().map(Vec::as_slice).collect();
        frames.extend(rt.iter().filter_map(|&i| self.devs[i].provider_frame()));
        // Most flushes have nothing to send (the one before each wait): no clock reads then.
        let (failed, error, spent) = if frames.is_empty() {
            (0, None, 0)
        } else {
            let t0 = mono_ns();
            let (failed, error) = send_batch(fd, &frames);
            (failed, error, mono_ns().saturating_sub(t0))
        };
        if let Some(e) = error {
            // One error counted per refused frame (the first through record_error, which
            // also logs it and keeps it in words).
            io.record_error("send", &e);
            io.add_unsent(failed as u64 - 1);
        }
        // Keep the allocations for the next iteration.
        self.out.rt = rt;
        self.out.rt.clear();
        spent
    }
}

/// Whether a pass that woke at `woke` sends what is due before it reads the frames queued
/// meanwhile: when it woke [`SEND_FIRST_LATE_NS`] or more after its first deadline.
fn sends_first(first_deadline: Option<u64>, woke: u64) -> bool {
    first_deadline.is_some_and(|t| woke >= t.saturating_add(SEND_FIRST_LATE_NS))
}

/// Run the loop until `farm.stop`; then end every AR (ERR-RTA "device deactivated").
pub fn run(
    sock: Arc<PnSocket>,
    mut rx: Rx,
    devs: Vec<FarmDevice>,
    farm: Arc<FarmShared>,
    cmds: Receiver<Command>,
    realtime: bool,
) {
    if realtime {
        pn_device::stack::cyclic::try_sched_fifo_prio(50);
    }
    // SAFETY: prctl with an integer argument; the wake-ups of ppoll are then 1 µs exact.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1000 as libc::c_ulong, 0, 0, 0) };
    let fd = sock.raw_fd();
    let by_mac = devs.iter().enumerate().map(|(i, d)| (d.mac(), i)).collect();
    let mut l = Loop {
        devs,
        by_mac,
        timers: BTreeSet::new(),
        neigh: HashMap::new(),
        out: Out::default(),
        started: Instant(mono_ns()),
    };
    for i in 0..l.devs.len() {
        l.reschedule(i);
    }
    let mut due: Vec<usize> = Vec::new();
    farm.io
        .rx_ring
        .store(matches!(rx, Rx::Ring(_)), Ordering::Relaxed);
    let mut next_stats = 0;
    while !farm.stop.load(Ordering::Acquire) {
        let now = Instant(mono_ns());
        while let Ok(c) = cmds.try_recv() {
            l.on_command(c, now);
        }
        l.flush(fd, &farm.io);
        let next = l
            .timers
            .first()
            .map_or(now.0 + MAX_SLEEP_NS, |&(t, _)| t.min(now.0 + MAX_SLEEP_NS));
        wait(fd, next);
        let woke = mono_ns();
        // Woken late (this thread was held), what is due goes out before the receive backlog
        // is read, as pn-device's cyclic thread sends while its receive thread reads: reading
        // the frames that queued up during the hold would add their time to every device's
        // silence on the wire. The data-hold check of a slot run before the read waits for
        // the next slot (`Backlog::Unread`): its evidence is in the backlog.
        let late_first = sends_first(l.timers.first().map(|&(t, _)| t), woke);
        let (mut handled, mut send_ns) = (None, 0);
        if late_first {
            handled = l.run_due(&mut due, Backlog::Unread);
            send_ns += l.flush(fd, &farm.io);
        }
        // Up to RX_BATCH frames (from the ring, or RX_CALL per recvmmsg), then the timers.
        let now = Instant(mono_ns());
        if let Err(e) = rx.read(&sock, RX_BATCH, |f| l.on_frame(f, now)) {
            // Not the end of the farm (a link going down reports ENETDOWN once): count it,
            // say it, read again at the next wake-up.
            farm.io.record_error("receive", &e);
        }
        let after_rx = l.run_due(&mut due, Backlog::Read);
        handled = handled.or(after_rx);
        send_ns += l.flush(fd, &farm.io);
        // How late the first due timer was handled (waking late, or reading frames past
        // it) and how long the pass took from its wake-up.
        let end = mono_ns();
        let late = handled.map_or(0, |(due_at, at)| at.saturating_sub(due_at));
        farm.io
            .record_pass(end, late, end.saturating_sub(woke), send_ns);
        if end >= next_stats {
            // The kernel's drop count (the ring or queue full) since the previous read.
            if let Ok(st) = sock.statistics() {
                farm.io.record_drops(st.drops);
            }
            next_stats = end + STATS_EVERY_NS;
        }
    }
    let now = Instant(mono_ns());
    for d in &mut l.devs {
        d.shutdown(now, &mut l.out, &l.neigh);
    }
    l.flush(fd, &farm.io);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ring_holds_sixteen_frames_per_device_within_bounds() {
        assert_eq!(ring_slots(0), 256);
        assert_eq!(ring_slots(1), 256);
        assert_eq!(ring_slots(64), 1024);
        assert_eq!(ring_slots(256), 4096);
        assert_eq!(ring_slots(usize::MAX), 16_384);
    }

    #[test]
    fn only_a_late_wake_up_sends_before_reading() {
        let ms = 1_000_000;
        // On time, a little late, or woken by a frame before the deadline: read first.
        assert!(!sends_first(Some(10 * ms), 10 * ms + 5_000));
        assert!(!sends_first(
            Some(10 * ms),
            10 * ms + SEND_FIRST_LATE_NS - 1
        ));
        assert!(!sends_first(Some(10 * ms), 9 * ms));
        assert!(!sends_first(None, 10 * ms));
        // Held for 2 ms: what is due goes out first.
        assert!(sends_first(Some(10 * ms), 12 * ms));
        assert!(!sends_first(Some(u64::MAX), 12 * ms));
    }

    #[test]
    fn refused_frames_are_counted_with_the_kernels_error() {
        // A descriptor that is not open: every frame is refused, none is lost silently.
        let (failed, e) = send_batch(-1, &[&[1, 2, 3][..], &[4][..]]);
        assert_eq!(failed, 2);
        assert_eq!(e.and_then(|e| e.raw_os_error()), Some(libc::EBADF));
        assert_eq!(send_batch(-1, &[]).0, 0);
    }

    #[test]
    fn a_batch_is_sent_whole_and_in_order() {
        // 53 datagrams over a socket pair: none lost, the order kept, also when the kernel
        // takes them over several calls. A reader thread drains the pair (its queue is
        // shorter than the batch).
        let mut fds = [0; 2];
        // SAFETY: valid array of two descriptors.
        let rc = unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_DGRAM, 0, fds.as_mut_ptr()) };
        assert_eq!(rc, 0, "{}", std::io::Error::last_os_error());
        let n = 53;
        let frames: Vec<Vec<u8>> = (0..n).map(|i| vec![i as u8; 1 + i % 7]).collect();
        let reader = std::thread::spawn(move || {
            let mut got = Vec::new();
            let mut buf = [0u8; 64];
            while got.len() < n {
                // SAFETY: valid buffer of its length.
                let r = unsafe { libc::recv(fds[1], buf.as_mut_ptr().cast(), buf.len(), 0) };
                assert!(r > 0, "{}", std::io::Error::last_os_error());
                got.push(buf[..r as usize].to_vec());
            }
            got
        });
        let refs: Vec<&[u8]> = frames.iter().map(|f| &f[..]).collect();
        let (failed, e) = send_batch(fds[0], &refs);
        assert_eq!((failed, e.map(|e| e.to_string())), (0, None));
        assert_eq!(reader.join().expect("reader"), frames);
        // SAFETY: closing the pair's descriptors once.
        unsafe {
            libc::close(fds[0]);
            libc::close(fds[1]);
        }
    }

    /// Run the BPF program on a frame (the kernel's semantics for the opcodes used).
    fn accepts(frame: &[u8]) -> bool {
        let mut pc = 0usize;
        let mut a: u32 = 0;
        loop {
            let ins = FILTER[pc];
            match ins.code {
                0x28 => {
                    let k = ins.k as usize;
                    match frame.get(k..k + 2) {
                        Some(b) => a = u32::from(u16::from_be_bytes([b[0], b[1]])),
                        None => return false,
                    }
                    pc += 1;
                }
                0x15 => pc += 1 + usize::from(if a == ins.k { ins.jt } else { ins.jf }),
                0x06 => return ins.k != 0,
                c => panic!("opcode {c:#x}"),
            }
        }
    }

    #[test]
    fn the_filter_passes_profinet_arp_ipv4_and_lldp_only() {
        let f = |et: &[u8]| {
            let mut v = vec![0u8; 12];
            v.extend_from_slice(et);
            v.resize(60, 0);
            v
        };
        assert!(accepts(&f(&[0x88, 0x92])));
        assert!(accepts(&f(&[0x08, 0x06])));
        assert!(accepts(&f(&[0x08, 0x00])));
        assert!(accepts(&f(&[0x81, 0x00, 0xc0, 0x00, 0x88, 0x92])));
        assert!(accepts(&f(&[0x81, 0x00, 0x00, 0x05, 0x08, 0x00])));
        assert!(accepts(&f(&[0x81, 0x00, 0x00, 0x05, 0x08, 0x06])));
        assert!(!accepts(&f(&[0x86, 0xdd])));
        assert!(accepts(&f(&[0x88, 0xcc])));
        assert!(!accepts(&f(&[0x88, 0xb5])));
        assert!(!accepts(&f(&[0x81, 0x00, 0x00, 0x05, 0x86, 0xdd])));
        assert!(!accepts(&[0u8; 10]));
    }
}

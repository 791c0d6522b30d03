//! A userspace impairment bridge: loss, delay (with jitter, in order or reordered) and
//! duplication of Ethernet frames between the device's and the controller's namespaces, with a
//! record of every frame's fate. It replaces `tc netem`, which this kernel does not have (no
//! `sch_netem`; see docs/decisions.md, "Impairment by a userspace bridge").
//!
//! # Topology
//! The lab joins the device (`ns_dev`, NIC `dev_if`) and the controller (`ns_ctl`, NIC
//! `ctl_if`) with one veth pair, and both daemons already hold raw sockets on its ends, so the
//! pair itself is left in place. [`Bridge::install`] adds a middle namespace and two side veth
//! pairs, and steers the traffic through them with `tc clsact` + `u32` + `mirred`:
//!
//! ```text
//!  ns_dev                         middle                          ns_ctl
//!  dev_if --egress redirect--> sd ======= md  [bridge]  mc ======= sc <--egress redirect-- ctl_if
//!  dev_if <--ingress redirect-- sd                                 sc --ingress redirect--> ctl_if
//! ```
//!
//! Every frame the device sends on `dev_if` leaves through `sd`, reaches the bridge on `md`,
//! is impaired and sent on `mc`, arrives on `sc` and is redirected into `ctl_if`'s ingress, so
//! the controller (and any probe or capture on `ctl_if`) receives it as if from the wire; the
//! other direction is symmetric. A capture on `ctl_if` therefore sees the frames *to* the
//! controller but not the controller's own frames, which the egress redirect takes before the
//! capture point: capture on `sc` (or on `dev_if`'s ingress) for those. `sd`/`sc` carry the MAC of `dev_if`/`ctl_if`, so unicast
//! frames redirected into the ingress are still "for this host" (UDP/RPC works).
//! [`Bridge`]'s drop removes the redirects (the direct link works again) and the middle
//! namespace.
//!
//! # Scheduling
//! One thread per direction (SCHED_FIFO when permitted, timer slack 1 ns) waits with `ppoll`
//! for the next frame or the next release deadline, whichever comes first. A frame's deadline is
//! its receive time plus the delay plus a jitter drawn uniformly from `0..=jitter`; without
//! reordering the deadline is raised to the previous frame's, so frames leave in the order they
//! came. The thread's own wake-up latency adds to every delay: each record keeps both the
//! deadline and the actual send time, and [`Bridge::lateness`] summarises the difference.

use crate::bench::raw;
use crate::soak::Rng;
use pn_testkit::netns::{NetNs, Veth};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::os::fd::{AsRawFd, OwnedFd};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Name prefix of the middle namespaces (stale ones are removed at install).
const NS_MID: &str = "pli";
/// `PACKET_IGNORE_OUTGOING` (Linux >= 4.20).
const PACKET_IGNORE_OUTGOING: i32 = 23;
/// SCHED_FIFO priority of the bridge threads: above the controller's cyclic thread (40), so
/// the bridge's own latency stays small against what it emulates.
const FIFO_PRIO: i32 = 44;

/// Direction of travel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
pub enum Dir {
    /// Device -> controller (the device's input frames).
    DevToCtl,
    /// Controller -> device (the controller's output frames).
    CtlToDev,
}

impl Dir {
    fn idx(self) -> usize {
        match self {
            Dir::DevToCtl => 0,
            Dir::CtlToDev => 1,
        }
    }
}

/// Which frames an impairment applies to (the others pass at once, untouched).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Select {
    /// Every frame (RT, RTA alarms, DCP, ARP, UDP/RPC).
    All,
    /// PROFINET RT cyclic frames only (EtherType 0x8892, FrameID 0x8000..=0xBFFF).
    Cyclic,
}

/// How selected frames are lost.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Loss {
    None,
    /// `lost` consecutive frames of every `every` selected frames (counted from the moment the
    /// impairment was set).
    Pattern {
        every: u64,
        lost: u64,
    },
    /// Each selected frame independently with this probability (seeded PRNG).
    Probability(f64),
}

/// The impairment of one direction.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Impairment {
    pub select: Select,
    pub loss: Loss,
    /// Fixed delay of every selected frame.
    pub delay: Duration,
    /// Extra delay drawn uniformly from `0..=jitter` per frame.
    pub jitter: Duration,
    /// Let frames overtake each other (each leaves at its own deadline); otherwise order kept.
    pub reorder: bool,
    /// Send every selected frame twice, back to back.
    pub duplicate: bool,
}

impl Impairment {
    /// Pass everything at once.
    pub const NONE: Impairment = Impairment {
        select: Select::All,
        loss: Loss::None,
        delay: Duration::ZERO,
        jitter: Duration::ZERO,
        reorder: false,
        duplicate: false,
    };

    pub fn delay(delay: Duration) -> Impairment {
        Impairment {
            delay,
            ..Impairment::NONE
        }
    }

    pub fn with_jitter(self, jitter: Duration) -> Impairment {
        Impairment { jitter, ..self }
    }

    pub fn duplicate() -> Impairment {
        Impairment {
            duplicate: true,
            ..Impairment::NONE
        }
    }

    pub fn loss(loss: Loss) -> Impairment {
        Impairment {
            loss,
            ..Impairment::NONE
        }
    }

    pub fn only(self, select: Select) -> Impairment {
        Impairment { select, ..self }
    }
}

/// What happened to one frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Fate {
    /// Not yet sent (held for its deadline).
    Held,
    Forwarded,
    Dropped,
    /// Sent twice.
    Duplicated,
    /// The send failed (the out interface was gone or its queue full).
    SendFailed,
}

/// One frame that reached the bridge.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Record {
    pub dir: Dir,
    /// Receive order within the direction.
    pub seq: u64,
    /// CLOCK_MONOTONIC ns of reception (same clock as `pn_controller::rtsched::now`).
    pub rx_ns: u64,
    /// When it was due to leave (receive time + delay + jitter, raised to keep order).
    pub due_ns: u64,
    /// When it actually left (first copy); 0 when dropped or still held.
    pub tx_ns: u64,
    pub fate: Fate,
    /// FrameID of an RT frame.
    pub frame_id: Option<u16>,
    /// CycleCounter of a cyclic frame whose C_SDU length was registered
    /// ([`Bridge::register_cyclic`]).
    pub cycle_counter: Option<u16>,
    /// Frame length in bytes.
    pub len: usize,
}

/// Summary of the bridge's own release lateness (actual send time minus deadline).
#[derive(Debug, Clone, Default, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Lateness {
    pub frames: u64,
    pub p50_us: u64,
    pub p99_us: u64,
    pub max_us: u64,
}

#[derive(Debug)]
struct DirState {
    imp: Impairment,
    /// Selected frames since the impairment was set (loss patterns count from it).
    selected: u64,
    /// Latest deadline handed out (order keeping).
    last_due: u64,
    rng: Rng,
}

#[derive(Debug)]
struct State {
    dirs: [DirState; 2],
    /// C_SDU length per cyclic FrameID (where the CycleCounter is).
    c_sdu: BTreeMap<u16, usize>,
    /// At most [`LOG_MAX`] records; later frames are forwarded but not logged.
    log: Vec<Record>,
    /// Frames received per direction (also those beyond the log's bound).
    received: [u64; 2],
    /// Frames sent per direction and FrameID (RT frames only; duplicates count once).
    sent: BTreeMap<(Dir, u16), u64>,
    /// (time, direction, impairment) of every change, for reports.
    changes: Vec<(u64, Dir, Impairment)>,
}

struct Shared {
    stop: AtomicBool,
    state: Mutex<State>,
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The running bridge; dropping it restores the direct link.
pub struct Bridge {
    shared: Arc<Shared>,
    threads: Vec<std::thread::JoinHandle<()>>,
    ns_dev: String,
    ns_ctl: String,
    dev_if: String,
    ctl_if: String,
    // Dropped last: the middle namespace (and with it the side veth pairs).
    _mid: NetNs,
}

fn mac_in(ns: &NetNs, ifname: &str) -> Result<String, String> {
    Ok(ns
        .exec_ok(&["cat", &format!("/sys/class/net/{ifname}/address")])?
        .trim()
        .to_string())
}

/// `tc` filters matching every frame (`matchall` is not built into this kernel).
const MATCH_ALL: [&str; 9] = [
    "protocol", "all", "prio", "1", "u32", "match", "u32", "0", "0",
];

fn redirect(ns: &NetNs, from: &str, hook: &str, how: &str, to: &str) -> Result<(), String> {
    let mut argv = vec!["tc", "filter", "add", "dev", from, hook];
    argv.extend(MATCH_ALL);
    argv.extend(["action", "mirred", how, "redirect", "dev", to]);
    ns.exec_ok(&argv).map(|_| ())
}

fn quiet(ns: &NetNs, ifname: &str) {
    // No IPv6 chatter (router solicitations, MLD) from the helper interfaces.
    let _ = ns.exec_ok(&[
        "sysctl",
        "-qw",
        &format!("net.ipv6.conf.{ifname}.disable_ipv6=1"),
    ]);
}

impl Bridge {
    /// Put a bridge between `dev_if` in `ns_dev` and `ctl_if` in `ns_ctl` (the two ends of one
    /// veth pair) and start forwarding without impairment. `seed` seeds the jitter and the
    /// random loss of both directions.
    pub fn install(
        ns_dev: &NetNs,
        dev_if: &str,
        ns_ctl: &NetNs,
        ctl_if: &str,
        seed: u64,
    ) -> Result<Bridge, String> {
        pn_testkit::netns::remove_stale(NS_MID);
        let mid = NetNs::new(NS_MID)?;
        let side_dev = Veth::new("pis", ns_dev, &mid)?;
        let side_ctl = Veth::new("pic", ns_ctl, &mid)?;
        // Unicast frames redirected into an ingress must carry that NIC's MAC on the way in.
        let dev_mac = mac_in(ns_dev, dev_if)?;
        let ctl_mac = mac_in(ns_ctl, ctl_if)?;
        ns_dev.exec_ok(&["ip", "link", "set", &side_dev.a, "address", &dev_mac])?;
        ns_ctl.exec_ok(&["ip", "link", "set", &side_ctl.a, "address", &ctl_mac])?;
        // The kernel leaves UDP checksums to the "hardware" of a veth (CHECKSUM_PARTIAL); a
        // frame copied through a packet socket would arrive with a wrong one. Without the
        // offload the checksum is computed when the side veth transmits.
        ns_dev.exec_ok(&["ethtool", "-K", &side_dev.a, "tx", "off"])?;
        ns_ctl.exec_ok(&["ethtool", "-K", &side_ctl.a, "tx", "off"])?;
        quiet(ns_dev, &side_dev.a);
        quiet(ns_ctl, &side_ctl.a);
        quiet(&mid, &side_dev.b);
        quiet(&mid, &side_ctl.b);

        let dir_state = |k: u64| DirState {
            imp: Impairment::NONE,
            selected: 0,
            last_due: 0,
            rng: Rng::new(seed ^ k.wrapping_mul(0x9E37_79B9_7F4A_7C15)),
        };
        let shared = Arc::new(Shared {
            stop: AtomicBool::new(false),
            state: Mutex::new(State {
                dirs: [dir_state(1), dir_state(2)],
                c_sdu: BTreeMap::new(),
                log: Vec::with_capacity(1 << 16),
                received: [0; 2],
                sent: BTreeMap::new(),
                changes: Vec::new(),
            }),
        });
        let mut bridge = Bridge {
            shared: shared.clone(),
            threads: Vec::new(),
            ns_dev: ns_dev.name().to_string(),
            ns_ctl: ns_ctl.name().to_string(),
            dev_if: dev_if.to_string(),
            ctl_if: ctl_if.to_string(),
            _mid: mid,
        };
        // The forwarding threads first (sockets open before any frame is steered to them).
        for (dir, from, to) in [
            (Dir::DevToCtl, side_dev.b.clone(), side_ctl.b.clone()),
            (Dir::CtlToDev, side_ctl.b.clone(), side_dev.b.clone()),
        ] {
            let (tx, rx) = std::sync::mpsc::channel();
            let path = bridge._mid.path();
            let sh = shared.clone();
            let t = std::thread::Builder::new()
                .name(format!("pn-impair-{}", dir.idx()))
                .spawn(move || {
                    let open = || -> Result<(OwnedFd, OwnedFd), String> {
                        pn_testkit::netns::join_netns(&path)?;
                        Ok((open_socket(&from)?, open_socket(&to)?))
                    };
                    match open() {
                        Ok((i, o)) => {
                            let _ = tx.send(Ok(()));
                            pump(&sh, dir, &i, &o);
                        }
                        Err(e) => {
                            let _ = tx.send(Err(e));
                        }
                    }
                })
                .map_err(|e| e.to_string())?;
            bridge.threads.push(t);
            rx.recv().map_err(|_| "bridge thread died".to_string())??;
        }
        // Steer both NICs' traffic through the side pairs.
        for (ns, nic, side) in [(ns_dev, dev_if, &side_dev.a), (ns_ctl, ctl_if, &side_ctl.a)] {
            ns.exec_ok(&["tc", "qdisc", "add", "dev", nic, "clsact"])?;
            ns.exec_ok(&["tc", "qdisc", "add", "dev", side, "clsact"])?;
            redirect(ns, side, "ingress", "ingress", nic)?;
            redirect(ns, nic, "egress", "egress", side)?;
        }
        Ok(bridge)
    }

    /// Set the impairment of one direction from now on (frames already held keep their
    /// deadlines).
    pub fn set(&self, dir: Dir, imp: Impairment) {
        let mut st = self.shared.lock();
        let d = &mut st.dirs[dir.idx()];
        d.imp = imp;
        d.selected = 0;
        st.changes.push((raw::mono_ns(), dir, imp));
    }

    /// Both directions.
    pub fn set_both(&self, imp: Impairment) {
        self.set(Dir::DevToCtl, imp);
        self.set(Dir::CtlToDev, imp);
    }

    /// Where the CycleCounter of cyclic frames with `frame_id` is: after `c_sdu_len` bytes of
    /// C_SDU. Registered frames get [`Record::cycle_counter`].
    pub fn register_cyclic(&self, frame_id: u16, c_sdu_len: usize) {
        self.shared.lock().c_sdu.insert(frame_id, c_sdu_len);
    }

    /// Copy of the log so far (every frame, in order of reception per direction).
    pub fn log(&self) -> Vec<Record> {
        self.shared.lock().log.clone()
    }

    /// Number of frames received in `dir` so far.
    pub fn received(&self, dir: Dir) -> u64 {
        self.shared.lock().received[dir.idx()]
    }

    /// RT frames with `frame_id` sent in `dir` so far (a duplicated frame counts once).
    pub fn sent(&self, dir: Dir, frame_id: u16) -> u64 {
        self.shared
            .lock()
            .sent
            .get(&(dir, frame_id))
            .copied()
            .unwrap_or(0)
    }

    /// Wait until `n` more frames with `frame_id` have left in `dir`, or `within` runs out.
    /// Returns how many did.
    pub fn await_sent(&self, dir: Dir, frame_id: u16, n: u64, within: Duration) -> u64 {
        let base = self.sent(dir, frame_id);
        let deadline = Instant::now() + within;
        loop {
            let k = self.sent(dir, frame_id).saturating_sub(base);
            if k >= n || Instant::now() >= deadline {
                return k;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// The impairment changes so far: (CLOCK_MONOTONIC ns, direction, impairment).
    pub fn changes(&self) -> Vec<(u64, Dir, Impairment)> {
        self.shared.lock().changes.clone()
    }

    /// The bridge's own release lateness over every frame sent so far.
    pub fn lateness(&self) -> Lateness {
        lateness(&self.shared.lock().log)
    }
}

/// Release lateness (send time minus deadline) of the sent frames of `log`.
pub fn lateness(log: &[Record]) -> Lateness {
    let mut late: Vec<u64> = log
        .iter()
        .filter(|r| r.tx_ns != 0)
        .map(|r| r.tx_ns.saturating_sub(r.due_ns) / 1000)
        .collect();
    if late.is_empty() {
        return Lateness::default();
    }
    late.sort_unstable();
    let at = |q: f64| late[((late.len() as f64 * q) as usize).min(late.len() - 1)];
    Lateness {
        frames: late.len() as u64,
        p50_us: at(0.5),
        p99_us: at(0.99),
        max_us: late[late.len() - 1],
    }
}

/// Intervals between consecutive deliveries (send times) of the frames with `frame_id` in
/// `dir`, restricted to frames received in `from_ns..to_ns`: (send time of the frame before
/// the interval, interval in ns). Duplicated copies do not count as deliveries of their own.
pub fn delivery_gaps(
    log: &[Record],
    dir: Dir,
    frame_id: u16,
    from_ns: u64,
    to_ns: u64,
) -> Vec<(u64, u64)> {
    let mut sent: Vec<u64> = log
        .iter()
        .filter(|r| {
            r.dir == dir
                && r.frame_id == Some(frame_id)
                && r.tx_ns != 0
                && (from_ns..to_ns).contains(&r.rx_ns)
        })
        .map(|r| r.tx_ns)
        .collect();
    sent.sort_unstable();
    sent.windows(2).map(|w| (w[0], w[1] - w[0])).collect()
}

impl Drop for Bridge {
    fn drop(&mut self) {
        // The direct link first (the lab goes on working), then the threads.
        for (ns, nic) in [(&self.ns_dev, &self.dev_if), (&self.ns_ctl, &self.ctl_if)] {
            let _ = Command::new("tc")
                .args(["-n", ns, "qdisc", "del", "dev", nic, "clsact"])
                .output();
        }
        self.shared.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

fn open_socket(ifname: &str) -> Result<OwnedFd, String> {
    let fd = raw::packet_socket(ifname).map_err(|e| format!("{ifname}: {e}"))?;
    // Our own transmissions on this interface are not input (the receive path filters them
    // too, for kernels without the option).
    let _ = raw::setsockopt_int(&fd, libc::SOL_PACKET, PACKET_IGNORE_OUTGOING, 1);
    for opt in [libc::SO_RCVBUF, libc::SO_SNDBUF] {
        let _ = raw::setsockopt_int(&fd, libc::SOL_SOCKET, opt, 4 << 20);
    }
    Ok(fd)
}

/// Receive one frame without waiting; frames this host sent are skipped.
fn recv_now(fd: &OwnedFd, buf: &mut [u8]) -> Option<usize> {
    loop {
        // SAFETY: sockaddr_ll is plain old data.
        let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        let mut len = std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t;
        // SAFETY: buffer and address are valid for the given lengths.
        let n = unsafe {
            libc::recvfrom(
                fd.as_raw_fd(),
                buf.as_mut_ptr() as *mut libc::c_void,
                buf.len(),
                libc::MSG_DONTWAIT,
                &mut sll as *mut libc::sockaddr_ll as *mut libc::sockaddr,
                &mut len,
            )
        };
        if n < 0 {
            return None;
        }
        if sll.sll_pkttype == libc::PACKET_OUTGOING {
            continue;
        }
        return Some(n as usize);
    }
}

/// Wait until `fd` is readable or `timeout_ns` passed.
fn wait_readable(fd: &OwnedFd, timeout_ns: u64) {
    let mut pfd = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    let ts = libc::timespec {
        tv_sec: (timeout_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (timeout_ns % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: one valid pollfd and a valid timespec; no signal mask.
    unsafe { libc::ppoll(&mut pfd, 1, &ts, std::ptr::null()) };
}

/// EtherType offset and FrameID of a PROFINET RT frame (untagged or one VLAN tag).
fn rt_frame_id(f: &[u8]) -> Option<(usize, u16)> {
    let off = if f.get(12..14) == Some(&[0x81, 0x00]) {
        16
    } else {
        12
    };
    if f.get(off..off + 2) != Some(&[0x88, 0x92]) {
        return None;
    }
    let id = f.get(off + 2..off + 4)?;
    Some((off, u16::from_be_bytes([id[0], id[1]])))
}

fn is_cyclic(frame_id: u16) -> bool {
    (0x8000..=0xBFFF).contains(&frame_id)
}

/// A frame waiting for its deadline (the heap orders (deadline, receive order)).
/// Records kept in the log at most (about 56 MB): a long run forwards on without logging.
const LOG_MAX: usize = 1 << 20;
/// Frames taken from the input per pass of the forwarding loop.
const RECV_BATCH: usize = 64;

struct Held {
    due: u64,
    /// Index of its record in the log (`None` beyond [`LOG_MAX`]).
    log_at: Option<usize>,
    frame_id: Option<u16>,
    copies: u8,
    frame: Vec<u8>,
}

fn pump(sh: &Shared, dir: Dir, input: &OwnedFd, output: &OwnedFd) {
    raw::set_fifo(FIFO_PRIO);
    raw::set_timer_slack(1);
    let mut buf = vec![0u8; 2048];
    let mut heap: BinaryHeap<Reverse<(u64, u64)>> = BinaryHeap::new();
    let mut held: BTreeMap<u64, Held> = BTreeMap::new();
    let mut seq = 0u64;
    while !sh.stop.load(Ordering::Relaxed) {
        // Release what is due.
        let now = raw::mono_ns();
        while let Some(Reverse((due, s))) = heap.peek().copied() {
            if due > now {
                break;
            }
            heap.pop();
            let Some(h) = held.remove(&s) else {
                continue;
            };
            let t = raw::mono_ns();
            let mut ok = raw::send(output, &h.frame);
            if h.copies == 2 {
                ok &= raw::send(output, &h.frame);
            }
            let mut st = sh.lock();
            if let Some(r) = h.log_at.and_then(|i| st.log.get_mut(i)) {
                r.tx_ns = t;
                r.fate = match (ok, h.copies) {
                    (false, _) => Fate::SendFailed,
                    (true, 2) => Fate::Duplicated,
                    _ => Fate::Forwarded,
                };
            }
            if let (Some(id), true) = (h.frame_id, ok) {
                *st.sent.entry((dir, id)).or_insert(0) += 1;
            }
            debug_assert_eq!(h.due, due);
        }
        // Wait for a frame or the next deadline (at most 20 ms: the stop flag).
        let next = heap.peek().map_or(now + 20_000_000, |Reverse((d, _))| *d);
        wait_readable(input, next.saturating_sub(raw::mono_ns()).min(20_000_000));
        // Take what arrived, at most RECV_BATCH frames before the next release: a sender
        // faster than this loop must not keep due frames from leaving.
        for _ in 0..RECV_BATCH {
            let Some(n) = recv_now(input, &mut buf) else {
                break;
            };
            let rx = raw::mono_ns();
            let f = &buf[..n];
            let rt = rt_frame_id(f);
            let mut st = sh.lock();
            let cc = rt.and_then(|(off, id)| {
                let c = *st.c_sdu.get(&id)?;
                let at = off + 4 + c;
                f.get(at..at + 2).map(|b| u16::from_be_bytes([b[0], b[1]]))
            });
            let d = &mut st.dirs[dir.idx()];
            let imp = d.imp;
            let selected = match imp.select {
                Select::All => true,
                Select::Cyclic => rt.is_some_and(|(_, id)| is_cyclic(id)),
            };
            let (dropped, due, copies) = if selected {
                let k = d.selected;
                d.selected += 1;
                let dropped = match imp.loss {
                    Loss::None => false,
                    Loss::Pattern { every, lost } => every > 0 && k % every < lost,
                    Loss::Probability(p) => (d.rng.next_u64() as f64 / u64::MAX as f64) < p,
                };
                let jitter = imp.jitter.as_nanos() as u64;
                let extra = if jitter > 0 {
                    d.rng.range(0, jitter)
                } else {
                    0
                };
                let delay = u64::try_from(imp.delay.as_nanos()).unwrap_or(u64::MAX);
                let mut due = rx.saturating_add(delay).saturating_add(extra);
                if !imp.reorder {
                    due = due.max(d.last_due);
                }
                if !dropped {
                    d.last_due = d.last_due.max(due);
                }
                (dropped, due, if imp.duplicate { 2 } else { 1 })
            } else {
                (false, rx, 1)
            };
            st.received[dir.idx()] += 1;
            let log_at = (st.log.len() < LOG_MAX).then_some(st.log.len());
            let rec = Record {
                dir,
                seq,
                rx_ns: rx,
                due_ns: due,
                tx_ns: 0,
                fate: if dropped { Fate::Dropped } else { Fate::Held },
                frame_id: rt.map(|(_, id)| id),
                cycle_counter: cc,
                len: n,
            };
            if log_at.is_some() {
                st.log.push(rec);
            }
            drop(st);
            if !dropped {
                heap.push(Reverse((due, seq)));
                held.insert(
                    seq,
                    Held {
                        due,
                        log_at,
                        frame_id: rt.map(|(_, id)| id),
                        copies,
                        frame: f.to_vec(),
                    },
                );
            }
            seq += 1;
        }
    }
}

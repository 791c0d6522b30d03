//! The data-plane socket: raw Ethernet on the PROFINET NIC (Linux `AF_PACKET`, `SOCK_RAW`).
//!
//! # Why libc `AF_PACKET` directly (and not pnet_datalink)
//! pnet_datalink opens `ETH_P_ALL` sockets and gives no way to attach a socket filter before the
//! socket starts receiving, to set `PACKET_IGNORE_OUTGOING`, or to send from a caller buffer
//! without its internal copy. This module needs all three, so it talks to the kernel itself.
//! The driver probe of the service (`dataplane::open_raw_socket`, used by `RawSocketPlane` and
//! by the plane's `probe`) stays where it is; [`PnSocket::open`] uses the same NIC checks and
//! error form ([`ProbeError`]) so a failure here means the same `ConfigError` as there.
//!
//! # What reaches the process: a classic BPF filter
//! The socket is bound with protocol `ETH_P_ALL` so one socket sees PROFINET RT (0x8892), LLDP
//! (0x88CC) and 802.1Q-tagged RT frames. On a busy NIC `ETH_P_ALL` alone would copy every frame
//! (TCP, ARP, multicast, ...) into the socket queue and wake the receive thread for each; under
//! load the queue overflows and PROFINET frames are dropped with the rest. The kernel therefore
//! runs [`FILTER`] on each frame before queueing it and passes only:
//! * EtherType 0x8892 (PROFINET RT: cyclic, alarms, DCP),
//! * EtherType 0x88CC (LLDP),
//! * TPID 0x8100 with inner EtherType 0x8892 (priority-tagged RT frames when the NIC does not
//!   strip tags). With hardware VLAN offload the kernel has already removed the tag and the
//!   filter sees 0x8892 at offset 12; the frame then arrives untagged (the tag is in the
//!   `PACKET_AUXDATA` control message, which this module does not request: PROFINET only uses
//!   the priority, and parsing does not depend on it).
//!
//! The filter is attached to a socket created with protocol 0 (which receives nothing) before
//! the socket is bound to `ETH_P_ALL` on the NIC, so not a single unfiltered frame is queued.
//!
//! # Own frames
//! An `ETH_P_ALL` packet socket also sees the frames the host sends on the NIC
//! (`PACKET_OUTGOING`), including our own cyclic frames: at 1 ms that would double the receive
//! load and feed our own LLDP/DCP frames back to the responders. `PACKET_IGNORE_OUTGOING`
//! (Linux 4.20+) drops them in the kernel; on older kernels [`PnSocket::recv`] drops them by the
//! `sll_pkttype` of each received frame. Frames of other sockets of this host (e.g. a test
//! controller on the same NIC) are outgoing too and are not seen either; tests use a veth pair.
//!
//! # The cyclic socket of the active AR
//! A second socket of the same kind ([`PnSocket::open_with_filter`]) carries only the
//! controller's cyclic frames of the running AR: [`cyclic_filter`] builds a program that
//! accepts EtherType 0x8892 (untagged, or after an 802.1Q tag) with the AR's output FrameID,
//! the controller's source MAC, a frame long enough for the APDU status and no longer than the
//! agreed frame or a minimum-size frame (over-long frames are not the CR's frames, see
//! `cyclic::consume_frame`), DataValid set and TransferStatus 0 (every other frame is dropped
//! in the kernel, before queueing). The program
//! is replaced with [`PnSocket::set_filter`] when the AR changes ([`REJECT_ALL`] without an
//! AR). A flood of any other kind (DCP, LLDP, unknown or malformed RT frames) then neither
//! delays the cyclic frames behind it in one receive queue nor makes that queue overflow and
//! drop them; see docs/decisions.md "Floods".
//!
//! # Drops
//! [`PnSocket::statistics`] reads `PACKET_STATISTICS` (frames queued and frames dropped
//! because the receive queue, or the receive ring, was full since the last read).
//!
//! # Many frames at once
//! [`RecvBatch`] reads many queued frames per `recvmmsg(2)`; [`RxRing`]
//! ([`PnSocket::open_with_ring`]) has the kernel write them into a ring mapped into the
//! process, read in place (pn-farm's one I/O thread, decisions §34).
//!
//! # Threads
//! [`PnSocket::send`] is non-allocating (it sends the caller's buffer with `send(2)` on the
//! bound socket) and usable from the cyclic thread. [`PnSocket::try_clone`] duplicates the
//! descriptor so a receive thread and a sending thread each own a handle.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

use crate::dataplane::{valid_nic_name, ProbeError};

mod batch;
mod ring;
pub use batch::RecvBatch;
pub use ring::{RxRing, SLOT_LEN};

/// `ETH_P_ALL`.
const ETH_P_ALL: u16 = 0x0003;
/// `PACKET_IGNORE_OUTGOING` (linux/if_packet.h, since 4.20).
const PACKET_IGNORE_OUTGOING: libc::c_int = 23;
/// `PACKET_OUTGOING` packet type.
const PACKET_OUTGOING: u8 = 4;

/// Largest frame accepted by [`PnSocket::recv`] callers should size buffers to this.
pub const MAX_FRAME_LEN: usize = 1522;

const fn stmt(code: u16, k: u32) -> libc::sock_filter {
    libc::sock_filter {
        code,
        jt: 0,
        jf: 0,
        k,
    }
}

const fn jump(code: u16, k: u32, jt: u8, jf: u8) -> libc::sock_filter {
    libc::sock_filter { code, jt, jf, k }
}

const BPF_LD_H_ABS: u16 = (libc::BPF_LD | libc::BPF_H | libc::BPF_ABS) as u16;
const BPF_JEQ_K: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
const BPF_RET_K: u16 = (libc::BPF_RET | libc::BPF_K) as u16;
const BPF_LD_W_ABS: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
const BPF_LD_B_ABS: u16 = (libc::BPF_LD | libc::BPF_B | libc::BPF_ABS) as u16;
const BPF_JSET_K: u16 = (libc::BPF_JMP | libc::BPF_JSET | libc::BPF_K) as u16;
const BPF_JGT_K: u16 = (libc::BPF_JMP | libc::BPF_JGT | libc::BPF_K) as u16;
const BPF_LD_W_LEN: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_LEN) as u16;
/// `PACKET_STATISTICS` (linux/if_packet.h).
const PACKET_STATISTICS: libc::c_int = 6;
/// DataStatus bit DataValid (IEC 61158-6-10, also `pn_protocol::wire::rt::DataStatus`).
const DATA_VALID: u32 = 0x04;

/// The classic BPF program (see the module documentation):
/// ```text
/// 0: ldh [12]
/// 1: jeq #0x8892, 7, 2
/// 2: jeq #0x88cc, 7, 3
/// 3: jeq #0x8100, 4, 6
/// 4: ldh [16]
/// 5: jeq #0x8892, 7, 6
/// 6: ret #0          ; drop
/// 7: ret #0x40000    ; accept the whole frame
/// ```
pub const FILTER: [libc::sock_filter; 8] = [
    stmt(BPF_LD_H_ABS, 12),
    jump(BPF_JEQ_K, 0x8892, 5, 0),
    jump(BPF_JEQ_K, 0x88cc, 4, 0),
    jump(BPF_JEQ_K, 0x8100, 0, 2),
    stmt(BPF_LD_H_ABS, 16),
    jump(BPF_JEQ_K, 0x8892, 1, 0),
    stmt(BPF_RET_K, 0),
    stmt(BPF_RET_K, 0x40000),
];

/// Evaluate [`FILTER`]'s rule on a frame in user space (for tests and documentation: the
/// kernel runs the BPF program itself).
pub fn filter_accepts(frame: &[u8]) -> bool {
    let at = |i: usize| {
        frame
            .get(i..i + 2)
            .map(|b| u16::from_be_bytes([b[0], b[1]]))
    };
    match at(12) {
        Some(0x8892) | Some(0x88cc) => true,
        Some(0x8100) => at(16) == Some(0x8892),
        _ => false,
    }
}

/// A program that drops every frame (the cyclic socket while no AR runs).
pub const REJECT_ALL: [libc::sock_filter; 1] = [stmt(BPF_RET_K, 0)];

/// What the cyclic socket accepts: the running AR's output CR.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CyclicMatch {
    pub frame_id: u16,
    /// The controller's MAC address.
    pub src: [u8; 6],
    /// C_SDU length (IOCR DataLength): the APDU status follows it.
    pub c_sdu_len: usize,
}

/// How [`cyclic_filter`]'s program for a [`CyclicMatch`] decides on a frame, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CyclicVerdict {
    /// Passed to the cyclic socket.
    Accepted,
    /// Dropped: not this CR's frame (other EtherType or FrameID).
    NotThisCr,
    /// Dropped: this CR's FrameID, but from another source or of a length that cannot
    /// carry this CR's frame (what `cyclic::consume_frame` counts as invalid).
    Malformed,
    /// Dropped: a well-formed frame of this CR with DataValid off or TransferStatus set.
    Status,
}

impl CyclicMatch {
    /// What [`cyclic_filter`]'s program for this rule does with `frame`, evaluated in user
    /// space (the kernel runs the program itself). `pn-rx` sees every RT frame on the main
    /// socket and uses this to leave exactly the accepted frames to the cyclic socket: the
    /// AR's frames the filter drops are still counted (`invalidFrames`) or consumed there,
    /// as without the cyclic socket. A unit test runs both on the same frames.
    pub fn verdict(&self, frame: &[u8]) -> CyclicVerdict {
        use pn_protocol::machine::cyclic::{check_frame, CrRule, FrameCheck};
        use pn_protocol::wire::ethernet::MacAddr;
        use pn_protocol::wire::rt::FrameId;
        let be16 = |i: usize| {
            frame
                .get(i..i + 2)
                .map(|b| u16::from_be_bytes([b[0], b[1]]))
        };
        // The filter's one decision of its own: the RT payload sits after an untagged
        // Ethernet header or after one 802.1Q tag.
        let fid_at = match be16(12) {
            Some(0x8100) if be16(16) == Some(0x8892) => 18,
            Some(0x8892) => 14,
            _ => return CyclicVerdict::NotThisCr,
        };
        if self.c_sdu_len > 1500 {
            return CyclicVerdict::NotThisCr;
        }
        let (Some(src), Some(payload)) = (frame.get(6..12), frame.get(fid_at..)) else {
            return CyclicVerdict::NotThisCr;
        };
        let mut mac = [0u8; 6];
        mac.copy_from_slice(src);
        let rule = CrRule {
            frame_id: FrameId(self.frame_id),
            src: Some(MacAddr(self.src)),
            c_sdu_len: Some(self.c_sdu_len),
        };
        // Everything else is the consumer's rule (protocol crate), which the BPF program
        // mirrors (test `cyclic_rule_in_user_space_matches_the_program`).
        match check_frame(&rule, MacAddr(mac), payload) {
            FrameCheck::NotThisCr => CyclicVerdict::NotThisCr,
            FrameCheck::Malformed(_) => CyclicVerdict::Malformed,
            FrameCheck::NotValid(_) => CyclicVerdict::Status,
            FrameCheck::Good(_) => CyclicVerdict::Accepted,
        }
    }
}

/// The classic BPF program of the cyclic socket for `m` (see the module documentation). Per
/// tag layout (untagged: FrameID at 14; 802.1Q: at 18):
/// ```text
///      ld  len                ; jgt FrameID offset + max(C_SDU + 6, 46): drop
///      ldh [FrameID]          ; jeq frame_id else drop
///      ld  [6]                ; jeq src[0..4] else drop
///      ldh [10]               ; jeq src[4..6] else drop
///      ldb [DataStatus]       ; jset #0x04 else drop   (a short frame ends the program: drop)
///      ldb [TransferStatus]   ; jeq #0 accept else drop
/// ```
/// `None` when the C_SDU length does not fit an Ethernet frame.
pub fn cyclic_filter(m: &CyclicMatch) -> Option<Vec<libc::sock_filter>> {
    if m.c_sdu_len > 1500 {
        return None;
    }
    // Labels are resolved at the end: DROP and ACCEPT are the last two instructions.
    enum J {
        Next,
        Drop,
        Accept,
        To(usize),
    }
    let mut prog: Vec<(u16, u32, J, J)> = Vec::with_capacity(32);
    let src_hi = u32::from_be_bytes([m.src[0], m.src[1], m.src[2], m.src[3]]);
    let src_lo = u32::from(u16::from_be_bytes([m.src[4], m.src[5]]));
    // 0: ldh [12]; 1: jeq 0x8100 -> tagged; 2: jeq 0x8892 -> untagged (3) else drop.
    prog.push((BPF_LD_H_ABS, 12, J::Next, J::Next));
    prog.push((BPF_JEQ_K, 0x8100, J::To(0), J::Next)); // patched below
    prog.push((BPF_JEQ_K, 0x8892, J::Next, J::Drop));
    let body = |prog: &mut Vec<(u16, u32, J, J)>, fid_at: u32| {
        let status = fid_at + 2 + m.c_sdu_len as u32;
        let longest = fid_at + (m.c_sdu_len as u32 + 6).max(46);
        prog.push((BPF_LD_W_LEN, 0, J::Next, J::Next));
        prog.push((BPF_JGT_K, longest, J::Drop, J::Next));
        prog.push((BPF_LD_H_ABS, fid_at, J::Next, J::Next));
        prog.push((BPF_JEQ_K, u32::from(m.frame_id), J::Next, J::Drop));
        prog.push((BPF_LD_W_ABS, 6, J::Next, J::Next));
        prog.push((BPF_JEQ_K, src_hi, J::Next, J::Drop));
        prog.push((BPF_LD_H_ABS, 10, J::Next, J::Next));
        prog.push((BPF_JEQ_K, src_lo, J::Next, J::Drop));
        prog.push((BPF_LD_B_ABS, status + 2, J::Next, J::Next));
        prog.push((BPF_JSET_K, DATA_VALID, J::Next, J::Drop));
        prog.push((BPF_LD_B_ABS, status + 3, J::Next, J::Next));
        prog.push((BPF_JEQ_K, 0, J::Accept, J::Drop));
    };
    body(&mut prog, 14);
    let tagged = prog.len();
    prog[1].2 = J::To(tagged);
    prog.push((BPF_LD_H_ABS, 16, J::Next, J::Next));
    prog.push((BPF_JEQ_K, 0x8892, J::Next, J::Drop));
    body(&mut prog, 18);
    let drop_at = prog.len();
    let accept_at = drop_at + 1;
    let rel = |at: usize, j: &J| -> Option<u8> {
        let target = match j {
            J::Next => at + 1,
            J::Drop => drop_at,
            J::Accept => accept_at,
            J::To(t) => *t,
        };
        u8::try_from(target.checked_sub(at + 1)?).ok()
    };
    let mut out = Vec::with_capacity(prog.len() + 2);
    for (at, (code, k, jt, jf)) in prog.iter().enumerate() {
        if matches!(*code, BPF_JEQ_K | BPF_JSET_K | BPF_JGT_K) {
            out.push(jump(*code, *k, rel(at, jt)?, rel(at, jf)?));
        } else {
            out.push(stmt(*code, *k));
        }
    }
    out.push(stmt(BPF_RET_K, 0));
    out.push(stmt(BPF_RET_K, 0x40000));
    Some(out)
}

/// Frames queued to and dropped by one socket (`PACKET_STATISTICS`, since the previous read).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SocketStats {
    pub packets: u64,
    pub drops: u64,
}

fn attach_filter(fd: RawFd, prog: &[libc::sock_filter]) -> io::Result<()> {
    let len = u16::try_from(prog.len())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "filter too long"))?;
    let fprog = libc::sock_fprog {
        len,
        filter: prog.as_ptr() as *mut libc::sock_filter,
    };
    // SAFETY: fprog points to a valid filter array that outlives the call (the kernel copies).
    let rc = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_ATTACH_FILTER,
            &fprog as *const libc::sock_fprog as *const libc::c_void,
            std::mem::size_of::<libc::sock_fprog>() as libc::socklen_t,
        )
    };
    if rc < 0 {
        return Err(os_err());
    }
    Ok(())
}

fn os_err() -> io::Error {
    io::Error::last_os_error()
}

fn errno(e: &io::Error) -> i32 {
    e.raw_os_error().unwrap_or(libc::EIO)
}

/// A raw `AF_PACKET` socket bound to one NIC with the PROFINET filter attached.
#[derive(Debug)]
pub struct PnSocket {
    fd: OwnedFd,
    nic: String,
    ifindex: u32,
    mac: [u8; 6],
    /// The kernel drops our outgoing frames (PACKET_IGNORE_OUTGOING accepted).
    kernel_ignores_outgoing: bool,
}

impl PnSocket {
    /// Open, filter and bind the socket on `nic` (needs `CAP_NET_RAW`). Resolves the NIC in
    /// the calling thread's network namespace.
    pub fn open(nic: &str) -> Result<PnSocket, ProbeError> {
        Self::open_with_filter(nic, &FILTER)
    }

    /// [`PnSocket::open`] with another filter program (e.g. [`REJECT_ALL`] for the cyclic
    /// socket before its AR is known).
    pub fn open_with_filter(
        nic: &str,
        filter: &[libc::sock_filter],
    ) -> Result<PnSocket, ProbeError> {
        Self::open_inner(nic, filter, |_| Ok(())).map(|(s, ())| s)
    }

    /// [`PnSocket::open_with_filter`] with a receive ring of at least `slots` frames
    /// ([`RxRing`]), set up before the socket is bound so that every frame it accepts is in
    /// the ring.
    pub fn open_with_ring(
        nic: &str,
        filter: &[libc::sock_filter],
        slots: usize,
    ) -> Result<(PnSocket, RxRing), ProbeError> {
        Self::open_inner(nic, filter, |fd| {
            RxRing::attach(fd, slots)
                .map_err(|e| (errno(&e), format!("cannot set up the receive ring: {e}")))
        })
    }

    /// Open, filter, run `before_bind` on the descriptor, bind.
    fn open_inner<T>(
        nic: &str,
        filter: &[libc::sock_filter],
        before_bind: impl FnOnce(RawFd) -> Result<T, (i32, String)>,
    ) -> Result<(PnSocket, T), ProbeError> {
        let err = |os_error: i32, reason: String| ProbeError {
            nic: nic.to_string(),
            os_error,
            reason,
        };
        if !valid_nic_name(nic) {
            return Err(err(libc::EINVAL, "invalid network interface name".into()));
        }
        let cname =
            std::ffi::CString::new(nic).map_err(|_| err(libc::EINVAL, "NUL in name".into()))?;
        // SAFETY: cname is a valid NUL-terminated string.
        let ifindex = unsafe { libc::if_nametoindex(cname.as_ptr()) };
        if ifindex == 0 {
            let e = os_err();
            return Err(err(errno(&e), "network interface not found".into()));
        }
        // Protocol 0: the socket receives nothing until it is bound with a protocol below.
        // SAFETY: plain syscall, result checked.
        let raw = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
        if raw < 0 {
            let e = os_err();
            return Err(err(
                errno(&e),
                format!("cannot open raw AF_PACKET socket ({e}); CAP_NET_RAW is required"),
            ));
        }
        // SAFETY: raw is a fresh descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        if let Err(e) = attach_filter(fd.as_raw_fd(), filter) {
            return Err(err(
                errno(&e),
                format!("cannot attach the socket filter: {e}"),
            ));
        }
        let one: libc::c_int = 1;
        // SAFETY: valid option value pointer and size.
        let kernel_ignores_outgoing = unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                libc::SOL_PACKET,
                PACKET_IGNORE_OUTGOING,
                &one as *const libc::c_int as *const libc::c_void,
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        } == 0;
        // A larger receive queue absorbs bursts (DCP identify storms, alarm bursts).
        let rcvbuf: libc::c_int = 1 << 20;
        // SAFETY: valid option value pointer and size; failure is harmless.
        unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_RCVBUF,
                &rcvbuf as *const libc::c_int as *const libc::c_void,
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            );
        }
        let extra = before_bind(fd.as_raw_fd()).map_err(|(code, why)| err(code, why))?;
        // SAFETY: zeroed sockaddr_ll is valid; fields set below.
        let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_protocol = ETH_P_ALL.to_be();
        sll.sll_ifindex = ifindex as i32;
        // SAFETY: sll is a properly initialised sockaddr_ll of the given size.
        let rc = unsafe {
            libc::bind(
                fd.as_raw_fd(),
                &sll as *const libc::sockaddr_ll as *const libc::sockaddr,
                std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        };
        if rc < 0 {
            let e = os_err();
            return Err(err(errno(&e), format!("cannot bind raw socket: {e}")));
        }
        let mac = hw_addr(fd.as_raw_fd(), nic).map_err(|e| {
            err(
                errno(&e),
                format!("cannot read the MAC address (SIOCGIFHWADDR): {e}"),
            )
        })?;
        Ok((
            PnSocket {
                fd,
                nic: nic.to_string(),
                ifindex,
                mac,
                kernel_ignores_outgoing,
            },
            extra,
        ))
    }

    /// NIC name.
    pub fn nic(&self) -> &str {
        &self.nic
    }

    /// Interface index (in the namespace the socket was opened in).
    pub fn ifindex(&self) -> u32 {
        self.ifindex
    }

    /// The NIC's MAC address (source address of every frame we send).
    pub fn mac(&self) -> [u8; 6] {
        self.mac
    }

    /// `PACKET_IGNORE_OUTGOING` is in effect.
    pub fn kernel_ignores_outgoing(&self) -> bool {
        self.kernel_ignores_outgoing
    }

    /// The raw descriptor (for ioctls on the same NIC, e.g. [`super::link`]).
    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Whether a frame is queued on the socket, not yet read (`FIONREAD`: for a packet
    /// socket, the length of the first queued frame). An error reads as none.
    pub fn has_queued(&self) -> bool {
        let mut n: libc::c_int = 0;
        // SAFETY: FIONREAD writes one int through the pointer.
        let rc = unsafe { libc::ioctl(self.fd.as_raw_fd(), libc::FIONREAD, &mut n) };
        rc == 0 && n > 0
    }

    /// Replace the socket's filter program (atomically for the kernel: each frame is judged
    /// by the old or the new program).
    pub fn set_filter(&self, prog: &[libc::sock_filter]) -> io::Result<()> {
        attach_filter(self.fd.as_raw_fd(), prog)
    }

    /// `PACKET_STATISTICS`: frames queued and frames dropped (receive queue full) since the
    /// previous call (the kernel resets the counters on each read).
    pub fn statistics(&self) -> io::Result<SocketStats> {
        let mut st = libc::tpacket_stats {
            tp_packets: 0,
            tp_drops: 0,
        };
        let mut len = std::mem::size_of::<libc::tpacket_stats>() as libc::socklen_t;
        // SAFETY: st is a valid tpacket_stats out-parameter of the given size.
        let rc = unsafe {
            libc::getsockopt(
                self.fd.as_raw_fd(),
                libc::SOL_PACKET,
                PACKET_STATISTICS,
                &mut st as *mut libc::tpacket_stats as *mut libc::c_void,
                &mut len,
            )
        };
        if rc < 0 {
            return Err(os_err());
        }
        // tp_packets counts queued and dropped frames alike.
        Ok(SocketStats {
            packets: u64::from(st.tp_packets.saturating_sub(st.tp_drops)),
            drops: u64::from(st.tp_drops),
        })
    }

    /// A second handle on the same socket (`dup`), e.g. for the cyclic thread.
    pub fn try_clone(&self) -> io::Result<PnSocket> {
        Ok(PnSocket {
            fd: self.fd.try_clone()?,
            nic: self.nic.clone(),
            ifindex: self.ifindex,
            mac: self.mac,
            kernel_ignores_outgoing: self.kernel_ignores_outgoing,
        })
    }

    /// Send one complete Ethernet frame (destination, source, EtherType, payload; at least 60
    /// bytes, the NIC adds the FCS). Does not allocate.
    pub fn send(&self, frame: &[u8]) -> io::Result<usize> {
        loop {
            // SAFETY: frame is a valid buffer of frame.len() bytes.
            let n = unsafe {
                libc::send(
                    self.fd.as_raw_fd(),
                    frame.as_ptr() as *const libc::c_void,
                    frame.len(),
                    0,
                )
            };
            if n >= 0 {
                return Ok(n as usize);
            }
            let e = os_err();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }

    /// Receive one frame into `buf`. Waits at most `timeout` (`None` = forever); returns
    /// `Ok(None)` on timeout. Frames we sent ourselves are skipped (see the module docs).
    /// Frames longer than `buf` are truncated to `buf.len()`.
    pub fn recv(&self, buf: &mut [u8], timeout: Option<Duration>) -> io::Result<Option<usize>> {
        let deadline = timeout.map(|t| std::time::Instant::now() + t);
        loop {
            let wait_ms: libc::c_int = match deadline {
                None => -1,
                Some(d) => {
                    let left = d.saturating_duration_since(std::time::Instant::now());
                    // Round up so a 0.5 ms remainder does not become a busy loop.
                    let ms = left.as_micros().div_ceil(1000);
                    ms.min(i32::MAX as u128) as libc::c_int
                }
            };
            let mut pfd = libc::pollfd {
                fd: self.fd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: pfd is a valid pollfd array of length 1.
            let rc = unsafe { libc::poll(&mut pfd, 1, wait_ms) };
            if rc < 0 {
                let e = os_err();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            if rc == 0 {
                if deadline.is_some() {
                    return Ok(None);
                }
                continue;
            }
            // SAFETY: zeroed sockaddr_ll is a valid out-parameter.
            let mut from: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
            let mut from_len = std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t;
            // SAFETY: buf and from are valid for writes of the given sizes.
            let n = unsafe {
                libc::recvfrom(
                    self.fd.as_raw_fd(),
                    buf.as_mut_ptr() as *mut libc::c_void,
                    buf.len(),
                    libc::MSG_DONTWAIT,
                    &mut from as *mut libc::sockaddr_ll as *mut libc::sockaddr,
                    &mut from_len,
                )
            };
            if n < 0 {
                let e = os_err();
                if matches!(
                    e.kind(),
                    io::ErrorKind::Interrupted | io::ErrorKind::WouldBlock
                ) {
                    continue;
                }
                return Err(e);
            }
            if from.sll_pkttype == PACKET_OUTGOING {
                continue;
            }
            return Ok(Some(n as usize));
        }
    }
}

/// The NIC's hardware address via `SIOCGIFHWADDR` on `fd` (works in any namespace, unlike
/// sysfs from a thread that joined a namespace with setns).
fn hw_addr(fd: RawFd, nic: &str) -> io::Result<[u8; 6]> {
    // SAFETY: zeroed ifreq is a valid value.
    let mut ifr: libc::ifreq = unsafe { std::mem::zeroed() };
    for (d, s) in ifr.ifr_name.iter_mut().zip(nic.bytes()) {
        *d = s as libc::c_char;
    }
    // SAFETY: ifr is a valid ifreq with a NUL-terminated name (nic < IFNAMSIZ, checked).
    let rc = unsafe { libc::ioctl(fd, libc::SIOCGIFHWADDR, &mut ifr) };
    if rc < 0 {
        return Err(os_err());
    }
    // SAFETY: SIOCGIFHWADDR filled the ifru_hwaddr member.
    let sa = unsafe { ifr.ifr_ifru.ifru_hwaddr };
    let mut mac = [0u8; 6];
    for (m, b) in mac.iter_mut().zip(sa.sa_data.iter()) {
        *m = *b as u8;
    }
    Ok(mac)
}

#[cfg(test)]
mod tests;

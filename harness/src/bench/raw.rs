//! Small Linux helpers of the benchmarks: raw `AF_PACKET` sockets, clocks, real-time settings
//! and `/proc` readings. Nothing here is used by the device or the controller.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// `ETH_P_ALL`.
pub const ETH_P_ALL: u16 = 0x0003;
/// EtherType of the bare sender's frames (IEEE 802 "local experimental").
pub const BARE_ETHERTYPE: u16 = 0x88B5;

/// CLOCK_REALTIME in ns (the clock of `SO_TIMESTAMPNS`).
pub fn realtime_ns() -> u64 {
    clock_ns(libc::CLOCK_REALTIME)
}

/// CLOCK_MONOTONIC in ns.
pub fn mono_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

fn clock_ns(clk: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid timespec pointer.
    unsafe { libc::clock_gettime(clk, &mut ts) };
    (ts.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(ts.tv_nsec as u64)
}

/// Sleep until `deadline_ns` on CLOCK_MONOTONIC (absolute, restarted on EINTR).
pub fn sleep_until_abs(deadline_ns: u64) {
    let ts = libc::timespec {
        tv_sec: (deadline_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (deadline_ns % 1_000_000_000) as libc::c_long,
    };
    loop {
        // SAFETY: valid timespec; no remaining-time pointer needed with TIMER_ABSTIME.
        let rc = unsafe {
            libc::clock_nanosleep(
                libc::CLOCK_MONOTONIC,
                libc::TIMER_ABSTIME,
                &ts,
                std::ptr::null_mut(),
            )
        };
        if rc != libc::EINTR {
            break;
        }
    }
}

/// SCHED_FIFO with `prio` for the calling thread; whether it was granted.
pub fn set_fifo(prio: i32) -> bool {
    let p = libc::sched_param {
        sched_priority: prio,
    };
    // SAFETY: valid parameter; 0 = calling thread.
    unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &p) == 0 }
}

/// `mlockall(MCL_CURRENT | MCL_FUTURE)`; whether it was granted.
pub fn lock_memory() -> bool {
    // SAFETY: plain syscall.
    unsafe { libc::mlockall(libc::MCL_CURRENT | libc::MCL_FUTURE) == 0 }
}

/// Timer slack of the calling thread in ns.
pub fn set_timer_slack(ns: u64) {
    // SAFETY: prctl with integer arguments.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns as libc::c_ulong, 0, 0, 0) };
}

/// Interface index in the calling thread's namespace.
pub fn ifindex(name: &str) -> io::Result<i32> {
    let c = std::ffi::CString::new(name).map_err(|_| io::ErrorKind::InvalidInput)?;
    // SAFETY: valid NUL-terminated string.
    let i = unsafe { libc::if_nametoindex(c.as_ptr()) };
    if i == 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(i as i32)
}

/// A raw `AF_PACKET` socket bound to `ifname` for all EtherTypes.
pub fn packet_socket(ifname: &str) -> io::Result<OwnedFd> {
    let idx = ifindex(ifname)?;
    // SAFETY: plain syscall, result checked.
    let raw = unsafe {
        libc::socket(
            libc::AF_PACKET,
            libc::SOCK_RAW | libc::SOCK_CLOEXEC,
            i32::from(ETH_P_ALL.to_be()),
        )
    };
    if raw < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fresh descriptor owned by nobody else.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    // SAFETY: zeroed sockaddr_ll is valid; fields set below.
    let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    sll.sll_family = libc::AF_PACKET as u16;
    sll.sll_protocol = ETH_P_ALL.to_be();
    sll.sll_ifindex = idx;
    // SAFETY: sll is a valid sockaddr_ll of the given size.
    let rc = unsafe {
        libc::bind(
            fd.as_raw_fd(),
            &sll as *const libc::sockaddr_ll as *const libc::sockaddr,
            std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(fd)
}

/// Wait up to `ms` for `fd` to become readable; whether it did.
pub fn poll_in(fd: &OwnedFd, ms: i32) -> bool {
    let mut pfd = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd.
    unsafe { libc::poll(&mut pfd, 1, ms) > 0 }
}

/// One frame received without blocking from a packet socket with `SO_TIMESTAMPNS` on:
/// its length in `buf`, the kernel's receive time (CLOCK_REALTIME ns; the time of the call if
/// the kernel gave none) and the packet type (`PACKET_OUTGOING` for our own sends). `None`
/// when nothing is queued.
pub fn recv_stamped(fd: &OwnedFd, buf: &mut [u8]) -> Option<(usize, u64, u8)> {
    let mut cbuf = [0u64; 16];
    // SAFETY: zeroed sockaddr_ll / msghdr are valid out-parameters.
    let mut from: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr() as *mut libc::c_void,
        iov_len: buf.len(),
    };
    // SAFETY: see above.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_name = &mut from as *mut libc::sockaddr_ll as *mut libc::c_void;
    msg.msg_namelen = std::mem::size_of::<libc::sockaddr_ll>() as u32;
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = cbuf.as_mut_ptr() as *mut libc::c_void;
    msg.msg_controllen = std::mem::size_of_val(&cbuf);
    // SAFETY: msg points to valid buffers that outlive the call.
    let n = unsafe { libc::recvmsg(fd.as_raw_fd(), &mut msg, libc::MSG_DONTWAIT) };
    if n < 0 {
        return None;
    }
    let mut ts = 0u64;
    // SAFETY: walking the control messages the kernel wrote into cbuf.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SO_TIMESTAMPNS {
                let t = std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const libc::timespec);
                ts = t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64;
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    if ts == 0 {
        ts = realtime_ns();
    }
    Some(((n as usize).min(buf.len()), ts, from.sll_pkttype))
}

/// Set an integer socket option; errors are returned.
pub fn setsockopt_int(fd: &OwnedFd, level: i32, name: i32, v: i32) -> io::Result<()> {
    // SAFETY: valid pointer to an int of the given size.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            name,
            &v as *const i32 as *const libc::c_void,
            std::mem::size_of::<i32>() as libc::socklen_t,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The MAC address of `ifname` (SIOCGIFHWADDR on `fd`).
pub fn mac_of(fd: &OwnedFd, ifname: &str) -> io::Result<[u8; 6]> {
    // SAFETY: zeroed ifreq is valid.
    let mut ifr: libc::ifreq = unsafe { std::mem::zeroed() };
    for (d, s) in ifr.ifr_name.iter_mut().take(15).zip(ifname.bytes()) {
        *d = s as libc::c_char;
    }
    // SAFETY: ifr holds a NUL-terminated name of at most 15 bytes.
    let rc = unsafe { libc::ioctl(fd.as_raw_fd(), libc::SIOCGIFHWADDR, &mut ifr) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the ioctl filled ifru_hwaddr.
    let sa = unsafe { ifr.ifr_ifru.ifru_hwaddr };
    let mut mac = [0u8; 6];
    for (m, b) in mac.iter_mut().zip(sa.sa_data.iter()) {
        *m = *b as u8;
    }
    Ok(mac)
}

/// `send(2)` of one frame.
pub fn send(fd: &OwnedFd, frame: &[u8]) -> bool {
    // SAFETY: valid buffer of frame.len() bytes.
    let n = unsafe {
        libc::send(
            fd.as_raw_fd(),
            frame.as_ptr() as *const libc::c_void,
            frame.len(),
            0,
        )
    };
    n >= 0
}

/// User + system CPU time of a process or thread in clock ticks (`/proc/.../stat` fields 14
/// and 15), `path` = `/proc/PID` or `/proc/PID/task/TID`.
pub fn cpu_ticks(path: &str) -> Option<u64> {
    let s = std::fs::read_to_string(format!("{path}/stat")).ok()?;
    // The comm field may hold spaces: fields after the closing parenthesis.
    let rest = s.rsplit_once(')')?.1;
    let f: Vec<&str> = rest.split_whitespace().collect();
    // rest starts at field 3 (state): utime is field 14 -> index 11, stime index 12.
    let u: u64 = f.get(11)?.parse().ok()?;
    let st: u64 = f.get(12)?.parse().ok()?;
    Some(u + st)
}

/// Clock ticks per second (`sysconf(_SC_CLK_TCK)`).
pub fn ticks_per_s() -> u64 {
    // SAFETY: plain libc call.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as u64
    } else {
        100
    }
}

/// Restrict thread or process `tid` (0: the calling thread) to the CPUs `cpus`.
pub fn set_affinity(tid: u32, cpus: &[usize]) -> std::io::Result<()> {
    // SAFETY: cpu_set_t is plain data; CPU_ZERO/CPU_SET write inside it.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &c in cpus {
        // SAFETY: as above; CPU_SET ignores CPUs beyond the set's size.
        unsafe { libc::CPU_SET(c, &mut set) };
    }
    // SAFETY: valid set of the size passed.
    let rc = unsafe {
        libc::sched_setaffinity(
            tid as libc::pid_t,
            std::mem::size_of::<libc::cpu_set_t>(),
            &set,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// The CPUs thread `tid` may run on.
pub fn get_affinity(tid: u32) -> std::io::Result<Vec<usize>> {
    // SAFETY: cpu_set_t is plain data, filled by the kernel.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: valid set of the size passed.
    let rc = unsafe {
        libc::sched_getaffinity(
            tid as libc::pid_t,
            std::mem::size_of::<libc::cpu_set_t>(),
            &mut set,
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: reads inside the set.
    Ok((0..libc::CPU_SETSIZE as usize)
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect())
}

/// Every other thread of the machine kept off one CPU for a measurement, a run-time
/// `isolcpus`: the housekeeping of the machine (on this VM its init agent, whose worker
/// thread holds a CPU for 1-2 ms about once a second, irrupting even SCHED_FIFO threads,
/// `docs/benchmarks.md`) then runs on the other CPUs. Restored when dropped.
pub struct Isolation {
    moved: Vec<(u32, Vec<usize>)>,
}

impl Isolation {
    /// Moves every thread allowed on `cpu` and on some other CPU, except the threads of the
    /// processes `keep`, to its other CPUs. Per-CPU kernel threads (allowed one CPU, or
    /// refusing the change) stay where they are.
    pub fn start(cpu: usize, keep: &[u32]) -> Isolation {
        let mut moved = Vec::new();
        let numeric = |e: std::fs::DirEntry| e.file_name().to_str()?.parse::<u32>().ok();
        let pids: Vec<u32> = std::fs::read_dir("/proc")
            .map(|d| d.flatten().filter_map(numeric).collect())
            .unwrap_or_default();
        for pid in pids.into_iter().filter(|p| !keep.contains(p)) {
            let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
                continue;
            };
            for tid in tasks.flatten().filter_map(numeric) {
                let Ok(cpus) = get_affinity(tid) else {
                    continue;
                };
                let rest: Vec<usize> = cpus.iter().copied().filter(|&c| c != cpu).collect();
                if cpus.contains(&cpu) && !rest.is_empty() && set_affinity(tid, &rest).is_ok() {
                    moved.push((tid, cpus));
                }
            }
        }
        Isolation { moved }
    }

    /// How many threads were moved.
    pub fn moved(&self) -> usize {
        self.moved.len()
    }
}

impl Drop for Isolation {
    fn drop(&mut self) {
        for (tid, cpus) in &self.moved {
            // A thread that ended meanwhile has nothing to restore.
            let _ = set_affinity(*tid, cpus);
        }
    }
}

/// Every CPU's idle kept to polling for a measurement: `pm_qos_resume_latency_us` "n/a", the
/// per-CPU form of a zero CPU-latency request (what cyclictest asks through
/// `/dev/cpu_dma_latency`), so that the idle governor never halts a CPU. A halted vCPU is woken
/// by its host, tens of microseconds late at times, later than a cyclic thread's spin margin
/// (`docs/benchmarks.md`, session 15). Each CPU's earlier value is restored when dropped.
pub struct CpuPoll {
    saved: Vec<(std::path::PathBuf, String)>,
}

impl CpuPoll {
    /// Applies to every CPU of the machine that has the attribute; an error names the first
    /// one that refused (nothing is left changed then).
    pub fn start() -> Result<CpuPoll, String> {
        let mut poll = CpuPoll { saved: Vec::new() };
        let mut cpus: Vec<std::path::PathBuf> = std::fs::read_dir("/sys/devices/system/cpu")
            .map_err(|e| format!("/sys/devices/system/cpu: {e}"))?
            .flatten()
            .filter(|e| {
                let n = e.file_name();
                let n = n.to_string_lossy();
                n.strip_prefix("cpu")
                    .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
            })
            .map(|e| e.path().join("power/pm_qos_resume_latency_us"))
            .collect();
        cpus.sort();
        for p in cpus {
            let Ok(old) = std::fs::read_to_string(&p) else {
                continue;
            };
            std::fs::write(&p, "n/a").map_err(|e| format!("{}: {e}", p.display()))?;
            poll.saved.push((p, old.trim().to_string()));
        }
        if poll.saved.is_empty() {
            return Err("no CPU offers pm_qos_resume_latency_us".into());
        }
        Ok(poll)
    }

    /// How many CPUs poll.
    pub fn cpus(&self) -> usize {
        self.saved.len()
    }
}

impl Drop for CpuPoll {
    fn drop(&mut self) {
        for (p, old) in &self.saved {
            // The value read back is what the attribute takes: "0" (no constraint), "n/a" or
            // a number of microseconds.
            let _ = std::fs::write(p, old);
        }
    }
}

/// Restrict every thread of process `pid` to the CPUs `cpus` (threads started later inherit
/// the mask of the thread that starts them, not this one's).
pub fn pin_process(pid: u32, cpus: &[usize]) -> Result<(), String> {
    let dir = std::fs::read_dir(format!("/proc/{pid}/task")).map_err(|e| format!("{pid}: {e}"))?;
    for e in dir.flatten() {
        let tid: u32 = e.file_name().to_string_lossy().parse().unwrap_or(0);
        if tid != 0 {
            set_affinity(tid, cpus).map_err(|e| format!("pin {pid}/{tid} to {cpus:?}: {e}"))?;
        }
    }
    Ok(())
}

/// Names of the standby sender threads: pn-device's (`Cyclic:StandbyCpu`) and pn-farm's
/// (`--standby-cpu`).
const STANDBY_THREADS: [&str; 2] = ["pn-standby", "farm-standby"];

/// Pin the device process `pid`: its standby sender thread (if it runs one) to `standby_cpus`,
/// every other thread to `cpus`.
pub fn pin_device(pid: u32, cpus: &[usize], standby_cpus: &[usize]) -> Result<(), String> {
    pin_process(pid, cpus)?;
    for name in STANDBY_THREADS {
        let Some(p) = thread_path(pid, name) else {
            continue;
        };
        let tid: u32 = p
            .rsplit('/')
            .next()
            .and_then(|t| t.parse().ok())
            .unwrap_or(0);
        if tid != 0 {
            set_affinity(tid, standby_cpus)
                .map_err(|e| format!("pin {pid}/{tid} ({name}) to {standby_cpus:?}: {e}"))?;
        }
    }
    Ok(())
}

/// Receive packet steering: frames received on `ifname` (in `ns`) are processed on `cpus`
/// (written through `ip netns exec`, which mounts the namespace's own sysfs).
pub fn set_rps(ns: &pn_testkit::netns::NetNs, ifname: &str, cpus: &[usize]) -> Result<(), String> {
    let mask: u64 = cpus.iter().filter(|&&c| c < 64).fold(0, |m, &c| m | 1 << c);
    let path = format!("/sys/class/net/{ifname}/queues/rx-0/rps_cpus");
    ns.exec_ok(&["sh", "-c", &format!("echo {mask:x} > {path}")])
        .map(|_| ())
        .map_err(|e| format!("RPS on {ifname}: {e}"))
}

/// The online CPUs other than `cpu` (the CPUs this process may run on).
pub fn other_cpus(cpu: usize) -> Vec<usize> {
    let n = std::thread::available_parallelism().map_or(1, |n| n.get());
    (0..n).filter(|&c| c != cpu).collect()
}

/// The task directory of the thread named `comm` in process `pid`.
pub fn thread_path(pid: u32, comm: &str) -> Option<String> {
    let dir = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    for e in dir.flatten() {
        let p = e.path();
        if std::fs::read_to_string(p.join("comm")).is_ok_and(|c| c.trim() == comm) {
            return Some(p.display().to_string());
        }
    }
    None
}

/// Pin every thread of this process whose name starts with `prefix` to `cpus`; how many.
pub fn pin_own_threads(prefix: &str, cpus: &[usize]) -> Result<usize, String> {
    let dir = std::fs::read_dir("/proc/self/task").map_err(|e| format!("/proc/self/task: {e}"))?;
    let mut n = 0;
    for e in dir.flatten() {
        let named = std::fs::read_to_string(e.path().join("comm"))
            .is_ok_and(|c| c.trim().starts_with(prefix));
        let tid: u32 = e.file_name().to_string_lossy().parse().unwrap_or(0);
        if named && tid != 0 {
            set_affinity(tid, cpus).map_err(|e| format!("pin thread {tid} to {cpus:?}: {e}"))?;
            n += 1;
        }
    }
    Ok(n)
}

/// `VmRSS` of a process in kB.
pub fn vm_rss_kb(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    s.lines()
        .find(|l| l.starts_with("VmRSS:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// The machine: nproc, CPU model, kernel.
pub fn machine() -> String {
    let nproc = std::thread::available_parallelism().map_or(0, |n| n.get());
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "?".into());
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_default();
    let load = std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default();
    format!("nproc {nproc}, CPU {model}, kernel {kernel}, loadavg {load}")
}

/// The 1-minute load average.
pub fn loadavg1() -> f64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0.0)
}

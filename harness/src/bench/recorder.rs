//! The wire-side recorder of the benchmarks: a raw `AF_PACKET` socket on the controller's end
//! of the veth (inside the controller namespace) with `SO_TIMESTAMPNS`, recording the kernel
//! receive timestamp of every frame: the device's cyclic frames (incoming), the controller's
//! own cyclic frames (outgoing, seen by the tap at transmit), the bare sender's frames and the
//! PNIO-CM requests (UDP 34964). Timestamps are CLOCK_REALTIME nanoseconds, taken by the
//! kernel, so the recorder's own scheduling does not shift them; frames the socket had to drop
//! (receive buffer full) are counted from `PACKET_STATISTICS` and reported.

use super::pnet::PNET_MAC;
use super::raw;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// `PACKET_STATISTICS` (linux/if_packet.h).
const PACKET_STATISTICS: i32 = 6;
/// `PACKET_OUTGOING`.
const PACKET_OUTGOING: u8 = 4;
/// PNIO-CM UDP port.
const PNIO_CM_PORT: u16 = 34964;

/// What a recorded frame is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A cyclic RT frame received from a device (`src` = index of its MAC).
    DevCyclic,
    /// A cyclic RT frame sent by the controller.
    CtlCyclic,
    /// A frame of a bare sender (`src` 0: one on the devices' side, received; 1: one on
    /// this host's bridge, seen at transmit; [`BARE_BESIDE_PNET`]: one in p-net's
    /// namespace, by its source MAC).
    Bare,
    /// A DCE/RPC request sent by the controller (opnum).
    RpcOut(u16),
    /// Anything else.
    Other,
}

/// `src` of a [`Kind::Bare`] frame sent from p-net's interface (source MAC [`PNET_MAC`]).
pub const BARE_BESIDE_PNET: u16 = 2;

/// One recorded frame.
#[derive(Debug, Clone, Copy)]
pub struct Rec {
    /// Kernel receive timestamp, CLOCK_REALTIME ns.
    pub ts: u64,
    pub kind: Kind,
    /// Index in [`Recorder::macs`] of the device's MAC: the source of a [`Kind::DevCyclic`]
    /// frame, the destination of a [`Kind::CtlCyclic`] frame (0 for the other kinds).
    pub src: u16,
    /// For [`Kind::DevCyclic`]: 4 bytes at the probe offset (big-endian), else 0.
    pub data: u32,
}

struct Shared {
    recs: Mutex<Vec<Rec>>,
    macs: Mutex<Vec<[u8; 6]>>,
    probe_off: AtomicUsize,
    stop: AtomicBool,
    drops: std::sync::atomic::AtomicU64,
}

/// A running recorder.
pub struct Recorder {
    sh: Arc<Shared>,
    handle: Option<JoinHandle<()>>,
}

fn be16(b: &[u8], at: usize) -> Option<u16> {
    b.get(at..at + 2).map(|x| u16::from_be_bytes([x[0], x[1]]))
}

fn classify(frame: &[u8], outgoing: bool, probe: usize) -> (Kind, u32) {
    let Some(mut et) = be16(frame, 12) else {
        return (Kind::Other, 0);
    };
    let mut off = 14;
    if et == 0x8100 {
        et = be16(frame, 16).unwrap_or(0);
        off = 18;
    }
    match et {
        0x8892 => {
            let fid = be16(frame, off).unwrap_or(0);
            if !(0x8000..=0xFBFF).contains(&fid) {
                return (Kind::Other, 0);
            }
            if outgoing {
                return (Kind::CtlCyclic, 0);
            }
            // probe = C_SDU offset + 1 (0 = no probe); the C_SDU follows the FrameID.
            let data = if probe > 0 {
                let at = off + 2 + probe - 1;
                frame
                    .get(at..at + 4)
                    .map_or(0, |x| u32::from_be_bytes([x[0], x[1], x[2], x[3]]))
            } else {
                0
            };
            (Kind::DevCyclic, data)
        }
        raw::BARE_ETHERTYPE => (Kind::Bare, 0),
        0x0800 if outgoing => {
            let ip = &frame[off.min(frame.len())..];
            let Some(&vihl) = ip.first() else {
                return (Kind::Other, 0);
            };
            let ihl = usize::from(vihl & 0x0F) * 4;
            if ip.get(9) != Some(&17) {
                return (Kind::Other, 0);
            }
            let udp = &ip[ihl.min(ip.len())..];
            if be16(udp, 2) != Some(PNIO_CM_PORT) {
                return (Kind::Other, 0);
            }
            let rpc = &udp[8.min(udp.len())..];
            // DCE/RPC CL header: ptype at 1 (0 = request), drep at 4, opnum at 68.
            if rpc.get(1) != Some(&0) {
                return (Kind::Other, 0);
            }
            let little = rpc.get(4).is_some_and(|d| d & 0x10 != 0);
            let op = rpc.get(68..70).map_or(0xFFFF, |x| {
                if little {
                    u16::from_le_bytes([x[0], x[1]])
                } else {
                    u16::from_be_bytes([x[0], x[1]])
                }
            });
            (Kind::RpcOut(op), 0)
        }
        _ => (Kind::Other, 0),
    }
}

fn run(sh: Arc<Shared>, fd: OwnedFd) {
    let mut buf = vec![0u8; 2048];
    let mut local: Vec<Rec> = Vec::with_capacity(4096);
    let mut last_flush = raw::mono_ns();
    loop {
        if sh.stop.load(Ordering::Acquire) {
            break;
        }
        if raw::poll_in(&fd, 20) {
            while let Some((n, ts, pkttype)) = raw::recv_stamped(&fd, &mut buf) {
                let frame = &buf[..n];
                let outgoing = pkttype == PACKET_OUTGOING;
                let (kind, data) = classify(frame, outgoing, sh.probe_off.load(Ordering::Relaxed));
                if kind == Kind::Other {
                    continue;
                }
                // The peer: the source of a device's frame, the destination of ours.
                let peer = match kind {
                    Kind::DevCyclic => frame.get(6..12),
                    Kind::CtlCyclic => frame.get(0..6),
                    _ => None,
                };
                let src = match peer {
                    Some(m) => {
                        let mut mac = [0u8; 6];
                        mac.copy_from_slice(m);
                        let mut macs = sh.macs.lock().unwrap_or_else(|p| p.into_inner());
                        match macs.iter().position(|x| *x == mac) {
                            Some(i) => i as u16,
                            None => {
                                macs.push(mac);
                                (macs.len() - 1) as u16
                            }
                        }
                    }
                    _ if kind == Kind::Bare && frame.get(6..12) == Some(&PNET_MAC[..]) => {
                        BARE_BESIDE_PNET
                    }
                    _ => u16::from(kind == Kind::Bare && outgoing),
                };
                local.push(Rec {
                    ts,
                    kind,
                    src,
                    data,
                });
            }
        }
        let now = raw::mono_ns();
        if !local.is_empty() && (local.len() > 2048 || now - last_flush > 10_000_000) {
            sh.recs
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .append(&mut local);
            last_flush = now;
        }
        // Drops since the last read (the kernel resets the counters on read).
        let mut st = [0u32; 2];
        let mut len = std::mem::size_of_val(&st) as libc::socklen_t;
        // SAFETY: st is a valid tpacket_stats-sized buffer.
        let rc = unsafe {
            libc::getsockopt(
                fd.as_raw_fd(),
                libc::SOL_PACKET,
                PACKET_STATISTICS,
                st.as_mut_ptr() as *mut libc::c_void,
                &mut len,
            )
        };
        if rc == 0 && st[1] > 0 {
            sh.drops.fetch_add(u64::from(st[1]), Ordering::Relaxed);
        }
    }
    sh.recs
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .append(&mut local);
}

impl Recorder {
    /// Start recording on `ifname` inside the namespace at `ns_path`.
    pub fn start(ns_path: std::path::PathBuf, ifname: &str) -> Result<Recorder, String> {
        let sh = Arc::new(Shared {
            recs: Mutex::new(Vec::with_capacity(1 << 20)),
            macs: Mutex::new(Vec::new()),
            probe_off: AtomicUsize::new(0),
            stop: AtomicBool::new(false),
            drops: Default::default(),
        });
        let (tx, rx) = std::sync::mpsc::channel();
        let ifname = ifname.to_string();
        let sh2 = sh.clone();
        let handle = std::thread::Builder::new()
            .name("bench-rec".into())
            .spawn(move || {
                let setup = (|| -> Result<OwnedFd, String> {
                    pn_testkit::netns::join_netns(&ns_path)?;
                    let fd = raw::packet_socket(&ifname).map_err(|e| format!("recorder: {e}"))?;
                    raw::setsockopt_int(&fd, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, 1)
                        .map_err(|e| format!("SO_TIMESTAMPNS: {e}"))?;
                    // 32 MB receive buffer (FORCE as root), else the plain limit.
                    if raw::setsockopt_int(&fd, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, 32 << 20)
                        .is_err()
                    {
                        let _ =
                            raw::setsockopt_int(&fd, libc::SOL_SOCKET, libc::SO_RCVBUF, 32 << 20);
                    }
                    Ok(fd)
                })();
                match setup {
                    Ok(fd) => {
                        // Below every real-time thread of the device and the controller; only so
                        // that the receive queue is drained under CPU load (timestamps are the
                        // kernel's, not ours).
                        raw::set_fifo(5);
                        let _ = tx.send(Ok(()));
                        run(sh2, fd);
                    }
                    Err(e) => {
                        let _ = tx.send(Err(e));
                    }
                }
            })
            .map_err(|e| e.to_string())?;
        rx.recv()
            .map_err(|_| "recorder thread died".to_string())??;
        Ok(Recorder {
            sh,
            handle: Some(handle),
        })
    }

    /// Data probe: 4 bytes at this C_SDU offset of each device cyclic frame are recorded.
    pub fn set_probe(&self, c_sdu_offset: usize) {
        self.sh.probe_off.store(c_sdu_offset + 1, Ordering::Relaxed);
    }

    /// Take everything recorded so far (waits 30 ms so the thread flushes).
    pub fn take(&self) -> Vec<Rec> {
        std::thread::sleep(std::time::Duration::from_millis(30));
        std::mem::take(&mut *self.sh.recs.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// Drop everything recorded so far.
    pub fn clear(&self) {
        let _ = self.take();
    }

    /// Frames the kernel dropped on the recorder socket since start.
    pub fn drops(&self) -> u64 {
        self.sh.drops.load(Ordering::Relaxed)
    }

    /// MACs of the devices (sources of their frames, destinations of ours), by index.
    pub fn macs(&self) -> Vec<[u8; 6]> {
        self.sh
            .macs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        self.sh.stop.store(true, Ordering::Release);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_frames() {
        let mut f = vec![0u8; 60];
        f[12..14].copy_from_slice(&0x8892u16.to_be_bytes());
        f[14..16].copy_from_slice(&0xC001u16.to_be_bytes());
        f[20..24].copy_from_slice(&[1, 2, 3, 4]);
        // C_SDU offset 4 (+1): frame offset 14 + 2 + 4 = 20.
        assert_eq!(classify(&f, false, 5), (Kind::DevCyclic, 0x01020304));
        assert_eq!(classify(&f, true, 5), (Kind::CtlCyclic, 0));
        // The same behind a VLAN tag.
        let mut v = f[..12].to_vec();
        v.extend_from_slice(&[0x81, 0x00, 0xC0, 0x00]);
        v.extend_from_slice(&f[12..]);
        assert_eq!(classify(&v, false, 5), (Kind::DevCyclic, 0x01020304));
        f[14..16].copy_from_slice(&0xFEFEu16.to_be_bytes());
        assert_eq!(classify(&f, false, 0).0, Kind::Other);
        f[12..14].copy_from_slice(&raw::BARE_ETHERTYPE.to_be_bytes());
        assert_eq!(classify(&f, false, 0).0, Kind::Bare);
        assert_eq!(classify(&f[..5], false, 0).0, Kind::Other);
        // IPv4/UDP to 34964 carrying a little-endian DCE/RPC request with opnum 0 (Connect).
        let mut u = vec![0u8; 14 + 20 + 8 + 80];
        u[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
        u[14] = 0x45;
        u[14 + 9] = 17;
        u[34 + 2..34 + 4].copy_from_slice(&PNIO_CM_PORT.to_be_bytes());
        let rpc = 42;
        u[rpc] = 4;
        u[rpc + 4] = 0x10;
        u[rpc + 68] = 3;
        assert_eq!(classify(&u, true, 0).0, Kind::RpcOut(3));
        assert_eq!(classify(&u, false, 0).0, Kind::Other);
    }
}

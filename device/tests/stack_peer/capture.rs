//! An in-process capture of the peer's NIC and its tshark check.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use super::PeerNs;

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

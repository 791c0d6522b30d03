//! The LLMNR responder's I/O shell: a thread on UDP port 5355 joined to 224.0.0.252 that
//! hands each query to the protocol crate's responder ([`pn_protocol::machine::llmnr_responder`]:
//! RFC 4795, A queries for the station name; spec 1.2: "LLMNR ... minimal") and sends the
//! answer by unicast to the querier (RFC 4795 §2.6).

use std::io;
use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use pn_protocol::machine::llmnr_responder::{handle, LlmnrIdentity};
use pn_protocol::wire::llmnr::{self, GROUP};

use super::snmp::{wake_receiver, STOP_FALLBACK};

/// LLMNR port.
pub const PORT: u16 = llmnr::PORT;

/// A running responder thread.
pub struct LlmnrServer {
    stop: Arc<AtomicBool>,
    /// A handle of the served socket, to wake the thread on stop.
    waker: UdpSocket,
    handle: Option<JoinHandle<()>>,
    local: SocketAddr,
}

fn join_group(sock: &UdpSocket, ifindex: u32) -> io::Result<()> {
    let mreq = libc::ip_mreqn {
        imr_multiaddr: libc::in_addr {
            s_addr: u32::from_ne_bytes(GROUP.octets()),
        },
        imr_address: libc::in_addr { s_addr: 0 },
        imr_ifindex: ifindex as libc::c_int,
    };
    // SAFETY: valid ip_mreqn pointer and size.
    let rc = unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::IPPROTO_IP,
            libc::IP_ADD_MEMBERSHIP,
            &mreq as *const libc::ip_mreqn as *const libc::c_void,
            std::mem::size_of::<libc::ip_mreqn>() as libc::socklen_t,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

impl LlmnrServer {
    /// Bind UDP `port` (normally [`PORT`]) on all addresses, join [`GROUP`] on interface
    /// `ifindex`, and serve. `id` is read for every query.
    pub fn spawn(port: u16, ifindex: u32, id: Arc<Mutex<LlmnrIdentity>>) -> io::Result<Self> {
        let sock = UdpSocket::bind(SocketAddr::from((Ipv4Addr::UNSPECIFIED, port)))?;
        join_group(&sock, ifindex)?;
        sock.set_read_timeout(Some(STOP_FALLBACK))?;
        let local = sock.local_addr()?;
        let waker = sock.try_clone()?;
        let stop = Arc::new(AtomicBool::new(false));
        let stop2 = stop.clone();
        let handle = std::thread::Builder::new()
            .name("pn-llmnr".into())
            .spawn(move || {
                let mut buf = [0u8; 1500];
                while !stop2.load(Ordering::Acquire) {
                    let Ok((n, from)) = sock.recv_from(&mut buf) else {
                        continue;
                    };
                    let ident = id.lock().map(|i| i.clone()).unwrap_or_default();
                    if let Some(resp) = handle(&buf[..n], &ident) {
                        let _ = sock.send_to(&resp, from);
                    }
                }
            })?;
        Ok(LlmnrServer {
            stop,
            waker,
            handle: Some(handle),
            local,
        })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    pub fn stop(&mut self) {
        self.stop.store(true, Ordering::Release);
        wake_receiver(&self.waker);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

impl Drop for LlmnrServer {
    fn drop(&mut self) {
        self.stop();
    }
}

//! Minimal LLMNR responder (RFC 4795): UDP port 5355, IPv4 multicast group 224.0.0.252,
//! answers A (and ANY) queries for the station name with the device's IPv4 address
//! (spec 1.2: "LLMNR ... minimal").
//!
//! * The name compares case-insensitively (RFC 4795 §2.5, ASCII); a query for another name is
//!   not answered (§2.1: only authoritative answers).
//! * For our name and another type (AAAA, MX, ...), the answer is NOERROR with no answer
//!   records, so the querier does not wait for a timeout (§2.1.1).
//! * The response goes by unicast UDP to the querier's address and port (§2.6), TTL 30 s
//!   (§2.8 default). Nothing is answered while the device has no IP address.
//! * Malformed queries, responses (QR=1), opcodes other than 0, QDCOUNT != 1 and compressed
//!   question names are dropped silently (§2.1.1).

use std::io;
use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use super::snmp::{wake_receiver, STOP_FALLBACK};

/// LLMNR port.
pub const PORT: u16 = 5355;
/// LLMNR IPv4 multicast group.
pub const GROUP: Ipv4Addr = Ipv4Addr::new(224, 0, 0, 252);
/// TTL of our answers, seconds.
pub const ANSWER_TTL: u32 = 30;

const TYPE_A: u16 = 1;
const TYPE_ANY: u16 = 255;
const CLASS_IN: u16 = 1;

/// Who we are (read for every query).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LlmnrIdentity {
    /// Station name (single or multi-label; "" = answer nothing).
    pub name: String,
    pub ip: Ipv4Addr,
}

impl Default for LlmnrIdentity {
    fn default() -> Self {
        LlmnrIdentity {
            name: String::new(),
            ip: Ipv4Addr::UNSPECIFIED,
        }
    }
}

/// Parse the question name (uncompressed labels) starting at `at`; returns the dotted name
/// and the offset after it.
fn read_name(msg: &[u8], mut at: usize) -> Option<(String, usize)> {
    let mut labels: Vec<String> = Vec::new();
    let mut total = 0usize;
    loop {
        let len = usize::from(*msg.get(at)?);
        at += 1;
        if len == 0 {
            break;
        }
        if len > 63 {
            return None; // compression pointers or reserved label types
        }
        let l = msg.get(at..at + len)?;
        total += len + 1;
        if total > 255 {
            return None;
        }
        labels.push(String::from_utf8_lossy(l).into_owned());
        at += len;
    }
    Some((labels.join("."), at))
}

/// Answer one query datagram; `None` = no answer.
pub fn handle(query: &[u8], id: &LlmnrIdentity) -> Option<Vec<u8>> {
    if id.name.is_empty() || id.ip.is_unspecified() {
        return None;
    }
    let h = query.get(..12)?;
    let flags = u16::from_be_bytes([h[2], h[3]]);
    let qd = u16::from_be_bytes([h[4], h[5]]);
    let an = u16::from_be_bytes([h[6], h[7]]);
    let ns = u16::from_be_bytes([h[8], h[9]]);
    // QR must be 0, opcode 0; one question, no answers/authority (RFC 4795 §2.1.1).
    if flags & 0x8000 != 0 || (flags >> 11) & 0xf != 0 || qd != 1 || an != 0 || ns != 0 {
        return None;
    }
    let (name, end) = read_name(query, 12)?;
    let tc = query.get(end..end + 4)?;
    let qtype = u16::from_be_bytes([tc[0], tc[1]]);
    let qclass = u16::from_be_bytes([tc[2], tc[3]]);
    if !name.eq_ignore_ascii_case(&id.name) || (qclass != CLASS_IN && qclass != TYPE_ANY) {
        return None;
    }
    let question = &query[12..end + 4];
    let answer = qtype == TYPE_A || qtype == TYPE_ANY;
    let mut r = Vec::with_capacity(12 + question.len() + 16);
    r.extend_from_slice(&h[0..2]); // ID
    r.extend_from_slice(&0x8000u16.to_be_bytes()); // QR=1, opcode 0, C=0, TC=0, T=0, RCODE 0
    r.extend_from_slice(&1u16.to_be_bytes());
    r.extend_from_slice(&u16::from(answer).to_be_bytes());
    r.extend_from_slice(&[0, 0, 0, 0]);
    r.extend_from_slice(question);
    if answer {
        r.extend_from_slice(&[0xc0, 0x0c]); // pointer to the question name
        r.extend_from_slice(&TYPE_A.to_be_bytes());
        r.extend_from_slice(&CLASS_IN.to_be_bytes());
        r.extend_from_slice(&ANSWER_TTL.to_be_bytes());
        r.extend_from_slice(&4u16.to_be_bytes());
        r.extend_from_slice(&id.ip.octets());
    }
    Some(r)
}

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

#[cfg(test)]
mod tests {
    use super::*;

    fn query(name: &str, qtype: u16) -> Vec<u8> {
        let mut q = vec![0x12, 0x34, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0];
        for l in name.split('.') {
            q.push(l.len() as u8);
            q.extend_from_slice(l.as_bytes());
        }
        q.push(0);
        q.extend_from_slice(&qtype.to_be_bytes());
        q.extend_from_slice(&1u16.to_be_bytes());
        q
    }

    fn id() -> LlmnrIdentity {
        LlmnrIdentity {
            name: "dev-1".into(),
            ip: Ipv4Addr::new(10, 0, 0, 2),
        }
    }

    #[test]
    fn answers_a_for_our_name_only() {
        let r = handle(&query("DEV-1", TYPE_A), &id()).unwrap();
        assert_eq!(&r[0..2], &[0x12, 0x34]);
        assert_eq!(u16::from_be_bytes([r[2], r[3]]), 0x8000);
        assert_eq!(u16::from_be_bytes([r[6], r[7]]), 1);
        assert_eq!(&r[r.len() - 4..], &[10, 0, 0, 2]);
        // AAAA for our name: empty answer.
        let r = handle(&query("dev-1", 28), &id()).unwrap();
        assert_eq!(u16::from_be_bytes([r[6], r[7]]), 0);
        assert!(handle(&query("other", TYPE_A), &id()).is_none());
        let mut no_ip = id();
        no_ip.ip = Ipv4Addr::UNSPECIFIED;
        assert!(handle(&query("dev-1", TYPE_A), &no_ip).is_none());
        // A response (QR=1) is not answered.
        let mut q = query("dev-1", TYPE_A);
        q[2] = 0x80;
        assert!(handle(&q, &id()).is_none());
    }

    #[test]
    fn garbage_never_panics() {
        let q = query("dev-1", TYPE_A);
        for cut in 0..q.len() {
            assert!(handle(&q[..cut], &id()).is_none());
        }
        let mut x = q.clone();
        for i in 0..x.len() {
            for v in [0, 0x3f, 0x40, 0xc0, 0xff] {
                let o = x[i];
                x[i] = v;
                let _ = handle(&x, &id());
                x[i] = o;
            }
        }
    }
}

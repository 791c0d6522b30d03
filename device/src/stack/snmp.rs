//! The SNMP agent's I/O shell: a thread on a UDP socket (normally 0.0.0.0:161) that hands
//! each datagram to the protocol crate's agent ([`pn_protocol::machine::snmp_agent`]: MIB-II
//! system group, SNMPv1/v2c, read-only, community "public"; spec 1.2: "SNMP ... minimal") and
//! sends its answer back to the sender.

use std::io;
use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use pn_protocol::machine::snmp_agent::{SnmpAgent, SystemInfo};

/// Receive timeout of the UDP service threads (SNMP, LLMNR): they block on their socket and
/// are woken for a stop by [`wake_receiver`]; the timeout is only a fallback should that wake
/// ever not arrive, not a poll interval.
pub(crate) const STOP_FALLBACK: Duration = Duration::from_secs(5);

/// Wake a thread blocked in `recv_from` on `sock` (shutdown of the receive side: on Linux a
/// blocked receive on a UDP socket, connected or not, returns at once and every later one
/// returns immediately too, so the thread sees its stop flag).
pub(crate) fn wake_receiver(sock: &UdpSocket) {
    // SAFETY: plain syscall on a descriptor we own; errors (ENOTCONN) are expected and
    // harmless, the wake-up happens anyway.
    unsafe { libc::shutdown(sock.as_raw_fd(), libc::SHUT_RD) };
}

/// A running agent thread on a UDP socket.
pub struct SnmpServer {
    stop: Arc<AtomicBool>,
    /// A handle of the served socket, to wake the thread on stop.
    waker: UdpSocket,
    handle: Option<JoinHandle<()>>,
    local: SocketAddr,
}

impl SnmpServer {
    /// Bind `addr` (normally 0.0.0.0:161; needs CAP_NET_BIND_SERVICE) and serve. `info` is
    /// read for every request, so station-name changes show at once.
    pub fn spawn(addr: SocketAddr, info: Arc<Mutex<SystemInfo>>) -> io::Result<SnmpServer> {
        let sock = UdpSocket::bind(addr)?;
        sock.set_read_timeout(Some(STOP_FALLBACK))?;
        let local = sock.local_addr()?;
        let waker = sock.try_clone()?;
        let stop = Arc::new(AtomicBool::new(false));
        let stop2 = stop.clone();
        let started = std::time::Instant::now();
        let handle = std::thread::Builder::new()
            .name("pn-snmp".into())
            .spawn(move || {
                let mut buf = vec![0u8; 2048];
                while !stop2.load(Ordering::Acquire) {
                    let Ok((n, from)) = sock.recv_from(&mut buf) else {
                        continue;
                    };
                    let agent = SnmpAgent::new(info.lock().map(|i| i.clone()).unwrap_or_default());
                    let up = (started.elapsed().as_millis() / 10) as u32;
                    if let Some(resp) = agent.handle(&buf[..n], up) {
                        let _ = sock.send_to(&resp, from);
                    }
                }
            })?;
        Ok(SnmpServer {
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

impl Drop for SnmpServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Default bind address of the agent.
pub fn default_addr() -> SocketAddr {
    SocketAddr::from((Ipv4Addr::UNSPECIFIED, 161))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pn_protocol::wire::snmp::{pdu, Pdu, SnmpMessage, Value, VarBind};
    use pn_protocol::wire::Emit;

    const NAME: &[u32] = &[1, 3, 6, 1, 2, 1, 1, 5, 0];

    #[test]
    fn server_answers_then_stops_promptly() {
        let info = Arc::new(Mutex::new(SystemInfo {
            name: "dev-1".into(),
            ..SystemInfo::default()
        }));
        let mut srv = SnmpServer::spawn("127.0.0.1:0".parse().unwrap(), info).unwrap();
        let addr = srv.local_addr();
        let c = UdpSocket::bind("127.0.0.1:0").unwrap();
        c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let req = SnmpMessage {
            version: 1,
            community: b"public".to_vec(),
            pdu: Pdu {
                tag: pdu::GET,
                request_id: 7,
                error_status: 0,
                error_index: 0,
                bindings: vec![VarBind {
                    name: NAME.to_vec(),
                    value: Value::Null,
                }],
            },
        };
        c.send_to(&req.to_bytes().unwrap(), addr).unwrap();
        let mut buf = [0u8; 1500];
        let (n, _) = c.recv_from(&mut buf).unwrap();
        let resp = SnmpMessage::parse(&buf[..n]).unwrap();
        assert_eq!(
            resp.pdu.bindings[0].value,
            Value::OctetString(b"dev-1".to_vec())
        );
        // The thread blocks in recv_from without a poll timeout; stop wakes and joins it, and
        // the port is free again once the server is gone.
        srv.stop();
        drop(srv);
        UdpSocket::bind(addr).expect("port released after stop");
    }
}

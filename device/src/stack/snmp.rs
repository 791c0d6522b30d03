//! Minimal SNMP agent: the read-only MIB-II system group over UDP 161, SNMPv1 and v2c,
//! community "public" (spec 1.2: "SNMP ... minimal").
//!
//! Supported: GetRequest, GetNextRequest, GetBulkRequest (v2c); SetRequest is answered with
//! `readOnly` (v1) / `notWritable` (v2c); a wrong community or version, or anything that is not
//! a well-formed message, is dropped without an answer (RFC 3584 / common agent behaviour).
//! Objects (RFC 3418, 1.3.6.1.2.1.1.x.0): sysDescr (the PROFINET system description, also the
//! LLDP Chassis ID), sysObjectID, sysUpTime (centiseconds since the agent started), sysContact,
//! sysName (the station name), sysLocation (I&M1 tag location when set), sysServices (78, as
//! p-net documents for PROFINET devices).
//!
//! # Why an own BER codec
//! The subset needed (INTEGER, OCTET STRING, NULL, OBJECT IDENTIFIER, SEQUENCE, TimeTicks and
//! the PDU tags) is about 200 lines; the SNMP crates on crates.io are either manager (client)
//! side only or full agent frameworks with their own socket loop. This codec never panics,
//! bounds every length by the datagram, and limits nesting (see the tests).

use std::io;
use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

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

/// The community accepted for reading.
pub const COMMUNITY: &[u8] = b"public";
/// sysObjectID: the enterprise arc of the PROFIBUS Nutzerorganisation (PNO).
pub const SYS_OBJECT_ID: &[u32] = &[1, 3, 6, 1, 4, 1, 24686];
/// sysServices: 78 = datalink (2) + internet (4) + end-to-end (8) + applications (64), the
/// value p-net's documentation gives for PROFINET devices (doc/network_topology_detection.rst).
pub const SYS_SERVICES: i64 = 78;
/// Largest request handled (bigger datagrams are dropped).
pub const MAX_MESSAGE: usize = 1472;

// ---------------------------------------------------------------------------------------
// BER
// ---------------------------------------------------------------------------------------

mod tag {
    pub const INTEGER: u8 = 0x02;
    pub const OCTET_STRING: u8 = 0x04;
    pub const NULL: u8 = 0x05;
    pub const OID: u8 = 0x06;
    pub const SEQUENCE: u8 = 0x30;
    pub const TIMETICKS: u8 = 0x43;
    pub const GET: u8 = 0xA0;
    pub const GET_NEXT: u8 = 0xA1;
    pub const RESPONSE: u8 = 0xA2;
    pub const SET: u8 = 0xA3;
    pub const GET_BULK: u8 = 0xA5;
    pub const NO_SUCH_OBJECT: u8 = 0x80;
    pub const NO_SUCH_INSTANCE: u8 = 0x81;
    pub const END_OF_MIB_VIEW: u8 = 0x82;
}

/// Error status values.
mod status {
    pub const NO_ERROR: i64 = 0;
    pub const TOO_BIG: i64 = 1;
    pub const NO_SUCH_NAME: i64 = 2;
    pub const READ_ONLY: i64 = 4;
    pub const NOT_WRITABLE: i64 = 17;
}

/// One decoded TLV: tag and content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tlv<'a> {
    pub tag: u8,
    pub content: &'a [u8],
}

/// Read one TLV from the front of `b`; returns it and the rest. Definite lengths only
/// (short form, or long form with up to 2 length octets).
pub fn read_tlv(b: &[u8]) -> Option<(Tlv<'_>, &[u8])> {
    let (&t, rest) = b.split_first()?;
    if t & 0x1f == 0x1f {
        return None; // multi-byte tags are not used by SNMP
    }
    let (&l0, rest) = rest.split_first()?;
    let (len, rest) = if l0 < 0x80 {
        (usize::from(l0), rest)
    } else {
        let n = usize::from(l0 & 0x7f);
        if n == 0 || n > 2 || rest.len() < n {
            return None;
        }
        let len = rest[..n]
            .iter()
            .fold(0usize, |a, &x| (a << 8) | usize::from(x));
        (len, &rest[n..])
    };
    if rest.len() < len {
        return None;
    }
    Some((
        Tlv {
            tag: t,
            content: &rest[..len],
        },
        &rest[len..],
    ))
}

fn read_int(c: &[u8]) -> Option<i64> {
    if c.is_empty() || c.len() > 8 {
        return None;
    }
    let mut v: i64 = if c[0] & 0x80 != 0 { -1 } else { 0 };
    for &x in c {
        v = (v << 8) | i64::from(x);
    }
    Some(v)
}

/// Decode an OBJECT IDENTIFIER (arcs up to 2^32-1, at most 128 arcs).
pub fn read_oid(c: &[u8]) -> Option<Vec<u32>> {
    if c.is_empty() || c.len() > 256 {
        return None;
    }
    let mut arcs = Vec::new();
    let mut v: u64 = 0;
    let mut first = true;
    for (i, &x) in c.iter().enumerate() {
        v = (v << 7) | u64::from(x & 0x7f);
        if v > u64::from(u32::MAX) + 80 {
            return None;
        }
        if x & 0x80 == 0 {
            if first {
                let (a, b) = if v < 40 {
                    (0, v)
                } else if v < 80 {
                    (1, v - 40)
                } else {
                    (2, v - 80)
                };
                arcs.push(a as u32);
                arcs.push(u32::try_from(b).ok()?);
                first = false;
            } else {
                arcs.push(u32::try_from(v).ok()?);
            }
            v = 0;
        } else if i + 1 == c.len() {
            return None; // unterminated arc
        }
    }
    (arcs.len() <= 128).then_some(arcs)
}

fn push_len(out: &mut Vec<u8>, len: usize) {
    if len < 0x80 {
        out.push(len as u8);
    } else if len < 0x100 {
        out.extend_from_slice(&[0x81, len as u8]);
    } else {
        out.extend_from_slice(&[0x82, (len >> 8) as u8, len as u8]);
    }
}

fn tlv(t: u8, content: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(content.len() + 4);
    v.push(t);
    push_len(&mut v, content.len());
    v.extend_from_slice(content);
    v
}

fn int_content(v: i64) -> Vec<u8> {
    let b = v.to_be_bytes();
    let mut i = 0;
    while i < 7 && ((b[i] == 0 && b[i + 1] & 0x80 == 0) || (b[i] == 0xff && b[i + 1] & 0x80 != 0)) {
        i += 1;
    }
    b[i..].to_vec()
}

fn uint_content(v: u32) -> Vec<u8> {
    let mut c = int_content(i64::from(v));
    if c.is_empty() {
        c.push(0);
    }
    c
}

/// Encode an OBJECT IDENTIFIER (at least two arcs).
pub fn oid_content(arcs: &[u32]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut put = |mut v: u64| {
        let mut tmp = [0u8; 10];
        let mut n = 0;
        loop {
            tmp[n] = (v & 0x7f) as u8;
            n += 1;
            v >>= 7;
            if v == 0 {
                break;
            }
        }
        for i in (0..n).rev() {
            out.push(tmp[i] | if i > 0 { 0x80 } else { 0 });
        }
    };
    let a = u64::from(arcs.first().copied().unwrap_or(0));
    let b = u64::from(arcs.get(1).copied().unwrap_or(0));
    put(a * 40 + b);
    for &x in arcs.iter().skip(2) {
        put(u64::from(x));
    }
    out
}

// ---------------------------------------------------------------------------------------
// The MIB and the agent
// ---------------------------------------------------------------------------------------

/// A value in the MIB.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    Str(Vec<u8>),
    Oid(Vec<u32>),
    Ticks(u32),
    Int(i64),
}

impl Value {
    fn encode(&self) -> Vec<u8> {
        match self {
            Value::Str(s) => tlv(tag::OCTET_STRING, s),
            Value::Oid(o) => tlv(tag::OID, &oid_content(o)),
            Value::Ticks(t) => tlv(tag::TIMETICKS, &uint_content(*t)),
            Value::Int(i) => tlv(tag::INTEGER, &int_content(*i)),
        }
    }
}

/// The system group content (the agent reads it for every request).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SystemInfo {
    pub descr: String,
    pub contact: String,
    pub name: String,
    pub location: String,
}

const SYSTEM: [u32; 7] = [1, 3, 6, 1, 2, 1, 1];

/// The agent (sans-IO): `handle(request, uptime)` -> response datagram or nothing.
#[derive(Debug, Clone)]
pub struct SnmpAgent {
    pub info: SystemInfo,
}

/// What a request asked for.
struct Request<'a> {
    version: i64,
    community: &'a [u8],
    pdu_tag: u8,
    request_id: i64,
    /// error-status / non-repeaters, error-index / max-repetitions
    f1: i64,
    f2: i64,
    names: Vec<Vec<u32>>,
}

fn parse_request(msg: &[u8]) -> Option<Request<'_>> {
    let (seq, rest) = read_tlv(msg)?;
    if seq.tag != tag::SEQUENCE || !rest.is_empty() {
        return None;
    }
    let (v, r) = read_tlv(seq.content)?;
    let (c, r) = read_tlv(r)?;
    let (pdu, _) = read_tlv(r)?;
    if v.tag != tag::INTEGER || c.tag != tag::OCTET_STRING {
        return None;
    }
    let (rid, r) = read_tlv(pdu.content)?;
    let (f1, r) = read_tlv(r)?;
    let (f2, r) = read_tlv(r)?;
    let (vbl, _) = read_tlv(r)?;
    if rid.tag != tag::INTEGER || f1.tag != tag::INTEGER || f2.tag != tag::INTEGER {
        return None;
    }
    if vbl.tag != tag::SEQUENCE {
        return None;
    }
    let mut names = Vec::new();
    let mut r = vbl.content;
    while !r.is_empty() {
        let (vb, rest) = read_tlv(r)?;
        r = rest;
        if vb.tag != tag::SEQUENCE || names.len() >= 64 {
            return None;
        }
        let (name, _) = read_tlv(vb.content)?;
        if name.tag != tag::OID {
            return None;
        }
        names.push(read_oid(name.content)?);
    }
    Some(Request {
        version: read_int(v.content)?,
        community: c.content,
        pdu_tag: pdu.tag,
        request_id: read_int(rid.content)?,
        f1: read_int(f1.content)?,
        f2: read_int(f2.content)?,
        names,
    })
}

impl SnmpAgent {
    pub fn new(info: SystemInfo) -> SnmpAgent {
        SnmpAgent { info }
    }

    /// The MIB in OID order, values as of `uptime_cs` (centiseconds).
    pub fn mib(&self, uptime_cs: u32) -> Vec<(Vec<u32>, Value)> {
        let o = |n: u32| {
            let mut v = SYSTEM.to_vec();
            v.extend_from_slice(&[n, 0]);
            v
        };
        let s = |x: &str| Value::Str(x.as_bytes().to_vec());
        vec![
            (o(1), s(&self.info.descr)),
            (o(2), Value::Oid(SYS_OBJECT_ID.to_vec())),
            (o(3), Value::Ticks(uptime_cs)),
            (o(4), s(&self.info.contact)),
            (o(5), s(&self.info.name)),
            (o(6), s(&self.info.location)),
            (o(7), Value::Int(SYS_SERVICES)),
        ]
    }

    /// Answer one request datagram; `None` = drop (malformed, wrong community/version).
    pub fn handle(&self, msg: &[u8], uptime_cs: u32) -> Option<Vec<u8>> {
        if msg.len() > MAX_MESSAGE {
            return None;
        }
        let req = parse_request(msg)?;
        if !(req.version == 0 || req.version == 1) || req.community != COMMUNITY {
            return None;
        }
        let v2 = req.version == 1;
        let mib = self.mib(uptime_cs);
        let exact = |n: &[u32]| mib.iter().find(|(o, _)| o.as_slice() == n);
        let next = |n: &[u32]| mib.iter().find(|(o, _)| o.as_slice() > n);
        let mut err = (status::NO_ERROR, 0i64);
        let mut binds: Vec<(Vec<u32>, Vec<u8>)> = Vec::new();
        match req.pdu_tag {
            tag::GET => {
                for (i, n) in req.names.iter().enumerate() {
                    match exact(n) {
                        Some((o, v)) => binds.push((o.clone(), v.encode())),
                        None if v2 => {
                            // Instance missing under a known object, or no such object.
                            let known = mib.iter().any(|(o, _)| n.starts_with(&o[..o.len() - 1]));
                            let t = if known {
                                tag::NO_SUCH_INSTANCE
                            } else {
                                tag::NO_SUCH_OBJECT
                            };
                            binds.push((n.clone(), tlv(t, &[])));
                        }
                        None => {
                            if err.0 == status::NO_ERROR {
                                err = (status::NO_SUCH_NAME, i as i64 + 1);
                            }
                            binds.push((n.clone(), tlv(tag::NULL, &[])));
                        }
                    }
                }
            }
            tag::GET_NEXT => {
                for (i, n) in req.names.iter().enumerate() {
                    match next(n) {
                        Some((o, v)) => binds.push((o.clone(), v.encode())),
                        None if v2 => binds.push((n.clone(), tlv(tag::END_OF_MIB_VIEW, &[]))),
                        None => {
                            if err.0 == status::NO_ERROR {
                                err = (status::NO_SUCH_NAME, i as i64 + 1);
                            }
                            binds.push((n.clone(), tlv(tag::NULL, &[])));
                        }
                    }
                }
            }
            tag::GET_BULK if v2 => {
                let non_rep = req.f1.clamp(0, req.names.len() as i64) as usize;
                let max_rep = req.f2.clamp(0, 32) as usize;
                for n in &req.names[..non_rep] {
                    match next(n) {
                        Some((o, v)) => binds.push((o.clone(), v.encode())),
                        None => binds.push((n.clone(), tlv(tag::END_OF_MIB_VIEW, &[]))),
                    }
                }
                let mut cur: Vec<Vec<u32>> = req.names[non_rep..].to_vec();
                for _ in 0..max_rep {
                    if cur.is_empty() {
                        break;
                    }
                    let mut all_end = true;
                    for c in cur.iter_mut() {
                        match next(c) {
                            Some((o, v)) => {
                                binds.push((o.clone(), v.encode()));
                                *c = o.clone();
                                all_end = false;
                            }
                            None => binds.push((c.clone(), tlv(tag::END_OF_MIB_VIEW, &[]))),
                        }
                    }
                    if all_end {
                        break;
                    }
                }
            }
            tag::SET => {
                err = (
                    if v2 {
                        status::NOT_WRITABLE
                    } else {
                        status::READ_ONLY
                    },
                    1,
                );
                if !v2 {
                    // v1 has no readOnly for unknown objects: noSuchName.
                    if req.names.first().is_some_and(|n| exact(n).is_none()) {
                        err.0 = status::NO_SUCH_NAME;
                    }
                }
                for n in &req.names {
                    binds.push((n.clone(), tlv(tag::NULL, &[])));
                }
            }
            _ => return None,
        }
        let resp = encode_response(&req, err, &binds);
        if resp.len() > MAX_MESSAGE {
            // tooBig: answer with no variable bindings.
            return Some(encode_response(&req, (status::TOO_BIG, 0), &[]));
        }
        Some(resp)
    }
}

fn encode_response(req: &Request<'_>, err: (i64, i64), binds: &[(Vec<u32>, Vec<u8>)]) -> Vec<u8> {
    let mut vbl = Vec::new();
    for (o, v) in binds {
        let mut vb = tlv(tag::OID, &oid_content(o));
        vb.extend_from_slice(v);
        vbl.extend_from_slice(&tlv(tag::SEQUENCE, &vb));
    }
    let mut pdu = tlv(tag::INTEGER, &int_content(req.request_id));
    pdu.extend_from_slice(&tlv(tag::INTEGER, &int_content(err.0)));
    pdu.extend_from_slice(&tlv(tag::INTEGER, &int_content(err.1)));
    pdu.extend_from_slice(&tlv(tag::SEQUENCE, &vbl));
    let mut msg = tlv(tag::INTEGER, &int_content(req.version));
    msg.extend_from_slice(&tlv(tag::OCTET_STRING, req.community));
    msg.extend_from_slice(&tlv(tag::RESPONSE, &pdu));
    tlv(tag::SEQUENCE, &msg)
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

    fn agent() -> SnmpAgent {
        SnmpAgent::new(SystemInfo {
            descr: "pn-device test".into(),
            contact: String::new(),
            name: "dev-1".into(),
            location: "hall 1".into(),
        })
    }

    fn request(
        version: i64,
        community: &[u8],
        pdu: u8,
        names: &[&[u32]],
        f: (i64, i64),
    ) -> Vec<u8> {
        let mut vbl = Vec::new();
        for n in names {
            let mut vb = tlv(tag::OID, &oid_content(n));
            vb.extend_from_slice(&tlv(tag::NULL, &[]));
            vbl.extend_from_slice(&tlv(tag::SEQUENCE, &vb));
        }
        let mut p = tlv(tag::INTEGER, &int_content(4242));
        p.extend_from_slice(&tlv(tag::INTEGER, &int_content(f.0)));
        p.extend_from_slice(&tlv(tag::INTEGER, &int_content(f.1)));
        p.extend_from_slice(&tlv(tag::SEQUENCE, &vbl));
        let mut m = tlv(tag::INTEGER, &int_content(version));
        m.extend_from_slice(&tlv(tag::OCTET_STRING, community));
        m.extend_from_slice(&tlv(pdu, &p));
        tlv(tag::SEQUENCE, &m)
    }

    type Binding = (Vec<u32>, u8, Vec<u8>);

    /// Decode a response into (error status, error index, [(oid, tag, content)]).
    fn decode(resp: &[u8]) -> (i64, i64, Vec<Binding>) {
        let (seq, _) = read_tlv(resp).unwrap();
        let (_, r) = read_tlv(seq.content).unwrap();
        let (_, r) = read_tlv(r).unwrap();
        let (pdu, _) = read_tlv(r).unwrap();
        assert_eq!(pdu.tag, tag::RESPONSE);
        let (rid, r) = read_tlv(pdu.content).unwrap();
        assert_eq!(read_int(rid.content), Some(4242));
        let (es, r) = read_tlv(r).unwrap();
        let (ei, r) = read_tlv(r).unwrap();
        let (vbl, _) = read_tlv(r).unwrap();
        let mut out = Vec::new();
        let mut r = vbl.content;
        while !r.is_empty() {
            let (vb, rest) = read_tlv(r).unwrap();
            r = rest;
            let (n, v) = read_tlv(vb.content).unwrap();
            let (val, _) = read_tlv(v).unwrap();
            out.push((read_oid(n.content).unwrap(), val.tag, val.content.to_vec()));
        }
        (
            read_int(es.content).unwrap(),
            read_int(ei.content).unwrap(),
            out,
        )
    }

    const DESCR: &[u32] = &[1, 3, 6, 1, 2, 1, 1, 1, 0];
    const NAME: &[u32] = &[1, 3, 6, 1, 2, 1, 1, 5, 0];

    #[test]
    fn server_answers_then_stops_promptly() {
        let info = Arc::new(Mutex::new(agent().info.clone()));
        let mut srv = SnmpServer::spawn("127.0.0.1:0".parse().unwrap(), info).unwrap();
        let addr = srv.local_addr();
        let c = UdpSocket::bind("127.0.0.1:0").unwrap();
        c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        c.send_to(&request(1, b"public", tag::GET, &[NAME], (0, 0)), addr)
            .unwrap();
        let mut buf = [0u8; 1500];
        let (n, _) = c.recv_from(&mut buf).unwrap();
        assert_eq!(decode(&buf[..n]).2[0].2, b"dev-1");
        // The thread blocks in recv_from without a poll timeout; stop wakes and joins it, and
        // the port is free again once the server is gone.
        srv.stop();
        drop(srv);
        UdpSocket::bind(addr).expect("port released after stop");
    }

    #[test]
    fn oid_codec() {
        let o = [1u32, 3, 6, 1, 4, 1, 24686, 300, 0];
        assert_eq!(read_oid(&oid_content(&o)).unwrap(), o);
        assert_eq!(oid_content(&[1, 3, 6, 1]), vec![0x2b, 6, 1]);
        assert_eq!(read_oid(&[0x2b, 0x86]), None);
        assert_eq!(int_content(0), vec![0]);
        assert_eq!(int_content(128), vec![0, 128]);
        assert_eq!(int_content(-1), vec![0xff]);
        assert_eq!(read_int(&int_content(-129)), Some(-129));
    }

    #[test]
    fn get_getnext_bulk_set() {
        let a = agent();
        let r = a
            .handle(&request(1, b"public", tag::GET, &[DESCR, NAME], (0, 0)), 5)
            .unwrap();
        let (es, _, vb) = decode(&r);
        assert_eq!(es, 0);
        assert_eq!(
            vb[0],
            (
                DESCR.to_vec(),
                tag::OCTET_STRING,
                b"pn-device test".to_vec()
            )
        );
        assert_eq!(vb[1].2, b"dev-1".to_vec());
        // GETNEXT from the system group walks to sysDescr.0, then past the end.
        let r = a
            .handle(&request(0, b"public", tag::GET_NEXT, &[&SYSTEM], (0, 0)), 5)
            .unwrap();
        assert_eq!(decode(&r).2[0].0, DESCR.to_vec());
        let last: &[u32] = &[1, 3, 6, 1, 2, 1, 1, 7, 0];
        let r = a
            .handle(&request(0, b"public", tag::GET_NEXT, &[last], (0, 0)), 5)
            .unwrap();
        assert_eq!(decode(&r).0, status::NO_SUCH_NAME);
        let r = a
            .handle(&request(1, b"public", tag::GET_NEXT, &[last], (0, 0)), 5)
            .unwrap();
        assert_eq!(decode(&r).2[0].1, tag::END_OF_MIB_VIEW);
        // Unknown instance: v1 noSuchName with index, v2c noSuchInstance / noSuchObject.
        let bad: &[u32] = &[1, 3, 6, 1, 2, 1, 1, 5, 1];
        let r = a
            .handle(&request(0, b"public", tag::GET, &[NAME, bad], (0, 0)), 5)
            .unwrap();
        assert_eq!(decode(&r).0, status::NO_SUCH_NAME);
        assert_eq!(decode(&r).1, 2);
        let r = a
            .handle(&request(1, b"public", tag::GET, &[bad], (0, 0)), 5)
            .unwrap();
        assert_eq!(decode(&r).2[0].1, tag::NO_SUCH_INSTANCE);
        let r = a
            .handle(
                &request(1, b"public", tag::GET, &[&[1, 3, 6, 1, 9]], (0, 0)),
                5,
            )
            .unwrap();
        assert_eq!(decode(&r).2[0].1, tag::NO_SUCH_OBJECT);
        // GETBULK walks the whole group and ends with endOfMibView.
        let r = a
            .handle(
                &request(1, b"public", tag::GET_BULK, &[&SYSTEM], (0, 10)),
                77,
            )
            .unwrap();
        let vb = decode(&r).2;
        assert_eq!(vb.len(), 8);
        assert_eq!(
            vb[2],
            (vec![1, 3, 6, 1, 2, 1, 1, 3, 0], tag::TIMETICKS, vec![77])
        );
        assert_eq!(vb[6].2, vec![78]);
        assert_eq!(vb[7].1, tag::END_OF_MIB_VIEW);
        // SET is refused.
        let r = a
            .handle(&request(1, b"public", tag::SET, &[NAME], (0, 0)), 5)
            .unwrap();
        assert_eq!(decode(&r).0, status::NOT_WRITABLE);
        let r = a
            .handle(&request(0, b"public", tag::SET, &[NAME], (0, 0)), 5)
            .unwrap();
        assert_eq!(decode(&r).0, status::READ_ONLY);
        // Wrong community / version: no answer.
        assert!(a
            .handle(&request(1, b"private", tag::GET, &[NAME], (0, 0)), 5)
            .is_none());
        assert!(a
            .handle(&request(3, b"public", tag::GET, &[NAME], (0, 0)), 5)
            .is_none());
    }

    #[test]
    fn garbage_never_panics() {
        let a = agent();
        let good = request(1, b"public", tag::GET_BULK, &[&SYSTEM], (0, 10));
        for cut in 0..good.len() {
            let _ = a.handle(&good[..cut], 1);
        }
        let mut x = good.clone();
        for i in 0..x.len() {
            for v in [0x00, 0x7f, 0x80, 0x84, 0xff] {
                let old = x[i];
                x[i] = v;
                let _ = a.handle(&x, 1);
                x[i] = old;
            }
        }
        // Deep nesting / huge lengths.
        assert!(a.handle(&[0x30, 0x84, 0xff, 0xff, 0xff, 0xff], 1).is_none());
        assert!(a.handle(&[0x30; 1000], 1).is_none());
    }
}

//! A minimal SNMP agent, sans-IO: request datagram + the system group's content + uptime ->
//! response datagram. The read-only MIB-II system group (RFC 3418 §2,
//! 1.3.6.1.2.1.1.x.0) over SNMPv1 (RFC 1157) and SNMPv2c (RFC 1901, PDUs of RFC 3416),
//! community "public". Wire format: [`crate::wire::snmp`]. pn-device runs it on its UDP
//! socket (port 161), the farm for each of its devices from its packet socket.
//!
//! Supported: GetRequest, GetNextRequest, GetBulkRequest (v2c); SetRequest is answered with
//! `readOnly` (v1) / `notWritable` (v2c); a wrong community or version, or anything that is not
//! a well-formed message, is dropped without an answer (RFC 3584 / common agent behaviour).
//! Objects: sysDescr (the PROFINET system description, also the LLDP Chassis ID),
//! sysObjectID, sysUpTime (centiseconds since the agent started), sysContact, sysName (the
//! station name), sysLocation (I&M1 tag location when set), sysServices (78, as p-net
//! documents for PROFINET devices). A response longer than [`MAX_MESSAGE`] is replaced by
//! `tooBig` without bindings (RFC 3416 §4.2.1).

use crate::wire::snmp::{pdu, status, version, Pdu, SnmpMessage, Value, VarBind};
use crate::wire::Emit;

/// The community accepted for reading.
pub const COMMUNITY: &[u8] = b"public";
/// sysObjectID: the enterprise arc of the PROFIBUS Nutzerorganisation (PNO).
pub const SYS_OBJECT_ID: &[u32] = &[1, 3, 6, 1, 4, 1, 24686];
/// sysServices: 78 = datalink (2) + internet (4) + end-to-end (8) + applications (64), the
/// value p-net's documentation gives for PROFINET devices (doc/network_topology_detection.rst).
pub const SYS_SERVICES: i64 = 78;
/// Largest request handled and response sent (one Ethernet MTU of UDP payload).
pub const MAX_MESSAGE: usize = 1472;
/// The system group, 1.3.6.1.2.1.1.
pub const SYSTEM: [u32; 7] = [1, 3, 6, 1, 2, 1, 1];
/// Most rounds of a GetBulk (bounds the work of one request).
const MAX_REPETITIONS: i64 = 32;

/// The system group content (the agent reads it for every request).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SystemInfo {
    pub descr: String,
    pub contact: String,
    pub name: String,
    pub location: String,
}

/// The agent: `handle(request, uptime)` -> response datagram or nothing.
#[derive(Debug, Clone)]
pub struct SnmpAgent {
    pub info: SystemInfo,
}

type Mib = Vec<(Vec<u32>, Value)>;

impl SnmpAgent {
    pub fn new(info: SystemInfo) -> SnmpAgent {
        SnmpAgent { info }
    }

    /// The MIB in OID order, values as of `uptime_cs` (centiseconds).
    pub fn mib(&self, uptime_cs: u32) -> Mib {
        let o = |n: u32| {
            let mut v = SYSTEM.to_vec();
            v.extend_from_slice(&[n, 0]);
            v
        };
        let s = |x: &str| Value::OctetString(x.as_bytes().to_vec());
        vec![
            (o(1), s(&self.info.descr)),
            (o(2), Value::Oid(SYS_OBJECT_ID.to_vec())),
            (o(3), Value::TimeTicks(uptime_cs)),
            (o(4), s(&self.info.contact)),
            (o(5), s(&self.info.name)),
            (o(6), s(&self.info.location)),
            (o(7), Value::Integer(SYS_SERVICES)),
        ]
    }

    /// Answer one request datagram; `None` = drop (malformed, wrong community/version).
    pub fn handle(&self, msg: &[u8], uptime_cs: u32) -> Option<Vec<u8>> {
        if msg.len() > MAX_MESSAGE {
            return None;
        }
        let req = SnmpMessage::parse(msg).ok()?;
        let v2 = match req.version {
            version::V1 => false,
            version::V2C => true,
            _ => return None,
        };
        if req.community != COMMUNITY {
            return None;
        }
        let mib = self.mib(uptime_cs);
        let names: Vec<&[u32]> = req.pdu.bindings.iter().map(|b| &b.name[..]).collect();
        let (err, bindings) = match req.pdu.tag {
            pdu::GET => get(&mib, &names, v2),
            pdu::GET_NEXT => get_next(&mib, &names, v2),
            pdu::GET_BULK if v2 => get_bulk(&mib, &names, &req.pdu),
            pdu::SET => set(&mib, &names, v2),
            _ => return None,
        };
        let mut resp = SnmpMessage {
            version: req.version,
            community: req.community,
            pdu: Pdu {
                tag: pdu::RESPONSE,
                request_id: req.pdu.request_id,
                error_status: err.0,
                error_index: err.1,
                bindings,
            },
        };
        if resp.buffer_len() > MAX_MESSAGE {
            resp.pdu.error_status = status::TOO_BIG;
            resp.pdu.error_index = 0;
            resp.pdu.bindings.clear();
        }
        resp.to_bytes().ok()
    }
}

type Answer = ((i64, i64), Vec<VarBind>);

fn bind(name: &[u32], value: Value) -> VarBind {
    VarBind {
        name: name.to_vec(),
        value,
    }
}

fn exact<'a>(mib: &'a Mib, n: &[u32]) -> Option<&'a (Vec<u32>, Value)> {
    mib.iter().find(|(o, _)| o.as_slice() == n)
}

fn next<'a>(mib: &'a Mib, n: &[u32]) -> Option<&'a (Vec<u32>, Value)> {
    mib.iter().find(|(o, _)| o.as_slice() > n)
}

/// v1: the first failing binding sets noSuchName with its (1-based) index.
fn no_such_name(err: &mut (i64, i64), i: usize) {
    if err.0 == status::NO_ERROR {
        *err = (status::NO_SUCH_NAME, i as i64 + 1);
    }
}

fn get(mib: &Mib, names: &[&[u32]], v2: bool) -> Answer {
    let mut err = (status::NO_ERROR, 0);
    let mut out = Vec::new();
    for (i, n) in names.iter().enumerate() {
        match exact(mib, n) {
            Some((o, v)) => out.push(bind(o, v.clone())),
            None if v2 => {
                // Instance missing under a known object, or no such object.
                let known = mib.iter().any(|(o, _)| n.starts_with(&o[..o.len() - 1]));
                let v = if known {
                    Value::NoSuchInstance
                } else {
                    Value::NoSuchObject
                };
                out.push(bind(n, v));
            }
            None => {
                no_such_name(&mut err, i);
                out.push(bind(n, Value::Null));
            }
        }
    }
    (err, out)
}

fn get_next(mib: &Mib, names: &[&[u32]], v2: bool) -> Answer {
    let mut err = (status::NO_ERROR, 0);
    let mut out = Vec::new();
    for (i, n) in names.iter().enumerate() {
        match next(mib, n) {
            Some((o, v)) => out.push(bind(o, v.clone())),
            None if v2 => out.push(bind(n, Value::EndOfMibView)),
            None => {
                no_such_name(&mut err, i);
                out.push(bind(n, Value::Null));
            }
        }
    }
    (err, out)
}

/// RFC 3416 §4.2.3: the first non-repeaters names once, then up to max-repetitions rounds of
/// the others, each from where the last round ended.
fn get_bulk(mib: &Mib, names: &[&[u32]], p: &Pdu) -> Answer {
    let non_rep = p.error_status.clamp(0, names.len() as i64) as usize;
    let max_rep = p.error_index.clamp(0, MAX_REPETITIONS) as usize;
    let mut out = Vec::new();
    for n in &names[..non_rep] {
        match next(mib, n) {
            Some((o, v)) => out.push(bind(o, v.clone())),
            None => out.push(bind(n, Value::EndOfMibView)),
        }
    }
    let mut cur: Vec<Vec<u32>> = names[non_rep..].iter().map(|n| n.to_vec()).collect();
    for _ in 0..max_rep {
        if cur.is_empty() {
            break;
        }
        let mut all_end = true;
        for c in cur.iter_mut() {
            match next(mib, c) {
                Some((o, v)) => {
                    out.push(bind(o, v.clone()));
                    c.clone_from(o);
                    all_end = false;
                }
                None => out.push(bind(c, Value::EndOfMibView)),
            }
        }
        if all_end {
            break;
        }
    }
    ((status::NO_ERROR, 0), out)
}

fn set(mib: &Mib, names: &[&[u32]], v2: bool) -> Answer {
    let err = if v2 {
        (status::NOT_WRITABLE, 1)
    } else if names.first().is_some_and(|n| exact(mib, n).is_none()) {
        // v1 has no readOnly for unknown objects: noSuchName.
        (status::NO_SUCH_NAME, 1)
    } else {
        (status::READ_ONLY, 1)
    };
    (err, names.iter().map(|n| bind(n, Value::Null)).collect())
}

#[cfg(test)]
mod tests;

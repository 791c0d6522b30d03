//! SNMPv1 / SNMPv2c messages (RFC 1157 §4, RFC 3416 §3, community-based RFC 1901): the
//! message SEQUENCE { version, community, PDU } and the PDUs GetRequest, GetNextRequest,
//! Response, SetRequest and GetBulkRequest with their VarBindList, over the BER subset in
//! [`ber`].
//!
//! [`SnmpMessage::parse`] reads what an agent needs and no more, as leniently as pn-device's
//! agent always did: bytes after a VarBind's value, after the VarBindList and after the PDU
//! inside the message are ignored, and a VarBind whose value is missing or not a well-formed
//! TLV reads as NULL (a request's values are not looked at). Bytes after the message SEQUENCE are refused (a datagram holds
//! one message). At most [`MAX_VARBINDS`] bindings are read. A value whose content does not
//! fit its type (an INTEGER of 9 bytes, say) is kept as [`Value::Other`], so the message still
//! parses and emits again.

pub mod ber;

use crate::wire::field::{Reader, Writer};
use crate::wire::Emit;
use crate::wire::{Error, Result};
use ber::tag;

/// UDP port of an SNMP agent.
pub const PORT: u16 = 161;
/// Most VarBinds read from one message (bounds the allocation; an agent answering more in
/// one datagram would exceed the UDP payload anyway).
pub const MAX_VARBINDS: usize = 64;

/// SNMP version field values.
pub mod version {
    pub const V1: i64 = 0;
    pub const V2C: i64 = 1;
}

/// PDU tags (context-specific, constructed).
pub mod pdu {
    pub const GET: u8 = 0xA0;
    pub const GET_NEXT: u8 = 0xA1;
    pub const RESPONSE: u8 = 0xA2;
    pub const SET: u8 = 0xA3;
    pub const GET_BULK: u8 = 0xA5;
}

/// error-status values (RFC 1157 §4.1.1, RFC 3416 §3).
pub mod status {
    pub const NO_ERROR: i64 = 0;
    pub const TOO_BIG: i64 = 1;
    pub const NO_SUCH_NAME: i64 = 2;
    pub const READ_ONLY: i64 = 4;
    pub const NOT_WRITABLE: i64 = 17;
}

/// A VarBind value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    Integer(i64),
    OctetString(Vec<u8>),
    Null,
    Oid(Vec<u32>),
    TimeTicks(u32),
    NoSuchObject,
    NoSuchInstance,
    EndOfMibView,
    /// Any other type (Counter32, IpAddress, ...) or content that does not fit its tag.
    Other {
        tag: u8,
        content: Vec<u8>,
    },
}

impl Value {
    fn parse(t: ber::Tlv<'_>) -> Value {
        let typed = match t.tag {
            tag::INTEGER => ber::read_int(t.content).ok().map(Value::Integer),
            tag::OCTET_STRING => Some(Value::OctetString(t.content.to_vec())),
            tag::OID => ber::read_oid(t.content).ok().map(Value::Oid),
            tag::TIMETICKS => ber::read_int(t.content)
                .ok()
                .and_then(|v| u32::try_from(v).ok())
                .map(Value::TimeTicks),
            tag::NULL | tag::NO_SUCH_OBJECT | tag::NO_SUCH_INSTANCE | tag::END_OF_MIB_VIEW
                if !t.content.is_empty() =>
            {
                None
            }
            tag::NULL => Some(Value::Null),
            tag::NO_SUCH_OBJECT => Some(Value::NoSuchObject),
            tag::NO_SUCH_INSTANCE => Some(Value::NoSuchInstance),
            tag::END_OF_MIB_VIEW => Some(Value::EndOfMibView),
            _ => None,
        };
        typed.unwrap_or_else(|| Value::Other {
            tag: t.tag,
            content: t.content.to_vec(),
        })
    }

    /// Bytes of the value's TLV (an error for an OID that cannot be encoded).
    pub fn tlv_len(&self) -> Result<usize> {
        Ok(match self {
            Value::Integer(v) => ber::int_len(*v),
            Value::TimeTicks(v) => ber::int_len(i64::from(*v)),
            Value::OctetString(s) | Value::Other { content: s, .. } => ber::tlv_len(s.len()),
            Value::Oid(o) => ber::tlv_len(ber::oid_content_len(o)?),
            Value::Null | Value::NoSuchObject | Value::NoSuchInstance | Value::EndOfMibView => 2,
        })
    }
}

impl Emit for Value {
    fn buffer_len(&self) -> usize {
        self.tlv_len().unwrap_or(0)
    }

    fn emit(&self, w: &mut Writer) -> Result<()> {
        match self {
            Value::Integer(v) => ber::emit_int(w, tag::INTEGER, *v),
            Value::TimeTicks(v) => ber::emit_int(w, tag::TIMETICKS, i64::from(*v)),
            Value::OctetString(s) => emit_bytes(w, tag::OCTET_STRING, s),
            Value::Other { tag, content } => emit_bytes(w, *tag, content),
            Value::Oid(o) => ber::emit_oid(w, o),
            Value::Null => ber::emit_header(w, tag::NULL, 0),
            Value::NoSuchObject => ber::emit_header(w, tag::NO_SUCH_OBJECT, 0),
            Value::NoSuchInstance => ber::emit_header(w, tag::NO_SUCH_INSTANCE, 0),
            Value::EndOfMibView => ber::emit_header(w, tag::END_OF_MIB_VIEW, 0),
        }
    }
}

fn emit_bytes(w: &mut Writer, t: u8, b: &[u8]) -> Result<()> {
    ber::emit_header(w, t, b.len())?;
    w.bytes(b);
    Ok(())
}

/// One VarBind: an object name and its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VarBind {
    pub name: Vec<u32>,
    pub value: Value,
}

impl VarBind {
    fn content_len(&self) -> Result<usize> {
        Ok(ber::tlv_len(ber::oid_content_len(&self.name)?) + self.value.tlv_len()?)
    }
}

/// A PDU. For GetBulkRequest, `error_status` and `error_index` hold non-repeaters and
/// max-repetitions (RFC 3416 §3: same position and type).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pdu {
    /// The PDU tag ([`pdu`]).
    pub tag: u8,
    pub request_id: i64,
    pub error_status: i64,
    pub error_index: i64,
    pub bindings: Vec<VarBind>,
}

/// A community-based SNMP message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnmpMessage {
    pub version: i64,
    pub community: Vec<u8>,
    pub pdu: Pdu,
}

fn parse_bindings(vbl: &[u8]) -> Result<Vec<VarBind>> {
    let mut out = Vec::new();
    let mut r = Reader::new(vbl);
    while !r.is_empty() {
        if out.len() >= MAX_VARBINDS {
            return Err(Error::Unsupported("more than 64 VarBinds"));
        }
        let vb = ber::expect(&mut r, tag::SEQUENCE, "VarBind is not a SEQUENCE")?;
        let mut v = Reader::new(vb);
        let name = ber::read_oid(ber::expect(&mut v, tag::OID, "VarBind name is not an OID")?)?;
        // Values of a request are not looked at, so a bad one does not lose the request.
        let value = ber::read_tlv(&mut v).map_or(Value::Null, Value::parse);
        out.push(VarBind { name, value });
    }
    Ok(out)
}

impl SnmpMessage {
    /// Parse one datagram. Fuzz entry point of this module (with the agent).
    pub fn parse(msg: &[u8]) -> Result<SnmpMessage> {
        let mut top = Reader::new(msg);
        let seq = ber::expect(&mut top, tag::SEQUENCE, "message is not a SEQUENCE")?;
        if !top.is_empty() {
            return Err(Error::Malformed("bytes after the SNMP message"));
        }
        let mut r = Reader::new(seq);
        let version = ber::read_int(ber::expect(&mut r, tag::INTEGER, "version")?)?;
        let community = ber::expect(&mut r, tag::OCTET_STRING, "community")?.to_vec();
        let pdu = ber::read_tlv(&mut r)?;
        let mut p = Reader::new(pdu.content);
        let request_id = ber::read_int(ber::expect(&mut p, tag::INTEGER, "request-id")?)?;
        let error_status = ber::read_int(ber::expect(&mut p, tag::INTEGER, "error-status")?)?;
        let error_index = ber::read_int(ber::expect(&mut p, tag::INTEGER, "error-index")?)?;
        let vbl = ber::expect(&mut p, tag::SEQUENCE, "VarBindList is not a SEQUENCE")?;
        Ok(SnmpMessage {
            version,
            community,
            pdu: Pdu {
                tag: pdu.tag,
                request_id,
                error_status,
                error_index,
                bindings: parse_bindings(vbl)?,
            },
        })
    }

    fn lens(&self) -> Result<(usize, usize, usize)> {
        let mut vbl = 0usize;
        for b in &self.pdu.bindings {
            vbl += ber::tlv_len(b.content_len()?);
        }
        let p = &self.pdu;
        let pdu = ber::int_len(p.request_id)
            + ber::int_len(p.error_status)
            + ber::int_len(p.error_index)
            + ber::tlv_len(vbl);
        let msg =
            ber::int_len(self.version) + ber::tlv_len(self.community.len()) + ber::tlv_len(pdu);
        Ok((msg, pdu, vbl))
    }
}

impl Emit for SnmpMessage {
    /// Bytes of the emitted message (0 when it cannot be emitted: an invalid OID).
    fn buffer_len(&self) -> usize {
        self.lens().map_or(0, |(m, _, _)| ber::tlv_len(m))
    }

    fn emit(&self, w: &mut Writer) -> Result<()> {
        let (msg, pdu, vbl) = self.lens()?;
        ber::emit_header(w, tag::SEQUENCE, msg)?;
        ber::emit_int(w, tag::INTEGER, self.version)?;
        emit_bytes(w, tag::OCTET_STRING, &self.community)?;
        let p = &self.pdu;
        ber::emit_header(w, p.tag, pdu)?;
        ber::emit_int(w, tag::INTEGER, p.request_id)?;
        ber::emit_int(w, tag::INTEGER, p.error_status)?;
        ber::emit_int(w, tag::INTEGER, p.error_index)?;
        ber::emit_header(w, tag::SEQUENCE, vbl)?;
        for b in &p.bindings {
            ber::emit_header(w, tag::SEQUENCE, b.content_len()?)?;
            ber::emit_oid(w, &b.name)?;
            b.value.emit(w)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// net-snmp's `snmpget -v2c -c public x 1.3.6.1.2.1.1.5.0` (request-id 12345).
    const GET_SYSNAME: [u8; 43] = [
        0x30, 0x29, 0x02, 0x01, 0x01, 0x04, 0x06, b'p', b'u', b'b', b'l', b'i', b'c', 0xa0, 0x1c,
        0x02, 0x04, 0x00, 0x00, 0x30, 0x39, 0x02, 0x01, 0x00, 0x02, 0x01, 0x00, 0x30, 0x0e, 0x30,
        0x0c, 0x06, 0x08, 0x2b, 0x06, 0x01, 0x02, 0x01, 0x01, 0x05, 0x00, 0x05, 0x00,
    ];

    #[test]
    fn a_get_request_parses_and_emits_again() {
        let m = SnmpMessage::parse(&GET_SYSNAME).unwrap();
        assert_eq!(m.version, version::V2C);
        assert_eq!(m.community, b"public");
        assert_eq!(m.pdu.tag, pdu::GET);
        assert_eq!(m.pdu.request_id, 12345);
        assert_eq!(
            m.pdu.bindings,
            [VarBind {
                name: vec![1, 3, 6, 1, 2, 1, 1, 5, 0],
                value: Value::Null
            }]
        );
        let b = m.to_bytes().unwrap();
        assert_eq!(b.len(), m.buffer_len());
        // The request-id was sent in 4 bytes; the minimal encoding takes 2.
        assert_eq!(b.len(), GET_SYSNAME.len() - 2);
        assert_eq!(SnmpMessage::parse(&b).unwrap(), m);
    }

    #[test]
    fn values_round_trip_and_odd_content_is_kept() {
        let vals = [
            Value::Integer(-5),
            Value::OctetString(vec![0; 200]),
            Value::Oid(vec![1, 3, 6, 1, 4, 1, 24686]),
            Value::TimeTicks(u32::MAX),
            Value::NoSuchObject,
            Value::NoSuchInstance,
            Value::EndOfMibView,
            Value::Other {
                tag: 0x41,
                content: vec![1, 2],
            },
            Value::Other {
                tag: tag::INTEGER,
                content: vec![0; 9],
            },
        ];
        let m = SnmpMessage {
            version: version::V1,
            community: b"public".to_vec(),
            pdu: Pdu {
                tag: pdu::RESPONSE,
                request_id: -1,
                error_status: status::NO_ERROR,
                error_index: 0,
                bindings: vals
                    .iter()
                    .map(|v| VarBind {
                        name: vec![1, 3, 6],
                        value: v.clone(),
                    })
                    .collect(),
            },
        };
        let b = m.to_bytes().unwrap();
        assert_eq!(b.len(), m.buffer_len());
        assert_eq!(SnmpMessage::parse(&b).unwrap(), m);
    }

    #[test]
    fn lenient_where_the_agent_was_strict_where_it_was() {
        // A VarBind without value reads as NULL.
        let mut m = GET_SYSNAME.to_vec();
        m.truncate(m.len() - 2);
        for i in [1, 14, 28, 30] {
            m[i] -= 2;
        }
        let p = SnmpMessage::parse(&m).unwrap();
        assert_eq!(p.pdu.bindings[0].value, Value::Null);
        // Bytes after the message are refused; cuts never parse.
        let mut t = GET_SYSNAME.to_vec();
        t.push(0);
        assert!(SnmpMessage::parse(&t).is_err());
        for n in 0..GET_SYSNAME.len() {
            assert!(SnmpMessage::parse(&GET_SYSNAME[..n]).is_err(), "cut {n}");
        }
        assert!(SnmpMessage::parse(&[0x30, 0x84, 0xff, 0xff, 0xff, 0xff]).is_err());
        assert!(SnmpMessage::parse(&[0x30; 1000]).is_err());
    }
}

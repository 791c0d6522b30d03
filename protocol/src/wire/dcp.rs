//! PN-DCP (Discovery and basic Configuration Protocol), carried in RT frames with FrameID
//! 0xFEFC (Hello), 0xFEFD (Get/Set), 0xFEFE (Identify request), 0xFEFF (Identify response).
//!
//! PDU after the FrameID (IEC 61158-6-10 §4.3; Wireshark `packet-pn-dcp.c`
//! `dissect_PNDCP_PDU`; p-net `pf_dcp.c` `pf_dcp_header_t`):
//!
//! ```text
//! ServiceID u8 | ServiceType u8 | Xid u32 | ResponseDelay u16 (Identify request) or
//! Reserved u16 | DCPDataLength u16 | blocks...
//! ```
//!
//! A block is `Option u8 | Suboption u8 | DCPBlockLength u16 | [prefix u16] | data`, followed by
//! one padding byte when the block length is odd (the padding is counted in DCPDataLength). The
//! prefix is BlockInfo in Identify responses, Get responses and Hello requests, and
//! BlockQualifier in Set requests; it is present for options IP, DeviceProperties, DHCP and
//! DeviceInitiative in those contexts, and for Control blocks only in Set requests (Wireshark
//! `dissect_PNDCP_Suboption_*`; p-net `pf_dcp_get_req` writes Control/Response without
//! BlockInfo). A Get request carries bare Option/Suboption pairs instead of blocks.
//!
//! Fuzz entry point: [`DcpRepr::parse`] (PDU after the FrameID).

use crate::wire::ethernet::{self, EthernetRepr, MacAddr};
use crate::wire::field::{Reader, Writer};
use crate::wire::rt::{self, FrameId};
use crate::wire::{Error, Result};
use core::fmt;
use std::net::Ipv4Addr;

/// Length of the DCP header (ServiceID .. DCPDataLength).
pub const HEADER_LEN: usize = 10;

/// DCP option numbers.
pub mod option {
    pub const IP: u8 = 1;
    pub const DEVICE_PROPERTIES: u8 = 2;
    pub const DHCP: u8 = 3;
    pub const CONTROL: u8 = 5;
    pub const DEVICE_INITIATIVE: u8 = 6;
    pub const ALL_SELECTOR: u8 = 0xFF;
}

/// DCP suboption numbers, per option.
pub mod suboption {
    pub const IP_MAC: u8 = 1;
    pub const IP_PARAMETER: u8 = 2;
    pub const IP_FULL_SUITE: u8 = 3;
    pub const DEVICE_VENDOR: u8 = 1;
    pub const NAME_OF_STATION: u8 = 2;
    pub const DEVICE_ID: u8 = 3;
    pub const DEVICE_ROLE: u8 = 4;
    pub const DEVICE_OPTIONS: u8 = 5;
    pub const ALIAS_NAME: u8 = 6;
    pub const DEVICE_INSTANCE: u8 = 7;
    pub const OEM_DEVICE_ID: u8 = 8;
    pub const CONTROL_START: u8 = 1;
    pub const CONTROL_STOP: u8 = 2;
    pub const CONTROL_SIGNAL: u8 = 3;
    pub const CONTROL_RESPONSE: u8 = 4;
    pub const CONTROL_FACTORY_RESET: u8 = 5;
    pub const CONTROL_RESET_TO_FACTORY: u8 = 6;
    pub const DEVICE_INITIATIVE: u8 = 1;
    pub const ALL: u8 = 0xFF;
}

/// BlockQualifier values of Set requests.
pub mod qualifier {
    /// Use the value temporarily (lost at power cycle).
    pub const TEMPORARY: u16 = 0;
    /// Save the value permanently.
    pub const PERMANENT: u16 = 1;
    /// ResetToFactory modes (Wireshark `pn_dcp_BlockQualifier`; the odd value of each pair
    /// means the same mode).
    pub const RESET_APPLICATION_DATA: u16 = 0x0002;
    pub const RESET_COMMUNICATION_PARAMETER: u16 = 0x0004;
    pub const RESET_ENGINEERING_PARAMETER: u16 = 0x0006;
    pub const RESET_ALL_STORED_DATA: u16 = 0x0008;
    pub const RESET_DEVICE: u16 = 0x0010;
    pub const RESET_AND_RESTORE: u16 = 0x0012;
}

/// BlockInfo values of the IP parameter block in responses (Wireshark
/// `pn_dcp_suboption_ip_block_info`).
pub mod ip_block_info {
    pub const NOT_SET: u16 = 0x0000;
    pub const SET: u16 = 0x0001;
    pub const SET_BY_DHCP: u16 = 0x0002;
    /// Or-ed in when an address conflict was detected.
    pub const CONFLICT: u16 = 0x0080;
}

/// DeviceRoleDetails bits.
pub mod device_role {
    pub const IO_DEVICE: u8 = 0x01;
    pub const IO_CONTROLLER: u8 = 0x02;
    pub const IO_MULTIDEVICE: u8 = 0x04;
    pub const PN_SUPERVISOR: u8 = 0x08;
}

/// SignalValue "flash once" (Control/Signal).
pub const SIGNAL_FLASH_ONCE: u16 = 0x0100;

/// DCP ServiceID.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ServiceId {
    Get = 3,
    Set = 4,
    Identify = 5,
    Hello = 6,
}

impl ServiceId {
    pub fn from_u8(v: u8) -> Option<ServiceId> {
        match v {
            3 => Some(ServiceId::Get),
            4 => Some(ServiceId::Set),
            5 => Some(ServiceId::Identify),
            6 => Some(ServiceId::Hello),
            _ => None,
        }
    }
}

/// DCP ServiceType.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ServiceType {
    Request = 0,
    ResponseSuccess = 1,
    /// "Response - request not supported".
    ResponseNotSupported = 5,
}

impl ServiceType {
    pub fn from_u8(v: u8) -> Option<ServiceType> {
        match v {
            0 => Some(ServiceType::Request),
            1 => Some(ServiceType::ResponseSuccess),
            5 => Some(ServiceType::ResponseNotSupported),
            _ => None,
        }
    }
    pub fn is_response(self) -> bool {
        self != ServiceType::Request
    }
}

/// BlockError of a Control/Response block.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct BlockError(pub u8);

impl BlockError {
    pub const OK: BlockError = BlockError(0);
    pub const OPTION_UNSUPPORTED: BlockError = BlockError(1);
    /// Suboption unsupported or no DataSet available.
    pub const SUBOPTION_UNSUPPORTED: BlockError = BlockError(2);
    pub const SUBOPTION_NOT_SET: BlockError = BlockError(3);
    pub const RESOURCE_ERROR: BlockError = BlockError(4);
    /// SET not possible by local reasons.
    pub const SET_NOT_POSSIBLE: BlockError = BlockError(5);
    /// In operation, SET not possible.
    pub const IN_OPERATION: BlockError = BlockError(6);

    pub fn name(self) -> &'static str {
        match self.0 {
            0 => "ok",
            1 => "option unsupported",
            2 => "suboption unsupported or no dataset",
            3 => "suboption not set",
            4 => "resource error",
            5 => "set not possible by local reasons",
            6 => "in operation, set not possible",
            _ => "reserved",
        }
    }
}

impl fmt::Debug for BlockError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "BlockError({} {})", self.0, self.name())
    }
}

/// The value of one DCP block (what follows the optional BlockInfo/BlockQualifier).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum DcpValue {
    /// IP / MAC address (1/1).
    MacAddress(MacAddr),
    /// IP / IP parameter (1/2).
    IpParameter {
        ip: Ipv4Addr,
        mask: Ipv4Addr,
        gateway: Ipv4Addr,
    },
    /// IP / full IP suite (1/3): IP parameter plus four DNS server addresses.
    FullIpSuite {
        ip: Ipv4Addr,
        mask: Ipv4Addr,
        gateway: Ipv4Addr,
        dns: [Ipv4Addr; 4],
    },
    /// DeviceProperties / DeviceVendorValue ("TypeOfStation") (2/1).
    DeviceVendor(Vec<u8>),
    /// DeviceProperties / NameOfStation (2/2), raw bytes as on the wire (may be empty, may be
    /// invalid: use [`NameOfStation::new`] to validate).
    NameOfStation(Vec<u8>),
    /// DeviceProperties / DeviceID (2/3).
    DeviceId { vendor_id: u16, device_id: u16 },
    /// DeviceProperties / DeviceRole (2/4): role bits ([`device_role`]) and a reserved byte.
    DeviceRole { role: u8, reserved: u8 },
    /// DeviceProperties / DeviceOptions (2/5): supported (option, suboption) pairs.
    DeviceOptions(Vec<(u8, u8)>),
    /// DeviceProperties / AliasName (2/6).
    AliasName(Vec<u8>),
    /// DeviceProperties / DeviceInstance (2/7).
    DeviceInstance { high: u8, low: u8 },
    /// DeviceProperties / OEM DeviceID (2/8).
    OemDeviceId { vendor_id: u16, device_id: u16 },
    /// Control / Start transaction (5/1).
    Start,
    /// Control / Stop (end) transaction (5/2).
    Stop,
    /// Control / Signal (5/3).
    Signal { value: u16 },
    /// Control / Response (5/4): result for one (option, suboption).
    Response {
        option: u8,
        suboption: u8,
        error: BlockError,
    },
    /// Control / FactoryReset (5/5).
    FactoryReset,
    /// Control / ResetToFactory (5/6); the mode is the BlockQualifier.
    ResetToFactory,
    /// DeviceInitiative (6/1): 1 = the device sends Hello after power on.
    DeviceInitiative(u16),
    /// AllSelector (0xFF/0xFF), Identify filter that matches every device.
    AllSelector,
    /// Anything else (DHCP, manufacturer-specific options, unknown suboptions, or a known
    /// suboption whose length does not fit its layout): kept verbatim.
    Other {
        option: u8,
        suboption: u8,
        data: Vec<u8>,
    },
}

impl DcpValue {
    /// (option, suboption) of this value.
    pub fn option_suboption(&self) -> (u8, u8) {
        use option as o;
        use suboption as s;
        match self {
            DcpValue::MacAddress(_) => (o::IP, s::IP_MAC),
            DcpValue::IpParameter { .. } => (o::IP, s::IP_PARAMETER),
            DcpValue::FullIpSuite { .. } => (o::IP, s::IP_FULL_SUITE),
            DcpValue::DeviceVendor(_) => (o::DEVICE_PROPERTIES, s::DEVICE_VENDOR),
            DcpValue::NameOfStation(_) => (o::DEVICE_PROPERTIES, s::NAME_OF_STATION),
            DcpValue::DeviceId { .. } => (o::DEVICE_PROPERTIES, s::DEVICE_ID),
            DcpValue::DeviceRole { .. } => (o::DEVICE_PROPERTIES, s::DEVICE_ROLE),
            DcpValue::DeviceOptions(_) => (o::DEVICE_PROPERTIES, s::DEVICE_OPTIONS),
            DcpValue::AliasName(_) => (o::DEVICE_PROPERTIES, s::ALIAS_NAME),
            DcpValue::DeviceInstance { .. } => (o::DEVICE_PROPERTIES, s::DEVICE_INSTANCE),
            DcpValue::OemDeviceId { .. } => (o::DEVICE_PROPERTIES, s::OEM_DEVICE_ID),
            DcpValue::Start => (o::CONTROL, s::CONTROL_START),
            DcpValue::Stop => (o::CONTROL, s::CONTROL_STOP),
            DcpValue::Signal { .. } => (o::CONTROL, s::CONTROL_SIGNAL),
            DcpValue::Response { .. } => (o::CONTROL, s::CONTROL_RESPONSE),
            DcpValue::FactoryReset => (o::CONTROL, s::CONTROL_FACTORY_RESET),
            DcpValue::ResetToFactory => (o::CONTROL, s::CONTROL_RESET_TO_FACTORY),
            DcpValue::DeviceInitiative(_) => (o::DEVICE_INITIATIVE, s::DEVICE_INITIATIVE),
            DcpValue::AllSelector => (o::ALL_SELECTOR, s::ALL),
            DcpValue::Other {
                option, suboption, ..
            } => (*option, *suboption),
        }
    }

    /// Decode the data of a block (after the prefix) for (option, suboption). Data that does
    /// not fit the layout is kept as [`DcpValue::Other`]. Never fails.
    pub fn decode(opt: u8, sub: u8, data: &[u8]) -> DcpValue {
        Self::decode_typed(opt, sub, data).unwrap_or_else(|| DcpValue::Other {
            option: opt,
            suboption: sub,
            data: data.to_vec(),
        })
    }

    fn decode_typed(opt: u8, sub: u8, data: &[u8]) -> Option<DcpValue> {
        use option as o;
        use suboption as s;
        let ip = |b: &[u8], at: usize| -> Option<Ipv4Addr> {
            let x = b.get(at..at + 4)?;
            Some(Ipv4Addr::new(x[0], x[1], x[2], x[3]))
        };
        let u16at = |at: usize| -> Option<u16> {
            let x = data.get(at..at + 2)?;
            Some(u16::from_be_bytes([x[0], x[1]]))
        };
        let exact = |n: usize| data.len() == n;
        Some(match (opt, sub) {
            (o::IP, s::IP_MAC) if exact(6) => DcpValue::MacAddress(MacAddr::from_bytes(data).ok()?),
            (o::IP, s::IP_PARAMETER) if exact(12) => DcpValue::IpParameter {
                ip: ip(data, 0)?,
                mask: ip(data, 4)?,
                gateway: ip(data, 8)?,
            },
            (o::IP, s::IP_FULL_SUITE) if exact(28) => DcpValue::FullIpSuite {
                ip: ip(data, 0)?,
                mask: ip(data, 4)?,
                gateway: ip(data, 8)?,
                dns: [ip(data, 12)?, ip(data, 16)?, ip(data, 20)?, ip(data, 24)?],
            },
            (o::DEVICE_PROPERTIES, s::DEVICE_VENDOR) => DcpValue::DeviceVendor(data.to_vec()),
            (o::DEVICE_PROPERTIES, s::NAME_OF_STATION) => DcpValue::NameOfStation(data.to_vec()),
            (o::DEVICE_PROPERTIES, s::DEVICE_ID) if exact(4) => DcpValue::DeviceId {
                vendor_id: u16at(0)?,
                device_id: u16at(2)?,
            },
            (o::DEVICE_PROPERTIES, s::DEVICE_ROLE) if exact(2) => DcpValue::DeviceRole {
                role: data[0],
                reserved: data[1],
            },
            (o::DEVICE_PROPERTIES, s::DEVICE_OPTIONS) if data.len() % 2 == 0 => {
                DcpValue::DeviceOptions(data.chunks_exact(2).map(|c| (c[0], c[1])).collect())
            }
            (o::DEVICE_PROPERTIES, s::ALIAS_NAME) => DcpValue::AliasName(data.to_vec()),
            (o::DEVICE_PROPERTIES, s::DEVICE_INSTANCE) if exact(2) => DcpValue::DeviceInstance {
                high: data[0],
                low: data[1],
            },
            (o::DEVICE_PROPERTIES, s::OEM_DEVICE_ID) if exact(4) => DcpValue::OemDeviceId {
                vendor_id: u16at(0)?,
                device_id: u16at(2)?,
            },
            (o::CONTROL, s::CONTROL_START) if exact(0) => DcpValue::Start,
            (o::CONTROL, s::CONTROL_STOP) if exact(0) => DcpValue::Stop,
            (o::CONTROL, s::CONTROL_SIGNAL) if exact(2) => DcpValue::Signal { value: u16at(0)? },
            (o::CONTROL, s::CONTROL_RESPONSE) if exact(3) => DcpValue::Response {
                option: data[0],
                suboption: data[1],
                error: BlockError(data[2]),
            },
            (o::CONTROL, s::CONTROL_FACTORY_RESET) if exact(0) => DcpValue::FactoryReset,
            (o::CONTROL, s::CONTROL_RESET_TO_FACTORY) if exact(0) => DcpValue::ResetToFactory,
            (o::DEVICE_INITIATIVE, s::DEVICE_INITIATIVE) if exact(2) => {
                DcpValue::DeviceInitiative(u16at(0)?)
            }
            (o::ALL_SELECTOR, s::ALL) if exact(0) => DcpValue::AllSelector,
            _ => return None,
        })
    }

    /// Write the data bytes (after the prefix).
    pub fn encode(&self, w: &mut Writer) {
        match self {
            DcpValue::MacAddress(m) => {
                w.bytes(&m.0);
            }
            DcpValue::IpParameter { ip, mask, gateway } => {
                w.bytes(&ip.octets())
                    .bytes(&mask.octets())
                    .bytes(&gateway.octets());
            }
            DcpValue::FullIpSuite {
                ip,
                mask,
                gateway,
                dns,
            } => {
                w.bytes(&ip.octets())
                    .bytes(&mask.octets())
                    .bytes(&gateway.octets());
                for d in dns {
                    w.bytes(&d.octets());
                }
            }
            DcpValue::DeviceVendor(b) | DcpValue::NameOfStation(b) | DcpValue::AliasName(b) => {
                w.bytes(b);
            }
            DcpValue::DeviceId {
                vendor_id,
                device_id,
            }
            | DcpValue::OemDeviceId {
                vendor_id,
                device_id,
            } => {
                w.u16(*vendor_id).u16(*device_id);
            }
            DcpValue::DeviceRole { role, reserved } => {
                w.u8(*role).u8(*reserved);
            }
            DcpValue::DeviceOptions(pairs) => {
                for (o, s) in pairs {
                    w.u8(*o).u8(*s);
                }
            }
            DcpValue::DeviceInstance { high, low } => {
                w.u8(*high).u8(*low);
            }
            DcpValue::Start
            | DcpValue::Stop
            | DcpValue::FactoryReset
            | DcpValue::ResetToFactory
            | DcpValue::AllSelector => {}
            DcpValue::Signal { value } => {
                w.u16(*value);
            }
            DcpValue::Response {
                option,
                suboption,
                error,
            } => {
                w.u8(*option).u8(*suboption).u8(error.0);
            }
            DcpValue::DeviceInitiative(v) => {
                w.u16(*v);
            }
            DcpValue::Other { data, .. } => {
                w.bytes(data);
            }
        }
    }

    /// Length of the encoded data (after the prefix).
    pub fn data_len(&self) -> usize {
        match self {
            DcpValue::MacAddress(_) => 6,
            DcpValue::IpParameter { .. } => 12,
            DcpValue::FullIpSuite { .. } => 28,
            DcpValue::DeviceVendor(b) | DcpValue::NameOfStation(b) | DcpValue::AliasName(b) => {
                b.len()
            }
            DcpValue::DeviceId { .. } | DcpValue::OemDeviceId { .. } => 4,
            DcpValue::DeviceRole { .. } | DcpValue::DeviceInstance { .. } => 2,
            DcpValue::DeviceOptions(p) => p.len().saturating_mul(2),
            DcpValue::Start
            | DcpValue::Stop
            | DcpValue::FactoryReset
            | DcpValue::ResetToFactory
            | DcpValue::AllSelector => 0,
            DcpValue::Signal { .. } | DcpValue::DeviceInitiative(_) => 2,
            DcpValue::Response { .. } => 3,
            DcpValue::Other { data, .. } => data.len(),
        }
    }
}

/// One DCP block: a value plus the 16-bit prefix word (BlockInfo or BlockQualifier).
///
/// `prefix` is only on the wire where the service calls for it (see the module docs); it is 0
/// and ignored elsewhere. Use [`DcpBlock::new`] in requests without a prefix,
/// [`DcpBlock::with_info`] in responses and [`DcpBlock::with_qualifier`] in Set requests.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct DcpBlock {
    pub prefix: u16,
    pub value: DcpValue,
}

impl DcpBlock {
    pub fn new(value: DcpValue) -> DcpBlock {
        DcpBlock { prefix: 0, value }
    }
    pub fn with_info(value: DcpValue, block_info: u16) -> DcpBlock {
        DcpBlock {
            prefix: block_info,
            value,
        }
    }
    pub fn with_qualifier(value: DcpValue, qualifier: u16) -> DcpBlock {
        DcpBlock {
            prefix: qualifier,
            value,
        }
    }
    pub fn option_suboption(&self) -> (u8, u8) {
        self.value.option_suboption()
    }
}

impl From<DcpValue> for DcpBlock {
    fn from(v: DcpValue) -> Self {
        DcpBlock::new(v)
    }
}

/// Does a block of option `opt` carry a BlockInfo/BlockQualifier word in this service
/// context? (BlockInfo: Identify and Get responses, Hello requests; BlockQualifier: Set
/// requests; Control blocks only in Set requests; AllSelector and manufacturer options never.)
pub fn has_prefix(service: ServiceId, ty: ServiceType, opt: u8) -> bool {
    let info = matches!(
        (service, ty.is_response()),
        (ServiceId::Identify, true) | (ServiceId::Get, true) | (ServiceId::Hello, false)
    );
    let qualifier = service == ServiceId::Set && !ty.is_response();
    match opt {
        option::IP | option::DEVICE_PROPERTIES | option::DHCP | option::DEVICE_INITIATIVE => {
            info || qualifier
        }
        option::CONTROL => qualifier,
        _ => false,
    }
}

/// A DCP PDU (header and blocks).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct DcpRepr {
    pub service_id: ServiceId,
    pub service_type: ServiceType,
    pub xid: u32,
    /// ResponseDelayFactor in Identify requests (0/1 = no delay; see
    /// `machine::dcp_delay`); the reserved field elsewhere (kept for byte-exact round trips).
    pub response_delay: u16,
    /// Blocks; in a Get request, bare selectors: only `value.option_suboption()` is sent.
    pub blocks: Vec<DcpBlock>,
}

impl DcpRepr {
    /// Parse a DCP PDU (the bytes after the FrameID; trailing Ethernet padding is ignored).
    /// Fuzz entry point for DCP.
    pub fn parse(pdu: &[u8]) -> Result<DcpRepr> {
        let mut r = Reader::new(pdu);
        let sid = r.u8()?;
        let sty = r.u8()?;
        let xid = r.u32()?;
        let response_delay = r.u16()?;
        let data_len = r.u16()? as usize;
        let service_id = ServiceId::from_u8(sid).ok_or(Error::Unsupported("DCP ServiceID"))?;
        let service_type =
            ServiceType::from_u8(sty).ok_or(Error::Unsupported("DCP ServiceType"))?;
        let data = r.bytes(data_len)?;
        let mut r = Reader::new(data);
        let mut blocks = Vec::new();
        if service_id == ServiceId::Get && service_type == ServiceType::Request {
            while !r.is_empty() {
                let opt = r.u8()?;
                let sub = r.u8()?;
                blocks.push(DcpBlock::new(DcpValue::Other {
                    option: opt,
                    suboption: sub,
                    data: Vec::new(),
                }));
            }
        } else {
            while !r.is_empty() {
                let opt = r.u8()?;
                let sub = r.u8()?;
                let len = r.u16()? as usize;
                let body = r.bytes(len)?;
                let (prefix, value) = if has_prefix(service_id, service_type, opt) {
                    if body.len() < 2 {
                        return Err(Error::Malformed("DCP block shorter than its prefix"));
                    }
                    (u16::from_be_bytes([body[0], body[1]]), &body[2..])
                } else {
                    (0, body)
                };
                blocks.push(DcpBlock {
                    prefix,
                    value: DcpValue::decode(opt, sub, value),
                });
                if len % 2 == 1 && !r.is_empty() {
                    r.skip(1)?;
                }
            }
        }
        Ok(DcpRepr {
            service_id,
            service_type,
            xid,
            response_delay,
            blocks,
        })
    }

    /// Parse a complete Ethernet frame carrying a DCP PDU. Fails with `Unsupported` when the
    /// frame is not PROFINET RT or its FrameID is not a DCP one.
    pub fn parse_frame(frame: &[u8]) -> Result<(EthernetRepr, FrameId, DcpRepr)> {
        let (eth, id, pdu) = rt::parse_rt_frame(frame)?;
        if !id.is_dcp() {
            return Err(Error::Unsupported("FrameID is not DCP"));
        }
        Ok((eth, id, DcpRepr::parse(pdu)?))
    }

    fn is_get_request(&self) -> bool {
        self.service_id == ServiceId::Get && self.service_type == ServiceType::Request
    }

    /// Length of the block area (DCPDataLength), padding included.
    pub fn data_len(&self) -> usize {
        if self.is_get_request() {
            return self.blocks.len().saturating_mul(2);
        }
        self.blocks
            .iter()
            .map(|b| {
                let (opt, _) = b.option_suboption();
                let p = if has_prefix(self.service_id, self.service_type, opt) {
                    2
                } else {
                    0
                };
                let l = p + b.value.data_len();
                4 + l + (l & 1)
            })
            .fold(0usize, |a, n| a.saturating_add(n))
    }

    /// Length of the PDU (header and blocks).
    pub fn buffer_len(&self) -> usize {
        HEADER_LEN.saturating_add(self.data_len())
    }

    /// Emit the PDU (header and blocks, without FrameID). Fails when a block or the whole data
    /// area does not fit its 16-bit length field.
    pub fn emit(&self) -> Result<Vec<u8>> {
        let data_len = u16::try_from(self.data_len())
            .map_err(|_| Error::Malformed("DCPDataLength exceeds 65535"))?;
        let mut w = Writer::with_capacity(self.buffer_len());
        w.u8(self.service_id as u8)
            .u8(self.service_type as u8)
            .u32(self.xid)
            .u16(self.response_delay)
            .u16(data_len);
        for b in &self.blocks {
            let (opt, sub) = b.option_suboption();
            w.u8(opt).u8(sub);
            if self.is_get_request() {
                continue;
            }
            let prefixed = has_prefix(self.service_id, self.service_type, opt);
            let l = usize::from(prefixed) * 2 + b.value.data_len();
            let l16 =
                u16::try_from(l).map_err(|_| Error::Malformed("DCPBlockLength exceeds 65535"))?;
            w.u16(l16);
            if prefixed {
                w.u16(b.prefix);
            }
            b.value.encode(&mut w);
            if l % 2 == 1 {
                w.u8(0);
            }
        }
        Ok(w.into_inner())
    }

    /// The FrameID this PDU travels with.
    pub fn frame_id(&self) -> FrameId {
        match (self.service_id, self.service_type) {
            (ServiceId::Identify, ServiceType::Request) => FrameId::DCP_IDENTIFY_REQUEST,
            (ServiceId::Identify, _) => FrameId::DCP_IDENTIFY_RESPONSE,
            (ServiceId::Hello, _) => FrameId::DCP_HELLO,
            _ => FrameId::DCP_GET_SET,
        }
    }

    /// RT payload: FrameID followed by the PDU.
    pub fn emit_rt_payload(&self) -> Result<Vec<u8>> {
        let pdu = self.emit()?;
        let mut v = Vec::with_capacity(pdu.len() + 2);
        v.extend_from_slice(&self.frame_id().0.to_be_bytes());
        v.extend_from_slice(&pdu);
        Ok(v)
    }

    /// A complete Ethernet frame (EtherType forced to 0x8892), padded to 60 bytes.
    pub fn build_frame(
        &self,
        dst: MacAddr,
        src: MacAddr,
        vlan: Option<ethernet::VlanTag>,
    ) -> Result<Vec<u8>> {
        let eth = EthernetRepr {
            dst,
            src,
            vlan,
            ethertype: ethernet::ethertype::PROFINET,
        };
        Ok(eth.build(&self.emit_rt_payload()?))
    }

    // ----- constructors -----

    fn request(
        service_id: ServiceId,
        xid: u32,
        response_delay: u16,
        blocks: Vec<DcpBlock>,
    ) -> DcpRepr {
        DcpRepr {
            service_id,
            service_type: ServiceType::Request,
            xid,
            response_delay,
            blocks,
        }
    }

    /// Identify request with the given filter values (send to [`MacAddr::DCP_IDENTIFY`]).
    pub fn identify_request(xid: u32, response_delay: u16, filters: Vec<DcpValue>) -> DcpRepr {
        Self::request(
            ServiceId::Identify,
            xid,
            response_delay,
            filters.into_iter().map(DcpBlock::new).collect(),
        )
    }

    /// Identify-all request (AllSelector filter).
    pub fn identify_request_all(xid: u32, response_delay: u16) -> DcpRepr {
        Self::identify_request(xid, response_delay, vec![DcpValue::AllSelector])
    }

    /// Identify request filtering on NameOfStation.
    pub fn identify_request_by_name(
        xid: u32,
        name: &NameOfStation,
        response_delay: u16,
    ) -> DcpRepr {
        Self::identify_request(
            xid,
            response_delay,
            vec![DcpValue::NameOfStation(name.as_bytes().to_vec())],
        )
    }

    /// Identify request filtering on AliasName ("port-xyz.<neighbour station>").
    pub fn identify_request_by_alias(xid: u32, alias: &[u8], response_delay: u16) -> DcpRepr {
        Self::identify_request(
            xid,
            response_delay,
            vec![DcpValue::AliasName(alias.to_vec())],
        )
    }

    /// Identify response; `blocks` carry their BlockInfo in `prefix`.
    pub fn identify_response(xid: u32, blocks: Vec<DcpBlock>) -> DcpRepr {
        DcpRepr {
            service_id: ServiceId::Identify,
            service_type: ServiceType::ResponseSuccess,
            xid,
            response_delay: 0,
            blocks,
        }
    }

    /// Get request for the given (option, suboption) pairs.
    pub fn get_request(xid: u32, selectors: &[(u8, u8)]) -> DcpRepr {
        let blocks = selectors
            .iter()
            .map(|&(option, suboption)| {
                DcpBlock::new(DcpValue::Other {
                    option,
                    suboption,
                    data: Vec::new(),
                })
            })
            .collect();
        Self::request(ServiceId::Get, xid, 0, blocks)
    }

    /// Get response (values with BlockInfo; failures as Control/Response blocks).
    pub fn get_response(xid: u32, blocks: Vec<DcpBlock>) -> DcpRepr {
        DcpRepr {
            service_id: ServiceId::Get,
            service_type: ServiceType::ResponseSuccess,
            xid,
            response_delay: 0,
            blocks,
        }
    }

    /// Set request; `blocks` carry their BlockQualifier in `prefix`.
    pub fn set_request(xid: u32, blocks: Vec<DcpBlock>) -> DcpRepr {
        Self::request(ServiceId::Set, xid, 0, blocks)
    }

    fn qualifier(permanent: bool) -> u16 {
        if permanent {
            qualifier::PERMANENT
        } else {
            qualifier::TEMPORARY
        }
    }

    /// Set NameOfStation (temporary or permanent).
    pub fn set_name(xid: u32, name: &NameOfStation, permanent: bool) -> DcpRepr {
        Self::set_request(
            xid,
            vec![DcpBlock::with_qualifier(
                DcpValue::NameOfStation(name.as_bytes().to_vec()),
                Self::qualifier(permanent),
            )],
        )
    }

    /// Set the IP parameter (temporary or permanent).
    pub fn set_ip(
        xid: u32,
        ip: Ipv4Addr,
        mask: Ipv4Addr,
        gateway: Ipv4Addr,
        permanent: bool,
    ) -> DcpRepr {
        Self::set_request(
            xid,
            vec![DcpBlock::with_qualifier(
                DcpValue::IpParameter { ip, mask, gateway },
                Self::qualifier(permanent),
            )],
        )
    }

    /// Control/Signal "flash once".
    pub fn set_signal(xid: u32) -> DcpRepr {
        Self::set_request(
            xid,
            vec![DcpBlock::with_qualifier(
                DcpValue::Signal {
                    value: SIGNAL_FLASH_ONCE,
                },
                0,
            )],
        )
    }

    /// Control/ResetToFactory with a mode from [`qualifier`] (e.g. `RESET_COMMUNICATION_PARAMETER`).
    pub fn set_reset_to_factory(xid: u32, mode: u16) -> DcpRepr {
        Self::set_request(
            xid,
            vec![DcpBlock::with_qualifier(DcpValue::ResetToFactory, mode)],
        )
    }

    /// Set response: one Control/Response block per handled (option, suboption).
    pub fn set_response(xid: u32, results: &[(u8, u8, BlockError)]) -> DcpRepr {
        DcpRepr {
            service_id: ServiceId::Set,
            service_type: ServiceType::ResponseSuccess,
            xid,
            response_delay: 0,
            blocks: results
                .iter()
                .map(|&(option, suboption, error)| {
                    DcpBlock::new(DcpValue::Response {
                        option,
                        suboption,
                        error,
                    })
                })
                .collect(),
        }
    }

    /// Hello request (send to [`MacAddr::DCP_HELLO`]); `blocks` carry BlockInfo.
    pub fn hello(xid: u32, blocks: Vec<DcpBlock>) -> DcpRepr {
        Self::request(ServiceId::Hello, xid, 0, blocks)
    }

    // ----- queries -----

    /// First block with this (option, suboption).
    pub fn find(&self, opt: u8, sub: u8) -> Option<&DcpBlock> {
        self.blocks
            .iter()
            .find(|b| b.option_suboption() == (opt, sub))
    }

    /// The NameOfStation value, if any block carries one.
    pub fn name_of_station(&self) -> Option<&[u8]> {
        self.blocks.iter().find_map(|b| match &b.value {
            DcpValue::NameOfStation(n) => Some(n.as_slice()),
            _ => None,
        })
    }

    /// Does an Identify request with these filter blocks select a device whose own values are
    /// `own`? Every filter must be AllSelector or equal one of `own` (same option, suboption
    /// and data). An empty filter list matches nothing.
    pub fn identify_filter_matches(&self, own: &[DcpValue]) -> bool {
        !self.blocks.is_empty()
            && self
                .blocks
                .iter()
                .all(|f| matches!(f.value, DcpValue::AllSelector) || own.contains(&f.value))
    }
}

/// A validated NameOfStation (IEC 61158-6-10 §4.3.1.4.16; p-net `pf_cmina_is_stationname_valid`).
///
/// Rules: 1..=240 bytes; labels separated by '.', each 1..=63 bytes of `[a-z0-9-]`, not starting
/// or ending with '-'; "--" only as the RFC 5890 A-label prefix "xn--" at the start of a label
/// (the punycode after it is not decoded); the first label is not "port-xyz" or
/// "port-xyz-abcde" (digits); the name is not of the form "a.b.c.d" with a..d = 0..999.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NameOfStation(String);

/// Why a NameOfStation is invalid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameError {
    Empty,
    TooLong,
    EmptyLabel,
    LabelTooLong,
    InvalidChar,
    HyphenAtLabelEdge,
    DoubleHyphen,
    PortName,
    IpAddressLike,
}

impl fmt::Display for NameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = match self {
            NameError::Empty => "empty name",
            NameError::TooLong => "longer than 240 characters",
            NameError::EmptyLabel => "empty label",
            NameError::LabelTooLong => "label longer than 63 characters",
            NameError::InvalidChar => "only a-z, 0-9, '-' and '.' are allowed",
            NameError::HyphenAtLabelEdge => "label starts or ends with '-'",
            NameError::DoubleHyphen => "\"--\" is only allowed as the \"xn--\" prefix",
            NameError::PortName => "first label has the form port-xyz or port-xyz-abcde",
            NameError::IpAddressLike => "name has the form n.n.n.n",
        };
        f.write_str(s)
    }
}

impl std::error::Error for NameError {}

fn all_digits(s: &[u8]) -> bool {
    s.iter().all(u8::is_ascii_digit)
}

impl NameOfStation {
    pub const MAX_LEN: usize = 240;
    pub const MAX_LABEL_LEN: usize = 63;

    /// Validate `name`.
    pub fn new(name: &str) -> core::result::Result<NameOfStation, NameError> {
        Self::validate(name.as_bytes())?;
        Ok(NameOfStation(name.to_owned()))
    }

    /// Validate raw wire bytes.
    pub fn from_bytes(b: &[u8]) -> core::result::Result<NameOfStation, NameError> {
        Self::validate(b)?;
        // Validation admits ASCII only.
        Ok(NameOfStation(String::from_utf8_lossy(b).into_owned()))
    }

    /// Check the rules without building a value.
    pub fn validate(b: &[u8]) -> core::result::Result<(), NameError> {
        if b.is_empty() {
            return Err(NameError::Empty);
        }
        if b.len() > Self::MAX_LEN {
            return Err(NameError::TooLong);
        }
        let mut n_labels = 0usize;
        let mut ip_like = true;
        for (i, label) in b.split(|&c| c == b'.').enumerate() {
            n_labels += 1;
            if label.is_empty() {
                return Err(NameError::EmptyLabel);
            }
            if label.len() > Self::MAX_LABEL_LEN {
                return Err(NameError::LabelTooLong);
            }
            if !label
                .iter()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
            {
                return Err(NameError::InvalidChar);
            }
            if label.first() == Some(&b'-') || label.last() == Some(&b'-') {
                return Err(NameError::HyphenAtLabelEdge);
            }
            for (j, w) in label.windows(2).enumerate() {
                if w == b"--" && !(j == 2 && label.starts_with(b"xn--")) {
                    return Err(NameError::DoubleHyphen);
                }
            }
            if i == 0 {
                if let Some(rest) = label.strip_prefix(b"port-") {
                    let port3 = rest.len() == 3 && all_digits(rest);
                    let port3_5 = rest.len() == 9
                        && all_digits(&rest[..3])
                        && rest[3] == b'-'
                        && all_digits(&rest[4..]);
                    if port3 || port3_5 {
                        return Err(NameError::PortName);
                    }
                }
            }
            if !(label.len() <= 3 && all_digits(label)) {
                ip_like = false;
            }
        }
        if n_labels == 4 && ip_like {
            return Err(NameError::IpAddressLike);
        }
        Ok(())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
    pub fn as_bytes(&self) -> &[u8] {
        self.0.as_bytes()
    }
}

impl fmt::Display for NameOfStation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for NameOfStation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "NameOfStation({:?})", self.0)
    }
}

impl core::str::FromStr for NameOfStation {
    type Err = NameError;
    fn from_str(s: &str) -> core::result::Result<Self, NameError> {
        NameOfStation::new(s)
    }
}

impl TryFrom<&str> for NameOfStation {
    type Error = NameError;
    fn try_from(s: &str) -> core::result::Result<Self, NameError> {
        NameOfStation::new(s)
    }
}

impl AsRef<str> for NameOfStation {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests;

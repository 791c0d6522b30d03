//! One DCP block: [`BlockError`], the decoded value [`DcpValue`], [`DcpBlock`] (value plus
//! BlockInfo/BlockQualifier word) and [`has_prefix`], which says where that word is present.

use super::{option, suboption, ServiceId, ServiceType};
use crate::wire::ethernet::MacAddr;
use crate::wire::field::Writer;
use crate::wire::{Emit, Result};
use core::fmt;
use std::net::Ipv4Addr;

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
    fn encode(&self, w: &mut Writer) {
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

/// The data bytes of a block (after the prefix; the block header and prefix depend on the
/// service, so [`super::DcpRepr`] writes those).
impl Emit for DcpValue {
    fn buffer_len(&self) -> usize {
        self.data_len()
    }

    fn emit(&self, w: &mut Writer) -> Result<()> {
        self.encode(w);
        Ok(())
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

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
//!
//! Layout: the header ([`HEADER_LEN`], [`ServiceId`], [`ServiceType`]) here; `codes` (option
//! numbers), `block` (values and blocks), `repr` (the PDU), `services` (constructors per
//! service), `name` (NameOfStation).

mod block;
mod codes;
mod name;
mod repr;
mod services;

pub use block::{has_prefix, BlockError, DcpBlock, DcpValue};
pub use codes::{device_role, ip_block_info, option, qualifier, suboption, SIGNAL_FLASH_ONCE};
pub use name::{NameError, NameOfStation};
pub use repr::DcpRepr;

/// Length of the DCP header (ServiceID .. DCPDataLength).
pub const HEADER_LEN: usize = 10;

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

#[cfg(test)]
mod tests;

//! Constructors of the DCP PDUs per service: Identify, Get, Set and Hello requests and their
//! responses.

use super::{
    qualifier, BlockError, DcpBlock, DcpRepr, DcpValue, NameOfStation, ServiceId, ServiceType,
    SIGNAL_FLASH_ONCE,
};
#[cfg(doc)]
use crate::wire::ethernet::MacAddr;
use std::net::Ipv4Addr;

impl DcpRepr {
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
}

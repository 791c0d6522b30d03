//! LLDP in the daemon: the agent itself is the protocol crate's sans-IO
//! [`pn_protocol::machine::lldp::LldpAgent`] (run by the L2 thread, `l2/`); this file holds
//! what the daemon adds around it: the neighbour as the API shows it (JSON field names, the
//! wall-clock time of its last frame), and the translation of the daemon's configuration and
//! link monitor into the agent's inputs.

use pn_protocol::machine::lldp::{self as agent, PortState, SystemIdentity};
use serde::Serialize;

use crate::dataplane::Im0Config;

use super::link::LinkInfo;

pub use pn_protocol::machine::lldp::LldpAgent;

/// The PROFINET system description of this device's I&M0 identity.
pub fn system_description(im0: &Im0Config) -> String {
    agent::system_description(&SystemIdentity {
        product_name: &im0.product_name,
        order_id: &im0.order_id,
        serial_number: &im0.serial_number,
        hardware_revision: im0.hardware_revision,
        software_revision: im0.software_revision,
    })
}

/// What LLDP announces of the link the monitor sees.
pub fn port_state(link: &LinkInfo) -> PortState {
    PortState {
        up: link.up,
        mau_type: link.mau_type,
        autoneg: link.lldp_autoneg_bits(),
        pmd_advertised: link.lldp_pmd_advertised(),
    }
}

/// The neighbour on our port, as shown by the API (`GET /api/diag`, `lldpNeighbour`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LldpNeighbour {
    /// Source MAC address of its LLDP frames.
    pub src_mac: String,
    pub chassis_id_subtype: u8,
    /// Chassis ID as text (MAC address subtype: "aa:bb:..").
    pub chassis_id: String,
    pub port_id_subtype: u8,
    pub port_id: String,
    /// PROFINET station name and port of the neighbour (from Port ID / Chassis ID).
    pub station_name: String,
    pub port_name: String,
    pub system_name: String,
    pub port_description: String,
    /// First IPv4 management address.
    pub management_address: String,
    /// PROFINET Chassis MAC TLV.
    pub chassis_mac: String,
    /// TTL announced by the neighbour, seconds.
    pub ttl: u16,
    /// Milliseconds since its last LLDPDU.
    pub age_ms: u64,
    /// Wall-clock time of its last LLDPDU (RFC 3339).
    #[serde(rename = "lastSeen")]
    pub last_seen_at: String,
    /// The alias name DCP Identify by AliasName matches.
    pub alias_name: String,
}

impl LldpNeighbour {
    /// The agent's neighbour, its last frame `age` ago by the wall clock now.
    pub fn from_agent(n: agent::LldpNeighbour) -> LldpNeighbour {
        let age = std::time::Duration::from_millis(n.age_ms);
        let last_seen_at = crate::util::rfc3339(
            std::time::SystemTime::now()
                .checked_sub(age)
                .unwrap_or(std::time::UNIX_EPOCH),
        );
        LldpNeighbour {
            src_mac: n.src_mac,
            chassis_id_subtype: n.chassis_id_subtype,
            chassis_id: n.chassis_id,
            port_id_subtype: n.port_id_subtype,
            port_id: n.port_id,
            station_name: n.station_name,
            port_name: n.port_name,
            system_name: n.system_name,
            port_description: n.port_description,
            management_address: n.management_address,
            chassis_mac: n.chassis_mac,
            ttl: n.ttl,
            age_ms: n.age_ms,
            last_seen_at,
            alias_name: n.alias_name,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_system_description_is_made_of_the_im0_identity() {
        let im0 = Im0Config {
            order_id: "PN-DEVICE-1".into(),
            serial_number: "00000001".into(),
            hardware_revision: 1,
            software_revision: ('V', 1, 0, 0),
            product_name: "pn-device".into(),
            ..Default::default()
        };
        let s = system_description(&im0);
        assert!(s.starts_with("pn-device "), "{s}");
        assert!(s.contains("PN-DEVICE-1"));
        assert!(s.ends_with("V  1  0  0"));
    }
}

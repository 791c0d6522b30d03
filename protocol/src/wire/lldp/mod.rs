//! LLDP (IEEE 802.1AB) TLVs as a PROFINET device sends and receives them (EtherType 0x88CC,
//! destination 01:80:C2:00:00:0E).
//!
//! A TLV is a 16-bit header (type: 7 bits, length: 9 bits) followed by `length` bytes. The
//! LLDPDU ends with the End TLV (type 0, length 0); anything after it is Ethernet padding.
//! Organizationally specific TLVs (type 127) start with a 3-byte OUI and a subtype: PROFINET
//! (OUI 00:0E:CF, IEC 61158-6-10) and IEEE 802.3 (OUI 00:12:0F) are decoded.
//! Sources: Wireshark `epan/dissectors/packet-lldp.c`; p-net `src/common/pf_lldp.c`.
//!
//! Known TLVs whose length does not fit their layout, and unknown TLVs, are kept verbatim
//! ([`Tlv::Other`], [`Tlv::OrgSpecific`], [`PnTlv::Other`]), so parse-emit is byte-exact.
//!
//! Fuzz entry point: [`LldpRepr::parse`] (the LLDPDU after the EtherType).

use crate::wire::dcp::NameOfStation;
use crate::wire::ethernet::{self, EthernetRepr, MacAddr};
use crate::wire::field::{Reader, Writer};
use crate::wire::{Emit, Error, Result};
use std::net::Ipv4Addr;

/// TLV type numbers.
pub mod tlv_type {
    pub const END: u8 = 0;
    pub const CHASSIS_ID: u8 = 1;
    pub const PORT_ID: u8 = 2;
    pub const TTL: u8 = 3;
    pub const PORT_DESCRIPTION: u8 = 4;
    pub const SYSTEM_NAME: u8 = 5;
    pub const SYSTEM_DESCRIPTION: u8 = 6;
    pub const SYSTEM_CAPABILITIES: u8 = 7;
    pub const MANAGEMENT_ADDRESS: u8 = 8;
    pub const ORG_SPECIFIC: u8 = 127;
}

/// Chassis ID subtypes (802.1AB).
pub mod chassis_subtype {
    pub const CHASSIS_COMPONENT: u8 = 1;
    pub const INTERFACE_ALIAS: u8 = 2;
    pub const PORT_COMPONENT: u8 = 3;
    pub const MAC_ADDRESS: u8 = 4;
    pub const NETWORK_ADDRESS: u8 = 5;
    pub const INTERFACE_NAME: u8 = 6;
    pub const LOCALLY_ASSIGNED: u8 = 7;
}

/// Port ID subtypes (802.1AB).
pub mod port_subtype {
    pub const INTERFACE_ALIAS: u8 = 1;
    pub const PORT_COMPONENT: u8 = 2;
    pub const MAC_ADDRESS: u8 = 3;
    pub const NETWORK_ADDRESS: u8 = 4;
    pub const INTERFACE_NAME: u8 = 5;
    pub const AGENT_CIRCUIT_ID: u8 = 6;
    pub const LOCALLY_ASSIGNED: u8 = 7;
}

/// Management address subtypes (IANA address family) and interface numbering subtypes.
pub mod mgmt {
    pub const ADDR_IPV4: u8 = 1;
    pub const ADDR_IPV6: u8 = 2;
    pub const IF_UNKNOWN: u8 = 1;
    pub const IF_INDEX: u8 = 2;
    pub const IF_SYSTEM_PORT: u8 = 3;
}

/// PROFINET OUI.
pub const OUI_PROFINET: [u8; 3] = [0x00, 0x0e, 0xcf];
/// IEEE 802.3 OUI.
pub const OUI_IEEE_802_3: [u8; 3] = [0x00, 0x12, 0x0f];

/// PROFINET organizationally specific subtypes (Wireshark packet-lldp.c; p-net pf_lldp.c).
pub mod pn_subtype {
    pub const MEASURED_DELAY: u8 = 1;
    pub const PORT_STATUS: u8 = 2;
    pub const PORT_ALIAS: u8 = 3;
    pub const MRP_PORT_STATUS: u8 = 4;
    pub const CHASSIS_MAC: u8 = 5;
    pub const PTCP_STATUS: u8 = 6;
    pub const MAU_TYPE_EXTENSION: u8 = 7;
    pub const MRP_INTERCONNECTION_PORT_STATUS: u8 = 8;
}

/// IEEE 802.3 subtypes.
pub mod ieee_subtype {
    pub const MAC_PHY: u8 = 1;
    pub const MAX_FRAME_SIZE: u8 = 4;
}

/// Operational MAU types (RFC 4836 / IANA-MAU-MIB dot3MauType).
pub mod mau_type {
    pub const TYPE_10BASE_T_HD: u16 = 10;
    pub const TYPE_10BASE_T_FD: u16 = 11;
    pub const TYPE_100BASE_TX_HD: u16 = 15;
    /// 0x0010.
    pub const TYPE_100BASE_TX_FD: u16 = 16;
    pub const TYPE_100BASE_FX_FD: u16 = 18;
    pub const TYPE_1000BASE_X_FD: u16 = 22;
    pub const TYPE_1000BASE_T_HD: u16 = 29;
    /// 0x001E.
    pub const TYPE_1000BASE_T_FD: u16 = 30;
    /// 0x0036 (IANA-MAU-MIB, added after RFC 4836; Wireshark 4.0 shows it as unknown).
    pub const TYPE_10GBASE_T: u16 = 54;
}

/// Auto-negotiation support/status bits of the MAC/PHY TLV.
pub mod autoneg {
    pub const SUPPORTED: u8 = 0x01;
    pub const ENABLED: u8 = 0x02;
}

/// PMD auto-negotiation advertised capability bits (as Wireshark masks them).
pub mod pmd_cap {
    pub const OTHER: u16 = 0x8000;
    pub const B10_T: u16 = 0x4000;
    pub const B10_T_FD: u16 = 0x2000;
    pub const B100_T4: u16 = 0x1000;
    pub const B100_TX: u16 = 0x0800;
    pub const B100_TX_FD: u16 = 0x0400;
    pub const B100_T2: u16 = 0x0200;
    pub const B100_T2_FD: u16 = 0x0100;
    pub const FDX_PAUSE: u16 = 0x0080;
    pub const FDX_APAUSE: u16 = 0x0040;
    pub const FDX_SPAUSE: u16 = 0x0020;
    pub const FDX_BPAUSE: u16 = 0x0010;
    pub const B1000_X: u16 = 0x0008;
    pub const B1000_X_FD: u16 = 0x0004;
    pub const B1000_T: u16 = 0x0002;
    pub const B1000_T_FD: u16 = 0x0001;
}

/// System capability bits.
pub mod capability {
    pub const OTHER: u16 = 0x0001;
    pub const REPEATER: u16 = 0x0002;
    pub const BRIDGE: u16 = 0x0004;
    pub const WLAN_AP: u16 = 0x0008;
    pub const ROUTER: u16 = 0x0010;
    pub const TELEPHONE: u16 = 0x0020;
    pub const DOCSIS: u16 = 0x0040;
    pub const STATION_ONLY: u16 = 0x0080;
}

/// PROFINET organizationally specific TLV contents (after OUI and subtype).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum PnTlv {
    /// Subtype 1: measured delay values in ns (0 = unknown).
    MeasuredDelay {
        rx_local: u32,
        rx_remote: u32,
        tx_local: u32,
        tx_remote: u32,
        cable_local: u32,
    },
    /// Subtype 2: RTClass2 and RTClass3 port status (0 = off).
    PortStatus { rtc2: u16, rtc3: u16 },
    /// Subtype 5: chassis MAC address (the interface MAC).
    ChassisMac(MacAddr),
    /// Any other subtype (port alias, MRP port status, PTCP status, ...), verbatim.
    Other { subtype: u8, data: Vec<u8> },
}

impl PnTlv {
    fn decode(subtype: u8, d: &[u8]) -> PnTlv {
        let u32at = |i: usize| u32::from_be_bytes([d[i], d[i + 1], d[i + 2], d[i + 3]]);
        match (subtype, d.len()) {
            (pn_subtype::MEASURED_DELAY, 20) => PnTlv::MeasuredDelay {
                rx_local: u32at(0),
                rx_remote: u32at(4),
                tx_local: u32at(8),
                tx_remote: u32at(12),
                cable_local: u32at(16),
            },
            (pn_subtype::PORT_STATUS, 4) => PnTlv::PortStatus {
                rtc2: u16::from_be_bytes([d[0], d[1]]),
                rtc3: u16::from_be_bytes([d[2], d[3]]),
            },
            (pn_subtype::CHASSIS_MAC, 6) => match MacAddr::from_bytes(d) {
                Ok(m) => PnTlv::ChassisMac(m),
                Err(_) => PnTlv::Other {
                    subtype,
                    data: d.to_vec(),
                },
            },
            _ => PnTlv::Other {
                subtype,
                data: d.to_vec(),
            },
        }
    }
    fn subtype(&self) -> u8 {
        match self {
            PnTlv::MeasuredDelay { .. } => pn_subtype::MEASURED_DELAY,
            PnTlv::PortStatus { .. } => pn_subtype::PORT_STATUS,
            PnTlv::ChassisMac(_) => pn_subtype::CHASSIS_MAC,
            PnTlv::Other { subtype, .. } => *subtype,
        }
    }
    fn value_len(&self) -> usize {
        match self {
            PnTlv::MeasuredDelay { .. } => 20,
            PnTlv::PortStatus { .. } => 4,
            PnTlv::ChassisMac(_) => 6,
            PnTlv::Other { data, .. } => data.len(),
        }
    }
    fn encode(&self, w: &mut Writer) {
        match self {
            PnTlv::MeasuredDelay {
                rx_local,
                rx_remote,
                tx_local,
                tx_remote,
                cable_local,
            } => {
                w.u32(*rx_local)
                    .u32(*rx_remote)
                    .u32(*tx_local)
                    .u32(*tx_remote)
                    .u32(*cable_local);
            }
            PnTlv::PortStatus { rtc2, rtc3 } => {
                w.u16(*rtc2).u16(*rtc3);
            }
            PnTlv::ChassisMac(m) => {
                w.bytes(&m.0);
            }
            PnTlv::Other { data, .. } => {
                w.bytes(data);
            }
        }
    }
}

/// One LLDP TLV.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Tlv {
    End,
    ChassisId {
        subtype: u8,
        id: Vec<u8>,
    },
    PortId {
        subtype: u8,
        id: Vec<u8>,
    },
    /// Time to live in seconds (PROFINET devices send 20).
    Ttl(u16),
    PortDescription(Vec<u8>),
    SystemName(Vec<u8>),
    SystemDescription(Vec<u8>),
    SystemCapabilities {
        system: u16,
        enabled: u16,
    },
    ManagementAddress {
        /// Address family ([`mgmt::ADDR_IPV4`], ...).
        addr_subtype: u8,
        addr: Vec<u8>,
        /// Interface numbering subtype ([`mgmt::IF_INDEX`], ...).
        if_subtype: u8,
        if_number: u32,
        /// Object identifier, BER-encoded (may be empty).
        oid: Vec<u8>,
    },
    /// PROFINET organizationally specific TLV (OUI 00:0E:CF).
    Profinet(PnTlv),
    /// IEEE 802.3 MAC/PHY configuration/status (OUI 00:12:0F, subtype 1).
    MacPhy {
        autoneg: u8,
        pmd_advertised: u16,
        mau_type: u16,
    },
    /// Other organizationally specific TLV, verbatim.
    OrgSpecific {
        oui: [u8; 3],
        subtype: u8,
        data: Vec<u8>,
    },
    /// Any other TLV (or a known type whose length does not fit), verbatim.
    Other {
        tlv_type: u8,
        data: Vec<u8>,
    },
}

impl Tlv {
    fn decode(t: u8, d: &[u8]) -> Tlv {
        let other = || Tlv::Other {
            tlv_type: t,
            data: d.to_vec(),
        };
        match t {
            tlv_type::END if d.is_empty() => Tlv::End,
            tlv_type::CHASSIS_ID if !d.is_empty() => Tlv::ChassisId {
                subtype: d[0],
                id: d[1..].to_vec(),
            },
            tlv_type::PORT_ID if !d.is_empty() => Tlv::PortId {
                subtype: d[0],
                id: d[1..].to_vec(),
            },
            tlv_type::TTL if d.len() == 2 => Tlv::Ttl(u16::from_be_bytes([d[0], d[1]])),
            tlv_type::PORT_DESCRIPTION => Tlv::PortDescription(d.to_vec()),
            tlv_type::SYSTEM_NAME => Tlv::SystemName(d.to_vec()),
            tlv_type::SYSTEM_DESCRIPTION => Tlv::SystemDescription(d.to_vec()),
            tlv_type::SYSTEM_CAPABILITIES if d.len() == 4 => Tlv::SystemCapabilities {
                system: u16::from_be_bytes([d[0], d[1]]),
                enabled: u16::from_be_bytes([d[2], d[3]]),
            },
            tlv_type::MANAGEMENT_ADDRESS => Self::decode_mgmt(d).unwrap_or_else(other),
            tlv_type::ORG_SPECIFIC if d.len() >= 4 => {
                let oui = [d[0], d[1], d[2]];
                let subtype = d[3];
                let rest = &d[4..];
                match (oui, subtype, rest.len()) {
                    (OUI_PROFINET, _, _) => Tlv::Profinet(PnTlv::decode(subtype, rest)),
                    (OUI_IEEE_802_3, ieee_subtype::MAC_PHY, 5) => Tlv::MacPhy {
                        autoneg: rest[0],
                        pmd_advertised: u16::from_be_bytes([rest[1], rest[2]]),
                        mau_type: u16::from_be_bytes([rest[3], rest[4]]),
                    },
                    _ => Tlv::OrgSpecific {
                        oui,
                        subtype,
                        data: rest.to_vec(),
                    },
                }
            }
            _ => other(),
        }
    }

    /// Management address: AddrStrLen u8 (= 1 + address length), AddrSubtype u8, address,
    /// IfSubtype u8, IfNumber u32, OidLen u8, OID.
    fn decode_mgmt(d: &[u8]) -> Option<Tlv> {
        let mut r = Reader::new(d);
        let str_len = r.u8().ok()? as usize;
        if str_len < 1 {
            return None;
        }
        let addr_subtype = r.u8().ok()?;
        let addr = r.bytes(str_len - 1).ok()?.to_vec();
        let if_subtype = r.u8().ok()?;
        let if_number = r.u32().ok()?;
        let oid_len = r.u8().ok()? as usize;
        let oid = r.bytes(oid_len).ok()?.to_vec();
        if !r.is_empty() || addr.len() > 31 || oid.len() > 128 {
            return None;
        }
        Some(Tlv::ManagementAddress {
            addr_subtype,
            addr,
            if_subtype,
            if_number,
            oid,
        })
    }

    pub fn tlv_type(&self) -> u8 {
        match self {
            Tlv::End => tlv_type::END,
            Tlv::ChassisId { .. } => tlv_type::CHASSIS_ID,
            Tlv::PortId { .. } => tlv_type::PORT_ID,
            Tlv::Ttl(_) => tlv_type::TTL,
            Tlv::PortDescription(_) => tlv_type::PORT_DESCRIPTION,
            Tlv::SystemName(_) => tlv_type::SYSTEM_NAME,
            Tlv::SystemDescription(_) => tlv_type::SYSTEM_DESCRIPTION,
            Tlv::SystemCapabilities { .. } => tlv_type::SYSTEM_CAPABILITIES,
            Tlv::ManagementAddress { .. } => tlv_type::MANAGEMENT_ADDRESS,
            Tlv::Profinet(_) | Tlv::MacPhy { .. } | Tlv::OrgSpecific { .. } => {
                tlv_type::ORG_SPECIFIC
            }
            Tlv::Other { tlv_type, .. } => *tlv_type,
        }
    }

    /// Number of value bytes `encode_value` writes.
    fn value_len(&self) -> usize {
        match self {
            Tlv::End => 0,
            Tlv::ChassisId { id, .. } | Tlv::PortId { id, .. } => 1 + id.len(),
            Tlv::Ttl(_) => 2,
            Tlv::PortDescription(b) | Tlv::SystemName(b) | Tlv::SystemDescription(b) => b.len(),
            Tlv::SystemCapabilities { .. } => 4,
            Tlv::ManagementAddress { addr, oid, .. } => 8 + addr.len() + oid.len(),
            Tlv::Profinet(p) => 4 + p.value_len(),
            Tlv::MacPhy { .. } => 9,
            Tlv::OrgSpecific { data, .. } => 4 + data.len(),
            Tlv::Other { data, .. } => data.len(),
        }
    }

    /// Encode the value bytes (after the TLV header).
    fn encode_value(&self, w: &mut Writer) -> Result<()> {
        match self {
            Tlv::End => {}
            Tlv::ChassisId { subtype, id } | Tlv::PortId { subtype, id } => {
                w.u8(*subtype).bytes(id);
            }
            Tlv::Ttl(t) => {
                w.u16(*t);
            }
            Tlv::PortDescription(b) | Tlv::SystemName(b) | Tlv::SystemDescription(b) => {
                w.bytes(b);
            }
            Tlv::SystemCapabilities { system, enabled } => {
                w.u16(*system).u16(*enabled);
            }
            Tlv::ManagementAddress {
                addr_subtype,
                addr,
                if_subtype,
                if_number,
                oid,
            } => {
                let sl = u8::try_from(addr.len() + 1)
                    .map_err(|_| Error::Malformed("management address too long"))?;
                let ol = u8::try_from(oid.len()).map_err(|_| Error::Malformed("OID too long"))?;
                w.u8(sl)
                    .u8(*addr_subtype)
                    .bytes(addr)
                    .u8(*if_subtype)
                    .u32(*if_number)
                    .u8(ol)
                    .bytes(oid);
            }
            Tlv::Profinet(p) => {
                w.bytes(&OUI_PROFINET).u8(p.subtype());
                p.encode(w);
            }
            Tlv::MacPhy {
                autoneg,
                pmd_advertised,
                mau_type,
            } => {
                w.bytes(&OUI_IEEE_802_3)
                    .u8(ieee_subtype::MAC_PHY)
                    .u8(*autoneg)
                    .u16(*pmd_advertised)
                    .u16(*mau_type);
            }
            Tlv::OrgSpecific { oui, subtype, data } => {
                w.bytes(oui).u8(*subtype).bytes(data);
            }
            Tlv::Other { data, .. } => {
                w.bytes(data);
            }
        }
        Ok(())
    }
}

/// Type/length word and value; fails for a type above 127 or a value longer than 511 bytes.
impl Emit for Tlv {
    fn buffer_len(&self) -> usize {
        2 + self.value_len()
    }

    fn emit(&self, w: &mut Writer) -> Result<()> {
        let t = self.tlv_type();
        if t > 127 {
            return Err(Error::Malformed("LLDP TLV type above 127"));
        }
        let at = w.len();
        w.u16(0);
        let len = self.encode_value(w).and_then(|()| match w.len() - at - 2 {
            n if n > 0x1ff => Err(Error::Malformed("LLDP TLV longer than 511 bytes")),
            n => Ok(n),
        });
        let len = match len {
            Ok(n) => n,
            Err(e) => {
                w.truncate(at);
                return Err(e);
            }
        };
        w.patch_u16(at, (u16::from(t) << 9) | len as u16);
        Ok(())
    }
}

/// An LLDPDU: the TLVs in order, normally ending with [`Tlv::End`].
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct LldpRepr {
    pub tlvs: Vec<Tlv>,
}

/// The TLVs in order (no padding).
impl Emit for LldpRepr {
    fn buffer_len(&self) -> usize {
        self.tlvs.buffer_len()
    }

    fn emit(&self, w: &mut Writer) -> Result<()> {
        self.tlvs.emit(w)
    }
}

impl LldpRepr {
    /// Parse an LLDPDU (bytes after the EtherType). Stops after the End TLV (the rest is
    /// padding); without an End TLV the TLVs must fill the buffer exactly. Fuzz entry point.
    pub fn parse(pdu: &[u8]) -> Result<LldpRepr> {
        let mut r = Reader::new(pdu);
        let mut tlvs = Vec::new();
        while !r.is_empty() {
            let h = r.u16()?;
            let t = (h >> 9) as u8;
            let len = (h & 0x1ff) as usize;
            let d = r.bytes(len)?;
            let tlv = Tlv::decode(t, d);
            let end = tlv == Tlv::End;
            tlvs.push(tlv);
            if end {
                break;
            }
        }
        Ok(LldpRepr { tlvs })
    }

    /// Parse a complete Ethernet frame with EtherType 0x88CC.
    pub fn parse_frame(frame: &[u8]) -> Result<(EthernetRepr, LldpRepr)> {
        let (eth, payload) = EthernetRepr::parse_frame(frame)?;
        if eth.ethertype != ethernet::ethertype::LLDP {
            return Err(Error::Unsupported("EtherType is not LLDP"));
        }
        Ok((eth, LldpRepr::parse(payload)?))
    }

    /// A complete frame to the LLDP multicast address from `src`, padded to 60 bytes.
    pub fn build_frame(&self, src: MacAddr) -> Result<Vec<u8>> {
        let eth = EthernetRepr {
            dst: MacAddr::LLDP_NEAREST_BRIDGE,
            src,
            vlan: None,
            ethertype: ethernet::ethertype::LLDP,
        };
        Ok(eth.build(&self.to_bytes()?))
    }

    pub fn chassis_id(&self) -> Option<(u8, &[u8])> {
        self.tlvs.iter().find_map(|t| match t {
            Tlv::ChassisId { subtype, id } => Some((*subtype, id.as_slice())),
            _ => None,
        })
    }

    pub fn port_id(&self) -> Option<(u8, &[u8])> {
        self.tlvs.iter().find_map(|t| match t {
            Tlv::PortId { subtype, id } => Some((*subtype, id.as_slice())),
            _ => None,
        })
    }

    pub fn ttl(&self) -> Option<u16> {
        self.tlvs.iter().find_map(|t| match t {
            Tlv::Ttl(v) => Some(*v),
            _ => None,
        })
    }

    pub fn chassis_mac(&self) -> Option<MacAddr> {
        self.tlvs.iter().find_map(|t| match t {
            Tlv::Profinet(PnTlv::ChassisMac(m)) => Some(*m),
            _ => None,
        })
    }

    /// The neighbour's NameOfStation and port name, as PROFINET derives them from Chassis ID
    /// and Port ID: in standard mode the Port ID is "port-xyz.<station>"; in legacy mode the
    /// Port ID is "port-xyz" and the Chassis ID (locally assigned) is the station name.
    /// Returns (station, port) as raw bytes.
    pub fn peer_station_and_port(&self) -> Option<(&[u8], &[u8])> {
        let (_, port) = self.port_id()?;
        if let Some(dot) = port.iter().position(|&c| c == b'.') {
            return Some((&port[dot + 1..], &port[..dot]));
        }
        match self.chassis_id()? {
            (chassis_subtype::LOCALLY_ASSIGNED, name) => Some((name, port)),
            _ => None,
        }
    }
}

mod device;
pub use device::{DeviceLldpConfig, NameOfDeviceMode};

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        s.split_whitespace()
            .map(|t| u8::from_str_radix(t, 16).unwrap())
            .collect()
    }

    #[test]
    fn versamax_lldpdu_round_trip() {
        // icsnpp-lldp-versamax.hex after the EtherType.
        let pdu = hex(
            "02 0f 07 76 65 72 73 61 6d 61 78 2d 70 6e 73 31 31 04 09 07 70 6f 72 74 2d 30 30 31 \
             06 02 00 14 10 0c 05 01 c0 a8 01 02 02 00 00 00 01 00 fe 08 00 0e cf 02 00 00 00 00 \
             fe 0a 00 0e cf 05 00 09 91 43 e0 67 fe 09 00 12 0f 01 03 6c 00 00 10 00 00",
        );
        let r = LldpRepr::parse(&pdu).unwrap();
        assert_eq!(r.chassis_id(), Some((7, &b"versamax-pns11"[..])));
        assert_eq!(r.port_id(), Some((7, &b"port-001"[..])));
        assert_eq!(r.ttl(), Some(20));
        assert_eq!(
            r.chassis_mac(),
            Some(MacAddr([0, 9, 0x91, 0x43, 0xe0, 0x67]))
        );
        assert_eq!(
            r.peer_station_and_port(),
            Some((&b"versamax-pns11"[..], &b"port-001"[..]))
        );
        assert!(r.tlvs.contains(&Tlv::MacPhy {
            autoneg: 3,
            pmd_advertised: 0x6c00,
            mau_type: mau_type::TYPE_100BASE_TX_FD
        }));
        assert_eq!(r.tlvs.last(), Some(&Tlv::End));
        assert_eq!(r.to_bytes().unwrap(), pdu);
    }

    #[test]
    fn device_builder_standard_and_legacy() {
        let name = NameOfStation::new("dev1").unwrap();
        let mut cfg = DeviceLldpConfig::new(
            Some(name),
            MacAddr([2, 0, 0, 0, 0, 1]),
            Ipv4Addr::new(10, 0, 0, 2),
        );
        let r = cfg.build();
        assert_eq!(r.port_id(), Some((7, &b"port-001.dev1"[..])));
        assert_eq!(
            r.peer_station_and_port(),
            Some((&b"dev1"[..], &b"port-001"[..]))
        );
        let bytes = r.to_bytes().unwrap();
        assert_eq!(LldpRepr::parse(&bytes).unwrap(), r);
        cfg.mode = NameOfDeviceMode::Legacy;
        cfg.station_name = None;
        let r = cfg.build();
        assert_eq!(r.chassis_id(), Some((4, &[2u8, 0, 0, 0, 0, 1][..])));
        assert_eq!(r.port_id(), Some((7, &b"port-001"[..])));
        cfg.mode = NameOfDeviceMode::Standard;
        let r = cfg.build();
        assert_eq!(r.port_id(), Some((7, &b"port-001.02-00-00-00-00-01"[..])));
    }

    #[test]
    fn bad_inputs() {
        assert_eq!(LldpRepr::parse(&[0x02]), Err(Error::Truncated));
        assert_eq!(LldpRepr::parse(&[0x02, 0x05, 1]), Err(Error::Truncated));
        // TTL with a wrong length stays opaque and round-trips.
        let pdu = [0x06, 0x01, 0x14, 0x00, 0x00];
        let r = LldpRepr::parse(&pdu).unwrap();
        assert_eq!(
            r.tlvs[0],
            Tlv::Other {
                tlv_type: 3,
                data: vec![0x14]
            }
        );
        assert_eq!(r.to_bytes().unwrap(), pdu);
    }
}

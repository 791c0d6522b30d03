//! [`DeviceLldpConfig`]: what a PROFINET device puts in its LLDP frames, and the
//! [`LldpRepr`] it builds from that.

use super::*;

/// How Chassis ID and Port ID are formed (PDInterfaceAdjust MultipleInterfaceMode.NameOfDevice;
/// p-net `pf_lldp_get_chassis_id` / `pf_lldp_get_port_id`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum NameOfDeviceMode {
    /// Chassis ID = system description (locally assigned); Port ID =
    /// "port-xyz.<NameOfStation>" (p-net default; S7-1500 and ET200SP do this).
    #[default]
    Standard,
    /// Chassis ID = NameOfStation (locally assigned, or the MAC address with subtype 4 when no
    /// name is set); Port ID = "port-xyz".
    Legacy,
}

/// What a PROFINET device puts in its LLDP frames (one per port).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceLldpConfig {
    pub mode: NameOfDeviceMode,
    pub station_name: Option<NameOfStation>,
    /// Chassis ID in standard mode (p-net: product name, order id, serial, versions).
    pub system_description: String,
    /// "port-001" etc.
    pub port_name: String,
    /// Interface (chassis) MAC address: PROFINET Chassis MAC TLV and fallback names.
    pub chassis_mac: MacAddr,
    /// Seconds; PROFINET uses 20.
    pub ttl: u16,
    pub rtc2_port_status: u16,
    pub rtc3_port_status: u16,
    /// [`autoneg`] bits.
    pub autoneg: u8,
    /// [`pmd_cap`] bits.
    pub pmd_advertised: u16,
    /// [`mau_type`] value.
    pub mau_type: u16,
    pub ipv4: Ipv4Addr,
    /// ifIndex of the management interface.
    pub if_index: u32,
}

impl DeviceLldpConfig {
    /// Defaults for a 100BASE-TX full-duplex port with auto-negotiation, TTL 20.
    pub fn new(
        station_name: Option<NameOfStation>,
        chassis_mac: MacAddr,
        ipv4: Ipv4Addr,
    ) -> DeviceLldpConfig {
        DeviceLldpConfig {
            mode: NameOfDeviceMode::Standard,
            station_name,
            system_description: String::new(),
            port_name: "port-001".to_owned(),
            chassis_mac,
            ttl: 20,
            rtc2_port_status: 0,
            rtc3_port_status: 0,
            autoneg: autoneg::SUPPORTED | autoneg::ENABLED,
            pmd_advertised: pmd_cap::B10_T
                | pmd_cap::B10_T_FD
                | pmd_cap::B100_TX
                | pmd_cap::B100_TX_FD,
            mau_type: mau_type::TYPE_100BASE_TX_FD,
            ipv4,
            if_index: 1,
        }
    }

    /// "XX-XX-XX-XX-XX-XX": the substitute for a missing NameOfStation in the Port ID
    /// (p-net `pf_lldp_mac_address_to_string`, "LLDP substitutions").
    fn mac_string(&self) -> String {
        self.chassis_mac
            .0
            .iter()
            .map(|b| format!("{b:02X}"))
            .collect::<Vec<_>>()
            .join("-")
    }

    /// The TLV set p-net sends (`pf_lldp_construct_frame`): Chassis ID, Port ID, TTL,
    /// PROFINET Port Status, PROFINET Chassis MAC, IEEE 802.3 MAC/PHY, Management Address
    /// (IPv4, ifIndex, no OID), End.
    pub fn build(&self) -> LldpRepr {
        let (chassis, port) = match self.mode {
            NameOfDeviceMode::Standard => {
                let station = match &self.station_name {
                    Some(n) => n.as_str().to_owned(),
                    None => self.mac_string(),
                };
                let mut chassis = self.system_description.as_bytes().to_vec();
                if chassis.is_empty() {
                    chassis = station.as_bytes().to_vec();
                }
                (
                    Tlv::ChassisId {
                        subtype: chassis_subtype::LOCALLY_ASSIGNED,
                        id: chassis,
                    },
                    format!("{}.{}", self.port_name, station),
                )
            }
            NameOfDeviceMode::Legacy => (
                match &self.station_name {
                    Some(n) => Tlv::ChassisId {
                        subtype: chassis_subtype::LOCALLY_ASSIGNED,
                        id: n.as_bytes().to_vec(),
                    },
                    None => Tlv::ChassisId {
                        subtype: chassis_subtype::MAC_ADDRESS,
                        id: self.chassis_mac.0.to_vec(),
                    },
                },
                self.port_name.clone(),
            ),
        };
        LldpRepr {
            tlvs: vec![
                chassis,
                Tlv::PortId {
                    subtype: port_subtype::LOCALLY_ASSIGNED,
                    id: port.into_bytes(),
                },
                Tlv::Ttl(self.ttl),
                Tlv::Profinet(PnTlv::PortStatus {
                    rtc2: self.rtc2_port_status,
                    rtc3: self.rtc3_port_status,
                }),
                Tlv::Profinet(PnTlv::ChassisMac(self.chassis_mac)),
                Tlv::MacPhy {
                    autoneg: self.autoneg,
                    pmd_advertised: self.pmd_advertised,
                    mau_type: self.mau_type,
                },
                Tlv::ManagementAddress {
                    addr_subtype: mgmt::ADDR_IPV4,
                    addr: self.ipv4.octets().to_vec(),
                    if_subtype: mgmt::IF_INDEX,
                    if_number: self.if_index,
                    oid: Vec::new(),
                },
                Tlv::End,
            ],
        }
    }
}

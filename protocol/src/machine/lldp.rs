//! LLDP agent of a device port (IEEE 802.1AB with the PROFINET TLVs of IEC 61158-6-10),
//! sans-IO: periodic transmission of the PROFINET LLDPDU and the neighbour seen on the port.
//! Wire format: [`crate::wire::lldp`] (TLV codec and the PROFINET TLV set builder
//! [`DeviceLldpConfig`]). The daemon's L2 thread and the farm run it.
//!
//! * Transmission: at start (well within the 5 s PROFINET requires), then every
//!   [`TX_INTERVAL`] = 5 s, TTL 20 s (p-net `PF_LLDP_SEND_INTERVAL`, `PF_LLDP_TTL`), to
//!   01:80:C2:00:00:0E. At once again when the station name, IP or link (MAU type) changes
//!   and when the link comes back up.
//! * TLVs (p-net `pf_lldp_construct_frame`): Chassis ID (locally assigned: the PROFINET system
//!   description, see [`system_description`]), Port ID ("port-001.<NameOfStation>"), TTL,
//!   PROFINET Port Status (RTClass2/3 off), PROFINET Chassis MAC, IEEE 802.3 MAC/PHY
//!   configuration/status (MAU type from the shell's [`PortState`]), Management Address (IPv4, ifIndex),
//!   End.
//! * Reception: the last LLDPDU of the peer is kept as [`LldpNeighbour`] until its TTL expires
//!   (TTL 0 = shutdown: removed at once). Its alias name ([`alias_name`]) is what DCP Identify
//!   by AliasName matches.

use std::net::Ipv4Addr;

use crate::time::{Duration, Instant};
use crate::wire::dcp::NameOfStation;
use crate::wire::ethernet::MacAddr;
use crate::wire::lldp::{mgmt, DeviceLldpConfig, LldpRepr, Tlv};

/// What LLDP announces of the port's link (from the shell's link monitor).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PortState {
    pub up: bool,
    /// IEEE 802.3 MAU type.
    pub mau_type: u16,
    /// MAC/PHY TLV auto-negotiation support/status bits.
    pub autoneg: u8,
    /// MAC/PHY TLV PMD auto-negotiation advertised capability.
    pub pmd_advertised: u16,
}

/// The identity the PROFINET system description is made of (the I&M0 fields).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SystemIdentity<'a> {
    pub product_name: &'a str,
    pub order_id: &'a str,
    pub serial_number: &'a str,
    pub hardware_revision: u16,
    /// (prefix char, functional enhancement, bug fix, internal change), e.g. ('V', 1, 0, 0).
    pub software_revision: (char, u8, u8, u8),
}

/// Period of LLDP transmission.
pub const TX_INTERVAL: Duration = Duration::from_millis(5000);
/// TTL we announce, seconds.
pub const TTL_SECS: u16 = 20;

/// The PROFINET system description (SNMP sysDescr, LLDP Chassis ID in standard mode): product
/// name, order id and serial number padded to 25/20/16 characters, hardware revision (5
/// digits) and software revision ("V  1  0  0"), space separated (p-net
/// `pf_lldp_get_system_description`).
pub fn system_description(im0: &SystemIdentity<'_>) -> String {
    let (p, a, b, c) = im0.software_revision;
    let clip = |s: &str, n: usize| s.chars().take(n).collect::<String>();
    format!(
        "{:<25} {:<20} {:<16} {:>5} {}{:>3}{:>3}{:>3}",
        clip(im0.product_name, 25),
        clip(im0.order_id, 20),
        clip(im0.serial_number, 16),
        im0.hardware_revision,
        p,
        a,
        b,
        c
    )
}

/// The alias name a neighbour gives us (p-net `pf_lldp_generate_alias_name`, PN-Topology
/// 6.4.2): the peer's Port ID when it contains a '.' (PROFINET 2.3+: "port-xyz.<station>"),
/// else "<peer Port ID>.<peer Chassis ID>".
pub fn alias_name(peer_port_id: &[u8], peer_chassis_id: &[u8]) -> Vec<u8> {
    if peer_port_id.contains(&b'.') {
        peer_port_id.to_vec()
    } else {
        let mut v = peer_port_id.to_vec();
        v.push(b'.');
        v.extend_from_slice(peer_chassis_id);
        v
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The neighbour on our port.
#[derive(Debug, Clone, PartialEq, Eq)]
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
    /// Milliseconds since its last LLDPDU (filled by [`LldpAgent::neighbour`]).
    pub age_ms: u64,
    /// Wall-clock time of its last LLDPDU (RFC 3339; filled by the I/O layer, empty here).
    pub last_seen_at: String,
    /// The alias name DCP Identify by AliasName matches.
    pub alias_name: String,
    /// When its last LLDPDU arrived.
    pub last_seen: Instant,
    /// The alias name's bytes.
    pub alias_raw: Vec<u8>,
}

impl LldpNeighbour {
    fn from_repr(src: MacAddr, r: &LldpRepr, now: Instant) -> Option<LldpNeighbour> {
        let (cs, cid) = r.chassis_id()?;
        let (ps, pid) = r.port_id()?;
        let ttl = r.ttl()?;
        let chassis_id = if cs == 4 && cid.len() == 6 {
            MacAddr::from_bytes(cid)
                .map(|m| m.to_string())
                .unwrap_or_default()
        } else {
            text(cid)
        };
        let (station, port) = r
            .peer_station_and_port()
            .map(|(s, p)| (text(s), text(p)))
            .unwrap_or_default();
        let mut system_name = String::new();
        let mut port_description = String::new();
        let mut management_address = String::new();
        for t in &r.tlvs {
            match t {
                Tlv::SystemName(b) => system_name = text(b),
                Tlv::PortDescription(b) => port_description = text(b),
                Tlv::ManagementAddress {
                    addr_subtype, addr, ..
                } if *addr_subtype == mgmt::ADDR_IPV4
                    && addr.len() == 4
                    && management_address.is_empty() =>
                {
                    management_address =
                        Ipv4Addr::new(addr[0], addr[1], addr[2], addr[3]).to_string();
                }
                _ => {}
            }
        }
        let alias_raw = alias_name(pid, cid);
        Some(LldpNeighbour {
            src_mac: src.to_string(),
            chassis_id_subtype: cs,
            chassis_id,
            port_id_subtype: ps,
            port_id: text(pid),
            station_name: station,
            port_name: port,
            system_name,
            port_description,
            management_address,
            chassis_mac: r.chassis_mac().map(|m| m.to_string()).unwrap_or_default(),
            ttl,
            age_ms: 0,
            last_seen_at: String::new(),
            alias_name: text(&alias_raw),
            last_seen: now,
            alias_raw,
        })
    }

    fn expired(&self, now: Instant) -> bool {
        now.saturating_since(self.last_seen) >= Duration::from_millis(u64::from(self.ttl) * 1000)
    }
}

/// The sans-IO LLDP agent of the one port.
#[derive(Debug, Clone)]
pub struct LldpAgent {
    cfg: DeviceLldpConfig,
    link_up: bool,
    next_tx: Instant,
    neighbour: Option<LldpNeighbour>,
}

impl LldpAgent {
    /// `station_name` may be empty (then the Port ID carries the MAC, p-net "LLDP
    /// substitutions"). The first frame is due at `now`.
    pub fn new(
        mac: MacAddr,
        station_name: &str,
        ip: Ipv4Addr,
        system_description: String,
        if_index: u32,
        now: Instant,
    ) -> LldpAgent {
        let mut cfg = DeviceLldpConfig::new(NameOfStation::new(station_name).ok(), mac, ip);
        cfg.system_description = system_description;
        cfg.ttl = TTL_SECS;
        cfg.if_index = if_index;
        LldpAgent {
            cfg,
            link_up: true,
            next_tx: now,
            neighbour: None,
        }
    }

    /// What is sent.
    pub fn config(&self) -> &DeviceLldpConfig {
        &self.cfg
    }

    /// The LLDPDU frame as it is sent now.
    pub fn frame(&self) -> crate::wire::Result<Vec<u8>> {
        self.cfg.build().build_frame(self.cfg.chassis_mac)
    }

    pub fn set_station_name(&mut self, name: &str, now: Instant) {
        let n = NameOfStation::new(name).ok();
        if n != self.cfg.station_name {
            self.cfg.station_name = n;
            self.next_tx = now;
        }
    }

    pub fn set_ip(&mut self, ip: Ipv4Addr, now: Instant) {
        if ip != self.cfg.ipv4 {
            self.cfg.ipv4 = ip;
            self.next_tx = now;
        }
    }

    /// Link changes: MAU type and auto-negotiation bits; no transmission while down; at once
    /// when it comes up.
    pub fn set_link(&mut self, link: &PortState, now: Instant) {
        let (an, pmd) = (link.autoneg, link.pmd_advertised);
        let changed = self.cfg.mau_type != link.mau_type
            || self.cfg.autoneg != an
            || self.cfg.pmd_advertised != pmd;
        self.cfg.mau_type = link.mau_type;
        self.cfg.autoneg = an;
        self.cfg.pmd_advertised = pmd;
        if link.up && (!self.link_up || changed) {
            self.next_tx = now;
        }
        if !link.up {
            // The neighbour is gone with the cable.
            self.neighbour = None;
        }
        self.link_up = link.up;
    }

    pub fn next_deadline(&self) -> Option<Instant> {
        self.link_up.then_some(self.next_tx)
    }

    /// The frame to send now, if one is due.
    pub fn poll(&mut self, now: Instant) -> Option<Vec<u8>> {
        if !self.link_up || now < self.next_tx {
            return None;
        }
        self.next_tx = now + TX_INTERVAL;
        self.frame().ok()
    }

    /// Handle a received frame. `None`: not an LLDP frame (or ours); `Some(changed)`: LLDP,
    /// `changed` when the neighbour (identity or alias) changed.
    pub fn on_frame(&mut self, frame: &[u8], now: Instant) -> Option<bool> {
        let (eth, repr) = LldpRepr::parse_frame(frame).ok()?;
        if eth.src == self.cfg.chassis_mac {
            return None;
        }
        let new = LldpNeighbour::from_repr(eth.src, &repr, now);
        let old_alias = self.neighbour.as_ref().map(|n| n.alias_raw.clone());
        self.neighbour = match new {
            Some(n) if n.ttl > 0 => Some(n),
            _ => None,
        };
        let new_alias = self.neighbour.as_ref().map(|n| n.alias_raw.clone());
        Some(old_alias != new_alias)
    }

    /// The neighbour, unless its TTL has run out (then it is forgotten).
    pub fn neighbour(&mut self, now: Instant) -> Option<LldpNeighbour> {
        if self.neighbour.as_ref().is_some_and(|n| n.expired(now)) {
            self.neighbour = None;
        }
        self.neighbour.clone().map(|mut n| {
            n.age_ms = now.saturating_since(n.last_seen).as_micros() / 1000;
            n
        })
    }

    /// Alias names for DCP (empty without a live neighbour).
    pub fn aliases(&mut self, now: Instant) -> Vec<Vec<u8>> {
        self.neighbour(now)
            .map(|n| vec![n.alias_raw])
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::lldp::PnTlv;

    fn im0() -> SystemIdentity<'static> {
        SystemIdentity {
            order_id: "PN-DEVICE-1",
            serial_number: "00000001",
            hardware_revision: 1,
            software_revision: ('V', 1, 0, 0),
            product_name: "pn-device",
        }
    }

    fn descr() -> String {
        system_description(&im0())
    }

    const MAC: MacAddr = MacAddr([2, 0, 0, 0, 0, 9]);

    #[test]
    fn periodic_tx_and_content() {
        let t0 = Instant::from_millis(10);
        let mut a = LldpAgent::new(MAC, "dev-1", Ipv4Addr::new(10, 0, 0, 2), descr(), 3, t0);
        let f = a.poll(t0).expect("first frame at start");
        assert!(a.poll(t0 + Duration::from_millis(4999)).is_none());
        assert!(a.poll(t0 + TX_INTERVAL).is_some());
        let (eth, r) = LldpRepr::parse_frame(&f).unwrap();
        assert_eq!(eth.dst, MacAddr::LLDP_NEAREST_BRIDGE);
        assert_eq!(r.ttl(), Some(20));
        assert_eq!(r.port_id(), Some((7, &b"port-001.dev-1"[..])));
        assert_eq!(r.chassis_mac(), Some(MAC));
        let (_, chassis) = r.chassis_id().unwrap();
        assert_eq!(text(chassis), system_description(&im0()));
        assert!(r
            .tlvs
            .iter()
            .any(|t| matches!(t, Tlv::Profinet(PnTlv::PortStatus { .. }))));
        assert_eq!(r.tlvs.last(), Some(&Tlv::End));
        // A name change sends at once.
        let t1 = t0 + Duration::from_millis(6000);
        a.set_station_name("dev-2", t1);
        assert_eq!(a.next_deadline(), Some(t1));
        // Link down: nothing sent; up: at once.
        let down = PortState::default();
        a.set_link(&down, t1);
        assert!(a.poll(t1 + TX_INTERVAL).is_none());
        let up = PortState {
            up: true,
            mau_type: 0x10,
            ..Default::default()
        };
        let t2 = t1 + Duration::from_millis(20_000);
        a.set_link(&up, t2);
        assert!(a.poll(t2).is_some());
    }

    #[test]
    fn neighbour_and_alias() {
        let t0 = Instant::from_millis(0);
        let mut a = LldpAgent::new(MAC, "dev-1", Ipv4Addr::UNSPECIFIED, descr(), 1, t0);
        let peer_mac = MacAddr([2, 0, 0, 0, 0, 1]);
        let mut peer = LldpAgent::new(peer_mac, "plc", Ipv4Addr::new(10, 0, 0, 1), descr(), 1, t0);
        let pf = peer.poll(t0).unwrap();
        assert_eq!(a.on_frame(&pf, t0), Some(true));
        assert_eq!(a.on_frame(&pf, t0), Some(false));
        let n = a.neighbour(t0 + Duration::from_millis(1500)).unwrap();
        assert_eq!(n.port_id, "port-001.plc");
        assert_eq!(n.station_name, "plc");
        assert_eq!(n.management_address, "10.0.0.1");
        assert_eq!(n.ttl, 20);
        assert_eq!(n.age_ms, 1500);
        assert_eq!(a.aliases(t0), vec![b"port-001.plc".to_vec()]);
        // Own frames are ignored; expiry after TTL.
        let own = a.poll(t0).unwrap();
        assert_eq!(a.on_frame(&own, t0), None);
        assert!(a.neighbour(t0 + Duration::from_millis(20_000)).is_none());
        assert_eq!(alias_name(b"port-002", b"sw1"), b"port-002.sw1".to_vec());
    }

    #[test]
    fn sysdescr_format() {
        let s = system_description(&im0());
        assert_eq!(s.len(), 25 + 1 + 20 + 1 + 16 + 1 + 5 + 1 + 10);
        assert!(s.starts_with("pn-device "));
        assert!(s.ends_with("V  1  0  0"));
    }
}

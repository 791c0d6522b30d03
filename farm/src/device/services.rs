//! The IP services pn-device runs on kernel UDP sockets, for a farm device: the SNMP agent
//! ([`pn_protocol::machine::snmp_agent`], UDP 161) and the LLMNR responder
//! ([`pn_protocol::machine::llmnr_responder`], UDP 5355). The farm's device IPs are not the
//! kernel's, so the I/O loop hands the datagrams over from its packet socket and sends the
//! answer as a complete frame from the device's MAC and IP to the querier.

use pn_protocol::machine::llmnr_responder::{self, LlmnrIdentity};
use pn_protocol::machine::snmp_agent::{SnmpAgent, SystemInfo};
use pn_protocol::wire::ip::{udp_frame, UdpFrame};
use pn_protocol::wire::{llmnr, snmp};

use std::sync::atomic::Ordering::Relaxed;

use super::FarmDevice;

impl FarmDevice {
    /// The system group as pn-device's agent has it: sysDescr is the LLDP system
    /// description, sysName the current station name, sysLocation the I&M1 tag location.
    pub fn system_info(&self) -> SystemInfo {
        SystemInfo {
            descr: self.lldp.config().system_description.clone(),
            contact: String::new(),
            name: self.dcp.identity().station_name.clone(),
            location: self.records.im.tag_location.trim().to_string(),
        }
    }

    /// An SNMP request to this device; `uptime_cs` is sysUpTime (centiseconds since the farm
    /// started: its agents start with it, as pn-device's with the daemon). Returns the frame.
    pub fn on_snmp(&self, q: &UdpFrame<'_>, uptime_cs: u32) -> Option<Vec<u8>> {
        let resp = SnmpAgent::new(self.system_info()).handle(q.payload, uptime_cs)?;
        let frame = self.reply(q, snmp::PORT, &resp)?;
        self.shared.counters.snmp_answers.fetch_add(1, Relaxed);
        Some(frame)
    }

    /// An LLMNR query (to the group or to this device): answered when it asks for this
    /// device's station name. Returns the frame.
    pub fn on_llmnr(&self, q: &UdpFrame<'_>) -> Option<Vec<u8>> {
        let id = self.dcp.identity();
        let me = LlmnrIdentity {
            name: id.station_name.clone(),
            ip: id.ip,
        };
        let resp = llmnr_responder::handle(q.payload, &me)?;
        let frame = self.reply(q, llmnr::PORT, &resp)?;
        self.shared.counters.llmnr_answers.fetch_add(1, Relaxed);
        Some(frame)
    }

    /// A datagram from `port` of this device back to the querier's address and port (RFC 4795
    /// §2.6 for LLMNR: unicast, also for a multicast query).
    fn reply(&self, q: &UdpFrame<'_>, port: u16, payload: &[u8]) -> Option<Vec<u8>> {
        udp_frame(
            self.mac,
            q.src_mac,
            self.ip(),
            q.ip.src_addr,
            port,
            q.udp.src_port,
            payload,
        )
        .ok()
    }
}

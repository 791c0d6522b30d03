//! DCP client shell: Identify (all / by name), Get, Set NameOfStation / IP (temporary or
//! permanent), Signal, ResetToFactory. Every decision (Xids, the response window, first answer
//! or all, de-duplication, matching, reading the answers) is the protocol crate's
//! [`DcpClient`] machine; this file sends the frames it queues, feeds it the DCP frames the
//! receive thread gets, and sleeps until its next deadline or the caller's answer.

use std::collections::HashMap;
use std::io;
use std::net::Ipv4Addr;
use std::time::Duration;

use pn_protocol::machine::dcp_client::{DcpClient, DcpOutcome, DcpRequest, ExchangeId};
pub use pn_protocol::machine::dcp_client::{DeviceInfo, SetResult};
use pn_protocol::time::Instant;
use pn_protocol::wire::dcp::{self, DcpRepr, NameOfStation};
use pn_protocol::wire::ethernet::MacAddr;

use crate::cm::read_implicit;
use crate::controller::{Controller, Shared};
use crate::rtsched;
use crate::Error;

/// The machine, and the finished exchanges whose callers have not picked them up yet (the
/// receive thread finishes exchanges of any caller).
pub(crate) struct DcpShell {
    client: DcpClient,
    done: HashMap<ExchangeId, Result<DcpOutcome, io::Error>>,
}

impl DcpShell {
    pub(crate) fn new(own_mac: MacAddr, first_xid: u32) -> DcpShell {
        DcpShell {
            client: DcpClient::new(own_mac, first_xid),
            done: HashMap::new(),
        }
    }
}

impl Shared {
    /// A DCP PDU from the receive thread.
    pub(crate) fn on_dcp(&self, now: Instant, src: MacAddr, d: &DcpRepr) {
        let mut g = self.dcp.lock().unwrap_or_else(|p| p.into_inner());
        g.client.handle_response(now, src, d);
        self.dcp_pump(&mut g);
    }

    /// Send what the machine queued, file its finished exchanges, wake their callers.
    fn dcp_pump(&self, g: &mut DcpShell) {
        let mut woke = false;
        while let Some(t) = g.client.poll_transmit() {
            if let Err(e) = self.send_frame(&t.frame) {
                // The caller learns the send error, as a failed send always told it.
                g.client.cancel(t.exchange);
                g.done.insert(t.exchange, Err(e));
                woke = true;
            }
        }
        while let Some(ev) = g.client.poll_event() {
            g.done.insert(ev.exchange, Ok(ev.outcome));
            woke = true;
        }
        if woke {
            self.dcp_done.notify_all();
        }
    }
}

fn duration(d: Duration) -> pn_protocol::time::Duration {
    pn_protocol::time::Duration::from(d)
}

fn station_name(name: &str) -> Result<NameOfStation, Error> {
    NameOfStation::new(name)
        .map_err(|e| Error::Config(format!("invalid station name '{name}': {e:?}")))
}

/// An outcome of another kind than the request's: a bug of the machine, said in words.
fn unexpected(o: &DcpOutcome) -> Error {
    Error::Protocol(format!("DCP client: unexpected outcome {o:?}"))
}

impl Controller {
    /// Run one exchange of the machine to its end.
    fn dcp_exchange(&self, req: DcpRequest) -> Result<DcpOutcome, Error> {
        let sh = &self.shared;
        let mut g = sh.dcp.lock().unwrap_or_else(|p| p.into_inner());
        let id = g
            .client
            .start(rtsched::now(), req)
            .map_err(|e| Error::Protocol(e.to_string()))?;
        loop {
            let now = rtsched::now();
            g.client.handle_timeout(now);
            sh.dcp_pump(&mut g);
            if let Some(r) = g.done.remove(&id) {
                return r.map_err(Error::Io);
            }
            // Our exchange is open, so there is a deadline after `now`.
            let due = g.client.poll_timeout().unwrap_or(now);
            let wait = Duration::from(due - now).max(Duration::from_micros(100));
            g = sh
                .dcp_done
                .wait_timeout(g, wait)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    /// Identify all devices. `response_delay_factor` (1..=6400) spreads the answers over
    /// `factor * 10 ms`; the client listens that long plus `margin`.
    pub fn dcp_identify_all(
        &self,
        response_delay_factor: u16,
        margin: Duration,
    ) -> Result<Vec<DeviceInfo>, Error> {
        match self.dcp_exchange(DcpRequest::IdentifyAll {
            response_delay_factor,
            margin: duration(margin),
        })? {
            DcpOutcome::Identified(v) => Ok(v),
            other => Err(unexpected(&other)),
        }
    }

    /// Identify the device named `name`; `None` when nobody answers within `timeout`.
    pub fn dcp_identify_name(
        &self,
        name: &str,
        timeout: Duration,
    ) -> Result<Option<DeviceInfo>, Error> {
        match self.dcp_exchange(DcpRequest::IdentifyName {
            name: station_name(name)?,
            response_delay_factor: 1,
            timeout: duration(timeout),
        })? {
            DcpOutcome::Found(o) => Ok(o),
            other => Err(unexpected(&other)),
        }
    }

    /// Get (option, suboption) values from one device.
    pub fn dcp_get(
        &self,
        mac: MacAddr,
        selectors: &[(u8, u8)],
        timeout: Duration,
    ) -> Result<DcpRepr, Error> {
        match self.dcp_exchange(DcpRequest::Get {
            mac,
            selectors: selectors.to_vec(),
            timeout: duration(timeout),
        })? {
            DcpOutcome::Got(Some((_, d))) => Ok(d),
            DcpOutcome::Got(None) => Err(Error::Timeout(format!("no DCP Get response from {mac}"))),
            other => Err(unexpected(&other)),
        }
    }

    fn dcp_set(&self, mac: MacAddr, req: DcpRequest) -> Result<SetResult, Error> {
        match self.dcp_exchange(req)? {
            DcpOutcome::Set(Some(r)) if r.is_ok() => Ok(r),
            DcpOutcome::Set(Some(r)) => Err(Error::DcpSet(r.describe())),
            DcpOutcome::Set(None) => Err(Error::Timeout(format!("no DCP Set response from {mac}"))),
            other => Err(unexpected(&other)),
        }
    }

    /// Set NameOfStation (temporary or permanent). An empty name removes the name.
    pub fn dcp_set_name(
        &self,
        mac: MacAddr,
        name: &str,
        permanent: bool,
    ) -> Result<SetResult, Error> {
        let n = if name.is_empty() {
            None
        } else {
            Some(station_name(name)?)
        };
        self.dcp_set(mac, DcpRequest::set_name(mac, n.as_ref(), permanent))
    }

    /// Set IP address, mask and gateway (temporary or permanent).
    pub fn dcp_set_ip(
        &self,
        mac: MacAddr,
        ip: Ipv4Addr,
        mask: Ipv4Addr,
        gw: Ipv4Addr,
        permanent: bool,
    ) -> Result<SetResult, Error> {
        let blocks = DcpRepr::set_ip(0, ip, mask, gw, permanent).blocks;
        self.dcp_set(mac, DcpRequest::Set { mac, blocks })
    }

    /// Flash the device's signal LED.
    pub fn dcp_signal(&self, mac: MacAddr) -> Result<SetResult, Error> {
        let blocks = DcpRepr::set_signal(0).blocks;
        self.dcp_set(mac, DcpRequest::Set { mac, blocks })
    }

    /// Reset to factory with a mode from [`dcp::qualifier`] (e.g. `RESET_COMMUNICATION_PARAMETER`).
    pub fn dcp_reset_to_factory(&self, mac: MacAddr, mode: u16) -> Result<SetResult, Error> {
        let blocks = DcpRepr::set_reset_to_factory(0, mode).blocks;
        self.dcp_set(mac, DcpRequest::Set { mac, blocks })
    }

    /// Implicit record read (no AR): I&M0, diagnosis, identification data...
    #[allow(clippy::too_many_arguments)]
    pub fn read_implicit(
        &self,
        ip: Ipv4Addr,
        vendor_id: u16,
        device_id: u16,
        slot: u16,
        subslot: u16,
        index: u16,
        max_len: u32,
    ) -> Result<Vec<u8>, Error> {
        read_implicit(
            &self.shared,
            ip,
            vendor_id,
            device_id,
            pn_protocol::wire::pnio::record::RecordAddress::new(0, slot, subslot, index),
            max_len,
        )
    }
}

/// Parse a MAC "aa:bb:cc:dd:ee:ff" (also '-').
pub fn parse_mac(s: &str) -> Option<MacAddr> {
    let parts: Vec<&str> = s.split([':', '-']).collect();
    if parts.len() != 6 {
        return None;
    }
    let mut m = [0u8; 6];
    for (d, p) in m.iter_mut().zip(parts) {
        *d = u8::from_str_radix(p, 16).ok()?;
    }
    Some(MacAddr(m))
}

#[allow(dead_code)]
const _QUALIFIERS: u16 = dcp::qualifier::RESET_COMMUNICATION_PARAMETER;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_info_json_keeps_its_shape() {
        // The CLI's `identify --json` output: camelCase keys, the MAC as text.
        let i = DeviceInfo {
            mac: MacAddr([2, 0, 0, 10, 11, 255]),
            name_of_station: "dev-1".into(),
            vendor_id: Some(0x1234),
            ip: Some(Ipv4Addr::new(10, 0, 0, 2)),
            options: vec![(2, 2)],
            ..Default::default()
        };
        let j = serde_json::to_value(&i).unwrap();
        assert_eq!(j["mac"], "02:00:00:0a:0b:ff");
        assert_eq!(j["nameOfStation"], "dev-1");
        assert_eq!(j["typeOfStation"], "");
        assert_eq!(j["vendorId"], 0x1234);
        assert_eq!(j["deviceId"], serde_json::Value::Null);
        assert_eq!(j["ip"], "10.0.0.2");
        assert_eq!(j["ipBlockInfo"], serde_json::Value::Null);
        assert_eq!(j["options"], serde_json::json!([[2, 2]]));
        assert_eq!(j.as_object().unwrap().len(), 12);
    }

    #[test]
    fn mac_parsing() {
        assert_eq!(
            parse_mac("02:00:00:0a:0b:ff"),
            Some(MacAddr([2, 0, 0, 10, 11, 255]))
        );
        assert_eq!(
            parse_mac("02-00-00-0a-0b-ff"),
            Some(MacAddr([2, 0, 0, 10, 11, 255]))
        );
        assert_eq!(parse_mac("02:00"), None);
        assert_eq!(parse_mac("zz:00:00:0a:0b:ff"), None);
    }
}

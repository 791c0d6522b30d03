//! DCP client: Identify (all / by name) collecting every answer within the response window,
//! Get, Set NameOfStation / IP (temporary or permanent), Signal, ResetToFactory.
//!
//! Identify requests carry a ResponseDelayFactor; devices spread their answers over
//! `factor * 10 ms` (IEC 61158-6-10; p-net `pf_dcp_identify_req` uses `(mac % factor) * 10 ms`),
//! so the client listens for the whole window plus a margin and de-duplicates by MAC address.

use std::net::Ipv4Addr;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use pn_protocol::wire::dcp::{self, BlockError, DcpBlock, DcpRepr, DcpValue, NameOfStation};
use pn_protocol::wire::ethernet::MacAddr;

use crate::cm::read_implicit;
use crate::controller::Controller;
use crate::Error;

/// What a device told us about itself in an Identify (or Get) response.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DeviceInfo {
    #[serde(serialize_with = "ser_mac")]
    pub mac: MacAddr,
    pub name_of_station: String,
    pub type_of_station: String,
    pub vendor_id: Option<u16>,
    pub device_id: Option<u16>,
    pub ip: Option<Ipv4Addr>,
    pub mask: Option<Ipv4Addr>,
    pub gateway: Option<Ipv4Addr>,
    /// BlockInfo of the IP block (bit 0 set, bit 7 conflict).
    pub ip_block_info: Option<u16>,
    pub role: Option<u8>,
    pub alias: Option<String>,
    /// Supported (option, suboption) pairs.
    pub options: Vec<(u8, u8)>,
}

fn ser_mac<S: serde::Serializer>(m: &MacAddr, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&m.to_string())
}

impl DeviceInfo {
    /// Collect the values of a response.
    pub fn from_response(mac: MacAddr, d: &DcpRepr) -> DeviceInfo {
        let mut i = DeviceInfo {
            mac,
            ..Default::default()
        };
        for b in &d.blocks {
            match &b.value {
                DcpValue::NameOfStation(n) => {
                    i.name_of_station = String::from_utf8_lossy(n).into_owned()
                }
                DcpValue::DeviceVendor(n) => {
                    i.type_of_station = String::from_utf8_lossy(n).into_owned()
                }
                DcpValue::DeviceId {
                    vendor_id,
                    device_id,
                } => {
                    i.vendor_id = Some(*vendor_id);
                    i.device_id = Some(*device_id);
                }
                DcpValue::IpParameter { ip, mask, gateway }
                | DcpValue::FullIpSuite {
                    ip, mask, gateway, ..
                } => {
                    i.ip = Some(*ip);
                    i.mask = Some(*mask);
                    i.gateway = Some(*gateway);
                    i.ip_block_info = Some(b.prefix);
                }
                DcpValue::DeviceRole { role, .. } => i.role = Some(*role),
                DcpValue::AliasName(a) => i.alias = Some(String::from_utf8_lossy(a).into_owned()),
                DcpValue::DeviceOptions(o) => i.options = o.clone(),
                _ => {}
            }
        }
        i
    }
}

/// Result of a Set: per (option, suboption) the device's BlockError.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetResult {
    pub results: Vec<(u8, u8, BlockError)>,
}

impl SetResult {
    pub fn is_ok(&self) -> bool {
        !self.results.is_empty() && self.results.iter().all(|r| r.2 == BlockError::OK)
    }
}

impl Controller {
    fn dcp_exchange(
        &self,
        req: &DcpRepr,
        dst: MacAddr,
        window: Duration,
        first_only: bool,
    ) -> Result<Vec<(MacAddr, DcpRepr)>, Error> {
        let sh = &self.shared;
        let (tx, rx) = mpsc::channel();
        sh.dcp_waiters
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(req.xid, tx);
        let frame = req
            .build_frame(dst, sh.info.mac, None)
            .map_err(|e| Error::Protocol(e.to_string()))?;
        let send = sh.send_frame(&frame).map_err(Error::Io);
        let mut out: Vec<(MacAddr, DcpRepr)> = Vec::new();
        if send.is_ok() {
            let deadline = Instant::now() + window;
            loop {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    break;
                }
                match rx.recv_timeout(left) {
                    Ok((mac, d)) => {
                        if d.service_id != req.service_id {
                            continue;
                        }
                        if !out.iter().any(|(m, _)| *m == mac) {
                            out.push((mac, d));
                        }
                        if first_only {
                            break;
                        }
                    }
                    Err(_) => break,
                }
            }
        }
        sh.dcp_waiters
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&req.xid);
        send.map(|_| out)
    }

    /// Identify all devices. `response_delay_factor` (1..=6400) spreads the answers over
    /// `factor * 10 ms`; the client listens that long plus `margin`.
    pub fn dcp_identify_all(
        &self,
        response_delay_factor: u16,
        margin: Duration,
    ) -> Result<Vec<DeviceInfo>, Error> {
        let f = response_delay_factor.clamp(1, 6400);
        let req = DcpRepr::identify_request_all(self.shared.next_xid(), f);
        let window = Duration::from_millis(10 * u64::from(f)) + margin;
        let mut v: Vec<DeviceInfo> = self
            .dcp_exchange(&req, MacAddr::DCP_IDENTIFY, window, false)?
            .iter()
            .map(|(m, d)| DeviceInfo::from_response(*m, d))
            .collect();
        v.sort_by(|a, b| {
            a.name_of_station
                .cmp(&b.name_of_station)
                .then(a.mac.0.cmp(&b.mac.0))
        });
        Ok(v)
    }

    /// Identify the device named `name`; `None` when nobody answers within `timeout`.
    pub fn dcp_identify_name(
        &self,
        name: &str,
        timeout: Duration,
    ) -> Result<Option<DeviceInfo>, Error> {
        let n = NameOfStation::new(name)
            .map_err(|e| Error::Config(format!("invalid station name '{name}': {e:?}")))?;
        for _ in 0..2 {
            let req = DcpRepr::identify_request_by_name(self.shared.next_xid(), &n, 1);
            let r = self.dcp_exchange(&req, MacAddr::DCP_IDENTIFY, timeout / 2, true)?;
            if let Some((m, d)) = r.first() {
                return Ok(Some(DeviceInfo::from_response(*m, d)));
            }
        }
        Ok(None)
    }

    /// Get (option, suboption) values from one device.
    pub fn dcp_get(
        &self,
        mac: MacAddr,
        selectors: &[(u8, u8)],
        timeout: Duration,
    ) -> Result<DcpRepr, Error> {
        let req = DcpRepr::get_request(self.shared.next_xid(), selectors);
        self.dcp_exchange(&req, mac, timeout, true)?
            .into_iter()
            .next()
            .map(|(_, d)| d)
            .ok_or_else(|| Error::Timeout(format!("no DCP Get response from {mac}")))
    }

    fn dcp_set(&self, mac: MacAddr, req: DcpRepr) -> Result<SetResult, Error> {
        // Retransmit once with the same Xid if the first request goes unanswered.
        for _ in 0..3 {
            let r = self.dcp_exchange(&req, mac, Duration::from_millis(1000), true)?;
            if let Some((_, d)) = r.into_iter().next() {
                let results = d
                    .blocks
                    .iter()
                    .filter_map(|b| match b.value {
                        DcpValue::Response {
                            option,
                            suboption,
                            error,
                        } => Some((option, suboption, error)),
                        _ => None,
                    })
                    .collect();
                let sr = SetResult { results };
                return if sr.is_ok() {
                    Ok(sr)
                } else {
                    Err(Error::DcpSet(
                        sr.results
                            .iter()
                            .map(|(o, s, e)| format!("{o}/{s}: {}", e.name()))
                            .collect::<Vec<_>>()
                            .join(", "),
                    ))
                };
            }
        }
        Err(Error::Timeout(format!("no DCP Set response from {mac}")))
    }

    /// Set NameOfStation (temporary or permanent). An empty name removes the name.
    pub fn dcp_set_name(
        &self,
        mac: MacAddr,
        name: &str,
        permanent: bool,
    ) -> Result<SetResult, Error> {
        let req = if name.is_empty() {
            DcpRepr::set_request(
                self.shared.next_xid(),
                vec![DcpBlock::with_qualifier(
                    DcpValue::NameOfStation(Vec::new()),
                    u16::from(permanent),
                )],
            )
        } else {
            let n = NameOfStation::new(name)
                .map_err(|e| Error::Config(format!("invalid station name '{name}': {e:?}")))?;
            DcpRepr::set_name(self.shared.next_xid(), &n, permanent)
        };
        self.dcp_set(mac, req)
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
        self.dcp_set(
            mac,
            DcpRepr::set_ip(self.shared.next_xid(), ip, mask, gw, permanent),
        )
    }

    /// Flash the device's signal LED.
    pub fn dcp_signal(&self, mac: MacAddr) -> Result<SetResult, Error> {
        self.dcp_set(mac, DcpRepr::set_signal(self.shared.next_xid()))
    }

    /// Reset to factory with a mode from [`dcp::qualifier`] (e.g. `RESET_COMMUNICATION_PARAMETER`).
    pub fn dcp_reset_to_factory(&self, mac: MacAddr, mode: u16) -> Result<SetResult, Error> {
        self.dcp_set(
            mac,
            DcpRepr::set_reset_to_factory(self.shared.next_xid(), mode),
        )
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
    fn device_info_from_real_identify_response() {
        let f = pn_testkit::fixtures::all()
            .into_iter()
            .find(|f| f.name.contains("pniors-dcp-ident-res-pnet"))
            .expect("fixture");
        let (eth, _, d) = DcpRepr::parse_frame(&f.bytes).unwrap();
        let i = DeviceInfo::from_response(eth.src, &d);
        assert_eq!(i.name_of_station, "rt-labs-dev");
        assert_eq!(i.type_of_station, "P-Net Sample Application");
        assert_eq!((i.vendor_id, i.device_id), (Some(0x0493), Some(0x0002)));
        assert_eq!(i.ip, Some(Ipv4Addr::UNSPECIFIED));
        assert_eq!(i.options.len(), 14);
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

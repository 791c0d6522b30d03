//! [`DcpSetter`]: a DCP Set client without retransmissions on its own raw socket.

use pn_controller::netif::{InterfaceInfo, RawSocket};
use std::time::{Duration, Instant};

/// A DCP Set client without retransmissions (a request to a killed daemon fails fast), on its
/// own raw socket in the controller namespace.
pub struct DcpSetter {
    sock: RawSocket,
    src: [u8; 6],
    xid: u32,
}

impl DcpSetter {
    pub fn open(ns: &pn_testkit::netns::NetNs, nic: &str) -> Result<DcpSetter, String> {
        let nic = nic.to_string();
        ns.enter(move || -> Result<DcpSetter, String> {
            let info = InterfaceInfo::lookup(&nic).map_err(|e| format!("{nic}: {e}"))?;
            let sock = RawSocket::open(&info).map_err(|e| format!("raw socket: {e}"))?;
            Ok(DcpSetter {
                sock,
                src: info.mac.0,
                xid: 0x5e70_0000,
            })
        })?
    }

    /// Send one Set request to `mac` and wait up to `timeout` for its response: `Ok(true)` when
    /// every block was accepted, `Ok(false)` when refused, `Err` on no answer.
    pub fn set(
        &mut self,
        mac: [u8; 6],
        value: pn_protocol::wire::dcp::DcpValue,
        permanent: bool,
        timeout: Duration,
    ) -> Result<bool, String> {
        use pn_protocol::wire::dcp::{BlockError, DcpBlock, DcpRepr, DcpValue};
        self.xid = self.xid.wrapping_add(1);
        let req = DcpRepr::set_request(
            self.xid,
            vec![DcpBlock::with_qualifier(value, u16::from(permanent))],
        );
        let frame = req
            .build_frame(
                pn_controller::MacAddr(mac),
                pn_controller::MacAddr(self.src),
                None,
            )
            .map_err(|e| e.to_string())?;
        self.sock.send(&frame).map_err(|e| e.to_string())?;
        let deadline = Instant::now() + timeout;
        let mut buf = vec![0u8; 2048];
        while Instant::now() < deadline {
            let left = deadline.saturating_duration_since(Instant::now());
            let Ok(Some(n)) = self.sock.recv(&mut buf, left) else {
                continue;
            };
            let f = &buf[..n];
            if f.get(6..12) != Some(&mac[..]) {
                continue;
            }
            let Ok((eth, payload)) = pn_protocol::wire::ethernet::EthernetRepr::parse_frame(f)
            else {
                continue;
            };
            if eth.ethertype != 0x8892 || payload.get(0..2) != Some(&[0xFE, 0xFD][..]) {
                continue;
            }
            let Ok(d) = DcpRepr::parse(&payload[2..]) else {
                continue;
            };
            if d.xid != self.xid || !d.service_type.is_response() {
                continue;
            }
            return Ok(d.blocks.iter().all(|b| match &b.value {
                DcpValue::Response { error, .. } => *error == BlockError::OK,
                _ => true,
            }));
        }
        Err(format!("no DCP Set response within {timeout:?}"))
    }
}

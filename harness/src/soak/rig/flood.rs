//! Floods from the controller namespace: the [`FloodKind`]s, the frames they send and
//! [`Rig::flood`].

use super::Rig;
use crate::peer::DEV_IP;
use crate::soak::Rng;
use pn_controller::netif::{InterfaceInfo, RawSocket};
use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::time::{Duration, Instant};

/// Kinds of flood.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FloodKind {
    /// DCP Identify All (answered by the device), with malformed DCP requests mixed in.
    DcpIdentify,
    /// UDP datagrams to the PNIO-CM port: malformed RPC headers and random bytes.
    RpcGarbage,
    /// RT frames with FrameIDs nobody agreed on (cyclic range and reserved ranges).
    RtUnknown,
    /// RT frames with the AR's output FrameID but truncated, TransferStatus set or DataValid off.
    RtMalformed,
    /// LLDP frames from ever new chassis IDs.
    Lldp,
}

impl FloodKind {
    pub const ALL: [FloodKind; 5] = [
        FloodKind::DcpIdentify,
        FloodKind::RpcGarbage,
        FloodKind::RtUnknown,
        FloodKind::RtMalformed,
        FloodKind::Lldp,
    ];
    pub fn name(self) -> &'static str {
        match self {
            FloodKind::DcpIdentify => "DCP identify storm",
            FloodKind::RpcGarbage => "RPC garbage",
            FloodKind::RtUnknown => "unknown RT frames",
            FloodKind::RtMalformed => "malformed RT frames",
            FloodKind::Lldp => "LLDP flood",
        }
    }
}

fn eth_header(dst: [u8; 6], src: [u8; 6], vlan: bool, ethertype: u16) -> Vec<u8> {
    let mut f = Vec::with_capacity(128);
    f.extend_from_slice(&dst);
    f.extend_from_slice(&src);
    if vlan {
        f.extend_from_slice(&[0x81, 0x00, 0xC0, 0x00]);
    }
    f.extend_from_slice(&ethertype.to_be_bytes());
    f
}

fn pad(mut f: Vec<u8>) -> Vec<u8> {
    if f.len() < 60 {
        f.resize(60, 0);
    }
    f
}

/// DCP Identify All request (FrameID 0xFEFE, ResponseDelay 1).
fn dcp_identify_all(src: [u8; 6], xid: u32) -> Vec<u8> {
    let mut f = eth_header([0x01, 0x0e, 0xcf, 0, 0, 0], src, false, 0x8892);
    f.extend_from_slice(&[0xFE, 0xFE, 0x05, 0x00]);
    f.extend_from_slice(&xid.to_be_bytes());
    // ResponseDelay 1, DCPDataLength 4, AllSelector block (0xFF 0xFF, length 0).
    f.extend_from_slice(&[0x00, 0x01, 0x00, 0x04, 0xFF, 0xFF, 0x00, 0x00]);
    pad(f)
}

fn rt_unknown(src: [u8; 6], dev: [u8; 6], rng: &mut Rng) -> Vec<u8> {
    // Cyclic-range FrameIDs nobody uses, and reserved/unassigned ranges.
    let ids = [
        0x8123u16, 0xBFFF, 0xC3A0, 0x0100, 0x7FFF, 0xFC02, 0xFF40, 0xFEFA,
    ];
    let id = ids[rng.range(0, ids.len() as u64 - 1) as usize];
    let dst = if rng.next_u64() % 2 == 0 {
        dev
    } else {
        [0x01, 0x0e, 0xcf, 0, 0, 0]
    };
    let mut f = eth_header(dst, src, rng.next_u64() % 2 == 0, 0x8892);
    f.extend_from_slice(&id.to_be_bytes());
    let n = rng.range(0, 200) as usize;
    f.extend(rng.bytes(n));
    pad(f)
}

fn rt_malformed(src: [u8; 6], dev: [u8; 6], out_id: u16, rng: &mut Rng) -> Vec<u8> {
    let mut f = eth_header(dev, src, true, 0x8892);
    f.extend_from_slice(&out_id.to_be_bytes());
    match rng.range(0, 3) {
        // Truncated: a few bytes of C_SDU, no APDU status.
        0 => {
            let n = rng.range(0, 10) as usize;
            f.extend(rng.bytes(n));
            f
        }
        // Full length, TransferStatus non-zero.
        1 => {
            f.extend([0x80u8; 40]);
            f.extend_from_slice(&[rng.next_u64() as u8, rng.next_u64() as u8, 0x35, 0x01]);
            f
        }
        // Full length, DataValid off, a wild CycleCounter.
        2 => {
            f.extend([0x80u8; 40]);
            f.extend_from_slice(&[rng.next_u64() as u8, rng.next_u64() as u8, 0x31, 0x00]);
            f
        }
        // Oversized: more than the C_SDU, random content.
        _ => {
            let n = rng.range(100, 1400) as usize;
            f.extend(rng.bytes(n));
            f
        }
    }
}

fn tlv(out: &mut Vec<u8>, t: u8, v: &[u8]) {
    let h = (u16::from(t) << 9) | (v.len() as u16 & 0x1FF);
    out.extend_from_slice(&h.to_be_bytes());
    out.extend_from_slice(v);
}

fn lldp_frame(src: [u8; 6], rng: &mut Rng) -> Vec<u8> {
    let mut f = eth_header([0x01, 0x80, 0xc2, 0, 0, 0x0e], src, false, 0x88cc);
    let chassis = format!("flood-{:016x}", rng.next_u64());
    let mut c = vec![7u8];
    c.extend_from_slice(chassis.as_bytes());
    tlv(&mut f, 1, &c);
    let mut p = vec![7u8];
    p.extend_from_slice(
        format!("port-{:03}.{:05}", rng.range(0, 999), rng.range(0, 99999)).as_bytes(),
    );
    tlv(&mut f, 2, &p);
    tlv(&mut f, 3, &120u16.to_be_bytes());
    if rng.next_u64() % 4 == 0 {
        // A TLV whose length runs past the frame.
        f.extend_from_slice(&[0xFE, 0xFF, 0x00, 0x0E]);
    } else {
        tlv(&mut f, 0, &[]);
    }
    pad(f)
}

impl Rig {
    /// A bounded flood from the controller namespace while the AR runs. Returns the number
    /// of frames (or datagrams) sent.
    pub fn flood(
        &self,
        kind: FloodKind,
        rate_per_s: u64,
        dur: Duration,
        rng: &mut Rng,
    ) -> Result<u64, String> {
        let nic = self.lab.controller_nic().to_string();
        let dev_mac = self
            .ar()
            .map(|a| a.status().device_mac)
            .and_then(|m| pn_controller::parse_mac(&m))
            .map(|m| m.0)
            .unwrap_or([0xff; 6]);
        let out_id = self.ar().map_or(0x8001, |a| a.status().output_frame_id);
        let seed = rng.next_u64();
        self.lab.ns_ctl.enter(move || -> Result<u64, String> {
            let mut rng = Rng::new(seed);
            let info = InterfaceInfo::lookup(&nic).map_err(|e| format!("{nic}: {e}"))?;
            let raw = RawSocket::open(&info).map_err(|e| format!("raw socket: {e}"))?;
            let udp = UdpSocket::bind(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0))
                .map_err(|e| e.to_string())?;
            let src = info.mac.0;
            let total = (rate_per_s as u128 * dur.as_millis() / 1000) as u64;
            let start = Instant::now();
            let mut sent = 0u64;
            let garbage = pn_controller::faults::malformed_rpc_payloads();
            let bad_dcp = pn_controller::faults::malformed_dcp_frames(src);
            while sent < total && start.elapsed() < dur + Duration::from_secs(2) {
                // Pace: never ahead of the rate.
                let due = Duration::from_nanos(sent * 1_000_000_000 / rate_per_s.max(1));
                if let Some(w) = due.checked_sub(start.elapsed()) {
                    if w > Duration::from_micros(200) {
                        std::thread::sleep(w);
                    }
                }
                let r = match kind {
                    FloodKind::DcpIdentify => {
                        if sent % 16 == 15 {
                            let (_, f) = &bad_dcp[(sent / 16) as usize % bad_dcp.len()];
                            raw.send(f)
                        } else {
                            raw.send(&dcp_identify_all(src, rng.next_u64() as u32))
                        }
                    }
                    FloodKind::RpcGarbage => {
                        let p = if sent % 2 == 0 {
                            garbage[(sent / 2) as usize % garbage.len()].1.clone()
                        } else {
                            let n = rng.range(0, 600) as usize;
                            rng.bytes(n)
                        };
                        udp.send_to(&p, SocketAddrV4::new(DEV_IP, 34964))
                            .map(|_| ())
                    }
                    FloodKind::RtUnknown => raw.send(&rt_unknown(src, dev_mac, &mut rng)),
                    FloodKind::RtMalformed => {
                        raw.send(&rt_malformed(src, dev_mac, out_id, &mut rng))
                    }
                    FloodKind::Lldp => raw.send(&lldp_frame(src, &mut rng)),
                };
                // A full socket buffer under a flood is expected: count what went out.
                if r.is_ok() {
                    sent += 1;
                } else {
                    std::thread::yield_now();
                }
            }
            Ok(sent)
        })?
    }
}

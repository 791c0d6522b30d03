//! ARP (RFC 826) for IPv4 over Ethernet, the part the farm needs: read a request, build the
//! reply. pn-device leaves ARP to the kernel, which owns its IP; the farm's device IPs are not
//! the kernel's (one NIC, N virtual devices), so the farm answers for them itself.
//! Pure and panic-free on any input.

use std::net::Ipv4Addr;

pub const ETHERTYPE_ARP: u16 = 0x0806;
const HTYPE_ETHERNET: u16 = 1;
const PTYPE_IPV4: u16 = 0x0800;
pub const OP_REQUEST: u16 = 1;
pub const OP_REPLY: u16 = 2;
/// Ethernet header + the 28-byte ARP body.
const FRAME_LEN: usize = 14 + 28;

/// An ARP packet of IPv4 over Ethernet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Arp {
    pub op: u16,
    pub sender_mac: [u8; 6],
    pub sender_ip: Ipv4Addr,
    pub target_mac: [u8; 6],
    pub target_ip: Ipv4Addr,
}

fn u16_at(b: &[u8], i: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*b.get(i)?, *b.get(i + 1)?]))
}

fn mac_at(b: &[u8], i: usize) -> Option<[u8; 6]> {
    b.get(i..i + 6)?.try_into().ok()
}

fn ip_at(b: &[u8], i: usize) -> Option<Ipv4Addr> {
    let a: [u8; 4] = b.get(i..i + 4)?.try_into().ok()?;
    Some(Ipv4Addr::from(a))
}

impl Arp {
    /// Parse a complete Ethernet frame (an 802.1Q tag is skipped). `None`: not ARP for IPv4
    /// over Ethernet, or cut short.
    pub fn parse_frame(frame: &[u8]) -> Option<Arp> {
        let mut off = 12;
        let mut et = u16_at(frame, off)?;
        if et == 0x8100 {
            off += 4;
            et = u16_at(frame, off)?;
        }
        if et != ETHERTYPE_ARP {
            return None;
        }
        let b = frame.get(off + 2..)?;
        if u16_at(b, 0)? != HTYPE_ETHERNET || u16_at(b, 2)? != PTYPE_IPV4 {
            return None;
        }
        if b.get(4) != Some(&6) || b.get(5) != Some(&4) {
            return None;
        }
        Some(Arp {
            op: u16_at(b, 6)?,
            sender_mac: mac_at(b, 8)?,
            sender_ip: ip_at(b, 14)?,
            target_mac: mac_at(b, 18)?,
            target_ip: ip_at(b, 24)?,
        })
    }

    /// The reply of the owner `mac` of `self.target_ip` to this request, as a complete
    /// (padded, untagged) Ethernet frame.
    pub fn reply_frame(&self, mac: [u8; 6]) -> Vec<u8> {
        let mut f = Vec::with_capacity(60);
        f.extend_from_slice(&self.sender_mac);
        f.extend_from_slice(&mac);
        f.extend_from_slice(&ETHERTYPE_ARP.to_be_bytes());
        f.extend_from_slice(&HTYPE_ETHERNET.to_be_bytes());
        f.extend_from_slice(&PTYPE_IPV4.to_be_bytes());
        f.extend_from_slice(&[6, 4]);
        f.extend_from_slice(&OP_REPLY.to_be_bytes());
        f.extend_from_slice(&mac);
        f.extend_from_slice(&self.target_ip.octets());
        f.extend_from_slice(&self.sender_mac);
        f.extend_from_slice(&self.sender_ip.octets());
        debug_assert_eq!(f.len(), FRAME_LEN);
        f.resize(60, 0);
        f
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CTL: [u8; 6] = [2, 0, 0, 0, 0, 1];
    const DEV: [u8; 6] = [2, 0, 0, 0, 0, 2];

    fn request() -> Vec<u8> {
        let mut f = vec![0xff; 6];
        f.extend_from_slice(&CTL);
        f.extend_from_slice(&[0x08, 0x06, 0, 1, 0x08, 0, 6, 4, 0, 1]);
        f.extend_from_slice(&CTL);
        f.extend_from_slice(&[10, 0, 0, 1]);
        f.extend_from_slice(&[0; 6]);
        f.extend_from_slice(&[10, 0, 0, 7]);
        f
    }

    #[test]
    fn a_request_is_answered_by_the_owner() {
        let req = Arp::parse_frame(&request()).unwrap();
        assert_eq!(req.op, OP_REQUEST);
        assert_eq!(req.target_ip, Ipv4Addr::new(10, 0, 0, 7));
        let rep = req.reply_frame(DEV);
        assert_eq!(rep.len(), 60);
        assert_eq!(&rep[..6], &CTL);
        let back = Arp::parse_frame(&rep).unwrap();
        assert_eq!(back.op, OP_REPLY);
        assert_eq!(back.sender_mac, DEV);
        assert_eq!(back.sender_ip, Ipv4Addr::new(10, 0, 0, 7));
        assert_eq!(back.target_ip, Ipv4Addr::new(10, 0, 0, 1));
    }

    #[test]
    fn tagged_requests_parse_and_nothing_else_does() {
        let mut t = request();
        t.splice(12..12, [0x81, 0x00, 0x00, 0x05]);
        assert!(Arp::parse_frame(&t).is_some());
        let r = request();
        for n in 0..r.len() {
            assert_eq!(Arp::parse_frame(&r[..n]), None, "cut at {n}");
        }
        let mut ipv6 = request();
        ipv6[16] = 0x86;
        assert_eq!(Arp::parse_frame(&ipv6), None);
        // Every byte pattern of a short frame: no panic.
        for b in 0..=255u8 {
            let _ = Arp::parse_frame(&[b; 41]);
        }
    }
}

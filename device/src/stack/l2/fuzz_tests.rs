//! Deterministic random-input robustness of every L2 parser the device exposes to the wire
//! (no panic, bounded output).

use super::*;
use pn_protocol::machine::llmnr_responder::{self as llmnr, LlmnrIdentity};
use pn_protocol::machine::snmp_agent::{self as snmp, SystemInfo};

struct XorShift(u64);
impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

#[test]
fn random_frames_and_datagrams_never_panic() {
    let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
    let mac = MacAddr([2, 0, 0, 0, 0, 1]);
    let id = DcpIdentity {
        mac,
        station_name: "dev".into(),
        device_vendor: "v".into(),
        vendor_id: 1,
        device_id: 1,
        ip: Ipv4Addr::new(10, 0, 0, 2),
        mask: Ipv4Addr::new(255, 0, 0, 0),
        gateway: Ipv4Addr::UNSPECIFIED,
        device_instance: (0, 1),
        device_initiative: true,
    };
    let mut dcp = DcpResponder::new(id, Instant::ZERO);
    let mut lldp = LldpAgent::new(
        mac,
        "dev",
        Ipv4Addr::UNSPECIFIED,
        String::new(),
        1,
        Instant::ZERO,
    );
    let agent = snmp::SnmpAgent::new(SystemInfo::default());
    let lid = LlmnrIdentity {
        name: "dev".into(),
        ip: Ipv4Addr::new(10, 0, 0, 2),
    };
    for i in 0..20_000u64 {
        let n = (rng.next() % 200) as usize;
        let mut f = rng.bytes(n);
        // Steer half of the frames into the DCP / LLDP / SNMP / LLMNR paths.
        if f.len() > 16 && i % 2 == 0 {
            f[0..6].copy_from_slice(&mac.0);
            let et: [u8; 2] = if i % 4 == 0 {
                [0x88, 0x92]
            } else {
                [0x88, 0xcc]
            };
            f[12..14].copy_from_slice(&et);
            if i % 4 == 0 {
                f[14] = 0xfe;
                f[15] = 0xfc + (rng.next() % 4) as u8;
            }
        }
        let now = Instant::from_millis(i);
        let out = dcp.on_frame(&f, now);
        assert!(out.frames.len() <= 1);
        let _ = dcp.poll(now);
        let _ = lldp.on_frame(&f, now);
        let _ = lldp.neighbour(now);
        if let Some(r) = agent.handle(&f, 1) {
            assert!(r.len() <= snmp::MAX_MESSAGE);
        }
        if let Some(r) = llmnr::handle(&f, &lid) {
            assert!(r.len() <= f.len() + 16);
        }
        assert!(!wants(&f) || f.len() >= 16);
    }
}

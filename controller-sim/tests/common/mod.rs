//! Test support: network namespaces with a veth pair, and a small PROFINET test device
//! ([`FakeDevice`], in `fake.rs`) whose protocol behaviour comes from the protocol crate's
//! machines (CMDEV, the DCP responder, the AlarmCR, the cyclic consumer and provider). It
//! records what it receives so tests can assert the controller's behaviour, including under
//! fault injection.

#![allow(dead_code)]

use std::net::Ipv4Addr;

pub use pn_testkit::netns::{NetNs, Veth};

pub mod device;
mod fake;

#[allow(unused_imports)]
pub use fake::{FakeConfig, FakeDevice, Seen};

pub const CTL_IP: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 1);
pub const DEV_IP: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 2);

/// Two namespaces joined by a veth pair, with IPs on both ends.
pub struct Lab {
    pub ctl: NetNs,
    pub dev: NetNs,
    pub veth: Veth,
}

impl Lab {
    pub fn new(prefix: &str) -> Lab {
        let (ctl, dev, veth) =
            Veth::controller_device(prefix, Some("10.77.0.1/24"), Some("10.77.0.2/24"))
                .expect("namespaces and veth pair");
        Lab { ctl, dev, veth }
    }
}

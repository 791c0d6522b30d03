#![no_main]
//! The CMDEV Connect parser and checks the device runs (protocol crate): never panic; every
//! error is a PNIO status.

use libfuzzer_sys::fuzz_target;
use pn_protocol::machine::cmdev::connect::{check_connect, parse_connect, ConnectLimits};

fuzz_target!(|data: &[u8]| {
    if let Ok(req) = parse_connect(data) {
        let _ = check_connect(&req, &ConnectLimits::default());
    }
});

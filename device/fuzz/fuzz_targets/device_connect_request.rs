#![no_main]
//! The device stack's own Connect request block parser (NDR data): never panics; an error is
//! a PNIO status.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = pn_device::stack::ar::ConnectRequest::parse(data);
});

#![no_main]
//! The `POST /api/high-resolution-timer` body parser: any bytes give a typed
//! request or a rejection (never a panic), parsing is deterministic, and an accepted request satisfies the endpoint's constraints.

use libfuzzer_sys::fuzz_target;
use pn_device::api::body;

fuzz_target!(|data: &[u8]| {
    let first = body::parse_high_resolution_timer(data);
    assert_eq!(
        first,
        body::parse_high_resolution_timer(data),
        "parse is not deterministic"
    );
    match first {
        Ok(_enable) => {}
        Err(r) => assert!(
            !r.reason.is_empty() && r.code.starts_with("PnS.Api."),
            "{r:?}"
        ),
    }
});

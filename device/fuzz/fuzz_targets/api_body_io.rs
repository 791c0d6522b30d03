#![no_main]
//! The `POST /api/io` body parser: any bytes give a typed
//! request or a rejection (never a panic), parsing is deterministic, and an accepted request satisfies the endpoint's constraints.

use libfuzzer_sys::fuzz_target;
use pn_device::api::body;

fuzz_target!(|data: &[u8]| {
    let first = body::parse_io(data);
    assert_eq!(first, body::parse_io(data), "parse is not deterministic");
    match first {
        Ok(w) => assert!(!w.data.is_empty() && w.data.len() <= data.len() / 2),
        Err(r) => assert!(
            !r.reason.is_empty() && r.code.starts_with("PnS.Api."),
            "{r:?}"
        ),
    }
});

#![no_main]
//! The `POST /api/diag` body parser: any bytes give a typed
//! request or a rejection (never a panic), parsing is deterministic, and an accepted request satisfies the endpoint's constraints.

use libfuzzer_sys::fuzz_target;
use pn_device::api::body;

fuzz_target!(|data: &[u8]| {
    let first = body::parse_diag(data);
    assert_eq!(first, body::parse_diag(data), "parse is not deterministic");
    match first {
        Ok(d) => assert!(
            d.entry.slot <= 0x7FFF
                && d.entry.severity <= 3
                && d.entry.text.len() <= body::MAX_DIAG_TEXT
        ),
        Err(r) => assert!(
            !r.reason.is_empty() && r.code.starts_with("PnS.Api."),
            "{r:?}"
        ),
    }
});

#![no_main]
//! The `POST /api/config/reload` body parser: any bytes give a typed
//! request or a rejection (never a panic), parsing is deterministic, and an accepted request satisfies the endpoint's constraints.

use libfuzzer_sys::fuzz_target;
use pn_device::api::body;

fuzz_target!(|data: &[u8]| {
    let first = body::parse_config_reload(data);
    assert_eq!(
        first,
        body::parse_config_reload(data),
        "parse is not deterministic"
    );
    match first {
        Ok(p) => assert!(p.map_or(true, |p| !p.as_os_str().is_empty())),
        Err(r) => assert!(
            !r.reason.is_empty() && r.code.starts_with("PnS.Api."),
            "{r:?}"
        ),
    }
});

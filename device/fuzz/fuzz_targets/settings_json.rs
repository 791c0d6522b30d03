#![no_main]
//! The settings JSON parser (layered over the embedded defaults): never panics.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = pn_device::config::Settings::from_json_text(Some(text));
    }
});

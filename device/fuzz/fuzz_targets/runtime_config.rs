#![no_main]
//! The runtime configuration XML parser: any text must yield Ok or an error message, and an
//! accepted configuration must parse the same way again (parsing is deterministic).

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let first = pn_device::config::RuntimeConfig::parse(text, "fuzz");
    if let Ok(a) = &first {
        let b = pn_device::config::RuntimeConfig::parse(text, "fuzz").expect("second parse");
        assert_eq!(a, &b);
    } else if let Err(e) = &first {
        assert!(
            e.starts_with("configuration fuzz"),
            "error does not name the source: {e}"
        );
    }
});

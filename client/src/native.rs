//! Native in-process mode (spec 4.1): unavailable. Opening it fails at once with
//! [`CallResult::NotSupported`]; there is no fallback to service mode.

use crate::error::{CallResult, Error, Result};

fn not_supported() -> Error {
    Error::new(
        CallResult::NotSupported,
        "native in-process mode is not supported; use the service mode (HTTP API)",
    )
}

/// How a client reaches the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Over the local HTTP API (the only supported mode).
    Service,
    /// In-process through the native driver library: not supported.
    Native,
}

/// The native in-process client. It cannot be constructed: [`NativeClient::open`] always fails.
#[derive(Debug)]
pub struct NativeClient {
    _private: (),
}

impl NativeClient {
    /// Always `Err` with [`CallResult::NotSupported`], immediately (no library probing).
    pub fn open(_library_path: Option<&str>) -> Result<NativeClient> {
        Err(not_supported())
    }
}

/// Open a client in `mode`: [`Mode::Service`] gives an HTTP [`crate::Client`] for `base_url`,
/// [`Mode::Native`] fails with [`CallResult::NotSupported`].
pub fn open(mode: Mode, base_url: &str, api_key: Option<String>) -> Result<crate::Client> {
    match mode {
        Mode::Service => crate::Client::connect(base_url, api_key),
        Mode::Native => Err(not_supported()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn native_mode_fails_at_once_with_not_supported() {
        let t = std::time::Instant::now();
        let e = NativeClient::open(Some("/nonexistent/libpnet.so")).unwrap_err();
        assert_eq!(e.kind, CallResult::NotSupported);
        let e = open(Mode::Native, crate::DEFAULT_BASE_URL, None).unwrap_err();
        assert_eq!(e.kind, CallResult::NotSupported);
        assert!(t.elapsed() < std::time::Duration::from_millis(100));
        assert!(open(Mode::Service, crate::DEFAULT_BASE_URL, None).is_ok());
    }
}

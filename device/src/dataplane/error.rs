//! Why a probe or a start failed: [`ProbeError`], [`StartFailure`], [`StartError`] and the
//! [`error_code`] values.

/// The NIC cannot be used (spec 1.8: `ConfigError`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeError {
    /// NIC name that was probed.
    pub nic: String,
    /// OS error code (errno), e.g. 19 ENODEV for a missing NIC, 1 EPERM without CAP_NET_RAW.
    /// Becomes `errorCode` in `ConfigError`.
    pub os_error: i32,
    /// Human-readable reason (becomes part of `statusMessage`).
    pub reason: String,
}

impl std::fmt::Display for ProbeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "NIC '{}': {} (os error {})",
            self.nic, self.reason, self.os_error
        )
    }
}

// Which phase of a start failed is plain data of the service state table (protocol crate),
// re-exported so the stack's paths stay `crate::dataplane`.
pub use pn_protocol::machine::service_state::StartFailure;

/// A failed [`DataPlane::start`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartError {
    pub failure: StartFailure,
    /// Native start result code (spec 7.4: -1 ErrInit, -2 ErrCfg, -3 ErrThread, -4 ErrRunning,
    /// -5 ErrPdi, -6 ErrDap) or, for [`StartFailure::DataPlaneOpen`], the OS error code.
    pub code: i32,
    pub message: String,
}

impl std::fmt::Display for StartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (code {})", self.message, self.code)
    }
}

/// Service runtime error codes (spec 7.4).
pub mod error_code {
    pub const OK: i32 = 0;
    pub const ERR_INIT: i32 = -1;
    pub const ERR_CFG: i32 = -2;
    pub const ERR_THREAD: i32 = -3;
    pub const ERR_RUNNING: i32 = -4;
    pub const ERR_PDI: i32 = -5;
    pub const ERR_DAP: i32 = -6;
}

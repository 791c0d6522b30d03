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

/// Which phase of a start failed; decides the resulting state (spec section 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartFailure {
    /// NIC missing or data-plane open failed -> `ConfigError`, `errorCode` = OS error.
    DataPlaneOpen,
    /// Control-plane (stack instance) start failed -> `Stopped`, `errorCode` = `code`.
    ControlPlane,
    /// Reuse-path stack start failed -> `Stopped`, `errorCode` = `code`.
    ReuseStack,
    /// Reuse-path loop (thread) start failed -> `Stopped`, `errorCode` = 0.
    ReuseLoop,
    /// IOCR / start phase failed -> previous state kept, the request fails.
    StartPhase,
}

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

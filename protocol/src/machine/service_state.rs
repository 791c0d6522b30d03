//! The device service's runtime state table: the states and the one transition function of
//! section 3 of the HTTP contract (`/work/shared/spec/http-interface.md`, "states and
//! transitions"): `(state, trigger) -> (state, effects)`. This is the product's own service
//! state (what `GET /api/status` reports), not a PROFINET standard role; it lives here so that
//! the daemon (`device/src/runtime/`) and the simulator (`sim/service.rs`) run the same table.
//! The runtime asks [`transition`] at every point where the state may change and applies what
//! it returns; the tests below walk the spec's table row by row. Nothing here does I/O.

/// Which phase of a start failed; decides the resulting state (spec section 3). Plain data:
/// the daemon's data plane reports it, the simulator draws it.
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

/// Runtime states (spec section 3). Wire form: the variant name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunState {
    Unknown,
    Stopped,
    Initialized,
    ConfigError,
    DataExchange,
    Aborted,
}

impl RunState {
    pub fn as_str(self) -> &'static str {
        match self {
            RunState::Unknown => "Unknown",
            RunState::Stopped => "Stopped",
            RunState::Initialized => "Initialized",
            RunState::ConfigError => "ConfigError",
            RunState::DataExchange => "DataExchange",
            RunState::Aborted => "Aborted",
        }
    }

    /// Internal numeric value (`ConfigError` = 3 per spec; the wire form is the string).
    pub fn code(self) -> i32 {
        match self {
            RunState::Unknown => 0,
            RunState::Stopped => 1,
            RunState::Initialized => 2,
            RunState::ConfigError => 3,
            RunState::DataExchange => 4,
            RunState::Aborted => 5,
        }
    }

    /// The slave has been started (data plane running).
    pub fn running(self) -> bool {
        matches!(
            self,
            RunState::Initialized | RunState::DataExchange | RunState::Aborted
        )
    }
}

/// What happened (the spec table's "trigger" and "condition" columns).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    /// `POST /api/start` while the slave runs: ignored.
    StartWhileRunning,
    /// `POST /api/start`: the NIC is missing, the configuration is invalid or the data plane
    /// cannot be opened (`code`: the OS error).
    StartNicOrConfigFailed { code: i32 },
    /// `POST /api/start` refused by the licence gate (`code`: the start result code).
    StartLicenceRefused { code: i32 },
    /// `POST /api/start` and the data plane's start failed this way.
    StartFailed { failure: StartFailure, code: i32 },
    /// `POST /api/start` succeeded (fresh or reused instance).
    Started,
    /// `POST /api/stop`, always.
    Stop,
    /// Service shutdown.
    Shutdown,
    /// Cyclic exchange established (an AR in data exchange).
    ExchangeEstablished,
    /// Cyclic exchange lost (watchdog, release, abort, link, data-plane fault).
    ExchangeLost,
    /// The periodic licence recheck failed while running.
    LicenceRecheckFailed { code: i32 },
}

/// What to do: the new state, and the `connected` and `errorCode` values it comes with
/// (`None`: unchanged).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transition {
    pub to: RunState,
    pub connected: Option<bool>,
    pub error_code: Option<i32>,
}

impl Transition {
    fn to(to: RunState) -> Transition {
        Transition {
            to,
            connected: None,
            error_code: None,
        }
    }
    fn connected(mut self, c: bool) -> Transition {
        self.connected = Some(c);
        self
    }
    fn error_code(mut self, c: i32) -> Transition {
        self.error_code = Some(c);
        self
    }
}

/// The spec's section 3 table (and docs/decisions.md §11 for what it leaves open).
pub fn transition(from: RunState, t: Trigger) -> Transition {
    use RunState::*;
    match t {
        Trigger::StartWhileRunning => Transition::to(from),
        Trigger::StartNicOrConfigFailed { code } => Transition::to(ConfigError)
            .connected(false)
            .error_code(code),
        Trigger::StartLicenceRefused { code } => Transition::to(Stopped).error_code(code),
        Trigger::StartFailed { failure, code } => match failure {
            StartFailure::DataPlaneOpen => Transition::to(ConfigError)
                .connected(false)
                .error_code(code),
            StartFailure::ControlPlane | StartFailure::ReuseStack => {
                Transition::to(Stopped).error_code(code)
            }
            // "errorCode = ... 0 for loop failure"
            StartFailure::ReuseLoop => Transition::to(Stopped).error_code(0),
            // "IOCR or start phase fails: previous state kept"
            StartFailure::StartPhase => Transition::to(from),
        },
        Trigger::Started => Transition::to(Initialized).connected(false).error_code(0),
        Trigger::Stop => Transition::to(Stopped).connected(false).error_code(0),
        Trigger::Shutdown => Transition::to(Stopped).connected(false),
        Trigger::ExchangeEstablished => match from {
            // A controller connecting again after a loss is data exchange again.
            Initialized | Aborted => Transition::to(DataExchange).connected(true),
            _ => Transition::to(from),
        },
        Trigger::ExchangeLost => match from {
            DataExchange => Transition::to(Aborted).connected(false),
            _ => Transition::to(from),
        },
        Trigger::LicenceRecheckFailed { code } => {
            Transition::to(Stopped).connected(false).error_code(code)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::RunState::*;
    use super::*;

    const ALL: [RunState; 6] = [
        Unknown,
        Stopped,
        Initialized,
        ConfigError,
        DataExchange,
        Aborted,
    ];

    fn t(from: RunState, tr: Trigger) -> (RunState, Option<bool>, Option<i32>) {
        let x = transition(from, tr);
        (x.to, x.connected, x.error_code)
    }

    /// | Stopped / Unknown | POST /api/start | success | Initialized | connected=false, errorCode=0 |
    /// | ConfigError | POST /api/start | configuration reloaded with a valid NIC | Initialized | fresh start |
    #[test]
    fn start_success() {
        for from in [Stopped, Unknown, ConfigError] {
            assert_eq!(
                t(from, Trigger::Started),
                (Initialized, Some(false), Some(0))
            );
        }
    }

    /// | any | POST /api/start | control-plane start fails | Stopped | errorCode = start result code |
    /// | any | POST /api/start | reuse-path stack start fails, or reuse-path loop start fails | Stopped | errorCode = start result code, or 0 for loop failure |
    #[test]
    fn start_failures_to_stopped() {
        for from in ALL {
            let f = |failure| t(from, Trigger::StartFailed { failure, code: -6 });
            assert_eq!(f(StartFailure::ControlPlane), (Stopped, None, Some(-6)));
            assert_eq!(f(StartFailure::ReuseStack), (Stopped, None, Some(-6)));
            assert_eq!(f(StartFailure::ReuseLoop), (Stopped, None, Some(0)));
        }
    }

    /// | Stopped / Unknown | POST /api/start | NIC missing or data-plane open fails | ConfigError | errorCode = OS error code |
    #[test]
    fn nic_missing_is_config_error() {
        for from in [Stopped, Unknown] {
            assert_eq!(
                t(from, Trigger::StartNicOrConfigFailed { code: 19 }),
                (ConfigError, Some(false), Some(19))
            );
            assert_eq!(
                t(
                    from,
                    Trigger::StartFailed {
                        failure: StartFailure::DataPlaneOpen,
                        code: 1
                    }
                ),
                (ConfigError, Some(false), Some(1))
            );
        }
    }

    /// | any | POST /api/start | IOCR or start phase fails | previous state kept | |
    /// | any | POST /api/start | slave already running | unchanged | request ignored |
    #[test]
    fn start_phase_failure_and_running_keep_the_state() {
        for from in ALL {
            let kept = t(
                from,
                Trigger::StartFailed {
                    failure: StartFailure::StartPhase,
                    code: -3,
                },
            );
            assert_eq!(kept, (from, None, None));
            assert_eq!(t(from, Trigger::StartWhileRunning), (from, None, None));
        }
    }

    /// | any (including when already stopped) | POST /api/stop | always | Stopped | errorCode=0 |
    /// | any | full teardown of the service | service shutdown | Stopped | |
    #[test]
    fn stop_and_shutdown() {
        for from in ALL {
            assert_eq!(t(from, Trigger::Stop), (Stopped, Some(false), Some(0)));
            assert_eq!(t(from, Trigger::Shutdown).0, Stopped);
        }
    }

    /// | Initialized | cyclic exchange established | connected=1 | DataExchange | |
    /// | DataExchange | cyclic exchange lost | connected=0 | Aborted | everConnected stays true |
    #[test]
    fn exchange_established_and_lost() {
        assert_eq!(
            t(Initialized, Trigger::ExchangeEstablished),
            (DataExchange, Some(true), None)
        );
        assert_eq!(
            t(Aborted, Trigger::ExchangeEstablished),
            (DataExchange, Some(true), None)
        );
        assert_eq!(
            t(DataExchange, Trigger::ExchangeLost),
            (Aborted, Some(false), None)
        );
        // Late events change nothing where the table has no row.
        for from in [Unknown, Stopped, ConfigError] {
            assert_eq!(t(from, Trigger::ExchangeEstablished), (from, None, None));
            assert_eq!(t(from, Trigger::ExchangeLost), (from, None, None));
        }
    }

    /// | running | periodic licence recheck fails | | Stopped | slave is stopped |
    #[test]
    fn licence_recheck() {
        for from in [Initialized, DataExchange, Aborted] {
            assert!(from.running());
            assert_eq!(
                t(from, Trigger::LicenceRecheckFailed { code: -1 }),
                (Stopped, Some(false), Some(-1))
            );
        }
    }
}

//! TEST ONLY: named fault-injection points, for the failures of the start sequence (spec 3,
//! rows "control-plane start fails", "reuse-path stack or loop start fails", "IOCR or start
//! phase fails") and the internal-error path of the API (spec 7.2, 500), which no real
//! condition on this machine produces on demand.
//!
//! The real data plane still runs: [`FaultPlane`] wraps it and, at the configured start,
//! returns the configured [`StartError`] *instead of* starting (as the stack would when that
//! phase fails), then delegates everything else. Enabled only by explicit `Dev:Fault*`
//! settings; the daemon logs a warning at launch when any is set.
//!
//! | setting | values |
//! |---|---|
//! | `Dev:FaultStartFailure` | `ControlPlane`, `ReuseStack`, `ReuseLoop`, `StartPhase` |
//! | `Dev:FaultStartCode` | the start result code to report (e.g. -6 ErrDap) |
//! | `Dev:FaultStartMode` | `Any` (default), `Fresh` or `Reuse`: which starts fail |
//! | `Dev:FaultStartTimes` | how many matching starts fail (default 1) |
//! | `Dev:FaultPanicPath` | an API path whose handler panics (to show the 500 path) |
//! | `Dev:FaultProviderHold:Ms`, `:Every` | the provider's real-time thread stops for Ms ms after every Every frames it sent, as on a vCPU the hypervisor holds (the standby sender's test) |

#[cfg(feature = "test-hooks")]
use std::sync::{Arc, Mutex};

#[cfg(feature = "test-hooks")]
use crate::dataplane::{
    DataPlane, EventSink, NicInfo, PlaneStatus, ProbeError, StackCommand, StackConfig, StartError,
};
use crate::dataplane::{StartFailure, StartMode};
#[cfg(feature = "test-hooks")]
use crate::image::ProcessImage;

/// Which starts fail, and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartFault {
    pub failure: StartFailure,
    pub code: i32,
    /// `None` = any start.
    pub mode: Option<StartMode>,
    pub times: u32,
}

/// `Dev:FaultProviderHold`: the provider's thread stops for `ms` after every `every` frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProviderHold {
    pub ms: u32,
    pub every: u32,
}

impl ProviderHold {
    /// From the numbers of `Dev:FaultProviderHold:Ms` and `:Every` (both 0: no hold).
    fn from_numbers(ms: f64, every: f64) -> Result<Option<ProviderHold>, String> {
        if ms == 0.0 && every == 0.0 {
            return Ok(None);
        }
        let whole_in = |v: f64, max: f64| v.fract() == 0.0 && (1.0..=max).contains(&v);
        if !whole_in(ms, 1000.0) || !whole_in(every, 1_000_000.0) {
            return Err(format!(
                "Dev:FaultProviderHold: Ms {ms} and Every {every} must be whole numbers, \
                 1..1000 ms after every 1..1000000 frames"
            ));
        }
        Ok(Some(ProviderHold {
            ms: ms as u32,
            every: every as u32,
        }))
    }
}

/// All configured fault-injection points.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Faults {
    pub start: Option<StartFault>,
    pub panic_path: Option<String>,
    pub provider_hold: Option<ProviderHold>,
}

impl Faults {
    pub fn any(&self) -> bool {
        self.start.is_some() || self.panic_path.is_some() || self.provider_hold.is_some()
    }

    /// Parse the `Dev:Fault*` settings (already flattened to colon paths).
    pub fn from_settings(
        failure: &str,
        code: f64,
        mode: &str,
        times: f64,
        panic_path: &str,
        provider_hold: (f64, f64),
    ) -> Result<Faults, String> {
        let start = if failure.is_empty() {
            None
        } else {
            let failure = match failure {
                "ControlPlane" => StartFailure::ControlPlane,
                "ReuseStack" => StartFailure::ReuseStack,
                "ReuseLoop" => StartFailure::ReuseLoop,
                "StartPhase" => StartFailure::StartPhase,
                o => {
                    return Err(format!(
                        "Dev:FaultStartFailure '{o}' unknown (ControlPlane, ReuseStack, ReuseLoop, StartPhase)"
                    ))
                }
            };
            let mode = match mode {
                "" | "Any" => None,
                "Fresh" => Some(StartMode::Fresh),
                "Reuse" => Some(StartMode::Reuse),
                o => {
                    return Err(format!(
                        "Dev:FaultStartMode '{o}' unknown (Any, Fresh, Reuse)"
                    ))
                }
            };
            if code.fract() != 0.0 || !(-100_000.0..=100_000.0).contains(&code) {
                return Err("Dev:FaultStartCode must be an integer".into());
            }
            let times = if times == 0.0 { 1.0 } else { times };
            if times.fract() != 0.0 || !(1.0..=1000.0).contains(&times) {
                return Err("Dev:FaultStartTimes must be an integer 1..1000".into());
            }
            Some(StartFault {
                failure,
                code: code as i32,
                mode,
                times: times as u32,
            })
        };
        Ok(Faults {
            start,
            panic_path: (!panic_path.is_empty()).then(|| panic_path.to_string()),
            provider_hold: ProviderHold::from_numbers(provider_hold.0, provider_hold.1)?,
        })
    }
}

#[cfg(feature = "test-hooks")]
/// A data plane whose start fails at a configured point (see the module docs).
pub struct FaultPlane {
    inner: Arc<dyn DataPlane>,
    start: Mutex<Option<StartFault>>,
}

#[cfg(feature = "test-hooks")]
impl FaultPlane {
    pub fn new(inner: Arc<dyn DataPlane>, start: Option<StartFault>) -> FaultPlane {
        FaultPlane {
            inner,
            start: Mutex::new(start),
        }
    }

    /// Consume one failure if this start matches.
    fn take(&self, mode: StartMode) -> Option<StartError> {
        let mut g = self.start.lock().unwrap_or_else(|p| p.into_inner());
        let f = g.as_mut()?;
        if f.times == 0 || f.mode.is_some_and(|m| m != mode) {
            return None;
        }
        f.times -= 1;
        Some(StartError {
            failure: f.failure,
            code: f.code,
            message: format!("injected fault: {:?} start phase failed", f.failure),
        })
    }
}

#[cfg(feature = "test-hooks")]
impl DataPlane for FaultPlane {
    fn kind(&self) -> &'static str {
        self.inner.kind()
    }
    fn probe(&self, nic: &str) -> Result<NicInfo, ProbeError> {
        self.inner.probe(nic)
    }
    fn start(
        &self,
        cfg: &StackConfig,
        image: Arc<ProcessImage>,
        events: EventSink,
        mode: StartMode,
    ) -> Result<(), StartError> {
        if let Some(e) = self.take(mode) {
            tracing::warn!("TEST MODE: {e}");
            return Err(e);
        }
        self.inner.start(cfg, image, events, mode)
    }
    fn stop(&self) {
        self.inner.stop()
    }
    fn teardown(&self) {
        self.inner.teardown()
    }
    fn status(&self) -> PlaneStatus {
        self.inner.status()
    }
    fn command(&self, cmd: StackCommand) {
        self.inner.command(cmd)
    }
    fn extra_diag(&self) -> Option<serde_json::Value> {
        self.inner.extra_diag()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_parse_and_validate() {
        let f = Faults::from_settings("ReuseStack", -1.0, "Reuse", 0.0, "", (0.0, 0.0)).unwrap();
        assert_eq!(
            f.start,
            Some(StartFault {
                failure: StartFailure::ReuseStack,
                code: -1,
                mode: Some(StartMode::Reuse),
                times: 1
            })
        );
        assert!(!Faults::from_settings("", 0.0, "", 0.0, "", (0.0, 0.0))
            .unwrap()
            .any());
        assert!(Faults::from_settings("Boom", 0.0, "", 0.0, "", (0.0, 0.0)).is_err());
        assert!(Faults::from_settings("StartPhase", 0.5, "", 0.0, "", (0.0, 0.0)).is_err());
        assert!(
            Faults::from_settings("StartPhase", 0.0, "Sometimes", 0.0, "", (0.0, 0.0)).is_err()
        );
        assert_eq!(
            Faults::from_settings("", 0.0, "", 0.0, "/api/diag", (0.0, 0.0))
                .unwrap()
                .panic_path
                .as_deref(),
            Some("/api/diag")
        );
        let h = Faults::from_settings("", 0.0, "", 0.0, "", (20.0, 1000.0)).unwrap();
        assert_eq!(
            h.provider_hold,
            Some(ProviderHold {
                ms: 20,
                every: 1000
            })
        );
        assert!(h.any());
        for bad in [
            (20.0, 0.0),
            (0.0, 10.0),
            (1.5, 10.0),
            (2000.0, 1.0),
            (-1.0, 5.0),
        ] {
            assert!(
                Faults::from_settings("", 0.0, "", 0.0, "", bad).is_err(),
                "{bad:?}"
            );
        }
    }
}

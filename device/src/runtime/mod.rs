//! The service runtime: the state machine of spec section 3, the licence gate, alarms,
//! diagnosis entries, persistence, and the data behind every API resource.
//!
//! One owner of state: [`Runtime`]. Start/stop/reload/reset are serialised by an async
//! `control` mutex (they may take seconds); everything else reads/writes a short-held std
//! mutex. The data plane's blocking calls run on `spawn_blocking`.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tracing::{error, info, warn};

use crate::alarms::{AlarmItem, Alarms};
use crate::config::{resolve_nic, RuntimeConfig, Settings};
use crate::dataplane::{
    error_code, AbortCause, AlarmSeverity, ArInfo, DataPlane, DiagnosisEntry, EventSink,
    PlaneStatus, ResetMode, StackCommand, StackConfig, StackEvent, StartFailure, StartMode,
};
use crate::image::{ProcessImage, WriteError, IOXS_BAD};
use crate::licence;
use crate::persist::{self, LoadOutcome, Remanent, Store, StoredIp};
use crate::util::{now_rfc3339, to_hex};

/// The log target of every line the runtime writes, from whichever of its files: operators
/// filter and read one name for the service's state machine (`RUST_LOG=pn_device::runtime`).
const LOG_TARGET: &str = "pn_device::runtime";

/// Service name reported by the API.
pub const SERVICE_NAME: &str = "pn-device";
/// Product version: the workspace version (one source, spec 9.2).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
/// `IoSnapshot.formatVersion` (spec 9.3).
pub const FORMAT_VERSION: u32 = 2;

pub use crate::run_state::RunState;
use crate::run_state::{transition, Trigger};

/// `IoWriteResponse.reasonCode` values (spec 7.3).
pub mod reason {
    pub const DELIVERED: &str = "";
    pub const LINK_DOWN: &str = "PnS.Io.NotDelivered.LinkDown";
    pub const DATA_PLANE_STOPPED: &str = "PnS.Io.NotDelivered.DataPlaneStopped";
    pub const NOT_FLUSHED: &str = "PnS.Io.NotDelivered.NotFlushed";
}

/// `waitReason` values (docs/decisions.md).
pub mod wait_reason {
    pub const NONE: &str = "";
    pub const NOT_STARTED: &str = "NotStarted";
    pub const LICENCE_INVALID: &str = "LicenceInvalid";
    pub const CONFIG_ERROR: &str = "ConfigError";
    pub const LINK_DOWN: &str = "LinkDown";
    pub const WAITING_FOR_CONTROLLER: &str = "WaitingForController";
    pub const CONNECTION_LOST: &str = "ConnectionLost";
}

/// Take the state table's answer for `t` (module `run_state`): the new state and the
/// `connected` / `errorCode` values it comes with. Returns the new state.
fn apply(sh: &mut Shared, t: Trigger) -> RunState {
    let x = transition(sh.state, t);
    if sh.state == RunState::DataExchange && x.to != RunState::DataExchange {
        // Every way out of data exchange ends the AR: the event that knew why left its words
        // in `ar_end`; the others are named by their trigger.
        let (reason, cause) = sh.ar_end.take().unwrap_or_else(|| match t {
            Trigger::Stop => ("the slave was stopped (Stop)".into(), "stopped"),
            Trigger::Shutdown => ("the service shut down".into(), "stopped"),
            Trigger::LicenceRecheckFailed { .. } => (
                "the licence recheck failed: the slave was stopped".into(),
                "stopped",
            ),
            _ => ("cyclic data exchange lost".into(), "fault"),
        });
        end_ar(sh, reason, cause);
    }
    sh.ar_end = None;
    sh.state = x.to;
    if let Some(c) = x.connected {
        sh.connected = c;
    }
    if let Some(e) = x.error_code {
        sh.error_code = e;
    }
    x.to
}

/// ARs kept in `arHistory`.
pub const AR_HISTORY: usize = 16;

/// One AR as `GET /api/status` shows it (`ar`, `arHistory`): the controller's parameters
/// ([`ArInfo`]), when it began and, once over, when and why it ended. Fields in sorted order,
/// like [`StatusBody`] (the status bytes equal a sorted `Value` map's).
#[derive(Debug, Clone, Default, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ArRecord {
    ar_uuid: String,
    controller_ip: String,
    controller_mac: String,
    controller_station_name: String,
    cycle_us: u64,
    data_hold_factor: u16,
    data_hold_us: u64,
    /// `fault`, `releasedByController`, `abortedByController`, `stopped`; "" while running.
    end_cause: &'static str,
    /// Why it ended, in words; "" while running.
    end_reason: String,
    ended_at: String,
    mismatched_submodules: Vec<[u16; 2]>,
    reduction_ratio: u16,
    send_clock_factor: u16,
    send_clock_us: u64,
    since: String,
    watchdog_factor: u16,
}

impl ArRecord {
    fn begin(controller: &str, info: Option<ArInfo>) -> ArRecord {
        let i = info.unwrap_or_else(|| ArInfo {
            // A data plane without a real AR (the simulator) names only the controller.
            controller_station_name: controller.to_string(),
            ..ArInfo::default()
        });
        ArRecord {
            ar_uuid: i.ar_uuid,
            controller_ip: i.controller_ip,
            controller_mac: i.controller_mac,
            controller_station_name: i.controller_station_name,
            cycle_us: i.cycle_us,
            data_hold_factor: i.data_hold_factor,
            data_hold_us: i.data_hold_us,
            mismatched_submodules: i.mismatched_submodules,
            reduction_ratio: i.reduction_ratio,
            send_clock_factor: i.send_clock_factor,
            send_clock_us: i.send_clock_us,
            since: now_rfc3339(),
            watchdog_factor: i.watchdog_factor,
            ..ArRecord::default()
        }
    }
}

fn cause_text(c: AbortCause) -> &'static str {
    match c {
        AbortCause::Fault => "fault",
        AbortCause::ReleasedByController => "releasedByController",
        AbortCause::AbortedByController => "abortedByController",
    }
}

/// Move the running AR (if any) into the history with its end.
fn end_ar(sh: &mut Shared, reason: String, cause: &'static str) {
    if let Some(mut a) = sh.ar.take() {
        a.ended_at = now_rfc3339();
        a.end_reason = reason;
        a.end_cause = cause;
        sh.ar_history.push_front(a);
        sh.ar_history.truncate(AR_HISTORY);
    }
}

/// Key of a diagnosis entry: (slot, subslot, channel, errorType).
pub type DiagKey = (u16, u16, u16, u16);

/// Action of `POST /api/diag`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiagAction {
    Add,
    Update,
    Remove,
}

struct Shared {
    state: RunState,
    connected: bool,
    ever_connected: bool,
    error_code: i32,
    status_message: String,
    /// Last link state reported by the plane (events).
    link_up: bool,
    config: RuntimeConfig,
    /// `None` = the configuration currently loaded is not valid (initial load failed).
    config_error: Option<String>,
    config_path: Option<PathBuf>,
    /// Configuration the plane instance was started with (kept across soft stops).
    instance: Option<StackConfig>,
    master_station_name: String,
    /// The device's NameOfStation now (what DCP answers): see `Remanent::start_station_name`.
    station_name: String,
    /// A reload changed the configuration's StationName while the stack ran: the device takes
    /// it at the next start.
    pending_station_name: Option<String>,
    master_ip: Option<StoredIp>,
    dcp_ip_applied: bool,
    dcp_ip_apply_message: String,
    alarms: Alarms,
    diag: BTreeMap<DiagKey, DiagnosisEntry>,
    high_res: bool,
    licence_failed: bool,
    controller: String,
    /// The AR in data exchange.
    ar: Option<ArRecord>,
    /// Why the AR is ending, left by the event that ends it for [`apply`].
    ar_end: Option<(String, &'static str)>,
    /// Ended ARs, newest first, at most [`AR_HISTORY`].
    ar_history: std::collections::VecDeque<ArRecord>,
}

/// The runtime. Create with [`Runtime::new`], then [`Runtime::spawn_tasks`].
pub struct Runtime {
    settings: Settings,
    plane: Arc<dyn DataPlane>,
    store: Store,
    env_nic: Option<String>,
    control: tokio::sync::Mutex<()>,
    save_lock: Mutex<()>,
    /// The remanent data as stored (station name, IP, I&M1-4, records). Its own lock, a
    /// leaf: held only to read or swap the value, never while taking another lock. The
    /// stack's CM/L2 threads commit through it while the stack's lock may be held by a
    /// thread stopping the stack, and API handlers call into the stack under the state lock;
    /// if a commit took the state lock, those three could wait on each other forever.
    remanent: Mutex<Remanent>,
    sh: Mutex<Shared>,
    image: RwLock<Arc<ProcessImage>>,
    sink: EventSink,
    rx: Mutex<Option<tokio::sync::mpsc::UnboundedReceiver<StackEvent>>>,
    started_at: Instant,
    started_at_text: String,
    /// `hardwarePortPresent` of `GET /api/status`, cached for the link monitor's poll period.
    port_presence: crate::dataplane::PortPresenceCache,
}

/// The `GET /api/status` document (spec 2.1; `stateCode`, `interfaceName`, `linkUp`,
/// `highResolutionTimer`, `configSource` are extras). Fields in sorted order, the order the
/// earlier `serde_json::Value` map wrote them, so the bytes on the wire did not change.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct StatusBody<'a> {
    alarm_count: usize,
    ar: Option<&'a ArRecord>,
    ar_history: &'a std::collections::VecDeque<ArRecord>,
    config_source: &'a str,
    config_station_name: &'a str,
    connected: bool,
    critical_alarm_count: usize,
    dcp_ip_applied: bool,
    dcp_ip_apply_message: &'a str,
    error_code: i32,
    ever_connected: bool,
    hardware_port_present: bool,
    high_resolution_timer: bool,
    interface_name: &'a str,
    io_epoch: u64,
    link_up: bool,
    master_assigned_gateway: String,
    master_assigned_ip: String,
    master_assigned_mask: String,
    master_station_name: &'a str,
    output_synced_to_driver: bool,
    service_name: &'static str,
    state: &'static str,
    state_code: i32,
    status_message: &'a str,
    timestamp: String,
    version: &'static str,
    wait_reason: &'static str,
}

fn ok_body(ok: bool, message: impl Into<String>) -> Value {
    json!({ "ok": ok, "message": message.into(), "timestamp": now_rfc3339() })
}

fn diag_severity(sev: u8) -> AlarmSeverity {
    match sev {
        0 => AlarmSeverity::Critical,
        1 => AlarmSeverity::Warning,
        2 => AlarmSeverity::Error,
        _ => AlarmSeverity::Info,
    }
}

/// "slot/subslot" of every configured submodule, for messages.
fn configured_submodules(c: &RuntimeConfig) -> String {
    c.modules
        .iter()
        .flat_map(|m| {
            m.submodules
                .iter()
                .map(move |s| format!("{}/{:#06x}", m.slot, s.subslot))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn diag_key_text(k: &DiagKey) -> String {
    format!("diag:{}/{}/{}/{:#06x}", k.0, k.1, k.2, k.3)
}

fn trim_im(s: &str) -> String {
    s.trim_end_matches([' ', '\0']).to_string()
}

impl Runtime {
    /// Build the runtime: load the configuration and the remanent data. Never fails: a bad
    /// configuration or persistence file is reported in the state/alarms.
    pub fn new(
        settings: Settings,
        plane: Arc<dyn DataPlane>,
        env_nic: Option<String>,
        config_path: Option<PathBuf>,
    ) -> Arc<Runtime> {
        let mut alarms = Alarms::new();
        let (config, config_error) = match RuntimeConfig::load(config_path.as_deref()) {
            Ok(c) => (c, None),
            Err(e) => {
                error!("{e}");
                alarms.raise("config", AlarmSeverity::Error, "config", &e);
                (
                    RuntimeConfig::load(None).expect("embedded default configuration is valid"),
                    Some(e),
                )
            }
        };
        let store = Store::new(&settings.persistence_dir);
        let remanent = match store.load() {
            LoadOutcome::Missing => Remanent::default(),
            LoadOutcome::Loaded(r) => {
                info!("remanent data loaded from {}", store.path().display());
                r
            }
            LoadOutcome::Corrupt(e) => {
                error!("persistence: {e}");
                alarms.raise("persistence", AlarmSeverity::Warning, "persistence", &e);
                Remanent::default()
            }
        };
        // The configuration's StationName in force: the device's name again when it changed
        // (docs/decisions.md §21). An invalid configuration (defaults in use) changes nothing.
        let remanent = if config_error.is_none() {
            let change = persist::Change::ConfigStationName(config.station_name.clone());
            store.commit(&remanent, &change).unwrap_or_else(|e| {
                warn!("persistence: cannot record the configuration's station name: {e}");
                change.applied_to(&remanent)
            })
        } else {
            remanent
        };
        let image = ProcessImage::new(config.input_len, config.output_len);
        let (sink, rx) = EventSink::channel();
        let (state, error_code, status_message) = match &config_error {
            Some(e) => (RunState::Stopped, error_code::ERR_CFG, e.clone()),
            None => (RunState::Stopped, 0, String::new()),
        };
        let sh = Shared {
            state,
            connected: false,
            ever_connected: false,
            error_code,
            status_message,
            link_up: false,
            master_station_name: remanent.station_name.clone().unwrap_or_default(),
            station_name: remanent.start_station_name(&config.station_name),
            pending_station_name: None,
            master_ip: remanent.ip,
            dcp_ip_applied: false,
            dcp_ip_apply_message: String::new(),
            config,
            config_error,
            config_path,
            instance: None,
            alarms,
            diag: BTreeMap::new(),
            high_res: settings.high_resolution_timer,
            licence_failed: false,
            controller: String::new(),
            ar: None,
            ar_end: None,
            ar_history: Default::default(),
        };
        Arc::new_cyclic(|weak: &std::sync::Weak<Runtime>| {
            // The stack commits remanent changes through the sink before it answers.
            let weak = weak.clone();
            let sink = sink.with_commit(Arc::new(move |ev: &StackEvent| match weak.upgrade() {
                Some(rt) => rt.commit_event(ev),
                None => Err("the service is shutting down".into()),
            }));
            Runtime {
                settings,
                plane,
                store,
                env_nic: env_nic.filter(|s| !s.trim().is_empty()),
                control: tokio::sync::Mutex::new(()),
                save_lock: Mutex::new(()),
                remanent: Mutex::new(remanent),
                sh: Mutex::new(sh),
                image: RwLock::new(Arc::new(image)),
                sink,
                rx: Mutex::new(Some(rx)),
                started_at: Instant::now(),
                started_at_text: now_rfc3339(),
                port_presence: crate::dataplane::PortPresenceCache::new(
                    crate::stack::link::DEFAULT_POLL,
                ),
            }
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Shared> {
        self.sh.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn current_image(&self) -> Arc<ProcessImage> {
        self.image.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The settings the daemon runs with.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// Start the event loop and the licence recheck (call once, inside tokio).
    pub fn spawn_tasks(self: &Arc<Self>) {
        if let Some(mut rx) = self.rx.lock().unwrap_or_else(|p| p.into_inner()).take() {
            let rt = self.clone();
            tokio::spawn(async move {
                while let Some(ev) = rx.recv().await {
                    rt.handle_event(ev);
                }
            });
        }
        let rt = self.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(rt.settings.licence_recheck);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            tick.tick().await;
            loop {
                tick.tick().await;
                rt.licence_recheck().await;
            }
        });
    }

    fn nic(&self, cfg: &RuntimeConfig) -> String {
        resolve_nic(self.env_nic.as_deref(), cfg, &self.settings)
    }

    /// The NIC the running slave uses, else the one the configuration resolves to.
    fn active_nic(&self, sh: &Shared) -> String {
        match (&sh.instance, sh.state.running()) {
            (Some(i), true) => i.nic.clone(),
            _ => self.nic(&sh.config),
        }
    }

    fn check_licence(&self, nic: &str) -> Result<licence::Payload, String> {
        licence::check_file(
            &self.settings.licence_path,
            &self.settings.trusted_keys,
            &licence::Identity::current(Some(nic)),
        )
    }

    async fn licence_recheck(&self) {
        let _c = self.control.lock().await;
        let (running, nic) = {
            let sh = self.lock();
            (sh.state.running(), self.active_nic(&sh))
        };
        if !running {
            return;
        }
        if let Err(e) = self.check_licence(&nic) {
            error!("licence recheck failed, stopping the slave: {e}");
            let plane = self.plane.clone();
            let _ = tokio::task::spawn_blocking(move || plane.stop()).await;
            let img = self.current_image();
            img.invalidate_input();
            img.set_device_status(IOXS_BAD, IOXS_BAD);
            let mut sh = self.lock();
            apply(
                &mut sh,
                Trigger::LicenceRecheckFailed {
                    code: error_code::ERR_INIT,
                },
            );
            sh.status_message = format!("slave stopped by the licence recheck: {e}");
            sh.licence_failed = true;
            sh.alarms
                .raise("licence", AlarmSeverity::Critical, "licence", &e);
        }
    }

    /// How long `POST /api/io` waits for the write to go out in a frame: five cycles of the
    /// running AR (its SendClockFactor × ReductionRatio, which a controller may set far above
    /// the configured send clock: profinet-py's default is 32 ms), at least 10 ms; without
    /// an AR five send clocks. `Dev:DeliveryWaitMs` overrides it.
    fn delivery_wait(&self, cfg: &RuntimeConfig, ar_cycle_ns: u64) -> Duration {
        if self.settings.delivery_wait_ms > 0 {
            return Duration::from_millis(self.settings.delivery_wait_ms);
        }
        let cycle = if ar_cycle_ns > 0 {
            Duration::from_nanos(ar_cycle_ns)
        } else {
            Duration::from_millis(cfg.send_clock_ms as u64)
        };
        (cycle * 5).max(Duration::from_millis(10))
    }

    fn wait_reason(sh: &Shared) -> &'static str {
        match sh.state {
            RunState::DataExchange => wait_reason::NONE,
            RunState::ConfigError => wait_reason::CONFIG_ERROR,
            RunState::Stopped | RunState::Unknown => {
                if sh.licence_failed {
                    wait_reason::LICENCE_INVALID
                } else {
                    wait_reason::NOT_STARTED
                }
            }
            RunState::Initialized | RunState::Aborted if !sh.link_up => wait_reason::LINK_DOWN,
            RunState::Initialized => wait_reason::WAITING_FOR_CONTROLLER,
            RunState::Aborted => wait_reason::CONNECTION_LOST,
        }
    }

    fn plane_status(&self) -> PlaneStatus {
        self.plane.status()
    }

    // ------------------------------------------------------------------ events

    /// Record the configuration's StationName (after a reload); when it changed, the name the
    /// device takes from it.
    fn adopt_config_station_name(&self, name: &str) -> Option<String> {
        let change = persist::Change::ConfigStationName(name.to_string());
        let before = self.remanent_guard().clone();
        if let Err(e) = self.commit_remanent(&change) {
            warn!("persistence: {e}");
            return None;
        }
        let after = self.remanent_guard().clone();
        (after != before).then(|| after.start_station_name(name))
    }

    /// Make one remanent change durable, then take it as the in-memory value
    /// (docs/decisions.md, "Remanent data is acknowledged after it is durable"). Serialised by
    /// `save_lock`, under which the remanent data changes only here, so memory always equals
    /// the file. The file I/O runs without the state lock. On error nothing changes: the
    /// error is logged, raised as an alarm and returned.
    fn commit_remanent(&self, change: &persist::Change) -> Result<(), String> {
        let _g = self.save_lock.lock().unwrap_or_else(|p| p.into_inner());
        let current = self.remanent_guard().clone();
        match self.store.commit(&current, change) {
            Ok(next) => {
                *self.remanent_guard() = next;
                Ok(())
            }
            Err(e) => {
                let msg = format!(
                    "cannot write remanent data to {}: {e}",
                    self.store.path().display()
                );
                error!("persistence: {msg}; the change is refused");
                Err(msg)
            }
        }
    }

    /// The remanent data (the leaf lock, see the field).
    fn remanent_guard(&self) -> std::sync::MutexGuard<'_, Remanent> {
        self.remanent.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The alarm of a failed remanent write, raised by a caller that may take the state lock.
    fn raise_persistence_alarm(sh: &mut Shared, msg: &str) {
        sh.alarms.raise(
            "persistence:write",
            AlarmSeverity::Error,
            "persistence",
            msg,
        );
    }
}

mod control;
mod events;
mod views;

#[cfg(test)]
mod tests;

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
    error_code, AbortCause, AlarmSeverity, DataPlane, DiagnosisEntry, EventSink, PlaneStatus,
    ResetMode, StackCommand, StackConfig, StackEvent, StartFailure, StartMode,
};
use crate::image::{ProcessImage, WriteError, IOXS_BAD};
use crate::licence;
use crate::persist::{self, LoadOutcome, Remanent, Store, StoredIp};
use crate::util::{now_rfc3339, to_hex};

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
    sh.state = x.to;
    if let Some(c) = x.connected {
        sh.connected = c;
    }
    if let Some(e) = x.error_code {
        sh.error_code = e;
    }
    x.to
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

    /// The durable-commit handler of the plane's [`EventSink`]: stores the remanent part of
    /// `ev` (if any) and returns when it is on disk. Runs on the stack's CM/L2 worker thread
    /// before the stack answers the request; the event itself follows through the sink and
    /// updates the status (it does not touch the remanent data again).
    pub fn commit_event(&self, ev: &StackEvent) -> Result<(), String> {
        match persist::Change::of_event(ev) {
            // On a stack thread: the alarm goes through the event queue (the state lock must
            // not be taken here, see the `remanent` field).
            Some(c) => self.commit_remanent(&c).inspect_err(|msg| {
                self.sink.send(StackEvent::PersistenceFailed {
                    message: msg.clone(),
                });
            }),
            None => Ok(()),
        }
    }

    /// Apply one event from the data plane. Remanent data is not changed here: the plane
    /// committed it through [`Runtime::commit_event`] before it answered the request.
    pub fn handle_event(&self, ev: StackEvent) {
        self.apply_event(ev);
    }

    fn apply_event(&self, ev: StackEvent) {
        let mut sh = self.lock();
        let nic = self.active_nic(&sh);
        match ev {
            StackEvent::LinkChanged { up } => {
                if sh.link_up != up {
                    info!("link on {nic} is {}", if up { "up" } else { "down" });
                }
                sh.link_up = up;
                let key = format!("link:{nic}");
                if up {
                    sh.alarms.clear(&key);
                } else if sh.state.running() {
                    sh.alarms.raise(
                        &key,
                        AlarmSeverity::Warning,
                        "link",
                        &format!("link down on {nic}"),
                    );
                }
            }
            StackEvent::Connected { controller } => {
                if transition(sh.state, Trigger::ExchangeEstablished).to == RunState::DataExchange
                    && sh.state != RunState::DataExchange
                {
                    info!("cyclic data exchange established with {controller}");
                    apply(&mut sh, Trigger::ExchangeEstablished);
                    sh.ever_connected = true;
                    sh.status_message = format!("cyclic data exchange with {controller}");
                    sh.controller = controller;
                    sh.alarms.clear("connection");
                } else {
                    warn!("ignoring Connected in state {}", sh.state.as_str());
                }
            }
            StackEvent::Aborted { reason, cause } => {
                if sh.state == RunState::DataExchange {
                    // The spec's table: DataExchange -> Aborted whoever ended it. A release
                    // or the controller's own abort is not a fault of this device: it is
                    // said so, logged as information and raised below Error severity
                    // (docs/decisions.md §20).
                    let (what, severity) = match cause {
                        AbortCause::Fault => ("lost", AlarmSeverity::Error),
                        AbortCause::ReleasedByController => {
                            ("ended by the controller", AlarmSeverity::Info)
                        }
                        AbortCause::AbortedByController => {
                            ("ended by the controller", AlarmSeverity::Warning)
                        }
                    };
                    if cause == AbortCause::Fault {
                        warn!("cyclic data exchange lost: {reason}");
                    } else {
                        info!("cyclic data exchange ended by the controller: {reason}");
                    }
                    apply(&mut sh, Trigger::ExchangeLost);
                    sh.status_message = format!("cyclic data exchange {what}: {reason}");
                    let message = if cause == AbortCause::Fault {
                        format!("connection aborted: {reason}")
                    } else {
                        format!("connection ended by the controller: {reason}")
                    };
                    sh.alarms
                        .raise("connection", severity, "connection", &message);
                }
            }
            StackEvent::DcpNameAssigned { name, permanent } => {
                info!("DCP station name '{name}' (permanent: {permanent})");
                // The stored name was committed before the Set was answered: a temporary
                // name erased it (p-net pf_cmina_dcp_set_ind; docs/decisions.md §13).
                sh.station_name = name.clone();
                sh.master_station_name = name;
            }
            StackEvent::DcpIpAssigned {
                ip,
                mask,
                gateway,
                permanent,
                applied,
            } => {
                info!("DCP IP {ip}/{mask} gw {gateway} (permanent: {permanent}): {applied:?}");
                sh.master_ip = Some(StoredIp { ip, mask, gateway });
                sh.dcp_ip_applied = applied.is_ok();
                sh.dcp_ip_apply_message = match applied {
                    Ok(()) => format!("{ip}/{mask} gateway {gateway} applied"),
                    Err(e) => format!("cannot apply {ip}/{mask}: {e}"),
                };
            }
            StackEvent::DcpSignal => {
                sh.alarms.raise(
                    "dcp:signal",
                    AlarmSeverity::Info,
                    "dcp",
                    "DCP signal (flash) requested",
                );
            }
            StackEvent::DcpResetToFactory { qualifier, mode } => {
                info!("DCP ResetToFactory qualifier {qualifier:#x} -> {mode:?}");
                self.apply_reset(&mut sh, mode);
                // The stack goes back to the configured name/IP at once (as for POST
                // /api/reset); it only knows the effective values it was started with.
                if sh.state.running() {
                    let c = &sh.config;
                    self.plane.command(StackCommand::Reset {
                        mode,
                        station_name: String::new(),
                        ip: c.ip,
                        mask: c.mask,
                        gateway: c.gateway,
                    });
                }
            }
            StackEvent::RecordWritten {
                slot,
                subslot,
                index,
                data,
            } => {
                // Committed (and shown by GET /api/records, /api/im) before the write was
                // answered.
                info!(
                    "record {slot}/{subslot} index {index:#06x} written ({} bytes)",
                    data.len()
                );
            }
            StackEvent::AlarmAcknowledged {
                slot,
                subslot,
                alarm_type,
                sequence,
                ok,
            } => {
                info!("controller acknowledged alarm type {alarm_type:#x} seq {sequence} at {slot}/{subslot}: ok={ok}");
            }
            StackEvent::Alarm {
                severity,
                source,
                message,
            } => {
                sh.alarms.raise(
                    &format!("stack:{source}:{message}"),
                    severity,
                    &source,
                    &message,
                );
            }
            StackEvent::PersistenceFailed { message } => {
                Self::raise_persistence_alarm(&mut sh, &message);
            }
            StackEvent::Fault { code, message } => {
                error!("data plane fault {code}: {message}");
                apply(&mut sh, Trigger::ExchangeLost);
                sh.alarms
                    .raise("fault", AlarmSeverity::Critical, "stack", &message);
            }
        }
    }

    /// The non-remanent part of a reset (the remanent part is committed first with
    /// [`persist::Change::Reset`]).
    fn apply_reset(&self, sh: &mut Shared, mode: ResetMode) {
        sh.master_station_name.clear();
        // ResetToFactory leaves the NameOfStation empty (IEC 61158-6-10 as p-net's
        // pf_cmina_reset applies it), not the configuration's.
        sh.station_name.clear();
        sh.pending_station_name = None;
        sh.master_ip = None;
        sh.dcp_ip_applied = false;
        sh.dcp_ip_apply_message.clear();
        if mode == ResetMode::Factory {
            sh.diag.clear();
            sh.alarms.clear_prefix("diag:");
        }
    }

    // ------------------------------------------------------------------ start / stop

    fn build_stack_config(&self, sh: &Shared, nic: &str) -> StackConfig {
        let c = &sh.config;
        let rem = self.remanent_guard();
        let ip = rem.ip.unwrap_or(StoredIp {
            ip: c.ip,
            mask: c.mask,
            gateway: c.gateway,
        });
        let station_name = sh
            .pending_station_name
            .clone()
            .unwrap_or_else(|| sh.station_name.clone());
        let mut sc = StackConfig {
            nic: nic.to_string(),
            station_name,
            ip: ip.ip,
            mask: ip.mask,
            gateway: ip.gateway,
            device_name: c.device_name.clone(),
            vendor_id: c.vendor_id,
            device_id: c.device_id,
            send_clock_factor: c.send_clock_ms * 32,
            watchdog_ms: self.settings.watchdog_ms,
            safe_input_value: self.settings.safe_input_value,
            modules: c.modules.clone(),
            im0: c.im0.clone(),
            im: rem.im.clone(),
            records: rem.records.clone(),
            high_resolution_timer: sh.high_res,
            input_len: c.input_len,
            output_len: c.output_len,
            fingerprint: String::new(),
        };
        sc.fingerprint = self.fingerprint(&sc, sh);
        sc
    }

    /// Fingerprint inputs of spec 3 rule 3 (the "native library path" is the data-plane kind).
    fn fingerprint(&self, sc: &StackConfig, sh: &Shared) -> String {
        let text = format!(
            "nic={}|name={}|ip={}|mask={}|gw={}|cycle={}|vendor={}|device={}|wd={}|safe={}|in={}|out={}|xml={}|lib={}",
            sc.nic,
            sc.station_name,
            sc.ip,
            sc.mask,
            sc.gateway,
            sc.send_clock_factor,
            sc.vendor_id,
            sc.device_id,
            sc.watchdog_ms,
            sc.safe_input_value,
            sc.input_len,
            sc.output_len,
            sh.config_path.as_ref().map(|p| p.display().to_string()).unwrap_or_default(),
            self.plane.kind()
        );
        // FNV-1a 64: a stable, dependency-free digest (not a security property).
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in text.bytes() {
            h ^= b as u64;
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        format!("{h:016x}")
    }

    fn start_stop_body(ok: bool, message: String, code: i32) -> Value {
        json!({ "ok": ok, "message": message, "errorCode": code, "timestamp": now_rfc3339() })
    }

    /// `POST /api/start`.
    pub async fn start(&self) -> Value {
        let _c = self.control.lock().await;
        let (state, nic, config_error) = {
            let sh = self.lock();
            (sh.state, self.nic(&sh.config), sh.config_error.clone())
        };
        if state.running() {
            let code = self.lock().error_code;
            return Self::start_stop_body(
                true,
                format!(
                    "slave already running ({}); request ignored",
                    state.as_str()
                ),
                code,
            );
        }
        if let Some(e) = config_error {
            let mut sh = self.lock();
            apply(
                &mut sh,
                Trigger::StartNicOrConfigFailed {
                    code: error_code::ERR_CFG,
                },
            );
            sh.status_message = format!("NIC '{nic}': configuration invalid: {e}");
            return Self::start_stop_body(false, sh.status_message.clone(), error_code::ERR_CFG);
        }
        // Driver probe (spec 1.5 / 1.8).
        let plane = self.plane.clone();
        let nic2 = nic.clone();
        let probe = tokio::task::spawn_blocking(move || plane.probe(&nic2)).await;
        let probe = match probe {
            Ok(p) => p,
            Err(e) => {
                return Self::start_stop_body(
                    false,
                    format!("probe task failed: {e}"),
                    error_code::ERR_INIT,
                )
            }
        };
        if let Ok(info) = &probe {
            // Until the plane's link monitor reports, the probe's view of the link is current.
            self.lock().link_up = info.link.up;
        }
        if let Err(e) = probe {
            error!("start refused: data plane probe failed: {e}");
            let mut sh = self.lock();
            apply(
                &mut sh,
                Trigger::StartNicOrConfigFailed { code: e.os_error },
            );
            sh.status_message = format!("NIC '{}': {} (os error {})", e.nic, e.reason, e.os_error);
            let msg = sh.status_message.clone();
            sh.alarms
                .raise("config:nic", AlarmSeverity::Error, "config", &msg);
            return Self::start_stop_body(false, format!("start refused: {msg}"), e.os_error);
        }
        // Licence gate (spec 1.10).
        if let Err(e) = self.check_licence(&nic) {
            error!("start refused: {e}");
            let mut sh = self.lock();
            apply(
                &mut sh,
                Trigger::StartLicenceRefused {
                    code: error_code::ERR_INIT,
                },
            );
            sh.status_message = format!("start refused: {e}");
            sh.licence_failed = true;
            sh.alarms
                .raise("licence", AlarmSeverity::Critical, "licence", &e);
            return Self::start_stop_body(false, sh.status_message.clone(), error_code::ERR_INIT);
        }
        let (sc, mode, prev_state) = {
            let mut sh = self.lock();
            sh.licence_failed = false;
            sh.alarms.clear("licence");
            sh.alarms.clear("config:nic");
            let sc = self.build_stack_config(&sh, &nic);
            if let Some(n) = sh.pending_station_name.take() {
                sh.station_name = n;
            }
            let reuse = sh
                .instance
                .as_ref()
                .is_some_and(|i| i.fingerprint == sc.fingerprint);
            (
                sc,
                if reuse {
                    StartMode::Reuse
                } else {
                    StartMode::Fresh
                },
                sh.state,
            )
        };
        let had_instance = self.lock().instance.is_some();
        if mode == StartMode::Fresh {
            if had_instance {
                info!("configuration fingerprint changed: full teardown before a fresh start");
                let plane = self.plane.clone();
                let _ = tokio::task::spawn_blocking(move || plane.teardown()).await;
                self.lock().instance = None;
            }
            let mut slot = self.image.write().unwrap_or_else(|p| p.into_inner());
            if slot.input_len() != sc.input_len || slot.output_len() != sc.output_len {
                let new = slot.resized(sc.input_len, sc.output_len);
                *slot = Arc::new(new);
            }
        }
        let image = self.current_image();
        let plane = self.plane.clone();
        let sink = self.sink.clone();
        let sc2 = sc.clone();
        let res = tokio::task::spawn_blocking(move || plane.start(&sc2, image, sink, mode)).await;
        let res = res.unwrap_or_else(|e| {
            Err(crate::dataplane::StartError {
                failure: StartFailure::ControlPlane,
                code: error_code::ERR_THREAD,
                message: format!("start task failed: {e}"),
            })
        });
        match res {
            Ok(()) => {
                let diags: Vec<DiagnosisEntry> = {
                    let mut sh = self.lock();
                    apply(&mut sh, Trigger::Started);
                    sh.status_message = format!(
                        "slave started on NIC '{nic}' ({}); waiting for a controller",
                        if mode == StartMode::Reuse {
                            "instance reused"
                        } else {
                            "fresh start"
                        }
                    );
                    sh.instance = Some(sc);
                    sh.diag.values().cloned().collect()
                };
                for d in diags {
                    self.plane.command(StackCommand::SetDiagnosis(d));
                }
                info!("slave started on {nic} ({mode:?})");
                let msg = self.lock().status_message.clone();
                Self::start_stop_body(true, msg, 0)
            }
            Err(e) => {
                error!("start failed: {e}");
                let teardown = !matches!(e.failure, StartFailure::StartPhase);
                if teardown {
                    let plane = self.plane.clone();
                    let _ = tokio::task::spawn_blocking(move || plane.teardown()).await;
                }
                let mut sh = self.lock();
                if teardown {
                    sh.instance = None;
                }
                debug_assert_eq!(prev_state, sh.state, "the start holds the control lock");
                let state = apply(
                    &mut sh,
                    Trigger::StartFailed {
                        failure: e.failure,
                        code: e.code,
                    },
                );
                sh.status_message = if state == RunState::ConfigError {
                    format!("NIC '{nic}': {}", e.message)
                } else {
                    format!("start failed: {}", e.message)
                };
                Self::start_stop_body(false, sh.status_message.clone(), e.code)
            }
        }
    }

    /// `POST /api/stop` (soft stop; spec 3 rule 2).
    pub async fn stop(&self) -> Value {
        let _c = self.control.lock().await;
        let was = self.lock().state;
        if was.running() {
            let plane = self.plane.clone();
            let _ = tokio::task::spawn_blocking(move || plane.stop()).await;
        }
        let img = self.current_image();
        img.invalidate_input();
        img.set_device_status(IOXS_BAD, IOXS_BAD);
        let mut sh = self.lock();
        apply(&mut sh, Trigger::Stop);
        sh.status_message.clear();
        // Link alarms only matter while the slave runs.
        sh.alarms.clear_prefix("link:");
        info!("slave stopped (was {})", was.as_str());
        Self::start_stop_body(
            true,
            if was.running() {
                "slave stopped".into()
            } else {
                "slave was not running".into()
            },
            0,
        )
    }

    /// Full teardown at service shutdown.
    pub async fn shutdown(&self) {
        let _c = self.control.lock().await;
        let plane = self.plane.clone();
        let _ = tokio::task::spawn_blocking(move || {
            plane.stop();
            plane.teardown();
        })
        .await;
        let mut sh = self.lock();
        apply(&mut sh, Trigger::Shutdown);
        sh.instance = None;
    }

    /// `POST /api/config/reload` (accepted in every state; spec 3 rule 1, 4 rule 4).
    pub async fn reload(&self, path: Option<PathBuf>) -> Value {
        let _c = self.control.lock().await;
        let target = path.clone().or_else(|| self.lock().config_path.clone());
        let loaded = tokio::task::spawn_blocking({
            let t = target.clone();
            move || RuntimeConfig::load(t.as_deref())
        })
        .await
        .unwrap_or_else(|e| Err(format!("reload task failed: {e}")));
        let body = |ok: bool, message: String, code: i32| json!({ "ok": ok, "message": message, "errorCode": code, "timestamp": now_rfc3339() });
        match loaded {
            Err(e) => {
                warn!("configuration reload failed (running configuration kept): {e}");
                body(
                    false,
                    format!("{e}; the running configuration is kept"),
                    error_code::ERR_CFG,
                )
            }
            Ok(cfg) => {
                let img = self.current_image();
                let mut sh = self.lock();
                let sizes_changed =
                    cfg.input_len != img.input_len() || cfg.output_len != img.output_len();
                let source = cfg.source.clone();
                let name = cfg.station_name.clone();
                sh.config = cfg;
                drop(sh);
                let renamed = self.adopt_config_station_name(&name);
                let mut sh = self.lock();
                if let Some(n) = renamed {
                    if sh.state.running() {
                        sh.pending_station_name = Some(n);
                    } else {
                        sh.station_name = n;
                    }
                }
                sh.config_error = None;
                sh.config_path = target;
                sh.alarms.clear("config");
                if sh.error_code == error_code::ERR_CFG && !sh.state.running() {
                    sh.error_code = 0;
                }
                let mut msg = format!("configuration reloaded from {source}");
                if sizes_changed {
                    msg.push_str("; process-image sizes change at the next fresh start");
                }
                info!("{msg}");
                body(true, msg, 0)
            }
        }
    }

    /// `POST /api/reset`. Answers after the remanent data is erased on disk; if that fails the
    /// answer is `ok: false` and nothing is reset.
    pub async fn reset(&self, mode: ResetMode) -> Value {
        let _c = self.control.lock().await;
        let mode_s = match mode {
            ResetMode::Communication => "communication",
            ResetMode::Factory => "factory",
        };
        if let Err(e) = self.commit_remanent(&persist::Change::Reset(mode)) {
            Self::raise_persistence_alarm(&mut self.lock(), &e);
            return json!({
                "ok": false,
                "mode": mode_s,
                "message": format!("reset {mode_s} not done, nothing was changed: {e}"),
                "timestamp": now_rfc3339(),
            });
        }
        let (running, cmd) = {
            let mut sh = self.lock();
            self.apply_reset(&mut sh, mode);
            let c = &sh.config;
            (
                sh.state.running(),
                StackCommand::Reset {
                    mode,
                    station_name: String::new(),
                    ip: c.ip,
                    mask: c.mask,
                    gateway: c.gateway,
                },
            )
        };
        if running {
            self.plane.command(cmd);
        }
        let what = match mode {
            ResetMode::Communication => {
                "station name and IP parameters reset to the configuration; connections released"
            }
            ResetMode::Factory => {
                "all remanent data cleared (station name, IP, I&M1-4, records, diagnosis entries); connections released"
            }
        };
        info!("reset {mode_s}: {what}");
        json!({ "ok": true, "mode": mode_s, "message": what, "timestamp": now_rfc3339() })
    }

    /// `POST /api/high-resolution-timer`.
    pub fn set_high_resolution_timer(&self, enable: bool) -> Value {
        self.lock().high_res = enable;
        self.plane
            .command(StackCommand::SetHighResolutionTimer(enable));
        ok_body(
            true,
            format!(
                "high-resolution timer {}",
                if enable { "enabled" } else { "disabled" }
            ),
        )
    }

    // ------------------------------------------------------------------ process data

    /// `POST /api/io` after validation. `Err` only for an out-of-range write (400).
    pub async fn io_write(&self, offset: usize, data: &[u8]) -> Result<Value, WriteError> {
        let gen_img = {
            let slot = self.image.read().unwrap_or_else(|p| p.into_inner());
            let gen = slot.write_output(offset, data)?;
            (gen, slot.clone())
        };
        let (gen, img) = gen_img;
        let ps = self.plane_status();
        let (state, wait) = {
            let sh = self.lock();
            (sh.state, self.delivery_wait(&sh.config, ps.ar_cycle_ns))
        };
        let code = if !state.running() || !ps.running {
            reason::DATA_PLANE_STOPPED
        } else if !ps.link_up {
            reason::LINK_DOWN
        } else if state != RunState::DataExchange {
            reason::NOT_FLUSHED
        } else {
            let deadline = tokio::time::Instant::now() + wait;
            loop {
                if img.output_sent_covers(gen) {
                    break reason::DELIVERED;
                }
                if tokio::time::Instant::now() >= deadline {
                    break reason::NOT_FLUSHED;
                }
                tokio::time::sleep(Duration::from_micros(500)).await;
            }
        };
        let sh = self.lock();
        let delivered = code.is_empty();
        let message = match code {
            reason::DELIVERED => String::new(),
            reason::DATA_PLANE_STOPPED => {
                "the data plane is not running; the write is kept and sent once the slave runs"
                    .into()
            }
            reason::LINK_DOWN => {
                "the link is down; the write is kept and sent when it recovers".into()
            }
            _ => format!(
                "the write is kept in the service and not yet sent ({})",
                if sh.state == RunState::DataExchange {
                    "the cyclic thread has not taken it yet"
                } else {
                    "no cyclic data exchange"
                }
            ),
        };
        Ok(json!({
            "ok": delivered,
            "delivered": delivered,
            "queued": true,
            "connected": state == RunState::DataExchange,
            "state": state.as_str(),
            "reasonCode": code,
            "waitReason": if delivered { "" } else { Self::wait_reason(&sh) },
            "message": message,
            "errorCode": sh.error_code,
            "offset": offset,
            "length": data.len(),
            "timestamp": now_rfc3339(),
        }))
    }

    /// `GET /api/io`.
    pub fn io_snapshot(&self) -> Value {
        let img = self.current_image();
        let s = img.snapshot();
        let connected = self.lock().state == RunState::DataExchange;
        json!({
            "epoch": s.epoch,
            "inputHex": to_hex(&s.input),
            "outputHex": to_hex(&s.output),
            "inputLength": s.input.len(),
            "outputLength": s.output.len(),
            "inputIopsHex": to_hex(&[s.input_iops]),
            "inputIocsHex": to_hex(&[s.input_iocs]),
            "outputIopsHex": to_hex(&[s.output_iops]),
            "outputIocsHex": to_hex(&[s.output_iocs]),
            "inputValid": s.input_valid && connected,
            "outputValid": s.output_synced && connected,
            "outputSyncedToDriver": s.output_synced,
            "formatVersion": FORMAT_VERSION,
            "timestamp": now_rfc3339(),
        })
    }

    // ------------------------------------------------------------------ read models

    /// `GET /api/status` as a JSON value.
    pub fn status(&self) -> Value {
        self.with_status(|b| serde_json::to_value(b).unwrap_or(Value::Null))
    }

    /// `GET /api/status` serialised: the same document as [`Runtime::status`], written
    /// straight from the state (no intermediate `Value` map: docs/decisions.md "Status path").
    pub fn status_json(&self) -> Vec<u8> {
        self.with_status(|b| serde_json::to_vec(b).unwrap_or_default())
    }

    fn with_status<R>(&self, f: impl FnOnce(&StatusBody<'_>) -> R) -> R {
        let img = self.current_image();
        // The port check reads sysfs, cached for the link monitor's poll period (so a NIC that
        // appears or goes shows within the time a link change does). On a miss the lookup
        // runs without the state lock, so concurrent status requests (and the event task)
        // never queue behind file I/O.
        // The document names the NIC that was checked (a reload between the two locks must
        // not pair one NIC's name with another's presence).
        let mut sh = self.lock();
        let nic = self.active_nic(&sh);
        let port_present = match self.port_presence.cached(&nic) {
            Some(p) => p,
            None => {
                drop(sh);
                let p = self.port_presence.refresh(&nic);
                sh = self.lock();
                p
            }
        };
        let (alarms, critical) = sh.alarms.counts();
        let ipf = |f: fn(&StoredIp) -> Ipv4Addr| {
            sh.master_ip
                .as_ref()
                .map(|i| f(i).to_string())
                .unwrap_or_default()
        };
        f(&StatusBody {
            alarm_count: alarms,
            config_source: &sh.config.source,
            config_station_name: &sh.config.station_name,
            connected: sh.connected,
            critical_alarm_count: critical,
            dcp_ip_applied: sh.dcp_ip_applied,
            dcp_ip_apply_message: &sh.dcp_ip_apply_message,
            error_code: sh.error_code,
            ever_connected: sh.ever_connected,
            hardware_port_present: port_present,
            high_resolution_timer: sh.high_res,
            interface_name: &nic,
            io_epoch: img.epoch(),
            link_up: sh.link_up,
            master_assigned_gateway: ipf(|i| i.gateway),
            master_assigned_ip: ipf(|i| i.ip),
            master_assigned_mask: ipf(|i| i.mask),
            master_station_name: &sh.master_station_name,
            output_synced_to_driver: img.output_synced(),
            service_name: SERVICE_NAME,
            state: sh.state.as_str(),
            state_code: sh.state.code(),
            status_message: &sh.status_message,
            timestamp: now_rfc3339(),
            version: VERSION,
            wait_reason: Self::wait_reason(&sh),
        })
    }

    /// `GET /api/diag`.
    pub fn diag(&self) -> Value {
        let img = self.current_image();
        let sh = self.lock();
        if !sh.state.running() {
            return json!({
                "ok": false,
                "message": "the slave has not been started",
                "state": sh.state.as_str(),
                "errorCode": sh.error_code,
                "timestamp": now_rfc3339(),
            });
        }
        let ps = self.plane_status();
        let mut v = json!({
            "ok": true,
            "sharedMemoryMapped": ps.image_attached,
            "linkUp": ps.link_up,
            "connected": sh.connected,
            "message": ps.message,
            "state": sh.state.as_str(),
            "timestamp": now_rfc3339(),
            "errorCode": sh.error_code,
            "inputAreaLength": img.input_len(),
            "outputAreaLength": img.output_len(),
            "highResolutionTimer": sh.high_res,
            "dataPlane": self.plane.kind(),
            "diagnoses": sh.diag.values().collect::<Vec<_>>(),
        });
        if let (Value::Object(m), Ok(Value::Object(c))) =
            (&mut v, serde_json::to_value(ps.counters))
        {
            m.extend(c);
        }
        if let (Value::Object(m), Some(Value::Object(x))) = (&mut v, self.plane.extra_diag()) {
            m.extend(x);
        }
        v
    }

    /// `GET /api/alarms`.
    pub fn alarms_active(&self) -> Vec<AlarmItem> {
        self.lock().alarms.active()
    }

    /// `GET /api/alarms/history`.
    pub fn alarms_history(&self) -> Vec<AlarmItem> {
        self.lock().alarms.history()
    }

    /// `POST /api/alarms/ack`.
    pub fn ack(&self, id: &str) -> Value {
        let ok = self.lock().alarms.ack(id);
        let msg = if ok {
            format!("alarm {id} acknowledged")
        } else {
            format!("no active alarm with id '{id}'")
        };
        json!({ "ok": ok, "message": msg, "acknowledgedCount": 0, "timestamp": now_rfc3339() })
    }

    /// `POST /api/alarms/ack-all`.
    pub fn ack_all(&self) -> Value {
        let n = self.lock().alarms.ack_all();
        json!({ "ok": true, "message": format!("{n} alarm(s) acknowledged"), "acknowledgedCount": n, "timestamp": now_rfc3339() })
    }

    /// `POST /api/diag` after validation.
    pub fn diag_write(&self, action: DiagAction, entry: DiagnosisEntry) -> Value {
        let key: DiagKey = (entry.slot, entry.subslot, entry.channel, entry.error_type);
        let mut sh = self.lock();
        let exists = sh.diag.contains_key(&key);
        let running = sh.state.running();
        let configured = sh.config.modules.iter().any(|m| {
            m.slot == entry.slot && m.submodules.iter().any(|s| s.subslot == entry.subslot)
        });
        let (ok, msg, cmd) = match action {
            // A diagnosis belongs to a submodule the controller knows: one the configuration
            // does not have would reach the controller as an alarm for a module it never
            // configured.
            DiagAction::Add | DiagAction::Update if !configured => (
                false,
                format!(
                    "slot {} subslot {:#06x} is not in the configuration ({}); a diagnosis \
                     needs a configured submodule",
                    entry.slot,
                    entry.subslot,
                    configured_submodules(&sh.config)
                ),
                None,
            ),
            DiagAction::Add | DiagAction::Update if action == DiagAction::Update && !exists => (
                false,
                format!("no diagnosis entry {}", diag_key_text(&key)),
                None,
            ),
            DiagAction::Add | DiagAction::Update => {
                let text = if entry.text.is_empty() {
                    format!(
                        "diagnosis slot {} subslot {} channel {} error type {:#06x}",
                        entry.slot, entry.subslot, entry.channel, entry.error_type
                    )
                } else {
                    entry.text.clone()
                };
                sh.alarms.raise(
                    &diag_key_text(&key),
                    diag_severity(entry.severity),
                    "diag",
                    &text,
                );
                sh.diag.insert(key, entry.clone());
                (
                    true,
                    format!(
                        "diagnosis {} {}",
                        diag_key_text(&key),
                        if exists { "updated" } else { "added" }
                    ),
                    Some(StackCommand::SetDiagnosis(entry)),
                )
            }
            DiagAction::Remove if !exists => (
                false,
                format!("no diagnosis entry {}", diag_key_text(&key)),
                None,
            ),
            DiagAction::Remove => {
                sh.diag.remove(&key);
                sh.alarms.clear(&diag_key_text(&key));
                (
                    true,
                    format!("diagnosis {} removed", diag_key_text(&key)),
                    Some(StackCommand::RemoveDiagnosis {
                        slot: key.0,
                        subslot: key.1,
                        channel: key.2,
                        error_type: key.3,
                    }),
                )
            }
        };
        let count = sh.diag.len();
        drop(sh);
        if let (Some(c), true) = (cmd, running) {
            self.plane.command(c);
        }
        json!({
            "ok": ok,
            "message": msg,
            "action": match action { DiagAction::Add => "add", DiagAction::Update => "update", DiagAction::Remove => "remove" },
            "entryCount": count,
            "sentToStack": running && ok,
            "timestamp": now_rfc3339(),
        })
    }

    /// `GET /api/im`.
    pub fn im(&self) -> Value {
        let sh = self.lock();
        let rem = self.remanent_guard();
        let c = &sh.config;
        let im0 = &c.im0;
        let (p, a, b, d) = im0.software_revision;
        let names: Vec<String> = (0..=4u16)
            .filter(|i| *i == 0 || im0.im_supported & (1 << i) != 0)
            .map(|i| format!("I&M{i}"))
            .collect();
        let im14 = (1..=4).all(|i| im0.im_supported & (1 << i) != 0);
        let station = sh.station_name.clone();
        json!({
            "vendorId": c.vendor_id,
            "deviceId": c.device_id,
            "orderId": im0.order_id,
            "serialNumber": im0.serial_number,
            "hardwareRevision": im0.hardware_revision.to_string(),
            "softwareRevision": format!("{p}{a}.{b}.{d}"),
            "stationName": station,
            "productName": im0.product_name,
            "imSupported": names.join(","),
            "im14Supported": im14,
            "im1TagFunction": trim_im(&rem.im.tag_function),
            "im1TagLocation": trim_im(&rem.im.tag_location),
            "im2Date": trim_im(&rem.im.date),
            "im3Descriptor": trim_im(&rem.im.descriptor),
            "im4SignatureHex": to_hex(&rem.im.signature),
            "timestamp": now_rfc3339(),
        })
    }

    /// `GET /api/records`.
    pub fn records(&self) -> Value {
        let recs: Vec<Value> = self
            .remanent_guard()
            .records
            .iter()
            .map(|r| {
                json!({
                    "slot": r.slot, "subslot": r.subslot, "index": r.index,
                    "length": r.data.len(), "dataHex": to_hex(&r.data),
                })
            })
            .collect();
        json!({
            "count": recs.len(),
            "note": format!(
                "records written by the controller (I&M1-4 and user records), persisted in {}",
                self.store.path().display()
            ),
            "records": recs,
            "timestamp": now_rfc3339(),
        })
    }

    /// `GET /api/info`.
    pub fn info(&self) -> Value {
        let sh = self.lock();
        json!({
            "serviceName": SERVICE_NAME,
            "version": VERSION,
            "formatVersion": FORMAT_VERSION,
            "uptimeSeconds": self.started_at.elapsed().as_secs(),
            "startedAt": self.started_at_text,
            "apiKeyRequired": self.settings.api_key.is_some(),
            "dataPlane": self.plane.kind(),
            "state": sh.state.as_str(),
            "pid": std::process::id(),
            "timestamp": now_rfc3339(),
        })
    }

    /// Liveness of the state for the daemon's own use (tests, logs).
    pub fn state(&self) -> RunState {
        self.lock().state
    }

    /// Raise an alarm from the service itself.
    pub fn raise_alarm(&self, key: &str, severity: AlarmSeverity, source: &str, message: &str) {
        self.lock().alarms.raise(key, severity, source, message);
    }
}

#[cfg(test)]
mod tests {
    //! Rows of the spec section 3 table that need a failing data plane (not reproducible with
    //! a real NIC): a scripted plane returns the configured start errors.
    use super::*;
    use crate::dataplane::{NicInfo, ProbeError, StartError};

    struct FakePlane {
        next: Mutex<Vec<Result<(), StartError>>>,
        starts: Mutex<Vec<StartMode>>,
    }

    impl DataPlane for FakePlane {
        fn kind(&self) -> &'static str {
            "fake"
        }
        fn probe(&self, nic: &str) -> Result<NicInfo, ProbeError> {
            Ok(NicInfo::up(nic))
        }
        fn start(
            &self,
            _cfg: &StackConfig,
            _image: Arc<ProcessImage>,
            _events: EventSink,
            mode: StartMode,
        ) -> Result<(), StartError> {
            self.starts.lock().unwrap().push(mode);
            self.next.lock().unwrap().pop().unwrap_or(Ok(()))
        }
        fn stop(&self) {}
        fn teardown(&self) {}
        fn status(&self) -> PlaneStatus {
            PlaneStatus {
                running: true,
                link_up: true,
                port_present: true,
                ..Default::default()
            }
        }
        fn command(&self, _cmd: StackCommand) {}
    }

    fn err(failure: StartFailure, code: i32) -> Result<(), StartError> {
        Err(StartError {
            failure,
            code,
            message: "scripted".into(),
        })
    }

    fn runtime(
        results: Vec<Result<(), StartError>>,
    ) -> (Arc<Runtime>, Arc<FakePlane>, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let mut settings = Settings::embedded();
        settings.persistence_dir = dir.path().join("p");
        settings.licence_path = dir.path().join("l.json");
        let key = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("testdata/dev-licence-private-key.txt"),
        )
        .unwrap();
        let key = licence::parse_private_key(key.lines().last().unwrap()).unwrap();
        let now = crate::util::unix_now();
        let payload = licence::Payload {
            licensee: "t".into(),
            product: licence::PRODUCT.into(),
            serial: "1".into(),
            issued_at: now,
            not_before: now - 10,
            not_after: now + 3600,
            binding: licence::Binding {
                machine_id: None,
                mac: None,
                any: Some(true),
            },
        };
        std::fs::write(&settings.licence_path, licence::issue(&key, &payload)).unwrap();
        let mut results = results;
        results.reverse();
        let plane = Arc::new(FakePlane {
            next: Mutex::new(results),
            starts: Mutex::new(vec![]),
        });
        let rt = Runtime::new(settings, plane.clone(), Some("fake0".into()), None);
        (rt, plane, dir)
    }

    #[tokio::test]
    async fn control_plane_failure_goes_to_stopped_with_the_start_code() {
        let (rt, _p, _d) = runtime(vec![err(StartFailure::ControlPlane, error_code::ERR_DAP)]);
        let r = rt.start().await;
        assert_eq!(r["ok"], false);
        assert_eq!(r["errorCode"], -6);
        assert_eq!(rt.state(), RunState::Stopped);
        assert_eq!(rt.status()["errorCode"], -6);
    }

    #[tokio::test]
    async fn data_plane_open_failure_goes_to_config_error() {
        let (rt, _p, _d) = runtime(vec![err(StartFailure::DataPlaneOpen, 19)]);
        let r = rt.start().await;
        assert_eq!(r["errorCode"], 19);
        assert_eq!(rt.state(), RunState::ConfigError);
        assert!(rt.status()["statusMessage"]
            .as_str()
            .unwrap()
            .contains("fake0"));
    }

    #[tokio::test]
    async fn reuse_path_failures_go_to_stopped() {
        // start ok, stop, reuse start fails in the stack -> Stopped with its code
        let (rt, p, _d) = runtime(vec![
            Ok(()),
            err(StartFailure::ReuseStack, error_code::ERR_INIT),
        ]);
        assert_eq!(rt.start().await["ok"], true);
        rt.stop().await;
        let r = rt.start().await;
        assert_eq!(r["ok"], false);
        assert_eq!(rt.state(), RunState::Stopped);
        assert_eq!(rt.status()["errorCode"], -1);
        assert_eq!(
            *p.starts.lock().unwrap(),
            vec![StartMode::Fresh, StartMode::Reuse]
        );
        // the failed reuse tore the instance down: the next start is fresh
        assert_eq!(rt.start().await["ok"], true);
        assert_eq!(p.starts.lock().unwrap()[2], StartMode::Fresh);

        // reuse-path loop failure -> Stopped with errorCode 0
        let (rt, _p, _d) = runtime(vec![
            Ok(()),
            err(StartFailure::ReuseLoop, error_code::ERR_THREAD),
        ]);
        rt.start().await;
        rt.stop().await;
        let r = rt.start().await;
        assert_eq!(r["ok"], false);
        assert_eq!(rt.state(), RunState::Stopped);
        assert_eq!(rt.status()["errorCode"], 0);
    }

    #[tokio::test]
    async fn start_phase_failure_keeps_the_previous_state() {
        let (rt, _p, _d) = runtime(vec![err(StartFailure::StartPhase, error_code::ERR_PDI)]);
        let before = rt.state();
        let r = rt.start().await;
        assert_eq!(r["ok"], false);
        assert_eq!(r["errorCode"], -5);
        assert_eq!(rt.state(), before);
    }

    #[tokio::test]
    async fn events_drive_data_exchange_and_abort() {
        let (rt, _p, _d) = runtime(vec![]);
        rt.start().await;
        rt.handle_event(StackEvent::Connected {
            controller: "plc".into(),
        });
        assert_eq!(rt.state(), RunState::DataExchange);
        assert!(rt.status()["statusMessage"]
            .as_str()
            .is_some_and(|m| m.contains("exchange with plc")));
        rt.handle_event(StackEvent::Aborted {
            reason: "x".into(),
            cause: AbortCause::Fault,
        });
        assert_eq!(rt.state(), RunState::Aborted);
        let s = rt.status();
        assert_eq!(s["statusMessage"], "cyclic data exchange lost: x");
        assert_eq!(
            (s["connected"].as_bool(), s["everConnected"].as_bool()),
            (Some(false), Some(true))
        );
        rt.handle_event(StackEvent::Connected {
            controller: "plc".into(),
        });
        assert_eq!(rt.state(), RunState::DataExchange);
        rt.stop().await;
        // late events after a stop do not resurrect the connection
        rt.handle_event(StackEvent::Connected {
            controller: "plc".into(),
        });
        assert_eq!(rt.state(), RunState::Stopped);
    }

    #[test]
    fn status_json_is_the_status_document_with_keys_in_sorted_order() {
        let (rt, _p, _d) = runtime(vec![]);
        let text = rt.status_json();
        let mut parsed: Value = serde_json::from_slice(&text).unwrap();
        let mut value = rt.status();
        // The bytes equal what a `Value` (sorted map) of the same document serialises to.
        assert_eq!(text, serde_json::to_vec(&parsed).unwrap());
        for v in [&mut parsed, &mut value] {
            v.as_object_mut().unwrap().remove("timestamp").unwrap();
        }
        assert_eq!(parsed, value);
        assert_eq!(value["interfaceName"], "fake0");
        assert_eq!(value["hardwarePortPresent"], false);
        assert_eq!(value["state"], "Stopped");
    }

    #[test]
    fn port_presence_cache_answers_from_cache_within_the_ttl_only() {
        let c = crate::dataplane::PortPresenceCache::new(Duration::from_secs(3600));
        assert_eq!(c.cached("lo"), None);
        assert!(c.present("lo"));
        assert_eq!(c.cached("lo"), Some(true));
        // Another NIC name is a miss, and its answer replaces the entry.
        assert_eq!(c.cached("pn-h4-absent0"), None);
        assert!(!c.present("pn-h4-absent0"));
        assert_eq!(c.cached("lo"), None);
        let zero = crate::dataplane::PortPresenceCache::new(Duration::ZERO);
        assert!(zero.present("lo"));
        assert_eq!(zero.cached("lo"), None);
    }
}

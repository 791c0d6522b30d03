//! The runtime's side of the data plane's events: durable commits of remanent data,
//! state changes, alarms, and the stack configuration a start hands to the plane.

use super::*;

impl Runtime {
    /// The durable-commit handler of the plane's [`EventSink`]: stores the remanent part of
    /// `ev` (if any) and returns when it is on disk. Runs on the stack's CM/L2 worker thread
    /// before the stack answers the request; the event itself follows through the sink and
    /// updates the status (it does not touch the remanent data again).
    pub fn commit_event(&self, ev: &StackEvent) -> Result<(), String> {
        match persist::change_of_event(ev) {
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

    pub(super) fn apply_event(&self, ev: StackEvent) {
        let mut sh = self.lock();
        let nic = self.active_nic(&sh);
        match ev {
            StackEvent::LinkChanged { up } => link_changed(&mut sh, &nic, up),
            StackEvent::Connected { controller, ar } => connected(&mut sh, controller, ar),
            StackEvent::Aborted { reason, cause } => aborted(&mut sh, reason, cause),
            StackEvent::DcpNameAssigned { name, permanent } => {
                info!(target: LOG_TARGET, "DCP station name '{name}' (permanent: {permanent})");
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
                info!(target: LOG_TARGET, "DCP IP {ip}/{mask} gw {gateway} (permanent: {permanent}): {applied:?}");
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
                info!(target: LOG_TARGET, "DCP ResetToFactory qualifier {qualifier:#x} -> {mode:?}");
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
                info!(target: LOG_TARGET,
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
                info!(target: LOG_TARGET, "controller acknowledged alarm type {alarm_type:#x} seq {sequence} at {slot}/{subslot}: ok={ok}");
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
                error!(target: LOG_TARGET, "data plane fault {code}: {message}");
                sh.ar_end = Some((format!("data plane fault {code}: {message}"), "fault"));
                apply(&mut sh, Trigger::ExchangeLost);
                sh.alarms
                    .raise("fault", AlarmSeverity::Critical, "stack", &message);
            }
        }
    }

    /// The non-remanent part of a reset (the remanent part is committed first with
    /// [`persist::Change::Reset`]).
    pub(super) fn apply_reset(&self, sh: &mut Shared, mode: ResetMode) {
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

    pub(super) fn build_stack_config(&self, sh: &Shared, nic: &str) -> StackConfig {
        let c = &sh.config;
        let rem = self.remanent_guard();
        let ip = rem.start_ip(StoredIp {
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
            min_device_interval: c.min_device_interval,
            watchdog_ms: self.settings.watchdog_ms,
            safe_input_value: self.settings.safe_input_value,
            modules: c.modules.clone(),
            im0: c.im0.clone(),
            im: rem.im.clone(),
            records: rem.records.clone(),
            high_resolution_timer: sh.high_res,
            standby_cpu: self.settings.standby_cpu,
            standby_grace_us: self.settings.standby_grace_us,
            provider_hold: self.settings.faults.provider_hold,
            input_len: c.input_len,
            output_len: c.output_len,
            fingerprint: String::new(),
        };
        sc.fingerprint = self.fingerprint(&sc, sh);
        sc
    }

    /// Fingerprint inputs of spec 3 rule 3 (the "native library path" is the data-plane kind).
    pub(super) fn fingerprint(&self, sc: &StackConfig, sh: &Shared) -> String {
        let text = format!(
            "nic={}|name={}|ip={}|mask={}|gw={}|cycle={}/{}|vendor={}|device={}|wd={}|safe={}|in={}|out={}|xml={}|lib={}",
            sc.nic,
            sc.station_name,
            sc.ip,
            sc.mask,
            sc.gateway,
            sc.send_clock_factor,
            sc.min_device_interval,
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
}

/// The link alarm follows the carrier while the service runs.
fn link_changed(sh: &mut Shared, nic: &str, up: bool) {
    if sh.link_up != up {
        info!(target: LOG_TARGET, "link on {nic} is {}", if up { "up" } else { "down" });
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

/// An AR reached data exchange.
fn connected(sh: &mut Shared, controller: String, ar: Option<ArInfo>) {
    if transition(sh.state, Trigger::ExchangeEstablished).to == RunState::DataExchange
        && sh.state != RunState::DataExchange
    {
        info!(target: LOG_TARGET, "cyclic data exchange established with {controller}");
        apply(sh, Trigger::ExchangeEstablished);
        sh.ever_connected = true;
        sh.status_message = format!("cyclic data exchange with {controller}");
        sh.ar = Some(ArRecord::begin(&controller, ar));
        sh.controller = controller;
        sh.alarms.clear("connection");
    } else {
        warn!(target: LOG_TARGET, "ignoring Connected in state {}", sh.state.as_str());
    }
}

/// The AR ended; who ended it decides the words and the alarm's severity.
fn aborted(sh: &mut Shared, reason: String, cause: AbortCause) {
    if sh.state == RunState::DataExchange {
        // The spec's table: DataExchange -> Aborted whoever ended it. A release
        // or the controller's own abort is not a fault of this device: it is
        // said so, logged as information and raised below Error severity
        // (docs/decisions.md §20).
        let (what, severity) = match cause {
            AbortCause::Fault => ("lost", AlarmSeverity::Error),
            AbortCause::ReleasedByController => ("ended by the controller", AlarmSeverity::Info),
            AbortCause::AbortedByController => ("ended by the controller", AlarmSeverity::Warning),
        };
        if cause == AbortCause::Fault {
            warn!(target: LOG_TARGET, "cyclic data exchange lost: {reason}");
        } else {
            info!(target: LOG_TARGET, "cyclic data exchange ended by the controller: {reason}");
        }
        sh.ar_end = Some((reason.clone(), cause_text(cause)));
        apply(sh, Trigger::ExchangeLost);
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

//! The control operations of the API: start, stop, shutdown, reload, reset, the
//! high-resolution timer and I/O writes (serialised by the `control` mutex).

use super::*;

impl Runtime {
    pub(super) fn start_stop_body(ok: bool, message: String, code: i32) -> Value {
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
            error!(target: LOG_TARGET, "start refused: data plane probe failed: {e}");
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
            error!(target: LOG_TARGET, "start refused: {e}");
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
        self.start_plane(nic).await
    }

    /// The second half of a start, once the gates (state, configuration, NIC probe, licence)
    /// passed: choose a fresh start or the reuse of the running instance, start the plane and
    /// apply the outcome to the state (the caller holds the control lock).
    async fn start_plane(&self, nic: String) -> Value {
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
                info!(target: LOG_TARGET, "configuration fingerprint changed: full teardown before a fresh start");
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
                info!(target: LOG_TARGET, "slave started on {nic} ({mode:?})");
                let msg = self.lock().status_message.clone();
                Self::start_stop_body(true, msg, 0)
            }
            Err(e) => {
                error!(target: LOG_TARGET, "start failed: {e}");
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
        info!(target: LOG_TARGET, "slave stopped (was {})", was.as_str());
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
                warn!(target: LOG_TARGET, "configuration reload failed (running configuration kept): {e}");
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
                info!(target: LOG_TARGET, "{msg}");
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
        info!(target: LOG_TARGET, "reset {mode_s}: {what}");
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
}

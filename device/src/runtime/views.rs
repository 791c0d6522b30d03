//! The read side of the API: the documents behind `GET /api/...`, and the diagnosis and
//! alarm operations on them.

use super::*;

impl Runtime {
    /// `GET /api/io`.
    pub fn io_snapshot(&self) -> Value {
        let img = self.current_image();
        let s = img.snapshot();
        let sh = self.lock();
        let connected = sh.state == RunState::DataExchange;
        // The layout the image was built from: the instance's (kept over a soft stop; a
        // reload changes the sizes only at the next fresh start, spec 4 rule 4), else the
        // configuration's.
        let modules = match &sh.instance {
            Some(i) => &i.modules,
            None => &sh.config.modules,
        };
        let layout: Vec<Value> = crate::stack::ar::layout(modules, s.input.len(), s.output.len())
            .iter()
            .map(|e| {
                json!({
                    "slot": e.slot, "subslot": e.subslot,
                    "moduleIdent": e.module_ident, "submoduleIdent": e.submodule_ident,
                    "inputOffset": e.i_off, "inputLength": e.i_len,
                    "outputOffset": e.q_off, "outputLength": e.q_len,
                })
            })
            .collect();
        drop(sh);
        json!({
            "layout": layout,
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

    pub(super) fn with_status<R>(&self, f: impl FnOnce(&StatusBody<'_>) -> R) -> R {
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
            ar: sh.ar.as_ref(),
            ar_history: &sh.ar_history,
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

//! Running a scenario against a fresh lab.

use super::check::{check_all, lookup, substitute, substitute_json};
use super::format::*;
use super::redact::redact_with;
use crate::lab::{Lab, LabOptions, Licence};
use crate::peer::{Peer, PeerTiming};
use serde_json::Value as Json;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Header carrying the API key (spec 5.4).
pub const KEY_HEADER: &str = "X-Vendor-Pnet-Api-Key";

/// Where scenario-level inputs live.
pub fn scenarios_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios")
}

/// Where golden snapshots live.
pub fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../golden")
}

fn licence(l: &LicenceChoice) -> Licence {
    match l {
        LicenceChoice::Valid => Licence::Valid,
        LicenceChoice::Missing => Licence::Missing,
        LicenceChoice::Invalid => Licence::Invalid,
        LicenceChoice::ExpiresIn(s) => Licence::ExpiresIn(*s),
    }
}

fn read_config(name: &str) -> Result<String, String> {
    let p = scenarios_dir().join("configs").join(name);
    std::fs::read_to_string(&p).map_err(|e| format!("configuration {}: {e}", p.display()))
}

/// The state a run carries between steps.
struct Run<'a> {
    sc: &'a Scenario,
    golden_root: PathBuf,
    // Dropped before the lab: the controller lives in the lab's namespace.
    peer: Option<Peer>,
    lab: Lab,
    vars: BTreeMap<String, Json>,
}

/// What a run does beyond its steps.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Golden snapshots are taken from `golden_root/<scenario>/` (tests of the harness itself
    /// point it at a scratch copy).
    pub golden_root: PathBuf,
    /// Pass the capture of the whole run (controller side: DCP, RT, alarms, PNIO-CM) through
    /// tshark, Wireshark's dissectors as an independent decoder: no frame may be malformed or
    /// carry an expert item of severity Warning or above. Checksums are not judged: the veth
    /// pair leaves them to an offload that never happens.
    pub check_capture: bool,
    /// Copy the capture of the whole run here (passed or failed).
    pub pcap: Option<PathBuf>,
    /// A failed run keeps its capture and the device's log in a new directory
    /// `<artifacts>/<scenario>-<UTC timestamp>/`, named in the error.
    pub artifacts: PathBuf,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            golden_root: golden_dir(),
            check_capture: false,
            pcap: None,
            artifacts: default_artifacts_dir(),
        }
    }
}

/// `./pn-lab-failures`: failed runs keep their artifacts under the current directory.
pub fn default_artifacts_dir() -> PathBuf {
    PathBuf::from("pn-lab-failures")
}

/// Run `sc` from set-up to the last step. On failure the error names the scenario file, the
/// step, the cause and the directory that keeps the capture and the device log.
pub fn run(sc: &Scenario) -> Result<(), String> {
    run_with(sc, &RunOptions::default())
}

/// [`run`] with options.
pub fn run_with(sc: &Scenario, o: &RunOptions) -> Result<(), String> {
    let opts = LabOptions {
        api_key: sc.device.api_key.clone(),
        licence: licence(&sc.device.licence),
        nic_override: match sc.device.nic {
            NicChoice::Veth => None,
            NicChoice::Missing => Some("pnmissing0".into()),
        },
        config_xml: sc.device.config.as_deref().map(read_config).transpose()?,
        licence_recheck_s: sc.device.licence_recheck_s,
        settings: sc.device.settings.clone(),
        capture: true,
        auto_start: false,
    };
    let lab = Lab::start(opts).map_err(|e| format!("{}: lab set-up: {e}", sc.path.display()))?;
    let mut vars = BTreeMap::new();
    vars.insert("nic".to_string(), Json::String(lab.nic().to_string()));
    let mut r = Run {
        sc,
        golden_root: o.golden_root.clone(),
        peer: None,
        lab,
        vars,
    };
    let mut result = r.all_steps();
    let pcap = r.lab.finish_capture();
    if let (Some(to), Some(from)) = (&o.pcap, &pcap) {
        if let Err(e) = std::fs::copy(from, to) {
            let e = format!("--pcap {}: {e}", to.display());
            result = result.and(Err(e));
        }
    }
    if result.is_ok() && o.check_capture {
        result = pcap
            .ok_or_else(|| "no capture".to_string())
            .and_then(|p| capture_problems(&p))
            .and_then(|problems| match problems.as_slice() {
                [] => Ok(()),
                _ => Err(format!(
                    "{}: tshark found {} problem(s) in the capture:\n{}",
                    sc.path.display(),
                    problems.len(),
                    problems.join("\n")
                )),
            });
    }
    if let Err(e) = &result {
        let kept = r.lab.keep_artifacts(&o.artifacts, &sc.name);
        return Err(format!(
            "{e}\ncapture and device log kept in: {}\ndevice log:\n{}",
            kept.map(|p| p.display().to_string())
                .unwrap_or_else(|| format!("- (cannot write under {})", o.artifacts.display())),
            r.lab.device_log()
        ));
    }
    result
}

impl Run<'_> {
    fn all_steps(&mut self) -> Result<(), String> {
        if self
            .sc
            .steps
            .iter()
            .any(|s| matches!(s.action, Action::Netem { .. }))
        {
            // Putting the bridge in takes longer than a data-hold time: do it before the
            // exchange starts, not at the step.
            self.lab
                .install_impairment()
                .map_err(|e| format!("{}: impairment bridge: {e}", self.sc.path.display()))?;
        }
        if let Some(c) = &self.sc.controller {
            let timing = PeerTiming {
                send_clock_factor: (c.cycle_ms * 32.0).round() as u16,
                reduction_ratio: 1,
                data_hold_factor: c.data_hold_factor,
            };
            let peer = Peer::start(
                &self.lab.ns_ctl,
                self.lab.controller_nic(),
                self.lab.config_text(),
                timing,
            )
            .map_err(|e| format!("{}: controller set-up: {e}", self.sc.path.display()))?;
            self.peer = Some(peer);
        }
        if self.sc.device.start {
            let resp = self.call_raw("POST", "/api/start", None, &KeyChoice::Configured, &[])?;
            if resp.status != 200 {
                return Err(format!(
                    "{}: set-up start: HTTP {}",
                    self.sc.path.display(),
                    resp.status
                ));
            }
            // The start request returns before the stack has bound everything; the device is
            // ready for a controller once it reports Initialized with the link up.
            self.wait_status(
                &[
                    ("state", Json::from("Initialized")),
                    ("linkUp", Json::from(true)),
                ],
                Duration::from_secs(5),
            )
            .map_err(|e| format!("{}: set-up start: {e}", self.sc.path.display()))?;
        }
        if self.sc.controller.as_ref().is_some_and(|c| c.connect) {
            self.peer_mut()?
                .connect()
                .map_err(|e| format!("{}: controller set-up: {e}", self.sc.path.display()))?;
        }
        for step in &self.sc.steps {
            self.step(step).map_err(|e| {
                let note = step
                    .note
                    .as_deref()
                    .map(|n| format!(" ({n})"))
                    .unwrap_or_default();
                format!("{}: step {}{note}: {e}", self.sc.path.display(), step.index)
            })?;
        }
        Ok(())
    }

    fn headers(&self, key: &KeyChoice, extra: &[(String, String)]) -> Vec<(String, String)> {
        let mut h: Vec<(String, String)> = extra.to_vec();
        let value = match key {
            KeyChoice::Configured => self.lab.opts.api_key.clone(),
            KeyChoice::None => None,
            KeyChoice::Value(v) => Some(v.clone()),
        };
        if let Some(v) = value {
            h.push((KEY_HEADER.to_string(), v));
        }
        h
    }

    fn call_raw(
        &self,
        method: &str,
        path: &str,
        body: Option<Vec<u8>>,
        key: &KeyChoice,
        extra: &[(String, String)],
    ) -> Result<pn_testkit::http::Response, String> {
        let headers = self.headers(key, extra);
        self.lab.http(method, path, &headers, body)
    }

    fn step(&mut self, step: &Step) -> Result<(), String> {
        match &step.action {
            Action::Call(c) => {
                for i in 0..c.repeat {
                    if c.repeat > 1 {
                        self.vars.insert("i".to_string(), Json::from(i));
                    }
                    self.call(c).map_err(|e| {
                        if c.repeat > 1 {
                            format!("repetition {i}: {e}")
                        } else {
                            e
                        }
                    })?;
                }
                Ok(())
            }
            Action::Wait {
                path,
                until,
                within_ms,
                every_ms,
            } => {
                let path = substitute(path, &self.vars)?;
                let until = subst_matchers(until, &self.vars)?;
                let deadline = Instant::now() + Duration::from_millis(*within_ms);
                loop {
                    let resp = self.call_raw("GET", &path, None, &KeyChoice::Configured, &[])?;
                    let last = if resp.status == 200 {
                        let v = resp.json();
                        let fails = check_all(&v, until.iter());
                        if fails.is_empty() {
                            return Ok(());
                        }
                        format!("{}; last response {v}", fails.join("; "))
                    } else {
                        format!("HTTP {}: {}", resp.status, resp.text())
                    };
                    if Instant::now() >= deadline {
                        return Err(format!("condition not met within {within_ms} ms: {last}"));
                    }
                    std::thread::sleep(Duration::from_millis(*every_ms));
                }
            }
            Action::Link { up } => self.lab.set_link(*up),
            Action::Netem {
                loss_pct,
                delay_ms,
                duplicate_pct,
            } => self.lab.netem(*loss_pct, *delay_ms, *duplicate_pct),
            Action::Restart {
                kill,
                api_key,
                licence: l,
            } => self
                .lab
                .restart(*kill, api_key.clone(), l.as_ref().map(licence)),
            Action::WriteConfig { source } => {
                let xml = match source {
                    ConfigSource::File(f) => read_config(f)?,
                    ConfigSource::Inline(x) => x.clone(),
                };
                self.lab.write_config(&xml)
            }
            Action::Pause { ms } => {
                std::thread::sleep(Duration::from_millis(*ms));
                Ok(())
            }
            Action::Controller(a) => self.controller(a),
        }
    }

    /// Poll GET /api/status until the string fields have the given values.
    fn wait_status(&self, want: &[(&str, Json)], within: Duration) -> Result<(), String> {
        let deadline = Instant::now() + within;
        loop {
            let resp = self.call_raw("GET", "/api/status", None, &KeyChoice::Configured, &[])?;
            let v: Json = serde_json::from_slice(&resp.body).unwrap_or(Json::Null);
            if want.iter().all(|(k, val)| v[*k] == *val) {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "status did not reach {want:?} within {within:?}: {v}"
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn peer_mut(&mut self) -> Result<&mut Peer, String> {
        self.peer
            .as_mut()
            .ok_or_else(|| "no controller in this scenario".to_string())
    }

    fn controller(&mut self, a: &ControllerAction) -> Result<(), String> {
        let hex_bytes = |h: &str| hex_decode(h).ok_or_else(|| format!("`hex = {h:?}` is not hex"));
        let p = self.peer_mut()?;
        match a {
            ControllerAction::Connect => p.connect(),
            ControllerAction::Release => p.release(),
            ControllerAction::Abort => p.abort(),
            ControllerAction::StopOutputs => p.update_faults(|f| f.stop_outputs = true),
            ControllerAction::ResumeOutputs => p.update_faults(|f| f.stop_outputs = false),
            ControllerAction::ProviderStop => p.update_faults(|f| f.provider_stop = true),
            ControllerAction::ProviderRun => p.update_faults(|f| f.provider_stop = false),
            ControllerAction::SetOutputs { offset, hex } => {
                p.set_outputs(*offset, &hex_bytes(hex)?)
            }
            ControllerAction::ExpectInputs {
                offset,
                hex,
                within_ms,
            } => p.expect_inputs(*offset, &hex_bytes(hex)?, Duration::from_millis(*within_ms)),
            ControllerAction::ReadIm0 => p.read_im0(),
            // Alarms are acknowledged by the controller as they arrive (transport ACK and
            // AlarmAck); the step checks that nothing is left unacknowledged.
            ControllerAction::AckAlarms => Ok(()),
        }
    }

    fn call(&mut self, c: &Call) -> Result<(), String> {
        let path = substitute(&c.path, &self.vars)?;
        let body = match &c.body {
            None => None,
            Some(Body::Json(j)) => {
                Some(serde_json::to_vec(&substitute_json(j, &self.vars)?).expect("JSON serialises"))
            }
            Some(Body::Raw(r)) => Some(substitute(r, &self.vars)?.into_bytes()),
            Some(Body::Size(n)) => Some(vec![b'x'; *n]),
        };
        let resp = self.call_raw(&c.method, &path, body, &c.key, &c.headers)?;
        if let Some(want) = c.expect_status {
            if resp.status != want {
                return Err(format!(
                    "{} {path}: expected HTTP {want}, got {}: {}",
                    c.method,
                    resp.status,
                    resp.text()
                ));
            }
        }
        let needs_json = !c.assert.is_empty() || c.snapshot.is_some() || !c.save.is_empty();
        if !needs_json {
            return Ok(());
        }
        let v: Json = serde_json::from_slice(&resp.body).map_err(|e| {
            format!(
                "{} {path}: body is not JSON ({e}): {}",
                c.method,
                resp.text()
            )
        })?;
        let matchers = subst_matchers(&c.assert, &self.vars)?;
        let fails = check_all(&v, matchers.iter());
        if !fails.is_empty() {
            return Err(format!(
                "{} {path}: {}; response {v}",
                c.method,
                fails.join("; ")
            ));
        }
        for (name, field) in &c.save {
            let val = lookup(&v, field)
                .ok_or_else(|| format!("save `{name}`: no field `{field}` in {v}"))?;
            self.vars.insert(name.clone(), val.clone());
        }
        if let Some(snap) = &c.snapshot {
            let lits = vec![
                (
                    self.lab.dir.path().display().to_string(),
                    "[labdir]".to_string(),
                ),
                (self.lab.nic().to_string(), "[nic]".to_string()),
                (
                    self.lab.controller_nic().to_string(),
                    "[peer-nic]".to_string(),
                ),
            ];
            let value = json_with_status(resp.status, redact_with(&v, &lits));
            snapshot(self.sc, &self.golden_root, snap, &value)?;
        }
        Ok(())
    }
}

fn hex_decode(h: &str) -> Option<Vec<u8>> {
    if h.len() % 2 != 0 {
        return None;
    }
    (0..h.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(h.get(i..i + 2)?, 16).ok())
        .collect()
}

/// Substitute saved variables into the expected values of matchers.
fn subst_matchers(
    m: &BTreeMap<String, Matcher>,
    vars: &BTreeMap<String, Json>,
) -> Result<BTreeMap<String, Matcher>, String> {
    m.iter()
        .map(|(k, v)| {
            let v = match v {
                Matcher::Equals(j) => Matcher::Equals(substitute_json(j, vars)?),
                Matcher::NotEquals(j) => Matcher::NotEquals(substitute_json(j, vars)?),
                Matcher::Contains(s) => Matcher::Contains(substitute(s, vars)?),
                Matcher::OneOf(js) => Matcher::OneOf(
                    js.iter()
                        .map(|j| substitute_json(j, vars))
                        .collect::<Result<_, _>>()?,
                ),
                other => other.clone(),
            };
            Ok((k.clone(), v))
        })
        .collect()
}

/// The snapshot holds the HTTP status too, so a changed status fails as well.
fn json_with_status(status: u16, body: Json) -> Json {
    serde_json::json!({ "status": status, "body": body })
}

/// Compare `value` with `golden/<scenario>/<name>.snap` (insta). A mismatch or a missing golden
/// file is an error; under CI insta never writes new snapshots.
pub fn snapshot(sc: &Scenario, golden_root: &Path, name: &str, value: &Json) -> Result<(), String> {
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(golden_root.join(&sc.name));
    settings.set_prepend_module_to_snapshot(false);
    settings.set_input_file(&sc.path);
    settings.set_omit_expression(true);
    settings.set_description(format!("{} — step snapshot `{name}`", sc.title));
    settings.set_sort_maps(true);
    let name = name.to_string();
    let value = value.clone();
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        settings.bind(|| insta::assert_json_snapshot!(name, value));
    }))
    .map_err(|p| {
        let msg = p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "snapshot assertion failed".into());
        format!("golden snapshot `{}` differs or is missing: {msg}", sc.name)
    })
}

/// Malformed frames and expert items (Warning and above) tshark reports for `pcap`, one line
/// each with the frame number and protocols.
fn capture_problems(pcap: &Path) -> Result<Vec<String>, String> {
    // A run without a frame on the wire (HTTP-only scenarios) may end before tcpdump has
    // written its file: nothing to judge.
    if std::fs::metadata(pcap).map_or(true, |m| m.len() == 0) {
        return Ok(Vec::new());
    }
    let packets = pn_testkit::tshark::dissect_file(
        pcap,
        &[
            "-o",
            "ip.check_checksum:FALSE",
            "-o",
            "udp.check_checksum:FALSE",
        ],
    )?;
    let mut out = Vec::new();
    for (i, p) in packets.iter().enumerate() {
        let what = format!("frame {} ({})", i + 1, p.protocols());
        if p.malformed() {
            out.push(format!("{what}: malformed"));
        }
        for e in p.expert_problems() {
            out.push(format!("{what}: {e}"));
        }
    }
    Ok(out)
}

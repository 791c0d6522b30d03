//! The network lab: a device namespace and a controller namespace joined by a veth pair, the
//! real `pn-device` binary started in the device namespace with its own temporary settings,
//! configuration, licence and persistence directory, a packet capture on the controller side,
//! and the operations scenarios need (HTTP calls, link down/up, netem, restart, kill).
//!
//! Everything is removed on drop; namespaces left behind by crashed runs are removed when the
//! next lab starts ([`pn_testkit::netns::remove_stale`]).

use pn_testkit::http::{self, Response};
use pn_testkit::netns::{NetNs, Veth};
use serde_json::{json, Value as Json};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The device API inside its namespace (the port is fixed by the spec).
pub const API: &str = "127.0.0.1:18840";

/// Name prefixes of lab namespaces (for stale clean-up).
const NS_DEV: &str = "pld";
const NS_CTL: &str = "plc";

/// Which licence the lab gives the device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Licence {
    Valid,
    Missing,
    /// Signed by a key the device does not trust.
    Invalid,
    /// Valid for this many seconds from now.
    ExpiresIn(u64),
}

/// Options for a lab.
#[derive(Debug, Clone)]
pub struct LabOptions {
    pub api_key: Option<String>,
    pub licence: Licence,
    /// NIC name written into the settings; `None` = the device end of the veth.
    pub nic_override: Option<String>,
    /// Runtime configuration XML text (`${nic}` is replaced by the device's veth end);
    /// `None` = the embedded default configuration.
    pub config_xml: Option<String>,
    pub licence_recheck_s: Option<u64>,
    /// Extra settings (merged over the lab's).
    pub settings: Option<Json>,
    /// Record a pcap on the controller side.
    pub capture: bool,
    /// Start the slave at daemon start (`Runtime:AutoStart`).
    pub auto_start: bool,
}

impl Default for LabOptions {
    fn default() -> Self {
        LabOptions {
            api_key: None,
            licence: Licence::Valid,
            nic_override: None,
            config_xml: None,
            licence_recheck_s: None,
            settings: None,
            capture: true,
            auto_start: false,
        }
    }
}

/// A running lab.
pub struct Lab {
    pub dir: tempfile::TempDir,
    // Field order matters for drop: processes first, then the namespaces.
    device: Option<Child>,
    capture: Option<Capture>,
    /// The impairment bridge of the `netem` scenario step, installed on first use; it must go
    /// before the namespaces it redirects between.
    impair: std::sync::Mutex<Option<crate::impair::Bridge>>,
    pub veth: Veth,
    pub ns_ctl: NetNs,
    pub ns_dev: NetNs,
    pub opts: LabOptions,
}

/// Locate the `pn-device` binary: `$PN_DEVICE_BIN`, else next to the running executable
/// (`target/<profile>/` or its `deps/` folder).
pub fn device_binary() -> Result<PathBuf, String> {
    if let Ok(p) = std::env::var("PN_DEVICE_BIN") {
        return Ok(PathBuf::from(p));
    }
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    for dir in exe.ancestors().skip(1).take(3) {
        let cand = dir.join("pn-device");
        if cand.is_file() {
            return Ok(cand);
        }
    }
    Err(format!(
        "pn-device binary not found near {} (run `cargo build -p pn-device` or set PN_DEVICE_BIN)",
        exe.display()
    ))
}

/// [`device_binary`], building it first with cargo when it is missing (so that
/// `cargo run -p pn-lab -- demo` works on a fresh checkout).
pub fn device_binary_or_build() -> Result<PathBuf, String> {
    if let Ok(p) = device_binary() {
        return Ok(p);
    }
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    eprintln!("pn-device binary not found: building it (cargo build -p pn-device)");
    let st = Command::new(&cargo)
        .args(["build", "-p", "pn-device", "--bin", "pn-device"])
        .current_dir(&root)
        .status()
        .map_err(|e| format!("cannot run {cargo}: {e}"))?;
    if !st.success() {
        return Err("cargo build -p pn-device failed".into());
    }
    device_binary()
}

/// The development signing key (device/testdata), trusted by the embedded default settings.
fn dev_key_hex() -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../device/testdata/dev-licence-private-key.txt");
    std::fs::read_to_string(&p)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        .lines()
        .find(|l| {
            let t = l.trim();
            t.len() == 64 && t.chars().all(|c| c.is_ascii_hexdigit())
        })
        .expect("dev key file holds a 64-hex-digit key")
        .trim()
        .to_string()
}

fn now_unix() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// Write a licence file for `choice` (nothing for `Missing`).
pub fn write_licence(path: &Path, choice: &Licence) -> Result<(), String> {
    use pn_device_formats::licence::{issue, parse_private_key, Binding, Payload, PRODUCT};
    let (key, lifetime) = match choice {
        Licence::Missing => return Ok(()),
        Licence::Valid => (parse_private_key(&dev_key_hex())?, 86_400 * 365),
        Licence::ExpiresIn(s) => (parse_private_key(&dev_key_hex())?, *s as i64),
        // A key nobody trusts: a fixed seed that is not the development key.
        Licence::Invalid => (parse_private_key(&"42".repeat(32))?, 86_400),
    };
    let now = now_unix();
    let payload = Payload {
        licensee: "pn-lab".into(),
        product: PRODUCT.into(),
        serial: "lab-0001".into(),
        issued_at: now,
        not_before: now - 60,
        not_after: now + lifetime,
        binding: Binding {
            machine_id: None,
            mac: None,
            any: Some(true),
        },
    };
    std::fs::write(path, issue(&key, &payload)).map_err(|e| format!("{}: {e}", path.display()))
}

fn merge(base: &mut Json, over: &Json) {
    match (base, over) {
        (Json::Object(b), Json::Object(o)) => {
            for (k, v) in o {
                merge(b.entry(k.clone()).or_insert(Json::Null), v);
            }
        }
        (b, o) => *b = o.clone(),
    }
}

impl Lab {
    /// Create namespaces and veth, write the device's files, start capture and the daemon, and
    /// wait until its API answers.
    pub fn start(opts: LabOptions) -> Result<Lab, String> {
        pn_testkit::netns::remove_stale(NS_DEV);
        pn_testkit::netns::remove_stale(NS_CTL);
        let ns_dev = NetNs::new(NS_DEV)?;
        let ns_ctl = NetNs::new(NS_CTL)?;
        let veth = Veth::new("pl", &ns_dev, &ns_ctl)?;
        // The PNIO-CM link: the device's address as its configuration states it (scenario
        // configurations use DEV_IP), the controller's beside it.
        ns_dev.exec_ok(&[
            "ip",
            "addr",
            "add",
            &format!("{}/24", crate::peer::DEV_IP),
            "dev",
            &veth.a,
        ])?;
        ns_ctl.exec_ok(&[
            "ip",
            "addr",
            "add",
            &format!("{}/24", crate::peer::CTL_IP),
            "dev",
            &veth.b,
        ])?;
        let dir = tempfile::Builder::new()
            .prefix("pn-lab-")
            .tempdir()
            .map_err(|e| e.to_string())?;
        let mut lab = Lab {
            dir,
            device: None,
            capture: None,
            impair: std::sync::Mutex::new(None),
            veth,
            ns_ctl,
            ns_dev,
            opts,
        };
        std::fs::create_dir_all(lab.persist_dir()).map_err(|e| e.to_string())?;
        write_licence(&lab.licence_path(), &lab.opts.licence.clone())?;
        if let Some(xml) = lab.opts.config_xml.clone() {
            lab.write_config(&xml)?;
        }
        lab.write_settings()?;
        if lab.opts.capture {
            lab.start_capture()?;
        }
        lab.start_device()?;
        Ok(lab)
    }

    /// The device's NIC: the device end of the veth pair.
    pub fn nic(&self) -> &str {
        &self.veth.a
    }

    /// The controller's NIC: the other end.
    pub fn controller_nic(&self) -> &str {
        &self.veth.b
    }

    pub fn settings_path(&self) -> PathBuf {
        self.dir.path().join("settings.json")
    }
    pub fn config_path(&self) -> PathBuf {
        self.dir.path().join("config.xml")
    }
    pub fn licence_path(&self) -> PathBuf {
        self.dir.path().join("licence.json")
    }
    pub fn persist_dir(&self) -> PathBuf {
        self.dir.path().join("persist")
    }
    pub fn log_path(&self) -> PathBuf {
        self.dir.path().join("device.log")
    }
    pub fn pcap_path(&self) -> PathBuf {
        self.dir.path().join("capture.pcap")
    }

    /// Write the runtime configuration XML (`${nic}` is replaced by the device's NIC).
    pub fn write_config(&self, xml: &str) -> Result<(), String> {
        let text = xml.replace("${nic}", self.nic());
        std::fs::write(self.config_path(), text).map_err(|e| e.to_string())
    }

    /// The runtime configuration the device was given (the embedded default when none).
    pub fn config_text(&self) -> String {
        std::fs::read_to_string(self.config_path())
            .unwrap_or_else(|_| pn_device_formats::config::DEFAULT_CONFIG_XML.to_string())
    }

    fn write_settings(&self) -> Result<(), String> {
        let nic = self
            .opts
            .nic_override
            .clone()
            .unwrap_or_else(|| self.nic().to_string());
        let mut s = json!({
            "Api": { "ApiKey": self.opts.api_key.clone().unwrap_or_default() },
            "Network": { "DefaultInterfaceName": nic },
            "Paths": {
                "RuntimeConfig": if self.opts.config_xml.is_some() {
                    self.config_path().display().to_string()
                } else {
                    String::new()
                },
                "PersistenceDir": self.persist_dir().display().to_string(),
            },
            "Licence": { "CertificatePath": self.licence_path().display().to_string() },
            "Runtime": { "AutoStart": self.opts.auto_start },
            "Logging": { "Format": "text", "Filter": "info" },
        });
        if let Some(r) = self.opts.licence_recheck_s {
            merge(
                &mut s,
                &json!({ "Licence": { "RecheckIntervalSeconds": r } }),
            );
        }
        if let Some(extra) = &self.opts.settings {
            merge(&mut s, extra);
        }
        std::fs::write(
            self.settings_path(),
            serde_json::to_string_pretty(&s).expect("settings serialise"),
        )
        .map_err(|e| e.to_string())
    }

    fn start_capture(&mut self) -> Result<(), String> {
        let cmd = self.ns_ctl.command("tcpdump");
        self.capture = Some(Capture::start(cmd, &self.veth.b, &self.pcap_path())?);
        Ok(())
    }

    /// Start the daemon and wait (deadline 20 s) until `GET /api/info` answers.
    pub fn start_device(&mut self) -> Result<(), String> {
        let bin = device_binary()?;
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log_path())
            .map_err(|e| e.to_string())?;
        let child = self
            .ns_dev
            .command(&bin)
            .arg("--settings")
            .arg(self.settings_path())
            .env_remove("VENDOR_PNET_NIC")
            .stdin(Stdio::null())
            .stdout(log.try_clone().map_err(|e| e.to_string())?)
            .stderr(log)
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", bin.display()))?;
        self.device = Some(child);
        self.wait_ready(Duration::from_secs(20))
    }

    /// Poll `GET /api/info` until it answers 200 (any key problem is the caller's).
    pub fn wait_ready(&mut self, within: Duration) -> Result<(), String> {
        let deadline = Instant::now() + within;
        loop {
            if let Some(child) = self.device.as_mut() {
                if let Ok(Some(status)) = child.try_wait() {
                    return Err(format!(
                        "pn-device exited during start-up ({status}); log:\n{}",
                        self.device_log()
                    ));
                }
            }
            if let Ok(r) = self.http("GET", "/api/info", &[], None) {
                if r.status == 200 || r.status == 401 {
                    return Ok(());
                }
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "pn-device API not ready within {within:?}; log:\n{}",
                    self.device_log()
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The daemon's log so far.
    pub fn device_log(&self) -> String {
        std::fs::read_to_string(self.log_path()).unwrap_or_default()
    }

    /// One HTTP request to the device API, made from inside the device namespace.
    pub fn http(
        &self,
        method: &str,
        path: &str,
        headers: &[(String, String)],
        body: Option<Vec<u8>>,
    ) -> Result<Response, String> {
        let method = method.to_string();
        let path = path.to_string();
        let headers = headers.to_vec();
        self.ns_dev.enter(move || {
            let addr: SocketAddr = API.parse().expect("valid address");
            let h: Vec<(&str, &str)> = headers
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect();
            http::request(
                addr,
                &method,
                &path,
                &h,
                body.as_deref(),
                Duration::from_secs(20),
            )
            .map_err(|e| format!("{method} {path}: {e}"))
        })?
    }

    /// Stop the daemon: SIGTERM (graceful, spec drain) or SIGKILL; waits for the exit.
    pub fn stop_device(&mut self, kill: bool) -> Result<Option<i32>, String> {
        let Some(mut child) = self.device.take() else {
            return Ok(None);
        };
        let sig = if kill { libc::SIGKILL } else { libc::SIGTERM };
        // `ip netns exec` execs the daemon in place, so the child's pid is the daemon's.
        // SAFETY: kill(2) on our own child's pid.
        unsafe {
            libc::kill(child.id() as i32, sig);
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            match child.try_wait() {
                Ok(Some(st)) => return Ok(st.code()),
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(10))
                }
                _ => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err("pn-device did not exit within 10 s of the signal".into());
                }
            }
        }
    }

    /// Restart with possibly changed API key / licence (same persistence directory).
    pub fn restart(
        &mut self,
        kill: bool,
        api_key: Option<Option<String>>,
        licence: Option<Licence>,
    ) -> Result<(), String> {
        self.stop_device(kill)?;
        if let Some(k) = api_key {
            self.opts.api_key = k;
        }
        if let Some(l) = licence {
            let _ = std::fs::remove_file(self.licence_path());
            write_licence(&self.licence_path(), &l)?;
            self.opts.licence = l;
        }
        self.write_settings()?;
        self.start_device()
    }

    /// Link of the device's NIC down or up.
    pub fn set_link(&self, up: bool) -> Result<(), String> {
        Veth::set_link(&self.ns_dev, &self.veth.a, up)
    }

    /// Impair the device's egress (frames device -> controller): `loss_pct` of the frames lost
    /// at random, `delay_ms` added to each, and `duplicate_pct` 0 or 100 (every frame sent
    /// twice). All zero removes the impairment. This kernel has no `sch_netem`, so the
    /// userspace bridge of [`crate::impair`] does it (docs/decisions.md section 17); it is put
    /// between the two veth ends on first use.
    pub fn netem(&self, loss_pct: f64, delay_ms: u64, duplicate_pct: f64) -> Result<(), String> {
        use crate::impair::{Dir, Impairment, Loss};
        if duplicate_pct != 0.0 && duplicate_pct != 100.0 {
            return Err(format!(
                "duplicate_pct {duplicate_pct}: the impairment bridge duplicates every frame \
                 (100) or none (0)"
            ));
        }
        let imp = Impairment {
            loss: if loss_pct > 0.0 {
                Loss::Probability(loss_pct / 100.0)
            } else {
                Loss::None
            },
            delay: Duration::from_millis(delay_ms),
            duplicate: duplicate_pct == 100.0,
            ..Impairment::NONE
        };
        if imp == Impairment::NONE && self.impair.lock().is_ok_and(|s| s.is_none()) {
            return Ok(());
        }
        self.install_impairment()?;
        let slot = self.impair.lock().map_err(|_| "impairment lock poisoned")?;
        if let Some(b) = slot.as_ref() {
            b.set(Dir::DevToCtl, imp);
        }
        Ok(())
    }

    /// Put the impairment bridge between the two veth ends, passing everything for now.
    /// Installing it redirects the traffic for a moment (longer than a short data-hold time):
    /// do it before a controller connects.
    pub fn install_impairment(&self) -> Result<(), String> {
        let mut slot = self.impair.lock().map_err(|_| "impairment lock poisoned")?;
        if slot.is_none() {
            // A fixed seed: a scenario's random loss is the same in every run.
            *slot = Some(crate::impair::Bridge::install(
                &self.ns_dev,
                &self.veth.a,
                &self.ns_ctl,
                &self.veth.b,
                0x5CE7_A210,
            )?);
        }
        Ok(())
    }

    /// Keep the capture and the device log of a failed run in a new directory
    /// `<root>/<name>-<UTC timestamp>/` (`capture.pcap`, `device.log`) and return it. `root`
    /// is the caller's: `pn-lab run` gives `./pn-lab-failures` or `--artifacts DIR`.
    pub fn keep_artifacts(&mut self, root: &Path, name: &str) -> Option<PathBuf> {
        self.finish_capture();
        let out = new_artifact_dir(root, name).ok()?;
        if self.pcap_path().is_file() {
            let _ = std::fs::copy(self.pcap_path(), out.join("capture.pcap"));
        }
        let _ = std::fs::write(out.join("device.log"), self.device_log());
        Some(out)
    }

    /// Stop the capture and return the path of the finished pcap.
    pub fn finish_capture(&mut self) -> Option<PathBuf> {
        self.capture.take().map(Capture::finish)
    }
}

/// Create `<root>/<name>-<UTC timestamp>/` (with `-2`, `-3`... when a run of the same second
/// made one already).
pub fn new_artifact_dir(root: &Path, name: &str) -> Result<PathBuf, String> {
    let stamp: String = humantime::format_rfc3339_seconds(SystemTime::now())
        .to_string()
        .chars()
        .filter(|c| !matches!(c, '-' | ':'))
        .collect();
    std::fs::create_dir_all(root).map_err(|e| format!("{}: {e}", root.display()))?;
    for n in 1..1000 {
        let leaf = if n == 1 {
            format!("{name}-{stamp}")
        } else {
            format!("{name}-{stamp}-{n}")
        };
        let dir = root.join(leaf);
        match std::fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(format!("{}: {e}", dir.display())),
        }
    }
    Err(format!("{}: no free directory name", root.display()))
}

/// A `tcpdump` recording one interface to a pcap file (the lab's scenario capture, `--pcap` of
/// `pn-lab run` and `pn-lab demo`). Started: it listens before [`Capture::start`] returns.
/// Dropped: killed; [`Capture::finish`] ends it so that the file is complete.
pub struct Capture {
    child: Child,
    path: PathBuf,
}

impl Capture {
    /// Start `cmd` (a `tcpdump` command, e.g. from [`NetNs::command`]) on `iface`, writing
    /// `path`, and wait (deadline 10 s) until tcpdump says it is listening.
    pub fn start(mut cmd: Command, iface: &str, path: &Path) -> Result<Capture, String> {
        use std::io::BufRead;
        let mut child = cmd
            // --immediate-mode: each frame is handed over as it arrives; without it tcpdump
            // gets them in blocks (up to a second late) and a SIGTERM drops the last block,
            // which for a short run was all of it. -Z root: keep the privileges it was started
            // with, so it can write any path the caller can.
            .args([
                "-i",
                iface,
                "--immediate-mode",
                "-U",
                "-s",
                "0",
                "-Z",
                "root",
                "-w",
            ])
            .arg(path)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start tcpdump: {e}"))?;
        let stderr = child.stderr.take().expect("piped stderr");
        let (tx, rx) = std::sync::mpsc::channel();
        // Reads tcpdump's stderr to its end (so the pipe never fills); the first line that
        // says "listening on" releases the caller.
        std::thread::spawn(move || {
            let mut said = Vec::new();
            let mut tx = Some(tx);
            for line in std::io::BufReader::new(stderr)
                .lines()
                .map_while(Result::ok)
            {
                if line.contains("listening on") {
                    if let Some(t) = tx.take() {
                        let _ = t.send(Ok(()));
                    }
                } else if tx.is_some() {
                    said.push(line);
                }
            }
            if let Some(t) = tx {
                let _ = t.send(Err(said.join("\n")));
            }
        });
        let mut cap = Capture {
            child,
            path: path.to_path_buf(),
        };
        match rx.recv_timeout(Duration::from_secs(10)) {
            Ok(Ok(())) => Ok(cap),
            Ok(Err(said)) => {
                let _ = cap.child.wait();
                Err(format!("tcpdump on {iface} ended: {said}"))
            }
            Err(_) => Err(format!("tcpdump on {iface}: not listening within 10 s")),
        }
    }

    /// Stop tcpdump (SIGTERM: it flushes the file), wait for it, return the pcap's path.
    pub fn finish(mut self) -> PathBuf {
        // SAFETY: kill(2) on our own child's pid.
        unsafe {
            libc::kill(self.child.id() as i32, libc::SIGTERM);
        }
        let _ = self.child.wait();
        self.path.clone()
    }
}

impl Drop for Capture {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        let _ = self.stop_device(false);
        self.capture.take();
    }
}

/// Run a command and require success (for tools outside a namespace).
pub fn run_ok(cmd: &mut Command) -> Result<String, String> {
    let out = cmd.output().map_err(|e| e.to_string())?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

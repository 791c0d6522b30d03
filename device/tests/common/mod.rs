//! Test support: each test runs the REAL pn-device binary inside its own network namespace
//! (so every daemon has its own 127.0.0.1:18840), talks to it with a tiny HTTP/1.1 client whose
//! socket is created by a thread that entered the namespace with setns(2), and cleans up on drop.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use pn_testkit::daemon::{self as dk, DevLicence, DeviceXml, Launcher};
use serde_json::{json, Value};

pub const BIN: &str = env!("CARGO_BIN_EXE_pn-device");
pub const PORT: u16 = 18840;

static COUNTER: AtomicU32 = AtomicU32::new(0);

fn run(cmd: &mut Command) {
    let out = cmd.output().expect("run command");
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Poll `f` every 20 ms until it returns `Some`, or panic after `timeout`.
pub fn wait_for<T>(what: &str, timeout: Duration, f: impl FnMut() -> Option<T>) -> T {
    pn_testkit::poll::some(timeout, f).unwrap_or_else(|| panic!("timed out waiting for {what}"))
}

/// A network namespace with loopback up; deleted on drop.
pub struct Netns {
    pub name: String,
}

impl Netns {
    pub fn new() -> Netns {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let name = format!("pndev-{}-{n}", std::process::id());
        let _ = Command::new("ip").args(["netns", "del", &name]).output();
        run(Command::new("ip").args(["netns", "add", &name]));
        run(Command::new("ip").args(["-n", &name, "link", "set", "lo", "up"]));
        Netns { name }
    }

    /// Create a veth pair `nic` <-> `nic`p inside the namespace, both up.
    pub fn add_veth(&self, nic: &str) {
        let peer = format!("{nic}p");
        run(Command::new("ip").args([
            "-n", &self.name, "link", "add", nic, "type", "veth", "peer", "name", &peer,
        ]));
        self.set_link(nic, true);
        self.set_link(&peer, true);
    }

    pub fn set_link(&self, dev: &str, up: bool) {
        pn_testkit::netns::set_link_named(&self.name, dev, up).unwrap_or_else(|e| panic!("{e}"));
    }

    /// Run `f` on a thread that has entered this namespace.
    pub fn in_ns<T: Send + 'static>(&self, f: impl FnOnce() -> T + Send + 'static) -> T {
        pn_testkit::netns::enter_named(&self.name, f)
            .unwrap_or_else(|e| panic!("in namespace {}: {e}", self.name))
    }

    /// A TCP connection to the daemon's 127.0.0.1:18840 inside the namespace.
    pub fn connect(&self) -> std::io::Result<TcpStream> {
        self.in_ns(|| {
            let s = TcpStream::connect(("127.0.0.1", PORT))?;
            s.set_read_timeout(Some(Duration::from_secs(30)))?;
            Ok(s)
        })
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["netns", "del", &self.name])
            .output();
    }
}

/// An HTTP response.
#[derive(Debug)]
pub struct Resp {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Resp {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("body is not JSON ({e}): {}", self.body))
    }
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Send raw bytes on a fresh connection and parse the response (connection: close).
pub fn raw_request(stream: &mut TcpStream, req: &[u8]) -> std::io::Result<Resp> {
    stream.write_all(req)?;
    read_response(stream)
}

pub fn read_response(stream: &mut TcpStream) -> std::io::Result<Resp> {
    let mut buf = Vec::new();
    stream.read_to_end(&mut buf)?;
    let text = String::from_utf8_lossy(&buf).to_string();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let mut lines = head.lines();
    let status_line = lines.next().unwrap_or("");
    let status = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect();
    Ok(Resp {
        status,
        headers,
        body: body.to_string(),
    })
}

/// Settings builder for a daemon under test.
pub struct DaemonOpts {
    pub settings: Value,
    pub env_nic: Option<String>,
    pub config: Option<PathBuf>,
    pub extra_args: Vec<String>,
    /// Write the settings file (false = run with no settings file at all).
    pub with_settings_file: bool,
    /// Command words placed before the binary inside the namespace (e.g. setpriv ...).
    pub wrapper: Vec<String>,
}

/// The development private key committed under device/testdata (DEVELOPMENT ONLY).
pub fn dev_key() -> ed25519_dalek::SigningKey {
    pn_device::licence::parse_private_key(&dk::dev_key_hex()).unwrap()
}

/// Write a licence certificate valid from now-60 s for `secs` seconds (issued by the real
/// `pn-licence` tool with the development key).
pub fn write_licence(path: &Path, secs: i64, binding: pn_device::licence::Binding) {
    let binding = match binding {
        pn_device::licence::Binding {
            any: Some(true), ..
        } => dk::Binding::Any,
        pn_device::licence::Binding {
            machine_id: Some(id),
            ..
        } => dk::Binding::MachineId(id),
        pn_device::licence::Binding { mac: Some(mac), .. } => dk::Binding::Mac(mac),
        b => panic!("write_licence: a binding needs any, machineId or mac: {b:?}"),
    };
    DevLicence {
        valid_for_s: secs,
        binding,
        ..DevLicence::new("test", "t-1")
    }
    .write(&dk::licence_tool_for(Path::new(BIN)), path);
}

pub fn any_binding() -> pn_device::licence::Binding {
    pn_device::licence::Binding {
        machine_id: None,
        mac: None,
        any: Some(true),
    }
}

/// A running daemon in its own namespace, with a temp dir for settings/persistence/licence.
pub struct Daemon {
    pub ns: Netns,
    pub dir: tempfile::TempDir,
    pub child: Option<Child>,
    pub opts_settings: Value,
    pub log: PathBuf,
    env_nic: Option<String>,
    config: Option<PathBuf>,
    extra_args: Vec<String>,
    with_settings_file: bool,
    wrapper: Vec<String>,
}

impl DaemonOpts {
    pub fn new() -> DaemonOpts {
        DaemonOpts {
            settings: json!({ "Runtime": { "AutoStart": false } }),
            env_nic: Some("nosuch0".into()),
            config: None,
            extra_args: vec![],
            with_settings_file: true,
            wrapper: vec![],
        }
    }
    pub fn wrap(mut self, words: &[&str]) -> Self {
        self.wrapper = words.iter().map(|s| s.to_string()).collect();
        self
    }
    pub fn set(mut self, path: &str, v: Value) -> Self {
        let mut cur = &mut self.settings;
        let parts: Vec<&str> = path.split(':').collect();
        for p in &parts[..parts.len() - 1] {
            cur = cur
                .as_object_mut()
                .unwrap()
                .entry(p.to_string())
                .or_insert(json!({}));
        }
        cur[parts[parts.len() - 1]] = v;
        self
    }
    pub fn nic(mut self, nic: Option<&str>) -> Self {
        self.env_nic = nic.map(|s| s.to_string());
        self
    }
    pub fn config(mut self, p: PathBuf) -> Self {
        self.config = Some(p);
        self
    }
    pub fn arg(mut self, a: &str) -> Self {
        self.extra_args.push(a.to_string());
        self
    }
    pub fn no_settings_file(mut self) -> Self {
        self.with_settings_file = false;
        self
    }
    /// Sim plane with control socket + licence valid for an hour.
    pub fn sim(self) -> Self {
        self.set("Dev:SimulatedDataPlane", json!(true))
    }
}

impl Daemon {
    /// Start in a fresh namespace. `veth`: create a veth pair with that NIC name first.
    pub fn start(opts: DaemonOpts, veth: Option<&str>) -> Daemon {
        let ns = Netns::new();
        if let Some(v) = veth {
            ns.add_veth(v);
        }
        let dir = tempfile::tempdir().unwrap();
        Daemon::start_in(ns, dir, opts)
    }

    /// Start in an existing namespace / dir (restart tests).
    pub fn start_in(ns: Netns, dir: tempfile::TempDir, opts: DaemonOpts) -> Daemon {
        let d = dir.path();
        let mut settings = dk::base_settings(d);
        dk::merge(&mut settings, opts.settings);
        if settings.pointer("/Dev/SimulatedDataPlane") == Some(&json!(true)) {
            settings["Dev"]["SimControlSocket"] = json!(d.join("sim.sock").display().to_string());
        }
        let mut me = Daemon {
            ns,
            dir,
            child: None,
            opts_settings: settings,
            log: PathBuf::new(),
            env_nic: opts.env_nic,
            config: opts.config,
            extra_args: opts.extra_args,
            with_settings_file: opts.with_settings_file,
            wrapper: opts.wrapper,
        };
        me.spawn();
        me
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// (Re)spawn the process and wait until the API answers.
    pub fn spawn(&mut self) {
        let settings_path = self.path("settings.json");
        dk::write_settings(&settings_path, &self.opts_settings);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        self.log = self.path(&format!("daemon-{n}.log"));
        let mut l = Launcher::new(&self.ns.name, BIN, &self.log).wrapper(&self.wrapper);
        if self.with_settings_file {
            l = l.settings(&settings_path);
        }
        if let Some(c) = &self.config {
            l = l.config(c);
        }
        l = l.args(&self.extra_args);
        if let Some(nic) = &self.env_nic {
            l = l.nic(nic);
        }
        let child = self.child.insert(l.spawn());
        dk::wait_api(&self.ns.name, child, &self.log, Duration::from_secs(15));
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    pub fn try_req(
        &self,
        method: &str,
        path: &str,
        body: Option<&str>,
        headers: &[(&str, &str)],
    ) -> std::io::Result<Resp> {
        let mut req =
            format!("{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n");
        for (k, v) in headers {
            req.push_str(&format!("{k}: {v}\r\n"));
        }
        if let Some(b) = body {
            req.push_str(&format!(
                "Content-Type: application/json\r\nContent-Length: {}\r\n",
                b.len()
            ));
        } else if method == "POST" {
            req.push_str("Content-Length: 0\r\n");
        }
        req.push_str("\r\n");
        if let Some(b) = body {
            req.push_str(b);
        }
        let mut s = self.ns.connect()?;
        raw_request(&mut s, req.as_bytes())
    }

    pub fn req(&self, method: &str, path: &str, body: Option<&str>) -> Resp {
        self.try_req(method, path, body, &[])
            .unwrap_or_else(|e| panic!("{method} {path}: {e}"))
    }

    pub fn get(&self, path: &str) -> Value {
        let r = self.req("GET", path, None);
        assert_eq!(r.status, 200, "GET {path}: {}", r.body);
        r.json()
    }

    pub fn post(&self, path: &str, body: Value) -> Value {
        let b = body.to_string();
        let r = self.req("POST", path, Some(&b));
        assert_eq!(r.status, 200, "POST {path}: {}", r.body);
        r.json()
    }

    pub fn post_empty(&self, path: &str) -> Value {
        let r = self.req("POST", path, None);
        assert_eq!(r.status, 200, "POST {path}: {}", r.body);
        r.json()
    }

    pub fn status(&self) -> Value {
        self.get("/api/status")
    }

    pub fn wait_state(&self, state: &str) -> Value {
        wait_for(&format!("state {state}"), Duration::from_secs(10), || {
            let s = self.status();
            (s["state"] == state).then_some(s)
        })
    }

    /// One request on the simulated plane's control socket.
    pub fn sim(&self, line: Value) -> Value {
        let mut s = UnixStream::connect(self.path("sim.sock")).expect("sim socket");
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        writeln!(s, "{line}").unwrap();
        let mut r = String::new();
        BufReader::new(s).read_line(&mut r).unwrap();
        let v: Value = serde_json::from_str(&r).unwrap();
        assert_eq!(v["ok"], true, "sim {line}: {v}");
        v
    }

    pub fn pid(&self) -> i32 {
        self.child.as_ref().unwrap().id() as i32
    }

    pub fn signal(&self, sig: i32) {
        // SAFETY: plain syscall on our own child.
        unsafe { libc::kill(self.pid(), sig) };
    }

    /// Wait for the process to exit; returns its status.
    pub fn wait_exit(&mut self, timeout: Duration) -> std::process::ExitStatus {
        let child = self.child.as_mut().unwrap();
        wait_for("daemon exit", timeout, || child.try_wait().unwrap())
    }

    /// kill -9 and reap.
    pub fn kill9(&mut self) {
        if let Some(c) = self.child.as_mut() {
            dk::kill(c);
        }
        self.child = None;
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        self.kill9();
        // A failing test shows what the daemon said (libtest prints a failed test's output):
        // a CI failure on a loaded host must be readable without rerunning it.
        if std::thread::panicking() {
            let log = self.log_text();
            let tail: Vec<&str> = log.lines().rev().take(80).collect();
            eprintln!("---- daemon log (last {} lines) ----", tail.len());
            for l in tail.iter().rev() {
                eprintln!("{l}");
            }
        }
    }
}

/// Assert a Track 1 error body (spec 7.1) with the given status.
pub fn assert_track1(r: &Resp, status: u16) -> Value {
    assert_eq!(
        r.status, status,
        "expected {status}, got {}: {}",
        r.status, r.body
    );
    let v = r.json();
    assert_eq!(v["success"], false, "{v}");
    assert!(v["message"].is_string(), "{v}");
    assert!(
        v["code"]
            .as_str()
            .is_some_and(|c| c.starts_with("PnS.Api.")),
        "{v}"
    );
    assert!(v["errorCode"].is_i64(), "{v}");
    assert!(v["timestamp"].is_string(), "{v}");
    v
}

/// Write the runtime configuration XML with the given NIC and one IO module.
pub fn write_config(path: &Path, station: &str, nic: Option<&str>, in_len: u16, out_len: u16) {
    DeviceXml::new(station)
        .nic(nic)
        .io(in_len, out_len)
        .write(path);
}

//! Test support: the REAL `pn-device` binary in its own network namespace (it binds the fixed
//! 127.0.0.1:18840, so one namespace per daemon), a licence issued with the real `pn-licence`
//! tool, and helpers to run client code and `pnctl` inside the namespace.
//!
//! Finding the daemon: `CARGO_BIN_EXE_*` only exists for binaries of the package under test, so
//! `pn_testkit::daemon::device_bin` runs `cargo build -p pn-device --bins --features test-hooks` on first use (the same
//! cargo that runs the tests, same profile) and takes `pn-device` and `pn-licence` from the
//! target directory next to this test executable (`target/debug/`). That keeps the daemon in
//! step with the source without a dev-dependency on pn-device (which would build only its
//! library, not its binaries).
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Output, Stdio};
use std::time::Duration;

use pn_testkit::daemon::{self as dk, DevLicence, DeviceXml, Launcher};
use pn_testkit::netns::{NetNs, Veth};
use serde_json::{json, Value};

pub const PNCTL: &str = env!("CARGO_BIN_EXE_pnctl");
pub const URL: &str = "http://127.0.0.1:18840";

/// The daemon binaries (`pn-device`, `pn-licence`), built once per test process.
pub fn device_bin(name: &str) -> PathBuf {
    dk::device_bin().with_file_name(name)
}

/// Poll `f` every 20 ms until it returns `Some`, or panic after `timeout`.
pub fn wait_for<T>(what: &str, timeout: Duration, f: impl FnMut() -> Option<T>) -> T {
    pn_testkit::poll::some(timeout, f).unwrap_or_else(|| panic!("timed out waiting for {what}"))
}

/// What to start.
#[derive(Clone)]
pub struct Opts {
    /// `Api:ApiKey`.
    pub api_key: Option<String>,
    /// Use the daemon's simulated data plane (scripted controller side, real NIC probe).
    pub sim: bool,
    /// `VENDOR_PNET_NIC`: `None` = the veth created for the test.
    pub nic: Option<String>,
    /// Issue a valid licence.
    pub licence: bool,
    /// I area (controller -> device) and Q area (device -> controller) sizes of the config.
    pub in_len: u16,
    pub out_len: u16,
}

impl Default for Opts {
    fn default() -> Self {
        Opts {
            api_key: None,
            sim: false,
            nic: None,
            licence: true,
            in_len: 8,
            out_len: 16,
        }
    }
}

/// A running daemon in its own namespace, killed and cleaned up on drop.
pub struct Daemon {
    pub ns: NetNs,
    pub veth: Veth,
    pub dir: tempfile::TempDir,
    child: Option<Child>,
    pub log: PathBuf,
    pub opts: Opts,
}

pub fn write_config(path: &Path, in_len: u16, out_len: u16) {
    DeviceXml {
        device_id: 0x0007,
        ..DeviceXml::new("client-test")
    }
    .ident("ORDER-CL", "SN-CL-1", 2, "V1.0.0")
    .product(Some("client test device"))
    .io(in_len, out_len)
    .write(path);
}

impl Daemon {
    pub fn start(opts: Opts) -> Daemon {
        let ns = NetNs::new("pncl").expect("namespace");
        let veth = Veth::new("pcv", &ns, &ns).expect("veth");
        let dir = tempfile::tempdir().expect("tempdir");
        let d = dir.path();
        let cfg = d.join("config.xml");
        write_config(&cfg, opts.in_len, opts.out_len);
        let mut settings = dk::base_settings(d);
        dk::merge(
            &mut settings,
            json!({
                "Runtime": { "AutoStart": false },
                "Paths": { "RuntimeConfig": cfg.display().to_string() },
            }),
        );
        if let Some(k) = &opts.api_key {
            settings["Api"] = json!({ "ApiKey": k });
        }
        if opts.sim {
            settings["Dev"] = json!({
                "SimulatedDataPlane": true,
                "SimControlSocket": d.join("sim.sock").display().to_string(),
            });
        }
        dk::write_settings(&d.join("settings.json"), &settings);
        if opts.licence {
            DevLicence::new("pn-client tests", "pncl-1")
                .write(&device_bin("pn-licence"), &d.join(dk::LICENCE_FILE));
        }
        let log = d.join("daemon.log");
        let mut me = Daemon {
            ns,
            veth,
            dir,
            child: None,
            log,
            opts,
        };
        me.spawn();
        me
    }

    fn spawn(&mut self) {
        let nic = self.opts.nic.clone().unwrap_or_else(|| self.veth.a.clone());
        let child = Launcher::new(self.ns.name(), device_bin("pn-device"), &self.log)
            .settings(self.dir.path().join("settings.json"))
            .nic(&nic)
            .spawn();
        let child = self.child.insert(child);
        dk::wait_api(self.ns.name(), child, &self.log, Duration::from_secs(20));
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Run `f` on a thread inside the namespace.
    pub fn run<R: Send + 'static>(&self, f: impl FnOnce() -> R + Send + 'static) -> R {
        self.ns.enter(f).expect("run in namespace")
    }

    /// Run an async test body inside the namespace on a fresh tokio runtime.
    pub fn run_async<R, F>(&self, f: impl FnOnce() -> F + Send + 'static) -> R
    where
        R: Send + 'static,
        F: std::future::Future<Output = R>,
    {
        self.run(move || {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()
                .expect("runtime")
                .block_on(f())
        })
    }

    /// A blocking client (created inside the namespace: its runtime threads live there).
    pub fn with_client<R: Send + 'static>(
        &self,
        f: impl FnOnce(pn_client::blocking::BlockingClient) -> R + Send + 'static,
    ) -> R {
        let key = self.opts.api_key.clone();
        self.run(move || f(pn_client::blocking::BlockingClient::connect(URL, key).expect("client")))
    }

    /// Run `pnctl ARGS` inside the namespace (no API key unless given in `envs`).
    pub fn pnctl(&self, args: &[&str]) -> Run {
        self.pnctl_env(args, &[])
    }

    pub fn pnctl_env(&self, args: &[&str], envs: &[(&str, &str)]) -> Run {
        let mut r = pnctl_in(&self.ns, args, envs);
        if r.code == 3 && r.stderr.contains("no answer") {
            if let Some(c) = &self.child {
                r.daemon_threads = pn_testkit::daemon::thread_report(c.id());
            }
        }
        r
    }

    /// One line on the simulated plane's control socket.
    pub fn sim(&self, line: Value) -> Value {
        let mut s = UnixStream::connect(self.dir.path().join("sim.sock")).expect("sim socket");
        s.set_read_timeout(Some(Duration::from_secs(5)))
            .expect("timeout");
        writeln!(s, "{line}").expect("write sim");
        let mut r = String::new();
        BufReader::new(s).read_line(&mut r).expect("read sim");
        let v: Value = serde_json::from_str(&r).expect("sim answer");
        assert_eq!(v["ok"], true, "sim {line}: {v}");
        v
    }

    /// A raw request with the testkit's independent HTTP client (for cross-checks).
    pub fn raw(&self, method: &str, path: &str, body: Option<&str>) -> pn_testkit::http::Response {
        let (m, p, b) = (
            method.to_string(),
            path.to_string(),
            body.map(|b| b.as_bytes().to_vec()),
        );
        let key = self.opts.api_key.clone();
        self.run(move || {
            let hdrs: Vec<(&str, &str)> = match &key {
                Some(k) => vec![("X-Vendor-Pnet-Api-Key", k.as_str())],
                None => vec![],
            };
            pn_testkit::http::request(
                "127.0.0.1:18840".parse().expect("addr"),
                &m,
                &p,
                &hdrs,
                b.as_deref(),
                Duration::from_secs(10),
            )
            .expect("raw request")
        })
    }

    /// The service's Q area (client `I`) as the daemon reports it, read independently.
    pub fn output_area(&self) -> Vec<u8> {
        let v = self.raw("GET", "/api/io", None).json();
        pn_client::decode_hex(v["outputHex"].as_str().expect("outputHex")).expect("hex")
    }

    pub fn kill9(&mut self) {
        if let Some(mut c) = self.child.take() {
            dk::kill(&mut c);
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        self.kill9();
    }
}

/// Result of a pnctl run.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
    /// When pnctl waited in vain for an answer of a daemon that runs: where each of the
    /// daemon's threads was right after (empty otherwise), for the failure message.
    pub daemon_threads: String,
}

impl Run {
    pub fn json(&self) -> Value {
        serde_json::from_str(self.stdout.trim())
            .unwrap_or_else(|e| panic!("pnctl stdout is not JSON ({e}): {self:?}"))
    }
}

pub fn pnctl_in(ns: &NetNs, args: &[&str], envs: &[(&str, &str)]) -> Run {
    let mut cmd = ns.command(PNCTL);
    cmd.args(args)
        .env_remove("PN_API_KEY")
        .env_remove("PN_URL")
        .stdin(Stdio::null());
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let out: Output = cmd.output().expect("run pnctl");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        daemon_threads: String::new(),
    }
}

pub fn root() -> bool {
    pn_testkit::env::require_root()
}

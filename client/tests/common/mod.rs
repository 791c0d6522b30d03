//! Test support: the REAL `pn-device` binary in its own network namespace (it binds the fixed
//! 127.0.0.1:18840, so one namespace per daemon), a licence issued with the real `pn-licence`
//! tool, and helpers to run client code and `pnctl` inside the namespace.
//!
//! Finding the daemon: `CARGO_BIN_EXE_*` only exists for binaries of the package under test, so
//! the first use runs `cargo build -p pn-device --bins` (the same cargo that runs the tests,
//! same profile) and then takes `pn-device` and `pn-licence` from the target directory next to
//! this test executable (`target/debug/`). That keeps the daemon in step with the source without
//! a dev-dependency on pn-device (which would build only its library, not its binaries).
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use pn_testkit::netns::{NetNs, Veth};
use serde_json::{json, Value};

pub const PNCTL: &str = env!("CARGO_BIN_EXE_pnctl");
pub const URL: &str = "http://127.0.0.1:18840";

/// Directory holding the workspace's binaries (`target/<profile>/`).
fn bin_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    // target/<profile>/deps/<test>-<hash>
    exe.parent()
        .and_then(Path::parent)
        .expect("target dir")
        .to_path_buf()
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
}

/// Build the daemon binaries once per test process; return the path of `name`.
pub fn device_bin(name: &str) -> PathBuf {
    static BUILT: OnceLock<Result<(), String>> = OnceLock::new();
    let built = BUILT.get_or_init(|| {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut cmd = Command::new(cargo);
        cmd.current_dir(workspace_root())
            .args(["build", "-p", "pn-device", "--bins"])
            .stdin(Stdio::null());
        // Same profile as this test binary.
        if bin_dir().file_name().is_some_and(|n| n == "release") {
            cmd.arg("--release");
        }
        let out = cmd.output().map_err(|e| format!("cannot run cargo: {e}"))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(format!(
                "cargo build -p pn-device failed:\n{}",
                String::from_utf8_lossy(&out.stderr)
            ))
        }
    });
    if let Err(e) = built {
        panic!("{e}");
    }
    let p = bin_dir().join(name);
    assert!(p.exists(), "{} missing after the build", p.display());
    p
}

/// Poll `f` every 10 ms until it returns `Some`, or panic after `timeout`.
pub fn wait_for<T>(what: &str, timeout: Duration, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
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
    let xml = format!(
        r#"<PnDeviceConfiguration>
  <StationName>client-test</StationName><DeviceName>pn-device</DeviceName>
  <VendorID>0x0493</VendorID><DeviceID>0x0007</DeviceID>
  <Identification><OrderId>ORDER-CL</OrderId><SerialNumber>SN-CL-1</SerialNumber>
    <HardwareRevision>2</HardwareRevision><SoftwareRevision>V1.0.0</SoftwareRevision>
    <ProductName>client test device</ProductName></Identification>
  <SendClock>1</SendClock>
  <SlotLayout>
    <Module Slot="0" ModuleIdentNumber="1">
      <Submodule Subslot="1" SubmoduleIdentNumber="1"/>
      <Submodule Subslot="0x8000" SubmoduleIdentNumber="2"/>
      <Submodule Subslot="0x8001" SubmoduleIdentNumber="3"/>
    </Module>
    <Module Slot="1" ModuleIdentNumber="0x30">
      <Submodule Subslot="1" SubmoduleIdentNumber="1" InputLength="{in_len}" OutputLength="{out_len}"/>
    </Module>
  </SlotLayout>
</PnDeviceConfiguration>"#
    );
    std::fs::write(path, xml).expect("write config");
}

impl Daemon {
    pub fn start(opts: Opts) -> Daemon {
        let ns = NetNs::new("pncl").expect("namespace");
        let veth = Veth::new("pcv", &ns, &ns).expect("veth");
        let dir = tempfile::tempdir().expect("tempdir");
        let d = dir.path();
        let cfg = d.join("config.xml");
        write_config(&cfg, opts.in_len, opts.out_len);
        let mut settings = json!({
            "Runtime": { "AutoStart": false },
            "Paths": {
                "RuntimeConfig": cfg.display().to_string(),
                "PersistenceDir": d.join("persist").display().to_string(),
            },
            "Licence": { "CertificatePath": d.join("licence.json").display().to_string() },
        });
        if let Some(k) = &opts.api_key {
            settings["Api"] = json!({ "ApiKey": k });
        }
        if opts.sim {
            settings["Dev"] = json!({
                "SimulatedDataPlane": true,
                "SimControlSocket": d.join("sim.sock").display().to_string(),
            });
        }
        std::fs::write(d.join("settings.json"), settings.to_string()).expect("settings");
        if opts.licence {
            let out = Command::new(device_bin("pn-licence"))
                .current_dir(workspace_root())
                .args([
                    "issue",
                    "--key",
                    "device/testdata/dev-licence-private-key.txt",
                ])
                .args([
                    "--licensee",
                    "pn-client tests",
                    "--days",
                    "1",
                    "--any",
                    "--out",
                ])
                .arg(d.join("licence.json"))
                .output()
                .expect("run pn-licence");
            assert!(
                out.status.success(),
                "pn-licence: {}",
                String::from_utf8_lossy(&out.stderr)
            );
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
        let logf = std::fs::File::create(&self.log).expect("log");
        let mut cmd = self.ns.command(device_bin("pn-device"));
        cmd.arg("--settings")
            .arg(self.dir.path().join("settings.json"))
            .env_remove("PN_DEVICE_SETTINGS")
            .env_remove("RUST_LOG")
            .env(
                "VENDOR_PNET_NIC",
                self.opts.nic.clone().unwrap_or_else(|| self.veth.a.clone()),
            )
            .stdin(Stdio::null())
            .stdout(logf.try_clone().expect("log"))
            .stderr(logf);
        self.child = Some(cmd.spawn().expect("spawn pn-device"));
        // Readiness: GET /api/info answers (through our own client), with a deadline.
        let key = self.opts.api_key.clone();
        let r = self.run(move || {
            pn_client::blocking::BlockingClient::connect(URL, key)
                .and_then(|c| c.wait_ready(Duration::from_secs(20)))
        });
        if let Err(e) = r {
            panic!("daemon not ready: {e}\nlog:\n{}", self.log_text());
        }
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
        pnctl_in(&self.ns, args, envs)
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
            let _ = c.kill();
            let _ = c.wait();
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
    }
}

pub fn root() -> bool {
    pn_testkit::env::require_root()
}

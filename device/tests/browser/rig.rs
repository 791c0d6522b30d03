//! Shared rig of the operator-facing tests (least privilege, operator logs, dashboard in a
//! browser): the REAL pn-device binary in one network namespace, the REAL `pn-controller` CLI
//! in a second one, a veth pair between them. The daemon runs either as root or as an ordinary
//! system user with an exact set of capabilities (`setpriv`, util-linux), the way the systemd
//! unit in `deploy/pn-device.service` runs it.
//!
//! The controller binary is `target/debug/pn-controller` next to the daemon binary; `cargo test
//! --workspace` builds it, a single-crate run needs `cargo build -p pn-controller` first.
#![allow(dead_code)]

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use pn_testkit::daemon::{self as dk, DevLicence, DeviceXml};
use pn_testkit::netns::{NetNs, Veth};
use serde_json::{json, Value};

pub const DAEMON: &str = env!("CARGO_BIN_EXE_pn-device");
pub const CTL_IP: Ipv4Addr = Ipv4Addr::new(192, 168, 79, 1);
pub const DEV_IP: Ipv4Addr = Ipv4Addr::new(192, 168, 79, 2);
pub const STATION: &str = "op-dev";
/// The system user the unprivileged daemon runs as (created when missing).
pub const USER: &str = "pn-device-test";
/// The capabilities of `deploy/pn-device.service` (setpriv/capsh names).
pub const CAPS: &[&str] = &[
    "net_raw",
    "net_admin",
    "sys_nice",
    "ipc_lock",
    "net_bind_service",
];

static N: AtomicU32 = AtomicU32::new(0);

/// The `pn-controller` binary built next to the daemon.
pub fn controller_bin() -> PathBuf {
    let p = Path::new(DAEMON).with_file_name("pn-controller");
    assert!(
        p.exists(),
        "{} missing: build it with `cargo build -p pn-controller` (cargo test --workspace does)",
        p.display()
    );
    p
}

/// Poll `f` every 20 ms until it returns true; false after `timeout`.
pub fn poll(timeout: Duration, f: impl FnMut() -> bool) -> bool {
    pn_testkit::poll::until(timeout, f)
}

/// Uid and gid of the test user, created with `useradd --system` when missing.
pub fn ensure_user() -> (u32, u32) {
    let id = |flag: &str| -> Option<u32> {
        let o = Command::new("id").args([flag, USER]).output().ok()?;
        o.status
            .success()
            .then(|| String::from_utf8_lossy(&o.stdout).trim().parse().ok())
            .flatten()
    };
    if id("-u").is_none() {
        let o = Command::new("useradd")
            .args([
                "--system",
                "--no-create-home",
                "--shell",
                "/usr/sbin/nologin",
                USER,
            ])
            .output()
            .expect("run useradd");
        // A parallel test may have created it in between.
        assert!(
            o.status.success() || id("-u").is_some(),
            "useradd {USER}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    (id("-u").expect("uid"), id("-g").expect("gid"))
}

/// Device configuration: DAP + slot 1 with 4 bytes each way.
pub fn config_xml(nic: &str) -> String {
    DeviceXml::new(STATION)
        .ident("OP-1", "SN-OP-1", 1, "V1.0.0")
        .product(None)
        .nic(Some(nic))
        .ip(DEV_IP)
        .to_xml()
}

/// A licence signed with the committed development key, valid for an hour, unbound.
pub fn write_licence(path: &Path) {
    DevLicence::new("operator tests", "op-1").write(&dk::licence_tool_for(Path::new(DAEMON)), path);
}

/// How the daemon is launched.
#[derive(Clone, Debug)]
pub enum Launch {
    /// As root with every capability (the development way).
    Root,
    /// As the ordinary system user [`USER`] with exactly these capabilities (ambient,
    /// inheritable and bounding set), no others.
    User(Vec<&'static str>),
}

/// One HTTP answer: status code and JSON body (Null when not JSON).
pub struct Answer {
    pub status: u16,
    pub json: Value,
}

/// Daemon namespace + controller namespace + veth.
pub struct Lab {
    pub dev_ns: NetNs,
    pub ctl_ns: NetNs,
    pub veth: Veth,
    pub dir: PathBuf,
    pub xml: PathBuf,
    pub daemon: Option<Child>,
    pub controllers: Vec<Child>,
    /// Data-hold (and watchdog) factor of the controller's IOCRs. Default 250 = 1 s at 4 ms:
    /// these tests are about privileges, logs and the page, not timing (the controller-sim
    /// exchange tests hold 12 ms), and a loaded machine must not abort their ARs.
    pub data_hold_factor: u16,
    /// Start the daemon the way systemd connects it to the journal: `JOURNAL_STREAM` = the
    /// device and inode of its stderr (here the log file).
    pub journal_stream: bool,
}

impl Lab {
    /// Namespaces, veth and the daemon's files (licence, XML, settings = `settings` merged over
    /// the rig's paths). The daemon's own IP is NOT set here: the daemon puts its configured
    /// IP on the NIC itself (CAP_NET_ADMIN).
    pub fn new(tag: &str, settings: Value) -> Lab {
        let (ctl_ns, dev_ns, veth) =
            Veth::controller_device(tag, Some(&format!("{CTL_IP}/24")), None)
                .expect("namespaces and veth pair");
        let dir = std::env::temp_dir().join(format!(
            "pn-op-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("persist")).expect("temp dir");
        write_licence(&dir.join(dk::LICENCE_FILE));
        let xml = dir.join("device.xml");
        std::fs::write(&xml, config_xml(&veth.b)).expect("xml");
        let mut s = dk::base_settings(&dir);
        dk::merge(
            &mut s,
            json!({"Runtime": {"AutoStart": true}, "Timer": {"HighResolution": true}}),
        );
        dk::merge(&mut s, settings);
        dk::write_settings(&dir.join("settings.json"), &s);
        Lab {
            dev_ns,
            ctl_ns,
            veth,
            dir,
            xml,
            daemon: None,
            controllers: Vec::new(),
            data_hold_factor: 250,
            journal_stream: false,
        }
    }

    /// Start the daemon (`extra` arguments appended) and wait for its API.
    pub fn spawn(&mut self, launch: &Launch, extra: &[&str]) {
        let launcher = match launch {
            Launch::Root => {
                dk::Launcher::new(self.dev_ns.name(), DAEMON, self.dir.join("daemon.log"))
            }
            Launch::User(caps) => {
                let (uid, gid) = ensure_user();
                // The user owns its working directory (persistence, like StateDirectory=).
                chown_r(&self.dir, uid, gid);
                let list = caps
                    .iter()
                    .map(|c| format!("+{c}"))
                    .collect::<Vec<_>>()
                    .join(",");
                let mut words = vec![
                    "setpriv".to_string(),
                    format!("--reuid={uid}"),
                    format!("--regid={gid}"),
                    "--init-groups".into(),
                ];
                if caps.is_empty() {
                    words.extend(["--inh-caps=-all".into(), "--bounding-set=-all".into()]);
                } else {
                    words.extend([
                        format!("--inh-caps=-all,{list}"),
                        format!("--ambient-caps={list}"),
                        format!("--bounding-set=-all,{list}"),
                    ]);
                }
                words.push("--".into());
                // A copy of the binary inside the test directory: the checkout (e.g. under
                // /root) need not be reachable for the service user.
                let bin = self.dir.join("pn-device");
                if !bin.exists() {
                    std::fs::copy(DAEMON, &bin).expect("copy pn-device");
                }
                dk::Launcher::new(self.dev_ns.name(), bin, self.dir.join("daemon.log"))
                    .wrapper(words)
            }
        };
        let mut child = launcher
            .journal_stream(self.journal_stream)
            .settings(self.dir.join("settings.json"))
            .config(&self.xml)
            .args(extra)
            .spawn();
        dk::wait_api(
            self.dev_ns.name(),
            &mut child,
            &self.dir.join("daemon.log"),
            Duration::from_secs(20),
        );
        self.daemon = Some(child);
    }

    pub fn log(&self) -> String {
        dk::read_log(&self.dir.join("daemon.log"))
    }

    /// Wait until `f` holds, or panic with the daemon's log.
    pub fn wait(&self, what: &str, timeout: Duration, mut f: impl FnMut(&Lab) -> bool) {
        if !poll(timeout, || f(self)) {
            panic!("timed out waiting for {what}\ndaemon log:\n{}", self.log());
        }
    }

    /// One HTTP request to the daemon's 127.0.0.1:18840 inside its namespace.
    pub fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<Value>,
    ) -> Option<Answer> {
        let b = body.map(|b| b.to_string().into_bytes());
        dk::api_request(
            self.dev_ns.name(),
            method,
            path,
            headers,
            b.as_deref(),
            Duration::from_secs(5),
        )
        .ok()
        .map(|r| Answer {
            status: r.status,
            json: serde_json::from_slice(&r.body).unwrap_or(Value::Null),
        })
    }

    /// GET/POST without a key; the JSON body of a 200, else panic.
    pub fn api(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        match self.request(method, path, &[], body) {
            Some(a) if a.status == 200 => a.json,
            Some(a) => panic!(
                "{method} {path}: HTTP {} {}\n{}",
                a.status,
                a.json,
                self.log()
            ),
            None => panic!("{method} {path}: no answer\n{}", self.log()),
        }
    }

    pub fn status(&self) -> Value {
        self.api("GET", "/api/status", None)
    }

    /// Start `pn-controller connect-and-run` in the controller namespace for `secs` seconds
    /// (4 ms cycle: send clock 1 ms x reduction ratio 4, [`Lab::data_hold_factor`]). `release`: release
    /// the AR at the end, else just stop sending (the device's watchdog ends the AR).
    pub fn controller(&mut self, outputs_hex: &str, secs: f64, release: bool) {
        let out = std::fs::File::create(
            self.dir
                .join(format!("controller-{}.jsonl", self.controllers.len())),
        )
        .expect("controller log");
        let mut c = self.ctl_ns.command(controller_bin());
        c.args(["-i", &self.veth.a, "--json", "connect-and-run", "--config"])
            .arg(&self.xml)
            .args(["--ip", &DEV_IP.to_string()])
            .args(["--send-clock-ms", "1", "--reduction-ratio", "4"])
            .args(["--data-hold-factor", &self.data_hold_factor.to_string()])
            .args(["--rt-priority", "40"])
            .args(["--refresh-ms", "200", "--outputs", outputs_hex])
            .args(["--duration", &secs.to_string()]);
        if !release {
            c.arg("--no-release");
        }
        c.env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .stdout(out.try_clone().expect("out"))
            .stderr(out);
        self.controllers
            .push(c.spawn().expect("spawn pn-controller"));
    }

    /// Wait for the last controller to exit; its exit status and output.
    pub fn controller_done(&mut self, timeout: Duration) -> (bool, String) {
        let i = self.controllers.len() - 1;
        let path = self.dir.join(format!("controller-{i}.jsonl"));
        let c = &mut self.controllers[i];
        let end = Instant::now() + timeout;
        loop {
            if let Ok(Some(st)) = c.try_wait() {
                return (
                    st.success(),
                    std::fs::read_to_string(&path).unwrap_or_default(),
                );
            }
            if Instant::now() > end {
                let _ = c.kill();
                let _ = c.wait();
                panic!(
                    "controller did not finish\n{}",
                    std::fs::read_to_string(&path).unwrap_or_default()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// SIGTERM the daemon and wait for it (bounded); its exit success.
    pub fn stop_daemon(&mut self) -> bool {
        let Some(mut c) = self.daemon.take() else {
            return true;
        };
        // `ip netns exec` and `setpriv` exec the daemon, so the child's pid is the daemon's.
        dk::stop(&mut c, Duration::from_secs(8)).is_some_and(|st| st.success())
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        for c in &mut self.controllers {
            let _ = c.kill();
            let _ = c.wait();
        }
        self.stop_daemon();
        if std::env::var_os("PN_KEEP_TEST_DIR").is_none() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

fn chown_r(p: &Path, uid: u32, gid: u32) {
    // lchown: never follow links (the browser profile holds dangling lock links).
    std::os::unix::fs::lchown(p, Some(uid), Some(gid))
        .unwrap_or_else(|e| panic!("chown {}: {e}", p.display()));
    if std::fs::symlink_metadata(p).is_ok_and(|m| m.is_dir()) {
        for e in std::fs::read_dir(p).expect("read_dir").flatten() {
            chown_r(&e.path(), uid, gid);
        }
    }
}

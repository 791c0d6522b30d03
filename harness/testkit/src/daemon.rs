//! The real `pn-device` daemon in a test: where its binary is, its files (settings JSON,
//! configuration XML, a development licence), starting it inside a network namespace with its
//! output captured in a log file, waiting for its HTTP API with a deadline, talking to that API
//! and stopping it.
//!
//! The rigs of the crates' integration tests (`device/tests/common`, `device/tests/browser`,
//! `controller-sim/tests/common`, `client/tests/common`) build on these pieces; each keeps its
//! own handle type with the API its tests use. This crate does not depend on `pn-device`:
//!
//! * the binary is found by path ([`device_bin`]; `pn-device`'s own tests pass
//!   `CARGO_BIN_EXE_pn-device` instead);
//! * licences are issued by the shipped `pn-licence` tool (built with the daemon, next to it)
//!   with the committed development key ([`DevLicence::write`]), so the certificate format has
//!   one implementation, `pn_device_formats::licence`.
//!
//! Every daemon binds the fixed `127.0.0.1:18840` ([`API_PORT`]), hence one namespace each.

use std::ffi::{OsStr, OsString};
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use serde_json::{json, Value};

use crate::http::Response;

/// The daemon's HTTP port (on 127.0.0.1 inside its namespace).
pub const API_PORT: u16 = 18840;

/// File name of the licence certificate in a daemon's directory ([`base_settings`]).
pub const LICENCE_FILE: &str = "licence.json";

/// `127.0.0.1:18840`.
pub fn api_addr() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], API_PORT))
}

/// The workspace root (this crate lives in `harness/testkit`).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("workspace root above harness/testkit")
        .to_path_buf()
}

/// The directory of the workspace's binaries for the running test (`target/<profile>/`): the
/// test executable's directory, or its parent when that is `deps/` or `examples/`.
pub fn bin_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    let dir = exe.parent().expect("executable directory");
    match dir.file_name().and_then(|n| n.to_str()) {
        Some("deps" | "examples") => dir.parent().unwrap_or(dir).to_path_buf(),
        _ => dir.to_path_buf(),
    }
}

/// The `pn-device` binary: `$PN_DEVICE_BIN`, else `bin_dir()/pn-device` after
/// `cargo build -p pn-device --bins --features test-hooks` (once per test process, same
/// profile, a no-op when it is fresh), so the daemon under test is always built from the current source. Tests of the
/// `pn-device` package itself use `env!("CARGO_BIN_EXE_pn-device")` instead.
pub fn device_bin() -> PathBuf {
    if let Some(p) = std::env::var_os("PN_DEVICE_BIN") {
        return PathBuf::from(p);
    }
    static BUILT: OnceLock<Result<(), String>> = OnceLock::new();
    let built = BUILT.get_or_init(|| {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let mut cmd = Command::new(&cargo);
        cmd.current_dir(workspace_root())
            // With the test hooks (simulated data plane, fault injection), as ci/test.sh
            // builds it: without them this build would replace the binary the other tests use.
            .args([
                "build",
                "-p",
                "pn-device",
                "--bins",
                "--features",
                "test-hooks",
            ])
            .stdin(Stdio::null());
        if bin_dir().file_name().is_some_and(|n| n == "release") {
            cmd.arg("--release");
        }
        let out = cmd
            .output()
            .map_err(|e| format!("cannot run {}: {e}", cargo.to_string_lossy()))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(format!(
                "cargo build -p pn-device --bins --features test-hooks failed:\n{}",
                String::from_utf8_lossy(&out.stderr)
            ))
        }
    });
    if let Err(e) = built {
        panic!("{e}");
    }
    let p = bin_dir().join("pn-device");
    assert!(
        p.is_file(),
        "{} missing after the build (or set PN_DEVICE_BIN)",
        p.display()
    );
    p
}

/// The `pn-licence` tool next to `daemon` (the binary the test starts), or `$PN_LICENCE_BIN`.
pub fn licence_tool_for(daemon: &Path) -> PathBuf {
    match std::env::var_os("PN_LICENCE_BIN") {
        Some(p) => PathBuf::from(p),
        None => daemon.with_file_name("pn-licence"),
    }
}

/// The committed DEVELOPMENT-ONLY signing key (`device/testdata`), whose public half is the
/// daemon's embedded default trust anchor.
pub fn dev_key_path() -> PathBuf {
    workspace_root().join("device/testdata/dev-licence-private-key.txt")
}

/// The development key as hex (the key file's first line that is not a comment).
pub fn dev_key_hex() -> String {
    let p = dev_key_path();
    let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    text.lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with('#'))
        .unwrap_or_else(|| panic!("{} holds no key line", p.display()))
        .to_string()
}

/// What a development licence is bound to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Binding {
    /// Unbound (`{"any": true}`).
    Any,
    /// `/etc/machine-id` contents.
    MachineId(String),
    /// MAC of the PROFINET NIC.
    Mac(String),
}

/// A licence certificate signed with the development key by the real `pn-licence` tool.
#[derive(Clone, Debug)]
pub struct DevLicence {
    pub licensee: String,
    pub serial: String,
    /// Valid until now + this many seconds (negative: already expired); valid from now - 60 s.
    pub valid_for_s: i64,
    pub binding: Binding,
}

impl DevLicence {
    /// Unbound, valid for an hour.
    pub fn new(licensee: &str, serial: &str) -> DevLicence {
        DevLicence {
            licensee: licensee.into(),
            serial: serial.into(),
            valid_for_s: 3600,
            binding: Binding::Any,
        }
    }

    /// Issue the certificate into `out` with `tool` (`pn-licence`, see [`licence_tool_for`]).
    /// Panics with the tool's message when it fails.
    pub fn write(&self, tool: &Path, out: &Path) {
        let mut cmd = Command::new(tool);
        cmd.arg("issue")
            .arg("--key")
            .arg(dev_key_path())
            .args(["--licensee", &self.licensee, "--serial", &self.serial])
            .args(["--seconds", &self.valid_for_s.to_string()]);
        match &self.binding {
            Binding::Any => cmd.arg("--any"),
            Binding::MachineId(id) => cmd.args(["--machine-id", id]),
            Binding::Mac(mac) => cmd.args(["--mac", mac]),
        };
        let o = cmd
            .arg("--out")
            .arg(out)
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", tool.display()));
        assert!(
            o.status.success(),
            "{} issue failed: {}",
            tool.display(),
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

/// The settings every test daemon needs, rooted in its own directory `dir`: persistence in
/// `dir/persist`, the licence certificate at `dir/licence.json`. Merge a rig's own settings
/// over it with [`merge`].
pub fn base_settings(dir: &Path) -> Value {
    json!({
        "Paths": {"PersistenceDir": dir.join("persist").display().to_string()},
        "Licence": {"CertificatePath": dir.join(LICENCE_FILE).display().to_string()},
    })
}

/// Merge `b` into `a`: objects key by key (recursively), anything else replaces.
pub fn merge(a: &mut Value, b: Value) {
    match (a, b) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in b {
                merge(a.entry(k).or_insert(Value::Null), v);
            }
        }
        (a, b) => *a = b,
    }
}

/// The runtime configuration XML of a test device: the DAP (slot 0 with interface and port
/// submodules) and slot 1 with one IO submodule.
#[derive(Clone, Debug)]
pub struct DeviceXml {
    pub station: String,
    pub vendor_id: u16,
    pub device_id: u16,
    pub order_id: String,
    pub serial: String,
    pub hw_revision: u16,
    pub sw_revision: String,
    pub product_name: Option<String>,
    /// `<Network><InterfaceName>`.
    pub nic: Option<String>,
    /// `<IpAddress>` with mask 255.255.255.0 and no gateway.
    pub ip: Option<Ipv4Addr>,
    pub send_clock_ms: u16,
    /// `<MinUpdateTimeUs>` (absent: the daemon's default).
    pub min_update_time_us: Option<u32>,
    /// Slot 1 InputLength (controller -> device) and OutputLength (device -> controller).
    pub input_len: u16,
    pub output_len: u16,
}

impl DeviceXml {
    /// Station `station`, vendor 0x0493 device 0x0001, ORDER-1 / SN-42 / HW 3 / V1.2.3,
    /// "test product", no NIC, no IP, send clock 1 ms, 4 bytes each way.
    pub fn new(station: &str) -> DeviceXml {
        DeviceXml {
            station: station.into(),
            vendor_id: 0x0493,
            device_id: 0x0001,
            order_id: "ORDER-1".into(),
            serial: "SN-42".into(),
            hw_revision: 3,
            sw_revision: "V1.2.3".into(),
            product_name: Some("test product".into()),
            nic: None,
            ip: None,
            send_clock_ms: 1,
            min_update_time_us: None,
            input_len: 4,
            output_len: 4,
        }
    }

    /// Identification: order id, serial number, hardware and software revision, product name.
    pub fn ident(mut self, order_id: &str, serial: &str, hw: u16, sw: &str) -> Self {
        self.order_id = order_id.into();
        self.serial = serial.into();
        self.hw_revision = hw;
        self.sw_revision = sw.into();
        self
    }

    pub fn product(mut self, name: Option<&str>) -> Self {
        self.product_name = name.map(Into::into);
        self
    }

    pub fn nic(mut self, nic: Option<&str>) -> Self {
        self.nic = nic.map(Into::into);
        self
    }

    pub fn ip(mut self, ip: Ipv4Addr) -> Self {
        self.ip = Some(ip);
        self
    }

    pub fn send_clock_ms(mut self, ms: u16) -> Self {
        self.send_clock_ms = ms;
        self
    }

    /// The shortest update time the device accepts (`<MinUpdateTimeUs>`).
    pub fn min_update_time_us(mut self, us: Option<u32>) -> Self {
        self.min_update_time_us = us;
        self
    }

    pub fn io(mut self, input_len: u16, output_len: u16) -> Self {
        self.input_len = input_len;
        self.output_len = output_len;
        self
    }

    pub fn to_xml(&self) -> String {
        let product = self
            .product_name
            .as_ref()
            .map(|p| format!("\n    <ProductName>{p}</ProductName>"))
            .unwrap_or_default();
        let nic = self
            .nic
            .as_ref()
            .map(|n| format!("\n  <Network><InterfaceName>{n}</InterfaceName></Network>"))
            .unwrap_or_default();
        let ip = self
            .ip
            .map(|ip| {
                format!(
                    "\n  <IpAddress>{ip}</IpAddress><SubnetMask>255.255.255.0</SubnetMask>\
                     <Gateway>0.0.0.0</Gateway>"
                )
            })
            .unwrap_or_default();
        format!(
            r#"<PnDeviceConfiguration>
  <StationName>{station}</StationName><DeviceName>pn-device</DeviceName>
  <VendorID>{vendor:#06x}</VendorID><DeviceID>{device:#06x}</DeviceID>
  <Identification><OrderId>{order}</OrderId><SerialNumber>{serial}</SerialNumber>
    <HardwareRevision>{hw}</HardwareRevision><SoftwareRevision>{sw}</SoftwareRevision>{product}</Identification>{nic}{ip}
  <SendClock>{clock}</SendClock>{min_update}
  <SlotLayout>
    <Module Slot="0" ModuleIdentNumber="1">
      <Submodule Subslot="1" SubmoduleIdentNumber="1"/>
      <Submodule Subslot="0x8000" SubmoduleIdentNumber="2"/>
      <Submodule Subslot="0x8001" SubmoduleIdentNumber="3"/>
    </Module>
    <Module Slot="1" ModuleIdentNumber="0x30">
      <Submodule Subslot="1" SubmoduleIdentNumber="1" InputLength="{inl}" OutputLength="{outl}"/>
    </Module>
  </SlotLayout>
</PnDeviceConfiguration>"#,
            station = self.station,
            vendor = self.vendor_id,
            device = self.device_id,
            order = self.order_id,
            serial = self.serial,
            hw = self.hw_revision,
            sw = self.sw_revision,
            clock = self.send_clock_ms,
            min_update = self
                .min_update_time_us
                .map(|us| format!("<MinUpdateTimeUs>{us}</MinUpdateTimeUs>"))
                .unwrap_or_default(),
            inl = self.input_len,
            outl = self.output_len,
        )
    }

    /// Write [`DeviceXml::to_xml`] to `path`.
    pub fn write(&self, path: &Path) {
        std::fs::write(path, self.to_xml())
            .unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
    }
}

/// Write `settings` as JSON to `path`.
pub fn write_settings(path: &Path, settings: &Value) {
    std::fs::write(path, settings.to_string())
        .unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
}

/// How to start one daemon process: `ip netns exec NS [wrapper...] PROGRAM [args...]`, stdin
/// closed, stdout and stderr into a log file, and an environment without the caller's
/// `VENDOR_PNET_NIC`, `PN_DEVICE_SETTINGS`, `RUST_LOG` and `JOURNAL_STREAM`.
#[derive(Clone, Debug)]
pub struct Launcher {
    ns: String,
    wrapper: Vec<OsString>,
    program: PathBuf,
    args: Vec<OsString>,
    envs: Vec<(OsString, OsString)>,
    log: PathBuf,
    journal_stream: bool,
}

impl Launcher {
    /// Run `program` in the namespace named `ns`, output into `log` (created or truncated).
    pub fn new(ns: &str, program: impl AsRef<Path>, log: impl AsRef<Path>) -> Launcher {
        Launcher {
            ns: ns.into(),
            wrapper: Vec::new(),
            program: program.as_ref().to_path_buf(),
            args: Vec::new(),
            envs: Vec::new(),
            log: log.as_ref().to_path_buf(),
            journal_stream: false,
        }
    }

    /// Command words placed before the program (e.g. `setpriv ... --`).
    pub fn wrapper<S: AsRef<OsStr>>(mut self, words: impl IntoIterator<Item = S>) -> Self {
        self.wrapper = words.into_iter().map(|w| w.as_ref().into()).collect();
        self
    }

    pub fn arg(mut self, a: impl AsRef<OsStr>) -> Self {
        self.args.push(a.as_ref().into());
        self
    }

    pub fn args<S: AsRef<OsStr>>(mut self, args: impl IntoIterator<Item = S>) -> Self {
        self.args
            .extend(args.into_iter().map(|a| a.as_ref().into()));
        self
    }

    /// `--settings PATH`.
    pub fn settings(self, path: impl AsRef<Path>) -> Self {
        self.arg("--settings").arg(path.as_ref())
    }

    /// `--config PATH`.
    pub fn config(self, path: impl AsRef<Path>) -> Self {
        self.arg("--config").arg(path.as_ref())
    }

    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Self {
        self.envs.push((key.as_ref().into(), value.as_ref().into()));
        self
    }

    /// `VENDOR_PNET_NIC`: the NIC the daemon drives.
    pub fn nic(self, nic: &str) -> Self {
        self.env("VENDOR_PNET_NIC", nic)
    }

    /// Connect stderr the way systemd connects it to the journal: `JOURNAL_STREAM` = device
    /// and inode of the log file.
    pub fn journal_stream(mut self, on: bool) -> Self {
        self.journal_stream = on;
        self
    }

    /// Start the process (its pid is the daemon's: `ip netns exec` and `setpriv` exec).
    pub fn spawn(&self) -> Child {
        let log = std::fs::File::create(&self.log)
            .unwrap_or_else(|e| panic!("log file {}: {e}", self.log.display()));
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &self.ns])
            .args(&self.wrapper)
            .arg(&self.program)
            .args(&self.args);
        for k in [
            "VENDOR_PNET_NIC",
            "PN_DEVICE_SETTINGS",
            "RUST_LOG",
            "JOURNAL_STREAM",
        ] {
            cmd.env_remove(k);
        }
        cmd.envs(self.envs.iter().map(|(k, v)| (k, v)));
        if self.journal_stream {
            use std::os::unix::fs::MetadataExt;
            let m = log.metadata().expect("log file metadata");
            cmd.env("JOURNAL_STREAM", format!("{}:{}", m.dev(), m.ino()));
        }
        cmd.stdin(Stdio::null())
            .stdout(log.try_clone().expect("log file handle"))
            .stderr(log);
        cmd.spawn()
            .unwrap_or_else(|e| panic!("spawn {}: {e}", self.program.display()))
    }
}

/// The daemon's log (empty when unreadable).
pub fn read_log(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// The CPUs thread `comm` of process `pid` may run on (`Cpus_allowed_list` of its status, e.g.
/// "0" or "1-3"); `None` when the process has no thread of that name.
pub fn thread_cpus(pid: u32, comm: &str) -> Option<String> {
    let dir = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    dir.flatten().find_map(|e| {
        let p = e.path();
        let name = std::fs::read_to_string(p.join("comm")).ok()?;
        if name.trim() != comm {
            return None;
        }
        let st = std::fs::read_to_string(p.join("status")).ok()?;
        let l = st.lines().find(|l| l.starts_with("Cpus_allowed_list:"))?;
        Some(l["Cpus_allowed_list:".len()..].trim().to_string())
    })
}

/// Where each thread of process `pid` is, for a failure message when the process stopped
/// answering: per thread its name, state, scheduling policy and priority, last CPU, CPU time,
/// the kernel function it sleeps in and its kernel stack (as root). Empty when `pid` is gone.
pub fn thread_report(pid: u32) -> String {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return String::new();
    };
    let mut tids: Vec<u32> = tasks
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .collect();
    tids.sort_unstable();
    let mut out = String::new();
    for tid in tids {
        let dir = format!("/proc/{pid}/task/{tid}");
        let read = |f: &str| std::fs::read_to_string(format!("{dir}/{f}")).unwrap_or_default();
        let stat = read("stat");
        // Fields after the parenthesised name: state is the 3rd field, utime/stime the 14th and
        // 15th, processor the 39th, rt_priority the 40th, policy the 41st.
        let rest: Vec<&str> = stat
            .rsplit_once(')')
            .map(|(_, r)| r.split_whitespace().collect())
            .unwrap_or_default();
        let field = |n: usize| rest.get(n - 3).copied().unwrap_or("?");
        out.push_str(&format!(
            "  {tid} {:<16} state {} policy {} rt_prio {} cpu {} utime+stime {} ticks, wchan {}\n",
            read("comm").trim(),
            field(3),
            field(41),
            field(40),
            field(39),
            field(14).parse::<u64>().unwrap_or(0) + field(15).parse::<u64>().unwrap_or(0),
            read("wchan").trim()
        ));
        for line in read("stack").lines().take(8) {
            out.push_str(&format!("      {line}\n"));
        }
    }
    out
}

/// One HTTP request to the daemon's API inside the namespace named `ns` (the testkit's own
/// HTTP client, see [`crate::http`]).
pub fn api_request(
    ns: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&[u8]>,
    timeout: Duration,
) -> std::io::Result<Response> {
    let (m, p) = (method.to_string(), path.to_string());
    let h: Vec<(String, String)> = headers
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let b = body.map(<[u8]>::to_vec);
    crate::netns::enter_named(ns, move || {
        let hs: Vec<(&str, &str)> = h.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        crate::http::request(api_addr(), &m, &p, &hs, b.as_deref(), timeout)
    })
    .map_err(std::io::Error::other)?
}

/// The JSON body of a 200 answer (5 s timeout); `None` for anything else.
pub fn api_json(ns: &str, method: &str, path: &str, body: Option<&Value>) -> Option<Value> {
    api_json_result(ns, method, path, body).ok()
}

/// As [`api_json`], with what went wrong in words: the HTTP status and body of an answer that
/// is not 200, or the transport error (a timeout says how long it waited).
pub fn api_json_result(
    ns: &str,
    method: &str,
    path: &str,
    body: Option<&Value>,
) -> Result<Value, String> {
    let b = body.map(|b| b.to_string().into_bytes());
    let timeout = Duration::from_secs(5);
    let r = api_request(ns, method, path, &[], b.as_deref(), timeout)
        .map_err(|e| format!("{method} {path}: no answer within {timeout:?}: {e}"))?;
    if r.status != 200 {
        return Err(format!(
            "{method} {path}: HTTP {} {}",
            r.status,
            String::from_utf8_lossy(&r.body)
        ));
    }
    serde_json::from_slice(&r.body).map_err(|e| format!("{method} {path}: body not JSON: {e}"))
}

/// Wait until the daemon `child` in namespace `ns` answers `GET /api/info` (with any status).
/// Panics with its log when it exits first or `timeout` passes.
pub fn wait_api(ns: &str, child: &mut Child, log: &Path, timeout: Duration) {
    let up = crate::poll::until(timeout, || {
        if let Ok(Some(st)) = child.try_wait() {
            panic!("pn-device exited early ({st}); log:\n{}", read_log(log));
        }
        api_request(ns, "GET", "/api/info", &[], None, Duration::from_secs(2)).is_ok()
    });
    assert!(
        up,
        "pn-device API did not answer within {timeout:?}; log:\n{}",
        read_log(log)
    );
}

/// SIGTERM, then wait up to `grace` for the exit; SIGKILL after that. The exit status when the
/// process ended by itself within `grace`, else `None`.
pub fn stop(child: &mut Child, grace: Duration) -> Option<ExitStatus> {
    if let Ok(Some(st)) = child.try_wait() {
        return Some(st);
    }
    // SAFETY: a signal to our own (unreaped, so still valid) child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let st = crate::poll::some(grace, || child.try_wait().ok().flatten());
    if st.is_none() {
        kill(child);
    }
    st
}

/// SIGKILL and reap.
pub fn kill(child: &mut Child) {
    let _ = child.kill();
    let _ = child.wait();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_report_shows_each_thread_and_the_running_one() {
        let (release, wait) = std::sync::mpsc::channel::<()>();
        let named = std::thread::Builder::new()
            .name("tr-parked".into())
            .spawn(move || {
                let _ = wait.recv();
            })
            .unwrap();
        // The parked thread shows up by name once it runs (its name is set by the thread).
        let report = crate::poll::some(Duration::from_secs(5), || {
            let r = thread_report(std::process::id());
            r.contains("tr-parked").then_some(r)
        })
        .expect("the named thread in the report");
        // The reporting thread reads its own stat while running.
        assert!(report.contains("state R"), "{report}");
        assert!(report.contains("policy 0"), "{report}");
        drop(release);
        named.join().unwrap();
        assert_eq!(thread_report(u32::MAX), "");
    }

    #[test]
    fn merge_replaces_leaves_and_keeps_siblings() {
        let mut a = base_settings(Path::new("/d"));
        merge(
            &mut a,
            json!({"Licence": {"RecheckIntervalSeconds": 1}, "Runtime": {"AutoStart": true}}),
        );
        assert_eq!(a["Licence"]["CertificatePath"], "/d/licence.json");
        assert_eq!(a["Licence"]["RecheckIntervalSeconds"], 1);
        assert_eq!(a["Paths"]["PersistenceDir"], "/d/persist");
        assert_eq!(a["Runtime"]["AutoStart"], true);
        merge(&mut a, json!({"Paths": {"PersistenceDir": "/p"}}));
        assert_eq!(a["Paths"]["PersistenceDir"], "/p");
    }

    #[test]
    fn device_xml_carries_every_field() {
        let x = DeviceXml::new("st-1")
            .nic(Some("veth0"))
            .ip(Ipv4Addr::new(10, 0, 0, 2))
            .send_clock_ms(4)
            .io(8, 16)
            .to_xml();
        for want in [
            "<StationName>st-1</StationName>",
            "<VendorID>0x0493</VendorID><DeviceID>0x0001</DeviceID>",
            "<ProductName>test product</ProductName>",
            "<Network><InterfaceName>veth0</InterfaceName></Network>",
            "<IpAddress>10.0.0.2</IpAddress>",
            "<SendClock>4</SendClock>",
            r#"InputLength="8" OutputLength="16""#,
        ] {
            assert!(x.contains(want), "{want} not in\n{x}");
        }
        let bare = DeviceXml::new("st-2").product(None).to_xml();
        assert!(!bare.contains("ProductName") && !bare.contains("Network"));
        assert!(!bare.contains("IpAddress"), "{bare}");
    }

    #[test]
    fn dev_key_is_a_32_byte_hex_seed() {
        let k = dev_key_hex();
        assert_eq!(k.len(), 64, "{k}");
        assert!(k.chars().all(|c| c.is_ascii_hexdigit()), "{k}");
    }
}

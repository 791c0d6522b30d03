//! Interop: **profinet-py** (PyPI `profinet-py` 0.6.6, module `profinet`), an independent
//! PROFINET IO controller written in Python that shares no code with this workspace, against
//! the real `pn-device` daemon.
//!
//! Rig: two network namespaces joined by a veth pair; the daemon binary (licence, settings,
//! configuration XML through `pn_testkit::daemon`) drives its end, the driver
//! `tests/interop/profinet_py_driver.py` runs profinet-py on the other end (`ip netns exec`)
//! and prints one JSON object with what it saw. The device starts *without* an IP address:
//! profinet-py finds it with DCP Identify, sets the IP with DCP Set, reads I&M0 (DeviceAccess
//! AR), connects (IOCARSingle, DAP + slot 1 with 4 bytes each way), runs the cyclic exchange
//! while writing a changing output pattern (`a5` + 24-bit counter), and releases.
//!
//! While the driver runs, the test reads the device's HTTP API: the IP profinet-py set, the
//! state DataExchange, profinet-py's outputs in `inputHex`, and it writes two input values
//! (`POST /api/io`) that profinet-py must receive in order. After the driver ends: I&M0 values
//! equal the configured ones, no data-hold watchdog trip (`watchdogTrips`), no ERR-RTA seen by
//! profinet-py, the Release answered OK and the device reports the AR released.
//!
//! Cases (profinet-py's defaults: SendClockFactor 32 (1 ms), ReductionRatio 32, i.e. a 32 ms
//! cycle, WatchdogFactor 6, DataHoldFactor 6; RT frames start before PrmEnd):
//! * (a) all of profinet-py's defaults (32 ms, data-hold time 192 ms);
//! * (b) 4 ms with profinet-py's default DataHoldFactor 6 (24 ms);
//! * (c) 1 ms with DataHoldFactor [`DHF_1MS`], see there for why.
//!
//! The three cases run one after the other (a lock): (c) measures profinet-py's own timing, and
//! three Python controllers plus three daemons on a 2-core machine would measure each other.
//! Every case prints the driver's send-gap statistics (`txGaps`) to stderr.
//!
//! Needs root (namespaces, raw sockets) and `python3` with the `profinet` module; under
//! `CI=true` a missing one fails (`pn_testkit::env`).

use std::io::Read;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use pn_testkit::daemon::{self as dk, DevLicence, DeviceXml, Launcher};
use pn_testkit::netns::{NetNs, Veth};
use serde_json::{json, Value};

/// DataHoldFactor (and WatchdogFactor) of case (c), 1 ms cycle: 512, i.e. a 512 ms data-hold
/// time (128 until session 8, see the end of this comment).
///
/// Why so large: profinet-py sends from a Python thread (`CyclicController._tx_loop`,
/// `time.sleep` to the next deadline). Its send gaps at 1 ms, measured by the driver (the time
/// of every `_tx_cycle`, `txGaps` in its output) in this rig on the 2-core machine, 13 runs of
/// 8 s: median 1.0 ms, p99 1.3-2.4 ms, p99.9 2-6 ms, a few gaps of 5-18 ms per run (GIL, the
/// scheduler), and in every run, about 3 s after ApplicationReady, one gap of 16-85 ms (85 ms
/// with two busy loops beside it). That one is CPython's full (generation 2) garbage
/// collection: profinet-py and its `construct` dependency leave ~23 000 objects from their
/// import, the per-frame code's allocations trigger the collection, and it holds the GIL, so
/// the TX thread cannot send (the driver's `gc.callbacks` record times each collection: the
/// generation 2 one took 16-79 ms in exactly those runs; with `gc.freeze()` after the imports
/// it took 1-2 ms and the worst gap fell to 5-13 ms, but that is not profinet-py's own timing).
/// With profinet-py's DataHoldFactor 6 (6 ms) the device's watchdog trips within seconds
/// (ERR-RTA CF 81 FD 05), rightly; with 32 (32 ms) it still trips at the collection. 128 ms
/// covered the worst gap measured then (85 ms) with a 1.5x margin; in session 8's CI runs, on a
/// busier machine, that collection took 137-226 ms and the sender's gap reached 254 ms, and
/// the device (rightly) ended the AR after its 128 ms: 512 ms covers that twice over. At 4 ms (case b) the collection
/// comes later (about 12 s after ApplicationReady), after this test's cyclic phase, but any
/// stall longer than 24 ms there trips the device (seen once in 7 runs: a 61 ms gap).
const DHF_1MS: u32 = 512;

/// Seconds of cyclic exchange per case.
const CYCLIC_S: f64 = 8.0;

const STATION: &str = "pypn-dev";
const DEV_IP: Ipv4Addr = Ipv4Addr::new(192, 168, 83, 2);
const CTL_IP: Ipv4Addr = Ipv4Addr::new(192, 168, 83, 1);

/// The configured identification (I&M0 must return exactly these).
const ORDER_ID: &str = "PY-INTEROP-7";
const SERIAL: &str = "SN-PY-0042";
const HW_REV: u16 = 7;
const SW_REV: &str = "V3.1.4";
const VENDOR_ID: u16 = 0x0493;
const DEVICE_ID: u16 = 0x0001;

/// Two values written on the device (its Q area, controller inputs) while profinet-py runs.
const IN_1: &str = "c0ffee01";
const IN_2: &str = "0badcafe";

static SERIAL_CASES: Mutex<()> = Mutex::new(());
static N: AtomicU32 = AtomicU32::new(0);

fn driver_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop/profinet_py_driver.py")
}

fn python() -> String {
    std::env::var("PN_PYTHON").unwrap_or_else(|_| "python3".into())
}

/// `Some(version)` when `python3` imports `profinet`.
fn profinet_py_version() -> Option<String> {
    let out = Command::new(python())
        .args([
            "-c",
            "import profinet, importlib.metadata as m; print(m.version('profinet-py'))",
        ])
        .stdin(Stdio::null())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Root and profinet-py; `false`: skip (never under CI, where a missing one panics).
fn prerequisites() -> bool {
    if !pn_testkit::env::require_root() {
        return false;
    }
    let v = profinet_py_version();
    if !pn_testkit::env::require(
        v.is_some(),
        "python3 with the profinet-py module (pip install profinet-py==0.6.6; or set PN_PYTHON)",
    ) {
        return false;
    }
    eprintln!("profinet-py {}", v.unwrap_or_default());
    true
}

/// The daemon in one namespace, profinet-py's side in the other.
struct Rig {
    dev_ns: NetNs,
    ctl_ns: NetNs,
    veth: Veth,
    child: Child,
    dir: PathBuf,
}

impl Rig {
    fn start(tag: &str) -> Rig {
        let (ctl_ns, dev_ns, veth) =
            Veth::controller_device(tag, Some(&format!("{CTL_IP}/24")), None)
                .expect("namespaces and veth pair");
        let dir = std::env::temp_dir().join(format!(
            "pn-interop-py-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        let bin = dk::device_bin();
        DevLicence::new("profinet-py interop test", "pyi-1")
            .write(&dk::licence_tool_for(&bin), &dir.join(dk::LICENCE_FILE));
        // No IP in the configuration: profinet-py assigns it over DCP.
        DeviceXml::new(STATION)
            .ident(ORDER_ID, SERIAL, HW_REV, SW_REV)
            .nic(Some(&veth.b))
            .send_clock_ms(1)
            .io(4, 4)
            .write(&dir.join("device.xml"));
        let mut settings = dk::base_settings(&dir);
        dk::merge(
            &mut settings,
            json!({"Runtime": {"AutoStart": false}, "Timer": {"HighResolution": true}}),
        );
        dk::write_settings(&dir.join("settings.json"), &settings);
        let mut child = Launcher::new(dev_ns.name(), &bin, dir.join("daemon.log"))
            .settings(dir.join("settings.json"))
            .config(dir.join("device.xml"))
            .nic(&veth.b)
            .spawn();
        dk::wait_api(
            dev_ns.name(),
            &mut child,
            &dir.join("daemon.log"),
            Duration::from_secs(15),
        );
        let rig = Rig {
            dev_ns,
            ctl_ns,
            veth,
            child,
            dir,
        };
        let r = rig.try_http("POST", "/api/start", None);
        assert!(
            r.as_ref().is_some_and(|r| r["ok"] == true),
            "POST /api/start: {r:?}\n{}",
            rig.log()
        );
        assert!(
            pn_testkit::poll::until(Duration::from_secs(15), || rig.status()["state"]
                == "Initialized"),
            "device not Initialized: {}\n{}",
            rig.status(),
            rig.log()
        );
        rig
    }

    fn log(&self) -> String {
        dk::read_log(&self.dir.join("daemon.log"))
    }

    fn try_http(&self, method: &str, path: &str, body: Option<Value>) -> Option<Value> {
        dk::api_json(self.dev_ns.name(), method, path, body.as_ref())
    }

    fn get(&self, path: &str) -> Value {
        self.try_http("GET", path, None).unwrap_or(Value::Null)
    }

    fn status(&self) -> Value {
        self.get("/api/status")
    }

    fn device_mac(&self) -> String {
        let out = self
            .dev_ns
            .exec_ok(&["ip", "-j", "link", "show", "dev", &self.veth.b])
            .expect("ip link");
        let v: Value = serde_json::from_str(&out).expect("ip -j output");
        v[0]["address"].as_str().unwrap_or_default().to_string()
    }
}

impl Drop for Rig {
    fn drop(&mut self) {
        dk::stop(&mut self.child, Duration::from_secs(5));
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The driver process with its output collected by reader threads (its JSON may be larger than
/// a pipe buffer; the test polls the device meanwhile).
struct Driver {
    child: Child,
    out: Option<JoinHandle<String>>,
    err: Option<JoinHandle<String>>,
}

impl Driver {
    fn spawn(rig: &Rig, extra: &[String]) -> Driver {
        let mut cmd = rig.ctl_ns.command(python());
        cmd.arg(driver_path())
            .args(["--iface", &rig.veth.a, "--station", STATION])
            .args(["--ip", &DEV_IP.to_string(), "--mask", "255.255.255.0"])
            .args(["--duration", &CYCLIC_S.to_string()])
            .args(["--input-len", "4", "--output-len", "4"])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("spawn the profinet-py driver");
        let mut so = child.stdout.take().unwrap();
        let mut se = child.stderr.take().unwrap();
        let out = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = so.read_to_string(&mut s);
            s
        });
        let err = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = se.read_to_string(&mut s);
            s
        });
        Driver {
            child,
            out: Some(out),
            err: Some(err),
        }
    }

    fn exited(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(Some(_)))
    }

    /// Wait for the exit (deadline), then (exit code, stdout, stderr).
    fn finish(&mut self, timeout: Duration) -> (Option<i32>, String, String) {
        let st = pn_testkit::poll::some(timeout, || self.child.try_wait().ok().flatten());
        if st.is_none() {
            dk::kill(&mut self.child);
        }
        let out = self.out.take().map(|h| h.join().unwrap_or_default());
        let err = self.err.take().map(|h| h.join().unwrap_or_default());
        (
            st.and_then(|s| s.code()),
            out.unwrap_or_default(),
            err.unwrap_or_default(),
        )
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        if !self.exited() {
            dk::kill(&mut self.child);
        }
    }
}

struct Case {
    name: &'static str,
    tag: &'static str,
    /// Driver options beyond the common ones (none: profinet-py's defaults).
    args: Vec<String>,
}

/// What went wrong in one case, and the evidence.
struct Report<'a> {
    case: &'a str,
    rig: &'a Rig,
    failures: Vec<String>,
}

impl Report<'_> {
    fn check(&mut self, ok: bool, what: impl FnOnce() -> String) {
        if !ok {
            self.failures.push(what());
        }
    }

    /// The evidence: the device's counters, status and log, and the driver's output.
    fn evidence(&self, driver_json: &str, driver_err: &str) -> String {
        let diag = self.rig.get("/api/diag");
        let counters: Value = [
            "state",
            "message",
            "watchdogTrips",
            "rxRtFrames",
            "txRtFrames",
            "invalidFrames",
            "droppedFrames",
            "stackMissedTicks",
            "stackMaxJitterUs",
        ]
        .iter()
        .map(|k| (k.to_string(), diag[*k].clone()))
        .collect::<serde_json::Map<_, _>>()
        .into();
        let pretty = serde_json::from_str::<Value>(driver_json)
            .map(|v| serde_json::to_string_pretty(&v).unwrap_or_default())
            .unwrap_or_else(|_| driver_json.to_string());
        format!(
            "device /api/diag: {counters}\ndevice /api/status: {}\ndevice log:\n{}\n\
             driver stdout:\n{pretty}\ndriver stderr:\n{driver_err}",
            self.rig.status(),
            self.rig.log()
        )
    }

    fn fail_now(&self, what: &str, driver: &mut Driver) -> ! {
        let (code, out, err) = driver.finish(Duration::from_secs(30));
        panic!(
            "case {}: {what}\nearlier failures: {:#?}\ndriver exit {code:?}\n{}",
            self.case,
            self.failures,
            self.evidence(&out, &err)
        );
    }
}

fn hex_counter(hex: &str) -> Option<u32> {
    // profinet-py's pattern: a5 + 24-bit big-endian counter.
    (hex.len() == 8 && hex.starts_with("a5"))
        .then(|| u32::from_str_radix(&hex[2..], 16).ok())
        .flatten()
}

fn run_case(case: Case) {
    if !prerequisites() {
        return;
    }
    let _serial = SERIAL_CASES.lock().unwrap_or_else(|e| e.into_inner());
    for side in ["c", "d"] {
        pn_testkit::netns::remove_stale(&format!("{}{side}", case.tag));
    }
    let rig = Rig::start(case.tag);
    let mac = rig.device_mac();
    let mut rep = Report {
        case: case.name,
        rig: &rig,
        failures: Vec::new(),
    };
    let t0 = Instant::now();
    let mut drv = Driver::spawn(&rig, &case.args);

    // 1. profinet-py identifies the device, sets its IP, reads I&M0, connects: the device
    //    reaches DataExchange (identify ~0.2 s, DCP Set IP 2 s as profinet-py waits after it).
    let up = pn_testkit::poll::until(Duration::from_secs(20), || {
        let s = rig.status();
        s["state"] == "DataExchange" && s["connected"] == true || drv.exited()
    });
    if !up || drv.exited() {
        rep.fail_now("the device did not reach DataExchange", &mut drv);
    }
    let t_dx = t0.elapsed();

    // 2. The IP profinet-py set over DCP, as the device reports it.
    let st = rig.status();
    rep.check(
        st["masterAssignedIp"] == DEV_IP.to_string() && st["dcpIpApplied"] == true,
        || format!("GET /api/status: IP not the one set over DCP ({DEV_IP}): {st}"),
    );
    let diag = rig.get("/api/diag");
    rep.check(diag["l2"]["ip"] == DEV_IP.to_string(), || {
        format!("GET /api/diag l2.ip: {}", diag["l2"])
    });

    // 3. profinet-py's outputs arrive in the device's inputHex: the pattern, GOOD, advancing.
    let mut counters: Vec<u32> = Vec::new();
    let mut last_io = Value::Null;
    let advancing = pn_testkit::poll::until(Duration::from_secs(5), || {
        let io = rig.get("/api/io");
        if let Some(c) = io["inputHex"].as_str().and_then(hex_counter) {
            if io["inputValid"] == true && io["inputIopsHex"] == "80" && counters.last() != Some(&c)
            {
                counters.push(c);
            }
        }
        last_io = io;
        counters.len() >= 3
    });
    rep.check(advancing, || {
        format!("profinet-py's output pattern (a5 + counter, IOPS GOOD) did not advance in inputHex: counters {counters:?}, last GET /api/io {last_io}")
    });
    rep.check(counters.windows(2).all(|w| w[0] < w[1]), || {
        format!("inputHex counter went backwards: {counters:?}")
    });

    // 4. Inputs written on the device reach profinet-py (checked in its record at the end).
    for v in [IN_1, IN_2] {
        let r = rig.try_http("POST", "/api/io", Some(json!({"offset": 0, "data": v})));
        rep.check(
            r.as_ref()
                .is_some_and(|r| r["ok"] == true && r["delivered"] == true),
            || format!("POST /api/io {v}: not delivered: {r:?}"),
        );
        // Delivered = it went out in a frame; hold it for a few more of the device's frames so
        // that one lost frame cannot hide it from profinet-py before the next value.
        let base = rig.get("/api/diag")["txRtFrames"].as_i64().unwrap_or(0);
        let sent = pn_testkit::poll::until(Duration::from_secs(5), || {
            rig.get("/api/io")["outputHex"] == v
                && rig.get("/api/diag")["txRtFrames"].as_i64().unwrap_or(0) >= base + 5
        });
        rep.check(sent, || {
            format!(
                "the device did not send {v} in 5 more frames: {}",
                rig.get("/api/io")
            )
        });
    }

    // 5. No watchdog trip and DataExchange for the whole cyclic phase (until the driver ends).
    let mut worst = Value::Null;
    let mut trips = 0;
    let deadline = t0 + Duration::from_secs_f64(CYCLIC_S + 40.0);
    while !drv.exited() && Instant::now() < deadline {
        let d = rig.get("/api/diag");
        let t = d["watchdogTrips"].as_i64().unwrap_or(0);
        if t != 0 && trips == 0 {
            trips = t;
            worst = json!({"atS": t0.elapsed().as_secs_f64(), "diagMessage": d["message"], "status": rig.status()["statusMessage"]});
        }
        std::thread::sleep(pn_testkit::poll::INTERVAL * 5);
    }
    let (code, out, err) = drv.finish(Duration::from_secs(30));
    rep.check(trips == 0, || {
        format!("device data-hold watchdog tripped during the exchange: {worst}")
    });
    let r: Value = match serde_json::from_str(out.trim()) {
        Ok(v) => v,
        Err(e) => {
            rep.failures
                .push(format!("driver output is not JSON ({e})"));
            Value::Null
        }
    };
    eprintln!(
        "case {}: DataExchange after {:.1} s; options {}; txGaps {}; gc {}; appReadyDoneMs {}; frames sent {} received {}; firstFrameAfterAppReadyMs {}",
        case.name,
        t_dx.as_secs_f64(),
        r["options"],
        r["cyclic"]["txGaps"],
        r["gc"],
        r["cyclic"]["appReadyDoneMs"],
        r["cyclic"]["framesSent"],
        r["cyclic"]["framesReceived"],
        r["cyclic"]["firstFrameAfterAppReadyMs"],
    );

    // 6. What profinet-py saw.
    rep.check(code == Some(0) && r["ok"] == true, || {
        format!("driver failed (exit {code:?}): errors {}", r["errors"])
    });
    let id = &r["identify"];
    rep.check(
        id["name"] == STATION
            && id["mac"]
                .as_str()
                .is_some_and(|m| m.eq_ignore_ascii_case(&mac))
            && id["vendorId"] == VENDOR_ID
            && id["deviceId"] == DEVICE_ID
            && id["deviceType"] == "pn-device"
            && id["deviceRoles"]
                .as_array()
                .is_some_and(|a| a.contains(&json!("IO-Device"))),
        || format!("DCP Identify result (device MAC {mac}): {id}"),
    );
    let after = &r["identifyAfterSet"];
    rep.check(
        after["ip"] == DEV_IP.to_string() && after["netmask"] == "255.255.255.0",
        || format!("DCP Identify after Set IP: {after}"),
    );
    rep.check(r["setIp"]["ok"] == true, || {
        format!("DCP Set IP: {}", r["setIp"])
    });
    let im0 = &r["im0"];
    rep.check(
        im0["ok"] == true
            && im0["vendorId"] == VENDOR_ID
            && im0["orderId"] == ORDER_ID
            && im0["serialNumber"] == SERIAL
            && im0["hardwareRevision"] == HW_REV
            && im0["softwareRevision"] == SW_REV
            && im0["orderIdRaw"].as_str().map(str::len) == Some(20)
            && im0["serialNumberRaw"].as_str().map(str::len) == Some(16)
            && im0["imVersion"] == "1.1",
        || format!("I&M0 differs from the configuration ({ORDER_ID}/{SERIAL}/{HW_REV}/{SW_REV}): {im0}"),
    );
    rep.check(
        r["connect"]["ok"] == true && r["connect"]["appReadyConfirmed"] == true,
        || format!("connect: {}", r["connect"]),
    );
    let cy = &r["cyclic"];
    rep.check(
        cy["stateAtEnd"] == "running"
            && cy["framesReceived"].as_u64().unwrap_or(0) > 0
            && cy["framesInvalid"] == 0,
        || {
            format!(
                "profinet-py's cyclic exchange: state {}, received {}, invalid {}, errors {}",
                cy["stateAtEnd"], cy["framesReceived"], cy["framesInvalid"], cy["errors"]
            )
        },
    );
    let seen: Vec<&str> = cy["inputsSeen"]
        .as_array()
        .map(|a| a.iter().filter_map(|e| e["hex"].as_str()).collect())
        .unwrap_or_default();
    let i1 = seen.iter().position(|h| *h == IN_1);
    let i2 = seen.iter().position(|h| *h == IN_2);
    rep.check(
        matches!((i1, i2), (Some(a), Some(b)) if a < b) && cy["lastInputHex"] == IN_2,
        || format!("inputs written on the device did not reach profinet-py in order ({IN_1} then {IN_2}): seen {seen:?}, last {}", cy["lastInputHex"]),
    );
    rep.check(r["rtaErrors"].as_array().is_some_and(Vec::is_empty), || {
        format!("ERR-RTA from the device: {}", r["rtaErrors"])
    });
    let rel = &r["release"];
    rep.check(
        rel["ok"] == true && rel["blockType"] == "0x8114" && rel["controlCommand"] == "0x0008",
        || format!("Release: {rel}"),
    );

    // 7. The device ended the AR because of the Release, not its watchdog.
    let ended = pn_testkit::poll::until(Duration::from_secs(5), || {
        rig.status()["connected"] == false
    });
    let st = rig.status();
    rep.check(
        ended
            && st["statusMessage"]
                .as_str()
                .is_some_and(|m| m.contains("released")),
        || format!("after the Release: {st}"),
    );
    let diag = rig.get("/api/diag");
    rep.check(diag["watchdogTrips"] == 0, || {
        format!(
            "watchdogTrips {} (diag message: {})",
            diag["watchdogTrips"], diag["message"]
        )
    });

    if !rep.failures.is_empty() {
        panic!(
            "case {}: {} check(s) failed:\n- {}\n{}",
            case.name,
            rep.failures.len(),
            rep.failures.join("\n- "),
            rep.evidence(&out, &err)
        );
    }
}

/// (a) profinet-py's defaults: 32 ms cycle (SendClockFactor 32 x ReductionRatio 32),
/// WatchdogFactor = DataHoldFactor = 6.
/// Run a case up to three times. profinet-py sends from a CPython thread: its garbage
/// collector and the GIL pause the sender now and then (measured up to 85 ms here, see
/// [`DHF_1MS`]); at 4 ms with its own DataHoldFactor 6 (24 ms) such a pause rightly ends the AR
/// at the device (1 run in 7 here: CF 81 FD 05 after a 61 ms pause). Every failed attempt is
/// printed with its evidence; three failures fail the test.
fn run_with_attempts(case: impl Fn() -> Case + std::panic::RefUnwindSafe) {
    pn_testkit::attempts::up_to(3, |_| run_case(case()));
}

#[test]
fn profinet_py_default_options() {
    run_with_attempts(|| Case {
        name: "a: profinet-py defaults (32 ms, DHF 6)",
        tag: "ipya",
        args: vec![],
    });
}

/// (b) 4 ms with profinet-py's default DataHoldFactor (6: 24 ms).
#[test]
fn profinet_py_4ms_default_data_hold() {
    run_with_attempts(|| Case {
        name: "b: 4 ms, profinet-py's default DHF 6",
        tag: "ipyb",
        args: vec!["--cycle-ms".into(), "4".into()],
    });
}

/// (c) 1 ms with the DataHoldFactor profinet-py's own timing needs ([`DHF_1MS`]).
#[test]
fn profinet_py_1ms() {
    run_with_attempts(|| Case {
        name: "c: 1 ms, DHF 512",
        tag: "ipyc",
        args: vec![
            "--cycle-ms".into(),
            "1".into(),
            "--data-hold-factor".into(),
            DHF_1MS.to_string(),
        ],
    });
}

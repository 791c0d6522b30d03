//! Interop: Connect requests built by an independent implementation (scapy's PROFINET layers,
//! `scapy.contrib.pnio_rpc`) against the real `pn-device` daemon.
//!
//! The device and the controller simulator share one codec, so their agreement proves nothing
//! about the wire. Here the requests come from `tests/interop/scapy_connect.py`: Ethernet, IP,
//! UDP, DCE/RPC (`DceRpc4`), the NDR header and every block (`ARBlockReq`, `IOCRBlockReq`,
//! `AlarmCRBlockReq`, `ExpectedSubmoduleBlockReq`, `IODControlReq`) are scapy's, and the
//! answers are dissected by scapy. The script runs in a controller namespace joined to the
//! daemon's namespace by a veth pair; this test drives it line by line over stdin/stdout, looks
//! at the daemon's HTTP API between the calls, and at the end hands the script's capture of the
//! whole exchange to tshark (no `_ws.malformed`, no expert Warning/Error, and tshark's PNIOStatus
//! equal to scapy's).
//!
//! The answers the standard requires (IEC 61158-6-10, IOCRBlockReq table, as p-net's
//! `pf_cmdev_check_iocr_param` implements it):
//!
//! | case | request | answer |
//! |---|---|---|
//! | 1 | legacy startup, RT_CLASS_1, input FrameID 0xC000, output 0xFFFF | OK; input FrameID 0xC000 kept, output assigned in 0xC000-0xF7FF |
//! | 2 | advanced startup, RT_CLASS_2, input 0x8000, output 0xFFFF (S7-1500) | OK; 0x8000 kept, output in 0x8000-0xBBFF |
//! | 3 | the S7-1500's own Connect (`mehner-connect-req-s7.hex`) rebuilt for this device | OK; 0x8000 kept, output in 0x8000-0xBBFF |
//! | 4 | advanced startup, RT_CLASS_1 | DB 81 02 07 (faulty IOCRBlockReq, field 7 IOCRProperties) |
//! | 5 | legacy startup, RT_CLASS_1, input FrameID 0x8002 | DB 81 02 09 (field 9 FrameID) |
//! | 6 | RT_CLASS_3 (this is an RT_CLASS_1 device) | DB 81 02 07 |
//! | 1 again | after the rejections | OK as case 1 |
//!
//! An accepted AR is released (scapy-built IODReleaseReq, block 0x0114) and the Release must be
//! answered OK and end the AR; after a rejected Connect the daemon must have no AR and must not
//! report DataExchange. Every case is evaluated and reported before the test fails, so one run
//! shows which answers are wrong.
//!
//! Needs root (namespaces, raw sockets), python3 with scapy, tshark and ethtool; under
//! `CI=true` a missing one fails the test (`pn_testkit::env`), locally it is skipped. Case 3
//! needs the shared real-frame fixture `mehner-connect-req-s7.hex` (same rule).
//!
//! `PN_DEVICE_BIN=/path/to/pn-device` runs the same cases against another build of the daemon
//! (e.g. an older revision, to compare answers). On failure the capture is kept in the temp
//! directory (`interop-scapy-connect-PID.pcap`) and the report lists every case.

use std::io::{BufRead, BufReader, Write};
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use pn_testkit::daemon::{self as dk, DevLicence, DeviceXml, Launcher};
use pn_testkit::netns::{NetNs, Veth};
use pn_testkit::tshark;
use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_pn-device");

/// The daemon under test: this package's `pn-device`, or `$PN_DEVICE_BIN` (another build, e.g.
/// an older revision for comparison; its `pn-licence` beside it or `$PN_LICENCE_BIN`).
fn device_bin() -> PathBuf {
    std::env::var_os("PN_DEVICE_BIN").map_or_else(|| PathBuf::from(BIN), PathBuf::from)
}
const CTL_IP: Ipv4Addr = Ipv4Addr::new(192, 168, 81, 1);
const DEV_IP: Ipv4Addr = Ipv4Addr::new(192, 168, 81, 2);
const STATION: &str = "scapy-dev";
const S7_FIXTURE: &str = "mehner-connect-req-s7.hex";
/// How long one scapy command (build, send, wait for the answer) may take.
const CMD_TIMEOUT: Duration = Duration::from_secs(15);

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/interop/scapy_connect.py")
}

/// True when python3 with scapy's DCE/RPC and PROFINET RPC layers is importable.
fn has_scapy() -> bool {
    Command::new("python3")
        .args([
            "-c",
            "import scapy.layers.dcerpc, scapy.contrib.pnio_rpc, scapy.sendrecv",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

// ---------------------------------------------------------------------------------------------
// the rig: daemon namespace + controller namespace + the scapy session

struct Rig {
    dev_ns: NetNs,
    ctl_ns: NetNs,
    veth: Veth,
    dir: tempfile::TempDir,
    daemon: Child,
    scapy: Option<Scapy>,
}

struct Scapy {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
    stderr: PathBuf,
}

impl Rig {
    fn start() -> Rig {
        let (ctl_ns, dev_ns, veth) = Veth::controller_device(
            "sc",
            Some(&format!("{CTL_IP}/24")),
            Some(&format!("{DEV_IP}/24")),
        )
        .expect("namespaces and veth pair");
        // Checksums computed in software: with TX offload a veth frame carries only the
        // pseudo-header sum, and tshark (udp.check_checksum) would call every answer bad.
        ctl_ns
            .exec_ok(&["ethtool", "-K", &veth.a, "tx", "off"])
            .unwrap();
        dev_ns
            .exec_ok(&["ethtool", "-K", &veth.b, "tx", "off"])
            .unwrap();

        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        DevLicence::new("interop scapy", "scapy-1").write(
            &dk::licence_tool_for(&device_bin()),
            &d.join(dk::LICENCE_FILE),
        );
        // Send clock 4 ms = SendClockFactor 128, the S7-1500's value in case 3.
        let xml = d.join("device.xml");
        DeviceXml::new(STATION)
            .nic(Some(&veth.b))
            .ip(DEV_IP)
            .send_clock_ms(4)
            .write(&xml);
        let mut settings = dk::base_settings(d);
        dk::merge(&mut settings, json!({"Runtime": {"AutoStart": false}}));
        dk::write_settings(&d.join("settings.json"), &settings);
        let log = d.join("daemon.log");
        let mut daemon = Launcher::new(dev_ns.name(), device_bin(), &log)
            .settings(d.join("settings.json"))
            .config(&xml)
            .nic(&veth.b)
            .spawn();
        dk::wait_api(dev_ns.name(), &mut daemon, &log, Duration::from_secs(15));
        let rig = Rig {
            dev_ns,
            ctl_ns,
            veth,
            dir,
            daemon,
            scapy: None,
        };
        let r = rig.try_http("POST", "/api/start");
        assert!(
            r.as_ref().is_some_and(|r| r["ok"] == true),
            "POST /api/start: {r:?}\n{}",
            rig.log()
        );
        rig.wait("state Initialized", Duration::from_secs(15), || {
            rig.status()["state"] == "Initialized"
        });
        rig
    }

    fn log(&self) -> String {
        dk::read_log(&self.dir.path().join("daemon.log"))
    }

    fn try_http(&self, method: &str, path: &str) -> Option<Value> {
        dk::api_json(self.dev_ns.name(), method, path, None)
    }

    fn http(&self, path: &str) -> Value {
        dk::api_json_result(self.dev_ns.name(), "GET", path, None)
            .unwrap_or_else(|e| panic!("{e}\n{}", self.log()))
    }

    fn status(&self) -> Value {
        self.http("/api/status")
    }

    fn diag(&self) -> Value {
        self.http("/api/diag")
    }

    fn wait(&self, what: &str, timeout: Duration, f: impl FnMut() -> bool) {
        if !pn_testkit::poll::until(timeout, f) {
            panic!("timed out waiting for {what}\ndaemon log:\n{}", self.log());
        }
    }

    fn dev_mac(&self) -> String {
        self.dev_ns
            .exec_ok(&["cat", &format!("/sys/class/net/{}/address", self.veth.b)])
            .unwrap()
            .trim()
            .to_string()
    }

    /// Start the scapy session in the controller namespace; returns its "ready" line.
    fn start_scapy(&mut self, pcap: &Path, s7_hex: &Path) -> Value {
        let stderr = self.dir.path().join("scapy.stderr");
        let mut child = self
            .ctl_ns
            .command("python3")
            .arg(script())
            .args(["--iface", &self.veth.a])
            .args(["--dev-ip", &DEV_IP.to_string()])
            .args(["--dev-mac", &self.dev_mac()])
            .arg("--pcap")
            .arg(pcap)
            .arg("--s7-fixture")
            .arg(s7_hex)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr).unwrap())
            .spawn()
            .expect("run python3 in the controller namespace");
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        self.scapy = Some(Scapy {
            child,
            stdin,
            lines: rx,
            stderr,
        });
        let ready = self.scapy_line("ready");
        assert_eq!(ready["cmd"], "ready", "scapy: {ready}");
        assert!(ready.get("error").is_none(), "scapy: {ready}");
        ready
    }

    fn scapy_line(&mut self, what: &str) -> Value {
        let s = self.scapy.as_mut().expect("scapy session");
        match s.lines.recv_timeout(CMD_TIMEOUT) {
            Ok(l) => serde_json::from_str(&l).unwrap_or_else(|e| panic!("scapy printed {l:?}: {e}")),
            Err(e) => panic!(
                "no answer from the scapy script for {what} ({e}); its stderr:\n{}\ndaemon log:\n{}",
                std::fs::read_to_string(&s.stderr).unwrap_or_default(),
                self.log()
            ),
        }
    }

    /// One command to the scapy session; its JSON answer.
    fn scapy(&mut self, cmd: &str) -> Value {
        let s = self.scapy.as_mut().expect("scapy session");
        writeln!(s.stdin, "{cmd}").expect("write to the scapy script");
        s.stdin.flush().unwrap();
        self.scapy_line(cmd)
    }

    /// `quit`: the script stops its capture and writes the pcap.
    fn finish_scapy(&mut self) -> Value {
        let v = self.scapy("quit");
        if let Some(mut s) = self.scapy.take() {
            drop(s.stdin);
            let _ = pn_testkit::poll::some(Duration::from_secs(5), || {
                s.child.try_wait().ok().flatten()
            });
            let _ = s.child.kill();
            let _ = s.child.wait();
        }
        v
    }
}

impl Drop for Rig {
    fn drop(&mut self) {
        if let Some(mut s) = self.scapy.take() {
            let _ = s.child.kill();
            let _ = s.child.wait();
        }
        dk::stop(&mut self.daemon, Duration::from_secs(5));
    }
}

// ---------------------------------------------------------------------------------------------
// cases

#[derive(Clone, Copy, Debug)]
enum Want {
    /// PNIOStatus 00 00 00 00; the input CR's FrameID `input` kept; the output CR's FrameID
    /// assigned by the device within `output`.
    Accept { input: u16, output: (u16, u16) },
    /// This PNIOStatus.
    Reject([u8; 4]),
}

struct Case {
    label: &'static str,
    /// Command word of the scapy script.
    name: &'static str,
    what: &'static str,
    want: Want,
}

const RT1: (u16, u16) = (0xC000, 0xF7FF);
const RT2: (u16, u16) = (0x8000, 0xBBFF);

fn cases() -> Vec<Case> {
    vec![
        Case {
            label: "1",
            name: "legacy_rtc1",
            what: "legacy startup, RT_CLASS_1, input FrameID 0xC000, output 0xFFFF",
            want: Want::Accept {
                input: 0xC000,
                output: RT1,
            },
        },
        Case {
            label: "2",
            name: "advanced_rtc2",
            what: "advanced startup, RT_CLASS_2, input FrameID 0x8000, output 0xFFFF",
            want: Want::Accept {
                input: 0x8000,
                output: RT2,
            },
        },
        Case {
            label: "3",
            name: "s7_layout",
            what: "the S7-1500 Connect layout (LE DREP, advanced, RT_CLASS_2, 0x8000/0x8000, \
                   SCF 128, RR 4, ExpectedSubmodule per slot, AlarmCR after them, ARFSUBlock)",
            want: Want::Accept {
                input: 0x8000,
                output: RT2,
            },
        },
        Case {
            label: "4",
            name: "advanced_rtc1",
            what: "advanced startup with RT_CLASS_1",
            want: Want::Reject([0xDB, 0x81, 0x02, 0x07]),
        },
        Case {
            label: "5",
            name: "legacy_rtc1_fid8002",
            what: "legacy startup, RT_CLASS_1, input FrameID 0x8002 (outside 0xC000-0xF7FF)",
            want: Want::Reject([0xDB, 0x81, 0x02, 0x09]),
        },
        Case {
            label: "6",
            name: "advanced_rtc3",
            what: "RT_CLASS_3 (input FrameID 0x0100) on an RT_CLASS_1 device",
            want: Want::Reject([0xDB, 0x81, 0x02, 0x07]),
        },
        Case {
            label: "1 again",
            name: "legacy_rtc1",
            what: "case 1 after the rejected Connects",
            want: Want::Accept {
                input: 0xC000,
                output: RT1,
            },
        },
    ]
}

fn hex4(b: &[u8; 4]) -> String {
    b.iter()
        .map(|x| format!("{x:02X}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The PNIOStatus octets scapy reported ("db810207").
fn status_of(v: &Value) -> Option<[u8; 4]> {
    let h = hex::decode(v["pnio_status"].as_str()?).ok()?;
    h.try_into().ok()
}

/// FrameID of the IOCRBlockRes of `iocr_type` (1 input, 2 output) in scapy's answer.
fn frame_id_of(v: &Value, iocr_type: u64) -> Option<u16> {
    v["iocrs"]
        .as_array()?
        .iter()
        .find(|c| c["type"].as_u64() == Some(iocr_type))
        .and_then(|c| c["frame_id"].as_u64())
        .map(|f| f as u16)
}

/// One RPC call of the session, to match it in the capture.
struct Call {
    what: String,
    activity: String,
    seqnum: u64,
    /// scapy's view of the answer's PNIOStatus and IOCRBlockRes FrameIDs.
    status: Option<[u8; 4]>,
    frame_ids: Vec<u16>,
}

impl Call {
    /// The PNIO-CM opnum of the call (0 Connect, 1 Release, 2 Read, 3 Write).
    fn opnum(&self) -> u64 {
        let w = &self.what;
        match () {
            _ if w.ends_with("Release") => 1,
            _ if w.starts_with("read") => 2,
            _ if w.starts_with("write") => 3,
            _ => 0,
        }
    }

    fn from(what: String, v: &Value) -> Call {
        Call {
            what,
            activity: v["activity"].as_str().unwrap_or_default().to_string(),
            seqnum: v["seqnum"].as_u64().unwrap_or(0),
            status: status_of(v),
            frame_ids: [1, 2].iter().filter_map(|&t| frame_id_of(v, t)).collect(),
        }
    }
}

/// Run one case: Connect, judge the answer (and the daemon's state after a rejection), release
/// an accepted AR. Returns the report line and whether the case passed.
fn run_case(rig: &mut Rig, case: &Case, calls: &mut Vec<Call>) -> (String, bool) {
    let mut bad: Vec<String> = Vec::new();
    let v = rig.scapy(&format!("connect {}", case.name));
    calls.push(Call::from(format!("case {} Connect", case.label), &v));
    let status = status_of(&v);
    let (fin, fout) = (frame_id_of(&v, 1), frame_id_of(&v, 2));
    let observed = match (&v.get("error"), status) {
        (Some(e), _) => format!("no usable answer: {e}"),
        (None, None) => format!(
            "RPC packet type {} (no PNIO response): {}",
            v["ptype"], v["rpc_body_hex"]
        ),
        (None, Some(st)) => format!(
            "PNIOStatus {}, IOCRBlockRes FrameID input {} output {}",
            hex4(&st),
            fin.map_or("-".into(), |f| format!("{f:#06X}")),
            fout.map_or("-".into(), |f| format!("{f:#06X}")),
        ),
    };
    if v["ptype"] != 2 {
        bad.push(format!("answer is not an RPC response: {v}"));
    }
    match case.want {
        Want::Accept { input, output } if status == Some([0; 4]) => {
            if fin != Some(input) {
                bad.push(format!("want input FrameID {input:#06X} kept"));
            }
            if !fout.is_some_and(|f| (output.0..=output.1).contains(&f)) {
                bad.push(format!(
                    "want an output FrameID within {:#06X}-{:#06X}",
                    output.0, output.1
                ));
            }
            let refs: Vec<(u64, u64)> = v["iocrs"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|c| {
                    (
                        c["type"].as_u64().unwrap_or(0),
                        c["ref"].as_u64().unwrap_or(0),
                    )
                })
                .collect();
            if refs != [(1, 1), (2, 2)] {
                bad.push(format!(
                    "want IOCRBlockRes (type 1, ref 1) and (type 2, ref 2), got {refs:?}"
                ));
            }
        }
        Want::Accept { .. } => bad.push("want PNIOStatus 00 00 00 00".into()),
        Want::Reject(want) => {
            if status != Some(want) {
                bad.push(format!("want PNIOStatus {}", hex4(&want)));
            }
            // A rejected Connect must leave the daemon out of data exchange, with no AR.
            std::thread::sleep(Duration::from_millis(100));
            let st = rig.status();
            if st["state"] == "DataExchange" || st["connected"] == true {
                bad.push(format!(
                    "HTTP status after the rejection: state {} connected {}",
                    st["state"], st["connected"]
                ));
            }
            if status.is_some_and(|s| s != [0; 4]) {
                let d = rig.diag();
                if d["activeIocrCount"].as_i64() != Some(0) {
                    bad.push(format!(
                        "an AR is left after the rejection: activeIocrCount {}",
                        d["activeIocrCount"]
                    ));
                }
            }
        }
    }
    // Whatever was expected: an AR the device accepted is released, so the next Connect is not
    // refused for resources.
    if status == Some([0; 4]) {
        release(rig, case, calls, &mut bad);
    }
    let line = format!(
        "case {} ({}): {}: observed {observed}{}",
        case.label,
        case.what,
        if bad.is_empty() { "PASS" } else { "FAIL" },
        if bad.is_empty() {
            String::new()
        } else {
            format!("; {}", bad.join("; "))
        }
    );
    (line, bad.is_empty())
}

/// Release the last Connect's AR: answered OK with IODReleaseRes (0x8114, Done), and the AR
/// gone from the daemon.
fn release(rig: &mut Rig, case: &Case, calls: &mut Vec<Call>, bad: &mut Vec<String>) {
    let r = rig.scapy("release");
    calls.push(Call::from(format!("case {} Release", case.label), &r));
    let block = r["blocks"]
        .as_array()
        .and_then(|b| b.first())
        .cloned()
        .unwrap_or(Value::Null);
    if status_of(&r) != Some([0; 4]) || block["type"] != "0x8114" || block["done"] != 1 {
        bad.push(format!(
            "Release not answered OK with IODReleaseRes (0x8114, Done): {r}"
        ));
    }
    let ended = pn_testkit::poll::until(Duration::from_secs(3), || {
        rig.diag()["activeIocrCount"].as_i64() == Some(0) && rig.status()["state"] != "DataExchange"
    });
    if !ended {
        bad.push(format!(
            "the AR did not end after the Release: diag {}",
            rig.diag()
        ));
    }
}

/// tshark over the whole capture: a request and an answer per call, each dissected as PNIO-CM
/// with the call's opnum, no `_ws.malformed`, no expert Warning/Error, and in each answer the
/// PNIOStatus and IOCRBlockRes FrameIDs scapy read. Returns the problems found.
fn check_capture(pcap: &Path, calls: &[Call]) -> (usize, Vec<String>) {
    let packets = tshark::dissect_file(pcap, &[]).unwrap_or_else(|e| panic!("tshark: {e}"));
    let mut bad: Vec<String> = Vec::new();
    if packets.len() != 2 * calls.len() {
        bad.push(format!(
            "capture holds {} frames for {} calls (want a request and an answer each)",
            packets.len(),
            calls.len()
        ));
    }
    for (i, p) in packets.iter().enumerate() {
        let act = p.field("dcerpc.dg_act_id").unwrap_or("");
        let seq = p.field("dcerpc.dg_seqnum").and_then(tshark::parse_uint);
        let call = calls
            .iter()
            .find(|c| c.activity == act && Some(c.seqnum) == seq);
        let answer = p.field("dcerpc.pkt_type") != Some("0");
        let what = format!(
            "frame {} ({}, {})",
            i + 1,
            call.map_or("unknown call", |c| c.what.as_str()),
            if answer { "answer" } else { "request" }
        );
        // PNIO-CM is a DCE/RPC sub-dissector (layer pn_io_device): frame.protocols ends at
        // dcerpc, so the opnum field tells that tshark took the frame for PNIO-CM.
        let want_op = call.map_or(0, Call::opnum);
        if p.field("pn_io.opnum").and_then(tshark::parse_uint) != Some(want_op) {
            bad.push(format!(
                "{what}: not dissected as PNIO-CM opnum {want_op}: {} pn_io.opnum {:?}",
                p.protocols(),
                p.field("pn_io.opnum")
            ));
        }
        if p.malformed() {
            bad.push(format!("{what}: _ws.malformed"));
        }
        for e in p.expert_problems() {
            bad.push(format!("{what}: expert {e}"));
        }
        let Some(c) = call.filter(|_| answer) else {
            continue;
        };
        let st: Vec<u8> = [
            "pn_io.error_code",
            "pn_io.error_decode",
            "pn_io.error_code1",
            "pn_io.error_code2",
        ]
        .iter()
        .map(|f| p.field(f).and_then(tshark::parse_uint).unwrap_or(0x100) as u8)
        .collect();
        if c.status.map(|s| s.to_vec()) != Some(st.clone()) {
            bad.push(format!(
                "{what}: tshark PNIOStatus {st:02X?}, scapy {:02X?}",
                c.status
            ));
        }
        let tids: Vec<u16> = p
            .all("pn_io.frame_id")
            .iter()
            .filter_map(|s| tshark::parse_uint(s))
            .map(|f| f as u16)
            .collect();
        for f in &c.frame_ids {
            if !tids.contains(f) {
                bad.push(format!(
                    "{what}: scapy's FrameID {f:#06X} not among tshark's {tids:04X?}"
                ));
            }
        }
    }
    (packets.len(), bad)
}

/// A Read or Write for an AR the device does not know is refused with "AR UUID unknown"
/// (`DF/DE 81 40 05`), and the answer carries the IOD*ResHeader echoing the request (the
/// ET200SP does so; an answer without it is a malformed packet to tshark, which the capture
/// check catches).
fn record_for_unknown_ar(
    rig: &mut Rig,
    op: &str,
    code: u8,
    calls: &mut Vec<Call>,
) -> (String, bool) {
    let v = rig.scapy(&format!("record {op}"));
    calls.push(Call::from(format!("{op} for an unknown AR"), &v));
    let want = hex4(&[code, 0x81, 0x40, 0x05]);
    let mut bad = Vec::new();
    if status_of(&v) != Some([code, 0x81, 0x40, 0x05]) {
        bad.push(format!("PNIOStatus {:?}, want {want}", v["pnio_status"]));
    }
    let h = &v["res_header"];
    if h["ar_uuid"] != v["ar_uuid"] {
        bad.push(format!("no response header echoing the request: {v}"));
    }
    if op == "write" && h["status"].as_str() != Some(&want.replace(' ', "").to_lowercase()) {
        bad.push(format!(
            "IODWriteResHeader status {}, want {want}",
            h["status"]
        ));
    }
    let ok = bad.is_empty();
    let verdict = if ok {
        "PASS".into()
    } else {
        format!("FAIL: {}", bad.join("; "))
    };
    (format!("{op} for an unknown AR: {verdict}"), ok)
}

#[test]
fn scapy_built_connects_get_the_standard_answers() {
    if !pn_testkit::env::require_root()
        || !pn_testkit::env::require(
            has_scapy(),
            "python3 with scapy >= 2.5 (pip install -r ci/requirements.txt)",
        )
        || !pn_testkit::env::require_tshark()
        || !pn_testkit::env::require(
            pn_testkit::env::has_tool("ethtool"),
            "ethtool (apt-get install ethtool)",
        )
    {
        return;
    }
    let t0 = Instant::now();
    let s7 = pn_testkit::fixtures::by_name(S7_FIXTURE);
    let have_s7 = pn_testkit::env::require(
        s7.is_some(),
        "the real-frame fixture mehner-connect-req-s7.hex (shared/fixtures/real-frames beside \
         the checkout) for case 3",
    );

    let mut rig = Rig::start();
    let pcap = rig.dir.path().join("scapy-connect.pcap");
    let s7_hex = rig.dir.path().join(S7_FIXTURE);
    if let Some(f) = &s7 {
        std::fs::write(&s7_hex, hex::encode(&f.bytes)).unwrap();
    }
    let ready = rig.start_scapy(&pcap, &s7_hex);
    eprintln!("scapy session ready: {ready}");

    let mut report: Vec<String> = Vec::new();
    let mut failures: Vec<String> = Vec::new();
    let mut calls: Vec<Call> = Vec::new();
    for case in cases() {
        if case.name == "s7_layout" && !have_s7 {
            report.push(format!("case {}: SKIPPED (no {S7_FIXTURE})", case.label));
            continue;
        }
        let (line, ok) = run_case(&mut rig, &case, &mut calls);
        if !ok {
            failures.push(line.clone());
        }
        report.push(line);
    }
    for (op, code) in [("write", 0xDF), ("read", 0xDE)] {
        let (line, ok) = record_for_unknown_ar(&mut rig, op, code, &mut calls);
        if !ok {
            failures.push(line.clone());
        }
        report.push(line);
    }
    let quit = rig.finish_scapy();
    eprintln!("scapy capture: {quit}");

    let (frames, tshark_bad) = check_capture(&pcap, &calls);
    if tshark_bad.is_empty() {
        report.push(format!(
            "tshark ({frames} frames): PASS: PNIO-CM, no malformed frame, no expert \
             warning/error, PNIOStatus and FrameIDs as scapy read them"
        ));
    } else {
        let line = format!("tshark ({frames} frames): FAIL: {}", tshark_bad.join("; "));
        failures.push(line.clone());
        report.push(line);
    }

    eprintln!(
        "---- scapy Connect interop ({:.1} s) ----\n{}",
        t0.elapsed().as_secs_f64(),
        report.join("\n")
    );
    if !failures.is_empty() {
        let keep =
            std::env::temp_dir().join(format!("interop-scapy-connect-{}.pcap", std::process::id()));
        let _ = std::fs::copy(&pcap, &keep);
        let log = rig.log();
        let tail: Vec<&str> = log.lines().rev().take(40).collect();
        panic!(
            "{} of the checks failed (capture kept at {}):\n{}\n---- daemon log (last lines) \
             ----\n{}",
            failures.len(),
            keep.display(),
            failures.join("\n"),
            tail.into_iter().rev().collect::<Vec<_>>().join("\n")
        );
    }
}

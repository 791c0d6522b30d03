//! What the farm shows of its devices: per-device state shared between the I/O loop (the
//! writer) and the status view, and the view itself (`GET /` HTML, `GET /api/devices` JSON,
//! `GET /api/devices/NAME`, `GET /api/farm` (the shared socket's errors),
//! `POST /api/devices/NAME/io`, `POST /api/devices/NAME/diagnosis`) on a port of its own (the
//! 18840 contract stays pn-device's).
//!
//! The server is a plain std thread answering one short request at a time: it serves a human
//! and the tests, never the cyclic path (which touches only atomics and the image's seqlock).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use pn_device::dataplane::DiagnosisEntry;
use pn_device::image::ProcessImage;
use pn_device::stack::lldp::LldpNeighbour;
use pn_protocol::machine::dcp_responder::DcpIdentity;
use serde::{Deserialize, Serialize};

use crate::plant::{mac_text, DeviceSpec};

/// Counters of one device (written by the I/O loop only).
#[derive(Default)]
pub struct Counters {
    pub tx_rt: AtomicU64,
    pub rx_rt: AtomicU64,
    pub rx_invalid: AtomicU64,
    pub rx_cm: AtomicU64,
    pub tx_cm: AtomicU64,
    pub tx_dropped: AtomicU64,
    pub missed_slots: AtomicU64,
    pub watchdog_trips: AtomicU64,
    pub alarms_sent: AtomicU64,
    pub alarms_acked: AtomicU64,
    pub alarms_nacked: AtomicU64,
    pub alarms_received: AtomicU64,
    pub signals: AtomicU64,
    pub tx_lldp: AtomicU64,
    pub rx_lldp: AtomicU64,
    /// SNMP responses and LLMNR answers sent.
    pub snmp_answers: AtomicU64,
    pub llmnr_answers: AtomicU64,
    /// Provider frames the farm's standby sender sent for this device (also in `tx_rt`).
    pub standby_frames: AtomicU64,
}

#[derive(Debug, Clone)]
struct Info {
    name: String,
    ip: Ipv4Addr,
    state: &'static str,
    controller: Option<String>,
    cycle_us: u64,
    message: String,
    lldp: Option<LldpView>,
}

/// One device as the status view and the library API see it.
pub struct DevShared {
    pub mac: [u8; 6],
    pub vendor_id: u16,
    pub device_id: u16,
    pub device_name: String,
    pub image: Arc<ProcessImage>,
    pub counters: Counters,
    info: Mutex<Info>,
}

impl DevShared {
    pub fn new(spec: &DeviceSpec, image: Arc<ProcessImage>) -> DevShared {
        DevShared {
            mac: spec.mac,
            vendor_id: spec.stack.vendor_id,
            device_id: spec.stack.device_id,
            device_name: spec.stack.device_name.clone(),
            image,
            counters: Counters::default(),
            info: Mutex::new(Info {
                name: spec.stack.station_name.clone(),
                ip: spec.stack.ip,
                state: "Idle",
                controller: None,
                cycle_us: 0,
                message: String::new(),
                lldp: None,
            }),
        }
    }

    fn info(&self) -> std::sync::MutexGuard<'_, Info> {
        self.info.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn name(&self) -> String {
        self.info().name.clone()
    }

    pub fn set_identity(&self, id: &DcpIdentity) {
        let mut i = self.info();
        if i.name != id.station_name {
            i.name = id.station_name.clone();
        }
        i.ip = id.ip;
    }

    pub fn set_ar(&self, state: &'static str, controller: Option<String>, cycle_us: u64) {
        let mut i = self.info();
        i.state = state;
        i.controller = controller;
        i.cycle_us = cycle_us;
    }

    pub fn set_state(&self, state: &'static str) {
        self.info().state = state;
    }

    pub fn set_message(&self, m: String) {
        self.info().message = m;
    }

    /// The LLDP neighbour now (`None`: none, or its TTL ran out).
    pub fn set_lldp_neighbour(&self, n: Option<LldpNeighbour>) {
        self.info().lldp = n.map(|n| LldpView {
            src_mac: n.src_mac,
            chassis_id: n.chassis_id,
            port_id: n.port_id,
            station_name: n.station_name,
            port_name: n.port_name,
        });
    }

    pub fn view(&self, index: usize) -> DeviceView {
        let i = self.info().clone();
        let k = &self.counters;
        let l = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let snap = self.image.snapshot();
        DeviceView {
            index,
            name: i.name,
            mac: mac_text(&self.mac),
            ip: i.ip.to_string(),
            vendor_id: self.vendor_id,
            device_id: self.device_id,
            device_name: self.device_name.clone(),
            state: i.state.to_string(),
            controller: i.controller,
            cycle_us: i.cycle_us,
            frames_sent: l(&k.tx_rt),
            frames_received: l(&k.rx_rt),
            frames_invalid: l(&k.rx_invalid),
            missed_slots: l(&k.missed_slots),
            watchdog_trips: l(&k.watchdog_trips),
            alarms_sent: l(&k.alarms_sent),
            alarms_acked: l(&k.alarms_acked),
            alarms_received: l(&k.alarms_received),
            outputs_hex: hex(&snap.input),
            inputs_hex: hex(&snap.output),
            message: i.message,
            lldp_sent: l(&k.tx_lldp),
            lldp_received: l(&k.rx_lldp),
            lldp_neighbour: i.lldp,
            snmp_answers: l(&k.snmp_answers),
            llmnr_answers: l(&k.llmnr_answers),
            standby_frames: l(&k.standby_frames),
        }
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if s.len() % 2 != 0 {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| s.get(i..i + 2).and_then(|p| u8::from_str_radix(p, 16).ok()))
        .collect()
}

/// `GET /api/devices` entry. `outputsHex`: what the controller sent (PROFINET outputs, the
/// device's I area); `inputsHex`: what the device sends (PROFINET inputs, its Q area).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct DeviceView {
    pub index: usize,
    pub name: String,
    pub mac: String,
    pub ip: String,
    pub vendor_id: u16,
    pub device_id: u16,
    pub device_name: String,
    /// "Idle", "Startup" (Connect accepted) or "DataExchange".
    pub state: String,
    pub controller: Option<String>,
    pub cycle_us: u64,
    pub frames_sent: u64,
    pub frames_received: u64,
    pub frames_invalid: u64,
    pub missed_slots: u64,
    pub watchdog_trips: u64,
    pub alarms_sent: u64,
    pub alarms_acked: u64,
    pub alarms_received: u64,
    pub outputs_hex: String,
    pub inputs_hex: String,
    pub message: String,
    /// LLDPDUs sent and received.
    pub lldp_sent: u64,
    pub lldp_received: u64,
    /// The link partner LLDP reports (shared by every farm device: one NIC).
    pub lldp_neighbour: Option<LldpView>,
    /// SNMP responses and LLMNR answers this device sent.
    pub snmp_answers: u64,
    pub llmnr_answers: u64,
    /// Of `framesSent`, those the standby sender sent (`--standby-cpu`): slots the I/O loop
    /// had not sent when their grace was over. Absent in the answer of an older farm: 0.
    #[serde(default)]
    pub standby_frames: u64,
}

/// A device's LLDP neighbour in the status view.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct LldpView {
    pub src_mac: String,
    pub chassis_id: String,
    pub port_id: String,
    /// PROFINET station and port name of a PROFINET neighbour (empty for a switch).
    pub station_name: String,
    pub port_name: String,
}

/// Requests to the I/O loop (the only owner of the machines).
#[derive(Debug, Clone)]
pub enum Command {
    SetDiagnosis(usize, DiagnosisEntry),
    RemoveDiagnosis(usize, DiagnosisEntry),
    /// Test hook: the I/O loop stops for this long (as when the machine holds its CPU).
    #[cfg(feature = "test-hooks")]
    HoldIo(std::time::Duration),
}

/// What the view and the library share with the I/O loop.
pub struct FarmShared {
    pub devices: Vec<Arc<DevShared>>,
    pub commands: Mutex<mpsc::Sender<Command>>,
    pub stop: AtomicBool,
    /// The shared socket's errors (the I/O loop writes, the view reads).
    pub io: IoCounters,
}

/// Errors of the farm's one packet socket. A receive or send error is not the end of the
/// farm (the link can go down and come back, a queue can overflow): the loop goes on, and
/// the errors are counted here, the last one kept in words, and logged.
#[derive(Default)]
pub struct IoCounters {
    pub rx_errors: AtomicU64,
    /// Frames the kernel dropped because the receive ring (or queue) was full
    /// (`PACKET_STATISTICS`, added up by the I/O loop).
    pub rx_dropped: AtomicU64,
    /// The I/O loop reads a receive ring (else `recvmmsg(2)`).
    pub rx_ring: std::sync::atomic::AtomicBool,
    /// Frames a `sendmmsg(2)` did not take.
    pub tx_unsent: AtomicU64,
    last_error: Mutex<String>,
    /// Passes of the I/O loop that woke [`SLOW_PASS_NS`] or more after their first due timer,
    /// or took that long from the wake-up to the end of their sends: every device's frames
    /// were late by that much. The worst of each, and when the last slow pass was logged.
    pub slow_passes: AtomicU64,
    pub max_wake_late_us: AtomicU64,
    pub max_pass_us: AtomicU64,
    last_slow_log_ns: AtomicU64,
    /// The CPU the standby sender runs on, once it is pinned there (`None`: no standby).
    pub standby_cpu: Mutex<Option<usize>>,
}

/// A pass of the farm's I/O loop this late or this long is counted and logged.
pub const SLOW_PASS_NS: u64 = 1_000_000;
/// At most one log line about slow passes per this time (a stalled machine would otherwise
/// write one per cycle).
const SLOW_LOG_EVERY_NS: u64 = 100_000_000;

impl IoCounters {
    /// Count an error of `op` ("receive", "send"); logged as a warning the first time and
    /// then at every power of two, so that a persistent fault cannot flood the log.
    pub fn record_error(&self, op: &str, e: &std::io::Error) {
        let n = match op {
            "send" => self.tx_unsent.fetch_add(1, Ordering::Relaxed),
            _ => self.rx_errors.fetch_add(1, Ordering::Relaxed),
        } + 1;
        let text = format!("{op}: {e}");
        if n.is_power_of_two() {
            tracing::warn!(count = n, "farm socket {text}");
        }
        if let Ok(mut last) = self.last_error.lock() {
            *last = text;
        }
    }

    /// A pass of the I/O loop at `now_ns` (CLOCK_MONOTONIC) that woke `late_ns` after its
    /// first due timer and took `pass_ns` from its wake-up to the end of its sends, `send_ns`
    /// of them in `sendmmsg`: counted and logged (rate-limited) when either reaches
    /// [`SLOW_PASS_NS`]. The log line's time places the stall for `pn-lab bench scale`.
    pub fn record_pass(&self, now_ns: u64, late_ns: u64, pass_ns: u64, send_ns: u64) {
        if late_ns < SLOW_PASS_NS && pass_ns < SLOW_PASS_NS {
            return;
        }
        let n = self.slow_passes.fetch_add(1, Ordering::Relaxed) + 1;
        self.max_wake_late_us
            .fetch_max(late_ns / 1000, Ordering::Relaxed);
        self.max_pass_us
            .fetch_max(pass_ns / 1000, Ordering::Relaxed);
        let last = self.last_slow_log_ns.load(Ordering::Relaxed);
        if last == 0 || now_ns.saturating_sub(last) >= SLOW_LOG_EVERY_NS {
            self.last_slow_log_ns.store(now_ns, Ordering::Relaxed);
            tracing::warn!(
                count = n,
                woke_late_us = late_ns / 1000,
                pass_us = pass_ns / 1000,
                sendmmsg_us = send_ns / 1000,
                "farm-io: slow pass, every device's frames late"
            );
        }
    }

    /// Add `n` frames the kernel dropped on receive (the ring or queue was full); logged as a
    /// warning when the total passes a power of two, so a persistent overload cannot flood
    /// the log but is never silent.
    pub fn record_drops(&self, n: u64) {
        if n == 0 {
            return;
        }
        let before = self.rx_dropped.fetch_add(n, Ordering::Relaxed);
        let total = before + n;
        if before == 0 || before.ilog2() != total.ilog2() {
            tracing::warn!(
                dropped = n,
                total,
                "farm socket: receive ring full, the kernel dropped frames (the I/O loop was held for many cycles)"
            );
        }
    }

    /// Add `n` frames `sendmmsg` did not take (the error, if the kernel gave one, is
    /// recorded by [`IoCounters::record_error`]).
    pub fn add_unsent(&self, n: u64) {
        self.tx_unsent.fetch_add(n, Ordering::Relaxed);
    }

    pub fn view(&self, devices: usize) -> FarmView {
        FarmView {
            devices,
            rx_errors: self.rx_errors.load(Ordering::Relaxed),
            rx_dropped: self.rx_dropped.load(Ordering::Relaxed),
            rx: if self.rx_ring.load(Ordering::Relaxed) {
                "ring"
            } else {
                "mmsg"
            }
            .into(),
            tx_unsent: self.tx_unsent.load(Ordering::Relaxed),
            slow_passes: self.slow_passes.load(Ordering::Relaxed),
            max_wake_late_us: self.max_wake_late_us.load(Ordering::Relaxed),
            max_pass_us: self.max_pass_us.load(Ordering::Relaxed),
            standby_cpu: self.standby_cpu.lock().map(|c| *c).unwrap_or(None),
            last_io_error: self
                .last_error
                .lock()
                .map(|s| s.clone())
                .unwrap_or_default(),
        }
    }
}

/// `GET /api/farm`: the farm as a whole.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct FarmView {
    pub devices: usize,
    pub rx_errors: u64,
    /// Frames the kernel dropped, the receive ring or queue being full. Absent in the answer
    /// of an older farm: 0.
    #[serde(default)]
    pub rx_dropped: u64,
    /// How the I/O loop reads: "ring" (PACKET_RX_RING) or "mmsg" (recvmmsg). Absent in the
    /// answer of an older farm: "".
    #[serde(default)]
    pub rx: String,
    pub tx_unsent: u64,
    /// Passes of the I/O loop that woke 1 ms or more late or took that long, and the worst
    /// lateness and duration (us). Absent in the answer of an older farm: 0.
    #[serde(default)]
    pub slow_passes: u64,
    #[serde(default)]
    pub max_wake_late_us: u64,
    #[serde(default)]
    pub max_pass_us: u64,
    /// The CPU the standby sender runs on (`--standby-cpu`); null without one, or when it
    /// could not run there (the log says why). Absent in the answer of an older farm: null.
    #[serde(default)]
    pub standby_cpu: Option<usize>,
    /// The last socket error in words ("" when there was none).
    pub last_io_error: String,
}

impl FarmShared {
    pub fn find(&self, name: &str) -> Option<usize> {
        self.devices.iter().position(|d| d.name() == name)
    }

    pub fn send(&self, c: Command) -> bool {
        self.commands
            .lock()
            .map(|tx| tx.send(c).is_ok())
            .unwrap_or(false)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct IoWrite {
    #[serde(default)]
    offset: usize,
    data: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct DiagWrite {
    slot: u16,
    subslot: u16,
    #[serde(default)]
    channel: u16,
    error_type: u16,
    #[serde(default)]
    severity: u8,
    #[serde(default)]
    text: String,
    /// `true`: the diagnosis disappears.
    #[serde(default)]
    remove: bool,
}

/// The HTTP thread; stops when `FarmShared::stop` is set.
pub fn spawn_http(
    listener: TcpListener,
    farm: Arc<FarmShared>,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    listener.set_nonblocking(true)?;
    std::thread::Builder::new()
        .name("farm-http".into())
        .spawn(move || {
            use std::os::fd::AsRawFd;
            while !farm.stop.load(Ordering::Acquire) {
                let mut pfd = libc::pollfd {
                    fd: listener.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                };
                // SAFETY: one valid pollfd. Wakes every 200 ms to see the stop flag.
                let rc = unsafe { libc::poll(&mut pfd, 1, 200) };
                if rc <= 0 {
                    continue;
                }
                if let Ok((s, _)) = listener.accept() {
                    let _ = serve(s, &farm);
                }
            }
        })
}

fn serve(mut s: TcpStream, farm: &FarmShared) -> std::io::Result<()> {
    s.set_nonblocking(false)?;
    s.set_read_timeout(Some(Duration::from_secs(2)))?;
    let mut r = BufReader::new(s.try_clone()?);
    let mut line = String::new();
    r.read_line(&mut line)?;
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or("").to_string();
    let path = parts.next().unwrap_or("").to_string();
    let mut len = 0usize;
    loop {
        let mut h = String::new();
        if r.read_line(&mut h)? == 0 || h.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            if k.trim().eq_ignore_ascii_case("content-length") {
                len = v.trim().parse().unwrap_or(0);
            }
        }
    }
    if len > 64 * 1024 {
        return respond(
            &mut s,
            413,
            "application/json",
            r#"{"error":"body too large"}"#,
        );
    }
    let mut body = vec![0u8; len];
    r.read_exact(&mut body)?;
    let (code, ctype, text) = route(farm, &method, &path, &body);
    respond(&mut s, code, ctype, &text)
}

fn respond(s: &mut TcpStream, code: u16, ctype: &str, body: &str) -> std::io::Result<()> {
    let reason = match code {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        413 => "Payload Too Large",
        _ => "Error",
    };
    write!(
        s,
        "HTTP/1.1 {code} {reason}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

fn err(code: u16, msg: &str) -> (u16, &'static str, String) {
    (
        code,
        "application/json",
        serde_json::json!({ "error": msg }).to_string(),
    )
}

/// Answer one request (pure apart from the shared state; unit-tested).
pub fn route(
    farm: &FarmShared,
    method: &str,
    path: &str,
    body: &[u8],
) -> (u16, &'static str, String) {
    let views = || -> Vec<DeviceView> {
        farm.devices
            .iter()
            .enumerate()
            .map(|(i, d)| d.view(i))
            .collect()
    };
    match (method, path) {
        ("GET", "/") => (
            200,
            "text/html; charset=utf-8",
            html(&views(), &farm.io.view(farm.devices.len())),
        ),
        ("GET", "/api/farm") => (
            200,
            "application/json",
            serde_json::to_string(&farm.io.view(farm.devices.len())).unwrap_or_default(),
        ),
        ("GET", "/api/devices") => (
            200,
            "application/json",
            serde_json::to_string(&views()).unwrap_or_default(),
        ),
        (_, p) if p.starts_with("/api/devices/") => {
            let rest = &p["/api/devices/".len()..];
            let (name, action) = rest.split_once('/').unwrap_or((rest, ""));
            let Some(i) = farm.find(name) else {
                return err(404, "no such device");
            };
            match (method, action) {
                ("GET", "") => (
                    200,
                    "application/json",
                    serde_json::to_string(&farm.devices[i].view(i)).unwrap_or_default(),
                ),
                ("POST", "io") => {
                    let Ok(w) = serde_json::from_slice::<IoWrite>(body) else {
                        return err(400, "expected {\"offset\": N, \"data\": \"hex\"}");
                    };
                    let Some(data) = unhex(&w.data) else {
                        return err(400, "data is not hex");
                    };
                    match farm.devices[i].image.write_output(w.offset, &data) {
                        Ok(_) => (200, "application/json", r#"{"ok":true}"#.into()),
                        Err(e) => err(400, &e.to_string()),
                    }
                }
                ("POST", "diagnosis") => {
                    let Ok(d) = serde_json::from_slice::<DiagWrite>(body) else {
                        return err(400, "expected {\"slot\", \"subslot\", \"errorType\", ...}");
                    };
                    let e = DiagnosisEntry {
                        slot: d.slot,
                        subslot: d.subslot,
                        channel: d.channel,
                        error_type: d.error_type,
                        severity: d.severity,
                        text: d.text,
                    };
                    let c = if d.remove {
                        Command::RemoveDiagnosis(i, e)
                    } else {
                        Command::SetDiagnosis(i, e)
                    };
                    if farm.send(c) {
                        (200, "application/json", r#"{"ok":true}"#.into())
                    } else {
                        err(500, "farm stopped")
                    }
                }
                _ => err(404, "no such action"),
            }
        }
        _ => err(404, "not found"),
    }
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn html(v: &[DeviceView], farm: &FarmView) -> String {
    let mut h = String::from(
        "<!doctype html><html><head><meta charset=\"utf-8\"><meta http-equiv=\"refresh\" content=\"2\">\
         <title>pn-farm</title><style>body{font-family:sans-serif}td,th{padding:2px 8px;text-align:left}\
         tr:nth-child(even){background:#eee}</style></head><body><h1>pn-farm</h1>",
    );
    h.push_str(&format!(
        "<p>{} devices; socket ({}): {} receive errors, {} frames dropped (receive side full), {} frames not sent{}; I/O loop: {} slow passes (worst: woke {} µs late, a pass of {} µs)</p>",
        v.len(),
        esc(&farm.rx),
        farm.rx_errors,
        farm.rx_dropped,
        farm.tx_unsent,
        if farm.last_io_error.is_empty() {
            String::new()
        } else {
            format!(" (last: {})", esc(&farm.last_io_error))
        },
        farm.slow_passes,
        farm.max_wake_late_us,
        farm.max_pass_us
    ));
    h.push_str("<table><tr><th>#</th><th>Name</th><th>MAC</th><th>IP</th><th>State</th><th>Controller</th><th>Cycle µs</th><th>Sent (standby)</th><th>Received</th><th>Watchdog trips</th><th>Alarms sent/acked</th><th>SNMP/LLMNR answers</th><th>Message</th></tr>");
    for d in v {
        h.push_str(&format!(
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{} ({})</td><td>{}</td><td>{}</td><td>{}/{}</td><td>{}/{}</td><td>{}</td></tr>",
            d.index,
            esc(&d.name),
            d.mac,
            d.ip,
            d.state,
            esc(d.controller.as_deref().unwrap_or("")),
            d.cycle_us,
            d.frames_sent,
            d.standby_frames,
            d.frames_received,
            d.watchdog_trips,
            d.alarms_sent,
            d.alarms_acked,
            d.snmp_answers,
            d.llmnr_answers,
            esc(&d.message)
        ));
    }
    h.push_str("</table></body></html>");
    h
}

#[cfg(test)]
mod tests;

//! Reliability primitives and the long run (`pn-lab soak --minutes N`).
//!
//! A [`Rig`] is a lab (device namespace + controller namespace, the real `pn-device` binary)
//! plus an in-process controller simulator that behaves like a PLC: it reconnects after every
//! lost AR. On top of it the fault rounds used by the reliability tests
//! (`harness/tests/reliability_*.rs`) and by the soak run:
//!
//! * [`Rig::flap_round`]: cable pull at a random moment, Q writes during the outage, every
//!   final value delivered after recovery;
//! * [`Rig::loss_burst`]: patterns of lost device frames (tc u32 + mirred: this kernel has no
//!   netem);
//! * [`Rig::crash_controller`]: the controller vanishes without Release (its process died) and a
//!   new one connects;
//! * [`Rig::kill_device`]: SIGKILL of the daemon (optionally during persistence writes) and a
//!   restart on the same persistence directory;
//! * [`Rig::flood`]: bounded floods of DCP identify requests, RPC garbage, unknown or malformed
//!   RT frames and LLDP frames from the controller namespace (raw `AF_PACKET`).
//!
//! Q writes carry a sequence number (u32, big-endian, Q offset 0). A sampler thread reads the
//! controller's received inputs every millisecond and counts every time the sequence goes
//! backwards (an old value re-delivered); [`Rig::expect_seq`] waits for the last written value.

use crate::lab::{Lab, LabOptions};
use crate::peer::DEV_IP;
use pn_controller::netif::{InterfaceInfo, RawSocket};
use pn_controller::{
    ArConfig, ArHandle, ArState, Controller, ControllerConfig, DeviceConfig, DeviceModel,
    RealtimeOptions,
};
use serde_json::{json, Value as Json};
use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The device configuration of the reliability runs: 4 ms send clock, 4 bytes each way.
pub const CONFIG_XML: &str = include_str!("../../scenarios/configs/exchange-4ms.xml");

/// A small deterministic PRNG (xorshift64*): runs are reproducible from their seed.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }
    /// A seed from the clock (printed by the callers so that a failing run can be repeated).
    pub fn seed_from_time() -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1)
            | 1
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        if hi <= lo {
            return lo;
        }
        lo + self.next_u64() % (hi - lo + 1)
    }
    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next_u64() as u8).collect()
    }
}

/// A number from the environment (e.g. `PN_REL_FLAPS`), else `default`.
pub fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(default)
}

/// Counters of a reliability run (the soak report).
#[derive(Debug, Clone, Default, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Counters {
    pub rounds: u64,
    pub writes: u64,
    /// Final values that did not reach the controller within the deadline after recovery.
    pub lost_writes: u64,
    /// Times the controller saw the Q sequence go backwards (an old value after a newer one).
    pub backwards: u64,
    pub link_flaps: u64,
    /// Bursts of lost device frames (1, 2 or 4 consecutive of every 8).
    pub loss_bursts: u64,
    pub controller_crashes: u64,
    pub device_kills: u64,
    pub floods: u64,
    pub reconnects: u64,
    /// Connect attempts that failed before one succeeded (retried).
    pub connect_retries: u64,
    /// Consumer watchdog expiries seen by the controller (device frames missing).
    pub controller_watchdog_expiries: u64,
    /// The device's own watchdog trips (`GET /api/diag watchdogTrips`, summed over daemon lives).
    pub device_watchdog_trips: u64,
    /// Remanent data read back after a SIGKILL that was neither the old nor the new value.
    pub persistence_corrupt: u64,
    pub persistence_checks: u64,
    /// ARs that ended while no fault was injected (the cycle was not held in time, e.g. CPU
    /// starvation on a loaded machine); the PLC reconnected each time.
    pub unplanned_ar_ends: u64,
    pub last_unplanned_end: String,
    /// Largest lateness of the controller's cyclic thread (its wake-ups), microseconds.
    pub controller_max_tick_late_us: u64,
    /// Daemon restarts (SIGKILL + start).
    pub device_restarts: u64,
    /// Daemon crashes nobody asked for (the process was gone).
    pub unexpected_device_exits: u64,
    /// Device RSS in KiB after warm-up and at the end of the longest daemon life.
    pub rss_start_kib: u64,
    pub rss_end_kib: u64,
    pub rss_max_kib: u64,
    /// Longest daemon life measured for memory growth, seconds.
    pub rss_window_s: u64,
    /// Slowest GET /api/status seen between faults, milliseconds.
    pub api_max_latency_ms: u64,
    pub errors: Vec<String>,
}

/// The PLC-like controller of a rig.
struct Plc {
    ctl: Controller,
    ar: Option<ArHandle>,
}

/// Observations of the sampler thread.
#[derive(Debug, Default)]
struct SeqWatch {
    /// Highest sequence seen since the last reset.
    last: Option<u32>,
    backwards: Vec<(u32, u32)>,
}

/// A lab with a reconnecting controller and the fault rounds.
pub struct Rig {
    // Dropped before the lab: the controller lives in the lab's namespace.
    plc: Option<Plc>,
    current_ar: Arc<Mutex<Option<ArHandle>>>,
    watch: Arc<Mutex<SeqWatch>>,
    stop: Arc<AtomicBool>,
    sampler: Option<std::thread::JoinHandle<()>>,
    pub lab: Lab,
    pub model: DeviceModel,
    /// Cycle in ms and data-hold factor of the AR.
    pub cycle_ms: u16,
    pub data_hold_factor: u16,
    /// The sequence number written last.
    pub seq: u32,
    /// Device watchdog trips of earlier daemon lives.
    trips_before: u64,
    /// The device's IP (changes when a test sets it over DCP).
    pub dev_ip: Ipv4Addr,
    rpc: (Duration, u32),
}

/// Options of a rig.
#[derive(Debug, Clone)]
pub struct RigOptions {
    pub cycle_ms: u16,
    pub data_hold_factor: u16,
    /// Record a pcap on the controller side.
    pub capture: bool,
    /// RPC response timeout and retransmissions of the controller (short values keep a call
    /// to a killed daemon from blocking long).
    pub rpc_timeout: Duration,
    pub rpc_retries: u32,
}

impl Default for RigOptions {
    fn default() -> Self {
        RigOptions {
            cycle_ms: 4,
            data_hold_factor: 3,
            capture: false,
            rpc_timeout: Duration::from_millis(500),
            rpc_retries: 3,
        }
    }
}

impl Rig {
    /// Start the lab (device started automatically) and the controller; not yet connected.
    pub fn start(opts: RigOptions) -> Result<Rig, String> {
        let lab = Lab::start(LabOptions {
            config_xml: Some(CONFIG_XML.to_string()),
            auto_start: true,
            capture: opts.capture,
            ..LabOptions::default()
        })?;
        let model = DeviceConfig::parse(&lab.config_text())
            .map_err(|e| format!("device model: {e}"))?
            .model;
        let mut rig = Rig {
            plc: None,
            current_ar: Arc::new(Mutex::new(None)),
            watch: Arc::new(Mutex::new(SeqWatch::default())),
            stop: Arc::new(AtomicBool::new(false)),
            sampler: None,
            lab,
            model,
            cycle_ms: opts.cycle_ms,
            data_hold_factor: opts.data_hold_factor,
            seq: 0,
            trips_before: 0,
            dev_ip: DEV_IP,
            rpc: (opts.rpc_timeout, opts.rpc_retries),
        };
        rig.wait_api(
            "device started with the link up",
            Duration::from_secs(10),
            |s| s["state"] == "Initialized" && s["linkUp"] == true,
        )?;
        rig.start_controller()?;
        rig.start_sampler();
        Ok(rig)
    }

    fn start_controller(&mut self) -> Result<(), String> {
        let nic = self.lab.controller_nic().to_string();
        let scf = 32;
        let (rpc_timeout, rpc_retries) = self.rpc;
        let ctl = self
            .lab
            .ns_ctl
            .enter(move || {
                let mut c = ControllerConfig::new(&nic);
                c.send_clock_factor = scf;
                c.realtime = RealtimeOptions {
                    fifo_priority: Some(40),
                    lock_memory: false,
                };
                c.rpc_timeout = rpc_timeout;
                c.rpc_retries = rpc_retries;
                Controller::start(c)
            })?
            .map_err(|e| format!("controller start: {e}"))?;
        self.plc = Some(Plc { ctl, ar: None });
        Ok(())
    }

    fn start_sampler(&mut self) {
        let cur = self.current_ar.clone();
        let watch = self.watch.clone();
        let stop = self.stop.clone();
        self.sampler = Some(std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let ar = cur.lock().unwrap_or_else(|p| p.into_inner()).clone();
                if let Some(ar) = ar {
                    if ar.state() == ArState::DataExchange {
                        let i = ar.inputs();
                        let good = i.valid && i.iops.first().is_some_and(|x| x & 0x80 != 0);
                        if let (true, Some(b)) = (good, i.data.get(0..4)) {
                            let v = u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
                            let mut w = watch.lock().unwrap_or_else(|p| p.into_inner());
                            match w.last {
                                Some(l) if v < l => w.backwards.push((l, v)),
                                _ => w.last = Some(v),
                            }
                        }
                    }
                }
                std::thread::sleep(Duration::from_millis(1));
            }
        }));
    }

    /// Forget the sequence seen so far (the device lost its volatile Q area: a daemon restart).
    fn reset_watch(&self) {
        self.watch.lock().unwrap_or_else(|p| p.into_inner()).last = None;
    }

    /// Sequence regressions seen since the last call.
    pub fn take_backwards(&self) -> Vec<(u32, u32)> {
        std::mem::take(
            &mut self
                .watch
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .backwards,
        )
    }

    /// One API call; `(status, body)`.
    pub fn api(&self, method: &str, path: &str, body: Option<Json>) -> Result<(u16, Json), String> {
        let r = self.lab.http(
            method,
            path,
            &[],
            body.map(|b| serde_json::to_vec(&b).expect("JSON serialises")),
        )?;
        let v = serde_json::from_slice(&r.body).unwrap_or(Json::Null);
        Ok((r.status, v))
    }

    pub fn status(&self) -> Result<Json, String> {
        self.api("GET", "/api/status", None).map(|(_, v)| v)
    }

    /// Poll GET /api/status until `pred` holds.
    pub fn wait_api(
        &self,
        what: &str,
        within: Duration,
        pred: impl Fn(&Json) -> bool,
    ) -> Result<Json, String> {
        let deadline = Instant::now() + within;
        loop {
            let last = self.status();
            if let Ok(v) = &last {
                if pred(v) {
                    return Ok(v.clone());
                }
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "{what}: not within {within:?}; last status {last:?}"
                ));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn plc(&mut self) -> Result<&mut Plc, String> {
        self.plc.as_mut().ok_or_else(|| "controller stopped".into())
    }

    /// The AR handle, when connected.
    pub fn ar(&self) -> Option<ArHandle> {
        self.plc.as_ref().and_then(|p| p.ar.clone())
    }

    pub fn controller(&self) -> Option<&Controller> {
        self.plc.as_ref().map(|p| &p.ctl)
    }

    /// True when both sides are in data exchange.
    pub fn in_exchange(&self) -> bool {
        self.ar()
            .is_some_and(|a| a.state() == ArState::DataExchange)
            && self.status().is_ok_and(|s| s["state"] == "DataExchange")
    }

    fn drop_ar(&mut self, c: &mut Counters) {
        *self.current_ar.lock().unwrap_or_else(|p| p.into_inner()) = None;
        if let Some(p) = self.plc.as_mut() {
            if let Some(a) = p.ar.take() {
                let st = a.status();
                c.controller_watchdog_expiries += st.watchdog_expiries;
                // An AR that already ended is just forgotten (its ERR-RTA would be stale).
                if st.state == ArState::DataExchange {
                    a.abort();
                }
            }
        }
    }

    /// Orderly end of the AR (Release), when there is one.
    pub fn release(&mut self) -> Result<(), String> {
        *self.current_ar.lock().unwrap_or_else(|p| p.into_inner()) = None;
        if let Some(a) = self.plc.as_mut().and_then(|p| p.ar.take()) {
            if a.state() == ArState::DataExchange {
                a.release().map_err(|e| format!("release: {e}"))?;
            }
        }
        Ok(())
    }

    /// Connect (again) until data exchange, as a PLC does: retry until `within` runs out.
    pub fn connect(&mut self, within: Duration, c: &mut Counters) -> Result<(), String> {
        self.drop_ar(c);
        let deadline = Instant::now() + within;
        let mut cfg = ArConfig::new(self.model.clone());
        cfg.device_ip = Some(self.dev_ip);
        cfg.timing.reduction_ratio = self.cycle_ms;
        cfg.timing.watchdog_factor = self.data_hold_factor;
        cfg.timing.data_hold_factor = self.data_hold_factor;
        cfg.app_ready_timeout = Duration::from_secs(3);
        loop {
            let last = match self.plc()?.ctl.connect(cfg.clone()) {
                Ok(h) => {
                    *self.current_ar.lock().unwrap_or_else(|p| p.into_inner()) = Some(h.clone());
                    self.plc()?.ar = Some(h);
                    c.reconnects += 1;
                    return Ok(());
                }
                Err(e) => e.to_string(),
            };
            c.connect_retries += 1;
            if Instant::now() >= deadline {
                return Err(format!(
                    "no data exchange within {within:?}: last connect error: {last}"
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Connect unless both sides are already in data exchange.
    pub fn ensure_connected(&mut self, within: Duration, c: &mut Counters) -> Result<(), String> {
        if self.in_exchange() {
            return Ok(());
        }
        self.connect(within, c)
    }

    /// POST /api/io with the sequence number `seq` at Q offset 0.
    pub fn write_seq(&mut self, seq: u32, c: &mut Counters) -> Result<Json, String> {
        let (st, v) = self.api(
            "POST",
            "/api/io",
            Some(json!({"offset": 0, "data": hex::encode(seq.to_be_bytes())})),
        )?;
        if st != 200 || v["queued"] != true {
            return Err(format!("POST /api/io {seq}: HTTP {st}: {v}"));
        }
        self.seq = seq;
        c.writes += 1;
        Ok(v)
    }

    /// Wait until the controller receives `seq`.
    pub fn expect_seq(&self, seq: u32, within: Duration) -> Result<(), String> {
        let want = seq.to_be_bytes();
        let deadline = Instant::now() + within;
        loop {
            let ar = self.ar().ok_or("no AR")?;
            let i = ar.inputs();
            if i.valid && i.data.get(0..4) == Some(&want[..]) {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "controller inputs {} after {within:?}, expected {seq:08x} (AR {:?})",
                    hex::encode(&i.data),
                    ar.state()
                ));
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// Wait until the controller receives `seq`. When the AR ends meanwhile without a fault
    /// being injected (an unplanned end: a cycle not held in time), the PLC reconnects and the
    /// wait goes on: the value must still arrive. Only a value that never arrives is lost.
    pub fn await_seq(&mut self, seq: u32, c: &mut Counters) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let e = match self.expect_seq(seq, Duration::from_secs(3)) {
                Ok(()) => return Ok(()),
                Err(e) => e,
            };
            let ended = !self
                .ar()
                .is_some_and(|a| a.state() == ArState::DataExchange);
            if !ended || Instant::now() >= deadline {
                c.lost_writes += 1;
                return Err(format!("write {seq} lost: {e}"));
            }
            c.unplanned_ar_ends += 1;
            if let Some(ar) = self.ar() {
                c.last_unplanned_end = format!("{:?}", ar.state());
            }
            if let Some(ctl) = self.controller() {
                c.controller_max_tick_late_us = c
                    .controller_max_tick_late_us
                    .max(ctl.tick_stats().max_lateness_us);
            }
            self.connect(Duration::from_secs(20), c)?;
        }
    }

    /// Write the next sequence number in data exchange and see it arrive.
    pub fn write_and_check(&mut self, c: &mut Counters) -> Result<(), String> {
        let s = self.seq + 1;
        self.write_seq(s, c)?;
        self.await_seq(s, c)
    }

    /// Collect the sequence regressions of the sampler into the counters.
    fn harvest(&self, c: &mut Counters) -> Result<(), String> {
        let b = self.take_backwards();
        if !b.is_empty() {
            c.backwards += b.len() as u64;
            return Err(format!(
                "the Q sequence went backwards at the controller: {b:?}"
            ));
        }
        Ok(())
    }

    /// One cable pull: connect, write in data exchange, pull the link at a random moment,
    /// write 1..=3 values during the outage, plug back, reconnect, and require the last value
    /// to arrive (and the sequence never to go backwards).
    pub fn flap_round(&mut self, rng: &mut Rng, c: &mut Counters) -> Result<(), String> {
        self.ensure_connected(Duration::from_secs(20), c)?;
        self.write_and_check(c)?;
        // A random moment relative to the cycle and to the last write (the subject).
        std::thread::sleep(Duration::from_micros(rng.range(0, 20_000)));
        self.lab.set_link(false)?;
        c.link_flaps += 1;
        let n = rng.range(1, 3);
        for k in 0..n {
            let s = self.seq + 1;
            self.write_seq(s, c)?;
            if k + 1 < n {
                std::thread::sleep(Duration::from_micros(rng.range(0, 5_000)));
            }
        }
        std::thread::sleep(Duration::from_micros(rng.range(0, 30_000)));
        self.lab.set_link(true)?;
        self.wait_api("link up again", Duration::from_secs(5), |s| {
            s["linkUp"] == true
        })?;
        self.ensure_connected(Duration::from_secs(20), c)?;
        let last = self.seq;
        self.await_seq(last, c)
            .map_err(|e| format!("a write made during the outage: {e}"))?;
        c.rounds += 1;
        self.harvest(c)
    }

    /// The controller process dies at a random moment: the in-process controller stops without
    /// Release (its frames just stop), then a real `pn-controller connect-and-run` process is
    /// started and killed with SIGKILL at a random moment (while connecting or in data
    /// exchange); a new controller connects and the value written meanwhile must arrive.
    pub fn crash_controller(&mut self, rng: &mut Rng, c: &mut Counters) -> Result<(), String> {
        self.ensure_connected(Duration::from_secs(20), c)?;
        self.write_and_check(c)?;
        std::thread::sleep(Duration::from_micros(rng.range(0, 20_000)));
        *self.current_ar.lock().unwrap_or_else(|p| p.into_inner()) = None;
        if let Some(p) = self.plc.take() {
            if let Some(a) = &p.ar {
                c.controller_watchdog_expiries += a.status().watchdog_expiries;
            }
            c.controller_max_tick_late_us = c
                .controller_max_tick_late_us
                .max(p.ctl.tick_stats().max_lateness_us);
            p.ctl.shutdown();
        }
        c.controller_crashes += 1;
        // The device notices (data-hold watchdog) and waits for a controller.
        let s = self.seq + 1;
        self.write_seq(s, c)?;
        if let Ok(bin) = controller_binary() {
            let mut child = self
                .lab
                .ns_ctl
                .command(&bin)
                .args([
                    "-i",
                    self.lab.controller_nic(),
                    "connect-and-run",
                    "--config",
                ])
                .arg(self.lab.config_path())
                .args([
                    "--ip",
                    &DEV_IP.to_string(),
                    "--send-clock-ms",
                    "1",
                    "--reduction-ratio",
                    &self.cycle_ms.to_string(),
                    "--data-hold-factor",
                    &self.data_hold_factor.to_string(),
                    "--duration",
                    "30",
                ])
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .map_err(|e| format!("cannot start {}: {e}", bin.display()))?;
            std::thread::sleep(Duration::from_millis(rng.range(0, 2_000)));
            // SAFETY: kill(2) on our own child (`ip netns exec` execs the program in place).
            unsafe {
                libc::kill(child.id() as i32, libc::SIGKILL);
            }
            let _ = child.wait();
            c.controller_crashes += 1;
        }
        self.start_controller()?;
        self.connect(Duration::from_secs(30), c)?;
        self.await_seq(s, c)
            .map_err(|e| format!("a write made while the controller was down: {e}"))?;
        c.rounds += 1;
        self.harvest(c)
    }

    /// Lose device frames for `dur` with a CycleCounter pattern (see [`Rig::drop_pattern`]),
    /// then stop; the AR may end (when the data-hold time runs out) and must come back (the
    /// PLC reconnects). Returns the ARs that ended during the burst.
    pub fn loss_burst(
        &mut self,
        mask: u16,
        dur: Duration,
        c: &mut Counters,
    ) -> Result<u64, String> {
        self.ensure_connected(Duration::from_secs(20), c)?;
        let cur = |r: &Rig| r.ar().map_or(0, |a| a.status().watchdog_expiries);
        let base = c.controller_watchdog_expiries + cur(self);
        self.drop_pattern(mask, 0)?;
        c.loss_bursts += 1;
        let end = Instant::now() + dur;
        while Instant::now() < end {
            if !self
                .ar()
                .is_some_and(|a| a.state() == ArState::DataExchange)
            {
                let left = end.saturating_duration_since(Instant::now());
                let _ = self.connect(left.max(Duration::from_millis(100)), c);
                continue;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let expiries = (c.controller_watchdog_expiries + cur(self)).saturating_sub(base);
        self.clear_impairment()?;
        self.ensure_connected(Duration::from_secs(20), c)?;
        self.write_and_check(c)?;
        c.rounds += 1;
        self.harvest(c)?;
        Ok(expiries)
    }

    /// Drop the device's cyclic frames whose CycleCounter matches `value` under `mask` on the
    /// device's egress (tc clsact + u32 + mirred redirect into an unconnected veth: this
    /// kernel has no sch_netem and no gact/police actions). The CycleCounter advances by
    /// SendClockFactor x ReductionRatio (= 128 at 4 ms) per frame, so `mask 0x0380 value 0`
    /// drops 1 frame of every 8, `0x0300` 2 consecutive of 8, `0x0200` 4 consecutive of 8.
    pub fn drop_pattern(&self, mask: u16, value: u16) -> Result<(), String> {
        self.clear_impairment()?;
        let ar = self.ar().ok_or("no AR")?;
        let c_sdu = ar.layout().input.data_length as usize;
        let fid = ar.status().input_frame_id;
        let ns = &self.lab.ns_dev;
        let a = self.lab.nic().to_string();
        let sink = self.sink_name();
        if ns.exec_ok(&["ip", "link", "show", &sink]).is_err() {
            let peer = format!("{sink}p");
            ns.exec_ok(&[
                "ip", "link", "add", &sink, "type", "veth", "peer", "name", &peer,
            ])?;
            ns.exec_ok(&["ip", "link", "set", &sink, "up"])?;
            ns.exec_ok(&["ip", "link", "set", &peer, "up"])?;
        }
        ns.exec_ok(&["tc", "qdisc", "add", "dev", &a, "clsact"])?;
        let val = format!("{value:#06x}");
        let msk = format!("{mask:#06x}");
        let fid = format!("{fid:#06x}");
        // The u32 offsets count from the network header: right after the EtherType, i.e. at
        // the VLAN TCI of a tagged frame, at the FrameID of an untagged one.
        for (prio, rule) in [
            (
                "1",
                vec![
                    "match", "u16", "0x8892", "0xffff", "at", "2", "match", "u16", &fid, "0xffff",
                    "at", "4",
                ],
            ),
            ("2", vec!["match", "u16", &fid, "0xffff", "at", "0"]),
        ] {
            let cc_at = if prio == "1" {
                4 + 2 + c_sdu
            } else {
                2 + c_sdu
            }
            .to_string();
            let mut argv = vec![
                "tc", "filter", "add", "dev", &a, "egress", "protocol", "all", "prio", prio, "u32",
            ];
            argv.extend(rule);
            argv.extend(["match", "u16", &val, &msk, "at", &cc_at]);
            argv.extend(["action", "mirred", "egress", "redirect", "dev", &sink]);
            ns.exec_ok(&argv)?;
        }
        Ok(())
    }

    fn sink_name(&self) -> String {
        format!("rs{}", self.lab.nic().trim_start_matches("pla"))
    }

    /// Remove any impairment of the device's egress.
    pub fn clear_impairment(&self) -> Result<(), String> {
        let _ = self
            .lab
            .ns_dev
            .exec_ok(&["tc", "qdisc", "del", "dev", self.lab.nic(), "clsact"]);
        Ok(())
    }

    /// Frames the sink received (the frames the impairment dropped).
    pub fn impairment_drops(&self) -> u64 {
        let p = format!("{}p", self.sink_name());
        self.lab
            .ns_dev
            .exec_ok(&["cat", &format!("/sys/class/net/{p}/statistics/rx_packets")])
            .ok()
            .and_then(|t| t.trim().parse().ok())
            .unwrap_or(0)
    }

    /// The daemon's pid (from GET /api/info).
    pub fn device_pid(&self) -> Option<u32> {
        self.api("GET", "/api/info", None)
            .ok()
            .and_then(|(_, v)| v["pid"].as_u64())
            .map(|p| p as u32)
    }

    /// Resident set size of the daemon in KiB.
    pub fn device_rss_kib(&self) -> Option<u64> {
        let pid = self.device_pid()?;
        let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
        s.lines()
            .find(|l| l.starts_with("VmRSS:"))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|n| n.parse().ok())
    }

    /// The device's watchdog trips in this daemon life.
    pub fn device_trips(&self) -> u64 {
        self.api("GET", "/api/diag", None)
            .ok()
            .and_then(|(_, v)| v["watchdogTrips"].as_u64())
            .unwrap_or(0)
    }

    /// Device watchdog trips over all daemon lives.
    pub fn device_trips_total(&self) -> u64 {
        self.trips_before + self.device_trips()
    }

    /// SIGKILL the daemon and start it again on the same persistence directory; the Q area
    /// is volatile, so the sequence watch starts over and the current value is written again.
    pub fn kill_device(&mut self, c: &mut Counters) -> Result<(), String> {
        self.trips_before += self.device_trips();
        self.drop_ar(c);
        self.lab.restart(true, None, None)?;
        self.reset_watch();
        c.device_kills += 1;
        c.device_restarts += 1;
        self.wait_api("device started again", Duration::from_secs(15), |s| {
            s["state"] == "Initialized" && s["linkUp"] == true
        })?;
        Ok(())
    }

    /// A bounded flood from the controller namespace while the AR runs. Returns the number
    /// of frames (or datagrams) sent.
    pub fn flood(
        &self,
        kind: FloodKind,
        rate_per_s: u64,
        dur: Duration,
        rng: &mut Rng,
    ) -> Result<u64, String> {
        let nic = self.lab.controller_nic().to_string();
        let dev_mac = self
            .ar()
            .map(|a| a.status().device_mac)
            .and_then(|m| pn_controller::parse_mac(&m))
            .map(|m| m.0)
            .unwrap_or([0xff; 6]);
        let out_id = self.ar().map_or(0x8001, |a| a.status().output_frame_id);
        let seed = rng.next_u64();
        self.lab.ns_ctl.enter(move || -> Result<u64, String> {
            let mut rng = Rng::new(seed);
            let info = InterfaceInfo::lookup(&nic).map_err(|e| format!("{nic}: {e}"))?;
            let raw = RawSocket::open(&info).map_err(|e| format!("raw socket: {e}"))?;
            let udp = UdpSocket::bind(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0))
                .map_err(|e| e.to_string())?;
            let src = info.mac.0;
            let total = (rate_per_s as u128 * dur.as_millis() / 1000) as u64;
            let start = Instant::now();
            let mut sent = 0u64;
            let garbage = pn_controller::faults::malformed_rpc_payloads();
            let bad_dcp = pn_controller::faults::malformed_dcp_frames(src);
            while sent < total && start.elapsed() < dur + Duration::from_secs(2) {
                // Pace: never ahead of the rate.
                let due = Duration::from_nanos(sent * 1_000_000_000 / rate_per_s.max(1));
                if let Some(w) = due.checked_sub(start.elapsed()) {
                    if w > Duration::from_micros(200) {
                        std::thread::sleep(w);
                    }
                }
                let r = match kind {
                    FloodKind::DcpIdentify => {
                        if sent % 16 == 15 {
                            let (_, f) = &bad_dcp[(sent / 16) as usize % bad_dcp.len()];
                            raw.send(f)
                        } else {
                            raw.send(&dcp_identify_all(src, rng.next_u64() as u32))
                        }
                    }
                    FloodKind::RpcGarbage => {
                        let p = if sent % 2 == 0 {
                            garbage[(sent / 2) as usize % garbage.len()].1.clone()
                        } else {
                            let n = rng.range(0, 600) as usize;
                            rng.bytes(n)
                        };
                        udp.send_to(&p, SocketAddrV4::new(DEV_IP, 34964))
                            .map(|_| ())
                    }
                    FloodKind::RtUnknown => raw.send(&rt_unknown(src, dev_mac, &mut rng)),
                    FloodKind::RtMalformed => {
                        raw.send(&rt_malformed(src, dev_mac, out_id, &mut rng))
                    }
                    FloodKind::Lldp => raw.send(&lldp_frame(src, &mut rng)),
                };
                // A full socket buffer under a flood is expected: count what went out.
                if r.is_ok() {
                    sent += 1;
                } else {
                    std::thread::yield_now();
                }
            }
            Ok(sent)
        })?
    }
}

impl Drop for Rig {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.sampler.take() {
            let _ = t.join();
        }
        *self.current_ar.lock().unwrap_or_else(|p| p.into_inner()) = None;
        if let Some(p) = self.plc.take() {
            if let Some(a) = p.ar {
                a.abort();
            }
            p.ctl.shutdown();
        }
    }
}

/// A DCP Set client without retransmissions (a request to a killed daemon fails fast), on its
/// own raw socket in the controller namespace.
pub struct DcpSetter {
    sock: RawSocket,
    src: [u8; 6],
    xid: u32,
}

impl DcpSetter {
    pub fn open(ns: &pn_testkit::netns::NetNs, nic: &str) -> Result<DcpSetter, String> {
        let nic = nic.to_string();
        ns.enter(move || -> Result<DcpSetter, String> {
            let info = InterfaceInfo::lookup(&nic).map_err(|e| format!("{nic}: {e}"))?;
            let sock = RawSocket::open(&info).map_err(|e| format!("raw socket: {e}"))?;
            Ok(DcpSetter {
                sock,
                src: info.mac.0,
                xid: 0x5e70_0000,
            })
        })?
    }

    /// Send one Set request to `mac` and wait up to `timeout` for its response: `Ok(true)` when
    /// every block was accepted, `Ok(false)` when refused, `Err` on no answer.
    pub fn set(
        &mut self,
        mac: [u8; 6],
        value: pn_protocol::wire::dcp::DcpValue,
        permanent: bool,
        timeout: Duration,
    ) -> Result<bool, String> {
        use pn_protocol::wire::dcp::{BlockError, DcpBlock, DcpRepr, DcpValue};
        self.xid = self.xid.wrapping_add(1);
        let req = DcpRepr::set_request(
            self.xid,
            vec![DcpBlock::with_qualifier(value, u16::from(permanent))],
        );
        let frame = req
            .build_frame(
                pn_controller::MacAddr(mac),
                pn_controller::MacAddr(self.src),
                None,
            )
            .map_err(|e| e.to_string())?;
        self.sock.send(&frame).map_err(|e| e.to_string())?;
        let deadline = Instant::now() + timeout;
        let mut buf = vec![0u8; 2048];
        while Instant::now() < deadline {
            let left = deadline.saturating_duration_since(Instant::now());
            let Ok(Some(n)) = self.sock.recv(&mut buf, left) else {
                continue;
            };
            let f = &buf[..n];
            if f.get(6..12) != Some(&mac[..]) {
                continue;
            }
            let Ok((eth, payload)) = pn_protocol::wire::ethernet::EthernetRepr::parse_frame(f)
            else {
                continue;
            };
            if eth.ethertype != 0x8892 || payload.get(0..2) != Some(&[0xFE, 0xFD][..]) {
                continue;
            }
            let Ok(d) = DcpRepr::parse(&payload[2..]) else {
                continue;
            };
            if d.xid != self.xid || !d.service_type.is_response() {
                continue;
            }
            return Ok(d.blocks.iter().all(|b| match &b.value {
                DcpValue::Response { error, .. } => *error == BlockError::OK,
                _ => true,
            }));
        }
        Err(format!("no DCP Set response within {timeout:?}"))
    }
}

/// Kinds of flood.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FloodKind {
    /// DCP Identify All (answered by the device), with malformed DCP requests mixed in.
    DcpIdentify,
    /// UDP datagrams to the PNIO-CM port: malformed RPC headers and random bytes.
    RpcGarbage,
    /// RT frames with FrameIDs nobody agreed on (cyclic range and reserved ranges).
    RtUnknown,
    /// RT frames with the AR's output FrameID but truncated, TransferStatus set or DataValid off.
    RtMalformed,
    /// LLDP frames from ever new chassis IDs.
    Lldp,
}

impl FloodKind {
    pub const ALL: [FloodKind; 5] = [
        FloodKind::DcpIdentify,
        FloodKind::RpcGarbage,
        FloodKind::RtUnknown,
        FloodKind::RtMalformed,
        FloodKind::Lldp,
    ];
    pub fn name(self) -> &'static str {
        match self {
            FloodKind::DcpIdentify => "DCP identify storm",
            FloodKind::RpcGarbage => "RPC garbage",
            FloodKind::RtUnknown => "unknown RT frames",
            FloodKind::RtMalformed => "malformed RT frames",
            FloodKind::Lldp => "LLDP flood",
        }
    }
}

fn eth_header(dst: [u8; 6], src: [u8; 6], vlan: bool, ethertype: u16) -> Vec<u8> {
    let mut f = Vec::with_capacity(128);
    f.extend_from_slice(&dst);
    f.extend_from_slice(&src);
    if vlan {
        f.extend_from_slice(&[0x81, 0x00, 0xC0, 0x00]);
    }
    f.extend_from_slice(&ethertype.to_be_bytes());
    f
}

fn pad(mut f: Vec<u8>) -> Vec<u8> {
    if f.len() < 60 {
        f.resize(60, 0);
    }
    f
}

/// DCP Identify All request (FrameID 0xFEFE, ResponseDelay 1).
fn dcp_identify_all(src: [u8; 6], xid: u32) -> Vec<u8> {
    let mut f = eth_header([0x01, 0x0e, 0xcf, 0, 0, 0], src, false, 0x8892);
    f.extend_from_slice(&[0xFE, 0xFE, 0x05, 0x00]);
    f.extend_from_slice(&xid.to_be_bytes());
    // ResponseDelay 1, DCPDataLength 4, AllSelector block (0xFF 0xFF, length 0).
    f.extend_from_slice(&[0x00, 0x01, 0x00, 0x04, 0xFF, 0xFF, 0x00, 0x00]);
    pad(f)
}

fn rt_unknown(src: [u8; 6], dev: [u8; 6], rng: &mut Rng) -> Vec<u8> {
    // Cyclic-range FrameIDs nobody uses, and reserved/unassigned ranges.
    let ids = [
        0x8123u16, 0xBFFF, 0xC3A0, 0x0100, 0x7FFF, 0xFC02, 0xFF40, 0xFEFA,
    ];
    let id = ids[rng.range(0, ids.len() as u64 - 1) as usize];
    let dst = if rng.next_u64() % 2 == 0 {
        dev
    } else {
        [0x01, 0x0e, 0xcf, 0, 0, 0]
    };
    let mut f = eth_header(dst, src, rng.next_u64() % 2 == 0, 0x8892);
    f.extend_from_slice(&id.to_be_bytes());
    let n = rng.range(0, 200) as usize;
    f.extend(rng.bytes(n));
    pad(f)
}

fn rt_malformed(src: [u8; 6], dev: [u8; 6], out_id: u16, rng: &mut Rng) -> Vec<u8> {
    let mut f = eth_header(dev, src, true, 0x8892);
    f.extend_from_slice(&out_id.to_be_bytes());
    match rng.range(0, 3) {
        // Truncated: a few bytes of C_SDU, no APDU status.
        0 => {
            let n = rng.range(0, 10) as usize;
            f.extend(rng.bytes(n));
            f
        }
        // Full length, TransferStatus non-zero.
        1 => {
            f.extend([0x80u8; 40]);
            f.extend_from_slice(&[rng.next_u64() as u8, rng.next_u64() as u8, 0x35, 0x01]);
            f
        }
        // Full length, DataValid off, a wild CycleCounter.
        2 => {
            f.extend([0x80u8; 40]);
            f.extend_from_slice(&[rng.next_u64() as u8, rng.next_u64() as u8, 0x31, 0x00]);
            f
        }
        // Oversized: more than the C_SDU, random content.
        _ => {
            let n = rng.range(100, 1400) as usize;
            f.extend(rng.bytes(n));
            f
        }
    }
}

fn tlv(out: &mut Vec<u8>, t: u8, v: &[u8]) {
    let h = (u16::from(t) << 9) | (v.len() as u16 & 0x1FF);
    out.extend_from_slice(&h.to_be_bytes());
    out.extend_from_slice(v);
}

fn lldp_frame(src: [u8; 6], rng: &mut Rng) -> Vec<u8> {
    let mut f = eth_header([0x01, 0x80, 0xc2, 0, 0, 0x0e], src, false, 0x88cc);
    let chassis = format!("flood-{:016x}", rng.next_u64());
    let mut c = vec![7u8];
    c.extend_from_slice(chassis.as_bytes());
    tlv(&mut f, 1, &c);
    let mut p = vec![7u8];
    p.extend_from_slice(
        format!("port-{:03}.{:05}", rng.range(0, 999), rng.range(0, 99999)).as_bytes(),
    );
    tlv(&mut f, 2, &p);
    tlv(&mut f, 3, &120u16.to_be_bytes());
    if rng.next_u64() % 4 == 0 {
        // A TLV whose length runs past the frame.
        f.extend_from_slice(&[0xFE, 0xFF, 0x00, 0x0E]);
    } else {
        tlv(&mut f, 0, &[]);
    }
    pad(f)
}

/// Receive timestamps of the device's cyclic frames, taken by a raw socket in the controller
/// namespace (a SCHED_FIFO thread), for cycle jitter.
pub struct CycleProbe {
    stop: Arc<AtomicBool>,
    stamps: Arc<Mutex<Vec<(u64, u16)>>>,
    frames: Arc<AtomicU64>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// Statistics of the intervals between received cyclic frames.
#[derive(Debug, Clone, Default, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Jitter {
    pub frames: u64,
    pub mean_us: f64,
    pub min_us: f64,
    pub max_us: f64,
    /// 99th percentile of |interval - cycle|.
    pub p99_dev_us: f64,
    /// Largest |interval - cycle|.
    pub max_dev_us: f64,
    /// Intervals longer than 1.5 cycles (a frame missing or late by half a cycle).
    pub late: u64,
}

impl CycleProbe {
    /// Start recording frames from `dev_mac` with FrameID `frame_id` on `nic` inside `ns`:
    /// (receive time in ns of CLOCK_MONOTONIC, CycleCounter read after `c_sdu_len` bytes).
    pub fn start(
        ns: &pn_testkit::netns::NetNs,
        nic: &str,
        dev_mac: [u8; 6],
        frame_id: u16,
        c_sdu_len: usize,
    ) -> Result<CycleProbe, String> {
        let stop = Arc::new(AtomicBool::new(false));
        let stamps = Arc::new(Mutex::new(Vec::with_capacity(1 << 16)));
        let frames = Arc::new(AtomicU64::new(0));
        let (s2, st2, f2) = (stop.clone(), stamps.clone(), frames.clone());
        let path = ns.path();
        let nic = nic.to_string();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let thread = std::thread::spawn(move || {
            let open = || -> Result<RawSocket, String> {
                pn_testkit::netns::join_netns(&path)?;
                let info = InterfaceInfo::lookup(&nic).map_err(|e| e.to_string())?;
                RawSocket::open(&info).map_err(|e| e.to_string())
            };
            let sock = match open() {
                Ok(s) => {
                    let _ = ready_tx.send(Ok(()));
                    s
                }
                Err(e) => {
                    let _ = ready_tx.send(Err(e));
                    return;
                }
            };
            pn_controller::rtsched::apply_to_current_thread(RealtimeOptions {
                fifo_priority: Some(45),
                lock_memory: false,
            });
            let mut buf = vec![0u8; 2048];
            while !s2.load(Ordering::Relaxed) {
                if let Ok(Some(n)) = sock.recv(&mut buf, Duration::from_millis(20)) {
                    let t = pn_controller::rtsched::now().0;
                    let f = &buf[..n];
                    if f.get(6..12) != Some(&dev_mac[..]) {
                        continue;
                    }
                    let off = if f.get(12..14) == Some(&[0x81, 0x00]) {
                        16
                    } else {
                        12
                    };
                    if f.get(off..off + 2) != Some(&[0x88, 0x92])
                        || f.get(off + 2..off + 4) != Some(&frame_id.to_be_bytes()[..])
                    {
                        continue;
                    }
                    let cc_at = off + 4 + c_sdu_len;
                    let cc = f
                        .get(cc_at..cc_at + 2)
                        .map_or(0, |b| u16::from_be_bytes([b[0], b[1]]));
                    f2.fetch_add(1, Ordering::Relaxed);
                    st2.lock().unwrap_or_else(|p| p.into_inner()).push((t, cc));
                }
            }
        });
        ready_rx
            .recv()
            .map_err(|_| "probe thread died".to_string())??;
        Ok(CycleProbe {
            stop,
            stamps,
            frames,
            thread: Some(thread),
        })
    }

    /// Take the timestamps recorded so far (and start a new window).
    pub fn take(&self) -> Vec<(u64, u16)> {
        std::mem::take(&mut *self.stamps.lock().unwrap_or_else(|p| p.into_inner()))
    }

    pub fn frames(&self) -> u64 {
        self.frames.load(Ordering::Relaxed)
    }
}

impl Drop for CycleProbe {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Interval statistics of `stamps` (ns) against the nominal `cycle`.
pub fn jitter(stamps: &[u64], cycle: Duration) -> Jitter {
    let cyc = cycle.as_nanos() as f64;
    let iv: Vec<f64> = stamps
        .windows(2)
        .map(|w| w[1].saturating_sub(w[0]) as f64)
        .collect();
    if iv.is_empty() {
        return Jitter {
            frames: stamps.len() as u64,
            ..Jitter::default()
        };
    }
    let mut dev: Vec<f64> = iv.iter().map(|x| (x - cyc).abs()).collect();
    dev.sort_by(|a, b| a.total_cmp(b));
    let p99 = dev[((dev.len() as f64 * 0.99) as usize).min(dev.len() - 1)];
    Jitter {
        frames: stamps.len() as u64,
        mean_us: iv.iter().sum::<f64>() / iv.len() as f64 / 1000.0,
        min_us: iv.iter().cloned().fold(f64::MAX, f64::min) / 1000.0,
        max_us: iv.iter().cloned().fold(0.0, f64::max) / 1000.0,
        p99_dev_us: p99 / 1000.0,
        max_dev_us: dev[dev.len() - 1] / 1000.0,
        late: iv.iter().filter(|x| **x > cyc * 1.5).count() as u64,
    }
}

/// Locate the `pn-controller` CLI: `$PN_CONTROLLER_BIN`, else next to the running executable.
pub fn controller_binary() -> Result<std::path::PathBuf, String> {
    if let Ok(p) = std::env::var("PN_CONTROLLER_BIN") {
        return Ok(p.into());
    }
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    exe.ancestors()
        .skip(1)
        .take(3)
        .map(|d| d.join("pn-controller"))
        .find(|p| p.is_file())
        .ok_or_else(|| "pn-controller binary not found (cargo build -p pn-controller)".into())
}

/// Options of the soak run.
#[derive(Debug, Clone)]
pub struct SoakOptions {
    pub duration: Duration,
    pub seed: u64,
}

/// The long run: device and controller in data exchange, a random fault every round (link
/// flap with writes, frame-loss burst, controller crash, device SIGKILL, flood), writes checked
/// between faults; counters at the end. Progress lines go to stderr.
pub fn run(opts: &SoakOptions) -> Result<Counters, String> {
    let mut rng = Rng::new(opts.seed);
    let mut c = Counters::default();
    let mut rig = Rig::start(RigOptions::default())?;
    rig.connect(Duration::from_secs(20), &mut c)?;
    let t0 = Instant::now();
    // Memory: sampled after warm-up; the window restarts when the daemon is killed, and the
    // longest window is reported.
    let mut life_start = Instant::now();
    let mut rss_first: Option<u64> = None;
    let mut last_report = Instant::now();
    while t0.elapsed() < opts.duration {
        if rss_first.is_none() && life_start.elapsed() > Duration::from_secs(20) {
            rss_first = rig.device_rss_kib();
        }
        let pick = rng.range(0, 99);
        let r = if pick < 45 {
            rig.flap_round(&mut rng, &mut c)
        } else if pick < 65 {
            let mask = [0x0380u16, 0x0300, 0x0200][rng.range(0, 2) as usize];
            rig.loss_burst(mask, Duration::from_millis(rng.range(500, 3000)), &mut c)
                .map(|_| ())
        } else if pick < 78 {
            rig.crash_controller(&mut rng, &mut c)
        } else if pick < 88 {
            let kind = FloodKind::ALL[rng.range(0, 4) as usize];
            c.floods += 1;
            rig.ensure_connected(Duration::from_secs(20), &mut c)
                .and_then(|_| {
                    rig.flood(
                        kind,
                        5_000,
                        Duration::from_millis(rng.range(500, 2000)),
                        &mut rng,
                    )
                })
                .and_then(|_| rig.write_and_check(&mut c))
                .and_then(|_| {
                    c.rounds += 1;
                    rig.harvest(&mut c)
                })
        } else {
            // Device SIGKILL (not too often, so that memory is watched over long lives).
            let min_life = (opts.duration / 10).min(Duration::from_secs(300));
            if life_start.elapsed() > min_life {
                if let (Some(a), Some(b)) = (rss_first, rig.device_rss_kib()) {
                    let w = life_start.elapsed().as_secs();
                    if w > c.rss_window_s {
                        c.rss_window_s = w;
                        c.rss_start_kib = a;
                        c.rss_end_kib = b;
                    }
                }
                let r = rig.kill_device(&mut c).and_then(|_| {
                    rig.connect(Duration::from_secs(20), &mut c)?;
                    rig.write_and_check(&mut c)
                });
                life_start = Instant::now();
                rss_first = None;
                r
            } else {
                rig.ensure_connected(Duration::from_secs(20), &mut c)
                    .and_then(|_| rig.write_and_check(&mut c))
            }
        };
        if let Err(e) = r {
            let log = rig.lab.device_log();
            let tail: Vec<&str> = log.lines().rev().take(12).collect();
            eprintln!(
                "soak: round failed at {} s: {e}\n  device log (last lines):\n    {}",
                t0.elapsed().as_secs(),
                tail.into_iter().rev().collect::<Vec<_>>().join("\n    ")
            );
            c.errors.push(e);
            if c.errors.len() > 50 {
                return Err("more than 50 failed rounds; stopping".into());
            }
            // Recover: whatever state, get back into data exchange.
            let _ = rig.clear_impairment();
            let _ = rig.lab.set_link(true);
            if rig.device_pid().is_none() {
                c.unexpected_device_exits += 1;
                let _ = rig.kill_device(&mut c);
            }
            let _ = rig.connect(Duration::from_secs(30), &mut c);
        }
        let t = Instant::now();
        let _ = rig.status();
        c.api_max_latency_ms = c.api_max_latency_ms.max(t.elapsed().as_millis() as u64);
        if let Some(r) = rig.device_rss_kib() {
            c.rss_max_kib = c.rss_max_kib.max(r);
        }
        if last_report.elapsed() > Duration::from_secs(60) {
            last_report = Instant::now();
            eprintln!(
                "soak: {:>4} s  rounds {}  writes {}  lost {}  backwards {}  flaps {}  loss {}  ctl crashes {}  kills {}  floods {}  unplanned AR ends {}  errors {}",
                t0.elapsed().as_secs(),
                c.rounds,
                c.writes,
                c.lost_writes,
                c.backwards,
                c.link_flaps,
                c.loss_bursts,
                c.controller_crashes,
                c.device_kills,
                c.floods,
                c.unplanned_ar_ends,
                c.errors.len()
            );
        }
    }
    if let (Some(a), Some(b)) = (rss_first, rig.device_rss_kib()) {
        let w = life_start.elapsed().as_secs();
        if w > c.rss_window_s {
            c.rss_window_s = w;
            c.rss_start_kib = a;
            c.rss_end_kib = b;
        }
    }
    c.device_watchdog_trips = rig.device_trips_total();
    if let Some(a) = rig.ar() {
        c.controller_watchdog_expiries += a.status().watchdog_expiries;
    }
    if let Some(ctl) = rig.controller() {
        c.controller_max_tick_late_us = c
            .controller_max_tick_late_us
            .max(ctl.tick_stats().max_lateness_us);
    }
    Ok(c)
}

/// `pn-lab soak --minutes N [--seed S] [--json]`.
/// `pn-lab soak`: device and controller with random faults for a while.
#[derive(clap::Args, Debug, Clone)]
pub struct SoakArgs {
    /// How long to run.
    #[arg(long)]
    pub minutes: f64,
    /// Seed of the fault schedule (default: from the clock; printed, to replay a run).
    #[arg(long)]
    pub seed: Option<u64>,
    /// One JSON object with the counters at the end.
    #[arg(long)]
    pub json: bool,
}

/// `pn-lab soak ARGS`.
pub fn main(args: &SoakArgs) -> std::process::ExitCode {
    use std::process::ExitCode;
    let seed = args.seed.unwrap_or_else(Rng::seed_from_time);
    let as_json = args.json;
    let minutes = args.minutes;
    if !(minutes > 0.0 && minutes.is_finite()) {
        eprintln!("pn-lab soak: --minutes must be a positive number");
        return ExitCode::from(2);
    }
    eprintln!("soak: {minutes} min, seed {seed}");
    let t0 = Instant::now();
    match run(&SoakOptions {
        duration: Duration::from_secs_f64(minutes * 60.0),
        seed,
    }) {
        Ok(c) => {
            let ok = c.lost_writes == 0
                && c.backwards == 0
                && c.persistence_corrupt == 0
                && c.unexpected_device_exits == 0
                && c.errors.is_empty();
            if as_json {
                println!(
                    "{}",
                    json!({"ok": ok, "seed": seed, "seconds": t0.elapsed().as_secs(), "counters": c})
                );
            } else {
                println!("soak: {} s, seed {seed}", t0.elapsed().as_secs());
                println!(
                    "rounds {}  writes {}  lost writes {}  sequence regressions {}",
                    c.rounds, c.writes, c.lost_writes, c.backwards
                );
                println!(
                    "faults: link flaps {}  loss bursts {}  controller crashes {}  device SIGKILLs {}  floods {}",
                    c.link_flaps, c.loss_bursts, c.controller_crashes, c.device_kills, c.floods
                );
                println!(
                    "reconnects {} (failed attempts retried {})  watchdog: controller {} device {}",
                    c.reconnects,
                    c.connect_retries,
                    c.controller_watchdog_expiries,
                    c.device_watchdog_trips
                );
                println!(
                    "unplanned AR ends {} (last: {})  controller cyclic thread max lateness {} us",
                    c.unplanned_ar_ends, c.last_unplanned_end, c.controller_max_tick_late_us
                );
                println!(
                    "device restarts {} (unexpected exits {})  RSS {} -> {} KiB over {} s (max {} KiB)  API max latency {} ms",
                    c.device_restarts,
                    c.unexpected_device_exits,
                    c.rss_start_kib,
                    c.rss_end_kib,
                    c.rss_window_s,
                    c.rss_max_kib,
                    c.api_max_latency_ms
                );
                for e in &c.errors {
                    println!("error: {e}");
                }
                println!("{}", if ok { "PASS" } else { "FAIL" });
            }
            if ok {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(e) => {
            eprintln!("pn-lab soak: {e}");
            ExitCode::FAILURE
        }
    }
}

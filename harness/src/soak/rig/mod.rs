//! [`Rig`]: the lab with its reconnecting PLC-like controller and the sequence sampler; starting,
//! connecting, writing and checking sequence numbers. The fault rounds are in `faults` and
//! `flood`.

use super::{Counters, CONFIG_XML};
use crate::lab::{Lab, LabOptions};
use crate::peer::DEV_IP;
use pn_controller::{
    ArConfig, ArHandle, ArState, Controller, ControllerConfig, DeviceConfig, DeviceModel,
    RealtimeOptions,
};
use serde_json::{json, Value as Json};
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

mod faults;
mod flood;

pub use flood::FloodKind;

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
    pub(super) fn harvest(&self, c: &mut Counters) -> Result<(), String> {
        let b = self.take_backwards();
        if !b.is_empty() {
            c.backwards += b.len() as u64;
            return Err(format!(
                "the Q sequence went backwards at the controller: {b:?}"
            ));
        }
        Ok(())
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

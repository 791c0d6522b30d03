//! The controller side of `pn-lab bench scale`: one AR configuration per device, the connect
//! phase (`--connect-parallel` workers), and the measurement, during which an AR that ended is
//! reconnected as a PLC would (each end recorded with its reason and time).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use pn_controller::{ArConfig, ArHandle, ArState, Controller, DeviceConfig};

use super::side::Target;
use crate::bench::{nap, raw, stopped};

/// One AR configuration per device: the device's own model, cycle `units` x 31.25 us,
/// reduction ratio 1, watchdog and data-hold factor `dhf`.
pub fn configs(targets: &[Target], units: u16, dhf: u16) -> Result<Vec<ArConfig>, String> {
    targets
        .iter()
        .map(|d| {
            let model = DeviceConfig::parse(&d.xml)
                .map_err(|e| format!("model: {e}"))?
                .model;
            let mut c = ArConfig::new(model);
            c.device_ip = Some(d.ip);
            c.timing.send_clock_factor = units;
            c.timing.reduction_ratio = 1;
            c.timing.data_hold_factor = dhf;
            c.timing.watchdog_factor = dhf;
            c.app_ready_timeout = Duration::from_secs(10);
            Ok(c)
        })
        .collect()
}

/// The outcome of the connect phase.
pub struct Connected {
    /// The ARs that connected, in device order.
    pub ars: Vec<ArHandle>,
    /// Connect durations, sorted (ms).
    pub connect_ms: Vec<f64>,
    pub failures: Vec<String>,
}

impl Connected {
    pub fn p50_ms(&self) -> f64 {
        self.connect_ms
            .get(self.connect_ms.len() / 2)
            .copied()
            .unwrap_or(0.0)
    }
    pub fn max_ms(&self) -> f64 {
        self.connect_ms.last().copied().unwrap_or(0.0)
    }
}

/// Connect every configuration, `parallel` at a time (each worker takes the next device).
pub fn connect_all(
    ctl: &Controller,
    cfgs: &[ArConfig],
    parallel: usize,
) -> Result<Connected, String> {
    let next = AtomicUsize::new(0);
    type Outcome = (usize, Result<ArHandle, String>, f64);
    let outcomes: Mutex<Vec<Outcome>> = Mutex::new(Vec::new());
    std::thread::scope(|sc| {
        for _ in 0..parallel.min(cfgs.len()) {
            sc.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= cfgs.len() || stopped() {
                    break;
                }
                let t = Instant::now();
                let r = ctl.connect(cfgs[i].clone()).map_err(|e| e.to_string());
                let ms = t.elapsed().as_secs_f64() * 1000.0;
                outcomes
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push((i, r, ms));
            });
        }
    });
    if stopped() {
        return Err("interrupted".into());
    }
    let mut outcomes = outcomes.into_inner().unwrap_or_else(|p| p.into_inner());
    outcomes.sort_by_key(|o| o.0);
    let mut connect_ms: Vec<f64> = outcomes.iter().map(|o| o.2).collect();
    connect_ms.sort_by(f64::total_cmp);
    let (mut ars, mut failures) = (Vec::new(), Vec::new());
    for (i, r, _) in outcomes {
        match r {
            Ok(h) => ars.push(h),
            Err(e) => {
                eprintln!("device {i}: connect failed: {e}");
                failures.push(format!("device {i}: {e}"));
            }
        }
    }
    Ok(Connected {
        ars,
        connect_ms,
        failures,
    })
}

/// Hold the ARs for `seconds`. Like a PLC, reconnect an AR that ended (100 ms later, then every
/// 200 ms until it connects), so that one trip does not end the measurement of that device.
/// Returns the ARs at the end and every end (CLOCK_REALTIME ns, "station: state").
pub fn hold(
    ctl: &Controller,
    ars: Vec<ArHandle>,
    cfgs: &[ArConfig],
    seconds: u64,
) -> (Vec<ArHandle>, Vec<(u64, String)>) {
    let ends: Mutex<Vec<(u64, String)>> = Mutex::new(Vec::new());
    let slots: Vec<Mutex<Option<ArHandle>>> =
        ars.into_iter().map(|h| Mutex::new(Some(h))).collect();
    let by_station: HashMap<String, usize> = cfgs
        .iter()
        .enumerate()
        .map(|(i, c)| (c.model.station_name.clone(), i))
        .collect();
    let done = AtomicBool::new(false);
    std::thread::scope(|sc| {
        sc.spawn(|| {
            let mut retry_at: HashMap<usize, Instant> = HashMap::new();
            while !done.load(Ordering::Relaxed) && !stopped() {
                for slot in &slots {
                    let mut g = slot.lock().unwrap_or_else(|p| p.into_inner());
                    let Some(h) = g.as_ref() else { continue };
                    let st = h.state();
                    if st == ArState::DataExchange {
                        continue;
                    }
                    let station = h.station_name().to_string();
                    ends.lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .push((raw::realtime_ns(), format!("{station}: {st:?}")));
                    h.abort();
                    *g = None;
                    if let Some(&i) = by_station.get(&station) {
                        retry_at.insert(i, Instant::now() + Duration::from_millis(100));
                    }
                }
                reconnect_due(ctl, cfgs, &slots, &mut retry_at);
                std::thread::sleep(Duration::from_millis(50));
            }
        });
        nap(Duration::from_secs(seconds));
        done.store(true, Ordering::Relaxed);
    });
    let ars = slots
        .into_iter()
        .filter_map(|s| s.into_inner().unwrap_or_else(|p| p.into_inner()))
        .collect();
    (ars, ends.into_inner().unwrap_or_else(|p| p.into_inner()))
}

/// Reconnect the devices whose retry time has come; a new AR takes the first free slot.
fn reconnect_due(
    ctl: &Controller,
    cfgs: &[ArConfig],
    slots: &[Mutex<Option<ArHandle>>],
    retry_at: &mut HashMap<usize, Instant>,
) {
    let now = Instant::now();
    let due: Vec<usize> = retry_at
        .iter()
        .filter(|(_, t)| **t <= now)
        .map(|(i, _)| *i)
        .collect();
    for i in due {
        match ctl.connect(cfgs[i].clone()) {
            Ok(h) => {
                retry_at.remove(&i);
                if let Some(slot) = slots
                    .iter()
                    .find(|s| s.lock().unwrap_or_else(|p| p.into_inner()).is_none())
                {
                    *slot.lock().unwrap_or_else(|p| p.into_inner()) = Some(h);
                }
            }
            Err(_) => {
                retry_at.insert(i, Instant::now() + Duration::from_millis(200));
            }
        }
    }
}

/// "station: state" of every AR that is not in data exchange.
pub fn not_in_data_exchange(ars: &[ArHandle]) -> Vec<String> {
    ars.iter()
        .filter_map(|a| match a.state() {
            ArState::DataExchange => None,
            s => Some(format!("{}: {s:?}", a.station_name())),
        })
        .collect()
}

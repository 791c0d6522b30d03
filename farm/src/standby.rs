//! The farm's standby sender (`--standby-cpu`, thread `farm-standby`): one real-time thread,
//! pinned to a CPU the I/O loop leaves, that sends a device's provider frame for a slot the
//! loop has not sent a quarter period after it was due. pn-device's standby
//! (`Cyclic:StandbyCpu`, decisions §41) for every device of the farm at once.
//!
//! Why: the farm's I/O loop is one thread on one vCPU, and a hold of that vCPU by the
//! hypervisor silences every device it emulates (docs/benchmarks.md, section 8: one stall event
//! ended most of 64 ARs at once). The holds of two vCPUs rarely overlap.
//!
//! The rule is the protocol crate's `machine::ppm_standby` (the provider's clock, a claim by
//! due time, the grace), shared with pn-device; the frame is filled and stamped by pn-device's
//! `SendBuf`, as the loop fills its own. Each device's claim and plan live in its
//! `CyclicShared` (`standby`), published by the loop when an AR's provider starts or ends.
//! Here remain the thread, its CPU and one `sendmmsg(2)` for the slots of one wake-up.
//!
//! Cost: one wake-up per period on its CPU (all devices of one period are due at the same
//! instants: the loop sends on the period grid) and one atomic per device; it copies and sends
//! only the slots it takes over.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use pn_device::stack::cyclic::{mono_ns, sleep_until_abs, CyclicShared, SendBuf};
use pn_device::stack::socket::PnSocket;
use pn_device::stack::standby::{pin_self, StandbyConfig, STANDBY_PRIO};
use pn_protocol::machine::ppm::ProviderTemplate;
use pn_protocol::machine::ppm_standby::StandbyClock;

use crate::status::{DevShared, FarmShared};

/// Longest sleep (new plans and the stop flag are looked at this often).
const MAX_SLEEP_NS: u64 = 10_000_000;
/// At most one log line about frames sent per this time.
const LOG_EVERY_NS: u64 = 1_000_000_000;

/// One device as the standby sees it.
struct Entry {
    cyc: Arc<CyclicShared>,
    dev: Arc<DevShared>,
    /// Generation of the plan followed (`u64::MAX`: none read yet).
    seen: u64,
    plan: Option<(Arc<ProviderTemplate>, StandbyClock)>,
    buf: SendBuf,
    /// Generation of the input data in `buf` (marked sent once the batch is out).
    gen: Option<u64>,
}

impl Entry {
    /// Follow the device's latest plan, if it changed (a plan being published is read at the
    /// next wake-up).
    fn refresh(&mut self, grace_ns: Option<u64>) {
        if self.cyc.standby.plan_gen() == self.seen {
            return;
        }
        let Some((g, plan)) = self.cyc.standby.try_plan() else {
            return;
        };
        self.seen = g;
        self.plan = plan.map(|(job, clock)| (job, StandbyClock::with_grace(clock, grace_ns)));
        if let Some((job, _)) = &self.plan {
            self.buf.load(job);
        }
    }
}

/// Start the standby for `devices` (each device's cyclic state and view, in the farm's order)
/// on `cfg.cpu`, sending on the farm's socket. A CPU it may not use is reported in the log and
/// the farm runs without a standby.
pub fn spawn(
    sock: Arc<PnSocket>,
    devices: Vec<(Arc<CyclicShared>, Arc<DevShared>)>,
    farm: Arc<FarmShared>,
    cfg: StandbyConfig,
    realtime: bool,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    std::thread::Builder::new()
        .name("farm-standby".into())
        .spawn(move || run(&sock, devices, &farm, cfg, realtime))
}

fn run(
    sock: &PnSocket,
    devices: Vec<(Arc<CyclicShared>, Arc<DevShared>)>,
    farm: &FarmShared,
    cfg: StandbyConfig,
    realtime: bool,
) {
    if let Err(e) = pin_self(cfg.cpu) {
        tracing::warn!(cpu = cfg.cpu, error = %e, "farm standby sender: cannot run on this CPU; no standby");
        return;
    }
    if let Ok(mut c) = farm.io.standby_cpu.lock() {
        *c = Some(cfg.cpu);
    }
    if realtime {
        // Below the I/O loop's 50: sharing a CPU with it (a machine of one CPU), it never
        // delays the loop.
        pn_device::stack::cyclic::try_sched_fifo_prio(STANDBY_PRIO.min(49));
    }
    // SAFETY: prctl with an integer argument; the wake-ups are then 1 µs exact.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1000 as libc::c_ulong, 0, 0, 0) };
    tracing::info!(cpu = cfg.cpu, grace_ns = ?cfg.grace_ns, devices = devices.len(), "farm standby sender running");
    let mut ents: Vec<Entry> = devices
        .into_iter()
        .map(|(cyc, dev)| Entry {
            cyc,
            dev,
            seen: u64::MAX,
            plan: None,
            buf: SendBuf::new(),
            gen: None,
        })
        .collect();
    let mut due: Vec<usize> = Vec::with_capacity(ents.len());
    let (mut sent_total, mut logged_total, mut last_log) = (0u64, 0u64, 0u64);
    while !farm.stop.load(Ordering::Acquire) {
        for e in &mut ents {
            e.refresh(cfg.grace_ns);
        }
        let now = mono_ns();
        let next = ents
            .iter()
            .filter_map(|e| e.plan.as_ref().map(|(_, c)| c.next_ns()))
            .min()
            .unwrap_or(u64::MAX)
            .min(now + MAX_SLEEP_NS);
        sleep_until_abs(next);
        let now = mono_ns();
        due.clear();
        for (i, e) in ents.iter_mut().enumerate() {
            if e.cyc.standby.plan_gen() != e.seen {
                continue; // the AR changed while this thread slept: follow the new plan first
            }
            let Some((job, clock)) = e.plan.as_mut() else {
                continue;
            };
            let Some(slot) = clock.take(now) else {
                continue;
            };
            if !e.cyc.standby.claim.claim(&slot) {
                continue; // the I/O loop sent it
            }
            e.gen = e.buf.fill(job, slot.cycle_counter, &e.cyc, &e.dev.image);
            due.push(i);
        }
        if due.is_empty() {
            continue;
        }
        let frames: Vec<&[u8]> = due.iter().map(|&i| ents[i].buf.frame()).collect();
        let (failed, error) = crate::io::send_batch(sock.raw_fd(), &frames);
        if let Some(e) = error {
            farm.io.record_error("send", &e);
            farm.io.add_unsent(failed as u64 - 1);
        }
        // Counted when sent as the loop counts its frames (a frame the kernel refused is in
        // the farm's `txUnsent`).
        for &i in &due {
            let e = &ents[i];
            let k = &e.dev.counters;
            k.tx_rt.fetch_add(1, Ordering::Relaxed);
            k.standby_frames.fetch_add(1, Ordering::Relaxed);
            if let Some(g) = e.gen {
                e.dev.image.cyclic_mark_output_sent(g);
            }
        }
        sent_total += due.len() as u64;
        if now.saturating_sub(last_log) >= LOG_EVERY_NS {
            tracing::info!(
                frames = sent_total - logged_total,
                devices = due.len(),
                "farm standby sender: sent the frames of slots the I/O loop had not sent when \
                 their grace was over"
            );
            logged_total = sent_total;
            last_log = now;
        }
    }
}

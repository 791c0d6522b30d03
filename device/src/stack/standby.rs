//! The standby sender (`Cyclic:StandbyCpu`): a second real-time thread, pinned to another CPU,
//! that sends the provider's frame for a slot the real-time thread (`cyclic.rs`) has not sent
//! a quarter period after it was due. The rule (same clock, claim by due time, grace) is the
//! protocol crate's `machine::ppm_standby`; here remain the thread, its CPU and the atomics.
//!
//! Why: on a virtual machine the hypervisor holds single vCPUs for 0.4-40 ms several times a
//! minute, and a provider on a held vCPU misses those slots whatever its priority
//! (docs/benchmarks.md 8g, decisions §41). The holds of two vCPUs rarely overlap.
//!
//! The thread costs one wake-up per cycle on its CPU (it sleeps until each slot's grace is
//! over and looks at one atomic); it copies and sends only the slots it takes over. It runs at
//! SCHED_FIFO 59, below the provider's 60, so on a machine where both end up on one CPU it
//! never delays the provider.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use pn_protocol::machine::ppm::{ProviderTemplate, SlotClock};
use pn_protocol::machine::ppm_standby::{SlotClaim, StandbyClock};

use crate::dataplane::SharedCounters;
use crate::image::ProcessImage;

use super::cyclic::{mono_ns, CyclicShared, SendBuf, SenderIo};
use super::RawLink;

/// SCHED_FIFO priority of the standby (the provider runs at 60).
pub const STANDBY_PRIO: i32 = 59;

/// What the standby follows: the provider's job and its clock as installed.
#[derive(Clone)]
struct Plan {
    job: Arc<ProviderTemplate>,
    clock: SlotClock,
}

/// A provider's job and its clock as installed ([`StandbyShared::try_plan`]).
pub type PublishedPlan = (Arc<ProviderTemplate>, SlotClock);

/// The provider's side of the standby: the claim both senders share and the plan the
/// provider publishes when its job changes.
#[derive(Default)]
pub struct StandbyShared {
    /// Slots sent, by either sender (see `machine::ppm_standby`).
    pub claim: SlotClaim,
    plan: Mutex<Option<Plan>>,
    plan_gen: AtomicU64,
    idle_lock: Mutex<()>,
    idle_cv: Condvar,
}

impl StandbyShared {
    /// Called by the provider when it installs (`Some`) or removes (`None`) a job; `clock` is
    /// its schedule for the job. Locks only against the standby's clone of the plan.
    pub fn publish(&self, job: Option<(&Arc<ProviderTemplate>, SlotClock)>) {
        let plan = job.map(|(j, clock)| Plan {
            job: j.clone(),
            clock,
        });
        *self.plan.lock().unwrap_or_else(|p| p.into_inner()) = plan;
        self.plan_gen.fetch_add(1, Ordering::Release);
        self.wake();
    }

    /// The provider's job and its clock as published, with the generation read (it changes
    /// with every [`StandbyShared::publish`]); `None` while the provider is publishing (look
    /// again at the next wake-up). For a standby of its own (the farm's, one for all devices).
    pub fn try_plan(&self) -> Option<(u64, Option<PublishedPlan>)> {
        let g = self.plan_gen.load(Ordering::Acquire);
        let p = self.plan.try_lock().ok()?;
        Some((g, p.as_ref().map(|p| (p.job.clone(), p.clock))))
    }

    /// Generation of the plan: [`StandbyShared::try_plan`] is only needed when it changed.
    pub fn plan_gen(&self) -> u64 {
        self.plan_gen.load(Ordering::Acquire)
    }

    /// Wake the standby (new plan or stop).
    pub fn wake(&self) {
        let _g = self.idle_lock.lock().unwrap_or_else(|p| p.into_inner());
        self.idle_cv.notify_all();
    }

    fn wait_idle(&self, seen: u64, stop: &std::sync::atomic::AtomicBool) {
        let mut g = self.idle_lock.lock().unwrap_or_else(|p| p.into_inner());
        while !stop.load(Ordering::Acquire) && self.plan_gen.load(Ordering::Acquire) == seen {
            g = self
                .idle_cv
                .wait_timeout(g, std::time::Duration::from_secs(1))
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }
}

/// Start the standby on `cpu`. Fails (and the daemon runs without a standby) when the thread
/// cannot be created; a CPU it may not use is reported by the thread in the log.
pub fn spawn(
    shared: Arc<CyclicShared>,
    image: Arc<ProcessImage>,
    link: Arc<RawLink>,
    counters: Arc<SharedCounters>,
    cfg: StandbyConfig,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    std::thread::Builder::new()
        .name("pn-standby".into())
        .spawn(move || run(&shared, &image, &link, &counters, cfg))
}

/// Where the standby runs and how long it waits (`Cyclic:StandbyCpu`, `Cyclic:StandbyGraceUs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StandbyConfig {
    pub cpu: usize,
    /// `None`: a quarter period (`machine::ppm_standby::grace_ns`).
    pub grace_ns: Option<u64>,
}

/// Restrict the calling thread to `cpu`.
pub fn pin_self(cpu: usize) -> std::io::Result<()> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; CPU_SET with an index below
    // CPU_SETSIZE (checked) only sets a bit of it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if cpu >= libc::CPU_SETSIZE as usize {
            return Err(std::io::Error::from_raw_os_error(libc::EINVAL));
        }
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Called by the provider's thread when a standby runs on `cpu`: take `cpu` out of the
/// provider's own CPU mask, so the two never share a vCPU (and its holds). When `cpu` is the
/// only CPU the provider may use, it stays (and says so): the standby then only covers what
/// the scheduler can move.
pub fn avoid_cpu(cpu: usize) {
    // SAFETY: sched_getaffinity/sched_setaffinity on the calling thread with a cpu_set_t of
    // the size passed; CPU_CLR/CPU_COUNT with an index below CPU_SETSIZE (checked).
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        let size = std::mem::size_of::<libc::cpu_set_t>();
        if cpu >= libc::CPU_SETSIZE as usize || libc::sched_getaffinity(0, size, &mut set) != 0 {
            return;
        }
        if !libc::CPU_ISSET(cpu, &set) {
            return;
        }
        libc::CPU_CLR(cpu, &mut set);
        if libc::CPU_COUNT(&set) == 0 {
            tracing::warn!(
                cpu,
                "the cyclic thread may run only on the standby sender's CPU; they share it"
            );
            return;
        }
        if libc::sched_setaffinity(0, size, &set) != 0 {
            tracing::warn!(cpu, error = %std::io::Error::last_os_error(),
                "the cyclic thread cannot leave the standby sender's CPU");
        }
    }
}

fn run(
    shared: &CyclicShared,
    image: &ProcessImage,
    link: &RawLink,
    counters: &SharedCounters,
    cfg: StandbyConfig,
) {
    let cpu = cfg.cpu;
    if let Err(e) = pin_self(cpu) {
        tracing::warn!(cpu, error = %e, "standby sender: cannot run on this CPU; no standby");
        return;
    }
    super::cyclic::try_sched_fifo_prio(STANDBY_PRIO);
    // Lock this thread's stack too (the provider's mlockall may have run before it existed).
    super::cyclic::try_mlockall();
    tracing::info!(cpu, grace_ns = ?cfg.grace_ns, "standby sender running");
    let sb = &shared.standby;
    let mut buf = SendBuf::new();
    let io = SenderIo::new(shared, image, link, counters);
    let mut plan: Option<(Arc<ProviderTemplate>, StandbyClock)> = None;
    let mut seen = u64::MAX;
    // Frames this thread sent for the current job (logged when the job ends: not per cycle).
    let mut sent = 0u64;
    while !shared.stop.load(Ordering::Acquire) {
        let g = sb.plan_gen.load(Ordering::Acquire);
        if g != seen {
            if let Ok(p) = sb.plan.try_lock() {
                if sent > 0 {
                    tracing::info!(
                        frames = sent,
                        "standby sender: sent the provider's frame for {sent} slot(s) its \
                         real-time thread had not sent a quarter period after they were due"
                    );
                }
                sent = 0;
                seen = g;
                plan = p.as_ref().map(|p| {
                    (
                        p.job.clone(),
                        StandbyClock::with_grace(p.clock, cfg.grace_ns),
                    )
                });
                if let Some((j, _)) = &plan {
                    buf.load(j);
                }
            }
        }
        let Some((job, clock)) = plan.as_mut() else {
            sb.wait_idle(seen, &shared.stop);
            continue;
        };
        super::cyclic::sleep_until_abs(clock.next_ns());
        if sb.plan_gen.load(Ordering::Acquire) != seen {
            continue; // the job changed while this thread slept: follow the new plan first
        }
        let Some(slot) = clock.take(mono_ns()) else {
            continue;
        };
        if !sb.claim.claim(&slot) {
            continue; // the provider sent it
        }
        if buf.send(job, slot.cycle_counter, &io) {
            counters
                .stack_standby_frames
                .fetch_add(1, Ordering::Relaxed);
            sent += 1;
        }
    }
}

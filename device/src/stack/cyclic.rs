//! RT_CLASS_1 cyclic data: the provider (a dedicated real-time thread sending the device's input
//! frame every SendClockFactor x ReductionRatio x 31.25 us) and the consumer (the controller's
//! output frames, parsed on the receive thread, with the data-hold watchdog run by the
//! real-time thread).
//!
//! # The real-time thread
//! * absolute deadlines on `CLOCK_MONOTONIC` (`clock_nanosleep(TIMER_ABSTIME)`); a slot that is
//!   already over when the thread wakes is counted in `stackMissedTicks` and skipped (no burst
//!   of catch-up frames);
//! * timer slack 1 ns (`prctl(PR_SET_TIMERSLACK)`) in precise mode (the high-resolution timer
//!   switch), the kernel default (50 us) otherwise; `SCHED_FIFO` and
//!   `mlockall(MCL_CURRENT | MCL_ONFAULT)` are tried once at thread start and degrade with ONE
//!   logged warning each when not permitted; in precise mode with `SCHED_FIFO` granted the
//!   last ~80 us before a deadline are busy-spun;
//! * while no provider job is installed and the consumer watchdog is not armed (no AR in data
//!   exchange) it does not tick: it blocks on a condition variable until [`CyclicShared::set_job`]
//!   installs a job or [`CyclicShared::request_stop`] is called (an idle daemon costs no CPU
//!   time here; `stackCycles` counts only the cycles of data exchange);
//! * per cycle it only reads atomics, claims the slot (one `fetch_max` shared with the standby
//!   sender, `standby.rs`), copies the Q area with the image's wait-free
//!   `cyclic_read_output`, patches a pre-built frame and calls `send(2)`: no allocation, no
//!   blocking lock (the job is taken with `try_lock` only when its generation changed; at that
//!   change the job is also handed to the standby under a lock the standby only `try_lock`s),
//!   no logging, no tokio.
//!
//! # Relation to the protocol crate
//! This file is the I/O shell of the protocol crate's PPM and CPM: the frame template and its
//! per-cycle fill are `machine::ppm::ProviderTemplate`, the consumer's layout and what a
//! received frame changes (frame check, CycleCounter, data items, IOPS/IOCS) are
//! `machine::cpm::ConsumerCr`, both built at Connect by `machine::cmdev::plan`. Here remain
//! the clock, the schedule, the sockets and the atomics the threads share. The schedule
//! follows `machine::cyclic`'s rule (one frame per slot, missed slots skipped and reflected in
//! the CycleCounter). The data-hold timer is the protocol crate's `machine::data_hold::DataHold`
//! (counted in executed cycles, as p-net does), the same code the simulator's device runs.
//!
//! # Jobs
//! The connection manager (`cm.rs`) publishes a `ProviderTemplate` when an IO AR is connected
//! and clears it when the AR ends. The consumer side gets a `ConsumerCr` through
//! [`CyclicShared::consumer`] (locked only by the receive thread per frame and by the
//! connection manager on AR changes).

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use pn_protocol::machine::cpm::{Consume, ConsumerCr};
use pn_protocol::machine::cyclic::TIME_BASE_NS;
use pn_protocol::machine::data_hold::DataHold;
use pn_protocol::machine::ppm::{ProviderTemplate, Slot, SlotClock};
use pn_protocol::time::{Duration as PnDuration, Instant as PnInstant};
use pn_protocol::wire::ethernet::MacAddr;
use pn_protocol::wire::rt::{ApduStatus, DataStatus};

use crate::dataplane::SharedCounters;
use crate::image::ProcessImage;

use super::RawLink;

/// Busy-spin window before a deadline in precise mode with SCHED_FIFO.
const SPIN_NS: u64 = 80_000;
/// Longest idle wait before the stop flag is looked at again, for a stop requested by storing
/// `stop` directly instead of [`CyclicShared::request_stop`].
const IDLE_RECHECK: std::time::Duration = std::time::Duration::from_secs(1);

/// Monotonic clock in nanoseconds (`CLOCK_MONOTONIC`).
pub fn mono_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid pointer to a timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(ts.tv_nsec as u64)
}

/// Sleep until `deadline_ns` (CLOCK_MONOTONIC, absolute: no drift from the time of the call).
pub fn sleep_until_abs(deadline_ns: u64) {
    let ts = libc::timespec {
        tv_sec: (deadline_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (deadline_ns % 1_000_000_000) as libc::c_long,
    };
    loop {
        // SAFETY: valid timespec; remaining time is not needed with TIMER_ABSTIME.
        let rc = unsafe {
            libc::clock_nanosleep(
                libc::CLOCK_MONOTONIC,
                libc::TIMER_ABSTIME,
                &ts,
                std::ptr::null_mut(),
            )
        };
        if rc != libc::EINTR {
            break;
        }
    }
}

/// State shared between the real-time thread, the receive thread and the connection manager.
pub struct CyclicShared {
    pub stop: AtomicBool,
    /// The real-time thread waits on `idle_cv` while there is nothing to do (see the module
    /// docs); `set_job` and `request_stop` notify it under `idle_lock`.
    idle_lock: Mutex<()>,
    idle_cv: Condvar,
    /// Precise mode (high-resolution timer switch).
    pub precise: AtomicBool,
    /// Base tick when no job runs (SendClockFactor of the configuration).
    pub base_period_ns: AtomicU64,
    pub job: Mutex<Option<Arc<ProviderTemplate>>>,
    pub job_gen: AtomicU64,
    /// Generation the real-time thread has switched to.
    pub seen_gen: AtomicU64,
    /// Replaced jobs with the generation after which they may be dropped.
    retired: Mutex<Vec<(u64, Arc<ProviderTemplate>)>>,
    pub consumer: Mutex<Option<ConsumerCr>>,
    /// Monotonic time of the last valid consumer frame.
    pub last_rx_ns: AtomicU64,
    /// Data-hold time of the running consumer (0 = watchdog not armed).
    pub dht_ns: AtomicU64,
    /// Set by the real-time thread when the data-hold timer expired; cleared by the CM.
    pub tripped: AtomicBool,
    /// At the last trip: missed cycles (high 32 bits) and wall-clock silence in us (low).
    pub trip_info: AtomicU64,
    /// DataStatus bits driven by the CM: run/stop and station problem indicator.
    pub provider_run: AtomicBool,
    pub station_problem: AtomicBool,
    /// Latest DataStatus received from the controller.
    pub peer_data_status: AtomicU8,
    /// Valid consumer frames since the consumer job was installed.
    pub consumer_frames: AtomicU64,
    /// Provider frames sent since the job was installed.
    pub provider_frames: AtomicU64,
    /// FrameID of the installed consumer job, [`NO_CONSUMER`] without one (read without the
    /// consumer lock by the receive threads, see `super::rx_loop`).
    pub consumer_fid: AtomicU32,
    /// Incremented by every [`CyclicShared::set_consumer`] (the cyclic receive socket's filter
    /// follows it, see `super::cyclic_rx_loop`).
    pub consumer_gen: AtomicU64,
    /// The standby sender's plan and the slot claim the provider shares with it (claimed
    /// also without a standby: one atomic per cycle).
    pub standby: super::standby::StandbyShared,
}

/// [`CyclicShared::consumer_fid`] without a consumer job.
pub const NO_CONSUMER: u32 = u32::MAX;

impl CyclicShared {
    pub fn new(base_period_ns: u64, precise: bool) -> Self {
        CyclicShared {
            stop: AtomicBool::new(false),
            idle_lock: Mutex::new(()),
            idle_cv: Condvar::new(),
            precise: AtomicBool::new(precise),
            base_period_ns: AtomicU64::new(base_period_ns.max(TIME_BASE_NS)),
            job: Mutex::new(None),
            job_gen: AtomicU64::new(0),
            seen_gen: AtomicU64::new(0),
            retired: Mutex::new(Vec::new()),
            consumer: Mutex::new(None),
            last_rx_ns: AtomicU64::new(0),
            dht_ns: AtomicU64::new(0),
            tripped: AtomicBool::new(false),
            trip_info: AtomicU64::new(0),
            provider_run: AtomicBool::new(true),
            station_problem: AtomicBool::new(false),
            peer_data_status: AtomicU8::new(0),
            consumer_frames: AtomicU64::new(0),
            provider_frames: AtomicU64::new(0),
            consumer_fid: AtomicU32::new(NO_CONSUMER),
            consumer_gen: AtomicU64::new(0),
            standby: Default::default(),
        }
    }

    /// Wake the real-time thread if it waits idle (after a job change or a stop request).
    fn wake(&self) {
        let _g = self.idle_lock.lock().unwrap_or_else(|p| p.into_inner());
        self.idle_cv.notify_all();
    }

    /// Stop the real-time thread (it returns from its loop promptly, also when idle).
    pub fn request_stop(&self) {
        self.stop.store(true, Ordering::Release);
        self.wake();
        self.standby.wake();
    }

    /// Block the calling (real-time) thread while it has nothing to do: no job change since
    /// generation `seen_gen`, no armed consumer watchdog, no stop request.
    fn wait_idle(&self, seen_gen: u64) {
        let mut g = self.idle_lock.lock().unwrap_or_else(|p| p.into_inner());
        while !self.stop.load(Ordering::Acquire)
            && self.job_gen.load(Ordering::Acquire) == seen_gen
            && self.dht_ns.load(Ordering::Acquire) == 0
        {
            g = self
                .idle_cv
                .wait_timeout(g, IDLE_RECHECK)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    /// Install (Some) or remove (None) the provider job. Called by the CM.
    ///
    /// The replaced job is kept in `retired` until the real-time thread has switched to the
    /// new generation, so its last reference is never dropped (deallocated) on that thread.
    pub fn set_job(&self, job: Option<Arc<ProviderTemplate>>) {
        let mut g = self.job.lock().unwrap_or_else(|p| p.into_inner());
        let old = std::mem::replace(&mut *g, job);
        let gen = self.job_gen.load(Ordering::Acquire);
        let mut retired = self.retired.lock().unwrap_or_else(|p| p.into_inner());
        let seen = self.seen_gen.load(Ordering::Acquire);
        retired.retain(|(until, _)| *until > seen);
        if let Some(old) = old {
            retired.push((gen + 1, old));
        }
        self.provider_frames.store(0, Ordering::Relaxed);
        self.job_gen.fetch_add(1, Ordering::Release);
        drop(retired);
        drop(g);
        self.wake();
    }

    /// Install or remove the consumer job. Removing also disarms the watchdog and marks the
    /// I area invalid (done under the consumer lock, so the receive thread, the single writer
    /// of the I area, is not writing at the same time).
    pub fn set_consumer(&self, job: Option<ConsumerCr>, image: &ProcessImage) {
        let mut g = self.consumer.lock().unwrap_or_else(|p| p.into_inner());
        self.dht_ns.store(0, Ordering::Release);
        self.consumer_frames.store(0, Ordering::Relaxed);
        if job.is_none() {
            image.invalidate_input();
        }
        self.consumer_fid.store(
            job.as_ref().map_or(NO_CONSUMER, |j| u32::from(j.frame_id)),
            Ordering::Release,
        );
        *g = job;
        self.consumer_gen.fetch_add(1, Ordering::Release);
    }
}

/// Result of [`consume_frame`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Consumed {
    /// Valid frame for the running consumer; the I area was updated.
    Ok,
    /// No consumer for this FrameID (not ours / no AR).
    NotOurs,
    /// Ours but malformed (length) or from the wrong source.
    Invalid,
    /// Ours, well formed, but not used (duplicate counter, DataValid off, TransferStatus).
    Ignored,
}

/// Consume one cyclic frame (`payload` = bytes after the EtherType, starting at the FrameID).
/// Runs on the receive thread; the only writer of the I area.
pub fn consume_frame(
    shared: &CyclicShared,
    image: &ProcessImage,
    src: [u8; 6],
    payload: &[u8],
) -> Consumed {
    let mut guard = match shared.consumer.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    };
    let Some(job) = guard.as_mut() else {
        return Consumed::NotOurs;
    };
    let dht_ns = job.dht_ns;
    // The protocol crate's CPM decides (frame check, CycleCounter, data items, IOxS); this
    // shell stores what it says.
    let c = job.consume(MacAddr(src), payload);
    if let Some(st) = c.status() {
        shared
            .peer_data_status
            .store(st.data_status.0, Ordering::Relaxed);
    }
    let d = match c {
        Consume::NotThisCr => return Consumed::NotOurs,
        Consume::Malformed(_) => return Consumed::Invalid,
        Consume::NotValid(_) | Consume::Duplicate(_) => return Consumed::Ignored,
        Consume::New(_, d) => d,
    };
    image.cyclic_write_input(d.area, d.iops.0, d.iocs.0);
    shared.last_rx_ns.store(mono_ns(), Ordering::Release);
    if shared.dht_ns.load(Ordering::Relaxed) == 0 {
        shared.dht_ns.store(dht_ns, Ordering::Release);
    }
    shared.consumer_frames.fetch_add(1, Ordering::Relaxed);
    Consumed::Ok
}

/// How the stack starts the real-time thread.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// CPU of the standby sender: the thread leaves it (`super::standby::avoid_cpu`).
    pub standby_cpu: Option<usize>,
    /// TEST ONLY (`Dev:FaultProviderHold`, test-hooks builds): stop after every N frames.
    pub hold: Option<crate::fault::ProviderHold>,
}

/// What a sender of the provider's frames writes to: the shared state, the Q area, the link
/// and the counters.
pub(super) struct SenderIo<'a> {
    pub shared: &'a CyclicShared,
    pub image: &'a ProcessImage,
    pub link: &'a RawLink,
    pub counters: &'a SharedCounters,
}

impl<'a> SenderIo<'a> {
    pub fn new(
        shared: &'a CyclicShared,
        image: &'a ProcessImage,
        link: &'a RawLink,
        counters: &'a SharedCounters,
    ) -> SenderIo<'a> {
        SenderIo {
            shared,
            image,
            link,
            counters,
        }
    }
}

/// One sender's buffers (the real-time thread and the standby sender each own one; the farm
/// one per device and one per device in its standby), allocated once before their loops.
pub struct SendBuf {
    q: Vec<u8>,
    frame: Vec<u8>,
    /// A consistent Q area was copied into `frame` since the job was loaded.
    have_q: bool,
}

impl Default for SendBuf {
    fn default() -> SendBuf {
        SendBuf::new()
    }
}

impl SendBuf {
    pub fn new() -> SendBuf {
        SendBuf {
            q: vec![0u8; crate::image::MAX_AREA_LEN],
            frame: Vec::with_capacity(1600),
            have_q: false,
        }
    }

    /// Start from `job`'s frame template (capacity 1600 >= any frame: no allocation).
    pub fn load(&mut self, job: &ProviderTemplate) {
        self.frame.clear();
        self.frame.extend_from_slice(&job.frame);
        self.have_q = false;
    }

    /// The frame as last filled.
    pub fn frame(&self) -> &[u8] {
        &self.frame
    }

    /// Fill (Q data of `image`) and stamp (CycleCounter `counter`, DataStatus from `sh`) the
    /// frame of a slot the caller has claimed. A Q area that a writer is copying at this
    /// moment is not waited for: the previous content goes again. Returns the generation of
    /// the Q data copied, for [`ProcessImage::cyclic_mark_output_sent`] once the frame is
    /// sent. The one frame path of every sender (daemon, standby, farm).
    pub fn fill(
        &mut self,
        job: &ProviderTemplate,
        counter: u16,
        sh: &CyclicShared,
        image: &ProcessImage,
    ) -> Option<u64> {
        let gen = image.cyclic_read_output(&mut self.q).ok();
        if gen.is_some() {
            self.have_q = true;
            job.copy_items(&mut self.frame, &self.q);
        }
        let ds = DataStatus::new(
            true,
            self.have_q,
            sh.provider_run.load(Ordering::Relaxed),
            !sh.station_problem.load(Ordering::Relaxed),
        );
        let st = ApduStatus {
            cycle_counter: counter,
            data_status: ds,
            transfer_status: 0,
        };
        job.stamp(&mut self.frame, st);
        gen
    }

    /// [`SendBuf::fill`], then send the frame on the daemon's link and count it.
    pub(super) fn send(&mut self, job: &ProviderTemplate, counter: u16, io: &SenderIo) -> bool {
        let gen = self.fill(job, counter, io.shared, io.image);
        let c = io.counters;
        if !io.link.send(&self.frame) {
            c.dropped_frames.fetch_add(1, Ordering::Relaxed);
            return false;
        }
        c.tx_frames.fetch_add(1, Ordering::Relaxed);
        c.tx_rt_frames.fetch_add(1, Ordering::Relaxed);
        c.stack_frames_tx.fetch_add(1, Ordering::Relaxed);
        c.cycle_counter.store(u64::from(counter), Ordering::Relaxed);
        io.shared.provider_frames.fetch_add(1, Ordering::Relaxed);
        if let Some(gen) = gen {
            io.image.cyclic_mark_output_sent(gen);
        }
        true
    }
}

/// Handle of the running real-time thread.
pub struct CyclicThread {
    pub handle: std::thread::JoinHandle<()>,
}

/// Start the real-time thread.
pub fn spawn(
    shared: Arc<CyclicShared>,
    image: Arc<ProcessImage>,
    link: Arc<RawLink>,
    counters: Arc<SharedCounters>,
    rx: Option<Arc<super::CyclicRx>>,
    opts: Options,
) -> std::io::Result<CyclicThread> {
    let handle = std::thread::Builder::new()
        .name("pn-cyclic".into())
        .spawn(move || {
            if let Some(cpu) = opts.standby_cpu {
                super::standby::avoid_cpu(cpu);
            }
            run(&shared, &image, &link, &counters, rx.as_deref(), opts.hold)
        })?;
    Ok(CyclicThread { handle })
}

static FIFO_WARNED: AtomicBool = AtomicBool::new(false);
static MLOCK_WARNED: AtomicBool = AtomicBool::new(false);

/// Try SCHED_FIFO for the calling thread; returns whether it was granted.
fn try_sched_fifo() -> bool {
    try_sched_fifo_prio(60)
}

/// Try SCHED_FIFO with `prio` for the calling thread (the receive thread uses a lower priority
/// than the provider); warns once per process when not permitted.
pub fn try_sched_fifo_prio(prio: i32) -> bool {
    let param = libc::sched_param {
        sched_priority: prio,
    };
    // SAFETY: plain syscall on the calling thread with a valid parameter.
    let rc = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) };
    if rc != 0 {
        if !FIFO_WARNED.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                error = %std::io::Error::last_os_error(),
                "cyclic thread: SCHED_FIFO not permitted, running with normal priority"
            );
        }
        return false;
    }
    true
}

pub(super) fn try_mlockall() {
    // MCL_CURRENT | MCL_ONFAULT: lock what is resident now (code, data, the pages the threads
    // have touched) and every further page of the current mappings when it is first touched,
    // without populating the untouched rest. Plain MCL_CURRENT populates and pins every mapped
    // page, including the whole 2 MiB stack of each thread alive at this moment: about 20 MB of
    // the daemon's ~29 MB resident memory in data exchange (measured with `pn-lab bench
    // cycle`, docs/benchmarks.md). MCL_FUTURE is not used: it would also lock every later
    // thread stack and heap arena of the whole daemon (tokio workers). Kernels before 4.4
    // reject MCL_ONFAULT with EINVAL: plain MCL_CURRENT there.
    prefault_stack();
    // SAFETY: plain syscalls.
    let mut rc = unsafe { libc::mlockall(libc::MCL_CURRENT | libc::MCL_ONFAULT) };
    if rc != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINVAL) {
        // SAFETY: plain syscall.
        rc = unsafe { libc::mlockall(libc::MCL_CURRENT) };
    }
    if rc != 0 && !MLOCK_WARNED.swap(true, Ordering::Relaxed) {
        tracing::warn!(
            error = %std::io::Error::last_os_error(),
            "cyclic thread: mlockall not permitted, memory may be paged"
        );
    }
}

/// Touch 64 KiB of the calling thread's stack below this frame, so that the stack pages the
/// cyclic loop uses are resident (and, with `MCL_ONFAULT`, locked) before the loop starts.
#[inline(never)]
fn prefault_stack() {
    let mut buf = [0u8; 64 * 1024];
    for b in buf.iter_mut().step_by(4096) {
        *b = 1;
    }
    std::hint::black_box(&mut buf);
}

fn set_timer_slack(ns: u64) {
    // SAFETY: prctl with an integer argument.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns as libc::c_ulong, 0, 0, 0) };
}

/// Data-hold supervision of the consumer, once per executed cycle: the protocol crate's CPM
/// rule (`DataHold`: counted in executed cycles, with a wall-clock guard for stalls of this
/// thread). A trip is flagged for the CM thread, which ends the AR.
#[inline]
fn supervise(
    shared: &CyclicShared,
    counters: &SharedCounters,
    watchdog: &mut Option<DataHold>,
    period: u64,
    now: u64,
    rx: Option<&super::CyclicRx>,
) {
    let dht = shared.dht_ns.load(Ordering::Acquire);
    if dht != 0 {
        let frames = shared.consumer_frames.load(Ordering::Acquire);
        let wd = watchdog.get_or_insert_with(|| {
            DataHold::new(PnDuration(dht), PnDuration(period.max(1)), frames)
        });
        let last = PnInstant(shared.last_rx_ns.load(Ordering::Acquire));
        // The receive thread runs below this one: frames it has not read yet are not missing.
        let unread = || rx.is_some_and(super::CyclicRx::has_unread);
        if let Some(trip) = wd.on_interval_or_unread(PnInstant(now), frames, last, unread) {
            shared.trip_info.store(
                (trip.missed << 32) | (trip.silence.as_micros()).min(0xFFFF_FFFF),
                Ordering::Relaxed,
            );
            shared.dht_ns.store(0, Ordering::Release);
            shared.tripped.store(true, Ordering::Release);
            counters.watchdog_trips.fetch_add(1, Ordering::Relaxed);
            *watchdog = None;
        }
    } else {
        *watchdog = None;
    }
}

fn run(
    shared: &CyclicShared,
    image: &ProcessImage,
    link: &RawLink,
    counters: &SharedCounters,
    rx: Option<&super::CyclicRx>,
    hold: Option<crate::fault::ProviderHold>,
) {
    #[cfg(not(feature = "test-hooks"))]
    let _ = hold; // set only by test-hooks settings, which a release build refuses
    #[cfg(feature = "test-hooks")]
    let mut held_after = hold.map(|h| h.every);
    let fifo = try_sched_fifo();
    try_mlockall();
    let mut precise = shared.precise.load(Ordering::Relaxed);
    set_timer_slack(if precise { 1 } else { 50_000 });

    // Everything the loop needs is allocated here, once.
    let mut buf = SendBuf::new();
    let io = SenderIo::new(shared, image, link, counters);
    let mut job: Option<Arc<ProviderTemplate>> = None;
    let mut seen_gen = u64::MAX;
    // The CycleCounter of the last frame sent: it runs on across ARs (a new CR continues
    // from it), as it always has (tests count lost frames across AR boundaries by it).
    let mut counter: u16 = 0;
    let mut watchdog: Option<DataHold> = None;

    let mut period = shared.base_period_ns.load(Ordering::Relaxed);
    // The schedule (the protocol crate's PPM SlotClock); without a job it only paces the
    // watchdog (counter step 0).
    let mut clock = SlotClock::new(mono_ns() + period, period, 0, 0);
    while !shared.stop.load(Ordering::Acquire) {
        // Nothing to send and no watchdog to run: wait for a job instead of ticking. The tick
        // grid restarts from the moment of the wake-up (no missed slots are counted for the
        // idle time).
        if job.is_none() && shared.dht_ns.load(Ordering::Acquire) == 0 {
            let gen = shared.job_gen.load(Ordering::Acquire);
            if gen == seen_gen {
                shared.wait_idle(gen);
                if shared.stop.load(Ordering::Acquire) {
                    break;
                }
                period = shared.base_period_ns.load(Ordering::Relaxed);
                clock = SlotClock::new(mono_ns() + period, period, 0, 0);
            }
        }
        // Precise-mode switch (rare).
        let p = shared.precise.load(Ordering::Relaxed);
        if p != precise {
            precise = p;
            set_timer_slack(if precise { 1 } else { 50_000 });
        }
        // Wait for the deadline.
        let next = clock.next_ns();
        if precise && fifo {
            sleep_until_abs(next.saturating_sub(SPIN_NS));
            while mono_ns() < next {
                std::hint::spin_loop();
            }
        } else {
            sleep_until_abs(next);
        }
        let now = mono_ns();
        let late = now.saturating_sub(next);
        counters
            .stack_max_jitter_us
            .fetch_max(late / 1000, Ordering::Relaxed);
        counters
            .stack_jitter_sum_us
            .fetch_add(late / 1000, Ordering::Relaxed);
        counters.stack_cycles.fetch_add(1, Ordering::Relaxed);
        counters.heartbeat.fetch_add(1, Ordering::Relaxed);
        // Whole slots lost are counted and skipped (no catch-up frames); the slot's counter
        // reflects them.
        let mut slot = clock.take(now.max(next)).unwrap_or(Slot {
            cycle_counter: 0,
            missed: 0,
            due_ns: next,
        });
        if slot.missed > 0 {
            counters
                .stack_missed_ticks
                .fetch_add(slot.missed, Ordering::Relaxed);
        }

        // New job?
        let g = shared.job_gen.load(Ordering::Acquire);
        if g != seen_gen {
            if let Ok(guard) = shared.job.try_lock() {
                seen_gen = g;
                job = guard.clone();
                drop(guard);
                shared.seen_gen.store(g, Ordering::Release);
                match &job {
                    Some(j) => {
                        buf.load(j);
                        period = j.period_ns.max(TIME_BASE_NS);
                        // The new CR's first frame goes now, the next one a period later.
                        let first = counter.wrapping_add(j.counter_step);
                        clock = SlotClock::new(now, period, first, j.counter_step);
                        slot = clock.take(now).unwrap_or(slot);
                        shared.standby.publish(Some((j, clock)));
                    }
                    None => {
                        period = shared.base_period_ns.load(Ordering::Relaxed);
                        clock = SlotClock::new(now + period, period, 0, 0);
                        shared.standby.publish(None);
                    }
                }
            }
        }

        supervise(shared, counters, &mut watchdog, period, now, rx);

        // Provider. The counter runs on whoever sends the slot; a slot the standby sender has
        // sent already (this thread was held past its grace) is not sent again.
        if let Some(j) = &job {
            counter = slot.cycle_counter;
            if !shared.standby.claim.claim(&slot) {
                continue;
            }
            if buf.send(j, counter, &io) {
                #[cfg(feature = "test-hooks")]
                if let (Some(h), Some(n)) = (hold, held_after.as_mut()) {
                    *n -= 1;
                    if *n == 0 {
                        *n = h.every;
                        std::thread::sleep(std::time::Duration::from_millis(u64::from(h.ms)));
                    }
                }
            }
        } else {
            let bp = shared.base_period_ns.load(Ordering::Relaxed);
            if bp != period {
                period = bp;
                clock = SlotClock::new(clock.next_ns(), period, 0, 0);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_thread_wakes_for_a_job_and_for_stop() {
        let shared = Arc::new(CyclicShared::new(TIME_BASE_NS * 32, false));
        // The thread waits idle until the generation changes.
        let s2 = shared.clone();
        let t = std::thread::spawn(move || s2.wait_idle(0));
        shared.set_job(None);
        t.join().expect("woken by set_job");
        let s3 = shared.clone();
        let gen = shared.job_gen.load(Ordering::Acquire);
        let t = std::thread::spawn(move || s3.wait_idle(gen));
        shared.request_stop();
        t.join().expect("woken by request_stop");
        assert!(shared.stop.load(Ordering::Acquire));
    }
}

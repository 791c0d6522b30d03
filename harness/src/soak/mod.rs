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
//!
//! Layout: the PRNG and the [`Counters`] here; `rig` (the [`Rig`] and its fault rounds),
//! `dcp_setter`, `cycle` (jitter probe), `run` (the long run and its command).

mod cycle;
mod dcp_setter;
mod rig;
mod run;

pub use cycle::{jitter, CycleProbe, Jitter};
pub use dcp_setter::DcpSetter;
pub use rig::{FloodKind, Rig, RigOptions};
pub use run::{controller_binary, main, run, SoakArgs, SoakOptions};

/// The device configuration of the reliability runs: 4 ms send clock, 4 bytes each way.
pub const CONFIG_XML: &str = include_str!("../../../scenarios/configs/exchange-4ms.xml");

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

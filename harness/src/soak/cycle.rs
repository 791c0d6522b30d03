//! Cycle jitter: [`CycleProbe`] timestamps the device's cyclic frames, [`jitter`] sums them up
//! as [`Jitter`].

use crate::bench::raw;
use pn_controller::RealtimeOptions;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Receive timestamps of the device's cyclic frames, for cycle jitter: the kernel's
/// (`SO_TIMESTAMPNS` on a raw socket in the controller namespace), so that a late reading
/// thread does not move a frame in time (it once put a frame 3 ms after its arrival and made a
/// watchdog look early in `reliability_loss`).
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
    /// (kernel receive time in ns of CLOCK_MONOTONIC, CycleCounter read after `c_sdu_len`
    /// bytes).
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
            let open = || -> Result<OwnedFd, String> {
                pn_testkit::netns::join_netns(&path)?;
                let fd = raw::packet_socket(&nic).map_err(|e| format!("probe on {nic}: {e}"))?;
                raw::setsockopt_int(&fd, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, 1)
                    .map_err(|e| format!("SO_TIMESTAMPNS: {e}"))?;
                // A queue that outlasts a stall of this thread: a frame dropped here would
                // look like a frame lost on the wire.
                let _ = raw::setsockopt_int(&fd, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, 4 << 20);
                Ok(fd)
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
                if !raw::poll_in(&sock, 20) {
                    continue;
                }
                // Kernel stamps are CLOCK_REALTIME; the callers' clock is CLOCK_MONOTONIC.
                let offset = raw::realtime_ns().saturating_sub(raw::mono_ns());
                while let Some((n, ts, _)) = raw::recv_stamped(&sock, &mut buf) {
                    let t = ts.saturating_sub(offset);
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

//! `bench cycle --swap`: the two CPUs exchanged halfway through a pinned run against p-net,
//! so that each stack has each CPU for half the run.
//!
//! Why: the two vCPUs of this VM are not alike. In two 300 s runs of session 16 (loaded,
//! `--cpu-poll`, bare sender below the device), the device and its bare sender missed 390 and
//! 388 cycles on CPU 0 and 253 and 414 on CPU 1; the device's |dev| p99 was 23.7 us on CPU 0 and
//! 5.2 us on CPU 1, while p-net's stayed at 21-27 us on either. A comparison with each stack
//! on one CPU for the whole run measures the CPUs as much as the stacks; exchanging them halfway
//! gives both the same share of each (the halves are reported apart as well).

use super::cycle::Streams;
use super::raw;
use super::recorder::Rec;
use super::rig::CpuLoad;
use serde::Serialize;

/// Where the controller's threads (this process's `pnc-*`) run in a pinned run with p-net
/// (`--controller-on`): free (the scheduler's choice, which on two CPUs is mostly the quiet
/// CPU, the device's), or pinned with one of the two stacks (following it across `--swap`).
/// Its sends' network processing (the veth and bridge, in softirq) runs where it runs.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ControllerOn {
    Free,
    Device,
    Pnet,
}

/// Thread-name prefix of the controller library's threads.
const CONTROLLER_THREADS: &str = "pnc-";

impl ControllerOn {
    /// Pin the controller's threads for the device on `device_cpu`, p-net on `pnet_cpus`.
    pub fn place(self, device_cpu: usize, pnet_cpus: &[usize]) -> Result<(), String> {
        let cpus = match self {
            ControllerOn::Free => return Ok(()),
            ControllerOn::Device => vec![device_cpu],
            ControllerOn::Pnet => pnet_cpus.to_vec(),
        };
        match raw::pin_own_threads(CONTROLLER_THREADS, &cpus)? {
            0 => Err("no controller thread (pnc-*) to pin".into()),
            _ => Ok(()),
        }
    }
}

/// One half of a swapped run: where the device was, and each stream's figures in that half.
#[derive(Debug, Clone, Serialize)]
pub struct Half {
    /// The CPU of the device and the bare sender (p-net and the load threads on the other).
    pub device_cpu: usize,
    pub seconds: f64,
    pub device_missed: u64,
    pub device_dev_p99: f64,
    pub pnet_missed: Option<u64>,
    pub pnet_dev_p99: Option<f64>,
    pub bare_missed: u64,
    pub bare_dev_p99: f64,
    /// The bare sender beside p-net.
    pub pnet_bare_missed: Option<u64>,
    pub pnet_bare_dev_p99: Option<f64>,
}

/// Move the device and the bare sender from `cpu` to the other CPUs, the processes on
/// p-net's side (p-net, its bare sender) and the load threads (restarted, `load_threads` of
/// them) to `cpu`. Returns the CPU the device is on now.
pub fn exchange(
    cpu: usize,
    dev_pid: u32,
    bare_pid: Option<u32>,
    pnet_side: &[Option<u32>],
    load: &mut Option<CpuLoad>,
    load_threads: usize,
) -> Result<usize, String> {
    let others = raw::other_cpus(cpu);
    if others.is_empty() {
        return Err("--swap needs a second CPU".into());
    }
    // The load first, so that the device never shares a CPU with it.
    if load.is_some() {
        *load = None;
        *load = Some(CpuLoad::start_on(load_threads, vec![cpu]));
    }
    for p in pnet_side.iter().flatten() {
        raw::pin_process(*p, &[cpu])?;
    }
    if let Some(b) = bare_pid {
        raw::pin_process(b, &others)?;
    }
    raw::pin_device(dev_pid, &others, &[cpu])?;
    Ok(others[0])
}

/// The figures of each half: records before `t_swap` (CLOCK_REALTIME ns, the recorder's clock)
/// with the device on `first_cpu`, from `t_swap` on with it on `second_cpu`.
pub fn halves(
    recs: &[Rec],
    macs: &[[u8; 6]],
    period_ns: u64,
    t_swap: u64,
    (first_cpu, second_cpu): (usize, usize),
) -> Vec<Half> {
    let (a, b): (Vec<Rec>, Vec<Rec>) = recs.iter().partition(|r| r.ts < t_swap);
    [(a, first_cpu), (b, second_cpu)]
        .into_iter()
        .map(|(part, cpu)| {
            let span = match (
                part.iter().map(|r| r.ts).min(),
                part.iter().map(|r| r.ts).max(),
            ) {
                (Some(lo), Some(hi)) => (hi - lo) as f64 / 1e9,
                _ => 0.0,
            };
            let s = Streams::split(&part, macs, period_ns);
            Half {
                device_cpu: cpu,
                seconds: span,
                device_missed: s.device.st.missed_cycles,
                device_dev_p99: s.device.st.dev_p99,
                pnet_missed: s.pnet.as_ref().map(|(p, _)| p.st.missed_cycles),
                pnet_dev_p99: s.pnet.as_ref().map(|(p, _)| p.st.dev_p99),
                bare_missed: s.bare.missed_cycles,
                bare_dev_p99: s.bare.dev_p99,
                pnet_bare_missed: s.pnet_bare.as_ref().map(|b| b.missed_cycles),
                pnet_bare_dev_p99: s.pnet_bare.as_ref().map(|b| b.dev_p99),
            }
        })
        .collect()
}

/// One line per half for the console.
pub fn lines(halves: &[Half]) -> String {
    halves
        .iter()
        .enumerate()
        .map(|(i, h)| {
            format!(
                "  half {} ({:.0} s, device and bare sender on CPU {}, p-net and load on the other): missed device {} p-net {} bare beside device {} beside p-net {}; |dev| p99 device {:.1} us p-net {} bare beside device {:.1} us beside p-net {}\n",
                i + 1,
                h.seconds,
                h.device_cpu,
                h.device_missed,
                opt(h.pnet_missed.map(|m| m.to_string())),
                h.bare_missed,
                opt(h.pnet_bare_missed.map(|m| m.to_string())),
                h.device_dev_p99,
                opt(h.pnet_dev_p99.map(|p| format!("{p:.1} us"))),
                h.bare_dev_p99,
                opt(h.pnet_bare_dev_p99.map(|p| format!("{p:.1} us"))),
            )
        })
        .collect()
}

fn opt(v: Option<String>) -> String {
    v.unwrap_or_else(|| "-".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::pnet::PNET_MAC;
    use crate::bench::recorder::{Kind, BARE_BESIDE_PNET};

    const MS: u64 = 1_000_000;

    fn rec(ts: u64, kind: Kind, src: u16) -> Rec {
        Rec {
            ts,
            kind,
            src,
            data: 0,
        }
    }

    #[test]
    fn halves_count_each_stream_on_its_side_of_the_exchange() {
        let macs = [[0x02, 0, 0, 0, 0, 1], PNET_MAC];
        let mut recs = Vec::new();
        for i in 0..1000u64 {
            let t = 1_000 * MS + i * MS;
            // The device misses slot 100 (first half), p-net slots 700 and 701 (second half),
            // the bare sender nothing.
            if i != 100 {
                recs.push(rec(t, Kind::DevCyclic, 0));
            }
            if i != 700 && i != 701 {
                recs.push(rec(t + 10_000, Kind::DevCyclic, 1));
            }
            recs.push(rec(t + 20_000, Kind::Bare, 0));
            // The bare sender beside p-net misses slot 702.
            if i != 702 {
                recs.push(rec(t + 30_000, Kind::Bare, BARE_BESIDE_PNET));
            }
        }
        let h = halves(&recs, &macs, MS, 1_500 * MS, (1, 0));
        assert_eq!(h.len(), 2);
        assert_eq!(
            (h[0].device_cpu, h[0].device_missed, h[0].pnet_missed),
            (1, 1, Some(0))
        );
        assert_eq!(
            (h[1].device_cpu, h[1].device_missed, h[1].pnet_missed),
            (0, 0, Some(2))
        );
        assert_eq!((h[0].bare_missed, h[1].bare_missed), (0, 0));
        assert_eq!(
            (h[0].pnet_bare_missed, h[1].pnet_bare_missed),
            (Some(0), Some(1))
        );
        assert!((h[0].seconds - 0.5).abs() < 0.01, "{:?}", h[0]);
        let text = lines(&h);
        assert!(
            text.contains("half 2 (0 s, device and bare sender on CPU 0"),
            "{text}"
        );
        assert!(
            text.contains("missed device 0 p-net 2 bare beside device 0 beside p-net 1"),
            "{text}"
        );
    }
}

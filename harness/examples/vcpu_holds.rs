//! Do the CPUs of this machine stop one at a time or together? One SCHED_FIFO thread per CPU,
//! pinned, wakes on absolute 1 ms deadlines and records every wake-up later than a threshold;
//! at the end each CPU's late wake-ups are counted, and how many of them overlap a late
//! wake-up of another CPU. On a virtual machine whose host holds single vCPUs, few overlap:
//! a sender on a second CPU covers the first's holds (docs/decisions.md §41).
//!
//! ```console
//! $ cargo build --release -p pn-lab --example vcpu_holds
//! $ sudo target/release/examples/vcpu_holds --seconds 120 --late-us 400
//! ```

use std::time::Duration;

use clap::Parser;

#[derive(Parser)]
struct Args {
    /// How long to watch.
    #[arg(long, default_value_t = 120)]
    seconds: u64,
    /// A wake-up this much later than its deadline counts as a hold.
    #[arg(long, default_value_t = 400)]
    late_us: u64,
    /// SCHED_FIFO priority of the watching threads.
    #[arg(long, default_value_t = 59)]
    prio: i32,
}

fn mono_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid pointer to a timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Watch `cpu` until `end_ns`: the (deadline, wake-up) of every late wake-up.
fn watch(cpu: usize, prio: i32, late_ns: u64, end_ns: u64) -> Result<Vec<(u64, u64)>, String> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; the CPU index is below CPU_SETSIZE
    // (it comes from available_parallelism); plain syscalls on the calling thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(format!("CPU {cpu}: {}", std::io::Error::last_os_error()));
        }
        let p = libc::sched_param {
            sched_priority: prio,
        };
        if libc::sched_setscheduler(0, libc::SCHED_FIFO, &p) != 0 {
            return Err(format!("SCHED_FIFO: {}", std::io::Error::last_os_error()));
        }
    }
    let mut late = Vec::new();
    let mut t = (mono_ns() / 1_000_000 + 2) * 1_000_000;
    while t < end_ns {
        let ts = libc::timespec {
            tv_sec: (t / 1_000_000_000) as libc::time_t,
            tv_nsec: (t % 1_000_000_000) as libc::c_long,
        };
        // SAFETY: valid timespec; TIMER_ABSTIME needs no remainder.
        unsafe {
            libc::clock_nanosleep(
                libc::CLOCK_MONOTONIC,
                libc::TIMER_ABSTIME,
                &ts,
                std::ptr::null_mut(),
            )
        };
        let now = mono_ns();
        if now - t > late_ns {
            late.push((t, now));
        }
        while t <= now {
            t += 1_000_000;
        }
    }
    Ok(late)
}

fn main() -> Result<(), String> {
    let a = Args::parse();
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cpus < 2 {
        return Err("one CPU: nothing to compare".into());
    }
    let end = mono_ns() + Duration::from_secs(a.seconds).as_nanos() as u64;
    let late_ns = a.late_us * 1000;
    let threads: Vec<_> = (0..cpus)
        .map(|c| std::thread::spawn(move || watch(c, a.prio, late_ns, end)))
        .collect();
    let mut per_cpu = Vec::new();
    for t in threads {
        per_cpu.push(t.join().map_err(|_| "a watcher panicked")??);
    }
    let overlaps = |a: &(u64, u64), b: &(u64, u64)| b.0 < a.1 && a.0 < b.1;
    println!(
        "{} s, wake-ups more than {} us late, SCHED_FIFO {}:",
        a.seconds, a.late_us, a.prio
    );
    for (c, mine) in per_cpu.iter().enumerate() {
        let shared = mine
            .iter()
            .filter(|m| {
                per_cpu
                    .iter()
                    .enumerate()
                    .any(|(o, theirs)| o != c && theirs.iter().any(|t| overlaps(m, t)))
            })
            .count();
        let longest = mine.iter().map(|(d, w)| w - d).max().unwrap_or(0);
        println!(
            "  CPU {c}: {} late, {shared} of them overlapping a late wake-up of another CPU; longest {} us",
            mine.len(),
            longest / 1000
        );
    }
    Ok(())
}

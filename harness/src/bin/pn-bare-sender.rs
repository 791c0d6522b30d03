//! `pn-bare-sender`: the baseline of the cycle benchmarks. A bare raw-socket sender that does
//! nothing but send one 60-byte frame (EtherType 0x88B5) per period on absolute deadlines
//! (`clock_nanosleep(TIMER_ABSTIME)` on CLOCK_MONOTONIC), timer slack 1 ns, SCHED_FIFO and
//! mlockall: the best this machine and kernel can do, measured beside the device in the same
//! run (`pn-lab bench cycle` starts it in the device namespace on the device's NIC).
//! `--relative` sleeps a relative period instead (the naive loop, for comparison).
//! Missed slots are skipped, never caught up.
//! `--grid` puts the deadlines on the period grid of CLOCK_MONOTONIC, where pn-farm's providers
//! send (`SlotClock::on_grid`, the same function): the baseline is then due at the devices'
//! instants and sees a hold of the CPU as they do. Without it, its phase is its start time's,
//! and a hold that covers the devices' instant can end before the bare sender's (a trace of
//! CPU 1 in `docs/benchmarks.md`, session 13).

use clap::Parser;
use pn_lab::bench::raw;
use pn_protocol::machine::ppm::SlotClock;

#[derive(Parser)]
#[command(
    name = "pn-bare-sender",
    version,
    about = "bare raw-socket periodic sender (benchmark baseline)"
)]
struct Args {
    /// Network interface.
    #[arg(long)]
    iface: String,
    /// Period in microseconds.
    #[arg(long, default_value_t = 1000)]
    period_us: u64,
    /// Run time in seconds (0 = until killed).
    #[arg(long, default_value_t = 10)]
    duration_s: u64,
    /// SCHED_FIFO priority (0 = do not ask).
    #[arg(long, default_value_t = 60)]
    fifo: i32,
    /// Do not mlockall.
    #[arg(long)]
    no_mlock: bool,
    /// Relative sleeps (std::thread::sleep) instead of absolute deadlines.
    #[arg(long)]
    relative: bool,
    /// Destination MAC of the frames (default broadcast). On a bridge with other devices,
    /// the controller's MAC keeps the frames away from them.
    #[arg(long, value_parser = parse_dst, default_value = "ff:ff:ff:ff:ff:ff")]
    dst: [u8; 6],
    /// Deadlines on the period grid of CLOCK_MONOTONIC (pn-farm's send instants) instead of
    /// one period after the start.
    #[arg(long, conflicts_with = "relative")]
    grid: bool,
}

fn parse_dst(s: &str) -> Result<[u8; 6], String> {
    pn_controller::parse_mac(s)
        .map(|m| m.0)
        .ok_or_else(|| format!("'{s}' is not a MAC address"))
}

fn main() {
    let a = Args::parse();
    let fd = match raw::packet_socket(&a.iface) {
        Ok(fd) => fd,
        Err(e) => {
            eprintln!("pn-bare-sender: {}: {e}", a.iface);
            std::process::exit(1);
        }
    };
    let mac = raw::mac_of(&fd, &a.iface).unwrap_or([2, 0, 0, 0, 0, 1]);
    let fifo = a.fifo > 0 && raw::set_fifo(a.fifo);
    let locked = !a.no_mlock && raw::lock_memory();
    raw::set_timer_slack(1);
    let mut frame = [0u8; 60];
    frame[0..6].copy_from_slice(&a.dst);
    frame[6..12].copy_from_slice(&mac);
    frame[12..14].copy_from_slice(&raw::BARE_ETHERTYPE.to_be_bytes());
    let period = a.period_us.max(10) * 1000;
    let start = raw::mono_ns();
    let end = if a.duration_s == 0 {
        u64::MAX
    } else {
        start + a.duration_s * 1_000_000_000
    };
    let (mut sent, mut missed, mut max_late) = (0u64, 0u64, 0u64);
    let mut next = if a.grid {
        SlotClock::on_grid(start, period, 1).next_ns()
    } else {
        start + period
    };
    let mut seq = 0u32;
    while next < end {
        if a.relative {
            std::thread::sleep(std::time::Duration::from_nanos(period));
        } else {
            raw::sleep_until_abs(next);
        }
        let now = raw::mono_ns();
        let late = now.saturating_sub(next);
        max_late = max_late.max(late);
        if !a.relative && late >= period {
            missed += late / period;
            next += (late / period) * period;
        }
        seq = seq.wrapping_add(1);
        frame[14..18].copy_from_slice(&seq.to_be_bytes());
        if raw::send(&fd, &frame) {
            sent += 1;
        }
        next = if a.relative { now } else { next + period };
    }
    println!(
        "{{\"sent\":{sent},\"missedSlots\":{missed},\"maxLateUs\":{},\"fifo\":{fifo},\"mlock\":{locked},\"relative\":{},\"grid\":{}}}",
        max_late / 1000,
        a.relative,
        a.grid
    );
}

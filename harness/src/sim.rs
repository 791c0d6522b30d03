//! `pn-lab sim`: runs the deterministic simulator of both peers (`pn_protocol::sim`) for one
//! seed or a range of seeds, prints what each run saw, and writes one run's link as a pcap
//! file so tshark (an independent dissector) can judge the frames the machines built.

use std::fs::File;
use std::io::BufWriter;
use std::path::PathBuf;
use std::process::ExitCode;

use pn_protocol::sim::{run, Plant, Report, SimConfig};
use pn_protocol::wire::ethernet::EthernetRepr;

#[derive(clap::Args, Debug)]
pub struct SimArgs {
    /// First seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Number of consecutive seeds to run, starting at --seed.
    #[arg(long, default_value_t = 1)]
    pub seeds: u64,
    /// Plant a known bug, to see the invariants catch it.
    #[arg(long, value_enum)]
    pub plant: Option<PlantArg>,
    /// Write every frame sent on the simulated link (lost ones included) of the first seed's
    /// run to this pcap file.
    #[arg(long)]
    pub pcap: Option<PathBuf>,
    /// Print the first seed's frames one by one (time, direction, FrameID, lost or not).
    #[arg(long)]
    pub steps: bool,
    /// Print only the runs that broke an invariant, and the total.
    #[arg(long)]
    pub quiet: bool,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum PlantArg {
    /// The device's consumer uses one DataHoldFactor less than agreed.
    WatchdogOffByOne,
    /// The controller drops one received alarm.
    LoseOneAlarm,
    /// The controller takes its first alarm and never sends the AlarmAck.
    AlarmAckNeverSent,
    /// The device confirms record writes in the five seconds after a link flap but drops them.
    LostWriteOnFlap,
    /// The device ends an AR whose controller went silent with the wrong abort reason.
    WrongAbortReason,
    /// The service takes an AR's data exchange without asking the state table.
    LateExchangeTaken,
    /// The licence recheck finds the licence invalid and leaves the slave running.
    LicenceRecheckIgnored,
    /// The device stores a temporary DCP Set NameOfStation as a permanent one.
    TemporaryNameKept,
    /// The device's LLDP agent is not told about a new NameOfStation.
    LldpStaleName,
    /// The device's DCP responder answers every Identify, whatever its filter.
    IdentifyFilterIgnored,
}

impl From<PlantArg> for Plant {
    fn from(p: PlantArg) -> Plant {
        match p {
            PlantArg::WatchdogOffByOne => Plant::WatchdogOffByOne,
            PlantArg::LoseOneAlarm => Plant::LoseOneAlarm,
            PlantArg::AlarmAckNeverSent => Plant::AlarmAckNeverSent,
            PlantArg::LostWriteOnFlap => Plant::LostWriteOnFlap,
            PlantArg::WrongAbortReason => Plant::WrongAbortReason,
            PlantArg::LateExchangeTaken => Plant::LateExchangeTaken,
            PlantArg::LicenceRecheckIgnored => Plant::LicenceRecheckIgnored,
            PlantArg::TemporaryNameKept => Plant::TemporaryNameKept,
            PlantArg::LldpStaleName => Plant::LldpStaleName,
            PlantArg::IdentifyFilterIgnored => Plant::IdentifyFilterIgnored,
        }
    }
}

pub fn main(a: &SimArgs) -> ExitCode {
    let first = a.seed;
    let n = a.seeds.max(1);
    let plant = a.plant.map(Plant::from);
    let config = |seed: u64| {
        let mut cfg = SimConfig::for_seed(seed);
        cfg.plant = plant;
        // The first seed's run keeps its frames for the pcap and the step list.
        cfg.trace = seed == first && (a.pcap.is_some() || a.steps);
        cfg
    };
    let runs = run_parallel(first, n, config);
    let mut failed = 0u64;
    for (cfg, rep) in &runs {
        if !a.quiet || !rep.violations.is_empty() {
            println!("{}", summary(cfg, rep));
        }
        for v in &rep.violations {
            println!("  violation: {v}");
        }
        if !rep.violations.is_empty() {
            failed += 1;
            println!("  replay: {}", replay_command(cfg.seed, a.plant));
        }
        if cfg.trace && a.steps {
            print_steps(rep);
        }
        if let (true, Some(path)) = (cfg.trace, &a.pcap) {
            if let Err(e) = write_pcap(path, rep) {
                eprintln!("pn-lab sim: cannot write {}: {e}", path.display());
                return ExitCode::FAILURE;
            }
        }
    }
    println!("{n} seeds, {failed} with invariant violations");
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// Run seeds `first..first+n` on every core; the results come back in seed order (each run
/// is deterministic and independent, so the order of execution does not matter).
fn run_parallel(
    first: u64,
    n: u64,
    config: impl Fn(u64) -> SimConfig + Sync,
) -> Vec<(SimConfig, Report)> {
    let threads = std::thread::available_parallelism()
        .map(|p| p.get() as u64)
        .unwrap_or(1)
        .clamp(1, n);
    let per = n.div_ceil(threads);
    std::thread::scope(|sc| {
        let handles: Vec<_> = (0..threads)
            .map(|k| {
                let config = &config;
                sc.spawn(move || {
                    let lo = first.saturating_add(k * per);
                    let hi = first.saturating_add(((k + 1) * per).min(n));
                    (lo..hi)
                        .map(|seed| {
                            let cfg = config(seed);
                            let rep = run(&cfg);
                            (cfg, rep)
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_default())
            .collect()
    })
}

/// The command that replays one seed's run, step by step, with its frames as a pcap.
pub fn replay_command(seed: u64, plant: Option<PlantArg>) -> String {
    let plant = plant
        .and_then(|p| clap::ValueEnum::to_possible_value(&p))
        .map(|v| format!(" --plant {}", v.get_name()))
        .unwrap_or_default();
    format!("pn-lab sim --seed {seed} --seeds 1{plant} --steps --pcap sim-seed-{seed}.pcap")
}

/// The frames and the machines' decisions of a traced run, one line each, in time order.
fn print_steps(r: &Report) {
    let mut lines: Vec<(u64, String)> = r
        .trace
        .iter()
        .map(|f| {
            let (dir, fid) = match EthernetRepr::parse_frame(&f.frame) {
                Ok((e, p)) if p.len() >= 2 => (
                    if e.src.0[5] == 0x01 {
                        "controller -> device"
                    } else {
                        "device -> controller"
                    },
                    u16::from_be_bytes([p[0], p[1]]),
                ),
                _ => ("?", 0),
            };
            let lost = if f.lost { "  (lost on the link)" } else { "" };
            let text = format!("{dir}  FrameID 0x{fid:04X}  {} bytes{lost}", f.frame.len());
            (f.at.as_nanos(), text)
        })
        .chain(
            r.events
                .iter()
                .map(|(at, e)| (at.as_nanos(), format!("** {e}"))),
        )
        .collect();
    // Stable: at the same time, frames (sent first) before decisions.
    lines.sort_by_key(|(t, _)| *t);
    for (t, text) in lines {
        println!("  t={:>10} us  {text}", t / 1000);
    }
}

/// One line per run: the seed's impairments and what happened.
pub fn summary(cfg: &SimConfig, r: &Report) -> String {
    format!(
        "seed {}: cycle {} us, DataHoldFactor {}, loss {:.1} %, dup {:.1} % | frames {} \
         (lost {}), watchdog trips device {} controller {}, alarms {}/{} delivered \
         ({} acknowledged), RTA timeouts {}, ARs established {}{}",
        cfg.seed,
        u64::from(cfg.send_clock_factor) * u64::from(cfg.reduction_ratio) * 125 / 4,
        cfg.data_hold_factor,
        cfg.loss * 100.0,
        cfg.duplicate * 100.0,
        r.frames_sent,
        r.frames_lost,
        r.trips[0],
        r.trips[1],
        r.alarms_delivered,
        r.alarms_sent,
        r.alarms_acked,
        r.rta_timeouts,
        r.ars_established,
        if r.violations.is_empty() {
            ", ok"
        } else {
            ", FAILED"
        },
    )
}

fn write_pcap(path: &PathBuf, r: &Report) -> Result<(), Box<dyn std::error::Error>> {
    let mut w = pcap_file::pcap::PcapWriter::new(BufWriter::new(File::create(path)?))?;
    for f in &r.trace {
        let ts = std::time::Duration::from_nanos(f.at.as_nanos());
        let len = u32::try_from(f.frame.len())?;
        w.write_packet(&pcap_file::pcap::PcapPacket::new(ts, len, &f.frame))?;
    }
    Ok(())
}

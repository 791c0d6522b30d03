//! `pn-lab sim`: runs the deterministic simulator of both peers (`pn_protocol::sim`) for one
//! seed or a range of seeds, prints what each run saw, and writes one run's link as a pcap
//! file so tshark (an independent dissector) can judge the frames the machines built.

use std::fs::File;
use std::io::BufWriter;
use std::path::PathBuf;
use std::process::ExitCode;

use pn_protocol::sim::{run, Plant, Report, SimConfig};

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
}

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum PlantArg {
    /// The device's consumer uses one DataHoldFactor less than agreed.
    WatchdogOffByOne,
    /// The controller drops one received alarm.
    LoseOneAlarm,
}

impl From<PlantArg> for Plant {
    fn from(p: PlantArg) -> Plant {
        match p {
            PlantArg::WatchdogOffByOne => Plant::WatchdogOffByOne,
            PlantArg::LoseOneAlarm => Plant::LoseOneAlarm,
        }
    }
}

pub fn main(a: &SimArgs) -> ExitCode {
    let mut failed = 0u64;
    for (i, seed) in (a.seed..a.seed.saturating_add(a.seeds.max(1))).enumerate() {
        let mut cfg = SimConfig::for_seed(seed);
        cfg.plant = a.plant.map(Plant::from);
        cfg.trace = i == 0 && a.pcap.is_some();
        let rep = run(&cfg);
        println!("{}", summary(&cfg, &rep));
        for v in &rep.violations {
            println!("  violation: {v}");
        }
        if !rep.violations.is_empty() {
            failed += 1;
        }
        if let (true, Some(path)) = (cfg.trace, &a.pcap) {
            if let Err(e) = write_pcap(path, &rep) {
                eprintln!("pn-lab sim: cannot write {}: {e}", path.display());
                return ExitCode::FAILURE;
            }
        }
    }
    println!(
        "{} seeds, {} with invariant violations",
        a.seeds.max(1),
        failed
    );
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// One line per run: the seed's impairments and what happened.
pub fn summary(cfg: &SimConfig, r: &Report) -> String {
    format!(
        "seed {}: cycle {} us, DataHoldFactor {}, loss {:.1} %, dup {:.1} % | frames {} \
         (lost {}), watchdog trips device {} controller {}, alarms {}/{} delivered, \
         RTA timeouts {}{}",
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
        r.rta_timeouts,
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

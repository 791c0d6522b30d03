//! `pn-lab`: the lab: the demo, scenario files, benchmarks and the soak run.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use pn_lab::scenario::run::{default_artifacts_dir, run_with, RunOptions};
use pn_lab::scenario::Scenario;

/// Device and controller in network namespaces: the demo, scenarios, benchmarks, soak.
#[derive(Parser, Debug)]
#[command(name = "pn-lab", version)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// The device (host namespace, dashboard at http://127.0.0.1:18840) in data exchange with
    /// the controller simulator; when the AR ends it says why and reconnects; Ctrl-C stops
    /// (root).
    Demo {
        /// Stop after this many seconds.
        #[arg(long)]
        seconds: Option<u64>,
        /// Record the link (the device's side) to this pcap file for the whole run.
        #[arg(long, value_name = "FILE")]
        pcap: Option<PathBuf>,
    },
    /// Validate scenario files.
    Check {
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Run scenario files (root: namespaces). A failed scenario keeps its capture and the
    /// device's log in ./pn-lab-failures/<scenario>-<UTC time>/ (the path is printed).
    Run {
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Record the link (the controller's side) to this pcap file for the whole run (one
        /// scenario file only).
        #[arg(long, value_name = "FILE")]
        pcap: Option<PathBuf>,
        /// Where failed scenarios keep their capture and log (default ./pn-lab-failures).
        #[arg(long, value_name = "DIR")]
        artifacts: Option<PathBuf>,
    },
    /// Performance benchmarks (docs/benchmarks.md; root).
    #[command(subcommand)]
    Bench(Box<pn_lab::bench::BenchCmd>),
    /// Device and controller with random faults; counters at the end (root).
    Soak(pn_lab::soak::SoakArgs),
    /// Both peers' real-time machines in simulated time over a seeded lossy link, with
    /// invariant checks; a failing seed replays exactly (no root needed).
    Sim(pn_lab::sim::SimArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.cmd {
        Cmd::Bench(b) => pn_lab::bench::main(&b),
        Cmd::Soak(s) => pn_lab::soak::main(&s),
        Cmd::Sim(s) => pn_lab::sim::main(&s),
        Cmd::Demo { seconds, pcap } => {
            match pn_lab::demo::run(seconds.map(std::time::Duration::from_secs), pcap.as_deref()) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("pn-lab demo: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        Cmd::Check { files } => scenarios(&files, None),
        Cmd::Run {
            files,
            pcap,
            artifacts,
        } => {
            if pcap.is_some() && files.len() > 1 {
                eprintln!("pn-lab run: --pcap records one run: give one scenario file");
                return ExitCode::from(2);
            }
            let o = RunOptions {
                pcap,
                artifacts: artifacts.unwrap_or_else(default_artifacts_dir),
                ..RunOptions::default()
            };
            scenarios(&files, Some(&o))
        }
    }
}

/// Check (`run` = None) or run the scenario files.
fn scenarios(files: &[PathBuf], run: Option<&RunOptions>) -> ExitCode {
    let mut failed = 0;
    for f in files {
        let sc = match Scenario::load(f) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("{e}");
                failed += 1;
                continue;
            }
        };
        let Some(o) = run else {
            println!("ok  {} ({} steps)", f.display(), sc.steps.len());
            continue;
        };
        match run_with(&sc, o) {
            Ok(()) => {
                println!("ok    {}", f.display());
                if let Some(p) = &o.pcap {
                    println!("capture: {}", p.display());
                }
            }
            Err(e) => {
                println!("FAIL  {}\n{e}", f.display());
                failed += 1;
            }
        }
    }
    println!("{} passed, {} failed", files.len() - failed, failed);
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

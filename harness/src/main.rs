//! `pn-lab`: the lab: the demo, scenario files, benchmarks and the soak run.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use pn_lab::scenario::{run::run, Scenario};

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
    /// the controller simulator; Ctrl-C stops (root).
    Demo {
        /// Stop after this many seconds.
        #[arg(long)]
        seconds: Option<u64>,
    },
    /// Validate scenario files.
    Check {
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Run scenario files (root: namespaces).
    Run {
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Performance benchmarks (docs/benchmarks.md; root).
    #[command(subcommand)]
    Bench(pn_lab::bench::BenchCmd),
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
        Cmd::Demo { seconds } => {
            match pn_lab::demo::run(seconds.map(std::time::Duration::from_secs)) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("pn-lab demo: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        Cmd::Check { files } => scenarios(&files, false),
        Cmd::Run { files } => scenarios(&files, true),
    }
}

fn scenarios(files: &[PathBuf], execute: bool) -> ExitCode {
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
        if !execute {
            println!("ok  {} ({} steps)", f.display(), sc.steps.len());
            continue;
        }
        match run(&sc) {
            Ok(()) => println!("ok    {}", f.display()),
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

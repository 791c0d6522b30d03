//! `pn-lab`: run scenario files, check them, and (later) demo, bench and soak commands.

use pn_lab::scenario::{run::run, Scenario};
use std::path::PathBuf;
use std::process::ExitCode;

fn usage() -> ExitCode {
    eprintln!(
        "usage:\n  pn-lab demo [--seconds N]  device (host namespace, dashboard at http://127.0.0.1:18840) in data exchange with the controller simulator; Ctrl-C stops\n  pn-lab check FILE...       validate scenario files\n  pn-lab run FILE...         run scenario files (root: namespaces)\n  pn-lab bench SUB ...       performance benchmarks (cycle, http, latency, scale; see docs/benchmarks.md)\n  pn-lab soak --minutes N [--seed S] [--json]  device and controller with random faults; counters at the end"
    );
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((cmd, files)) = args.split_first() else {
        return usage();
    };
    let files: Vec<PathBuf> = files.iter().map(PathBuf::from).collect();
    match cmd.as_str() {
        "bench" => pn_lab::bench::main(&args[1..]),
        "soak" => pn_lab::soak::main(&args[1..]),
        "demo" => {
            let limit = match files.as_slice() {
                [] => None,
                [flag, n] if flag.as_os_str() == "--seconds" => {
                    match n.to_str().and_then(|s| s.parse::<u64>().ok()) {
                        Some(s) => Some(std::time::Duration::from_secs(s)),
                        None => return usage(),
                    }
                }
                _ => return usage(),
            };
            match pn_lab::demo::run(limit) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("pn-lab demo: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        "check" | "run" => {
            let mut failed = 0;
            for f in &files {
                let sc = match Scenario::load(f) {
                    Ok(s) => s,
                    Err(e) => {
                        eprintln!("{e}");
                        failed += 1;
                        continue;
                    }
                };
                if cmd == "check" {
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
        _ => usage(),
    }
}

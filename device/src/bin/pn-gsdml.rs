//! `pn-gsdml`: write the GSDML file that matches a runtime configuration XML, so an
//! engineering tool (TIA Portal, CODESYS) can configure a controller for the device.
//!
//! ```text
//! pn-gsdml [--config <runtime-config.xml>] [--out <dir or file>] [--vendor-name <name>]
//!          [--date <yyyymmdd>] [--stdout]
//! ```
//! Without `--config` the daemon's embedded default configuration is used. `--out` defaults to
//! the current directory; a directory gets the PI file name
//! `GSDML-V2.43-<vendor>-<device>-<date>.xml` (date: today, UTC, or `--date`).

use std::path::PathBuf;
use std::process::ExitCode;

use pn_device::config::RuntimeConfig;
use pn_device::gsdml::{file_name, generate, today, GsdmlOptions};

const USAGE: &str = "usage: pn-gsdml [--config <runtime-config.xml>] [--out <dir or file>] \
                     [--vendor-name <name>] [--date <yyyymmdd>] [--stdout]";

fn main() -> ExitCode {
    let mut config: Option<PathBuf> = None;
    let mut out: Option<PathBuf> = None;
    let mut opts = GsdmlOptions::default();
    let mut date = today();
    let mut to_stdout = false;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut val = |name: &str| args.next().ok_or_else(|| format!("{name} needs a value"));
        let r = match a.as_str() {
            "--config" => val("--config").map(|v| config = Some(v.into())),
            "--out" => val("--out").map(|v| out = Some(v.into())),
            "--vendor-name" => val("--vendor-name").map(|v| opts.vendor_name = v),
            "--date" => val("--date").and_then(|v| {
                if v.len() == 8 && v.bytes().all(|b| b.is_ascii_digit()) {
                    date = v;
                    Ok(())
                } else {
                    Err("--date must be yyyymmdd".into())
                }
            }),
            "--stdout" => {
                to_stdout = true;
                Ok(())
            }
            "-h" | "--help" => {
                println!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            other => Err(format!("unknown argument {other:?}")),
        };
        if let Err(e) = r {
            eprintln!("pn-gsdml: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    }
    let cfg = match RuntimeConfig::load(config.as_deref()) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("pn-gsdml: {e}");
            return ExitCode::from(1);
        }
    };
    let text = match generate(&cfg, &opts) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("pn-gsdml: configuration {}: {e}", cfg.source);
            return ExitCode::from(1);
        }
    };
    if to_stdout {
        print!("{text}");
        return ExitCode::SUCCESS;
    }
    let out = out.unwrap_or_else(|| PathBuf::from("."));
    let path = if out.is_dir() {
        out.join(file_name(&cfg, &opts, &date))
    } else {
        out
    };
    if let Err(e) = std::fs::write(&path, text) {
        eprintln!("pn-gsdml: cannot write {}: {e}", path.display());
        return ExitCode::from(1);
    }
    println!("{}", path.display());
    ExitCode::SUCCESS
}

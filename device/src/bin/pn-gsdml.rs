//! `pn-gsdml`: write the GSDML file that matches a runtime configuration XML, so an
//! engineering tool (TIA Portal, CODESYS) can configure a controller for the device.
//!
//! ```text
//! pn-gsdml [--config <runtime-config.xml>] [--out <dir or file>] [--vendor-name <name>]
//!          [--date <yyyymmdd>] [--stdout]
//! ```
//! Without `--config` the daemon's embedded default configuration is used. `--out` defaults to
//! the current directory; a directory gets the PI file name
//! `GSDML-V2.43-<vendor>-<device>-<date>.xml` (date: today, UTC, or `--date`). The device
//! symbol it names, `GSDML-<vendor>-<device>.bmp`, is written into the same directory.

use std::path::PathBuf;
use std::process::ExitCode;

use pn_device::config::RuntimeConfig;
use pn_device::gsdml::{device_icon_bmp, file_name, generate, icon_file_name, today, GsdmlOptions};

/// Write the GSDML file that matches a runtime configuration XML (for TIA Portal, CODESYS).
#[derive(clap::Parser, Debug)]
#[command(name = "pn-gsdml", version)]
struct Args {
    /// Runtime configuration XML (default: the daemon's embedded default configuration).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Output directory (the file gets the PI name GSDML-V2.43-<vendor>-<device>-<date>.xml)
    /// or file.
    #[arg(long, value_name = "DIR_OR_FILE", default_value = ".")]
    out: PathBuf,
    /// Vendor name written into the file and its name.
    #[arg(long)]
    vendor_name: Option<String>,
    /// Date of the file name, yyyymmdd (default: today, UTC).
    #[arg(long, value_parser = parse_date)]
    date: Option<String>,
    /// Print the file instead of writing it.
    #[arg(long)]
    stdout: bool,
}

fn parse_date(v: &str) -> Result<String, String> {
    if v.len() == 8 && v.bytes().all(|b| b.is_ascii_digit()) {
        Ok(v.to_string())
    } else {
        Err("must be yyyymmdd".into())
    }
}

fn main() -> ExitCode {
    let args = <Args as clap::Parser>::parse();
    let config = args.config;
    let mut opts = GsdmlOptions::default();
    if let Some(v) = args.vendor_name {
        opts.vendor_name = v;
    }
    let date = args.date.unwrap_or_else(today);
    let to_stdout = args.stdout;
    let out = args.out;
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
    let path = if out.is_dir() {
        out.join(file_name(&cfg, &opts, &date))
    } else {
        out
    };
    // The device symbol the GSDML names goes beside it: engineering tools import both from
    // one folder.
    let icon = path
        .parent()
        .unwrap_or(std::path::Path::new("."))
        .join(icon_file_name(&cfg, &opts));
    for (p, data) in [(&path, text.into_bytes()), (&icon, device_icon_bmp())] {
        if let Err(e) = std::fs::write(p, data) {
            eprintln!("pn-gsdml: cannot write {}: {e}", p.display());
            return ExitCode::from(1);
        }
    }
    println!("{}", path.display());
    ExitCode::SUCCESS
}

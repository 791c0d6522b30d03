//! pn-licence: issue and check pn-device activation certificates (development and tests;
//! operators: docs/licence.md).
//!
//! ```text
//! pn-licence keygen --private OUT_PRIV --public OUT_PUB
//! pn-licence issue --key PRIV_FILE --licensee NAME [--serial S]
//!                  (--days N | --seconds N | --not-after UNIX) [--not-before UNIX]
//!                  (--any | --machine-id ID | --this-machine | --mac MAC) --out FILE
//! pn-licence verify --cert FILE (--public-key HEX | --public-key-file F) [--nic NIC]
//! pn-licence machine-id
//! ```

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{ArgGroup, Parser, Subcommand};
use pn_device::licence::{self, Binding, Identity, Payload};

/// Issue and check pn-device activation certificates (docs/licence.md).
#[derive(Parser, Debug)]
#[command(name = "pn-licence", version)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Make a signing key pair (Ed25519, hex).
    Keygen {
        #[arg(long, value_name = "OUT_PRIV")]
        private: PathBuf,
        #[arg(long, value_name = "OUT_PUB")]
        public: PathBuf,
    },
    /// Issue a certificate.
    #[command(group(ArgGroup::new("validity").required(true).args(["days", "seconds", "not_after"])))]
    #[command(group(ArgGroup::new("binding").required(true).args(["any", "machine_id", "this_machine", "mac"])))]
    Issue {
        /// The private key file (lines starting with '#' are comments).
        #[arg(long, value_name = "PRIV_FILE")]
        key: PathBuf,
        #[arg(long)]
        licensee: String,
        /// Serial number (default: the issue time).
        #[arg(long)]
        serial: Option<String>,
        /// Valid for this many days from now.
        #[arg(long, allow_negative_numbers = true)]
        days: Option<i64>,
        /// Valid for this many seconds from now.
        #[arg(long, allow_negative_numbers = true)]
        seconds: Option<i64>,
        /// Valid until this UNIX time.
        #[arg(long, value_name = "UNIX", allow_negative_numbers = true)]
        not_after: Option<i64>,
        /// Valid from this UNIX time (default: a minute ago).
        #[arg(long, value_name = "UNIX", allow_negative_numbers = true)]
        not_before: Option<i64>,
        /// Valid on any machine.
        #[arg(long)]
        any: bool,
        /// Bound to this /etc/machine-id.
        #[arg(long, value_name = "ID")]
        machine_id: Option<String>,
        /// Bound to this machine's /etc/machine-id.
        #[arg(long)]
        this_machine: bool,
        /// Bound to the MAC address of the PROFINET NIC.
        #[arg(long)]
        mac: Option<String>,
        #[arg(long, value_name = "FILE")]
        out: PathBuf,
    },
    /// Check a certificate against a public key and this machine.
    #[command(group(ArgGroup::new("key").required(true).args(["public_key", "public_key_file"])))]
    Verify {
        #[arg(long, value_name = "FILE")]
        cert: PathBuf,
        /// The public key (hex).
        #[arg(long, value_name = "HEX")]
        public_key: Option<String>,
        #[arg(long, value_name = "FILE")]
        public_key_file: Option<PathBuf>,
        /// The NIC whose MAC a MAC-bound certificate names.
        #[arg(long)]
        nic: Option<String>,
    },
    /// Print this machine's /etc/machine-id.
    MachineId,
}

fn read(p: &std::path::Path) -> Result<String, String> {
    std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))
}

fn write(p: &std::path::Path, text: String) -> Result<(), String> {
    std::fs::write(p, text).map_err(|e| format!("{}: {e}", p.display()))
}

fn run(cmd: Cmd) -> Result<(), String> {
    match cmd {
        Cmd::Keygen { private, public } => {
            let (sk, pk) = licence::keygen().map_err(|e| e.to_string())?;
            write(&private, format!("{sk}\n"))?;
            write(&public, format!("{pk}\n"))?;
            println!("public key: {pk}");
            Ok(())
        }
        Cmd::Issue {
            key,
            licensee,
            serial,
            days,
            seconds,
            not_after,
            not_before,
            any,
            machine_id,
            this_machine,
            mac,
            out,
        } => {
            let key_text = read(&key)?;
            let key_line = key_text
                .lines()
                .find(|l| !l.trim().is_empty() && !l.starts_with('#'))
                .unwrap_or("");
            let sk = licence::parse_private_key(key_line)?;
            let now = pn_device::util::unix_now();
            let not_before = not_before.unwrap_or(now - 60);
            let not_after = match (days, seconds, not_after) {
                (Some(d), _, _) => now + d * 86_400,
                (_, Some(s), _) => now + s,
                (_, _, Some(t)) => t,
                _ => return Err("one of --days, --seconds, --not-after is required".into()),
            };
            let none = Binding {
                machine_id: None,
                mac: None,
                any: None,
            };
            let binding = if any {
                Binding {
                    any: Some(true),
                    ..none
                }
            } else if let Some(id) = machine_id {
                Binding {
                    machine_id: Some(id),
                    ..none
                }
            } else if this_machine {
                let id = Identity::current(None)
                    .machine_id
                    .ok_or("no /etc/machine-id")?;
                Binding {
                    machine_id: Some(id),
                    ..none
                }
            } else if let Some(mac) = mac {
                Binding {
                    mac: Some(mac.to_lowercase()),
                    ..none
                }
            } else {
                return Err("one of --any, --machine-id, --this-machine, --mac is required".into());
            };
            let payload = Payload {
                licensee,
                product: licence::PRODUCT.into(),
                serial: serial.unwrap_or_else(|| format!("{now}")),
                issued_at: now,
                not_before,
                not_after,
                binding,
            };
            write(&out, licence::issue(&sk, &payload))
        }
        Cmd::Verify {
            cert,
            public_key,
            public_key_file,
            nic,
        } => {
            let text = read(&cert)?;
            let pk = match (public_key, public_key_file) {
                (Some(k), _) => k,
                (None, Some(f)) => read(&f)?,
                _ => return Err("--public-key or --public-key-file is required".into()),
            };
            let id = Identity::current(nic.as_deref());
            let p = licence::verify(
                &text,
                &[pk.trim().to_string()],
                pn_device::util::unix_now(),
                &id,
            )?;
            println!(
                "valid: licensee={} serial={} notAfter={}",
                p.licensee, p.serial, p.not_after
            );
            Ok(())
        }
        Cmd::MachineId => {
            println!(
                "{}",
                Identity::current(None)
                    .machine_id
                    .ok_or("no /etc/machine-id")?
            );
            Ok(())
        }
    }
}

fn main() -> ExitCode {
    match run(Cli::parse().cmd) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("pn-licence: {e}");
            ExitCode::FAILURE
        }
    }
}

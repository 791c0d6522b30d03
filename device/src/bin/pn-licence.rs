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

use std::collections::HashMap;
use std::process::ExitCode;

use pn_device::licence::{self, Binding, Identity, Payload};

const USAGE: &str = "usage:
  pn-licence keygen --private OUT_PRIV --public OUT_PUB
  pn-licence issue --key PRIV_FILE --licensee NAME [--serial S]
                   (--days N | --seconds N | --not-after UNIX) [--not-before UNIX]
                   (--any | --machine-id ID | --this-machine | --mac MAC) --out FILE
  pn-licence verify --cert FILE (--public-key HEX | --public-key-file F) [--nic NIC]
  pn-licence machine-id";

fn parse_args(args: &[String]) -> Result<HashMap<String, String>, String> {
    let mut m = HashMap::new();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        let name = a
            .strip_prefix("--")
            .ok_or_else(|| format!("unexpected argument '{a}'"))?;
        if matches!(name, "any" | "this-machine") {
            m.insert(name.to_string(), String::new());
            i += 1;
            continue;
        }
        let v = args
            .get(i + 1)
            .ok_or_else(|| format!("--{name} needs a value"))?;
        m.insert(name.to_string(), v.clone());
        i += 2;
    }
    Ok(m)
}

fn num(m: &HashMap<String, String>, k: &str) -> Result<Option<i64>, String> {
    m.get(k)
        .map(|v| {
            v.parse::<i64>()
                .map_err(|_| format!("--{k}: not an integer"))
        })
        .transpose()
}

fn run(args: Vec<String>) -> Result<(), String> {
    let cmd = args.first().ok_or(USAGE)?.as_str();
    let m = parse_args(&args[1..])?;
    let need = |k: &str| {
        m.get(k)
            .cloned()
            .ok_or_else(|| format!("--{k} is required\n{USAGE}"))
    };
    match cmd {
        "keygen" => {
            let (sk, pk) = licence::keygen().map_err(|e| e.to_string())?;
            std::fs::write(need("private")?, format!("{sk}\n")).map_err(|e| e.to_string())?;
            std::fs::write(need("public")?, format!("{pk}\n")).map_err(|e| e.to_string())?;
            println!("public key: {pk}");
            Ok(())
        }
        "issue" => {
            let key_text = std::fs::read_to_string(need("key")?).map_err(|e| e.to_string())?;
            // The key file may contain comment lines starting with '#'.
            let key_line = key_text
                .lines()
                .find(|l| !l.trim().is_empty() && !l.starts_with('#'))
                .unwrap_or("");
            let sk = licence::parse_private_key(key_line)?;
            let now = pn_device::util::unix_now();
            let not_before = num(&m, "not-before")?.unwrap_or(now - 60);
            let not_after = if let Some(d) = num(&m, "days")? {
                now + d * 86_400
            } else if let Some(s) = num(&m, "seconds")? {
                now + s
            } else {
                num(&m, "not-after")?.ok_or("one of --days, --seconds, --not-after is required")?
            };
            let binding = if m.contains_key("any") {
                Binding {
                    machine_id: None,
                    mac: None,
                    any: Some(true),
                }
            } else if let Some(id) = m.get("machine-id") {
                Binding {
                    machine_id: Some(id.clone()),
                    mac: None,
                    any: None,
                }
            } else if m.contains_key("this-machine") {
                let id = Identity::current(None)
                    .machine_id
                    .ok_or("no /etc/machine-id")?;
                Binding {
                    machine_id: Some(id),
                    mac: None,
                    any: None,
                }
            } else if let Some(mac) = m.get("mac") {
                Binding {
                    machine_id: None,
                    mac: Some(mac.to_lowercase()),
                    any: None,
                }
            } else {
                return Err("one of --any, --machine-id, --this-machine, --mac is required".into());
            };
            let payload = Payload {
                licensee: need("licensee")?,
                product: licence::PRODUCT.into(),
                serial: m.get("serial").cloned().unwrap_or_else(|| format!("{now}")),
                issued_at: now,
                not_before,
                not_after,
                binding,
            };
            let cert = licence::issue(&sk, &payload);
            std::fs::write(need("out")?, cert).map_err(|e| e.to_string())?;
            Ok(())
        }
        "verify" => {
            let text = std::fs::read_to_string(need("cert")?).map_err(|e| e.to_string())?;
            let pk = match (m.get("public-key"), m.get("public-key-file")) {
                (Some(k), _) => k.clone(),
                (None, Some(f)) => std::fs::read_to_string(f).map_err(|e| e.to_string())?,
                _ => return Err("--public-key or --public-key-file is required".into()),
            };
            let id = Identity::current(m.get("nic").map(|s| s.as_str()));
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
        "machine-id" => {
            println!(
                "{}",
                Identity::current(None)
                    .machine_id
                    .ok_or("no /etc/machine-id")?
            );
            Ok(())
        }
        _ => Err(USAGE.into()),
    }
}

fn main() -> ExitCode {
    match run(std::env::args().skip(1).collect()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("pn-licence: {e}");
            ExitCode::FAILURE
        }
    }
}

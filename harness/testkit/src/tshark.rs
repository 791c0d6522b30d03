//! Wireshark's dissectors (`tshark`) as an independent oracle for the bytes we emit.
//!
//! The device and the controller share one codec, so their agreement proves nothing about the
//! wire format. Every frame kind the codec can emit is therefore also handed to tshark: it must
//! decode as the intended protocol, carry no `_ws.malformed` marker and no expert item of
//! severity Warning or Error, and the dissected field values must equal what was encoded.

use serde_json::Value;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};

/// Expert severities as tshark prints them (`_ws.expert.severity`), from epan/proto.h.
pub const PI_WARN: u64 = 0x0060_0000;
pub const PI_ERROR: u64 = 0x0080_0000;

/// One dissected packet: the flattened `(field, value)` pairs of its layers, in tree order.
#[derive(Debug, Clone)]
pub struct Packet {
    pub fields: Vec<(String, String)>,
    pub raw: Value,
}

impl Packet {
    /// First value of a field, if present.
    pub fn field(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// All values of a field, in tree order.
    pub fn all(&self, name: &str) -> Vec<&str> {
        self.fields
            .iter()
            .filter(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .collect()
    }

    /// First value of a field; panics with the packet's field list when absent (for tests).
    pub fn get(&self, name: &str) -> &str {
        self.field(name).unwrap_or_else(|| {
            panic!(
                "tshark did not report field {name:?}; fields were:\n{}",
                self.dump()
            )
        })
    }

    /// First value parsed as an unsigned integer (decimal or 0x-hex, as tshark prints them).
    pub fn uint(&self, name: &str) -> u64 {
        parse_uint(self.get(name))
            .unwrap_or_else(|| panic!("field {name:?} = {:?} is not an integer", self.get(name)))
    }

    /// `frame.protocols`, e.g. `eth:ethertype:pn_rt:pn_dcp`.
    pub fn protocols(&self) -> &str {
        self.field("frame.protocols").unwrap_or("")
    }

    /// True when Wireshark flagged the packet as malformed.
    pub fn malformed(&self) -> bool {
        self.fields
            .iter()
            .any(|(k, _)| k.starts_with("_ws.malformed"))
    }

    /// Expert items of severity Warning or Error, as their messages.
    pub fn expert_problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        collect_expert(&self.raw, &mut out);
        out
    }

    /// Every field, one per line (for failure messages).
    pub fn dump(&self) -> String {
        self.fields
            .iter()
            .map(|(k, v)| format!("  {k} = {v}"))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Panic unless the packet is free of malformed markers and warning/error expert items.
    pub fn assert_clean(&self, what: &str) {
        assert!(
            !self.malformed(),
            "{what}: tshark marked the frame malformed:\n{}",
            self.dump()
        );
        let problems = self.expert_problems();
        assert!(
            problems.is_empty(),
            "{what}: tshark expert warnings/errors: {problems:?}\n{}",
            self.dump()
        );
    }
}

/// Parse tshark's integer renderings: `123`, `0x1f`, `0x0000001f`.
pub fn parse_uint(s: &str) -> Option<u64> {
    let s = s.trim();
    if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u64::from_str_radix(h, 16).ok()
    } else {
        s.parse().ok()
    }
}

fn collect_expert(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(map) => {
            if let Some(sev) = map.get("_ws.expert.severity").and_then(|s| s.as_str()) {
                let sev = parse_uint(sev).unwrap_or(0);
                if sev >= PI_WARN {
                    let msg = map
                        .get("_ws.expert.message")
                        .and_then(|m| m.as_str())
                        .unwrap_or("(no message)");
                    out.push(format!("severity {sev:#x}: {msg}"));
                }
            }
            for child in map.values() {
                collect_expert(child, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|c| collect_expert(c, out)),
        _ => {}
    }
}

fn flatten(v: &Value, out: &mut Vec<(String, String)>) {
    if let Value::Object(map) = v {
        for (k, child) in map {
            match child {
                Value::String(s) => out.push((k.clone(), s.clone())),
                Value::Object(_) => {
                    out.push((k.clone(), String::new()));
                    flatten(child, out);
                }
                Value::Array(items) => {
                    for item in items {
                        match item {
                            Value::String(s) => out.push((k.clone(), s.clone())),
                            other => {
                                out.push((k.clone(), String::new()));
                                flatten(other, out);
                            }
                        }
                    }
                }
                other => out.push((k.clone(), other.to_string())),
            }
        }
    }
}

static SEQ: AtomicU64 = AtomicU64::new(0);

/// Dissect `frames` (complete Ethernet frames) with tshark and return one [`Packet`] per frame.
/// `extra_args` are passed through (e.g. `-o` preferences or `-d` decode-as rules).
pub fn dissect_with(frames: &[Vec<u8>], extra_args: &[&str]) -> Result<Vec<Packet>, String> {
    let dir = std::env::temp_dir();
    let name = format!(
        "pn-testkit-{}-{}.pcap",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    );
    let path = dir.join(name);
    std::fs::write(&path, crate::pcap::encode(frames)).map_err(|e| e.to_string())?;
    let result = dissect_file(&path, extra_args);
    let _ = std::fs::remove_file(&path);
    let packets = result?;
    if packets.len() != frames.len() {
        return Err(format!(
            "tshark returned {} packets for {} frames",
            packets.len(),
            frames.len()
        ));
    }
    Ok(packets)
}

/// Dissect `frames` with default settings plus IPv4/UDP checksum verification.
pub fn dissect(frames: &[Vec<u8>]) -> Result<Vec<Packet>, String> {
    dissect_with(frames, &[])
}

/// Dissect an existing pcap/pcapng file.
pub fn dissect_file(path: &Path, extra_args: &[&str]) -> Result<Vec<Packet>, String> {
    let out = Command::new("tshark")
        .arg("-n")
        .args([
            "-o",
            "ip.check_checksum:TRUE",
            "-o",
            "udp.check_checksum:TRUE",
        ])
        .args(extra_args)
        .arg("-r")
        .arg(path)
        .args(["-T", "json", "--no-duplicate-keys"])
        .output()
        .map_err(|e| format!("cannot run tshark: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "tshark failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let json: Value =
        serde_json::from_slice(&out.stdout).map_err(|e| format!("tshark JSON unreadable: {e}"))?;
    let arr = json.as_array().ok_or("tshark JSON is not an array")?;
    Ok(arr
        .iter()
        .map(|p| {
            let layers = &p["_source"]["layers"];
            let mut fields = Vec::new();
            flatten(layers, &mut fields);
            Packet {
                fields,
                raw: layers.clone(),
            }
        })
        .collect())
}

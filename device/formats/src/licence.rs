//! Licence gate (spec 1.10): Ed25519-signed activation certificates.
//!
//! Certificate file (JSON, see docs/licence.md):
//! ```json
//! {"format":"pn-device-licence/1","payload":"<base64 of the payload JSON>","signature":"<base64, 64 bytes>"}
//! ```
//! The signature covers `b"pn-device-licence/1\n" || payload_bytes` (domain separation), made
//! with an Ed25519 key whose public half is a trust anchor (`Licence:TrustedPublicKeys`).
//! Payload fields: `licensee`, `product` (must be "pn-device"), `serial`, `issuedAt`,
//! `notBefore`, `notAfter` (Unix seconds) and `binding`: exactly one of
//! `{"machineId": "<contents of /etc/machine-id>"}`, `{"mac": "aa:bb:cc:dd:ee:ff"}` (MAC of the
//! PROFINET NIC) or `{"any": true}` (unbound; for development and site licences).

use base64::Engine;
use ed25519_dalek::{Signature, Signer, SigningKey, VerifyingKey};
use serde::{Deserialize, Serialize};

/// Format tag and signature domain separator.
pub const FORMAT: &str = "pn-device-licence/1";
/// Product name a certificate must carry.
pub const PRODUCT: &str = "pn-device";

/// What a certificate is bound to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Binding {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mac: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub any: Option<bool>,
}

/// The signed content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Payload {
    pub licensee: String,
    pub product: String,
    pub serial: String,
    pub issued_at: i64,
    pub not_before: i64,
    pub not_after: i64,
    pub binding: Binding,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct CertFile {
    format: String,
    payload: String,
    signature: String,
}

/// Identity of the machine the service runs on, for binding checks.
#[derive(Debug, Clone, Default)]
pub struct Identity {
    pub machine_id: Option<String>,
    pub mac: Option<String>,
}

impl Identity {
    /// Read `/etc/machine-id` and the MAC of `nic` (if given and present).
    pub fn current(nic: Option<&str>) -> Identity {
        let machine_id = std::fs::read_to_string("/etc/machine-id")
            .ok()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty());
        let mac = nic
            .filter(|n| crate::config::valid_nic_name(n))
            .and_then(|n| {
                std::fs::read_to_string(format!("/sys/class/net/{n}/address"))
                    .ok()
                    .map(|s| s.trim().to_lowercase())
            });
        Identity { machine_id, mac }
    }
}

/// Parse a hex public key (64 hex digits).
pub fn parse_public_key(hex_key: &str) -> Result<VerifyingKey, String> {
    let bytes = hex::decode(hex_key.trim()).map_err(|e| format!("public key not hex: {e}"))?;
    let arr: [u8; 32] = bytes
        .try_into()
        .map_err(|_| "public key must be 32 bytes".to_string())?;
    VerifyingKey::from_bytes(&arr).map_err(|e| format!("invalid public key: {e}"))
}

/// Parse a hex private key (64 hex digits, the 32-byte Ed25519 seed).
pub fn parse_private_key(hex_key: &str) -> Result<SigningKey, String> {
    let bytes = hex::decode(hex_key.trim()).map_err(|e| format!("private key not hex: {e}"))?;
    let arr: [u8; 32] = bytes
        .try_into()
        .map_err(|_| "private key must be 32 bytes".to_string())?;
    Ok(SigningKey::from_bytes(&arr))
}

/// New key pair from the OS random source. Returns (private hex, public hex).
pub fn keygen() -> std::io::Result<(String, String)> {
    use std::io::Read;
    let mut seed = [0u8; 32];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut seed)?;
    let sk = SigningKey::from_bytes(&seed);
    Ok((
        hex::encode(seed),
        hex::encode(sk.verifying_key().to_bytes()),
    ))
}

fn signed_message(payload: &[u8]) -> Vec<u8> {
    let mut m = Vec::with_capacity(FORMAT.len() + 1 + payload.len());
    m.extend_from_slice(FORMAT.as_bytes());
    m.push(b'\n');
    m.extend_from_slice(payload);
    m
}

/// Issue a certificate (returns the JSON text of the certificate file).
pub fn issue(key: &SigningKey, payload: &Payload) -> String {
    let payload_bytes = serde_json::to_vec(payload).expect("payload serialises");
    let sig = key.sign(&signed_message(&payload_bytes));
    let b64 = base64::engine::general_purpose::STANDARD;
    let cert = CertFile {
        format: FORMAT.into(),
        payload: b64.encode(&payload_bytes),
        signature: b64.encode(sig.to_bytes()),
    };
    serde_json::to_string_pretty(&cert).expect("certificate serialises")
}

/// Verify certificate text against the trust anchors, the time `now` (Unix seconds) and the
/// machine identity. Returns the payload or a reason.
pub fn verify(
    text: &str,
    trusted: &[String],
    now: i64,
    identity: &Identity,
) -> Result<Payload, String> {
    if text.len() > 64 * 1024 {
        return Err("certificate file larger than 64 KiB".into());
    }
    let cert: CertFile =
        serde_json::from_str(text).map_err(|e| format!("certificate is not valid JSON: {e}"))?;
    if cert.format != FORMAT {
        return Err(format!("unsupported certificate format '{}'", cert.format));
    }
    let b64 = base64::engine::general_purpose::STANDARD;
    let payload_bytes = b64
        .decode(cert.payload.trim())
        .map_err(|e| format!("payload not base64: {e}"))?;
    let sig_bytes = b64
        .decode(cert.signature.trim())
        .map_err(|e| format!("signature not base64: {e}"))?;
    let sig = Signature::from_slice(&sig_bytes).map_err(|e| format!("bad signature: {e}"))?;
    let msg = signed_message(&payload_bytes);
    let mut any_key = false;
    let mut valid = false;
    for k in trusted {
        // A broken trust anchor is skipped (reported by the settings check), not fatal.
        if let Ok(vk) = parse_public_key(k) {
            any_key = true;
            if vk.verify_strict(&msg, &sig).is_ok() {
                valid = true;
                break;
            }
        }
    }
    if !any_key {
        return Err("no valid trusted public key configured (Licence:TrustedPublicKeys)".into());
    }
    if !valid {
        return Err("signature does not verify against any trusted public key".into());
    }
    let p: Payload = serde_json::from_slice(&payload_bytes)
        .map_err(|e| format!("payload is not a valid licence: {e}"))?;
    if p.product != PRODUCT {
        return Err(format!(
            "certificate is for product '{}', not '{PRODUCT}'",
            p.product
        ));
    }
    if now < p.not_before {
        return Err(format!(
            "certificate not valid before {}",
            fmt_unix(p.not_before)
        ));
    }
    if now >= p.not_after {
        return Err(format!("certificate expired at {}", fmt_unix(p.not_after)));
    }
    let b = &p.binding;
    let set = [b.machine_id.is_some(), b.mac.is_some(), b.any == Some(true)];
    if set.iter().filter(|x| **x).count() != 1 {
        return Err("certificate binding must name exactly one of machineId, mac, any".into());
    }
    if let Some(m) = &b.machine_id {
        if identity.machine_id.as_deref() != Some(m.as_str()) {
            return Err(format!(
                "certificate is bound to machine id {m}, not this machine"
            ));
        }
    }
    if let Some(m) = &b.mac {
        if identity.mac.as_deref() != Some(m.to_lowercase().as_str()) {
            return Err(format!("certificate is bound to MAC {m}, not this NIC"));
        }
    }
    Ok(p)
}

/// RFC 3339 UTC with milliseconds, the daemon's time format (docs/decisions.md).
fn fmt_unix(t: i64) -> String {
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_secs(t.max(0) as u64);
    humantime::format_rfc3339_millis(t).to_string()
}

/// Seconds since the Unix epoch.
fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// Read and verify the certificate at `path`.
pub fn check_file(
    path: &std::path::Path,
    trusted: &[String],
    identity: &Identity,
) -> Result<Payload, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("licence certificate {}: {e}", path.display()))?;
    verify(&text, trusted, unix_now(), identity)
        .map_err(|e| format!("licence certificate {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn payload(binding: Binding, nb: i64, na: i64) -> Payload {
        Payload {
            licensee: "t".into(),
            product: PRODUCT.into(),
            serial: "1".into(),
            issued_at: nb,
            not_before: nb,
            not_after: na,
            binding,
        }
    }
    fn any() -> Binding {
        Binding {
            machine_id: None,
            mac: None,
            any: Some(true),
        }
    }

    #[test]
    fn issue_verify_and_reject() {
        let (sk_hex, pk_hex) = keygen().unwrap();
        let sk = parse_private_key(&sk_hex).unwrap();
        let id = Identity {
            machine_id: Some("m1".into()),
            mac: None,
        };
        let cert = issue(&sk, &payload(any(), 100, 200));
        assert!(verify(&cert, std::slice::from_ref(&pk_hex), 150, &id).is_ok());
        assert!(verify(&cert, std::slice::from_ref(&pk_hex), 200, &id)
            .unwrap_err()
            .contains("expired"));
        assert!(verify(&cert, std::slice::from_ref(&pk_hex), 50, &id)
            .unwrap_err()
            .contains("before"));
        let (_, other) = keygen().unwrap();
        assert!(verify(&cert, &[other], 150, &id)
            .unwrap_err()
            .contains("signature"));
        assert!(verify(&cert, &[], 150, &id).is_err());
        // tampered payload
        let mut v: serde_json::Value = serde_json::from_str(&cert).unwrap();
        let b64 = base64::engine::general_purpose::STANDARD;
        let mut p: Payload =
            serde_json::from_slice(&b64.decode(v["payload"].as_str().unwrap()).unwrap()).unwrap();
        p.not_after = 10_000;
        v["payload"] = b64.encode(serde_json::to_vec(&p).unwrap()).into();
        assert!(verify(&v.to_string(), std::slice::from_ref(&pk_hex), 150, &id).is_err());
        // machine binding
        let b = Binding {
            machine_id: Some("m2".into()),
            mac: None,
            any: None,
        };
        let cert = issue(&sk, &payload(b, 100, 200));
        assert!(verify(&cert, std::slice::from_ref(&pk_hex), 150, &id)
            .unwrap_err()
            .contains("machine"));
        assert!(verify("garbage", &[pk_hex], 150, &id).is_err());
    }
}

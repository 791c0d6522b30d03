//! Small shared helpers: timestamps and hex formatting (over the `humantime` and `hex` crates).

use std::time::{SystemTime, UNIX_EPOCH};

/// Lower-case hex without prefix or separators (the API's `*Hex` format, docs/decisions.md).
pub fn to_hex(bytes: &[u8]) -> String {
    hex::encode(bytes)
}

/// Parse a hex string as accepted by `POST /api/io` `data`: an even number of hex digits, either
/// case, no prefix, no separators. `None` when invalid.
pub fn parse_hex(s: &str) -> Option<Vec<u8>> {
    if s.len() % 2 != 0 {
        return None;
    }
    hex::decode(s).ok()
}

/// Current time as RFC 3339 UTC with millisecond precision, e.g. `2026-11-23T17:25:27.123Z`
/// (the format of every `timestamp` and `occurredAt`, docs/decisions.md).
pub fn now_rfc3339() -> String {
    rfc3339(SystemTime::now())
}

/// Format a `SystemTime` as RFC 3339 UTC with milliseconds (humantime, a well-kept crate, in
/// place of the calendar arithmetic this file used to carry).
pub fn rfc3339(t: SystemTime) -> String {
    humantime::format_rfc3339_millis(t).to_string()
}

/// Seconds since the Unix epoch.
pub fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn rfc3339_known_values() {
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        let t = UNIX_EPOCH + Duration::from_millis(1_795_447_527_123);
        assert_eq!(rfc3339(t), "2026-11-23T15:25:27.123Z");
        let t = UNIX_EPOCH + Duration::from_secs(951_782_400); // 2000-02-29
        assert_eq!(rfc3339(t), "2000-02-29T00:00:00.000Z");
    }

    #[test]
    fn hex_rules() {
        assert_eq!(parse_hex("0aFF"), Some(vec![0x0a, 0xff]));
        assert_eq!(parse_hex("abc"), None);
        assert_eq!(parse_hex("zz"), None);
        assert_eq!(parse_hex("0x01"), None);
        assert_eq!(to_hex(&[0xAB, 1]), "ab01");
    }
}

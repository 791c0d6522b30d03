//! Redaction of what varies between runs before a response is compared with its golden
//! snapshot: times, epochs, counters, UUIDs and MAC addresses. Structure, field names, types,
//! states, messages and every other value stay, so any change to them fails the scenario.

use serde_json::Value as Json;

/// Fields whose value is a time, or a generation counter that depends on timing.
const TIME_FIELDS: &[&str] = &[
    "timestamp",
    "occurredAt",
    "lastOccurredAt",
    "uptimeS",
    "uptimeMs",
    "uptime",
    "startedAt",
    "lastSeen",
    "expiresAt",
];
/// Times that are empty until something happened (an AR's start and end): redacted only when
/// set, so a snapshot still shows whether they are.
const OPTIONAL_TIME_FIELDS: &[&str] = &["since", "endedAt"];
const EPOCH_FIELDS: &[&str] = &["epoch", "ioEpoch", "heartbeat", "cycleCounter"];

/// Counters depend on timing (how many cycles ran before the response, whether the peer's
/// LLDP arrived yet), so their value is redacted to `"[counter]"`; scenarios that care about a
/// counter assert it explicitly (e.g. `watchdogTrips = 0`).
fn is_counter(key: &str) -> bool {
    key.starts_with("rx")
        || key.starts_with("tx")
        || key.starts_with("stack")
        || key.ends_with("Frames")
        || key.ends_with("Requests")
        || key.ends_with("Responses")
        || matches!(key, "lastError" | "dcpSignalCount")
}

/// Fields whose presence depends on timing (the peer's LLDP may not have arrived yet).
const TIMING_FIELDS: &[&str] = &["lldpNeighbour"];

fn looks_like_mac(s: &str) -> bool {
    let parts: Vec<&str> = s.split([':', '-']).collect();
    parts.len() == 6
        && parts
            .iter()
            .all(|p| p.len() == 2 && p.chars().all(|c| c.is_ascii_hexdigit()))
}

fn looks_like_uuid(s: &str) -> bool {
    let lens: Vec<usize> = s.split('-').map(str::len).collect();
    lens == [8, 4, 4, 4, 12] && s.chars().all(|c| c == '-' || c.is_ascii_hexdigit())
}

/// Inside free text: MAC addresses become `[mac]` and durations measured by the device
/// (`12829 us`) become `[n] us`, and the executed cycles of a data-hold trip (`4 cycles without
/// a frame`) `[n] cycles ...`, so messages that quote them stay comparable.
fn redact_in_text(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < b.len() {
        // A MAC: 17 characters hh:hh:hh:hh:hh:hh.
        if i + 17 <= b.len() && looks_like_mac(&s[i..i + 17]) && s.is_char_boundary(i + 17) {
            out.push_str("[mac]");
            i += 17;
            continue;
        }
        // A number followed by " us" (microseconds measured at run time).
        if b[i].is_ascii_digit() && (i == 0 || !b[i - 1].is_ascii_alphanumeric()) {
            let mut j = i;
            while j < b.len() && b[j].is_ascii_digit() {
                j += 1;
            }
            if s[j..].starts_with(" us") && !s[j + 3..].starts_with(|c: char| c.is_alphanumeric()) {
                out.push_str("[n]");
                i = j;
                continue;
            }
            // The executed cycles at a data-hold trip: DataHoldFactor, or one more when the
            // device's cycle fell just short of the data-hold time at the DHF-th one (the rule
            // needs both, machine::data_hold); which one depends on the phase of the device's
            // cycle against the controller's last frame, a run-time accident.
            if s[j..].starts_with(" cycles without a frame") {
                out.push_str("[n]");
                i = j;
                continue;
            }
            out.push_str(&s[i..j]);
            i = j;
            continue;
        }
        let ch = s[i..].chars().next().expect("in bounds");
        out.push(ch);
        i += ch.len_utf8();
    }
    out
}

/// Return a redacted copy of `v`.
pub fn redact(v: &Json) -> Json {
    redact_inner(None, v, &[])
}

/// Redact, and also replace run-specific literals inside strings (the lab's interface names
/// and temporary directory) with stable placeholders: `(literal, placeholder)` pairs.
pub fn redact_with(v: &Json, literals: &[(String, String)]) -> Json {
    redact_inner(None, v, literals)
}

fn redact_inner(key: Option<&str>, v: &Json, lits: &[(String, String)]) -> Json {
    if let Some(k) = key {
        if TIME_FIELDS.contains(&k) {
            return Json::String("[time]".into());
        }
        if OPTIONAL_TIME_FIELDS.contains(&k) && v.as_str().is_some_and(|t| !t.is_empty()) {
            return Json::String("[time]".into());
        }
        if EPOCH_FIELDS.contains(&k) {
            return Json::String("[epoch]".into());
        }
        if is_counter(k) && v.is_number() {
            return Json::String("[counter]".into());
        }
        if TIMING_FIELDS.contains(&k) {
            return Json::String("[timing]".into());
        }
    }
    match v {
        Json::Object(m) => Json::Object(
            m.iter()
                .map(|(k, x)| (k.clone(), redact_inner(Some(k), x, lits)))
                .collect(),
        ),
        Json::Array(a) => Json::Array(a.iter().map(|x| redact_inner(None, x, lits)).collect()),
        Json::String(s) if looks_like_mac(s) => Json::String("[mac]".into()),
        Json::String(s) if looks_like_uuid(s) => Json::String("[uuid]".into()),
        Json::String(s) => {
            let mut out = redact_in_text(s);
            for (from, to) in lits {
                if !from.is_empty() {
                    out = out.replace(from.as_str(), to);
                }
            }
            Json::String(out)
        }
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn redacts_what_varies_only() {
        let v = json!({
            "state": "DataExchange", "timestamp": "2026-11-23T17:00:00Z", "ioEpoch": 42,
            "rxFrames": 0, "txFrames": 17, "peer": "02:00:00:00:00:01",
            "ar": "dea00000-6c97-11d1-8271-000100020003",
            "alarms": [{"occurredAt": "x", "severity": "Error", "count": 2}]
        });
        let r = redact(&v);
        assert_eq!(r["state"], "DataExchange");
        assert_eq!(r["timestamp"], "[time]");
        assert_eq!(r["ioEpoch"], "[epoch]");
        assert_eq!(r["rxFrames"], "[counter]");
        assert_eq!(r["txFrames"], "[counter]");
        assert_eq!(r["peer"], "[mac]");
        assert_eq!(r["ar"], "[uuid]");
        assert_eq!(r["alarms"][0]["severity"], "Error");
        assert_eq!(r["alarms"][0]["occurredAt"], "[time]");
        // An AR's times: redacted when set, kept when empty.
        let ar = redact(&json!({"ar": {"since": "2026-11-28T03:32:05.777Z", "endedAt": ""}}));
        assert_eq!(ar["ar"]["since"], "[time]");
        assert_eq!(ar["ar"]["endedAt"], "");
        assert_eq!(
            redact_in_text("with plc (96:0f:a5:c5:48:fc): 12829 us since, 3 cycles, 12000 usable"),
            "with plc ([mac]): [n] us since, 3 cycles, 12000 usable"
        );
        assert_eq!(
            redact_in_text("watchdog: (4 cycles without a frame, 12001 us since the last one)"),
            "watchdog: ([n] cycles without a frame, [n] us since the last one)"
        );
        let lits = [("veth7x1".to_string(), "[nic]".to_string())];
        let r = redact_with(&json!({"m": "NIC 'veth7x1' (fresh)"}), &lits);
        assert_eq!(r["m"], "NIC '[nic]' (fresh)");
    }
}

//! Alarm list and history (spec 2.6, 3 rule 4; decisions in docs/decisions.md "Alarms").
//!
//! * An alarm is raised with a *key* (e.g. `diag:1/1/0/0x0001`, `link:eth0`). Raising a key
//!   that already has an `Active` alarm increments its `count` (and updates severity/message)
//!   instead of creating a new one.
//! * States: `Active` -> `Acknowledged` (by `POST /api/alarms/ack` / `ack-all`) or
//!   `Active` -> `Cleared` (the condition went away: link up again, diagnosis removed, reset).
//!   Only `Active` alarms are listed by `GET /api/alarms` and counted in `alarmCount` /
//!   `criticalAlarmCount`.
//! * ids are decimal strings of a counter starting at 1, unique for the life of the process.
//! * Both lists are ordered newest first (descending id). The history keeps the most recent
//!   500 alarms (any state).

use std::collections::VecDeque;

use serde::Serialize;

use crate::dataplane::AlarmSeverity;

/// History capacity (spec 8).
pub const HISTORY_LEN: usize = 500;
/// Upper bound of simultaneously active alarms kept (oldest dropped beyond).
pub const MAX_ACTIVE: usize = 2000;

/// State of an alarm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum AlarmState {
    Active,
    Acknowledged,
    Cleared,
}

/// One alarm as serialised by the API (AlarmItem, spec 2.6, plus `state`, `lastOccurredAt`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AlarmItem {
    pub id: String,
    pub severity: AlarmSeverity,
    pub message: String,
    pub occurred_at: String,
    pub count: u64,
    pub source: String,
    pub state: AlarmState,
    pub last_occurred_at: String,
    #[serde(skip)]
    key: String,
    #[serde(skip)]
    seq: u64,
}

/// The alarm store (owned by the runtime).
#[derive(Debug, Default)]
pub struct Alarms {
    next: u64,
    /// Newest at the back; holds every alarm still referenced (≤ HISTORY_LEN + active ones).
    items: VecDeque<AlarmItem>,
}

impl Alarms {
    pub fn new() -> Alarms {
        Alarms {
            next: 1,
            items: VecDeque::new(),
        }
    }

    /// Raise (or repeat) an alarm. Returns its id.
    pub fn raise(
        &mut self,
        key: &str,
        severity: AlarmSeverity,
        source: &str,
        message: &str,
    ) -> String {
        let now = crate::util::now_rfc3339();
        if let Some(a) = self
            .items
            .iter_mut()
            .find(|a| a.key == key && a.state == AlarmState::Active)
        {
            a.count = a.count.saturating_add(1);
            a.severity = severity;
            a.message = message.to_string();
            a.last_occurred_at = now;
            return a.id.clone();
        }
        let seq = self.next;
        self.next += 1;
        let item = AlarmItem {
            id: seq.to_string(),
            severity,
            message: message.to_string(),
            occurred_at: now.clone(),
            count: 1,
            source: source.to_string(),
            state: AlarmState::Active,
            last_occurred_at: now,
            key: key.to_string(),
            seq,
        };
        // One log line per alarm, when it is raised (repeats only count up: nothing periodic).
        if severity == AlarmSeverity::Info {
            tracing::info!("alarm {seq} raised ({severity:?}, {source}): {message}");
        } else {
            tracing::warn!("alarm {seq} raised ({severity:?}, {source}): {message}");
        }
        self.items.push_back(item);
        // Trim: keep the newest HISTORY_LEN entries; older *active* alarms stay listed as
        // active (they still matter) but leave the history.
        while self.items.len() > HISTORY_LEN {
            if let Some(i) = self
                .items
                .iter()
                .position(|a| a.state != AlarmState::Active)
            {
                self.items.remove(i);
            } else if self.items.len() > MAX_ACTIVE {
                self.items.pop_front();
            } else {
                break;
            }
        }
        seq.to_string()
    }

    /// The condition behind `key` went away: its active alarm becomes `Cleared`.
    pub fn clear(&mut self, key: &str) -> bool {
        let mut any = false;
        for a in self
            .items
            .iter_mut()
            .filter(|a| a.key == key && a.state == AlarmState::Active)
        {
            a.state = AlarmState::Cleared;
            any = true;
        }
        any
    }

    /// Clear every active alarm whose key starts with `prefix`.
    pub fn clear_prefix(&mut self, prefix: &str) -> usize {
        let mut n = 0;
        for a in self
            .items
            .iter_mut()
            .filter(|a| a.key.starts_with(prefix) && a.state == AlarmState::Active)
        {
            a.state = AlarmState::Cleared;
            n += 1;
        }
        n
    }

    /// Acknowledge one active alarm by id.
    pub fn ack(&mut self, id: &str) -> bool {
        match self
            .items
            .iter_mut()
            .find(|a| a.id == id && a.state == AlarmState::Active)
        {
            Some(a) => {
                a.state = AlarmState::Acknowledged;
                true
            }
            None => false,
        }
    }

    /// Acknowledge all active alarms; returns how many.
    pub fn ack_all(&mut self) -> usize {
        let mut n = 0;
        for a in self
            .items
            .iter_mut()
            .filter(|a| a.state == AlarmState::Active)
        {
            a.state = AlarmState::Acknowledged;
            n += 1;
        }
        n
    }

    /// Active alarms, newest first.
    pub fn active(&self) -> Vec<AlarmItem> {
        self.items
            .iter()
            .rev()
            .filter(|a| a.state == AlarmState::Active)
            .cloned()
            .collect()
    }

    /// The most recent 500 alarms, newest first.
    pub fn history(&self) -> Vec<AlarmItem> {
        let mut v: Vec<AlarmItem> = self.items.iter().rev().cloned().collect();
        v.sort_by_key(|a| std::cmp::Reverse(a.seq));
        v.truncate(HISTORY_LEN);
        v
    }

    /// (active, active critical)
    pub fn counts(&self) -> (usize, usize) {
        let act = self.items.iter().filter(|a| a.state == AlarmState::Active);
        let (mut n, mut c) = (0, 0);
        for a in act {
            n += 1;
            if a.severity == AlarmSeverity::Critical {
                c += 1;
            }
        }
        (n, c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raise_repeat_ack_clear() {
        let mut a = Alarms::new();
        let id1 = a.raise("k1", AlarmSeverity::Critical, "s", "m");
        let id1b = a.raise("k1", AlarmSeverity::Critical, "s", "m2");
        assert_eq!(id1, id1b);
        let id2 = a.raise("k2", AlarmSeverity::Info, "s", "m");
        assert_eq!(a.counts(), (2, 1));
        let act = a.active();
        assert_eq!(act[0].id, id2, "newest first");
        assert_eq!(act[1].count, 2);
        assert!(a.ack(&id1));
        assert!(!a.ack(&id1));
        assert_eq!(a.counts(), (1, 0));
        assert!(a.clear("k2"));
        assert_eq!(a.counts(), (0, 0));
        assert_eq!(a.history().len(), 2);
        let id3 = a.raise("k1", AlarmSeverity::Warning, "s", "again");
        assert_ne!(id3, id1, "acknowledged alarm is not reused");
        assert_eq!(a.ack_all(), 1);
    }

    #[test]
    fn history_bounded() {
        let mut a = Alarms::new();
        for i in 0..700 {
            let id = a.raise(&format!("k{i}"), AlarmSeverity::Info, "s", "m");
            a.ack(&id);
        }
        let h = a.history();
        assert_eq!(h.len(), HISTORY_LEN);
        assert_eq!(h[0].id, "700");
        assert_eq!(h[499].id, "201");
    }
}

//! Change events by polling (spec 6: no push channel; poll `GET /api/status` and `GET /api/io`,
//! reference period 3 s). `GET /api/diag` is polled too, for the link state (`linkUp`).
//!
//! The first successful poll produces [`Event::Initial`]; after that an event is produced for
//! each field that changed between two polls. A failing poll produces
//! [`Event::ServiceReachable`]`(false, ..)` once, and the next successful one `(true, ..)`
//! followed by the changes seen since.

use std::time::Duration;

use serde::Serialize;
use tokio::sync::mpsc;

use crate::client::Client;
use crate::model::{IoSnapshot, State, Status};

/// IO status fields watched for changes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct IoStatus {
    pub input_valid: bool,
    pub output_valid: bool,
    pub output_synced_to_driver: bool,
    pub input_iops_hex: String,
    pub input_iocs_hex: String,
    pub output_iops_hex: String,
    pub output_iocs_hex: String,
}

impl IoStatus {
    pub fn of(io: &IoSnapshot) -> Self {
        IoStatus {
            input_valid: io.input_valid,
            output_valid: io.output_valid,
            output_synced_to_driver: io.output_synced_to_driver,
            input_iops_hex: io.input_iops_hex.clone(),
            input_iocs_hex: io.input_iocs_hex.clone(),
            output_iops_hex: io.output_iops_hex.clone(),
            output_iocs_hex: io.output_iocs_hex.clone(),
        }
    }
}

/// Link as far as the service reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Link {
    /// `Status.hardwarePortPresent`.
    pub port_present: bool,
    /// `Diag.linkUp` when the diag counters are available (`ok=true`), else `None`.
    pub link_up: Option<bool>,
}

/// One observed change.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(
    tag = "event",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum Event {
    /// First successful poll: the starting point.
    Initial {
        state: State,
        connected: bool,
        error_code: i64,
        link: Link,
        io: Option<IoStatus>,
    },
    /// The service became unreachable (or answered 401), or reachable again.
    ServiceReachable {
        reachable: bool,
        message: String,
    },
    Connected {
        connected: bool,
        ever_connected: bool,
    },
    State {
        from: State,
        to: State,
    },
    ErrorCode {
        from: i64,
        to: i64,
        status_message: String,
    },
    Link {
        from: Link,
        to: Link,
    },
    IoStatus {
        from: IoStatus,
        to: IoStatus,
    },
}

#[derive(Debug, Clone, PartialEq)]
struct Observed {
    state: State,
    connected: bool,
    ever_connected: bool,
    error_code: i64,
    status_message: String,
    link: Link,
    io: Option<IoStatus>,
}

/// Compute the events between two observations (pure; unit-tested).
fn diff(prev: &Observed, now: &Observed, out: &mut Vec<Event>) {
    if prev.connected != now.connected {
        out.push(Event::Connected {
            connected: now.connected,
            ever_connected: now.ever_connected,
        });
    }
    if prev.state != now.state {
        out.push(Event::State {
            from: prev.state,
            to: now.state,
        });
    }
    if prev.error_code != now.error_code {
        out.push(Event::ErrorCode {
            from: prev.error_code,
            to: now.error_code,
            status_message: now.status_message.clone(),
        });
    }
    if prev.link != now.link {
        out.push(Event::Link {
            from: prev.link,
            to: now.link,
        });
    }
    if let (Some(a), Some(b)) = (&prev.io, &now.io) {
        if a != b {
            out.push(Event::IoStatus {
                from: a.clone(),
                to: b.clone(),
            });
        }
    }
}

/// An observation whose IO read failed (the request timed out, say, under load) keeps the last
/// known IO status: the change is then reported when the IO status is read again, from the
/// last known one, instead of being lost (a change is only reported between two known values).
fn keep_last_io(prev: Option<&Observed>, now: &mut Observed) {
    if now.io.is_none() {
        now.io = prev.and_then(|p| p.io.clone());
    }
}

async fn observe(client: &Client) -> crate::Result<Observed> {
    let status: Status = client.status().await?;
    let io = client.io().await.ok();
    let link_up = match client.diag().await {
        Ok(d) if d.ok => Some(d.link_up),
        _ => None,
    };
    Ok(Observed {
        state: status.state,
        connected: status.connected,
        ever_connected: status.ever_connected,
        error_code: status.error_code,
        status_message: status.status_message,
        link: Link {
            port_present: status.hardware_port_present,
            link_up,
        },
        io: io.as_ref().map(IoStatus::of),
    })
}

/// A running watcher: receive events with [`Watcher::recv`]; dropping it stops the polling.
#[derive(Debug)]
pub struct Watcher {
    rx: mpsc::Receiver<Event>,
    task: tokio::task::JoinHandle<()>,
}

impl Watcher {
    /// Start polling every `period` (spec reference: 3 s). Needs a tokio runtime.
    pub fn spawn(client: Client, period: Duration) -> Watcher {
        let (tx, rx) = mpsc::channel(256);
        let task = tokio::spawn(run(client, period, tx));
        Watcher { rx, task }
    }

    /// The next event (None once the watcher has stopped).
    pub async fn recv(&mut self) -> Option<Event> {
        self.rx.recv().await
    }

    /// The receiving end, to use as a stream in a `select!` loop.
    pub fn receiver(&mut self) -> &mut mpsc::Receiver<Event> {
        &mut self.rx
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn run(client: Client, period: Duration, tx: mpsc::Sender<Event>) {
    let mut tick = tokio::time::interval(period.max(Duration::from_millis(10)));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut prev: Option<Observed> = None;
    let mut reachable = true;
    loop {
        tick.tick().await;
        let mut out = Vec::new();
        match observe(&client).await {
            Ok(mut now) => {
                keep_last_io(prev.as_ref(), &mut now);
                if !reachable {
                    reachable = true;
                    out.push(Event::ServiceReachable {
                        reachable: true,
                        message: String::new(),
                    });
                }
                match &prev {
                    None => out.push(Event::Initial {
                        state: now.state,
                        connected: now.connected,
                        error_code: now.error_code,
                        link: now.link,
                        io: now.io.clone(),
                    }),
                    Some(p) => diff(p, &now, &mut out),
                }
                prev = Some(now);
            }
            Err(e) => {
                if reachable {
                    reachable = false;
                    out.push(Event::ServiceReachable {
                        reachable: false,
                        message: e.to_string(),
                    });
                }
            }
        }
        for ev in out {
            if tx.send(ev).await.is_err() {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obs() -> Observed {
        Observed {
            state: State::Initialized,
            connected: false,
            ever_connected: false,
            error_code: 0,
            status_message: String::new(),
            link: Link {
                port_present: true,
                link_up: Some(false),
            },
            io: Some(IoStatus {
                input_valid: false,
                output_valid: false,
                output_synced_to_driver: false,
                input_iops_hex: "00".into(),
                input_iocs_hex: "00".into(),
                output_iops_hex: "00".into(),
                output_iocs_hex: "00".into(),
            }),
        }
    }

    #[test]
    fn a_failed_io_read_does_not_lose_the_change() {
        let a = obs();
        // The IO read of the next poll failed: the last known status stands.
        let mut b = obs();
        b.io = None;
        keep_last_io(Some(&a), &mut b);
        let mut out = Vec::new();
        diff(&a, &b, &mut out);
        assert!(out.is_empty(), "{out:?}");
        // The next read sees the inputs valid: reported from the last known status.
        let mut c = obs();
        c.io.as_mut().unwrap().input_valid = true;
        keep_last_io(Some(&b), &mut c);
        diff(&b, &c, &mut out);
        assert!(
            matches!(&out[..], [Event::IoStatus { from, to }] if !from.input_valid && to.input_valid),
            "{out:?}"
        );
        // Without any known status there is nothing to keep.
        let mut d = obs();
        d.io = None;
        keep_last_io(None, &mut d);
        assert_eq!(d.io, None);
    }

    #[test]
    fn no_change_no_event() {
        let mut out = Vec::new();
        diff(&obs(), &obs(), &mut out);
        assert!(out.is_empty());
    }

    #[test]
    fn each_kind_of_change() {
        let a = obs();
        let mut b = obs();
        b.connected = true;
        b.ever_connected = true;
        b.state = State::DataExchange;
        b.error_code = -4;
        b.link.link_up = Some(true);
        b.io.as_mut().unwrap().input_valid = true;
        let mut out = Vec::new();
        diff(&a, &b, &mut out);
        assert_eq!(out.len(), 5, "{out:?}");
        assert_eq!(
            out[0],
            Event::Connected {
                connected: true,
                ever_connected: true
            }
        );
        assert_eq!(
            out[1],
            Event::State {
                from: State::Initialized,
                to: State::DataExchange
            }
        );
        assert!(matches!(
            out[2],
            Event::ErrorCode {
                from: 0,
                to: -4,
                ..
            }
        ));
        assert!(matches!(out[3], Event::Link { .. }));
        assert!(matches!(out[4], Event::IoStatus { .. }));
        let j = serde_json::to_value(&out[1]).unwrap();
        assert_eq!(j["event"], "state");
        assert_eq!(j["to"], "DataExchange");
        let j = serde_json::to_value(&out[2]).unwrap();
        assert_eq!(j["event"], "errorCode");
        assert_eq!(j["to"], -4);
        assert!(j.get("statusMessage").is_some(), "{j}");
        let j = serde_json::to_value(&out[0]).unwrap();
        assert_eq!(j["everConnected"], true);
    }
}

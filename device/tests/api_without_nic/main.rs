//! HTTP API rules that need no NIC: each test runs the real daemon in its own network
//! namespace (the NIC is deliberately missing, so the service is in `Stopped`/`ConfigError`).
//!
//! The tests are grouped by what they exercise: `lifecycle` (launch, NIC resolution, config
//! reload, stop, SIGTERM, logs, persistence and settings files), `http_rules` (routing, API key,
//! body and connection limits, bad HTTP, loopback only) and `endpoints` (I/O writes, status,
//! diagnosis, alarms, reset, I&M, info and dashboard).

#[path = "../common/mod.rs"]
mod common;

mod endpoints;
mod http_rules;
mod lifecycle;

pub(crate) fn root() -> bool {
    pn_testkit::env::require_root()
}

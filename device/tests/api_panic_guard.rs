//! A handler that panics (TEST ONLY fault `Dev:FaultPanicPath`) gives the 500 Track 1 body and
//! leaves the server serving: GET handlers run in the connection's task with the panic caught
//! (docs/decisions.md 8.1), so the in-progress permit of a panicking request must come back too
//! (more panics than the 16-request limit, then still 200s, never 503).

mod common;

use common::*;
use serde_json::json;
use std::time::Duration;

#[test]
fn panicking_get_handler_is_a_500_and_releases_its_request_slot() {
    if !pn_testkit::env::require_root() {
        return;
    }
    let d = Daemon::start(
        DaemonOpts::new().set("Dev:FaultPanicPath", json!("/api/status")),
        None,
    );
    for i in 0..(pn_device::api::MAX_IN_FLIGHT * 2) {
        let r = d.req("GET", "/api/status", None);
        assert_eq!(r.status, 500, "request {i}: {}", r.body);
        let v = r.json();
        assert_eq!(v["success"], false, "{v}");
        assert_eq!(v["code"], pn_device::api::code::INTERNAL, "{v}");
        assert!(v["timestamp"].is_string(), "{v}");
    }
    let info = d.req("GET", "/api/info", None);
    assert_eq!(info.status, 200, "{}", info.body);
    // The log line is written before the answer; wait for it with a deadline all the same
    // (the log goes through a file).
    wait_for(
        "the handler failure in the log",
        Duration::from_secs(5),
        || {
            d.log_text()
                .contains("handler for GET /api/status failed: panicked")
                .then_some(())
        },
    );
}

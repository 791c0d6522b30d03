//! The dashboard page of the REAL daemon in a real browser: headless Chromium driven over the
//! W3C WebDriver protocol (chromedriver), both running inside the daemon's network namespace so
//! that http://127.0.0.1:18840 is the daemon. The controller simulator (CLI) keeps the device in
//! data exchange from a second namespace.
//!
//! Checked: the page shows state, IO bytes, alarms and counters of the live API; acknowledging an
//! alarm, Stop and Start work from the page; with an API key the page opens through `pnctl
//! dashboard`, which adds the key; a stopped service
//! is shown as unreachable (and recovers). Screenshots: `target/dashboard-browser/*.png`.
//!
//! Needs root, `chromium` and `chromium-driver` (Debian packages): under CI=true a missing
//! prerequisite fails the test.

#[path = "browser/rig.rs"]
mod rig;
#[path = "browser/webdriver.rs"]
mod webdriver;

use std::path::PathBuf;
use std::time::Duration;

use rig::{Lab, Launch, CAPS};
use serde_json::{json, Value};
use webdriver::Browser;

const URL: &str = "http://127.0.0.1:18840/";
const T: Duration = Duration::from_secs(60);

fn prerequisites() -> bool {
    pn_testkit::env::require_root()
        && pn_testkit::env::require(
            webdriver::available(),
            "chromium and chromedriver (apt-get install -y chromium chromium-driver)",
        )
}

fn shots() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/dashboard-browser")
}

/// Everything the page shows, read from the DOM.
fn page(b: &Browser) -> Value {
    b.eval(
        r##"
        const t = (id) => (document.getElementById(id) || {}).textContent || "";
        const rows = (id) => Object.fromEntries(
            [...document.querySelectorAll("#" + id + " tr[data-key]")]
                .map((r) => [r.dataset.key, r.cells[1].textContent]));
        return {
            state: t("state"), conn: t("conn"), banner: t("banner"),
            bannerClass: document.getElementById("banner").className,
            inputHex: t("inputHex"), outputHex: t("outputHex"), alarmCount: t("alarmCount"),
            alarms: t("alarms"), result: t("result"), version: t("version"),
            status: rows("status"), diag: rows("diag"), io: rows("io"),
            stale: document.body.classList.contains("stale"),
        };"##,
    )
}

fn num(v: &Value) -> i64 {
    v.as_str()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("not a number: {v}"))
}

#[test]
fn dashboard_shows_the_live_api_and_controls_the_slave() {
    if !prerequisites() {
        return;
    }
    let mut lab = Lab::new("dbx", json!({}));
    lab.spawn(&Launch::User(CAPS.to_vec()), &[]);
    lab.wait("Initialized", T, |l| l.status()["state"] == "Initialized");
    lab.controller("c0ffee01", 120.0, true);
    lab.wait("DataExchange", T, |l| l.status()["state"] == "DataExchange");
    let w = lab.api(
        "POST",
        "/api/io",
        Some(json!({"offset": 0, "data": "5aa51234"})),
    );
    assert_eq!(w["delivered"], true, "{w}");
    let d = lab.api(
        "POST",
        "/api/diag",
        Some(
            json!({"slot": 1, "subslot": 1, "errorType": 2, "severity": 0,
                    "text": "wire break at sensor 3"}),
        ),
    );
    assert_eq!(d["ok"], true, "{d}");
    let alarms = lab.api("GET", "/api/alarms", None);
    let alarm = alarms
        .as_array()
        .and_then(|a| a.first())
        .cloned()
        .unwrap_or_else(|| panic!("no alarm: {alarms}"));

    let b = Browser::start(&lab.dev_ns, &lab.dir);
    b.goto(URL);
    // Live data: state, IO bytes both ways, the alarm, counters.
    let p = b.wait("the page in DataExchange with IO and alarm", T, |b| {
        let p = page(b);
        (p["state"] == "DataExchange"
            && p["inputHex"].as_str()?.contains("c0 ff ee 01")
            && p["outputHex"].as_str()?.contains("5a a5 12 34")
            && p["alarms"].as_str()?.contains("wire break at sensor 3")
            && p["diag"]["rxRtFrames"].is_string())
        .then_some(p)
    });
    assert_eq!(p["conn"], "live", "{p}");
    assert_eq!(p["stale"], false, "{p}");
    assert_eq!(p["bannerClass"], "", "{p}");
    assert_eq!(p["version"], "1.0.0");
    assert_eq!(p["status"]["connected"], "true", "{p}");
    assert_eq!(p["status"]["configStationName"], rig::STATION, "{p}");
    assert_eq!(p["alarmCount"], "1", "{p}");
    assert!(p["alarms"].as_str().unwrap().contains("Critical"), "{p}");
    // Counters on the page are the API's (read before and after the page's value).
    let api_rx = lab.api("GET", "/api/diag", None)["rxRtFrames"]
        .as_i64()
        .expect("rxRtFrames");
    let page_rx = num(&page(&b)["diag"]["rxRtFrames"]);
    let api_rx2 = lab.api("GET", "/api/diag", None)["rxRtFrames"]
        .as_i64()
        .expect("rxRtFrames");
    assert!(
        page_rx > 0 && page_rx <= api_rx2 && api_rx <= api_rx2,
        "page {page_rx}, api {api_rx}..{api_rx2}"
    );
    // The page keeps following the API (counters advance between polls).
    b.wait("counters advance on the page", T, |b| {
        (num(&page(b)["diag"]["rxRtFrames"]) > page_rx).then_some(())
    });
    b.screenshot(&shots().join("dashboard-data-exchange.png"));

    // Acknowledge the alarm with its button.
    b.click(&format!(
        "#alarms tr[data-alarm-id=\"{}\"] button",
        alarm["id"].as_str().expect("id")
    ));
    lab.wait("alarm acknowledged", T, |l| {
        l.api("GET", "/api/alarms", None)
            .as_array()
            .is_some_and(|a| a.is_empty())
    });
    b.wait("no active alarms on the page", T, |b| {
        let p = page(b);
        (p["alarmCount"] == "0" && p["alarms"].as_str()?.contains("no active alarms")).then_some(())
    });

    // Stop from the page.
    b.click("#stop");
    lab.wait("Stopped after the Stop button", T, |l| {
        l.status()["state"] == "Stopped"
    });
    let p = b.wait("the page shows Stopped", T, |b| {
        let p = page(b);
        (p["state"] == "Stopped").then_some(p)
    });
    assert!(
        p["result"].as_str().unwrap().starts_with("ok:"),
        "{}",
        p["result"]
    );
    // The controller sees its AR end (exit status 1 on abort).
    let (ok, _) = lab.controller_done(T);
    assert!(!ok, "controller should report the aborted AR");
    // Start from the page.
    b.click("#start");
    lab.wait("Initialized after the Start button", T, |l| {
        l.status()["state"] == "Initialized"
    });
    b.wait("the page shows Initialized", T, |b| {
        (page(b)["state"] == "Initialized").then_some(())
    });

    // The service stops: the page says so instead of failing silently, and keeps the last
    // values greyed out.
    assert!(lab.stop_daemon(), "daemon exit\n{}", lab.log());
    let p = b.wait("the page shows the service unreachable", T, |b| {
        let p = page(b);
        (p["conn"] == "service unreachable").then_some(p)
    });
    assert_eq!(p["bannerClass"], "down", "{p}");
    assert!(
        p["banner"].as_str().unwrap().contains("not reachable"),
        "{p}"
    );
    assert_eq!(p["stale"], true, "{p}");
    assert_eq!(p["state"], "Initialized", "last value kept: {p}");
    b.screenshot(&shots().join("dashboard-service-stopped.png"));
    // ... and recovers by itself when the service is back.
    lab.spawn(&Launch::User(CAPS.to_vec()), &[]);
    b.wait("the page live again", T, |b| {
        let p = page(b);
        (p["conn"] == "live" && p["bannerClass"] == "" && p["state"] == "Initialized").then_some(())
    });
}

/// `pnctl dashboard` in the daemon's namespace: the dashboard proxy with the key.
struct Proxy(std::process::Child);

impl Proxy {
    fn start(lab: &Lab, key: &str) -> Proxy {
        let bin = pn_testkit::daemon::bin_dir().join("pnctl");
        assert!(
            bin.exists(),
            "{} not built (cargo build --workspace --bins)",
            bin.display()
        );
        let mut child = lab
            .dev_ns
            .command(&bin)
            .args(["--api-key", key, "dashboard", "--listen", "127.0.0.1:18841"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::inherit())
            .spawn()
            .expect("pnctl dashboard");
        // It prints its address once it listens.
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(child.stdout.take().unwrap()),
            &mut line,
        )
        .unwrap();
        assert!(line.contains("http://127.0.0.1:18841/"), "{line}");
        Proxy(child)
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// With an API key configured, the page itself needs the key (spec 5.4): opened directly it is
/// refused with a 401 that says how to open it; through `pnctl --api-key KEY dashboard` it
/// shows live data and its controls work, without the key typed into the page.
#[test]
fn dashboard_with_an_api_key_opens_through_pnctl() {
    if !prerequisites() {
        return;
    }
    let key = "s3cret-key";
    let mut lab = Lab::new(
        "dbk",
        json!({"Api": {"ApiKey": key}, "Runtime": {"AutoStart": false}}),
    );
    lab.spawn(&Launch::User(CAPS.to_vec()), &[]);
    let b = Browser::start(&lab.dev_ns, &lab.dir);
    b.goto(URL);
    let text = b.wait("the 401 answer", T, |b| {
        let t = b.eval("return document.body ? document.body.textContent : '';");
        t.as_str()
            .filter(|t| t.contains("PnS.Api.Unauthorized"))
            .map(str::to_string)
    });
    assert!(text.contains("pnctl --api-key KEY dashboard"), "{text}");
    b.screenshot(&shots().join("dashboard-api-key.png"));

    let _proxy = Proxy::start(&lab, key);
    b.goto("http://127.0.0.1:18841/");
    b.wait("live data through the proxy", T, |b| {
        let p = page(b);
        (p["conn"] == "live" && p["state"] == "Stopped" && p["bannerClass"] == "").then_some(())
    });
    b.click("#start");
    let mut last = Value::Null;
    assert!(
        rig::poll(T, || {
            last = lab
                .request(
                    "GET",
                    "/api/status",
                    &[("X-Vendor-Pnet-Api-Key", key)],
                    None,
                )
                .map(|a| a.json)
                .unwrap_or(Value::Null);
            last["state"] == "Initialized"
        }),
        "start from the page through the proxy: {last}\n{}",
        lab.log()
    );
    b.wait("the page shows Initialized", T, |b| {
        (page(b)["state"] == "Initialized").then_some(())
    });
    // Without the key the API still refuses: the proxy added it.
    let a = lab
        .request("GET", "/api/status", &[], None)
        .expect("answer");
    assert_eq!(a.status, 401);
}

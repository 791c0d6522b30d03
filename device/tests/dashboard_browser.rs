//! The dashboard page of the REAL daemon in a real browser: headless Chromium driven over the
//! W3C WebDriver protocol (chromedriver), both running inside the daemon's network namespace so
//! that http://127.0.0.1:18840 is the daemon. The controller simulator (CLI) keeps the device in
//! data exchange from a second namespace.
//!
//! Checked, as a commissioning engineer uses the page: the AR's parameters (controller name,
//! MAC, IP, AR UUID, send clock, reduction ratio, data hold) and the history of ended ARs with
//! their end in words; the process image per slot/subslot in the client address scheme (I = the
//! PLC's inputs = `outputHex`, Q = its outputs = `inputHex`), shown as bytes, words, floats and
//! bits, written from the page; a diagnosis added and removed from the page with its error type
//! in words; alarms acknowledged, the history; the cycle chart drawn from the API's counters;
//! Stop/Start, reload, the timer, a reset behind its confirmation; the states Aborted,
//! ConfigError and Stopped said in words; with an API key the page opens through `pnctl
//! dashboard`; a stopped service is shown as unreachable (and recovers).
//! Screenshots: `target/dashboard-browser/dashboard-*.png` on every run; with
//! `PN_UPDATE_SCREENSHOTS=1` into `docs/img/` (the committed ones), so that a test run leaves
//! the work tree as it found it.
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

/// Screenshots of the page: the documentation's copies are renewed only on request.
fn shots() -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let dir = if std::env::var_os("PN_UPDATE_SCREENSHOTS").is_some() {
        root.join("docs/img")
    } else {
        root.join("target/dashboard-browser")
    };
    std::fs::create_dir_all(&dir).expect("screenshot directory");
    dir
}

/// Everything the page shows, read from the DOM.
fn page(b: &Browser) -> Value {
    b.eval(
        r##"
        const t = (id) => (document.getElementById(id) || {}).textContent || "";
        const rows = (id) => Object.fromEntries(
            [...document.querySelectorAll("#" + id + " tr[data-key]")]
                .map((r) => [r.dataset.key, r.cells[1].textContent]));
        const cells = (sel) => [...document.querySelectorAll(sel)].map((r) =>
            [...r.cells].map((c) => { const i = c.querySelector("input"); return i ? i.value : c.textContent; }));
        return {
            state: t("state"), conn: t("conn"), banner: t("banner"),
            bannerClass: document.getElementById("banner").className,
            inputHex: t("inputHex"), outputHex: t("outputHex"), alarmCount: t("alarmCount"),
            alarms: t("alarms"), alarmHistory: t("alarmHistory"), result: t("result"),
            version: t("version"), arNote: t("arNote"),
            status: rows("status"), ar: rows("ar"), counters: rows("counters"), io: rows("io"),
            arHistory: cells("#arHistory tbody tr"), layout: cells("#layout tbody tr"),
            iValues: cells("#iValues tbody tr"), qValues: cells("#qValues tbody tr"),
            diagnoses: cells("#diagnoses tbody tr"), diagCount: t("diagCount"),
            chartPoints: (document.querySelector("#chart canvas") ? 1 : 0),
            cycleNow: t("cycleNow"),
            stale: document.body.classList.contains("stale"),
        };"##,
    )
}

fn num(v: &Value) -> i64 {
    v.as_str()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("not a number: {v}"))
}

/// Set a `<select>` as a user would (value, then its change event).
fn select(b: &Browser, id: &str, value: &str) {
    b.eval(&format!(
        "const e = document.getElementById({}); e.value = {}; \
         e.dispatchEvent(new Event('change')); return e.value;",
        json!(id),
        json!(value)
    ));
}

/// The row of `rows` whose first cell is `first`.
fn row_of<'a>(rows: &'a Value, first: &str) -> Option<&'a Vec<Value>> {
    rows.as_array()?
        .iter()
        .filter_map(Value::as_array)
        .find(|r| r.first().and_then(Value::as_str) == Some(first))
}

#[test]
fn dashboard_shows_the_live_api_and_controls_the_slave() {
    if !prerequisites() {
        return;
    }
    let mut lab = Lab::new("dbx", json!({}));
    lab.spawn(&Launch::User(CAPS.to_vec()), &[]);
    lab.wait("Initialized", T, |l| l.status()["state"] == "Initialized");
    lab.controller("c0ffee01", 600.0, true);
    lab.wait("DataExchange", T, |l| l.status()["state"] == "DataExchange");

    let b = Browser::start(&lab.dev_ns, &lab.dir);
    b.resize(1280, 2600);
    b.goto(URL);
    // The AR as the controller set it up (rig: send clock 1 ms x reduction ratio 4).
    let p = b.wait("the page in DataExchange with the AR", T, |b| {
        let p = page(b);
        (p["state"] == "DataExchange"
            && p["conn"] == "live"
            && p["ar"]["controllerMac"].is_string())
        .then_some(p)
    });
    let s = lab.status();
    let ar = &s["ar"];
    assert_eq!(p["ar"]["controllerIp"], rig::CTL_IP.to_string(), "{p}");
    assert_eq!(p["ar"]["controllerMac"], ar["controllerMac"], "{p}");
    assert_eq!(p["ar"]["arUuid"], ar["arUuid"], "{p}");
    assert_eq!(
        p["ar"]["controllerStationName"],
        ar["controllerStationName"]
    );
    assert_eq!(p["ar"]["sendClock"], "1 ms (factor 32)", "{p}");
    assert_eq!(p["ar"]["reductionRatio"], "4", "{p}");
    assert_eq!(p["ar"]["cycle"], "4 ms", "{p}");
    assert!(
        p["ar"]["dataHold"].as_str().unwrap().contains("factor 250"),
        "{p}"
    );
    assert_eq!(p["conn"], "live", "{p}");
    assert_eq!(p["bannerClass"], "", "{p}");
    assert_eq!(p["version"], "1.0.0");

    // The process image per submodule in the client scheme: the controller's bytes are Q
    // (inputHex), slot 1 has 4 bytes each way.
    let p = b.wait("slot 1 with the controller's Q bytes", T, |b| {
        let p = page(b);
        let r = row_of(&p["layout"], "1")?;
        (r[7] == "QB0 … QB3" && r[8] == "c0 ff ee 01").then_some(p)
    });
    let r = row_of(&p["layout"], "1").unwrap();
    assert_eq!(r[4], "IB0 … IB3", "{p}");
    assert_eq!(r[6], "GOOD / GOOD", "{p}");
    assert_eq!(r[9], "GOOD / GOOD", "{p}");
    assert_eq!(row_of(&p["qValues"], "QB0").unwrap()[1], "0xc0", "{p}");

    // Write I values from the page: a word in the grid, a REAL and a bit from the form.
    select(&b, "fmt", "word");
    b.wait("the I grid as words", T, |b| {
        row_of(&page(b)["iValues"], "IW2").map(|_| ())
    });
    b.type_into("#iValues input[data-addr=\"IW2\"]", "0x1234\u{E007}");
    lab.wait("IW2 written from the grid", T, |l| {
        l.api("GET", "/api/io", None)["outputHex"]
            .as_str()
            .is_some_and(|h| h.starts_with("00001234"))
    });
    b.type_into("#wAddr", "ID0");
    b.type_into("#wVal", "1.5");
    select(&b, "wType", "float");
    b.click("#write");
    lab.wait("ID0 = 1.5 as REAL (3fc00000)", T, |l| {
        l.api("GET", "/api/io", None)["outputHex"]
            .as_str()
            .is_some_and(|h| h.starts_with("3fc00000"))
    });
    b.wait("the write said delivered", T, |b| {
        page(b)["result"]
            .as_str()?
            .contains("ID0 = 1.5: done")
            .then_some(())
    });
    select(&b, "fmt", "float");
    b.wait("ID0 shown as 1.5", T, |b| {
        (row_of(&page(b)["iValues"], "ID0")?[1] == "1.5").then_some(())
    });
    // A Q address is refused on the page, in words, as the client library does.
    b.type_into("#wAddr", "QB0");
    b.type_into("#wVal", "1");
    b.click("#write");
    b.wait("Q write refused in words", T, |b| {
        page(b)["result"]
            .as_str()?
            .contains("read-only for clients")
            .then_some(())
    });
    select(&b, "fmt", "bit");
    b.click("#iValues input[data-addr=\"I3.0\"]");
    lab.wait("I3.0 set from a bit box", T, |l| {
        l.api("GET", "/api/io", None)["outputHex"]
            .as_str()
            .is_some_and(|h| h.starts_with("3fc00001"))
    });

    // A diagnosis from the page: error type and severity in words, an alarm to acknowledge.
    select(&b, "dSub", "1/1");
    select(&b, "dType", "6");
    b.type_into("#dText", "wire break at sensor 3");
    b.click("#diagAdd");
    let p = b.wait("the diagnosis entry and its alarm", T, |b| {
        let p = page(b);
        (p["diagCount"] == "1" && p["alarms"].as_str()?.contains("wire break at sensor 3"))
            .then_some(p)
    });
    let d = &p["diagnoses"][0];
    assert_eq!(d[3], "0x0006 line break", "{p}");
    assert_eq!(d[4], "fault", "{p}");
    assert_eq!(d[2], "whole submodule", "{p}");
    assert_eq!(p["alarmCount"], "1", "{p}");
    assert!(p["alarms"].as_str().unwrap().contains("Critical"), "{p}");
    // The cycle chart draws from the counters (two polls make the first point).
    let p = b.wait("the cycle chart", T, |b| {
        let p = page(b);
        (p["chartPoints"] == 1 && p["cycleNow"].as_str()?.contains("interval")).then_some(p)
    });
    let api_rx = lab.api("GET", "/api/diag", None)["rxRtFrames"]
        .as_i64()
        .expect("rxRtFrames");
    assert!(num(&p["counters"]["rxRtFrames"]) <= api_rx, "{p}");
    b.eval("window.scrollTo(0, 0); return 0;");
    b.screenshot(&shots().join("dashboard-data-exchange.png"));

    // Acknowledge the alarm with its button; it stays in the history.
    let alarms = lab.api("GET", "/api/alarms", None);
    let id = alarms[0]["id"].as_str().expect("alarm id").to_string();
    b.click(&format!("#alarms tr[data-alarm-id=\"{id}\"] button"));
    let p = b.wait("no active alarms on the page", T, |b| {
        let p = page(b);
        (p["alarmCount"] == "0" && p["alarms"].as_str()?.contains("no active alarms")).then_some(p)
    });
    assert!(
        p["alarmHistory"].as_str().unwrap().contains("Acknowledged"),
        "{p}"
    );
    // Remove the diagnosis from the page.
    b.click("#diagnoses tr[data-diag-key] button");
    b.wait("the diagnosis removed", T, |b| {
        (page(b)["diagCount"] == "0").then_some(())
    });

    // The controller goes away without a release: the device's watchdog ends the AR.
    let c = lab.controllers.last_mut().expect("controller");
    let _ = c.kill();
    let _ = c.wait();
    let p = b.wait("the page shows Aborted", T, |b| {
        let p = page(b);
        (p["state"] == "Aborted" && p["arHistory"].as_array()?.len() == 1).then_some(p)
    });
    assert_eq!(p["bannerClass"], "state", "{p}");
    assert!(
        p["banner"]
            .as_str()
            .unwrap()
            .contains("connection to the controller ended"),
        "{p}"
    );
    let h = &p["arHistory"][0];
    assert_eq!(h[4], "fault", "{p}");
    assert!(
        !h[5].as_str().unwrap().is_empty(),
        "end reason in words: {p}"
    );
    assert_eq!(lab.status()["arHistory"][0]["endReason"], h[5]);
    b.eval("window.scrollTo(0, 0); return 0;");
    b.screenshot(&shots().join("dashboard-aborted.png"));

    // The timer and a reset behind its confirmation.
    b.click("#timer");
    lab.wait("high-resolution timer off", T, |l| {
        l.status()["highResolutionTimer"] == false
    });
    b.click("#resetComm");
    b.click("#confirmNo");
    b.wait("reset cancelled", T, |b| {
        (page(b)["result"] == "reset cancelled").then_some(())
    });
    b.click("#resetComm");
    b.click("#confirmYes");
    b.wait("reset done", T, |b| {
        page(b)["result"]
            .as_str()?
            .starts_with("reset communication: done")
            .then_some(())
    });

    // Stop from the page.
    b.click("#stop");
    lab.wait("Stopped after the Stop button", T, |l| {
        l.status()["state"] == "Stopped"
    });
    let p = b.wait("the page shows Stopped", T, |b| {
        let p = page(b);
        (p["state"] == "Stopped" && p["result"].as_str()?.starts_with("stop: done")).then_some(p)
    });
    assert_eq!(p["status"]["waitReason"], "the slave is not started", "{p}");
    b.eval("window.scrollTo(0, 0); return 0;");
    b.screenshot(&shots().join("dashboard-stopped.png"));

    // A configuration naming a NIC that does not exist: reload, start -> ConfigError in words.
    std::fs::write(&lab.xml, rig::config_xml("pnmissing0")).expect("xml");
    b.click("#reload");
    b.wait("reloaded", T, |b| {
        page(b)["result"]
            .as_str()?
            .starts_with("reload configuration: done")
            .then_some(())
    });
    b.click("#start");
    let p = b.wait("the page shows ConfigError", T, |b| {
        let p = page(b);
        (p["state"] == "ConfigError" && p["bannerClass"] == "state").then_some(p)
    });
    assert!(p["banner"].as_str().unwrap().contains("pnmissing0"), "{p}");
    assert!(
        p["result"].as_str().unwrap().starts_with("start: refused"),
        "{p}"
    );
    b.eval("window.scrollTo(0, 0); return 0;");
    b.screenshot(&shots().join("dashboard-config-error.png"));
    // Fixed: reload and start again from the page.
    std::fs::write(&lab.xml, rig::config_xml(&lab.veth.b)).expect("xml");
    b.click("#reload");
    b.wait("reloaded again", T, |b| {
        page(b)["result"]
            .as_str()?
            .starts_with("reload configuration: done")
            .then_some(())
    });
    b.click("#start");
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
    b.screenshot(&std::env::temp_dir().join("pn-dashboard-api-key.png"));

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

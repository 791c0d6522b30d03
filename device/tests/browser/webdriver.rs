//! A tiny W3C WebDriver client (HTTP/JSON to chromedriver over `pn_testkit::http`, one
//! connection per command) and a chromedriver + headless Chromium launcher inside a network
//! namespace. Only the commands the dashboard test uses: new session, navigate, execute script,
//! find element, click, send keys, clear, screenshot, window size, delete session.
#![allow(dead_code)]

use std::net::{SocketAddr, TcpListener};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use base64::Engine;
use pn_testkit::netns::NetNs;
use serde_json::{json, Value};

/// W3C element reference key.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

pub const CHROMIUM: &str = "/usr/bin/chromium";

/// Are `chromium` and `chromedriver` installed? (Under CI=true the caller fails on `false`.)
pub fn available() -> bool {
    Path::new(CHROMIUM).exists() && pn_testkit::env::has_tool("chromedriver")
}

/// A free TCP port number (chromedriver listens on it inside the namespace).
fn some_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or(9515)
}

/// One HTTP/1.1 request; (status, body). chromedriver keeps connections open even after
/// `Connection: close`, so the body is read by its Content-Length, not to the end.
fn http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    body: Option<&[u8]>,
) -> std::io::Result<(u16, Vec<u8>)> {
    use std::io::{BufRead, BufReader, Read, Write};
    let bad = |m: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, m.to_string());
    let mut s = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
    s.set_read_timeout(Some(Duration::from_secs(90)))?;
    let body = body.unwrap_or(b"");
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes())?;
    s.write_all(body)?;
    let mut r = BufReader::new(s);
    let mut line = String::new();
    r.read_line(&mut line)?;
    let status: u16 = line
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| bad("bad status line"))?;
    let mut len = 0usize;
    loop {
        line.clear();
        if r.read_line(&mut line)? == 0 {
            return Err(bad("headers cut off"));
        }
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        if let Some((k, v)) = l.split_once(':') {
            if k.trim().eq_ignore_ascii_case("content-length") {
                len = v.trim().parse().map_err(|_| bad("bad Content-Length"))?;
            }
        }
    }
    let mut out = vec![0u8; len];
    r.read_exact(&mut out)?;
    Ok((status, out))
}

/// chromedriver running inside a namespace, with one Chromium session.
pub struct Browser {
    ns: String,
    addr: SocketAddr,
    driver: Child,
    session: String,
    profile: PathBuf,
}

impl Browser {
    /// Start chromedriver inside `ns` and open a headless Chromium session.
    pub fn start(ns: &NetNs, log_dir: &Path) -> Browser {
        let port = some_port();
        let addr: SocketAddr = format!("127.0.0.1:{port}").parse().expect("addr");
        let log = std::fs::File::create(log_dir.join("chromedriver.log")).expect("log");
        let driver = std::process::Command::new("ip")
            .args(["netns", "exec", ns.name(), "chromedriver"])
            .arg(format!("--port={port}"))
            .arg(format!(
                "--log-path={}",
                log_dir.join("chromedriver-verbose.log").display()
            ))
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            // Own process group: the drop handler signals chromedriver and the Chromium
            // processes it started, and nothing else.
            .process_group(0)
            .spawn()
            .expect("spawn chromedriver");
        let profile = log_dir.join("chromium-profile");
        std::fs::create_dir_all(&profile).expect("profile dir");
        let mut b = Browser {
            ns: ns.name().to_string(),
            addr,
            driver,
            session: String::new(),
            profile,
        };
        let end = Instant::now() + Duration::from_secs(60);
        loop {
            if let Ok(v) = b.raw("GET", "/status", None) {
                if v["value"]["ready"] == true {
                    break;
                }
            }
            assert!(Instant::now() < end, "chromedriver did not become ready");
            std::thread::sleep(Duration::from_millis(50));
        }
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": CHROMIUM,
                "args": [
                    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                    "--no-first-run", "--disable-background-networking",
                    "--disable-component-update", "--disable-sync",
                    "--disable-dev-shm-usage", "--window-size=1280,1200",
                    format!("--user-data-dir={}", b.profile.display()),
                ]
            }
        }}});
        let v = b
            .raw("POST", "/session", Some(caps))
            .unwrap_or_else(|e| panic!("new session: {e}"));
        b.session = v["value"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no sessionId: {v}"))
            .to_string();
        b
    }

    /// One WebDriver command; Err with the WebDriver error on failure.
    fn raw(&self, method: &str, path: &str, body: Option<Value>) -> Result<Value, String> {
        let (addr, m, p) = (self.addr, method.to_string(), path.to_string());
        let ns = PathBuf::from("/var/run/netns").join(&self.ns);
        std::thread::spawn(move || -> Result<Value, String> {
            pn_testkit::netns::join_netns(&ns)?;
            let b = body.map(|b| b.to_string().into_bytes());
            let (status, body) =
                http(addr, &m, &p, b.as_deref()).map_err(|e| format!("{m} {p}: {e}"))?;
            let v: Value = serde_json::from_slice(&body).map_err(|e| {
                format!(
                    "{m} {p}: not JSON ({e}): {}",
                    String::from_utf8_lossy(&body)
                )
            })?;
            if status != 200 {
                return Err(format!("{m} {p}: HTTP {status} {v}"));
            }
            Ok(v)
        })
        .join()
        .map_err(|_| "WebDriver thread panicked".to_string())?
    }

    fn cmd(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let p = format!("/session/{}{path}", self.session);
        self.raw(method, &p, body).unwrap_or_else(|e| panic!("{e}"))["value"].take()
    }

    pub fn goto(&self, url: &str) {
        self.cmd("POST", "/url", Some(json!({ "url": url })));
    }

    pub fn refresh(&self) {
        self.cmd("POST", "/refresh", Some(json!({})));
    }

    /// Run `script` (a function body; `return` gives the value) in the page.
    pub fn eval(&self, script: &str) -> Value {
        self.cmd(
            "POST",
            "/execute/sync",
            Some(json!({"script": script, "args": []})),
        )
    }

    fn element(&self, css: &str) -> String {
        let v = self.cmd(
            "POST",
            "/element",
            Some(json!({"using": "css selector", "value": css})),
        );
        v[ELEMENT]
            .as_str()
            .unwrap_or_else(|| panic!("no element {css}: {v}"))
            .to_string()
    }

    /// Click the element matching `css` (a real pointer click through the browser).
    /// The page rebuilds its tables on every poll, so an element found a moment ago may be
    /// replaced before the click lands ("stale element reference"): find it again and retry.
    pub fn click(&self, css: &str) {
        let mut last = String::new();
        for _ in 0..20 {
            let id = self.element(css);
            let p = format!("/session/{}/element/{id}/click", self.session);
            match self.raw("POST", &p, Some(json!({}))) {
                Ok(_) => return,
                Err(e) if e.contains("stale element") => {
                    last = e;
                    std::thread::sleep(Duration::from_millis(50));
                }
                Err(e) => panic!("click {css}: {e}"),
            }
        }
        panic!("click {css}: element kept going stale: {last}");
    }

    /// Clear the input matching `css` and type `text` into it.
    pub fn type_into(&self, css: &str, text: &str) {
        let id = self.element(css);
        self.cmd("POST", &format!("/element/{id}/clear"), Some(json!({})));
        self.cmd(
            "POST",
            &format!("/element/{id}/value"),
            Some(json!({ "text": text })),
        );
    }

    /// Text content of the element with id `id` ("" when absent).
    pub fn text(&self, id: &str) -> String {
        self.eval(&format!(
            "const e = document.getElementById({}); return e ? e.textContent : '';",
            json!(id)
        ))
        .as_str()
        .unwrap_or("")
        .to_string()
    }

    /// Poll `f` until it gives `Some`, or panic after `timeout` with `what` and the page text.
    pub fn wait<T>(
        &self,
        what: &str,
        timeout: Duration,
        mut f: impl FnMut(&Self) -> Option<T>,
    ) -> T {
        let end = Instant::now() + timeout;
        loop {
            if let Some(v) = f(self) {
                return v;
            }
            if Instant::now() > end {
                let body = self.eval("return document.body.innerText;");
                panic!(
                    "timed out waiting for {what}; page text:\n{}",
                    body.as_str().unwrap_or("")
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Resize the browser window (a taller window puts the whole page in a screenshot).
    pub fn resize(&self, width: u32, height: u32) {
        self.cmd(
            "POST",
            "/window/rect",
            Some(json!({"width": width, "height": height})),
        );
    }

    /// PNG screenshot of the viewport, written to `path`.
    pub fn screenshot(&self, path: &Path) -> Vec<u8> {
        let v = self.cmd("GET", "/screenshot", None);
        let png = base64::engine::general_purpose::STANDARD
            .decode(v.as_str().expect("screenshot base64"))
            .expect("base64");
        assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");
        if let Some(d) = path.parent() {
            std::fs::create_dir_all(d).expect("screenshot dir");
        }
        std::fs::write(path, &png).expect("write screenshot");
        png
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if !self.session.is_empty() {
            let p = format!("/session/{}", self.session);
            let _ = self.raw("DELETE", &p, None);
        }
        let pgid = self.driver.id() as i32;
        // SAFETY: signals to the process group of the chromedriver this test started.
        unsafe { libc::kill(-pgid, libc::SIGTERM) };
        let end = Instant::now() + Duration::from_secs(5);
        while Instant::now() < end {
            if let Ok(Some(_)) = self.driver.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        // SAFETY: as above; whatever of the group is left.
        unsafe { libc::kill(-pgid, libc::SIGKILL) };
        let _ = self.driver.wait();
    }
}

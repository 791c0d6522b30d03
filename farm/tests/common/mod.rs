//! What the farm's binary-level lab tests share: the farm process, its status view over HTTP
//! inside a namespace.

#![allow(dead_code)] // each test binary uses its own part

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use pn_farm::status::DeviceView;
use pn_testkit::netns::NetNs;
use pn_testkit::poll;

pub const FARM: &str = env!("CARGO_BIN_EXE_pn-farm");

/// A child process that is ended (SIGTERM, then SIGKILL) and reaped when dropped.
pub struct Proc {
    child: Option<Child>,
    what: &'static str,
}

impl Proc {
    pub fn spawn(mut c: Command, what: &'static str) -> Proc {
        let child = c
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {what}: {e}"));
        Proc {
            child: Some(child),
            what,
        }
    }

    pub fn running(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|c| matches!(c.try_wait(), Ok(None)))
    }

    /// SIGTERM and wait (bounded) for the exit; its output.
    pub fn stop(mut self) -> Output {
        let mut c = self.child.take().expect("child");
        // SAFETY: a signal to our own child, by its pid.
        unsafe { libc::kill(c.id() as libc::pid_t, libc::SIGTERM) };
        let exited = poll::until(Duration::from_secs(10), || {
            matches!(c.try_wait(), Ok(Some(_)))
        });
        if !exited {
            let _ = c.kill();
        }
        let out = c.wait_with_output().expect("wait");
        assert!(exited, "{} did not stop on SIGTERM", self.what);
        out
    }

    /// Wait (bounded) for a process that ends by itself; its output.
    pub fn stop_when_done(mut self) -> Output {
        let mut c = self.child.take().expect("child");
        let done = poll::until(Duration::from_secs(30), || {
            matches!(c.try_wait(), Ok(Some(_)))
        });
        if !done {
            let _ = c.kill();
        }
        let out = c.wait_with_output().expect("wait");
        assert!(done, "{} did not end", self.what);
        out
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// One request to the farm's status view at `addr` inside `ns`: the whole response text
/// (`None` while it is not up).
pub fn http(ns: &NetNs, addr: &str, method: &str, path: &str, body: &str) -> Option<String> {
    let addr: SocketAddr = addr.parse().expect("status view address");
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    ns.enter(move || {
        let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()?;
        s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
        s.write_all(req.as_bytes()).ok()?;
        let mut out = String::new();
        s.read_to_string(&mut out).ok()?;
        Some(out)
    })
    .ok()
    .flatten()
}

/// The body of an HTTP response text.
pub fn body_of(response: &str) -> &str {
    response.split("\r\n\r\n").nth(1).unwrap_or("")
}

/// `GET /api/devices` of the status view at `addr`.
pub fn devices(ns: &NetNs, addr: &str) -> Option<Vec<DeviceView>> {
    let r = http(ns, addr, "GET", "/api/devices", "")?;
    serde_json::from_str(body_of(&r)).ok()
}

/// `GET /api/devices/NAME`.
pub fn device(ns: &NetNs, addr: &str, name: &str) -> Option<DeviceView> {
    let r = http(ns, addr, "GET", &format!("/api/devices/{name}"), "")?;
    serde_json::from_str(body_of(&r)).ok()
}

/// Wait for the farm's status view to list `n` devices.
pub fn wait_farm(ns: &NetNs, addr: &str, farm: &mut Proc, n: usize) -> Vec<DeviceView> {
    let v = poll::some(Duration::from_secs(10), || {
        assert!(farm.running(), "pn-farm exited");
        devices(ns, addr).filter(|v| v.len() == n)
    });
    v.expect("the farm's status view")
}

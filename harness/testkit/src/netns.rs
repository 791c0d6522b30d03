//! Network namespaces and veth pairs for tests (needs root and iproute2).
//!
//! Every namespace and link gets a unique name (prefix, process id, counter), and is removed on
//! drop. `NetNs::enter` runs a closure on a fresh thread that joined the namespace with
//! `setns(2)`, so a test can open sockets (TCP to the namespace's 127.0.0.1, raw sockets on its
//! veth) without spawning `ip netns exec`.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};

static COUNTER: AtomicU32 = AtomicU32::new(0);

fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run ip: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ip {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// A unique short name: `{prefix}{pid % 100000}x{n}` (interface names are limited to 15 bytes).
pub fn unique_name(prefix: &str) -> String {
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let name = format!("{prefix}{}x{n}", std::process::id() % 100_000);
    assert!(
        name.len() <= 15,
        "name {name} longer than 15 bytes: use a shorter prefix"
    );
    name
}

/// A network namespace, deleted on drop. Its loopback is brought up.
#[derive(Debug)]
pub struct NetNs {
    name: String,
}

impl NetNs {
    /// Create a namespace named from `prefix` (at most 5 characters keeps names short).
    pub fn new(prefix: &str) -> Result<Self, String> {
        let name = unique_name(prefix);
        // A stale namespace of the same name (a crashed earlier run with the same pid) goes first.
        let _ = ip(&["netns", "del", &name]);
        ip(&["netns", "add", &name])?;
        let ns = NetNs { name };
        ns.exec_ok(&["ip", "link", "set", "lo", "up"])?;
        Ok(ns)
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Path of the namespace handle (`/var/run/netns/NAME`).
    pub fn path(&self) -> PathBuf {
        PathBuf::from("/var/run/netns").join(&self.name)
    }

    /// A command that runs `program` inside the namespace (`ip netns exec NAME program`).
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.name]).arg(program);
        c
    }

    /// Run a command inside the namespace and require success.
    pub fn exec_ok(&self, argv: &[&str]) -> Result<String, String> {
        let out = self
            .command(argv[0])
            .args(&argv[1..])
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run {argv:?}: {e}"))?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            Err(format!(
                "{argv:?} in {} failed: {}",
                self.name,
                String::from_utf8_lossy(&out.stderr).trim()
            ))
        }
    }

    /// Run `f` on a new thread that has joined this namespace, and return its result.
    pub fn enter<R: Send + 'static>(
        &self,
        f: impl FnOnce() -> R + Send + 'static,
    ) -> Result<R, String> {
        enter_path(&self.path(), f)
    }
}

/// Run `f` on a new thread that has joined the namespace at `path` (`/var/run/netns/NAME`), for
/// namespaces this module did not create.
pub fn enter_path<R: Send + 'static>(
    path: &std::path::Path,
    f: impl FnOnce() -> R + Send + 'static,
) -> Result<R, String> {
    let path = path.to_path_buf();
    std::thread::spawn(move || -> Result<R, String> {
        join_netns(&path)?;
        Ok(f())
    })
    .join()
    .map_err(|_| "thread in namespace panicked".to_string())?
}

/// [`enter_path`] for the namespace named `name`.
pub fn enter_named<R: Send + 'static>(
    name: &str,
    f: impl FnOnce() -> R + Send + 'static,
) -> Result<R, String> {
    enter_path(&PathBuf::from("/var/run/netns").join(name), f)
}

/// Make the calling thread join the namespace at `path`.
pub fn join_netns(path: &std::path::Path) -> Result<(), String> {
    use std::os::fd::AsRawFd;
    let f = std::fs::File::open(path).map_err(|e| format!("open {}: {e}", path.display()))?;
    // SAFETY: setns on a valid fd affects only the calling thread's network namespace.
    let rc = unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) };
    if rc != 0 {
        return Err(format!(
            "setns {}: {}",
            path.display(),
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}

impl Drop for NetNs {
    fn drop(&mut self) {
        let _ = ip(&["netns", "del", &self.name]);
    }
}

/// A veth pair whose two ends live in two namespaces, both ends up. Deleting the namespaces
/// deletes the pair.
#[derive(Debug, Clone)]
pub struct Veth {
    /// Interface name in the first namespace.
    pub a: String,
    /// Interface name in the second namespace.
    pub b: String,
}

impl Veth {
    /// Create `a` in `ns_a` and `b` in `ns_b`, bring both up. `prefix` at most 5 characters.
    pub fn new(prefix: &str, ns_a: &NetNs, ns_b: &NetNs) -> Result<Self, String> {
        let a = unique_name(&format!("{prefix}a"));
        let b = unique_name(&format!("{prefix}b"));
        ip(&["link", "add", &a, "type", "veth", "peer", "name", &b])?;
        ip(&["link", "set", &a, "netns", ns_a.name()])?;
        ip(&["link", "set", &b, "netns", ns_b.name()])?;
        ns_a.exec_ok(&["ip", "link", "set", &a, "up"])?;
        ns_b.exec_ok(&["ip", "link", "set", &b, "up"])?;
        Ok(Veth { a, b })
    }

    /// The rig most tests need: a controller namespace `<tag>c` and a device namespace `<tag>d`
    /// joined by a veth pair (`a` on the controller's side, `b` on the device's), each end
    /// given its address (CIDR, e.g. `10.0.0.1/24`) when one is passed.
    pub fn controller_device(
        tag: &str,
        ctl_addr: Option<&str>,
        dev_addr: Option<&str>,
    ) -> Result<(NetNs, NetNs, Veth), String> {
        let ctl = NetNs::new(&format!("{tag}c"))?;
        let dev = NetNs::new(&format!("{tag}d"))?;
        let veth = Veth::new(tag, &ctl, &dev)?;
        if let Some(a) = ctl_addr {
            ctl.exec_ok(&["ip", "addr", "add", a, "dev", &veth.a])?;
        }
        if let Some(a) = dev_addr {
            dev.exec_ok(&["ip", "addr", "add", a, "dev", &veth.b])?;
        }
        Ok((ctl, dev, veth))
    }

    /// Take end `a` (in `ns`) down or up: a cable pull as the device sees it.
    pub fn set_link(ns: &NetNs, ifname: &str, up: bool) -> Result<(), String> {
        set_link_named(ns.name(), ifname, up)
    }
}

/// Take interface `ifname` in the namespace named `ns` down or up.
pub fn set_link_named(ns: &str, ifname: &str, up: bool) -> Result<(), String> {
    ip(&[
        "-n",
        ns,
        "link",
        "set",
        ifname,
        if up { "up" } else { "down" },
    ])
}

/// Remove namespaces left behind by crashed runs: any whose name starts with `prefix` and whose
/// embedded pid is not alive. Returns how many were removed.
pub fn remove_stale(prefix: &str) -> usize {
    let Ok(dir) = std::fs::read_dir("/var/run/netns") else {
        return 0;
    };
    let mut removed = 0;
    for e in dir.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(rest) = name.strip_prefix(prefix) else {
            continue;
        };
        let Some((pid, _)) = rest.split_once('x') else {
            continue;
        };
        let Ok(pid) = pid.parse::<u32>() else {
            continue;
        };
        // pids are stored modulo 100000; only remove when no live process matches.
        let alive = std::fs::read_dir("/proc").ok().is_some_and(|d| {
            d.flatten().any(|p| {
                p.file_name()
                    .to_string_lossy()
                    .parse::<u32>()
                    .is_ok_and(|n| n % 100_000 == pid)
            })
        });
        if !alive && ip(&["netns", "del", &name]).is_ok() {
            removed += 1;
        }
    }
    removed
}

//! The optional p-net device of `pn-lab bench cycle --pnet PN_DEV`: rt-labs' sample device
//! `pn_dev` (GPL, built outside the repository, e.g. with `../shared/tools/pnet/build.sh`) in
//! its own namespace, on the same segment as our device, driven by the same controller (a
//! second AR on the same cyclic thread) and recorded by the same recorder.
//!
//! Topology: the lab's controller end of the veth goes into a bridge in the controller
//! namespace (the bridge takes over its MAC and IP, and the controller and the recorder run
//! on the bridge), and a second veth joins p-net's namespace to the bridge. p-net starts as
//! in the interop runs (`docs/interop.md`, "p-net"): under `chrt -f 70` with the ethtool shim
//! as `LD_PRELOAD`, its storage directory fresh for every run, its MAC set here; its IP is set
//! over DCP by the controller at the first connect (the library's `assign_ip`). Nothing of
//! p-net is part of this repository: the bench only starts the binary it is given.

use super::rig::{ar_config, end_ar, ChildGuard};
use crate::lab::Lab;
use pn_controller::{ArHandle, ArState, Controller, Gsdml};
use pn_testkit::netns::{NetNs, Veth};
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

/// p-net's MAC (the one of the interop rig).
pub const PNET_MAC: [u8; 6] = [0x02, 0x00, 0x77, 0x00, 0x00, 0x02];
/// p-net's IP on the lab link (our device is `peer::DEV_IP`, .2).
pub const PNET_IP: Ipv4Addr = Ipv4Addr::new(192, 168, 78, 3);
/// The only period p-net joins: its sample GSDML allows send clock 32 (1 ms) only.
pub const PNET_PERIOD_US: u64 = 1000;
/// p-net's sample GSDML.
const GSDML_NAME: &str = "GSDML-V2.4-RT-Labs-P-Net-Sample-App-20220324.xml";
const SHIM_NAME: &str = "ethtool_shim.so";
/// Where `../shared/tools/pnet/build.sh` puts its work by default.
const BUILD_DIR: &str = "/tmp/pnet";
/// Name prefix of p-net's namespaces (stale ones are removed at start).
const NS_PREFIX: &str = "plp";

/// `--pnet` and its options.
#[derive(clap::Args, Debug, Clone)]
pub struct PnetArgs {
    /// Also run p-net's sample device (`pn_dev`, built outside the repository) in its own
    /// namespace on the device's segment, with a second AR from the same controller at the
    /// same period and DataHoldFactor (1 ms cases only), and report its input stream as the
    /// "p-net" row.
    #[arg(long, value_name = "PN_DEV")]
    pub pnet: Option<PathBuf>,
    /// p-net's GSDML [default: the sample application's, found as
    /// p-net/samples/pn_dev/GSDML-V2.4-RT-Labs-P-Net-Sample-App-20220324.xml
    /// beside PN_DEV's build directory, else under /tmp/pnet].
    #[arg(long, value_name = "PATH", requires = "pnet")]
    pub pnet_gsdml: Option<PathBuf>,
    /// The LD_PRELOAD ethtool shim p-net needs on a veth [default: ethtool_shim.so next to
    /// PN_DEV or one directory up, else /tmp/pnet/ethtool_shim.so].
    #[arg(long, value_name = "PATH", requires = "pnet")]
    pub pnet_shim: Option<PathBuf>,
    /// p-net's NameOfStation (its default after a factory start).
    #[arg(long, default_value = "rt-labs-dev", requires = "pnet")]
    pub pnet_station: String,
    /// p-net's modules, "SLOT=MODULE,..." of its GSDML.
    #[arg(long, default_value = "1=IDM_32,2=IDM_40", requires = "pnet")]
    pub pnet_modules: String,
    /// SCHED_FIFO priority of the whole pn_dev process (`chrt -f`), as in the interop runs.
    #[arg(long, default_value_t = 70, value_parser = clap::value_parser!(u8).range(1..=99), requires = "pnet")]
    pub pnet_prio: u8,
}

/// What `--pnet` resolved to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PnetPaths {
    pub bin: PathBuf,
    pub gsdml: PathBuf,
    pub shim: PathBuf,
    pub station: String,
    pub modules: String,
    pub prio: u8,
}

/// The first of `cands` for which `exists` holds, or an error naming all of them.
fn first_existing(
    what: &str,
    cands: Vec<PathBuf>,
    exists: &dyn Fn(&Path) -> bool,
) -> Result<PathBuf, String> {
    cands.iter().find(|p| exists(p)).cloned().ok_or_else(|| {
        let tried: Vec<String> = cands.iter().map(|p| p.display().to_string()).collect();
        format!("{what} not found (tried {})", tried.join(", "))
    })
}

/// Resolve `--pnet` and its defaults (`None` without `--pnet`); `exists` says whether a file
/// is there (the file system outside tests).
pub fn resolve(a: &PnetArgs, exists: &dyn Fn(&Path) -> bool) -> Result<Option<PnetPaths>, String> {
    let Some(bin) = &a.pnet else {
        return Ok(None);
    };
    if !exists(bin) {
        return Err(format!("--pnet {}: no such file", bin.display()));
    }
    let dir = bin.parent().unwrap_or(Path::new("."));
    let up = dir.parent().unwrap_or(dir);
    let sample = Path::new("p-net/samples/pn_dev").join(GSDML_NAME);
    let gsdml = match &a.pnet_gsdml {
        Some(p) => first_existing("--pnet-gsdml", vec![p.clone()], exists)?,
        None => first_existing(
            "p-net's GSDML (give --pnet-gsdml)",
            vec![
                up.join(&sample),
                dir.join(GSDML_NAME),
                Path::new(BUILD_DIR).join(&sample),
            ],
            exists,
        )?,
    };
    let shim = match &a.pnet_shim {
        Some(p) => first_existing("--pnet-shim", vec![p.clone()], exists)?,
        None => first_existing(
            "the ethtool shim (give --pnet-shim)",
            vec![
                dir.join(SHIM_NAME),
                up.join(SHIM_NAME),
                Path::new(BUILD_DIR).join(SHIM_NAME),
            ],
            exists,
        )?,
    };
    Ok(Some(PnetPaths {
        bin: bin.clone(),
        gsdml,
        shim,
        station: a.pnet_station.clone(),
        modules: a.pnet_modules.clone(),
        prio: a.pnet_prio,
    }))
}

/// Put the controller's end of the lab's veth into a new bridge that takes over its MAC and
/// its IP; returns the bridge's name (the controller's interface from now on).
pub fn bridge_controller_side(lab: &Lab) -> Result<String, String> {
    let ns = &lab.ns_ctl;
    let port = lab.controller_nic();
    let mac = link_mac(ns, port)?;
    let br = pn_testkit::netns::unique_name("plbr");
    let cidr = format!("{}/24", crate::peer::CTL_IP);
    ns.exec_ok(&["ip", "link", "add", &br, "type", "bridge"])?;
    ns.exec_ok(&["ip", "link", "set", &br, "address", &mac])?;
    ns.exec_ok(&["ip", "link", "set", port, "master", &br])?;
    ns.exec_ok(&["ip", "addr", "del", &cidr, "dev", port])?;
    ns.exec_ok(&["ip", "addr", "add", &cidr, "dev", &br])?;
    ns.exec_ok(&["ip", "link", "set", &br, "up"])?;
    Ok(br)
}

/// The MAC of `ifname` inside `ns` (`ip -o link show`).
fn link_mac(ns: &NetNs, ifname: &str) -> Result<String, String> {
    let out = ns.exec_ok(&["ip", "-o", "link", "show", "dev", ifname])?;
    out.split_whitespace()
        .skip_while(|w| *w != "link/ether")
        .nth(1)
        .map(str::to_string)
        .ok_or_else(|| format!("no MAC for {ifname} in: {out}"))
}

/// p-net running in its namespace on a port of the bridge, and its AR.
pub struct Pnet {
    pub ar: Option<ArHandle>,
    // Drop order: the process, then its namespace (with its end of the veth), then storage.
    proc: ChildGuard,
    ns: NetNs,
    /// p-net's interface in its namespace (MAC [`PNET_MAC`]).
    nic: String,
    storage: tempfile::TempDir,
    pub pid: u32,
    paths: PnetPaths,
}

impl Pnet {
    /// Namespace, veth to the bridge `br` in `ctl_ns`, fresh storage, `pn_dev` started.
    pub fn start(ctl_ns: &NetNs, br: &str, paths: &PnetPaths) -> Result<Pnet, String> {
        pn_testkit::netns::remove_stale(NS_PREFIX);
        let ns = NetNs::new(NS_PREFIX)?;
        let veth = Veth::new("pp", &ns, ctl_ns)?;
        let mac = pn_controller::MacAddr(PNET_MAC).to_string();
        ns.exec_ok(&["ip", "link", "set", &veth.a, "down"])?;
        ns.exec_ok(&["ip", "link", "set", &veth.a, "address", &mac])?;
        ns.exec_ok(&["ip", "link", "set", &veth.a, "up"])?;
        ctl_ns.exec_ok(&["ip", "link", "set", &veth.b, "master", br])?;
        let storage = tempfile::Builder::new()
            .prefix("pn-bench-pnet-")
            .tempdir()
            .map_err(|e| e.to_string())?;
        let log =
            std::fs::File::create(storage.path().join("pn_dev.log")).map_err(|e| e.to_string())?;
        // `ip netns exec` and `chrt` exec() the next program: the child's pid is pn_dev's.
        let child = ns
            .command("chrt")
            .args(["-f", &paths.prio.to_string()])
            .arg(&paths.bin)
            .args(["-i", &veth.a, "-p"])
            .arg(storage.path())
            .arg("-v")
            .env("LD_PRELOAD", &paths.shim)
            .current_dir(storage.path())
            .stdin(Stdio::null())
            .stdout(log.try_clone().map_err(|e| e.to_string())?)
            .stderr(log)
            .spawn()
            .map_err(|e| format!("{}: {e}", paths.bin.display()))?;
        let mut p = Pnet {
            ar: None,
            pid: child.id(),
            proc: ChildGuard(Some(child)),
            ns,
            nic: veth.a.clone(),
            storage,
            paths: paths.clone(),
        };
        std::thread::sleep(Duration::from_millis(500));
        if let Some(Ok(Some(st))) = p.proc.0.as_mut().map(|c| c.try_wait()) {
            return Err(format!("pn_dev exited at start ({st}):\n{}", p.log_tail()));
        }
        Ok(p)
    }

    /// `pn-bare-sender` in p-net's namespace on p-net's interface, so its frames carry
    /// [`PNET_MAC`] as their source (the recorder keeps them apart by it), to `dst`, at
    /// SCHED_FIFO `prio`: the same-run baseline of p-net's CPU.
    pub fn bare_sender(
        &self,
        dst: &str,
        period_us: u64,
        seconds: u64,
        prio: i32,
    ) -> Result<ChildGuard, String> {
        super::rig::bare_sender_in(&self.ns, &self.nic, Some(dst), period_us, seconds, prio)
    }

    /// p-net's SCHED_FIFO priority.
    pub fn prio(&self) -> i32 {
        i32::from(self.paths.prio)
    }

    /// The last lines of pn_dev's output.
    pub fn log_tail(&self) -> String {
        let s = std::fs::read_to_string(self.storage.path().join("pn_dev.log")).unwrap_or_default();
        let lines: Vec<&str> = s.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }

    /// Connect an AR at SendClockFactor `scf` x ReductionRatio `rr`, DataHoldFactor `dhf`
    /// (retried for up to 15 s while p-net starts or tears its previous AR down).
    pub fn connect(
        &mut self,
        ctl: &Controller,
        scf: u16,
        rr: u16,
        dhf: u16,
    ) -> Result<ArHandle, String> {
        let g = Gsdml::load(&self.paths.gsdml)?;
        let slots = pn_controller::gsdml::parse_slot_list(&self.paths.modules)?;
        let model = g.device_model(&self.paths.station, &slots)?;
        let mut c = ar_config(model, scf, rr, dhf);
        c.device_ip = Some(PNET_IP);
        c.assign_ip = true;
        let end = Instant::now() + Duration::from_secs(15);
        loop {
            let err = match ctl.connect(c.clone()) {
                Ok(h) => {
                    let st = h.wait_state(|s| *s == ArState::DataExchange, Duration::from_secs(5));
                    if st == ArState::DataExchange {
                        self.ar = Some(h.clone());
                        return Ok(h);
                    }
                    h.abort();
                    format!("AR not in DataExchange: {st:?}")
                }
                Err(e) => e.to_string(),
            };
            if Instant::now() > end || super::stopped() {
                return Err(format!("p-net connect: {err}\n{}", self.log_tail()));
            }
            super::nap(Duration::from_millis(500));
        }
    }

    pub fn disconnect(&mut self) {
        end_ar(self.ar.take());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        p: PnetArgs,
    }

    fn args(v: &[&str]) -> Result<PnetArgs, clap::Error> {
        Cli::try_parse_from(std::iter::once("x").chain(v.iter().copied())).map(|c| c.p)
    }

    #[test]
    fn defaults_follow_the_build_layout() {
        let a = args(&["--pnet", "/opt/p/build/pn_dev"]).unwrap();
        assert_eq!((a.pnet_station.as_str(), a.pnet_prio), ("rt-labs-dev", 70));
        assert_eq!(a.pnet_modules, "1=IDM_32,2=IDM_40");
        // build.sh's layout: WORK/build/pn_dev, WORK/ethtool_shim.so, WORK/p-net/samples/...
        let have = [
            "/opt/p/build/pn_dev",
            "/opt/p/ethtool_shim.so",
            "/opt/p/p-net/samples/pn_dev/GSDML-V2.4-RT-Labs-P-Net-Sample-App-20220324.xml",
        ];
        let exists = |p: &Path| have.iter().any(|h| Path::new(h) == p);
        let r = resolve(&a, &exists).unwrap().unwrap();
        assert_eq!(r.shim, Path::new("/opt/p/ethtool_shim.so"));
        assert_eq!(r.gsdml, Path::new(have[2]));
        // Nothing beside the binary: /tmp/pnet.
        let only_bin = |p: &Path| p == Path::new("/opt/p/build/pn_dev") || p.starts_with(BUILD_DIR);
        let r = resolve(&a, &only_bin).unwrap().unwrap();
        assert_eq!(r.shim, Path::new("/tmp/pnet/ethtool_shim.so"));
        assert!(r.gsdml.starts_with("/tmp/pnet/p-net/samples/pn_dev"));
    }

    #[test]
    fn explicit_paths_and_errors() {
        assert_eq!(resolve(&args(&[]).unwrap(), &|_| true).unwrap(), None);
        let a = args(&[
            "--pnet",
            "/x/pn_dev",
            "--pnet-gsdml",
            "/g.xml",
            "--pnet-shim",
            "/s.so",
            "--pnet-station",
            "other",
            "--pnet-prio",
            "50",
        ])
        .unwrap();
        let r = resolve(&a, &|_| true).unwrap().unwrap();
        assert_eq!(
            (
                r.gsdml.as_path(),
                r.shim.as_path(),
                r.station.as_str(),
                r.prio
            ),
            (Path::new("/g.xml"), Path::new("/s.so"), "other", 50)
        );
        let e = resolve(&a, &|p: &Path| p != Path::new("/s.so")).unwrap_err();
        assert!(e.contains("--pnet-shim") && e.contains("/s.so"), "{e}");
        let e = resolve(&a, &|_| false).unwrap_err();
        assert!(e.contains("/x/pn_dev"), "{e}");
        // The options need --pnet; the priority is a SCHED_FIFO one.
        assert!(args(&["--pnet-gsdml", "/g.xml"]).is_err());
        assert!(args(&["--pnet", "/x", "--pnet-prio", "0"]).is_err());
    }
}

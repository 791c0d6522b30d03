//! pn-farm: a plant in one box. One process emulates N PROFINET IO devices on one NIC, each
//! with its own MAC, NameOfStation, IP, identity, I&M and configuration, each running the same
//! role machines as pn-device (see [`device`]); docs/architecture.md "The plant farm".
//!
//! * [`plant`]: the plant file and the numbering of N copies (pure);
//! * [`device`]: one device: the machines and the shell glue;
//! * [`io`]: the one I/O loop (thread `farm-io`): one raw socket, one deadline set, batched
//!   sends; ARP replies for the devices' IPs (`pn_protocol::wire::arp`);
//! * [`standby`]: the standby sender (thread `farm-standby`, `--standby-cpu`): sends a
//!   device's slot the I/O loop has not sent a quarter period after it was due;
//! * [`remanent`]: the devices' remanent data (`--state-dir`, one file per device);
//! * [`status`]: the status view (thread `farm-http`).

pub mod device;
pub mod io;
pub mod plant;
pub mod remanent;
pub mod standby;
pub mod status;

use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;

use pn_device::dataplane::DiagnosisEntry;
use pn_protocol::time::Instant;

use crate::device::FarmDevice;
use crate::plant::DeviceSpec;
use crate::status::{Command, DeviceView, FarmShared};

/// How the farm runs.
#[derive(Debug, Clone, Default)]
pub struct FarmOptions {
    /// Address of the status view (`None`: none).
    pub http: Option<SocketAddr>,
    /// Try `SCHED_FIFO` for the I/O loop (as pn-device's cyclic thread does).
    pub realtime: bool,
    /// Remanent data of the devices, one file per device (`None`: kept for the farm's
    /// lifetime only).
    pub state_dir: Option<std::path::PathBuf>,
    /// How the I/O loop reads frames (a receive ring unless told otherwise).
    pub rx: io::RxMode,
    /// A standby sender on this CPU (`None`: none), with its grace (`None`: a quarter
    /// period); the I/O loop then leaves that CPU.
    pub standby: Option<pn_device::stack::standby::StandbyConfig>,
}

/// A running farm. Dropping it stops it (every AR ended with ERR-RTA).
pub struct Farm {
    shared: Arc<FarmShared>,
    threads: Vec<JoinHandle<()>>,
    http_addr: Option<SocketAddr>,
}

impl Farm {
    /// Open the NIC and start the devices. Needs `CAP_NET_RAW`; the socket is opened in the
    /// calling thread's network namespace.
    pub fn start(nic: &str, specs: &[DeviceSpec], opts: FarmOptions) -> Result<Farm, String> {
        plant::check_unique(specs)?;
        if let Some(d) = &opts.state_dir {
            std::fs::create_dir_all(d)
                .map_err(|e| format!("state directory {}: {e}", d.display()))?;
        }
        let (sock, rx_side) = io::open(nic, opts.rx, specs.len())?;
        let sock = Arc::new(sock);
        let now = Instant(pn_device::stack::cyclic::mono_ns());
        let boot = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs() as u32)
            .unwrap_or(1);
        let devs: Vec<FarmDevice> = specs
            .iter()
            .enumerate()
            .map(|(k, s)| FarmDevice::new(k, s, now, boot, opts.state_dir.as_deref()))
            .collect();
        let (tx, rx) = mpsc::channel();
        let shared = Arc::new(FarmShared {
            devices: devs.iter().map(|d| d.shared.clone()).collect(),
            commands: Mutex::new(tx),
            stop: AtomicBool::new(false),
            io: Default::default(),
        });
        let listener = match opts.http {
            Some(a) => Some(TcpListener::bind(a).map_err(|e| format!("status view {a}: {e}"))?),
            None => None,
        };
        let http_addr = listener.as_ref().and_then(|l| l.local_addr().ok());
        let mut threads = Vec::new();
        let s2 = shared.clone();
        let realtime = opts.realtime;
        // The I/O loop leaves the standby's CPU only when a standby thread exists.
        let standby = opts.standby.filter(|cfg| {
            let parts = devs.iter().map(FarmDevice::standby_parts).collect();
            match standby::spawn(sock.clone(), parts, shared.clone(), *cfg, realtime) {
                Ok(h) => {
                    threads.push(h);
                    true
                }
                // Not the end of the farm: it runs as without --standby-cpu, and says so.
                Err(e) => {
                    tracing::warn!(error = %e, "farm standby sender: no thread; no standby");
                    false
                }
            }
        });
        let io_thread = std::thread::Builder::new()
            .name("farm-io".into())
            .spawn(move || {
                if let Some(cfg) = standby {
                    pn_device::stack::standby::avoid_cpu(cfg.cpu);
                }
                io::run(sock, rx_side, devs, s2, rx, realtime)
            });
        match io_thread {
            Ok(h) => threads.push(h),
            Err(e) => {
                drop(Farm {
                    shared,
                    threads,
                    http_addr: None,
                });
                return Err(format!("farm-io thread: {e}"));
            }
        }
        if let Some(l) = listener {
            match status::spawn_http(l, shared.clone()) {
                Ok(h) => threads.push(h),
                Err(e) => {
                    let f = Farm {
                        shared,
                        threads,
                        http_addr: None,
                    };
                    drop(f);
                    return Err(format!("status view: {e}"));
                }
            }
        }
        Ok(Farm {
            shared,
            threads,
            http_addr,
        })
    }

    /// Where the status view listens (the bound address, also for port 0).
    pub fn http_addr(&self) -> Option<SocketAddr> {
        self.http_addr
    }

    pub fn devices(&self) -> Vec<DeviceView> {
        self.shared
            .devices
            .iter()
            .enumerate()
            .map(|(i, d)| d.view(i))
            .collect()
    }

    pub fn device(&self, i: usize) -> Option<DeviceView> {
        self.shared.devices.get(i).map(|d| d.view(i))
    }

    /// Test hook: hold the I/O loop for `d`, as a machine that takes its CPU would; false
    /// when the farm has stopped.
    #[cfg(feature = "test-hooks")]
    pub fn hold_io(&self, d: std::time::Duration) -> bool {
        self.shared.send(Command::HoldIo(d))
    }

    /// Set PROFINET input data (device -> controller) of device `i` at `offset`.
    pub fn set_inputs(&self, i: usize, offset: usize, data: &[u8]) -> Result<(), String> {
        let d = self.shared.devices.get(i).ok_or("no such device")?;
        d.image
            .write_output(offset, data)
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    /// PROFINET output data (controller -> device) of device `i` as last received.
    pub fn outputs(&self, i: usize) -> Option<Vec<u8>> {
        self.shared.devices.get(i).map(|d| d.image.snapshot().input)
    }

    /// Raise a diagnosis on device `i`: a diagnosis alarm to its controller.
    pub fn set_diagnosis(&self, i: usize, d: DiagnosisEntry) -> bool {
        self.shared.send(Command::SetDiagnosis(i, d))
    }

    /// Clear a diagnosis on device `i`: a disappearing diagnosis alarm.
    pub fn remove_diagnosis(&self, i: usize, d: DiagnosisEntry) -> bool {
        self.shared.send(Command::RemoveDiagnosis(i, d))
    }

    /// The stop flag (the CLI's signal handler sets it).
    pub fn stopping(&self) -> bool {
        self.shared.stop.load(Ordering::Acquire)
    }

    /// Stop: end every AR, join the threads.
    pub fn stop(mut self) {
        self.stop_threads();
    }

    fn stop_threads(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

impl Drop for Farm {
    fn drop(&mut self) {
        self.stop_threads();
    }
}

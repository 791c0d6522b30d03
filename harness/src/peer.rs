//! The controller simulator as the device's peer in a lab: started in-process on a thread that
//! joined the controller namespace (its worker threads inherit the namespace), connected with
//! the device's own runtime configuration as the device model.

use pn_controller::{
    ArConfig, ArHandle, ArState, Controller, ControllerConfig, DeviceConfig, Faults,
    RealtimeOptions,
};
use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

/// Addresses of the lab link (a private /24 that exists only inside the lab's namespaces).
pub const CTL_IP: Ipv4Addr = Ipv4Addr::new(192, 168, 78, 1);
pub const DEV_IP: Ipv4Addr = Ipv4Addr::new(192, 168, 78, 2);

/// Timing of the controller's AR.
#[derive(Debug, Clone, Copy)]
pub struct PeerTiming {
    /// Send clock in units of 31.25 us (32 = 1 ms).
    pub send_clock_factor: u16,
    pub reduction_ratio: u16,
    pub data_hold_factor: u16,
}

/// A running controller with at most one AR to the lab's device.
pub struct Peer {
    ctl: Option<Controller>,
    ar: Option<ArHandle>,
    model_xml: String,
    timing: PeerTiming,
    faults: Faults,
}

impl Peer {
    /// Start the controller on `nic` inside `ns`. `model_xml` is the device's runtime
    /// configuration (its layout is what the controller expects).
    pub fn start(
        ns: &pn_testkit::netns::NetNs,
        nic: &str,
        model_xml: String,
        timing: PeerTiming,
    ) -> Result<Peer, String> {
        let nic = nic.to_string();
        let scf = timing.send_clock_factor;
        let ctl = ns
            .enter(move || {
                let mut c = ControllerConfig::new(&nic);
                c.send_clock_factor = scf;
                // The cyclic and receive threads sleep almost all the time; SCHED_FIFO keeps
                // compiler load on the 2-core CI machine from delaying frames past the
                // data-hold time, without starving anything.
                c.realtime = RealtimeOptions {
                    fifo_priority: Some(40),
                    lock_memory: false,
                };
                Controller::start(c)
            })?
            .map_err(|e| format!("controller start: {e}"))?;
        Ok(Peer {
            ctl: Some(ctl),
            ar: None,
            model_xml,
            timing,
            faults: Faults::default(),
        })
    }

    fn ctl(&self) -> Result<&Controller, String> {
        self.ctl
            .as_ref()
            .ok_or_else(|| "controller stopped".to_string())
    }

    fn ar(&self) -> Result<&ArHandle, String> {
        self.ar
            .as_ref()
            .ok_or_else(|| "no AR: connect first".to_string())
    }

    /// Connect to data exchange (Connect, parameters, PrmEnd, ApplicationReady).
    pub fn connect(&mut self) -> Result<(), String> {
        let model = DeviceConfig::parse(&self.model_xml)
            .map_err(|e| format!("device model: {e}"))?
            .model;
        let mut c = ArConfig::new(model);
        c.device_ip = Some(DEV_IP);
        c.timing.reduction_ratio = self.timing.reduction_ratio;
        c.timing.watchdog_factor = self.timing.data_hold_factor;
        c.timing.data_hold_factor = self.timing.data_hold_factor;
        c.faults = self.faults;
        c.app_ready_timeout = Duration::from_secs(5);
        let h = self
            .ctl()?
            .connect(c)
            .map_err(|e| format!("connect: {e}"))?;
        self.ar = Some(h);
        Ok(())
    }

    pub fn release(&mut self) -> Result<(), String> {
        let r = self.ar()?.release().map_err(|e| format!("release: {e}"));
        self.ar = None;
        r
    }

    pub fn abort(&mut self) -> Result<(), String> {
        self.ar()?.abort();
        self.ar = None;
        Ok(())
    }

    /// Change the fault set of the AR (and of later connects).
    pub fn update_faults(&mut self, f: impl FnOnce(&mut Faults)) -> Result<(), String> {
        f(&mut self.faults);
        self.ar()?.set_faults(self.faults);
        Ok(())
    }

    pub fn set_outputs(&self, offset: usize, data: &[u8]) -> Result<(), String> {
        self.ar()?
            .set_outputs(offset, data)
            .map_err(|e| format!("set outputs: {e}"))
    }

    /// Wait until the inputs from the device hold `data` at `offset`.
    pub fn expect_inputs(
        &self,
        offset: usize,
        data: &[u8],
        within: Duration,
    ) -> Result<(), String> {
        let ar = self.ar()?;
        let deadline = Instant::now() + within;
        loop {
            let got = ar.inputs();
            if got.data.get(offset..offset + data.len()) == Some(data) {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "controller inputs at {offset} are {:02x?}, expected {data:02x?} (state {:?})",
                    got.data.get(offset..).unwrap_or(&[]),
                    ar.state()
                ));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Read I&M0 of the DAP within the AR.
    pub fn read_im0(&self) -> Result<(), String> {
        self.ar()?
            .read_im(0, 1, 0)
            .map(|_| ())
            .map_err(|e| format!("read I&M0: {e}"))
    }

    /// The AR's state, if connected.
    pub fn state(&self) -> Option<ArState> {
        self.ar.as_ref().map(|a| a.state())
    }

    /// Watchdog expiries the controller saw on the device's frames.
    pub fn watchdog_expiries(&self) -> u64 {
        self.ar.as_ref().map_or(0, |a| a.status().watchdog_expiries)
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        if let Some(a) = self.ar.take() {
            a.abort();
        }
        if let Some(c) = self.ctl.take() {
            c.shutdown();
        }
    }
}

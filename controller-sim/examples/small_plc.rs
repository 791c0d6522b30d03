//! A small PLC: connect to every device given as `IFACE XML IP [XML IP ...]` (pn-device runtime
//! configuration files), then run a 10 ms "program" that copies each device's first input byte,
//! incremented, to its first output byte, and prints the IO once a second.
//!
//! ```console
//! $ cargo run -p pn-controller --example small_plc -- eth1 dev1.xml 192.168.0.11 dev2.xml 192.168.0.12
//! ```

use std::time::{Duration, Instant};

use pn_controller::{ArConfig, ArState, Controller, ControllerConfig, DeviceConfig, Error};

fn main() -> Result<(), Error> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 3 || args.len() & 1 == 0 {
        eprintln!("usage: small_plc IFACE XML IP [XML IP ...]");
        std::process::exit(2);
    }
    let ctl = Controller::start(ControllerConfig::new(&args[0]))?;
    let events = ctl.events();
    let mut ars = Vec::new();
    for pair in args[1..].chunks(2) {
        let dev = DeviceConfig::load(pair[0].as_ref()).map_err(Error::Config)?;
        let mut c = ArConfig::new(dev.model);
        c.device_ip = Some(
            pair[1]
                .parse()
                .map_err(|e| Error::Config(format!("{}: {e}", pair[1])))?,
        );
        c.timing.reduction_ratio = 8; // 8 ms at the default 1 ms send clock
        c.timing.data_hold_factor = 10;
        c.timing.watchdog_factor = 10;
        let h = ctl.connect(c)?;
        println!("connected to {} ({:?})", h.station_name(), h.state());
        ars.push(h);
    }
    let mut last_print = Instant::now();
    loop {
        for h in &ars {
            let inp = h.inputs();
            if let Some(&b) = inp.data.first() {
                let _ = h.set_outputs(0, &[b.wrapping_add(1)]);
            }
        }
        for e in events.try_iter() {
            println!("event: {e:?}");
        }
        if last_print.elapsed() >= Duration::from_secs(1) {
            last_print = Instant::now();
            for h in &ars {
                let s = h.status();
                println!(
                    "{:<20} {:?} in {} out {} rx {} tx {}",
                    s.station_name,
                    s.state,
                    hex::encode(h.inputs().data),
                    hex::encode(h.outputs()),
                    s.frames_new_data,
                    s.frames_sent
                );
            }
        }
        if ars
            .iter()
            .all(|h| matches!(h.state(), ArState::Aborted(_) | ArState::Released))
        {
            return Err(Error::Aborted("all ARs ended".into()));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

//! The fault rounds of a [`Rig`] other than floods: link flaps, controller crashes, frame-loss
//! bursts (tc), device kills, and the device's process figures they are judged by.

use super::Rig;
use crate::peer::DEV_IP;
use crate::soak::{controller_binary, Counters, Rng};
use pn_controller::ArState;
use std::time::{Duration, Instant};

impl Rig {
    /// One cable pull: connect, write in data exchange, pull the link at a random moment,
    /// write 1..=3 values during the outage, plug back, reconnect, and require the last value
    /// to arrive (and the sequence never to go backwards).
    pub fn flap_round(&mut self, rng: &mut Rng, c: &mut Counters) -> Result<(), String> {
        self.ensure_connected(Duration::from_secs(20), c)?;
        self.write_and_check(c)?;
        // A random moment relative to the cycle and to the last write (the subject).
        std::thread::sleep(Duration::from_micros(rng.range(0, 20_000)));
        self.lab.set_link(false)?;
        c.link_flaps += 1;
        let n = rng.range(1, 3);
        for k in 0..n {
            let s = self.seq + 1;
            self.write_seq(s, c)?;
            if k + 1 < n {
                std::thread::sleep(Duration::from_micros(rng.range(0, 5_000)));
            }
        }
        std::thread::sleep(Duration::from_micros(rng.range(0, 30_000)));
        self.lab.set_link(true)?;
        self.wait_api("link up again", Duration::from_secs(5), |s| {
            s["linkUp"] == true
        })?;
        self.ensure_connected(Duration::from_secs(20), c)?;
        let last = self.seq;
        self.await_seq(last, c)
            .map_err(|e| format!("a write made during the outage: {e}"))?;
        c.rounds += 1;
        self.harvest(c)
    }

    /// The controller process dies at a random moment: the in-process controller stops without
    /// Release (its frames just stop), then a real `pn-controller connect-and-run` process is
    /// started and killed with SIGKILL at a random moment (while connecting or in data
    /// exchange); a new controller connects and the value written meanwhile must arrive.
    pub fn crash_controller(&mut self, rng: &mut Rng, c: &mut Counters) -> Result<(), String> {
        self.ensure_connected(Duration::from_secs(20), c)?;
        self.write_and_check(c)?;
        std::thread::sleep(Duration::from_micros(rng.range(0, 20_000)));
        *self.current_ar.lock().unwrap_or_else(|p| p.into_inner()) = None;
        if let Some(p) = self.plc.take() {
            if let Some(a) = &p.ar {
                c.controller_watchdog_expiries += a.status().watchdog_expiries;
            }
            c.controller_max_tick_late_us = c
                .controller_max_tick_late_us
                .max(p.ctl.tick_stats().max_lateness_us);
            p.ctl.shutdown();
        }
        c.controller_crashes += 1;
        // The device notices (data-hold watchdog) and waits for a controller.
        let s = self.seq + 1;
        self.write_seq(s, c)?;
        if let Ok(bin) = controller_binary() {
            let mut child = self
                .lab
                .ns_ctl
                .command(&bin)
                .args([
                    "-i",
                    self.lab.controller_nic(),
                    "connect-and-run",
                    "--config",
                ])
                .arg(self.lab.config_path())
                .args([
                    "--ip",
                    &DEV_IP.to_string(),
                    "--send-clock-ms",
                    "1",
                    "--reduction-ratio",
                    &self.cycle_ms.to_string(),
                    "--data-hold-factor",
                    &self.data_hold_factor.to_string(),
                    "--duration",
                    "30",
                ])
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .map_err(|e| format!("cannot start {}: {e}", bin.display()))?;
            std::thread::sleep(Duration::from_millis(rng.range(0, 2_000)));
            // SAFETY: kill(2) on our own child (`ip netns exec` execs the program in place).
            unsafe {
                libc::kill(child.id() as i32, libc::SIGKILL);
            }
            let _ = child.wait();
            c.controller_crashes += 1;
        }
        self.start_controller()?;
        self.connect(Duration::from_secs(30), c)?;
        self.await_seq(s, c)
            .map_err(|e| format!("a write made while the controller was down: {e}"))?;
        c.rounds += 1;
        self.harvest(c)
    }

    /// Lose device frames for `dur` with a CycleCounter pattern (see [`Rig::drop_pattern`]),
    /// then stop; the AR may end (when the data-hold time runs out) and must come back (the
    /// PLC reconnects). Returns the ARs that ended during the burst.
    pub fn loss_burst(
        &mut self,
        mask: u16,
        dur: Duration,
        c: &mut Counters,
    ) -> Result<u64, String> {
        self.ensure_connected(Duration::from_secs(20), c)?;
        let cur = |r: &Rig| r.ar().map_or(0, |a| a.status().watchdog_expiries);
        let base = c.controller_watchdog_expiries + cur(self);
        self.drop_pattern(mask, 0)?;
        c.loss_bursts += 1;
        let end = Instant::now() + dur;
        while Instant::now() < end {
            if !self
                .ar()
                .is_some_and(|a| a.state() == ArState::DataExchange)
            {
                let left = end.saturating_duration_since(Instant::now());
                let _ = self.connect(left.max(Duration::from_millis(100)), c);
                continue;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let expiries = (c.controller_watchdog_expiries + cur(self)).saturating_sub(base);
        self.clear_impairment()?;
        self.ensure_connected(Duration::from_secs(20), c)?;
        self.write_and_check(c)?;
        c.rounds += 1;
        self.harvest(c)?;
        Ok(expiries)
    }

    /// Drop the device's cyclic frames whose CycleCounter matches `value` under `mask` on the
    /// device's egress (tc clsact + u32 + mirred redirect into an unconnected veth: this
    /// kernel has no sch_netem and no gact/police actions). The CycleCounter advances by
    /// SendClockFactor x ReductionRatio (= 128 at 4 ms) per frame, so `mask 0x0380 value 0`
    /// drops 1 frame of every 8, `0x0300` 2 consecutive of 8, `0x0200` 4 consecutive of 8.
    pub fn drop_pattern(&self, mask: u16, value: u16) -> Result<(), String> {
        self.clear_impairment()?;
        let ar = self.ar().ok_or("no AR")?;
        let c_sdu = ar.layout().input.data_length as usize;
        let fid = ar.status().input_frame_id;
        let ns = &self.lab.ns_dev;
        let a = self.lab.nic().to_string();
        let sink = self.sink_name();
        if ns.exec_ok(&["ip", "link", "show", &sink]).is_err() {
            let peer = format!("{sink}p");
            ns.exec_ok(&[
                "ip", "link", "add", &sink, "type", "veth", "peer", "name", &peer,
            ])?;
            ns.exec_ok(&["ip", "link", "set", &sink, "up"])?;
            ns.exec_ok(&["ip", "link", "set", &peer, "up"])?;
        }
        ns.exec_ok(&["tc", "qdisc", "add", "dev", &a, "clsact"])?;
        let val = format!("{value:#06x}");
        let msk = format!("{mask:#06x}");
        let fid = format!("{fid:#06x}");
        // The u32 offsets count from the network header: right after the EtherType, i.e. at
        // the VLAN TCI of a tagged frame, at the FrameID of an untagged one.
        for (prio, rule) in [
            (
                "1",
                vec![
                    "match", "u16", "0x8892", "0xffff", "at", "2", "match", "u16", &fid, "0xffff",
                    "at", "4",
                ],
            ),
            ("2", vec!["match", "u16", &fid, "0xffff", "at", "0"]),
        ] {
            let cc_at = if prio == "1" {
                4 + 2 + c_sdu
            } else {
                2 + c_sdu
            }
            .to_string();
            let mut argv = vec![
                "tc", "filter", "add", "dev", &a, "egress", "protocol", "all", "prio", prio, "u32",
            ];
            argv.extend(rule);
            argv.extend(["match", "u16", &val, &msk, "at", &cc_at]);
            argv.extend(["action", "mirred", "egress", "redirect", "dev", &sink]);
            ns.exec_ok(&argv)?;
        }
        Ok(())
    }

    fn sink_name(&self) -> String {
        format!("rs{}", self.lab.nic().trim_start_matches("pla"))
    }

    /// Remove any impairment of the device's egress.
    pub fn clear_impairment(&self) -> Result<(), String> {
        let _ = self
            .lab
            .ns_dev
            .exec_ok(&["tc", "qdisc", "del", "dev", self.lab.nic(), "clsact"]);
        Ok(())
    }

    /// Frames the sink received (the frames the impairment dropped).
    pub fn impairment_drops(&self) -> u64 {
        let p = format!("{}p", self.sink_name());
        self.lab
            .ns_dev
            .exec_ok(&["cat", &format!("/sys/class/net/{p}/statistics/rx_packets")])
            .ok()
            .and_then(|t| t.trim().parse().ok())
            .unwrap_or(0)
    }

    /// The daemon's pid (from GET /api/info).
    pub fn device_pid(&self) -> Option<u32> {
        self.api("GET", "/api/info", None)
            .ok()
            .and_then(|(_, v)| v["pid"].as_u64())
            .map(|p| p as u32)
    }

    /// Resident set size of the daemon in KiB.
    pub fn device_rss_kib(&self) -> Option<u64> {
        let pid = self.device_pid()?;
        let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
        s.lines()
            .find(|l| l.starts_with("VmRSS:"))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|n| n.parse().ok())
    }

    /// The device's watchdog trips in this daemon life.
    pub fn device_trips(&self) -> u64 {
        self.api("GET", "/api/diag", None)
            .ok()
            .and_then(|(_, v)| v["watchdogTrips"].as_u64())
            .unwrap_or(0)
    }

    /// Device watchdog trips over all daemon lives.
    pub fn device_trips_total(&self) -> u64 {
        self.trips_before + self.device_trips()
    }

    /// SIGKILL the daemon and start it again on the same persistence directory; the Q area
    /// is volatile, so the sequence watch starts over and the current value is written again.
    pub fn kill_device(&mut self, c: &mut Counters) -> Result<(), String> {
        self.trips_before += self.device_trips();
        self.drop_ar(c);
        self.lab.restart(true, None, None)?;
        self.reset_watch();
        c.device_kills += 1;
        c.device_restarts += 1;
        self.wait_api("device started again", Duration::from_secs(15), |s| {
            s["state"] == "Initialized" && s["linkUp"] == true
        })?;
        Ok(())
    }
}

//! Issue 9.1: packet loss on the device's link (device -> controller direction). The
//! controller's AR must end exactly when the data-hold arithmetic says so: DataHoldFactor (4)
//! consecutive input frames lost (counted from the CycleCounters of the frames that reached the
//! controller's interface, recorded by an independent raw socket), and never otherwise; after
//! every end the controller reconnects and the exchange comes back without any help on the
//! device.
//!
//! This kernel has no `sch_netem` (and no gact/police actions), so the loss is made with
//! `tc clsact` + `u32` + `mirred redirect` into an unconnected veth, selecting frames by their
//! CycleCounter: deterministic patterns of 1, 2 and 4 consecutive lost frames out of every 8
//! (see `Rig::drop_pattern`). Delay and duplication are made by the userspace bridge of
//! `pn_lab::impair` instead (`reliability_impair.rs`).
//!
//! "Never otherwise" is judged on the gaps the impairment made alone; a gap that includes
//! slots the device never sent (a stall of its thread or of the VM) explains an end but does
//! not demand one (the controller, stalled with it, consumes the queued next frame before it
//! judges its watchdog, by design).
//!
//! An AR may also end by the device's own watchdog (ERR-RTA "consumer DHT expired") when the
//! controller's frames stop, e.g. when its cyclic thread stalls on this loaded 2-core VM; such
//! an end is accepted only with DataHoldFactor - 1 or more of the controller's frames lost,
//! counted the same way by a second probe on the device's interface.
//!
//! Boundary: with DataHoldFactor - 1 frames lost the next frame arrives exactly at the end of
//! the data-hold time (DHF x cycle after the last one), so either outcome is correct there; such
//! gaps are counted and reported, not judged.

use pn_controller::{ArState, Event};
use pn_lab::soak::{Counters, CycleProbe, Rig, RigOptions};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One AR of the run: when its connect began, when it was in data exchange, and, if it
/// ended, when (the controller's event) and why.
#[derive(Debug, Clone)]
struct Session {
    ar: u32,
    /// Before the connect call: no watchdog of this AR can run earlier.
    connect: u64,
    /// After the connect returned: the AR is in data exchange from here on at the latest.
    start: u64,
    end: Option<(u64, String)>,
}

type EventLog = Arc<Mutex<Vec<(u64, Event)>>>;

fn now_ns() -> u64 {
    pn_controller::rtsched::now().0
}

/// Record the end of the last session (if its AR ended and the end is not recorded yet): the
/// time of the controller's first event for that AR's end (watchdog expiry, device abort,
/// abort).
fn close(sessions: &mut [Session], log: &EventLog, ar: &pn_controller::ArHandle) {
    let state = ar.state();
    let Some(s) = sessions.last_mut() else {
        return;
    };
    if state == ArState::DataExchange || s.end.is_some() || s.ar != ar.id() {
        return;
    }
    // The event thread may not have stamped the event yet when the state already shows the
    // end: await it with a deadline.
    let deadline = Instant::now() + Duration::from_secs(2);
    let t_end = loop {
        let found = log
            .lock()
            .unwrap()
            .iter()
            .find(|(_, e)| match e {
                Event::WatchdogExpired { ar: a, .. } | Event::DeviceAbort { ar: a, .. } => {
                    *a == s.ar
                }
                Event::State {
                    ar: a,
                    state: ArState::Aborted(_),
                    ..
                } => *a == s.ar,
                _ => false,
            })
            .map(|(t, _)| *t);
        match found {
            Some(t) => break t,
            None if Instant::now() >= deadline => break now_ns(),
            None => std::thread::sleep(Duration::from_millis(1)),
        }
    };
    s.end = Some((t_end, format!("{state:?}")));
}

/// Connect (as a PLC does) and open a session for the new AR.
fn open(
    rig: &mut Rig,
    sessions: &mut Vec<Session>,
    within: Duration,
    c: &mut Counters,
) -> Result<(), String> {
    let connect = now_ns();
    rig.connect(within, c)?;
    sessions.push(Session {
        ar: rig.ar().unwrap().id(),
        connect,
        start: now_ns(),
        end: None,
    });
    Ok(())
}

/// The judgement is deterministic: the sessions are bounded by the controller's own moments
/// (connect call, data exchange, end event) and the lost frames are counted over the whole
/// recording. (Session 1's version judged each AR on the frames recorded between its
/// `connect()` returning and the next one returning; in the 4-of-8 phase the burst that ended
/// an AR often began before `connect()` returned, or its next frame fell into the next
/// session, so the gap showed in neither window: "ended without a recorded gap". It then
/// retried up to three times; the retry is gone.)
#[test]
fn ar_ends_only_when_data_hold_factor_frames_are_lost_and_comes_back() {
    if !pn_testkit::env::require_root() {
        return;
    }
    let dhf: u64 = 4;
    let cycle_ms: u64 = 4;
    let mut c = Counters::default();
    let mut rig = Rig::start(RigOptions {
        data_hold_factor: dhf as u16,
        cycle_ms: cycle_ms as u16,
        ..RigOptions::default()
    })
    .expect("lab");
    // Controller events with their time (watchdog expiries, device aborts).
    let events = rig.controller().unwrap().events();
    let log: EventLog = Arc::default();
    let l2 = log.clone();
    std::thread::spawn(move || {
        for e in events {
            l2.lock().unwrap().push((now_ns(), e));
        }
    });
    let mut sessions = Vec::new();
    open(&mut rig, &mut sessions, Duration::from_secs(20), &mut c).expect("connect");
    let st = rig.ar().unwrap().status();
    let mac = pn_controller::parse_mac(&st.device_mac).unwrap().0;
    let c_sdu = rig.ar().unwrap().layout().input.data_length as usize;
    let probe = CycleProbe::start(
        &rig.lab.ns_ctl,
        rig.lab.controller_nic(),
        mac,
        st.input_frame_id,
        c_sdu,
    )
    .expect("probe");
    // The controller's output frames as the device receives them: a device watchdog trip is
    // accepted only with a recorded gap there (a stall of the controller on this loaded VM).
    let out_probe = CycleProbe::start(
        &rig.lab.ns_dev,
        rig.lab.nic(),
        rig.controller().unwrap().interface().mac.0,
        st.output_frame_id,
        rig.ar().unwrap().layout().output.data_length as usize,
    )
    .expect("output probe");
    // (CycleCounter mask, consecutive frames lost of every 8, seconds)
    let phases = [
        (0x0380u16, 1u64, 4u64),
        (0x0300, 2, 4),
        (0x0200, 4, 3),
        (0x0380, 1, 2),
    ];
    let mut reconnect_max = Duration::ZERO;
    let mut phase_starts = Vec::new();
    for (mask, _lost, secs) in phases {
        let ar = rig.ar().unwrap();
        if ar.state() != ArState::DataExchange {
            // It ended between two phases: recorded like any other end.
            close(&mut sessions, &log, &ar);
            open(&mut rig, &mut sessions, Duration::from_secs(15), &mut c)
                .expect("connect before a phase");
        }
        rig.drop_pattern(mask, 0).expect("loss pattern");
        phase_starts.push(now_ns());
        let end = Instant::now() + Duration::from_secs(secs);
        while Instant::now() < end {
            let ar = rig.ar().unwrap();
            if ar.state() != ArState::DataExchange {
                close(&mut sessions, &log, &ar);
                let t0 = Instant::now();
                let left = end.saturating_duration_since(Instant::now());
                if open(
                    &mut rig,
                    &mut sessions,
                    left.max(Duration::from_millis(200)),
                    &mut c,
                )
                .is_err()
                {
                    break;
                }
                reconnect_max = reconnect_max.max(t0.elapsed());
                continue;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        close(&mut sessions, &log, &rig.ar().unwrap());
    }
    let dropped = rig.impairment_drops();
    rig.clear_impairment().expect("impairment off");
    let t_clear = now_ns();
    // The exchange is back by itself (the PLC reconnects) and carries data; the recording
    // goes on meanwhile, so the frame after the last gap is in it.
    let t0 = Instant::now();
    let ar = rig.ar().unwrap();
    close(&mut sessions, &log, &ar);
    if ar.state() != ArState::DataExchange {
        open(&mut rig, &mut sessions, Duration::from_secs(15), &mut c)
            .expect("exchange after the run");
    }
    reconnect_max = reconnect_max.max(t0.elapsed());
    rig.write_and_check(&mut c).expect("write after the run");
    let ar = rig.ar().unwrap();
    let t_alive = now_ns();
    assert_eq!(ar.state(), ArState::DataExchange);
    let frames = probe.take();
    let out_frames = out_probe.take();
    drop(probe);
    drop(out_probe);
    close(&mut sessions, &log, &ar);

    // The device's CycleCounter runs on across ARs (the provider's counter lives in its
    // cyclic thread and advances for every slot of a job, sent or lost), so the frames lost
    // are counted over the whole recording, across session boundaries:
    // (receive time of the frame before the gap, frames lost).
    let cycle_ns = cycle_ms * 1_000_000;
    let step = (cycle_ms * 32) as u16;
    let gaps_of = |frames: &[(u64, u16)]| -> Vec<(u64, u64)> {
        frames
            .windows(2)
            .filter_map(|w| {
                let d = w[1].1.wrapping_sub(w[0].1);
                // Duplicates (same CycleCounter) and backward steps are not gaps.
                (d != 0 && d <= 0xF000).then(|| (w[0].0, u64::from(d / step).saturating_sub(1)))
            })
            .collect()
    };
    let gaps = gaps_of(&frames);
    // Gaps made by the impairment alone: every lost CycleCounter matches the drop pattern of
    // the phase then active. Other gaps include slots the device never sent (its thread, or
    // the whole VM, stalled); the controller, stalled with it, may then see the next frame
    // queued before it judges its watchdog, and survive by design (see
    // `check_watchdogs`): such gaps explain an end but do not demand one.
    let pattern_made = |t: u64, lost: u64| -> bool {
        let Some(k) = phase_starts.iter().rposition(|p| *p <= t) else {
            return false;
        };
        let mask = phases[k].0;
        let Some(&(_, cc0)) = frames.iter().find(|(ft, _)| *ft == t) else {
            return false;
        };
        t < t_clear
            && (1..=lost).all(|i| cc0.wrapping_add((i as u16).wrapping_mul(step)) & mask == 0)
    };
    // The controller's CycleCounter reflects its send slots too (a late wake-up skips slots).
    let out_gaps = gaps_of(&out_frames);
    let mut device_trips = 0u64;
    let boundary = gaps.iter().filter(|(_, l)| *l + 1 == dhf).count();
    let max_lost_kept = gaps
        .iter()
        .filter(|(_, l)| *l + 1 < dhf)
        .map(|(_, l)| *l)
        .max()
        .unwrap_or(0);
    let mut errors = Vec::new();
    let (mut must, mut ended, mut before_return) = (0u64, 0u64, 0u64);
    for (si, s) in sessions.iter().enumerate() {
        match &s.end {
            None => {
                // In data exchange from `start` until it was last seen alive: a gap of DHF
                // frames lost by the impairment in between must have ended it.
                if let Some((t, lost)) = gaps.iter().find(|(t, l)| {
                    *t >= s.start
                        && *t + dhf * cycle_ns < t_alive
                        && *l >= dhf
                        && pattern_made(*t, *l)
                }) {
                    must += 1;
                    errors.push(format!(
                        "AR {} (session {si}): {lost} consecutive frames lost at t+{} ms but the AR went on",
                        s.ar,
                        (t - s.start) / 1_000_000
                    ));
                }
            }
            Some((t_end, why)) => {
                ended += 1;
                if why.ends_with("FD 05\")") {
                    // The device's data-hold watchdog: DHF - 1 or more of the controller's
                    // frames lost in this AR's life, a data-hold time before the end.
                    device_trips += 1;
                    // Lost frames by the CycleCounter, or a silence as long (the controller
                    // sent every slot's frame but late, in a burst after a stall).
                    let explained = out_gaps.iter().any(|(t, l)| {
                        *t >= s.connect && *t + dhf * cycle_ns <= t_end + 1_000_000 && *l + 1 >= dhf
                    });
                    let silence = out_frames
                        .windows(2)
                        .filter(|w| w[0].0 >= s.connect && w[0].0 <= *t_end)
                        .map(|w| w[1].0 - w[0].0)
                        .max()
                        .unwrap_or(0);
                    if !explained && silence + cycle_ns / 2 < dhf * cycle_ns {
                        errors.push(format!(
                            "AR {} (session {si}) ended by the device's watchdog without {} of the controller's frames lost (largest output gap in its life {:?} lost, longest silence {} us)",
                            s.ar,
                            dhf - 1,
                            out_gaps
                                .iter()
                                .filter(|(t, _)| *t >= s.connect && *t <= *t_end)
                                .map(|(_, l)| *l)
                                .max(),
                            silence / 1000
                        ));
                    }
                    continue;
                }
                if !why.contains("watchdog") {
                    errors.push(format!(
                        "AR {} (session {si}) ended for another reason than the data-hold watchdog: {why}",
                        s.ar
                    ));
                    continue;
                }
                // The gap that ended it: the first of at least DHF - 1 lost frames after the
                // connect began and before the end.
                let first_big = gaps
                    .iter()
                    .find(|(t, l)| *t >= s.connect && *t <= *t_end && *l + 1 >= dhf);
                let Some((t_gap, lost)) = first_big else {
                    errors.push(format!(
                        "AR {} (session {si}) ended by the watchdog without {} consecutive frames lost (largest gap in its life {:?})",
                        s.ar,
                        dhf - 1,
                        gaps.iter()
                            .filter(|(t, _)| *t >= s.connect && *t <= *t_end)
                            .map(|(_, l)| *l)
                            .max()
                    ));
                    continue;
                };
                // Session 1's windows missed these: the burst began before connect() returned.
                if *t_gap < s.start {
                    before_return += 1;
                }
                // The watchdog may only fire a data-hold time after the last frame.
                if t_gap + dhf * cycle_ns > t_end + 1_000_000 {
                    errors.push(format!(
                        "AR {} ended {} us after the last frame before the gap of {lost} (data-hold time {} us)",
                        s.ar,
                        t_end.saturating_sub(*t_gap) / 1000,
                        dhf * cycle_ns / 1000
                    ));
                }
                // An earlier gap of DHF lost frames in data exchange: it should have ended there.
                if let Some((_, l)) = gaps
                    .iter()
                    .find(|(t, l)| *t >= s.start && t < t_gap && *l >= dhf && pattern_made(*t, *l))
                {
                    errors.push(format!(
                        "AR {} (session {si}) survived a gap of {l} lost frames",
                        s.ar
                    ));
                }
            }
        }
    }
    // Ends per phase, by the time of the end (an AR connected under one pattern may be ended
    // by its last burst just after the next pattern was installed: the gap decides, above).
    let mut ends_per_phase = vec![0u64; phases.len()];
    for (t, _) in sessions.iter().filter_map(|s| s.end.as_ref()) {
        if let Some(k) = phase_starts.iter().rposition(|p| p <= t) {
            ends_per_phase[k] += 1;
        }
    }
    eprintln!(
        "loss: {dropped} frames dropped; AR ends per phase (1, 2, 4 of 8 lost, 1 of 8 again): {ends_per_phase:?}; {} sessions, {ended} ended ({before_return} by a burst that began before connect() returned, {device_trips} by the device's watchdog after a gap in the controller's frames), {boundary} boundary gaps ({} lost), largest gap survived {max_lost_kept} lost frames, slowest reconnect {reconnect_max:?}, {} frames recorded",
        sessions.len(),
        dhf - 1,
        frames.len()
    );
    // Every end was explained by DHF - 1 or more frames lost, and no such loss was survived:
    // 1 or 2 lost frames of 8 never end the AR (data-hold factor 4); an end in those phases
    // is accepted only with a recorded gap of at least 3 (a stall of the sender on top of the
    // pattern). 4 of 8 always end it.
    if !errors.is_empty() {
        // The device's log (its watchdog and abort messages) for the report.
        let root = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("lab-failures");
        if let Some(p) = rig.lab.keep_artifacts(&root, "reliability_loss") {
            eprintln!("device log and capture kept in {}", p.display());
        }
    }
    assert!(errors.is_empty(), "{errors:#?}");
    assert_eq!(must, 0);
    assert!(ends_per_phase[2] >= 1, "{ends_per_phase:?}");
    assert!(ended >= 1);
    assert!(dropped > 500, "only {dropped} frames dropped");
    assert!(
        frames.len() > 1500,
        "probe recorded {} frames",
        frames.len()
    );
}

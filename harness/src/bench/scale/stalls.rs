//! Where the stalls of a `pn-lab bench scale` run were: each watchdog trip (or each stall
//! event, the trips of both sides that come together) attributed to the side whose frames
//! stopped on the wire first, as the recorder saw them, or to a receiver when the frames
//! kept coming; and whether a bare sender on that side's CPU had a gap then, the sign of a
//! stall of the machine rather than of the program.

use super::super::stats::{gaps, unexplained_gaps};
use super::{EXPLAIN_WINDOW_NS, TRIP_LOG_SLACK_NS};

/// Whether the (sorted) bare stream `bare` has a gap of at least `min_gap_ns` that ends
/// within `window_ns` before `t` (or covers `t`).
pub(super) fn bare_gap_near(bare: &[u64], t: u64, min_gap_ns: u64, window_ns: u64) -> bool {
    bare.windows(2)
        .any(|w| w[1] - w[0] >= min_gap_ns && w[1] + window_ns >= t && w[0] <= t + 10_000_000)
}

/// The longest gap of the (sorted) bare stream `bare` that ends within `window_ns` before
/// `t` (or covers `t`), 0 when none: how long the machine held the bare sender near a stall
/// that `bare_gap_near` does not count (a gap shorter than the data-hold time).
pub(super) fn longest_bare_gap_near(bare: &[u64], t: u64, window_ns: u64) -> u64 {
    bare.windows(2)
        .filter(|w| w[1] + window_ns >= t && w[0] <= t + 10_000_000)
        .map(|w| w[1] - w[0])
        .max()
        .unwrap_or(0)
}

/// How far before a trip (as the bench sees it) the silence that caused it may have begun:
/// the data-hold time plus the delay of the trip's report (the controller's event, the
/// device's log line up to ~12 ms late), with margin.
pub const SILENCE_LOOKBACK_NS: u64 = 50_000_000;

/// Whether one of `silences` (start, length in ns; sorted by start), the silences on the wire
/// of the streams a tripping watchdog supervises, lasted at least `min_ns` and began within
/// `lookback_ns` before `t` and at least `min_ns` before it: then the sender stopped;
/// otherwise the frames were on the wire and the receiving side did not take them in time.
/// A silence that begins later than `t - min_ns` cannot have caused a trip seen at `t`: it
/// is the trip's consequence (the AR ended, its frames stop).
pub(super) fn silent_before(
    silences: &[(u64, u64)],
    t: u64,
    min_ns: u64,
    lookback_ns: u64,
) -> bool {
    let end = silences.partition_point(|&(a, _)| a.saturating_add(min_ns) <= t);
    let first = silences[..end].partition_point(|&(a, _)| a + lookback_ns < t);
    silences[first..end].iter().any(|&(_, len)| len >= min_ns)
}

/// The silences of at least `min_ns` of every stream in `streams` (each sorted), sorted by
/// start; a stream's silence to `end` (the end of the recording) counts.
pub(super) fn silences(streams: &[Vec<u64>], min_ns: u64, end: u64) -> Vec<(u64, u64)> {
    let mut v: Vec<(u64, u64)> = streams
        .iter()
        .flat_map(|ts| {
            let tail = ts.last().map(|&l| (l, end.saturating_sub(l)));
            ts.windows(2)
                .map(|w| (w[0], w[1] - w[0]))
                .chain(tail)
                .filter(|&(_, len)| len >= min_ns)
        })
        .collect();
    v.sort_unstable();
    v
}

/// Trips split by where the stall was: `sender_silent` trips had the supervised stream
/// silent on the wire (the sender stalled), the rest had frames on the wire (the receiver
/// stalled); each with how many of them a bare-sender gap explains.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct TripSides {
    pub sender_silent: usize,
    pub sender_silent_explained: usize,
    pub receiver_late: usize,
    pub receiver_late_explained: usize,
}

pub(super) fn trip_sides(
    trips: &[u64],
    sender_silences: &[(u64, u64)],
    baseline: Baselines<'_>,
    period_ns: u64,
    dhf_ns: u64,
) -> TripSides {
    // A watchdog of DataHoldFactor cycles trips after about that long without frames; the
    // recorder's view of the gap may be up to half a cycle shorter (send jitter).
    let min_silence = dhf_ns.saturating_sub(period_ns / 2);
    let near = |bare: &[u64], t| bare_gap_near(bare, t, dhf_ns, EXPLAIN_WINDOW_NS);
    let mut s = TripSides::default();
    for &t in trips {
        if silent_before(sender_silences, t, min_silence, SILENCE_LOOKBACK_NS) {
            s.sender_silent += 1;
            s.sender_silent_explained += usize::from(near(baseline.sender, t));
        } else {
            s.receiver_late += 1;
            s.receiver_late_explained += usize::from(near(baseline.receiver, t));
        }
    }
    s
}

/// The bare senders' streams that explain a stall of a trip's sender and of its receiver:
/// with `--pin`, the bare sender on that side's CPU; without, the one bare sender for both.
#[derive(Clone, Copy)]
pub(super) struct Baselines<'a> {
    pub sender: &'a [u64],
    pub receiver: &'a [u64],
}

/// Trips more than this apart belong to different stall events.
pub const EVENT_GAP_NS: u64 = 100_000_000;

/// The side that stopped first in a stall event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum StallCause {
    /// The devices' frames went silent first: the devices' process stalled.
    Devices,
    /// The controller's frames went silent first.
    Controller,
    /// Frames on the wire both ways and the devices' watchdogs tripped first: their
    /// receive path stalled.
    DevicesReceive,
    /// Frames on the wire both ways and the controller's watchdogs expired first.
    ControllerReceive,
}

/// One stall event: the trips of both sides within [`EVENT_GAP_NS`] of each other.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct StallEvent {
    /// The first trip (CLOCK_REALTIME ns).
    pub at_ns: u64,
    pub device_trips: usize,
    pub controller_expiries: usize,
    pub cause: StallCause,
    /// The bare sender on the stalled side's CPU had a gap of the data-hold time then.
    pub explained: bool,
    /// The wider reading of "the bare sender also had a gap": a gap of the bare sender on the
    /// stalled side's CPU longer than 2 periods (a slot it could not keep itself, the cycle
    /// bench's definition) overlapped the stalled side's silence on the wire, widened by one
    /// period each side. The same hold of the CPU costs two periodic senders different
    /// silences, up to one period apart, by their phases alone (`docs/decisions.md`).
    pub held: bool,
    /// The same reading with the bare sender on the other side's CPU: that CPU was held
    /// during the silence too. With a daemon's standby sender on the other CPU
    /// (`--standby`), a silence of the devices needs both CPUs held.
    pub other_held: bool,
    /// That bare sender's longest gap in the same window (ns): near the data-hold time, the
    /// machine held it too, if a little less long.
    pub bare_max_gap_ns: u64,
    /// When the stalled side's silence on the wire began (CLOCK_REALTIME ns) and how long it
    /// lasted (ns): set against `bare_max_gap_ns`, how much longer than the machine's hold
    /// the side stayed silent. 0 for the receive causes (no silence).
    pub silence_at_ns: u64,
    pub silence_ns: u64,
}

/// The earliest silence of at least `min_ns` in `silences` (sorted) that began within
/// `lookback_ns` before `t` and at least `min_ns` before it.
fn first_silence(
    silences: &[(u64, u64)],
    t: u64,
    min_ns: u64,
    lookback_ns: u64,
) -> Option<(u64, u64)> {
    let end = silences.partition_point(|&(a, _)| a.saturating_add(min_ns) <= t);
    let first = silences[..end].partition_point(|&(a, _)| a + lookback_ns < t);
    silences[first..end]
        .iter()
        .find(|&&(_, len)| len >= min_ns)
        .copied()
}

/// The stall events of a run: the device trips and controller expiries (sorted or not)
/// grouped, each attributed with the silences on the wire of the devices' and of the
/// controller's streams and explained with the bare sender of the stalled side's CPU
/// (`baseline.sender`: the devices' CPU, `baseline.receiver`: the controller's).
#[allow(clippy::too_many_arguments)]
pub(super) fn stall_events(
    dev_trips: &[u64],
    ctl_trips: &[u64],
    dev_silences: &[(u64, u64)],
    ctl_silences: &[(u64, u64)],
    baseline: Baselines<'_>,
    period_ns: u64,
    dhf_ns: u64,
) -> Vec<StallEvent> {
    let min = dhf_ns.saturating_sub(period_ns / 2);
    let sender_gaps = gaps(baseline.sender, period_ns, 2.0);
    let receiver_gaps = gaps(baseline.receiver, period_ns, 2.0);
    let mut trips: Vec<(u64, bool)> = dev_trips
        .iter()
        .map(|&t| (t, true))
        .chain(ctl_trips.iter().map(|&t| (t, false)))
        .collect();
    trips.sort_unstable();
    let mut groups: Vec<Vec<(u64, bool)>> = Vec::new();
    for tr in trips {
        match groups.last_mut() {
            Some(g) if g.last().is_some_and(|l| tr.0 - l.0 <= EVENT_GAP_NS) => g.push(tr),
            _ => groups.push(vec![tr]),
        }
    }
    groups
        .into_iter()
        .map(|g| {
            let (t0, dev_first) = g[0];
            let dev = first_silence(dev_silences, t0, min, SILENCE_LOOKBACK_NS);
            let ctl = first_silence(ctl_silences, t0, min, SILENCE_LOOKBACK_NS);
            let (cause, silence) = match (dev, ctl) {
                (Some(d), Some(c)) if c.0 < d.0 => (StallCause::Controller, c),
                (Some(d), _) => (StallCause::Devices, d),
                (None, Some(c)) => (StallCause::Controller, c),
                (None, None) if dev_first => (StallCause::DevicesReceive, (0, 0)),
                (None, None) => (StallCause::ControllerReceive, (0, 0)),
            };
            let (bare, bare_gaps, other_gaps) = match cause {
                StallCause::Devices | StallCause::DevicesReceive => {
                    (baseline.sender, &sender_gaps, &receiver_gaps)
                }
                StallCause::Controller | StallCause::ControllerReceive => {
                    (baseline.receiver, &receiver_gaps, &sender_gaps)
                }
            };
            // The stalled stretch: the silence on the wire, or for a receiver that did not
            // take frames in time the data-hold time before the trip was seen (a device's
            // trip is seen in its log, up to TRIP_LOG_SLACK_NS late).
            let stretch = match silence {
                (0, 0) => (t0.saturating_sub(dhf_ns + TRIP_LOG_SLACK_NS), t0),
                (at, len) => (at, at + len),
            };
            let held = unexplained_gaps(&[stretch], bare_gaps, period_ns).is_empty();
            let other_held = unexplained_gaps(&[stretch], other_gaps, period_ns).is_empty();
            StallEvent {
                at_ns: t0,
                device_trips: g.iter().filter(|x| x.1).count(),
                controller_expiries: g.iter().filter(|x| !x.1).count(),
                cause,
                explained: bare_gap_near(bare, t0, dhf_ns, EXPLAIN_WINDOW_NS),
                held,
                other_held,
                bare_max_gap_ns: longest_bare_gap_near(bare, t0, EXPLAIN_WINDOW_NS),
                silence_at_ns: silence.0,
                silence_ns: silence.1,
            }
        })
        .collect()
}

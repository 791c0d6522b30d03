//! Cyclic RT data, sans-IO: a provider (sends one frame per send interval) and a consumer
//! (checks received frames and runs the data-hold watchdog).
//!
//! Timing (IEC 61158-6-10; p-net `pf_ppm.c`): the send interval is
//! SendClockFactor × ReductionRatio × 31.25 µs, and the CycleCounter counts 31.25 µs units, so
//! it advances by SendClockFactor × ReductionRatio per frame (wrapping at 2^16).
//!
//! Consumer rules (p-net `pf_cpm_driver_sw.c` `pf_cpm_c_data_ind`, `pf_cpm.c`
//! `pf_cpm_check_cycle`): a frame is new data when TransferStatus is 0, the source MAC and the
//! length match what the AR expects, DataValid is set, and the CycleCounter advanced: the
//! difference `new - last` (mod 2^16) is in 1..=61440. A frame with the same (or an older)
//! counter is a duplicate and does not re-arm the watchdog. Each new-data frame re-arms the
//! data-hold timer DataHoldFactor × interval; the watchdog fires when that much time passes
//! without one.

use super::ppm::SlotClock;
use crate::time::{Duration, Instant};
use crate::wire::ethernet::{EthernetRepr, MacAddr};
use crate::wire::rt::{self, ApduStatus, CyclicFrame, DataStatus, FrameId};
use crate::wire::{Error, Result};

/// The base time unit of SendClockFactor and CycleCounter: 31.25 µs.
pub const TIME_BASE_NS: u64 = 31_250;
/// Largest CycleCounter step still taken as "advanced" (p-net `pf_cpm_check_cycle`).
pub const MAX_CYCLE_ADVANCE: u16 = 61_440;

/// SendClockFactor and ReductionRatio of an IOCR.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CyclicTiming {
    pub send_clock_factor: u16,
    pub reduction_ratio: u16,
}

impl CyclicTiming {
    /// Both factors must be at least 1 (RT_CLASS_1 allows SCF 1..128, RR 1..512).
    pub fn new(send_clock_factor: u16, reduction_ratio: u16) -> Result<CyclicTiming> {
        if send_clock_factor == 0 || reduction_ratio == 0 {
            return Err(Error::Malformed(
                "SendClockFactor and ReductionRatio must be >= 1",
            ));
        }
        Ok(CyclicTiming {
            send_clock_factor,
            reduction_ratio,
        })
    }

    /// Interval in 31.25 µs units (also the CycleCounter step per frame).
    pub fn units(&self) -> u64 {
        u64::from(self.send_clock_factor.max(1)) * u64::from(self.reduction_ratio.max(1))
    }

    /// CycleCounter increment per frame (wrapping).
    pub fn cycle_step(&self) -> u16 {
        self.units() as u16
    }

    /// Send interval.
    pub fn interval(&self) -> Duration {
        Duration(self.units() * TIME_BASE_NS)
    }
}

/// Is `new` a CycleCounter after `last` (p-net: difference in 1..=61440)?
pub fn cycle_advanced(last: u16, new: u16) -> bool {
    let diff = new.wrapping_sub(last);
    (1..=MAX_CYCLE_ADVANCE).contains(&diff)
}

/// The consumer's rule for one cyclic frame of a CR (CPM frame check, after p-net
/// `pf_cpm_c_data_ind` / `pf_cpm_check_src_addr`): the one copy of it. The protocol crate's
/// [`Consumer`], the daemon's cyclic receive path and the user-space twin of its kernel socket
/// filter all decide with [`check_frame`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CrRule {
    pub frame_id: FrameId,
    /// The provider's MAC address (`None`: any).
    pub src: Option<MacAddr>,
    /// The IOCR DataLength: the APDU status follows the C_SDU right after it (`None`: the
    /// status is read at the end of the payload).
    pub c_sdu_len: Option<usize>,
}

/// What [`check_frame`] says about a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameCheck {
    /// Another FrameID: not this CR's frame.
    NotThisCr,
    /// This CR's FrameID but unusable: wrong source, too short, or longer than the CR's frame
    /// plus the padding of a minimum Ethernet frame (its bytes at the status position would be
    /// arbitrary).
    Malformed(&'static str),
    /// Well-formed, but DataValid is off or TransferStatus is not zero: no new data.
    NotValid(ApduStatus),
    /// Valid data (the CycleCounter is the caller's next check).
    Good(ApduStatus),
}

/// Check one RT payload (from the FrameID on) received from `src` against `rule`.
pub fn check_frame(rule: &CrRule, src: MacAddr, payload: &[u8]) -> FrameCheck {
    match rt::frame_id(payload) {
        Ok(id) if id == rule.frame_id => {}
        _ => return FrameCheck::NotThisCr,
    }
    if rule.src.is_some_and(|s| s != src) {
        return FrameCheck::Malformed("unexpected source MAC");
    }
    let view = match rule.c_sdu_len {
        Some(n) => {
            // FrameID + C_SDU + APDU status, or the 46-byte minimum payload with padding.
            if payload.len() > n.saturating_add(6).max(46) {
                return FrameCheck::Malformed("longer than the CR's frame");
            }
            CyclicFrame::with_c_sdu_len(payload, n)
        }
        None => CyclicFrame::new_checked(payload),
    };
    let Ok(view) = view else {
        return FrameCheck::Malformed("frame too short");
    };
    let status = view.apdu_status();
    if status.transfer_status != 0 || !status.data_status.data_valid() {
        FrameCheck::NotValid(status)
    } else {
        FrameCheck::Good(status)
    }
}

/// Counters kept by the provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ProviderStats {
    pub frames_sent: u64,
    /// Slots that passed without a frame because `poll_send` was called late.
    pub missed_slots: u64,
}

/// The cyclic provider: schedules frames on absolute slot times and builds them.
#[derive(Debug, Clone)]
pub struct Provider {
    eth: EthernetRepr,
    frame_id: FrameId,
    timing: CyclicTiming,
    /// The schedule (PPM's, shared with the device's and the farm's shells).
    clock: SlotClock,
    data_status: DataStatus,
    stats: ProviderStats,
}

impl Provider {
    /// A provider whose first slot is at `start` with CycleCounter `first_cycle_counter`.
    pub fn new(
        eth: EthernetRepr,
        frame_id: FrameId,
        timing: CyclicTiming,
        start: Instant,
        first_cycle_counter: u16,
    ) -> Provider {
        Provider {
            eth,
            frame_id,
            timing,
            clock: SlotClock::new(
                start.0,
                timing.interval().0,
                first_cycle_counter,
                timing.cycle_step(),
            ),
            data_status: DataStatus::RUNNING,
            stats: ProviderStats::default(),
        }
    }

    pub fn timing(&self) -> CyclicTiming {
        self.timing
    }
    pub fn frame_id(&self) -> FrameId {
        self.frame_id
    }
    /// When the next frame is due.
    pub fn next_deadline(&self) -> Instant {
        Instant(self.clock.next_ns())
    }
    /// CycleCounter the next frame will carry.
    pub fn next_cycle_counter(&self) -> u16 {
        // The counter the next slot would carry if taken on time.
        let mut c = self.clock;
        c.take(c.next_ns()).map_or(0, |s| s.cycle_counter)
    }
    pub fn data_status(&self) -> DataStatus {
        self.data_status
    }
    pub fn set_data_status(&mut self, ds: DataStatus) {
        self.data_status = ds;
    }
    pub fn stats(&self) -> ProviderStats {
        self.stats
    }

    /// If a frame is due at `now`, build it into `buf` (C_SDU = `data`, zero padded to 40
    /// bytes) and return its length; `None` when not yet due. When `now` is past one or more
    /// slots, the missed slots are counted and skipped: one frame is sent for the latest slot
    /// (its CycleCounter reflects that slot) and the next deadline is the following slot, so
    /// there are never catch-up bursts. Does not allocate. On error (buffer too small, data
    /// too long) the schedule is unchanged.
    pub fn poll_send(
        &mut self,
        now: Instant,
        data: &[u8],
        buf: &mut [u8],
    ) -> Result<Option<usize>> {
        // Take the slot on a copy: a frame that cannot be built leaves the schedule as it was.
        let mut clock = self.clock;
        let Some(slot) = clock.take(now.0) else {
            return Ok(None);
        };
        let status = ApduStatus {
            cycle_counter: slot.cycle_counter,
            data_status: self.data_status,
            transfer_status: 0,
        };
        let n = rt::fill_cyclic_frame(buf, &self.eth, self.frame_id, data, status)?;
        self.clock = clock;
        let missed = slot.missed;
        self.stats.frames_sent += 1;
        self.stats.missed_slots += missed;
        Ok(Some(n))
    }
}

/// What the consumer made of one received frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RxOutcome {
    /// New data: the watchdog was re-armed. `c_sdu` is the byte range of the C_SDU within the
    /// RT payload passed in (FrameID at offset 0).
    NewData {
        status: ApduStatus,
        c_sdu: (usize, usize),
    },
    /// Same or older CycleCounter: ignored.
    Duplicate,
    /// Wrong FrameID (not for this consumer): ignored, not counted.
    NotForUs,
    /// For this consumer but unusable (short, wrong source or length, TransferStatus set,
    /// DataValid clear).
    Invalid(&'static str),
}

/// Events from [`Consumer::poll`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConsumerEvent {
    /// No new data for DataHoldFactor × interval. Reported once per expiry; re-armed by the
    /// next new-data frame.
    WatchdogExpired,
}

/// Counters kept by the consumer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ConsumerStats {
    /// Frames with this consumer's FrameID.
    pub received: u64,
    pub new_data: u64,
    pub invalid: u64,
    pub duplicates: u64,
    pub watchdog_expiries: u64,
}

/// How long a consumer waits for the provider's first valid frame before it gives up: one
/// second, or the data-hold time if that is longer.
///
/// The data-hold supervision starts with the first valid frame, not before: IEC 61158-6-10's
/// CPM waits in W_START/FRUN without counting the data-hold timer and enters RUN, where the
/// timer runs, with the first valid frame (p-net `src/common/pf_cpm.c`,
/// `pf_cpm_driver_sw.c`: only RUN counts `dht`). Controllers start their providers at
/// different points: an S7 right after the Connect response, profinet-py some 30 ms after the
/// ApplicationReady exchange; a device that armed its data-hold timer at ApplicationReady
/// tripped every profinet-py AR at 4 ms. The bound keeps a controller that never sends from
/// holding the AR forever (docs/decisions.md "first frame").
pub fn first_frame_timeout(data_hold_time: Duration) -> Duration {
    data_hold_time.max(FIRST_FRAME_TIMEOUT)
}

/// See [`first_frame_timeout`].
pub const FIRST_FRAME_TIMEOUT: Duration = Duration::from_millis(1000);

/// The cyclic consumer with its data-hold watchdog.
#[derive(Debug, Clone)]
pub struct Consumer {
    frame_id: FrameId,
    expected_src: Option<MacAddr>,
    c_sdu_len: Option<usize>,
    data_hold_time: Duration,
    /// Expires when `now` is strictly after this instant.
    hold_until: Option<Instant>,
    last_cycle: Option<u16>,
    last_status: Option<ApduStatus>,
    /// When the last new-data frame arrived.
    last_new_data: Option<Instant>,
    stats: ConsumerStats,
}

impl Consumer {
    /// A consumer for `frame_id`, started at `start`: the provider's first valid frame must
    /// arrive within [`first_frame_timeout`]; from then on, each new frame within the data-hold
    /// time.
    pub fn new(
        frame_id: FrameId,
        timing: CyclicTiming,
        data_hold_factor: u16,
        start: Instant,
    ) -> Consumer {
        let dht = timing
            .interval()
            .saturating_mul(u64::from(data_hold_factor.max(1)));
        Consumer {
            frame_id,
            expected_src: None,
            c_sdu_len: None,
            data_hold_time: dht,
            hold_until: Some(start + first_frame_timeout(dht)),
            last_cycle: None,
            last_status: None,
            last_new_data: None,
            stats: ConsumerStats::default(),
        }
    }

    /// Only accept frames from this source MAC.
    pub fn with_source(mut self, src: MacAddr) -> Consumer {
        self.expected_src = Some(src);
        self
    }

    /// Only accept frames whose C_SDU has exactly this length (the IOCR DataLength, >= 40);
    /// the APDU status is then read right after it, ignoring any Ethernet padding.
    pub fn with_c_sdu_len(mut self, len: usize) -> Consumer {
        self.c_sdu_len = Some(len);
        self
    }

    pub fn data_hold_time(&self) -> Duration {
        self.data_hold_time
    }
    pub fn stats(&self) -> ConsumerStats {
        self.stats
    }
    /// APDU status of the last new-data frame.
    pub fn last_status(&self) -> Option<ApduStatus> {
        self.last_status
    }
    /// When the last new-data frame arrived (`None` before the first one).
    pub fn last_new_data(&self) -> Option<Instant> {
        self.last_new_data
    }
    pub fn last_data_status(&self) -> Option<DataStatus> {
        self.last_status.map(|s| s.data_status)
    }

    /// When to call [`Consumer::poll`] next (just after the data-hold time runs out), or
    /// `None` after an expiry has been reported and no new data arrived.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.hold_until.map(|t| t + Duration(1))
    }

    /// Report the watchdog expiry once when `now` is past the data-hold time.
    pub fn poll(&mut self, now: Instant) -> Option<ConsumerEvent> {
        match self.hold_until {
            Some(t) if now > t => {
                self.hold_until = None;
                self.stats.watchdog_expiries += 1;
                Some(ConsumerEvent::WatchdogExpired)
            }
            _ => None,
        }
    }

    /// Feed a complete received Ethernet frame.
    pub fn on_frame(&mut self, now: Instant, frame: &[u8]) -> RxOutcome {
        match rt::parse_rt_frame(frame) {
            Ok((eth, _, _)) => {
                let h = eth.header_len();
                self.on_rt_payload(now, eth.src, &frame[h..])
            }
            Err(_) => RxOutcome::NotForUs,
        }
    }

    /// Feed the RT payload (from the FrameID on) of a frame received from `src`.
    pub fn on_rt_payload(&mut self, now: Instant, src: MacAddr, payload: &[u8]) -> RxOutcome {
        match rt::frame_id(payload) {
            Ok(id) if id == self.frame_id => {}
            _ => return RxOutcome::NotForUs,
        }
        self.stats.received += 1;
        let out = self.check(src, payload);
        match out {
            RxOutcome::NewData { status, .. } => {
                self.stats.new_data += 1;
                self.last_cycle = Some(status.cycle_counter);
                self.last_status = Some(status);
                self.last_new_data = Some(now);
                self.hold_until = Some(now + self.data_hold_time);
            }
            RxOutcome::Duplicate => self.stats.duplicates += 1,
            RxOutcome::Invalid(_) => self.stats.invalid += 1,
            RxOutcome::NotForUs => {}
        }
        out
    }

    fn check(&self, src: MacAddr, payload: &[u8]) -> RxOutcome {
        let rule = CrRule {
            frame_id: self.frame_id,
            src: self.expected_src,
            c_sdu_len: self.c_sdu_len,
        };
        let status = match check_frame(&rule, src, payload) {
            FrameCheck::NotThisCr => return RxOutcome::NotForUs,
            FrameCheck::Malformed(why) => return RxOutcome::Invalid(why),
            FrameCheck::NotValid(st) if st.transfer_status != 0 => {
                return RxOutcome::Invalid("TransferStatus not zero")
            }
            FrameCheck::NotValid(_) => return RxOutcome::Invalid("DataValid not set"),
            FrameCheck::Good(st) => st,
        };
        if let Some(last) = self.last_cycle {
            if !cycle_advanced(last, status.cycle_counter) {
                return RxOutcome::Duplicate;
            }
        }
        let c_sdu_len = self
            .c_sdu_len
            .unwrap_or(payload.len().saturating_sub(rt::FRAME_ID_LEN + 4));
        RxOutcome::NewData {
            status,
            c_sdu: (rt::FRAME_ID_LEN, rt::FRAME_ID_LEN + c_sdu_len),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::ethernet::{ethertype, VlanTag};

    const DEV: MacAddr = MacAddr([2, 0, 0, 0, 0, 1]);
    const CTRL: MacAddr = MacAddr([2, 0, 0, 0, 0, 2]);

    fn eth() -> EthernetRepr {
        EthernetRepr {
            dst: CTRL,
            src: DEV,
            vlan: Some(VlanTag::RT_CYCLIC),
            ethertype: ethertype::PROFINET,
        }
    }

    /// Small deterministic PRNG (xorshift64*), so the loss pattern is reproducible.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
        }
    }

    #[test]
    fn timing_units() {
        let t = CyclicTiming::new(32, 4).unwrap();
        assert_eq!(t.interval(), Duration::from_millis(4));
        assert_eq!(t.cycle_step(), 128);
        assert!(CyclicTiming::new(0, 1).is_err());
        assert!(cycle_advanced(0xFFF0, 0x0010));
        assert!(!cycle_advanced(5, 5));
        assert!(!cycle_advanced(5, 4));
        assert!(cycle_advanced(0, 61_440));
        assert!(!cycle_advanced(0, 61_441));
    }

    #[test]
    fn provider_schedule_without_bursts() {
        let t = CyclicTiming::new(32, 1).unwrap(); // 1 ms, step 32
        let mut p = Provider::new(eth(), FrameId(0x8000), t, Instant::from_millis(10), 0xFFE0);
        let mut buf = [0u8; 128];
        assert_eq!(
            p.poll_send(Instant::from_millis(9), &[], &mut buf),
            Ok(None)
        );
        assert_eq!(
            p.poll_send(Instant::from_millis(10), &[], &mut buf),
            Ok(Some(64))
        );
        let v = CyclicFrame::new_checked(&buf[18..64]).unwrap();
        assert_eq!(v.cycle_counter(), 0xFFE0);
        assert_eq!(p.next_deadline(), Instant::from_millis(11));
        // Same instant again: nothing due.
        assert_eq!(
            p.poll_send(Instant::from_millis(10), &[], &mut buf),
            Ok(None)
        );
        // 3.5 slots late: slots 11, 12, 13 missed, frame for slot 14, next at 15.
        let now = Instant::from_micros(14_500);
        assert_eq!(p.poll_send(now, &[1, 2], &mut buf), Ok(Some(64)));
        let v = CyclicFrame::new_checked(&buf[18..64]).unwrap();
        assert_eq!(v.cycle_counter(), 0xFFE0u16.wrapping_add(4 * 32));
        assert_eq!(p.next_deadline(), Instant::from_millis(15));
        assert_eq!(p.stats().missed_slots, 3);
        assert_eq!(p.stats().frames_sent, 2);
        assert_eq!(p.poll_send(now, &[], &mut buf), Ok(None));
        // Too small a buffer: error, schedule unchanged.
        assert!(p
            .poll_send(Instant::from_millis(15), &[], &mut buf[..40])
            .is_err());
        assert_eq!(p.next_deadline(), Instant::from_millis(15));
    }

    #[test]
    fn consumer_classifies_frames() {
        let t = CyclicTiming::new(32, 1).unwrap();
        let mut c = Consumer::new(FrameId(0x8000), t, 3, Instant::ZERO)
            .with_source(DEV)
            .with_c_sdu_len(40);
        let mut p = Provider::new(eth(), FrameId(0x8000), t, Instant::ZERO, 100);
        let mut buf = [0u8; 128];
        let n = p
            .poll_send(Instant::ZERO, &[0x80; 5], &mut buf)
            .unwrap()
            .unwrap();
        let f = buf[..n].to_vec();
        match c.on_frame(Instant::ZERO, &f) {
            RxOutcome::NewData { status, c_sdu } => {
                assert_eq!(status.cycle_counter, 100);
                assert_eq!(&f[18 + c_sdu.0..18 + c_sdu.0 + 5], &[0x80; 5]);
                assert_eq!(c_sdu.1 - c_sdu.0, 40);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(c.on_frame(Instant::ZERO, &f), RxOutcome::Duplicate);
        let mut other_src = f.clone();
        other_src[6..12].copy_from_slice(&CTRL.0);
        assert!(matches!(
            c.on_frame(Instant::ZERO, &other_src),
            RxOutcome::Invalid(_)
        ));
        let mut not_valid = f.clone();
        not_valid[18 + 2 + 40 + 2] &= !DataStatus::DATA_VALID;
        not_valid[18 + 2 + 40 + 1] = 0x99; // newer counter, but DataValid clear
        assert!(matches!(
            c.on_frame(Instant::ZERO, &not_valid),
            RxOutcome::Invalid(_)
        ));
        let mut other_id = f.clone();
        other_id[19] = 0x01;
        assert_eq!(c.on_frame(Instant::ZERO, &other_id), RxOutcome::NotForUs);
        assert!(matches!(
            c.on_frame(Instant::ZERO, &f[..30]),
            RxOutcome::Invalid(_)
        ));
        let s = c.stats();
        assert_eq!(
            (s.received, s.new_data, s.duplicates, s.invalid),
            (5, 1, 1, 3)
        );
        assert_eq!(c.last_data_status(), Some(DataStatus::RUNNING));
    }

    /// Provider and consumer in one simulated timeline; frames are lost according to `lose`.
    /// Returns the slot indices at which the watchdog fired.
    fn simulate(dhf: u16, slots: u64, mut lose: impl FnMut(u64) -> bool) -> Vec<u64> {
        let t = CyclicTiming::new(8, 2).unwrap(); // 500 µs
        let interval = t.interval();
        let mut p = Provider::new(eth(), FrameId(0x8001), t, Instant::ZERO, 0);
        let mut c = Consumer::new(FrameId(0x8001), t, dhf, Instant::ZERO).with_source(DEV);
        let mut buf = [0u8; 256];
        let mut fired = Vec::new();
        for k in 0..slots {
            let now = Instant(k * interval.0);
            // The watchdog is polled at its own deadline and at every slot.
            if let Some(d) = c.next_deadline() {
                if d <= now {
                    if let Some(ConsumerEvent::WatchdogExpired) = c.poll(d) {
                        fired.push(k);
                    }
                }
            }
            let n = p.poll_send(now, &[k as u8; 8], &mut buf).unwrap().unwrap();
            if !lose(k) {
                let out = c.on_frame(now, &buf[..n]);
                assert!(
                    matches!(out, RxOutcome::NewData { .. }),
                    "slot {k}: {out:?}"
                );
            }
            if c.poll(now).is_some() {
                fired.push(k);
            }
        }
        fired
    }

    #[test]
    fn watchdog_tolerates_dhf_minus_one_losses() {
        for dhf in [1u16, 2, 3, 5, 8] {
            let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ u64::from(dhf));
            // Random bursts of 0..dhf-1 consecutive losses separated by >= 1 received frame.
            let mut burst_left = 0u64;
            let fired = simulate(dhf, 20_000, |k| {
                if k == 0 {
                    return false;
                }
                if burst_left > 0 {
                    burst_left -= 1;
                    return true;
                }
                if rng.next() % 4 == 0 {
                    burst_left = rng.next() % u64::from(dhf); // 0..=dhf-1 losses
                }
                false
            });
            assert!(fired.is_empty(), "dhf {dhf}: fired at {fired:?}");
        }
    }

    #[test]
    fn watchdog_trips_once_on_dhf_losses() {
        for dhf in [1u16, 3, 5] {
            let d = u64::from(dhf);
            // Lose exactly dhf frames starting at slot 100, then 10*dhf from slot 1000.
            let fired = simulate(dhf, 2_000, |k| {
                (100..100 + d).contains(&k) || (1000..1000 + 10 * d).contains(&k)
            });
            assert_eq!(fired, vec![100 + d, 1000 + d], "dhf {dhf}");
        }
    }

    /// Before the first frame only the first-frame bound applies (CPM FRUN); the data-hold
    /// time runs from the first valid frame on (RUN).
    #[test]
    fn data_hold_starts_with_the_first_frame() {
        let t = CyclicTiming::new(32, 1).unwrap();
        let mut c = Consumer::new(FrameId(0x8000), t, 3, Instant::ZERO);
        assert_eq!(c.poll(Instant::from_millis(3)), None);
        assert_eq!(
            c.poll(Instant::from_millis(500)),
            None,
            "no data-hold trip yet"
        );
        assert_eq!(c.poll(Instant::from_millis(1000)), None);
        assert_eq!(
            c.poll(Instant::from_micros(1_000_001)),
            Some(ConsumerEvent::WatchdogExpired),
            "the first-frame bound"
        );
        assert_eq!(c.poll(Instant::from_millis(1100)), None);
        assert_eq!(c.next_deadline(), None);
        assert_eq!(c.stats().watchdog_expiries, 1);
        // A long data-hold time extends the bound.
        let t = CyclicTiming::new(32, 512).unwrap(); // 512 ms x 3
        let mut c = Consumer::new(FrameId(0x8000), t, 3, Instant::ZERO);
        assert_eq!(c.poll(Instant::from_millis(1536)), None);
        assert!(c.poll(Instant::from_micros(1_536_001)).is_some());
    }

    #[test]
    fn first_frame_timeout_is_at_least_one_second() {
        assert_eq!(
            first_frame_timeout(Duration::from_millis(12)),
            Duration::from_millis(1000)
        );
        assert_eq!(
            first_frame_timeout(Duration::from_millis(1920)),
            Duration::from_millis(1920)
        );
    }
}

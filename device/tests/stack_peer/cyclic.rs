//! The peer's cyclic exchange, decided by the protocol crate's machines; this file is their
//! I/O shell (threads, SCHED_FIFO, the raw socket, the shared counters the tests read):
//!
//! * output frames: `machine::cyclic::Provider` (the PPM schedule `SlotClock` and the frame),
//!   sent by a thread that sleeps until the provider's next slot, as pn-controller's cyclic
//!   thread does;
//! * the device's input frames: `machine::cyclic::Consumer` (the CPM frame rule and the
//!   CycleCounter check) on the receiver thread;
//! * data-hold supervision: `machine::data_hold::DataHold`, once per executed send slot from
//!   the consumer's first valid frame on (counted in executed cycles with a wall-clock guard, as
//!   the device's real-time thread runs it, so a stall of the whole host is not a trip);
//! * the alarm channel: `machine::rta` on the receiver thread, each notification acknowledged.

use pn_protocol::wire::Emit;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pn_protocol::machine::cyclic::{Consumer, CyclicTiming, Provider, RxOutcome};
use pn_protocol::machine::data_hold::DataHold;
use pn_protocol::machine::rta::RtaEvent;
use pn_protocol::time::{Duration as PnDuration, Instant as Time};
use pn_protocol::wire::ethernet::{ethertype, EthernetRepr, MacAddr, VlanTag};
use pn_protocol::wire::pnio::alarm::AlarmPdu;
use pn_protocol::wire::pnio::iocr::iocr_type;
use pn_protocol::wire::pnio::PnioStatus;
use pn_protocol::wire::rt::{self, ApduStatus, FrameId};

use super::{fifo, pin_self, Peer};

/// State of the peer's cyclic exchange, shared with its threads.
#[derive(Default)]
pub struct CyclicState {
    pub stop: AtomicBool,
    /// Data-hold supervision on: set by each valid frame of the device (the consumer's RUN),
    /// cleared by a trip.
    pub armed: AtomicBool,
    /// The AR is being released: no data-hold supervision any more (the device's last frames
    /// may still arrive and then stop).
    pub released: AtomicBool,
    /// Valid frames from the device (the consumer's new data).
    pub rx_frames: AtomicU64,
    pub tx_frames: AtomicU64,
    pub watchdog_trips: AtomicU64,
    /// Longest time between two valid frames of the device.
    pub max_gap_us: AtomicU64,
    /// When the last valid frame arrived (ns on the peer's clock, [`Peer::now`]).
    pub last_rx_ns: AtomicU64,
    /// Latest C_SDU received from the device.
    pub last_sdu: Mutex<Vec<u8>>,
    pub last_status: Mutex<Option<ApduStatus>>,
    /// Output data (4 bytes) the peer sends to the device's slot 1.
    pub out_data: Mutex<[u8; 4]>,
    /// Alarm notifications received (alarm type, specifier sequence).
    pub alarms: Mutex<Vec<(u16, u16)>>,
    pub alarm_acks_sent: AtomicU64,
    /// Stop sending output frames (simulates a silent controller).
    pub pause_tx: AtomicBool,
    /// ERR-RTA-PDUs received from the device (its abort statuses).
    pub peer_aborts: Mutex<Vec<PnioStatus>>,
}

impl Peer {
    /// Start the cyclic sender and the receiver threads.
    pub fn start_cyclic(&mut self) {
        self.stop_cyclic();
        self.state = Arc::new(CyclicState::default());
        let timing = CyclicTiming::new(self.timing.send_clock_factor, self.timing.reduction_ratio)
            .expect("cyclic timing");
        let t0 = self.t0;
        let clock = move || Time::from_nanos(t0.elapsed().as_nanos() as u64);
        // The IOCR DataLengths the Connect asked for.
        let req = self.connect_request();
        let data_length = |t| {
            let cr = req.iocrs.iter().find(|cr| cr.iocr_type == t).expect("IOCR");
            usize::from(cr.data_length)
        };
        let (in_len, out_len) = (
            data_length(iocr_type::INPUT),
            data_length(iocr_type::OUTPUT),
        );
        let mut consumer = Consumer::new(
            FrameId(self.input_frame_id),
            timing,
            self.timing.data_hold_factor,
            clock(),
        )
        .with_source(MacAddr(self.dev_mac))
        .with_c_sdu_len(in_len);
        let dht = consumer.data_hold_time();

        let st = self.state.clone();
        let sock = self.sock.clone();
        let eth = EthernetRepr {
            dst: MacAddr(self.dev_mac),
            src: MacAddr(self.mac),
            vlan: Some(VlanTag::RT_CYCLIC),
            ethertype: ethertype::PROFINET,
        };
        let ofid = FrameId(self.output_frame_id);
        self.threads.push(std::thread::spawn(move || {
            // SAFETY: prctl with an integer argument, this thread only.
            unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
            fifo(60);
            pin_self();
            let interval = timing.interval();
            let mut provider = Provider::new(eth, ofid, timing, clock(), 0);
            let mut hold: Option<DataHold> = None;
            let mut frame = vec![0u8; 1600];
            // The output CR's layout (stimulus.rs): slot 1 data 0..4, its IOPS at 4, the IOCS
            // at 5..8, all GOOD; the rest of the DataLength is zero.
            let mut sdu = vec![0u8; out_len];
            sdu[4..9].fill(0x80);
            while !st.stop.load(Ordering::Acquire) {
                if st.pause_tx.load(Ordering::Acquire) {
                    // The provider's slots pass unused; its CycleCounter still counts them.
                    std::thread::sleep(Duration::from_nanos(interval.as_nanos()));
                    continue;
                }
                let now = clock();
                sdu[..4].copy_from_slice(&*st.out_data.lock().unwrap());
                let due = provider
                    .poll_send(now, &sdu, &mut frame)
                    .expect("output frame");
                if let Some(n) = due {
                    supervise(&st, &mut hold, dht, interval, now);
                    if sock.send(&frame[..n]).is_ok() {
                        st.tx_frames.fetch_add(1, Ordering::Relaxed);
                    }
                }
                let next = provider.next_deadline().as_nanos();
                std::thread::sleep(Duration::from_nanos(
                    next.saturating_sub(clock().as_nanos()),
                ));
            }
        }));

        let st = self.state.clone();
        let sock = self.sock.clone();
        let rta = self.rta.clone();
        let eth_low = EthernetRepr {
            dst: MacAddr(self.dev_mac),
            src: MacAddr(self.mac),
            vlan: Some(VlanTag::RT_ALARM_LOW),
            ethertype: ethertype::PROFINET,
        };
        self.threads.push(std::thread::spawn(move || {
            fifo(50);
            pin_self();
            let mut buf = vec![0u8; 1600];
            while !st.stop.load(Ordering::Acquire) {
                let got = sock
                    .recv(&mut buf, Some(Duration::from_millis(2)))
                    .ok()
                    .flatten();
                if let Some(n) = got {
                    let now = clock();
                    if let Ok((e, payload)) = EthernetRepr::parse_frame(&buf[..n]) {
                        if e.ethertype == ethertype::PROFINET {
                            let prev = consumer.last_new_data();
                            match consumer.on_rt_payload(now, e.src, payload) {
                                RxOutcome::NewData { status, c_sdu } => {
                                    on_input(&st, &consumer, prev, now, status, c_sdu, payload)
                                }
                                RxOutcome::NotForUs => {
                                    let fid = rt::frame_id(payload).ok();
                                    if fid == Some(FrameId::ALARM_LOW)
                                        || fid == Some(FrameId::ALARM_HIGH)
                                    {
                                        rta.lock().unwrap().handle(&payload[2..], now);
                                    }
                                }
                                RxOutcome::Duplicate | RxOutcome::Invalid(_) => {}
                            }
                        }
                    }
                }
                // Alarms: acknowledge notifications.
                let now = clock();
                let mut m = rta.lock().unwrap();
                m.poll(now);
                while let Some(ev) = m.poll_event() {
                    if let RtaEvent::PeerAbort(status) = ev {
                        st.peer_aborts.lock().unwrap().push(status);
                        continue;
                    }
                    if let RtaEvent::Received(block) = ev {
                        if let Ok(AlarmPdu::Notification(n)) = AlarmPdu::parse(&block) {
                            st.alarms
                                .lock()
                                .unwrap()
                                .push((n.alarm_type, n.specifier.sequence_number()));
                            let ack = AlarmPdu::Ack(n.ack(PnioStatus::OK)).to_bytes().unwrap();
                            let _ = m.send_alarm(ack, now);
                            st.alarm_acks_sent.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
                while let Some(tx) = m.poll_transmit() {
                    let _ = sock.send(&eth_low.build(&tx.rt_payload()));
                }
            }
        }));
    }

    pub fn stop_cyclic(&mut self) {
        self.state.stop.store(true, Ordering::Release);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }

    /// Latest Q bytes (slot 1 data, C_SDU 3..7) seen in the device's frames.
    pub fn device_data(&self) -> Vec<u8> {
        let s = self.state.last_sdu.lock().unwrap();
        s.get(3..7).map(|x| x.to_vec()).unwrap_or_default()
    }
}

/// Publish a valid frame of the device the consumer took at `now` (`prev`: when the one
/// before it came): its C_SDU (`c_sdu`, a range of `payload`) and status, the counters and
/// the gap; the data-hold supervision runs from here on.
fn on_input(
    st: &CyclicState,
    consumer: &Consumer,
    prev: Option<Time>,
    now: Time,
    status: ApduStatus,
    c_sdu: (usize, usize),
    payload: &[u8],
) {
    if let Some(prev) = prev {
        let gap = now.saturating_since(prev).as_micros();
        st.max_gap_us.fetch_max(gap, Ordering::Relaxed);
    }
    *st.last_sdu.lock().unwrap() = payload[c_sdu.0..c_sdu.1].to_vec();
    *st.last_status.lock().unwrap() = Some(status);
    st.last_rx_ns.store(now.as_nanos(), Ordering::Release);
    st.rx_frames
        .store(consumer.stats().new_data, Ordering::Release);
    st.armed.store(true, Ordering::Release);
}

/// The data-hold supervision of one executed send slot at `now` (the device's real-time thread
/// runs it the same way, device/src/stack/cyclic.rs `supervise`): the protocol's [`DataHold`]
/// over the consumer's valid-frame count. A trip is counted and printed; the supervision then
/// waits for the device's next valid frame.
fn supervise(
    st: &CyclicState,
    hold: &mut Option<DataHold>,
    dht: PnDuration,
    interval: PnDuration,
    now: Time,
) {
    if !st.armed.load(Ordering::Acquire) || st.released.load(Ordering::Acquire) {
        *hold = None;
        return;
    }
    let frames = st.rx_frames.load(Ordering::Acquire);
    let h = hold.get_or_insert_with(|| DataHold::new(dht, interval, frames));
    let last = Time::from_nanos(st.last_rx_ns.load(Ordering::Acquire));
    if let Some(trip) = h.on_interval(now, frames, last) {
        eprintln!(
            "stack peer: data-hold time of {} us expired ({} cycles without a valid frame of \
             the device, {} us since the last one)",
            dht.as_micros(),
            trip.missed,
            trip.silence.as_micros()
        );
        st.watchdog_trips.fetch_add(1, Ordering::Relaxed);
        st.armed.store(false, Ordering::Release);
        *hold = None;
    }
}

//! The peer's cyclic exchange: output frames from an absolute-deadline thread, the device's
//! input frames with a data-hold watchdog, and the alarm channel (RTA machine) on a receiver
//! thread.

use pn_protocol::wire::Emit;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use pn_protocol::machine::rta::RtaEvent;
use pn_protocol::wire::ethernet::{ethertype, EthernetRepr, MacAddr, VlanTag};
use pn_protocol::wire::pnio::alarm::AlarmPdu;
use pn_protocol::wire::pnio::PnioStatus;
use pn_protocol::wire::rt::{self, ApduStatus, CyclicFrame, DataStatus, FrameId};

use super::{fifo, pin_self, Peer};

/// State of the peer's cyclic exchange, shared with its threads.
#[derive(Default)]
pub struct CyclicState {
    pub stop: AtomicBool,
    /// Watchdog armed (first device frame seen and not disarmed).
    pub armed: AtomicBool,
    pub rx_frames: AtomicU64,
    pub tx_frames: AtomicU64,
    pub watchdog_trips: AtomicU64,
    pub max_gap_us: AtomicU64,
    pub last_rx: Mutex<Option<Instant>>,
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
        let st = self.state.clone();
        let sock = self.sock.clone();
        let eth = EthernetRepr {
            dst: MacAddr(self.dev_mac),
            src: MacAddr(self.mac),
            vlan: Some(VlanTag::RT_CYCLIC),
            ethertype: ethertype::PROFINET,
        };
        let (ofid, period) = (self.output_frame_id, self.timing.period());
        let step = self.timing.send_clock_factor * self.timing.reduction_ratio;
        let dhf = self.timing.data_hold_factor;
        self.threads.push(std::thread::spawn(move || {
            // SAFETY: prctl with an integer argument, this thread only.
            unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
            fifo(60);
            pin_self();
            let mut buf = [0u8; 128];
            let mut counter: u16 = 0;
            let mut next = Instant::now();
            // Data-hold watchdog counted in executed cycles (like the device, see cyclic.rs).
            let (mut seen, mut miss) = (0u64, 0u64);
            while !st.stop.load(Ordering::Acquire) {
                if st.pause_tx.load(Ordering::Acquire) {
                    std::thread::sleep(period);
                    next = Instant::now();
                    continue;
                }
                if st.armed.load(Ordering::Acquire) {
                    let rx = st.rx_frames.load(Ordering::Acquire);
                    if rx != seen {
                        seen = rx;
                        miss = 0;
                    } else {
                        miss += 1;
                        if miss >= u64::from(dhf) {
                            st.watchdog_trips.fetch_add(1, Ordering::Relaxed);
                            st.armed.store(false, Ordering::Release);
                            miss = 0;
                        }
                    }
                }
                let mut sdu = [0u8; 9];
                sdu[..4].copy_from_slice(&*st.out_data.lock().unwrap());
                sdu[4..9].fill(0x80);
                counter = counter.wrapping_add(step);
                let status = ApduStatus {
                    cycle_counter: counter,
                    data_status: DataStatus::RUNNING,
                    transfer_status: 0,
                };
                let n = rt::fill_cyclic_frame(&mut buf, &eth, FrameId(ofid), &sdu, status).unwrap();
                if sock.send(&buf[..n]).is_ok() {
                    st.tx_frames.fetch_add(1, Ordering::Relaxed);
                }
                next += period;
                let now = Instant::now();
                if next > now {
                    std::thread::sleep(next - now);
                } else {
                    next = now; // no catch-up burst
                }
            }
        }));
        let st = self.state.clone();
        let sock = self.sock.clone();
        let rta = self.rta.clone();
        let ifid = self.input_frame_id;
        let (mac, dev_mac) = (self.mac, self.dev_mac);
        self.threads.push(std::thread::spawn(move || {
            fifo(50);
            pin_self();
            let mut buf = vec![0u8; 1600];
            let t0 = Instant::now();
            let now_p = || pn_protocol::time::Instant::from_nanos(t0.elapsed().as_nanos() as u64);
            let eth_low = EthernetRepr {
                dst: MacAddr(dev_mac),
                src: MacAddr(mac),
                vlan: Some(VlanTag::RT_ALARM_LOW),
                ethertype: ethertype::PROFINET,
            };
            while !st.stop.load(Ordering::Acquire) {
                let got = sock
                    .recv(&mut buf, Some(Duration::from_millis(2)))
                    .ok()
                    .flatten();
                let now = Instant::now();
                if let Some(n) = got {
                    if let Ok((e, payload)) = EthernetRepr::parse_frame(&buf[..n]) {
                        if e.ethertype == ethertype::PROFINET {
                            let fid = rt::frame_id(payload).map(|f| f.0).unwrap_or(0);
                            if fid == ifid {
                                if let Ok(f) = CyclicFrame::with_c_sdu_len(payload, 40) {
                                    let mut last = st.last_rx.lock().unwrap();
                                    if let Some(prev) = *last {
                                        let gap = now.duration_since(prev);
                                        st.max_gap_us
                                            .fetch_max(gap.as_micros() as u64, Ordering::Relaxed);
                                    }
                                    *last = Some(now);
                                    st.armed.store(true, Ordering::Release);
                                    *st.last_sdu.lock().unwrap() = f.c_sdu().to_vec();
                                    *st.last_status.lock().unwrap() = Some(f.apdu_status());
                                    st.rx_frames.fetch_add(1, Ordering::Relaxed);
                                }
                            } else if fid == 0xFE01 || fid == 0xFC01 {
                                rta.lock().unwrap().handle(&payload[2..], now_p());
                            }
                        }
                    }
                }
                // Alarms: acknowledge notifications.
                let mut m = rta.lock().unwrap();
                m.poll(now_p());
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
                            let _ = m.send_alarm(ack, now_p());
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

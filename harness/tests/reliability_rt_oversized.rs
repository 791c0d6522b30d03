//! Issue 9.2, malformed RT frames: frames carrying the AR's output FrameID from the
//! controller's MAC but LONGER than the agreed shape (FrameID + C_SDU of the IOCR's DataLength +
//! APDU status), whose bytes at the status position look valid (TransferStatus 0, DataValid, a
//! CycleCounter that may be ahead) and whose data is `deadbeef`, must not be consumed: the
//! device's I area keeps the controller's `a5a5a5a5` and the AR keeps running. (Written while
//! investigating the AR end under the 50 000 frames/s malformed-RT flood, which turned out to be
//! receive capacity, not this: see docs/benchmarks.md "Reliability and floods".)

use pn_controller::netif::{InterfaceInfo, RawSocket};
use pn_controller::ArState;
use pn_lab::soak::{Counters, Rig, RigOptions};
use std::time::{Duration, Instant};

#[test]
fn over_long_rt_frames_are_not_consumed() {
    if !pn_testkit::env::require_root() {
        return;
    }
    let mut c = Counters::default();
    let mut rig = Rig::start(RigOptions::default()).expect("lab");
    rig.connect(Duration::from_secs(20), &mut c)
        .expect("connect");
    let ar = rig.ar().unwrap();
    ar.set_outputs(0, &[0xa5; 4]).unwrap();
    rig.wait_api(
        "controller data in the I area",
        Duration::from_secs(3),
        |_| {
            rig.api("GET", "/api/io", None)
                .is_ok_and(|(_, v)| v["inputHex"] == "a5a5a5a5")
        },
    )
    .expect("I area");
    let st = ar.status();
    let dev = pn_controller::parse_mac(&st.device_mac).unwrap().0;
    let out = ar.layout().output.clone();
    let c_sdu = out.data_length as usize;
    let nic = rig.lab.controller_nic().to_string();
    let (sock, src) = rig
        .lab
        .ns_ctl
        .enter(move || {
            let info = InterfaceInfo::lookup(&nic).unwrap();
            (RawSocket::open(&info).unwrap(), info.mac.0)
        })
        .unwrap();
    let t0 = Instant::now();
    let mut cc: u16 = 0;
    let mut sent = 0;
    while t0.elapsed() < Duration::from_millis(500) {
        let mut f = Vec::new();
        f.extend_from_slice(&dev);
        f.extend_from_slice(&src);
        f.extend_from_slice(&[0x81, 0x00, 0xC0, 0x00, 0x88, 0x92]);
        f.extend_from_slice(&st.output_frame_id.to_be_bytes());
        let mut sdu = vec![0x80u8; c_sdu];
        for d in &out.data {
            let o = d.frame_offset as usize;
            for k in 0..d.data_len as usize {
                sdu[o + k] = [0xde, 0xad, 0xbe, 0xef][k % 4];
            }
        }
        f.extend_from_slice(&sdu);
        // A CycleCounter a little ahead of any real one (the real counter is unknown here; a
        // spread of values makes some land just ahead).
        cc = cc.wrapping_add(1999);
        f.extend_from_slice(&cc.to_be_bytes());
        f.extend_from_slice(&[0x35, 0x00]);
        f.extend_from_slice(&[0x5a; 24]); // trailing bytes: not part of the agreed frame
        let _ = sock.send(&f);
        sent += 1;
        std::thread::sleep(Duration::from_micros(200));
    }
    std::thread::sleep(Duration::from_millis(100));
    let (_, io) = rig.api("GET", "/api/io", None).unwrap();
    let s = rig.status().unwrap();
    assert_eq!(
        io["inputHex"], "a5a5a5a5",
        "data of {sent} over-long frames reached the I area: {io}"
    );
    assert_eq!(s["state"], "DataExchange", "{s}\n{}", rig.lab.device_log());
    assert_eq!(rig.ar().unwrap().state(), ArState::DataExchange);
}

//! The bounded queue of the `pn-l2` thread: control messages never wait behind frames.

use super::*;
use pn_protocol::wire::dcp::{DcpRepr, NameOfStation};
use std::time::Duration;

/// While `pn-l2` waits for a durable commit (a slow disk), control messages still go
/// through at once (received frames alone are bounded, by `frames_queued`): the reset the runtime sends under
/// the stack's lock must never wait for that disk (found in review: with a bounded
/// channel for everything, the 129th message blocked its sender).
#[test]
fn control_messages_never_wait_for_a_busy_worker() {
    let mac = MacAddr([2, 0, 0, 0, 0, 1]);
    let identity = DcpIdentity {
        mac,
        station_name: "dev".into(),
        device_vendor: "v".into(),
        vendor_id: 1,
        device_id: 1,
        ip: Ipv4Addr::UNSPECIFIED,
        mask: Ipv4Addr::UNSPECIFIED,
        gateway: Ipv4Addr::UNSPECIFIED,
        device_instance: (0, 1),
        device_initiative: false,
    };
    let cfg = L2Config {
        nic: "none".into(),
        ifindex: 1,
        identity,
        configured: (
            "dev".into(),
            Ipv4Addr::UNSPECIFIED,
            Ipv4Addr::UNSPECIFIED,
            Ipv4Addr::UNSPECIFIED,
        ),
        im0: Im0Config::default(),
        location: String::new(),
        snmp: None,
        llmnr: None,
        apply_ip: false,
        ar_active: None,
    };
    // The commit of a permanent name blocks until the test lets it go.
    let (entered_tx, entered_rx) = mpsc::channel();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    let release_rx = Mutex::new(release_rx);
    let (sink, _events) = EventSink::channel();
    let sink = sink.with_commit(Arc::new(move |_ev: &StackEvent| {
        let _ = entered_tx.send(());
        let _ = release_rx.lock().unwrap().recv();
        Ok(())
    }));
    let mut l2 = L2Services::start(
        cfg,
        LinkInfo {
            present: true,
            up: true,
            ..LinkInfo::default()
        },
        Arc::new(|_f: &[u8]| true),
        sink,
        Arc::new(|_why: &'static str| {}),
    )
    .unwrap();
    let set = DcpRepr::set_name(1, &NameOfStation::new("new-name").unwrap(), true)
        .build_frame(mac, MacAddr([2, 0, 0, 0, 0, 9]), None)
        .unwrap();
    l2.on_frame(&set);
    entered_rx
        .recv_timeout(Duration::from_secs(5))
        .expect("pn-l2 is in the commit");
    // 1000 control messages from another thread: all sent without waiting.
    let sent = std::thread::scope(|s| {
        let h = s.spawn(|| {
            for i in 0..1000u32 {
                l2.set_ar_active(i % 2 == 0);
                l2.reset(
                    "dev",
                    Ipv4Addr::UNSPECIFIED,
                    Ipv4Addr::UNSPECIFIED,
                    Ipv4Addr::UNSPECIFIED,
                );
            }
            true
        });
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while !h.is_finished() && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        let done = h.is_finished();
        // Let the worker go either way, so the scope can end.
        let _ = release_tx.send(());
        done && h.join().unwrap()
    });
    assert!(sent, "a control message waited for the busy worker");
    assert_eq!(l2.counters.frames_queued.load(Ordering::Acquire), 0);
    l2.stop();
}

//! The status view's routes and pages (in-process, no socket).

use super::*;
use crate::plant::{numbered, Numbering, DEFAULT_MAC_BASE};
use pn_device_formats::config::{RuntimeConfig, DEFAULT_CONFIG_XML};

#[test]
fn slow_passes_are_counted_with_the_worst_and_shown() {
    let io = IoCounters::default();
    let ms = 1_000_000;
    io.record_pass(10 * ms, 200_000, 300_000, 100_000); // an ordinary pass
    io.record_pass(20 * ms, 3 * ms, 3_500_000, 200_000); // woke 3 ms late
    io.record_pass(30 * ms, 0, 2 * ms, 1_800_000); // a 1.8 ms sendmmsg
    let v = io.view(4);
    assert_eq!(
        (v.slow_passes, v.max_wake_late_us, v.max_pass_us),
        (2, 3000, 3500)
    );
}

fn farm() -> (FarmShared, mpsc::Receiver<Command>) {
    let c = RuntimeConfig::parse(DEFAULT_CONFIG_XML, "d").unwrap();
    let n = Numbering {
        count: 2,
        name_prefix: "dev-".into(),
        ip_base: Some(Ipv4Addr::new(10, 0, 0, 1)),
        mac_base: DEFAULT_MAC_BASE,
        unnamed: false,
    };
    let devices = numbered(&c, "eth0", &n)
        .unwrap()
        .iter()
        .map(|s| {
            let img = Arc::new(ProcessImage::new(s.stack.input_len, s.stack.output_len));
            Arc::new(DevShared::new(s, img))
        })
        .collect();
    let (tx, rx) = mpsc::channel();
    (
        FarmShared {
            devices,
            commands: Mutex::new(tx),
            stop: AtomicBool::new(false),
            io: IoCounters::default(),
        },
        rx,
    )
}

#[test]
fn the_view_lists_every_device_and_writes_inputs() {
    let (f, rx) = farm();
    let (code, _, body) = route(&f, "GET", "/api/devices", b"");
    assert_eq!(code, 200);
    let v: Vec<DeviceView> = serde_json::from_str(&body).unwrap();
    assert_eq!(v.len(), 2);
    assert_eq!(v[1].name, "dev-2");
    assert_eq!(v[1].ip, "10.0.0.2");
    assert_eq!(v[0].state, "Idle");
    let (code, ctype, page) = route(&f, "GET", "/", b"");
    assert_eq!((code, ctype), (200, "text/html; charset=utf-8"));
    assert!(page.contains("dev-2"));
    assert!(
        page.contains("socket (mmsg): 0 receive errors, 0 frames dropped (receive side full), 0 frames not sent; I/O loop: 0 slow passes"),
        "{page}"
    );

    let (code, _, _) = route(
        &f,
        "POST",
        "/api/devices/dev-1/io",
        br#"{"offset":0,"data":"a5b6"}"#,
    );
    assert_eq!(code, 200);
    assert!(f.devices[0].view(0).inputs_hex.starts_with("a5b6"));
    for (body, want) in [
        (&br#"{"data":"zz"}"#[..], 400),
        (br#"{"data":"a5","colour":1}"#, 400),
        (br#"{"offset":100000,"data":"a5"}"#, 400),
        (b"\xff\x00", 400),
    ] {
        assert_eq!(route(&f, "POST", "/api/devices/dev-1/io", body).0, want);
    }
    assert_eq!(route(&f, "GET", "/api/devices/nobody", b"").0, 404);
    assert_eq!(route(&f, "DELETE", "/api/devices", b"").0, 404);

    let (code, _, _) = route(
        &f,
        "POST",
        "/api/devices/dev-2/diagnosis",
        br#"{"slot":1,"subslot":1,"errorType":1,"text":"short"}"#,
    );
    assert_eq!(code, 200);
    assert!(matches!(rx.try_recv(), Ok(Command::SetDiagnosis(1, e)) if e.error_type == 1));
}

#[test]
fn socket_errors_are_counted_kept_in_words_and_shown() {
    let (f, _rx) = farm();
    let v: FarmView = serde_json::from_str(&route(&f, "GET", "/api/farm", b"").2).unwrap();
    assert_eq!((v.devices, v.rx_errors, v.tx_unsent), (2, 0, 0));
    assert_eq!(v.last_io_error, "");
    let down = std::io::Error::from_raw_os_error(libc::ENETDOWN);
    f.io.record_error("receive", &down);
    f.io.record_error("receive", &down);
    f.io.record_error("send", &std::io::Error::from_raw_os_error(libc::ENOBUFS));
    f.io.add_unsent(4);
    let (code, ctype, body) = route(&f, "GET", "/api/farm", b"");
    assert_eq!((code, ctype), (200, "application/json"));
    let v: FarmView = serde_json::from_str(&body).unwrap();
    assert_eq!((v.rx_errors, v.tx_unsent), (2, 5));
    assert!(v.last_io_error.starts_with("send: "), "{}", v.last_io_error);
    assert!(v.last_io_error.contains("buffer"), "{}", v.last_io_error);
    assert!(body.contains("\"lastIoError\""), "{body}");
}

#[test]
fn receive_drops_are_added_up_and_shown() {
    let (f, _rx) = farm();
    f.io.record_drops(0);
    f.io.record_drops(3);
    f.io.record_drops(2);
    let v: FarmView = serde_json::from_str(&route(&f, "GET", "/api/farm", b"").2).unwrap();
    assert_eq!((v.rx_dropped, v.rx.as_str()), (5, "mmsg"));
    f.io.rx_ring.store(true, Ordering::Relaxed);
    let (_, _, page) = route(&f, "GET", "/", b"");
    assert!(
        page.contains("socket (ring): 0 receive errors, 5 frames dropped"),
        "{page}"
    );
}

#[test]
fn hex_round_trips_and_rejects_junk() {
    assert_eq!(unhex("00ff10"), Some(vec![0, 255, 16]));
    assert_eq!(unhex("0"), None);
    assert_eq!(unhex("gg"), None);
    assert_eq!(unhex("é1"), None);
    assert_eq!(hex(&[1, 0xab]), "01ab");
}

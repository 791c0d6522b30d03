//! Address-based process data (spec 4.1) against the REAL daemon: typed writes land big-endian
//! at byte offsets in the service's Q area (`outputHex`, checked with an independent raw HTTP
//! request), `I`/`M`/`DB1` alias it, `Q` reads the service's I area (controller data, fed through
//! the daemon's simulated data plane), Q writes are NotSupported, DB > 1 NotFound.

mod common;

use std::time::Duration;

use common::*;
use pn_client::{Address, CallResult, Client, Value};

fn a(s: &str) -> Address {
    s.parse().unwrap()
}

#[test]
fn typed_writes_land_big_endian_at_byte_offsets() {
    if !root() {
        return;
    }
    let d = Daemon::start(Opts::default());
    d.with_client(|c| assert!(c.start().unwrap().ok));
    let area = d.run_async(|| async {
        let pd = Client::new(None).process_data();
        pd.set(&a("IB0"), 0x11u8).await.unwrap();
        pd.set(&a("MB1"), -2i8).await.unwrap();
        pd.set(&a("IW3"), 0xA1B2u16).await.unwrap(); // unaligned word
        pd.set(&a("DB1.DBW5"), -2i16).await.unwrap();
        pd.flush().await.unwrap();
        let first = pd.flush_count().await;
        pd.set(&a("ID8"), 0xDEADBEEFu32).await.unwrap();
        pd.set(&a("DB1.DBD12"), 1.5f32).await.unwrap();
        pd.flush().await.unwrap();
        // read back through the cache (read-your-writes) with every alias
        assert_eq!(pd.get::<u8>(&a("MB0")).await.unwrap(), 0x11);
        assert_eq!(pd.get::<i8>(&a("DB1.DBB1")).await.unwrap(), -2);
        assert_eq!(pd.get::<u16>(&a("MW3")).await.unwrap(), 0xA1B2);
        assert_eq!(pd.get::<i16>(&a("IW5")).await.unwrap(), -2);
        assert_eq!(pd.get::<u32>(&a("DB1.DBD8")).await.unwrap(), 0xDEADBEEF);
        assert_eq!(pd.get::<f32>(&a("ID12")).await.unwrap(), 1.5);
        assert_eq!(pd.read(&a("IW3")).await.unwrap(), Value::U16(0xA1B2));
        (first, pd.flush_count().await)
    });
    let (first, total) = area;
    // writes in quick succession are merged: far fewer requests than writes
    assert!(first >= 1 && total <= 6, "flushes {first}/{total}");
    let out = d.output_area();
    assert_eq!(
        out,
        vec![
            0x11, 0xFE, 0x00, 0xA1, 0xB2, 0xFF, 0xFE, 0x00, 0xDE, 0xAD, 0xBE, 0xEF, 0x3F, 0xC0,
            0x00, 0x00
        ]
    );
}

#[test]
fn sixty_four_bit_types_and_bits() {
    if !root() {
        return;
    }
    let d = Daemon::start(Opts::default());
    d.run_async(|| async {
        let pd = Client::new(None).process_data();
        pd.set(&a("IB0"), 0x0102030405060708u64).await.unwrap();
        pd.set(&a("MD8"), -2.25f64).await.unwrap();
        pd.flush().await.unwrap();
        assert_eq!(pd.get::<u64>(&a("IB0")).await.unwrap(), 0x0102030405060708);
        assert_eq!(
            pd.get::<i64>(&a("DB1.DBW0")).await.unwrap(),
            0x0102030405060708
        );
        assert_eq!(pd.get::<f64>(&a("ID8")).await.unwrap(), -2.25);
    });
    let out = d.output_area();
    assert_eq!(&out[..8], &[1, 2, 3, 4, 5, 6, 7, 8]);
    assert_eq!(&out[8..16], &(-2.25f64).to_be_bytes());
    d.run_async(|| async {
        let pd = Client::new(None).process_data();
        pd.set(&a("IB2"), 0u8).await.unwrap();
        pd.set(&a("I2.3"), true).await.unwrap();
        pd.set(&a("M2.5"), true).await.unwrap();
        pd.set(&a("DB1.DBX2.7"), true).await.unwrap();
        pd.set(&a("I2.5"), false).await.unwrap();
        pd.flush().await.unwrap();
        assert!(pd.get::<bool>(&a("I2.3")).await.unwrap());
        assert!(!pd.get::<bool>(&a("DB1.DBX2.5")).await.unwrap());
        assert!(pd.get::<bool>(&a("M2.7")).await.unwrap());
    });
    assert_eq!(d.output_area()[2], 0b1000_1000);
    // untouched neighbours kept
    assert_eq!(d.output_area()[1], 2);
    assert_eq!(d.output_area()[3], 4);
}

#[test]
fn area_rules_q_read_only_db_not_found_ranges() {
    if !root() {
        return;
    }
    let d = Daemon::start(Opts::default());
    let epoch_before = d.raw("GET", "/api/io", None).json()["epoch"].clone();
    d.run_async(|| async {
        let pd = Client::new(None).process_data();
        for q in ["QB0", "QW2", "QD4", "Q0.0"] {
            let e = pd
                .write_value(&a(q), a(q).default_type().parse_value("1").unwrap())
                .await;
            assert_eq!(e.unwrap_err().kind, CallResult::NotSupported, "{q}");
        }
        assert_eq!(
            pd.write_bytes(&a("QB0"), &[1]).await.unwrap_err().kind,
            CallResult::NotSupported
        );
        assert_eq!(
            pd.read(&a("DB2.DBW0")).await.unwrap_err().kind,
            CallResult::NotFound
        );
        assert_eq!(
            pd.set(&a("DB7.DBX0.0"), true).await.unwrap_err().kind,
            CallResult::NotFound
        );
        // client I area = 16 bytes, client Q area = 8 bytes
        assert_eq!(
            pd.read(&a("IB16")).await.unwrap_err().kind,
            CallResult::InvalidArgument
        );
        assert_eq!(
            pd.read(&a("ID14")).await.unwrap_err().kind,
            CallResult::LengthMismatch
        );
        assert_eq!(
            pd.set(&a("MW15"), 1u16).await.unwrap_err().kind,
            CallResult::LengthMismatch
        );
        assert_eq!(
            pd.read(&a("QB8")).await.unwrap_err().kind,
            CallResult::InvalidArgument
        );
        assert!(pd.read(&a("QB7")).await.is_ok());
        assert!(pd.read(&a("IB15")).await.is_ok());
        // wrong type for the form
        assert_eq!(
            pd.get::<u16>(&a("IB0")).await.unwrap_err().kind,
            CallResult::InvalidArgument
        );
        assert_eq!(pd.flush().await.unwrap(), None, "nothing may be pending");
    });
    // none of the refused writes reached the service
    assert_eq!(d.output_area(), vec![0u8; 16]);
    assert_eq!(d.raw("GET", "/api/io", None).json()["epoch"], epoch_before);
}

#[test]
fn q_reads_controller_data_and_cache_refreshes() {
    if !root() {
        return;
    }
    let d = Daemon::start(Opts {
        sim: true,
        ..Opts::default()
    });
    d.with_client(|c| assert!(c.start().unwrap().ok));
    d.sim(serde_json::json!({"event": "connected", "controller": "plc-1"}));
    d.sim(serde_json::json!({"cmd": "writeInput", "dataHex": "0102c0a040490fdb", "iops": 128, "iocs": 128}));
    d.run_async(|| async {
        let pd = Client::new(None).process_data();
        assert_eq!(pd.get::<u16>(&a("QW0")).await.unwrap(), 0x0102);
        assert!(pd.get::<bool>(&a("Q0.0")).await.unwrap());
        assert!(!pd.get::<bool>(&a("Q0.1")).await.unwrap());
        assert_eq!(pd.get::<u8>(&a("QB2")).await.unwrap(), 0xC0);
        assert_eq!(pd.get::<i16>(&a("QW2")).await.unwrap(), 0xC0A0u16 as i16);
        assert_eq!(
            pd.get::<f32>(&a("QD4")).await.unwrap(),
            std::f32::consts::PI
        );
        assert_eq!(
            pd.read_bytes(&a("QB0"), 8).await.unwrap(),
            vec![1, 2, 0xC0, 0xA0, 0x40, 0x49, 0x0F, 0xDB]
        );
        let snap = pd.snapshot().await.unwrap();
        assert!(snap.input_valid);
        assert_eq!(snap.input_iops_hex, "80");
    });
    // new controller data: a fresh handle (and an old one once its cache expires) sees it
    d.sim(serde_json::json!({"cmd": "writeInput", "dataHex": "ffee", "iops": 128, "iocs": 128}));
    d.run_async(|| async {
        let pd = Client::new(None).process_data();
        assert_eq!(pd.get::<u16>(&a("QW0")).await.unwrap(), 0xFFEE);
        let t = tokio::time::Instant::now();
        // a cached value is reused for at most 20 ms, then refreshed
        loop {
            if pd.get::<u16>(&a("QW0")).await.unwrap() == 0xFFEE {
                break;
            }
            assert!(t.elapsed() < Duration::from_secs(1));
        }
    });
    // a write while connected is delivered
    d.run_async(|| async {
        let pd = Client::new(None).process_data();
        pd.set(&a("IW0"), 0x4242u16).await.unwrap();
        // sync: flush, or the background flusher's answer when it was first
        let r = pd.sync().await.unwrap().expect("a flush happened");
        assert!(r.delivered && r.ok, "{r:?}");
        assert_eq!(r.reason(), pn_client::ReasonCode::Delivered);
    });
}

/// A flush error with the real daemon gone: surfaced (by the write or by the flush), never
/// dropped silently.
#[test]
fn daemon_gone_flush_error_is_surfaced() {
    if !root() {
        return;
    }
    let mut d = Daemon::start(Opts::default());
    let ns_path = d.ns.path();
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let (tx2, rx2) = std::sync::mpsc::channel::<()>();
    let h = std::thread::spawn(move || {
        pn_testkit::netns::join_netns(&ns_path).unwrap();
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let pd = Client::new(None).process_data();
            pd.set(&a("IB0"), 1u8).await.unwrap();
            pd.flush().await.unwrap();
            tx.send(()).unwrap();
            rx2.recv().unwrap();
            // the daemon is gone now
            let w = pd.set(&a("IB1"), 2u8).await;
            let e = match w {
                Err(e) => e,
                Ok(()) => pd.flush().await.unwrap_err(),
            };
            assert_eq!(e.kind, CallResult::ServiceUnreachable, "{e}");
        });
    });
    rx.recv().unwrap();
    d.kill9();
    tx2.send(()).unwrap();
    h.join().expect("client thread");
}

#[test]
fn blocking_process_data() {
    if !root() {
        return;
    }
    let d = Daemon::start(Opts::default());
    d.with_client(|c| {
        let pd = c.process_data();
        pd.set(&a("IW10"), 0xBEEFu16).unwrap();
        // flushed in the background within a few periods, without an explicit flush
        wait_for("background flush", Duration::from_secs(2), || {
            (pd.flush_count() >= 1).then_some(())
        });
        assert_eq!(&c.io().unwrap().output().unwrap()[10..12], &[0xBE, 0xEF]);
        assert_eq!(pd.get::<u16>(&a("MW10")).unwrap(), 0xBEEF);
        pd.close().unwrap();
        assert_eq!(
            pd.read(&a("IB0")).unwrap_err().kind,
            CallResult::InvalidHandle
        );
    });
}

//! Mapping edge cases against the in-process fake server (see `fake.rs` for why).

use std::time::Duration;

use crate::fake::{io_body, Fake, Reply};
use crate::{Address, CallResult, Client, ClientOptions, State, Timeouts};

fn client(url: &str) -> Client {
    Client::connect(url, None).expect("client")
}

/// Wait (with a deadline) until `f` holds.
async fn until(what: &str, mut f: impl FnMut() -> bool) {
    let end = tokio::time::Instant::now() + Duration::from_secs(5);
    while !f() {
        assert!(
            tokio::time::Instant::now() < end,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

fn addr(s: &str) -> Address {
    s.parse().expect("address")
}

#[tokio::test]
async fn http_500_with_track1_body_is_native_error_with_error_code() {
    let f = Fake::start(|_| {
        Reply::Respond(
            500,
            r#"{"success":false,"message":"boom","code":"PnS.Api.Internal","errorCode":-3,"timestamp":"t"}"#
                .into(),
        )
    })
    .await;
    let e = client(&f.url).status().await.unwrap_err();
    assert_eq!(e.kind, CallResult::NativeError);
    assert_eq!(e.http_status, Some(500));
    assert_eq!(e.error_code, Some(-3));
    assert_eq!(e.code.as_deref(), Some("PnS.Api.Internal"));
    assert!(e.message.contains("boom"), "{e}");
}

#[tokio::test]
async fn garbage_200_body_is_native_error() {
    let f = Fake::start(|_| Reply::Respond(200, "<html>not json</html>".into())).await;
    let e = client(&f.url).status().await.unwrap_err();
    assert_eq!(e.kind, CallResult::NativeError);
    assert_eq!(e.http_status, Some(200));
    assert!(e.message.contains("invalid response body"), "{e}");
    // A JSON value of the wrong shape is just as bad.
    f.set(|_| Reply::Respond(200, "[1,2]".into()));
    let e = client(&f.url).status().await.unwrap_err();
    assert_eq!(e.kind, CallResult::NativeError);
    // Garbage hex in a snapshot: reading by address fails with NativeError, no panic.
    f.set(|_| Reply::Respond(200, io_body("zz", "0g")));
    let e = client(&f.url)
        .process_data()
        .read(&addr("IB0"))
        .await
        .unwrap_err();
    assert_eq!(e.kind, CallResult::NativeError);
}

#[tokio::test]
async fn unknown_state_and_unknown_error_code_do_not_fail() {
    let f = Fake::start(|_| {
        Reply::Respond(
            200,
            r#"{"state":"Hibernating","errorCode":-77,"connected":false,"brandNew":1}"#.into(),
        )
    })
    .await;
    let s = client(&f.url).status().await.unwrap();
    assert_eq!(s.state, State::Unknown);
    assert_eq!(s.error_code, -77);
    assert_eq!(s.service_error(), crate::ServiceError::Unknown);
    assert_eq!(s.extra["brandNew"], 1);
    // Start/stop results carry errorCode as sent.
    f.set(|_| {
        Reply::Respond(
            200,
            r#"{"ok":false,"message":"start failed","errorCode":-6}"#.into(),
        )
    });
    let r = client(&f.url).start().await.unwrap();
    assert!(!r.ok);
    assert_eq!(r.service_error(), crate::ServiceError::ErrDap);
    assert_eq!(r.check().unwrap_err().error_code, Some(-6));
}

#[tokio::test]
async fn service_that_never_answers_is_unreachable_after_the_timeout() {
    let f = Fake::start(|_| Reply::Hang).await;
    let c = Client::with_options(ClientOptions {
        base_url: f.url.clone(),
        api_key: None,
        timeouts: Timeouts {
            poll: Duration::from_millis(150),
            ..Timeouts::default()
        },
    })
    .unwrap();
    let t = std::time::Instant::now();
    let e = c.status().await.unwrap_err();
    assert_eq!(e.kind, CallResult::ServiceUnreachable);
    assert!(t.elapsed() >= Duration::from_millis(150));
    assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
    // A connection closed without an answer is unreachable too.
    f.set(|_| Reply::Close);
    let e = c.status().await.unwrap_err();
    assert_eq!(e.kind, CallResult::ServiceUnreachable);
}

#[tokio::test]
async fn api_key_header_is_sent_when_given() {
    let f = Fake::start(|_| Reply::Respond(200, "{}".into())).await;
    Client::connect(&f.url, Some("s3cret".into()))
        .unwrap()
        .status()
        .await
        .unwrap();
    client(&f.url).status().await.unwrap();
    let reqs = f.requests_to("GET", "/api/status");
    assert_eq!(reqs.len(), 2);
    let key = |r: &crate::fake::Req| {
        r.headers
            .iter()
            .find(|(k, _)| k == "x-vendor-pnet-api-key")
            .map(|(_, v)| v.clone())
    };
    assert_eq!(key(&reqs[0]).as_deref(), Some("s3cret"));
    assert_eq!(key(&reqs[1]), None);
}

#[tokio::test]
async fn writes_merge_into_one_region_with_gap_bytes_from_the_snapshot() {
    let f = Fake::start(|r| match (r.method.as_str(), r.path.as_str()) {
        ("GET", "/api/io") => Reply::Respond(200, io_body("00000000", "a0a1a2a3a4a5a6a7")),
        ("POST", "/api/io") => Reply::Respond(200, r#"{"ok":false,"queued":true}"#.into()),
        _ => Reply::Respond(404, "{}".into()),
    })
    .await;
    let pd = client(&f.url).process_data();
    // Three writes in a row; together they fit in one flush period, and an explicit flush
    // sends whatever is pending in one request.
    pd.set(&addr("IB1"), 0x11u8).await.unwrap();
    pd.set(&addr("MW4"), 0x4455u16).await.unwrap();
    pd.set(&addr("DB1.DBX2.0"), false).await.unwrap();
    // Read-your-writes before the flush.
    assert_eq!(pd.get::<u16>(&addr("IW4")).await.unwrap(), 0x4455);
    assert_eq!(pd.get::<u8>(&addr("IB2")).await.unwrap(), 0xa2);
    pd.flush().await.unwrap();
    let posts = f.requests_to("POST", "/api/io");
    let all: Vec<serde_json::Value> = posts
        .iter()
        .map(|p| serde_json::from_str(&p.body).unwrap())
        .collect();
    // Whatever the flusher sent in between, the union equals one merged region when the
    // writes were quicker than 20 ms; at least check the final content and the body form.
    assert!(!all.is_empty());
    let mut image = vec![0xa0u8, 0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7];
    for v in &all {
        let off = v["offset"].as_u64().unwrap() as usize;
        let data = crate::decode_hex(v["data"].as_str().unwrap()).unwrap();
        assert_eq!(v["data"].as_str().unwrap(), crate::encode_hex(&data));
        image[off..off + data.len()].copy_from_slice(&data);
    }
    assert_eq!(image, vec![0xa0, 0x11, 0xa2, 0xa3, 0x44, 0x55, 0xa6, 0xa7]);
    if all.len() == 1 {
        assert_eq!(all[0]["offset"], 1);
        assert_eq!(all[0]["data"], "11a2a34455");
    }
}

#[tokio::test]
async fn merged_region_is_exact_when_no_flush_intervenes() {
    // Make every POST fail with 503 while we queue, so the background flusher cannot take the
    // region away; then let it through and check the one request that carries it.
    let f = Fake::start(|r| match (r.method.as_str(), r.path.as_str()) {
        ("GET", "/api/io") => Reply::Respond(200, io_body("00", "000102030405060708090a0b")),
        _ => Reply::Respond(503, r#"{"success":false,"message":"busy"}"#.into()),
    })
    .await;
    let pd = client(&f.url).process_data();
    pd.set(&addr("IB2"), 0xEEu8).await.unwrap();
    until("a failed flush", || {
        !f.requests_to("POST", "/api/io").is_empty()
    })
    .await;
    // The background failure (Busy: transient) is reported once by the next call ...
    let mut seen_busy = false;
    for _ in 0..2 {
        match pd.set(&addr("ID7"), 0xC0FFEE00u32).await {
            Err(e) => {
                assert_eq!(e.kind, CallResult::Busy);
                assert!(e.message.contains("background flush failed"), "{e}");
                seen_busy = true;
            }
            Ok(()) => break,
        }
    }
    assert!(seen_busy, "the flush error must be surfaced");
    // ... and the region was kept: both writes are pending in one region.
    f.set(|r| match (r.method.as_str(), r.path.as_str()) {
        ("GET", "/api/io") => Reply::Respond(200, io_body("00", "000102030405060708090a0b")),
        _ => Reply::Respond(200, r#"{"ok":true,"delivered":true,"queued":true}"#.into()),
    });
    let r = loop {
        match pd.flush().await {
            Ok(r) => break r,
            Err(e) => assert_eq!(e.kind, CallResult::Busy),
        }
    };
    let posts = f.requests_to("POST", "/api/io");
    let sent: Vec<serde_json::Value> = posts
        .iter()
        .filter(|p| p.status == 200)
        .map(|p| serde_json::from_str(&p.body).unwrap())
        .collect();
    // Either our explicit flush or the background flusher sent it, exactly once.
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0]["offset"], 2);
    assert_eq!(sent[0]["data"], "ee03040506c0ffee00");
    if let Some(r) = r {
        assert!(r.delivered);
    }
    assert!(pd.last_write().await.unwrap().delivered);
}

#[tokio::test]
async fn refused_flush_is_reported_once_and_discarded() {
    let f = Fake::start(|r| match (r.method.as_str(), r.path.as_str()) {
        ("GET", "/api/io") => Reply::Respond(200, io_body("00", "0000")),
        _ => Reply::Respond(
            500,
            r#"{"success":false,"message":"write exploded","errorCode":-1}"#.into(),
        ),
    })
    .await;
    let pd = client(&f.url).process_data();
    pd.set(&addr("IB0"), 7u8).await.unwrap();
    until("a failed flush", || {
        !f.requests_to("POST", "/api/io").is_empty()
    })
    .await;
    // The next call (a read) returns the recorded error.
    let e = loop {
        match pd.get::<u8>(&addr("IB1")).await {
            Err(e) => break e,
            Ok(_) => tokio::time::sleep(Duration::from_millis(2)).await,
        }
    };
    assert_eq!(e.kind, CallResult::NativeError);
    assert_eq!(e.error_code, Some(-1));
    assert!(e.message.contains("write exploded"), "{e}");
    // Reported once; the refused region was dropped (nothing pending to send).
    assert_eq!(pd.get::<u8>(&addr("IB0")).await.unwrap(), 0);
    assert_eq!(pd.flush().await.unwrap(), None);
}

#[tokio::test]
async fn closed_handle_is_invalid_handle() {
    let f = Fake::start(|_| Reply::Respond(200, io_body("00", "00"))).await;
    let pd = client(&f.url).process_data();
    pd.close().await.unwrap();
    assert_eq!(
        pd.read(&addr("IB0")).await.unwrap_err().kind,
        CallResult::InvalidHandle
    );
}

/// The snapshot is reused for 20 ms (counted on the fake: the daemon has no request counter).
#[tokio::test]
async fn snapshot_cache_limits_gets_to_one_per_20_ms() {
    let f = Fake::start(|_| Reply::Respond(200, io_body("0102", "0304"))).await;
    let pd = client(&f.url).process_data();
    let t = std::time::Instant::now();
    for _ in 0..200 {
        assert_eq!(pd.get::<u8>(&addr("QB1")).await.unwrap(), 2);
    }
    let ms = t.elapsed().as_millis() as usize;
    let gets = f.requests_to("GET", "/api/io").len();
    assert!(gets >= 1 && gets <= ms / 20 + 2, "{gets} GETs in {ms} ms");
    // once the TTL has passed, the next read fetches again
    let before = gets;
    let end = tokio::time::Instant::now() + Duration::from_secs(2);
    loop {
        pd.get::<u8>(&addr("IB0")).await.unwrap();
        if f.requests_to("GET", "/api/io").len() > before {
            break;
        }
        assert!(
            tokio::time::Instant::now() < end,
            "no refresh after the TTL"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // invalidate() forces the next read to fetch
    let n = f.requests_to("GET", "/api/io").len();
    pd.invalidate().await;
    pd.get::<u8>(&addr("IB0")).await.unwrap();
    assert_eq!(f.requests_to("GET", "/api/io").len(), n + 1);
}

/// Writes are flushed by the background task without an explicit flush, at most one request per
/// 20 ms period however many writes arrive.
#[tokio::test]
async fn background_flush_at_most_one_post_per_period() {
    let f = Fake::start(|r| match r.method.as_str() {
        "GET" => Reply::Respond(200, io_body("00", "00000000")),
        _ => Reply::Respond(200, r#"{"ok":false,"queued":true}"#.into()),
    })
    .await;
    let pd = client(&f.url).process_data();
    let t = std::time::Instant::now();
    for i in 0..300u32 {
        pd.set(&addr("ID0"), i).await.unwrap();
    }
    let ms = t.elapsed().as_millis() as usize;
    until("background flush of the last value", || {
        f.requests_to("POST", "/api/io")
            .last()
            .is_some_and(|p| p.body.contains("0000012b"))
    })
    .await;
    let posts = f.requests_to("POST", "/api/io").len();
    let total_ms = t.elapsed().as_millis() as usize;
    assert!(
        posts <= total_ms / 20 + 2,
        "{posts} POSTs in {total_ms} ms ({ms} ms writing)"
    );
    assert_eq!(pd.flush().await.unwrap(), None, "nothing left pending");
}

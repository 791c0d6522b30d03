//! The namespace helpers do what the integration tests rely on: isolated loopbacks (the same
//! fixed port bound in two namespaces at once), veth ends visible only in their namespace, link
//! down/up, and cleanup on drop.

use pn_testkit::netns::{NetNs, Veth};
use std::net::TcpListener;

#[test]
fn namespaces_isolate_loopback_and_hold_veth_ends() {
    if !pn_testkit::env::require_root() {
        return;
    }
    let a = NetNs::new("tka").unwrap();
    let b = NetNs::new("tkb").unwrap();
    let veth = Veth::new("tk", &a, &b).unwrap();

    // The same fixed port can be bound in both namespaces: their loopbacks are separate.
    let la = a
        .enter(|| TcpListener::bind("127.0.0.1:18840").map(|_| ()))
        .unwrap();
    let lb = b
        .enter(|| TcpListener::bind("127.0.0.1:18840").map(|_| ()))
        .unwrap();
    assert!(la.is_ok() && lb.is_ok(), "{la:?} {lb:?}");

    // Each end is visible only in its own namespace. (Note: a thread that joined a namespace
    // with setns still sees the host's /sys; interface lookups must go through the kernel, as
    // if_nametoindex does, or through `ip netns exec`, which remounts /sys.)
    let index = |name: String| {
        let c = std::ffi::CString::new(name).unwrap();
        // SAFETY: c is a valid NUL-terminated string.
        unsafe { libc::if_nametoindex(c.as_ptr()) }
    };
    let (va, vb) = (veth.a.clone(), veth.b.clone());
    let (a_sees_a, a_sees_b) = a.enter(move || (index(va) != 0, index(vb) != 0)).unwrap();
    assert!(a_sees_a && !a_sees_b);

    // Link down on one end: the operstate in that namespace follows.
    Veth::set_link(&a, &veth.a, false).unwrap();
    let state = a
        .exec_ok(&["cat", &format!("/sys/class/net/{}/operstate", veth.a)])
        .unwrap();
    assert_eq!(state.trim(), "down");

    let name = a.name().to_string();
    drop(a);
    assert!(!std::path::Path::new(&format!("/var/run/netns/{name}")).exists());
}

#[test]
fn http_response_parsing() {
    let raw = b"HTTP/1.1 404 Not Found\r\ncontent-length: 2\r\nX-A: b\r\n\r\n{}";
    let r = pn_testkit::http::parse_response(raw).unwrap();
    assert_eq!(r.status, 404);
    assert_eq!(r.header("x-a"), Some("b"));
    assert_eq!(r.json(), serde_json::json!({}));
    let chunked =
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n";
    assert_eq!(
        pn_testkit::http::parse_response(chunked).unwrap().body,
        b"abcde"
    );
}

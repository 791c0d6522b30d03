//! `RecvBatch` (many frames per `recvmmsg(2)`) on a real `AF_PACKET` socket: a veth pair
//! between two namespaces, frames sent one by one from one end, read in batches at the other.
//! Needs root (fails under CI=true without it).

use std::time::Duration;

use pn_device::stack::socket::{PnSocket, RecvBatch};
use pn_testkit::netns::Veth;
use pn_testkit::poll;

/// A PROFINET RT frame (the socket's filter passes EtherType 0x8892) of `len` bytes whose
/// bytes 16..18 carry `n`.
fn frame(dst: [u8; 6], src: [u8; 6], n: u16, len: usize) -> Vec<u8> {
    let mut f = vec![0u8; len];
    f[0..6].copy_from_slice(&dst);
    f[6..12].copy_from_slice(&src);
    f[12..14].copy_from_slice(&0x8892u16.to_be_bytes());
    f[14..16].copy_from_slice(&0xc000u16.to_be_bytes());
    f[16..18].copy_from_slice(&n.to_be_bytes());
    f
}

#[test]
fn batches_keep_order_and_length_and_leave_the_rest_queued() {
    if !pn_testkit::env::require_root() {
        return;
    }
    let (a_ns, b_ns, veth) = Veth::controller_device("sbt", None, None).expect("veth");
    let a_nic = veth.a.clone();
    let b_nic = veth.b.clone();
    let tx = a_ns
        .enter(move || PnSocket::open(&a_nic).expect("socket a"))
        .unwrap();
    let rx = b_ns
        .enter(move || PnSocket::open(&b_nic).expect("socket b"))
        .unwrap();
    let mut batch = RecvBatch::new(8, 2048);
    assert_eq!(batch.recv(&rx).unwrap(), 0, "nothing queued yet");
    // 20 frames of different lengths; the batch holds 8.
    let sent: Vec<Vec<u8>> = (0..20u16)
        .map(|n| frame(rx.mac(), tx.mac(), n, 60 + usize::from(n) * 10))
        .collect();
    for f in &sent {
        tx.send(f).expect("send");
    }
    let mut got: Vec<Vec<u8>> = Vec::new();
    let mut calls = 0;
    let all = poll::until(Duration::from_secs(5), || {
        let n = batch.recv(&rx).expect("recvmmsg");
        assert!(n <= 8);
        if n > 0 {
            calls += 1;
        }
        got.extend(batch.frames().map(<[u8]>::to_vec));
        got.len() >= sent.len()
    });
    assert!(all, "received {} of {}", got.len(), sent.len());
    assert_eq!(got, sent, "order, length and bytes as sent");
    assert!(
        calls >= 3,
        "20 frames need at least 3 batches of 8: {calls}"
    );
    // Our own sent frames never come back on the sending socket.
    assert_eq!(batch.recv(&tx).unwrap(), 0);
    drop(veth);
}

#[test]
fn frames_longer_than_the_buffer_are_cut_to_it() {
    if !pn_testkit::env::require_root() {
        return;
    }
    let (a_ns, b_ns, veth) = Veth::controller_device("sbl", None, None).expect("veth");
    let (a_nic, b_nic) = (veth.a.clone(), veth.b.clone());
    let tx = a_ns.enter(move || PnSocket::open(&a_nic).unwrap()).unwrap();
    let rx = b_ns.enter(move || PnSocket::open(&b_nic).unwrap()).unwrap();
    let mut batch = RecvBatch::new(4, 100);
    let long = frame(rx.mac(), tx.mac(), 7, 300);
    tx.send(&long).unwrap();
    let mut got = Vec::new();
    assert!(poll::until(Duration::from_secs(5), || {
        batch.recv(&rx).unwrap();
        got.extend(batch.frames().map(<[u8]>::to_vec));
        !got.is_empty()
    }));
    assert_eq!(got, vec![long[..100].to_vec()]);
    drop(veth);
}

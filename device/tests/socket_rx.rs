//! Reading many frames at once on a real `AF_PACKET` socket: `RecvBatch` (many frames per
//! `recvmmsg(2)`) and `RxRing` (`PACKET_RX_RING`, frames read in place). A veth pair between
//! two namespaces, frames sent one by one from one end, read at the other.
//! Needs root (fails under CI=true without it).

use std::time::Duration;

use pn_device::stack::socket::{PnSocket, RecvBatch, RxRing, FILTER};
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

/// One end of the rig: a socket, with a receive ring of that many slots or none.
struct End {
    sock: PnSocket,
    ring: Option<RxRing>,
}

/// Two namespaces joined by a veth, a socket on each end (`a` sends, `b` receives), each with
/// a receive ring of `Some(slots)` or none.
fn pair(tag: &str, a_ring: Option<usize>, b_ring: Option<usize>) -> (End, End, Veth) {
    let (a_ns, b_ns, veth) = Veth::controller_device(tag, None, None).expect("veth");
    let open = |ns: &pn_testkit::netns::NetNs, nic: String, ring: Option<usize>| {
        ns.enter(move || match ring {
            Some(n) => {
                let (sock, r) = PnSocket::open_with_ring(&nic, &FILTER, n).expect("ring");
                End {
                    sock,
                    ring: Some(r),
                }
            }
            None => End {
                sock: PnSocket::open(&nic).expect("socket"),
                ring: None,
            },
        })
        .unwrap()
    };
    let a = open(&a_ns, veth.a.clone(), a_ring);
    let b = open(&b_ns, veth.b.clone(), b_ring);
    (a, b, veth)
}

#[test]
fn batches_keep_order_and_length_and_leave_the_rest_queued() {
    if !pn_testkit::env::require_root() {
        return;
    }
    let (End { sock: tx, .. }, End { sock: rx, .. }, veth) = pair("sbt", None, None);
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
    let (End { sock: tx, .. }, End { sock: rx, .. }, veth) = pair("sbl", None, None);
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

/// `has_queued` (the cyclic thread's question before it counts a cycle without a frame, decisions
/// §37) answers for a real packet socket: no before a frame arrives, yes while it waits unread,
/// no again once it has been read.
#[test]
fn a_queued_frame_is_seen_until_it_is_read() {
    if !pn_testkit::env::require_root() {
        return;
    }
    let (End { sock: tx, .. }, End { sock: rx, .. }, veth) = pair("sbq", None, None);
    assert!(!rx.has_queued(), "nothing sent yet");
    let f = frame(rx.mac(), tx.mac(), 3, 80);
    tx.send(&f).unwrap();
    assert!(
        poll::until(Duration::from_secs(5), || rx.has_queued()),
        "the frame never showed as queued"
    );
    let mut buf = vec![0u8; 1600];
    let n = rx
        .recv(&mut buf, Some(Duration::from_secs(1)))
        .unwrap()
        .expect("the queued frame");
    assert_eq!(&buf[..n], &f[..]);
    assert!(!rx.has_queued(), "read: nothing left");
    drop(veth);
}

// ------------------------------------------------------------------ the receive ring

/// An 802.1Q-tagged RT frame of `len` bytes (1518 bytes without the FCS is the longest a 1500-byte MTU
/// lets through) whose bytes 20..22 carry `n`.
fn tagged(dst: [u8; 6], src: [u8; 6], n: u16, len: usize) -> Vec<u8> {
    let mut f = frame(dst, src, 0, len);
    f[12..14].copy_from_slice(&0x8100u16.to_be_bytes());
    f[14..16].copy_from_slice(&0xc000u16.to_be_bytes()); // priority 6, VLAN 0
    f[16..18].copy_from_slice(&0x8892u16.to_be_bytes());
    f[18..20].copy_from_slice(&0xc000u16.to_be_bytes());
    f[20..22].copy_from_slice(&n.to_be_bytes());
    f
}

/// Read from `ring` until `want` frames arrived (at most `max` per read), or 5 s.
fn read_until(ring: &mut RxRing, want: usize, max: usize) -> Vec<Vec<u8>> {
    let mut got: Vec<Vec<u8>> = Vec::new();
    poll::until(Duration::from_secs(5), || {
        let n = ring.read(max, |f| got.push(f.to_vec()));
        assert!(n <= max, "a read takes at most {max} slots: {n}");
        got.len() >= want
    });
    got
}

/// A plain socket sending to a ring of `slots`.
fn rig(tag: &str, slots: usize) -> (PnSocket, PnSocket, RxRing, Veth) {
    let (a, b, veth) = pair(tag, None, Some(slots));
    (a.sock, b.sock, b.ring.expect("ring"), veth)
}

#[test]
fn the_ring_keeps_order_length_and_bytes_across_its_wrap() {
    if !pn_testkit::env::require_root() {
        return;
    }
    let (tx, rx, mut ring, veth) = rig("srw", 4);
    assert_eq!(ring.slots(), 4, "4 slots of 2 KiB: two pages");
    assert_eq!(ring.read(8, |_| panic!("nothing sent yet")), 0);
    assert!(!ring.ready());
    // Three rounds of three frames through four slots: the ring wraps twice; the lengths
    // run up to the longest tagged frame (1518 bytes without FCS), which must arrive whole.
    for round in 0..3u16 {
        let sent: Vec<Vec<u8>> = (0..3u16)
            .map(|k| {
                let n = round * 3 + k;
                match k {
                    0 => frame(rx.mac(), tx.mac(), n, 60),
                    1 => frame(rx.mac(), tx.mac(), n, 1514),
                    _ => tagged(rx.mac(), tx.mac(), n, 1518),
                }
            })
            .collect();
        for f in &sent {
            tx.send(f).expect("send");
        }
        // Two per read: the bound holds, and the third frame waits for the next read.
        let got = read_until(&mut ring, sent.len(), 2);
        // The veth takes the 802.1Q tag off into the frame's metadata (VLAN offload), as a
        // NIC with VLAN offload does: the frame arrives untagged, as with recvmmsg.
        let mut want = sent.clone();
        want[2].drain(12..16);
        let lens: Vec<usize> = got.iter().map(Vec::len).collect();
        assert_eq!(lens, [60, 1514, 1514], "round {round}: lengths");
        assert!(got == want, "round {round}: order and bytes as sent");
    }
    assert_eq!(ring.bad_slots(), 0);
    assert_eq!(rx.statistics().unwrap().drops, 0);
    drop(veth);
}

#[test]
fn a_full_ring_drops_the_newest_counts_them_and_goes_on() {
    if !pn_testkit::env::require_root() {
        return;
    }
    let (tx, rx, mut ring, veth) = rig("srf", 4);
    let sent: Vec<Vec<u8>> = (0..10u16)
        .map(|n| frame(rx.mac(), tx.mac(), n, 100))
        .collect();
    for f in &sent {
        tx.send(f).expect("send");
    }
    // The kernel queues the first four and drops the six that find no free slot.
    let mut drops = 0;
    assert!(
        poll::until(Duration::from_secs(5), || {
            drops += rx.statistics().unwrap().drops;
            drops >= 6
        }),
        "drops counted: {drops}"
    );
    assert_eq!(drops, 6);
    let got = read_until(&mut ring, 4, 16);
    assert_eq!(got, sent[..4].to_vec(), "the oldest four, in order");
    // Slots handed back are used again.
    let later = frame(rx.mac(), tx.mac(), 99, 64);
    tx.send(&later).unwrap();
    assert_eq!(read_until(&mut ring, 1, 16), vec![later]);
    drop(veth);
}

#[test]
fn own_frames_and_filtered_frames_stay_out_of_the_ring() {
    if !pn_testkit::env::require_root() {
        return;
    }
    let (a, b, veth) = pair("sro", Some(8), Some(8));
    let (tx, mut tx_ring) = (a.sock, a.ring.expect("ring"));
    let (rx, mut ring) = (b.sock, b.ring.expect("ring"));
    let mut ipv6 = frame(rx.mac(), tx.mac(), 1, 80);
    ipv6[12..14].copy_from_slice(&0x86ddu16.to_be_bytes());
    let rt = frame(rx.mac(), tx.mac(), 2, 80);
    tx.send(&ipv6).unwrap();
    tx.send(&rt).unwrap();
    // The RT frame arrives; the IPv6 frame sent before it never does (the filter).
    assert_eq!(read_until(&mut ring, 1, 16), vec![rt]);
    assert_eq!(ring.read(16, |_| {}), 0);
    // The sender's own ring saw neither of its frames.
    assert_eq!(tx_ring.read(16, |_| {}), 0);
    drop(veth);
}

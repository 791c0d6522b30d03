//! How long reading a backlog of queued frames takes: the receive ring (`RxRing`) against
//! `recvmmsg(2)` batches (`RecvBatch`, 64 a call), on a veth pair between two namespaces.
//! The situation it measures is pn-farm's after a hold of its CPU: a few hundred frames
//! queued, every device waiting for the loop (docs/benchmarks.md, decisions §34).
//!
//! ```sh
//! cargo build --release -p pn-device --example rx_backlog
//! sudo target/release/examples/rx_backlog --rounds 500
//! ```
//! Needs root (namespaces, raw sockets). Per round: N frames are sent and counted into the
//! receiving socket (`PACKET_STATISTICS`), then read and their first bytes summed; only the
//! reading is timed.

use std::time::{Duration, Instant};

use clap::Parser;
use pn_device::stack::socket::{PnSocket, RecvBatch, RxRing, FILTER};
use pn_testkit::netns::Veth;

#[derive(Parser)]
struct Args {
    /// Rounds per backlog size and mode.
    #[arg(long, default_value_t = 300)]
    rounds: usize,
    /// Backlog sizes (frames queued before a read).
    #[arg(long, value_delimiter = ',', default_value = "64,256")]
    backlog: Vec<usize>,
    /// Frame length (bytes; a 64-device farm's cyclic frames are 60-100).
    #[arg(long, default_value_t = 64)]
    len: usize,
}

enum Rx {
    Ring(RxRing),
    Mmsg(RecvBatch),
}

fn frame(dst: [u8; 6], src: [u8; 6], n: u16, len: usize) -> Vec<u8> {
    let mut f = vec![0u8; len.max(18)];
    f[0..6].copy_from_slice(&dst);
    f[6..12].copy_from_slice(&src);
    f[12..14].copy_from_slice(&0x8892u16.to_be_bytes());
    f[14..16].copy_from_slice(&0xc000u16.to_be_bytes());
    f[16..18].copy_from_slice(&n.to_be_bytes());
    f
}

/// Wait until `n` frames have been queued to `sock` (the kernel's count, reset by each read).
fn queued(sock: &PnSocket, n: u64) -> Result<(), String> {
    let (mut got, t0) = (0, Instant::now());
    while got < n {
        let st = sock.statistics().map_err(|e| e.to_string())?;
        if st.drops > 0 {
            return Err(format!(
                "{} frames dropped: the backlog does not fit",
                st.drops
            ));
        }
        got += st.packets;
        if t0.elapsed() > Duration::from_secs(5) {
            return Err(format!("{got} of {n} frames queued after 5 s"));
        }
    }
    Ok(())
}

fn percentile(v: &mut [u64], p: f64) -> f64 {
    v.sort_unstable();
    let i = ((v.len() as f64 - 1.0) * p).round() as usize;
    v[i] as f64 / 1000.0
}

fn main() -> Result<(), String> {
    let a = Args::parse();
    let max = a.backlog.iter().copied().max().unwrap_or(64);
    println!(
        "| mode | backlog | frames of {} B | read p50 / p99 / max (us) | per frame p50 (ns) |",
        a.len
    );
    println!("|---|---|---|---|---|");
    for mode in ["ring", "mmsg"] {
        let (tx_ns, rx_ns, veth) = Veth::controller_device("rxb", None, None)?;
        let (a_nic, b_nic) = (veth.a.clone(), veth.b.clone());
        let tx = tx_ns
            .enter(move || PnSocket::open(&a_nic))?
            .map_err(|e| e.reason)?;
        let ring = mode == "ring";
        let (sock, mut rx) = rx_ns
            .enter(move || {
                if ring {
                    PnSocket::open_with_ring(&b_nic, &FILTER, 2 * max)
                        .map(|(s, r)| (s, Rx::Ring(r)))
                } else {
                    PnSocket::open_with_filter(&b_nic, &FILTER)
                        .map(|s| (s, Rx::Mmsg(RecvBatch::new(64, 2048))))
                }
            })?
            .map_err(|e| e.reason)?;
        sock.statistics().map_err(|e| e.to_string())?;
        for &n in &a.backlog {
            let frames: Vec<Vec<u8>> = (0..n)
                .map(|k| frame(sock.mac(), tx.mac(), k as u16, a.len))
                .collect();
            let mut times = Vec::with_capacity(a.rounds);
            for _ in 0..a.rounds {
                for f in &frames {
                    tx.send(f).map_err(|e| e.to_string())?;
                }
                queued(&sock, n as u64)?;
                let mut sum = 0u64;
                let mut read = 0;
                let t0 = Instant::now();
                match &mut rx {
                    Rx::Ring(r) => {
                        read = r.read(n, |f| sum += u64::from(f[17]));
                    }
                    Rx::Mmsg(b) => {
                        while read < n {
                            let k = b.recv(&sock).map_err(|e| e.to_string())?;
                            if k == 0 {
                                break;
                            }
                            read += k;
                            b.frames().for_each(|f| sum += u64::from(f[17]));
                        }
                    }
                }
                times.push(t0.elapsed().as_nanos() as u64);
                if read != n || sum == u64::MAX {
                    return Err(format!("{mode}: read {read} of {n}"));
                }
            }
            let p50 = percentile(&mut times, 0.5);
            println!(
                "| {mode} | {n} | {} | {p50:.1} / {:.1} / {:.1} | {:.0} |",
                a.len,
                percentile(&mut times, 0.99),
                percentile(&mut times, 1.0),
                p50 * 1000.0 / n as f64
            );
        }
        drop(veth);
    }
    Ok(())
}

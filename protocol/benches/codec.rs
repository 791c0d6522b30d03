//! Micro-benchmarks of the codec hot paths (criterion): the cyclic frame build and parse of the
//! real-time paths, and the DCP and DCE/RPC parsers, on real captured frames
//! (`pn_testkit::fixtures`, the copies kept in `protocol/tests/fixtures/real-frames`). Run with `cargo bench -p pn-protocol --bench codec`; figures in
//! `docs/benchmarks.md`. Not a test: nothing here asserts timing.

use criterion::{black_box, criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use pn_protocol::wire::dcp::DcpRepr;
use pn_protocol::wire::ethernet::{ethertype, EthernetRepr, MacAddr};
use pn_protocol::wire::ip::UdpFrame;
use pn_protocol::wire::pnio::cm::ConnectRequest;
use pn_protocol::wire::rpc::{PnioRequest, RpcPacket};
use pn_protocol::wire::rt::{
    self, fill_cyclic_frame, ApduStatus, CyclicFrame, DataStatus, FrameId,
};
use pn_protocol::wire::Emit;

fn fixture(name: &str) -> Vec<u8> {
    pn_testkit::fixtures::by_name(&format!("{name}.hex"))
        .unwrap_or_else(|| panic!("fixture {name} missing"))
        .bytes
}

fn cyclic(c: &mut Criterion) {
    let eth = EthernetRepr {
        dst: MacAddr([0x02, 0, 0, 0, 0, 1]),
        src: MacAddr([0x02, 0, 0, 0, 0, 2]),
        vlan: None,
        ethertype: ethertype::PROFINET,
    };
    let status = ApduStatus {
        cycle_counter: 0x1234,
        data_status: DataStatus::new(true, true, true, true),
        transfer_status: 0,
    };
    let mut g = c.benchmark_group("cyclic");
    for len in [40usize, 256, 1440] {
        let data = vec![0x5Au8; len];
        let mut buf = vec![0u8; 1600];
        g.throughput(Throughput::Bytes(len as u64));
        g.bench_function(format!("build_frame_{len}"), |b| {
            b.iter(|| {
                fill_cyclic_frame(
                    black_box(&mut buf),
                    &eth,
                    FrameId(0x8001),
                    black_box(&data),
                    status,
                )
                .expect("build")
            })
        });
        // Parse what was built: header, FrameID, C_SDU with the known length, APDU status,
        // and the copy of the data out of the frame (what the consumer does per frame).
        let n = fill_cyclic_frame(&mut buf, &eth, FrameId(0x8001), &data, status).expect("build");
        let frame = buf[..n].to_vec();
        let mut out = vec![0u8; len];
        g.bench_function(format!("parse_frame_{len}"), |b| {
            b.iter(|| {
                let (e, id, _) = rt::parse_rt_frame(black_box(&frame)).expect("parse");
                let f = CyclicFrame::with_c_sdu_len(&frame[e.header_len()..], len.max(40))
                    .expect("cyclic");
                let st = f.apdu_status();
                out.copy_from_slice(&f.c_sdu()[..len]);
                (id, st.cycle_counter)
            })
        });
    }
    // A real frame (S7-1500 output frame to p-net).
    let real = fixture("pniors-rtc1-8001-s7");
    g.throughput(Throughput::Elements(1));
    g.bench_function("parse_real_s7_frame", |b| {
        b.iter(|| {
            let (e, id, _) = rt::parse_rt_frame(black_box(&real)).expect("parse");
            let f = CyclicFrame::new_checked(&real[e.header_len()..]).expect("cyclic");
            (id, f.apdu_status().cycle_counter)
        })
    });
    g.finish();
}

fn dcp(c: &mut Criterion) {
    let mut g = c.benchmark_group("dcp");
    for name in [
        "icsnpp-dcp-ident-req-name-phoenix",
        "icsnpp-dcp-ident-res-versamax",
        "pniors-dcp-ident-res-pnet",
    ] {
        let f = fixture(name);
        g.throughput(Throughput::Bytes(f.len() as u64));
        g.bench_function(format!("parse_frame/{name}"), |b| {
            b.iter(|| DcpRepr::parse_frame(black_box(&f)).expect("dcp"))
        });
        let (_, _, repr) = DcpRepr::parse_frame(&f).expect("dcp");
        g.bench_function(format!("emit/{name}"), |b| {
            b.iter_batched(|| repr.clone(), |r| r.to_bytes(), BatchSize::SmallInput)
        });
    }
    g.finish();
}

fn rpc(c: &mut Criterion) {
    let mut g = c.benchmark_group("rpc");
    for name in [
        "icsnpp-connect-req-phoenix",
        "icsnpp-connect-req-siemens-srinfo-arfsu",
    ] {
        let f = fixture(name);
        g.throughput(Throughput::Bytes(f.len() as u64));
        // Ethernet/IPv4/UDP (with checksums) -> DCE/RPC header -> PNIO request -> Connect blocks.
        g.bench_function(format!("parse_connect/{name}"), |b| {
            b.iter(|| {
                let u = UdpFrame::parse(black_box(&f)).expect("udp");
                let p = RpcPacket::parse(u.payload).expect("rpc");
                let req = PnioRequest::parse(&p.body, p.header.drep).expect("pnio");
                ConnectRequest::parse(&req.data).expect("connect")
            })
        });
        g.bench_function(format!("parse_rpc_header/{name}"), |b| {
            b.iter(|| {
                let u = UdpFrame::parse(black_box(&f)).expect("udp");
                RpcPacket::parse(u.payload).expect("rpc")
            })
        });
    }
    g.finish();
}

criterion_group!(benches, cyclic, dcp, rpc);
criterion_main!(benches);

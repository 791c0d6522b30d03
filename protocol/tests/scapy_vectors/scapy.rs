//! The scapy side (`tests/scapy/pn_scapy.py`): whether it is installed, having it build or
//! dissect a frame, reading the fields of its JSON layers, and the frame helpers shared by both
//! directions.

use pn_protocol::wire::ethernet::MacAddr;
use pn_protocol::wire::ip::{udp_frame, UdpFrame};
use pn_protocol::wire::rpc::{Drep, PnioRequest, RpcHeader, RpcPacket, Uuid};
use pn_protocol::wire::Emit;
use serde_json::Value;
use std::io::Write;
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::str::FromStr;

pub(crate) fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/scapy/pn_scapy.py")
}

/// True when python3 with scapy (and its PROFINET contrib layers) is installed. Looked up with
/// `find_spec` instead of importing them: importing scapy costs about a second of CPU, and every
/// test of this binary runs this check in a process of its own (nextest); a broken installation
/// still fails the test at the script's own import.
pub(crate) fn has_scapy() -> bool {
    Command::new("python3")
        .args([
            "-c",
            "import importlib.util as u, sys; sys.exit(0 if all(u.find_spec(m) for m in \
             ['scapy', 'scapy.contrib.pnio', 'scapy.contrib.pnio_dcp', 'scapy.contrib.pnio_rpc', \
             'scapy.contrib.lldp']) else 1)",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

/// `pn_testkit::env::require` semantics: under CI=true a missing scapy panics, locally the test
/// is skipped with a message.
pub(crate) fn require_scapy() -> bool {
    pn_testkit::env::require(
        has_scapy(),
        "python3 with scapy >= 2.5 (pip install -r ci/requirements.txt)",
    )
}

/// Have scapy build `kind` from `params`; returns the frame bytes.
pub(crate) fn scapy_build(kind: &str, params: Value) -> Vec<u8> {
    let out = Command::new("python3")
        .arg(script())
        .args(["build", kind, &params.to_string()])
        .output()
        .expect("run python3");
    assert!(
        out.status.success(),
        "scapy build {kind} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    hex::decode(String::from_utf8_lossy(&out.stdout).trim()).expect("scapy printed hex")
}

/// Have scapy dissect `frame`; returns its layer list.
pub(crate) fn scapy_dissect(frame: &[u8]) -> Vec<Value> {
    let mut child = Command::new("python3")
        .arg(script())
        .arg("dissect")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run python3");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(hex::encode(frame).as_bytes())
        .expect("write hex");
    let out = child.wait_with_output().expect("scapy dissect");
    assert!(
        out.status.success(),
        "scapy dissect failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    match serde_json::from_slice(&out.stdout).expect("scapy printed JSON") {
        Value::Array(v) => v,
        other => panic!("unexpected scapy output {other}"),
    }
}

/// The fields of the first layer named `name`.
pub(crate) fn layer<'a>(layers: &'a [Value], name: &str) -> &'a Value {
    layers
        .iter()
        .find(|l| l["layer"] == name)
        .map(|l| &l["fields"])
        .unwrap_or_else(|| panic!("scapy found no {name} layer in {layers:?}"))
}

pub(crate) fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not an integer: {v}"))
}

/// A scapy bytes value (printed as hex) as text.
pub(crate) fn text(v: &Value) -> String {
    let h = v.as_str().unwrap_or_else(|| panic!("not a string: {v}"));
    String::from_utf8(hex::decode(h).expect("hex")).expect("utf-8")
}

pub(crate) fn mac(s: &str) -> [u8; 6] {
    let mut m = [0u8; 6];
    for (i, p) in s.split(':').enumerate() {
        m[i] = u8::from_str_radix(p, 16).expect("mac");
    }
    m
}

pub(crate) const SRC: MacAddr = MacAddr([0x02, 0, 0, 0, 0, 0x01]);
pub(crate) const DST: MacAddr = MacAddr([0x02, 0, 0, 0, 0, 0x02]);
pub(crate) const AR_UUID: &str = "7c74224e-166c-4a58-bf6b-6c25a75870f0";
pub(crate) const CM_OBJECT_UUID: &str = "dea00000-6c97-11d1-8271-0001003c00b0";
/// The RPC request in a UDP frame: header, parsed PNIO request.
pub(crate) fn rpc_request_of(frame: &[u8]) -> (RpcHeader, PnioRequest) {
    let udp = UdpFrame::parse(frame).expect("UDP frame");
    assert!(udp.ip_checksum_ok && udp.udp_checksum_ok);
    let p = RpcPacket::parse(udp.payload).expect("RPC packet");
    let req = PnioRequest::parse(&p.body, p.header.drep).expect("PNIO request");
    (p.header, req)
}
pub(crate) fn dcp_fields(frame: &[u8]) -> (Vec<Value>, Value) {
    let layers = scapy_dissect(frame);
    let d = layer(&layers, "ProfinetDCP").clone();
    (layers, d)
}
pub(crate) fn our_rpc_frame(op: u16, drep: Drep, ndr: Vec<u8>) -> Vec<u8> {
    let h = RpcHeader::request(
        drep,
        Uuid::from_str("dea00000-6c97-11d1-8271-000100010001").unwrap(),
        pn_protocol::wire::rpc::PNIO_DEVICE_INTERFACE,
        Uuid::from_str("11223344-5566-7788-99aa-bbccddeeff00").unwrap(),
        7,
        op,
    );
    let body = PnioRequest::new(16696, ndr)
        .ndr(drep)
        .to_bytes()
        .expect("NDR");
    let pkt = RpcPacket::new(h, body).to_bytes().expect("RPC");
    udp_frame(
        SRC.0,
        DST.0,
        Ipv4Addr::new(192, 168, 0, 1),
        Ipv4Addr::new(192, 168, 0, 2),
        0xC001,
        0x8894,
        &pkt,
    )
    .expect("UDP frame")
}
pub(crate) fn blocks_of(layers: &[Value]) -> Vec<Value> {
    layer(layers, "PNIOServiceReqPDU")["blocks"]
        .as_array()
        .expect("blocks")
        .clone()
}

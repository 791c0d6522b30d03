//! Fault injection settings of an AR (for device tests). Every field defaults to "behave".

use std::time::Duration;

/// How the controller answers the device's ApplicationReady.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub enum AppReadyFault {
    #[default]
    Normal,
    /// Answer after this delay.
    Delay(Duration),
    /// Never answer.
    Drop,
}

/// How the controller acknowledges alarms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub enum AlarmAckFault {
    /// Transport ACK and AlarmAck at once.
    #[default]
    Normal,
    /// Transport ACK at once, AlarmAck after this delay.
    Delay(Duration),
    /// Transport ACK, but never an AlarmAck.
    Never,
    /// Neither transport ACK nor AlarmAck (the device's RTA retransmits, then gives up).
    NoTransportAck,
}

/// Faults applied by the cyclic provider and the acyclic paths of one AR.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct Faults {
    /// Stop sending output frames (the device's data-hold watchdog must trip). The controller
    /// then acts as gone: its own consumer watchdog is not judged meanwhile, so it does not end
    /// the AR first.
    pub stop_outputs: bool,
    /// DataStatus ProviderState = STOP.
    pub provider_stop: bool,
    /// DataStatus DataValid = 0.
    pub data_invalid: bool,
    /// Send every IOPS as BAD.
    pub bad_iops: bool,
    /// Send the output frames with this FrameID instead of the agreed one.
    pub frame_id_override: Option<u16>,
    /// Send every output frame twice (same CycleCounter).
    pub duplicate_frames: bool,
    /// Send truncated frames instead of the output frames.
    pub corrupt_frames: bool,
    pub app_ready: AppReadyFault,
    pub alarm_ack: AlarmAckFault,
    /// Send no output frame before this long after the ApplicationReady exchange (profinet-py
    /// starts its provider some 30 ms after it; an S7 right after the Connect response).
    pub first_output_after_app_ready: Option<Duration>,
}

/// Malformed DCP requests (complete Ethernet frames from `src`), each with a label. A robust
/// device ignores all of them (it may count them as invalid).
pub fn malformed_dcp_frames(src: [u8; 6]) -> Vec<(&'static str, Vec<u8>)> {
    let hdr = |dst: [u8; 6], fid: u16| {
        let mut f = Vec::new();
        f.extend_from_slice(&dst);
        f.extend_from_slice(&src);
        f.extend_from_slice(&[0x88, 0x92]);
        f.extend_from_slice(&fid.to_be_bytes());
        f
    };
    let mc = [0x01, 0x0e, 0xcf, 0x00, 0x00, 0x00];
    let mut out = Vec::new();
    // Identify with DCPDataLength far beyond the frame.
    let mut f = hdr(mc, 0xFEFE);
    f.extend_from_slice(&[
        0x05, 0x00, 0, 0, 0, 1, 0x00, 0x01, 0xFF, 0xFF, 0xFF, 0xFF, 0x00, 0x00,
    ]);
    out.push(("identify: DCPDataLength too large", f));
    // Identify with a block length running past the data.
    let mut f = hdr(mc, 0xFEFE);
    f.extend_from_slice(&[
        0x05, 0x00, 0, 0, 0, 2, 0x00, 0x01, 0x00, 0x08, 0x02, 0x02, 0x00, 0x40, b'a', b'b',
    ]);
    out.push(("identify: block length past the end", f));
    // A partial block header inside DCPDataLength.
    let mut f = hdr(mc, 0xFEFE);
    f.extend_from_slice(&[
        0x05, 0x00, 0, 0, 0, 3, 0x00, 0x01, 0x00, 0x03, 0xFF, 0xFF, 0x00,
    ]);
    out.push(("identify: partial block header", f));
    // Unknown service id.
    let mut f = hdr(mc, 0xFEFE);
    f.extend_from_slice(&[
        0x7F, 0x00, 0, 0, 0, 4, 0x00, 0x01, 0x00, 0x04, 0xFF, 0xFF, 0x00, 0x00,
    ]);
    out.push(("identify: unknown ServiceID", f));
    // Set NameOfStation with an invalid name (upper case, 300 bytes), broadcast.
    let mut f = hdr([0xff; 6], 0xFEFD);
    let name = vec![b'X'; 300];
    let blen = (2 + name.len()) as u16;
    let dlen = 4 + blen as usize + (blen as usize & 1);
    f.extend_from_slice(&[0x04, 0x00, 0, 0, 0, 5, 0x00, 0x00]);
    f.extend_from_slice(&(dlen as u16).to_be_bytes());
    f.extend_from_slice(&[0x02, 0x02]);
    f.extend_from_slice(&blen.to_be_bytes());
    f.extend_from_slice(&[0x00, 0x00]);
    f.extend_from_slice(&name);
    if blen & 1 == 1 {
        f.push(0);
    }
    out.push(("set: invalid NameOfStation", f));
    // Get with zero-length block list but DCPDataLength odd.
    let mut f = hdr([0xff; 6], 0xFEFD);
    f.extend_from_slice(&[0x03, 0x00, 0, 0, 0, 6, 0x00, 0x00, 0x00, 0x03, 0x02]);
    out.push(("get: odd DCPDataLength", f));
    for (_, f) in out.iter_mut() {
        if f.len() < 60 {
            f.resize(60, 0);
        }
    }
    out
}

/// Malformed PNIO-CM (DCE/RPC over UDP) payloads, each with a label.
pub fn malformed_rpc_payloads() -> Vec<(&'static str, Vec<u8>)> {
    let mut out = Vec::new();
    out.push(("empty datagram", Vec::new()));
    out.push((
        "short header",
        vec![0x04, 0x00, 0x20, 0x00, 0x10, 0x00, 0x00],
    ));
    // A CL header claiming a 60000-byte body with none present.
    let mut h = vec![0u8; 80];
    h[0] = 4; // version
    h[1] = 0; // request
    h[2] = 0x20;
    h[4] = 0x10; // little endian
    h[68] = 0; // opnum connect
    h[74] = 0x60;
    h[75] = 0xEA; // fragment length 60000 (LE)
    out.push(("fragment length beyond datagram", h.clone()));
    // Version 5.
    let mut v5 = h.clone();
    v5[0] = 5;
    v5[74] = 0;
    v5[75] = 0;
    out.push(("RPC version 5", v5));
    // Connect whose NDR ArgsLength exceeds the body.
    let mut c = h.clone();
    let body: Vec<u8> = [1000u32, 5000, 1000, 0, 5000]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    c[74] = body.len() as u8;
    c[75] = 0;
    c.extend_from_slice(&body);
    out.push(("connect: NDR length beyond body", c));
    // Connect with garbage blocks.
    let mut g = h;
    let blocks = [0x01u8, 0x01, 0xFF, 0xF0, 0x01, 0x00, 0xAA, 0xBB];
    let mut body: Vec<u8> = [1000u32, 8, 1000, 0, 8]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    body.extend_from_slice(&blocks);
    g[74] = body.len() as u8;
    g[75] = 0;
    g.extend_from_slice(&body);
    out.push(("connect: block length beyond data", g));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn malformed_inputs_are_rejected_by_our_own_codec() {
        for (what, f) in malformed_dcp_frames([2, 0, 0, 0, 0, 1]) {
            let r = pn_protocol::wire::dcp::DcpRepr::parse_frame(&f);
            let bad = match &r {
                Err(_) => true,
                Ok((_, _, d)) => d
                    .name_of_station()
                    .is_some_and(|n| pn_protocol::wire::dcp::NameOfStation::from_bytes(n).is_err()),
            };
            assert!(bad, "{what} parsed as valid: {r:?}");
        }
        for (what, p) in malformed_rpc_payloads() {
            let ok = pn_protocol::wire::rpc::RpcPacket::parse(&p).and_then(|pk| {
                pn_protocol::wire::rpc::PnioRequest::parse(&pk.body, pk.header.drep).and_then(|r| {
                    pn_protocol::wire::pnio::block::blocks(&r.data).try_for_each(|b| b.map(|_| ()))
                })
            });
            assert!(ok.is_err(), "{what} parsed as valid");
        }
    }
}

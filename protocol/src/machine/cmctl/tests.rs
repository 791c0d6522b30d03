//! The CMCTL machine in simulated time against a scripted device whose every datagram is
//! built with this crate's codecs.

use std::net::{Ipv4Addr, SocketAddrV4};

use super::*;
use crate::wire::pnio::block::blocks;
use crate::wire::pnio::cm::tests::{sample_connect_request, sample_connect_response};
use crate::wire::pnio::cm::ConnectRequest;
use crate::wire::pnio::control::block_type;
use crate::wire::rpc::{Drep, PnioRequest, RpcHeader};

const DEV_IP: Ipv4Addr = Ipv4Addr::new(192, 168, 7, 2);
const DEV_SERVER: SocketAddrV4 = SocketAddrV4::new(DEV_IP, 34964);
/// The device's RPC client port, which its ApplicationReady leaves from.
const DEV_CLIENT: SocketAddrV4 = SocketAddrV4::new(DEV_IP, 49153);
const T0: Instant = Instant(1_000_000_000);

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn config(parameters: Vec<(RecordAddress, Vec<u8>)>) -> CmctlConfig {
    let req = sample_connect_request();
    CmctlConfig {
        ar_uuid: req.ar.ar_uuid,
        session_key: req.ar.session_key,
        device: DEV_SERVER,
        object: Uuid::pnio_object(1, 0x0002, 0x0493),
        activity: Uuid([0xAC; 16]),
        device_mac: MacAddr::ZERO,
        connect_request: req.to_bytes().unwrap(),
        parameters,
        first_record_seq: 1,
        rpc: RpcClientConfig::default(),
        app_ready_timeout: ms(10_000),
    }
}

fn two_parameters() -> Vec<(RecordAddress, Vec<u8>)> {
    vec![
        (RecordAddress::new(0, 1, 1, 123), vec![0, 0, 0, 1]),
        (RecordAddress::new(0, 1, 1, 124), vec![0, 0, 0, 2]),
    ]
}

/// The one datagram the machine has to send now (a call's request to the device's server).
fn one_request(m: &mut Cmctl) -> (RpcPacket, PnioRequest) {
    let d = m.poll_transmit().expect("a request");
    assert!(m.poll_transmit().is_none(), "exactly one datagram");
    assert_eq!(
        (d.to, d.via, d.kind),
        (DEV_SERVER, Via::Client, DatagramKind::Call)
    );
    let p = RpcPacket::parse(&d.bytes).unwrap();
    assert_eq!(p.header.packet_type, PacketType::Request);
    let r = PnioRequest::parse(&p.body, p.header.drep).unwrap();
    (p, r)
}

/// The device's answer to `p` with `status` and NDR `data`.
fn answer(p: &RpcPacket, req: &PnioRequest, status: PnioStatus, data: Vec<u8>) -> Vec<u8> {
    let resp = PnioResponse::to_request(req, status, data);
    RpcPacket::new(
        RpcHeader::response_to(&p.header),
        resp.ndr(p.header.drep).to_bytes().unwrap(),
    )
    .to_bytes()
    .unwrap()
}

/// The device's ApplicationReady for the sample AR, call `seq` of its own activity.
fn app_ready(seq: u32) -> Vec<u8> {
    let ar = sample_connect_request().ar;
    let mut w = Writer::new();
    ControlBlock::application_ready_req(ar.ar_uuid, ar.session_key)
        .emit(&mut w)
        .unwrap();
    let h = RpcHeader::request(
        Drep::LITTLE_ENDIAN,
        ar.cm_initiator_object_uuid,
        rpc::PNIO_CONTROLLER_INTERFACE,
        Uuid([0xDE; 16]),
        seq,
        rpc::opnum::CONTROL,
    );
    let body = PnioRequest::new(256, w.into_inner())
        .ndr(Drep::LITTLE_ENDIAN)
        .to_bytes()
        .unwrap();
    RpcPacket::new(h, body).to_bytes().unwrap()
}

/// The status and first block type of the machine's answer to an ApplicationReady.
fn app_ready_answer(m: &mut Cmctl) -> (PnioStatus, Option<u16>) {
    let d = m.poll_transmit().expect("an answer");
    assert!(m.poll_transmit().is_none());
    assert_eq!(
        (d.to, d.via, d.kind),
        (
            DEV_CLIENT,
            Via::Server,
            DatagramKind::ApplicationReadyResponse
        )
    );
    let p = RpcPacket::parse(&d.bytes).unwrap();
    assert_eq!(p.header.packet_type, PacketType::Response);
    let r = PnioResponse::parse(&p.body, p.header.drep).unwrap();
    let bt = blocks(&r.data).next().map(|b| b.unwrap().block_type());
    (r.status, bt)
}

fn events(m: &mut Cmctl) -> Vec<CmctlEvent> {
    std::iter::from_fn(|| m.poll_event()).collect()
}

fn control_type(req: &PnioRequest) -> u16 {
    blocks(&req.data).next().unwrap().unwrap().block_type()
}

/// Connect and parameter Write answered positively: the machine sends PrmEnd and waits for
/// its response.
fn up_to_prm_end(m: &mut Cmctl, now: Instant) -> (RpcPacket, PnioRequest) {
    let (p, r) = one_request(m);
    let creq = ConnectRequest::parse(&r.data).unwrap();
    let cres = sample_connect_response(&creq).to_bytes().unwrap();
    m.handle_datagram(now, DEV_SERVER, &answer(&p, &r, PnioStatus::OK, cres));
    let (p, r) = one_request(m);
    assert_eq!(p.header.opnum, rpc::opnum::WRITE);
    let wreq = WriteRequest::parse(&r.data).unwrap();
    let wres = WriteResponse::answering(&wreq, &[PnioStatus::OK, PnioStatus::OK])
        .unwrap()
        .to_bytes()
        .unwrap();
    m.handle_datagram(now, DEV_SERVER, &answer(&p, &r, PnioStatus::OK, wres));
    one_request(m)
}

#[test]
fn happy_path_connect_write_prm_end_application_ready() {
    let mut m = Cmctl::new(config(two_parameters()), T0);
    assert_eq!(m.state(), CmctlState::Connecting);
    assert_eq!(m.poll_timeout(), Some(T0 + ms(1000)));

    // Connect: call 0 on our activity, the configured blocks unchanged.
    let (p, r) = one_request(&mut m);
    assert_eq!(p.header.opnum, rpc::opnum::CONNECT);
    assert_eq!(
        (p.header.sequence, p.header.activity),
        (0, Uuid([0xAC; 16]))
    );
    assert_eq!(r.args_maximum, 4096);
    assert_eq!(r.data, config(vec![]).connect_request);
    let creq = ConnectRequest::parse(&r.data).unwrap();
    let cres = sample_connect_response(&creq).to_bytes().unwrap();
    let t1 = T0 + ms(3);
    m.handle_datagram(t1, DEV_SERVER, &answer(&p, &r, PnioStatus::OK, cres));
    let ev = events(&mut m);
    let [CmctlEvent::Connected(c)] = ev.as_slice() else {
        panic!("{ev:?}")
    };
    assert_eq!((c.input_frame_id, c.output_frame_id), (0x8001, 0x8002));
    assert_eq!(
        c.device_mac,
        MacAddr([2, 0, 0, 0, 0, 2]),
        "from the ARBlockRes"
    );
    assert_eq!(c.response.device_alarm_ref, Some(3));
    assert!(c.response.module_diff.is_some());
    assert_eq!(m.state(), CmctlState::Parameterizing);

    // Two parameter records: one MultipleWrite, record SeqNumbers 1 (outer), 2, 3.
    let (p, r) = one_request(&mut m);
    assert_eq!((p.header.opnum, p.header.sequence), (rpc::opnum::WRITE, 1));
    let wreq = WriteRequest::parse(&r.data).unwrap();
    assert!(wreq.is_multiple());
    assert_eq!(wreq.header.seq_number, 1);
    let inner: Vec<u16> = wreq.records().iter().map(|(h, _)| h.seq_number).collect();
    assert_eq!(inner, vec![2, 3]);
    let wres = WriteResponse::answering(&wreq, &[PnioStatus::OK, PnioStatus::OK])
        .unwrap()
        .to_bytes()
        .unwrap();
    m.handle_datagram(t1, DEV_SERVER, &answer(&p, &r, PnioStatus::OK, wres));
    assert_eq!(events(&mut m), vec![CmctlEvent::ParameterEnd]);

    // PrmEnd.
    let (p, r) = one_request(&mut m);
    assert_eq!(
        (p.header.opnum, p.header.sequence),
        (rpc::opnum::CONTROL, 2)
    );
    assert_eq!(control_type(&r), block_type::PRM_END_REQ);
    let t2 = t1 + ms(5);
    m.handle_datagram(t2, DEV_SERVER, &answer(&p, &r, PnioStatus::OK, vec![]));
    assert_eq!(
        m.state(),
        CmctlState::WaitApplicationReady {
            deadline: t2 + ms(10_000)
        }
    );
    assert_eq!(m.poll_timeout(), Some(t2 + ms(10_000)));
    assert!(events(&mut m).is_empty());

    // ApplicationReady from the device's client port: answered there, from our server port.
    m.handle_datagram(t2 + ms(1), DEV_CLIENT, &app_ready(0));
    assert_eq!(
        app_ready_answer(&mut m),
        (PnioStatus::OK, Some(block_type::APPLICATION_READY_RES))
    );
    assert_eq!(events(&mut m), vec![CmctlEvent::Established]);
    assert_eq!(m.state(), CmctlState::Established);
    assert_eq!(m.poll_timeout(), None, "no timer while nothing is asked");
}

#[test]
fn a_repeated_application_ready_is_answered_again_with_one_event() {
    let mut m = Cmctl::new(config(two_parameters()), T0);
    let (p, r) = up_to_prm_end(&mut m, T0);
    m.handle_datagram(T0, DEV_SERVER, &answer(&p, &r, PnioStatus::OK, vec![]));
    events(&mut m);
    m.handle_datagram(T0 + ms(1), DEV_CLIENT, &app_ready(0));
    assert_eq!(app_ready_answer(&mut m).0, PnioStatus::OK);
    // Our answer was lost: the device asks again (same call), and again gets a positive one.
    m.handle_datagram(T0 + ms(300), DEV_CLIENT, &app_ready(0));
    assert_eq!(
        app_ready_answer(&mut m),
        (PnioStatus::OK, Some(block_type::APPLICATION_READY_RES))
    );
    assert_eq!(events(&mut m), vec![CmctlEvent::Established]);
}

#[test]
fn application_ready_may_overtake_the_prm_end_response() {
    let mut m = Cmctl::new(config(vec![]), T0);
    let (p, r) = one_request(&mut m);
    let creq = ConnectRequest::parse(&r.data).unwrap();
    let cres = sample_connect_response(&creq).to_bytes().unwrap();
    m.handle_datagram(T0, DEV_SERVER, &answer(&p, &r, PnioStatus::OK, cres));
    // No parameters: straight from the Connect response to PrmEnd (call 1).
    let (p, r) = one_request(&mut m);
    assert_eq!(
        (p.header.opnum, p.header.sequence),
        (rpc::opnum::CONTROL, 1)
    );
    m.handle_datagram(T0, DEV_CLIENT, &app_ready(0));
    assert_eq!(app_ready_answer(&mut m).0, PnioStatus::OK);
    m.handle_datagram(T0, DEV_SERVER, &answer(&p, &r, PnioStatus::OK, vec![]));
    let ev = events(&mut m);
    assert!(matches!(ev[0], CmctlEvent::Connected(_)));
    assert_eq!(ev[1..], [CmctlEvent::ParameterEnd, CmctlEvent::Established]);
    assert_eq!(m.state(), CmctlState::Established);
    assert_eq!(
        m.poll_timeout(),
        None,
        "no ApplicationReady timer once established"
    );
}

#[test]
fn application_ready_before_prm_end_is_a_state_conflict() {
    let mut m = Cmctl::new(config(vec![]), T0);
    m.handle_datagram(T0, DEV_CLIENT, &app_ready(0));
    let _connect = m.poll_transmit().unwrap();
    let (st, bt) = app_ready_answer(&mut m);
    assert_eq!(st.octets(), [0xDD, 0x81, 0x40, 0x06]);
    assert_eq!(bt, None);
    assert!(events(&mut m).is_empty());
}

#[test]
fn a_lost_connect_response_is_retried_then_times_out() {
    let mut m = Cmctl::new(config(vec![]), T0);
    let first = m.poll_transmit().unwrap().bytes;
    let mut now = T0;
    // Three retransmissions of the identical request, one per timeout.
    for _ in 0..3 {
        now = m.poll_timeout().unwrap();
        m.handle_timeout(now);
        assert_eq!(m.poll_transmit().unwrap().bytes, first);
        assert!(m.poll_transmit().is_none());
        assert!(events(&mut m).is_empty());
    }
    // Before the deadline nothing happens.
    m.handle_timeout(now + ms(999));
    assert!(m.poll_transmit().is_none());
    assert!(events(&mut m).is_empty());
    m.handle_timeout(now + ms(1000));
    assert_eq!(
        events(&mut m),
        vec![CmctlEvent::Failed {
            phase: Phase::Connect,
            error: CmctlError::Call(CallError::Timeout {
                opnum: rpc::opnum::CONNECT
            }),
        }]
    );
    assert!(m.is_closed());
    assert_eq!(m.poll_timeout(), None);
    assert!(m.poll_transmit().is_none());
}

#[test]
fn a_retransmitted_connect_still_completes() {
    let mut m = Cmctl::new(config(vec![]), T0);
    let _lost = m.poll_transmit().unwrap();
    m.handle_timeout(T0 + ms(1000));
    let (p, r) = one_request(&mut m);
    let creq = ConnectRequest::parse(&r.data).unwrap();
    let cres = sample_connect_response(&creq).to_bytes().unwrap();
    m.handle_datagram(
        T0 + ms(1001),
        DEV_SERVER,
        &answer(&p, &r, PnioStatus::OK, cres),
    );
    assert!(matches!(
        events(&mut m)[..],
        [CmctlEvent::Connected(_), CmctlEvent::ParameterEnd]
    ));
}

#[test]
fn a_negative_connect_response_fails_with_its_status() {
    let mut m = Cmctl::new(config(two_parameters()), T0);
    let (p, r) = one_request(&mut m);
    let st = PnioStatus::new(0xDB, 0x81, 0x01, 0x04);
    m.handle_datagram(T0, DEV_SERVER, &answer(&p, &r, st, vec![]));
    assert_eq!(
        events(&mut m),
        vec![CmctlEvent::Failed {
            phase: Phase::Connect,
            error: CmctlError::Rejected(st),
        }]
    );
    assert!(m.is_closed());
    assert!(
        m.poll_transmit().is_none(),
        "no Write after a refused Connect"
    );
    assert_eq!(m.poll_timeout(), None);
}

#[test]
fn a_response_of_another_call_is_ignored() {
    let mut m = Cmctl::new(config(vec![]), T0);
    let (mut p, r) = one_request(&mut m);
    p.header.sequence = 7;
    m.handle_datagram(T0, DEV_SERVER, &answer(&p, &r, PnioStatus::OK, vec![]));
    assert!(events(&mut m).is_empty());
    assert_eq!(m.state(), CmctlState::Connecting);
}

#[test]
fn a_refused_parameter_write_or_prm_end_fails_the_ar() {
    let mut m = Cmctl::new(config(two_parameters()), T0);
    let (p, r) = one_request(&mut m);
    let creq = ConnectRequest::parse(&r.data).unwrap();
    let cres = sample_connect_response(&creq).to_bytes().unwrap();
    m.handle_datagram(T0, DEV_SERVER, &answer(&p, &r, PnioStatus::OK, cres));
    let (p, r) = one_request(&mut m);
    let wreq = WriteRequest::parse(&r.data).unwrap();
    let bad = PnioStatus::new(0xDF, 0x80, 0xB0, 0x00);
    let wres = WriteResponse::answering(&wreq, &[PnioStatus::OK, bad])
        .unwrap()
        .to_bytes()
        .unwrap();
    m.handle_datagram(T0, DEV_SERVER, &answer(&p, &r, PnioStatus::OK, wres));
    let ev = events(&mut m);
    assert_eq!(
        ev[1..],
        [CmctlEvent::Failed {
            phase: Phase::ParameterWrite,
            error: CmctlError::Rejected(bad),
        }]
    );
    assert!(m.poll_transmit().is_none(), "no PrmEnd");

    let mut m = Cmctl::new(config(two_parameters()), T0);
    let (p, r) = up_to_prm_end(&mut m, T0);
    events(&mut m);
    let st = PnioStatus::new(0xDD, 0x81, 0x40, 0x06);
    m.handle_datagram(T0, DEV_SERVER, &answer(&p, &r, st, vec![]));
    assert_eq!(
        events(&mut m),
        vec![CmctlEvent::Failed {
            phase: Phase::PrmEnd,
            error: CmctlError::Rejected(st),
        }]
    );
}

#[test]
fn no_application_ready_in_time_fails() {
    let mut m = Cmctl::new(config(two_parameters()), T0);
    let (p, r) = up_to_prm_end(&mut m, T0);
    m.handle_datagram(T0, DEV_SERVER, &answer(&p, &r, PnioStatus::OK, vec![]));
    events(&mut m);
    m.handle_timeout(T0 + ms(9_999));
    assert!(events(&mut m).is_empty());
    m.handle_timeout(T0 + ms(10_000));
    assert_eq!(
        events(&mut m),
        vec![CmctlEvent::Failed {
            phase: Phase::ApplicationReady,
            error: CmctlError::NoApplicationReady,
        }]
    );
    // A late ApplicationReady meets an ended AR.
    m.handle_datagram(T0 + ms(10_001), DEV_CLIENT, &app_ready(0));
    assert_eq!(
        app_ready_answer(&mut m).0.octets(),
        [0xDD, 0x81, 0x40, 0x05]
    );
    assert!(events(&mut m).is_empty());
}

fn established() -> Cmctl {
    let mut m = Cmctl::new(config(two_parameters()), T0);
    let (p, r) = up_to_prm_end(&mut m, T0);
    m.handle_datagram(T0, DEV_SERVER, &answer(&p, &r, PnioStatus::OK, vec![]));
    m.handle_datagram(T0, DEV_CLIENT, &app_ready(0));
    m.poll_transmit().unwrap();
    events(&mut m);
    m
}

#[test]
fn records_are_read_and_written_one_call_at_a_time() {
    let mut m = established();
    let a = m.read_record(T0, RecordAddress::new(0, 0, 1, 0xAFF0), 256);
    let b = m.write_record(T0, RecordAddress::new(0, 1, 1, 123), &[9, 9]);
    // The Read goes first; the Write waits for it.
    let (p, r) = one_request(&mut m);
    assert_eq!((p.header.opnum, p.header.sequence), (rpc::opnum::READ, 3));
    assert_eq!(r.args_maximum, 256 + 64);
    let rreq = ReadRequest::parse(&r.data).unwrap();
    assert_eq!(
        rreq.header.seq_number, 4,
        "after the parameter Write's 1, 2, 3"
    );
    let rres = ReadResponse::answering(&rreq.header, vec![1, 2, 3])
        .unwrap()
        .to_bytes()
        .unwrap();
    m.handle_datagram(T0, DEV_SERVER, &answer(&p, &r, PnioStatus::OK, rres));
    assert_eq!(
        events(&mut m),
        vec![CmctlEvent::RecordDone {
            id: a,
            result: Ok(vec![1, 2, 3])
        }]
    );
    let (p, r) = one_request(&mut m);
    assert_eq!((p.header.opnum, p.header.sequence), (rpc::opnum::WRITE, 4));
    let wreq = WriteRequest::parse(&r.data).unwrap();
    let bad = PnioStatus::new(0xDF, 0x80, 0xB0, 0x00);
    let wres = WriteResponse::answering(&wreq, &[bad])
        .unwrap()
        .to_bytes()
        .unwrap();
    m.handle_datagram(T0, DEV_SERVER, &answer(&p, &r, PnioStatus::OK, wres));
    assert_eq!(
        events(&mut m),
        vec![CmctlEvent::RecordDone {
            id: b,
            result: Err(CmctlError::Rejected(bad))
        }]
    );
    assert_eq!(
        m.state(),
        CmctlState::Established,
        "a refused record ends nothing"
    );
}

#[test]
fn release_is_confirmed_and_closes_the_machine() {
    let mut m = established();
    m.release(T0);
    assert_eq!(m.state(), CmctlState::Releasing);
    let (p, r) = one_request(&mut m);
    assert_eq!(p.header.opnum, rpc::opnum::RELEASE);
    assert_eq!(control_type(&r), block_type::RELEASE_REQ);
    // A record asked for during the release is not sent.
    let id = m.read_record(T0, RecordAddress::new(0, 0, 1, 0xAFF0), 64);
    assert_eq!(
        events(&mut m),
        vec![CmctlEvent::RecordDone {
            id,
            result: Err(CmctlError::Aborted)
        }]
    );
    m.handle_datagram(T0, DEV_SERVER, &answer(&p, &r, PnioStatus::OK, vec![]));
    assert_eq!(events(&mut m), vec![CmctlEvent::Released]);
    assert!(m.is_closed());
    assert!(m.poll_transmit().is_none());
    assert_eq!(m.poll_timeout(), None);
    // The device's ApplicationReady for the ended AR: AR unknown.
    m.handle_datagram(T0, DEV_CLIENT, &app_ready(1));
    assert_eq!(
        app_ready_answer(&mut m).0.octets(),
        [0xDD, 0x81, 0x40, 0x05]
    );
}

#[test]
fn release_waits_for_the_record_call_in_flight() {
    let mut m = established();
    let id = m.read_record(T0, RecordAddress::new(0, 0, 1, 0xAFF0), 64);
    let (p, r) = one_request(&mut m);
    m.release(T0);
    assert!(m.poll_transmit().is_none(), "one call at a time");
    let rreq = ReadRequest::parse(&r.data).unwrap();
    let rres = ReadResponse::answering(&rreq.header, vec![7])
        .unwrap()
        .to_bytes()
        .unwrap();
    m.handle_datagram(T0, DEV_SERVER, &answer(&p, &r, PnioStatus::OK, rres));
    let (p, r) = one_request(&mut m);
    assert_eq!(p.header.opnum, rpc::opnum::RELEASE);
    m.handle_datagram(T0, DEV_SERVER, &answer(&p, &r, PnioStatus::OK, vec![]));
    assert_eq!(
        events(&mut m),
        vec![
            CmctlEvent::RecordDone {
                id,
                result: Ok(vec![7])
            },
            CmctlEvent::Released
        ]
    );
}

#[test]
fn abort_ends_the_establishment_silently() {
    let mut m = Cmctl::new(config(vec![]), T0);
    m.poll_transmit().unwrap();
    m.abort();
    assert_eq!(
        events(&mut m),
        vec![CmctlEvent::Failed {
            phase: Phase::Connect,
            error: CmctlError::Aborted
        }]
    );
    assert!(m.is_closed());
    assert!(m.poll_transmit().is_none());
    assert_eq!(m.poll_timeout(), None);
}

#[test]
fn the_server_routes_and_refuses() {
    let ar = sample_connect_request().ar.ar_uuid;
    assert_eq!(
        server::classify(&app_ready(0)),
        server::Inbound::ApplicationReady { ar_uuid: ar }
    );
    // A Read to the controller: Reject with nca_s_op_rng_error.
    let mut p = RpcPacket::parse(&app_ready(0)).unwrap();
    p.header.opnum = rpc::opnum::READ;
    let server::Inbound::Refuse(bytes) = server::classify(&p.to_bytes().unwrap()) else {
        panic!("a Read must be refused")
    };
    let r = RpcPacket::parse(&bytes).unwrap();
    assert_eq!(r.header.packet_type, PacketType::Reject);
    assert_eq!(
        rpc::FaultBody::parse(&r.body, r.header.drep)
            .unwrap()
            .status,
        rpc::reject_status::NCA_OP_RNG_ERROR
    );
    // An answer to a call goes to the call's activity.
    let mut q = RpcPacket::parse(&app_ready(0)).unwrap();
    q.header.packet_type = PacketType::Response;
    assert_eq!(
        server::classify(&q.to_bytes().unwrap()),
        server::Inbound::Call {
            activity: Uuid([0xDE; 16])
        }
    );
    assert_eq!(server::classify(&[1, 2, 3]), server::Inbound::Ignore);
    let refused = server::refuse_unknown_ar(&app_ready(0)).unwrap();
    let r = RpcPacket::parse(&refused).unwrap();
    let resp = PnioResponse::parse(&r.body, r.header.drep).unwrap();
    assert_eq!(resp.status.octets(), [0xDD, 0x81, 0x40, 0x05]);
    assert!(resp.data.is_empty());
}

#[test]
fn a_fragmented_response_is_put_together_and_acknowledged() {
    let mut m = established();
    let data: Vec<u8> = (0..600u32).map(|i| i as u8).collect();
    let id = m.read_record(T0, RecordAddress::new(0, 0, 1, 0xAFF0), 1024);
    let (p, r) = one_request(&mut m);
    let rreq = ReadRequest::parse(&r.data).unwrap();
    let rres = ReadResponse::answering(&rreq.header, data.clone())
        .unwrap()
        .to_bytes()
        .unwrap();
    let body = PnioResponse::to_request(&r, PnioStatus::OK, rres)
        .ndr(p.header.drep)
        .to_bytes()
        .unwrap();
    // The device asks for a FACK per fragment; the last fragment arrives first.
    let mut frags = rpc::fragment(&RpcHeader::response_to(&p.header), &body, 256, true).unwrap();
    assert!(frags.len() >= 3);
    frags.rotate_right(1);
    for (i, f) in frags.iter().enumerate() {
        m.handle_datagram(T0, DEV_SERVER, &f.to_bytes().unwrap());
        // Every fragment but the last asks for a FACK.
        if f.header.wants_fack() {
            let d = m.poll_transmit().expect("a FACK");
            assert_eq!((d.to, d.kind), (DEV_SERVER, DatagramKind::Call));
            let fack = RpcPacket::parse(&d.bytes).unwrap();
            assert_eq!(fack.header.packet_type, PacketType::Fack);
            assert_eq!(fack.header.activity, p.header.activity);
        }
        assert!(m.poll_transmit().is_none());
        let done = events(&mut m);
        if i + 1 < frags.len() {
            assert!(done.is_empty(), "incomplete after fragment {i}");
        } else {
            assert_eq!(
                done,
                vec![CmctlEvent::RecordDone {
                    id,
                    result: Ok(data.clone())
                }]
            );
        }
    }
    assert!(m.poll_transmit().is_none());
    assert_eq!(m.poll_timeout(), None);
}

#[test]
fn a_late_duplicate_response_after_a_retransmission_is_ignored() {
    let mut m = established();
    let id = m.write_record(T0, RecordAddress::new(0, 1, 1, 123), &[1]);
    let (p, r) = one_request(&mut m);
    m.handle_timeout(T0 + ms(1000));
    let (p2, _) = one_request(&mut m);
    assert_eq!(p2.header.sequence, p.header.sequence, "the same call again");
    let wreq = WriteRequest::parse(&r.data).unwrap();
    let wres = WriteResponse::answering(&wreq, &[PnioStatus::OK])
        .unwrap()
        .to_bytes()
        .unwrap();
    let resp = answer(&p, &r, PnioStatus::OK, wres);
    // The device answers both sends.
    m.handle_datagram(T0 + ms(1001), DEV_SERVER, &resp);
    m.handle_datagram(T0 + ms(1002), DEV_SERVER, &resp);
    assert_eq!(
        events(&mut m),
        vec![CmctlEvent::RecordDone {
            id,
            result: Ok(vec![])
        }]
    );
    assert!(m.poll_transmit().is_none());
}

#[test]
fn release_while_waiting_for_application_ready_ends_the_wait() {
    let mut m = Cmctl::new(config(two_parameters()), T0);
    let (p, r) = up_to_prm_end(&mut m, T0);
    m.handle_datagram(T0, DEV_SERVER, &answer(&p, &r, PnioStatus::OK, vec![]));
    events(&mut m);
    m.release(T0 + ms(5));
    assert_eq!(
        events(&mut m),
        vec![CmctlEvent::Failed {
            phase: Phase::ApplicationReady,
            error: CmctlError::Aborted
        }]
    );
    let (p, r) = one_request(&mut m);
    assert_eq!(p.header.opnum, rpc::opnum::RELEASE);
    // Only the Release's own timer runs now.
    assert_eq!(m.poll_timeout(), Some(T0 + ms(5) + ms(1000)));
    m.handle_datagram(T0, DEV_SERVER, &answer(&p, &r, PnioStatus::OK, vec![]));
    assert_eq!(events(&mut m), vec![CmctlEvent::Released]);
}

#[test]
fn every_release_gets_an_answer_even_on_an_ended_ar() {
    let mut m = Cmctl::new(config(vec![]), T0);
    // Aborted before the Connect request left: it never does.
    m.abort();
    events(&mut m);
    m.release(T0);
    assert_eq!(
        events(&mut m),
        vec![CmctlEvent::Failed {
            phase: Phase::Release,
            error: CmctlError::Aborted
        }]
    );
    assert!(
        m.poll_transmit().is_none(),
        "nothing to release on the wire"
    );
}

#[test]
fn big_endian_requests_when_configured() {
    let mut cfg = config(vec![]);
    cfg.rpc.drep = Drep::BIG_ENDIAN;
    let mut m = Cmctl::new(cfg, T0);
    let (p, r) = one_request(&mut m);
    assert_eq!(p.header.drep, Drep::BIG_ENDIAN);
    assert_eq!(
        ConnectRequest::parse(&r.data).unwrap().ar.ar_uuid,
        m.ar_uuid()
    );
    // The big-endian answer is understood: PrmEnd follows, big-endian too.
    let creq = ConnectRequest::parse(&r.data).unwrap();
    let cres = sample_connect_response(&creq).to_bytes().unwrap();
    m.handle_datagram(T0, DEV_SERVER, &answer(&p, &r, PnioStatus::OK, cres));
    assert!(matches!(events(&mut m)[0], CmctlEvent::Connected(_)));
    let (p, r) = one_request(&mut m);
    assert_eq!(p.header.drep, Drep::BIG_ENDIAN);
    assert_eq!(control_type(&r), block_type::PRM_END_REQ);
}

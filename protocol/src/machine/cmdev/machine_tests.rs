//! The CMDEV machine in simulated time, against a scripted controller whose datagrams are
//! built with this crate's own codecs: no sockets, no threads, no clock.

use super::*;
use crate::machine::cmdev::api::IoArPlan;
use crate::wire::pnio::cm::tests::sample_connect_request;
use crate::wire::pnio::cm::ConnectRequest;
use crate::wire::pnio::record::RecordAddress;
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr};

const DHT: Duration = Duration::from_millis(12);

#[derive(Default)]
struct App {
    records: HashMap<u16, Vec<u8>>,
}

impl CmdevApp for App {
    type Plan = &'static str;
    fn plan_io_ar(
        &mut self,
        _req: &ConnectRequest,
        _limits: &super::super::connect::ConnectLimits,
    ) -> Result<IoArPlan<&'static str>, PnioStatus> {
        Ok(IoArPlan {
            input_frame_id: 0x8001,
            output_frame_id: 0x8002,
            module_diff: None,
            data_hold: DHT,
            plan: "jobs",
        })
    }
    fn link_up(&mut self) -> bool {
        true
    }
    fn read_record(&mut self, a: &RecordAddress) -> Result<Vec<u8>, PnioStatus> {
        self.records
            .get(&a.index)
            .cloned()
            .ok_or(PnioStatus::new(0xDE, 0x80, 0xB0, 0x0A))
    }
    fn write_record(&mut self, a: &RecordAddress, data: &[u8]) -> Result<(), PnioStatus> {
        self.records.insert(a.index, data.to_vec());
        Ok(())
    }
}

struct Rig {
    m: Cmdev<&'static str>,
    app: App,
    now: Instant,
    plc: SocketAddr,
    req: ConnectRequest,
    seq: u32,
}

fn t(ms: u64) -> Duration {
    Duration::from_millis(ms)
}

impl Rig {
    fn new() -> Rig {
        Rig {
            m: Cmdev::new(CmdevConfig::new(7, [2, 0, 0, 0, 0, 2], [9; 16])),
            app: App::default(),
            now: Instant::from_millis(1000),
            plc: SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)), 49152),
            req: sample_connect_request(),
            seq: 0,
        }
    }

    fn datagram(&mut self, opnum: u16, data: Vec<u8>, activity: [u8; 16]) -> Vec<u8> {
        self.seq += 1;
        let h = RpcHeader::request(
            Drep::LITTLE_ENDIAN,
            Uuid::pnio_object(1, 0x0010, 0x002A),
            rpc::PNIO_DEVICE_INTERFACE,
            Uuid::from_bytes(activity),
            self.seq,
            opnum,
        );
        let body = PnioRequest::new(4096, data)
            .ndr(Drep::LITTLE_ENDIAN)
            .to_bytes()
            .unwrap();
        RpcPacket::new(h, body).to_bytes().unwrap()
    }

    /// Send a call, return the device's PNIO answer to it.
    fn call_bytes(&mut self, dgram: &[u8]) -> PnioResponse {
        assert!(self
            .m
            .handle_datagram(self.now, self.plc, dgram, &mut self.app));
        let d = self.m.poll_transmit().expect("an answer");
        assert_eq!(d.to, self.plc);
        let p = RpcPacket::parse(&d.bytes).unwrap();
        assert_eq!(p.header.packet_type, PacketType::Response);
        PnioResponse::parse(&p.body, p.header.drep).unwrap()
    }

    fn call(&mut self, opnum: u16, data: Vec<u8>) -> PnioResponse {
        let d = self.datagram(opnum, data, [self.seq as u8 + 1; 16]);
        self.call_bytes(&d)
    }

    fn connect(&mut self) -> PnioResponse {
        let data = self.req.to_bytes().unwrap();
        self.call(opnum::CONNECT, data)
    }

    fn control(&mut self, cb: ControlBlock, opnum: u16) -> PnioResponse {
        let mut w = Writer::new();
        cb.emit(&mut w).unwrap();
        self.call(opnum, w.into_inner())
    }

    fn prm_end(&mut self) -> PnioResponse {
        let cb = ControlBlock::prm_end_req(self.req.ar.ar_uuid, self.req.ar.session_key);
        self.control(cb, opnum::CONTROL)
    }

    /// The device's ApplicationReady call (taken from the transmit queue).
    fn app_ready_call(&mut self) -> RpcPacket {
        let d = self.m.poll_transmit().expect("ApplicationReady sent");
        assert_eq!(d.to, SocketAddr::new(self.plc.ip(), PNIO_CM_PORT));
        let p = RpcPacket::parse(&d.bytes).unwrap();
        assert_eq!(p.header.opnum, opnum::CONTROL);
        assert_eq!(p.header.interface, rpc::PNIO_CONTROLLER_INTERFACE);
        p
    }

    fn answer(&mut self, call: &RpcPacket, status: PnioStatus) {
        let req = PnioRequest::parse(&call.body, call.header.drep).unwrap();
        let cb = find_control(&req.data).unwrap();
        let mut w = Writer::new();
        cb.response().emit(&mut w).unwrap();
        let body = PnioResponse {
            status,
            args_maximum: 0,
            data: w.into_inner(),
        }
        .ndr(call.header.drep)
        .to_bytes()
        .unwrap();
        let p = RpcPacket::new(RpcHeader::response_to(&call.header), body)
            .to_bytes()
            .unwrap();
        let from = SocketAddr::new(self.plc.ip(), PNIO_CM_PORT);
        assert!(self.m.handle_datagram(self.now, from, &p, &mut self.app));
    }

    fn events(&mut self) -> Vec<CmdevEvent<&'static str>> {
        std::iter::from_fn(|| self.m.poll_event()).collect()
    }

    fn advance(&mut self, d: Duration) {
        self.now += d;
        self.m.handle_timeout(self.now);
    }

    /// Connect, PrmEnd, ApplicationReady confirmed: data exchange.
    fn up(&mut self) {
        assert!(self.connect().status.is_ok());
        assert!(self.prm_end().status.is_ok());
        let call = self.app_ready_call();
        self.answer(&call, PnioStatus::OK);
        let ev = self.events();
        assert!(matches!(
            ev[0],
            CmdevEvent::IoArConnected { plan: "jobs", .. }
        ));
        assert!(matches!(ev[1], CmdevEvent::DataExchange { .. }), "{ev:?}");
        assert_eq!(self.m.io_ar().unwrap().phase, ArPhase::Data);
    }
}

fn ended(ev: &[CmdevEvent<&'static str>]) -> (String, Option<PnioStatus>, EndCause, bool) {
    match ev
        .iter()
        .find(|e| matches!(e, CmdevEvent::IoArEnded { .. }))
    {
        Some(CmdevEvent::IoArEnded {
            reason,
            rta,
            cause,
            watchdog,
            ..
        }) => (reason.clone(), *rta, *cause, *watchdog),
        _ => panic!("no end in {ev:?}"),
    }
}

#[test]
fn connect_prm_end_application_ready_reaches_data_exchange() {
    let mut r = Rig::new();
    r.up();
    assert!(r.m.poll_transmit().is_none());
}

#[test]
fn the_connect_response_carries_the_frame_ids_of_the_plan() {
    let mut r = Rig::new();
    let resp = r.connect();
    let parsed = crate::wire::pnio::cm::ConnectResponse::parse(&resp.data).unwrap();
    let fids: Vec<u16> = parsed.iocrs.iter().map(|c| c.frame_id).collect();
    assert_eq!(fids, vec![0x8001, 0x8002]);
    assert_eq!(parsed.ar.unwrap().cm_responder_mac, [2, 0, 0, 0, 0, 2]);
}

#[test]
fn a_retransmitted_connect_gets_the_cached_answer_and_is_not_run_twice() {
    let mut r = Rig::new();
    let data = r.req.to_bytes().unwrap();
    let d = r.datagram(opnum::CONNECT, data, [1; 16]);
    let first = r.call_bytes(&d);
    let again = r.call_bytes(&d);
    assert_eq!(first, again);
    let connected = r
        .events()
        .into_iter()
        .filter(|e| matches!(e, CmdevEvent::IoArConnected { .. }))
        .count();
    assert_eq!(connected, 1);
}

#[test]
fn a_late_copy_of_an_answered_connect_after_the_ack_does_not_run_again() {
    let mut r = Rig::new();
    let data = r.req.to_bytes().unwrap();
    let d = r.datagram(opnum::CONNECT, data, [1; 16]);
    assert!(r.call_bytes(&d).status.is_ok());
    // The controller acknowledges the response: the reply is freed.
    let mut ack = RpcPacket::parse(&d).unwrap();
    ack.header.packet_type = PacketType::Ack;
    ack.body.clear();
    let ack = ack.to_bytes().unwrap();
    assert!(r.m.handle_datagram(r.now, r.plc, &ack, &mut r.app));
    // A copy of the Connect the network delayed arrives: no second Connect, no re-run abort.
    assert!(r.m.handle_datagram(r.now, r.plc, &d, &mut r.app));
    assert!(r.m.poll_transmit().is_none());
    let ev = r.events();
    assert_eq!(ev.len(), 1, "{ev:?}");
    assert!(matches!(ev[0], CmdevEvent::IoArConnected { .. }));
}

#[test]
fn application_ready_is_retried_until_answered_and_each_retry_is_the_same_call() {
    let mut r = Rig::new();
    r.connect();
    r.prm_end();
    let first = r.app_ready_call();
    r.advance(t(999));
    assert!(
        r.m.poll_transmit().is_none(),
        "not before the retry interval"
    );
    r.advance(t(1));
    let retry = r.app_ready_call();
    assert_eq!(first.header.activity, retry.header.activity);
    assert_eq!(first.body, retry.body);
    r.answer(&retry, PnioStatus::OK);
    assert_eq!(r.m.io_ar().unwrap().phase, ArPhase::Data);
}

#[test]
fn a_negative_application_ready_answer_ends_the_ar_with_rpc_control_error() {
    let mut r = Rig::new();
    r.connect();
    r.prm_end();
    let call = r.app_ready_call();
    r.answer(&call, PnioStatus::new(0xDD, 0x81, 0x40, 0x05));
    let (reason, rta, cause, _) = ended(&r.events());
    assert!(reason.contains("ApplicationReady rejected"), "{reason}");
    assert_eq!(
        rta,
        Some(abort_reason::status(abort_reason::AR_RPC_CONTROL_ERROR))
    );
    assert_eq!(cause, EndCause::Fault);
    assert!(r.m.io_ar().is_none());
}

#[test]
fn a_second_controller_is_refused_while_an_io_ar_exists() {
    let mut r = Rig::new();
    r.up();
    r.req.ar.ar_uuid = Uuid::from_bytes([0x55; 16]);
    r.req.ar.cm_initiator_station_name = "plc-2".into();
    let resp = r.connect();
    assert_eq!(
        resp.status,
        connect_error(err1::CMRPC, cmrpc::NO_AR_RESOURCES)
    );
    let ev = r.events();
    assert!(
        matches!(&ev[0], CmdevEvent::ConnectRefused { controller, .. } if controller == "plc-2")
    );
    assert_eq!(
        r.m.io_ar().unwrap().phase,
        ArPhase::Data,
        "the first AR is untouched"
    );
}

#[test]
fn the_same_controller_connecting_again_before_data_exchange_replaces_its_stale_ar() {
    let mut r = Rig::new();
    // The first AR stops after its Connect (the controller never got the answer).
    assert!(r.connect().status.is_ok());
    r.req.ar.ar_uuid = Uuid::from_bytes([0x66; 16]);
    assert!(
        r.connect().status.is_ok(),
        "not refused until the CMI timeout"
    );
    let ev = r.events();
    let (reason, rta, _, _) = ended(&ev);
    assert!(reason.contains("connected again"), "{reason}");
    assert_eq!(
        rta,
        Some(abort_reason::status(
            abort_reason::AR_RE_RUN_ABORTS_EXISTING
        ))
    );
    assert_eq!(
        r.m.io_ar().unwrap().ar.ar_uuid,
        Uuid::from_bytes([0x66; 16])
    );
    // Another controller (other MAC) is still refused.
    r.req.ar.ar_uuid = Uuid::from_bytes([0x77; 16]);
    r.req.ar.cm_initiator_mac = [2, 0, 0, 0, 0, 9];
    let st = r.connect().status;
    assert_eq!(st, connect_error(err1::CMRPC, cmrpc::NO_AR_RESOURCES));
}

#[test]
fn re_running_the_connect_of_the_same_ar_aborts_it_and_starts_again() {
    let mut r = Rig::new();
    r.up();
    assert!(r.connect().status.is_ok());
    let ev = r.events();
    let (_, rta, _, _) = ended(&ev);
    assert_eq!(
        rta,
        Some(abort_reason::status(
            abort_reason::AR_RE_RUN_ABORTS_EXISTING
        ))
    );
    assert!(matches!(ev.last(), Some(CmdevEvent::IoArConnected { .. })));
    assert_eq!(r.m.io_ar().unwrap().phase, ArPhase::Startup);
}

#[test]
fn no_prm_end_within_the_cm_initiator_activity_timeout_ends_the_ar() {
    let mut r = Rig::new();
    r.connect();
    // Factor 600 x 100 ms = 60 s.
    r.advance(t(60_000));
    assert!(r
        .events()
        .iter()
        .all(|e| !matches!(e, CmdevEvent::IoArEnded { .. })));
    assert!(r.m.poll_timeout().unwrap() > r.now);
    r.advance(t(1));
    let (reason, rta, _, watchdog) = ended(&r.events());
    assert!(reason.starts_with("CMInitiatorActivityTimeout"), "{reason}");
    assert_eq!(
        rta,
        Some(abort_reason::status(abort_reason::AR_CMI_TIMEOUT))
    );
    assert!(!watchdog);
}

#[test]
fn no_output_frame_after_application_ready_is_a_watchdog_end_after_the_first_frame_bound() {
    let mut r = Rig::new();
    r.up();
    let bound = first_frame_timeout(DHT);
    r.advance(bound);
    assert!(r.m.io_ar().is_some(), "not before the bound");
    r.advance(t(1));
    let (_, rta, _, watchdog) = ended(&r.events());
    assert_eq!(
        rta,
        Some(abort_reason::status(abort_reason::AR_CONSUMER_DHT_EXPIRED))
    );
    assert!(watchdog);
}

#[test]
fn the_first_output_frame_hands_supervision_to_the_data_hold_watchdog() {
    let mut r = Rig::new();
    r.up();
    r.m.handle_first_output_frame();
    r.advance(t(60_000));
    assert!(r.m.io_ar().is_some());
    assert!(r.events().is_empty());
}

/// A controller provides from its Connect on: its first output frame may arrive before the
/// ApplicationReady confirmation. A shell that reports the first frame once, when it arrives
/// (pn-farm's I/O loop), must not get a first-frame watchdog end after data exchange began.
/// (Found by `pn-lab bench scale --farm`: 4 of 16 farm devices tripped 1 s after
/// ApplicationReady although the controller's frames were flowing.)
#[test]
fn a_first_output_frame_before_application_ready_counts_for_data_exchange() {
    let mut r = Rig::new();
    assert!(r.connect().status.is_ok());
    assert!(r.prm_end().status.is_ok());
    r.m.handle_first_output_frame();
    let call = r.app_ready_call();
    r.answer(&call, PnioStatus::OK);
    r.advance(first_frame_timeout(DHT) + t(10_000));
    assert!(r.m.io_ar().is_some(), "{:?}", r.events());
    assert!(!r
        .events()
        .iter()
        .any(|e| matches!(e, CmdevEvent::IoArEnded { .. })));
}

#[test]
fn release_ends_the_ar_as_the_controllers_decision_without_err_rta() {
    let mut r = Rig::new();
    r.up();
    let cb = ControlBlock::release_req(r.req.ar.ar_uuid, r.req.ar.session_key);
    assert!(r.control(cb, opnum::RELEASE).status.is_ok());
    let (_, rta, cause, _) = ended(&r.events());
    assert_eq!((rta, cause), (None, EndCause::ReleasedByController));
    // A second Release of the gone AR: AR UUID unknown.
    let st = r.control(cb, opnum::RELEASE).status;
    assert_eq!(
        st,
        status_err(
            PnioStatus::CODE_RELEASE,
            err1::CMRPC,
            cmrpc::AR_UUID_UNKNOWN
        )
    );
}

#[test]
fn link_down_ends_the_ar_without_err_rta() {
    let mut r = Rig::new();
    r.up();
    r.m.handle_link(false);
    let (reason, rta, _, _) = ended(&r.events());
    assert_eq!((reason.as_str(), rta), ("link down", None));
}

#[test]
fn a_datagram_that_is_not_rpc_is_reported_invalid_and_answered_with_nothing() {
    let mut r = Rig::new();
    assert!(!r.m.handle_datagram(r.now, r.plc, &[0xFF; 7], &mut r.app));
    assert!(r.m.poll_transmit().is_none());
}

#[test]
fn an_unknown_opnum_is_rejected() {
    let mut r = Rig::new();
    let d = r.datagram(42, vec![], [3; 16]);
    assert!(r.m.handle_datagram(r.now, r.plc, &d, &mut r.app));
    let p = RpcPacket::parse(&r.m.poll_transmit().unwrap().bytes).unwrap();
    assert_eq!(p.header.packet_type, PacketType::Reject);
}

/// A Rig whose configuration declares parameter record 0x100 of slot 1 subslot 1: one
/// Unsigned8 at byte 0, allowed 1..3 (protocol `params`).
fn rig_with_declared_record() -> Rig {
    use crate::machine::cmdev::params::{Allowed, FieldKind, ParamField, ParamRecord, ParamType};
    let mut cfg = CmdevConfig::new(7, [2, 0, 0, 0, 0, 2], [9; 16]);
    let field = ParamField {
        name: "Mode".into(),
        byte_offset: 0,
        kind: FieldKind::Value(ParamType::Unsigned8),
        default: 1,
        allowed: Allowed(vec![(1, 3)]),
    };
    let rec = ParamRecord {
        index: 0x100,
        length: 1,
        name: "Settings".into(),
        fields: vec![field],
    };
    cfg.param_records.insert(1, 1, rec);
    let mut r = Rig::new();
    r.m = Cmdev::new(cfg);
    r
}

fn write_status(r: &mut Rig, records: &[(u16, &[u8])]) -> Vec<PnioStatus> {
    use crate::wire::pnio::record::{WriteRecord, WriteReqHeaderRepr, WriteRequest, WriteResponse};
    let uuid = r.req.ar.ar_uuid.0;
    let req = if let [(index, data)] = records {
        WriteRequest::single(1, uuid, RecordAddress::new(0, 1, 1, *index), data.to_vec())
    } else {
        let recs = records
            .iter()
            .zip(2u16..)
            .map(|((index, data), seq)| WriteRecord {
                header: WriteReqHeaderRepr {
                    seq_number: seq,
                    ar_uuid: uuid,
                    address: RecordAddress::new(0, 1, 1, *index),
                    record_data_length: data.len() as u32,
                },
                data: data.to_vec(),
            })
            .collect();
        WriteRequest::multiple(1, uuid, recs)
    };
    let resp = r.call(opnum::WRITE, req.unwrap().to_bytes().unwrap());
    let w = WriteResponse::parse(&resp.data).unwrap();
    if w.records.is_empty() {
        vec![w.header.status]
    } else {
        w.records.iter().map(|h| h.status).collect()
    }
}

#[test]
fn a_declared_parameter_record_is_checked_before_the_application_stores_it() {
    let mut r = rig_with_declared_record();
    r.connect();
    let bad_value = PnioStatus::new(0xDF, 0x80, 0xB8, 0x00);
    let bad_length = PnioStatus::new(0xDF, 0x80, 0xB1, 0x00);
    assert_eq!(write_status(&mut r, &[(0x100, &[4])]), vec![bad_value]);
    assert_eq!(write_status(&mut r, &[(0x100, &[1, 0])]), vec![bad_length]);
    assert!(r.app.records.is_empty(), "a refused value is not stored");
    assert_eq!(write_status(&mut r, &[(0x100, &[3])]), vec![PnioStatus::OK]);
    assert_eq!(r.app.records.get(&0x100), Some(&vec![3]));
    // MultipleWrite: each record answered on its own; an undeclared index passes to the app.
    let st = write_status(&mut r, &[(0x100, &[0]), (0x101, &[0xFF])]);
    assert_eq!(st, vec![bad_value, PnioStatus::OK]);
    assert_eq!(r.app.records.get(&0x100), Some(&vec![3]));
    assert_eq!(r.app.records.get(&0x101), Some(&vec![0xFF]));
}

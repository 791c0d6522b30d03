use super::*;
use crate::machine::dcp_delay::DEFAULT_COLLECT_MARGIN;
use crate::machine::dcp_responder::DcpResponder;
use crate::wire::dcp::{option, suboption, ServiceType};

const CTL: MacAddr = MacAddr([0x02, 0, 0, 0, 0, 0x01]);
const A: MacAddr = MacAddr([0x02, 0, 0, 0, 0, 0xA1]);
const B: MacAddr = MacAddr([0x02, 0, 0, 0, 0, 0xB2]);

fn ms(n: u64) -> Instant {
    Instant::from_millis(n)
}

fn identify_answer(xid: u32, name: &str) -> DcpRepr {
    DcpRepr::identify_response(
        xid,
        vec![DcpBlock::new(DcpValue::NameOfStation(
            name.as_bytes().to_vec(),
        ))],
    )
}

fn set_answer(xid: u32, error: BlockError) -> DcpRepr {
    DcpRepr::set_response(
        xid,
        &[(option::DEVICE_PROPERTIES, suboption::NAME_OF_STATION, error)],
    )
}

/// The request the client wants sent, parsed back.
fn sent(c: &mut DcpClient) -> (MacAddr, DcpRepr) {
    let t = c.poll_transmit().expect("a frame to send");
    let (eth, _, d) = DcpRepr::parse_frame(&t.frame).expect("a DCP frame");
    assert_eq!(eth.src, CTL);
    assert_eq!(d.xid, t.xid);
    (eth.dst, d)
}

fn names(o: &DcpOutcome) -> Vec<String> {
    match o {
        DcpOutcome::Identified(v) => v.iter().map(|i| i.name_of_station.clone()).collect(),
        other => panic!("not an Identify all outcome: {other:?}"),
    }
}

#[test]
fn identify_all_collects_the_window_once_per_device_sorted() {
    let mut c = DcpClient::new(CTL, 100);
    let id = c
        .start(
            ms(0),
            DcpRequest::IdentifyAll {
                response_delay_factor: 7,
                margin: DEFAULT_COLLECT_MARGIN,
            },
        )
        .unwrap();
    let (dst, req) = sent(&mut c);
    assert_eq!(dst, MacAddr::DCP_IDENTIFY);
    assert_eq!((req.xid, req.response_delay), (100, 7));
    assert_eq!(req.service_type, ServiceType::Request);
    // 7 slots of 10 ms plus the margin.
    assert_eq!(c.poll_timeout(), Some(ms(270)));
    assert!(c.handle_response(ms(5), B, &identify_answer(100, "b-dev")));
    assert!(c.handle_response(ms(60), A, &identify_answer(100, "a-dev")));
    // The same device again (a duplicated frame): once only, the first answer kept.
    assert!(!c.handle_response(ms(61), A, &identify_answer(100, "a-renamed")));
    // Another Xid, another service, and a request with our Xid are not answers to it.
    assert!(!c.handle_response(
        ms(62),
        MacAddr([2, 0, 0, 0, 0, 9]),
        &identify_answer(99, "x")
    ));
    let get = DcpRepr::get_response(100, vec![]);
    assert!(!c.handle_response(ms(63), MacAddr([2, 0, 0, 0, 0, 9]), &get));
    let req_copy = DcpRepr::identify_request_all(100, 7);
    assert!(!c.handle_response(ms(64), MacAddr([2, 0, 0, 0, 0, 9]), &req_copy));
    c.handle_timeout(ms(269));
    assert!(c.poll_event().is_none() && c.is_open(id));
    c.handle_timeout(ms(270));
    let ev = c.poll_event().expect("finished");
    assert_eq!(ev.exchange, id);
    assert_eq!(names(&ev.outcome), ["a-dev", "b-dev"]);
    assert!(!c.is_open(id) && c.poll_timeout().is_none());
}

#[test]
fn an_answer_at_the_deadline_is_late_whatever_the_call_order() {
    let mut c = DcpClient::new(CTL, 1);
    let req = DcpRequest::IdentifyAll {
        response_delay_factor: 1,
        margin: Duration::ZERO,
    };
    c.start(ms(0), req).unwrap();
    // The window is 10 ms; the answer is handled at 10 ms before any handle_timeout.
    assert!(!c.handle_response(ms(10), A, &identify_answer(1, "a")));
    let ev = c.poll_event().expect("the deadline ran first");
    assert_eq!(ev.outcome, DcpOutcome::Identified(vec![]));
    // And after the end nothing is taken.
    assert!(!c.handle_response(ms(11), A, &identify_answer(1, "a")));
    assert!(c.poll_event().is_none());
}

#[test]
fn the_factor_is_clamped_to_the_standard_range() {
    let mut c = DcpClient::new(CTL, 1);
    let all = |f| DcpRequest::IdentifyAll {
        response_delay_factor: f,
        margin: Duration::ZERO,
    };
    c.start(ms(0), all(0)).unwrap();
    assert_eq!(sent(&mut c).1.response_delay, 1);
    assert_eq!(c.poll_timeout(), Some(ms(10)));
    let mut c = DcpClient::new(CTL, 1);
    c.start(ms(0), all(u16::MAX)).unwrap();
    assert_eq!(sent(&mut c).1.response_delay, 6400);
    assert_eq!(c.poll_timeout(), Some(ms(64_000)));
}

#[test]
fn identify_by_name_takes_the_first_answer_over_two_fresh_attempts() {
    let mut c = DcpClient::new(CTL, 10);
    let name = NameOfStation::new("dev-1").unwrap();
    let req = DcpRequest::IdentifyName {
        name: name.clone(),
        response_delay_factor: 1,
        timeout: Duration::from_millis(1000),
    };
    let id = c.start(ms(0), req.clone()).unwrap();
    let (dst, first) = sent(&mut c);
    assert_eq!(dst, MacAddr::DCP_IDENTIFY);
    assert_eq!(first.name_of_station(), Some(&b"dev-1"[..]));
    assert_eq!(c.poll_timeout(), Some(ms(500)));
    c.handle_timeout(ms(500));
    assert!(c.poll_event().is_none());
    let (_, second) = sent(&mut c);
    assert_eq!(
        second.xid,
        first.xid + 1,
        "a fresh Xid for the second attempt"
    );
    assert_eq!(c.current_xid(id), Some(second.xid));
    // The first attempt's answer comes late: its window is over.
    assert!(!c.handle_response(ms(600), A, &identify_answer(first.xid, "dev-1")));
    assert!(c.handle_response(ms(700), A, &identify_answer(second.xid, "dev-1")));
    let ev = c.poll_event().expect("the first answer ends it");
    let DcpOutcome::Found(Some(info)) = ev.outcome else {
        panic!("found nothing: {:?}", ev.outcome);
    };
    assert_eq!((info.mac, info.name_of_station.as_str()), (A, "dev-1"));
    // A second device answering the same request later changes nothing.
    assert!(!c.handle_response(ms(701), B, &identify_answer(second.xid, "dev-1")));
    assert!(c.poll_event().is_none() && c.poll_timeout().is_none());

    // Nobody answers: None after the whole timeout.
    let id = c.start(ms(2000), req).unwrap();
    c.handle_timeout(ms(2500));
    c.handle_timeout(ms(3000));
    assert_eq!(
        c.poll_event(),
        Some(DcpClientEvent {
            exchange: id,
            outcome: DcpOutcome::Found(None)
        })
    );
    assert_eq!(c.poll_transmit().map(|t| t.xid), Some(12));
    assert_eq!(c.poll_transmit().map(|t| t.xid), Some(13));
    assert!(c.poll_transmit().is_none());
}

#[test]
fn get_is_unicast_and_takes_the_first_answer_or_times_out() {
    let mut c = DcpClient::new(CTL, 7);
    let sel = vec![(option::DEVICE_PROPERTIES, suboption::NAME_OF_STATION)];
    let req = DcpRequest::Get {
        mac: A,
        selectors: sel.clone(),
        timeout: Duration::from_millis(300),
    };
    c.start(ms(0), req.clone()).unwrap();
    let (dst, get) = sent(&mut c);
    assert_eq!((dst, get.service_id), (A, ServiceId::Get));
    let answer = DcpRepr::get_response(
        7,
        vec![DcpBlock::new(DcpValue::NameOfStation(b"a".to_vec()))],
    );
    // A Set answer with the Get's Xid is not its answer (ServiceID differs).
    assert!(!c.handle_response(ms(1), A, &set_answer(7, BlockError::OK)));
    assert!(c.handle_response(ms(2), A, &answer));
    let ev = c.poll_event().unwrap();
    assert_eq!(ev.outcome, DcpOutcome::Got(Some((A, answer))));
    c.start(ms(10), req).unwrap();
    c.handle_timeout(ms(310));
    assert_eq!(c.poll_event().unwrap().outcome, DcpOutcome::Got(None));
    // One attempt only.
    assert_eq!(c.poll_transmit().map(|t| t.xid), Some(8));
    assert!(c.poll_transmit().is_none());
}

#[test]
fn set_is_sent_again_with_the_same_xid_until_answered() {
    let mut c = DcpClient::new(CTL, u32::MAX);
    let n = NameOfStation::new("new").unwrap();
    let id = c
        .start(ms(0), DcpRequest::set_name(A, Some(&n), true))
        .unwrap();
    let (dst, set) = sent(&mut c);
    assert_eq!((dst, set.xid), (A, u32::MAX));
    assert_eq!(set, DcpRepr::set_name(u32::MAX, &n, true));
    c.handle_timeout(ms(1000));
    assert_eq!(sent(&mut c).1, set, "the same request again");
    c.handle_timeout(ms(2000));
    assert_eq!(sent(&mut c).1, set);
    let refused = set_answer(u32::MAX, BlockError::IN_OPERATION);
    assert!(c.handle_response(ms(2100), A, &refused));
    let ev = c.poll_event().unwrap();
    assert_eq!(ev.exchange, id);
    let DcpOutcome::Set(Some(r)) = ev.outcome else {
        panic!("no result: {:?}", ev.outcome);
    };
    assert!(!r.is_ok());
    assert_eq!(r.describe(), "2/2: in operation, set not possible");
    // The Xid counter wraps.
    c.start(ms(3000), DcpRequest::set_name(A, None, false))
        .unwrap();
    let (_, clear) = sent(&mut c);
    assert_eq!(clear.xid, 0);
    assert_eq!(
        clear.blocks,
        vec![DcpBlock::with_qualifier(DcpValue::NameOfStation(vec![]), 0)]
    );
    for t in [4000, 5000, 6000] {
        c.handle_timeout(ms(t));
    }
    assert_eq!(c.poll_event().unwrap().outcome, DcpOutcome::Set(None));
    assert_eq!(std::iter::from_fn(|| c.poll_transmit()).count(), 2);
}

#[test]
fn set_results_say_ok_only_when_every_block_is_ok() {
    let ok = SetResult::from_response(&set_answer(1, BlockError::OK));
    assert!(ok.is_ok());
    assert!(
        !SetResult { results: vec![] }.is_ok(),
        "no block is no success"
    );
    let mixed = DcpRepr::set_response(
        1,
        &[
            (1, 2, BlockError::OK),
            (5, 6, BlockError::SUBOPTION_UNSUPPORTED),
        ],
    );
    let r = SetResult::from_response(&mixed);
    assert!(!r.is_ok());
    assert_eq!(r.results.len(), 2);
}

#[test]
fn exchanges_at_once_are_told_apart_by_xid() {
    let mut c = DcpClient::new(CTL, 50);
    let all = c
        .start(
            ms(0),
            DcpRequest::IdentifyAll {
                response_delay_factor: 1,
                margin: Duration::from_millis(90),
            },
        )
        .unwrap();
    let set = c
        .start(
            ms(1),
            DcpRequest::Set {
                mac: A,
                blocks: DcpRepr::set_signal(0).blocks,
            },
        )
        .unwrap();
    assert!(c.handle_response(ms(2), A, &set_answer(51, BlockError::OK)));
    assert!(c.handle_response(ms(3), A, &identify_answer(50, "a")));
    let ev = c.poll_event().unwrap();
    assert_eq!(ev.exchange, set);
    assert!(matches!(ev.outcome, DcpOutcome::Set(Some(ref r)) if r.is_ok()));
    c.handle_timeout(ms(100));
    let ev = c.poll_event().unwrap();
    assert_eq!(
        (ev.exchange, names(&ev.outcome)),
        (all, vec!["a".to_string()])
    );
}

#[test]
fn a_cancelled_exchange_sends_and_reports_nothing() {
    let mut c = DcpClient::new(CTL, 1);
    let n = NameOfStation::new("x").unwrap();
    let id = c
        .start(ms(0), DcpRequest::set_name(A, Some(&n), false))
        .unwrap();
    c.cancel(id);
    assert!(c.poll_transmit().is_none() && c.poll_timeout().is_none());
    assert!(!c.handle_response(ms(1), A, &set_answer(1, BlockError::OK)));
    assert!(c.poll_event().is_none());
}

#[test]
fn the_client_and_the_responder_agree() {
    // The device's own responder answers the client's frames: a Set, then an Identify all.
    let id = crate::machine::dcp_responder::tests::ident();
    let mac = id.mac;
    let mut dev = DcpResponder::new(id, ms(0));
    let mut c = DcpClient::new(CTL, 1);
    let n = NameOfStation::new("new").unwrap();
    c.start(ms(0), DcpRequest::set_name(mac, Some(&n), true))
        .unwrap();
    let out = dev.on_frame(&c.poll_transmit().unwrap().frame, ms(1));
    assert!(c.handle_frame(ms(2), &out.frames[0]));
    let DcpOutcome::Set(Some(r)) = c.poll_event().unwrap().outcome else {
        panic!("no Set result");
    };
    assert!(r.is_ok(), "{}", r.describe());
    c.start(
        ms(10),
        DcpRequest::IdentifyAll {
            response_delay_factor: 1,
            margin: Duration::from_millis(50),
        },
    )
    .unwrap();
    let mut answers = dev
        .on_frame(&c.poll_transmit().unwrap().frame, ms(11))
        .frames;
    answers.extend(dev.poll(ms(11)));
    assert!(c.handle_frame(ms(12), &answers[0]));
    c.handle_timeout(ms(70));
    let DcpOutcome::Identified(v) = c.poll_event().unwrap().outcome else {
        panic!("not an Identify outcome");
    };
    assert_eq!(v.len(), 1);
    assert_eq!((v[0].mac, v[0].name_of_station.as_str()), (mac, "new"));
    assert_eq!((v[0].vendor_id, v[0].device_id), (Some(0x0493), Some(1)));
    assert_eq!(v[0].ip, Some(Ipv4Addr::new(192, 168, 0, 10)));
}

#[test]
fn device_info_from_real_identify_response() {
    let f = pn_testkit::fixtures::all()
        .into_iter()
        .find(|f| f.name.contains("pniors-dcp-ident-res-pnet"))
        .expect("fixture");
    let (eth, _, d) = DcpRepr::parse_frame(&f.bytes).unwrap();
    let i = DeviceInfo::from_response(eth.src, &d);
    assert_eq!(i.name_of_station, "rt-labs-dev");
    assert_eq!(i.type_of_station, "P-Net Sample Application");
    assert_eq!((i.vendor_id, i.device_id), (Some(0x0493), Some(0x0002)));
    assert_eq!(i.ip, Some(Ipv4Addr::UNSPECIFIED));
    assert_eq!(i.options.len(), 14);
}

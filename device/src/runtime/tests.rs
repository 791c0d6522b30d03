//! Rows of the spec section 3 table that need a failing data plane (not reproducible with
//! a real NIC): a scripted plane returns the configured start errors.
use super::*;
use crate::dataplane::{NicInfo, ProbeError, StartError};

struct FakePlane {
    next: Mutex<Vec<Result<(), StartError>>>,
    starts: Mutex<Vec<StartMode>>,
}

impl DataPlane for FakePlane {
    fn kind(&self) -> &'static str {
        "fake"
    }
    fn probe(&self, nic: &str) -> Result<NicInfo, ProbeError> {
        Ok(NicInfo::up(nic))
    }
    fn start(
        &self,
        _cfg: &StackConfig,
        _image: Arc<ProcessImage>,
        _events: EventSink,
        mode: StartMode,
    ) -> Result<(), StartError> {
        self.starts.lock().unwrap().push(mode);
        self.next.lock().unwrap().pop().unwrap_or(Ok(()))
    }
    fn stop(&self) {}
    fn teardown(&self) {}
    fn status(&self) -> PlaneStatus {
        PlaneStatus {
            running: true,
            link_up: true,
            port_present: true,
            ..Default::default()
        }
    }
    fn command(&self, _cmd: StackCommand) {}
}

fn err(failure: StartFailure, code: i32) -> Result<(), StartError> {
    Err(StartError {
        failure,
        code,
        message: "scripted".into(),
    })
}

fn runtime(
    results: Vec<Result<(), StartError>>,
) -> (Arc<Runtime>, Arc<FakePlane>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let mut settings = Settings::embedded();
    settings.persistence_dir = dir.path().join("p");
    settings.licence_path = dir.path().join("l.json");
    let key = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("testdata/dev-licence-private-key.txt"),
    )
    .unwrap();
    let key = licence::parse_private_key(key.lines().last().unwrap()).unwrap();
    let now = crate::util::unix_now();
    let payload = licence::Payload {
        licensee: "t".into(),
        product: licence::PRODUCT.into(),
        serial: "1".into(),
        issued_at: now,
        not_before: now - 10,
        not_after: now + 3600,
        binding: licence::Binding {
            machine_id: None,
            mac: None,
            any: Some(true),
        },
    };
    std::fs::write(&settings.licence_path, licence::issue(&key, &payload)).unwrap();
    let mut results = results;
    results.reverse();
    let plane = Arc::new(FakePlane {
        next: Mutex::new(results),
        starts: Mutex::new(vec![]),
    });
    let rt = Runtime::new(settings, plane.clone(), Some("fake0".into()), None);
    (rt, plane, dir)
}

#[tokio::test]
async fn control_plane_failure_goes_to_stopped_with_the_start_code() {
    let (rt, _p, _d) = runtime(vec![err(StartFailure::ControlPlane, error_code::ERR_DAP)]);
    let r = rt.start().await;
    assert_eq!(r["ok"], false);
    assert_eq!(r["errorCode"], -6);
    assert_eq!(rt.state(), RunState::Stopped);
    assert_eq!(rt.status()["errorCode"], -6);
}

#[tokio::test]
async fn data_plane_open_failure_goes_to_config_error() {
    let (rt, _p, _d) = runtime(vec![err(StartFailure::DataPlaneOpen, 19)]);
    let r = rt.start().await;
    assert_eq!(r["errorCode"], 19);
    assert_eq!(rt.state(), RunState::ConfigError);
    assert!(rt.status()["statusMessage"]
        .as_str()
        .unwrap()
        .contains("fake0"));
}

#[tokio::test]
async fn reuse_path_failures_go_to_stopped() {
    // start ok, stop, reuse start fails in the stack -> Stopped with its code
    let (rt, p, _d) = runtime(vec![
        Ok(()),
        err(StartFailure::ReuseStack, error_code::ERR_INIT),
    ]);
    assert_eq!(rt.start().await["ok"], true);
    rt.stop().await;
    let r = rt.start().await;
    assert_eq!(r["ok"], false);
    assert_eq!(rt.state(), RunState::Stopped);
    assert_eq!(rt.status()["errorCode"], -1);
    assert_eq!(
        *p.starts.lock().unwrap(),
        vec![StartMode::Fresh, StartMode::Reuse]
    );
    // the failed reuse tore the instance down: the next start is fresh
    assert_eq!(rt.start().await["ok"], true);
    assert_eq!(p.starts.lock().unwrap()[2], StartMode::Fresh);

    // reuse-path loop failure -> Stopped with errorCode 0
    let (rt, _p, _d) = runtime(vec![
        Ok(()),
        err(StartFailure::ReuseLoop, error_code::ERR_THREAD),
    ]);
    rt.start().await;
    rt.stop().await;
    let r = rt.start().await;
    assert_eq!(r["ok"], false);
    assert_eq!(rt.state(), RunState::Stopped);
    assert_eq!(rt.status()["errorCode"], 0);
}

#[tokio::test]
async fn start_phase_failure_keeps_the_previous_state() {
    let (rt, _p, _d) = runtime(vec![err(StartFailure::StartPhase, error_code::ERR_PDI)]);
    let before = rt.state();
    let r = rt.start().await;
    assert_eq!(r["ok"], false);
    assert_eq!(r["errorCode"], -5);
    assert_eq!(rt.state(), before);
}

#[tokio::test]
async fn events_drive_data_exchange_and_abort() {
    let (rt, _p, _d) = runtime(vec![]);
    rt.start().await;
    rt.handle_event(StackEvent::Connected {
        controller: "plc".into(),
        ar: None,
    });
    assert_eq!(rt.state(), RunState::DataExchange);
    assert!(rt.status()["statusMessage"]
        .as_str()
        .is_some_and(|m| m.contains("exchange with plc")));
    rt.handle_event(StackEvent::Aborted {
        reason: "x".into(),
        cause: AbortCause::Fault,
    });
    assert_eq!(rt.state(), RunState::Aborted);
    let s = rt.status();
    assert_eq!(s["statusMessage"], "cyclic data exchange lost: x");
    assert_eq!(
        (s["connected"].as_bool(), s["everConnected"].as_bool()),
        (Some(false), Some(true))
    );
    rt.handle_event(StackEvent::Connected {
        controller: "plc".into(),
        ar: None,
    });
    assert_eq!(rt.state(), RunState::DataExchange);
    rt.stop().await;
    // late events after a stop do not resurrect the connection
    rt.handle_event(StackEvent::Connected {
        controller: "plc".into(),
        ar: None,
    });
    assert_eq!(rt.state(), RunState::Stopped);
}

#[test]
fn status_json_is_the_status_document_with_keys_in_sorted_order() {
    let (rt, _p, _d) = runtime(vec![]);
    let text = rt.status_json();
    let mut parsed: Value = serde_json::from_slice(&text).unwrap();
    let mut value = rt.status();
    // The bytes equal what a `Value` (sorted map) of the same document serialises to.
    assert_eq!(text, serde_json::to_vec(&parsed).unwrap());
    for v in [&mut parsed, &mut value] {
        v.as_object_mut().unwrap().remove("timestamp").unwrap();
    }
    assert_eq!(parsed, value);
    assert_eq!(value["interfaceName"], "fake0");
    assert_eq!(value["hardwarePortPresent"], false);
    assert_eq!(value["state"], "Stopped");
}

#[test]
fn port_presence_cache_answers_from_cache_within_the_ttl_only() {
    let c = crate::dataplane::PortPresenceCache::new(Duration::from_secs(3600));
    assert_eq!(c.cached("lo"), None);
    assert!(c.present("lo"));
    assert_eq!(c.cached("lo"), Some(true));
    // Another NIC name is a miss, and its answer replaces the entry.
    assert_eq!(c.cached("pn-h4-absent0"), None);
    assert!(!c.present("pn-h4-absent0"));
    assert_eq!(c.cached("lo"), None);
    let zero = crate::dataplane::PortPresenceCache::new(Duration::ZERO);
    assert!(zero.present("lo"));
    assert_eq!(zero.cached("lo"), None);
}

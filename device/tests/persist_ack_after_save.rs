//! Remanent data is acknowledged only after it is durable (docs/decisions.md): the production
//! runtime's commit handler, reached exactly as the stack reaches it (the `EventSink` the
//! runtime hands to `DataPlane::start`), behind the production record store (`Records::write`,
//! as the CM thread calls it) and DCP responder (`DcpResponder::with_durable`, as the L2 worker
//! builds it), and `POST /api/reset` (`Runtime::reset`).
//!
//! * When the answer exists (the write returned, the Set response frame was built), the value
//!   is already in the file: `persist::Store::load` parses it.
//! * When the file cannot be written (the persistence directory is made unreachable: its path
//!   runs through a symlink swapped to a regular file, which fails with ENOTDIR also for
//!   root), the answer is the error (record write DF 80 A1 00, DCP BlockError 5, reset
//!   ok=false), the in-memory value is the old one and the file still holds the old one.

mod common;

use pn_protocol::wire::Emit;
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use pn_device::config::Settings;
use pn_device::dataplane::{
    DataPlane, EventSink, NicInfo, PlaneStatus, ProbeError, ResetMode, StackCommand, StackConfig,
    StartError, StartMode,
};
use pn_device::image::ProcessImage;
use pn_device::persist::{LoadOutcome, Remanent, Store};
use pn_device::runtime::Runtime;
use pn_device::stack::dcp::{DcpIdentity, DcpResponder};
use pn_device::stack::records::Records;
use pn_protocol::time::Instant;
use pn_protocol::wire::dcp::{option, qualifier, suboption, BlockError, DcpRepr, DcpValue};
use pn_protocol::wire::dcp::{DcpBlock, NameOfStation};
use pn_protocol::wire::ethernet::MacAddr;
use pn_protocol::wire::pnio::im::{Im1, ImRecord};
use pn_protocol::wire::pnio::record::{index, RecordAddress};

const DEV: MacAddr = MacAddr([0x02, 0x00, 0x00, 0x00, 0x12, 0x34]);
const CTRL: MacAddr = MacAddr([0x02, 0x00, 0x00, 0x00, 0x00, 0x01]);

/// A data plane that only keeps what `start` hands over (the sink and the configuration).
#[derive(Default)]
struct CapturePlane {
    started: Mutex<Option<(EventSink, StackConfig)>>,
    commands: Mutex<Vec<StackCommand>>,
}

impl DataPlane for CapturePlane {
    fn kind(&self) -> &'static str {
        "capture"
    }
    fn probe(&self, nic: &str) -> Result<NicInfo, ProbeError> {
        Ok(NicInfo::up(nic))
    }
    fn start(
        &self,
        cfg: &StackConfig,
        _image: Arc<ProcessImage>,
        events: EventSink,
        _mode: StartMode,
    ) -> Result<(), StartError> {
        *self.started.lock().unwrap() = Some((events, cfg.clone()));
        Ok(())
    }
    fn stop(&self) {}
    fn teardown(&self) {}
    fn status(&self) -> PlaneStatus {
        PlaneStatus::default()
    }
    fn command(&self, cmd: StackCommand) {
        self.commands.lock().unwrap().push(cmd);
    }
}

/// The persistence directory `<tmp>/link/p`, where `link` points at `<tmp>/real` (writable)
/// or at the regular file `<tmp>/blocker` (every file operation fails with ENOTDIR).
struct Rig {
    dir: tempfile::TempDir,
    rt: Arc<Runtime>,
    plane: Arc<CapturePlane>,
    sink: EventSink,
    cfg: StackConfig,
}

impl Rig {
    async fn new() -> Rig {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("real")).unwrap();
        std::fs::write(dir.path().join("blocker"), b"not a directory").unwrap();
        std::os::unix::fs::symlink(dir.path().join("real"), dir.path().join("link")).unwrap();
        let mut settings = Settings::embedded();
        settings.persistence_dir = dir.path().join("link").join("p");
        settings.licence_path = dir.path().join("licence.json");
        common::write_licence(&settings.licence_path, 3600, common::any_binding());
        let plane = Arc::new(CapturePlane::default());
        let rt = Runtime::new(settings, plane.clone(), Some("fake0".into()), None);
        // The event loop: a failed commit on a stack thread raises its alarm through it.
        rt.spawn_tasks();
        let r = rt.start().await;
        assert_eq!(r["ok"], true, "{r}");
        let (sink, cfg) = plane.started.lock().unwrap().take().expect("started");
        Rig {
            dir,
            rt,
            plane,
            sink,
            cfg,
        }
    }

    /// The store as a fresh daemon would read it (through the real directory).
    fn on_disk(&self) -> Remanent {
        match Store::new(self.dir.path().join("real").join("p")).load() {
            LoadOutcome::Loaded(r) => r,
            LoadOutcome::Missing => Remanent::default(),
            LoadOutcome::Corrupt(e) => panic!("corrupt: {e}"),
        }
    }

    fn file_exists(&self) -> bool {
        self.dir
            .path()
            .join("real")
            .join("p")
            .join("remanent.json")
            .exists()
    }

    /// Make the persistence directory unreachable (`false`) or reachable again (`true`).
    fn writable(&self, on: bool) {
        let d = self.dir.path();
        let tmp = d.join("link.new");
        let target: PathBuf = if on {
            d.join("real")
        } else {
            d.join("blocker")
        };
        std::os::unix::fs::symlink(&target, &tmp).unwrap();
        std::fs::rename(&tmp, d.join("link")).unwrap();
    }

    /// The `persistence` alarm is active (awaited: from a stack thread it comes through the
    /// runtime's event queue).
    fn persistence_alarm(&self) -> bool {
        pn_testkit::poll::until(std::time::Duration::from_secs(5), || {
            self.rt
                .alarms_active()
                .iter()
                .any(|a| serde_json::to_value(a).unwrap()["source"] == "persistence")
        })
    }
}

fn im1(function: &str) -> Vec<u8> {
    ImRecord::Im1(Im1 {
        tag_function: function.into(),
        tag_location: "HALL 7".into(),
    })
    .to_bytes()
    .unwrap()
}

fn ident(name: &str) -> DcpIdentity {
    DcpIdentity {
        mac: DEV,
        station_name: name.into(),
        device_vendor: "pn-device".into(),
        vendor_id: 0x0493,
        device_id: 1,
        ip: Ipv4Addr::new(192, 168, 0, 10),
        mask: Ipv4Addr::new(255, 255, 255, 0),
        gateway: Ipv4Addr::UNSPECIFIED,
        device_instance: (0, 1),
        device_initiative: false,
    }
}

/// Send one Set; return the BlockError of each Control/Response block of the answer.
fn set(d: &mut DcpResponder, req: DcpRepr) -> Vec<BlockError> {
    let f = req.build_frame(DEV, CTRL, None).unwrap();
    let out = d.on_frame(&f, Instant::from_millis(0));
    assert_eq!(out.frames.len(), 1, "one Set response");
    let (_, _, r) = DcpRepr::parse_frame(&out.frames[0]).unwrap();
    assert_eq!(r.xid, req.xid);
    r.blocks
        .iter()
        .map(|b| match b.value {
            DcpValue::Response { error, .. } => error,
            ref v => panic!("not a response block: {v:?}"),
        })
        .collect()
}

fn get_name(d: &mut DcpResponder) -> Vec<u8> {
    let req = DcpRepr::get_request(
        99,
        &[(option::DEVICE_PROPERTIES, suboption::NAME_OF_STATION)],
    );
    let out = d.on_frame(
        &req.build_frame(DEV, CTRL, None).unwrap(),
        Instant::from_millis(0),
    );
    let (_, _, r) = DcpRepr::parse_frame(&out.frames[0]).unwrap();
    r.name_of_station()
        .expect("name in the Get response")
        .to_vec()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn persist_record_write_answers_after_the_file_and_refuses_what_cannot_be_stored() {
    let rig = Rig::new().await;
    let mut records = Records::from_config(&rig.cfg);
    let a = RecordAddress::new(0, 0, 1, index::IM1);
    let commit = |ev: &_| rig.sink.commit(ev);

    // Success: by the time the write returns (the CM thread then builds the response), the
    // file holds the value.
    let ev = records.write(&a, &im1("PUMP"), commit).expect("written");
    assert!(ev.is_some(), "the runtime is told about the write");
    let disk = rig.on_disk();
    assert_eq!(disk.im.tag_function.trim_end(), "PUMP");
    assert_eq!(disk.records.len(), 1);
    assert_eq!(disk.records[0].data, im1("PUMP"));
    assert_eq!(rig.rt.im()["im1TagFunction"], "PUMP");

    // The directory cannot be written: "application: write error", nothing changes anywhere.
    rig.writable(false);
    let e = records.write(&a, &im1("VALVE"), commit).unwrap_err();
    assert_eq!(e.octets(), [0xDF, 0x80, 0xA1, 0x00]);
    assert_eq!(records.read(&a).unwrap(), im1("PUMP"), "stack value kept");
    assert_eq!(rig.rt.im()["im1TagFunction"], "PUMP", "runtime value kept");
    assert_eq!(rig.rt.records()["count"], 1);
    assert_eq!(rig.on_disk().im.tag_function.trim_end(), "PUMP");
    assert!(rig.persistence_alarm(), "the failure is an alarm");
    // A user record is refused the same way and never becomes readable.
    let u = RecordAddress::new(0, 0, 1, 0x0042);
    let e = records.write(&u, &[1, 2, 3, 4], commit).unwrap_err();
    assert_eq!(e.octets(), [0xDF, 0x80, 0xA1, 0x00]);
    assert!(records.read(&u).is_err());

    // Writable again: the next write is stored before it is answered.
    rig.writable(true);
    records.write(&a, &im1("VALVE"), commit).expect("written");
    records.write(&u, &[1, 2, 3, 4], commit).expect("written");
    let disk = rig.on_disk();
    assert_eq!(disk.im.tag_function.trim_end(), "VALVE");
    assert_eq!(disk.records.len(), 2);
    assert_eq!(rig.rt.im()["im1TagFunction"], "VALVE");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn persist_dcp_set_answers_after_the_file_and_refuses_what_cannot_be_stored() {
    let rig = Rig::new().await;
    let mut d = DcpResponder::new(ident(&rig.cfg.station_name), Instant::from_millis(0))
        .with_durable(pn_device::stack::dcp::durable_through(rig.sink.clone()));
    let name = |s: &str| NameOfStation::new(s).unwrap();

    // Permanent name and IP: in the file when the response frame exists.
    assert_eq!(
        set(&mut d, DcpRepr::set_name(1, &name("stored-name"), true)),
        [BlockError::OK]
    );
    assert_eq!(rig.on_disk().station_name.as_deref(), Some("stored-name"));
    let ip = Ipv4Addr::new(192, 168, 0, 77);
    let mask = Ipv4Addr::new(255, 255, 255, 0);
    assert_eq!(
        set(
            &mut d,
            DcpRepr::set_ip(2, ip, mask, Ipv4Addr::UNSPECIFIED, true)
        ),
        [BlockError::OK]
    );
    assert_eq!(rig.on_disk().ip.map(|i| i.ip), Some(ip));

    // Unwritable: BlockError 5 "SET not possible by local reasons"; the device keeps
    // answering with the old name, the file keeps it, no event reports a change.
    rig.writable(false);
    let f = DcpRepr::set_name(3, &name("lost-name"), true)
        .build_frame(DEV, CTRL, None)
        .unwrap();
    let out = d.on_frame(&f, Instant::from_millis(0));
    assert!(out.events.is_empty(), "{:?}", out.events);
    let (_, _, r) = DcpRepr::parse_frame(&out.frames[0]).unwrap();
    assert!(matches!(
        r.blocks[0].value,
        DcpValue::Response {
            error: BlockError::SET_NOT_POSSIBLE,
            ..
        }
    ));
    assert_eq!(d.identity().station_name, "stored-name");
    assert_eq!(get_name(&mut d), b"stored-name");
    let other_ip = Ipv4Addr::new(192, 168, 0, 78);
    assert_eq!(
        set(
            &mut d,
            DcpRepr::set_ip(4, other_ip, mask, Ipv4Addr::UNSPECIFIED, true)
        ),
        [BlockError::SET_NOT_POSSIBLE]
    );
    assert_eq!(d.identity().ip, ip);
    // A temporary name erases the stored one (docs/decisions.md §13): also refused.
    assert_eq!(
        set(&mut d, DcpRepr::set_name(5, &name("temp-name"), false)),
        [BlockError::SET_NOT_POSSIBLE]
    );
    // Resets erase remanent data: refused too, nothing reset.
    assert_eq!(
        set(
            &mut d,
            DcpRepr::set_request(6, vec![DcpBlock::with_qualifier(DcpValue::FactoryReset, 0)])
        ),
        [BlockError::SET_NOT_POSSIBLE]
    );
    assert_eq!(
        set(
            &mut d,
            DcpRepr::set_reset_to_factory(7, qualifier::RESET_COMMUNICATION_PARAMETER)
        ),
        [BlockError::SET_NOT_POSSIBLE]
    );
    assert_eq!(d.identity().station_name, "stored-name");
    let disk = rig.on_disk();
    assert_eq!(disk.station_name.as_deref(), Some("stored-name"));
    assert_eq!(disk.ip.map(|i| i.ip), Some(ip));
    // A Set that changes nothing stored needs no write and is answered OK.
    assert_eq!(
        set(&mut d, DcpRepr::set_name(8, &name("stored-name"), true)),
        [BlockError::OK]
    );

    // Writable again: a temporary name erases the stored one before the answer; a factory
    // reset deletes the file before the answer.
    rig.writable(true);
    assert_eq!(
        set(&mut d, DcpRepr::set_name(9, &name("temp-name"), false)),
        [BlockError::OK]
    );
    assert_eq!(rig.on_disk().station_name, None);
    assert_eq!(
        set(
            &mut d,
            DcpRepr::set_request(
                10,
                vec![DcpBlock::with_qualifier(DcpValue::FactoryReset, 0)]
            )
        ),
        [BlockError::OK]
    );
    // Everything erased; the file keeps only that the name was erased (decisions §21), and
    // the NameOfStation is empty.
    let disk = rig.on_disk();
    assert!(disk.name_cleared && disk.station_name.is_none() && disk.ip.is_none());
    assert_eq!(d.identity().station_name, "");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn persist_http_reset_answers_after_the_file_and_refuses_what_cannot_be_stored() {
    let rig = Rig::new().await;
    let mut records = Records::from_config(&rig.cfg);
    let a = RecordAddress::new(0, 0, 1, index::IM1);
    records
        .write(&a, &im1("PUMP"), |ev| rig.sink.commit(ev))
        .unwrap();
    assert!(rig.file_exists());

    rig.writable(false);
    let r = rig.rt.reset(ResetMode::Factory).await;
    assert_eq!(r["ok"], false, "{r}");
    assert_eq!(r["mode"], "factory");
    assert_eq!(rig.rt.im()["im1TagFunction"], "PUMP");
    assert_eq!(rig.on_disk().im.tag_function.trim_end(), "PUMP");
    assert!(
        rig.plane.commands.lock().unwrap().is_empty(),
        "the stack is not reset when the reset could not be stored"
    );

    rig.writable(true);
    let r = rig.rt.reset(ResetMode::Factory).await;
    assert_eq!(r["ok"], true, "{r}");
    let disk = rig.on_disk();
    assert!(
        disk.name_cleared && disk.im.tag_function.is_empty() && disk.records.is_empty(),
        "the file is reset when the answer comes: {disk:?}"
    );
    assert_eq!(rig.rt.im()["im1TagFunction"], "");
    assert_eq!(rig.plane.commands.lock().unwrap().len(), 1);
}

/// A plane with the real stack's locking: `status` and `command` take the plane's lock, and
/// `stop` holds it while it waits for the CM thread, which is committing a record write at
/// that moment. An API call that holds the runtime's state lock while it asks the plane for
/// its status (`GET /api/diag`) must not make that commit wait for the state lock: the three
/// would wait on each other forever (found in review; the commit now takes only the
/// remanent data's own lock).
#[derive(Default)]
struct LockingPlane {
    inner: Mutex<()>,
    sink: Mutex<Option<EventSink>>,
    in_status: std::sync::atomic::AtomicBool,
    commit_result: Mutex<Option<Result<(), String>>>,
}

impl DataPlane for LockingPlane {
    fn kind(&self) -> &'static str {
        "locking"
    }
    fn probe(&self, nic: &str) -> Result<NicInfo, ProbeError> {
        Ok(NicInfo::up(nic))
    }
    fn start(
        &self,
        _cfg: &StackConfig,
        _image: Arc<ProcessImage>,
        events: EventSink,
        _mode: StartMode,
    ) -> Result<(), StartError> {
        *self.sink.lock().unwrap() = Some(events);
        Ok(())
    }
    fn stop(&self) {
        use std::sync::atomic::Ordering;
        use std::time::Duration;
        let _g = self.inner.lock().unwrap();
        // Wait until an API call is inside `status` (it holds the state lock and now waits
        // for this lock), then let the "CM thread" commit and wait for it, as the stack's
        // stop joins its threads.
        assert!(
            pn_testkit::poll::until(Duration::from_secs(5), || self
                .in_status
                .load(Ordering::SeqCst)),
            "no status call arrived"
        );
        let sink = self.sink.lock().unwrap().clone().expect("started");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(
                sink.commit(&pn_device::dataplane::StackEvent::RecordWritten {
                    slot: 0,
                    subslot: 1,
                    index: 0x42,
                    data: vec![1, 2, 3],
                }),
            );
        });
        *self.commit_result.lock().unwrap() = rx.recv_timeout(Duration::from_secs(5)).ok();
    }
    fn teardown(&self) {}
    fn status(&self) -> PlaneStatus {
        self.in_status
            .store(true, std::sync::atomic::Ordering::SeqCst);
        let _g = self.inner.lock().unwrap();
        PlaneStatus::default()
    }
    fn command(&self, _cmd: StackCommand) {
        let _g = self.inner.lock().unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_on_a_stack_thread_never_waits_for_an_api_call_that_waits_for_the_stack() {
    let dir = tempfile::tempdir().unwrap();
    let mut settings = Settings::embedded();
    settings.persistence_dir = dir.path().join("p");
    settings.licence_path = dir.path().join("licence.json");
    common::write_licence(&settings.licence_path, 3600, common::any_binding());
    let plane = Arc::new(LockingPlane::default());
    let rt = Runtime::new(settings, plane.clone(), Some("fake0".into()), None);
    assert_eq!(rt.start().await["ok"], true);
    let stopper = {
        let rt = rt.clone();
        tokio::spawn(async move { rt.stop().await })
    };
    let diag = {
        let rt = rt.clone();
        std::thread::spawn(move || rt.diag())
    };
    tokio::time::timeout(std::time::Duration::from_secs(10), stopper)
        .await
        .expect("stop finished (no deadlock)")
        .unwrap();
    diag.join().expect("diag answered");
    assert_eq!(
        plane.commit_result.lock().unwrap().clone(),
        Some(Ok(())),
        "the CM thread's commit returned and stored the record"
    );
    match Store::new(dir.path().join("p")).load() {
        LoadOutcome::Loaded(r) => assert_eq!(r.records.len(), 1, "{r:?}"),
        other => panic!("record not stored: {other:?}"),
    }
}

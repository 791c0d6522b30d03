//! The farm against pn-controller in network namespaces: four farm devices on one veth end,
//! the controller library on the other. DCP Identify finds all four; three ARs run at once on
//! one controller schedule; outputs reach each farm device's image and inputs set on the farm
//! reach the controller; I&M0 tells the copies apart; a diagnosis raised on the farm arrives
//! as an alarm; the status view lists the devices; Release returns every device to idle.
//! 4 ms cycle, DataHoldFactor 125 (500 ms): the subject is the farm's function, not timing
//! (a loaded CI VM has stalled threads for ~100 ms, see controller-sim/tests/device_many.rs).
//!
//! Second test: the farm devices' SNMP agents and LLMNR responders against independent
//! clients (net-snmp, a UDP socket).

use pn_protocol::wire::Emit;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream, UdpSocket};
use std::os::fd::AsRawFd;
use std::time::Duration;

use pn_controller::devconfig::DeviceConfig;
use pn_controller::{ArConfig, ArState, Controller, ControllerConfig, RealtimeOptions};
use pn_device::dataplane::DiagnosisEntry;
use pn_device_formats::config::RuntimeConfig;
use pn_farm::io::RxMode;
use pn_farm::plant::{numbered, Numbering, DEFAULT_MAC_BASE};
use pn_farm::status::{DeviceView, FarmView};
use pn_farm::{Farm, FarmOptions};
use pn_protocol::wire::llmnr::{self, rtype, LlmnrRepr, Question, CLASS_IN};
use pn_protocol::wire::pnio::im::ImRecord;
use pn_testkit::daemon::DeviceXml;
use pn_testkit::netns::{NetNs, Veth};

const CTL_IP: &str = "192.168.83.1/24";
const BASE: Ipv4Addr = Ipv4Addr::new(192, 168, 83, 10);
const N: usize = 4;

fn xml() -> String {
    DeviceXml::new("unused")
        .ident("ORDER-F", "SN-F", 1, "V1.0.0")
        .product(None)
        .nic(None)
        .ip(BASE)
        .send_clock_ms(4)
        .to_xml()
}

/// GET `path` from the status view inside `ns`.
fn http_get(ns: &NetNs, addr: SocketAddr, path: &str) -> String {
    let req = format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n");
    ns.enter(move || {
        let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        s.write_all(req.as_bytes()).unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        out
    })
    .unwrap()
}

/// Start a farm of `n` devices named `<prefix>1..` with IPs from [`BASE`] on `nic` in `ns`.
fn start_farm(
    ns: &NetNs,
    nic: &str,
    cfg: &RuntimeConfig,
    prefix: &str,
    n: usize,
    http: bool,
    rx: RxMode,
) -> Farm {
    let numbering = Numbering {
        count: n,
        name_prefix: prefix.into(),
        ip_base: Some(BASE),
        mac_base: DEFAULT_MAC_BASE,
        unnamed: false,
    };
    let opts = FarmOptions {
        http: http.then(|| "127.0.0.1:0".parse().unwrap()),
        realtime: true,
        state_dir: None,
        rx,
        standby: None,
    };
    start_farm_with(ns, nic, cfg, &numbering, opts)
}

fn start_farm_with(
    ns: &NetNs,
    nic: &str,
    cfg: &RuntimeConfig,
    numbering: &Numbering,
    opts: FarmOptions,
) -> Farm {
    let specs = numbered(cfg, nic, numbering).unwrap();
    let nic = nic.to_string();
    ns.enter(move || Farm::start(&nic, &specs, opts))
        .unwrap()
        .expect("farm")
}

/// The controller on `nic` in `ns`: send clock 4 ms (factor 128), cyclic thread at
/// SCHED_FIFO 40.
fn start_controller(ns: &NetNs, nic: &str) -> Controller {
    let ifname = nic.to_string();
    ns.enter(move || {
        let mut c = ControllerConfig::new(&ifname);
        c.send_clock_factor = 128;
        c.realtime = RealtimeOptions {
            fifo_priority: Some(40),
            lock_memory: false,
        };
        Controller::start(c)
    })
    .unwrap()
    .expect("controller")
}

/// The controller's AR for farm device `k` (0-based, IP [`BASE`] + k) named `name`: every
/// cycle (4 ms), DataHoldFactor and WatchdogFactor `dhf`.
fn ar_for(text: &str, name: &str, k: usize, dhf: u16) -> ArConfig {
    let mut m = DeviceConfig::parse(text).unwrap().model;
    m.station_name = name.into();
    let mut c = ArConfig::new(m);
    c.device_ip = Some(Ipv4Addr::new(192, 168, 83, 10 + k as u8));
    c.timing.reduction_ratio = 1;
    c.timing.data_hold_factor = dhf;
    c.timing.watchdog_factor = dhf;
    c
}

#[test]
fn controller_discovers_connects_exchanges_reads_alarms_and_releases_farm_devices() {
    if !pn_testkit::env::require_root() {
        return;
    }
    let (ctl_ns, dev_ns, veth) =
        Veth::controller_device("pnf", Some(CTL_IP), None).expect("namespaces and veth pair");
    let text = xml();
    let cfg = RuntimeConfig::parse(&text, "test").unwrap();
    let farm = start_farm(&dev_ns, &veth.b, &cfg, "farm-dev-", N, true, RxMode::Ring);
    let ctl = start_controller(&ctl_ns, &veth.a);

    // DCP Identify (all): every farm device answers with its own name, IP and identity.
    let found = ctl
        .dcp_identify_all(8, Duration::from_millis(300))
        .expect("identify");
    let names: Vec<&str> = found.iter().map(|d| d.name_of_station.as_str()).collect();
    assert_eq!(
        names,
        ["farm-dev-1", "farm-dev-2", "farm-dev-3", "farm-dev-4"],
        "{found:?}"
    );
    for (k, d) in found.iter().enumerate() {
        assert_eq!(d.ip, Some(Ipv4Addr::new(192, 168, 83, 10 + k as u8)));
        assert_eq!(d.vendor_id, Some(cfg.vendor_id));
        assert_eq!(d.device_id, Some(cfg.device_id));
    }

    // Three ARs at once (device 4 stays idle).
    let mut ars = Vec::new();
    for k in 0..3usize {
        let c = ar_for(&text, &format!("farm-dev-{}", k + 1), k, 125);
        let h = ctl
            .connect(c)
            .unwrap_or_else(|e| panic!("connect farm-dev-{}: {e}\n{:?}", k + 1, farm.devices()));
        assert_eq!(h.state(), ArState::DataExchange);
        ars.push(h);
    }
    let in_data = pn_testkit::poll::until(Duration::from_secs(5), || {
        farm.devices()[..3]
            .iter()
            .all(|d| d.state == "DataExchange")
    });
    assert!(in_data, "{:?}", farm.devices());
    assert_eq!(farm.devices()[3].state, "Idle");

    // Distinct data each way.
    for (k, h) in ars.iter().enumerate() {
        h.set_outputs(0, &[0xD0 + k as u8, 1, 2, 3]).unwrap();
        farm.set_inputs(k, 0, &[0xE0 + k as u8, 9, 8, 7]).unwrap();
    }
    for (k, h) in ars.iter().enumerate() {
        let arrived = pn_testkit::poll::until(Duration::from_secs(5), || {
            farm.outputs(k)
                .is_some_and(|o| o.starts_with(&[0xD0 + k as u8, 1, 2, 3]))
                && h.inputs().data.starts_with(&[0xE0 + k as u8, 9, 8, 7])
        });
        assert!(
            arrived,
            "device {k}: farm {:?}; controller inputs {:?}",
            farm.device(k),
            h.inputs()
        );
    }

    // I&M0 of each device: the configuration's identity, the copy's own serial number.
    for (k, h) in ars.iter().enumerate() {
        match h.read_im(0, 1, 0).expect("I&M0") {
            ImRecord::Im0(im0) => {
                assert_eq!(im0.vendor_id, cfg.vendor_id);
                assert_eq!(im0.order_id.trim(), "ORDER-F");
                assert_eq!(im0.serial_number.trim(), format!("SN-F-{}", k + 1));
            }
            other => panic!("not I&M0: {other:?}"),
        }
    }

    // A diagnosis raised on farm-dev-2 reaches its controller as an alarm, and is acknowledged.
    let diag = DiagnosisEntry {
        slot: 1,
        subslot: 1,
        channel: 0,
        error_type: 1,
        severity: 0,
        text: "short circuit".into(),
    };
    assert!(farm.set_diagnosis(1, diag));
    let got = pn_testkit::poll::until(Duration::from_secs(5), || {
        ars[1]
            .alarms()
            .iter()
            .any(|a| a.slot == 1 && a.subslot == 1 && a.alarm_type == 1)
            && farm.devices()[1].alarms_acked >= 1
    });
    assert!(
        got,
        "alarms {:?}; farm {:?}",
        ars[1].alarms(),
        farm.device(1)
    );
    assert!(ars[0].alarms().is_empty() && ars[2].alarms().is_empty());

    // The status view lists every device with its AR state.
    let addr = farm.http_addr().unwrap();
    let resp = http_get(&dev_ns, addr, "/api/devices");
    let body = resp.split("\r\n\r\n").nth(1).unwrap_or_default();
    let views: Vec<DeviceView> =
        serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {resp}"));
    assert_eq!(views.len(), N);
    assert_eq!(views[2].state, "DataExchange");
    assert!(views[2].controller.is_some());
    assert!(
        views[2].frames_sent > 0 && views[2].frames_received > 0,
        "{:?}",
        views[2]
    );
    // The farm reads from its receive ring, and the kernel dropped nothing.
    let resp = http_get(&dev_ns, addr, "/api/farm");
    let body = resp.split("\r\n\r\n").nth(1).unwrap_or_default();
    let fv: FarmView = serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {resp}"));
    assert_eq!(
        (fv.rx.as_str(), fv.rx_dropped, fv.rx_errors, fv.standby_cpu),
        ("ring", 0, 0, None),
        "{fv:?}"
    );
    let page = http_get(&dev_ns, addr, "/");
    assert!(
        page.contains("farm-dev-4") && page.contains("<table>"),
        "{page}"
    );

    for (k, h) in ars.iter().enumerate() {
        assert_eq!(h.status().watchdog_expiries, 0, "controller side, AR {k}");
        h.release().unwrap();
    }
    let idle = pn_testkit::poll::until(Duration::from_secs(5), || {
        farm.devices().iter().all(|d| d.state == "Idle")
    });
    assert!(idle, "{:?}", farm.devices());
    for d in farm.devices() {
        assert_eq!(d.watchdog_trips, 0, "{d:?}");
    }
    ctl.shutdown();
    farm.stop();
    drop(veth);
}

// ---------------------------------------------------------------------------------------
// SNMP and LLMNR: net-snmp's snmpget/snmpwalk (v1 and v2c, GetBulk) and LLMNR queries over a
// UDP socket (to the group 224.0.0.252 and unicast) against two farm devices. Each answers
// with its own station name and address; a name nobody has gets no answer, nor does a wrong
// community.
// ---------------------------------------------------------------------------------------

/// The controller side's address (of [`CTL_IP`]).
const CTL: Ipv4Addr = Ipv4Addr::new(192, 168, 83, 1);

fn ip(k: usize) -> Ipv4Addr {
    Ipv4Addr::new(192, 168, 83, 10 + k as u8)
}

fn name(k: usize) -> String {
    format!("farm-svc-{}", k + 1)
}

/// Run net-snmp's `tool` (`snmpget`, `snmpwalk`) with `community` against `args`; `retries`
/// 0 for a request that must go unanswered (it then fails after one second).
fn snmp(
    ns: &NetNs,
    tool: &str,
    community: &str,
    retries: &str,
    args: &[&str],
) -> Result<String, String> {
    let mut argv = vec![tool, "-c", community, "-On", "-t", "1", "-r", retries];
    argv.extend_from_slice(args);
    ns.exec_ok(&argv)
}

/// Send an LLMNR A query for `who` to `to`; the answers that arrive within `wait`.
fn llmnr_query(to: Ipv4Addr, who: &str, id: u16, wait: Duration) -> Vec<(SocketAddr, LlmnrRepr)> {
    let s = UdpSocket::bind((CTL, 0)).expect("bind");
    let ifaddr = libc::in_addr {
        s_addr: u32::from_ne_bytes(CTL.octets()),
    };
    // SAFETY: a valid in_addr pointer and size on our own socket. The namespace has no
    // multicast route: the query leaves by the interface of the controller address.
    let rc = unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::IPPROTO_IP,
            libc::IP_MULTICAST_IF,
            &ifaddr as *const libc::in_addr as *const libc::c_void,
            std::mem::size_of::<libc::in_addr>() as libc::socklen_t,
        )
    };
    assert_eq!(
        rc,
        0,
        "IP_MULTICAST_IF: {}",
        std::io::Error::last_os_error()
    );
    let q = LlmnrRepr {
        id,
        flags: 0,
        question: Question {
            labels: who.split('.').map(|l| l.as_bytes().to_vec()).collect(),
            qtype: rtype::A,
            qclass: CLASS_IN,
        },
        answers: vec![],
    };
    s.send_to(&q.to_bytes().unwrap(), (to, llmnr::PORT))
        .expect("send query");
    let end = std::time::Instant::now() + wait;
    let mut got = Vec::new();
    let mut buf = [0u8; 1500];
    while let Some(left) = end.checked_duration_since(std::time::Instant::now()) {
        s.set_read_timeout(Some(left.max(Duration::from_millis(1))))
            .unwrap();
        let Ok((n, from)) = s.recv_from(&mut buf) else {
            break;
        };
        got.push((
            from,
            LlmnrRepr::parse(&buf[..n]).expect("an LLMNR response"),
        ));
    }
    got
}

#[test]
fn farm_devices_answer_snmp_and_llmnr_each_with_its_own_name() {
    if !pn_testkit::env::require_root() {
        return;
    }
    let tools = pn_testkit::env::require(
        std::path::Path::new("/usr/bin/snmpget").exists() || pn_testkit::env::has_tool("snmpget"),
        "snmpget/snmpwalk (apt-get install snmp)",
    );
    if !tools {
        return;
    }
    let (ctl_ns, dev_ns, veth) =
        Veth::controller_device("pnsv", Some(CTL_IP), None).expect("namespaces and veth pair");
    let cfg = RuntimeConfig::parse(&xml(), "test").unwrap();
    // This test reads with recvmmsg(2), the other with the receive ring: both paths in the lab.
    let farm = start_farm(&dev_ns, &veth.b, &cfg, "farm-svc-", 2, false, RxMode::Mmsg);

    for k in 0..2 {
        let a = ip(k).to_string();
        let oids = ["1.3.6.1.2.1.1.5.0", "1.3.6.1.2.1.1.7.0"];
        let out = snmp(
            &ctl_ns,
            "snmpget",
            "public",
            "2",
            &["-v2c", &a, oids[0], oids[1]],
        )
        .unwrap_or_else(|e| panic!("snmpget {a}: {e}\n{:?}", farm.devices()));
        assert!(
            out.contains(&format!(".1.3.6.1.2.1.1.5.0 = STRING: \"{}\"", name(k))),
            "{out}"
        );
        assert!(out.contains(".1.3.6.1.2.1.1.7.0 = INTEGER: 78"), "{out}");
    }
    // v1 walk (GetNext) of device 2: the seven objects of the system group.
    let system = "1.3.6.1.2.1.1";
    let out = snmp(
        &ctl_ns,
        "snmpwalk",
        "public",
        "2",
        &["-v1", &ip(1).to_string(), system],
    )
    .unwrap();
    let objects = out.lines().filter(|l| l.starts_with(".1.3.6.1.2.1.1."));
    assert_eq!(objects.count(), 7, "{out}");
    assert!(
        out.contains(".1.3.6.1.2.1.1.1.0 = STRING: \"pn-device"),
        "{out}"
    );
    assert!(out.contains(".1.3.6.1.2.1.1.3.0 = Timeticks:"), "{out}");
    assert!(out.contains("= STRING: \"farm-svc-2\""), "{out}");
    // v2c walk (GetBulk) of device 1, to the end of the MIB view.
    let out = snmp(
        &ctl_ns,
        "snmpwalk",
        "public",
        "2",
        &["-v2c", &ip(0).to_string(), system],
    )
    .unwrap();
    assert!(out.contains("= STRING: \"farm-svc-1\""), "{out}");
    assert!(
        out.contains("No more variables left in this MIB View"),
        "{out}"
    );
    // A wrong community gets no answer.
    let wrong = snmp(
        &ctl_ns,
        "snmpget",
        "private",
        "0",
        &["-v2c", &ip(0).to_string(), "1.3.6.1.2.1.1.5.0"],
    );
    assert!(wrong.is_err(), "{wrong:?}");

    // LLMNR: to the group, each name is answered by its own device only, with its address;
    // a unicast query is answered too; a name nobody has is not.
    let answers = ctl_ns
        .enter(move || {
            let mut v = Vec::new();
            for k in 0..2 {
                let who = name(k).to_uppercase();
                v.push(llmnr_query(
                    llmnr::GROUP,
                    &who,
                    0x4200 + k as u16,
                    Duration::from_secs(1),
                ));
            }
            v.push(llmnr_query(ip(1), &name(1), 0x4300, Duration::from_secs(1)));
            v.push(llmnr_query(
                llmnr::GROUP,
                "nobody-here",
                0x4400,
                Duration::from_millis(500),
            ));
            v
        })
        .unwrap();
    let expect = [(0usize, 0x4200u16), (1, 0x4201), (1, 0x4300)];
    for ((k, id), got) in expect.iter().zip(&answers) {
        assert_eq!(got.len(), 1, "query {id:#x}: {got:?}");
        let (from, r) = &got[0];
        assert_eq!(*from, SocketAddr::from((ip(*k), llmnr::PORT)));
        assert_eq!(r.id, *id);
        assert_eq!(r.flags, llmnr::FLAG_QR);
        assert!(r.question.is_for(&name(*k)), "{r:?}");
        assert_eq!(r.answers.len(), 1, "{r:?}");
        assert_eq!(r.answers[0].rdata, ip(*k).octets());
        assert_eq!(r.answers[0].ttl, 30);
    }
    assert!(answers[3].is_empty(), "{:?}", answers[3]);
    // The status view counts what each device answered: LLMNR once for device 1 (farm-svc-1)
    // and twice for device 2 (the group query and the unicast one); SNMP at least the get.
    let v = farm.devices();
    assert_eq!(
        v.iter().map(|d| d.llmnr_answers).collect::<Vec<_>>(),
        [1, 2],
        "{v:?}"
    );
    assert!(v.iter().all(|d| d.snmp_answers >= 1), "{v:?}");
    farm.stop();
    drop(veth);
}

/// A hold of the farm's I/O loop longer than the data-hold time plus the stall guard, while
/// the controller goes on sending: after the hold the loop sends before it reads
/// (decisions §33), and that first pass must not judge the data-hold timer on a backlog it
/// has not read. The controller's own watchdog expires during the hold (the farm sent
/// nothing) and it ends the AR with ERR-RTA, which waits in the backlog: the AR must end by
/// that abort, not by a watchdog trip of the farm on frames that did arrive.
#[test]
fn a_held_io_loop_does_not_trip_on_the_frames_it_has_not_read_yet() {
    if !pn_testkit::env::require_root() {
        return;
    }
    let (ctl_ns, dev_ns, veth) =
        Veth::controller_device("pnfh", Some(CTL_IP), None).expect("namespaces and veth pair");
    let text = xml();
    let cfg = RuntimeConfig::parse(&text, "test").unwrap();
    let farm = start_farm(&dev_ns, &veth.b, &cfg, "farm-hold-", 1, false, RxMode::Ring);
    let ctl = start_controller(&ctl_ns, &veth.a);
    // 4 ms x 3: a data-hold time of 12 ms on both sides.
    let h = ctl
        .connect(ar_for(&text, "farm-hold-1", 0, 3))
        .expect("connect");
    // In data exchange with frames both ways (the data-hold timer runs from the first).
    assert!(pn_testkit::poll::until(Duration::from_secs(5), || {
        let d = &farm.devices()[0];
        d.state == "DataExchange" && d.frames_received >= 10 && d.frames_sent >= 10
    }));
    let before = farm.devices()[0].clone();
    assert_eq!(before.watchdog_trips, 0);

    // 250 ms: past 12 ms + the 100 ms stall guard, so a judgement before the read would trip.
    assert!(farm.hold_io(Duration::from_millis(250)));
    let ended = pn_testkit::poll::until(Duration::from_secs(5), || {
        farm.devices()[0].state != "DataExchange"
    });
    let after = farm.devices()[0].clone();
    assert!(ended, "{after:?}");
    assert_eq!(
        after.watchdog_trips, 0,
        "the farm tripped on a backlog it had not read: {after:?}"
    );
    assert!(
        after.frames_received > before.frames_received,
        "the controller's frames of the hold were read: {before:?} / {after:?}"
    );
    // The controller ended it: its watchdog saw the farm's silence.
    assert!(
        pn_testkit::poll::until(Duration::from_secs(5), || matches!(
            h.state(),
            ArState::Aborted(_)
        )),
        "{:?}",
        h.state()
    );
    assert!(h.status().watchdog_expiries >= 1, "{:?}", h.status());
    drop(ctl);
    drop(farm);
    drop(veth);
}

/// A NIC that does not exist is reported as such, in words, in either receive mode (the ring's
/// fallback to recvmmsg does not hide it).
#[test]
fn a_missing_nic_is_a_clear_error_in_both_receive_modes() {
    if !pn_testkit::env::require_root() {
        return;
    }
    for mode in [RxMode::Ring, RxMode::Mmsg] {
        let e = pn_farm::io::open("pnnosuch0", mode, 4)
            .err()
            .unwrap_or_else(|| panic!("{mode:?}: opened a missing NIC"));
        assert!(
            e.starts_with("pnnosuch0: network interface not found"),
            "{mode:?}: {e}"
        );
    }
}

/// Cpus_allowed_list of this process's thread `comm`.
fn cpus_of_thread(comm: &str) -> String {
    pn_testkit::daemon::thread_cpus(std::process::id(), comm)
        .unwrap_or_else(|| panic!("no thread {comm} in this process"))
}

/// The farm's standby sender (`--standby-cpu`, decisions §41): two devices in data exchange
/// at 4 ms with DataHoldFactor 3 (12 ms), the I/O loop held for 250 ms (as a vCPU the
/// hypervisor holds). The standby on CPU 0 sends both devices' slots meanwhile: the
/// controller's watchdog does not expire, no slot arrives twice, both ARs stay up, and the
/// devices' views count the standby's frames. Without a standby the same hold ends the AR
/// (`a_held_io_loop_does_not_trip_on_the_frames_it_has_not_read_yet` above).
#[test]
fn the_standby_sender_covers_a_held_io_loop() {
    if !pn_testkit::env::require_root() {
        return;
    }
    pn_testkit::env::cpus_at_least(2, "the standby sender");
    let (ctl_ns, dev_ns, veth) =
        Veth::controller_device("pnfs", Some(CTL_IP), None).expect("namespaces and veth pair");
    let text = xml();
    let cfg = RuntimeConfig::parse(&text, "test").unwrap();
    let numbering = Numbering {
        count: 2,
        name_prefix: "farm-sb-".into(),
        ip_base: Some(BASE),
        mac_base: DEFAULT_MAC_BASE,
        unnamed: false,
    };
    let opts = FarmOptions {
        http: None,
        realtime: true,
        state_dir: None,
        rx: RxMode::Ring,
        standby: Some(pn_device::stack::standby::StandbyConfig {
            cpu: 0,
            grace_ns: None,
        }),
    };
    let farm = start_farm_with(&dev_ns, &veth.b, &cfg, &numbering, opts);
    let ctl = start_controller(&ctl_ns, &veth.a);
    let hs: Vec<_> = (0..2)
        .map(|k| {
            ctl.connect(ar_for(&text, &format!("farm-sb-{}", k + 1), k, 3))
                .expect("connect")
        })
        .collect();
    assert!(pn_testkit::poll::until(Duration::from_secs(5), || {
        farm.devices()
            .iter()
            .all(|d| d.state == "DataExchange" && d.frames_received >= 10)
    }));
    assert_eq!(cpus_of_thread("farm-standby"), "0");
    let io_cpus = cpus_of_thread("farm-io");
    assert!(
        !io_cpus.split([',', '-']).any(|c| c == "0"),
        "the I/O loop left the standby's CPU: {io_cpus}"
    );
    let before = farm.devices();
    assert!(before.iter().all(|d| d.standby_frames == 0), "{before:?}");

    assert!(farm.hold_io(Duration::from_millis(250)));
    // The hold's 62 slots of each device, sent by the standby.
    let covered = pn_testkit::poll::until(Duration::from_secs(5), || {
        farm.devices().iter().all(|d| d.standby_frames >= 50)
    });
    // A few cycles after the hold: the loop sends again.
    let sent = farm.devices()[0].frames_sent;
    assert!(pn_testkit::poll::until(Duration::from_secs(5), || {
        farm.devices()[0].frames_sent >= sent + 10
    }));
    let after = farm.devices();
    assert!(covered, "{after:?}");
    for (h, d) in hs.iter().zip(&after) {
        let st = h.status();
        assert_eq!(h.state(), ArState::DataExchange, "{st:?} {d:?}");
        assert_eq!(st.watchdog_expiries, 0, "{st:?}");
        assert_eq!(st.frames_duplicate, 0, "a slot sent twice: {st:?}");
        assert_eq!(d.state, "DataExchange", "{d:?}");
        assert_eq!(d.watchdog_trips, 0, "{d:?}");
        // About 62 slots of a 250 ms hold at 4 ms; the loop sent the others, before and
        // after the hold.
        assert!(d.standby_frames <= 70, "{d:?}");
        let b = &before[d.index];
        assert!(
            d.frames_sent - d.standby_frames > b.frames_sent,
            "{b:?} {d:?}"
        );
    }
    eprintln!(
        "standby frames: {:?}",
        after.iter().map(|d| d.standby_frames).collect::<Vec<_>>()
    );
    drop(ctl);
    drop(farm);
    drop(veth);
}

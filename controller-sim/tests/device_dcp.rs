//! The DCP client against the real pn-device daemon, with the device's reaction through its
//! HTTP API (status masterStationName / masterAssignedIp, diag l2 counters).

mod common;

use std::time::Duration;

use common::device::{Rig, DEV_IP, STATION};

#[test]
fn dcp_identify_set_signal_against_pn_device() {
    if !pn_testkit::env::require_root() {
        return;
    }
    let rig = Rig::start("pndc", 4);
    let ctl = rig.controller(128);
    // Identify All and by name.
    let all = ctl
        .dcp_identify_all(10, Duration::from_millis(200))
        .unwrap();
    assert_eq!(all.len(), 1, "{all:?}\n{}", rig.log());
    let d = &all[0];
    assert_eq!(d.name_of_station, STATION);
    assert_eq!((d.vendor_id, d.device_id), (Some(0x0493), Some(0x0001)));
    assert_eq!(d.ip, Some(DEV_IP));
    let by_name = ctl
        .dcp_identify_name(STATION, Duration::from_secs(1))
        .unwrap()
        .expect("answer");
    assert_eq!(by_name.mac, d.mac);
    // Get NameOfStation.
    let g = ctl
        .dcp_get(d.mac, &[(2, 2)], Duration::from_secs(1))
        .unwrap();
    assert_eq!(g.name_of_station(), Some(STATION.as_bytes()));
    // Signal: counted by the device.
    let sig0 = rig.diag()["l2"]["dcpSignalCount"].as_i64().unwrap_or(0);
    ctl.dcp_signal(d.mac).unwrap();
    rig.wait("signal counted", Duration::from_secs(2), || {
        rig.diag()["l2"]["dcpSignalCount"].as_i64().unwrap_or(0) == sig0 + 1
    });
    // Temporary name: the device reports it as the controller-assigned name.
    ctl.dcp_set_name(d.mac, "renamed-dev", false).unwrap();
    rig.wait("masterStationName", Duration::from_secs(2), || {
        rig.status()["masterStationName"] == "renamed-dev"
    });
    assert!(ctl
        .dcp_identify_name("renamed-dev", Duration::from_secs(1))
        .unwrap()
        .is_some());
    // Temporary IP in the same subnet.
    ctl.dcp_set_ip(
        d.mac,
        "192.168.78.7".parse().unwrap(),
        "255.255.255.0".parse().unwrap(),
        "0.0.0.0".parse().unwrap(),
        false,
    )
    .unwrap();
    rig.wait("masterAssignedIp", Duration::from_secs(2), || {
        rig.status()["masterAssignedIp"] == "192.168.78.7"
    });
    let again = ctl
        .dcp_identify_name("renamed-dev", Duration::from_secs(1))
        .unwrap()
        .unwrap();
    assert_eq!(again.ip, Some("192.168.78.7".parse().unwrap()));
    // Reset to factory (communication parameters): the controller-assigned name and IP are
    // gone: the NameOfStation is empty (the standard's reset, docs/decisions.md §21), the IP
    // the configured one.
    ctl.dcp_reset_to_factory(
        d.mac,
        pn_protocol::wire::dcp::qualifier::RESET_COMMUNICATION_PARAMETER,
    )
    .unwrap();
    rig.wait(
        "assigned name and IP cleared",
        Duration::from_secs(2),
        || {
            let s = rig.status();
            s["masterStationName"] == "" && s["masterAssignedIp"] == ""
        },
    );
    assert!(ctl
        .dcp_identify_name(STATION, Duration::from_millis(500))
        .unwrap()
        .is_none());
    let back = ctl
        .dcp_identify_all(5, Duration::from_millis(300))
        .unwrap()
        .into_iter()
        .find(|x| x.mac == d.mac)
        .expect("the device answers Identify All");
    assert_eq!(back.name_of_station, "", "{back:?}");
    assert_eq!(back.ip, Some(DEV_IP));
    // An invalid name is refused on our side before anything is sent.
    assert!(ctl.dcp_set_name(d.mac, "Bad_Name", false).is_err());
}

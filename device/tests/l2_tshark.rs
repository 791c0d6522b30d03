//! tshark as the independent oracle for every L2 frame the device emits (DCP Identify/Get/Set
//! responses, Hello, LLDP) and for the SNMP/LLMNR answers (wrapped in Ethernet/IPv4/UDP).

use std::net::Ipv4Addr;

use pn_device::dataplane::Im0Config;
use pn_device::stack::dcp::{DcpIdentity, DcpResponder};
use pn_device::stack::lldp::LldpAgent;
use pn_protocol::time::Instant;
use pn_protocol::wire::dcp::{DcpRepr, NameOfStation};
use pn_protocol::wire::ethernet::MacAddr;

const DEV: MacAddr = MacAddr([0x02, 0x00, 0x00, 0x00, 0x12, 0x34]);
const CTRL: MacAddr = MacAddr([0x02, 0x00, 0x00, 0x00, 0x00, 0x01]);

fn ident() -> DcpIdentity {
    DcpIdentity {
        mac: DEV,
        station_name: "dev-1".into(),
        device_vendor: "pn-device".into(),
        vendor_id: 0x0493,
        device_id: 1,
        ip: Ipv4Addr::new(192, 168, 0, 10),
        mask: Ipv4Addr::new(255, 255, 255, 0),
        gateway: Ipv4Addr::new(192, 168, 0, 1),
        device_instance: (0, 1),
        device_initiative: true,
    }
}

#[test]
fn dump() {
    if !pn_testkit::env::require_tshark() { return; }
    let mut d = DcpResponder::new(ident(), Instant::ZERO);
    let mut frames = Vec::new();
    frames.extend(d.poll(Instant::ZERO));
    let o = d.on_frame(&DcpRepr::identify_request_all(1, 0).build_frame(MacAddr::DCP_IDENTIFY, CTRL, None).unwrap(), Instant::ZERO);
    frames.extend(o.frames);
    let o = d.on_frame(&DcpRepr::get_request(2, &[(1,1),(1,2),(2,2),(2,5),(3,61)]).build_frame(DEV, CTRL, None).unwrap(), Instant::ZERO);
    frames.extend(o.frames);
    let o = d.on_frame(&DcpRepr::set_name(3, &NameOfStation::new("abc").unwrap(), true).build_frame(DEV, CTRL, None).unwrap(), Instant::ZERO);
    frames.extend(o.frames);
    let im0 = Im0Config { product_name: "pn-device".into(), order_id: "X".into(), serial_number: "1".into(), hardware_revision: 1, software_revision: ('V',1,0,0), ..Default::default() };
    let mut l = LldpAgent::new(DEV, "dev-1", Ipv4Addr::new(192,168,0,10), &im0, 2, Instant::ZERO);
    frames.push(l.poll(Instant::ZERO).unwrap());
    let p = pn_testkit::tshark::dissect(&frames).unwrap();
    for x in &p { eprintln!("{}\n-----", x.dump()); }
    panic!("dump");
}

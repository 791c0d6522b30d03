//! Declared parameter records on the real data path: the real pn-device daemon in a namespace,
//! configured with `device/config/examples/typed-io-and-parameters.xml`, and pn-controller
//! connecting over a veth pair. The Connect's parameterisation writes the declared defaults
//! (read from the same configuration), a Read returns them, a Write with a value outside the
//! allowed ones is refused with `DF 80 B8 00` and a wrong length with `DF 80 B1 00`, neither
//! changes what the record reads, and a Write of allowed values is stored.

mod common;

use common::device::{Rig, DEV_IP, STATION};

/// The example configuration, addressed as the rig's other devices are.
fn example_xml(nic: &str) -> String {
    let xml = include_str!("../../device/config/examples/typed-io-and-parameters.xml");
    xml.replace(
        "<StationName>pn-typed</StationName>",
        &format!(
            "<StationName>{STATION}</StationName>\n  <Network><InterfaceName>{nic}</InterfaceName></Network>\n  \
             <IpAddress>{DEV_IP}</IpAddress><SubnetMask>255.255.255.0</SubnetMask>\n  <SendClock>4</SendClock>"
        ),
    )
}

#[test]
fn a_declared_parameter_record_is_checked_on_the_wire() {
    if !pn_testkit::env::require_root() {
        return;
    }
    let rig = Rig::start_xml("prm", example_xml);
    let ctl = rig.controller(128);
    let ar = rig
        .connect(&ctl, 1, 24, Default::default())
        .unwrap_or_else(|e| panic!("connect: {e}\n{}", rig.log()));
    // Acceleration ramp 500 (u16), mode 1, bits: invert 0 and filter level 2 (bits 4-6),
    // speed offset -20 (i16): the declared defaults, written at parameterisation.
    let defaults = vec![0x01, 0xF4, 0x01, 0x20, 0xFF, 0xEC];
    assert_eq!(ar.read_record(1, 1, 0x100, 64).unwrap(), defaults);

    // Operating mode 4 is not among "1 2 3".
    let e = ar
        .write_record(1, 1, 0x100, &[0x01, 0xF4, 0x04, 0x20, 0xFF, 0xEC])
        .expect_err("mode 4 accepted");
    assert!(e.to_string().contains("DF 80 B8 00"), "{e}");
    // Five bytes where the record has six.
    let e = ar
        .write_record(1, 1, 0x100, &[0x01, 0xF4, 0x01, 0x20, 0xFF])
        .expect_err("short record accepted");
    assert!(e.to_string().contains("DF 80 B1 00"), "{e}");
    assert_eq!(ar.read_record(1, 1, 0x100, 64).unwrap(), defaults);

    // Ramp 1000, mode 3, invert on, filter 5, offset +100: all allowed, stored.
    let good = vec![0x03, 0xE8, 0x03, 0x51, 0x00, 0x64];
    ar.write_record(1, 1, 0x100, &good)
        .unwrap_or_else(|e| panic!("allowed values refused: {e}"));
    assert_eq!(ar.read_record(1, 1, 0x100, 64).unwrap(), good);
    assert_eq!(ar.state(), pn_controller::ArState::DataExchange);
    ar.release().unwrap();
}

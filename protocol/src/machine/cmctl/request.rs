//! CMCTL's Connect request (controller role), assembled from the crate's Connect
//! representation ([`crate::wire::pnio::cm::ConnectRequest`]): the Connect request
//! (ARBlockReq, two IOCRBlockReqs, AlarmCRBlockReq, ExpectedSubmoduleBlockReqs) from a
//! [`super::model::DeviceModel`], and the AR's timing options. What the response says is read
//! by [`super::connect`]. (Formerly pn-controller's `cmreq`, re-exported there under that
//! name.) Every request is checked with the device role's own Connect checks
//! (`machine::cmdev::connect`) before it is sent, so the controller cannot build what a
//! standard device must refuse.

use crate::machine::cmdev::connect::{
    check_connect, frame_id_range, ConnectLimits, FRAME_ID_DEVICE_CHOOSES,
};
use crate::wire::pnio::alarm_cr::{self, AlarmCrBlockReq, AlarmCrProperties};
use crate::wire::pnio::ar::{self, ArBlockReq, ArProperties};
use crate::wire::pnio::cm::ConnectRequest;
use crate::wire::pnio::expected::{
    DataDescription, ExpectedModule, ExpectedSubmodule, ExpectedSubmoduleBlockReq,
    SubmoduleProperties,
};
use crate::wire::pnio::iocr::{self, IoObject, IocrApi, IocrBlockReq, IocrProperties, TagHeader};
use crate::wire::rpc::Uuid;

use super::model::{CrLayout, DeviceModel, IoLayout};

// What the device's answers mean is CMCTL's reading (`connect`), reachable here too.
pub use super::connect::{
    describe_module_diff, module_diff_mismatches, parse_connect_response, ConnectResult,
};

/// ARProperties.StartupMode of the Connect, and with it the RT class of the IOCRs
/// (IEC 61158-6-10 IOCRBlockReq: legacy startup allows RT_CLASS_1, advanced startup requires
/// RT_CLASS_2 or higher; both classes use the same frame format).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "lowercase"))]
pub enum Startup {
    /// Advanced startup with RT_CLASS_2 FrameIDs (0x8000-0xBBFF), as S7-1500 CPUs connect.
    #[default]
    Advanced,
    /// Legacy startup with RT_CLASS_1 FrameIDs (0xC000-0xF7FF), for older devices.
    Legacy,
}

impl Startup {
    pub fn rt_class(self) -> u8 {
        match self {
            Startup::Advanced => IocrProperties::RT_CLASS_2 as u8,
            Startup::Legacy => IocrProperties::RT_CLASS_1 as u8,
        }
    }

    /// The input CR's FrameID for the `n`-th AR of this controller: inside the class's range,
    /// distinct for up to the range's size of ARs.
    pub fn input_frame_id(self, n: u32) -> u16 {
        let r = frame_id_range(iocr::iocr_type::INPUT, self.rt_class())
            .expect("classes 1 and 2 have a FrameID range");
        let size = u32::from(*r.end() - *r.start()) + 1;
        *r.start() + (n % size) as u16
    }
}

/// Timing and supervision parameters of an AR.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct ArTiming {
    /// SendClockFactor (31.25 µs units; 32 = 1 ms).
    pub send_clock_factor: u16,
    /// ReductionRatio: the IOCRs run every `send_clock_factor * reduction_ratio * 31.25 µs`.
    pub reduction_ratio: u16,
    pub watchdog_factor: u16,
    pub data_hold_factor: u16,
    /// RTATimeoutFactor (100 ms units) and RTARetries of the AlarmCR.
    pub rta_timeout_factor: u16,
    pub rta_retries: u16,
    /// CMInitiatorActivityTimeoutFactor (100 ms units).
    pub activity_timeout_factor: u16,
    /// StartupMode and RT class.
    pub startup: Startup,
}

impl Default for ArTiming {
    fn default() -> Self {
        ArTiming {
            send_clock_factor: 32,
            reduction_ratio: 4,
            watchdog_factor: 3,
            data_hold_factor: 3,
            rta_timeout_factor: 1,
            rta_retries: 3,
            activity_timeout_factor: 600,
            startup: Startup::Advanced,
        }
    }
}

impl ArTiming {
    /// IOCR cycle in nanoseconds.
    pub fn cycle_ns(&self) -> u64 {
        u64::from(self.send_clock_factor) * u64::from(self.reduction_ratio) * 31_250
    }
}

/// Identity of the AR on our side.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArIds {
    pub ar_uuid: Uuid,
    pub session_key: u16,
    pub initiator_mac: [u8; 6],
    pub initiator_object: Uuid,
    pub station_name: String,
    /// The input CR's FrameID (the controller chooses it, in the class's range).
    pub input_frame_id: u16,
    pub alarm_ref: u16,
}

fn cr_block(
    cr_type: u16,
    reference: u16,
    frame_id: u16,
    layout: &CrLayout,
    api: u32,
    t: &ArTiming,
) -> IocrBlockReq {
    IocrBlockReq {
        version: (1, 0),
        iocr_type: cr_type,
        iocr_reference: reference,
        lt: iocr::LT_PNIO,
        properties: IocrProperties(u32::from(t.startup.rt_class())),
        data_length: layout.data_length,
        frame_id,
        send_clock_factor: t.send_clock_factor,
        reduction_ratio: t.reduction_ratio,
        phase: 1,
        sequence: 0,
        frame_send_offset: 0xFFFF_FFFF,
        watchdog_factor: t.watchdog_factor,
        data_hold_factor: t.data_hold_factor,
        tag_header: TagHeader::new(0, 6),
        multicast_mac: [0; 6],
        apis: vec![IocrApi {
            api,
            io_data_objects: layout
                .data
                .iter()
                .map(|d| IoObject {
                    slot: d.slot,
                    subslot: d.subslot,
                    frame_offset: d.frame_offset,
                })
                .collect(),
            iocs: layout
                .iocs
                .iter()
                .map(|d| IoObject {
                    slot: d.slot,
                    subslot: d.subslot,
                    frame_offset: d.frame_offset,
                })
                .collect(),
        }],
    }
}

/// The expected submodules of `model`, one ExpectedSubmoduleBlockReq per module.
pub fn expected_blocks(model: &DeviceModel) -> Vec<ExpectedSubmoduleBlockReq> {
    model
        .modules
        .iter()
        .map(|m| ExpectedSubmoduleBlockReq {
            version: (1, 0),
            modules: vec![ExpectedModule {
                api: model.api,
                slot: m.slot,
                module_ident: m.ident,
                module_properties: 0,
                submodules: m
                    .submodules
                    .iter()
                    .map(|s| {
                        let (ty, desc) = match (s.input_len > 0, s.output_len > 0) {
                            (false, false) => (
                                SubmoduleProperties::TYPE_NO_IO,
                                vec![DataDescription::input(0)],
                            ),
                            (true, false) => (
                                SubmoduleProperties::TYPE_INPUT,
                                vec![DataDescription::input(s.input_len)],
                            ),
                            (false, true) => (
                                SubmoduleProperties::TYPE_OUTPUT,
                                vec![DataDescription::output(s.output_len)],
                            ),
                            (true, true) => (
                                SubmoduleProperties::TYPE_INPUT_OUTPUT,
                                vec![
                                    DataDescription::input(s.input_len),
                                    DataDescription::output(s.output_len),
                                ],
                            ),
                        };
                        ExpectedSubmodule {
                            subslot: s.subslot,
                            submodule_ident: s.ident,
                            properties: SubmoduleProperties(ty),
                            descriptions: desc,
                        }
                    })
                    .collect(),
            }],
        })
        .collect()
}

/// The Connect request for `model`, checked with the device role's Connect checks.
pub fn connect_request(
    model: &DeviceModel,
    layout: &IoLayout,
    ids: &ArIds,
    t: &ArTiming,
) -> Result<ConnectRequest, String> {
    let startup = match t.startup {
        Startup::Advanced => ArProperties::STARTUP_MODE_ADVANCED,
        Startup::Legacy => 0,
    };
    let mut req = ConnectRequest::new(ArBlockReq {
        version: (1, 0),
        ar_type: ar::ar_type::IOCAR,
        ar_uuid: ids.ar_uuid,
        session_key: ids.session_key,
        cm_initiator_mac: ids.initiator_mac,
        cm_initiator_object_uuid: ids.initiator_object,
        properties: ArProperties(
            ArProperties::STATE_ACTIVE | ArProperties::PARAMETERIZATION_SERVER | startup,
        ),
        cm_initiator_activity_timeout_factor: t.activity_timeout_factor,
        cm_initiator_udp_rt_port: 0x8892,
        cm_initiator_station_name: ids.station_name.clone(),
    });
    req.iocrs.push(cr_block(
        iocr::iocr_type::INPUT,
        1,
        ids.input_frame_id,
        &layout.input,
        model.api,
        t,
    ));
    // The device chooses the output CR's FrameID.
    req.iocrs.push(cr_block(
        iocr::iocr_type::OUTPUT,
        2,
        FRAME_ID_DEVICE_CHOOSES,
        &layout.output,
        model.api,
        t,
    ));
    req.expected = expected_blocks(model);
    req.alarm_cr = Some(AlarmCrBlockReq {
        version: (1, 0),
        alarm_cr_type: alarm_cr::ALARM_CR_TYPE,
        lt: iocr::LT_PNIO,
        properties: AlarmCrProperties(0),
        rta_timeout_factor: t.rta_timeout_factor,
        rta_retries: t.rta_retries,
        local_alarm_reference: ids.alarm_ref,
        max_alarm_data_length: 200,
        tag_header_high: TagHeader::new(0, 6),
        tag_header_low: TagHeader::new(0, 5),
    });
    // Emitted in the block order of real controllers (the protocol crate's default).
    if let Err(st) = check_connect(&req, &ConnectLimits::default()) {
        return Err(format!(
            "this Connect request would be refused by a standard device ({}); check the \
             timing options",
            st.in_words()
        ));
    }
    Ok(req)
}

#[cfg(test)]
mod tests {
    use super::super::model::sample_model;
    use super::*;
    use crate::machine::cmdev::connect::parse_connect;
    use crate::wire::pnio::block::blocks;
    use crate::wire::Emit;

    pub(crate) fn ids(startup: Startup) -> ArIds {
        ArIds {
            ar_uuid: Uuid([7; 16]),
            session_key: 1,
            initiator_mac: [2, 0, 0, 0, 0, 1],
            initiator_object: Uuid::pnio_object(1, 1, 0),
            station_name: "pn-controller".into(),
            input_frame_id: startup.input_frame_id(0),
            alarm_ref: 1,
        }
    }

    fn request(startup: Startup) -> Vec<u8> {
        let m = sample_model();
        let t = ArTiming {
            startup,
            ..ArTiming::default()
        };
        connect_request(&m, &m.layout(), &ids(startup), &t)
            .unwrap()
            .to_bytes()
            .unwrap()
    }

    #[test]
    fn connect_request_blocks_in_the_order_s7_controllers_send() {
        let data = request(Startup::Advanced);
        let types: Vec<u16> = blocks(&data).map(|b| b.unwrap().block_type()).collect();
        assert_eq!(types, vec![0x0101, 0x0102, 0x0102, 0x0104, 0x0104, 0x0103]);
        let req = parse_connect(&data).unwrap();
        assert_eq!(req.ar.cm_initiator_station_name, "pn-controller");
        let i = &req.iocrs[0];
        assert_eq!(i.data_length, 40);
        assert_eq!(i.apis[0].io_data_objects.len(), 4);
        assert_eq!(i.apis[0].iocs.len(), 1);
        assert_eq!(
            req.expected[1].modules[0].submodules[0]
                .properties
                .io_type(),
            SubmoduleProperties::TYPE_INPUT_OUTPUT
        );
    }

    /// The startup mode decides the RT class and the FrameID range (p-net refused every
    /// Connect of the old controller: advanced startup with RT_CLASS_1, DB 81 02 07).
    #[test]
    fn startup_mode_sets_rt_class_and_frame_ids_a_standard_device_accepts() {
        for (startup, advanced, class, input) in [
            (Startup::Advanced, true, 2, 0x8000),
            (Startup::Legacy, false, 1, 0xC000),
        ] {
            let req = parse_connect(&request(startup)).unwrap();
            assert_eq!(req.ar.properties.startup_mode_advanced(), advanced);
            for c in &req.iocrs {
                assert_eq!(c.properties.rt_class(), class);
            }
            assert_eq!(req.iocrs[0].frame_id, input);
            assert_eq!(req.iocrs[1].frame_id, 0xFFFF, "the device chooses");
            assert_eq!(check_connect(&req, &ConnectLimits::default()), Ok(()));
        }
    }

    #[test]
    fn input_frame_ids_stay_in_the_class_range() {
        for n in [0, 1, 0x3BFF, 0x3C00, 0xFFFF_FFFF] {
            assert!((0x8000..=0xBBFF).contains(&Startup::Advanced.input_frame_id(n)));
            assert!((0xC000..=0xF7FF).contains(&Startup::Legacy.input_frame_id(n)));
        }
    }

    #[test]
    fn a_request_a_device_must_refuse_is_not_built() {
        let m = sample_model();
        let t = ArTiming {
            reduction_ratio: 3,
            ..ArTiming::default()
        };
        let e = connect_request(&m, &m.layout(), &ids(Startup::Advanced), &t).unwrap_err();
        assert!(e.contains("DB 81 02 0B") || e.contains("0xdb81020b"), "{e}");
    }
}

//! CMDEV's checks of a Connect request (IEC 61158-6-10 "IODConnectReq" block checks) and the
//! FrameIDs the device answers with: the one place where a device decides whether a Connect is
//! acceptable. The device daemon, the farm, the tests and the fuzzers call these functions; the
//! controller checks the requests it builds against them too.
//!
//! Which field errors are reported, in which order, and with which ErrorCode2 follows the
//! standard's block tables as p-net implements them (`src/device/pf_cmdev.c`:
//! `pf_cmdev_check_ar_param`, `pf_cmdev_check_iocr_param`, `pf_cmdev_check_alarm_cr`; error
//! constants in `include/pnet_api.h`). ErrorCode2 numbers the faulty field of the block, counting
//! the block header's fields (BlockType 0, BlockLength 1, BlockVersionHigh 2, BlockVersionLow 3).
//! Wireshark decodes them (`packet-pn.c`, `hf_pn_io_error_code2_pnio_*`). Facts and sources are
//! listed in docs/protocol-notes/cm.md.
//!
//! This device implements RT_CLASS_1 and RT_CLASS_2 (the frame format is the same; class 2 is
//! what "RT" means for a controller using advanced startup, as S7-1500 CPUs do); RT_CLASS_3,
//! RT_CLASS_UDP, multicast CRs and system-redundancy ARs are not supported and are refused with
//! the field error a device without them gives.

use core::ops::RangeInclusive;

use crate::wire::ethernet::ethertype;
use crate::wire::pnio::alarm_cr::{self, AlarmCrBlockReq};
use crate::wire::pnio::ar::{self, ar_type, ArBlockReq};
use crate::wire::pnio::cm::{BlockError, ConnectRequest};
use crate::wire::pnio::expected;
use crate::wire::pnio::iocr::{self, iocr_type, IocrBlockReq, IocrProperties};
use crate::wire::pnio::PnioStatus;
use crate::wire::rpc::Uuid;
use crate::wire::rt;

/// PNIOStatus of a rejected Connect: ErrorCode 0xDB (IODConnectRes), ErrorDecode 0x81 (PNIO).
pub const fn connect_error(code1: u8, code2: u8) -> PnioStatus {
    PnioStatus::new(
        PnioStatus::CODE_CONNECT,
        PnioStatus::DECODE_PNIO,
        code1,
        code2,
    )
}

/// ErrorCode1 of a Connect error: which block is faulty, or CMRPC.
pub mod err1 {
    pub const AR_BLOCK: u8 = 0x01;
    pub const IOCR_BLOCK: u8 = 0x02;
    pub const EXPECTED_BLOCK: u8 = 0x03;
    pub const ALARM_CR_BLOCK: u8 = 0x04;
    pub const CMRPC: u8 = 0x40;
}

/// ErrorCode2 values with ErrorCode1 = CMRPC.
pub mod cmrpc {
    pub const UNKNOWN_BLOCKS: u8 = 0x01;
    pub const IOCR_MISSING: u8 = 0x02;
    pub const WRONG_BLOCK_COUNT: u8 = 0x03;
    pub const NO_AR_RESOURCES: u8 = 0x04;
    pub const AR_UUID_UNKNOWN: u8 = 0x05;
    pub const STATE_CONFLICT: u8 = 0x06;
}

/// ErrorCode2 (the faulty field) of an ARBlockReq.
pub mod ar_field {
    pub const AR_TYPE: u8 = 4;
    pub const AR_UUID: u8 = 5;
    pub const CM_INITIATOR_MAC: u8 = 7;
    pub const CM_INITIATOR_OBJECT_UUID: u8 = 8;
    pub const AR_PROPERTIES: u8 = 9;
    pub const ACTIVITY_TIMEOUT: u8 = 10;
    pub const STATION_NAME_LENGTH: u8 = 12;
    pub const STATION_NAME: u8 = 13;
}

/// ErrorCode2 (the faulty field) of an IOCRBlockReq.
pub mod iocr_field {
    pub const IOCR_TYPE: u8 = 4;
    pub const LT: u8 = 6;
    pub const IOCR_PROPERTIES: u8 = 7;
    pub const DATA_LENGTH: u8 = 8;
    pub const FRAME_ID: u8 = 9;
    pub const SEND_CLOCK_FACTOR: u8 = 10;
    pub const REDUCTION_RATIO: u8 = 11;
    pub const PHASE: u8 = 12;
    pub const FRAME_SEND_OFFSET: u8 = 14;
    pub const DATA_HOLD_FACTOR: u8 = 16;
    pub const TAG_HEADER: u8 = 17;
    pub const NUMBER_OF_APIS: u8 = 19;
    pub const IO_DATA_OBJECT_OFFSET: u8 = 19;
    pub const IOCS_OFFSET: u8 = 20;
}

/// ErrorCode2 (the faulty field) of an AlarmCRBlockReq.
pub mod alarm_cr_field {
    pub const ALARM_CR_TYPE: u8 = 4;
    pub const LT: u8 = 5;
    pub const RTA_TIMEOUT_FACTOR: u8 = 7;
    pub const RTA_RETRIES: u8 = 8;
    pub const MAX_ALARM_DATA_LENGTH: u8 = 10;
    pub const TAG_HEADER_HIGH: u8 = 11;
    pub const TAG_HEADER_LOW: u8 = 12;
}

/// What this device can do, beyond what the standard fixes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectLimits {
    /// MinDeviceInterval (31.25 µs units): the shortest IOCR cycle
    /// (SendClockFactor × ReductionRatio) the device accepts. A shorter one is refused in the
    /// ReductionRatio field (p-net `pf_cmdev_check_iocr_param`: `min_device_interval >
    /// send_clock_factor * reduction_ratio` gives ErrorCode2 11). The device's GSDML states the
    /// same value as `MinDeviceInterval` ([`ConnectLimits::send_clock_factors`] and
    /// [`ConnectLimits::reduction_ratios`] give its lists).
    pub min_device_interval: u32,
}

impl Default for ConnectLimits {
    /// No bound beyond the standard's (the shortest send clock, 31.25 µs).
    fn default() -> Self {
        ConnectLimits {
            min_device_interval: 1,
        }
    }
}

/// The largest MinDeviceInterval a GSDML can state (128 ms; p-net refuses a larger
/// `min_device_interval` in its configuration for the same reason).
pub const MAX_MIN_DEVICE_INTERVAL: u32 = 4096;

/// Every SendClockFactor the standard allows for RT classes 1 and 2 (31.25 µs .. 4 ms).
const SEND_CLOCK_FACTORS: [u16; 8] = [1, 2, 4, 8, 16, 32, 64, 128];

impl ConnectLimits {
    /// Whether an IOCR with this SendClockFactor and ReductionRatio is accepted; `Err` names
    /// the faulty IOCRBlockReq field ([`iocr_field`]). The one rule [`check_connect`] applies
    /// and the GSDML's lists are derived from.
    pub fn check_cycle(&self, send_clock_factor: u16, reduction_ratio: u16) -> Result<(), u8> {
        let (scf, rr) = (send_clock_factor, reduction_ratio);
        if !SEND_CLOCK_FACTORS.contains(&scf) {
            return Err(iocr_field::SEND_CLOCK_FACTOR);
        }
        // Non-power-of-two ratios are an option a device declares in its GSDML
        // (ReductionRatioNonPow2); this device offers powers of two only. The ratios of 256
        // and 512 need a short send clock (the standard's table, as p-net checks it).
        let bad_rr = !(1..=512).contains(&rr)
            || !rr.is_power_of_two()
            || (rr >= 256 && scf > 64)
            || (rr == 512 && scf > 32)
            || u32::from(scf) * u32::from(rr) < self.min_device_interval;
        if bad_rr {
            return Err(iocr_field::REDUCTION_RATIO);
        }
        Ok(())
    }

    /// The SendClockFactors the device accepts with at least one ReductionRatio: the GSDML's
    /// `TimingProperties SendClock` list.
    pub fn send_clock_factors(&self) -> Vec<u16> {
        SEND_CLOCK_FACTORS
            .into_iter()
            .filter(|&s| (1..=512).any(|r| self.check_cycle(s, r).is_ok()))
            .collect()
    }

    /// The ReductionRatios the device accepts with at least one of its SendClockFactors: the
    /// GSDML's `TimingProperties ReductionRatio` list. With `MinDeviceInterval` and the
    /// standard's SendClockFactor/ReductionRatio table they give exactly the accepted pairs
    /// (`connect::tests::gsdml_lists_state_exactly_the_accepted_cycles`).
    pub fn reduction_ratios(&self) -> Vec<u16> {
        (1..=512)
            .filter(|&r| {
                SEND_CLOCK_FACTORS
                    .iter()
                    .any(|&s| self.check_cycle(s, r).is_ok())
            })
            .collect()
    }
}

/// A CMRPC ErrorCode2 (ErrorCode1 0x40, any service) in words.
pub fn cmrpc_words(code2: u8) -> &'static str {
    match code2 {
        cmrpc::UNKNOWN_BLOCKS => "unknown blocks",
        cmrpc::IOCR_MISSING => "IOCRBlockReq missing",
        cmrpc::WRONG_BLOCK_COUNT => "wrong block count",
        cmrpc::NO_AR_RESOURCES => "out of AR resources",
        cmrpc::AR_UUID_UNKNOWN => "AR UUID unknown",
        cmrpc::STATE_CONFLICT => "state conflict",
        _ => "error",
    }
}

/// A Connect refusal in words, as Wireshark's PNIOStatus tables name it
/// (`packet-dcerpc-pn-io.c` `pn_io_error_code1_pnio`, `pn_io_error_code2_pnio_1/2/4`), e.g.
/// "faulty IOCRBlockReq: ReductionRatio"; `None` for a status that is not a Connect error of
/// ErrorDecode PNIO.
pub fn describe_connect_error(st: PnioStatus) -> Option<String> {
    if st.error_code != PnioStatus::CODE_CONNECT || st.error_decode != PnioStatus::DECODE_PNIO {
        return None;
    }
    let header = |f: u8| match f {
        0 => Some("BlockType"),
        1 => Some("BlockLength"),
        2 => Some("BlockVersionHigh"),
        3 => Some("BlockVersionLow"),
        _ => None,
    };
    let (block, field) = match st.error_code1 {
        err1::AR_BLOCK => (
            "ARBlockReq",
            header(st.error_code2).or(match st.error_code2 {
                ar_field::AR_TYPE => Some("ARType"),
                ar_field::AR_UUID => Some("ARUUID"),
                ar_field::CM_INITIATOR_MAC => Some("CMInitiatorMacAdd"),
                ar_field::CM_INITIATOR_OBJECT_UUID => Some("CMInitiatorObjectUUID"),
                ar_field::AR_PROPERTIES => Some("ARProperties"),
                ar_field::ACTIVITY_TIMEOUT => Some("CMInitiatorActivityTimeoutFactor"),
                ar_field::STATION_NAME_LENGTH => Some("StationNameLength"),
                ar_field::STATION_NAME => Some("CMInitiatorStationName"),
                _ => None,
            }),
        ),
        err1::IOCR_BLOCK => (
            "IOCRBlockReq",
            header(st.error_code2).or(match st.error_code2 {
                iocr_field::IOCR_TYPE => Some("IOCRType"),
                iocr_field::LT => Some("LT"),
                iocr_field::IOCR_PROPERTIES => Some("IOCRProperties"),
                iocr_field::DATA_LENGTH => Some("DataLength"),
                iocr_field::FRAME_ID => Some("FrameID"),
                iocr_field::SEND_CLOCK_FACTOR => Some("SendClockFactor"),
                iocr_field::REDUCTION_RATIO => Some("ReductionRatio"),
                iocr_field::PHASE => Some("Phase"),
                iocr_field::FRAME_SEND_OFFSET => Some("FrameSendOffset"),
                iocr_field::DATA_HOLD_FACTOR => Some("DataHoldFactor"),
                iocr_field::TAG_HEADER => Some("IOCRTagHeader"),
                iocr_field::NUMBER_OF_APIS => Some("NumberOfAPIs"),
                _ => None,
            }),
        ),
        err1::EXPECTED_BLOCK => ("ExpectedSubmoduleBlockReq", header(st.error_code2)),
        err1::ALARM_CR_BLOCK => (
            "AlarmCRBlockReq",
            header(st.error_code2).or(match st.error_code2 {
                alarm_cr_field::ALARM_CR_TYPE => Some("AlarmCRType"),
                alarm_cr_field::LT => Some("LT"),
                alarm_cr_field::RTA_TIMEOUT_FACTOR => Some("RTATimeoutFactor"),
                alarm_cr_field::RTA_RETRIES => Some("RTARetries"),
                alarm_cr_field::MAX_ALARM_DATA_LENGTH => Some("MaxAlarmDataLength"),
                alarm_cr_field::TAG_HEADER_HIGH => Some("AlarmCRTagHeaderHigh"),
                alarm_cr_field::TAG_HEADER_LOW => Some("AlarmCRTagHeaderLow"),
                _ => None,
            }),
        ),
        err1::CMRPC => return Some(format!("CMRPC: {}", cmrpc_words(st.error_code2))),
        _ => return Some(format!("ErrorCode1 {:#04x}", st.error_code1)),
    };
    Some(match field {
        Some(f) => format!("faulty {block}: {f}"),
        None => format!("faulty {block}: field {}", st.error_code2),
    })
}

/// The FrameID range of an IOCR of `iocr_type` in RT class `rt_class` (IEC 61158-6-10 FrameID
/// table, as p-net `pf_cmdev_check_iocr_param` and `pf_cmdev_fix_frame_id` use it).
pub fn frame_id_range(iocr_type: u16, rt_class: u8) -> Option<RangeInclusive<u16>> {
    let multicast = matches!(
        iocr_type,
        iocr_type::MULTICAST_PROVIDER | iocr_type::MULTICAST_CONSUMER
    );
    let class = u32::from(rt_class);
    Some(match (class, multicast) {
        (IocrProperties::RT_CLASS_1, false) | (IocrProperties::RT_CLASS_UDP, false) => {
            0xC000..=0xF7FF
        }
        (IocrProperties::RT_CLASS_1, true) | (IocrProperties::RT_CLASS_UDP, true) => {
            0xF800..=0xFBFF
        }
        (IocrProperties::RT_CLASS_2, false) => 0x8000..=0xBBFF,
        (IocrProperties::RT_CLASS_2, true) => 0xBC00..=0xBFFF,
        (IocrProperties::RT_CLASS_3, _) => 0x0100..=0x7FFF,
        _ => return None,
    })
}

/// The FrameID a controller puts in an output IOCRBlockReq to let the device choose.
pub const FRAME_ID_DEVICE_CHOOSES: u16 = 0xFFFF;

/// Parse the NDR data of a Connect request, answering a block that cannot be decoded with the
/// PNIOStatus that names it.
pub fn parse_connect(data: &[u8]) -> Result<ConnectRequest, PnioStatus> {
    ConnectRequest::parse_located(data).map_err(|BlockError { block_type, .. }| match block_type {
        Some(ar::BLOCK_TYPE_REQ) => connect_error(err1::AR_BLOCK, 0),
        Some(iocr::BLOCK_TYPE_REQ) => connect_error(err1::IOCR_BLOCK, 0),
        Some(expected::BLOCK_TYPE) => connect_error(err1::EXPECTED_BLOCK, 0),
        Some(alarm_cr::BLOCK_TYPE_REQ) => connect_error(err1::ALARM_CR_BLOCK, 0),
        // A broken block list, a missing ARBlockReq or a second one of a unique block.
        _ => connect_error(err1::CMRPC, cmrpc::WRONG_BLOCK_COUNT),
    })
}

/// Check a Connect request as the standard's block tables require: the ARBlockReq, every
/// IOCRBlockReq, the AlarmCRBlockReq and the block counts. The checks of the expected
/// submodules against the real configuration (ModuleDiffBlock) are the device's
/// configuration's business and come after this.
pub fn check_connect(req: &ConnectRequest, limits: &ConnectLimits) -> Result<(), PnioStatus> {
    check_ar(&req.ar)?;
    let startup_advanced = req.ar.properties.startup_mode_advanced();
    if req.ar.ar_type == ar_type::IOSAR {
        // A device-access AR carries no IO CRs and no alarm CR.
        if !req.iocrs.is_empty() || req.alarm_cr.is_some() {
            return Err(connect_error(err1::AR_BLOCK, ar_field::AR_TYPE));
        }
        return Ok(());
    }
    for c in &req.iocrs {
        check_iocr(c, startup_advanced, limits)?;
    }
    let count = |t| req.iocrs.iter().filter(|c| c.iocr_type == t).count();
    let (inputs, outputs) = (count(iocr_type::INPUT), count(iocr_type::OUTPUT));
    if inputs == 0 || outputs == 0 {
        return Err(connect_error(err1::CMRPC, cmrpc::IOCR_MISSING));
    }
    if inputs > 1 || outputs > 1 || req.iocrs.len() != 2 {
        // Multicast CRs and more than one CR per direction are not supported.
        return Err(connect_error(err1::IOCR_BLOCK, iocr_field::IOCR_TYPE));
    }
    let classes: Vec<u8> = req.iocrs.iter().map(|c| c.properties.rt_class()).collect();
    if classes.windows(2).any(|w| w[0] != w[1]) {
        // One AR, one RT class (both CRs of an S7 or p-net AR carry the same class).
        return Err(connect_error(err1::IOCR_BLOCK, iocr_field::IOCR_PROPERTIES));
    }
    match &req.alarm_cr {
        Some(a) => check_alarm_cr(a),
        None => Err(connect_error(err1::CMRPC, cmrpc::WRONG_BLOCK_COUNT)),
    }
}

/// The FrameIDs of the Connect response: the input CR keeps the controller's FrameID (checked
/// to lie in its class's range by [`check_connect`]); for the output CR the device keeps a
/// FrameID in range, and chooses the first free one of the range when the controller asks it
/// to (0xFFFF) or proposes one outside the range. `taken`: FrameIDs in use by other CRs.
pub fn response_frame_ids(
    input: &IocrBlockReq,
    output: &IocrBlockReq,
    taken: &[u16],
) -> (u16, u16) {
    let in_id = input.frame_id;
    let class = output.properties.rt_class();
    let Some(range) = frame_id_range(iocr_type::OUTPUT, class) else {
        return (in_id, output.frame_id);
    };
    let busy = |f: u16| f == in_id || taken.contains(&f);
    let out_id = if range.contains(&output.frame_id) {
        output.frame_id
    } else {
        range.clone().find(|&f| !busy(f)).unwrap_or(*range.start())
    };
    (in_id, out_id)
}

fn check_ar(a: &ArBlockReq) -> Result<(), PnioStatus> {
    let e = |f| Err(connect_error(err1::AR_BLOCK, f));
    let p = a.properties;
    if a.ar_type != ar_type::IOCAR && a.ar_type != ar_type::IOSAR {
        return e(ar_field::AR_TYPE);
    }
    if a.ar_uuid == Uuid::NIL {
        return e(ar_field::AR_UUID);
    }
    if a.cm_initiator_mac[0] & 0x01 != 0 {
        return e(ar_field::CM_INITIATOR_MAC);
    }
    // DEA00000-6C97-11D1-8271-<instance><device><vendor>: the PNIO object UUID.
    if a.cm_initiator_object_uuid.pnio_object_ids().is_none() {
        return e(ar_field::CM_INITIATOR_OBJECT_UUID);
    }
    // An external parameter server is not supported; a device-access AR is not parameterized
    // at all, so there the bit does not matter.
    let bad_props = p.state() != 1
        || (!p.parameterization_server() && a.ar_type == ar_type::IOCAR)
        || (p.device_access() && a.ar_type != ar_type::IOSAR)
        || p.companion_ar() == 3;
    if bad_props {
        return e(ar_field::AR_PROPERTIES);
    }
    if !(1..=1000).contains(&a.cm_initiator_activity_timeout_factor) {
        return e(ar_field::ACTIVITY_TIMEOUT);
    }
    let name = a.cm_initiator_station_name.as_bytes();
    if name.is_empty() || name.len() > 240 {
        return e(ar_field::STATION_NAME_LENGTH);
    }
    if !name.iter().all(|b| (0x20..=0x7E).contains(b)) {
        return e(ar_field::STATION_NAME);
    }
    Ok(())
}

/// IOCRProperties bits that must be zero: Reserved1 (bits 4-12) and Reserved3 (bits 24-31);
/// Reserved2 may hold anything and is not checked (IEC 61158-6-10, as p-net reads it).
const IOCR_PROPERTIES_RESERVED: u32 = 0xFF00_1FF0;

fn check_iocr(
    c: &IocrBlockReq,
    startup_advanced: bool,
    limits: &ConnectLimits,
) -> Result<(), PnioStatus> {
    use iocr_field as f;
    let e = |f| Err(connect_error(err1::IOCR_BLOCK, f));
    let class = u32::from(c.properties.rt_class());
    if !(iocr_type::INPUT..=iocr_type::MULTICAST_CONSUMER).contains(&c.iocr_type) {
        return e(f::IOCR_TYPE);
    }
    if c.lt != ethertype::PROFINET {
        return e(f::LT);
    }
    // Legacy startup allows RT classes 1-5, advanced startup only 2-5; of those, this device
    // implements 1 and 2.
    let allowed_by_startup = if startup_advanced {
        (2..=5).contains(&class)
    } else {
        (1..=5).contains(&class)
    };
    let implemented = class == IocrProperties::RT_CLASS_1 || class == IocrProperties::RT_CLASS_2;
    if !allowed_by_startup || !implemented || c.properties.0 & IOCR_PROPERTIES_RESERVED != 0 {
        return e(f::IOCR_PROPERTIES);
    }
    if !(rt::C_SDU_MIN_LEN..=rt::C_SDU_MAX_LEN).contains(&usize::from(c.data_length)) {
        return e(f::DATA_LENGTH);
    }
    // The controller chooses the FrameID of the CRs it consumes (input, multicast consumer);
    // for an output CR it may leave the choice to the device.
    if c.iocr_type != iocr_type::OUTPUT {
        let in_range = frame_id_range(c.iocr_type, c.properties.rt_class())
            .is_some_and(|r| r.contains(&c.frame_id));
        if !in_range {
            return e(f::FRAME_ID);
        }
    }
    let (scf, rr) = (c.send_clock_factor, c.reduction_ratio);
    if let Err(field) = limits.check_cycle(scf, rr) {
        return e(field);
    }
    let interval = u32::from(scf) * u32::from(rr);
    if c.phase == 0 || c.phase > rr {
        return e(f::PHASE);
    }
    let fso = c.frame_send_offset;
    if fso != 0xFFFF_FFFF && (fso >= u32::from(scf) * 31_250 || fso >= 0x003D_0900) {
        return e(f::FRAME_SEND_OFFSET);
    }
    // Data-hold time at most 1.92 s.
    let dht_us = u64::from(c.data_hold_factor) * u64::from(interval) * 1000 / 32;
    if !(1..=0x1E00).contains(&c.data_hold_factor) || dht_us > 1_920_000 {
        return e(f::DATA_HOLD_FACTOR);
    }
    if c.tag_header.vlan_id() != 0 || c.tag_header.priority() != 6 {
        return e(f::TAG_HEADER);
    }
    if c.apis.is_empty() {
        return e(f::NUMBER_OF_APIS);
    }
    Ok(())
}

fn check_alarm_cr(a: &AlarmCrBlockReq) -> Result<(), PnioStatus> {
    use alarm_cr_field as f;
    let e = |f| Err(connect_error(err1::ALARM_CR_BLOCK, f));
    if a.alarm_cr_type != alarm_cr::ALARM_CR_TYPE {
        return e(f::ALARM_CR_TYPE);
    }
    // Alarms over UDP are not supported: the LT field must be the PROFINET EtherType.
    if a.properties.transport_udp() || a.lt != ethertype::PROFINET {
        return e(f::LT);
    }
    if !(1..=100).contains(&a.rta_timeout_factor) {
        return e(f::RTA_TIMEOUT_FACTOR);
    }
    if !(3..=15).contains(&a.rta_retries) {
        return e(f::RTA_RETRIES);
    }
    if !(200..=1432).contains(&a.max_alarm_data_length) {
        return e(f::MAX_ALARM_DATA_LENGTH);
    }
    if a.tag_header_high.vlan_id() != 0 || a.tag_header_high.priority() != 6 {
        return e(f::TAG_HEADER_HIGH);
    }
    if a.tag_header_low.vlan_id() != 0 || a.tag_header_low.priority() != 5 {
        return e(f::TAG_HEADER_LOW);
    }
    Ok(())
}

#[cfg(test)]
mod tests;

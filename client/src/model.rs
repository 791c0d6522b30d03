//! Typed resources of spec section 2. Every field has a default (a missing field never fails a
//! call) and unknown fields are kept in `extra` (spec 2: objects may gain fields).

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::error::{CallResult, Error};

/// Runtime state (spec section 3). Strings the client does not know map to [`State::Unknown`]
/// (spec 4.2, 9.4); deserialising never fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum State {
    #[default]
    Unknown,
    Stopped,
    Initialized,
    ConfigError,
    DataExchange,
    Aborted,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            State::Unknown => "Unknown",
            State::Stopped => "Stopped",
            State::Initialized => "Initialized",
            State::ConfigError => "ConfigError",
            State::DataExchange => "DataExchange",
            State::Aborted => "Aborted",
        }
    }

    /// Map a wire string; anything unrecognised is `Unknown`.
    pub fn from_wire(s: &str) -> State {
        match s {
            "Stopped" => State::Stopped,
            "Initialized" => State::Initialized,
            "ConfigError" => State::ConfigError,
            "DataExchange" => State::DataExchange,
            "Aborted" => State::Aborted,
            _ => State::Unknown,
        }
    }
}

impl std::fmt::Display for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for State {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for State {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // Any JSON value is accepted: a non-string (number, null) is also Unknown.
        let v = Value::deserialize(d)?;
        Ok(v.as_str().map(State::from_wire).unwrap_or(State::Unknown))
    }
}

/// Service runtime error code (spec 7.4). Values outside the table map to `Unknown`; the raw
/// value stays in the resource's `error_code` field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ServiceError {
    Ok,
    ErrInit,
    ErrCfg,
    ErrThread,
    ErrRunning,
    ErrPdi,
    ErrDap,
    /// -10000 in the spec: any other value (e.g. the OS error code in `ConfigError`).
    Unknown,
}

impl ServiceError {
    pub fn from_code(code: i64) -> ServiceError {
        match code {
            0 => ServiceError::Ok,
            -1 => ServiceError::ErrInit,
            -2 => ServiceError::ErrCfg,
            -3 => ServiceError::ErrThread,
            -4 => ServiceError::ErrRunning,
            -5 => ServiceError::ErrPdi,
            -6 => ServiceError::ErrDap,
            _ => ServiceError::Unknown,
        }
    }

    /// Spec 7.4 numeric value (`Unknown` = -10000).
    pub fn code(self) -> i64 {
        match self {
            ServiceError::Ok => 0,
            ServiceError::ErrInit => -1,
            ServiceError::ErrCfg => -2,
            ServiceError::ErrThread => -3,
            ServiceError::ErrRunning => -4,
            ServiceError::ErrPdi => -5,
            ServiceError::ErrDap => -6,
            ServiceError::Unknown => -10000,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ServiceError::Ok => "Ok",
            ServiceError::ErrInit => "ErrInit",
            ServiceError::ErrCfg => "ErrCfg",
            ServiceError::ErrThread => "ErrThread",
            ServiceError::ErrRunning => "ErrRunning",
            ServiceError::ErrPdi => "ErrPdi",
            ServiceError::ErrDap => "ErrDap",
            ServiceError::Unknown => "Unknown",
        }
    }
}

/// Why a write was not delivered (spec 7.3).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ReasonCode {
    /// Empty string: delivered.
    Delivered,
    LinkDown,
    DataPlaneStopped,
    NotFlushed,
    /// A value the client does not know (kept verbatim).
    Other(String),
}

impl ReasonCode {
    pub fn from_wire(s: &str) -> ReasonCode {
        match s {
            "" => ReasonCode::Delivered,
            "PnS.Io.NotDelivered.LinkDown" => ReasonCode::LinkDown,
            "PnS.Io.NotDelivered.DataPlaneStopped" => ReasonCode::DataPlaneStopped,
            "PnS.Io.NotDelivered.NotFlushed" => ReasonCode::NotFlushed,
            other => ReasonCode::Other(other.to_string()),
        }
    }
}

/// GET /api/status (spec 2.1).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Status {
    pub service_name: String,
    pub version: String,
    pub state: State,
    pub connected: bool,
    pub ever_connected: bool,
    pub error_code: i64,
    pub io_epoch: i64,
    pub critical_alarm_count: i64,
    pub alarm_count: i64,
    pub hardware_port_present: bool,
    pub wait_reason: String,
    pub status_message: String,
    pub master_assigned_ip: String,
    pub master_assigned_mask: String,
    pub master_assigned_gateway: String,
    pub config_station_name: String,
    pub master_station_name: String,
    pub dcp_ip_applied: bool,
    pub dcp_ip_apply_message: String,
    pub output_synced_to_driver: bool,
    pub timestamp: String,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Status {
    /// `errorCode` mapped to the 7.4 table.
    pub fn service_error(&self) -> ServiceError {
        ServiceError::from_code(self.error_code)
    }
}

/// GET /api/io (spec 2.2), hex fields kept as sent. Decode with [`IoSnapshot::input`] etc.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct IoSnapshot {
    pub epoch: i64,
    pub input_hex: String,
    pub output_hex: String,
    pub input_length: i64,
    pub output_length: i64,
    pub input_iops_hex: String,
    pub input_iocs_hex: String,
    pub output_iops_hex: String,
    pub output_iocs_hex: String,
    pub input_valid: bool,
    pub output_valid: bool,
    pub output_synced_to_driver: bool,
    pub format_version: i64,
    pub timestamp: String,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl IoSnapshot {
    /// `inputHex`: controller to device, the client's `Q` addresses.
    pub fn input(&self) -> Result<Vec<u8>, Error> {
        decode_hex(&self.input_hex)
    }
    /// `outputHex`: device to controller, the client's `I`, `M` and `DB1` addresses.
    pub fn output(&self) -> Result<Vec<u8>, Error> {
        decode_hex(&self.output_hex)
    }
}

/// POST /api/io body (spec 2.3).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IoWrite {
    pub offset: u64,
    pub data: String,
}

/// POST /api/io response (spec 2.4).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct IoWriteResponse {
    pub ok: bool,
    pub delivered: bool,
    pub queued: bool,
    pub connected: bool,
    pub state: State,
    pub reason_code: String,
    pub wait_reason: String,
    pub message: String,
    pub error_code: i64,
    pub offset: i64,
    pub length: i64,
    pub timestamp: String,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl IoWriteResponse {
    pub fn reason(&self) -> ReasonCode {
        ReasonCode::from_wire(&self.reason_code)
    }
}

/// GET /api/diag (spec 2.5). `ok=false` when the slave has not been started (counters absent,
/// then 0 here).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Diag {
    pub ok: bool,
    pub shared_memory_mapped: bool,
    pub link_up: bool,
    pub connected: bool,
    pub message: String,
    pub state: State,
    pub timestamp: String,
    pub error_code: i64,
    pub active_iocr_count: i64,
    pub iocr_active: i64,
    pub iocr_healthy: i64,
    pub input_area_length: i64,
    pub output_area_length: i64,
    pub heartbeat: i64,
    pub cycle_counter: i64,
    pub last_error: i64,
    pub rx_frames: i64,
    pub tx_frames: i64,
    pub rx_rt_frames: i64,
    pub tx_rt_frames: i64,
    pub tx_control_frames: i64,
    pub rx_control_frames: i64,
    pub dropped_frames: i64,
    pub invalid_frames: i64,
    pub watchdog_trips: i64,
    pub stack_cycles: i64,
    pub stack_frames_rx: i64,
    pub stack_frames_tx: i64,
    pub stack_missed_ticks: i64,
    pub stack_max_jitter_us: i64,
    pub stack_alarm_rx_count: i64,
    pub stack_alarm_tx_ack_ok: i64,
    pub stack_alarm_tx_ack_fail: i64,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Alarm severity (spec 2.6); unknown strings map to `Unknown`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Severity {
    Info,
    Warning,
    Error,
    Critical,
    #[default]
    Unknown,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "Info",
            Severity::Warning => "Warning",
            Severity::Error => "Error",
            Severity::Critical => "Critical",
            Severity::Unknown => "Unknown",
        }
    }
}

impl Serialize for Severity {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Severity {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        Ok(match v.as_str() {
            Some("Info") => Severity::Info,
            Some("Warning") => Severity::Warning,
            Some("Error") => Severity::Error,
            Some("Critical") => Severity::Critical,
            _ => Severity::Unknown,
        })
    }
}

/// One alarm (spec 2.6).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AlarmItem {
    pub id: String,
    pub severity: Severity,
    pub message: String,
    pub occurred_at: String,
    pub count: i64,
    pub source: String,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// GET /api/im (spec 2.7).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Im {
    pub vendor_id: i64,
    pub device_id: i64,
    pub order_id: String,
    pub serial_number: String,
    pub hardware_revision: String,
    pub software_revision: String,
    pub station_name: String,
    pub product_name: String,
    pub im_supported: String,
    pub im14_supported: bool,
    pub im1_tag_function: String,
    pub im1_tag_location: String,
    pub im2_date: String,
    pub im3_descriptor: String,
    pub im4_signature_hex: String,
    pub timestamp: String,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One user-area record (spec 2.8).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Record {
    pub slot: i64,
    pub subslot: i64,
    pub index: i64,
    pub length: i64,
    pub data_hex: String,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// GET /api/records (spec 2.8).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Records {
    pub count: i64,
    pub note: String,
    pub records: Vec<Record>,
    pub timestamp: String,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `Ok` result object (spec 2.9): high-resolution timer, alarm acknowledge (with the count).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct OkResult {
    pub ok: bool,
    pub message: String,
    /// Alarm acknowledge only; the spec spells it `AcknowledgedCount`, both spellings are read.
    #[serde(alias = "AcknowledgedCount")]
    pub acknowledged_count: i64,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Start, stop and configuration-reload result (spec 2.9, Track 2 of 7.1).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CommandResult {
    pub ok: bool,
    pub message: String,
    pub error_code: i64,
    pub timestamp: String,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl CommandResult {
    /// `errorCode` mapped to the 7.4 table.
    pub fn service_error(&self) -> ServiceError {
        ServiceError::from_code(self.error_code)
    }

    /// `ok=false` as an error ([`CallResult::NativeError`] carrying `errorCode` and `message`).
    pub fn check(self) -> Result<Self, Error> {
        if self.ok {
            Ok(self)
        } else {
            let mut e = Error::new(CallResult::NativeError, self.message.clone());
            e.error_code = Some(self.error_code);
            Err(e)
        }
    }
}

/// POST /api/reset result (spec 2.9).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ResetResult {
    pub ok: bool,
    pub mode: String,
    pub message: String,
    pub timestamp: String,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Reset modes of POST /api/reset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResetMode {
    Communication,
    Factory,
}

impl ResetMode {
    pub fn as_str(self) -> &'static str {
        match self {
            ResetMode::Communication => "communication",
            ResetMode::Factory => "factory",
        }
    }
}

impl std::str::FromStr for ResetMode {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        match s {
            "communication" => Ok(ResetMode::Communication),
            "factory" => Ok(ResetMode::Factory),
            _ => Err(Error::invalid(format!(
                "reset mode must be communication or factory, got {s:?}"
            ))),
        }
    }
}

/// Decode a `*Hex` string. Tolerant (the format is open in spec 2.10): either case, an optional
/// `0x` prefix, and separators (space, `:`, `-`, `_`) between bytes are accepted.
pub fn decode_hex(s: &str) -> Result<Vec<u8>, Error> {
    let s = s.trim();
    let s = s
        .strip_prefix("0x")
        .or_else(|| s.strip_prefix("0X"))
        .unwrap_or(s);
    let digits: Vec<u8> = s
        .bytes()
        .filter(|b| !matches!(b, b' ' | b':' | b'-' | b'_'))
        .collect();
    if digits.len() % 2 != 0 {
        return Err(Error::new(
            CallResult::NativeError,
            format!("odd number of hex digits in {s:?}"),
        ));
    }
    let nib = |b: u8| -> Option<u8> {
        match b {
            b'0'..=b'9' => Some(b - b'0'),
            b'a'..=b'f' => Some(b - b'a' + 10),
            b'A'..=b'F' => Some(b - b'A' + 10),
            _ => None,
        }
    };
    digits
        .chunks_exact(2)
        .map(|p| match (nib(p[0]), nib(p[1])) {
            (Some(h), Some(l)) => Ok((h << 4) | l),
            _ => Err(Error::new(
                CallResult::NativeError,
                format!("invalid hex in {s:?}"),
            )),
        })
        .collect()
}

/// Encode bytes as the request `data` format: lower-case hex, no prefix, no separators.
pub fn encode_hex(bytes: &[u8]) -> String {
    const D: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(D[(b >> 4) as usize] as char);
        s.push(D[(b & 15) as usize] as char);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_state_maps_to_unknown() {
        let s: Status =
            serde_json::from_str(r#"{"state":"Hibernating","connected":true}"#).unwrap();
        assert_eq!(s.state, State::Unknown);
        assert!(s.connected);
        let s: Status = serde_json::from_str(r#"{"state":7}"#).unwrap();
        assert_eq!(s.state, State::Unknown);
        for st in [
            State::Stopped,
            State::Initialized,
            State::ConfigError,
            State::DataExchange,
            State::Aborted,
            State::Unknown,
        ] {
            let j = format!(r#"{{"state":"{}"}}"#, st.as_str());
            let s: Status = serde_json::from_str(&j).unwrap();
            assert_eq!(s.state, st);
        }
    }

    #[test]
    fn extra_fields_kept_missing_fields_default() {
        let s: Status = serde_json::from_str(r#"{"errorCode":-4,"newField":[1]}"#).unwrap();
        assert_eq!(s.error_code, -4);
        assert_eq!(s.service_error(), ServiceError::ErrRunning);
        assert_eq!(s.extra["newField"], serde_json::json!([1]));
        assert_eq!(s.version, "");
    }

    #[test]
    fn service_error_table() {
        for (c, e) in [
            (0, ServiceError::Ok),
            (-1, ServiceError::ErrInit),
            (-2, ServiceError::ErrCfg),
            (-3, ServiceError::ErrThread),
            (-4, ServiceError::ErrRunning),
            (-5, ServiceError::ErrPdi),
            (-6, ServiceError::ErrDap),
        ] {
            assert_eq!(ServiceError::from_code(c), e);
            assert_eq!(e.code(), c);
        }
        assert_eq!(ServiceError::from_code(19), ServiceError::Unknown);
        assert_eq!(ServiceError::from_code(-7), ServiceError::Unknown);
        assert_eq!(ServiceError::Unknown.code(), -10000);
    }

    #[test]
    fn reason_codes() {
        assert_eq!(ReasonCode::from_wire(""), ReasonCode::Delivered);
        assert_eq!(
            ReasonCode::from_wire("PnS.Io.NotDelivered.LinkDown"),
            ReasonCode::LinkDown
        );
        assert_eq!(
            ReasonCode::from_wire("PnS.Io.NotDelivered.DataPlaneStopped"),
            ReasonCode::DataPlaneStopped
        );
        assert_eq!(
            ReasonCode::from_wire("PnS.Io.NotDelivered.NotFlushed"),
            ReasonCode::NotFlushed
        );
        assert_eq!(
            ReasonCode::from_wire("X"),
            ReasonCode::Other("X".to_string())
        );
    }

    #[test]
    fn command_result_check_surfaces_error_code() {
        let r: CommandResult =
            serde_json::from_str(r#"{"ok":false,"message":"NIC eth9 missing","errorCode":19}"#)
                .unwrap();
        let e = r.check().unwrap_err();
        assert_eq!(e.kind, CallResult::NativeError);
        assert_eq!(e.error_code, Some(19));
        assert!(e.message.contains("eth9"));
    }

    #[test]
    fn ack_count_both_spellings() {
        let a: OkResult = serde_json::from_str(r#"{"ok":true,"AcknowledgedCount":3}"#).unwrap();
        assert_eq!(a.acknowledged_count, 3);
        let a: OkResult = serde_json::from_str(r#"{"ok":true,"acknowledgedCount":2}"#).unwrap();
        assert_eq!(a.acknowledged_count, 2);
    }

    #[test]
    fn hex_decode_tolerant_encode_canonical() {
        assert_eq!(decode_hex("0aFF").unwrap(), vec![0x0a, 0xff]);
        assert_eq!(decode_hex("0x0a ff").unwrap(), vec![0x0a, 0xff]);
        assert_eq!(decode_hex("0A:FF").unwrap(), vec![0x0a, 0xff]);
        assert_eq!(decode_hex("").unwrap(), Vec::<u8>::new());
        assert!(decode_hex("abc").is_err());
        assert!(decode_hex("zz").is_err());
        assert_eq!(encode_hex(&[0xAB, 0x01, 0x00]), "ab0100");
    }

    #[test]
    fn severity_unknown() {
        let a: AlarmItem = serde_json::from_str(r#"{"id":"1","severity":"Fatal"}"#).unwrap();
        assert_eq!(a.severity, Severity::Unknown);
        let a: AlarmItem = serde_json::from_str(r#"{"id":"1","severity":"Critical"}"#).unwrap();
        assert_eq!(a.severity, Severity::Critical);
    }
}

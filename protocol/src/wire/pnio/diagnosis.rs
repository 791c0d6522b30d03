//! Diagnosis: the DiagnosisData block (0x0010) returned by the diagnosis records
//! (0x800A/0x800B/0x800C per subslot, 0xC00x per slot, 0xE00x per AR, 0xF00x per API, 0xF80C
//! per device), and the user structures (UserStructureIdentifier + items) shared with alarm
//! notifications.
//!
//! ```text
//! DiagnosisData v1.1: API u32, SlotNumber u16, SubslotNumber u16, ChannelNumber u16,
//!                     ChannelProperties u16, UserStructureIdentifier u16, items...
//! DiagnosisData v1.0: the same without API
//! USI 0x8000 ChannelDiagnosis:       { ChannelNumber u16, ChannelProperties u16, ChannelErrorType u16 }*
//! USI 0x8002 ExtChannelDiagnosis:    { ..., ExtChannelErrorType u16, ExtChannelAddValue u32 }*
//! USI 0x8003 QualifiedChannelDiagnosis: { ..., QualifiedChannelQualifier u32 }*
//! USI 0x0000..0x7FFF: manufacturer specific data (opaque)
//! ```
//! ChannelProperties: bits 0-7 Type, bit 8 Accumulative, bits 9-10 Maintenance, bits 11-12
//! Specifier, bits 13-15 Direction.
//!
//! Source: Wireshark `packet-dcerpc-pn-io.c` `dissect_DiagnosisData_block`,
//! `dissect_ChannelProperties`, `dissect_AlarmUserStructure` and the value tables
//! `pn_io_channel_properties_*`, `pn_io_user_structure_identifier`; real frames
//! `icsnpp-read-implicit-diag-res-siemens.hex`, `pniors-alarm-low-notif-diag-*.hex`.
//!
//! Fuzz entry point: [`DiagnosisDataRepr::parse`] (one block), [`parse_diagnosis_record`].

use crate::wire::field::{Reader, Writer};
use crate::wire::pnio::block::{blocks, BlockBody, BlockView};
use crate::wire::{Emit, Error, Result};

pub mod block_type {
    pub const DIAGNOSIS_DATA: u16 = 0x0010;
}

/// UserStructureIdentifier values.
pub mod usi {
    /// 0x0000..=0x7FFF: manufacturer specific.
    pub const MANUFACTURER_MAX: u16 = 0x7FFF;
    pub const CHANNEL_DIAGNOSIS: u16 = 0x8000;
    pub const MULTIPLE: u16 = 0x8001;
    pub const EXT_CHANNEL_DIAGNOSIS: u16 = 0x8002;
    pub const QUALIFIED_CHANNEL_DIAGNOSIS: u16 = 0x8003;
    pub const MAINTENANCE: u16 = 0x8100;
}

/// ChannelNumber 0x8000: the whole submodule.
pub const CHANNEL_WHOLE_SUBMODULE: u16 = 0x8000;

/// A few standard ChannelErrorType values (IEC 61158-6-10, Wireshark `pn_io_channel_error_type`).
pub mod channel_error_type {
    pub const SHORT_CIRCUIT: u16 = 0x0001;
    pub const UNDERVOLTAGE: u16 = 0x0002;
    pub const OVERVOLTAGE: u16 = 0x0003;
    pub const OVERLOAD: u16 = 0x0004;
    pub const OVERTEMPERATURE: u16 = 0x0005;
    pub const LINE_BREAK: u16 = 0x0006;
    pub const UPPER_LIMIT_EXCEEDED: u16 = 0x0007;
    pub const LOWER_LIMIT_EXCEEDED: u16 = 0x0008;
    pub const ERROR: u16 = 0x0009;
    pub const REMOTE_MISMATCH: u16 = 0x8001;

    /// The types above in words: the one table every place that names a ChannelErrorType
    /// uses (pn-controller's alarm output, the GSDML's `ChannelDiagList`).
    pub const NAMES: [(u16, &str); 10] = [
        (SHORT_CIRCUIT, "short circuit"),
        (UNDERVOLTAGE, "undervoltage"),
        (OVERVOLTAGE, "overvoltage"),
        (OVERLOAD, "overload"),
        (OVERTEMPERATURE, "overtemperature"),
        (LINE_BREAK, "line break"),
        (UPPER_LIMIT_EXCEEDED, "upper limit exceeded"),
        (LOWER_LIMIT_EXCEEDED, "lower limit exceeded"),
        (ERROR, "error"),
        (REMOTE_MISMATCH, "remote mismatch"),
    ];

    /// The name of a ChannelErrorType of [`NAMES`].
    pub fn name(t: u16) -> Option<&'static str> {
        NAMES.iter().find(|(v, _)| *v == t).map(|(_, n)| *n)
    }
}

/// ChannelProperties.Specifier.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Specifier {
    /// 0: all subsequent disappear (used with ChannelNumber 0x8000 to clear).
    AllDisappear = 0,
    Appears = 1,
    Disappears = 2,
    DisappearsOtherRemain = 3,
}

/// ChannelProperties.Direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Direction {
    ManufacturerSpecific = 0,
    Input = 1,
    Output = 2,
    InputOutput = 3,
}

/// ChannelProperties.Maintenance (severity).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Severity {
    Fault = 0,
    MaintenanceRequired = 1,
    MaintenanceDemanded = 2,
    /// 3: see QualifiedChannelQualifier.
    Qualified = 3,
}

/// ChannelProperties (u16 bit field).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ChannelProperties(pub u16);

impl ChannelProperties {
    /// Build from the parts. `data_type` is the Type field (0 = submodule/unspecified,
    /// 1 = 1 bit, 2 = 2 bit, 3 = 4 bit, 4 = 8 bit, 5 = 16 bit, 6 = 32 bit, 7 = 64 bit).
    pub const fn new(
        data_type: u8,
        accumulative: bool,
        severity: Severity,
        specifier: Specifier,
        direction: Direction,
    ) -> Self {
        ChannelProperties(
            (data_type as u16)
                | ((accumulative as u16) << 8)
                | ((severity as u16) << 9)
                | ((specifier as u16) << 11)
                | ((direction as u16) << 13),
        )
    }
    pub const fn data_type(self) -> u8 {
        (self.0 & 0xFF) as u8
    }
    pub const fn accumulative(self) -> bool {
        self.0 & 0x0100 != 0
    }
    pub fn severity(self) -> Severity {
        match (self.0 >> 9) & 3 {
            0 => Severity::Fault,
            1 => Severity::MaintenanceRequired,
            2 => Severity::MaintenanceDemanded,
            _ => Severity::Qualified,
        }
    }
    pub fn specifier(self) -> Specifier {
        match (self.0 >> 11) & 3 {
            0 => Specifier::AllDisappear,
            1 => Specifier::Appears,
            2 => Specifier::Disappears,
            _ => Specifier::DisappearsOtherRemain,
        }
    }
    pub fn direction(self) -> Direction {
        match (self.0 >> 13) & 3 {
            0 => Direction::ManufacturerSpecific,
            1 => Direction::Input,
            2 => Direction::Output,
            _ => Direction::InputOutput,
        }
    }
    /// The raw 3-bit direction field (values 4..7 are reserved).
    pub const fn direction_raw(self) -> u8 {
        (self.0 >> 13) as u8
    }
    /// The same properties with another specifier.
    pub const fn with_specifier(self, s: Specifier) -> Self {
        ChannelProperties((self.0 & !0x1800) | ((s as u16) << 11))
    }
}

/// One ChannelDiagnosis item (USI 0x8000).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ChannelDiagnosis {
    pub channel_number: u16,
    pub properties: ChannelProperties,
    pub error_type: u16,
}

/// One ExtChannelDiagnosis item (USI 0x8002).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ExtChannelDiagnosis {
    pub channel_number: u16,
    pub properties: ChannelProperties,
    pub error_type: u16,
    pub ext_error_type: u16,
    pub ext_add_value: u32,
}

/// One QualifiedChannelDiagnosis item (USI 0x8003).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct QualifiedChannelDiagnosis {
    pub channel_number: u16,
    pub properties: ChannelProperties,
    pub error_type: u16,
    pub ext_error_type: u16,
    pub ext_add_value: u32,
    pub qualifier: u32,
}

/// A UserStructureIdentifier with its items. The standard diagnosis structures are typed
/// when their data is a whole number of items; anything else (manufacturer specific USI,
/// maintenance, an odd length) is kept opaque so that a parse-emit round trip is exact.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum UserStructure {
    Channel(Vec<ChannelDiagnosis>),
    ExtChannel(Vec<ExtChannelDiagnosis>),
    Qualified(Vec<QualifiedChannelDiagnosis>),
    Other { usi: u16, data: Vec<u8> },
}

impl UserStructure {
    pub fn usi(&self) -> u16 {
        match self {
            UserStructure::Channel(_) => usi::CHANNEL_DIAGNOSIS,
            UserStructure::ExtChannel(_) => usi::EXT_CHANNEL_DIAGNOSIS,
            UserStructure::Qualified(_) => usi::QUALIFIED_CHANNEL_DIAGNOSIS,
            UserStructure::Other { usi, .. } => *usi,
        }
    }

    /// Interpret `data` (the bytes after the USI) for `usi`.
    pub fn parse(usi_value: u16, data: &[u8]) -> Self {
        let other = || UserStructure::Other {
            usi: usi_value,
            data: data.to_vec(),
        };
        let item_len = match usi_value {
            usi::CHANNEL_DIAGNOSIS => 6,
            usi::EXT_CHANNEL_DIAGNOSIS => 12,
            usi::QUALIFIED_CHANNEL_DIAGNOSIS => 16,
            _ => return other(),
        };
        if data.len() % item_len != 0 {
            return other();
        }
        let mut r = Reader::new(data);
        // Each step consumes item_len bytes; the reads cannot fail (length checked above),
        // but are still handled without panicking.
        let mut parse = || -> Result<UserStructure> {
            Ok(match usi_value {
                usi::CHANNEL_DIAGNOSIS => {
                    let mut v = Vec::new();
                    while !r.is_empty() {
                        v.push(ChannelDiagnosis {
                            channel_number: r.u16()?,
                            properties: ChannelProperties(r.u16()?),
                            error_type: r.u16()?,
                        });
                    }
                    UserStructure::Channel(v)
                }
                usi::EXT_CHANNEL_DIAGNOSIS => {
                    let mut v = Vec::new();
                    while !r.is_empty() {
                        v.push(ExtChannelDiagnosis {
                            channel_number: r.u16()?,
                            properties: ChannelProperties(r.u16()?),
                            error_type: r.u16()?,
                            ext_error_type: r.u16()?,
                            ext_add_value: r.u32()?,
                        });
                    }
                    UserStructure::ExtChannel(v)
                }
                _ => {
                    let mut v = Vec::new();
                    while !r.is_empty() {
                        v.push(QualifiedChannelDiagnosis {
                            channel_number: r.u16()?,
                            properties: ChannelProperties(r.u16()?),
                            error_type: r.u16()?,
                            ext_error_type: r.u16()?,
                            ext_add_value: r.u32()?,
                            qualifier: r.u32()?,
                        });
                    }
                    UserStructure::Qualified(v)
                }
            })
        };
        parse().unwrap_or_else(|_| other())
    }

    /// Length of the items (without the USI).
    pub fn data_len(&self) -> usize {
        match self {
            UserStructure::Channel(v) => 6 * v.len(),
            UserStructure::ExtChannel(v) => 12 * v.len(),
            UserStructure::Qualified(v) => 16 * v.len(),
            UserStructure::Other { data, .. } => data.len(),
        }
    }

    /// The items (without the USI).
    fn emit_items(&self, w: &mut Writer) {
        match self {
            UserStructure::Channel(v) => {
                for i in v {
                    w.u16(i.channel_number)
                        .u16(i.properties.0)
                        .u16(i.error_type);
                }
            }
            UserStructure::ExtChannel(v) => {
                for i in v {
                    w.u16(i.channel_number)
                        .u16(i.properties.0)
                        .u16(i.error_type)
                        .u16(i.ext_error_type)
                        .u32(i.ext_add_value);
                }
            }
            UserStructure::Qualified(v) => {
                for i in v {
                    w.u16(i.channel_number)
                        .u16(i.properties.0)
                        .u16(i.error_type)
                        .u16(i.ext_error_type)
                        .u32(i.ext_add_value)
                        .u32(i.qualifier);
                }
            }
            UserStructure::Other { data, .. } => {
                w.bytes(data);
            }
        }
    }
}

/// USI followed by the items (the tail of a DiagnosisData block and of an alarm notification).
impl Emit for UserStructure {
    fn buffer_len(&self) -> usize {
        2 + self.data_len()
    }
    fn emit(&self, w: &mut Writer) -> Result<()> {
        w.u16(self.usi());
        self.emit_items(w);
        Ok(())
    }
}

/// One DiagnosisData block.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct DiagnosisDataRepr {
    /// BlockVersionLow: 1 (with API; what current devices send) or 0 (without).
    pub version_low: u8,
    /// API (0 and not on the wire for version 1.0).
    pub api: u32,
    pub slot: u16,
    pub subslot: u16,
    /// ChannelNumber of the block (0x8000 = whole submodule).
    pub channel_number: u16,
    pub channel_properties: ChannelProperties,
    pub items: UserStructure,
}

impl DiagnosisDataRepr {
    /// Parse one block (the first in `buf`).
    pub fn parse(buf: &[u8]) -> Result<Self> {
        let b = BlockView::new_checked(buf)?;
        Self::parse_block(&b)
    }

    pub fn parse_block(b: &BlockView<'_>) -> Result<Self> {
        let h = b.header();
        if h.block_type != block_type::DIAGNOSIS_DATA {
            return Err(Error::Malformed("not a DiagnosisData block"));
        }
        if h.version_high != 1 || h.version_low > 1 {
            return Err(Error::Unsupported("DiagnosisData block version"));
        }
        let mut r = Reader::new(b.body());
        let api = if h.version_low == 1 { r.u32()? } else { 0 };
        let slot = r.u16()?;
        let subslot = r.u16()?;
        let channel_number = r.u16()?;
        let channel_properties = ChannelProperties(r.u16()?);
        let usi_value = r.u16()?;
        let items = UserStructure::parse(usi_value, r.rest());
        Ok(DiagnosisDataRepr {
            version_low: h.version_low,
            api,
            slot,
            subslot,
            channel_number,
            channel_properties,
            items,
        })
    }
}

impl BlockBody for DiagnosisDataRepr {
    fn block_type(&self) -> u16 {
        block_type::DIAGNOSIS_DATA
    }
    fn block_version(&self) -> (u8, u8) {
        (1, self.version_low)
    }
    fn body_len(&self) -> usize {
        usize::from(self.version_low == 1) * 4 + 8 + self.items.buffer_len()
    }
    fn emit_body(&self, w: &mut Writer) -> Result<()> {
        if self.version_low > 1 {
            return Err(Error::Unsupported("DiagnosisData block version"));
        }
        if self.version_low == 0 && self.api != 0 {
            return Err(Error::Malformed("DiagnosisData v1.0 cannot carry an API"));
        }
        if self.version_low == 1 {
            w.u32(self.api);
        }
        w.u16(self.slot)
            .u16(self.subslot)
            .u16(self.channel_number)
            .u16(self.channel_properties.0);
        self.items.emit(w)
    }
}

/// Parse the record data of a diagnosis read: zero or more DiagnosisData blocks.
pub fn parse_diagnosis_record(data: &[u8]) -> Result<Vec<DiagnosisDataRepr>> {
    let mut out = Vec::new();
    for b in blocks(data) {
        out.push(DiagnosisDataRepr::parse_block(&b?)?);
    }
    Ok(out)
}

// The record data of a diagnosis read emits as `[DiagnosisDataRepr]` (blocks back to back).

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The DiagnosisData block of icsnpp-read-implicit-diag-res-siemens.hex.
    const SIEMENS_DIAG: [u8; 32] = [
        0x00, 0x10, 0x00, 0x1c, 0x01, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80, 0x02, 0x80,
        0x00, 0x08, 0x00, 0x80, 0x02, 0x80, 0x00, 0x08, 0x00, 0x80, 0x01, 0x80, 0x00, 0x00, 0x00,
        0x00, 0x00,
    ];

    #[test]
    fn parses_siemens_port_diagnosis() {
        let v = parse_diagnosis_record(&SIEMENS_DIAG).unwrap();
        assert_eq!(v.len(), 1);
        let d = &v[0];
        assert_eq!((d.api, d.slot, d.subslot), (0, 0, 0x8002));
        assert_eq!(d.channel_number, CHANNEL_WHOLE_SUBMODULE);
        assert_eq!(d.channel_properties.specifier(), Specifier::Appears);
        let UserStructure::ExtChannel(items) = &d.items else {
            panic!("not ExtChannelDiagnosis")
        };
        assert_eq!(items[0].error_type, channel_error_type::REMOTE_MISMATCH);
        assert_eq!(items[0].ext_error_type, 0x8000);
        assert_eq!(d.to_bytes().unwrap(), SIEMENS_DIAG.to_vec());
    }

    #[test]
    fn channel_properties_bits() {
        // 0x2801 from the p-net diagnosis alarm: Input, Appears, Fault, 1 bit.
        let p = ChannelProperties(0x2801);
        assert_eq!(p.direction(), Direction::Input);
        assert_eq!(p.specifier(), Specifier::Appears);
        assert_eq!(p.severity(), Severity::Fault);
        assert_eq!(p.data_type(), 1);
        assert!(!p.accumulative());
        assert_eq!(
            ChannelProperties::new(
                1,
                false,
                Severity::Fault,
                Specifier::Appears,
                Direction::Input
            ),
            p
        );
        assert_eq!(p.with_specifier(Specifier::DisappearsOtherRemain).0, 0x3801);
    }

    #[test]
    fn odd_lengths_stay_opaque() {
        let u = UserStructure::parse(usi::CHANNEL_DIAGNOSIS, &[1, 2, 3, 4, 5]);
        assert_eq!(
            u,
            UserStructure::Other {
                usi: 0x8000,
                data: vec![1, 2, 3, 4, 5]
            }
        );
    }

    proptest! {
        #[test]
        fn parse_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..120)) {
            let _ = parse_diagnosis_record(&bytes);
            let mut b = bytes.clone();
            if b.len() >= 6 { b[0] = 0; b[1] = 0x10; b[4] = 1; b[5] %= 2; }
            let _ = parse_diagnosis_record(&b);
        }

        #[test]
        fn round_trip(v1 in any::<bool>(), api in any::<u32>(), slot in any::<u16>(), sub in any::<u16>(),
                      ch in any::<u16>(), props in any::<u16>(), kind in 0u8..4,
                      items in proptest::collection::vec(any::<(u16, u16, u16, u16, u32, u32)>(), 0..4),
                      raw in proptest::collection::vec(any::<u8>(), 0..20)) {
            let items = match kind {
                0 => UserStructure::Channel(items.iter().map(|i| ChannelDiagnosis { channel_number: i.0, properties: ChannelProperties(i.1), error_type: i.2 }).collect()),
                1 => UserStructure::ExtChannel(items.iter().map(|i| ExtChannelDiagnosis { channel_number: i.0, properties: ChannelProperties(i.1), error_type: i.2, ext_error_type: i.3, ext_add_value: i.4 }).collect()),
                2 => UserStructure::Qualified(items.iter().map(|i| QualifiedChannelDiagnosis { channel_number: i.0, properties: ChannelProperties(i.1), error_type: i.2, ext_error_type: i.3, ext_add_value: i.4, qualifier: i.5 }).collect()),
                _ => UserStructure::Other { usi: 0x1234, data: raw },
            };
            let d = DiagnosisDataRepr { version_low: v1 as u8, api: if v1 { api } else { 0 }, slot, subslot: sub,
                channel_number: ch, channel_properties: ChannelProperties(props), items };
            let b = d.to_bytes().unwrap();
            prop_assert_eq!(b.len(), d.buffer_len());
            prop_assert_eq!(parse_diagnosis_record(&b).unwrap(), vec![d]);
        }
    }
}

//! CMCTL's view of a device (controller role, IEC 61158-6-10): identity, slot/submodule layout
//! with IO data lengths and parameter records, and the IO data layout of the two IOCRs derived
//! from it. (Formerly pn-controller's `model`.)
//!
//! In short, the controller's view of a device: identity, slot/submodule layout with IO data lengths and
//! parameter records, and the IO data layout of the two IOCRs derived from it.
//!
//! Directions use PROFINET terms throughout this crate: **input** = data the device sends to
//! the controller, **output** = data the controller sends to the device. (The device's HTTP API
//! and its runtime configuration XML use the opposite words: its `InputLength` is our output
//! length; see pn-controller's `devconfig`.)

/// One parameter record written to a submodule during start-up (MultipleWrite).
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct ParamRecord {
    pub index: u16,
    pub data: Vec<u8>,
}

/// One expected submodule.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Submodule {
    pub subslot: u16,
    pub ident: u32,
    /// Bytes device -> controller.
    pub input_len: u16,
    /// Bytes controller -> device.
    pub output_len: u16,
    pub params: Vec<ParamRecord>,
}

/// One expected module (slot).
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Module {
    pub slot: u16,
    pub ident: u32,
    pub submodules: Vec<Submodule>,
}

/// Everything needed to connect to one device.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct DeviceModel {
    pub station_name: String,
    pub vendor_id: u16,
    pub device_id: u16,
    /// API of all submodules (0).
    pub api: u32,
    /// Modules sorted by slot, the DAP (slot 0) first.
    pub modules: Vec<Module>,
}

/// Where one submodule's data sits in a cyclic frame's C_SDU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct DataObject {
    pub slot: u16,
    pub subslot: u16,
    /// Offset of the data (the IOPS follows the data) within the C_SDU.
    pub frame_offset: u16,
    pub data_len: u16,
    /// Offset of this submodule's data within the linear area the API exposes.
    pub area_offset: u16,
}

/// Where the consumer status of one submodule sits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct IocsObject {
    pub slot: u16,
    pub subslot: u16,
    pub frame_offset: u16,
}

/// The layout of one IOCR's C_SDU.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct CrLayout {
    pub data: Vec<DataObject>,
    pub iocs: Vec<IocsObject>,
    /// C_SDU length used in the IOCR (>= 40).
    pub data_length: u16,
    /// Sum of the data lengths (the linear area length).
    pub area_len: u16,
}

/// The IO layout of an AR: the input CR (device -> controller) and the output CR.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct IoLayout {
    pub input: CrLayout,
    pub output: CrLayout,
}

impl Submodule {
    /// Has input data, or no data in either direction (NO_IO submodules travel in the input
    /// CR with an IOPS only, as an S7 does for DAP submodules).
    pub fn in_input_cr(&self) -> bool {
        self.input_len > 0 || self.output_len == 0
    }
    pub fn in_output_cr(&self) -> bool {
        self.output_len > 0
    }
}

impl DeviceModel {
    /// Sort modules and submodules and check the limits of one RT_CLASS_1 frame.
    pub fn validate(&mut self) -> Result<(), String> {
        self.modules.sort_by_key(|m| m.slot);
        for m in &mut self.modules {
            m.submodules.sort_by_key(|s| s.subslot);
        }
        if self.modules.first().map(|m| m.slot) != Some(0) {
            return Err("device model has no DAP in slot 0".into());
        }
        let l = self.layout();
        if l.input.data_length as usize > 1440 || l.output.data_length as usize > 1440 {
            return Err("IO data does not fit one RT_CLASS_1 frame (1440 bytes)".into());
        }
        Ok(())
    }

    /// Iterate (slot, submodule) pairs in slot/subslot order.
    pub fn submodules(&self) -> impl Iterator<Item = (&Module, &Submodule)> {
        self.modules
            .iter()
            .flat_map(|m| m.submodules.iter().map(move |s| (m, s)))
    }

    /// Compute the C_SDU layouts. Input CR: data + IOPS of every input (and NO_IO) submodule
    /// in slot order, then one IOCS per output submodule. Output CR: data + IOPS of every output
    /// submodule, then one IOCS per input-CR submodule. Same pattern as the S7-1500 Connect in
    /// fixture `mehner-connect-req-s7`.
    pub fn layout(&self) -> IoLayout {
        let mut input = CrLayout::default();
        let mut output = CrLayout::default();
        let (mut ioff, mut iarea) = (0u16, 0u16);
        let (mut ooff, mut oarea) = (0u16, 0u16);
        for (m, s) in self.submodules() {
            if s.in_input_cr() {
                input.data.push(DataObject {
                    slot: m.slot,
                    subslot: s.subslot,
                    frame_offset: ioff,
                    data_len: s.input_len,
                    area_offset: iarea,
                });
                ioff = ioff.saturating_add(s.input_len).saturating_add(1);
                iarea = iarea.saturating_add(s.input_len);
            }
            if s.in_output_cr() {
                output.data.push(DataObject {
                    slot: m.slot,
                    subslot: s.subslot,
                    frame_offset: ooff,
                    data_len: s.output_len,
                    area_offset: oarea,
                });
                ooff = ooff.saturating_add(s.output_len).saturating_add(1);
                oarea = oarea.saturating_add(s.output_len);
            }
        }
        for (m, s) in self.submodules() {
            if s.in_output_cr() {
                input.iocs.push(IocsObject {
                    slot: m.slot,
                    subslot: s.subslot,
                    frame_offset: ioff,
                });
                ioff = ioff.saturating_add(1);
            }
            if s.in_input_cr() {
                output.iocs.push(IocsObject {
                    slot: m.slot,
                    subslot: s.subslot,
                    frame_offset: ooff,
                });
                ooff = ooff.saturating_add(1);
            }
        }
        input.data_length = ioff.max(40);
        input.area_len = iarea;
        output.data_length = ooff.max(40);
        output.area_len = oarea;
        IoLayout { input, output }
    }
}

#[cfg(test)]
pub(crate) fn sample_model() -> DeviceModel {
    DeviceModel {
        station_name: "dev-1".into(),
        vendor_id: 0x0493,
        device_id: 0x0002,
        api: 0,
        modules: vec![
            Module {
                slot: 0,
                ident: 1,
                submodules: vec![
                    Submodule {
                        subslot: 1,
                        ident: 1,
                        input_len: 0,
                        output_len: 0,
                        params: vec![],
                    },
                    Submodule {
                        subslot: 0x8000,
                        ident: 2,
                        input_len: 0,
                        output_len: 0,
                        params: vec![],
                    },
                    Submodule {
                        subslot: 0x8001,
                        ident: 3,
                        input_len: 0,
                        output_len: 0,
                        params: vec![],
                    },
                ],
            },
            Module {
                slot: 1,
                ident: 0x32,
                submodules: vec![Submodule {
                    subslot: 1,
                    ident: 0x132,
                    input_len: 4,
                    output_len: 2,
                    params: vec![ParamRecord {
                        index: 123,
                        data: vec![1, 2, 3, 4],
                    }],
                }],
            },
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_offsets() {
        let mut m = sample_model();
        m.validate().unwrap();
        let l = m.layout();
        // Input CR: 3 DAP IOPS (offsets 0,1,2), slot 1 data 4 bytes at 3 + IOPS at 7, then the
        // IOCS of slot 1 (output submodule) at 8.
        let offs: Vec<_> = l.input.data.iter().map(|d| d.frame_offset).collect();
        assert_eq!(offs, vec![0, 1, 2, 3]);
        assert_eq!(l.input.iocs.len(), 1);
        assert_eq!(l.input.iocs[0].frame_offset, 8);
        assert_eq!(l.input.area_len, 4);
        assert_eq!(l.input.data_length, 40);
        // Output CR: slot 1 data 2 bytes + IOPS, then IOCS for 4 input-CR submodules.
        assert_eq!(l.output.data.len(), 1);
        assert_eq!(l.output.data[0].frame_offset, 0);
        let offs: Vec<_> = l.output.iocs.iter().map(|d| d.frame_offset).collect();
        assert_eq!(offs, vec![3, 4, 5, 6]);
        assert_eq!(l.output.area_len, 2);
    }

    #[test]
    fn validate_requires_dap_and_size() {
        let mut m = sample_model();
        m.modules.remove(0);
        assert!(m.validate().is_err());
        let mut m = sample_model();
        m.modules[1].submodules[0].input_len = 1500;
        assert!(m.validate().is_err());
    }
}

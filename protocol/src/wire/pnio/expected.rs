//! ExpectedSubmoduleBlockReq (0x0104): the configuration the controller expects.
//!
//! ```text
//! body: NumberOfAPIs u16,
//!   per entry: API u32, SlotNumber u16, ModuleIdentNumber u32, ModuleProperties u16,
//!     NumberOfSubmodules u16,
//!     per submodule: SubslotNumber u16, SubmoduleIdentNumber u32, SubmoduleProperties u16,
//!       DataDescription (u16), SubmoduleDataLength u16, LengthIOCS u8, LengthIOPS u8
//!       -- once (type input data with length 0 for "no IO", input, output), twice
//!          (input then output) for "input and output"
//! ```
//! SubmoduleProperties: Type bits 0-1 (0 no IO, 1 input, 2 output, 3 input+output),
//! SharedInput bit 2, ReduceInputSubmoduleDataLength bit 3, ReduceOutputSubmoduleDataLength
//! bit 4, DiscardIOXS bit 5. DataDescription: 1 input, 2 output.
//! Each "API" entry describes one module (slot); a module in another API or another slot is
//! another entry, possibly in another block.
//! Sources: Wireshark `packet-dcerpc-pn-io.c` `dissect_ExpectedSubmoduleBlockReq_block`,
//! masks `pn_io.submodule_properties.*`, values `pn_io.data_description`; p-net
//! `pf_get_exp_api_module`, `pf_get_exp_submodule`.

use crate::wire::field::{Reader, Writer};
use crate::wire::pnio::block::{BlockBody, BlockView};
use crate::wire::pnio::cm::util;
use crate::wire::{Error, Result};

pub const BLOCK_TYPE: u16 = 0x0104;

/// DataDescription values.
pub mod data_direction {
    pub const INPUT: u16 = 0x0001;
    pub const OUTPUT: u16 = 0x0002;
}

/// SubmoduleProperties.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct SubmoduleProperties(pub u16);

impl SubmoduleProperties {
    pub const TYPE_NO_IO: u16 = 0;
    pub const TYPE_INPUT: u16 = 1;
    pub const TYPE_OUTPUT: u16 = 2;
    pub const TYPE_INPUT_OUTPUT: u16 = 3;
    pub const SHARED_INPUT: u16 = 0x0004;
    pub const REDUCE_INPUT_SUBMODULE_DATA_LENGTH: u16 = 0x0008;
    pub const REDUCE_OUTPUT_SUBMODULE_DATA_LENGTH: u16 = 0x0010;
    pub const DISCARD_IOXS: u16 = 0x0020;

    pub fn io_type(self) -> u16 {
        self.0 & 3
    }
    pub fn shared_input(self) -> bool {
        self.0 & Self::SHARED_INPUT != 0
    }
    pub fn reduce_input_submodule_data_length(self) -> bool {
        self.0 & Self::REDUCE_INPUT_SUBMODULE_DATA_LENGTH != 0
    }
    pub fn reduce_output_submodule_data_length(self) -> bool {
        self.0 & Self::REDUCE_OUTPUT_SUBMODULE_DATA_LENGTH != 0
    }
    pub fn discard_ioxs(self) -> bool {
        self.0 & Self::DISCARD_IOXS != 0
    }
    /// Number of DataDescriptions that follow on the wire.
    pub fn description_count(self) -> usize {
        if self.io_type() == Self::TYPE_INPUT_OUTPUT {
            2
        } else {
            1
        }
    }
}

/// One DataDescription.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DataDescription {
    /// [`data_direction::INPUT`] or [`data_direction::OUTPUT`].
    pub direction: u16,
    pub data_length: u16,
    pub length_iocs: u8,
    pub length_iops: u8,
}

impl DataDescription {
    pub fn input(data_length: u16) -> Self {
        DataDescription {
            direction: data_direction::INPUT,
            data_length,
            length_iocs: 1,
            length_iops: 1,
        }
    }
    pub fn output(data_length: u16) -> Self {
        DataDescription {
            direction: data_direction::OUTPUT,
            data_length,
            length_iocs: 1,
            length_iops: 1,
        }
    }
}

/// An expected submodule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpectedSubmodule {
    pub subslot: u16,
    pub submodule_ident: u32,
    pub properties: SubmoduleProperties,
    /// One description (two for input+output), in wire order.
    pub descriptions: Vec<DataDescription>,
}

impl ExpectedSubmodule {
    /// The input description, if any (for "no IO" the single input description has length 0).
    pub fn input(&self) -> Option<&DataDescription> {
        self.descriptions
            .iter()
            .find(|d| d.direction == data_direction::INPUT)
    }
    pub fn output(&self) -> Option<&DataDescription> {
        self.descriptions
            .iter()
            .find(|d| d.direction == data_direction::OUTPUT)
    }
}

/// One API entry: a module in a slot with its expected submodules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpectedModule {
    pub api: u32,
    pub slot: u16,
    pub module_ident: u32,
    pub module_properties: u16,
    pub submodules: Vec<ExpectedSubmodule>,
}

/// ExpectedSubmoduleBlockReq.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpectedSubmoduleBlockReq {
    pub version: (u8, u8),
    pub modules: Vec<ExpectedModule>,
}

fn read_description(r: &mut Reader<'_>) -> Result<DataDescription> {
    Ok(DataDescription {
        direction: r.u16()?,
        data_length: r.u16()?,
        length_iocs: r.u8()?,
        length_iops: r.u8()?,
    })
}

impl ExpectedSubmoduleBlockReq {
    pub fn parse(block: &BlockView<'_>) -> Result<ExpectedSubmoduleBlockReq> {
        util::expect(block, BLOCK_TYPE)?;
        let mut r = Reader::new(block.body());
        let n = r.u16()?;
        let mut modules = Vec::new();
        for _ in 0..n {
            let api = r.u32()?;
            let slot = r.u16()?;
            let module_ident = r.u32()?;
            let module_properties = r.u16()?;
            let ns = r.u16()?;
            let mut submodules = Vec::new();
            for _ in 0..ns {
                let subslot = r.u16()?;
                let submodule_ident = r.u32()?;
                let properties = SubmoduleProperties(r.u16()?);
                let mut descriptions = Vec::with_capacity(2);
                for _ in 0..properties.description_count() {
                    descriptions.push(read_description(&mut r)?);
                }
                submodules.push(ExpectedSubmodule {
                    subslot,
                    submodule_ident,
                    properties,
                    descriptions,
                });
            }
            modules.push(ExpectedModule {
                api,
                slot,
                module_ident,
                module_properties,
                submodules,
            });
        }
        util::finish(&r)?;
        Ok(ExpectedSubmoduleBlockReq {
            version: util::version(block),
            modules,
        })
    }
}

impl BlockBody for ExpectedSubmoduleBlockReq {
    fn block_type(&self) -> u16 {
        BLOCK_TYPE
    }
    fn block_version(&self) -> (u8, u8) {
        self.version
    }
    fn body_len(&self) -> usize {
        let sub = |s: &ExpectedSubmodule| 8 + 6 * s.descriptions.len();
        2 + self
            .modules
            .iter()
            .map(|m| 14 + m.submodules.iter().map(sub).sum::<usize>())
            .sum::<usize>()
    }
    /// Errors when a submodule's description count does not match its type.
    fn emit_body(&self, w: &mut Writer) -> Result<()> {
        if self.modules.len() > 0xffff {
            return Err(Error::Malformed("too many expected modules"));
        }
        for m in &self.modules {
            if m.submodules.len() > 0xffff {
                return Err(Error::Malformed("too many expected submodules"));
            }
            for s in &m.submodules {
                if s.descriptions.len() != s.properties.description_count() {
                    return Err(Error::Malformed(
                        "DataDescription count does not match SubmoduleProperties type",
                    ));
                }
            }
        }
        w.u16(self.modules.len() as u16);
        for m in &self.modules {
            w.u32(m.api)
                .u16(m.slot)
                .u32(m.module_ident)
                .u16(m.module_properties)
                .u16(m.submodules.len() as u16);
            for s in &m.submodules {
                w.u16(s.subslot).u32(s.submodule_ident).u16(s.properties.0);
                for d in &s.descriptions {
                    w.u16(d.direction)
                        .u16(d.data_length)
                        .u8(d.length_iocs)
                        .u8(d.length_iops);
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Emit;
    use proptest::prelude::*;

    fn arb_sub() -> impl Strategy<Value = ExpectedSubmodule> {
        (
            any::<u16>(),
            any::<u32>(),
            any::<u16>(),
            any::<u16>(),
            any::<u16>(),
        )
            .prop_map(|(ss, id, p, a, b)| {
                let properties = SubmoduleProperties(p);
                let descriptions = match properties.io_type() {
                    SubmoduleProperties::TYPE_NO_IO => vec![DataDescription::input(0)],
                    SubmoduleProperties::TYPE_INPUT => vec![DataDescription::input(a)],
                    SubmoduleProperties::TYPE_OUTPUT => vec![DataDescription::output(a)],
                    _ => vec![DataDescription::input(a), DataDescription::output(b)],
                };
                ExpectedSubmodule {
                    subslot: ss,
                    submodule_ident: id,
                    properties,
                    descriptions,
                }
            })
    }

    fn arb_module() -> impl Strategy<Value = ExpectedModule> {
        (
            any::<u32>(),
            any::<u16>(),
            any::<u32>(),
            proptest::collection::vec(arb_sub(), 0..4),
        )
            .prop_map(|(api, slot, module_ident, submodules)| ExpectedModule {
                api,
                slot,
                module_ident,
                module_properties: 0,
                submodules,
            })
    }

    proptest! {
        #[test]
        fn parse_never_panics(data in proptest::collection::vec(any::<u8>(), 0..150)) {
            if let Ok(v) = BlockView::new_checked(&data) {
                let _ = ExpectedSubmoduleBlockReq::parse(&v);
            }
        }

        #[test]
        fn round_trip(modules in proptest::collection::vec(arb_module(), 0..4)) {
            let b0 = ExpectedSubmoduleBlockReq { version: (1, 0), modules };
            let mut w = Writer::new();
            b0.emit(&mut w).unwrap();
            let b = w.into_inner();
            prop_assert_eq!(ExpectedSubmoduleBlockReq::parse(&BlockView::new_checked(&b).unwrap()).unwrap(), b0);
        }
    }

    #[test]
    fn description_count_checked() {
        let bad = ExpectedSubmoduleBlockReq {
            version: (1, 0),
            modules: vec![ExpectedModule {
                api: 0,
                slot: 1,
                module_ident: 0x30,
                module_properties: 0,
                submodules: vec![ExpectedSubmodule {
                    subslot: 1,
                    submodule_ident: 1,
                    properties: SubmoduleProperties(SubmoduleProperties::TYPE_INPUT_OUTPUT),
                    descriptions: vec![DataDescription::input(1)],
                }],
            }],
        };
        assert!(bad.emit(&mut Writer::new()).is_err());
    }
}

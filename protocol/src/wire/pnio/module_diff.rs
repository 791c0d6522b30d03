//! ModuleDiffBlock (0x8104): where the real configuration differs from the expected one.
//!
//! ```text
//! body: NumberOfAPIs u16,
//!   per API: API u32, NumberOfModules u16,
//!     per module: SlotNumber u16, ModuleIdentNumber u32, ModuleState u16,
//!       NumberOfSubmodules u16,
//!       per submodule: SubslotNumber u16, SubmoduleIdentNumber u32, SubmoduleState u16
//! ```
//! ModuleState: 0 no module, 1 wrong module, 2 proper module, 3 substitute.
//! SubmoduleState (FormatIndicator = 1): AddInfo bits 0-2, Advice (formerly QualifiedInfo)
//! bit 3, MaintenanceRequired bit 4, MaintenanceDemanded bit 5, Fault (DiagInfo) bit 6,
//! ARInfo bits 7-10 (0 own, 1 ApplicationReadyPending, 2 superordinated locked, 3 locked by
//! IO controller, 4 locked by IO supervisor), IdentInfo bits 11-14 (0 OK, 1 substitute,
//! 2 wrong, 3 no submodule), FormatIndicator bit 15. With FormatIndicator = 0 bits 0-14 are
//! the old "Detail" field.
//! Sources: Wireshark `packet-dcerpc-pn-io.c` `dissect_ModuleDiffBlock_block`, masks
//! `pn_io.submodule_state.*`, values `pn_io.module_state`, `pn_io.submodule_state.ar_info`,
//! `pn_io.submodule_state.ident_info`; p-net `pf_block_writer.c` `pf_put_submodule_diff`
//! (same bit positions). Note: p-net writes a u32 zero instead of NumberOfSubmodules for a
//! "no module" entry; we follow Wireshark (always a u16 count).

use crate::wire::field::{Reader, Writer};
use crate::wire::pnio::block::{BlockBody, BlockView};
use crate::wire::pnio::cm::util;
use crate::wire::{Error, Result};

pub const BLOCK_TYPE: u16 = 0x8104;

/// ModuleState values.
pub mod module_state {
    pub const NO_MODULE: u16 = 0;
    pub const WRONG_MODULE: u16 = 1;
    pub const PROPER_MODULE: u16 = 2;
    pub const SUBSTITUTE: u16 = 3;
}

/// ARInfo values of a SubmoduleState.
pub mod ar_info {
    pub const OWN: u8 = 0;
    pub const APPLICATION_READY_PENDING: u8 = 1;
    pub const SUPERORDINATED_LOCKED: u8 = 2;
    pub const LOCKED_BY_IO_CONTROLLER: u8 = 3;
    pub const LOCKED_BY_IO_SUPERVISOR: u8 = 4;
}

/// IdentInfo values of a SubmoduleState.
pub mod ident_info {
    pub const OK: u8 = 0;
    pub const SUBSTITUTE: u8 = 1;
    pub const WRONG: u8 = 2;
    pub const NO_SUBMODULE: u8 = 3;
}

/// SubmoduleState (u16 bit field).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct SubmoduleState(pub u16);

impl SubmoduleState {
    pub const FORMAT_INDICATOR: u16 = 0x8000;
    pub const ADVICE: u16 = 0x0008;
    pub const MAINTENANCE_REQUIRED: u16 = 0x0010;
    pub const MAINTENANCE_DEMANDED: u16 = 0x0020;
    pub const FAULT: u16 = 0x0040;

    /// A new-format state with the given ARInfo and IdentInfo, all other bits 0.
    pub fn new(ar_info: u8, ident_info: u8) -> SubmoduleState {
        SubmoduleState(
            Self::FORMAT_INDICATOR
                | (u16::from(ar_info & 0x0f) << 7)
                | (u16::from(ident_info & 0x0f) << 11),
        )
    }
    pub fn format_indicator(self) -> bool {
        self.0 & Self::FORMAT_INDICATOR != 0
    }
    pub fn add_info(self) -> u8 {
        (self.0 & 0x7) as u8
    }
    pub fn advice(self) -> bool {
        self.0 & Self::ADVICE != 0
    }
    pub fn maintenance_required(self) -> bool {
        self.0 & Self::MAINTENANCE_REQUIRED != 0
    }
    pub fn maintenance_demanded(self) -> bool {
        self.0 & Self::MAINTENANCE_DEMANDED != 0
    }
    pub fn fault(self) -> bool {
        self.0 & Self::FAULT != 0
    }
    pub fn ar_info(self) -> u8 {
        ((self.0 >> 7) & 0x0f) as u8
    }
    pub fn ident_info(self) -> u8 {
        ((self.0 >> 11) & 0x0f) as u8
    }
    /// With the fault (diagnosis present) bit set or cleared.
    pub fn with_fault(self, on: bool) -> SubmoduleState {
        if on {
            SubmoduleState(self.0 | Self::FAULT)
        } else {
            SubmoduleState(self.0 & !Self::FAULT)
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DiffSubmodule {
    pub subslot: u16,
    pub submodule_ident: u32,
    pub state: SubmoduleState,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiffModule {
    pub slot: u16,
    pub module_ident: u32,
    pub module_state: u16,
    pub submodules: Vec<DiffSubmodule>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiffApi {
    pub api: u32,
    pub modules: Vec<DiffModule>,
}

/// ModuleDiffBlock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModuleDiffBlock {
    pub version: (u8, u8),
    pub apis: Vec<DiffApi>,
}

impl ModuleDiffBlock {
    pub fn parse(block: &BlockView<'_>) -> Result<ModuleDiffBlock> {
        util::expect(block, BLOCK_TYPE)?;
        let mut r = Reader::new(block.body());
        let mut apis = Vec::new();
        for _ in 0..r.u16()? {
            let api = r.u32()?;
            let mut modules = Vec::new();
            for _ in 0..r.u16()? {
                let slot = r.u16()?;
                let module_ident = r.u32()?;
                let module_state = r.u16()?;
                let mut submodules = Vec::new();
                for _ in 0..r.u16()? {
                    submodules.push(DiffSubmodule {
                        subslot: r.u16()?,
                        submodule_ident: r.u32()?,
                        state: SubmoduleState(r.u16()?),
                    });
                }
                modules.push(DiffModule {
                    slot,
                    module_ident,
                    module_state,
                    submodules,
                });
            }
            apis.push(DiffApi { api, modules });
        }
        util::finish(&r)?;
        Ok(ModuleDiffBlock {
            version: util::version(block),
            apis,
        })
    }
}

impl BlockBody for ModuleDiffBlock {
    fn block_type(&self) -> u16 {
        BLOCK_TYPE
    }
    fn block_version(&self) -> (u8, u8) {
        self.version
    }
    fn body_len(&self) -> usize {
        let module = |m: &DiffModule| 10 + 8 * m.submodules.len();
        2 + self
            .apis
            .iter()
            .map(|a| 6 + a.modules.iter().map(module).sum::<usize>())
            .sum::<usize>()
    }
    fn emit_body(&self, w: &mut Writer) -> Result<()> {
        let too_many = self.apis.len() > 0xffff
            || self.apis.iter().any(|a| {
                a.modules.len() > 0xffff || a.modules.iter().any(|m| m.submodules.len() > 0xffff)
            });
        if too_many {
            return Err(Error::Malformed("too many ModuleDiffBlock entries"));
        }
        w.u16(self.apis.len() as u16);
        for a in &self.apis {
            w.u32(a.api).u16(a.modules.len() as u16);
            for m in &a.modules {
                w.u16(m.slot)
                    .u32(m.module_ident)
                    .u16(m.module_state)
                    .u16(m.submodules.len() as u16);
                for s in &m.submodules {
                    w.u16(s.subslot).u32(s.submodule_ident).u16(s.state.0);
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

    #[test]
    fn state_bits() {
        let s = SubmoduleState::new(ar_info::APPLICATION_READY_PENDING, ident_info::OK);
        assert_eq!(s.0, 0x8080);
        assert_eq!(
            SubmoduleState::new(ar_info::OWN, ident_info::WRONG).0,
            0x9000
        );
        assert_eq!(SubmoduleState::new(0, ident_info::NO_SUBMODULE).0, 0x9800);
        let s = SubmoduleState(0x8080).with_fault(true);
        assert!(s.fault() && s.format_indicator());
        assert_eq!((s.ar_info(), s.ident_info()), (1, 0));
    }

    fn arb_module() -> impl Strategy<Value = DiffModule> {
        (
            any::<u16>(),
            any::<u32>(),
            0u16..4,
            proptest::collection::vec((any::<u16>(), any::<u32>(), any::<u16>()), 0..4),
        )
            .prop_map(|(slot, module_ident, module_state, subs)| DiffModule {
                slot,
                module_ident,
                module_state,
                submodules: subs
                    .into_iter()
                    .map(|(subslot, submodule_ident, st)| DiffSubmodule {
                        subslot,
                        submodule_ident,
                        state: SubmoduleState(st),
                    })
                    .collect(),
            })
    }

    proptest! {
        #[test]
        fn parse_never_panics(data in proptest::collection::vec(any::<u8>(), 0..150)) {
            if let Ok(v) = BlockView::new_checked(&data) {
                let _ = ModuleDiffBlock::parse(&v);
            }
        }

        #[test]
        fn round_trip(apis in proptest::collection::vec((any::<u32>(), proptest::collection::vec(arb_module(), 0..3)), 0..3)) {
            let b0 = ModuleDiffBlock { version: (1, 0), apis: apis.into_iter().map(|(api, modules)| DiffApi { api, modules }).collect() };
            let mut w = Writer::new();
            b0.emit(&mut w).unwrap();
            let b = w.into_inner();
            prop_assert_eq!(ModuleDiffBlock::parse(&BlockView::new_checked(&b).unwrap()).unwrap(), b0);
        }
    }
}

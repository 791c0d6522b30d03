//! RealIdentificationData (block 0x0013) and ExpectedIdentificationData (block 0x0012): the
//! API / slot / module ident / subslot / submodule ident tree a device reports for records
//! 0x8000/0x8001 (subslot), 0xC000/0xC001 (slot), 0xE000/0xE001 (AR) and 0xF000 (API).
//!
//! ```text
//! BlockVersionLow 1: NumberOfAPIs u16, { API u32, NumberOfSlots u16,
//!                      { SlotNumber u16, ModuleIdentNumber u32, NumberOfSubslots u16,
//!                        { SubslotNumber u16, SubmoduleIdentNumber u32 } } }
//! BlockVersionLow 0: the same without NumberOfAPIs and API (one implicit API 0)
//! ```
//!
//! The I&M0FilterData blocks (0x0030..0x0032, see `im.rs`) use the same tree with
//! NumberOfModules / NumberOfSubmodules as the counters, always with the API level.
//!
//! Source: Wireshark `packet-dcerpc-pn-io.c` `dissect_IdentificationData_block` (used for
//! both 0x0012 and 0x0013), `dissect_IandM0FilterData_block`; p-net
//! `src/device/pf_block_writer.c` `pf_put_real_ident_data`.
//!
//! Fuzz entry point: [`IdentificationDataRepr::parse`].

use crate::wire::field::{Reader, Writer};
use crate::wire::pnio::block::{BlockBody, BlockView};
use crate::wire::{Emit, Error, Result};

pub mod block_type {
    pub const EXPECTED_IDENTIFICATION_DATA: u16 = 0x0012;
    pub const REAL_IDENTIFICATION_DATA: u16 = 0x0013;
}

/// One submodule: its subslot and ident number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SubmoduleIdent {
    pub subslot: u16,
    pub submodule_ident: u32,
}

/// One module: slot, ident number and its submodules.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ModuleIdent {
    pub slot: u16,
    pub module_ident: u32,
    pub submodules: Vec<SubmoduleIdent>,
}

/// One API with its modules.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ApiIdent {
    pub api: u32,
    pub modules: Vec<ModuleIdent>,
}

fn count_u16(n: usize, what: &'static str) -> Result<u16> {
    u16::try_from(n).map_err(|_| Error::Malformed(what))
}

/// Parse the module list of one API (count first). Every element consumes at least six
/// bytes, so the vectors grow at most with the input.
pub(crate) fn parse_modules(r: &mut Reader<'_>) -> Result<Vec<ModuleIdent>> {
    let n = r.u16()?;
    let mut modules = Vec::new();
    for _ in 0..n {
        let slot = r.u16()?;
        let module_ident = r.u32()?;
        let ns = r.u16()?;
        let mut submodules = Vec::new();
        for _ in 0..ns {
            submodules.push(SubmoduleIdent {
                subslot: r.u16()?,
                submodule_ident: r.u32()?,
            });
        }
        modules.push(ModuleIdent {
            slot,
            module_ident,
            submodules,
        });
    }
    Ok(modules)
}

/// A list with its u16 count in front: the shape of every level of the identification tree.
/// `too_many` is the error for a list the count cannot hold.
pub(crate) struct Counted<'a, T> {
    pub items: &'a [T],
    pub too_many: &'static str,
}

impl<T: Emit> Emit for Counted<'_, T> {
    fn buffer_len(&self) -> usize {
        2 + self.items.buffer_len()
    }
    fn emit(&self, w: &mut Writer) -> Result<()> {
        w.u16(count_u16(self.items.len(), self.too_many)?);
        self.items.emit(w)
    }
}

impl Emit for SubmoduleIdent {
    fn buffer_len(&self) -> usize {
        6
    }
    fn emit(&self, w: &mut Writer) -> Result<()> {
        w.u16(self.subslot).u32(self.submodule_ident);
        Ok(())
    }
}

impl ModuleIdent {
    fn submodule_list(&self) -> Counted<'_, SubmoduleIdent> {
        Counted {
            items: &self.submodules,
            too_many: "more than 65535 submodules",
        }
    }
}

impl Emit for ModuleIdent {
    fn buffer_len(&self) -> usize {
        6 + self.submodule_list().buffer_len()
    }
    fn emit(&self, w: &mut Writer) -> Result<()> {
        w.u16(self.slot).u32(self.module_ident);
        self.submodule_list().emit(w)
    }
}

/// The module list of one API (NumberOfModules / NumberOfSlots first).
pub(crate) fn module_list(modules: &[ModuleIdent]) -> Counted<'_, ModuleIdent> {
    Counted {
        items: modules,
        too_many: "more than 65535 modules",
    }
}

/// The API list (NumberOfAPIs first).
pub(crate) fn api_list(apis: &[ApiIdent]) -> Counted<'_, ApiIdent> {
    Counted {
        items: apis,
        too_many: "more than 65535 APIs",
    }
}

impl Emit for ApiIdent {
    fn buffer_len(&self) -> usize {
        4 + module_list(&self.modules).buffer_len()
    }
    fn emit(&self, w: &mut Writer) -> Result<()> {
        w.u32(self.api);
        module_list(&self.modules).emit(w)
    }
}

/// Parse NumberOfAPIs + APIs (the shape of I&M0FilterData and of identification v1.1).
pub(crate) fn parse_apis(r: &mut Reader<'_>) -> Result<Vec<ApiIdent>> {
    let n = r.u16()?;
    let mut apis = Vec::new();
    for _ in 0..n {
        let api = r.u32()?;
        let modules = parse_modules(r)?;
        apis.push(ApiIdent { api, modules });
    }
    Ok(apis)
}

/// The part of an identification tree a record of the given scope covers: `api` only
/// (0xF000), `api` + `slot` (0xC001), or `api` + `slot` + `subslot` (0x8001). Modules and
/// APIs left without a match are dropped; with `api == None` the whole tree is returned.
pub fn select(
    apis: &[ApiIdent],
    api: Option<u32>,
    slot: Option<u16>,
    subslot: Option<u16>,
) -> Vec<ApiIdent> {
    let Some(api) = api else {
        return apis.to_vec();
    };
    apis.iter()
        .filter(|a| a.api == api)
        .map(|a| ApiIdent {
            api: a.api,
            modules: a
                .modules
                .iter()
                .filter(|m| slot.map_or(true, |s| m.slot == s))
                .filter_map(|m| {
                    let submodules: Vec<SubmoduleIdent> = m
                        .submodules
                        .iter()
                        .filter(|s| subslot.map_or(true, |ss| s.subslot == ss))
                        .copied()
                        .collect();
                    (subslot.is_none() || !submodules.is_empty()).then_some(ModuleIdent {
                        slot: m.slot,
                        module_ident: m.module_ident,
                        submodules,
                    })
                })
                .collect(),
        })
        .filter(|a| slot.is_none() || !a.modules.is_empty())
        .collect()
}

/// RealIdentificationData or ExpectedIdentificationData.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdentificationDataRepr {
    /// 0x0012 (expected) or 0x0013 (real).
    pub block_type: u16,
    /// 1 (with APIs, what current devices send) or 0 (API 0 only).
    pub version_low: u8,
    pub apis: Vec<ApiIdent>,
}

impl IdentificationDataRepr {
    /// RealIdentificationData, BlockVersionLow 1.
    pub fn real(apis: Vec<ApiIdent>) -> Self {
        IdentificationDataRepr {
            block_type: block_type::REAL_IDENTIFICATION_DATA,
            version_low: 1,
            apis,
        }
    }

    /// Parse one block (the first in `buf`; bytes after it are ignored). The body must be
    /// consumed exactly.
    pub fn parse(buf: &[u8]) -> Result<Self> {
        let b = BlockView::new_checked(buf)?;
        let h = b.header();
        if h.block_type != block_type::REAL_IDENTIFICATION_DATA
            && h.block_type != block_type::EXPECTED_IDENTIFICATION_DATA
        {
            return Err(Error::Malformed("not an IdentificationData block"));
        }
        if h.version_high != 1 || h.version_low > 1 {
            return Err(Error::Unsupported("IdentificationData block version"));
        }
        let mut r = Reader::new(b.body());
        let apis = if h.version_low == 1 {
            parse_apis(&mut r)?
        } else {
            vec![ApiIdent {
                api: 0,
                modules: parse_modules(&mut r)?,
            }]
        };
        if !r.is_empty() {
            return Err(Error::Malformed("bytes after IdentificationData"));
        }
        Ok(IdentificationDataRepr {
            block_type: h.block_type,
            version_low: h.version_low,
            apis,
        })
    }
}

impl BlockBody for IdentificationDataRepr {
    fn block_type(&self) -> u16 {
        self.block_type
    }
    fn block_version(&self) -> (u8, u8) {
        (1, self.version_low)
    }
    fn body_len(&self) -> usize {
        match (self.version_low, self.apis.first()) {
            (0, Some(a)) => module_list(&a.modules).buffer_len(),
            (0, None) => 2,
            _ => api_list(&self.apis).buffer_len(),
        }
    }
    fn emit_body(&self, w: &mut Writer) -> Result<()> {
        if self.version_low == 0 && (self.apis.len() != 1 || self.apis[0].api != 0) {
            return Err(Error::Malformed(
                "IdentificationData v1.0 holds exactly API 0",
            ));
        }
        if self.version_low == 0 {
            module_list(&self.apis[0].modules).emit(w)
        } else {
            api_list(&self.apis).emit(w)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sample() -> Vec<ApiIdent> {
        vec![ApiIdent {
            api: 0,
            modules: vec![
                ModuleIdent {
                    slot: 0,
                    module_ident: 1,
                    submodules: vec![
                        SubmoduleIdent {
                            subslot: 1,
                            submodule_ident: 1,
                        },
                        SubmoduleIdent {
                            subslot: 0x8000,
                            submodule_ident: 2,
                        },
                    ],
                },
                ModuleIdent {
                    slot: 1,
                    module_ident: 0x30,
                    submodules: vec![SubmoduleIdent {
                        subslot: 1,
                        submodule_ident: 0x130,
                    }],
                },
            ],
        }]
    }

    #[test]
    fn real_ident_layout() {
        let r = IdentificationDataRepr::real(sample());
        let b = r.to_bytes().unwrap();
        assert_eq!(b.len(), r.buffer_len());
        // header, NumberOfAPIs 1, API 0, NumberOfSlots 2, slot 0 ident 1, 2 subslots
        assert_eq!(&b[..6], &[0x00, 0x13, 0x00, (b.len() - 4) as u8, 1, 1]);
        assert_eq!(&b[6..16], &[0, 1, 0, 0, 0, 0, 0, 2, 0, 0]);
        assert_eq!(IdentificationDataRepr::parse(&b).unwrap(), r);
        let mut v0 = r.clone();
        v0.version_low = 0;
        let b0 = v0.to_bytes().unwrap();
        assert_eq!(b0.len(), v0.buffer_len());
        assert_eq!(IdentificationDataRepr::parse(&b0).unwrap(), v0);
    }

    #[test]
    fn select_by_scope() {
        let t = sample();
        assert_eq!(select(&t, None, None, None), t);
        assert_eq!(select(&t, Some(0), None, None), t);
        assert!(select(&t, Some(1), None, None).is_empty());
        let s = select(&t, Some(0), Some(1), None);
        assert_eq!(s[0].modules.len(), 1);
        assert_eq!(s[0].modules[0].module_ident, 0x30);
        let s = select(&t, Some(0), Some(0), Some(0x8000));
        assert_eq!(
            s[0].modules[0].submodules,
            vec![SubmoduleIdent {
                subslot: 0x8000,
                submodule_ident: 2
            }]
        );
        assert!(select(&t, Some(0), Some(0), Some(9)).is_empty());
        assert!(select(&t, Some(0), Some(7), None).is_empty());
    }

    #[test]
    fn huge_counts_do_not_allocate() {
        let b = [0x00, 0x13, 0x00, 0x04, 1, 1, 0xFF, 0xFF];
        assert_eq!(IdentificationDataRepr::parse(&b), Err(Error::Truncated));
    }

    proptest! {
        #[test]
        fn parse_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = IdentificationDataRepr::parse(&bytes);
            let mut b = bytes.clone();
            if b.len() >= 6 { b[0] = 0; b[1] = 0x13; b[4] = 1; b[5] = 1; }
            let _ = IdentificationDataRepr::parse(&b);
        }

        #[test]
        fn round_trip(apis in proptest::collection::vec(
            (any::<u32>(), proptest::collection::vec((any::<u16>(), any::<u32>(),
                proptest::collection::vec((any::<u16>(), any::<u32>()), 0..3)), 0..3)), 0..3)) {
            let apis: Vec<ApiIdent> = apis.into_iter().map(|(api, ms)| ApiIdent { api, modules: ms.into_iter().map(|(slot, module_ident, ss)| ModuleIdent {
                slot, module_ident, submodules: ss.into_iter().map(|(subslot, submodule_ident)| SubmoduleIdent { subslot, submodule_ident }).collect() }).collect() }).collect();
            let r = IdentificationDataRepr::real(apis);
            let b = r.to_bytes().unwrap();
            prop_assert_eq!(b.len(), r.buffer_len());
            prop_assert_eq!(IdentificationDataRepr::parse(&b).unwrap(), r);
        }
    }
}

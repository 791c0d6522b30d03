//! [`FaultBody`], the body of a Fault or Reject packet, and the [`reject_status`] codes.

use super::{Drep, Ndr};
use crate::wire::{Emit, Result, Writer};

/// Body of a Fault or Reject packet: one status code (u32 in DREP byte order).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FaultBody {
    pub status: u32,
}

/// Common reject / fault status codes (DCE 1.1 C706 appendix E).
pub mod reject_status {
    /// `nca_s_op_rng_error`: opnum out of range.
    pub const NCA_OP_RNG_ERROR: u32 = 0x1C01_0002;
    /// `nca_s_unk_if`: unknown interface.
    pub const NCA_UNK_IF: u32 = 0x1C01_0003;
    /// `nca_s_wrong_boot_time`.
    pub const NCA_WRONG_BOOT_TIME: u32 = 0x1C01_0006;
    /// `nca_s_proto_error`.
    pub const NCA_PROTO_ERROR: u32 = 0x1C01_000B;
    /// `nca_s_fault_unspec`.
    pub const NCA_FAULT_UNSPEC: u32 = 0x1C00_0012;
    /// `nca_s_fault_remote_no_memory`.
    pub const NCA_FAULT_REMOTE_NO_MEMORY: u32 = 0x1C00_0023;
}

impl FaultBody {
    pub const LEN: usize = 4;
    pub fn parse(body: &[u8], drep: Drep) -> Result<FaultBody> {
        Ok(FaultBody {
            status: drep.endian().read_u32(body, 0)?,
        })
    }
}

impl Emit for Ndr<'_, FaultBody> {
    fn buffer_len(&self) -> usize {
        FaultBody::LEN
    }
    fn emit(&self, w: &mut Writer) -> Result<()> {
        self.drep.endian().put_u32(&mut w.buf, self.body.status);
        Ok(())
    }
}

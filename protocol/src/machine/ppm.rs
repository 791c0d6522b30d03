//! PPM (provider protocol machine, IEC 61158-6-10), device side: the frame template of one
//! input CR and its per-cycle fill.
//!
//! The device's provider does not re-emit its frame each cycle (as [`super::cyclic::Provider`]
//! does): CMDEV builds the complete frame once per AR ([`super::cmdev::plan`]) with every
//! submodule's IOPS/IOCS fixed at Connect, and each cycle only copies the data items in and
//! stamps the APDU status. The schedule (one frame per SendClockFactor × ReductionRatio ×
//! 31.25 µs, missed slots skipped and reflected in the CycleCounter) is the shell's: the
//! daemon's real-time thread and pn-farm's I/O loop.

use crate::wire::rt::ApduStatus;

/// One data item of a cyclic frame: `len` bytes at `frame_off` of the frame and at `area_off`
/// of the process-image area (offsets checked when the item is built; the copies still clip
/// instead of panicking).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CopyItem {
    pub frame_off: usize,
    pub area_off: usize,
    pub len: usize,
}

/// What the provider sends for one input CR.
#[derive(Debug, Clone)]
pub struct ProviderTemplate {
    /// Complete Ethernet frame template (header, FrameID, C_SDU with IOPS/IOCS set, APDU
    /// status), already padded.
    pub frame: Vec<u8>,
    /// Offset of the APDU status in `frame`.
    pub status_at: usize,
    /// Q-area data of submodules that match the expectation (`frame_off` absolute).
    pub items: Vec<CopyItem>,
    /// SendClockFactor × ReductionRatio × 31.25 µs.
    pub period_ns: u64,
    /// Increment of the APDU CycleCounter per period (SendClockFactor × ReductionRatio).
    pub counter_step: u16,
    /// FrameID (for diagnostics).
    pub frame_id: u16,
}

impl ProviderTemplate {
    /// Copy the Q area's data items into `frame` (a copy of [`ProviderTemplate::frame`]). The
    /// one per-cycle fill of a provider frame: the daemon's real-time thread and pn-farm's I/O
    /// loop both call it. Does not allocate.
    pub fn copy_items(&self, frame: &mut [u8], q: &[u8]) {
        for it in &self.items {
            if let (Some(dst), Some(src)) = (
                frame.get_mut(it.frame_off..it.frame_off + it.len),
                q.get(it.area_off..it.area_off + it.len),
            ) {
                dst.copy_from_slice(src);
            }
        }
    }

    /// Write the APDU status `st` into `frame` at [`ProviderTemplate::status_at`].
    pub fn stamp(&self, frame: &mut [u8], st: ApduStatus) {
        if let Some(b) = frame.get_mut(self.status_at..) {
            let _ = st.emit(b);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::rt::DataStatus;

    #[test]
    fn fill_copies_items_and_stamps_the_status() {
        let t = ProviderTemplate {
            frame: vec![0; 10],
            status_at: 6,
            items: vec![CopyItem {
                frame_off: 2,
                area_off: 1,
                len: 3,
            }],
            period_ns: 1_000_000,
            counter_step: 32,
            frame_id: 0xC000,
        };
        let mut f = t.frame.clone();
        t.copy_items(&mut f, &[9, 1, 2, 3]);
        let st = ApduStatus {
            cycle_counter: 0x0102,
            data_status: DataStatus::RUNNING,
            transfer_status: 0,
        };
        t.stamp(&mut f, st);
        assert_eq!(f, [0, 0, 1, 2, 3, 0, 1, 2, DataStatus::RUNNING.0, 0]);
        // An area shorter than an item leaves the frame's bytes as they were.
        t.copy_items(&mut f, &[7]);
        assert_eq!(&f[2..5], &[1, 2, 3]);
    }
}

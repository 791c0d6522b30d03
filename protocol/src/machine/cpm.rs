//! CPM (consumer protocol machine, IEC 61158-6-10), device side: the layout of the
//! controller's output CR (where each submodule's data and IOxS sit in its C_SDU) and what one
//! received frame changes.
//!
//! CMDEV builds a [`ConsumerCr`] at Connect ([`super::cmdev::plan`]); the shell (the daemon's
//! receive thread, pn-farm's I/O loop) passes each frame to [`ConsumerCr::consume`] and stores
//! what it returns: the new I-area content and the IOPS/IOCS the application sees. The frame
//! rule is [`super::cyclic::check_frame`] and the CycleCounter rule
//! [`super::cyclic::cycle_advanced`], the ones the sans-IO [`super::cyclic::Consumer`] (the
//! controller's) decides with. The data-hold timer is [`super::data_hold::DataHold`], run by
//! the shell on its cycle.
//!
//! Nothing on the per-frame path allocates: the I area is copied into the CR's own scratch.

use crate::wire::ethernet::MacAddr;
use crate::wire::rt::{ApduStatus, CyclicFrame, FrameId, Ioxs};

use super::cyclic::{check_frame, cycle_advanced, CrRule, FrameCheck};
use super::ppm::CopyItem;

/// The device's consumer of one output CR: its layout and its running state.
#[derive(Debug, Clone)]
pub struct ConsumerCr {
    pub frame_id: u16,
    /// The controller's MAC (frames from other sources are dropped).
    pub src: [u8; 6],
    /// C_SDU length (IOCR DataLength).
    pub c_sdu_len: usize,
    /// I-area data: `frame_off` relative to the start of the C_SDU.
    pub items: Vec<CopyItem>,
    /// C_SDU offsets of the controller's IOPS for data it sends.
    pub iops_offs: Vec<usize>,
    /// C_SDU offsets of the controller's IOCS for the device's data.
    pub iocs_offs: Vec<usize>,
    /// Copy of the whole I area (pre-filled with the safe input value: bytes of submodules
    /// without data keep it).
    pub scratch: Vec<u8>,
    /// Data-hold time (DataHoldFactor × period) in ns.
    pub dht_ns: u64,
    /// Last CycleCounter taken (duplicate detection).
    pub last_counter: Option<u16>,
}

/// New data from one frame: what the shell stores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NewData<'a> {
    /// The whole I area (the CR's scratch with this frame's items copied in).
    pub area: &'a [u8],
    /// GOOD when the controller's provider runs and every IOPS of the data it sends is good.
    pub iops: Ioxs,
    /// GOOD when every IOCS for the device's data is good.
    pub iocs: Ioxs,
}

/// What [`ConsumerCr::consume`] says about one frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Consume<'a> {
    /// Another FrameID: not this CR's frame.
    NotThisCr,
    /// This CR's FrameID but unusable (source, length).
    Malformed(&'static str),
    /// Well-formed, but DataValid is off or TransferStatus is not zero.
    NotValid(ApduStatus),
    /// The CycleCounter did not advance: a duplicate or stale frame, not used.
    Duplicate(ApduStatus),
    /// New data.
    New(ApduStatus, NewData<'a>),
}

impl Consume<'_> {
    /// The controller's APDU status of a well-formed frame (the shell reports its DataStatus).
    pub fn status(&self) -> Option<ApduStatus> {
        match self {
            Consume::NotValid(st) | Consume::Duplicate(st) | Consume::New(st, _) => Some(*st),
            Consume::NotThisCr | Consume::Malformed(_) => None,
        }
    }
}

impl ConsumerCr {
    /// The frame rule of this CR.
    pub fn rule(&self) -> CrRule {
        CrRule {
            frame_id: FrameId(self.frame_id),
            src: Some(MacAddr(self.src)),
            c_sdu_len: Some(self.c_sdu_len),
        }
    }

    /// One received RT payload (from the FrameID on) from `src`: the frame check, then
    /// [`ConsumerCr::apply`].
    pub fn consume(&mut self, src: MacAddr, payload: &[u8]) -> Consume<'_> {
        // An over-long frame is not this CR's: its bytes at the status position are arbitrary
        // (the malformed-RT flood ended ARs this way, docs/decisions.md "Floods").
        let st = match check_frame(&self.rule(), src, payload) {
            FrameCheck::NotThisCr => return Consume::NotThisCr,
            FrameCheck::Malformed(why) => return Consume::Malformed(why),
            FrameCheck::NotValid(st) => return Consume::NotValid(st),
            FrameCheck::Good(st) => st,
        };
        // check_frame has checked the length against the C_SDU.
        let Ok(frame) = CyclicFrame::with_c_sdu_len(payload, self.c_sdu_len) else {
            return Consume::Malformed("frame too short");
        };
        match self.apply(st, frame.c_sdu()) {
            Some(d) => Consume::New(st, d),
            None => Consume::Duplicate(st),
        }
    }

    /// Apply a checked frame (status `st`, C_SDU `c_sdu`): `None` when its CycleCounter did
    /// not advance (after p-net `pf_cpm_check_cycle`), otherwise the counter is taken, the
    /// data items are copied into the scratch I area and the IOPS/IOCS evaluated.
    pub fn apply(&mut self, st: ApduStatus, c_sdu: &[u8]) -> Option<NewData<'_>> {
        if self
            .last_counter
            .is_some_and(|last| !cycle_advanced(last, st.cycle_counter))
        {
            return None;
        }
        self.last_counter = Some(st.cycle_counter);
        for it in &self.items {
            if let (Some(src), Some(dst)) = (
                c_sdu.get(it.frame_off..it.frame_off + it.len),
                self.scratch.get_mut(it.area_off..it.area_off + it.len),
            ) {
                dst.copy_from_slice(src);
            }
        }
        let good = |offs: &[usize]| {
            offs.iter()
                .all(|&o| c_sdu.get(o).is_some_and(|&b| Ioxs(b).is_good()))
        };
        let ioxs = |ok: bool| if ok { Ioxs::GOOD } else { Ioxs::BAD };
        Some(NewData {
            area: &self.scratch,
            iops: ioxs(st.data_status.provider_run() && good(&self.iops_offs)),
            iocs: ioxs(good(&self.iocs_offs)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::rt::DataStatus;

    const CTL: [u8; 6] = [2, 0, 0, 0, 0, 1];

    /// Data of 2 bytes at C_SDU 0 (IOPS at 2) into I-area offset 1; an IOCS at 3.
    fn cr() -> ConsumerCr {
        ConsumerCr {
            frame_id: 0x8001,
            src: CTL,
            c_sdu_len: 40,
            items: vec![CopyItem {
                frame_off: 0,
                area_off: 1,
                len: 2,
            }],
            iops_offs: vec![2],
            iocs_offs: vec![3],
            scratch: vec![0xAA; 4],
            dht_ns: 12_000_000,
            last_counter: None,
        }
    }

    fn st(cycle_counter: u16, data_status: DataStatus) -> ApduStatus {
        ApduStatus {
            cycle_counter,
            data_status,
            transfer_status: 0,
        }
    }

    #[test]
    fn apply_copies_items_and_evaluates_ioxs() {
        let mut c = cr();
        let sdu = [5, 6, 0x80, 0x80];
        let d = c.apply(st(100, DataStatus::RUNNING), &sdu).unwrap();
        assert_eq!(d.area, [0xAA, 5, 6, 0xAA], "items copied, the rest safe");
        assert_eq!((d.iops, d.iocs), (Ioxs::GOOD, Ioxs::GOOD));
        // A bad IOCS byte.
        let d = c
            .apply(st(132, DataStatus::RUNNING), &[7, 8, 0x80, 0])
            .unwrap();
        assert_eq!((d.area, d.iocs), (&[0xAA, 7, 8, 0xAA][..], Ioxs::BAD));
    }

    #[test]
    fn iops_bad_when_the_provider_stopped() {
        let mut c = cr();
        let stopped = DataStatus::RUNNING.with_provider_run(false);
        let d = c.apply(st(1, stopped), &[5, 6, 0x80, 0x80]).unwrap();
        assert_eq!((d.iops, d.iocs), (Ioxs::BAD, Ioxs::GOOD));
        // A running provider with a bad IOPS byte: bad too.
        let d = c
            .apply(st(2, DataStatus::RUNNING), &[5, 6, 0, 0x80])
            .unwrap();
        assert_eq!(d.iops, Ioxs::BAD);
    }

    #[test]
    fn duplicate_counter_is_ignored() {
        let mut c = cr();
        assert!(c
            .apply(st(100, DataStatus::RUNNING), &[1, 2, 0x80, 0x80])
            .is_some());
        assert!(c
            .apply(st(100, DataStatus::RUNNING), &[3, 4, 0x80, 0x80])
            .is_none());
        assert!(c
            .apply(st(99, DataStatus::RUNNING), &[3, 4, 0x80, 0x80])
            .is_none());
        assert_eq!(
            c.scratch,
            [0xAA, 1, 2, 0xAA],
            "the duplicate's data not taken"
        );
        assert_eq!(c.last_counter, Some(100));
        // The counter wraps.
        c.last_counter = Some(0xFFF0);
        assert!(c
            .apply(st(0x0010, DataStatus::RUNNING), &[3, 4, 0x80, 0x80])
            .is_some());
    }

    #[test]
    fn consume_checks_the_frame_first() {
        let mut c = cr();
        let mut p = vec![0x80, 0x01, 9, 9, 0x80, 0x80];
        p.resize(2 + 40, 0);
        p.extend_from_slice(&[0, 7, DataStatus::RUNNING.0, 0]);
        match c.consume(MacAddr(CTL), &p) {
            Consume::New(s, d) => {
                assert_eq!(s.cycle_counter, 7);
                assert_eq!(d.area, [0xAA, 9, 9, 0xAA]);
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(c.consume(MacAddr(CTL), &p), Consume::Duplicate(_)));
        assert!(matches!(
            c.consume(MacAddr([2, 0, 0, 0, 0, 9]), &p),
            Consume::Malformed(_)
        ));
        p[1] = 0x02;
        assert_eq!(c.consume(MacAddr(CTL), &p), Consume::NotThisCr);
    }
}

//! PROFINET RT frames: the bytes after EtherType 0x8892.
//!
//! Every RT frame starts with a big-endian FrameID that selects the protocol ([`FrameId::class`],
//! ranges from Wireshark `plugins/epan/profinet/packet-pn-rt.c` `dissect_pn_rt`). Cyclic frames
//! (RT_CLASS_1 and friends) continue with the C_SDU (IO data with its IOPS/IOCS bytes, opaque to
//! this layer, zero padded to at least [`C_SDU_MIN_LEN`]) and end with the 4-byte APDU status:
//! CycleCounter (u16), DataStatus (u8), TransferStatus (u8).
//!
//! Hot path: [`fill_cyclic`] / [`fill_cyclic_frame`] write into a caller-supplied buffer and
//! [`CyclicFrame`] reads in place; neither allocates.

use crate::wire::ethernet::{self, EthernetRepr};
use crate::wire::field;
use crate::wire::{Emit, Error, Result, Writer};

/// Length of the FrameID field.
pub const FRAME_ID_LEN: usize = 2;
/// Length of the APDU status (CycleCounter, DataStatus, TransferStatus).
pub const APDU_STATUS_LEN: usize = 4;
/// Minimum C_SDU length (IEC 61158-6-10 C_SDU 40..1440 octets; untagged this makes the frame
/// exactly 60 bytes, tagged 64 bytes as in the S7-1500 and p-net captures).
pub const C_SDU_MIN_LEN: usize = 40;
/// Maximum C_SDU length for RT_CLASS_1.
pub const C_SDU_MAX_LEN: usize = 1440;

/// A FrameID.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FrameId(pub u16);

impl FrameId {
    pub const ALARM_HIGH: FrameId = FrameId(0xFC01);
    pub const ALARM_LOW: FrameId = FrameId(0xFE01);
    pub const DCP_HELLO: FrameId = FrameId(0xFEFC);
    pub const DCP_GET_SET: FrameId = FrameId(0xFEFD);
    pub const DCP_IDENTIFY_REQUEST: FrameId = FrameId(0xFEFE);
    pub const DCP_IDENTIFY_RESPONSE: FrameId = FrameId(0xFEFF);

    /// Classify by range (Wireshark packet-pn-rt.c; layer-2 frames, no time awareness).
    pub fn class(self) -> FrameClass {
        match self.0 {
            0x0020..=0x0021 | 0x0080..=0x0081 => FrameClass::PtcpSync,
            0x0100..=0x0FFF => FrameClass::RtClass3,
            0x8000..=0xBFFF => FrameClass::RtClass1,
            0xC000..=0xFBFF => FrameClass::RtClass1Legacy,
            0xFC01 => FrameClass::AlarmHigh,
            0xFE01 => FrameClass::AlarmLow,
            0xFEFC => FrameClass::DcpHello,
            0xFEFD => FrameClass::DcpGetSet,
            0xFEFE => FrameClass::DcpIdentifyRequest,
            0xFEFF => FrameClass::DcpIdentifyResponse,
            0xFF00..=0xFF01 | 0xFF20..=0xFF21 | 0xFF40..=0xFF43 => FrameClass::Ptcp,
            0xFF80..=0xFF8F => FrameClass::Fragmentation,
            _ => FrameClass::Other,
        }
    }

    /// True for FrameIDs whose frames end in an APDU status (RT_CLASS_1/3, legacy RT_CLASS_1).
    pub fn is_cyclic(self) -> bool {
        matches!(
            self.class(),
            FrameClass::RtClass1 | FrameClass::RtClass1Legacy | FrameClass::RtClass3
        )
    }

    pub fn is_dcp(self) -> bool {
        (0xFEFC..=0xFEFF).contains(&self.0)
    }
}

/// What a FrameID range carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FrameClass {
    /// 0x0020-0x0021, 0x0080-0x0081: PTCP sync (RT_CLASS_3 time sync).
    PtcpSync,
    /// 0x0100-0x0FFF: RT_CLASS_3 (isochronous, "RED").
    RtClass3,
    /// 0x8000-0xBFFF: RT_CLASS_1 (0xBC00-0xBFFF multicast).
    RtClass1,
    /// 0xC000-0xFBFF: RT_CLASS_1 legacy / RT_CLASS_UDP on layer 2 (older stacks use 0xC000..).
    RtClass1Legacy,
    /// 0xFC01: RTA alarm, high priority.
    AlarmHigh,
    /// 0xFE01: RTA alarm, low priority.
    AlarmLow,
    /// 0xFEFC.
    DcpHello,
    /// 0xFEFD: DCP Get/Set (requests and responses).
    DcpGetSet,
    /// 0xFEFE: DCP Identify request (multicast).
    DcpIdentifyRequest,
    /// 0xFEFF: DCP Identify response.
    DcpIdentifyResponse,
    /// 0xFF00-0xFF01 announce, 0xFF20-0xFF21 follow-up, 0xFF40-0xFF43 delay.
    Ptcp,
    /// 0xFF80-0xFF8F.
    Fragmentation,
    /// Reserved or otherwise not handled (e.g. secured variants 0xFC41/0xFE41, RSI 0xFE02).
    Other,
}

/// DataStatus bits (Wireshark packet-pn-rt.c `pn_rt.ds_*` masks).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct DataStatus(pub u8);

impl DataStatus {
    /// Bit 0: State, 1 = primary, 0 = backup.
    pub const STATE_PRIMARY: u8 = 0x01;
    /// Bit 1: Redundancy.
    pub const REDUNDANCY: u8 = 0x02;
    /// Bit 2: DataValid.
    pub const DATA_VALID: u8 = 0x04;
    /// Bit 3: reserved.
    pub const RESERVED_3: u8 = 0x08;
    /// Bit 4: ProviderState, 1 = run, 0 = stop.
    pub const PROVIDER_RUN: u8 = 0x10;
    /// Bit 5: StationProblemIndicator, 1 = normal (ok), 0 = problem.
    pub const STATION_OK: u8 = 0x20;
    /// Bit 6: reserved.
    pub const RESERVED_6: u8 = 0x40;
    /// Bit 7: Ignore, 1 = ignore the frame.
    pub const IGNORE: u8 = 0x80;

    /// Primary, valid, run, no problem: 0x35, what S7-1500 and p-net send in data exchange.
    pub const RUNNING: DataStatus = DataStatus(0x35);

    pub fn new(primary: bool, valid: bool, run: bool, station_ok: bool) -> DataStatus {
        let mut v = 0;
        if primary {
            v |= Self::STATE_PRIMARY;
        }
        if valid {
            v |= Self::DATA_VALID;
        }
        if run {
            v |= Self::PROVIDER_RUN;
        }
        if station_ok {
            v |= Self::STATION_OK;
        }
        DataStatus(v)
    }
    fn bit(self, m: u8) -> bool {
        self.0 & m != 0
    }
    fn with(self, m: u8, on: bool) -> DataStatus {
        DataStatus(if on { self.0 | m } else { self.0 & !m })
    }
    pub fn primary(self) -> bool {
        self.bit(Self::STATE_PRIMARY)
    }
    pub fn redundancy(self) -> bool {
        self.bit(Self::REDUNDANCY)
    }
    pub fn data_valid(self) -> bool {
        self.bit(Self::DATA_VALID)
    }
    pub fn provider_run(self) -> bool {
        self.bit(Self::PROVIDER_RUN)
    }
    pub fn station_ok(self) -> bool {
        self.bit(Self::STATION_OK)
    }
    pub fn ignore(self) -> bool {
        self.bit(Self::IGNORE)
    }
    pub fn with_primary(self, on: bool) -> DataStatus {
        self.with(Self::STATE_PRIMARY, on)
    }
    pub fn with_redundancy(self, on: bool) -> DataStatus {
        self.with(Self::REDUNDANCY, on)
    }
    pub fn with_data_valid(self, on: bool) -> DataStatus {
        self.with(Self::DATA_VALID, on)
    }
    pub fn with_provider_run(self, on: bool) -> DataStatus {
        self.with(Self::PROVIDER_RUN, on)
    }
    pub fn with_station_ok(self, on: bool) -> DataStatus {
        self.with(Self::STATION_OK, on)
    }
    pub fn with_ignore(self, on: bool) -> DataStatus {
        self.with(Self::IGNORE, on)
    }
}

/// "0x35 (primary, valid, run, station ok)": the byte and its bits in words, as Wireshark
/// names them (`pn_rt.ds_*`).
impl core::fmt::Display for DataStatus {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let words = [
            if self.primary() { "primary" } else { "backup" },
            if self.data_valid() {
                "valid"
            } else {
                "invalid"
            },
            if self.provider_run() { "run" } else { "stop" },
            if self.station_ok() {
                "station ok"
            } else {
                "station problem"
            },
        ];
        write!(f, "{:#04x} ({}", self.0, words.join(", "))?;
        if self.redundancy() {
            write!(f, ", redundancy")?;
        }
        if self.ignore() {
            write!(f, ", ignore")?;
        }
        write!(f, ")")
    }
}

/// Where a bad IOxS was detected (IOxS bits 5-6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LocationOfDetection {
    Subslot = 0,
    Slot = 1,
    IoDevice = 2,
    IoController = 3,
}

/// An IOPS or IOCS byte: bit 7 DataState (1 good), bits 5-6 LocationOfDetection ("instance"),
/// bits 1-4 reserved, bit 0 Extension (1 = another IOxS byte follows). Wireshark
/// `pn_io.ioxs.*` masks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Ioxs(pub u8);

impl Ioxs {
    pub const GOOD: Ioxs = Ioxs(0x80);
    pub const BAD: Ioxs = Ioxs(0x00);
    pub const DATA_STATE_GOOD: u8 = 0x80;
    pub const LOCATION_MASK: u8 = 0x60;
    pub const EXTENSION: u8 = 0x01;

    /// A bad IOxS detected at `loc`.
    pub fn bad_at(loc: LocationOfDetection) -> Ioxs {
        Ioxs((loc as u8) << 5)
    }
    pub fn is_good(self) -> bool {
        self.0 & Self::DATA_STATE_GOOD != 0
    }
    pub fn location(self) -> LocationOfDetection {
        match (self.0 & Self::LOCATION_MASK) >> 5 {
            0 => LocationOfDetection::Subslot,
            1 => LocationOfDetection::Slot,
            2 => LocationOfDetection::IoDevice,
            _ => LocationOfDetection::IoController,
        }
    }
    pub fn extension(self) -> bool {
        self.0 & Self::EXTENSION != 0
    }
}

/// The APDU status at the end of a cyclic frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ApduStatus {
    /// In units of 31.25 µs.
    pub cycle_counter: u16,
    pub data_status: DataStatus,
    /// 0 = ok; anything else means "ignore this frame" (RT_CLASS_3 use).
    pub transfer_status: u8,
}

impl ApduStatus {
    pub fn parse(b: &[u8]) -> Result<ApduStatus> {
        Ok(ApduStatus {
            cycle_counter: field::read_u16(b, 0)?,
            data_status: DataStatus(field::read_u8(b, 2)?),
            transfer_status: field::read_u8(b, 3)?,
        })
    }
    /// Write the four bytes into the start of `b` (for the view setters, which must not
    /// allocate; [`Emit`] is the serialisation).
    fn fill(&self, b: &mut [u8]) -> Result<()> {
        field::write_u16(b, 0, self.cycle_counter)?;
        field::write_u8(b, 2, self.data_status.0)?;
        field::write_u8(b, 3, self.transfer_status)
    }
}

impl Emit for ApduStatus {
    fn buffer_len(&self) -> usize {
        APDU_STATUS_LEN
    }
    fn emit(&self, w: &mut Writer) -> Result<()> {
        let start = w.len();
        w.zeros(APDU_STATUS_LEN);
        self.fill(&mut w.buf[start..])
    }
}

/// The FrameID of an RT payload (the bytes after EtherType 0x8892).
pub fn frame_id(rt_payload: &[u8]) -> Result<FrameId> {
    field::read_u16(rt_payload, 0).map(FrameId)
}

/// Parse a complete Ethernet frame carrying EtherType 0x8892: header, FrameID and the bytes
/// after the FrameID (padding included). Fuzz entry point for RT frames.
pub fn parse_rt_frame(frame: &[u8]) -> Result<(EthernetRepr, FrameId, &[u8])> {
    let (eth, payload) = EthernetRepr::parse_frame(frame)?;
    if eth.ethertype != ethernet::ethertype::PROFINET {
        return Err(Error::Unsupported("EtherType is not PROFINET RT"));
    }
    let id = frame_id(payload)?;
    Ok((eth, id, &payload[FRAME_ID_LEN..]))
}

/// A view of a cyclic RT payload: FrameID | C_SDU | APDU status.
///
/// `new_checked` takes the APDU status from the last four bytes of the buffer (as Wireshark and
/// p-net do). A consumer that knows its C_SDU length should use [`CyclicFrame::with_c_sdu_len`],
/// which also copes with trailing Ethernet padding after a short C_SDU.
#[derive(Debug, Clone)]
pub struct CyclicFrame<T: AsRef<[u8]>> {
    buffer: T,
    /// Offset of the APDU status.
    status_at: usize,
}

impl<T: AsRef<[u8]>> CyclicFrame<T> {
    /// View `buffer` (starting at the FrameID) assuming the APDU status ends the buffer.
    /// Crate-internal: the caller has established the buffer's length (the getters index it).
    pub(crate) fn new_unchecked(buffer: T) -> CyclicFrame<T> {
        let status_at = buffer.as_ref().len().saturating_sub(APDU_STATUS_LEN);
        CyclicFrame { buffer, status_at }
    }
    pub fn new_checked(buffer: T) -> Result<CyclicFrame<T>> {
        let f = CyclicFrame::new_unchecked(buffer);
        f.check_len()?;
        Ok(f)
    }
    /// View with a known C_SDU length: the APDU status follows `c_sdu_len` bytes of C_SDU;
    /// anything after it is padding.
    pub fn with_c_sdu_len(buffer: T, c_sdu_len: usize) -> Result<CyclicFrame<T>> {
        let status_at = FRAME_ID_LEN
            .checked_add(c_sdu_len)
            .ok_or(Error::Truncated)?;
        let f = CyclicFrame { buffer, status_at };
        f.check_len()?;
        Ok(f)
    }
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if self.status_at < FRAME_ID_LEN || self.status_at.saturating_add(APDU_STATUS_LEN) > len {
            return Err(Error::Truncated);
        }
        // No IOCR carries more than 1440 bytes; a longer "C_SDU" is not a cyclic frame, and
        // `fill_cyclic` could not write it back (the 10-minute fuzz run of the `all` target
        // found the parse/emit asymmetry with a 1483-byte C_SDU).
        if self.status_at - FRAME_ID_LEN > C_SDU_MAX_LEN {
            return Err(Error::Malformed("C_SDU longer than 1440 bytes"));
        }
        Ok(())
    }
    pub fn into_inner(self) -> T {
        self.buffer
    }
    pub fn frame_id(&self) -> FrameId {
        FrameId(field::get_u16(self.buffer.as_ref(), 0))
    }
    /// IO data with IOPS/IOCS bytes (and any C_SDU padding).
    pub fn c_sdu(&self) -> &[u8] {
        self.buffer
            .as_ref()
            .get(FRAME_ID_LEN..self.status_at)
            .unwrap_or(&[])
    }
    pub fn apdu_status(&self) -> ApduStatus {
        self.buffer
            .as_ref()
            .get(self.status_at..)
            .and_then(|b| ApduStatus::parse(b).ok())
            .unwrap_or_default()
    }
    pub fn cycle_counter(&self) -> u16 {
        self.apdu_status().cycle_counter
    }
    pub fn data_status(&self) -> DataStatus {
        self.apdu_status().data_status
    }
    pub fn transfer_status(&self) -> u8 {
        self.apdu_status().transfer_status
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> CyclicFrame<T> {
    pub fn set_frame_id(&mut self, id: FrameId) {
        let _ = field::write_u16(self.buffer.as_mut(), 0, id.0);
    }
    pub fn c_sdu_mut(&mut self) -> &mut [u8] {
        let end = self.status_at;
        self.buffer
            .as_mut()
            .get_mut(FRAME_ID_LEN..end)
            .unwrap_or(&mut [])
    }
    pub fn set_apdu_status(&mut self, s: ApduStatus) {
        let at = self.status_at;
        if let Some(b) = self.buffer.as_mut().get_mut(at..) {
            let _ = s.fill(b);
        }
    }
}

/// The C_SDU length used on the wire for `data_len` bytes of IO data: at least 40.
pub fn c_sdu_len(data_len: usize) -> usize {
    data_len.max(C_SDU_MIN_LEN)
}

/// Length of a cyclic RT payload (FrameID, C_SDU padded to 40, APDU status).
pub fn cyclic_payload_len(data_len: usize) -> usize {
    FRAME_ID_LEN + c_sdu_len(data_len) + APDU_STATUS_LEN
}

/// Write the APDU status into the start of `buf` (the per-cycle stamp of a provider frame
/// prepared once; real-time view API like [`fill_cyclic`], does not allocate).
pub fn fill_apdu_status(buf: &mut [u8], status: ApduStatus) -> Result<()> {
    status.fill(buf)
}

/// Write a cyclic RT payload (FrameID, `data` zero padded to at least 40 bytes, APDU status)
/// into the start of `buf`; returns the number of bytes written. Does not allocate: this and
/// [`fill_cyclic_frame`] are the view API of the real-time path, not a second serialisation.
pub fn fill_cyclic(buf: &mut [u8], id: FrameId, data: &[u8], status: ApduStatus) -> Result<usize> {
    if data.len() > C_SDU_MAX_LEN {
        return Err(Error::Malformed("C_SDU longer than 1440 bytes"));
    }
    let total = cyclic_payload_len(data.len());
    let out = buf.get_mut(..total).ok_or(Error::Truncated)?;
    field::write_u16(out, 0, id.0)?;
    let c = c_sdu_len(data.len());
    let sdu = &mut out[FRAME_ID_LEN..FRAME_ID_LEN + c];
    sdu[..data.len()].copy_from_slice(data);
    sdu[data.len()..].fill(0);
    status.fill(&mut out[FRAME_ID_LEN + c..])?;
    Ok(total)
}

/// Write a complete cyclic Ethernet frame (header from `eth`, whose EtherType should be
/// 0x8892) into `buf`; returns the frame length (>= 60, no FCS). Does not allocate.
pub fn fill_cyclic_frame(
    buf: &mut [u8],
    eth: &EthernetRepr,
    id: FrameId,
    data: &[u8],
    status: ApduStatus,
) -> Result<usize> {
    let h = ethernet::Frame::new_unchecked(&mut *buf).fill_header(eth)?;
    let n = fill_cyclic(buf.get_mut(h..).ok_or(Error::Truncated)?, id, data, status)?;
    ethernet::pad_in_place(buf, h + n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_status_in_words() {
        assert_eq!(
            DataStatus::RUNNING.to_string(),
            "0x35 (primary, valid, run, station ok)"
        );
        assert_eq!(
            DataStatus(0x04).to_string(),
            "0x04 (backup, valid, stop, station problem)"
        );
    }
    use crate::wire::ethernet::{MacAddr, VlanTag};

    #[test]
    fn classify_ranges() {
        assert_eq!(FrameId(0x8000).class(), FrameClass::RtClass1);
        assert_eq!(FrameId(0xBFFF).class(), FrameClass::RtClass1);
        assert_eq!(FrameId(0xC000).class(), FrameClass::RtClass1Legacy);
        assert_eq!(FrameId(0xFBFF).class(), FrameClass::RtClass1Legacy);
        assert_eq!(FrameId(0xFC01).class(), FrameClass::AlarmHigh);
        assert_eq!(FrameId(0xFE01).class(), FrameClass::AlarmLow);
        assert_eq!(FrameId(0xFEFC).class(), FrameClass::DcpHello);
        assert_eq!(FrameId(0xFEFD).class(), FrameClass::DcpGetSet);
        assert_eq!(FrameId(0xFEFE).class(), FrameClass::DcpIdentifyRequest);
        assert_eq!(FrameId(0xFEFF).class(), FrameClass::DcpIdentifyResponse);
        assert_eq!(FrameId(0xFF40).class(), FrameClass::Ptcp);
        assert_eq!(FrameId(0x0020).class(), FrameClass::PtcpSync);
        assert_eq!(FrameId(0xFC00).class(), FrameClass::Other);
        assert_eq!(FrameId(0x7FFF).class(), FrameClass::Other);
        assert!(FrameId(0xC080).is_cyclic());
        assert!(!FrameId(0xFE01).is_cyclic());
    }

    #[test]
    fn data_status_bits() {
        let ds = DataStatus::RUNNING;
        assert!(ds.primary() && ds.data_valid() && ds.provider_run() && ds.station_ok());
        assert!(!ds.redundancy() && !ds.ignore());
        assert_eq!(DataStatus::new(true, true, true, true), ds);
        assert_eq!(ds.with_provider_run(false).0, 0x25);
        assert_eq!(Ioxs::bad_at(LocationOfDetection::IoController).0, 0x60);
        assert!(Ioxs::GOOD.is_good());
    }

    #[test]
    fn cyclic_build_and_view() {
        let eth = EthernetRepr {
            dst: MacAddr([2, 0, 0, 0, 0, 2]),
            src: MacAddr([2, 0, 0, 0, 0, 1]),
            vlan: Some(VlanTag::RT_CYCLIC),
            ethertype: ethernet::ethertype::PROFINET,
        };
        let mut buf = [0xaau8; 128];
        let st = ApduStatus {
            cycle_counter: 0x1c00,
            data_status: DataStatus::RUNNING,
            transfer_status: 0,
        };
        let n =
            fill_cyclic_frame(&mut buf, &eth, FrameId(0x8000), &[0x80, 1, 2, 0x80], st).unwrap();
        assert_eq!(n, 18 + 2 + 40 + 4);
        let (e, id, _) = parse_rt_frame(&buf[..n]).unwrap();
        assert_eq!(e, eth);
        assert_eq!(id, FrameId(0x8000));
        let v = CyclicFrame::new_checked(&buf[18..n]).unwrap();
        assert_eq!(v.apdu_status(), st);
        assert_eq!(v.c_sdu().len(), 40);
        assert_eq!(&v.c_sdu()[..4], &[0x80, 1, 2, 0x80]);
        assert!(v.c_sdu()[4..].iter().all(|&b| b == 0));
        // Known C_SDU length with trailing padding.
        let mut padded = buf[18..n].to_vec();
        padded.extend_from_slice(&[0, 0, 0, 0]);
        let v = CyclicFrame::with_c_sdu_len(&padded[..], 40).unwrap();
        assert_eq!(v.apdu_status(), st);
        assert_eq!(
            CyclicFrame::new_checked(&[0u8, 1, 2][..]).err(),
            Some(Error::Truncated)
        );
        assert!(fill_cyclic(&mut buf[..40], FrameId(0x8000), &[], st).is_err());
    }

    /// A view accepts exactly the C_SDU lengths `fill_cyclic` can write: 1440 bytes, not 1441
    /// (fuzz finding of the `all` target, regression input in
    /// protocol/fuzz/regressions/rt_frame).
    #[test]
    fn cyclic_view_refuses_a_c_sdu_longer_than_1440() {
        let st = ApduStatus {
            cycle_counter: 7,
            data_status: DataStatus::RUNNING,
            transfer_status: 0,
        };
        let mut out = vec![0u8; cyclic_payload_len(C_SDU_MAX_LEN)];
        let n = fill_cyclic(&mut out, FrameId(0x8001), &[0x80; C_SDU_MAX_LEN], st).unwrap();
        let v = CyclicFrame::new_checked(&out[..n]).unwrap();
        assert_eq!(v.c_sdu().len(), C_SDU_MAX_LEN);
        assert_eq!(v.apdu_status(), st);
        let mut long = out[..n].to_vec();
        long.insert(2, 0x80);
        assert_eq!(
            CyclicFrame::new_checked(&long[..]).err(),
            Some(Error::Malformed("C_SDU longer than 1440 bytes"))
        );
        assert!(CyclicFrame::with_c_sdu_len(&long[..], C_SDU_MAX_LEN + 1).is_err());
        assert!(CyclicFrame::with_c_sdu_len(&long[..], C_SDU_MAX_LEN).is_ok());
    }
}

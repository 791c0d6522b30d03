//! RTA-PDU: the acyclic real-time alarm transport (RTA_CLASS_1) carried after the FrameID
//! 0xFC01 (high priority) or 0xFE01 (low priority) in an Ethernet frame with EtherType 0x8892
//! (usually 802.1Q tagged with priority 6 / 5).
//!
//! ```text
//! 0  AlarmDstEndpoint u16   (the receiver's alarm reference)
//! 2  AlarmSrcEndpoint u16   (the sender's alarm reference)
//! 4  PDUType u8             bits 0-3 Type (1 DATA, 2 NACK, 3 ACK, 4 ERR), bits 4-7 Version (1)
//! 5  AddFlags u8            bits 0-3 WindowSize (1), bit 4 TACK, bits 5-7 reserved
//! 6  SendSeqNum u16
//! 8  AckSeqNum u16
//! 10 VarPartLen u16
//! 12 VarPart: DATA: AlarmNotification / AlarmAck block; ERR: PNIOStatus (+ vendor data)
//! ```
//! Bytes after `12 + VarPartLen` are Ethernet padding (an S7-1500 leaves old buffer contents
//! there) and are ignored.
//!
//! Sequence numbers run 0x0000..=0x7FFF and wrap to 0; a fresh AR starts with
//! SendSeqNum 0xFFFF and AckSeqNum 0xFFFE (so the first increment gives 0x0000).
//!
//! Source: Wireshark `packet-dcerpc-pn-io.c` `dissect_PNIO_RTA`, value table
//! `pn_io_pdu_type`, `pn_io_error_code2_pnio_253`; p-net `src/common/pf_alarm.c`
//! (`pf_alarm_apms_a_data_ind`, `pf_alarm_apmr_a_data_ind`, init of `send_seq_count` 0xFFFF /
//! `exp_seq_count_o` 0xFFFE); real frames `pniors-alarm-*`, `mehner-alarm-*`, `icsnpp-alarm-*`.
//!
//! Fuzz entry point: [`RtaRepr::parse`].

use crate::wire::field::{self, Writer};
use crate::wire::pnio::alarm::AlarmPdu;
use crate::wire::pnio::PnioStatus;
use crate::wire::{Emit, Error, Result};

/// FrameID of the high-priority alarm channel.
pub const FRAME_ID_ALARM_HIGH: u16 = 0xFC01;
/// FrameID of the low-priority alarm channel.
pub const FRAME_ID_ALARM_LOW: u16 = 0xFE01;

/// Length of the fixed RTA header before the VarPart.
pub const HEADER_LEN: usize = 12;

/// SendSeqNum of the first PDU after the AR was set up ("nothing sent yet" + 1 wraps to 0).
pub const INITIAL_SEND_SEQ: u16 = 0xFFFF;
/// AckSeqNum before anything was received.
pub const INITIAL_ACK_SEQ: u16 = 0xFFFE;

/// The sequence number that follows `s` (0x7FFF wraps to 0; the initial 0xFFFF also gives 0).
pub const fn next_seq(s: u16) -> u16 {
    s.wrapping_add(1) & 0x7FFF
}

/// PNIOStatus ErrorCode2 values of an ERR-RTA-PDU (ErrorCode 0xCF, ErrorDecode 0x81,
/// ErrorCode1 0xFD "RTA_ERR_CLS_PROTOCOL"): the reason the sender aborts the AR.
/// Source: Wireshark `pn_io_error_code2_pnio_253`, p-net `PNET_ERROR_CODE_2_ABORT_*`.
pub mod abort_reason {
    pub const ERROR_CODE_RTA: u8 = 0xCF;
    pub const ERROR_DECODE_PNIO: u8 = 0x81;
    pub const ERR_CLS_PROTOCOL: u8 = 0xFD;

    pub const CODE_SEQ: u8 = 0x01;
    pub const INSTANCE_CLOSED: u8 = 0x02;
    pub const AR_OUT_OF_MEMORY: u8 = 0x03;
    pub const AR_ADD_PROVIDER_OR_CONSUMER_FAILED: u8 = 0x04;
    pub const AR_CONSUMER_DHT_EXPIRED: u8 = 0x05;
    pub const AR_CMI_TIMEOUT: u8 = 0x06;
    pub const AR_ALARM_OPEN_FAILED: u8 = 0x07;
    pub const AR_ALARM_SEND_CNF_NEG: u8 = 0x08;
    pub const AR_ALARM_ACK_SEND_CNF_NEG: u8 = 0x09;
    pub const AR_ALARM_DATA_TOO_LONG: u8 = 0x0A;
    pub const AR_ALARM_IND_ERROR: u8 = 0x0B;
    pub const AR_RPC_CLIENT_CALL_CNF_NEG: u8 = 0x0C;
    pub const AR_ABORT_REQ: u8 = 0x0D;
    pub const AR_RE_RUN_ABORTS_EXISTING: u8 = 0x0E;
    pub const AR_RELEASE_IND_RECEIVED: u8 = 0x0F;
    pub const AR_DEVICE_DEACTIVATED: u8 = 0x10;
    pub const AR_REMOVED: u8 = 0x11;
    pub const AR_PROTOCOL_VIOLATION: u8 = 0x12;
    pub const AR_NAME_RESOLUTION_ERROR: u8 = 0x13;
    pub const AR_RPC_BIND_ERROR: u8 = 0x14;
    pub const AR_RPC_CONNECT_ERROR: u8 = 0x15;
    pub const AR_RPC_READ_ERROR: u8 = 0x16;
    pub const AR_RPC_WRITE_ERROR: u8 = 0x17;
    pub const AR_RPC_CONTROL_ERROR: u8 = 0x18;
    pub const AR_FORBIDDEN_PULL_OR_PLUG: u8 = 0x19;
    pub const AR_AP_REMOVED: u8 = 0x1A;
    pub const AR_LINK_DOWN: u8 = 0x1B;
    pub const AR_MC_REGISTER_FAILED: u8 = 0x1C;
    pub const NOT_SYNCHRONIZED: u8 = 0x1D;
    pub const WRONG_TOPOLOGY: u8 = 0x1E;
    pub const DCP_STATION_NAME_CHANGED: u8 = 0x1F;
    pub const DCP_RESET_TO_FACTORY: u8 = 0x20;
    pub const PDEV_CHECK_FAILED: u8 = 0x24;

    /// The reason in words (Wireshark `packet-pn.c` ErrorCode2 names for ErrorCode1 0xFD,
    /// "RTA_ERR_CLS_PROTOCOL"; p-net `pnet_api.h` `PNET_ERROR_CODE_2_ABORT_*`).
    pub const fn describe(reason: u8) -> &'static str {
        match reason {
            CODE_SEQ => "sequence number error",
            INSTANCE_CLOSED => "instance closed",
            AR_OUT_OF_MEMORY => "out of memory",
            AR_ADD_PROVIDER_OR_CONSUMER_FAILED => "adding a provider or consumer failed",
            AR_CONSUMER_DHT_EXPIRED => "consumer data-hold time (watchdog) expired",
            AR_CMI_TIMEOUT => "CM initiator activity timeout",
            AR_ALARM_OPEN_FAILED => "opening the alarm channel failed",
            AR_ALARM_SEND_CNF_NEG => "alarm send confirmation negative",
            AR_ALARM_ACK_SEND_CNF_NEG => "alarm acknowledgement send confirmation negative",
            AR_ALARM_DATA_TOO_LONG => "alarm data too long",
            AR_ALARM_IND_ERROR => "alarm indication error",
            AR_RPC_CLIENT_CALL_CNF_NEG => "RPC client call confirmation negative",
            AR_ABORT_REQ => "abort requested by the application",
            AR_RE_RUN_ABORTS_EXISTING => "a new Connect for this AR aborts the existing one",
            AR_RELEASE_IND_RECEIVED => "release indication received",
            AR_DEVICE_DEACTIVATED => "device deactivated",
            AR_REMOVED => "AR removed",
            AR_PROTOCOL_VIOLATION => "protocol violation",
            AR_NAME_RESOLUTION_ERROR => "name resolution error",
            AR_RPC_BIND_ERROR => "RPC bind error",
            AR_RPC_CONNECT_ERROR => "RPC connect error",
            AR_RPC_READ_ERROR => "RPC read error",
            AR_RPC_WRITE_ERROR => "RPC write error",
            AR_RPC_CONTROL_ERROR => "RPC control error",
            AR_FORBIDDEN_PULL_OR_PLUG => "forbidden pull or plug after the check",
            AR_AP_REMOVED => "application process removed",
            AR_LINK_DOWN => "link down",
            AR_MC_REGISTER_FAILED => "multicast registration failed",
            NOT_SYNCHRONIZED => "not synchronized",
            WRONG_TOPOLOGY => "wrong topology",
            DCP_STATION_NAME_CHANGED => "station name changed by DCP",
            DCP_RESET_TO_FACTORY => "reset to factory by DCP",
            PDEV_CHECK_FAILED => "PDev check failed",
            _ => "unknown reason",
        }
    }

    /// An ERR-RTA status in words: "CF 81 FD 11 (AR removed)".
    pub fn status_text(st: crate::wire::pnio::PnioStatus) -> String {
        let words = if st.error_code == ERROR_CODE_RTA
            && st.error_decode == ERROR_DECODE_PNIO
            && st.error_code1 == ERR_CLS_PROTOCOL
        {
            describe(st.error_code2)
        } else {
            "not an RTA protocol error"
        };
        format!("{st} ({words})")
    }

    /// The PNIOStatus CF 81 FD `reason`.
    pub const fn status(reason: u8) -> crate::wire::pnio::PnioStatus {
        crate::wire::pnio::PnioStatus::new(
            ERROR_CODE_RTA,
            ERROR_DECODE_PNIO,
            ERR_CLS_PROTOCOL,
            reason,
        )
    }
}

/// PDUType.Type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RtaPduType {
    Data,
    Nack,
    Ack,
    Err,
}

impl RtaPduType {
    pub fn from_nibble(n: u8) -> Option<Self> {
        match n {
            1 => Some(RtaPduType::Data),
            2 => Some(RtaPduType::Nack),
            3 => Some(RtaPduType::Ack),
            4 => Some(RtaPduType::Err),
            _ => None,
        }
    }
    pub fn nibble(self) -> u8 {
        match self {
            RtaPduType::Data => 1,
            RtaPduType::Nack => 2,
            RtaPduType::Ack => 3,
            RtaPduType::Err => 4,
        }
    }
}

mod field_off {
    pub const DST: usize = 0;
    pub const SRC: usize = 2;
    pub const PDU_TYPE: usize = 4;
    pub const ADD_FLAGS: usize = 5;
    pub const SEND_SEQ: usize = 6;
    pub const ACK_SEQ: usize = 8;
    pub const VAR_PART_LEN: usize = 10;
    pub const VAR_PART: usize = 12;
}

/// A checked view of an RTA-PDU (the bytes after the FrameID).
#[derive(Debug, Clone)]
pub struct RtaPdu<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> RtaPdu<T> {
    /// Crate-internal: for a buffer whose length is already established (an emit into a
    /// buffer sized for it, or after an explicit check); the getters index the buffer.
    pub(crate) const fn new_unchecked(buffer: T) -> Self {
        RtaPdu { buffer }
    }
    /// Check that the fixed header and `VarPartLen` bytes are present.
    pub fn new_checked(buffer: T) -> Result<Self> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }
    pub fn check_len(&self) -> Result<()> {
        let b = self.buffer.as_ref();
        let n = field::read_u16(b, field_off::VAR_PART_LEN)? as usize;
        if b.len() < HEADER_LEN + n {
            return Err(Error::Truncated);
        }
        Ok(())
    }
    pub fn into_inner(self) -> T {
        self.buffer
    }
    fn u16_at(&self, at: usize) -> u16 {
        field::get_u16(self.buffer.as_ref(), at)
    }
    fn u8_at(&self, at: usize) -> u8 {
        field::get_u8(self.buffer.as_ref(), at)
    }
    pub fn dst_endpoint(&self) -> u16 {
        self.u16_at(field_off::DST)
    }
    pub fn src_endpoint(&self) -> u16 {
        self.u16_at(field_off::SRC)
    }
    pub fn pdu_type_raw(&self) -> u8 {
        self.u8_at(field_off::PDU_TYPE)
    }
    pub fn add_flags_raw(&self) -> u8 {
        self.u8_at(field_off::ADD_FLAGS)
    }
    pub fn send_seq(&self) -> u16 {
        self.u16_at(field_off::SEND_SEQ)
    }
    pub fn ack_seq(&self) -> u16 {
        self.u16_at(field_off::ACK_SEQ)
    }
    pub fn var_part_len(&self) -> u16 {
        self.u16_at(field_off::VAR_PART_LEN)
    }
    /// The VarPart (exactly VarPartLen bytes; empty if the buffer is too short).
    pub fn var_part(&self) -> &[u8] {
        let n = self.var_part_len() as usize;
        self.buffer
            .as_ref()
            .get(field_off::VAR_PART..field_off::VAR_PART + n)
            .unwrap_or(&[])
    }
}

/// An owned RTA-PDU.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RtaRepr {
    pub dst_endpoint: u16,
    pub src_endpoint: u16,
    pub pdu_type: RtaPduType,
    /// PDUType.Version (1).
    pub version: u8,
    /// AddFlags.WindowSize (1).
    pub window_size: u8,
    /// AddFlags.TACK: set on DATA-RTA-PDUs (the receiver must answer with an ACK).
    pub tack: bool,
    pub send_seq: u16,
    pub ack_seq: u16,
    /// The VarPart (DATA: alarm block; ERR: PNIOStatus and optional vendor data).
    pub var_part: Vec<u8>,
}

impl RtaRepr {
    /// A PDU with version 1, window size 1, TACK set for DATA only.
    pub fn new(
        pdu_type: RtaPduType,
        dst_endpoint: u16,
        src_endpoint: u16,
        send_seq: u16,
        ack_seq: u16,
        var_part: Vec<u8>,
    ) -> Self {
        RtaRepr {
            dst_endpoint,
            src_endpoint,
            pdu_type,
            version: 1,
            window_size: 1,
            tack: pdu_type == RtaPduType::Data,
            send_seq,
            ack_seq,
            var_part,
        }
    }

    /// An ERR-RTA-PDU carrying `status`.
    pub fn err(
        dst_endpoint: u16,
        src_endpoint: u16,
        send_seq: u16,
        ack_seq: u16,
        status: PnioStatus,
    ) -> Self {
        Self::new(
            RtaPduType::Err,
            dst_endpoint,
            src_endpoint,
            send_seq,
            ack_seq,
            status.octets().to_vec(),
        )
    }

    /// Parse an RTA-PDU (the bytes after the FrameID; trailing padding is ignored).
    /// Fuzz entry point.
    pub fn parse(buf: &[u8]) -> Result<Self> {
        let p = RtaPdu::new_checked(buf)?;
        let t = p.pdu_type_raw();
        let pdu_type =
            RtaPduType::from_nibble(t & 0x0F).ok_or(Error::Unsupported("RTA PDUType"))?;
        let flags = p.add_flags_raw();
        Ok(RtaRepr {
            dst_endpoint: p.dst_endpoint(),
            src_endpoint: p.src_endpoint(),
            pdu_type,
            version: t >> 4,
            window_size: flags & 0x0F,
            tack: flags & 0x10 != 0,
            send_seq: p.send_seq(),
            ack_seq: p.ack_seq(),
            var_part: p.var_part().to_vec(),
        })
    }

    /// Set every field of `b`, which holds exactly `buffer_len()` bytes.
    fn fill(&self, b: &mut [u8], len: u16) -> Result<()> {
        field::write_u16(b, field_off::DST, self.dst_endpoint)?;
        field::write_u16(b, field_off::SRC, self.src_endpoint)?;
        b[field_off::PDU_TYPE] = (self.version << 4) | self.pdu_type.nibble();
        b[field_off::ADD_FLAGS] = (self.window_size & 0x0F) | if self.tack { 0x10 } else { 0 };
        field::write_u16(b, field_off::SEND_SEQ, self.send_seq)?;
        field::write_u16(b, field_off::ACK_SEQ, self.ack_seq)?;
        field::write_u16(b, field_off::VAR_PART_LEN, len)?;
        b[field_off::VAR_PART..].copy_from_slice(&self.var_part);
        Ok(())
    }

    /// For an ERR-RTA-PDU: the PNIOStatus at the start of the VarPart.
    pub fn err_status(&self) -> Option<PnioStatus> {
        if self.pdu_type != RtaPduType::Err {
            return None;
        }
        PnioStatus::from_bytes(&self.var_part).ok()
    }

    /// For a DATA-RTA-PDU: the alarm block in the VarPart.
    pub fn alarm(&self) -> Option<Result<AlarmPdu>> {
        (self.pdu_type == RtaPduType::Data).then(|| AlarmPdu::parse(&self.var_part))
    }
}

impl Emit for RtaRepr {
    fn buffer_len(&self) -> usize {
        HEADER_LEN + self.var_part.len()
    }

    fn emit(&self, w: &mut Writer) -> Result<()> {
        let len = u16::try_from(self.var_part.len())
            .map_err(|_| Error::Malformed("RTA VarPart longer than 65535"))?;
        let start = w.len();
        w.zeros(self.buffer_len());
        self.fill(&mut w.buf[start..], len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn sequence_numbers_wrap() {
        assert_eq!(next_seq(INITIAL_SEND_SEQ), 0);
        assert_eq!(next_seq(INITIAL_ACK_SEQ), 0x7FFF);
        assert_eq!(next_seq(0x7FFF), 0);
        assert_eq!(next_seq(5), 6);
    }

    #[test]
    fn parses_s7_err_with_trailing_garbage() {
        // RTA part of pniors-alarm-low-err-rta-reply-s7.hex (after FrameID 0xFE01).
        let b = [
            0x00, 0x00, 0x00, 0x00, 0x14, 0x01, 0x00, 0x05, 0x00, 0x05, 0x00, 0x04, 0xcf, 0x81,
            0xfd, 0x0b, 0x00, 0x2a, 0x01, 0x0e, 0x80, 0x04,
        ];
        let r = RtaRepr::parse(&b).unwrap();
        assert_eq!(r.pdu_type, RtaPduType::Err);
        assert_eq!((r.version, r.window_size, r.tack), (1, 1, false));
        assert_eq!((r.send_seq, r.ack_seq), (5, 5));
        assert_eq!(
            r.err_status(),
            Some(abort_reason::status(abort_reason::AR_ALARM_IND_ERROR))
        );
        assert_eq!(r.to_bytes().unwrap(), b[..16].to_vec());
    }

    #[test]
    fn data_sets_tack() {
        let r = RtaRepr::new(RtaPduType::Data, 1, 2, 0xFFFF, 0xFFFE, vec![1, 2]);
        let b = r.to_bytes().unwrap();
        assert_eq!(
            b,
            vec![0, 1, 0, 2, 0x11, 0x11, 0xff, 0xff, 0xff, 0xfe, 0, 2, 1, 2]
        );
        assert_eq!(RtaRepr::parse(&b[..13]), Err(Error::Truncated));
    }

    proptest! {
        #[test]
        fn parse_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            if let Ok(r) = RtaRepr::parse(&bytes) {
                let _ = r.alarm();
                let _ = r.err_status();
            }
        }

        #[test]
        fn round_trip(t in 1u8..5, dst in any::<u16>(), src in any::<u16>(), s in any::<u16>(), a in any::<u16>(),
                      tack in any::<bool>(), ws in 0u8..16, vp in proptest::collection::vec(any::<u8>(), 0..40)) {
            let mut r = RtaRepr::new(RtaPduType::from_nibble(t).unwrap(), dst, src, s, a, vp);
            r.tack = tack;
            r.window_size = ws;
            let b = r.to_bytes().unwrap();
            prop_assert_eq!(b.len(), r.buffer_len());
            prop_assert_eq!(RtaRepr::parse(&b).unwrap(), r);
        }
    }
}

//! tshark as the independent oracle for every record, I&M, diagnosis, identification, alarm
//! and RTA frame the `rec` codecs emit: each frame is built with our encoders, wrapped in a
//! complete Ethernet frame (Ethernet/IPv4/UDP 34964 with correct checksums and a DCE/RPC CL
//! header for the PNIO-CM bodies; Ethernet + 802.1Q + FrameID 0xFC01/0xFE01 for RTA), dissected
//! by Wireshark, checked for malformed/expert problems, and the dissected field values are
//! compared with what was encoded.
//!
//! `frames` builds the frames and dissects them; the tests are grouped by what they send:
//! `read` (Read requests/responses: I&M, identification, diagnosis, errors), `write` (single and
//! multiple Write), `alarm` (alarm notifications and RTA), `pdev` (PDPortDataReal).

mod alarm;
mod frames;
mod pdev;
mod read;
mod write;

//! scapy as a second independent oracle (besides tshark): (a) scapy builds a frame from given
//! parameters and our codec must parse the same field values out of it; (b) our codec emits a
//! frame and scapy's dissection must show the field values we encoded.
//!
//! The scapy side is `tests/scapy/pn_scapy.py` (scapy.contrib.pnio, pnio_dcp, pnio_rpc, lldp).
//! Under `CI=true` a missing python3/scapy fails these tests; locally they are skipped with a
//! message. Where scapy itself builds something wrong, the builder works around it and
//! docs/protocol-notes/fuzz-scapy.md records the disagreement and who is right.
//!
//! `scapy` runs the scapy side and reads its answers; `scapy_builds` holds (a) for DCP, cyclic,
//! connect, PrmEnd, read/write and LLDP frames, `we_emit` holds (b) for the same frames, and
//! `write_and_alarm` holds both directions for the multiple write and the alarm notification
//! and the NDR MaximumCount conventions.

mod scapy;
mod scapy_builds;
mod we_emit;
mod write_and_alarm;

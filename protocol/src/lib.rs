//! `pn-protocol`: PROFINET IO wire formats and sans-IO protocol machines, for both roles.
//!
//! * [`wire`]: checked zero-copy views over untrusted bytes plus owned representations
//!   (`Repr`) that parse from and emit into them, in the style of smoltcp's `wire` module.
//!   Field offsets are declared once per format, in a private `field` module.
//! * [`machine`]: sans-IO state machines (RTA alarm transport, cyclic provider/consumer with
//!   data-hold watchdog, RPC fragment reassembly, DCP response delay). They take bytes and the
//!   current time as inputs and return frames to send and the next deadline; nothing here
//!   touches sockets, clocks, files or threads.
//! * [`fuzz`]: one entry point per top-level decoder, shared by the cargo-fuzz targets and the
//!   stable-toolchain robustness tests.
//!
//! No decoder panics, loops forever or allocates without bound on any input: every length is
//! checked against the buffer before it is used, and collections grow at most by one element
//! per consumed input byte range.

#![forbid(unsafe_code)]

/// The fuzz entry points: only for the fuzzers and the corpus replay test (cargo feature `fuzz`).
#[cfg(feature = "fuzz")]
pub mod fuzz;
pub mod machine;
pub mod sim;
pub mod time;
pub mod wire;

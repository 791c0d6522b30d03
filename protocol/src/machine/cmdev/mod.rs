//! CMDEV: context management, device side (IEC 61158-6-10 "CMDEV" state machine and its
//! "CMRPC" request checks). A device accepts, checks and answers the controller's
//! connection-management requests here; the daemon only carries the bytes.
//!
//! * [`connect`]: the checks of a Connect request and the FrameIDs of its response.

pub mod connect;

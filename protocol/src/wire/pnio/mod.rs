//! PNIO blocks carried in the NDR data of PNIO-CM (DCE/RPC) calls, in alarm notifications and
//! in records. Every block starts with a [`BlockHeader`]; each block module declares its own
//! BlockType constants next to its representation.

pub mod block;
pub mod status;

// Connection management (Connect, Control, Release).
pub mod alarm_cr;
pub mod ar;
pub mod cm;
pub mod control;
pub mod example;
pub mod expected;
pub mod iocr;
pub mod module_diff;

// Records, identification, diagnosis and alarms.
pub mod alarm;
pub mod diagnosis;
pub mod ident;
pub mod im;
pub mod pdev;
pub mod record;

pub use block::{BlockHeader, BlockView};
pub use status::PnioStatus;

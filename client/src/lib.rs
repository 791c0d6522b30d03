//! pn-client: typed client for the PROFINET IO device service's local HTTP API
//! (`/work/shared/spec/http-interface.md`, sections 4.1, 4.2, 7.5 and 8), and the `pnctl` CLI.
//!
//! * [`Client`]: async, one method per endpoint, optional API key, the timeouts of section 8
//!   ([`Timeouts`]); unknown states map to [`State::Unknown`]; `errorCode` is surfaced in every
//!   result and error; failures are [`Error`]s carrying a [`CallResult`] (the 7.5 enumeration
//!   plus [`CallResult::ServiceUnreachable`]; mapping table in [`error`]).
//! * [`Address`]: the I/Q/M/DB scheme of 4.1 (`"DB1.DBX0.3".parse()`), typed values
//!   ([`ValueType`], [`Value`], [`PlcValue`]).
//! * [`ProcessData`]: cached (20 ms) reads and merged, periodically flushed (20 ms) writes by
//!   address, flush errors surfaced.
//! * [`Watcher`]: change events by polling (reference period 3 s).
//! * [`blocking`]: the same without async.
//! * [`native`]: the native in-process mode, which fails at once with `NotSupported`.
//!
//! ```no_run
//! # async fn demo() -> pn_client::Result<()> {
//! use pn_client::{Address, Client};
//! let client = Client::new(None);
//! let st = client.status().await?;
//! println!("{} connected={}", st.state, st.connected);
//! let pd = client.process_data();
//! pd.set(&"IW2".parse::<Address>()?, 0x1234u16).await?;
//! pd.flush().await?;
//! let q: u8 = pd.get(&"QB0".parse()?).await?;
//! # let _ = q; Ok(()) }
//! ```

pub mod address;
pub mod blocking;
pub mod client;
pub mod error;
pub mod events;
pub mod http;
pub mod model;
pub mod native;
pub mod process;
pub mod proxy;

#[cfg(test)]
mod edge_tests;
#[cfg(test)]
mod fake;

pub use address::{Access, Address, Area, PlcValue, Side, Value, ValueType};
pub use client::{Client, ClientOptions, DiagEntry, Timeouts, DEFAULT_BASE_URL};
pub use error::{CallResult, Error, Result};
pub use events::{Event, Watcher};
pub use model::*;
pub use process::ProcessData;

//! Wire formats: checked views (`Frame`, `Packet`, ...) over untrusted bytes and owned
//! representations (`...Repr`) that parse from and emit into them.
//!
//! Conventions, shared by every module here (see smoltcp `src/wire/`):
//! * a view `Foo<T: AsRef<[u8]>>` has `new_checked` (which calls `check_len`), `into_inner`,
//!   getters for each field, and setters when `T: AsMut<[u8]>`. The getters of the fixed fields
//!   index the buffer (`field::get_*`): a view exists only after its length check, so they never
//!   read past it and never stand in a 0 for a missing byte. `new_unchecked` is crate-internal,
//!   for buffers whose length the caller has established (emitting into a buffer sized for it);
//!   outside the crate a view comes from `new_checked` only:
//!
//!   ```compile_fail
//!   let f = pn_protocol::wire::ethernet::Frame::new_unchecked(&[0u8; 3][..]);
//!   ```
//! * field offsets live in a private `mod field` of each format as `Field` / `Rest` constants;
//! * a `FooRepr` has `parse(&Foo<&T>) -> Result<FooRepr>`, `buffer_len()` and
//!   `emit(&mut Foo<&mut T>)`; emit never panics when the buffer has `buffer_len()` bytes;
//! * every decoder returns [`Error`] for any byte string instead of panicking.

mod error;
pub mod field;

pub use error::{Error, Result};

pub mod arp;
pub mod dcp;
pub mod ethernet;
pub mod ip;
pub mod lldp;
pub mod llmnr;
pub mod pnio;
pub mod rpc;
pub mod rt;
pub mod rta;
pub mod snmp;

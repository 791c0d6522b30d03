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
//! * a `FooRepr` has `parse(...) -> Result<FooRepr>` and serialises in exactly one shape, the
//!   [`Emit`] trait: `buffer_len()` (the exact number of bytes), `emit(&mut Writer)` (append
//!   them) and the provided `to_bytes()`. Emitting fails (with [`Error`], never a panic) only
//!   where a value is unrepresentable (a list longer than its count field and the like); a
//!   failed emit of a block or a sequence leaves the writer as it found it. Formats
//!   whose byte order is chosen by the enclosing packet (the NDR bodies of DCE/RPC) emit
//!   through the [`rpc::Ndr`] wrapper, which pairs the body with its DREP;
//! * the one exception is the real-time path, which must not allocate: cyclic frames are
//!   filled in place into a caller-owned buffer through the view API
//!   ([`rt::fill_cyclic_frame`], [`ethernet::Frame::fill_header`]). That is a view setter, not
//!   a second way to serialise a Repr;
//! * every decoder returns [`Error`] for any byte string instead of panicking.

mod error;
pub mod field;

pub use error::{Error, Result};
pub use field::Writer;

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

#[cfg(test)]
mod emit_tests;

/// The single serialisation shape of every owned representation in `wire/`.
///
/// `emit` appends to a [`Writer`] so that composite messages (a Connect request holding
/// blocks, a record PDU holding headers) build one buffer without intermediate vectors; the
/// length is separate so callers can size buffers up front (and tests check that it is exact).
pub trait Emit {
    /// The exact number of bytes [`Emit::emit`] appends.
    fn buffer_len(&self) -> usize;

    /// Append the wire form to `w`. Fails when the value cannot be represented on the wire
    /// (a string or list longer than its length field, a count that does not match a type).
    fn emit(&self, w: &mut Writer) -> Result<()>;

    /// The wire form as a new vector (allocated with capacity `buffer_len()`).
    fn to_bytes(&self) -> Result<Vec<u8>> {
        let mut w = Writer::with_capacity(self.buffer_len());
        self.emit(&mut w)?;
        Ok(w.into_inner())
    }
}

/// A sequence of values emits back to back: the record data of a diagnosis read (DiagnosisData
/// blocks), of I&M0FilterData, the TLVs of an LLDPDU.
impl<T: Emit> Emit for [T] {
    fn buffer_len(&self) -> usize {
        self.iter()
            .map(Emit::buffer_len)
            .fold(0usize, usize::saturating_add)
    }

    fn emit(&self, w: &mut Writer) -> Result<()> {
        let start = w.len();
        let r = self.iter().try_for_each(|x| x.emit(w));
        if r.is_err() {
            w.truncate(start);
        }
        r
    }
}

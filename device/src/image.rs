//! The process image shared between the HTTP API (tokio side) and the stack's cyclic thread.
//!
//! # Areas and directions (see docs/decisions.md, "I/Q model")
//!
//! * **I area** (`inputHex` in `GET /api/io`): data the **controller sends to the device** (the
//!   IO data of the controller's cyclic frame). Written only by the cyclic thread
//!   ([`ProcessImage::cyclic_write_input`]), read by the API.
//! * **Q area** (`outputHex`): data the **device sends to the controller**. Written only by the API
//!   (`POST /api/io` -> [`ProcessImage::write_output`]), copied by the cyclic thread into every
//!   input frame it sends ([`ProcessImage::cyclic_read_output`]).
//!
//! # Concurrency: two seqlocks over atomic bytes (why, see docs/architecture-notes/device-service.md)
//!
//! Each area is a sequence lock whose payload is an array of `AtomicU8` (so concurrent access is
//! never a data race in the Rust memory model; all byte accesses are `Relaxed`, ordering comes
//! from the sequence counter and fences). The cyclic thread never waits:
//!
//! * I area: the cyclic thread is the **only writer**; a seqlock write is wait-free. API readers
//!   retry (with `yield_now`) until they see a consistent copy.
//! * Q area: API writers are serialised among themselves by a `Mutex` that the cyclic thread never
//!   touches. The cyclic thread reads with a **bounded** number of attempts
//!   ([`CYCLIC_READ_ATTEMPTS`]); if a writer is mid-copy every time (e.g. preempted while holding
//!   an odd sequence number), the read reports [`QReadBusy`] and the cyclic thread sends the
//!   previous frame's content again. The pending write is not lost: the Q generation it
//!   produced is still ahead of the sent generation, so `outputSyncedToDriver` stays `false`
//!   until a later cycle picks it up.
//!
//! Nothing on the cyclic side allocates, locks, logs or touches tokio.
//!
//! # "Written but not yet sent" (`outputSyncedToDriver`)
//!
//! Every accepted Q write increments the *Q write generation* (it starts at 1: the initial
//! all-zero content is generation 1, which has not been sent yet). The cyclic thread learns the
//! generation of the content it copied from [`ProcessImage::cyclic_read_output`] and, once the
//! frame carrying it has been handed to the NIC, calls [`ProcessImage::cyclic_mark_output_sent`].
//! `outputSyncedToDriver == (sent generation >= write generation)`.
//!
//! # Epoch
//!
//! [`ProcessImage::epoch`] (`epoch` in `GET /api/io`, `ioEpoch` in `GET /api/status`) is a
//! generation counter incremented on every accepted Q write and on every I-area update from a
//! received frame. It only grows while the daemon runs; a fresh start with a resized image
//! carries the counter over.

use std::sync::atomic::{fence, AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::Mutex;

// The area sizes are part of the runtime configuration format (spec 2.11: the summed layout
// lengths clamp to 1..1440), which lives in `pn-device-formats`.
pub use pn_device_formats::config::{clamp_area_len, MAX_AREA_LEN, MIN_AREA_LEN};
/// IOPS / IOCS value meaning GOOD (spec 2.2).
pub const IOXS_GOOD: u8 = 0x80;
/// IOPS / IOCS value meaning BAD (by the IO device / controller, no further detail).
pub const IOXS_BAD: u8 = 0x00;
/// How many times [`ProcessImage::cyclic_read_output`] tries to get a consistent copy.
pub const CYCLIC_READ_ATTEMPTS: u32 = 4;

/// A seqlock-protected byte area.
struct SeqArea {
    seq: AtomicU64,
    data: Box<[AtomicU8]>,
}

impl SeqArea {
    fn new(len: usize) -> Self {
        SeqArea {
            seq: AtomicU64::new(0),
            data: (0..len).map(|_| AtomicU8::new(0)).collect(),
        }
    }

    fn len(&self) -> usize {
        self.data.len()
    }

    /// Writer side. Caller guarantees a single writer at a time.
    fn write(&self, offset: usize, bytes: &[u8], inside: impl FnOnce()) {
        let s = self.seq.load(Ordering::Relaxed);
        self.seq.store(s.wrapping_add(1), Ordering::Relaxed);
        fence(Ordering::Release);
        for (cell, b) in self.data.iter().skip(offset).zip(bytes) {
            cell.store(*b, Ordering::Relaxed);
        }
        inside();
        self.seq.store(s.wrapping_add(2), Ordering::Release);
    }

    /// One read attempt into `out` (min of both lengths). `inside` runs within the read window
    /// and its result is only returned when the copy was consistent.
    fn try_read<R>(&self, out: &mut [u8], inside: impl Fn() -> R) -> Option<R> {
        let s1 = self.seq.load(Ordering::Acquire);
        if s1 & 1 == 1 {
            return None;
        }
        for (o, cell) in out.iter_mut().zip(self.data.iter()) {
            *o = cell.load(Ordering::Relaxed);
        }
        let r = inside();
        fence(Ordering::Acquire);
        let s2 = self.seq.load(Ordering::Relaxed);
        (s1 == s2).then_some(r)
    }

    /// Blocking-free but retrying read for the API side (never used by the cyclic thread).
    fn read_retry<R>(&self, out: &mut [u8], inside: impl Fn() -> R) -> R {
        loop {
            if let Some(r) = self.try_read(out, &inside) {
                return r;
            }
            std::thread::yield_now();
        }
    }
}

/// The cyclic thread could not get a consistent copy of the Q area in
/// [`CYCLIC_READ_ATTEMPTS`] attempts (an API writer was mid-copy). Send the previous content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QReadBusy;

/// Error of [`ProcessImage::write_output`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteError {
    /// `offset + data.len()` exceeds the Q area length.
    OutOfRange {
        offset: usize,
        len: usize,
        area_len: usize,
    },
}

impl std::fmt::Display for WriteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WriteError::OutOfRange {
                offset,
                len,
                area_len,
            } => write!(
                f,
                "offset {offset} + length {len} exceeds the {area_len} bytes of I (the PLC's inputs, outputHex)"
            ),
        }
    }
}

/// A consistent copy of the image for `GET /api/io` (API side only; allocates).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageSnapshot {
    pub epoch: u64,
    /// I area (controller -> device).
    pub input: Vec<u8>,
    /// Q area (device -> controller).
    pub output: Vec<u8>,
    /// IOPS the controller sent with the I data.
    pub input_iops: u8,
    /// IOCS the device returns for the I data.
    pub input_iocs: u8,
    /// IOPS the device sends with the Q data.
    pub output_iops: u8,
    /// IOCS the controller returned for the Q data.
    pub output_iocs: u8,
    /// I data was received from the controller in the current connection with IOPS GOOD.
    pub input_valid: bool,
    /// Current Q content has been put into a sent frame.
    pub output_synced: bool,
}

/// The process image. Create one per fresh start with the configured sizes; share it as
/// `Arc<ProcessImage>` between the runtime/API and the stack.
pub struct ProcessImage {
    input: SeqArea,
    output: SeqArea,
    /// Serialises API-side Q writers. The cyclic thread never touches it.
    output_writer: Mutex<()>,
    /// Generation of the current Q content (starts at 1). Written inside the Q seqlock window.
    output_write_gen: AtomicU64,
    /// Highest Q generation the cyclic thread has put into a sent frame (starts at 0).
    output_sent_gen: AtomicU64,
    epoch: AtomicU64,
    input_iops: AtomicU8,
    input_iocs: AtomicU8,
    output_iops: AtomicU8,
    output_iocs: AtomicU8,
    input_valid: AtomicBool,
}

impl std::fmt::Debug for ProcessImage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProcessImage")
            .field("input_len", &self.input_len())
            .field("output_len", &self.output_len())
            .field("epoch", &self.epoch())
            .finish_non_exhaustive()
    }
}

impl ProcessImage {
    /// New image with both areas zeroed. Lengths are clamped to 1..=1440.
    pub fn new(input_len: usize, output_len: usize) -> Self {
        ProcessImage {
            input: SeqArea::new(clamp_area_len(input_len)),
            output: SeqArea::new(clamp_area_len(output_len)),
            output_writer: Mutex::new(()),
            output_write_gen: AtomicU64::new(1),
            output_sent_gen: AtomicU64::new(0),
            epoch: AtomicU64::new(0),
            input_iops: AtomicU8::new(IOXS_BAD),
            input_iocs: AtomicU8::new(IOXS_BAD),
            output_iops: AtomicU8::new(IOXS_BAD),
            output_iocs: AtomicU8::new(IOXS_BAD),
            input_valid: AtomicBool::new(false),
        }
    }

    /// A new image with other sizes that keeps this image's Q content (the overlapping prefix),
    /// its pending ("not yet sent") state and its epoch. Used by a fresh start after a reload
    /// changed the layout: a Q write is never lost (spec 1.9).
    pub fn resized(&self, input_len: usize, output_len: usize) -> Self {
        let new = ProcessImage::new(input_len, output_len);
        let mut q = vec![0u8; self.output_len()];
        let gen = self
            .output
            .read_retry(&mut q, || self.output_write_gen.load(Ordering::Relaxed));
        let n = q.len().min(new.output_len());
        new.output.write(0, &q[..n], || {});
        new.output_write_gen.store(gen.max(1), Ordering::Relaxed);
        // Nothing of the new image has been sent yet.
        new.output_sent_gen.store(0, Ordering::Relaxed);
        new.epoch.store(self.epoch(), Ordering::Relaxed);
        new
    }

    /// Length of the I area (controller -> device).
    pub fn input_len(&self) -> usize {
        self.input.len()
    }

    /// Length of the Q area (device -> controller).
    pub fn output_len(&self) -> usize {
        self.output.len()
    }

    /// Current generation counter (`epoch` / `ioEpoch`).
    pub fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::Acquire)
    }

    // ---------------------------------------------------------------- API side

    /// Write `data` into the Q area at `offset` (API side, `POST /api/io`). Accepted in every
    /// runtime state. Returns the Q generation of this write; pass it to
    /// [`ProcessImage::output_sent_covers`] to learn whether it has been sent.
    pub fn write_output(&self, offset: usize, data: &[u8]) -> Result<u64, WriteError> {
        let area_len = self.output_len();
        let end = offset.checked_add(data.len());
        if !matches!(end, Some(e) if e <= area_len) {
            return Err(WriteError::OutOfRange {
                offset,
                len: data.len(),
                area_len,
            });
        }
        let _guard = self.output_writer.lock().unwrap_or_else(|p| p.into_inner());
        let gen = self
            .output_write_gen
            .load(Ordering::Relaxed)
            .wrapping_add(1);
        self.output.write(offset, data, || {
            self.output_write_gen.store(gen, Ordering::Relaxed);
        });
        self.epoch.fetch_add(1, Ordering::AcqRel);
        Ok(gen)
    }

    /// True when the cyclic thread has sent Q content of generation `gen` or newer.
    pub fn output_sent_covers(&self, gen: u64) -> bool {
        self.output_sent_gen.load(Ordering::Acquire) >= gen
    }

    /// True when the current Q content has been put into a sent frame (`outputSyncedToDriver`).
    pub fn output_synced(&self) -> bool {
        self.output_sent_covers(self.output_write_gen.load(Ordering::Acquire))
    }

    /// Consistent copy of everything for `GET /api/io`.
    pub fn snapshot(&self) -> ImageSnapshot {
        let mut input = vec![0u8; self.input_len()];
        let mut output = vec![0u8; self.output_len()];
        let (input_iops, input_valid) = self.input.read_retry(&mut input, || {
            (
                self.input_iops.load(Ordering::Relaxed),
                self.input_valid.load(Ordering::Relaxed),
            )
        });
        self.output.read_retry(&mut output, || ());
        ImageSnapshot {
            epoch: self.epoch(),
            input,
            output,
            input_iops,
            input_iocs: self.input_iocs.load(Ordering::Acquire),
            output_iops: self.output_iops.load(Ordering::Acquire),
            output_iocs: self.output_iocs.load(Ordering::Acquire),
            input_valid,
            output_synced: self.output_synced(),
        }
    }

    // ---------------------------------------------------------------- cyclic side
    // Everything below is allocation-free and never blocks.

    /// Copy the Q area into `out` (at most `min(out.len(), output_len())` bytes) for the next
    /// input frame. Returns the Q generation of the copied content; after the frame has been
    /// handed to the NIC call [`ProcessImage::cyclic_mark_output_sent`] with it.
    ///
    /// On `Err(QReadBusy)` the content of `out` is unspecified: read into a scratch buffer and
    /// copy it into the frame only on `Ok`, otherwise resend the previous frame's data.
    pub fn cyclic_read_output(&self, out: &mut [u8]) -> Result<u64, QReadBusy> {
        for _ in 0..CYCLIC_READ_ATTEMPTS {
            if let Some(gen) = self
                .output
                .try_read(out, || self.output_write_gen.load(Ordering::Relaxed))
            {
                return Ok(gen);
            }
            std::hint::spin_loop();
        }
        Err(QReadBusy)
    }

    /// Record that a frame carrying Q generation `gen` has been sent.
    pub fn cyclic_mark_output_sent(&self, gen: u64) {
        self.output_sent_gen.fetch_max(gen, Ordering::AcqRel);
    }

    /// Store the IO data of a received controller frame into the I area. Only ONE thread may
    /// call this (the cyclic/receive thread): it is the single writer of the I-area seqlock; two
    /// concurrent writers would corrupt the sequence. `iops` is the controller's provider
    /// status for this data; `output_iocs` is the controller's consumer status for the device's
    /// Q data carried in the same frame. Bumps the epoch. `data` longer than the area is
    /// truncated, shorter data leaves the rest unchanged.
    pub fn cyclic_write_input(&self, data: &[u8], iops: u8, output_iocs: u8) {
        let n = data.len().min(self.input_len());
        self.input.write(0, &data[..n], || {
            self.input_iops.store(iops, Ordering::Relaxed);
            self.input_valid.store(iops == IOXS_GOOD, Ordering::Relaxed);
        });
        self.output_iocs.store(output_iocs, Ordering::Release);
        self.epoch.fetch_add(1, Ordering::AcqRel);
    }

    /// Set the device's own status bytes: the IOPS it sends with the Q data and the IOCS it
    /// returns for the I data (e.g. both GOOD while in data exchange, BAD on abort).
    pub fn set_device_status(&self, output_iops: u8, input_iocs: u8) {
        self.output_iops.store(output_iops, Ordering::Release);
        self.input_iocs.store(input_iocs, Ordering::Release);
    }

    /// Mark the I area as not valid (connection lost / data plane stopped). The data itself is
    /// kept (last received values). Statuses received from the controller become BAD.
    /// Only flags are written (no seqlock write), so this may be called from any thread, also
    /// while the cyclic thread runs.
    pub fn invalidate_input(&self) {
        self.input_valid.store(false, Ordering::Release);
        self.input_iops.store(IOXS_BAD, Ordering::Release);
        self.output_iocs.store(IOXS_BAD, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn sizes_are_clamped() {
        let img = ProcessImage::new(0, 5000);
        assert_eq!(img.input_len(), 1);
        assert_eq!(img.output_len(), 1440);
    }

    #[test]
    fn write_bounds_checked() {
        let img = ProcessImage::new(4, 4);
        assert!(img.write_output(0, &[1, 2, 3, 4]).is_ok());
        assert!(img.write_output(3, &[1]).is_ok());
        assert_eq!(
            img.write_output(3, &[1, 2]),
            Err(WriteError::OutOfRange {
                offset: 3,
                len: 2,
                area_len: 4
            })
        );
        assert!(img.write_output(usize::MAX, &[1]).is_err());
        assert_eq!(img.snapshot().output, vec![1, 2, 3, 1]);
    }

    #[test]
    fn synced_tracks_generations() {
        let img = ProcessImage::new(2, 2);
        assert!(!img.output_synced(), "initial content has never been sent");
        let mut buf = [0u8; 2];
        let g = img.cyclic_read_output(&mut buf).unwrap();
        img.cyclic_mark_output_sent(g);
        assert!(img.output_synced());
        let w = img.write_output(0, &[7]).unwrap();
        assert!(!img.output_synced());
        assert!(!img.output_sent_covers(w));
        let g = img.cyclic_read_output(&mut buf).unwrap();
        assert_eq!(g, w);
        assert_eq!(buf, [7, 0]);
        img.cyclic_mark_output_sent(g);
        assert!(img.output_sent_covers(w) && img.output_synced());
    }

    #[test]
    fn resize_keeps_pending_q_and_epoch() {
        let img = ProcessImage::new(2, 4);
        img.write_output(0, &[1, 2, 3, 4]).unwrap();
        let e = img.epoch();
        let r = img.resized(8, 2);
        assert_eq!(r.snapshot().output, vec![1, 2]);
        assert_eq!(r.input_len(), 8);
        assert!(!r.output_synced());
        assert_eq!(r.epoch(), e);
    }

    #[test]
    fn input_write_and_invalidate() {
        let img = ProcessImage::new(3, 1);
        let e0 = img.epoch();
        img.cyclic_write_input(&[9, 8, 7, 6], IOXS_GOOD, IOXS_GOOD);
        let s = img.snapshot();
        assert_eq!(s.input, vec![9, 8, 7]);
        assert!(s.input_valid);
        assert_eq!(s.output_iocs, IOXS_GOOD);
        assert!(s.epoch > e0);
        img.invalidate_input();
        let s = img.snapshot();
        assert!(!s.input_valid);
        assert_eq!(s.input, vec![9, 8, 7]);
        assert_eq!(s.input_iops, IOXS_BAD);
    }

    /// Torn reads must never be observed: a writer always writes a uniform pattern.
    #[test]
    fn concurrent_reads_are_consistent() {
        let img = Arc::new(ProcessImage::new(64, 64));
        let w = {
            let img = img.clone();
            std::thread::spawn(move || {
                for i in 0..20_000u32 {
                    let b = (i % 251) as u8;
                    img.write_output(0, &[b; 64]).unwrap();
                    img.cyclic_write_input(&[b; 64], IOXS_GOOD, IOXS_GOOD);
                }
            })
        };
        let mut buf = [0u8; 64];
        let mut ok = 0;
        while !w.is_finished() {
            if img.cyclic_read_output(&mut buf).is_ok() {
                assert!(buf.iter().all(|&x| x == buf[0]), "torn Q read");
                ok += 1;
            }
            let s = img.snapshot();
            assert!(s.input.iter().all(|&x| x == s.input[0]), "torn I read");
        }
        w.join().unwrap();
        assert!(img.cyclic_read_output(&mut buf).is_ok());
        assert!(ok > 0);
    }
}

//! Cached, write-merging access to the process data by address (spec 4.1).
//!
//! * Reads use a snapshot of `GET /api/io` cached for [`CACHE_TTL`] (20 ms).
//! * Writes go into one dirty region (the smallest byte range covering every pending write; the
//!   bytes in between come from the current view) that a background task flushes with one
//!   `POST /api/io` every [`FLUSH_PERIOD`] (20 ms). [`ProcessData::flush`] flushes at once.
//! * Reads see pending writes (the view is snapshot + in-flight region overlaid).
//! * A flush error is never dropped: the background flusher records it and the next call on the
//!   handle (read, write or `flush`) returns it (once). After a transport failure
//!   ([`CallResult::ServiceUnreachable`], [`CallResult::Busy`]) the region stays pending and is
//!   retried; after any other failure (the service refused the write) it is discarded.
//! * Client `Q` addresses are read-only ([`CallResult::NotSupported`]); `DB` > 1 is
//!   [`CallResult::NotFound`]; see [`crate::address`] for the area model.
//! * The handle needs a running tokio runtime (the flusher is a spawned task); the flusher ends
//!   when the last clone of the handle is dropped or [`ProcessData::close`] is called.

use std::sync::{Arc, Weak};
use std::time::Duration;

use tokio::sync::Mutex;
use tokio::time::Instant;

use crate::address::{Access, Address, PlcValue, Side, Value, ValueType};
use crate::client::Client;
use crate::error::{CallResult, Error, Result};
use crate::model::{IoSnapshot, IoWriteResponse};

/// How long a snapshot is reused.
pub const CACHE_TTL: Duration = Duration::from_millis(20);
/// Flush period of the dirty region.
pub const FLUSH_PERIOD: Duration = Duration::from_millis(20);

#[derive(Debug)]
struct Cached {
    at: Instant,
    meta: IoSnapshot,
    /// `inputHex` (client `Q`).
    input: Vec<u8>,
    /// `outputHex` (client `I`/`M`/`DB1`), as last seen from the service.
    output: Vec<u8>,
}

#[derive(Debug, Default)]
struct State {
    closed: bool,
    snap: Option<Cached>,
    /// Pending region: start offset and bytes.
    dirty: Option<(usize, Vec<u8>)>,
    /// Recorded flush failure, returned by the next call.
    flush_error: Option<Error>,
    last_write: Option<IoWriteResponse>,
    flushes: u64,
}

#[derive(Debug)]
struct Shared {
    client: Client,
    state: Mutex<State>,
}

/// Handle to the process data (clones share cache and dirty region).
#[derive(Debug, Clone)]
pub struct ProcessData {
    shared: Arc<Shared>,
}

impl ProcessData {
    /// Create the handle and start its background flusher (needs a tokio runtime).
    pub fn new(client: Client) -> Self {
        let shared = Arc::new(Shared {
            client,
            state: Mutex::new(State::default()),
        });
        let weak = Arc::downgrade(&shared);
        tokio::spawn(flusher(weak));
        ProcessData { shared }
    }

    async fn lock_checked(&self) -> Result<tokio::sync::MutexGuard<'_, State>> {
        let mut st = self.shared.state.lock().await;
        if st.closed {
            return Err(Error::new(
                CallResult::InvalidHandle,
                "process-data handle is closed",
            ));
        }
        if let Some(e) = st.flush_error.take() {
            return Err(e);
        }
        Ok(st)
    }

    /// Refresh the snapshot when it is older than the TTL (or `force`).
    async fn refresh(&self, st: &mut State, force: bool) -> Result<()> {
        let fresh = st.snap.as_ref().is_some_and(|c| c.at.elapsed() < CACHE_TTL);
        if fresh && !force {
            return Ok(());
        }
        let t = self.shared.client.timeouts().io_path;
        let meta = self.shared.client.io_with_timeout(t).await?;
        let input = meta.input()?;
        let output = meta.output()?;
        st.snap = Some(Cached {
            at: Instant::now(),
            meta,
            input,
            output,
        });
        Ok(())
    }

    /// The current view of one side (writable side with the pending region overlaid).
    fn view(st: &State, side: Side) -> Vec<u8> {
        let Some(c) = &st.snap else {
            return Vec::new();
        };
        match side {
            Side::ReadOnly => c.input.clone(),
            Side::Writable => {
                let mut v = c.output.clone();
                if let Some((start, bytes)) = &st.dirty {
                    for (i, b) in bytes.iter().enumerate() {
                        if let Some(slot) = v.get_mut(start + i) {
                            *slot = *b;
                        }
                    }
                }
                v
            }
        }
    }

    fn range_check(addr_text: &str, offset: usize, len: usize, area_len: usize) -> Result<()> {
        if offset >= area_len {
            return Err(Error::invalid(format!(
                "{addr_text}: byte offset {offset} outside the area (length {area_len})"
            )));
        }
        if offset + len > area_len {
            return Err(Error::new(
                CallResult::LengthMismatch,
                format!(
                    "{addr_text}: {len} bytes at offset {offset} run past the end of the area (length {area_len})"
                ),
            ));
        }
        Ok(())
    }

    /// Read `len` raw bytes at `offset` of the side `addr` reaches (the address's width is
    /// ignored; its area and byte offset are used).
    pub async fn read_bytes(&self, addr: &Address, len: usize) -> Result<Vec<u8>> {
        let side = addr.side()?;
        let mut st = self.lock_checked().await?;
        self.refresh(&mut st, false).await?;
        let v = Self::view(&st, side);
        let off = addr.offset as usize;
        Self::range_check(&addr.to_string(), off, len.max(1), v.len())?;
        Ok(v[off..off + len].to_vec())
    }

    /// Read a value of type `ty` at `addr` (see [`Address::check_type`]).
    pub async fn read_value(&self, addr: &Address, ty: ValueType) -> Result<Value> {
        addr.check_type(ty)?;
        let n = ty.len().max(1);
        let bytes = self.read_bytes(addr, n).await?;
        let bit = match addr.access {
            Access::Bit(b) => b,
            _ => 0,
        };
        ty.decode(&bytes, bit)
    }

    /// Read at `addr` with the type its form implies (bit -> bool, B -> u8, W -> u16, D -> u32).
    pub async fn read(&self, addr: &Address) -> Result<Value> {
        self.read_value(addr, addr.default_type()).await
    }

    /// Typed read: `pd.get::<u16>(&"IW2".parse()?)`.
    pub async fn get<T: PlcValue>(&self, addr: &Address) -> Result<T> {
        let v = self.read_value(addr, T::TYPE).await?;
        T::from_value(v).ok_or_else(|| Error::new(CallResult::NativeError, "type mismatch"))
    }

    /// Typed write: `pd.set(&"IW2".parse()?, 0x1234u16)`.
    pub async fn set<T: PlcValue>(&self, addr: &Address, v: T) -> Result<()> {
        self.write_value(addr, v.into_value()).await
    }

    /// Write a typed value (merged into the dirty region; flushed within 20 ms).
    pub async fn write_value(&self, addr: &Address, v: Value) -> Result<()> {
        addr.check_writable()?;
        addr.check_type(v.value_type())?;
        match (addr.access, v) {
            (Access::Bit(bit), Value::Bool(b)) => {
                let mut st = self.lock_checked().await?;
                self.refresh(&mut st, false).await?;
                let view = Self::view(&st, Side::Writable);
                let off = addr.offset as usize;
                Self::range_check(&addr.to_string(), off, 1, view.len())?;
                let mut byte = view[off];
                if b {
                    byte |= 1 << bit;
                } else {
                    byte &= !(1 << bit);
                }
                Self::merge(&mut st, off, &[byte]);
                Ok(())
            }
            _ => self.write_bytes(addr, &v.to_be_bytes()).await,
        }
    }

    /// Write raw bytes at the byte offset of `addr` (width ignored; area rules apply).
    pub async fn write_bytes(&self, addr: &Address, data: &[u8]) -> Result<()> {
        addr.check_writable()?;
        if data.is_empty() {
            return Err(Error::new(CallResult::LengthMismatch, "nothing to write"));
        }
        let mut st = self.lock_checked().await?;
        self.refresh(&mut st, false).await?;
        let len = st.snap.as_ref().map(|c| c.output.len()).unwrap_or(0);
        Self::range_check(&addr.to_string(), addr.offset as usize, data.len(), len)?;
        Self::merge(&mut st, addr.offset as usize, data);
        Ok(())
    }

    /// Merge `[off, off+data.len())` into the dirty region (caller checked the range against the
    /// snapshot, which exists).
    fn merge(st: &mut State, off: usize, data: &[u8]) {
        let end = off + data.len();
        let (start, stop) = match &st.dirty {
            Some((s, b)) => ((*s).min(off), (s + b.len()).max(end)),
            None => (off, end),
        };
        let view = Self::view(st, Side::Writable);
        let mut region = view[start..stop].to_vec();
        region[off - start..end - start].copy_from_slice(data);
        st.dirty = Some((start, region));
    }

    /// Flush the dirty region now. Returns the service's answer for the flush (None when
    /// nothing was pending), or the recorded error of an earlier background flush.
    pub async fn flush(&self) -> Result<Option<IoWriteResponse>> {
        let mut st = self.lock_checked().await?;
        flush_locked(&self.shared.client, &mut st).await
    }

    /// Flush what is pending and return the service's answer to the most recent flush, whether
    /// it was this one or an earlier background one (None only when nothing was ever flushed).
    /// Use it after writes to learn `delivered` / `reasonCode`.
    pub async fn sync(&self) -> Result<Option<IoWriteResponse>> {
        let mut st = self.lock_checked().await?;
        match flush_locked(&self.shared.client, &mut st).await? {
            Some(r) => Ok(Some(r)),
            None => Ok(st.last_write.clone()),
        }
    }

    /// The answer of the most recent successful flush (delivered / queued / reasonCode).
    pub async fn last_write(&self) -> Option<IoWriteResponse> {
        self.shared.state.lock().await.last_write.clone()
    }

    /// Number of `POST /api/io` flushes sent so far (merging makes this small).
    pub async fn flush_count(&self) -> u64 {
        self.shared.state.lock().await.flushes
    }

    /// The current (possibly cached) snapshot metadata (epoch, validity flags, IOxS).
    pub async fn snapshot(&self) -> Result<IoSnapshot> {
        let mut st = self.lock_checked().await?;
        self.refresh(&mut st, false).await?;
        Ok(st.snap.as_ref().map(|c| c.meta.clone()).unwrap_or_default())
    }

    /// Drop the cache so the next read fetches a new snapshot.
    pub async fn invalidate(&self) {
        self.shared.state.lock().await.snap = None;
    }

    /// Flush what is pending, stop the flusher; later calls give [`CallResult::InvalidHandle`].
    pub async fn close(&self) -> Result<()> {
        let r = self.flush().await;
        self.shared.state.lock().await.closed = true;
        r.map(|_| ())
    }
}

/// Send the dirty region (lock held). On success the cached snapshot takes the bytes.
async fn flush_locked(client: &Client, st: &mut State) -> Result<Option<IoWriteResponse>> {
    let Some((start, bytes)) = st.dirty.take() else {
        return Ok(None);
    };
    let t = client.timeouts().io_path;
    match client.write_io_with_timeout(start as u64, &bytes, t).await {
        Ok(resp) => {
            st.flushes += 1;
            if let Some(c) = &mut st.snap {
                if let Some(dst) = c.output.get_mut(start..start + bytes.len()) {
                    dst.copy_from_slice(&bytes);
                }
            }
            st.last_write = Some(resp.clone());
            Ok(Some(resp))
        }
        Err(e) => {
            if matches!(e.kind, CallResult::ServiceUnreachable | CallResult::Busy)
                && e.http_status != Some(401)
            {
                // Keep the region pending (a later write may have been merged meanwhile: none
                // can, the lock is held).
                st.dirty = Some((start, bytes));
            }
            Err(e)
        }
    }
}

async fn flusher(weak: Weak<Shared>) {
    let mut tick = tokio::time::interval(FLUSH_PERIOD);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let Some(shared) = weak.upgrade() else {
            return;
        };
        let mut st = shared.state.lock().await;
        if st.closed {
            return;
        }
        // While an error is recorded and unreported, do not pile up more attempts.
        if st.dirty.is_some() && st.flush_error.is_none() {
            if let Err(e) = flush_locked(&shared.client, &mut st).await {
                let mut e = e;
                e.message = format!("background flush failed: {}", e.message);
                st.flush_error = Some(e);
            }
        }
    }
}

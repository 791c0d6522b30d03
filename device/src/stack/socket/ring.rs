//! A receive ring shared with the kernel ([`RxRing`], `PACKET_RX_RING`, `TPACKET_V2`):
//! the kernel writes each frame the socket accepts into the next slot of a memory area mapped
//! into the process and flags it; the process reads the frames in place and hands the slots
//! back. Reading a backlog is then a walk through memory, without a system call or a copy per
//! frame: pn-farm's one I/O thread reads about 64 000 frames a second at 64 devices and 1 ms,
//! and after a hold of its CPU a few hundred at once, while every device waits for its send.
//!
//! Why version 2 and not 3: `TPACKET_V3` hands whole blocks to the process, when a block is
//! full or its timer (at least 1 ms) expires, which would delay a cyclic frame by up to a
//! period; `TPACKET_V2` flags every frame as it arrives, and `poll(2)` wakes on it.
//!
//! Nothing the kernel writes into the ring is trusted further than its slot: a header whose
//! frame would not fit in the slot is skipped (and counted), never read past.

use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicU32, Ordering};

use super::{os_err, PACKET_OUTGOING};

/// `TP_STATUS_KERNEL`: the slot belongs to the kernel.
const TP_STATUS_KERNEL: u32 = 0;
/// `TP_STATUS_USER`: the slot holds a frame for the process.
const TP_STATUS_USER: u32 = 1;
/// `TPACKET_V2` (enum tpacket_versions).
const TPACKET_V2: libc::c_int = 1;
/// Slot size: a header (32 bytes), the source address and padding, and the longest frame
/// the socket is used for (1522 bytes with an 802.1Q tag) fit in 2 KiB.
pub const SLOT_LEN: usize = 2048;
/// Offset of the `sockaddr_ll` in a slot: the header rounded up to 16 (`TPACKET_ALIGN`).
const SLL_OFFSET: usize = (std::mem::size_of::<libc::tpacket2_hdr>() + 15) & !15;
// The kernel puts the frame at TPACKET_ALIGN(header + address + 16) (66 bytes here): a
// 1518-byte tagged frame fits with room to spare.
const _: () = assert!(SLL_OFFSET + std::mem::size_of::<libc::sockaddr_ll>() + 16 + 1518 < SLOT_LEN);
/// Slots per block: a block is one page (4 KiB), the kernel's smallest allocation.
const BLOCK_LEN: usize = 4096;

/// What a slot flagged for the process holds.
enum Slot<'a> {
    Frame(&'a [u8]),
    /// One of our own outgoing frames (kernels before 4.20 queue them).
    Own,
    /// A header whose frame would not lie inside the slot.
    Bad,
}

/// The mapped ring and where the process is in it.
pub struct RxRing {
    base: *mut u8,
    len: usize,
    slots: usize,
    next: usize,
    /// Slots whose header the kernel wrote but whose frame did not fit the slot (never
    /// expected from a correct kernel; counted rather than trusted).
    bad: u64,
}

// The mapping keeps the socket's ring alive by itself (the kernel holds the socket while it is
// mapped), so the ring stays valid even if its `PnSocket` is dropped first.
// SAFETY: the mapping is owned by the ring alone (the kernel writes into it, the process
// reads through `&mut self`), so moving it to another thread is sound.
unsafe impl Send for RxRing {}

impl RxRing {
    /// Set up a ring of at least `slots` frames on `fd`, an `AF_PACKET` socket not yet bound
    /// (so that no frame is queued outside the ring). `slots` is rounded up to whole pages
    /// and bounded to 16 384 (32 MiB).
    pub fn attach(fd: RawFd, slots: usize) -> io::Result<RxRing> {
        let per_block = BLOCK_LEN / SLOT_LEN;
        let blocks = slots.clamp(per_block, 16_384).div_ceil(per_block);
        let version = TPACKET_V2;
        setsockopt(fd, libc::PACKET_VERSION, &version)?;
        let req = libc::tpacket_req {
            tp_block_size: BLOCK_LEN as libc::c_uint,
            tp_block_nr: blocks as libc::c_uint,
            tp_frame_size: SLOT_LEN as libc::c_uint,
            tp_frame_nr: (blocks * per_block) as libc::c_uint,
        };
        setsockopt(fd, libc::PACKET_RX_RING, &req)?;
        let len = blocks * BLOCK_LEN;
        // SAFETY: maps the ring the kernel just allocated for this socket; checked below.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(os_err());
        }
        Ok(RxRing {
            base: base as *mut u8,
            len,
            slots: blocks * per_block,
            next: 0,
            bad: 0,
        })
    }

    /// Frames the ring holds.
    pub fn slots(&self) -> usize {
        self.slots
    }

    /// Slots skipped because the kernel's header did not describe a frame inside the slot.
    pub fn bad_slots(&self) -> u64 {
        self.bad
    }

    /// The status word of slot `i`, shared with the kernel.
    fn status(&self, i: usize) -> &AtomicU32 {
        debug_assert!(i < self.slots);
        // SAFETY: slot i lies inside the mapping (i < slots, slots * SLOT_LEN <= len); its
        // first word is the u32 tp_status, 4-byte aligned (slots are 2 KiB aligned), which the
        // kernel and the process only access whole.
        unsafe { &*(self.base.add(i * SLOT_LEN) as *const AtomicU32) }
    }

    /// Hand up to `max` frames queued now to `f`, in arrival order, and give their slots back
    /// to the kernel; never waits. Own outgoing frames (kernels before 4.20) are left out.
    /// Returns how many slots were taken (including left-out ones), so `max` bounds the work.
    pub fn read(&mut self, max: usize, mut f: impl FnMut(&[u8])) -> usize {
        let mut taken = 0;
        while taken < max {
            let i = self.next;
            // Acquire: the frame's bytes, written before the status, are visible after it.
            if self.status(i).load(Ordering::Acquire) & TP_STATUS_USER == 0 {
                break;
            }
            match self.frame(i) {
                Slot::Frame(frame) => f(frame),
                Slot::Own => {}
                Slot::Bad => self.bad += 1,
            }
            // Release: we are done reading the slot before the kernel may write it again.
            self.status(i).store(TP_STATUS_KERNEL, Ordering::Release);
            self.next = (i + 1) % self.slots;
            taken += 1;
        }
        taken
    }

    /// What slot `i` (flagged for the process) holds.
    fn frame(&self, i: usize) -> Slot<'_> {
        // SAFETY: the slot is inside the mapping and the kernel does not write it while it is
        // flagged for the process; the header and the address are plain data read unaligned.
        let (hdr, sll) = unsafe {
            let slot = self.base.add(i * SLOT_LEN);
            (
                std::ptr::read_unaligned(slot as *const libc::tpacket2_hdr),
                std::ptr::read_unaligned(slot.add(SLL_OFFSET) as *const libc::sockaddr_ll),
            )
        };
        if sll.sll_pkttype == PACKET_OUTGOING {
            return Slot::Own;
        }
        let start = usize::from(hdr.tp_mac);
        let end = start.saturating_add(hdr.tp_snaplen as usize);
        if start < SLL_OFFSET || end > SLOT_LEN {
            return Slot::Bad;
        }
        // SAFETY: start..end lies inside slot i (checked above), owned by us until released.
        Slot::Frame(unsafe {
            std::slice::from_raw_parts(self.base.add(i * SLOT_LEN + start), end - start)
        })
    }

    /// Whether a frame is waiting (what `poll(2)` would say, without the system call).
    pub fn ready(&self) -> bool {
        self.status(self.next).load(Ordering::Acquire) & TP_STATUS_USER != 0
    }
}

impl Drop for RxRing {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping made in `attach`.
        unsafe { libc::munmap(self.base as *mut libc::c_void, self.len) };
    }
}

fn setsockopt<T>(fd: RawFd, opt: libc::c_int, v: &T) -> io::Result<()> {
    // SAFETY: v points to a value of its own size for the call's duration.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_PACKET,
            opt,
            v as *const T as *const libc::c_void,
            std::mem::size_of::<T>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(os_err());
    }
    Ok(())
}

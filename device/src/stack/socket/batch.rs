//! Many frames per system call: [`RecvBatch`] reads up to its capacity of queued frames with
//! one `recvmmsg(2)` (non-blocking). pn-farm's one I/O thread receives every device's cyclic
//! frames on one socket: at 64 devices and 1 ms that is 64 000 frames a second, and a
//! `poll(2)` + `recvfrom(2)` pair per frame (what [`PnSocket::recv`] does) made the receive
//! side alone about 130 000 system calls a second. The sending side is batched the same way
//! (`sendmmsg(2)`, `farm/src/io.rs`).

use std::io;

use super::{os_err, PnSocket, PACKET_OUTGOING};

/// Receive buffers for up to `capacity` frames of up to `frame_len` bytes each, and the
/// `recvmmsg(2)` headers that point at them: allocated once, reused by every call (the headers'
/// pointers go into the heap blocks of the vectors, which stay put when the struct moves).
pub struct RecvBatch {
    bufs: Vec<u8>,
    frame_len: usize,
    iov: Vec<libc::iovec>,
    from: Vec<libc::sockaddr_ll>,
    msgs: Vec<libc::mmsghdr>,
    lens: Vec<usize>,
    /// Frames of the last [`RecvBatch::recv`] (own outgoing frames already left out).
    n: usize,
}

// SAFETY: the raw pointers in the headers point into the batch's own heap blocks (`bufs`,
// `iov`, `from`), which move with it; nothing else holds them, so the batch may change threads.
unsafe impl Send for RecvBatch {}

impl RecvBatch {
    pub fn new(capacity: usize, frame_len: usize) -> RecvBatch {
        let cap = capacity.clamp(1, 1024);
        let frame_len = frame_len.max(1);
        let mut bufs = vec![0u8; cap * frame_len];
        let mut iov: Vec<libc::iovec> = bufs
            .chunks_mut(frame_len)
            .map(|b| libc::iovec {
                iov_base: b.as_mut_ptr() as *mut libc::c_void,
                iov_len: b.len(),
            })
            .collect();
        // SAFETY: a zeroed sockaddr_ll / mmsghdr is a valid value of the C struct.
        let mut from: Vec<libc::sockaddr_ll> = vec![unsafe { std::mem::zeroed() }; cap];
        let msgs = (0..cap)
            .map(|i| {
                // SAFETY: as above.
                let mut m: libc::mmsghdr = unsafe { std::mem::zeroed() };
                m.msg_hdr.msg_iov = &mut iov[i];
                m.msg_hdr.msg_iovlen = 1;
                m.msg_hdr.msg_name = &mut from[i] as *mut libc::sockaddr_ll as *mut libc::c_void;
                m
            })
            .collect();
        RecvBatch {
            bufs,
            frame_len,
            iov,
            from,
            msgs,
            lens: vec![0; cap],
            n: 0,
        }
    }

    pub fn capacity(&self) -> usize {
        self.lens.len()
    }

    /// Read the frames queued on `sock` now (never waits): how many arrived. Frames longer
    /// than `frame_len` are truncated to it, as [`PnSocket::recv`] does.
    pub fn recv(&mut self, sock: &PnSocket) -> io::Result<usize> {
        let cap = self.capacity();
        debug_assert_eq!(self.iov.len(), cap);
        for m in &mut self.msgs {
            // The kernel writes the address length and the frame length back.
            m.msg_hdr.msg_namelen = std::mem::size_of::<libc::sockaddr_ll>() as u32;
            m.msg_len = 0;
        }
        self.n = 0;
        let got = loop {
            // SAFETY: every mmsghdr points at one iovec of `frame_len` bytes inside `bufs` and
            // at one sockaddr_ll of `from`, all owned by self and alive for the call.
            let rc = unsafe {
                libc::recvmmsg(
                    sock.raw_fd(),
                    self.msgs.as_mut_ptr(),
                    cap as libc::c_uint,
                    libc::MSG_DONTWAIT,
                    std::ptr::null_mut(),
                )
            };
            if rc >= 0 {
                break rc as usize;
            }
            let e = os_err();
            match e.kind() {
                io::ErrorKind::Interrupted => continue,
                io::ErrorKind::WouldBlock => return Ok(0),
                _ => return Err(e),
            }
        };
        // Keep the frames in order, without our own (kernels before 4.20 queue them).
        for i in 0..got.min(cap) {
            if self.from[i].sll_pkttype == PACKET_OUTGOING {
                continue;
            }
            let len = (self.msgs[i].msg_len as usize).min(self.frame_len);
            if self.n != i {
                let (dst, src) = (self.n * self.frame_len, i * self.frame_len);
                self.bufs.copy_within(src..src + len, dst);
            }
            self.lens[self.n] = len;
            self.n += 1;
        }
        Ok(self.n)
    }

    /// The frames of the last [`RecvBatch::recv`], in arrival order.
    pub fn frames(&self) -> impl Iterator<Item = &[u8]> {
        (0..self.n).map(|i| &self.bufs[i * self.frame_len..i * self.frame_len + self.lens[i]])
    }
}

//! Raw Ethernet access on one interface (`AF_PACKET`, `SOCK_RAW`, all EtherTypes) plus the
//! interface facts the controller needs (index, MAC, IPv4 address).
//!
//! Everything is looked up with `if_nametoindex` and `ioctl`s on a socket, never through
//! `/sys`: the harness runs the controller on a thread that joined a network namespace with
//! `setns(2)`, and such a thread still sees the host's `/sys`. Sockets opened by that thread
//! belong to its namespace, so the lookups below see the namespace's interfaces.

use std::io;
use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::Duration;

use pn_protocol::wire::ethernet::MacAddr;

/// Facts about a network interface.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InterfaceInfo {
    pub name: String,
    pub index: u32,
    pub mac: MacAddr,
    /// First IPv4 address of the interface, if any.
    pub ipv4: Option<Ipv4Addr>,
}

fn ifreq_for(name: &str) -> io::Result<libc::ifreq> {
    if name.is_empty() || name.len() >= libc::IFNAMSIZ {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "bad interface name",
        ));
    }
    // SAFETY: ifreq is plain old data; all-zero is a valid value.
    let mut ifr: libc::ifreq = unsafe { std::mem::zeroed() };
    for (d, s) in ifr.ifr_name.iter_mut().zip(name.bytes()) {
        *d = s as libc::c_char;
    }
    Ok(ifr)
}

fn dgram_socket() -> io::Result<OwnedFd> {
    // SAFETY: plain socket(2) call; the fd is owned immediately.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fd is a fresh, valid descriptor.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

impl InterfaceInfo {
    /// Look up `name` in the calling thread's network namespace.
    pub fn lookup(name: &str) -> io::Result<InterfaceInfo> {
        let cname = std::ffi::CString::new(name)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL in interface name"))?;
        // SAFETY: valid NUL-terminated string.
        let index = unsafe { libc::if_nametoindex(cname.as_ptr()) };
        if index == 0 {
            return Err(io::Error::last_os_error());
        }
        let sock = dgram_socket()?;
        let mut ifr = ifreq_for(name)?;
        // SAFETY: SIOCGIFHWADDR fills ifr_hwaddr of a valid ifreq.
        let rc = unsafe { libc::ioctl(sock.as_raw_fd(), libc::SIOCGIFHWADDR, &mut ifr) };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: the union member written by SIOCGIFHWADDR.
        let hw = unsafe { ifr.ifr_ifru.ifru_hwaddr };
        let mut mac = [0u8; 6];
        for (d, s) in mac.iter_mut().zip(hw.sa_data.iter()) {
            *d = *s as u8;
        }
        let mut ifr = ifreq_for(name)?;
        // SAFETY: SIOCGIFADDR fills ifr_addr; failure (no address) is fine.
        let rc = unsafe { libc::ioctl(sock.as_raw_fd(), libc::SIOCGIFADDR, &mut ifr) };
        let ipv4 = if rc == 0 {
            // SAFETY: SIOCGIFADDR wrote a sockaddr_in into the union.
            let sa = unsafe { ifr.ifr_ifru.ifru_addr };
            let sin: libc::sockaddr_in = unsafe { std::mem::transmute_copy(&sa) };
            Some(Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr)))
        } else {
            None
        };
        Ok(InterfaceInfo {
            name: name.to_string(),
            index,
            mac: MacAddr(mac),
            ipv4,
        })
    }
}

/// A raw packet socket bound to one interface, receiving every EtherType (VLAN-tagged frames
/// included) but not the frames this host sends.
#[derive(Debug)]
pub struct RawSocket {
    fd: OwnedFd,
    ifindex: u32,
}

const ETH_P_ALL: u16 = 0x0003;

impl RawSocket {
    /// Open and bind. Needs CAP_NET_RAW.
    pub fn open(info: &InterfaceInfo) -> io::Result<RawSocket> {
        // SAFETY: plain socket(2) call.
        let fd = unsafe {
            libc::socket(
                libc::AF_PACKET,
                libc::SOCK_RAW | libc::SOCK_CLOEXEC,
                i32::from(ETH_P_ALL.to_be()),
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fresh valid descriptor.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: sockaddr_ll is POD.
        let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_protocol = ETH_P_ALL.to_be();
        sll.sll_ifindex = info.index as i32;
        // SAFETY: valid sockaddr_ll of the right size.
        let rc = unsafe {
            libc::bind(
                fd.as_raw_fd(),
                &sll as *const _ as *const libc::sockaddr,
                std::mem::size_of::<libc::sockaddr_ll>() as u32,
            )
        };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        // Do not receive our own transmissions (Linux >= 4.20); ignore failure on old kernels,
        // the receive path also filters PACKET_OUTGOING.
        let one: libc::c_int = 1;
        // SAFETY: setsockopt with an int option value.
        unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                libc::SOL_PACKET,
                23, /* PACKET_IGNORE_OUTGOING */
                &one as *const _ as *const libc::c_void,
                std::mem::size_of::<libc::c_int>() as u32,
            );
        }
        // Larger buffers: many devices at 1 ms.
        let sz: libc::c_int = 4 * 1024 * 1024;
        for opt in [libc::SO_RCVBUF, libc::SO_SNDBUF] {
            // SAFETY: setsockopt with an int option value.
            unsafe {
                libc::setsockopt(
                    fd.as_raw_fd(),
                    libc::SOL_SOCKET,
                    opt,
                    &sz as *const _ as *const libc::c_void,
                    std::mem::size_of::<libc::c_int>() as u32,
                );
            }
        }
        Ok(RawSocket {
            fd,
            ifindex: info.index,
        })
    }

    /// Send one complete Ethernet frame (no FCS).
    pub fn send(&self, frame: &[u8]) -> io::Result<()> {
        // SAFETY: sockaddr_ll is POD.
        let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_ifindex = self.ifindex as i32;
        sll.sll_halen = 6;
        if frame.len() >= 6 {
            sll.sll_addr[..6].copy_from_slice(&frame[..6]);
        }
        // SAFETY: buffer and address are valid for the given lengths.
        let n = unsafe {
            libc::sendto(
                self.fd.as_raw_fd(),
                frame.as_ptr() as *const libc::c_void,
                frame.len(),
                0,
                &sll as *const _ as *const libc::sockaddr,
                std::mem::size_of::<libc::sockaddr_ll>() as u32,
            )
        };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// True when a frame is waiting in the receive queue (non-blocking check).
    pub fn pending(&self) -> bool {
        let mut pfd = libc::pollfd {
            fd: self.fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd, zero timeout.
        let rc = unsafe { libc::poll(&mut pfd, 1, 0) };
        rc > 0 && (pfd.revents & libc::POLLIN) != 0
    }

    /// Wait up to `timeout` for a frame; `Ok(None)` on timeout. Frames sent by this host are
    /// skipped.
    pub fn recv(&self, buf: &mut [u8], timeout: Duration) -> io::Result<Option<usize>> {
        let mut pfd = libc::pollfd {
            fd: self.fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = timeout.as_millis().min(i32::MAX as u128) as i32;
        // SAFETY: one valid pollfd.
        let rc = unsafe { libc::poll(&mut pfd, 1, ms) };
        if rc < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                return Ok(None);
            }
            return Err(e);
        }
        if rc == 0 {
            return Ok(None);
        }
        loop {
            // SAFETY: sockaddr_ll is POD.
            let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
            let mut len = std::mem::size_of::<libc::sockaddr_ll>() as u32;
            // SAFETY: buffer and address are valid for the given lengths.
            let n = unsafe {
                libc::recvfrom(
                    self.fd.as_raw_fd(),
                    buf.as_mut_ptr() as *mut libc::c_void,
                    buf.len(),
                    libc::MSG_DONTWAIT,
                    &mut sll as *mut _ as *mut libc::sockaddr,
                    &mut len,
                )
            };
            if n < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::WouldBlock || e.kind() == io::ErrorKind::Interrupted {
                    return Ok(None);
                }
                return Err(e);
            }
            if sll.sll_pkttype == libc::PACKET_OUTGOING {
                continue;
            }
            return Ok(Some(n as usize));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_lookup() {
        let lo = InterfaceInfo::lookup("lo").expect("lo exists");
        assert!(lo.index >= 1);
        assert_eq!(lo.mac, MacAddr::ZERO);
        assert_eq!(lo.ipv4, Some(Ipv4Addr::LOCALHOST));
        assert!(InterfaceInfo::lookup("nonexistent0").is_err());
        assert!(InterfaceInfo::lookup("").is_err());
    }
}

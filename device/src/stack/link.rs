//! Link monitoring of the PROFINET NIC: carrier, speed/duplex and the PROFINET MAU type.
//!
//! # Source of truth: ioctls, polled
//! * Carrier: the link is up when the interface is administratively up (`IFF_UP` from
//!   `SIOCGIFFLAGS`) and has carrier (`ETHTOOL_GLINK`, i.e. `netif_carrier_ok`; drivers without
//!   it: `IFF_RUNNING`, the RFC 2863 operstate "up", which linkwatch updates with a delay).
//!   Presence: the ioctl succeeds on the daemon's namespace.
//! * Speed/duplex/autoneg: `SIOCETHTOOL` `ETHTOOL_GLINKSETTINGS` (with the kernel's
//!   link-mode-mask size handshake), falling back to the legacy `ETHTOOL_GSET`.
//!
//! Why ioctls instead of `/sys/class/net/<nic>/carrier`: the ioctls answer for the namespace of
//! the calling thread. `ip netns exec` remounts /sys so a daemon started that way would see the
//! right sysfs too, but a thread that joined a namespace with `setns(2)` (tests, or a future
//! in-process lab) still sees the host's /sys and would read the wrong NIC or none.
//! Why polling instead of netlink `RTM_NEWLINK` notifications: one ioctl pair every
//! [`DEFAULT_POLL`] (100 ms) is negligible, needs no netlink parser, and bounds the detection
//! delay to 100 ms, far below the controller's watchdog (3 x cycle x DataHoldFactor, >= 3 ms but
//! typically 100s of ms) so the order "link down, then AR aborted" is kept.
//!
//! # MAU type
//! PROFINET reports the port's MAU type (IETF RFC 4836 dot3MauType numbering) in LLDP
//! (IEEE 802.3 MAC/PHY TLV) and in PDPortDataReal. Real PHYs map directly (10/100/1000 Mbit/s,
//! half/full duplex). Virtual links (veth, tun, bridges in containers) report 10 Gbit/s, or
//! an unknown speed (-1) and duplex, which no PROFINET MAU type fits: we then report
//! **100BASE-TX full duplex (0x0010)**, the MAU type of nearly every PROFINET device, and mark
//! it as substituted ([`LinkInfo::mau_substituted`]). This value is only informational for the
//! controller (it is compared only when the engineering configures a port "transmission
//! rate/duplex" check), so a substitute never endangers an AR; an unknown speed never stops the
//! device or aborts an AR (an established C stack does abort every connection on veth for this
//! reason). Documented in docs/protocol-notes/device-l2.md.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use pn_protocol::wire::lldp::{autoneg, mau_type, pmd_cap};

use crate::dataplane::valid_nic_name;

/// Poll period of [`LinkMonitor`].
pub const DEFAULT_POLL: Duration = Duration::from_millis(100);

/// MAU type reported when the speed has no PROFINET MAU type (see the module docs).
pub const SUBSTITUTE_MAU: u16 = mau_type::TYPE_100BASE_TX_FD;

const SIOCETHTOOL: libc::c_ulong = 0x8946;
const ETHTOOL_GSET: u32 = 0x0000_0001;
const ETHTOOL_GLINK: u32 = 0x0000_000a;
const ETHTOOL_GLINKSETTINGS: u32 = 0x0000_004c;
const SPEED_UNKNOWN: u32 = 0xffff_ffff;
const DUPLEX_HALF: u8 = 0;
const DUPLEX_FULL: u8 = 1;
const AUTONEG_ENABLE: u8 = 1;

/// Everything known about the NIC's link.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LinkInfo {
    /// The NIC exists (`hardwarePortPresent`).
    pub present: bool,
    /// Administratively up and carrier present (`linkUp`).
    pub up: bool,
    /// Speed in Mbit/s when the driver knows it.
    pub speed_mbps: Option<u32>,
    /// Full duplex (`Some(true)`), half (`Some(false)`), unknown (`None`).
    pub full_duplex: Option<bool>,
    /// Auto-negotiation enabled, when known.
    pub autoneg: Option<bool>,
    /// MAU type to report (LLDP MAC/PHY TLV, PDPortDataReal).
    pub mau_type: u16,
    /// `mau_type` is [`SUBSTITUTE_MAU`] because the real speed has no PROFINET MAU type.
    pub mau_substituted: bool,
}

impl LinkInfo {
    /// LLDP MAC/PHY auto-negotiation support/status bits.
    pub fn lldp_autoneg_bits(&self) -> u8 {
        match self.autoneg {
            Some(true) => autoneg::SUPPORTED | autoneg::ENABLED,
            Some(false) if !self.mau_substituted => autoneg::SUPPORTED,
            _ => 0,
        }
    }

    /// LLDP MAC/PHY advertised capabilities matching the MAU type.
    pub fn lldp_pmd_advertised(&self) -> u16 {
        match self.mau_type {
            mau_type::TYPE_1000BASE_T_FD | mau_type::TYPE_1000BASE_T_HD => {
                pmd_cap::B10_T
                    | pmd_cap::B10_T_FD
                    | pmd_cap::B100_TX
                    | pmd_cap::B100_TX_FD
                    | pmd_cap::B1000_T_FD
            }
            _ => pmd_cap::B10_T | pmd_cap::B10_T_FD | pmd_cap::B100_TX | pmd_cap::B100_TX_FD,
        }
    }

    /// Text for `statusMessage`/logs/`Aborted` reasons when the link is not up.
    pub fn down_reason(&self, nic: &str) -> String {
        if !self.present {
            format!("network interface {nic} is missing")
        } else {
            format!("link down on {nic} (no carrier or interface down)")
        }
    }
}

/// The MAU type for a speed/duplex, `None` when PROFINET has none (virtual or 10G+ links).
/// RFC 4836 dot3MauType values (p-net `pnal.h` `pnal_eth_mau_t`, Wireshark `pn_io_mau_type`).
pub fn mau_for(speed_mbps: Option<u32>, full_duplex: Option<bool>) -> Option<u16> {
    let fd = full_duplex?;
    Some(match (speed_mbps?, fd) {
        (10, false) => mau_type::TYPE_10BASE_T_HD,
        (10, true) => mau_type::TYPE_10BASE_T_FD,
        (100, false) => mau_type::TYPE_100BASE_TX_HD,
        (100, true) => mau_type::TYPE_100BASE_TX_FD,
        (1000, false) => mau_type::TYPE_1000BASE_T_HD,
        (1000, true) => mau_type::TYPE_1000BASE_T_FD,
        _ => return None,
    })
}

fn ifreq_for(nic: &str) -> libc::ifreq {
    // SAFETY: zeroed ifreq is valid.
    let mut ifr: libc::ifreq = unsafe { std::mem::zeroed() };
    for (d, s) in ifr.ifr_name.iter_mut().zip(nic.bytes()) {
        *d = s as libc::c_char;
    }
    ifr
}

/// A datagram socket for interface ioctls in the calling thread's namespace.
pub fn ioctl_socket() -> io::Result<OwnedFd> {
    // SAFETY: plain syscall, result checked.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fresh descriptor.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn if_flags(fd: RawFd, nic: &str) -> io::Result<i32> {
    let mut ifr = ifreq_for(nic);
    // SAFETY: valid ifreq with a NUL-terminated name.
    if unsafe { libc::ioctl(fd, libc::SIOCGIFFLAGS, &mut ifr) } < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: SIOCGIFFLAGS filled ifru_flags.
    Ok(i32::from(unsafe { ifr.ifr_ifru.ifru_flags }))
}

/// Carrier from `ETHTOOL_GLINK` (`netif_carrier_ok` for most drivers); `None` when the driver
/// does not implement it.
fn ethtool_link(fd: RawFd, nic: &str) -> Option<bool> {
    let mut v = [ETHTOOL_GLINK, 0u32];
    let mut ifr = ifreq_for(nic);
    ifr.ifr_ifru.ifru_data = v.as_mut_ptr() as *mut libc::c_char;
    // SAFETY: ifru_data points to a struct ethtool_value (cmd, data).
    if unsafe { libc::ioctl(fd, SIOCETHTOOL, &mut ifr) } < 0 {
        return None;
    }
    Some(v[1] != 0)
}

/// (speed, full duplex, autoneg) from ethtool; all `None` when the driver has no answer.
fn ethtool(fd: RawFd, nic: &str) -> (Option<u32>, Option<bool>, Option<bool>) {
    let decode = |speed: u32, duplex: u8, an: u8| {
        let speed = (speed != SPEED_UNKNOWN && speed != 0 && speed != 0xffff).then_some(speed);
        let duplex = match duplex {
            DUPLEX_HALF => Some(false),
            DUPLEX_FULL => Some(true),
            _ => None,
        };
        (speed, duplex, Some(an == AUTONEG_ENABLE))
    };
    // ETHTOOL_GLINKSETTINGS: 48-byte header + 3 link mode masks of up to 127 words.
    let mut buf = [0u32; 12 + 3 * 127];
    buf[0] = ETHTOOL_GLINKSETTINGS;
    let call = |buf: &mut [u32]| -> bool {
        let mut ifr = ifreq_for(nic);
        ifr.ifr_ifru.ifru_data = buf.as_mut_ptr() as *mut libc::c_char;
        // SAFETY: ifru_data points to a buffer large enough for any answer of this command.
        unsafe { libc::ioctl(fd, SIOCETHTOOL, &mut ifr) >= 0 }
    };
    let byte = |buf: &[u32], i: usize| buf[i / 4].to_ne_bytes()[i % 4];
    if call(&mut buf) {
        // Handshake: the kernel answers with -nwords in link_mode_masks_nwords (byte 15).
        let nwords = byte(&buf, 15) as i8;
        if nwords < 0 {
            let n = nwords.unsigned_abs();
            let mut buf2 = [0u32; 12 + 3 * 127];
            buf2[0] = ETHTOOL_GLINKSETTINGS;
            let b3 = buf2[3].to_ne_bytes();
            buf2[3] = u32::from_ne_bytes([b3[0], b3[1], b3[2], n]);
            if call(&mut buf2) && (byte(&buf2, 15) as i8) > 0 {
                return decode(buf2[1], byte(&buf2, 8), byte(&buf2, 11));
            }
        }
    }
    // Legacy ETHTOOL_GSET (struct ethtool_cmd, 44 bytes).
    let mut cmd = [0u32; 11];
    cmd[0] = ETHTOOL_GSET;
    if call(&mut cmd) {
        let b = |i: usize| byte(&cmd, i);
        let speed = u32::from(u16::from_ne_bytes([b(12), b(13)]))
            | (u32::from(u16::from_ne_bytes([b(28), b(29)])) << 16);
        return decode(speed, b(14), b(18));
    }
    (None, None, None)
}

/// Query the link of `nic` now, using `fd` (any socket of the daemon's namespace).
pub fn query_with(fd: RawFd, nic: &str) -> LinkInfo {
    if !valid_nic_name(nic) {
        return LinkInfo::default();
    }
    let flags = match if_flags(fd, nic) {
        Ok(f) => f,
        Err(_) => return LinkInfo::default(),
    };
    // The carrier itself (ETHTOOL_GLINK) where the driver reports it: IFF_RUNNING follows the
    // operstate, which the kernel's linkwatch updates asynchronously (up to about a second
    // after a carrier change), so a cable pull and re-plug within that window would otherwise
    // be reported late, after sysfs `carrier` already shows the new state.
    let carrier = ethtool_link(fd, nic).unwrap_or(flags & libc::IFF_RUNNING != 0);
    let up = flags & libc::IFF_UP != 0 && carrier;
    let (speed_mbps, full_duplex, autoneg) = ethtool(fd, nic);
    // Without carrier the driver reports an unknown speed: keep the MAU type meaningful.
    let (mau, substituted) = match mau_for(speed_mbps, full_duplex) {
        Some(m) => (m, false),
        None => (SUBSTITUTE_MAU, true),
    };
    LinkInfo {
        present: true,
        up,
        speed_mbps,
        full_duplex,
        autoneg,
        mau_type: mau,
        mau_substituted: substituted,
    }
}

/// Query the link of `nic` (opens a temporary ioctl socket).
pub fn query(nic: &str) -> LinkInfo {
    match ioctl_socket() {
        Ok(fd) => query_with(fd.as_raw_fd(), nic),
        Err(_) => LinkInfo::default(),
    }
}

/// A thread polling the link and reporting changes.
pub struct LinkMonitor {
    current: Arc<Mutex<LinkInfo>>,
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl LinkMonitor {
    /// Start polling `nic` every `period`. `on_change(previous, now)` runs on the monitor
    /// thread once at start (with `previous` = the all-false default) and then whenever
    /// presence, carrier, speed, duplex or MAU type change. The thread must be spawned from a
    /// thread in the daemon's network namespace (it inherits it).
    pub fn spawn(
        nic: String,
        period: Duration,
        mut on_change: impl FnMut(&LinkInfo, &LinkInfo) + Send + 'static,
    ) -> io::Result<LinkMonitor> {
        let fd = ioctl_socket()?;
        let first = query_with(fd.as_raw_fd(), &nic);
        let current = Arc::new(Mutex::new(first.clone()));
        let stop = Arc::new(AtomicBool::new(false));
        let (cur2, stop2) = (current.clone(), stop.clone());
        let handle = std::thread::Builder::new()
            .name(format!("pn-link-{nic}"))
            .spawn(move || {
                let mut last = LinkInfo::default();
                let mut now = first;
                loop {
                    if now != last {
                        if let Ok(mut c) = cur2.lock() {
                            *c = now.clone();
                        }
                        on_change(&last, &now);
                        last = now;
                    }
                    std::thread::park_timeout(period);
                    if stop2.load(Ordering::Acquire) {
                        break;
                    }
                    now = query_with(fd.as_raw_fd(), &nic);
                }
            })?;
        Ok(LinkMonitor {
            current,
            stop,
            handle: Some(handle),
        })
    }

    /// The last polled state.
    pub fn current(&self) -> LinkInfo {
        self.current.lock().map(|c| c.clone()).unwrap_or_default()
    }

    /// Stop and join the thread (also done on drop).
    pub fn stop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(h) = self.handle.take() {
            h.thread().unpark();
            let _ = h.join();
        }
    }
}

impl Drop for LinkMonitor {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mau_mapping() {
        assert_eq!(mau_for(Some(100), Some(true)), Some(0x10));
        assert_eq!(mau_for(Some(100), Some(false)), Some(0x0f));
        assert_eq!(mau_for(Some(1000), Some(true)), Some(0x1e));
        assert_eq!(mau_for(Some(10), Some(true)), Some(11));
        assert_eq!(mau_for(Some(10000), Some(true)), None);
        assert_eq!(mau_for(None, Some(true)), None);
        assert_eq!(mau_for(Some(100), None), None);
    }

    #[test]
    fn loopback_is_present_and_missing_nic_is_not() {
        let lo = query("lo");
        assert!(lo.present);
        assert!(lo.up);
        // Loopback has no PHY: the substitute MAU type is reported.
        assert!(lo.mau_substituted);
        assert_eq!(lo.mau_type, SUBSTITUTE_MAU);
        let none = query("pnl2nonexist0");
        assert!(!none.present && !none.up);
        assert_eq!(query("bad/name"), LinkInfo::default());
    }
}

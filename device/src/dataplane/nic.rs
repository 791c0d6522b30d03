//! NIC helpers (usable by the stack too): link state and presence from sysfs, the cached
//! port presence, and opening the raw `AF_PACKET` socket.

use std::os::fd::{FromRawFd, OwnedFd};
use std::sync::Mutex;
use std::time::Duration;

use super::{ProbeError, ETHERTYPE_PROFINET};

/// What the probe found out about a usable NIC.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NicInfo {
    pub name: String,
    pub index: u32,
    pub mac: Option<[u8; 6]>,
    pub link: LinkState,
}

impl NicInfo {
    /// A NIC that is present with its link up, index 1, no MAC: what the test planes (which
    /// have no real NIC) answer from `probe`.
    pub fn up(name: &str) -> NicInfo {
        NicInfo {
            name: name.into(),
            index: 1,
            mac: None,
            link: LinkState {
                present: true,
                up: true,
                operstate: "up".into(),
            },
        }
    }
}

/// Link state from sysfs.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LinkState {
    /// `/sys/class/net/<nic>` exists.
    pub present: bool,
    /// `/sys/class/net/<nic>/carrier` is 1 (and operstate is not "down").
    pub up: bool,
    /// Raw `/sys/class/net/<nic>/operstate` ("up", "down", "unknown", "lowerlayerdown", ...).
    pub operstate: String,
}

/// The interface-name rule belongs to the configuration format (`Network/InterfaceName`) and
/// the licence's MAC binding as much as to the sockets: one rule, in `pn-device-formats`.
pub use pn_device_formats::config::valid_nic_name;

/// Read the link state of `nic` from sysfs (never fails; a missing NIC is `present=false`).
pub fn read_link_state(nic: &str) -> LinkState {
    if !valid_nic_name(nic) {
        return LinkState::default();
    }
    let base = std::path::Path::new("/sys/class/net").join(nic);
    if !base.exists() {
        return LinkState::default();
    }
    let operstate = std::fs::read_to_string(base.join("operstate"))
        .map(|s| s.trim().to_string())
        .unwrap_or_default();
    // Reading `carrier` of an interface that is administratively down fails with EINVAL.
    let carrier = std::fs::read_to_string(base.join("carrier"))
        .map(|s| s.trim() == "1")
        .unwrap_or(false);
    LinkState {
        present: true,
        up: carrier && operstate != "down",
        operstate,
    }
}

/// Whether `nic` exists (`present` of [`read_link_state`], without reading carrier/operstate).
pub fn nic_present(nic: &str) -> bool {
    valid_nic_name(nic) && std::path::Path::new("/sys/class/net").join(nic).exists()
}

/// [`nic_present`] cached per NIC name for at most `ttl` (`GET /api/status`'s
/// `hardwarePortPresent`): the sysfs lookup cost a quarter of the daemon's CPU under status
/// polling (docs/decisions.md "Status path"). Never holds its lock during the lookup, so a
/// miss never makes other requests wait on file I/O.
#[derive(Debug)]
pub struct PortPresenceCache {
    ttl: Duration,
    last: Mutex<Option<(String, std::time::Instant, bool)>>,
}

impl PortPresenceCache {
    pub fn new(ttl: Duration) -> Self {
        PortPresenceCache {
            ttl,
            last: Mutex::new(None),
        }
    }

    /// The cached value for `nic` when it is younger than the TTL.
    pub fn cached(&self, nic: &str) -> Option<bool> {
        let last = self.last.lock().unwrap_or_else(|p| p.into_inner());
        match &*last {
            Some((n, at, present)) if n == nic && at.elapsed() < self.ttl => Some(*present),
            _ => None,
        }
    }

    /// Look `nic` up now and remember the answer.
    pub fn refresh(&self, nic: &str) -> bool {
        let at = std::time::Instant::now();
        let present = nic_present(nic);
        *self.last.lock().unwrap_or_else(|p| p.into_inner()) = Some((nic.to_string(), at, present));
        present
    }

    /// The cached value, or a fresh lookup.
    pub fn present(&self, nic: &str) -> bool {
        self.cached(nic).unwrap_or_else(|| self.refresh(nic))
    }
}

fn read_mac(nic: &str) -> Option<[u8; 6]> {
    let s = std::fs::read_to_string(format!("/sys/class/net/{nic}/address")).ok()?;
    let mut mac = [0u8; 6];
    let mut parts = s.trim().split(':');
    for b in mac.iter_mut() {
        *b = u8::from_str_radix(parts.next()?, 16).ok()?;
    }
    Some(mac)
}

fn last_os_error() -> i32 {
    std::io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

fn available_nics() -> String {
    let mut names: Vec<String> = pnet_datalink::interfaces()
        .into_iter()
        .map(|i| i.name)
        .collect();
    names.sort();
    names.join(", ")
}

/// Open an `AF_PACKET`/`SOCK_RAW` socket for EtherType 0x8892 and bind it to `nic`.
/// This is the "driver" of the service (spec 1.5). Errors carry the errno.
pub fn open_raw_socket(nic: &str) -> Result<(OwnedFd, NicInfo), ProbeError> {
    let err = |os_error: i32, reason: String| ProbeError {
        nic: nic.to_string(),
        os_error,
        reason,
    };
    if !valid_nic_name(nic) {
        return Err(err(libc::EINVAL, "invalid network interface name".into()));
    }
    let cname = std::ffi::CString::new(nic).map_err(|_| err(libc::EINVAL, "NUL in name".into()))?;
    // SAFETY: cname is a valid NUL-terminated string.
    let index = unsafe { libc::if_nametoindex(cname.as_ptr()) };
    if index == 0 {
        let e = last_os_error();
        return Err(err(
            e,
            format!(
                "network interface not found (available: {})",
                available_nics()
            ),
        ));
    }
    let proto = ETHERTYPE_PROFINET.to_be() as libc::c_int;
    // SAFETY: plain syscall, result checked.
    let fd = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, proto) };
    if fd < 0 {
        let e = last_os_error();
        return Err(err(
            e,
            format!(
                "cannot open raw AF_PACKET socket ({}); CAP_NET_RAW is required",
                std::io::Error::from_raw_os_error(e)
            ),
        ));
    }
    // SAFETY: fd is a freshly created, owned descriptor.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: zeroed sockaddr_ll is a valid value; fields set below.
    let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    sll.sll_family = libc::AF_PACKET as u16;
    sll.sll_protocol = ETHERTYPE_PROFINET.to_be();
    sll.sll_ifindex = index as i32;
    // SAFETY: sll is a properly initialised sockaddr_ll of the given size.
    let rc = unsafe {
        libc::bind(
            std::os::fd::AsRawFd::as_raw_fd(&fd),
            &sll as *const libc::sockaddr_ll as *const libc::sockaddr,
            std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
        )
    };
    if rc < 0 {
        let e = last_os_error();
        return Err(err(
            e,
            format!(
                "cannot bind raw socket: {}",
                std::io::Error::from_raw_os_error(e)
            ),
        ));
    }
    let info = NicInfo {
        name: nic.to_string(),
        index,
        mac: read_mac(nic),
        link: read_link_state(nic),
    };
    Ok((fd, info))
}

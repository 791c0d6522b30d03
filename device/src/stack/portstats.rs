//! The NIC's traffic counters for the PDPortStatistic record (0x8072): octets, discards and
//! errors in each direction.
//!
//! Read from `/proc/thread-self/net/dev`, which lists the interfaces of the calling thread's
//! network namespace (like the link module's ioctls, and unlike `/sys/class/net`, which a
//! thread that joined a namespace with `setns(2)` still sees for the host). The block carries
//! 32-bit counters: the low 32 bits are reported, wrapping like SNMP's Counter32
//! (`ifInOctets`).

use pn_protocol::wire::pnio::pdev::PdPortStatistic;

const PROC_NET_DEV: &str = "/proc/thread-self/net/dev";

/// The counters of `nic` now, or `None` when the NIC is not listed (gone, other namespace)
/// or the file cannot be read.
pub fn read(nic: &str) -> Option<PdPortStatistic> {
    let text = std::fs::read_to_string(PROC_NET_DEV).ok()?;
    parse(&text, nic)
}

/// The line of `nic` in the text of `/proc/net/dev`: after `name:` eight receive columns
/// (bytes packets errs drop fifo frame compressed multicast), then eight transmit columns
/// (bytes packets errs drop fifo colls carrier compressed).
pub fn parse(text: &str, nic: &str) -> Option<PdPortStatistic> {
    text.lines().find_map(|line| {
        let (name, rest) = line.split_once(':')?;
        if name.trim() != nic {
            return None;
        }
        let v: Vec<u64> = rest
            .split_whitespace()
            .map(|f| f.parse().ok())
            .collect::<Option<_>>()?;
        if v.len() < 16 {
            return None;
        }
        // Counter32: the low 32 bits.
        let low = |x: u64| x as u32;
        Some(PdPortStatistic {
            in_octets: low(v[0]),
            in_errors: low(v[2]),
            in_discards: low(v[3]),
            out_octets: low(v[8]),
            out_errors: low(v[10]),
            out_discards: low(v[11]),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "\
Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo:  857660    9588    0    0    0     0          0         0   857660    9588    0    0    0     0       0          0
  pnl0: 4294967397    10    2    3    0     0          0         1    2000      20    4    5    0     0       0          0
";

    #[test]
    fn the_nics_line_gives_the_counters() {
        let s = parse(SAMPLE, "pnl0").unwrap();
        assert_eq!(
            s,
            PdPortStatistic {
                in_octets: 101, // 2^32 + 101, wrapped
                out_octets: 2000,
                in_discards: 3,
                out_discards: 5,
                in_errors: 2,
                out_errors: 4,
            }
        );
        assert_eq!(parse(SAMPLE, "lo").unwrap().in_octets, 857660);
        // Not listed, a prefix of a listed name, garbage: none.
        assert_eq!(parse(SAMPLE, "pnl"), None);
        assert_eq!(parse(SAMPLE, "eth0"), None);
        assert_eq!(parse("pnl0: 1 2 x", "pnl0"), None);
        assert_eq!(parse("pnl0: 1 2 3", "pnl0"), None);
    }

    #[test]
    fn loopback_is_read_from_this_namespace() {
        let s = read("lo").expect("lo in /proc/thread-self/net/dev");
        assert_eq!(s.in_errors, 0);
        assert_eq!(read("no-such-nic0"), None);
    }
}

//! Classic libpcap file writer (LINKTYPE_ETHERNET), microsecond timestamps.

use std::io::{self, Write};

/// Magic number of a microsecond-resolution pcap file, written little-endian.
const MAGIC_USEC: u32 = 0xa1b2_c3d4;
const LINKTYPE_ETHERNET: u32 = 1;
const SNAPLEN: u32 = 65_535;

/// Encode `frames` (complete Ethernet frames, no FCS) as a pcap file. Frame *i* gets the
/// timestamp `i` milliseconds after the epoch so the order is visible in dissector output.
pub fn encode(frames: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::new();
    write_to(
        &mut out,
        frames
            .iter()
            .enumerate()
            .map(|(i, f)| (i as u64 * 1000, f.as_slice())),
    )
    .expect("writing into a Vec cannot fail");
    out
}

/// Write a pcap with explicit timestamps (microseconds) to any writer.
pub fn write_to<'a, W: Write>(
    mut w: W,
    frames: impl IntoIterator<Item = (u64, &'a [u8])>,
) -> io::Result<()> {
    w.write_all(&MAGIC_USEC.to_le_bytes())?;
    w.write_all(&2u16.to_le_bytes())?; // version major
    w.write_all(&4u16.to_le_bytes())?; // version minor
    w.write_all(&0i32.to_le_bytes())?; // thiszone
    w.write_all(&0u32.to_le_bytes())?; // sigfigs
    w.write_all(&SNAPLEN.to_le_bytes())?;
    w.write_all(&LINKTYPE_ETHERNET.to_le_bytes())?;
    for (ts_us, frame) in frames {
        let len = frame.len() as u32;
        w.write_all(&((ts_us / 1_000_000) as u32).to_le_bytes())?;
        w.write_all(&((ts_us % 1_000_000) as u32).to_le_bytes())?;
        w.write_all(&len.to_le_bytes())?;
        w.write_all(&len.to_le_bytes())?;
        w.write_all(frame)?;
    }
    Ok(())
}

/// Read the frames of a classic pcap file (either byte order, micro- or nanosecond magic).
/// Returns `(timestamp_ns, frame)` pairs. Used by end-to-end tests to read captures.
pub fn decode(data: &[u8]) -> Result<Vec<(u64, Vec<u8>)>, String> {
    if data.len() < 24 {
        return Err("pcap: file shorter than its global header".into());
    }
    let magic_le = u32::from_le_bytes(data[0..4].try_into().unwrap());
    let (le, nanos) = match magic_le {
        0xa1b2_c3d4 => (true, false),
        0xa1b2_3c4d => (true, true),
        0xd4c3_b2a1 => (false, false),
        0x4d3c_b2a1 => (false, true),
        m => return Err(format!("pcap: unknown magic {m:#x}")),
    };
    let rd = |b: &[u8]| {
        let a: [u8; 4] = b.try_into().unwrap();
        if le {
            u32::from_le_bytes(a)
        } else {
            u32::from_be_bytes(a)
        }
    };
    let mut out = Vec::new();
    let mut pos = 24;
    while pos + 16 <= data.len() {
        let sec = rd(&data[pos..pos + 4]) as u64;
        let frac = rd(&data[pos + 4..pos + 8]) as u64;
        let incl = rd(&data[pos + 8..pos + 12]) as usize;
        pos += 16;
        if pos + incl > data.len() {
            return Err("pcap: truncated record".into());
        }
        let ts = sec * 1_000_000_000 + if nanos { frac } else { frac * 1000 };
        out.push((ts, data[pos..pos + incl].to_vec()));
        pos += incl;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let frames = vec![vec![1u8; 60], vec![2u8; 64]];
        let file = encode(&frames);
        assert_eq!(file.len(), 24 + 2 * 16 + 60 + 64);
        let back = decode(&file).unwrap();
        assert_eq!(back.len(), 2);
        assert_eq!(back[1].0, 1_000_000);
        assert_eq!(back[1].1, frames[1]);
    }
}

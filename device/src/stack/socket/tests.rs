use super::*;

fn frame(ethertype: u16, inner: Option<u16>) -> Vec<u8> {
    let mut f = vec![0u8; 60];
    f[12..14].copy_from_slice(&ethertype.to_be_bytes());
    if let Some(i) = inner {
        f[16..18].copy_from_slice(&i.to_be_bytes());
    }
    f
}

#[test]
fn filter_rule() {
    assert!(filter_accepts(&frame(0x8892, None)));
    assert!(filter_accepts(&frame(0x88cc, None)));
    assert!(filter_accepts(&frame(0x8100, Some(0x8892))));
    assert!(!filter_accepts(&frame(0x8100, Some(0x0800))));
    assert!(!filter_accepts(&frame(0x0800, None)));
    assert!(!filter_accepts(&frame(0x0806, None)));
    assert!(!filter_accepts(&[0u8; 13]));
}

/// A classic BPF interpreter for the opcodes this module emits (a load past the end of the
/// frame ends the program with 0, as in the kernel).
fn run(prog: &[libc::sock_filter], pkt: &[u8]) -> u32 {
    let mut a: u32 = 0;
    let mut pc = 0usize;
    while let Some(ins) = prog.get(pc) {
        let k = ins.k as usize;
        let load = |n: usize| pkt.get(k..k + n);
        match ins.code {
            BPF_LD_H_ABS | BPF_LD_W_ABS | BPF_LD_B_ABS => {
                let n = match ins.code {
                    BPF_LD_B_ABS => 1,
                    BPF_LD_H_ABS => 2,
                    _ => 4,
                };
                let Some(b) = load(n) else { return 0 };
                a = b.iter().fold(0u32, |acc, x| (acc << 8) | u32::from(*x));
                pc += 1;
            }
            BPF_LD_W_LEN => {
                a = pkt.len() as u32;
                pc += 1;
            }
            BPF_JEQ_K => pc += 1 + usize::from(if a == ins.k { ins.jt } else { ins.jf }),
            BPF_JGT_K => pc += 1 + usize::from(if a > ins.k { ins.jt } else { ins.jf }),
            BPF_JSET_K => pc += 1 + usize::from(if a & ins.k != 0 { ins.jt } else { ins.jf }),
            BPF_RET_K => return ins.k,
            _ => panic!("unexpected opcode"),
        }
    }
    panic!("fell off the program")
}

/// The BPF program and the user-space rule agree: interpret the program on sample frames.
#[test]
fn bpf_program_matches_rule() {
    for (et, inner) in [
        (0x8892, None),
        (0x88cc, None),
        (0x8100, Some(0x8892)),
        (0x8100, Some(0x88cc)),
        (0x0800, None),
        (0x86dd, None),
    ] {
        let f = frame(et, inner);
        assert_eq!(run(&FILTER, &f) != 0, filter_accepts(&f), "{et:#x}");
    }
}

const CTL: [u8; 6] = [0x02, 0x11, 0x22, 0x33, 0x44, 0x55];

/// A cyclic frame from `src` with `fid`, `c_sdu` bytes of C_SDU, then the APDU status
/// (CycleCounter, DataStatus `ds`, TransferStatus `ts`), padded to 60 bytes.
fn cyclic(tagged: bool, src: [u8; 6], fid: u16, c_sdu: usize, ds: u8, ts: u8) -> Vec<u8> {
    let mut f = vec![0x02, 0, 0, 0, 0, 1];
    f.extend_from_slice(&src);
    if tagged {
        f.extend_from_slice(&[0x81, 0x00, 0xc0, 0x00]);
    }
    f.extend_from_slice(&[0x88, 0x92]);
    f.extend_from_slice(&fid.to_be_bytes());
    f.extend(std::iter::repeat_n(0x80u8, c_sdu));
    f.extend_from_slice(&[0x12, 0x34, ds, ts]);
    if f.len() < 60 {
        f.resize(60, 0);
    }
    f
}

#[test]
fn cyclic_filter_accepts_only_the_ars_valid_frames() {
    let m = CyclicMatch {
        frame_id: 0x8001,
        src: CTL,
        c_sdu_len: 40,
    };
    let prog = cyclic_filter(&m).unwrap();
    assert!(prog.len() <= 64);
    for tagged in [false, true] {
        let ok = |f: &[u8]| run(&prog, f) != 0;
        assert!(
            ok(&cyclic(tagged, CTL, 0x8001, 40, 0x35, 0)),
            "tagged {tagged}"
        );
        // Longer than the agreed frame: not the CR's frame.
        let mut long = cyclic(tagged, CTL, 0x8001, 40, 0x35, 0);
        long.push(0);
        assert!(!ok(&long));
        long.extend([0u8; 100]);
        assert!(!ok(&long));
        // Wrong FrameID, source, DataValid off, TransferStatus set, truncated.
        assert!(!ok(&cyclic(tagged, CTL, 0x8002, 40, 0x35, 0)));
        let mut other = CTL;
        other[5] ^= 1;
        assert!(!ok(&cyclic(tagged, other, 0x8001, 40, 0x35, 0)));
        other = CTL;
        other[0] ^= 0x80;
        assert!(!ok(&cyclic(tagged, other, 0x8001, 40, 0x35, 0)));
        assert!(!ok(&cyclic(tagged, CTL, 0x8001, 40, 0x31, 0)));
        assert!(!ok(&cyclic(tagged, CTL, 0x8001, 40, 0x35, 0x01)));
        let full = cyclic(tagged, CTL, 0x8001, 40, 0x35, 0);
        for cut in [full.len() - 1, full.len() - 2, 20, 16, 13, 0] {
            assert!(!ok(&full[..cut]), "cut {cut}");
        }
    }
    // A C_SDU longer than the minimum frame: the status lies beyond byte 60.
    let big = CyclicMatch {
        c_sdu_len: 200,
        ..m
    };
    let prog = cyclic_filter(&big).unwrap();
    assert!(run(&prog, &cyclic(false, CTL, 0x8001, 200, 0x35, 0)) != 0);
    assert_eq!(run(&prog, &cyclic(false, CTL, 0x8001, 40, 0x35, 0)), 0);
    // A short C_SDU: Ethernet padding up to 60 bytes is accepted, more is not.
    let small = CyclicMatch { c_sdu_len: 10, ..m };
    let prog = cyclic_filter(&small).unwrap();
    let mut f = cyclic(false, CTL, 0x8001, 10, 0x35, 0);
    assert_eq!(f.len(), 60);
    assert!(run(&prog, &f) != 0);
    f.push(0);
    assert_eq!(run(&prog, &f), 0);
    // Other EtherTypes, DCP, LLDP.
    for et in [0x0800u16, 0x88cc, 0x86dd] {
        let mut f = cyclic(false, CTL, 0x8001, 40, 0x35, 0);
        f[12..14].copy_from_slice(&et.to_be_bytes());
        assert_eq!(run(&cyclic_filter(&m).unwrap(), &f), 0);
    }
    assert_eq!(
        run(&REJECT_ALL, &cyclic(false, CTL, 0x8001, 40, 0x35, 0)),
        0
    );
    assert!(cyclic_filter(&CyclicMatch {
        c_sdu_len: 1501,
        ..m
    })
    .is_none());
}

/// `CyclicMatch::verdict` is the cyclic program's rule: both decide alike on valid frames
/// and on frames mutated where the program looks (length, EtherType, tag, FrameID,
/// source, status bytes) and elsewhere, tagged and untagged, for short and long C_SDUs.
#[test]
fn cyclic_rule_in_user_space_matches_the_program() {
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let (mut accepted, mut dropped) = (0, 0);
    for c_sdu_len in [1usize, 10, 40, 41, 42, 200, 1440] {
        let m = CyclicMatch {
            frame_id: 0x8001,
            src: CTL,
            c_sdu_len,
        };
        let prog = cyclic_filter(&m).unwrap();
        for tagged in [false, true] {
            let base = cyclic(tagged, CTL, 0x8001, c_sdu_len, 0x35, 0);
            for _ in 0..3000 {
                let mut f = base.clone();
                let r = next();
                match r % 6 {
                    0 => {}
                    1 => f.truncate((r >> 8) as usize % (f.len() + 1)),
                    2 => f.extend(std::iter::repeat_n(0u8, (r >> 8) as usize % 64)),
                    _ => {
                        // Flip one bit in 1..=3 places, biased to the inspected bytes.
                        let hot = [6, 7, 11, 12, 13, 14, 15, 16, 17, 18, 19];
                        for i in 0..=((r >> 4) % 3) {
                            let x = next();
                            let at = if x % 2 == 0 {
                                hot[(x >> 8) as usize % hot.len()]
                            } else if x % 3 == 0 {
                                f.len().saturating_sub(1 + (x >> 8) as usize % 4)
                            } else {
                                (x >> 8) as usize % f.len()
                            };
                            if let Some(b) = f.get_mut(at) {
                                *b ^= 1 << (((x >> 20) % 8 + i) % 8);
                            }
                        }
                    }
                }
                let by_program = run(&prog, &f) != 0;
                assert_eq!(
                    m.verdict(&f) == CyclicVerdict::Accepted,
                    by_program,
                    "c_sdu {c_sdu_len} tagged {tagged} frame {f:02x?}"
                );
                if by_program {
                    accepted += 1;
                } else {
                    dropped += 1;
                }
            }
        }
    }
    // Both outcomes were exercised often.
    assert!(accepted > 5000 && dropped > 5000, "{accepted} {dropped}");
}

use super::*;
use crate::image::ProcessImage;
use pn_protocol::machine::cpm::ConsumerCr;
use pn_protocol::machine::ppm::CopyItem;

const CTL: [u8; 6] = [0x02, 0x11, 0x22, 0x33, 0x44, 0x55];
const C_SDU: usize = 40;

/// A consumer of FrameID 0x8001 from `CTL`; data `items`, IOPS at `iops_offs`.
fn consumer(
    c_sdu_len: usize,
    items: Vec<CopyItem>,
    iops_offs: Vec<usize>,
) -> (cyclic::CyclicShared, ProcessImage) {
    let cyc = cyclic::CyclicShared::new(4_000_000, false);
    let image = ProcessImage::new(4, 4);
    cyc.set_consumer(
        Some(ConsumerCr {
            frame_id: 0x8001,
            src: CTL,
            c_sdu_len,
            items,
            iops_offs,
            iocs_offs: vec![],
            scratch: vec![0; 4],
            dht_ns: 12_000_000,
            last_counter: None,
        }),
        &image,
    );
    (cyc, image)
}

/// RT payload (FrameID onwards): data `d`, IOPS good, CycleCounter `cc`, DataStatus
/// 0x35, TransferStatus 0, then `extra` trailing bytes.
fn payload(d: u8, cc: u16, extra: usize) -> Vec<u8> {
    let mut p = vec![0x80, 0x01];
    let mut sdu = [0u8; C_SDU];
    sdu[..4].fill(d);
    sdu[4] = 0x80;
    p.extend_from_slice(&sdu);
    p.extend_from_slice(&cc.to_be_bytes());
    p.extend_from_slice(&[0x35, 0x00]);
    p.extend(std::iter::repeat_n(0x5a, extra));
    p
}

fn input(image: &ProcessImage) -> Vec<u8> {
    image.snapshot().input
}

/// The failure of the malformed-RT flood (issue 9, "floods"): an over-long frame with the
/// AR's FrameID whose random bytes at the APDU-status position look valid (TransferStatus
/// 0, DataValid, a CycleCounter up to 4096 ahead of the real one) was consumed: its data
/// reached the I area and its CycleCounter made the controller's next frames "not
/// advanced" (ignored) until the real counter caught up, up to 32 cycles at 4 ms: the
/// data-hold watchdog tripped. Over-long frames must not be consumed at all.
#[test]
fn over_long_frame_neither_consumed_nor_poisons_the_cycle_counter() {
    let item = CopyItem {
        frame_off: 0,
        area_off: 0,
        len: 4,
    };
    let (cyc, image) = consumer(C_SDU, vec![item], vec![4]);
    let ok = |p: &[u8]| cyclic::consume_frame(&cyc, &image, CTL, p);
    assert_eq!(ok(&payload(0xa5, 100, 0)), cyclic::Consumed::Ok);
    assert_eq!(input(&image), [0xa5; 4]);
    // Ethernet padding of a minimum-size frame is not "over-long": 46 payload bytes.
    assert_eq!(ok(&payload(0xa6, 228, 0)), cyclic::Consumed::Ok);
    // Over-long: 100 trailing bytes, counter 2000 slots ahead.
    assert_eq!(
        ok(&payload(0xde, 100 + 128 * 20, 100)),
        cyclic::Consumed::Invalid
    );
    assert_eq!(input(&image), [0xa6; 4]);
    // The controller's next real frame is taken.
    assert_eq!(ok(&payload(0xa7, 356, 0)), cyclic::Consumed::Ok);
    assert_eq!(input(&image), [0xa7; 4]);
}

/// A minimum-size frame: a C_SDU below 40 bytes is padded to 46 payload bytes; the
/// padding is accepted.
#[test]
fn padding_up_to_the_minimum_frame_is_accepted() {
    let (cyc, image) = consumer(10, vec![], vec![]);
    let mut p = vec![0x80, 0x01];
    p.extend_from_slice(&[0u8; 10]);
    p.extend_from_slice(&[0, 1, 0x35, 0x00]);
    p.resize(46, 0);
    assert_eq!(
        cyclic::consume_frame(&cyc, &image, CTL, &p),
        cyclic::Consumed::Ok
    );
    p.push(0);
    assert_eq!(
        cyclic::consume_frame(&cyc, &image, CTL, &p),
        cyclic::Consumed::Invalid
    );
}

#!/usr/bin/env python3
"""Build the seed corpus of every fuzz target from real frames.

Usage: make_seeds.py OUT_DIR FRAMES_DIR [FRAMES_DIR...]

Only run it on protocol/tests/fixtures/real-frames/ (permissively licensed) for seeds that are
committed; other folders are for local seeds only. Each frame yields inputs for every target
that can take a part of it (the frame, the payload after the FrameID, the UDP payload, the
PNIO NDR body with an opnum/DREP selector byte, the NDR blocks, single blocks...).
"""
import hashlib
import os
import struct
import sys

TARGETS = ["ethernet", "rt_frame", "dcp", "lldp", "udp_frame", "rpc_packet", "pnio_request",
           "pnio_response", "cm_message", "connect_request", "connect_response", "block_list",
           "record", "im", "diagnosis", "ident", "alarm", "rta", "rpc_reassembly",
           "cyclic_consumer", "rta_machine", "pdev", "arp", "snmp", "llmnr"]


def put(out, target, data):
    d = os.path.join(out, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, hashlib.sha1(data).hexdigest()), "wb") as f:
        f.write(data)
    if target in TARGETS:
        # the `all` target: selector byte + data
        put(out, "all", bytes([TARGETS.index(target)]) + data)


def blocks(data):
    """Split NDR data into PNIO blocks (type, whole block)."""
    out, i = [], 0
    while i + 6 <= len(data):
        t, l = struct.unpack(">HH", data[i:i + 4])
        end = i + 4 + l
        if end > len(data):
            break
        out.append((t, data[i:end]))
        i = end
    return out


def step(ctl, chunk):
    return bytes([ctl, len(chunk) & 0xFF]) + chunk[:255]


def frame_seeds(out, frame):
    put(out, "ethernet", frame)
    et_off = 12
    et = struct.unpack(">H", frame[12:14])[0]
    if et == 0x8100:
        et_off = 16
        et = struct.unpack(">H", frame[16:18])[0]
    payload = frame[et_off + 2:]
    if et == 0x8892:
        put(out, "rt_frame", frame)
        fid = struct.unpack(">H", payload[:2])[0]
        pdu = payload[2:]
        if 0xFEFC <= fid <= 0xFEFF:
            put(out, "dcp", pdu)
        elif fid in (0xFC01, 0xFE01):
            put(out, "rta", pdu)
            put(out, "rta_machine", bytes([fid & 1]) + step(0x02, pdu) + step(0x11, pdu))
            if len(pdu) > 12:
                put(out, "alarm", pdu[12:])
        elif 0x8000 <= fid <= 0xFBFF:
            cfg = (fid & 0x1F) << 3  # consumer FrameID 0x8000 | (cfg >> 3)
            put(out, "cyclic_consumer", bytes([cfg]) + step(0x10, frame) + step(0x11, payload))
    elif et == 0x88CC:
        put(out, "lldp", payload)
    elif et == 0x0800:
        put(out, "udp_frame", frame)
        ihl = (payload[0] & 0x0F) * 4
        total = struct.unpack(">H", payload[2:4])[0]
        udp = payload[ihl:total]
        rpc = udp[8:]
        put(out, "rpc_packet", rpc)
        put(out, "rpc_reassembly", step(0x10, rpc))
        if len(rpc) < 80:
            return
        ptype = rpc[1]
        little = rpc[4] & 0x10 != 0
        fmt = "<" if little else ">"
        opnum = struct.unpack(fmt + "H", rpc[68:70])[0]
        body = rpc[80:]
        sel = bytes([(opnum & 7) | (0x80 if little else 0)])
        if ptype == 0:
            put(out, "pnio_request", sel + body)
            ndr = body[20:]
        elif ptype == 2:
            put(out, "pnio_response", sel + body)
            ndr = body[20:]
        else:
            return
        if not ndr:
            return
        put(out, "block_list", ndr)
        put(out, "cm_message", ndr)
        if opnum == 0:
            put(out, "connect_request" if ptype == 0 else "connect_response", ndr)
        if opnum in (2, 3, 5):
            put(out, "record", ndr)
            # record data after the 64-byte header
            for t, b in blocks(ndr[64:]):
                if 0x0020 <= t <= 0x0024 or t in (0x0030, 0x0031, 0x0032):
                    put(out, "im", b)
                elif t == 0x0010:
                    put(out, "diagnosis", ndr[64:])
                elif t in (0x0012, 0x0013):
                    put(out, "ident", b)


def read_hex(path):
    with open(path) as f:
        return bytes.fromhex("".join(f.read().split()))


def main():
    out = sys.argv[1]
    for d in sys.argv[2:]:
        for name in sorted(os.listdir(d)):
            if name.endswith(".hex"):
                frame_seeds(out, read_hex(os.path.join(d, name)))


if __name__ == "__main__":
    main()

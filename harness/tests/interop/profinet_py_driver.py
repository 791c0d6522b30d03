#!/usr/bin/env python3
"""profinet-py as an independent PROFINET IO controller against pn-device (interop test driver).

Run as root inside the controller's network namespace, on the interface that faces the device:

    profinet_py_driver.py --iface veth0 --station pn-dev --ip 192.168.80.2 \
        [--cycle-ms 4] [--data-hold-factor 6] [--duration 8]

Steps, each with the public API of profinet-py (PyPI `profinet-py`, module `profinet`) unless
noted: DCP Identify by NameOfStation (`rpc.get_station_info`), optionally DCP Set NameOfStation
(`dcp.set_param`), DCP Set IP (`dcp.set_ip`, temporary), DCP Identify again (to see the new IP),
I&M0 read (`ProfinetDevice.read_im0`, over a DeviceAccess AR), connect with IOCRs
(`ProfinetDevice.start_cyclic`: Connect, PrmEnd, ApplicationReady, RT frames), cyclic exchange
for `--duration` seconds while writing a changing output pattern and recording every distinct
input value, then Release.

Release is done here with profinet-py's own RPC building blocks (`RPCCon._create_nrd`,
`_create_rpc`, `_send_receive`) because its public `disconnect()` is fire-and-forget and never
looks at the device's answer.

Output: exactly one JSON object on stdout (also on failure), see `result` below. Exit status 0
when every step succeeded and no error was seen (no RTA ERR PDU, no cyclic FAULT, release
answered OK), 1 otherwise, 2 for usage errors. `--verbose` sends profinet-py's log to stderr.

Output pattern (controller -> device, the device's `inputHex`): byte 0 = 0xA5, bytes 1..3 = a
big-endian counter incremented every `--pattern-interval-ms`, remaining bytes 0.
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import re
import sys
import threading
import time
import traceback

T0 = time.perf_counter()


def ms(t: float | None) -> float | None:
    """perf_counter timestamp -> milliseconds since driver start (3 decimals)."""
    return None if t is None else round((t - T0) * 1000.0, 3)


# PNIOStatus decoding (IEC 61158-6-10; texts as Wireshark's packet-dcerpc-pn-io.c shows them).
ERROR_CODE = {
    0x00: "OK", 0x81: "PNIO", 0xCF: "RTA error", 0xDA: "AlarmAck", 0xDB: "IODConnectRes",
    0xDC: "IODReleaseRes", 0xDD: "IODControlRes", 0xDE: "IODReadRes", 0xDF: "IODWriteRes",
}
ERROR_DECODE = {0x80: "PNIORW", 0x81: "PNIO", 0x82: "Manufacturer specific"}
PNIO_EC1 = {
    0x01: "Connect: ARBlockReq", 0x02: "Connect: IOCRBlockReq", 0x03: "Connect: AlarmCRBlockReq",
    0x04: "Connect: ExpectedSubmoduleBlockReq", 0x05: "Connect: PrmServerBlockReq",
    0x14: "Release: ReleaseBlock", 0x3C: "AlarmAck", 0x3D: "CMDEV", 0x3E: "CMCTL",
    0x3F: "CTLDINA", 0x40: "CMRPC", 0x41: "ALPMI", 0x42: "ALPMR", 0x43: "LMPM",
    0x44: "MAC", 0x45: "RPC", 0x46: "APMR", 0x47: "APMS", 0x48: "CPM", 0x49: "PPM",
    0x4A: "DCPUCS", 0x4B: "DCPUCR", 0x4C: "DCPMCS", 0x4D: "DCPMCR", 0x4E: "FSPM",
    0xFD: "RTA_ERR_CLS_PROTOCOL",
}
CMRPC_EC2 = {
    0x00: "args length invalid", 0x01: "unknown blocks", 0x02: "IOCR missing",
    0x03: "wrong AlarmCRBlock count", 0x04: "out of AR resources", 0x05: "AR UUID unknown",
    0x06: "state conflict", 0x07: "out of provider, consumer or alarm resources",
    0x08: "out of memory", 0x09: "PDev already owned", 0x0A: "ARset state conflict",
    0x0B: "ARset parameter conflict", 0x0C: "PDev, port(s) without interface",
}
RTA_PROTOCOL_EC2 = {
    0x01: "error within the coordination of sequence numbers (RTA_ERR_CODE_SEQ)",
    0x02: "instance closed (RTA_ERR_ABORT)", 0x03: "AR out of memory (RTA_ERR_ABORT)",
    0x04: "AR add provider or consumer failed (RTA_ERR_ABORT)",
    0x05: "AR consumer DHT/WDT expired (RTA_ERR_ABORT)",
    0x06: "AR cmi timeout (RTA_ERR_ABORT)", 0x07: "AR alarm-open failed (RTA_ERR_ABORT)",
    0x08: "AR alarm-send.cnf(-) (RTA_ERR_ABORT)", 0x09: "AR alarm-ack-send.cnf(-) (RTA_ERR_ABORT)",
    0x0A: "AR alarm data too long (RTA_ERR_ABORT)", 0x0B: "AR alarm.ind(err) (RTA_ERR_ABORT)",
    0x0C: "AR rpc-client call.cnf(-) (RTA_ERR_ABORT)", 0x0D: "AR abort.req (RTA_ERR_ABORT)",
    0x0E: "AR re-run aborts existing (RTA_ERR_ABORT)", 0x0F: "AR release.ind received (RTA_ERR_ABORT)",
    0x10: "AR device deactivated (RTA_ERR_ABORT)", 0x11: "AR removed (RTA_ERR_ABORT)",
    0x12: "AR protocol violation (RTA_ERR_ABORT)", 0x13: "AR name resolution error (RTA_ERR_ABORT)",
    0x1B: "AR link down (RTA_ERR_ABORT)", 0x1F: "DCP, station-name changed (RTA_ERR_ABORT)",
    0x20: "DCP, reset to factory-settings (RTA_ERR_ABORT)",
}


def decode_pnio_status(b: bytes) -> str:
    """Human-readable text of a PNIOStatus given as wire-order bytes
    [ErrorCode, ErrorDecode, ErrorCode1, ErrorCode2]."""
    code, dec, ec1, ec2 = b[0], b[1], b[2], b[3]
    if b == b"\x00\x00\x00\x00":
        return "OK"
    parts = [ERROR_CODE.get(code, f"ErrorCode 0x{code:02X}"), ERROR_DECODE.get(dec, f"ErrorDecode 0x{dec:02X}")]
    if dec == 0x81:
        parts.append(PNIO_EC1.get(ec1, f"ErrorCode1 0x{ec1:02X}"))
        if ec1 == 0x40:
            parts.append(CMRPC_EC2.get(ec2, f"ErrorCode2 0x{ec2:02X}"))
        elif ec1 == 0xFD:
            parts.append(RTA_PROTOCOL_EC2.get(ec2, f"ErrorCode2 0x{ec2:02X}"))
        else:
            parts.append(f"ErrorCode2 0x{ec2:02X}")
    else:
        parts.append(f"ErrorCode1 0x{ec1:02X} ErrorCode2 0x{ec2:02X}")
    return ", ".join(parts)


def status_entry(b: bytes) -> dict:
    return {"pnioStatus": b.hex().upper(), "text": decode_pnio_status(b)}


class Collector(logging.Handler):
    """Keeps profinet-py's warnings and errors (with time) for the JSON output and pulls the
    PNIOStatus out of the RTA ERR PDUs its alarm listener logs."""

    RTA_ERR = re.compile(r"RTA ERROR PDU from device, PNIOStatus=0x([0-9A-Fa-f]{8})")

    def __init__(self) -> None:
        super().__init__(level=logging.WARNING)
        self.records: list[dict] = []
        self.rta_errors: list[dict] = []
        self.mutex = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        try:
            msg = record.getMessage()
        except Exception:  # noqa: BLE001 - a broken log call must not kill the driver
            msg = str(record.msg)
        with self.mutex:
            if len(self.records) < 200:
                self.records.append(
                    {"tMs": ms(time.perf_counter()), "level": record.levelname, "logger": record.name, "msg": msg}
                )
            m = self.RTA_ERR.search(msg)
            if m:
                e = status_entry(bytes.fromhex(m.group(1)))
                e["tMs"] = ms(time.perf_counter())
                self.rta_errors.append(e)


def gap_stats(ts: list[float], cycle_us: int) -> dict:
    """Statistics of the intervals between consecutive send timestamps (perf_counter seconds)."""
    if len(ts) < 2:
        return {"count": 0}
    timed = [(int((b - a) * 1e6), b) for a, b in zip(ts, ts[1:])]
    worst = sorted(timed, reverse=True)[:5]
    gaps = sorted(g for g, _ in timed)
    n = len(gaps)

    def pct(p: float) -> int:
        return gaps[min(n - 1, int(p * n))]

    over = {}
    for k in (2, 3, 4, 6, 8, 10, 16, 32):
        over[str(k)] = sum(1 for g in gaps if g > k * cycle_us)
    return {
        "count": n,
        "minUs": gaps[0],
        "p50Us": pct(0.50),
        "p99Us": pct(0.99),
        "p999Us": pct(0.999),
        "maxUs": gaps[-1],
        # how many intervals exceeded k cycles: a device with DataHoldFactor k trips on any of them
        "overCycles": over,
        # the five longest intervals and when they ended (ms since driver start)
        "worst": [{"gapUs": g, "endMs": ms(t)} for g, t in worst],
    }


def parse_int(s: str) -> int:
    return int(s, 0)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--iface", required=True, help="interface towards the device")
    ap.add_argument("--station", required=True, help="NameOfStation of the device")
    ap.add_argument("--set-name", help="DCP Set NameOfStation to this (temporary) before the IP")
    ap.add_argument("--ip", required=True, help="IP to set over DCP (temporary)")
    ap.add_argument("--mask", default="255.255.255.0")
    ap.add_argument("--gateway", default="0.0.0.0")
    ap.add_argument("--cycle-ms", type=float, help="cycle time; omitted: profinet-py's default IOCRSetup (32 ms)")
    ap.add_argument("--send-clock-factor", type=int, help="omitted: profinet-py's default (32 = 1 ms)")
    ap.add_argument("--data-hold-factor", type=int, help="omitted: profinet-py's default")
    ap.add_argument("--watchdog-factor", type=int, help="omitted: the data-hold factor when given, else profinet-py's default")
    ap.add_argument("--duration", type=float, default=8.0, help="seconds of cyclic exchange")
    ap.add_argument("--input-len", type=int, default=4, help="slot 1/1 bytes device -> controller")
    ap.add_argument("--output-len", type=int, default=4, help="slot 1/1 bytes controller -> device")
    ap.add_argument("--module-ident", type=parse_int, default=0x30)
    ap.add_argument("--submodule-ident", type=parse_int, default=1)
    ap.add_argument("--dap-module-ident", type=parse_int, default=1)
    ap.add_argument("--dap-submodules", default="1=1,0x8000=2,0x8001=3", help="SUBSLOT=IDENT,... of slot 0")
    ap.add_argument(
        "--rt-start",
        choices=["before-prm-end", "after-app-ready"],
        default="before-prm-end",
        help="when RT output starts: profinet-py's start_cyclic default (before PrmEnd) or its "
        "start_rt_before_prm_end=False path (after ApplicationReady, as its `profinet cyclic` CLI does)",
    )
    ap.add_argument(
        "--teardown",
        choices=["release-then-stop", "stop-then-release"],
        default="release-then-stop",
        help="release while RT frames still flow (a PLC's order), or profinet-py's documented order "
        "(cyclic.stop(): 3 ProviderState=STOP frames, then Release)",
    )
    ap.add_argument("--pattern-interval-ms", type=float, default=50.0)
    ap.add_argument("--identify-timeout", type=int, default=3, help="seconds (profinet-py takes int)")
    ap.add_argument("--rpc-timeout", type=float, default=5.0)
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()
    if args.output_len < 4:
        ap.error("--output-len must be at least 4 (the pattern needs 4 bytes)")

    collector = Collector()
    root = logging.getLogger()
    root.setLevel(logging.DEBUG if args.verbose else logging.INFO)
    root.addHandler(collector)
    if args.verbose:
        h = logging.StreamHandler(sys.stderr)
        h.setFormatter(logging.Formatter("%(relativeCreated)9.1f %(name)s %(levelname)s %(message)s"))
        root.addHandler(h)
    logging.captureWarnings(True)

    # Garbage collections that took long enough to delay the TX thread (it needs the GIL).
    gc_events: list[dict] = []
    gc_start: dict = {}

    def gc_cb(phase: str, info: dict) -> None:
        now = time.perf_counter()
        if phase == "start":
            gc_start["t"] = now
        elif "t" in gc_start:
            d = (now - gc_start["t"]) * 1e3
            if (d >= 1.0 or info.get("generation") == 2) and len(gc_events) < 100:
                gc_events.append({"generation": info.get("generation"), "ms": round(d, 2), "endMs": ms(now)})

    gc.callbacks.append(gc_cb)

    result: dict = {"ok": False, "errors": []}
    try:
        run(args, result, collector)
    except Exception as e:  # noqa: BLE001 - every failure goes into the JSON
        result["errors"].append(
            {"stage": result.get("stage", "?"), "type": type(e).__name__, "text": str(e),
             "traceback": traceback.format_exc(limit=6)}
        )
    gc.callbacks.remove(gc_cb)
    result["gc"] = gc_events
    result["log"] = collector.records
    result["rtaErrors"] = collector.rta_errors
    for e in collector.rta_errors:
        result["errors"].append({"stage": "rta", "type": "RtaErr", "text": f"{e['pnioStatus']}: {e['text']}"})
    result["ok"] = not result["errors"]
    result["totalMs"] = ms(time.perf_counter())
    print(json.dumps(result, sort_keys=True))
    sys.stdout.flush()
    return 0 if result["ok"] else 1


def run(args: argparse.Namespace, result: dict, collector: Collector) -> None:
    import profinet
    from profinet import IOCRSetup, IOSlot, ProfinetDevice, dcp, rpc
    from profinet.cyclic import CyclicController
    from profinet.protocol import PNBlockHeader, PNIODReleaseBlock, PNNRDData, PNRPCHeader
    from profinet.util import ethernet_socket, get_mac

    result["profinetPyVersion"] = getattr(profinet, "__version__", "?")
    errors = result["errors"]

    def err(stage: str, text: str, typ: str = "check") -> None:
        errors.append({"stage": stage, "type": typ, "text": text})

    def describe(info) -> dict:
        return {
            "name": info.name, "mac": info.mac, "ip": info.ip, "netmask": info.netmask,
            "gateway": info.gateway, "ipBlockInfo": info.ip_block_info, "vendorId": info.vendor_id,
            "deviceId": info.device_id, "deviceType": info.device_type, "deviceRole": info.device_role,
            "deviceRoles": info.device_roles, "deviceInstance": list(info.device_instance),
            "aliasName": info.alias_name,
            "supportedOptions": [f"{o}/{s}" for o, s in info.supported_options],
        }

    iface = args.iface
    src = get_mac(iface)
    sock = ethernet_socket(iface, 3)
    try:
        # 1. DCP Identify (filtered by NameOfStation; profinet-py falls back to Identify All).
        result["stage"] = "identify"
        t = time.perf_counter()
        info = rpc.get_station_info(sock, src, args.station, timeout_sec=args.identify_timeout)
        result["identify"] = dict(describe(info), ok=True, elapsedMs=round((time.perf_counter() - t) * 1e3, 1))
        if info.name != args.station:
            err("identify", f"identify answered by {info.name!r}, not {args.station!r}")
        station = args.station

        # 2. optional DCP Set NameOfStation.
        if args.set_name:
            result["stage"] = "set-name"
            t = time.perf_counter()
            ok = dcp.set_param(sock, src, info.mac, "name", args.set_name)
            result["setName"] = {"ok": bool(ok), "name": args.set_name, "elapsedMs": round((time.perf_counter() - t) * 1e3, 1)}
            if not ok:
                err("set-name", "no DCP Set response for NameOfStation")
            station = args.set_name

        # 3. DCP Set IP (temporary), then Identify again to read it back.
        result["stage"] = "set-ip"
        t = time.perf_counter()
        ok = dcp.set_ip(sock, src, info.mac, args.ip, args.mask, args.gateway)
        result["setIp"] = {"ok": bool(ok), "ip": args.ip, "mask": args.mask, "gateway": args.gateway,
                           "elapsedMs": round((time.perf_counter() - t) * 1e3, 1)}
        if not ok:
            err("set-ip", "no DCP Set response for the IP suite")
        result["stage"] = "identify-after-set"
        info = rpc.get_station_info(sock, src, station, timeout_sec=args.identify_timeout)
        result["identifyAfterSet"] = describe(info)
        if info.ip != args.ip:
            err("identify-after-set", f"device reports IP {info.ip} after DCP Set IP {args.ip}")
    finally:
        sock.close()

    dev = ProfinetDevice.from_dcp_info(info, iface, timeout=args.rpc_timeout)
    cyclic: CyclicController | None = None
    try:
        # 4. I&M0 over a DeviceAccess AR (profinet-py's read_im0).
        result["stage"] = "im0"
        t = time.perf_counter()
        im0 = dev.read_im0()

        def s(v) -> str:
            return v.decode("latin-1") if isinstance(v, (bytes, bytearray)) else str(v)

        result["im0"] = {
            "ok": True,
            "elapsedMs": round((time.perf_counter() - t) * 1e3, 1),
            "vendorId": im0.vendor_id,
            "orderIdRaw": s(im0.order_id),
            "orderId": s(im0.order_id).rstrip(" \x00"),
            "serialNumberRaw": s(im0.im_serial_number),
            "serialNumber": s(im0.im_serial_number).rstrip(" \x00"),
            "hardwareRevision": im0.im_hardware_revision,
            "softwareRevision": f"{chr(im0.sw_revision_prefix)}{im0.im_sw_revision_functional_enhancement}."
            f"{im0.im_sw_revision_bug_fix}.{im0.im_sw_revision_internal_change}",
            "revisionCounter": im0.im_revision_counter,
            "profileId": im0.im_profile_id,
            "profileSpecificType": im0.im_profile_specific_type,
            "imVersion": f"{im0.im_version >> 8}.{im0.im_version & 0xFF}",
            "imSupported": im0.im_supported,
        }

        # 5. Connect with IOCRs, PrmEnd, ApplicationReady (profinet-py's start_cyclic).
        result["stage"] = "connect"
        slots = []
        for item in args.dap_submodules.split(","):
            sub, ident = item.split("=")
            slots.append(IOSlot(slot=0, subslot=int(sub, 0), module_ident=args.dap_module_ident,
                                submodule_ident=int(ident, 0)))
        slots.append(IOSlot(slot=1, subslot=1, input_length=args.input_len, output_length=args.output_len,
                            module_ident=args.module_ident, submodule_ident=args.submodule_ident))
        kw = {}
        if args.send_clock_factor is not None:
            kw["send_clock_factor"] = args.send_clock_factor
        if args.cycle_ms is not None:
            scf = kw.get("send_clock_factor", IOCRSetup.__dataclass_fields__["send_clock_factor"].default)
            rr = round(args.cycle_ms * 1000 / (scf * 31.25))
            if rr < 1 or abs(rr * scf * 31.25 - args.cycle_ms * 1000) > 1:
                raise ValueError(f"cycle {args.cycle_ms} ms is not a multiple of the send clock {scf * 31.25} us")
            kw["reduction_ratio"] = rr
        if args.data_hold_factor is not None:
            kw["data_hold_factor"] = args.data_hold_factor
            kw["watchdog_factor"] = args.data_hold_factor
        if args.watchdog_factor is not None:
            kw["watchdog_factor"] = args.watchdog_factor
        setup = IOCRSetup(slots=slots, **kw)
        result["options"] = {
            "sendClockFactor": setup.send_clock_factor,
            "reductionRatio": setup.reduction_ratio,
            "cycleUs": setup.cycle_time_us,
            "watchdogFactor": setup.watchdog_factor,
            "dataHoldFactor": setup.data_hold_factor,
            "dataHoldUs": setup.data_hold_factor * setup.cycle_time_us,
            "rtStart": args.rt_start,
            "teardown": args.teardown,
            "defaultsUsed": sorted(
                k for k in ("send_clock_factor", "reduction_ratio", "data_hold_factor", "watchdog_factor") if k not in kw
            ),
        }

        # Instrumentation (class level: start_cyclic creates and starts the controller itself):
        # the send time of every RT frame, and when ApplicationReady was confirmed.
        tx_times: list[float] = []
        marks: dict = {}
        orig_tx_cycle = CyclicController._tx_cycle
        orig_app_ready = rpc.RPCCon.application_ready

        def tx_cycle(self_) -> None:
            orig_tx_cycle(self_)
            tx_times.append(time.perf_counter())

        def app_ready(self_, *a, **k):
            r = orig_app_ready(self_, *a, **k)
            marks["appReadyDone"] = time.perf_counter()
            return r

        CyclicController._tx_cycle = tx_cycle
        rpc.RPCCon.application_ready = app_ready

        t = time.perf_counter()
        marks["connectStart"] = t
        cyclic = dev.start_cyclic(setup, start_rt_before_prm_end=(args.rt_start == "before-prm-end"))
        marks["started"] = time.perf_counter()
        result["connect"] = {
            "ok": True,
            "elapsedMs": round((marks["started"] - t) * 1e3, 1),
            "inputFrameId": f"0x{cyclic.input_iocr.frame_id:04X}",
            "outputFrameId": f"0x{cyclic.output_iocr.frame_id:04X}",
            "appReadyConfirmed": "appReadyDone" in marks,
        }

        # 6. Cyclic exchange: a changing output pattern, every distinct input value recorded.
        result["stage"] = "cyclic"
        inputs_seen: list[dict] = []
        state_changes: list[dict] = []
        cyc_errors: list[dict] = []
        last_in = {"v": None}

        def on_input(slot: int, subslot: int, data: bytes) -> None:
            if slot == 1 and subslot == 1 and data != last_in["v"]:
                last_in["v"] = data
                if len(inputs_seen) < 500:
                    inputs_seen.append({"hex": data.hex(), "tMs": ms(time.perf_counter())})

        cyclic.on_input(on_input)
        cyclic.on_state_change(
            lambda a, b: state_changes.append({"from": a.value, "to": b.value, "tMs": ms(time.perf_counter())})
        )
        cyclic.on_error(lambda m: cyc_errors.append({"text": m, "tMs": ms(time.perf_counter())}))

        counter = 0
        written = []
        end = time.perf_counter() + args.duration
        interval = args.pattern_interval_ms / 1000.0
        next_write = time.perf_counter()
        while True:
            now = time.perf_counter()
            if now >= end:
                break
            if now >= next_write:
                counter += 1
                out = bytes([0xA5]) + (counter & 0xFFFFFF).to_bytes(3, "big") + bytes(args.output_len - 4)
                try:
                    cyclic.set_output_data(1, 1, out)
                    written.append(out)
                except RuntimeError as e:  # FAULT / STOPPED: the exchange is gone
                    cyc_errors.append({"text": f"set_output_data: {e}", "tMs": ms(now)})
                    break
                next_write += interval
            time.sleep(max(0.0, min(next_write, end) - time.perf_counter()))
        t_end = time.perf_counter()
        st = cyclic.stats
        cycle_us = setup.cycle_time_us
        steady = [x for x in tx_times if x <= t_end]
        first_tx = tx_times[0] if tx_times else None
        result["cyclic"] = {
            "framesSent": st.frames_sent,
            "framesReceived": st.frames_received,
            "framesMissed": st.frames_missed,
            "framesInvalid": st.frames_invalid,
            "framesDuplicate": st.frames_duplicate,
            "framesOutOfOrder": st.frames_out_of_order,
            "stateAtEnd": cyclic.state.value,
            "stateChanges": state_changes,
            "errors": cyc_errors,
            "maxCycleTimeUs": st.max_cycle_time_us,
            "avgCycleTimeUs": st.avg_cycle_time_us,
            "txGaps": gap_stats(steady, cycle_us),
            "connectStartMs": ms(marks.get("connectStart")),
            "appReadyDoneMs": ms(marks.get("appReadyDone")),
            "firstFrameMs": ms(first_tx),
            # > 0: the first RT frame left after ApplicationReady was confirmed
            "firstFrameAfterAppReadyMs": None
            if first_tx is None or "appReadyDone" not in marks
            else round((first_tx - marks["appReadyDone"]) * 1e3, 3),
            "outputsWritten": len(written),
            "firstOutputHex": written[0].hex() if written else None,
            "lastOutputHex": written[-1].hex() if written else None,
            "inputsSeen": inputs_seen,
            "lastInputHex": (cyclic.get_input_data(1, 1, allow_bad=True) or b"").hex(),
            "lastInputIops": cyclic.get_input_status(1, 1),
            "endMs": ms(t_end),
        }
        if cyclic.state.value != "running":
            err("cyclic", f"cyclic controller ended in state {cyclic.state.value}")
        for e in cyc_errors:
            err("cyclic", e["text"], "CyclicError")
        if st.frames_received == 0:
            err("cyclic", "no input frame received")

        # 7. Teardown.
        result["stage"] = "release"

        def release() -> dict:
            r = dev._rpc
            if r is None or not r.live:
                return {"ok": False, "text": "no AR to release"}
            block = PNBlockHeader(0x0114, 28, 0x01, 0x00)
            rel = PNIODReleaseBlock(
                block_header=bytes(block), padding1=0, ar_uuid=r.ar_uuid, session_key=r.session_key,
                padding2=0, control_command=0x0004, control_block_properties=0, payload=b"",
            )
            req = r._create_rpc(PNRPCHeader.RELEASE, bytes(r._create_nrd(bytes(rel))))
            t0 = time.perf_counter()
            resp = r._send_receive(req)
            r.live = None  # released: profinet-py's close() must not send a second Release
            r._live_monotonic = None
            raw = bytes(resp.payload)
            # PNIOStatus is an NDR u32: its byte order follows the response's DREP
            little = bool(resp.drep[0] & 0x10)
            status = raw[0:4][::-1] if little else raw[0:4]
            nrd = PNNRDData(raw)
            body = nrd.payload
            out = dict(status_entry(status), ok=status == b"\x00\x00\x00\x00",
                       elapsedMs=round((time.perf_counter() - t0) * 1e3, 2),
                       drep="LE" if little else "BE", tMs=ms(t0))
            if len(body) >= 30:
                out["blockType"] = f"0x{int.from_bytes(body[0:2], 'big'):04X}"
                out["controlCommand"] = f"0x{int.from_bytes(body[28:30], 'big'):04X}"
            return out

        if args.teardown == "release-then-stop":
            result["release"] = release()
            cyclic.stop()
        else:
            cyclic.stop()
            result["release"] = release()
        result["cyclic"]["framesSentTotal"] = cyclic.stats.frames_sent
        if not result["release"]["ok"]:
            err("release", f"release answered {result['release'].get('pnioStatus')}: {result['release']['text']}")
    finally:
        if cyclic is not None and cyclic.is_running:
            cyclic.stop()
        dev.close()


if __name__ == "__main__":
    sys.exit(main())

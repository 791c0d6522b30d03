#!/usr/bin/env python3
"""Connect requests built by scapy (a second PROFINET implementation) against the real pn-device.

Used by device/tests/interop_scapy_connect.rs, which runs this script inside the controller's
network namespace; it also runs by hand there:

  scapy_connect.py --iface IF --dev-ip IP --dev-mac MAC --pcap OUT.pcap --s7-fixture HEX

Every request is built with scapy's layers only (Ether / IP / UDP / scapy.layers.dcerpc.DceRpc4 /
scapy.contrib.pnio_rpc.PNIOServiceReqPDU with ARBlockReq, IOCRBlockReq, ExpectedSubmoduleBlockReq,
AlarmCRBlockReq, IODControlReq) and sent on IF with sendp; the answer is read from a UDP socket
bound to the source port (so the kernel does not answer it with ICMP port unreachable) and
dissected with scapy (DceRpc4 / PNIOServiceResPDU / ARBlockRes, IOCRBlockRes, ...).

Commands on stdin, one per line; one JSON object per line on stdout for each:

  connect CASE   build and send the Connect of CASE (see CASES, and s7_layout), print the answer
  release        release the AR of the last Connect (IODControlReq 0x0114, opnum Release)
  record OP      a Read or Write (OP: read, write; IODReadReq / IODWriteReq, one record) for an
                 AR the device does not know, print the answer and its IOD*ResHeader
  quit           stop the capture, write --pcap, print {"cmd": "quit", "packets": N}, exit

The first line printed is {"cmd": "ready", ...} once the capture runs. The capture (every UDP
frame to or from port 34964 on IF, both directions) is written as a classic pcap for tshark.
"""
import argparse
import json
import os
import socket
import sys
import threading
import uuid

from scapy.all import Ether, IP, Raw, UDP, conf, get_if_addr, get_if_hwaddr, sendp, wrpcap  # noqa
from scapy.sendrecv import AsyncSniffer
from scapy.layers.dcerpc import DceRpc4
from scapy.contrib import pnio_rpc as rpc

conf.verb = 0

RPC_PORT = 34964  # 0x8894, the PNIO-CM port of the device
DEVICE_INTERFACE = "dea00001-6c97-11d1-8271-00a02442df7d"
OPNUM_CONNECT = 0
OPNUM_RELEASE = 1
OPNUM_READ = 2
OPNUM_WRITE = 3

# Generic cases (IEC 61158-6-10 IOCRBlockReq table, as p-net pf_cmdev_check_iocr_param applies
# it): ARProperties.StartupMode (0 legacy, 1 advanced), IOCRProperties.RTClass and the requested
# FrameIDs of the input CR (device -> controller: the controller's choice, which the device keeps)
# and of the output CR (controller -> device: 0xFFFF, the device assigns it).
CASES = {
    "legacy_rtc1": dict(startup=0, rt_class=1, in_fid=0xC000, out_fid=0xFFFF),
    "advanced_rtc2": dict(startup=1, rt_class=2, in_fid=0x8000, out_fid=0xFFFF),
    "advanced_rtc1": dict(startup=1, rt_class=1, in_fid=0xC000, out_fid=0xFFFF),
    "legacy_rtc1_fid8002": dict(startup=0, rt_class=1, in_fid=0x8002, out_fid=0xFFFF),
    # RT_CLASS_3 with a FrameID valid for class 3 (0x0100-0x7FFF): only the class is wrong.
    "advanced_rtc3": dict(startup=1, rt_class=3, in_fid=0x0100, out_fid=0xFFFF),
}

# The device's configuration (pn_testkit::daemon::DeviceXml): DAP in slot 0 (module 1;
# submodules 1/ident 1, 0x8000/ident 2, 0x8001/ident 3, no IO data) and slot 1 (module 0x30)
# with submodule 1/ident 1: 4 bytes device -> controller (PROFINET input) and 4 bytes
# controller -> device (PROFINET output).
DAP = (0, 0x1, [(0x0001, 0x1), (0x8000, 0x2), (0x8001, 0x3)])
IO_SLOT = (1, 0x30, 0x0001, 0x1)
IO_LEN = 4


def log(msg):
    sys.stderr.write(msg + "\n")
    sys.stderr.flush()


def emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


# ---------------------------------------------------------------------------------------------
# request blocks


def expected_blocks(one_per_slot):
    """ExpectedSubmoduleBlockReq(s) for the device's configuration: one block with both slots
    (what most controllers send) or one block per slot (the S7-1500 layout)."""
    nodata = lambda: [rpc.ExpectedSubmoduleDataDescription(  # noqa: E731
        DataDescription=1, SubmoduleDataLength=0, LengthIOCS=1, LengthIOPS=1)]
    dap_subs = [rpc.ExpectedSubmodule(SubslotNumber=ss, SubmoduleIdentNumber=ident,
                                      SubmoduleProperties_Type=0, DataDescription=nodata())
                for ss, ident in DAP[2]]
    slot, mod, sub, subident = IO_SLOT
    io_sub = rpc.ExpectedSubmodule(
        SubslotNumber=sub, SubmoduleIdentNumber=subident, SubmoduleProperties_Type=3,
        DataDescription=[
            rpc.ExpectedSubmoduleDataDescription(DataDescription=1, SubmoduleDataLength=IO_LEN,
                                                 LengthIOCS=1, LengthIOPS=1),
            rpc.ExpectedSubmoduleDataDescription(DataDescription=2, SubmoduleDataLength=IO_LEN,
                                                 LengthIOCS=1, LengthIOPS=1),
        ])
    apis = [
        rpc.ExpectedSubmoduleAPI(API=0, SlotNumber=DAP[0], ModuleIdentNumber=DAP[1],
                                 ModuleProperties=0, Submodules=dap_subs),
        rpc.ExpectedSubmoduleAPI(API=0, SlotNumber=slot, ModuleIdentNumber=mod,
                                 ModuleProperties=0, Submodules=[io_sub]),
    ]
    if one_per_slot:
        return [rpc.ExpectedSubmoduleBlockReq(APIs=[a]) for a in apis]
    return [rpc.ExpectedSubmoduleBlockReq(APIs=apis)]


def io_apis(iocr_type):
    """The IOCR's API with its IO data objects and IOCS entries, S7 frame layout: the input CR
    carries the IOPS of every submodule with input or no data (DAP ones: data length 0) plus the
    4 bytes of slot 1, and the IOCS of slot 1's output data; the output CR the reverse."""
    obj = rpc.IOCRAPIObject
    dap = [(0, ss) for ss, _ in DAP[2]]
    slot, _, sub, _ = IO_SLOT
    if iocr_type == 1:  # input CR: data 0x0000..: DAP IOPS at 0..2, slot 1 data 3..6 + IOPS 7
        data = [obj(SlotNumber=s, SubslotNumber=ss, FrameOffset=i) for i, (s, ss) in
                enumerate(dap)]
        data.append(obj(SlotNumber=slot, SubslotNumber=sub, FrameOffset=len(dap)))
        iocs = [obj(SlotNumber=slot, SubslotNumber=sub, FrameOffset=len(dap) + IO_LEN + 1)]
    else:  # output CR: slot 1 data 0..3 + IOPS 4, then IOCS of DAP submodules and slot 1
        data = [obj(SlotNumber=slot, SubslotNumber=sub, FrameOffset=0)]
        iocs = [obj(SlotNumber=s, SubslotNumber=ss, FrameOffset=IO_LEN + 1 + i)
                for i, (s, ss) in enumerate(dap + [(slot, sub)])]
    return [rpc.IOCRAPI(API=0, IODataObjects=data, IOCSs=iocs)]


def iocr(iocr_type, ref, rt_class, frame_id, scf, rr, factor):
    return rpc.IOCRBlockReq(
        IOCRType=iocr_type, IOCRReference=ref, LT=0x8892, IOCRProperties_RTClass=rt_class,
        DataLength=40, FrameID=frame_id, SendClockFactor=scf, ReductionRatio=rr, Phase=1,
        Sequence=0, FrameSendOffset=0xFFFFFFFF, WatchdogFactor=factor, DataHoldFactor=factor,
        IOCRTagHeader_IOUserPriority=6, IOCRTagHeader_IOCRVLANID=0,
        IOCRMulticastMACAdd="00:00:00:00:00:00", APIs=io_apis(iocr_type))


def clone(block, drop, **over):
    """A fresh scapy block of the same class from a dissected one's field values: lengths and
    counts (`drop`) are left unset so scapy recomputes them for the new content."""
    fields = {k: v for k, v in block.fields.items() if k not in drop}
    fields.update(over)
    return type(block)(**fields)


# ---------------------------------------------------------------------------------------------
# the session with the device


class Session:
    def __init__(self, a):
        self.iface = a.iface
        self.dev_ip = a.dev_ip
        self.dev_mac = a.dev_mac
        self.my_ip = get_if_addr(a.iface)
        self.my_mac = get_if_hwaddr(a.iface)
        self.timeout = a.timeout
        # The device's RPC object UUID: DEA00000-6C97-11D1-8271-{instance}{device}{vendor}.
        self.object = "dea00000-6c97-11d1-8271-0001%04x%04x" % (a.device_id, a.vendor_id)
        self.s7_fixture = a.s7_fixture
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind((self.my_ip, 0))
        self.sport = self.sock.getsockname()[1]
        self.session_key = 0
        self.last = None  # (ar_uuid, session_key, activity, seqnum, endian) of the last Connect

    def frame(self, dce):
        return (Ether(src=self.my_mac, dst=self.dev_mac)
                / IP(src=self.my_ip, dst=self.dev_ip, ttl=64, flags="DF")
                / UDP(sport=self.sport, dport=RPC_PORT)
                / dce)

    def dce(self, endian, activity, seqnum, opnum, pdu, flags1=0x20):
        return DceRpc4(rpc_vers=4, ptype="request", flags1=flags1, flags2=0,
                       endian=endian, encoding="ASCII", float="IEEE",
                       object=self.object, if_id=DEVICE_INTERFACE, act_id=activity,
                       server_boot=0, if_vers=1, seqnum=seqnum, opnum=opnum,
                       ihint=0xFFFF, ahint=0xFFFF, fragnum=0, auth_proto=0) / pdu

    def call(self, dce, activity):
        """Send one request frame, return (raw UDP payload, DceRpc4) of the answer or None."""
        sendp(self.frame(dce), iface=self.iface)
        self.sock.settimeout(self.timeout)
        while True:
            try:
                data, _ = self.sock.recvfrom(65535)
            except socket.timeout:
                return None, None
            pkt = DceRpc4(data)
            if str(pkt.act_id) == str(activity) and pkt.ptype != 0:
                return data, pkt

    # -- answers ------------------------------------------------------------------------------

    def answer(self, data, pkt):
        """JSON view of a response: RPC packet type, DREP, PNIOStatus bytes and the blocks."""
        out = {"ptype": int(pkt.ptype), "drep": "little" if pkt.endian == 1 else "big"}
        if pkt.ptype != 2:  # fault, reject, nocall, ...: no PNIO body
            out["rpc_body_hex"] = bytes(pkt.payload).hex()
            return out
        res = pkt.payload
        if not isinstance(res, rpc.PNIOServiceResPDU):
            res = rpc.PNIOServiceResPDU(bytes(pkt.payload), _underlayer=pkt)
        # scapy quirk: PNIOServiceResPDU.status is one IntEnumField read with the DREP byte
        # order, but PNIOStatus is four single octets (ErrorCode, ErrorDecode, ErrorCode1,
        # ErrorCode2; Wireshark dissects them one by one). A little-endian answer DB 81 02 07
        # comes out as the integer 0x070281DB, so the octets are rebuilt with the same order.
        order = "little" if pkt.endian == 1 else "big"
        status = int(res.status).to_bytes(4, order)
        out["pnio_status"] = status.hex()
        out["pnio_status_raw_octets"] = data[80:84].hex()  # cross-check of the workaround
        out["args_length"] = int(res.args_length)
        blocks = []
        iocrs = []
        for b in res.blocks:
            d = {"type": "0x%04x" % int(b.block_type), "class": type(b).__name__,
                 "length": int(b.block_length)}
            if isinstance(b, rpc.IOCRBlockRes):
                d.update(iocr_type=int(b.IOCRType), iocr_ref=int(b.IOCRReference),
                         frame_id=int(b.FrameID))
                iocrs.append({"type": int(b.IOCRType), "ref": int(b.IOCRReference),
                              "frame_id": int(b.FrameID)})
            elif isinstance(b, rpc.ARBlockRes):
                d.update(ar_uuid=str(b.ARUUID), session_key=int(b.SessionKey),
                         responder_mac=str(b.CMResponderMacAdd),
                         responder_port=int(b.CMResponderUDPRTPort))
            elif isinstance(b, rpc.AlarmCRBlockRes):
                d.update(local_alarm_ref=int(b.LocalAlarmReference),
                         max_alarm_len=int(b.MaxAlarmDataLength))
            elif isinstance(b, rpc.IODControlRes):
                d.update(ar_uuid=str(b.ARUUID), session_key=int(b.SessionKey),
                         done=int(b.ControlCommand_Done))
            blocks.append(d)
        out["blocks"] = blocks
        out["iocrs"] = iocrs
        return out

    # -- Connect --------------------------------------------------------------------------------

    def connect_generic(self, c, ar_uuid, activity):
        ar = rpc.ARBlockReq(
            ARType=1, ARUUID=ar_uuid, SessionKey=self.session_key,
            CMInitiatorMacAdd=self.my_mac,
            CMInitiatorObjectUUID="dea00000-6c97-11d1-8271-000100a00001",
            ARProperties_StartupMode=c["startup"], ARProperties_DeviceAccess=0,
            ARProperties_ParametrizationServer=1, ARProperties_State=1,
            CMInitiatorActivityTimeoutFactor=100, CMInitiatorUDPRTPort=0x8892,
            CMInitiatorStationName="scapy-controller")
        # Device send clock 4 ms = SendClockFactor 128; ReductionRatio 4 (16 ms), factor 3.
        blocks = [ar,
                  iocr(1, 1, c["rt_class"], c["in_fid"], 128, 4, 3),
                  iocr(2, 2, c["rt_class"], c["out_fid"], 128, 4, 3),
                  rpc.AlarmCRBlockReq(AlarmCRType=1, LT=0x8892, RTATimeoutFactor=1,
                                      RTARetries=3, LocalAlarmReference=1,
                                      MaxAlarmDataLength=200, AlarmCRTagHeaderHigh=0xC000,
                                      AlarmCRTagHeaderLow=0xA000)]
        blocks += expected_blocks(one_per_slot=False)
        pdu = rpc.PNIOServiceReqPDU(args_max=16696, blocks=blocks)
        summary = dict(c, drep="big", blocks=[hex(b.block_type) for b in blocks])
        return self.dce(0, activity, 0, OPNUM_CONNECT, pdu), summary

    def connect_s7(self, ar_uuid, activity):
        """The S7-1500's Connect (mehner-connect-req-s7.hex) dissected by scapy and rebuilt
        block by block in its order: little-endian DREP, ARBlockReq (advanced startup), input
        and output IOCRBlockReq (RT_CLASS_2, FrameID 0x8000 both, SendClockFactor 128,
        ReductionRatio 4, factors 5, multicast MAC 0), one ExpectedSubmoduleBlockReq per slot,
        AlarmCRBlockReq after them, and the ARFSUBlock (0x010B, with an FSParameterBlock) that
        scapy has no class for (kept as its generic Block). Our MAC/IP/ports, a fresh AR UUID
        and activity, the device's object UUID, and expected submodules and IO data objects
        for our device's configuration replace the S7's."""
        text = open(self.s7_fixture).read()
        raw = bytes.fromhex("".join(l for l in text.splitlines() if not l.startswith("#")))
        real = Ether(raw)
        # scapy binds DceRpc4 to no UDP port: decode the PNIO-CM payload explicitly.
        rdce = DceRpc4(bytes(real[UDP].payload))
        rpdu = rdce.payload
        assert isinstance(rpdu, rpc.PNIOServiceReqPDU), type(rpdu)
        blocks = []
        exp_done = False
        for b in rpdu.blocks:
            if isinstance(b, rpc.ARBlockReq):
                blocks.append(clone(b, ("block_length",), ARUUID=ar_uuid,
                                    SessionKey=self.session_key,
                                    CMInitiatorMacAdd=self.my_mac))
            elif isinstance(b, rpc.IOCRBlockReq):
                blocks.append(clone(b, ("block_length", "NumberOfAPIs", "APIs"),
                                    APIs=io_apis(int(b.IOCRType))))
            elif isinstance(b, rpc.ExpectedSubmoduleBlockReq):
                if not exp_done:
                    blocks += expected_blocks(one_per_slot=True)
                    exp_done = True
            else:  # AlarmCRBlockReq, ARFSUBlock: as the S7 sent them
                blocks.append(clone(b, ()))
        pdu = rpc.PNIOServiceReqPDU(blocks=blocks)  # ArgsMaximum = ArgsLength, as the S7
        dce = self.dce(int(rdce.endian), activity, 0, OPNUM_CONNECT, pdu,
                       flags1=int(rdce.flags1))
        ic = next(b for b in blocks if isinstance(b, rpc.IOCRBlockReq) and b.IOCRType == 1)
        oc = next(b for b in blocks if isinstance(b, rpc.IOCRBlockReq) and b.IOCRType == 2)
        ar = blocks[0]
        summary = dict(startup=int(ar.ARProperties_StartupMode), rt_class=int(
            ic.IOCRProperties_RTClass), in_fid=int(ic.FrameID), out_fid=int(oc.FrameID),
            scf=int(ic.SendClockFactor), rr=int(ic.ReductionRatio),
            drep="little" if rdce.endian == 1 else "big",
            blocks=[hex(b.block_type) for b in blocks])
        return dce, summary

    def connect(self, case):
        self.session_key += 1
        ar_uuid = str(uuid.uuid4())
        activity = str(uuid.uuid4())
        if case == "s7_layout":
            dce, summary = self.connect_s7(ar_uuid, activity)
        elif case in CASES:
            dce, summary = self.connect_generic(CASES[case], ar_uuid, activity)
        else:
            return {"cmd": "connect", "case": case, "error": "unknown case"}
        self.last = (ar_uuid, self.session_key, activity, 0, int(dce.endian))
        data, pkt = self.call(dce, activity)
        out = {"cmd": "connect", "case": case, "request": summary, "ar_uuid": ar_uuid,
               "activity": activity, "seqnum": 0}
        if pkt is None:
            out["error"] = "no answer within %.1f s" % self.timeout
            return out
        out.update(self.answer(data, pkt))
        return out

    def release(self):
        if self.last is None:
            return {"cmd": "release", "error": "no Connect to release"}
        ar_uuid, key, activity, seq, endian = self.last
        seq += 1  # the same activity, next call (as controllers do)
        self.last = (ar_uuid, key, activity, seq, endian)
        c = rpc.IODControlReq(ARUUID=ar_uuid, SessionKey=key, ControlCommand_Release=1,
                              ControlBlockProperties=0)
        c.block_type = 0x0114  # IODReleaseReq
        pdu = rpc.PNIOServiceReqPDU(args_max=16696, blocks=[c])
        data, pkt = self.call(self.dce(endian, activity, seq, OPNUM_RELEASE, pdu), activity)
        out = {"cmd": "release", "ar_uuid": ar_uuid, "activity": activity, "seqnum": seq}
        if pkt is None:
            out["error"] = "no answer within %.1f s" % self.timeout
            return out
        out.update(self.answer(data, pkt))
        return out


    def record_unknown_ar(self, op):
        """A Read or Write (one record, slot 1/1) for an AR the device does not know."""
        activity = str(uuid.uuid4())
        ar_uuid = str(uuid.uuid4())
        if op == "write":
            data = bytes([1, 2, 3, 4])
            hdr = rpc.IODWriteReq(seqNum=1, ARUUID=ar_uuid, API=0, slotNumber=1,
                                  subslotNumber=1, index=0x0001, recordDataLength=len(data))
            block, opnum = hdr / Raw(data), OPNUM_WRITE
        else:
            block = rpc.IODReadReq(seqNum=1, ARUUID=ar_uuid, API=0, slotNumber=1,
                                   subslotNumber=1, index=0x0001, recordDataLength=1024)
            opnum = OPNUM_READ
        pdu = rpc.PNIOServiceReqPDU(args_max=1024, blocks=[block])
        data, pkt = self.call(self.dce(0, activity, 0, opnum, pdu), activity)
        out = {"cmd": "record", "op": op, "ar_uuid": ar_uuid, "activity": activity, "seqnum": 0}
        if pkt is None:
            out["error"] = "no answer within %.1f s" % self.timeout
            return out
        out.update(self.answer(data, pkt))
        res = pkt.payload
        if not isinstance(res, rpc.PNIOServiceResPDU):
            res = rpc.PNIOServiceResPDU(bytes(pkt.payload), _underlayer=pkt)
        for b in res.blocks:
            if isinstance(b, (rpc.IODWriteRes, rpc.IODReadRes)):
                out["res_header"] = {"ar_uuid": str(b.ARUUID), "index": int(b.index),
                                     "record_data_length": int(b.recordDataLength)}
                if isinstance(b, rpc.IODWriteRes):
                    # The same octet-order quirk as PNIOServiceResPDU.status (see answer()).
                    out["res_header"]["status"] = int(b.status).to_bytes(4, "big").hex()
        return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--iface", required=True)
    ap.add_argument("--dev-ip", required=True)
    ap.add_argument("--dev-mac", required=True)
    ap.add_argument("--pcap", required=True)
    ap.add_argument("--s7-fixture", required=True)
    ap.add_argument("--vendor-id", type=lambda s: int(s, 0), default=0x0493)
    ap.add_argument("--device-id", type=lambda s: int(s, 0), default=0x0001)
    ap.add_argument("--timeout", type=float, default=3.0)
    a = ap.parse_args()

    s = Session(a)
    started = threading.Event()
    try:
        sniffer = AsyncSniffer(iface=a.iface, filter="udp port %d" % RPC_PORT,
                               started_callback=started.set)
        sniffer.start()
    except Exception as e:  # no tcpdump to compile the BPF filter: filter in python
        log("BPF filter unavailable (%s); filtering in python" % e)
        sniffer = AsyncSniffer(iface=a.iface, started_callback=started.set,
                               lfilter=lambda p: UDP in p and RPC_PORT in (p[UDP].sport,
                                                                          p[UDP].dport))
        sniffer.start()
    if not started.wait(10):
        emit({"cmd": "ready", "error": "capture did not start"})
        return 1
    emit({"cmd": "ready", "my_ip": s.my_ip, "my_mac": s.my_mac, "sport": s.sport,
          "object": s.object, "pid": os.getpid()})

    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        try:
            if words[0] == "connect" and len(words) == 2:
                emit(s.connect(words[1]))
            elif words[0] == "release":
                emit(s.release())
            elif words[0] == "record" and len(words) == 2 and words[1] in ("read", "write"):
                emit(s.record_unknown_ar(words[1]))
            elif words[0] == "quit":
                break
            else:
                emit({"cmd": words[0], "error": "unknown command"})
        except Exception as e:  # report, keep the session going
            import traceback
            traceback.print_exc()
            emit({"cmd": words[0], "error": "%s: %s" % (type(e).__name__, e)})
    pkts = sniffer.stop() or []
    wrpcap(a.pcap, pkts, linktype=1)
    emit({"cmd": "quit", "packets": len(pkts), "pcap": a.pcap})
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""scapy as an independent oracle for the pn-protocol codecs (used by tests/scapy_vectors/).

  pn_scapy.py build KIND 'JSON-PARAMS'   -> prints the frame scapy builds, as hex (one line)
  pn_scapy.py dissect [LAYER]  < hex     -> prints JSON: a list of layers, each
                                            {"layer": <scapy class name>, "fields": {...}},
                                            depth first (sub-packets of list fields follow
                                            their parent layer), as dissected by scapy.

Frames are complete Ethernet frames. `dissect` starts at Ether, except that UDP payloads on
the PNIO RPC port 0x8894 and non-standard ports are decoded as DceRpc4 (scapy binds DceRpc4
to UDP 34964 itself). Values: ints as ints, bytes as lowercase hex, MAC/IP/str as strings.
"""
import json
import sys
import uuid

from scapy.all import Ether, IP, UDP, Dot1Q, Raw, Padding, conf  # noqa: F401
from scapy.packet import Packet
from scapy.fields import ConditionalField
from scapy.contrib.pnio import ProfinetIO, PNIORealTimeCyclicPDU, PNIORealTime_IOxS  # noqa: F401
from scapy.contrib import pnio_dcp as dcp
from scapy.contrib import pnio_rpc as rpc
from scapy.contrib import lldp

conf.verb = 0


def _val(v):
    if isinstance(v, Packet):
        d = {"_layer": type(v).__name__}
        d.update(_fields(v))
        if type(v.payload).__name__ != "NoPayload":
            d["_payload"] = _val(v.payload)
        return d
    if isinstance(v, (bytes, bytearray)):
        return bytes(v).hex()
    if isinstance(v, list):
        return [_val(x) for x in v]
    if isinstance(v, uuid.UUID):
        return str(v)
    if isinstance(v, (int, str, float)) or v is None:
        return v
    try:
        return int(v)  # FlagValue and friends
    except (TypeError, ValueError):
        return str(v)


def _fields(layer):
    out = {}
    for f in layer.fields_desc:
        if isinstance(f, ConditionalField) and not f._evalcond(layer):
            continue
        try:
            v = layer.getfieldval(f.name)
        except AttributeError:
            continue
        out[f.name] = _val(v)
    return out


def dump(pkt):
    layers = []
    cur = pkt
    while cur is not None and type(cur).__name__ != "NoPayload":
        layers.append({"layer": type(cur).__name__, "fields": _fields(cur)})
        cur = cur.payload
    return layers


# ---------------------------------------------------------------------------------------------
# builders

def _eth(p, dst="01:0e:cf:00:00:00", ethertype=0x8892):
    return Ether(dst=p.get("dst", dst), src=p.get("src", "02:00:00:00:00:01"), type=ethertype)


def _udp(p):
    return (Ether(dst=p.get("dst", "02:00:00:00:00:02"), src=p.get("src", "02:00:00:00:00:01"))
            / IP(src=p.get("src_ip", "192.168.0.1"), dst=p.get("dst_ip", "192.168.0.2"), ttl=64,
                 flags="DF", id=0)
            / UDP(sport=p.get("sport", 0xC001), dport=p.get("dport", 0x8894)))


# scapy 2.8 builds DCP lengths only partly (see docs/protocol-notes/fuzz-scapy.md): the
# DCPDataLength of requests and the DCPBlockLength of the request's inline block are
# LenFields over an empty payload (always 0), the IP/DeviceID/Manufacturer blocks get length 0
# or fail, and every block appends its pad byte even when the length is even. The builders
# therefore set those lengths and the padding explicitly, as scapy's own docstring does.

def _blk(cls, length, **kw):
    return cls(dcp_block_length=length, padding=b"\x00" if length % 2 else b"", **kw)


def build_dcp_ident_req(p):
    if "name" in p:
        n = len(p["name"])
        d = dcp.ProfinetDCP(service_id=0x05, service_type=0x00, xid=p["xid"],
                            reserved=p.get("response_delay", 1), option=2, sub_option=2,
                            dcp_data_length=4 + n + n % 2, dcp_block_length=n,
                            name_of_station=p["name"])
        pkt = _eth(p) / ProfinetIO(frameID=0xFEFE) / d
        if n % 2:
            # scapy has no pad byte after the inline request block
            pkt = pkt / Raw(b"\x00")
        return pkt
    d = dcp.ProfinetDCP(service_id=0x05, service_type=0x00, xid=p["xid"],
                        reserved=p.get("response_delay", 1), option=255, sub_option=255,
                        dcp_data_length=4, dcp_block_length=0)
    return _eth(p) / ProfinetIO(frameID=0xFEFE) / d


def build_dcp_ident_res(p):
    name = p["name"].encode()
    vendor = p["vendor"].encode()
    blocks = [
        _blk(dcp.DCPManufacturerSpecificBlock, 2 + len(vendor), block_info=0,
             device_vendor_value=vendor),
        _blk(dcp.DCPNameOfStationBlock, 2 + len(name), block_info=0, name_of_station=name),
        _blk(dcp.DCPDeviceIDBlock, 6, block_info=0, vendor_id=p["vendor_id"],
             device_id=p["device_id"]),
        _blk(dcp.DCPDeviceRoleBlock, 4, block_info=0, device_role_details=p.get("role", 1)),
        _blk(dcp.DCPIPBlock, 14, block_info=p.get("ip_info", 1), ip=p["ip"], netmask=p["mask"],
             gateway=p["gw"]),
    ]
    data_len = sum(len(bytes(b)) for b in blocks)
    d = dcp.ProfinetDCP(service_id=0x05, service_type=0x01, xid=p["xid"], reserved=0,
                        dcp_data_length=data_len, dcp_blocks=blocks)
    return _eth(p, dst=p.get("dst", "02:00:00:00:00:02")) / ProfinetIO(frameID=0xFEFF) / d


def build_dcp_set_name(p):
    n = len(p["name"])
    d = dcp.ProfinetDCP(service_id=0x04, service_type=0x00, xid=p["xid"], reserved=0,
                        option=2, sub_option=2, block_qualifier=p.get("qualifier", 1),
                        dcp_data_length=6 + n + n % 2, dcp_block_length=2 + n,
                        name_of_station=p["name"])
    pkt = _eth(p, dst=p.get("dst", "02:00:00:00:00:02")) / ProfinetIO(frameID=0xFEFD) / d
    return pkt / Raw(b"\x00") if n % 2 else pkt


def build_dcp_set_ip(p):
    d = dcp.ProfinetDCP(service_id=0x04, service_type=0x00, xid=p["xid"], reserved=0,
                        option=1, sub_option=2, block_qualifier=p.get("qualifier", 1),
                        dcp_data_length=18, dcp_block_length=14,
                        ip=p["ip"], netmask=p["mask"], gateway=p["gw"])
    return _eth(p, dst=p.get("dst", "02:00:00:00:00:02")) / ProfinetIO(frameID=0xFEFD) / d


def build_rt_cyclic(p):
    data = bytes.fromhex(p["data"])
    pdu = PNIORealTimeCyclicPDU(data=[rpc.Raw(data)] if False else [],
                                padding=data, cycleCounter=p["cycle_counter"],
                                dataStatus=p["data_status"],
                                transferStatus=p.get("transfer_status", 0))
    return _eth(p, dst=p.get("dst", "02:00:00:00:00:02")) / ProfinetIO(frameID=p["frame_id"]) / pdu


def _uuid(s):
    return s


def build_connect_req(p):
    ar = rpc.ARBlockReq(ARType=p.get("ar_type", 1), ARUUID=_uuid(p["ar_uuid"]),
                        SessionKey=p["session_key"], CMInitiatorMacAdd=p["cm_mac"],
                        CMInitiatorObjectUUID=_uuid(p["cm_object_uuid"]),
                        ARProperties_StartupMode=p.get("startup_advanced", 0),
                        ARProperties_DeviceAccess=0,
                        ARProperties_State=1,
                        ARProperties_ParametrizationServer=0,
                        CMInitiatorActivityTimeoutFactor=p["activity_timeout"],
                        CMInitiatorUDPRTPort=0x8892,
                        CMInitiatorStationName=p["station"])
    iocrs = []
    for io in p["iocrs"]:
        iocrs.append(rpc.IOCRBlockReq(
            IOCRType=io["type"], IOCRReference=io["reference"], LT=0x8892,
            IOCRProperties_RTClass=io.get("rt_class", 2), DataLength=io["data_length"],
            FrameID=io["frame_id"], SendClockFactor=io["send_clock"],
            ReductionRatio=io["reduction"], Phase=io.get("phase", 1), Sequence=0,
            FrameSendOffset=0xFFFFFFFF, WatchdogFactor=io["watchdog"],
            DataHoldFactor=io["data_hold"], IOCRTagHeader_IOUserPriority=6,
            IOCRTagHeader_IOCRVLANID=0, IOCRMulticastMACAdd="01:0e:cf:00:00:00",
            APIs=[rpc.IOCRAPI(API=0,
                              IODataObjects=[rpc.IOCRAPIObject(SlotNumber=s, SubslotNumber=ss,
                                                               FrameOffset=off)
                                             for s, ss, off in io["data_objects"]],
                              IOCSs=[rpc.IOCRAPIObject(SlotNumber=s, SubslotNumber=ss,
                                                       FrameOffset=off)
                                     for s, ss, off in io["iocs"]])]))
    alarm = rpc.AlarmCRBlockReq(AlarmCRType=1, LT=0x8892, AlarmCRProperties_Priority=0,
                                AlarmCRProperties_Transport=0,
                                RTATimeoutFactor=p["rta_timeout"], RTARetries=p["rta_retries"],
                                LocalAlarmReference=p["alarm_ref"],
                                MaxAlarmDataLength=p["max_alarm_len"],
                                AlarmCRTagHeaderHigh=0xC000, AlarmCRTagHeaderLow=0xA000)
    mods = []
    for m in p["modules"]:
        subs = []
        for sm in m["submodules"]:
            dd = [rpc.ExpectedSubmoduleDataDescription(DataDescription=d[0],
                                                       SubmoduleDataLength=d[1],
                                                       LengthIOCS=1, LengthIOPS=1)
                  for d in sm["data"]]
            subs.append(rpc.ExpectedSubmodule(SubslotNumber=sm["subslot"],
                                              SubmoduleIdentNumber=sm["ident"],
                                              SubmoduleProperties_Type=sm["type"],
                                              DataDescription=dd))
        mods.append(rpc.ExpectedSubmoduleAPI(API=0, SlotNumber=m["slot"],
                                             ModuleIdentNumber=m["ident"], ModuleProperties=0,
                                             Submodules=subs))
    exp = rpc.ExpectedSubmoduleBlockReq(APIs=mods)
    return _rpc_request(p, 0, [ar] + iocrs + [alarm, exp])


def _rpc_request(p, opnum, blocks):
    pdu = rpc.PNIOServiceReqPDU(args_max=p.get("args_max", 16696), blocks=blocks)
    d = rpc.DceRpc4(ptype="request", flags1=0x20, endian=p.get("endian", "big"),
                    object=p.get("object", "dea00000-6c97-11d1-8271-000100010001"),
                    if_id="dea00001-6c97-11d1-8271-00a02442df7d",
                    act_id=p.get("activity", "11223344-5566-7788-99aa-bbccddeeff00"),
                    server_boot=0, if_vers=1, seqnum=p.get("seq", 0), opnum=opnum,
                    ihint=0xFFFF, ahint=0xFFFF, fragnum=0, auth_proto=0)
    return _udp(p) / d / pdu


def build_prmend(p):
    c = rpc.IODControlReq(ARUUID=p["ar_uuid"], SessionKey=p["session_key"],
                          ControlCommand_PrmEnd=1, ControlBlockProperties=0)
    c.block_type = 0x0110
    return _rpc_request(p, 4, [c])


def build_read_req(p):
    r = rpc.IODReadReq(seqNum=p["seq_num"], ARUUID=p["ar_uuid"], API=p["api"],
                       slotNumber=p["slot"], subslotNumber=p["subslot"], index=p["index"],
                       recordDataLength=p["length"])
    return _rpc_request(p, 2, [r])


def build_write_req(p):
    data = bytes.fromhex(p["data"])
    w = rpc.IODWriteReq(seqNum=p["seq_num"], ARUUID=p["ar_uuid"], API=p["api"],
                        slotNumber=p["slot"], subslotNumber=p["subslot"], index=p["index"])
    return _rpc_request(p, 3, [w / Raw(data)])


def build_write_multiple_req(p):
    recs = []
    for r in p["records"]:
        data = bytes.fromhex(r["data"])
        recs.append(rpc.IODWriteReq(seqNum=r["seq_num"], ARUUID=p["ar_uuid"], API=r["api"],
                                    slotNumber=r["slot"], subslotNumber=r["subslot"],
                                    index=r["index"]) / Raw(data))
    w = rpc.IODWriteMultipleReq(seqNum=p["seq_num"], ARUUID=p["ar_uuid"], blocks=recs)
    return _rpc_request(p, 3, [w])


def build_alarm_low(p):
    item = rpc.DiagnosisItem(UserStructureIdentifier=0x8002, ChannelNumber=p["channel"],
                             ChannelProperties=p["channel_properties"],
                             ChannelErrorType=p["error_type"],
                             ExtChannelErrorType=p["ext_error_type"],
                             ExtChannelAddValue=p["ext_add_value"])
    n = rpc.AlarmNotification_Low(AlarmType=p["alarm_type"], API=0, SlotNumber=p["slot"],
                                  SubslotNumber=p["subslot"], ModuleIdentNumber=p["module"],
                                  SubmoduleIdentNUmber=p["submodule"],
                                  AlarmSpecifier=p["specifier"], AlarmPayload=[item])
    a = rpc.Alarm_Low(AlarmDstEndpoint=p["dst_ep"], AlarmSrcEndpoint=p["src_ep"],
                      PDUTypeType=1, PDUTypeVersion=1, AddFlags=0x11,
                      SendSeqNum=p["send_seq"], AckSeqNum=p["ack_seq"],
                      # scapy 2.8 does not compute VarPartLen (plain XShortField, default 0)
                      VarPartLen=len(bytes(n)), RTA_SDU=n)
    return _eth(p, dst=p.get("dst", "02:00:00:00:00:02")) / ProfinetIO(frameID=0xFE01) / a


def build_lldp(p):
    frame = (Ether(dst="01:80:c2:00:00:0e", src=p.get("src", "02:00:00:00:00:01"), type=0x88CC)
             / lldp.LLDPDUChassisID(subtype=p.get("chassis_subtype", 7), id=p["chassis"])
             / lldp.LLDPDUPortID(subtype=p.get("port_subtype", 7), id=p["port"])
             / lldp.LLDPDUTimeToLive(ttl=p["ttl"]))
    if "system_name" in p:
        frame = frame / lldp.LLDPDUSystemName(system_name=p["system_name"])
    return frame / lldp.LLDPDUEndOfLLDPDU()


BUILDERS = {k[len("build_"):]: v for k, v in globals().items() if k.startswith("build_")}


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "build":
        params = json.loads(sys.argv[3]) if len(sys.argv) > 3 else {}
        pkt = BUILDERS[sys.argv[2]](params)
        print(bytes(pkt).hex())
    elif len(sys.argv) >= 2 and sys.argv[1] == "dissect":
        raw = bytes.fromhex("".join(sys.stdin.read().split()))
        pkt = Ether(raw)
        if pkt.haslayer(UDP) and not pkt.haslayer(rpc.DceRpc4):
            pkt[UDP].decode_payload_as(rpc.DceRpc4)
        json.dump(dump(pkt), sys.stdout)
        print()
    else:
        sys.stderr.write(__doc__)
        sys.exit(2)


if __name__ == "__main__":
    main()

//! Requests the tests build by hand on purpose, with the protocol crate's codecs: RPC-level
//! stimuli (a call on the peer's own activity, a Ping, a Ping amid a fragmented request), a
//! second Connect, the supervisor AR's services, implicit reads, a MultipleWrite whose
//! per-record answers are checked. The normal AR sequence is CMCTL's (peer.rs).

use pn_protocol::wire::Emit;
use std::net::SocketAddrV4;
use std::time::{Duration, Instant};

use pn_protocol::machine::cmctl::{RpcClient, RpcClientConfig};
use pn_protocol::wire::field::Writer;
use pn_protocol::wire::pnio::ar::{ar_type, ArBlockReq, ArProperties};
use pn_protocol::wire::pnio::cm::ConnectRequest;
use pn_protocol::wire::pnio::control::ControlBlock;
use pn_protocol::wire::pnio::example;
use pn_protocol::wire::pnio::expected::{DataDescription, ExpectedSubmodule, SubmoduleProperties};
use pn_protocol::wire::pnio::iocr::{iocr_type, IoObject, IocrProperties};
use pn_protocol::wire::pnio::record::{
    ReadReqHeaderRepr, ReadRequest, ReadResponse, RecordAddress,
};
use pn_protocol::wire::pnio::PnioStatus;
use pn_protocol::wire::rpc::{
    self, opnum, PacketType, PnioRequest, PnioResponse, RpcHeader, RpcPacket, Uuid,
    PNIO_DEVICE_INTERFACE,
};

use super::{Peer, DEVICE, DEV_IP, VENDOR};

pub(super) fn dev_addr() -> SocketAddrV4 {
    SocketAddrV4::new(DEV_IP, 34964)
}

/// The device's PNIO object UUID.
pub(super) fn object() -> Uuid {
    Uuid::pnio_object(1, DEVICE, VENDOR)
}

impl Peer {
    /// One RPC call to the device on the peer's own activity, from the RPC server port, made
    /// by the protocol crate's RPC client (fragmentation, retransmission, reassembly); for the
    /// requests the AR's CMCTL does not make. Panics on a Fault, Reject or no answer.
    pub fn call(&mut self, op: u16, data: Vec<u8>) -> PnioResponse {
        self.seq += 1;
        let cfg = RpcClientConfig {
            drep: self.drep,
            ..RpcClientConfig::default()
        };
        let mut rpc = RpcClient::new(cfg, dev_addr(), object(), self.activity, self.seq);
        rpc.start(self.now(), op, data, 65000).expect("request");
        let mut buf = vec![0u8; 65536];
        loop {
            while let Some(b) = rpc.poll_transmit() {
                self.udp.send_to(&b, dev_addr()).expect("peer send");
            }
            let wait = rpc.poll_timeout().map_or(Duration::ZERO, |t| self.until(t));
            let result = match self.recv_own(&mut buf, wait) {
                Some(p) => rpc.handle_packet(self.now(), &p),
                None => rpc.handle_timeout(self.now()),
            };
            if let Some(r) = result {
                return r.unwrap_or_else(|e| panic!("RPC opnum {op}: {e}"));
            }
        }
    }

    /// A fragmented call whose first fragment is followed by a Ping before the rest is sent:
    /// returns the answer to the Ping (Working expected) and the call's response.
    pub fn call_with_ping_midway(&mut self, op: u16, data: Vec<u8>) -> (PacketType, PnioResponse) {
        self.seq += 1;
        let seq = self.seq;
        let body = PnioRequest::new(65000, data)
            .ndr(self.drep)
            .to_bytes()
            .unwrap();
        let pkts = rpc::fragment(&self.header(seq, op), &body, 1392, false).unwrap();
        assert!(pkts.len() >= 2);
        self.send(&pkts[0]);
        let pt = self.ping(seq);
        pkts[1..].iter().for_each(|p| self.send(p));
        let p = self.await_own("the call's response", seq, |t| t == PacketType::Response);
        (pt, PnioResponse::parse(&p.body, p.header.drep).unwrap())
    }

    /// Send a CL Ping for call `seq` of our activity; returns the packet type of the answer
    /// (the resent Response for an answered call, Nocall for an unknown one).
    pub fn ping(&mut self, seq: u32) -> PacketType {
        let mut h = self.header(seq, opnum::READ_IMPLICIT);
        h.packet_type = PacketType::Ping;
        self.send(&RpcPacket::new(h, Vec::new()));
        let p = self.await_own("an answer to the Ping", seq, |_| true);
        p.header.packet_type
    }

    fn header(&self, seq: u32, op: u16) -> RpcHeader {
        RpcHeader::request(
            self.drep,
            object(),
            PNIO_DEVICE_INTERFACE,
            self.activity,
            seq,
            op,
        )
    }

    fn send(&self, p: &RpcPacket) {
        self.udp
            .send_to(&p.to_bytes().unwrap(), dev_addr())
            .expect("peer send");
    }

    /// The next packet of call `seq` of our activity whose type `want` accepts, within 5 s.
    fn await_own(&mut self, what: &str, seq: u32, want: fn(PacketType) -> bool) -> RpcPacket {
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut buf = vec![0u8; 65536];
        loop {
            let left = deadline
                .checked_duration_since(Instant::now())
                .unwrap_or_else(|| panic!("no {what}"));
            if let Some(p) = self.recv_own(&mut buf, left) {
                if p.header.sequence == seq && want(p.header.packet_type) {
                    return p;
                }
            }
        }
    }

    /// The connect request blocks for the test layout (what CMCTL sends, and the stimulus of
    /// a test that connects by hand): [`Peer::connect_request`] encoded.
    pub fn connect_blocks(&self) -> Vec<u8> {
        self.connect_request().to_bytes().unwrap()
    }

    /// The connect request for the test layout: the protocol crate's example request with this
    /// AR's identity, timing and layout (DAP with its interface and port, slot 1 with 4 bytes
    /// each way).
    pub fn connect_request(&self) -> ConnectRequest {
        let t = self.timing;
        let mut req = example::connect_request();
        let ar = &mut req.ar;
        ar.ar_uuid = self.ar_uuid;
        ar.session_key = self.session_key;
        ar.cm_initiator_mac = self.mac;
        ar.cm_initiator_object_uuid = Uuid::pnio_object(1, 0x0002, VENDOR);
        let startup = if self.advanced {
            ArProperties::STARTUP_MODE_ADVANCED
        } else {
            0
        };
        ar.properties = ArProperties(
            ArProperties::STATE_ACTIVE | ArProperties::PARAMETERIZATION_SERVER | startup,
        );
        ar.cm_initiator_activity_timeout_factor = self.cmi_factor;
        ar.cm_initiator_station_name = "test-plc".into();
        // As controllers do: the input CR's FrameID is proposed by the controller, the output
        // CR's (0xFFFF) is assigned by the device. Advanced startup requires RT_CLASS_2 (IEC
        // 61158-6-10 IOCRBlockReq), legacy startup uses RT_CLASS_1; each has its FrameID range.
        let (class, input_id) = if self.advanced {
            (IocrProperties::RT_CLASS_2, 0x8010)
        } else {
            (IocrProperties::RT_CLASS_1, 0xC010)
        };
        let objs = |v: &[(u16, u16, u16)]| -> Vec<IoObject> {
            v.iter()
                .map(|&(slot, subslot, frame_offset)| IoObject {
                    slot,
                    subslot,
                    frame_offset,
                })
                .collect()
        };
        // Input CR (device -> controller): DAP IOPS at 0..2, slot 1 data 3..7 + IOPS 7, IOCS
        // of slot 1's output part at 8. Output CR (controller -> device): slot 1 data 0..4 +
        // IOPS 4, IOCS 5..8.
        let layout = [
            (
                objs(&[(0, 1, 0), (0, 0x8000, 1), (0, 0x8001, 2), (1, 1, 3)]),
                objs(&[(1, 1, 8)]),
            ),
            (
                objs(&[(1, 1, 0)]),
                objs(&[(0, 1, 5), (0, 0x8000, 6), (0, 0x8001, 7), (1, 1, 8)]),
            ),
        ];
        for (cr, (data, iocs)) in req.iocrs.iter_mut().zip(layout) {
            cr.properties = IocrProperties(class);
            if cr.iocr_type == iocr_type::INPUT {
                cr.frame_id = input_id;
            }
            cr.send_clock_factor = t.send_clock_factor;
            cr.reduction_ratio = t.reduction_ratio;
            cr.watchdog_factor = t.data_hold_factor;
            cr.data_hold_factor = t.data_hold_factor;
            cr.apis[0].io_data_objects = data;
            cr.apis[0].iocs = iocs;
        }
        req.alarm_cr
            .as_mut()
            .expect("AlarmCR")
            .local_alarm_reference = 3;
        let sub = |subslot, submodule_ident, props, descriptions| ExpectedSubmodule {
            subslot,
            submodule_ident,
            properties: SubmoduleProperties(props),
            descriptions,
        };
        let no_io = SubmoduleProperties::TYPE_NO_IO;
        let modules = &mut req.expected[0].modules;
        modules[0].submodules = (1..)
            .zip([1, 0x8000, 0x8001])
            .map(|(ident, subslot)| sub(subslot, ident, no_io, vec![DataDescription::input(0)]))
            .collect();
        modules[1].module_ident = 0x30;
        modules[1].submodules = vec![sub(
            1,
            if self.wrong_slot1_ident { 99 } else { 1 },
            SubmoduleProperties::TYPE_INPUT_OUTPUT,
            vec![DataDescription::input(4), DataDescription::output(4)],
        )];
        req
    }

    /// A supervisor (DeviceAccess) AR connect: ARBlockReq only, ARType 0x0006.
    pub fn supervisor_connect(&mut self, ar_uuid: Uuid) -> PnioResponse {
        let mut w = Writer::new();
        ArBlockReq {
            version: (1, 0),
            ar_type: ar_type::IOSAR,
            ar_uuid,
            session_key: 7,
            cm_initiator_mac: self.mac,
            cm_initiator_object_uuid: Uuid::pnio_object(1, 0x0002, VENDOR),
            properties: ArProperties(ArProperties::STATE_ACTIVE | ArProperties::DEVICE_ACCESS),
            cm_initiator_activity_timeout_factor: 600,
            cm_initiator_udp_rt_port: 0x8892,
            cm_initiator_station_name: "commissioning-tool".into(),
        }
        .emit(&mut w)
        .unwrap();
        self.call(opnum::CONNECT, w.into_inner())
    }

    /// Release of an AR given by UUID and session key.
    pub fn release_ar(&mut self, ar_uuid: Uuid, session_key: u16) -> PnioResponse {
        let mut w = Writer::new();
        ControlBlock::release_req(ar_uuid, session_key)
            .emit(&mut w)
            .unwrap();
        self.call(opnum::RELEASE, w.into_inner())
    }

    /// Record read with any AR UUID (nil = implicit read, opnum 5); with the AR the peer
    /// established, through its CMCTL.
    pub fn read_with(
        &mut self,
        ar: Uuid,
        slot: u16,
        subslot: u16,
        index: u16,
    ) -> (PnioStatus, Vec<u8>) {
        if self.own_ar(ar) {
            return self.read_ar(slot, subslot, index, 65000);
        }
        let implicit = ar == Uuid::NIL;
        let req = ReadRequest::new(ReadReqHeaderRepr {
            seq_number: self.seq as u16,
            ar_uuid: ar.0,
            address: RecordAddress::new(0, slot, subslot, index),
            record_data_length: 65000,
            target_ar_uuid: [0; 16],
        });
        let op = if implicit {
            opnum::READ_IMPLICIT
        } else {
            opnum::READ
        };
        let r = self.call(op, req.to_bytes().unwrap());
        let data = ReadResponse::parse(&r.data)
            .map(|x| x.data)
            .unwrap_or_default();
        (r.status, data)
    }

    /// Single record write with another AR (the supervisor AR); see [`Peer::write`] for the
    /// peer's own.
    pub fn write_with(
        &mut self,
        ar: Uuid,
        slot: u16,
        subslot: u16,
        index: u16,
        data: Vec<u8>,
    ) -> PnioResponse {
        let req = pn_protocol::wire::pnio::record::WriteRequest::single(
            self.seq as u16,
            ar.0,
            RecordAddress::new(0, slot, subslot, index),
            data,
        )
        .unwrap();
        self.call(opnum::WRITE, req.to_bytes().unwrap())
    }

    /// MultipleWrite with the IO AR: (slot, subslot, index, data) per record. By hand: the test
    /// reads the per-record statuses of the response, which CMCTL does not hand out.
    pub fn multiple_write(&mut self, recs: Vec<(u16, u16, u16, Vec<u8>)>) -> PnioResponse {
        use pn_protocol::wire::pnio::record::{WriteRecord, WriteReqHeaderRepr, WriteRequest};
        let seq = self.seq as u16;
        let ar = self.ar_uuid.0;
        let records = recs
            .into_iter()
            .map(|(slot, subslot, index, data)| WriteRecord {
                header: WriteReqHeaderRepr {
                    seq_number: seq,
                    ar_uuid: ar,
                    address: RecordAddress::new(0, slot, subslot, index),
                    record_data_length: data.len() as u32,
                },
                data,
            })
            .collect();
        let req = WriteRequest::multiple(seq, ar, records).unwrap();
        self.call(opnum::WRITE, req.to_bytes().unwrap())
    }
}

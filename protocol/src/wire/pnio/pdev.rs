//! Physical-device (PDev) real data: what a device reports about its interface and ports when
//! an engineering tool or a controller reads records 0x802A (PDPortDataReal, port subslots
//! 0x8001..), 0x8080 (PDInterfaceDataReal, interface subslot 0x8000) and 0xF841 (PDRealData:
//! both, each in a MultipleBlockHeader naming its submodule). Topology views (TIA Portal,
//! PRONETA) read these to show each port's neighbour and link.
//!
//! ```text
//! PDPortDataReal 0x020F v1.0: Padding 2, SlotNumber u16, SubslotNumber u16,
//!     LengthOwnPortID u8, OwnPortID, NumberOfPeers u8, align 4,
//!     { LengthPeerPortID u8, PeerPortID, LengthPeerChassisID u8, PeerChassisID, align 4,
//!       LineDelay u32, PeerMACAddress 6, align 4 },
//!     MAUType u16, align 4, DomainBoundary u32, MulticastBoundary u32,
//!     LinkState.Port u8, LinkState.Link u8, align 4, MediaType u32
//! PDInterfaceDataReal 0x0240 v1.0: LengthOwnChassisID u8, OwnChassisID, align 4,
//!     MACAddressValue 6, align 4, IPAddress u32, Subnetmask u32, StandardGateway u32
//! PDPortStatistic 0x0251 v1.0: Padding 2, ifInOctets, ifOutOctets, ifInDiscards,
//!     ifOutDiscards, ifInErrors, ifOutErrors (u32 each, wrapping like SNMP Counter32)
//! MultipleBlockHeader 0x0400 v1.0: Padding 2, API u32, SlotNumber u16, SubslotNumber u16,
//!     blocks
//! ```
//! "align 4" pads with zeros to a multiple of four bytes from the start of the block (the
//! records start 4-aligned in the NDR data). The name fields are at most 255 bytes (u8
//! length).
//!
//! Sources: Wireshark `plugins/epan/profinet/packet-dcerpc-pn-io.c` (the PDPortDataReal,
//! PDInterfaceDataReal and MultipleBlockHeader dissectors, which the tshark tests run on
//! what this module emits); p-net `src/device/pf_block_writer.c` `pf_put_pdport_data_real`,
//! `pf_put_pdinterface_data_real`, `pf_put_pdport_statistics`,
//! `pf_put_pd_multiblock_port_and_statistics`; record 0x8072 (PDPortStatistic) on the
//! interface and on each port, and the statistics inside PDRealData: p-net
//! `src/device/pf_pdport.c` `pf_pdport_read_ind`.
//!
//! Fuzz entry points: [`PdPortDataReal::parse`], [`PdInterfaceDataReal::parse`],
//! [`PdPortStatistic::parse`].

use crate::wire::field::{Reader, Writer};
use crate::wire::pnio::block::{BlockBody, BlockView, HEADER_LEN};
use crate::wire::{Error, Result};

pub mod block_type {
    pub const PD_PORT_DATA_REAL: u16 = 0x020F;
    pub const PD_INTERFACE_DATA_REAL: u16 = 0x0240;
    pub const PD_PORT_STATISTIC: u16 = 0x0251;
    pub const MULTIPLE_BLOCK_HEADER: u16 = 0x0400;
}

/// LinkState.Link values (IEC 61158-6-10; p-net `PF_PD_LINK_STATE_LINK_*`).
pub mod link {
    pub const UP: u8 = 1;
    pub const DOWN: u8 = 2;
}

/// MediaType values.
pub mod media_type {
    pub const UNKNOWN: u32 = 0;
    pub const COPPER: u32 = 1;
    pub const FIBER: u32 = 2;
    pub const RADIO: u32 = 3;
}

/// One neighbour of a port, as learnt by LLDP.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Peer {
    /// The neighbour's LLDP Port ID (e.g. "port-001").
    pub port_id: String,
    /// The neighbour's LLDP Chassis ID (its NameOfStation for a PROFINET device).
    pub chassis_id: String,
    /// Measured line delay in ns (0: not measured).
    pub line_delay: u32,
    pub mac: [u8; 6],
}

/// PDPortDataReal (block 0x020F).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PdPortDataReal {
    pub slot: u16,
    pub subslot: u16,
    /// This port's LLDP Port ID.
    pub own_port_id: String,
    pub peers: Vec<Peer>,
    pub mau_type: u16,
    pub domain_boundary: u32,
    pub multicast_boundary: u32,
    /// LinkState.Port (0: unknown).
    pub link_port: u8,
    /// LinkState.Link ([`link::UP`], [`link::DOWN`]).
    pub link: u8,
    pub media_type: u32,
}

/// PDInterfaceDataReal (block 0x0240).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PdInterfaceDataReal {
    /// The interface's LLDP Chassis ID (the NameOfStation).
    pub chassis_id: String,
    pub mac: [u8; 6],
    pub ip: [u8; 4],
    pub netmask: [u8; 4],
    pub gateway: [u8; 4],
}

fn put_name(w: &mut Writer, s: &str, what: &'static str) -> Result<()> {
    let n = u8::try_from(s.len()).map_err(|_| Error::Malformed(what))?;
    w.u8(n).bytes(s.as_bytes());
    Ok(())
}

fn get_name(r: &mut Reader<'_>, what: &'static str) -> Result<String> {
    let n = usize::from(r.u8()?);
    let b = r.bytes(n)?;
    String::from_utf8(b.to_vec()).map_err(|_| Error::Malformed(what))
}

/// `pos` (counted from the start of the block) rounded up to a multiple of four.
fn align4_len(pos: usize) -> usize {
    pos.next_multiple_of(4)
}

/// Zeros up to the next multiple of four from the start of the block.
fn align4(w: &mut Writer, start: usize) {
    let pad = align4_len(w.len() - start) - (w.len() - start);
    w.zeros(pad);
}

/// Where the block being emitted starts: `emit_body` runs after the six header bytes, and the
/// PDev blocks align their fields to four bytes from the block start.
fn block_start(w: &Writer) -> usize {
    w.len() - HEADER_LEN
}

fn skip_align4(r: &mut Reader<'_>) -> Result<()> {
    r.skip((4 - r.pos() % 4) % 4)
}

/// The block of `buf` with the expected type, and a reader over the whole block (header
/// included, so alignment counts from the block start) placed after the header.
fn open(buf: &[u8], block_type: u16) -> Result<Reader<'_>> {
    let b = BlockView::new_checked(buf)?;
    if b.block_type() != block_type {
        return Err(Error::Malformed("unexpected block type"));
    }
    let mut r = Reader::new(b.as_bytes());
    r.skip(super::block::HEADER_LEN)?;
    Ok(r)
}

impl BlockBody for PdPortDataReal {
    fn block_type(&self) -> u16 {
        block_type::PD_PORT_DATA_REAL
    }
    fn block_version(&self) -> (u8, u8) {
        (1, 0)
    }
    fn body_len(&self) -> usize {
        let mut pos = align4_len(HEADER_LEN + 6 + 1 + self.own_port_id.len() + 1);
        for p in &self.peers {
            pos = align4_len(pos + 2 + p.port_id.len() + p.chassis_id.len());
            pos = align4_len(pos + 10);
        }
        pos = align4_len(pos + 2);
        pos = align4_len(pos + 10);
        pos + 4 - HEADER_LEN
    }
    fn emit_body(&self, w: &mut Writer) -> Result<()> {
        let peers = u8::try_from(self.peers.len()).map_err(|_| Error::Malformed("peers"))?;
        let start = block_start(w);
        w.zeros(2).u16(self.slot).u16(self.subslot);
        put_name(w, &self.own_port_id, "OwnPortID longer than 255")?;
        w.u8(peers);
        align4(w, start);
        for p in &self.peers {
            put_name(w, &p.port_id, "PeerPortID longer than 255")?;
            put_name(w, &p.chassis_id, "PeerChassisID longer than 255")?;
            align4(w, start);
            w.u32(p.line_delay).bytes(&p.mac);
            align4(w, start);
        }
        w.u16(self.mau_type);
        align4(w, start);
        w.u32(self.domain_boundary)
            .u32(self.multicast_boundary)
            .u8(self.link_port)
            .u8(self.link);
        align4(w, start);
        w.u32(self.media_type);
        Ok(())
    }
}

impl PdPortDataReal {
    /// Parse one block (extra bytes after it are ignored). The peer list grows only with
    /// the input: each peer consumes at least twelve bytes.
    pub fn parse(buf: &[u8]) -> Result<Self> {
        let mut r = open(buf, block_type::PD_PORT_DATA_REAL)?;
        r.skip(2)?;
        let slot = r.u16()?;
        let subslot = r.u16()?;
        let own_port_id = get_name(&mut r, "OwnPortID is not UTF-8")?;
        let n = r.u8()?;
        skip_align4(&mut r)?;
        let mut peers = Vec::new();
        for _ in 0..n {
            let port_id = get_name(&mut r, "PeerPortID is not UTF-8")?;
            let chassis_id = get_name(&mut r, "PeerChassisID is not UTF-8")?;
            skip_align4(&mut r)?;
            let line_delay = r.u32()?;
            let mac = r.array::<6>()?;
            skip_align4(&mut r)?;
            peers.push(Peer {
                port_id,
                chassis_id,
                line_delay,
                mac,
            });
        }
        let mau_type = r.u16()?;
        skip_align4(&mut r)?;
        let domain_boundary = r.u32()?;
        let multicast_boundary = r.u32()?;
        let link_port = r.u8()?;
        let link = r.u8()?;
        skip_align4(&mut r)?;
        let media_type = r.u32()?;
        Ok(PdPortDataReal {
            slot,
            subslot,
            own_port_id,
            peers,
            mau_type,
            domain_boundary,
            multicast_boundary,
            link_port,
            link,
            media_type,
        })
    }
}

impl BlockBody for PdInterfaceDataReal {
    fn block_type(&self) -> u16 {
        block_type::PD_INTERFACE_DATA_REAL
    }
    fn block_version(&self) -> (u8, u8) {
        (1, 0)
    }
    fn body_len(&self) -> usize {
        let pos = align4_len(HEADER_LEN + 1 + self.chassis_id.len());
        align4_len(pos + 6) + 12 - HEADER_LEN
    }
    fn emit_body(&self, w: &mut Writer) -> Result<()> {
        let start = block_start(w);
        put_name(w, &self.chassis_id, "OwnChassisID longer than 255")?;
        align4(w, start);
        w.bytes(&self.mac);
        align4(w, start);
        w.bytes(&self.ip).bytes(&self.netmask).bytes(&self.gateway);
        Ok(())
    }
}

impl PdInterfaceDataReal {
    pub fn parse(buf: &[u8]) -> Result<Self> {
        let mut r = open(buf, block_type::PD_INTERFACE_DATA_REAL)?;
        let chassis_id = get_name(&mut r, "OwnChassisID is not UTF-8")?;
        skip_align4(&mut r)?;
        let mac = r.array::<6>()?;
        skip_align4(&mut r)?;
        Ok(PdInterfaceDataReal {
            chassis_id,
            mac,
            ip: r.array::<4>()?,
            netmask: r.array::<4>()?,
            gateway: r.array::<4>()?,
        })
    }
}

/// PDPortStatistic (block 0x0251): the interface's or a port's counters (the low 32 bits).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PdPortStatistic {
    pub in_octets: u32,
    pub out_octets: u32,
    pub in_discards: u32,
    pub out_discards: u32,
    pub in_errors: u32,
    pub out_errors: u32,
}

impl BlockBody for PdPortStatistic {
    fn block_type(&self) -> u16 {
        block_type::PD_PORT_STATISTIC
    }
    fn block_version(&self) -> (u8, u8) {
        (1, 0)
    }
    fn body_len(&self) -> usize {
        26
    }
    fn emit_body(&self, w: &mut Writer) -> Result<()> {
        w.zeros(2)
            .u32(self.in_octets)
            .u32(self.out_octets)
            .u32(self.in_discards)
            .u32(self.out_discards)
            .u32(self.in_errors)
            .u32(self.out_errors);
        Ok(())
    }
}

impl PdPortStatistic {
    pub fn parse(buf: &[u8]) -> Result<Self> {
        let mut r = open(buf, block_type::PD_PORT_STATISTIC)?;
        r.skip(2)?;
        Ok(PdPortStatistic {
            in_octets: r.u32()?,
            out_octets: r.u32()?,
            in_discards: r.u32()?,
            out_discards: r.u32()?,
            in_errors: r.u32()?,
            out_errors: r.u32()?,
        })
    }
}

/// A MultipleBlockHeader (0x0400) around `blocks` (already emitted, each a whole number of
/// 4-byte words, as the PDev blocks above are) for one submodule: PDRealData (0xF841) is one
/// of these per PDev submodule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MultipleBlock<'a> {
    pub api: u32,
    pub slot: u16,
    pub subslot: u16,
    pub blocks: &'a [u8],
}

impl BlockBody for MultipleBlock<'_> {
    fn block_type(&self) -> u16 {
        block_type::MULTIPLE_BLOCK_HEADER
    }
    fn block_version(&self) -> (u8, u8) {
        (1, 0)
    }
    fn body_len(&self) -> usize {
        10 + self.blocks.len()
    }
    fn emit_body(&self, w: &mut Writer) -> Result<()> {
        w.zeros(2)
            .u32(self.api)
            .u16(self.slot)
            .u16(self.subslot)
            .bytes(self.blocks);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Emit;

    fn port(own: &str, peers: usize) -> PdPortDataReal {
        PdPortDataReal {
            slot: 0,
            subslot: 0x8001,
            own_port_id: own.into(),
            peers: (0..peers)
                .map(|i| Peer {
                    port_id: format!("port-00{i}"),
                    chassis_id: "plc-1".repeat(i + 1),
                    line_delay: 10 * i as u32,
                    mac: [2, 0, 0, 0, 0, i as u8],
                })
                .collect(),
            mau_type: 0x10,
            domain_boundary: 0,
            multicast_boundary: 0,
            link_port: 0,
            link: link::UP,
            media_type: media_type::COPPER,
        }
    }

    #[test]
    fn port_data_round_trips_with_every_alignment() {
        for own in ["", "p", "port", "port-001", "port-001.x"] {
            for peers in 0..3 {
                let p = port(own, peers);
                let b = p.to_bytes().unwrap();
                assert_eq!(b.len() % 4, 0, "{own} {peers}");
                assert_eq!(PdPortDataReal::parse(&b).unwrap(), p);
                // Every cut is an error, never a panic.
                for cut in 0..b.len() {
                    assert!(PdPortDataReal::parse(&b[..cut]).is_err());
                }
            }
        }
        // p-net's layout for an 8-byte port name and one peer: the fields at fixed offsets.
        let b = port("port-001", 1).to_bytes().unwrap();
        assert_eq!(&b[0..2], &[0x02, 0x0F]);
        assert_eq!(&b[12..14], &[8, b'p']);
        assert_eq!(b[21], 1); // NumberOfPeers
        assert_eq!(&b[22..24], &[0, 0]); // align 4
    }

    #[test]
    fn interface_data_round_trips() {
        for name in ["", "a", "dev-1", "pn-device", &"x".repeat(240)] {
            let d = PdInterfaceDataReal {
                chassis_id: name.into(),
                mac: [2, 1, 2, 3, 4, 5],
                ip: [192, 168, 0, 2],
                netmask: [255, 255, 255, 0],
                gateway: [0, 0, 0, 0],
            };
            let b = d.to_bytes().unwrap();
            assert_eq!(b.len() % 4, 0);
            assert_eq!(PdInterfaceDataReal::parse(&b).unwrap(), d);
            for cut in 0..b.len() {
                assert!(PdInterfaceDataReal::parse(&b[..cut]).is_err());
            }
        }
        let long = PdInterfaceDataReal {
            chassis_id: "x".repeat(256),
            mac: [0; 6],
            ip: [0; 4],
            netmask: [0; 4],
            gateway: [0; 4],
        };
        assert!(long.to_bytes().is_err());
    }

    #[test]
    fn statistic_round_trips() {
        let st = PdPortStatistic {
            in_octets: 1,
            out_octets: 2,
            in_discards: 3,
            out_discards: 4,
            in_errors: 5,
            out_errors: u32::MAX,
        };
        let b = st.to_bytes().unwrap();
        assert_eq!(b.len(), 32);
        assert_eq!(&b[..6], &[0x02, 0x51, 0x00, 0x1c, 1, 0]);
        assert_eq!(PdPortStatistic::parse(&b).unwrap(), st);
        for cut in 0..b.len() {
            assert!(PdPortStatistic::parse(&b[..cut]).is_err());
        }
    }

    #[test]
    fn wrong_block_type_is_refused() {
        let b = port("port-001", 0).to_bytes().unwrap();
        assert!(PdInterfaceDataReal::parse(&b).is_err());
    }
}

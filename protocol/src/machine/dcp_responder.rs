//! The DCP responder: the device role of PN-DCP (IEC 61158-6-10 DCP, "DCP server"), sans-IO:
//! input frame + `now` -> frames to send, events, next deadline. Wire format:
//! [`crate::wire::dcp`]; Identify response delay: [`crate::machine::dcp_delay`]. The device
//! daemon and the plant farm run this one responder; the tshark and real-frame checks build
//! their Identify responses with it too.
//!
//! # Behaviour (facts and sources in docs/protocol-notes/device-l2.md)
//! * **Identify** (FrameID 0xFEFE, to 01:0E:CF:00:00:00 or our MAC): answered when every filter
//!   block matches (AllSelector, NameOfStation, AliasName from the LLDP neighbour, DeviceID,
//!   DeviceVendor, DeviceRole, IP parameter, ...), after `(MAC[4..6] mod ResponseDelayFactor)
//!   x 10 ms`. Response (0xFEFF, unicast to the requester): IP parameter, DeviceVendor,
//!   NameOfStation, DeviceID, DeviceRole, DeviceOptions, AliasName (when asked by alias),
//!   DeviceInstance.
//! * **Get** (0xFEFD, to our MAC): each selector answered with its value (BlockInfo), or a
//!   Control/Response block with the BlockError.
//! * **Set** (0xFEFD, to our MAC): one Control/Response block per request block.
//!   - NameOfStation / IP parameter / full IP suite: `BlockQualifier` bit 0 = 1 permanent,
//!     0 temporary. A *temporary* value is used now and not stored (`permanent: false` in
//!     `DcpNameAssigned` / `DcpIpAssigned`). p-net (`pf_cmina_dcp_set_ind`) also erases a
//!     previously stored permanent value; whether the runtime does is a recorded decision
//!     (docs/protocol-notes/device-l2.md, known gaps).
//!   - A name change while an AR is active is accepted and the ARs are aborted
//!     ([`DcpEvent::AbortArs`], p-net CMINA case 27, abort reason "DCP station name changed").
//!   - An IP change while an AR is active is refused with BlockError 6 "in operation, SET not
//!     possible" (PROFINET CMINA case 26; p-net leaves BlockError 2 there, we use the specific
//!     code). Setting the same IP again is accepted.
//!   - Remanent data is acknowledged only after it is durable: a Set of name or IP (permanent
//!     stores the value, temporary erases the stored one) and a reset first commit the change
//!     through the hook given with [`DcpResponder::with_durable`] (the daemon stores it: temp
//!     file, fsync, rename, directory fsync) and only then take the value and answer OK. If it cannot be stored: BlockError 5 "SET not possible by local reasons" and
//!     the old value stays (docs/decisions.md).
//!   - Invalid name or IP suite: BlockError 3 "suboption not set". DHCP (option 3),
//!     DeviceInitiative (6) and unknown options: 1 "option unsupported". Read-only or unknown
//!     suboptions (MAC, DeviceVendor, DeviceID, ...): 2 "suboption unsupported".
//!   - Control: Start/Stop transaction OK; Signal -> [`DcpEvent::Signal`]; FactoryReset (5/5)
//!     and ResetToFactory (5/6) -> [`DcpEvent::ResetToFactory`] and ARs aborted. ResetToFactory
//!     modes (qualifier >> 1): 2 communication parameters -> [`ResetMode::Communication`];
//!     4 all stored data and 8 device -> [`ResetMode::Factory`]; others (1 application data,
//!     3 engineering, 9 reset and restore) -> BlockError 2.
//! * **Hello** (0xFEFC to 01:0E:CF:00:00:01) at start when DeviceInitiative is configured:
//!   3 times, 3 s apart, stopped by the first Set (p-net `PF_CMINA_FS_HELLO_RETRY/INTERVAL`).

use std::net::Ipv4Addr;

use std::sync::Arc;

use crate::machine::dcp_delay::{response_delay, DelayedResponses};
use crate::time::{Duration, Instant};
use crate::wire::dcp::{
    device_role, ip_block_info, option, qualifier, suboption, BlockError, DcpBlock, DcpRepr,
    DcpValue, NameOfStation, ServiceId, ServiceType,
};
use crate::wire::ethernet::MacAddr;

/// What a ResetToFactory (or the daemon's `POST /api/reset`) resets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "camelCase"))]
pub enum ResetMode {
    /// The communication parameters (NameOfStation, IP suite): back to the configuration, ARs
    /// released. I&M1-4 and records are kept.
    Communication,
    /// All stored data (name, IP, I&M1-4, records), then as `Communication`.
    Factory,
}

/// Stores the remanent part of an event before the Set is answered; `Err` (with the reason)
/// when it cannot be stored: the Set is then refused with BlockError 5.
pub type DurableHook = Arc<dyn Fn(&DcpEvent) -> Result<(), String> + Send + Sync>;

/// Hello repetitions at start.
pub const HELLO_COUNT: u8 = 3;
/// Interval between Hellos.
pub const HELLO_INTERVAL: Duration = Duration::from_millis(3000);
/// Most delayed Identify responses kept (bounds memory under an Identify flood).
pub const MAX_DELAYED: usize = 16;

/// What the device answers with (current values; updated by Set).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DcpIdentity {
    pub mac: MacAddr,
    /// Current NameOfStation ("" = no name).
    pub station_name: String,
    /// DeviceVendorValue ("type of station", the DeviceName of the configuration).
    pub device_vendor: String,
    pub vendor_id: u16,
    pub device_id: u16,
    pub ip: Ipv4Addr,
    pub mask: Ipv4Addr,
    pub gateway: Ipv4Addr,
    /// DeviceInstance (high, low).
    pub device_instance: (u8, u8),
    /// Send Hello at start (DeviceInitiative = 1).
    pub device_initiative: bool,
}

/// What happened, for the composing layer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DcpEvent {
    NameAssigned {
        name: String,
        permanent: bool,
    },
    /// The IP suite to apply to the interface (the caller applies it and reports the result).
    IpAssigned {
        ip: Ipv4Addr,
        mask: Ipv4Addr,
        gateway: Ipv4Addr,
        permanent: bool,
    },
    Signal,
    ResetToFactory {
        qualifier: u16,
        mode: ResetMode,
    },
    /// Abort every AR (name changed or reset while connected).
    AbortArs {
        reason: &'static str,
    },
}

/// Result of [`DcpResponder::on_frame`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DcpOutput {
    /// Complete Ethernet frames to send now.
    pub frames: Vec<Vec<u8>>,
    pub events: Vec<DcpEvent>,
    /// The frame was DCP but could not be parsed.
    pub invalid: bool,
    /// The frame was a request we answered or queued.
    pub handled: bool,
}

/// The sans-IO DCP responder.
#[derive(Clone)]
pub struct DcpResponder {
    id: DcpIdentity,
    /// Configured name and IP suite (ResetToFactory goes back to these).
    configured: (String, Ipv4Addr, Ipv4Addr, Ipv4Addr),
    ar_active: bool,
    aliases: Vec<Vec<u8>>,
    delayed: DelayedResponses<Vec<u8>>,
    hello_left: u8,
    next_hello: Option<Instant>,
    /// Where remanent changes are committed before a Set is answered (`None`: not stored).
    durable: Option<DurableHook>,
}

impl std::fmt::Debug for DcpResponder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DcpResponder")
            .field("id", &self.id)
            .field("configured", &self.configured)
            .field("ar_active", &self.ar_active)
            .field("hello_left", &self.hello_left)
            .field("durable", &self.durable.is_some())
            .finish_non_exhaustive()
    }
}

/// BlockError for Set and Get of (option, suboption) we do not handle.
fn unsupported(opt: u8) -> BlockError {
    match opt {
        option::IP | option::DEVICE_PROPERTIES | option::CONTROL => {
            BlockError::SUBOPTION_UNSUPPORTED
        }
        _ => BlockError::OPTION_UNSUPPORTED,
    }
}

/// Is this a usable IP suite? All-zero means "no IP" and is valid. Otherwise: a unicast host
/// address, a contiguous non-zero mask, host part neither all-zero nor all-one (for masks up
/// to /30), gateway 0.0.0.0, equal to the IP ("no gateway" in PROFINET), or in the subnet.
pub fn ip_suite_valid(ip: Ipv4Addr, mask: Ipv4Addr, gw: Ipv4Addr) -> bool {
    let (i, m, g) = (u32::from(ip), u32::from(mask), u32::from(gw));
    if i == 0 && m == 0 && g == 0 {
        return true;
    }
    if i == 0 || m == 0 || m.leading_ones() + m.trailing_zeros() != 32 {
        return false;
    }
    if ip.is_multicast() || ip.is_broadcast() || ip.is_loopback() || ip.octets()[0] == 0 {
        return false;
    }
    let host = i & !m;
    if m.leading_ones() <= 30 && (host == 0 || host == !m) {
        return false;
    }
    g == 0 || g == i || (g & m == i & m && g != (i & m) && g != (i | !m))
}

impl DcpResponder {
    /// A responder with the configured identity (also the target of ResetToFactory).
    /// Schedules the Hellos when `id.device_initiative`.
    pub fn new(id: DcpIdentity, now: Instant) -> DcpResponder {
        let configured = (id.station_name.clone(), id.ip, id.mask, id.gateway);
        let hello = id.device_initiative;
        DcpResponder {
            id,
            configured,
            ar_active: false,
            aliases: Vec::new(),
            delayed: DelayedResponses::new(MAX_DELAYED),
            hello_left: if hello { HELLO_COUNT } else { 0 },
            next_hello: hello.then_some(now),
            durable: None,
        }
    }

    /// Commit remanent changes (name, IP, resets) through `hook` before answering a Set.
    pub fn with_durable(mut self, hook: DurableHook) -> DcpResponder {
        self.durable = Some(hook);
        self
    }

    /// Store the remanent part of `ev` before the Set is answered; `false` = not stored.
    fn durable(&self, ev: &DcpEvent) -> bool {
        self.durable.as_ref().map_or(true, |h| h(ev).is_ok())
    }

    /// Use `configured` as the reset target while the current values come from `id`
    /// (e.g. a persisted permanent DCP name differs from the configuration).
    pub fn with_configured(
        mut self,
        name: &str,
        ip: Ipv4Addr,
        mask: Ipv4Addr,
        gw: Ipv4Addr,
    ) -> DcpResponder {
        self.configured = (name.to_string(), ip, mask, gw);
        self
    }

    pub fn identity(&self) -> &DcpIdentity {
        &self.id
    }

    /// An AR is established (changes the Set rules).
    pub fn set_ar_active(&mut self, on: bool) {
        self.ar_active = on;
    }

    /// Alias names the device answers to (from the LLDP neighbour: `port-001.neighbour`).
    pub fn set_aliases(&mut self, aliases: Vec<Vec<u8>>) {
        self.aliases = aliases;
    }

    /// `POST /api/reset`: take these values as current.
    pub fn reset_to(&mut self, name: &str, ip: Ipv4Addr, mask: Ipv4Addr, gw: Ipv4Addr) {
        self.id.station_name = name.to_string();
        self.id.ip = ip;
        self.id.mask = mask;
        self.id.gateway = gw;
    }

    /// The configured (reset) values.
    pub fn configured(&self) -> (&str, Ipv4Addr, Ipv4Addr, Ipv4Addr) {
        let (n, i, m, g) = &self.configured;
        (n.as_str(), *i, *m, *g)
    }

    /// When [`DcpResponder::poll`] wants to run next.
    pub fn next_deadline(&self) -> Option<Instant> {
        match (self.delayed.next_deadline(), self.next_hello) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Frames due at `now` (delayed Identify responses, Hellos).
    pub fn poll(&mut self, now: Instant) -> Vec<Vec<u8>> {
        let mut out = self.delayed.poll(now);
        if let Some(t) = self.next_hello {
            if t <= now {
                if let Ok(f) = self.hello_frame() {
                    out.push(f);
                }
                self.hello_left = self.hello_left.saturating_sub(1);
                self.next_hello = (self.hello_left > 0).then_some(now + HELLO_INTERVAL);
            }
        }
        out
    }

    /// The Hello request frame (p-net `pf_dcp_hello_req`: NameOfStation, IP parameter,
    /// DeviceID, DeviceInitiative).
    pub fn hello_frame(&self) -> crate::wire::Result<Vec<u8>> {
        let blocks = vec![
            DcpBlock::with_info(
                DcpValue::NameOfStation(self.id.station_name.as_bytes().to_vec()),
                0,
            ),
            self.ip_block(),
            DcpBlock::with_info(
                DcpValue::DeviceId {
                    vendor_id: self.id.vendor_id,
                    device_id: self.id.device_id,
                },
                0,
            ),
            DcpBlock::with_info(DcpValue::DeviceInitiative(1), 0),
        ];
        DcpRepr::hello(0x0100_0001, blocks).build_frame(MacAddr::DCP_HELLO, self.id.mac, None)
    }

    fn ip_block(&self) -> DcpBlock {
        let unset = self.id.ip.is_unspecified()
            && self.id.mask.is_unspecified()
            && self.id.gateway.is_unspecified();
        DcpBlock::with_info(
            DcpValue::IpParameter {
                ip: self.id.ip,
                mask: self.id.mask,
                gateway: self.id.gateway,
            },
            if unset {
                ip_block_info::NOT_SET
            } else {
                ip_block_info::SET
            },
        )
    }

    fn device_options() -> Vec<(u8, u8)> {
        use option as o;
        use suboption as s;
        vec![
            (o::IP, s::IP_MAC),
            (o::IP, s::IP_PARAMETER),
            (o::IP, s::IP_FULL_SUITE),
            (o::DEVICE_PROPERTIES, s::DEVICE_VENDOR),
            (o::DEVICE_PROPERTIES, s::NAME_OF_STATION),
            (o::DEVICE_PROPERTIES, s::DEVICE_ID),
            (o::DEVICE_PROPERTIES, s::DEVICE_ROLE),
            (o::DEVICE_PROPERTIES, s::DEVICE_OPTIONS),
            (o::DEVICE_PROPERTIES, s::ALIAS_NAME),
            (o::DEVICE_PROPERTIES, s::DEVICE_INSTANCE),
            (o::CONTROL, s::CONTROL_START),
            (o::CONTROL, s::CONTROL_STOP),
            (o::CONTROL, s::CONTROL_SIGNAL),
            (o::CONTROL, s::CONTROL_FACTORY_RESET),
            (o::CONTROL, s::CONTROL_RESET_TO_FACTORY),
        ]
    }

    /// The value of one gettable (option, suboption), `Err` = BlockError.
    fn get_value(&self, opt: u8, sub: u8) -> Result<DcpBlock, BlockError> {
        use option as o;
        use suboption as s;
        let info = |v| DcpBlock::with_info(v, 0);
        Ok(match (opt, sub) {
            (o::IP, s::IP_MAC) => info(DcpValue::MacAddress(self.id.mac)),
            (o::IP, s::IP_PARAMETER) => self.ip_block(),
            (o::IP, s::IP_FULL_SUITE) => {
                let b = self.ip_block();
                DcpBlock::with_info(
                    DcpValue::FullIpSuite {
                        ip: self.id.ip,
                        mask: self.id.mask,
                        gateway: self.id.gateway,
                        dns: [Ipv4Addr::UNSPECIFIED; 4],
                    },
                    b.prefix,
                )
            }
            (o::DEVICE_PROPERTIES, s::DEVICE_VENDOR) => info(DcpValue::DeviceVendor(
                self.id.device_vendor.as_bytes().to_vec(),
            )),
            (o::DEVICE_PROPERTIES, s::NAME_OF_STATION) => info(DcpValue::NameOfStation(
                self.id.station_name.as_bytes().to_vec(),
            )),
            (o::DEVICE_PROPERTIES, s::DEVICE_ID) => info(DcpValue::DeviceId {
                vendor_id: self.id.vendor_id,
                device_id: self.id.device_id,
            }),
            (o::DEVICE_PROPERTIES, s::DEVICE_ROLE) => info(DcpValue::DeviceRole {
                role: device_role::IO_DEVICE,
                reserved: 0,
            }),
            (o::DEVICE_PROPERTIES, s::DEVICE_OPTIONS) => {
                info(DcpValue::DeviceOptions(Self::device_options()))
            }
            (o::DEVICE_PROPERTIES, s::ALIAS_NAME) => return Err(BlockError::SUBOPTION_NOT_SET),
            (o::DEVICE_PROPERTIES, s::DEVICE_INSTANCE) => info(DcpValue::DeviceInstance {
                high: self.id.device_instance.0,
                low: self.id.device_instance.1,
            }),
            (o::DEVICE_INITIATIVE, s::DEVICE_INITIATIVE) => info(DcpValue::DeviceInitiative(
                u16::from(self.id.device_initiative),
            )),
            _ => return Err(unsupported(opt)),
        })
    }

    /// Our values an Identify filter may name.
    fn own_values(&self) -> Vec<DcpValue> {
        let mut v = vec![
            DcpValue::DeviceVendor(self.id.device_vendor.as_bytes().to_vec()),
            DcpValue::DeviceId {
                vendor_id: self.id.vendor_id,
                device_id: self.id.device_id,
            },
            DcpValue::DeviceRole {
                role: device_role::IO_DEVICE,
                reserved: 0,
            },
            DcpValue::MacAddress(self.id.mac),
            DcpValue::IpParameter {
                ip: self.id.ip,
                mask: self.id.mask,
                gateway: self.id.gateway,
            },
            DcpValue::DeviceInstance {
                high: self.id.device_instance.0,
                low: self.id.device_instance.1,
            },
        ];
        if !self.id.station_name.is_empty() {
            v.push(DcpValue::NameOfStation(
                self.id.station_name.as_bytes().to_vec(),
            ));
        }
        for a in &self.aliases {
            v.push(DcpValue::AliasName(a.clone()));
        }
        v
    }

    fn identify_response(&self, req: &DcpRepr) -> DcpRepr {
        let mut blocks = Vec::new();
        use option as o;
        use suboption as s;
        for (opt, sub) in [
            (o::IP, s::IP_PARAMETER),
            (o::DEVICE_PROPERTIES, s::DEVICE_VENDOR),
            (o::DEVICE_PROPERTIES, s::NAME_OF_STATION),
            (o::DEVICE_PROPERTIES, s::DEVICE_ID),
            (o::DEVICE_PROPERTIES, s::DEVICE_ROLE),
            (o::DEVICE_PROPERTIES, s::DEVICE_OPTIONS),
        ] {
            if let Ok(b) = self.get_value(opt, sub) {
                blocks.push(b);
            }
        }
        if let Some(alias) = req.blocks.iter().find_map(|b| match &b.value {
            DcpValue::AliasName(a) => Some(a.clone()),
            _ => None,
        }) {
            blocks.push(DcpBlock::with_info(DcpValue::AliasName(alias), 0));
        }
        if let Ok(b) = self.get_value(o::DEVICE_PROPERTIES, s::DEVICE_INSTANCE) {
            blocks.push(b);
        }
        DcpRepr::identify_response(req.xid, blocks)
    }

    /// Handle one received Ethernet frame (any EtherType; non-DCP frames are ignored).
    pub fn on_frame(&mut self, frame: &[u8], now: Instant) -> DcpOutput {
        let mut out = DcpOutput::default();
        let Ok((eth, _fid, req)) = DcpRepr::parse_frame(frame) else {
            // Not DCP at all (other EtherType / FrameID) is not "invalid".
            if let Ok((_, id, _)) = crate::wire::rt::parse_rt_frame(frame) {
                out.invalid = id.is_dcp();
            }
            return out;
        };
        if eth.src == self.id.mac || req.service_type != ServiceType::Request {
            return out;
        }
        let to_us = eth.dst == self.id.mac;
        match req.service_id {
            ServiceId::Identify => {
                if !(to_us || eth.dst == MacAddr::DCP_IDENTIFY || eth.dst.is_broadcast()) {
                    return out;
                }
                if !req.identify_filter_matches(&self.own_values()) {
                    return out;
                }
                let Ok(f) = self
                    .identify_response(&req)
                    .build_frame(eth.src, self.id.mac, None)
                else {
                    return out;
                };
                out.handled = true;
                let delay = response_delay(self.id.mac, req.response_delay);
                if delay == Duration::ZERO {
                    out.frames.push(f);
                } else {
                    self.delayed.push(now + delay, f);
                }
            }
            ServiceId::Get if to_us => {
                let blocks = req
                    .blocks
                    .iter()
                    .map(|b| {
                        let (opt, sub) = b.option_suboption();
                        self.get_value(opt, sub).unwrap_or_else(|e| {
                            DcpBlock::new(DcpValue::Response {
                                option: opt,
                                suboption: sub,
                                error: e,
                            })
                        })
                    })
                    .collect();
                if let Ok(f) =
                    DcpRepr::get_response(req.xid, blocks).build_frame(eth.src, self.id.mac, None)
                {
                    out.frames.push(f);
                    out.handled = true;
                }
            }
            ServiceId::Set if to_us => {
                // Any Set ends the Hello phase.
                self.next_hello = None;
                self.hello_left = 0;
                let mut results = Vec::new();
                for b in &req.blocks {
                    let (opt, sub) = b.option_suboption();
                    let err = self.set_one(b, &mut out.events);
                    results.push((opt, sub, err));
                }
                if let Ok(f) =
                    DcpRepr::set_response(req.xid, &results).build_frame(eth.src, self.id.mac, None)
                {
                    out.frames.push(f);
                    out.handled = true;
                }
            }
            _ => {}
        }
        out
    }

    fn set_ip(
        &mut self,
        ip: Ipv4Addr,
        mask: Ipv4Addr,
        gateway: Ipv4Addr,
        permanent: bool,
        events: &mut Vec<DcpEvent>,
    ) -> BlockError {
        if !ip_suite_valid(ip, mask, gateway) {
            return BlockError::SUBOPTION_NOT_SET;
        }
        let changed = (ip, mask, gateway) != (self.id.ip, self.id.mask, self.id.gateway);
        if changed && self.ar_active {
            return BlockError::IN_OPERATION;
        }
        let ev = DcpEvent::IpAssigned {
            ip,
            mask,
            gateway,
            permanent,
        };
        if !self.durable(&ev) {
            return BlockError::SET_NOT_POSSIBLE;
        }
        self.id.ip = ip;
        self.id.mask = mask;
        self.id.gateway = gateway;
        events.push(ev);
        BlockError::OK
    }

    fn set_one(&mut self, b: &DcpBlock, events: &mut Vec<DcpEvent>) -> BlockError {
        let permanent = b.prefix & 1 == qualifier::PERMANENT;
        match &b.value {
            DcpValue::IpParameter { ip, mask, gateway }
            | DcpValue::FullIpSuite {
                ip, mask, gateway, ..
            } => self.set_ip(*ip, *mask, *gateway, permanent, events),
            DcpValue::NameOfStation(raw) => {
                let name = if raw.is_empty() {
                    String::new()
                } else {
                    match NameOfStation::from_bytes(raw) {
                        Ok(n) => n.as_str().to_string(),
                        Err(_) => return BlockError::SUBOPTION_NOT_SET,
                    }
                };
                let changed = name != self.id.station_name;
                let ev = DcpEvent::NameAssigned {
                    name: name.clone(),
                    permanent,
                };
                if !self.durable(&ev) {
                    return BlockError::SET_NOT_POSSIBLE;
                }
                if changed && self.ar_active {
                    events.push(DcpEvent::AbortArs {
                        reason: "DCP station name changed",
                    });
                }
                self.id.station_name = name;
                events.push(ev);
                BlockError::OK
            }
            DcpValue::Start | DcpValue::Stop => BlockError::OK,
            DcpValue::Signal { .. } => {
                events.push(DcpEvent::Signal);
                BlockError::OK
            }
            DcpValue::FactoryReset => self.reset(b.prefix, ResetMode::Factory, events),
            DcpValue::ResetToFactory => match b.prefix >> 1 {
                2 => self.reset(b.prefix, ResetMode::Communication, events),
                4 | 8 => self.reset(b.prefix, ResetMode::Factory, events),
                _ => BlockError::SUBOPTION_UNSUPPORTED,
            },
            other => {
                let (opt, _) = other.option_suboption();
                unsupported(opt)
            }
        }
    }

    fn reset(&mut self, q: u16, mode: ResetMode, events: &mut Vec<DcpEvent>) -> BlockError {
        let ev = DcpEvent::ResetToFactory { qualifier: q, mode };
        if !self.durable(&ev) {
            return BlockError::SET_NOT_POSSIBLE;
        }
        if self.ar_active {
            events.push(DcpEvent::AbortArs {
                reason: "DCP reset to factory",
            });
        }
        // The NameOfStation becomes empty, not the configuration's: the standard's
        // ResetToFactory, as p-net (pf_cmina) and the certification probe expect
        // (docs/decisions.md §21). The IP suite goes back to the configuration's.
        let (_, i, m, g) = self.configured.clone();
        self.reset_to("", i, m, g);
        events.push(ev);
        BlockError::OK
    }
}

#[cfg(test)]
pub(crate) mod tests;

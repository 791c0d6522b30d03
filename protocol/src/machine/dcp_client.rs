//! The DCP client: the requesting side of PN-DCP (IEC 61158-6-10 DCP, "DCP client"), as an IO
//! controller or an engineering tool uses it to find devices (Identify), read their values
//! (Get) and assign names and addresses (Set), sans-IO. Wire format: [`crate::wire::dcp`]; the
//! Identify response window: [`crate::machine::dcp_delay`]. The device's side is
//! [`crate::machine::dcp_responder`]. pn-controller runs this one client (its
//! `controller-sim/src/dcp.rs` only moves frames and sleeps), and the simulator pairs it with
//! the responder.
//!
//! # Behaviour
//! * Every request gets its own Xid from one counter (the first one given to [`DcpClient::new`];
//!   a controller seeds it at random so that two runs do not reuse each other's Xids). An answer
//!   belongs to the exchange whose *current* Xid and ServiceID it carries; requests, other
//!   services, unknown Xids and answers after the window are ignored.
//! * **Identify all** (to 01:0E:CF:00:00:00, AllSelector): devices spread their answers over
//!   `ResponseDelayFactor × 10 ms` (factor clamped to 1..=6400), so the client collects every
//!   answer for that window plus a margin ([`collect_window`]), once per MAC (the first answer of
//!   a device counts; a duplicate or a second answer of the same device is dropped), and reports
//!   them sorted by NameOfStation, then MAC.
//! * **Identify by name**: the first answer ends it. Two attempts, each half the timeout, each
//!   with a fresh Xid (an answer to the first attempt that comes during the second is late and
//!   ignored: the first attempt's window is over).
//! * **Get**: the first answer, within the timeout; one attempt.
//! * **Set**: the first answer; the same request (same Xid, so a device that executed it already
//!   answers again instead of executing a second time) is sent [`SET_ATTEMPTS`] times,
//!   [`SET_ATTEMPT_TIMEOUT`] apart, while unanswered. The answer's Control/Response blocks are
//!   the [`SetResult`].
//! * An answer handled at or after an exchange's deadline is late: the deadline is processed
//!   first (as if [`DcpClient::handle_timeout`] had run), whatever order the caller uses.

use std::collections::VecDeque;
use std::net::Ipv4Addr;

use crate::machine::dcp_delay::{collect_window, MAX_FACTOR};
use crate::time::{Duration, Instant};
use crate::wire::dcp::{BlockError, DcpBlock, DcpRepr, DcpValue, NameOfStation, ServiceId};
use crate::wire::ethernet::MacAddr;

/// Sends of a Set while it is unanswered (the first and two retransmissions).
pub const SET_ATTEMPTS: u32 = 3;
/// How long a Set attempt waits for its answer.
pub const SET_ATTEMPT_TIMEOUT: Duration = Duration::from_millis(1000);
/// Attempts of an Identify by name; the timeout is split evenly over them.
pub const NAME_ATTEMPTS: u32 = 2;

/// One exchange of the client (a request and its answers), from [`DcpClient::start`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ExchangeId(pub u64);

/// What to ask.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DcpRequest {
    /// Every device on the link; answers collected for the factor's window plus `margin`.
    IdentifyAll {
        response_delay_factor: u16,
        margin: Duration,
    },
    /// The device named `name`; the first answer, within `timeout` over [`NAME_ATTEMPTS`].
    IdentifyName {
        name: NameOfStation,
        response_delay_factor: u16,
        timeout: Duration,
    },
    /// (option, suboption) values of the device `mac`.
    Get {
        mac: MacAddr,
        selectors: Vec<(u8, u8)>,
        timeout: Duration,
    },
    /// Set `blocks` (each with its BlockQualifier) on the device `mac`.
    Set { mac: MacAddr, blocks: Vec<DcpBlock> },
}

impl DcpRequest {
    /// Set NameOfStation, temporary or permanent; an empty name removes the name (an empty
    /// value is not a valid [`NameOfStation`], so it is built here).
    pub fn set_name(mac: MacAddr, name: Option<&NameOfStation>, permanent: bool) -> DcpRequest {
        let blocks = match name {
            Some(n) => DcpRepr::set_name(0, n, permanent).blocks,
            None => vec![DcpBlock::with_qualifier(
                DcpValue::NameOfStation(Vec::new()),
                u16::from(permanent),
            )],
        };
        DcpRequest::Set { mac, blocks }
    }

    /// The ServiceID of the request and of its answers.
    pub fn service(&self) -> ServiceId {
        match self {
            DcpRequest::IdentifyAll { .. } | DcpRequest::IdentifyName { .. } => ServiceId::Identify,
            DcpRequest::Get { .. } => ServiceId::Get,
            DcpRequest::Set { .. } => ServiceId::Set,
        }
    }

    /// Collect every device's answer for the whole window (else the first answer ends it).
    pub fn collects_all(&self) -> bool {
        matches!(self, DcpRequest::IdentifyAll { .. })
    }

    /// (sends, window of each send, a fresh Xid per send).
    fn attempts(&self) -> (u32, Duration, bool) {
        match self {
            DcpRequest::IdentifyAll {
                response_delay_factor,
                margin,
            } => (
                1,
                collect_window(clamp(*response_delay_factor), *margin),
                false,
            ),
            DcpRequest::IdentifyName { timeout, .. } => (
                NAME_ATTEMPTS,
                Duration(timeout.0 / u64::from(NAME_ATTEMPTS)),
                true,
            ),
            DcpRequest::Get { timeout, .. } => (1, *timeout, false),
            DcpRequest::Set { .. } => (SET_ATTEMPTS, SET_ATTEMPT_TIMEOUT, false),
        }
    }

    fn destination(&self) -> MacAddr {
        match self {
            DcpRequest::IdentifyAll { .. } | DcpRequest::IdentifyName { .. } => {
                MacAddr::DCP_IDENTIFY
            }
            DcpRequest::Get { mac, .. } | DcpRequest::Set { mac, .. } => *mac,
        }
    }

    fn repr(&self, xid: u32) -> DcpRepr {
        match self {
            DcpRequest::IdentifyAll {
                response_delay_factor,
                ..
            } => DcpRepr::identify_request_all(xid, clamp(*response_delay_factor)),
            DcpRequest::IdentifyName {
                name,
                response_delay_factor,
                ..
            } => DcpRepr::identify_request_by_name(xid, name, *response_delay_factor),
            DcpRequest::Get { selectors, .. } => DcpRepr::get_request(xid, selectors),
            DcpRequest::Set { blocks, .. } => DcpRepr::set_request(xid, blocks.clone()),
        }
    }
}

fn clamp(factor: u16) -> u16 {
    factor.clamp(1, MAX_FACTOR)
}

/// What an exchange found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DcpOutcome {
    /// Identify all: each device that answered within the window, once, sorted by
    /// NameOfStation, then MAC.
    Identified(Vec<DeviceInfo>),
    /// Identify by name: the first device that answered, `None` when none did.
    Found(Option<DeviceInfo>),
    /// Get: the first answer and who sent it, `None` when none came.
    Got(Option<(MacAddr, DcpRepr)>),
    /// Set: the device's result, `None` when no attempt was answered.
    Set(Option<SetResult>),
}

/// A finished exchange.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DcpClientEvent {
    pub exchange: ExchangeId,
    pub outcome: DcpOutcome,
}

/// A frame to send, and the exchange it belongs to (a shell that cannot send it can
/// [`DcpClient::cancel`] that exchange).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DcpTransmit {
    pub exchange: ExchangeId,
    pub xid: u32,
    /// The complete Ethernet frame.
    pub frame: Vec<u8>,
}

#[derive(Debug)]
struct Exchange {
    id: ExchangeId,
    request: DcpRequest,
    xid: u32,
    frame: Vec<u8>,
    /// Sends still to come after the current one.
    sends_left: u32,
    deadline: Instant,
    answers: Vec<(MacAddr, DcpRepr)>,
}

/// The sans-IO DCP client: any number of exchanges at once, told apart by Xid.
#[derive(Debug)]
pub struct DcpClient {
    own_mac: MacAddr,
    next_xid: u32,
    next_id: u64,
    open: Vec<Exchange>,
    transmit: VecDeque<DcpTransmit>,
    events: VecDeque<DcpClientEvent>,
}

impl DcpClient {
    /// A client sending from `own_mac`, whose first request carries `first_xid`.
    pub fn new(own_mac: MacAddr, first_xid: u32) -> DcpClient {
        DcpClient {
            own_mac,
            next_xid: first_xid,
            next_id: 1,
            open: Vec::new(),
            transmit: VecDeque::new(),
            events: VecDeque::new(),
        }
    }

    fn take_xid(&mut self) -> u32 {
        let x = self.next_xid;
        self.next_xid = self.next_xid.wrapping_add(1);
        x
    }

    fn frame(&self, request: &DcpRequest, xid: u32) -> crate::wire::Result<Vec<u8>> {
        request
            .repr(xid)
            .build_frame(request.destination(), self.own_mac, None)
    }

    /// Begin an exchange: its request is queued for [`Self::poll_transmit`]. Fails only when
    /// the request cannot be encoded (too many or too long blocks for one frame).
    pub fn start(&mut self, now: Instant, request: DcpRequest) -> crate::wire::Result<ExchangeId> {
        let xid = self.take_xid();
        let frame = self.frame(&request, xid)?;
        let id = ExchangeId(self.next_id);
        self.next_id += 1;
        let (sends, window, _) = request.attempts();
        self.transmit.push_back(DcpTransmit {
            exchange: id,
            xid,
            frame: frame.clone(),
        });
        self.open.push(Exchange {
            id,
            request,
            xid,
            frame,
            sends_left: sends - 1,
            deadline: now + window,
            answers: Vec::new(),
        });
        Ok(id)
    }

    /// Forget an exchange without an event (its frame could not be sent, or nobody waits).
    pub fn cancel(&mut self, id: ExchangeId) {
        self.open.retain(|e| e.id != id);
        self.transmit.retain(|t| t.exchange != id);
    }

    /// The exchange is still waiting for answers or its deadline.
    pub fn is_open(&self, id: ExchangeId) -> bool {
        self.open.iter().any(|e| e.id == id)
    }

    /// The Xid the exchange's answers must carry now.
    pub fn current_xid(&self, id: ExchangeId) -> Option<u32> {
        self.open.iter().find(|e| e.id == id).map(|e| e.xid)
    }

    /// A received DCP frame (complete Ethernet frame); anything that is not a DCP answer to an
    /// open exchange is ignored. Returns whether an exchange took it.
    pub fn handle_frame(&mut self, now: Instant, frame: &[u8]) -> bool {
        match DcpRepr::parse_frame(frame) {
            Ok((eth, _, d)) => self.handle_response(now, eth.src, &d),
            Err(_) => false,
        }
    }

    /// A received DCP PDU from `src`. Returns whether an exchange took it (a duplicate of a
    /// device already heard counts as not taken).
    pub fn handle_response(&mut self, now: Instant, src: MacAddr, d: &DcpRepr) -> bool {
        // Deadlines first: an answer at or after the deadline is late whatever the order of
        // the caller's calls.
        self.handle_timeout(now);
        if !d.service_type.is_response() {
            return false;
        }
        let Some(i) = self
            .open
            .iter()
            .position(|e| e.xid == d.xid && e.request.service() == d.service_id)
        else {
            return false;
        };
        let e = &mut self.open[i];
        if e.answers.iter().any(|(m, _)| *m == src) {
            return false;
        }
        e.answers.push((src, d.clone()));
        if !e.request.collects_all() {
            let e = self.open.remove(i);
            self.finish(e);
        }
        true
    }

    /// The earliest deadline of an open exchange.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.open.iter().map(|e| e.deadline).min()
    }

    /// Run the deadlines due at `now`: a next attempt (queued for sending) or the end of the
    /// exchange (an event).
    pub fn handle_timeout(&mut self, now: Instant) {
        let mut i = 0;
        while i < self.open.len() {
            if self.open[i].deadline > now {
                i += 1;
                continue;
            }
            if self.open[i].sends_left == 0 {
                let e = self.open.remove(i);
                self.finish(e);
                continue;
            }
            let (_, window, fresh) = self.open[i].request.attempts();
            if fresh {
                let xid = self.take_xid();
                // The same request encoded at the start, so this cannot fail; if it did, the
                // old frame is sent again.
                if let Ok(f) = self.frame(&self.open[i].request, xid) {
                    self.open[i].xid = xid;
                    self.open[i].frame = f;
                }
            }
            let e = &mut self.open[i];
            e.sends_left -= 1;
            e.deadline = now + window;
            self.transmit.push_back(DcpTransmit {
                exchange: e.id,
                xid: e.xid,
                frame: e.frame.clone(),
            });
            i += 1;
        }
    }

    fn finish(&mut self, e: Exchange) {
        let outcome = match e.request {
            DcpRequest::IdentifyAll { .. } => {
                let mut v: Vec<DeviceInfo> = e
                    .answers
                    .iter()
                    .map(|(m, d)| DeviceInfo::from_response(*m, d))
                    .collect();
                // A stable order for people and golden output: by name, then MAC.
                v.sort_by(|a, b| {
                    a.name_of_station
                        .cmp(&b.name_of_station)
                        .then(a.mac.0.cmp(&b.mac.0))
                });
                DcpOutcome::Identified(v)
            }
            DcpRequest::IdentifyName { .. } => DcpOutcome::Found(
                e.answers
                    .first()
                    .map(|(m, d)| DeviceInfo::from_response(*m, d)),
            ),
            DcpRequest::Get { .. } => DcpOutcome::Got(e.answers.into_iter().next()),
            DcpRequest::Set { .. } => {
                DcpOutcome::Set(e.answers.first().map(|(_, d)| SetResult::from_response(d)))
            }
        };
        self.events.push_back(DcpClientEvent {
            exchange: e.id,
            outcome,
        });
    }

    /// The next frame to send.
    pub fn poll_transmit(&mut self) -> Option<DcpTransmit> {
        self.transmit.pop_front()
    }

    /// The next finished exchange.
    pub fn poll_event(&mut self) -> Option<DcpClientEvent> {
        self.events.pop_front()
    }
}

/// What a device told about itself in an Identify (or Get) response.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "camelCase"))]
pub struct DeviceInfo {
    #[cfg_attr(feature = "serde", serde(serialize_with = "ser_mac"))]
    pub mac: MacAddr,
    pub name_of_station: String,
    pub type_of_station: String,
    pub vendor_id: Option<u16>,
    pub device_id: Option<u16>,
    pub ip: Option<Ipv4Addr>,
    pub mask: Option<Ipv4Addr>,
    pub gateway: Option<Ipv4Addr>,
    /// BlockInfo of the IP block (bit 0 set, bit 7 conflict).
    pub ip_block_info: Option<u16>,
    pub role: Option<u8>,
    pub alias: Option<String>,
    /// Supported (option, suboption) pairs.
    pub options: Vec<(u8, u8)>,
}

/// The MAC in its usual text form (`02:00:00:0a:0b:ff`), as the controller's JSON shows it.
#[cfg(feature = "serde")]
fn ser_mac<S: serde::Serializer>(m: &MacAddr, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&m.to_string())
}

impl DeviceInfo {
    /// Collect the values of a response.
    pub fn from_response(mac: MacAddr, d: &DcpRepr) -> DeviceInfo {
        let mut i = DeviceInfo {
            mac,
            ..Default::default()
        };
        for b in &d.blocks {
            match &b.value {
                DcpValue::NameOfStation(n) => {
                    i.name_of_station = String::from_utf8_lossy(n).into_owned()
                }
                DcpValue::DeviceVendor(n) => {
                    i.type_of_station = String::from_utf8_lossy(n).into_owned()
                }
                DcpValue::DeviceId {
                    vendor_id,
                    device_id,
                } => {
                    i.vendor_id = Some(*vendor_id);
                    i.device_id = Some(*device_id);
                }
                DcpValue::IpParameter { ip, mask, gateway }
                | DcpValue::FullIpSuite {
                    ip, mask, gateway, ..
                } => {
                    i.ip = Some(*ip);
                    i.mask = Some(*mask);
                    i.gateway = Some(*gateway);
                    i.ip_block_info = Some(b.prefix);
                }
                DcpValue::DeviceRole { role, .. } => i.role = Some(*role),
                DcpValue::AliasName(a) => i.alias = Some(String::from_utf8_lossy(a).into_owned()),
                DcpValue::DeviceOptions(o) => i.options = o.clone(),
                _ => {}
            }
        }
        i
    }
}

/// Result of a Set: per (option, suboption) the device's BlockError.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetResult {
    pub results: Vec<(u8, u8, BlockError)>,
}

impl SetResult {
    /// The Control/Response blocks of a Set response.
    pub fn from_response(d: &DcpRepr) -> SetResult {
        let results = d
            .blocks
            .iter()
            .filter_map(|b| match b.value {
                DcpValue::Response {
                    option,
                    suboption,
                    error,
                } => Some((option, suboption, error)),
                _ => None,
            })
            .collect();
        SetResult { results }
    }

    /// Every block answered OK (an answer without result blocks is not a success).
    pub fn is_ok(&self) -> bool {
        !self.results.is_empty() && self.results.iter().all(|r| r.2 == BlockError::OK)
    }

    /// The results in words, `option/suboption: error name`, comma separated.
    pub fn describe(&self) -> String {
        self.results
            .iter()
            .map(|(o, s, e)| format!("{o}/{s}: {}", e.name()))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

#[cfg(test)]
mod tests;

//! Test support shared by every crate of the workspace.
//!
//! * [`pcap`]: write Ethernet frames into a classic pcap file (what tshark and tcpdump read);
//! * [`tshark`]: run Wireshark's dissectors over frames as an *independent oracle* and read back
//!   malformed-packet markers, expert items and field values;
//! * [`fixtures`]: load the real captured frames (hex files) with their provenance;
//! * [`env`]: the rule that a test needing root, namespaces or tshark fails loudly under `CI=true`
//!   instead of skipping;
//! * [`netns`]: network namespaces and veth pairs, removed on drop, and running code inside one;
//! * [`http`]: a tiny HTTP/1.1 client with raw control, for API tests (including bad requests);
//! * [`daemon`]: the real `pn-device` daemon in a namespace (binary, settings, configuration
//!   XML, development licence, launch with a log, API readiness, stop);
//! * [`poll`]: await a condition with a deadline.

pub mod attempts;
pub mod cpu;
pub mod daemon;
pub mod env;
pub mod fixtures;
pub mod http;
pub mod netns;
pub mod pcap;
pub mod poll;
pub mod tshark;

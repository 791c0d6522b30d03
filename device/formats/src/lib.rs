//! pn-device-formats: the file formats of the pn-device daemon that other programs need too.
//!
//! * [`licence`]: the Ed25519-signed activation certificate (issue, verify). The daemon
//!   verifies certificates; the `pn-licence` tool and the test lab issue them.
//! * [`config`]: the runtime configuration XML (spec 2.11): the layout, identification and
//!   network items, the embedded default and the shipped placeholder vendor ID. The daemon runs
//!   from it; the lab and the bench read the files they hand the daemon.
//! * [`items`]: what a submodule may declare in it beyond its lengths: typed IO data items and
//!   parameter records (read by the daemon, the farm and pn-gsdml alike).
//!
//! A crate of its own so that a tool can sign a licence or read a configuration without
//! linking the daemon (docs/architecture.md, "Crates"). The daemon's service settings (JSON)
//! stay in `pn-device`: nothing else reads them.

pub mod config;
pub mod items;
pub mod licence;

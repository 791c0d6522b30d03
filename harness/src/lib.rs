//! `pn-lab`: the project's test instrument. A network lab of namespaces and veth pairs, the
//! real `pn-device` binary, the controller simulator, scenario files with golden snapshots, and
//! the coverage map from spec rows to scenarios.

pub mod bench;
pub mod coverage;
pub mod demo;
pub mod impair;
pub mod lab;
pub mod peer;
pub mod scenario;
pub mod sim;
pub mod soak;

//! (being written by stack-core)

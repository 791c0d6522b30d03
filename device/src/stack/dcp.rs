//! (being written by stack-l2)

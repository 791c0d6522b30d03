//! Fuzz entry points (being written)

//! CHAN (in progress).

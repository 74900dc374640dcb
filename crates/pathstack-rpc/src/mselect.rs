//! MSELECT (in progress).

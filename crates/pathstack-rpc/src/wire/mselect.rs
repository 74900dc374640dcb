//! (written by the mselect work in progress)

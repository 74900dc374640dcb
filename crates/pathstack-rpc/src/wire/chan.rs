//! (written by the chan work in progress)

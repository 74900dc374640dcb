//! (written by the bidctl work in progress)

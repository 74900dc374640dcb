//! (written by the blast work in progress)

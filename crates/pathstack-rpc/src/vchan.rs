//! VCHAN (in progress).

//! pathstack-devices (see DESIGN.md).
#![forbid(unsafe_code)]

//! pathstack-inet (see DESIGN.md).
#![forbid(unsafe_code)]

//! pathstack-classify (see DESIGN.md).
#![forbid(unsafe_code)]

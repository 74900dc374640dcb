//! pathstack-rpc (see DESIGN.md).
#![forbid(unsafe_code)]

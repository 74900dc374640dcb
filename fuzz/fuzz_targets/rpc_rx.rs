//! Arbitrary frames (and time, and calls) into a host running the RPC
//! stack as client and server: see `pathstack_harness::rpc_rx`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    pathstack_harness::rpc_rx(data);
});

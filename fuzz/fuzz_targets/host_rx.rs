//! Arbitrary Ethernet frames (and time, and application calls) into a
//! whole host: see `pathstack_harness::host_rx`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    pathstack_harness::host_rx(data);
});

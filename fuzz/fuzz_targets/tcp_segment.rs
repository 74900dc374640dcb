//! TCP control blocks in every state fed arbitrary segments, time and
//! application calls: see `pathstack_harness::tcp_segment`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    pathstack_harness::tcp_segment(data);
});

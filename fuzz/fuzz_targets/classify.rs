//! Differential fuzzing of the demux-tree classifier against the naive
//! reference: arbitrary bytes become insert/remove/lookup operations and
//! packets (see `pathstack_classify::testing::ops::decode`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    pathstack_classify::testing::fuzz::run(data);
});

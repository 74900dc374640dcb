//! Names renamed by issue 27 that stay one release as deprecated aliases:
//! code written against them still builds and behaves the same.
#![allow(deprecated)]

use pathstack::core::device::Device;
use pathstack::core::{Instant, MsgPool, PoolConfig};

#[test]
fn the_former_wire_names_still_make_an_in_memory_pair() {
    let config = pathstack::WireConfig {
        mtu: 1000,
        ..pathstack::WireConfig::default()
    };
    let (mut a, mut b): (pathstack::WireEnd, pathstack::MemoryEnd) = pathstack::wire_pair(config);
    assert_eq!(a.caps().mtu, 1000);
    let pool = MsgPool::new(PoolConfig::small(4));
    a.transmit(pool.alloc_copy(b"frame").unwrap(), Instant::ZERO)
        .unwrap();
    let got = b.receive(&pool, Instant::ZERO).unwrap().unwrap();
    assert_eq!(got.as_slice(), b"frame");
}

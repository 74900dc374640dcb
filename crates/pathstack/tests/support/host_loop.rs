//! A host's poll loop on its own thread — poll, the test's own step, then
//! wait up to 10 ms for the device — stopped (also when the test fails)
//! before the topology goes: the server side of the privileged tests that
//! drive the kernel's side from the test's thread.
//!
//! Included with `#[path = "support/host_loop.rs"] mod host_loop;`.
#![allow(dead_code)]

use pathstack::host::Host;
use pathstack_testutil::{stopped, LoopThread};
use std::time::Duration;

/// Polls `host` on its own thread until joined; `join` returns the host.
pub fn host_loop(host: Host) -> LoopThread<Host> {
    host_loop_with(host, |_| {})
}

/// As [`host_loop`], running `step` after every poll (a service that
/// empties its path, say).
pub fn host_loop_with<F>(mut host: Host, mut step: F) -> LoopThread<Host>
where
    F: FnMut(&mut Host) + Send + 'static,
{
    LoopThread::spawn(move |stop| {
        while !stopped(stop) {
            host.poll();
            step(&mut host);
            host.wait(Duration::from_millis(10)).expect("wait");
        }
        host
    })
}

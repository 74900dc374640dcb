//! Passing [`Device`](super::Device) methods through a wrapper.
//!
//! A device wrapper (impairments, a recorder, a pcap capture, a shared or
//! tapped end in the tests) changes one or two methods and hands the
//! others to the device it wraps. [`forward_device!`](crate::forward_device)
//! writes those hand-offs, so each wrapper's `impl Device` holds only what
//! it changes plus one line naming what it passes through.
//!
//! The methods to pass are named, not implied: a wrapper that changes
//! `receive` must not pass `receive_into` (the inner device's would
//! bypass the wrapper's `receive`), and one that changes nothing on the
//! receive side may pass both. Naming them keeps that choice visible.

/// Writes [`Device`](crate::device::Device) methods that call the same
/// method of an inner device, for use inside an `impl Device` block.
///
/// The first argument, in parentheses, is how to reach the inner device
/// from `self` (what follows `self.`: a field, or a call returning a
/// guard); then the methods to pass through, any of `transmit`,
/// `receive`, `receive_into`, `caps`, `poll_at`, `stats`, `rx_waiter`,
/// `discard`.
///
/// ```
/// use pathstack_core::device::memory::{memory_pair, MemoryConfig};
/// use pathstack_core::device::{Device, DeviceError};
/// use pathstack_core::{forward_device, Instant, Msg};
///
/// /// Counts the frames sent through it; everything else is the inner
/// /// device's.
/// struct Counting<D> {
///     inner: D,
///     sent: u64,
/// }
///
/// impl<D: Device> Device for Counting<D> {
///     fn transmit(&mut self, frame: Msg, now: Instant) -> Result<(), DeviceError> {
///         self.sent += 1;
///         self.inner.transmit(frame, now)
///     }
///     forward_device!((inner) receive, receive_into, caps, poll_at, stats, rx_waiter, discard);
/// }
///
/// let (a, _b) = memory_pair(MemoryConfig::default());
/// let counting = Counting { inner: a, sent: 0 };
/// assert_eq!(counting.caps().mtu, MemoryConfig::default().mtu);
/// ```
#[macro_export]
macro_rules! forward_device {
    ($via:tt $($method:ident),+ $(,)?) => {
        $( $crate::forward_device!(@one $via $method); )+
    };
    (@one ($($via:tt)+) transmit) => {
        fn transmit(
            &mut self,
            frame: $crate::Msg,
            now: $crate::Instant,
        ) -> ::core::result::Result<(), $crate::device::DeviceError> {
            self.$($via)+.transmit(frame, now)
        }
    };
    (@one ($($via:tt)+) receive) => {
        fn receive(
            &mut self,
            pool: &$crate::MsgPool,
            now: $crate::Instant,
        ) -> ::core::result::Result<::core::option::Option<$crate::Msg>, $crate::device::DeviceError>
        {
            self.$($via)+.receive(pool, now)
        }
    };
    (@one ($($via:tt)+) receive_into) => {
        fn receive_into(
            &mut self,
            pool: &$crate::MsgPool,
            now: $crate::Instant,
            frame: &mut $crate::Msg,
        ) -> ::core::result::Result<$crate::device::Received, $crate::device::DeviceError> {
            self.$($via)+.receive_into(pool, now, frame)
        }
    };
    (@one ($($via:tt)+) caps) => {
        fn caps(&self) -> $crate::device::DeviceCaps {
            self.$($via)+.caps()
        }
    };
    (@one ($($via:tt)+) poll_at) => {
        fn poll_at(&self) -> ::core::option::Option<$crate::Instant> {
            self.$($via)+.poll_at()
        }
    };
    (@one ($($via:tt)+) stats) => {
        fn stats(&self) -> $crate::device::DeviceStats {
            self.$($via)+.stats()
        }
    };
    (@one ($($via:tt)+) rx_waiter) => {
        fn rx_waiter(
            &self,
        ) -> ::core::option::Option<::std::sync::Arc<dyn $crate::device::RxWaiter>> {
            self.$($via)+.rx_waiter()
        }
    };
    (@one ($($via:tt)+) discard) => {
        fn discard(
            &mut self,
            matches: &[$crate::device::FrameMatch],
        ) -> ::core::result::Result<bool, $crate::device::DeviceError> {
            self.$($via)+.discard(matches)
        }
    };
}

//! The host's clock and its waiting: time since the host was made or set
//! by hand, the next timed work, and the wait between polls.

use super::{Host, HostError};
use pathstack_core::Instant;
use pathstack_devices::WaitMode;

impl Host {
    /// The host's clock, as std code measures it: time since the host was
    /// made, or the time set with [`Host::set_manual_clock`].
    pub fn elapsed(&self) -> std::time::Duration {
        std::time::Duration::from_nanos(self.now().as_nanos())
    }

    /// The host's clock: time since it was made, as the core's instant
    /// (what [`Stack`](pathstack_core::stack::Stack) calls take);
    /// [`Host::elapsed`] gives it as a std `Duration`.
    pub fn now(&self) -> Instant {
        self.manual_now
            .unwrap_or_else(|| Instant::from_nanos(self.start.elapsed().as_nanos() as u64))
    }

    /// Runs the host on a clock set by hand: from now on the host's time
    /// ([`Host::elapsed`], [`Host::now`]) is `now` until set again,
    /// instead of the time since the host was made. For simulated time
    /// and reproducible runs (timers tested without waiting, an input that
    /// must replay the same way, a measurement that counts instructions):
    /// nothing moves this clock but the caller, who sets it and then
    /// [`Host::poll`]s.
    ///
    /// `now` is a std [`Duration`](std::time::Duration) since the host's
    /// start (a `std::time::Instant` cannot be made for a simulated time,
    /// so a simulation counts from zero), or the core's
    /// [`Instant`], the same count.
    ///
    /// ```
    /// use std::time::Duration;
    /// use pathstack::host::{Host, HostConfig};
    /// use pathstack::memory_pair;
    /// let (a, _b) = memory_pair(Default::default());
    /// let mut h = Host::new(HostConfig::parse("10.0.0.1/24").unwrap(), a).unwrap();
    /// let t0 = Duration::from_secs(1);
    /// h.set_manual_clock(t0);
    /// assert_eq!(h.elapsed(), t0);
    /// h.set_manual_clock(t0 + Duration::from_secs(5));
    /// h.poll(); // the timers due in those five seconds fire now
    /// assert_eq!(h.elapsed(), Duration::from_secs(6));
    /// ```
    pub fn set_manual_clock(&mut self, now: impl Into<Instant>) {
        self.manual_now = Some(now.into());
    }

    /// Does all work that is ready now. Returns the work done.
    pub fn poll(&mut self) -> usize {
        let now = self.now();
        let work = self.stack.poll(now);
        if self.tcp_lingers.watching() {
            self.linger_expire();
        }
        work
    }

    /// When the host next has timed work: the stack's next timer or a
    /// device's delayed frame ([`Stack::poll_at`](pathstack_core::stack::Stack::poll_at)), or the end of a
    /// close's linger time ([`Tcp::set_linger`](crate::socket::Tcp::set_linger)).
    pub fn poll_at(&self) -> Option<Instant> {
        let stack = self.stack.poll_at();
        match self.tcp_lingers.next_deadline() {
            Some(l) => Some(stack.map_or(l, |s| s.min(l))),
            None => stack,
        }
    }

    /// How long until the host has timed work ([`Host::poll_at`]), if it
    /// has any.
    pub fn until_timer(&self) -> Option<std::time::Duration> {
        let now = self.now();
        self.poll_at()
            .map(|t| std::time::Duration::from_nanos(t.saturating_since(now).as_nanos()))
    }

    /// Waits for input or the stack's next timer, at most `max`. It wakes
    /// as soon as a frame arrives: on a TAP device given with
    /// [`Host::with_waiter`] through its file descriptor, on a device that
    /// offers an [`RxWaiter`](pathstack_core::device::RxWaiter) (the in-memory wire) through it. A device
    /// with neither cannot say when a frame arrives, so the host sleeps
    /// at most a millisecond and polls again.
    pub fn wait(&self, max: std::time::Duration) -> Result<(), HostError> {
        // A failed device will not wake anyone (a deleted TAP).
        if let Some(f) = self.device_failure() {
            return Err(HostError::Device(f.clone()));
        }
        let timeout = self.until_timer().map_or(max, |t| t.min(max));
        match (&self.waiter, self.mode, &self.rx_waiter) {
            (Some(_), WaitMode::BusyPoll, _) => std::thread::yield_now(),
            (Some(w), WaitMode::Blocking, _) => {
                w.wait_readable(Some(timeout))?;
            }
            (None, _, Some(rx)) => {
                rx.wait_rx(timeout);
            }
            (None, _, None) => std::thread::sleep(timeout.min(std::time::Duration::from_millis(1))),
        }
        Ok(())
    }
}

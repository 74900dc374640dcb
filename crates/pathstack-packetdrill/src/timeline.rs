//! The host on a clock only packetdrill moves.
//!
//! packetdrill reads the time (`gettimeofday`) to stamp events and sleeps
//! (`usleep`) until the next one. Both go to the [`Timeline`]: a sleep
//! advances the clock, stopping at each of the host's timers on the way to
//! poll the host there, so a retransmission due at 1.2 s leaves stamped
//! 1.2 s whatever the machine's load; every reading advances it by a
//! microsecond, because packetdrill spins on `gettimeofday` for the last
//! microseconds before an event (`run.c`, `wait_for_event`).
#![deny(unsafe_code)]

use crate::link::Link;
use pathstack::core::Instant;
use pathstack::Host;
use std::time::Duration;

/// What `gettimeofday` adds to the session's clock, which starts at zero:
/// a plausible wall-clock time (2023-11-14), since packetdrill prints the
/// times it reads.
pub const EPOCH_OFFSET: Duration = Duration::from_secs(1_700_000_000);

/// Most polls one advance makes at one instant before it moves the clock
/// on by a microsecond: a host whose next timer stays due after a poll
/// (a bug) must not hang packetdrill.
const MAX_POLLS_AT_ONE_INSTANT: u32 = 8;

/// The host, its wire, and the clock.
pub struct Timeline {
    /// The host under test.
    pub host: Host,
    /// packetdrill's side of the wire.
    pub link: Link,
    now: Duration,
}

impl Timeline {
    /// The host at time zero on its wire.
    pub fn new(mut host: Host, link: Link) -> Timeline {
        host.set_manual_clock(Duration::ZERO);
        let mut t = Timeline {
            host,
            link,
            now: Duration::ZERO,
        };
        t.settle();
        t
    }

    /// The clock (since the session began).
    pub fn now(&self) -> Duration {
        self.now
    }

    /// The clock as the core's instant.
    pub fn instant(&self) -> Instant {
        Instant::from(self.now)
    }

    /// Does all the work due now: polls the host until it has nothing
    /// more to do at this instant (ARP replies it was given, segments that
    /// cause segments) and collects what it sent.
    pub fn settle(&mut self) {
        for _ in 0..MAX_POLLS_AT_ONE_INSTANT {
            let work = self.host.poll();
            let answered = self.link.drain(self.instant());
            if work == 0 && !answered {
                break;
            }
        }
    }

    /// Moves the clock to `to` (never back), polling the host at each of
    /// its timers due on the way.
    pub fn advance_to(&mut self, to: Duration) {
        let mut stuck = 0;
        while let Some(t) = self.next_timer() {
            if t > to {
                break;
            }
            if t <= self.now {
                // Due already and still due after the last settle.
                stuck += 1;
                if stuck >= MAX_POLLS_AT_ONE_INSTANT {
                    break;
                }
            } else {
                stuck = 0;
                self.set(t);
            }
            self.settle();
        }
        if to > self.now {
            self.set(to);
            self.settle();
        }
    }

    /// When the host next has timed work, if it has any.
    pub fn next_timer(&self) -> Option<Duration> {
        self.host
            .poll_at()
            .map(|t| Duration::from_nanos(t.as_nanos()))
    }

    fn set(&mut self, t: Duration) {
        self.now = t;
        self.host.set_manual_clock(t);
    }

    /// Hands packetdrill's IP packet to the host now; `false` if it was
    /// dropped (not IPv4, or the wire refused it).
    pub fn inject(&mut self, packet: &[u8]) -> bool {
        let sent = self.link.inject(packet, self.instant());
        self.settle();
        sent
    }
}

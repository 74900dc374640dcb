//! Ports held by sockets that are bound and neither connected nor
//! listening (`bind(2)` before `connect`/`listen`): no path exists yet,
//! but the port is taken, as Linux's bind bucket takes it.
//!
//! Linux's rules for TCP (`inet_csk_get_port`, `inet_csk_bind_conflict`),
//! which [`BoundPorts::conflicts`] follows for one address family and
//! port-wide (the host's addresses are not told apart: stricter than
//! Linux only for two binds to different local addresses):
//! - a second `bind` to a port another socket holds fails with
//!   `EADDRINUSE`, unless both sockets set `SO_REUSEADDR` and the other
//!   is not listening;
//! - a listener's port is never shared that way (`SO_REUSEADDR` does
//!   not let a bind or a second `listen` join a listening socket);
//! - connections on the port (an accepted one, one in TIME-WAIT) make a
//!   `bind` fail unless it set `SO_REUSEADDR`;
//! - `bind` to port 0 takes a free ephemeral port at once, and an
//!   ephemeral port chosen for `connect` skips every port a `bind` holds
//!   (`inet_hash_connect` skips bind buckets made by `bind`);
//! - closing a bound socket before it connects or listens frees the
//!   port; connecting or listening hands it to the connection or
//!   listener.

use pathstack_core::fast_map::FastMap;

/// The ports held by bound sockets, with how many hold each and whether
/// every holder allows sharing. At most one entry per port: bounded by
/// the port space, and counted against the module's `max_connections`
/// with its paths.
#[derive(Debug, Default)]
pub struct BoundPorts {
    ports: FastMap<u16, Holders>,
}

/// The sockets bound to one port.
#[derive(Clone, Copy, Debug)]
struct Holders {
    count: u32,
    /// Every holder set `SO_REUSEADDR`.
    reuse: bool,
}

impl BoundPorts {
    /// Whether a bound socket holds `port`.
    pub fn holds(&self, port: u16) -> bool {
        self.ports.contains_key(&port)
    }

    /// Whether a bound socket holds `port` without allowing a socket with
    /// `SO_REUSEADDR` to share it.
    pub fn holds_exclusively(&self, port: u16) -> bool {
        self.ports.get(&port).is_some_and(|h| !h.reuse)
    }

    /// Ports held.
    pub fn len(&self) -> usize {
        self.ports.len()
    }

    /// Whether no port is held.
    pub fn is_empty(&self) -> bool {
        self.ports.is_empty()
    }

    /// Whether a bind to `port` (with `SO_REUSEADDR` if `reuse`) conflicts
    /// with the sockets already bound to it.
    pub fn conflicts(&self, port: u16, reuse: bool) -> bool {
        self.ports.get(&port).is_some_and(|h| !(reuse && h.reuse))
    }

    /// One more socket holds `port`.
    pub(super) fn take(&mut self, port: u16, reuse: bool) {
        let h = self
            .ports
            .entry(port)
            .or_insert(Holders { count: 0, reuse });
        h.count = h.count.saturating_add(1);
        h.reuse &= reuse;
    }

    /// A socket that held `port` let it go (closed, or handed it to its
    /// connection or listener).
    pub(super) fn give_back(&mut self, port: u16) {
        if let Some(h) = self.ports.get_mut(&port) {
            h.count = h.count.saturating_sub(1);
            if h.count == 0 {
                self.ports.remove(&port);
            }
        }
    }
}

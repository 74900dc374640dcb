//! Opening a TCP connection or listener with the options a socket had
//! before it connected or listened ([`TcpOpen`]): the path is made with
//! them as attributes, so they hold from its first segment — the SYN of
//! a connect, the SYN-ACK of an accepted connection — as Linux applies a
//! socket's `IP_TTL` to everything it sends once set.
//!
//! [`Tcp::connect_with`](crate::socket::Tcp::connect_with) and
//! [`Tcp::listen_with`](crate::socket::Tcp::listen_with) open their paths
//! here too, with no TTL of their own ([`TCP_TTL`] unset: IP's default).

use super::addr::{check_local, check_peer, first, resolve, try_each};
use super::tcp_table::Entry;
use super::{SocketError, TcpListener, TcpStream};
use crate::host::Host;
use pathstack_core::attrs::keys::{AddrPart, Participants, PARTICIPANTS, PASSIVE_OPEN};
use pathstack_core::attrs::Attrs;
use pathstack_inet::modules::tcp::{TCP_BACKLOG, TCP_CONFIG, TCP_TTL};
use pathstack_inet::modules::TcpListenStage;
use pathstack_inet::tcp::TcpConfig;
use std::net::ToSocketAddrs;

/// The options a TCP path is made with.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TcpOpen {
    /// The connection's options.
    pub(crate) cfg: TcpConfig,
    /// The IP time to live of its segments (`None`: IP's default, 64).
    pub(crate) ttl: Option<u8>,
}

impl TcpOpen {
    /// `attrs` with the options added.
    fn onto(self, attrs: Attrs) -> Attrs {
        let attrs = attrs.with(&TCP_CONFIG, self.cfg);
        match self.ttl {
            Some(ttl) => attrs.with(&TCP_TTL, ttl),
            None => attrs,
        }
    }
}

impl Host {
    /// Starts connecting from `local` to `peer` with `open`'s options
    /// (as [`Tcp::connect_with`](crate::socket::Tcp::connect_with)).
    pub(crate) fn tcp_connect_opened(
        &mut self,
        local: impl ToSocketAddrs,
        peer: impl ToSocketAddrs,
        open: TcpOpen,
    ) -> Result<TcpStream, SocketError> {
        let tcp = self.tcp_module()?;
        let local = first(resolve(local)?)?;
        check_local(self.sockets.addr(), local)?;
        try_each(resolve(peer)?, |peer| {
            check_peer(peer)?;
            let attrs = open.onto(Attrs::new().with(
                &PARTICIPANTS,
                Participants {
                    local: vec![AddrPart::Port(local.port())],
                    remote: vec![
                        AddrPart::Ipv4(peer.ip().octets()),
                        AddrPart::Port(peer.port()),
                    ],
                },
            ));
            let path = self.tcp_path(tcp, attrs)?;
            self.specialize(path);
            let (slot, generation) = self.tcp_sockets.insert(self.stream(path));
            let s = TcpStream {
                host: self.id(),
                slot,
                generation,
            };
            self.with_conn(&s, |st, cx| st.connect(cx))?;
            Ok(s)
        })
    }

    /// Listens on `addr` with `open`'s options for its connections (as
    /// [`Tcp::listen_with`](crate::socket::Tcp::listen_with)).
    pub(crate) fn tcp_listen_opened(
        &mut self,
        addr: impl ToSocketAddrs,
        backlog: u32,
        open: TcpOpen,
    ) -> Result<TcpListener, SocketError> {
        let tcp = self.tcp_module()?;
        try_each(resolve(addr)?, |local| {
            check_local(self.sockets.addr(), local)?;
            let attrs = open.onto(
                Attrs::new()
                    .with(&PASSIVE_OPEN, true)
                    .with(
                        &PARTICIPANTS,
                        Participants {
                            local: vec![AddrPart::Port(local.port())],
                            remote: vec![],
                        },
                    )
                    .with(&TCP_BACKLOG, backlog),
            );
            let path = self.tcp_path(tcp, attrs)?;
            let port = self
                .stack()
                .path(path)
                .and_then(|p| {
                    (0..p.len())
                        .filter_map(|i| p.stage(i))
                        .find_map(|st| (st as &dyn std::any::Any).downcast_ref::<TcpListenStage>())
                        .map(TcpListenStage::port)
                })
                .unwrap_or(local.port());
            let ip = Some(*local.ip()).filter(|a| !a.is_unspecified());
            let (slot, generation) = self.tcp_sockets.insert(Entry::Listener { path, port, ip });
            Ok(TcpListener {
                host: self.id(),
                slot,
                generation,
            })
        })
    }
}

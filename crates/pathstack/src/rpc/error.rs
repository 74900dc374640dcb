//! [`RpcError`]: why a remote procedure call failed, and the
//! [`std::io::Error`] each reason becomes.

use pathstack_rpc::Peer;

/// Why a remote procedure call (or registering a procedure) failed.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum RpcError {
    /// The host was built without the RPC stack
    /// ([`HostConfig::rpc`](crate::host::HostConfig::rpc) is `None`).
    #[error("the host has no RPC stack (set HostConfig::rpc)")]
    NoRpc,
    /// The peer rebooted while the call was in progress: the procedure
    /// ran zero times or once (CHAN's at-most-once guarantee). Later
    /// calls to the peer run on new channels.
    #[error("{peer} rebooted during the call to procedure {id}; it ran at most once")]
    PeerRebooted {
        /// The peer.
        peer: Peer,
        /// The procedure.
        id: u32,
    },
    /// No reply came before the call's deadline: the procedure ran zero
    /// times or once.
    #[error("the call to procedure {id} on {peer} timed out; it ran at most once")]
    TimedOut {
        /// The peer.
        peer: Peer,
        /// The procedure.
        id: u32,
    },
    /// The peer has no procedure with the id (MSELECT's `SEL_FAIL`).
    #[error("{peer} has no procedure {id}")]
    NoSuchProcedure {
        /// The peer.
        peer: Peer,
        /// The procedure.
        id: u32,
    },
    /// The request is longer than the RPC stack carries (16 BLAST
    /// fragments less the headers).
    #[error("a request of {len} bytes is too large: the RPC stack carries at most {max}")]
    TooLarge {
        /// The request's length.
        len: usize,
        /// The largest request.
        max: usize,
    },
    /// Every channel to the peer is busy and its waiting line is full, or
    /// the host has as many calls in flight as it allows.
    #[error("too many calls in flight (at most {0}); poll the host and call again")]
    Busy(usize),
    /// The message pool has no buffer for the request: poll the host and
    /// try again.
    #[error("no message buffer for the request; poll the host and try again")]
    NoBuffer,
    /// The call failed below the channel layer in a way that leaves no
    /// retransmission (the stack's path is gone). A peer's reboot is not
    /// one: a call made after it runs on a new channel.
    #[error("the call to procedure {id} on {peer} failed: {reason}")]
    Failed {
        /// The peer.
        peer: Peer,
        /// The procedure.
        id: u32,
        /// What failed.
        reason: String,
    },
    /// The call handle was already completed or belongs to another host.
    #[error("no such call (already completed, or from another host)")]
    NoSuchCall,
    /// A procedure with the id is already registered, or the server's
    /// table is full.
    #[error(transparent)]
    Register(#[from] pathstack_rpc::modules::rpc::RegisterError),
}

impl From<RpcError> for std::io::Error {
    fn from(e: RpcError) -> Self {
        use std::io::ErrorKind as K;
        let kind = match &e {
            RpcError::NoRpc | RpcError::NoSuchCall => K::Unsupported,
            RpcError::PeerRebooted { .. } => K::ConnectionReset,
            RpcError::TimedOut { .. } => K::TimedOut,
            RpcError::NoSuchProcedure { .. } => K::NotFound,
            RpcError::TooLarge { .. } => K::InvalidInput,
            RpcError::Busy(_) | RpcError::NoBuffer => K::WouldBlock,
            RpcError::Failed { .. } => K::ConnectionAborted,
            RpcError::Register(_) => K::AddrInUse,
        };
        std::io::Error::new(kind, e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::ErrorKind;

    #[test]
    fn errors_map_to_the_io_kinds_a_caller_matches_on() {
        let peer = Peer::ipv4("10.0.0.2".parse().unwrap());
        let io = |e: RpcError| std::io::Error::from(e).kind();
        assert_eq!(io(RpcError::TimedOut { peer, id: 1 }), ErrorKind::TimedOut);
        assert_eq!(
            io(RpcError::PeerRebooted { peer, id: 1 }),
            ErrorKind::ConnectionReset
        );
        assert_eq!(
            io(RpcError::NoSuchProcedure { peer, id: 1 }),
            ErrorKind::NotFound
        );
        assert_eq!(
            io(RpcError::TooLarge { len: 9, max: 8 }),
            ErrorKind::InvalidInput
        );
        assert!(RpcError::TimedOut { peer, id: 7 }
            .to_string()
            .contains("at most once"));
    }
}

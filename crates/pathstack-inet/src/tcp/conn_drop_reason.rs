//! Why a connection's stage dropped a segment that the wire format
//! accepted (RFC 9293 §3.10.7): counted on the connection's path.

pathstack_core::drop_reasons! {
    /// Why a connection dropped a well-formed segment.
    #[derive(thiserror::Error)]
    pub enum ConnDropReason in "tcp" {
        /// The sequence number is outside the receive window (RFC 9293
        /// §3.10.7.4 first check); a duplicate ACK was sent.
        #[error("segment outside the receive window")]
        OutOfWindow => "out_of_window",
        /// A timestamp older than the last one accepted (RFC 7323 §5 PAWS).
        #[error("PAWS: old timestamp")]
        Paws => "paws",
        /// The ACK acknowledges something never sent, or is far too old
        /// (RFC 9293 §3.10.7.4, RFC 5961 §5.2).
        #[error("unacceptable acknowledgment number")]
        BadAck => "bad_ack",
        /// A reset whose sequence number is not exactly RCV.NXT: answered
        /// with a challenge ACK (RFC 5961 §3.2) or ignored.
        #[error("reset not at RCV.NXT (challenge ACK)")]
        RstNotExact => "rst_not_exact",
        /// A SYN on a synchronized connection: answered with a challenge
        /// ACK (RFC 5961 §4.2).
        #[error("SYN on a synchronized connection (challenge ACK)")]
        SynInWindow => "syn_in_window",
        /// A segment without ACK on a synchronized connection (RFC 9293
        /// §3.10.7.4 fifth check).
        #[error("segment without ACK")]
        NoAck => "no_ack",
        /// A segment to a connection that has ended (answered with a reset).
        #[error("connection closed")]
        Closed => "closed",
        /// A segment a listening connection does not take (a reset, or
        /// neither SYN nor a valid cookie ACK).
        #[error("not a SYN for a listener")]
        NotSyn => "not_syn",
        /// A SYN cookie that did not check (RFC 4987 §3.6).
        #[error("bad SYN cookie")]
        BadCookie => "bad_cookie",
        /// The SYN queue and the accept queue are full and cookies are off.
        #[error("listen queue full")]
        ListenQueueFull => "listen_queue_full",
        /// The connection could not be opened (port table, path table).
        #[error("could not open the connection's path")]
        OpenFailed => "open_failed",
    }
}

//! The reasons the path core itself drops a message for: full queues, no
//! matching path, scheduling and routing bounds.

crate::drop_reasons! {
    /// Why the stack itself (not a stage) dropped a message. The names keep
    /// the part of the core that drops (`path.`, `demux.`, `sched.` …).
    pub enum CoreDropReason {
        /// A path's sink queue was full.
        SinkFull => "path" . "sink_full",
        /// A path's source queue was full.
        SourceFull => "path" . "source_full",
        /// The path already held as many buffer bytes as its memory budget
        /// allows (admission control, thesis §5.2.3): its input is
        /// discarded before any stage runs instead of the path growing.
        OverMemoryBudget => "path" . "over_memory_budget",
        /// A message was routed on at path ends more often than any real
        /// route needs (a routing loop).
        RouteLoop => "path" . "route_loop",
        /// No path matched an arriving message.
        NoPath => "demux" . "no_path",
        /// Too many follow-up messages (turned or emitted) in one
        /// scheduling round.
        FollowUpOverflow => "sched" . "follow_up_overflow",
        /// The stack's hand-over list for received frames was full.
        RxFull => "stack" . "rx_full",
        /// An executor was asked for a stage position the path does not
        /// have (a bug in the stack, counted rather than panicking).
        BadPosition => "exec" . "bad_position",
    }
}

//! The standard attribute keys, declared in one place (thesis §2.2.3.4, §3.3.1,
//! §3.5.1). Protocol crates may declare their own keys beside their modules.

use super::AttrKey;
use crate::time::{Duration, Instant};

/// One component of a participant address. Participants are stacks: each
/// module pops the component it owns (UDP its port, IP its address) on the
/// way down, as in the x-kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AddrPart {
    /// A transport port.
    Port(u16),
    /// An IPv4 address.
    Ipv4([u8; 4]),
    /// A link-layer address.
    Mac([u8; 6]),
    /// A protocol-specific identifier (an RPC channel, a synthetic tag).
    Id(u32),
}

/// The two ends of a communication: local and remote address stacks, top
/// (highest layer) last so a module `pop`s its own part.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Participants {
    /// Our end.
    pub local: Vec<AddrPart>,
    /// The peer's end; empty for a passive (listening) path.
    pub remote: Vec<AddrPart>,
}

/// The communicating parties (pervasive; each module pops its own part).
pub const PARTICIPANTS: AttrKey<Participants> = AttrKey::pervasive("PARTICIPANTS");
/// `true` for a passively opened (listening) path: demux keys are passive,
/// i.e. wildcard the remote end (thesis §3.4.3.1).
pub const PASSIVE_OPEN: AttrKey<bool> = AttrKey::pervasive("PASSIVE_OPEN");
/// The protocol number the lower module demultiplexes on (EtherType, IP
/// protocol). Set by a module for the module below it.
pub const PROT_ID: AttrKey<u32> = AttrKey::pervasive("PROT_ID");
/// Largest message the path will carry at this layer, in bytes. Limited:
/// a module that changes sizes and does not understand it must drop it.
pub const MAX_SIZE: AttrKey<usize> = AttrKey::limited("MAX_SIZE");
/// Smallest message the path will carry at this layer, in bytes. Limited.
pub const MIN_SIZE: AttrKey<usize> = AttrKey::limited("MIN_SIZE");
/// Instance names the path must traverse, in order, after the module it is
/// created on. Forces a route where a module has several connections or
/// cannot decide from the other invariants.
pub const PATHNAME: AttrKey<Vec<String>> = AttrKey::pervasive("PATHNAME");
/// Schedule the path by deadline (EDF) rather than by fixed priority.
pub const REALTIME: AttrKey<bool> = AttrKey::pervasive("REALTIME");
/// Fixed priority of a best-effort path; higher runs first.
pub const PRIORITY: AttrKey<u32> = AttrKey::pervasive("PRIORITY");
/// Relative deadline of a realtime path's work.
pub const DEADLINE: AttrKey<Duration> = AttrKey::pervasive("DEADLINE");
/// The admission class of a path ([`crate::admission`]): paths of one
/// class share the class's budgets. Absent, the class is the instance name
/// of the module the path was created at (its top).
pub const CLASS: AttrKey<String> = AttrKey::pervasive("CLASS");
/// Bytes of message buffers the path may hold in its queues at once
/// (admission control reserves them when the path is created; input beyond
/// them is discarded early). Absent: [`Budgets::path_memory`](crate::admission::Budgets::path_memory).
pub const MEM_BUDGET: AttrKey<u64> = AttrKey::pervasive("MEM_BUDGET");
/// Share of the CPU the path asks admission control for, in per mille.
/// Absent: 0 (best effort, admitted by path count and memory alone).
pub const CPU_SHARE: AttrKey<u32> = AttrKey::pervasive("CPU_SHARE");
/// Which queue a realtime path's computed deadline follows (thesis
/// §5.2.2.2): the one that is the path's bottleneck.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum BottleneckQueue {
    /// The earlier of the two deadlines (the thesis' "minimum of the
    /// deadlines associated with each queue").
    #[default]
    Both,
    /// The source queue: the time it would overflow at the observed
    /// arrival rate (the network is the bottleneck).
    Input,
    /// The sink queue: the time it would run dry at the observed drain
    /// rate (path execution is the bottleneck: keep the output full).
    Output,
}
/// Which queue a realtime path without a given deadline is scheduled by.
/// Absent: [`BottleneckQueue::Both`].
pub const DEADLINE_QUEUE: AttrKey<BottleneckQueue> = AttrKey::pervasive("DEADLINE_QUEUE");
/// Capacity of each of the path's four queues, in messages.
pub const QUEUE_LEN: AttrKey<usize> = AttrKey::pervasive("QUEUE_LEN");
/// When the path was created (set by the stack).
pub const CREATED_AT: AttrKey<Instant> = AttrKey::pervasive("CREATED_AT");

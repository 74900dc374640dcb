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
/// Capacity of each of the path's four queues, in messages.
pub const QUEUE_LEN: AttrKey<usize> = AttrKey::pervasive("QUEUE_LEN");
/// When the path was created (set by the stack).
pub const CREATED_AT: AttrKey<Instant> = AttrKey::pervasive("CREATED_AT");

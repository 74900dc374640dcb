//! Opaque identities the classifier stores but never interprets.

use std::fmt;

/// Identifies a module (ETH, IP, TCP, ...) to the classifier.
///
/// The classifier only compares module ids; the path core decides what they
/// mean. `u32::MAX` is reserved (it marks "no module" inside demux nodes, so
/// a node stays 32 bytes) and is rejected with [`ClassifyError::ReservedId`].
///
/// [`ClassifyError::ReservedId`]: crate::ClassifyError::ReservedId
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ModuleId(pub u32);

/// Identifies a path to the classifier; the value a lookup returns.
///
/// `u32::MAX` is reserved, as for [`ModuleId`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PathId(pub u32);

impl fmt::Display for ModuleId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "module #{}", self.0)
    }
}

impl fmt::Display for PathId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "path #{}", self.0)
    }
}

/// Which kind of key a partial classifier extracts (thesis §3.4.3.1).
///
/// *Active* keys are fully specified (a TCP connection: both addresses and
/// both ports); *passive* keys leave the remote side open (a listening
/// socket: protocol and local port). One path uses one mode at every level.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KeyMode {
    /// Fully specified keys, tried first.
    Active,
    /// Wildcard (listening) keys, tried only when the active walk found no path.
    Passive,
}

impl fmt::Display for KeyMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            KeyMode::Active => "active",
            KeyMode::Passive => "passive",
        })
    }
}

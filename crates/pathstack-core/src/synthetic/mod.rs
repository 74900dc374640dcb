//! Synthetic modules: small but real protocol layers for tests, benchmarks
//! and examples of the path core, independent of the Internet protocols.
//! They sit on the `DRIVER` module ([`crate::device::driver`]), which is a
//! real driver over any device and so lives with the devices.
//!
//! - `LINK` — a link layer: a 4-byte header (channel, length) that the
//!   classifier demultiplexes on.
//! - `HDR` — a generic layer: pushes a header of `size` bytes carrying a
//!   tag, the payload length and an Internet checksum of the payload
//!   (RFC 1071), and checks it on the way up.
//! - `ECHO` — the top of a path: echoes what arrives (`mode=echo`) or
//!   leaves it in the path's sink queue for the application (`mode=sink`).
//! - `WORK` — a layer with a configurable code and data working set
//!   (Blackwell's synthetic benchmark layer; [`work_graph`] stacks five).
//!
//! A path is created at `ECHO` with `PARTICIPANTS` whose local part holds
//! the channel ([`AddrPart::Id`](crate::attrs::keys::AddrPart::Id)).

mod echo;
mod hdr;
mod link;
mod pair;
mod work;

pub use echo::{EchoModule, EchoStage, ECHO_SPEC};
pub use hdr::{internet_checksum, HdrDropReason, HdrModule, HdrStage, HDR_SPEC};
pub use link::{LinkDropReason, LinkModule, LinkStage, LINK_SPEC};
pub use pair::{inline_rule, EchoPair, PAIR_GRAPH};
pub use work::{
    block_stride, layer_blocks, work_graph, WorkModule, WorkStage, BLOCK_STEPS, FAMILY_BLOCKS,
    MAX_DATA, WORK_SPEC,
};

use crate::stack::ModuleTypes;

/// Registers the synthetic module types.
pub fn register(t: &mut ModuleTypes) {
    t.register(&LINK_SPEC, LinkModule::create);
    t.register(&HDR_SPEC, HdrModule::create);
    t.register(&ECHO_SPEC, EchoModule::create);
    t.register(&WORK_SPEC, WorkModule::create);
}

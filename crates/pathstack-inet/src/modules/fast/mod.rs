//! The fused fast forms of the Internet paths (issue 26; thesis §3.3.8,
//! §4.2): one per protocol sequence, installed on established paths by
//! the specialization rules of [`super::inline`].
//!
//! A fast form is assembled from small pieces each stage offers for its
//! established case (`fast_*` methods next to the stage's `process`): the
//! ends UDP addresses to, IP's next hop and header template, ARP's cached
//! link address, Ethernet's header; on the way up each stage's check of
//! its header against what the path expects. The pieces decline whatever
//! their stage's general code would treat otherwise, and the fast form
//! then leaves the message to the modular stages
//! ([`pathstack_core::fused`]).

pub mod link;
pub mod transport;
pub mod udp;

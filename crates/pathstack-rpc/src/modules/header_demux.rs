//! The partial classifier of an RPC-family protocol whose demux key is its
//! header's: BID, BLAST and CHAN each key on their upper protocol number
//! (thesis §3.4.3), read by their wire module's `packet_demux_key`, at
//! the offsets of its `FLOW_LAYOUT`. One declaration, so that the three
//! cannot drift apart; a macro rather than a generic type because the key
//! function must stay a direct, inlined call on the classifier's walk.

/// Declares `$name`, the partial classifier of `crate::wire::$wire`. The
/// key does not depend on the mode: RPC's paths are passive (they serve
/// every peer) and flows all the same.
macro_rules! header_demux {
    ($(#[$doc:meta])* $name:ident, $wire:ident) => {
        $(#[$doc])*
        struct $name;

        impl pathstack_core::demux::PartialClassifier for $name {
            #[inline]
            fn extract(
                &self,
                msg: &[u8],
                mode: pathstack_core::demux::KeyMode,
            ) -> Option<(pathstack_core::demux::Key, usize)> {
                crate::wire::$wire::packet_demux_key(msg, mode)
            }

            fn flow_layout(&self) -> Option<pathstack_core::demux::FlowLayout> {
                Some(crate::wire::$wire::FLOW_LAYOUT)
            }

            fn passive_flow_layout(&self) -> Option<pathstack_core::demux::FlowLayout> {
                Some(crate::wire::$wire::FLOW_LAYOUT)
            }
        }
    };
}

//! The partial classifier of a protocol whose demux key is its header's:
//! ETH, IP, UDP and TCP (`pathstack-inet`), BID, BLAST and CHAN
//! (`pathstack-rpc`, keyed on their upper protocol number, thesis §3.4.3)
//! each read the key with their wire module's `packet_demux_key`, at the
//! offsets of its `FLOW_LAYOUT` (and, for a passive path, of the layout
//! the module names). One declaration, so that the seven cannot drift
//! apart; a macro rather than a generic type because the key function
//! must stay a direct, inlined call on the classifier's walk.

/// Declares `$name`, the partial classifier of the wire module `$wire`
/// (a path such as `crate::wire::udp`), whose passive paths are flows by
/// `$wire::$passive`: by default the header's `FLOW_LAYOUT`, as passive
/// paths key on the same fields (RPC's, which serve every peer, and
/// ETH's); a narrower `PASSIVE_FLOW_LAYOUT` is named (IP, UDP, TCP: the
/// destination port).
///
/// ```ignore
/// pathstack_core::header_demux!(
///     /// The UDP partial classifier.
///     UdpDemux,
///     crate::wire::udp,
///     PASSIVE_FLOW_LAYOUT
/// );
/// ```
#[macro_export]
macro_rules! header_demux {
    ($(#[$doc:meta])* $name:ident, $($wire:ident)::+) => {
        $crate::header_demux!($(#[$doc])* $name, $($wire)::+, FLOW_LAYOUT);
    };
    ($(#[$doc:meta])* $name:ident, $($wire:ident)::+, $passive:ident) => {
        $(#[$doc])*
        struct $name;

        impl $crate::demux::PartialClassifier for $name {
            #[inline]
            fn extract(
                &self,
                msg: &[u8],
                mode: $crate::demux::KeyMode,
            ) -> Option<($crate::demux::Key, usize)> {
                $($wire)::+::packet_demux_key(msg, mode)
            }

            fn flow_layout(&self) -> Option<$crate::demux::FlowLayout> {
                Some($($wire)::+::FLOW_LAYOUT)
            }

            fn passive_flow_layout(&self) -> Option<$crate::demux::FlowLayout> {
                Some($($wire)::+::$passive)
            }
        }
    };
}

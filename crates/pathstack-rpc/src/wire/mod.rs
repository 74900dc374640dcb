//! The headers of the RPC protocols, one file per header: its byte layout,
//! parse and emit, and tests against the specification's byte vectors.
//!
//! Every multi-byte integer is big-endian; pad and unused bytes are sent
//! as zero and ignored on receipt (the canonical layout: the x-kernel's
//! ILP32 C structs after `hton*`).

pub mod bid;
pub mod bidctl;
pub mod blast;
pub mod chan;
pub mod mselect;

/// The flow layouts (`FLOW_LAYOUT` of BLAST, BID and CHAN) keep their
/// contract with the partial classifiers: wherever a layout applies, the
/// classifier's active key and header length are the layout's.
#[cfg(test)]
mod flow_layout_tests {
    use super::{bid, blast, chan};
    use pathstack_core::demux::{FlowLayout, Key, KeyMode};
    use proptest::prelude::*;

    type Extract = fn(&[u8], KeyMode) -> Option<(Key, usize)>;

    const LAYOUTS: [(&str, FlowLayout, Extract); 3] = [
        ("blast", blast::FLOW_LAYOUT, blast::packet_demux_key),
        ("bid", bid::FLOW_LAYOUT, bid::packet_demux_key),
        ("chan", chan::FLOW_LAYOUT, chan::packet_demux_key),
    ];

    /// A short BLAST message carrying a call: each layout applies, with the
    /// classifier's key; a fragment, a NACK or a retransmission does not
    /// take BLAST's layout.
    #[test]
    fn layouts_apply_to_common_headers() {
        let mut h = [0xa5u8; 40];
        h[4..8].fill(0); // seq 0: a short message
        h[12..14].fill(0); // no fragments
        h[14] = blast::op::SEND;
        for (name, layout, extract) in LAYOUTS {
            let got = layout.extract(&h);
            assert!(got.is_some(), "{name}'s layout does not apply");
            assert_eq!(got, extract(&h, KeyMode::Active), "{name}");
        }
        // CHAN keys on the FROM_CLIENT bit alone: 0xa5 & 0x01.
        assert_eq!(chan::FLOW_LAYOUT.extract(&h).unwrap().0.as_bytes()[0], 1);
        for (at, v) in [
            (7, 1),
            (12, 1),
            (13, 1),
            (14, blast::op::NACK),
            (14, blast::op::RETRANSMIT),
        ] {
            let mut d = h;
            d[at] = v;
            assert_eq!(blast::FLOW_LAYOUT.extract(&d), None, "byte {at} = {v:#x}");
            assert_eq!(blast::packet_demux_key(&d, KeyMode::Active), None);
        }
        for (name, layout, _) in LAYOUTS {
            assert_eq!(layout.extract(&h[..layout.fixed_len() - 1]), None, "{name}");
        }
    }

    proptest! {
        #[test]
        fn layouts_agree_with_packet_demux_keys(
            mut bytes in prop::collection::vec(any::<u8>(), 0..48),
            short in any::<bool>(),
        ) {
            if short && bytes.len() >= 15 {
                bytes[4..8].fill(0);
                bytes[12..14].fill(0);
                bytes[14] = blast::op::SEND;
            }
            // One layout for both modes: the keys do not depend on it.
            for (name, layout, extract) in LAYOUTS {
                for mode in [KeyMode::Active, KeyMode::Passive] {
                    let want = extract(&bytes, mode);
                    match layout.extract(&bytes) {
                        Some(got) => prop_assert_eq!(Some(got), want, "{}", name),
                        // Every layout here covers all its classifier accepts.
                        None => prop_assert_eq!(want, None, "{}", name),
                    }
                }
            }
        }
    }
}

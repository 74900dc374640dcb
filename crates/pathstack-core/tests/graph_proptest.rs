//! Properties of the graph text format: no input panics the parser or the
//! checker, and generated valid graphs survive a text round trip.

mod graph_specs;

use pathstack_core::graph::{GraphBuilder, ModuleGraph};
use proptest::prelude::*;

/// Fragments that make near-miss graph text far likelier than raw bytes.
const TOKENS: &[&str] = &[
    "module=", "name=", "HDR", "ECHO", "PEER", "DRIVER", "LINK", "device=0", "size=", ";", "@",
    "<>", "<", ".", "=", "\"", "\\", "#", "\n", " ", "up", "down", "a", "b", "h1", "x",
];

/// A token soup: indices into [`TOKENS`], or (past its end) a random char.
/// Indices rather than a `prop_oneof!` of strings: generation is ~10x
/// cheaper, which matters in debug builds.
fn soup() -> impl Strategy<Value = String> {
    prop::collection::vec((0..TOKENS.len() + 2, any::<char>()), 0..60).prop_map(|v| {
        v.into_iter()
            .map(|(i, c)| {
                TOKENS
                    .get(i)
                    .map_or_else(|| c.to_string(), |t| t.to_string())
            })
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn random_text_never_panics(text in "\\PC{0,200}") {
        let _ = ModuleGraph::from_text(&text, Some("f"), &graph_specs::registry());
    }

    #[test]
    fn random_token_soup_never_panics(text in soup()) {
        match ModuleGraph::from_text(&text, Some("f"), &graph_specs::registry()) {
            Ok(g) => {
                // A graph that builds is self-consistent.
                prop_assert_eq!(g.init_order().len(), g.instances().len());
                let again = ModuleGraph::from_text(&g.to_text(), None, &graph_specs::registry());
                prop_assert_eq!(again.as_ref().ok(), Some(&g));
            }
            Err(errs) => {
                prop_assert!(!errs.is_empty());
                for e in &errs {
                    let loc = e.location.as_ref().expect("text errors have locations");
                    prop_assert!(loc.line as usize <= text.lines().count() + 1);
                    prop_assert!(!e.to_string().is_empty());
                }
            }
        }
    }

    /// Random PEER graphs with random markers: either a valid order that
    /// honours every marker, or at least one reported cycle; and valid ones
    /// round-trip through text.
    #[test]
    fn random_peer_graphs(
        n in 1usize..7,
        edges in prop::collection::vec((0usize..7, 0usize..2, 0usize..7, 0usize..2, 0u8..3), 0..12),
    ) {
        let r = graph_specs::registry();
        let mut b = GraphBuilder::new(&r);
        for i in 0..n {
            b.instance(format!("p{i}"), "PEER");
        }
        for (x, sx, y, sy, mark) in edges {
            let (x, y) = (format!("p{}", x % n), format!("p{}", y % n));
            let (sx, sy) = (["a", "b"][sx], ["a", "b"][sy]);
            match mark {
                0 => b.connect((&x, sx), (&y, sy)),
                1 => b.connect_ordered((&x, sx), (&y, sy)),
                _ => b.connect_ordered((&y, sy), (&x, sx)),
            };
        }
        match b.build() {
            Ok(g) => {
                let pos = |id| g.init_order().iter().position(|&x| x == id).unwrap();
                for c in g.connections() {
                    for side in 0..2 {
                        if c.init_after[side] {
                            prop_assert!(pos(c.ends[side].instance) > pos(c.ends[1 - side].instance));
                        }
                    }
                }
                let again = ModuleGraph::from_text(&g.to_text(), None, &r).unwrap();
                prop_assert_eq!(again, g);
            }
            Err(errs) => {
                prop_assert!(errs.iter().all(|e| matches!(
                    e.kind,
                    pathstack_core::graph::GraphErrorKind::InitCycle { .. }
                )), "{}", errs);
            }
        }
    }
}

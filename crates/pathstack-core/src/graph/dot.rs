//! Graphviz rendering of a module graph, in the style of the thesis'
//! figures (Fig. 3.3): one box per instance, one line per connection.

use std::fmt::Write as _;

use super::module_graph::ModuleGraph;

/// A DOT double-quoted string body: escapes `"` and `\`.
fn quote(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

impl ModuleGraph {
    /// The graph in Graphviz DOT: a node per instance labelled
    /// `name\n(TYPE)`, an edge per connection labelled with both service
    /// names. A connection with a `<` end (explicit or from the spec) is a
    /// solid arrow from the instance initialized later to the one it waits
    /// for, labelled with `<` on the marked service; other connections are
    /// dashed lines without arrowheads.
    pub fn to_dot(&self) -> String {
        let mut s = String::new();
        let title = self.file().unwrap_or("module graph");
        let _ = writeln!(s, "digraph \"{}\" {{", quote(title));
        let _ = writeln!(s, "  node [shape=box, fontname=\"Helvetica\"];");
        let _ = writeln!(s, "  edge [fontname=\"Helvetica\", fontsize=10];");
        for (i, inst) in self.instances().iter().enumerate() {
            let _ = writeln!(
                s,
                "  n{i} [label=\"{}\\n({})\"];",
                quote(&inst.name),
                quote(inst.spec.name)
            );
        }
        for c in self.connections() {
            let svc = |side: usize| {
                let link = c.ends[side];
                let name = self.instance(link.instance).spec.services[link.service].name;
                let marker = if c.init_after[side] { "<" } else { "" };
                quote(&format!("{marker}{name}"))
            };
            let (a, b) = (c.ends[0].instance.index(), c.ends[1].instance.index());
            let label = format!("{} <> {}", svc(0), svc(1));
            let _ = match c.init_after {
                // Arrow from the waiting instance to the one it waits for.
                [true, false] => writeln!(s, "  n{a} -> n{b} [label=\"{label}\"];"),
                [false, true] => writeln!(s, "  n{b} -> n{a} [label=\"{label}\"];"),
                // Both ends marked is a cycle, which a built graph never
                // has; drawn anyway so the match is total.
                [true, true] => writeln!(s, "  n{a} -> n{b} [label=\"{label}\", dir=both];"),
                [false, false] => writeln!(
                    s,
                    "  n{a} -> n{b} [label=\"{label}\", dir=none, style=dashed];"
                ),
            };
        }
        s.push_str("}\n");
        s
    }
}

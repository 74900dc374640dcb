//! Every graph shipped in `graphs/` checks cleanly against the module types
//! that exist.

#[test]
fn shipped_graphs_check() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../graphs");
    let specs = pathstack::module_specs();
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "graph") {
            pathstack::core::graph::ModuleGraph::from_file(&path, &specs)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            n += 1;
        }
    }
    assert!(n > 0, "no graph files in {}", dir.display());
}

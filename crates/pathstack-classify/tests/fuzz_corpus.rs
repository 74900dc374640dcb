//! Runs the fuzz harness over the committed corpus (`fuzz/corpus/classify`),
//! so `cargo test` exercises the fuzz target without nightly.

use std::path::PathBuf;

#[test]
fn fuzz_corpus_runs_clean() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/classify");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("corpus {} unreadable: {e}", dir.display()))
        .map(|e| e.expect("corpus entry").path())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "corpus {} is empty", dir.display());
    for f in &files {
        let data = std::fs::read(f).expect("corpus file");
        let r = std::panic::catch_unwind(|| pathstack_classify::testing::fuzz::run(&data));
        assert!(r.is_ok(), "fuzz input {} fails", f.display());
    }
}

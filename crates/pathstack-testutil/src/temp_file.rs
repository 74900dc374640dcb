//! A temporary file that is removed when the test ends, passed or failed.

use std::path::{Path, PathBuf};

/// A file in the temp dir, unique to this process and a tag, removed on
/// drop (also when the test fails).
pub struct TempFile(PathBuf);

impl TempFile {
    /// The file `pathstack-<pid>-<tag>` in the temp dir (not created here).
    pub fn new(tag: &str) -> TempFile {
        TempFile(std::env::temp_dir().join(format!("pathstack-{}-{tag}", std::process::id())))
    }
}

impl std::ops::Deref for TempFile {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for TempFile {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

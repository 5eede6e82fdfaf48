//! Config files for the binary under test. Std only: `benches/common` includes this file too.

use std::path::{Path, PathBuf};

/// `[exec]` with shells allowed: tests and benches script with `sh -c`, which otherwise needs
/// the user's confirmation. More `[exec]` lines may follow it.
pub(crate) const ALLOW_SHELLS: &str = "[exec]\nallow_shells = true\n";

/// Write `toml` to `toolport-test.toml` in `dir` and return its path, for `--config`.
pub(crate) fn config_file(dir: &Path, toml: &str) -> PathBuf {
    let path = dir.join("toolport-test.toml");
    if let Err(e) = std::fs::write(&path, toml) {
        panic!("write {}: {e}", path.display());
    }
    path
}

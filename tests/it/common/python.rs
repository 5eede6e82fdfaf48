//! The frameworks venv's python with the MCP Python SDK (`.ci/venv`, installed by `.ci/run`;
//! `TOOLPORT_FRAMEWORKS_PYTHON` names another), for the tests that drive the SDK's client.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use tokio::process::Command;

/// The python, or `None` (the test does not run) when it is not there; with `required_by` set
/// in the environment (CI) a missing one fails the test.
pub(crate) fn sdk_python(required_by: &str) -> Option<PathBuf> {
    let python = std::env::var_os("TOOLPORT_FRAMEWORKS_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join(".ci/venv/bin/python"));
    let has_sdk = python.is_file()
        && std::process::Command::new(&python)
            .args(["-c", "import mcp.client.auth"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
    if has_sdk {
        return Some(python);
    }
    assert!(
        std::env::var_os(required_by).is_none(),
        "the MCP Python SDK is missing ({} has no mcp): .ci/run installs it into .ci/venv",
        python.display()
    );
    eprintln!("not run: no python with the MCP SDK at .ci/venv (.ci/run installs it)");
    None
}

/// `python` running the script at `script` (a path in the repository) with `args`: stdin and
/// stdout piped (the test's conversation with it), stderr the test's, killed when dropped.
pub(crate) fn sdk_script(
    python: &Path,
    script: &str,
    args: impl IntoIterator<Item = impl AsRef<OsStr>>,
) -> Command {
    let mut command = Command::new(python);
    command
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join(script))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true);
    command
}

//! Processes seen from outside: whether a pid is alive, the pids a command recorded, and a
//! bounded wait for a condition on them.
//!
//! The state comes from `/proc/<pid>/stat`, read by hand: one field of one file does not
//! warrant the `procfs` crate.

use std::path::Path;
use std::time::{Duration, Instant};

/// How long [`eventually`] waits: generous, for shared CI machines.
const PATIENCE: Duration = Duration::from_secs(10);

/// How often [`eventually`] looks again.
const POLL: Duration = Duration::from_millis(20);

/// The one-letter state of a process (`R`, `S`, `Z` …), or `None` when there is no such
/// process.
pub(crate) fn state(pid: i32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may hold spaces or `)`: the state follows the
    // last `)`.
    stat.rsplit_once(')')?.1.trim_start().chars().next()
}

/// Whether a process with this pid exists and is not a zombie.
pub(crate) fn alive(pid: i32) -> bool {
    state(pid).is_some_and(|s| s != 'Z')
}

/// The children of a process (those of its main thread), from
/// `/proc/<pid>/task/<pid>/children`; empty when it has none or is gone.
pub(crate) fn children(pid: i32) -> Vec<i32> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

/// The pids a command wrote into `file`, one per line, in order; empty while the file does
/// not exist yet.
pub(crate) fn pids(file: &Path) -> Vec<i32> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

/// Wait until `check` holds, failing the test with `what` after [`PATIENCE`].
///
/// This polls: the death of a process that is not our child, or a file another process
/// writes, is not an event a test can await.
pub(crate) async fn eventually(what: &str, check: impl Fn() -> bool) {
    let deadline = Instant::now() + PATIENCE;
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting for: {what}");
        tokio::time::sleep(POLL).await;
    }
}

//! A process's CPU time and memory, read from `/proc` (Linux only, as the benches are).

use std::fmt::Display;
use std::path::Path;

/// Clock ticks per second in `/proc/<pid>/stat` (USER_HZ: 100 on every mainstream Linux
/// build; the kernel reports in these units whatever its internal HZ).
pub(crate) const TICKS_PER_SEC: f64 = 100.0;

/// User + system CPU seconds of a process so far, from `/proc/<pid>/stat`; `pid` may be
/// `"self"`. `None` when the process is gone.
pub(crate) fn cpu_secs(pid: impl Display) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may hold spaces: count fields after it. utime
    // and stime are fields 14 and 15 of the whole line, 11 and 12 after the name.
    let (_, rest) = stat.rsplit_once(')')?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i)?.parse::<u64>().ok();
    Some((ticks(11)? + ticks(12)?) as f64 / TICKS_PER_SEC)
}

/// Memory figures from `/proc/<pid>/status`, in KiB.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Mem {
    /// Resident set size now (`VmRSS`): private memory plus the pages of files (the binary's
    /// code, shared libraries) mapped in, which are shared and can be dropped and read again.
    pub rss: u64,
    /// The private part of it now (`RssAnon`): heap, stacks, written data.
    pub anon: u64,
    /// The highest resident set size since the process started (`VmHWM`).
    pub hwm: u64,
}

/// The memory of a process; `None` when it is gone.
pub(crate) fn mem(pid: impl Display) -> Option<Mem> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
    };
    Some(Mem {
        rss: field("VmRSS:")?,
        anon: field("RssAnon:")?,
        hwm: field("VmHWM:")?,
    })
}

/// Drops a program's pages from the page cache (dirty ones written back first), so the next
/// process that maps it reads it from disk, as the first start after a boot does.
///
/// Why the benches need it: how a file's pages came into the cache changes how much of it a
/// process maps. On Linux 6.18 with ext4, a binary just written with `write` (by `cp`, an
/// installer, a download) is cached in large folios, and each page fault in its code maps
/// more of them: the same toolport binary measured 0.5 MB more resident as a fresh copy than
/// after its pages were read back from disk (BENCHMARKS.md, "Lean again"). Servers compared
/// side by side must start from the same state. `path` may be a bare name found on `PATH`
/// (`node`); an error says what could not be done.
pub(crate) fn evict_from_page_cache(path: &Path) -> std::io::Result<()> {
    use nix::fcntl::{PosixFadviseAdvice, posix_fadvise};
    let found = if path.components().count() > 1 {
        path.to_path_buf()
    } else {
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
            .map(|dir| dir.join(path))
            .find(|candidate| candidate.is_file())
            .ok_or_else(|| std::io::Error::other(format!("{} not on PATH", path.display())))?
    };
    let file = std::fs::File::open(&found)?;
    // DONTNEED skips dirty pages: write them back first (allowed on a read-only handle).
    file.sync_all()?;
    posix_fadvise(&file, 0, 0, PosixFadviseAdvice::POSIX_FADV_DONTNEED)
        .map_err(std::io::Error::from)
}

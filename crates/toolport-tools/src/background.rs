//! Work a call left running, as the server sees it: the hook between tools whose calls can
//! outlive their request (today `execute_command`'s jobs) and what the server builds on such
//! work (MCP tasks, the `toolport://jobs/…` output resources), so that the server never names a
//! tool.
//!
//! A call that leaves work running says so in its [`crate::tool::CallFacts`] (by id); the
//! server finds the work through [`BackgroundWork`] and reads it through [`Background`]. Work
//! belongs to the [`Session`] that started it: another session's work is "not found".
//!
//! This is the tool model's layer: it knows nothing of the tools, the server or the config.

use std::fmt::Debug;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use async_trait::async_trait;

use crate::tool::{Session, ToolError, ToolOutput};

/// Where a piece of background work stands.
#[derive(Debug, Clone, PartialEq)]
pub enum BackgroundState {
    /// It runs.
    Running {
        /// A line saying how far it got.
        message: String,
    },
    /// It ended by itself.
    Ended {
        /// The result a call that waited for the end would have returned.
        output: ToolOutput,
        /// A line saying how it ended.
        message: String,
    },
    /// It was killed (cancelled, or its session ended).
    Killed {
        /// How, in a line.
        message: String,
    },
}

/// One of the two output streams background work keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputStream {
    /// Standard output.
    Stdout,
    /// Standard error.
    Stderr,
}

/// The start of a stream's output: what one read returned, and how much there is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputStart {
    /// The bytes read, as text.
    pub text: String,
    /// The offset after `text` (where a further read would go on).
    pub next: u64,
    /// How many bytes of the stream can be read in all, so far.
    pub readable: u64,
}

/// One piece of work a call left running.
#[async_trait]
pub trait Background: Send + Sync + Debug {
    /// Its id, unique among its session's work (an MCP task has the same id).
    fn id(&self) -> &str;
    /// Where it stands now.
    fn state(&self) -> BackgroundState;
    /// When it started.
    fn started_at(&self) -> SystemTime;
    /// When it ended, once it has.
    fn ended_at(&self) -> Option<SystemTime>;
    /// How long it is kept after its end (at most: it may be dropped sooner).
    fn retention(&self) -> Duration;
    /// End it, and return once it is gone. Work that has ended already is left as it is.
    async fn cancel(&self);
    /// The start of one of its output streams: at most `max` bytes from the beginning.
    fn read_output(&self, stream: OutputStream, max: usize) -> std::io::Result<OutputStart>;
}

/// Where background work is found by id.
pub trait BackgroundWork: Send + Sync + Debug {
    /// The work `id` of `owner`; another session's work, or work that is gone, is
    /// [`ToolError::NotFound`].
    fn get(&self, owner: &Session, id: &str) -> Result<Arc<dyn Background>, ToolError>;
    /// The server is stopping: remove what the work keeps on disk.
    fn remove_files(&self) {}
}

/// The server's handle on background work: every tool's, behind one [`BackgroundWork`].
/// The default holds none (a server that runs no commands).
#[derive(Debug, Clone)]
pub struct BackgroundTable(Arc<dyn BackgroundWork>);

impl BackgroundTable {
    /// A handle on `work`.
    pub fn new(work: Arc<dyn BackgroundWork>) -> Self {
        Self(work)
    }

    /// The work `id` of `owner` ([`BackgroundWork::get`]).
    pub fn get(&self, owner: &Session, id: &str) -> Result<Arc<dyn Background>, ToolError> {
        self.0.get(owner, id)
    }

    /// The server is stopping: remove what the work keeps on disk.
    pub fn remove_files(&self) {
        self.0.remove_files();
    }
}

impl Default for BackgroundTable {
    fn default() -> Self {
        Self(Arc::new(NoWork))
    }
}

/// No background work at all.
#[derive(Debug)]
struct NoWork;

impl BackgroundWork for NoWork {
    fn get(&self, _owner: &Session, id: &str) -> Result<Arc<dyn Background>, ToolError> {
        Err(no_work(id))
    }
}

/// The answer for work `id` where nothing runs in the background (no command runner): one
/// message, whichever table is asked.
pub(crate) fn no_work(id: &str) -> ToolError {
    ToolError::NotFound(format!("no job {id:?}: this server runs no commands"))
}

/// The separator between a piece of work's own id and the server that runs it, in the ids of
/// servers that run as replicas (`job_3@r2~1a2b3c4d`). Not a character of a replica's name
/// (letters, digits, `-`, `_`, `.`), nor of a work's own id.
pub const SERVER_SEPARATOR: char = '@';

/// A work id's parts: its own id and, for a replica's work, the server that runs it (`None`
/// for a server of its own).
pub fn split_work_id(id: &str) -> (&str, Option<&str>) {
    match id.rsplit_once(SERVER_SEPARATOR) {
        Some((own, server)) if !own.is_empty() && !server.is_empty() => (own, Some(server)),
        _ => (id, None),
    }
}

/// Where work that another server of the same deployment runs is reached: replicas sharing a
/// store behind a load balancer (the server's `[replicas]`). With one attached, work ids name
/// the server that runs them ([`SERVER_SEPARATOR`]), and a request for work that another one
/// runs goes there (or says why it cannot: forwarding is off, that server is gone and its work
/// lost).
#[async_trait]
pub trait Elsewhere: Send + Sync + Debug {
    /// This server's name in work ids (what follows [`SERVER_SEPARATOR`]).
    fn here(&self) -> &str;

    /// Call `tool` with `args` for `owner` on the server named `there` (the part of a work id
    /// after [`SERVER_SEPARATOR`]), and return its result's structured value; or why it
    /// cannot be done, as the error the call answers with.
    async fn forward(
        &self,
        there: &str,
        owner: &Session,
        tool: &str,
        args: serde_json::Map<String, serde_json::Value>,
    ) -> Result<serde_json::Value, ToolError>;

    /// What the other servers last reported of `owner`'s work: one object per piece of work
    /// (the fields its listing has, and `lost` when its server is gone).
    async fn listed_elsewhere(&self, owner: &Session) -> Result<Vec<serde_json::Value>, String>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_work_id_names_its_server_after_the_last_separator() {
        assert_eq!(split_work_id("job_3"), ("job_3", None));
        assert_eq!(split_work_id("job_3@r2~1a2b"), ("job_3", Some("r2~1a2b")));
        assert_eq!(split_work_id("job_3@"), ("job_3@", None));
        assert_eq!(split_work_id("@r2"), ("@r2", None));
        assert_eq!(split_work_id("a@b@r2"), ("a@b", Some("r2")));
    }
}

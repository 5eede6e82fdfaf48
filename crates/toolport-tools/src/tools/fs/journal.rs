//! The undo journal: each write tool's change (write_file, edit_file, apply_patch, move_path,
//! copy_path, delete_path) is kept with the before-images of what it replaced or removed, per
//! session, so `undo_last_change` can put it back.
//!
//! - **Per session**: a change belongs to the session that made it; another session is told
//!   it does not exist. A session's changes are forgotten when it ends.
//! - **Bounded**: at most [`MAX_CHANGES`] changes and [`MAX_BYTES`] bytes of before-images per
//!   session; the oldest go first. A change whose before-images alone exceed the bytes is not
//!   kept (its result says so).
//! - **Spilled**: a before-image over [`SPILL_OVER`] bytes lives in an anonymous temporary
//!   file (the `tempfile` crate: unlinked at once on Unix, delete-on-close on Windows, in the
//!   system's temporary directory), gone when the change is forgotten.
//! - **Checked**: an undo first checks that every file is as the change left it (by sha256;
//!   "nothing there" for what it removed), and refuses, naming the file, if one changed since.

use std::collections::{HashMap, VecDeque};
use std::io::{Read, Seek, Write};
use std::sync::{Arc, Mutex, PoisonError};

use cap_std::fs::Metadata;
use schemars::JsonSchema;
use serde::Serialize;

use super::text;
use crate::tool::{Session, ToolError};
use crate::workspace::{FileKind, PathError, Workspace};

/// Most changes kept per session: enough to walk back a long editing session; the oldest is
/// forgotten first.
pub(crate) const MAX_CHANGES: usize = 100;
/// Most bytes of before-images kept per session (memory and spill files together): a few
/// large files or many small ones, without letting one session fill a disk.
pub(crate) const MAX_BYTES: u64 = 256 * 1024 * 1024;
/// A before-image larger than this is spilled to a temporary file instead of memory.
const SPILL_OVER: usize = 256 * 1024;

/// What a file was before a change: its bytes and its permissions.
#[derive(Debug)]
pub(crate) struct Image {
    stored: Stored,
    len: u64,
    /// Its permissions (a re-created file gets them back).
    pub(crate) like: Option<Box<Metadata>>,
}

#[derive(Debug)]
enum Stored {
    Memory(Vec<u8>),
    Spilled(Mutex<std::fs::File>),
}

impl Image {
    /// Keep `bytes` (spilled when large).
    pub(crate) fn new(bytes: Vec<u8>, like: Option<&Metadata>) -> std::io::Result<Self> {
        let len = bytes.len() as u64;
        let stored = if bytes.len() > SPILL_OVER {
            let mut file = tempfile::tempfile()?;
            file.write_all(&bytes)?;
            Stored::Spilled(Mutex::new(file))
        } else {
            Stored::Memory(bytes)
        };
        Ok(Self {
            stored,
            len,
            like: like.cloned().map(Box::new),
        })
    }

    /// The bytes again.
    pub(crate) fn bytes(&self) -> std::io::Result<Vec<u8>> {
        match &self.stored {
            Stored::Memory(bytes) => Ok(bytes.clone()),
            Stored::Spilled(file) => {
                let mut file = file.lock().unwrap_or_else(PoisonError::into_inner);
                file.rewind()?;
                let mut bytes = Vec::with_capacity(usize::try_from(self.len).unwrap_or(0));
                file.read_to_end(&mut bytes)?;
                Ok(bytes)
            }
        }
    }
}

/// One thing a change did, with what undoing it needs. Paths are absolute real paths inside
/// the roots.
#[derive(Debug)]
pub(crate) enum Step {
    /// The file at `path` was `before` (`None`: nothing was there) and the change left bytes
    /// with sha256 `after` there (`None`: nothing).
    File {
        path: String,
        before: Option<Image>,
        after: Option<String>,
    },
    /// The change created this (empty) folder.
    MadeFolder { path: String },
    /// The change removed this folder (undo makes it again before the files in it).
    RemovedFolder { path: String },
    /// `from` was renamed to `to`, replacing the file `replaced` there.
    Moved {
        from: String,
        to: String,
        replaced: Option<Image>,
    },
}

impl Step {
    fn bytes(&self) -> u64 {
        match self {
            Self::File {
                before: Some(image),
                ..
            }
            | Self::Moved {
                replaced: Some(image),
                ..
            } => image.len,
            _ => 0,
        }
    }
}

/// A change as the journal keeps it.
#[derive(Debug)]
pub(crate) struct Change {
    /// Its number in the session (its id is `c<seq>`).
    seq: u64,
    /// The tool that made it.
    pub(crate) tool: &'static str,
    /// What it did, in a few words.
    pub(crate) summary: String,
    /// What it did, in order (undone in reverse).
    pub(crate) steps: Vec<Step>,
    bytes: u64,
}

impl Change {
    /// Its id in the session (`c1`, `c2`, …), as results and `undo_last_change` name it.
    pub(crate) fn id(&self) -> String {
        format!("c{}", self.seq)
    }
}

/// Why a change whose before-images pass the journal's bound cannot be undone.
fn too_large() -> String {
    format!(
        "cannot be undone: what it replaced or removed is more than the {MAX_BYTES} bytes the undo journal keeps per session"
    )
}

#[derive(Debug, Default)]
struct SessionLog {
    next: u64,
    changes: VecDeque<Change>,
    bytes: u64,
}

/// The journal of every session (shared by the write tools and `undo_last_change`).
#[derive(Debug, Clone, Default)]
pub(crate) struct Journal {
    sessions: Arc<Mutex<HashMap<Arc<str>, SessionLog>>>,
}

impl Journal {
    fn with<T>(&self, f: impl FnOnce(&mut HashMap<Arc<str>, SessionLog>) -> T) -> T {
        f(&mut self.sessions.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Keep a change of `session`; its id, or why it is not kept. The session's changes are
    /// forgotten when it ends.
    pub(crate) fn record(
        &self,
        session: &Session,
        tool: &'static str,
        summary: String,
        steps: Vec<Step>,
    ) -> Result<String, String> {
        let bytes: u64 = steps.iter().map(Step::bytes).sum();
        if bytes > MAX_BYTES {
            return Err(too_large());
        }
        let (first, id) = self.with(|sessions| {
            let first = !sessions.contains_key(&session.id);
            let log = sessions.entry(session.id.clone()).or_default();
            log.next += 1;
            log.bytes += bytes;
            let change = Change {
                seq: log.next,
                tool,
                summary,
                steps,
                bytes,
            };
            let id = change.id();
            log.changes.push_back(change);
            while log.changes.len() > MAX_CHANGES || log.bytes > MAX_BYTES {
                let Some(old) = log.changes.pop_front() else {
                    break;
                };
                log.bytes -= old.bytes;
            }
            (first, id)
        });
        if first && let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let journal = self.clone();
            let session = session.clone();
            runtime.spawn(async move {
                session.ended.cancelled().await;
                journal.with(|sessions| sessions.remove(&session.id));
            });
        }
        Ok(id)
    }

    /// Take the change `id` (the latest when `None`) of `session` out of the journal, to undo
    /// it; [`Journal::put_back`] returns it when the undo is refused.
    pub(crate) fn take(&self, session: &Session, id: Option<&str>) -> Result<Change, ToolError> {
        self.with(|sessions| {
            let log = sessions.get_mut(&session.id);
            let Some(log) = log.filter(|l| !l.changes.is_empty()) else {
                return Err(ToolError::NotFound(
                    "there is no change to undo in this session (the write tools' changes are kept per session, the last 100 of them)".into(),
                ));
            };
            let at = match id {
                None => log.changes.len() - 1,
                Some(id) => log.changes.iter().position(|c| c.id() == id).ok_or_else(|| {
                    let known: Vec<String> = log.changes.iter().map(Change::id).collect();
                    ToolError::NotFound(format!(
                        "no change {id:?} in this session; the changes that can be undone are {}",
                        known.join(", ")
                    ))
                })?,
            };
            let change = log.changes.remove(at).ok_or_else(|| {
                ToolError::NotFound("the change is no longer in the journal".into())
            })?;
            log.bytes -= change.bytes;
            Ok(change)
        })
    }

    /// Return a change taken by [`Journal::take`] (the undo was refused), in its place by id.
    pub(crate) fn put_back(&self, session: &Session, change: Change) {
        self.with(|sessions| {
            let log = sessions.entry(session.id.clone()).or_default();
            let at = log
                .changes
                .iter()
                .position(|c| c.seq > change.seq)
                .unwrap_or(log.changes.len());
            log.bytes += change.bytes;
            log.changes.insert(at, change);
        });
    }
}

/// Collects a change's steps within the journal's byte bound: once the before-images pass
/// it, no more are kept and the change will not be recorded (its result says why).
#[derive(Debug, Default)]
pub(crate) struct Recorder {
    steps: Vec<Step>,
    bytes: u64,
    /// Why the change cannot be undone, once that is known.
    refused: Option<String>,
}

impl Recorder {
    /// A recorder of steps already made (apply_patch and copy_path keep every before-image to
    /// restore on failure, within the bound or not); [`Journal::record`] refuses them when
    /// their images pass the bound.
    pub(crate) fn from_steps(steps: Vec<Step>) -> Self {
        Self {
            steps,
            ..Self::default()
        }
    }

    /// Whether a before-image of `len` more bytes still fits.
    pub(crate) fn fits(&mut self, len: u64) -> bool {
        if self.refused.is_some() {
            return false;
        }
        self.bytes += len;
        if self.bytes > MAX_BYTES {
            self.refuse(too_large());
            return false;
        }
        true
    }

    /// Keep `bytes` as a before-image (`None` when the bound is passed or spilling fails).
    pub(crate) fn image(&mut self, bytes: Vec<u8>, like: Option<&Metadata>) -> Option<Image> {
        let len = bytes.len() as u64;
        self.image_read(len, || Ok(bytes), like)
    }

    /// [`Recorder::image`] of a file of `len` bytes, read by `read` only when it fits.
    pub(crate) fn image_read(
        &mut self,
        len: u64,
        read: impl FnOnce() -> std::io::Result<Vec<u8>>,
        like: Option<&Metadata>,
    ) -> Option<Image> {
        if !self.fits(len) {
            return None;
        }
        match read().and_then(|bytes| Image::new(bytes, like)) {
            Ok(image) => Some(image),
            Err(e) => {
                self.refuse(format!(
                    "cannot be undone: its before-image could not be kept ({e})"
                ));
                None
            }
        }
    }

    /// The change cannot be undone, for `reason`.
    pub(crate) fn refuse(&mut self, reason: String) {
        self.refused.get_or_insert(reason);
    }

    /// Add a step (dropped once the change is refused).
    pub(crate) fn push(&mut self, step: Step) {
        if self.refused.is_none() {
            self.steps.push(step);
        }
    }

    /// The steps, or why the change cannot be undone.
    pub(crate) fn finish(self) -> Result<Vec<Step>, String> {
        match self.refused {
            Some(reason) => Err(reason),
            None => Ok(self.steps),
        }
    }
}

/// What a write's result says about undoing it (flattened into every write tool's result).
#[derive(Debug, Default, Serialize, JsonSchema)]
pub(crate) struct Kept {
    /// The change's id in this session's undo journal: `undo_last_change` takes it back (the
    /// latest change by default, this one with `change_id`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) change_id: Option<String>,
    /// Why this change cannot be undone, when it cannot.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) not_undoable: Option<String>,
}

impl Kept {
    /// A line for the result's text.
    pub(crate) fn line(&self) -> String {
        match (&self.change_id, &self.not_undoable) {
            (Some(id), _) => format!("\nChange {id}: undo_last_change takes it back."),
            (None, Some(why)) => format!("\nThis change {why}."),
            (None, None) => String::new(),
        }
    }
}

impl Journal {
    /// Record what `recorder` collected for `session` (see [`Journal::record`]), as a result
    /// reports it.
    pub(crate) fn keep(
        &self,
        session: &Session,
        tool: &'static str,
        summary: String,
        recorder: Recorder,
    ) -> Kept {
        match recorder
            .finish()
            .and_then(|steps| self.record(session, tool, summary, steps))
        {
            Ok(id) => Kept {
                change_id: Some(id),
                not_undoable: None,
            },
            Err(why) => Kept {
                change_id: None,
                not_undoable: Some(why),
            },
        }
    }
}

/// What is at `path` now, compared with what a change left there: `Ok(())` when it is still
/// that, else what is there instead.
fn compare(
    workspace: &Workspace,
    allow_git: bool,
    path: &str,
    want: Option<&str>,
) -> Result<(), String> {
    let now = match workspace.entry_target(path, allow_git) {
        Ok(target) => match target.existing_kind() {
            None => None,
            Some(FileKind::File) => Some(
                target
                    .read_existing()
                    .map(|bytes| text::sha256_hex(&bytes))
                    .map_err(|e| format!("cannot read it: {e}"))?,
            ),
            Some(kind) => Some(format!("a {}", kind.describe())),
        },
        // Its folder is gone too: nothing is there.
        Err(PathError::ParentMissing { .. } | PathError::NotFound { .. }) => None,
        Err(e) => return Err(e.to_string()),
    };
    match (want, now) {
        (None, None) => Ok(()),
        (Some(want), Some(now)) if want == now => Ok(()),
        (None, Some(_)) => Err("something is there now, where the change left nothing".into()),
        (Some(_), None) => Err("it is gone".into()),
        (Some(_), Some(_)) => Err("its content changed since".into()),
    }
}

/// Refuse unless every file of `steps` is as the change left it.
pub(crate) fn check(workspace: &Workspace, allow_git: bool, steps: &[Step]) -> Result<(), String> {
    for step in steps {
        let (path, outcome) = match step {
            Step::File { path, after, .. } => {
                (path, compare(workspace, allow_git, path, after.as_deref()))
            }
            Step::MadeFolder { path } => {
                let ok = workspace
                    .entry_target(path, allow_git)
                    .is_ok_and(|t| t.existing_kind() == Some(FileKind::Directory));
                (
                    path,
                    if ok {
                        Ok(())
                    } else {
                        Err("the folder is gone".into())
                    },
                )
            }
            Step::RemovedFolder { path } => (path, compare(workspace, allow_git, path, None)),
            Step::Moved { from, to, .. } => {
                let back = compare(workspace, allow_git, from, None);
                let there = workspace
                    .entry_target(to, allow_git)
                    .is_ok_and(|t| t.existing_kind().is_some());
                match back {
                    Err(e) => (from, Err(e)),
                    Ok(()) if !there => (to, Err("it is gone".into())),
                    Ok(()) => continue,
                }
            }
        };
        outcome.map_err(|why| format!("{path}: {why}"))?;
    }
    Ok(())
}

/// Undo `steps` (newest first) under the write tools' rules (`allow_git`: `.git/` as the
/// operator set it; a folder swapped for a link meanwhile is refused like any write), each only if its file is still as the step left it (someone
/// may have changed it meanwhile: that file is left alone); what was done, and what failed
/// (each failure named; the rest goes on).
pub(crate) fn apply(
    workspace: &Workspace,
    allow_git: bool,
    steps: &[Step],
) -> (Vec<String>, Vec<String>) {
    let mut done = Vec::new();
    let mut failed = Vec::new();
    let restore = |path: &str, image: &Image, replace: bool| -> Result<(), String> {
        let bytes = image.bytes().map_err(|e| e.to_string())?;
        let target = workspace
            .write_target(path, allow_git)
            .map_err(|e| e.to_string())?;
        target
            .write_atomic_with(
                |file| file.write_all(&bytes),
                image.like.as_deref(),
                replace,
            )
            .map_err(|e| e.to_string())
    };
    let remove = |path: &str| -> Result<(), String> {
        let target = workspace
            .entry_target(path, allow_git)
            .map_err(|e| e.to_string())?;
        target.remove(false).map_err(|e| e.to_string())
    };
    for step in steps.iter().rev() {
        if let Err(why) = check(workspace, allow_git, std::slice::from_ref(step)) {
            failed.push(format!(
                "left as it is, because it changed meanwhile: {why}"
            ));
            continue;
        }
        let (what, outcome) = match step {
            Step::File {
                path,
                before: Some(image),
                ..
            } => (format!("restored {path}"), restore(path, image, true)),
            Step::File {
                path, before: None, ..
            } => (
                format!("removed {path} (the change created it)"),
                remove(path),
            ),
            Step::MadeFolder { path } => (format!("removed the folder {path}"), remove(path)),
            Step::RemovedFolder { path } => (
                format!("made the folder {path} again"),
                workspace
                    .create_dir_all(path, allow_git)
                    .map(drop)
                    .map_err(|e| e.to_string()),
            ),
            Step::Moved { from, to, replaced } => {
                let moved = workspace
                    .entry_target(to, allow_git)
                    .and_then(|t| Ok((t, workspace.entry_target(from, allow_git)?)))
                    .map_err(|e| e.to_string())
                    .and_then(|(t, f)| t.rename_to(&f, false).map_err(|e| e.to_string()))
                    .and_then(|()| match replaced {
                        Some(image) => restore(to, image, false),
                        None => Ok(()),
                    });
                (format!("moved {to} back to {from}"), moved)
            }
        };
        match outcome {
            Ok(()) => done.push(what),
            Err(e) => failed.push(format!("{what}: {e}")),
        }
    }
    (done, failed)
}

/// Take back `done` (what a call made before it failed part-way, see [`apply`]) and say what
/// became of it, for the call's error.
pub(crate) fn take_back(workspace: &Workspace, allow_git: bool, done: &[Step]) -> String {
    if done.is_empty() {
        return "nothing had been changed".to_owned();
    }
    let (_, failed) = apply(workspace, allow_git, done);
    if failed.is_empty() {
        format!(
            "the {} changes already made were taken back, so the files are as they were",
            done.len()
        )
    } else {
        format!(
            "taking back the {} changes already made failed for {}",
            done.len(),
            failed.join(", ")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(path: &str, bytes: usize) -> Step {
        Step::File {
            path: path.into(),
            before: Some(Image::new(vec![b'x'; bytes], None).unwrap()),
            after: None,
        }
    }

    #[test]
    fn a_session_keeps_its_latest_changes_within_the_bounds_and_no_other_session_sees_them() {
        let journal = Journal::default();
        let (mine, theirs) = (Session::local(), Session::local());
        for i in 0..MAX_CHANGES + 5 {
            let id = journal
                .record(&mine, "write_file", format!("w{i}"), vec![file("/f", 10)])
                .unwrap();
            assert_eq!(id, format!("c{}", i + 1));
        }
        assert!(journal.take(&theirs, None).is_err());
        let latest = journal.take(&mine, None).unwrap();
        assert_eq!(latest.id(), format!("c{}", MAX_CHANGES + 5));
        assert!(
            journal.take(&mine, Some("c1")).is_err(),
            "the oldest were forgotten"
        );
        journal.put_back(&mine, latest);
        assert_eq!(
            journal.take(&mine, None).unwrap().summary,
            format!("w{}", MAX_CHANGES + 4)
        );
    }

    #[test]
    fn a_large_image_is_spilled_and_read_back_whole() {
        let bytes: Vec<u8> = (0..SPILL_OVER * 2).map(|i| (i % 251) as u8).collect();
        let image = Image::new(bytes.clone(), None).unwrap();
        assert!(matches!(image.stored, Stored::Spilled(_)));
        assert_eq!(image.bytes().unwrap(), bytes);
        assert_eq!(image.bytes().unwrap(), bytes, "again, from the start");
    }
}

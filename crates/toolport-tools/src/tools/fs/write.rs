//! What the write tools share: reading the file about to be replaced, the `expected_sha256`
//! check, the atomic write with its errors worded for a model, and the confirmation question
//! under `[fs] write = "confirm"`. Confinement (where a write may land, the temporary file,
//! the rename) is `Workspace`'s: see `src/workspace/write.rs` and `WriteTarget` in
//! `src/workspace/atomic.rs`.

use std::io;

use super::settings::{WriteMode, WriteSettings};
use crate::tool::{Annotations, ToolError};
use crate::workspace::{FileKind, WriteTarget};

/// The tag every write tool carries (filters can leave them out with it).
pub(crate) const WRITE_TAG: &str = "write";

/// Most entries a folder may hold for one `delete_path` or `copy_path` call: the whole tree
/// is listed (and checked against the secret and `.git/` rules) before anything changes, and
/// a call should answer in seconds. Larger trees are worked on a subfolder at a time.
pub(crate) const MAX_TREE_ENTRIES: usize = 10_000;
/// Most entries a result or refusal names one by one (the counts cover the rest).
pub(crate) const MAX_LISTED: usize = 100;

/// `items` joined with ", ", at most `max` of them, then how many more there are.
pub(crate) fn listing(items: &[String], max: usize) -> String {
    let mut out = items
        .iter()
        .take(max)
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(", ");
    if items.len() > max {
        out.push_str(&format!(" and {} more", items.len() - max));
    }
    out
}

/// Annotations of a write that replaces or removes what is there, and the same call again
/// changes nothing more (write_file, copy_path, delete_path).
pub(crate) const REPLACES: Annotations = Annotations {
    read_only: false,
    destructive: true,
    idempotent: true,
    open_world: false,
};

/// Annotations of a write whose repetition changes more (an edit applied twice, a move from
/// where the file no longer is): edit_file, apply_patch, move_path.
pub(crate) const CHANGES: Annotations = Annotations {
    read_only: false,
    destructive: true,
    idempotent: false,
    open_world: false,
};

/// The confirmation question of a call that takes `source` to `destination` (`verb`: move,
/// copy), saying when it replaces what is there.
pub(crate) fn transfer_question(
    tool: &str,
    verb: &str,
    source: &str,
    destination: &str,
    overwrite: bool,
) -> String {
    format!(
        "{tool}: {verb} {source} to {destination}{}",
        if overwrite {
            " (replacing what is there)"
        } else {
            ""
        }
    )
}

/// The refusal of an existing destination without `overwrite` (move_path, copy_path); `note`
/// says what overwrite does beyond replacing, when it does more.
pub(crate) fn destination_exists(destination: &str, note: &str) -> ToolError {
    ToolError::InvalidArguments(format!(
        "{destination} already exists and was not replaced; pass overwrite: true to replace it{note}, or choose another destination"
    ))
}

/// Whether each write asks the user first.
pub(crate) fn confirms(settings: WriteSettings) -> bool {
    settings.write == WriteMode::Confirm
}

/// A confirmation question: `what`, then `detail` (a diff, a preview) cut to `max` bytes at
/// a line end.
pub(crate) fn with_excerpt(what: String, detail: &str, max: usize) -> String {
    if detail.is_empty() {
        return what;
    }
    let mut question = what;
    question.push_str("\n\n");
    if detail.len() <= max {
        question.push_str(detail);
    } else {
        let at = (0..=max)
            .rev()
            .find(|&i| detail.is_char_boundary(i))
            .unwrap_or(0);
        let at = detail[..at].rfind('\n').map_or(at, |nl| nl + 1);
        question.push_str(&detail[..at]);
        question.push_str(&format!("… ({} more lines)", detail[at..].lines().count()));
    }
    question
}

/// The current bytes of the file at `target`, or `None` when nothing is there. Anything but
/// a regular file is refused; so is a file larger than `max` (when given).
pub(crate) fn read_current(
    target: &WriteTarget,
    display: &str,
    max: Option<u64>,
) -> Result<Option<Vec<u8>>, ToolError> {
    match target.existing_kind() {
        None => return Ok(None),
        Some(FileKind::File) => {}
        Some(FileKind::Directory) => {
            return Err(ToolError::InvalidArguments(format!(
                "{display} is a directory; give the path of a file"
            )));
        }
        Some(kind) => {
            return Err(ToolError::InvalidArguments(format!(
                "{display} is a {}, not a regular file; only regular files can be written",
                kind.describe()
            )));
        }
    }
    let bytes = target
        .read_existing()
        .map_err(|e| failed(display, "reading", &e))?;
    if let Some(max) = max
        && bytes.len() as u64 > max
    {
        return Err(ToolError::InvalidArguments(format!(
            "{display} is {} bytes, more than the {max} bytes the file tools edit in memory; change it with a command instead",
            bytes.len()
        )));
    }
    Ok(Some(bytes))
}

/// Refuse when `expected` (an `expected_sha256`) is given and is not `actual`.
pub(crate) fn check_expected(
    display: &str,
    expected: Option<&str>,
    actual: &str,
) -> Result<(), ToolError> {
    match expected {
        Some(expected) if expected != actual => Err(ToolError::InvalidArguments(format!(
            "{display} changed since it was read: its sha256 is now {actual}, not the expected_sha256 {expected}. Read it again with read_file and redo the change on its current content; nothing was written"
        ))),
        _ => Ok(()),
    }
}

/// Write `bytes` atomically at `target` (see `WriteTarget::write_atomic`); `replace` false
/// refuses to replace a file that appeared meanwhile.
pub(crate) fn write_bytes(
    target: &WriteTarget,
    bytes: &[u8],
    replace: bool,
) -> Result<(), ToolError> {
    let display = target.display().display().to_string();
    target.write_atomic(bytes, replace).map_err(|e| {
        if e.kind() == io::ErrorKind::AlreadyExists {
            ToolError::InvalidArguments(format!(
                "{display} was created by someone else while this call ran; read it, then pass overwrite: true or its sha256 as expected_sha256 to replace it"
            ))
        } else {
            failed(&display, "writing", &e)
        }
    })
}

/// An I/O failure while `doing` something to `display`, as a tool error of the right kind.
pub(crate) fn failed(display: &str, doing: &str, error: &io::Error) -> ToolError {
    match error.kind() {
        io::ErrorKind::PermissionDenied => {
            ToolError::PermissionDenied(format!("the operating system denied {doing} {display}"))
        }
        io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded => ToolError::ExecutionFailed(
            format!("{doing} {display} failed: the disk is full; nothing was changed"),
        ),
        io::ErrorKind::ReadOnlyFilesystem => ToolError::PermissionDenied(format!(
            "{display} is on a read-only file system; nothing was changed"
        )),
        _ => ToolError::ExecutionFailed(format!(
            "{doing} {display} failed: {error}; nothing was changed"
        )),
    }
}

//! `apply_patch`: one call applies a patch across several files, all or nothing. The patch is
//! codex's envelope or a unified diff (`parse.rs`); every hunk is located in the current
//! files (`hunks.rs`: whitespace-tolerant, with edit_file's closest-region message when one is
//! not found) and every file's new bytes worked out before anything is written. Then the
//! writes happen in the patch's order (each atomic: temporary file, rename), and the
//! deletions last; a failure part-way puts back what the call had changed (before-images in
//! memory, in reverse order). Same confinement, secret, `.git/`, encoding and line-ending rules
//! as edit_file; a deletion follows `[fs] delete` (trash, or for good after asking).

mod hunks;
mod parse;

use std::io::Write as _;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use self::parse::{FileChange, Op};
use super::edit_file::{CONFIRM_DIFF_MAX, EDIT_MAX_BYTES};
use super::journal::{self, Image, Journal, Kept, Recorder, Step};
use super::settings::{DeleteMode, WriteSettings};
use super::text;
use super::write::{self, WRITE_TAG, read_current};
use super::{CATEGORY, blocking};
use crate::tool::{ToolContext, ToolError};
use crate::typed::{ToolSpec, TypedTool};
use crate::workspace::{PathError, Workspace, WriteTarget};

/// Arguments of `apply_patch`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Params {
    /// The patch: codex's envelope (`*** Begin Patch`, `*** Add File: p`, `*** Update File: p`
    /// (optionally `*** Move to: q`) with `@@` hunks of ` `/`-`/`+` lines, `*** Delete File: p`,
    /// `*** End Patch`) or a unified diff (`--- a/p`, `+++ b/p`, `@@ -l,n +l,n @@`; git's
    /// headers and /dev/null for new and deleted files).
    #[schemars(length(min = 1))]
    patch: String,
    /// Work the patch out and return its diff without writing anything.
    #[serde(default)]
    dry_run: bool,
    /// Encoding of files without a byte-order mark, as a WHATWG label (default utf-8); each
    /// file is written back in its own encoding.
    encoding: Option<String>,
}

/// What the patch did to one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Action {
    /// Created.
    Add,
    /// Changed in place.
    Update,
    /// Changed (or not) and moved.
    Move,
    /// Deleted.
    Delete,
}

/// One file of the result.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct PatchedFile {
    /// Absolute path of the file (before a move).
    path: String,
    /// What happened to it.
    action: Action,
    /// Where it was moved to.
    #[serde(skip_serializing_if = "Option::is_none")]
    moved_to: Option<String>,
    /// Lines added and removed.
    added: usize,
    removed: usize,
    /// sha256 of its new bytes (none for a deleted file): pass it as expected_sha256 to a
    /// later edit.
    #[serde(skip_serializing_if = "Option::is_none")]
    sha256: Option<String>,
}

/// The structured result of `apply_patch`.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ApplyPatchResult {
    /// Every file the patch touched, in its order.
    files: Vec<PatchedFile>,
    /// The combined unified diff.
    diff: String,
    /// True when the diff was cut at its size limit (the change itself is whole).
    diff_truncated: bool,
    /// True when nothing was written (dry_run).
    dry_run: bool,
    /// Whether and how this change can be undone.
    #[serde(flatten)]
    undo: Kept,
}

/// The `apply_patch` tool.
#[derive(Debug, Clone)]
pub(crate) struct ApplyPatch {
    settings: WriteSettings,
    journal: Journal,
}

impl ApplyPatch {
    /// The tool with the operator's write settings, recording its changes in `journal`.
    pub(crate) fn new(settings: WriteSettings, journal: Journal) -> Self {
        Self { settings, journal }
    }
}

#[async_trait]
impl TypedTool for ApplyPatch {
    type Params = Params;
    type Output = ApplyPatchResult;

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "apply_patch",
            title: "Apply a multi-file patch",
            description: format!(
                "Apply one patch to several files inside the workspace roots, all or nothing: the `*** Begin Patch` envelope (`*** Add File:`, `*** Update File:` with optional `*** Move to:`, `*** Delete File:`, hunks of ` ` context, `-` removed and `+` added lines after `@@` or `@@ <line the hunk follows>`, `*** End Patch`) or a unified diff (`--- a/p` `+++ b/p` `@@ -l,n +l,n @@`, /dev/null for new and deleted files). Every hunk is checked against the current files before anything is written (context found even with whitespace drift; a hunk that is not found is reported with the file's most similar lines); then each file is written atomically, and a failure part-way restores what was written. Line endings, encodings and byte-order marks are kept. Deleted files go {}. dry_run returns the combined diff without writing. Files up to {} MiB; secrets and .git/ are refused.",
                match self.settings.delete {
                    DeleteMode::Trash => "to the system's trash",
                    DeleteMode::Confirm => "for good, after the user confirms",
                },
                EDIT_MAX_BYTES / (1024 * 1024)
            ),
            purpose: "Make a change that spans several files (a refactor, a feature with its tests) in one step that cannot leave the project half-edited.",
            example: json!({"patch": "*** Begin Patch\n*** Update File: src/lib.rs\n@@ fn greet() {\n-    println!(\"hi\");\n+    println!(\"hello\");\n*** Add File: notes.md\n+# Notes\n*** End Patch\n"}),
            category: CATEGORY,
            tags: &[WRITE_TAG, "filesystem", "edit", "patch", "diff"],
            annotations: write::CHANGES,
        }
    }

    const ASKS_CONFIRMATION: bool = true;

    fn confirmation(&self, p: &Params, workspace: &Workspace) -> Option<String> {
        if p.dry_run {
            return None;
        }
        let planned = plan(workspace, self.settings, p);
        let deletes = match &planned {
            Ok(plan) => plan.iter().any(|f| f.action == Action::Delete),
            Err(_) => p.patch.contains("*** Delete File:") || p.patch.contains("+++ /dev/null"),
        };
        let for_good = deletes && self.settings.delete == DeleteMode::Confirm;
        if !write::confirms(self.settings) && !for_good {
            return None;
        }
        Some(match planned {
            Ok(plan) => {
                let what = plan
                    .iter()
                    .map(|f| match f.action {
                        Action::Delete if for_good => format!("delete {} for good", f.display),
                        action => format!("{} {}", verb(action), f.display),
                    })
                    .collect::<Vec<_>>()
                    .join(", ");
                let (diff, _) = combined_diff(&plan);
                write::with_excerpt(format!("apply_patch: {what}"), &diff, CONFIRM_DIFF_MAX)
            }
            Err(error) => format!("apply_patch: a patch that will fail: {error}"),
        })
    }

    fn render(&self, r: &ApplyPatchResult) -> String {
        let mut out = String::from(if r.dry_run {
            "Dry run (nothing written):"
        } else {
            "Applied the patch:"
        });
        for f in &r.files {
            out.push_str(&format!("\n  {} {}", verb(f.action), f.path));
            if let Some(to) = &f.moved_to {
                out.push_str(&format!(" -> {to}"));
            }
            out.push_str(&format!(" (+{} -{})", f.added, f.removed));
        }
        out.push('\n');
        out.push_str(&r.diff);
        if r.diff_truncated {
            out.push_str("\n[the diff was cut at its size limit; read the files to see the rest]");
        }
        out.push_str(&r.undo.line());
        out
    }

    async fn run(&self, p: Params, ctx: &ToolContext) -> Result<ApplyPatchResult, ToolError> {
        let workspace = ctx.workspace.clone();
        let settings = self.settings;
        let outcome = blocking(move || {
            let plan = plan(&workspace, settings, &p)?;
            let (diff, diff_truncated) = combined_diff(&plan);
            let steps = if p.dry_run {
                None
            } else {
                Some(commit(&workspace, settings, &plan)?)
            };
            let result = ApplyPatchResult {
                files: plan
                    .iter()
                    .map(|f| PatchedFile {
                        path: f.display.clone(),
                        action: f.action,
                        moved_to: f.moved_to().map(|m| m.display.clone()),
                        added: f.added,
                        removed: f.removed,
                        sha256: f.new.as_deref().map(text::sha256_hex),
                    })
                    .collect(),
                diff,
                diff_truncated,
                dry_run: p.dry_run,
                undo: Kept::default(),
            };
            Ok((result, steps))
        })
        .await?;
        let (mut result, steps) = outcome;
        if let Some(steps) = steps {
            result.undo = self.journal.keep(
                &ctx.session,
                "apply_patch",
                format!("patched {} files", result.files.len()),
                Recorder::from_steps(steps),
            );
        }
        Ok(result)
    }
}

/// The verb of an action, for messages.
fn verb(action: Action) -> &'static str {
    match action {
        Action::Add => "add",
        Action::Update => "update",
        Action::Move => "move",
        Action::Delete => "delete",
    }
}

/// An existing file the patch replaces or removes: where it is and its bytes now.
struct Existing {
    target: WriteTarget,
    bytes: Vec<u8>,
}

/// Where new bytes go: the path as the patch gives it (resolved again when the call writes,
/// after creating missing folders) and its real path.
struct Destination {
    user: String,
    display: String,
}

/// One file's change, worked out.
struct Planned {
    action: Action,
    display: String,
    /// Where new bytes go when not back over `existing`: an added file, a move's destination.
    to: Option<Destination>,
    /// The file as it is (updates, moves, deletions).
    existing: Option<Existing>,
    /// Its new bytes (adds, updates, moves).
    new: Option<Vec<u8>>,
    old_text: String,
    new_text: String,
    added: usize,
    removed: usize,
}

impl Planned {
    /// A move's destination.
    fn moved_to(&self) -> Option<&Destination> {
        self.to.as_ref().filter(|_| self.action == Action::Move)
    }
}

/// Read the patch and every file it names, and work out each file's new bytes; nothing is
/// written. The first problem found is the error, naming the file and hunk.
fn plan(
    workspace: &Workspace,
    settings: WriteSettings,
    p: &Params,
) -> Result<Vec<Planned>, ToolError> {
    let requested = text::encoding_for_label(p.encoding.as_deref().unwrap_or("utf-8"))?;
    let changes = parse::parse(&p.patch).map_err(|e| {
        ToolError::InvalidArguments(format!(
            "the patch cannot be read: line {}: {}. Nothing was written",
            e.line, e.message
        ))
    })?;
    let allow_git = settings.allow_git_writes;
    let count = changes.len();
    let mut planned: Vec<Planned> = Vec::with_capacity(count);
    let mut touched: Vec<String> = Vec::new();
    for (n, change) in changes.into_iter().enumerate() {
        let which = || format!("file {} of {count} ({})", n + 1, change.path());
        let context = |e: ToolError| e.reworded(|m| format!("{}: {m}", which()));
        let file = match &change {
            FileChange::Add {
                path,
                lines,
                no_eol,
            } => {
                let to = destination(workspace, path, allow_git).map_err(context)?;
                let mut new_text = lines.join("\n");
                if !no_eol && !lines.is_empty() {
                    new_text.push('\n');
                }
                Planned {
                    action: Action::Add,
                    display: to.display.clone(),
                    to: Some(to),
                    existing: None,
                    new: Some(new_text.clone().into_bytes()),
                    old_text: String::new(),
                    added: lines.len(),
                    removed: 0,
                    new_text,
                }
            }
            FileChange::Delete { path } => {
                let existing = current(workspace, path, allow_git, false).map_err(context)?;
                let display = existing.target.display().display().to_string();
                // A file that is not text goes all the same; its diff only names it.
                let old_text = text::decode(&existing.bytes, requested, &display)
                    .map_or_else(|_| String::new(), |d| d.text);
                Planned {
                    action: Action::Delete,
                    display,
                    to: None,
                    existing: Some(existing),
                    new: None,
                    added: 0,
                    removed: old_text.lines().count(),
                    old_text,
                    new_text: String::new(),
                }
            }
            FileChange::Update {
                path,
                move_to,
                hunks,
            } => {
                let existing = current(workspace, path, allow_git, true).map_err(context)?;
                let display = existing.target.display().display().to_string();
                // A move without hunks keeps the bytes as they are (a binary file too).
                let (old_text, new_text, bytes) = if hunks.is_empty() {
                    (String::new(), String::new(), existing.bytes.clone())
                } else {
                    let decoded =
                        text::decode(&existing.bytes, requested, &display).map_err(context)?;
                    let new_text = hunks::apply(&decoded.text, hunks, &display).map_err(|e| {
                        ToolError::InvalidArguments(format!(
                            "{}, hunk {} of {}: {}. Nothing was written",
                            which(),
                            e.index,
                            e.count,
                            e.message
                        ))
                    })?;
                    let bytes =
                        text::encode(&new_text, decoded.encoding, decoded.bom).map_err(context)?;
                    (decoded.text, new_text, bytes)
                };
                let moved_to = match move_to {
                    Some(to) => Some(destination(workspace, to, allow_git).map_err(context)?),
                    None => None,
                };
                let count_ops = |wanted: Op| {
                    hunks
                        .iter()
                        .flat_map(|h| &h.lines)
                        .filter(|(op, _)| *op == wanted)
                        .count()
                };
                Planned {
                    action: if moved_to.is_some() {
                        Action::Move
                    } else {
                        Action::Update
                    },
                    display,
                    new: Some(bytes),
                    to: moved_to,
                    existing: Some(existing),
                    added: count_ops(Op::Add),
                    removed: count_ops(Op::Remove),
                    old_text,
                    new_text,
                }
            }
        };
        for path in std::iter::once(&file.display).chain(file.moved_to().map(|d| &d.display)) {
            if touched.contains(path) {
                return Err(ToolError::InvalidArguments(format!(
                    "{}: the patch changes {path} more than once; put all of its changes in one section. Nothing was written",
                    which()
                )));
            }
            touched.push(path.clone());
        }
        planned.push(file);
    }
    Ok(planned)
}

/// The existing regular file at `path`, read whole. `follow`: a symbolic link
/// at the path is followed inside the roots (an update changes the file it names); else the
/// entry itself is taken (a deletion removes the link).
fn current(
    workspace: &Workspace,
    path: &str,
    allow_git: bool,
    follow: bool,
) -> Result<Existing, ToolError> {
    let target = if follow {
        workspace.write_target(path, allow_git)?
    } else {
        workspace.entry_target(path, allow_git)?
    };
    let display = target.display().display().to_string();
    let bytes = read_current(&target, &display, Some(EDIT_MAX_BYTES))?.ok_or_else(|| {
        ToolError::NotFound(format!(
            "{display} does not exist; `*** Add File:` (or `--- /dev/null`) creates a file"
        ))
    })?;
    Ok(Existing { target, bytes })
}

/// Where a new file goes: nothing may be there; its folder may be missing (it is created when
/// the call writes), but the path must resolve inside the roots and be neither a secret nor in
/// `.git/`.
fn destination(
    workspace: &Workspace,
    path: &str,
    allow_git: bool,
) -> Result<Destination, ToolError> {
    let display = match workspace.write_target(path, allow_git) {
        Ok(target) if target.existing_kind().is_some() => {
            return Err(ToolError::InvalidArguments(format!(
                "{} already exists; a patch creates only new files (use `*** Update File:` to change it)",
                target.display().display()
            )));
        }
        Ok(target) => target.display().display().to_string(),
        Err(PathError::ParentMissing { .. }) => workspace.resolve(path)?.display().to_string(),
        Err(e) => return Err(e.into()),
    };
    Ok(Destination {
        user: path.to_owned(),
        display,
    })
}

/// The diffs of every file, one after the other, cut at the diff size limit.
fn combined_diff(plan: &[Planned]) -> (String, bool) {
    let mut out = String::new();
    let mut cut = false;
    for f in plan {
        if let Some(to) = f.moved_to() {
            out.push_str(&format!("rename {} -> {}\n", f.display, to.display));
        }
        if f.action == Action::Delete && f.old_text.is_empty() {
            out.push_str(&format!("delete {}\n", f.display));
        }
        let shown = f.moved_to().map_or(&f.display, |to| &to.display);
        let (diff, truncated) = text::unified_diff(&f.old_text, &f.new_text, shown);
        cut |= truncated;
        out.push_str(&diff);
    }
    cut |= text::cut_diff(&mut out);
    (out, cut)
}

/// Write the plan: new content first, in the patch's order, then the deletions (and the old
/// paths of moves). What was done comes back as undo-journal steps (before-images kept,
/// spilled when large); a failure takes back every change made, newest first, with them.
fn commit(
    workspace: &Workspace,
    settings: WriteSettings,
    plan: &[Planned],
) -> Result<Vec<Step>, ToolError> {
    let mut done: Vec<Step> = Vec::new();
    let keep = |bytes: &[u8], like| {
        Image::new(bytes.to_vec(), like).map_err(|e| {
            ToolError::ExecutionFailed(format!("cannot keep a copy of a file to restore: {e}"))
        })
    };
    let result = (|| -> Result<(), ToolError> {
        for f in plan {
            let Some(new) = &f.new else { continue };
            let after = Some(text::sha256_hex(new));
            match (&f.to, &f.existing) {
                // New bytes with neither a destination nor a file to replace: none is planned.
                (None, None) => {}
                (None, Some(existing)) => {
                    unchanged(existing, &f.display)?;
                    let before = keep(&existing.bytes, None)?;
                    write::write_bytes(&existing.target, new, true)?;
                    done.push(Step::File {
                        path: f.display.clone(),
                        before: Some(before),
                        after,
                    });
                }
                (Some(to), existing) => {
                    make_parents(workspace, &to.user, settings.allow_git_writes, &mut done)?;
                    let target = workspace.write_target(&to.user, settings.allow_git_writes)?;
                    // A moved file keeps its permissions (an executable stays one).
                    let like = existing.as_ref().and_then(|e| e.target.existing_metadata());
                    target
                        .write_atomic_with(|file| file.write_all(new), like, false)
                        .map_err(|e| write::failed(&to.display, "writing", &e))?;
                    done.push(Step::File {
                        path: target.display().display().to_string(),
                        before: None,
                        after,
                    });
                }
            }
        }
        for f in plan {
            let (Action::Delete | Action::Move, Some(existing)) = (f.action, &f.existing) else {
                continue;
            };
            unchanged(existing, &f.display)?;
            let before = keep(&existing.bytes, existing.target.existing_metadata())?;
            let trash = f.action == Action::Delete && settings.delete == DeleteMode::Trash;
            let removed = if trash {
                existing.target.trash()
            } else {
                existing.target.remove(false)
            };
            removed.map_err(|e| write::failed(&f.display, "deleting", &e))?;
            done.push(Step::File {
                path: f.display.clone(),
                before: Some(before),
                after: None,
            });
        }
        Ok(())
    })();
    let Err(error) = result else { return Ok(done) };
    let undone = journal::take_back(workspace, settings.allow_git_writes, &done);
    Err(error.reworded(|m| format!("the patch was not applied: {m}; {undone}")))
}

/// Refuse when the file changed since the plan read it.
fn unchanged(existing: &Existing, display: &str) -> Result<(), ToolError> {
    let now = existing
        .target
        .read_existing()
        .map_err(|e| write::failed(display, "reading", &e))?;
    if now == existing.bytes {
        Ok(())
    } else {
        Err(ToolError::InvalidArguments(format!(
            "{display} changed while the patch was being applied; read it again and redo the patch"
        )))
    }
}

/// Create the missing folders above `user`, recording each (outermost first, so taking them
/// back removes the innermost first).
fn make_parents(
    workspace: &Workspace,
    user: &str,
    allow_git: bool,
    done: &mut Vec<Step>,
) -> Result<(), ToolError> {
    let Some(parent) = std::path::Path::new(user).parent() else {
        return Ok(());
    };
    let mut missing = Vec::new();
    for level in parent.ancestors() {
        let Some(level) = level.to_str().filter(|l| !l.is_empty()) else {
            break;
        };
        if workspace.exists(level) {
            break;
        }
        missing.push(level.to_owned());
    }
    if missing.is_empty() {
        return Ok(());
    }
    workspace.create_dir_all(&missing[0], allow_git)?;
    for level in missing.iter().rev() {
        done.push(Step::MadeFolder {
            path: workspace.resolve(level)?.display().to_string(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A failure while writing (here: the third file's folder vanished between the check and
    /// the write, as when another program removes it) puts the first two files back.
    #[test]
    fn a_write_failing_on_the_third_file_restores_the_first_two() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir(root.join("c")).unwrap();
        for (name, text) in [("a.txt", "a1\n"), ("b.txt", "b1\n"), ("c/d.txt", "d1\n")] {
            std::fs::write(root.join(name), text).unwrap();
        }
        let workspace = Workspace::new(std::slice::from_ref(&root), &[]).unwrap();
        let params = Params {
            patch: "*** Begin Patch\n*** Update File: a.txt\n-a1\n+a2\n*** Update File: b.txt\n-b1\n+b2\n*** Add File: new/e.txt\n+e\n*** Update File: c/d.txt\n-d1\n+d2\n*** End Patch\n".into(),
            dry_run: false,
            encoding: None,
        };
        let settings = WriteSettings::default();
        let planned = plan(&workspace, settings, &params).unwrap();
        std::fs::remove_dir_all(root.join("c")).unwrap();
        let error = commit(&workspace, settings, &planned)
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("the patch was not applied")
                && error.contains("were taken back, so the files are as they were"),
            "{error}"
        );
        assert_eq!(std::fs::read_to_string(root.join("a.txt")).unwrap(), "a1\n");
        assert_eq!(std::fs::read_to_string(root.join("b.txt")).unwrap(), "b1\n");
        assert!(
            !root.join("new").exists(),
            "the folder it made is gone again"
        );
    }
}

//! `edit_file`: exact-text replacements in a file inside the roots, applied in order,
//! all-or-nothing, shown as a unified diff, written atomically.
//!
//! Models write `old_text` and `new_text` with `\n` line breaks whatever the file uses. In a
//! file with CRLF line breaks an `old_text` that is not found as written is looked for with
//! its bare `\n` turned into `\r\n`; and every `new_text` takes the file's line ending (that
//! of the file before the edits, see `LineEnding::of` in `text.rs`: the majority style, the
//! first line break's on a tie; a file without a line break takes `new_text` as given), so an
//! edit never leaves a file with mixed line endings it did not have. The conversion is done
//! on the text, before it is encoded back in the file's encoding (UTF-16 included) with its
//! byte-order mark. The diff shows `\n` line breaks whatever the file uses.
//!
//! When an `old_text` is not found, the error shows the region of the file that looks most
//! like it, with line numbers, so the model can correct itself without reading the whole
//! file again.

use std::borrow::Cow;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::journal::{Journal, Kept, Recorder, Step};
use super::settings::WriteSettings;
use super::text::{self, Decoded, LineEnding};
use super::write::{self, WRITE_TAG, check_expected, read_current};
use super::{CATEGORY, blocking};
use crate::tool::{ToolContext, ToolError};
use crate::typed::{ToolSpec, TypedTool};
use crate::workspace::Workspace;

/// Largest file edit_file (and apply_patch) takes: the whole text is held in memory several
/// times (bytes, text, edited text, new bytes, the diff's line index), so a larger file is
/// better changed with a command.
pub(crate) const EDIT_MAX_BYTES: u64 = 64 * 1024 * 1024;
/// Most line numbers listed when an old_text occurs several times.
const MAX_LISTED_MATCHES: usize = 20;
/// The closest-region search compares at most this many (line × old_text line) pairs, so a
/// huge file with a long old_text still answers at once; past it only the first lines are
/// searched.
const CLOSEST_BUDGET: usize = 20_000_000;
/// Longest line shown in the closest region (longer ones are cut, with an ellipsis).
const EXCERPT_LINE_MAX: usize = 200;
/// Most lines shown in the closest region.
const EXCERPT_MAX_LINES: usize = 30;
/// Most bytes of diff put in a confirmation question (the user reads it in a dialog).
pub(crate) const CONFIRM_DIFF_MAX: usize = 8 * 1024;

/// The tool's description.
fn description() -> String {
    format!(
        "Edit a text file inside the workspace roots by exact text replacement. Each edit replaces `old_text` with `new_text`; edits apply in order, each to the result of the previous, and either all apply or none does. An old_text must match exactly once (give enough surrounding lines to make it unique) unless replace_all is true; if it matches nothing, the error shows the closest region with line numbers. The file's line endings, encoding and byte-order mark are kept: an old_text written with \\n matches CRLF text, and new_text's line breaks are written in the file's line ending. Returns a unified diff and the new sha256; dry_run shows the diff without writing. Pass expected_sha256 (from read_file) to refuse the edit if the file changed since you read it. Files up to {} MiB; secrets and .git/ are refused.",
        EDIT_MAX_BYTES / (1024 * 1024)
    )
}

/// One replacement.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Edit {
    /// The exact text to find (copied from the file, indentation and line breaks included).
    #[schemars(length(min = 1))]
    old_text: String,
    /// The text to put in its place (may be empty to delete).
    new_text: String,
    /// Replace every occurrence instead of requiring exactly one.
    #[serde(default)]
    replace_all: bool,
}

/// Arguments of `edit_file`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Params {
    /// The file: relative to the first workspace root, or absolute inside a root.
    path: String,
    /// The replacements, applied in order.
    #[schemars(length(min = 1))]
    edits: Vec<Edit>,
    /// Show the diff without writing the file.
    #[serde(default)]
    dry_run: bool,
    /// Edit only if the file's current sha256 (as read_file returned it) is this; otherwise
    /// the file changed since it was read and the edit is refused.
    expected_sha256: Option<String>,
    /// Encoding of a file without a byte-order mark, as a WHATWG label (default utf-8); a
    /// byte-order mark in the file wins. The file is written back in the same encoding.
    encoding: Option<String>,
}

/// The structured result of `edit_file`.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct EditFileResult {
    /// Absolute path of the file.
    path: String,
    /// Unified diff of the change.
    diff: String,
    /// True when the diff was cut at its size limit (the change itself is whole).
    diff_truncated: bool,
    /// How many replacements were made, over all edits.
    replacements: u64,
    /// True when nothing was written (dry_run).
    dry_run: bool,
    /// sha256 of the file's bytes on disk after the call (unchanged by a dry run): pass it as
    /// expected_sha256 to the next edit.
    sha256: String,
    /// The encoding the file was read and written in.
    encoding: String,
    /// Whether and how this change can be undone.
    #[serde(flatten)]
    undo: Kept,
}

/// The `edit_file` tool.
#[derive(Debug, Clone)]
pub(crate) struct EditFile {
    settings: WriteSettings,
    journal: Journal,
}

impl EditFile {
    /// The tool with the operator's write settings, recording its changes in `journal`.
    pub(crate) fn new(settings: WriteSettings, journal: Journal) -> Self {
        Self { settings, journal }
    }
}

#[async_trait]
impl TypedTool for EditFile {
    type Params = Params;
    type Output = EditFileResult;

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "edit_file",
            title: "Edit file",
            description: description(),
            purpose: "Change part of an existing text file (fix a bug, rename a symbol, update a setting) without rewriting all of it. Read the file first, copy old_text exactly, and pass the sha256 read_file returned as expected_sha256.",
            example: json!({"path": "src/main.rs", "edits": [{"old_text": "let x = 1;", "new_text": "let x = 2;"}]}),
            category: CATEGORY,
            tags: &[WRITE_TAG, "filesystem", "edit", "file", "text"],
            annotations: write::CHANGES,
        }
    }

    const ASKS_CONFIRMATION: bool = true;

    fn confirmation(&self, p: &Params, workspace: &Workspace) -> Option<String> {
        if !write::confirms(self.settings) || p.dry_run {
            return None;
        }
        let (what, diff) = match plan(workspace, self.settings, p) {
            Ok(plan) => (
                format!(
                    "edit_file: change {} ({} replacement{})",
                    plan.display,
                    plan.replacements,
                    if plan.replacements == 1 { "" } else { "s" }
                ),
                plan.diff,
            ),
            Err(error) => (
                format!(
                    "edit_file: change {} ({} edit(s); the edit will fail: {error})",
                    p.path,
                    p.edits.len()
                ),
                String::new(),
            ),
        };
        Some(write::with_excerpt(what, &diff, CONFIRM_DIFF_MAX))
    }

    fn render(&self, r: &EditFileResult) -> String {
        let mut text = if r.dry_run {
            format!(
                "Dry run: {} replacement(s) in {} would give this diff (nothing written; sha256 {}):\n",
                r.replacements, r.path, r.sha256
            )
        } else {
            format!(
                "Edited {} ({} replacement(s); new sha256 {}):\n",
                r.path, r.replacements, r.sha256
            )
        };
        text.push_str(&r.diff);
        if r.diff_truncated {
            text.push_str("\n[the diff was cut at its size limit; read the file to see the rest]");
        }
        text.push_str(&r.undo.line());
        text
    }

    async fn run(&self, p: Params, ctx: &ToolContext) -> Result<EditFileResult, ToolError> {
        let workspace = ctx.workspace.clone();
        let settings = self.settings;
        let (mut result, recorder) = blocking(move || {
            let plan = plan(&workspace, settings, &p)?;
            let mut recorder = None;
            let sha256 = if p.dry_run {
                plan.old_sha256
            } else {
                let bytes = text::encode(&plan.new_text, plan.decoded.encoding, plan.decoded.bom)?;
                write::write_bytes(&plan.target, &bytes, true)?;
                let sha256 = text::sha256_hex(&bytes);
                let mut kept = Recorder::default();
                let before = kept.image(plan.old_bytes, plan.target.existing_metadata());
                kept.push(Step::File {
                    path: plan.display.clone(),
                    before,
                    after: Some(sha256.clone()),
                });
                recorder = Some(kept);
                sha256
            };
            Ok((
                EditFileResult {
                    path: plan.display,
                    diff: plan.diff,
                    diff_truncated: plan.diff_truncated,
                    replacements: plan.replacements as u64,
                    dry_run: p.dry_run,
                    sha256,
                    encoding: text::encoding_name(plan.decoded.encoding),
                    undo: Kept::default(),
                },
                recorder,
            ))
        })
        .await?;
        if let Some(recorder) = recorder {
            result.undo = self.journal.keep(
                &ctx.session,
                "edit_file",
                format!("edited {}", result.path),
                recorder,
            );
        }
        Ok(result)
    }
}

/// An edit worked out but not yet written.
struct Plan {
    target: crate::workspace::WriteTarget,
    display: String,
    decoded: Decoded,
    /// The file's bytes as read (the undo journal's before-image).
    old_bytes: Vec<u8>,
    old_sha256: String,
    new_text: String,
    replacements: usize,
    diff: String,
    diff_truncated: bool,
}

/// Read the file, check the hash, apply the edits in memory and diff.
fn plan(workspace: &Workspace, settings: WriteSettings, p: &Params) -> Result<Plan, ToolError> {
    let requested = text::encoding_for_label(p.encoding.as_deref().unwrap_or("utf-8"))?;
    let expected = p
        .expected_sha256
        .as_deref()
        .map(text::check_sha256_arg)
        .transpose()?;
    let target = workspace.write_target(&p.path, settings.allow_git_writes)?;
    let display = target.display().display().to_string();
    let bytes = read_current(&target, &display, Some(EDIT_MAX_BYTES))?.ok_or_else(|| {
        ToolError::NotFound(format!(
            "{display} does not exist; edit_file changes existing files; use write_file to create it"
        ))
    })?;
    let old_sha256 = text::sha256_hex(&bytes);
    check_expected(&display, expected.as_deref(), &old_sha256)?;
    let decoded = text::decode(&bytes, requested, &display)?;
    let (new_text, replacements) =
        apply_edits(&decoded.text, &p.edits).map_err(|e| e.into_tool_error(&display))?;
    let (diff, diff_truncated) = text::unified_diff(&decoded.text, &new_text, &display);
    Ok(Plan {
        target,
        display,
        decoded,
        old_bytes: bytes,
        old_sha256,
        new_text,
        replacements,
        diff,
        diff_truncated,
    })
}

/// Why the edits cannot be applied (pure, for tests): which edit, and what went wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EditError {
    /// 1-based number of the edit.
    index: usize,
    /// How many edits there are.
    count: usize,
    kind: EditErrorKind,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum EditErrorKind {
    /// old_text and new_text are the same.
    NoChange,
    /// old_text is not in the text; the closest region, if any looks alike.
    NotFound(Option<Closest>),
    /// old_text occurs several times: the 1-based line numbers where.
    Ambiguous { lines: Vec<usize>, total: usize },
}

impl EditError {
    fn into_tool_error(self, display: &str) -> ToolError {
        let which = if self.count == 1 {
            "old_text".to_owned()
        } else {
            format!("edit {} of {}: old_text", self.index, self.count)
        };
        let after = if self.index > 1 {
            " (line numbers are in the text as the earlier edits left it)"
        } else {
            ""
        };
        let message = match self.kind {
            EditErrorKind::NoChange => {
                return ToolError::InvalidArguments(format!(
                    "{which} and new_text are the same, so the edit changes nothing; no edit was applied"
                ));
            }
            EditErrorKind::NotFound(closest) => {
                let hint = match closest {
                    Some(c) if c.whitespace_only => format!(
                        "It matches lines {}-{} only when whitespace is ignored{after}; the file has:\n{}\nCopy old_text exactly as shown (indentation and line breaks included).",
                        c.first_line, c.last_line, c.excerpt
                    ),
                    Some(c) => format!(
                        "The most similar region is lines {}-{}{after}:\n{}\nRead the file again with read_file and copy old_text exactly.",
                        c.first_line, c.last_line, c.excerpt
                    ),
                    None => "No line of it occurs in the file; read the file again with read_file and copy old_text exactly.".to_owned(),
                };
                format!("{which} was not found in {display}. {hint} No edit was applied.")
            }
            EditErrorKind::Ambiguous { lines, total } => {
                let mut listed = lines
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ");
                if total > lines.len() {
                    listed.push_str(&format!(" and {} more", total - lines.len()));
                }
                format!(
                    "{which} occurs {total} times in {display} (starting at lines {listed}){after}; include more surrounding lines in old_text so it matches once, or pass replace_all: true to replace every occurrence. No edit was applied."
                )
            }
        };
        ToolError::InvalidArguments(message)
    }
}

/// Apply `edits` in order to `text`: the new text and the number of replacements made. Each
/// new_text is written in `text`'s line ending (see the module doc).
pub(crate) fn apply_edits(text: &str, edits: &[Edit]) -> Result<(String, usize), EditError> {
    let ending = LineEnding::of(text);
    let mut current = text.to_owned();
    let mut replacements = 0;
    for (i, edit) in edits.iter().enumerate() {
        let error = |kind| EditError {
            index: i + 1,
            count: edits.len(),
            kind,
        };
        if edit.old_text == edit.new_text {
            return Err(error(EditErrorKind::NoChange));
        }
        let old = match_form(&current, &edit.old_text);
        let starts: Vec<usize> = current
            .match_indices(old.as_ref())
            .map(|(at, _)| at)
            .collect();
        match starts.len() {
            0 => {
                return Err(error(EditErrorKind::NotFound(closest(
                    &current,
                    &edit.old_text,
                ))));
            }
            1 => {}
            total if !edit.replace_all => {
                let lines = starts
                    .iter()
                    .take(MAX_LISTED_MATCHES)
                    .map(|&at| line_of(&current, at))
                    .collect();
                return Err(error(EditErrorKind::Ambiguous { lines, total }));
            }
            _ => {}
        }
        replacements += starts.len();
        let new = replacement(&edit.new_text, ending, false);
        let new_after_cr = replacement(&edit.new_text, ending, true);
        let mut edited = String::with_capacity(current.len() + starts.len() * new.len());
        let mut from = 0;
        for at in starts {
            edited.push_str(&current[from..at]);
            let after_cr = current[..at].ends_with('\r');
            edited.push_str(if after_cr { &new_after_cr } else { &new });
            from = at + old.len();
        }
        edited.push_str(&current[from..]);
        current = edited;
    }
    Ok((current, replacements))
}

/// `old` as it should be looked for in `text`: as given when it occurs as given; in a text
/// with CRLF line breaks, with each bare `\n` turned into `\r\n` when that makes it occur.
fn match_form<'a>(text: &str, old: &'a str) -> Cow<'a, str> {
    if text.contains(old) || !old.contains('\n') || !text.contains("\r\n") {
        return Cow::Borrowed(old);
    }
    let crlf = LineEnding::Crlf.convert(old);
    if text.contains(crlf.as_ref()) {
        crlf
    } else {
        Cow::Borrowed(old)
    }
}

/// `new` as written into a text whose line ending is `ending` (as given when it has none), at
/// a place that follows a `\r` when `after_cr`: a `\n` that `new` starts with there ends the
/// text's own `\r` (an old_text may start inside a CRLF), so it is kept as it is.
fn replacement(new: &str, ending: Option<LineEnding>, after_cr: bool) -> Cow<'_, str> {
    match (ending, new.strip_prefix('\n')) {
        (None, _) => Cow::Borrowed(new),
        (Some(LineEnding::Crlf), Some(rest)) if after_cr => match LineEnding::Crlf.convert(rest) {
            Cow::Borrowed(_) => Cow::Borrowed(new),
            Cow::Owned(rest) => Cow::Owned(format!("\n{rest}")),
        },
        (Some(ending), _) => ending.convert(new),
    }
}

/// 1-based line number of byte `at` in `text`.
fn line_of(text: &str, at: usize) -> usize {
    text.as_bytes()[..at]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// The region of a text that looks most like a missing old_text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Closest {
    /// 1-based first and last line of the region.
    pub(crate) first_line: usize,
    pub(crate) last_line: usize,
    /// True when the region equals old_text once whitespace is ignored.
    whitespace_only: bool,
    /// The region's lines, numbered (`  12| text`).
    pub(crate) excerpt: String,
}

/// A line with its whitespace runs collapsed and its ends trimmed, for comparing.
fn squash(line: &str) -> String {
    line.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The window of lines of `text` with the most lines equal to old_text's lines once
/// whitespace is ignored (position by position; the first best wins). `None` when no line
/// matches at all. A window whose joined text equals old_text's ignoring all whitespace is
/// reported as differing only in whitespace.
pub(crate) fn closest(text: &str, old: &str) -> Option<Closest> {
    let lines: Vec<&str> = text.lines().collect();
    let wanted: Vec<String> = old.lines().map(squash).collect();
    let width = wanted.len().max(1);
    if lines.is_empty() {
        return None;
    }
    let squashed: Vec<String> = lines.iter().map(|l| squash(l)).collect();
    let wanted_joined: String = old.split_whitespace().collect();
    let searchable = (CLOSEST_BUDGET / width).min(lines.len());
    let mut best: Option<(usize, usize)> = None; // (score, start)
    for start in 0..searchable {
        // A whitespace-only difference can also change how lines break: compare the joined
        // non-whitespace text of windows of old_text's width, and one line either side.
        for w in [width, width.saturating_sub(1).max(1), width + 1] {
            let end = (start + w).min(lines.len());
            // A region starts and ends with text: blank lines at its edges add nothing.
            if lines[start].trim().is_empty() || lines[end - 1].trim().is_empty() {
                continue;
            }
            let joined: String = lines[start..end]
                .iter()
                .flat_map(|l| l.split_whitespace())
                .collect();
            if !wanted_joined.is_empty() && joined == wanted_joined {
                return Some(region(&lines, start, end, true));
            }
        }
        let score = wanted
            .iter()
            .enumerate()
            .filter(|(j, w)| !w.is_empty() && squashed.get(start + j) == Some(w))
            .count();
        if score > best.map_or(0, |(s, _)| s) {
            best = Some((score, start));
        }
    }
    best.map(|(_, start)| region(&lines, start, (start + width).min(lines.len()), false))
}

/// Lines `start..end` (0-based) numbered for a message.
fn region(lines: &[&str], start: usize, end: usize, whitespace_only: bool) -> Closest {
    let shown_end = end.min(start + EXCERPT_MAX_LINES);
    let mut excerpt = lines[start..shown_end]
        .iter()
        .enumerate()
        .map(|(i, line)| {
            let line = line.strip_suffix('\r').unwrap_or(line);
            let cut = if line.len() > EXCERPT_LINE_MAX {
                let at = (0..=EXCERPT_LINE_MAX)
                    .rev()
                    .find(|&k| line.is_char_boundary(k))
                    .unwrap_or(0);
                format!("{}…", &line[..at])
            } else {
                line.to_owned()
            };
            format!("{:>6}| {cut}", start + i + 1)
        })
        .collect::<Vec<_>>()
        .join("\n");
    if shown_end < end {
        excerpt.push_str(&format!("\n  … ({} more lines)", end - shown_end));
    }
    Closest {
        first_line: start + 1,
        last_line: end.max(start + 1),
        whitespace_only,
        excerpt,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edit(old: &str, new: &str, all: bool) -> Edit {
        Edit {
            old_text: old.into(),
            new_text: new.into(),
            replace_all: all,
        }
    }

    #[test]
    fn edits_apply_in_order_all_or_nothing() {
        let text = "a = 1\nb = 2\nc = 3\n";
        let (new, n) = apply_edits(
            text,
            &[
                edit("a = 1", "a = 10", false),
                edit("a = 10\nb", "a = 11\nB", false),
            ],
        )
        .unwrap();
        assert_eq!((new.as_str(), n), ("a = 11\nB = 2\nc = 3\n", 2));
        let err =
            apply_edits(text, &[edit("a = 1", "x", false), edit("zzz", "y", false)]).unwrap_err();
        assert_eq!((err.index, err.count), (2, 2));
    }

    #[test]
    fn several_matches_need_replace_all_and_are_listed_by_line() {
        let text = "x\nfoo\ny\nfoo\nfoo\n";
        let err = apply_edits(text, &[edit("foo", "bar", false)]).unwrap_err();
        assert_eq!(
            err.kind,
            EditErrorKind::Ambiguous {
                lines: vec![2, 4, 5],
                total: 3
            }
        );
        let (new, n) = apply_edits(text, &[edit("foo", "bar", true)]).unwrap();
        assert_eq!((new.as_str(), n), ("x\nbar\ny\nbar\nbar\n", 3));
    }

    #[test]
    fn lf_old_text_matches_crlf_text() {
        let text = "one\r\ntwo\r\nthree\r\n";
        assert_eq!(match_form(text, "one\ntwo\n"), "one\r\ntwo\r\n");
        // Found as given: kept as given. LF text, or not found either way: as given.
        assert_eq!(match_form(text, "two"), "two");
        assert_eq!(match_form("a\nb\n", "a\nb"), "a\nb");
        assert_eq!(match_form(text, "one\nzzz"), "one\nzzz");
        let (new, _) = apply_edits(text, &[edit("one\ntwo", "1\n2", false)]).unwrap();
        assert_eq!(new, "1\r\n2\r\nthree\r\n");
    }

    /// Regression: a new_text whose old_text matched as given (no line break in it) kept its
    /// `\n`, so a CRLF file got mixed line endings.
    #[test]
    fn new_text_takes_the_files_line_ending() {
        let crlf = "first\r\nsecond LINE\r\nthird\r\n";
        let (new, n) = apply_edits(
            crlf,
            &[edit("second LINE", "second LINE\ninserted line", false)],
        )
        .unwrap();
        assert_eq!(
            (new.as_str(), n),
            ("first\r\nsecond LINE\r\ninserted line\r\nthird\r\n", 1)
        );
        // Every occurrence, and a `\r\n` the model wrote itself is not doubled.
        let (new, _) = apply_edits("x\r\nx\r\n", &[edit("x", "y\nz\r\nw", true)]).unwrap();
        assert_eq!(new, "y\r\nz\r\nw\r\ny\r\nz\r\nw\r\n");
        // An old_text that starts inside a CRLF (after its `\r`): new_text's first `\n`
        // completes that CRLF, the rest are converted.
        let (new, _) = apply_edits("a\r\nb\r\n", &[edit("\nb", "\nB\nC", false)]).unwrap();
        assert_eq!(new, "a\r\nB\r\nC\r\n");
        // An LF file takes LF: a model's `\r\n` becomes `\n`.
        let (new, _) = apply_edits("a\nb\n", &[edit("a", "x\r\ny", false)]).unwrap();
        assert_eq!(new, "x\ny\nb\n");
        // No line break in the file: new_text as given.
        let (new, _) = apply_edits("solo", &[edit("solo", "p\nq\r\n", false)]).unwrap();
        assert_eq!(new, "p\nq\r\n");
        // The style is the original file's, for every edit: a later edit that leaves the
        // file without line breaks does not change it.
        let (new, _) = apply_edits(
            "a\r\nb",
            &[edit("a\r\nb", "ab", false), edit("ab", "a\nb", false)],
        )
        .unwrap();
        assert_eq!(new, "a\r\nb");
    }

    #[test]
    fn replacements_after_a_cr_keep_their_first_lf() {
        use LineEnding::{Crlf, Lf};
        assert_eq!(replacement("\nx\n", Some(Crlf), false), "\r\nx\r\n");
        assert_eq!(replacement("\nx\n", Some(Crlf), true), "\nx\r\n");
        assert_eq!(replacement("\nx", Some(Crlf), true), "\nx");
        assert_eq!(replacement("x\n", Some(Crlf), true), "x\r\n");
        assert_eq!(replacement("\r\nx", Some(Lf), true), "\nx");
        assert_eq!(replacement("x\r\n", None, false), "x\r\n");
    }

    #[test]
    fn the_closest_region_is_found_with_line_numbers() {
        let text = "fn main() {\n    let x = 1;\n    println!(\"{x}\");\n}\n";
        let c = closest(text, "let  x = 1;\nprintln!(\"{x}\");").unwrap();
        assert_eq!((c.first_line, c.last_line, c.whitespace_only), (2, 3, true));
        assert_eq!(
            c.excerpt,
            "     2|     let x = 1;\n     3|     println!(\"{x}\");"
        );
        let c = closest(text, "let x = 1;\nprintln!(\"{y}\");").unwrap();
        assert_eq!(
            (c.first_line, c.last_line, c.whitespace_only),
            (2, 3, false)
        );
        assert_eq!(closest(text, "nothing like it"), None);
    }
}

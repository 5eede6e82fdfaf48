//! `write_file`: create a text file inside the roots, or replace one the model has read.
//!
//! A new file is simply created. An existing file is replaced only with `overwrite: true` or
//! an `expected_sha256` that matches its current content, so a model cannot clobber a file it
//! has not read by accident; the refusal says which to pass. The write is atomic (a temporary
//! file in the same directory, fsynced, renamed over the target; see `WriteTarget`), the
//! replaced file's permissions are kept, and so are its encoding's byte-order mark and, unless
//! told otherwise (`line_endings`), its line ending: models write `\n`, and a CRLF file
//! rewritten by one would otherwise turn LF (the style is found as `text::file_line_ending`
//! finds it; the content is converted before it is encoded, so UTF-16 files alike).

use std::borrow::Cow;

use async_trait::async_trait;
use encoding_rs::Encoding;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::journal::{Journal, Kept, Recorder, Step};
use super::settings::WriteSettings;
use super::text::LineEnding;
use super::write::{self, WRITE_TAG, check_expected, read_current};
use super::{CATEGORY, blocking, text};
use crate::tool::{ToolContext, ToolError};
use crate::typed::{ToolSpec, TypedTool};
use crate::workspace::Workspace;

/// Most bytes of the new content shown in a confirmation question.
const CONFIRM_PREVIEW_MAX: usize = 4 * 1024;

/// Arguments of `write_file`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Params {
    /// The file: relative to the first workspace root, or absolute inside a root. Its parent
    /// directory must exist (create_directory makes one).
    path: String,
    /// The complete text of the file.
    content: String,
    /// Encoding to write, as a WHATWG label (utf-8, utf-16le, utf-16be, latin1, shift_jis …;
    /// default utf-8). When an existing file starts with a byte-order mark, its encoding and
    /// the mark are kept. A new UTF-16 file gets a byte-order mark.
    encoding: Option<String>,
    /// Replace the file if it exists. Without this (or a matching expected_sha256) an existing
    /// file is never replaced.
    #[serde(default)]
    overwrite: bool,
    /// Replace the file only if its current sha256 (as read_file returned it) is this.
    expected_sha256: Option<String>,
    /// Line breaks of the written file. "keep" (default): the content's line breaks take the
    /// existing file's line ending (CRLF or LF, whichever most of its line breaks use; a new
    /// file, or one without line breaks, gets the content as given). "as_given": the content
    /// exactly as given. "lf" / "crlf": every line break written as \n / \r\n.
    #[serde(default)]
    line_endings: LineEndings,
}

/// What write_file does with the content's line breaks. (The variants carry no doc comments,
/// so the schema is a plain string enum; the parameter's doc says what each means.)
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum LineEndings {
    #[default]
    Keep,
    AsGiven,
    Lf,
    Crlf,
}

/// Whether the file was new.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum WriteAction {
    /// There was no file: it was created.
    Created,
    /// An existing file was replaced.
    Replaced,
}

/// The structured result of `write_file`.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct WriteFileResult {
    /// Absolute path of the file.
    path: String,
    /// Bytes written (the whole file, byte-order mark included).
    bytes_written: u64,
    /// created or replaced.
    action: WriteAction,
    /// sha256 of the file's bytes on disk now: pass it as expected_sha256 to change it again.
    sha256: String,
    /// The encoding the file was written in.
    encoding: String,
    /// Whether and how this change can be undone.
    #[serde(flatten)]
    undo: Kept,
}

/// The `write_file` tool.
#[derive(Debug, Clone)]
pub(crate) struct WriteFile {
    settings: WriteSettings,
    journal: Journal,
}

impl WriteFile {
    /// The tool with the operator's write settings, recording its changes in `journal`.
    pub(crate) fn new(settings: WriteSettings, journal: Journal) -> Self {
        Self { settings, journal }
    }
}

#[async_trait]
impl TypedTool for WriteFile {
    type Params = Params;
    type Output = WriteFileResult;

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "write_file",
            title: "Write file",
            description: "Create a text file inside the workspace roots, or replace one. A new file is created (its parent directory must exist). An existing file is replaced only when overwrite is true or expected_sha256 matches its current content (the sha256 read_file returned), so a file you have not read is never clobbered. The write is atomic (readers see the old or the new content, never a mix) and keeps the file's permissions, byte-order mark and line ending (content written with \\n goes into a CRLF file as \\r\\n; line_endings changes this). Secrets (.env, keys) and .git/ are refused. Returns the path, bytes written, created or replaced, and the new sha256. To change part of a file, prefer edit_file.".into(),
            purpose: "Create a new file, or rewrite a file completely after reading it. For a small change in an existing file use edit_file instead.",
            example: json!({"path": "notes/todo.md", "content": "# TODO\n- write tests\n"}),
            category: CATEGORY,
            tags: &[WRITE_TAG, "filesystem", "file", "text", "create"],
            annotations: write::REPLACES,
        }
    }

    const ASKS_CONFIRMATION: bool = true;

    fn confirmation(&self, p: &Params, workspace: &Workspace) -> Option<String> {
        if !write::confirms(self.settings) {
            return None;
        }
        let (verb, path) = match workspace.write_target(&p.path, self.settings.allow_git_writes) {
            Ok(target) => (
                if target.existing_kind().is_some() {
                    "replace"
                } else {
                    "create"
                },
                target.display().display().to_string(),
            ),
            Err(_) => ("write", p.path.clone()),
        };
        let what = format!(
            "write_file: {verb} {path} with {} line(s), {} bytes of text:",
            p.content.lines().count(),
            p.content.len()
        );
        Some(write::with_excerpt(what, &p.content, CONFIRM_PREVIEW_MAX))
    }

    fn render(&self, r: &WriteFileResult) -> String {
        let verb = match r.action {
            WriteAction::Created => "Created",
            WriteAction::Replaced => "Replaced",
        };
        format!(
            "{verb} {} ({} bytes, {}; sha256 {}){}",
            r.path,
            r.bytes_written,
            r.encoding,
            r.sha256,
            r.undo.line()
        )
    }

    async fn run(&self, p: Params, ctx: &ToolContext) -> Result<WriteFileResult, ToolError> {
        let requested = text::encoding_for_label(p.encoding.as_deref().unwrap_or("utf-8"))?;
        let expected = p
            .expected_sha256
            .as_deref()
            .map(text::check_sha256_arg)
            .transpose()?;
        let workspace = ctx.workspace.clone();
        let allow_git = self.settings.allow_git_writes;
        let (mut result, recorder) = blocking(move || {
            let target = workspace.write_target(&p.path, allow_git)?;
            let display = target.display().display().to_string();
            let current = read_current(&target, &display, None)?;
            let (encoding, bom) = match &current {
                Some(bytes) => {
                    if expected.is_none() && !p.overwrite {
                        return Err(ToolError::InvalidArguments(format!(
                            "{display} already exists and was not replaced. To replace it, pass overwrite: true, or expected_sha256 with the sha256 read_file returned for it (safer: refused if the file changed since). To change part of it, use edit_file"
                        )));
                    }
                    check_expected(&display, expected.as_deref(), &text::sha256_hex(bytes))?;
                    match Encoding::for_bom(bytes) {
                        Some((encoding, _)) => (encoding, true),
                        None => (requested, false),
                    }
                }
                None => {
                    if expected.is_some() {
                        return Err(ToolError::NotFound(format!(
                            "{display} does not exist, so it cannot have the expected_sha256; to create it, call again without expected_sha256"
                        )));
                    }
                    (requested, text::is_utf16(requested))
                }
            };
            let ending = match p.line_endings {
                LineEndings::Keep => current
                    .as_deref()
                    .and_then(|bytes| text::file_line_ending(bytes, requested)),
                LineEndings::AsGiven => None,
                LineEndings::Lf => Some(LineEnding::Lf),
                LineEndings::Crlf => Some(LineEnding::Crlf),
            };
            let content = match ending {
                Some(ending) => ending.convert(&p.content),
                None => Cow::Borrowed(p.content.as_str()),
            };
            let bytes = text::encode(&content, encoding, bom)?;
            write::write_bytes(&target, &bytes, current.is_some())?;
            let sha256 = text::sha256_hex(&bytes);
            let action = if current.is_some() {
                WriteAction::Replaced
            } else {
                WriteAction::Created
            };
            let mut recorder = Recorder::default();
            let before = current.and_then(|b| recorder.image(b, target.existing_metadata()));
            recorder.push(Step::File {
                path: display.clone(),
                before,
                after: Some(sha256.clone()),
            });
            Ok((
                WriteFileResult {
                    path: display,
                    bytes_written: bytes.len() as u64,
                    action,
                    sha256,
                    encoding: text::encoding_name(encoding),
                    undo: Kept::default(),
                },
                recorder,
            ))
        })
        .await?;
        result.undo = self.journal.keep(
            &ctx.session,
            "write_file",
            format!("wrote {}", result.path),
            recorder,
        );
        Ok(result)
    }
}

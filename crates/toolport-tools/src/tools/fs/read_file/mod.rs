//! `read_file`: text content of a file inside the roots, paged by lines; or an image, whole.
//!
//! The file is streamed in chunks and decoded incrementally (encoding_rs), so memory stays at
//! one chunk plus the returned text, whatever the file size. A full pass counts `total_lines`;
//! `tail` takes a second pass. Decoding is strict inside the requested window (a mismatch is an
//! error naming the byte) and tolerant outside it (only counting lines there). The full pass
//! also hashes the bytes, so every result carries the file's `sha256` for the write tools'
//! `expected_sha256`. A file read again unchanged reuses the digest of its last read: hashing
//! costs about 0.8 ms per MiB here, more than everything else a large read does, and models
//! re-read the files they work on.
//!
//! A line longer than the size limit (a minified bundle) is returned cut, with
//! `next_byte_offset`: the byte where the rest begins. A call with `byte_offset` reads raw
//! text from any character boundary, so every byte of such a line is reachable.
//!
//! An image (PNG, JPEG, GIF, WebP, known by its first bytes and proved by decoding it whole:
//! `media/`) is returned as an image content block, up to `[limits] image_max_bytes`, sized
//! for a model (`image_max_side`, `image_send_max_bytes`: larger images are downscaled, and
//! `original_size` asks for the full size), with a line of text saying what it is and what
//! was sent, for clients that cannot show images. A file that claims to be an image and does
//! not decode is refused with what was found: a model API refuses the whole request that
//! carries an image it cannot decode, and every later turn that still carries it. This is `read_file` rather than a tool of its
//! own because a model asks to read a file by its path without knowing, or checking first,
//! what is in it (a screenshot named `.txt`, a plot it just wrote): a separate tool would
//! make every such read a refusal naming the other tool, two calls instead of one, and one
//! more tool in every listing. The result says which it is in `kind` ([`ReadOutput`]): the
//! text fields for a text file, the image's facts for an image. The window arguments (offset,
//! limit, head, tail, byte_offset) and `encoding` are for text, `original_size` for an image.
//!
//! One concern per file:
//! - `mod.rs` (this file): the tool surface: [`Params`], [`ReadFileResult`], the
//!   [`TypedTool`] impl, the text a model reads, and [`ReadFile::read_up_to`] (the read
//!   `read_many_files` shares, with its own budget), which runs a read inline or on the
//!   blocking pool.
//! - `pager.rs`: which part of the file a call gets: the [`Window`] of lines
//!   (offset/limit, head, tail) or a `byte_offset` read, the binary sniff and the BOM, the
//!   offsets to read on from, and when a kept digest may be used.
//! - `scan.rs`: one decoding pass ([`Pass`](scan::Pass)): strict decoding inside the window,
//!   lines counted everywhere, the text collected within the byte budget.
//! - `image.rs`: an image file: the size cap, the decode and the copy sent (from `media/`),
//!   the base64 for the content block ([`ImageFile`]).
//! - `digest.rs`: the file's sha256, hashed as the bytes are read, on the reading thread
//!   ([`FileHash`](digest::FileHash)), and the cache of digests of files read unchanged
//!   ([`HashCache`]).

mod digest;
mod image;
mod pager;
mod scan;

use std::io::Seek;
use std::sync::Arc;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use self::digest::HashCache;
use self::image::ImageFile;
use self::pager::{Limits, Window};
use super::media;
use super::settings::FsSettings;
use super::text::encoding_for_label;
use super::{ANNOTATIONS, CATEGORY, blocking};
use crate::settings::human_bytes;
use crate::tool::{Image, ToolContext, ToolError};
use crate::typed::{ToolSpec, TypedTool};
use crate::workspace::OpenFile;

/// Files up to this size are read on the async worker, like the open before them: one read
/// of that size costs microseconds, less than handing the work to the blocking pool and back
/// (two thread wake-ups, the largest cost of a small read under load). Bigger files go to
/// the blocking pool, so a long read never holds a worker.
const INLINE_READ_MAX: u64 = scan::CHUNK as u64;

/// The tool's description, stating the operator's real limit.
fn description(settings: &FsSettings) -> String {
    format!(
        "Read a text file, or an image, inside the workspace roots. Returns at most {} of text per call (the server's limit); page through larger files by lines with `offset` (1-based) and `limit`, or take `head`/`tail` lines, and follow `next_offset` while it is not null. A line longer than the limit is cut: pass `next_byte_offset` as `byte_offset` to read on from where it stopped. The result's `sha256` (of the file's bytes) is what write_file and edit_file take as `expected_sha256`. Decodes utf-8 by default or any WHATWG encoding label (utf-16le, latin1, shift_jis, gbk …); a byte-order mark wins. A PNG, JPEG, GIF or WebP image (known by its first bytes, not its name; a file of at most {}) is returned as an image, with its type and size in pixels, downscaled to {} px on its longest side when larger (`original_size` sends the full size); a file that does not decode as an image is refused. SVG is text. Other binary files, directories, devices and secrets (.env, keys) are refused.",
        human_bytes(settings.read_max_bytes),
        human_bytes(settings.image_max_bytes),
        settings.image_max_side
    )
}

/// Arguments of `read_file`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Params {
    /// The file: relative to the first workspace root, or absolute inside a root.
    path: String,
    /// Text encoding as a WHATWG label (utf-8, utf-16le, utf-16be, latin1, windows-1252,
    /// shift_jis, euc-jp, gbk, gb18030, big5, euc-kr, koi8-r …). A byte-order mark in the file
    /// overrides it.
    #[serde(default = "default_encoding")]
    encoding: String,
    /// First line to return, 1-based. Default 1.
    #[schemars(range(min = 1))]
    offset: Option<u64>,
    /// Most lines to return. Default: as many as fit in the size limit.
    #[schemars(range(min = 1))]
    limit: Option<u64>,
    /// Return only the first N lines (cannot be combined with offset, limit or tail).
    #[schemars(range(min = 1))]
    head: Option<u64>,
    /// Return only the last N lines (cannot be combined with offset, limit or head).
    #[schemars(range(min = 1))]
    tail: Option<u64>,
    /// Read from this byte of the file (0 = its first byte, a byte-order mark included) up to
    /// the size limit, ignoring line boundaries: for a line longer than the limit, pass the
    /// previous result's next_byte_offset. Cannot be combined with offset, limit, head or tail.
    byte_offset: Option<u64>,
    /// For an image: send it at its full size in pixels instead of downscaled to the server's
    /// bound for a model (it must still fit the server's byte bound for one image). Default
    /// false.
    #[serde(default)]
    original_size: bool,
}

fn default_encoding() -> String {
    "utf-8".into()
}

impl Params {
    /// A whole-file read of `path` with the defaults (what `read_many_files` asks for).
    pub(super) fn whole(path: &str) -> Self {
        Self {
            path: path.to_owned(),
            encoding: default_encoding(),
            offset: None,
            limit: None,
            head: None,
            tail: None,
            byte_offset: None,
            original_size: false,
        }
    }
}

/// The structured result of `read_file`: a text file's text, or an image's facts (the image
/// itself is an image content block). `kind` says which.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub(crate) enum ReadOutput {
    /// A text file (`kind` "text"): its text, decoded, and where to read on.
    Text(ReadFileResult),
    /// An image file (`kind` "image"): PNG, JPEG, GIF or WebP.
    Image(ImageFile),
}

/// The result of reading a text file.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ReadFileResult {
    /// Absolute path of the file.
    pub(super) path: String,
    /// The returned text (original line endings kept).
    pub(super) content: String,
    /// The encoding used to decode (canonical WHATWG name, lower case).
    pub(super) encoding: String,
    /// Number of lines in the whole file.
    pub(super) total_lines: u64,
    /// 1-based number of the first returned line.
    offset: u64,
    /// Number of lines returned.
    returned_lines: u64,
    /// True when the size limit cut the requested range short.
    pub(super) truncated: bool,
    /// The next whole line to read (the `offset` for the next call); null when no line starts
    /// after the returned text: the end of the file, or only the rest of a cut line is left
    /// (then next_byte_offset is set).
    pub(super) next_offset: Option<u64>,
    /// Where the returned text stopped inside a line (a line longer than the size limit, or a
    /// byte_offset read): pass it as `byte_offset` to read on. Null when the text ended at a
    /// line end or the end of the file.
    next_byte_offset: Option<u64>,
    /// Size of the file in bytes.
    size_bytes: u64,
    /// sha256 of the file's bytes on disk (hex): pass it as expected_sha256 to write_file or
    /// edit_file so they refuse if the file changed since this read.
    sha256: String,
}

/// The `read_file` tool.
#[derive(Debug, Clone)]
pub(crate) struct ReadFile {
    settings: FsSettings,
    hashes: Arc<HashCache>,
    /// One large read at a time per CPU ([`large_reads_at_once`]).
    large_reads: Arc<tokio::sync::Semaphore>,
}

/// How many reads of files above [`INLINE_READ_MAX`] run at once: one per CPU. More add
/// memory (each holds its file's text, and a thread) but no speed; the rest wait their turn
/// holding nothing.
fn large_reads_at_once() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

impl ReadFile {
    /// The tool with the operator's limit.
    pub(crate) fn new(settings: &FsSettings) -> Self {
        Self {
            settings: settings.clone(),
            hashes: Arc::default(),
            large_reads: Arc::new(tokio::sync::Semaphore::new(large_reads_at_once())),
        }
    }

    /// The operator's limits it reads with.
    pub(super) fn settings(&self) -> &FsSettings {
        &self.settings
    }
}

#[async_trait]
impl TypedTool for ReadFile {
    type Params = Params;
    type Output = ReadOutput;

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "read_file",
            title: "Read file",
            description: description(&self.settings),
            purpose: "Look at the content of a source file, config file, log or document before reasoning about it or changing it. For a large file, read it in pages: start without offset, then pass the returned next_offset until it is null.",
            example: json!({"path": "src/main.rs", "offset": 1, "limit": 200}),
            category: CATEGORY,
            tags: &["filesystem", "read", "file", "text", "image"],
            annotations: ANNOTATIONS,
        }
    }

    fn render(&self, output: &ReadOutput) -> String {
        match output {
            ReadOutput::Text(text) => render(text),
            ReadOutput::Image(image) => image::describe(image),
        }
    }

    const PAYLOAD: &'static [&'static str] = &["content"];

    /// The content moves into the text: a megabyte is not copied twice.
    fn render_payload(&self, output: &mut ReadOutput) -> String {
        match output {
            ReadOutput::Text(text) => finish(std::mem::take(&mut text.content), text),
            ReadOutput::Image(image) => image::describe(image),
        }
    }

    fn summary(&self, output: &ReadOutput) -> String {
        match output {
            ReadOutput::Text(text) => summary(text),
            ReadOutput::Image(image) => image::describe(image),
        }
    }

    fn images(&self, output: &mut ReadOutput) -> Vec<Image> {
        match output {
            ReadOutput::Text(_) => Vec::new(),
            ReadOutput::Image(image) => image.image.take().into_iter().collect(),
        }
    }

    async fn run(&self, p: Params, ctx: &ToolContext) -> Result<ReadOutput, ToolError> {
        let window = Window::from_params(&p)?;
        let requested = encoding_for_label(&p.encoding)?;
        let mut opened = ctx.workspace.open_file(&p.path)?;
        let sniffed = media::sniff(&mut opened.file).map_err(|e| read_failed(&opened, &e))?;
        let max_bytes = self.settings.read_page_bytes(ctx);
        let Some(format) = sniffed else {
            let text = self.read_opened(opened, window, requested, max_bytes, ctx);
            return text.await.map(ReadOutput::Text);
        };
        let settings = self.settings.clone();
        let size = opened.metadata.len();
        // Decoding costs in proportion to the pixels, not the file's bytes (a small PNG can
        // hold millions of pixels of one colour): always on the blocking pool, in a turn.
        self.in_turn(move || {
            let mut file = opened.file;
            let display = opened.display.display().to_string();
            image::read(
                &mut file,
                &display,
                size,
                format,
                &settings,
                p.original_size,
            )
        })
        .await
        .map(ReadOutput::Image)
    }
}

/// A failed read of an opened file, in the words of the text read's own.
fn read_failed(opened: &OpenFile, error: &std::io::Error) -> ToolError {
    ToolError::ExecutionFailed(format!(
        "reading {} failed: {error}",
        opened.display.display()
    ))
}

impl ReadFile {
    /// A call's read of a text file with its own size limit (`read_many_files` shares one
    /// budget among its files), sharing this tool's digest cache and large-read turns. An
    /// image is refused with a pointer to `read_file`: a text-only result has no place for it.
    pub(super) async fn read_up_to(
        &self,
        p: Params,
        max_bytes: u64,
        ctx: &ToolContext,
    ) -> Result<ReadFileResult, ToolError> {
        let window = Window::from_params(&p)?;
        let requested = encoding_for_label(&p.encoding)?;
        let mut opened = ctx.workspace.open_file(&p.path)?;
        let sniffed = media::sniff(&mut opened.file).map_err(|e| read_failed(&opened, &e))?;
        if let Some(format) = sniffed {
            // Its text would be refused as binary, "read_file only returns text": no longer
            // true, so say where the image can be seen.
            return Err(ToolError::InvalidArguments(format!(
                "{} is an image ({}); read_many_files returns only text: read it with read_file, which returns it as an image",
                opened.display.display(),
                format.mime()
            )));
        }
        self.read_opened(opened, window, requested, max_bytes, ctx)
            .await
    }

    /// The text read of an opened file, from its first byte whatever was read of it before.
    async fn read_opened(
        &self,
        opened: OpenFile,
        window: Window,
        requested: &'static encoding_rs::Encoding,
        max_bytes: u64,
        ctx: &ToolContext,
    ) -> Result<ReadFileResult, ToolError> {
        let max_bytes = usize::try_from(max_bytes).unwrap_or(usize::MAX);
        let cancel = ctx.cancel.clone();
        let size = opened.metadata.len();
        let hashes = Arc::clone(&self.hashes);
        self.off_worker(size, move || {
            let mut file = opened.file;
            let display = opened.display.display().to_string();
            file.rewind().map_err(|e| {
                ToolError::ExecutionFailed(format!("reading {display} failed: {e}"))
            })?;
            let limits = Limits {
                max_bytes,
                cancel: &cancel,
                hashes: &hashes,
            };
            pager::read(&mut file, &display, size, requested, window, &limits)
        })
        .await
    }

    /// Run `work`, a read of a file of `size` bytes: inline when the file is small, else on
    /// the blocking pool in one of the large-read turns.
    async fn off_worker<R: Send + 'static>(
        &self,
        size: u64,
        work: impl FnOnce() -> Result<R, ToolError> + Send + 'static,
    ) -> Result<R, ToolError> {
        if size <= INLINE_READ_MAX {
            work()
        } else {
            self.in_turn(work).await
        }
    }

    /// Run `work` on the blocking pool in one of the large-read turns.
    async fn in_turn<R: Send + 'static>(
        &self,
        work: impl FnOnce() -> Result<R, ToolError> + Send + 'static,
    ) -> Result<R, ToolError> {
        // The semaphore is never closed, so a permit always comes.
        let _turn = self.large_reads.acquire().await.ok();
        blocking(work).await
    }
}

/// The text a model reads: the content, then a note when there is more.
fn render(r: &ReadFileResult) -> String {
    finish(r.content.clone(), r)
}

/// `text` (the result's content) with the note when there is more.
fn finish(mut text: String, r: &ReadFileResult) -> String {
    if is_whole(r) {
        if text.is_empty() {
            text.push_str("(empty file)");
        }
        return text;
    }
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(&note(r));
    text
}

/// The text beside a structured result that carries the content: where it is, and how to
/// go on.
fn summary(r: &ReadFileResult) -> String {
    if is_whole(r) {
        return format!(
            "[the whole file, {} lines ({} bytes), in {}: the text is in structuredContent.content]",
            r.total_lines, r.size_bytes, r.path
        );
    }
    note(r)
}

/// Whether the result is the whole file.
fn is_whole(r: &ReadFileResult) -> bool {
    r.offset == 1 && r.returned_lines == r.total_lines && !r.truncated
}

/// Which lines were returned, and how to read on.
fn note(r: &ReadFileResult) -> String {
    let last = r.offset + r.returned_lines.saturating_sub(1);
    let shown = if r.returned_lines == 0 {
        "no lines".to_owned()
    } else {
        format!("lines {}-{last}", r.offset)
    };
    let mut note = format!("[{shown} of {} in {}", r.total_lines, r.path);
    if r.truncated {
        note.push_str("; cut short by the size limit");
    }
    match (r.next_byte_offset, r.next_offset) {
        (Some(at), Some(next)) => note.push_str(&format!(
            "; the line goes on: call read_file with byte_offset={at} for the rest of it, or offset={next} for the next line]"
        )),
        (Some(at), None) => note.push_str(&format!(
            "; the line goes on: call read_file with byte_offset={at} for the rest of it]"
        )),
        (None, Some(next)) => {
            note.push_str(&format!("; call read_file with offset={next} for more]"));
        }
        (None, None) => note.push_str("; end of file]"),
    }
    note
}

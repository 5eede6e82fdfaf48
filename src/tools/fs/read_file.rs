//! `read_file`: text content of a file inside the roots, paged by lines.
//!
//! The file is streamed in chunks and decoded incrementally (encoding_rs), so memory stays at
//! one chunk plus the returned text, whatever the file size. A full pass counts `total_lines`;
//! `tail` takes a second pass. Decoding is strict inside the requested window (a mismatch is an
//! error naming the byte) and tolerant outside it (only counting lines there).

use std::io::{Read, Seek, SeekFrom};

use async_trait::async_trait;
use encoding_rs::{DecoderResult, Encoding, UTF_16BE, UTF_16LE};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::settings::FsSettings;
use super::{ANNOTATIONS, CATEGORY, blocking};
use crate::settings::human_bytes;
use crate::tool::{ToolContext, ToolError};
use crate::typed::{ToolSpec, TypedTool};

/// Bytes read from disk per step.
const CHUNK: usize = 64 * 1024;
/// Files up to this size are read on the async worker, like the open before them: one read
/// of that size costs microseconds, less than handing the work to the blocking pool and back
/// (two thread wake-ups, the largest cost of a small read under load). Bigger files go to
/// the blocking pool, so a long read never holds a worker.
const INLINE_READ_MAX: u64 = CHUNK as u64;
/// How much of the start of a file is checked for NUL bytes to call it binary (as git does).
const BINARY_SNIFF: usize = 8 * 1024;

/// The tool's description, stating the operator's real limit.
fn description(settings: &FsSettings) -> String {
    format!(
        "Read a text file inside the workspace roots. Returns at most {} of text per call (the server's limit); page through larger files by lines with `offset` (1-based) and `limit`, or take `head`/`tail` lines, and follow `next_offset` while it is not null. Decodes utf-8 by default or any WHATWG encoding label (utf-16le, latin1, shift_jis, gbk …); a byte-order mark wins. Binary files, directories, devices and secrets (.env, keys) are refused.",
        human_bytes(settings.read_max_bytes)
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
}

fn default_encoding() -> String {
    "utf-8".into()
}

/// The structured result of `read_file`.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ReadFileResult {
    /// Absolute path of the file.
    path: String,
    /// The returned text (original line endings kept).
    content: String,
    /// The encoding used to decode (canonical WHATWG name, lower case).
    encoding: String,
    /// Number of lines in the whole file.
    total_lines: u64,
    /// 1-based number of the first returned line.
    offset: u64,
    /// Number of lines returned.
    returned_lines: u64,
    /// True when the size limit cut the requested range short.
    truncated: bool,
    /// Where to continue (the `offset` for the next call), or null at the end of the file.
    next_offset: Option<u64>,
    /// Size of the file in bytes.
    size_bytes: u64,
}

/// The `read_file` tool.
#[derive(Debug, Clone)]
pub(crate) struct ReadFile {
    settings: FsSettings,
}

impl ReadFile {
    /// The tool with the operator's limit.
    pub(crate) fn new(settings: &FsSettings) -> Self {
        Self {
            settings: settings.clone(),
        }
    }
}

#[async_trait]
impl TypedTool for ReadFile {
    type Params = Params;
    type Output = ReadFileResult;

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "read_file",
            title: "Read file",
            description: description(&self.settings),
            purpose: "Look at the content of a source file, config file, log or document before reasoning about it or changing it. For a large file, read it in pages: start without offset, then pass the returned next_offset until it is null.",
            example: json!({"path": "src/main.rs", "offset": 1, "limit": 200}),
            category: CATEGORY,
            tags: &["filesystem", "read", "file", "text"],
            annotations: ANNOTATIONS,
        }
    }

    fn render(&self, output: &ReadFileResult) -> String {
        render(output)
    }

    async fn run(&self, p: Params, ctx: &ToolContext) -> Result<ReadFileResult, ToolError> {
        let window = Window::from_params(&p)?;
        let requested = Encoding::for_label(p.encoding.trim().as_bytes())
            .filter(|e| *e != encoding_rs::REPLACEMENT)
            .ok_or_else(|| {
                ToolError::InvalidArguments(format!(
                    "unknown encoding {:?}; use a WHATWG label such as utf-8, utf-16le, utf-16be, latin1, windows-1252, shift_jis, euc-jp, gbk, gb18030, big5, euc-kr or koi8-r",
                    p.encoding
                ))
            })?;
        let opened = ctx.workspace.open_file(&p.path)?;
        let max_bytes = usize::try_from(self.settings.read_max_bytes).unwrap_or(usize::MAX);
        let cancel = ctx.cancel.clone();
        let size = opened.metadata.len();
        let work = move || {
            let mut file = opened.file;
            let display = opened.display.display().to_string();
            read(
                &mut file, &display, size, requested, window, max_bytes, &cancel,
            )
        };
        if size <= INLINE_READ_MAX {
            work()
        } else {
            blocking(work).await
        }
    }
}

/// Which lines were asked for.
#[derive(Debug, Clone, Copy)]
enum Window {
    /// Lines `start..start+limit` (1-based; `limit` None = to the end).
    Range { start: u64, limit: Option<u64> },
    /// The last N lines.
    Tail(u64),
}

impl Window {
    fn from_params(p: &Params) -> Result<Self, ToolError> {
        let conflict = |what: &str| {
            Err(ToolError::InvalidArguments(format!(
                "{what} cannot be combined; use either offset/limit, or head, or tail"
            )))
        };
        match (p.head, p.tail) {
            (Some(_), Some(_)) => conflict("head and tail"),
            (Some(_), None) | (None, Some(_)) if p.offset.is_some() || p.limit.is_some() => {
                conflict("head or tail with offset or limit")
            }
            (Some(n), None) => Ok(Window::Range {
                start: 1,
                limit: Some(n),
            }),
            (None, Some(n)) => Ok(Window::Tail(n)),
            (None, None) => Ok(Window::Range {
                start: p.offset.unwrap_or(1),
                limit: p.limit,
            }),
        }
    }
}

fn is_utf16(encoding: &'static Encoding) -> bool {
    encoding == UTF_16LE || encoding == UTF_16BE
}

/// The canonical name in lower case: "utf-8", "windows-1252", "shift_jis".
fn encoding_name(encoding: &'static Encoding) -> String {
    encoding.name().to_ascii_lowercase()
}

/// Read the requested window of a file.
fn read(
    file: &mut std::fs::File,
    display: &str,
    size: u64,
    requested: &'static Encoding,
    window: Window,
    max_bytes: usize,
    cancel: &CancellationToken,
) -> Result<ReadFileResult, ToolError> {
    let io =
        |e: std::io::Error| ToolError::ExecutionFailed(format!("reading {display} failed: {e}"));
    // Sniff the start: a BOM decides the encoding; NUL bytes mean binary (except in UTF-16).
    let mut head = vec![0u8; BINARY_SNIFF];
    let head_len = read_full(file, &mut head).map_err(io)?;
    head.truncate(head_len);
    let (encoding, bom_len) = match Encoding::for_bom(&head) {
        Some((encoding, len)) => (encoding, len),
        None => (requested, 0),
    };
    if !is_utf16(encoding) && head.contains(&0) {
        return Err(ToolError::InvalidArguments(format!(
            "{display} looks like a binary file (it contains NUL bytes), so it is not returned as text; read_file only returns text. If it is UTF-16 text without a byte-order mark, pass encoding \"utf-16le\" or \"utf-16be\""
        )));
    }

    let (start, limit) = match window {
        Window::Range { start, limit } => (start, limit),
        Window::Tail(n) => {
            file.seek(SeekFrom::Start(bom_len as u64)).map_err(io)?;
            let counted = scan(file, display, encoding, 1, Some(0), max_bytes, cancel)?;
            (counted.total_lines.saturating_sub(n) + 1, None)
        }
    };
    file.seek(SeekFrom::Start(bom_len as u64)).map_err(io)?;
    let scanned = scan(file, display, encoding, start, limit, max_bytes, cancel)?;
    if start > 1 && start > scanned.total_lines {
        return Err(ToolError::InvalidArguments(format!(
            "offset {start} is past the end of {display}, which has {} lines; use an offset from 1 to {}",
            scanned.total_lines,
            scanned.total_lines.max(1)
        )));
    }
    let end = limit.map(|l| start.saturating_add(l));
    let next_offset = scanned
        .next_offset
        .or_else(|| end.filter(|&e| e <= scanned.total_lines));
    Ok(ReadFileResult {
        path: display.to_owned(),
        content: scanned.content,
        encoding: encoding_name(encoding),
        total_lines: scanned.total_lines,
        offset: start,
        returned_lines: scanned.returned_lines,
        truncated: scanned.truncated,
        next_offset,
        size_bytes: size,
    })
}

/// Fill `buf` as far as the file allows; the number of bytes read.
fn read_full(file: &mut std::fs::File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match file.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

/// What one pass over the file found.
struct Scan {
    content: String,
    total_lines: u64,
    returned_lines: u64,
    truncated: bool,
    next_offset: Option<u64>,
}

/// Collects the lines of a window from decoded text, within a byte budget.
struct Collector {
    start: u64,
    end: Option<u64>,
    max_bytes: usize,
    /// 1-based number of the line being assembled.
    line: u64,
    /// Whether the current line has any text yet (for counting a last line without `\n`).
    line_open: bool,
    /// Where the current line starts in `content`, to drop it whole if the budget ends mid-line.
    line_start: usize,
    content: String,
    returned: u64,
    /// Set once the budget is exhausted: `Some(next line to read)`.
    stopped_at: Option<u64>,
}

impl Collector {
    fn in_window(&self) -> bool {
        self.stopped_at.is_none()
            && self.line >= self.start
            && self.end.is_none_or(|end| self.line < end)
    }

    fn feed(&mut self, mut text: &str) {
        while !text.is_empty() {
            let (segment, newline) = match text.find('\n') {
                Some(i) => (&text[..=i], true),
                None => (text, false),
            };
            text = &text[segment.len()..];
            if self.in_window() {
                self.take(segment);
            }
            self.line_open = !newline;
            if newline {
                if self.in_window() {
                    self.returned += 1;
                }
                self.line += 1;
                self.line_start = self.content.len();
            }
        }
    }

    fn take(&mut self, segment: &str) {
        if self.content.len() + segment.len() <= self.max_bytes {
            self.content.push_str(segment);
            return;
        }
        if self.returned == 0 {
            // The first line alone exceeds the budget: return its beginning, cut at a char
            // boundary, and continue after it.
            let room = self.max_bytes - self.content.len();
            let cut = (0..=room)
                .rev()
                .find(|&i| segment.is_char_boundary(i))
                .unwrap_or(0);
            self.content.push_str(&segment[..cut]);
            self.returned = 1;
            self.stopped_at = Some(self.line + 1);
        } else {
            self.content.truncate(self.line_start);
            self.stopped_at = Some(self.line);
        }
    }

    fn finish(mut self) -> Scan {
        if self.line_open {
            if self.in_window() {
                self.returned += 1;
            }
            self.line += 1;
        }
        let total_lines = self.line - 1;
        Scan {
            content: self.content,
            total_lines,
            returned_lines: self.returned,
            truncated: self.stopped_at.is_some(),
            next_offset: self.stopped_at.filter(|&n| n <= total_lines),
        }
    }
}

/// One pass: decode the file from the current position, counting lines and collecting the
/// window `start..start+limit` (limit `Some(0)` collects nothing).
fn scan(
    file: &mut std::fs::File,
    display: &str,
    encoding: &'static Encoding,
    start: u64,
    limit: Option<u64>,
    max_bytes: usize,
    cancel: &CancellationToken,
) -> Result<Scan, ToolError> {
    let mut decoder = encoding.new_decoder_without_bom_handling();
    let mut collector = Collector {
        start,
        end: limit.map(|l| start.saturating_add(l)),
        max_bytes,
        line: 1,
        line_open: false,
        line_start: 0,
        content: String::new(),
        returned: 0,
        stopped_at: None,
    };
    let mut buf = vec![0u8; CHUNK];
    let mut decoded = String::new();
    let mut consumed: u64 = 0;
    loop {
        if cancel.is_cancelled() {
            return Err(ToolError::Cancelled("read_file was cancelled".into()));
        }
        let n = read_full(file, &mut buf)
            .map_err(|e| ToolError::ExecutionFailed(format!("reading {display} failed: {e}")))?;
        let last = n < buf.len();
        let mut src = &buf[..n];
        loop {
            decoded.clear();
            decoded.reserve(
                decoder
                    .max_utf8_buffer_length_without_replacement(src.len())
                    .unwrap_or(src.len() * 3 + 16),
            );
            let (result, read) =
                decoder.decode_to_string_without_replacement(src, &mut decoded, last);
            collector.feed(&decoded);
            consumed += read as u64;
            src = &src[read..];
            match result {
                DecoderResult::InputEmpty => break,
                DecoderResult::OutputFull => continue,
                DecoderResult::Malformed(bad, _) => {
                    if collector.in_window() {
                        let at = consumed.saturating_sub(u64::from(bad));
                        return Err(mismatch(display, encoding, at, collector.line));
                    }
                }
            }
        }
        if last {
            break;
        }
    }
    Ok(collector.finish())
}

fn mismatch(display: &str, encoding: &'static Encoding, at: u64, line: u64) -> ToolError {
    ToolError::InvalidArguments(format!(
        "{display} is not valid {} (the first invalid byte is at byte offset {at}, in line {line}). If the file uses another encoding, pass it as `encoding`: for example latin1 (windows-1252), shift_jis, euc-jp, gbk, big5, euc-kr, utf-16le",
        encoding_name(encoding)
    ))
}

/// The text a model reads: the content, then a note when there is more.
fn render(r: &ReadFileResult) -> String {
    let mut text = r.content.clone();
    let whole = r.offset == 1 && r.returned_lines == r.total_lines && !r.truncated;
    if whole {
        if text.is_empty() {
            text.push_str("(empty file)");
        }
        return text;
    }
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
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
    match r.next_offset {
        Some(next) => note.push_str(&format!("; call read_file with offset={next} for more]")),
        None => note.push_str("; end of file]"),
    }
    text.push_str(&note);
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(text: &str, start: u64, limit: Option<u64>, max: usize) -> Scan {
        let mut c = Collector {
            start,
            end: limit.map(|l| start + l),
            max_bytes: max,
            line: 1,
            line_open: false,
            line_start: 0,
            content: String::new(),
            returned: 0,
            stopped_at: None,
        };
        // Feed in awkward pieces to exercise lines split across chunks.
        let chars: Vec<char> = text.chars().collect();
        for piece in chars.chunks(3) {
            c.feed(&piece.iter().collect::<String>());
        }
        c.finish()
    }

    #[test]
    fn windows_and_counts() {
        let s = collect("a\nbb\nccc\ndddd", 2, Some(2), 1000);
        assert_eq!(
            (
                s.content.as_str(),
                s.total_lines,
                s.returned_lines,
                s.truncated
            ),
            ("bb\nccc\n", 4, 2, false)
        );
        let s = collect("a\nbb\nccc\ndddd", 3, None, 1000);
        assert_eq!((s.content.as_str(), s.returned_lines), ("ccc\ndddd", 2));
        let s = collect("", 1, None, 1000);
        assert_eq!((s.total_lines, s.returned_lines), (0, 0));
        let s = collect("one\n", 1, None, 1000);
        assert_eq!((s.total_lines, s.returned_lines), (1, 1));
    }

    #[test]
    fn budget_cuts_at_a_line_boundary() {
        let s = collect("aaaa\nbbbb\ncccc\n", 1, None, 12);
        assert_eq!(
            (
                s.content.as_str(),
                s.returned_lines,
                s.truncated,
                s.next_offset
            ),
            ("aaaa\nbbbb\n", 2, true, Some(3))
        );
    }

    #[test]
    fn an_overlong_first_line_is_cut_at_a_char_boundary() {
        let s = collect("ééééé\nx\n", 1, None, 5);
        assert_eq!(
            (
                s.content.as_str(),
                s.returned_lines,
                s.truncated,
                s.next_offset
            ),
            ("éé", 1, true, Some(2))
        );
    }
}

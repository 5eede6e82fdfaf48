//! `read_file`: text content of a file inside the roots, paged by lines.
//!
//! The file is streamed in chunks and decoded incrementally (encoding_rs), so memory stays at
//! one chunk plus the returned text, whatever the file size. A full pass counts `total_lines`;
//! `tail` takes a second pass. Decoding is strict inside the requested window (a mismatch is an
//! error naming the byte) and tolerant outside it (only counting lines there). The full pass
//! also hashes the bytes, so every result carries the file's `sha256` for the write tools'
//! `expected_sha256`. A file read again unchanged (same device, inode, size, modification and
//! change times, and changed more than [`SETTLED`] ago) reuses the digest of its last read
//! ([`HashCache`]): hashing costs about 0.8 ms per MiB here, more than everything else a
//! large read does, and models re-read the files they work on.
//!
//! A line longer than the size limit (a minified bundle) is returned cut, with
//! `next_byte_offset`: the byte where the rest begins. A call with `byte_offset` reads raw
//! text from any character boundary, so every byte of such a line is reachable.

use std::collections::VecDeque;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::MetadataExt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use encoding_rs::{DecoderResult, Encoding, UTF_8, UTF_16BE};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use sha2::{Digest, Sha256};
use tokio_util::sync::CancellationToken;

use super::settings::FsSettings;
use super::text::{encoding_for_label, encoding_name, hex, is_utf16};
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
/// Files at least this large are hashed on a helper thread while they are decoded
/// ([`FileHash`]): hashing a megabyte takes about half a millisecond even with the CPU's SHA
/// instructions, more than a thread costs. Below it the thread is not worth it.
const PARALLEL_HASH_MIN: u64 = 256 * 1024;
/// Chunks queued for the hashing thread before the reader waits for it (4 × 64 KiB).
const HASH_QUEUE_CHUNKS: usize = 4;
/// How long ago a file must have changed for its digest to be kept: the kernel stamps changes
/// with a coarse clock (a few milliseconds), so two writes within one tick can leave the same
/// times on different bytes. A digest taken a second after the last change is of settled
/// bytes (git's "racily clean" rule).
const SETTLED: Duration = Duration::from_secs(1);
/// Digests kept: the files a session works on, at about 150 bytes each.
const HASH_CACHE_FILES: usize = 64;
/// How much of the start of a file is checked for NUL bytes to call it binary (as git does).
const BINARY_SNIFF: usize = 8 * 1024;

/// The tool's description, stating the operator's real limit.
fn description(settings: &FsSettings) -> String {
    format!(
        "Read a text file inside the workspace roots. Returns at most {} of text per call (the server's limit); page through larger files by lines with `offset` (1-based) and `limit`, or take `head`/`tail` lines, and follow `next_offset` while it is not null. A line longer than the limit is cut: pass `next_byte_offset` as `byte_offset` to read on from where it stopped. The result's `sha256` (of the file's bytes) is what write_file and edit_file take as `expected_sha256`. Decodes utf-8 by default or any WHATWG encoding label (utf-16le, latin1, shift_jis, gbk …); a byte-order mark wins. Binary files, directories, devices and secrets (.env, keys) are refused.",
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
    /// Read from this byte of the file (0 = its first byte, a byte-order mark included) up to
    /// the size limit, ignoring line boundaries: for a line longer than the limit, pass the
    /// previous result's next_byte_offset. Cannot be combined with offset, limit, head or tail.
    byte_offset: Option<u64>,
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
        }
    }
}

/// The structured result of `read_file`.
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

/// What identifies a file's bytes without reading them, as far as the kernel tells: a write
/// moves the change time (which no call can set back), a replacement changes the inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FileKey {
    dev: u64,
    ino: u64,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl FileKey {
    fn of(meta: &std::fs::Metadata) -> Self {
        Self {
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.size(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
            ctime: (meta.ctime(), meta.ctime_nsec()),
        }
    }

    /// Whether the file last changed more than `settle` ago.
    fn settled(&self, settle: Duration) -> bool {
        let (secs, nanos) = self.ctime;
        let (Ok(secs), Ok(nanos)) = (u64::try_from(secs), u32::try_from(nanos)) else {
            return false;
        };
        let changed = SystemTime::UNIX_EPOCH + Duration::new(secs, nanos);
        SystemTime::now()
            .duration_since(changed)
            .is_ok_and(|age| age >= settle)
    }
}

/// The digests of the last [`HASH_CACHE_FILES`] settled files read whole, most recent last.
/// A digest is kept only when the file's key was the same before and after the pass that
/// hashed it, and used only when it is the same before and after the pass that reuses it (a
/// change in between reads the file again, hashing it). A file changed through a shared memory
/// map without its times moving can show the digest of its earlier bytes; the write tools hash
/// the file themselves, so the worst case is a refused write.
#[derive(Debug)]
struct HashCache {
    kept: Mutex<VecDeque<(FileKey, String)>>,
    /// [`SETTLED`] (a test waits for nothing with zero).
    settle: Duration,
}

impl Default for HashCache {
    fn default() -> Self {
        Self {
            kept: Mutex::default(),
            settle: SETTLED,
        }
    }
}

impl HashCache {
    fn kept(&self) -> std::sync::MutexGuard<'_, VecDeque<(FileKey, String)>> {
        self.kept
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The kept digest of a settled file with this key.
    fn get(&self, key: &FileKey) -> Option<String> {
        if !key.settled(self.settle) {
            return None;
        }
        let mut kept = self.kept();
        let at = kept.iter().position(|(k, _)| k == key)?;
        let entry = kept.remove(at)?;
        let digest = entry.1.clone();
        kept.push_back(entry);
        Some(digest)
    }

    /// Keep the digest of a settled file (one per file: an older key of it goes).
    fn put(&self, key: FileKey, digest: String) {
        if !key.settled(self.settle) {
            return;
        }
        let mut kept = self.kept();
        kept.retain(|(k, _)| (k.dev, k.ino) != (key.dev, key.ino));
        if kept.len() >= HASH_CACHE_FILES {
            kept.pop_front();
        }
        kept.push_back((key, digest));
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

    const PAYLOAD: &'static [&'static str] = &["content"];

    /// The content moves into the text: a megabyte is not copied twice.
    fn render_payload(&self, output: &mut ReadFileResult) -> String {
        finish(std::mem::take(&mut output.content), output)
    }

    fn summary(&self, output: &ReadFileResult) -> String {
        summary(output)
    }

    async fn run(&self, p: Params, ctx: &ToolContext) -> Result<ReadFileResult, ToolError> {
        self.read_up_to(p, self.settings.read_max_bytes, ctx).await
    }
}

impl ReadFile {
    /// A call's read with its own size limit (`read_many_files` shares one budget among its
    /// files), sharing this tool's digest cache and large-read turns.
    pub(super) async fn read_up_to(
        &self,
        p: Params,
        max_bytes: u64,
        ctx: &ToolContext,
    ) -> Result<ReadFileResult, ToolError> {
        let window = Window::from_params(&p)?;
        let requested = encoding_for_label(&p.encoding)?;
        let opened = ctx.workspace.open_file(&p.path)?;
        let max_bytes = usize::try_from(max_bytes).unwrap_or(usize::MAX);
        let cancel = ctx.cancel.clone();
        let size = opened.metadata.len();
        let hashes = Arc::clone(&self.hashes);
        let work = move || {
            let mut file = opened.file;
            let display = opened.display.display().to_string();
            let limits = Limits {
                max_bytes,
                cancel: &cancel,
                hashes: &hashes,
            };
            read(&mut file, &display, size, requested, window, &limits)
        };
        if size <= INLINE_READ_MAX {
            work()
        } else {
            // The semaphore is never closed, so a permit always comes.
            let _turn = self.large_reads.acquire().await.ok();
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
    /// Text from this byte of the file, up to the size limit.
    Bytes(u64),
}

impl Window {
    fn from_params(p: &Params) -> Result<Self, ToolError> {
        let conflict = |what: &str| {
            Err(ToolError::InvalidArguments(format!(
                "{what} cannot be combined; use either offset/limit, or head, or tail"
            )))
        };
        if let Some(at) = p.byte_offset {
            if p.head.is_some() || p.tail.is_some() || p.offset.is_some() || p.limit.is_some() {
                return conflict("byte_offset with offset, limit, head or tail");
            }
            return Ok(Window::Bytes(at));
        }
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

/// `byte_offset` pointing inside a character.
fn not_a_boundary(display: &str, at: u64) -> ToolError {
    ToolError::InvalidArguments(format!(
        "byte_offset {at} is not at the start of a character in {display}; pass a next_byte_offset that read_file returned (or 0)"
    ))
}

/// What a read is bounded and helped by.
struct Limits<'a> {
    max_bytes: usize,
    cancel: &'a CancellationToken,
    hashes: &'a HashCache,
}

/// Read the requested window of a file.
fn read(
    file: &mut std::fs::File,
    display: &str,
    size: u64,
    requested: &'static Encoding,
    window: Window,
    limits: &Limits<'_>,
) -> Result<ReadFileResult, ToolError> {
    let Limits {
        max_bytes, cancel, ..
    } = *limits;
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
            let counted = scan(file, display, encoding, 1, Some(0), max_bytes, 0, cancel)?;
            (counted.total_lines.saturating_sub(n) + 1, None)
        }
        Window::Bytes(at) => {
            let file_facts = Facts {
                display,
                size,
                encoding,
                bom_len: bom_len as u64,
            };
            return read_from_byte(file, &file_facts, at, max_bytes, cancel);
        }
    };
    let key = |file: &std::fs::File| file.metadata().map(|m| FileKey::of(&m)).map_err(io);
    let before = key(file)?;
    let mut known = limits.hashes.get(&before);
    loop {
        file.seek(SeekFrom::Start(bom_len as u64)).map_err(io)?;
        let reused = known.is_some();
        let mut hash = match known.take() {
            Some(digest) => FileHash::Known(digest),
            None => FileHash::new(size),
        };
        hash.update(&head[..bom_len]);
        let scanned = {
            let mut hashing = Hashing {
                inner: &mut *file,
                hash: &mut hash,
            };
            // A whole-file read returns about the file's size.
            let expected = if start == 1 && limit.is_none() {
                usize::try_from(size).unwrap_or(usize::MAX)
            } else {
                0
            };
            scan(
                &mut hashing,
                display,
                encoding,
                start,
                limit,
                max_bytes,
                expected,
                cancel,
            )?
        };
        let after = key(file)?;
        if reused && after != before {
            // Changed while it was read: the kept digest may not be of these bytes.
            continue;
        }
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
        // A first line cut by the budget: where its rest begins.
        let next_byte_offset = if scanned.cut_line {
            let line_start = line_start_byte(file, encoding, bom_len as u64, start).map_err(io)?;
            Some(line_start + encoded_len(&scanned.content, encoding))
        } else {
            None
        };
        let sha256 = hash.finish()?;
        if !reused && after == before {
            limits.hashes.put(before, sha256.clone());
        }
        return Ok(ReadFileResult {
            path: display.to_owned(),
            content: scanned.content,
            encoding: encoding_name(encoding),
            total_lines: scanned.total_lines,
            offset: start,
            returned_lines: scanned.returned_lines,
            truncated: scanned.truncated,
            next_offset,
            next_byte_offset,
            size_bytes: size,
            sha256,
        });
    }
}

/// What the byte-cursor read needs to know about the file.
struct Facts<'a> {
    display: &'a str,
    size: u64,
    encoding: &'static Encoding,
    bom_len: u64,
}

/// Passes reads through, hashing every byte.
struct Hashing<'a, R> {
    inner: R,
    hash: &'a mut FileHash,
}

impl<R: Read> Read for Hashing<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hash.update(&buf[..n]);
        Ok(n)
    }
}

/// The sha256 of exactly the bytes a pass reads (so the hash always matches the text
/// returned, even if the file changes meanwhile): computed inline, or for a file of
/// [`PARALLEL_HASH_MIN`] bytes or more on a helper thread fed a copy of each chunk, so hashing
/// overlaps decoding instead of adding to it.
enum FileHash {
    /// The digest of this file's last read ([`HashCache`]): nothing to hash.
    Known(String),
    Inline(Sha256),
    Helper {
        chunks: std::sync::mpsc::SyncSender<Vec<u8>>,
        done: std::thread::JoinHandle<Vec<u8>>,
    },
}

impl FileHash {
    fn new(size: u64) -> Self {
        if size < PARALLEL_HASH_MIN {
            return Self::Inline(Sha256::new());
        }
        let (chunks, queue) = std::sync::mpsc::sync_channel::<Vec<u8>>(HASH_QUEUE_CHUNKS);
        let spawned = std::thread::Builder::new()
            .name("read_file-sha256".into())
            .spawn(move || {
                let mut hasher = Sha256::new();
                for chunk in queue {
                    hasher.update(&chunk);
                }
                hasher.finalize().to_vec()
            });
        match spawned {
            Ok(done) => Self::Helper { chunks, done },
            // No thread to be had: hash inline, as for a small file.
            Err(_) => Self::Inline(Sha256::new()),
        }
    }

    fn update(&mut self, bytes: &[u8]) {
        match self {
            Self::Known(_) => {}
            Self::Inline(hasher) => hasher.update(bytes),
            Self::Helper { chunks, .. } => {
                // The helper only stops after `chunks` is dropped, so this cannot fail.
                let _ = chunks.send(bytes.to_vec());
            }
        }
    }

    /// The hash, as lower-case hex.
    fn finish(self) -> Result<String, ToolError> {
        match self {
            Self::Known(digest) => Ok(digest),
            Self::Inline(hasher) => Ok(hex(&hasher.finalize())),
            Self::Helper { chunks, done } => {
                drop(chunks);
                done.join().map(|digest| hex(&digest)).map_err(|_| {
                    ToolError::ExecutionFailed(
                        "hashing the file failed; this is a bug in toolport".into(),
                    )
                })
            }
        }
    }
}

/// The newline of an encoding as bytes, and the unit it is aligned to (UTF-16: 2 bytes).
fn newline_bytes(encoding: &'static Encoding) -> (&'static [u8], u64) {
    if encoding == UTF_16BE {
        (&[0, b'\n'], 2)
    } else if is_utf16(encoding) {
        (&[b'\n', 0], 2)
    } else {
        (b"\n", 1)
    }
}

/// Bytes `text` takes in `encoding` (exact for text decoded from it).
fn encoded_len(text: &str, encoding: &'static Encoding) -> u64 {
    if encoding == UTF_8 {
        text.len() as u64
    } else if is_utf16(encoding) {
        text.encode_utf16().count() as u64 * 2
    } else {
        encoding.encode(text).0.len() as u64
    }
}

/// Count newlines in the raw bytes from `from` on: how many start before byte `upto`, how
/// many in all, and whether the file ends with one. A newline byte never occurs inside
/// another character in the ASCII-compatible encodings, nor off a code-unit boundary in
/// UTF-16, so this counts lines without decoding.
fn count_newlines(
    file: &mut std::fs::File,
    encoding: &'static Encoding,
    from: u64,
    upto: u64,
    cancel: &CancellationToken,
) -> Result<(u64, u64, bool), ToolError> {
    let io = |e: std::io::Error| ToolError::ExecutionFailed(format!("reading failed: {e}"));
    let (newline, unit) = newline_bytes(encoding);
    file.seek(SeekFrom::Start(from)).map_err(io)?;
    let mut buf = vec![0u8; CHUNK];
    let (mut pos, mut before, mut total, mut ends) = (from, 0u64, 0u64, false);
    loop {
        if cancel.is_cancelled() {
            return Err(ToolError::Cancelled("read_file was cancelled".into()));
        }
        let n = read_full(file, &mut buf).map_err(io)?;
        // CHUNK is even, so UTF-16 units never straddle two reads.
        for (i, piece) in buf[..n].chunks(unit as usize).enumerate() {
            let at = pos + i as u64 * unit;
            ends = piece == newline;
            if ends {
                total += 1;
                if at < upto {
                    before += 1;
                }
            }
        }
        pos += n as u64;
        if n < buf.len() {
            break;
        }
    }
    Ok((before, total, ends))
}

/// The byte where line `line` (1-based) starts, counting from `from` (after the BOM).
fn line_start_byte(
    file: &mut std::fs::File,
    encoding: &'static Encoding,
    from: u64,
    line: u64,
) -> std::io::Result<u64> {
    let (newline, unit) = newline_bytes(encoding);
    if line <= 1 {
        return Ok(from);
    }
    file.seek(SeekFrom::Start(from))?;
    let mut buf = vec![0u8; CHUNK];
    let (mut pos, mut seen) = (from, 0u64);
    loop {
        let n = read_full(file, &mut buf)?;
        for (i, piece) in buf[..n].chunks(unit as usize).enumerate() {
            if piece == newline {
                seen += 1;
                if seen == line - 1 {
                    return Ok(pos + (i as u64 + 1) * unit);
                }
            }
        }
        pos += n as u64;
        if n < buf.len() {
            return Ok(pos);
        }
    }
}

/// `byte_offset` reads: text from byte `at` up to `max_bytes`, decoded strictly, with the
/// exact byte where it stopped. Line facts come from a raw count of newlines.
fn read_from_byte(
    file: &mut std::fs::File,
    f: &Facts<'_>,
    at: u64,
    max_bytes: usize,
    cancel: &CancellationToken,
) -> Result<ReadFileResult, ToolError> {
    let display = f.display;
    let io =
        |e: std::io::Error| ToolError::ExecutionFailed(format!("reading {display} failed: {e}"));
    if at > f.size {
        return Err(ToolError::InvalidArguments(format!(
            "byte_offset {at} is past the end of {display}, which is {} bytes; use a byte_offset from 0 to {}",
            f.size, f.size
        )));
    }
    let at = at.max(f.bom_len);
    let (_, unit) = newline_bytes(f.encoding);
    if !(at - f.bom_len).is_multiple_of(unit) {
        return Err(not_a_boundary(display, at));
    }
    // The hash and the line facts: one raw pass.
    let mut hash = FileHash::Inline(Sha256::new());
    file.seek(SeekFrom::Start(0)).map_err(io)?;
    std::io::copy(
        &mut Hashing {
            inner: &mut *file,
            hash: &mut hash,
        },
        &mut std::io::sink(),
    )
    .map_err(io)?;
    let (before, newlines, ends_with_newline) =
        count_newlines(file, f.encoding, f.bom_len, at, cancel)?;
    let total_lines = newlines + u64::from(f.size > f.bom_len && !ends_with_newline);

    // Decode into a buffer of exactly the budget: the decoder stops when it is full and says
    // how many bytes it read for what it wrote.
    file.seek(SeekFrom::Start(at)).map_err(io)?;
    let mut decoder = f.encoding.new_decoder_without_bom_handling();
    let mut out = vec![0u8; max_bytes];
    let dst = std::str::from_utf8_mut(&mut out)
        .map_err(|e| ToolError::ExecutionFailed(format!("internal buffer error: {e}")))?;
    let mut buf = vec![0u8; CHUNK];
    let (mut consumed, mut written) = (0u64, 0usize);
    loop {
        if cancel.is_cancelled() {
            return Err(ToolError::Cancelled("read_file was cancelled".into()));
        }
        let n = read_full(file, &mut buf).map_err(io)?;
        let last = n < buf.len();
        let (result, read, wrote) =
            decoder.decode_to_str_without_replacement(&buf[..n], &mut dst[written..], last);
        consumed += read as u64;
        written += wrote;
        match result {
            DecoderResult::InputEmpty if last => break,
            DecoderResult::InputEmpty => {}
            DecoderResult::OutputFull => break,
            DecoderResult::Malformed(bad, after) => {
                let bad_at = at + consumed.saturating_sub(u64::from(bad) + u64::from(after));
                if bad_at == at {
                    return Err(not_a_boundary(display, at));
                }
                return Err(mismatch(display, f.encoding, bad_at, before + 1));
            }
        }
    }
    let content = dst[..written].to_owned();
    let end = at + consumed;
    let newlines_in = content.matches('\n').count() as u64;
    let open_end = !content.is_empty() && !content.ends_with('\n');
    let offset = before + 1;
    let next_line = offset + newlines_in + u64::from(open_end);
    let next_byte_offset = (end < f.size).then_some(end);
    Ok(ReadFileResult {
        path: display.to_owned(),
        content,
        encoding: encoding_name(f.encoding),
        total_lines,
        offset,
        returned_lines: newlines_in + u64::from(open_end),
        truncated: next_byte_offset.is_some(),
        next_offset: (next_line <= total_lines).then_some(next_line),
        next_byte_offset,
        size_bytes: f.size,
        sha256: hash.finish()?,
    })
}

/// Fill `buf` as far as the file allows; the number of bytes read.
fn read_full(file: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
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
    /// The first returned line alone exceeded the budget and was cut: the content is its
    /// beginning.
    cut_line: bool,
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
    /// The first line was cut at the budget.
    cut_line: bool,
}

impl Collector {
    fn in_window(&self) -> bool {
        self.stopped_at.is_none()
            && self.line >= self.start
            && self.end.is_none_or(|end| self.line < end)
    }

    fn feed(&mut self, mut text: &str) {
        if self.feed_whole(text) {
            return;
        }
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

    /// `text` in one step when none of its lines crosses an edge of the window or the budget
    /// (the common case: a whole chunk inside the window, or before or after it), so a file
    /// of short lines is not walked line by line. `false`: nothing was done.
    fn feed_whole(&mut self, text: &str) -> bool {
        let Some(last) = text.len().checked_sub(1) else {
            return true;
        };
        // A line break is one byte in UTF-8; bytecount counts them with SIMD.
        let newlines = bytecount::count(text.as_bytes(), b'\n') as u64;
        // The last line this text touches (it may go on in the next piece).
        let last_line = self.line + newlines;
        let before = last_line < self.start;
        let after = self.stopped_at.is_some() || self.end.is_some_and(|end| self.line >= end);
        let inside = self.in_window()
            && self.end.is_none_or(|end| last_line < end)
            && self.content.len() + text.len() <= self.max_bytes;
        if !(before || after || inside) {
            return false;
        }
        if inside {
            self.content.push_str(text);
            self.returned += newlines;
        }
        if newlines > 0 {
            // Where the line after the last break starts in `content` (unchanged outside).
            let tail = text.rfind('\n').map_or(0, |at| last - at);
            self.line_start = self.content.len() - if inside { tail } else { 0 };
        }
        self.line = last_line;
        self.line_open = text.as_bytes()[last] != b'\n';
        true
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
            self.cut_line = true;
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
            cut_line: self.cut_line,
        }
    }
}

/// One pass: decode the file from the current position, counting lines and collecting the
/// window `start..start+limit` (limit `Some(0)` collects nothing).
#[allow(clippy::too_many_arguments)] // the one pass of read_file, each argument a fact of it
fn scan(
    file: &mut impl Read,
    display: &str,
    encoding: &'static Encoding,
    start: u64,
    limit: Option<u64>,
    max_bytes: usize,
    expected: usize,
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
        // Room for the text up front: a megabyte is not grown (and copied) by doubling.
        content: String::with_capacity(expected.min(max_bytes)),
        returned: 0,
        stopped_at: None,
        cut_line: false,
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Feed `text` in awkward pieces of 3 characters, to exercise lines split across chunks.
    fn collect(text: &str, start: u64, limit: Option<u64>, max: usize) -> Scan {
        collect_in(text, 3, start, limit, max)
    }

    /// Feed `text` in pieces of `size` characters.
    fn collect_in(text: &str, size: usize, start: u64, limit: Option<u64>, max: usize) -> Scan {
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
            cut_line: false,
        };
        let chars: Vec<char> = text.chars().collect();
        for piece in chars.chunks(size) {
            c.feed(&piece.iter().collect::<String>());
        }
        c.finish()
    }

    #[test]
    fn whole_pieces_and_single_characters_collect_the_same() {
        // Whole pieces take the one-step path where they can; single characters mostly cross
        // an edge of the window or the budget line by line. Both must agree everywhere.
        for text in [
            "a\nbb\nccc\ndddd\n\neeeee",
            "a\nbb\nccc\ndddd\n\neeeee\n",
            "ééé\nx\n\n\nyy",
            "",
            "\n",
            "no newline at all",
        ] {
            for start in 1..=7 {
                for limit in [None, Some(1), Some(2), Some(5)] {
                    for max in [0, 1, 3, 6, 9, 12, 100] {
                        let want = collect_in(text, 1, start, limit, max);
                        for size in [2, 3, 5, 64] {
                            let got = collect_in(text, size, start, limit, max);
                            let case = format!(
                                "{text:?} start {start} limit {limit:?} max {max} pieces of {size}"
                            );
                            assert_eq!(got.content, want.content, "{case}");
                            assert_eq!(got.total_lines, want.total_lines, "{case}");
                            assert_eq!(got.returned_lines, want.returned_lines, "{case}");
                            assert_eq!(got.truncated, want.truncated, "{case}");
                            assert_eq!(got.next_offset, want.next_offset, "{case}");
                            assert_eq!(got.cut_line, want.cut_line, "{case}");
                        }
                    }
                }
            }
        }
    }

    /// `read` with the default limits and this digest cache.
    fn read_with(
        file: &mut std::fs::File,
        size: u64,
        window: Window,
        hashes: &HashCache,
    ) -> ReadFileResult {
        let cancel = CancellationToken::new();
        let limits = Limits {
            max_bytes: 1 << 20,
            cancel: &cancel,
            hashes,
        };
        read(file, "f", size, UTF_8, window, &limits).unwrap()
    }

    const WHOLE: Window = Window::Range {
        start: 1,
        limit: None,
    };

    #[test]
    fn a_kept_digest_is_reused_only_while_the_file_is_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.txt");
        let hashes = HashCache {
            settle: Duration::ZERO,
            ..HashCache::default()
        };
        let read_now = |hashes: &HashCache| {
            let mut file = std::fs::File::open(&path).unwrap();
            let size = file.metadata().unwrap().len();
            read_with(&mut file, size, WHOLE, hashes)
        };
        std::fs::write(&path, "one\n").unwrap();
        let first = read_now(&hashes);
        assert_eq!(first.sha256, hex(&Sha256::digest(b"one\n")));
        assert_eq!(hashes.kept().len(), 1, "a settled file's digest is kept");
        // A digest no hashing could give, under the file's key: a read that returns it took
        // it from the cache.
        let key = FileKey::of(&std::fs::metadata(&path).unwrap());
        hashes.put(key, "kept".into());
        assert_eq!(read_now(&hashes).sha256, "kept");
        // Changed (the size is part of the key even where the clock is coarse): hashed again.
        std::fs::write(&path, "two, longer\n").unwrap();
        let changed = read_now(&hashes);
        assert_eq!(changed.sha256, hex(&Sha256::digest(b"two, longer\n")));
        assert_eq!(changed.content, "two, longer\n");
        // A file that changed within the settle time is neither reused nor kept.
        let unsettled = HashCache::default();
        unsettled.put(
            FileKey::of(&std::fs::metadata(&path).unwrap()),
            "kept".into(),
        );
        assert_eq!(read_now(&unsettled).sha256, changed.sha256);
        assert!(unsettled.kept().is_empty());
    }

    #[test]
    fn the_digest_cache_keeps_one_key_per_file_and_the_most_recent_files() {
        let hashes = HashCache {
            settle: Duration::ZERO,
            ..HashCache::default()
        };
        let key = |ino: u64, size: u64| FileKey {
            dev: 1,
            ino,
            size,
            mtime: (1, 0),
            ctime: (1, 0),
        };
        hashes.put(key(1, 10), "old".into());
        hashes.put(key(1, 11), "new".into());
        assert_eq!(hashes.get(&key(1, 10)), None, "a file's older key goes");
        assert_eq!(hashes.get(&key(1, 11)).as_deref(), Some("new"));
        for ino in 2..=HASH_CACHE_FILES as u64 {
            hashes.put(key(ino, 0), format!("d{ino}"));
        }
        // Full: reading file 1 makes it the most recent, so file 2 is the one to go.
        assert!(hashes.get(&key(1, 11)).is_some());
        hashes.put(key(1000, 0), "d1000".into());
        assert_eq!(hashes.get(&key(2, 0)), None);
        assert!(hashes.get(&key(1, 11)).is_some());
        assert_eq!(hashes.kept().len(), HASH_CACHE_FILES);
    }

    #[test]
    fn a_large_file_is_hashed_beside_the_decoding_with_the_same_digest() {
        use std::io::Write;
        let text = "0123456789abcdef\n".repeat(20_000);
        assert!(text.len() as u64 >= PARALLEL_HASH_MIN);
        for size in [text.len(), 1000] {
            let bytes = &text.as_bytes()[..size];
            let mut file = tempfile::tempfile().unwrap();
            file.write_all(bytes).unwrap();
            file.seek(SeekFrom::Start(0)).unwrap();
            let window = Window::Range {
                start: 2,
                limit: Some(3),
            };
            let r = read_with(&mut file, size as u64, window, &HashCache::default());
            assert_eq!(r.sha256, hex(&Sha256::digest(bytes)), "{size} bytes");
            assert_eq!(r.content, "0123456789abcdef\n".repeat(3));
        }
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

//! A command's output, as it is captured: both pipes read concurrently ([`pump`]) into
//! bounded head+tail buffers (what a result shows), the latest complete line (progress
//! messages), and, for a command that may become a job, every byte in a spill file (0600, in
//! the server's private job directory) that the job tools read at any offset.
//!
//! The process lifecycle (spawn, wait, kill, the group) is the parent module's; this file
//! only keeps what the command wrote, and gives it back.

use std::collections::VecDeque;
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncRead, AsyncReadExt};

use super::{Live, StartOptions};
use crate::tools::exec::os;

/// Read buffer per stream.
const READ_CHUNK: usize = 64 * 1024;

/// The longest "latest output line" sent as a progress message.
const PROGRESS_LINE_MAX: usize = 200;

/// One captured stream.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Captured {
    /// The kept text ([`os::decode`]: UTF-8, or the console code page on Windows), with a
    /// marker where bytes were cut.
    pub text: String,
    /// Bytes the command wrote to the stream in total.
    pub(crate) total_bytes: u64,
    /// Whether bytes were cut.
    pub(crate) truncated: bool,
}

/// Head + tail buffer: keeps the first and last `cap / 2` bytes of a stream, counts the rest.
/// Memory stays bounded whatever the command writes.
#[derive(Debug)]
struct HeadTail {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    half: usize,
    total: u64,
}

impl HeadTail {
    fn new(cap: usize) -> Self {
        let half = cap / 2;
        Self {
            head: Vec::with_capacity(half.min(READ_CHUNK)),
            tail: VecDeque::new(),
            half,
            total: 0,
        }
    }

    fn push(&mut self, mut chunk: &[u8]) {
        self.total += chunk.len() as u64;
        let room = self.half - self.head.len();
        if room > 0 {
            let take = room.min(chunk.len());
            self.head.extend_from_slice(&chunk[..take]);
            chunk = &chunk[take..];
        }
        if chunk.len() >= self.half {
            self.tail.clear();
            self.tail.extend(&chunk[chunk.len() - self.half..]);
        } else {
            self.tail.extend(chunk);
            let excess = self.tail.len().saturating_sub(self.half);
            self.tail.drain(..excess);
        }
    }

    fn finish(&self) -> Captured {
        let kept = self.head.len() + self.tail.len();
        let omitted = self.total - kept as u64;
        let mut bytes = self.head.clone();
        if omitted > 0 {
            bytes.extend_from_slice(
                format!("\n[... {omitted} bytes omitted: output over the limit; showing the first and last parts ...]\n").as_bytes(),
            );
        }
        bytes.extend(self.tail.iter());
        Captured {
            text: os::decode(&bytes).into_owned(),
            total_bytes: self.total,
            truncated: omitted > 0,
        }
    }
}

/// The latest complete, non-empty output line, for progress messages.
#[derive(Debug, Default)]
struct LastLine {
    partial: Vec<u8>,
    line: Option<String>,
}

impl LastLine {
    fn push(&mut self, chunk: &[u8]) {
        for piece in chunk.split_inclusive(|&b| b == b'\n') {
            if self.partial.len() < PROGRESS_LINE_MAX * 4 {
                self.partial.extend_from_slice(piece);
            }
            if piece.ends_with(b"\n") {
                let text = os::decode(&self.partial);
                let text = text.trim();
                if !text.is_empty() {
                    self.line = Some(text.chars().take(PROGRESS_LINE_MAX).collect());
                }
                self.partial.clear();
            }
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    match m.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}

/// Bytes a spilling stream keeps in memory before it creates its file: most commands print
/// less, and never touch the disk.
const SPILL_PENDING_BYTES: usize = 64 * 1024;

/// Every byte of a stream, for reading at any offset: in memory while small, then in a file
/// (created 0600 in the server's private job directory).
#[derive(Debug, Default)]
struct Spill {
    /// On for commands that may become jobs; off, nothing is kept beyond head and tail.
    enabled: bool,
    pending: Vec<u8>,
    file: Option<std::fs::File>,
    path: Option<PathBuf>,
    /// Where the file is created (`<dir>/<name>`), once it is needed.
    target: Option<PathBuf>,
    /// Bytes in the file (or pending).
    kept: u64,
    /// Most bytes the file takes (`exec.job_output_max_bytes`); past it the bytes are only
    /// counted, so a runaway job cannot fill the disk.
    max: u64,
    /// Why the file stopped short, if it did.
    failed: Option<String>,
}

impl Spill {
    fn push(&mut self, chunk: &[u8]) {
        if !self.enabled || self.failed.is_some() {
            return;
        }
        let room = self.max.saturating_sub(self.kept);
        let chunk = &chunk[..chunk.len().min(usize::try_from(room).unwrap_or(usize::MAX))];
        if chunk.is_empty() {
            self.failed = Some(format!(
                "the output file stops at {} bytes (exec.job_output_max_bytes)",
                self.max
            ));
            return;
        }
        if self.file.is_none() && self.pending.len() + chunk.len() <= SPILL_PENDING_BYTES {
            self.pending.extend_from_slice(chunk);
            self.kept += chunk.len() as u64;
            return;
        }
        if let Err(error) = self.open_file().and_then(|file| file.write_all(chunk)) {
            self.failed = Some(format!("writing the output file failed: {error}"));
            return;
        }
        self.kept += chunk.len() as u64;
    }

    /// The file, created (with the pending bytes) on first need.
    fn open_file(&mut self) -> std::io::Result<&mut std::fs::File> {
        if self.file.is_none() {
            let target = self
                .target
                .clone()
                .ok_or_else(|| std::io::Error::other("no job directory"))?;
            let mut file = os::create_private_file(&target)?;
            file.write_all(&self.pending)?;
            self.pending = Vec::new();
            self.path = Some(target);
            self.file = Some(file);
        }
        self.file
            .as_mut()
            .ok_or_else(|| std::io::Error::other("the output file is not open"))
    }

    /// Up to `max` bytes from `offset`.
    fn read(&self, offset: u64, max: usize) -> std::io::Result<Vec<u8>> {
        let end = self.kept.min(offset.saturating_add(max as u64));
        if offset >= end {
            return Ok(Vec::new());
        }
        let len = usize::try_from(end - offset).unwrap_or(max);
        match &self.file {
            Some(file) => {
                let mut buf = vec![0; len];
                os::read_at(file, &mut buf, offset)?;
                Ok(buf)
            }
            None => {
                let start = usize::try_from(offset).unwrap_or(usize::MAX);
                Ok(self.pending[start..start + len].to_vec())
            }
        }
    }
}

/// One output stream of a live command.
#[derive(Debug)]
struct Stream {
    /// What a result shows: the first and last bytes.
    kept: HeadTail,
    /// Every byte, when the command may become a job.
    spill: Spill,
}

/// Which stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Which {
    Stdout = 0,
    Stderr = 1,
}

/// A slice of a stream read at an offset.
#[derive(Debug)]
pub(crate) struct Chunk {
    /// The bytes as text ([`os::decode`]; a UTF-8 character cut by the end of the slice is left for
    /// the next read).
    pub(crate) text: String,
    /// The offset after this slice.
    pub(crate) next: u64,
}

/// What a live command has written: both streams and its latest line.
#[derive(Debug)]
pub(super) struct Output {
    streams: [Mutex<Stream>; 2],
    last_line: Mutex<LastLine>,
}

impl Output {
    /// Empty streams keeping `max_output_bytes` each (half head, half tail) and, with
    /// `options.spill`, every byte for reading back.
    pub(super) fn new(max_output_bytes: usize, options: &StartOptions) -> Self {
        let stream = |name: &str| Stream {
            kept: HeadTail::new(max_output_bytes),
            spill: Spill {
                enabled: options.spill.is_some(),
                max: options.spill_max_bytes,
                target: options.spill.as_ref().map(|p| {
                    let mut path = p.clone().into_os_string();
                    path.push(name);
                    PathBuf::from(path)
                }),
                ..Spill::default()
            },
        };
        Self {
            streams: [Mutex::new(stream(".stdout")), Mutex::new(stream(".stderr"))],
            last_line: Mutex::new(LastLine::default()),
        }
    }

    fn stream(&self, which: Which) -> std::sync::MutexGuard<'_, Stream> {
        lock(&self.streams[which as usize])
    }
}

/// The output side of a live command.
impl Live {
    /// The latest complete output line, for progress messages.
    pub(crate) fn last_line(&self) -> Option<String> {
        lock(&self.output.last_line).line.clone()
    }

    /// The stream so far as a result shows it (head and tail).
    pub(crate) fn captured(&self, which: Which) -> Captured {
        self.output.stream(which).kept.finish()
    }

    /// Bytes written to the stream so far.
    pub(crate) fn total(&self, which: Which) -> u64 {
        self.output.stream(which).kept.total
    }

    /// Bytes of the stream that can be read back ([`Live::read`]): all of them, unless the
    /// spill file stopped short.
    pub(crate) fn readable(&self, which: Which) -> u64 {
        self.output.stream(which).spill.kept
    }

    /// The stream's spill file, once it exists, and why it stopped short, if it did.
    pub(crate) fn spill_file(&self, which: Which) -> (Option<PathBuf>, Option<String>) {
        let stream = self.output.stream(which);
        (stream.spill.path.clone(), stream.spill.failed.clone())
    }

    /// Make sure every byte so far is in the spill file (the command is becoming a job:
    /// its output must be readable at any offset and survive in a file).
    pub(crate) fn spill_now(&self) {
        for which in [Which::Stdout, Which::Stderr] {
            let mut stream = self.output.stream(which);
            if stream.spill.enabled
                && stream.spill.failed.is_none()
                && let Err(error) = stream.spill.open_file()
            {
                stream.spill.failed = Some(format!("creating the output file failed: {error}"));
            }
        }
    }

    /// Up to `max` bytes of a stream from `offset` (offsets count every byte the command
    /// wrote). An offset past what was written reads nothing.
    pub(crate) fn read(&self, which: Which, offset: u64, max: usize) -> std::io::Result<Chunk> {
        let bytes = self.output.stream(which).spill.read(offset, max)?;
        // A multi-byte character cut at the end of the slice waits for the next read.
        let cut = match std::str::from_utf8(&bytes) {
            Ok(_) => bytes.len(),
            Err(e) if e.error_len().is_none() && self.end().is_none() => e.valid_up_to(),
            Err(_) => bytes.len(),
        };
        let cut = if cut == 0 && !bytes.is_empty() {
            bytes.len()
        } else {
            cut
        };
        Ok(Chunk {
            text: os::decode(&bytes[..cut]).into_owned(),
            next: offset + cut as u64,
        })
    }

    /// Remove the spill files (the job is gone).
    pub(crate) fn remove_files(&self) {
        for which in [Which::Stdout, Which::Stderr] {
            let mut stream = self.output.stream(which);
            stream.spill.file = None;
            if let Some(path) = stream.spill.path.take() {
                let _ = std::fs::remove_file(path);
            }
        }
    }
}

/// Read one of the command's pipes to its end into `live`'s output, telling its waiters of
/// every chunk.
pub(super) async fn pump(mut stream: impl AsyncRead + Unpin, live: Arc<Live>, which: Which) {
    // Reserved, not zeroed: pages are only touched when output arrives, so a quiet command
    // costs no page faults for its buffers.
    let mut chunk = Vec::with_capacity(READ_CHUNK);
    loop {
        chunk.clear();
        match stream.read_buf(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {
                {
                    let mut s = live.output.stream(which);
                    s.kept.push(&chunk);
                    s.spill.push(&chunk);
                }
                lock(&live.output.last_line).push(&chunk);
                live.bump();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn head_tail_keeps_both_ends_and_counts_everything() {
        let mut h = HeadTail::new(8);
        h.push(b"abcdefghijklmnopqrstuvwxyz");
        let c = h.finish();
        assert_eq!(c.total_bytes, 26);
        assert!(c.truncated);
        assert!(
            c.text.starts_with("abcd\n[... 18 bytes omitted"),
            "{}",
            c.text
        );
        assert!(c.text.ends_with("...]\nwxyz"), "{}", c.text);
        let mut small = HeadTail::new(8);
        small.push(b"abc");
        small.push(b"def");
        assert_eq!(
            small.finish(),
            Captured {
                text: "abcdef".into(),
                total_bytes: 6,
                truncated: false
            }
        );
        let mut pieces = HeadTail::new(8);
        for b in b"0123456789" {
            pieces.push(&[*b]);
        }
        let c = pieces.finish();
        assert!(
            c.text.starts_with("0123\n") && c.text.ends_with("\n6789"),
            "{}",
            c.text
        );
    }

    #[test]
    fn last_line_tracks_complete_lines() {
        let mut l = LastLine::default();
        l.push(b"first\nsec");
        assert_eq!(l.line.as_deref(), Some("first"));
        l.push(b"ond\n\n");
        assert_eq!(l.line.as_deref(), Some("second"));
    }
}

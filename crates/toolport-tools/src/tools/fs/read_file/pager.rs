//! Which part of a file a `read_file` call gets, and how to read on from it.
//!
//! [`read`] sniffs the start of the file (a byte-order mark decides the encoding, NUL bytes
//! mean binary), then serves the call's [`Window`]: a range of lines (offset/limit, head),
//! the last lines (`tail`: one pass to count them first) or raw text from a byte
//! (`byte_offset`, [`read_from_byte`]). A line read hashes the bytes as it decodes them and
//! uses a kept digest only when the file's key is the same before and after the pass; the
//! result says where to read on (`next_offset`, and `next_byte_offset` for a cut line).

use std::io::{Seek, SeekFrom};

use encoding_rs::{DecoderResult, Encoding, UTF_8, UTF_16BE};
use tokio_util::sync::CancellationToken;

use super::digest::{FileHash, FileKey, HashCache, Hashing};
use super::scan::{CHUNK, Pass, mismatch, read_full};
use super::{Params, ReadFileResult};
use crate::tool::ToolError;
use crate::tools::fs::text::{encoding_name, is_utf16};

/// How much of the start of a file is checked for NUL bytes to call it binary (as git does).
const BINARY_SNIFF: usize = 8 * 1024;

/// Which lines were asked for.
#[derive(Debug, Clone, Copy)]
pub(super) enum Window {
    /// Lines `start..start+limit` (1-based; `limit` None = to the end).
    Range { start: u64, limit: Option<u64> },
    /// The last N lines.
    Tail(u64),
    /// Text from this byte of the file, up to the size limit.
    Bytes(u64),
}

impl Window {
    /// The window a call asks for; conflicting parameters are an error naming them.
    pub(super) fn from_params(p: &Params) -> Result<Self, ToolError> {
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
pub(super) struct Limits<'a> {
    /// The most bytes of text returned.
    pub(super) max_bytes: usize,
    pub(super) cancel: &'a CancellationToken,
    /// The tool's digests of files read before.
    pub(super) hashes: &'a HashCache,
}

/// Read the requested window of a file (opened, at its start) of `size` bytes.
pub(super) fn read(
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

    // Every pass below decodes the text after the BOM within the budget; each names what
    // it changes.
    let pass = Pass {
        display,
        encoding,
        start: 1,
        limit: None,
        max_bytes,
        expected_bytes: 0,
        cancel,
    };
    let (start, limit) = match window {
        Window::Range { start, limit } => (start, limit),
        Window::Tail(n) => {
            file.seek(SeekFrom::Start(bom_len as u64)).map_err(io)?;
            // Count the lines, collecting none.
            let counted = Pass {
                limit: Some(0),
                ..pass
            }
            .run(file)?;
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
            None => FileHash::new(),
        };
        hash.update(&head[..bom_len]);
        let scanned = {
            let mut hashing = Hashing {
                inner: &mut *file,
                hash: &mut hash,
            };
            // A whole-file read returns about the file's size.
            let expected_bytes = if start == 1 && limit.is_none() {
                usize::try_from(size).unwrap_or(usize::MAX)
            } else {
                0
            };
            Pass {
                start,
                limit,
                expected_bytes,
                ..pass
            }
            .run(&mut hashing)?
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
        let sha256 = hash.finish();
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
    let mut hash = FileHash::new();
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
        sha256: hash.finish(),
    })
}

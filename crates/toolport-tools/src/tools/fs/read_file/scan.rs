//! One decoding pass of `read_file` ([`Pass`]): the file is read in chunks of [`CHUNK`]
//! bytes and decoded incrementally (encoding_rs), so memory stays at one chunk plus the
//! collected text. Every line is counted; the [`Collector`] keeps the lines of the requested
//! window within the byte budget, cutting at a line end (or, when the first line alone is
//! over the budget, at a character boundary inside it). Decoding is strict only inside the
//! window: a file with one bad byte far from the lines asked for can still be read.

use std::io::Read;

use encoding_rs::{DecoderResult, Encoding};
use tokio_util::sync::CancellationToken;

use crate::tool::ToolError;
use crate::tools::fs::text::encoding_name;

/// Bytes read from disk per step.
pub(super) const CHUNK: usize = 64 * 1024;

/// Fill `buf` as far as the file allows; the number of bytes read.
pub(super) fn read_full(file: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
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
pub(super) struct Scan {
    pub(super) content: String,
    pub(super) total_lines: u64,
    pub(super) returned_lines: u64,
    pub(super) truncated: bool,
    pub(super) next_offset: Option<u64>,
    /// The first returned line alone exceeded the budget and was cut: the content is its
    /// beginning.
    pub(super) cut_line: bool,
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

/// One decoding pass over a file, from its current position: what it decodes and which
/// lines it collects. Every field is a fact of the call, so each call site names them
/// (`Pass { limit: Some(0), ..whole }` counts lines without collecting any).
#[derive(Debug, Clone, Copy)]
pub(super) struct Pass<'a> {
    /// The file as the caller named it, for errors.
    pub(super) display: &'a str,
    /// What the bytes are decoded as (the BOM, if any, already skipped).
    pub(super) encoding: &'static Encoding,
    /// The first line to collect, 1-based.
    pub(super) start: u64,
    /// How many lines to collect from `start`: `None` to the end, `Some(0)` none (the pass
    /// only counts lines).
    pub(super) limit: Option<u64>,
    /// The budget: the most bytes of text collected.
    pub(super) max_bytes: usize,
    /// Bytes of text the pass is expected to collect, reserved up front (capped at the
    /// budget; 0 when unknown).
    pub(super) expected_bytes: usize,
    /// Checked before each chunk: a cancelled call stops reading.
    pub(super) cancel: &'a CancellationToken,
}

impl Pass<'_> {
    /// Decode `file` to its end, counting lines and collecting the window
    /// `start..start+limit`. Decoding is strict inside the window (an invalid byte is an
    /// error naming it) and tolerant outside it.
    pub(super) fn run(self, file: &mut impl Read) -> Result<Scan, ToolError> {
        let Pass {
            display,
            encoding,
            start,
            limit,
            max_bytes,
            expected_bytes,
            cancel,
        } = self;
        let mut decoder = encoding.new_decoder_without_bom_handling();
        let mut collector = Collector {
            start,
            end: limit.map(|l| start.saturating_add(l)),
            max_bytes,
            line: 1,
            line_open: false,
            line_start: 0,
            // Room for the text up front: a megabyte is not grown (and copied) by doubling.
            content: String::with_capacity(expected_bytes.min(max_bytes)),
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
            let n = read_full(file, &mut buf).map_err(|e| {
                ToolError::ExecutionFailed(format!("reading {display} failed: {e}"))
            })?;
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
}

/// A byte that is not valid in the encoding, at byte `at` of the file in line `line`.
pub(super) fn mismatch(
    display: &str,
    encoding: &'static Encoding,
    at: u64,
    line: u64,
) -> ToolError {
    ToolError::InvalidArguments(format!(
        "{display} is not valid {} (the first invalid byte is at byte offset {at}, in line {line}). If the file uses another encoding, pass it as `encoding`: for example latin1 (windows-1252), shift_jis, euc-jp, gbk, big5, euc-kr, utf-16le",
        encoding_name(encoding)
    ))
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

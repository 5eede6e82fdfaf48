//! Text as the file tools see it, shared by the read and write tools: encodings (a WHATWG
//! label, a byte-order mark that wins), decoding a whole file strictly and encoding it back
//! the same way (BOM kept), line endings, the sha256 a model passes back to prove it read the
//! current content, and the unified diff a change is shown as.
//!
//! **Line endings.** Models write `\n` whatever the file uses, so text written into an
//! existing file takes the file's line ending ([`LineEnding::of`]: the style most of its line
//! breaks use, the first one's on a tie; a file without a line break imposes none) and is
//! converted with [`LineEnding::convert`] *before* it is encoded, so UTF-16 files are
//! converted like any other. Only `\n` is a line break here: a lone `\r` (classic Mac OS)
//! is text, and such a file has no line ending to impose.
//!
//! encoding_rs encodes UTF-16 as UTF-8 (the WHATWG rule for web forms), so UTF-16 is encoded
//! here by hand; every other encoding goes through encoding_rs, and a character it cannot
//! represent is an error naming it rather than the HTML character reference it would write.

use std::borrow::Cow;
use std::time::Duration;

use encoding_rs::{Encoding, UTF_8, UTF_16BE, UTF_16LE};
use sha2::{Digest, Sha256};

use crate::tool::ToolError;

/// Longest a diff may take to compute: past it, `similar` gives up on a minimal diff and
/// reports the changed region coarsely, so a pathological change never hangs the call.
const DIFF_TIMEOUT: Duration = Duration::from_secs(2);
/// Lines of context around each change in a unified diff (the `diff -u` default).
const DIFF_CONTEXT: usize = 3;
/// Most bytes of diff returned in a result: a `replace_all` over a large file can change
/// every line, and the model needs the shape of the change, not all of it again.
pub(crate) const DIFF_MAX_BYTES: usize = 256 * 1024;
/// A sha256 in hex.
const SHA256_HEX_LEN: usize = 64;

/// The encoding a WHATWG label names, or an error listing common labels.
pub(crate) fn encoding_for_label(label: &str) -> Result<&'static Encoding, ToolError> {
    Encoding::for_label(label.trim().as_bytes())
        .filter(|e| *e != encoding_rs::REPLACEMENT)
        .ok_or_else(|| {
            ToolError::InvalidArguments(format!(
                "unknown encoding {label:?}; use a WHATWG label such as utf-8, utf-16le, utf-16be, latin1, windows-1252, shift_jis, euc-jp, gbk, gb18030, big5, euc-kr or koi8-r"
            ))
        })
}

/// Whether `encoding` is UTF-16 (either byte order).
pub(crate) fn is_utf16(encoding: &'static Encoding) -> bool {
    encoding == UTF_16LE || encoding == UTF_16BE
}

/// The canonical name in lower case: "utf-8", "windows-1252", "shift_jis".
pub(crate) fn encoding_name(encoding: &'static Encoding) -> String {
    encoding.name().to_ascii_lowercase()
}

/// The sha256 of `bytes`, lower-case hex.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// Lower-case hex of a digest.
pub(crate) fn hex(digest: &[u8]) -> String {
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// Check an `expected_sha256` argument's shape: 64 hex digits (any case).
pub(crate) fn check_sha256_arg(value: &str) -> Result<String, ToolError> {
    let value = value.trim();
    if value.len() == SHA256_HEX_LEN && value.bytes().all(|b| b.is_ascii_hexdigit()) {
        Ok(value.to_ascii_lowercase())
    } else {
        Err(ToolError::InvalidArguments(format!(
            "expected_sha256 {value:?} is not a sha256: give the 64 hexadecimal digits read_file returned as `sha256`"
        )))
    }
}

/// A file's text and how to write it back the same way.
#[derive(Debug)]
pub(crate) struct Decoded {
    /// The text (without the BOM).
    pub(crate) text: String,
    /// The encoding it was decoded with.
    pub(crate) encoding: &'static Encoding,
    /// Whether the file starts with a byte-order mark (written back when it is).
    pub(crate) bom: bool,
}

/// How a file's bytes are read: the encoding (a BOM decides it, else `requested`), the
/// BOM's length, and whether the body is binary (NUL bytes outside UTF-16, as read_file
/// decides).
fn sniff(bytes: &[u8], requested: &'static Encoding) -> (&'static Encoding, usize, bool) {
    let (encoding, bom_len) = Encoding::for_bom(bytes).unwrap_or((requested, 0));
    let binary = !is_utf16(encoding) && bytes[bom_len..].contains(&0);
    (encoding, bom_len, binary)
}

/// Decode a whole file strictly (see `sniff`); a binary or invalid file is refused.
pub(crate) fn decode(
    bytes: &[u8],
    requested: &'static Encoding,
    display: &str,
) -> Result<Decoded, ToolError> {
    let (encoding, bom_len, binary) = sniff(bytes, requested);
    if binary {
        return Err(ToolError::InvalidArguments(format!(
            "{display} looks like a binary file (it contains NUL bytes); only text files can be edited. If it is UTF-16 text without a byte-order mark, pass encoding \"utf-16le\" or \"utf-16be\""
        )));
    }
    let text = encoding
        .decode_without_bom_handling_and_without_replacement(&bytes[bom_len..])
        .ok_or_else(|| {
            ToolError::InvalidArguments(format!(
                "{display} is not valid {}; if the file uses another encoding, pass it as `encoding` (for example latin1, shift_jis, gbk, utf-16le)",
                encoding_name(encoding)
            ))
        })?;
    Ok(Decoded {
        text: text.into_owned(),
        encoding,
        bom: bom_len > 0,
    })
}

/// The line ending of an existing file's bytes, read in the encoding `decode` would use (see
/// [`LineEnding::of`]). Read leniently: a file about to be replaced need not be valid in that
/// encoding (a latin1 file rewritten as utf-8), its line breaks are found all the same. `None`
/// for a binary file (a PNG's signature holds a CRLF, which is no line ending to keep) or one
/// without a line break.
pub(crate) fn file_line_ending(bytes: &[u8], requested: &'static Encoding) -> Option<LineEnding> {
    let (encoding, bom_len, binary) = sniff(bytes, requested);
    if binary {
        return None;
    }
    let (text, _) = encoding.decode_without_bom_handling(&bytes[bom_len..]);
    LineEnding::of(&text)
}

/// A style of line break.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LineEnding {
    /// `\n` (Unix).
    Lf,
    /// `\r\n` (Windows).
    Crlf,
}

impl LineEnding {
    /// The line ending of `text`: the style most of its line breaks use, the first line
    /// break's on a tie (a mixed file has no right answer; the majority is what an editor
    /// shows it as, and the first break decides when there is none). `None` when it has no
    /// line break. A `\n` is a line break, CRLF when a `\r` precedes it.
    pub(crate) fn of(text: &str) -> Option<Self> {
        let bytes = text.as_bytes();
        let (mut total, mut crlf, mut first) = (0_usize, 0_usize, None);
        for (at, _) in text.match_indices('\n') {
            let style = if at > 0 && bytes[at - 1] == b'\r' {
                crlf += 1;
                Self::Crlf
            } else {
                Self::Lf
            };
            total += 1;
            first.get_or_insert(style);
        }
        match (crlf * 2).cmp(&total) {
            std::cmp::Ordering::Greater => Some(Self::Crlf),
            std::cmp::Ordering::Less => Some(Self::Lf),
            std::cmp::Ordering::Equal => first,
        }
    }

    /// `text` with its line breaks in this style: for CRLF each `\n` not preceded by `\r`
    /// becomes `\r\n`; for LF each `\r\n` becomes `\n`. Borrowed when nothing changes.
    pub(crate) fn convert(self, text: &str) -> Cow<'_, str> {
        match self {
            Self::Lf if text.contains("\r\n") => Cow::Owned(text.replace("\r\n", "\n")),
            Self::Lf => Cow::Borrowed(text),
            Self::Crlf => {
                let bytes = text.as_bytes();
                let bare = |at: usize| at == 0 || bytes[at - 1] != b'\r';
                let count = text.match_indices('\n').filter(|&(at, _)| bare(at)).count();
                if count == 0 {
                    return Cow::Borrowed(text);
                }
                let mut out = String::with_capacity(text.len() + count);
                let mut from = 0;
                for (at, _) in text.match_indices('\n').filter(|&(at, _)| bare(at)) {
                    out.push_str(&text[from..at]);
                    out.push('\r');
                    from = at;
                }
                out.push_str(&text[from..]);
                Cow::Owned(out)
            }
        }
    }
}

/// The bytes of `text` in `encoding`, with its byte-order mark first when `bom` is set. A
/// character the encoding cannot represent is an error naming it.
pub(crate) fn encode(
    text: &str,
    encoding: &'static Encoding,
    bom: bool,
) -> Result<Vec<u8>, ToolError> {
    let utf16 = |big_endian: bool| {
        let mut out = Vec::with_capacity(text.len() * 2 + 2);
        let units = std::iter::once(0xFEFF_u16)
            .filter(|_| bom)
            .chain(text.encode_utf16());
        for unit in units {
            out.extend_from_slice(&if big_endian {
                unit.to_be_bytes()
            } else {
                unit.to_le_bytes()
            });
        }
        out
    };
    if encoding == UTF_16LE {
        return Ok(utf16(false));
    }
    if encoding == UTF_16BE {
        return Ok(utf16(true));
    }
    let mut out = Vec::with_capacity(text.len() + 3);
    if bom && encoding == UTF_8 {
        out.extend_from_slice(b"\xEF\xBB\xBF");
    }
    let (bytes, _, had_errors) = encoding.encode(text);
    if had_errors {
        let bad = text
            .chars()
            .find(|c| encoding.encode(c.encode_utf8(&mut [0; 4])).2)
            .unwrap_or('?');
        return Err(ToolError::InvalidArguments(format!(
            "the text contains {bad:?} (U+{:04X}), which {} cannot represent; use characters of that encoding, or write the file as utf-8",
            u32::from(bad),
            encoding_name(encoding)
        )));
    }
    match bytes {
        Cow::Borrowed(b) if out.is_empty() => Ok(b.to_vec()),
        Cow::Owned(b) if out.is_empty() => Ok(b),
        other => {
            out.extend_from_slice(&other);
            Ok(out)
        }
    }
}

/// A unified diff of `old` → `new` for `display`, cut at [`DIFF_MAX_BYTES`] (the flag says
/// whether it was).
///
/// Only the changed region is diffed: the lines `old` and `new` share at the start and at the
/// end are cut off first (keeping [`DIFF_CONTEXT`] of them either side), and the hunk headers
/// are shifted back by the lines cut. A one-line edit in a 10 MB file then diffs a few lines
/// instead of 200,000 (166 ms → well under 1 ms; `similar` diffs whole inputs). The hunks are
/// written here, in `similar`'s own unified format, because its writer cannot shift them.
///
/// Every line of the diff ends in `\n`, whatever the texts use: a CRLF file's diff would
/// otherwise carry a `\r` on every line (noise to a model, and an old_text copied from the
/// diff with `\n` still matches, see edit_file). A line whose only change is its line ending
/// therefore shows as removed and added with the same text.
pub(crate) fn unified_diff(old: &str, new: &str, display: &str) -> (String, bool) {
    let region = changed_region(old, new);
    let (old_mid, new_mid) = (
        &old[region.start..region.old_end],
        &new[region.start..region.new_end],
    );
    let diff = similar::TextDiff::configure()
        .timeout(DIFF_TIMEOUT)
        .diff_lines(old_mid, new_mid);
    let groups = diff.grouped_ops(DIFF_CONTEXT);
    let mut text = String::new();
    if groups.is_empty() {
        return (text, false);
    }
    text.push_str(&format!("--- {display}\n+++ {display}\n"));
    for group in &groups {
        let (Some(first), Some(last)) = (group.first(), group.last()) else {
            continue;
        };
        let range = |start: usize, end: usize| {
            let len = end.saturating_sub(start);
            let begin = region.lines_before + start + 1;
            match len {
                1 => begin.to_string(),
                0 => format!("{},0", begin - 1),
                _ => format!("{begin},{len}"),
            }
        };
        text.push_str(&format!(
            "@@ -{} +{} @@\n",
            range(first.old_range().start, last.old_range().end),
            range(first.new_range().start, last.new_range().end)
        ));
        for op in group {
            for change in diff.iter_changes(op) {
                let sign = match change.tag() {
                    similar::ChangeTag::Equal => ' ',
                    similar::ChangeTag::Delete => '-',
                    similar::ChangeTag::Insert => '+',
                };
                text.push(sign);
                let line = change.value();
                match line.strip_suffix("\r\n") {
                    Some(line) => {
                        text.push_str(line);
                        text.push('\n');
                    }
                    None => text.push_str(line),
                }
                if change.missing_newline() {
                    text.push_str("\n\\ No newline at end of file\n");
                }
            }
        }
        if text.len() > DIFF_MAX_BYTES {
            break;
        }
    }
    let cut = cut_diff(&mut text);
    (text, cut)
}

/// Cut a diff to [`DIFF_MAX_BYTES`] at a line end; whether it was cut.
pub(crate) fn cut_diff(text: &mut String) -> bool {
    if text.len() <= DIFF_MAX_BYTES {
        return false;
    }
    let at = (0..=DIFF_MAX_BYTES)
        .rev()
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(0);
    let at = text[..at].rfind('\n').map_or(at, |nl| nl + 1);
    text.truncate(at);
    true
}

/// Where two texts differ, in whole lines with [`DIFF_CONTEXT`] lines of context: both start
/// differing at or after `start` (a line start in both), `old[old_end..] == new[new_end..]`
/// (line starts too), and `lines_before` lines precede `start`.
#[derive(Debug, PartialEq, Eq)]
struct Region {
    start: usize,
    old_end: usize,
    new_end: usize,
    lines_before: usize,
}

fn changed_region(old: &str, new: &str) -> Region {
    let (a, b) = (old.as_bytes(), new.as_bytes());
    let prefix = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let room = a.len().min(b.len()) - prefix;
    let suffix = a
        .iter()
        .rev()
        .zip(b.iter().rev())
        .take(room)
        .take_while(|(x, y)| x == y)
        .count();
    // Back to a line start inside the shared prefix (a newline there is in both), then the
    // context lines before it.
    let mut start = old[..prefix].rfind('\n').map_or(0, |i| i + 1);
    for _ in 0..DIFF_CONTEXT {
        if start == 0 {
            break;
        }
        start = old[..start - 1].rfind('\n').map_or(0, |i| i + 1);
    }
    // On to just after a newline inside the shared suffix (so it ends a line in both), then
    // the context lines after it.
    let mut old_end = a.len() - suffix;
    for _ in 0..=DIFF_CONTEXT {
        if old_end == a.len() {
            break;
        }
        old_end = old[old_end..]
            .find('\n')
            .map_or(a.len(), |i| old_end + i + 1);
    }
    let tail = a.len() - old_end;
    Region {
        start,
        old_end,
        new_end: b.len() - tail,
        lines_before: a[..start].iter().filter(|&&c| c == b'\n').count(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf16_round_trips_with_its_bom() {
        let text = "héllo\r\nwörld\r\n";
        for (encoding, bom) in [(UTF_16LE, true), (UTF_16BE, true), (UTF_16LE, false)] {
            let bytes = encode(text, encoding, bom).unwrap();
            let back = decode(&bytes, encoding, "f").unwrap();
            assert_eq!(
                (back.text.as_str(), back.encoding, back.bom),
                (text, encoding, bom)
            );
        }
        let utf8 = encode("a", UTF_8, true).unwrap();
        assert_eq!(utf8, b"\xEF\xBB\xBFa");
        assert!(decode(&utf8, UTF_8, "f").unwrap().bom);
    }

    #[test]
    fn a_texts_line_ending_is_its_majority_then_its_first() {
        use LineEnding::{Crlf, Lf};
        assert_eq!(LineEnding::of("a\r\nb\r\n"), Some(Crlf));
        assert_eq!(LineEnding::of("a\nb\n"), Some(Lf));
        assert_eq!(LineEnding::of("a\r\nb\nc\r\n"), Some(Crlf));
        assert_eq!(LineEnding::of("a\nb\r\nc\n"), Some(Lf));
        // A tie: the first line break's style.
        assert_eq!(LineEnding::of("a\r\nb\n"), Some(Crlf));
        assert_eq!(LineEnding::of("a\nb\r\n"), Some(Lf));
        // No line break, or only lone `\r`s: none.
        assert_eq!(LineEnding::of(""), None);
        assert_eq!(LineEnding::of("one line"), None);
        assert_eq!(LineEnding::of("mac\rclassic\r"), None);
        assert_eq!(LineEnding::of("\n"), Some(Lf));
    }

    #[test]
    fn converting_line_endings_touches_only_line_breaks() {
        use LineEnding::{Crlf, Lf};
        assert_eq!(Crlf.convert("a\nb\r\nc\n"), "a\r\nb\r\nc\r\n");
        assert_eq!(Crlf.convert("\n\n"), "\r\n\r\n");
        assert_eq!(Crlf.convert("lone\rcr"), "lone\rcr");
        assert_eq!(Lf.convert("a\r\nb\nc\r"), "a\nb\nc\r");
        // Already in the style: borrowed, not copied; converting twice changes nothing more.
        assert!(matches!(Crlf.convert("a\r\nb"), Cow::Borrowed(_)));
        assert!(matches!(Lf.convert("a\nb"), Cow::Borrowed(_)));
        let once = Crlf.convert("x\ny\r\n\nz").into_owned();
        assert_eq!(Crlf.convert(&once), once);
    }

    #[test]
    fn a_files_line_ending_is_read_in_its_encoding() {
        let utf16le: Vec<u8> = [0xFF, 0xFE]
            .into_iter()
            .chain("a\r\nb\r\n".encode_utf16().flat_map(u16::to_le_bytes))
            .collect();
        assert_eq!(file_line_ending(&utf16le, UTF_8), Some(LineEnding::Crlf));
        assert_eq!(file_line_ending(b"a\nb\n", UTF_8), Some(LineEnding::Lf));
        // Binary (a PNG's signature holds a CRLF): nothing to keep.
        assert_eq!(file_line_ending(b"\x89PNG\r\n\x1a\n\0\0", UTF_8), None);
        // Not valid in the encoding asked for (latin1 read as utf-8): still found.
        assert_eq!(
            file_line_ending(b"caf\xE9\r\nx\r\n", UTF_8),
            Some(LineEnding::Crlf)
        );
    }

    #[test]
    fn a_crlf_diff_is_shown_with_lf() {
        let (diff, _) = unified_diff("a\r\nb\r\nc\r\n", "a\r\nB\r\nc\r\n", "/w/f");
        assert_eq!(
            diff,
            "--- /w/f\n+++ /w/f\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"
        );
    }

    #[test]
    fn an_unrepresentable_character_is_named() {
        let latin1 = encoding_for_label("latin1").unwrap();
        assert_eq!(encode("café", latin1, false).unwrap(), b"caf\xE9");
        let message = encode("a→b", latin1, false).unwrap_err().to_string();
        assert!(message.contains("U+2192"), "{message}");
    }

    #[test]
    fn sha256_arguments_are_checked() {
        assert_eq!(
            sha256_hex(b""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert!(check_sha256_arg(&"A".repeat(64)).is_ok());
        assert!(check_sha256_arg("abc").is_err());
    }

    #[test]
    fn diffs_are_unified_and_capped() {
        let (diff, cut) = unified_diff("a\nb\nc\n", "a\nB\nc\n", "/w/f");
        assert!(!cut);
        assert_eq!(
            diff,
            "--- /w/f\n+++ /w/f\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"
        );
        let big: String = (0..100_000).map(|i| format!("line {i}\n")).collect();
        let (diff, cut) = unified_diff(&big, "", "/w/f");
        assert!(cut && diff.len() <= DIFF_MAX_BYTES && diff.ends_with('\n'));
    }

    /// The shortcut (diffing only the changed region) gives what `similar` gives for the
    /// whole texts, line numbers included.
    #[test]
    fn the_region_diff_equals_the_whole_diff() {
        let lines: String = (1..=40).map(|i| format!("line {i}\n")).collect();
        let cases = [
            (lines.clone(), lines.replace("line 20\n", "LINE 20\n")),
            (lines.clone(), lines.replace("line 1\n", "")),
            (lines.clone(), format!("{lines}tail without newline")),
            (
                lines.clone(),
                lines.replace("line 3\n", "x\n").replace("line 37\n", "y\n"),
            ),
            ("x\nab".to_owned(), "xyab".to_owned()),
            ("ab\ncd".to_owned(), "aXb\ncd".to_owned()),
            ("same\n".to_owned(), "same\nsame\n".to_owned()),
            (String::new(), "new\n".to_owned()),
        ];
        for (old, new) in cases {
            let whole = similar::TextDiff::from_lines(&old, &new)
                .unified_diff()
                .context_radius(DIFF_CONTEXT)
                .missing_newline_hint(true)
                .header("f", "f")
                .to_string();
            assert_eq!(unified_diff(&old, &new, "f").0, whole, "{old:?} -> {new:?}");
        }
    }
}

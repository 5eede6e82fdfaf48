//! Text as the file tools see it, shared by the read and write tools: encodings (a WHATWG
//! label, a byte-order mark that wins), decoding a whole file strictly and encoding it back
//! the same way (BOM kept), the sha256 a model passes back to prove it read the current
//! content, and the unified diff a change is shown as.
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

/// Decode a whole file strictly: a BOM decides the encoding, else `requested`. NUL bytes
/// outside UTF-16 mean binary and are refused, as read_file refuses them.
pub(crate) fn decode(
    bytes: &[u8],
    requested: &'static Encoding,
    display: &str,
) -> Result<Decoded, ToolError> {
    let (encoding, bom_len) = Encoding::for_bom(bytes).unwrap_or((requested, 0));
    let body = &bytes[bom_len..];
    if !is_utf16(encoding) && body.contains(&0) {
        return Err(ToolError::InvalidArguments(format!(
            "{display} looks like a binary file (it contains NUL bytes); only text files can be edited. If it is UTF-16 text without a byte-order mark, pass encoding \"utf-16le\" or \"utf-16be\""
        )));
    }
    let text = encoding
        .decode_without_bom_handling_and_without_replacement(body)
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
                text.push_str(change.value());
                if change.missing_newline() {
                    text.push_str("\n\\ No newline at end of file\n");
                }
            }
        }
        if text.len() > DIFF_MAX_BYTES {
            break;
        }
    }
    let cut = text.len() > DIFF_MAX_BYTES;
    if cut {
        let at = (0..=DIFF_MAX_BYTES)
            .rev()
            .find(|&i| text.is_char_boundary(i))
            .unwrap_or(0);
        let at = text[..at].rfind('\n').map_or(at, |nl| nl + 1);
        text.truncate(at);
    }
    (text, cut)
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

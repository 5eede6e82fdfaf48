//! Where each hunk of an update goes in a file's text, and the text after all of them. Pure,
//! for tests.
//!
//! A hunk's old lines (context and removed) are looked for after the previous hunk, first as
//! written, then ignoring trailing whitespace, then ignoring whitespace at both ends (what
//! models get wrong most: a lost trailing space, tabs for spaces); among the matches of the
//! first pass that finds any, the one nearest the unified diff's line number wins, else the
//! first. An envelope hunk's `@@ text` line is found first (the same way) and the hunk looked
//! for after it; `*** End of File` pins a hunk to the end. Context lines keep the file's own
//! text (a tolerant match never rewrites them); added lines take the file's line ending.
//! A hunk that is not found is reported with the file's most similar region, as edit_file
//! reports an old_text it cannot find.

use super::parse::{Hunk, Op};
use crate::tools::fs::edit_file::closest;
use crate::tools::fs::text::LineEnding;

/// Why the hunks do not apply: which hunk, and a message for the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HunkError {
    /// 1-based number of the hunk.
    pub(crate) index: usize,
    /// How many hunks the file's section has.
    pub(crate) count: usize,
    /// What is wrong.
    pub(crate) message: String,
}

/// How loosely two lines may compare.
#[derive(Debug, Clone, Copy)]
enum Loose {
    Exact,
    TrimEnd,
    Trim,
}

impl Loose {
    fn same(self, file: &str, patch: &str) -> bool {
        match self {
            Self::Exact => file == patch,
            Self::TrimEnd => file.trim_end() == patch.trim_end(),
            Self::Trim => file.trim() == patch.trim(),
        }
    }
}

/// Where `want` occurs in `lines` at or after `from` (only at the very end when `at_eof`),
/// by the first of the passes that finds it; the match nearest `hint` (a 0-based line) wins.
/// At most [`FIND_BUDGET`] line comparisons per pass (a huge file of alike lines answers at
/// once: the rest is not searched).
fn find(
    lines: &[Line],
    want: &[&str],
    from: usize,
    at_eof: bool,
    hint: Option<usize>,
) -> Option<usize> {
    if want.len() > lines.len() {
        return None;
    }
    let last = lines.len() - want.len();
    if from > last {
        return None;
    }
    for loose in [Loose::Exact, Loose::TrimEnd, Loose::Trim] {
        let matches = |start: usize| {
            lines[start..start + want.len()]
                .iter()
                .zip(want)
                .all(|(f, p)| loose.same(&f.text, p))
        };
        let found: Vec<usize> = if at_eof {
            matches(last).then_some(last).into_iter().collect()
        } else {
            let starts = (FIND_BUDGET / want.len().max(1)).max(1);
            (from..=last).take(starts).filter(|&s| matches(s)).collect()
        };
        let best = match hint {
            Some(hint) => found.iter().copied().min_by_key(|&s| s.abs_diff(hint)),
            None => found.first().copied(),
        };
        if best.is_some() {
            return best;
        }
    }
    None
}

/// Most line comparisons one search pass makes.
const FIND_BUDGET: usize = 50_000_000;

/// A line of the file: its text and the line break it ends with (`""` for a last line
/// without one), kept as it is unless the hunk changes the line.
#[derive(Debug, Clone)]
struct Line {
    text: String,
    end: &'static str,
}

/// Split `text` into lines, each with its own line break.
fn split(text: &str) -> Vec<Line> {
    text.split_inclusive('\n')
        .map(|l| {
            let (text, end) = if let Some(t) = l.strip_suffix("\r\n") {
                (t, "\r\n")
            } else if let Some(t) = l.strip_suffix('\n') {
                (t, "\n")
            } else {
                (l, "")
            };
            Line {
                text: text.to_owned(),
                end,
            }
        })
        .collect()
}

/// `text` with `hunks` applied in order (see the module doc); `display` names the file in
/// errors.
pub(crate) fn apply(text: &str, hunks: &[Hunk], display: &str) -> Result<String, HunkError> {
    // Added lines take the file's line ending (the majority's); the lines kept keep theirs.
    let ending = match LineEnding::of(text) {
        Some(LineEnding::Crlf) => "\r\n",
        _ => "\n",
    };
    let mut lines = split(text);
    let mut cursor = 0;
    // Lines added minus lines removed by the hunks so far: a unified diff's line numbers are
    // the old file's, so a later hunk's number is shifted by it.
    let mut delta: isize = 0;
    for (i, hunk) in hunks.iter().enumerate() {
        let fail = |message: String| HunkError {
            index: i + 1,
            count: hunks.len(),
            message,
        };
        for anchor in &hunk.anchors {
            let at = find(&lines, &[anchor.as_str()], cursor, false, None).ok_or_else(|| {
                fail(format!(
                    "its `@@ {anchor}` line was not found in {display}{}; the `@@` line names a line of the file (a function or section header) that the hunk follows",
                    after(cursor)
                ))
            })?;
            cursor = at + 1;
        }
        let old = hunk.old();
        let shifted = |line: usize| line.saturating_add_signed(delta);
        let hint = hunk.line_hint.map(|l| shifted(l.saturating_sub(1)));
        let start = if old.is_empty() {
            match (hunk.line_hint, hunk.anchors.is_empty()) {
                // `-l,0`: after line l (`-0,0`: at the start).
                (Some(line), _) => shifted(line).clamp(cursor, lines.len()),
                (None, false) => cursor,
                (None, true) => lines.len(),
            }
        } else {
            find(&lines, &old, cursor, hunk.at_eof, hint).ok_or_else(|| {
                let joined: Vec<&str> = lines.iter().map(|l| l.text.as_str()).collect();
                let similar = match closest(&joined.join("\n"), &old.join("\n")) {
                    Some(c) => format!(
                        "The most similar region is lines {}-{}{}:\n{}\n",
                        c.first_line,
                        c.last_line,
                        if i > 0 { " (numbered as the earlier hunks left the file)" } else { "" },
                        c.excerpt
                    ),
                    None => "No line of it occurs in the file. ".to_owned(),
                };
                fail(format!(
                    "its {} context and removed lines (starting {:?}) were not found in {display}{}{}. {similar}Read the file again and copy the ` ` and `-` lines exactly",
                    old.len(),
                    old[0],
                    after(cursor),
                    if hunk.at_eof { " at the end of the file" } else { "" },
                ))
            })?
        };
        let reaches_end = start + old.len() == lines.len();
        let had_break = lines.last().is_none_or(|l| !l.end.is_empty());
        if reaches_end
            && old.is_empty()
            && start > 0
            && hunk.lines.iter().any(|(op, _)| *op == Op::Add)
        {
            // Lines added after a last line without a line break: that line gets one.
            lines[start - 1].end = if lines[start - 1].end.is_empty() {
                ending
            } else {
                lines[start - 1].end
            };
        }
        let mut replaced: Vec<Line> = Vec::with_capacity(hunk.lines.len());
        let mut j = start;
        for (op, line) in &hunk.lines {
            match op {
                Op::Context => {
                    replaced.push(lines[j].clone());
                    j += 1;
                }
                Op::Remove => j += 1,
                Op::Add => replaced.push(Line {
                    text: line.clone(),
                    end: ending,
                }),
            }
        }
        // The file's last line: it ends without a line break only as the hunk says (or as
        // it did, when the hunk does not say).
        if reaches_end && let Some(last) = replaced.last_mut() {
            let breaks = if hunk.new_no_eol {
                false
            } else if hunk.old_no_eol {
                true
            } else {
                had_break
            };
            last.end = match (breaks, last.end) {
                (false, _) => "",
                (true, "") => ending,
                (true, end) => end,
            };
        } else if let Some(last) = replaced.last_mut().filter(|l| l.end.is_empty()) {
            // A line that was the last and is no longer: it needs a line break now.
            last.end = ending;
        }
        delta += replaced.len() as isize - old.len() as isize;
        cursor = start + replaced.len();
        lines.splice(start..start + old.len(), replaced);
    }
    Ok(lines
        .iter()
        .flat_map(|l| [l.text.as_str(), l.end])
        .collect())
}

/// " after line N" when the search started past the top.
fn after(cursor: usize) -> String {
    if cursor == 0 {
        String::new()
    } else {
        format!(" after line {cursor} (where the previous hunk or `@@` line ended)")
    }
}

#[cfg(test)]
mod tests {
    use super::super::parse::{FileChange, parse};
    use super::*;

    fn hunks(patch: &str) -> Vec<Hunk> {
        match parse(patch).unwrap().remove(0) {
            FileChange::Update { hunks, .. } => hunks,
            other => panic!("not an update: {other:?}"),
        }
    }

    #[test]
    fn an_envelope_hunk_applies_after_its_anchor_keeping_crlf() {
        let text = "fn a() {\r\n    x();\r\n}\r\nfn b() {\r\n    x();\r\n}\r\n";
        let patch = "*** Begin Patch\n*** Update File: f.rs\n@@ fn b() {\n-    x();\n+    y();\n*** End Patch\n";
        assert_eq!(
            apply(text, &hunks(patch), "f.rs").unwrap(),
            "fn a() {\r\n    x();\r\n}\r\nfn b() {\r\n    y();\r\n}\r\n"
        );
    }

    #[test]
    fn whitespace_drift_still_locates_and_context_keeps_the_files_text() {
        let text = "a  \n\tb\nc\n";
        let patch = "*** Begin Patch\n*** Update File: f\n a\n     b\n-c\n+C\n*** End Patch\n";
        assert_eq!(apply(text, &hunks(patch), "f").unwrap(), "a  \n\tb\nC\n");
    }

    #[test]
    fn a_unified_hunk_prefers_the_match_nearest_its_line_number_and_keeps_no_eol() {
        let text = "x\ny\nx\ny";
        let patch = "--- a/f\n+++ b/f\n@@ -3,2 +3,2 @@\n x\n-y\n\\ No newline at end of file\n+z\n";
        assert_eq!(apply(text, &hunks(patch), "f").unwrap(), "x\ny\nx\nz\n");
    }

    #[test]
    fn a_missing_hunk_names_itself_and_the_closest_region() {
        let text = "one\ntwo\nthree\n";
        let patch = "*** Begin Patch\n*** Update File: f\n one\n-TWO!\n+2\n*** End Patch\n";
        let error = apply(text, &hunks(patch), "f").unwrap_err();
        assert_eq!((error.index, error.count), (1, 1));
        assert!(
            error.message.contains("were not found in f")
                && error.message.contains("most similar region is lines 1-"),
            "{}",
            error.message
        );
    }

    #[test]
    fn untouched_lines_keep_their_own_line_endings() {
        let text = "a\r\nb\nc\r\n";
        let patch = "*** Begin Patch\n*** Update File: f\n a\n-b\n+B\n*** End Patch\n";
        assert_eq!(apply(text, &hunks(patch), "f").unwrap(), "a\r\nB\r\nc\r\n");
        let no_eol = "*** Begin Patch\n*** Update File: f\n+d\n*** End Patch\n";
        assert_eq!(apply("x", &hunks(no_eol), "f").unwrap(), "x\nd");
    }

    #[test]
    fn a_later_unified_hunk_is_placed_by_the_lines_earlier_hunks_added() {
        let text = "a\nb\nc\nd\n";
        let patch = "--- a/f\n+++ b/f\n@@ -1,1 +1,3 @@\n a\n+a2\n+a3\n@@ -3,0 +6,1 @@\n+X\n";
        assert_eq!(
            apply(text, &hunks(patch), "f").unwrap(),
            "a\na2\na3\nb\nc\nX\nd\n"
        );
    }

    #[test]
    fn consecutive_anchors_narrow_the_place_step_by_step() {
        let text = "class A:\n  def f():\n    x\nclass B:\n  def f():\n    x\n";
        let patch = "*** Begin Patch\n*** Update File: f\n@@ class B:\n@@   def f():\n-    x\n+    y\n*** End Patch\n";
        assert_eq!(
            apply(text, &hunks(patch), "f").unwrap(),
            "class A:\n  def f():\n    x\nclass B:\n  def f():\n    y\n"
        );
    }

    #[test]
    fn end_of_file_pins_the_hunk_and_pure_additions_append() {
        let text = "k\nv\nk\nv\n";
        let patch =
            "*** Begin Patch\n*** Update File: f\n k\n-v\n+w\n*** End of File\n*** End Patch\n";
        assert_eq!(apply(text, &hunks(patch), "f").unwrap(), "k\nv\nk\nw\n");
        let append = "*** Begin Patch\n*** Update File: f\n+tail\n*** End Patch\n";
        assert_eq!(apply("a\n", &hunks(append), "f").unwrap(), "a\ntail\n");
    }
}

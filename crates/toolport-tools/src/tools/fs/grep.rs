//! `grep`: the lines of files under a path that match a regular expression, with ripgrep's
//! own crates: the `ignore` crate's parallel walker (`walk.rs` says how it stays inside the
//! roots), `grep-regex` for the matcher and `grep-searcher` for the line-oriented search
//! (binary detection, BOM sniffing, context lines).
//!
//! Every file is opened with [`crate::workspace::Workspace::open_file`] (beneath its root,
//! secrets refused by the path and by the real path), then searched from that handle. The
//! walk runs on the blocking pool, one searcher per walker thread. A file's matches are
//! gathered first (and dropped whole if the file turns out to be binary), then added to one
//! shared [`Collector`] under the two caps, `max_results` and the `read_file` byte budget;
//! the walk stops at the first match that does not fit. The result is sorted by path and
//! line; when it was cut short, which files' matches made it in depends on the walk's order.

use std::collections::VecDeque;
use std::io;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use grep_matcher::Matcher;
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use ignore::WalkState;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::settings::FsSettings;
use super::{ANNOTATIONS, CATEGORY, blocking, walk};
use crate::settings::human_bytes;
use crate::tool::{ToolContext, ToolError};
use crate::typed::{ToolSpec, TypedTool};
use crate::workspace::Workspace;

/// Matching lines returned when the call does not say: enough to see where something is
/// used without flooding the model's context; `max_results` asks for more.
const DEFAULT_MAX_RESULTS: u64 = 100;
/// The most matching lines one call may ask for (the byte budget usually ends it sooner).
const MAX_RESULTS: u64 = 100_000;
/// The most context lines on each side of a match: more is reading the file, which
/// `read_file` does with paging.
const MAX_CONTEXT: u64 = 10;
/// Lines longer than this (minified code, data) are shortened: one such line could otherwise
/// fill the whole budget.
const MAX_LINE_BYTES: usize = 400;
/// Of a shortened matching line, about this much is kept before the match.
const LEAD_BYTES: usize = 100;
/// Counted per match on top of its text (its path is counted too), for its JSON keys,
/// punctuation and numbers (~70 bytes), so the byte budget holds for the result as sent.
const MATCH_OVERHEAD: usize = 96;
/// Counted per context line for its quotes and comma.
const LINE_OVERHEAD: usize = 4;
/// Counted once (with the searched path) for the result's other fields.
const RESULT_OVERHEAD: usize = 128;
/// Marks where a shortened line was cut.
const ELLIPSIS: &str = "…";

/// The tool's description, stating the operator's real limits.
fn description(settings: &FsSettings) -> String {
    format!(
        "Search the contents of files under a directory inside the workspace roots for a regular expression (Rust regex syntax, as ripgrep; fixed_strings for a literal). Returns the matching lines with their file path (absolute), line number and optional context lines, sorted by path and line. Files matched by .gitignore, hidden files (unless include_hidden), binary files and secrets (.env, keys) are skipped; symbolic links are not followed. At most max_results lines (default {DEFAULT_MAX_RESULTS}) and {} of results are returned; `truncated` says when there were more. Lines longer than {MAX_LINE_BYTES} bytes are shortened around the match.",
        human_bytes(settings.read_max_bytes)
    )
}

/// Arguments of `grep`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Params {
    /// The regular expression (Rust regex syntax, as ripgrep: `fn\s+\w+`, `(?i)todo`), or the
    /// literal text to find when fixed_strings is true. Matched within one line at a time.
    pattern: String,
    /// The directory (or one file) to search: relative to the first workspace root, or
    /// absolute inside a root. Default "." (the first root).
    #[serde(default = "default_path")]
    path: String,
    /// Only search files matching this glob (gitignore syntax): "*.rs" matches a file name at
    /// any depth, "src/**/*.ts" a path relative to `path`, "*.{js,ts}" either extension.
    glob: Option<String>,
    /// Match without regard to letter case.
    #[serde(default)]
    case_insensitive: bool,
    /// Treat the pattern as literal text, not a regular expression.
    #[serde(default)]
    fixed_strings: bool,
    /// Lines of context to return before and after each matching line (0 to 10).
    #[serde(default)]
    #[schemars(range(max = 10))]
    context: u64,
    /// Most matching lines to return (1 to 100000). The result is also capped in bytes.
    #[serde(default = "default_max_results")]
    #[schemars(range(min = 1, max = 100_000))]
    max_results: u64,
    /// Also search hidden files and directories (names starting with '.').
    #[serde(default)]
    include_hidden: bool,
}

fn default_path() -> String {
    ".".into()
}
fn default_max_results() -> u64 {
    DEFAULT_MAX_RESULTS
}

/// One matching line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub(crate) struct GrepMatch {
    /// Absolute path of the file.
    path: String,
    /// 1-based line number.
    line_number: u64,
    /// The line, without its line ending. A line longer than 400 bytes is cut to about 400
    /// bytes around the first match (about 100 bytes before it), with "…" where it was cut.
    line: String,
    /// The context lines before it, in order (longer ones cut to their first 400 bytes + "…").
    before: Vec<String>,
    /// The context lines after it, in order (cut like `before`).
    after: Vec<String>,
}

/// The structured result of `grep`.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct GrepResult {
    /// Absolute path of the searched directory or file.
    path: String,
    /// The matching lines, sorted by path and line number.
    matches: Vec<GrepMatch>,
    /// Number of files searched (binary files and files that could not be read are not counted).
    files_searched: u64,
    /// True when max_results or the size limit cut the result short: there are more matches.
    truncated: bool,
    /// Which cap cut the result, for the text rendering.
    #[serde(skip)]
    cut_by: Option<Cap>,
}

/// The cap that cut a result short.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cap {
    Results(usize),
    Bytes(usize),
}

/// The `grep` tool.
#[derive(Debug, Clone)]
pub(crate) struct Grep {
    settings: FsSettings,
}

impl Grep {
    /// The tool with the operator's limits.
    pub(crate) fn new(settings: &FsSettings) -> Self {
        Self {
            settings: settings.clone(),
        }
    }
}

#[async_trait]
impl TypedTool for Grep {
    type Params = Params;
    type Output = GrepResult;

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "grep",
            title: "Search file contents",
            description: description(&self.settings),
            purpose: "Find where something is defined or used across a project: a function, a type, an error message, a setting. Search first, then read_file the interesting lines; narrow a broad search with path or glob rather than raising max_results.",
            example: json!({"pattern": "fn\\s+main", "path": "src", "glob": "*.rs", "context": 2}),
            category: CATEGORY,
            tags: &["filesystem", "read", "search", "grep", "regex"],
            annotations: ANNOTATIONS,
        }
    }

    fn render(&self, output: &GrepResult) -> String {
        render(output)
    }

    const PAYLOAD: &'static [&'static str] = &["matches"];

    fn summary(&self, output: &GrepResult) -> String {
        summary(output)
    }

    async fn run(&self, p: Params, ctx: &ToolContext) -> Result<GrepResult, ToolError> {
        let matcher = build_matcher(&p)?;
        let caps = Caps {
            max_results: usize::try_from(p.max_results.clamp(1, MAX_RESULTS)).unwrap_or(1),
            max_bytes: usize::try_from(self.settings.read_page_bytes(ctx)).unwrap_or(usize::MAX),
        };
        let workspace = ctx.workspace.clone();
        let cancel = ctx.cancel.clone();
        blocking(move || search(&workspace, &p, &matcher, caps, &cancel)).await
    }
}

/// The matcher for the call's pattern; a bad regex is an error naming its position.
fn build_matcher(p: &Params) -> Result<RegexMatcher, ToolError> {
    if !p.fixed_strings {
        check_syntax(&p.pattern, p.case_insensitive)?;
    }
    RegexMatcherBuilder::new()
        .case_insensitive(p.case_insensitive)
        .fixed_strings(p.fixed_strings)
        .line_terminator(Some(b'\n'))
        .build(&p.pattern)
        .map_err(|e| {
            ToolError::InvalidArguments(format!(
                "the pattern {:?} cannot be used: {e}. grep matches within one line at a time, so a pattern cannot match a line break; search for each line's part separately",
                p.pattern
            ))
        })
}

/// Parse the pattern with the regex parser itself, for an error that says where it is wrong
/// (grep-regex reports only the parser's message).
fn check_syntax(pattern: &str, case_insensitive: bool) -> Result<(), ToolError> {
    let Err(error) = regex_syntax::ParserBuilder::new()
        .case_insensitive(case_insensitive)
        .build()
        .parse(pattern)
    else {
        return Ok(());
    };
    let (what, span) = match &error {
        regex_syntax::Error::Parse(e) => (e.kind().to_string(), Some(*e.span())),
        regex_syntax::Error::Translate(e) => (e.kind().to_string(), Some(*e.span())),
        other => (other.to_string(), None),
    };
    let at = span.map_or_else(String::new, |span| {
        format!(
            " at character {} (byte offset {})",
            span.start.column, span.start.offset
        )
    });
    Err(ToolError::InvalidArguments(format!(
        "invalid regular expression {pattern:?}: {what}{at}. Patterns use Rust regex syntax, as ripgrep does; escape a special character with a backslash (\\( \\[ \\. \\*), or pass fixed_strings: true to search for the text literally"
    )))
}

/// The two caps of a call.
#[derive(Debug, Clone, Copy)]
struct Caps {
    max_results: usize,
    max_bytes: usize,
}

fn search(
    workspace: &Arc<Workspace>,
    p: &Params,
    matcher: &RegexMatcher,
    caps: Caps,
    cancel: &CancellationToken,
) -> Result<GrepResult, ToolError> {
    let start = walk::start(workspace, &p.path)?;
    let filter = p
        .glob
        .as_deref()
        .map(|glob| walk::GlobFilter::new(&start.path, glob))
        .transpose()?;
    let walker = walk::builder(workspace, &start, p.include_hidden).build_parallel();
    let collector = Mutex::new(Collector::new(
        caps,
        RESULT_OVERHEAD + start.path.as_os_str().len(),
    ));
    let stop = AtomicBool::new(false);
    let searched = AtomicU64::new(0);
    let context = usize::try_from(p.context.min(MAX_CONTEXT)).unwrap_or(0);
    walker.run(|| {
        let mut searcher = SearcherBuilder::new()
            .binary_detection(BinaryDetection::quit(0))
            .line_number(true)
            .before_context(context)
            .after_context(context)
            .build();
        let (collector, stop, searched, filter) = (&collector, &stop, &searched, &filter);
        Box::new(move |entry| {
            if stop.load(Ordering::Relaxed) || cancel.is_cancelled() {
                return WalkState::Quit;
            }
            let Ok(entry) = entry else {
                return WalkState::Continue;
            };
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                return WalkState::Continue;
            }
            // The glob selects among the files found under the start; a file named as the
            // start is searched.
            if entry.depth() > 0 && filter.as_ref().is_some_and(|f| !f.matches(entry.path())) {
                return WalkState::Continue;
            }
            // A secret, a file swapped for a link out of the root, or one that vanished: not
            // searched (the walk is not a way to probe what the workspace refuses).
            let Some(Ok(opened)) = entry.path().to_str().map(|path| workspace.open_file(path))
            else {
                return WalkState::Continue;
            };
            let mut sink = FileSink {
                matcher,
                hits: Hits::new(context),
                binary: false,
                // One more than the call can return, to know that there are more.
                limit: caps.max_results + 1,
                stop,
                cancel,
            };
            if searcher
                .search_file(matcher, &opened.file, &mut sink)
                .is_err()
                || sink.binary
            {
                return WalkState::Continue;
            }
            searched.fetch_add(1, Ordering::Relaxed);
            if sink.hits.hits.is_empty() {
                return WalkState::Continue;
            }
            let display = opened.display.display().to_string();
            let fits = collector
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .add(&display, sink.hits.hits);
            if fits {
                WalkState::Continue
            } else {
                stop.store(true, Ordering::Relaxed);
                WalkState::Quit
            }
        })
    });
    if cancel.is_cancelled() {
        return Err(ToolError::Cancelled("grep was cancelled".into()));
    }
    let collector = collector
        .into_inner()
        .unwrap_or_else(PoisonError::into_inner);
    let mut matches = collector.matches;
    matches.sort_by(|a, b| (&a.path, a.line_number).cmp(&(&b.path, b.line_number)));
    Ok(GrepResult {
        path: start.show(&start.path).display().to_string(),
        matches,
        files_searched: searched.into_inner(),
        truncated: collector.cut_by.is_some(),
        cut_by: collector.cut_by,
    })
}

/// Gathers the matches of every file under the caps.
#[derive(Debug)]
struct Collector {
    caps: Caps,
    matches: Vec<GrepMatch>,
    bytes: usize,
    cut_by: Option<Cap>,
}

impl Collector {
    /// A collector whose budget starts with `reserved` bytes spent.
    fn new(caps: Caps, reserved: usize) -> Self {
        Self {
            caps,
            matches: Vec::new(),
            bytes: reserved,
            cut_by: None,
        }
    }

    /// Add a file's matches while they fit; false once one did not (the walk can stop).
    fn add(&mut self, path: &str, hits: Vec<Hit>) -> bool {
        for hit in hits {
            let cost = MATCH_OVERHEAD
                + path.len()
                + hit.line.len()
                + hit
                    .before
                    .iter()
                    .chain(&hit.after)
                    .map(|line| line.len() + LINE_OVERHEAD)
                    .sum::<usize>();
            if self.matches.len() >= self.caps.max_results {
                self.cut_by = Some(Cap::Results(self.caps.max_results));
                return false;
            }
            if self.bytes + cost > self.caps.max_bytes {
                self.cut_by = Some(Cap::Bytes(self.caps.max_bytes));
                return false;
            }
            self.bytes += cost;
            self.matches.push(GrepMatch {
                path: path.to_owned(),
                line_number: hit.line_number,
                line: hit.line,
                before: hit.before,
                after: hit.after,
            });
        }
        true
    }
}

/// Receives one file's lines from the searcher.
struct FileSink<'a> {
    matcher: &'a RegexMatcher,
    hits: Hits,
    binary: bool,
    limit: usize,
    stop: &'a AtomicBool,
    cancel: &'a CancellationToken,
}

impl Sink for FileSink<'_> {
    type Error = io::Error;

    fn matched(&mut self, _: &Searcher, found: &SinkMatch<'_>) -> Result<bool, io::Error> {
        let line = trim_line_end(found.bytes());
        let at = self
            .matcher
            .find(line)
            .ok()
            .flatten()
            .map_or(0..0, |m| m.start()..m.end());
        self.hits
            .line(found.line_number().unwrap_or(0), line, Some(at));
        Ok(self.hits.hits.len() < self.limit
            && !self.stop.load(Ordering::Relaxed)
            && !self.cancel.is_cancelled())
    }

    fn context(&mut self, _: &Searcher, context: &SinkContext<'_>) -> Result<bool, io::Error> {
        self.hits.line(
            context.line_number().unwrap_or(0),
            trim_line_end(context.bytes()),
            None,
        );
        Ok(true)
    }

    fn context_break(&mut self, _: &Searcher) -> Result<bool, io::Error> {
        self.hits.gap();
        Ok(true)
    }

    fn binary_data(&mut self, _: &Searcher, _: u64) -> Result<bool, io::Error> {
        self.binary = true;
        Ok(false)
    }
}

/// A line without its `\n` or `\r\n`.
fn trim_line_end(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// A matching line with its context.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Hit {
    line_number: u64,
    line: String,
    before: Vec<String>,
    after: Vec<String>,
}

/// Turns the searcher's stream of lines (matches and context, contiguous between gaps) into
/// hits with their own `before` and `after` lines. A line can be context of two matches, or a
/// match and context of another; each hit gets it.
#[derive(Debug)]
struct Hits {
    context: usize,
    /// The last `context` lines seen, with their numbers.
    recent: VecDeque<(u64, String)>,
    hits: Vec<Hit>,
    /// The first hit that may still take lines after it.
    open: usize,
}

impl Hits {
    fn new(context: usize) -> Self {
        Self {
            context,
            recent: VecDeque::with_capacity(context),
            hits: Vec::new(),
            open: 0,
        }
    }

    /// The next line: `found` is the first match's byte range for a matching line, `None`
    /// for a context line.
    fn line(&mut self, number: u64, bytes: &[u8], found: Option<Range<usize>>) {
        let text = (self.context > 0).then(|| shorten(bytes, 0..0));
        if let Some(text) = &text {
            let context = self.context;
            for hit in &mut self.hits[self.open..] {
                let next = hit.line_number + hit.after.len() as u64 + 1;
                if hit.after.len() < context && next == number {
                    hit.after.push(text.clone());
                }
            }
            while self
                .hits
                .get(self.open)
                .is_some_and(|hit| hit.after.len() >= context)
            {
                self.open += 1;
            }
        }
        if let Some(found) = found {
            let window = self.context as u64;
            let before = self
                .recent
                .iter()
                .filter(|(n, _)| *n < number && n + window >= number)
                .map(|(_, t)| t.clone())
                .collect();
            self.hits.push(Hit {
                line_number: number,
                line: shorten(bytes, found),
                before,
                after: Vec::new(),
            });
        }
        if let Some(text) = text {
            if self.recent.len() == self.context {
                self.recent.pop_front();
            }
            self.recent.push_back((number, text));
        }
    }

    /// A break between groups of contiguous lines.
    fn gap(&mut self) {
        self.recent.clear();
        self.open = self.hits.len();
    }
}

/// A line as text, shortened when it is longer than [`MAX_LINE_BYTES`]: to a window of that
/// size starting about [`LEAD_BYTES`] before `found` (the match; `0..0` keeps the start),
/// with [`ELLIPSIS`] where it was cut. Cuts never split a UTF-8 character; invalid UTF-8 is
/// replaced with U+FFFD.
fn shorten(line: &[u8], found: Range<usize>) -> String {
    if line.len() <= MAX_LINE_BYTES {
        return String::from_utf8_lossy(line).into_owned();
    }
    let mut start = found.start.min(line.len()).saturating_sub(LEAD_BYTES);
    // Keep the window full when the match is near the end.
    start = start.min(line.len() - MAX_LINE_BYTES);
    while start > 0 && is_continuation(line[start]) {
        start -= 1;
    }
    let mut end = (start + MAX_LINE_BYTES).min(line.len());
    while end < line.len() && is_continuation(line[end]) {
        end -= 1;
    }
    let mut out = String::with_capacity(end - start + 2 * ELLIPSIS.len());
    if start > 0 {
        out.push_str(ELLIPSIS);
    }
    out.push_str(&String::from_utf8_lossy(&line[start..end]));
    if end < line.len() {
        out.push_str(ELLIPSIS);
    }
    out
}

/// A byte inside a UTF-8 character (not its first byte).
fn is_continuation(byte: u8) -> bool {
    byte & 0xC0 == 0x80
}

/// The text a model reads: matches grouped by file, `N:` for a matching line and `N-` for
/// context, then a summary.
fn render(r: &GrepResult) -> String {
    if r.matches.is_empty() {
        return format!(
            "No matches in {} ({} files searched).",
            r.path, r.files_searched
        );
    }
    let mut text = String::new();
    let mut files = 0;
    let mut last_path: Option<&str> = None;
    for m in &r.matches {
        if last_path != Some(m.path.as_str()) {
            if last_path.is_some() {
                text.push('\n');
            }
            text.push_str(&m.path);
            text.push('\n');
            last_path = Some(&m.path);
            files += 1;
        } else if !m.before.is_empty() || !m.after.is_empty() {
            text.push_str("--\n");
        }
        let first = m.line_number.saturating_sub(m.before.len() as u64);
        for (i, line) in m.before.iter().enumerate() {
            text.push_str(&format!("{}-{line}\n", first + i as u64));
        }
        text.push_str(&format!("{}:{}\n", m.line_number, m.line));
        for (i, line) in m.after.iter().enumerate() {
            text.push_str(&format!("{}-{line}\n", m.line_number + 1 + i as u64));
        }
    }
    text.push('\n');
    text.push_str(&footer(r, files, ""));
    text
}

/// The text beside a structured result that carries the matches.
fn summary(r: &GrepResult) -> String {
    if r.matches.is_empty() {
        return render(r);
    }
    // Matches come grouped by file.
    let files = r.matches.chunk_by(|a, b| a.path == b.path).count() as u64;
    footer(r, files, "; the matches are in structuredContent.matches")
}

/// The counts, and what to do when the result was cut; `more` goes before the closing bracket.
fn footer(r: &GrepResult, files: u64, more: &str) -> String {
    let mut text = format!(
        "[{} matching lines in {files} files; {} files searched",
        r.matches.len(),
        r.files_searched
    );
    match r.cut_by {
        Some(Cap::Results(n)) => text.push_str(&format!(
            "; truncated at max_results={n}: there are more matches. Narrow the search with path or glob, or raise max_results"
        )),
        Some(Cap::Bytes(n)) => text.push_str(&format!(
            "; truncated at the size limit of {}: there are more matches. Narrow the search with path or glob",
            human_bytes(n as u64)
        )),
        None => {}
    }
    text.push_str(more);
    text.push(']');
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_lines_are_kept_whole() {
        assert_eq!(shorten(b"let x = 1;", 4..5), "let x = 1;");
        assert_eq!(shorten(&[b'a'; MAX_LINE_BYTES], 0..0).len(), MAX_LINE_BYTES);
    }

    #[test]
    fn a_long_line_is_cut_around_the_match() {
        let mut line = vec![b'a'; 1000];
        line[600..606].copy_from_slice(b"NEEDLE");
        let cut = shorten(&line, 600..606);
        let expected = format!(
            "{ELLIPSIS}{}NEEDLE{}{ELLIPSIS}",
            "a".repeat(LEAD_BYTES),
            "a".repeat(MAX_LINE_BYTES - LEAD_BYTES - 6)
        );
        assert_eq!(cut, expected);
        // Near the start: no cut before; near the end: the window stays full.
        assert!(shorten(&line, 10..12).starts_with("aaa"));
        let end = shorten(&line, 995..1000);
        assert!(end.starts_with(ELLIPSIS) && !end.ends_with(ELLIPSIS));
        assert_eq!(end.len(), ELLIPSIS.len() + MAX_LINE_BYTES);
    }

    #[test]
    fn cuts_never_split_a_character() {
        let line = "é".repeat(500);
        let cut = shorten(line.as_bytes(), 501..503);
        assert!(!cut.contains('\u{FFFD}'), "{cut}");
        let head = shorten(line.as_bytes(), 0..0);
        assert!(head.ends_with(ELLIPSIS) && !head.contains('\u{FFFD}'));
    }

    /// Feed `(number, text, is_match)` lines with gaps (`None`) into [`Hits`].
    fn hits(context: usize, lines: &[Option<(u64, &str, bool)>]) -> Vec<Hit> {
        let mut h = Hits::new(context);
        for line in lines {
            match line {
                Some((n, t, m)) => h.line(*n, t.as_bytes(), m.then_some(0..1)),
                None => h.gap(),
            }
        }
        h.hits
    }

    fn hit(n: u64, line: &str, before: &[&str], after: &[&str]) -> Hit {
        let own = |v: &[&str]| v.iter().map(ToString::to_string).collect();
        Hit {
            line_number: n,
            line: line.into(),
            before: own(before),
            after: own(after),
        }
    }

    #[test]
    fn each_match_gets_its_own_context() {
        // Matches at 3 and 4 share context: each sees the other as a neighbour.
        let got = hits(
            2,
            &[
                Some((1, "a", false)),
                Some((2, "b", false)),
                Some((3, "M1", true)),
                Some((4, "M2", true)),
                Some((5, "e", false)),
                Some((6, "f", false)),
                None,
                Some((20, "x", false)),
                Some((21, "M3", true)),
            ],
        );
        assert_eq!(
            got,
            vec![
                hit(3, "M1", &["a", "b"], &["M2", "e"]),
                hit(4, "M2", &["b", "M1"], &["e", "f"]),
                hit(21, "M3", &["x"], &[]),
            ]
        );
        assert_eq!(
            hits(0, &[Some((7, "M", true))]),
            vec![hit(7, "M", &[], &[])]
        );
    }

    #[test]
    fn a_cancelled_call_stops_the_walk() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..50 {
            std::fs::write(dir.path().join(format!("f{i}.txt")), "needle\n").unwrap();
        }
        let workspace = Arc::new(Workspace::new(&[dir.path().to_path_buf()], &[]).unwrap());
        let p: Params = serde_json::from_value(json!({"pattern": "needle"})).unwrap();
        let matcher = build_matcher(&p).unwrap();
        let caps = Caps {
            max_results: 100,
            max_bytes: 1 << 20,
        };
        let cancel = CancellationToken::new();
        let found = search(&workspace, &p, &matcher, caps, &cancel).unwrap();
        assert_eq!(found.matches.len(), 50);
        cancel.cancel();
        assert_eq!(
            search(&workspace, &p, &matcher, caps, &cancel).map(|r| r.matches.len()),
            Err(ToolError::Cancelled("grep was cancelled".into()))
        );
    }

    #[test]
    fn a_bad_regex_names_its_position() {
        let err = check_syntax("foo(bar", false).unwrap_err().to_string();
        assert!(
            err.contains("unclosed group") && err.contains("at character 4"),
            "{err}"
        );
        assert!(check_syntax(r"fn\s+\w+", false).is_ok());
    }
}

//! The two patch forms models write, parsed into one list of file changes: codex's envelope
//! (`*** Begin Patch`, `*** Add File:`, `*** Delete File:`, `*** Update File:` with an
//! optional `*** Move to:`, hunks after `@@` lines, `*** End of File`, `*** End Patch`) and the
//! unified diff (`--- a/x` / `+++ b/x` / `@@ -l,n +l,n @@`, with git's `diff --git`, `new
//! file mode`, `deleted file mode`, `rename from`/`rename to` and `/dev/null`). Pure: no file
//! is touched here. Hand-written because no crate reads both forms (diffy reads one unified
//! file and applies it exactly; models need the tolerant location of `hunks.rs`).

/// What one line of a hunk does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    /// A line the file has and keeps.
    Context,
    /// A line the file has and loses.
    Remove,
    /// A line the file gains.
    Add,
}

/// One hunk of an update: where it goes and what it does.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Hunk {
    /// The envelope's `@@ text` lines: each found after the one before (`@@ class A` then
    /// `@@ def f():`), the hunk looked for after the last.
    pub(crate) anchors: Vec<String>,
    /// The unified diff's old start line (1-based): where the hunk most likely is.
    pub(crate) line_hint: Option<usize>,
    /// The lines, in order.
    pub(crate) lines: Vec<(Op, String)>,
    /// The hunk ends at the end of the file (`*** End of File`).
    pub(crate) at_eof: bool,
    /// `\ No newline at end of file` after its last old line / its last new line.
    pub(crate) old_no_eol: bool,
    pub(crate) new_no_eol: bool,
}

impl Hunk {
    /// The lines the file has where the hunk applies (context and removed).
    pub(crate) fn old(&self) -> Vec<&str> {
        self.side(Op::Remove)
    }

    /// The lines it has after (context and added).
    pub(crate) fn new_lines(&self) -> Vec<&str> {
        self.side(Op::Add)
    }

    fn side(&self, change: Op) -> Vec<&str> {
        self.lines
            .iter()
            .filter(|(op, _)| *op == Op::Context || *op == change)
            .map(|(_, line)| line.as_str())
            .collect()
    }
}

/// One file's change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FileChange {
    /// A new file with these lines (each ends in a line break unless `no_eol`).
    Add {
        path: String,
        lines: Vec<String>,
        no_eol: bool,
    },
    /// Delete the file.
    Delete { path: String },
    /// Change the file by its hunks, and move it when `move_to` is given.
    Update {
        path: String,
        move_to: Option<String>,
        hunks: Vec<Hunk>,
    },
}

impl FileChange {
    /// The path the change names first.
    pub(crate) fn path(&self) -> &str {
        match self {
            Self::Add { path, .. } | Self::Delete { path } | Self::Update { path, .. } => path,
        }
    }
}

/// Why a patch cannot be read: the 1-based line and what is wrong there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ParseError {
    pub(crate) line: usize,
    pub(crate) message: String,
}

fn error(line: usize, message: impl Into<String>) -> ParseError {
    ParseError {
        line,
        message: message.into(),
    }
}

/// Read `patch` in whichever form it is written.
pub(crate) fn parse(patch: &str) -> Result<Vec<FileChange>, ParseError> {
    let lines: Vec<&str> = patch
        .lines()
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect();
    let first = lines
        .iter()
        .position(|l| !l.trim().is_empty())
        .ok_or_else(|| error(1, "the patch is empty"))?;
    if lines[first].trim_start().starts_with("```") {
        return Err(error(
            first + 1,
            "the patch is wrapped in a code fence (```); pass the patch itself, starting with `*** Begin Patch` or a `--- <path>` header",
        ));
    }
    if let Some(begin) = lines.iter().position(|l| l.trim() == "*** Begin Patch")
        && begin != first
    {
        return Err(error(
            first + 1,
            "there is text before `*** Begin Patch`; the patch must start with it",
        ));
    }
    let changes = if lines[first].trim() == "*** Begin Patch" {
        envelope(&lines, first)?
    } else {
        unified(&lines)?
    };
    if changes.is_empty() {
        return Err(error(
            lines.len(),
            "the patch changes no file: it has no `*** Add File:`/`*** Update File:`/`*** Delete File:` section and no `--- `/`+++ ` file header",
        ));
    }
    Ok(changes)
}

/// Codex's envelope, from the `*** Begin Patch` line at `start`.
fn envelope(lines: &[&str], start: usize) -> Result<Vec<FileChange>, ParseError> {
    let mut changes = Vec::new();
    let mut i = start + 1;
    let header = |line: &str, key: &str| line.strip_prefix(key).map(|p| p.trim().to_owned());
    loop {
        let Some(line) = lines.get(i) else {
            return Err(error(i, "the patch ends without `*** End Patch`"));
        };
        let n = i + 1;
        if line.trim() == "*** End Patch" {
            break;
        }
        if line.trim().is_empty() {
            i += 1;
            continue;
        }
        if let Some(path) = header(line, "*** Add File:") {
            i += 1;
            let mut content = Vec::new();
            while let Some(l) = lines.get(i).filter(|l| !l.starts_with("***")) {
                let body = match l.strip_prefix('+') {
                    Some(body) => body,
                    // A blank line: the end of the section when only blank lines follow before
                    // the next `***` line; else an empty line whose `+` the model dropped.
                    None if l.trim().is_empty() => {
                        let rest_blank = lines[i..]
                            .iter()
                            .take_while(|l| !l.starts_with("***"))
                            .all(|l| l.trim().is_empty());
                        if rest_blank {
                            i += 1;
                            continue;
                        }
                        ""
                    }
                    None => {
                        return Err(error(
                            i + 1,
                            "every line of an `*** Add File:` section starts with `+`",
                        ));
                    }
                };
                content.push(body.to_owned());
                i += 1;
            }
            changes.push(FileChange::Add {
                path: nonempty(path, n)?,
                lines: content,
                no_eol: false,
            });
        } else if let Some(path) = header(line, "*** Delete File:") {
            changes.push(FileChange::Delete {
                path: nonempty(path, n)?,
            });
            i += 1;
        } else if let Some(path) = header(line, "*** Update File:") {
            i += 1;
            let move_to = match lines.get(i).and_then(|l| header(l, "*** Move to:")) {
                Some(to) => {
                    i += 1;
                    Some(nonempty(to, i)?)
                }
                None => None,
            };
            let mut hunks: Vec<Hunk> = Vec::new();
            let mut current: Option<Hunk> = None;
            while let Some(l) = lines.get(i) {
                if *l == "*** End of File" {
                    let hunk = current.get_or_insert_with(Hunk::default);
                    hunk.at_eof = true;
                    i += 1;
                    continue;
                }
                if l.starts_with("***") {
                    break;
                }
                if let Some(rest) = l.strip_prefix("@@") {
                    let anchor = rest.trim();
                    // `@@ class A` right after `@@ ...` with no lines between: one more anchor
                    // for the same hunk.
                    let mut hunk = match current.take() {
                        Some(h) if h.lines.is_empty() => h,
                        done => {
                            hunks.extend(done.and_then(finish));
                            Hunk::default()
                        }
                    };
                    if !anchor.is_empty() {
                        hunk.anchors.push(anchor.to_owned());
                    }
                    current = Some(hunk);
                    i += 1;
                    continue;
                }
                let (op, text) = match l.chars().next() {
                    Some(' ') => (Op::Context, &l[1..]),
                    Some('-') => (Op::Remove, &l[1..]),
                    Some('+') => (Op::Add, &l[1..]),
                    // Models drop the space of an empty context line.
                    None => (Op::Context, ""),
                    Some(_) => {
                        return Err(error(
                            i + 1,
                            format!(
                                "a line of an `*** Update File: {path}` hunk starts with neither ` ` (context), `-` (removed) nor `+` (added): {l:?}"
                            ),
                        ));
                    }
                };
                current
                    .get_or_insert_with(Hunk::default)
                    .lines
                    .push((op, text.to_owned()));
                i += 1;
            }
            hunks.extend(current.take().and_then(finish));
            if hunks.is_empty() && move_to.is_none() {
                return Err(error(
                    n,
                    format!("`*** Update File: {path}` has no hunk (no ` `, `-` or `+` lines)"),
                ));
            }
            changes.push(FileChange::Update {
                path: nonempty(path, n)?,
                move_to,
                hunks,
            });
        } else {
            return Err(error(
                n,
                format!(
                    "expected `*** Add File: <path>`, `*** Update File: <path>`, `*** Delete File: <path>` or `*** End Patch`, found {line:?}"
                ),
            ));
        }
    }
    Ok(changes)
}

/// An envelope hunk as read, tidied: blank context lines at its start and end are dropped
/// (models leave a blank line after a section header and before the next one; context at the
/// edges only narrows where the hunk is), and a hunk of nothing but blank context is no hunk.
fn finish(mut hunk: Hunk) -> Option<Hunk> {
    let leading = hunk
        .lines
        .iter()
        .take_while(|(op, line)| *op == Op::Context && line.trim().is_empty())
        .count();
    hunk.lines.drain(..leading);
    while hunk
        .lines
        .last()
        .is_some_and(|(op, line)| *op == Op::Context && line.trim().is_empty())
        && !hunk.at_eof
    {
        hunk.lines.pop();
    }
    let only_blank = hunk
        .lines
        .iter()
        .all(|(op, line)| *op == Op::Context && line.trim().is_empty());
    (!only_blank).then_some(hunk)
}

fn nonempty(path: String, line: usize) -> Result<String, ParseError> {
    if path.is_empty() {
        Err(error(line, "the section names no path"))
    } else {
        Ok(path)
    }
}

/// A path of a `---`/`+++` header: tab-separated timestamp cut; `None` for `/dev/null`.
fn header_path(rest: &str) -> Option<String> {
    let path = rest.split('\t').next().unwrap_or(rest).trim_end();
    let path = path
        .strip_prefix('"')
        .and_then(|p| p.strip_suffix('"'))
        .unwrap_or(path);
    (path != "/dev/null").then(|| path.to_owned())
}

/// git's `a/` and `b/` prefixes, dropped when both sides carry them.
fn strip_prefixes(old: Option<String>, new: Option<String>) -> (Option<String>, Option<String>) {
    let prefixed = |p: &Option<String>, pre: &str| p.as_ref().is_none_or(|p| p.starts_with(pre));
    if prefixed(&old, "a/") && prefixed(&new, "b/") && (old.is_some() || new.is_some()) {
        (
            old.map(|p| p["a/".len()..].to_owned()),
            new.map(|p| p["b/".len()..].to_owned()),
        )
    } else {
        (old, new)
    }
}

/// `-l,n` or `+l,n` (n defaults to 1).
fn range(field: &str, sign: char) -> Option<(usize, usize)> {
    let field = field.strip_prefix(sign)?;
    let (start, len) = field.split_once(',').unwrap_or((field, "1"));
    Some((start.parse().ok()?, len.parse().ok()?))
}

/// A unified diff of one or more files.
fn unified(lines: &[&str]) -> Result<Vec<FileChange>, ParseError> {
    let mut changes = Vec::new();
    let mut i = 0;
    // git's rename lines, which come before the `---`/`+++` headers (or alone).
    let mut rename: (Option<String>, Option<String>) = (None, None);
    // The `diff --git` section being read: its line, its text, and the changes before it.
    let mut section: Option<(usize, &str, usize)> = None;
    while i < lines.len() {
        let line = lines[i];
        if line.starts_with("diff --git ") {
            if let (Some(from), Some(to)) = rename.clone() {
                changes.push(FileChange::Update {
                    path: from,
                    move_to: Some(to),
                    hunks: Vec::new(),
                });
            }
            empty_section(section, changes.len())?;
            section = Some((i + 1, line, changes.len()));
            rename = (None, None);
            i += 1;
            continue;
        }
        if let Some(from) = line.strip_prefix("rename from ") {
            rename.0 = Some(from.to_owned());
            i += 1;
            continue;
        }
        if let Some(to) = line.strip_prefix("rename to ") {
            rename.1 = Some(to.to_owned());
            i += 1;
            continue;
        }
        if line.starts_with("@@") {
            return Err(error(
                i + 1,
                "a hunk without a file header: each file's hunks follow its `--- <path>` and `+++ <path>` lines",
            ));
        }
        let Some(old_header) = line.strip_prefix("--- ") else {
            i += 1;
            continue;
        };
        let new_header = lines
            .get(i + 1)
            .and_then(|l| l.strip_prefix("+++ "))
            .ok_or_else(|| {
                error(
                    i + 2,
                    "a `--- <path>` header is not followed by `+++ <path>`",
                )
            })?;
        let (old, new) = strip_prefixes(header_path(old_header), header_path(new_header));
        let header_line = i + 1;
        i += 2;
        let mut hunks = Vec::new();
        loop {
            // Blank lines between hunks (a model's separator) are skipped.
            let mut next = i;
            while lines.get(next).is_some_and(|l| l.trim().is_empty()) {
                next += 1;
            }
            match lines.get(next) {
                Some(l) if l.starts_with("@@") => i = next,
                Some(l) if is_stray(l, lines.get(next + 1)) => {
                    return Err(error(
                        next + 1,
                        format!(
                            "a ` `, `-` or `+` line outside any hunk: {l:?}; the counts in the hunk header above are too small, or a `@@ -start,count +start,count @@` header is missing"
                        ),
                    ));
                }
                _ => break,
            }
            let l = lines[i];
            let n = i + 1;
            let fields: Vec<&str> = l.split_whitespace().collect();
            let (Some(&"@@"), Some(old_range), Some(new_range)) = (
                fields.first(),
                fields.get(1).and_then(|f| range(f, '-')),
                fields.get(2).and_then(|f| range(f, '+')),
            ) else {
                return Err(error(
                    n,
                    format!(
                        "a hunk header must read `@@ -start,count +start,count @@`, found {l:?}"
                    ),
                ));
            };
            i += 1;
            let mut hunk = Hunk {
                line_hint: Some(old_range.0),
                ..Hunk::default()
            };
            let (mut old_left, mut new_left) = (old_range.1, new_range.1);
            while old_left > 0 || new_left > 0 {
                let Some(l) = lines.get(i) else {
                    return Err(error(
                        i,
                        format!(
                            "the hunk at line {n} ends early: {old_left} old and {new_left} new lines are missing (its header's counts must match its lines)"
                        ),
                    ));
                };
                let (op, text) = match l.chars().next() {
                    Some(' ') => (Op::Context, &l[1..]),
                    Some('-') => (Op::Remove, &l[1..]),
                    Some('+') => (Op::Add, &l[1..]),
                    None => (Op::Context, ""),
                    Some('\\') => {
                        mark_no_eol(&mut hunk);
                        i += 1;
                        continue;
                    }
                    Some(_) => {
                        return Err(error(
                            i + 1,
                            format!(
                                "a hunk line starts with neither ` `, `-` nor `+`: {l:?} (or the counts in the hunk header at line {n} are too large)"
                            ),
                        ));
                    }
                };
                let (takes_old, takes_new) = match op {
                    Op::Context => (true, true),
                    Op::Remove => (true, false),
                    Op::Add => (false, true),
                };
                if (takes_old && old_left == 0) || (takes_new && new_left == 0) {
                    return Err(error(
                        i + 1,
                        format!(
                            "the hunk at line {n} has more lines than its header counts (-{},{} +{},{})",
                            old_range.0, old_range.1, new_range.0, new_range.1
                        ),
                    ));
                }
                old_left -= usize::from(takes_old);
                new_left -= usize::from(takes_new);
                hunk.lines.push((op, text.to_owned()));
                i += 1;
            }
            // The marker after the hunk's last line.
            while lines.get(i).is_some_and(|l| l.starts_with('\\')) {
                mark_no_eol(&mut hunk);
                i += 1;
            }
            hunks.push(hunk);
        }
        let change = match (old, new) {
            (None, None) => {
                return Err(error(header_line, "both `---` and `+++` are /dev/null"));
            }
            (None, Some(path)) => {
                let no_eol = hunks.iter().any(|h| h.new_no_eol);
                FileChange::Add {
                    path,
                    lines: hunks
                        .iter()
                        .flat_map(|h| h.new_lines())
                        .map(str::to_owned)
                        .collect(),
                    no_eol,
                }
            }
            (Some(path), None) => FileChange::Delete { path },
            (Some(path), Some(to)) => {
                let renamed = rename.0.is_some() && rename.1.is_some();
                FileChange::Update {
                    move_to: (renamed || to != path).then_some(to),
                    path,
                    hunks,
                }
            }
        };
        rename = (None, None);
        changes.push(change);
    }
    if let (Some(from), Some(to)) = rename {
        changes.push(FileChange::Update {
            path: from,
            move_to: Some(to),
            hunks: Vec::new(),
        });
    }
    empty_section(section, changes.len())?;
    Ok(changes)
}

/// Refuse a `diff --git` section (its line number, its line, and how many changes there were
/// before it) that changed nothing: a binary patch, an empty new or deleted file, or a mode
/// change, none of which a text patch can carry.
fn empty_section(section: Option<(usize, &str, usize)>, now: usize) -> Result<(), ParseError> {
    match section {
        Some((line, header, before)) if before == now => Err(error(
            line,
            format!(
                "{header:?} has no text hunk and no rename (a binary file, an empty file, or a mode change), which apply_patch cannot apply; change such files with the other tools"
            ),
        )),
        _ => Ok(()),
    }
}

/// Whether `line` (followed by `next`) is a hunk line (` `, `-`, `+`) rather than the next
/// file's `--- `/`+++ ` header or git's own lines.
fn is_stray(line: &str, next: Option<&&str>) -> bool {
    let header = line.starts_with("--- ") && next.is_some_and(|n| n.starts_with("+++ "));
    !header && (line.starts_with(' ') || line.starts_with('-') || line.starts_with('+'))
}

/// A `\ No newline at end of file` marker: the line before it (the hunk's last so far) ends
/// its side of the file without a line break.
fn mark_no_eol(hunk: &mut Hunk) {
    match hunk.lines.last().map(|(op, _)| *op) {
        Some(Op::Remove) => hunk.old_no_eol = true,
        Some(Op::Add) => hunk.new_no_eol = true,
        _ => {
            hunk.old_no_eol = true;
            hunk.new_no_eol = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_envelope_reads_every_kind_of_section() {
        let patch = "*** Begin Patch\n*** Add File: new.txt\n+one\n+two\n*** Delete File: old.txt\n*** Update File: a.rs\n*** Move to: b.rs\n@@ fn main() {\n-    old();\n+    new();\n \n@@\n x\n*** End of File\n*** End Patch\n";
        let changes = parse(patch).unwrap();
        assert_eq!(changes.len(), 3);
        assert_eq!(
            changes[0],
            FileChange::Add {
                path: "new.txt".into(),
                lines: vec!["one".into(), "two".into()],
                no_eol: false
            }
        );
        assert_eq!(
            changes[1],
            FileChange::Delete {
                path: "old.txt".into()
            }
        );
        let FileChange::Update {
            path,
            move_to,
            hunks,
        } = &changes[2]
        else {
            panic!("{:?}", changes[2]);
        };
        assert_eq!((path.as_str(), move_to.as_deref()), ("a.rs", Some("b.rs")));
        assert_eq!(hunks.len(), 2);
        assert_eq!(hunks[0].anchors, ["fn main() {"]);
        // The blank context line before the next `@@` is dropped (trailing blank context).
        assert_eq!(hunks[0].old(), ["    old();"]);
        assert_eq!(hunks[0].new_lines(), ["    new();"]);
        assert!(hunks[1].at_eof && hunks[1].anchors.is_empty());
    }

    #[test]
    fn a_git_diff_reads_new_deleted_renamed_and_changed_files() {
        let patch = "diff --git a/src/x.rs b/src/x.rs\nindex 1..2 100644\n--- a/src/x.rs\n+++ b/src/x.rs\n@@ -2,3 +2,3 @@ fn f() {\n a\n-b\n+B\n c\ndiff --git a/n.txt b/n.txt\nnew file mode 100644\n--- /dev/null\n+++ b/n.txt\n@@ -0,0 +1,2 @@\n+hello\n+world\n\\ No newline at end of file\ndiff --git a/gone.txt b/gone.txt\ndeleted file mode 100644\n--- a/gone.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\ndiff --git a/from.rs b/to.rs\nsimilarity index 100%\nrename from from.rs\nrename to to.rs\n";
        let changes = parse(patch).unwrap();
        assert_eq!(changes.len(), 4, "{changes:?}");
        let FileChange::Update {
            path,
            move_to,
            hunks,
        } = &changes[0]
        else {
            panic!("{:?}", changes[0]);
        };
        assert_eq!(
            (path.as_str(), move_to, hunks[0].line_hint),
            ("src/x.rs", &None, Some(2))
        );
        assert_eq!(
            changes[1],
            FileChange::Add {
                path: "n.txt".into(),
                lines: vec!["hello".into(), "world".into()],
                no_eol: true
            }
        );
        assert_eq!(
            changes[2],
            FileChange::Delete {
                path: "gone.txt".into()
            }
        );
        assert_eq!(
            changes[3],
            FileChange::Update {
                path: "from.rs".into(),
                move_to: Some("to.rs".into()),
                hunks: Vec::new()
            }
        );
    }

    #[test]
    fn blank_separator_lines_are_not_content_and_stray_hunk_lines_are_errors() {
        let two = parse("--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+A\n\n@@ -3 +3 @@\n-c\n+C\n").unwrap();
        let FileChange::Update { hunks, .. } = &two[0] else {
            panic!("{two:?}");
        };
        assert_eq!(
            hunks.len(),
            2,
            "a blank line between hunks does not end the file"
        );
        let under =
            parse("--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n-d\n+D\n").unwrap_err();
        assert!(under.message.contains("outside any hunk"), "{under:?}");
        let envelope = parse("*** Begin Patch\n*** Update File: f\n\n-x\n+y\n\n*** Add File: g\n+1\n\n+3\n\n*** End Patch\n").unwrap();
        let FileChange::Update { hunks, .. } = &envelope[0] else {
            panic!("{envelope:?}");
        };
        assert_eq!(hunks.len(), 1);
        assert_eq!(
            (hunks[0].old(), hunks[0].new_lines()),
            (vec!["x"], vec!["y"])
        );
        assert_eq!(
            envelope[1],
            FileChange::Add {
                path: "g".into(),
                lines: vec!["1".into(), String::new(), "3".into()],
                no_eol: false
            }
        );
    }

    #[test]
    fn a_malformed_patch_names_its_line() {
        let bad_line =
            parse("*** Begin Patch\n*** Update File: a\n x\n?y\n*** End Patch\n").unwrap_err();
        assert_eq!(bad_line.line, 4, "{bad_line:?}");
        let unterminated = parse("*** Begin Patch\n*** Delete File: a\n").unwrap_err();
        assert!(
            unterminated.message.contains("*** End Patch"),
            "{unterminated:?}"
        );
        let counts = parse("--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n-b\n+c\n").unwrap_err();
        assert!(counts.message.contains("ends early"), "{counts:?}");
        let fenced = parse("```diff\n*** Begin Patch\n*** Delete File: a\n*** End Patch\n```\n")
            .unwrap_err();
        assert!(fenced.message.contains("code fence"), "{fenced:?}");
        let binary = parse(
            "diff --git a/i.png b/i.png\nindex 1..2\nBinary files a/i.png and b/i.png differ\n",
        )
        .unwrap_err();
        assert!(binary.message.contains("no text hunk"), "{binary:?}");
        let nothing = parse("just some text\n").unwrap_err();
        assert!(nothing.message.contains("changes no file"), "{nothing:?}");
    }
}

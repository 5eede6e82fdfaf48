//! The write tools through the real binary: write_file, edit_file, create_directory and
//! move_path; their confinement (every way out of the roots that read_file refuses, with a
//! check that nothing was created outside), secrets and `.git/`, the sha256 handshake,
//! atomicity, encodings and line endings, `[fs] write = "confirm"` and `--read-only`; and
//! read_file's byte cursor for a line longer than the size limit.

use std::fs;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::common::*;

/// The write tools.
const WRITE_TOOLS: [&str; 8] = [
    "write_file",
    "edit_file",
    "apply_patch",
    "create_directory",
    "move_path",
    "copy_path",
    "delete_path",
    "undo_last_change",
];

/// `base/root` (the workspace), `base/outside` and `base/root-evil` (a sibling whose name
/// starts with the root's).
struct Layout {
    _dir: tempfile::TempDir,
    base: PathBuf,
    root: PathBuf,
    outside: PathBuf,
}

fn layout() -> Layout {
    let (dir, base) = tempdir();
    let root = base.join("root");
    let outside = base.join("outside");
    fs::create_dir_all(&root).unwrap();
    fs::create_dir_all(&outside).unwrap();
    fs::create_dir_all(base.join("root-evil")).unwrap();
    fs::write(outside.join("victim.txt"), "untouched").unwrap();
    Layout {
        _dir: dir,
        base,
        root,
        outside,
    }
}

/// Every file and directory under `dir`, sorted (to show nothing appeared).
fn tree(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in fs::read_dir(&d).unwrap() {
            let entry = entry.unwrap();
            out.push(entry.path().display().to_string());
            if entry.file_type().unwrap().is_dir() {
                stack.push(entry.path());
            }
        }
    }
    out.sort();
    out
}

#[tokio::test]
async fn write_file_creates_then_replaces_only_with_overwrite_or_the_current_hash() {
    let (_d, root) = tempdir();
    let client = connect(&root).await;
    let path = root.join("notes.txt");
    let created = ok(&call(
        &client,
        "write_file",
        json!({"path": "notes.txt", "content": "one\n"}),
    )
    .await);
    assert_eq!(
        created,
        json!({
            "path": path.display().to_string(),
            "bytes_written": 4,
            "action": "created",
            "sha256": sha256(b"one\n"),
            "encoding": "utf-8",
            "change_id": "c1"
        })
    );
    fs::set_permissions(&path, fs::Permissions::from_mode(0o640)).unwrap();

    // Existing: refused without overwrite or hash, saying which to pass.
    let refused = err(&call(
        &client,
        "write_file",
        json!({"path": "notes.txt", "content": "two\n"}),
    )
    .await);
    assert!(
        refused.contains("already exists")
            && refused.contains("overwrite: true")
            && refused.contains("expected_sha256"),
        "{refused}"
    );
    // A stale hash is refused and names the current one.
    let stale = err(&call(
        &client,
        "write_file",
        json!({"path": "notes.txt", "content": "two\n", "expected_sha256": sha256(b"old")}),
    )
    .await);
    assert!(
        stale.contains("changed since it was read") && stale.contains(&sha256(b"one\n")),
        "{stale}"
    );
    assert_eq!(fs::read_to_string(&path).unwrap(), "one\n");

    // read_file's sha256 is the handshake.
    let read = ok(&call(&client, "read_file", json!({"path": "notes.txt"})).await);
    assert_eq!(read["sha256"], json!(sha256(b"one\n")));
    let replaced = ok(&call(
        &client,
        "write_file",
        json!({"path": "notes.txt", "content": "two\n", "expected_sha256": read["sha256"]}),
    )
    .await);
    assert_eq!(
        pick(&replaced, &["action", "sha256"]),
        json!({"action": "replaced", "sha256": sha256(b"two\n")})
    );
    ok(&call(
        &client,
        "write_file",
        json!({"path": "notes.txt", "content": "three\n", "overwrite": true}),
    )
    .await);
    assert_eq!(fs::read_to_string(&path).unwrap(), "three\n");
    assert_eq!(
        fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o640,
        "the permissions are kept"
    );
    // No temporary file is left behind.
    assert_eq!(tree(&root), vec![path.display().to_string()]);

    // Parents must exist; a hash for a missing file is refused.
    let no_parent = err(&call(
        &client,
        "write_file",
        json!({"path": "new/dir/file.txt", "content": "x"}),
    )
    .await);
    assert!(
        no_parent.contains("parent directory") && no_parent.contains("create_directory"),
        "{no_parent}"
    );
    let missing = err(&call(
        &client,
        "write_file",
        json!({"path": "absent.txt", "content": "x", "expected_sha256": sha256(b"x")}),
    )
    .await);
    assert!(missing.contains("does not exist"), "{missing}");
    let dir = err(&call(
        &client,
        "write_file",
        json!({"path": ".", "content": "x", "overwrite": true}),
    )
    .await);
    assert!(dir.contains("does not name a file"), "{dir}");
}

#[tokio::test]
async fn edit_file_replaces_exactly_shows_a_diff_and_a_dry_run_writes_nothing() {
    let (_d, root) = tempdir();
    let path = root.join("main.rs");
    fs::write(
        &path,
        "fn main() {\n    let x = 1;\n    println!(\"{x}\");\n}\n",
    )
    .unwrap();
    let client = connect(&root).await;
    let args = json!({"path": "main.rs", "edits": [
        {"old_text": "let x = 1;", "new_text": "let x = 2;"},
        {"old_text": "println!(\"{x}\");", "new_text": "println!(\"x = {x}\");"}
    ]});
    let mut dry = args.clone();
    dry["dry_run"] = json!(true);
    let before = fs::read(&path).unwrap();
    let preview = ok(&call(&client, "edit_file", dry).await);
    assert_eq!(fs::read(&path).unwrap(), before, "a dry run writes nothing");
    assert_eq!(preview["sha256"], json!(sha256(&before)));
    let display = path.display().to_string();
    let diff = format!(
        "--- {display}\n+++ {display}\n@@ -1,4 +1,4 @@\n fn main() {{\n-    let x = 1;\n-    println!(\"{{x}}\");\n+    let x = 2;\n+    println!(\"x = {{x}}\");\n }}\n"
    );
    assert_eq!(
        preview,
        json!({"path": display, "diff": diff, "diff_truncated": false, "replacements": 2,
               "dry_run": true, "sha256": sha256(&before), "encoding": "utf-8"})
    );
    let mut with_hash = args.clone();
    with_hash["expected_sha256"] = json!(sha256(&before));
    let edited = ok(&call(&client, "edit_file", with_hash.clone()).await);
    let after = fs::read(&path).unwrap();
    assert_eq!(
        String::from_utf8_lossy(&after),
        "fn main() {\n    let x = 2;\n    println!(\"x = {x}\");\n}\n"
    );
    assert_eq!(edited["sha256"], json!(sha256(&after)));
    assert_eq!(edited["diff"], json!(diff));
    // The same call again: the hash is now stale.
    let stale = err(&call(&client, "edit_file", with_hash).await);
    assert!(stale.contains("changed since it was read"), "{stale}");
}

#[tokio::test]
async fn edit_file_explains_missing_and_ambiguous_old_text_and_applies_nothing() {
    let (_d, root) = tempdir();
    let path = root.join("a.py");
    let original = "def f():\n    return 1\n\ndef g():\n    return 1\n";
    fs::write(&path, original).unwrap();
    let client = connect(&root).await;
    let ambiguous = err(&call(
        &client,
        "edit_file",
        json!({"path": "a.py", "edits": [{"old_text": "return 1", "new_text": "return 2"}]}),
    )
    .await);
    assert!(
        ambiguous.contains("occurs 2 times")
            && ambiguous.contains("lines 2, 5")
            && ambiguous.contains("replace_all"),
        "{ambiguous}"
    );
    // Whitespace differs: the region is shown with its line numbers.
    let missing = err(&call(
        &client,
        "edit_file",
        json!({"path": "a.py", "edits": [
            {"old_text": "def f():", "new_text": "def f0():"},
            {"old_text": "def g():\n  return 1", "new_text": "x"}
        ]}),
    )
    .await);
    assert!(
        missing.contains("edit 2 of 2")
            && missing.contains("not found")
            && missing.contains("lines 4-5 only when whitespace is ignored")
            && missing.contains("     4| def g():\n     5|     return 1"),
        "{missing}"
    );
    assert_eq!(
        fs::read_to_string(&path).unwrap(),
        original,
        "all or nothing"
    );
    let all = ok(&call(
        &client,
        "edit_file",
        json!({"path": "a.py", "edits": [{"old_text": "return 1", "new_text": "return 2", "replace_all": true}]}),
    )
    .await);
    assert_eq!(all["replacements"], json!(2));
    assert_eq!(
        fs::read_to_string(&path).unwrap(),
        original.replace("return 1", "return 2")
    );
    let absent = err(&call(
        &client,
        "edit_file",
        json!({"path": "nope.py", "edits": [{"old_text": "a", "new_text": "b"}]}),
    )
    .await);
    assert!(absent.contains("write_file"), "{absent}");
}

#[tokio::test]
async fn edit_file_keeps_crlf_and_utf16_with_its_bom() {
    let (_d, root) = tempdir();
    let crlf = root.join("win.txt");
    fs::write(&crlf, "first\r\nsecond\r\nthird\r\n").unwrap();
    let utf16 = root.join("utf16.txt");
    let utf16_bytes = |text: &str| {
        let mut b = vec![0xFF, 0xFE];
        for u in text.encode_utf16() {
            b.extend_from_slice(&u.to_le_bytes());
        }
        b
    };
    fs::write(&utf16, utf16_bytes("héllo\r\nwörld\r\n")).unwrap();
    let client = connect(&root).await;
    // The model writes \n; the CRLF file stays CRLF.
    ok(&call(
        &client,
        "edit_file",
        json!({"path": "win.txt", "edits": [{"old_text": "first\nsecond\n", "new_text": "1st\n2nd\n"}]}),
    )
    .await);
    assert_eq!(fs::read(&crlf).unwrap(), b"1st\r\n2nd\r\nthird\r\n");
    let edited = ok(&call(
        &client,
        "edit_file",
        json!({"path": "utf16.txt", "edits": [{"old_text": "wörld", "new_text": "wörld ✓"}]}),
    )
    .await);
    assert_eq!(edited["encoding"], json!("utf-16le"));
    assert_eq!(
        fs::read(&utf16).unwrap(),
        utf16_bytes("héllo\r\nwörld ✓\r\n")
    );
    // write_file over a file with a BOM keeps the BOM and its encoding (and its CRLF).
    ok(&call(
        &client,
        "write_file",
        json!({"path": "utf16.txt", "content": "new\n", "overwrite": true}),
    )
    .await);
    assert_eq!(fs::read(&utf16).unwrap(), utf16_bytes("new\r\n"));
    // latin1 written as asked, and an unrepresentable character refused by name.
    ok(&call(
        &client,
        "write_file",
        json!({"path": "l1.txt", "content": "café", "encoding": "latin1"}),
    )
    .await);
    assert_eq!(fs::read(root.join("l1.txt")).unwrap(), b"caf\xE9");
    let bad = err(&call(
        &client,
        "write_file",
        json!({"path": "l2.txt", "content": "→", "encoding": "latin1"}),
    )
    .await);
    assert!(bad.contains("U+2192"), "{bad}");
    assert!(!root.join("l2.txt").exists());
}

/// Regression: edit_file wrote new_text's `\n` as it was when old_text matched as given, so
/// a CRLF file ended up with mixed line endings (`second LINE\ninserted line\r\n`). Now the
/// new text takes the file's line ending, in UTF-8 and UTF-16 alike, and the diff shows
/// plain `\n` line breaks.
#[tokio::test]
async fn edit_file_writes_new_text_with_the_crlf_files_line_endings() {
    let (_d, root) = tempdir();
    let crlf = root.join("win.txt");
    fs::write(&crlf, "first\r\nsecond LINE\r\nthird\r\n").unwrap();
    let utf16 = root.join("utf16.txt");
    let utf16_bytes = |text: &str| {
        let mut b = vec![0xFF, 0xFE];
        for u in text.encode_utf16() {
            b.extend_from_slice(&u.to_le_bytes());
        }
        b
    };
    fs::write(&utf16, utf16_bytes("héllo\r\nwörld\r\n")).unwrap();
    let lf = root.join("unix.txt");
    fs::write(&lf, "one\ntwo\n").unwrap();
    let client = connect(&root).await;

    // old_text found as given (no line break in it); new_text adds one.
    let edited = ok(&call(
        &client,
        "edit_file",
        json!({"path": "win.txt", "edits": [
            {"old_text": "second LINE", "new_text": "second LINE\ninserted line"},
            {"old_text": "first\nsecond", "new_text": "1st\n\n2nd"}
        ]}),
    )
    .await);
    let expected = b"1st\r\n\r\n2nd LINE\r\ninserted line\r\nthird\r\n";
    assert_eq!(fs::read(&crlf).unwrap(), expected);
    assert_eq!(edited["sha256"], json!(sha256(expected)));
    let diff = edited["diff"].as_str().unwrap();
    assert!(!diff.contains('\r'), "{diff:?}");
    assert!(
        diff.contains("+2nd LINE\n+inserted line\n third\n"),
        "{diff:?}"
    );

    // UTF-16 with a BOM: the same rule, on the text before it is encoded.
    ok(&call(
        &client,
        "edit_file",
        json!({"path": "utf16.txt", "edits": [{"old_text": "wörld", "new_text": "wörld\n✓"}]}),
    )
    .await);
    assert_eq!(
        fs::read(&utf16).unwrap(),
        utf16_bytes("héllo\r\nwörld\r\n✓\r\n")
    );

    // An LF file keeps LF.
    ok(&call(
        &client,
        "edit_file",
        json!({"path": "unix.txt", "edits": [{"old_text": "one", "new_text": "one\nand a half"}]}),
    )
    .await);
    assert_eq!(fs::read(&lf).unwrap(), b"one\nand a half\ntwo\n");
}

/// Regression: write_file over a CRLF file wrote the content's `\n` as they were. Now the
/// content takes the existing file's line ending (line_endings "keep", the default), UTF-16
/// too; "as_given" writes it untouched, "lf"/"crlf" convert; an LF file and a new file get
/// the content as given.
#[tokio::test]
async fn write_file_over_a_crlf_file_writes_crlf_unless_told_otherwise() {
    let (_d, root) = tempdir();
    let crlf = root.join("win.txt");
    fs::write(&crlf, "old\r\ntext\r\n").unwrap();
    let lf = root.join("unix.txt");
    fs::write(&lf, "old\ntext\n").unwrap();
    let utf16 = root.join("utf16.txt");
    let utf16_bytes = |text: &str| {
        let mut b = vec![0xFE, 0xFF];
        for u in text.encode_utf16() {
            b.extend_from_slice(&u.to_be_bytes());
        }
        b
    };
    fs::write(&utf16, utf16_bytes("old\r\n")).unwrap();
    let client = connect(&root).await;
    let write = |path: &str, content: &str, extra: Value| {
        let mut args = json!({"path": path, "content": content, "overwrite": true});
        args.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        args
    };

    let written = ok(&call(
        &client,
        "write_file",
        write("win.txt", "new\nlines\n", json!({})),
    )
    .await);
    assert_eq!(fs::read(&crlf).unwrap(), b"new\r\nlines\r\n");
    assert_eq!(written["bytes_written"], json!(12));
    assert_eq!(written["sha256"], json!(sha256(b"new\r\nlines\r\n")));

    // Opting out: exactly as given.
    ok(&call(
        &client,
        "write_file",
        write(
            "win.txt",
            "as\ngiven\r\n",
            json!({"line_endings": "as_given"}),
        ),
    )
    .await);
    assert_eq!(fs::read(&crlf).unwrap(), b"as\ngiven\r\n");

    // An LF file is unchanged in style; "crlf" converts it on request.
    ok(&call(
        &client,
        "write_file",
        write("unix.txt", "new\nlines\n", json!({})),
    )
    .await);
    assert_eq!(fs::read(&lf).unwrap(), b"new\nlines\n");
    ok(&call(
        &client,
        "write_file",
        write("unix.txt", "a\nb\r\n", json!({"line_endings": "crlf"})),
    )
    .await);
    assert_eq!(fs::read(&lf).unwrap(), b"a\r\nb\r\n");
    ok(&call(
        &client,
        "write_file",
        write("unix.txt", "a\r\nb\r\n", json!({"line_endings": "lf"})),
    )
    .await);
    assert_eq!(fs::read(&lf).unwrap(), b"a\nb\n");

    // UTF-16BE with its BOM: converted before it is encoded.
    ok(&call(
        &client,
        "write_file",
        write("utf16.txt", "x\ny\n", json!({})),
    )
    .await);
    assert_eq!(fs::read(&utf16).unwrap(), utf16_bytes("x\r\ny\r\n"));

    // A new file: as given.
    ok(&call(
        &client,
        "write_file",
        json!({"path": "new.txt", "content": "p\nq\r\n"}),
    )
    .await);
    assert_eq!(fs::read(root.join("new.txt")).unwrap(), b"p\nq\r\n");

    // A value outside the enum is refused, naming the allowed ones.
    let bad = err(&call(
        &client,
        "write_file",
        write("win.txt", "z\n", json!({"line_endings": "dos"})),
    )
    .await);
    assert!(
        bad.contains("line_endings") && bad.contains("as_given"),
        "{bad}"
    );
    assert_eq!(fs::read(&crlf).unwrap(), b"as\ngiven\r\n");
}

#[tokio::test]
async fn create_directory_and_move_path() {
    let (_d, root) = tempdir();
    let client = connect(&root).await;
    let made = ok(&call(&client, "create_directory", json!({"path": "a/b/c"})).await);
    assert_eq!(
        made,
        json!({"path": root.join("a/b/c").display().to_string(), "created": true})
    );
    let again = ok(&call(&client, "create_directory", json!({"path": "a/b/c"})).await);
    assert_eq!(again["created"], json!(false));
    fs::write(root.join("a/one.txt"), "1").unwrap();
    fs::write(root.join("a/two.txt"), "2").unwrap();
    let file_in_way = err(&call(&client, "create_directory", json!({"path": "a/one.txt"})).await);
    assert!(file_in_way.contains("not a directory"), "{file_in_way}");

    let moved = ok(&call(
        &client,
        "move_path",
        json!({"source": "a/one.txt", "destination": "a/b/uno.txt"}),
    )
    .await);
    assert_eq!(
        moved,
        json!({
            "source": root.join("a/one.txt").display().to_string(),
            "destination": root.join("a/b/uno.txt").display().to_string(),
            "type": "file",
            "replaced": false,
            "change_id": "c1"
        })
    );
    assert_eq!(fs::read_to_string(root.join("a/b/uno.txt")).unwrap(), "1");
    let refused = err(&call(
        &client,
        "move_path",
        json!({"source": "a/two.txt", "destination": "a/b/uno.txt"}),
    )
    .await);
    assert!(
        refused.contains("already exists") && refused.contains("overwrite: true"),
        "{refused}"
    );
    assert_eq!(fs::read_to_string(root.join("a/b/uno.txt")).unwrap(), "1");
    let replaced = ok(&call(
        &client,
        "move_path",
        json!({"source": "a/two.txt", "destination": "a/b/uno.txt", "overwrite": true}),
    )
    .await);
    assert_eq!(replaced["replaced"], json!(true));
    assert_eq!(fs::read_to_string(root.join("a/b/uno.txt")).unwrap(), "2");
    // A directory moves whole; not into itself.
    ok(&call(
        &client,
        "move_path",
        json!({"source": "a/b", "destination": "moved"}),
    )
    .await);
    assert!(root.join("moved/c").is_dir() && root.join("moved/uno.txt").is_file());
    let into_itself = err(&call(
        &client,
        "move_path",
        json!({"source": "moved", "destination": "moved/c/deeper"}),
    )
    .await);
    assert!(into_itself.contains("into itself"), "{into_itself}");
    let gone = err(&call(
        &client,
        "move_path",
        json!({"source": "nothing", "destination": "x"}),
    )
    .await);
    assert!(gone.contains("does not exist"), "{gone}");
}

/// Call every write tool at `path` (as the place something would be created or changed) and
/// require each to be refused with `expect` in the message: written, edited, created, copied
/// to and from. `moves`: also move a file there, move it from there and delete it (not for a
/// symbolic link inside the root, which moves and goes as the link).
async fn assert_writes_refused(client: &Client, path: &str, expect: &str, moves: bool) {
    let calls = [
        (
            "write_file",
            json!({"path": path, "content": "ESCAPED", "overwrite": true}),
        ),
        (
            "edit_file",
            json!({"path": path, "edits": [{"old_text": "untouched", "new_text": "ESCAPED"}]}),
        ),
        ("create_directory", json!({"path": path})),
        (
            "move_path",
            json!({"source": "inside.txt", "destination": path, "overwrite": true}),
        ),
        (
            "move_path",
            json!({"source": path, "destination": "pulled-in", "overwrite": true}),
        ),
        (
            "copy_path",
            json!({"source": "inside.txt", "destination": path, "overwrite": true}),
        ),
        (
            "copy_path",
            json!({"source": path, "destination": "pulled-copy", "overwrite": true}),
        ),
        ("delete_path", json!({"path": path, "recursive": true})),
    ];
    for (tool, args) in calls {
        // Moving or deleting a link inside the root touches the link only (inside the
        // roots); copying from it reads what it points to.
        if matches!(tool, "move_path" | "delete_path") && !moves {
            continue;
        }
        let message = err(&call(client, tool, args.clone()).await);
        assert!(message.contains(expect), "{tool} {args}: {message}");
    }
}

#[tokio::test]
async fn writes_cannot_leave_the_roots_by_any_route() {
    let l = layout();
    fs::write(l.root.join("inside.txt"), "inside\n").unwrap();
    symlink(&l.outside, l.root.join("out_dir")).unwrap();
    symlink(l.outside.join("victim.txt"), l.root.join("out_file")).unwrap();
    symlink("../outside/victim.txt", l.root.join("out_file_rel")).unwrap();
    symlink("../outside/created.txt", l.root.join("dangling_out")).unwrap();
    symlink(l.outside.join("made"), l.root.join("dangling_abs")).unwrap();
    let before_outside = tree(&l.outside);
    let before_evil = tree(&l.base.join("root-evil"));
    let client = connect(&l.root).await;

    let outside = "outside the allowed roots";
    let escapes = "resolves outside the allowed roots";
    for path in [
        "../outside/new.txt".to_owned(),
        "sub/../../outside/new.txt".to_owned(),
        l.outside.join("new.txt").display().to_string(),
        format!("{}/../outside/new.txt", l.root.display()),
        l.base.join("root-evil/new.txt").display().to_string(),
        l.outside.join("victim.txt").display().to_string(),
    ] {
        assert_writes_refused(&client, &path, outside, true).await;
    }
    for path in ["out_dir/new.txt", "out_dir/victim.txt"] {
        assert_writes_refused(&client, path, escapes, true).await;
    }
    // A link inside the root that points out: writing through it is refused (moving the link
    // itself would stay inside the roots).
    for path in ["out_file", "out_file_rel"] {
        assert_writes_refused(&client, path, escapes, false).await;
    }
    // A dangling link pointing out: nothing is created through it.
    for path in ["dangling_out", "dangling_abs"] {
        let message = err(&call(
            &client,
            "write_file",
            json!({"path": path, "content": "ESCAPED"}),
        )
        .await);
        assert!(message.contains(escapes), "{path}: {message}");
        let message = err(&call(
            &client,
            "create_directory",
            json!({"path": format!("{path}/sub")}),
        )
        .await);
        assert!(
            message.contains("outside") || message.contains("symbolic link"),
            "{path}: {message}"
        );
    }
    assert_eq!(tree(&l.outside), before_outside, "nothing created outside");
    assert_eq!(tree(&l.base.join("root-evil")), before_evil);
    assert_eq!(
        fs::read_to_string(l.outside.join("victim.txt")).unwrap(),
        "untouched"
    );
    assert_eq!(
        fs::read_to_string(l.root.join("inside.txt")).unwrap(),
        "inside\n",
        "the source of a refused move stays"
    );
    assert!(!l.root.join("pulled-in").exists());
    assert!(!l.root.join("pulled-copy").exists());

    // A link that stays inside is followed: the write lands on the file it names.
    fs::create_dir(l.root.join("real")).unwrap();
    fs::write(l.root.join("real/target.txt"), "old").unwrap();
    symlink("real/target.txt", l.root.join("alias.txt")).unwrap();
    let written = ok(&call(
        &client,
        "write_file",
        json!({"path": "alias.txt", "content": "new", "overwrite": true}),
    )
    .await);
    assert_eq!(
        written["path"],
        json!(l.root.join("real/target.txt").display().to_string())
    );
    assert_eq!(
        fs::read_to_string(l.root.join("real/target.txt")).unwrap(),
        "new"
    );
    assert!(
        fs::symlink_metadata(l.root.join("alias.txt"))
            .unwrap()
            .is_symlink()
    );
}

#[tokio::test]
async fn secrets_and_git_are_not_written() {
    let (_d, root) = tempdir();
    fs::create_dir_all(root.join(".git/hooks")).unwrap();
    fs::write(root.join(".env"), "KEY=1").unwrap();
    fs::write(root.join("plain.txt"), "plain").unwrap();
    symlink(".env", root.join("notes.txt")).unwrap();
    let client = connect(&root).await;
    for path in [".env", "config/.env.local", "keys/id_rsa", "notes.txt"] {
        let message = err(&call(
            &client,
            "write_file",
            json!({"path": path, "content": "x", "overwrite": true}),
        )
        .await);
        assert!(message.contains("protected secret"), "{path}: {message}");
    }
    let moved = err(&call(
        &client,
        "move_path",
        json!({"source": "plain.txt", "destination": ".env.production"}),
    )
    .await);
    assert!(moved.contains("protected secret"), "{moved}");
    let ssh = err(&call(&client, "create_directory", json!({"path": ".ssh"})).await);
    assert!(ssh.contains("protected secret"), "{ssh}");
    assert_eq!(fs::read_to_string(root.join(".env")).unwrap(), "KEY=1");

    for (tool, args) in [
        (
            "write_file",
            json!({"path": ".git/hooks/pre-commit", "content": "#!/bin/sh\necho pwned\n"}),
        ),
        ("create_directory", json!({"path": ".git/hooks/more"})),
        (
            "move_path",
            json!({"source": "plain.txt", "destination": ".git/hooks/pre-push"}),
        ),
    ] {
        let message = err(&call(&client, tool, args).await);
        assert!(
            message.contains(".git directory") && message.contains("allow_git_writes"),
            "{tool}: {message}"
        );
    }
    assert!(!root.join(".git/hooks/pre-commit").exists());
    assert!(!root.join(".git/hooks/more").exists());

    // The operator can allow it.
    let allowed = connect_configured(
        &root,
        "[fs]\nallow_git_writes = true\n",
        TestClient::default(),
    )
    .await;
    ok(&call(
        &allowed,
        "write_file",
        json!({"path": ".git/hooks/pre-commit", "content": "#!/bin/sh\n"}),
    )
    .await);
    assert!(root.join(".git/hooks/pre-commit").exists());
}

#[tokio::test]
async fn a_reader_never_sees_a_half_written_file() {
    let (_d, root) = tempdir();
    let path = root.join("data.txt");
    let (a, b) = ("a".repeat(64 * 1024), "b".repeat(96 * 1024));
    fs::write(&path, &a).unwrap();
    let client = connect(&root).await;
    let stop = Arc::new(AtomicBool::new(false));
    let reads = Arc::new(AtomicUsize::new(0));
    let reader = {
        let (stop, reads, path) = (stop.clone(), reads.clone(), path.clone());
        let (a, b) = (a.clone(), b.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let seen = fs::read_to_string(&path).expect("the file is always there");
                assert!(
                    seen == a || seen == b,
                    "a torn read of {} bytes",
                    seen.len()
                );
                reads.fetch_add(1, Ordering::Relaxed);
            }
        })
    };
    for round in 0..100 {
        let content = if round % 2 == 0 { &b } else { &a };
        ok(&call(
            &client,
            "write_file",
            json!({"path": "data.txt", "content": content, "overwrite": true}),
        )
        .await);
    }
    stop.store(true, Ordering::Relaxed);
    reader.join().expect("the reader saw only whole files");
    assert!(reads.load(Ordering::Relaxed) > 0);
    assert_eq!(
        tree(&root),
        vec![path.display().to_string()],
        "no temp files left"
    );
}

#[tokio::test]
async fn confirm_mode_asks_with_the_diff_and_a_decline_writes_nothing() {
    let (_d, root) = tempdir();
    let path = root.join("conf.txt");
    fs::write(&path, "alpha\nbeta\n").unwrap();
    let edit = json!({"path": "conf.txt", "edits": [{"old_text": "beta", "new_text": "gamma"}]});

    let declining = TestClient::confirming(false);
    let asked = declining.asked.clone();
    let client = connect_configured(&root, "[fs]\nwrite = \"confirm\"\n", declining).await;
    let message = err(&call(&client, "edit_file", edit.clone()).await);
    assert!(message.contains("declined"), "{message}");
    assert_eq!(fs::read_to_string(&path).unwrap(), "alpha\nbeta\n");
    let created = err(&call(
        &client,
        "write_file",
        json!({"path": "new.txt", "content": "hello\n"}),
    )
    .await);
    assert!(created.contains("declined"), "{created}");
    assert!(!root.join("new.txt").exists());
    let questions = asked.lock().unwrap().clone();
    assert_eq!(questions.len(), 2, "{questions:?}");
    assert!(
        questions[0].contains("edit_file") && questions[0].contains("-beta\n+gamma"),
        "{questions:?}"
    );
    assert!(
        questions[1].contains("create") && questions[1].contains("hello"),
        "{questions:?}"
    );
    // A dry run changes nothing, so it does not ask.
    let mut dry = edit.clone();
    dry["dry_run"] = json!(true);
    ok(&call(&client, "edit_file", dry).await);
    assert_eq!(asked.lock().unwrap().len(), 2);

    let accepting = TestClient::confirming(true);
    let asked = accepting.asked.clone();
    let client = connect_configured(&root, "[fs]\nwrite = \"confirm\"\n", accepting).await;
    ok(&call(&client, "edit_file", edit).await);
    assert_eq!(fs::read_to_string(&path).unwrap(), "alpha\ngamma\n");
    assert_eq!(asked.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn read_only_serves_no_write_tools() {
    let (_d, root) = tempdir();
    let default = tool_names(&connect(&root).await).await;
    for tool in WRITE_TOOLS {
        assert!(default.contains(&tool.to_owned()), "{tool} in {default:?}");
    }
    let flag =
        tool_names(&connect_with(&root, &["--read-only"], TestClient::default()).await).await;
    let mut env = command(&root, &[]);
    env.env("TOOLPORT_READ_ONLY", "true");
    let env = tool_names(&connect_command(env, TestClient::default()).await).await;
    let off = tool_names(
        &connect_configured(&root, "[fs]\nwrite = \"off\"\n", TestClient::default()).await,
    )
    .await;
    for names in [&flag, &env, &off] {
        assert_eq!(names.len(), BUILTIN_TOOLS - WRITE_TOOLS.len(), "{names:?}");
        assert!(
            names.iter().all(|n| !WRITE_TOOLS.contains(&n.as_str())),
            "{names:?}"
        );
    }
    let client = connect_with(&root, &["--read-only"], TestClient::default()).await;
    let result = within(
        client.call_tool(
            rmcp::model::CallToolRequestParams::new("write_file").with_arguments(
                json!({"path": "x", "content": "y"})
                    .as_object()
                    .unwrap()
                    .clone(),
            ),
        ),
    )
    .await;
    assert!(result.is_err(), "an unknown tool: {result:?}");
    assert!(!root.join("x").exists());
}

#[tokio::test]
async fn a_line_longer_than_the_limit_is_read_whole_through_the_byte_cursor() {
    let (_d, root) = tempdir();
    // One long line of multi-byte characters (so cuts must land on character boundaries),
    // then short lines.
    let long: String = (0..1500)
        .map(|i| if i % 3 == 0 { 'é' } else { 'x' })
        .collect();
    let content = format!("{long}\nshort\nlast\n");
    fs::write(root.join("min.js"), &content).unwrap();
    let client = connect_with(&root, &["--read-max-bytes", "1024"], TestClient::default()).await;
    let first = ok(&call(&client, "read_file", json!({"path": "min.js"})).await);
    assert_eq!(
        pick(
            &first,
            &["truncated", "offset", "next_offset", "total_lines"]
        ),
        json!({"truncated": true, "offset": 1, "next_offset": 2, "total_lines": 3})
    );
    let mut assembled = first["content"].as_str().unwrap().to_owned();
    let mut cursor = first["next_byte_offset"].clone();
    assert_eq!(
        cursor,
        json!(assembled.len()),
        "the cut is where the rest begins"
    );
    let mut calls = 0;
    while let Value::Number(at) = cursor {
        let page = ok(&call(
            &client,
            "read_file",
            json!({"path": "min.js", "byte_offset": at}),
        )
        .await);
        assert!(page["content"].as_str().unwrap().len() <= 1024);
        assert_eq!(page["sha256"], first["sha256"]);
        assembled.push_str(page["content"].as_str().unwrap());
        cursor = page["next_byte_offset"].clone();
        calls += 1;
        assert!(calls < 10, "the cursor moves on");
    }
    assert_eq!(assembled, content, "every byte, exactly once");
    assert_eq!(first["sha256"], json!(sha256(content.as_bytes())));
    // The text says how to go on.
    let rendered = text(&call(&client, "read_file", json!({"path": "min.js"})).await);
    assert!(rendered.contains("byte_offset="), "{rendered}");
    // A cursor inside a character is refused with the way out.
    let inside = err(&call(
        &client,
        "read_file",
        json!({"path": "min.js", "byte_offset": 1}),
    )
    .await);
    assert!(
        inside.contains("not at the start of a character"),
        "{inside}"
    );
}

//! apply_patch through the real binary: codex's envelope and a git diff across several files
//! (add in a new folder, update keeping CRLF, delete to the trash, move), all or nothing (a
//! hunk that fails on the third file leaves the first two as they were), dry_run, every route
//! out of the roots, secrets and `.git/`, `[fs] write = "confirm"`, and a reader that never
//! sees a half-written file.

use std::fs;
use std::os::unix::fs::symlink;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::common::*;

async fn patch(client: &Client, patch: &str) -> rmcp::model::CallToolResult {
    call(client, "apply_patch", json!({"patch": patch})).await
}

#[tokio::test]
async fn an_envelope_changes_several_files_in_one_call() {
    let (_d, root) = tempdir();
    fs::create_dir(root.join("src")).unwrap();
    fs::write(
        root.join("src/lib.rs"),
        "pub fn greet() {\r\n    println!(\"hi\");\r\n}\r\n",
    )
    .unwrap();
    fs::write(root.join("old.txt"), "obsolete\n").unwrap();
    fs::write(root.join("name.rs"), "// a\n// b\n").unwrap();
    let client = connect(&root).await;

    let result = patch(
        &client,
        "*** Begin Patch\n\
         *** Update File: src/lib.rs\n\
         @@ pub fn greet() {\n\
         -    println!(\"hi\");\n\
         +    println!(\"hello\");\n\
         *** Add File: docs/notes/new.md\n\
         +# Notes\n\
         +line two\n\
         *** Delete File: old.txt\n\
         *** Update File: name.rs\n\
         *** Move to: renamed.rs\n\
         @@\n \
         // a\n\
         -// b\n\
         +// B\n\
         *** End Patch\n",
    )
    .await;
    let out = ok(&result);
    let files: Vec<Value> = out["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| pick(f, &["action", "added", "removed"]))
        .collect();
    assert_eq!(
        files,
        [
            json!({"action": "update", "added": 1, "removed": 1}),
            json!({"action": "add", "added": 2, "removed": 0}),
            json!({"action": "delete", "added": 0, "removed": 1}),
            json!({"action": "move", "added": 1, "removed": 1}),
        ]
    );
    assert_eq!(
        fs::read_to_string(root.join("src/lib.rs")).unwrap(),
        "pub fn greet() {\r\n    println!(\"hello\");\r\n}\r\n",
        "CRLF kept"
    );
    assert_eq!(
        fs::read_to_string(root.join("docs/notes/new.md")).unwrap(),
        "# Notes\nline two\n"
    );
    assert!(!root.join("old.txt").exists());
    assert!(
        root.join(".no-data/Trash/files/old.txt").exists(),
        "deleted into the trash"
    );
    assert!(!root.join("name.rs").exists());
    assert_eq!(
        fs::read_to_string(root.join("renamed.rs")).unwrap(),
        "// a\n// B\n"
    );
    let diff = out["diff"].as_str().unwrap();
    assert!(
        diff.contains("+    println!(\"hello\");") && diff.contains("rename "),
        "{diff}"
    );
    assert!(
        text(&result).contains("Applied the patch"),
        "{}",
        text(&result)
    );
}

#[tokio::test]
async fn a_git_diff_applies_and_dry_run_writes_nothing() {
    let (_d, root) = tempdir();
    fs::write(root.join("a.txt"), "1\n2\n3\n4\n5\n").unwrap();
    let client = connect(&root).await;
    let diff = "diff --git a/a.txt b/a.txt\nindex 1..2 100644\n--- a/a.txt\n+++ b/a.txt\n@@ -3,2 +3,2 @@\n 3\n-4\n+four\ndiff --git a/b.txt b/b.txt\nnew file mode 100644\n--- /dev/null\n+++ b/b.txt\n@@ -0,0 +1 @@\n+bee\n";
    let dry = ok(&call(
        &client,
        "apply_patch",
        json!({"patch": diff, "dry_run": true}),
    )
    .await);
    assert_eq!(dry["dry_run"], json!(true));
    assert!(dry["diff"].as_str().unwrap().contains("+four"), "{dry}");
    assert_eq!(
        fs::read_to_string(root.join("a.txt")).unwrap(),
        "1\n2\n3\n4\n5\n"
    );
    assert!(!root.join("b.txt").exists());

    ok(&patch(&client, diff).await);
    assert_eq!(
        fs::read_to_string(root.join("a.txt")).unwrap(),
        "1\n2\n3\nfour\n5\n"
    );
    assert_eq!(fs::read_to_string(root.join("b.txt")).unwrap(), "bee\n");
}

#[tokio::test]
async fn a_patch_that_fails_on_its_third_file_leaves_the_first_two_as_they_were() {
    let (_d, root) = tempdir();
    for (name, text) in [
        ("one.txt", "one\n"),
        ("two.txt", "two\n"),
        ("three.txt", "three\nTHREE\n"),
    ] {
        fs::write(root.join(name), text).unwrap();
    }
    let client = connect(&root).await;
    let message = err(&patch(
        &client,
        "*** Begin Patch\n*** Update File: one.txt\n-one\n+1\n*** Update File: two.txt\n-two\n+2\n*** Update File: three.txt\n three\n-THREEE\n+3\n*** End Patch\n",
    )
    .await);
    assert!(
        message.contains("file 3 of 3 (three.txt), hunk 1 of 1")
            && message.contains("most similar region is lines 1-2")
            && message.contains("Nothing was written"),
        "{message}"
    );
    assert_eq!(fs::read_to_string(root.join("one.txt")).unwrap(), "one\n");
    assert_eq!(fs::read_to_string(root.join("two.txt")).unwrap(), "two\n");
    assert_eq!(
        fs::read_to_string(root.join("three.txt")).unwrap(),
        "three\nTHREE\n"
    );

    let twice = err(&patch(
        &client,
        "*** Begin Patch\n*** Update File: one.txt\n-one\n+1\n*** Update File: ./one.txt\n-one\n+uno\n*** End Patch\n",
    )
    .await);
    assert!(twice.contains("more than once"), "{twice}");
    let unreadable = err(&patch(
        &client,
        "*** Begin Patch\n*** Frobnicate: x\n*** End Patch\n",
    )
    .await);
    assert!(unreadable.contains("line 2"), "{unreadable}");
}

#[tokio::test]
async fn no_section_of_a_patch_leaves_the_roots_or_touches_secrets_or_git() {
    let (_d, base) = tempdir();
    let root = base.join("root");
    let outside = base.join("outside");
    fs::create_dir_all(root.join(".git/hooks")).unwrap();
    fs::create_dir_all(&outside).unwrap();
    fs::write(outside.join("victim.txt"), "untouched\n").unwrap();
    fs::write(root.join("inside.txt"), "inside\n").unwrap();
    fs::write(root.join(".env"), "KEY=1\n").unwrap();
    symlink(outside.join("victim.txt"), root.join("link-out")).unwrap();
    symlink(&outside, root.join("dir-out")).unwrap();
    let client = connect(&root).await;
    let first = "*** Update File: inside.txt\n-inside\n+CHANGED\n";
    for (section, expect) in [
        (
            "*** Add File: ../outside/new.txt\n+x\n",
            "outside the allowed roots",
        ),
        (
            &format!("*** Add File: {}\n+x\n", outside.join("abs.txt").display()) as &str,
            "outside the allowed roots",
        ),
        ("*** Add File: dir-out/new.txt\n+x\n", "resolves outside"),
        (
            "*** Update File: link-out\n-untouched\n+ESCAPED\n",
            "resolves outside",
        ),
        (
            "*** Update File: dir-out/victim.txt\n-untouched\n+ESCAPED\n",
            "resolves outside",
        ),
        ("*** Delete File: dir-out/victim.txt\n", "resolves outside"),
        ("*** Delete File: .env\n", "protected secret"),
        (
            "*** Update File: .env\n-KEY=1\n+KEY=2\n",
            "protected secret",
        ),
        (
            "*** Add File: config/.env.local\n+KEY=3\n",
            "protected secret",
        ),
        (
            "*** Add File: .git/hooks/pre-commit\n+echo pwned\n",
            ".git directory",
        ),
        (
            "*** Update File: inside.txt\n*** Move to: ../outside/moved.txt\n",
            "outside the allowed roots",
        ),
    ] {
        let message = err(&patch(
            &client,
            &format!("*** Begin Patch\n{first}{section}*** End Patch\n"),
        )
        .await);
        assert!(message.contains(expect), "{section}: {message}");
    }
    assert_eq!(
        fs::read_to_string(root.join("inside.txt")).unwrap(),
        "inside\n"
    );
    assert_eq!(
        fs::read_to_string(outside.join("victim.txt")).unwrap(),
        "untouched\n"
    );
    assert_eq!(
        fs::read_dir(&outside).unwrap().count(),
        1,
        "nothing made outside"
    );
    assert_eq!(fs::read_to_string(root.join(".env")).unwrap(), "KEY=1\n");
    assert!(!root.join(".git/hooks/pre-commit").exists());
    assert!(!root.join("config").exists());
}

#[tokio::test]
async fn confirm_mode_asks_with_the_combined_diff() {
    let (_d, root) = tempdir();
    fs::write(root.join("a.txt"), "a\n").unwrap();
    let declining = TestClient::confirming(false);
    let client = connect_configured(&root, "[fs]\nwrite = \"confirm\"\n", declining.clone()).await;
    let message = err(&patch(
        &client,
        "*** Begin Patch\n*** Update File: a.txt\n-a\n+b\n*** Add File: c.txt\n+c\n*** End Patch\n",
    )
    .await);
    assert!(message.contains("declined"), "{message}");
    let asked = declining.asked.lock().unwrap().clone();
    assert!(
        asked.len() == 1
            && asked[0].contains("apply_patch: update ")
            && asked[0].contains("add ")
            && asked[0].contains("+b"),
        "{asked:?}"
    );
    assert_eq!(fs::read_to_string(root.join("a.txt")).unwrap(), "a\n");
    assert!(!root.join("c.txt").exists());
}

#[tokio::test]
async fn a_reader_never_sees_a_half_patched_file() {
    let (_d, root) = tempdir();
    let path = root.join("data.txt");
    let (a, b) = ("a".repeat(64 * 1024), "b".repeat(96 * 1024));
    fs::write(&path, format!("{a}\n")).unwrap();
    let versions = [format!("{a}\n"), format!("{b}\n")];
    let client = connect(&root).await;
    let stop = Arc::new(AtomicBool::new(false));
    let reads = Arc::new(AtomicUsize::new(0));
    let reader = {
        let (stop, reads, path, versions) =
            (stop.clone(), reads.clone(), path.clone(), versions.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let seen = fs::read_to_string(&path).unwrap();
                assert!(versions.contains(&seen), "torn: {} bytes", seen.len());
                reads.fetch_add(1, Ordering::Relaxed);
            }
        })
    };
    for round in 0..50 {
        let (from, to) = if round % 2 == 0 { (&a, &b) } else { (&b, &a) };
        ok(&patch(
            &client,
            &format!("*** Begin Patch\n*** Update File: data.txt\n-{from}\n+{to}\n*** End Patch\n"),
        )
        .await);
    }
    stop.store(true, Ordering::Relaxed);
    reader.join().unwrap();
    assert!(reads.load(Ordering::Relaxed) > 0);
    assert_eq!(
        fs::read_dir(&root).unwrap().count(),
        1,
        "no temporary file is left"
    );
}

//! delete_path and copy_path through the real binary: the trash (freedesktop, in the test's
//! own `$XDG_DATA_HOME`), deletion for good after confirmation, a root itself, secrets and
//! `.git/` (alone and inside a folder), folders only with `recursive`, copies of files and
//! trees (skipped entries listed, permissions kept, overwrite), and a reader that never sees
//! a half-copied file. The routes out of the roots are in write_tools.rs
//! (`writes_cannot_leave_the_roots_by_any_route`, which calls these tools too).

use std::fs;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::common::*;

/// The freedesktop trash the server uses (`isolate` points `XDG_DATA_HOME` into the root).
fn trash(root: &Path) -> std::path::PathBuf {
    root.join(".no-data/Trash")
}

#[tokio::test]
async fn delete_path_moves_a_file_to_the_trash_and_a_folder_only_with_recursive() {
    let (_d, root) = tempdir();
    fs::write(root.join("old.txt"), "bye\n").unwrap();
    fs::create_dir_all(root.join("build/sub")).unwrap();
    fs::write(root.join("build/a.o"), "aa").unwrap();
    fs::write(root.join("build/sub/b.o"), "bbb").unwrap();
    let client = connect(&root).await;

    let gone = ok(&call(&client, "delete_path", json!({"path": "old.txt"})).await);
    assert_eq!(
        pick(&gone, &["path", "type", "trashed", "files", "bytes"]),
        json!({"path": root.join("old.txt").display().to_string(), "type": "file",
               "trashed": true, "files": 1, "bytes": 4})
    );
    assert!(!root.join("old.txt").exists());
    assert_eq!(
        fs::read_to_string(trash(&root).join("files/old.txt")).unwrap(),
        "bye\n",
        "restorable from the trash"
    );
    let info = fs::read_to_string(trash(&root).join("info/old.txt.trashinfo")).unwrap();
    assert!(
        info.contains(&format!("Path={}", root.join("old.txt").display())),
        "{info}"
    );

    let refused = err(&call(&client, "delete_path", json!({"path": "build"})).await);
    assert!(
        refused.contains("is a folder holding 3 entries") && refused.contains("recursive: true"),
        "{refused}"
    );
    assert!(root.join("build/sub/b.o").exists());
    let result = call(
        &client,
        "delete_path",
        json!({"path": "build", "recursive": true}),
    )
    .await;
    let folder = ok(&result);
    assert_eq!(
        pick(&folder, &["type", "files", "folders", "bytes"]),
        json!({"type": "directory", "files": 2, "folders": 2, "bytes": 5})
    );
    let mut contents: Vec<String> = serde_json::from_value(folder["contents"].clone()).unwrap();
    contents.sort();
    assert_eq!(contents, ["a.o", "sub", "sub/b.o"]);
    assert!(
        text(&result).contains("Moved to the trash"),
        "{}",
        text(&result)
    );
    assert!(!root.join("build").exists());
    assert!(trash(&root).join("files/build/sub/b.o").exists());

    let missing = err(&call(&client, "delete_path", json!({"path": "old.txt"})).await);
    assert!(missing.contains("does not exist"), "{missing}");
}

#[tokio::test]
async fn delete_path_never_takes_a_root_a_secret_or_git_and_a_link_goes_as_the_link() {
    let (_d, root) = tempdir();
    let (_o, outside) = tempdir();
    fs::write(outside.join("victim.txt"), "untouched").unwrap();
    fs::create_dir_all(root.join(".git/hooks")).unwrap();
    fs::write(root.join(".git/config"), "[core]\n").unwrap();
    fs::write(root.join(".env"), "KEY=1").unwrap();
    fs::create_dir_all(root.join("app/config")).unwrap();
    fs::write(root.join("app/main.rs"), "fn main() {}\n").unwrap();
    fs::write(root.join("app/config/.env.local"), "KEY=2").unwrap();
    fs::create_dir_all(root.join("vendored/.git")).unwrap();
    fs::write(root.join("vendored/.git/HEAD"), "ref").unwrap();
    symlink(outside.join("victim.txt"), root.join("link-out")).unwrap();
    let client = connect(&root).await;

    for path in [".".to_owned(), root.display().to_string()] {
        let message = err(&call(
            &client,
            "delete_path",
            json!({"path": path, "recursive": true}),
        )
        .await);
        assert!(message.contains("it is a root itself"), "{path}: {message}");
    }
    let secret = err(&call(&client, "delete_path", json!({"path": ".env"})).await);
    assert!(secret.contains("protected secret"), "{secret}");
    for path in [".git", ".git/config"] {
        let message = err(&call(
            &client,
            "delete_path",
            json!({"path": path, "recursive": true}),
        )
        .await);
        assert!(message.contains(".git directory"), "{path}: {message}");
    }
    // A folder holding a secret, or a .git folder, is refused whole.
    let app = err(&call(
        &client,
        "delete_path",
        json!({"path": "app", "recursive": true}),
    )
    .await);
    assert!(
        app.contains("config/.env.local is a secret") && app.contains("nothing was deleted"),
        "{app}"
    );
    assert!(root.join("app/main.rs").exists());
    let vendored = err(&call(
        &client,
        "delete_path",
        json!({"path": "vendored", "recursive": true}),
    )
    .await);
    assert!(vendored.contains(".git/HEAD is inside .git/"), "{vendored}");
    assert!(root.join("vendored/.git/HEAD").exists());

    // A link pointing out goes as the link; what it points to stays.
    let link = ok(&call(&client, "delete_path", json!({"path": "link-out"})).await);
    assert_eq!(link["type"], json!("symlink"));
    assert!(fs::symlink_metadata(root.join("link-out")).is_err());
    assert_eq!(
        fs::read_to_string(outside.join("victim.txt")).unwrap(),
        "untouched"
    );
    assert_eq!(fs::read_to_string(root.join(".env")).unwrap(), "KEY=1");
    assert!(root.join(".git/config").exists());
}

#[tokio::test]
async fn a_nested_root_or_a_folder_holding_one_is_never_deleted_or_moved() {
    let (_d, root) = tempdir();
    fs::create_dir_all(root.join("outer/inner")).unwrap();
    fs::write(root.join("outer/inner/keep.txt"), "keep").unwrap();
    let inner = root.join("outer/inner");
    let client = connect_with(
        &root,
        &["--root", inner.to_str().unwrap()],
        TestClient::default(),
    )
    .await;
    for path in ["outer", "outer/inner"] {
        let message = err(&call(
            &client,
            "delete_path",
            json!({"path": path, "recursive": true}),
        )
        .await);
        assert!(
            message.contains("is a workspace root or holds one"),
            "{path}: {message}"
        );
        let moved = err(&call(
            &client,
            "move_path",
            json!({"source": path, "destination": "elsewhere"}),
        )
        .await);
        assert!(
            moved.contains("is a workspace root or holds one"),
            "{path}: {moved}"
        );
    }
    assert!(root.join("outer/inner/keep.txt").exists());
}

#[tokio::test]
async fn a_symbolic_link_is_removed_not_trashed() {
    let (_d, root) = tempdir();
    fs::write(root.join("target.txt"), "t").unwrap();
    symlink("target.txt", root.join("link")).unwrap();
    let client = connect(&root).await;
    let gone = ok(&call(&client, "delete_path", json!({"path": "link"})).await);
    assert_eq!(
        pick(&gone, &["type", "trashed"]),
        json!({"type": "symlink", "trashed": false})
    );
    assert!(fs::symlink_metadata(root.join("link")).is_err());
    assert!(root.join("target.txt").exists());
    assert!(!trash(&root).join("files/link").exists());
}

#[tokio::test]
async fn delete_confirm_deletes_for_good_only_after_the_user_agrees() {
    let (_d, root) = tempdir();
    fs::create_dir_all(root.join("scratch/deep")).unwrap();
    fs::write(root.join("scratch/deep/x.txt"), "x").unwrap();
    let config = "[fs]\ndelete = \"confirm\"\n";

    let declining = TestClient::confirming(false);
    let client = connect_configured(&root, config, declining.clone()).await;
    let declined = err(&call(
        &client,
        "delete_path",
        json!({"path": "scratch", "recursive": true}),
    )
    .await);
    assert!(declined.contains("declined"), "{declined}");
    assert!(root.join("scratch/deep/x.txt").exists());
    let asked = declining.asked.lock().unwrap().clone();
    assert!(
        asked.len() == 1 && asked[0].contains("delete scratch and everything in it for good"),
        "{asked:?}"
    );

    let client = connect_configured(&root, config, TestClient::confirming(true)).await;
    let gone = ok(&call(
        &client,
        "delete_path",
        json!({"path": "scratch", "recursive": true}),
    )
    .await);
    assert_eq!(gone["trashed"], json!(false));
    assert!(!root.join("scratch").exists());
    assert!(!trash(&root).exists(), "deleted for good, not trashed");
}

#[tokio::test]
async fn copy_path_copies_a_file_keeping_its_mode_and_replaces_only_with_overwrite() {
    let (_d, root) = tempdir();
    fs::write(root.join("run.sh"), "#!/bin/sh\necho hi\n").unwrap();
    fs::set_permissions(root.join("run.sh"), fs::Permissions::from_mode(0o755)).unwrap();
    fs::write(root.join("other.sh"), "echo other\n").unwrap();
    fs::create_dir(root.join("bin")).unwrap();
    let client = connect(&root).await;

    let copied = ok(&call(
        &client,
        "copy_path",
        json!({"source": "run.sh", "destination": "bin/run.sh"}),
    )
    .await);
    assert_eq!(
        pick(&copied, &["type", "files", "bytes", "replaced"]),
        json!({"type": "file", "files": 1, "bytes": 18, "replaced": 0})
    );
    assert_eq!(
        fs::read_to_string(root.join("bin/run.sh")).unwrap(),
        "#!/bin/sh\necho hi\n"
    );
    let mode = fs::metadata(root.join("bin/run.sh"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o111, 0o111, "still executable: {mode:o}");

    let exists = err(&call(
        &client,
        "copy_path",
        json!({"source": "other.sh", "destination": "bin/run.sh"}),
    )
    .await);
    assert!(
        exists.contains("already exists") && exists.contains("overwrite"),
        "{exists}"
    );
    let into_dir = err(&call(
        &client,
        "copy_path",
        json!({"source": "other.sh", "destination": "bin"}),
    )
    .await);
    assert!(into_dir.contains("bin/other.sh"), "{into_dir}");
    let same = err(&call(
        &client,
        "copy_path",
        json!({"source": "run.sh", "destination": "./run.sh", "overwrite": true}),
    )
    .await);
    assert!(same.contains("the same file"), "{same}");

    let replaced = ok(&call(
        &client,
        "copy_path",
        json!({"source": "other.sh", "destination": "bin/run.sh", "overwrite": true}),
    )
    .await);
    assert_eq!(replaced["replaced"], json!(1));
    assert_eq!(
        fs::read_to_string(root.join("bin/run.sh")).unwrap(),
        "echo other\n"
    );
    let left: Vec<_> = fs::read_dir(root.join("bin")).unwrap().collect();
    assert_eq!(left.len(), 1, "no temporary file is left");
}

#[tokio::test]
async fn copy_path_copies_a_tree_and_lists_what_it_skipped() {
    let (_d, root) = tempdir();
    let (_o, outside) = tempdir();
    fs::write(outside.join("victim.txt"), "outside").unwrap();
    let src = root.join("proj");
    fs::create_dir_all(src.join("src/nested")).unwrap();
    fs::create_dir_all(src.join(".git")).unwrap();
    fs::create_dir_all(src.join(".ssh")).unwrap();
    fs::write(src.join("README.md"), "# proj\n").unwrap();
    fs::write(src.join("src/lib.rs"), "pub fn f() {}\n").unwrap();
    fs::write(src.join("src/nested/deep.rs"), "// deep\n").unwrap();
    fs::write(src.join(".env"), "KEY=1").unwrap();
    fs::write(src.join(".ssh/id_ed25519"), "PRIVATE").unwrap();
    fs::write(src.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    symlink(outside.join("victim.txt"), src.join("link-out")).unwrap();
    symlink("README.md", src.join("link-in")).unwrap();
    let client = connect(&root).await;

    let result = call(
        &client,
        "copy_path",
        json!({"source": "proj", "destination": "copy"}),
    )
    .await;
    let copied = ok(&result);
    assert_eq!(
        pick(&copied, &["type", "files", "folders", "replaced"]),
        json!({"type": "directory", "files": 3, "folders": 3, "replaced": 0})
    );
    let mut skipped: Vec<String> = copied["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["path"].as_str().unwrap().to_owned())
        .collect();
    skipped.sort();
    assert_eq!(skipped, [".env", ".git", ".ssh", "link-in", "link-out"]);
    assert_eq!(copied["skipped_count"], json!(5));
    assert!(
        text(&result).contains("Not copied (5)"),
        "{}",
        text(&result)
    );
    assert_eq!(
        fs::read_to_string(root.join("copy/src/nested/deep.rs")).unwrap(),
        "// deep\n"
    );
    for absent in [".env", ".ssh", ".git", "link-out", "link-in"] {
        assert!(
            fs::symlink_metadata(root.join("copy").join(absent)).is_err(),
            "{absent} was copied"
        );
    }

    // An existing folder: refused, then merged into with overwrite.
    fs::write(src.join("README.md"), "# proj v2\n").unwrap();
    let exists = err(&call(
        &client,
        "copy_path",
        json!({"source": "proj", "destination": "copy"}),
    )
    .await);
    assert!(exists.contains("already exists"), "{exists}");
    let merged = ok(&call(
        &client,
        "copy_path",
        json!({"source": "proj", "destination": "copy", "overwrite": true}),
    )
    .await);
    assert_eq!(
        pick(&merged, &["files", "folders", "replaced"]),
        json!({"files": 3, "folders": 0, "replaced": 3})
    );
    assert_eq!(
        fs::read_to_string(root.join("copy/README.md")).unwrap(),
        "# proj v2\n"
    );

    let itself = err(&call(
        &client,
        "copy_path",
        json!({"source": "proj", "destination": "proj/inner"}),
    )
    .await);
    assert!(itself.contains("into itself"), "{itself}");
    assert!(!src.join("inner").exists());
    let git = err(&call(
        &client,
        "copy_path",
        json!({"source": "proj/src", "destination": ".git"}),
    )
    .await);
    assert!(git.contains(".git directory"), "{git}");
    let secret = err(&call(
        &client,
        "copy_path",
        json!({"source": "proj/.env", "destination": "env-copy"}),
    )
    .await);
    assert!(secret.contains("protected secret"), "{secret}");
    assert!(!root.join("env-copy").exists());
}

#[tokio::test]
async fn a_folder_copy_that_fails_part_way_removes_what_it_made() {
    let (_d, root) = tempdir();
    fs::create_dir_all(root.join("src/b")).unwrap();
    fs::write(root.join("src/a.txt"), "a").unwrap();
    fs::write(root.join("src/b/c.txt"), "c").unwrap();
    fs::write(root.join("src/z.txt"), "z").unwrap();
    // The destination exists, and where the copy of z.txt would go there is a folder.
    fs::create_dir_all(root.join("dst/z.txt")).unwrap();
    let client = connect(&root).await;
    let failed = err(&call(
        &client,
        "copy_path",
        json!({"source": "src", "destination": "dst", "overwrite": true}),
    )
    .await);
    assert!(
        failed.contains("z.txt: a folder is there, not a file")
            && failed.contains("changes already made were taken back"),
        "{failed}"
    );
    let left: Vec<String> = fs::read_dir(root.join("dst"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left, ["z.txt"], "only what was there before");
}

#[tokio::test]
async fn a_reader_never_sees_a_half_copied_file() {
    let (_d, root) = tempdir();
    let versions = ["a".repeat(64 * 1024), "b".repeat(96 * 1024)];
    fs::write(root.join("a.txt"), &versions[0]).unwrap();
    fs::write(root.join("b.txt"), &versions[1]).unwrap();
    fs::write(root.join("data.txt"), &versions[0]).unwrap();
    let client = connect(&root).await;
    let stop = Arc::new(AtomicBool::new(false));
    let reads = Arc::new(AtomicUsize::new(0));
    let reader = {
        let (stop, reads, path, versions) = (
            stop.clone(),
            reads.clone(),
            root.join("data.txt"),
            versions.clone(),
        );
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let seen = fs::read_to_string(&path).unwrap();
                assert!(versions.contains(&seen), "torn: {} bytes", seen.len());
                reads.fetch_add(1, Ordering::Relaxed);
            }
        })
    };
    for round in 0..100 {
        let source = if round % 2 == 0 { "b.txt" } else { "a.txt" };
        let result: Value = ok(&call(
            &client,
            "copy_path",
            json!({"source": source, "destination": "data.txt", "overwrite": true}),
        )
        .await);
        assert_eq!(result["replaced"], json!(1));
    }
    stop.store(true, Ordering::Relaxed);
    reader.join().unwrap();
    assert!(reads.load(Ordering::Relaxed) > 0);
    let names: Vec<_> = fs::read_dir(&root).unwrap().collect();
    assert_eq!(names.len(), 3, "no temporary file is left");
}

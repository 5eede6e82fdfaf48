//! undo_last_change through the real binary: every write tool's change taken back (write,
//! edit, patch, move, copy, delete), the latest first or by change_id, refused with nothing
//! changed when a file changed since, a large before-image (spilled) restored exactly, and a
//! session of the same server that cannot undo another's changes.

use std::fs;
use std::os::unix::fs::symlink;

use pretty_assertions::assert_eq;
use serde_json::json;

use crate::common::http::{TOKEN, mcp_client, start};
use crate::common::*;

async fn undo(client: &Client) -> rmcp::model::CallToolResult {
    call(client, "undo_last_change", json!({})).await
}

#[tokio::test]
async fn each_write_tools_change_is_taken_back_latest_first() {
    let (_d, root) = tempdir();
    fs::write(root.join("a.txt"), "one\n").unwrap();
    fs::create_dir_all(root.join("tree/sub")).unwrap();
    fs::write(root.join("tree/sub/f.txt"), "f\n").unwrap();
    let client = connect(&root).await;

    let written = ok(&call(
        &client,
        "write_file",
        json!({"path": "a.txt", "content": "two\n", "overwrite": true}),
    )
    .await);
    assert_eq!(written["change_id"], json!("c1"));
    let edited = ok(&call(
        &client,
        "edit_file",
        json!({"path": "a.txt", "edits": [{"old_text": "two", "new_text": "three"}]}),
    )
    .await);
    assert_eq!(edited["change_id"], json!("c2"));
    ok(&call(
        &client,
        "apply_patch",
        json!({"patch": "*** Begin Patch\n*** Update File: a.txt\n-three\n+four\n*** Add File: new/dir/b.txt\n+b\n*** End Patch\n"}),
    )
    .await);
    ok(&call(
        &client,
        "move_path",
        json!({"source": "a.txt", "destination": "moved.txt"}),
    )
    .await);
    ok(&call(
        &client,
        "copy_path",
        json!({"source": "tree", "destination": "tree2"}),
    )
    .await);
    ok(&call(
        &client,
        "delete_path",
        json!({"path": "tree", "recursive": true}),
    )
    .await);
    assert!(!root.join("tree").exists());

    // Back, one change at a time.
    let back = ok(&undo(&client).await);
    assert_eq!(back["tool"], json!("delete_path"));
    assert_eq!(
        fs::read_to_string(root.join("tree/sub/f.txt")).unwrap(),
        "f\n"
    );
    let back = ok(&undo(&client).await);
    assert_eq!(back["tool"], json!("copy_path"));
    assert!(!root.join("tree2").exists());
    let back = ok(&undo(&client).await);
    assert_eq!(back["tool"], json!("move_path"));
    assert!(!root.join("moved.txt").exists());
    assert_eq!(fs::read_to_string(root.join("a.txt")).unwrap(), "four\n");
    let back = ok(&undo(&client).await);
    assert_eq!(back["tool"], json!("apply_patch"));
    assert_eq!(fs::read_to_string(root.join("a.txt")).unwrap(), "three\n");
    assert!(!root.join("new").exists(), "the folders it made are gone");
    // c1 (the write) cannot go before c2 (the edit of the same file): the file is as c2 left it.
    let early = err(&call(&client, "undo_last_change", json!({"change_id": "c1"})).await);
    assert!(early.contains("its content changed since"), "{early}");
    let back = ok(&call(&client, "undo_last_change", json!({"change_id": "c2"})).await);
    assert_eq!(back["tool"], json!("edit_file"));
    assert_eq!(fs::read_to_string(root.join("a.txt")).unwrap(), "two\n");
    let back = ok(&undo(&client).await);
    assert_eq!(back["change_id"], json!("c1"));
    assert_eq!(fs::read_to_string(root.join("a.txt")).unwrap(), "one\n");
    ok(&call(
        &client,
        "write_file",
        json!({"path": "x.txt", "content": "x"}),
    )
    .await);
    let missing = err(&call(&client, "undo_last_change", json!({"change_id": "c9"})).await);
    assert!(
        missing.contains("no change \"c9\"") && missing.contains("are c7"),
        "{missing}"
    );
}

#[tokio::test]
async fn an_undo_is_refused_when_a_file_changed_since_and_kept_for_later() {
    let (_d, root) = tempdir();
    fs::write(root.join("a.txt"), "before\n").unwrap();
    let client = connect(&root).await;
    ok(&call(
        &client,
        "edit_file",
        json!({"path": "a.txt", "edits": [{"old_text": "before", "new_text": "after"}]}),
    )
    .await);
    fs::write(root.join("a.txt"), "someone else\n").unwrap();
    let refused = err(&undo(&client).await);
    assert!(
        refused.contains("a.txt: its content changed since")
            && refused.contains("Nothing was changed"),
        "{refused}"
    );
    assert_eq!(
        fs::read_to_string(root.join("a.txt")).unwrap(),
        "someone else\n"
    );
    // Once the file is as the change left it again, the same change can be taken back.
    fs::write(root.join("a.txt"), "after\n").unwrap();
    ok(&undo(&client).await);
    assert_eq!(fs::read_to_string(root.join("a.txt")).unwrap(), "before\n");
    let none = err(&undo(&client).await);
    assert!(none.contains("no change to undo"), "{none}");
}

#[tokio::test]
async fn a_large_file_is_restored_exactly_and_only_by_its_own_session() {
    let (_d, root) = tempdir();
    let big: Vec<u8> = (0..3 * 1024 * 1024)
        .map(|i| b'a' + (i % 26) as u8)
        .collect();
    fs::write(root.join("big.txt"), &big).unwrap();
    // Two sessions of one server (Streamable HTTP).
    let server = start(&root, &[], Some(TOKEN)).await;
    let client = mcp_client(&server, TOKEN, TestClient::default()).await;
    let other = mcp_client(&server, TOKEN, TestClient::default()).await;
    ok(&call(
        &client,
        "write_file",
        json!({"path": "big.txt", "content": "small\n", "overwrite": true}),
    )
    .await);
    let theirs = err(&undo(&other).await);
    assert!(theirs.contains("no change to undo"), "{theirs}");
    ok(&undo(&client).await);
    assert!(
        fs::read(root.join("big.txt")).unwrap() == big,
        "restored byte for byte"
    );
}

/// An undo is a write like any other: when a folder on a recorded path has been swapped for a
/// link out of the roots, or into .git/, it is refused and nothing there is touched.
#[tokio::test]
async fn an_undo_never_follows_a_swapped_folder_out_of_the_roots_or_into_git() {
    let (_d, base) = tempdir();
    let root = base.join("root");
    let outside = base.join("outside");
    fs::create_dir_all(root.join("dir")).unwrap();
    fs::create_dir_all(root.join(".git/hooks")).unwrap();
    fs::create_dir_all(&outside).unwrap();
    fs::write(root.join("dir/a.txt"), "old").unwrap();
    let client = connect(&root).await;
    ok(&call(
        &client,
        "write_file",
        json!({"path": "dir/a.txt", "content": "new", "overwrite": true}),
    )
    .await);
    // Someone swaps the folder for a link out of the roots, with a file as the change left it.
    fs::write(outside.join("a.txt"), "new").unwrap();
    fs::rename(root.join("dir"), root.join("dir-moved")).unwrap();
    symlink(&outside, root.join("dir")).unwrap();
    let refused = err(&undo(&client).await);
    assert!(
        refused.contains("outside the allowed roots") || refused.contains("resolves outside"),
        "{refused}"
    );
    assert_eq!(fs::read_to_string(outside.join("a.txt")).unwrap(), "new");
    // Into .git/ instead.
    fs::remove_file(root.join("dir")).unwrap();
    fs::write(root.join(".git/hooks/a.txt"), "new").unwrap();
    symlink(".git/hooks", root.join("dir")).unwrap();
    let refused = err(&undo(&client).await);
    assert!(refused.contains(".git directory"), "{refused}");
    assert_eq!(
        fs::read_to_string(root.join(".git/hooks/a.txt")).unwrap(),
        "new"
    );
}

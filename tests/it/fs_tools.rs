//! Happy paths and limits of read_file, list_directory and path_info through the real binary.

use std::fs;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::common::*;

fn lines(n: usize) -> String {
    (1..=n).map(|i| format!("line {i}\n")).collect()
}

#[tokio::test]
async fn read_file_returns_the_whole_file_with_its_facts() {
    let (_d, root) = tempdir();
    fs::write(root.join("hello.txt"), "hello\nworld\n").unwrap();
    let client = connect(&root).await;
    let result = call(&client, "read_file", json!({"path": "hello.txt"})).await;
    assert_eq!(
        ok(&result),
        json!({
            "kind": "text",
            "path": root.join("hello.txt").display().to_string(),
            "content": "hello\nworld\n",
            "encoding": "utf-8",
            "total_lines": 2,
            "offset": 1,
            "returned_lines": 2,
            "truncated": false,
            "next_offset": null,
            "next_byte_offset": null,
            "size_bytes": 12,
            "sha256": "4a1e67f2fe1d1cc7b31d0ca2ec441da4778203a036a77da10344c85e24ff0f92"
        })
    );
    assert_eq!(
        text(&result),
        "hello\nworld\n",
        "the text is the content, not a JSON dump"
    );
}

#[tokio::test]
async fn read_file_pages_by_lines() {
    let (_d, root) = tempdir();
    fs::write(root.join("ten.txt"), lines(10)).unwrap();
    let client = connect(&root).await;
    let page = ok(&call(
        &client,
        "read_file",
        json!({"path": "ten.txt", "offset": 3, "limit": 2}),
    )
    .await);
    assert_eq!(
        page,
        json!({
            "kind": "text",
            "path": root.join("ten.txt").display().to_string(),
            "content": "line 3\nline 4\n",
            "encoding": "utf-8",
            "total_lines": 10,
            "offset": 3,
            "returned_lines": 2,
            "truncated": false,
            "next_offset": 5,
            "next_byte_offset": null,
            "size_bytes": 71,
            "sha256": "e71d970d34a5003190f0bcebf4e79bee538969aab5d24eef5449177468562b35"
        })
    );
    let result = call(
        &client,
        "read_file",
        json!({"path": "ten.txt", "offset": 9, "limit": 5}),
    )
    .await;
    let last = ok(&result);
    assert_eq!(
        pick(
            &last,
            &["content", "offset", "returned_lines", "next_offset"]
        ),
        json!({"content": "line 9\nline 10\n", "offset": 9, "returned_lines": 2, "next_offset": null})
    );
    assert!(
        text(&result).contains("lines 9-10 of 10"),
        "{}",
        text(&result)
    );
    let head = ok(&call(&client, "read_file", json!({"path": "ten.txt", "head": 2})).await);
    assert_eq!(
        pick(&head, &["content", "offset", "next_offset"]),
        json!({"content": "line 1\nline 2\n", "offset": 1, "next_offset": 3})
    );
    let tail = ok(&call(&client, "read_file", json!({"path": "ten.txt", "tail": 3})).await);
    assert_eq!(
        pick(&tail, &["content", "offset", "next_offset"]),
        json!({"content": "line 8\nline 9\nline 10\n", "offset": 8, "next_offset": null})
    );
    let past = err(&call(
        &client,
        "read_file",
        json!({"path": "ten.txt", "offset": 11}),
    )
    .await);
    assert!(
        past.contains("past the end") && past.contains("10 lines"),
        "{past}"
    );
    let both = err(&call(
        &client,
        "read_file",
        json!({"path": "ten.txt", "head": 1, "tail": 1}),
    )
    .await);
    assert!(both.contains("cannot be combined"), "{both}");
}

#[tokio::test]
async fn read_file_stops_at_the_size_limit_and_says_where_to_continue() {
    let (_d, root) = tempdir();
    fs::write(root.join("big.txt"), lines(1000)).unwrap();
    let client = connect_with(&root, &["--read-max-bytes", "1024"], TestClient::default()).await;
    let result = call(&client, "read_file", json!({"path": "big.txt"})).await;
    let page = ok(&result);
    assert_eq!(page["truncated"], json!(true));
    let content = page["content"].as_str().unwrap();
    assert!(
        content.len() <= 1024 && content.ends_with('\n'),
        "cut at a line boundary"
    );
    let returned = page["returned_lines"].as_u64().unwrap();
    assert_eq!(page["next_offset"], json!(returned + 1));
    assert!(
        text(&result).contains(&format!("offset={}", returned + 1)),
        "{}",
        text(&result)
    );
    let next = ok(&call(
        &client,
        "read_file",
        json!({"path": "big.txt", "offset": returned + 1, "limit": 1}),
    )
    .await);
    assert_eq!(next["content"], json!(format!("line {}\n", returned + 1)));
}

#[tokio::test]
async fn read_file_decodes_encodings_and_honours_byte_order_marks() {
    let (_d, root) = tempdir();
    fs::write(root.join("latin1.txt"), b"caf\xe9\n").unwrap();
    let mut utf16 = vec![0xFF, 0xFE];
    utf16.extend("h\u{e9}llo\n".encode_utf16().flat_map(|u| u.to_le_bytes()));
    fs::write(root.join("utf16.txt"), &utf16).unwrap();
    fs::write(
        root.join("sjis.txt"),
        b"\x82\xb1\x82\xf1\x82\xc9\x82\xbf\x82\xcd\n",
    )
    .unwrap();
    fs::write(root.join("bom8.txt"), b"\xef\xbb\xbfbom\n").unwrap();
    let client = connect(&root).await;
    let r = ok(&call(
        &client,
        "read_file",
        json!({"path": "latin1.txt", "encoding": "latin1"}),
    )
    .await);
    assert_eq!(
        pick(&r, &["content", "encoding"]),
        json!({"content": "café\n", "encoding": "windows-1252"})
    );
    let r = ok(&call(&client, "read_file", json!({"path": "utf16.txt"})).await);
    assert_eq!(
        pick(&r, &["content", "encoding"]),
        json!({"content": "héllo\n", "encoding": "utf-16le"})
    );
    let r = ok(&call(
        &client,
        "read_file",
        json!({"path": "sjis.txt", "encoding": "shift_jis"}),
    )
    .await);
    assert_eq!(r["content"], json!("こんにちは\n"));
    let r = ok(&call(&client, "read_file", json!({"path": "bom8.txt"})).await);
    assert_eq!(
        r["content"],
        json!("bom\n"),
        "the BOM is not part of the content"
    );
    let mismatch = err(&call(&client, "read_file", json!({"path": "latin1.txt"})).await);
    assert!(
        mismatch.contains("not valid utf-8")
            && mismatch.contains("byte offset 3")
            && mismatch.contains("latin1"),
        "{mismatch}"
    );
    let unknown = err(&call(
        &client,
        "read_file",
        json!({"path": "latin1.txt", "encoding": "klingon"}),
    )
    .await);
    assert!(
        unknown.contains("unknown encoding") && unknown.contains("utf-16le"),
        "{unknown}"
    );
}

#[tokio::test]
async fn read_file_refuses_binary_files_directories_and_fifos() {
    let (_d, root) = tempdir();
    fs::write(root.join("data.bin"), b"\x7fELF\x02\x01\x00\x00binary").unwrap();
    fs::create_dir(root.join("folder")).unwrap();
    let fifo = root.join("pipe");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let client = connect(&root).await;
    let binary = err(&call(&client, "read_file", json!({"path": "data.bin"})).await);
    assert!(binary.contains("binary file"), "{binary}");
    let dir = err(&call(&client, "read_file", json!({"path": "folder"})).await);
    assert!(
        dir.contains("is a directory") && dir.contains("list_directory"),
        "{dir}"
    );
    // A FIFO with no writer would block a plain open forever.
    let pipe = err(&call(&client, "read_file", json!({"path": "pipe"})).await);
    assert!(
        pipe.contains("not a regular file") && pipe.contains("FIFO"),
        "{pipe}"
    );
    let missing = err(&call(&client, "read_file", json!({"path": "nope.txt"})).await);
    assert!(missing.contains("does not exist"), "{missing}");
}

fn tree(root: &std::path::Path) {
    fs::create_dir_all(root.join("src/inner")).unwrap();
    fs::create_dir_all(root.join("target/debug")).unwrap();
    fs::write(root.join("src/main.rs"), "fn main() {}\n").unwrap();
    fs::write(root.join("src/inner/deep.rs"), "").unwrap();
    fs::write(root.join("target/debug/app"), "bin").unwrap();
    fs::write(root.join("README.md"), "# hi\n").unwrap();
    fs::write(root.join("debug.log"), "log").unwrap();
    fs::write(root.join("keep.log"), "log").unwrap();
    fs::write(root.join(".hidden"), "h").unwrap();
    fs::write(root.join(".gitignore"), "target/\n*.log\n!keep.log\n").unwrap();
    std::os::unix::fs::symlink("README.md", root.join("link")).unwrap();
}

fn paths(listing: &Value) -> Vec<String> {
    listing["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn list_directory_lists_types_sizes_and_honours_gitignore_and_hidden() {
    let (_d, root) = tempdir();
    tree(&root);
    let client = connect(&root).await;
    let result = call(&client, "list_directory", json!({})).await;
    let listing = ok(&result);
    assert_eq!(
        listing,
        json!({
            "path": root.display().to_string(),
            "depth": 1,
            "entries": [
                {"path": "README.md", "type": "file", "size": 5},
                {"path": "keep.log", "type": "file", "size": 3},
                {"path": "link", "type": "symlink", "symlink_target": "README.md"},
                {"path": "src", "type": "directory"}
            ],
            "truncated": false
        })
    );
    let rendered = text(&result);
    let rendered: Vec<&str> = rendered.lines().collect();
    assert_eq!(
        rendered[1..],
        [
            "README.md (5 bytes)",
            "keep.log (3 bytes)",
            "link -> README.md",
            "src/"
        ]
    );
    let deep = ok(&call(
        &client,
        "list_directory",
        json!({"path": "src", "depth": 2}),
    )
    .await);
    assert_eq!(paths(&deep), ["inner", "inner/deep.rs", "main.rs"]);
    let all = ok(&call(
        &client,
        "list_directory",
        json!({"depth": 3, "include_hidden": true, "respect_gitignore": false}),
    )
    .await);
    assert_eq!(
        paths(&all),
        [
            ".gitignore",
            ".hidden",
            "README.md",
            "debug.log",
            "keep.log",
            "link",
            "src",
            "src/inner",
            "src/inner/deep.rs",
            "src/main.rs",
            "target",
            "target/debug",
            "target/debug/app"
        ]
    );
    // Listing an ignored directory explicitly still shows what is in it.
    let ignored = ok(&call(&client, "list_directory", json!({"path": "target"})).await);
    assert_eq!(paths(&ignored), ["debug"]);
}

#[tokio::test]
async fn list_directory_caps_entries_and_depth() {
    let (_d, root) = tempdir();
    for i in 0..10 {
        fs::write(root.join(format!("f{i}.txt")), "").unwrap();
    }
    let client = connect_with(&root, &["--list-max-entries", "4"], TestClient::default()).await;
    let result = call(&client, "list_directory", json!({})).await;
    let listing = ok(&result);
    assert_eq!(paths(&listing), ["f0.txt", "f1.txt", "f2.txt", "f3.txt"]);
    assert_eq!(listing["truncated"], json!(true));
    assert!(text(&result).contains("truncated"), "{}", text(&result));
    let capped = call(&client, "list_directory", json!({"depth": 64})).await;
    assert_eq!(ok(&capped)["depth"], json!(10));
    assert!(text(&capped).contains("capped"), "{}", text(&capped));
    let not_dir = err(&call(&client, "list_directory", json!({"path": "f0.txt"})).await);
    assert!(not_dir.contains("f0.txt"), "{not_dir}");
}

#[tokio::test]
async fn path_info_reports_metadata_and_missing_paths() {
    let (_d, root) = tempdir();
    fs::write(root.join("f.txt"), "12345").unwrap();
    fs::create_dir(root.join("d")).unwrap();
    std::os::unix::fs::symlink("f.txt", root.join("link")).unwrap();
    std::os::unix::fs::symlink("gone.txt", root.join("dangling")).unwrap();
    std::os::unix::fs::symlink("/etc/hostname", root.join("outward")).unwrap();
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(root.join("f.txt"), fs::Permissions::from_mode(0o444)).unwrap();
    let client = connect(&root).await;

    let file = ok(&call(&client, "path_info", json!({"path": "f.txt"})).await);
    assert_eq!(
        pick(
            &file,
            &[
                "path",
                "exists",
                "type",
                "size",
                "permissions",
                "mode",
                "symlink_target",
                "target_type",
                "readonly"
            ]
        ),
        json!({
            "path": root.join("f.txt").display().to_string(),
            "exists": true,
            "type": "file",
            "size": 5,
            "permissions": "r--r--r--",
            "mode": "0444",
            "symlink_target": null,
            "target_type": null,
            "readonly": true
        })
    );
    let modified = file["modified"].as_str().unwrap();
    assert!(
        modified.ends_with('Z') && modified.len() == 20,
        "{modified}"
    );

    let dir = ok(&call(&client, "path_info", json!({"path": "d"})).await);
    assert_eq!(
        pick(&dir, &["exists", "type", "readonly"]),
        json!({"exists": true, "type": "directory", "readonly": false})
    );

    let link = ok(&call(&client, "path_info", json!({"path": "link"})).await);
    assert_eq!(
        pick(&link, &["type", "symlink_target", "target_type", "size"]),
        json!({"type": "symlink", "symlink_target": "f.txt", "target_type": "file", "size": 5})
    );
    let dangling = ok(&call(&client, "path_info", json!({"path": "dangling"})).await);
    assert_eq!(
        pick(
            &dangling,
            &["exists", "type", "symlink_target", "target_type"]
        ),
        json!({"exists": true, "type": "symlink", "symlink_target": "gone.txt", "target_type": "missing"})
    );
    let outward = ok(&call(&client, "path_info", json!({"path": "outward"})).await);
    assert_eq!(outward["target_type"], json!("outside_roots"));

    let result = call(&client, "path_info", json!({"path": "missing/file.txt"})).await;
    assert_eq!(
        ok(&result),
        json!({
            "path": root.join("missing/file.txt").display().to_string(),
            "exists": false,
            "type": null,
            "size": null,
            "modified": null,
            "permissions": null,
            "mode": null,
            "symlink_target": null,
            "target_type": null,
            "readonly": null,
            "media": null
        })
    );
    assert!(text(&result).contains("does not exist"));
}

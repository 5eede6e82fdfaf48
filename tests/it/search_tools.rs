//! grep, glob and read_many_files through the real binary: results, context, what the walk
//! leaves out (.gitignore, hidden, binary, secrets, links out of the root), the caps, and
//! errors that say what was wrong.

use std::fs;
use std::os::unix::fs::symlink;
use std::path::Path;
use std::time::{Duration, SystemTime};

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::common::*;

/// The `path` of every entry of `list` in `result`.
fn paths_of(result: &Value, list: &str) -> Vec<String> {
    result[list]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["path"].as_str().unwrap().to_owned())
        .collect()
}

fn abs(root: &Path, rel: &str) -> String {
    root.join(rel).display().to_string()
}

/// A tree where "needle" appears in a file that must be found and in every kind of file the
/// search must leave out.
fn haystack(root: &Path) {
    fs::write(root.join("found.txt"), "hay\nneedle one\nhay\n").unwrap();
    fs::write(root.join(".gitignore"), "ignored/\n*.log\n").unwrap();
    fs::create_dir(root.join("ignored")).unwrap();
    fs::write(root.join("ignored/x.txt"), "needle\n").unwrap();
    fs::write(root.join("app.log"), "needle\n").unwrap();
    fs::write(root.join("data.bin"), b"needle\n\0\x01\x02binary\n").unwrap();
    fs::write(root.join(".env"), "TOKEN=needle\n").unwrap();
    fs::write(root.join("id_rsa"), "needle\n").unwrap();
    fs::create_dir(root.join(".ssh")).unwrap();
    fs::write(root.join(".ssh/config"), "needle\n").unwrap();
    fs::write(root.join(".hidden.txt"), "needle hidden\n").unwrap();
}

#[tokio::test]
async fn grep_returns_matching_lines_with_context() {
    let (_d, root) = tempdir();
    fs::create_dir(root.join("src")).unwrap();
    fs::write(
        root.join("src/lib.rs"),
        "// top\nfn alpha() {}\nfn beta() {}\n\n// middle\n// more\n\nfn gamma() {}\n",
    )
    .unwrap();
    fs::write(root.join("notes.md"), "fn in prose\n").unwrap();
    let client = connect(&root).await;
    let result = call(
        &client,
        "grep",
        json!({"pattern": r"^fn \w+", "glob": "*.rs", "context": 1}),
    )
    .await;
    let lib = abs(&root, "src/lib.rs");
    assert_eq!(
        ok(&result),
        json!({
            "path": root.display().to_string(),
            "matches": [
                {"path": lib, "line_number": 2, "line": "fn alpha() {}", "before": ["// top"], "after": ["fn beta() {}"]},
                {"path": lib, "line_number": 3, "line": "fn beta() {}", "before": ["fn alpha() {}"], "after": [""]},
                {"path": lib, "line_number": 8, "line": "fn gamma() {}", "before": [""], "after": []},
            ],
            "files_searched": 1,
            "truncated": false
        })
    );
    let text = text(&result);
    assert!(
        text.starts_with(&format!("{lib}\n1-// top\n2:fn alpha() {{}}\n")),
        "{text}"
    );
    assert!(
        text.ends_with("[3 matching lines in 1 files; 1 files searched]"),
        "{text}"
    );
}

#[tokio::test]
async fn grep_skips_ignored_binary_hidden_and_secret_files() {
    let (_d, root) = tempdir();
    haystack(&root);
    let client = connect(&root).await;
    let found = ok(&call(&client, "grep", json!({"pattern": "needle"})).await);
    assert_eq!(paths_of(&found, "matches"), vec![abs(&root, "found.txt")]);
    // Hidden files come in with include_hidden; secrets never do.
    let hidden = ok(&call(
        &client,
        "grep",
        json!({"pattern": "needle", "include_hidden": true}),
    )
    .await);
    assert_eq!(
        paths_of(&hidden, "matches"),
        vec![abs(&root, ".hidden.txt"), abs(&root, "found.txt")]
    );
    // A file named explicitly is still refused when it is a secret.
    let secret = err(&call(&client, "grep", json!({"pattern": "x", "path": ".env"})).await);
    assert!(secret.contains("protected secret"), "{secret}");
}

#[tokio::test]
async fn grep_stays_inside_the_roots() {
    let (_d, base) = tempdir();
    let root = base.join("root");
    let outside = base.join("outside");
    fs::create_dir_all(&root).unwrap();
    fs::create_dir_all(&outside).unwrap();
    fs::write(outside.join("secret.txt"), "needle outside\n").unwrap();
    fs::write(root.join("inside.txt"), "needle inside\n").unwrap();
    symlink(&outside, root.join("door")).unwrap();
    symlink(outside.join("secret.txt"), root.join("link.txt")).unwrap();
    let client = connect(&root).await;
    let found = ok(&call(&client, "grep", json!({"pattern": "needle"})).await);
    assert_eq!(paths_of(&found, "matches"), vec![abs(&root, "inside.txt")]);
    for path in [
        "..".to_owned(),
        "../outside".to_owned(),
        outside.display().to_string(),
        "/etc".to_owned(),
    ] {
        let message = err(&call(&client, "grep", json!({"pattern": "x", "path": path})).await);
        assert!(
            message.contains("outside the allowed roots"),
            "{path}: {message}"
        );
    }
    let through_link = err(&call(
        &client,
        "grep",
        json!({"pattern": "needle", "path": "door"}),
    )
    .await);
    assert!(
        through_link.contains("resolves outside the allowed roots"),
        "{through_link}"
    );
    let missing = err(&call(&client, "grep", json!({"pattern": "x", "path": "nope"})).await);
    assert!(missing.contains("does not exist"), "{missing}");
    let nul = err(&call(
        &client,
        "glob",
        json!({"pattern": "*", "path": "inside.txt\u{0}../../outside"}),
    )
    .await);
    assert!(nul.contains("NUL byte"), "{nul}");
}

#[tokio::test]
async fn grep_caps_results_and_bytes_and_says_so() {
    let (_d, root) = tempdir();
    let lines: String = (1..=50).map(|i| format!("match {i}\n")).collect();
    fs::write(root.join("many.txt"), lines).unwrap();
    let client = connect(&root).await;
    let capped = call(
        &client,
        "grep",
        json!({"pattern": "match", "max_results": 10}),
    )
    .await;
    let result = ok(&capped);
    assert_eq!(result["matches"].as_array().unwrap().len(), 10);
    assert_eq!(result["truncated"], json!(true));
    assert!(
        text(&capped).contains("truncated at max_results=10"),
        "{}",
        text(&capped)
    );
    let exact = ok(&call(
        &client,
        "grep",
        json!({"pattern": "match", "max_results": 50}),
    )
    .await);
    assert_eq!(
        (
            exact["matches"].as_array().unwrap().len(),
            &exact["truncated"]
        ),
        (50, &json!(false)),
        "exactly max_results matches is not truncated"
    );

    // The byte budget is the read_file limit.
    let (_d2, small) = tempdir();
    let long: String = (0..40)
        .map(|i| format!("{i} match {}\n", "x".repeat(100)))
        .collect();
    fs::write(small.join("wide.txt"), long).unwrap();
    let client = connect_with(&small, &["--read-max-bytes", "1024"], TestClient::default()).await;
    let cut = call(
        &client,
        "grep",
        json!({"pattern": "match", "max_results": 1000}),
    )
    .await;
    let result = ok(&cut);
    let returned = result["matches"].as_array().unwrap();
    assert!(
        !returned.is_empty() && returned.len() < 40,
        "{}",
        returned.len()
    );
    assert_eq!(result["truncated"], json!(true));
    assert!(
        serde_json::to_string(&result).unwrap().len() <= 1024,
        "the result fits the budget"
    );
    assert!(text(&cut).contains("size limit of 1 KiB"), "{}", text(&cut));
}

#[tokio::test]
async fn grep_shortens_long_lines_around_the_match() {
    let (_d, root) = tempdir();
    let line = format!("{}NEEDLE{}\n", "a".repeat(5000), "b".repeat(5000));
    fs::write(root.join("min.js"), line).unwrap();
    let client = connect(&root).await;
    let result = ok(&call(&client, "grep", json!({"pattern": "NEEDLE"})).await);
    let shown = result["matches"][0]["line"].as_str().unwrap();
    assert_eq!(
        shown,
        format!("…{}NEEDLE{}…", "a".repeat(100), "b".repeat(294))
    );
}

#[tokio::test]
async fn grep_patterns_literal_case_insensitive_and_bad() {
    let (_d, root) = tempdir();
    fs::write(root.join("f.txt"), "call(a.b)\ncallXa_b)\nNeedle\n").unwrap();
    let client = connect(&root).await;
    let lines = |result: &Value| -> Vec<String> {
        result["matches"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["line"].as_str().unwrap().to_owned())
            .collect()
    };
    let literal = ok(&call(
        &client,
        "grep",
        json!({"pattern": "call(a.b", "fixed_strings": true}),
    )
    .await);
    assert_eq!(lines(&literal), vec!["call(a.b)"]);
    let regex = ok(&call(&client, "grep", json!({"pattern": r"call.a.b"})).await);
    assert_eq!(lines(&regex), vec!["call(a.b)", "callXa_b)"]);
    let sensitive = ok(&call(&client, "grep", json!({"pattern": "needle"})).await);
    assert_eq!(lines(&sensitive), Vec::<String>::new());
    let insensitive = ok(&call(
        &client,
        "grep",
        json!({"pattern": "needle", "case_insensitive": true}),
    )
    .await);
    assert_eq!(lines(&insensitive), vec!["Needle"]);
    let bad = err(&call(&client, "grep", json!({"pattern": "call(a.b"})).await);
    assert!(
        bad.starts_with("invalid arguments: invalid regular expression \"call(a.b\": unclosed group at character 5")
            && bad.contains("fixed_strings"),
        "{bad}"
    );
    let bad_glob = err(&call(&client, "grep", json!({"pattern": "x", "glob": "{a,b"})).await);
    assert!(
        bad_glob.contains("invalid glob \"{a,b\"") && bad_glob.contains("unclosed alternate"),
        "{bad_glob}"
    );
}

/// Set a file's modification time to `secs` after the epoch.
fn set_mtime(path: &Path, secs: u64) {
    fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(secs))
        .unwrap();
}

#[tokio::test]
async fn glob_sorts_by_path_or_mtime_and_caps() {
    let (_d, root) = tempdir();
    fs::create_dir_all(root.join("sub/deep")).unwrap();
    for (rel, mtime) in [
        ("b.rs", 3_000_000),
        ("a.rs", 1_000_000),
        ("sub/deep/c.rs", 2_000_000),
        ("notes.md", 4_000_000),
    ] {
        fs::write(root.join(rel), rel).unwrap();
        set_mtime(&root.join(rel), mtime);
    }
    fs::write(root.join(".hidden.rs"), "").unwrap();
    fs::write(root.join(".gitignore"), "gen.rs\n").unwrap();
    fs::write(root.join("gen.rs"), "").unwrap();
    fs::write(root.join("id_rsa.rs"), "").unwrap();
    let client = connect(&root).await;
    let by_path = call(&client, "glob", json!({"pattern": "*.rs"})).await;
    assert_eq!(
        ok(&by_path),
        json!({
            "path": root.display().to_string(),
            "files": [
                {"path": abs(&root, "a.rs"), "size": 4, "modified": "1970-01-12T13:46:40Z"},
                {"path": abs(&root, "b.rs"), "size": 4, "modified": "1970-02-04T17:20:00Z"},
                {"path": abs(&root, "sub/deep/c.rs"), "size": 13, "modified": "1970-01-24T03:33:20Z"},
            ],
            "total_matches": 3,
            "truncated": false
        })
    );
    let newest = ok(&call(
        &client,
        "glob",
        json!({"pattern": "**/*.rs", "sort": "mtime"}),
    )
    .await);
    assert_eq!(
        paths_of(&newest, "files"),
        vec![
            abs(&root, "b.rs"),
            abs(&root, "sub/deep/c.rs"),
            abs(&root, "a.rs")
        ]
    );
    let anchored = ok(&call(&client, "glob", json!({"pattern": "sub/**/*.rs"})).await);
    assert_eq!(
        paths_of(&anchored, "files"),
        vec![abs(&root, "sub/deep/c.rs")]
    );
    let capped = call(
        &client,
        "glob",
        json!({"pattern": "*.rs", "sort": "mtime", "max_results": 2}),
    )
    .await;
    let result = ok(&capped);
    assert_eq!(
        (
            paths_of(&result, "files"),
            &result["total_matches"],
            &result["truncated"]
        ),
        (
            vec![abs(&root, "b.rs"), abs(&root, "sub/deep/c.rs")],
            &json!(3),
            &json!(true)
        )
    );
    assert!(text(&capped).contains("2 of 3 matching files; truncated"));
    let hidden = ok(&call(
        &client,
        "glob",
        json!({"pattern": "*.rs", "include_hidden": true}),
    )
    .await);
    assert_eq!(
        paths_of(&hidden, "files"),
        vec![
            abs(&root, ".hidden.rs"),
            abs(&root, "a.rs"),
            abs(&root, "b.rs"),
            abs(&root, "sub/deep/c.rs")
        ]
    );
    let outside = err(&call(&client, "glob", json!({"pattern": "*", "path": "/etc"})).await);
    assert!(outside.contains("outside the allowed roots"), "{outside}");
}

#[tokio::test]
async fn read_many_files_reads_each_file_or_says_why_not() {
    let (_d, root) = tempdir();
    haystack(&root);
    fs::write(root.join("b.txt"), "bee\n").unwrap();
    let client = connect(&root).await;
    let result = call(
        &client,
        "read_many_files",
        json!({"paths": ["found.txt", "missing.txt", "/etc/hostname", ".env", "data.bin", "b.txt"]}),
    )
    .await;
    let files = ok(&result)["files"].as_array().unwrap().clone();
    assert_eq!(
        files[0],
        json!({
            "path": abs(&root, "found.txt"),
            "content": "hay\nneedle one\nhay\n",
            "encoding": "utf-8",
            "total_lines": 3,
            "truncated": false
        })
    );
    let error = |i: usize| files[i]["error"].as_str().unwrap().to_owned();
    assert_eq!(files[1]["path"], json!(abs(&root, "missing.txt")));
    assert!(error(1).contains("does not exist"), "{}", error(1));
    assert_eq!(files[2]["path"], json!("/etc/hostname"));
    assert!(
        error(2).contains("outside the allowed roots"),
        "{}",
        error(2)
    );
    assert!(error(3).contains("protected secret"), "{}", error(3));
    assert!(error(4).contains("binary file"), "{}", error(4));
    assert_eq!(files[5]["content"], json!("bee\n"));
    assert_eq!(ok(&result)["truncated"], json!(false));
    let text = text(&result);
    assert!(
        text.contains(&format!("==> {} <==\nhay\n", abs(&root, "found.txt")))
            && text.ends_with("[2 of 6 files read, 23 bytes]"),
        "{text}"
    );
    let neither = err(&call(&client, "read_many_files", json!({})).await);
    assert!(neither.contains("give `paths`"), "{neither}");
}

#[tokio::test]
async fn read_many_files_takes_a_glob_within_one_budget() {
    let (_d, root) = tempdir();
    // 60 lines of 10 bytes: 600 bytes a file.
    let body: String = (0..60).map(|i| format!("line {i:04}\n")).collect();
    for name in ["a.txt", "b.txt", "c.txt"] {
        fs::write(root.join(name), &body).unwrap();
    }
    fs::write(root.join("skip.md"), "not a txt\n").unwrap();
    let client = connect_with(&root, &["--read-max-bytes", "1024"], TestClient::default()).await;
    let result = ok(&call(
        &client,
        "read_many_files",
        json!({"glob": "*.txt", "max_bytes_per_file": 1024}),
    )
    .await);
    let files = result["files"].as_array().unwrap();
    assert_eq!(
        paths_of(&result, "files"),
        vec![
            abs(&root, "a.txt"),
            abs(&root, "b.txt"),
            abs(&root, "c.txt")
        ]
    );
    assert_eq!(files[0]["content"], json!(body));
    // b.txt gets what is left of the 1 KiB (424 bytes: 42 whole lines) and says where to go on.
    assert_eq!(
        (
            files[1]["content"].as_str().unwrap().len(),
            &files[1]["truncated"],
            &files[1]["next_offset"]
        ),
        (420, &json!(true), &json!(43))
    );
    assert!(
        files[2]["error"]
            .as_str()
            .unwrap()
            .starts_with("not read: the call's limit of 1 KiB"),
        "{}",
        files[2]
    );
    assert_eq!(
        (&result["total_bytes"], &result["truncated"]),
        (&json!(1020), &json!(true))
    );
    // paths first, then the glob's other matches, each once.
    let mixed = ok(&call(
        &client,
        "read_many_files",
        json!({"paths": ["c.txt"], "glob": "*.txt", "max_bytes_per_file": 20}),
    )
    .await);
    assert_eq!(
        paths_of(&mixed, "files"),
        vec![
            abs(&root, "c.txt"),
            abs(&root, "a.txt"),
            abs(&root, "b.txt")
        ]
    );
    assert_eq!(
        mixed["files"][0]["content"],
        json!("line 0000\nline 0001\n")
    );
}

#[tokio::test]
async fn grep_searches_one_named_file_and_glob_a_subdirectory() {
    let (_d, root) = tempdir();
    fs::create_dir_all(root.join("a/b")).unwrap();
    fs::write(root.join("a/one.txt"), "needle 1\n").unwrap();
    fs::write(root.join("a/b/two.txt"), "needle 2\n").unwrap();
    let client = connect(&root).await;
    let one = ok(&call(
        &client,
        "grep",
        json!({"pattern": "needle", "path": "a/one.txt", "glob": "*.md"}),
    )
    .await);
    assert_eq!(
        (paths_of(&one, "matches"), &one["path"]),
        (
            vec![abs(&root, "a/one.txt")],
            &json!(abs(&root, "a/one.txt"))
        ),
        "a file named as the path is searched whatever the glob"
    );
    let sub = ok(&call(&client, "glob", json!({"pattern": "b/*.txt", "path": "a"})).await);
    assert_eq!(paths_of(&sub, "files"), vec![abs(&root, "a/b/two.txt")]);
    let none = call(&client, "glob", json!({"pattern": "*.md"})).await;
    assert_eq!(ok(&none)["files"], json!([]));
    assert!(text(&none).starts_with("No files match"), "{}", text(&none));
    let too_many: Vec<String> = (0..201).map(|i| format!("f{i}")).collect();
    let refused = err(&call(&client, "read_many_files", json!({"paths": too_many})).await);
    assert!(refused.contains("at most 200 files"), "{refused}");
}

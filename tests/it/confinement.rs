//! Workspace confinement through the real binary: one named test per escape route. Each test
//! builds `outside/secret.txt` next to the root and checks that no tool reveals it.

use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use pretty_assertions::assert_eq;
use serde_json::json;

use crate::common::*;

const SECRET: &str = "TOP SECRET CONTENT";

/// `base/root` (the workspace) and `base/outside/secret.txt`.
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
    fs::write(outside.join("secret.txt"), SECRET).unwrap();
    fs::write(root.join("inside.txt"), "inside\n").unwrap();
    Layout {
        _dir: dir,
        base,
        root,
        outside,
    }
}

/// Read `path` and require a denial that names the allowed roots.
async fn assert_denied(client: &Client, root: &Path, path: &str) {
    let result = call(client, "read_file", json!({"path": path})).await;
    let message = err(&result);
    assert!(!message.contains(SECRET), "leaked: {message}");
    assert!(
        message.contains("outside the allowed roots"),
        "{path}: {message}"
    );
    assert!(
        message.contains(&root.display().to_string()),
        "the denial names the roots: {message}"
    );
}

#[tokio::test]
async fn dot_dot_cannot_leave_the_root() {
    let l = layout();
    let client = connect(&l.root).await;
    assert_denied(&client, &l.root, "../outside/secret.txt").await;
    assert_denied(&client, &l.root, "sub/../../outside/secret.txt").await;
    assert_denied(
        &client,
        &l.root,
        &format!("{}/../outside/secret.txt", l.root.display()),
    )
    .await;
    let listing = err(&call(&client, "list_directory", json!({"path": ".."})).await);
    assert!(listing.contains("outside the allowed roots"), "{listing}");
    // `..` that stays inside is fine.
    fs::create_dir(l.root.join("sub")).unwrap();
    let ok_read = ok(&call(&client, "read_file", json!({"path": "sub/../inside.txt"})).await);
    assert_eq!(ok_read["content"], json!("inside\n"));
}

#[tokio::test]
async fn absolute_paths_outside_the_roots_are_denied() {
    let l = layout();
    let client = connect(&l.root).await;
    assert_denied(
        &client,
        &l.root,
        &l.outside.join("secret.txt").display().to_string(),
    )
    .await;
    assert_denied(&client, &l.root, "/etc/passwd").await;
    let info = err(&call(&client, "path_info", json!({"path": "/etc/passwd"})).await);
    assert!(
        info.contains("outside the allowed roots"),
        "path_info does not reveal existence outside: {info}"
    );
    let inside = ok(&call(
        &client,
        "read_file",
        json!({"path": l.root.join("inside.txt").display().to_string()}),
    )
    .await);
    assert_eq!(inside["content"], json!("inside\n"));
}

#[tokio::test]
async fn a_sibling_directory_sharing_the_roots_prefix_is_outside() {
    let l = layout();
    let sibling = l.base.join("root2");
    fs::create_dir(&sibling).unwrap();
    fs::write(sibling.join("secret.txt"), SECRET).unwrap();
    let client = connect(&l.root).await;
    assert_denied(
        &client,
        &l.root,
        &sibling.join("secret.txt").display().to_string(),
    )
    .await;
    assert_denied(&client, &l.root, "../root2/secret.txt").await;
}

#[tokio::test]
async fn a_symlink_to_a_file_outside_is_denied() {
    let l = layout();
    symlink(l.outside.join("secret.txt"), l.root.join("abs_link.txt")).unwrap();
    symlink("../outside/secret.txt", l.root.join("rel_link.txt")).unwrap();
    let client = connect(&l.root).await;
    assert_denied(&client, &l.root, "abs_link.txt").await;
    assert_denied(&client, &l.root, "rel_link.txt").await;
}

#[tokio::test]
async fn a_symlink_to_a_directory_outside_is_denied() {
    let l = layout();
    symlink("../outside", l.root.join("door")).unwrap();
    let client = connect(&l.root).await;
    assert_denied(&client, &l.root, "door/secret.txt").await;
    let listing = err(&call(&client, "list_directory", json!({"path": "door"})).await);
    assert!(
        listing.contains("outside the allowed roots") && !listing.contains("secret.txt\n"),
        "{listing}"
    );
    // Listing the root shows the link but does not follow it.
    let root_listing = ok(&call(&client, "list_directory", json!({"depth": 3})).await);
    assert!(
        !root_listing.to_string().contains("secret.txt"),
        "{root_listing}"
    );
}

#[tokio::test]
async fn a_chain_of_symlinks_that_ends_outside_is_denied() {
    let l = layout();
    symlink("../outside/secret.txt", l.root.join("c")).unwrap();
    symlink("c", l.root.join("b")).unwrap();
    symlink("b", l.root.join("a")).unwrap();
    // A chain that stays inside is fine.
    symlink("inside.txt", l.root.join("y")).unwrap();
    symlink("y", l.root.join("x")).unwrap();
    let client = connect(&l.root).await;
    assert_denied(&client, &l.root, "a").await;
    let fine = ok(&call(&client, "read_file", json!({"path": "x"})).await);
    assert_eq!(fine["content"], json!("inside\n"));
}

#[tokio::test]
async fn a_dangling_symlink_pointing_outside_is_denied() {
    let l = layout();
    symlink("../outside/not-yet.txt", l.root.join("dangling")).unwrap();
    let client = connect(&l.root).await;
    assert_denied(&client, &l.root, "dangling").await;
    // Creating the target later does not open a way out either.
    fs::write(l.outside.join("not-yet.txt"), SECRET).unwrap();
    assert_denied(&client, &l.root, "dangling").await;
    // A dangling link inside the root is simply not found.
    symlink("missing.txt", l.root.join("dangling_inside")).unwrap();
    let missing = err(&call(&client, "read_file", json!({"path": "dangling_inside"})).await);
    assert!(missing.contains("does not exist"), "{missing}");
}

#[tokio::test]
async fn a_path_with_a_nul_byte_is_rejected() {
    let l = layout();
    let client = connect(&l.root).await;
    for tool in ["read_file", "list_directory", "path_info"] {
        let message = err(&call(
            &client,
            tool,
            json!({"path": "inside.txt\u{0}../../outside/secret.txt"}),
        )
        .await);
        assert!(message.contains("NUL byte"), "{tool}: {message}");
    }
}

#[tokio::test]
async fn a_symlink_swapped_in_during_reads_never_leaks() {
    let l = layout();
    fs::write(l.root.join("target.txt"), "safe\n").unwrap();
    let client = connect(&l.root).await;
    let swap_root = l.root.clone();
    let secret = l.outside.join("secret.txt");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stop_flag = stop.clone();
    // Flip `swap.txt` between a regular file and a symlink to the secret as fast as possible.
    let swapper = std::thread::spawn(move || {
        let path = swap_root.join("swap.txt");
        let tmp_file = swap_root.join("swap.file");
        let tmp_link = swap_root.join("swap.link");
        while !stop_flag.load(std::sync::atomic::Ordering::Relaxed) {
            let _ = fs::write(&tmp_file, "safe\n");
            let _ = fs::rename(&tmp_file, &path);
            let _ = symlink(&secret, &tmp_link);
            let _ = fs::rename(&tmp_link, &path);
        }
    });
    // At least 300 reads, and on until both states were met: on a loaded machine the swapper
    // thread may sit still for a while. Bounded, so a broken read path still fails.
    const MIN_READS: usize = 300;
    const MAX_READS: usize = 5_000;
    let (mut served, mut refused) = (0, 0);
    for read in 0..MAX_READS {
        let result = call(&client, "read_file", json!({"path": "swap.txt"})).await;
        let body = serde_json::to_string(&result).unwrap();
        assert!(
            !body.contains(SECRET),
            "a swapped symlink leaked the secret: {body}"
        );
        if result.is_error == Some(true) {
            refused += 1;
        } else {
            served += 1;
        }
        if read >= MIN_READS && served > 0 && refused > 0 {
            break;
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    swapper.join().unwrap();
    assert!(served > 0, "the regular file was served at least once");
}

#[tokio::test]
async fn secrets_are_denied_by_default_and_name_the_rule() {
    let l = layout();
    let r = &l.root;
    fs::write(r.join(".env"), "KEY=1").unwrap();
    fs::write(r.join(".env.local"), "KEY=1").unwrap();
    fs::write(r.join("server.pem"), "-----BEGIN").unwrap();
    fs::write(r.join("tls.key"), "k").unwrap();
    fs::write(r.join(".netrc"), "machine x").unwrap();
    for dir in [".ssh", ".aws", ".gnupg"] {
        fs::create_dir(r.join(dir)).unwrap();
        fs::write(r.join(dir).join("config"), "c").unwrap();
    }
    fs::write(r.join(".ssh/id_rsa"), "k").unwrap();
    fs::create_dir(r.join("keys")).unwrap();
    fs::write(r.join("keys/id_ed25519.pub"), "k").unwrap();
    symlink(".env", r.join("notes.txt")).unwrap();
    let client = connect(r).await;
    for (path, rule) in [
        (".env", ".env*"),
        (".env.local", ".env*"),
        ("server.pem", "*.pem"),
        ("tls.key", "*.key"),
        (".netrc", ".netrc"),
        (".ssh/config", ".ssh"),
        (".ssh/id_rsa", ".ssh"),
        (".aws/config", ".aws"),
        (".gnupg/config", ".gnupg"),
        ("keys/id_ed25519.pub", "id_ed25519*"),
        ("notes.txt", ".env*"),
    ] {
        let message = err(&call(&client, "read_file", json!({"path": path})).await);
        assert!(
            message.contains("protected secret") && message.contains(&format!("{rule:?}")),
            "{path}: {message}"
        );
    }
    // Secret directories are not listed, not even through a symlink, nor in a recursive walk.
    symlink(".ssh", r.join("keys_link")).unwrap();
    // A symlink in the middle of the path is followed to the secret it names.
    let message = err(&call(&client, "read_file", json!({"path": "keys_link/config"})).await);
    assert!(
        message.contains("protected secret") && message.contains("\".ssh\""),
        "keys_link/config: {message}"
    );
    for dir in [".ssh", "keys_link"] {
        let message = err(&call(&client, "list_directory", json!({"path": dir})).await);
        assert!(
            message.contains("protected secret") && message.contains("\".ssh\""),
            "{dir}: {message}"
        );
    }
    let walk = ok(&call(
        &client,
        "list_directory",
        json!({"depth": 3, "include_hidden": true}),
    )
    .await);
    let walk = walk.to_string();
    assert!(
        walk.contains("\".ssh\"") && !walk.contains("id_rsa"),
        "{walk}"
    );
}

#[tokio::test]
async fn secret_patterns_are_configurable() {
    let l = layout();
    fs::write(l.root.join(".env"), "KEY=1\n").unwrap();
    fs::write(l.root.join("private.txt"), "p\n").unwrap();
    let client = connect_configured(
        &l.root,
        "[workspace]\nsecret_patterns = [\"private.*\"]\n",
        TestClient::default(),
    )
    .await;
    assert_eq!(
        ok(&call(&client, "read_file", json!({"path": ".env"})).await)["content"],
        json!("KEY=1\n")
    );
    let denied = err(&call(&client, "read_file", json!({"path": "private.txt"})).await);
    assert!(denied.contains("\"private.*\""), "{denied}");
}

#[tokio::test]
async fn several_roots_each_allow_their_own_paths() {
    let l = layout();
    let second = l.base.join("second");
    fs::create_dir(&second).unwrap();
    fs::write(second.join("two.txt"), "two\n").unwrap();
    let second_arg = second.display().to_string();
    let client = connect_with(&l.root, &["--root", &second_arg], TestClient::default()).await;
    let two = ok(&call(
        &client,
        "read_file",
        json!({"path": second.join("two.txt").display().to_string()}),
    )
    .await);
    assert_eq!(two["content"], json!("two\n"));
    // Relative paths resolve against the first root.
    assert_eq!(
        ok(&call(&client, "read_file", json!({"path": "inside.txt"})).await)["content"],
        json!("inside\n")
    );
    let message = err(&call(&client, "read_file", json!({"path": "two.txt"})).await);
    assert!(
        message.contains("does not exist") && message.contains(&l.root.display().to_string()),
        "{message}"
    );
    assert_denied(
        &client,
        &l.root,
        &l.outside.join("secret.txt").display().to_string(),
    )
    .await;
}

#[tokio::test]
async fn client_roots_narrow_the_operator_roots() {
    let l = layout();
    fs::create_dir(l.root.join("sub")).unwrap();
    fs::write(l.root.join("sub/in_sub.txt"), "sub\n").unwrap();
    let client = connect_with(
        &l.root,
        &[],
        TestClient::with_roots(&[file_url(&l.root.join("sub"))]),
    )
    .await;
    let inside = ok(&call(
        &client,
        "read_file",
        json!({"path": l.root.join("sub/in_sub.txt").display().to_string()}),
    )
    .await);
    assert_eq!(inside["content"], json!("sub\n"));
    // Relative paths now resolve against the client's root.
    assert_eq!(
        ok(&call(&client, "read_file", json!({"path": "in_sub.txt"})).await)["content"],
        json!("sub\n")
    );
    let outside_sub = err(&call(
        &client,
        "read_file",
        json!({"path": l.root.join("inside.txt").display().to_string()}),
    )
    .await);
    assert!(
        outside_sub.contains("outside the allowed roots"),
        "{outside_sub}"
    );
}

#[tokio::test]
async fn changed_client_roots_take_effect_after_roots_list_changed() {
    let l = layout();
    fs::create_dir(l.root.join("a")).unwrap();
    fs::create_dir(l.root.join("b")).unwrap();
    fs::write(l.root.join("a/in_a.txt"), "a\n").unwrap();
    fs::write(l.root.join("b/in_b.txt"), "b\n").unwrap();
    let test_client = TestClient::with_roots(&[file_url(&l.root.join("a"))]);
    let mut asked = test_client.roots_asked();
    let client = connect_with(&l.root, &[], test_client.clone()).await;
    assert_eq!(
        ok(&call(&client, "read_file", json!({"path": "in_a.txt"})).await)["content"],
        json!("a\n")
    );
    within(asked.recv()).await.unwrap();

    test_client.set_roots(&[file_url(&l.root.join("b"))]);
    within(client.notify_roots_list_changed()).await.unwrap();
    // Once the server has asked, calls wait for the new roots to be applied.
    within(asked.recv()).await.unwrap();
    assert_eq!(
        ok(&call(&client, "read_file", json!({"path": "in_b.txt"})).await)["content"],
        json!("b\n")
    );
    let old = err(&call(
        &client,
        "read_file",
        json!({"path": l.root.join("a/in_a.txt").display().to_string()}),
    )
    .await);
    assert!(old.contains("outside the allowed roots"), "{old}");
}

#[tokio::test]
async fn client_roots_never_widen_the_operator_roots() {
    let l = layout();
    let client = connect_with(
        &l.root,
        &[],
        TestClient::with_roots(&[file_url(&l.outside), file_url(&l.base)]),
    )
    .await;
    // `base` contains the operator root: the operator root stays; `outside` is not added.
    assert_denied(
        &client,
        &l.root,
        &l.outside.join("secret.txt").display().to_string(),
    )
    .await;
    assert_eq!(
        ok(&call(&client, "read_file", json!({"path": "inside.txt"})).await)["content"],
        json!("inside\n")
    );
    drop(client);

    let client = connect_with(
        &l.root,
        &[],
        TestClient::with_roots(&[file_url(&l.outside)]),
    )
    .await;
    let message = err(&call(
        &client,
        "read_file",
        json!({"path": l.outside.join("secret.txt").display().to_string()}),
    )
    .await);
    assert!(
        message.contains("outside the allowed roots") && !message.contains(SECRET),
        "{message}"
    );
}

#[tokio::test]
async fn a_client_that_lists_no_roots_keeps_the_operator_roots() {
    let l = layout();
    let client = connect_with(&l.root, &[], TestClient::with_roots(&[])).await;
    assert_eq!(
        ok(&call(&client, "read_file", json!({"path": "inside.txt"})).await)["content"],
        json!("inside\n")
    );
}

#[tokio::test]
async fn the_root_itself_may_be_reached_through_a_symlinked_path() {
    // The operator names the root through a symlink; absolute paths may use either spelling.
    let l = layout();
    let alias = l.base.join("alias");
    symlink(&l.root, &alias).unwrap();
    let client = connect(&alias).await;
    let via_alias = ok(&call(
        &client,
        "read_file",
        json!({"path": alias.join("inside.txt").display().to_string()}),
    )
    .await);
    assert_eq!(via_alias["content"], json!("inside\n"));
    let via_real = ok(&call(
        &client,
        "read_file",
        json!({"path": l.root.join("inside.txt").display().to_string()}),
    )
    .await);
    assert_eq!(
        via_real["path"],
        json!(l.root.join("inside.txt").display().to_string())
    );
}

//! Workspace path resolution and confinement (crates/toolport-tools/src/workspace/, through
//! its doors `Workspace::fuzz_open_file`, `fuzz_open_dir`, `fuzz_resolve`, `fuzz_write_target`
//! and `fuzz_is_secret`).
//!
//! A scratch directory holds a root with files, directories, a secret (`.env`, `.ssh/`) and
//! symlinks of every kind (inside, to a directory, absolute, pointing outside, to the secret,
//! dangling, a loop), and beside it an `outside` directory and a sibling `rootx` whose name
//! starts with the root's. Every file inside holds `inside`; outside, `OUTSIDE`; secrets,
//! `SECRET`.
//!
//! Input: one byte choosing the operation (`read_file`'s open, `list_directory`'s open, a
//! plugin path's `resolve`, a write's target) and how the path is anchored (as given, under
//! the root's absolute path, glued to it, under the scratch directory), then the path text.
//! Property: no panic; whatever opens is inside the root by its real path (the handle's
//! `/proc/self/fd` link), a file read holds `inside` (never `OUTSIDE` or `SECRET`), a
//! resolved or write path lies beneath the root and is not a secret.
#![no_main]

use std::io::Read;
use std::os::fd::AsRawFd;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use libfuzzer_sys::fuzz_target;
use toolport_tools::Workspace;
use toolport_tools::host::WorkspaceSettings;

struct Scratch {
    _dir: tempfile::TempDir,
    base: PathBuf,
    root: PathBuf,
    workspace: Workspace,
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn scratch() -> Scratch {
    let dir = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(dir.path()).unwrap();
    let root = base.join("root");
    for rel in [
        "a.txt",
        "dir/b.txt",
        "dir/sub/c.txt",
        "notes/readme.md",
        "-rf",
    ] {
        write(&root.join(rel), "inside");
    }
    for rel in [
        ".env",
        ".ssh/id_ed25519",
        "dir/server.pem",
        "dir/.env.local",
    ] {
        write(&root.join(rel), "SECRET");
    }
    for rel in ["o.txt", "a.txt", "dir/b.txt", ".env"] {
        write(&base.join("outside").join(rel), "OUTSIDE");
    }
    write(&base.join("rootx/a.txt"), "OUTSIDE");
    write(&base.join("a.txt"), "OUTSIDE");
    let links: &[(&str, PathBuf)] = &[
        ("link_in", "a.txt".into()),
        ("link_dir", "dir".into()),
        ("link_abs_in", root.join("dir/b.txt")),
        ("link_out", "../outside/o.txt".into()),
        ("link_out_abs", base.join("outside/a.txt")),
        ("link_out_dir", "../outside".into()),
        ("dir/up", "../../outside".into()),
        ("dir/sub/deep", "../../../outside/dir".into()),
        ("link_rootx", "../rootx".into()),
        ("notes.txt", ".env".into()),
        ("dir/key", "../.ssh/id_ed25519".into()),
        ("dangling", "nowhere/x".into()),
        ("dangling_out", "../outside/missing".into()),
        ("loop1", "loop2".into()),
        ("loop2", "loop1".into()),
        ("link_root", ".".into()),
        ("link_parent", "..".into()),
        ("link_slash", "/".into()),
        ("link_etc", "/etc/passwd".into()),
    ];
    for (name, target) in links {
        symlink(target, root.join(name)).unwrap();
    }
    let patterns = WorkspaceSettings::default().secret_patterns;
    let workspace = Workspace::new(std::slice::from_ref(&root), &patterns).unwrap();
    Scratch {
        _dir: dir,
        base,
        root,
        workspace,
    }
}

thread_local! {
    static SCRATCH: Scratch = scratch();
}

fn real_path(handle: &std::fs::File) -> PathBuf {
    std::fs::read_link(format!("/proc/self/fd/{}", handle.as_raw_fd())).unwrap()
}

fn inside(s: &Scratch, path: &Path, what: &str) {
    assert!(
        path.starts_with(&s.root),
        "{what}: {} is not beneath the root {}",
        path.display(),
        s.root.display()
    );
    let rel = path.strip_prefix(&s.root).unwrap();
    assert!(
        !s.workspace.fuzz_is_secret(rel),
        "{what}: {} is a secret",
        path.display()
    );
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    SCRATCH.with(|s| {
        let user = match (mode >> 2) % 4 {
            0 => text.to_owned(),
            1 => format!("{}/{text}", s.root.display()),
            2 => format!("{}{text}", s.root.display()),
            _ => format!("{}/{text}", s.base.display()),
        };
        let what = format!("{user:?}");
        match mode % 4 {
            0 => {
                if let Ok((mut file, display)) = s.workspace.fuzz_open_file(&user) {
                    inside(s, &display, &what);
                    inside(s, &real_path(&file), &what);
                    let mut content = String::new();
                    let _ = file.read_to_string(&mut content);
                    assert_eq!(
                        content,
                        "inside",
                        "{what} opened {}",
                        real_path(&file).display()
                    );
                }
            }
            1 => {
                if let Ok((dir, display)) = s.workspace.fuzz_open_dir(&user) {
                    inside(s, &display, &what);
                    inside(s, &real_path(&dir), &what);
                }
            }
            2 => {
                if let Ok(path) = s.workspace.fuzz_resolve(&user) {
                    inside(s, &path, &what);
                    if let Ok(real) = std::fs::canonicalize(&path) {
                        inside(s, &real, &what);
                    }
                }
            }
            _ => {
                if let Ok((dir, name, display)) = s.workspace.fuzz_write_target(&user) {
                    let parent = real_path(&dir);
                    assert!(
                        parent.starts_with(&s.root),
                        "{what}: parent {}",
                        parent.display()
                    );
                    let name_text = name.to_string_lossy();
                    assert!(
                        !name_text.is_empty()
                            && !name_text.contains('/')
                            && name_text != ".."
                            && name_text != ".",
                        "{what}: entry name {name:?}"
                    );
                    inside(s, &parent.join(&name), &what);
                    inside(s, &display, &what);
                }
            }
        }
    });
});

//! Real Landlock tests through `toolport __sandbox-exec`: what the kernel allows and refuses.
//!
//! When Landlock cannot enforce a spec here, each test checks that the shim fails closed
//! (exit 125, nothing run) instead, unless `EXPECT_LANDLOCK` is set (`.ci/run` sets it): then
//! the test fails.

use std::ffi::{OsStr, OsString};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use toolport_tools::host::exec::sandbox::{SandboxSpec, probe, shim_command};

use crate::common::bin;

fn spec(writable: &[&Path], readable: &[&Path], no_network: bool) -> SandboxSpec {
    SandboxSpec {
        writable: writable.iter().map(|p| p.to_path_buf()).collect(),
        readable: readable.iter().map(|p| p.to_path_buf()).collect(),
        no_network,
    }
}

/// Runs `program args` confined by `spec` through the shim.
fn run_confined(spec: &SandboxSpec, program: &str, args: &[&str]) -> Output {
    let args: Vec<OsString> = args.iter().map(OsString::from).collect();
    let (_current_exe, argv) = shim_command(spec, OsStr::new(program), &args).unwrap();
    Command::new(bin())
        .args(&argv)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn sh(spec: &SandboxSpec, script: &str) -> Output {
    run_confined(spec, "sh", &["-c", script])
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `Some(abi description)` when Landlock can enforce `spec` here; otherwise checks that the shim
/// refuses to run anything and returns `None`.
fn landlock_or_fail_closed(spec: &SandboxSpec) -> Option<String> {
    match probe(spec) {
        Ok(abi) => Some(abi),
        Err(why) => {
            // CI sets EXPECT_LANDLOCK: there, a kernel that cannot enforce the spec fails the
            // test instead of passing it on the fail-closed branch below.
            assert!(
                std::env::var_os("EXPECT_LANDLOCK").is_none(),
                "EXPECT_LANDLOCK is set, but Landlock cannot enforce {spec:?} here: {why}"
            );
            eprintln!("Landlock cannot enforce {spec:?} here: {why}");
            let marker = std::env::temp_dir().join(format!("ran-{}", std::process::id()));
            let out = sh(spec, &format!("touch {}", marker.display()));
            assert_eq!(out.status.code(), Some(125), "{}", stderr(&out));
            assert!(
                stderr(&out).starts_with("toolport sandbox: "),
                "{}",
                stderr(&out)
            );
            assert!(!marker.exists(), "the command ran unconfined");
            None
        }
    }
}

fn landlock_abi() -> Option<u32> {
    probe(&spec(&[], &[], false))
        .ok()?
        .strip_prefix("Landlock ABI ")?
        .split(' ')
        .next()?
        .parse()
        .ok()
}

#[test]
fn probe_reports_the_abi() {
    let result = probe(&spec(&[], &[], false));
    eprintln!("probe: {result:?}");
    match result {
        Ok(abi) => assert!(abi.starts_with("Landlock ABI "), "{abi}"),
        Err(why) => assert!(why.contains("Landlock"), "{why}"),
    }
    // This development machine (Linux 6.18) has Landlock ABI 7; CI runs on the same kind.
    if std::env::var_os("EXPECT_LANDLOCK").is_some() {
        assert!(
            landlock_abi().is_some_and(|abi| abi >= 4),
            "{:?}",
            landlock_abi()
        );
    }
}

#[test]
fn writes_outside_the_writable_dirs_are_refused() {
    let work = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let s = spec(&[work.path()], &[], false);
    if landlock_or_fail_closed(&s).is_none() {
        return;
    }
    let target = outside.path().join("escaped");
    // Without the sandbox this user can write there.
    std::fs::write(&target, "control").unwrap();
    std::fs::remove_file(&target).unwrap();

    let out = sh(&s, &format!("echo x > '{}'", target.display()));
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("Permission denied"),
        "{}",
        stderr(&out)
    );
    assert!(!target.exists());

    // Children of the program are confined too.
    let out = sh(&s, &format!("sh -c \"echo x > '{}'\"", target.display()));
    assert!(!out.status.success());
    assert!(!target.exists());

    // Neither deleting nor truncating an existing file outside works.
    let existing = outside.path().join("keep");
    std::fs::write(&existing, "precious").unwrap();
    let out = sh(
        &s,
        &format!(
            "rm -f '{0}'; truncate -s 0 '{0}'; mv '{0}' '{1}/moved'",
            existing.display(),
            work.path().display()
        ),
    );
    assert!(!out.status.success());
    assert_eq!(std::fs::read_to_string(&existing).unwrap(), "precious");
}

#[test]
fn writes_inside_the_writable_dirs_work() {
    let work = tempfile::tempdir().unwrap();
    let s = spec(&[work.path()], &[], false);
    if landlock_or_fail_closed(&s).is_none() {
        return;
    }
    let dir = work.path().display();
    let out = sh(
        &s,
        &format!(
            "set -e; mkdir '{dir}/sub'; echo hello > '{dir}/sub/f'; echo more >> '{dir}/sub/f'; \
             mv '{dir}/sub/f' '{dir}/g'; ln -s g '{dir}/link'; truncate -s 2 '{dir}/g'; \
             rm -r '{dir}/sub'; cat '{dir}/link'; echo ok > /dev/null; head -c 4 /dev/urandom | wc -c"
        ),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "he4\n");
    assert_eq!(
        std::fs::read_to_string(work.path().join("g")).unwrap(),
        "he"
    );
}

#[test]
fn no_network_blocks_tcp_connect_and_bind() {
    let s = spec(&[], &[], true);
    if landlock_or_fail_closed(&s).is_none() {
        return;
    }
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let connect = format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected");

    // Control: the same command connects without `no_network`.
    let out = run_confined(&spec(&[], &[], false), "bash", &["-c", &connect]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "connected\n");

    let out = run_confined(&s, "bash", &["-c", &connect]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("Permission denied"),
        "{}",
        stderr(&out)
    );
    assert!(out.stdout.is_empty());

    let bind = "import socket; socket.socket().bind(('127.0.0.1', 0)); print('bound')";
    if Command::new("python3")
        .arg("-c")
        .arg("1")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        let out = run_confined(&spec(&[], &[], false), "python3", &["-c", bind]);
        assert!(out.status.success(), "{}", stderr(&out));
        let out = run_confined(&s, "python3", &["-c", bind]);
        assert!(!out.status.success());
        assert!(stderr(&out).contains("PermissionError"), "{}", stderr(&out));
    }
}

#[test]
fn restricted_readable_dirs_hide_the_rest() {
    let work = tempfile::tempdir().unwrap();
    let secret_dir = tempfile::tempdir().unwrap();
    let secret = secret_dir.path().join("secret");
    std::fs::write(&secret, "s3cret").unwrap();
    std::fs::write(work.path().join("visible"), "visible").unwrap();
    let system: Vec<&Path> = ["/usr", "/bin", "/lib", "/lib64", "/etc"]
        .iter()
        .map(Path::new)
        .collect();
    let s = spec(&[work.path()], &system, false);
    if landlock_or_fail_closed(&s).is_none() {
        return;
    }
    let out = sh(
        &s,
        &format!("cat '{}'", work.path().join("visible").display()),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "visible");
    let out = sh(&s, &format!("cat '{}'", secret.display()));
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("Permission denied"),
        "{}",
        stderr(&out)
    );
    // With the default (empty) readable list, the same file is readable.
    let out = sh(
        &spec(&[work.path()], &[], false),
        &format!("cat '{}'", secret.display()),
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "s3cret");
}

#[test]
fn signals_to_outside_processes_are_blocked_from_abi_6() {
    let s = spec(&[], &[], false);
    if landlock_or_fail_closed(&s).is_none() || landlock_abi().is_none_or(|abi| abi < 6) {
        return;
    }
    let mut victim = Command::new("sleep").arg("30").spawn().unwrap();
    let out = sh(&s, &format!("kill -0 {}", victim.id()));
    assert!(
        !out.status.success(),
        "a confined command signalled an outside process"
    );
    let out = sh(&s, "sleep 30 & kill $! && wait $!; echo $?");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "143\n",
        "{}",
        stderr(&out)
    );
    victim.kill().unwrap();
    victim.wait().unwrap();
}

#[test]
fn shim_exit_codes() {
    let work = tempfile::tempdir().unwrap();
    let s = spec(&[work.path()], &[], false);
    if landlock_or_fail_closed(&s).is_none() {
        return;
    }
    let out = run_confined(&s, "toolport-no-such-program", &[]);
    assert_eq!(out.status.code(), Some(127));
    assert!(
        stderr(&out).starts_with("toolport sandbox: "),
        "{}",
        stderr(&out)
    );
    assert_eq!(stderr(&out).lines().count(), 1);

    let not_executable = work.path().join("script");
    std::fs::write(&not_executable, "#!/bin/sh\n").unwrap();
    let out = run_confined(&s, not_executable.to_str().unwrap(), &[]);
    assert_eq!(out.status.code(), Some(126));
    assert!(
        stderr(&out).starts_with("toolport sandbox: "),
        "{}",
        stderr(&out)
    );

    // The program's own exit code passes through.
    let out = sh(&s, "exit 42");
    assert_eq!(out.status.code(), Some(42));

    // A missing workspace root: refuse, run nothing.
    let missing = work.path().join("missing");
    let marker = work.path().join("ran");
    let out = sh(
        &spec(&[work.path(), &missing], &[], false),
        &format!("touch '{}'", marker.display()),
    );
    assert_eq!(out.status.code(), Some(125));
    assert!(
        stderr(&out).starts_with("toolport sandbox: writable directory"),
        "{}",
        stderr(&out)
    );
    assert!(stderr(&out).contains("refusing to run the command unconfined"));
    assert!(!marker.exists());
}

#[test]
fn a_missing_temp_dir_is_skipped() {
    let work = tempfile::tempdir().unwrap();
    let s = spec(&[work.path()], &[], false);
    if landlock_or_fail_closed(&s).is_none() {
        return;
    }
    let tmp: PathBuf = work.path().join("no-such-tmp");
    let args = [OsString::from("-c"), OsString::from("echo ran")];
    let (_, argv) = shim_command(
        &spec(&[work.path(), &tmp], &[], false),
        OsStr::new("sh"),
        &args,
    )
    .unwrap();
    let out = Command::new(bin())
        .args(&argv)
        .env("TMPDIR", &tmp)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "ran\n");
}

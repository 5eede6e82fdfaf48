//! Optional Landlock confinement for `execute_command` (`--sandbox landlock`): this file is the
//! shim's interface and command line; the confinement is `landlock.rs` on Linux and a refusal
//! that says why (`unsupported.rs`) on every other system.
//!
//! # How it is applied
//!
//! Toolport never restricts itself. To run a command confined, it re-executes its own binary as
//! `toolport __sandbox-exec [--write DIR]... [--read DIR]... [--no-network] -- PROGRAM ARGS...`
//! (see [`shim_command`]). That shim ([`run_shim`]) builds a Landlock ruleset, restricts
//! itself with the safe API of the `landlock` crate, and then replaces itself with `PROGRAM`
//! through `execve` ([`std::os::unix::process::CommandExt::exec`]). A Landlock domain survives
//! `execve` and is inherited by every child, so `PROGRAM` and everything it starts stay confined;
//! nothing needs `unsafe` `pre_exec`. The shim also sets `no_new_privs` (Landlock requires it), so
//! set-user-ID programs (`sudo`, `su`, ...) cannot gain privileges inside the sandbox.
//!
//! # What is confined
//!
//! - **Writes.** Every filesystem right of the kernel's Landlock ABI is handled: writing, creating
//!   and removing files, directories, links, FIFOs, sockets and devices, renaming/linking across
//!   directories (`Refer`, ABI 2), truncation (ABI 3) and device `ioctl`s (ABI 5). They are
//!   granted only beneath the [`SandboxSpec::writable`] directories (the workspace roots and the
//!   temp dir), plus read/write/truncate on `/dev/null`, which countless programs (and every
//!   `cmd >/dev/null`) need.
//! - **Reads and execution, optionally.** Reading files, listing directories and executing are
//!   allowed beneath [`SandboxSpec::readable`], or beneath `/` when it is empty (the default:
//!   the whole filesystem stays readable). When it is not empty it must contain what the program
//!   needs to start (e.g. `/usr`, `/bin`, `/lib`, `/lib64`, `/etc`, and `/proc` for many tools);
//!   `/dev/zero`, `/dev/random` and `/dev/urandom` are always readable. Entries may be files; missing entries are skipped.
//! - **TCP, optionally.** With [`SandboxSpec::no_network`], `bind(2)` and `connect(2)` on TCP
//!   sockets are denied (Landlock ABI 4, Linux 6.7+). On ABI 6+ connecting to abstract UNIX
//!   sockets created outside the sandbox is denied too, and on ABI 9+ connecting to pathname UNIX
//!   sockets outside the writable directories.
//! - **Signals (ABI 6+, Linux 6.12+).** The command cannot signal processes outside its sandbox
//!   (toolport, the user's other processes); it can still signal its own children.
//!
//! # What is not confined
//!
//! - UDP, raw, netlink, and other non-TCP sockets, even with `no_network` (Landlock only
//!   mediates TCP bind/connect); on ABI < 6 abstract UNIX sockets, and on ABI < 9 pathname UNIX
//!   sockets (e.g. a Docker or D-Bus socket the user may access).
//! - Signals and `ptrace` towards other processes on ABI < 6 (`ptrace` is limited by Landlock to
//!   processes in the same or a nested domain on every ABI).
//! - Reading: by default the whole filesystem (including the user's secrets such as `~/.ssh`)
//!   is readable; restrict [`SandboxSpec::readable`] to narrow it.
//! - Files already open before the shim runs (its stdin/stdout/stderr), anonymous pipes and
//!   sockets, and `/proc/self/fd/N` re-opens of pipes.
//! - Resource limits (CPU, memory, processes, disk space), time, and `/dev/shm`: POSIX shared
//!   memory and semaphores (`shm_open`, `sem_open`, e.g. Python `multiprocessing`) need `/dev/shm`
//!   in [`SandboxSpec::writable`].
//!
//! # Fail closed
//!
//! The shim never runs the program unconfined. Every right it asks for is a
//! [`CompatLevel::HardRequirement`], it asks only for what the running kernel's ABI supports,
//! and it refuses (exit code 125, one `toolport sandbox:` line on stderr) unless the kernel
//! reports the ruleset as [`RulesetStatus::FullyEnforced`] with `no_new_privs` set. It also
//! refuses when:
//! - Landlock is missing or disabled, or its ABI is below 3 (Linux 6.2): without the truncate
//!   right, `truncate(2)` could still destroy files outside the writable directories;
//! - `no_network` is asked for and the ABI is below 4;
//! - a writable directory does not exist or is not a directory, except the temp dir
//!   ([`std::env::temp_dir`] or `/tmp`), which is then skipped (the command just cannot write
//!   there);
//! - a path cannot be opened or a rule cannot be added.
//!
//! [`probe`] runs the same checks and builds the same ruleset without enforcing it, so toolport
//! can refuse `--sandbox landlock` at start-up with the same diagnostic.
//!
//! [`CompatLevel::HardRequirement`]: landlock::CompatLevel::HardRequirement
//! [`RulesetStatus::FullyEnforced`]: landlock::RulesetStatus::FullyEnforced

use std::ffi::{OsStr, OsString};
use std::io;
use std::path::{Path, PathBuf};

// The confinement itself, per OS: Landlock on Linux; elsewhere a refusal that says why (the
// sandbox is never skipped silently).
#[cfg(target_os = "linux")]
#[path = "landlock.rs"]
mod os;
#[cfg(not(target_os = "linux"))]
#[path = "unsupported.rs"]
mod os;

/// What a confined command may touch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxSpec {
    /// Directories (and everything below) the command may write: the workspace roots and the temp dir.
    pub writable: Vec<PathBuf>,
    /// Directories the command may read and execute from. Empty means the whole filesystem (`/`).
    pub readable: Vec<PathBuf>,
    /// Block network access (TCP bind/connect, which is what Landlock can enforce; ABI >= 4).
    pub no_network: bool,
}

/// Name of the hidden subcommand.
pub(crate) const SHIM_SUBCOMMAND: &str = "__sandbox-exec";

/// Exit code of the shim when the sandbox cannot be enforced (nothing was run).
const EXIT_SANDBOX: i32 = 125;
/// Exit code of the shim when the program exists but cannot be executed (as a shell does).
const EXIT_CANNOT_EXECUTE: i32 = 126;
/// Exit code of the shim when the program is not found (as a shell does).
const EXIT_NOT_FOUND: i32 = 127;

const OPT_WRITE: &str = "--write";
const OPT_READ: &str = "--read";
const OPT_NO_NETWORK: &str = "--no-network";
const OPT_END: &str = "--";

/// Whether the sandbox can enforce `spec` here: on Linux, whether Landlock can on this kernel.
/// Returns what enforces it ("Landlock ABI 6"), or why it cannot: no Landlock in the kernel (it
/// needs Linux 5.13+ with `CONFIG_SECURITY_LANDLOCK` and `landlock` in the `lsm=` boot list),
/// an ABI too old for what `spec` asks (blocking the network needs ABI 4, Linux 6.7+), or an
/// operating system without Landlock. Only builds a ruleset; the calling process is not
/// restricted. Cheap enough to call once at start-up.
///
/// It checks the ABI, opens every path of `spec` and builds the complete ruleset the shim would
/// enforce, then drops it: a missing workspace root is reported here too.
pub fn probe(spec: &SandboxSpec) -> Result<String, String> {
    os::probe(spec)
}

/// The command that runs `program args` confined by `spec`: the current executable, and the
/// arguments `__sandbox-exec --write DIR … --read DIR … [--no-network] -- PROGRAM ARGS…`
/// that [`run_shim`] parses back. Paths and arguments stay `OsString`s (nothing is converted
/// lossily).
///
/// Fails with [`io::ErrorKind::InvalidInput`] when a path of `spec` is not absolute or `program`
/// is empty, and with the error of [`std::env::current_exe`] when that fails.
pub fn shim_command(
    spec: &SandboxSpec,
    program: &OsStr,
    args: &[OsString],
) -> io::Result<(PathBuf, Vec<OsString>)> {
    let invalid = |msg: String| io::Error::new(io::ErrorKind::InvalidInput, msg);
    if program.is_empty() {
        return Err(invalid("sandbox: empty program name".to_owned()));
    }
    let mut argv =
        Vec::with_capacity(4 + 2 * (spec.writable.len() + spec.readable.len()) + args.len());
    argv.push(OsString::from(SHIM_SUBCOMMAND));
    for (opt, paths) in [(OPT_WRITE, &spec.writable), (OPT_READ, &spec.readable)] {
        for path in paths {
            check_path(opt, path).map_err(invalid)?;
            argv.push(OsString::from(opt));
            argv.push(path.clone().into_os_string());
        }
    }
    if spec.no_network {
        argv.push(OsString::from(OPT_NO_NETWORK));
    }
    argv.push(OsString::from(OPT_END));
    argv.push(program.to_os_string());
    argv.extend(args.iter().cloned());
    Ok((std::env::current_exe()?, argv))
}

/// The shim's entry point: parses `args` (everything after the subcommand name), applies
/// Landlock, and execs the program. Returns only on failure, after a one-line diagnostic on
/// stderr starting with "toolport sandbox:", with the exit code to use: 125 when the sandbox
/// cannot be enforced (fail closed: a ruleset that is only partly enforced refuses too, so the
/// program never runs unconfined), 127 when the program is not found, 126 when it cannot be
/// executed.
///
/// The argument parser is hand-written, not clap: it runs before anything else in the
/// process, and it only has to read back what [`shim_command`] wrote (tests check the round
/// trip).
///
/// Call it before the process starts any thread: Landlock restricts the calling thread, which
/// then `execve`s (so the program is fully confined either way, but other threads of the shim
/// would not be).
pub(crate) fn run_shim(args: &[OsString]) -> i32 {
    let invocation = match parse_shim_args(args) {
        Ok(invocation) => invocation,
        Err(msg) => {
            eprintln!("toolport sandbox: invalid arguments: {msg}");
            return EXIT_SANDBOX;
        }
    };
    if let Err(err) = os::confine(&invocation.spec) {
        eprintln!("toolport sandbox: {err}; refusing to run the command unconfined");
        return EXIT_SANDBOX;
    }
    // Only returns on failure; on success the confined program replaces this process.
    let err = os::exec(&invocation.program, &invocation.args);
    let program = Path::new(&invocation.program).display();
    match err.kind() {
        io::ErrorKind::NotFound => {
            eprintln!("toolport sandbox: {program}: command not found ({err})");
            EXIT_NOT_FOUND
        }
        io::ErrorKind::PermissionDenied => {
            eprintln!(
                "toolport sandbox: {program}: cannot execute ({err}: not executable, or \
                 outside the directories the sandbox lets it execute from)"
            );
            EXIT_CANNOT_EXECUTE
        }
        _ => {
            eprintln!("toolport sandbox: {program}: cannot execute ({err})");
            EXIT_CANNOT_EXECUTE
        }
    }
}

/// A parsed shim command line.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Invocation {
    spec: SandboxSpec,
    program: OsString,
    args: Vec<OsString>,
}

/// Parses the shim's arguments (after the subcommand name): the inverse of [`shim_command`].
fn parse_shim_args(args: &[OsString]) -> Result<Invocation, String> {
    let mut spec = SandboxSpec {
        writable: Vec::new(),
        readable: Vec::new(),
        no_network: false,
    };
    let mut iter = args.iter();
    loop {
        let Some(arg) = iter.next() else {
            return Err(format!("missing `{OPT_END}` before the program"));
        };
        match arg.to_str() {
            Some(OPT_END) => break,
            Some(OPT_NO_NETWORK) => spec.no_network = true,
            Some(opt @ (OPT_WRITE | OPT_READ)) => {
                let Some(value) = iter.next() else {
                    return Err(format!("{opt} needs a directory"));
                };
                let path = PathBuf::from(value);
                check_path(opt, &path)?;
                if opt == OPT_WRITE {
                    spec.writable.push(path);
                } else {
                    spec.readable.push(path);
                }
            }
            _ => return Err(format!("unknown option {}", Path::new(arg).display())),
        }
    }
    let Some(program) = iter.next() else {
        return Err(format!("missing program after `{OPT_END}`"));
    };
    if program.is_empty() {
        return Err("empty program name".to_owned());
    }
    Ok(Invocation {
        spec,
        program: program.clone(),
        args: iter.cloned().collect(),
    })
}

/// Paths are passed between processes whose working directories may differ: absolute only.
fn check_path(opt: &str, path: &Path) -> Result<(), String> {
    if path.is_absolute() {
        Ok(())
    } else {
        Err(format!(
            "{opt} needs an absolute path, got {:?}",
            path.as_os_str()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::ffi::OsStringExt;

    fn os(s: &str) -> OsString {
        OsString::from(s)
    }

    fn spec(writable: &[&str], readable: &[&str], no_network: bool) -> SandboxSpec {
        SandboxSpec {
            writable: writable.iter().map(PathBuf::from).collect(),
            readable: readable.iter().map(PathBuf::from).collect(),
            no_network,
        }
    }

    fn round_trip(spec: &SandboxSpec, program: &OsStr, args: &[OsString]) {
        let (exe, argv) = shim_command(spec, program, args).unwrap();
        assert_eq!(exe, std::env::current_exe().unwrap());
        assert_eq!(argv[0], os(SHIM_SUBCOMMAND));
        let parsed = parse_shim_args(&argv[1..]).unwrap();
        assert_eq!(
            parsed,
            Invocation {
                spec: spec.clone(),
                program: program.to_os_string(),
                args: args.to_vec(),
            }
        );
    }

    #[test]
    fn shim_command_builds_the_documented_argv() {
        let s = spec(&["/work/a", "/tmp"], &["/usr"], true);
        let (_, argv) = shim_command(&s, OsStr::new("sh"), &[os("-c"), os("echo hi")]).unwrap();
        let expected = [
            "__sandbox-exec",
            "--write",
            "/work/a",
            "--write",
            "/tmp",
            "--read",
            "/usr",
            "--no-network",
            "--",
            "sh",
            "-c",
            "echo hi",
        ];
        assert_eq!(argv, expected.map(os));
    }

    #[test]
    fn shim_command_round_trips() {
        round_trip(&spec(&[], &[], false), OsStr::new("true"), &[]);
        round_trip(
            &spec(&["/w1", "/w 2"], &["/usr", "/etc/ld.so.cache"], true),
            OsStr::new("/bin/sh"),
            &[os("-c"), os("echo x > /tmp/y")],
        );
        // Program arguments that look like shim options stay program arguments.
        round_trip(
            &spec(&["/w"], &[], false),
            OsStr::new("--write"),
            &[os("--"), os("--no-network"), os("--read"), os(""), os("/x")],
        );
    }

    #[test]
    fn shim_command_round_trips_non_utf8() {
        let bad_path = PathBuf::from(OsString::from_vec(b"/tmp/\xff\xfe dir".to_vec()));
        let bad_arg = OsString::from_vec(b"arg-\x80".to_vec());
        let s = SandboxSpec {
            writable: vec![bad_path.clone()],
            readable: vec![bad_path],
            no_network: false,
        };
        let program = OsString::from_vec(b"/opt/\xc3prog".to_vec());
        round_trip(&s, &program, &[bad_arg]);
    }

    #[test]
    fn shim_command_rejects_bad_input() {
        let err = shim_command(&spec(&["relative"], &[], false), OsStr::new("sh"), &[]);
        assert_eq!(err.unwrap_err().kind(), io::ErrorKind::InvalidInput);
        let err = shim_command(&spec(&[], &["usr"], false), OsStr::new("sh"), &[]);
        assert_eq!(err.unwrap_err().kind(), io::ErrorKind::InvalidInput);
        let err = shim_command(&spec(&[], &[""], false), OsStr::new("sh"), &[]);
        assert_eq!(err.unwrap_err().kind(), io::ErrorKind::InvalidInput);
        let err = shim_command(&spec(&[], &[], false), OsStr::new(""), &[]);
        assert_eq!(err.unwrap_err().kind(), io::ErrorKind::InvalidInput);
    }

    #[test]
    fn parser_rejects_malformed_arguments() {
        let cases: &[(&[&str], &str)] = &[
            (&[], "missing `--`"),
            (&["--write", "/w", "sh"], "unknown option sh"),
            (&["--write", "/w"], "missing `--`"),
            (&["--write"], "--write needs a directory"),
            (&["--read"], "--read needs a directory"),
            (&["--write", "w", "--", "sh"], "absolute path"),
            (&["--read", "", "--", "sh"], "absolute path"),
            (&["--write", "--", "sh"], "absolute path"),
            (&["--frobnicate", "--", "sh"], "unknown option --frobnicate"),
            (&["--write=/w", "--", "sh"], "unknown option --write=/w"),
            (&["--"], "missing program"),
            (&["--no-network", "--", ""], "empty program"),
        ];
        for (args, expected) in cases {
            let args: Vec<OsString> = args.iter().map(|a| os(a)).collect();
            let err = parse_shim_args(&args).unwrap_err();
            assert!(
                err.contains(expected),
                "{args:?}: {err:?} lacks {expected:?}"
            );
        }
        let non_utf8 = [OsString::from_vec(b"--\xff".to_vec()), os("--"), os("sh")];
        assert!(
            parse_shim_args(&non_utf8)
                .unwrap_err()
                .contains("unknown option")
        );
    }

    #[test]
    fn parser_accepts_options_in_any_order() {
        let args = [
            "--no-network",
            "--read",
            "/r",
            "--write",
            "/w",
            "--no-network",
            "--",
            "p",
        ];
        let parsed = parse_shim_args(&args.map(os)).unwrap();
        assert_eq!(parsed.spec, spec(&["/w"], &["/r"], true));
        assert_eq!(parsed.program, os("p"));
        assert!(parsed.args.is_empty());
    }

    #[test]
    fn run_shim_refuses_bad_arguments_without_running_anything() {
        assert_eq!(
            run_shim(&[os("--bogus"), os("--"), os("true")]),
            EXIT_SANDBOX
        );
        assert_eq!(run_shim(&[]), EXIT_SANDBOX);
    }
}

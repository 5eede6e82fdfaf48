//! Optional Landlock confinement for `execute_command` (`--sandbox landlock`).
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
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, LandlockStatus,
    PathBeneath, PathFd, RestrictSelf, Ruleset, RulesetAttr, RulesetCreated, RulesetCreatedAttr,
    RulesetStatus, Scope, make_bitflags,
};

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

/// Lowest Landlock ABI accepted: ABI 3 is the first that confines truncation.
const MIN_ABI: ABI = ABI::V3;
/// Lowest Landlock ABI that can block TCP.
const NET_ABI: ABI = ABI::V4;
/// Lowest Landlock ABI with scopes (signals, abstract UNIX sockets).
const SCOPE_ABI: ABI = ABI::V6;

/// Device files that stay readable (only matters when `readable` is restricted).
const READABLE_DEVICES: [&str; 3] = ["/dev/zero", "/dev/random", "/dev/urandom"];
/// The device every program may read, write and truncate (`cmd >/dev/null`).
const DEV_NULL: &str = "/dev/null";

const OPT_WRITE: &str = "--write";
const OPT_READ: &str = "--read";
const OPT_NO_NETWORK: &str = "--no-network";
const OPT_END: &str = "--";

/// Whether Landlock can enforce `spec` on this kernel. Returns the ABI in use ("Landlock ABI
/// 6"), or why it cannot: no Landlock in the kernel (it needs Linux 5.13+ with
/// `CONFIG_SECURITY_LANDLOCK` and `landlock` in the `lsm=` boot list), or an ABI too old for
/// what `spec` asks (blocking the network needs ABI 4, Linux 6.7+). Only builds a ruleset; the
/// calling process is not restricted. Cheap enough to call once at start-up.
///
/// It checks the ABI, opens every path of `spec` and builds the complete ruleset the shim would
/// enforce, then drops it: a missing workspace root is reported here too.
pub fn probe(spec: &SandboxSpec) -> Result<String, String> {
    let status = landlock_status();
    let plan = Plan::new(spec, status)?;
    build_ruleset(spec, &plan).map_err(|e| e.to_string())?;
    Ok(describe(status))
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
    if let Err(err) = confine(&invocation.spec) {
        eprintln!("toolport sandbox: {err}; refusing to run the command unconfined");
        return EXIT_SANDBOX;
    }
    // Only returns on failure; on success the confined program replaces this process.
    let err = Command::new(&invocation.program)
        .args(&invocation.args)
        .exec();
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

/// Why the sandbox cannot be set up; every variant means exit code 125.
#[derive(Debug, thiserror::Error)]
enum SandboxError {
    /// The kernel cannot enforce what was asked for.
    #[error("{0}")]
    Unsupported(String),
    /// A writable directory is missing or is not a directory.
    #[error("writable directory {}: {reason}", path.display())]
    Writable {
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// A path of the spec cannot be opened (the error names the path).
    #[error(transparent)]
    Path(#[from] landlock::PathFdError),
    /// A Landlock call failed.
    #[error("Landlock: {0}")]
    Ruleset(#[from] landlock::RulesetError),
    /// The kernel did not enforce everything.
    #[error("Landlock was not fully enforced (ruleset {ruleset:?}, no_new_privs {no_new_privs})")]
    NotEnforced {
        /// What the kernel reported.
        ruleset: RulesetStatus,
        /// Whether `no_new_privs` was set.
        no_new_privs: bool,
    },
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

/// The kernel's Landlock status, without restricting anything.
fn landlock_status() -> LandlockStatus {
    // `RestrictSelf::default()` queries the kernel's ABI version. With no flag requested and
    // `no_new_privs(false)`, `apply()` makes no `prctl` and no `landlock_restrict_self` call
    // (landlock 0.4.7, src/restrict_self.rs): it only reports that status.
    match RestrictSelf::default().no_new_privs(false).apply() {
        Ok(status) => status.landlock,
        // Not reachable with nothing requested; "not implemented" makes callers fail closed.
        Err(_) => LandlockStatus::NotImplemented,
    }
}

/// One-line description of a working Landlock, for [`probe`].
fn describe(status: LandlockStatus) -> String {
    match status {
        LandlockStatus::Available {
            effective_abi,
            kernel_abi: Some(kernel),
        } => format!("Landlock ABI {effective_abi} (the kernel has ABI {kernel})"),
        LandlockStatus::Available { effective_abi, .. } => format!("Landlock ABI {effective_abi}"),
        LandlockStatus::NotEnabled | LandlockStatus::NotImplemented => {
            "Landlock unavailable".to_owned()
        }
    }
}

/// The first Linux release with `abi`, for diagnostics.
fn linux_release(abi: ABI) -> &'static str {
    match abi {
        ABI::V1 => "5.13",
        ABI::V2 => "5.19",
        ABI::V3 => "6.2",
        ABI::V4 => "6.7",
        ABI::V5 => "6.10",
        ABI::V6 => "6.12",
        ABI::V7 => "6.15",
        ABI::V8 => "7.0",
        ABI::V9 => "7.1",
        _ => "?",
    }
}

/// The access rights to ask for, derived from the spec and the kernel's ABI only (no syscall).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Plan {
    /// Filesystem rights the ruleset handles (denied unless a rule grants them).
    handled_fs: BitFlags<AccessFs>,
    /// Granted beneath a readable directory.
    read_dir: BitFlags<AccessFs>,
    /// Granted on a readable file.
    read_file: BitFlags<AccessFs>,
    /// Granted on `/dev/null`.
    dev_null: BitFlags<AccessFs>,
    /// Network rights the ruleset handles (all denied: no rule grants them).
    handled_net: BitFlags<AccessNet>,
    /// Scopes the ruleset restricts.
    scopes: BitFlags<Scope>,
}

impl Plan {
    fn new(spec: &SandboxSpec, status: LandlockStatus) -> Result<Self, String> {
        let abi = match status {
            LandlockStatus::NotImplemented => {
                return Err(
                    "the kernel does not support Landlock (needs Linux 5.13+ with \
                            CONFIG_SECURITY_LANDLOCK and `landlock` in the lsm= boot list; \
                            a seccomp filter, e.g. a container's, may also hide it)"
                        .to_owned(),
                );
            }
            LandlockStatus::NotEnabled => {
                return Err(
                    "Landlock is built into the kernel but not enabled (add `landlock` \
                            to the lsm= boot parameter)"
                        .to_owned(),
                );
            }
            LandlockStatus::Available { effective_abi, .. } => effective_abi,
        };
        if abi < MIN_ABI {
            return Err(format!(
                "confining writes needs Landlock ABI {MIN_ABI} (Linux {}+, which also confines \
                 truncate(2)), this kernel has ABI {abi}",
                linux_release(MIN_ABI)
            ));
        }
        if spec.no_network && abi < NET_ABI {
            return Err(format!(
                "network blocking needs Landlock ABI {NET_ABI} (Linux {}+), this kernel has ABI {abi}",
                linux_release(NET_ABI)
            ));
        }
        let mut handled_fs = AccessFs::from_all(abi);
        if !spec.no_network {
            // ABI 9's ResolveUnix (connecting to pathname UNIX sockets) is network access:
            // leave it unhandled unless the network is blocked.
            handled_fs.remove(AccessFs::ResolveUnix);
        }
        let read_dir = make_bitflags!(AccessFs::{ReadFile | ReadDir | Execute});
        let read_file = make_bitflags!(AccessFs::{ReadFile | Execute});
        let dev_null =
            make_bitflags!(AccessFs::{ReadFile | WriteFile | Truncate | IoctlDev}) & handled_fs;
        let handled_net = if spec.no_network {
            AccessNet::from_all(abi)
        } else {
            BitFlags::EMPTY
        };
        let scopes = if abi < SCOPE_ABI {
            BitFlags::EMPTY
        } else if spec.no_network {
            Scope::from_all(abi)
        } else {
            Scope::Signal.into()
        };
        Ok(Self {
            handled_fs,
            read_dir,
            read_file,
            dev_null,
            handled_net,
            scopes,
        })
    }
}

/// Builds the complete ruleset for `spec` (a real Landlock ruleset, not yet enforced).
fn build_ruleset(spec: &SandboxSpec, plan: &Plan) -> Result<RulesetCreated, SandboxError> {
    // HardRequirement: any right the kernel cannot enforce is an error, never silently dropped.
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(plan.handled_fs)?;
    if !plan.handled_net.is_empty() {
        ruleset = ruleset.handle_access(plan.handled_net)?;
    }
    if !plan.scopes.is_empty() {
        ruleset = ruleset.scope(plan.scopes)?;
    }
    let mut ruleset = ruleset.create()?;

    let root = [PathBuf::from("/")];
    let readable = if spec.readable.is_empty() {
        &root[..]
    } else {
        &spec.readable[..]
    };
    for path in readable {
        // Missing readable entries are skipped: fewer rights, not more.
        let Ok(meta) = std::fs::metadata(path) else {
            continue;
        };
        let access = if meta.is_dir() {
            plan.read_dir
        } else {
            plan.read_file
        };
        ruleset = add_path_rule(ruleset, path, access)?;
    }

    for path in &spec.writable {
        match std::fs::metadata(path) {
            Ok(meta) if meta.is_dir() => ruleset = add_path_rule(ruleset, path, plan.handled_fs)?,
            Ok(_) => {
                return Err(SandboxError::Writable {
                    path: path.clone(),
                    reason: "not a directory".to_owned(),
                });
            }
            Err(err) if err.kind() == io::ErrorKind::NotFound && is_temp_dir(path) => {}
            Err(err) => {
                return Err(SandboxError::Writable {
                    path: path.clone(),
                    reason: err.to_string(),
                });
            }
        }
    }

    if Path::new(DEV_NULL).exists() {
        ruleset = add_path_rule(ruleset, Path::new(DEV_NULL), plan.dev_null)?;
    }
    for device in READABLE_DEVICES {
        if Path::new(device).exists() {
            ruleset = add_path_rule(ruleset, Path::new(device), AccessFs::ReadFile.into())?;
        }
    }
    Ok(ruleset)
}

fn add_path_rule(
    ruleset: RulesetCreated,
    path: &Path,
    access: BitFlags<AccessFs>,
) -> Result<RulesetCreated, SandboxError> {
    let fd = PathFd::new(path)?;
    Ok(ruleset.add_rule(PathBeneath::new(fd, access))?)
}

/// Whether `path` is the temp dir, the one writable directory that may be missing.
fn is_temp_dir(path: &Path) -> bool {
    path == std::env::temp_dir() || path == Path::new("/tmp")
}

/// Restricts the calling thread (and, after `execve`, the program and its children) to `spec`.
fn confine(spec: &SandboxSpec) -> Result<(), SandboxError> {
    let plan = Plan::new(spec, landlock_status()).map_err(SandboxError::Unsupported)?;
    let status = build_ruleset(spec, &plan)?.restrict_self()?;
    if status.ruleset == RulesetStatus::FullyEnforced && status.no_new_privs {
        Ok(())
    } else {
        Err(SandboxError::NotEnforced {
            ruleset: status.ruleset,
            no_new_privs: status.no_new_privs,
        })
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

    fn available(abi: ABI) -> LandlockStatus {
        LandlockStatus::Available {
            effective_abi: abi,
            kernel_abi: None,
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

    #[test]
    fn plan_fails_closed_without_landlock() {
        let s = spec(&["/w"], &[], false);
        let err = Plan::new(&s, LandlockStatus::NotImplemented).unwrap_err();
        assert!(err.contains("does not support Landlock"), "{err}");
        assert!(err.contains("lsm="), "{err}");
        let err = Plan::new(&s, LandlockStatus::NotEnabled).unwrap_err();
        assert!(err.contains("not enabled"), "{err}");
        for abi in [ABI::V1, ABI::V2] {
            let err = Plan::new(&s, available(abi)).unwrap_err();
            assert!(err.contains("needs Landlock ABI 3 (Linux 6.2+"), "{err}");
            assert!(err.contains(&format!("this kernel has ABI {abi}")), "{err}");
        }
    }

    #[test]
    fn plan_requires_abi_4_for_network_blocking() {
        let err = Plan::new(&spec(&[], &[], true), available(ABI::V3)).unwrap_err();
        assert_eq!(
            err,
            "network blocking needs Landlock ABI 4 (Linux 6.7+), this kernel has ABI 3"
        );
        let plan = Plan::new(&spec(&[], &[], true), available(ABI::V4)).unwrap();
        assert_eq!(plan.handled_net, AccessNet::BindTcp | AccessNet::ConnectTcp);
        let plan = Plan::new(&spec(&[], &[], false), available(ABI::V4)).unwrap();
        assert!(plan.handled_net.is_empty());
    }

    #[test]
    fn plan_handles_every_write_right_of_the_abi() {
        for abi in [ABI::V3, ABI::V4, ABI::V5, ABI::V6, ABI::V7, ABI::V8] {
            let plan = Plan::new(&spec(&[], &[], false), available(abi)).unwrap();
            assert_eq!(plan.handled_fs, AccessFs::from_all(abi), "{abi:?}");
            assert!(
                plan.handled_fs
                    .contains(AccessFs::Refer | AccessFs::Truncate)
            );
            assert!(plan.handled_fs.contains(plan.dev_null));
            assert!(plan.handled_fs.contains(plan.read_dir | plan.read_file));
            assert!(
                plan.dev_null
                    .contains(AccessFs::WriteFile | AccessFs::Truncate)
            );
        }
        // ResolveUnix (ABI 9) is network access: handled only with `no_network`.
        let open = Plan::new(&spec(&[], &[], false), available(ABI::V9)).unwrap();
        assert!(!open.handled_fs.contains(AccessFs::ResolveUnix));
        let closed = Plan::new(&spec(&[], &[], true), available(ABI::V9)).unwrap();
        assert_eq!(closed.handled_fs, AccessFs::from_all(ABI::V9));
    }

    #[test]
    fn plan_scopes_signals_from_abi_6() {
        let plan = Plan::new(&spec(&[], &[], false), available(ABI::V5)).unwrap();
        assert!(plan.scopes.is_empty());
        let plan = Plan::new(&spec(&[], &[], false), available(ABI::V6)).unwrap();
        assert_eq!(plan.scopes, BitFlags::from(Scope::Signal));
        let plan = Plan::new(&spec(&[], &[], true), available(ABI::V6)).unwrap();
        assert_eq!(plan.scopes, Scope::Signal | Scope::AbstractUnixSocket);
    }

    #[test]
    fn describe_names_the_abi() {
        assert_eq!(describe(available(ABI::V6)), "Landlock ABI 6");
        let newer = LandlockStatus::Available {
            effective_abi: ABI::V9,
            kernel_abi: Some(12),
        };
        assert_eq!(describe(newer), "Landlock ABI 9 (the kernel has ABI 12)");
    }

    /// `probe` must leave the calling thread unrestricted, whatever the kernel.
    #[test]
    fn probe_does_not_restrict_the_caller() {
        let dir = tempfile::tempdir().unwrap();
        let inside = dir.path().join("inside");
        std::fs::create_dir(&inside).unwrap();
        let result = probe(&SandboxSpec {
            writable: vec![inside],
            readable: vec![],
            no_network: false,
        });
        eprintln!("probe on this machine: {result:?}");
        let status = std::fs::read_to_string("/proc/thread-self/status").unwrap();
        assert!(status.contains("NoNewPrivs:\t0"), "{status}");
        std::fs::write(dir.path().join("outside"), "still writable").unwrap();
    }

    #[test]
    fn probe_reports_a_missing_workspace_root() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing");
        let result = probe(&SandboxSpec {
            writable: vec![missing],
            readable: vec![],
            no_network: false,
        });
        let err = result.unwrap_err();
        let landlock_works = probe(&spec(&[], &[], false)).is_ok();
        if landlock_works {
            assert!(
                err.contains("writable directory") && err.contains("missing"),
                "{err}"
            );
        }
    }

    #[test]
    fn a_missing_temp_dir_is_skipped() {
        assert!(is_temp_dir(Path::new("/tmp")));
        assert!(is_temp_dir(&std::env::temp_dir()));
        assert!(!is_temp_dir(Path::new("/tmp/work")));
    }
}

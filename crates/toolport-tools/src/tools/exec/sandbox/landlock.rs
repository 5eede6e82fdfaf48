//! Landlock, the sandbox on Linux (the module doc of `sandbox` says what it confines and how
//! it fails closed).

use std::io;
use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, LandlockStatus,
    PathBeneath, PathFd, RestrictSelf, Ruleset, RulesetAttr, RulesetCreated, RulesetCreatedAttr,
    RulesetStatus, Scope, make_bitflags,
};

use super::SandboxSpec;

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

/// [`super::probe`] on Linux.
pub(super) fn probe(spec: &SandboxSpec) -> Result<String, String> {
    let status = landlock_status();
    let plan = Plan::new(spec, status)?;
    build_ruleset(spec, &plan).map_err(|e| e.to_string())?;
    Ok(describe(status))
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

/// Restricts the calling thread (and, after `execve`, the program and its children) to `spec`;
/// why it cannot, in a line.
pub(super) fn confine(spec: &SandboxSpec) -> Result<(), String> {
    enforce(spec).map_err(|error| error.to_string())
}

fn enforce(spec: &SandboxSpec) -> Result<(), SandboxError> {
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

/// Replace this (confined) process with `program`: returns only on failure, with the reason.
pub(super) fn exec(program: &std::ffi::OsStr, args: &[std::ffi::OsString]) -> std::io::Error {
    use std::os::unix::process::CommandExt;
    std::process::Command::new(program).args(args).exec()
}

#[cfg(test)]
mod tests {
    use super::*;

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

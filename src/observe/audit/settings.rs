//! The audit log's settings: the `--audit-log` flag, the `[audit]` section of the config file
//! (its keys are the library's [`FileAudit`], which owns the file's format), and the layered
//! result ([`AuditSettings`]) with its defaults and limits.

use std::path::{Path, PathBuf};

use clap::Args;
use serde::Serialize;
use toolport_tools::host::config::FileAudit;
use toolport_tools::host::settings::{SettingError, check_range};

/// Default size at which the log is rotated: large enough for days of calls, small enough to
/// open in an editor.
const DEFAULT_MAX_BYTES: u64 = 10 * 1024 * 1024;
/// Smallest rotation size accepted: a record must fit.
const MIN_MAX_BYTES: u64 = 64 * 1024;
/// Default number of rotated files kept.
const DEFAULT_KEEP: u32 = 5;
/// Most rotated files kept.
const MAX_KEEP: u32 = 100;

/// The audit flag.
#[derive(Debug, Clone, Default, Args)]
pub(crate) struct AuditArgs {
    /// Append a JSON line per tool call to FILE ("-": stderr). Default: off.
    #[arg(
        long = "audit-log",
        value_name = "FILE",
        env = "TOOLPORT_AUDIT_LOG",
        global = true
    )]
    pub(crate) path: Option<PathBuf>,
}

/// Audit log settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AuditSettings {
    /// `None`: off. `-`: stderr.
    pub(crate) path: Option<PathBuf>,
    pub(crate) max_bytes: u64,
    pub(crate) keep: u32,
}

impl Default for AuditSettings {
    fn default() -> Self {
        Self {
            path: None,
            max_bytes: DEFAULT_MAX_BYTES,
            keep: DEFAULT_KEEP,
        }
    }
}

impl AuditSettings {
    /// Layer the file < environment/flag; relative paths resolve against the config file's
    /// folder (file) or the current directory (flag, environment).
    pub(crate) fn load(
        file: &FileAudit,
        args: &AuditArgs,
        file_dir: &Path,
        cwd: &Path,
    ) -> Result<Self, SettingError> {
        let resolve = |base: &Path, p: &PathBuf| {
            if p.as_os_str() == "-" {
                p.clone()
            } else {
                base.join(p)
            }
        };
        let path = match (&args.path, &file.path) {
            (Some(p), _) => Some(resolve(cwd, p)),
            (None, Some(p)) => Some(resolve(file_dir, p)),
            (None, None) => None,
        }
        .filter(|p| !p.as_os_str().is_empty());
        let max_bytes = file.max_bytes.unwrap_or(DEFAULT_MAX_BYTES);
        check_range("audit.max_bytes", max_bytes, MIN_MAX_BYTES..=u64::MAX)?;
        let keep = file.keep.unwrap_or(DEFAULT_KEEP);
        check_range("audit.keep", keep, 0..=MAX_KEEP)?;
        Ok(Self {
            path,
            max_bytes,
            keep,
        })
    }
}

//! The environment a command runs with: minimal (PATH with absolute entries only, what the OS
//! needs — HOME, LANG, TMPDIR on Unix; SystemRoot, PATHEXT, ComSpec, TEMP … on Windows, see
//! [`os::host_env`] — and the operator's allowlist), non-interactive defaults so nothing waits
//! for a human,
//! and the call's own variables minus those that change how programs load or shells start.
//! The server's own environment (and its secrets) is not inherited.

use std::collections::BTreeMap;

use super::os;
use crate::tool::ToolError;

/// Environment variables a call may not set: they change how programs are loaded or how
/// shells start, which would let a call run code the policy never saw.
const DENIED_ENV_PREFIXES: &[&str] = &["LD_", "DYLD_", "BASH_FUNC_"];
/// Compared without regard to case (Windows' variable names are case-insensitive; on Unix a
/// refused lowercase twin costs nothing). `COMSPEC` and `PATHEXT` decide, on Windows, which
/// shell runs batch files and which files count as programs.
const DENIED_ENV_NAMES: &[&str] = &[
    "BASH_ENV",
    "ENV",
    "IFS",
    "PROMPT_COMMAND",
    "SHELLOPTS",
    "PS4",
    "COMSPEC",
    "PATHEXT",
];

/// Variables every command gets so that nothing waits for a human: no pager, no editor, no git
/// credential prompt, and tools' non-interactive modes (CI=1).
const NON_INTERACTIVE_ENV: &[(&str, &str)] = &[
    ("TERM", "dumb"),
    ("PAGER", "cat"),
    ("GIT_PAGER", "cat"),
    ("MANPAGER", "cat"),
    ("GIT_TERMINAL_PROMPT", "0"),
    ("GIT_EDITOR", "true"),
    ("EDITOR", "true"),
    ("VISUAL", "true"),
    ("CI", "1"),
    ("DEBIAN_FRONTEND", "noninteractive"),
];

/// The environment a command runs with: PATH, HOME, LANG, TMPDIR, the operator's allowlist,
/// the non-interactive defaults, then the call's own `env` (refused names rejected).
pub fn child_env(
    env_allowlist: &[String],
    extra: Option<&BTreeMap<String, String>>,
) -> Result<Vec<(String, String)>, ToolError> {
    let mut env: BTreeMap<String, String> = BTreeMap::new();
    env.insert(
        "PATH".into(),
        absolute_path_entries(
            &std::env::var_os("PATH").unwrap_or_else(|| os::FALLBACK_PATH.into()),
        ),
    );
    env.extend(os::host_env());
    for name in env_allowlist {
        if let Ok(value) = std::env::var(name) {
            env.insert(name.clone(), value);
        }
    }
    for (name, value) in NON_INTERACTIVE_ENV {
        env.insert((*name).into(), (*value).into());
    }
    for (name, value) in extra.into_iter().flatten() {
        check_variable(name)?;
        if value.contains('\0') {
            return Err(ToolError::InvalidArguments(format!(
                "env: the value of {name} contains a NUL byte"
            )));
        }
        env.insert(name.clone(), value.clone());
    }
    Ok(env.into_iter().collect())
}

/// Whether a call (or an upstream server's settings) may set the variable `name`: a valid
/// name, and not one that changes how programs load or how shells start.
pub(crate) fn check_variable(name: &str) -> Result<(), ToolError> {
    let valid = !name.is_empty()
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !name.starts_with(|c: char| c.is_ascii_digit());
    if !valid {
        return Err(ToolError::InvalidArguments(format!(
            "env: {name:?} is not a valid variable name (letters, digits and _, not starting with a digit)"
        )));
    }
    let upper = name.to_ascii_uppercase();
    if DENIED_ENV_NAMES.contains(&upper.as_str())
        || DENIED_ENV_PREFIXES.iter().any(|p| upper.starts_with(p))
    {
        return Err(ToolError::PermissionDenied(format!(
            "env: setting {name} is not allowed (it changes how programs load or how shells start); refused names are {} and anything starting with {}",
            DENIED_ENV_NAMES.join(", "),
            DENIED_ENV_PREFIXES.join(", ")
        )));
    }
    Ok(())
}

/// `PATH` without its empty and relative entries: they resolve against the command's working
/// directory (the workspace), so a program name allowed by the policy (or named by a plugin)
/// could run a file the agent wrote.
/// Entries are split and joined with the OS's separator (`:`, `;` on Windows).
fn absolute_path_entries(path: &std::ffi::OsStr) -> String {
    let kept: Vec<std::path::PathBuf> = std::env::split_paths(path)
        .filter(|entry| entry.is_absolute())
        .collect();
    match std::env::join_paths(&kept) {
        Ok(joined) if !kept.is_empty() => joined.to_string_lossy().into_owned(),
        _ => os::FALLBACK_PATH.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn with(name: &str) -> Result<Vec<(String, String)>, ToolError> {
        child_env(
            &[],
            Some(&BTreeMap::from([(name.to_owned(), "x".to_owned())])),
        )
    }

    #[test]
    fn refused_names_are_refused_in_any_case() {
        // Windows' variable names are case-insensitive: `comspec` is `ComSpec` there.
        for name in [
            "LD_PRELOAD",
            "ld_preload",
            "Bash_Env",
            "ComSpec",
            "pathext",
            "dyld_x",
        ] {
            assert!(
                matches!(with(name), Err(ToolError::PermissionDenied(_))),
                "{name}"
            );
        }
        assert!(with("RUST_LOG").is_ok());
    }

    #[test]
    fn path_keeps_only_absolute_entries_with_the_systems_separator() {
        let path = std::env::join_paths(["relative/bin", "/usr/bin", "", "/bin"]).unwrap();
        let kept = absolute_path_entries(&path);
        let entries: Vec<_> = std::env::split_paths(&kept).collect();
        assert_eq!(
            entries,
            [std::path::PathBuf::from("/usr/bin"), "/bin".into()],
            "{kept}"
        );
        let none = std::env::join_paths(["a", "b"]).unwrap();
        assert_eq!(absolute_path_entries(&none), os::FALLBACK_PATH);
    }
}

//! The environment a command runs with: minimal (PATH with absolute entries only, HOME, LANG,
//! TMPDIR, the operator's allowlist), non-interactive defaults so nothing waits for a human,
//! and the call's own variables minus those that change how programs load or shells start.
//! The server's own environment (and its secrets) is not inherited.

use std::collections::BTreeMap;

use super::process;
use crate::tool::ToolError;

/// Environment variables a call may not set: they change how programs are loaded or how
/// shells start, which would let a call run code the policy never saw.
const DENIED_ENV_PREFIXES: &[&str] = &["LD_", "DYLD_", "BASH_FUNC_"];
const DENIED_ENV_NAMES: &[&str] = &[
    "BASH_ENV",
    "ENV",
    "IFS",
    "PROMPT_COMMAND",
    "SHELLOPTS",
    "PS4",
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
            &std::env::var("PATH").unwrap_or_else(|_| process::FALLBACK_PATH.into()),
        ),
    );
    if let Ok(home) = std::env::var("HOME") {
        env.insert("HOME".into(), home);
    }
    env.insert(
        "LANG".into(),
        std::env::var("LANG").unwrap_or_else(|_| "C.UTF-8".into()),
    );
    // The server's temp dir: with a sandbox it is the one writable place outside the roots.
    env.insert("TMPDIR".into(), std::env::temp_dir().display().to_string());
    for name in env_allowlist {
        if let Ok(value) = std::env::var(name) {
            env.insert(name.clone(), value);
        }
    }
    for (name, value) in NON_INTERACTIVE_ENV {
        env.insert((*name).into(), (*value).into());
    }
    for (name, value) in extra.into_iter().flatten() {
        let valid = !name.is_empty()
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !name.starts_with(|c: char| c.is_ascii_digit());
        if !valid {
            return Err(ToolError::InvalidArguments(format!(
                "env: {name:?} is not a valid variable name (letters, digits and _, not starting with a digit)"
            )));
        }
        if DENIED_ENV_NAMES.contains(&name.as_str())
            || DENIED_ENV_PREFIXES.iter().any(|p| name.starts_with(p))
        {
            return Err(ToolError::PermissionDenied(format!(
                "env: setting {name} is not allowed (it changes how programs load or how shells start); refused names are {} and anything starting with {}",
                DENIED_ENV_NAMES.join(", "),
                DENIED_ENV_PREFIXES.join(", ")
            )));
        }
        if value.contains('\0') {
            return Err(ToolError::InvalidArguments(format!(
                "env: the value of {name} contains a NUL byte"
            )));
        }
        env.insert(name.clone(), value.clone());
    }
    Ok(env.into_iter().collect())
}

/// `PATH` without its empty and relative entries: they resolve against the command's working
/// directory (the workspace), so a program name allowed by the policy (or named by a plugin)
/// could run a file the agent wrote.
fn absolute_path_entries(path: &str) -> String {
    let kept: Vec<&str> = path
        .split(':')
        .filter(|entry| entry.starts_with('/'))
        .collect();
    if kept.is_empty() {
        process::FALLBACK_PATH.to_owned()
    } else {
        kept.join(":")
    }
}

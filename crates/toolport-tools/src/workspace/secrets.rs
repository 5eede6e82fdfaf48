//! The secret rules: which paths are never read or written, checked on the path as given and
//! on the real path of an opened handle.

use std::borrow::Cow;
use std::path::{Component, Path};
use std::sync::{Arc, OnceLock};

use cap_std::io_lifetimes::AsFilelike;
use globset::{Glob, GlobBuilder, GlobSet, GlobSetBuilder};

use super::case::Case;
use super::{PathError, Target, Workspace, WorkspaceError, sys};

/// Secret files denied by default: environment files, private keys and credential stores.
/// Patterns without `/` match any single path component; patterns with `/` match the whole
/// path relative to a root.
pub(crate) const DEFAULT_SECRET_PATTERNS: &[&str] = &[
    ".env*",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "id_rsa*",
    "id_ed25519*",
    "id_ecdsa*",
    "id_dsa*",
    ".ssh",
    ".aws",
    ".gnupg",
    ".netrc",
    ".git-credentials",
    ".npmrc",
    ".pypirc",
];

/// Which patterns make a path a secret.
///
/// The patterns are parsed when the server starts (a bad one is a start-up error naming it),
/// and compiled into glob sets by the first path check: a session that never touches a file
/// (a web search, a command) does not pay for the automata. Clones (the narrowed workspace of
/// each client) share one compilation.
#[derive(Debug, Clone)]
pub(super) struct SecretRules {
    /// Patterns without a `/`: matched against each path component.
    component: Arc<[(Glob, String)]>,
    /// Patterns with a `/`: matched against the whole relative path (as `**/pattern`).
    whole: Arc<[(Glob, String)]>,
    compiled: Arc<OnceLock<Result<CompiledSecrets, String>>>,
}

/// [`SecretRules`]' glob sets; match `i` is pattern `i` of its list.
#[derive(Debug)]
struct CompiledSecrets {
    component: GlobSet,
    whole: GlobSet,
}

impl SecretRules {
    /// Parse `patterns`; they match with or without case as `case` says (without on macOS
    /// and Windows, where `.ENV` is the same file as `.env`).
    pub(super) fn new(patterns: &[String], case: Case) -> Result<Self, WorkspaceError> {
        let (mut component, mut whole) = (Vec::new(), Vec::new());
        let parse = |glob: &str| {
            GlobBuilder::new(glob)
                .case_insensitive(case == Case::Insensitive)
                .build()
        };
        for pattern in patterns {
            let trimmed = pattern.trim_end_matches('/');
            let err = |e: globset::Error| WorkspaceError::Pattern {
                pattern: pattern.clone(),
                reason: e.kind().to_string(),
            };
            if trimmed.contains('/') {
                let glob = format!("**/{}", trimmed.trim_start_matches('/'));
                whole.push((parse(&glob).map_err(err)?, pattern.clone()));
            } else {
                component.push((parse(trimmed).map_err(err)?, pattern.clone()));
            }
        }
        Ok(Self {
            component: component.into(),
            whole: whole.into(),
            compiled: Arc::default(),
        })
    }

    /// The glob sets, compiled on first use. Compiling parsed globs fails only past the
    /// regex engine's size limits; the error is logged and kept, and every check then refuses
    /// (below).
    fn compiled(&self) -> Result<&CompiledSecrets, &str> {
        self.compiled
            .get_or_init(|| {
                let compiled = self.compile();
                if let Err(reason) = &compiled {
                    tracing::error!(
                        %reason,
                        "workspace.secret_patterns could not be compiled; every path is refused"
                    );
                }
                compiled
            })
            .as_ref()
            .map_err(String::as_str)
    }

    fn compile(&self) -> Result<CompiledSecrets, String> {
        let set = |globs: &[(Glob, String)]| {
            let mut builder = GlobSetBuilder::new();
            for (glob, _) in globs {
                builder.add(glob.clone());
            }
            builder.build().map_err(|e| e.to_string())
        };
        Ok(CompiledSecrets {
            component: set(&self.component)?,
            whole: set(&self.whole)?,
        })
    }

    /// The pattern that makes `rel` (a path relative to a root) a secret, if any. Fails
    /// closed: if the patterns could not be compiled, every path is refused with the reason.
    fn matching(&self, rel: &Path) -> Option<Cow<'_, str>> {
        let compiled = match self.compiled() {
            Ok(compiled) => compiled,
            Err(reason) => {
                return Some(Cow::Owned(format!(
                    "workspace.secret_patterns (they could not be compiled: {reason})"
                )));
            }
        };
        for part in rel.components() {
            if let Component::Normal(name) = part
                && let Some(&i) = compiled.component.matches(Path::new(name)).first()
            {
                return Some(Cow::Borrowed(&self.component[i].1));
            }
        }
        compiled
            .whole
            .matches(rel)
            .first()
            .map(|&i| Cow::Borrowed(self.whole[i].1.as_str()))
    }
}

impl Workspace {
    /// Refuse `rel` if it matches a secret pattern.
    pub(super) fn check_secret(&self, target: &Target<'_>, rel: &Path) -> Result<(), PathError> {
        match self.secrets.matching(rel) {
            Some(pattern) => Err(PathError::Secret {
                path: target.display.display().to_string(),
                pattern: pattern.into_owned(),
            }),
            None => Ok(()),
        }
    }

    /// Whether a path relative to a root matches a secret pattern (for listings).
    pub(crate) fn is_secret(&self, rel: &Path) -> bool {
        self.secrets.matching(rel).is_some()
    }

    /// [`Workspace::is_secret`], for the fuzz target `workspace_paths` (fuzz/; only with
    /// `fuzzing` feature only).
    #[cfg(feature = "fuzzing")]
    #[doc(hidden)]
    pub fn fuzz_is_secret(&self, rel: &Path) -> bool {
        self.is_secret(rel)
    }

    /// Refuse an opened handle whose real path (what was actually opened, after symlinks) is
    /// a secret.
    pub(super) fn check_real_path(
        &self,
        handle: &impl AsFilelike,
        target: &Target<'_>,
    ) -> Result<(), PathError> {
        match sys::real_path(handle, target) {
            Some(real) => match self.case.strip_root(&real, &target.root.path) {
                Some(rel) => self.check_secret(target, rel),
                // Opened beneath the root, yet its real path is not under the root's: the root
                // was moved, or the system spells paths another way. Refused: the secret rules
                // cannot be checked.
                None => Err(PathError::Escapes {
                    path: target.display.display().to_string(),
                    roots: self.describe_roots(),
                }),
            },
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(patterns: &[&str]) -> SecretRules {
        rules_with(patterns, Case::Sensitive)
    }

    fn rules_with(patterns: &[&str], case: Case) -> SecretRules {
        let patterns: Vec<String> = patterns.iter().map(ToString::to_string).collect();
        SecretRules::new(&patterns, case).unwrap()
    }

    #[test]
    fn secret_rules_match_components_or_whole_paths() {
        let defaults = rules(DEFAULT_SECRET_PATTERNS);
        for (path, expected) in [
            (".env", Some(".env*")),
            (".env.local", Some(".env*")),
            ("app/.env.production", Some(".env*")),
            ("certs/server.pem", Some("*.pem")),
            ("home/.ssh/config", Some(".ssh")),
            (".ssh", Some(".ssh")),
            ("keys/id_ed25519.pub", Some("id_ed25519*")),
            ("src/main.rs", None),
            ("environment.md", None),
            ("docs/ssh.md", None),
            ("pem", None),
        ] {
            assert_eq!(
                defaults.matching(Path::new(path)).as_deref(),
                expected,
                "{path}"
            );
        }
        let whole = rules(&["config/prod/*.toml", "secrets/"]);
        for (path, expected) in [
            ("config/prod/db.toml", Some("config/prod/*.toml")),
            ("app/config/prod/db.toml", Some("config/prod/*.toml")),
            ("config/dev/db.toml", None),
            ("secrets", Some("secrets/")),
            ("a/secrets/b.txt", Some("secrets/")),
        ] {
            assert_eq!(
                whole.matching(Path::new(path)).as_deref(),
                expected,
                "{path}"
            );
        }
    }

    /// macOS and Windows: the rules match without case, so `.ENV` and `KEY.PEM` are secrets
    /// too; on Linux they match exactly.
    #[test]
    fn secret_rules_match_without_case_where_the_file_system_ignores_it() {
        let insensitive = rules_with(DEFAULT_SECRET_PATTERNS, Case::Insensitive);
        let sensitive = rules(DEFAULT_SECRET_PATTERNS);
        for (path, expected) in [
            (".ENV", ".env*"),
            ("app/.Env.Local", ".env*"),
            ("certs/KEY.PEM", "*.pem"),
            ("Server.Key", "*.key"),
            (".SSH/config", ".ssh"),
            ("home/.Ssh/config", ".ssh"),
            ("ID_RSA", "id_rsa*"),
            (".AWS/credentials", ".aws"),
            (".NETRC", ".netrc"),
        ] {
            assert_eq!(
                insensitive.matching(Path::new(path)).as_deref(),
                Some(expected),
                "{path}"
            );
            assert_eq!(sensitive.matching(Path::new(path)), None, "{path}");
        }
        assert_eq!(insensitive.matching(Path::new("src/Main.rs")), None);
        let whole = rules_with(&["Config/Prod/*.toml"], Case::Insensitive);
        assert_eq!(
            whole.matching(Path::new("config/PROD/db.TOML")).as_deref(),
            Some("Config/Prod/*.toml")
        );
    }

    #[test]
    fn secret_rules_compile_on_first_use_once_for_all_clones() {
        let rules = rules(DEFAULT_SECRET_PATTERNS);
        let narrowed = rules.clone();
        assert!(rules.compiled.get().is_none(), "compiled at start");
        assert_eq!(
            narrowed.matching(Path::new("a/.env")).as_deref(),
            Some(".env*")
        );
        assert!(
            rules.compiled.get().is_some(),
            "the clone's first check compiled for itself only"
        );
        assert!(Arc::ptr_eq(&rules.compiled, &narrowed.compiled));
    }

    #[test]
    fn secret_rules_that_failed_to_compile_refuse_every_path() {
        let rules = rules(&[".env*"]);
        rules
            .compiled
            .set(Err("regex too big".into()))
            .expect("not compiled yet");
        let refusal = rules.matching(Path::new("src/main.rs"));
        assert!(
            refusal
                .as_deref()
                .is_some_and(|r| r.contains("could not be compiled: regex too big")),
            "{refusal:?}"
        );
    }

    #[test]
    fn a_bad_pattern_is_an_error_naming_it() {
        let err = SecretRules::new(&["a[".to_owned()], Case::Sensitive)
            .err()
            .map(|e| e.to_string());
        assert!(
            err.as_deref()
                .is_some_and(|e| e.starts_with("invalid secret pattern \"a[\"")),
            "{err:?}"
        );
    }
}

//! Whether two names are the same file name: exactly (Linux, other Unix) or without case
//! (macOS's default APFS and Windows' NTFS are case-insensitive). The system's choice is
//! `sys::FS_CASE`; the rules take it as a parameter, so the insensitive mode is tested on
//! Linux too.
//!
//! Case folding here is the simple one-to-one Unicode uppercase mapping of each character
//! (`char::to_uppercase` when it gives one character; a character whose uppercase is several,
//! like `ß`, is kept as it is), which covers ASCII and is what NTFS's upcase table does. Not
//! done: Unicode normalisation (APFS also treats NFC and NFD spellings as one name; a secret or
//! root spelled in another normal form is not recognised as the same here) and Turkish dotted
//! and dotless `i` rules. The secret patterns match case-insensitively through the glob
//! engine's own Unicode simple case folding, which agrees with this on everything but such
//! corner cases.

use std::ffi::OsStr;
use std::path::{Component, Path};

/// How names compare on a file system.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Case {
    /// Byte for byte (Linux, other Unix).
    Sensitive,
    /// Without case, by [`fold`] (macOS, Windows).
    #[cfg_attr(
        not(any(test, target_os = "macos", windows)),
        allow(
            dead_code,
            reason = "the file systems of macOS and Windows; tests use it everywhere"
        )
    )]
    Insensitive,
}

/// `s` with each character replaced by its simple uppercase mapping (see the module doc).
pub(crate) fn fold(s: &str) -> String {
    s.chars()
        .map(|c| {
            let mut upper = c.to_uppercase();
            match (upper.next(), upper.next()) {
                (Some(u), None) => u,
                _ => c,
            }
        })
        .collect()
}

impl Case {
    /// Whether two names (or path components) are the same name. A name that is not valid
    /// Unicode compares byte for byte in either mode.
    pub(crate) fn same_name(self, a: &OsStr, b: &OsStr) -> bool {
        if a == b {
            return true;
        }
        match (self, a.to_str(), b.to_str()) {
            (Self::Insensitive, Some(a), Some(b)) => fold(a) == fold(b),
            _ => false,
        }
    }

    /// Whether two paths name the same entry, component by component.
    #[cfg(any(windows, test))]
    pub(crate) fn same_path(self, a: &Path, b: &Path) -> bool {
        let (mut a, mut b) = (a.components(), b.components());
        loop {
            match (a.next(), b.next()) {
                (None, None) => return true,
                (Some(x), Some(y)) if self.same_name(x.as_os_str(), y.as_os_str()) => {}
                _ => return false,
            }
        }
    }

    /// `path` relative to `root` when `path` is `root` or lies beneath it, comparing whole
    /// components (`/w/proj2` is not inside `/w/proj`) in this mode. The rest keeps the
    /// spelling of `path`.
    pub(crate) fn strip_root<'p>(self, path: &'p Path, root: &Path) -> Option<&'p Path> {
        let mut rest = path.components();
        for part in root.components() {
            let next = rest.next()?;
            if !self.same_component(part, next) {
                return None;
            }
        }
        Some(rest.as_path())
    }

    fn same_component(self, a: Component<'_>, b: Component<'_>) -> bool {
        self.same_name(a.as_os_str(), b.as_os_str())
    }

    /// Whether `name` is `expected` (a literal such as `.git`) in this mode.
    pub(crate) fn is_name(self, name: &OsStr, expected: &str) -> bool {
        self.same_name(name, OsStr::new(expected))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folding_is_simple_uppercase_mapping() {
        assert_eq!(fold(".env"), ".ENV");
        assert_eq!(fold("Ärger.Pem"), "ÄRGER.PEM");
        // A character with a multi-character uppercase is kept as it is.
        assert_eq!(fold("straße"), "STRAßE");
        assert_eq!(fold("σς"), "ΣΣ");
    }

    #[test]
    fn names_compare_by_mode() {
        let (a, b) = (OsStr::new(".SSH"), OsStr::new(".ssh"));
        assert!(Case::Insensitive.same_name(a, b));
        assert!(!Case::Sensitive.same_name(a, b));
        assert!(Case::Insensitive.is_name(OsStr::new(".Git"), ".git"));
        assert!(!Case::Sensitive.is_name(OsStr::new(".Git"), ".git"));
        assert!(Case::Insensitive.same_path(Path::new("/W/Proj/x"), Path::new("/w/proj/X")));
        assert!(!Case::Insensitive.same_path(Path::new("/w/proj"), Path::new("/w/proj/x")));
    }

    #[test]
    fn strip_root_compares_whole_components() {
        let root = Path::new("/w/Proj");
        let strip =
            |case: Case, p: &str| case.strip_root(Path::new(p), root).map(Path::to_path_buf);
        assert_eq!(strip(Case::Sensitive, "/w/Proj/a/B"), Some("a/B".into()));
        assert_eq!(strip(Case::Sensitive, "/w/proj/a"), None);
        assert_eq!(strip(Case::Insensitive, "/W/PROJ/a/B"), Some("a/B".into()));
        assert_eq!(strip(Case::Insensitive, "/w/proj"), Some("".into()));
        // By component: `/w/proj2` is not inside `/w/proj`, in either mode.
        assert_eq!(strip(Case::Insensitive, "/w/proj2/a"), None);
        assert_eq!(strip(Case::Insensitive, "/w"), None);
    }
}

//! Windows path syntax as pure functions (compiled on Windows, and for the tests everywhere, so
//! its rules are checked on Linux too): parsing a tool's path string, refusing the forms that
//! do not name a plain file inside a directory, and placing an absolute path under a root
//! without case.
//!
//! Accepted: drive paths in either case (`c:\x`, `C:/x`), `/` and `\` mixed, UNC
//! (`\\server\share\x`), verbatim (`\\?\C:\x`, `\\?\UNC\server\share\x`: only `\` separates
//! there, and `.`/`..` are refused because they would be literal names), and relative paths.
//! Refused, each with its reason ([`WinPathError`]): device paths (`\\.\…`, `//?/…`, and
//! verbatim forms other than a drive or UNC), drive-relative paths (`C:foo`, `C:`), paths
//! relative to the current drive's root (`\x`), alternate data streams (`file.txt:stream`),
//! reserved DOS device names (`CON`, `PRN`, `AUX`, `NUL`, `CONIN$`, `CONOUT$`, `COM0`–`COM9`,
//! `LPT0`–`LPT9` and the superscript-digit `COM¹²³`/`LPT¹²³`, in any case, with any extension,
//! with trailing dots or spaces), names ending in a dot or a space (Windows drops the ending,
//! so `key.pem.` would open `key.pem` past the secret rules), characters no Windows name
//! holds (`<>"|?*`, control characters), and names shaped like 8.3 short names (`KEY~1.PEM`,
//! which can alias a long name the secret rules would refuse).
//!
//! Roots compare without case ([`Case::Insensitive`]: simple Unicode uppercase mapping, the
//! way NTFS compares; see `case.rs`). `..` is resolved lexically, as Win32 itself does for
//! non-verbatim paths, and may not climb above the root the path is placed under.

use std::fmt;

use super::case::Case;

/// Reserved DOS device names (besides `COM`/`LPT` with a digit): opening them opens the
/// device, in any directory, whatever the extension.
const RESERVED_NAMES: &[&str] = &["CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$"];
/// Device families reserved with one digit after them (`COM1`, `LPT¹`).
const RESERVED_NUMBERED: &[&str] = &["COM", "LPT"];
/// The digits that make `COM`/`LPT` a device: 0–9 and the superscripts ¹ ² ³ (Windows treats
/// these as digits in device names).
const DEVICE_DIGITS: &[char] = &[
    '0', '1', '2', '3', '4', '5', '6', '7', '8', '9', '¹', '²', '³',
];
/// Characters no Windows file name may hold (besides `:`, refused as a stream, the separators
/// and control characters).
const INVALID_CHARS: &[char] = &['<', '>', '"', '|', '?', '*'];
/// The longest base and extension of an 8.3 short name.
const SHORT_BASE_MAX: usize = 8;
const SHORT_EXT_MAX: usize = 3;

/// Where an absolute Windows path starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Prefix {
    /// A drive letter, uppercased.
    Drive(char),
    /// A UNC share: `\\server\share`.
    Unc {
        /// The server, as written.
        server: String,
        /// The share, as written.
        share: String,
    },
}

impl Prefix {
    fn same(&self, other: &Prefix) -> bool {
        let same = |a: &str, b: &str| Case::Insensitive.same_name(a.as_ref(), b.as_ref());
        match (self, other) {
            (Self::Drive(a), Self::Drive(b)) => a == b,
            (
                Self::Unc { server, share },
                Self::Unc {
                    server: server2,
                    share: share2,
                },
            ) => same(server, server2) && same(share, share2),
            _ => false,
        }
    }
}

/// A parsed path: its prefix (absolute) or none (relative), and its components as written,
/// `.` and empty ones dropped, `..` kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct WinPath {
    /// `None` for a relative path.
    pub(crate) prefix: Option<Prefix>,
    /// The components, `..` included.
    pub(crate) parts: Vec<String>,
}

/// Why a path is refused; the message says what is not allowed and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum WinPathError {
    /// `\\.\…` and other device-namespace forms.
    Device,
    /// `\\?\` followed by something other than a drive or `UNC\`.
    Verbatim,
    /// `.` or `..` in a verbatim path.
    VerbatimDots,
    /// `C:foo` or `C:`.
    DriveRelative(char),
    /// `\foo`.
    RootRelative,
    /// `\\server` or `\\server\` without a share.
    IncompleteUnc,
    /// `name:stream`.
    Stream(String),
    /// `nul.txt`, `COM1`, ….
    Reserved(String),
    /// `name.` or `name `.
    TrailingDotOrSpace(String),
    /// A character no Windows name holds.
    InvalidChar(String, char),
    /// `KEY~1.PEM`.
    ShortName(String),
}

impl fmt::Display for WinPathError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Device => f.write_str(
                "device paths (\\\\.\\… or //?/…) name devices, not files, and are not allowed; give a drive path like C:\\dir\\file, a UNC path \\\\server\\share\\file, or a path relative to the workspace",
            ),
            Self::Verbatim => f.write_str(
                "only the verbatim forms \\\\?\\C:\\… and \\\\?\\UNC\\server\\share\\… are allowed (other \\\\?\\ forms name volumes or devices by their internal names)",
            ),
            Self::VerbatimDots => f.write_str(
                "`.` and `..` are not allowed in a \\\\?\\ path (there they are not resolved but taken as file names); write the path without them",
            ),
            Self::DriveRelative(drive) => write!(
                f,
                "{drive}: without a \\ after it is relative to the current directory of drive {drive}, which the server does not use; write {drive}:\\… or a path relative to the workspace"
            ),
            Self::RootRelative => f.write_str(
                "a path starting with a single \\ or / names the root of the current drive, which the server does not use; write the drive letter (C:\\…) or a path relative to the workspace",
            ),
            Self::IncompleteUnc => f.write_str(
                "a UNC path needs a server and a share: \\\\server\\share\\…",
            ),
            Self::Stream(name) => write!(
                f,
                "{name:?} names an alternate data stream (the part after `:`), a hidden part of a file that the file tools do not read or write; `:` is allowed only after a drive letter"
            ),
            Self::Reserved(name) => write!(
                f,
                "{name:?} is a reserved device name on Windows (CON, PRN, AUX, NUL, CONIN$, CONOUT$, COM0-9, LPT0-9, in any case, with any extension): opening it opens the device, not a file"
            ),
            Self::TrailingDotOrSpace(name) => write!(
                f,
                "{name:?} ends in a dot or a space, which Windows drops (it would name another file); write the name without them"
            ),
            Self::InvalidChar(name, c) => write!(
                f,
                "{name:?} contains {c:?}, which no Windows file name can contain"
            ),
            Self::ShortName(name) => write!(
                f,
                "{name:?} looks like an 8.3 short name (NAME~1.EXT), which can stand for another file's long name; use the file's long name"
            ),
        }
    }
}

fn is_sep(c: char) -> bool {
    c == '\\' || c == '/'
}

/// Parse `path` with Windows syntax, refusing what the module doc lists.
pub(crate) fn parse(path: &str) -> Result<WinPath, WinPathError> {
    let chars: Vec<char> = path.chars().take(4).collect();
    if let Some(rest) = path.strip_prefix(r"\\?\") {
        return parse_verbatim(rest);
    }
    if chars.len() >= 3 && is_sep(chars[0]) && is_sep(chars[1]) && matches!(chars[2], '.' | '?') {
        // `\\.\`, `//?/`, `\\?` alone and the like: the device namespace.
        if chars.len() == 3 || is_sep(chars[3]) {
            return Err(WinPathError::Device);
        }
    }
    let (prefix, rest) = if chars.len() >= 2 && is_sep(chars[0]) && is_sep(chars[1]) {
        let mut pieces = path[2..].splitn(3, is_sep);
        let server = pieces.next().unwrap_or_default();
        let share = pieces.next().unwrap_or_default();
        if server.is_empty() || share.is_empty() {
            return Err(WinPathError::IncompleteUnc);
        }
        let prefix = Prefix::Unc {
            server: server.to_owned(),
            share: share.to_owned(),
        };
        (Some(prefix), pieces.next().unwrap_or_default())
    } else if let Some(drive) = drive_letter(path) {
        match path[2..].chars().next() {
            Some(c) if is_sep(c) => (Some(Prefix::Drive(drive)), &path[3..]),
            _ => return Err(WinPathError::DriveRelative(drive)),
        }
    } else if path.starts_with(is_sep) {
        return Err(WinPathError::RootRelative);
    } else {
        (None, path)
    };
    let mut parts = Vec::new();
    for part in rest.split(is_sep) {
        match part {
            "" | "." => {}
            ".." => parts.push(part.to_owned()),
            name => {
                check_name(name)?;
                parts.push(name.to_owned());
            }
        }
    }
    Ok(WinPath { prefix, parts })
}

/// The uppercased drive letter of `C:…`.
fn drive_letter(path: &str) -> Option<char> {
    let mut chars = path.chars();
    match (chars.next(), chars.next()) {
        (Some(letter), Some(':')) if letter.is_ascii_alphabetic() => {
            Some(letter.to_ascii_uppercase())
        }
        _ => None,
    }
}

/// The longest path Win32 opens without the `\\?\` prefix: `MAX_PATH` (260 UTF-16 units) less
/// its terminating NUL.
const MAX_PLAIN_UNITS: usize = 259;

/// A verbatim path as people write it, when it names the same without the prefix:
/// `\\?\C:\work\a.txt` → `C:\work\a.txt`, `\\?\UNC\server\share\a` → `\\server\share\a`.
/// `None` when it is not a verbatim drive or UNC path, or when Win32 would read the plain form
/// otherwise: a component it would rewrite or that is no plain name (each one [`check_name`]
/// refuses: a device name, an ending dot or space, a stream; `.` and `..`), or a path longer
/// than it opens without the prefix.
pub(crate) fn plain(path: &str) -> Option<String> {
    let rest = path.strip_prefix(r"\\?\")?;
    let parsed = parse_verbatim(rest).ok()?;
    let plain = match parsed.prefix? {
        // `C:\…`: `C:` alone would be relative to that drive's current folder.
        Prefix::Drive(_) if rest.get(2..3) == Some("\\") => rest.to_owned(),
        Prefix::Drive(_) => return None,
        Prefix::Unc { server, share } => {
            check_name(&server).ok()?;
            check_name(&share).ok()?;
            format!(r"\\{}", rest.get(4..)?)
        }
    };
    (plain.encode_utf16().count() <= MAX_PLAIN_UNITS).then_some(plain)
}

/// After `\\?\`: `C:\…` or `UNC\server\share\…`; only `\` separates.
fn parse_verbatim(rest: &str) -> Result<WinPath, WinPathError> {
    let mut pieces = rest.split('\\');
    let first = pieces.next().unwrap_or_default();
    let prefix = if first.len() == 2
        && let Some(drive) = drive_letter(first)
    {
        Prefix::Drive(drive)
    } else if first.eq_ignore_ascii_case("UNC") {
        let server = pieces.next().unwrap_or_default();
        let share = pieces.next().unwrap_or_default();
        if server.is_empty() || share.is_empty() {
            return Err(WinPathError::IncompleteUnc);
        }
        Prefix::Unc {
            server: server.to_owned(),
            share: share.to_owned(),
        }
    } else {
        return Err(WinPathError::Verbatim);
    };
    let mut parts = Vec::new();
    for part in pieces {
        match part {
            "" => {}
            "." | ".." => return Err(WinPathError::VerbatimDots),
            name => {
                check_name(name)?;
                parts.push(name.to_owned());
            }
        }
    }
    Ok(WinPath {
        prefix: Some(prefix),
        parts,
    })
}

/// Refuse a component that does not name a plain file (see the module doc).
pub(crate) fn check_name(name: &str) -> Result<(), WinPathError> {
    if let Some(c) = name
        .chars()
        .find(|&c| INVALID_CHARS.contains(&c) || c.is_control() || c == '/')
    {
        return Err(WinPathError::InvalidChar(name.to_owned(), c));
    }
    if name.contains(':') {
        return Err(WinPathError::Stream(name.to_owned()));
    }
    if is_reserved(name) {
        return Err(WinPathError::Reserved(name.to_owned()));
    }
    if name.ends_with(['.', ' ']) {
        return Err(WinPathError::TrailingDotOrSpace(name.to_owned()));
    }
    if is_short_name(name) {
        return Err(WinPathError::ShortName(name.to_owned()));
    }
    Ok(())
}

/// Whether `name` is a reserved device name: the part before the first dot, without trailing
/// spaces, is one of the names, in any case.
pub(crate) fn is_reserved(name: &str) -> bool {
    let base = name
        .split('.')
        .next()
        .unwrap_or_default()
        .trim_end_matches(' ');
    let upper = base.to_ascii_uppercase();
    if RESERVED_NAMES.contains(&upper.as_str()) {
        return true;
    }
    RESERVED_NUMBERED.iter().any(|family| {
        upper.strip_prefix(family).is_some_and(|digit| {
            let mut chars = digit.chars();
            matches!((chars.next(), chars.next()), (Some(d), None) if DEVICE_DIGITS.contains(&d))
        })
    })
}

/// Whether `name` has the shape of an 8.3 short name: a base of at most 8 characters ending
/// in `~` and digits, and an extension of at most 3.
fn is_short_name(name: &str) -> bool {
    let (base, ext) = name.rsplit_once('.').unwrap_or((name, ""));
    if base.chars().count() > SHORT_BASE_MAX || ext.chars().count() > SHORT_EXT_MAX {
        return false;
    }
    match base.rsplit_once('~') {
        Some((stem, digits)) => {
            !stem.is_empty() && !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit())
        }
        None => false,
    }
}

/// Where a tool's path lies: the index of its root and the path beneath it, lexically
/// normalised (`..` resolved).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Placed {
    /// Index into the roots given to [`place`].
    pub(crate) root: usize,
    /// The components beneath the root.
    pub(crate) parts: Vec<String>,
}

/// Why [`place`] refused a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PlaceError {
    /// The path's syntax is refused.
    Syntax(WinPathError),
    /// The path lies outside every root, or climbs above its root with `..`.
    Outside,
}

/// Place `user` under one of `roots` (each the [`parse`]d spellings of one root: its canonical
/// path, `\\?\C:\…`, and the path the operator gave): a relative path under the first root,
/// an absolute one under the first root it lies beneath (compared without case, whole
/// components). `..` may not climb above that root.
pub(crate) fn place<R: AsRef<[WinPath]>>(user: &str, roots: &[R]) -> Result<Placed, PlaceError> {
    let path = parse(user).map_err(PlaceError::Syntax)?;
    let (root, rest) = match &path.prefix {
        None => {
            if roots.is_empty() {
                return Err(PlaceError::Outside);
            }
            (0, path.parts.as_slice())
        }
        Some(_) => roots
            .iter()
            .enumerate()
            .find_map(|(i, spellings)| {
                spellings
                    .as_ref()
                    .iter()
                    .find_map(|root| relative_to(&path, root).map(|rest| (i, rest)))
            })
            .ok_or(PlaceError::Outside)?,
    };
    let mut parts: Vec<String> = Vec::new();
    for part in rest {
        if part == ".." {
            parts.pop().ok_or(PlaceError::Outside)?;
        } else {
            parts.push(part.clone());
        }
    }
    Ok(Placed { root, parts })
}

/// The components of `path` beneath `root` (both absolute), compared without case; `None`
/// when `path` is not `root` or beneath it.
pub(crate) fn relative_to<'p>(path: &'p WinPath, root: &WinPath) -> Option<&'p [String]> {
    let (Some(prefix), Some(root_prefix)) = (&path.prefix, &root.prefix) else {
        return None;
    };
    if !prefix.same(root_prefix) || path.parts.len() < root.parts.len() {
        return None;
    }
    let inside = root
        .parts
        .iter()
        .zip(&path.parts)
        .all(|(r, p)| Case::Insensitive.same_name(r.as_ref(), p.as_ref()));
    inside.then(|| &path.parts[root.parts.len()..])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drive(letter: char, parts: &[&str]) -> WinPath {
        WinPath {
            prefix: Some(Prefix::Drive(letter)),
            parts: parts.iter().map(ToString::to_string).collect(),
        }
    }

    fn unc(server: &str, share: &str, parts: &[&str]) -> WinPath {
        WinPath {
            prefix: Some(Prefix::Unc {
                server: server.into(),
                share: share.into(),
            }),
            parts: parts.iter().map(ToString::to_string).collect(),
        }
    }

    #[test]
    fn drive_letters_in_any_case_and_either_separator() {
        for given in [
            r"c:\w\x.txt",
            r"C:/w/x.txt",
            r"C:\w/x.txt",
            r"c:/w\\x.txt",
            r"C:\w\.\x.txt",
        ] {
            assert_eq!(parse(given), Ok(drive('C', &["w", "x.txt"])), "{given}");
        }
        assert_eq!(parse(r"C:\"), Ok(drive('C', &[])));
        assert_eq!(parse(r"d:\a\..\b"), Ok(drive('D', &["a", "..", "b"])));
    }

    #[test]
    fn verbatim_paths_are_shown_plain_when_they_name_the_same() {
        assert_eq!(
            plain(r"\\?\C:\Work\a.txt").as_deref(),
            Some(r"C:\Work\a.txt")
        );
        assert_eq!(plain(r"\\?\C:\").as_deref(), Some(r"C:\"));
        assert_eq!(
            plain(r"\\?\UNC\srv\share\x").as_deref(),
            Some(r"\\srv\share\x")
        );
        assert_eq!(plain(r"\\?\unc\srv\share").as_deref(), Some(r"\\srv\share"));
        // Not verbatim, or not a drive or a share; `C:` alone, a server `.` or `?`.
        assert_eq!(plain(r"C:\Work"), None);
        assert_eq!(plain(r"\\?\C:"), None);
        assert_eq!(plain(r"\\?\UNC\.\share\x"), None);
        assert_eq!(plain(r"\\?\UNC\?\share\x"), None);
        assert_eq!(plain(r"\\?\Volume{0b1c}\x"), None);
        // Names Win32 would rewrite without the prefix, and `..` (a literal name there).
        for name in ["NUL", "a.txt.", "a ", "f:s", ".."] {
            assert_eq!(plain(&format!(r"\\?\C:\w\{name}")), None, "{name}");
        }
        // Longer than Win32 opens without it.
        let long = format!(r"\\?\C:\{}", "a".repeat(256));
        assert_eq!(plain(&long).map(|p| p.len()), Some(259));
        assert_eq!(plain(&format!("{long}b")), None);
    }

    #[test]
    fn unc_and_verbatim_forms() {
        assert_eq!(
            parse(r"\\srv\share\a\b"),
            Ok(unc("srv", "share", &["a", "b"]))
        );
        assert_eq!(parse(r"//srv/share/a"), Ok(unc("srv", "share", &["a"])));
        assert_eq!(parse(r"\\srv\share"), Ok(unc("srv", "share", &[])));
        assert_eq!(parse(r"\\?\C:\w\x"), Ok(drive('C', &["w", "x"])));
        assert_eq!(parse(r"\\?\c:\w"), Ok(drive('C', &["w"])));
        assert_eq!(
            parse(r"\\?\UNC\srv\share\a"),
            Ok(unc("srv", "share", &["a"]))
        );
        assert_eq!(parse(r"\\?\unc\srv\share"), Ok(unc("srv", "share", &[])));
        for incomplete in [r"\\srv", r"\\srv\", r"\\?\UNC\srv", r"\\?\UNC\srv\"] {
            assert_eq!(
                parse(incomplete),
                Err(WinPathError::IncompleteUnc),
                "{incomplete}"
            );
        }
    }

    #[test]
    fn relative_paths_keep_dot_dot_and_drop_dot() {
        assert_eq!(
            parse(r"src\..\lib/./x.rs"),
            Ok(WinPath {
                prefix: None,
                parts: vec!["src".into(), "..".into(), "lib".into(), "x.rs".into()],
            })
        );
    }

    #[test]
    fn device_and_other_namespaces_are_refused() {
        for given in [
            r"\\.\C:\x",
            r"\\.\PhysicalDrive0",
            r"//./pipe/x",
            r"//?/C:/x",
            r"\\?",
            r"\\.",
        ] {
            assert_eq!(parse(given), Err(WinPathError::Device), "{given}");
        }
        for given in [
            r"\\?\Volume{1234}\x",
            r"\\?\GLOBALROOT\Device\x",
            r"\\?\pipe\x",
        ] {
            assert_eq!(parse(given), Err(WinPathError::Verbatim), "{given}");
        }
        for given in [r"\\?\C:\w\..\x", r"\\?\C:\w\.\x"] {
            assert_eq!(parse(given), Err(WinPathError::VerbatimDots), "{given}");
        }
        assert!(WinPathError::Device.to_string().contains("not allowed"));
    }

    #[test]
    fn drive_relative_and_root_relative_paths_are_refused() {
        assert_eq!(parse("C:foo"), Err(WinPathError::DriveRelative('C')));
        assert_eq!(parse("c:"), Err(WinPathError::DriveRelative('C')));
        assert_eq!(parse(r"\foo"), Err(WinPathError::RootRelative));
        assert_eq!(parse("/foo"), Err(WinPathError::RootRelative));
        let message = WinPathError::DriveRelative('C').to_string();
        assert!(
            message.contains("current directory of drive C"),
            "{message}"
        );
    }

    #[test]
    fn alternate_data_streams_are_refused() {
        for given in [
            "file.txt:stream",
            r"C:\w\file.txt:secret:$DATA",
            r"dir:x\file",
            "notes.md::$DATA",
        ] {
            assert!(
                matches!(parse(given), Err(WinPathError::Stream(_))),
                "{given}"
            );
        }
        let message = WinPathError::Stream("f:s".into()).to_string();
        assert!(message.contains("alternate data stream"), "{message}");
    }

    #[test]
    fn reserved_device_names_are_refused_in_any_form() {
        for name in [
            "CON",
            "con",
            "Prn",
            "aux",
            "NUL",
            "nul.txt",
            "NUL.tar.gz",
            "nul ",
            "nul .txt",
            "COM1",
            "com9.log",
            "LPT1",
            "lpt5.txt",
            "COM0",
            "COM¹",
            "lpt².txt",
            "LPT³",
            "CONIN$",
            "conout$.x",
        ] {
            assert!(is_reserved(name), "{name}");
            let in_path = format!(r"C:\w\{name}");
            assert!(
                matches!(parse(&in_path), Err(WinPathError::Reserved(_))),
                "{in_path}: {:?}",
                parse(&in_path)
            );
        }
        for name in [
            "CONSOLE",
            "nullable.txt",
            "COM10",
            "LPT",
            "com",
            "auxiliary",
            "xnul",
            "COM⁴",
        ] {
            assert!(!is_reserved(name), "{name}");
            assert!(parse(name).is_ok(), "{name}");
        }
        // Trailing dots make a reserved name too (`nul.` opens the device).
        assert!(matches!(parse("nul."), Err(WinPathError::Reserved(_))));
        let message = WinPathError::Reserved("nul.txt".into()).to_string();
        assert!(message.contains("reserved device name"), "{message}");
    }

    #[test]
    fn names_windows_would_change_or_cannot_hold_are_refused() {
        // `...` and `.. ` would be `.` and `..` to Win32: refused like any name ending so.
        for name in ["key.pem.", "notes ", "dir.", "a. ", "...", ".. "] {
            assert_eq!(
                parse(name),
                Err(WinPathError::TrailingDotOrSpace(name.into())),
                "{name}"
            );
        }
        for (name, c) in [
            ("a<b", '<'),
            ("a|b", '|'),
            ("what?", '?'),
            ("*.rs", '*'),
            ("a\"b", '"'),
            ("a\u{1}b", '\u{1}'),
        ] {
            assert_eq!(
                parse(name),
                Err(WinPathError::InvalidChar(name.into(), c)),
                "{name}"
            );
        }
        for name in ["KEY~1.PEM", "ENV~1", "progra~1", "A~12.TXT"] {
            assert_eq!(
                parse(name),
                Err(WinPathError::ShortName(name.into())),
                "{name}"
            );
        }
        for name in [
            "backup~",
            "notes~1.markdown",
            "a~b.txt",
            "~1",
            "long_name~1.txt",
            ".env",
        ] {
            assert!(parse(name).is_ok(), "{name}");
        }
    }

    #[test]
    fn roots_compare_without_case_by_whole_components() {
        let root = parse(r"\\?\C:\Work\Proj").unwrap();
        let inside = |p: &str| relative_to(&parse(p).unwrap(), &root).map(<[String]>::to_vec);
        assert_eq!(
            inside(r"c:\work\proj\src\a.rs"),
            Some(vec!["src".into(), "a.rs".into()])
        );
        assert_eq!(inside(r"C:/WORK/PROJ"), Some(vec![]));
        assert_eq!(inside(r"\\?\c:\Work\Proj\x"), Some(vec!["x".into()]));
        assert_eq!(inside(r"C:\Work\Proj2\x"), None);
        assert_eq!(inside(r"D:\Work\Proj\x"), None);
        assert_eq!(inside(r"C:\Work"), None);
        let share = parse(r"\\?\UNC\Server\Share\w").unwrap();
        assert_eq!(
            relative_to(&parse(r"\\SERVER\share\W\x").unwrap(), &share).map(<[String]>::to_vec),
            Some(vec!["x".into()])
        );
        // Non-ASCII letters fold too (simple uppercase mapping).
        let umlaut = parse(r"C:\Ärger").unwrap();
        assert!(relative_to(&parse(r"c:\ärger\x").unwrap(), &umlaut).is_some());
    }

    #[test]
    fn place_puts_a_path_under_its_root_and_never_above_it() {
        let roots: Vec<Vec<WinPath>> = [vec![r"\\?\C:\w", r"C:\W"], vec![r"\\?\D:\data"]]
            .iter()
            .map(|spellings| spellings.iter().map(|s| parse(s).unwrap()).collect())
            .collect();
        let placed = |p: &str| place(p, &roots);
        let ok = |root, parts: &[&str]| {
            Ok(Placed {
                root,
                parts: parts.iter().map(ToString::to_string).collect(),
            })
        };
        assert_eq!(placed(r"src\a.rs"), ok(0, &["src", "a.rs"]));
        assert_eq!(placed(r"src\..\b.rs"), ok(0, &["b.rs"]));
        assert_eq!(placed(r"c:\W\x"), ok(0, &["x"]));
        assert_eq!(placed(r"d:/DATA/y/../z"), ok(1, &["z"]));
        assert_eq!(placed("."), ok(0, &[]));
        assert!(matches!(
            placed(r"sub\...\x"),
            Err(PlaceError::Syntax(WinPathError::TrailingDotOrSpace(_)))
        ));
        for outside in [
            r"..\x",
            r"src\..\..\x",
            r"C:\w\..\w\x",
            r"C:\W\..\..\x",
            r"C:\other\x",
            r"E:\w\x",
            r"\\srv\share\w",
        ] {
            assert_eq!(placed(outside), Err(PlaceError::Outside), "{outside}");
        }
        assert_eq!(
            placed(r"C:\w\nul"),
            Err(PlaceError::Syntax(WinPathError::Reserved("nul".into())))
        );
        assert_eq!(place::<Vec<WinPath>>("x", &[]), Err(PlaceError::Outside));
    }
}

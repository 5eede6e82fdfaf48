//! Opening the audit file so that, as far as the OS allows, only its owner can read it: the
//! log holds what the agent ran. What that means differs per OS, so each has its own file:
//! - `unix.rs`: the file is created 0600, and an existing file that others may read is
//!   narrowed to 0600 (reported as [`Narrowing`]).
//! - `windows.rs`: there are no mode bits; the file gets the ACL it inherits from its folder
//!   and toolport changes no ACL. A folder in the user's profile (`%LOCALAPPDATA%`, the
//!   default home of per-user data) is readable by the user, SYSTEM and Administrators only;
//!   a log put in a shared folder is as readable as that folder.

#[cfg(unix)]
mod unix;
#[cfg(windows)]
mod windows;

#[cfg(unix)]
pub(super) use unix::open_append;
#[cfg(windows)]
pub(super) use windows::open_append;

/// What opening the file did about others being able to read it.
#[derive(Debug)]
#[cfg_attr(windows, allow(dead_code))] // Windows opens files `Untouched` only
pub(super) enum Narrowing {
    /// Nothing to do: the file is new, already private, or the OS has no mode bits.
    Untouched,
    /// Others could read the existing file; it was narrowed to 0600 (Unix).
    Narrowed,
    /// Others can read the existing file, and it could not be narrowed (Unix).
    Failed(std::io::Error),
}

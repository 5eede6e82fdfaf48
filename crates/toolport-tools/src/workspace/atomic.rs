//! [`WriteTarget`]: the changes made at a place `write.rs` chose, all relative to the parent
//! directory's handle: atomic writes (an exclusive temporary file, fsync, rename over the
//! target) and renames (`RENAME_NOREPLACE` unless replacing).

use std::io;
use std::path::{Path, PathBuf};

use cap_std::fs::{Dir, Metadata, OpenOptions};

use super::FileKind;
use super::sys;

/// Where a write lands: the entry `name` in the directory `dir`, which was opened beneath its
/// root. Every change (create, replace, rename) is made relative to `dir`, so it cannot leave
/// the root whatever happens to the path by name meanwhile.
#[derive(Debug)]
pub(crate) struct WriteTarget {
    /// The parent directory, opened beneath the root.
    pub(super) dir: Dir,
    /// The entry's name in `dir` (one component).
    pub(super) name: std::ffi::OsString,
    /// The real absolute path (the parent's real path joined with the name): what the
    /// checks compare.
    pub(super) real: PathBuf,
    /// The same below its root's shown path ([`WriteTarget::display`]).
    pub(super) shown: PathBuf,
    /// The real path relative to its root (what the secret and `.git/` rules were checked
    /// on; a tree below it is checked against it too).
    pub(super) rel: PathBuf,
    /// What is there now (the entry itself, a symlink not followed); `None`: nothing yet.
    pub(super) existing: Option<Metadata>,
}

/// Prefix and suffix of the temporary file an atomic write fills before renaming it over the
/// target: hidden, in the same directory (a rename is only atomic within one file system),
/// and recognisable as ours should a crash leave one behind.
const TEMP_PREFIX: &str = ".toolport-";
const TEMP_SUFFIX: &str = ".tmp";
/// Random bytes in a temporary file's name: enough that two writers never pick the same one
/// (the create is exclusive anyway).
const TEMP_RANDOM_BYTES: usize = 8;

impl WriteTarget {
    /// The real absolute path as shown in results and messages.
    pub(crate) fn display(&self) -> &Path {
        &self.shown
    }

    /// The real absolute path, canonical: for comparing with another real path.
    pub(crate) fn real(&self) -> &Path {
        &self.real
    }

    /// The parent directory's handle and the entry's name, for the fuzz target's check that
    /// the handle is beneath the root.
    #[cfg(feature = "fuzzing")]
    pub(crate) fn parts(&self) -> (&Dir, &std::ffi::OsStr) {
        (&self.dir, &self.name)
    }

    /// What is at the path now (a symlink is reported as such), or `None`.
    pub(crate) fn existing_kind(&self) -> Option<FileKind> {
        self.existing
            .as_ref()
            .map(|m| FileKind::of_cap(m.file_type()))
    }

    /// What is at the path now (its metadata, a symlink not followed), or `None`.
    pub(crate) fn existing_metadata(&self) -> Option<&Metadata> {
        self.existing.as_ref()
    }

    /// The size of what is at the path now (a regular file's length; 0 for anything else or
    /// nothing).
    pub(crate) fn existing_len(&self) -> u64 {
        self.existing
            .as_ref()
            .filter(|m| m.is_file())
            .map_or(0, Metadata::len)
    }

    /// The current bytes of the existing regular file (opened without following a link,
    /// non-blocking, so a FIFO swapped in meanwhile never hangs the call).
    pub(crate) fn read_existing(&self) -> io::Result<Vec<u8>> {
        use std::io::Read;
        let mut file = sys::open_entry_no_follow(&self.dir, &self.name)?;
        if !file.metadata()?.is_file() {
            return Err(io::Error::other("it is no longer a regular file"));
        }
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)?;
        Ok(bytes)
    }

    /// Write `bytes` atomically: into a new temporary file in the same directory (created
    /// exclusively through the directory handle), fsynced, given the replaced file's
    /// permissions, then renamed over the target; the directory is fsynced after. A reader
    /// sees the old content or the new, never part of either. With `replace` false the rename
    /// refuses to replace anything (`RENAME_NOREPLACE`): a file that appeared meanwhile stays
    /// (`AlreadyExists`). The temporary file is removed on any failure.
    pub(crate) fn write_atomic(&self, bytes: &[u8], replace: bool) -> io::Result<()> {
        use std::io::Write;
        self.write_atomic_with(|file| file.write_all(bytes), None, replace)
    }

    /// [`WriteTarget::write_atomic`] of what `fill` writes into the temporary file (a copy
    /// streams its source through it). A new file takes the permissions of `like` when given
    /// (a copy's source: an executable stays executable); a replaced one keeps its own.
    pub(crate) fn write_atomic_with(
        &self,
        fill: impl FnOnce(&mut std::fs::File) -> io::Result<()>,
        like: Option<&Metadata>,
        replace: bool,
    ) -> io::Result<()> {
        let random = crate::secret::random_token(TEMP_RANDOM_BYTES).map_err(io::Error::other)?;
        let temp = format!("{TEMP_PREFIX}{random}{TEMP_SUFFIX}");
        let mut options = OpenOptions::new();
        options.write(true).create_new(true);
        sys::create_new_options(&mut options);
        let file = self.dir.open_with(&temp, &options)?;
        let cleanup = RemoveOnDrop {
            dir: &self.dir,
            name: Some(&temp),
        };
        let mut file = file.into_std();
        match &self.existing {
            Some(existing) if existing.is_file() => sys::keep_permissions(&file, existing)?,
            _ => {
                if let Some(like) = like {
                    sys::keep_permissions(&file, like)?;
                }
            }
        }
        fill(&mut file)?;
        file.sync_all()?;
        drop(file);
        rename_beneath(
            &self.dir,
            Path::new(&temp),
            &self.dir,
            Path::new(&self.name),
            replace,
        )?;
        cleanup.disarm();
        self.sync_dir();
        Ok(())
    }

    /// Rename this entry to `to` (both directories opened beneath their roots). Without
    /// `replace`, an existing destination is never replaced (`AlreadyExists`).
    pub(crate) fn rename_to(&self, to: &WriteTarget, replace: bool) -> io::Result<()> {
        rename_beneath(
            &self.dir,
            Path::new(&self.name),
            &to.dir,
            Path::new(&to.name),
            replace,
        )?;
        self.sync_dir();
        to.sync_dir();
        Ok(())
    }

    /// Make the directory entry durable. Best effort: the data is already on disk, and a
    /// failure here (a file system that cannot fsync a directory) is not the caller's fault.
    pub(super) fn sync_dir(&self) {
        if let Err(error) = sys::sync_dir(&self.dir) {
            tracing::debug!(%error, dir = %self.display().display(), "fsync of the directory failed");
        }
    }
}

/// Removes a temporary file unless disarmed (the write succeeded and renamed it).
struct RemoveOnDrop<'a> {
    dir: &'a Dir,
    name: Option<&'a str>,
}

impl RemoveOnDrop<'_> {
    fn disarm(mut self) {
        self.name = None;
    }
}

impl Drop for RemoveOnDrop<'_> {
    fn drop(&mut self) {
        if let Some(name) = self.name {
            let _ = self.dir.remove_file(name);
        }
    }
}

/// `renameat` between two directory handles; without `replace`, `renameat2(RENAME_NOREPLACE)`
/// ([`sys::rename_noreplace`]) so an existing destination is refused by the kernel, not by an
/// earlier check that a racing writer could outrun.
fn rename_beneath(
    from_dir: &Dir,
    from: &Path,
    to_dir: &Dir,
    to: &Path,
    replace: bool,
) -> io::Result<()> {
    if replace {
        return from_dir.rename(from, to_dir, to);
    }
    sys::rename_noreplace(from_dir, from, to_dir, to)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workspace::tests::two_roots;
    use std::sync::Arc;

    /// Atomic writes: 1,000 replacements while another thread reads the file by name; every
    /// read sees one whole version, and no temporary file is left.
    #[test]
    fn a_reader_never_sees_a_half_written_file() {
        use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
        let (_d, ws, a, _b) = two_roots();
        let path = a.join("data");
        let versions = [vec![b'a'; 48 * 1024], vec![b'b'; 80 * 1024]];
        std::fs::write(&path, &versions[0]).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let reads = Arc::new(AtomicUsize::new(0));
        let reader = {
            let (stop, reads, path, versions) =
                (stop.clone(), reads.clone(), path, versions.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let seen = std::fs::read(&path).unwrap();
                    assert!(versions.contains(&seen), "torn: {} bytes", seen.len());
                    reads.fetch_add(1, Ordering::Relaxed);
                }
            })
        };
        for round in 0..1000 {
            let target = ws.write_target("data", false).unwrap();
            target
                .write_atomic(&versions[(round + 1) % 2], true)
                .unwrap();
        }
        stop.store(true, Ordering::Relaxed);
        reader.join().unwrap();
        assert!(reads.load(Ordering::Relaxed) > 0);
        let left: Vec<_> = std::fs::read_dir(&a).unwrap().collect();
        assert_eq!(left.len(), 1, "no temporary file is left");
    }

    #[test]
    fn a_new_file_is_not_replaced_when_one_appears_meanwhile() {
        let (_d, ws, a, _b) = two_roots();
        let target = ws.write_target("new.txt", false).unwrap();
        assert_eq!(target.existing_kind(), None);
        std::fs::write(a.join("new.txt"), "theirs").unwrap();
        let error = target.write_atomic(b"mine", false).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(
            std::fs::read_to_string(a.join("new.txt")).unwrap(),
            "theirs"
        );
        assert_eq!(std::fs::read_dir(&a).unwrap().count(), 1);
    }
}

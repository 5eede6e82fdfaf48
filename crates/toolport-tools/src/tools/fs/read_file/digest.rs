//! The file's sha256 for `read_file` (what the write tools take as `expected_sha256`).
//!
//! [`FileHash`] hashes exactly the bytes a pass reads, as it reads them, on the reading thread.
//! (A helper thread fed a copy of each chunk, to overlap hashing with decoding, was measured
//! and removed: on the static release binary it cut the calls/s of a changed 1 MiB file by
//! about 40 % on a two-core machine, where a thread per read, the chunk copies and the
//! hand-offs cost more than the half millisecond of hashing it hid; BENCHMARKS.md, "Lean
//! again".) [`HashCache`] keeps the digests of the files read last: a file read again
//! unchanged (same device, inode, size, modification and change times, and changed more than
//! [`SETTLED`] ago) reuses the digest of its last read instead of being hashed again. When a
//! kept digest may be used is the pager's rule (`pager::read`): the file's key must be the
//! same before and after the pass.

use std::collections::VecDeque;
use std::io::Read;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use sha2::{Digest, Sha256};

use crate::tools::fs::text::hex;

/// How long ago a file must have changed for its digest to be kept: the kernel stamps changes
/// with a coarse clock (a few milliseconds), so two writes within one tick can leave the same
/// times on different bytes. A digest taken a second after the last change is of settled
/// bytes (git's "racily clean" rule).
const SETTLED: Duration = Duration::from_secs(1);
/// Digests kept: the files a session works on, at about 150 bytes each.
const HASH_CACHE_FILES: usize = 64;

/// A file's identity and times as the system gives them (Unix `stat`; Windows has no change
/// time, so nothing is kept there: `stamp/windows.rs`).
#[cfg_attr(unix, path = "stamp/unix.rs")]
#[cfg_attr(windows, path = "stamp/windows.rs")]
mod stamp;

/// What identifies a file's bytes without reading them, as far as the kernel tells: a write
/// moves the change time (which no call can set back), a replacement changes the inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct FileKey {
    dev: u64,
    ino: u64,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl FileKey {
    pub(super) fn of(meta: &std::fs::Metadata) -> Self {
        stamp::key(meta)
    }

    /// Whether the file last changed more than `settle` ago.
    fn settled(&self, settle: Duration) -> bool {
        let (secs, nanos) = self.ctime;
        let (Ok(secs), Ok(nanos)) = (u64::try_from(secs), u32::try_from(nanos)) else {
            return false;
        };
        let changed = SystemTime::UNIX_EPOCH + Duration::new(secs, nanos);
        SystemTime::now()
            .duration_since(changed)
            .is_ok_and(|age| age >= settle)
    }
}

/// The digests of the last [`HASH_CACHE_FILES`] settled files read whole, most recent last.
/// A digest is kept only when the file's key was the same before and after the pass that
/// hashed it, and used only when it is the same before and after the pass that reuses it (a
/// change in between reads the file again, hashing it). A file changed through a shared memory
/// map without its times moving can show the digest of its earlier bytes; the write tools hash
/// the file themselves, so the worst case is a refused write.
#[derive(Debug)]
pub(super) struct HashCache {
    kept: Mutex<VecDeque<(FileKey, String)>>,
    /// [`SETTLED`] (a test waits for nothing with zero).
    settle: Duration,
}

impl Default for HashCache {
    fn default() -> Self {
        Self {
            kept: Mutex::default(),
            settle: SETTLED,
        }
    }
}

impl HashCache {
    fn kept(&self) -> std::sync::MutexGuard<'_, VecDeque<(FileKey, String)>> {
        self.kept
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The kept digest of a settled file with this key.
    pub(super) fn get(&self, key: &FileKey) -> Option<String> {
        if !key.settled(self.settle) {
            return None;
        }
        let mut kept = self.kept();
        let at = kept.iter().position(|(k, _)| k == key)?;
        let entry = kept.remove(at)?;
        let digest = entry.1.clone();
        kept.push_back(entry);
        Some(digest)
    }

    /// Keep the digest of a settled file (one per file: an older key of it goes).
    pub(super) fn put(&self, key: FileKey, digest: String) {
        if !key.settled(self.settle) {
            return;
        }
        let mut kept = self.kept();
        kept.retain(|(k, _)| (k.dev, k.ino) != (key.dev, key.ino));
        if kept.len() >= HASH_CACHE_FILES {
            kept.pop_front();
        }
        kept.push_back((key, digest));
    }
}

/// Passes reads through, hashing every byte.
pub(super) struct Hashing<'a, R> {
    pub(super) inner: R,
    pub(super) hash: &'a mut FileHash,
}

impl<R: Read> Read for Hashing<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hash.update(&buf[..n]);
        Ok(n)
    }
}

/// The sha256 of exactly the bytes a pass reads (so the hash always matches the text
/// returned, even if the file changes meanwhile), computed as they are read.
pub(super) enum FileHash {
    /// The digest of this file's last read ([`HashCache`]): nothing to hash.
    Known(String),
    Inline(Sha256),
}

impl FileHash {
    /// A hash of bytes still to be read.
    pub(super) fn new() -> Self {
        Self::Inline(Sha256::new())
    }

    pub(super) fn update(&mut self, bytes: &[u8]) {
        match self {
            Self::Known(_) => {}
            Self::Inline(hasher) => hasher.update(bytes),
        }
    }

    /// The hash, as lower-case hex.
    pub(super) fn finish(self) -> String {
        match self {
            Self::Known(digest) => digest,
            Self::Inline(hasher) => hex(&hasher.finalize()),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Seek, SeekFrom};

    use encoding_rs::UTF_8;
    use tokio_util::sync::CancellationToken;

    use super::super::ReadFileResult;
    use super::super::pager::{Limits, Window, read};
    use super::*;

    /// `read` with the default limits and this digest cache.
    fn read_with(
        file: &mut std::fs::File,
        size: u64,
        window: Window,
        hashes: &HashCache,
    ) -> ReadFileResult {
        let cancel = CancellationToken::new();
        let limits = Limits {
            max_bytes: 1 << 20,
            cancel: &cancel,
            hashes,
        };
        read(file, "f", size, UTF_8, window, &limits).unwrap()
    }

    const WHOLE: Window = Window::Range {
        start: 1,
        limit: None,
    };

    #[test]
    fn a_kept_digest_is_reused_only_while_the_file_is_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.txt");
        let hashes = HashCache {
            settle: Duration::ZERO,
            ..HashCache::default()
        };
        let read_now = |hashes: &HashCache| {
            let mut file = std::fs::File::open(&path).unwrap();
            let size = file.metadata().unwrap().len();
            read_with(&mut file, size, WHOLE, hashes)
        };
        std::fs::write(&path, "one\n").unwrap();
        let first = read_now(&hashes);
        assert_eq!(first.sha256, hex(&Sha256::digest(b"one\n")));
        assert_eq!(hashes.kept().len(), 1, "a settled file's digest is kept");
        // A digest no hashing could give, under the file's key: a read that returns it took
        // it from the cache.
        let key = FileKey::of(&std::fs::metadata(&path).unwrap());
        hashes.put(key, "kept".into());
        assert_eq!(read_now(&hashes).sha256, "kept");
        // Changed (the size is part of the key even where the clock is coarse): hashed again.
        std::fs::write(&path, "two, longer\n").unwrap();
        let changed = read_now(&hashes);
        assert_eq!(changed.sha256, hex(&Sha256::digest(b"two, longer\n")));
        assert_eq!(changed.content, "two, longer\n");
        // A file that changed within the settle time is neither reused nor kept.
        let unsettled = HashCache::default();
        unsettled.put(
            FileKey::of(&std::fs::metadata(&path).unwrap()),
            "kept".into(),
        );
        assert_eq!(read_now(&unsettled).sha256, changed.sha256);
        assert!(unsettled.kept().is_empty());
    }

    #[test]
    fn the_digest_cache_keeps_one_key_per_file_and_the_most_recent_files() {
        let hashes = HashCache {
            settle: Duration::ZERO,
            ..HashCache::default()
        };
        let key = |ino: u64, size: u64| FileKey {
            dev: 1,
            ino,
            size,
            mtime: (1, 0),
            ctime: (1, 0),
        };
        hashes.put(key(1, 10), "old".into());
        hashes.put(key(1, 11), "new".into());
        assert_eq!(hashes.get(&key(1, 10)), None, "a file's older key goes");
        assert_eq!(hashes.get(&key(1, 11)).as_deref(), Some("new"));
        for ino in 2..=HASH_CACHE_FILES as u64 {
            hashes.put(key(ino, 0), format!("d{ino}"));
        }
        // Full: reading file 1 makes it the most recent, so file 2 is the one to go.
        assert!(hashes.get(&key(1, 11)).is_some());
        hashes.put(key(1000, 0), "d1000".into());
        assert_eq!(hashes.get(&key(2, 0)), None);
        assert!(hashes.get(&key(1, 11)).is_some());
        assert_eq!(hashes.kept().len(), HASH_CACHE_FILES);
    }

    #[test]
    fn a_file_read_in_many_chunks_has_the_digest_of_its_bytes() {
        use std::io::Write;
        let text = "0123456789abcdef\n".repeat(20_000);
        assert!(text.len() > 4 * super::super::scan::CHUNK);
        for size in [text.len(), 1000] {
            let bytes = &text.as_bytes()[..size];
            let mut file = tempfile::tempfile().unwrap();
            file.write_all(bytes).unwrap();
            file.seek(SeekFrom::Start(0)).unwrap();
            let window = Window::Range {
                start: 2,
                limit: Some(3),
            };
            let r = read_with(&mut file, size as u64, window, &HashCache::default());
            assert_eq!(r.sha256, hex(&Sha256::digest(bytes)), "{size} bytes");
            assert_eq!(r.content, "0123456789abcdef\n".repeat(3));
        }
    }
}

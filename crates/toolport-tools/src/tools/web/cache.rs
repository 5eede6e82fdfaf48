//! The in-memory result cache: a bounded LRU whose entries expire after a TTL. The key is the
//! normalised query (trimmed, whitespace collapsed, lowercased) and the result count, not the
//! provider: a query answered by any provider is answered.
//!
//! `fetch_url` keeps its pages in a cache of its own (keyed by URL and format): the two tools
//! share the type, never entries.
//!
//! Nothing is cached to disk; a restart empties it. Failures are never cached, so a provider
//! that recovers is used again at once.

use std::hash::Hash;
use std::num::NonZeroUsize;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use lru::LruCache;

/// The cache key: normalised query and count.
pub(crate) type Key = (String, usize);

/// The key for a query as a user typed it and a count.
pub(crate) fn key(query: &str, count: usize) -> Key {
    (
        query
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .to_lowercase(),
        count,
    )
}

/// A TTL cache of `V` by `K`, bounded in entries.
pub(crate) struct Cache<V, K = Key> {
    ttl: Duration,
    entries: Option<Mutex<LruCache<K, (Instant, V)>>>,
}

impl<V: Clone, K: Hash + Eq> Cache<V, K> {
    /// A cache keeping at most `max_entries` for `ttl`; a zero TTL disables it.
    pub(crate) fn new(ttl: Duration, max_entries: usize) -> Self {
        let entries = NonZeroUsize::new(max_entries)
            .filter(|_| !ttl.is_zero())
            .map(|cap| Mutex::new(LruCache::new(cap)));
        Self { ttl, entries }
    }

    /// The cached value for `key`, if present and fresh.
    pub(crate) fn get(&self, key: &K) -> Option<V> {
        let mut entries = self.entries.as_ref()?.lock().ok()?;
        match entries.get(key) {
            Some((stored, value)) if stored.elapsed() < self.ttl => Some(value.clone()),
            Some(_) => {
                entries.pop(key);
                None
            }
            None => None,
        }
    }

    /// Store `value` under `key` (evicting the least recently used entry when full).
    pub(crate) fn put(&self, key: K, value: V) {
        if let Some(Ok(mut entries)) = self.entries.as_ref().map(Mutex::lock) {
            entries.put(key, (Instant::now(), value));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_ignore_case_and_spacing_but_not_the_count() {
        assert_eq!(key("  Rust   Async\tBook ", 5), key("rust async book", 5));
        assert_ne!(key("rust", 5), key("rust", 6));
    }

    #[test]
    fn entries_expire_and_the_size_is_bounded() {
        let cache = Cache::new(Duration::from_millis(30), 2);
        cache.put(key("a", 1), 1);
        cache.put(key("b", 1), 2);
        cache.put(key("c", 1), 3);
        assert_eq!(cache.get(&key("a", 1)), None, "evicted: only 2 entries fit");
        assert_eq!(cache.get(&key("c", 1)), Some(3));
        std::thread::sleep(Duration::from_millis(40));
        assert_eq!(cache.get(&key("c", 1)), None, "expired");
    }

    #[test]
    fn a_zero_ttl_disables_the_cache() {
        let cache = Cache::new(Duration::ZERO, 10);
        cache.put(key("a", 1), 1);
        assert_eq!(cache.get(&key("a", 1)), None);
    }
}

//! Live reload: on SIGHUP, and when a manifest in a plugin directory is created, changed,
//! renamed or removed (debounced), the plugin directories are read again and the new tool set
//! replaces the old one atomically ([`LiveRegistry::replace`]); sessions are told when the
//! listing changed. Calls in flight finish with the tool they started with.
//!
//! The upstream MCP servers ([`crate::upstreams`]) feed the same loop: when one comes, goes or
//! changes its tools the set is built again; and on SIGHUP or a change of the config file
//! ([`ConfigSource`]) its `[[upstreams]]` are read again, and only the upstreams that were
//! added, removed or changed are started or stopped. The config's other settings need a
//! restart.
//!
//! A reload that cannot read a directory it could read before keeps the previous set and logs
//! why (a folder being replaced, a permissions slip). A directory that was already missing is
//! read as empty, so one missing folder does not block reloads of the others.
//!
//! Only changes count: the watcher ignores accesses and metadata (inotify reports every open,
//! and a reload opens every manifest, which would otherwise trigger the next reload), and
//! files that are not manifests (`*.toml`).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use notify::event::{EventKind, ModifyKind};
use notify::{RecommendedWatcher, RecursiveMode, Watcher};
use tokio::sync::mpsc;

use super::{Catalog, MANIFEST_EXTENSION};
use crate::registry::LiveRegistry;
use crate::upstreams::{UpstreamSettings, Upstreams};

/// How long the file watch waits for a burst of changes (an editor's save, `git checkout`,
/// `cp -r`) to settle before reloading once.
const DEBOUNCE: Duration = Duration::from_millis(250);

/// How long the upstreams' changes may keep coming before the set is built (several starting
/// at once, a state change and its tool list): one build for the burst.
const UPSTREAM_SETTLE: Duration = Duration::from_millis(50);

/// The config file the server was started with, when it read one: its `[[upstreams]]` are
/// read again on SIGHUP and when it changes.
pub struct ConfigSource {
    /// The file.
    pub path: PathBuf,
    /// Read it again and return its upstreams (an error says what is wrong with it; the
    /// upstreams then stay as they are).
    pub read_upstreams: Box<dyn Fn() -> Result<Vec<UpstreamSettings>, String> + Send + Sync>,
}

/// What set off a reload, for the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Trigger {
    /// SIGHUP (Unix only: Windows has no such signal, so there only file changes reload).
    #[cfg_attr(
        not(unix),
        allow(
            dead_code,
            reason = "Windows has no SIGHUP: only file changes reload there"
        )
    )]
    Signal,
    /// A plugin manifest changed.
    FileChange,
    /// The config file changed.
    ConfigChange,
    /// An upstream came, went or changed its tools.
    Upstreams,
}

impl Trigger {
    /// Whether the config file is read again.
    fn rereads_config(self) -> bool {
        matches!(self, Self::Signal | Self::ConfigChange)
    }
}

/// Read the plugin directories again (and take the upstreams' tools as they are now) and
/// serve the result. Returns whether the listed set
/// changed. Blocking (file I/O): call it from a blocking context.
pub fn reload(catalog: &Catalog, live: &LiveRegistry) -> bool {
    let started = std::time::Instant::now();
    // What the upstreams offer now goes into this build.
    let offered = catalog.upstreams().map(|u| u.version());
    let built = match catalog.build(false) {
        Ok(built) => built,
        Err(error) => {
            tracing::error!(%error, "plugin reload failed; keeping the current tools");
            return false;
        }
    };
    built.log();
    if let Err(lost) = catalog.accept(&built) {
        let lost: Vec<String> = lost.iter().map(|d| d.display().to_string()).collect();
        tracing::error!(
            dirs = %lost.join(", "),
            "plugin reload could not read a plugin directory it read before; keeping the current tools"
        );
        return false;
    }
    let before = live.load();
    let after = &built.registry;
    let added: Vec<String> = after
        .names()
        .into_iter()
        .filter(|n| before.get(n).is_none())
        .map(str::to_owned)
        .collect();
    let removed: Vec<String> = before
        .names()
        .into_iter()
        .filter(|n| after.get(n).is_none())
        .map(str::to_owned)
        .collect();
    let count = after.len();
    let changed = live.replace(built.registry);
    if let (Some(upstreams), Some(version)) = (catalog.upstreams(), offered) {
        upstreams.applied(version);
    }
    tracing::info!(
        elapsed_ms = started.elapsed().as_secs_f64() * 1000.0,
        tools = count,
        added = %added.join(","),
        removed = %removed.join(","),
        changed,
        "tools reloaded"
    );
    changed
}

/// Watch for reload triggers for the life of the process: SIGHUP, manifest changes in the
/// plugin directories, the config file's changes (`config`) and the upstreams' (the catalog's).
/// Runs on the current tokio runtime; does nothing when there is nothing to reload (SIGHUP
/// then keeps its default meaning).
pub fn spawn(catalog: Arc<Catalog>, live: Arc<LiveRegistry>, config: Option<ConfigSource>) {
    let upstreams = catalog.upstreams().cloned();
    // The config is watched only for its upstreams (the rest needs a restart).
    let config = config.filter(|_| upstreams.is_some());
    if catalog.dirs().is_empty()
        && config.is_none()
        && upstreams.as_ref().is_none_or(|u| u.is_empty())
    {
        return;
    }
    let (tx, mut rx) = mpsc::channel::<Trigger>(4);
    let file_tx = tx.clone();
    let config_path = config.as_ref().map(|c| c.path.clone());
    let watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        match event {
            // A full channel already holds a pending trigger, which covers this change too.
            Ok(event) => {
                if config_path
                    .as_deref()
                    .is_some_and(|path| is_change_of(&event, path))
                {
                    let _ = file_tx.try_send(Trigger::ConfigChange);
                } else if is_manifest_change(&event) {
                    let _ = file_tx.try_send(Trigger::FileChange);
                }
            }
            Err(error) => tracing::warn!(%error, "watching the plugin directories failed"),
        }
    });
    let mut watcher = match watcher {
        Ok(mut watcher) => {
            watch_dirs(&mut watcher, &catalog, true);
            if let Some(config) = &config {
                watch_config(&mut watcher, &config.path);
            }
            Some(watcher)
        }
        Err(error) => {
            tracing::warn!(%error, "cannot watch the plugin directories and the config file; reload with SIGHUP");
            None
        }
    };
    spawn_signal_listener(tx.clone());
    if let Some(upstreams) = &upstreams {
        spawn_upstream_listener(upstreams, tx);
    }
    tokio::spawn(async move {
        // The watcher lives as long as this task.
        while let Some(first) = rx.recv().await {
            let settle = match first {
                Trigger::FileChange | Trigger::ConfigChange => Some(DEBOUNCE),
                Trigger::Upstreams => Some(UPSTREAM_SETTLE),
                Trigger::Signal => None,
            };
            let mut reread = first.rereads_config();
            if let Some(settle) = settle {
                // Let the burst settle, then fold what arrived meanwhile into this reload.
                tokio::time::sleep(settle).await;
            }
            while let Ok(more) = rx.try_recv() {
                reread |= more.rereads_config();
            }
            tracing::debug!(trigger = ?first, reread, "reloading tools");
            if reread && let (Some(config), Some(upstreams)) = (&config, &upstreams) {
                reconfigure(config, upstreams);
            }
            let (for_reload, for_swap) = (catalog.clone(), live.clone());
            if let Err(error) =
                tokio::task::spawn_blocking(move || reload(&for_reload, &for_swap)).await
            {
                tracing::error!(%error, "the plugin reload task failed");
            }
            // A folder that was removed and made again (or created since the start) is
            // watched from now on.
            if let Some(watcher) = watcher.as_mut() {
                watch_dirs(watcher, &catalog, false);
            }
        }
    });
}

/// Read the config file's upstreams again and start, stop or restart what changed. A file
/// that does not load leaves the upstreams as they are.
fn reconfigure(config: &ConfigSource, upstreams: &Upstreams) {
    match (config.read_upstreams)() {
        Ok(wanted) => {
            let changed = upstreams.configure(wanted);
            tracing::info!(
                added = %changed.added.join(","),
                removed = %changed.removed.join(","),
                restarted = %changed.restarted.join(","),
                "upstreams reconfigured from {}",
                config.path.display()
            );
        }
        Err(error) => tracing::error!(
            "the config file {} did not load; keeping the upstreams as they are: {error}",
            config.path.display()
        ),
    }
}

/// Turn every change of the upstreams' tools into a reload trigger.
fn spawn_upstream_listener(upstreams: &Upstreams, tx: mpsc::Sender<Trigger>) {
    let mut changes = upstreams.changes();
    tokio::spawn(async move {
        while changes.changed().await.is_ok() {
            // A full channel holds a reload that has not started yet: it sees this change.
            if let Err(mpsc::error::TrySendError::Closed(_)) = tx.try_send(Trigger::Upstreams) {
                return;
            }
        }
    });
}

/// Watch the config file's folder (an editor replaces the file by renaming a new one over it,
/// which a watch of the file itself would lose).
fn watch_config(watcher: &mut RecommendedWatcher, path: &Path) {
    let folder = path.parent().unwrap_or(Path::new("."));
    if let Err(error) = watcher.watch(folder, RecursiveMode::NonRecursive) {
        tracing::warn!(file = %path.display(), %error, "not watching the config file for changes (SIGHUP still reloads its upstreams)");
    }
}

/// Whether `event` creates, writes, renames or removes `path`.
fn is_change_of(event: &notify::Event, path: &Path) -> bool {
    !matches!(
        event.kind,
        EventKind::Access(_) | EventKind::Modify(ModifyKind::Metadata(_))
    ) && event.paths.iter().any(|p| p == path)
}

/// Whether a file-system event can change the tool set: a manifest (or a plugin directory
/// itself) created, written, renamed or removed. Accesses (every open: a reload's own reads)
/// and metadata changes are not.
fn is_manifest_change(event: &notify::Event) -> bool {
    let kind = matches!(
        event.kind,
        EventKind::Create(_)
            | EventKind::Remove(_)
            | EventKind::Any
            | EventKind::Other
            | EventKind::Modify(
                ModifyKind::Data(_) | ModifyKind::Name(_) | ModifyKind::Any | ModifyKind::Other
            )
    );
    kind && (event.paths.is_empty()
        || event
            .paths
            .iter()
            .any(|p| p.extension().is_some_and(|e| e == MANIFEST_EXTENSION) || is_dir_event(p)))
}

/// An event on a path with no extension may be the plugin directory itself (removed or
/// renamed): reload, and let the directory check decide.
fn is_dir_event(path: &Path) -> bool {
    path.extension().is_none() && !path.exists()
}

/// Watch every plugin directory that exists (again: watching a watched path is harmless).
/// `report` logs the ones that cannot be watched (at start; later it would repeat).
fn watch_dirs(watcher: &mut RecommendedWatcher, catalog: &Catalog, report: bool) {
    for dir in catalog.dirs() {
        if let Err(error) = watcher.watch(dir, RecursiveMode::NonRecursive)
            && report
        {
            tracing::warn!(dir = %dir.display(), %error, "not watching this plugin directory for changes (SIGHUP still reloads)");
        }
    }
}

/// Forward SIGHUP as a reload trigger.
#[cfg(unix)]
fn spawn_signal_listener(tx: mpsc::Sender<Trigger>) {
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::hangup()) {
            Ok(mut hangup) => {
                tokio::spawn(async move {
                    while hangup.recv().await.is_some() {
                        // A full channel holds a reload that has not started yet, which will
                        // read the directories as they are now: nothing is lost.
                        if let Err(mpsc::error::TrySendError::Closed(_)) =
                            tx.try_send(Trigger::Signal)
                        {
                            return;
                        }
                    }
                });
            }
            Err(error) => {
                tracing::warn!(%error, "cannot listen for SIGHUP; plugins reload only on file changes");
            }
        }
    }
}

/// Windows has no SIGHUP: plugins reload on file changes only.
#[cfg(not(unix))]
fn spawn_signal_listener(tx: mpsc::Sender<Trigger>) {
    drop(tx);
}

#[cfg(test)]
mod tests {
    use super::*;
    use notify::event::{AccessKind, CreateKind, DataChange, MetadataKind};

    fn event(kind: EventKind, path: &str) -> notify::Event {
        notify::Event::new(kind).add_path(path.into())
    }

    #[test]
    fn only_manifest_changes_trigger_a_reload() {
        let data = EventKind::Modify(ModifyKind::Data(DataChange::Content));
        assert!(is_manifest_change(&event(data, "/p/git.toml")));
        assert!(is_manifest_change(&event(
            EventKind::Create(CreateKind::File),
            "/p/new.toml"
        )));
        assert!(!is_manifest_change(&event(
            EventKind::Access(AccessKind::Any),
            "/p/git.toml"
        )));
        assert!(!is_manifest_change(&event(
            EventKind::Modify(ModifyKind::Metadata(MetadataKind::AccessTime)),
            "/p/git.toml"
        )));
        assert!(!is_manifest_change(&event(data, "/p/notes.txt")));
        assert!(!is_manifest_change(&event(data, "/p/.git.toml.swp")));
    }
}

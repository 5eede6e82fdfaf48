//! Live reload: on SIGHUP, and when a file in a plugin directory changes (debounced), the
//! plugin directories are read again and the new tool set replaces the old one atomically
//! ([`LiveRegistry::replace`]); sessions are told when the listing changed. Calls in flight
//! finish with the tool they started with. A reload that cannot read a directory keeps the
//! previous set and logs why.

use std::sync::Arc;
use std::time::Duration;

use notify_debouncer_mini::notify::{RecursiveMode, Watcher};
use notify_debouncer_mini::{DebounceEventResult, Debouncer, new_debouncer};
use tokio::sync::mpsc;

use super::Catalog;
use crate::registry::LiveRegistry;

/// How long the file watch waits for a burst of changes (an editor's save, `git checkout`,
/// `cp -r`) to settle before reloading once.
const DEBOUNCE: Duration = Duration::from_millis(250);

/// What set off a reload, for the log.
#[derive(Debug, Clone, Copy)]
enum Trigger {
    Signal,
    FileChange,
}

/// Read the plugin directories again and serve the result. Returns whether the listed set
/// changed. Blocking (file I/O): call it from a blocking context.
pub(crate) fn reload(catalog: &Catalog, live: &LiveRegistry) -> bool {
    let started = std::time::Instant::now();
    let built = match catalog.build() {
        Ok(built) => built,
        Err(error) => {
            tracing::error!(%error, "plugin reload failed; keeping the current tools");
            return false;
        }
    };
    built.log();
    if !built.discovery.unreadable.is_empty() {
        tracing::error!(
            "plugin reload could not read every plugin directory; keeping the current tools"
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
    tracing::info!(
        elapsed_ms = started.elapsed().as_secs_f64() * 1000.0,
        tools = count,
        added = %added.join(","),
        removed = %removed.join(","),
        changed,
        "plugins reloaded"
    );
    changed
}

/// Watch for reload triggers for the life of the process: SIGHUP, and changes in the plugin
/// directories that exist now. Runs on the current tokio runtime.
pub(crate) fn spawn(catalog: Arc<Catalog>, live: Arc<LiveRegistry>) {
    let (tx, mut rx) = mpsc::channel::<Trigger>(1);
    let watcher = {
        let tx = tx.clone();
        new_debouncer(DEBOUNCE, move |result: DebounceEventResult| match result {
            // A full channel already holds a pending reload, which will see this change too.
            Ok(events) if !events.is_empty() => {
                let _ = tx.try_send(Trigger::FileChange);
            }
            Ok(_) => {}
            Err(error) => tracing::warn!(%error, "watching the plugin directories failed"),
        })
    };
    let mut watcher = match watcher {
        Ok(mut debouncer) => {
            watch_dirs(&mut debouncer, &catalog, true);
            Some(debouncer)
        }
        Err(error) => {
            tracing::warn!(%error, "cannot watch the plugin directories; reload with SIGHUP");
            None
        }
    };
    spawn_signal_listener(tx);
    tokio::spawn(async move {
        // The watcher lives as long as this task.
        while let Some(trigger) = rx.recv().await {
            tracing::debug!(?trigger, "reloading plugins");
            let (for_reload, for_swap) = (catalog.clone(), live.clone());
            if let Err(error) =
                tokio::task::spawn_blocking(move || reload(&for_reload, &for_swap)).await
            {
                tracing::error!(%error, "the plugin reload task failed");
            }
            // A folder that was removed and made again (or created since the start) is
            // watched from now on.
            if let Some(debouncer) = watcher.as_mut() {
                watch_dirs(debouncer, &catalog, false);
            }
        }
    });
}

/// Watch every plugin directory that exists (again: watching a watched path is harmless).
/// `report` logs the ones that cannot be watched (at start; later it would repeat).
fn watch_dirs<T: Watcher>(debouncer: &mut Debouncer<T>, catalog: &Catalog, report: bool) {
    for dir in catalog.dirs() {
        if let Err(error) = debouncer.watcher().watch(dir, RecursiveMode::NonRecursive)
            && report
        {
            tracing::warn!(dir = %dir.display(), %error, "not watching this plugin directory for changes (SIGHUP still reloads)");
        }
    }
}

/// Forward SIGHUP as a reload trigger.
fn spawn_signal_listener(tx: mpsc::Sender<Trigger>) {
    #[cfg(unix)]
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
    #[cfg(not(unix))]
    drop(tx);
}

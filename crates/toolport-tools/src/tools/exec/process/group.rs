//! A command's process group, from spawn to gone: signalling it, terminating it (TERM, a
//! grace, KILL), sweeping what escaped it ([`reaper`]), and the guard that does all of that
//! when a run is dropped mid-way; every group is registered with the [`watchdog`] meanwhile.

use std::process::ExitStatus;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::process::Child;

use super::KILL_GRACE;
use crate::tools::exec::reaper::{self, Scope};
use crate::tools::exec::watchdog;

/// Signal the whole process group (its id is the leader's pid, thanks to `process_group(0)`).
pub(super) fn signal_group(pgid: Option<Pid>, signal: Signal) {
    if let Some(pgid) = pgid
        && let Err(error) = killpg(pgid, signal)
        && error != nix::errno::Errno::ESRCH
    {
        tracing::warn!(%error, ?signal, "could not signal a command's process group");
    }
}

/// SIGTERM the group, give it [`KILL_GRACE`], then SIGKILL it; reap the leader.
pub(super) async fn terminate(child: &mut Child, pgid: Option<Pid>) -> Option<ExitStatus> {
    signal_group(pgid, Signal::SIGTERM);
    let status = match tokio::time::timeout(KILL_GRACE, child.wait()).await {
        Ok(Ok(status)) => Some(status),
        _ => None,
    };
    // Whether or not the leader went, its group may not have: kill what is left.
    signal_group(pgid, Signal::SIGKILL);
    match status {
        Some(status) => Some(status),
        None => child.wait().await.ok(),
    }
}

/// Owns a command's processes while it runs: dropped mid-run (the call's future dropped: the
/// client went away, the server is stopping), it SIGKILLs the group and sweeps what escaped
/// it ([`reaper`]); either way it tells the watchdog the group is gone.
pub(super) struct GroupGuard {
    /// The group's id (the leader's pid); `None` once released, or when the spawn gave no pid.
    pub(super) pgid: Option<Pid>,
    /// The leader's pid, registered with the reaper until its `Child` has reaped it.
    pub(super) leader: Option<u32>,
    /// The marker the reaper finds the command's escaped processes by.
    pub(super) scope: Option<Scope>,
}

impl GroupGuard {
    /// The run finished, killed the group and swept: only tell the watchdog, and signal
    /// nothing more (the id may be reused once the group is gone).
    pub(super) fn release(mut self) {
        if let Some(pgid) = self.pgid.take() {
            watchdog::unregister(pgid);
        }
        self.scope = None;
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if let Some(pgid) = self.pgid {
            signal_group(Some(pgid), Signal::SIGKILL);
            watchdog::unregister(pgid);
        }
        if let Some(leader) = self.leader.take() {
            // Killed by `kill_on_drop`; tokio reaps it later, or the sweep does first.
            reaper::leader_done(leader);
        }
        if let (Some(scope), Ok(runtime)) =
            (self.scope.take(), tokio::runtime::Handle::try_current())
        {
            let pgid = self.pgid;
            runtime.spawn_blocking(move || reaper::sweep(&scope, pgid));
        }
    }
}

/// Kill what escaped the command's (already killed) group and reap it: inline when there is
/// nothing to do (the usual case: one `kill(0)` and the children lists), else on a blocking
/// thread, since the sweep waits for deaths.
pub(super) async fn contain(scope: Option<&Scope>, pgid: Option<Pid>) {
    let Some(scope) = scope else { return };
    if reaper::needs_sweep(pgid) {
        let scope = scope.clone();
        let _ = tokio::task::spawn_blocking(move || reaper::sweep(&scope, pgid)).await;
    }
}

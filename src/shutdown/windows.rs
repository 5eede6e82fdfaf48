//! Stop requests on Windows: the console control events.
//!
//! Ctrl-C and Ctrl-Break (typed in the console, or sent with `GenerateConsoleCtrlEvent` to the
//! server's process group) stop the server the way SIGINT does on Unix. Closing the console
//! window, logging off and shutting down stop it too; for those three Windows ends the process
//! once the handler returns, and tokio's handler does not return, so the server gets the
//! system's grace period (about 5 s for a closed console; the system's setting at logoff and
//! shutdown) to cancel its calls, which kills their commands; if Windows ends the process
//! first, each command's kill-on-close Job Object (tools/exec) ends its process tree with the
//! server.
//!
//! Logoff and shutdown reach a console program only; a process that loaded `user32.dll`
//! gets window messages instead, which toolport does not handle (it has no window). A
//! client that stops the server with `TerminateProcess` sends no event at all; the commands'
//! Job Objects end them then too.

use tokio::signal::windows::{ctrl_break, ctrl_c, ctrl_close, ctrl_logoff, ctrl_shutdown};

/// Resolves on Ctrl-C, Ctrl-Break, console close, logoff or shutdown. If a listener cannot be
/// installed, that is logged and the others still count; if none can be, this never resolves
/// (the server then stops when its client leaves).
pub(crate) async fn signal() {
    let (c, brk, close, logoff, shutdown) = (
        installed("Ctrl-C", ctrl_c()),
        installed("Ctrl-Break", ctrl_break()),
        installed("console close", ctrl_close()),
        installed("logoff", ctrl_logoff()),
        installed("shutdown", ctrl_shutdown()),
    );
    tokio::select! {
        () = next(c, |mut s| async move { s.recv().await }) => {}
        () = next(brk, |mut s| async move { s.recv().await }) => {}
        () = next(close, |mut s| async move { s.recv().await }) => {}
        () = next(logoff, |mut s| async move { s.recv().await }) => {}
        () = next(shutdown, |mut s| async move { s.recv().await }) => {}
    }
}

/// The listener, or `None` with a warning that names the event it will not see.
fn installed<T>(event: &str, listener: std::io::Result<T>) -> Option<T> {
    listener
        .inspect_err(|error| {
            tracing::warn!(%error, "cannot listen for {event}: it will not stop the server");
        })
        .ok()
}

/// Resolves when `listener` receives its event; never when it is missing or its stream ends.
async fn next<T, F>(listener: Option<T>, recv: impl FnOnce(T) -> F)
where
    F: Future<Output = Option<()>>,
{
    if let Some(listener) = listener
        && recv(listener).await.is_some()
    {
        return;
    }
    std::future::pending::<()>().await
}

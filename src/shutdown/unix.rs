//! Stop requests on Unix: SIGINT (Ctrl-C) and SIGTERM (a client or supervisor stopping the
//! server).

use tokio::signal::unix::{SignalKind, signal as listen};

/// Resolves on SIGINT or SIGTERM. If the handlers cannot be installed it never resolves
/// (the server then stops when its client leaves, or by the default action of a signal).
pub(crate) async fn signal() {
    match (
        listen(SignalKind::interrupt()),
        listen(SignalKind::terminate()),
    ) {
        (Ok(mut int), Ok(mut term)) => {
            tokio::select! {
                _ = int.recv() => {}
                _ = term.recv() => {}
            }
        }
        _ => std::future::pending::<()>().await,
    }
}

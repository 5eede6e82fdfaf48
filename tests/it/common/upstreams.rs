//! What the upstream tests share (`upstreams.rs`, toolport as the upstream, and
//! `upstream_servers.rs`, the reference servers): a server with an audit log, waiting for an
//! upstream's tools to be listed, and finding an upstream's process.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rmcp::ServiceExt;

use super::process::children;
use super::{Client, TIMEOUT, TestClient, command, config_file, spawn_server, tool_names, within};

/// How often [`until_listed`] lists again.
const RELIST: Duration = Duration::from_millis(50);

/// A server for `root` with `toml` as its config, auditing to `root/audit.log`: its pid, the
/// client, the log.
pub(crate) async fn audited_server(
    root: &Path,
    toml: &str,
    client: TestClient,
) -> (u32, Client, PathBuf) {
    let config = config_file(root, toml);
    let log = root.join("audit.log");
    let transport = spawn_server(command(
        root,
        &[
            "--config",
            config.to_str().unwrap(),
            "--audit-log",
            log.to_str().unwrap(),
        ],
    ));
    let pid = transport.id().unwrap();
    let client = within(client.serve(transport)).await.unwrap();
    (pid, client, log)
}

/// Wait until every name in `wanted` is listed (upstreams start in the background); the
/// listing then.
pub(crate) async fn until_listed(client: &Client, wanted: &[&str]) -> Vec<String> {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let names = tool_names(client).await;
        if wanted.iter().all(|w| names.iter().any(|n| n == w)) {
            return names;
        }
        assert!(
            Instant::now() < deadline,
            "not all of {wanted:?} listed: {names:?}"
        );
        tokio::time::sleep(RELIST).await;
    }
}

/// The child of `server` one of whose arguments `matches` (an upstream's process).
pub(crate) fn child_with_arg(server: u32, matches: impl Fn(&str) -> bool) -> Option<i32> {
    children(i32::try_from(server).unwrap())
        .into_iter()
        .find(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).split('\0').any(&matches))
        })
}

//! `toolport serve --http 127.0.0.1:0` of the bench's binary, and rmcp's Streamable HTTP client
//! for it (or for a balancer in front of several).

use std::path::Path;
use std::process::Stdio;

use rmcp::ServiceExt;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// The benches' bearer token.
pub(crate) const TOKEN: &str = "bench-token-0123456789abcdef";

/// A running server and its URL (`http://127.0.0.1:PORT`).
pub(crate) struct Server {
    _child: Child,
    pub(crate) url: String,
}

/// Serve `root` with the configuration `config` (written beside it as `{name}.toml`) and `args`
/// after `serve --http 127.0.0.1:0`; returns once it listens.
pub(crate) async fn serve(root: &Path, name: &str, config: &str, args: &[&str]) -> Server {
    let path = root.join(format!("{name}.toml"));
    std::fs::write(&path, config).unwrap();
    let mut child = Command::new(super::toolport_bin())
        .args(["--root"])
        .arg(root)
        .args(["--config"])
        .arg(&path)
        .args(["serve", "--http", "127.0.0.1:0"])
        .args(args)
        .env("TOOLPORT_TOKEN", TOKEN)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let url = loop {
        let line = lines.next_line().await.unwrap().expect("the server exited");
        if let Some(rest) = line.strip_prefix("toolport: listening on ") {
            break rest.split_whitespace().next().unwrap().to_owned();
        }
    };
    // Keep reading its log, so a full pipe never blocks it.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    Server { _child: child, url }
}

/// rmcp's client, connected.
pub(crate) type Client = rmcp::service::RunningService<rmcp::RoleClient, ()>;

/// rmcp's Streamable HTTP client on `{url}/mcp` with the token.
pub(crate) async fn client(url: &str) -> Client {
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(format!("{url}/mcp")).auth_header(TOKEN),
    );
    ().serve(transport).await.unwrap()
}

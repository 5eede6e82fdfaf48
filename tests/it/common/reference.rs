//! The official MCP reference servers as the tests find them: installed by `.ci/run` in
//! `.ci/upstreams/` (see `upstream_servers.rs`), the `[[upstreams]]` entries that run them, and a
//! one-page web site on loopback for the fetch server.

use std::path::{Path, PathBuf};

use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Where the pinned servers are installed.
pub(crate) struct Servers {
    pub(crate) node: PathBuf,
    pub(crate) everything: PathBuf,
    pub(crate) filesystem: PathBuf,
    pub(crate) fetch: PathBuf,
}

/// The installed servers, or `None` (the test does not run) when they are not installed and
/// CI does not require them.
pub(crate) fn servers() -> Option<Servers> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(".ci/upstreams");
    let modules = dir.join("node_modules/@modelcontextprotocol");
    let node = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|d| d.join("node"))
            .find(|n| n.is_file())
    });
    let found = Servers {
        node: node.unwrap_or_default(),
        everything: modules.join("server-everything/dist/index.js"),
        filesystem: modules.join("server-filesystem/dist/index.js"),
        fetch: dir.join("venv/bin/mcp-server-fetch"),
    };
    let missing: Vec<String> = [
        &found.node,
        &found.everything,
        &found.filesystem,
        &found.fetch,
    ]
    .iter()
    .filter(|p| !p.is_file())
    .map(|p| p.display().to_string())
    .collect();
    if missing.is_empty() {
        return Some(found);
    }
    assert!(
        std::env::var_os("TOOLPORT_REQUIRE_UPSTREAM_SERVERS").is_none(),
        "the pinned reference servers are not installed ({missing:?} missing): .ci/run installs them into .ci/upstreams"
    );
    eprintln!(
        "not run: the reference MCP servers are not installed in .ci/upstreams (see this file's docs)"
    );
    None
}

/// One `[[upstreams]]` entry running `program` with `args`, plus `extra` lines.
pub(crate) fn upstream(name: &str, program: &Path, args: &[&str], extra: &str) -> String {
    let args: Vec<String> = args.iter().map(|a| format!("'{a}'")).collect();
    format!(
        "[[upstreams]]\nname = \"{name}\"\ncommand = '{}'\nargs = [{}]\n{extra}\n",
        program.display(),
        args.join(", ")
    )
}

/// The three stdio servers: everything (prefixed always), filesystem over `files`
/// (conditional: only the names toolport has are prefixed) and fetch (never prefixed).
pub(crate) fn reference_upstreams(s: &Servers, files: &Path, extra_fs: &str) -> String {
    [
        upstream(
            "everything",
            &s.node,
            &[s.everything.to_str().unwrap(), "stdio"],
            "",
        ),
        upstream(
            "filesystem",
            &s.node,
            &[s.filesystem.to_str().unwrap(), files.to_str().unwrap()],
            &format!("prefix = \"conditional\"\n{extra_fs}"),
        ),
        upstream(
            "fetch",
            &s.fetch,
            &["--allow-private-ips"],
            // Its first call imports a lot (cold .pyc): generous. PATH is the venv alone:
            // with `node` on PATH, readabilipy runs `npm install` (unpinned, from the
            // registry) on the first fetch, which made that call take over 30 s on a cold
            // CI machine; without it, the pure-Python extraction runs, offline and the same
            // everywhere.
            &format!(
                "prefix = \"never\"\ntimeout = \"60s\"\nenv = {{ PATH = '{}' }}",
                s.fetch.parent().unwrap().display()
            ),
        ),
    ]
    .concat()
}

/// A one-page web site on loopback (any path a page, `/robots.txt` missing), for fetch.
pub(crate) async fn site() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut request = vec![0; 4096];
                let n = stream.read(&mut request).await.unwrap_or(0);
                let head = String::from_utf8_lossy(&request[..n]);
                let reply = if head.starts_with("GET /robots.txt") {
                    "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                        .to_owned()
                } else {
                    let body = "<html><head><title>Upstream page</title></head><body><article><h1>Served by a fixture</h1><p>The official fetch server read this page through toolport.</p></article></body></html>";
                    format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                        body.len()
                    )
                };
                let _ = stream.write_all(reply.as_bytes()).await;
            });
        }
    });
    format!("http://{address}/page")
}

//! A raw JSON-RPC session over the binary's stdin/stdout, for wire-level checks (what exactly
//! crosses the pipe, and how big it is).

use std::path::Path;
use std::process::Stdio;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use super::{command, within};

/// A raw JSON-RPC session over the binary's stdin/stdout, for wire-level checks.
pub(crate) struct Raw {
    pub(crate) child: tokio::process::Child,
    pub(crate) stdin: Option<tokio::process::ChildStdin>,
    pub(crate) stdout: BufReader<tokio::process::ChildStdout>,
}

impl Raw {
    pub(crate) fn start(root: &Path) -> Self {
        Self::start_with(root, &[])
    }

    pub(crate) fn start_with(root: &Path, args: &[&str]) -> Self {
        let mut cmd = command(root, args);
        // Logs at debug prove that logging never reaches stdout.
        cmd.env("RUST_LOG", "debug");
        Self::from_command(cmd)
    }

    /// A session with the binary as `cmd` starts it (its stderr discarded).
    pub(crate) fn from_command(mut cmd: tokio::process::Command) -> Self {
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true);
        let mut child = cmd.spawn().unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Self {
            child,
            stdin: Some(stdin),
            stdout,
        }
    }

    pub(crate) async fn send(&mut self, line: &[u8]) {
        let stdin = self.stdin.as_mut().unwrap();
        within(stdin.write_all(line)).await.unwrap();
        within(stdin.write_all(b"\n")).await.unwrap();
        within(stdin.flush()).await.unwrap();
    }

    /// The next line on stdout, which must be JSON.
    pub(crate) async fn recv(&mut self) -> Value {
        let mut line = String::new();
        within(self.stdout.read_line(&mut line)).await.unwrap();
        serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout carried a non-JSON line {line:?}: {e}"))
    }

    /// `initialize` as a client called "raw", then `notifications/initialized`.
    pub(crate) async fn initialize(&mut self) {
        self.initialize_as("raw").await;
    }

    /// `initialize` as a client giving `name` as its `clientInfo.name`, then
    /// `notifications/initialized`.
    pub(crate) async fn initialize_as(&mut self, name: &str) {
        let request = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": name, "version": "1"}}});
        self.send(request.to_string().as_bytes()).await;
        let reply = self.recv().await;
        assert_eq!(reply["id"], json!(0));
        assert_eq!(reply["result"]["serverInfo"]["name"], json!("toolport"));
        self.send(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
            .await;
    }

    /// The next line on stdout as it arrived (without its newline), which must be JSON.
    pub(crate) async fn recv_line(&mut self) -> String {
        let mut line = String::new();
        within(self.stdout.read_line(&mut line)).await.unwrap();
        let line = line.trim_end_matches('\n').to_owned();
        serde_json::from_str::<Value>(&line)
            .unwrap_or_else(|e| panic!("stdout carried a non-JSON line {line:?}: {e}"));
        line
    }
}

//! A raw JSON-RPC client on an MCP server's stdio pipes, for comparing toolport with peer
//! servers through the same client: no SDK, one line per message, a call's time from writing
//! the request to reading the whole answer. Requests can be pipelined ([`Server::pipelined`]).

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// The `initialize` every comparison sends: no client capabilities, a client name that no
/// server treats specially.
pub(crate) const INITIALIZE: &str = r#"{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}"#;

/// Lines longer than this are taken for answers without being parsed.
const PARSED_LINE_MAX: usize = 64 * 1024;

/// An MCP server over stdio.
pub(crate) struct Server {
    pub(crate) name: String,
    pub(crate) child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
    line: String,
}

impl Server {
    /// Spawn `cmd` (stderr discarded) without initializing it.
    pub(crate) fn spawn(name: &str, mut cmd: Command) -> Self {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("start {name}: {e}"));
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Self {
            name: name.to_owned(),
            child,
            stdin,
            stdout,
            next_id: 0,
            line: String::new(),
        }
    }

    /// Spawn and initialize: the server, and the time from spawn to the `initialize` result.
    pub(crate) fn start(name: &str, cmd: Command) -> (Self, Duration) {
        let started = Instant::now();
        let mut server = Self::spawn(name, cmd);
        let params: Value = serde_json::from_str(INITIALIZE).unwrap();
        server.request("initialize", &params);
        let ready = started.elapsed();
        server.notify_initialized();
        (server, ready)
    }

    /// Send `notifications/initialized`.
    pub(crate) fn notify_initialized(&mut self) {
        self.stdin
            .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")
            .unwrap();
        self.stdin.flush().unwrap();
    }

    /// The server's process id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Write one request; its id.
    fn send(&mut self, method: &str, params: &Value) -> u64 {
        self.next_id += 1;
        let line = json!({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
            .to_string() + "\n";
        self.stdin.write_all(line.as_bytes()).unwrap();
        self.stdin.flush().unwrap();
        self.next_id
    }

    /// Read lines until an answer (not a notification or a server request): its id (`None`
    /// for a long line, not parsed) and the answer's length in bytes. The line stays in
    /// `self.line`.
    fn receive(&mut self) -> (Option<u64>, usize) {
        loop {
            self.line.clear();
            let n = self.stdout.read_line(&mut self.line).unwrap();
            assert!(n > 0, "{} closed stdout", self.name);
            // Notifications and server requests are short; a long line is an answer. Parsing
            // a megabyte answer here would put the client's cost into every server's figure.
            if n > PARSED_LINE_MAX {
                return (None, n);
            }
            let message: Envelope = serde_json::from_str(&self.line)
                .unwrap_or_else(|e| panic!("{}: not JSON-RPC ({e})", self.name));
            if message.method.is_none()
                && let Some(id) = message.id
            {
                return (Some(id), n);
            }
        }
    }

    /// Send one request and read its answer's `result` (panics on an error answer).
    pub(crate) fn request(&mut self, method: &str, params: &Value) -> Value {
        let id = self.send(method, params);
        loop {
            let (got, _) = self.receive();
            if got.is_none_or(|got| got == id) {
                let message: Value = serde_json::from_str(&self.line).unwrap();
                return message
                    .get("result")
                    .cloned()
                    .unwrap_or_else(|| panic!("{}: {message}", self.name));
            }
        }
    }

    /// One `tools/call`: its result.
    pub(crate) fn call(&mut self, tool: &str, arguments: &Value) -> Value {
        self.request("tools/call", &json!({"name": tool, "arguments": arguments}))
    }

    /// One `tools/call`, timed, checked for `isError`: seconds and bytes of the answer.
    pub(crate) fn timed_call(&mut self, tool: &str, arguments: &Value) -> (f64, usize) {
        let started = Instant::now();
        let id = self.send("tools/call", &json!({"name": tool, "arguments": arguments}));
        let (got, bytes) = self.receive();
        let elapsed = started.elapsed().as_secs_f64();
        assert!(
            got.is_none_or(|got| got == id),
            "{}: an answer to another request",
            self.name
        );
        self.check_success();
        (elapsed, bytes)
    }

    /// `calls` calls of `tool` with `in_flight` requests outstanding at a time: calls per
    /// second.
    pub(crate) fn pipelined(
        &mut self,
        tool: &str,
        arguments: &Value,
        calls: usize,
        in_flight: usize,
    ) -> f64 {
        let params = json!({"name": tool, "arguments": arguments});
        let started = Instant::now();
        let mut sent = 0;
        let mut done = 0;
        while sent < in_flight.min(calls) {
            self.send("tools/call", &params);
            sent += 1;
        }
        while done < calls {
            self.receive();
            self.check_success();
            done += 1;
            if sent < calls {
                self.send("tools/call", &params);
                sent += 1;
            }
        }
        calls as f64 / started.elapsed().as_secs_f64()
    }

    /// The answer in `self.line` must be a successful tool result.
    fn check_success(&self) {
        // `"isError":true` appears only in a failed result's envelope; a file's text would
        // be escaped inside a string. Checked on the raw line to keep parsing out of timing.
        assert!(
            !self.line.contains("\"isError\":true") && !self.line.contains("\"error\":{"),
            "{}: the call failed: {}",
            self.name,
            &self.line[..self.line.len().min(400)]
        );
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The parts of a message that say what it is.
#[derive(serde::Deserialize)]
struct Envelope {
    id: Option<u64>,
    method: Option<String>,
}

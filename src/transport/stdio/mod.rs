//! The stdio transport: newline-delimited JSON-RPC on stdin/stdout.
//!
//! Written here rather than taken from rmcp because rmcp's line transport silently drops bad
//! input: a malformed line gets no reply and the client waits forever. This one answers
//! - a line that is not JSON with `-32700 Parse error` (`id: null`),
//! - JSON that is not a valid message with `-32600 Invalid Request` (with the request's id
//!   when it can be read, else `null`),
//! - a line over [`MAX_LINE_BYTES`] with `-32600` (the line is discarded as it streams in,
//!   never buffered whole),
//!
//! and keeps serving. Stdout carries only JSON-RPC: one writer task owns it, and every
//! message (rmcp's and ours) goes through that task. On stdin EOF `receive` returns `None`,
//! rmcp drains in-flight responses, and `close` flushes the writer before the process exits.
//!
//! This file is the same on every OS; how the process's stdin and stdout become an async
//! reader and writer is not, and lives behind two functions, `stdin()` and `stdout()`, each
//! returning the stream and what it is (for the log):
//! - `unix.rs`: a pipe or a Unix socket is driven by the runtime's reactor (non-blocking, no
//!   thread hop per message); anything else uses tokio's blocking stdio. On Linux
//!   (`linux.rs`) the stdout pipe is also grown to 1 MiB.
//! - `windows.rs`: tokio's stdin/stdout, raw bytes through `ReadFile`/`WriteFile` on a pipe
//!   or file — no code page and no CRLF translation touch the JSON-RPC stream.
//!
//! On every OS nothing but this transport's writer task writes to stdout: logs go to stderr,
//! `clippy::print_stdout` is denied, and commands get their own pipes.

use std::collections::VecDeque;
use std::io;

use rmcp::RoleServer;
use rmcp::model::{ClientJsonRpcMessage, ErrorCode, ServerJsonRpcMessage};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::{Value, json};
use tokio::io::{
    AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, BufWriter,
};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

#[cfg(target_os = "linux")]
mod linux;
#[cfg(unix)]
mod unix;
#[cfg(windows)]
mod windows;

#[cfg(unix)]
use unix as sys;
#[cfg(windows)]
use windows as sys;

/// Longest accepted line (one message). Tool arguments can be large (a file to write, a long
/// stdin for a command); 64 MiB is well above any sane message and bounds memory per line.
pub(crate) const MAX_LINE_BYTES: usize = 64 * 1024 * 1024;

/// Outgoing messages queued for the writer. Bounded so a client that stops reading stdout
/// slows the server down instead of growing its memory without limit.
const OUTGOING_QUEUE: usize = 256;

enum Outgoing {
    Message(Box<ServerJsonRpcMessage>),
    /// A preformatted line (our own error replies, which rmcp's types cannot express with
    /// `id: null`).
    Raw(String),
}

/// A line being read: what has arrived of it so far. Kept in the transport, not in a local of
/// `receive`, because rmcp polls `receive` in a `select!` and drops it whenever another
/// branch wins: whatever a dropped read had taken from the buffer must not be lost.
#[derive(Debug, Default)]
struct Partial {
    line: Vec<u8>,
    total: usize,
    too_long: bool,
}

/// One line read from the input.
enum Line {
    Data(Vec<u8>),
    TooLong(usize),
    Eof,
}

/// Newline-delimited JSON-RPC over any reader/writer pair (stdin/stdout in production, an
/// in-memory pipe in tests).
pub struct StdioTransport<R> {
    reader: BufReader<R>,
    partial: Partial,
    /// Our error replies not yet in the writer's queue. They wait here, not in a local of
    /// `receive`: rmcp drops `receive` whenever another branch of its `select!` wins, and a
    /// reply waiting for room in a full queue must not be dropped with it.
    replies: VecDeque<String>,
    tx: Option<mpsc::Sender<Outgoing>>,
    writer: Option<JoinHandle<()>>,
}

/// A boxed reader or writer: the process's stdin or stdout, whatever the OS hands over.
pub(crate) type BoxReader = Box<dyn AsyncRead + Unpin + Send>;
pub(crate) type BoxWriter = Box<dyn AsyncWrite + Unpin + Send>;

impl StdioTransport<BoxReader> {
    /// The transport on the process's stdin and stdout, as the OS layer ([`sys`]) opens them.
    /// Must be called inside the runtime.
    pub(crate) fn stdio() -> Self {
        let (reader, input) = sys::stdin();
        let (writer, output) = sys::stdout();
        tracing::debug!(stdin = input, stdout = output, "stdio transport");
        Self::new(reader, writer)
    }
}

impl<R: AsyncRead + Unpin + Send + 'static> StdioTransport<R> {
    /// The transport over a reader and a writer.
    pub fn new<W: AsyncWrite + Unpin + Send + 'static>(reader: R, writer: W) -> Self {
        Self::with_queue(reader, writer, OUTGOING_QUEUE)
    }

    /// [`Self::new`] with `queue` outgoing messages queued at most.
    fn with_queue<W: AsyncWrite + Unpin + Send + 'static>(
        reader: R,
        writer: W,
        queue: usize,
    ) -> Self {
        let (tx, rx) = mpsc::channel(queue);
        let writer = tokio::spawn(write_loop(BufWriter::new(writer), rx));
        Self {
            reader: BufReader::with_capacity(64 * 1024, reader),
            partial: Partial::default(),
            replies: VecDeque::new(),
            tx: Some(tx),
            writer: Some(writer),
        }
    }
}

/// An error reply with a raw id (which may be `null`), as one line.
fn error_line(id: &Value, code: ErrorCode, message: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code.0, "message": message}}).to_string()
}

/// The answer to a line that is not a valid message, if it gets one (a malformed response
/// does not); logs what was wrong either way.
fn reject(line: &[u8], error: &serde_json::Error) -> Option<String> {
    let value: Value = match serde_json::from_slice(line) {
        Ok(value) => value,
        Err(parse) => {
            tracing::warn!(%parse, "received a line that is not JSON");
            return Some(error_line(
                &Value::Null,
                ErrorCode::PARSE_ERROR,
                &format!(
                    "Parse error: the line is not valid JSON ({parse}); send one JSON-RPC message per line"
                ),
            ));
        }
    };
    let id = value
        .get("id")
        .filter(|id| id.is_string() || id.is_i64() || id.is_u64())
        .cloned()
        .unwrap_or(Value::Null);
    if value.is_object()
        && value.get("method").is_none()
        && (value.get("result").is_some() || value.get("error").is_some())
    {
        // A malformed response: JSON-RPC forbids replying to responses.
        tracing::warn!(%error, "dropping a malformed response from the client");
        return None;
    }
    let message = if value.is_array() {
        "Invalid Request: batches are not supported; send one JSON-RPC message per line".to_owned()
    } else {
        format!("Invalid Request: not a valid JSON-RPC 2.0 message for this server ({error})")
    };
    tracing::warn!(%error, "received an invalid JSON-RPC message");
    Some(error_line(&id, ErrorCode::INVALID_REQUEST, &message))
}

/// Read one line, up to `max` bytes. A longer line is consumed and discarded without
/// buffering it.
///
/// Cancel-safe: `fill_buf` takes nothing when it is dropped, and what is taken from the
/// buffer moves into `partial` with no await in between, so a read dropped half-way through
/// a line (the line arriving in pieces) resumes where it stopped on the next call.
async fn read_line<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    partial: &mut Partial,
    max: usize,
) -> io::Result<Line> {
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            let p = std::mem::take(partial);
            return Ok(if p.too_long {
                Line::TooLong(p.total)
            } else if p.line.is_empty() {
                Line::Eof
            } else {
                Line::Data(p.line)
            });
        }
        let (chunk, done) = match available.iter().position(|&b| b == b'\n') {
            Some(i) => (&available[..i], Some(i + 1)),
            None => (available, None),
        };
        partial.total += chunk.len();
        if !partial.too_long {
            if partial.total > max {
                partial.too_long = true;
                partial.line = Vec::new();
            } else {
                partial.line.extend_from_slice(chunk);
            }
        }
        let consumed = done.unwrap_or(available.len());
        reader.consume(consumed);
        if done.is_some() {
            let p = std::mem::take(partial);
            return Ok(if p.too_long {
                Line::TooLong(p.total)
            } else {
                Line::Data(p.line)
            });
        }
    }
}

/// `message` as one line of JSON, appended to `out`. sonic-rs escapes strings with SIMD, about
/// 5× faster than serde_json for a megabyte of file text (most of a large read's cost), and
/// writes the same bytes (tested below against serde_json).
fn encode(out: &mut Vec<u8>, message: &ServerJsonRpcMessage) -> sonic_rs::Result<()> {
    sonic_rs::to_writer(out, message)
}

/// The largest serialisation buffer the writer keeps between messages: a 1 MiB file's answer
/// with room for escapes.
const KEPT_BUFFER_BYTES: usize = 4 << 20;

async fn write_loop<W: AsyncWrite + Unpin>(
    mut out: BufWriter<W>,
    mut rx: mpsc::Receiver<Outgoing>,
) {
    // One buffer for every message: a large answer is serialised without growing a new
    // vector (and copying it) step by step each time.
    let mut bytes = Vec::new();
    while let Some(message) = rx.recv().await {
        bytes.clear();
        match message {
            Outgoing::Message(message) => {
                if let Err(error) = encode(&mut bytes, &message) {
                    tracing::error!(%error, "cannot serialize an outgoing message; dropping it");
                    continue;
                }
            }
            Outgoing::Raw(line) => bytes.extend_from_slice(line.as_bytes()),
        }
        bytes.push(b'\n');
        if let Err(error) = out.write_all(&bytes).await {
            tracing::debug!(%error, "stdout is closed");
            return;
        }
        // Flush when nothing else is queued: one syscall per burst, no message left waiting.
        if rx.is_empty()
            && let Err(error) = out.flush().await
        {
            tracing::debug!(%error, "stdout is closed");
            return;
        }
        // A buffer that grew for one huge answer is not kept for the session.
        if bytes.capacity() > KEPT_BUFFER_BYTES {
            bytes = Vec::new();
        }
    }
    let _ = out.flush().await;
}

impl<R> StdioTransport<R> {
    /// Move the waiting error replies into the writer's queue, in order, waiting for room.
    /// Cancel-safe: a reply leaves `replies` only together with the queue slot it goes into.
    async fn queue_replies(&mut self) {
        while !self.replies.is_empty() {
            let permit = match &self.tx {
                Some(tx) => tx.reserve().await.ok(),
                None => None,
            };
            let Some(permit) = permit else {
                // The writer is gone (stdout closed): nothing can be answered any more.
                self.replies.clear();
                return;
            };
            if let Some(line) = self.replies.pop_front() {
                permit.send(Outgoing::Raw(line));
            }
        }
    }
}

impl<R: AsyncRead + Unpin + Send + 'static> Transport<RoleServer> for StdioTransport<R> {
    type Error = io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let tx = self.tx.clone();
        async move {
            let tx =
                tx.ok_or_else(|| io::Error::new(io::ErrorKind::BrokenPipe, "transport closed"))?;
            tx.send(Outgoing::Message(Box::new(item)))
                .await
                .map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "stdout is closed"))
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            self.queue_replies().await;
            let line = match read_line(&mut self.reader, &mut self.partial, MAX_LINE_BYTES).await {
                Ok(Line::Data(line)) => line,
                Ok(Line::Eof) => return None,
                Ok(Line::TooLong(len)) => {
                    tracing::warn!(len, "received a line longer than the limit");
                    self.replies.push_back(error_line(
                        &Value::Null,
                        ErrorCode::INVALID_REQUEST,
                        &format!("Invalid Request: the message is {len} bytes, over the limit of {MAX_LINE_BYTES} bytes per line"),
                    ));
                    continue;
                }
                Err(error) => {
                    tracing::warn!(%error, "stdin failed; closing");
                    return None;
                }
            };
            let trimmed = line.trim_ascii();
            if trimmed.is_empty() {
                continue;
            }
            match serde_json::from_slice::<ClientJsonRpcMessage>(trimmed) {
                Ok(message) => return Some(message),
                Err(error) => self.replies.extend(reject(trimmed, &error)),
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.tx = None;
        if let Some(writer) = self.writer.take() {
            let _ = writer.await;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_encode_as_serde_json_writes_them() {
        let every_control: String = (0u8..0x20).map(char::from).collect();
        let text = format!(
            "{every_control} \" \\ / é 😀 \u{7f} \u{2028}\u{2029} \u{fffd} line\nnext\ttab"
        );
        let message: ServerJsonRpcMessage = serde_json::from_value(json!({
            "jsonrpc": "2.0",
            "id": 7,
            "result": {
                "content": [{"type": "text", "text": text}],
                "structuredContent": {
                    "text": text,
                    "numbers": [0, -1, 18446744073709551615_u64, -9223372036854775808_i64, 0.1, -0.0, 1e300, 2.5e-8, 123456.789],
                    "empty": {"s": "", "a": [], "o": {}},
                    "flags": [true, false, null],
                    "keys": {"z": 1, "a": 2, "\n": 3}
                },
                "isError": false
            }
        }))
        .unwrap();
        let mut ours = Vec::new();
        encode(&mut ours, &message).unwrap();
        let theirs = serde_json::to_vec(&message).unwrap();
        assert_eq!(
            String::from_utf8(ours).unwrap(),
            String::from_utf8(theirs).unwrap()
        );
    }

    /// rmcp drops `receive` whenever another branch of its `select!` wins. An error reply
    /// waiting for room in a full outgoing queue then must still be sent, in order, once the
    /// client reads again.
    #[tokio::test]
    async fn error_replies_survive_a_dropped_receive_while_the_queue_is_full() {
        use std::time::Duration;
        const WAIT: Duration = Duration::from_secs(10);
        // The client's end of stdout holds 64 bytes and is not read yet: the writer blocks on
        // the first reply, the one-message queue takes the second, the third waits for room.
        let (client_out, server_out) = tokio::io::duplex(64);
        let input: &[u8] = b"not json 1\nnot json 2\nnot json 3\n";
        let mut transport = StdioTransport::with_queue(input, server_out, 1);
        let dropped = tokio::time::timeout(Duration::from_millis(100), transport.receive()).await;
        assert!(dropped.is_err(), "receive must wait for room in the queue");
        let reader = tokio::spawn(async move {
            let mut lines = tokio::io::BufReader::new(client_out).lines();
            let mut got = Vec::new();
            while let Ok(Some(line)) = lines.next_line().await {
                got.push(line);
            }
            got
        });
        let end = tokio::time::timeout(WAIT, transport.receive())
            .await
            .unwrap();
        assert!(end.is_none(), "the input ends after the three lines");
        tokio::time::timeout(WAIT, transport.close())
            .await
            .unwrap()
            .unwrap();
        drop(transport);
        let got = tokio::time::timeout(WAIT, reader).await.unwrap().unwrap();
        let parsed: Vec<Value> = got
            .iter()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(parsed.len(), 3, "{got:?}");
        for (i, reply) in parsed.iter().enumerate() {
            assert_eq!(reply["error"]["code"], -32700, "{reply}");
            let message = reply["error"]["message"].as_str().unwrap();
            assert!(message.contains("not valid JSON"), "reply {i}: {message}");
        }
    }

    async fn lines(input: &[u8], max: usize) -> Vec<String> {
        let mut reader = BufReader::with_capacity(4, input);
        let mut partial = Partial::default();
        let mut out = Vec::new();
        loop {
            match read_line(&mut reader, &mut partial, max).await.unwrap() {
                Line::Data(l) => out.push(String::from_utf8(l).unwrap()),
                Line::TooLong(n) => out.push(format!("<too long: {n}>")),
                Line::Eof => return out,
            }
        }
    }

    #[tokio::test]
    async fn splits_lines_and_discards_overlong_ones() {
        assert_eq!(
            lines(b"ab\ncdefgh\nij", 5).await,
            ["ab", "<too long: 6>", "ij"]
        );
        assert_eq!(lines(b"abcde\n\n", 5).await, ["abcde", ""]);
        assert_eq!(lines(b"", 5).await, Vec::<String>::new());
        assert_eq!(lines(b"abcdefgh", 5).await, ["<too long: 8>"]);
    }

    /// rmcp drops `receive` whenever another event wins its `select!`; a line that arrives in
    /// pieces across such a drop must still arrive whole (it was lost, and the client waited
    /// forever for the answer, before `Partial` kept it).
    #[tokio::test]
    async fn a_receive_dropped_mid_line_loses_nothing() {
        let (mut client, server) = tokio::io::duplex(1024);
        let (sink, _keep) = tokio::io::duplex(1024);
        let mut transport = StdioTransport::new(server, sink);
        let line = br#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#;
        client.write_all(&line[..10]).await.unwrap();
        // The receive takes the first piece, then waits for more: drop it there.
        let dropped =
            tokio::time::timeout(std::time::Duration::from_millis(50), transport.receive()).await;
        assert!(dropped.is_err(), "a partial line is not a message");
        client.write_all(&line[10..]).await.unwrap();
        client.write_all(b"\n").await.unwrap();
        let message = tokio::time::timeout(std::time::Duration::from_secs(5), transport.receive())
            .await
            .expect("the rest of the line arrives")
            .expect("a message");
        let value = serde_json::to_value(&message).unwrap();
        assert_eq!(value["id"], json!(7), "{value}");
        assert_eq!(value["method"], json!("ping"));
    }
}

//! The stdio transport's line framing (src/transport/stdio/mod.rs), driven through its public API:
//! `StdioTransport::new` over an in-memory pipe, and rmcp's `Transport`.
//!
//! Input: one byte choosing how the rest is cut into reads, then the bytes a client writes to
//! stdin. Property: no panic, and every non-blank line is accounted for, in order: a valid
//! message is handed on unchanged; a line that is not JSON gets a `-32700` reply with
//! `id: null`; JSON that is not a valid message gets a `-32600` reply (with its id when the id
//! is a string or an integer); a malformed *response* is dropped (JSON-RPC forbids answering
//! it). Nothing else is written, every reply is one JSON line, and a line split across reads
//! (the read dropped in between, as rmcp's `select!` drops it) arrives whole.
#![no_main]

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use futures::FutureExt;
use libfuzzer_sys::fuzz_target;
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::Transport;
use serde_json::Value;
use tokio::io::{AsyncWrite, AsyncWriteExt};
use toolport::transport::stdio::StdioTransport;

/// More replies than this in one read could fill the transport's outgoing queue (256) while
/// the harness holds the writer task; real clients' replies are drained concurrently.
const MAX_LINES: usize = 200;

/// What the transport made of an input: the messages it handed to rmcp (as JSON) and the
/// bytes it wrote to stdout (its own error replies; nothing else writes in this harness).
struct StdioRun {
    received: Vec<Value>,
    written: Vec<u8>,
}

/// The message a line is, as the transport parses it (`None`: not a valid message).
fn stdio_message(line: &[u8]) -> Option<Value> {
    serde_json::from_slice::<ClientJsonRpcMessage>(line)
        .ok()
        .and_then(|message| serde_json::to_value(message).ok())
}

/// An output that appends to a shared buffer.
#[derive(Clone, Default)]
struct Sink(Arc<Mutex<Vec<u8>>>);

impl AsyncWrite for Sink {
    fn poll_write(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Poll::Ready(Ok(buf.len()))
    }
    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

thread_local! {
    static RUNTIME: tokio::runtime::Runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime for the harness");
}

/// Feed `pieces` to a `StdioTransport` one after the other. After each piece, `receive` is
/// polled until it has nothing complete to return, and then dropped while it waits for more,
/// as rmcp's `select!` drops it (so a line split across pieces crosses such a drop). After the
/// last piece the input ends and what remains is drained.
fn stdio_feed(pieces: &[&[u8]]) -> StdioRun {
    RUNTIME.with(|runtime| {
        runtime.block_on(async {
            let sink = Sink::default();
            let total: usize = pieces.iter().map(|p| p.len()).sum();
            let (mut client, server) = tokio::io::duplex(total + 1);
            let mut transport = StdioTransport::new(server, sink.clone());
            let mut received = Vec::new();
            let mut keep = |message: ClientJsonRpcMessage| {
                received.push(serde_json::to_value(message).unwrap_or(Value::Null));
            };
            for piece in pieces {
                if client.write_all(piece).await.is_err() {
                    break;
                }
                while let Some(Some(message)) = transport.receive().now_or_never() {
                    keep(message);
                    // Let the writer task drain the replies queued so far.
                    tokio::task::yield_now().await;
                }
                tokio::task::yield_now().await;
            }
            drop(client);
            while let Some(message) = transport.receive().await {
                keep(message);
            }
            let _ = transport.close().await;
            let written = sink.0.lock().unwrap().clone();
            StdioRun { received, written }
        })
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&cut, input)) = data.split_first() else {
        return;
    };
    let lines: Vec<&[u8]> = input
        .split(|&b| b == b'\n')
        .map(<[u8]>::trim_ascii)
        .filter(|l| !l.is_empty())
        .collect();
    if lines.len() > MAX_LINES {
        return;
    }
    let size = usize::from(cut % 64) + 1;
    let pieces: Vec<&[u8]> = if cut >= 192 {
        vec![input]
    } else {
        input.chunks(size).collect()
    };

    let mut expected_messages = Vec::new();
    let mut expected_replies: Vec<(i64, Value)> = Vec::new();
    for line in &lines {
        if let Some(message) = stdio_message(line) {
            expected_messages.push(message);
            continue;
        }
        let value: Value = match serde_json::from_slice(line) {
            Ok(value) => value,
            Err(_) => {
                expected_replies.push((-32700, Value::Null));
                continue;
            }
        };
        if value.is_object()
            && value.get("method").is_none()
            && (value.get("result").is_some() || value.get("error").is_some())
        {
            continue;
        }
        let id = value
            .get("id")
            .filter(|id| id.is_string() || id.is_i64() || id.is_u64())
            .cloned()
            .unwrap_or(Value::Null);
        expected_replies.push((-32600, id));
    }

    let run = stdio_feed(&pieces);
    assert_eq!(
        run.received, expected_messages,
        "the messages handed on differ from the valid lines"
    );
    let written = String::from_utf8(run.written).expect("the output is UTF-8");
    assert!(
        written.is_empty() || written.ends_with('\n'),
        "the output does not end with a newline: {written:?}"
    );
    let replies: Vec<(i64, Value)> = written
        .lines()
        .map(|line| {
            let reply: Value = serde_json::from_str(line).expect("each reply is one JSON line");
            assert_eq!(reply["jsonrpc"], "2.0", "{line}");
            assert!(reply["error"]["message"].is_string(), "{line}");
            let code = reply["error"]["code"].as_i64().expect("an error code");
            (code, reply["id"].clone())
        })
        .collect();
    assert_eq!(replies, expected_replies, "the error replies differ");
});

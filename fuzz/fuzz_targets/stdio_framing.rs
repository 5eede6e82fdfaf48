//! The stdio transport's line framing (src/transport/stdio.rs).
//!
//! Input: one byte choosing how the rest is cut into reads, then the bytes a client writes to
//! stdin. Property: no panic, and every non-blank line is accounted for, in order: a valid
//! message is handed on unchanged; a line that is not JSON gets a `-32700` reply with
//! `id: null`; JSON that is not a valid message gets a `-32600` reply (with its id when the id
//! is a string or an integer); a malformed *response* is dropped (JSON-RPC forbids answering
//! it). Nothing else is written, every reply is one JSON line, and a line split across reads
//! (the read dropped in between, as rmcp's `select!` drops it) arrives whole.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use toolport::fuzzing::{stdio_feed, stdio_message};

/// More replies than this in one read could fill the transport's outgoing queue (256) while
/// the harness holds the writer task; real clients' replies are drained concurrently.
const MAX_LINES: usize = 200;

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

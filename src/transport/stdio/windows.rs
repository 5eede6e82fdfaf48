//! stdin and stdout on Windows: tokio's `stdin()`/`stdout()`, byte streams as they are.
//!
//! Rust's standard streams sit on the raw handles (`ReadFile`/`WriteFile`), not on the C
//! runtime's text-mode descriptors: on a pipe or a file (what an MCP client gives a server it
//! launches) the JSON-RPC bytes pass through untouched — no code page conversion, no CRLF
//! translation, UTF-8 in and out whatever `chcp` says. On a console (someone typing into the
//! server) the standard library reads and writes UTF-16 through the console API and converts
//! to and from UTF-8, so the stream is still UTF-8 and still free of the console code page.
//!
//! Windows pipes cannot be registered with tokio's reactor the way Unix pipes are (an
//! anonymous pipe has no overlapped I/O), so reads and writes go through tokio's blocking
//! pool: two thread wake-ups per message, which costs latency, never correctness.

use std::io::IsTerminal;

use super::{BoxReader, BoxWriter};

/// The process's stdin, and what it is ("console" or "byte stream").
pub(super) fn stdin() -> (BoxReader, &'static str) {
    (
        Box::new(tokio::io::stdin()),
        kind(std::io::stdin().is_terminal()),
    )
}

/// The process's stdout, and what it is ("console" or "byte stream").
pub(super) fn stdout() -> (BoxWriter, &'static str) {
    (
        Box::new(tokio::io::stdout()),
        kind(std::io::stdout().is_terminal()),
    )
}

/// What a standard stream is, for the log.
fn kind(console: bool) -> &'static str {
    if console { "console" } else { "byte stream" }
}

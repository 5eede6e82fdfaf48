//! An upstream's messages past the most toolport reads of one ([`MAX_MESSAGE_BYTES`]).
//!
//! rmcp reads at most that much of one message (a stdio line, an HTTP answer or SSE event),
//! so a server cannot fill toolport's memory, and drops a longer one unread. Over stdio
//! nothing would then tell the call it answered: the call would wait for its `timeout` and
//! fail as if the server had not answered. [`Watched`] sits under rmcp on the server's stdout:
//! it follows each line's top level as it streams past to find its `"id"` (and whether it has
//! a `"method"`: then it is a request or notification of the server's own, not an answer),
//! and after a response's line that rmcp drops, it adds a JSON-RPC error for that id. The
//! call fails at once, saying why ([`too_large_bytes`] recognises that error). The line
//! itself passes through untouched: rmcp drops it by the same count (its newline included).

use std::pin::Pin;
use std::task::{Context, Poll, ready};

use serde_json::Value;
use tokio::io::{AsyncRead, ReadBuf};

/// The most toolport reads of one message of an upstream: rmcp's own bound, which its HTTP
/// client applies to a JSON answer and [`Watched`]'s line count must match for stdio.
pub(crate) const MAX_MESSAGE_BYTES: usize = rmcp::transport::async_rw::DEFAULT_MAX_LINE_LENGTH;

/// The key of the data of the error [`Watched`] adds: the size of the dropped answer.
const TOO_LARGE_KEY: &str = "toolport/too_large";

/// How much of the server's output is read at once.
const READ_CHUNK_BYTES: usize = 64 * 1024;

/// The longest request id kept: ids are numbers or short strings.
const MAX_ID_BYTES: usize = 256;

/// The longest key compared: `method`.
const MAX_KEY_BYTES: usize = 6;

/// A server's stdout as rmcp reads it, with an error for each answer too large to read added
/// after it.
pub(crate) struct Watched<R> {
    inner: R,
    /// The current line's bytes so far, its newline included (rmcp's count).
    line_bytes: usize,
    /// The most rmcp reads of a line: [`MAX_MESSAGE_BYTES`] (less only in the fuzz target).
    limit: usize,
    top: TopLevel,
    /// Read from the server (and any error added), not yet given to rmcp, from `given`.
    out: Vec<u8>,
    given: usize,
    chunk: Box<[u8]>,
    /// The server's name, for the log.
    name: std::sync::Arc<str>,
}

impl<R> Watched<R> {
    pub(crate) fn new(inner: R, name: std::sync::Arc<str>) -> Self {
        Self {
            inner,
            line_bytes: 0,
            limit: MAX_MESSAGE_BYTES,
            top: TopLevel::default(),
            out: Vec::new(),
            given: 0,
            chunk: vec![0; READ_CHUNK_BYTES].into_boxed_slice(),
            name,
        }
    }

    /// Take `n` bytes just read into `chunk`: into `out`, each line followed by an error when
    /// it was an answer too large to read.
    fn take(&mut self, n: usize) {
        let mut rest = &self.chunk[..n];
        while !rest.is_empty() {
            let Some(end) = memchr::memchr(b'\n', rest) else {
                self.top.feed(rest);
                self.line_bytes += rest.len();
                self.out.extend_from_slice(rest);
                break;
            };
            let (line, after) = rest.split_at(end + 1);
            self.top.feed(&line[..end]);
            self.line_bytes += line.len();
            self.out.extend_from_slice(line);
            if self.line_bytes > self.limit {
                let added = (self.top.answer_id()).and_then(|id| error_line(id, self.line_bytes));
                match added {
                    Some(line) => self.out.extend_from_slice(&line),
                    None => tracing::warn!(
                        upstream = %self.name,
                        bytes = self.line_bytes,
                        "an upstream's message over the size toolport reads was dropped (not an answer with an id toolport sends)"
                    ),
                }
            }
            self.top = TopLevel::default();
            self.line_bytes = 0;
            rest = after;
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for Watched<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = &mut *self;
        loop {
            if this.given < this.out.len() || buf.remaining() == 0 {
                let n = buf.remaining().min(this.out.len() - this.given);
                buf.put_slice(&this.out[this.given..this.given + n]);
                this.given += n;
                return Poll::Ready(Ok(()));
            }
            this.out.clear();
            this.given = 0;
            let mut read = ReadBuf::new(&mut this.chunk[..]);
            ready!(Pin::new(&mut this.inner).poll_read(cx, &mut read))?;
            let n = read.filled().len();
            if n == 0 {
                return Poll::Ready(Ok(()));
            }
            this.take(n);
        }
    }
}

/// The line of the JSON-RPC error that answers request `id` for the server, whose answer of
/// `bytes` was dropped. Nothing when `id` is not a request id toolport sends (rmcp's: an `i64`
/// or a string; the fuzz target found a larger integer, which rmcp cannot read).
fn error_line(id: &[u8], bytes: usize) -> Option<Vec<u8>> {
    let id: Value = serde_json::from_slice(id).ok()?;
    if !(id.is_i64() || id.is_string()) {
        return None;
    }
    let error = serde_json::json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {
            "code": rmcp::model::ErrorCode::INTERNAL_ERROR,
            "message": format!("the answer was {bytes} bytes, more than the {MAX_MESSAGE_BYTES} toolport reads of one message"),
            "data": { TOO_LARGE_KEY: bytes },
        },
    });
    let mut line = serde_json::to_vec(&error).ok()?;
    line.push(b'\n');
    Some(line)
}

/// The size of the dropped answer when `error` is the one [`Watched`] added.
pub(crate) fn too_large_bytes(error: &rmcp::ErrorData) -> Option<usize> {
    let bytes = error.data.as_ref()?.get(TOO_LARGE_KEY)?.as_u64()?;
    usize::try_from(bytes).ok()
}

/// What the model reads when an upstream's answer was too large to read (`bytes` of it) or,
/// with a `limit` of the operator's, to pass on.
pub(crate) fn too_large(name: &str, bytes: usize, limit: Option<usize>) -> String {
    let (most, why) = match limit {
        Some(limit) => (limit, "toolport passes on from it (its `max_result_bytes`)"),
        None => (MAX_MESSAGE_BYTES, "toolport reads of one message"),
    };
    format!(
        "the MCP server {name:?} answered with {}, more than the {} {why}; the answer was dropped. Ask for less at once: a narrower query, a smaller page or range",
        crate::settings::human_bytes(bytes as u64),
        crate::settings::human_bytes(most as u64),
    )
}

/// The fuzz target `upstream_answers`' doors (fuzz/; `fuzzing` feature only): `input`
/// read through [`Watched`] with a bound of `limit` bytes a line, and the id [`TopLevel`] finds
/// as the answer's in one line.
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzz {
    use tokio::io::AsyncReadExt;

    /// What rmcp would read of `input` with lines of at most `limit` bytes, read from the
    /// server `chunk` bytes at a time (so lines cross reads).
    #[expect(
        clippy::expect_used,
        reason = "a fuzz door: a read error is a finding, which libFuzzer reports as a panic"
    )]
    pub fn watch(input: &[u8], limit: usize, chunk: usize) -> Vec<u8> {
        let mut watched = super::Watched::new(input, "fuzz".into());
        watched.limit = limit;
        watched.chunk = vec![0; chunk.max(1)].into_boxed_slice();
        let mut out = Vec::new();
        let read = watched.read_to_end(&mut out);
        futures::executor::block_on(read).expect("reading from memory");
        out
    }

    /// The request id `line` answers, as raw JSON.
    pub fn answer_id(line: &[u8]) -> Option<Vec<u8>> {
        let mut top = super::TopLevel::default();
        top.feed(line);
        top.answer_id().map(<[u8]>::to_vec)
    }
}

/// Where the scan of a line's top-level object stands.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// Before the object (or past it).
    #[default]
    Start,
    /// A member's key.
    Key,
    /// The `:` after a key.
    Colon,
    /// A member's value.
    Value,
    /// Inside or after a value: a `,` or the object's end.
    Next,
}

/// The top-level member whose value is being read.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum Member {
    #[default]
    Other,
    Id,
    Method,
}

/// The request id's raw JSON as it is read.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
enum Id {
    #[default]
    None,
    Reading(Vec<u8>),
    Read(Vec<u8>),
    /// An object, an array or a value too long to be an id.
    Unusable,
}

/// What is known of one line's top-level object as it streams past, in O(1) memory: its
/// `"id"` (as raw JSON) and whether it has a `"method"`. Strings are skipped with `memchr`,
/// so a large result costs little more than the copy.
#[derive(Debug, Default)]
struct TopLevel {
    /// Nesting: 1 inside the top-level object.
    depth: u32,
    in_string: bool,
    escaped: bool,
    /// The string being read is a top-level key.
    in_key: bool,
    expect: Expect,
    key: [u8; MAX_KEY_BYTES],
    /// The key's length so far; past [`MAX_KEY_BYTES`] (or escaped) it matches nothing.
    key_len: usize,
    member: Member,
    id: Id,
    method: bool,
}

impl TopLevel {
    /// The request id this line answers: its top-level `"id"`, when it has no `"method"`.
    fn answer_id(&self) -> Option<&[u8]> {
        match (&self.id, self.method) {
            (Id::Read(id), false) => Some(id),
            _ => None,
        }
    }

    fn feed(&mut self, mut bytes: &[u8]) {
        while let Some((&b, rest)) = bytes.split_first() {
            bytes = rest;
            if self.in_string {
                // Inside a string no one keeps: straight to its end or its next escape.
                if !self.in_key
                    && !self.escaped
                    && !matches!(self.id, Id::Reading(_))
                    && b != b'"'
                    && b != b'\\'
                {
                    match memchr::memchr2(b'"', b'\\', bytes) {
                        Some(at) => bytes = &bytes[at..],
                        None => return,
                    }
                    continue;
                }
                self.string_byte(b);
            } else {
                self.structural(b);
            }
        }
    }

    /// A byte inside a string.
    fn string_byte(&mut self, b: u8) {
        self.push_id(b);
        if self.escaped {
            self.escaped = false;
            self.key_len = usize::MAX;
            return;
        }
        match b {
            b'\\' => {
                self.escaped = true;
                self.key_len = usize::MAX;
            }
            b'"' => {
                self.in_string = false;
                if self.in_key {
                    self.in_key = false;
                    self.member = match self.key.get(..self.key_len) {
                        Some(b"id") => Member::Id,
                        Some(b"method") => Member::Method,
                        _ => Member::Other,
                    };
                    self.expect = Expect::Colon;
                } else {
                    self.end_id();
                }
            }
            _ if self.in_key => {
                if let Some(slot) = self.key.get_mut(self.key_len) {
                    *slot = b;
                    self.key_len += 1;
                } else {
                    self.key_len = usize::MAX;
                }
            }
            _ => {}
        }
    }

    /// A byte outside strings.
    fn structural(&mut self, b: u8) {
        let top = self.depth == 1;
        match b {
            b'"' => {
                self.in_string = true;
                if top && self.expect == Expect::Key {
                    self.in_key = true;
                    self.key_len = 0;
                } else if top && self.expect == Expect::Value {
                    self.value_starts(b);
                }
            }
            b'{' | b'[' => {
                if self.depth == 0 && b == b'{' && self.expect == Expect::Start {
                    self.expect = Expect::Key;
                } else if top && self.expect == Expect::Value {
                    if self.member == Member::Id && self.id == Id::None {
                        self.id = Id::Unusable;
                    }
                    self.value_starts(b);
                }
                self.depth = self.depth.saturating_add(1);
            }
            b'}' | b']' => {
                if top {
                    self.end_id();
                    self.expect = Expect::Start;
                }
                self.depth = self.depth.saturating_sub(1);
            }
            b',' if top => {
                self.end_id();
                self.expect = Expect::Key;
            }
            b':' if top && self.expect == Expect::Colon => self.expect = Expect::Value,
            b' ' | b'\t' | b'\r' | b'\n' => {
                if top {
                    self.end_id();
                }
            }
            _ if top && self.expect == Expect::Value => self.value_starts(b),
            _ => self.push_id(b),
        }
    }

    /// A top-level value starts with `b`.
    fn value_starts(&mut self, b: u8) {
        self.expect = Expect::Next;
        match self.member {
            Member::Method => self.method = true,
            Member::Id if self.id == Id::None => self.id = Id::Reading(vec![b]),
            _ => {}
        }
    }

    /// The id being read (if any) is whole.
    fn end_id(&mut self) {
        if let Id::Reading(raw) = &mut self.id {
            self.id = Id::Read(std::mem::take(raw));
        }
    }

    /// `b` is part of the id being read (if any); past [`MAX_ID_BYTES`] it is no id.
    fn push_id(&mut self, b: u8) {
        if let Id::Reading(raw) = &mut self.id {
            if raw.len() < MAX_ID_BYTES {
                raw.push(b);
            } else {
                self.id = Id::Unusable;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    fn scan(line: &str) -> TopLevel {
        let mut top = TopLevel::default();
        top.feed(line.as_bytes());
        top
    }

    fn id_of(line: &str) -> Option<String> {
        scan(line)
            .answer_id()
            .map(|id| String::from_utf8(id.to_vec()).unwrap())
    }

    #[test]
    fn the_id_of_an_answer_is_found_wherever_the_sdk_puts_it() {
        // rmcp and the Python SDK write the id first, the TypeScript SDK last.
        assert_eq!(
            id_of(r#"{"jsonrpc":"2.0","id":7,"result":{"content":[]}}"#).as_deref(),
            Some("7")
        );
        assert_eq!(
            id_of(r#"{"result":{"content":[{"type":"text","text":"a \"}\" b"}]},"jsonrpc":"2.0","id":12}"#)
                .as_deref(),
            Some("12")
        );
        assert_eq!(
            id_of(r#"{ "id" : "req-\"1\"" , "error": {"code": 1}}"#).as_deref(),
            Some(r#""req-\"1\"""#)
        );
        assert_eq!(id_of(r#"{"id":-3,"result":{}}"#).as_deref(), Some("-3"));
    }

    #[test]
    fn nested_ids_requests_and_notifications_are_not_answers() {
        // Only the top level counts.
        assert_eq!(
            id_of(r#"{"jsonrpc":"2.0","result":{"id":5,"x":[{"id":6}]}}"#),
            None
        );
        assert_eq!(id_of(r#"{"result":{"id":5},"id":9}"#).as_deref(), Some("9"));
        // A request of the server's own (sampling, elicitation) has an id of its id space.
        assert_eq!(
            id_of(r#"{"jsonrpc":"2.0","id":1,"method":"elicitation/create","params":{}}"#),
            None
        );
        assert_eq!(
            id_of(r#"{"method":"notifications/message","params":{"id":3}}"#),
            None
        );
        // Keys that only begin or end like "id", or are escaped, are other keys.
        assert_eq!(id_of(r#"{"idx":1,"xid":2,"i\u0064":3}"#), None);
        // An id that is an object, or too long, is no id; a later "id" does not change the
        // first (found by the fuzz target).
        assert_eq!(id_of(r#"{"id":{"a":1},"result":{}}"#), None);
        assert_eq!(
            id_of(r#"{"id":-3e0,"id":{"id":3}}"#).as_deref(),
            Some("-3e0")
        );
        let long = format!(r#"{{"id":"{}","result":{{}}}}"#, "a".repeat(300));
        assert_eq!(id_of(&long), None);
    }

    #[test]
    fn a_line_fed_in_pieces_scans_as_one() {
        let line = r#"{"result":{"content":[{"type":"text","text":"x\\\"y"}]},"jsonrpc":"2.0","id":"a\\b"}"#;
        for cut in 0..line.len() {
            let mut top = TopLevel::default();
            top.feed(&line.as_bytes()[..cut]);
            top.feed(&line.as_bytes()[cut..]);
            assert_eq!(top.answer_id(), Some(&br#""a\\b""#[..]), "cut at {cut}");
        }
    }

    async fn read_all(input: Vec<u8>) -> Vec<u8> {
        let mut watched = Watched::new(&input[..], "t".into());
        let mut out = Vec::new();
        watched.read_to_end(&mut out).await.unwrap();
        out
    }

    #[tokio::test]
    async fn an_answer_too_large_is_followed_by_an_error_for_its_id() {
        // rmcp drops a line whose bytes, its newline included, pass the bound.
        let over = format!(
            "{{\"result\":{{\"text\":\"{}\"}},\"jsonrpc\":\"2.0\",\"id\":4}}\n",
            "x".repeat(MAX_MESSAGE_BYTES)
        );
        let at_bound = {
            let head = "{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{\"text\":\"";
            let tail = "\"}}\n";
            format!(
                "{head}{}{tail}",
                "y".repeat(MAX_MESSAGE_BYTES - head.len() - tail.len())
            )
        };
        assert_eq!(at_bound.len(), MAX_MESSAGE_BYTES);
        let small = "{\"jsonrpc\":\"2.0\",\"id\":6,\"result\":{}}\n";
        let input = [over.as_str(), at_bound.as_str(), small].concat();
        let out = read_all(input.clone().into_bytes()).await;
        let (passed, added) = out.split_at(over.len());
        assert_eq!(passed, over.as_bytes(), "the line itself passes untouched");
        let error_end = added.iter().position(|&b| b == b'\n').unwrap() + 1;
        let error: Value = serde_json::from_slice(&added[..error_end]).unwrap();
        assert_eq!(error["id"], 4);
        // JSON-RPC's internal error, as on the wire.
        assert_eq!(error["error"]["code"], -32603);
        let error: rmcp::ErrorData = serde_json::from_value(error["error"].clone()).unwrap();
        assert_eq!(too_large_bytes(&error), Some(over.len()));
        // A line at the bound, and the lines after, pass as they came.
        assert_eq!(
            &added[error_end..],
            [at_bound.as_str(), small].concat().as_bytes()
        );
    }

    #[test]
    fn an_error_is_added_only_for_an_id_rmcp_reads() {
        assert!(error_line(b"7", 10).is_some());
        assert!(error_line(br#""a\"b""#, 10).is_some());
        // Past i64 (found by the fuzz target), a float, null: rmcp could not read the error.
        for id in ["18443240923704070551", "-3e0", "null", "true"] {
            assert!(error_line(id.as_bytes(), 10).is_none(), "{id}");
        }
    }

    #[tokio::test]
    async fn a_request_too_large_gets_nothing_added() {
        let request = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"sampling/createMessage\",\"params\":{{\"t\":\"{}\"}}}}\n",
            "z".repeat(MAX_MESSAGE_BYTES)
        );
        assert_eq!(
            read_all(request.clone().into_bytes()).await,
            request.as_bytes()
        );
    }

    #[tokio::test]
    async fn rmcp_drops_the_line_and_delivers_the_error_that_follows() {
        use rmcp::transport::Transport;
        use rmcp::transport::async_rw::AsyncRwTransport;

        // rmcp counts a line as the watch does: one past the bound is dropped (its error
        // delivered instead), one at the bound is read.
        let over = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":8,\"result\":{{\"t\":\"{}\"}}}}\n",
            "x".repeat(MAX_MESSAGE_BYTES)
        );
        let (head, tail) = (
            "{\"jsonrpc\":\"2.0\",\"id\":9,\"result\":{\"t\":\"",
            "\"}}\n",
        );
        let at_bound = format!(
            "{head}{}{tail}",
            "y".repeat(MAX_MESSAGE_BYTES - head.len() - tail.len())
        );
        let input = [over, at_bound].concat().into_bytes();
        let watched = Watched::new(std::io::Cursor::new(input), "t".into());
        let mut transport =
            AsyncRwTransport::<rmcp::RoleClient, _, _>::new_client(watched, tokio::io::sink())
                .with_max_line_length(MAX_MESSAGE_BYTES);
        let message = transport.receive().await.expect("the added error");
        let rmcp::model::ServerJsonRpcMessage::Error(error) = message else {
            panic!("not an error: {message:?}");
        };
        assert_eq!(error.id, Some(rmcp::model::RequestId::Number(8)));
        assert!(too_large_bytes(&error.error).is_some());
        let message = transport.receive().await.expect("the answer at the bound");
        let rmcp::model::ServerJsonRpcMessage::Response(response) = message else {
            panic!("not a response: {message:?}");
        };
        assert_eq!(response.id, rmcp::model::RequestId::Number(9));
        assert!(transport.receive().await.is_none());
    }
}

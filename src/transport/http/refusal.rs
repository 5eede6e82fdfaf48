//! The body of every answer the HTTP layer gives itself (a refusal of the gate, a full server,
//! an unknown session, an unreadable body): a JSON-RPC error response with `id: null`, so an
//! MCP client reads the reason the way it reads any other error instead of failing to parse
//! plain text. The status code still says what happened (401, 403, 404, 413, 429, 503 …).
//!
//! The codes: `-32700` for a body that is not JSON-RPC (the parse error of JSON-RPC 2.0),
//! `-32001` for an unknown session (what the reference TypeScript SDK's transports send) and
//! `-32000` (an implementation-defined server error) for the rest.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// JSON-RPC 2.0's parse error: the body is not one JSON-RPC message.
pub(crate) const PARSE_ERROR: i64 = -32700;
/// The session named by the request is unknown or closed.
pub(crate) const UNKNOWN_SESSION: i64 = -32001;
/// Any other refusal by the HTTP layer.
pub(crate) const REFUSED: i64 = -32000;

/// An answer with `status` and a JSON-RPC error body carrying `code` and `message`.
pub(crate) fn refusal(status: StatusCode, code: i64, message: impl Into<String>) -> Response {
    let body = json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {"code": code, "message": message.into()},
    });
    let mut response = (status, body.to_string()).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

//! The body of every answer the HTTP layer gives itself (a refusal of the gate, a full server,
//! an unknown session, an unreadable body): a JSON-RPC error response with `id: null`, so an
//! MCP client reads the reason the way it reads any other error instead of failing to parse
//! plain text. The status code still says what happened (401, 403, 404, 413, 429, 503 …).
//!
//! The codes: `-32700` for a body that is not JSON-RPC (the parse error of JSON-RPC 2.0,
//! rmcp's [`ErrorCode::PARSE_ERROR`]), and two of the range JSON-RPC leaves to a server,
//! defined here alone: [`UNKNOWN_SESSION`] `-32001` for an unknown session (what the
//! reference TypeScript SDK's transports send) and [`REFUSED`] `-32000` for the rest.
//!
//! rmcp's Streamable HTTP service answers its own refusals (no session id, an unknown session,
//! a missing `Accept`) in plain text; [`json_rpc_errors`], a layer around the whole router,
//! rewrites any such answer into the same shape, keeping its status, headers and words.

use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::model::ErrorCode;
use serde_json::json;

/// The session named by the request is unknown or closed.
pub(crate) const UNKNOWN_SESSION: ErrorCode = ErrorCode(-32001);
/// Any other refusal by the HTTP layer.
pub(crate) const REFUSED: ErrorCode = ErrorCode(-32000);

/// An answer with `status` and a JSON-RPC error body carrying `code` and `message`.
pub(crate) fn refusal(status: StatusCode, code: ErrorCode, message: impl Into<String>) -> Response {
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

/// The most of a plain-text refusal's body kept as the error message (rmcp's are one line).
const MAX_PLAIN_BODY: usize = 4096;

/// Give every refusal that is not already JSON (rmcp's plain-text ones) a JSON-RPC error body
/// with its words; other answers, event streams included, pass untouched.
pub(crate) async fn json_rpc_errors(request: Request, next: Next) -> Response {
    let response = next.run(request).await;
    let status = response.status();
    let already = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|t| t.to_str().ok())
        .is_some_and(|t| t.starts_with("application/json") || t.starts_with("text/event-stream"));
    if !(status.is_client_error() || status.is_server_error()) || already {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let reason = status.canonical_reason().unwrap_or("refused");
    let message = match axum::body::to_bytes(body, MAX_PLAIN_BODY).await {
        Ok(bytes) if !bytes.trim_ascii().is_empty() => {
            String::from_utf8_lossy(bytes.trim_ascii()).into_owned()
        }
        _ => reason.to_owned(),
    };
    // On /mcp a 404 is rmcp's "Session not found".
    let code = if status == StatusCode::NOT_FOUND {
        UNKNOWN_SESSION
    } else {
        REFUSED
    };
    let rewritten = refusal(status, code, message);
    parts.headers.remove(header::CONTENT_LENGTH);
    parts.headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    Response::from_parts(parts, rewritten.into_body())
}

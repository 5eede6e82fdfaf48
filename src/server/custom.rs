//! Requests rmcp could not read. rmcp hands over as "custom" every request it could not
//! parse, including an MCP method whose params do not have the shape MCP defines
//! (`"arguments": "x"` in a `tools/call`): those get Invalid params (-32602) saying what is
//! wrong, not Method not found.

use rmcp::ErrorData as McpError;

/// The answer to a request rmcp could not read: -32602 with the params `method` takes, for an
/// MCP method; -32601 otherwise.
pub(super) fn unreadable(method: &str) -> McpError {
    if let Some(shape) = params_shape(method) {
        return McpError::invalid_params(format!("invalid params for {method}: {shape}"), None);
    }
    McpError::new(
        rmcp::model::ErrorCode::METHOD_NOT_FOUND,
        format!("method not found: {method}"),
        None,
    )
}

/// The params an MCP request method takes, in words, for the methods whose params can be
/// wrong (`None`: not an MCP method this server knows).
fn params_shape(method: &str) -> Option<&'static str> {
    Some(match method {
        "tools/call" => {
            "params must be an object with `name` (a string) and, optionally, `arguments` (an object of the tool's parameters, e.g. {\"path\": \"README.md\"}) and `_meta`"
        }
        "prompts/get" => {
            "params must be an object with `name` (a string) and, optionally, `arguments` (an object of strings)"
        }
        "resources/read" | "resources/subscribe" | "resources/unsubscribe" => {
            "params must be an object with `uri` (a string)"
        }
        "tools/list" | "prompts/list" | "resources/list" | "resources/templates/list" => {
            "params, when given, must be an object (with an optional `cursor` string)"
        }
        "initialize" => {
            "params must be an object with `protocolVersion`, `capabilities` and `clientInfo` ({name, version})"
        }
        "tasks/get" | "tasks/update" | "tasks/cancel" => {
            "params must be an object with `taskId` (a string)"
        }
        "completion/complete" => {
            "params must be an object with `ref` and `argument` ({name, value})"
        }
        "logging/setLevel" => {
            "params must be an object with `level` (debug, info, warning, error …)"
        }
        "ping" => "params, when given, must be an object",
        _ => return None,
    })
}

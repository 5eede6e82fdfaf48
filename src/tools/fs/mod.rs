//! The file tools: `read_file`, `list_directory` and `path_info`. Thin adapters: every path
//! goes through [`crate::workspace::Workspace`], which owns confinement and secret rules.

mod list_directory;
mod path_info;
mod read_file;

pub use list_directory::ListDirectory;
pub use path_info::PathInfo;
pub use read_file::ReadFile;

/// The category of every file tool.
pub const CATEGORY: &str = "filesystem";

/// Annotations shared by the file tools: read-only, idempotent, closed world.
pub const ANNOTATIONS: crate::tool::Annotations = crate::tool::Annotations {
    read_only: true,
    destructive: false,
    idempotent: true,
    open_world: false,
};

/// Run blocking file work off the async runtime, mapping a panic or a runtime shutdown to a
/// tool error.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, crate::tool::ToolError> + Send + 'static,
) -> Result<T, crate::tool::ToolError> {
    match tokio::task::spawn_blocking(work).await {
        Ok(result) => result,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(e) => Err(crate::tool::ToolError::Cancelled(format!(
            "the server is shutting down ({e})"
        ))),
    }
}

/// Deserialize validated arguments into a params struct. The schema check has already run, so
/// a failure here means the schema and the struct disagree; still, say what went wrong.
fn params<T: serde::de::DeserializeOwned>(
    args: crate::tool::JsonObject,
) -> Result<T, crate::tool::ToolError> {
    serde_json::from_value(serde_json::Value::Object(args))
        .map_err(|e| crate::tool::ToolError::InvalidArguments(e.to_string()))
}

/// A structured result as JSON (our result types always serialize).
fn to_value<T: serde::Serialize>(value: &T) -> serde_json::Value {
    serde_json::to_value(value).unwrap_or(serde_json::Value::Null)
}

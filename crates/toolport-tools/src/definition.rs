//! [`ToolDefinition`]: the provider-neutral description of a tool (`{name, description,
//! input_schema, output_schema?}`, Anthropic-style), its validation, and its conversions to the
//! formats of MCP, OpenAI/OpenRouter, Anthropic and Ollama. The schemas are already portable
//! ([`crate::schema`]), so every format carries them unchanged.
//!
//! The MCP form also carries per-tool `_meta` hints that Claude Code reads ([`ToolHints`]);
//! the spec allows `_meta` on every tool, and other clients ignore keys they do not know.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::tool::{Annotations, JsonObject};

/// The longest tool name every target format accepts (OpenAI caps function names at 64).
pub(crate) const MAX_TOOL_NAME_LEN: usize = 64;

/// Why a definition is not acceptable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DefinitionError {
    /// The name is empty, too long, or has characters outside `[A-Za-z0-9_-]`.
    #[error(
        "invalid tool name {0:?}: use 1 to {MAX_TOOL_NAME_LEN} characters from A-Z, a-z, 0-9, _ and -"
    )]
    InvalidName(String),
    /// The input schema is not a JSON object with `"type": "object"` at the top.
    #[error(
        "tool {0}: the input schema must be a JSON object with \"type\": \"object\" at the top"
    )]
    SchemaNotObject(String),
    /// The input schema is not valid JSON Schema.
    #[error("tool {name}: the input schema is not valid JSON Schema: {reason}")]
    InvalidSchema {
        /// The tool's name.
        name: String,
        /// What the schema compiler said.
        reason: String,
    },
}

/// Claude Code's per-tool `_meta` keys, read from each `tools/list` entry. Verified in
/// `@anthropic-ai/claude-code-linux-x64@2.1.332` (`package/claude`, the bundled JS): the key
/// table `var EQ={searchHint:"anthropic/searchHint",alwaysLoad:"anthropic/alwaysLoad",
/// maxResultSizeChars:"anthropic/maxResultSizeChars",…}` (byte 333987286); an MCP tool takes
/// `searchHint` when it is a string, `alwaysLoad` when it is `=== true` (bytes 385062213,
/// 385064777), and `maxResultSizeChars` when it is a finite number > 0, capped at 500,000
/// (`Math.min(Ee,Rpe)`, `Rpe=500000`; bytes 385060820, 385065494, 330696206). To check again:
/// `npm pack @anthropic-ai/claude-code-linux-x64@<version>`, untar, and search `package/claude`
/// for `anthropic/maxResultSizeChars` (the package `@anthropic-ai/claude-code` itself ships
/// only a launcher since the native builds).
pub(crate) const META_SEARCH_HINT: &str = "anthropic/searchHint";
/// See [`META_SEARCH_HINT`]: `true` keeps the tool in the prompt, never deferred behind
/// Claude Code's tool search.
pub(crate) const META_ALWAYS_LOAD: &str = "anthropic/alwaysLoad";
/// See [`META_SEARCH_HINT`]: the most characters one result of the tool can have. Claude Code
/// then keeps results up to `min(value, 500000)` characters in the conversation instead of
/// cutting them at its `MAX_MCP_OUTPUT_TOKENS` cap (25,000 tokens by default), so the value
/// declared is at most [`CLAUDE_CODE_RESULT_CAP`].
pub(crate) const META_MAX_RESULT_SIZE_CHARS: &str = "anthropic/maxResultSizeChars";

/// The most characters of one result Claude Code keeps for a tool that declares
/// [`META_MAX_RESULT_SIZE_CHARS`]: `maxResultSizeChars:Ct?Math.min(Ee,Rpe):…` with
/// `Rpe=500000` (see [`META_SEARCH_HINT`] for where; the same in 2.1.197). A longer result is
/// saved to a file and the model sees a 2,000-character preview. The one value both for what
/// a tool declares (no more than Claude Code honours) and for the result cap its pages fit
/// under for a `claude-code` client (the server's client table).
pub const CLAUDE_CODE_RESULT_CAP: u64 = 500_000;

/// What a tool's `tools/list` entry tells Claude Code beyond the definition (see
/// [`META_SEARCH_HINT`]). Whether a tool is always loaded is the operator's choice, set by the
/// registry ([`META_ALWAYS_LOAD`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ToolHints {
    /// A short phrase tool search matches on.
    pub(crate) search_hint: Option<String>,
    /// The most characters one result can have.
    pub(crate) max_result_chars: Option<u64>,
}

impl ToolHints {
    /// The hints as a `_meta` object, or `None` when there are none.
    fn meta(&self) -> Option<rmcp::model::MetaObject> {
        let mut meta = JsonObject::new();
        if let Some(hint) = &self.search_hint {
            meta.insert(META_SEARCH_HINT.into(), Value::String(hint.clone()));
        }
        if let Some(chars) = self.max_result_chars {
            // Claude Code keeps no more than its cap, whatever a tool declares.
            let declared = chars.min(CLAUDE_CODE_RESULT_CAP);
            meta.insert(META_MAX_RESULT_SIZE_CHARS.into(), Value::from(declared));
        }
        (!meta.is_empty()).then(|| rmcp::model::MetaObject(meta))
    }
}

/// A target format for exported tool definitions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "host", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum ToolFormat {
    /// MCP `tools/list` entries (with title and annotations).
    Mcp,
    /// OpenAI / OpenRouter function tools: `{"type":"function","function":{…}}`.
    Openai,
    /// Anthropic tools: `{name, description, input_schema}`.
    Anthropic,
    /// Ollama tools (the OpenAI function shape, which Ollama's `/api/chat` takes).
    Ollama,
}

/// The provider-neutral tool definition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolDefinition {
    /// `[A-Za-z0-9_-]{1,64}`.
    pub name: String,
    /// What the tool does.
    pub description: String,
    /// JSON Schema of the arguments, `type: "object"` at the top.
    pub input_schema: Arc<JsonObject>,
    /// JSON Schema of the structured result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Arc<JsonObject>>,
}

/// Whether `name` is a valid tool name in every target format.
pub(crate) fn is_valid_tool_name(name: &str) -> bool {
    (1..=MAX_TOOL_NAME_LEN).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

impl ToolDefinition {
    /// Build and validate a definition.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: impl Into<Arc<JsonObject>>,
        output_schema: Option<Arc<JsonObject>>,
    ) -> Result<Self, DefinitionError> {
        let def = Self {
            name: name.into(),
            description: description.into(),
            input_schema: input_schema.into(),
            output_schema,
        };
        def.validate()?;
        Ok(def)
    }

    /// Check the name pattern and that the input schema is an object schema.
    fn validate(&self) -> Result<(), DefinitionError> {
        if !is_valid_tool_name(&self.name) {
            return Err(DefinitionError::InvalidName(self.name.clone()));
        }
        if self.input_schema.get("type") != Some(&Value::String("object".into())) {
            return Err(DefinitionError::SchemaNotObject(self.name.clone()));
        }
        Ok(())
    }

    /// Compile the input schema into the validator every call is checked with (the registry
    /// does this once per tool, at registration).
    pub(crate) fn validator(&self) -> Result<jsonschema::Validator, DefinitionError> {
        crate::validator::compile(&Value::Object(JsonObject::clone(&self.input_schema))).map_err(
            |e| DefinitionError::InvalidSchema {
                name: self.name.clone(),
                reason: e.to_string(),
            },
        )
    }

    /// The MCP `Tool` (name, description, schemas). Title and annotations are not part of the
    /// neutral definition; see [`ToolDefinition::to_mcp_with`].
    pub(crate) fn to_mcp(&self) -> rmcp::model::Tool {
        let mut tool = rmcp::model::Tool::new(
            self.name.clone(),
            self.description.clone(),
            Arc::clone(&self.input_schema),
        );
        if let Some(out) = &self.output_schema {
            tool = tool.with_raw_output_schema(Arc::clone(out));
        }
        tool
    }

    /// The MCP `Tool` with a title, annotations and the `_meta` hints.
    pub(crate) fn to_mcp_with(
        &self,
        title: Option<&str>,
        annotations: Annotations,
        hints: &ToolHints,
    ) -> rmcp::model::Tool {
        let mut tool = self.to_mcp().with_annotations(
            rmcp::model::ToolAnnotations::new()
                .read_only(annotations.read_only)
                .destructive(annotations.destructive)
                .idempotent(annotations.idempotent)
                .open_world(annotations.open_world),
        );
        if let Some(title) = title {
            tool = tool.with_title(title);
        }
        if let Some(meta) = hints.meta() {
            tool = tool.with_meta(meta);
        }
        tool
    }

    /// OpenAI / OpenRouter function-tool format.
    pub(crate) fn to_openai(&self) -> Value {
        json!({
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.input_schema,
            }
        })
    }

    /// Anthropic tool format.
    pub(crate) fn to_anthropic(&self) -> Value {
        json!({
            "name": self.name,
            "description": self.description,
            "input_schema": self.input_schema,
        })
    }

    /// Ollama tool format: Ollama's `/api/chat` takes the OpenAI function shape.
    pub(crate) fn to_ollama(&self) -> Value {
        self.to_openai()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema() -> JsonObject {
        json!({"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]})
            .as_object()
            .cloned()
            .unwrap()
    }

    #[test]
    fn names_follow_the_portable_pattern() {
        assert!(is_valid_tool_name("read_file"));
        assert!(is_valid_tool_name("A1_b2"));
        assert!(is_valid_tool_name(&"x".repeat(64)));
        assert!(!is_valid_tool_name(""));
        assert!(!is_valid_tool_name(&"x".repeat(65)));
        // MCP, OpenAI, Anthropic and Ollama all take `-` (MCP servers name tools `get-sum`).
        assert!(is_valid_tool_name("read-file"));
        assert!(!is_valid_tool_name("read.file"));
        assert!(!is_valid_tool_name("réad"));
        assert!(!is_valid_tool_name("read file"));
    }

    #[test]
    fn new_rejects_bad_names_and_non_object_schemas() {
        let err = ToolDefinition::new("bad name", "d", schema(), None).unwrap_err();
        assert_eq!(err, DefinitionError::InvalidName("bad name".into()));
        for bad in [json!({}), json!({"type": "array"})] {
            let err =
                ToolDefinition::new("s", "d", bad.as_object().cloned().unwrap(), None).unwrap_err();
            assert_eq!(err, DefinitionError::SchemaNotObject("s".into()), "{bad}");
        }
    }

    #[test]
    fn an_invalid_schema_does_not_compile() {
        let bad = json!({"type": "object", "properties": {"a": {"type": "no-such-type"}}});
        let def = ToolDefinition::new("s", "d", bad.as_object().cloned().unwrap(), None).unwrap();
        assert!(
            matches!(def.validator(), Err(DefinitionError::InvalidSchema { .. })),
            "the schema compiler must refuse an unknown type"
        );
    }

    #[test]
    fn conversions_have_each_providers_shape() {
        let def = ToolDefinition::new("search", "Search the web", schema(), None).unwrap();
        let params =
            json!({"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]});
        assert_eq!(
            def.to_openai(),
            json!({"type": "function", "function": {"name": "search", "description": "Search the web", "parameters": params}})
        );
        assert_eq!(def.to_ollama(), def.to_openai());
        assert_eq!(
            def.to_anthropic(),
            json!({"name": "search", "description": "Search the web", "input_schema": params})
        );
        let mcp = serde_json::to_value(def.to_mcp_with(
            Some("Search"),
            Annotations {
                read_only: true,
                destructive: false,
                idempotent: true,
                open_world: true,
            },
            &ToolHints::default(),
        ))
        .unwrap();
        assert_eq!(
            mcp,
            json!({"name": "search", "title": "Search", "description": "Search the web", "inputSchema": params,
                   "annotations": {"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": true}})
        );
    }

    #[test]
    fn hints_become_claude_codes_meta_keys() {
        let def = ToolDefinition::new("search", "Search the web", schema(), None).unwrap();
        let hints = ToolHints {
            search_hint: Some("search the web".into()),
            max_result_chars: Some(4096),
        };
        let mcp =
            serde_json::to_value(def.to_mcp_with(None, Annotations::default(), &hints)).unwrap();
        assert_eq!(
            mcp["_meta"],
            json!({"anthropic/searchHint": "search the web", "anthropic/maxResultSizeChars": 4096})
        );
    }

    #[test]
    fn the_declared_largest_result_is_no_more_than_claude_code_keeps() {
        let def = ToolDefinition::new("read", "Read a file", schema(), None).unwrap();
        let hints = ToolHints {
            search_hint: None,
            max_result_chars: Some(6_356_992),
        };
        let mcp =
            serde_json::to_value(def.to_mcp_with(None, Annotations::default(), &hints)).unwrap();
        assert_eq!(
            mcp["_meta"],
            json!({"anthropic/maxResultSizeChars": CLAUDE_CODE_RESULT_CAP})
        );
    }
}

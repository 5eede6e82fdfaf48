//! [`ToolDefinition`]: the provider-neutral description of a tool (`{name, description,
//! input_schema, output_schema?}`, Anthropic-style), its validation, and its conversions to the
//! formats of MCP, OpenAI/OpenRouter, Anthropic and Ollama.
//!
//! Also home to [`schema_for`], which derives a tool's input schema from a
//! `#[derive(JsonSchema)]` params struct, and [`render_instructions`], which writes the prompt
//! text for a tool in the recommended shape.

use std::sync::Arc;

use schemars::{JsonSchema, generate::SchemaSettings};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::tool::{Annotations, JsonObject};

/// The longest tool name every target format accepts (OpenAI caps function names at 64).
pub const MAX_TOOL_NAME_LEN: usize = 64;

/// Why a definition is not acceptable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DefinitionError {
    /// The name is empty, too long, or has characters outside `[A-Za-z0-9_]`.
    #[error(
        "invalid tool name {0:?}: use 1 to {MAX_TOOL_NAME_LEN} characters from A-Z, a-z, 0-9 and _"
    )]
    InvalidName(String),
    /// The input schema is not a JSON object with `"type": "object"` at the top.
    #[error(
        "tool {0}: the input schema must be a JSON object with \"type\": \"object\" at the top"
    )]
    SchemaNotObject(String),
    /// The output schema is not a JSON object.
    #[error("tool {0}: the output schema must be a JSON object")]
    OutputSchemaNotObject(String),
    /// The input schema is not valid JSON Schema.
    #[error("tool {name}: the input schema is not valid JSON Schema: {reason}")]
    InvalidSchema {
        /// The tool.
        name: String,
        /// What the schema compiler said.
        reason: String,
    },
    /// The JSON could not be read as a definition (unknown field, wrong type, bad JSON).
    #[error("invalid tool definition: {0}")]
    Malformed(String),
}

/// A target format for exported tool definitions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize)]
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
    /// `[A-Za-z0-9_]{1,64}`.
    pub name: String,
    /// What the tool does.
    pub description: String,
    /// JSON Schema of the arguments, `type: "object"` at the top.
    pub input_schema: JsonObject,
    /// JSON Schema of the structured result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<JsonObject>,
}

/// Whether `name` is a valid tool name in every target format.
pub fn is_valid_tool_name(name: &str) -> bool {
    (1..=MAX_TOOL_NAME_LEN).contains(&name.len())
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

impl ToolDefinition {
    /// Build and validate a definition.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: JsonObject,
        output_schema: Option<JsonObject>,
    ) -> Result<Self, DefinitionError> {
        let def = Self {
            name: name.into(),
            description: description.into(),
            input_schema,
            output_schema,
        };
        def.validate()?;
        Ok(def)
    }

    /// Read a definition from JSON, rejecting unknown fields, and validate it.
    pub fn from_json(text: &str) -> Result<Self, DefinitionError> {
        let value: Value =
            serde_json::from_str(text).map_err(|e| DefinitionError::Malformed(e.to_string()))?;
        Self::from_value(value)
    }

    /// Read a definition from a JSON value, rejecting unknown fields, and validate it.
    pub fn from_value(value: Value) -> Result<Self, DefinitionError> {
        // Check the schema shapes first so the error names the real problem rather than serde's
        // "invalid type: expected a map".
        let name = value
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("<unnamed>")
            .to_string();
        if let Some(schema) = value.get("input_schema")
            && !schema.is_object()
        {
            return Err(DefinitionError::SchemaNotObject(name));
        }
        if let Some(schema) = value.get("output_schema")
            && !schema.is_object()
            && !schema.is_null()
        {
            return Err(DefinitionError::OutputSchemaNotObject(name));
        }
        let def: Self =
            serde_json::from_value(value).map_err(|e| DefinitionError::Malformed(e.to_string()))?;
        def.validate()?;
        Ok(def)
    }

    /// Check the name pattern and that the input schema is an object schema that compiles.
    pub fn validate(&self) -> Result<(), DefinitionError> {
        if !is_valid_tool_name(&self.name) {
            return Err(DefinitionError::InvalidName(self.name.clone()));
        }
        if self.input_schema.get("type") != Some(&Value::String("object".into())) {
            return Err(DefinitionError::SchemaNotObject(self.name.clone()));
        }
        jsonschema::validator_for(&Value::Object(self.input_schema.clone())).map_err(|e| {
            DefinitionError::InvalidSchema {
                name: self.name.clone(),
                reason: e.to_string(),
            }
        })?;
        Ok(())
    }

    /// The MCP `Tool` (name, description, schemas). Title and annotations are not part of the
    /// neutral definition; see [`ToolDefinition::to_mcp_with`].
    pub fn to_mcp(&self) -> rmcp::model::Tool {
        let mut tool = rmcp::model::Tool::new(
            self.name.clone(),
            self.description.clone(),
            Arc::new(self.input_schema.clone()),
        );
        if let Some(out) = &self.output_schema {
            tool = tool.with_raw_output_schema(Arc::new(out.clone()));
        }
        tool
    }

    /// The MCP `Tool` with a title and annotations.
    pub fn to_mcp_with(&self, title: Option<&str>, annotations: Annotations) -> rmcp::model::Tool {
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
        tool
    }

    /// OpenAI / OpenRouter function-tool format.
    pub fn to_openai(&self) -> Value {
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
    pub fn to_anthropic(&self) -> Value {
        json!({
            "name": self.name,
            "description": self.description,
            "input_schema": self.input_schema,
        })
    }

    /// Ollama tool format: Ollama's `/api/chat` takes the OpenAI function shape.
    pub fn to_ollama(&self) -> Value {
        self.to_openai()
    }
}

/// Derive a tool's JSON Schema from a `#[derive(JsonSchema)]` type: draft 2020-12 with
/// sub-schemas inlined (OpenAI and Ollama do not resolve `$ref`), without the `$schema` and
/// root `title` keys that some providers reject.
pub fn schema_for<T: JsonSchema>() -> JsonObject {
    let settings = SchemaSettings::draft2020_12().with(|s| {
        s.inline_subschemas = true;
        s.meta_schema = None;
    });
    let schema = settings.into_generator().into_root_schema_for::<T>();
    let mut object = match schema.to_value() {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    };
    // The root title and description come from the Rust type's name and doc comment, which
    // are for developers; the tool's own description is what a model reads.
    object.remove("title");
    object.remove("description");
    object.remove("$schema");
    if !object.contains_key("type") {
        object.insert("type".into(), Value::String("object".into()));
    }
    for value in object.values_mut() {
        unwrap_descriptions(value);
    }
    object
}

/// Doc comments are wrapped at ~100 columns; a model should see each description as one
/// paragraph. Single newlines become spaces; blank lines (paragraph breaks) stay.
fn unwrap_descriptions(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (key, inner) in map.iter_mut() {
                match inner {
                    Value::String(text) if key == "description" => {
                        *text = text
                            .split("\n\n")
                            .map(|para| {
                                para.split('\n')
                                    .map(str::trim)
                                    .collect::<Vec<_>>()
                                    .join(" ")
                            })
                            .collect::<Vec<_>>()
                            .join("\n\n");
                    }
                    _ => unwrap_descriptions(inner),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(unwrap_descriptions),
        _ => {}
    }
}

/// The names of a schema's required properties.
pub fn required_fields(schema: &JsonObject) -> Vec<&str> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// A schema's type as words for prose ("string", "integer", "array of string" …), ignoring
/// `null` (which only marks the field optional).
pub fn type_name(schema: &Value) -> String {
    let base = match schema.get("type") {
        Some(Value::String(t)) => t.clone(),
        Some(Value::Array(types)) => types
            .iter()
            .filter_map(Value::as_str)
            .filter(|t| *t != "null")
            .collect::<Vec<_>>()
            .join(" or "),
        _ if schema.get("enum").is_some() => "string".into(),
        _ => "any".into(),
    };
    if base == "array"
        && let Some(items) = schema.get("items")
    {
        return format!("array of {}", type_name(items));
    }
    base
}

/// One line per property: `- name (type, required|optional, default …): description`.
fn describe_properties(schema: &JsonObject, with_required: bool) -> Vec<String> {
    let required = required_fields(schema);
    let Some(Value::Object(props)) = schema.get("properties") else {
        return Vec::new();
    };
    props
        .iter()
        .map(|(name, prop)| {
            let mut facts = vec![type_name(prop)];
            if with_required {
                facts.push(if required.contains(&name.as_str()) {
                    "required".into()
                } else {
                    "optional".into()
                });
            }
            if let Some(default) = prop.get("default").filter(|d| !d.is_null()) {
                facts.push(format!("default {default}"));
            }
            if let Some(values) = prop.get("enum").and_then(Value::as_array) {
                let values: Vec<String> = values
                    .iter()
                    .filter(|v| !v.is_null())
                    .map(Value::to_string)
                    .collect();
                facts.push(format!("one of {}", values.join(", ")));
            }
            match (prop.get("minimum"), prop.get("maximum")) {
                (Some(min), Some(max)) => facts.push(format!("{min}..={max}")),
                (Some(min), None) if min != &json!(0) => facts.push(format!(">= {min}")),
                (None, Some(max)) => facts.push(format!("<= {max}")),
                _ => {}
            }
            let description = prop
                .get("description")
                .and_then(Value::as_str)
                .map(|d| format!(": {d}"))
                .unwrap_or_default();
            format!("- {name} ({}){description}", facts.join(", "))
        })
        .collect()
}

/// A placeholder argument value for an example call, from the schema's own example or default.
fn example_value(prop: &Value) -> Value {
    if let Some(first) = prop
        .get("examples")
        .and_then(Value::as_array)
        .and_then(|e| e.first())
    {
        return first.clone();
    }
    if let Some(default) = prop.get("default").filter(|d| !d.is_null()) {
        return default.clone();
    }
    match type_name(prop).as_str() {
        "integer" | "number" => json!(1),
        "boolean" => json!(true),
        t if t.starts_with("array") => json!([]),
        "object" => json!({}),
        _ => json!("..."),
    }
}

/// Write a tool's prompt instructions in the recommended shape: Tool, Description, Purpose,
/// Parameters (type, required, default), Expected Output, Example. `purpose` defaults to the
/// first sentence of the description, `example` to a call with every required parameter.
pub fn render_instructions(
    name: &str,
    description: &str,
    purpose: Option<&str>,
    input_schema: &JsonObject,
    output_schema: Option<&JsonObject>,
    example: Option<&Value>,
) -> String {
    let purpose = purpose.map(str::to_string).unwrap_or_else(|| {
        let first = description.split(". ").next().unwrap_or(description);
        first.trim_end_matches('.').to_string() + "."
    });
    let mut params = describe_properties(input_schema, true);
    if params.is_empty() {
        params.push("(none)".into());
    }
    let expected = match output_schema {
        Some(schema) => {
            let fields = describe_properties(schema, false);
            format!(
                "A structured JSON result with these fields, plus a readable text rendering:\n{}",
                fields.join("\n")
            )
        }
        None => "Readable text.".into(),
    };
    let example = example.cloned().unwrap_or_else(|| {
        let required = required_fields(input_schema);
        let mut args = JsonObject::new();
        if let Some(Value::Object(props)) = input_schema.get("properties") {
            for (key, prop) in props {
                if required.contains(&key.as_str()) {
                    args.insert(key.clone(), example_value(prop));
                }
            }
        }
        Value::Object(args)
    });
    let example = json!({ "name": name, "arguments": example });
    format!(
        "Tool: {name}\nDescription: {description}\nPurpose: {purpose}\nParameters:\n{}\nExpected Output: {expected}\nExample: {example}",
        params.join("\n")
    )
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
        assert!(!is_valid_tool_name("read-file"));
        assert!(!is_valid_tool_name("read.file"));
        assert!(!is_valid_tool_name("réad"));
        assert!(!is_valid_tool_name("read file"));
    }

    #[test]
    fn from_json_accepts_a_valid_definition() {
        let def = ToolDefinition::from_json(
            r#"{"name":"search","description":"Search","input_schema":{"type":"object","properties":{"q":{"type":"string"}}}}"#,
        )
        .unwrap();
        assert_eq!(def.name, "search");
        assert_eq!(def.output_schema, None);
    }

    #[test]
    fn from_json_rejects_unknown_fields() {
        let err = ToolDefinition::from_json(
            r#"{"name":"s","description":"d","input_schema":{"type":"object"},"parameters":{}}"#,
        )
        .unwrap_err();
        assert!(
            matches!(&err, DefinitionError::Malformed(m) if m.contains("unknown field `parameters`")),
            "{err}"
        );
    }

    #[test]
    fn from_json_rejects_a_non_object_schema() {
        for schema in [r#"[]"#, r#""object""#, r#"{"type":"array"}"#, r#"{}"#] {
            let text = format!(r#"{{"name":"s","description":"d","input_schema":{schema}}}"#);
            let err = ToolDefinition::from_json(&text).unwrap_err();
            assert_eq!(
                err,
                DefinitionError::SchemaNotObject("s".into()),
                "{schema}"
            );
        }
    }

    #[test]
    fn from_json_rejects_bad_names_and_invalid_schemas() {
        let err = ToolDefinition::from_json(
            r#"{"name":"bad name","description":"d","input_schema":{"type":"object"}}"#,
        )
        .unwrap_err();
        assert_eq!(err, DefinitionError::InvalidName("bad name".into()));
        let err = ToolDefinition::from_json(
            r#"{"name":"s","description":"d","input_schema":{"type":"object","properties":{"a":{"type":"no-such-type"}}}}"#,
        )
        .unwrap_err();
        assert!(
            matches!(err, DefinitionError::InvalidSchema { .. }),
            "{err}"
        );
        let err = ToolDefinition::from_json("{not json").unwrap_err();
        assert!(matches!(err, DefinitionError::Malformed(_)));
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
        ))
        .unwrap();
        assert_eq!(
            mcp,
            json!({"name": "search", "title": "Search", "description": "Search the web", "inputSchema": params,
                   "annotations": {"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": true}})
        );
    }

    #[derive(JsonSchema, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Params {
        /// What to look
        /// for.
        query: String,
        /// How many.
        #[serde(default = "five")]
        count: u8,
        mode: Option<Mode>,
    }
    #[derive(JsonSchema, Deserialize)]
    #[serde(rename_all = "lowercase")]
    #[allow(dead_code)]
    enum Mode {
        Fast,
        Full,
    }
    fn five() -> u8 {
        5
    }

    #[test]
    fn schema_for_derives_an_inline_object_schema() {
        let schema = schema_for::<Params>();
        assert_eq!(schema.get("type"), Some(&json!("object")));
        assert!(!schema.contains_key("$schema") && !schema.contains_key("title"));
        assert!(
            !schema.contains_key("$defs"),
            "sub-schemas are inlined: {schema:?}"
        );
        assert_eq!(schema.get("additionalProperties"), Some(&json!(false)));
        assert_eq!(
            schema["properties"]["query"]["description"],
            json!("What to look for.")
        );
        assert_eq!(schema["properties"]["count"]["default"], json!(5));
        assert_eq!(schema.get("required"), Some(&json!(["query"])));
        ToolDefinition::new("p", "d", schema, None).unwrap();
    }

    #[test]
    fn default_instructions_have_the_recommended_shape() {
        let text = render_instructions(
            "p",
            "Finds things. Slowly.",
            None,
            &schema_for::<Params>(),
            None,
            None,
        );
        assert_eq!(
            text,
            "Tool: p\nDescription: Finds things. Slowly.\nPurpose: Finds things.\nParameters:\n\
             - query (string, required): What to look for.\n\
             - count (integer, optional, default 5, 0..=255): How many.\n\
             - mode (string, optional, one of \"fast\", \"full\")\n\
             Expected Output: Readable text.\n\
             Example: {\"name\":\"p\",\"arguments\":{\"query\":\"...\"}}"
        );
    }
}

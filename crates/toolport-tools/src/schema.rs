//! JSON Schemas for tools: derived from Rust types with schemars, then made **portable**, so
//! the same schema works in MCP clients and in every export format (OpenAI/OpenRouter,
//! Anthropic, Ollama, and single-`type` dialects such as Gemini through OpenRouter):
//! - draft 2020-12 with every sub-schema inlined (OpenAI and Ollama do not resolve `$ref`), no
//!   `$schema` and no root `title`/`description` (those come from the Rust type, which is for
//!   developers; the tool's own description is what a model reads);
//! - an optional parameter is its plain type and simply absent from `required`: no
//!   `"type": ["integer", "null"]`, no `anyOf` with a `null` branch, no `"default": null`;
//! - a nullable *output* field is spelled `anyOf: [{…}, {"type": "null"}]`, which every
//!   dialect reads, instead of a `type` array;
//! - only the `format` values JSON Schema defines survive (schemars adds `uint64`, `int32`,
//!   `double` … for Rust integer widths; the range is already stated by `minimum`).
//!
//! The MCP Inspector's `--strict` report on `tools/list` is empty for these schemas; CI checks
//! it.

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value, json};

/// A JSON object: the shape of every schema and every argument set.
pub type JsonObject = Map<String, Value>;

/// The `format` values JSON Schema 2020-12 defines; any other is dropped.
const STANDARD_FORMATS: &[&str] = &[
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// Which side of a call a schema describes: the two differ in how "may be absent/null" is
/// spelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    /// Arguments: optional means absent, never null.
    Input,
    /// Results: a field that may be null says so with `anyOf`.
    Output,
}

/// The portable input schema of a `#[derive(JsonSchema)]` params type (`type: "object"` at
/// the top).
pub(crate) fn input_schema_for<T: JsonSchema>() -> JsonObject {
    derive::<T>(Side::Input)
}

/// The portable output schema of a `#[derive(JsonSchema)]` result type.
pub(crate) fn output_schema_for<T: JsonSchema>() -> JsonObject {
    derive::<T>(Side::Output)
}

fn derive<T: JsonSchema>(side: Side) -> JsonObject {
    let settings = SchemaSettings::draft2020_12().with(|s| {
        s.inline_subschemas = true;
        s.meta_schema = None;
    });
    // A result is what the tool serialises (an `Option` field is always there, maybe null);
    // arguments are what it deserialises (an `Option` field may be absent).
    let settings = match side {
        Side::Input => settings.for_deserialize(),
        Side::Output => settings.for_serialize(),
    };
    let schema = settings.into_generator().into_root_schema_for::<T>();
    let mut value = schema.to_value();
    if let Value::Object(root) = &mut value {
        root.remove("title");
        root.remove("description");
        root.remove("$schema");
        root.entry("type").or_insert_with(|| json!("object"));
    }
    make_portable(&mut value, side);
    match value {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    }
}

/// Apply the module's rules to `schema` and every schema inside it.
fn make_portable(schema: &mut Value, side: Side) {
    let Value::Object(map) = schema else {
        return;
    };
    unwrap_description(map);
    if map
        .get("format")
        .and_then(Value::as_str)
        .is_some_and(|f| !STANDARD_FORMATS.contains(&f))
    {
        map.remove("format");
    }
    if map.get("default") == Some(&Value::Null) {
        map.remove("default");
    }
    lift_null(map, side);
    // One pass over the keys, not a hashed look-up per keyword: this runs on every node of
    // every tool's schema at start-up.
    for (key, child) in map.iter_mut() {
        match (key.as_str(), child) {
            ("properties" | "$defs" | "patternProperties", Value::Object(children)) => children
                .values_mut()
                .for_each(|child| make_portable(child, side)),
            (
                "items" | "additionalProperties" | "not" | "if" | "then" | "else" | "contains",
                child,
            ) => make_portable(child, side),
            ("anyOf" | "oneOf" | "allOf" | "prefixItems", Value::Array(children)) => children
                .iter_mut()
                .for_each(|child| make_portable(child, side)),
            _ => {}
        }
    }
}

/// `{"type": "null"}`, the branch a nullable schema has.
fn is_null_type(schema: &Value) -> bool {
    schema
        .as_object()
        .is_some_and(|m| m.len() == 1 && m.get("type").is_some_and(|t| t == "null"))
}

/// `type: [X, "null"]`, `anyOf: [A, {type: null}]` and `null` in an `enum`: on the input side
/// the `null` goes (optional means absent); on the output side a nullable field becomes
/// `anyOf: [{…}, {"type": "null"}]` with its description kept outside.
fn lift_null(map: &mut Map<String, Value>, side: Side) {
    // `type: [X, "null"]`.
    if let Some(Value::Array(types)) = map.get("type") {
        let rest: Vec<Value> = types.iter().filter(|t| *t != "null").cloned().collect();
        if rest.len() < types.len() {
            let single = match rest.as_slice() {
                [one] => one.clone(),
                _ => Value::Array(rest),
            };
            map.insert("type".into(), single);
            if let Some(Value::Array(values)) = map.get_mut("enum") {
                values.retain(|v| !v.is_null());
            }
            if side == Side::Output {
                let mut inner = Map::new();
                for (key, value) in std::mem::take(map) {
                    if key == "description" {
                        map.insert(key, value);
                    } else {
                        inner.insert(key, value);
                    }
                }
                map.insert("anyOf".into(), json!([inner, {"type": "null"}]));
            }
            return;
        }
    }
    // `anyOf: [A, {type: null}]` (schemars' form for `Option<Enum>` and `Option<Struct>`).
    if side == Side::Input
        && let Some(Value::Array(branches)) = map.get("anyOf")
        && branches.iter().any(is_null_type)
    {
        let rest: Vec<Value> = branches
            .iter()
            .filter(|b| !is_null_type(b))
            .cloned()
            .collect();
        map.remove("anyOf");
        match <[Value; 1]>::try_from(rest) {
            Ok([Value::Object(only)]) => {
                for (key, value) in only {
                    map.entry(key).or_insert(value);
                }
            }
            Ok([other]) => {
                map.insert("anyOf".into(), json!([other]));
            }
            Err(rest) => {
                map.insert("anyOf".into(), Value::Array(rest));
            }
        }
    }
    if side == Side::Input
        && let Some(Value::Array(values)) = map.get_mut("enum")
    {
        values.retain(|v| !v.is_null());
    }
}

/// Doc comments are wrapped at ~100 columns; a model should see each description as one
/// paragraph. Single newlines become spaces; blank lines (paragraph breaks) stay.
fn unwrap_description(map: &mut Map<String, Value>) {
    if let Some(Value::String(text)) = map.get_mut("description")
        && text.contains('\n')
    {
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use schemars::JsonSchema;

    #[derive(JsonSchema)]
    #[allow(dead_code)]
    #[serde(rename_all = "snake_case")]
    enum Mode {
        Fast,
        Slow,
    }

    /// Doc of the type (must not leak into the schema).
    #[derive(JsonSchema)]
    #[allow(dead_code)]
    struct Params {
        /// The path, wrapped
        /// over two lines.
        path: String,
        /// How many.
        count: Option<u64>,
        /// Which mode.
        mode: Option<Mode>,
        /// Small number.
        #[schemars(range(min = 1, max = 9))]
        small: Option<u8>,
    }

    #[test]
    fn optional_parameters_are_plain_types_without_null_or_custom_formats() {
        assert_eq!(
            Value::Object(input_schema_for::<Params>()),
            json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "The path, wrapped over two lines."},
                    "count": {"type": "integer", "minimum": 0, "description": "How many."},
                    "mode": {"type": "string", "enum": ["fast", "slow"], "description": "Which mode."},
                    "small": {"type": "integer", "minimum": 1, "maximum": 9, "description": "Small number."}
                },
                "required": ["path"]
            })
        );
    }

    #[derive(JsonSchema)]
    #[allow(dead_code)]
    struct Out {
        /// Maybe a size.
        size: Option<u64>,
        /// Always here.
        name: String,
    }

    #[test]
    fn nullable_output_fields_use_any_of() {
        assert_eq!(
            Value::Object(output_schema_for::<Out>()),
            json!({
                "type": "object",
                "properties": {
                    "size": {
                        "description": "Maybe a size.",
                        "anyOf": [{"type": "integer", "minimum": 0}, {"type": "null"}]
                    },
                    "name": {"type": "string", "description": "Always here."}
                },
                "required": ["size", "name"]
            })
        );
    }
}

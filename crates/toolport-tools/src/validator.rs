//! Compiling a tool's input schema into the validator its calls are checked with.
//!
//! MCP reads a tool schema without `$schema` as JSON Schema 2020-12, and so does
//! [`jsonschema::validator_for`]. Compiling a schema also checks it against its draft's
//! meta-schema, and the first compile of a process builds that meta-schema's own validator
//! and keeps it: for 2020-12, nine vocabulary documents and about 600 KB that stay allocated
//! (1.2 MB allocated on the way), and a megabyte of code run, all on the first tool call a
//! server answers. Draft 7's meta-schema is one document (about 200 KB).
//!
//! So a schema that says nothing about its draft and uses only keywords that mean the same in
//! draft 7 and in 2020-12 ([`SAME_IN_DRAFT7`]: every built-in tool's schema, which
//! `crate::schema` derives) is compiled as draft 7, with `format` an annotation as 2020-12
//! has it: the same arguments pass and fail. Any other schema (a `$schema`, a `$ref`,
//! `prefixItems`, `unevaluatedProperties`, a keyword this list does not know …) is compiled
//! as 2020-12, as before. BENCHMARKS.md, "Lean again", has the measurements.

use jsonschema::{Draft, ValidationError, Validator};
use serde_json::Value;

/// The keywords a schema may use to be compiled as draft 7: assertions and annotations whose
/// meaning is the same in draft 7 and 2020-12 (`items` only as one schema: an array of them is
/// a tuple in draft 7, an error in 2020-12). The schema-valued ones are checked inside too
/// ([`SUBSCHEMAS`], [`SUBSCHEMA_MAPS`], [`SUBSCHEMA_LISTS`]).
const SAME_IN_DRAFT7: &[&str] = &[
    "type",
    "enum",
    "const",
    "required",
    "properties",
    "additionalProperties",
    "minProperties",
    "maxProperties",
    "items",
    "minItems",
    "maxItems",
    "uniqueItems",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "pattern",
    "anyOf",
    "oneOf",
    "allOf",
    "not",
    "format",
    "title",
    "description",
    "default",
    "examples",
    "readOnly",
    "writeOnly",
];
/// Keywords whose value is one schema.
const SUBSCHEMAS: &[&str] = &["items", "additionalProperties", "not"];
/// Keywords whose value maps names to schemas.
const SUBSCHEMA_MAPS: &[&str] = &["properties"];
/// Keywords whose value is a list of schemas.
const SUBSCHEMA_LISTS: &[&str] = &["anyOf", "oneOf", "allOf"];

/// Compile `schema` into a validator: as draft 7 when that means the same (module docs), else
/// as its own `$schema` says, or 2020-12.
pub(crate) fn compile(schema: &Value) -> Result<Validator, ValidationError<'static>> {
    if means_the_same_in_draft7(schema) {
        jsonschema::options()
            .with_draft(Draft::Draft7)
            .should_validate_formats(false)
            .build(schema)
    } else {
        jsonschema::validator_for(schema)
    }
}

/// Whether every keyword of `schema`, and of every schema inside it, is in [`SAME_IN_DRAFT7`].
pub(crate) fn means_the_same_in_draft7(schema: &Value) -> bool {
    let map = match schema {
        Value::Bool(_) => return true,
        Value::Object(map) => map,
        _ => return false,
    };
    map.iter().all(|(keyword, value)| {
        if !SAME_IN_DRAFT7.contains(&keyword.as_str()) {
            return false;
        }
        if SUBSCHEMAS.contains(&keyword.as_str()) {
            return means_the_same_in_draft7(value);
        }
        if SUBSCHEMA_MAPS.contains(&keyword.as_str()) {
            return value
                .as_object()
                .is_some_and(|children| children.values().all(means_the_same_in_draft7));
        }
        if SUBSCHEMA_LISTS.contains(&keyword.as_str()) {
            return value
                .as_array()
                .is_some_and(|children| children.iter().all(means_the_same_in_draft7));
        }
        true
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_plain_schema_is_read_as_draft7_and_checks_the_same() {
        let schema = json!({
            "type": "object",
            "additionalProperties": false,
            "required": ["path"],
            "properties": {
                "path": {"type": "string", "minLength": 1, "format": "email"},
                "offset": {"type": "integer", "minimum": 1, "default": 1},
                "mode": {"enum": ["a", "b"]},
                "tags": {"type": "array", "items": {"type": "string", "maxLength": 3}},
                "either": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
            },
        });
        assert!(means_the_same_in_draft7(&schema));
        let draft7 = compile(&schema).unwrap();
        let draft2020 = jsonschema::validator_for(&schema).unwrap();
        for (args, valid) in [
            (json!({"path": "a"}), true),
            // `format` is an annotation in both: not an address, still valid.
            (
                json!({"path": "not an address", "offset": 2, "mode": "b"}),
                true,
            ),
            (json!({"path": "", "offset": 1}), false),
            (json!({"path": "a", "offset": 0}), false),
            (json!({"path": "a", "mode": "c"}), false),
            (json!({"path": "a", "tags": ["abcd"]}), false),
            (json!({"path": "a", "either": true}), false),
            (json!({"path": "a", "extra": 1}), false),
            (json!({"offset": 1}), false),
        ] {
            assert_eq!(draft7.is_valid(&args), valid, "{args}");
            assert_eq!(draft2020.is_valid(&args), valid, "{args}");
        }
    }

    #[test]
    fn a_schema_with_a_newer_or_unknown_keyword_is_read_as_2020_12() {
        for schema in [
            json!({"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object"}),
            json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/a"}}, "$defs": {"a": {}}}),
            json!({"type": "array", "prefixItems": [{"type": "string"}]}),
            json!({"type": "array", "items": [{"type": "string"}]}),
            json!({"type": "object", "unevaluatedProperties": false}),
            json!({"type": "object", "properties": {"a": {"x-vendor": 1}}}),
        ] {
            assert!(!means_the_same_in_draft7(&schema), "{schema}");
        }
        // prefixItems is 2020-12's tuple: a draft 7 reading would ignore it.
        let tuple = json!({"type": "array", "prefixItems": [{"type": "string"}]});
        assert!(!compile(&tuple).unwrap().is_valid(&json!([1])));
    }
}

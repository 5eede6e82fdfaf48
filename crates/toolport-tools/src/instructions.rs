//! Schema → prose, once. [`param_docs`] reads a tool's schema into one [`ParamDoc`] per
//! parameter (type in words, required, default, allowed values, range, description); every
//! place that describes parameters to a person or a model renders those:
//! [`render_instructions`] (the prompt text in the recommended shape), the "allowed parameters"
//! line of an argument error ([`allowed_parameters`]), and the tool reference in docs/tools.md.

use serde_json::{Value, json};

use crate::schema::JsonObject;

/// One parameter (or result field) of a schema, in words.
#[derive(Debug, Clone, PartialEq)]
pub struct ParamDoc<'a> {
    /// The property name.
    pub name: &'a str,
    /// Its type in words: "string", "integer", "array of string", "string or integer".
    pub type_name: String,
    /// Whether the schema lists it in `required`.
    pub required: bool,
    /// The schema's `default`, when it states one.
    pub default: Option<&'a Value>,
    /// The allowed values of an `enum`.
    pub(crate) one_of: Vec<&'a Value>,
    /// `min..=max`, `>= min` or `<= max`, when the schema bounds a number.
    pub(crate) range: Option<String>,
    /// The schema's description ("" when there is none).
    pub description: &'a str,
}

/// The names of a schema's required properties.
pub(crate) fn required_fields(schema: &JsonObject) -> Vec<&str> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// The non-null branch of a portable nullable field (`anyOf: [X, {"type": "null"}]`), or the
/// schema itself.
fn non_null(schema: &Value) -> &Value {
    schema
        .get("anyOf")
        .and_then(Value::as_array)
        .and_then(|branches| {
            let mut rest = branches
                .iter()
                .filter(|b| b.get("type") != Some(&json!("null")));
            match (rest.next(), rest.next()) {
                (Some(only), None) => Some(only),
                _ => None,
            }
        })
        .unwrap_or(schema)
}

/// A schema's type in words ("string", "integer", "array of string" …), ignoring `null`.
fn type_name(schema: &Value) -> String {
    let schema = non_null(schema);
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

/// Every property of `schema`, in schema order.
pub fn param_docs(schema: &JsonObject) -> Vec<ParamDoc<'_>> {
    let required = required_fields(schema);
    let Some(Value::Object(props)) = schema.get("properties") else {
        return Vec::new();
    };
    props
        .iter()
        .map(|(name, prop)| {
            let inner = non_null(prop);
            let range = match (inner.get("minimum"), inner.get("maximum")) {
                (Some(min), Some(max)) => Some(format!("{min}..={max}")),
                (Some(min), None) if min != &json!(0) => Some(format!(">= {min}")),
                (None, Some(max)) => Some(format!("<= {max}")),
                _ => None,
            };
            ParamDoc {
                name,
                type_name: type_name(prop),
                required: required.contains(&name.as_str()),
                default: prop.get("default").filter(|d| !d.is_null()),
                one_of: inner
                    .get("enum")
                    .and_then(Value::as_array)
                    .map(|values| values.iter().filter(|v| !v.is_null()).collect())
                    .unwrap_or_default(),
                range,
                description: prop
                    .get("description")
                    .and_then(Value::as_str)
                    .unwrap_or(""),
            }
        })
        .collect()
}

impl ParamDoc<'_> {
    /// `- name (type, required|optional, default …, one of …, range): description`.
    fn line(&self, with_required: bool) -> String {
        let mut facts = vec![self.type_name.clone()];
        if with_required {
            facts.push(
                if self.required {
                    "required"
                } else {
                    "optional"
                }
                .into(),
            );
        }
        if let Some(default) = self.default {
            facts.push(format!("default {default}"));
        }
        if !self.one_of.is_empty() {
            let values: Vec<String> = self.one_of.iter().map(|v| v.to_string()).collect();
            facts.push(format!("one of {}", values.join(", ")));
        }
        facts.extend(self.range.clone());
        let description = if self.description.is_empty() {
            String::new()
        } else {
            format!(": {}", self.description)
        };
        format!("- {} ({}){description}", self.name, facts.join(", "))
    }
}

/// How an argument error names the value it is about: the path from the arguments object to
/// it, keys and array indexes joined with `.` and quoted (`` `items.1` ``), or `arguments` for
/// the object itself. One form for the schema check (registry.rs) and the params parse
/// (typed.rs).
pub(crate) fn argument_field<S: AsRef<str>>(path: impl IntoIterator<Item = S>) -> String {
    let parts: Vec<S> = path.into_iter().collect();
    if parts.is_empty() {
        return "arguments".into();
    }
    let joined: Vec<&str> = parts.iter().map(AsRef::as_ref).collect();
    format!("`{}`", joined.join("."))
}

/// "Allowed parameters: path (string, required), offset (integer)." for an argument error.
pub(crate) fn allowed_parameters(schema: &JsonObject) -> String {
    let docs = param_docs(schema);
    if docs.is_empty() {
        return "This tool takes no parameters.".into();
    }
    let params: Vec<String> = docs
        .iter()
        .map(|d| {
            let required = if d.required { ", required" } else { "" };
            format!("{} ({}{required})", d.name, d.type_name)
        })
        .collect();
    format!("Allowed parameters: {}.", params.join(", "))
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

/// What [`render_instructions`] writes about one tool.
#[derive(Debug, Clone, Copy)]
pub(crate) struct InstructionsFor<'a> {
    pub name: &'a str,
    pub description: &'a str,
    /// Default: the description's first sentence.
    pub(crate) purpose: Option<&'a str>,
    pub input_schema: &'a JsonObject,
    pub output_schema: Option<&'a JsonObject>,
    /// Default: a call with every required parameter.
    pub(crate) example: Option<&'a Value>,
}

/// A tool's prompt instructions in the recommended shape: Tool, Description, Purpose,
/// Parameters (type, required, default), Expected Output, Example.
/// What an output schema promises, a field per line; an output with `oneOf` branches (an enum
/// tagged by a field, such as read_file's text or image) lists each branch's fields under the
/// branch's description.
fn output_fields(schema: &JsonObject) -> String {
    let lines = |schema: &JsonObject| -> String {
        let fields: Vec<String> = param_docs(schema).iter().map(|d| d.line(false)).collect();
        fields.join("\n")
    };
    match schema.get("oneOf") {
        Some(Value::Array(branches)) => {
            let forms: Vec<String> = branches
                .iter()
                .filter_map(Value::as_object)
                .map(|branch| {
                    let title = branch
                        .get("description")
                        .and_then(Value::as_str)
                        .unwrap_or("Or");
                    format!("{title}\n{}", lines(branch))
                })
                .collect();
            format!(
                "A structured JSON result in one of these forms, plus a readable text rendering:\n{}",
                forms.join("\n")
            )
        }
        _ => format!(
            "A structured JSON result with these fields, plus a readable text rendering:\n{}",
            lines(schema)
        ),
    }
}

pub(crate) fn render_instructions(tool: InstructionsFor<'_>) -> String {
    let InstructionsFor {
        name,
        description,
        purpose,
        input_schema,
        output_schema,
        example,
    } = tool;
    let purpose = purpose.map_or_else(
        || {
            let first = description.split(". ").next().unwrap_or(description);
            first.trim_end_matches('.').to_owned() + "."
        },
        str::to_owned,
    );
    let mut params: Vec<String> = param_docs(input_schema)
        .iter()
        .map(|d| d.line(true))
        .collect();
    if params.is_empty() {
        params.push("(none)".into());
    }
    let expected = match output_schema {
        Some(schema) => output_fields(schema),
        None => "Readable text.".into(),
    };
    let example = example.cloned().unwrap_or_else(|| {
        let args: JsonObject = param_docs(input_schema)
            .iter()
            .filter(|d| d.required)
            .filter_map(|d| {
                let prop = input_schema.get("properties")?.get(d.name)?;
                Some((d.name.to_owned(), example_value(prop)))
            })
            .collect();
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
    use crate::schema::input_schema_for;
    use schemars::JsonSchema;
    use serde::Deserialize;

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
    fn default_instructions_have_the_recommended_shape() {
        let schema = input_schema_for::<Params>();
        let text = render_instructions(InstructionsFor {
            name: "p",
            description: "Finds things. Slowly.",
            purpose: None,
            input_schema: &schema,
            output_schema: None,
            example: None,
        });
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

    /// An output that is a tagged enum (read_file: text or image) has its fields in `oneOf`
    /// branches: each is listed under its description, not none at all.
    #[test]
    fn an_output_with_branches_lists_each_branchs_fields() {
        let Value::Object(output) = json!({
            "type": "object",
            "oneOf": [
                {"type": "object", "description": "A text file.",
                 "properties": {"kind": {"type": "string", "const": "text"},
                                "content": {"type": "string", "description": "The text."}}},
                {"type": "object", "description": "An image file.",
                 "properties": {"kind": {"type": "string", "const": "image"},
                                "width": {"type": "integer", "description": "Pixels."}}}
            ]
        }) else {
            unreachable!()
        };
        assert_eq!(
            output_fields(&output),
            "A structured JSON result in one of these forms, plus a readable text rendering:\n\
             A text file.\n\
             - kind (string)\n\
             - content (string): The text.\n\
             An image file.\n\
             - kind (string)\n\
             - width (integer): Pixels."
        );
    }

    #[test]
    fn allowed_parameters_lists_types_and_required() {
        assert_eq!(
            allowed_parameters(&input_schema_for::<Params>()),
            "Allowed parameters: query (string, required), count (integer), mode (string)."
        );
        assert_eq!(
            allowed_parameters(&JsonObject::new()),
            "This tool takes no parameters."
        );
    }
}

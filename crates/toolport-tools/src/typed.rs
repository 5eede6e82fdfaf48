//! Typed tools: how every built-in tool is written. A [`TypedTool`] is a params type and an
//! output type (serde + schemars: the types are the schemas), one async [`TypedTool::run`],
//! a text rendering and a [`ToolSpec`] of metadata. [`typed`] turns it into the dynamic
//! [`AiTool`] the registry holds: the portable schemas are derived once (the instructions on
//! first use),
//! validated arguments are parsed into the params type, and the output is serialised and
//! rendered.
//!
//! The dynamic [`AiTool`] trait stays for tools built from data at run time (plugins).

use std::sync::Arc;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::instructions::{InstructionsFor, argument_field, render_instructions};
use crate::schema::{JsonObject, input_schema_for, output_schema_for};
use crate::tool::{AiTool, Annotations, Image, Payload, ToolContext, ToolError, ToolOutput};
use crate::workspace::Workspace;

/// What a typed tool says about itself besides its types. Built when the tool is built, so
/// a description can state the real limits rather than the defaults. Start from
/// [`ToolSpec::new`] and set the fields you need.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ToolSpec {
    /// `[A-Za-z0-9_-]{1,64}`.
    pub name: &'static str,
    /// A short human-readable title.
    pub title: &'static str,
    /// What the tool does, stating its limits and defaults plainly.
    pub description: String,
    /// When to use it (the instructions' "Purpose").
    pub purpose: &'static str,
    /// The arguments of a typical call (the instructions' "Example").
    pub example: Value,
    /// A category for filtering, e.g. `"filesystem"`.
    pub category: &'static str,
    /// Tags for filtering.
    pub tags: &'static [&'static str],
    /// MCP behaviour hints (read-only, destructive, idempotent, open-world).
    pub annotations: Annotations,
}

impl ToolSpec {
    /// A spec with this name and description; the title is the name, the purpose is the
    /// description, the example is empty, there is no category and no tag, and the hints
    /// are [`Annotations::default`].
    pub fn new(name: &'static str, description: impl Into<String>) -> Self {
        let description = description.into();
        Self {
            name,
            title: name,
            purpose: "",
            description,
            example: Value::Object(JsonObject::new()),
            category: "",
            tags: &[],
            annotations: Annotations::default(),
        }
    }
}

/// A tool with typed params and a typed output: the types are the schemas (serde +
/// schemars), [`typed`] makes it an [`AiTool`] for the registry. Every built-in tool is one.
///
/// ```
/// use schemars::JsonSchema;
/// use serde::{Deserialize, Serialize};
/// use toolport_tools::{ToolContext, ToolError, ToolSpec, TypedTool};
///
/// /// Add two numbers.
/// struct Add;
///
/// #[derive(Deserialize, JsonSchema)]
/// struct AddParams {
///     /// The first number.
///     a: i64,
///     /// The second number.
///     b: i64,
/// }
///
/// #[derive(Serialize, JsonSchema)]
/// struct Sum {
///     /// a + b.
///     sum: i64,
/// }
///
/// #[async_trait::async_trait]
/// impl TypedTool for Add {
///     type Params = AddParams;
///     type Output = Sum;
///     fn spec(&self) -> ToolSpec {
///         ToolSpec::new("add", "Add two integers; the sum must fit in 64 bits.")
///     }
///     async fn run(&self, p: AddParams, _ctx: &ToolContext) -> Result<Sum, ToolError> {
///         p.a.checked_add(p.b)
///             .map(|sum| Sum { sum })
///             .ok_or_else(|| ToolError::InvalidArguments("the sum does not fit in 64 bits".into()))
///     }
///     fn render(&self, output: &Sum) -> String {
///         output.sum.to_string()
///     }
/// }
///
/// let tool = toolport_tools::typed(Add);
/// assert_eq!(tool.name(), "add");
/// ```
#[async_trait]
pub trait TypedTool: Send + Sync + 'static {
    /// The arguments; its schema is the tool's input schema.
    type Params: DeserializeOwned + JsonSchema + Send;
    /// The structured result; its schema is the tool's output schema.
    type Output: Serialize + JsonSchema + Send;

    /// Name, title, description and the rest.
    fn spec(&self) -> ToolSpec;

    /// Adjust the derived input schema, for facts only known at run time (a configured
    /// maximum). Default: none.
    fn adjust_input_schema(&self, _schema: &mut JsonObject) {}

    /// Whether [`TypedTool::confirmation`] can ask for anything. Tools that never ask leave it
    /// `false`, and their calls skip parsing the arguments a second time.
    const ASKS_CONFIRMATION: bool = false;

    /// A description of this call if it needs the user's confirmation first (only called when
    /// [`TypedTool::ASKS_CONFIRMATION`] is set). `workspace` is the call's (a write tool reads
    /// the file to show the change in the question).
    fn confirmation(&self, _params: &Self::Params, _workspace: &Workspace) -> Option<String> {
        None
    }

    /// Run the call.
    async fn run(&self, params: Self::Params, ctx: &ToolContext)
    -> Result<Self::Output, ToolError>;

    /// The result as text written for a model to read (not a JSON dump).
    fn render(&self, output: &Self::Output) -> String;

    /// The output's top-level fields that carry its payload (a file's text, the matches, a
    /// listing, a command's output): sent once per result, in the text block or in
    /// `structuredContent`, as the call's [`Payload`] says. Empty (the default): the result
    /// is small and both carry all of it.
    const PAYLOAD: &'static [&'static str] = &[];

    /// [`TypedTool::render`] when the text block alone carries the payload: the tool may move
    /// its payload out of `output` rather than copy it (the structured result leaves it out
    /// anyway). Default: `render`.
    fn render_payload(&self, output: &mut Self::Output) -> String {
        self.render(output)
    }

    /// The text block when `structuredContent` carries the payload: what [`TypedTool::render`]
    /// says, without the payload (where the text stopped, how to go on). Only called for a
    /// tool with a [`TypedTool::PAYLOAD`].
    fn summary(&self, output: &Self::Output) -> String {
        self.render(output)
    }

    /// The images the result shows ([`ToolOutput::images`]), moved out of `output` (a field
    /// the output keeps out of its serialised form and schema). Called after the text is
    /// rendered, whatever the [`Payload`]: an image is not payload, every client gets it.
    /// Default: none.
    fn images(&self, _output: &mut Self::Output) -> Vec<Image> {
        Vec::new()
    }
}

/// What the published output schema says of a payload field, after its own description.
const PAYLOAD_NOTE: &str = "Left out here, and carried by the text content block instead, for clients whose model reads only the text ([tools] payload).";

/// Mark the payload fields of an output schema as optional and say where they are sent: in
/// the schema's own properties and in each of its `oneOf` branches (an output that is an
/// enum, tagged by a field, has one object schema per variant).
fn describe_payload(schema: &mut JsonObject, fields: &[&str]) {
    if fields.is_empty() {
        return;
    }
    if let Some(Value::Array(branches)) = schema.get_mut("oneOf") {
        for branch in branches {
            if let Value::Object(branch) = branch {
                describe_payload(branch, fields);
            }
        }
    }
    if let Some(Value::Array(required)) = schema.get_mut("required") {
        required.retain(|name| !fields.iter().any(|field| name == field));
    }
    let Some(Value::Object(properties)) = schema.get_mut("properties") else {
        return;
    };
    for field in fields {
        if let Some(Value::Object(property)) = properties.get_mut(*field) {
            let description = match property.get("description") {
                Some(Value::String(own)) => format!("{own} {PAYLOAD_NOTE}"),
                _ => PAYLOAD_NOTE.to_owned(),
            };
            property.insert("description".into(), Value::String(description));
        }
    }
}

/// A [`TypedTool`] with its schemas derived on first use, once (deriving and rewriting
/// twenty-one tools' schemas was the larger part of a cold start, and `initialize` needs only
/// names and titles), and its instructions on first use (only prompts and `toolport
/// instructions` read them).
struct Typed<T: TypedTool> {
    tool: T,
    spec: ToolSpec,
    /// The most characters one result can have ([`typed_bounded`]).
    max_result_chars: Option<u64>,
    schemas: std::sync::OnceLock<Schemas>,
    instructions: std::sync::OnceLock<String>,
}

/// A typed tool's published schemas, shared with the registry's definition and listing.
struct Schemas {
    input: Arc<JsonObject>,
    output: Arc<JsonObject>,
}

impl<T: TypedTool> Typed<T> {
    fn schemas(&self) -> &Schemas {
        self.schemas.get_or_init(|| {
            let mut input = input_schema_for::<T::Params>();
            self.tool.adjust_input_schema(&mut input);
            let mut output = output_schema_for::<T::Output>();
            describe_payload(&mut output, T::PAYLOAD);
            Schemas {
                input: Arc::new(input),
                output: Arc::new(output),
            }
        })
    }
}

/// The registry's form of a typed tool.
pub fn typed<T: TypedTool>(tool: T) -> Arc<dyn AiTool> {
    typed_with(tool, None)
}

/// The registry's form of a typed tool whose results carry at most `payload_bytes` bytes of
/// payload (its size limit): it declares [`result_chars`](crate::tool::result_chars) of that
/// as its largest result.
pub(crate) fn typed_bounded<T: TypedTool>(tool: T, payload_bytes: u64) -> Arc<dyn AiTool> {
    typed_with(tool, Some(crate::tool::result_chars(payload_bytes)))
}

fn typed_with<T: TypedTool>(tool: T, max_result_chars: Option<u64>) -> Arc<dyn AiTool> {
    let spec = tool.spec();
    Arc::new(Typed {
        tool,
        spec,
        max_result_chars,
        schemas: std::sync::OnceLock::new(),
        instructions: std::sync::OnceLock::new(),
    })
}

/// Validated arguments as the params type. The schema check has already run, so a failure
/// means a value the schema allows but the Rust type does not hold: an integer outside the
/// type's range (the portable schemas state only the lower bound, see src/schema.rs). The
/// error names the argument and the range, in the form of the schema check's errors.
///
/// JSON Schema's `integer` accepts a number with a zero fraction (`5.0`, as Python's `json`
/// writes a float), which serde's integer types refuse: such numbers become integers first,
/// so arguments the schema accepts parse.
fn parse<P: DeserializeOwned>(tool: &str, mut args: JsonObject) -> Result<P, ToolError> {
    args.values_mut().for_each(integral_floats_to_integers);
    serde_path_to_error::deserialize(Value::Object(args)).map_err(|error| {
        use serde_path_to_error::Segment;
        let field = argument_field(error.path().iter().map(|segment| match segment {
            Segment::Seq { index } => index.to_string(),
            Segment::Map { key } => key.clone(),
            Segment::Enum { variant } => variant.clone(),
            Segment::Unknown => "?".to_owned(),
        }));
        ToolError::InvalidArguments(format!(
            "the arguments for {tool} do not fit its parameter types:\n- {field}: {}",
            with_integer_range(&error.into_inner().to_string())
        ))
    })
}

/// serde's message with the Rust integer type it names (`…, expected u64`) replaced by the
/// range the model may use (`…, expected an integer from 0 to 18446744073709551615`).
fn with_integer_range(message: &str) -> String {
    let range = |(min, max): (i128, i128)| format!("an integer from {min} to {max}");
    let bounds = |ty: &str| -> Option<(i128, i128)> {
        Some(match ty {
            "u8" => (0, u8::MAX.into()),
            "u16" => (0, u16::MAX.into()),
            "u32" => (0, u32::MAX.into()),
            "u64" => (0, u64::MAX.into()),
            "usize" => (0, usize::MAX.try_into().ok()?),
            "i8" => (i8::MIN.into(), i8::MAX.into()),
            "i16" => (i16::MIN.into(), i16::MAX.into()),
            "i32" => (i32::MIN.into(), i32::MAX.into()),
            "i64" => (i64::MIN.into(), i64::MAX.into()),
            "isize" => (isize::MIN.try_into().ok()?, isize::MAX.try_into().ok()?),
            _ => return None,
        })
    };
    match message.rsplit_once(", expected ") {
        Some((head, ty)) => match bounds(ty) {
            Some(bounds) => format!("{head}, expected {}", range(bounds)),
            None => message.to_owned(),
        },
        None => message.to_owned(),
    }
}

/// Rewrite every float with a zero fraction that fits an `i64` or `u64` as that integer.
fn integral_floats_to_integers(value: &mut Value) {
    match value {
        Value::Number(number) => {
            // 2^64 and -2^63, exactly representable: the bounds of u64 and i64 as floats.
            const U64_END: f64 = 18_446_744_073_709_551_616.0;
            const I64_MIN: f64 = -9_223_372_036_854_775_808.0;
            let Some(float) = number.as_f64().filter(|_| number.is_f64()) else {
                return;
            };
            if float.fract() != 0.0 {
                return;
            }
            if (0.0..U64_END).contains(&float) {
                *number = serde_json::Number::from(float as u64);
            } else if (I64_MIN..0.0).contains(&float) {
                *number = serde_json::Number::from(float as i64);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(integral_floats_to_integers),
        Value::Object(map) => map.values_mut().for_each(integral_floats_to_integers),
        Value::Null | Value::Bool(_) | Value::String(_) => {}
    }
}

#[async_trait]
impl<T: TypedTool> AiTool for Typed<T> {
    fn name(&self) -> &str {
        self.spec.name
    }
    fn title(&self) -> Option<&str> {
        Some(self.spec.title)
    }
    fn description(&self) -> &str {
        &self.spec.description
    }
    fn input_schema(&self) -> Arc<JsonObject> {
        Arc::clone(&self.schemas().input)
    }
    fn output_schema(&self) -> Option<Arc<JsonObject>> {
        Some(Arc::clone(&self.schemas().output))
    }
    /// `derive` makes every input schema an object schema (`type: "object"` at the top), so
    /// the definition is valid by construction and can wait for its first use.
    fn describe_on_first_use(&self) -> bool {
        true
    }
    fn category(&self) -> Option<&str> {
        Some(self.spec.category).filter(|c| !c.is_empty())
    }
    fn tags(&self) -> Vec<&str> {
        self.spec.tags.to_vec()
    }
    fn annotations(&self) -> Annotations {
        self.spec.annotations
    }
    fn max_result_chars(&self) -> Option<u64> {
        self.max_result_chars
    }
    fn instructions(&self) -> String {
        self.instructions
            .get_or_init(|| {
                render_instructions(InstructionsFor {
                    name: self.spec.name,
                    description: &self.spec.description,
                    purpose: Some(self.spec.purpose).filter(|p| !p.is_empty()),
                    input_schema: &self.schemas().input,
                    output_schema: Some(&self.schemas().output),
                    example: Some(&self.spec.example),
                })
            })
            .clone()
    }
    fn confirmation(&self, args: &JsonObject, workspace: &Workspace) -> Option<String> {
        if !T::ASKS_CONFIRMATION {
            return None;
        }
        // Arguments that do not parse are refused by `execute` with the reason; asking the
        // user about them first would be pointless.
        let params = parse::<T::Params>(self.spec.name, args.clone()).ok()?;
        self.tool.confirmation(&params, workspace)
    }
    #[cfg(feature = "fuzzing")]
    fn parse_arguments(&self, args: &JsonObject) -> Option<Result<(), ToolError>> {
        Some(parse::<T::Params>(self.spec.name, args.clone()).map(drop))
    }
    async fn execute(&self, args: JsonObject, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let params = parse(self.spec.name, args)?;
        let mut output = self.tool.run(params, ctx).await?;
        let payload = if T::PAYLOAD.is_empty() {
            Payload::Both
        } else {
            ctx.payload
        };
        let text = match payload {
            Payload::Structured => self.tool.summary(&output),
            Payload::Text => self.tool.render_payload(&mut output),
            Payload::Both => self.tool.render(&output),
        };
        let images = self.tool.images(&mut output);
        let mut structured = serde_json::to_value(&output).map_err(|e| {
            ToolError::ExecutionFailed(format!(
                "the result could not be serialised ({e}); this is a bug in toolport"
            ))
        })?;
        if let (Payload::Text, Value::Object(fields)) = (payload, &mut structured) {
            for field in T::PAYLOAD {
                fields.remove(*field);
            }
        }
        let mut output = ToolOutput::new(structured, text);
        output.images = images;
        Ok(output)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::json;

    #[derive(Debug, Deserialize, PartialEq)]
    struct Params {
        limit: u64,
        offset: i64,
        ratio: f64,
        items: Vec<u32>,
    }

    /// An output that is a tagged enum has one object schema per variant in `oneOf`: a payload
    /// field is optional and described in each (the text form leaves it out of the structured
    /// value, which must still match the schema).
    #[test]
    fn payload_fields_are_optional_in_every_branch_of_a_tagged_output() {
        let Value::Object(mut schema) = json!({
            "type": "object",
            "oneOf": [
                {"type": "object",
                 "properties": {"kind": {"const": "text"},
                                "content": {"type": "string", "description": "The text."}},
                 "required": ["kind", "content"]},
                {"type": "object", "properties": {"kind": {"const": "image"}}, "required": ["kind"]}
            ]
        }) else {
            unreachable!()
        };
        describe_payload(&mut schema, &["content"]);
        assert_eq!(schema["oneOf"][0]["required"], json!(["kind"]));
        assert_eq!(
            schema["oneOf"][0]["properties"]["content"]["description"],
            json!(format!("The text. {PAYLOAD_NOTE}"))
        );
        assert_eq!(schema["oneOf"][1]["required"], json!(["kind"]));
    }

    /// Found by fuzz/fuzz_targets/tool_arguments.rs: `{"offset": 1.0}` passed read_file's
    /// schema (`integer`) and then failed to parse ("invalid type: floating point `1.0`,
    /// expected u64").
    #[test]
    fn integral_floats_parse_as_the_integers_the_schema_accepts() {
        let Value::Object(args) =
            json!({"limit": 200.0, "offset": -3.0, "ratio": 2.0, "items": [1.0, 2]})
        else {
            unreachable!()
        };
        let params: Params = parse("t", args).unwrap();
        assert_eq!(
            params,
            Params {
                limit: 200,
                offset: -3,
                ratio: 2.0,
                items: vec![1, 2]
            }
        );
        let Value::Object(args) = json!({"limit": 1.5, "offset": 0, "ratio": 0.5, "items": []})
        else {
            unreachable!()
        };
        assert!(
            parse::<Params>("t", args).is_err(),
            "a fraction is still refused"
        );
    }

    /// An integer the schema allows (`integer`, `minimum: 0`) but the Rust type cannot hold:
    /// the error names the tool, the argument (nested too) and the range, not serde's type.
    #[test]
    fn an_integer_out_of_the_types_range_is_refused_with_the_argument_and_the_range() {
        let refusal = |args: Value| {
            let Value::Object(args) = args else {
                unreachable!()
            };
            match parse::<Params>("read_file", args) {
                Err(ToolError::InvalidArguments(message)) => message,
                other => panic!("expected invalid arguments, got {other:?}"),
            }
        };
        let message = refusal(json!({"limit": 1e20, "offset": 0, "ratio": 0.5, "items": []}));
        assert_eq!(
            message,
            "the arguments for read_file do not fit its parameter types:\n- `limit`: invalid \
             type: floating point `1e+20`, expected an integer from 0 to 18446744073709551615"
        );
        let message = refusal(json!({"limit": 1, "offset": 0, "ratio": 0.5, "items": [1, 5e9]}));
        assert!(
            message.ends_with(
                "- `items.1`: invalid value: integer `5000000000`, expected an integer from 0 \
                 to 4294967295"
            ),
            "{message}"
        );
        let message = refusal(json!({"limit": 1, "offset": 1e19, "ratio": 0.5, "items": []}));
        assert!(
            message
                .ends_with("expected an integer from -9223372036854775808 to 9223372036854775807"),
            "{message}"
        );
        // Anything else keeps serde's words.
        assert_eq!(
            with_integer_range("invalid type: string \"x\", expected a boolean"),
            "invalid type: string \"x\", expected a boolean"
        );
    }
}

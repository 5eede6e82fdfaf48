//! Typed tools: how every built-in tool is written. A [`TypedTool`] is a params type and an
//! output type (serde + schemars: the types are the schemas), one async [`TypedTool::run`],
//! a text rendering and a [`ToolSpec`] of metadata. [`typed`] turns it into the dynamic
//! [`AiTool`] the registry holds: the portable schemas and the instructions are derived once,
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

use crate::instructions::{InstructionsFor, render_instructions};
use crate::schema::{JsonObject, input_schema_for, output_schema_for};
use crate::tool::{AiTool, Annotations, ToolContext, ToolError, ToolOutput};
use crate::workspace::Workspace;

/// What a built-in tool says about itself besides its types. Built when the tool is built, so
/// a description can state the operator's real limits rather than the defaults.
#[derive(Debug, Clone)]
pub(crate) struct ToolSpec {
    /// `[A-Za-z0-9_]{1,64}`.
    pub name: &'static str,
    pub(crate) title: &'static str,
    /// What the tool does, stating its limits and defaults plainly.
    pub description: String,
    /// When to use it (the instructions' "Purpose").
    pub(crate) purpose: &'static str,
    /// The arguments of a typical call (the instructions' "Example").
    pub(crate) example: Value,
    pub(crate) category: &'static str,
    pub(crate) tags: &'static [&'static str],
    pub(crate) annotations: Annotations,
}

/// A built-in tool: typed params in, typed output out.
#[async_trait]
pub(crate) trait TypedTool: Send + Sync + 'static {
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
}

/// A [`TypedTool`] with its schemas and instructions derived once.
struct Typed<T: TypedTool> {
    tool: T,
    spec: ToolSpec,
    input_schema: JsonObject,
    output_schema: JsonObject,
    instructions: String,
}

/// The registry's form of a typed tool.
pub(crate) fn typed<T: TypedTool>(tool: T) -> Arc<dyn AiTool> {
    let spec = tool.spec();
    let mut input_schema = input_schema_for::<T::Params>();
    tool.adjust_input_schema(&mut input_schema);
    let output_schema = output_schema_for::<T::Output>();
    let instructions = render_instructions(InstructionsFor {
        name: spec.name,
        description: &spec.description,
        purpose: Some(spec.purpose),
        input_schema: &input_schema,
        output_schema: Some(&output_schema),
        example: Some(&spec.example),
    });
    Arc::new(Typed {
        tool,
        spec,
        input_schema,
        output_schema,
        instructions,
    })
}

/// Validated arguments as the params type. The schema check has already run, so a failure
/// means the schema and the type disagree; still, say what went wrong.
///
/// JSON Schema's `integer` accepts a number with a zero fraction (`5.0`, as Python's `json`
/// writes a float), which serde's integer types refuse: such numbers become integers first,
/// so arguments the schema accepts parse.
fn parse<P: DeserializeOwned>(mut args: JsonObject) -> Result<P, ToolError> {
    args.values_mut().for_each(integral_floats_to_integers);
    serde_json::from_value(Value::Object(args))
        .map_err(|e| ToolError::InvalidArguments(e.to_string()))
}

/// [`parse`], for the fuzz target that checks every built-in tool's schema against its params
/// type (src/fuzzing.rs).
#[cfg(feature = "fuzzing")]
pub(crate) fn parse_params<P: DeserializeOwned>(args: JsonObject) -> Result<P, ToolError> {
    parse(args)
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
    fn input_schema(&self) -> JsonObject {
        self.input_schema.clone()
    }
    fn output_schema(&self) -> Option<JsonObject> {
        Some(self.output_schema.clone())
    }
    fn category(&self) -> Option<&str> {
        Some(self.spec.category)
    }
    fn tags(&self) -> Vec<&str> {
        self.spec.tags.to_vec()
    }
    fn annotations(&self) -> Annotations {
        self.spec.annotations
    }
    fn instructions(&self) -> String {
        self.instructions.clone()
    }
    fn confirmation(&self, args: &JsonObject, workspace: &Workspace) -> Option<String> {
        if !T::ASKS_CONFIRMATION {
            return None;
        }
        // Arguments that do not parse are refused by `execute` with the reason; asking the
        // user about them first would be pointless.
        let params = parse::<T::Params>(args.clone()).ok()?;
        self.tool.confirmation(&params, workspace)
    }
    async fn execute(&self, args: JsonObject, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let params = parse(args)?;
        let output = self.tool.run(params, ctx).await?;
        let text = self.tool.render(&output);
        let structured = serde_json::to_value(&output).map_err(|e| {
            ToolError::ExecutionFailed(format!(
                "the result could not be serialised ({e}); this is a bug in toolport"
            ))
        })?;
        Ok(ToolOutput::new(structured, text))
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
        let params: Params = parse(args).unwrap();
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
            parse::<Params>(args).is_err(),
            "a fraction is still refused"
        );
    }
}

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
fn parse<P: DeserializeOwned>(args: JsonObject) -> Result<P, ToolError> {
    serde_json::from_value(Value::Object(args))
        .map_err(|e| ToolError::InvalidArguments(e.to_string()))
}

/// [`parse`], for the fuzz target that checks every built-in tool's schema against its params
/// type (src/fuzzing.rs).
#[cfg(feature = "fuzzing")]
pub(crate) fn parse_params<P: DeserializeOwned>(args: JsonObject) -> Result<P, ToolError> {
    parse(args)
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

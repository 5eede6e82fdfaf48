//! [`ToolRegistry`]: the single source of truth for which tools exist. Transports list and call
//! tools only through it.
//!
//! Everything that can be done once per tool is done once: the definition is validated and
//! the MCP form is built, at registration, or on first use for a tool whose definition is
//! valid by construction (`AiTool::describe_on_first_use`: the typed tools, whose schemas are
//! derived then, so `initialize` does not wait for them). The input-schema validator is
//! compiled on the tool's first call and kept: compiling (jsonschema checks each schema against its draft's
//! meta-schema first, and builds that meta-validator once per process) was most of the
//! server's cold start. A call then costs a hash lookup plus one validation pass.
//!
//! The served set is a [`LiveRegistry`]: an immutable `ToolRegistry` behind an atomic pointer,
//! so a reload (plugins) swaps the whole set at once while calls in flight keep the registry
//! they started with, and sessions learn of a changed listing through a version channel.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use arc_swap::ArcSwap;
use futures::FutureExt;
use regex::Regex;
use serde_json::Value;

use crate::definition::{
    DefinitionError, META_ALWAYS_LOAD, ToolDefinition, ToolFormat, ToolHints, is_valid_tool_name,
};
use crate::instructions::{allowed_parameters, argument_field};
use crate::tool::{AiTool, Confirmation, JsonObject, ToolContext, ToolError, ToolOutput};

/// Criteria for [`ToolRegistry::filter`]; all given criteria must hold (AND).
///
/// ```
/// use toolport_tools::{Settings, ToolFilter, ToolFormat, Toolbox};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let toolbox = Toolbox::new(&Settings::new([std::env::temp_dir()]))?;
/// let files = toolbox.registry().filter(&ToolFilter::new().category("filesystem"));
/// assert!(files.get("read_file").is_some() && files.get("execute_command").is_none());
/// let for_anthropic = files.definitions(ToolFormat::Anthropic);
/// assert_eq!(for_anthropic.len(), files.len());
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, Default)]
pub struct ToolFilter {
    /// The tool must have every one of these tags.
    pub(crate) tags: Vec<String>,
    /// The tool's category must be exactly this.
    pub(crate) category: Option<String>,
    /// The tool's name must match this regex (unanchored, as `regex::Regex::is_match`).
    pub(crate) name_pattern: Option<Regex>,
}

impl ToolFilter {
    /// A filter that lets every tool through; narrow it with the methods below.
    pub fn new() -> Self {
        Self::default()
    }

    /// Only tools with this tag (every tag given must be present).
    #[must_use]
    pub fn tag(mut self, tag: impl Into<String>) -> Self {
        self.tags.push(tag.into());
        self
    }

    /// Only tools of this category (exact match), e.g. `"filesystem"`.
    #[must_use]
    pub fn category(mut self, category: impl Into<String>) -> Self {
        self.category = Some(category.into());
        self
    }

    /// Only tools whose name matches this regular expression (unanchored).
    #[must_use]
    pub fn name_matching(mut self, pattern: Regex) -> Self {
        self.name_pattern = Some(pattern);
        self
    }

    /// Whether a tool passes every criterion.
    pub(crate) fn matches(&self, tool: &dyn AiTool) -> bool {
        self.tags.iter().all(|t| tool.tags().contains(&t.as_str()))
            && self
                .category
                .as_deref()
                .is_none_or(|c| tool.category() == Some(c))
            && self
                .name_pattern
                .as_ref()
                .is_none_or(|re| re.is_match(tool.name()))
    }
}

/// Why [`ToolRegistry::execute`] did not produce an output.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ExecuteError {
    /// No tool has this name: a protocol error (JSON-RPC -32602 over MCP).
    #[error("unknown tool {name:?}; available tools: {available}")]
    UnknownTool {
        /// The requested name.
        name: String,
        /// The registered names, comma-separated.
        available: String,
    },
    /// The call needs the user's confirmation and the client must ask (2026-07-28
    /// `InputRequiredResult`); the client retries the call with the answer.
    #[error("the user must confirm: {description}")]
    ConfirmationRequired {
        /// What the user is asked to confirm.
        description: String,
    },
    /// The tool (or the argument check before it) failed: an `isError` result over MCP.
    #[error(transparent)]
    Tool(#[from] ToolError),
}

/// A registered tool with everything computed once for listing and calling it.
struct Entry {
    tool: Arc<dyn AiTool>,
    name: String,
    /// Built at registration, or on first use (see the module docs).
    described: OnceLock<Described>,
    /// Compiled on the first call (or given by the tool, which compiled it to check itself).
    validator: OnceLock<Result<jsonschema::Validator, DefinitionError>>,
}

/// A tool's neutral definition and its MCP listing.
struct Described {
    definition: ToolDefinition,
    mcp: rmcp::model::Tool,
}

impl Described {
    /// Checked: an invalid definition is refused.
    fn new(tool: &dyn AiTool) -> Result<Self, DefinitionError> {
        let definition = ToolDefinition::new(
            tool.name(),
            tool.description(),
            tool.input_schema(),
            tool.output_schema(),
        )?;
        Ok(Self::with(definition, tool))
    }

    fn with(definition: ToolDefinition, tool: &dyn AiTool) -> Self {
        let hints = ToolHints {
            search_hint: tool.search_hint(),
            max_result_chars: tool.max_result_chars(),
        };
        let mcp = definition.to_mcp_with(tool.title(), tool.annotations(), &hints);
        Self { definition, mcp }
    }
}

impl Entry {
    /// The definition and listing, built now if this is the first use.
    fn described(&self) -> &Described {
        self.described.get_or_init(|| {
            let tool = self.tool.as_ref();
            Described::new(tool).unwrap_or_else(|error| {
                // Only a tool that broke its promise (`describe_on_first_use`) gets here; it is
                // listed as it describes itself, and its calls fail on its schema.
                tracing::error!(tool = %self.name, "{error}");
                Described::with(
                    ToolDefinition {
                        name: self.name.clone(),
                        description: tool.description().to_owned(),
                        input_schema: tool.input_schema(),
                        output_schema: tool.output_schema(),
                    },
                    tool,
                )
            })
        })
    }

    /// The compiled input schema, compiled now if this is the first call.
    fn validator(&self) -> Result<&jsonschema::Validator, ToolError> {
        self.validator
            .get_or_init(|| self.described().definition.validator())
            .as_ref()
            .map_err(|e| {
                ToolError::ExecutionFailed(format!(
                    "{e}; the tool cannot be called until its schema is fixed"
                ))
            })
    }
}

/// The tool registry. Registration order is the listing order.
#[derive(Default, Clone)]
pub struct ToolRegistry {
    entries: Vec<Arc<Entry>>,
    index: HashMap<String, usize>,
    /// The tools listed with `anthropic/alwaysLoad: true` (`[tools] always_load`): the
    /// operator's choice, so the registry's, not the tool's.
    always_load: Vec<String>,
}

impl std::fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.index.keys()).finish()
    }
}

impl ToolRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Register a tool. A second tool with a name already taken is logged and skipped (the first
    /// one wins): `Ok(false)`. A tool whose definition is invalid is refused with the reason.
    pub fn register(&mut self, tool: Arc<dyn AiTool>) -> Result<bool, DefinitionError> {
        let name = tool.name().to_owned();
        if self.index.contains_key(&name) {
            tracing::warn!(tool = %name, "a tool with this name is already registered; keeping the first one");
            return Ok(false);
        }
        if !is_valid_tool_name(&name) {
            return Err(DefinitionError::InvalidName(name));
        }
        let described = OnceLock::new();
        if !tool.describe_on_first_use() {
            let _ = described.set(Described::new(tool.as_ref())?);
        }
        let validator = OnceLock::new();
        if let Some(compiled) = tool.compiled_input_schema() {
            let _ = validator.set(Ok(compiled));
        }
        self.index.insert(name.clone(), self.entries.len());
        self.entries.push(Arc::new(Entry {
            tool,
            name,
            described,
            validator,
        }));
        Ok(true)
    }

    /// The tool with this name.
    pub fn get(&self, name: &str) -> Option<Arc<dyn AiTool>> {
        self.entry(name).map(|e| e.tool.clone())
    }

    fn entry(&self, name: &str) -> Option<&Arc<Entry>> {
        self.index.get(name).map(|&i| &self.entries[i])
    }

    /// Every tool, in registration order.
    pub fn all(&self) -> Vec<Arc<dyn AiTool>> {
        self.entries.iter().map(|e| e.tool.clone()).collect()
    }

    /// The names of every tool, in registration order.
    pub fn names(&self) -> Vec<&str> {
        self.entries.iter().map(|e| e.name.as_str()).collect()
    }

    /// A registry holding only the tools that match `filter`, in the same order. Compiled
    /// validators are shared, not recompiled.
    pub fn filter(&self, filter: &ToolFilter) -> ToolRegistry {
        self.retain(|e| filter.matches(e.tool.as_ref()))
    }

    /// A registry holding only the tools for which `keep(name)` is true.
    pub(crate) fn retain_names(&self, keep: impl Fn(&str) -> bool) -> ToolRegistry {
        self.retain(|e| keep(&e.name))
    }

    fn retain(&self, keep: impl Fn(&Entry) -> bool) -> ToolRegistry {
        let mut out = ToolRegistry::new();
        for entry in self.entries.iter().filter(|e| keep(e)) {
            out.index.insert(entry.name.clone(), out.entries.len());
            out.entries.push(entry.clone());
        }
        out
    }

    /// Whether `other` lists exactly the same tools, in the same order, with the same
    /// definitions.
    pub(crate) fn same_listing(&self, other: &ToolRegistry) -> bool {
        self.entries.len() == other.entries.len()
            && self.always_load == other.always_load
            && self
                .entries
                .iter()
                .zip(&other.entries)
                .all(|(a, b)| Arc::ptr_eq(a, b) || a.described().mcp == b.described().mcp)
    }

    /// The number of tools.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no tool is registered.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The neutral definition of a tool.
    pub fn definition(&self, name: &str) -> Option<&ToolDefinition> {
        self.entry(name).map(|e| &e.described().definition)
    }

    /// The MCP `tools/list` entries (with title, output schema, annotations and `_meta`).
    #[doc(hidden)]
    pub fn mcp_tools(&self) -> Vec<rmcp::model::Tool> {
        self.entries.iter().map(|e| self.listed(e)).collect()
    }

    /// The MCP entry of one tool.
    #[doc(hidden)]
    pub fn mcp_tool(&self, name: &str) -> Option<rmcp::model::Tool> {
        self.entry(name).map(|e| self.listed(e))
    }

    /// A tool's MCP entry, marked `anthropic/alwaysLoad` when the operator asked for it.
    fn listed(&self, entry: &Entry) -> rmcp::model::Tool {
        let mut tool = entry.described().mcp.clone();
        if self.always_load.contains(&entry.name) {
            tool.meta
                .get_or_insert_with(Default::default)
                .0
                .insert(META_ALWAYS_LOAD.into(), Value::Bool(true));
        }
        tool
    }

    /// A tool's definition in `format` (MCP: as listed, with this registry's `_meta`).
    fn in_format(&self, entry: &Entry, format: ToolFormat) -> Value {
        let definition = &entry.described().definition;
        match format {
            ToolFormat::Mcp => serde_json::to_value(self.listed(entry)).unwrap_or(Value::Null),
            ToolFormat::Openai => definition.to_openai(),
            ToolFormat::Anthropic => definition.to_anthropic(),
            ToolFormat::Ollama => definition.to_ollama(),
        }
    }

    /// This registry with these tools listed as always loaded (`anthropic/alwaysLoad`); names
    /// no tool has are ignored (the selection checked them).
    pub(crate) fn with_always_load(mut self, names: &[String]) -> Self {
        self.always_load = names
            .iter()
            .filter(|n| self.index.contains_key(n.as_str()))
            .cloned()
            .collect();
        self
    }

    /// Every tool's definition in a target format.
    pub fn definitions(&self, format: ToolFormat) -> Vec<Value> {
        self.entries
            .iter()
            .map(|e| self.in_format(e, format))
            .collect()
    }

    /// One tool's definition in a target format (`None`: no tool has this name) — to show a
    /// model, or a reader, a single tool.
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use toolport_tools::{Settings, Toolbox, ToolFormat};
    ///
    /// let toolbox = Toolbox::new(&Settings::new([std::env::temp_dir()]).read_only())?;
    /// let read_file = toolbox.registry().definition_in("read_file", ToolFormat::Openai);
    /// assert_eq!(read_file.unwrap()["function"]["name"], "read_file");
    /// assert!(toolbox.registry().definition_in("no_such_tool", ToolFormat::Openai).is_none());
    /// # Ok(())
    /// # }
    /// ```
    pub fn definition_in(&self, name: &str, format: ToolFormat) -> Option<Value> {
        self.entry(name).map(|e| self.in_format(e, format))
    }

    /// Every tool's instructions, joined by blank lines.
    pub fn instructions(&self) -> String {
        self.entries
            .iter()
            .map(|e| e.tool.instructions())
            .collect::<Vec<_>>()
            .join("\n\n")
    }

    /// Check `args` against a tool's input schema. Every violation is listed with the field,
    /// what was wrong, and what the tool accepts.
    pub fn validate(&self, name: &str, args: &JsonObject) -> Result<(), ExecuteError> {
        let entry = self.entry(name).ok_or_else(|| self.unknown(name))?;
        check_arguments(entry, &Value::Object(args.clone())).map_err(ExecuteError::Tool)
    }

    /// The error for a call to a tool that is not registered.
    #[doc(hidden)]
    pub fn unknown(&self, name: &str) -> ExecuteError {
        ExecuteError::UnknownTool {
            name: name.to_owned(),
            available: self.names().join(", "),
        }
    }

    /// Run a tool: validate the arguments, ask for confirmation if the tool wants it, execute
    /// it, and turn a panic inside the tool into an error result instead of a lost request.
    pub async fn execute(
        &self,
        name: &str,
        args: JsonObject,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ExecuteError> {
        let entry = self.entry(name).ok_or_else(|| self.unknown(name))?.clone();
        // The validator takes a `Value`; wrap the map (a move, not a copy) and unwrap it again.
        let instance = Value::Object(args);
        check_arguments(&entry, &instance)?;
        let Value::Object(args) = instance else {
            return Err(
                ToolError::InvalidArguments("the arguments must be a JSON object".into()).into(),
            );
        };
        if let Some(description) = entry.tool.confirmation(&args, &ctx.workspace) {
            match ctx.confirmer.confirm(&description).await {
                Confirmation::Accepted => {}
                Confirmation::Declined => {
                    ctx.facts.set_declined();
                    return Err(ToolError::PermissionDenied(format!(
                        "the user declined this call ({description}); do not retry it unchanged"
                    ))
                    .into());
                }
                Confirmation::Unavailable(message) => {
                    return Err(ToolError::PermissionDenied(message).into());
                }
                Confirmation::AskClient => {
                    return Err(ExecuteError::ConfirmationRequired { description });
                }
            }
        }
        let started = Instant::now();
        let outcome = AssertUnwindSafe(entry.tool.execute(args, ctx))
            .catch_unwind()
            .await;
        let elapsed = started.elapsed();
        match outcome {
            Ok(Ok(output)) => {
                tracing::debug!(tool = name, ?elapsed, "tool call succeeded");
                Ok(output)
            }
            Ok(Err(error)) => {
                tracing::debug!(tool = name, ?elapsed, %error, "tool call failed");
                Err(error.into())
            }
            Err(panic) => {
                let detail = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "no message".into());
                tracing::error!(tool = name, panic = %detail, "tool panicked");
                Err(ToolError::ExecutionFailed(format!(
                    "the tool {name} crashed with an internal error ({detail}); this is a bug in toolport, not in your arguments"
                ))
                .into())
            }
        }
    }
}

/// The tool set being served: swapped whole by a reload, read without locks by every call.
#[derive(Debug)]
pub struct LiveRegistry {
    current: ArcSwap<ToolRegistry>,
    /// Bumped each time the listed set changes; sessions forward it as
    /// `notifications/tools/list_changed`.
    version: tokio::sync::watch::Sender<u64>,
}

impl LiveRegistry {
    /// Serve `registry`.
    pub fn new(registry: ToolRegistry) -> Self {
        Self {
            current: ArcSwap::from_pointee(registry),
            version: tokio::sync::watch::Sender::new(0),
        }
    }

    /// The current set. A call holds on to it, so a reload does not change the tool under it.
    pub fn load(&self) -> Arc<ToolRegistry> {
        self.current.load_full()
    }

    /// Serve `next` from now on. Returns whether the listing (names, schemas, descriptions,
    /// annotations, order) changed; only then are sessions told.
    pub(crate) fn replace(&self, next: ToolRegistry) -> bool {
        let changed = !self.current.load().same_listing(&next);
        self.current.store(Arc::new(next));
        if changed {
            self.version.send_modify(|v| *v += 1);
        }
        changed
    }

    /// A receiver that wakes each time the listing changes.
    pub fn changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.version.subscribe()
    }
}

/// Validate arguments against a tool's compiled schema and describe every violation.
fn check_arguments(entry: &Entry, instance: &Value) -> Result<(), ToolError> {
    let validator = entry.validator()?;
    if validator.is_valid(instance) {
        return Ok(());
    }
    let schema = &entry.described().definition.input_schema;
    let mut lines: Vec<String> = validator
        .iter_errors(instance)
        .map(|error| {
            let pointer = error.instance_path().to_string();
            let field = argument_field(pointer.split('/').filter(|part| !part.is_empty()));
            format!("- {field}: {error}")
        })
        .collect();
    lines.dedup();
    let allowed = allowed_parameters(schema);
    Err(ToolError::InvalidArguments(format!(
        "the arguments for {} do not match its schema:\n{}\n{allowed}",
        entry.name,
        lines.join("\n")
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::{Annotations, ConfirmFallback, NoConfirmer};
    use crate::workspace::Workspace;
    use async_trait::async_trait;
    use serde_json::json;

    struct Fake {
        name: &'static str,
        tags: &'static [&'static str],
        category: Option<&'static str>,
        marker: u32,
    }

    #[async_trait]
    impl AiTool for Fake {
        fn name(&self) -> &str {
            self.name
        }
        fn description(&self) -> &str {
            "A fake tool."
        }
        fn input_schema(&self) -> Arc<JsonObject> {
            Arc::new(
                json!({"type": "object", "properties": {
                    "path": {"type": "string"},
                    "count": {"type": "integer", "minimum": 1, "maximum": 10}
                }, "required": ["path"], "additionalProperties": false})
                .as_object()
                .cloned()
                .unwrap(),
            )
        }
        fn category(&self) -> Option<&str> {
            self.category
        }
        fn tags(&self) -> Vec<&str> {
            self.tags.to_vec()
        }
        fn annotations(&self) -> Annotations {
            Annotations {
                read_only: true,
                destructive: false,
                idempotent: true,
                open_world: false,
            }
        }
        fn confirmation(&self, args: &JsonObject, _workspace: &Workspace) -> Option<String> {
            (args.get("path") == Some(&json!("risky"))).then(|| "touch risky".to_owned())
        }
        async fn execute(
            &self,
            args: JsonObject,
            _ctx: &ToolContext,
        ) -> Result<ToolOutput, ToolError> {
            if args.get("path") == Some(&json!("boom")) {
                panic!("kaboom");
            }
            Ok(ToolOutput::new(
                json!({"marker": self.marker}),
                format!("marker {}", self.marker),
            ))
        }
    }

    fn fake(
        name: &'static str,
        tags: &'static [&'static str],
        category: Option<&'static str>,
    ) -> Arc<dyn AiTool> {
        Arc::new(Fake {
            name,
            tags,
            category,
            marker: 0,
        })
    }

    fn registry() -> ToolRegistry {
        let mut r = ToolRegistry::new();
        r.register(fake("read_file", &["fs", "read"], Some("filesystem")))
            .unwrap();
        r.register(fake("list_directory", &["fs"], Some("filesystem")))
            .unwrap();
        r.register(fake("web_search", &["web", "read"], Some("web")))
            .unwrap();
        r
    }

    fn ctx() -> ToolContext {
        let dir = std::env::temp_dir();
        let ws = Workspace::new(&[dir], &[]).unwrap();
        let mut ctx = ToolContext::local(Arc::new(ws), ConfirmFallback::Deny);
        ctx.confirmer = Arc::new(NoConfirmer {
            reason: "nobody is there".into(),
            fallback: ConfirmFallback::Deny,
        });
        ctx
    }

    /// A tool whose schema no validator can compile.
    struct BadSchema;

    #[async_trait]
    impl AiTool for BadSchema {
        fn name(&self) -> &str {
            "bad_schema"
        }
        fn description(&self) -> &str {
            "A tool with a broken schema."
        }
        fn input_schema(&self) -> Arc<JsonObject> {
            Arc::new(
                json!({"type": "object", "properties": {"a": {"type": "no-such-type"}}})
                    .as_object()
                    .cloned()
                    .unwrap(),
            )
        }
        async fn execute(&self, _: JsonObject, _: &ToolContext) -> Result<ToolOutput, ToolError> {
            panic!("a tool whose schema does not compile must never run");
        }
    }

    #[test]
    fn a_schema_that_does_not_compile_fails_the_call_with_the_reason() {
        let mut r = ToolRegistry::new();
        // Compiled on the first call, not at registration (cold start).
        assert!(r.register(Arc::new(BadSchema)).unwrap());
        let err = futures::executor::block_on(r.execute("bad_schema", JsonObject::new(), &ctx()))
            .unwrap_err();
        let message = err.to_string();
        assert!(
            message.contains("bad_schema") && message.contains("schema"),
            "{message}"
        );
    }

    #[test]
    fn every_builtin_definition_is_valid_and_its_input_schema_compiles() {
        let (fs, write) = (Default::default(), Default::default());
        let (exec, web) = (Default::default(), Default::default());
        let built = crate::tools::builtin_tools(crate::tools::BuiltinSettings {
            roots: &[std::env::temp_dir()],
            fs: &fs,
            write: &write,
            exec: &exec,
            web: &web,
        })
        .unwrap();
        let mut r = ToolRegistry::new();
        for tool in built.tools {
            r.register(tool).unwrap();
        }
        assert!(r.entries.len() >= 17);
        for entry in &r.entries {
            // What `describe_on_first_use` promises: a definition valid by construction.
            if let Err(e) = Described::new(entry.tool.as_ref()) {
                panic!("{}: {e}", entry.name);
            }
            if let Err(e) = entry.validator() {
                panic!("{}: {e}", entry.name);
            }
            // Compiled as draft 7, which means the same for it and keeps the first call's
            // meta-schema small (crate::validator).
            let schema = Value::Object(JsonObject::clone(
                &entry.described().definition.input_schema,
            ));
            assert!(
                crate::validator::means_the_same_in_draft7(&schema),
                "{}: its input schema uses a keyword outside validator::SAME_IN_DRAFT7",
                entry.name
            );
        }
    }

    /// A tool that counts how often its schema is asked for.
    struct Counted {
        name: &'static str,
        on_first_use: bool,
        asked: std::sync::atomic::AtomicUsize,
    }

    impl Counted {
        fn new(name: &'static str, on_first_use: bool) -> Self {
            Self {
                name,
                on_first_use,
                asked: Default::default(),
            }
        }
    }

    #[async_trait]
    impl AiTool for Counted {
        fn name(&self) -> &str {
            self.name
        }
        fn description(&self) -> &str {
            "Counts schema requests."
        }
        fn input_schema(&self) -> Arc<JsonObject> {
            self.asked
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            Arc::new(json!({"type": "object"}).as_object().cloned().unwrap())
        }
        fn describe_on_first_use(&self) -> bool {
            self.on_first_use
        }
        async fn execute(&self, _: JsonObject, _: &ToolContext) -> Result<ToolOutput, ToolError> {
            Ok(ToolOutput::new(json!({}), String::new()))
        }
    }

    #[test]
    fn a_tool_described_on_first_use_is_described_by_its_first_listing_once() {
        let asked = |tool: &Counted| tool.asked.load(std::sync::atomic::Ordering::Relaxed);
        for on_first_use in [true, false] {
            let tool = Arc::new(Counted::new("counted", on_first_use));
            let mut r = ToolRegistry::new();
            r.register(tool.clone()).unwrap();
            assert_eq!(
                asked(&tool),
                usize::from(!on_first_use),
                "on_first_use={on_first_use}"
            );
            assert_eq!(r.names(), ["counted"]);
            assert_eq!(
                asked(&tool),
                usize::from(!on_first_use),
                "names need no schema"
            );
            assert_eq!(r.mcp_tools().len(), 1);
            r.mcp_tools();
            r.definitions(ToolFormat::Openai);
            assert_eq!(asked(&tool), 1, "on_first_use={on_first_use}");
        }
    }

    #[test]
    fn an_invalid_name_is_refused_at_registration_even_when_described_later() {
        let err = ToolRegistry::new()
            .register(Arc::new(Counted::new("bad name", true)))
            .unwrap_err();
        assert_eq!(err, DefinitionError::InvalidName("bad name".into()));
    }

    #[test]
    fn duplicate_names_keep_the_first_tool() {
        let mut r = ToolRegistry::new();
        assert!(
            r.register(Arc::new(Fake {
                name: "t",
                tags: &[],
                category: None,
                marker: 1
            }))
            .unwrap()
        );
        assert!(
            !r.register(Arc::new(Fake {
                name: "t",
                tags: &[],
                category: None,
                marker: 2
            }))
            .unwrap()
        );
        assert_eq!(r.names().len(), 1);
        let out = futures::executor::block_on(r.execute(
            "t",
            json!({"path": "x"}).as_object().cloned().unwrap(),
            &ctx(),
        ))
        .unwrap();
        assert_eq!(out.structured, Some(json!({"marker": 1})));
    }

    #[test]
    fn invalid_names_are_refused() {
        let mut r = ToolRegistry::new();
        let err = r.register(fake("bad.name", &[], None)).unwrap_err();
        assert_eq!(err, DefinitionError::InvalidName("bad.name".into()));
        assert!(r.names().is_empty());
    }

    #[test]
    fn all_keeps_registration_order() {
        assert_eq!(
            registry().names(),
            ["read_file", "list_directory", "web_search"]
        );
        let all: Vec<String> = registry()
            .all()
            .iter()
            .map(|t| t.name().to_owned())
            .collect();
        assert_eq!(all, ["read_file", "list_directory", "web_search"]);
    }

    #[test]
    fn filter_combines_criteria_with_and() {
        let r = registry();
        let f = |tags: &[&str], category: Option<&str>, pattern: Option<&str>| {
            r.filter(&ToolFilter {
                tags: tags.iter().map(|t| t.to_string()).collect(),
                category: category.map(str::to_owned),
                name_pattern: pattern.map(|p| Regex::new(p).unwrap()),
            })
            .names()
            .iter()
            .map(|n| n.to_string())
            .collect::<Vec<_>>()
        };
        assert_eq!(
            f(&[], None, None),
            ["read_file", "list_directory", "web_search"]
        );
        assert_eq!(f(&["read"], None, None), ["read_file", "web_search"]);
        assert_eq!(
            f(&["fs", "read"], None, None),
            ["read_file"],
            "all tags must be present"
        );
        assert_eq!(f(&["nope"], None, None), Vec::<String>::new());
        assert_eq!(
            f(&[], Some("filesystem"), None),
            ["read_file", "list_directory"]
        );
        assert_eq!(
            f(&[], Some("file"), None),
            Vec::<String>::new(),
            "category is exact"
        );
        assert_eq!(
            f(&[], None, Some("^(read|web)_")),
            ["read_file", "web_search"]
        );
        assert_eq!(f(&["read"], Some("filesystem"), None), ["read_file"]);
        assert_eq!(
            f(&["read"], Some("web"), Some("file")),
            Vec::<String>::new()
        );
        assert_eq!(
            f(&["fs"], Some("filesystem"), Some("list")),
            ["list_directory"]
        );
    }

    #[test]
    fn definitions_in_every_format() {
        let r = registry();
        let openai = r.definitions(ToolFormat::Openai);
        assert_eq!(openai.len(), 3);
        assert_eq!(openai[0]["type"], json!("function"));
        assert_eq!(openai[0]["function"]["name"], json!("read_file"));
        assert_eq!(openai[0]["function"]["parameters"]["type"], json!("object"));
        let anthropic = r.definitions(ToolFormat::Anthropic);
        assert_eq!(anthropic[1]["name"], json!("list_directory"));
        assert_eq!(anthropic[1]["input_schema"]["required"], json!(["path"]));
        assert_eq!(r.definitions(ToolFormat::Ollama), openai);
        let mcp = r.definitions(ToolFormat::Mcp);
        assert_eq!(mcp[2]["name"], json!("web_search"));
        assert_eq!(mcp[2]["inputSchema"]["type"], json!("object"));
        assert_eq!(mcp[2]["annotations"]["readOnlyHint"], json!(true));
    }

    #[test]
    fn instructions_are_joined_by_blank_lines() {
        let text = registry().instructions();
        assert_eq!(text.matches("Tool: ").count(), 3);
        assert!(text.contains("Example: {\"name\":\"read_file\",\"arguments\":{\"path\":\"...\"}}\n\nTool: list_directory"));
    }

    fn run(args: Value) -> Result<ToolOutput, ExecuteError> {
        let Value::Object(args) = args else {
            panic!("test arguments must be an object");
        };
        futures::executor::block_on(registry().execute("read_file", args, &ctx()))
    }

    #[test]
    fn arguments_are_validated_before_the_tool_runs() {
        let err = run(json!({"count": "many", "extra": 1}))
            .unwrap_err()
            .to_string();
        assert!(err.contains("\"path\" is a required property"), "{err}");
        assert!(
            err.contains("`count`: \"many\" is not of type \"integer\""),
            "{err}"
        );
        assert!(err.contains("'extra' was unexpected"), "{err}");
        assert!(
            err.contains("Allowed parameters: path (string, required), count (integer)."),
            "{err}"
        );
        let err = run(json!({"path": "x", "count": 11}))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("`count`: 11 is greater than the maximum of 10"),
            "{err}"
        );
        assert!(run(json!({"path": "x", "count": 3})).is_ok());
    }

    #[test]
    fn unknown_tools_are_a_distinct_error() {
        let err =
            futures::executor::block_on(registry().execute("nope", JsonObject::new(), &ctx()))
                .unwrap_err();
        assert_eq!(
            err,
            ExecuteError::UnknownTool {
                name: "nope".into(),
                available: "read_file, list_directory, web_search".into()
            }
        );
    }

    #[test]
    fn a_panicking_tool_becomes_an_error() {
        let err = run(json!({"path": "boom"})).unwrap_err();
        assert!(
            matches!(&err, ExecuteError::Tool(ToolError::ExecutionFailed(m)) if m.contains("kaboom")),
            "{err}"
        );
    }

    #[test]
    fn confirmation_is_asked_and_refusal_explained() {
        let err = run(json!({"path": "risky"})).unwrap_err();
        assert!(
            matches!(&err, ExecuteError::Tool(ToolError::PermissionDenied(m)) if m.contains("touch risky") && m.contains("nobody is there")),
            "{err}"
        );
    }
}

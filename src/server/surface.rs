//! The tool surface a session is listed ([`clients::surface_for`]: `[tools] surface`, or per
//! client): every tool it may use, or the search surface — the operator's pinned tools plus
//! two of toolport's own:
//!
//! - `search_tools` finds tools by what they do (`toolport_tools::host::ToolIndex`: exact
//!   names first, then a field-weighted BM25 over names, descriptions, parameters, tags,
//!   category and upstream) among the tools this session may use, and answers with each
//!   match's whole definition, so the model can call it next;
//! - `call_tool` calls one of them by name: the call goes through the same pipeline as a
//!   direct call (`call.rs`: schema check, confirmation, scopes and policy per principal,
//!   budgets, payload form, audit record of the inner tool, marked `"via": "call_tool"`).
//!
//! In a search-surface session these two names are toolport's own, whatever else is served:
//! a tool of the same name (an upstream's with `prefix = "never"`, a plugin's) is not listed
//! there, and is reached through `call_tool` like every other tool. A prefixed upstream tool
//! (`name__tool`) can never take either name. Tools the session may not use (not selected,
//! outside its scopes, refused by its policy) are neither found nor called. A change of the
//! served set reaches the client as `tools/list_changed` as before (`changes.rs`): its
//! searches see the new set at once.

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ErrorCode, JsonObject,
    Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};
use serde_json::{Value, json};
use toolport_tools::host::{Surface, ToolIndex};
use toolport_tools::{AiTool, ToolRegistry};

use super::{ToolportServer, clients};
use crate::identity::Principal;
use crate::observe::audit::Outcome;
use crate::observe::{Failure, TOOL_ERROR};

/// The search surface's tool that finds tools.
pub(super) const SEARCH_TOOLS: &str = "search_tools";
/// The search surface's tool that calls a tool by name.
pub(super) const CALL_TOOL: &str = "call_tool";

/// How many matches `search_tools` returns unless asked: enough that the right tool is
/// almost always among them (BENCHMARKS.md: top-3 on the request set), few enough that
/// their definitions stay a small part of the context.
const DEFAULT_LIMIT: usize = 5;
/// The most matches one search returns: past this the answer is a full listing again.
const MAX_LIMIT: usize = 20;

/// The error kind of a search or call_tool call whose own arguments are wrong.
const INVALID_ARGUMENTS: &str = "invalid_arguments";

/// `search_tools`' listing entry.
fn search_tools() -> Tool {
    let schema = json!({
        "type": "object",
        "properties": {
            "query": {
                "type": "string",
                "minLength": 1,
                "description": "What you want to do, in plain words (\"download a web page as markdown\", \"add two numbers\"), or a tool's exact name."
            },
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_LIMIT,
                "default": DEFAULT_LIMIT,
                "description": format!("The most tools to return (1-{MAX_LIMIT}, default {DEFAULT_LIMIT}).")
            }
        },
        "required": ["query"],
        "additionalProperties": false
    });
    let mut tool = Tool::new(
        SEARCH_TOOLS,
        "Find tools for a task among every tool this server offers, including the ones not in your tool list. Describe what you want to do; the best matches come first, each with its name, description and input schema. Then run one with call_tool. Search again with other words when nothing fits.",
        Arc::new(object(schema)),
    );
    tool.title = Some("Search tools".to_owned());
    tool.annotations = Some(read_only());
    tool
}

/// `call_tool`'s listing entry.
fn call_tool() -> Tool {
    let schema = json!({
        "type": "object",
        "properties": {
            "name": {
                "type": "string",
                "minLength": 1,
                "description": "The tool's exact name, as search_tools returned it."
            },
            "arguments": {
                "type": "object",
                "description": "The tool's arguments, matching the inputSchema search_tools returned for it.",
                "additionalProperties": true
            }
        },
        "required": ["name"],
        "additionalProperties": false
    });
    let mut tool = Tool::new(
        CALL_TOOL,
        "Run a tool found with search_tools, by its exact name, with arguments that match its input schema. The tool's result comes back as if you had called it directly; it is checked, confirmed and recorded the same way.",
        Arc::new(object(schema)),
    );
    tool.title = Some("Call a tool".to_owned());
    tool
}

/// A JSON object literal as a schema.
fn object(value: Value) -> JsonObject {
    match value {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    }
}

/// The annotations of a tool that only reads toolport's own catalog.
fn read_only() -> ToolAnnotations {
    let mut annotations = ToolAnnotations::new();
    annotations.read_only_hint = Some(true);
    annotations.destructive_hint = Some(false);
    annotations.idempotent_hint = Some(true);
    annotations.open_world_hint = Some(false);
    annotations
}

/// The search index of the served set: built by the first search after a reload (a served
/// set never changes; a reload swaps in a new one), shared by every session.
#[derive(Debug, Default)]
pub struct SearchIndex(std::sync::Mutex<Option<(Arc<ToolRegistry>, Arc<ToolIndex>)>>);

impl SearchIndex {
    /// The index of `registry`, built now if the one kept is another set's.
    fn of(&self, registry: &Arc<ToolRegistry>) -> Arc<ToolIndex> {
        let mut kept = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((indexed, index)) = &*kept
            && Arc::ptr_eq(indexed, registry)
        {
            return index.clone();
        }
        let index = Arc::new(ToolIndex::new(registry));
        *kept = Some((registry.clone(), index.clone()));
        index
    }
}

/// What one of the surface's tools was asked, read from its arguments.
enum Asked {
    Search { query: String, limit: usize },
    Call(CallToolRequestParams),
}

impl ToolportServer {
    /// Whether this session may use `tool` (its principal's scopes and policy).
    fn may_use(principal: Option<&Principal>, tool: &dyn AiTool) -> bool {
        principal.is_none_or(|p| p.access.is_all() || p.access.allows_tool(tool))
    }

    /// This session's surface, for a catalog of `tools` tools it may use.
    fn surface(&self, context: &RequestContext<RoleServer>, tools: usize) -> Surface {
        let info = self.client_info(context);
        clients::surface_for(
            &self.shared.surface,
            info.as_ref().map(|i| i.name.as_str()),
            tools,
        )
    }

    /// `tools/list`: every tool of `registry` the session may use, or, in the search
    /// surface, the pinned ones among them (in the operator's order) and the two tools.
    pub(super) fn listing(
        &self,
        registry: &ToolRegistry,
        context: &RequestContext<RoleServer>,
    ) -> Vec<Tool> {
        let principal = Principal::of(context);
        let mut tools = registry.mcp_tools();
        tools.retain(|tool| {
            registry
                .get(&tool.name)
                .is_some_and(|t| Self::may_use(principal.as_deref(), t.as_ref()))
        });
        if self.surface(context, tools.len()) == Surface::Full {
            return tools;
        }
        let mut listed: Vec<Tool> = self
            .shared
            .surface
            .pinned
            .iter()
            .filter(|name| !matches!(name.as_str(), SEARCH_TOOLS | CALL_TOOL))
            .filter_map(|name| tools.iter().find(|t| t.name == name.as_str()).cloned())
            .collect();
        listed.push(search_tools());
        listed.push(call_tool());
        listed
    }

    /// The listing entry of one of the surface's tools, for a name no served tool has.
    pub(super) fn surface_tool_entry(name: &str) -> Option<Tool> {
        match name {
            SEARCH_TOOLS => Some(search_tools()),
            CALL_TOOL => Some(call_tool()),
            _ => None,
        }
    }

    /// Whether `name` is one of the surface's own tools in this session (a search-surface
    /// session: there they win over a served tool of the same name).
    pub(super) fn is_surface_tool(
        &self,
        name: &str,
        registry: &ToolRegistry,
        context: &RequestContext<RoleServer>,
    ) -> bool {
        if !matches!(name, SEARCH_TOOLS | CALL_TOOL) {
            return false;
        }
        let principal = Principal::of(context);
        let usable = registry
            .all()
            .iter()
            .filter(|t| Self::may_use(principal.as_deref(), t.as_ref()))
            .count();
        self.surface(context, usable) == Surface::Search
    }

    /// A call of `search_tools` or `call_tool`.
    pub(super) async fn surface_call(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        match read(&request) {
            Ok(Asked::Call(inner)) => {
                let answer = self.call(inner, context, Some(CALL_TOOL)).await;
                // A model gets a result it can act on, not a protocol error its client may not
                // show it: a tool that is not there (search again), or one outside the
                // token's scopes (do without it).
                answer.or_else(|error| {
                    let message = if error.code == ErrorCode::INVALID_PARAMS {
                        format!(
                            "{}. Find the tool's exact name with {SEARCH_TOOLS}.",
                            error.message
                        )
                    } else {
                        error.message.to_string()
                    };
                    Ok(CallToolResult::error(vec![ContentBlock::text(message)]).into())
                })
            }
            Ok(Asked::Search { query, limit }) => {
                // As tools/list does: an upstream in its first start with `list_wait` is
                // waited for, so a search right after connecting finds its tools.
                self.shared.upstreams.listing_ready().await;
                let result = self.search(&query, limit, &context);
                self.record_own(&request, &context, &result, None);
                Ok(result.into())
            }
            Err(message) => {
                let result = CallToolResult::error(vec![ContentBlock::text(message.clone())]);
                let failure = Failure {
                    kind: INVALID_ARGUMENTS,
                    message,
                    outcome: Outcome::Error,
                    error_type: TOOL_ERROR.into(),
                };
                self.record_own(&request, &context, &result, Some(failure));
                Ok(result.into())
            }
        }
    }

    /// The matches for `query` among the tools this session may use, as a result whose text
    /// is their definitions in JSON (every client hands a model the text of a result that has
    /// no structuredContent).
    fn search(
        &self,
        query: &str,
        limit: usize,
        context: &RequestContext<RoleServer>,
    ) -> CallToolResult {
        let registry = self.shared.registry.load();
        let principal = Principal::of(context);
        let index = self.shared.search_index.of(&registry);
        let found = index.find(query, limit, |tool| {
            Self::may_use(principal.as_deref(), tool)
        });
        let tools: Vec<Value> = found
            .iter()
            .filter_map(|tool| {
                let definition = registry.definition(tool.name())?;
                let mut entry = json!({
                    "name": definition.name,
                    "description": definition.description,
                    "inputSchema": definition.input_schema,
                });
                if let (Some(upstream), Some(map)) = (tool.upstream(), entry.as_object_mut()) {
                    map.insert("upstream".into(), json!(upstream));
                }
                Some(entry)
            })
            .collect();
        let answer = if tools.is_empty() {
            json!({
                "query": query,
                "tools": [],
                "note": "No tool matches these words. Describe the action differently (what the tool would do, e.g. \"read a file\", \"fetch a web page\"), use fewer words, or give a tool's exact name."
            })
        } else {
            json!({
                "query": query,
                "tools": tools,
                "note": format!("Run one with {CALL_TOOL}: {{\"name\": \"<name>\", \"arguments\": {{...}}}}, the arguments matching its inputSchema.")
            })
        };
        CallToolResult::success(vec![ContentBlock::text(answer.to_string())])
    }

    /// Record a call of one of the surface's own tools that did not go through the pipeline
    /// (a search, or arguments that named no call): audit record and metrics, under the
    /// surface tool's name.
    fn record_own(
        &self,
        request: &CallToolRequestParams,
        context: &RequestContext<RoleServer>,
        result: &CallToolResult,
        failure: Option<Failure>,
    ) {
        let principal = Principal::of(context);
        let call = self.begin_call(
            request,
            context,
            true,
            None,
            principal.as_deref(),
            Arc::default(),
            None,
        );
        let bytes = call.size_of(result);
        call.finish(failure, bytes);
    }
}

/// What a surface tool's call asks, or what is wrong with its arguments (written for the
/// model: what was wrong, what is allowed).
fn read(request: &CallToolRequestParams) -> Result<Asked, String> {
    let empty = JsonObject::new();
    let args = request.arguments.as_ref().unwrap_or(&empty);
    let unknown: Vec<&str> = args
        .keys()
        .map(String::as_str)
        .filter(|key| match request.name.as_ref() {
            SEARCH_TOOLS => !matches!(*key, "query" | "limit"),
            _ => !matches!(*key, "name" | "arguments"),
        })
        .collect();
    if let Some(key) = unknown.first() {
        let allowed = if request.name == SEARCH_TOOLS {
            "query, limit"
        } else {
            "name, arguments"
        };
        return Err(format!(
            "{} takes no argument {key:?}; its arguments are: {allowed}",
            request.name
        ));
    }
    if request.name == SEARCH_TOOLS {
        let query = match args.get("query") {
            Some(Value::String(q)) if !q.trim().is_empty() => q.trim().to_owned(),
            _ => {
                return Err(format!(
                    "{SEARCH_TOOLS} needs \"query\": a non-empty string saying what you want to do, e.g. {{\"query\": \"fetch a web page\"}}"
                ));
            }
        };
        let limit = match args.get("limit") {
            None | Some(Value::Null) => DEFAULT_LIMIT,
            Some(value) => value
                .as_u64()
                .and_then(|n| usize::try_from(n).ok())
                .filter(|n| (1..=MAX_LIMIT).contains(n))
                .ok_or_else(|| {
                    format!("\"limit\" must be a whole number from 1 to {MAX_LIMIT}, not {value}")
                })?,
        };
        return Ok(Asked::Search { query, limit });
    }
    let name = match args.get("name") {
        Some(Value::String(n)) if !n.trim().is_empty() => n.trim().to_owned(),
        _ => {
            return Err(format!(
                "{CALL_TOOL} needs \"name\": the exact name of a tool {SEARCH_TOOLS} found, e.g. {{\"name\": \"read_file\", \"arguments\": {{\"path\": \"README.md\"}}}}"
            ));
        }
    };
    let arguments = match args.get("arguments") {
        None | Some(Value::Null) => None,
        Some(Value::Object(map)) => Some(map.clone()),
        Some(other) => {
            return Err(format!(
                "\"arguments\" must be a JSON object of the tool's arguments, not {other}"
            ));
        }
    };
    let mut inner = CallToolRequestParams::new(name);
    inner.arguments = arguments;
    inner.meta = request.meta.clone();
    inner.input_responses = request.input_responses.clone();
    inner.request_state = request.request_state.clone();
    Ok(Asked::Call(inner))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(name: &'static str, args: Value) -> CallToolRequestParams {
        let mut request = CallToolRequestParams::new(name);
        request.arguments = Some(object(args));
        request
    }

    #[test]
    fn the_surface_tools_read_their_arguments_or_say_what_is_wrong() {
        match read(&request(
            SEARCH_TOOLS,
            json!({"query": " sum ", "limit": 3}),
        )) {
            Ok(Asked::Search { query, limit }) => assert_eq!((query.as_str(), limit), ("sum", 3)),
            _ => panic!("a search"),
        }
        match read(&request(SEARCH_TOOLS, json!({"query": "sum"}))) {
            Ok(Asked::Search { limit, .. }) => assert_eq!(limit, DEFAULT_LIMIT),
            _ => panic!("a search"),
        }
        match read(&request(
            CALL_TOOL,
            json!({"name": "grep", "arguments": {"pattern": "x"}}),
        )) {
            Ok(Asked::Call(inner)) => {
                assert_eq!(inner.name, "grep");
                assert_eq!(inner.arguments.unwrap()["pattern"], "x");
            }
            _ => panic!("a call"),
        }
        for (name, args, says) in [
            (SEARCH_TOOLS, json!({}), "needs \"query\""),
            (SEARCH_TOOLS, json!({"query": "  "}), "needs \"query\""),
            (
                SEARCH_TOOLS,
                json!({"query": "x", "limit": 0}),
                "from 1 to 20",
            ),
            (
                SEARCH_TOOLS,
                json!({"query": "x", "limit": 2.5}),
                "from 1 to 20",
            ),
            (SEARCH_TOOLS, json!({"q": "x"}), "no argument \"q\""),
            (CALL_TOOL, json!({}), "needs \"name\""),
            (
                CALL_TOOL,
                json!({"name": "grep", "arguments": "x"}),
                "must be a JSON object",
            ),
            (CALL_TOOL, json!({"tool": "grep"}), "no argument \"tool\""),
        ] {
            let Err(message) = read(&request(name, args.clone())) else {
                panic!("{name} {args} was accepted");
            };
            assert!(message.contains(says), "{name} {args}: {message}");
        }
    }

    #[test]
    fn the_surface_tools_have_valid_schemas() {
        for tool in [search_tools(), call_tool()] {
            let schema = Value::Object((*tool.input_schema).clone());
            assert!(jsonschema::validator_for(&schema).is_ok(), "{}", tool.name);
        }
    }
}

//! Finding tools by what they do: the ranking behind the search surface's `search_tools`
//! (the server's `server/surface.rs`). A request in plain words ("download a web page as
//! markdown") is matched against each tool's name, title and search hint, tags, category,
//! upstream, description and parameters ([`bm25`], field-weighted), after the tools the
//! request names exactly (`read_text_file`, or an upstream tool's own name without its
//! prefix, `get-sum` for `everything__get-sum`), which always come first.
//!
//! A [`ToolIndex`] holds the documents of one registry, built on its first search (the server
//! keeps one per served set): a search then scores each visible tool's document.

mod bm25;
mod terms;

use std::sync::Arc;

use serde_json::Value;

use crate::registry::ToolRegistry;
use crate::tool::AiTool;
use bm25::{Document, Field, Scorer};
use terms::Terms;

/// The fields of a tool's document, in [`Document::fields`] order, with their weights. A word
/// in the name says most about what a tool does; its title, search hint and tags were written
/// to be searched; the upstream and category name a family; the description is long and
/// general; the parameters' text is longest and least specific.
const FIELDS: &[Field] = &[
    // name
    Field {
        weight: 3.0,
        b: 0.3,
    },
    // title and search hint
    Field {
        weight: 2.0,
        b: 0.3,
    },
    // tags
    Field {
        weight: 2.0,
        b: 0.0,
    },
    // category
    Field {
        weight: 1.0,
        b: 0.0,
    },
    // upstream
    Field {
        weight: 1.5,
        b: 0.0,
    },
    // description
    Field {
        weight: 1.0,
        b: 0.75,
    },
    // parameters: names, descriptions, enum values
    Field {
        weight: 0.6,
        b: 0.75,
    },
];

/// Between an upstream's name and its tool's in a served name (`everything__echo`):
/// `upstreams/naming.rs`'s separator, matched here so a request may name the tool as its
/// server does.
const PREFIX_SEPARATOR: &str = "__";

/// The searchable text of every tool of one registry, built once (a served set is immutable:
/// a reload builds a new registry, and the server a new index for it).
pub struct ToolIndex {
    tools: Vec<Arc<dyn AiTool>>,
    scorer: Scorer,
    terms: Terms,
}

impl std::fmt::Debug for ToolIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolIndex")
            .field("tools", &self.tools.len())
            .finish()
    }
}

impl ToolIndex {
    /// The index of every tool of `registry`.
    pub fn new(registry: &ToolRegistry) -> Self {
        let terms = Terms::new();
        let tools = registry.all();
        let documents = tools
            .iter()
            .map(|tool| document(&terms, registry, tool.as_ref()))
            .collect();
        Self {
            tools,
            scorer: Scorer::new(FIELDS, documents),
            terms,
        }
    }

    /// The tools that `visible` lets through, best match for `query` first, at most `limit`.
    /// Tools no term of the query matches are left out (an empty answer means nothing
    /// matched). A term's rarity is counted over every tool of the registry, so what one
    /// session may not see changes no other tool's rank relative to another.
    pub fn find(
        &self,
        query: &str,
        limit: usize,
        visible: impl Fn(&dyn AiTool) -> bool,
    ) -> Vec<Arc<dyn AiTool>> {
        let query_terms = self.terms.of_request(query);
        let named = named_in(query);
        let mut ranked: Vec<(usize, bool, f64)> = self
            .tools
            .iter()
            .enumerate()
            .filter(|(_, tool)| visible(tool.as_ref()))
            .map(|(i, tool)| {
                let exact = is_named(tool.name(), &named);
                (i, exact, self.scorer.score(i, &query_terms))
            })
            .filter(|&(_, exact, score)| exact || score > 0.0)
            .collect();
        // Exact names first, then by score; ties keep the listing order (the sort is stable).
        ranked.sort_by(|a, b| b.1.cmp(&a.1).then(b.2.total_cmp(&a.2)));
        ranked
            .into_iter()
            .take(limit)
            .map(|(i, _, _)| self.tools[i].clone())
            .collect()
    }
}

/// A tool's searchable text, field by field (see [`FIELDS`]).
fn document(terms: &Terms, registry: &ToolRegistry, tool: &dyn AiTool) -> Document {
    let described = registry.definition(tool.name());
    let description = described.map_or_else(|| tool.description(), |d| d.description.as_str());
    let title_and_hint = [
        tool.title().unwrap_or_default().to_owned(),
        tool.search_hint().unwrap_or_default(),
    ]
    .join(" ");
    let mut parameters = String::new();
    parameter_text(
        &Value::Object((*tool.input_schema()).clone()),
        &mut parameters,
    );
    Document {
        fields: vec![
            terms.of(tool.name()),
            terms.of(&title_and_hint),
            terms.of(&tool.tags().join(" ")),
            terms.of(tool.category().unwrap_or_default()),
            terms.of(tool.upstream().unwrap_or_default()),
            terms.of(description),
            terms.of(&parameters),
        ],
    }
}

/// The parameters' names, descriptions and enum values of an input schema, appended to
/// `out` (nested objects and array items too).
fn parameter_text(schema: &Value, out: &mut String) {
    let Some(object) = schema.as_object() else {
        return;
    };
    if let Some(properties) = object.get("properties").and_then(Value::as_object) {
        for (name, property) in properties {
            out.push(' ');
            out.push_str(name);
            parameter_text(property, out);
        }
    }
    if let Some(description) = object.get("description").and_then(Value::as_str) {
        out.push(' ');
        out.push_str(description);
    }
    for value in object
        .get("enum")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        out.push(' ');
        out.push_str(value);
    }
    if let Some(items) = object.get("items") {
        parameter_text(items, out);
    }
}

/// The words of a query that could be tool names: split on white space and on punctuation
/// other than the `_` and `-` names contain, lowercased.
fn named_in(query: &str) -> Vec<String> {
    query
        .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-'))
        .map(|w| w.trim_matches('-').to_lowercase())
        .filter(|w| !w.is_empty())
        .collect()
}

/// Whether the query names the tool called `name`: as served, or (an upstream's tool) by its
/// own name after the prefix.
fn is_named(name: &str, named: &[String]) -> bool {
    let name = name.to_lowercase();
    let own = name
        .rsplit_once(PREFIX_SEPARATOR)
        .map_or(name.as_str(), |(_, own)| own);
    named.iter().any(|w| *w == name || *w == own)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::{JsonObject, ToolContext, ToolError, ToolOutput};

    /// A tool with a name, description, parameters and an upstream.
    struct Fake {
        name: &'static str,
        description: &'static str,
        schema: Arc<JsonObject>,
        upstream: Option<&'static str>,
        tags: Vec<&'static str>,
    }

    #[async_trait::async_trait]
    impl AiTool for Fake {
        fn name(&self) -> &str {
            self.name
        }
        fn description(&self) -> &str {
            self.description
        }
        fn input_schema(&self) -> Arc<JsonObject> {
            self.schema.clone()
        }
        fn upstream(&self) -> Option<&str> {
            self.upstream
        }
        fn tags(&self) -> Vec<&str> {
            self.tags.clone()
        }
        async fn execute(&self, _: JsonObject, _: &ToolContext) -> Result<ToolOutput, ToolError> {
            Ok(ToolOutput::text(""))
        }
    }

    fn tool(
        name: &'static str,
        description: &'static str,
        parameters: Value,
        upstream: Option<&'static str>,
    ) -> Arc<dyn AiTool> {
        let mut schema = serde_json::Map::new();
        schema.insert("type".into(), Value::from("object"));
        schema.insert("properties".into(), parameters);
        Arc::new(Fake {
            name,
            description,
            schema: Arc::new(schema),
            upstream,
            tags: Vec::new(),
        })
    }

    fn catalog() -> ToolRegistry {
        let mut registry = ToolRegistry::new();
        for t in [
            tool(
                "read_file",
                "Read a text file in the workspace.",
                serde_json::json!({"path": {"type": "string", "description": "The file"}}),
                None,
            ),
            tool(
                "everything__get-sum",
                "Returns the sum of two numbers",
                serde_json::json!({"a": {"type": "number"}, "b": {"type": "number"}}),
                Some("everything"),
            ),
            tool(
                "fetch",
                "Fetches a URL from the internet and extracts its contents as markdown.",
                serde_json::json!({"url": {"type": "string", "description": "URL to fetch"}}),
                Some("fetch"),
            ),
            tool(
                "filesystem__read_file",
                "Read the complete contents of a file as text. DEPRECATED: use read_text_file",
                serde_json::json!({"path": {"type": "string"}}),
                Some("filesystem"),
            ),
            tool(
                "list_allowed_directories",
                "Returns the list of directories this server is allowed to access.",
                serde_json::json!({}),
                Some("filesystem"),
            ),
        ] {
            registry.register(t).unwrap();
        }
        registry
    }

    fn find_tools(
        registry: &ToolRegistry,
        query: &str,
        limit: usize,
        visible: impl Fn(&dyn AiTool) -> bool,
    ) -> Vec<Arc<dyn AiTool>> {
        ToolIndex::new(registry).find(query, limit, visible)
    }

    fn names(query: &str) -> Vec<String> {
        find_tools(&catalog(), query, 10, |_| true)
            .iter()
            .map(|t| t.name().to_owned())
            .collect()
    }

    #[test]
    fn plain_words_find_the_tool_that_does_it() {
        assert_eq!(
            names("add two numbers together, give me the sum")[0],
            "everything__get-sum"
        );
        assert_eq!(names("download this web page as markdown")[0], "fetch");
        assert_eq!(
            names("which folders may the server access")[0],
            "list_allowed_directories"
        );
    }

    #[test]
    fn an_exact_name_comes_first_even_against_better_scores() {
        // "file" and "read" favour the others; the request names this one.
        assert_eq!(
            names("use filesystem__read_file to read a file")[0],
            "filesystem__read_file"
        );
        assert_eq!(names("read_file")[0], "read_file");
        // An upstream's tool by its own name, without the prefix.
        assert_eq!(names("call get-sum please")[0], "everything__get-sum");
        assert_eq!(names("FETCH")[0], "fetch");
    }

    #[test]
    fn nothing_matches_nothing_and_the_limit_holds() {
        assert!(names("zebra choreography").is_empty());
        assert!(names("").is_empty());
        assert_eq!(find_tools(&catalog(), "file", 1, |_| true).len(), 1);
    }

    #[test]
    fn tools_the_session_may_not_see_are_never_found() {
        let found = find_tools(&catalog(), "fetch a url", 10, |t| {
            t.upstream() != Some("fetch")
        });
        assert!(found.iter().all(|t| t.name() != "fetch"));
        let found = find_tools(&catalog(), "fetch", 10, |t| t.name() != "fetch");
        assert!(
            found.iter().all(|t| t.name() != "fetch"),
            "not even by its exact name"
        );
    }

    #[test]
    fn the_upstream_and_tags_are_searched_too() {
        assert!(names("everything").contains(&"everything__get-sum".to_owned()));
        let mut registry = ToolRegistry::new();
        registry
            .register(Arc::new(Fake {
                name: "x1",
                description: "Does a thing.",
                schema: Arc::new(
                    serde_json::json!({"type": "object"})
                        .as_object()
                        .cloned()
                        .unwrap(),
                ),
                upstream: None,
                tags: vec!["kubernetes"],
            }))
            .unwrap();
        assert_eq!(find_tools(&registry, "kubernetes", 5, |_| true).len(), 1);
    }
}

//! One upstream tool as an [`AiTool`]: its definition as the upstream gave it (schemas,
//! title, annotations) under the name toolport serves it by, the upstream's tags and category,
//! and a call that goes to whichever connection to the upstream is live — with the call's
//! progress, cancellation, trace context and time limit.

use std::sync::Arc;

use async_trait::async_trait;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, CancelledNotificationParam,
    ClientRequest, ContentBlock, ResourceContents, ServerResult,
};
use rmcp::service::{PeerRequestOptions, ServiceError};
use serde_json::Value;
use tokio::sync::mpsc;

use super::client::Question;
use super::{Link, oversize};
use crate::schema::JsonObject;
use crate::tool::{AiTool, Annotations, Image, Payload, ToolContext, ToolError, ToolOutput};
use crate::workspace::Workspace;

/// An upstream's tool, served under `served`.
pub(crate) struct UpstreamTool {
    pub(crate) served: String,
    pub(crate) link: Arc<Link>,
    pub(crate) tool: rmcp::model::Tool,
    pub(crate) input_schema: Arc<JsonObject>,
}

impl UpstreamTool {
    /// `tool` of `link`, served as `served`. An input schema without a type gets
    /// `"type": "object"` (every tool's arguments are an object; some servers leave it out).
    pub(crate) fn new(served: String, link: Arc<Link>, tool: rmcp::model::Tool) -> Self {
        let mut input_schema = JsonObject::clone(&tool.input_schema);
        input_schema
            .entry("type")
            .or_insert_with(|| serde_json::Value::String("object".into()));
        Self {
            served,
            link,
            tool,
            input_schema: Arc::new(input_schema),
        }
    }

    fn own_name(&self) -> &str {
        &self.tool.name
    }

    /// Whether its upstream is reached over HTTP.
    fn over_http(&self) -> bool {
        matches!(
            self.link.settings.endpoint,
            super::settings::Endpoint::Http { .. }
        )
    }
}

#[async_trait]
impl AiTool for UpstreamTool {
    fn name(&self) -> &str {
        &self.served
    }

    fn title(&self) -> Option<&str> {
        self.tool
            .title
            .as_deref()
            .or_else(|| self.tool.annotations.as_ref()?.title.as_deref())
    }

    fn description(&self) -> &str {
        self.tool.description.as_deref().unwrap_or_default()
    }

    fn input_schema(&self) -> Arc<JsonObject> {
        self.input_schema.clone()
    }

    fn output_schema(&self) -> Option<Arc<JsonObject>> {
        self.tool.output_schema.clone()
    }

    fn category(&self) -> Option<&str> {
        Some(&self.link.settings.category)
    }

    fn tags(&self) -> Vec<&str> {
        self.link.settings.tags.iter().map(String::as_str).collect()
    }

    fn annotations(&self) -> Annotations {
        let defaults = Annotations::default();
        let Some(given) = &self.tool.annotations else {
            return defaults;
        };
        Annotations {
            read_only: given.read_only_hint.unwrap_or(defaults.read_only),
            destructive: given.destructive_hint.unwrap_or(defaults.destructive),
            idempotent: given.idempotent_hint.unwrap_or(defaults.idempotent),
            open_world: given.open_world_hint.unwrap_or(defaults.open_world),
        }
    }

    fn upstream(&self) -> Option<&str> {
        Some(&self.link.settings.name)
    }

    fn confirmation(&self, args: &JsonObject, _workspace: &Workspace) -> Option<String> {
        self.link.settings.confirms(self.own_name()).then(|| {
            format!(
                "call tool {} of the MCP server {:?} with {}",
                self.own_name(),
                self.link.settings.name,
                serde_json::Value::Object(args.clone())
            )
        })
    }

    async fn execute(&self, args: JsonObject, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let name = &self.link.settings.name;
        let peer = self.link.peer().ok_or_else(|| {
            ToolError::Unavailable(format!(
                "the MCP server {name:?} is not connected ({}); toolport restarts it by itself, try again shortly",
                self.link.why_down()
            ))
        })?;
        let params = CallToolRequestParams::new(self.own_name().to_owned()).with_arguments(args);
        let mut options = PeerRequestOptions::with_timeout(self.link.settings.timeout);
        if let Some(meta) = ctx.traceparent.as_ref().and_then(|traceparent| {
            serde_json::from_value(serde_json::json!({ "traceparent": traceparent })).ok()
        }) {
            options = options.with_meta(meta);
        }
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let handle = peer
            .send_request_with_option(request, options)
            .await
            .map_err(|e| lost(name, &e, self.over_http()))?;
        // Progress and questions for the user go to this call while it runs. A question is
        // asked from this task: it belongs to this call's request (over HTTP it goes out on
        // that request's stream).
        let (questions, mut asked) = match &ctx.elicitor {
            Some(_) => {
                let (tx, rx) = mpsc::channel::<Question>(1);
                (Some(tx), Some(rx))
            }
            None => (None, None),
        };
        let _routed = self.link.routes.add(
            handle.progress_token.clone(),
            ctx.progress.clone(),
            questions,
        );
        let id = handle.id.clone();
        let response = handle.await_response();
        tokio::pin!(response);
        let answer = loop {
            tokio::select! {
                answer = &mut response => break answer,
                Some(question) = next_question(&mut asked) => {
                    let reply = match &ctx.elicitor {
                        Some(elicitor) => elicitor.elicit(question.request).await,
                        None => Err("the client cannot answer questions".into()),
                    };
                    let _ = question.answer.send(reply);
                }
                () = ctx.cancel.cancelled() => {
                    // Tell the upstream to stop working on it (the answer, if any, is dropped).
                    let cancelled = CancelledNotificationParam::new(
                        Some(id),
                        Some("the client cancelled the call".into()),
                    );
                    let _ = peer.notify_cancelled(cancelled).await;
                    return Err(ToolError::Cancelled(format!("the call to {name:?} was cancelled; the server was told to stop it")));
                }
            }
        };
        match answer {
            Ok(ServerResult::CallToolResult(result)) => {
                // At the most toolport reads of a message (the default), the transport has
                // bounded it already: only a lower limit of the operator's is measured.
                let limit = self.link.settings.max_result_bytes;
                if limit < oversize::MAX_MESSAGE_BYTES {
                    let bytes = crate::size::json_size(&result).unwrap_or(usize::MAX);
                    if bytes > limit {
                        return Err(ToolError::ExecutionFailed(oversize::too_large(
                            name,
                            bytes,
                            Some(limit),
                        )));
                    }
                }
                let failed = result.is_error == Some(true);
                let output = output_of(result, ctx.payload);
                if failed {
                    return Err(ToolError::Reported(Box::new(output)));
                }
                Ok(output)
            }
            Ok(other) => Err(ToolError::ExecutionFailed(format!(
                "the MCP server {name:?} answered the call with something other than a tool result ({}); toolport cannot use it",
                answer_kind(&other)
            ))),
            Err(ServiceError::Timeout { timeout }) => Err(ToolError::Timeout(format!(
                "the MCP server {name:?} did not answer within {} (its `timeout`); it was told to stop the call",
                crate::settings::human(timeout)
            ))),
            Err(ServiceError::McpError(error)) => match oversize::too_large_bytes(&error) {
                Some(bytes) => Err(ToolError::ExecutionFailed(oversize::too_large(
                    name, bytes, None,
                ))),
                None => Err(ToolError::ExecutionFailed(format!(
                    "the MCP server {name:?} refused the call: {}",
                    error.message
                ))),
            },
            Err(error) => Err(lost(name, &error, self.over_http())),
        }
    }
}

/// The next question for the user, when the call takes them (else never).
async fn next_question(asked: &mut Option<mpsc::Receiver<Question>>) -> Option<Question> {
    match asked {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}

/// The call failed because the connection did: what the model reads. Over HTTP, rmcp ends a
/// call's answer stream this way too when the answer is larger than it reads
/// ([`oversize::MAX_MESSAGE_BYTES`]), and nothing tells the two apart.
fn lost(name: &str, error: &ServiceError, over_http: bool) -> ToolError {
    let or_too_large = if over_http {
        format!(
            ", or its answer was more than the {} toolport reads of one message",
            crate::settings::human_bytes(oversize::MAX_MESSAGE_BYTES as u64)
        )
    } else {
        String::new()
    };
    ToolError::Unavailable(format!(
        "the connection to the MCP server {name:?} was lost during the call ({error}{or_too_large}); the call may or may not have taken effect. toolport restarts the server by itself: try again shortly"
    ))
}

/// An upstream's result as toolport serves it: its content blocks and `structuredContent` as
/// the server gave them, under the payload rule ([`Payload`]) for the session's client, and
/// the text and images the other formats read.
///
/// An `isError` result is the one exception to "as given" for a client that reads
/// `structuredContent` alone (Claude Code, Codex, VS Code): its model would see the error's
/// structured value and never its message, so for that client the value moves into the text
/// (as JSON after the server's own blocks) and the result goes without `structuredContent`.
fn output_of(result: CallToolResult, payload: Payload) -> ToolOutput {
    let failed = result.is_error == Some(true);
    let mut content = result.content;
    let mut structured = result.structured_content;
    if let Some(value) = &structured {
        if failed && payload == Payload::Structured {
            if !has_json_block(&content, value) {
                content.push(ContentBlock::text(value.to_string()));
            }
            structured = None;
        } else if payload != Payload::Structured && !text_carries(&content, value) {
            content.push(ContentBlock::text(value.to_string()));
        }
    }
    let (text, images) = readable(&content);
    ToolOutput {
        structured,
        text,
        images,
        mcp_content: Some(content),
    }
}

/// The payload rule for a result that has `structuredContent`: a client whose model reads the
/// text ([`Payload::Text`], and [`Payload::Both`] for a client nobody has catalogued) must find
/// the structured value there too, or Claude Desktop, Zed and the like would never see it. The
/// spec asks a server to repeat the value as a JSON text block, and most do; others write it
/// as prose or a listing (toolport itself does). So the text is taken to carry the value when a
/// text block is its JSON (in any layout) or the one string it holds, or, for a value over
/// [`SMALL_VALUE_BYTES`], when the text blocks together are at least half as long as its
/// compact JSON (the same data in another form: a second copy of a large result would only
/// cost the client's context). A small value whose JSON is not there is always added: a line
/// of text ("see the structured output") says nothing of whether it carries the value, and
/// the copy costs little.
fn text_carries(content: &[ContentBlock], structured: &Value) -> bool {
    if has_json_block(content, structured) || is_the_one_string(content, structured) {
        return true;
    }
    let json_len = crate::size::json_size(structured).unwrap_or(0);
    let text_len: usize = content
        .iter()
        .filter_map(|block| block.as_text())
        .map(|t| t.text.len())
        .sum();
    json_len > SMALL_VALUE_BYTES && text_len.saturating_mul(2) >= json_len
}

/// The largest structured value (as compact JSON) the payload rule adds to the text whatever
/// the text is: about 500 tokens, a small price for a model that would otherwise miss it.
const SMALL_VALUE_BYTES: usize = 2048;

/// Whether a text block of `content` is the one string `value` holds (`{"content": "…"}`, as
/// the official filesystem server answers a read): the text is then that value, not a summary
/// of it. A value with more than one field is never taken to be carried this way (a summary
/// field repeated as text says nothing of the rows beside it).
fn is_the_one_string(content: &[ContentBlock], value: &Value) -> bool {
    let mut inner = value;
    while let Value::Object(map) = inner {
        match map.values().next() {
            Some(only) if map.len() == 1 => inner = only,
            _ => return false,
        }
    }
    let Value::String(string) = inner else {
        return false;
    };
    content
        .iter()
        .filter_map(|block| block.as_text())
        .any(|t| &t.text == string)
}

/// Whether a text block of `content` is `value` as JSON (in any layout).
fn has_json_block(content: &[ContentBlock], value: &Value) -> bool {
    content.iter().filter_map(|block| block.as_text()).any(|t| {
        let text = t.text.trim_start();
        (text.starts_with('{') || text.starts_with('['))
            && serde_json::from_str::<Value>(text).is_ok_and(|v| &v == value)
    })
}

/// A result's content as the other formats read it: its text blocks (and a line for each
/// block that is neither text nor an image), and its images.
fn readable(content: &[ContentBlock]) -> (String, Vec<Image>) {
    let mut text = Vec::new();
    let mut images = Vec::new();
    for block in content {
        match block {
            ContentBlock::Text(t) => text.push(t.text.clone()),
            ContentBlock::Image(image) => images.push(Image {
                data: image.data.clone(),
                mime_type: image.mime_type.clone(),
            }),
            ContentBlock::Resource(resource) => match &resource.resource {
                ResourceContents::TextResourceContents {
                    uri, text: body, ..
                } => {
                    text.push(format!("[resource {uri}]\n{body}"));
                }
                ResourceContents::BlobResourceContents { uri, mime_type, .. } => {
                    text.push(format!(
                        "[resource {uri} ({}), binary]",
                        mime_type.as_deref().unwrap_or("no type")
                    ));
                }
                _ => text.push("[a resource]".into()),
            },
            ContentBlock::ResourceLink(link) => {
                text.push(format!("[resource link {} ({})]", link.uri, link.name));
            }
            ContentBlock::Audio(audio) => text.push(format!("[audio ({})]", audio.mime_type)),
            _ => text.push("[content toolport cannot show]".into()),
        }
    }
    (text.join("\n"), images)
}

/// What kind of answer an upstream gave instead of a tool result, for the error.
fn answer_kind(result: &ServerResult) -> &'static str {
    match result {
        ServerResult::InputRequiredResult(_) => "a request for more input",
        ServerResult::CreateTaskResult(_) => "a task",
        _ => "another result",
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn texts(content: &[ContentBlock]) -> Vec<&str> {
        content
            .iter()
            .filter_map(|b| b.as_text().map(|t| t.text.as_str()))
            .collect()
    }

    fn result(texts: &[&str], structured: Value, error: bool) -> CallToolResult {
        let content = texts.iter().map(|t| ContentBlock::text(*t)).collect();
        let mut result = if error {
            CallToolResult::error(content)
        } else {
            CallToolResult::success(content)
        };
        result.structured_content = Some(structured);
        result
    }

    fn served(output: &ToolOutput) -> Vec<&str> {
        texts(output.mcp_content.as_deref().unwrap())
    }

    #[test]
    fn a_structured_value_the_text_does_not_carry_is_added_for_clients_that_read_text() {
        let value = json!({"rows": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]});
        for payload in [Payload::Text, Payload::Both] {
            let output = output_of(result(&["10 rows"], value.clone(), false), payload);
            assert_eq!(served(&output), ["10 rows", &value.to_string()]);
            assert_eq!(output.structured, Some(value.clone()));
        }
        let output = output_of(result(&["10 rows"], value, false), Payload::Structured);
        assert_eq!(served(&output), ["10 rows"]);
    }

    #[test]
    fn text_that_carries_the_value_as_json_or_in_another_form_is_left_alone() {
        let value = json!({"rows": [1, 2], "more": false});
        // Any JSON layout of the same value (pretty-printed, other key order).
        let pretty = "\n{\n  \"more\": false,\n  \"rows\": [1, 2]\n}";
        let output = output_of(result(&["2 rows", pretty], value, false), Payload::Both);
        assert_eq!(served(&output), ["2 rows", pretty]);
        // A large value's data written out in another form (as a toolport upstream renders a
        // file it read): not sent twice.
        let body = "line of a file\n".repeat(400);
        let read = json!({"content": body, "sha256": "ab12"});
        let output = output_of(result(&[&body], read, false), Payload::Text);
        assert_eq!(served(&output), [body.as_str()]);
        // A value that is one string, given as the text (the filesystem server's reads).
        let read = json!({"content": "hello\n"});
        let output = output_of(result(&["hello\n"], read, false), Payload::Both);
        assert_eq!(served(&output), ["hello\n"]);
        // A small value's JSON is added whatever else the text says: a field repeated as text
        // beside others does not count.
        let summary = json!({"summary": "3 rows", "rows": [1, 2, 3]});
        let output = output_of(result(&["3 rows"], summary.clone(), false), Payload::Both);
        assert_eq!(served(&output), ["3 rows", &summary.to_string()]);
        let note = "Query ran; see the structured output for the rows.";
        let rows = json!({"rows": [[1, "a"], [2, "b"]]});
        let output = output_of(result(&[note], rows.clone(), false), Payload::Both);
        assert_eq!(served(&output), [note, &rows.to_string()]);
    }

    #[test]
    fn an_errors_value_moves_into_the_text_for_clients_that_read_structured_content_alone() {
        let value = json!({"code": 429});
        let output = output_of(
            result(&["quota exceeded"], value.clone(), true),
            Payload::Structured,
        );
        assert_eq!(served(&output), ["quota exceeded", r#"{"code":429}"#]);
        assert_eq!(output.structured, None);
        // Not twice when the server already repeats it as JSON.
        let output = output_of(
            result(
                &["quota exceeded", r#"{ "code": 429 }"#],
                value.clone(),
                true,
            ),
            Payload::Structured,
        );
        assert_eq!(served(&output), ["quota exceeded", r#"{ "code": 429 }"#]);
        let output = output_of(
            result(&["quota exceeded"], value.clone(), true),
            Payload::Both,
        );
        assert_eq!(served(&output), ["quota exceeded", r#"{"code":429}"#]);
        assert_eq!(output.structured, Some(value));
    }
}

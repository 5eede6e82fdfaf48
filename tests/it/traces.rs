//! Traces through the real binary: a local OTLP/HTTP receiver (protobuf, as a collector on
//! :4318 speaks it) gets the request spans, in the client's trace when the call carries a
//! `traceparent`; with no endpoint nothing is started, and `OTEL_SDK_DISABLED` sends nothing.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;

use axum::body::Bytes;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::trace::v1::{Span, span::SpanKind, status::StatusCode};
use prost::Message;
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, RequestParamsMeta};
use serde_json::{Value, json};
use tokio::process::Command;
use tokio::sync::mpsc;

use crate::common::*;

/// The client's trace: its trace id and the id of its span that makes the call.
const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT_SPAN_ID: &str = "00f067aa0ba902b7";

/// How often the exporter sends in the tests that read spans while the server runs (the
/// default is 5 s).
const SCHEDULE_DELAY_MS: &str = "50";

/// One span as the receiver got it, with the `service.name` of its resource.
#[derive(Debug)]
struct Received {
    service: Option<String>,
    span: Span,
}

/// A local OTLP/HTTP receiver: every span of every export request, in order.
struct Receiver {
    addr: SocketAddr,
    spans: mpsc::UnboundedReceiver<Result<Received, String>>,
}

impl Receiver {
    async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (tx, spans) = mpsc::unbounded_channel();
        let export = move |body: Bytes| {
            let tx = tx.clone();
            async move {
                match ExportTraceServiceRequest::decode(body) {
                    Ok(request) => {
                        for resource_spans in request.resource_spans {
                            let service = resource_spans
                                .resource
                                .as_ref()
                                .and_then(|r| string_attribute(&r.attributes, "service.name"));
                            for scope_spans in resource_spans.scope_spans {
                                for span in scope_spans.spans {
                                    let service = service.clone();
                                    let _ = tx.send(Ok(Received { service, span }));
                                }
                            }
                        }
                    }
                    Err(error) => {
                        let _ = tx.send(Err(format!("not an ExportTraceServiceRequest: {error}")));
                    }
                }
                // An empty ExportTraceServiceResponse: everything accepted.
                (
                    [(axum::http::header::CONTENT_TYPE, "application/x-protobuf")],
                    Vec::<u8>::new(),
                )
            }
        };
        let app = axum::Router::new().route("/v1/traces", axum::routing::post(export));
        tokio::spawn(async move { axum::serve(listener, app).await });
        Self { addr, spans }
    }

    fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// One span of each of `names`, in that order, whatever order they arrive in (others
    /// are skipped).
    async fn spans_named(&mut self, names: &[&str]) -> Vec<Received> {
        let mut found: Vec<Option<Received>> = names.iter().map(|_| None).collect();
        while found.iter().any(Option::is_none) {
            let received = within(self.spans.recv())
                .await
                .expect("the receiver stopped");
            let received = received.unwrap_or_else(|error| panic!("{error}"));
            if let Some(slot) = names.iter().position(|n| *n == received.span.name) {
                found[slot].get_or_insert(received);
            }
        }
        found.into_iter().flatten().collect()
    }

    /// The next span named `name` (others are skipped: the initialize span, list calls).
    async fn span_named(&mut self, name: &str) -> Received {
        within(async {
            loop {
                match self.spans.recv().await {
                    Some(Ok(received)) if received.span.name == name => return received,
                    Some(Ok(_)) => {}
                    Some(Err(error)) => panic!("{error}"),
                    None => panic!("the receiver stopped"),
                }
            }
        })
        .await
    }
}

/// A string attribute's value (a number as its decimal text).
fn string_attribute(attributes: &[KeyValue], key: &str) -> Option<String> {
    let value = attributes.iter().find(|a| a.key == key)?.value.as_ref()?;
    text_of(value)
}

fn text_of(value: &AnyValue) -> Option<String> {
    match value.value.as_ref()? {
        any_value::Value::StringValue(s) => Some(s.clone()),
        any_value::Value::IntValue(i) => Some(i.to_string()),
        any_value::Value::BoolValue(b) => Some(b.to_string()),
        other => Some(format!("{other:?}")),
    }
}

/// Every attribute of a span, as text.
fn attributes(span: &Span) -> BTreeMap<String, String> {
    span.attributes
        .iter()
        .filter_map(|a| Some((a.key.clone(), text_of(a.value.as_ref()?)?)))
        .collect()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// What a test checks of a span: its place in the trace, name, kind, status and the
/// attributes the conventions define (session and request ids vary: checked apart).
fn summary(received: &Received) -> Value {
    let span = &received.span;
    let mut attributes = attributes(span);
    let session = attributes.remove("mcp.session.id");
    let request = attributes.remove("jsonrpc.request.id");
    assert!(
        session.is_some_and(|s| s.len() == 16 && s.bytes().all(|b| b.is_ascii_hexdigit())),
        "mcp.session.id is the session's random hex id: {span:?}"
    );
    assert!(
        request.is_some_and(|r| r.parse::<u64>().is_ok()),
        "jsonrpc.request.id: {span:?}"
    );
    json!({
        "service.name": received.service,
        "trace_id": hex(&span.trace_id),
        "parent_span_id": hex(&span.parent_span_id),
        "trace_state": span.trace_state,
        "name": span.name,
        "kind": SpanKind::try_from(span.kind).map(|k| k.as_str_name()).unwrap_or("?"),
        "status": span.status.as_ref().map(|s| StatusCode::try_from(s.code).map(|c| c.as_str_name()).unwrap_or("?")),
        "attributes": attributes,
    })
}

/// The server, isolated from the developer's own OpenTelemetry settings, with `env` set.
fn traced_command(root: &Path, env: &[(&str, &str)]) -> Command {
    let mut cmd = command(root, &[]);
    for (key, _) in std::env::vars() {
        if key.starts_with("OTEL_") {
            cmd.env_remove(key);
        }
    }
    cmd.envs(env.iter().copied());
    cmd
}

/// A `read_file` call in the client's trace.
fn read_file_in_trace(path: &str) -> CallToolRequestParams {
    let mut params = CallToolRequestParams::new("read_file")
        .with_arguments(json!({"path": path}).as_object().cloned().unwrap());
    params.set_traceparent(&format!("00-{TRACE_ID}-{PARENT_SPAN_ID}-01"));
    params.set_tracestate("vendor=1");
    params
}

#[tokio::test]
async fn a_call_with_a_traceparent_arrives_as_a_span_of_that_trace() {
    let (_d, root) = tempdir();
    std::fs::write(root.join("a.txt"), "hello\n").unwrap();
    let mut receiver = Receiver::start().await;
    let endpoint = receiver.endpoint();
    // The default schedule (5 s): the span is sent when the server stops, which is the
    // flush this test checks along with the span.
    let cmd = traced_command(
        &root,
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint),
            ("OTEL_SERVICE_NAME", "toolport-it"),
        ],
    );
    let client = connect_command(cmd, TestClient::default()).await;
    let result = within(client.call_tool(read_file_in_trace("a.txt")))
        .await
        .unwrap();
    ok(&result);
    // Closing stdin stops the server, which sends what it has queued before it exits.
    within(client.cancel()).await.unwrap();

    let received = receiver.span_named("tools/call read_file").await;
    pretty_assertions::assert_eq!(
        summary(&received),
        json!({
            "service.name": "toolport-it",
            "trace_id": TRACE_ID,
            "parent_span_id": PARENT_SPAN_ID,
            "trace_state": "vendor=1",
            "name": "tools/call read_file",
            "kind": "SPAN_KIND_SERVER",
            "status": "STATUS_CODE_UNSET",
            "attributes": {
                "mcp.method.name": "tools/call",
                "gen_ai.tool.name": "read_file",
                "gen_ai.operation.name": "execute_tool",
                "mcp.protocol.version": "2025-11-25",
                "network.transport": "pipe",
            },
        })
    );
}

#[tokio::test]
async fn a_call_to_an_upstream_continues_the_trace_into_it() {
    let (_d, root) = tempdir();
    let inner = root.join("inner");
    std::fs::create_dir_all(&inner).unwrap();
    std::fs::write(inner.join("a.txt"), "hello\n").unwrap();
    std::fs::write(inner.join("inner.toml"), "").unwrap();
    let mut receiver = Receiver::start().await;
    let endpoint = receiver.endpoint();
    // The upstream, a toolport exporting its own spans as "inner".
    let toml = format!(
        "[[upstreams]]\nname = \"inner\"\ncommand = '{}'\nargs = [\"--root\", '{}', \"--config\", '{}']\nenv = {{ XDG_CONFIG_HOME = '{}', OTEL_EXPORTER_OTLP_ENDPOINT = '{endpoint}', OTEL_SERVICE_NAME = \"inner\" }}\nallow_tools = [\"read_file\"]\n",
        bin(),
        inner.display(),
        inner.join("inner.toml").display(),
        inner.join(".no-config").display(),
    );
    let config = config_file(&root, &toml);
    let mut cmd = traced_command(
        &root,
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint),
            ("OTEL_SERVICE_NAME", "outer"),
        ],
    );
    cmd.arg("--config").arg(&config);
    let client = connect_command(cmd, TestClient::default()).await;
    let mut params = read_file_in_trace("a.txt");
    params.name = "inner__read_file".into();
    ok(&within(client.call_tool(params)).await.unwrap());
    // Closing stdin stops the server, which stops its upstream: both send what they queued.
    within(client.cancel()).await.unwrap();

    // The upstream stops (and exports) first: take both spans in whatever order they come.
    let mut spans = receiver
        .spans_named(&["tools/call inner__read_file", "tools/call read_file"])
        .await;
    let inner = spans.pop().unwrap();
    let outer = spans.pop().unwrap();
    assert_eq!(outer.service.as_deref(), Some("outer"));
    assert_eq!(inner.service.as_deref(), Some("inner"));
    // One trace: the client's, then toolport's span, then the upstream's under it.
    assert_eq!(hex(&outer.span.trace_id), TRACE_ID);
    assert_eq!(hex(&outer.span.parent_span_id), PARENT_SPAN_ID);
    assert_eq!(hex(&inner.span.trace_id), TRACE_ID);
    assert_eq!(
        hex(&inner.span.parent_span_id),
        hex(&outer.span.span_id),
        "the upstream's span is a child of toolport's"
    );
}

#[tokio::test]
async fn failed_calls_carry_error_type_while_the_server_runs() {
    let (_d, root) = tempdir();
    let mut receiver = Receiver::start().await;
    let endpoint = receiver.endpoint();
    let cmd = traced_command(
        &root,
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint),
            ("OTEL_BSP_SCHEDULE_DELAY", SCHEDULE_DELAY_MS),
        ],
    );
    let client = connect_command(cmd, TestClient::default()).await;

    // An isError result: tool_error.
    err(&within(client.call_tool(read_file_in_trace("missing.txt")))
        .await
        .unwrap());
    let received = receiver.span_named("tools/call read_file").await;
    let failed = summary(&received);
    pretty_assertions::assert_eq!(
        (
            &failed["service.name"],
            &failed["trace_id"],
            &failed["status"],
            &failed["attributes"]["error.type"]
        ),
        (
            &json!("toolport"),
            &json!(TRACE_ID),
            &json!("STATUS_CODE_ERROR"),
            &json!("tool_error")
        )
    );

    // A JSON-RPC error (no such tool): its code, in a trace of its own.
    let unknown = within(client.call_tool(CallToolRequestParams::new("no_such_tool_x1"))).await;
    assert!(unknown.is_err());
    let received = receiver.span_named("tools/call no_such_tool_x1").await;
    let unknown = summary(&received);
    assert_ne!(unknown["trace_id"], json!(TRACE_ID));
    pretty_assertions::assert_eq!(
        (
            &unknown["parent_span_id"],
            &unknown["status"],
            &unknown["attributes"]["error.type"],
            &unknown["attributes"]["gen_ai.tool.name"]
        ),
        (
            &json!(""),
            &json!("STATUS_CODE_ERROR"),
            &json!("-32602"),
            &json!("no_such_tool_x1")
        )
    );
    within(client.cancel()).await.unwrap();
}

/// The names of a process's threads (`/proc/<pid>/task/*/comm`, 15 characters at most).
fn threads(pid: u32) -> Vec<String> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("comm")).ok())
        .map(|name| name.trim_end().to_owned())
        .collect()
}

/// Whether a thread of the exporter runs: the batch processor's, or the blocking HTTP
/// client's (`OpenTelemetry.Traces.BatchProcessor`, `reqwest-internal-sync-runtime`).
fn exporter_threads(pid: u32) -> Vec<String> {
    threads(pid)
        .into_iter()
        .filter(|t| t.starts_with("OpenTelemetry") || t.starts_with("reqwest-intern"))
        .collect()
}

#[tokio::test]
async fn without_an_endpoint_no_exporter_runs_and_disabled_sends_nothing() {
    let (_d, root) = tempdir();
    std::fs::write(root.join("a.txt"), "hello\n").unwrap();
    let mut receiver = Receiver::start().await;
    let endpoint = receiver.endpoint();

    // Everything but an endpoint: no exporter thread, no HTTP client.
    let mut pids = Vec::new();
    for env in [
        &[
            ("OTEL_SERVICE_NAME", "toolport-it"),
            ("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer%20x"),
        ][..],
        // An endpoint, and the switch that turns every signal off.
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint),
            ("OTEL_SDK_DISABLED", "true"),
        ],
        // The control: the same check finds the exporter when it runs.
        &[("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)],
    ] {
        let transport = spawn_server(traced_command(&root, env));
        let pid = transport.id().unwrap();
        let client = within(TestClient::default().serve(transport))
            .await
            .unwrap();
        ok(&within(client.call_tool(read_file_in_trace("a.txt")))
            .await
            .unwrap());
        pids.push((pid, exporter_threads(pid)));
        within(client.cancel()).await.unwrap();
    }
    assert_eq!(pids[0].1, Vec::<String>::new(), "no endpoint");
    assert_eq!(pids[1].1, Vec::<String>::new(), "OTEL_SDK_DISABLED=true");
    assert!(
        pids[2].1.iter().any(|t| t.starts_with("OpenTelemetry")),
        "the exporter's thread is seen when it runs: {:?}",
        threads(pids[2].0)
    );
    // Only the control server sent anything; each sent what it had before it exited.
    let mut senders = Vec::new();
    while let Ok(received) = receiver.spans.try_recv() {
        senders.push(received.unwrap().span.name);
    }
    assert!(
        senders.contains(&"tools/call read_file".to_owned()),
        "the control server's call: {senders:?}"
    );
    assert!(
        senders
            .iter()
            .filter(|name| *name == "tools/call read_file")
            .count()
            == 1,
        "one call span, from the control server only: {senders:?}"
    );
}

#[tokio::test]
async fn toolport_config_shows_the_trace_export_without_secrets() {
    let (_d, root) = tempdir();
    let run = |env: &[(&str, &str)]| {
        let mut cmd = std::process::Command::new(bin());
        cmd.arg("config").current_dir(&root);
        for (key, _) in std::env::vars() {
            if key.starts_with("OTEL_") || key.starts_with("TOOLPORT_") {
                cmd.env_remove(key);
            }
        }
        cmd.env("XDG_CONFIG_HOME", root.join(".no-config"))
            .envs(env.iter().copied());
        let out = cmd.output().unwrap();
        assert!(out.status.success(), "{out:?}");
        let text = String::from_utf8(out.stdout).unwrap();
        let start = text.find("[telemetry]").expect("a [telemetry] section");
        text[start..]
            .lines()
            .take_while(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(run(&[]), "[telemetry]\nservice_name = \"toolport\"");
    assert_eq!(
        run(&[
            (
                "OTEL_EXPORTER_OTLP_ENDPOINT",
                "https://user:pa55word@collector:4318"
            ),
            ("OTEL_EXPORTER_OTLP_HEADERS", "x-api-key=s3cret-key"),
            ("OTEL_SERVICE_NAME", "agent-tools"),
        ]),
        "[telemetry]\nservice_name = \"agent-tools\""
    );
    let mut cmd = std::process::Command::new(bin());
    cmd.arg("config")
        .current_dir(&root)
        .env("XDG_CONFIG_HOME", root.join(".no-config"))
        .env(
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            "https://user:pa55word@collector:4318",
        )
        .env("OTEL_EXPORTER_OTLP_HEADERS", "x-api-key=s3cret-key");
    let text = String::from_utf8(cmd.output().unwrap().stdout).unwrap();
    for wanted in [
        "#   telemetry.otlp_traces_endpoint: https://***@collector:4318/v1/traces (it holds credentials: never printed)\n",
        "#   telemetry headers: x-api-key, from OTEL_EXPORTER_OTLP_(TRACES_)HEADERS (values never printed)\n",
    ] {
        assert!(text.contains(wanted), "{wanted}: {text}");
    }
    assert!(
        !text.contains("pa55word") && !text.contains("s3cret-key") && !text.contains("user:"),
        "{text}"
    );
}

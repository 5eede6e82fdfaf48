//! The examples, run as the programs they are. `examples/agent_loop` talks to a scripted
//! chat-completions server on 127.0.0.1 (no internet): each request is answered with the next
//! reply of a script (`tool_calls`, then a final message) and recorded, so a test can check
//! what the loop sent back to the model. `examples/custom_tool` is run and its output read.
//!
//! `cargo test` builds the examples (as the programs, into `target/debug/examples`); with a
//! target filter such as `--test agent_loop` it does not, so run `cargo build -p
//! toolport-tools --examples` first (the tests say so when a binary is missing, but cannot
//! tell a stale one).

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::post;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
use tokio::time::timeout;

/// The longest an example may take (it starts the built-in tools and makes a few requests to
/// a local server: seconds, even on a loaded machine).
const RUN_LIMIT: Duration = Duration::from_secs(120);
/// The longest a local step (bind, write to a pipe) may take.
const STEP_LIMIT: Duration = Duration::from_secs(10);

/// One answer of the scripted model.
#[derive(Clone)]
enum Reply {
    /// `choices[0].message` of a 200 answer.
    Message(Value),
    /// An error status with this body.
    Fail(StatusCode, &'static str),
}

/// The script and what the server was sent.
struct Script {
    replies: Vec<Reply>,
    requests: Mutex<Vec<Value>>,
}

/// A running scripted chat server.
struct ChatServer {
    /// The base URL (`…/v1`), as `OPENAI_BASE_URL` takes it.
    base_url: String,
    script: Arc<Script>,
}

impl ChatServer {
    /// Serve `replies` in order; after the last, the last again (a model that never stops).
    async fn start(replies: Vec<Reply>) -> Self {
        let script = Arc::new(Script {
            replies,
            requests: Mutex::new(Vec::new()),
        });
        let app = axum::Router::new()
            .route("/v1/chat/completions", post(completions))
            .with_state(script.clone());
        let listener = timeout(STEP_LIMIT, tokio::net::TcpListener::bind("127.0.0.1:0"))
            .await
            .expect("bind in time")
            .expect("bind 127.0.0.1");
        let address = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        Self {
            base_url: format!("http://{address}/v1"),
            script,
        }
    }

    /// Every request body received, in order.
    fn requests(&self) -> Vec<Value> {
        self.script.requests.lock().unwrap().clone()
    }
}

async fn completions(
    State(script): State<Arc<Script>>,
    Json(body): Json<Value>,
) -> (StatusCode, String) {
    let turn = {
        let mut requests = script.requests.lock().unwrap();
        requests.push(body);
        requests.len() - 1
    };
    let reply = script.replies[turn.min(script.replies.len() - 1)].clone();
    match reply {
        Reply::Message(message) => {
            let finish = if message.get("tool_calls").is_some() {
                "tool_calls"
            } else {
                "stop"
            };
            let answer = json!({
                "id": format!("chatcmpl-{turn}"),
                "object": "chat.completion",
                "model": "scripted",
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            });
            (StatusCode::OK, answer.to_string())
        }
        Reply::Fail(status, body) => (status, body.to_owned()),
    }
}

/// The model asks for these calls: `(id, tool, arguments)`.
fn calls(calls: &[(&str, &str, Value)]) -> Reply {
    let tool_calls: Vec<Value> = calls
        .iter()
        .map(|(id, name, args)| {
            json!({
                "id": id,
                "type": "function",
                "function": {"name": name, "arguments": args.to_string()},
            })
        })
        .collect();
    Reply::Message(json!({"role": "assistant", "content": null, "tool_calls": tool_calls}))
}

/// The model answers in text.
fn answer(text: &str) -> Reply {
    Reply::Message(json!({"role": "assistant", "content": text}))
}

/// A built example next to this test: `target/debug/deps/agent_loop-HASH` →
/// `target/debug/examples/NAME`.
fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let path = exe
        .parent()
        .and_then(Path::parent)
        .map(|dir| {
            dir.join("examples")
                .join(format!("{name}{}", std::env::consts::EXE_SUFFIX))
        })
        .unwrap();
    assert!(
        path.is_file(),
        "the example binary {} is missing: run `cargo test` without a target filter (it builds the examples) or `cargo build -p toolport-tools --examples` first",
        path.display()
    );
    path
}

/// Run `examples/agent_loop` against `server` in `root` with these flags and this stdin.
async fn run_agent(server: &ChatServer, root: &Path, flags: &[&str], stdin: &str) -> Output {
    let mut child = tokio::process::Command::new(example("agent_loop"))
        .args(flags)
        .arg("Do the task")
        .current_dir(root)
        .env("OPENAI_BASE_URL", &server.base_url)
        .env("OPENAI_MODEL", "scripted")
        .env("TOOLPORT_ROOT", root)
        .env_remove("OPENAI_API_KEY")
        .env_remove("AGENT_MAX_ITERATIONS")
        .env_remove("AGENT_MAX_TOOL_CALLS_PER_TURN")
        .env_remove("AGENT_CONFIRM_WRITES")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut pipe = child.stdin.take().unwrap();
    timeout(STEP_LIMIT, pipe.write_all(stdin.as_bytes()))
        .await
        .expect("stdin written in time")
        .unwrap();
    drop(pipe);
    timeout(RUN_LIMIT, child.wait_with_output())
        .await
        .expect("agent_loop finished in time")
        .unwrap()
}

/// The `role: tool` messages of a request, as `(tool_call_id, content)`.
fn tool_messages(request: &Value) -> Vec<(String, String)> {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            (
                m["tool_call_id"].as_str().unwrap().to_owned(),
                m["content"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[tokio::test]
async fn a_file_the_model_reads_reaches_it_and_its_answer_is_printed() {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("notes.txt"), "the launch code is 4711\n").unwrap();
    let server = ChatServer::start(vec![
        calls(&[("call_1", "read_file", json!({"path": "notes.txt"}))]),
        answer("The code is 4711."),
    ])
    .await;

    let out = run_agent(&server, root.path(), &[], "").await;

    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), "The code is 4711.");
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let first = &requests[0];
    assert_eq!(first["model"], "scripted");
    assert!(
        first["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["type"] == "function" && t["function"]["name"] == "read_file"),
        "the tools go in OpenAI form: {}",
        first["tools"]
    );
    assert_eq!(
        first["messages"].as_array().unwrap().last().unwrap()["content"],
        "Do the task"
    );
    let results = tool_messages(&requests[1]);
    assert_eq!(results.len(), 1, "{results:?}");
    assert_eq!(results[0].0, "call_1");
    assert!(
        results[0].1.contains("the launch code is 4711"),
        "{}",
        results[0].1
    );
    // The assistant turn with its calls precedes the result, as the API requires.
    let messages = requests[1]["messages"].as_array().unwrap();
    let assistant = &messages[messages.len() - 2];
    assert_eq!(assistant["role"], "assistant");
    assert_eq!(assistant["tool_calls"][0]["id"], "call_1");
}

#[tokio::test]
async fn a_model_that_never_stops_calling_tools_is_stopped_by_max_iterations() {
    let root = tempfile::tempdir().unwrap();
    let server = ChatServer::start(vec![calls(&[(
        "call_again",
        "list_directory",
        json!({"path": "."}),
    )])])
    .await;

    let out = run_agent(&server, root.path(), &["--max-iterations", "3"], "").await;

    assert_eq!(out.status.code(), Some(3), "stderr: {}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("still calling tools after 3 requests"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(text(&out.stdout), "", "no answer is printed");
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn a_declined_confirmation_reaches_the_model_as_a_refusal_and_nothing_runs() {
    let root = tempfile::tempdir().unwrap();
    let victim = root.path().join("victim");
    std::fs::create_dir(&victim).unwrap();
    std::fs::write(victim.join("keep.txt"), "precious").unwrap();
    let server = ChatServer::start(vec![
        calls(&[(
            "call_rm",
            "execute_command",
            json!({"command": "rm", "args": ["-rf", "victim"]}),
        )]),
        answer("Understood, I left it alone."),
    ])
    .await;

    let out = run_agent(&server, root.path(), &[], "n\n").await;

    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("Allow? [y/N]"),
        "the question is asked on the terminal: {}",
        text(&out.stderr)
    );
    assert_eq!(text(&out.stdout).trim(), "Understood, I left it alone.");
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let results = tool_messages(&requests[1]);
    assert_eq!(results.len(), 1, "{results:?}");
    assert_eq!(results[0].0, "call_rm");
    assert!(
        results[0].1.contains("the user declined this call"),
        "{}",
        results[0].1
    );
    assert!(victim.join("keep.txt").is_file(), "the command did not run");
}

#[tokio::test]
async fn calls_beyond_max_tool_calls_per_turn_are_answered_as_not_run() {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("a.txt"), "alpha\n").unwrap();
    std::fs::write(root.path().join("b.txt"), "bravo\n").unwrap();
    let server = ChatServer::start(vec![
        calls(&[
            ("call_a", "read_file", json!({"path": "a.txt"})),
            ("call_b", "read_file", json!({"path": "b.txt"})),
            ("call_c", "read_file", json!({"path": "a.txt"})),
        ]),
        answer("done"),
    ])
    .await;

    let out = run_agent(&server, root.path(), &["--max-tool-calls", "2"], "").await;

    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    let results = tool_messages(&server.requests()[1]);
    let ids: Vec<&str> = results.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(
        ids,
        ["call_a", "call_b", "call_c"],
        "every call is answered"
    );
    assert!(results[0].1.contains("alpha"), "{}", results[0].1);
    assert!(results[1].1.contains("bravo"), "{}", results[1].1);
    assert!(
        results[2].1.starts_with("not run: at most 2 tool calls"),
        "{}",
        results[2].1
    );
}

#[tokio::test]
async fn ctrl_c_cancels_the_running_command_and_stops_the_loop() {
    let root = tempfile::tempdir().unwrap();
    let server = ChatServer::start(vec![
        calls(&[(
            "call_sleep",
            "execute_command",
            json!({"command": "sleep", "args": ["60"], "yield_after": 0}),
        )]),
        answer("never asked for"),
    ])
    .await;
    let started = std::time::Instant::now();
    let mut child = tokio::process::Command::new(example("agent_loop"))
        .arg("Wait a minute")
        .current_dir(root.path())
        .env("OPENAI_BASE_URL", &server.base_url)
        .env("OPENAI_MODEL", "scripted")
        .env("TOOLPORT_ROOT", root.path())
        .env_remove("OPENAI_API_KEY")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    // Wait for the call to start (the loop says so on stderr), then press Ctrl-C.
    let mut stderr = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let mut seen = Vec::new();
    loop {
        let line = timeout(RUN_LIMIT, stderr.next_line())
            .await
            .expect("a progress line in time")
            .unwrap()
            .unwrap_or_else(|| panic!("stderr ended before the call started: {seen:?}"));
        let started_call = line.contains("-> execute_command");
        seen.push(line);
        if started_call {
            break;
        }
    }
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id().unwrap()).unwrap());
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    let mut rest = String::new();
    while let Some(line) = timeout(RUN_LIMIT, stderr.next_line())
        .await
        .expect("stderr in time")
        .unwrap()
    {
        rest.push_str(&line);
        rest.push('\n');
    }
    let out = timeout(RUN_LIMIT, child.wait_with_output())
        .await
        .expect("agent_loop finished in time")
        .unwrap();

    assert_eq!(out.status.code(), Some(130), "stderr: {rest}");
    assert!(rest.contains("cancelled (Ctrl-C)"), "{rest}");
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "the 60 s command was cancelled, not waited for ({:?})",
        started.elapsed()
    );
    assert_eq!(server.requests().len(), 1, "the loop stopped");
    assert_eq!(text(&out.stdout), "");
}

#[tokio::test]
async fn an_endpoint_error_is_reported_with_its_status_and_body() {
    let root = tempfile::tempdir().unwrap();
    let server = ChatServer::start(vec![Reply::Fail(
        StatusCode::UNAUTHORIZED,
        r#"{"error":{"message":"No auth credentials found"}}"#,
    )])
    .await;

    let out = run_agent(&server, root.path(), &[], "").await;

    assert_eq!(out.status.code(), Some(1), "stderr: {}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("401"), "{stderr}");
    assert!(stderr.contains("No auth credentials found"), "{stderr}");
}

#[tokio::test]
async fn the_custom_tool_example_registers_and_calls_its_tool() {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("poem.txt"), "roses are red\n").unwrap();
    let run = tokio::process::Command::new(example("custom_tool"))
        .arg("poem.txt")
        .current_dir(root.path())
        .env("TOOLPORT_ROOT", root.path())
        .kill_on_drop(true)
        .output();
    let out = timeout(RUN_LIMIT, run)
        .await
        .expect("custom_tool finished in time")
        .unwrap();

    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains(r#""name": "count_words""#), "{stdout}");
    assert!(
        stdout.contains("count_words: 5 words, 2 lines, 25 characters"),
        "{stdout}"
    );
    assert!(stdout.contains("roses are red"), "{stdout}");
    assert!(
        stdout.contains(r#""text" is a required property"#),
        "{stdout}"
    );
}

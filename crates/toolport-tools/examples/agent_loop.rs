//! A tool-calling agent loop against any OpenAI-compatible chat endpoint (OpenRouter, Ollama,
//! OpenAI, vLLM, llama.cpp's server …), with toolport's built-in tools.
//!
//! The loop is the one every agent has: send the conversation and the tool definitions to
//! `{base}/chat/completions`; when the model answers with `tool_calls`, run each through the
//! [`ToolRegistry`](toolport_tools::ToolRegistry) and append its result as a `role: "tool"`
//! message (a failed call's error too: the model reads it and tries something else); when it
//! answers with text, print that and stop. Two limits keep a model from running away:
//! `--max-iterations` (requests to the model) and `--max-tool-calls` (calls run per turn; the
//! model is told which ones were not run). Risky calls — a command the policy marks, such as
//! `rm -rf`, or any write with `--confirm-writes` — are asked about on the terminal (y/N).
//! Ctrl-C cancels the running call (its command is killed) and stops the loop.
//!
//! The tools work inside one root: the current directory, or `--root` / `TOOLPORT_ROOT`.
//!
//! # Running it
//!
//! OpenRouter (the default base URL):
//!
//! ```text
//! export OPENAI_API_KEY=sk-or-...            # your OpenRouter key
//! export OPENAI_MODEL=openai/gpt-4o-mini     # any model with tool calling
//! cargo run -p toolport-tools --example agent_loop -- "What does this crate do? Read its README."
//! ```
//!
//! Ollama (no key; a model with tool support, e.g. `ollama pull qwen3`):
//!
//! ```text
//! export OPENAI_BASE_URL=http://localhost:11434/v1
//! export OPENAI_MODEL=qwen3
//! cargo run -p toolport-tools --example agent_loop -- "List the Rust files here and count them"
//! ```
//!
//! OpenAI: `OPENAI_BASE_URL=https://api.openai.com/v1`; vLLM: `http://localhost:8000/v1`.
//!
//! # Settings
//!
//! | flag | environment | default |
//! |---|---|---|
//! | `--base-url` | `OPENAI_BASE_URL` | `https://openrouter.ai/api/v1` |
//! | `--model` | `OPENAI_MODEL` | (required) |
//! | — | `OPENAI_API_KEY` | none (no `Authorization` header) |
//! | `--root` | `TOOLPORT_ROOT` | the current directory |
//! | `--max-iterations` | `AGENT_MAX_ITERATIONS` | 10 |
//! | `--max-tool-calls` | `AGENT_MAX_TOOL_CALLS_PER_TURN` | 8 |
//! | `--confirm-writes` | `AGENT_CONFIRM_WRITES` | off (writes run without asking) |
//!
//! The final answer goes to stdout, progress to stderr. Exit status: 0 when the model
//! answered; 1 when the endpoint failed (the message has the HTTP status and the start of the
//! body) or the tools could not be built; 2 for a bad command line; 3 when the model was still
//! calling tools after `--max-iterations` requests; 130 after Ctrl-C.

// The answer is this program's output.
#![allow(clippy::print_stdout)]

use std::ffi::OsString;
use std::io::BufRead;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use toolport_tools::{
    Confirmation, Confirmer, JsonObject, Settings, ToolContext, ToolFormat, Toolbox,
};

/// Exit status when the model was still calling tools at the iteration limit.
const EXIT_ITERATION_LIMIT: u8 = 3;
/// Exit status after Ctrl-C (128 + SIGINT, as a shell reports it).
const EXIT_CANCELLED: u8 = 130;
/// How much of an endpoint's error body to show: enough for its message, not a whole page.
const ERROR_BODY_EXCERPT: usize = 600;
/// How long one chat request may take: local models on a CPU answer slowly.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(300);
/// What the model is told about its situation.
const SYSTEM_PROMPT: &str = "You are a helpful assistant working in a project directory. Use the tools to look at files and run commands when that helps; paths are relative to the project root. When you are done, answer in plain text.";

/// The command line (each flag also reads its environment variable).
#[derive(Parser)]
#[command(
    about = "A tool-calling agent loop with toolport's tools, against any OpenAI-compatible chat endpoint"
)]
struct Args {
    /// The endpoint's base URL; requests go to `{base}/chat/completions`.
    #[arg(
        long,
        env = "OPENAI_BASE_URL",
        default_value = "https://openrouter.ai/api/v1"
    )]
    base_url: String,
    /// The model, as the endpoint names it (e.g. `openai/gpt-4o-mini` on OpenRouter).
    #[arg(long, env = "OPENAI_MODEL")]
    model: String,
    /// The bearer token; none for a local endpoint. Only read from the environment, so it is
    /// not in the shell history or the process list.
    #[arg(skip = std::env::var("OPENAI_API_KEY").ok().filter(|k| !k.is_empty()))]
    api_key: Option<String>,
    /// The directory the tools work in (default: the current directory).
    #[arg(long, env = "TOOLPORT_ROOT")]
    root: Option<PathBuf>,
    /// Requests to the model before giving up on a model that keeps calling tools.
    #[arg(long, env = "AGENT_MAX_ITERATIONS", default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..))]
    max_iterations: u32,
    /// Tool calls run per model turn; further calls in the same turn are answered "not run".
    #[arg(long, env = "AGENT_MAX_TOOL_CALLS_PER_TURN", default_value_t = 8)]
    max_tool_calls: usize,
    /// Ask on the terminal before every file write (shown with its diff).
    #[arg(long, env = "AGENT_CONFIRM_WRITES")]
    confirm_writes: bool,
    /// What to do, in words.
    #[arg(required = true, num_args = 1..)]
    task: Vec<String>,
}

/// Why the loop stopped without an answer.
#[derive(Debug, thiserror::Error)]
enum AgentError {
    #[error("{0}")]
    Endpoint(String),
    #[error(
        "the model was still calling tools after {0} requests (--max-iterations / AGENT_MAX_ITERATIONS); stopped"
    )]
    IterationLimit(u32),
    #[error("cancelled (Ctrl-C)")]
    Cancelled,
}

fn main() -> ExitCode {
    // Commands under a Landlock sandbox, and the watchdog that kills them if this program
    // dies, run as this same executable: let it be that helper when asked to.
    let argv: Vec<OsString> = std::env::args_os().collect();
    if let Some(code) = toolport_tools::dispatch_helper(&argv) {
        return code;
    }
    let args = Args::parse();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("agent_loop: cannot start the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(run(args))
}

async fn run(args: Args) -> ExitCode {
    let root = match args.root.clone().map_or_else(std::env::current_dir, Ok) {
        Ok(root) => root,
        Err(error) => {
            eprintln!("agent_loop: no current directory: {error}");
            return ExitCode::FAILURE;
        }
    };
    let mut settings = Settings::new([&root]);
    if args.confirm_writes {
        settings = settings.confirm_writes();
    }
    let toolbox = match Toolbox::new(&settings) {
        Ok(toolbox) => toolbox,
        Err(error) => {
            eprintln!(
                "agent_loop: cannot build the tools for {}: {error}",
                root.display()
            );
            return ExitCode::FAILURE;
        }
    };

    // Ctrl-C: cancel the call that is running (and the request in flight), then stop.
    let stop = CancellationToken::new();
    tokio::spawn({
        let stop = stop.clone();
        async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                eprintln!("\nagent_loop: Ctrl-C, stopping");
                stop.cancel();
            }
        }
    });

    let agent = Agent {
        http: reqwest::Client::new(),
        tools: toolbox.registry().definitions(ToolFormat::Openai),
        toolbox,
        stop,
        args,
    };
    match agent.run().await {
        Ok(answer) => {
            println!("{answer}");
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("agent_loop: {error}");
            ExitCode::from(match error {
                AgentError::Endpoint(_) => 1,
                AgentError::IterationLimit(_) => EXIT_ITERATION_LIMIT,
                AgentError::Cancelled => EXIT_CANCELLED,
            })
        }
    }
}

/// The loop's state: the tools, the endpoint, and the Ctrl-C token.
struct Agent {
    http: reqwest::Client,
    toolbox: Toolbox,
    /// The tools in OpenAI form, sent with every request.
    tools: Vec<Value>,
    stop: CancellationToken,
    args: Args,
}

impl Agent {
    /// Talk to the model until it answers in text; that answer.
    async fn run(&self) -> Result<String, AgentError> {
        let max = self.args.max_iterations;
        let mut messages = vec![
            json!({"role": "system", "content": SYSTEM_PROMPT}),
            json!({"role": "user", "content": self.args.task.join(" ")}),
        ];
        for iteration in 1..=max {
            eprintln!("[{iteration}/{max}] asking {}", self.args.model);
            let reply = tokio::select! {
                reply = self.chat(&messages) => reply?,
                () = self.stop.cancelled() => return Err(AgentError::Cancelled),
            };
            let calls = reply
                .get("tool_calls")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            let text = reply.get("content").and_then(Value::as_str).unwrap_or("");
            if calls.is_empty() {
                return Ok(text.to_owned());
            }
            // The assistant turn goes back as the model sent it (its calls' ids are what the
            // tool messages answer).
            messages.push(json!({"role": "assistant", "content": text, "tool_calls": calls}));
            for (index, call) in calls.iter().enumerate() {
                let content = if index < self.args.max_tool_calls {
                    self.run_call(call).await
                } else {
                    format!(
                        "not run: at most {} tool calls are run per turn (--max-tool-calls); call it again in your next turn if you still need it",
                        self.args.max_tool_calls
                    )
                };
                messages.push(json!({
                    "role": "tool",
                    "tool_call_id": call.get("id").cloned().unwrap_or(Value::Null),
                    "content": content,
                }));
                if self.stop.is_cancelled() {
                    return Err(AgentError::Cancelled);
                }
            }
        }
        Err(AgentError::IterationLimit(max))
    }

    /// One request: the conversation and the tools; the reply's `choices[0].message`.
    async fn chat(&self, messages: &[Value]) -> Result<Value, AgentError> {
        let url = format!(
            "{}/chat/completions",
            self.args.base_url.trim_end_matches('/')
        );
        let body = json!({"model": self.args.model, "messages": messages, "tools": self.tools});
        let mut request = self.http.post(&url).timeout(REQUEST_TIMEOUT).json(&body);
        if let Some(key) = &self.args.api_key {
            request = request.bearer_auth(key);
        }
        let response = request
            .send()
            .await
            .map_err(|e| AgentError::Endpoint(format!("cannot reach {url}: {}", causes(&e))))?;
        let status = response.status();
        let text = response.text().await.map_err(|e| {
            AgentError::Endpoint(format!("{url} answered {status}, then: {}", causes(&e)))
        })?;
        if !status.is_success() {
            return Err(AgentError::Endpoint(format!(
                "{url} answered {status}: {}",
                excerpt(&text)
            )));
        }
        let reply: Value = serde_json::from_str(&text).map_err(|e| {
            AgentError::Endpoint(format!(
                "{url} answered with no JSON ({e}): {}",
                excerpt(&text)
            ))
        })?;
        reply.pointer("/choices/0/message").cloned().ok_or_else(|| {
            AgentError::Endpoint(format!(
                "{url}'s answer has no choices[0].message: {}",
                excerpt(&text)
            ))
        })
    }

    /// Run one tool call through the registry; what the model reads back (the output, or the
    /// error that explains what went wrong).
    async fn run_call(&self, call: &Value) -> String {
        let name = call
            .pointer("/function/name")
            .and_then(Value::as_str)
            .unwrap_or("");
        // OpenAI sends the arguments as a JSON string; some servers send the object itself.
        let args = match call.pointer("/function/arguments") {
            Some(Value::String(s)) if s.trim().is_empty() => Ok(JsonObject::new()),
            Some(Value::String(s)) => serde_json::from_str::<JsonObject>(s)
                .map_err(|e| format!("the arguments are not a JSON object ({e}): {s}")),
            Some(Value::Object(map)) => Ok(map.clone()),
            None | Some(Value::Null) => Ok(JsonObject::new()),
            Some(other) => Err(format!("the arguments must be a JSON object, got {other}")),
        };
        let args = match args {
            Ok(args) => args,
            Err(message) => {
                eprintln!("  {name}: {message}");
                return format!("error: invalid arguments: {message}");
            }
        };
        eprintln!("  -> {name} {}", Value::Object(args.clone()));
        let ctx: ToolContext = self
            .toolbox
            .context()
            .with_cancel(self.stop.clone())
            .with_confirmer(Arc::new(TerminalConfirmer {
                stop: self.stop.clone(),
            }));
        match self.toolbox.registry().execute(name, args, &ctx).await {
            Ok(output) => {
                eprintln!("  <- {name}: {} bytes", output.text.len());
                output.text
            }
            Err(error) => {
                eprintln!("  <- {name} failed: {error}");
                format!("error: {error}")
            }
        }
    }
}

/// An error and its causes, on one line (reqwest's own message leaves out why).
fn causes(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// The start of an error body, on one line.
fn excerpt(body: &str) -> String {
    let mut out: String = body.chars().take(ERROR_BODY_EXCERPT).collect();
    if out.len() < body.len() {
        out.push_str(" …");
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Asks on the terminal: the question on stderr, the answer from stdin. Only `y` or `yes`
/// accepts; anything else, an empty line or the end of stdin declines.
struct TerminalConfirmer {
    /// Ctrl-C while the question is open declines it.
    stop: CancellationToken,
}

#[async_trait::async_trait]
impl Confirmer for TerminalConfirmer {
    async fn confirm(&self, description: &str) -> Confirmation {
        eprint!("\nThe model wants to run: {description}\nAllow? [y/N] ");
        // A thread of its own, not the runtime's blocking pool: a read that Ctrl-C abandons
        // must not keep the program from exiting.
        let (tx, rx) = tokio::sync::oneshot::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let read = std::io::stdin().lock().read_line(&mut line);
            let _ = tx.send(read.map(|_| line));
        });
        let answer = tokio::select! {
            answer = rx => answer.ok().and_then(Result::ok).unwrap_or_default(),
            () = self.stop.cancelled() => String::new(),
        };
        match answer.trim().to_ascii_lowercase().as_str() {
            "y" | "yes" => Confirmation::Accepted,
            _ => {
                eprintln!("declined");
                Confirmation::Declined
            }
        }
    }
}

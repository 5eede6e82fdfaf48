//! A plugin tool: an [`AiTool`] made from a manifest. A call fills the manifest's templates
//! from the arguments (defaults applied, path parameters resolved inside the roots) and hands
//! the resulting argv to the server's [`Executor`], the same one `execute_command` uses: the
//! command policy, confirmation, sandbox, minimal environment, output caps, process groups,
//! timeouts, cancellation and progress all apply, so a plugin can do nothing that
//! `execute_command` with the same argv could not.
//!
//! Results: the command's stdout is the text result (`output = "text"`), or a JSON object
//! that becomes `structuredContent` (`output = "json"`, checked against `output_schema`). A
//! non-zero exit, a timeout or a kill is an `isError` result carrying stderr and the exit code.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;

use super::manifest::{OutputKind, ToolManifest};
use super::template::ExpandError;
use crate::instructions::{InstructionsFor, render_instructions};
use crate::schema::JsonObject;
use crate::tool::{AiTool, Annotations, ToolContext, ToolError, ToolOutput};
use crate::tools::exec::{CommandRequest, ExecResult, Executor};
use crate::workspace::Workspace;

/// Stops git's upward search for a repository (see [`PluginTool::env`]).
const GIT_CEILING: &str = "GIT_CEILING_DIRECTORIES";

/// A tool declared by a plugin manifest.
pub(crate) struct PluginTool {
    manifest: ToolManifest,
    /// Rendered on first use (prompts, `toolport instructions`), not at every reload.
    instructions: OnceLock<String>,
    executor: Arc<Executor>,
}

impl std::fmt::Debug for PluginTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PluginTool")
            .field("name", &self.manifest.name)
            .field("source", &self.manifest.source)
            .finish_non_exhaustive()
    }
}

impl PluginTool {
    /// The tool over the server's executor (the manifest was checked when it loaded).
    pub(crate) fn new(manifest: ToolManifest, executor: Arc<Executor>) -> Self {
        Self {
            manifest,
            instructions: OnceLock::new(),
            executor,
        }
    }

    /// The command for a call: defaults applied, path parameters resolved inside the roots,
    /// templates filled. Nothing runs.
    fn command(
        &self,
        args: &JsonObject,
        workspace: &Workspace,
    ) -> Result<CommandRequest, ToolError> {
        let run = &self.manifest.run;
        let mut values = run.with_defaults(args);
        for name in &run.paths {
            let resolve = |value: &Value| -> Result<Value, ToolError> {
                let Value::String(path) = value else {
                    return Err(ToolError::InvalidArguments(format!(
                        "`{name}` must be a path (a string), or a list of paths"
                    )));
                };
                let real = workspace.program_path(path)?;
                Ok(Value::String(real.display().to_string()))
            };
            let resolved = match values.get(name) {
                None | Some(Value::Null) => continue,
                Some(Value::Array(items)) => {
                    Value::Array(items.iter().map(resolve).collect::<Result<_, _>>()?)
                }
                Some(value) => resolve(value)?,
            };
            values.insert(name.clone(), resolved);
        }
        let expand_error = |e: ExpandError| match e {
            ExpandError::Refused(m) => ToolError::PermissionDenied(m),
            ExpandError::Invalid(m) => ToolError::InvalidArguments(m),
        };
        Ok(CommandRequest {
            program: run.command.clone(),
            args: run.args.expand(&values).map_err(expand_error)?,
            cwd: match &run.cwd {
                Some(t) => t.expand(&values).map_err(expand_error)?,
                None => None,
            },
            timeout: run.timeout.map(Duration::from_secs),
            stdin: match &run.stdin {
                Some(t) => t.expand(&values).map_err(expand_error)?,
                None => None,
            },
            env: self.env(workspace),
            stdin_open: false,
            // A plugin tool answers when its command ends: no jobs.
            background: false,
            yield_after: Some(Duration::ZERO),
        })
    }

    /// The manifest's environment, plus `GIT_CEILING_DIRECTORIES` at the roots' parents
    /// (unless the manifest sets it): git looks for a repository upward from its working
    /// directory, and must not find one above the roots and show files outside them.
    fn env(&self, workspace: &Workspace) -> std::collections::BTreeMap<String, String> {
        let mut env = self.manifest.run.env.clone();
        if !env.contains_key(GIT_CEILING) {
            // Joined as the system joins path lists (`;` on Windows), each as git reads it; a
            // parent holding the separator cannot be listed (join_paths would refuse it, or
            // quote it on Windows, which git does not read).
            let parents = workspace
                .shown_roots()
                .filter_map(|root| root.parent())
                .filter(|parent| {
                    std::env::join_paths([parent]).is_ok_and(|one| one == parent.as_os_str())
                });
            if let Some(ceiling) = std::env::join_paths(parents)
                .ok()
                .and_then(|joined| joined.into_string().ok())
            {
                env.insert(GIT_CEILING.to_owned(), ceiling);
            }
        }
        env
    }

    /// The call's result from what the command did.
    fn finish(&self, result: ExecResult) -> Result<ToolOutput, ToolError> {
        let name = &self.manifest.name;
        if result.timed_out {
            return Err(ToolError::Timeout(format!(
                "{name} was still running after {} s and was killed (the plugin's timeout){}",
                result.timeout,
                stderr_tail(&result.stderr)
            )));
        }
        match result.return_code {
            Some(0) => {}
            Some(code) => {
                return Err(ToolError::ExecutionFailed(format!(
                    "{name} failed: the command exited with code {code}{}",
                    stderr_tail(&result.stderr)
                )));
            }
            None => {
                let how = result
                    .signal
                    .as_deref()
                    .map_or_else(|| "did not run".to_owned(), |s| format!("was ended by {s}"));
                return Err(ToolError::ExecutionFailed(format!(
                    "{name} failed: the command {how}{}",
                    stderr_tail(&result.stderr)
                )));
            }
        }
        match self.manifest.run.output {
            OutputKind::Text => {
                let mut text = if result.stdout.is_empty() {
                    "(no output)".to_owned()
                } else {
                    result.stdout
                };
                if result.truncated {
                    text.push_str(&format!(
                        "\n[output cut: the command wrote {} bytes; only the start and the end are shown]",
                        result.stdout_bytes
                    ));
                }
                Ok(ToolOutput::text(text))
            }
            OutputKind::Json => self.json_output(&result),
        }
    }

    fn json_output(&self, result: &ExecResult) -> Result<ToolOutput, ToolError> {
        let name = &self.manifest.name;
        if result.truncated {
            return Err(ToolError::ExecutionFailed(format!(
                "{name} printed {} bytes, more than the server keeps (exec.max_output_bytes), so its JSON output cannot be read",
                result.stdout_bytes
            )));
        }
        let value: Value = serde_json::from_str(&result.stdout).map_err(|e| {
            ToolError::ExecutionFailed(format!(
                "{name} did not print valid JSON ({e}); this is a problem in the plugin, not in your arguments"
            ))
        })?;
        if let Some(validator) = &self.manifest.output_validator {
            let problems: Vec<String> = validator
                .iter_errors(&value)
                .take(5)
                .map(|e| format!("{} at `{}`", e, e.instance_path()))
                .collect();
            if !problems.is_empty() {
                return Err(ToolError::ExecutionFailed(format!(
                    "{name} printed JSON that does not match its output_schema ({}); this is a problem in the plugin, not in your arguments",
                    problems.join("; ")
                )));
            }
        }
        let text = serde_json::to_string_pretty(&value).unwrap_or_default();
        Ok(ToolOutput {
            structured: value.is_object().then_some(value),
            text,
            images: Vec::new(),
            mcp_content: None,
        })
    }
}

/// How much of stderr an error carries: the start (a usage error or the first complaint) and
/// the end (where programs say what finally went wrong).
const STDERR_HEAD_CHARS: usize = 1000;
const STDERR_TAIL_CHARS: usize = 3000;

fn stderr_tail(stderr: &str) -> String {
    let stderr = stderr.trim_end();
    if stderr.is_empty() {
        return " (no stderr)".to_owned();
    }
    let chars = stderr.chars().count();
    if chars <= STDERR_HEAD_CHARS + STDERR_TAIL_CHARS {
        return format!("; stderr:\n{stderr}");
    }
    let head: String = stderr.chars().take(STDERR_HEAD_CHARS).collect();
    let tail: String = stderr.chars().skip(chars - STDERR_TAIL_CHARS).collect();
    format!("; stderr (start and end):\n{head}\n[…]\n{tail}")
}

#[async_trait]
impl AiTool for PluginTool {
    fn name(&self) -> &str {
        &self.manifest.name
    }
    fn title(&self) -> Option<&str> {
        self.manifest.title.as_deref()
    }
    fn description(&self) -> &str {
        &self.manifest.description
    }
    fn input_schema(&self) -> Arc<JsonObject> {
        Arc::clone(&self.manifest.input_schema)
    }
    fn output_schema(&self) -> Option<Arc<JsonObject>> {
        self.manifest.output_schema.clone()
    }
    fn category(&self) -> Option<&str> {
        Some(&self.manifest.category)
    }
    fn tags(&self) -> Vec<&str> {
        self.manifest.tags.iter().map(String::as_str).collect()
    }
    fn annotations(&self) -> Annotations {
        self.manifest.annotations
    }
    fn plugin(&self) -> bool {
        true
    }
    fn instructions(&self) -> String {
        let m = &self.manifest;
        self.instructions
            .get_or_init(|| {
                m.instructions.clone().unwrap_or_else(|| {
                    render_instructions(InstructionsFor {
                        name: &m.name,
                        description: &m.description,
                        purpose: None,
                        input_schema: &m.input_schema,
                        output_schema: m.output_schema.as_deref(),
                        example: m.example.as_ref(),
                    })
                })
            })
            .clone()
    }
    fn compiled_input_schema(&self) -> Option<jsonschema::Validator> {
        Some(self.manifest.input_validator.clone())
    }

    /// The policy's confirmation set applies to the final argv (paths resolved). A call whose
    /// command cannot be built asks nothing: `execute` reports why.
    fn confirmation(&self, args: &JsonObject, workspace: &Workspace) -> Option<String> {
        let request = self.command(args, workspace).ok()?;
        self.executor
            .confirmation(&request)
            .map(|question| format!("{question} (plugin tool {})", self.manifest.name))
    }

    async fn execute(&self, args: JsonObject, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let request = self.command(&args, &ctx.workspace)?;
        let result = self.executor.run(request, ctx).await?;
        self.finish(result)
    }
}

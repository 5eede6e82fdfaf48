//! Plugin manifests: the TOML a plugin author writes, read strictly (an unknown field anywhere
//! is an error) and checked completely when the file loads, so a mistake is reported once,
//! naming the file, the line, the field and what is allowed, and never surfaces as a failed
//! call later.
//!
//! ```toml
//! [[tools]]
//! name = "git_log"
//! description = "Show recent commits …"
//! annotations = { read_only = true, destructive = false, idempotent = true, open_world = false }
//! input_schema = { type = "object", properties = { count = { type = "integer", default = 20 } } }
//!
//! [tools.run]
//! command = "git"
//! args = ["log", "--max-count={count}"]
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

use super::template::{ArgvTemplate, Template, Use, known};
use crate::definition::{MAX_TOOL_NAME_LEN, is_valid_tool_name};
use crate::schema::JsonObject;
use crate::settings::{DurationValue, LegacyUnit};
use crate::tool::{Annotations, ToolError};
use crate::tools::exec::policy::SHELLS;

/// The category of a plugin tool that names none.
pub(crate) const DEFAULT_CATEGORY: &str = "plugin";

/// The key the `toml` crate gives a date or time when it becomes JSON: not a JSON value a
/// client understands, so it is refused where a manifest holds JSON.
const TOML_DATETIME_KEY: &str = "$__toml_private_datetime";

/// A manifest file as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileManifest {
    #[serde(default)]
    tools: Vec<toml::Spanned<FileTool>>,
}

/// One `[[tools]]` table.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileTool {
    name: String,
    title: Option<String>,
    description: String,
    category: Option<String>,
    #[serde(default)]
    tags: Vec<String>,
    instructions: Option<String>,
    example: Option<JsonObject>,
    annotations: Option<FileAnnotations>,
    input_schema: Option<JsonObject>,
    output_schema: Option<JsonObject>,
    run: FileRun,
}

/// `annotations = { … }`: absent hints take the MCP defaults.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileAnnotations {
    read_only: Option<bool>,
    destructive: Option<bool>,
    idempotent: Option<bool>,
    open_world: Option<bool>,
}

/// `[tools.run]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileRun {
    command: String,
    #[serde(default)]
    args: Vec<String>,
    cwd: Option<String>,
    /// `"30s"`, or a number of seconds.
    timeout: Option<DurationValue>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    stdin: Option<String>,
    #[serde(default)]
    output: OutputKind,
    #[serde(default)]
    paths: Vec<String>,
}

/// What the command's stdout is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum OutputKind {
    /// The text result.
    #[default]
    Text,
    /// A JSON value: the structured result (an object), validated against `output_schema`.
    Json,
}

/// A tool declared by a manifest, checked and with its templates and schemas compiled.
#[derive(Debug)]
pub(crate) struct ToolManifest {
    pub(crate) name: String,
    pub(crate) title: Option<String>,
    pub(crate) description: String,
    pub(crate) category: String,
    pub(crate) tags: Vec<String>,
    pub(crate) instructions: Option<String>,
    pub(crate) example: Option<Value>,
    pub(crate) annotations: Annotations,
    pub(crate) input_schema: Arc<JsonObject>,
    pub(crate) output_schema: Option<Arc<JsonObject>>,
    /// `input_schema`, compiled (the registry uses it as it is).
    pub(crate) input_validator: jsonschema::Validator,
    /// `output_schema`, compiled.
    pub(crate) output_validator: Option<jsonschema::Validator>,
    pub(crate) run: Run,
    /// The manifest file, for messages.
    pub(crate) source: PathBuf,
}

/// How a call runs, parsed.
#[derive(Debug)]
pub(crate) struct Run {
    /// The program: a name looked up on PATH, or an absolute path (`./x` in the manifest is
    /// made absolute against the manifest's folder).
    pub(crate) command: String,
    pub(crate) args: ArgvTemplate,
    pub(crate) cwd: Option<Template>,
    pub(crate) stdin: Option<Template>,
    /// Seconds; `None`: the server's default.
    pub(crate) timeout: Option<u64>,
    pub(crate) env: BTreeMap<String, String>,
    pub(crate) output: OutputKind,
    /// Parameters that are workspace paths.
    pub(crate) paths: Vec<String>,
    /// Parameters with a `default` in the schema, applied when a call leaves them out.
    pub(crate) defaults: Vec<(String, Value)>,
}

impl Run {
    /// A call's arguments with the schema's defaults filled in where they are missing or
    /// `null`.
    pub(crate) fn with_defaults(&self, args: &JsonObject) -> JsonObject {
        let mut values = args.clone();
        for (name, default) in &self.defaults {
            if values.get(name).is_none_or(Value::is_null) {
                values.insert(name.clone(), default.clone());
            }
        }
        values
    }
}

/// Why a manifest cannot be used: one line naming the file, the line, the field and what is
/// allowed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{}: {message}", file.display(), line.map(|l| format!(":{l}")).unwrap_or_default())]
pub struct ManifestError {
    /// The manifest file.
    pub(crate) file: PathBuf,
    /// The 1-based line, when known.
    pub(crate) line: Option<usize>,
    /// What is wrong and what is allowed.
    pub(crate) message: String,
}

/// What the loader needs to know about the server to check a manifest.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// `exec.timeout_max`: a plugin's timeout may not exceed it.
    pub(crate) timeout_max: Duration,
}

/// Read and check a manifest's text. `file` names it in errors and anchors `./` commands.
pub(crate) fn parse(
    file: &Path,
    text: &str,
    limits: Limits,
) -> Result<Vec<ToolManifest>, ManifestError> {
    let line_of = |offset: usize| text[..offset.min(text.len())].matches('\n').count() + 1;
    let error = |line: Option<usize>, message: String| ManifestError {
        file: file.to_path_buf(),
        line,
        message,
    };
    let document = toml::Deserializer::parse(text)
        .map_err(|e| error(e.span().map(|s| line_of(s.start)), one_line(e.message())))?;
    let manifest: FileManifest = serde_path_to_error::deserialize(document).map_err(|e| {
        let line = e.inner().span().map(|s| line_of(s.start));
        // `toml::Spanned` adds a private segment to the path; the author wrote none.
        let path = e
            .path()
            .to_string()
            .replace(".$__serde_spanned_private_value", "");
        let message = one_line(e.inner().message());
        error(
            line,
            if path == "." {
                message
            } else {
                format!("{path}: {message}")
            },
        )
    })?;
    if manifest.tools.is_empty() {
        return Err(error(
            None,
            "declares no tools; a manifest has one or more [[tools]] tables with name, description and [tools.run] command".into(),
        ));
    }
    let dir = file.parent().unwrap_or_else(|| Path::new("."));
    manifest
        .tools
        .into_iter()
        .enumerate()
        .map(|(index, spanned)| {
            let line = line_of(spanned.span().start);
            let tool = spanned.into_inner();
            let label = format!("tools[{index}] ({})", tool.name);
            check(tool, dir, limits, file)
                .map_err(|message| error(Some(line), format!("{label}: {message}")))
        })
        .collect()
}

fn one_line(message: &str) -> String {
    message.trim_end().replace('\n', " ")
}

/// Check one tool completely, so nothing it declares can fail at call time for a reason in
/// the manifest: names, schemas (compiled; defaults and the example checked against them),
/// the program, the timeout, the environment, and every placeholder against its parameter.
fn check(tool: FileTool, dir: &Path, limits: Limits, file: &Path) -> Result<ToolManifest, String> {
    if !is_valid_tool_name(&tool.name) {
        return Err(format!(
            "name {:?} is not allowed: use 1 to {MAX_TOOL_NAME_LEN} letters, digits, '_' or '-'",
            tool.name
        ));
    }
    if tool.description.trim().is_empty() {
        return Err("description is empty; say what the tool does and its limits".into());
    }
    let input_schema = tool.input_schema.unwrap_or_else(|| {
        let mut empty = JsonObject::new();
        empty.insert("type".into(), Value::from("object"));
        empty.insert("properties".into(), Value::Object(JsonObject::new()));
        empty
    });
    for (key, value) in [
        ("input_schema", Some(&input_schema)),
        ("output_schema", tool.output_schema.as_ref()),
        ("example", tool.example.as_ref()),
    ] {
        if value.is_some_and(|v| holds_datetime(&Value::Object(v.clone()))) {
            return Err(format!(
                "{key} holds a TOML date or time, which is not a JSON value; write it as a string"
            ));
        }
    }
    if input_schema.get("type") != Some(&Value::from("object")) {
        return Err("input_schema must have type = \"object\" (the tool's arguments are an object of named parameters)".into());
    }
    let input_validator = compile("input_schema", &input_schema)?;
    let properties: JsonObject = match input_schema.get("properties") {
        None => JsonObject::new(),
        Some(Value::Object(props)) => props.clone(),
        Some(_) => return Err("input_schema.properties must be a table of parameters".into()),
    };
    let params: Vec<&str> = properties.keys().map(String::as_str).collect();
    let defaults: Vec<(String, Value)> = properties
        .iter()
        .filter_map(|(name, property)| Some((name.clone(), property.get("default")?.clone())))
        .collect();
    // All defaults at once, through the compiled schema (compiling each property's schema
    // alone would cost a compile per default at every reload): a problem inside a property is
    // a bad default; one at the top (a required parameter missing) is not.
    if !defaults.is_empty() {
        let instance = Value::Object(defaults.iter().cloned().collect());
        if let Some(e) = input_validator
            .iter_errors(&instance)
            .find(|e| !e.instance_path().as_str().is_empty())
        {
            return Err(format!(
                "input_schema.properties{}: the default does not match the parameter's schema: {e}",
                e.instance_path().as_str().replace('/', ".")
            ));
        }
    }
    if let Some(example) = &tool.example
        && let Err(e) = input_validator.validate(&Value::Object(example.clone()))
    {
        return Err(format!(
            "example does not match input_schema: {e} (at `{}`)",
            e.instance_path()
        ));
    }
    let output_validator = match &tool.output_schema {
        None => None,
        Some(schema) => {
            if tool.run.output != OutputKind::Json {
                return Err("output_schema is only used with run.output = \"json\"; set it, or remove output_schema".into());
            }
            if schema.get("type") != Some(&Value::from("object")) {
                return Err("output_schema must have type = \"object\" (structured results are JSON objects)".into());
            }
            Some(compile("output_schema", schema)?)
        }
    };
    let run = tool.run;
    let command = check_command(&run.command, dir)?;
    let timeout = run
        .timeout
        .as_ref()
        .map(|t| {
            t.resolve(
                "run.timeout",
                Some(LegacyUnit::Secs),
                Duration::from_secs(1)..=limits.timeout_max,
            )
        })
        .transpose()
        .map_err(|e| format!("{e} (the upper bound is the server's exec.timeout_max)"))?
        .map(|d| d.as_secs().max(1));
    crate::tools::exec::child_env(&[], Some(&run.env)).map_err(|e| match e {
        ToolError::InvalidArguments(m) | ToolError::PermissionDenied(m) => format!("run.{m}"),
        other => format!("run.env: {other}"),
    })?;
    let type_of = |name: &str| {
        properties
            .get(name)
            .and_then(|p| p.get("type"))
            .and_then(Value::as_str)
    };
    for name in &run.paths {
        if !params.contains(&name.as_str()) {
            return Err(format!(
                "run.paths names {name:?}, which is not a parameter; parameters are: {}",
                known(&params)
            ));
        }
        if let Some(kind) = type_of(name)
            && kind != "string"
            && kind != "array"
        {
            return Err(format!(
                "run.paths names {name:?}, a parameter of type {kind}; a path parameter is a string (or an array of strings)"
            ));
        }
    }
    let args = ArgvTemplate::parse("run.args", &run.args, &params).map_err(|e| e.to_string())?;
    let cwd = run
        .cwd
        .as_deref()
        .map(|t| Template::parse("run.cwd", t, &params))
        .transpose()
        .map_err(|e| e.to_string())?;
    let stdin = run
        .stdin
        .as_deref()
        .map(|t| Template::parse("run.stdin", t, &params))
        .transpose()
        .map_err(|e| e.to_string())?;
    check_uses(&args, cwd.as_ref(), stdin.as_ref(), type_of)?;
    check_no_shell_script(&command, &args)?;
    let mcp = Annotations::default();
    let annotations = tool.annotations.map_or(mcp, |a| Annotations {
        read_only: a.read_only.unwrap_or(mcp.read_only),
        destructive: a.destructive.unwrap_or(mcp.destructive),
        idempotent: a.idempotent.unwrap_or(mcp.idempotent),
        open_world: a.open_world.unwrap_or(mcp.open_world),
    });
    Ok(ToolManifest {
        name: tool.name,
        title: tool.title,
        description: tool.description,
        category: tool.category.unwrap_or_else(|| DEFAULT_CATEGORY.to_owned()),
        tags: tool.tags,
        instructions: tool.instructions,
        example: tool.example.map(Value::Object),
        annotations,
        input_schema: Arc::new(input_schema),
        output_schema: tool.output_schema.map(Arc::new),
        input_validator,
        output_validator,
        run: Run {
            command,
            args,
            cwd,
            stdin,
            timeout,
            env: run.env,
            output: run.output,
            paths: run.paths,
            defaults,
        },
        source: file.to_path_buf(),
    })
}

/// Compile a schema, naming it in the error.
fn compile(key: &str, schema: &JsonObject) -> Result<jsonschema::Validator, String> {
    crate::validator::compile(&Value::Object(schema.clone()))
        .map_err(|e| format!("{key} is not a valid JSON Schema: {e}"))
}

/// Whether a JSON value holds a TOML date or time anywhere.
fn holds_datetime(value: &Value) -> bool {
    match value {
        Value::Object(map) => {
            map.contains_key(TOML_DATETIME_KEY) || map.values().any(holds_datetime)
        }
        Value::Array(items) => items.iter().any(holds_datetime),
        _ => false,
    }
}

/// The program: a name looked up on PATH, an absolute path, or `./x` / `../x` relative to the
/// manifest. Any other relative path would name a file in the command's working directory
/// (the workspace), which the agent can write.
fn check_command(command: &str, dir: &Path) -> Result<String, String> {
    if command.trim().is_empty() || command.contains('\0') {
        return Err("run.command must name a program (a name on PATH, an absolute path, or ./path relative to the manifest)".into());
    }
    if let Some(rest) = command.strip_prefix("./") {
        return Ok(dir.join(rest).display().to_string());
    }
    if command.starts_with("../") {
        return Ok(dir.join(command).display().to_string());
    }
    if command.starts_with('/') || !command.contains('/') {
        return Ok(command.to_owned());
    }
    Err(format!(
        "run.command {command:?} is a relative path, which would run a file from the workspace; use a program name looked up on PATH, an absolute path, or ./{command} for a file beside the manifest"
    ))
}

/// Each placeholder must fit its parameter's declared type: a conditional flag needs a
/// boolean, text inside an element (and `cwd`, `stdin`) a single value, a whole element
/// anything but an object.
fn check_uses<'a>(
    args: &ArgvTemplate,
    cwd: Option<&Template>,
    stdin: Option<&Template>,
    type_of: impl Fn(&str) -> Option<&'a str>,
) -> Result<(), String> {
    let inside = |label: &str, template: Option<&Template>| -> Result<(), String> {
        for name in template.into_iter().flat_map(Template::placeholders) {
            if let Some(kind @ ("array" | "object")) = type_of(name) {
                return Err(format!(
                    "{label} uses {{{name}}}, a parameter of type {kind}; only a string, number or boolean fits in one text"
                ));
            }
        }
        Ok(())
    };
    inside("run.cwd", cwd)?;
    inside("run.stdin", stdin)?;
    for (i, element) in args.elements().enumerate() {
        for (name, used) in element.uses {
            let kind = type_of(name);
            let problem = match (used, kind) {
                (Use::Flag, Some(kind)) if kind != "boolean" => {
                    Some("a conditional flag {name?TEXT} needs a boolean parameter")
                }
                (Use::Inside, Some("array" | "object")) => {
                    Some("only a string, number or boolean fits inside a longer argument")
                }
                (Use::Whole, Some("object")) => Some("an object cannot be an argument"),
                _ => None,
            };
            if let Some(problem) = problem {
                return Err(format!(
                    "run.args[{i}] uses `{name}`, a parameter of type {}: {problem}",
                    kind.unwrap_or("?")
                ));
            }
        }
    }
    Ok(())
}

/// "Never a shell": a call's values may reach a shell only as positional parameters
/// (`sh -c '… "$1"' sh {value}`), never inside the script, where they would be code.
fn check_no_shell_script(command: &str, args: &ArgvTemplate) -> Result<(), String> {
    let is_shell = |program: &str| {
        let base = program.rsplit('/').next().unwrap_or(program);
        SHELLS.contains(&base)
    };
    let mut shell = is_shell(command);
    let mut script_next = false;
    for (i, element) in args.elements().enumerate() {
        match element.literal {
            Some(text) => {
                shell |= is_shell(text);
                script_next = shell
                    && text.starts_with('-')
                    && text != "--"
                    && !text.starts_with("--")
                    && text.contains('c');
            }
            None => {
                let inside = element.uses.iter().any(|(_, u)| *u == Use::Inside);
                if shell && (script_next || inside) {
                    return Err(format!(
                        "run.args[{i}] puts a call's value inside a shell script, where it would run as code; pass it as a positional parameter instead, e.g. args = [\"-c\", \"grep -c -- \\\"$1\\\" notes.txt\", \"sh\", \"{{pattern}}\"]"
                    ));
                }
                script_next = false;
            }
        }
    }
    Ok(())
}

/// The fuzz target `plugin_manifest`'s door to the loader (fuzz/; `fuzzing` feature only):
/// load `text` as `plugins/fuzz.toml` (the default `exec.timeout_max` as limit) and fill each
/// tool's `run.args` for each of `calls`, defaults applied as a call applies them (path
/// parameters are not resolved). `Ok`: per tool, its name, its `run.command` and, per call,
/// the argv or the refusal's message; `Err`: why the manifest does not load.
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
#[allow(clippy::type_complexity)]
pub fn fuzz_load(
    text: &str,
    calls: &[JsonObject],
) -> Result<Vec<(String, String, Vec<Result<Vec<String>, String>>)>, String> {
    let limits = Limits {
        timeout_max: crate::tools::exec::ExecSettings::default().timeout_max,
    };
    let tools = parse(Path::new("/nonexistent/plugins/fuzz.toml"), text, limits)
        .map_err(|e| e.to_string())?;
    Ok(tools
        .into_iter()
        .map(|tool| {
            let argvs = calls
                .iter()
                .map(|call| {
                    let values = tool.run.with_defaults(call);
                    tool.run.args.expand(&values).map_err(|e| e.to_string())
                })
                .collect();
            (tool.name, tool.run.command, argvs)
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: Limits = Limits {
        timeout_max: Duration::from_secs(600),
    };

    fn load(text: &str) -> Result<Vec<ToolManifest>, ManifestError> {
        parse(Path::new("/plugins/x.toml"), text, LIMITS)
    }

    fn error(text: &str) -> String {
        load(text).unwrap_err().to_string()
    }

    const GOOD: &str = r#"
[[tools]]
name = "word_count"
description = "Count words."
input_schema = { type = "object", properties = { path = { type = "string" }, lines = { type = "boolean", default = false } }, required = ["path"] }

[tools.run]
command = "./wc.sh"
args = ["{lines?-l}", "--", "{path}"]
paths = ["path"]
timeout = 10
"#;

    #[test]
    fn a_good_manifest_loads_with_defaults_applied() {
        let tools = load(GOOD).unwrap();
        assert_eq!(tools.len(), 1);
        let t = &tools[0];
        assert_eq!(t.name, "word_count");
        assert_eq!(t.category, DEFAULT_CATEGORY);
        assert_eq!(
            t.annotations,
            Annotations::default(),
            "absent = MCP defaults"
        );
        assert_eq!(
            t.run.command, "/plugins/wc.sh",
            "./ is relative to the manifest"
        );
        assert_eq!(
            t.run.defaults,
            vec![("lines".to_owned(), Value::Bool(false))]
        );
        assert_eq!(t.run.output, OutputKind::Text);
    }

    #[test]
    fn an_unknown_field_names_the_file_line_and_field() {
        let err = error(
            "[[tools]]\nname = \"a\"\ndescription = \"d\"\n[tools.run]\ncommand = \"ls\"\nargz = []\n",
        );
        assert!(err.starts_with("/plugins/x.toml:6: "), "{err}");
        assert!(err.contains("unknown field `argz`"), "{err}");
        assert!(err.contains("`args`"), "lists what is allowed: {err}");
        assert!(!err.contains('\n'), "one line: {err}");
    }

    #[test]
    fn bad_toml_gives_the_line() {
        let err = error("[[tools]]\nname = \"a\n");
        assert!(err.starts_with("/plugins/x.toml:2: "), "{err}");
    }

    #[test]
    fn semantic_errors_name_the_tool_and_field() {
        let bad_name = GOOD.replace("word_count", "word.count");
        let err = error(&bad_name);
        assert!(
            err.starts_with("/plugins/x.toml:2: tools[0] (word.count): name"),
            "{err}"
        );

        let unknown = GOOD.replace("--\", \"{path}", "--\", \"{file}");
        let err = error(&unknown);
        assert!(err.contains("run.args[2]") && err.contains("path"), "{err}");

        let paths = GOOD.replace("paths = [\"path\"]", "paths = [\"file\"]");
        assert!(error(&paths).contains("run.paths names \"file\""));

        let timeout = GOOD.replace("timeout = 10", "timeout = 601");
        assert!(
            error(&timeout).contains("run.timeout"),
            "{}",
            error(&timeout)
        );
        assert!(error(&timeout).contains("10m"), "{}", error(&timeout));

        let schema = GOOD.replace(
            "type = \"object\", properties",
            "type = \"array\", properties",
        );
        assert!(error(&schema).contains("type = \"object\""));

        let env = GOOD.replace("timeout = 10", "env = { LD_PRELOAD = \"x.so\" }");
        assert!(error(&env).contains("LD_PRELOAD"), "{}", error(&env));

        let output = GOOD.replace(
            "[tools.run]",
            "output_schema = { type = \"object\" }\n[tools.run]",
        );
        assert!(error(&output).contains("run.output = \"json\""));
    }

    #[test]
    fn type_errors_name_the_field_path() {
        let text = GOOD.replace("timeout = 10", "timeout = [1]");
        let err = error(&text);
        assert!(err.contains("tools[0].run.timeout"), "{err}");
        assert!(err.starts_with("/plugins/x.toml:11: "), "{err}");
        assert!(err.contains("a duration like"), "{err}");
        let human = GOOD.replace("timeout = 10", "timeout = \"30s\"");
        assert_eq!(load(&human).unwrap()[0].run.timeout, Some(30));
    }

    #[test]
    fn what_would_fail_at_call_time_fails_at_load() {
        let cases = [
            // A relative program path would run a workspace file.
            (GOOD.replace("./wc.sh", "bin/wc.sh"), "relative path"),
            // A conditional flag on a non-boolean.
            (
                GOOD.replace(
                    "lines = { type = \"boolean\", default = false }",
                    "lines = { type = \"integer\" }",
                ),
                "needs a boolean",
            ),
            // A path parameter that is a number.
            (
                GOOD.replace(
                    "path = { type = \"string\" }",
                    "path = { type = \"integer\" }",
                ),
                "a path parameter is a string",
            ),
            // An array in cwd.
            (
                GOOD.replace("timeout = 10", "cwd = \"{path}\"")
                    .replace(
                        "path = { type = \"string\" }",
                        "path = { type = \"array\" }",
                    )
                    .replace("paths = [\"path\"]", ""),
                "only a string, number or boolean fits",
            ),
            // A default that does not match its own schema.
            (
                GOOD.replace("default = false", "default = \"no\""),
                "default does not match",
            ),
            // An example that does not match the schema.
            (
                GOOD.replace("[tools.run]", "example = { lines = true }\n[tools.run]"),
                "example does not match",
            ),
            // A TOML date, which has no JSON form.
            (
                GOOD.replace("default = false", "default = 2024-01-01"),
                "TOML date",
            ),
            // An invalid schema.
            (
                GOOD.replace(
                    "type = \"object\", properties",
                    "type = \"object\", minProperties = \"x\", properties",
                ),
                "not a valid JSON Schema",
            ),
        ];
        for (text, expected) in cases {
            let err = error(&text);
            assert!(err.contains(expected), "expected {expected:?} in: {err}");
        }
    }

    #[test]
    fn a_value_may_reach_a_shell_only_as_a_positional_parameter() {
        let shell = |args: &str| {
            format!(
                "[[tools]]\nname = \"s\"\ndescription = \"d\"\ninput_schema = {{ type = \"object\", properties = {{ p = {{ type = \"string\" }} }} }}\n[tools.run]\ncommand = \"sh\"\nargs = {args}\n"
            )
        };
        assert!(error(&shell(r#"["-c", "grep {p} f"]"#)).contains("inside a shell script"));
        assert!(error(&shell(r#"["-ec", "{p}"]"#)).contains("inside a shell script"));
        let wrapped =
            shell(r#"["sh", "-c", "echo {p}"]"#).replace("command = \"sh\"", "command = \"env\"");
        assert!(error(&wrapped).contains("inside a shell script"));
        assert!(load(&shell(r#"["-c", "grep -- \"$1\" f", "sh", "{p}"]"#)).is_ok());
    }

    #[test]
    fn a_file_without_tools_is_an_error() {
        assert!(error("").contains("declares no tools"));
    }

    #[test]
    fn partial_annotations_keep_the_other_defaults() {
        let text = GOOD.replace(
            "[tools.run]",
            "annotations = { read_only = true }\n[tools.run]",
        );
        let t = &load(&text).unwrap()[0];
        assert!(t.annotations.read_only);
        assert_eq!(t.annotations.open_world, Annotations::default().open_world);
    }
}

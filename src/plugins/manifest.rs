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

use serde::Deserialize;
use serde_json::Value;

use super::template::{ArgvTemplate, Template};
use crate::definition::{MAX_TOOL_NAME_LEN, is_valid_tool_name};
use crate::schema::JsonObject;
use crate::tool::Annotations;

/// The category of a plugin tool that names none.
pub(crate) const DEFAULT_CATEGORY: &str = "plugin";

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
    timeout: Option<u64>,
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

/// A tool declared by a manifest, checked and with its templates parsed.
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
    pub(crate) input_schema: JsonObject,
    pub(crate) output_schema: Option<JsonObject>,
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

/// Why a manifest cannot be used: one line naming the file, the line, the field and what is
/// allowed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{}: {message}", file.display(), line.map(|l| format!(":{l}")).unwrap_or_default())]
pub(crate) struct ManifestError {
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
    /// `exec.timeout_max` in seconds: a plugin's timeout may not exceed it.
    pub(crate) timeout_max: u64,
}

/// Read and check a manifest's text. `file` names it in errors and anchors `./` commands.
pub(crate) fn parse(
    file: &Path,
    text: &str,
    limits: Limits,
) -> Result<Vec<ToolManifest>, ManifestError> {
    let line_of = |offset: usize| text[..offset.min(text.len())].matches('\n').count() + 1;
    let manifest: FileManifest = toml::from_str(text).map_err(|e| ManifestError {
        file: file.to_path_buf(),
        line: e.span().map(|s| line_of(s.start)),
        message: e.message().trim_end().replace('\n', " "),
    })?;
    if manifest.tools.is_empty() {
        return Err(ManifestError {
            file: file.to_path_buf(),
            line: None,
            message: "declares no tools; a manifest has one or more [[tools]] tables with name, description and [tools.run] command".into(),
        });
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
            check(tool, dir, limits, file).map_err(|message| ManifestError {
                file: file.to_path_buf(),
                line: Some(line),
                message: format!("{label}: {message}"),
            })
        })
        .collect()
}

/// Check one tool and parse its templates.
fn check(tool: FileTool, dir: &Path, limits: Limits, file: &Path) -> Result<ToolManifest, String> {
    if !is_valid_tool_name(&tool.name) {
        return Err(format!(
            "name {:?} is not allowed: use 1 to {MAX_TOOL_NAME_LEN} letters, digits or '_'",
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
    if input_schema.get("type") != Some(&Value::from("object")) {
        return Err("input_schema must have type = \"object\" (the tool's arguments are an object of named parameters)".into());
    }
    let properties: Vec<String> = match input_schema.get("properties") {
        None => Vec::new(),
        Some(Value::Object(props)) => props.keys().cloned().collect(),
        Some(_) => return Err("input_schema.properties must be a table of parameters".into()),
    };
    let params: Vec<&str> = properties.iter().map(String::as_str).collect();
    if let Some(schema) = &tool.output_schema {
        if tool.run.output != OutputKind::Json {
            return Err("output_schema is only used with run.output = \"json\"; set it, or remove output_schema".into());
        }
        if schema.get("type") != Some(&Value::from("object")) {
            return Err(
                "output_schema must have type = \"object\" (structured results are JSON objects)"
                    .into(),
            );
        }
    }
    let run = tool.run;
    if run.command.trim().is_empty() || run.command.contains('\0') {
        return Err("run.command must name a program (a name on PATH, an absolute path, or ./path relative to the manifest)".into());
    }
    let command = if let Some(rest) = run.command.strip_prefix("./") {
        dir.join(rest).display().to_string()
    } else if run.command.starts_with("../") {
        dir.join(&run.command).display().to_string()
    } else {
        run.command
    };
    if let Some(timeout) = run.timeout
        && !(1..=limits.timeout_max).contains(&timeout)
    {
        return Err(format!(
            "run.timeout = {timeout} is outside 1..={} seconds (the server's exec.timeout_max)",
            limits.timeout_max
        ));
    }
    crate::tools::exec::child_env(&[], Some(&run.env)).map_err(|e| format!("run.{e}"))?;
    if let Some(unknown) = run.paths.iter().find(|p| !params.contains(&p.as_str())) {
        return Err(format!(
            "run.paths names {unknown:?}, which is not a parameter; parameters are: {}",
            describe(&params)
        ));
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
    let defaults = input_schema
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(name, prop)| Some((name.clone(), prop.get("default")?.clone())))
        .collect();
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
        input_schema,
        output_schema: tool.output_schema,
        run: Run {
            command,
            args,
            cwd,
            stdin,
            timeout: run.timeout,
            env: run.env,
            output: run.output,
            paths: run.paths,
            defaults,
        },
        source: file.to_path_buf(),
    })
}

fn describe(params: &[&str]) -> String {
    if params.is_empty() {
        "none (input_schema declares no properties)".into()
    } else {
        params.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: Limits = Limits { timeout_max: 600 };

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
        let bad_name = GOOD.replace("word_count", "word-count");
        let err = error(&bad_name);
        assert!(
            err.starts_with("/plugins/x.toml:2: tools[0] (word-count): name"),
            "{err}"
        );

        let unknown = GOOD.replace("--\", \"{path}", "--\", \"{file}");
        let err = error(&unknown);
        assert!(err.contains("run.args[2]") && err.contains("path"), "{err}");

        let paths = GOOD.replace("paths = [\"path\"]", "paths = [\"file\"]");
        assert!(error(&paths).contains("run.paths names \"file\""));

        let timeout = GOOD.replace("timeout = 10", "timeout = 601");
        assert!(error(&timeout).contains("1..=600"));

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
